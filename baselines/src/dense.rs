//! Zero-shot neural runs. The dense run: a bi-encoder from any HuggingFace BERT folder ranks each topic's
//! candidates — the topic's pool (ECtHR: the judgment's paragraphs) or the whole corpus (BSARD) — by the
//! similarity of the query's and the documents' embeddings.
//!
//! Document embeddings go through the on-disk [`crate::cache::EmbeddingCache`] (keyed by the model's
//! hash, the encoding options and the text), so a second run over the same corpus encodes only the
//! queries. The run and a JSON sidecar (configuration, model hash, dataset hash, git revision, timings)
//! land in `DATA/runs/<dataset>/<split>/<system>.{trec,json}`, the layout the leaderboard reads.
//!
//! [`run_colbert`] scores by late interaction (MaxSim), [`run_cross_encoder`] reranks BM25's top
//! candidates; weights a checkpoint lacks are drawn from a fixed seed ([`seeded_normal`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::dataset::DatasetDir;
use lexbench_core::run::{SIDECAR_SCHEMA, SidecarHeader};
use lexbench_core::trec::{Hit, trec_order};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use crate::bm25::runner::{git_revision, read_inputs, run_path};
use crate::cache::CachedEncoder;
use crate::encoder::{EncodeOptions, SentenceEncoder};
use crate::error::{Error, Result};
use crate::models::model_hash;
use crate::scorers::biencoder::{Similarity, similarity};

/// The seed of the weights a checkpoint lacks (see [`seeded_normal`]).
pub const SEED: u64 = 20_261_122;

/// A `(rows, cols)` matrix of N(0, stdev²) values from a fixed seed (SplitMix64 + Box–Muller): the
/// same "new" weights on every machine and every run, unlike a `VarMap`'s thread-local generator.
pub fn seeded_normal(rows: usize, cols: usize, stdev: f64, seed: u64) -> Vec<f32> {
    let mut rng = lexbench_core::rng::SplitMix64::new(seed);
    let mut unit = || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..rows * cols)
        .map(|_| {
            let (u, v) = (unit(), unit());
            ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos() * stdev) as f32
        })
        .collect()
}

fn to_json<T: Serialize>(params: &T, model_dir: &Path) -> Result<serde_json::Value> {
    serde_json::to_value(params).map_err(|source| Error::Json {
        path: model_dir.to_owned(),
        source,
    })
}

fn hidden_size(model_dir: &Path) -> Result<usize> {
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
fn candidates<'a>(inputs: &'a crate::bm25::runner::Inputs, topic: &lexbench_core::TopicId) -> Vec<&'a DocId> {
    match &inputs.pools {
        Some(pools) => pools
            .get(topic)
            .map(|p| p.docs.iter().collect())
            .unwrap_or_default(),
        None => inputs.corpus.iter().map(|d| &d.doc).collect(),
    }
}

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
}

