//! Zero-shot dense retrieval runs: a bi-encoder from any HuggingFace BERT folder ranks each topic's
//! candidates — the topic's pool (ECtHR: the judgment's paragraphs) or the whole corpus (BSARD) — by the
//! similarity of the query's and the documents' embeddings.
//!
//! Document embeddings go through the on-disk [`crate::cache::EmbeddingCache`] (keyed by the model's
//! hash, the encoding options and the text), so a second run over the same corpus encodes only the
//! queries. The run and a JSON sidecar (configuration, model hash, dataset hash, git revision, timings)
//! land in `DATA/runs/<dataset>/<split>/<system>.{trec,json}`, the layout the leaderboard reads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::dataset::DatasetDir;
use lexbench_core::trec::{Hit, trec_order};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use crate::bm25::runner::{git_revision, read_inputs, run_path};
use crate::cache::CachedEncoder;
use crate::encoder::{EncodeOptions, SentenceEncoder};
use crate::error::{Error, Result};
use crate::models::model_hash;
use crate::scorers::biencoder::{Similarity, similarity};

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
#[serde(deny_unknown_fields)]
pub struct DenseSidecar {
    /// The system's name.
    pub system: String,
    /// The dataset's name.
    pub dataset: String,
    /// The split ranked.
    pub split: String,
    /// The dataset's identity.
    pub dataset_hash: String,
    /// The model folder.
    pub model: String,
    /// sha256 of the model's weights and configuration.
    pub model_hash: String,
    /// The settings.
    pub config: DenseParams,
    /// Inference is deterministic: 0, recorded so every sidecar has one.
    pub seed: u64,
    /// The checkout's revision, if known.
    pub git_revision: Option<String>,
    /// Whether topics ranked their pools or the whole corpus.
    pub pooled: bool,
    /// Topics ranked.
    pub topics: usize,
    /// Hits written.
    pub hits: usize,
    /// Documents whose embeddings were computed now (the rest came from the cache).
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
    let t0 = Instant::now();
    let dir = DatasetDir::in_data(data, dataset);
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
    let run_path = run_path(data, dataset, split, &params.system);
    run.write(&run_path)?;
    let sidecar = DenseSidecar {
        system: params.system.clone(),
        dataset: dataset.to_owned(),
        split: split.to_owned(),
        dataset_hash: inputs.manifest.dataset_hash(),
        model: model_dir.display().to_string(),
        model_hash: model_hash(model_dir)?,
        config: params.clone(),
        seed: 0,
        git_revision: git_revision(),
        pooled: inputs.pools.is_some(),
        topics: run.topics.len(),
        hits: run.len(),
        encoded_now,
        timings: [
            ("encode_documents_s".to_owned(), (t1 - t0).as_secs_f64()),
            ("encode_queries_s".to_owned(), (t2 - t1).as_secs_f64()),
            ("rank_s".to_owned(), (t3 - t2).as_secs_f64()),
        ]
        .into(),
    };
    let sidecar_path = run_path.with_extension("json");
    let text = serde_json::to_string_pretty(&sidecar).map_err(|source| Error::Json {
        path: sidecar_path.clone(),
        source,
    })?;
    lexbench_core::io::write_atomic(&sidecar_path, |w| {
        use std::io::Write;
        w.write_all(text.as_bytes())?;
        w.write_all(b"\n")
    })?;
    Ok(DenseOutput {
        run_path,
        sidecar_path,
        sidecar,
    })
}
