//! CPU kernels for inference and training, on lexbench's matrix products (`lexbench-gemm`, which
//! candle's CPU matmul runs too):
//!
//! - [`linear`]: `x · Wᵀ + b` in one product that adds the bias as it stores its first block (candle adds
//!   the bias in a second pass over a freshly allocated output);
//! - [`add_layer_norm`]: `LayerNorm(x + residual)` in one pass per row, rows split over the cores;
//! - [`layer_norm`]: layer normalisation **with** a backward pass (training), one pass each way;
//! - [`linear_train`]: a training linear layer, **with** a backward pass (the bias in the product, its
//!   gradient's column sums over the cores);
//! - [`gelu_train`]: exact GELU **with** a backward pass, one pass each way;
//! - [`fused_attention`]: self-attention (scores, mask, softmax, weighted sum of values) in one pass
//!   per (sequence, head), reading queries, keys and values straight out of the fused query/key/value
//!   projection and writing the context in `(tokens, hidden)` layout.
//!
//! The plain candle path materialises every intermediate: the `(b, heads, s, s)` scores (25 MB per
//! layer for 32 × 12 heads × 128²), a permuted copy of queries/keys/values, the mask added in a
//! separate pass, a softmax pass, and a transposed copy of the context; its batched matmul runs 384
//! small gemms one after another, each split across the threads. Here each task is one (sequence,
//! head): `Kᵀ` and `V` packed once (`lexbench_gemm::PackedB`), then block of 24 query rows by
//! block their scores, softmax ([`softmax_rows`], the block's rows together) and weighted sum, all
//! in L1; tasks are spread over the cores.
//!
//! All but [`layer_norm`], [`linear_train`] and [`gelu_train`] are used only where no gradient is
//! needed (no backward pass); all run on the CPU for f32, and the composite candle ops run elsewhere. [`softmax_row`] uses a polynomial `exp` (relative error < 3e-7 over
//! the range softmax meets) that the compiler vectorises. The element-wise kernels (softmax, GELU and
//! their gradients) are compiled three times, for AVX-512, for AVX2 with FMA and for any x86-64, and
//! run the path [`Isa::active`] names (the widest the CPU has; `LEXBENCH_ISA=avx2|portable` caps it
//! for the products and these kernels alike, so that a bench can measure the AVX2 path on an
//! AVX-512 CPU).
//!
//! `unsafe` here: the products' entry point is an unsafe function over raw, strided pointers, and
//! the vector paths are `#[target_feature]` functions; each block states why its indices stay in
//! bounds or why the CPU has the features.
#![allow(unsafe_code)]

use candle_core::{CpuStorage, CustomOp2, CustomOp3, DType, Layout, Shape, Tensor};
use std::mem::MaybeUninit;

use candle_core::Result;

use crate::Isa;
use crate::pool::{REDUCE_ROWS, chunks_on_pool, map_chunks_on_pool, map_on_pool, on_pool, threads};

/// Shapes of one fused attention call.
#[derive(Debug, Clone, Copy)]
struct FusedAttention {
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
}

/// A raw pointer that may cross threads: the tasks given it write disjoint places of the output
/// (fused attention: each its (sequence, head) block of rows × columns; the softmax with dropout:
/// each its own rows).
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: every task writes only its own disjoint part of the output, and the pointer outlives the
// call that runs the tasks.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

impl SendPtr {
    /// The pointer (a method, so that a closure captures the whole `SendPtr`, not its field).
    fn get(self) -> *mut f32 {
        self.0
    }
}

impl CustomOp2 for FusedAttention {
    fn name(&self) -> &'static str {
        "lexbench-fused-attention"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let qkv = f32_slice(s1, l1, "fused attention")?;
        let mask = f32_slice(s2, l2, "fused attention")?;
        let Self {
            batch: b,
            seq: s,
            heads,
            head_dim: d,
        } = *self;
        let hid = heads * d;
        if qkv.len() != b * s * 3 * hid || mask.len() != b * s {
            candle_core::bail!(
                "fused attention: {} projected values and {} mask values for batch {b}, {s} tokens, {heads} × {d}",
                qkv.len(),
                mask.len()
            );
        }
        // Not zeroed first (a serial memset of the whole output on the calling thread): the tasks
        // write every element, (sequence, head) by (sequence, head).
        let n = b * s * hid;
        let mut out: Vec<f32> = Vec::with_capacity(n);
        let tasks = b * heads;
        let per = tasks.div_ceil(threads().min(tasks.max(1))).max(1);
        let dst = SendPtr(out.as_mut_ptr());
        on_pool(tasks.div_ceil(per), |piece| {
            let mut scratch = AttendScratch::new(s);
            for task in piece * per..((piece + 1) * per).min(tasks) {
                let (bi, h) = (task / heads, task % heads);
                // SAFETY: task (bi, h) writes rows bi·s .. (bi+1)·s, columns h·d .. (h+1)·d.
                unsafe { attend(self, qkv, mask, dst.get(), &mut scratch, (bi, h)) };
            }
        });
        // SAFETY: the tasks (bi, h), bi < b, h < heads, wrote rows bi·s .. (bi+1)·s, columns
        // h·d .. (h+1)·d each: every one of the n values (a panicking task re-raised above).
        unsafe { out.set_len(n) };
        Ok((CpuStorage::F32(out), Shape::from((b * s, hid))))
    }
}

/// Query rows per block of [`attend`]: the block's scores (rows × s), their softmax and their
/// weighted sum of values stay in L1 (24 × 128 scores: 12 KiB, beside the packed `Kᵀ` and `V`,
/// 16 KiB each at head size 32).
const ATTEND_ROWS: usize = 24;

/// What one thread of [`FusedAttention`] reuses from (sequence, head) to the next: `Kᵀ` and `V`
/// packed, a block's scores.
struct AttendScratch {
    kt: lexbench_gemm::PackedB,
    v: lexbench_gemm::PackedB,
    scores: Vec<f32>,
}

impl AttendScratch {
    fn new(s: usize) -> AttendScratch {
        let isa = Isa::active();
        AttendScratch {
            kt: lexbench_gemm::PackedB::new(isa),
            v: lexbench_gemm::PackedB::new(isa),
            scores: vec![0f32; ATTEND_ROWS.min(s) * s],
        }
    }
}

/// One (sequence, head) of the fused projection: its sizes and where its queries, keys and values
/// start (each row `row` values after the one before).
struct Head {
    s: usize,
    d: usize,
    hid: usize,
    row: usize,
    q: *const f32,
    k: *const f32,
    v: *const f32,
}

impl FusedAttention {
    /// Sequence `bi`, head `h` of `qkv` (its `(b · s, 3 · heads · d)` values).
    fn head(&self, qkv: &[f32], (bi, h): (usize, usize)) -> Head {
        let (s, d) = (self.seq, self.head_dim);
        let hid = self.heads * d;
        let row = 3 * hid;
        let base = bi * s * row;
        Head {
            s,
            d,
            hid,
            row,
            q: qkv[base + h * d..].as_ptr(),
            k: qkv[base + hid + h * d..].as_ptr(),
            v: qkv[base + 2 * hid + h * d..].as_ptr(),
        }
    }
}

/// One (sequence `bi`, head `h`) of `shape`: `softmax(Q Kᵀ + mask) V` into the output block.
/// `Kᵀ` and `V` are packed once; then, block of [`ATTEND_ROWS`] query rows by block, the block's
/// scores, their softmax and their product with `V`, so the `s × s` scores never leave L1 (as one
/// `s × s` matrix, 64 KiB at 128 tokens, they went to L2 and back twice). Every element is the
/// chain it was as two whole products (`lexbench_gemm` computes an element the same way in any
/// tile), so the same bits (test `attention_blocks_give_the_whole_products_bits`).
///
/// # Safety
/// `dst` points to a `(b · s, heads · d)` buffer and no other thread writes this block.
unsafe fn attend(
    shape: &FusedAttention,
    qkv: &[f32],
    mask: &[f32],
    dst: *mut f32,
    scratch: &mut AttendScratch,
    (bi, h): (usize, usize),
) {
    let Head {
        s,
        d,
        hid,
        row,
        q,
        k,
        v,
    } = shape.head(qkv, (bi, h));
    let m = &mask[bi * s..(bi + 1) * s];
    let AttendScratch { kt, v: vp, scores } = scratch;
    // SAFETY: every index stays inside this sequence's rows of `qkv`: Kᵀ (d × s) has element (c, j)
    // at K[j, c]; V (s × d) has rows `row` apart.
    unsafe {
        kt.pack((d, s), k, 1, row as isize);
        vp.pack((s, d), v, row as isize, 1);
    }
    for r0 in (0..s).step_by(ATTEND_ROWS) {
        let rows = ATTEND_ROWS.min(s - r0);
        let block = &mut scores[..rows * s];
        // scores (rows × s) = Q's rows (rows `row` apart) · Kᵀ.
        // SAFETY: the block's rows of Q are inside the sequence; `block` holds rows × s values.
        unsafe {
            kt.product(
                rows,
                (q.add(r0 * row), row as isize, 1),
                (block.as_mut_ptr(), s as isize),
                false,
            )
        };
        softmax_rows(block, m);
        // context rows (rows `hid` apart in the output) = P (rows × s) · V.
        // SAFETY: the caller owns this (sequence, head)'s block of `dst`.
        unsafe {
            vp.product(
                rows,
                (block.as_ptr(), s as isize, 1),
                (dst.add((bi * s + r0) * hid + h * d), hid as isize),
                false,
            )
        };
    }
}

