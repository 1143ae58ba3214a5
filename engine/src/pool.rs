//! Work split over candle's barrier pool: the threads candle's own element-wise ops and the
//! products run on, the calling thread among them. What a piece computes depends on its index
//! alone, so the values never depend on which thread ran what, nor on how many there are.

/// The threads the kernels split work over: candle's (`RAYON_NUM_THREADS`, else every logical
/// CPU), so that a thread count set for candle holds for these kernels too.
pub fn threads() -> usize {
    candle_core::utils::get_num_threads().max(1)
}

/// The rows one piece of a reduction over rows sums (the column sums of a bias gradient, layer norm's
/// weight and bias gradients): a fixed count, so the grouping of every sum — its pieces, each summed
/// row by row, then the pieces' sums added in order — and so its bits do not depend on the thread
/// count. Training then gives the same weights on 1, 2 or any number of threads. 256 rows: a DPR
/// step's 7,168 token rows make 28 pieces, work for as many threads; the pieces' partial sums cost one
/// row of adds each.
pub const REDUCE_ROWS: usize = 256;

/// Runs `f(i)` for every piece `i` in `0..pieces` on candle's barrier pool — the threads its own
/// element-wise ops and [`gemm_split`](crate::kernels::gemm_split)'s products run on, the calling thread among them — and
/// returns when every piece has run (a piece's panic is raised here). One piece runs on the
/// calling thread alone. Pieces go to whichever thread is free, so what a piece computes must depend
/// on `i` alone, as it does in every caller: the values do not depend on which thread ran what.
///
/// The kernels started threads of their own for each call (`std::thread::scope`) before: a thread
/// start per piece, and the new threads ran beside the pool's worker, which spins for a while after
/// each op before it sleeps — three runnable threads on two cores (docs/performance.md, "The
/// element-wise kernels on the pool").
pub fn on_pool(pieces: usize, f: impl Fn(usize) + Sync) {
    match pieces {
        0 => {}
        1 => f(0),
        _ => candle_core::utils::barrier_pool().execute_chunked(pieces, |r| r.for_each(&f)),
    }
}

/// `f(i)` for every piece `i` in `0..pieces` on candle's pool ([`on_pool`]), the results in piece
/// order; `None` if a piece left no result (it cannot, short of a panic, which [`on_pool`] raises
/// first).
pub fn map_on_pool<R: Send>(pieces: usize, f: impl Fn(usize) -> R + Sync) -> Option<Vec<R>> {
    use std::sync::{Mutex, PoisonError};
    // Each slot is filled by exactly one piece, so the locks are never contended.
    let slots: Vec<Mutex<Option<R>>> = (0..pieces).map(|_| Mutex::new(None)).collect();
    on_pool(pieces, |i| {
        let r = f(i);
        *slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(PoisonError::into_inner))
        .collect()
}

/// `f(i, chunk)` for every `(i, chunk)` of `out.chunks_mut(per)` on candle's pool ([`map_on_pool`]),
/// the results in chunk order.
pub fn map_chunks_on_pool<T: Send, R: Send>(
    out: &mut [T],
    per: usize,
    f: impl Fn(usize, &mut [T]) -> R + Sync,
) -> Option<Vec<R>> {
    use std::sync::{Mutex, PoisonError};
    // Each chunk is taken by exactly one piece: the locks only carry the `&mut` across to the thread
    // that runs the piece.
    let chunks: Vec<Mutex<&mut [T]>> = out.chunks_mut(per.max(1)).map(Mutex::new).collect();
    map_on_pool(chunks.len(), |i| {
        f(i, &mut chunks[i].lock().unwrap_or_else(PoisonError::into_inner))
    })
}

/// [`map_chunks_on_pool`] without results.
pub fn chunks_on_pool<T: Send>(out: &mut [T], per: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    map_chunks_on_pool(out, per, f);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool helpers hand every chunk to exactly one piece with its own index, return the
    /// results in chunk order whichever thread ran what, run zero and one piece without the pool, and
    /// raise a piece's panic in the caller.
    #[test]
    fn the_pool_runs_each_chunk_once_with_its_index() {
        for (len, per) in [(0, 4), (3, 4), (4, 4), (1_000, 7), (100_000, 1 << 12)] {
            let mut out = vec![usize::MAX; len];
            let seen = map_chunks_on_pool(&mut out, per, |i, c| {
                c.iter_mut().for_each(|v| *v = i);
                (i, c.len())
            })
            .expect("every piece leaves its result");
            let expected: Vec<(usize, usize)> = (0..len.div_ceil(per))
                .map(|i| (i, per.min(len - i * per)))
                .collect();
            assert_eq!(seen, expected, "{len} values in chunks of {per}");
            assert!(
                out.iter().enumerate().all(|(j, &v)| v == j / per),
                "{len} / {per}"
            );
        }
        let caught = std::panic::catch_unwind(|| {
            let mut out = vec![0u8; 64];
            chunks_on_pool(&mut out, 8, |i, _| assert_ne!(i, 5, "piece 5 fails"));
        });
        assert!(caught.is_err(), "a piece's panic reaches the caller");
        // The pool still works after a piece panicked.
        let mut out = vec![0u8; 64];
        chunks_on_pool(&mut out, 8, |_, c| c.fill(1));
        assert!(out.iter().all(|&v| v == 1));
    }
}
