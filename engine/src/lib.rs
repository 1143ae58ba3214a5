//! lexbench's CPU engine: what the models run on below candle's tensor API.
//!
//! - [`kernels`]: fused CPU kernels (linear with its bias in the product, residual + layer norm,
//!   attention per (sequence, head), GELU, softmax; three with a backward pass) on lexbench's
//!   matrix products (`lexbench-gemm`, which candle's CPU matmul runs too);
//! - [`gelu`]: GELU with bias in one pass, for inference;
//! - [`dropout`]: dropout with masks from a seeded generator, the same on every thread count;
//! - [`adamw`]: AdamW's update in place, the tensor path's operations one for one;
//! - [`pool`]: work split over candle's barrier pool;
//! - [`heap`]: the allocator policy a program sets at its start;
//! - [`peak`]: the FMA burn the benchmark harness times for the FP32 peak.
//!
//! One instruction-set choice for all: [`Isa`] (`lexbench-gemm`'s), the widest the CPU has, capped by
//! `LEXBENCH_ISA=avx512|avx2|portable` for the products and the kernels alike. Every path gives the
//! same bits: the products by construction (their docs), the element-wise kernels because each is
//! the same generic code compiled for each path, lane for lane (tested in [`kernels`]).
//!
//! This crate and `lexbench-gemm` are the only library code of the workspace that may use `unsafe`
//! (`baselines/tests/layers.rs` lists the files, with the benchmark harness's rate example;
//! `lexbench-baselines` forbids it): the products' entry point over raw strided pointers,
//! `#[target_feature]` functions on the detected CPU, and glibc's `mallopt`.

pub mod adamw;
pub mod dropout;
pub mod gelu;
pub mod heap;
pub mod kernels;
pub mod peak;
pub mod pool;

pub use lexbench_gemm::Isa;
