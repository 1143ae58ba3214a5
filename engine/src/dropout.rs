//! Dropout with masks from a seeded generator, so that training is reproducible.
//!
//! candle's CPU device cannot be seeded (`Device::Cpu.set_seed` is an error) and `candle_nn::Dropout`
//! draws its masks from a thread-local generator seeded by the operating system. Training runs that
//! must resume bit for bit draw their masks here instead: one SplitMix64 per thread, reseeded by the
//! trainer before every step ([`reseed`]), so step `n` of a resumed run sees the same masks as step `n`
//! of an uninterrupted one.
//!
//! On the CPU the masks are that generator's next draws, value by value (`u ≥ p` keeps a value):
//! SplitMix64 is counter-based, so the draws are computed vectorised and split across the cores
//! ([`crate::kernels::keep_mask`]), the same mask as one draw after another. On a GPU they
//! are drawn there (candle's `Tensor::rand`, cuRAND on CUDA), from the device's generator seeded once
//! per step with a draw of this one, instead of drawing every value of every activation's and
//! attention probability's mask on the host (about 100 million a MiniLM step at 128 tokens and batch
//! 56) and copying it over. A GPU run is then reproducible on that GPU, for a seed and a resume, but
//! its masks are not the CPU's.

use std::cell::RefCell;

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor};
use lexbench_core::rng::SplitMix64;

thread_local! {
    static RNG: RefCell<SplitMix64> = RefCell::new(SplitMix64::new(0x6c65_7862_656e_6368));
    /// Whether a GPU's generator has been seeded from `RNG` since the last [`reseed`].
    static DEVICE_SEEDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Reseeds this thread's dropout generator (and, at the next mask drawn on a GPU, that device's).
pub fn reseed(seed: u64) {
    RNG.with(|r| *r.borrow_mut() = SplitMix64::new(seed));
    DEVICE_SEEDED.with(|d| d.set(false));
}

/// Inverted dropout: in training, each value is zeroed with probability `p` and the others are scaled
/// by `1 / (1 − p)`; in evaluation it is the identity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dropout {
    p: f32,
}

impl Dropout {
    /// Dropout with drop probability `p` (`0 ≤ p < 1`; validated where the configuration is read).
    pub fn new(p: f32) -> Self {
        Self { p }
    }

    /// The drop probability.
    pub fn p(&self) -> f32 {
        self.p
    }

    /// The kept values' scale, `1 / (1 − p)` in f32.
    pub fn scale(&self) -> f32 {
        (1.0 / (1.0 - f64::from(self.p))) as f32
    }

    /// The CPU's keep mask of the next `n` values (this thread's generator moves past them): what
    /// [`Dropout::forward`] draws on the CPU.
    pub fn draw_mask(&self, n: usize) -> std::sync::Arc<[bool]> {
        let p = f64::from(self.p);
        let keep: Vec<bool> = RNG.with(|r| {
            let mut r = r.borrow_mut();
            let state = r.state();
            r.skip(n as u64);
            crate::kernels::keep_mask(state, p, n)
        });
        keep.into()
    }

    /// Applies dropout when `train` is true. On the CPU (f32) one pass each way with the mask kept as
    /// booleans (`DropoutOp`); other CPU dtypes draw the same mask as a tensor and take candle's
    /// product. On a GPU the mask is drawn there (module docs), and the product is candle's.
    pub fn forward(&self, x: &Tensor, train: bool) -> candle_core::Result<Tensor> {
        if !train || self.p <= 0.0 {
            return Ok(x.clone());
        }
        let p = f64::from(self.p);
        let scale = self.scale();
        if !x.device().is_cpu() {
            if !DEVICE_SEEDED.with(|d| d.replace(true)) {
                let seed = RNG.with(|r| r.borrow_mut().next_u64());
                x.device().set_seed(seed)?;
            }
            // Kept where u ≥ p, u uniform on the device: the same law as the CPU's draws.
            let u = Tensor::rand(0f32, 1f32, x.shape(), x.device())?;
            let mask = (u.ge(p as f32)?.to_dtype(x.dtype())? * f64::from(scale))?;
            return x * mask;
        }
        let keep = self.draw_mask(x.elem_count());
        if x.dtype() == candle_core::DType::F32 {
            let op = DropoutOp { keep, scale };
            return x.contiguous()?.apply_op1(op);
        }
        let mask: Vec<f32> = keep.iter().map(|&k| if k { scale } else { 0.0 }).collect();
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        x * mask
    }
}

