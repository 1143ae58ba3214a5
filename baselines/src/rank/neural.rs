//! What every neural run writes: the TREC run and a JSON sidecar (configuration, model hash, dataset
//! hash, git revision, timings) in `DATA/runs/<dataset>/<split>/<system>.{trec,json}`. Zero-shot runs
//! ([`super::dense`], [`super::colbert`], [`super::cross`]) and runs of trained models (the trainer,
//! DR+GNN, QABISAR) share it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lexbench_core::dataset::DatasetDir;
use lexbench_core::run::{SIDECAR_SCHEMA, SidecarHeader};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use super::{git_revision, read_inputs, run_path};
use crate::encoder::models::model_hash;
use crate::encoder::seeded::SEED;
use crate::error::{Error, Result};

pub(crate) fn to_json<T: Serialize>(params: &T, model_dir: &Path) -> Result<serde_json::Value> {
    serde_json::to_value(params).map_err(|source| Error::Json {
        path: model_dir.to_owned(),
        source,
    })
}

pub(crate) fn hidden_size(model_dir: &Path) -> Result<usize> {
    let p = model_dir.join("config.json");
    let text = std::fs::read_to_string(&p).map_err(crate::error::io_err(&p))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|source| Error::Json {
        path: p.clone(),
        source,
    })?;
    v["hidden_size"]
        .as_u64()
        .map(|h| h as usize)
        .ok_or_else(|| Error::Format {
            path: p,
            message: "no hidden_size".into(),
        })
}

/// The candidates of a topic: its pool, or the whole corpus.
pub(crate) fn candidates<'a>(inputs: &'a super::Inputs, topic: &lexbench_core::TopicId) -> Vec<&'a DocId> {
    match &inputs.pools {
        Some(pools) => pools
            .get(topic)
            .map(|p| p.docs.iter().collect())
            .unwrap_or_default(),
        None => inputs.corpus.iter().map(|d| &d.doc).collect(),
    }
}

/// The sidecar of a neural run (zero-shot dense, ColBERT, cross-encoder; trained models, DR+GNN,
/// QABISAR).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeuralSidecar {
    /// The system's name, dataset, split, its version, the seed of any weight the checkpoint lacks
    /// (ColBERT's projection, a cross-encoder head; inference itself is deterministic), revision.
    #[serde(flatten)]
    pub header: SidecarHeader,
    /// The model folder.
    pub model: String,
    /// sha256 of the model's weights and configuration.
    pub model_hash: String,
    /// The settings (of the dense, ColBERT or cross-encoder run).
    pub config: serde_json::Value,
    /// Whether topics ranked their pools or the whole corpus.
    pub pooled: bool,
    /// Topics ranked.
    pub topics: usize,
    /// Hits written.
    pub hits: usize,
    /// Documents encoded now (dense: the rest came from the cache; cross-encoder: pairs scored).
    pub encoded_now: usize,
    /// Wall-clock seconds: encoding documents, encoding queries and ranking.
    pub timings: BTreeMap<String, f64>,
}

/// What [`run_dense`] wrote.
#[derive(Debug, Clone)]
pub struct NeuralOutput {
    /// The run.
    pub run_path: PathBuf,
    /// The sidecar.
    pub sidecar_path: PathBuf,
    /// Its content.
    pub sidecar: NeuralSidecar,
}

/// Writes a run computed elsewhere (a trained graph model) with the sidecar of dense runs, so that
/// `lexbench submit` accepts it: `model_dir` holds the run's `model.safetensors` (hashed), `config` the
/// settings, `encoded_now` the documents encoded.
#[allow(clippy::too_many_arguments)]
pub fn write_neural_run(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    system: &str,
    config: serde_json::Value,
    run: Run,
    encoded_now: usize,
    timings: BTreeMap<String, f64>,
) -> Result<NeuralOutput> {
    let inputs = read_inputs(&DatasetDir::in_data(data, dataset)?, split)?;
    write_output(
        data,
        dataset,
        split,
        model_dir,
        system,
        config,
        &inputs,
        run,
        encoded_now,
        timings,
    )
}

/// Writes a neural run and its sidecar.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_output(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    system: &str,
    config: serde_json::Value,
    inputs: &super::Inputs,
    run: Run,
    encoded_now: usize,
    timings: BTreeMap<String, f64>,
) -> Result<NeuralOutput> {
    let run_path = run_path(data, dataset, split, system)?;
    run.write(&run_path)?;
    let sidecar = NeuralSidecar {
        header: SidecarHeader {
            schema_version: SIDECAR_SCHEMA,
            system: system.to_owned(),
            dataset: dataset.to_owned(),
            split: split.to_owned(),
            dataset_hash: inputs.manifest.dataset_hash(),
            seed: SEED,
            git_revision: git_revision(),
            program: None,
        },
        model: model_dir.display().to_string(),
        model_hash: model_hash(model_dir)?,
        config,
        pooled: inputs.pools.is_some(),
        topics: run.topics.len(),
        hits: run.len(),
        encoded_now,
        timings,
    };
    let sidecar_path = run_path.with_extension("json");
    lexbench_core::io::write_json_pretty(&sidecar_path, &sidecar)?;
    Ok(NeuralOutput {
        run_path,
        sidecar_path,
        sidecar,
    })
}
