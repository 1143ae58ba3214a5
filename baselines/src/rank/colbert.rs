//! Zero-shot late interaction (ColBERT's MaxSim) over a checkpoint's token states, ranking each
//! topic's candidates (its pool, or the whole corpus).
//!
//! With a ColBERT checkpoint (one holding `linear.weight`; colbert-ir/colbertv2.0 with its
//! `artifact.metadata`, whose markers, dim and masking it runs with) this is ColBERT. With any other
//! BERT folder (all-MiniLM-L6-v2 here) the projection is seeded ([`seeded_projection`]): the run is late interaction over that model's
//! token states, not ColBERT — the sidecar says which (`projection`), and so does `lexbench run
//! colbert`. Query and document lengths are ColBERT's (32, 180) unless given
//! (`--query-max-len`, `--doc-max-len`); a folder trained here reads at its training's lengths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::trec::{Hit, trec_order};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use super::neural::{NeuralDetails, hidden_size, record_prefixes, to_json};
use super::{Ranked, Ranker, SplitInputs};
use crate::encoder::TextPrefixes;
use crate::encoder::files::ranking_prefixes;
use crate::encoder::seeded::{SEED, seeded_normal};
use crate::encoder::tokenize::as_strs;
use crate::error::Result;
use crate::scorers::colbert::{ColBert, MaxSimDocs, has_projection};

/// Settings of a ColBERT run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColBertParams {
    /// The system's name.
    pub system: String,
    /// ColBERT's settings.
    pub colbert: crate::scorers::colbert::ColBertConfig,
    /// Documents kept per topic.
    pub top_k: usize,
    /// Rerank another run's top documents rather than score every candidate (a corpus of a hundred
    /// thousand paragraphs is too many to encode token by token); absent: every candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_stage: Option<FirstStage>,
}

/// The run a ColBERT reranks: `runs/<dataset>/<split>/<system>.trec`, its top `depth` per topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstStage {
    /// The system whose run of the same split is reranked (`bm25`, `dense`, …).
    pub system: String,
    /// Documents reranked per topic.
    pub depth: usize,
}

impl Default for ColBertParams {
    /// `lexbench run colbert`'s defaults: ColBERT's own settings, 1000 documents per topic.
    fn default() -> Self {
        Self {
            system: "colbert".into(),
            colbert: crate::scorers::colbert::ColBertConfig::default(),
            top_k: 1000,
            first_stage: None,
        }
    }
}

/// Zero-shot ColBERT: late interaction (MaxSim) over the checkpoint's token states. A checkpoint without
/// ColBERT's `linear.weight` (all-MiniLM-L6-v2) gets a seeded Gaussian projection to `dim`: a random
/// projection preserves inner products approximately (Johnson–Lindenstrauss), so MaxSim stays
/// meaningful before any training. Topics sharing a candidate set (one judgment) are scored against
/// its documents encoded once.
pub struct ColBertRanker {
    model_dir: PathBuf,
    params: ColBertParams,
    colbert: ColBert,
    /// A folder trained here: the prefixes it was trained with (none for other checkpoints).
    prefixes: TextPrefixes,
}

impl ColBertRanker {
    /// Loads the checkpoint in `model_dir` on `device` (a seeded projection where it has none); a
    /// folder trained here reads queries and documents with its training's text prefixes.
    pub fn new(model_dir: &Path, params: ColBertParams, device: &candle_core::Device) -> Result<Self> {
        params.colbert.validate()?;
        let prefixes = ranking_prefixes(model_dir, &TextPrefixes::default())?;
        let new_linear = if has_projection(model_dir)? {
            // ColBERT's own projection is read from the checkpoint; nothing new is made.
            candle_nn::VarBuilder::from_tensors(Default::default(), candle_core::DType::F32, device)
        } else {
            let h = hidden_size(model_dir)?;
            // The model's dim when its artifact.metadata names one.
            let dim = params.colbert.clone().with_model_settings(model_dir)?.dim;
            seeded_projection(dim, h, device)?
        };
        let colbert = ColBert::from_dir(model_dir, device, params.colbert.clone(), new_linear)?;
        // The sidecar names the settings the run used (the model's, from its artifact.metadata).
        let params = ColBertParams {
            colbert: colbert.config().clone(),
            ..params
        };
        Ok(Self {
            model_dir: model_dir.to_owned(),
            params,
            colbert,
            prefixes,
        })
    }
}

