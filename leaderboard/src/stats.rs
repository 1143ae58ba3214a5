//! Paired significance tests and multiple-comparison correction.
//!
//! - [`paired_randomization`]: the two-sided paired randomization (sign-flip) test of Fisher, as
//!   recommended for IR by Smucker, Allan & Carterette (CIKM 2007): under the null hypothesis each
//!   topic's difference is equally likely to have either sign; the p-value is the share of random sign
//!   assignments whose mean difference is at least as far from 0 as the observed one, with the
//!   observed assignment counted ((hits + 1) / (samples + 1), never 0). Samples come from a fixed-seed
//!   splitmix64 generator, so the same inputs give the same p-value on every machine.
//! - [`holm`]: Holm's step-down adjustment of a family of p-values (controls the family-wise error
//!   rate, uniformly more powerful than Bonferroni).
//! - [`bootstrap_ci`]: the 95 % percentile bootstrap interval of a mean over topics (Efron &
//!   Tibshirani 1993, ch. 13): [`BOOTSTRAP_SAMPLES`] resamples of the topics with replacement, the
//!   2.5th and 97.5th percentiles of their means; fixed-seed, so the same on every machine.

/// Random sign assignments drawn by [`paired_randomization`].
pub const SAMPLES: u32 = 10_000;
/// The generator's seed.
pub const SEED: u64 = 0x1e8b_e4c4_2026_1122;

use lexbench_core::rng::SplitMix64;

/// Resamples drawn by [`bootstrap_ci`].
pub const BOOTSTRAP_SAMPLES: usize = 2_000;

/// The 95 % percentile bootstrap interval of the mean of `values` (one value per topic):
/// [`BOOTSTRAP_SAMPLES`] resamples with replacement, the means sorted, the values at ranks
/// ⌊0.025·B⌋ and ⌈0.975·B⌉ − 1. `None` for no values.
pub fn bootstrap_ci(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mut rng = SplitMix64::new(SEED ^ 0xb007);
    let mut means: Vec<f64> = (0..BOOTSTRAP_SAMPLES)
        .map(|_| {
            let sum: f64 = (0..n).map(|_| values[rng.below(n)]).sum();
            sum / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let lo = BOOTSTRAP_SAMPLES * 25 / 1000;
    let hi = (BOOTSTRAP_SAMPLES * 975).div_ceil(1000) - 1;
    Some((means[lo], means[hi]))
}

/// Two-sided p-value of the paired randomization test on `a[i] − b[i]` with [`SAMPLES`] sign
/// assignments. Equal lengths are required; an empty or all-zero difference gives 1.
pub fn paired_randomization(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "paired samples");
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let observed: f64 = diffs.iter().sum::<f64>().abs();
    if diffs.is_empty() || diffs.iter().all(|d| *d == 0.0) {
        return 1.0;
    }
    // Compare sums, not means (same test); a small tolerance keeps exact ties counted as extreme.
    let tol = 1e-9 * observed.max(1e-12);
    let mut rng = SplitMix64::new(SEED);
    let mut hits = 0u32;
    for _ in 0..SAMPLES {
        let mut sum = 0.0;
        let mut bits = 0u64;
        for (i, d) in diffs.iter().enumerate() {
            if i % 64 == 0 {
                bits = rng.next_u64();
            }
            sum += if bits & 1 == 1 { *d } else { -*d };
            bits >>= 1;
        }
        if sum.abs() >= observed - tol {
            hits += 1;
        }
    }
    f64::from(hits + 1) / f64::from(SAMPLES + 1)
}

/// Holm-adjusted p-values, in the input order: sort ascending, multiply the i-th smallest (from 0) by
/// (m − i), take the running maximum, cap at 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]).then(i.cmp(&j)));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    //! Properties: Holm matches hand-worked values (and R's `p.adjust(method = "holm")`); the
    //! randomization test gives 1 for identical systems, a small p for a consistent improvement, is
    //! symmetric in its arguments and deterministic, and matches the exact test on a tiny case.
    use super::*;

    #[test]
    fn holm_hand_worked() {
        // p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert_eq!(holm(&[0.2, 0.4]), vec![0.4, 0.4]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn bootstrap_interval_covers_the_mean_and_narrows_with_topics() {
        assert_eq!(bootstrap_ci(&[]), None);
        let (a, b) = bootstrap_ci(&[0.4; 10]).unwrap();
        assert!((a - 0.4).abs() < 1e-12 && (b - 0.4).abs() < 1e-12, "{a} {b}");
        let few: Vec<f64> = (0..20).map(|i| f64::from(i % 2)).collect();
        let many: Vec<f64> = (0..2000).map(|i| f64::from(i % 2)).collect();
        let (a, b) = bootstrap_ci(&few).unwrap();
        let (c, d) = bootstrap_ci(&many).unwrap();
        assert!(a < 0.5 && 0.5 < b && c < 0.5 && 0.5 < d, "{a} {b} {c} {d}");
        assert!(
            d - c < (b - a) / 5.0,
            "2,000 topics: narrower than 20 ({a}..{b} vs {c}..{d})"
        );
        // A Bernoulli(0.5) mean over 2,000 topics: standard error 0.011, so about ±0.022.
        assert!((d - c - 0.044).abs() < 0.01, "{c}..{d}");
        assert_eq!(bootstrap_ci(&few), bootstrap_ci(&few), "seeded");
    }

    #[test]
    fn randomization_test_behaves() {
        let a = vec![0.5; 30];
        assert_eq!(paired_randomization(&a, &a), 1.0);
        let better: Vec<f64> = (0..30).map(|i| 0.5 + 0.01 * f64::from(i % 5 + 1)).collect();
        let p = paired_randomization(&better, &a);
        assert!(p < 0.001, "{p}");
        assert_eq!(p, paired_randomization(&a, &better));
        assert_eq!(p, paired_randomization(&better, &a));
        // Exact two-sided test on 3 differences (+1, +1, −1): of 8 sign patterns, |sum| ≥ 1 for all 8
        // → p = 1; on (+1, +1, +1) only 2 of 8 reach |sum| = 3 → p ≈ 0.25.
        let p = paired_randomization(&[1.0, 1.0, 1.0], &[0.0, 0.0, 0.0]);
        assert!((p - 0.25).abs() < 0.02, "{p}");
        let p = paired_randomization(&[1.0, 1.0, 0.0], &[0.0, 0.0, 1.0]);
        assert!(p > 0.99, "{p}");
    }
}
