//! Single-precision matrix products for the CPU: `C = A·B` or `C += A·B` on strided views.
//!
//! The products of the encoder and the trainer (the four linear layers, both backward products of
//! each, attention's per-head products) all come here, through candle's CPU matmul (the vendored
//! `candle-core`) and `lexbench_engine::kernels`.
//!
//! # How a product is computed
//!
//! The classic packed scheme (Goto; BLIS), with the register tile laid along `C`'s rows so that each
//! vector of the tile is a piece of one row of `C`:
//!
//! * all of `B` is packed once per product (every tile reads it) into micro-panels of `NR` columns
//!   (`NR` values per depth step, contiguous; zero-padded past `n`), depth block by depth block of
//!   [`KC`]; where `B`'s columns are contiguous (`Wᵀ`, `Kᵀ`) 8 × 8 blocks are transposed in registers;
//! * the output is cut into tiles of rows × column ranges (the tasks; any thread may take any tile),
//!   shaped so that the workers finish together (`tiles`: a weight gradient's few hundred rows in
//!   equal tiles, two per worker, not five full tiles and a sliver);
//! * a tile walks the depth in blocks of [`KC`]; for each block it reads its rows of `A` in place
//!   when they are contiguous (`MR` rows `rsa` apart), packing only a last panel of fewer than `MR`
//!   rows (or every panel, for any other `A`), and runs the micro-kernel over `B`'s panels a chunk
//!   of columns at a time (`nt`, sized so that the chunk's panels stay in L2);
//! * the micro-kernel keeps an `MR × NR` block of `C` in vector registers (AVX-512: 12 × 32 in 24
//!   `zmm`; AVX2: 6 × 16 in 12 `ymm`) and, per depth step, loads `NR` values of `B`, broadcasts each
//!   of the `MR` values of `A` and issues `MR · NR / width` fused multiply-adds. The `A` micro-panel
//!   (`MR × KC`, 18 KiB on AVX-512) stays in L1 while the chunk's `B` micro-panels stream from L2;
//! * the first depth block stores its block (plus a bias row, when given), the next ones add to it.

//! # The same bits everywhere
//!
//! Every element of `C` is, on every path, `((c₀ + s₀) + s₁) + …` where `c₀` is `C`'s old value
//! (or nothing) and `s_b` is the fused multiply-add chain `fma(a, b, …fma(a, b, 0))` over depth block
//! `b`'s steps in order. Lanes never mix, the blocks are [`KC`] deep on every path, and which tile or
//! thread computes an element does not change its chain. So a product gives the same bits for any
//! thread count and on the AVX-512, AVX2 and portable paths alike (`tests/agree.rs` checks both); it
//! differs from another library's product by rounding only (the reference there is an f64 sum).
//!
//! `LEXBENCH_ISA=avx2|portable` caps the path (benchmarks of the AVX2 path on an AVX-512 CPU).
//! The portable path is the reference the vector paths are checked against, not a fast path: its
//! micro-kernel is plain Rust with one `mul_add` per element step, which the compiler neither
//! vectorises nor fuses without the FMA target feature (a library call per step there), so a product
//! on it takes one to two orders of magnitude longer than on AVX2 (a hostile probe's `encode` under
//! `LEXBENCH_ISA=portable` ran over 100 times slower). It is what a CPU without AVX2 and FMA gets;
//! `lexbench` says so on standard error when a cap, not the CPU, chose it.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::sync::OnceLock;

/// Depth of one packed block: every path uses the same, so every path gives the same bits.
pub const KC: usize = 384;

/// The instruction set a product runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// `f32::mul_add` in plain loops: any CPU (fused multiply-add in software where the CPU has none).
    Portable,
    /// 256-bit vectors with FMA3 (x86-64 v3).
    Avx2,
    /// 512-bit vectors (AVX-512F).
    Avx512,
}

