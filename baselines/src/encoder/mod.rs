//! The BERT encoder (and the RoBERTa family): configuration, model with PEFT hooks, tokenisation,
//! pooling.
//!
//! - [`BertConfig`] reads `config.json`; [`Arch`] is the architecture it names (BERT, DPR, RoBERTa,
//!   CamemBERT, XLM-R; any other is refused); [`BertModel`] mirrors HF tensor names and takes
//!   `forward_t(inputs, train)` with real dropout.
//! - [`peft`]: LoRA ([`LoraConfig`]), bottleneck adapters ([`AdapterConfig`]), prefixes
//!   ([`PrefixConfig`]).
//! - [`TextTokenizer`] + [`pad_batch`]: explicit truncation, longest-in-batch padding;
//!   [`TextPrefixes`]: E5's `query: ` / `passage: ` before the texts.
//! - [`pool`] and [`l2_normalize`]: mean or max (over the attention mask) or `[CLS]` pooling.
//! - [`st`]: a sentence-transformers folder's modules (`modules.json`: pooling, Dense, LayerNorm,
//!   Normalize; `max_seq_length`), which [`SentenceEncoder`] runs after the transformer.
//! - [`files`]: a PEFT folder's `adapter_config.json` and weights; [`seeded`]: weights a checkpoint
//!   lacks, from a fixed seed.
//! - [`hier`]: the hierarchical article encoder (segments → BERT `[CLS]` → transformer → max-pool).
//! - [`weights`]: the weight files a folder may hold (safetensors only; a pickle is refused unread,
//!   [`pickle_check`]); [`arch`] and [`config`]: `config.json`.
//!
//! Model code only: the obtainable checkpoints are `crate::checkpoints`, the embedding cache
//! `crate::rank::cache`, the kernels below candle `lexbench-engine`, the benchmarks `lexbench-bench`.

pub mod arch;
pub mod bert;
pub mod config;
pub mod files;
pub mod hier;
pub mod peft;
pub mod pickle_check;
pub mod seeded;
pub mod st;
pub mod tokenize;
pub mod weights;

pub use arch::Arch;
pub use bert::{BertModel, Inputs};
pub use config::{BertConfig, HiddenAct};
pub use peft::{AdapterActivation, AdapterConfig, LinearKind, LoraConfig, PrefixConfig};
pub use tokenize::{TextPrefixes, TextTokenizer, Tokens, forward_by_length, pad_batch};

use candle_core::{D, DType, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// How a sequence of hidden states becomes one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Mean over the tokens the attention mask keeps (sentence-transformers' default).
    Mean,
    /// The `[CLS]` (first) token's state (DPR, ANCE).
    Cls,
    /// The largest value of each dimension over the tokens the attention mask keeps
    /// (sentence-transformers' `pooling_mode_max_tokens`).
    Max,
}

impl std::fmt::Display for Pooling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Mean => "mean",
            Self::Cls => "cls",
            Self::Max => "max",
        })
    }
}

impl std::str::FromStr for Pooling {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "mean" => Ok(Self::Mean),
            "cls" => Ok(Self::Cls),
            "max" => Ok(Self::Max),
            _ => Err(crate::Error::Param(format!(
                "unknown pooling {s:?} (mean, cls or max)"
            ))),
        }
    }
}

/// Pools `hidden` (`(b, s, h)`) with `mask` (`(b, s)`, 1 = token) to `(b, h)`.
pub fn pool(hidden: &Tensor, mask: &Tensor, pooling: Pooling) -> Result<Tensor> {
    match pooling {
        Pooling::Cls => Ok(hidden.narrow(1, 0, 1)?.squeeze(1)?),
        Pooling::Mean => {
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let sum = hidden.broadcast_mul(&m)?.sum(1)?;
            // sentence-transformers clamps the count at 1e-9.
            let count = m.sum(1)?.clamp(1e-9, f64::INFINITY)?;
            Ok(sum.broadcast_div(&count)?)
        }
        Pooling::Max => st::max_pool(hidden, mask),
    }
}

/// Divides each row of `x` (`(b, h)`) by its L2 norm (at least 1e-12, as torch's `normalize`).
pub fn l2_normalize(x: &Tensor) -> Result<Tensor> {
    let norm = x
        .sqr()?
        .sum_keepdim(D::Minus1)?
        .sqrt()?
        .clamp(1e-12, f64::INFINITY)?;
    Ok(x.broadcast_div(&norm)?)
}

/// Options of [`SentenceEncoder`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncodeOptions {
    /// Truncation length in tokens, special tokens included (default 256, sentence-transformers'
    /// `max_seq_length` for all-MiniLM-L6-v2).
    #[serde(default = "default_max_len")]
    pub max_len: usize,
    /// Pooling; `None` (the default): the model's ([`st::default_pooling`]: its
    /// sentence-transformers `Pooling` module's, `[CLS]` for DPR, else the mean). A pooling that
    /// contradicts the folder's `Pooling` module is an error ([`SentenceEncoder::from_dir`]).
    #[serde(default)]
    pub pooling: Option<Pooling>,
    /// L2-normalise the vectors (default true). A folder whose modules end with `Normalize` gives
    /// unit vectors either way (the module is part of the model).
    #[serde(default = "default_true")]
    pub normalize: bool,
    /// Texts per forward pass (default 32).
    #[serde(default = "default_batch")]
    pub batch_size: usize,
}

