//! Trained models on disk, in formats `lexbench run` and HuggingFace tools read.
//!
//! - Full fine-tuning: a complete HF BERT folder — `model.safetensors` (every tensor, HF names;
//!   `linear.weight` for ColBERT, `classifier.*` for a cross-encoder), the base's `config.json`,
//!   tokenizer files, and `lexbench-training.json` ([`TRAINING_RECORD`]: how it was trained).
//! - PEFT: only the trained weights — `adapter_model.safetensors` (`peft.…` tensors and any new head)
//!   — with `adapter_config.json` naming the method, its settings, the base model's folder and the
//!   sha256 of its `model.safetensors`, plus the base's `config.json` and tokenizer files so the folder
//!   tokenises on its own. [`crate::encoder::BertModel::from_dir`] loads such a folder: base, then the
//!   PEFT weights, LoRA merged into the base weights for inference. Prefixes trained through the
//!   reparametrisation MLP (`peft.prefix.projection`) are exported as its output, every layer's
//!   `peft.layer.{i}.prefix.{key,value}` (what PEFT saves too): the MLP is not needed to rank.
//! - Separate query and passage encoders (`biencoder.encoders = "separate"`): the folder is the
//!   passage encoder, as above, and its subfolder `query_encoder/` the query encoder, a folder of the
//!   same kind (full or PEFT; base files copied, no training record). `lexbench run dense` (and `submit
//!   --model`) encode queries with the subfolder when there is one; a folder without it is one shared
//!   encoder, as every folder written before the option existed.
//! - A hierarchical article encoder (`biencoder.article_encoder = "hierarchical"`) adds its
//!   `hier.…` tensors to either weights file. `lexbench run dense` cannot use them (it refuses such
//!   folders); [`TrainedRanker`] ranks with the network rebuilt from the folder instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};

use super::config::TrainConfig;
use super::data::SplitData;
use super::model::{QUERY_ENCODER, Trainable};
use super::params::{ParamStore, save_tensors};
use crate::encoder::BertConfig;
use crate::encoder::files::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, AdapterFile, weights_file};
use crate::encoder::peft::{PeftConfig, PeftMethod, materialize_prefix_tensors};
use crate::error::{Result, io_err};
use crate::rank::neural::{NeuralDetails, SEED};
use crate::rank::{Ranked, Ranker, RunTarget, SplitInputs};

/// Copies the base's configuration and tokenizer files (every `*.json` and `*.txt` but weights).
fn copy_base_files(base: &Path, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(base).map_err(io_err(base))?;
    for e in entries {
        let e = e.map_err(io_err(base))?;
        let name = e.file_name();
        let n = name.to_string_lossy();
        let wanted = (n.ends_with(".json") || n.ends_with(".txt"))
            && n != ADAPTER_CONFIG
            && n != crate::checkpoints::RECORD_FILE
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
/// from [`crate::checkpoints::RECORD_FILE`], the install record of a fetched checkpoint. Its
/// `config` is what every ranker of the folder must use (lengths, pooling, similarity, ColBERT's
/// settings, the text prefixes: [`crate::encoder::files::ranking_prefixes`]).
pub use crate::encoder::files::TRAINING_RECORD;

/// What [`TRAINING_RECORD`] holds: how a folder was trained, written by [`export`] when the trainer
/// exports its selected epoch and read by every reader of the folder (`lexbench::rank::from_folder`,
/// the harness's lengths). Written as a JSON value (every object's keys sorted), so a record is byte
/// for byte what earlier versions wrote; `record_version` is written from version 2 on (absent: 1).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TrainingRecord {
    /// The base model's folder, as the configuration names it.
    pub base: PathBuf,
    /// The training configuration, every override applied: what every ranker of the folder must use.
    pub config: TrainConfig,
    /// The dataset trained on.
    pub dataset: String,
    /// Its identity hash.
    pub dataset_hash: String,
    /// The configuration's description.
    pub description: String,
    /// The selected epoch (from 1).
    pub epoch: usize,
    /// The validation measure.
    pub measure: String,
    /// The training's kind of model.
    pub model: super::config::ModelKind,
    /// The configuration's name.
    pub name: String,
    /// The layout of this record (1 when absent; never written for 1).
    #[serde(
        default = "TrainingRecord::first",
        skip_serializing_if = "TrainingRecord::is_first"
    )]
    pub record_version: u32,
    /// The configuration's seed.
    pub seed: u64,
    /// All parameters.
    pub total_params: usize,
    /// Parameters trained.
    pub trainable_params: usize,
    /// The selected epoch's validation score.
    pub val: Option<f64>,
}

impl TrainingRecord {
    /// The record's layout written by this version.
    pub const VERSION: u32 = 1;

    fn first() -> u32 {
        1
    }

    // serde's `skip_serializing_if` passes a reference.
    fn is_first(v: &u32) -> bool {
        *v == 1
    }

    /// The record of the folder `dir`, `None` if it was not trained here (no [`TRAINING_RECORD`]);
    /// an unreadable or malformed one is an error naming the file.
    pub fn read(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(TRAINING_RECORD);
        if !crate::encoder::files::present(&path)? {
            return Ok(None);
        }
        let record: Self = crate::encoder::files::read_model_json(&path)?;
        if record.record_version > Self::VERSION {
            return Err(crate::error::Error::Format {
                path,
                message: format!(
                    "record_version {} is newer than this lexbench reads ({})",
                    record.record_version,
                    Self::VERSION
                ),
            });
        }
        Ok(Some(record))
    }
}