/// Zero-shot ColBERT: late interaction (MaxSim) over the checkpoint's token states. A checkpoint without
/// ColBERT's `linear.weight` (all-MiniLM-L6-v2) gets a seeded Gaussian projection to `dim`: a random
/// projection preserves inner products approximately (Johnson–Lindenstrauss), so MaxSim stays
/// meaningful before any training. Topics sharing a candidate set (one judgment) are scored against
/// its documents encoded once.
pub fn run_colbert(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    params: &ColBertParams,
) -> Result<DenseOutput> {
    use crate::scorers::colbert::{ColBert, maxsim};
    params.colbert.validate()?;
    let t0 = Instant::now();
    let dir = DatasetDir::in_data(data, dataset)?;
    let inputs = read_inputs(&dir, split)?;
    let device = candle_core::Device::Cpu;
    let h = hidden_size(model_dir)?;
    let dim = params.colbert.dim;
    let w = candle_core::Tensor::from_vec(
        seeded_normal(dim, h, 1.0 / (h as f64).sqrt(), SEED),
        (dim, h),
        &device,
    )?;
    let vb = candle_nn::VarBuilder::from_tensors(
        [("linear.weight".to_owned(), w)].into(),
        candle_core::DType::F32,
        &device,
    );
    let colbert = ColBert::from_dir(model_dir, &device, params.colbert.clone(), vb)?;
    let text_of: BTreeMap<&DocId, &str> = inputs.corpus.iter().map(|d| (&d.doc, d.text.as_str())).collect();
    // Group topics by candidate set.
    let mut groups: BTreeMap<Vec<&DocId>, Vec<usize>> = BTreeMap::new();
    for (i, t) in inputs.topics.iter().enumerate() {
        groups.entry(candidates(&inputs, &t.topic)).or_default().push(i);
    }
    let mut run = Run::new(params.system.clone());
    let mut encoded = 0;
    for (docs, topics) in &groups {
        let texts: Vec<&str> = docs
            .iter()
            .map(|d| text_of.get(d).copied().unwrap_or(""))
            .collect();
        let dvecs = colbert.encode_docs(&texts)?;
        encoded += texts.len();
        let qs: Vec<&str> = topics.iter().map(|&i| inputs.topics[i].text.as_str()).collect();
        let qvecs = colbert.encode_queries(&qs)?;
        for (&i, q) in topics.iter().zip(&qvecs) {
            let mut hits = Vec::with_capacity(docs.len());
            for (d, dv) in docs.iter().zip(&dvecs) {
                hits.push(Hit {
                    doc: (*d).clone(),
                    score: f64::from(maxsim(q, dv)?),
                });
            }
            hits.sort_by(trec_order);
            hits.truncate(params.top_k);
            run.topics.insert(inputs.topics[i].topic.clone(), hits);
        }
    }
    let timings = [("encode_and_rank_s".to_owned(), t0.elapsed().as_secs_f64())].into();
    let config = to_json(params, model_dir)?;
    write_output(
        data,
        dataset,
        split,
        model_dir,
        &params.system,
        config,
        &inputs,
        run,
        encoded,
        timings,
    )
}

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
) -> Result<DenseOutput> {
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
    let device = candle_core::Device::Cpu;
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

/// Settings of a dense run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseParams {
    /// The system's name (the run file's stem and tag), e.g. `dense-minilm`.
    pub system: String,
    /// How the encoder tokenises, pools and normalises.
    pub encode: EncodeOptions,
    /// How query and document vectors are compared.
    pub similarity: Similarity,
    /// Documents kept per topic.
    pub top_k: usize,
}

impl Default for DenseParams {
    fn default() -> Self {
        Self {
            system: "dense".into(),
            encode: EncodeOptions::default(),
            similarity: Similarity::Cosine,
            top_k: 1000,
        }
    }
}

impl DenseParams {
    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        if self.top_k == 0 {
            return Err(Error::Param("top_k must be at least 1".into()));
        }
        if self.system.is_empty()
            || !self
                .system
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(Error::Param(format!(
                "system name {:?}: letters, digits, '-', '_' and '.' only",
                self.system
            )));
        }
        Ok(())
    }
}

/// The sidecar of a dense run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseSidecar {
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
pub struct DenseOutput {
    /// The run.
    pub run_path: PathBuf,
    /// The sidecar.
    pub sidecar_path: PathBuf,
    /// Its content.
    pub sidecar: DenseSidecar,
}