/// Defines `fn NAME(args)` running `GENERIC(args)` (an `#[inline(always)]` function) compiled for
/// the [`Isa::active`]: once with AVX-512, once with AVX2 and FMA, once for any CPU.
/// `fn ON(path, args)` runs it on `path` (a path the CPU lacks runs the generic code).
macro_rules! simd_kernel {
    ($(#[$doc:meta])* $vis:vis fn $name:ident / $on:ident($($arg:ident: $ty:ty),*) => $generic:ident) => {
        $(#[$doc])*
        ///
        /// Compiled for AVX-512, AVX2 + FMA and any CPU; runs [`Isa::active`]'s.
        $vis fn $name($($arg: $ty),*) {
            $on(Isa::active(), $($arg),*)
        }

        #[allow(dead_code)]
        fn $on(path: Isa, $($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
                fn wide($($arg: $ty),*) {
                    $generic($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn narrow($($arg: $ty),*) {
                    $generic($($arg),*)
                }
                match path.min(Isa::detected()) {
                    // SAFETY: the CPU has these features (detected).
                    Isa::Avx512 => return unsafe { wide($($arg),*) },
                    // SAFETY: the CPU has AVX2 and FMA (detected).
                    Isa::Avx2 => return unsafe { narrow($($arg),*) },
                    Isa::Portable => {}
                }
            }
            let _ = path;
            $generic($($arg),*)
        }
    };
}

simd_kernel! {
    /// `x ← softmax(x + mask)` over one row.
    pub fn softmax_row / softmax_row_on(x: &mut [f32], mask: &[f32]) => softmax_row_generic
}

simd_kernel! {
    /// `x ← gelu(x + bias)` in place over one row: [`bias_gelu_row`]'s values.
    pub fn bias_gelu_in_place / bias_gelu_in_place_on(x: &mut [f32], bias: &[f32]) => bias_gelu_in_place_generic
}

simd_kernel! {
    /// [`softmax_row`] over each row of `x` (rows of `mask.len()` values, one mask for all), the
    /// same bits, several rows at a time: a row's two reductions (its maximum, then its sum, each
    /// a chain of dependent scalar steps) wait on a whole pass over the row before them, so one row
    /// at a time leaves the vector units idle through both chains. Here a group of rows runs each
    /// stage in turn, and the group's chains, independent of each other, overlap. Attention's 128-key
    /// rows take a quarter of the time (`softmax_rows_match_softmax_row`).
    pub fn softmax_rows / softmax_rows_on(x: &mut [f32], mask: &[f32]) => softmax_rows_generic
}

simd_kernel! {
    /// `out ← gelu(x + bias)` over one row ([`crate::gelu::gelu_scalar`]).
    pub fn bias_gelu_row / bias_gelu_row_on(x: &[f32], bias: &[f32], out: &mut [MaybeUninit<f32>]) => bias_gelu_row_generic
}

#[inline(always)]
fn bias_gelu_row_generic(x: &[f32], bias: &[f32], out: &mut [MaybeUninit<f32>]) {
    for ((o, &xv), &bv) in out.iter_mut().zip(x).zip(bias) {
        o.write(crate::gelu::gelu_scalar(xv + bv));
    }
}

#[inline(always)]
fn bias_gelu_in_place_generic(x: &mut [f32], bias: &[f32]) {
    for (v, &bv) in x.iter_mut().zip(bias) {
        *v = crate::gelu::gelu_scalar(*v + bv);
    }
}

/// Lanes of the explicit accumulators: the max and the sum are reductions, which the compiler keeps
/// in order (one scalar at a time) unless the lanes are written out.
const LANES: usize = 16;

#[inline(always)]
fn softmax_row_generic(x: &mut [f32], mask: &[f32]) {
    let n = x.len().min(mask.len());
    let (x, mask) = (&mut x[..n], &mask[..n]);
    let split = n - n % LANES;
    let mut lanes = [f32::NEG_INFINITY; LANES];
    for (xs, ms) in x[..split]
        .chunks_exact_mut(LANES)
        .zip(mask[..split].chunks_exact(LANES))
    {
        for i in 0..LANES {
            xs[i] += ms[i];
            lanes[i] = lanes[i].max(xs[i]);
        }
    }
    let mut max = lanes.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for (v, &m) in x[split..].iter_mut().zip(&mask[split..]) {
        *v += m;
        max = max.max(*v);
    }
    let mut sums = [0f32; LANES];
    for xs in x[..split].chunks_exact_mut(LANES) {
        for i in 0..LANES {
            xs[i] = exp_poly(xs[i] - max);
            sums[i] += xs[i];
        }
    }
    // The tail goes to the lanes its positions belong to (position j → lane j mod 16), not into a
    // running scalar: key j then meets the same additions whatever the row's length, and padded keys
    // add exact zeros, so a sequence's attention does not depend on how far its batch is padded (a
    // verified leaderboard entry is re-run in other batches and must reproduce bit for bit).
    for (i, v) in x[split..].iter_mut().enumerate() {
        *v = exp_poly(*v - max);
        sums[i] += *v;
    }
    let sum: f32 = sums.iter().sum();
    let inv = 1.0 / sum;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

/// Rows per group of [`softmax_rows`].
const SOFTMAX_GROUP: usize = 8;

#[inline(always)]
fn softmax_rows_generic(x: &mut [f32], mask: &[f32]) {
    let n = mask.len();
    if n == 0 {
        return;
    }
    let split = n - n % LANES;
    for group in x.chunks_mut(SOFTMAX_GROUP * n) {
        let rows = group.len() / n;
        // Each stage does for every row what softmax_row_generic does for one, in its order.
        let mut maxes = [f32::NEG_INFINITY; SOFTMAX_GROUP];
        for (row, max) in group.chunks_exact_mut(n).zip(&mut maxes) {
            let mut lanes = [f32::NEG_INFINITY; LANES];
            for (xs, ms) in row[..split]
                .chunks_exact_mut(LANES)
                .zip(mask[..split].chunks_exact(LANES))
            {
                for i in 0..LANES {
                    xs[i] += ms[i];
                    lanes[i] = lanes[i].max(xs[i]);
                }
            }
            *max = lanes.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for (v, &m) in row[split..].iter_mut().zip(&mask[split..]) {
                *v += m;
                *max = max.max(*v);
            }
        }
        let mut sums = [[0f32; LANES]; SOFTMAX_GROUP];
        for ((row, &max), sums) in group.chunks_exact_mut(n).zip(&maxes).zip(&mut sums) {
            for xs in row[..split].chunks_exact_mut(LANES) {
                for i in 0..LANES {
                    xs[i] = exp_poly(xs[i] - max);
                    sums[i] += xs[i];
                }
            }
            for (i, v) in row[split..].iter_mut().enumerate() {
                *v = exp_poly(*v - max);
                sums[i] += *v;
            }
        }
        let mut invs = [0f32; SOFTMAX_GROUP];
        for (inv, sums) in invs.iter_mut().zip(&sums).take(rows) {
            let sum: f32 = sums.iter().sum();
            *inv = 1.0 / sum;
        }
        for (row, &inv) in group.chunks_exact_mut(n).zip(&invs) {
            for v in row.iter_mut() {
                *v *= inv;
            }
        }
    }
}

/// `eᵗ` for `t ≤ 0` (softmax's range), branch-free so loops over it vectorise: `t = n ln 2 + r`,
/// `|r| ≤ ln 2 / 2`, `eʳ` by a degree-7 Taylor polynomial (relative error < 3e-7, a few ulp), `2ⁿ` built in
/// the exponent bits. Inputs below −87 give exactly 0 (`exp` is below 1.7e-38 there), so masked
/// keys get exactly zero weight, as with candle's softmax.
#[inline(always)]
pub fn exp_poly(t: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let under = t < -87.0;
    let t = t.clamp(-87.0, 88.0);
    // floor(x + 0.5), not round(): f32::round (half away from zero) has no vector instruction and
    // kept the loop scalar; floor is one vroundps.
    let n = (t * LOG2E + 0.5).floor();
    let r = (t - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // 2ⁿ from the exponent bits. `n` is a whole number in [−126, 127]; adding 1.5 · 2²³ puts it in
    // the low mantissa bits (no float → int conversion, whose saturation kept the loop scalar).
    let k = (n + 12_582_912.0).to_bits().wrapping_sub(0x4B40_0000);
    let scale = f32::from_bits(k.wrapping_add(127) << 23);
    if under { 0.0 } else { p * scale }
}

/// The contiguous f32 values of a kernel's input, or an error naming the kernel.
fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> candle_core::Result<&'a [f32]> {
    let CpuStorage::F32(v) = s else {
        candle_core::bail!("{what}: f32 only");
    };
    let Some((a, b)) = l.contiguous_offsets() else {
        candle_core::bail!("{what}: contiguous input only");
    };
    Ok(&v[a..b])
}

/// `f(a_row, b_row, out_row)` for every row of `d` values of `a` and `b` (the same length, a whole
/// number of rows; callers check) into a new vector, the rows cut into [`threads`] pieces of whole rows
/// on candle's pool ([`on_pool`]).
///
/// # Safety
/// `f` writes every element of its output row.
unsafe fn rows2_on_pool(
    a: &[f32],
    b: &[f32],
    d: usize,
    f: impl Fn(&[f32], &[f32], &mut [MaybeUninit<f32>]) + Sync,
) -> Vec<f32> {
    // SAFETY: `f` writes each row of every piece (caller).
    unsafe {
        pieces2_on_pool(a, b, d, |ap, bp, op| {
            for ((ar, br), or) in ap
                .chunks_exact(d)
                .zip(bp.chunks_exact(d))
                .zip(op.chunks_exact_mut(d))
            {
                f(ar, br, or);
            }
        })
    }
}

/// [`rows2_on_pool`] handing `f` each piece of whole rows at once (`a`'s, `b`'s and the output's).
///
/// # Safety
/// `f` writes every element of its output piece.
unsafe fn pieces2_on_pool(
    a: &[f32],
    b: &[f32],
    d: usize,
    f: impl Fn(&[f32], &[f32], &mut [MaybeUninit<f32>]) + Sync,
) -> Vec<f32> {
    assert!(
        d > 0 && a.len().is_multiple_of(d) && b.len() == a.len(),
        "{} and {} values in rows of {d}",
        a.len(),
        b.len()
    );
    let per = (a.len() / d).div_ceil(threads()).max(1) * d;
    // SAFETY: the pieces cover the output (a whole number of rows, `a.len()` values); `f` writes
    // each (caller).
    unsafe {
        written_on_pool(a.len(), per, |i, os| {
            let span = i * per..i * per + os.len();
            f(&a[span.clone()], &b[span], os);
        })
    }
}

/// `n` values written in pieces of `per` on the pool (`fill(i, piece)`: the `i`-th piece), with
/// no pass that zeroes them first. The kernels' outputs are written once, whole; zeroing them
/// first was a serial `memset` of every output on the calling thread (freed memory is kept for
/// reuse, `heap`, so the allocator must clear it) — 3 % of an encoder pass, the second core idle.
///
/// # Safety
/// `fill` writes every element of its piece.
unsafe fn written_on_pool(
    n: usize,
    per: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<f32>]) + Sync,
) -> Vec<f32> {
    let mut out = Vec::with_capacity(n);
    chunks_on_pool(&mut out.spare_capacity_mut()[..n], per, fill);
    // SAFETY: every element written (caller); a panicking piece re-raises above, before this.
    unsafe { out.set_len(n) };
    out
}

/// `gelu(x + bias)` for every row of `x` (rows of `bias.len()` values, a whole number of them;
/// the caller checks), the rows in pieces over the pool.
pub(crate) fn bias_gelu_rows(x: &[f32], bias: &[f32]) -> Vec<f32> {
    let n = bias.len().max(1);
    assert!(x.len().is_multiple_of(n), "{} values in rows of {n}", x.len());
    let per = (x.len() / n).div_ceil(threads()).max(1) * n;
    // SAFETY: the pieces are whole rows of n values, and `bias_gelu_row` writes each element of
    // its row (x's row, the bias and the output row all hold n).
    unsafe {
        written_on_pool(x.len(), per, |i, os| {
            let xs = &x[i * per..i * per + os.len()];
            for (xr, or) in xs.chunks_exact(n).zip(os.chunks_exact_mut(n)) {
                bias_gelu_row(xr, bias, or);
            }
        })
    }
}

/// Dropout's mask applied: `x[i] · (scale if keep[i] else 0)`, in pieces of `per` values on the
/// pool ([`crate::dropout`]; `keep` as long as `x`, the caller checks).
pub(crate) fn dropout_apply(x: &[f32], keep: &[bool], scale: f32, per: usize) -> Vec<f32> {
    assert_eq!(x.len(), keep.len(), "dropout: values and mask of two lengths");
    let per = per.max(1);
    // SAFETY: `dropout_slice` writes each element of its piece (x's and keep's spans have its
    // length).
    unsafe {
        written_on_pool(x.len(), per, |i, os| {
            let span = i * per..i * per + os.len();
            dropout_slice(&x[span.clone()], &keep[span], scale, os);
        })
    }
}

simd_kernel! {
    /// `out[i] ← x[i] · (scale if keep[i] else 0)`, lane by lane (as a loop of scalar selects it
    /// was 8 % of a training step on one thread).
    pub(crate) fn dropout_slice / dropout_slice_on(x: &[f32], keep: &[bool], scale: f32, out: &mut [MaybeUninit<f32>]) => dropout_slice_generic
}

#[inline(always)]
fn dropout_slice_generic(x: &[f32], keep: &[bool], scale: f32, out: &mut [MaybeUninit<f32>]) {
    for ((o, &v), &k) in out.iter_mut().zip(x).zip(keep) {
        o.write(v * if k { scale } else { 0.0 });
    }
}

simd_kernel! {
    /// AdamW's moment over a piece ([`crate::adamw::Moment`]): `m ← m·β + g·(1 − β)`, or with
    /// `squared` `g²` for `g`; each term `+ 0.0` as candle's scalar products are.
    pub(crate) fn adamw_moment / adamw_moment_on(m: &mut [f32], g: &[f32], beta: f32, one_minus_beta: f32, squared: bool) => adamw_moment_generic
}

#[inline(always)]
fn adamw_moment_generic(m: &mut [f32], g: &[f32], beta: f32, one_minus_beta: f32, squared: bool) {
    if squared {
        for (m, &g) in m.iter_mut().zip(g) {
            *m = (*m * beta + 0.0) + (g * g * one_minus_beta + 0.0);
        }
    } else {
        for (m, &g) in m.iter_mut().zip(g) {
            *m = (*m * beta + 0.0) + (g * one_minus_beta + 0.0);
        }
    }
}

simd_kernel! {
    /// AdamW's update over a piece ([`crate::adamw::Update`]):
    /// `p ← p·(1 − lr·wd) − lr·m̂ / (√v̂ + ε)`, the tensor path's operations one for one.
    pub(crate) fn adamw_update / adamw_update_on(p: &mut [f32], m: &[f32], v: &[f32], c: crate::adamw::Consts) => adamw_update_generic
}

#[inline(always)]
fn adamw_update_generic(p: &mut [f32], m: &[f32], v: &[f32], c: crate::adamw::Consts) {
    let (decay, decayed) = match c.decay {
        Some(d) => (d, true),
        None => (1.0, false),
    };
    for ((p, &m), &v) in p.iter_mut().zip(m).zip(v) {
        let m_hat = m * c.inv_c1 + 0.0;
        let v_hat = v * c.inv_c2 + 0.0;
        let update = m_hat / (v_hat.sqrt() * 1.0 + c.eps);
        let kept = if decayed { *p * decay + 0.0 } else { *p };
        *p = kept - (update * c.lr + 0.0);
    }
}

/// `out` as values, once every element is written.
///
/// # Safety
/// Every element of `out` is initialised.
unsafe fn assume_written(out: &mut [MaybeUninit<f32>]) -> &mut [f32] {
    // SAFETY: MaybeUninit<f32> has f32's layout; every element is initialised (caller).
    unsafe { &mut *(std::ptr::from_mut(out) as *mut [f32]) }
}

/// A strided f32 matrix operand of [`gemm_split`]: element `(r, c)` at `ptr + r·rs + c·cs`.
#[derive(Debug, Clone, Copy)]
pub struct Strided {
    /// The first element.
    pub ptr: *const f32,
    /// Distance between columns.
    pub cs: isize,
    /// Distance between rows.
    pub rs: isize,
}

/// Runs `f` with candle's barrier pool (the pool its element-wise ops run on) as the products'
/// threads.
fn with_pool<R>(f: impl FnOnce(&lexbench_gemm::Threads<'_>) -> R) -> R {
    let pool = candle_core::utils::barrier_pool();
    let run =
        |tasks: usize, g: &(dyn Fn(usize) + Sync)| pool.execute_chunked(tasks, |range| range.for_each(g));
    f(&lexbench_gemm::Threads {
        count: pool.n_workers() + 1,
        run: &run,
    })
}

/// The destination of [`gemm_split`]: element `(r, c)` at `ptr + r·rs + c·cs`, overwritten, or
/// added to when `accumulate`.
#[derive(Debug, Clone, Copy)]
pub struct StridedDst {
    /// The first element.
    pub ptr: *mut f32,
    /// Distance between columns.
    pub cs: isize,
    /// Distance between rows.
    pub rs: isize,
    /// Whether the product is added to what `dst` holds.
    pub accumulate: bool,
}

/// `dst (m × n) = [dst +] lhs (m × k) · rhs (k × n)` (`dst` added to when `dst.accumulate`) by
/// `lexbench-gemm` over the threads of candle's barrier pool: tiles of the output, any tile on any
/// thread, the same bits for any thread count (`lexbench_gemm`'s docs).
///
/// # Safety
/// `dst` must address `m × n` elements through its strides (no two the same), `lhs` `m × k` and
/// `rhs` `k × n` elements through theirs, all valid for the call; nothing else may write them.
pub unsafe fn gemm_split((m, n, k): (usize, usize, usize), dst: StridedDst, lhs: Strided, rhs: Strided) {
    let product = lexbench_gemm::Product {
        m,
        n,
        k,
        a: lhs.ptr,
        rsa: lhs.rs,
        csa: lhs.cs,
        b: rhs.ptr,
        rsb: rhs.rs,
        csb: rhs.cs,
        c: dst.ptr,
        rsc: dst.rs,
        csc: dst.cs,
        accumulate: dst.accumulate,
        bias: std::ptr::null(),
    };
    // SAFETY: the caller's contract.
    with_pool(|threads| unsafe { lexbench_gemm::sgemm(product, threads) });
}

/// `x (n, k) · R + bias` with `R` the `(k, m)` matrix read from `w` with `(column, row)` strides
/// `rhs_strides` (`m = bias.len()`): one product over candle's barrier pool whose first depth block
/// stores `bias + block` (the bits of `n` bias rows accumulated into, without filling them first).
/// Callers check that `x` holds `n · k` values and `w` holds `k · m` values.
fn gemm_into_bias(
    x: &[f32],
    w: &[f32],
    rhs_strides: (usize, usize),
    (bias, gelu): (&[f32], bool),
    n: usize,
    k: usize,
) -> Vec<f32> {
    let m = bias.len();
    assert!(
        x.len() >= n * k && w.len() >= k * m,
        "gemm_into_bias: inputs smaller than their shapes"
    );
    // Not filled first: with freed memory kept for reuse ([`crate::heap::keep_freed_memory`]) a zeroed vector is
    // a memset on the calling thread while the pool waits, and the product writes every value.
    let mut out: Vec<f32> = Vec::with_capacity(n * m);
    let product = lexbench_gemm::Product {
        m: n,
        n: m,
        k,
        a: x.as_ptr(),
        rsa: k as isize,
        csa: 1,
        b: w.as_ptr(),
        rsb: rhs_strides.1 as isize,
        csb: rhs_strides.0 as isize,
        c: out.as_mut_ptr(),
        rsc: m as isize,
        csc: 1,
        accumulate: false,
        bias: if gelu { std::ptr::null() } else { bias.as_ptr() },
    };
    // With GELU the product has no bias; each finished piece of a row becomes gelu(piece + bias)
    // in cache: the values `bias_gelu` gives over the product afterwards, without the pass.
    let then =
        |_: usize, j0: usize, piece: &mut [f32]| bias_gelu_in_place(piece, &bias[j0..j0 + piece.len()]);
    // SAFETY: `out` has room for (n, m) row-major values and `x` is (n, k) row-major, of the length
    // asserted above; `w` holds k · m values and the strides the caller gives address each of them
    // once; the bias holds m values. With `accumulate` false the gemm writes every element of the
    // destination (the k-sum, plus the bias when given; zeros or the bias alone when k is 0), so
    // all n · m values are initialised before `set_len`, and `then` only sees written pieces.
    with_pool(|threads| unsafe {
        if gelu {
            lexbench_gemm::sgemm_then(product, threads, &then);
        } else {
            lexbench_gemm::sgemm(product, threads);
        }
        out.set_len(n * m);
    });
    out
}

/// `x (n, k) · wt (k, m) + bias (m)`, one gemm that adds the bias as it stores its first block; with
/// `gelu`, `gelu(x · wt + bias)`, the bias and GELU applied to each piece of a row as the product
/// finishes it.
struct Linear {
    gelu: bool,
}

impl CustomOp3 for Linear {
    fn name(&self) -> &'static str {
        "lexbench-linear"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "linear")?;
        let w = f32_slice(s2, l2, "linear")?;
        let b = f32_slice(s3, l3, "linear")?;
        let (Ok((n, k)), Ok((k2, m))) = (l1.shape().dims2(), l2.shape().dims2()) else {
            candle_core::bail!("linear: x and wt must be matrices");
        };
        if k != k2 || b.len() != m {
            candle_core::bail!("linear: ({n}, {k}) · ({k2}, {m}) + bias of {}", b.len());
        }
        // `wt` (k, m) row-major: element (kk, j) at kk·m + j.
        let out = gemm_into_bias(x, w, (1, m), (b, self.gelu), n, k);
        Ok((CpuStorage::F32(out), Shape::from((n, m))))
    }
}

/// Whether [`Linear`] takes `x · wt + bias`: f32 CPU matrices and a bias vector, nothing tracked.
fn linear_applies(x: &Tensor, wt: &Tensor, bias: &Tensor) -> bool {
    x.device().is_cpu()
        && [x, wt, bias]
            .iter()
            .all(|t| t.dtype() == DType::F32 && !t.track_op())
        && x.rank() == 2
        && wt.rank() == 2
        && bias.rank() == 1
}

/// `x (n, k) · wt (k, m) + bias (m)` for f32 CPU tensors without gradient (`wt`: the transposed
/// weight, contiguous); candle's matmul and broadcast add otherwise.
pub fn linear(x: &Tensor, wt: &Tensor, bias: &Tensor) -> Result<Tensor> {
    if linear_applies(x, wt, bias) {
        x.contiguous()?
            .apply_op3_no_bwd(&wt.contiguous()?, &bias.contiguous()?, &Linear { gelu: false })
    } else {
        x.matmul(wt)?.broadcast_add(bias)
    }
}

/// `gelu(x (n, k) · wt (k, m) + bias (m))` (exact GELU) for f32 CPU tensors without gradient: the
/// feed-forward up and its activation in one product, the bias and GELU applied to each piece of
/// the output while it is in cache (the same bits as [`crate::gelu::bias_gelu`] over the product);
/// candle's ops otherwise.
pub fn linear_gelu(x: &Tensor, wt: &Tensor, bias: &Tensor) -> Result<Tensor> {
    if linear_applies(x, wt, bias) {
        x.contiguous()?
            .apply_op3_no_bwd(&wt.contiguous()?, &bias.contiguous()?, &Linear { gelu: true })
    } else {
        x.matmul(wt)?.broadcast_add(bias)?.gelu_erf()
    }
}

/// `x (n, k) · wᵀ + bias`, `w` `(m, k)` as stored (a training linear's weight), **with** a
/// backward pass: the forward is one product with the bias, reading `w` through transposed strides;
/// backward, `dx = dy · w` and `dw = dyᵀ · x` are candle's matmuls (what its own matmul backward
/// runs) and `db` the column sums of `dy` split over the cores. candle's path adds the bias in a
/// second pass and reduces its gradient with a single-threaded strided sum (about 8 % of a MiniLM
/// training step), and accumulates the weight's gradient through a transposed view.
struct LinearTrain;

impl CustomOp3 for LinearTrain {
    fn name(&self) -> &'static str {
        "lexbench-linear-train"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "linear")?;
        let w = f32_slice(s2, l2, "linear")?;
        let b = f32_slice(s3, l3, "linear")?;
        let (Ok((n, k)), Ok((m, k2))) = (l1.shape().dims2(), l2.shape().dims2()) else {
            candle_core::bail!("linear: x and w must be matrices");
        };
        if k != k2 || b.len() != m {
            candle_core::bail!("linear: ({n}, {k}) · ({m}, {k2})ᵀ + bias of {}", b.len());
        }
        // `w` (m, k) row-major, so wᵀ's element (kk, j) is at j·k + kk.
        let out = gemm_into_bias(x, w, (k, 1), (b, false), n, k);
        Ok((CpuStorage::F32(out), Shape::from((n, m))))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let grad = grad.contiguous()?;
        let dx = if x.track_op() {
            Some(grad.apply_op2_no_bwd(&w.contiguous()?, &Product { transpose_lhs: false })?)
        } else {
            None
        };
        let dw = if w.track_op() {
            Some(grad.apply_op2_no_bwd(&x.contiguous()?, &Product { transpose_lhs: true })?)
        } else {
            None
        };
        let db = if b.track_op() {
            Some(grad.apply_op1_no_bwd(&ColumnSums)?)
        } else {
            None
        };
        Ok((dx, dw, db))
    }
}

