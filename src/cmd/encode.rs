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
    /// Max over the attention mask.
    Max,
}

impl From<PoolingArg> for Pooling {
    fn from(p: PoolingArg) -> Self {
        match p {
            PoolingArg::Mean => Self::Mean,
            PoolingArg::Cls => Self::Cls,
            PoolingArg::Max => Self::Max,
        }
    }
}

/// Arguments of `lexbench encode`.
#[derive(Debug, Args)]
pub struct EncodeArgs {
    #[command(flatten)]
    pub encoder: ModelDevice,
    /// Pooling [default: the model's: its sentence-transformers Pooling module's, [CLS] for DPR, else
    /// mean]. One contradicting the model's sentence-transformers modules is an error.
    #[arg(long, value_enum)]
    pub pooling: Option<PoolingArg>,
    /// L2-normalise the vectors.
    #[arg(long)]
    pub normalize: bool,
    /// Truncation length in tokens (special tokens included) [default: the model's max_seq_length
    /// (sentence_bert_config.json), else 256].
    #[arg(long)]
    pub max_len: Option<usize>,
    /// The texts.
    #[arg(required = true)]
    pub texts: Vec<String>,
}

/// Prints the embeddings of `args.texts`.
pub fn cmd_encode(args: &EncodeArgs) -> Result<ExitCode> {
    let max_len = match args.max_len {
        Some(n) => n,
        None => lexbench_baselines::encoder::st::model_max_len(&args.encoder.model)
            .with_context(|| format!("loading the model in {}", args.encoder.model.display()))?
            .unwrap_or(256),
    };
    let options = EncodeOptions {
        max_len,
        pooling: args.pooling.map(Pooling::from),
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
