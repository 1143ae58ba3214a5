//! `config.json` of a HuggingFace BERT folder.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io_err};

/// The activation of the feed-forward block. HuggingFace spells the tanh approximation `gelu_new` or
/// `gelu_pytorch_tanh` (candle-transformers does not parse them: MODELS.md, "Facts that bite").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenAct {
    /// Exact GELU, `x Φ(x)` with the error function (BERT, MiniLM, e5).
    Gelu,
    /// The tanh approximation of GELU.
    #[serde(alias = "gelu_new", alias = "gelu_pytorch_tanh", alias = "gelu_fast")]
    GeluTanh,
    /// `max(0, x)`.
    Relu,
}

/// The subset of a BERT `config.json` the encoder reads; other keys are ignored (checkpoints carry
/// many, e.g. `architectures`, `transformers_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    /// Vocabulary size (rows of the word-embedding matrix).
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Number of transformer layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer; divides `hidden_size`.
    pub num_attention_heads: usize,
    /// Width of the feed-forward block.
    pub intermediate_size: usize,
    /// Feed-forward activation.
    #[serde(default = "default_act")]
    pub hidden_act: HiddenAct,
    /// Dropout after embeddings, attention output and feed-forward output (training only).
    #[serde(default = "default_dropout")]
    pub hidden_dropout_prob: f32,
    /// Dropout on attention probabilities (training only).
    #[serde(default = "default_dropout")]
    pub attention_probs_dropout_prob: f32,
    /// Rows of the position-embedding matrix: the longest input the model takes.
    pub max_position_embeddings: usize,
    /// Rows of the token-type embedding matrix (2 for BERT, 1 for XLM-R style models).
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    /// Epsilon of every layer norm.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    /// Id of the padding token.
    #[serde(default)]
    pub pad_token_id: u32,
    /// Position embeddings; only `absolute` is supported.
    #[serde(default = "default_position")]
    pub position_embedding_type: String,
}

fn default_act() -> HiddenAct {
    HiddenAct::Gelu
}
fn default_dropout() -> f32 {
    0.1
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_position() -> String {
    "absolute".to_owned()
}

impl BertConfig {
    /// Reads and validates `config.json`.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(io_err(path))?;
        let cfg: Self = serde_json::from_str(&text).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })?;
        cfg.validate().map_err(|e| Error::Format {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Ok(cfg)
    }

    /// Checks that the shapes are consistent and the options supported.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Param(m));
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        for (name, p) in [
            ("hidden_dropout_prob", self.hidden_dropout_prob),
            ("attention_probs_dropout_prob", self.attention_probs_dropout_prob),
        ] {
            if !(0.0..1.0).contains(&p) {
                return bad(format!("{name} {p} is not in [0, 1)"));
            }
        }
        if self.position_embedding_type != "absolute" {
            return bad(format!(
                "position_embedding_type {:?} is not supported (only \"absolute\")",
                self.position_embedding_type
            ));
        }
        Ok(())
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// A tiny configuration for tests: 2 layers, hidden 32, 4 heads, vocabulary 100.
    pub fn tiny() -> Self {
        Self {
            vocab_size: 100,
            hidden_size: 32,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            intermediate_size: 64,
            hidden_act: HiddenAct::Gelu,
            hidden_dropout_prob: 0.1,
            attention_probs_dropout_prob: 0.1,
            max_position_embeddings: 64,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            pad_token_id: 0,
            position_embedding_type: default_position(),
        }
    }
}
