//! Weights a checkpoint lacks (a new ColBERT projection, a cross-encoder head), drawn from a fixed
//! seed: the same "new" weights on every machine and every run.

/// The seed of the weights a checkpoint lacks (see [`seeded_normal`]).
pub const SEED: u64 = 20_261_122;

/// A `(rows, cols)` matrix of N(0, stdev²) values from a fixed seed (SplitMix64 + Box–Muller): the
/// same "new" weights on every machine and every run, unlike a `VarMap`'s thread-local generator.
pub fn seeded_normal(rows: usize, cols: usize, stdev: f64, seed: u64) -> Vec<f32> {
    let mut rng = lexbench_core::rng::SplitMix64::new(seed);
    let mut unit = || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..rows * cols)
        .map(|_| {
            let (u, v) = (unit(), unit());
            ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos() * stdev) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Properties: seeded weights are the same for the same seed, differ for another, and have the
    //! requested mean and spread.
    use super::*;

    #[test]
    fn seeded_normal_is_reproducible_and_normal() {
        let a = seeded_normal(64, 100, 0.5, 7);
        assert_eq!(a, seeded_normal(64, 100, 0.5, 7));
        assert_ne!(a, seeded_normal(64, 100, 0.5, 8));
        let n = a.len() as f64;
        let mean = a.iter().map(|x| f64::from(*x)).sum::<f64>() / n;
        let sd = (a.iter().map(|x| (f64::from(*x) - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((sd - 0.5).abs() < 0.02, "sd {sd}");
    }
}