fn default_max_len() -> usize {
    256
}
fn default_true() -> bool {
    true
}
fn default_batch() -> usize {
    32
}

impl Default for EncodeOptions {
    fn default() -> Self {
        Self {
            max_len: default_max_len(),
            pooling: None,
            normalize: default_true(),
            batch_size: default_batch(),
        }
    }
}

/// A bi-encoder over a HF folder: tokenise, batch (texts sorted by length so batches carry little
/// padding), encode, pool, run the folder's sentence-transformers modules ([`st`]), optionally
/// normalise; vectors come back in input order.
#[derive(Debug, Clone)]
pub struct SentenceEncoder {
    model: BertModel,
    tokenizer: TextTokenizer,
    options: EncodeOptions,
    pooling: Pooling,
    modules: Option<st::StModules>,
}

impl SentenceEncoder {
    /// Loads `config.json`, `model.safetensors` and `tokenizer.json` from `dir`, and its
    /// sentence-transformers modules when it has them ([`st`]). The pooling is the modules' (an
    /// `options.pooling` contradicting it is an error naming the `Pooling` module's file), else
    /// `options.pooling`, else [`st::default_pooling`].
    pub fn from_dir(
        dir: &std::path::Path,
        device: &candle_core::Device,
        options: EncodeOptions,
    ) -> Result<Self> {
        if options.batch_size == 0 {
            return Err(crate::Error::Param("batch_size must be at least 1, got 0".into()));
        }
        let model = BertModel::from_dir(dir, device)?;
        let modules = st::StModules::read(dir, device)?;
        let pooling = match (&modules, options.pooling) {
            (Some(m), Some(asked)) if asked != m.pooling() => {
                return Err(crate::Error::Format {
                    path: m.pooling_file().to_owned(),
                    message: format!(
                        "the model pools with {} (its sentence-transformers Pooling module), but {} pooling was \
                         asked for: leave the pooling out to use the model's",
                        m.pooling(),
                        asked
                    ),
                });
            }
            (Some(m), _) => m.pooling(),
            (None, Some(asked)) => asked,
            (None, None) => st::default_pooling(dir)?,
        };
        // RoBERTa-family models take fewer tokens than they have position rows (BertConfig::max_tokens).
        let max_len = options.max_len.min(model.config().max_tokens());
        let tokenizer = TextTokenizer::from_file(&dir.join("tokenizer.json"), max_len)?;
        Ok(Self {
            model,
            tokenizer,
            options: EncodeOptions {
                pooling: Some(pooling),
                ..options
            },
            pooling,
            modules,
        })
    }

    /// The pooling the encoder applies (the model's, or the one asked for).
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// The folder's sentence-transformers modules, when it has them.
    pub fn modules(&self) -> Option<&st::StModules> {
        self.modules.as_ref()
    }

    /// The model.
    pub fn model(&self) -> &BertModel {
        &self.model
    }

    /// The model, mutable (PEFT hooks, fast paths).
    pub fn model_mut(&mut self) -> &mut BertModel {
        &mut self.model
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The options.
    pub fn options(&self) -> &EncodeOptions {
        &self.options
    }

    /// Encodes already tokenised sequences (one batch) to `(b, h)`.
    pub fn encode_tokens(&self, seqs: &[&Tokens]) -> Result<Tensor> {
        let inputs = pad_batch(seqs, self.tokenizer.pad_id(), self.model.device())?;
        let hidden = self.model.forward_t(&inputs, false)?;
        let mut v = pool(&hidden, &inputs.attention_mask, self.pooling)?;
        if let Some(m) = &self.modules {
            v = m.apply(&v)?;
        }
        if self.options.normalize {
            l2_normalize(&v)
        } else {
            Ok(v)
        }
    }

    /// One vector per text, in input order. A vector holding a NaN or an infinity (weights or
    /// activations that overflow) is an error naming the text, never a vector.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let toks = self.tokenizer.encode(texts)?;
        let mut order: Vec<usize> = (0..toks.len()).collect();
        order.sort_by_key(|&i| (toks[i].ids.len(), i));
        let mut out = vec![Vec::new(); toks.len()];
        for chunk in order.chunks(self.options.batch_size) {
            let seqs: Vec<&Tokens> = chunk.iter().map(|&i| &toks[i]).collect();
            let rows = self.encode_tokens(&seqs)?.to_vec2::<f32>()?;
            for (&i, row) in chunk.iter().zip(rows) {
                check_finite_vector(&row, i, texts[i])?;
                out[i] = row;
            }
        }
        Ok(out)
    }
}

/// Refuses the embedding `v` of text `index` (`text`) when it holds a NaN or an infinity.
pub(crate) fn check_finite_vector(v: &[f32], index: usize, text: &str) -> Result<()> {
    let Some((dim, x)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) else {
        return Ok(());
    };
    let shown: String = text.chars().take(40).collect();
    let more = if shown.len() < text.len() { "…" } else { "" };
    Err(crate::Error::data(
        "the model's embeddings",
        format!(
            "text {} ({shown:?}{more}) has a non-finite embedding ({x} at dimension {dim}): the model's weights or \
             activations overflow; nothing is written",
            index + 1
        ),
    ))
}