/// A matrix product of two contiguous f32 matrices `a (r, c)` and `b`, without a backward pass:
/// `a · b` (`b` `(c, n)`), or `aᵀ · b` (`b` `(r, n)`) read through transposed strides when
/// `transpose_lhs`, by [`gemm_split`] into an output that is not zeroed first (the gemm writes
/// every element). A linear layer's backward: `dx = dy · w` and `dw = dyᵀ · x`.
struct Product {
    transpose_lhs: bool,
}

impl CustomOp2 for Product {
    fn name(&self) -> &'static str {
        "lexbench-product"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let a = f32_slice(s1, l1, "product")?;
        let b = f32_slice(s2, l2, "product")?;
        let (Ok((r, c)), Ok((k2, n))) = (l1.shape().dims2(), l2.shape().dims2()) else {
            candle_core::bail!("product: two matrices only");
        };
        let (m, k, lhs) = if self.transpose_lhs {
            // aᵀ (c, r): element (i, t) = a[t, i] at t·c + i.
            let lhs = Strided {
                ptr: a.as_ptr(),
                cs: c as isize,
                rs: 1,
            };
            (c, r, lhs)
        } else {
            (
                r,
                c,
                Strided {
                    ptr: a.as_ptr(),
                    cs: 1,
                    rs: c as isize,
                },
            )
        };
        if k != k2 {
            candle_core::bail!(
                "product: ({m}, {k}) · ({k2}, {n}) (lhs {}transposed)",
                if self.transpose_lhs { "" } else { "not " }
            );
        }
        let rhs = Strided {
            ptr: b.as_ptr(),
            cs: 1,
            rs: n as isize,
        };
        let len = m * n;
        let mut out: Vec<f32> = Vec::with_capacity(len);
        if k == 0 {
            out.resize(len, 0.0);
        } else {
            // SAFETY: `out` has room for the (m, n) row-major result, `a` and `b` hold r · c and
            // k · n values (contiguous, checked by `f32_slice` and the shapes above) and the strides
            // address each once. With k > 0 and `read_dst` false the gemm writes every element of
            // the destination (each is a k-sum), so all `len` values are initialised before
            // `set_len`.
            unsafe {
                gemm_split(
                    (m, n, k),
                    StridedDst {
                        ptr: out.as_mut_ptr(),
                        cs: 1,
                        rs: n as isize,
                        accumulate: false,
                    },
                    lhs,
                    rhs,
                );
                out.set_len(len);
            }
        }
        Ok((CpuStorage::F32(out), Shape::from((m, n))))
    }
}

simd_kernel! {
    /// `acc[j] += row[j]` for each row of `rows` (rows of `acc.len()` values) in order.
    fn add_rows / add_rows_on(acc: &mut [f32], rows: &[f32]) => add_rows_generic
}

#[inline(always)]
fn add_rows_generic(acc: &mut [f32], rows: &[f32]) {
    for row in rows.chunks_exact(acc.len().max(1)) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += v;
        }
    }
}

/// Column sums of an `(n, m)` matrix → `(m)`: each piece of [`REDUCE_ROWS`] rows is summed row by row
/// on the pool, the pieces' sums are added in order — the same grouping, and bits, on any number of
/// threads.
struct ColumnSums;

impl candle_core::CustomOp1 for ColumnSums {
    fn name(&self) -> &'static str {
        "lexbench-column-sums"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let g = f32_slice(s, l, "column sums")?;
        let Ok((_, m)) = l.shape().dims2() else {
            candle_core::bail!("column sums: a matrix only, got {:?}", l.shape());
        };
        let per = REDUCE_ROWS * m;
        let partials: Vec<Vec<f32>> = if m == 0 {
            Vec::new()
        } else {
            let sums = map_on_pool(g.len().div_ceil(per), |i| {
                let mut acc = vec![0f32; m];
                add_rows(&mut acc, &g[i * per..((i + 1) * per).min(g.len())]);
                acc
            });
            let Some(sums) = sums else {
                candle_core::bail!("column sums: a block of rows left no sum");
            };
            sums
        };
        let mut out = vec![0f32; m];
        for p in &partials {
            for (o, &v) in out.iter_mut().zip(p) {
                *o += v;
            }
        }
        Ok((CpuStorage::F32(out), Shape::from(m)))
    }
}

/// `x (n, k) · wᵀ + bias` with gradients through all three (`w` `(m, k)`, as a linear layer
/// stores it): the fused kernel for f32 CPU tensors, `None` otherwise (the caller runs candle's
/// matmul and broadcast add).
pub fn linear_train(x: &Tensor, w: &Tensor, bias: &Tensor) -> Result<Option<Tensor>> {
    let ok = x.device().is_cpu()
        && [x, w, bias].iter().all(|t| t.dtype() == DType::F32)
        && x.rank() == 2
        && w.rank() == 2
        && bias.rank() == 1;
    if !ok {
        return Ok(None);
    }
    Ok(Some(x.contiguous()?.apply_op3(
        &w.contiguous()?,
        &bias.contiguous()?,
        LinearTrain,
    )?))
}

/// Exact GELU **with** a backward pass (training): forward as [`crate::gelu::gelu_scalar`],
/// backward `dx = dy · (Φ(x) + x φ(x))` in one pass from the same `erf` approximation, where
/// candle's `gelu_erf` calls libm's scalar `erff` forward and runs about a dozen tensor passes
/// backward (square, negate, exp, erf again, scalings, sums, the product).
struct GeluTrain;

/// `Φ(x)` and `φ(x)` (the standard normal's distribution and density) from one `exp`, with `erf` by
/// Abramowitz & Stegun 7.1.26 as in [`crate::gelu::gelu_scalar`].
#[inline(always)]
fn normal_cdf_pdf(x: f32) -> (f32, f32) {
    use crate::gelu::{A1, A2, A3, A4, A5, P};
    let a = x.abs();
    let t = 1.0 / (1.0 + P * std::f32::consts::FRAC_1_SQRT_2 * a);
    let poly = ((((A5 * t + A4) * t + A3) * t + A2) * t + A1) * t;
    let e = exp_poly(-0.5 * x * x);
    // erf(|x|/√2) = 1 − P(t)·e, so Φ(|x|) = 1 − P(t)·e/2 and Φ(−|x|) = P(t)·e/2.
    let tail = 0.5 * poly * e;
    let cdf = if x >= 0.0 { 1.0 - tail } else { tail };
    (cdf, e * 0.398_942_3)
}

simd_kernel! {
    /// `out ← gelu(x)` over one slice ([`crate::gelu::gelu_scalar`]).
    fn gelu_slice / gelu_slice_on(x: &[f32], out: &mut [MaybeUninit<f32>]) => gelu_slice_generic
}

#[inline(always)]
fn gelu_slice_generic(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    for (o, &v) in out.iter_mut().zip(x) {
        o.write(crate::gelu::gelu_scalar(v));
    }
}

simd_kernel! {
    /// `out ← dy · gelu'(x)` over one slice.
    fn gelu_grad_slice / gelu_grad_slice_on(x: &[f32], dy: &[f32], out: &mut [MaybeUninit<f32>]) => gelu_grad_slice_generic
}

#[inline(always)]
fn gelu_grad_slice_generic(x: &[f32], dy: &[f32], out: &mut [MaybeUninit<f32>]) {
    for ((o, &xv), &g) in out.iter_mut().zip(x).zip(dy) {
        let (cdf, pdf) = normal_cdf_pdf(xv);
        o.write(g * (cdf + xv * pdf));
    }
}

simd_kernel! {
    /// `out[i] ← (mix(state + (i + 1) · γ) >> 11) ≥ threshold`: the keep decisions of the SplitMix64
    /// draws that follow `state`, value by value as [`crate::dropout`] draws them.
    #[allow(dead_code)] // [`keep_mask_on`] passes its path to `keep_mask_slice_on`
    fn keep_mask_slice / keep_mask_slice_on(state: u64, threshold: u64, out: &mut [bool]) => keep_mask_slice_generic
}

#[inline(always)]
fn keep_mask_slice_generic(state: u64, threshold: u64, out: &mut [bool]) {
    use lexbench_core::rng::{GAMMA, mix};
    for (i, o) in out.iter_mut().enumerate() {
        let s = state.wrapping_add(GAMMA.wrapping_mul(i as u64 + 1));
        *o = (mix(s) >> 11) >= threshold;
    }
}

/// Dropout's keep mask of `n` values from a SplitMix64 at `state` (the generator then moves past `n`
/// outputs: [`lexbench_core::rng::SplitMix64::skip`]): value `i` is kept when the `(i + 1)`-th draw's
/// [`lexbench_core::rng::SplitMix64::unit_f64`] is at least `p`, compared as integers (`u ≥ p` ⟺
/// `⌊draw / 2¹¹⌋ ≥ ⌈p · 2⁵³⌉`, exact), vectorised and split across the cores (the stream is
/// counter-based: each piece starts from its own offset). The same mask as drawing value by value.
pub fn keep_mask(state: u64, p: f64, n: usize) -> Vec<bool> {
    keep_mask_on(Isa::active(), state, p, n)
}

/// [`keep_mask`] on `path`.
pub fn keep_mask_on(path: Isa, state: u64, p: f64, n: usize) -> Vec<bool> {
    use lexbench_core::rng::GAMMA;
    let threshold = (p.clamp(0.0, 1.0) * (1u64 << 53) as f64).ceil() as u64;
    let mut out = vec![false; n];
    let per = n.div_ceil(threads()).max(1 << 16);
    chunks_on_pool(&mut out, per, |c, os| {
        let start = state.wrapping_add(GAMMA.wrapping_mul((c * per) as u64));
        keep_mask_slice_on(path, start, threshold, os);
    });
    out
}

/// Applies `f(a[i], b[i]) → out[i]` over slices split across the cores (at least 64k values each).
///
/// # Safety
/// `f` writes every element of its output slice (as long as its inputs).
unsafe fn map2_par(a: &[f32], b: &[f32], f: fn(&[f32], &[f32], &mut [MaybeUninit<f32>])) -> Vec<f32> {
    assert_eq!(a.len(), b.len(), "map2_par: inputs of two lengths");
    let per = a.len().div_ceil(threads()).max(1 << 16);
    // SAFETY: `f` writes its whole piece (caller).
    unsafe {
        written_on_pool(a.len(), per, |i, os| {
            let r = i * per..i * per + os.len();
            f(&a[r.clone()], &b[r], os);
        })
    }
}

/// Applies `f(a[i]) → out[i]` over slices split across the cores (at least 64k values each).
///
/// # Safety
/// `f` writes every element of its output slice (as long as its input).
unsafe fn map_par(a: &[f32], f: fn(&[f32], &mut [MaybeUninit<f32>])) -> Vec<f32> {
    let per = a.len().div_ceil(threads()).max(1 << 16);
    // SAFETY: `f` writes its whole piece (caller).
    unsafe { written_on_pool(a.len(), per, |i, os| f(&a[i * per..i * per + os.len()], os)) }
}

impl candle_core::CustomOp1 for GeluTrain {
    fn name(&self) -> &'static str {
        "lexbench-gelu"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s, l, "gelu")?;
        // SAFETY: `gelu_slice` writes every element of its output.
        let out = unsafe { map_par(x, gelu_slice) };
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        Ok(Some(x.apply_op2_no_bwd(&grad.contiguous()?, &GeluGrad)?))
    }
}

/// `dy · gelu'(x)` from `x` and `dy`.
struct GeluGrad;

impl CustomOp2 for GeluGrad {
    fn name(&self) -> &'static str {
        "lexbench-gelu-grad"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "gelu backward")?;
        let g = f32_slice(s2, l2, "gelu backward")?;
        if x.len() != g.len() {
            candle_core::bail!("gelu backward: {} values, {} gradients", x.len(), g.len());
        }
        Ok((
            // SAFETY: `gelu_grad_slice` writes every element of its output.
            CpuStorage::F32(unsafe { map2_par(x, g, gelu_grad_slice) }),
            l1.shape().clone(),
        ))
    }
}

/// Exact GELU with gradients: the fused kernel for f32 CPU tensors, `None` otherwise (the caller
/// runs candle's `gelu_erf`).
pub fn gelu_train(x: &Tensor) -> Result<Option<Tensor>> {
    if !x.device().is_cpu() || x.dtype() != DType::F32 {
        return Ok(None);
    }
    Ok(Some(x.contiguous()?.apply_op1(GeluTrain)?))
}

/// `LayerNorm(x + residual)` over the last dimension of `(n, d)` rows.
struct AddLayerNorm {
    eps: f32,
}

/// Rows that [`AddLayerNorm`] normalises together: each row's sums run in its own order, as one row
/// alone would, and the rows' chains overlap in the pipeline (a row's sum of 384 values is 384
/// dependent additions). Row by row, the residual layer norm took 3.9 % of an encoder pass's
/// samples on an Intel Xeon, in groups 3.4 %, the rest mostly reading `x` and the residual.
const LN_ROWS: usize = 8;