impl Isa {
    /// The widest path this CPU has. AVX-512 means F, BW, DQ and VL with FMA (what lexbench's
    /// element-wise kernels compile for; the products need F alone), AVX2 means AVX2 with FMA.
    pub fn detected() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") && has!("fma") {
                return Isa::Avx512;
            }
            if has!("avx2") && has!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// The path the products and lexbench's kernels take: [`Isa::detected`], capped by
    /// `LEXBENCH_ISA` (`avx512`, `avx2` or `portable`; read once). An unknown value is ignored with a
    /// note on standard error; so is the portable path chosen by a cap (it is the slow reference).
    /// `LEXBENCH_GEMM` and `LEXBENCH_KERNELS`, the variable's former names, are read when it is unset.
    pub fn active() -> Isa {
        static ACTIVE: OnceLock<Isa> = OnceLock::new();
        *ACTIVE.get_or_init(|| {
            let detected = Isa::detected();
            let Some((name, v)) = ["LEXBENCH_ISA", "LEXBENCH_GEMM", "LEXBENCH_KERNELS"]
                .into_iter()
                .find_map(|name| std::env::var(name).ok().map(|v| (name, v)))
            else {
                return detected;
            };
            if name != "LEXBENCH_ISA" {
                eprintln!("note: {name} is now LEXBENCH_ISA (one cap for the products and the kernels)");
            }
            match Isa::capped(detected, &v) {
                Ok(Isa::Portable) if detected != Isa::Portable => {
                    eprintln!(
                        "note: {name}={v:?}: matrix products take the portable reference path, \
                         one to two orders of magnitude slower than the {} path this CPU has (the same bits)",
                        detected.name()
                    );
                    Isa::Portable
                }
                Ok(isa) => isa,
                Err(e) => {
                    eprintln!("{name}={e}: ignored ({} used)", detected.name());
                    detected
                }
            }
        })
    }

    /// The path a cap gives on a CPU whose widest is `widest`: the narrower of the two; an empty cap
    /// is none. An unknown cap is an error naming the values.
    pub fn capped(widest: Isa, cap: &str) -> Result<Isa, String> {
        if cap.trim().is_empty() {
            return Ok(widest);
        }
        Isa::parse(cap)
            .map(|cap| cap.min(widest))
            .ok_or_else(|| format!("{cap:?} is not one of avx512, avx2, portable"))
    }

    /// `avx512`, `avx2` or `portable`.
    pub fn parse(s: &str) -> Option<Isa> {
        match s.trim().to_ascii_lowercase().as_str() {
            "avx512" | "avx-512" => Some(Isa::Avx512),
            "avx2" => Some(Isa::Avx2),
            "portable" | "scalar" => Some(Isa::Portable),
            _ => None,
        }
    }

    /// The name `LEXBENCH_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }

    /// Whether this CPU can run the path.
    pub fn available(self) -> bool {
        self <= Isa::detected()
    }

    fn blocking(self) -> Blocking {
        match self {
            // B chunk: KC × 384 floats = 576 KiB (L2 of Zen 4/5: 1 MiB; Intel server cores: 2 MiB).
            Isa::Avx512 => Blocking {
                mr: 12,
                nr: 32,
                mt: 144,
                nt: 384,
            },
            // B chunk: KC × 192 floats = 288 KiB (L2 of Zen 2/3: 512 KiB).
            Isa::Avx2 => Blocking {
                mr: 6,
                nr: 16,
                mt: 96,
                nt: 192,
            },
            Isa::Portable => Blocking {
                mr: 4,
                nr: 8,
                mt: 64,
                nt: 256,
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Blocking {
    mr: usize,
    nr: usize,
    mt: usize,
    nt: usize,
}

/// One product: `C (m × n) = A (m × k) · B (k × n)`, or `C += A·B` with `accumulate`. Each matrix is
/// a base pointer and a row stride and a column stride in elements (any sign; zero broadcasts).
#[derive(Clone, Copy, Debug)]
pub struct Product {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// Columns of `A`, rows of `B`.
    pub k: usize,
    /// `A[i][p]` is at `a + i·rsa + p·csa`.
    pub a: *const f32,
    /// Row stride of `A`.
    pub rsa: isize,
    /// Column stride of `A`.
    pub csa: isize,
    /// `B[p][j]` is at `b + p·rsb + j·csb`.
    pub b: *const f32,
    /// Row stride of `B`.
    pub rsb: isize,
    /// Column stride of `B`.
    pub csb: isize,
    /// `C[i][j]` is at `c + i·rsc + j·csc`; no two `(i, j)` may share an address.
    pub c: *mut f32,
    /// Row stride of `C`.
    pub rsc: isize,
    /// Column stride of `C`.
    pub csc: isize,
    /// `C += A·B` (true) or `C = A·B` (false: `C`'s old values are never read).
    pub accumulate: bool,
    /// `n` values added to every row of `C` (`C = bias + A·B`; contiguous), or null for none. With
    /// `accumulate` it is ignored. The bits are those of `C` filled with the bias rows and then
    /// accumulated into, without the pass that fills them.
    pub bias: *const f32,
}

// SAFETY: a `Product` is a description; the caller of `sgemm` guarantees the memory it points to is
// valid and that no one else writes `C` (or reads it while it is written) during the call. Tasks
// write disjoint tiles of `C`.
unsafe impl Send for Product {}
unsafe impl Sync for Product {}

impl Product {
    /// The product of row-major, contiguous slices: `C (m × n) = A (m × k) · B (k × n)`.
    ///
    /// # Panics
    /// When a slice's length is not its shape's.
    pub fn row_major(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) -> Self {
        assert_eq!(a.len(), m * k, "A is {m} × {k}");
        assert_eq!(b.len(), k * n, "B is {k} × {n}");
        assert_eq!(c.len(), m * n, "C is {m} × {n}");
        Product {
            m,
            n,
            k,
            a: a.as_ptr(),
            rsa: k as isize,
            csa: 1,
            b: b.as_ptr(),
            rsb: n as isize,
            csb: 1,
            c: c.as_mut_ptr(),
            rsc: n as isize,
            csc: 1,
            accumulate: false,
            bias: std::ptr::null(),
        }
    }

    /// `Cᵀ = Bᵀ·Aᵀ`: the same product seen transposed.
    fn transposed(self) -> Self {
        Product {
            m: self.n,
            n: self.m,
            k: self.k,
            a: self.b,
            rsa: self.csb,
            csa: self.rsb,
            b: self.a,
            rsb: self.csa,
            csb: self.rsa,
            c: self.c,
            rsc: self.csc,
            csc: self.rsc,
            accumulate: self.accumulate,
            bias: self.bias,
        }
    }
}

/// A pool's entry: `run(tasks, f)` calls `f(t)` for every `t` in `0..tasks`.
pub type RunTasks<'a> = dyn Fn(usize, &(dyn Fn(usize) + Sync)) + Sync + 'a;

/// How a product's tasks reach threads: `count` workers, and `run(tasks, f)` must call `f(t)` once
/// for every `t` in `0..tasks`, from any threads, and return when all calls have returned.
pub struct Threads<'a> {
    /// How many workers `run` spreads over (tiles are sized to give each several).
    pub count: usize,
    /// The pool.
    pub run: &'a RunTasks<'a>,
}

/// A pool for callers without one: `count` threads started for the call (`std::thread::scope`),
/// taking tasks from a shared counter. Starting them costs tens of microseconds a call; a caller
/// with a pool of its own (candle's barrier pool) hands that over instead.
pub fn scoped_threads(count: usize) -> impl Fn(usize, &(dyn Fn(usize) + Sync)) + Sync {
    move |tasks, f| {
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..count.max(1) {
                s.spawn(|| {
                    loop {
                        let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if t >= tasks {
                            break;
                        }
                        f(t);
                    }
                });
            }
        });
    }
}

impl Threads<'static> {
    /// Every task on the calling thread.
    pub fn serial() -> Threads<'static> {
        fn run(tasks: usize, f: &(dyn Fn(usize) + Sync)) {
            (0..tasks).for_each(f);
        }
        Threads { count: 1, run: &run }
    }
}

/// A matrix inside a slice: element `(i, j)` at `data[offset + i·rs + j·cs]`.
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a> {
    /// The storage.
    pub data: &'a [f32],
    /// Where `(0, 0)` is.
    pub offset: usize,
    /// Row stride (elements; any sign).
    pub rs: isize,
    /// Column stride.
    pub cs: isize,
}

/// The output of [`matmul`]: as [`Strided`], writable.
#[derive(Debug)]
pub struct StridedMut<'a> {
    /// The storage.
    pub data: &'a mut [f32],
    /// Where `(0, 0)` is.
    pub offset: usize,
    /// Row stride.
    pub rs: isize,
    /// Column stride.
    pub cs: isize,
}

/// Why [`matmul`] refused a product.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LayoutError {}

/// Checks that every element of a `rows × cols` view lies in a slice of `len`; returns nothing.
fn check_view(
    name: &str,
    rows: usize,
    cols: usize,
    len: usize,
    offset: usize,
    rs: isize,
    cs: isize,
) -> Result<(), LayoutError> {
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let far = |n: usize, s: isize| -> Option<(isize, isize)> {
        let last = isize::try_from(n - 1).ok()?.checked_mul(s)?;
        Some((last.min(0), last.max(0)))
    };
    let bad = || {
        LayoutError(format!(
            "{name} ({rows} × {cols}, offset {offset}, strides {rs}, {cs}) reaches outside its {len} values"
        ))
    };
    let (r_lo, r_hi) = far(rows, rs).ok_or_else(bad)?;
    let (c_lo, c_hi) = far(cols, cs).ok_or_else(bad)?;
    let off = isize::try_from(offset).map_err(|_| bad())?;
    let lo = off
        .checked_add(r_lo)
        .and_then(|x| x.checked_add(c_lo))
        .ok_or_else(bad)?;
    let hi = off
        .checked_add(r_hi)
        .and_then(|x| x.checked_add(c_hi))
        .ok_or_else(bad)?;
    if lo < 0 || hi >= isize::try_from(len).map_err(|_| bad())? {
        return Err(bad());
    }
    Ok(())
}