/// `x ⊙ m`, `m` = `scale` where kept and 0 where dropped, with its backward pass (`dy ⊙ m`, the same
/// op): candle's product would need the mask as an f32 tensor and a broadcast multiply each way.
struct DropoutOp {
    keep: std::sync::Arc<[bool]>,
    scale: f32,
}

impl CustomOp1 for DropoutOp {
    fn name(&self) -> &'static str {
        "lexbench-dropout"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(v) = s else {
            candle_core::bail!("dropout: f32 only");
        };
        let Some((a, b)) = l.contiguous_offsets() else {
            candle_core::bail!("dropout: contiguous input only");
        };
        let x = &v[a..b];
        if x.len() != self.keep.len() {
            candle_core::bail!("dropout: {} values, a mask of {}", x.len(), self.keep.len());
        }
        let threads = crate::pool::threads();
        let per = x.len().div_ceil(threads).max(1 << 16);
        let out = crate::kernels::dropout_apply(x, &self.keep, self.scale, per);
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let op = DropoutOp {
            keep: self.keep.clone(),
            scale: self.scale,
        };
        Ok(Some(grad.contiguous()?.apply_op1_no_bwd(&op)?))
    }
}

#[cfg(test)]
mod tests {
    //! Properties: identity in evaluation; in training the share of zeros is near `p`, kept values are
    //! scaled by `1/(1-p)`, and the masks are fixed by the seed.
    use super::*;
    use candle_core::Device;

    #[test]
    fn seeded_masks() -> candle_core::Result<()> {
        let x = Tensor::ones((100, 100), candle_core::DType::F32, &Device::Cpu)?;
        let d = Dropout::new(0.25);
        assert_eq!(d.forward(&x, false)?.to_vec2::<f32>()?, x.to_vec2::<f32>()?);
        reseed(7);
        let a = d.forward(&x, true)?.flatten_all()?.to_vec1::<f32>()?;
        reseed(7);
        let b = d.forward(&x, true)?.flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(a, b);
        let c = d.forward(&x, true)?.flatten_all()?.to_vec1::<f32>()?;
        assert_ne!(a, c);
        let zeros = a.iter().filter(|&&v| v == 0.0).count() as f64 / 1e4;
        // 4 standard errors of a binomial share: 4 · sqrt(0.25 · 0.75 / 10⁴) ≈ 0.017.
        assert!((zeros - 0.25).abs() < 0.018, "zero share {zeros}");
        assert!(a.iter().all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6));
        Ok(())
    }

    /// The CPU op and the tensor-mask path agree bit for bit, values and gradients, from the same
    /// seed (and so does training before and after the op: same masks, same products).
    #[test]
    fn the_cpu_op_equals_the_tensor_mask_path() -> candle_core::Result<()> {
        let x = candle_core::Var::from_tensor(&Tensor::randn(0f32, 1.0, (6, 50, 7), &Device::Cpu)?)?;
        let probe = Tensor::randn(0f32, 1.0, (6, 50, 7), &Device::Cpu)?;
        let d = Dropout::new(0.1);
        reseed(11);
        let ours = d.forward(x.as_tensor(), true)?;
        reseed(11);
        let keep: Vec<f32> = RNG.with(|r| {
            let mut r = r.borrow_mut();
            (0..x.elem_count())
                .map(|_| {
                    if r.unit_f64() < 0.1 {
                        0.0
                    } else {
                        (1.0 / (1.0 - 0.1f64)) as f32
                    }
                })
                .collect()
        });
        let theirs = (x.as_tensor() * Tensor::from_vec(keep, x.shape(), &Device::Cpu)?)?;
        let flat = |t: &Tensor| t.flatten_all()?.to_vec1::<f32>();
        assert_eq!(flat(&ours)?, flat(&theirs)?);
        let g1 = (ours * &probe)?.sum_all()?.backward()?;
        let g2 = (theirs * &probe)?.sum_all()?.backward()?;
        let (g1, g2) = (
            g1.get(x.as_tensor()).expect("grad"),
            g2.get(x.as_tensor()).expect("grad"),
        );
        assert_eq!(flat(g1)?, flat(g2)?);
        assert!(flat(g1)?.contains(&0.0), "some gradients are dropped");
        Ok(())
    }
}
