//! A training run's configuration: one TOML file per experiment (`baselines/configs/*.toml`).
//!
//! ```toml
//! name = "dpr-minilm"            # output folder and run tag
//! model = "dpr"                  # dpr | ance | colbert | cross_encoder
//! base = "models/minilm"         # any HuggingFace BERT folder
//! seed = 20261122
//!
//! [data]
//! dataset = "ecthr"
//! train_split = "train"
//! val_split = "val"
//! # query_prefix = "query: "    # E5 models: before every query / passage the network reads
//! # passage_prefix = "passage: "
//!
//! [negatives]                    # per positive
//! bm25 = 4
//! random = 1
//!
//! [optim]
//! lr = 3e-5
//!
//! [schedule]
//! epochs = 5
//! batch_size = 8
//!
//! [peft]                         # optional: lora | adapter | prefix
//! method = "lora"
//! lora = { rank = 8, alpha = 16 }
//!
//! [sweep]                        # optional: `lexbench train --sweep` trains every combination
//! lr = [1e-5, 3e-5]              # (see sweep)
//! "peft.lora" = [{ rank = 8, alpha = 8 }, { rank = 16, alpha = 16 }]
//!
//! [curriculum]                   # optional: CuSINeS, with negatives.curriculum > 0
//! semantic = "dynamic"           # or "static_bm25"
//! views = { semantic = true, hierarchical = true, sequential = true }
//! ```

pub mod gnn;
pub mod grid;
mod load;
pub mod qabisar;
pub mod sweep;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use gnn::GnnConfig;
pub use grid::SweepGrid;
pub use load::Overrides;
pub use qabisar::QabisarConfig;

use super::optim::AdamWConfig;
use super::spans::ValueSpans;
use crate::curriculum::CurriculumConfig;
use crate::encoder::hier::HierConfig;
use crate::encoder::peft::{PeftConfig, PeftMethod};
use crate::encoder::{Pooling, TextPrefixes};
use crate::error::{Error, Result};
use crate::scorers::colbert::ColBertConfig;

/// The model being trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Bi-encoder (shared query/passage encoder), NLL over the positive, its negatives and the
    /// other examples' passages (in-batch negatives).
    Dpr,
    /// DPR trained on negatives mined by the model itself, refreshed every epoch.
    Ance,
    /// Late interaction (MaxSim) with the same loss as DPR.
    Colbert,
    /// Cross-encoder: binary cross-entropy on query–passage pairs.
    CrossEncoder,
}

impl ModelKind {
    /// Whether the model embeds queries and passages separately (DPR, ANCE).
    pub fn is_biencoder(self) -> bool {
        matches!(self, Self::Dpr | Self::Ance)
    }
}

/// Which dataset and splits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// The dataset (a folder under DATA/datasets).
    pub dataset: String,
    /// Training split (default `train`).
    #[serde(default = "default_train")]
    pub train_split: String,
    /// Validation split for model selection (default `val`); empty to select the last epoch.
    #[serde(default = "default_val")]
    pub val_split: String,
    /// Query truncation in tokens (default 64).
    #[serde(default = "default_qlen")]
    pub max_query_len: usize,
    /// Passage truncation in tokens (default 256).
    #[serde(default = "default_dlen")]
    pub max_doc_len: usize,
    /// Use at most this many training topics (0 = all): for quick CPU presets.
    #[serde(default)]
    pub max_train_topics: usize,
    /// Leave out topics without paragraph text (empty pool, relevant paragraphs missing from the
    /// corpus) instead of failing: for the published release imported with some judgments only.
    #[serde(default)]
    pub skip_topics_without_text: bool,
    /// Put before every query text the network reads, in training and in every ranking with it (E5:
    /// `"query: "`; default none, left out of the serialised config). BM25 never sees it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_prefix: String,
    /// Put before every passage text the network reads (E5: `"passage: "`; default none), as
    /// `query_prefix`. A cross-encoder reads `[CLS] query_prefix q [SEP] passage_prefix p [SEP]`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passage_prefix: String,
}

impl DataConfig {
    /// The text prefixes (`query_prefix`, `passage_prefix`).
    pub fn prefixes(&self) -> TextPrefixes {
        TextPrefixes {
            query: self.query_prefix.clone(),
            passage: self.passage_prefix.clone(),
        }
    }
}

fn default_train() -> String {
    "train".into()
}
fn default_val() -> String {
    "val".into()
}
fn default_qlen() -> usize {
    64
}
fn default_dlen() -> usize {
    256
}

/// Negatives per positive, by source. Candidates are the topic's pool (ECtHR: the judgment's
/// paragraphs) or the whole corpus (BSARD); the topic's positives are never negatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NegativesConfig {
    /// Uniformly random candidates.
    #[serde(default)]
    pub random: usize,
    /// From BM25's ranking of the candidates (static, ranked once): the top `bm25` non-positives in
    /// rank order (`bm25_order = "ranked"`, the ECtHR paper's), or drawn uniformly from the top
    /// `bm25_depth` non-positives (`"uniform"`, the default).
    #[serde(default)]
    pub bm25: usize,
    /// How BM25 negatives are taken from BM25's ranking (default `uniform`; left out of the
    /// serialised config when uniform, so runs trained before the key existed still resume).
    #[serde(default, skip_serializing_if = "NegativeOrder::is_uniform")]
    pub bm25_order: NegativeOrder,
    /// Drawn from the model's own top `model_depth` candidates, re-ranked at every epoch (ANCE).
    #[serde(default)]
    pub model: usize,
    /// BM25 candidates considered (default 30).
    #[serde(default = "default_depth")]
    pub bm25_depth: usize,
    /// Model-ranked candidates considered (default 30).
    #[serde(default = "default_depth")]
    pub model_depth: usize,
    /// When ANCE's model-mined negatives are mined again: 0 (the default) at the start of every
    /// epoch, from the model as the previous epoch left it; N > 0 also every N updates within an
    /// epoch (the ANCE paper refreshes asynchronously at each checkpoint; here synchronously, the
    /// training waiting for the new ranking). Needs `model > 0`; left out of the serialised config
    /// when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_refresh_steps: usize,
    /// Drawn by the CuSINeS curriculum sampler (needs a `[curriculum]` section): difficulty buckets
    /// from the fused semantic / hierarchical / sequential views, easy → hard over the epochs.
    #[serde(default)]
    pub curriculum: usize,
}

