//! The files of a model folder that are lexbench's own, beside HuggingFace's `config.json`,
//! `model.safetensors` and tokenizer files: a PEFT folder's `adapter_config.json` ([`AdapterFile`])
//! and `adapter_model.safetensors`, how to tell which weights file a folder holds and whether it
//! carries a hierarchical article encoder, and the text prefixes a folder trained here must be ranked
//! with ([`ranking_prefixes`], from its [`TRAINING_RECORD`]). Written by `train::export`, read by [`super::BertModel`],
//! the scorers and the ranking layer.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TextPrefixes;
use super::peft::PeftConfig;
use crate::error::{Error, Result, io_err};

/// The PEFT folder's description (`adapter_config.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterFile {
    /// The method and its settings.
    pub peft: PeftConfig,
    /// The base model's folder, absolute.
    pub base_model: PathBuf,
    /// sha256 of the base's `model.safetensors`: loading refuses another base.
    pub base_sha256: String,
    /// Trainable parameters and the whole model's.
    pub trainable_params: usize,
    /// Parameters of the whole model.
    pub total_params: usize,
}

/// The file name of the PEFT description.
pub const ADAPTER_CONFIG: &str = "adapter_config.json";
/// The file name of the PEFT weights.
pub const ADAPTER_WEIGHTS: &str = "adapter_model.safetensors";

/// A folder trained here records how (`train::export` writes it): `{"config": <the training
/// configuration>, …}`. Distinct from [`super::models::RECORD_FILE`], the install record of a fetched
/// checkpoint.
pub const TRAINING_RECORD: &str = "lexbench-training.json";

/// The text prefixes a model folder was trained with (`config.data.query_prefix` and
/// `passage_prefix` of its [`TRAINING_RECORD`]; absent = none); `None` for a folder not trained here.
pub fn trained_prefixes(dir: &Path) -> Result<Option<TextPrefixes>> {
    let path = dir.join(TRAINING_RECORD);
    if !path.is_file() {
        return Ok(None);
    }
    let record: serde_json::Value = lexbench_core::io::read_json(&path)?;
    let data = &record["config"]["data"];
    let field = |key: &str| -> Result<String> {
        match &data[key] {
            serde_json::Value::Null => Ok(String::new()),
            serde_json::Value::String(s) => Ok(s.clone()),
            other => Err(Error::Format {
                path: path.clone(),
                message: format!("config.data.{key} is {other}, not a string"),
            }),
        }
    };
    Ok(Some(TextPrefixes {
        query: field("query_prefix")?,
        passage: field("passage_prefix")?,
    }))
}

/// The prefixes to rank with the model in `dir`: for a folder trained here, the ones it was trained
/// with — a prefix `asked` leaves empty is taken from training, one that differs from training's is
/// refused (the model learned to read the other); for any other folder, `asked`.
pub fn ranking_prefixes(dir: &Path, asked: &TextPrefixes) -> Result<TextPrefixes> {
    let Some(trained) = trained_prefixes(dir)? else {
        return Ok(asked.clone());
    };
    for (what, asked, trained) in [
        ("query", &asked.query, &trained.query),
        ("passage", &asked.passage, &trained.passage),
    ] {
        if !asked.is_empty() && asked != trained {
            let how = if trained.is_empty() {
                format!("without a {what} prefix")
            } else {
                format!("with the {what} prefix {trained:?}")
            };
            return Err(Error::Param(format!(
                "{}: trained {how} ({TRAINING_RECORD}), asked to rank with {asked:?}: a trained folder \
                 ranks with its training prefixes; leave the {what} prefix out",
                dir.display()
            )));
        }
    }
    Ok(trained)
}

/// The weights file of a model folder: `model.safetensors`, or a PEFT folder's
/// `adapter_model.safetensors` (which holds any trained head).
pub fn weights_file(dir: &Path) -> PathBuf {
    let full = dir.join("model.safetensors");
    let peft = dir.join(ADAPTER_WEIGHTS);
    if !full.is_file() && peft.is_file() {
        peft
    } else {
        full
    }
}

/// Whether a model folder's weights hold a hierarchical article encoder's `hier.…` tensors (reads
/// the safetensors header only).
pub fn has_hier_tensors(dir: &Path) -> Result<bool> {
    use std::io::Read;
    let path = weights_file(dir);
    let Ok(mut f) = std::fs::File::open(&path) else {
        return Ok(false);
    };
    let mut len = [0u8; 8];
    if f.read_exact(&mut len).is_err() {
        return Ok(false);
    }
    let n = u64::from_le_bytes(len);
    if n > 100 << 20 {
        return Ok(false);
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(io_err(&path))?;
    let Ok(v) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&header) else {
        return Ok(false);
    };
    Ok(v.keys().any(|k| k.starts_with("hier.")))
}

/// The subfolder of a bi-encoder trained with separate encoders that holds its query encoder (the
/// folder itself holds the passage encoder).
pub const QUERY_ENCODER_DIR: &str = "query_encoder";