impl AddLayerNorm {
    /// [`AddLayerNorm::row`] on `G` consecutive rows of `d` values at once, stage by stage: the
    /// same operations, in the same order, on each row, so the same bits.
    fn rows<const G: usize>(
        &self,
        (x, r): (&[f32], &[f32]),
        (w, b): (&[f32], &[f32]),
        d: usize,
        out: &mut [MaybeUninit<f32>],
    ) {
        let (x, r, out) = (&x[..G * d], &r[..G * d], &mut out[..G * d]);
        let df = d as f32;
        for ((o, &a), &c) in out.iter_mut().zip(x).zip(r) {
            o.write(a + c);
        }
        // SAFETY: every element written just above (G rows of d).
        let out = unsafe { assume_written(out) };
        // The sums read only (a store in the loop made the loads wait on it).
        let mut sum = [0f32; G];
        for j in 0..d {
            for (g, s) in sum.iter_mut().enumerate() {
                *s += out[g * d + j];
            }
        }
        let mean = sum.map(|s| s / df);
        let mut var = [0f32; G];
        for j in 0..d {
            for (g, v) in var.iter_mut().enumerate() {
                let c = out[g * d + j] - mean[g];
                *v += c * c;
            }
        }
        for ((row, mean), var) in out.chunks_exact_mut(d).zip(mean).zip(var) {
            let inv = 1.0 / (var / df + self.eps).sqrt();
            for ((o, &g), &beta) in row.iter_mut().zip(w).zip(b) {
                *o = (*o - mean) * inv * g + beta;
            }
        }
    }

    /// Writes every element of `out` (rows of the same length).
    fn row(&self, x: &[f32], r: &[f32], w: &[f32], b: &[f32], out: &mut [MaybeUninit<f32>]) {
        let d = x.len() as f32;
        let mut sum = 0f32;
        for ((o, &a), &c) in out.iter_mut().zip(x).zip(r) {
            sum += *o.write(a + c);
        }
        // SAFETY: every element written just above (x, r and out have one length).
        let out = unsafe { assume_written(out) };
        let mean = sum / d;
        let mut var = 0f32;
        for o in out.iter() {
            let c = o - mean;
            var += c * c;
        }
        let inv = 1.0 / (var / d + self.eps).sqrt();
        for ((o, &g), &beta) in out.iter_mut().zip(w).zip(b) {
            *o = (*o - mean) * inv * g + beta;
        }
    }
}

impl CustomOp3 for AddLayerNorm {
    fn name(&self) -> &'static str {
        "lexbench-add-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "add-layer-norm")?;
        let r = f32_slice(s2, l2, "add-layer-norm")?;
        let wb = f32_slice(s3, l3, "add-layer-norm")?;
        let d = wb.len() / 2;
        if d == 0 || x.len() % d != 0 || r.len() != x.len() || wb.len() != 2 * d {
            candle_core::bail!(
                "add-layer-norm: {} values, {} residual values, {} weight and bias values",
                x.len(),
                r.len(),
                wb.len()
            );
        }
        let (w, b) = wb.split_at(d);
        let group = LN_ROWS * d;
        // SAFETY: the pieces are whole rows of d values; `rows` writes every element of its G
        // rows, `row` of its row, and together they cover the piece.
        let out = unsafe {
            pieces2_on_pool(x, r, d, |xs, rs, os| {
                let whole = os.len() / group * group;
                let (grouped, rest) = os.split_at_mut(whole);
                for (k, og) in grouped.chunks_exact_mut(group).enumerate() {
                    let at = k * group..(k + 1) * group;
                    self.rows::<LN_ROWS>((&xs[at.clone()], &rs[at]), (w, b), d, og);
                }
                for ((xr, rr), or) in xs[whole..]
                    .chunks_exact(d)
                    .zip(rs[whole..].chunks_exact(d))
                    .zip(rest.chunks_exact_mut(d))
                {
                    self.row(xr, rr, w, b, or);
                }
            })
        };
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// `LayerNorm(x + residual)` in one pass for f32 CPU tensors without gradient, `weight_bias` the
/// layer norm's weight and bias stacked `(2, d)`; `None` when the kernel does not apply (the caller
/// runs candle's ops).
pub fn add_layer_norm(
    x: &Tensor,
    residual: &Tensor,
    weight_bias: &Tensor,
    eps: f64,
) -> Result<Option<Tensor>> {
    let ok = x.device().is_cpu()
        && [x, residual, weight_bias]
            .iter()
            .all(|t| t.dtype() == DType::F32 && !t.track_op())
        && x.shape() == residual.shape()
        && weight_bias.dims().len() == 2
        && weight_bias.dims()[0] == 2
        && x.dims().last() == Some(&weight_bias.dims()[1]);
    if !ok {
        return Ok(None);
    }
    Ok(Some(x.contiguous()?.apply_op3_no_bwd(
        &residual.contiguous()?,
        &weight_bias.contiguous()?,
        &AddLayerNorm { eps: eps as f32 },
    )?))
}

/// Layer normalisation over rows of `d` **with** a backward pass: one pass forward, one (per row)
/// plus a column sum backward, where candle's composite layer norm runs about six tensor passes
/// forward and fifteen backward.
struct LayerNormOp {
    eps: f32,
}

/// Mean and 1/σ of each of `G` rows of `d` values, `x` holding them one after the other: each row's
/// two sums are chains in its own order (from −0.0, as `Iterator::sum` folds), `G` rows' chains
/// side by side so that they overlap (a row alone is 2·d dependent additions).
#[inline(always)]
fn row_stats<const G: usize>(x: &[f32], d: usize, eps: f32) -> ([f32; G], [f32; G]) {
    let x = &x[..G * d];
    let df = d as f32;
    let mut sum = [-0.0f32; G];
    for j in 0..d {
        for (r, s) in sum.iter_mut().enumerate() {
            *s += x[r * d + j];
        }
    }
    let mean = sum.map(|s| s / df);
    let mut var = [-0.0f32; G];
    for j in 0..d {
        for (r, v) in var.iter_mut().enumerate() {
            let c = x[r * d + j] - mean[r];
            *v += c * c;
        }
    }
    (mean, var.map(|v| 1.0 / (v / df + eps).sqrt()))
}

simd_kernel! {
    /// The training layer norm's rows (`x` whole rows of `w.len()` values): `(x − mean)·(1/σ)·w + b`,
    /// [`LN_ROWS`] rows' statistics at a time ([`row_stats`]).
    fn layer_norm_rows / layer_norm_rows_on(x: &[f32], w: &[f32], b: &[f32], eps: f32, out: &mut [MaybeUninit<f32>]) => layer_norm_rows_generic
}

#[inline(always)]
fn layer_norm_rows_generic(x: &[f32], w: &[f32], b: &[f32], eps: f32, out: &mut [MaybeUninit<f32>]) {
    #[inline(always)]
    fn group<const G: usize>(x: &[f32], w: &[f32], b: &[f32], eps: f32, out: &mut [MaybeUninit<f32>]) {
        let d = w.len();
        let (mean, inv) = row_stats::<G>(x, d, eps);
        for (r, (xr, or)) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)).enumerate() {
            for (((o, &v), &g), &be) in or.iter_mut().zip(xr).zip(w).zip(b) {
                o.write((v - mean[r]) * inv[r] * g + be);
            }
        }
    }
    let d = w.len();
    let whole = x.len() / (LN_ROWS * d) * (LN_ROWS * d);
    for (xs, os) in x[..whole]
        .chunks_exact(LN_ROWS * d)
        .zip(out.chunks_exact_mut(LN_ROWS * d))
    {
        group::<LN_ROWS>(xs, w, b, eps, os);
    }
    for (xr, or) in x[whole..].chunks_exact(d).zip(out[whole..].chunks_exact_mut(d)) {
        group::<1>(xr, w, b, eps, or);
    }
}

simd_kernel! {
    /// The training layer norm's gradients over whole rows (`x`, `g` and `dx` rows of `w.len()`):
    /// `dx` written, and each row's `dy·x̂` and `dy` added to `dw` and `db` in row order. Per row
    /// `x̂ = (x − mean)·(1/σ)`, `m1 = Σ(dy·w)/d`, `m2 = Σ(dy·w·x̂)/d` (chains in the row's order)
    /// and `dx = (1/σ)·(dy·w − m1 − x̂·m2)`; [`LN_ROWS`] rows at a time, so that their chains overlap,
    /// the rest lane by lane.
    fn layer_norm_grad_rows / layer_norm_grad_rows_on(x: &[f32], g: &[f32], w: &[f32], eps: f32, dx: &mut [f32], dw_db: (&mut [f32], &mut [f32])) => layer_norm_grad_rows_generic
}

#[inline(always)]
fn layer_norm_grad_rows_generic(
    x: &[f32],
    g: &[f32],
    w: &[f32],
    eps: f32,
    dx: &mut [f32],
    (dw, db): (&mut [f32], &mut [f32]),
) {
    #[inline(always)]
    fn group<const G: usize>(
        (x, g, w): (&[f32], &[f32], &[f32]),
        eps: f32,
        (dx, dw, db): (&mut [f32], &mut [f32], &mut [f32]),
        (xh, gw): (&mut [f32], &mut [f32]),
    ) {
        let d = w.len();
        let df = d as f32;
        let (mean, inv) = row_stats::<G>(x, d, eps);
        let (xh, gw) = (&mut xh[..G * d], &mut gw[..G * d]);
        for r in 0..G {
            let span = r * d..(r + 1) * d;
            for (((h, q), &v), (&gv, &wv)) in xh[span.clone()]
                .iter_mut()
                .zip(&mut gw[span.clone()])
                .zip(&x[span.clone()])
                .zip(g[span].iter().zip(w))
            {
                *h = (v - mean[r]) * inv[r];
                *q = gv * wv;
            }
        }
        let (mut s1, mut s2) = ([0f32; G], [0f32; G]);
        for j in 0..d {
            for r in 0..G {
                let q = gw[r * d + j];
                s1[r] += q;
                s2[r] += q * xh[r * d + j];
            }
        }
        for r in 0..G {
            let span = r * d..(r + 1) * d;
            for (((a, c), &gv), &h) in dw
                .iter_mut()
                .zip(db.iter_mut())
                .zip(&g[span.clone()])
                .zip(&xh[span])
            {
                *a += gv * h;
                *c += gv;
            }
        }
        for r in 0..G {
            let span = r * d..(r + 1) * d;
            let (m1, m2) = (s1[r] / df, s2[r] / df);
            for ((o, &q), &h) in dx[span.clone()].iter_mut().zip(&gw[span.clone()]).zip(&xh[span]) {
                *o = inv[r] * (q - m1 - h * m2);
            }
        }
    }
    let d = w.len();
    let (mut xh, mut gw) = (vec![0f32; LN_ROWS * d], vec![0f32; LN_ROWS * d]);
    let whole = x.len() / (LN_ROWS * d) * (LN_ROWS * d);
    let at = |k: usize| k * LN_ROWS * d..(k + 1) * LN_ROWS * d;
    for k in 0..whole / (LN_ROWS * d).max(1) {
        group::<LN_ROWS>(
            (&x[at(k)], &g[at(k)], w),
            eps,
            (&mut dx[at(k)], dw, db),
            (&mut xh, &mut gw),
        );
    }
    for r in 0..(x.len() - whole) / d.max(1) {
        let span = whole + r * d..whole + (r + 1) * d;
        group::<1>(
            (&x[span.clone()], &g[span.clone()], w),
            eps,
            (&mut dx[span], dw, db),
            (&mut xh, &mut gw),
        );
    }
}

impl CustomOp3 for LayerNormOp {
    fn name(&self) -> &'static str {
        "lexbench-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "layer norm")?;
        let w = f32_slice(s2, l2, "layer norm")?;
        let b = f32_slice(s3, l3, "layer norm")?;
        let d = w.len();
        if d == 0 || b.len() != d || x.len() % d != 0 {
            candle_core::bail!("layer norm: {} values, weight {d}, bias {}", x.len(), b.len());
        }
        let per = (x.len() / d).div_ceil(threads()).max(1) * d;
        // SAFETY: the pieces are whole rows (x.len() a multiple of d, checked above) and every
        // element of each row is written (x's row, w and b all hold d).
        let eps = self.eps;
        let out = unsafe {
            written_on_pool(x.len(), per, |i, os| {
                layer_norm_rows(&x[i * per..i * per + os.len()], w, b, eps, os);
            })
        };
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let d = w.dims1()?;
        let packed = x.apply_op3_no_bwd(w, &grad.contiguous()?, &LayerNormGrad { eps: self.eps })?;
        let rows = x.elem_count() / d;
        let dx = packed.narrow(0, 0, rows)?.reshape(x.shape())?;
        let dw = packed.get(rows)?;
        let db = packed.get(rows + 1)?;
        Ok((Some(dx), Some(dw), Some(db)))
    }
}

/// The layer norm's gradients, packed `(rows + 2, d)`: `dx` rows, then `dw`, then `db`.
struct LayerNormGrad {
    eps: f32,
}

impl CustomOp3 for LayerNormGrad {
    fn name(&self) -> &'static str {
        "lexbench-layer-norm-grad"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "layer norm backward")?;
        let w = f32_slice(s2, l2, "layer norm backward")?;
        let g = f32_slice(s3, l3, "layer norm backward")?;
        let d = w.len();
        if d == 0 || g.len() != x.len() || x.len() % d != 0 {
            candle_core::bail!(
                "layer norm backward: {} values, {} gradients, rows of {d}",
                x.len(),
                g.len()
            );
        }
        let rows = x.len() / d;
        let mut out = vec![0f32; x.len() + 2 * d];
        let (dx, tail) = out.split_at_mut(x.len());
        let per = REDUCE_ROWS * d;
        let eps = self.eps;
        // Per piece of [`REDUCE_ROWS`] rows (not per thread: the sums' grouping must not depend on the
        // thread count): dx of its rows, and its partial column sums of dw and db (summed in order
        // after).
        let partials = map_chunks_on_pool(dx, per, |piece, ds| {
            let span = piece * per..piece * per + ds.len();
            let (mut dw, mut db) = (vec![0f32; d], vec![0f32; d]);
            layer_norm_grad_rows(&x[span.clone()], &g[span], w, eps, ds, (&mut dw, &mut db));
            (dw, db)
        });
        let Some(partials) = partials else {
            candle_core::bail!("layer norm backward: a piece of rows left no result");
        };
        let (dw_all, db_all) = tail.split_at_mut(d);
        for (dw, db) in &partials {
            for i in 0..d {
                dw_all[i] += dw[i];
                db_all[i] += db[i];
            }
        }
        Ok((CpuStorage::F32(out), Shape::from((rows + 2, d))))
    }
}

/// Layer normalisation with gradients through `x`, `weight` and `bias`: the fused kernel for f32
/// CPU tensors, `None` otherwise (the caller runs the composite ops).
pub fn layer_norm(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> Result<Option<Tensor>> {
    let ok = x.device().is_cpu()
        && [x, weight, bias].iter().all(|t| t.dtype() == DType::F32)
        && weight.rank() == 1
        && bias.rank() == 1
        && x.dims().last() == Some(&weight.dims()[0]);
    if !ok {
        return Ok(None);
    }
    Ok(Some(x.contiguous()?.apply_op3(
        &weight.contiguous()?,
        &bias.contiguous()?,
        LayerNormOp { eps: eps as f32 },
    )?))
}

/// `softmax(scores + mask)` over the last dimension **with** a backward pass (training):
/// `scores` `(b, …, k)` with `b · r` rows of `k`, `mask` `(b, k)` added to each of its sequence's
/// rows. One pass forward ([`softmax_row`]) and one backward (`dx = p ⊙ (dy − Σ dy ⊙ p)`, from the
/// output `p`), where candle's composite softmax runs five tensor passes forward (max, subtract,
/// exp, sum, divide) plus the mask's broadcast add, and about a dozen backward. The mask gets no
/// gradient.
struct MaskedSoftmax;

/// Rows of `k` values in `x` and rows per sequence, checked against the mask's `(b, k)`.
fn softmax_shape(
    x: usize,
    mask: &[f32],
    mask_shape: &Shape,
    what: &str,
) -> candle_core::Result<(usize, usize)> {
    let Ok((b, k)) = mask_shape.dims2() else {
        candle_core::bail!("{what}: the mask must be (batch, keys), got {mask_shape:?}");
    };
    if b == 0 || k == 0 || mask.len() != b * k || !x.is_multiple_of(b * k) {
        candle_core::bail!("{what}: {x} scores do not split into {b} sequences of rows of {k}");
    }
    Ok((k, x / (b * k)))
}

impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "lexbench-masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "masked softmax")?;
        let mask = f32_slice(s2, l2, "masked softmax")?;
        let out = softmax_pieces(x, mask, l2.shape(), "masked softmax", |_, _| {})?;
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        _mask: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let dx = res.apply_op2_no_bwd(&grad.contiguous()?, &SoftmaxGrad)?;
        Ok((Some(dx), None))
    }
}