fn default_depth() -> usize {
    30
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How negatives are taken from a ranking of the candidates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NegativeOrder {
    /// Uniformly at random from the top `depth` non-positives (seeded per epoch).
    #[default]
    Uniform,
    /// The top non-positives in rank order, the same every epoch: the ECtHR paper's "top
    /// non-relevant paragraphs of the same judgment retrieved by BM25".
    Ranked,
}

impl NegativeOrder {
    /// Whether this is the default (left out of serialised configs).
    pub fn is_uniform(&self) -> bool {
        *self == Self::Uniform
    }
}

impl Default for NegativesConfig {
    fn default() -> Self {
        Self {
            random: 0,
            bm25: 0,
            bm25_order: NegativeOrder::Uniform,
            model: 0,
            bm25_depth: default_depth(),
            model_depth: default_depth(),
            model_refresh_steps: 0,
            curriculum: 0,
        }
    }
}

impl NegativesConfig {
    /// Negatives per positive.
    pub fn total(&self) -> usize {
        self.random + self.bm25 + self.model + self.curriculum
    }
}

/// Epochs, batches and the learning-rate schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Epochs (the paper: 5 full fine-tuning, 15 PEFT).
    pub epochs: usize,
    /// Training examples (query, positive, negatives) per batch (default 8).
    #[serde(default = "default_batch")]
    pub batch_size: usize,
    /// Share of the updates spent warming up (default 0.1).
    #[serde(default = "default_warmup")]
    pub warmup_ratio: f64,
    /// Global gradient-norm clip (default 1.0; 0 = off).
    #[serde(default = "default_clip")]
    pub max_grad_norm: f64,
    /// Stop after this many updates in total (0 = no limit): for tests and smoke runs.
    #[serde(default)]
    pub max_steps: usize,
}

fn default_batch() -> usize {
    8
}
fn default_warmup() -> f64 {
    0.1
}
fn default_clip() -> f64 {
    1.0
}

/// How a bi-encoder embeds passages (articles).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArticleEncoder {
    /// The shared BERT and pooling, passages truncated to `data.max_doc_len` (default).
    #[default]
    Flat,
    /// [`crate::encoder::hier::HierarchicalEncoder`] over the shared BERT: the passage's content tokens (up
    /// to `(hier.seg_len − 2) · hier.max_segments`, `data.max_doc_len` does not apply) cut into
    /// `[CLS] … [SEP]` segments, their `[CLS]` states through a small transformer, max-pooled.
    /// Queries stay with the plain BERT and pooling. Its parameters are trainable variables named
    /// `hier.…` (also with PEFT: they are new).
    Hierarchical,
}

impl ArticleEncoder {
    /// Whether this is the default flat encoder (left out of serialised configs).
    pub fn is_flat(&self) -> bool {
        *self == Self::Flat
    }
}

/// The bi-encoder's head.
///
/// ```toml
/// [biencoder]
/// pooling = "mean"
/// cosine = true
/// scale = 20.0
/// in_batch = true
/// article_encoder = "hierarchical"   # default "flat"
/// hier = { seg_len = 128, max_segments = 4, heads = 12 }   # crate::encoder::hier::HierConfig
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BiEncoderConfig {
    /// Pooling (default mean, all-MiniLM-L6-v2's; DPR and ANCE use `cls`).
    #[serde(default = "default_pooling")]
    pub pooling: Pooling,
    /// Score = cosine · scale when true (sentence-transformers' MultipleNegativesRankingLoss), the
    /// dot product divided by `temperature` otherwise (DPR, and the CuSINeS / QABISAR papers).
    /// Default true.
    #[serde(default = "default_true")]
    pub cosine: bool,
    /// Scale of cosine scores (default 20).
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// Temperature of dot-product scores (`cosine = false`): score = q · d / temperature (default 1,
    /// DPR's plain dot product). Refused with cosine scores, which use `scale`.
    #[serde(default = "default_temperature", skip_serializing_if = "is_one")]
    pub temperature: f64,
    /// Use the other examples' passages as extra negatives (default true).
    #[serde(default = "default_true")]
    pub in_batch: bool,
    /// One encoder for queries and passages (`shared`, the default: sentence-transformers'
    /// convention) or two (`separate`: a query encoder E_q and a passage encoder E_p, both from
    /// `base`; DPR's towers, the ECtHR paper's "separate encoders"). DPR and ANCE only; left out of the
    /// serialised config when shared.
    #[serde(default, skip_serializing_if = "Encoders::is_shared")]
    pub encoders: Encoders,
    /// How passages are embedded: `flat` (default) or `hierarchical` (DPR and ANCE only).
    #[serde(default, skip_serializing_if = "ArticleEncoder::is_flat")]
    pub article_encoder: ArticleEncoder,
    /// Settings of the hierarchical encoder; absent = [`HierConfig::default`] (`seg_len` 128,
    /// `max_segments` 16, 2 layers, 12 heads, FFN 4×, dropout 0.1, `layer_norm_eps` 1e-5). Only
    /// with `article_encoder = "hierarchical"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hier: Option<HierConfig>,
}

