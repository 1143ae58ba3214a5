//! What every neural run records beside the common sidecar fields ([`super::RunSidecar`]): the model
//! folder, its hash, the settings and the documents encoded. Zero-shot runs ([`super::dense`],
//! [`super::colbert`], [`super::cross`]) and runs of trained models (the trainer, DR+GNN, QABISAR)
//! share it; their seed is [`SEED`], the seed of any weight a checkpoint lacks (ColBERT's
//! projection, a cross-encoder head; inference itself is deterministic).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{RunOutput, RunSidecar};
use crate::checkpoints::model_hash;
pub use crate::encoder::seeded::SEED;
use crate::error::{Error, Result};

pub(crate) fn to_json<T: Serialize>(params: &T, model_dir: &Path) -> Result<serde_json::Value> {
    serde_json::to_value(params).map_err(|source| Error::Json {
        path: model_dir.to_owned(),
        source,
    })
}

/// Adds the text prefixes a run read its texts with to its sidecar's `config` (`query_prefix`,
/// `passage_prefix`, as a dense run's parameters name them), when there are any.
pub(crate) fn record_prefixes(config: &mut serde_json::Value, prefixes: &crate::encoder::TextPrefixes) {
    for (key, prefix) in [
        ("query_prefix", &prefixes.query),
        ("passage_prefix", &prefixes.passage),
    ] {
        if !prefix.is_empty() {
            config[key] = serde_json::Value::from(prefix.as_str());
        }
    }
}

pub(crate) fn hidden_size(model_dir: &Path) -> Result<usize> {
    let p = model_dir.join("config.json");
    let v: serde_json::Value = crate::encoder::files::read_model_json(&p)?;
    v["hidden_size"]
        .as_u64()
        .map(|h| h as usize)
        .ok_or_else(|| Error::Format {
            path: p,
            message: "no hidden_size".into(),
        })
}

/// The fields of a neural run's sidecar besides the common ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeuralDetails {
    /// The model folder.
    pub model: String,
    /// sha256 of the model's weights and configuration.
    pub model_hash: String,
    /// The settings (of the dense, ColBERT or cross-encoder run; of the trained model).
    pub config: serde_json::Value,
    /// Documents encoded now (dense: the rest came from the cache; cross-encoder: pairs scored).
    pub encoded_now: usize,
}

impl NeuralDetails {
    /// The details of a run of the model in `model_dir` (hashed now) with settings `config`.
    pub fn new(model_dir: &Path, config: serde_json::Value, encoded_now: usize) -> Result<Self> {
        Ok(Self {
            model: model_dir.display().to_string(),
            model_hash: model_hash(model_dir)?,
            config,
            encoded_now,
        })
    }
}

/// The sidecar of a neural run.
pub type NeuralSidecar = RunSidecar<NeuralDetails>;

/// What writing a neural run wrote.
pub type NeuralOutput = RunOutput<NeuralDetails>;
