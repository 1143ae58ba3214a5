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
//! lr = [1e-5, 3e-5]              # (see super::sweep)
//! "peft.lora" = [{ rank = 8, alpha = 8 }, { rank = 16, alpha = 16 }]
//!
//! [curriculum]                   # optional: CuSINeS, with negatives.curriculum > 0
//! semantic = "dynamic"           # or "static_bm25"
//! views = { semantic = true, hierarchical = true, sequential = true }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::dr_gnn::GnnConfig;
use super::optim::AdamWConfig;
use super::qabisar::QabisarConfig;
use super::sweep::SweepGrid;
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
    /// Drawn from BM25's top `bm25_depth` candidates (static, ranked once).
    #[serde(default)]
    pub bm25: usize,
    /// Drawn from the model's own top `model_depth` candidates, re-ranked at every epoch (ANCE).
    #[serde(default)]
    pub model: usize,
    /// BM25 candidates considered (default 30).
    #[serde(default = "default_depth")]
    pub bm25_depth: usize,
    /// Model-ranked candidates considered (default 30).
    #[serde(default = "default_depth")]
    pub model_depth: usize,
    /// Drawn by the CuSINeS curriculum sampler (needs a `[curriculum]` section): difficulty buckets
    /// from the fused semantic / hierarchical / sequential views, easy → hard over the epochs.
    #[serde(default)]
    pub curriculum: usize,
}

fn default_depth() -> usize {
    30
}