/// `softmax(x + mask)` row by row on the pool (rows of `k`, each sequence's rows with its row of
/// `mask` `(b, k)`), each piece's rows copied from `x` and softmaxed a sequence at a time; `then(row,
/// probs)` on each sequence's block of rows (`row` its first row) while it is in cache.
fn softmax_pieces(
    x: &[f32],
    mask: &[f32],
    mask_shape: &Shape,
    what: &str,
    then: impl Fn(usize, &[f32]) + Sync,
) -> candle_core::Result<Vec<f32>> {
    let (k, rows_per_seq) = softmax_shape(x.len(), mask, mask_shape, what)?;
    let rows = x.len() / k;
    let per_rows = rows.div_ceil(threads()).max(1);
    let fill = |t: usize, os: &mut [MaybeUninit<f32>]| {
        // The piece's rows copied from the scores (on the pool, not on the calling thread),
        // then softmaxed a sequence's rows (one mask) at a time.
        let (start, len) = (t * per_rows * k, os.len());
        for (o, &v) in os.iter_mut().zip(&x[start..start + len]) {
            o.write(v);
        }
        // SAFETY: every element written just above.
        let os = unsafe { assume_written(os) };
        let (first, rows) = (t * per_rows, os.len() / k);
        let mut i = 0;
        while i < rows {
            let seq = (first + i) / rows_per_seq;
            let end = ((seq + 1) * rows_per_seq - first).min(rows);
            softmax_rows(&mut os[i * k..end * k], &mask[seq * k..(seq + 1) * k]);
            then(first + i, &os[i * k..end * k]);
            i = end;
        }
    };
    // SAFETY: `fill` writes every element of its piece (the copy).
    Ok(unsafe { written_on_pool(x.len(), per_rows * k, fill) })
}

/// `dropout(softmax(scores + mask))` **with** a backward pass (training): [`MaskedSoftmax`] and
/// dropout's mask ([`crate::dropout`]) in one op. Forward, each sequence's block of probabilities is
/// dropped while it is in cache, where the two ops wrote the probabilities out and read them back
/// (attention's are the step's largest activations: 56 sequences × 12 heads × 128 × 128 values a
/// layer); backward, `dy ⊙ m` is formed inside the softmax's gradient row by row, where dropout's
/// backward was a pass of its own. The probabilities before dropout, which the gradient needs, are
/// kept by the op. The same values as the two ops: each element is the same operations.
struct MaskedSoftmaxDropout {
    keep: std::sync::Arc<[bool]>,
    scale: f32,
    /// The softmax before dropout, set by the forward pass for the backward one.
    probs: std::sync::Arc<std::sync::OnceLock<Vec<f32>>>,
}

impl CustomOp2 for MaskedSoftmaxDropout {
    fn name(&self) -> &'static str {
        "lexbench-masked-softmax-dropout"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "masked softmax with dropout")?;
        let mask = f32_slice(s2, l2, "masked softmax with dropout")?;
        if self.keep.len() != x.len() {
            candle_core::bail!(
                "masked softmax with dropout: {} scores, a mask of {}",
                x.len(),
                self.keep.len()
            );
        }
        let k = l1.shape().dims().last().copied().unwrap_or(0);
        let mut dropped: Vec<f32> = Vec::with_capacity(x.len());
        let at = SendPtr(dropped.as_mut_ptr());
        let (keep, scale) = (&self.keep, self.scale);
        let probs = softmax_pieces(
            x,
            mask,
            l2.shape(),
            "masked softmax with dropout",
            |row, block| {
                let span = row * k..row * k + block.len();
                // SAFETY: `dropped` has room for x.len() values; the block's span is its own (the
                // pieces' sequence blocks are disjoint rows of x), written by this piece alone.
                let out = unsafe {
                    std::slice::from_raw_parts_mut(
                        at.get().add(span.start).cast::<MaybeUninit<f32>>(),
                        block.len(),
                    )
                };
                dropout_slice(block, &keep[span], scale, out);
            },
        )?;
        // SAFETY: the sequence blocks cover every row of every piece, so every element of `dropped`
        // was written (`dropout_slice` writes its whole block).
        unsafe { dropped.set_len(x.len()) };
        if self.probs.set(probs).is_err() {
            candle_core::bail!("masked softmax with dropout: the op ran forward twice");
        }
        Ok((CpuStorage::F32(dropped), l1.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        _mask: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let op = SoftmaxDropoutGrad {
            keep: self.keep.clone(),
            scale: self.scale,
            probs: self.probs.clone(),
        };
        Ok((Some(grad.contiguous()?.apply_op1_no_bwd(&op)?), None))
    }
}

/// [`MaskedSoftmaxDropout`]'s gradient: `dx = p ⊙ (g − Σ g ⊙ p)` row by row with `g = dy ⊙ m`.
struct SoftmaxDropoutGrad {
    keep: std::sync::Arc<[bool]>,
    scale: f32,
    probs: std::sync::Arc<std::sync::OnceLock<Vec<f32>>>,
}

impl candle_core::CustomOp1 for SoftmaxDropoutGrad {
    fn name(&self) -> &'static str {
        "lexbench-softmax-dropout-grad"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let g = f32_slice(s, l, "softmax with dropout backward")?;
        let Some(p) = self.probs.get() else {
            candle_core::bail!("softmax with dropout backward: no forward pass ran");
        };
        let k = l.shape().dims().last().copied().unwrap_or(0);
        if k == 0 || g.len() != p.len() || self.keep.len() != p.len() {
            candle_core::bail!(
                "softmax with dropout backward: {} outputs, {} gradients, a mask of {}, rows of {k}",
                p.len(),
                g.len(),
                self.keep.len()
            );
        }
        let (keep, scale) = (&self.keep, self.scale);
        let per = (p.len() / k).div_ceil(threads()).max(1) * k;
        // SAFETY: the pieces are whole rows; `softmax_dropout_grad_row` writes each element of its row.
        let out = unsafe {
            written_on_pool(p.len(), per, |i, os| {
                let at = i * per;
                for (r, or) in os.chunks_exact_mut(k).enumerate() {
                    let span = at + r * k..at + (r + 1) * k;
                    softmax_dropout_grad_row(&p[span.clone()], &g[span.clone()], &keep[span], scale, or);
                }
            })
        };
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }
}

simd_kernel! {
    /// One row of [`SoftmaxDropoutGrad`]: [`softmax_grad_row`] of `g ⊙ m` (`m` = `scale` where kept,
    /// 0 where dropped), the same lanes.
    fn softmax_dropout_grad_row / softmax_dropout_grad_row_on(p: &[f32], g: &[f32], keep: &[bool], scale: f32, out: &mut [MaybeUninit<f32>]) => softmax_dropout_grad_row_generic
}

#[inline(always)]
fn softmax_dropout_grad_row_generic(
    p: &[f32],
    g: &[f32],
    keep: &[bool],
    scale: f32,
    out: &mut [MaybeUninit<f32>],
) {
    let n = p.len();
    let split = n - n % LANES;
    let dropped = |gv: f32, k: bool| gv * if k { scale } else { 0.0 };
    let mut lanes = [0f32; LANES];
    for ((ps, gs), ks) in p[..split]
        .chunks_exact(LANES)
        .zip(g[..split].chunks_exact(LANES))
        .zip(keep[..split].chunks_exact(LANES))
    {
        for i in 0..LANES {
            lanes[i] += ps[i] * dropped(gs[i], ks[i]);
        }
    }
    for (i, ((&pv, &gv), &k)) in p[split..].iter().zip(&g[split..]).zip(&keep[split..]).enumerate() {
        lanes[i] += pv * dropped(gv, k);
    }
    let dot: f32 = lanes.iter().sum();
    for (((o, &pv), &gv), &k) in out.iter_mut().zip(p).zip(g).zip(keep) {
        o.write(pv * (dropped(gv, k) - dot));
    }
}

/// [`masked_softmax`] followed by dropout (drop probability `p`, in training) as one op on f32 CPU
/// tensors (`MaskedSoftmaxDropout`; the mask drawn as [`crate::dropout::Dropout::forward`] draws
/// it, so the same values and generator state); without dropout, [`masked_softmax`]; `None` where
/// neither kernel applies (the caller runs candle's ops and its dropout).
pub fn masked_softmax_dropout(
    scores: &Tensor,
    mask: &Tensor,
    dropout: crate::dropout::Dropout,
    train: bool,
) -> Result<Option<Tensor>> {
    if !train || dropout.p() <= 0.0 {
        return masked_softmax(scores, mask);
    }
    if !masked_softmax_applies(scores, mask) {
        return Ok(None);
    }
    let (keep, scale) = (dropout.draw_mask(scores.elem_count()), dropout.scale());
    let op = MaskedSoftmaxDropout {
        keep,
        scale,
        probs: Default::default(),
    };
    Ok(Some(scores.contiguous()?.apply_op2(&mask.contiguous()?, op)?))
}

/// `dx = p ⊙ (dy − Σ dy ⊙ p)` row by row, from the softmax output `p` and the output gradient `dy`.
struct SoftmaxGrad;

impl CustomOp2 for SoftmaxGrad {
    fn name(&self) -> &'static str {
        "lexbench-softmax-grad"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let p = f32_slice(s1, l1, "softmax backward")?;
        let g = f32_slice(s2, l2, "softmax backward")?;
        let k = l1.shape().dims().last().copied().unwrap_or(0);
        if k == 0 || g.len() != p.len() {
            candle_core::bail!(
                "softmax backward: {} outputs, {} gradients, rows of {k}",
                p.len(),
                g.len()
            );
        }
        // SAFETY: `softmax_grad_row` writes every element of its row.
        let out = unsafe { rows2_on_pool(p, g, k, softmax_grad_row) };
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

simd_kernel! {
    /// One row of [`SoftmaxGrad`].
    fn softmax_grad_row / softmax_grad_row_on(p: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) => softmax_grad_row_generic
}

/// The dot product in explicit lanes so that it vectorises.
#[inline(always)]
fn softmax_grad_row_generic(p: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    let n = p.len();
    let split = n - n % LANES;
    let mut lanes = [0f32; LANES];
    for (ps, gs) in p[..split].chunks_exact(LANES).zip(g[..split].chunks_exact(LANES)) {
        for i in 0..LANES {
            lanes[i] += ps[i] * gs[i];
        }
    }
    for (i, (&pv, &gv)) in p[split..].iter().zip(&g[split..]).enumerate() {
        lanes[i] += pv * gv;
    }
    let dot: f32 = lanes.iter().sum();
    for ((o, &pv), &gv) in out.iter_mut().zip(p).zip(g) {
        o.write(pv * (gv - dot));
    }
}

/// Whether the masked softmax's kernels take `scores` and `mask`: f32 CPU tensors, a mask `(b, k)`
/// whose `b` is the scores' first dimension and `k` their last.
fn masked_softmax_applies(scores: &Tensor, mask: &Tensor) -> bool {
    scores.device().is_cpu()
        && scores.dtype() == DType::F32
        && mask.dtype() == DType::F32
        && mask.rank() == 2
        && scores.dims().first() == mask.dims().first()
        && scores.dims().last() == mask.dims().last()
}

/// `softmax(scores + mask)` over the last dimension with gradients through `scores`, `mask`
/// `(b, k)` (0 where attended, a large negative number at padding) broadcast over each sequence's
/// rows: the fused kernel for f32 CPU tensors, `None` otherwise (the caller runs candle's ops).
pub fn masked_softmax(scores: &Tensor, mask: &Tensor) -> Result<Option<Tensor>> {
    if !masked_softmax_applies(scores, mask) {
        return Ok(None);
    }
    Ok(Some(
        scores
            .contiguous()?
            .apply_op2(&mask.contiguous()?, MaskedSoftmax)?,
    ))
}

/// Attention's heads apart, `(b, s, h·d)` → `(b, h, s, d)` (`merge` false), or back together
/// (`merge`), each value times `scale` plus 0 when given (candle's `x * scale`, an `affine`), **with**
/// a backward pass: the gradient's merge (times the scale) or split. One pass on the pool each way,
/// where candle ran a reshape, a transpose and a copy (and the scale's multiply, a pass of its own)
/// forward, and backward the scale's pass, a copy of the transposed gradient and a reshape.
#[derive(Clone, Copy)]
struct Heads {
    /// `(b, s, h, d)`.
    dims: (usize, usize, usize, usize),
    scale: Option<f32>,
    merge: bool,
}

impl Heads {
    fn out_shape(&self) -> Shape {
        let (b, s, h, d) = self.dims;
        if self.merge {
            Shape::from((b, s, h * d))
        } else {
            Shape::from((b, h, s, d))
        }
    }
}

simd_kernel! {
    /// `out ← x`, or `out ← x · scale + 0` with a scale (candle's `affine`, value for value).
    fn copy_scaled / copy_scaled_on(x: &[f32], scale: Option<f32>, out: &mut [MaybeUninit<f32>]) => copy_scaled_generic
}

#[inline(always)]
fn copy_scaled_generic(x: &[f32], scale: Option<f32>, out: &mut [MaybeUninit<f32>]) {
    match scale {
        Some(m) => {
            for (o, &v) in out.iter_mut().zip(x) {
                o.write(v * m + 0.0);
            }
        }
        None => {
            for (o, &v) in out.iter_mut().zip(x) {
                o.write(v);
            }
        }
    }
}

impl candle_core::CustomOp1 for Heads {
    fn name(&self) -> &'static str {
        if self.merge {
            "lexbench-merge-heads"
        } else {
            "lexbench-split-heads"
        }
    }