/// `C = A·B`, `C = bias + A·B` or `C += A·B` on `isa`, with every index checked: the safe entry.
///
/// # Errors
/// A view reaching outside its slice, a `C` whose elements could share an address, or a path this
/// CPU lacks.
pub fn matmul(
    isa: Isa,
    (m, n, k): (usize, usize, usize),
    a: Strided<'_>,
    b: Strided<'_>,
    c: StridedMut<'_>,
    (accumulate, bias): (bool, Option<&[f32]>),
    threads: &Threads<'_>,
) -> Result<(), LayoutError> {
    if !isa.available() {
        return Err(LayoutError(format!("this CPU has no {} path", isa.name())));
    }
    if let Some(bias) = bias
        && bias.len() != n
    {
        return Err(LayoutError(format!(
            "the bias has {} values for {n} columns",
            bias.len()
        )));
    }
    check_view("A", m, k, a.data.len(), a.offset, a.rs, a.cs)?;
    check_view("B", k, n, b.data.len(), b.offset, b.rs, b.cs)?;
    check_view("C", m, n, c.data.len(), c.offset, c.rs, c.cs)?;
    let (ur, uc) = (c.rs.unsigned_abs(), c.cs.unsigned_abs());
    let distinct = m <= 1 && (n <= 1 || uc >= 1)
        || n <= 1 && ur >= 1
        || uc >= 1 && ur >= n.saturating_mul(uc)
        || ur >= 1 && uc >= m.saturating_mul(ur);
    if m > 0 && n > 0 && !distinct {
        return Err(LayoutError(format!(
            "C's strides ({}, {}) let two of its {m} × {n} elements share an address",
            c.rs, c.cs
        )));
    }
    let p = Product {
        m,
        n,
        k,
        a: a.data.as_ptr().wrapping_add(a.offset),
        rsa: a.rs,
        csa: a.cs,
        b: b.data.as_ptr().wrapping_add(b.offset),
        rsb: b.rs,
        csb: b.cs,
        c: c.data.as_mut_ptr().wrapping_add(c.offset),
        rsc: c.rs,
        csc: c.cs,
        accumulate,
        bias: bias.map_or(std::ptr::null(), <[f32]>::as_ptr),
    };
    // SAFETY: every element is inside its slice (checked above); C is borrowed mutably, so it
    // overlaps neither A nor B, and its elements are distinct (checked above).
    unsafe { sgemm_on(isa, p, threads) };
    Ok(())
}

/// `C = A·B` (or `C += A·B`) on the active path ([`Isa::active`]).
///
/// # Safety
/// Every element the product names must be readable (`A`, `B`) and writable (`C`) for the call; `C`
/// must not overlap `A` or `B`, and no two of its `(i, j)` may share an address.
pub unsafe fn sgemm(p: Product, threads: &Threads<'_>) {
    // SAFETY: forwarded.
    unsafe { sgemm_on(Isa::active(), p, threads) }
}

/// What [`sgemm_then`] runs on each finished piece of a row of `C`: `then(i, j0, piece)` with the
/// piece `C[i][j0..j0 + piece.len()]`, once per element of `C` in all.
pub type Then<'a> = dyn Fn(usize, usize, &mut [f32]) + Sync + 'a;

/// [`sgemm`], then `then` on every element of `C`, piece of a row by piece as the product finishes
/// it, while the piece is still in cache (the bias and GELU of a feed-forward layer: the same
/// values as a pass over the whole `C` afterwards, without reading `C` back from memory).
///
/// # Safety
/// As [`sgemm`].
pub unsafe fn sgemm_then(p: Product, threads: &Threads<'_>, then: &Then<'_>) {
    // SAFETY: forwarded.
    unsafe { sgemm_inner(Isa::active(), p, threads, Some(then)) }
}

/// [`sgemm`] on a given path.
///
/// # Safety
/// As [`sgemm`]; and the CPU must have `isa` ([`Isa::available`]).
pub unsafe fn sgemm_on(isa: Isa, p: Product, threads: &Threads<'_>) {
    // SAFETY: forwarded.
    unsafe { sgemm_inner(isa, p, threads, None) }
}

/// [`sgemm_on`], with [`sgemm_then`]'s `then` when given.
///
/// # Safety
/// As [`sgemm_on`].
unsafe fn sgemm_inner(isa: Isa, mut p: Product, threads: &Threads<'_>, then: Option<&Then<'_>>) {
    assert!(isa.available(), "this CPU has no {} path", isa.name());
    if let Some(then) = then
        && (p.csc != 1 || p.k == 0)
    {
        // Not a layout the tiles finish row by row: the product, then `then` over each row.
        // SAFETY: forwarded.
        unsafe { sgemm_inner(isa, p, threads, None) };
        for i in 0..p.m {
            if p.csc == 1 {
                // SAFETY: row i of C is contiguous and writable (caller); no other reference to it
                // is alive.
                let row = unsafe { std::slice::from_raw_parts_mut(p.c.offset(i as isize * p.rsc), p.n) };
                then(i, 0, row);
            } else {
                for j in 0..p.n {
                    // SAFETY: element (i, j) of C is writable (caller).
                    let e = unsafe { &mut *p.c.offset(i as isize * p.rsc + j as isize * p.csc) };
                    then(i, j, std::slice::from_mut(e));
                }
            }
        }
        return;
    }
    if p.m == 0 || p.n == 0 {
        return;
    }
    if p.k == 0 {
        if !p.accumulate {
            for i in 0..p.m {
                for j in 0..p.n {
                    // SAFETY: C is writable, the bias (when given) holds n values (caller).
                    unsafe {
                        let v = if p.bias.is_null() { 0.0 } else { *p.bias.add(j) };
                        *p.c.offset(i as isize * p.rsc + j as isize * p.csc) = v;
                    }
                }
            }
        }
        return;
    }
    if p.accumulate {
        p.bias = std::ptr::null();
    }
    // The register tile runs along C's rows; a column-major C is computed as Cᵀ = Bᵀ·Aᵀ.
    if p.csc != 1 && p.rsc == 1 {
        if !p.bias.is_null() {
            // The bias runs along Cᵀ's columns there: fill C with it and accumulate (same bits).
            for i in 0..p.m {
                for j in 0..p.n {
                    // SAFETY: C is writable and the bias holds n values (caller).
                    unsafe { *p.c.offset(i as isize * p.rsc + j as isize * p.csc) = *p.bias.add(j) };
                }
            }
            p.accumulate = true;
            p.bias = std::ptr::null();
        }
        p = p.transposed();
    }
    let bl = isa.blocking();
    let workers = threads.count.max(1);
    let np = p.n.div_ceil(bl.nr);
    let kb = KC.min(p.k);
    let blocks = p.k.div_ceil(KC);
    PACKED_B.with(|packed| {
        let mut packed = packed.borrow_mut();
        let packed = packed.get(blocks * kb * np * bl.nr);
        let b_at = Shared(packed.as_mut_ptr());
        // Pass 1: all of B into micro-panels, once per product (every tile reads them).
        // SAFETY: each task writes its own panel column of `packed` (sized for all of them); B's
        // elements are readable (caller).
        let pack = |s: usize| unsafe { pack_b_column(&p, bl, np, s, b_at.get()) };
        // (B is always packed: read in place, attention's V (rows 1,152 values apart) ran slower,
        // its rows falling on few L1 sets.)
        if workers > 1 && p.n * p.k >= PARALLEL_PACKING {
            (threads.run)(np, &pack);
        } else {
            (0..np).for_each(pack);
        }
        // Pass 2: tiles of rows × column ranges, each over the whole depth.
        let (mt, ct) = tiles(p.m, np, workers, bl);
        let (tm, tn) = (p.m.div_ceil(mt), np.div_ceil(ct));
        let task = |t: usize| {
            let (ti, tj) = (t / tn, t % tn);
            let i0 = ti * mt;
            let panels = tj * ct..np.min((tj + 1) * ct);
            let rows = mt.min(p.m - i0);
            WORKSPACE.with(|ws| {
                let mut ws = ws.borrow_mut();
                // SAFETY: the caller's guarantees; tiles are disjoint; `packed` holds every panel.
                unsafe {
                    run_tile(
                        isa,
                        bl,
                        &p,
                        RowTile { i0, rows, panels },
                        (b_at.get(), np),
                        &mut ws,
                        then,
                    )
                }
            });
        };
        let tasks = tm * tn;
        if tasks == 1 || workers <= 1 {
            (0..tasks).for_each(task);
        } else {
            (threads.run)(tasks, &task);
        }
    });
}

