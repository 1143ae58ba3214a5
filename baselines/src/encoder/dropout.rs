//! Dropout with masks from a seeded generator, so that training is reproducible.
//!
//! candle's CPU device cannot be seeded (`Device::Cpu.set_seed` is an error) and `candle_nn::Dropout`
//! draws its masks from a thread-local generator seeded by the operating system. Training runs that
//! must resume bit for bit draw their masks here instead: one SplitMix64 per thread, reseeded by the
//! trainer before every step ([`reseed`]), so step `n` of a resumed run sees the same masks as step `n`
//! of an uninterrupted one. Masks are drawn on the CPU and copied to the tensor's device.

use std::cell::RefCell;

use candle_core::Tensor;
use lexbench_core::rng::SplitMix64;

thread_local! {
    static RNG: RefCell<SplitMix64> = RefCell::new(SplitMix64::new(0x6c65_7862_656e_6368));
}

/// Reseeds this thread's dropout generator.
pub fn reseed(seed: u64) {
    RNG.with(|r| *r.borrow_mut() = SplitMix64::new(seed));
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

    /// Applies dropout when `train` is true.
    pub fn forward(&self, x: &Tensor, train: bool) -> candle_core::Result<Tensor> {
        if !train || self.p <= 0.0 {
            return Ok(x.clone());
        }
        let p = f64::from(self.p);
        let scale = (1.0 / (1.0 - p)) as f32;
        let n = x.elem_count();
        let mask: Vec<f32> = RNG.with(|r| {
            let mut r = r.borrow_mut();
            (0..n)
                .map(|_| if r.unit_f64() < p { 0.0 } else { scale })
                .collect()
        });
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        x * mask
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
}
