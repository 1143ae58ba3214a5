//! Release-build throughput of the encoder against PyTorch (`lexbench_bench::harness`):
//!
//!     LEXBENCH_PYTHON=/tmp/refenv/bin/python cargo bench -p lexbench-bench --bench encoder
//!
//! MiniLM from `models/minilm` (or `$LEXBENCH_MODELS/minilm`; run scripts/fetch-models first), 256
//! passages truncated to 128 tokens, batch 32, all cores. Without `LEXBENCH_PYTHON` the PyTorch side is
//! tried with `python3`.

use std::path::PathBuf;

use lexbench_bench::harness::{self as bench, BenchSettings};

/// glibc's allocator with large blocks in transparent huge pages, as `lexbench` runs (engine's `heap`).
#[global_allocator]
static ALLOCATOR: lexbench_engine::heap::HugePages = lexbench_engine::heap::HugePages;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let models = std::env::var_os("LEXBENCH_MODELS").map_or_else(|| root.join("models"), PathBuf::from);
    let python = std::env::var("LEXBENCH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_encoder.py");
    let device = match lexbench_baselines::default_device() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("encoder bench: {}", lexbench_core::error::chain(&e));
            std::process::exit(2);
        }
    };
    match bench::run(
        &models.join("minilm"),
        &device,
        Some(&python),
        &script,
        &BenchSettings::default(),
    ) {
        Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
        Err(e) => {
            eprintln!(
                "encoder bench: {} (run scripts/fetch-models first)",
                lexbench_core::error::chain(&e)
            );
            std::process::exit(2);
        }
    }
}