impl Default for NegativesConfig {
    fn default() -> Self {
        Self {
            random: 0,
            bm25: 0,
            model: 0,
            bm25_depth: default_depth(),
            model_depth: default_depth(),
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
    /// How passages are embedded: `flat` (default) or `hierarchical` (DPR and ANCE only).
    #[serde(default, skip_serializing_if = "ArticleEncoder::is_flat")]
    pub article_encoder: ArticleEncoder,
    /// Settings of the hierarchical encoder; absent = [`HierConfig::default`] (`seg_len` 128,
    /// `max_segments` 16, 2 layers, 12 heads, FFN 4×, dropout 0.1, `layer_norm_eps` 1e-5). Only
    /// with `article_encoder = "hierarchical"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hier: Option<HierConfig>,
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
    /// the values each takes, every combination trained (see [`super::sweep`]); absent = none.
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

impl TrainConfig {
    /// Reads and validates a TOML file (a byte-order mark is ignored); errors name the file (and
    /// TOML's line and column).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = lexbench_core::text::read_text(path)?;
        let cfg: Self = toml::from_str(&text).map_err(|e| Error::Format {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        cfg.validate().map_err(|e| Error::Format {
            path: path.to_owned(),
            message: e.to_string(),
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
    /// sets only the keys it names (`peft.lora={rank = 4}` keeps the other LoRA settings).
    pub fn from_file_with(path: &Path, overrides: &[(String, String)]) -> Result<Self> {
        if overrides.is_empty() {
            return Self::from_file(path);
        }
        let text = lexbench_core::text::read_text(path)?;
        let fmt = |message: String| Error::Format {
            path: path.to_owned(),
            message,
        };
        let mut doc: toml::Table = toml::from_str(&text).map_err(|e| fmt(e.to_string()))?;
        for (key, raw) in overrides {
            let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(raw.clone()));
            set_dotted(&mut doc, key, value).map_err(|e| {
                Error::Param(format!(
                    "--set {key}={raw}: {}",
                    e.message(&path.display().to_string())
                ))
            })?;
        }
        let cfg: Self = toml::Value::Table(doc)
            .try_into()
            .map_err(|e: toml::de::Error| fmt(format!("with the --set overrides: {e}")))?;
        cfg.validate().map_err(|e| fmt(e.to_string()))?;
        Ok(cfg)
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Param(m));
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
                    return bad(format!(
                        "[colbert] {key} = {set} disagrees with [data] {data_key} = {data}: a trained ColBERT \
                         reads at the [data] lengths; remove {key} from [colbert] or make them equal"
                    ));
                }
            }
        }
        // The name is the model's folder and the run's file name; the dataset and splits are folders
        // and files under the data directory: names, never paths.
        lexbench_core::check_name("model name", &self.name)?;
        lexbench_core::check_name("dataset name", &self.data.dataset)?;
        lexbench_core::check_name("split name", &self.data.train_split)?;
        if !self.data.val_split.is_empty() {
            lexbench_core::check_name("split name", &self.data.val_split)?;
        }
        self.optim.validate()?;
        if self.schedule.epochs == 0 || self.schedule.batch_size == 0 {
            return bad("schedule.epochs and schedule.batch_size must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.schedule.warmup_ratio) {
            return bad(format!(
                "warmup_ratio {} is not in [0, 1)",
                self.schedule.warmup_ratio
            ));
        }
        if self.negatives.total() == 0 && self.model == ModelKind::CrossEncoder {
            return bad("a cross-encoder needs negatives (binary cross-entropy)".into());
        }
        if self.model == ModelKind::Ance && self.negatives.model == 0 {
            return bad("ANCE needs negatives.model > 0 (model-mined negatives)".into());
        }
        if self.model != ModelKind::Ance && self.negatives.model > 0 {
            return bad("model-mined negatives (negatives.model) are ANCE's: set model = \"ance\"".into());
        }
        if self.data.max_query_len < 4 || self.data.max_doc_len < 4 {
            return bad("max_query_len and max_doc_len must be at least 4".into());
        }
        if self.lr_sweep.iter().any(|&lr| lr.is_nan() || lr <= 0.0) {
            return bad("lr_sweep values must be positive".into());
        }
        self.sweep.validate(!self.lr_sweep.is_empty())?;
        if let Some(p) = &self.peft {
            match p.method {
                PeftMethod::Lora => p.lora.validate()?,
                PeftMethod::Adapter => {
                    p.adapter.width(768)?;
                }
                PeftMethod::Prefix => p.prefix.validate()?,
            }
        }
        self.colbert.validate()?;
        let b = &self.biencoder;
        if !(b.scale.is_finite() && b.scale > 0.0 && b.temperature.is_finite() && b.temperature > 0.0) {
            return bad(format!(
                "biencoder.scale ({}) and biencoder.temperature ({}) must be positive",
                b.scale, b.temperature
            ));
        }
        if b.cosine && b.temperature != 1.0 {
            return bad(format!(
                "biencoder.temperature = {} applies to dot-product scores: set cosine = false, or use \
                 scale with cosine scores",
                b.temperature
            ));
        }
        match (self.biencoder.article_encoder, &self.biencoder.hier) {
            (ArticleEncoder::Hierarchical, h) => {
                if !self.model.is_biencoder() {
                    return bad(
                        "article_encoder = \"hierarchical\" needs a bi-encoder (model = \"dpr\" or \"ance\")"
                            .into(),
                    );
                }
                h.clone().unwrap_or_default().validate()?;
            }
            (ArticleEncoder::Flat, Some(_)) => {
                return bad("biencoder.hier needs article_encoder = \"hierarchical\"".into());
            }
            (ArticleEncoder::Flat, None) => {}
        }
        if let Some(g) = &self.gnn {
            g.validate()?;
            if !self.model.is_biencoder() {
                return bad("a [gnn] section needs a bi-encoder (model = \"dpr\" or \"ance\")".into());
            }
        }
        if let Some(q) = &self.qabisar {
            q.validate()?;
            if !self.model.is_biencoder() || self.gnn.is_some() {
                return bad("a [qabisar] section needs a bi-encoder and no [gnn] section".into());
            }
            if self.negatives.model > 0 {
                return bad("QABISAR does not mine model negatives (negatives.model)".into());
            }
        }
        match (&self.curriculum, self.negatives.curriculum) {
            (Some(c), n) => {
                c.validate()?;
                if n == 0 {
                    return bad("a [curriculum] section needs negatives.curriculum > 0".into());
                }
            }
            (None, n) if n > 0 => {
                return bad("negatives.curriculum needs a [curriculum] section".into());
            }
            _ => {}
        }
        Ok(())
    }
}