/// Whether a bi-encoder's queries and passages go through one encoder or two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoders {
    /// One encoder for both (sentence-transformers' bi-encoders).
    #[default]
    Shared,
    /// A query encoder and a passage encoder, trained apart from the same start (DPR).
    Separate,
}

impl Encoders {
    /// Whether this is the default shared encoder (left out of serialised configs).
    pub fn is_shared(&self) -> bool {
        *self == Self::Shared
    }
}

/// How a bi-encoder turns two embeddings into a score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Similarity {
    /// `scale · cos(q, d)`: embeddings L2-normalised, then the dot product times `scale`.
    Cosine {
        /// The scale (sentence-transformers' 20).
        scale: f64,
    },
    /// `q · d / temperature` on the raw embeddings.
    Dot {
        /// The temperature (1: DPR's plain dot product).
        temperature: f64,
    },
}

impl Similarity {
    /// What multiplies the dot product of the (normalised, for cosine) embeddings.
    pub fn factor(self) -> f64 {
        match self {
            Self::Cosine { scale } => scale,
            Self::Dot { temperature } => 1.0 / temperature,
        }
    }

    /// Whether embeddings are L2-normalised before the dot product.
    pub fn normalises(self) -> bool {
        matches!(self, Self::Cosine { .. })
    }

    /// `v` as it enters the dot product: L2-normalised rows for cosine, unchanged for dot.
    pub fn prepare(self, v: &candle_core::Tensor) -> Result<candle_core::Tensor> {
        if self.normalises() {
            crate::encoder::l2_normalize(v)
        } else {
            Ok(v.clone())
        }
    }

    /// The `(q, d)` score matrix of prepared embeddings `q` `(n, h)` and `d` `(m, h)`.
    pub fn scores(self, q: &candle_core::Tensor, d: &candle_core::Tensor) -> Result<candle_core::Tensor> {
        Ok((q.matmul(&d.t()?)? * self.factor())?)
    }
}

impl BiEncoderConfig {
    /// The scoring function: cosine · `scale`, or dot product / `temperature`.
    pub fn similarity(&self) -> Similarity {
        if self.cosine {
            Similarity::Cosine { scale: self.scale }
        } else {
            Similarity::Dot {
                temperature: self.temperature,
            }
        }
    }

    /// The hierarchical encoder's settings when `article_encoder = "hierarchical"`.
    pub fn hierarchical(&self) -> Option<HierConfig> {
        (self.article_encoder == ArticleEncoder::Hierarchical).then(|| self.hier.clone().unwrap_or_default())
    }
}

fn default_pooling() -> Pooling {
    Pooling::Mean
}
fn default_true() -> bool {
    true
}
fn default_scale() -> f64 {
    20.0
}
fn default_temperature() -> f64 {
    1.0
}
fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl Default for BiEncoderConfig {
    fn default() -> Self {
        Self {
            pooling: default_pooling(),
            cosine: true,
            scale: default_scale(),
            temperature: default_temperature(),
            in_batch: true,
            encoders: Encoders::Shared,
            article_encoder: ArticleEncoder::Flat,
            hier: None,
        }
    }
}

/// Model selection on the validation split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// The measure to maximise, as `lexbench eval` names it. Default `R@5%`, which needs pools (ECtHR):
    /// a whole-corpus dataset (BSARD) must name another (its configs say `R@100`), or training stops
    /// with an error before the first epoch.
    #[serde(default = "default_measure")]
    pub measure: String,
    /// Documents ranked per topic (default 1000).
    #[serde(default = "default_top_k")]
    pub top_k: usize,
}

fn default_measure() -> String {
    "R@5%".into()
}
fn default_top_k() -> usize {
    1000
}

impl EvalConfig {
    /// Refuses runs shallower than the measures a whole-corpus dataset of `documents` documents is
    /// scored with (`pooled` false): a run cut at 200 would report R@500 equal to R@200. The depth
    /// needed is R@500's, or the whole corpus when it is smaller; pooled datasets rank whole pools.
    pub fn check_depth(&self, pooled: bool, documents: usize) -> Result<()> {
        let deepest = lexbench_core::eval::corpus_depth();
        let need = deepest.min(documents);
        if !pooled && self.top_k < need {
            return Err(Error::Param(format!(
                "eval.top_k = {} is shallower than the leaderboard's measures of a whole-corpus dataset \
                 (R@{deepest} reads {need} of its {documents} documents); set top_k to at least {need}",
                self.top_k
            )));
        }
        Ok(())
    }
}

impl Default for EvalConfig {
    fn default() -> Self {
        Self {
            measure: default_measure(),
            top_k: default_top_k(),
        }
    }
}

