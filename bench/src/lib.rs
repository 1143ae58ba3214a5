//! lexbench's benchmark harness: the encoder, its scorers and one training step against PyTorch and
//! ONNX Runtime on the same machine, in the same run, engines alternating (the `lexbench-bench`
//! binary, `src/main.rs`), and the criterion benches of the engine (`benches/`).
//!
//! - [`machine`]: the CPU, the vector path the products take, the measured clock and FMA throughput,
//!   the FP32 peak; heads every report;
//! - [`harness`]: tasks, the Python side (`bench/scripts/bench_encoder.py`), alternation, the report;
//! - [`real`]: real paragraphs through `run dense`'s batching against sentence-transformers;
//! - [`gemm`]: one layer's matrix products alone at the encoder's shapes;
//! - [`train_step`]: one DPR training step against PyTorch's (`scripts/bench_train_step.py`).
//!
//! `docs/performance.md` (in the repository) gives the current figures per CPU and how to measure
//! them; `LOG.md` beside this crate keeps the dated measurements that led there.

pub mod gemm;
pub mod harness;
pub mod machine;
pub mod real;
pub mod train_step;
