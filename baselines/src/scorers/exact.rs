//! Exact top-k search of a corpus of vectors by matrix products.
//!
//! Scoring every query against every document one pair at a time ([`similarity`]) is what a pool of a
//! hundred paragraphs needs; a corpus of a hundred thousand (the open ECtHR setting) needs the
//! engine's products. Here the scores of all queries against a block of documents come from one
//! product (candle's `matmul`, which runs lexbench-gemm), a block at a time. Those scores are used only
//! to *find* the candidates: a product sums in another order than [`similarity`] does, so its scores
//! may differ from it in the last bits. Every document whose product score comes within twice the
//! rounding bound of a query's k-th best product score is scored again with [`similarity`] itself,
//! and those are the scores returned. The result is what scoring every pair with [`similarity`] gives:
//! the same documents, the same bits. The search is exact, not approximate.
//!
//! The bound: a dot product of length d summed in f32 in any order is within `γ_d Σ|q_i d_i| ≤ γ_d
//! |q| |d|` of the exact value, `γ_d = d·u / (1 − d·u)`, `u = 2⁻²⁴` (Higham, *Accuracy and Stability of
//! Numerical Algorithms*, 2nd ed., §3.1); two such sums are within twice that of each other. Cosine
//! adds the normalisations' few roundings on unit vectors. Each query takes `ε = 4 (d + 4) u |q| max|d|`
//! (the vectors as compared: unit vectors for cosine), above both, and keeps every document whose product
//! score is at least its k-th best minus `2ε`. The k-th best of either scoring is within `ε` of the
//! other's, so no document of the exact top k (ties included) is missed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use candle_core::{Device, Tensor};

use super::biencoder::{Similarity, similarity};
use crate::error::Result;

/// Documents per product.
const BLOCK: usize = 4096;

/// An `f32` ordered by `total_cmp`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Total(f32);

impl Eq for Total {}