/// One training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// The run's name: its output folder and the tag of the runs it produces.
    pub name: String,
    /// What the config reproduces (a paper's table row), for the model card.
    #[serde(default)]
    pub description: String,
    /// The model.
    pub model: ModelKind,
    /// The initial checkpoint (HF BERT folder); relative paths are resolved against the working
    /// directory.
    pub base: PathBuf,
    /// Seed of every random choice (initialisation, order, negatives, dropout).
    pub seed: u64,
    /// Dataset and splits.
    pub data: DataConfig,
    /// Negatives.
    pub negatives: NegativesConfig,
    /// Optimiser.
    #[serde(default)]
    pub optim: AdamWConfig,
    /// Learning rates to sweep (`lexbench train --sweep`): each gets its own run, the best on the
    /// validation split is kept. The ECtHR paper swept {1e-5, 3e-5, 5e-5, 1e-4, 3e-4}. The `lr`
    /// axis of the grid; not together with `[sweep] lr`.
    #[serde(default)]
    pub lr_sweep: Vec<f64>,
    /// A grid to sweep (`[sweep]`, `lexbench train --sweep`): dotted keys of this configuration and
    /// the values each takes, every combination trained (see [`sweep`]); absent = none.
    #[serde(default, skip_serializing_if = "SweepGrid::is_empty")]
    pub sweep: SweepGrid,
    /// Epochs and batches.
    pub schedule: ScheduleConfig,
    /// Bi-encoder settings (DPR, ANCE).
    #[serde(default)]
    pub biencoder: BiEncoderConfig,
    /// ColBERT settings.
    #[serde(default)]
    pub colbert: ColBertConfig,
    /// PEFT; absent = full fine-tuning.
    #[serde(default)]
    pub peft: Option<PeftConfig>,
    /// Model selection.
    #[serde(default)]
    pub eval: EvalConfig,
    /// CuSINeS curriculum negatives (`negatives.curriculum` per positive); absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curriculum: Option<CurriculumConfig>,
    /// DR+GNN: after the bi-encoder, train a GAT over the dataset's legislative graph (`graph.json`)
    /// that enriches article embeddings (see [`super::dr_gnn`]); absent = plain dense retrieval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gnn: Option<GnnConfig>,
    /// QABISAR: train the query encoder and a GAT over the query–article–structure graph instead of
    /// the plain trainer (see [`super::qabisar`]); absent = the trainer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qabisar: Option<QabisarConfig>,
}

/// Why [`set_dotted`] refused a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SetError {
    /// The key is empty or has an empty part.
    EmptyKey,
    /// A table on the key's path is not in the configuration.
    NoTable(String),
}

impl SetError {
    /// The message, `what` naming the configuration.
    pub(crate) fn message(&self, what: &str) -> String {
        match self {
            Self::EmptyKey => "the key is empty or has an empty part".into(),
            Self::NoTable(t) => format!("{what} has no [{t}] table"),
        }
    }
}

/// Sets the dotted `key` of a configuration's TOML to `value`: `--set` and sweep points. Only values
/// of tables the document has: `gnn.epochs` must not turn a DR config into DR+GNN by creating its
/// `[gnn]` section. A table value over a table sets only the keys it names, recursively.
pub(crate) fn set_dotted(
    doc: &mut toml::Table,
    key: &str,
    value: toml::Value,
) -> std::result::Result<(), SetError> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(SetError::EmptyKey);
    }
    let Some((last, tables)) = parts.split_last() else {
        return Err(SetError::EmptyKey);
    };
    let mut table = doc;
    for t in tables {
        table = table
            .get_mut(*t)
            .and_then(toml::Value::as_table_mut)
            .ok_or_else(|| SetError::NoTable((*t).to_owned()))?;
    }
    fn merge(into: &mut toml::Table, key: &str, value: toml::Value) {
        match (into.get_mut(key), value) {
            (Some(toml::Value::Table(old)), toml::Value::Table(new)) => {
                for (k, v) in new {
                    merge(old, &k, v);
                }
            }
            (_, value) => {
                into.insert(key.to_owned(), value);
            }
        }
    }
    merge(table, last, value);
    Ok(())
}

/// The longest input, in tokens, a configuration may give an encoder (`data.max_query_len`,
/// `data.max_doc_len`): what long-context BERTs read. The base model's own limit (its
/// `max_position_embeddings`, 512 for BERT and MiniLM) is checked before the model is loaded
/// ([`TrainConfig::check_positions`]).
pub const MAX_SEQ_LEN: usize = 8192;
/// The most epochs (`schedule.epochs`).
pub const MAX_EPOCHS: usize = 1000;
/// The largest batch (`schedule.batch_size`).
pub const MAX_BATCH_SIZE: usize = 4096;
/// The most negatives per positive from one source (`negatives.random`, `bm25`, `model`,
/// `curriculum`).
pub const MAX_NEGATIVES: usize = 1000;
/// The most updates between two refreshes of ANCE's negatives (`negatives.model_refresh_steps`).
pub const MAX_REFRESH_STEPS: usize = 10_000_000;
/// The deepest candidate list negatives are drawn from (`negatives.bm25_depth`, `model_depth`).
pub const MAX_NEGATIVE_DEPTH: usize = 100_000;
/// The most documents ranked per topic (`eval.top_k`).
pub const MAX_TOP_K: usize = 10_000_000;
/// The highest LoRA rank (`peft.lora.rank`).
pub const MAX_LORA_RANK: usize = 4096;
/// The learning rates accepted (`optim.lr`, `lr_sweep`, `[sweep] lr`, `lexbench train --lr`), as
/// [`lr_ok`] checks them.
/// No upper bound: a rate that makes training diverge stops it with [`Error::Diverged`].
pub const LR_RANGE: &str = "a finite number > 0";

/// Whether `lr` is a learning rate [`LR_RANGE`] allows.
pub fn lr_ok(lr: f64) -> bool {
    lr.is_finite() && lr > 0.0
}

