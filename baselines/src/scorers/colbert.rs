//! ColBERT (Khattab & Zaharia 2020): late interaction over per-token vectors.
//!
//! As in the paper and its reference code (v1): the query is `[CLS] [Q] q… [SEP]` padded with
//! `[MASK]` to `query_maxlen` (query augmentation; the masks are not attended to unless
//! `attend_to_mask_tokens`, as in v2, but their output vectors all take part in scoring); the document
//! is `[CLS] [D] d… [SEP]` truncated to `doc_maxlen`. `[Q]`/`[D]` are BERT's `[unused0]`/`[unused1]`.
//! Token states go through a linear projection to `dim` (128, no bias) and are L2-normalised;
//! document vectors of punctuation tokens and padding are dropped; the score is MaxSim,
//! `Σ_i max_j q_i · d_j`.
//!
//! A ColBERT checkpoint (colbert-ir/colbertv2.0: `config.json` with `architectures`
//! `["HF_ColBERT"]`, the BERT under `bert.` and `linear.weight` `(dim, hidden)` without bias in
//! `model.safetensors`) brings its settings in `artifact.metadata` ([`METADATA_FILE`]):
//! `query_token_id` / `doc_token_id` (the markers), `dim`, `attend_to_mask_tokens`,
//! `mask_punctuation` and `similarity` are the model's and replace the caller's
//! ([`ColBert::from_dir`]); `query_maxlen` and `doc_maxlen` are the defaults of
//! [`ColBertConfig::for_model`], which a caller may change (they are run settings, as in ColBERT's own
//! `ColBERTConfig`). Only `similarity` `cosine` (MaxSim of dot products of unit vectors) is run; `l2`
//! is refused. The skiplist is ColBERT's: for every `string.punctuation` symbol, the first id the
//! tokenizer gives it alone (`[UNK]` for a symbol the vocabulary lacks).

use std::collections::HashSet;
use std::path::Path;

use candle_core::{D, DType, Device, Tensor};
use candle_nn::{Init, VarBuilder};
use serde::{Deserialize, Serialize};

use crate::encoder::{BertModel, TextTokenizer, Tokens, l2_normalize, pad_batch};
use crate::error::{Error, Result};

/// ColBERT's parameters (defaults from the paper).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColBertConfig {
    /// Output dimension of the projection (default 128).
    #[serde(default = "d_dim")]
    pub dim: usize,
    /// Query length after augmentation (default 32).
    #[serde(default = "d_qlen")]
    pub query_maxlen: usize,
    /// Document truncation length (default 180).
    #[serde(default = "d_dlen")]
    pub doc_maxlen: usize,
    /// Query marker token (default `[unused0]`).
    #[serde(default = "d_qm")]
    pub query_marker: String,
    /// Document marker token (default `[unused1]`).
    #[serde(default = "d_dm")]
    pub doc_marker: String,
    /// Attend to the `[MASK]` padding of queries (false in v1, true in v2).
    #[serde(default)]
    pub attend_to_mask_tokens: bool,
    /// Drop document vectors of punctuation tokens (default true).
    #[serde(default = "d_true")]
    pub mask_punctuation: bool,
    /// Texts per forward pass (default 32).
    #[serde(default = "d_batch")]
    pub batch_size: usize,
}

fn d_dim() -> usize {
    128
}
fn d_qlen() -> usize {
    32
}
fn d_dlen() -> usize {
    180
}
fn d_qm() -> String {
    "[unused0]".into()
}
fn d_dm() -> String {
    "[unused1]".into()
}
fn d_true() -> bool {
    true
}
fn d_batch() -> usize {
    32
}

impl Default for ColBertConfig {
    fn default() -> Self {
        Self {
            dim: d_dim(),
            query_maxlen: d_qlen(),
            doc_maxlen: d_dlen(),
            query_marker: d_qm(),
            doc_marker: d_dm(),
            attend_to_mask_tokens: false,
            mask_punctuation: true,
            batch_size: d_batch(),
        }
    }
}

