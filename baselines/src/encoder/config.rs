//! `config.json` of a HuggingFace BERT or RoBERTa-family folder ([`super::arch`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::arch::Arch;
use crate::error::{Error, Result};

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

/// The subset of a BERT or RoBERTa-family `config.json` the encoder reads; other keys are ignored
/// (checkpoints carry many, e.g. `transformers_version`). `model_type` and `architectures` say which
/// architecture it is ([`BertConfig::arch`]); configs with neither are BERT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    /// HuggingFace's `model_type` (`bert`, `roberta`, …); absent in lexbench's older folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
    /// The model classes that saved the checkpoint (`BertModel`, `RobertaForMaskedLM`, …).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub architectures: Vec<String>,
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
    /// DPR's projection after `[CLS]` (`encode_proj`); only 0 (none, as every released DPR
    /// checkpoint) is supported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub projection_dim: usize,
}

/// `"architectures": null` (written by transformers for a config saved without a model class) is
/// no class.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
    /// Reads and validates `config.json`. The architecture is checked first: a `config.json` of a
    /// model lexbench does not run (`gpt2`) is refused for its `model_type`, not for a missing size.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = crate::encoder::files::read_model_text(path, crate::encoder::files::MAX_MODEL_JSON_BYTES)?;
        let json_err = |source| Error::Json {
            path: path.to_owned(),
            source,
        };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(json_err)?;
        let model_type = value.get("model_type").and_then(|v| v.as_str());
        let classes: Vec<String> = value
            .get("architectures")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|c| c.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        Arch::resolve(model_type, &classes).map_err(|message| Error::Format {
            path: path.to_owned(),
            message,
        })?;
        let cfg: Self = serde_json::from_value(value).map_err(json_err)?;
        cfg.validate().map_err(|e| Error::Format {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Ok(cfg)
    }

    /// The architecture `model_type` and `architectures` name ([`Arch::resolve`]).
    pub fn arch(&self) -> Result<Arch> {
        Arch::resolve(self.model_type.as_deref(), &self.architectures).map_err(Error::Param)
    }

    /// The longest input in tokens, special tokens included: `max_position_embeddings`, less
    /// `pad_token_id + 1` for the RoBERTa family, whose positions start after the padding index
    /// (514 rows → 512 tokens for roberta-base).
    pub fn max_tokens(&self) -> usize {
        match self.arch() {
            Ok(a) if a.is_roberta_family() => self
                .max_position_embeddings
                .saturating_sub(self.pad_token_id as usize + 1),
            _ => self.max_position_embeddings,
        }
    }

    /// Checks that the shapes are consistent and the options supported.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Param(m));
        let arch = self.arch()?;
        if arch.is_roberta_family() && self.max_position_embeddings <= self.pad_token_id as usize + 1 {
            return bad(format!(
                "max_position_embeddings {} leaves no position after pad_token_id {} ({arch} positions start \
                 at pad_token_id + 1)",
                self.max_position_embeddings, self.pad_token_id
            ));
        }
        if self.projection_dim != 0 {
            return bad(format!(
                "projection_dim {} is not supported (DPR's projection after [CLS]; only 0)",
                self.projection_dim
            ));
        }
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
            model_type: None,
            architectures: Vec::new(),
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
            projection_dim: 0,
        }
    }

    /// [`BertConfig::tiny`] as a RoBERTa: `model_type` `roberta`, padding index 1, positions after
    /// it (66 rows: 64 tokens), one token type, layer-norm epsilon 1e-5.
    pub fn tiny_roberta() -> Self {
        Self {
            model_type: Some("roberta".into()),
            architectures: vec!["RobertaModel".into()],
            max_position_embeddings: 66,
            type_vocab_size: 1,
            layer_norm_eps: 1e-5,
            pad_token_id: 1,
            ..Self::tiny()
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked: `config.json` files of the architectures lexbench runs parse (with
    //! `architectures` absent or null); any other `model_type` is refused naming the file and the
    //! model type before its missing sizes are; `max_tokens` leaves the RoBERTa family's padding
    //! index and the position before it out.
    use super::*;

    fn write(name: &str, json: &serde_json::Value) -> std::path::PathBuf {
        let dir = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-config-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("config.json");
        std::fs::write(&path, json.to_string()).expect("write");
        path
    }

    fn sizes(extra: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::json!({
            "vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 64, "max_position_embeddings": 514,
        });
        for (k, x) in extra.as_object().expect("object") {
            v[k] = x.clone();
        }
        v
    }

    #[test]
    fn configs_of_supported_models_parse() {
        let cfg = BertConfig::from_file(&write("null", &sizes(serde_json::json!({"architectures": null}))))
            .expect("null architectures");
        assert_eq!(cfg.arch().expect("arch"), Arch::Bert);
        assert_eq!(cfg.max_tokens(), 514);
        let roberta = sizes(serde_json::json!({"model_type": "xlm-roberta", "pad_token_id": 1,
            "architectures": ["XLMRobertaModel"], "type_vocab_size": 1, "layer_norm_eps": 1e-5}));
        let cfg = BertConfig::from_file(&write("xlmr", &roberta)).expect("xlm-roberta");
        assert_eq!(cfg.arch().expect("arch"), Arch::XlmRoberta);
        assert_eq!((cfg.max_tokens(), cfg.layer_norm_eps), (512, 1e-5));
    }

    #[test]
    fn other_model_types_are_refused_naming_the_file() {
        for t in ["gpt2", "t5", "deberta-v2"] {
            let path = write(t, &serde_json::json!({"model_type": t, "n_embd": 32}));
            let e = BertConfig::from_file(&path).expect_err(t).to_string();
            assert!(
                e.starts_with(&format!(
                    "{}: model_type {t:?} is not supported (lexbench reads bert",
                    path.display()
                )),
                "{e}"
            );
        }
        let path = write(
            "dpr-proj",
            &sizes(serde_json::json!({"model_type": "dpr", "projection_dim": 128})),
        );
        let e = BertConfig::from_file(&path).expect_err("projection").to_string();
        assert!(e.contains("projection_dim 128 is not supported"), "{e}");
    }
}