/// What [`TrainConfig::check`] refused: the dotted key (`optim.lr`, `lr_sweep[1]`,
/// `sweep.peft.lora[0]`), the value as read when the message is about one value, and what is wrong
/// or allowed. Shown as `KEY = VALUE: MESSAGE` (`optim.lr = inf: must be a finite number > 0`),
/// or the message alone when it is about several values; the key is where
/// [`TrainConfig::from_file`] finds the line.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The key the problem is at, when it is at one.
    pub key: Option<String>,
    /// The value, as the configuration reads (`inf`, `"P@0"`), when the message is about it alone.
    pub value: Option<String>,
    /// What is wrong: the allowed range (`must be an integer from 4 to 8192`), or a sentence.
    pub message: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.key, &self.value) {
            (Some(k), Some(v)) => write!(f, "{k} = {v}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl From<Invalid> for Error {
    fn from(e: Invalid) -> Self {
        Error::Param(e.to_string())
    }
}

type Checked = std::result::Result<(), Invalid>;

/// `key = value` is refused: `message`.
fn refuse(key: &str, value: impl std::fmt::Display, message: impl Into<String>) -> Invalid {
    Invalid {
        key: Some(key.to_owned()),
        value: Some(value.to_string()),
        message: message.into(),
    }
}

/// A sentence about the configuration, located at `key`.
fn about(key: &str, message: impl Into<String>) -> Invalid {
    Invalid {
        key: Some(key.to_owned()),
        value: None,
        message: message.into(),
    }
}

/// `key`'s error from another module's `validate`, located at `key`.
fn param(key: &str, e: Error) -> Invalid {
    about(
        key,
        match e {
            Error::Param(m) => m,
            e => e.to_string(),
        },
    )
}

/// A float that must be finite and satisfy `ok`, `allowed` saying how.
fn float(key: &str, v: f64, ok: bool, allowed: &str) -> Checked {
    if v.is_finite() && ok {
        Ok(())
    } else {
        Err(refuse(key, short_float(v), format!("must be {allowed}")))
    }
}

/// A number as a message echoes it: as Rust writes it (`-0.00003`, `12.5`), or in scientific
/// notation where that would be long (`1e300`, not its 301 digits).
pub fn short_float(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() > 24 { format!("{v:e}") } else { plain }
}

/// An integer in `lo..=hi`.
fn int(key: &str, v: usize, lo: usize, hi: usize) -> Checked {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(refuse(key, v, format!("must be an integer from {lo} to {hi}")))
    }
}

/// `message` on one line (the toml crate's messages may span several).
fn one_line(message: &str) -> String {
    message
        .trim()
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The error of `path`, at `line` when known: shown `PATH:LINE: MESSAGE`.
fn file_error(path: &Path, line: Option<usize>, message: String) -> Error {
    Error::Format {
        path: match line {
            Some(l) => PathBuf::from(format!("{}:{l}", path.display())),
            None => path.to_owned(),
        },
        message,
    }
}

/// A deserialisation error of `text` (the file `path`) on one line, at its line, naming the key and
/// the value as written when the error is about one value (`data.max_query_len = 4e9: invalid type:
/// floating point …, expected usize`).
fn toml_error(path: &Path, text: &str, spans: &ValueSpans, e: &toml::de::Error) -> Error {
    let message = one_line(e.message());
    let Some(span) = e.span() else {
        return file_error(path, None, message);
    };
    let message = match (spans.value_at(&span), text.get(span.clone())) {
        (Some((key, true)), Some(raw)) if !raw.contains('\n') => format!("{key} = {raw}: {message}"),
        (Some((key, _)), _) => format!("{key}: {message}"),
        _ => message,
    };
    file_error(path, Some(spans.line(span.start)), message)
}

/// The TOML value of `--set KEY=RAW`: RAW as TOML, or a bare word as a string.
fn override_value(raw: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()))
}