impl ColBertConfig {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        for (name, value, min) in [
            ("dim", self.dim, 1),
            ("batch_size", self.batch_size, 1),
            ("query_maxlen", self.query_maxlen, 5),
            ("doc_maxlen", self.doc_maxlen, 5),
        ] {
            if value < min {
                return Err(Error::Param(format!(
                    "colbert {name} must be at least {min}, got {value}"
                )));
            }
        }
        Ok(())
    }
}

/// The file of a ColBERT checkpoint holding its settings (ColBERT's `ColBERTConfig`, saved as JSON).
pub const METADATA_FILE: &str = "artifact.metadata";

/// The fields of [`METADATA_FILE`] lexbench reads (the file holds many more: training settings).
#[derive(Debug, Default, Deserialize)]
struct Metadata {
    dim: Option<usize>,
    query_maxlen: Option<usize>,
    doc_maxlen: Option<usize>,
    query_token_id: Option<String>,
    doc_token_id: Option<String>,
    attend_to_mask_tokens: Option<bool>,
    mask_punctuation: Option<bool>,
    similarity: Option<String>,
}

/// The folder's [`METADATA_FILE`], when it has one.
fn read_metadata(dir: &Path) -> Result<Option<Metadata>> {
    let path = dir.join(METADATA_FILE);
    if !crate::encoder::files::present(&path)? {
        return Ok(None);
    }
    let m: Metadata = crate::encoder::files::read_model_json(&path)?;
    match m.similarity.as_deref() {
        None | Some("cosine") => Ok(Some(m)),
        Some(other) => Err(Error::Format {
            path,
            message: format!(
                "similarity {other:?}: lexbench scores ColBERT with cosine (MaxSim of dot products of unit vectors) only"
            ),
        }),
    }
}

impl ColBertConfig {
    /// The settings to run the model in `dir` with: [`ColBertConfig::default`], with every value its
    /// [`METADATA_FILE`] names (markers, `dim`, lengths, `attend_to_mask_tokens`, `mask_punctuation`).
    pub fn for_model(dir: &Path) -> Result<Self> {
        let mut cfg = Self::default();
        if let Some(m) = read_metadata(dir)? {
            cfg.query_maxlen = m.query_maxlen.unwrap_or(cfg.query_maxlen);
            cfg.doc_maxlen = m.doc_maxlen.unwrap_or(cfg.doc_maxlen);
            cfg.apply_model_settings(&m);
        }
        Ok(cfg)
    }

    /// These settings with the model's own from `dir`'s [`METADATA_FILE`], when it has one (markers,
    /// `dim`, `attend_to_mask_tokens`, `mask_punctuation`; not the lengths or the batch size).
    pub fn with_model_settings(mut self, dir: &Path) -> Result<Self> {
        if let Some(m) = read_metadata(dir)? {
            self.apply_model_settings(&m);
        }
        Ok(self)
    }

    /// The model's own settings (everything but the lengths and the batch size).
    fn apply_model_settings(&mut self, m: &Metadata) {
        self.dim = m.dim.unwrap_or(self.dim);
        if let Some(t) = &m.query_token_id {
            self.query_marker.clone_from(t);
        }
        if let Some(t) = &m.doc_token_id {
            self.doc_marker.clone_from(t);
        }
        self.attend_to_mask_tokens = m.attend_to_mask_tokens.unwrap_or(self.attend_to_mask_tokens);
        self.mask_punctuation = m.mask_punctuation.unwrap_or(self.mask_punctuation);
    }
}

/// Whether the weights of the model folder `dir` hold ColBERT's projection `linear.weight` (reads
/// safetensors headers only; a PyTorch checkpoint's checked pickle).
pub fn has_projection(dir: &Path) -> Result<bool> {
    let found = crate::encoder::weights::Weights::of_folder(dir)?;
    Ok(found.tensor_names()?.contains("linear.weight"))
}

