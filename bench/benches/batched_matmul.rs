//! candle's batched matmul at attention's shapes in a training step (MiniLM: 56 sequences × 12 heads
//! of 128 tokens, 32 dimensions a head): scores `q · kᵀ` and context `p · v`, each 672 products of
//! about 0.5 M multiply-adds, small enough to run one product per thread. Before the patch in
//! `vendor/candle-core` (`LEXBENCH.md` there) every product of such a batch ran on one core; now the
//! batch is spread over the cores. Compare two builds with criterion's baselines:
//!
//!     cargo bench -p lexbench-bench --bench batched_matmul -- --save-baseline before   # one build
//!     cargo bench -p lexbench-bench --bench batched_matmul -- --baseline before        # the other

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;

use candle_core::{Device, Tensor};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const SEQUENCES: usize = 56;
const HEADS: usize = 12;
const TOKENS: usize = 128;
const HEAD_DIM: usize = 32;

/// glibc's allocator with large blocks in transparent huge pages, as `lexbench` runs (engine's `heap`).
#[global_allocator]
static ALLOCATOR: lexbench_engine::heap::HugePages = lexbench_engine::heap::HugePages;

fn tensor(dims: (usize, usize, usize, usize), seed: f32) -> Tensor {
    let n = dims.0 * dims.1 * dims.2 * dims.3;
    let values: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37 + seed).sin()).collect();
    Tensor::from_vec(values, dims, &Device::Cpu).expect("a tensor of the stated shape")
}

fn products(c: &mut Criterion) {
    let q = tensor((SEQUENCES, HEADS, TOKENS, HEAD_DIM), 0.1);
    let k = tensor((SEQUENCES, HEADS, TOKENS, HEAD_DIM), 0.7);
    let p = tensor((SEQUENCES, HEADS, TOKENS, TOKENS), 1.3);
    let kt = k.t().expect("a transposed view");
    let flop = 2 * SEQUENCES * HEADS * TOKENS * TOKENS * HEAD_DIM;
    let mut g = c.benchmark_group("batched matmul, 56 × 12 products");
    g.throughput(Throughput::Elements(flop as u64));
    g.sample_size(20);
    g.bench_function("q·kᵀ (128×32 · 32×128)", |b| {
        b.iter(|| black_box(q.matmul(black_box(&kt)).expect("q·kᵀ")))
    });
    g.bench_function("p·v (128×128 · 128×32)", |b| {
        b.iter(|| black_box(p.matmul(black_box(&k)).expect("p·v")))
    });
    g.finish();
}

criterion_group!(benches, products);
criterion_main!(benches);
