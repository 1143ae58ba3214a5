//! `lexbench bench-encoder`: passages per second of the candle encoder and, in the same run, of
//! PyTorch on the same model folder, passages, batch size, truncation and thread count
//! (`lexbench_baselines::encoder::bench`). Built in the dev profile the figures are those of the dev build
//! (candle and gemm at opt-level 3, the rest not); `cargo bench -p lexbench-baselines --bench
//! encoder` runs the same measurement in a release build.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use lexbench_baselines::encoder::bench::{self, BenchSettings};

use crate::cmd::args::DeviceArg;

/// Arguments of `lexbench bench-encoder`.
#[derive(Debug, Args)]
pub struct BenchEncoderArgs {
    /// A HuggingFace BERT folder.
    #[arg(long, default_value = "models/minilm")]
    pub model: PathBuf,
    /// Number of passages (each long enough to be truncated to `--max-len` tokens).
    #[arg(long, default_value_t = 256)]
    pub passages: usize,
    /// Passages per forward pass.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Truncation length in tokens.
    #[arg(long, default_value_t = 128)]
    pub max_len: usize,
    /// Timed repetitions; the best is reported.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// The Python with torch and sentence-transformers for the comparison.
    #[arg(long, env = "LEXBENCH_PYTHON", default_value = "python3")]
    pub python: String,
    /// Skip the PyTorch measurement.
    #[arg(long)]
    pub no_python: bool,
    /// Also time one DPR training step (batch 8 × query + 1 positive + 5 negatives of `--max-len`
    /// tokens, backward, AdamW) against PyTorch's (scripts/bench_train_step.py).
    #[arg(long)]
    pub train_step: bool,
    /// Only the training step (implies `--train-step`).
    #[arg(long)]
    pub train_step_only: bool,
    // Where candle runs; the PyTorch side always runs on the CPU (scripts/bench_encoder.py).
    #[command(flatten)]
    pub device: DeviceArg,
}

/// Runs the benchmark and prints the figures.
pub fn cmd_bench_encoder(args: &BenchEncoderArgs) -> Result<ExitCode> {
    let settings = BenchSettings {
        passages: args.passages,
        batch: args.batch,
        max_len: args.max_len,
        repeats: args.repeats,
        ..BenchSettings::default()
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_encoder.py");
    let python = (!args.no_python).then_some(args.python.as_str());
    let device = args.device.device()?;
    if !args.train_step_only {
        let lines = bench::run(&args.model, &device, python, &script, &settings)
            .with_context(|| format!("benchmarking {}", args.model.display()))?;
        for l in lines {
            println!("{l}");
        }
    }
    if args.train_step || args.train_step_only {
        use lexbench_baselines::train::bench::{StepSettings, run as run_step};
        let steps = StepSettings {
            max_len: args.max_len,
            steps: args.repeats,
            ..StepSettings::default()
        };
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_train_step.py");
        let lines = run_step(&args.model, &device, python, &script, &steps)
            .with_context(|| format!("benchmarking a training step of {}", args.model.display()))?;
        for l in lines {
            println!("{l}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
