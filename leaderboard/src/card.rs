//! Model cards: a TOML file describing the submitted system (`--card model-card.toml`).
//!
//! ```toml
//! description = "BM25 with Anserini's defaults"
//! authors = ["A. Author"]
//! url = "https://example.org/system"
//! paper = "https://arxiv.org/abs/…"
//! code = "https://github.com/…"
//! license = "MIT"
//! training_data = "none"
//! parameters = 0
//! dataset_hash = "…"   # optional: the dataset version the run was made on; checked
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io_err};

/// A model card. Every field is optional; unknown fields are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCard {
    /// What the system is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who made it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// A page about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its paper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<String>,
    /// Its code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Its licence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// What it was trained on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training_data: Option<String>,
    /// Number of trainable parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<u64>,
    /// The dataset version the run was produced on; a submission against another version is rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_hash: Option<String>,
}

impl ModelCard {
    /// Reads and parses a card; errors name the file and line.
    pub fn read(path: &Path) -> Result<(Self, String)> {
        let text = std::fs::read_to_string(path).map_err(io_err(path))?;
        let card = toml::from_str(&text).map_err(|e| Error::Format {
            path: path.to_owned(),
            message: match e.span() {
                Some(span) => format!("line {}: {}", line_of(&text, span.start), e.message()),
                None => e.message().to_owned(),
            },
        })?;
        Ok((card, text))
    }
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// The 1-based line of the first line of `text` containing `needle`.
pub(crate) fn line_containing(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}
