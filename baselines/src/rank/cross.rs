//! A cross-encoder reranking BM25's top candidates of each topic.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::Run;
use lexbench_core::trec::{Hit, trec_order};
use serde::{Deserialize, Serialize};

use super::neural::{NeuralDetails, hidden_size, to_json};
use super::{Ranked, Ranker, SplitInputs, run_path};
use crate::encoder::seeded::{SEED, seeded_normal};
use crate::error::{Error, Result};
use crate::scorers::cross::CrossEncoder;

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
pub struct CrossEncoderRanker {
    model_dir: PathBuf,
    params: CrossParams,
    model: CrossEncoder,
    head_from_checkpoint: bool,
}

impl CrossEncoderRanker {
    /// Loads the checkpoint in `model_dir` on `device` (a seeded head where it has none).
    pub fn new(model_dir: &Path, params: CrossParams, device: &candle_core::Device) -> Result<Self> {
        if params.depth == 0 {
            return Err(Error::Param("depth must be at least 1".into()));
        }
        let h = hidden_size(model_dir)?;
        let w = candle_core::Tensor::from_vec(seeded_normal(1, h, 0.02, SEED), (1, h), device)?;
        let b = candle_core::Tensor::zeros(1, candle_core::DType::F32, device)?;
        let vb = candle_nn::VarBuilder::from_tensors(
            [
                ("classifier.weight".to_owned(), w),
                ("classifier.bias".to_owned(), b),
            ]
            .into(),
            candle_core::DType::F32,
            device,
        );
        let model = CrossEncoder::from_dir(model_dir, device, params.max_len, vb)?;
        let head_from_checkpoint = {
            let weights = model_dir.join("model.safetensors");
            let bytes = std::fs::read(&weights).map_err(crate::error::io_err(&weights))?;
            candle_nn::VarBuilder::from_buffered_safetensors(bytes, candle_core::DType::F32, device)?
                .contains_tensor("classifier.weight")
        };
        Ok(Self {
            model_dir: model_dir.to_owned(),
            params,
            model,
            head_from_checkpoint,
        })
    }
}

impl Ranker for CrossEncoderRanker {
    type Details = NeuralDetails;

    fn seed(&self) -> u64 {
        SEED
    }

    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<NeuralDetails>> {
        let t0 = Instant::now();
        let (dataset, split) = (&inputs.dataset, &inputs.split);
        let bm25_path = run_path(&inputs.data, dataset, split, "bm25")?;
        let bm25 = Run::read(&bm25_path, &lexbench_core::ReadOptions::default()).map_err(|e| {
            Error::data(
                "the cross-encoder's first stage",
                format!(
                    "{} (the cross-encoder reranks BM25: run `lexbench run bm25 --dataset {dataset} --split {split}` first)",
                    lexbench_core::error::chain(&e)
                ),
            )
        })?;
        let mut run = Run::new(self.params.system.clone());
        let mut scored = 0;
        for t in &inputs.topics {
            let mut first = bm25.topics.get(&t.topic).cloned().unwrap_or_default();
            first.sort_by(trec_order);
            first.truncate(self.params.depth);
            let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(first.len());
            for hit in &first {
                pairs.push((t.text.as_str(), inputs.text_listed_in(&hit.doc, &bm25_path)?));
            }
            let scores = self.model.score(&pairs)?;
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
        let mut config = to_json(&self.params, &self.model_dir)?;
        config["head"] = serde_json::Value::from(if self.head_from_checkpoint {
            "checkpoint"
        } else {
            "new, seeded, untrained"
        });
        let timings = [("rerank_s".to_owned(), t0.elapsed().as_secs_f64())].into();
        Ok(Ranked {
            run,
            details: NeuralDetails::new(&self.model_dir, config, scored)?,
            timings,
        })
    }
}