impl PartialOrd for Total {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Total {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// `v` as the product compares it: unit length for cosine (a zero vector stays zero), as it is for dot.
fn prepared(v: &[f32], sim: Similarity) -> Vec<f32> {
    match sim {
        Similarity::Dot => v.to_vec(),
        Similarity::Cosine => {
            let n = norm(v);
            if n == 0.0 {
                vec![0.0; v.len()]
            } else {
                v.iter().map(|x| x / n).collect()
            }
        }
    }
}

/// For each query, every document that can be among its `k` best under [`similarity`], with its
/// [`similarity`] score: `(document index, score)`, in document order. Sorting a query's list (with
/// the run's tie rule) and keeping its first `k` gives exactly the top `k` of scoring every document
/// with [`similarity`] (module docs). Vectors of another length than the first query's are an error.
pub fn candidates(
    queries: &[Vec<f32>],
    docs: &[&[f32]],
    sim: Similarity,
    k: usize,
) -> Result<Vec<Vec<(usize, f32)>>> {
    let (m, n) = (queries.len(), docs.len());
    if m == 0 || n == 0 || k == 0 {
        return Ok(vec![Vec::new(); m]);
    }
    let d = queries[0].len();
    if let Some(bad) = queries
        .iter()
        .map(Vec::len)
        .chain(docs.iter().map(|v| v.len()))
        .find(|l| *l != d)
    {
        return Err(crate::Error::Internal(format!(
            "exact search: vectors of {bad} and {d} dimensions in one search"
        )));
    }
    if k >= n {
        // Every document is a candidate: score them all.
        return Ok(queries
            .iter()
            .map(|q| {
                docs.iter()
                    .enumerate()
                    .map(|(i, v)| (i, similarity(q, v, sim)))
                    .collect()
            })
            .collect());
    }
    let q_rows: Vec<f32> = queries.iter().flat_map(|q| prepared(q, sim)).collect();
    let q = Tensor::from_vec(q_rows, (m, d), &Device::Cpu)?;
    let blocks: Vec<Tensor> = docs
        .chunks(BLOCK)
        .map(|chunk| {
            let rows: Vec<f32> = chunk.iter().flat_map(|v| prepared(v, sim)).collect();
            Tensor::from_vec(rows, (chunk.len(), d), &Device::Cpu)?.t()
        })
        .collect::<candle_core::Result<_>>()?;
    // The scores of every query against block `b`: row-major, m × (its documents).
    let scores = |b: &Tensor| -> Result<Vec<f32>> { Ok(q.matmul(b)?.flatten_all()?.to_vec1::<f32>()?) };

    // Pass 1: each query's k-th best product score.
    let mut best: Vec<BinaryHeap<Reverse<Total>>> =
        (0..m).map(|_| BinaryHeap::with_capacity(k + 1)).collect();
    for (b, block) in blocks.iter().enumerate() {
        let s = scores(block)?;
        let width = docs.chunks(BLOCK).nth(b).map_or(0, <[_]>::len);
        for (qi, heap) in best.iter_mut().enumerate() {
            for &x in &s[qi * width..(qi + 1) * width] {
                if heap.len() < k {
                    heap.push(Reverse(Total(x)));
                } else if heap.peek().is_some_and(|Reverse(min)| Total(x) > *min) {
                    heap.pop();
                    heap.push(Reverse(Total(x)));
                }
            }
        }
    }
    let u = f32::EPSILON / 2.0;
    let doc_norm = docs
        .iter()
        .map(|v| match sim {
            Similarity::Dot => norm(v),
            Similarity::Cosine => 1.0,
        })
        .fold(0.0f32, f32::max);
    let thresholds: Vec<f32> = queries
        .iter()
        .zip(&best)
        .map(|(qv, heap)| {
            let q_norm = match sim {
                Similarity::Dot => norm(qv),
                Similarity::Cosine => 1.0,
            };
            let eps = 4.0 * (d as f32 + 4.0) * u * q_norm * doc_norm;
            heap.peek()
                .map_or(f32::NEG_INFINITY, |Reverse(Total(kth))| kth - 2.0 * eps)
        })
        .collect();

    // Pass 2: the documents at or above each threshold, scored again as `similarity` scores them.
    let mut out: Vec<Vec<(usize, f32)>> = vec![Vec::new(); m];
    for (b, block) in blocks.iter().enumerate() {
        let s = scores(block)?;
        let width = docs.chunks(BLOCK).nth(b).map_or(0, <[_]>::len);
        for (qi, list) in out.iter_mut().enumerate() {
            let thr = thresholds[qi];
            for (j, &x) in s[qi * width..(qi + 1) * width].iter().enumerate() {
                // NaN compares false: such a document is scored again below only if its product
                // was finite; a NaN vector fails the run where scores are checked.
                if x >= thr || x.is_nan() {
                    let i = b * BLOCK + j;
                    list.push((i, similarity(&queries[qi], docs[i], sim)));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random vector.
    fn vector(seed: u64, d: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..d)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    /// The top `k` of scoring every document with `similarity`, ties by the higher index first (as a
    /// run breaks them by doc id).
    fn brute(q: &[f32], docs: &[&[f32]], sim: Similarity, k: usize) -> Vec<(usize, f32)> {
        let mut all: Vec<(usize, f32)> = docs
            .iter()
            .enumerate()
            .map(|(i, v)| (i, similarity(q, v, sim)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        all.truncate(k);
        all
    }

    #[test]
    fn the_products_find_the_same_top_k_and_bits_as_every_pair() {
        let d = 48;
        // Near-duplicates and exact duplicates make ties and near-ties across block edges.
        let mut owned: Vec<Vec<f32>> = (0..9000).map(|i| vector(i, d)).collect();
        for i in 0..200 {
            owned[4096 + i] = owned[i].clone();
            owned[8000 + i] = owned[i].iter().map(|x| x * (1.0 + 1e-7)).collect();
        }
        owned[10] = vec![0.0; d];
        let docs: Vec<&[f32]> = owned.iter().map(Vec::as_slice).collect();
        let queries: Vec<Vec<f32>> = (0..7)
            .map(|i| vector(100_000 + i, d))
            .chain([owned[5].clone()])
            .collect();
        for sim in [Similarity::Cosine, Similarity::Dot] {
            for k in [1, 10, 1000] {
                let found = candidates(&queries, &docs, sim, k).unwrap();
                for (q, list) in queries.iter().zip(&found) {
                    let mut got = list.clone();
                    assert!(got.len() >= k, "at least k candidates");
                    assert!(got.len() < docs.len(), "the search kept only candidates");
                    got.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
                    got.truncate(k);
                    let want = brute(q, &docs, sim, k);
                    let bits =
                        |v: &[(usize, f32)]| v.iter().map(|(i, s)| (*i, s.to_bits())).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{sim:?}, k = {k}");
                }
            }
        }
    }

    #[test]
    fn near_ties_that_the_products_reorder_are_still_found() {
        // A cluster of documents whose scores differ by less than the products' rounding: the
        // product's order among them is not `similarity`'s, and the k-th best falls inside it.
        let d = 384;
        let base = vector(1, d);
        let step = vector(2, d);
        let owned: Vec<Vec<f32>> = (0..6000)
            .map(|i| {
                let t = (i as f32) * 1e-9;
                base.iter().zip(&step).map(|(b, s)| b + t * s).collect()
            })
            .chain((0..3000).map(|i| vector(10 + i, d)))
            .collect();
        let docs: Vec<&[f32]> = owned.iter().map(Vec::as_slice).collect();
        let q: Vec<f32> = base.iter().zip(vector(3, d)).map(|(b, n)| b + 0.3 * n).collect();
        for sim in [Similarity::Cosine, Similarity::Dot] {
            for k in [5, 100, 3000] {
                let found = candidates(std::slice::from_ref(&q), &docs, sim, k).unwrap();
                let mut got = found[0].clone();
                got.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
                got.truncate(k);
                let want = brute(&q, &docs, sim, k);
                assert_eq!(
                    got.iter().map(|(i, s)| (*i, s.to_bits())).collect::<Vec<_>>(),
                    want.iter().map(|(i, s)| (*i, s.to_bits())).collect::<Vec<_>>(),
                    "{sim:?}, k = {k}"
                );
            }
        }
    }

    #[test]
    fn a_small_corpus_or_a_deep_k_scores_every_document() {
        let owned: Vec<Vec<f32>> = (0..5).map(|i| vector(i, 8)).collect();
        let docs: Vec<&[f32]> = owned.iter().map(Vec::as_slice).collect();
        let found = candidates(&[vector(9, 8)], &docs, Similarity::Cosine, 10).unwrap();
        assert_eq!(found[0].len(), 5);
        assert!(candidates(&[vector(9, 7)], &docs, Similarity::Cosine, 2).is_err());
    }
}
