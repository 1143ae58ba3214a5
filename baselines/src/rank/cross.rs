//! A cross-encoder reranking BM25's top candidates of each topic.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use lexbench_core::dataset::DatasetDir;
use lexbench_core::trec::{Hit, trec_order};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use super::neural::{NeuralOutput, hidden_size, to_json, write_output};
use super::{read_inputs, run_path};
use crate::encoder::seeded::{SEED, seeded_normal};
use crate::error::{Error, Result};

/// Settings of a cross-encoder run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossParams {
    /// The system's name.
    pub system: String,
    /// How many of BM25's top candidates per topic are rescored.
    pub depth: usize,
    /// Truncation length of `[CLS] q [SEP] p [SEP]`.
    pub max_len: usize,
}

/// A cross-encoder reranking BM25's top `depth` candidates of each topic (within its pool), from
/// `runs/<dataset>/<split>/bm25.trec` (run `lexbench run bm25` first). The run holds the reranked
/// candidates only. A checkpoint without a `classifier` head gets a seeded new one: such a run is a
/// sanity check of the plumbing, not a baseline, until the head is fine-tuned — the sidecar says which.
pub fn run_cross_encoder(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    params: &CrossParams,
    device: &candle_core::Device,
) -> Result<NeuralOutput> {
    use crate::scorers::cross::CrossEncoder;
    if params.depth == 0 {
        return Err(Error::Param("depth must be at least 1".into()));
    }
    let t0 = Instant::now();
    let dir = DatasetDir::in_data(data, dataset)?;
    let inputs = read_inputs(&dir, split)?;
    let bm25_path = run_path(data, dataset, split, "bm25")?;
    let bm25 = Run::read(&bm25_path, &lexbench_core::ReadOptions::default()).map_err(|e| Error::Param(format!(
        "{} (the cross-encoder reranks BM25: run `lexbench run bm25 --dataset {dataset} --split {split}` first)",
        lexbench_core::error::chain(&e)
    )))?;
    let device = device.clone();
    let h = hidden_size(model_dir)?;
    let w = candle_core::Tensor::from_vec(seeded_normal(1, h, 0.02, SEED), (1, h), &device)?;
    let b = candle_core::Tensor::zeros(1, candle_core::DType::F32, &device)?;
    let vb = candle_nn::VarBuilder::from_tensors(
        [
            ("classifier.weight".to_owned(), w),
            ("classifier.bias".to_owned(), b),
        ]
        .into(),
        candle_core::DType::F32,
        &device,
    );
    let ce = CrossEncoder::from_dir(model_dir, &device, params.max_len, vb)?;
    let text_of: BTreeMap<&DocId, &str> = inputs.corpus.iter().map(|d| (&d.doc, d.text.as_str())).collect();
    let mut run = Run::new(params.system.clone());
    let mut scored = 0;
    for t in &inputs.topics {
        let mut first = bm25.topics.get(&t.topic).cloned().unwrap_or_default();
        first.sort_by(trec_order);
        first.truncate(params.depth);
        let pairs: Vec<(&str, &str)> = first
            .iter()
            .map(|hit| (t.text.as_str(), text_of.get(&hit.doc).copied().unwrap_or("")))
            .collect();
        let scores = ce.score(&pairs)?;
        scored += pairs.len();
        let mut hits: Vec<Hit> = first
            .into_iter()
            .zip(scores)
            .map(|(hit, s)| Hit {
                doc: hit.doc,
                score: f64::from(s),
            })
            .collect();
        hits.sort_by(trec_order);
        run.topics.insert(t.topic.clone(), hits);
    }
    let head_from_checkpoint = {
        let bytes = std::fs::read(model_dir.join("model.safetensors"))
            .map_err(crate::error::io_err(&model_dir.join("model.safetensors")))?;
        candle_nn::VarBuilder::from_buffered_safetensors(bytes, candle_core::DType::F32, &device)?
            .contains_tensor("classifier.weight")
    };
    let mut config = to_json(params, model_dir)?;
    config["head"] = serde_json::Value::from(if head_from_checkpoint {
        "checkpoint"
    } else {
        "new, seeded, untrained"
    });
    let timings = [("rerank_s".to_owned(), t0.elapsed().as_secs_f64())].into();
    write_output(
        data,
        dataset,
        split,
        model_dir,
        &params.system,
        config,
        &inputs,
        run,
        scored,
        timings,
    )
}