/// `Σ_i max_j q_i · d_j` for `q` `(nq, dim)` and `d` `(nd, dim)`. Differentiable (training); to
/// score a query against many documents use [`MaxSimDocs`], one matrix product for all of them.
pub fn maxsim(q: &Tensor, d: &Tensor) -> Result<f32> {
    Ok(q.matmul(&d.t()?)?.max(D::Minus1)?.sum_all()?.to_scalar::<f32>()?)
}

/// Documents' token vectors stacked into one `(Σ n_d, dim)` matrix, so that MaxSim of a query
/// against all of them is one matrix product and a max over each document's columns
/// ([`MaxSimDocs::scores`]), where [`maxsim`] per document runs four tensor ops (and their
/// allocations) for each: with ColBERT's 32 query vectors and a 100-paragraph pool the per-document
/// ops cost several times the arithmetic.
#[derive(Debug, Clone)]
pub struct MaxSimDocs {
    /// `(Σ n_d, dim)`.
    stacked: Tensor,
    /// Document `d`'s rows are `offsets[d]..offsets[d + 1]`.
    offsets: Vec<usize>,
}

impl MaxSimDocs {
    /// Stacks `docs` (each `(n_d, dim)`, `n_d ≥ 1`, one dtype and device). An empty list gives no
    /// scores; a document without vectors, or with another width, is an error.
    pub fn new<T: std::borrow::Borrow<Tensor>>(docs: &[T]) -> Result<Self> {
        let mut offsets = Vec::with_capacity(docs.len() + 1);
        offsets.push(0);
        let mut dim = None;
        for (i, d) in docs.iter().enumerate() {
            let (n, w) = d.borrow().dims2()?;
            if n == 0 {
                return Err(Error::data(
                    "MaxSim documents",
                    format!("document {i} has no token vectors"),
                ));
            }
            if *dim.get_or_insert(w) != w {
                return Err(Error::data(
                    "MaxSim documents",
                    format!(
                        "document {i} has vectors of width {w}, the first {}",
                        dim.unwrap_or(w)
                    ),
                ));
            }
            offsets.push(offsets[i] + n);
        }
        let stacked = if docs.is_empty() {
            Tensor::zeros((0, 1), DType::F32, &Device::Cpu)?
        } else {
            let parts: Vec<&Tensor> = docs.iter().map(|d| d.borrow()).collect();
            Tensor::cat(&parts, 0)?
        };
        Ok(Self { stacked, offsets })
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// MaxSim of `q` `(nq, dim)` against each document, in their order: `Σ_i max_j q_i · d_j`
    /// (the same sums as [`maxsim`], to rounding).
    pub fn scores(&self, q: &Tensor) -> Result<Vec<f32>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let sims = q.matmul(&self.stacked.t()?)?.to_dtype(DType::F32)?;
        let (nq, total) = sims.dims2()?;
        let sims = sims.flatten_all()?.to_vec1::<f32>()?;
        let mut out = vec![0f32; self.len()];
        for row in sims.chunks_exact(total.max(1)).take(nq) {
            for (o, w) in out.iter_mut().zip(self.offsets.windows(2)) {
                *o += row[w[0]..w[1]].iter().copied().fold(f32::NEG_INFINITY, f32::max);
            }
        }
        Ok(out)
    }
}

/// The ColBERT scorer.
#[derive(Debug, Clone)]
pub struct ColBert {
    model: BertModel,
    query_tok: TextTokenizer,
    doc_tok: TextTokenizer,
    linear: Tensor,
    cfg: ColBertConfig,
    q_marker: u32,
    d_marker: u32,
    mask_id: u32,
    skiplist: HashSet<u32>,
    /// Whether `linear.weight` came from the checkpoint (a trained ColBERT) rather than from the
    /// caller's new weights (a seeded projection: late interaction over the checkpoint's token
    /// states, not ColBERT's trained model).
    projection_from_checkpoint: bool,
}

