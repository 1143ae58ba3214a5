//! The zero-shot dense run: a bi-encoder from any HuggingFace BERT folder ranks each topic's
//! candidates — the topic's pool (ECtHR: the judgment's paragraphs) or the whole corpus (BSARD) — by the
//! similarity of the query's and the documents' embeddings.
//!
//! Queries and documents may be truncated at different lengths ([`DenseParams::query_max_len`]): a
//! bi-encoder trained here reads queries at its `data.max_query_len` and passages at its
//! `data.max_doc_len`, and is ranked the same way.
//!
//! A folder trained with separate query and passage encoders (`biencoder.encoders = "separate"`) holds
//! the query encoder in its subfolder `query_encoder/` ([`QUERY_ENCODER_DIR`]): queries are encoded
//! with it, documents with the folder's own encoder. A folder without one encodes both with the same.
//!
//! Document embeddings go through the on-disk [`crate::rank::cache::EmbeddingCache`] (keyed by the
//! model's hash, the encoding options and the text), so a second run over the same corpus encodes only
//! the queries. The cache lives in `DATA/cache/embeddings`, or in a folder of the caller's
//! ([`DenseRanker::with_cache_dir`]: the submission harness uses a fresh one, so a verified run is
//! computed from the model's files alone).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::trec::{Hit, trec_order};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use super::neural::{NeuralDetails, SEED, to_json};
use super::{Ranked, Ranker, SplitInputs};
use crate::encoder::tokenize::{TextTokenizer, Tokens};
use crate::encoder::{EncodeOptions, SentenceEncoder, TextPrefixes};
use crate::error::{Error, Result};
use crate::rank::cache::CachedEncoder;
use crate::scorers::biencoder::{Similarity, similarity};

/// Settings of a dense run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseParams {
    /// The system's name (the run file's stem and tag), e.g. `dense-minilm`.
    pub system: String,
    /// How the encoder tokenises, pools and normalises; `encode.max_len` is the documents'
    /// truncation length (and the queries', unless [`Self::query_max_len`] is given).
    pub encode: EncodeOptions,
    /// Truncation length of queries in tokens, special tokens included. `None`: `encode.max_len`, one
    /// length for both (`lexbench run dense --max-len`). A folder trained here is ranked with its
    /// `data.max_query_len` here and `data.max_doc_len` in `encode.max_len`, as it was trained.
    /// [`DenseRanker::new`] fills it in, so a run's sidecar always names both lengths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_max_len: Option<usize>,
    /// How query and document vectors are compared.
    pub similarity: Similarity,
    /// Documents kept per topic.
    pub top_k: usize,
    /// Put before every query text (E5 models: `"query: "`; default none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_prefix: String,
    /// Put before every document text (E5 models: `"passage: "`; default none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passage_prefix: String,
}

impl Default for DenseParams {
    fn default() -> Self {
        Self {
            system: "dense".into(),
            encode: EncodeOptions::default(),
            query_max_len: None,
            similarity: Similarity::Cosine,
            top_k: 1000,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        }
    }
}

/// The subfolder of a model folder that holds its separate query encoder (written by training with
/// `biencoder.encoders = "separate"`).
pub use crate::encoder::files::QUERY_ENCODER_DIR;

/// The shortest truncation length: `[CLS]`, `[SEP]` and two tokens of text.
const MIN_LEN: usize = 4;

impl DenseParams {
    /// The queries' truncation length: [`Self::query_max_len`], else `encode.max_len`.
    pub fn query_len(&self) -> usize {
        self.query_max_len.unwrap_or(self.encode.max_len)
    }