    fn cpu_fwd(&self, st: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(st, l, self.name())?;
        let (b, s, h, d) = self.dims;
        let hd = h * d;
        if x.len() != b * s * hd || d == 0 || s == 0 {
            candle_core::bail!("{}: {} values for ({b}, {s}, {h}, {d})", self.name(), x.len());
        }
        let scale = self.scale;
        let out = if self.merge {
            // A piece per sequence: its rows (s of h·d), each from h heads' rows of d.
            // SAFETY: each piece writes its s·h·d values (s rows, h pieces of d each).
            unsafe {
                written_on_pool(x.len(), s * hd, |bi, os| {
                    for (si, row) in os.chunks_exact_mut(hd).enumerate() {
                        for (hi, piece) in row.chunks_exact_mut(d).enumerate() {
                            let at = ((bi * h + hi) * s + si) * d;
                            copy_scaled(&x[at..at + d], scale, piece);
                        }
                    }
                })
            }
        } else {
            // A piece per (sequence, head): its s rows of d, each from the sequence's row.
            // SAFETY: each piece writes its s·d values (s rows of d).
            unsafe {
                written_on_pool(x.len(), s * d, |t, os| {
                    let (bi, hi) = (t / h, t % h);
                    for (si, row) in os.chunks_exact_mut(d).enumerate() {
                        let at = (bi * s + si) * hd + hi * d;
                        copy_scaled(&x[at..at + d], scale, row);
                    }
                })
            }
        };
        Ok((CpuStorage::F32(out), self.out_shape()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let back = Heads {
            merge: !self.merge,
            ..*self
        };
        Ok(Some(
            grad.contiguous()?.apply_op1_no_bwd(&back)?.reshape(arg.shape())?,
        ))
    }
}

/// `x` `(b, s, heads·d)` → `(b, heads, s, d)` contiguous, times `scale` when given (the queries'
/// `1/√d`), with gradients (the op `Heads`); `None` where the kernel does not apply (not an f32 CPU
/// tensor of rank 3 whose last dimension `heads` divides), and the caller runs candle's ops.
pub fn split_heads(x: &Tensor, heads: usize, scale: Option<f64>) -> Result<Option<Tensor>> {
    let Ok((b, s, hd)) = x.dims3() else {
        return Ok(None);
    };
    if !x.device().is_cpu() || x.dtype() != DType::F32 || heads == 0 || !hd.is_multiple_of(heads) {
        return Ok(None);
    }
    let op = Heads {
        dims: (b, s, heads, hd / heads),
        scale: scale.map(|v| v as f32),
        merge: false,
    };
    Ok(Some(x.contiguous()?.apply_op1(op)?))
}

/// `x` `(b, heads, s, d)` → `(b, s, heads·d)` contiguous, with gradients (the op `Heads`); `None` where
/// the kernel does not apply (not an f32 CPU tensor of rank 4).
pub fn merge_heads(x: &Tensor) -> Result<Option<Tensor>> {
    let Ok((b, h, s, d)) = x.dims4() else {
        return Ok(None);
    };
    if !x.device().is_cpu() || x.dtype() != DType::F32 {
        return Ok(None);
    }
    let op = Heads {
        dims: (b, s, h, d),
        scale: None,
        merge: true,
    };
    Ok(Some(x.contiguous()?.apply_op1(op)?))
}

/// Self-attention of `qkv` `(b · s, 3 · heads · head_dim)` — queries (already scaled by
/// `1/√head_dim`), keys and values side by side, as the fused projection makes them — with the
/// additive `mask` `(b, s)` (0 where attended, `f32::MIN` at padding) → context `(b · s, heads ·
/// head_dim)`. No gradient: callers use it only when nothing is tracked.
pub fn fused_attention(
    qkv: &Tensor,
    mask: &Tensor,
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> Result<Tensor> {
    if !qkv.device().is_cpu() || qkv.dtype() != DType::F32 || mask.dtype() != DType::F32 {
        candle_core::bail!("fused attention: f32 CPU tensors only");
    }
    let op = FusedAttention {
        batch,
        seq,
        heads,
        head_dim,
    };
    qkv.contiguous()?.apply_op2_no_bwd(&mask.contiguous()?, &op)
}

#[cfg(test)]
mod tests {
    //! Properties: the fused linear equals matmul + bias and the fused residual layer norm equals
    //! candle's layer norm of the sum (1e-5); the fused attention equals candle's composite attention (permuted heads, batched
    //! matmuls, mask, softmax) to 1e-5 with and without padding, for uneven shapes; the polynomial
    //! `exp` is within 3e-7 relative of `f32::exp` over softmax's range; every element-wise kernel
    //! gives the same bits on each vector path the CPU has as the generic code; candle's large
    //! strided copies and batched small products (vendor/candle-core) put every element where the
    //! one-thread path does; the keep mask is the value-by-value draw.
    use candle_core::{D, Device, Tensor};

    use super::*;

    /// Each value's bits, in order (f32 tensors).
    fn tensor_bits(t: &Tensor) -> Result<Vec<u32>> {
        Ok(t.flatten_all()?
            .to_vec1::<f32>()?
            .iter()
            .map(|v| v.to_bits())
            .collect())
    }

    /// The gradients of `Σ ours ⊙ probe` and of `Σ theirs ⊙ probe` with respect to `v`: a kernel's
    /// backward pass against the composite's on the same upstream gradient.
    fn probe_grads(
        ours: &Tensor,
        theirs: &Tensor,
        probe: &Tensor,
        v: &candle_core::Var,
    ) -> Result<(Tensor, Tensor)> {
        let grad = |t: &Tensor| -> Result<Tensor> {
            let g = (t * probe)?.sum_all()?.backward()?;
            Ok(g.get(v.as_tensor()).expect("a gradient for the variable").clone())
        };
        Ok((grad(ours)?, grad(theirs)?))
    }

    /// `len` values in [−0.5, 0.5) from an xorshift seeded by `seed`.
    fn seeded(len: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    /// The sums over rows of `(n, m)` values as the reductions group them: pieces of
    /// [`REDUCE_ROWS`] rows, each summed row by row from zero, the pieces added in order.
    fn grouped_column_sums(v: &[f32], m: usize) -> Vec<f32> {
        let mut out = vec![0f32; m];
        for piece in v.chunks(REDUCE_ROWS * m) {
            let mut acc = vec![0f32; m];
            for row in piece.chunks_exact(m) {
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a += x;
                }
            }
            for (o, a) in out.iter_mut().zip(&acc) {
                *o += a;
            }
        }
        out
    }

    /// Issue 72, item 5: a bias gradient's column sums and layer norm's weight and bias gradients
    /// group their sums in fixed pieces of rows, not one piece per thread, so their bits do not depend
    /// on the thread count: they equal the documented grouping computed on one thread, bit for bit,
    /// for row counts below, at and above a piece, and not a multiple of it.
    #[test]
    fn reductions_over_rows_group_in_fixed_pieces() -> Result<()> {
        for n in [1, 255, 256, 257, 1000] {
            let m = 37;
            let g = seeded(n * m, 11);
            let t = Tensor::from_vec(g.clone(), (n, m), &Device::Cpu)?;
            let got: Vec<f32> = t.apply_op1_no_bwd(&ColumnSums)?.to_vec1()?;
            assert_eq!(got, grouped_column_sums(&g, m), "column sums of {n} rows");

            // Layer norm's dw and db: the column sums of gy·x̂ and of gy over the rows.
            let x = Tensor::from_vec(seeded(n * m, 12), (n, m), &Device::Cpu)?;
            let w = candle_core::Var::from_vec(seeded(m, 13), m, &Device::Cpu)?;
            let b = candle_core::Var::from_vec(seeded(m, 14), m, &Device::Cpu)?;
            let gy = seeded(n * m, 15);
            let y = layer_norm(&x, w.as_tensor(), b.as_tensor(), 1e-12)?
                .ok_or("no fused layer norm")
                .map_err(candle_core::Error::msg)?;
            let loss = (y * Tensor::from_vec(gy.clone(), (n, m), &Device::Cpu)?)?.sum_all()?;
            let grads = loss.backward()?;
            let db: Vec<f32> = grads
                .get(b.as_tensor())
                .ok_or("no db")
                .map_err(candle_core::Error::msg)?
                .to_vec1()?;
            assert_eq!(db, grouped_column_sums(&gy, m), "layer norm db of {n} rows");
            // dw's summands, x̂ · gy, as the kernel forms them row by row.
            let xs: Vec<f32> = x.flatten_all()?.to_vec1()?;
            let mut prod = vec![0f32; n * m];
            for (r, row) in xs.chunks_exact(m).enumerate() {
                let ([mean], [inv]) = row_stats::<1>(row, m, 1e-12);
                for i in 0..m {
                    prod[r * m + i] = gy[r * m + i] * ((row[i] - mean) * inv);
                }
            }
            let dw: Vec<f32> = grads
                .get(w.as_tensor())
                .ok_or("no dw")
                .map_err(candle_core::Error::msg)?
                .to_vec1()?;
            assert_eq!(dw, grouped_column_sums(&prod, m), "layer norm dw of {n} rows");
        }
        Ok(())
    }

    /// candle's strided copies of 64k elements or more run over the pool, split along the first
    /// dimension (`vendor/candle-core/LEXBENCH.md`): every element lands where the one-thread copy
    /// puts it — heads transposed as attention does, a transposed matrix, a view that starts inside
    /// its storage, copies into the middle of a destination (`cat`), and a first dimension of 1.
    #[test]
    fn a_large_strided_copy_puts_every_element_in_its_place() -> Result<()> {
        let dev = Device::Cpu;
        let count = |dims: &[usize]| dims.iter().product::<usize>();
        let arange = |dims: &[usize]| -> Result<Tensor> {
            let n = count(dims);
            Tensor::from_vec((0..n).map(|i| i as f32).collect::<Vec<_>>(), dims, &dev)
        };
        // (b, s, heads, d) → (b, heads, s, d): element (i, h, t, c) is source (i, t, h, c).
        let (b, s, h, d) = (5, 64, 12, 32);
        let heads = arange(&[b, s, h, d])?.transpose(1, 2)?.contiguous()?;
        let got = heads.flatten_all()?.to_vec1::<f32>()?;
        let mut at = 0;
        for i in 0..b {
            for hh in 0..h {
                for t in 0..s {
                    for c in 0..d {
                        let want = (((i * s + t) * h + hh) * d + c) as f32;
                        assert_eq!(got[at], want, "heads ({i}, {hh}, {t}, {c})");
                        at += 1;
                    }
                }
            }
        }
        // A transposed matrix, a view from row 3 on, and both stacked by `cat` (a copy into an
        // offset of the destination).
        let (r, c) = (700, 300);
        let m = arange(&[r, c])?;
        let t = m.t()?.contiguous()?.to_vec2::<f32>()?;
        assert!((0..c).all(|j| (0..r).all(|i| t[j][i] == (i * c + j) as f32)));
        let tail = m.narrow(0, 3, r - 3)?.t()?;
        let stacked = Tensor::cat(&[&m.t()?, &tail], 1)?.to_vec2::<f32>()?;
        for (j, row) in stacked.iter().enumerate() {
            let want = (0..r).chain(3..r).map(|i| (i * c + j) as f32);
            assert!(row.iter().copied().eq(want), "cat, row {j}");
        }
        // A first dimension of 1 copies on the calling thread, the same way.
        let one = arange(&[1, 400, 200])?
            .transpose(1, 2)?
            .contiguous()?
            .to_vec3::<f32>()?;
        assert!((0..200).all(|j| (0..400).all(|i| one[0][j][i] == (i * 200 + j) as f32)));
        Ok(())
    }

    /// candle's batched matmul spreads a batch of small products over the cores
    /// (`vendor/candle-core/LEXBENCH.md`): each batch element is still the product computed alone,
    /// bit for bit, for attention's shapes with contiguous and transposed operands, four-dimensional
    /// batches (sequence, head) and more batch elements than threads.
    #[test]
    fn a_batch_of_small_products_is_each_product_alone() -> Result<()> {
        let dev = Device::Cpu;
        let values =
            |n: usize, seed: f32| -> Vec<f32> { (0..n).map(|i| (i as f32 * 0.37 + seed).sin()).collect() };
        let bits = tensor_bits;
        let (b, h, s, d) = (5, 3, 19, 8);
        let q = Tensor::from_vec(values(b * h * s * d, 0.1), (b, h, s, d), &dev)?;
        let k = Tensor::from_vec(values(b * h * s * d, 0.7), (b, h, s, d), &dev)?;
        let p = Tensor::from_vec(values(b * h * s * s, 1.3), (b, h, s, s), &dev)?;
        // (what, left operand, right operand): each batched, and each element's product alone.
        let cases = [
            ("q·kᵀ", q.clone(), k.t()?),
            ("p·v", p.clone(), k.clone()),
            ("pᵀ·q", p.t()?, q.clone()),
            ("qᵀ·k", q.t()?, k),
        ];
        for (what, left, right) in &cases {
            let batched = left.matmul(right)?;
            for i in 0..b {
                for j in 0..h {
                    let alone = left.get(i)?.get(j)?.matmul(&right.get(i)?.get(j)?)?;
                    assert_eq!(
                        bits(&batched.get(i)?.get(j)?)?,
                        bits(&alone)?,
                        "{what}, batch element ({i}, {j})"
                    );
                }
            }
        }
        Ok(())
    }

    /// The vectorised, split keep mask is the value-by-value draw (`unit_f64() ≥ p`) on every path
    /// the CPU has, across the pieces' seams (over 2 × 64k values), for drop rates whose `p · 2⁵³`
    /// is and is not an integer.
    #[test]
    fn the_keep_mask_is_the_value_by_value_draw() {
        use lexbench_core::rng::SplitMix64;
        let paths: Vec<Isa> = [Isa::Portable, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&p| p <= Isa::detected())
            .collect();
        for (n, p, seed) in [
            (1, 0.1, 3),
            (67, 0.25, 4),
            (1000, 1.0 / 3.0, 5),
            (140_001, 0.1, 6),
            (200_003, 0.5, 7),
        ] {
            let mut r = SplitMix64::new(seed);
            let state = r.state();
            let want: Vec<bool> = (0..n).map(|_| r.unit_f64() >= p).collect();
            for &path in &paths {
                assert_eq!(keep_mask_on(path, state, p, n), want, "{path:?}, n {n}, p {p}");
            }
            let dropped = want.iter().filter(|&&k| !k).count() as f64 / n as f64;
            assert!(
                n < 1000 || (dropped - p).abs() < 0.01,
                "drop share {dropped} for p {p}"
            );
        }
    }

    #[test]
    fn every_vector_path_gives_the_generic_bits() {
        let mut rng = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 40) as f32 / (1u64 << 24) as f32 * 16.0 - 8.0
        };
        let paths: Vec<Isa> = [Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&p| p <= Isa::detected())
            .collect();
        for n in [1, 7, 15, 16, 17, 31, 33, 64, 67, 128, 131] {
            let x: Vec<f32> = (0..n).map(|_| next()).collect();
            let y: Vec<f32> = (0..n).map(|_| next()).collect();
            // A mask as attention uses it: zeros, and a large negative for padding.
            let mask: Vec<f32> = (0..n).map(|i| if i % 5 == 4 { -1e9 } else { 0.0 }).collect();
            let run = |path: Isa| -> Vec<Vec<u32>> {
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<u32>>();
                let mut soft = x.clone();
                softmax_row_on(path, &mut soft, &mask);
                let mut probs = soft.clone();
                softmax_row_on(path, &mut probs, &vec![0.0; n]);
                let mut outs = vec![vec![0f32; n]; 4];
                let mut written = vec![MaybeUninit::uninit(); n];
                bias_gelu_row_on(path, &x, &y, &mut written);
                // SAFETY: the kernel writes every element.
                outs[0].copy_from_slice(unsafe { assume_written(&mut written) });
                gelu_slice_on(path, &x, &mut written);
                // SAFETY: as above.
                outs[1].copy_from_slice(unsafe { assume_written(&mut written) });
                gelu_grad_slice_on(path, &x, &y, &mut written);
                // SAFETY: as above.
                outs[2].copy_from_slice(unsafe { assume_written(&mut written) });
                softmax_grad_row_on(path, &probs, &y, &mut written);
                // SAFETY: as above.
                outs[3].copy_from_slice(unsafe { assume_written(&mut written) });
                // Dropout's mask, and AdamW's moments and update (v ≥ 0, with and without decay).
                let keep: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
                dropout_slice_on(path, &x, &keep, 1.0 / 0.9, &mut written);
                // SAFETY: as above.
                outs.push(unsafe { assume_written(&mut written) }.to_vec());
                let (mut m, mut v, mut p) = (
                    y.clone(),
                    y.iter().map(|a| a * a).collect::<Vec<f32>>(),
                    x.clone(),
                );
                adamw_moment_on(path, &mut m, &x, 0.9, 1.0 - 0.9, false);
                adamw_moment_on(path, &mut v, &x, 0.999, 1.0 - 0.999, true);
                let c = crate::adamw::Consts {
                    inv_c1: 1.0 / (1.0 - 0.9),
                    inv_c2: 1.0 / (1.0 - 0.999),
                    eps: 1e-8,
                    decay: Some(1.0 - 2e-5 * 0.01),
                    lr: 2e-5,
                };
                adamw_update_on(path, &mut p, &m, &v, c);
                let mut q = x.clone();
                adamw_update_on(path, &mut q, &m, &v, crate::adamw::Consts { decay: None, ..c });
                outs.extend([m, v, p, q]);
                std::iter::once(bits(&soft))
                    .chain(outs.iter().map(|o| bits(o)))
                    .collect()
            };
            let generic = run(Isa::Portable);
            assert!(generic[0].iter().any(|&b| b != 0), "n = {n}: softmax gave zeros");
            for &path in &paths {
                assert_eq!(run(path), generic, "n = {n}, path {}", path.name());
            }
        }
    }

    fn reference(qkv: &Tensor, mask: &Tensor, b: usize, s: usize, heads: usize, d: usize) -> Result<Tensor> {
        let hid = heads * d;
        let t = qkv
            .reshape((b, s, 3, heads, d))?
            .permute((2, 0, 3, 1, 4))?
            .contiguous()?;
        let (q, k, v) = (t.get(0)?, t.get(1)?, t.get(2)?);
        let scores = q.matmul(&k.t()?)?.broadcast_add(&mask.reshape((b, 1, 1, s))?)?;
        let p = candle_nn::ops::softmax(&scores, D::Minus1)?;
        p.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((b * s, hid))
    }

    #[test]
    fn matches_the_composite_attention() -> Result<()> {
        for (b, s, heads, d, pad) in [(3, 7, 2, 5, true), (2, 16, 4, 8, false), (1, 33, 3, 4, true)] {
            let qkv = Tensor::randn(0f32, 1.0, (b * s, 3 * heads * d), &Device::Cpu)?;
            let mut m = vec![0f32; b * s];
            if pad {
                // The last sequence keeps only its first two tokens.
                for v in &mut m[(b - 1) * s + 2..] {
                    *v = f32::MIN;
                }
            }
            let mask = Tensor::from_vec(m, (b, s), &Device::Cpu)?;
            let fast = fused_attention(&qkv, &mask, b, s, heads, d)?;
            let slow = reference(&qkv, &mask, b, s, heads, d)?;
            let diff = (fast - slow)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert!(diff < 1e-5, "({b}, {s}, {heads}, {d}): {diff}");
        }
        Ok(())
    }

    /// The feed-forward up with its GELU in the product's pieces gives the bits of the product
    /// followed by the fused bias + GELU pass, for shapes that one tile, several tiles and the
    /// edges of the micro-kernel cover.
    #[test]
    fn linear_gelu_gives_the_bits_of_the_product_then_bias_gelu() -> Result<()> {
        for (n, k, m) in [(1, 3, 2), (37, 17, 45), (300, 64, 600), (130, 384, 1536)] {
            let x = Tensor::from_vec(seeded(n * k, 1), (n, k), &Device::Cpu)?;
            let wt = Tensor::from_vec(seeded(k * m, 2), (k, m), &Device::Cpu)?;
            let b = Tensor::from_vec(seeded(m, 3), m, &Device::Cpu)?;
            let fused = linear_gelu(&x, &wt, &b)?.flatten_all()?.to_vec1::<f32>()?;
            let apart = crate::gelu::bias_gelu(&x.matmul(&wt)?, &b)?
                .flatten_all()?
                .to_vec1::<f32>()?;
            let same = fused.iter().zip(&apart).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same && fused.len() == n * m, "({n}, {k}, {m}): other bits");
        }
        Ok(())
    }

