//! The zero-shot dense run: a bi-encoder from any HuggingFace BERT folder ranks each topic's
//! candidates — the topic's pool (ECtHR: the judgment's paragraphs) or the whole corpus (BSARD) — by the
//! similarity of the query's and the documents' embeddings.
//!
//! Document embeddings go through the on-disk [`crate::encoder::cache::EmbeddingCache`] (keyed by the
//! model's hash, the encoding options and the text), so a second run over the same corpus encodes only
//! the queries.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use lexbench_core::dataset::DatasetDir;
use lexbench_core::trec::{Hit, trec_order};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use super::neural::{NeuralOutput, to_json, write_output};
use super::read_inputs;
use crate::encoder::cache::CachedEncoder;
use crate::encoder::{EncodeOptions, SentenceEncoder};
use crate::error::{Error, Result};
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

/// Ranks every topic of `split` of `DATA/datasets/<dataset>` with the encoder in `model_dir`.
pub fn run_dense(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    params: &DenseParams,
    device: &candle_core::Device,
) -> Result<NeuralOutput> {
    params.validate()?;
    if crate::encoder::files::has_hier_tensors(model_dir)? {
        return Err(Error::Param(format!(
            "{} was trained with a hierarchical article encoder (hier.… tensors): rank with \
             `lexbench train CONFIG --run SPLIT`, which rebuilds it",
            model_dir.display()
        )));
    }
    let t0 = Instant::now();
    let dir = DatasetDir::in_data(data, dataset)?;
    let inputs = read_inputs(&dir, split)?;
    let encoder = SentenceEncoder::from_dir(model_dir, device, params.encode.clone())?;
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