    /// Checks the settings: at least one document per topic, lengths of at least 4 tokens, a system
    /// name of letters, digits, `-`, `_` and `.`.
    pub fn validate(&self) -> Result<()> {
        if self.top_k == 0 {
            return Err(Error::Param("top_k must be at least 1".into()));
        }
        for (what, len) in [
            ("max_len", Some(self.encode.max_len)),
            ("query_max_len", self.query_max_len),
        ] {
            if let Some(len) = len
                && len < MIN_LEN
            {
                return Err(Error::Param(format!(
                    "{what} must be at least {MIN_LEN} tokens, got {len}"
                )));
            }
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

/// A zero-shot bi-encoder: the encoder loaded from a HuggingFace BERT folder on a device, and its
/// settings. Refuses folders holding a hierarchical article encoder.
pub struct DenseRanker {
    model_dir: PathBuf,
    params: DenseParams,
    encoder: SentenceEncoder,
    /// The queries' tokenizer when they are cut at another length than the documents.
    query_tok: Option<TextTokenizer>,
    /// The separate query encoder (`query_encoder/`), cut at the queries' length, when there is one.
    query_encoder: Option<SentenceEncoder>,
    /// Where the embedding cache is; `None`: `DATA/cache/embeddings`.
    cache_dir: Option<PathBuf>,
}

impl DenseRanker {
    /// Loads the encoder in `model_dir` on `device`. A folder trained here ranks with the text prefixes
    /// it was trained with ([`crate::encoder::files::ranking_prefixes`]): empty ones in `params` are
    /// taken from its training record, different ones are refused. Queries are cut at
    /// [`DenseParams::query_len`] tokens, documents at `encode.max_len` (both at most the model's
    /// positions).
    pub fn new(model_dir: &Path, mut params: DenseParams, device: &candle_core::Device) -> Result<Self> {
        params.validate()?;
        let asked = TextPrefixes {
            query: params.query_prefix.clone(),
            passage: params.passage_prefix.clone(),
        };
        let prefixes = crate::encoder::files::ranking_prefixes(model_dir, &asked)?;
        (params.query_prefix, params.passage_prefix) = (prefixes.query, prefixes.passage);
        if crate::encoder::files::has_hier_tensors(model_dir)? {
            return Err(Error::Format {
                path: model_dir.to_owned(),
                message: "trained with a hierarchical article encoder (hier.… tensors), which \
                          `lexbench run dense` cannot rebuild: rank with `lexbench train CONFIG --run SPLIT`"
                    .into(),
            });
        }
        let encoder = SentenceEncoder::from_dir(model_dir, device, params.encode.clone())?;
        // The sidecar names the pooling the run used (the model's, when none was asked for).
        params.encode.pooling = Some(encoder.pooling());
        params.query_max_len = Some(params.query_len());
        // The documents' tokenizer is cut at the model's positions too (`SentenceEncoder::from_dir`).
        let query_len = params.query_len().min(encoder.model().config().max_tokens());
        let query_tok = (query_len != encoder.tokenizer().max_len())
            .then(|| TextTokenizer::new(encoder.tokenizer().inner().clone(), query_len))
            .transpose()?;
        let query_dir = model_dir.join(QUERY_ENCODER_DIR);
        let query_encoder = if query_dir.is_dir() {
            let opts = EncodeOptions {
                max_len: query_len,
                ..params.encode.clone()
            };
            Some(SentenceEncoder::from_dir(&query_dir, device, opts)?)
        } else {
            None
        };
        Ok(Self {
            model_dir: model_dir.to_owned(),
            params,
            encoder,
            query_tok,
            query_encoder,
            cache_dir: None,
        })
    }

    /// Keeps document embeddings in `dir` instead of `DATA/cache/embeddings`.
    pub fn with_cache_dir(mut self, dir: PathBuf) -> Self {
        self.cache_dir = Some(dir);
        self
    }

    /// One vector per query (already prefixed), in input order: [`SentenceEncoder::embed`] with the
    /// queries' own truncation when it differs from the documents' (same batching: by length, then
    /// input order).
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if let Some(q) = &self.query_encoder {
            return q.embed(texts);
        }
        let Some(tok) = &self.query_tok else {
            return self.encoder.embed(texts);
        };
        let toks = tok.encode(texts)?;
        let mut order: Vec<usize> = (0..toks.len()).collect();
        order.sort_by_key(|&i| (toks[i].ids.len(), i));
        let mut out = vec![Vec::new(); toks.len()];
        for chunk in order.chunks(self.params.encode.batch_size.max(1)) {
            let seqs: Vec<&Tokens> = chunk.iter().map(|&i| &toks[i]).collect();
            let rows = self.encoder.encode_tokens(&seqs)?.to_vec2::<f32>()?;
            for (&i, row) in chunk.iter().zip(rows) {
                out[i] = row;
            }
        }
        Ok(out)
    }
}

impl Ranker for DenseRanker {
    type Details = NeuralDetails;

    fn seed(&self) -> u64 {
        SEED
    }

    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<NeuralDetails>> {
        let t0 = Instant::now();
        let cache_dir = self
            .cache_dir
            .clone()
            .unwrap_or_else(|| inputs.data.join("cache/embeddings"));
        let mut cached = CachedEncoder::open(&self.encoder, &self.model_dir, &cache_dir)?;
        let before = cached.cache().len();

        // The documents any topic of the split can rank: its pool's, or (no pools) the corpus.
        let mut candidates = Vec::with_capacity(inputs.topics.len());
        if inputs.pooled() {
            for t in &inputs.topics {
                candidates.push(inputs.candidates(&t.topic)?);
            }
        }
        let mut needed: Vec<&DocId> = if inputs.pooled() {
            candidates.iter().flatten().copied().collect()
        } else {
            inputs.corpus.iter().map(|d| &d.doc).collect()
        };
        needed.sort();
        needed.dedup();
        let texts = needed
            .iter()
            .map(|d| Ok(format!("{}{}", self.params.passage_prefix, inputs.text(d)?)))
            .collect::<Result<Vec<String>>>()?;
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let doc_vecs: BTreeMap<&DocId, Vec<f32>> =
            needed.iter().copied().zip(cached.embed(&texts)?).collect();
        let encoded_now = cached.cache().len() - before;
        let t1 = Instant::now();
        let queries: Vec<String> = inputs
            .topics
            .iter()
            .map(|t| format!("{}{}", self.params.query_prefix, t.text))
            .collect();
        let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
        let query_vecs = self.embed_queries(&queries)?;
        let t2 = Instant::now();

        let mut run = Run::new(self.params.system.clone());
        if inputs.pooled() {
            for ((topic, q), candidates) in inputs.topics.iter().zip(&query_vecs).zip(candidates) {
                let mut hits: Vec<Hit> = candidates
                    .into_iter()
                    .map(|d| Hit {
                        doc: d.clone(),
                        score: f64::from(similarity(q, &doc_vecs[d], self.params.similarity)),
                    })
                    .collect();
                hits.sort_by(trec_order);
                hits.truncate(self.params.top_k);
                run.topics.insert(topic.topic.clone(), hits);
            }
        } else {
            // The whole corpus: exact top-k by the engine's products, the same scores as above
            // (`scorers::exact`).
            let docs: Vec<&[f32]> = needed.iter().map(|d| doc_vecs[d].as_slice()).collect();
            let found = crate::scorers::exact::candidates(
                &query_vecs,
                &docs,
                self.params.similarity,
                self.params.top_k,
            )?;
            for (topic, list) in inputs.topics.iter().zip(found) {
                let mut hits: Vec<Hit> = list
                    .into_iter()
                    .map(|(i, score)| Hit {
                        doc: needed[i].clone(),
                        score: f64::from(score),
                    })
                    .collect();
                hits.sort_by(trec_order);
                hits.truncate(self.params.top_k);
                run.topics.insert(topic.topic.clone(), hits);
            }
        }
        let t3 = Instant::now();
        let mut config = to_json(&self.params, &self.model_dir)?;
        if self.query_encoder.is_some() {
            let dir = self.model_dir.join(QUERY_ENCODER_DIR);
            config["query_encoder"] = serde_json::json!({
                "folder": QUERY_ENCODER_DIR,
                "model_hash": crate::checkpoints::model_hash(&dir)?,
            });
        }
        Ok(Ranked {
            run,
            details: NeuralDetails::new(&self.model_dir, config, encoded_now)?,
            timings: [
                ("encode_documents_s".to_owned(), (t1 - t0).as_secs_f64()),
                ("encode_queries_s".to_owned(), (t2 - t1).as_secs_f64()),
                ("rank_s".to_owned(), (t3 - t2).as_secs_f64()),
            ]
            .into(),
        })
    }
}