/// Ranks every topic of `split` of `DATA/datasets/<dataset>` with the encoder in `model_dir`.
pub fn run_dense(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    params: &DenseParams,
) -> Result<DenseOutput> {
    params.validate()?;
    if crate::train::export::has_hier_tensors(model_dir)? {
        return Err(Error::Param(format!(
            "{} was trained with a hierarchical article encoder (hier.… tensors): rank with \
             `lexbench train CONFIG --run SPLIT`, which rebuilds it",
            model_dir.display()
        )));
    }
    let t0 = Instant::now();
    let dir = DatasetDir::in_data(data, dataset)?;
    let inputs = read_inputs(&dir, split)?;
    let encoder = SentenceEncoder::from_dir(model_dir, &candle_core::Device::Cpu, params.encode.clone())?;
    let mut cached = CachedEncoder::open(&encoder, model_dir, &data.join("cache/embeddings"))?;
    let before = cached.cache().len();

    // The documents any topic of the split can rank.
    let text_of: BTreeMap<&DocId, &str> = inputs.corpus.iter().map(|d| (&d.doc, d.text.as_str())).collect();
    let mut needed: Vec<&DocId> = match &inputs.pools {
        Some(pools) => {
            let mut v = Vec::new();
            for t in &inputs.topics {
                let pool = pools.get(&t.topic).ok_or_else(|| Error::Format {
                    path: dir.pools(),
                    message: format!("topic {} has no pool", t.topic),
                })?;
                v.extend(pool.docs.iter());
            }
            v
        }
        None => inputs.corpus.iter().map(|d| &d.doc).collect(),
    };
    needed.sort();
    needed.dedup();
    let mut texts = Vec::with_capacity(needed.len());
    for d in &needed {
        texts.push(*text_of.get(d).ok_or_else(|| Error::Format {
            path: dir.pools(),
            message: format!("{d} is in a pool but not in corpus.jsonl"),
        })?);
    }
    let doc_vecs: BTreeMap<&DocId, Vec<f32>> = needed.iter().copied().zip(cached.embed(&texts)?).collect();
    let encoded_now = cached.cache().len() - before;
    let t1 = Instant::now();
    let queries: Vec<&str> = inputs.topics.iter().map(|t| t.text.as_str()).collect();
    let query_vecs = encoder.embed(&queries)?;
    let t2 = Instant::now();

    let mut run = Run::new(params.system.clone());
    let all: Vec<&DocId> = inputs.corpus.iter().map(|d| &d.doc).collect();
    for (topic, q) in inputs.topics.iter().zip(&query_vecs) {
        let candidates: Vec<&DocId> = match &inputs.pools {
            Some(pools) => pools[&topic.topic].docs.iter().collect(),
            None => all.clone(),
        };
        let mut hits: Vec<Hit> = candidates
            .into_iter()
            .map(|d| Hit {
                doc: d.clone(),
                score: f64::from(similarity(q, &doc_vecs[d], params.similarity)),
            })
            .collect();
        hits.sort_by(trec_order);
        hits.truncate(params.top_k);
        run.topics.insert(topic.topic.clone(), hits);
    }
    let t3 = Instant::now();
    let timings = [
        ("encode_documents_s".to_owned(), (t1 - t0).as_secs_f64()),
        ("encode_queries_s".to_owned(), (t2 - t1).as_secs_f64()),
        ("rank_s".to_owned(), (t3 - t2).as_secs_f64()),
    ]
    .into();
    let head = to_json(params, model_dir)?;
    write_output(
        data,
        dataset,
        split,
        model_dir,
        &params.system,
        head,
        &inputs,
        run,
        encoded_now,
        timings,
    )
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
) -> Result<DenseOutput> {
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
fn write_output(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    system: &str,
    config: serde_json::Value,
    inputs: &crate::bm25::runner::Inputs,
    run: Run,
    encoded_now: usize,
    timings: BTreeMap<String, f64>,
) -> Result<DenseOutput> {
    let run_path = run_path(data, dataset, split, system)?;
    run.write(&run_path)?;
    let sidecar = DenseSidecar {
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
    Ok(DenseOutput {
        run_path,
        sidecar_path,
        sidecar,
    })
}

#[cfg(test)]
mod tests {
    //! Properties: seeded weights are the same for the same seed, differ for another, and have the
    //! requested mean and spread.
    use super::*;

    #[test]
    fn seeded_normal_is_reproducible_and_normal() {
        let a = seeded_normal(64, 100, 0.5, 7);
        assert_eq!(a, seeded_normal(64, 100, 0.5, 7));
        assert_ne!(a, seeded_normal(64, 100, 0.5, 8));
        let n = a.len() as f64;
        let mean = a.iter().map(|x| f64::from(*x)).sum::<f64>() / n;
        let sd = (a.iter().map(|x| (f64::from(*x) - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((sd - 0.5).abs() < 0.02, "sd {sd}");
    }
}