/// Packs column of micro-panels `s` of `p`'s B, every depth block, into its place in a buffer of
/// `blocks · kb · np · nr` values (`kb` = `KC.min(k)`): block `blk`'s panel `s` at `blk·kb·np·nr + s·nr·kc`.
///
/// # Safety
/// B's elements are readable; `packed` holds the whole layout and no one else writes this panel column.
unsafe fn pack_b_column(p: &Product, bl: Blocking, np: usize, s: usize, packed: *mut f32) {
    let kb = KC.min(p.k);
    for blk in 0..p.k.div_ceil(KC) {
        let (p0, kc) = (blk * KC, KC.min(p.k - blk * KC));
        let at = blk * kb * np * bl.nr + s * bl.nr * kc;
        // SAFETY: caller.
        unsafe {
            let dst = std::slice::from_raw_parts_mut(packed.add(at), bl.nr * kc);
            pack_b_panel(p, s * bl.nr, p0, kc, bl.nr, dst);
        }
    }
}

/// A `B` packed once for several single-threaded products that share it: attention's `Kᵀ` and `V`
/// of one (sequence, head), read by every block of query rows, so that a block's scores, softmax and
/// weighted sum stay in L1 without packing `B` again per block. Each element of a product comes out
/// as [`sgemm`] computes it (the same chain; module docs), so the same bits.
pub struct PackedB {
    isa: Isa,
    k: usize,
    n: usize,
    buf: Aligned,
}

impl PackedB {
    /// An empty buffer for `isa`'s panels (no allocation until the first [`PackedB::pack`]).
    ///
    /// # Panics
    /// When the CPU lacks `isa`.
    pub fn new(isa: Isa) -> PackedB {
        assert!(isa.available(), "this CPU has no {} path", isa.name());
        PackedB {
            isa,
            k: 0,
            n: 0,
            buf: Aligned::default(),
        }
    }

    /// Packs `B (k × n)`, element `(p, j)` at `b + p·rsb + j·csb`, replacing what was packed (the
    /// buffer is kept).
    ///
    /// # Safety
    /// Every element of `B` is readable.
    pub unsafe fn pack(&mut self, (k, n): (usize, usize), b: *const f32, rsb: isize, csb: isize) {
        let bl = self.isa.blocking();
        let np = n.div_ceil(bl.nr);
        let len = k.div_ceil(KC) * KC.min(k) * np * bl.nr;
        let dst = self.buf.get(len).as_mut_ptr();
        let p = Product {
            k,
            n,
            b,
            rsb,
            csb,
            ..Product::row_major(0, 0, 0, &[], &[], &mut [])
        };
        for s in 0..np {
            // SAFETY: `dst` holds every panel column; B readable (caller).
            unsafe { pack_b_column(&p, bl, np, s, dst) };
        }
        (self.k, self.n) = (k, n);
    }

    /// `C (m × n) = A (m × k) · B` (or `C += A·B` with `accumulate`) on the calling thread, with the
    /// `B` last packed: `A[i][p]` at `a + i·rsa + p·csa`, `C[i][j]` at `c + i·rsc + j` (rows of `C`
    /// contiguous).
    ///
    /// # Safety
    /// `A`'s elements readable and `C`'s writable, `C` overlapping neither `A` nor the buffer, no two
    /// of its elements at one address.
    pub unsafe fn product(
        &self,
        m: usize,
        (a, rsa, csa): (*const f32, isize, isize),
        (c, rsc): (*mut f32, isize),
        accumulate: bool,
    ) {
        let (k, n) = (self.k, self.n);
        if m == 0 || n == 0 {
            return;
        }
        if k == 0 {
            if !accumulate {
                for i in 0..m {
                    // SAFETY: row i of C is writable (caller).
                    unsafe { std::slice::from_raw_parts_mut(c.offset(i as isize * rsc), n).fill(0.0) };
                }
            }
            return;
        }
        let bl = self.isa.blocking();
        let np = n.div_ceil(bl.nr);
        let p = Product {
            m,
            n,
            k,
            a,
            rsa,
            csa,
            b: std::ptr::null(),
            rsb: 0,
            csb: 0,
            c,
            rsc,
            csc: 1,
            accumulate,
            bias: std::ptr::null(),
        };
        let packed = self.buf.start();
        WORKSPACE.with(|ws| {
            // SAFETY: the caller's guarantees; the buffer holds every panel of B (packed by `pack`
            // for this k and n, from the aligned start).
            unsafe {
                run_tile(
                    self.isa,
                    bl,
                    &p,
                    RowTile {
                        i0: 0,
                        rows: m,
                        panels: 0..np,
                    },
                    (packed, np),
                    &mut ws.borrow_mut(),
                    None,
                )
            }
        });
    }
}

/// From this many micro-panels of B per tile on, a tile packs its rows of A even where they are
/// contiguous: the micro-kernel then reads `A` at fixed offsets from one pointer, where reading the
/// rows in place costs it a dozen address computations per depth step (the encoder's products, 12
/// or more panels a tile, ran 5–10 % faster packed on an Intel Xeon; attention's, 1 to 4 panels,
/// slower: the copy is paid once per panel of B).
const PACK_A_FROM: usize = 16;

/// Below this many elements of B (n·k), one thread packs it.
const PARALLEL_PACKING: usize = 64 * 1024;

/// A pointer the tasks share (each writes or reads only its own part).
#[derive(Clone, Copy)]
struct Shared(*mut f32);

// SAFETY: tasks touch disjoint parts of the buffer (packing) or only read it (tiles).
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// Tile sizes: rows per tile (a multiple of the path's `mr`, at most its `mt`) and micro-panels of
/// columns per tile. On one thread: `mt` evened out over `m`, every column. On several: among the
/// shapes whose tiles, handed out in order to whichever worker is free, finish within 3 % of the
/// soonest (counted in micro-kernel calls), the one with the fewest tiles (each re-reads its panels
/// of B), then the fewest column splits (each re-packs its rows of A). A weight gradient `dYᵀ·X` of
/// 384 rows on two workers is four tiles of 96 rows, where halving 144 gave six of 72 (five full and
/// one of 24: one worker idle for a sixth of the product). Results do not depend on the tiles
/// (module docs).
fn tiles(m: usize, np: usize, workers: usize, bl: Blocking) -> (usize, usize) {
    let max_r = (bl.mt / bl.mr).max(1);
    let mp = m.div_ceil(bl.mr);
    // Eight or more full tiles per worker: the last one's remainder is a small share (the encoder's
    // and the forward products' thousands of rows); one thread's shape.
    if workers <= 1 || mp >= 8 * workers * max_r {
        let parts = mp.div_ceil(max_r);
        return (mp.div_ceil(parts) * bl.mr, np);
    }
    // Otherwise every shape of at most 16 tiles per worker (the search is a few thousand steps).
    let mut shapes = Vec::new();
    let mut loads = vec![0usize; workers];
    for r in 1..=max_r.min(mp) {
        let tm = mp.div_ceil(r);
        for tn in 1..=np.min(4 * workers) {
            let c = np.div_ceil(tn);
            let tn = np.div_ceil(c);
            if tm * tn > 16 * workers && r < max_r.min(mp) {
                continue;
            }
            loads.iter_mut().for_each(|l| *l = 0);
            for ti in 0..tm {
                let rows = r.min(mp - ti * r);
                for tj in 0..tn {
                    let cols = c.min(np - tj * c);
                    let min = loads.iter_mut().min().expect("workers > 1");
                    *min += rows * cols;
                }
            }
            let span = *loads.iter().max().expect("workers > 1");
            shapes.push((span, tm * tn, tn, r * bl.mr, c));
        }
    }
    // Within 3 % of the shortest finish, the fewest tiles: many small tiles finish as soon on paper,
    // but each re-reads its panels of B and pays its call (7,168 rows in 598 tiles of 12 ran slower
    // than in 50 of 144).
    let shortest = shapes.iter().map(|s| s.0).min().expect("at least one shape");
    let (_, _, _, mt, ct) = shapes
        .into_iter()
        .filter(|s| s.0 * 100 <= shortest * 103)
        .min_by_key(|s| (s.1, s.2, s.0))
        .expect("the shortest is within 3 % of itself");
    (mt, ct)
}