    #[test]
    fn linear_matches_matmul_plus_bias() -> Result<()> {
        for (n, k, m) in [(1, 3, 2), (37, 17, 5), (300, 64, 96)] {
            let x = Tensor::randn(0f32, 1.0, (n, k), &Device::Cpu)?;
            let wt = Tensor::randn(0f32, 1.0, (k, m), &Device::Cpu)?;
            let b = Tensor::randn(0f32, 1.0, m, &Device::Cpu)?;
            let fast = linear(&x, &wt, &b)?;
            let slow = x.matmul(&wt)?.broadcast_add(&b)?;
            let diff = (fast - slow)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert!(diff < 1e-5, "({n}, {k}, {m}): {diff}");
        }
        Ok(())
    }

    /// Random `x` and residual `(n, d)`, a layer norm's weight and bias `(d)`, and the two stacked.
    fn layer_norm_inputs(n: usize, d: usize) -> Result<(Tensor, Tensor, Tensor, Tensor, Tensor)> {
        let x = (Tensor::randn(0f32, 1.0, (n, d), &Device::Cpu)? * 3.0)?;
        let r = Tensor::randn(1f32, 2.0, (n, d), &Device::Cpu)?;
        let w = Tensor::randn(1f32, 0.1, d, &Device::Cpu)?;
        let b = Tensor::randn(0f32, 0.1, d, &Device::Cpu)?;
        let wb = Tensor::stack(&[&w, &b], 0)?;
        Ok((x, r, w, b, wb))
    }