/// Whether the override of `set` sets `key` (itself, or a table or array holding it).
fn sets(set: &str, key: &str) -> bool {
    key.strip_prefix(set)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

impl TrainConfig {
    /// Reads and validates a TOML file (a byte-order mark is ignored). Errors are one line naming
    /// the file and, where the problem is at a value, its line, key, value and what is allowed:
    /// `dpr.toml:16: optim.lr = inf: must be a finite number > 0`.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = lexbench_core::text::read_text(path)?;
        let spans = ValueSpans::of(&text);
        let cfg: Self = toml::from_str(&text).map_err(|e| toml_error(path, &text, &spans, &e))?;
        cfg.check().map_err(|e| {
            let line = e.key.as_deref().and_then(|k| spans.line_of(k));
            file_error(path, line, e.to_string())
        })?;
        Ok(cfg)
    }

    /// ColBERT's settings as trained: queries and documents read at the `[data]` lengths (one place
    /// for lengths, so the leaf heading of a long ECtHR query is not cut at ColBERT's default 32).
    pub fn colbert_settings(&self) -> ColBertConfig {
        ColBertConfig {
            query_maxlen: self.data.max_query_len,
            doc_maxlen: self.data.max_doc_len,
            ..self.colbert.clone()
        }
    }

    /// Reads a TOML file with `overrides` applied before it is read (`("schedule.batch_size", "4")`:
    /// a dotted key and a TOML value; a bare word that is not TOML is taken as a string), then
    /// validates it: how one config runs tiny on the sample without a second copy of it. A key the
    /// configuration does not have is refused as an unknown field, naming the file. A table value
    /// sets only the keys it names (`peft.lora={rank = 4}` keeps the other LoRA settings). A bad
    /// value an override set is named by the override (`PATH: --set optim.lr=-1: optim.lr = -1: must
    /// be …`), one the file holds by its line as in [`Self::from_file`].
    pub fn from_file_with(path: &Path, overrides: &[(String, String)]) -> Result<Self> {
        if overrides.is_empty() {
            return Self::from_file(path);
        }
        let text = lexbench_core::text::read_text(path)?;
        let spans = ValueSpans::of(&text);
        let original: toml::Table = toml::from_str(&text).map_err(|e| toml_error(path, &text, &spans, &e))?;
        let mut doc = original.clone();
        for (key, raw) in overrides {
            set_dotted(&mut doc, key, override_value(raw)).map_err(|e| {
                Error::Param(format!(
                    "--set {key}={raw}: {}",
                    e.message(&path.display().to_string())
                ))
            })?;
        }
        let read = |doc: toml::Table| -> std::result::Result<Self, toml::de::Error> {
            toml::Value::Table(doc).try_into()
        };
        let cfg: Self = match read(doc) {
            Ok(cfg) => cfg,
            Err(e) => {
                // The override that breaks a file that reads alone, when one does by itself.
                let culprit = read(original.clone()).is_ok().then(|| {
                    overrides.iter().find(|(key, raw)| {
                        let mut d = original.clone();
                        set_dotted(&mut d, key, override_value(raw)).is_ok() && read(d).is_err()
                    })
                });
                let message = one_line(e.message());
                return Err(file_error(
                    path,
                    None,
                    match culprit.flatten() {
                        Some((key, raw)) => format!("--set {key}={raw}: {message}"),
                        None => format!("with the --set overrides: {message}"),
                    },
                ));
            }
        };
        cfg.check().map_err(|e| {
            let set = e
                .key
                .as_deref()
                .and_then(|k| overrides.iter().rev().find(|(s, _)| sets(s, k)));
            match set {
                Some((key, raw)) => file_error(path, None, format!("--set {key}={raw}: {e}")),
                None => {
                    let line = e.key.as_deref().and_then(|k| spans.line_of(k));
                    file_error(path, line, e.to_string())
                }
            }
        })?;
        Ok(cfg)
    }

    /// Checks the values (see [`Self::check`]).
    pub fn validate(&self) -> Result<()> {
        Ok(self.check()?)
    }

    /// Checks every value against its documented range, and the settings against each other, before
    /// anything is loaded: numbers finite and in range (learning rates in [`LR_RANGE`], lengths up to
    /// [`MAX_SEQ_LEN`], epochs, batches, negatives, LoRA), the selection measure parses, names are
    /// names, and every value of the `[sweep]` grid and `lr_sweep` fits its key. What needs the
    /// dataset or the base model (split names, the model's positions) is checked by the caller
    /// before loading them ([`Self::check_positions`]).
    pub fn check(&self) -> Checked {
        // The name is the model's folder and the run's file name; the dataset and splits are folders
        // and files under the data directory: names, never paths.
        let name = |key: &str, kind: &'static str, v: &str| -> Checked {
            lexbench_core::check_name(kind, v).map_err(|e| about(key, e.to_string()))?;
            Ok(())
        };
        name("name", "model name", &self.name)?;
        name("data.dataset", "dataset name", &self.data.dataset)?;
        name("data.train_split", "split name", &self.data.train_split)?;
        if !self.data.val_split.is_empty() {
            name("data.val_split", "split name", &self.data.val_split)?;
        }
        let o = &self.optim;
        float("optim.lr", o.lr, lr_ok(o.lr), LR_RANGE)?;
        float(
            "optim.beta1",
            o.beta1,
            (0.0..1.0).contains(&o.beta1),
            "a finite number in [0, 1)",
        )?;
        float(
            "optim.beta2",
            o.beta2,
            (0.0..1.0).contains(&o.beta2),
            "a finite number in [0, 1)",
        )?;
        float(
            "optim.eps",
            o.eps,
            o.eps > 0.0 && o.eps <= 1.0,
            "a finite number in (0, 1]",
        )?;
        float(
            "optim.weight_decay",
            o.weight_decay,
            (0.0..=1.0).contains(&o.weight_decay),
            "a finite number in [0, 1]",
        )?;
        self.optim.validate().map_err(|e| param("optim", e))?;
        for (i, &lr) in self.lr_sweep.iter().enumerate() {
            float(&format!("lr_sweep[{i}]"), lr, lr_ok(lr), LR_RANGE)?;
        }
        let s = &self.schedule;
        int("schedule.epochs", s.epochs, 1, MAX_EPOCHS)?;
        int("schedule.batch_size", s.batch_size, 1, MAX_BATCH_SIZE)?;
        float(
            "schedule.warmup_ratio",
            s.warmup_ratio,
            (0.0..1.0).contains(&s.warmup_ratio),
            "a finite number in [0, 1)",
        )?;
        float(
            "schedule.max_grad_norm",
            s.max_grad_norm,
            s.max_grad_norm >= 0.0,
            "a finite number ≥ 0 (0: no clipping)",
        )?;
        int("data.max_query_len", self.data.max_query_len, 4, MAX_SEQ_LEN)?;
        int("data.max_doc_len", self.data.max_doc_len, 4, MAX_SEQ_LEN)?;
        let n = &self.negatives;
        for (key, v) in [
            ("negatives.random", n.random),
            ("negatives.bm25", n.bm25),
            ("negatives.model", n.model),
            ("negatives.curriculum", n.curriculum),
        ] {
            int(key, v, 0, MAX_NEGATIVES)?;
        }
        int("negatives.bm25_depth", n.bm25_depth, 1, MAX_NEGATIVE_DEPTH)?;
        int("negatives.model_depth", n.model_depth, 1, MAX_NEGATIVE_DEPTH)?;
        int(
            "negatives.model_refresh_steps",
            n.model_refresh_steps,
            0,
            MAX_REFRESH_STEPS,
        )?;
        if n.model_refresh_steps > 0 && n.model == 0 {
            return Err(about(
                "negatives.model_refresh_steps",
                "negatives.model_refresh_steps refreshes model-mined negatives: set negatives.model > 0 \
                 (model = \"ance\")",
            ));
        }
        if let Err(e) = self.eval.measure.parse::<lexbench_core::Measure>() {
            let message = match e {
                lexbench_core::Error::Measure { reason, .. } => reason,
                e => e.to_string(),
            };
            return Err(refuse(
                "eval.measure",
                format!("{:?}", self.eval.measure),
                format!("not a measure as lexbench eval names them: {message}"),
            ));
        }
        int("eval.top_k", self.eval.top_k, 1, MAX_TOP_K)?;
        if self.model == ModelKind::Colbert {
            let default = ColBertConfig::default();
            let lengths = [
                (
                    "query_maxlen",
                    self.colbert.query_maxlen,
                    default.query_maxlen,
                    "max_query_len",
                    self.data.max_query_len,
                ),
                (
                    "doc_maxlen",
                    self.colbert.doc_maxlen,
                    default.doc_maxlen,
                    "max_doc_len",
                    self.data.max_doc_len,
                ),
            ];
            for (key, set, default, data_key, data) in lengths {
                if set != default && set != data {
                    return Err(about(
                        &format!("colbert.{key}"),
                        format!(
                            "[colbert] {key} = {set} disagrees with [data] {data_key} = {data}: a trained \
                             ColBERT reads at the [data] lengths; remove {key} from [colbert] or make them equal"
                        ),
                    ));
                }
            }
        }
        if self.negatives.total() == 0 && self.model == ModelKind::CrossEncoder {
            return Err(about(
                "negatives",
                "a cross-encoder needs negatives (binary cross-entropy)",
            ));
        }
        if self.model == ModelKind::Ance && self.negatives.model == 0 {
            return Err(about(
                "negatives.model",
                "ANCE needs negatives.model > 0 (model-mined negatives)",
            ));
        }
        if self.model != ModelKind::Ance && self.negatives.model > 0 {
            return Err(about(
                "negatives.model",
                "model-mined negatives (negatives.model) are ANCE's: set model = \"ance\"",
            ));
        }
        if let Some(p) = &self.peft {
            self.check_peft(p)?;
        }
        self.colbert.validate().map_err(|e| param("colbert", e))?;
        let b = &self.biencoder;
        float("biencoder.scale", b.scale, b.scale > 0.0, "a finite number > 0")?;
        float(
            "biencoder.temperature",
            b.temperature,
            b.temperature > 0.0,
            "a finite number > 0",
        )?;
        if b.cosine && b.temperature != 1.0 {
            return Err(about(
                "biencoder.temperature",
                format!(
                    "biencoder.temperature = {} applies to dot-product scores: set cosine = false, or use \
                     scale with cosine scores",
                    b.temperature
                ),
            ));
        }
        // With [gnn] and [qabisar] too: their queries go through E_q, their article and label nodes
        // through E_p (the papers' E_q and E_s), and QABISAR distils into E_q alone.
        if self.biencoder.encoders == Encoders::Separate && !self.model.is_biencoder() {
            return Err(about(
                "biencoder.encoders",
                "encoders = \"separate\" needs a bi-encoder (model = \"dpr\" or \"ance\")",
            ));
        }
        match (self.biencoder.article_encoder, &self.biencoder.hier) {
            (ArticleEncoder::Hierarchical, h) => {
                if !self.model.is_biencoder() {
                    return Err(about(
                        "biencoder.article_encoder",
                        "article_encoder = \"hierarchical\" needs a bi-encoder (model = \"dpr\" or \"ance\")",
                    ));
                }
                h.clone()
                    .unwrap_or_default()
                    .validate()
                    .map_err(|e| param("biencoder.hier", e))?;
            }
            (ArticleEncoder::Flat, Some(_)) => {
                return Err(about(
                    "biencoder.hier",
                    "biencoder.hier needs article_encoder = \"hierarchical\"",
                ));
            }
            (ArticleEncoder::Flat, None) => {}
        }
        if let Some(g) = &self.gnn {
            g.validate().map_err(|e| param("gnn", e))?;
            if !self.model.is_biencoder() {
                return Err(about(
                    "gnn",
                    "a [gnn] section needs a bi-encoder (model = \"dpr\" or \"ance\")",
                ));
            }
        }
        if let Some(q) = &self.qabisar {
            q.validate().map_err(|e| param("qabisar", e))?;
            if !self.model.is_biencoder() || self.gnn.is_some() {
                return Err(about(
                    "qabisar",
                    "a [qabisar] section needs a bi-encoder and no [gnn] section",
                ));
            }
            if self.negatives.model > 0 {
                return Err(about(
                    "negatives.model",
                    "QABISAR does not mine model negatives (negatives.model)",
                ));
            }
        }
        match (&self.curriculum, self.negatives.curriculum) {
            (Some(c), n) => {
                c.validate().map_err(|e| param("curriculum", e))?;
                if n == 0 {
                    return Err(about(
                        "negatives.curriculum",
                        "a [curriculum] section needs negatives.curriculum > 0",
                    ));
                }
            }
            (None, n) if n > 0 => {
                return Err(about(
                    "negatives.curriculum",
                    "negatives.curriculum needs a [curriculum] section",
                ));
            }
            _ => {}
        }
        self.sweep
            .validate(!self.lr_sweep.is_empty())
            .map_err(|e| param("sweep", e))?;
        self.check_sweep_values()
    }

    /// The PEFT settings: LoRA's rank, alpha and dropout, the adapter's width and initialisation,
    /// the prefix's length and initialisation.
    fn check_peft(&self, p: &PeftConfig) -> Checked {
        match p.method {
            PeftMethod::Lora => {
                let l = &p.lora;
                int("peft.lora.rank", l.rank, 1, MAX_LORA_RANK)?;
                float("peft.lora.alpha", l.alpha, l.alpha > 0.0, "a finite number > 0")?;
                let d = f64::from(l.dropout);
                float(
                    "peft.lora.dropout",
                    d,
                    (0.0..1.0).contains(&d),
                    "a finite number in [0, 1)",
                )?;
                if l.targets.is_empty() {
                    return Err(about(
                        "peft.lora.targets",
                        "peft.lora.targets names no linear layer",
                    ));
                }
                l.validate().map_err(|e| param("peft.lora", e))
            }
            PeftMethod::Adapter => {
                let a = &p.adapter;
                if let Some(r) = a.reduction_factor {
                    int("peft.adapter.reduction_factor", r, 1, MAX_SEQ_LEN)?;
                }
                int("peft.adapter.bottleneck", a.bottleneck, 1, MAX_SEQ_LEN)?;
                float(
                    "peft.adapter.init_std",
                    a.init_std,
                    a.init_std > 0.0,
                    "a finite number > 0",
                )?;
                a.width(768).map(|_| ()).map_err(|e| param("peft.adapter", e))
            }
            PeftMethod::Prefix => {
                let x = &p.prefix;
                int("peft.prefix.length", x.length, 1, MAX_SEQ_LEN)?;
                if let Some(d) = x.projection_dim {
                    int("peft.prefix.projection_dim", d, 1, MAX_SEQ_LEN)?;
                }
                float(
                    "peft.prefix.init_std",
                    x.init_std,
                    x.init_std > 0.0,
                    "a finite number > 0",
                )?;
                x.validate().map_err(|e| param("peft.prefix", e))
            }
        }
    }

    /// Every value of the `[sweep]` grid set alone into this configuration: a value that does not
    /// fit its key (wrong type, out of range, a table the configuration lacks) is refused here, at
    /// `sweep.KEY[i]`, even without `--sweep`. What only a combination of values breaks is found
    /// when the points are expanded ([`sweep::points`]).
    fn check_sweep_values(&self) -> Checked {
        if self.sweep.is_empty() {
            return Ok(());
        }
        let mut base = self.clone();
        base.sweep = SweepGrid::default();
        let doc = toml::Table::try_from(&base).map_err(|e| about("sweep", format!("config to TOML: {e}")))?;
        for (axis, values) in self.sweep.axes() {
            let target = if axis == "lr" { "optim.lr" } else { axis.as_str() };
            for (i, v) in values.iter().enumerate() {
                let key = format!("sweep.{axis}[{i}]");
                let mut doc = doc.clone();
                set_dotted(&mut doc, target, v.clone())
                    .map_err(|e| about(&key, format!("{key}: {}", e.message("the configuration"))))?;
                let point: Self = toml::Value::Table(doc).try_into().map_err(|e: toml::de::Error| {
                    about(&key, format!("{key} = {v}: {}", one_line(e.message())))
                })?;
                let Err(e) = point.check() else { continue };
                match e.key.as_deref() {
                    Some(k) if k == target => {
                        return Err(Invalid {
                            key: Some(key),
                            value: e.value,
                            message: e.message,
                        });
                    }
                    Some(k) if sets(target, k) => return Err(about(&key, format!("{key}: {e}"))),
                    // Another key's problem: a combination, left to the expansion.
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Checks the lengths against the base model's `max_position_embeddings` (read from its
    /// `config.json` before the weights): queries and passages (a cross-encoder: both in one input),
    /// the hierarchical encoder's segments.
    pub fn check_positions(&self, max_positions: usize) -> Checked {
        let why = format!("the base model has {max_positions} positions (max_position_embeddings)");
        let at_most = |key: &str, v: usize, max: usize, note: &str| -> Checked {
            if v <= max {
                Ok(())
            } else {
                Err(refuse(key, v, format!("must be at most {max}{note}: {why}")))
            }
        };
        let (q, d) = (self.data.max_query_len, self.data.max_doc_len);
        if self.model == ModelKind::CrossEncoder {
            at_most("data.max_query_len", q, max_positions.saturating_sub(4), "")?;
            at_most(
                "data.max_doc_len",
                d,
                max_positions.saturating_sub(q),
                &format!(" with max_query_len = {q} (a cross-encoder reads both in one input)"),
            )?;
        } else {
            at_most("data.max_query_len", q, max_positions, "")?;
            at_most("data.max_doc_len", d, max_positions, "")?;
        }
        if let Some(h) = self.biencoder.hierarchical() {
            at_most("biencoder.hier.seg_len", h.seg_len, max_positions, "")?;
        }
        Ok(())
    }
}
