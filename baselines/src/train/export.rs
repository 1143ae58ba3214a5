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
//! - A hierarchical article encoder (`biencoder.article_encoder = "hierarchical"`) adds its
//!   `hier.…` tensors to either weights file. `lexbench run dense` cannot use them (it refuses such
//!   folders); [`write_runs`] ranks with the network rebuilt from the folder instead.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use candle_core::Device;

use super::config::{PeftConfig, TrainConfig};
use super::data::SplitData;
use super::model::Trainable;
use super::params::{ParamStore, save_tensors};
use crate::dense::{DenseOutput, write_neural_run};
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

/// Ranks `splits` of `cfg`'s dataset with the network rebuilt from the exported folder `model_dir`
/// (its weights file holds every trainable variable) and writes `DATA/runs/<dataset>/<split>/<name>.trec`
/// with a dense-run sidecar: how runs of models `lexbench run dense` cannot load (a hierarchical
/// article encoder) are made.
pub fn write_runs(
    cfg: &TrainConfig,
    data: &Path,
    model_dir: &Path,
    device: &Device,
    splits: &[String],
) -> Result<Vec<DenseOutput>> {
    let net = Trainable::build(cfg, device)?;
    net.store.load_values(&weights_file(model_dir))?;
    let mut out = Vec::with_capacity(splits.len());
    for split in splits {
        let t0 = std::time::Instant::now();
        let target = SplitData::load(data, &cfg.data.dataset, split, false)?;
        let mut run = net.rank(&target, cfg.eval.top_k, None, 32)?;
        run.tag = cfg.name.clone();
        let config = serde_json::json!({
            "model": cfg.model,
            "article_encoder": cfg.biencoder.article_encoder,
            "train_config": cfg,
            "top_k": cfg.eval.top_k,
        });
        out.push(write_trained_run(
            cfg,
            data,
            split,
            model_dir,
            config,
            run,
            target.docs.len(),
            t0,
        )?);
    }
    Ok(out)
}

/// Writes `run` of `split` as `DATA/runs/<dataset>/<split>/<cfg.name>.trec` with a dense-run sidecar
/// (`model_dir`, `config`, the documents ranked, the time since `t0`): the runs of trained models that
/// `lexbench run dense` cannot load (hierarchical encoder, DR+GNN, QABISAR).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_trained_run(
    cfg: &TrainConfig,
    data: &Path,
    split: &str,
    model_dir: &Path,
    config: serde_json::Value,
    run: lexbench_core::Run,
    docs: usize,
    t0: std::time::Instant,
) -> Result<DenseOutput> {
    let timings = [("rank_s".to_owned(), t0.elapsed().as_secs_f64())].into();
    write_neural_run(
        data,
        &cfg.data.dataset,
        split,
        model_dir,
        &cfg.name,
        config,
        run,
        docs,
        timings,
    )
}
