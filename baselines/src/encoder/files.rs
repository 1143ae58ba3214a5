//! The files of a model folder that are lexbench's own, beside HuggingFace's `config.json`,
//! `model.safetensors` and tokenizer files: a PEFT folder's `adapter_config.json` ([`AdapterFile`])
//! and `adapter_model.safetensors`, and how to tell which weights file a folder holds and whether it
//! carries a hierarchical article encoder. Written by `train::export`, read by [`super::BertModel`],
//! the scorers and the ranking layer.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::peft::PeftConfig;
use crate::error::{Result, io_err};

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
