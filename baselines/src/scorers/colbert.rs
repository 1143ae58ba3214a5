//! ColBERT (Khattab & Zaharia 2020): late interaction over per-token vectors.
//!
//! As in the paper and its reference code (v1): the query is `[CLS] [Q] q… [SEP]` padded with
//! `[MASK]` to `query_maxlen` (query augmentation; the masks are not attended to unless
//! `attend_to_mask_tokens`, as in v2, but their output vectors all take part in scoring); the document
//! is `[CLS] [D] d… [SEP]` truncated to `doc_maxlen`. `[Q]`/`[D]` are BERT's `[unused0]`/`[unused1]`.
//! Token states go through a linear projection to `dim` (128, no bias) and are L2-normalised;
//! document vectors of punctuation tokens and padding are dropped; the score is MaxSim,
//! `Σ_i max_j q_i · d_j`.

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

/// `Σ_i max_j q_i · d_j` for `q` `(nq, dim)` and `d` `(nd, dim)`.
pub fn maxsim(q: &Tensor, d: &Tensor) -> Result<f32> {
    Ok(q.matmul(&d.t()?)?.max(D::Minus1)?.sum_all()?.to_scalar::<f32>()?)
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
        // ColBERT's skiplist: every string.punctuation symbol that is a token of its own.
        let skiplist = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
            .chars()
            .filter_map(|c| tokenizer.token_id(&c.to_string()))
            .collect();
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
    /// otherwise from `new_linear` (e.g. a fresh `VarMap`).
    pub fn from_dir(
        dir: &Path,
        device: &Device,
        cfg: ColBertConfig,
        new_linear: VarBuilder<'_>,
    ) -> Result<Self> {
        let model = BertModel::from_dir(dir, device)?;
        let tok = TextTokenizer::from_file(&dir.join("tokenizer.json"), cfg.doc_maxlen)?;
        let weights = crate::encoder::files::weights_file(dir);
        let bytes = std::fs::read(&weights).map_err(crate::error::io_err(&weights))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)
            .map_err(crate::error::weights_err(&weights, "config.json"))?;
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
            let v = self.forward_t(&seqs, false)?;
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
        let d = self.encode_docs(docs)?;
        q.iter()
            .map(|qv| d.iter().map(|dv| maxsim(qv, dv)).collect())
            .collect()
    }
}

fn insert_marker(t: &mut Tokens, marker: u32) {
    let at = 1.min(t.ids.len());
    t.ids.insert(at, marker);
    t.type_ids.insert(at, 0);
    t.mask.insert(at, 1);
}
