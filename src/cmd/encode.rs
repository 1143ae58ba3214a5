//! `lexbench encode`: embeddings of the given texts as one JSON array (one array of floats per text),
//! for checking the encoder against other implementations.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use lexbench_baselines::encoder::{EncodeOptions, Pooling, SentenceEncoder};

use crate::cmd::args::ModelDevice;

/// Pooling of token states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PoolingArg {
    /// Mean over the attention mask.
    Mean,
    /// The `[CLS]` token.
    Cls,
}

/// Arguments of `lexbench encode`.
#[derive(Debug, Args)]
pub struct EncodeArgs {
    #[command(flatten)]
    pub encoder: ModelDevice,
    /// Pooling.
    #[arg(long, value_enum, default_value = "mean")]
    pub pooling: PoolingArg,
    /// L2-normalise the vectors.
    #[arg(long)]
    pub normalize: bool,
    /// Truncation length in tokens (special tokens included).
    #[arg(long, default_value_t = 256)]
    pub max_len: usize,
    /// The texts.
    #[arg(required = true)]
    pub texts: Vec<String>,
}

/// Prints the embeddings of `args.texts`.
pub fn cmd_encode(args: &EncodeArgs) -> Result<ExitCode> {
    let options = EncodeOptions {
        max_len: args.max_len,
        pooling: match args.pooling {
            PoolingArg::Mean => Pooling::Mean,
            PoolingArg::Cls => Pooling::Cls,
        },
        normalize: args.normalize,
        batch_size: 32,
    };
    let device = args.encoder.device.device()?;
    let enc = SentenceEncoder::from_dir(&args.encoder.model, &device, options)
        .with_context(|| format!("loading the model in {}", args.encoder.model.display()))?;
    let texts: Vec<&str> = args.texts.iter().map(String::as_str).collect();
    let vecs = enc.embed(&texts)?;
    println!("{}", serde_json::to_string(&vecs)?);
    Ok(ExitCode::SUCCESS)
}
