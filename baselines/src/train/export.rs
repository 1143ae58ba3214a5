//! Trained models on disk, in formats `lexbench run` and HuggingFace tools read.
//!
//! - Full fine-tuning: a complete HF BERT folder — `model.safetensors` (every tensor, HF names;
//!   `linear.weight` for ColBERT, `classifier.*` for a cross-encoder), the base's `config.json`,
//!   tokenizer files, and `lexbench-training.json` ([`TRAINING_RECORD`]: how it was trained).
//! - PEFT: only the trained weights — `adapter_model.safetensors` (`peft.…` tensors and any new head)
//!   — with `adapter_config.json` naming the method, its settings, the base model's folder and the
//!   sha256 of its `model.safetensors`, plus the base's `config.json` and tokenizer files so the folder
//!   tokenises on its own. [`crate::encoder::BertModel::from_dir`] loads such a folder: base, then the
//!   PEFT weights, LoRA merged into the base weights for inference.
//! - A hierarchical article encoder (`biencoder.article_encoder = "hierarchical"`) adds its
//!   `hier.…` tensors to either weights file. `lexbench run dense` cannot use them (it refuses such
//!   folders); [`write_runs`] ranks with the network rebuilt from the folder instead.

use std::path::Path;

use candle_core::Device;

use super::config::TrainConfig;
use super::data::SplitData;
use super::model::Trainable;
use super::params::{ParamStore, save_tensors};
use crate::encoder::files::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, AdapterFile, weights_file};
use crate::error::{Result, io_err};
use crate::rank::neural::{NeuralOutput, write_neural_run};

/// Copies the base's configuration and tokenizer files (every `*.json` and `*.txt` but weights).
fn copy_base_files(base: &Path, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(base).map_err(io_err(base))?;
    for e in entries {
        let e = e.map_err(io_err(base))?;
        let name = e.file_name();
        let n = name.to_string_lossy();
        let wanted = (n.ends_with(".json") || n.ends_with(".txt"))
            && n != ADAPTER_CONFIG
            && n != crate::encoder::models::RECORD_FILE
            && n != TRAINING_RECORD
            && n != LEGACY_TRAINING_RECORD;
        if wanted && e.path().is_file() {
            let to = dir.join(&*n);
            std::fs::copy(e.path(), &to).map_err(io_err(&to))?;
        }
    }
    Ok(())
}

/// How a trained folder was trained (configuration, epochs, scores), beside HF's files. Distinct
/// from [`crate::encoder::models::RECORD_FILE`], the install record of a fetched checkpoint.
pub const TRAINING_RECORD: &str = "lexbench-training.json";

/// The training record's name before it was told apart from the install record; never written,
/// never copied from a base folder.
const LEGACY_TRAINING_RECORD: &str = "lexbench_model.json";

/// Writes the model folder `dir` atomically (see the module documentation); `meta` goes into
/// [`TRAINING_RECORD`].
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
        lexbench_core::io::write_json_pretty(&tmp.join(TRAINING_RECORD), meta)?;
        Ok(())
    })
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
) -> Result<Vec<NeuralOutput>> {
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
) -> Result<NeuralOutput> {
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
