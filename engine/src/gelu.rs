//! Fused CPU kernels for inference: GELU with bias in one pass.
//!
//! Exact GELU is `x Φ(x) = x/2 (1 + erf(x/√2))`. candle computes `erf` with libm's scalar `erff`
//! (≈18% of a MiniLM forward in a release build); here `erf` uses Abramowitz & Stegun 7.1.26
//! (|error| ≤ 1.5e-7, the approximation PyTorch's vectorised CPU `erf` uses too), rewritten so
//! that one pass computes `gelu(x + b) = relu(y) − |y|/2 · P(t) · exp(−y²/2)`, `y = x + b`,
//! `t = 1 / (1 + p |y| / √2)`. The pass is split across the available cores.
//!
//! Used only where no gradient is needed (the custom op has no backward pass) and on the CPU;
//! elsewhere the composite candle ops run.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor};

use candle_core::Result;

pub(crate) const P: f32 = 0.327_591_1;
pub(crate) const A1: f32 = 0.254_829_6;
pub(crate) const A2: f32 = -0.284_496_74;
pub(crate) const A3: f32 = 1.421_413_7;
pub(crate) const A4: f32 = -1.453_152_1;
pub(crate) const A5: f32 = 1.061_405_4;

/// Exact GELU of one value through the A&S 7.1.26 `erf` (the `exp` is
/// [`crate::kernels::exp_poly`], branch-free, so loops over it vectorise).
#[inline(always)]
pub fn gelu_scalar(y: f32) -> f32 {
    let a = y.abs();
    let t = 1.0 / (1.0 + P * std::f32::consts::FRAC_1_SQRT_2 * a);
    let poly = ((((A5 * t + A4) * t + A3) * t + A2) * t + A1) * t;
    y.max(0.0) - 0.5 * a * poly * crate::kernels::exp_poly(-0.5 * y * y)
}

struct BiasGelu;

impl CustomOp2 for BiasGelu {
    fn name(&self) -> &'static str {
        "lexbench-bias-gelu"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(x), CpuStorage::F32(b)) = (s1, s2) else {
            candle_core::bail!("bias-gelu: f32 only");
        };
        let (Some((x0, x1)), Some((b0, b1))) = (l1.contiguous_offsets(), l2.contiguous_offsets()) else {
            candle_core::bail!("bias-gelu: contiguous inputs only");
        };
        let (x, b) = (&x[x0..x1], &b[b0..b1]);
        let n = b.len();
        if n == 0 || x.len() % n != 0 {
            candle_core::bail!("bias-gelu: {} values do not split into rows of {n}", x.len());
        }
        let out = crate::kernels::bias_gelu_rows(x, b);
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// `gelu(x + bias)` (exact GELU) with `bias` broadcast over the last dimension: one fused pass on
/// the CPU for f32 without gradient tracking, candle's ops otherwise.
pub fn bias_gelu(x: &Tensor, bias: &Tensor) -> Result<Tensor> {
    let fused = x.device().is_cpu()
        && x.dtype() == DType::F32
        && bias.dtype() == DType::F32
        && !x.track_op()
        && !bias.track_op()
        && x.is_contiguous()
        && bias.is_contiguous()
        && bias.rank() == 1;
    if fused {
        x.apply_op2_no_bwd(bias, &BiasGelu)
    } else {
        x.broadcast_add(bias)?.gelu_erf()
    }
}

#[cfg(test)]
mod tests {
    //! Properties: the fused GELU matches candle's exact (libm erf) GELU to 1e-6 absolute over a
    //! wide range, with the bias broadcast per row.
    use super::*;
    use candle_core::Device;

    #[test]
    fn matches_exact_gelu() -> Result<()> {
        let xs: Vec<f32> = (0..4000).map(|i| (i as f32 - 2000.0) / 200.0).collect();
        let x = Tensor::from_vec(xs, (40, 100), &Device::Cpu)?;
        let b = Tensor::from_vec(
            (0..100).map(|i| (i as f32 - 50.0) / 100.0).collect::<Vec<f32>>(),
            100,
            &Device::Cpu,
        )?;
        let fast = bias_gelu(&x, &b)?;
        let exact = x.broadcast_add(&b)?.gelu_erf()?;
        let d = (fast - exact)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        assert!(d < 1e-6, "max difference {d}");
        Ok(())
    }
}