/// Packed panels of one tile's rows of A, kept per thread between products (no allocation once warm).
#[derive(Default)]
struct Workspace {
    a: Aligned,
}

/// A buffer of f32 whose start is 64-byte aligned (a cache line; one AVX-512 vector).
#[derive(Default)]
struct Aligned {
    buf: Vec<f32>,
}

impl Aligned {
    fn get(&mut self, len: usize) -> &mut [f32] {
        if self.buf.len() < len + 16 {
            self.buf = vec![0.0; len + 16];
        }
        let off = self.offset();
        &mut self.buf[off..off + len]
    }

    /// Where [`Aligned::get`]'s slices start.
    fn start(&self) -> *const f32 {
        self.buf.as_ptr().wrapping_add(self.offset())
    }

    fn offset(&self) -> usize {
        self.buf.as_ptr().align_offset(64).min(16)
    }
}

thread_local! {
    static WORKSPACE: RefCell<Workspace> = RefCell::new(Workspace::default());
    /// The caller's packed B (the pool's threads read it during the call).
    static PACKED_B: RefCell<Aligned> = RefCell::new(Aligned::default());
}

/// A task of [`run_tile`]: rows `i0..i0 + rows` of C × the columns of micro-panels `panels`.
struct RowTile {
    i0: usize,
    rows: usize,
    panels: std::ops::Range<usize>,
}

/// One tile: rows `i0..i0 + rows` × the columns of micro-panels `panels`. For each depth block:
/// pack the rows of A, then run the micro-kernels over the block's packed panels of B, a chunk of
/// panels (the path's `nt` columns, sized for L2) at a time.
///
/// # Safety
/// As `sgemm_on`, for the tile's rows and columns; `packed_b` (its `np` panels per depth block)
/// holds every panel of every block.
unsafe fn run_tile(
    isa: Isa,
    bl: Blocking,
    p: &Product,
    RowTile { i0, rows, panels }: RowTile,
    (packed_b, np): (*const f32, usize),
    ws: &mut Workspace,
    then: Option<&Then<'_>>,
) {
    let mp = rows.div_ceil(bl.mr);
    let kb = KC.min(p.k);
    let a = ws.a.get(mp * bl.mr * kb);
    let np_tile = panels.len();
    let chunk = (bl.nt / bl.nr).max(1);
    let mut p0 = 0;
    while p0 < p.k {
        let kc = KC.min(p.k - p0);
        // A with contiguous rows is read in place where few micro-panels of B share it (attention's
        // products), but for a last panel of fewer than mr rows (packed, zero-padded); any other A
        // is packed.
        let direct = p.csa == 1 && np_tile < PACK_A_FROM;
        let full = if direct { rows / bl.mr } else { 0 };
        if full * bl.mr < rows {
            // SAFETY: the tile's rows of A over this block are readable (caller).
            unsafe {
                pack_a(
                    p,
                    i0 + full * bl.mr,
                    rows - full * bl.mr,
                    p0,
                    kc,
                    bl.mr,
                    &mut a[full * bl.mr * kc..],
                )
            };
        }
        let a_panels = Panels {
            packed: a.as_ptr(),
            // SAFETY: (i0, p0) is an element of A (caller); `direct` only for full panels.
            direct: if direct {
                unsafe { p.a.offset(i0 as isize * p.rsa + p0 as isize) }
            } else {
                std::ptr::null()
            },
            rs: p.rsa,
            full,
        };
        let store = Store {
            c: p.c,
            rsc: p.rsc,
            csc: p.csc,
            overwrite: p0 == 0 && !p.accumulate,
            bias: if p0 == 0 { p.bias } else { std::ptr::null() },
        };
        let block = (p0 / KC) * kb * np * bl.nr;
        let mut s0 = panels.start;
        while s0 < panels.end {
            let s1 = panels.end.min(s0 + chunk);
            let j0 = s0 * bl.nr;
            let t = Tile {
                i0,
                rows,
                j0,
                cols: (s1 * bl.nr).min(p.n) - j0,
            };
            // SAFETY: the chunk's panels start at `b` and are contiguous in `packed_b` (kc deep);
            // the A panels hold mp·mr·kc values; C's tile is writable (caller); the path is
            // available (checked in sgemm_on).
            unsafe {
                let b = packed_b.add(block + s0 * bl.nr * kc);
                match isa {
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx512 => x86::tile_avx512(kc, a_panels, b, t, store),
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx2 => x86::tile_avx2(kc, a_panels, b, t, store),
                    _ => portable::tile(kc, a_panels, b, t, store),
                }
            }
            if let Some(then) = then
                && p0 + kc == p.k
            {
                // The chunk's rows are final: `then` on each while they are in cache.
                for i in i0..i0 + rows {
                    // SAFETY: C is row-major here (sgemm_inner) and this tile's row piece is
                    // writable, written by this task alone (caller).
                    let piece = unsafe {
                        std::slice::from_raw_parts_mut(p.c.offset(i as isize * p.rsc + j0 as isize), t.cols)
                    };
                    then(i, j0, piece);
                }
            }
            s0 = s1;
        }
        p0 += kc;
    }
}

/// Where a tile's micro-panels of A are for one depth block: the first `full` panels of `mr` rows
/// read in place (`direct`, row stride `rs`, depth steps contiguous) when `direct` is not null; the
/// others packed (`packed`, panel `r` at `r·mr·kc`).
#[derive(Clone, Copy)]
struct Panels {
    packed: *const f32,
    direct: *const f32,
    rs: isize,
    full: usize,
}

impl Panels {
    /// Panel `r` (of `w` rows) in place: its first element and row stride, when it is read in place.
    #[inline(always)]
    fn direct(self, r: usize, w: usize, live: usize) -> Option<(*const f32, isize)> {
        (!self.direct.is_null() && r < self.full && live == w)
            .then(|| (self.direct.wrapping_offset((r * w) as isize * self.rs), self.rs))
    }

    /// Panel `r` (of `w` rows) packed.
    #[inline(always)]
    fn packed(self, r: usize, w: usize, kc: usize) -> *const f32 {
        self.packed.wrapping_add(r * w * kc)
    }
}

#[derive(Clone, Copy, Debug)]
struct Tile {
    i0: usize,
    rows: usize,
    j0: usize,
    cols: usize,
}

