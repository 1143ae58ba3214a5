//! BM25's parameters: a plain serde struct with documented defaults, checked by [`Bm25Params::validate`].

use serde::{Deserialize, Serialize};

use super::analyzer::Language;
use super::index::IdfScope;
use crate::error::{Error, Result};

/// BM25's parameters, as written in a run's sidecar or a TOML config.
///
/// ```toml
/// k1 = 0.9          # term-frequency saturation (Anserini default; 1.2 with b = 0.75 is Robertson's)
/// b = 0.4           # length normalisation, 0 ≤ b ≤ 1
/// idf = "pool"      # ranking within pools: statistics of the pool ("pool") or of the corpus ("corpus")
/// top_k = 1000      # documents kept per topic
/// language = "english"  # optional: the analyzer; default from the dataset (bsard* → french)
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bm25Params {
    /// Term-frequency saturation, ≥ 0. Default 0.9 (Anserini).
    pub k1: f64,
    /// Length normalisation, in [0, 1]. Default 0.4 (Anserini).
    pub b: f64,
    /// Statistics used when ranking within per-topic pools. Default [`IdfScope::Pool`].
    pub idf: IdfScope,
    /// Documents kept per topic, ≥ 1. Default 1000 (BSARD's R@500 needs 500; ECtHR pools are smaller).
    pub top_k: usize,
    /// The analyzer; `None` chooses from the dataset name (`bsard…` → French, else English).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self::anserini()
    }
}

impl Bm25Params {
    /// Anserini's defaults: k1 = 0.9, b = 0.4.
    pub fn anserini() -> Self {
        Self {
            k1: 0.9,
            b: 0.4,
            idf: IdfScope::Pool,
            top_k: 1000,
            language: None,
        }
    }

    /// Robertson's classic setting: k1 = 1.2, b = 0.75 (rank_bm25's and bm25s's defaults use k1 = 1.5 and
    /// 1.5/0.75 respectively; pass them explicitly if wanted).
    pub fn robertson() -> Self {
        Self {
            k1: 1.2,
            b: 0.75,
            ..Self::anserini()
        }
    }

    /// Checks ranges: k1 finite and ≥ 0, b in [0, 1], top_k ≥ 1.
    pub fn validate(&self) -> Result<()> {
        if !self.k1.is_finite() || self.k1 < 0.0 {
            return Err(Error::Param(format!(
                "bm25 k1 must be a finite number ≥ 0, got {}",
                self.k1
            )));
        }
        if !(0.0..=1.0).contains(&self.b) {
            return Err(Error::Param(format!("bm25 b must be in [0, 1], got {}", self.b)));
        }
        if self.top_k == 0 {
            return Err(Error::Param("bm25 top_k must be at least 1, got 0".into()));
        }
        Ok(())
    }

    /// Reads a TOML config (unknown keys are rejected) and validates it.
    pub fn from_toml(text: &str) -> Result<Self> {
        let p: Self = toml::from_str(text).map_err(|e| Error::Param(format!("bm25 config: {e}")))?;
        p.validate()?;
        Ok(p)
    }

    /// The analyzer for dataset `dataset` whose manifest declares `declared`: the configured one,
    /// else the declared one, else the guess from the name ([`Bm25Params::language_for`]).
    pub fn language_of(&self, dataset: &str, declared: Option<lexbench_core::dataset::Language>) -> Language {
        use lexbench_core::dataset::Language as Declared;
        match (self.language, declared) {
            (Some(l), _) => l,
            (None, Some(Declared::English)) => Language::English,
            (None, Some(Declared::French)) => Language::French,
            (None, None) => self.language_for(dataset),
        }
    }

    /// The analyzer for dataset `name`: the configured one, else French for `bsard…`, English otherwise.
    pub fn language_for(&self, dataset: &str) -> Language {
        self.language.unwrap_or(if dataset.starts_with("bsard") {
            Language::French
        } else {
            Language::English
        })
    }
}
