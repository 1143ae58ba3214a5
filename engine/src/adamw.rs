//! AdamW's update in place, for f32 tensors in CPU memory, each contiguous and of its own storage
//! (the moments; a variable and its gradient): the operations of the tensor path (`lexbench-baselines`'
//! `train::optim`), one for one, so that the results are the same bits (candle's `t * x` is
//! `t · f32(x) + 0`, `t / x` is `t · f32(1/x) + 0`, `t + x` is `t · 1 + f32(x)`). The loops are
//! compiled for each instruction-set path, the same bits on each (`kernels::adamw_moment`,
//! `kernels::adamw_update`).
use candle_core::{CpuStorage, InplaceOp2, InplaceOp3, Layout, Tensor};

/// Whether [`Moment`] and [`Update`] can run on these tensors.
pub fn applies(ts: &[&Tensor]) -> bool {
    ts.iter()
        .all(|t| t.device().is_cpu() && t.dtype() == candle_core::DType::F32 && t.is_contiguous())
        && ts.windows(2).all(|w| w[0].shape() == w[1].shape())
}

/// The step's constants.
#[derive(Debug, Clone, Copy)]
pub struct Consts {
    /// `1 / (1 − β₁ᵗ)`: the first moment's bias correction.
    pub inv_c1: f32,
    /// `1 / (1 − β₂ᵗ)`: the second moment's bias correction.
    pub inv_c2: f32,
    /// ε.
    pub eps: f32,
    /// `1 − lr·wd` for a decayed parameter.
    pub decay: Option<f32>,
    /// The learning rate.
    pub lr: f32,
}

fn slice<'a>(s: &'a CpuStorage, l: &Layout) -> candle_core::Result<&'a [f32]> {
    let (CpuStorage::F32(v), Some((a, b))) = (s, l.contiguous_offsets()) else {
        candle_core::bail!("AdamW in place: contiguous f32 only");
    };
    Ok(&v[a..b])
}

fn slice_mut<'a>(s: &'a mut CpuStorage, l: &Layout) -> candle_core::Result<&'a mut [f32]> {
    let (CpuStorage::F32(v), Some((a, b))) = (s, l.contiguous_offsets()) else {
        candle_core::bail!("AdamW in place: contiguous f32 only");
    };
    Ok(&mut v[a..b])
}

/// `f` over matching chunks of `dst` and `srcs`, on all cores when there is enough work.
fn par<const N: usize>(dst: &mut [f32], srcs: [&[f32]; N], f: impl Fn(&mut [f32], [&[f32]; N]) + Sync) {
    const MIN_CHUNK: usize = 1 << 18;
    let threads = crate::pool::threads();
    let chunk = dst.len().div_ceil(threads).max(MIN_CHUNK);
    crate::pool::chunks_on_pool(dst, chunk, |i, d| {
        f(d, srcs.map(|s| &s[i * chunk..i * chunk + d.len()]))
    });
}

/// A moment: `m ← m·β₁ + g·(1 − β₁)`, or with `squared`, `v ← v·β₂ + g²·(1 − β₂)`.
pub struct Moment {
    /// β₁ or β₂.
    pub beta: f32,
    /// `1 − β`, as the tensor path computes it.
    pub one_minus_beta: f32,
    /// The second moment (`g²`), not the first.
    pub squared: bool,
}
/// `p ← p·(1 − lr·wd) − lr·m̂ / (√v̂ + ε)`.
pub struct Update(pub Consts);

impl InplaceOp2 for Moment {
    fn name(&self) -> &'static str {
        if self.squared { "adamw-v" } else { "adamw-m" }
    }
    fn cpu_fwd(
        &self,
        m: &mut CpuStorage,
        ml: &Layout,
        g: &CpuStorage,
        gl: &Layout,
    ) -> candle_core::Result<()> {
        let Self {
            beta,
            one_minus_beta,
            squared,
        } = *self;
        par(slice_mut(m, ml)?, [slice(g, gl)?], |m, [g]| {
            crate::kernels::adamw_moment(m, g, beta, one_minus_beta, squared);
        });
        Ok(())
    }
}

impl InplaceOp3 for Update {
    fn name(&self) -> &'static str {
        "adamw-update"
    }
    fn cpu_fwd(
        &self,
        p: &mut CpuStorage,
        pl: &Layout,
        m: &CpuStorage,
        ml: &Layout,
        v: &CpuStorage,
        vl: &Layout,
    ) -> candle_core::Result<()> {
        let c = self.0;
        par(slice_mut(p, pl)?, [slice(m, ml)?, slice(v, vl)?], |p, [m, v]| {
            crate::kernels::adamw_update(p, m, v, c);
        });
        Ok(())
    }
}
