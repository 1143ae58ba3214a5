//! The linear layers' matrix products of a MiniLM training step on the CPU, as the step calls them
//! (candle's `matmul`, which runs `lexbench-gemm` over candle's barrier pool): rows 56 sequences × 128 tokens
//! (8 examples × 7 texts), the three weight shapes of a layer (384 → 384: the query, key, value and
//! output projections; 384 → 1536 up; 1536 → 384 down), each in the three roles of a step: forward
//! `x · wᵀ`, the input's gradient `g · w`, the weight's gradient `gᵀ · x` (a transposed lhs, a
//! reduction over all 7,168 rows). Throughput is FLOP/s (2·M·N·K). Run it with one thread and with
//! all of them to see how each product scales:
//!
//!     RAYON_NUM_THREADS=1 cargo bench -p lexbench-bench --bench linear_products
//!     cargo bench -p lexbench-bench --bench linear_products
//!
//! Measured (2026-11-27, 2-core AMD EPYC Zen 4, AVX-512 double-pumped, peak ≈ 230 GFLOP/s on two
//! threads): one thread 85–104 GFLOP/s (74–90 % of a core); two threads 154–186 on the forward and
//! input-gradient products, 140–180 on the weight gradients (docs/performance.md).

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;

use candle_core::{Device, Tensor};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const ROWS: usize = 56 * 128;
const SHAPES: [(usize, usize); 3] = [(384, 384), (384, 1536), (1536, 384)];

/// glibc's allocator with large blocks in transparent huge pages, as `lexbench` runs (engine's `heap`).
#[global_allocator]
static ALLOCATOR: lexbench_engine::heap::HugePages = lexbench_engine::heap::HugePages;

fn tensor(rows: usize, cols: usize, seed: f32) -> Tensor {
    let values: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.37 + seed).sin()).collect();
    Tensor::from_vec(values, (rows, cols), &Device::Cpu).expect("a tensor of the stated shape")
}

fn products(c: &mut Criterion) {
    // As the encoder runs (`bert.rs`): freed buffers are reused, not mapped afresh with page faults.
    lexbench_engine::heap::keep_freed_memory();
    let threads = candle_core::utils::get_num_threads();
    for (inp, out) in SHAPES {
        let x = tensor(ROWS, inp, 0.1);
        let w = tensor(out, inp, 0.7);
        let g = tensor(ROWS, out, 1.3);
        let wt = w.t().expect("a transposed view");
        let gt = g.t().expect("a transposed view");
        let flop = (2 * ROWS * inp * out) as u64;
        let mut group = c.benchmark_group(format!("{inp}→{out}, {ROWS} rows, {threads} threads"));
        group.throughput(Throughput::Elements(flop));
        group.sample_size(10);
        group.bench_function("forward x·wᵀ", |b| {
            b.iter(|| black_box(x.matmul(black_box(&wt)).expect("x·wᵀ")))
        });
        group.bench_function("input gradient g·w", |b| {
            b.iter(|| black_box(g.matmul(black_box(&w)).expect("g·w")))
        });
        group.bench_function("weight gradient gᵀ·x", |b| {
            b.iter(|| black_box(gt.matmul(black_box(&x)).expect("gᵀ·x")))
        });
        group.finish();
    }
}

criterion_group!(benches, products);
criterion_main!(benches);