/// The projection of a checkpoint without ColBERT's `linear.weight`: `(dim, hidden)` Gaussian
/// weights (σ = 1/√hidden) from the fixed [`SEED`], under the name ColBERT's own has. The run is then
/// late interaction over the checkpoint's token states, not ColBERT ([`PROJECTION_SEEDED`]).
pub fn seeded_projection(
    dim: usize,
    hidden: usize,
    device: &candle_core::Device,
) -> Result<candle_nn::VarBuilder<'static>> {
    let w = candle_core::Tensor::from_vec(
        seeded_normal(dim, hidden, 1.0 / (hidden as f64).sqrt(), SEED),
        (dim, hidden),
        device,
    )?;
    Ok(candle_nn::VarBuilder::from_tensors(
        [("linear.weight".to_owned(), w)].into(),
        candle_core::DType::F32,
        device,
    ))
}

impl ColBertRanker {
    /// Where the projection comes from: [`PROJECTION_CHECKPOINT`] or [`PROJECTION_SEEDED`].
    pub fn projection(&self) -> &'static str {
        if self.colbert.projection_from_checkpoint() {
            PROJECTION_CHECKPOINT
        } else {
            PROJECTION_SEEDED
        }
    }
}

impl ColBertRanker {
    /// Reranks the top `first.depth` documents of each topic in `stage`, the first stage's run (read
    /// from `path`, or the corpus when it was ranked here: errors name it): documents encoded topic by
    /// topic; progress on a bar on a terminal, and a line per hundred topics in the log (`-v`).
    fn rerank(
        &mut self,
        inputs: &SplitInputs,
        first: &FirstStage,
        (stage, path): (&Run, &Path),
        t0: Instant,
    ) -> Result<Ranked<NeuralDetails>> {
        if first.depth == 0 {
            return Err(crate::Error::Param(
                "ColBERT's first-stage depth must be at least 1, got 0".into(),
            ));
        }
        let path = path.to_owned();
        let mut run = Run::new(self.params.system.clone());
        let mut encoded = 0;
        let bar = super::progress_bar(inputs.topics.len(), "reranking", "topics", true);
        for (n, t) in inputs.topics.iter().enumerate() {
            bar.set_position(n as u64);
            let mut hits = stage.topics.get(&t.topic).cloned().unwrap_or_default();
            hits.sort_by(trec_order);
            hits.truncate(first.depth);
            let docs: Vec<DocId> = hits.into_iter().map(|h| h.doc).collect();
            if let Some(pool) = inputs.pool(&t.topic)?
                && let Some(d) = docs.iter().find(|d| !pool.docs.contains(d))
            {
                return Err(crate::Error::Format {
                    path: path.clone(),
                    message: format!("topic {}: {d} is not in its pool", t.topic),
                });
            }
            let texts = docs
                .iter()
                .map(|d| inputs.text_listed_in(d, &path))
                .collect::<Result<Vec<&str>>>()?;
            let dvecs = self
                .colbert
                .encode_docs(&as_strs(&self.prefixes.passages(&texts)))?;
            encoded += texts.len();
            let qvecs = self
                .colbert
                .encode_queries(&as_strs(&self.prefixes.queries(&[t.text.as_str()])))?;
            let stacked = MaxSimDocs::new(&dvecs)?;
            let mut ranked: Vec<Hit> = docs
                .into_iter()
                .zip(stacked.scores(&qvecs[0])?)
                .map(|(doc, score)| Hit {
                    doc,
                    score: f64::from(score),
                })
                .collect();
            ranked.sort_by(trec_order);
            ranked.truncate(self.params.top_k);
            run.topics.insert(t.topic.clone(), ranked);
            if (n + 1) % 100 == 0 {
                tracing::info!("colbert: {} of {} topics reranked", n + 1, inputs.topics.len());
            }
        }
        bar.finish_and_clear();
        let params = ColBertParams {
            first_stage: Some(first.clone()),
            ..self.params.clone()
        };
        self.ranked(&params, run, encoded, t0)
    }