/// Where a micro-kernel's block goes.
#[derive(Clone, Copy)]
struct Store {
    c: *mut f32,
    rsc: isize,
    csc: isize,
    /// `C = block` (the first depth block of a product that does not accumulate) or `C += block`.
    overwrite: bool,
    /// With `overwrite`: `C = bias + block` when not null (indexed by C's column).
    bias: *const f32,
}

impl Store {
    /// Writes the `rows × cols` corner of an `MR × NR` block held row-major in `acc`.
    ///
    /// # Safety
    /// Those elements of C are writable.
    #[inline]
    unsafe fn scalar(self, i0: usize, j0: usize, rows: usize, cols: usize, nr: usize, acc: &[f32]) {
        for i in 0..rows {
            for j in 0..cols {
                let at = (i0 + i) as isize * self.rsc + (j0 + j) as isize * self.csc;
                // SAFETY: caller.
                unsafe {
                    let c = self.c.offset(at);
                    *c = if self.overwrite {
                        if self.bias.is_null() {
                            acc[i * nr + j]
                        } else {
                            *self.bias.add(j0 + j) + acc[i * nr + j]
                        }
                    } else {
                        *c + acc[i * nr + j]
                    };
                }
            }
        }
    }
}

/// Copies a panel whose depth steps are contiguous in the source: step `q`'s `live` values from
/// `base + q·stride` into `panel[q·width..]`, zeros after them. A whole step of the micro-kernels'
/// widths is a fixed-size copy (a few vector moves, not a `memcpy` call per step).
///
/// # Safety
/// `live` values are readable at `base + q·stride` for every step of the panel.
unsafe fn copy_steps(panel: &mut [f32], base: *const f32, stride: isize, width: usize, live: usize) {
    fn whole<const W: usize>(panel: &mut [f32], base: *const f32, stride: isize) {
        for (q, out) in panel.chunks_exact_mut(W).enumerate() {
            prefetch_values(base.wrapping_offset((q + PACK_AHEAD) as isize * stride), W);
            // SAFETY: W readable values at this step (copy_steps' caller).
            out.copy_from_slice(unsafe { &*base.offset(q as isize * stride).cast::<[f32; W]>() });
        }
    }
    match (live == width, width) {
        (true, 32) => whole::<32>(panel, base, stride),
        (true, 16) => whole::<16>(panel, base, stride),
        (true, 12) => whole::<12>(panel, base, stride),
        (true, 6) => whole::<6>(panel, base, stride),
        _ => {
            for (q, out) in panel.chunks_exact_mut(width).enumerate() {
                // SAFETY: `live` readable values at this step (caller).
                let src = unsafe { std::slice::from_raw_parts(base.offset(q as isize * stride), live) };
                out[..live].copy_from_slice(src);
                out[live..].fill(0.0);
            }
        }
    }
}

/// Packs rows `t.i0..` of `A` over depth `p0..p0 + kc` into micro-panels of `mr` rows: panel `r`,
/// depth step `q`, row `i` at `r·mr·kc + q·mr + i`; rows past the tile are zeros.
///
/// # Safety
/// Those elements of A are readable.
unsafe fn pack_a(p: &Product, i0: usize, rows: usize, p0: usize, kc: usize, mr: usize, dst: &mut [f32]) {
    let panels = rows.div_ceil(mr);
    if p.rsa == 1 && p.csa != 1 {
        // Column-major A (dYᵀ of a weight gradient): each depth step's rows are contiguous, so the
        // tile's rows are read step by step, each line once, and dealt to the panels, the step
        // `PACK_AHEAD` on prefetched. (Packing A and B, panel by panel without prefetch, took
        // 7.5 % of a training step's samples; the weight-gradient products ran 4–20 % faster.)
        let full = rows / mr;
        for q in 0..kc {
            // SAFETY: rows i0 .. i0 + rows at depth p0 + q of A are contiguous and readable (caller).
            let step = unsafe {
                std::slice::from_raw_parts(p.a.offset(i0 as isize + (p0 + q) as isize * p.csa), rows)
            };
            prefetch_values(step.as_ptr().wrapping_offset(PACK_AHEAD as isize * p.csa), rows);
            match mr {
                12 => deal::<12>(dst, step, full, kc, q),
                6 => deal::<6>(dst, step, full, kc, q),
                4 => deal::<4>(dst, step, full, kc, q),
                _ => deal_any(dst, step, full, kc, q, mr),
            }
            if full < panels {
                let at = full * mr * kc + q * mr;
                let live = rows - full * mr;
                dst[at..at + live].copy_from_slice(&step[full * mr..]);
                dst[at + live..at + mr].fill(0.0);
            }
        }
        return;
    }
    for r in 0..panels {
        let panel = &mut dst[r * mr * kc..(r + 1) * mr * kc];
        let live = mr.min(rows - r * mr);
        // SAFETY: rows i0 + r·mr .. + live, columns p0 .. p0 + kc of A (caller).
        let base = unsafe { p.a.offset((i0 + r * mr) as isize * p.rsa + p0 as isize * p.csa) };
        // Row-major A (the encoder's activations): rows 0..8 of the panel by 8 × 8 blocks
        // transposed in registers where the CPU has AVX2, the rest value by value.
        let mut fast = 0;
        #[cfg(target_arch = "x86_64")]
        if p.csa == 1 && live >= 8 && Isa::detected() >= Isa::Avx2 {
            fast = 8;
            let q_fast = kc / 8 * 8;
            for qb in (0..q_fast).step_by(8) {
                // SAFETY: rows 0..8 < live and depths qb..qb + 8 ≤ kc of the panel's rows of A
                // (caller); the panel holds kc × mr values, mr ≥ 8; AVX2 present (checked).
                unsafe { x86::transpose8(base.add(qb), p.rsa, panel.as_mut_ptr().add(qb * mr), mr) };
            }
            for i in 0..8 {
                // SAFETY: as above.
                let row = unsafe { base.offset(i as isize * p.rsa) };
                for q in q_fast..kc {
                    // SAFETY: as above.
                    panel[q * mr + i] = unsafe { *row.add(q) };
                }
            }
        }
        for i in fast..live {
            // SAFETY: as above.
            let row = unsafe { base.offset(i as isize * p.rsa) };
            for q in 0..kc {
                // SAFETY: as above.
                panel[q * mr + i] = unsafe { *row.offset(q as isize * p.csa) };
            }
        }
        for q in 0..kc {
            panel[q * mr + live..q * mr + mr].fill(0.0);
        }
    }
}

/// Depth steps ahead that packing prefetches the source's lines: A's and B's steps lie a row of
/// the activations apart (1.5–6 KiB), a stride the hardware prefetchers do not follow.
const PACK_AHEAD: usize = 8;

