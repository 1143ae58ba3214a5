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
/// query_language = "plain"  # optional: the queries' analyzer, when not `language`'s
/// variant = "rank-bm25-okapi"  # optional: rank_bm25's BM25Okapi over `str.lower().split()` tokens
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
    /// The queries' analyzer where it is not the documents' ([`Bm25Params::language`]): `None` uses
    /// `language` when given, else the query language the dataset's manifest declares (a
    /// cross-lingual dataset: French queries through the French chain against English paragraphs
    /// through the English one). A run's sidecar records it only where it differs from `language`,
    /// so monolingual runs read as they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_language: Option<Language>,
    /// Which BM25: lexbench's (default; left out of the serialised parameters, so the default
    /// parameters' JSON, and the baseline's model hash, are what they were before variants) or
    /// rank_bm25's `BM25Okapi` ([`Bm25Variant`]).
    #[serde(skip_serializing_if = "Bm25Variant::is_lexbench")]
    pub variant: Bm25Variant,
}

/// The BM25 implementations `lexbench run bm25` offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bm25Variant {
    /// Ours: the language's analyzer (stop words, Snowball stemmer), Lucene's idf, exact lengths
    /// ([`super::Bm25Index`]).
    #[default]
    Lexbench,
    /// rank_bm25 0.2.2's `BM25Okapi` over `text.lower().split()` tokens, one index per pool: the
    /// BM25 of the only public script on the ECtHR data (LexCLiPR's), see [`super::rank_bm25`].
    /// Robertson's idf with the ε = 0.25 floor and `(k1 + 1)` in the numerator; `k1`, `b` and
    /// `top_k` apply, `language` does not (the tokeniser is fixed) and `idf` must be `pool`.
    RankBm25Okapi,
}

impl Bm25Variant {
    /// Whether this is lexbench's own BM25 (the default).
    pub fn is_lexbench(&self) -> bool {
        *self == Self::Lexbench
    }
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
            query_language: None,
            variant: Bm25Variant::Lexbench,
        }
    }

    /// rank_bm25's `BM25Okapi` with its defaults (k1 = 1.5, b = 0.75; ε = 0.25 is fixed), per pool.
    pub fn rank_bm25_okapi() -> Self {
        Self {
            k1: super::rank_bm25::RANK_BM25_K1,
            b: super::rank_bm25::RANK_BM25_B,
            variant: Bm25Variant::RankBm25Okapi,
            ..Self::anserini()
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
        if self.variant == Bm25Variant::RankBm25Okapi {
            if let Some(l) = self.language {
                return Err(Error::Param(format!(
                    "bm25 variant rank-bm25-okapi tokenises by str.lower().split(): language ({l}) does not apply"
                )));
            }
            if let Some(l) = self.query_language {
                return Err(Error::Param(format!(
                    "bm25 variant rank-bm25-okapi tokenises by str.lower().split(): query_language ({l}) does not apply"
                )));
            }
            if self.idf != IdfScope::Pool {
                return Err(Error::Param(
                    "bm25 variant rank-bm25-okapi builds one index per pool (rank_bm25's BM25Okapi per judgment): idf must be \"pool\"".into(),
                ));
            }
        }
        Ok(())
    }

    /// Reads a TOML config (unknown keys are rejected) and validates it. `k1` and `b` left out take
    /// the variant's defaults: Anserini's 0.9 / 0.4 for lexbench's, rank_bm25's 1.5 / 0.75 for
    /// `variant = "rank-bm25-okapi"`.
    pub fn from_toml(text: &str) -> Result<Self> {
        Self::from_toml_as(text, None)
    }

    /// [`Bm25Params::from_toml`] with `variant`, when given, in place of the config's (a command
    /// line's `--variant` over a config file): `k1` and `b` the config leaves out take its defaults.
    pub fn from_toml_as(text: &str, variant: Option<Bm25Variant>) -> Result<Self> {
        let err = |e: &dyn std::fmt::Display| Error::Param(format!("bm25 config: {e}"));
        let mut table: toml::Table = toml::from_str(text).map_err(|e| err(&e))?;
        if let Some(v) = variant {
            table.insert("variant".into(), toml::Value::try_from(v).map_err(|e| err(&e))?);
        }
        let mut p: Self = table.clone().try_into().map_err(|e| err(&e))?;
        if p.variant == Bm25Variant::RankBm25Okapi {
            let okapi = Self::rank_bm25_okapi();
            if !table.contains_key("k1") {
                p.k1 = okapi.k1;
            }
            if !table.contains_key("b") {
                p.b = okapi.b;
            }
        }
        p.validate()?;
        Ok(p)
    }

    /// The analyzer for dataset `dataset` whose manifest declares `declared`: the configured one,
    /// else the declared one, else the guess from the name ([`Bm25Params::language_for`]).
    pub fn language_of(&self, dataset: &str, declared: Option<lexbench_core::dataset::Language>) -> Language {
        match (self.language, declared) {
            (Some(l), _) => l,
            (None, Some(d)) => Language::chain_for(d),
            (None, None) => self.language_for(dataset),
        }
    }

    /// The analyzers `(documents, queries)` for dataset `dataset` whose manifest declares
    /// `declared` (its language; the queries' where `corpus` is given) and `corpus` (the corpus's
    /// language where it differs). Documents: the configured [`Bm25Params::language`], else the
    /// corpus's chain, else [`Bm25Params::language_of`]. Queries: the configured
    /// [`Bm25Params::query_language`], else the configured `language`, else the declared language's
    /// chain ([`Language::chain_for`]: English, French, or [`Language::Plain`] for the others).
    pub fn languages_of(
        &self,
        dataset: &str,
        declared: Option<lexbench_core::dataset::Language>,
        corpus: Option<lexbench_core::dataset::Language>,
    ) -> (Language, Language) {
        let docs = match (self.language, corpus) {
            (Some(l), _) => l,
            (None, Some(c)) => Language::chain_for(c),
            (None, None) => self.language_of(dataset, declared),
        };
        let queries = self
            .query_language
            .or(self.language)
            .unwrap_or_else(|| self.language_of(dataset, declared));
        (docs, queries)
    }

    /// The analyzer for dataset `name`: the configured one, else the chain of the language an
    /// undeclared dataset is taken to be in (French for `bsard…`, English otherwise:
    /// [`lexbench_core::dataset::Language::default_for`], which the dataset version follows).
    pub fn language_for(&self, dataset: &str) -> Language {
        self.language
            .unwrap_or_else(|| Language::chain_for(lexbench_core::dataset::Language::default_for(dataset)))
    }
}