impl ColBert {
    /// Builds from parts. `tokenizer` is any wrapper of the model's tokenizer (its truncation is
    /// replaced); `vb` holds (or creates, from a `VarMap`) `linear.weight` `(dim, hidden)`.
    pub fn new(
        model: BertModel,
        tokenizer: &TextTokenizer,
        vb: VarBuilder<'_>,
        cfg: ColBertConfig,
    ) -> Result<Self> {
        cfg.validate()?;
        let id = |t: &str| {
            tokenizer.token_id(t).ok_or_else(|| {
                Error::Param(format!(
                    "ColBERT: token {t:?} is not in the model's vocabulary (query_marker and doc_marker \
                         must be single tokens of it, and the model must have [MASK])"
                ))
            })
        };
        let (q_marker, d_marker, mask_id) = (id(&cfg.query_marker)?, id(&cfg.doc_marker)?, id("[MASK]")?);
        // ColBERT's skiplist (`ColBERT.__init__`): for every string.punctuation symbol, the first id
        // the tokenizer gives it alone, without special tokens ([UNK] for one the vocabulary lacks).
        let mut skiplist = HashSet::new();
        for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".chars() {
            let enc = tokenizer
                .inner()
                .encode(c.to_string(), false)
                .map_err(|e| Error::Tokenizer {
                    context: format!("ColBERT's skiplist ({c:?})"),
                    message: e.to_string(),
                })?;
            if let Some(&id) = enc.get_ids().first() {
                skiplist.insert(id);
            }
        }
        let h = model.config().hidden_size;
        let linear = vb.get_with_hints(
            (cfg.dim, h),
            "linear.weight",
            Init::Randn {
                mean: 0.0,
                stdev: (1.0 / h as f64).sqrt(),
            },
        )?;
        // Markers take one position, so the tokenizers truncate one shorter.
        let query_tok = TextTokenizer::new(tokenizer.inner().clone(), cfg.query_maxlen - 1)?;
        let doc_tok = TextTokenizer::new(tokenizer.inner().clone(), cfg.doc_maxlen - 1)?;
        Ok(Self {
            model,
            query_tok,
            doc_tok,
            linear,
            cfg,
            q_marker,
            d_marker,
            mask_id,
            skiplist,
            projection_from_checkpoint: false,
        })
    }

    /// Whether the projection was read from the checkpoint ([`Self::from_dir`] on a folder with
    /// `linear.weight`); false for a new or seeded one.
    pub fn projection_from_checkpoint(&self) -> bool {
        self.projection_from_checkpoint
    }

    /// Loads a HF folder; `linear.weight` comes from the checkpoint when present (a trained ColBERT),
    /// otherwise from `new_linear` (e.g. a fresh `VarMap`). A folder with [`METADATA_FILE`] runs with
    /// its markers, `dim`, `attend_to_mask_tokens` and `mask_punctuation` whatever `cfg` says (they are
    /// the model's); `cfg`'s lengths and batch size stay.
    pub fn from_dir(
        dir: &Path,
        device: &Device,
        cfg: ColBertConfig,
        new_linear: VarBuilder<'_>,
    ) -> Result<Self> {
        let cfg = cfg.with_model_settings(dir)?;
        let model = BertModel::from_dir(dir, device)?;
        let tok = TextTokenizer::from_file(&dir.join("tokenizer.json"), cfg.doc_maxlen)?;
        let found = crate::encoder::weights::Weights::of_folder(dir)?;
        let vb = found.var_builder(device, "config.json")?;
        let weights = found.path().to_owned();
        if vb.contains_tensor("linear.weight") {
            let mut cb = Self::new(model, &tok, vb, cfg)
                .map_err(|e| e.in_weights(&weights, "the ColBERT settings"))?;
            cb.projection_from_checkpoint = true;
            Ok(cb)
        } else {
            Self::new(model, &tok, new_linear, cfg)
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ColBertConfig {
        &self.cfg
    }

    /// `[CLS] [Q] q… [SEP] [MASK]…`, exactly `query_maxlen` tokens.
    pub fn query_tokens(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        let attend = u32::from(self.cfg.attend_to_mask_tokens);
        Ok(self
            .query_tok
            .encode(texts)?
            .into_iter()
            .map(|mut t| {
                insert_marker(&mut t, self.q_marker);
                let pad = self.cfg.query_maxlen.saturating_sub(t.ids.len());
                t.ids.extend(std::iter::repeat_n(self.mask_id, pad));
                t.type_ids.extend(std::iter::repeat_n(0, pad));
                t.mask.extend(std::iter::repeat_n(attend, pad));
                t
            })
            .collect())
    }

    /// `[CLS] [D] d… [SEP]`, at most `doc_maxlen` tokens.
    pub fn doc_tokens(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        Ok(self
            .doc_tok
            .encode(texts)?
            .into_iter()
            .map(|mut t| {
                insert_marker(&mut t, self.d_marker);
                t
            })
            .collect())
    }

    /// Projected, normalised token vectors of one batch, `(b, s, dim)`.
    pub fn forward_t(&self, seqs: &[&Tokens], train: bool) -> Result<Tensor> {
        let inputs = pad_batch(seqs, self.query_tok.pad_id(), self.model.device())?;
        let h = self.model.forward_t(&inputs, train)?;
        let (b, s, hid) = h.dims3()?;
        let p = h.reshape((b * s, hid))?.matmul(&self.linear.t()?)?;
        Ok(l2_normalize(&p)?.reshape((b, s, self.cfg.dim))?)
    }

    fn encode(&self, toks: &[Tokens], keep: impl Fn(&Tokens, usize) -> bool) -> Result<Vec<Tensor>> {
        let mut order: Vec<usize> = (0..toks.len()).collect();
        order.sort_by_key(|&i| (toks[i].ids.len(), i));
        let mut out: Vec<Option<Tensor>> = vec![None; toks.len()];
        for chunk in order.chunks(self.cfg.batch_size) {
            let seqs: Vec<&Tokens> = chunk.iter().map(|&i| &toks[i]).collect();
            // Detached: with trainable weights the output would hold the batch's whole forward graph
            // (every layer's activations) for as long as its rows are kept, here until every
            // document is encoded (24 GB on a validation split of 19,500 paragraphs).
            let v = self.forward_t(&seqs, false)?.detach();
            for (row, &i) in chunk.iter().enumerate() {
                let t = &toks[i];
                let idx: Vec<u32> = (0..t.ids.len())
                    .filter(|&j| keep(t, j))
                    .map(|j| j as u32)
                    .collect();
                let idx = Tensor::new(idx.as_slice(), v.device())?;
                out[i] = Some(v.get(row)?.index_select(&idx, 0)?);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// One `(query_maxlen, dim)` matrix per query (every position, `[MASK]`s included).
    pub fn encode_queries(&self, texts: &[&str]) -> Result<Vec<Tensor>> {
        let toks = self.query_tokens(texts)?;
        self.encode(&toks, |_, _| true)
    }

    /// One `(n, dim)` matrix per document: its tokens minus punctuation (when masked).
    pub fn encode_docs(&self, texts: &[&str]) -> Result<Vec<Tensor>> {
        let toks = self.doc_tokens(texts)?;
        let mask_punct = self.cfg.mask_punctuation;
        self.encode(&toks, |t, j| !(mask_punct && self.skiplist.contains(&t.ids[j])))
    }

    /// Whether a document token id is masked as punctuation.
    pub fn is_punctuation(&self, id: u32) -> bool {
        self.skiplist.contains(&id)
    }

    /// MaxSim of every query against every document: `out[q][d]`.
    pub fn score(&self, queries: &[&str], docs: &[&str]) -> Result<Vec<Vec<f32>>> {
        let q = self.encode_queries(queries)?;
        let d = MaxSimDocs::new(&self.encode_docs(docs)?)?;
        q.iter().map(|qv| d.scores(qv)).collect()
    }
}

fn insert_marker(t: &mut Tokens, marker: u32) {
    let at = 1.min(t.ids.len());
    t.ids.insert(at, marker);
    t.type_ids.insert(at, 0);
    t.mask.insert(at, 1);
}