/// The training record's name before it was told apart from the install record; never written,
/// never copied from a base folder.
const LEGACY_TRAINING_RECORD: &str = "lexbench_model.json";

/// Writes the model folder `dir` atomically (see the module documentation); `record` goes into
/// [`TRAINING_RECORD`].
pub fn export(
    cfg: &TrainConfig,
    store: &ParamStore,
    trainable: usize,
    total: usize,
    dir: &Path,
    record: &TrainingRecord,
) -> Result<()> {
    // The separate query encoder's variables (`query_encoder.…`) go to its subfolder, unprefixed.
    let mut tensors = store.tensors()?;
    let query_prefix = format!("{QUERY_ENCODER}.");
    let query: BTreeMap<String, Tensor> = tensors
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(&query_prefix).map(|k| (k.to_owned(), v.clone())))
        .collect();
    tensors.retain(|k, _| !k.starts_with(&query_prefix));
    let mut parts = vec![(None, tensors)];
    if !query.is_empty() {
        parts.push((Some(QUERY_ENCODER), query));
    }
    let mlp = |p: &&PeftConfig| p.method == PeftMethod::Prefix && p.prefix.projection;
    if let Some(p) = cfg.peft.as_ref().filter(mlp) {
        let bert = BertConfig::from_file(&cfg.base.join("config.json"))?;
        for (_, tensors) in &mut parts {
            materialize_prefix_tensors(
                &p.prefix,
                bert.num_hidden_layers,
                bert.hidden_size,
                tensors,
                "peft.",
            )?;
        }
    }
    lexbench_core::io::write_dir_atomic(dir, |tmp| -> Result<()> {
        for (sub, tensors) in &parts {
            let to = match sub {
                Some(s) => {
                    let to = tmp.join(s);
                    std::fs::create_dir_all(&to).map_err(io_err(&to))?;
                    to
                }
                None => tmp.to_owned(),
            };
            copy_base_files(&cfg.base, &to)?;
            match &cfg.peft {
                None => save_tensors(&to.join("model.safetensors"), tensors)?,
                Some(p) => {
                    save_tensors(&to.join(ADAPTER_WEIGHTS), tensors)?;
                    let base = std::path::absolute(&cfg.base).map_err(io_err(&cfg.base))?;
                    let file = AdapterFile {
                        peft: p.clone(),
                        base_sha256: lexbench_core::dataset::sha256_file(&base.join("model.safetensors"))?,
                        base_model: base,
                        trainable_params: trainable,
                        total_params: total,
                    };
                    lexbench_core::io::write_json_pretty(&to.join(ADAPTER_CONFIG), &file)?;
                }
            }
        }
        // Through a JSON value: every object's keys sorted, nested ones included, as the file has
        // always been written.
        let value = serde_json::to_value(record).map_err(|e| crate::error::Error::internal(e.to_string()))?;
        lexbench_core::io::write_json_pretty(&tmp.join(TRAINING_RECORD), &value)?;
        Ok(())
    })
}

/// The network of a trained configuration rebuilt from its exported folder (its weights file holds
/// every trainable variable), as a [`Ranker`]: how runs of models `lexbench run dense` cannot load (a
/// hierarchical article encoder) are made, with the sidecar of other neural runs.
pub struct TrainedRanker {
    cfg: TrainConfig,
    model_dir: PathBuf,
    net: Trainable,
}

impl TrainedRanker {
    /// Rebuilds `cfg`'s network on `device` with the weights exported in `model_dir` (prefixes
    /// trained through the reparametrisation MLP in the direct form the folder holds them in).
    pub fn from_folder(cfg: &TrainConfig, model_dir: &Path, device: &Device) -> Result<Self> {
        let mut exported = cfg.clone();
        if let Some(p) = &mut exported.peft {
            p.prefix = p.prefix.materialized();
        }
        let net = Trainable::build(&exported, device)?;
        let query_dir = model_dir.join(QUERY_ENCODER);
        let query_weights = weights_file(&query_dir);
        let mut files = vec![("", weights_file(model_dir))];
        if query_dir.is_dir() {
            files.push((QUERY_ENCODER, query_weights));
        }
        let files: Vec<(&str, &Path)> = files.iter().map(|(p, f)| (*p, f.as_path())).collect();
        net.store.load_values_from(&files)?;
        Ok(Self {
            cfg: cfg.clone(),
            model_dir: model_dir.to_owned(),
            net,
        })
    }

    /// The run of `split` of the configuration's dataset: `DATA/runs/<dataset>/<split>/<cfg.name>`.
    pub fn target(&self, data: &Path, split: &str) -> Result<RunTarget> {
        RunTarget::new(data, &self.cfg.data.dataset, split, &self.cfg.name)
    }
}

impl Ranker for TrainedRanker {
    type Details = NeuralDetails;

    fn seed(&self) -> u64 {
        SEED
    }

    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<NeuralDetails>> {
        let t0 = std::time::Instant::now();
        let target = SplitData::from_inputs(inputs, false, false)?;
        let run = self.net.rank(&target, self.cfg.eval.top_k, None, 32)?;
        let config = serde_json::json!({
            "model": self.cfg.model,
            "article_encoder": self.cfg.biencoder.article_encoder,
            "train_config": self.cfg,
            "top_k": self.cfg.eval.top_k,
        });
        Ok(Ranked {
            run,
            details: NeuralDetails::new(&self.model_dir, config, target.docs.len())?,
            timings: [("rank_s".to_owned(), t0.elapsed().as_secs_f64())].into(),
        })
    }
}
