//! Dropout's keep mask on the CPU: the draws of one training step's largest mask (attention
//! probabilities, batch 56 × 12 heads × 128 × 128 = 11 M values, `p` = 0.1) drawn value by value from
//! SplitMix64 as dropout drew them before (`unit_f64() ≥ p`, one core), against
//! `lexbench_engine::kernels::keep_mask` (the same mask: integer compare, vectorised, split over the cores).
//! The two masks are checked equal before timing.
//!
//!     cargo bench -p lexbench-bench --bench dropout

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lexbench_core::rng::SplitMix64;
use lexbench_engine::kernels::keep_mask;

const N: usize = 56 * 12 * 128 * 128;
const P: f64 = 0.1;

fn value_by_value(seed: u64) -> Vec<bool> {
    let mut r = SplitMix64::new(seed);
    (0..N).map(|_| r.unit_f64() >= P).collect()
}

fn masks(c: &mut Criterion) {
    assert_eq!(
        value_by_value(7),
        keep_mask(SplitMix64::new(7).state(), P, N),
        "the two draws differ"
    );
    let mut g = c.benchmark_group("dropout keep mask, 11M values");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.bench_function("value by value (before)", |b| {
        b.iter(|| black_box(value_by_value(black_box(7))))
    });
    g.bench_function("keep_mask (vectorised, all cores)", |b| {
        b.iter(|| black_box(keep_mask(black_box(7), P, N)))
    });
    g.finish();
}

criterion_group!(benches, masks);
criterion_main!(benches);
