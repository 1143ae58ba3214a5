//! Trained models on disk, in formats `lexbench run` and HuggingFace tools read.
//!
//! - Full fine-tuning: a complete HF BERT folder — `model.safetensors` (every tensor, HF names;
//!   `linear.weight` for ColBERT, `classifier.*` for a cross-encoder), the base's `config.json`,
//!   tokenizer files, and `lexbench_model.json` (how it was trained).
//! - PEFT: only the trained weights — `adapter_model.safetensors` (`peft.…` tensors and any new head)
//!   — with `adapter_config.json` naming the method, its settings, the base model's folder and the
//!   sha256 of its `model.safetensors`, plus the base's `config.json` and tokenizer files so the folder
//!   tokenises on its own. [`crate::encoder::BertModel::from_dir`] loads such a folder: base, then the
//!   PEFT weights, LoRA merged into the base weights for inference.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::{PeftConfig, TrainConfig};
use super::params::{ParamStore, save_tensors};
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

/// Copies the base's configuration and tokenizer files (every `*.json` and `*.txt` but weights).
fn copy_base_files(base: &Path, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(base).map_err(io_err(base))?;
    for e in entries {
        let e = e.map_err(io_err(base))?;
        let name = e.file_name();
        let n = name.to_string_lossy();
        let wanted = (n.ends_with(".json") || n.ends_with(".txt"))
            && n != ADAPTER_CONFIG
            && n != crate::models::RECORD_FILE
            && n != "lexbench_model.json";
        if wanted && e.path().is_file() {
            let to = dir.join(&*n);
            std::fs::copy(e.path(), &to).map_err(io_err(&to))?;
        }
    }
    Ok(())
}

/// Writes the model folder `dir` atomically (see the module documentation); `meta` goes into
/// `lexbench_model.json`.
pub fn export(
    cfg: &TrainConfig,
    store: &ParamStore,
    trainable: usize,
    total: usize,
    dir: &Path,
    meta: &serde_json::Value,
) -> Result<()> {
    let tensors = store.tensors()?;
    lexbench_core::io::write_dir_atomic(dir, |tmp| -> Result<()> {
        copy_base_files(&cfg.base, tmp)?;
        match &cfg.peft {
            None => save_tensors(&tmp.join("model.safetensors"), &tensors)?,
            Some(p) => {
                save_tensors(&tmp.join(ADAPTER_WEIGHTS), &tensors)?;
                let base = std::path::absolute(&cfg.base).map_err(io_err(&cfg.base))?;
                let file = AdapterFile {
                    peft: p.clone(),
                    base_sha256: lexbench_core::dataset::sha256_file(&base.join("model.safetensors"))?,
                    base_model: base,
                    trainable_params: trainable,
                    total_params: total,
                };
                lexbench_core::io::write_json_pretty(&tmp.join(ADAPTER_CONFIG), &file)?;
            }
        }
        lexbench_core::io::write_json_pretty(&tmp.join("lexbench_model.json"), meta)?;
        Ok(())
    })
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