/// Prefetches the cache lines of `len` values from `at` into L1 (a hint: no access, no fault).
#[inline(always)]
fn prefetch_values(at: *const f32, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let mut line = 0;
        while line < len {
            // SAFETY: a prefetch is a hint; it neither faults nor reads architecturally.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(line).cast()) };
            line += 16;
        }
        if len > 0 {
            // SAFETY: as above.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(len - 1).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, len);
}

/// Deals depth step `q` of `full` panels' rows (`step`, contiguous) to their places in the packed
/// panels (`pack_a`'s layout, `MR` rows a panel).
#[inline(always)]
fn deal<const MR: usize>(dst: &mut [f32], step: &[f32], full: usize, kc: usize, q: usize) {
    for (r, rows) in step.chunks_exact(MR).take(full).enumerate() {
        let at = r * MR * kc + q * MR;
        let out: &mut [f32; MR] = (&mut dst[at..at + MR]).try_into().expect("MR values");
        *out = rows.try_into().expect("MR values");
    }
}

/// [`deal`] for a panel height known only at run time.
fn deal_any(dst: &mut [f32], step: &[f32], full: usize, kc: usize, q: usize, mr: usize) {
    for (r, rows) in step.chunks_exact(mr).take(full).enumerate() {
        let at = r * mr * kc + q * mr;
        dst[at..at + mr].copy_from_slice(rows);
    }
}

/// Packs columns `j0..j0 + nr` of `B` over depth `p0..p0 + kc` into one micro-panel: depth step
/// `q`, column `j` at `q·nr + j`; columns past `n` are zeros.
///
/// # Safety
/// Those elements of B are readable.
unsafe fn pack_b_panel(p: &Product, j0: usize, p0: usize, kc: usize, nr: usize, panel: &mut [f32]) {
    let live = nr.min(p.n - j0);
    // SAFETY: rows p0 .. p0 + kc, columns j0 .. j0 + live of B (caller).
    let base = unsafe { p.b.offset(p0 as isize * p.rsb + j0 as isize * p.csb) };
    if p.csb == 1 {
        // SAFETY: `live` contiguous values at every depth step of the panel's columns (as above).
        unsafe { copy_steps(panel, base, p.rsb, nr, live) };
    } else {
        // Columns contiguous (Wᵀ of a linear layer, Kᵀ in attention): 8 × 8 blocks transposed in
        // registers where the CPU has AVX2, the rest value by value. A copy either way.
        let mut j_fast = 0;
        #[cfg(target_arch = "x86_64")]
        if p.rsb == 1 && Isa::detected() >= Isa::Avx2 {
            j_fast = live / 8 * 8;
            let q_fast = kc / 8 * 8;
            for jb in (0..j_fast).step_by(8) {
                for qb in (0..q_fast).step_by(8) {
                    // SAFETY: columns jb..jb + 8 < live and depths qb..qb + 8 ≤ kc of B (caller);
                    // the panel holds kc × nr values; AVX2 present (checked).
                    unsafe {
                        let src = base.offset(jb as isize * p.csb + qb as isize);
                        x86::transpose8(src, p.csb, panel.as_mut_ptr().add(qb * nr + jb), nr);
                    }
                }
                for j in jb..jb + 8 {
                    for q in q_fast..kc {
                        // SAFETY: as above.
                        panel[q * nr + j] = unsafe { *base.offset(j as isize * p.csb + q as isize) };
                    }
                }
            }
        }
        for j in j_fast..live {
            // SAFETY: as above.
            let col = unsafe { base.offset(j as isize * p.csb) };
            for q in 0..kc {
                // SAFETY: as above.
                panel[q * nr + j] = unsafe { *col.offset(q as isize * p.rsb) };
            }
        }
        for q in 0..kc {
            panel[q * nr + live..q * nr + nr].fill(0.0);
        }
    }
}

mod portable {
    use super::{Panels, Store, Tile};

    const MR: usize = 4;
    const NR: usize = 8;

    /// # Safety
    /// As `run_tile`'s kernels: the packed panels and C's tile.
    pub(super) unsafe fn tile(kc: usize, a: Panels, b: *const f32, t: Tile, st: Store) {
        for ir in 0..t.rows.div_ceil(MR) {
            let live = MR.min(t.rows - ir * MR);
            let direct = a.direct(ir, MR, live);
            let ap = a.packed(ir, MR, kc);
            for jr in 0..t.cols.div_ceil(NR) {
                let cols = NR.min(t.cols - jr * NR);
                let mut acc = [0f32; MR * NR];
                for q in 0..kc {
                    for i in 0..MR {
                        // SAFETY: inside the panels (caller).
                        let av = unsafe {
                            match direct {
                                Some((ad, rsa)) => *ad.offset(i as isize * rsa + q as isize),
                                None => *ap.add(q * MR + i),
                            }
                        };
                        for j in 0..NR {
                            // SAFETY: as above.
                            let bv = unsafe { *b.add(jr * NR * kc + q * NR + j) };
                            acc[i * NR + j] = av.mul_add(bv, acc[i * NR + j]);
                        }
                    }
                }
                let rows = MR.min(t.rows - ir * MR);
                // SAFETY: C's tile (caller).
                unsafe { st.scalar(t.i0 + ir * MR, t.j0 + jr * NR, rows, cols, NR, &acc) };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Panels, Store, Tile};
    use std::arch::x86_64::*;

    /// How many depth steps ahead the micro-kernel prefetches B's panel into L1: 4 % more on two
    /// threads of an Intel Xeon (the encoder's four products; 16 steps no better).
    const PREFETCH_STEPS: usize = 8;

    /// Copies the 8 × 8 block whose row `r` is the 8 contiguous values at `src + r·stride` into
    /// `dst` transposed: row `q` of the result (value `r` from source row `r`) at `dst + q·dst_stride`.
    ///
    /// # Safety
    /// AVX2 present; the 8 source rows readable, the 8 destination rows writable.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn transpose8(src: *const f32, stride: isize, dst: *mut f32, dst_stride: usize) {
        // SAFETY: caller.
        unsafe {
            let r = |i: isize| _mm256_loadu_ps(src.offset(i * stride));
            let (r0, r1, r2, r3, r4, r5, r6, r7) = (r(0), r(1), r(2), r(3), r(4), r(5), r(6), r(7));
            let t0 = _mm256_unpacklo_ps(r0, r1);
            let t1 = _mm256_unpackhi_ps(r0, r1);
            let t2 = _mm256_unpacklo_ps(r2, r3);
            let t3 = _mm256_unpackhi_ps(r2, r3);
            let t4 = _mm256_unpacklo_ps(r4, r5);
            let t5 = _mm256_unpackhi_ps(r4, r5);
            let t6 = _mm256_unpacklo_ps(r6, r7);
            let t7 = _mm256_unpackhi_ps(r6, r7);
            let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            let out = [
                _mm256_permute2f128_ps::<0x20>(u0, u4),
                _mm256_permute2f128_ps::<0x20>(u1, u5),
                _mm256_permute2f128_ps::<0x20>(u2, u6),
                _mm256_permute2f128_ps::<0x20>(u3, u7),
                _mm256_permute2f128_ps::<0x31>(u0, u4),
                _mm256_permute2f128_ps::<0x31>(u1, u5),
                _mm256_permute2f128_ps::<0x31>(u2, u6),
                _mm256_permute2f128_ps::<0x31>(u3, u7),
            ];
            for (q, v) in out.into_iter().enumerate() {
                _mm256_storeu_ps(dst.add(q * dst_stride), v);
            }
        }
    }

    /// One instruction set's micro-kernel and tile loop: `MR` rows × two vectors of `W` columns
    /// (`NR = 2·W`), `2·MR` accumulators. Written once for both sets so the edge and store logic
    /// cannot drift apart; only the intrinsics differ.
    macro_rules! micro_kernel {
        (
            $feature:literal, $doc:literal, $tile:ident, $block:ident, $mr:literal, $w:literal,
            $vec:ty, $zero:ident, $load:ident, $store:ident, $add:ident, $fma:ident, $splat:ident
        ) => {
            /// One block of the micro-kernel: `kc` depth steps of `2·MR` fused multiply-adds, A's
            /// value `(i, q)` read at `a(q, i)`, B's `NR` values of depth step `q` at `b(q)`.
            ///
            /// # Safety
            /// The instruction set present; `a(q, i)` readable for q < kc, i < MR; `b(q)` NR values
            /// for q < kc.
            #[target_feature(enable = $feature)]
            #[inline]
            unsafe fn $block(
                kc: usize,
                b: impl Fn(usize) -> *const f32,
                a: impl Fn(usize, usize) -> *const f32,
            ) -> [[$vec; 2]; $mr] {
                let mut acc = [[$zero(); 2]; $mr];
                for q in 0..kc {
                    // SAFETY: caller.
                    unsafe {
                        let bq = b(q);
                        // B's panel streams from L2: its lines PREFETCH_STEPS steps ahead into L1
                        // (one line a step on AVX2, two on AVX-512; past the panel's end the
                        // address is never read).
                        let ahead = bq.wrapping_add(PREFETCH_STEPS * 2 * $w);
                        _mm_prefetch::<_MM_HINT_T0>(ahead.cast());
                        if $w == 16 {
                            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(16).cast());
                        }
                        let b0 = $load(bq);
                        let b1 = $load(bq.add($w));
                        for (i, row) in acc.iter_mut().enumerate() {
                            let av = $splat(*a(q, i));
                            row[0] = $fma(av, b0, row[0]);
                            row[1] = $fma(av, b1, row[1]);
                        }
                    }
                }
                acc
            }

            #[doc = $doc]
            ///
            /// # Safety
            /// The instruction set present; the packed panels and C's tile as `run_tile` gives them.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn $tile(kc: usize, a: Panels, b: *const f32, t: Tile, st: Store) {
                const MR: usize = $mr;
                const NR: usize = 2 * $w;
                for ir in 0..t.rows.div_ceil(MR) {
                    let rows = MR.min(t.rows - ir * MR);
                    let direct = a.direct(ir, MR, rows);
                    let ap = a.packed(ir, MR, kc);
                    for jr in 0..t.cols.div_ceil(NR) {
                        let cols = NR.min(t.cols - jr * NR);
                        let bp = b.wrapping_add(jr * NR * kc);
                        // SAFETY: inside the panels (caller).
                        let acc = unsafe {
                            match direct {
                                Some((ad, rsa)) => $block(
                                    kc,
                                    |q| bp.add(q * NR),
                                    |q, i| ad.offset(i as isize * rsa + q as isize),
                                ),
                                None => $block(kc, |q| bp.add(q * NR), |q, i| ap.add(q * MR + i)),
                            }
                        };
                        let (i0, j0) = (t.i0 + ir * MR, t.j0 + jr * NR);
                        if cols == NR && st.csc == 1 {
                            // Whole rows of the block (the live ones: a last panel may hold fewer).
                            for (i, row) in acc.iter().enumerate().take(rows) {
                                // SAFETY: a full row of the block inside C's tile.
                                unsafe {
                                    let c = st.c.offset((i0 + i) as isize * st.rsc + j0 as isize);
                                    let c1 = c.add($w);
                                    if st.overwrite && st.bias.is_null() {
                                        $store(c, row[0]);
                                        $store(c1, row[1]);
                                    } else if st.overwrite {
                                        let bias = st.bias.add(j0);
                                        $store(c, $add($load(bias), row[0]));
                                        $store(c1, $add($load(bias.add($w)), row[1]));
                                    } else {
                                        $store(c, $add($load(c), row[0]));
                                        $store(c1, $add($load(c1), row[1]));
                                    }
                                }
                            }
                        } else {
                            let mut buf = [0f32; MR * NR];
                            for (i, row) in acc.iter().enumerate() {
                                // SAFETY: buf holds MR rows of NR.
                                unsafe {
                                    $store(buf.as_mut_ptr().add(i * NR), row[0]);
                                    $store(buf.as_mut_ptr().add(i * NR + $w), row[1]);
                                }
                            }
                            // SAFETY: the live corner of the block inside C's tile.
                            unsafe { st.scalar(i0, j0, rows, cols, NR, &buf) };
                        }
                    }
                }
            }
        };
    }

    micro_kernel!(
        "avx512f",
        "AVX-512 micro-kernel: 12 rows × 32 columns, 24 accumulators.",
        tile_avx512,
        block_avx512,
        12,
        16,
        __m512,
        _mm512_setzero_ps,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        _mm512_add_ps,
        _mm512_fmadd_ps,
        _mm512_set1_ps
    );

    micro_kernel!(
        "avx2,fma",
        "AVX2 micro-kernel: 6 rows × 16 columns, 12 accumulators.",
        tile_avx2,
        block_avx2,
        6,
        8,
        __m256,
        _mm256_setzero_ps,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_add_ps,
        _mm256_fmadd_ps,
        _mm256_set1_ps
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_narrows_the_path_and_unknown_caps_are_refused() {
        use Isa::*;
        assert_eq!(Isa::capped(Avx512, ""), Ok(Avx512));
        assert_eq!(Isa::capped(Avx512, "avx2"), Ok(Avx2));
        assert_eq!(Isa::capped(Avx2, "avx512"), Ok(Avx2));
        assert_eq!(Isa::capped(Avx512, " scalar "), Ok(Portable));
        assert_eq!(Isa::capped(Avx512, "Portable"), Ok(Portable));
        let err = Isa::capped(Avx2, "sse").unwrap_err();
        assert!(
            err.contains("\"sse\"") && err.contains("avx512, avx2, portable"),
            "{err}"
        );
    }

    #[test]
    fn tiles_share_the_work_evenly() {
        let bl = Isa::Avx512.blocking();
        // One thread: tiles of at most 144 rows, evened out; every column.
        assert_eq!(tiles(4096, 36, 1, bl), (144, 36));
        assert_eq!(tiles(150, 36, 1, bl), (84, 36));
        // The encoder's products: 29 tiles of 144 rows (the last one 64: 14 and a bit per worker).
        assert_eq!(tiles(4096, 36, 2, bl), (144, 36));
        // A training step's 7,168 rows: 50 tiles of 144 (25 and 24 plus a bit: within 3 %).
        assert_eq!(tiles(7168, 12, 2, bl), (144, 12));
        // Weight gradients: few rows. Four tiles of 96 rows, two per worker, where halving 144
        // gave six of 72 (five full and one of 24).
        assert_eq!(tiles(384, 12, 2, bl), (96, 12));
        // 1,536 rows: 15 tiles of 108 (the last one 24), within 3 % of 16 of 96, where 144 gave 11.
        assert_eq!(tiles(1536, 12, 2, bl), (108, 12));
        // Fewer rows than a tile per worker: the columns are split instead.
        assert_eq!(tiles(128, 12, 2, bl), (132, 6));
        assert_eq!(tiles(1, 1, 8, bl), (12, 1));
        // Every shape covers the product and keeps rows within the path's block.
        for (m, np, w) in [(1, 40, 2), (25, 3, 3), (7168, 48, 2), (300, 7, 4), (13, 1, 2)] {
            let (mt, ct) = tiles(m, np, w, bl);
            assert!(
                mt % bl.mr == 0 && mt <= bl.mt && ct >= 1 && ct <= np,
                "{m} {np} {w}: {mt} {ct}"
            );
        }
    }
}