    /// The run with its sidecar's details: the settings `params` (with the prefixes and where the
    /// projection came from) and the seconds since `t0`.
    fn ranked(
        &self,
        params: &ColBertParams,
        run: Run,
        encoded: usize,
        t0: Instant,
    ) -> Result<Ranked<NeuralDetails>> {
        let timings = [("encode_and_rank_s".to_owned(), t0.elapsed().as_secs_f64())].into();
        let mut config = to_json(params, &self.model_dir)?;
        record_prefixes(&mut config, &self.prefixes);
        if let Some(c) = config.as_object_mut() {
            c.insert("projection".into(), self.projection().into());
        }
        Ok(Ranked {
            run,
            details: NeuralDetails::new(&self.model_dir, config, encoded)?,
            timings,
        })
    }
}

/// The sidecar's `projection` of a checkpoint with ColBERT's `linear.weight` (a ColBERT model, or one
/// trained here).
pub const PROJECTION_CHECKPOINT: &str = "checkpoint";
/// The sidecar's `projection` of a checkpoint without one: the run is late interaction with a seeded
/// projection, not ColBERT.
pub const PROJECTION_SEEDED: &str =
    "seeded: late interaction over the checkpoint's token states, not a trained ColBERT";

impl Ranker for ColBertRanker {
    type Details = NeuralDetails;

    fn seed(&self) -> u64 {
        SEED
    }

    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<NeuralDetails>> {
        let t0 = Instant::now();
        if let Some(first) = self.params.first_stage.clone() {
            let (stage, path) = read_first_stage(inputs, &first.system)?;
            return self.rerank(inputs, &first, (&stage, &path), t0);
        }
        if inputs.task == lexbench_core::Task::OpenCorpus {
            // Every paragraph of the case law is too many to encode token by token (a hundred
            // thousand, 180 vectors each): BM25's top documents, as deep as the task's measures read,
            // ranked here with its default parameters.
            let first = FirstStage {
                system: super::bm25::SYSTEM.to_owned(),
                depth: inputs.task.depth(),
            };
            let stage = super::bm25::Bm25Ranker::new(crate::sparse::Bm25Params::default())?
                .rank(inputs)?
                .run;
            let mut ranked = self.rerank(inputs, &first, (&stage, &inputs.dir.corpus()), t0)?;
            ranked.details.config["first_stage_ranked_here"] = true.into();
            return Ok(ranked);
        }
        // Group topics by candidate set.
        let mut groups: BTreeMap<Vec<&DocId>, Vec<usize>> = BTreeMap::new();
        for (i, t) in inputs.topics.iter().enumerate() {
            groups.entry(inputs.candidates(&t.topic)?).or_default().push(i);
        }
        let mut run = Run::new(self.params.system.clone());
        let mut encoded = 0;
        for (docs, topics) in &groups {
            let texts = docs
                .iter()
                .map(|d| inputs.text(d))
                .collect::<Result<Vec<&str>>>()?;
            let dvecs = self
                .colbert
                .encode_docs(&as_strs(&self.prefixes.passages(&texts)))?;
            encoded += texts.len();
            let qs: Vec<&str> = topics.iter().map(|&i| inputs.topics[i].text.as_str()).collect();
            let qvecs = self
                .colbert
                .encode_queries(&as_strs(&self.prefixes.queries(&qs)))?;
            let stacked = MaxSimDocs::new(&dvecs)?;
            for (&i, q) in topics.iter().zip(&qvecs) {
                let mut hits: Vec<Hit> = docs
                    .iter()
                    .zip(stacked.scores(q)?)
                    .map(|(d, score)| Hit {
                        doc: (*d).clone(),
                        score: f64::from(score),
                    })
                    .collect();
                hits.sort_by(trec_order);
                hits.truncate(self.params.top_k);
                run.topics.insert(inputs.topics[i].topic.clone(), hits);
            }
        }
        self.ranked(&self.params, run, encoded, t0)
    }
}

/// The split's run of `system` and its path: a ColBERT's first stage.
fn read_first_stage(inputs: &SplitInputs, system: &str) -> Result<(Run, PathBuf)> {
    let path = super::run_path(&inputs.data, &inputs.dataset, &inputs.split, system)?;
    let stage = Run::read(&path, &lexbench_core::ReadOptions::default()).map_err(|e| {
        crate::Error::data(
            "ColBERT's first stage",
            format!(
                "{} (run `lexbench run {system} --dataset {} --split {}` first)",
                lexbench_core::error::chain(&e),
                inputs.dataset,
                inputs.split
            ),
        )
    })?;
    Ok((stage, path))
}
