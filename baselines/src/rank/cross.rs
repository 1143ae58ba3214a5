//! A cross-encoder scoring every candidate of a topic's pool (the paper's protocol: every paragraph of
//! the judgment), or reranking BM25's top candidates when a depth is given or the dataset ranks a
//! whole corpus. The BM25 candidates come from the split's BM25 run (`lexbench run bm25`), or, with
//! [`CrossEncoderRanker::with_bm25_in_memory`], from BM25 with its default parameters run here (the
//! submission harness: a verified run reads no run file).

use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::Run;
use lexbench_core::trec::{Hit, trec_order};
use serde::{Deserialize, Serialize};

use super::bm25::Bm25Ranker;
use super::neural::{NeuralDetails, hidden_size, record_prefixes, to_json};
use super::{Ranked, Ranker, SplitInputs, run_path};
use crate::encoder::TextPrefixes;
use crate::encoder::files::ranking_prefixes;
use crate::encoder::seeded::{SEED, seeded_normal};
use crate::error::{Error, Result};
use crate::scorers::cross::CrossEncoder;
use crate::sparse::Bm25Params;

/// Settings of a cross-encoder run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossParams {
    /// The system's name.
    pub system: String,
    /// Rerank BM25's top `depth` candidates per topic (from `runs/<dataset>/<split>/bm25.trec`);
    /// `None`: every candidate of the topic's pool, or BM25's top [`CORPUS_DEPTH`] when the dataset
    /// ranks a whole corpus (scoring every article of a corpus per question is not a baseline anyone
    /// runs).
    #[serde(default)]
    pub depth: Option<usize>,
    /// Truncation length of `[CLS] q [SEP] p [SEP]`.
    pub max_len: usize,
}

impl Default for CrossParams {
    /// `lexbench run cross-encoder`'s defaults: every pool candidate (BM25's top [`CORPUS_DEPTH`] on
    /// a corpus-wide dataset), pairs truncated at 256 tokens.
    fn default() -> Self {
        Self {
            system: "cross-encoder".into(),
            depth: None,
            max_len: 256,
        }
    }
}

/// BM25 candidates a cross-encoder reranks on a corpus-wide dataset when no depth is given.
pub const CORPUS_DEPTH: usize = 100;

/// A cross-encoder scoring each topic's pool, or reranking BM25's top `depth` candidates (within the
/// pool) from `runs/<dataset>/<split>/bm25.trec` (run `lexbench run bm25` first); the run holds the
/// scored candidates only, and the sidecar's `first_stage` says which. A checkpoint without a `classifier` head gets a seeded new one: such a run is a
/// sanity check of the plumbing, not a baseline, until the head is fine-tuned — the sidecar says which.
pub struct CrossEncoderRanker {
    model_dir: PathBuf,
    params: CrossParams,
    model: CrossEncoder,
    head_from_checkpoint: bool,
    /// A folder trained here: the prefixes it was trained with (none for other checkpoints).
    prefixes: TextPrefixes,
    /// Rank the first stage with default BM25 here rather than read the split's BM25 run.
    bm25_in_memory: bool,
}

impl CrossEncoderRanker {
    /// Takes BM25's candidates from BM25 with its default parameters ([`Bm25Params::default`]), run
    /// here over the split, rather than from `runs/<dataset>/<split>/bm25.trec`.
    pub fn with_bm25_in_memory(mut self) -> Self {
        self.bm25_in_memory = true;
        self
    }

    /// Loads the checkpoint in `model_dir` on `device` (a seeded head where it has none); a folder
    /// trained here reads `[CLS] query_prefix q [SEP] passage_prefix p [SEP]` with its training's
    /// text prefixes.
    pub fn new(model_dir: &Path, params: CrossParams, device: &candle_core::Device) -> Result<Self> {
        let prefixes = ranking_prefixes(model_dir, &TextPrefixes::default())?;
        if params.depth == Some(0) {
            return Err(Error::Param(
                "cross-encoder depth must be at least 1, got 0".into(),
            ));
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
        // A PEFT folder holds its trained head beside the adapters (adapter_model.safetensors).
        let head_from_checkpoint = model.head_from_checkpoint();
        Ok(Self {
            model_dir: model_dir.to_owned(),
            params,
            model,
            head_from_checkpoint,
            prefixes,
            bm25_in_memory: false,
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
        let depth = match (self.params.depth, inputs.pooled()) {
            (Some(d), _) => Some(d),
            (None, true) => None,
            (None, false) => Some(CORPUS_DEPTH),
        };
        let bm25 = match depth {
            Some(d) if self.bm25_in_memory => Some((bm25_here(inputs)?, d)),
            Some(d) => Some((read_bm25(inputs)?, d)),
            None => None,
        };
        let mut run = Run::new(self.params.system.clone());
        let mut scored = 0;
        for t in &inputs.topics {
            let candidates: Vec<lexbench_core::DocId> = match &bm25 {
                Some(((first_stage, _), d)) => {
                    let mut first = first_stage.topics.get(&t.topic).cloned().unwrap_or_default();
                    first.sort_by(trec_order);
                    first.truncate(*d);
                    first.into_iter().map(|h| h.doc).collect()
                }
                None => inputs.candidates(&t.topic)?.into_iter().cloned().collect(),
            };
            let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(candidates.len());
            for doc in &candidates {
                let text = match &bm25 {
                    Some(((_, path), _)) => inputs.text_listed_in(doc, path)?,
                    None => inputs.text(doc)?,
                };
                pairs.push((t.text.as_str(), text));
            }
            let pairs = self.prefixes.pairs(&pairs);
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(q, p)| (q.as_ref(), p.as_ref())).collect();
            let scores = self.model.score(&pairs)?;
            scored += pairs.len();
            let mut hits: Vec<Hit> = candidates
                .into_iter()
                .zip(scores)
                .map(|(doc, s)| Hit {
                    doc,
                    score: f64::from(s),
                })
                .collect();
            hits.sort_by(trec_order);
            run.topics.insert(t.topic.clone(), hits);
        }
        let mut config = to_json(&self.params, &self.model_dir)?;
        record_prefixes(&mut config, &self.prefixes);
        config["first_stage"] = serde_json::Value::from(match depth {
            Some(d) if self.bm25_in_memory => format!("bm25 top {d} (default parameters, ranked here)"),
            Some(d) => format!("bm25 top {d}"),
            None => "the pool".to_owned(),
        });
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

/// BM25 with its default parameters over the split, ranked here: the cross-encoder's first stage
/// (the path names the corpus in errors).
fn bm25_here(inputs: &SplitInputs) -> Result<(Run, PathBuf)> {
    let mut bm25 = Bm25Ranker::new(Bm25Params::default())?;
    let ranked = bm25.rank(inputs)?;
    Ok((ranked.run, inputs.dir.corpus()))
}

/// The split's BM25 run and its path: the cross-encoder's first stage.
fn read_bm25(inputs: &SplitInputs) -> Result<(Run, PathBuf)> {
    let (dataset, split) = (&inputs.dataset, &inputs.split);
    let path = run_path(&inputs.data, dataset, split, "bm25")?;
    let run = Run::read(&path, &lexbench_core::ReadOptions::default()).map_err(|e| {
        Error::data(
            "the cross-encoder's first stage",
            format!(
                "{} (the cross-encoder reranks BM25: run `lexbench run bm25 --dataset {dataset} --split {split}` first)",
                lexbench_core::error::chain(&e)
            ),
        )
    })?;
    Ok((run, path))
}