    #[test]
    fn add_layer_norm_matches_candle() -> Result<()> {
        for (n, d) in [(1, 4), (33, 16), (257, 384)] {
            let (x, r, w, b, wb) = layer_norm_inputs(n, d)?;
            let fast = add_layer_norm(&x, &r, &wb, 1e-12)?.expect("applies");
            let slow = candle_nn::ops::layer_norm(&(&x + &r)?, &w, &b, 1e-12)?;
            let diff = (fast - slow)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert!(diff < 1e-5, "({n}, {d}): {diff}");
        }
        // A shape mismatch is not fused (the caller's composite path reports it).
        let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu)?;
        let r = Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?;
        let wb = Tensor::zeros((2, 4), DType::F32, &Device::Cpu)?;
        assert!(add_layer_norm(&x, &r, &wb, 1e-5)?.is_none());
        Ok(())
    }

    /// Rows normalised in groups ([`LN_ROWS`] at a time, the rest alone, pieces over the pool) give
    /// each row's bits as [`AddLayerNorm::row`] alone gives them.
    /// The training layer norm, forward and backward, by groups of rows on every path gives each
    /// row the bits of the row alone (the former per-row code, here as the reference), `dw` and `db`
    /// summed in row order; rows of zeros and rows starting with −0.0 included (the sums' start).
    #[test]
    fn the_training_layer_norm_in_groups_gives_each_rows_own_bits() -> Result<()> {
        fn stats(x: &[f32], eps: f32) -> (f32, f32) {
            let d = x.len() as f32;
            let mean = x.iter().sum::<f32>() / d;
            let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d;
            (mean, 1.0 / (var + eps).sqrt())
        }
        let eps = 1e-12;
        let paths: Vec<Isa> = [Isa::Portable, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&p| p <= Isa::detected())
            .collect();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for (n, d) in [(1, 4), (7, 3), (8, 16), (9, 5), (37, 384), (70, 384)] {
            let (x, _, w, b, _) = layer_norm_inputs(n, d)?;
            let mut xs = x.flatten_all()?.to_vec1::<f32>()?;
            let g: Vec<f32> = xs.iter().map(|v| (v * 3.7).sin()).collect();
            if n > 2 {
                xs[..d].fill(0.0);
                xs[d] = -0.0;
                xs[d + 1..2 * d].fill(-0.0);
                xs[2 * d] = -0.0;
            }
            let (ws, bs) = (w.to_vec1::<f32>()?, b.to_vec1::<f32>()?);
            let (mut want_y, mut want_dx) = (vec![0f32; n * d], vec![0f32; n * d]);
            let (mut want_dw, mut want_db) = (vec![0f32; d], vec![0f32; d]);
            for r in 0..n {
                let (xr, gr) = (&xs[r * d..(r + 1) * d], &g[r * d..(r + 1) * d]);
                let (mean, inv) = stats(xr, eps);
                let (mut s1, mut s2) = (0f32, 0f32);
                for i in 0..d {
                    let xh = (xr[i] - mean) * inv;
                    want_y[r * d + i] = xh * ws[i] + bs[i];
                    let gw = gr[i] * ws[i];
                    s1 += gw;
                    s2 += gw * xh;
                    want_dw[i] += gr[i] * xh;
                    want_db[i] += gr[i];
                }
                let (m1, m2) = (s1 / d as f32, s2 / d as f32);
                for i in 0..d {
                    let xh = (xr[i] - mean) * inv;
                    want_dx[r * d + i] = inv * (gr[i] * ws[i] - m1 - xh * m2);
                }
            }
            for &path in &paths {
                let mut y = vec![MaybeUninit::uninit(); n * d];
                layer_norm_rows_on(path, &xs, &ws, &bs, eps, &mut y);
                // SAFETY: the kernel writes every element.
                let y = unsafe { assume_written(&mut y) };
                assert_eq!(bits(y), bits(&want_y), "forward ({n}, {d}), {path:?}");
                let (mut dx, mut dw, mut db) = (vec![0f32; n * d], vec![0f32; d], vec![0f32; d]);
                layer_norm_grad_rows_on(path, &xs, &g, &ws, eps, &mut dx, (&mut dw, &mut db));
                assert_eq!(bits(&dx), bits(&want_dx), "dx ({n}, {d}), {path:?}");
                assert_eq!(bits(&dw), bits(&want_dw), "dw ({n}, {d}), {path:?}");
                assert_eq!(bits(&db), bits(&want_db), "db ({n}, {d}), {path:?}");
            }
        }
        Ok(())
    }

    #[test]
    fn add_layer_norm_in_groups_gives_each_rows_own_bits() -> Result<()> {
        for (n, d) in [(1, 4), (7, 3), (8, 16), (37, 384), (200, 384)] {
            let (x, r, w, b, wb) = layer_norm_inputs(n, d)?;
            let fast = add_layer_norm(&x, &r, &wb, 1e-12)?.expect("applies");
            let (xs, rs) = (
                x.flatten_all()?.to_vec1::<f32>()?,
                r.flatten_all()?.to_vec1::<f32>()?,
            );
            let (ws, bs) = (w.to_vec1::<f32>()?, b.to_vec1::<f32>()?);
            let op = AddLayerNorm { eps: 1e-12 };
            let mut want = vec![MaybeUninit::uninit(); n * d];
            for ((xr, rr), or) in xs.chunks(d).zip(rs.chunks(d)).zip(want.chunks_mut(d)) {
                op.row(xr, rr, &ws, &bs, or);
            }
            // SAFETY: `row` wrote every element of every row.
            let want = unsafe { assume_written(&mut want) }.to_vec();
            let got = fast.flatten_all()?.to_vec1::<f32>()?;
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "({n}, {d})");
        }
        Ok(())
    }

    /// The trainable layer norm against candle's composite ops: values and the gradients of x,
    /// weight and bias (1e-4 relative to their scale).
    #[test]
    fn layer_norm_with_gradients_matches_the_composite() -> Result<()> {
        use candle_core::Var;
        for (n, d) in [(3, 8), (37, 64), (130, 384)] {
            let x = Var::from_tensor(&(Tensor::randn(0.5f32, 2.0, (n, d), &Device::Cpu)?))?;
            let w = Var::from_tensor(&Tensor::randn(1f32, 0.2, d, &Device::Cpu)?)?;
            let b = Var::from_tensor(&Tensor::randn(0f32, 0.2, d, &Device::Cpu)?)?;
            let probe = Tensor::randn(0f32, 1.0, (n, d), &Device::Cpu)?;
            let eps = 1e-12;
            let ours = layer_norm(x.as_tensor(), w.as_tensor(), b.as_tensor(), eps)?.expect("applies");
            let xt = x.as_tensor();
            let mean = (xt.sum_keepdim(D::Minus1)? / d as f64)?;
            let xc = xt.broadcast_sub(&mean)?;
            let var = (xc.sqr()?.sum_keepdim(D::Minus1)? / d as f64)?;
            let theirs = xc
                .broadcast_div(&(var + eps)?.sqrt()?)?
                .broadcast_mul(w.as_tensor())?
                .broadcast_add(b.as_tensor())?;
            let close = |a: &Tensor, b: &Tensor, what: &str| -> Result<()> {
                let scale = b.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?.max(1.0);
                let diff = (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
                assert!(diff <= 1e-4 * scale, "({n}, {d}) {what}: {diff} (scale {scale})");
                Ok(())
            };
            close(&ours, &theirs, "values")?;
            let g1 = (ours * &probe)?.sum_all()?.backward()?;
            let g2 = (theirs * &probe)?.sum_all()?.backward()?;
            for (v, what) in [(&x, "dx"), (&w, "dw"), (&b, "db")] {
                close(
                    g1.get(v.as_tensor()).expect("grad"),
                    g2.get(v.as_tensor()).expect("grad"),
                    what,
                )?;
            }
        }
        Ok(())
    }

    /// The training softmax runs [`softmax_rows`] over a piece's rows a sequence at a time: each
    /// row gets its own sequence's mask and [`softmax_row`]'s bits, where pieces start and end inside
    /// a sequence (rows per sequence not dividing the piece).
    #[test]
    fn masked_softmax_gives_each_row_its_sequences_mask_and_softmax_rows_bits() -> Result<()> {
        let (b, h, q, k) = (3, 3, 7, 19);
        let x = seeded(b * h * q * k, 5);
        let mask: Vec<f32> = (0..b * k)
            .map(|i| if i % k > (i / k + 1) * 5 { f32::MIN } else { 0.0 })
            .collect();
        let ours = masked_softmax(
            &Tensor::from_vec(x.clone(), (b, h, q, k), &Device::Cpu)?,
            &Tensor::from_vec(mask.clone(), (b, k), &Device::Cpu)?,
        )?
        .expect("applies")
        .flatten_all()?
        .to_vec1::<f32>()?;
        let mut want = x;
        for (r, row) in want.chunks_exact_mut(k).enumerate() {
            let seq = r / (h * q);
            softmax_row(row, &mask[seq * k..(seq + 1) * k]);
        }
        assert!(ours.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
        Ok(())
    }

    /// Scores `(b, h, q, k)` as a variable, a mask `(b, k)` under which the last sequence attends
    /// to its first two keys only, and an upstream gradient the scores' shape.
    fn scores_case(b: usize, h: usize, q: usize, k: usize) -> Result<(candle_core::Var, Tensor, Tensor)> {
        let x = candle_core::Var::from_tensor(&Tensor::randn(0f32, 3.0, (b, h, q, k), &Device::Cpu)?)?;
        let mut m = vec![0f32; b * k];
        for v in &mut m[(b - 1) * k + 2..] {
            *v = f32::MIN;
        }
        let mask = Tensor::from_vec(m, (b, k), &Device::Cpu)?;
        let probe = Tensor::randn(0f32, 1.0, (b, h, q, k), &Device::Cpu)?;
        Ok((x, mask, probe))
    }

    #[test]
    fn masked_softmax_with_gradients_matches_the_composite() -> Result<()> {
        // (batch, heads, queries, keys): uneven key counts exercise the vector tails.
        for (b, h, q, k) in [(2, 3, 5, 7), (3, 2, 4, 33), (2, 12, 16, 128)] {
            let (x, mask, probe) = scores_case(b, h, q, k)?;
            let ours = masked_softmax(x.as_tensor(), &mask)?.expect("applies");
            let theirs = candle_nn::ops::softmax(
                &x.as_tensor().broadcast_add(&mask.reshape((b, 1, 1, k))?)?,
                D::Minus1,
            )?;
            let max_diff = |a: &Tensor, c: &Tensor| -> Result<f32> {
                (a - c)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()
            };
            let d = max_diff(&ours, &theirs)?;
            assert!(d <= 1e-6, "({b}, {h}, {q}, {k}) values: {d}");
            let masked = ours.get(b - 1)?.narrow(D::Minus1, 2, k - 2)?;
            assert_eq!(masked.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?, 0.0);
            let (g1, g2) = probe_grads(&ours, &theirs, &probe, &x)?;
            let d = max_diff(&g1, &g2)?;
            assert!(d <= 1e-5, "({b}, {h}, {q}, {k}) gradients: {d}");
            // A wrong backward (e.g. the product's gradient alone) is far off.
            assert!(max_diff(&g1, &(probe.clone() * 0.0)?)? > 1e-2);
        }
        Ok(())
    }

    /// Heads apart (with and without the queries' scale) and back together are candle's reshape,
    /// transpose, copy and `* scale`, bit for bit, values and gradients.
    #[test]
    fn heads_apart_and_together_are_candles_ops_bit_for_bit() -> Result<()> {
        use candle_core::Var;
        let bits = tensor_bits;
        for (b, s, h, d) in [(1, 1, 1, 1), (2, 5, 3, 4), (3, 7, 12, 32)] {
            let x = Var::from_tensor(&Tensor::randn(0f32, 2.0, (b, s, h * d), &Device::Cpu)?)?;
            let probe = Tensor::randn(0f32, 1.0, (b, h, s, d), &Device::Cpu)?;
            for scale in [None, Some(1.0 / (d as f64).sqrt())] {
                let ours = split_heads(x.as_tensor(), h, scale)?.expect("applies");
                let theirs = x
                    .as_tensor()
                    .reshape((b, s, h, d))?
                    .transpose(1, 2)?
                    .contiguous()?;
                let theirs = match scale {
                    Some(m) => (theirs * m)?,
                    None => theirs,
                };
                assert_eq!(ours.dims(), theirs.dims());
                assert_eq!(
                    bits(&ours)?,
                    bits(&theirs)?,
                    "split ({b}, {s}, {h}, {d}), {scale:?}"
                );
                let (g1, g2) = probe_grads(&ours, &theirs, &probe, &x)?;
                assert_eq!(g1.dims(), g2.dims());
                assert_eq!(
                    bits(&g1)?,
                    bits(&g2)?,
                    "split's gradient ({b}, {s}, {h}, {d}), {scale:?}"
                );
            }
            let y = Var::from_tensor(&Tensor::randn(0f32, 2.0, (b, h, s, d), &Device::Cpu)?)?;
            let probe = Tensor::randn(0f32, 1.0, (b, s, h * d), &Device::Cpu)?;
            let ours = merge_heads(y.as_tensor())?.expect("applies");
            let theirs = y
                .as_tensor()
                .transpose(1, 2)?
                .contiguous()?
                .reshape((b, s, h * d))?;
            assert_eq!(ours.dims(), theirs.dims());
            assert_eq!(bits(&ours)?, bits(&theirs)?, "merge ({b}, {s}, {h}, {d})");
            let (g1, g2) = probe_grads(&ours, &theirs, &probe, &y)?;
            assert_eq!(bits(&g1)?, bits(&g2)?, "merge's gradient ({b}, {s}, {h}, {d})");
        }
        Ok(())
    }

    /// The softmax with dropout in one op is the softmax then dropout, bit for bit, values and
    /// gradients, from the same generator state (which it leaves where dropout leaves it); without
    /// training or at p = 0 it is the softmax alone.
    #[test]
    fn masked_softmax_dropout_is_the_softmax_then_dropout_bit_for_bit() -> Result<()> {
        use crate::dropout::{Dropout, reseed};
        let bits = tensor_bits;
        for (b, h, q, k) in [(2, 3, 5, 7), (3, 2, 4, 33), (2, 12, 16, 128)] {
            let (x, mask, probe) = scores_case(b, h, q, k)?;
            let d = Dropout::new(0.1);
            reseed(5);
            let ours = masked_softmax_dropout(x.as_tensor(), &mask, d, true)?.expect("applies");
            let after_ours = bits(&d.forward(&Tensor::ones(9, DType::F32, &Device::Cpu)?, true)?)?;
            reseed(5);
            let theirs = d.forward(&masked_softmax(x.as_tensor(), &mask)?.expect("applies"), true)?;
            let after_theirs = bits(&d.forward(&Tensor::ones(9, DType::F32, &Device::Cpu)?, true)?)?;
            assert_eq!(bits(&ours)?, bits(&theirs)?, "({b}, {h}, {q}, {k}) values");
            assert_eq!(after_ours, after_theirs, "the generator's state after");
            assert!(bits(&ours)?.contains(&0), "some probabilities dropped");
            let (g1, g2) = probe_grads(&ours, &theirs, &probe, &x)?;
            assert_eq!(bits(&g1)?, bits(&g2)?, "({b}, {h}, {q}, {k}) gradients");
            for (d, train) in [(Dropout::new(0.1), false), (Dropout::new(0.0), true)] {
                let plain = masked_softmax_dropout(x.as_tensor(), &mask, d, train)?.expect("applies");
                let want = masked_softmax(x.as_tensor(), &mask)?.expect("applies");
                assert_eq!(bits(&plain)?, bits(&want)?, "no dropout: the softmax alone");
            }
        }
        Ok(())
    }

    /// `gemm_split` runs a product's tiles over candle's barrier pool: every value is the one-thread
    /// product's, bit for bit, for more rows than columns and fewer, a transposed lhs, accumulation
    /// into the destination, and a product too small to split.
    #[test]
    fn gemm_split_is_the_one_thread_gemm_bit_for_bit() {
        for (m, n, k) in [(300, 129, 384), (96, 700, 64), (1000, 48, 256), (5, 7, 3)] {
            for transpose_lhs in [false, true] {
                for read_dst in [false, true] {
                    let a = seeded(m * k, 1);
                    let b = seeded(k * n, 2);
                    let lhs = if transpose_lhs {
                        // `a` holds lhsᵀ (k, m): element (i, t) at t·m + i.
                        Strided {
                            ptr: a.as_ptr(),
                            cs: m as isize,
                            rs: 1,
                        }
                    } else {
                        Strided {
                            ptr: a.as_ptr(),
                            cs: 1,
                            rs: k as isize,
                        }
                    };
                    let rhs = Strided {
                        ptr: b.as_ptr(),
                        cs: 1,
                        rs: n as isize,
                    };
                    let start = seeded(m * n, 3);
                    let mut split = start.clone();
                    let mut whole = start.clone();
                    // SAFETY: `split` and `whole` hold the (m, n) row-major destination, `a` and `b`
                    // the m·k and k·n operands the strides address, each element once.
                    unsafe {
                        gemm_split(
                            (m, n, k),
                            StridedDst {
                                ptr: split.as_mut_ptr(),
                                cs: 1,
                                rs: n as isize,
                                accumulate: read_dst,
                            },
                            lhs,
                            rhs,
                        );
                        lexbench_gemm::sgemm(
                            lexbench_gemm::Product {
                                m,
                                n,
                                k,
                                a: lhs.ptr,
                                rsa: lhs.rs,
                                csa: lhs.cs,
                                b: rhs.ptr,
                                rsb: rhs.rs,
                                csb: rhs.cs,
                                c: whole.as_mut_ptr(),
                                rsc: n as isize,
                                csc: 1,
                                accumulate: read_dst,
                                bias: std::ptr::null(),
                            },
                            &lexbench_gemm::Threads::serial(),
                        );
                    }
                    let differ = split
                        .iter()
                        .zip(&whole)
                        .filter(|(x, y)| x.to_bits() != y.to_bits())
                        .count();
                    assert_eq!(
                        differ, 0,
                        "({m}, {n}, {k}), lhs transposed {transpose_lhs}, read_dst {read_dst}: \
                         {differ} values differ from the one-thread product"
                    );
                }
            }
        }
    }

    #[test]
    fn linear_with_gradients_matches_matmul_plus_bias() -> Result<()> {
        use candle_core::Var;
        for (n, k, m) in [(5, 3, 4), (70, 64, 96), (300, 384, 129)] {
            let x = Var::from_tensor(&Tensor::randn(0f32, 1.0, (n, k), &Device::Cpu)?)?;
            let w = Var::from_tensor(&Tensor::randn(0f32, 0.1, (m, k), &Device::Cpu)?)?;
            let b = Var::from_tensor(&Tensor::randn(0f32, 0.1, m, &Device::Cpu)?)?;
            let probe = Tensor::randn(0f32, 1.0, (n, m), &Device::Cpu)?;
            let ours = linear_train(x.as_tensor(), w.as_tensor(), b.as_tensor())?.expect("applies");
            let theirs = x
                .as_tensor()
                .matmul(&w.as_tensor().t()?)?
                .broadcast_add(b.as_tensor())?;
            let close = |a: &Tensor, c: &Tensor, what: &str| -> Result<()> {
                let scale = c.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?.max(1.0);
                let diff = (a - c)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
                assert!(
                    diff <= 1e-5 * scale,
                    "({n}, {k}, {m}) {what}: {diff} (scale {scale})"
                );
                Ok(())
            };
            close(&ours, &theirs, "values")?;
            let g1 = (ours * &probe)?.sum_all()?.backward()?;
            let g2 = (theirs * &probe)?.sum_all()?.backward()?;
            for (v, what) in [(&x, "dx"), (&w, "dw"), (&b, "db")] {
                let (a, c) = (
                    g1.get(v.as_tensor()).expect("grad"),
                    g2.get(v.as_tensor()).expect("grad"),
                );
                assert_eq!(a.dims(), c.dims(), "{what}");
                close(a, c, what)?;
            }
        }
        // Frozen weights (PEFT): no weight or bias gradient, the input's still flows.
        let x = Var::from_tensor(&Tensor::randn(0f32, 1.0, (4, 3), &Device::Cpu)?)?;
        let (w, b) = (
            Tensor::ones((2, 3), DType::F32, &Device::Cpu)?,
            Tensor::ones(2, DType::F32, &Device::Cpu)?,
        );
        let g = linear_train(x.as_tensor(), &w, &b)?
            .expect("applies")
            .sum_all()?
            .backward()?;
        assert_eq!(
            g.get(x.as_tensor()).expect("dx").to_vec2::<f32>()?,
            vec![vec![2f32; 3]; 4]
        );
        assert!(g.get(&w).is_none() && g.get(&b).is_none());
        Ok(())
    }

    #[test]
    fn gelu_with_gradients_matches_candle() -> Result<()> {
        use candle_core::Var;
        // −10 … 10 in steps of 0.01, odd length (vector tails), both signs and zero.
        let xs: Vec<f32> = (0..2001).map(|i| (i as f32 - 1000.0) / 100.0).collect();
        let x = Var::from_tensor(&Tensor::from_vec(xs, (3, 667), &Device::Cpu)?)?;
        let probe = Tensor::randn(0f32, 1.0, (3, 667), &Device::Cpu)?;
        let ours = gelu_train(x.as_tensor())?.expect("applies");
        let theirs = x.as_tensor().gelu_erf()?;
        let max_diff = |a: &Tensor, c: &Tensor| -> Result<f32> {
            (a - c)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()
        };
        let d = max_diff(&ours, &theirs)?;
        assert!(d <= 1e-6, "values: {d}");
        let g1 = (ours * &probe)?.sum_all()?.backward()?;
        let g2 = (theirs * &probe)?.sum_all()?.backward()?;
        let d = max_diff(
            g1.get(x.as_tensor()).expect("grad"),
            g2.get(x.as_tensor()).expect("grad"),
        )?;
        // candle's derivative rounds 1/√(2π) to 0.398942 (relative 1e-6).
        assert!(d <= 1e-5, "gradients: {d}");
        Ok(())
    }

    #[test]
    fn softmax_rows_match_softmax_row() {
        // Row lengths below, at and around the lanes; row counts below, at and past a group; masked
        // keys; on every path the CPU has.
        for (n, rows) in [(1, 3), (5, 9), (16, 8), (17, 1), (33, 17), (128, 24), (130, 10)] {
            let x = seeded(n * rows, (n * 7 + rows) as u64);
            let x: Vec<f32> = x.iter().map(|v| v * 20.0).collect();
            let mut mask = vec![0f32; n];
            for v in mask.iter_mut().skip(n / 2).step_by(3) {
                *v = f32::MIN;
            }
            for path in [Isa::Portable, Isa::Avx2, Isa::Avx512]
                .into_iter()
                .filter(|p| p.available())
            {
                let mut one = x.clone();
                for r in one.chunks_exact_mut(n) {
                    softmax_row_on(path, r, &mask);
                }
                let mut many = x.clone();
                softmax_rows_on(path, &mut many, &mask);
                let same = one.iter().zip(&many).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "n {n}, {rows} rows, {path:?}: other bits");
            }
        }
    }

    #[test]
    fn attention_blocks_give_the_whole_products_bits() {
        // Shapes around the block (24 rows) and the micro-kernels' tiles (12 × 32, 6 × 16), the
        // encoders' head sizes (32, 64), padded keys.
        for (b, s, heads, d) in [
            (2, 128, 3, 32),
            (1, 24, 2, 64),
            (1, 25, 1, 5),
            (2, 47, 2, 16),
            (1, 130, 1, 33),
            (1, 1, 1, 8),
        ] {
            let shape = FusedAttention {
                batch: b,
                seq: s,
                heads,
                head_dim: d,
            };
            let qkv = seeded(b * s * 3 * heads * d, (s * 31 + d) as u64);
            let mut mask = vec![0f32; b * s];
            for v in &mut mask[b * s - s / 3..] {
                *v = f32::MIN;
            }
            let (mut blocked, mut whole) = (vec![0f32; b * s * heads * d], vec![0f32; b * s * heads * d]);
            let mut scratch = AttendScratch::new(s);
            let mut scores = vec![0f32; s * s];
            for bi in 0..b {
                for h in 0..heads {
                    // SAFETY: both outputs hold (b · s, heads · d) values; one thread.
                    unsafe {
                        attend(&shape, &qkv, &mask, blocked.as_mut_ptr(), &mut scratch, (bi, h));
                        attend_whole(&shape, &qkv, &mask, whole.as_mut_ptr(), &mut scores, (bi, h));
                    }
                }
            }
            let same = blocked
                .iter()
                .zip(&whole)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same,
                "({b}, {s}, {heads}, {d}): the blocked attention changed bits"
            );
        }
    }

    /// [`attend`] as two whole products (`s × s` scores, softmax, `· V`): the bits the blocked one keeps.
    ///
    /// # Safety
    /// `dst` points to a `(b · s, heads · d)` buffer and no other thread writes this block.
    unsafe fn attend_whole(
        shape: &FusedAttention,
        qkv: &[f32],
        mask: &[f32],
        dst: *mut f32,
        scores: &mut [f32],
        (bi, h): (usize, usize),
    ) {
        let Head {
            s,
            d,
            hid,
            row,
            q,
            k,
            v,
        } = shape.head(qkv, (bi, h));
        // scores (s × s) = Q (s × d, rows `row` apart) · Kᵀ (d × s: element (c, j) = K[j, c]).
        let serial = lexbench_gemm::Threads::serial();
        // SAFETY: every index stays inside this sequence's rows of `qkv` and inside `scores`.
        unsafe {
            lexbench_gemm::sgemm(
                lexbench_gemm::Product {
                    m: s,
                    n: s,
                    k: d,
                    a: q,
                    rsa: row as isize,
                    csa: 1,
                    b: k,
                    rsb: 1,
                    csb: row as isize,
                    c: scores.as_mut_ptr(),
                    rsc: s as isize,
                    csc: 1,
                    accumulate: false,
                    bias: std::ptr::null(),
                },
                &serial,
            );
        }
        let m = &mask[bi * s..(bi + 1) * s];
        for r in scores.chunks_exact_mut(s) {
            softmax_row(r, m);
        }
        // context (s × d, rows `hid` apart in the output) = P (s × s) · V (s × d, rows `row` apart).
        // SAFETY: the caller owns this block of `dst`; V's indices stay inside this sequence's rows.
        unsafe {
            lexbench_gemm::sgemm(
                lexbench_gemm::Product {
                    m: s,
                    n: d,
                    k: s,
                    a: scores.as_ptr(),
                    rsa: s as isize,
                    csa: 1,
                    b: v,
                    rsb: row as isize,
                    csb: 1,
                    c: dst.add(bi * s * hid + h * d),
                    rsc: hid as isize,
                    csc: 1,
                    accumulate: false,
                    bias: std::ptr::null(),
                },
                &serial,
            );
        }
    }

    /// A sequence's context is bit-for-bit the same whatever its batch is padded to: the valid
    /// keys meet the same additions, padded ones add exact zeros.
    #[test]
    fn attention_does_not_depend_on_padding() -> Result<()> {
        let (heads, d, valid) = (2, 8, 21);
        let base = Tensor::randn(0f32, 1.0, (valid, 3 * heads * d), &Device::Cpu)?;
        let context = |len: usize| -> Result<Vec<f32>> {
            let pad = Tensor::randn(0f32, 1.0, (len - valid, 3 * heads * d), &Device::Cpu)?;
            let qkv = Tensor::cat(&[&base, &pad], 0)?;
            let mut m = vec![0f32; len];
            for v in &mut m[valid..] {
                *v = f32::MIN;
            }
            let mask = Tensor::from_vec(m, (1, len), &Device::Cpu)?;
            let ctx = fused_attention(&qkv, &mask, 1, len, heads, d)?;
            ctx.narrow(0, 0, valid)?.flatten_all()?.to_vec1::<f32>()
        };
        let want = context(valid + 1)?;
        for len in [valid + 2, 32, 33, 47, 48, 64, 100] {
            assert_eq!(context(len)?, want, "padded to {len}");
        }
        Ok(())
    }

    #[test]
    fn polynomial_exp_is_accurate() {
        let mut worst = 0f32;
        for i in 0..=87_000 {
            let t = -(i as f32) / 1000.0;
            let (want, got) = (t.exp(), exp_poly(t));
            if want > 1e-30 {
                worst = worst.max(((got - want) / want).abs());
            }
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp_poly(-1e30), 0.0);
        assert_eq!(exp_poly(f32::MIN), 0.0);
        assert_eq!(exp_poly(0.0), 1.0);
    }
}
