//! Model cards: a TOML file describing the submitted system (`--card model-card.toml`).
//!
//! ```toml
//! name = "BM25 (Anserini)"   # the system's name (required for a model submission)
//! description = "BM25 with Anserini's defaults"
//! base_model = "none"        # what it starts from (required for a model submission)
//! authors = ["A. Author"]
//! url = "https://example.org/system"
//! paper = "https://arxiv.org/abs/…"
//! code = "https://github.com/…"
//! license = "MIT"
//! training_data = "none"
//! parameters = 0
//! dataset_hash = "…"   # optional: the dataset version the run was made on; checked
//! paper_row = "dpr-zero-shot"   # optional: the published row it stands beside (a key of
//!                               # leaderboard/references/*.toml; `lexbench leaderboard --paper-rows`)
//! ```
//!
//! A card is at most [`MAX_CARD_BYTES`] long and each text in it at most [`MAX_CARD_FIELD_CHARS`]
//! characters ([`ModelCard::check`]): it ends up in the leaderboard entry. Unknown fields are refused.
//!
//! A run file's card (`lexbench submit RUN --card`) may leave any field out. A model's card
//! (`lexbench submit --model DIR --card CARD`) is checked further ([`ModelCard::check_for_model`]):
//! it must give [`REQUIRED_FOR_MODEL`] — `name` (the system's name on the leaderboard, 1 to 80
//! characters of visible text, not the baseline's), `description`, `base_model` (the checkpoint it
//! starts from, or `"none"`), `license` and `training_data` (`"none"` for a zero-shot model), none
//! of them blank — and must not give `dataset_hash`, since the harness records the version of each
//! dataset it runs the model on. `authors`, `url`, `paper`, `code` and `parameters` stay optional.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Problem, Result};

/// The largest model card, in bytes. The card is copied into the leaderboard entry.
pub const MAX_CARD_BYTES: usize = 16 * 1024;
/// The longest text in a card field (each author counts alone), in characters.
pub const MAX_CARD_FIELD_CHARS: usize = 1000;
/// The fields a model submission's card must give (not blank).
pub const REQUIRED_FOR_MODEL: [&str; 5] = ["name", "description", "base_model", "license", "training_data"];

/// A model card. Every field is optional; unknown fields are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCard {
    /// The system's name on the leaderboard (required for a model submission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the system is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who made it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// The checkpoint it starts from (`"none"` if trained from scratch; required for a model
    /// submission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_model: Option<String>,
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
    /// The published row the system stands beside in the "beside the paper" table, by its key in
    /// the leaderboard's references ([`crate::reference`]); an unknown key is refused at submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_row: Option<String>,
}

impl ModelCard {
    /// Reads and parses a card (at most [`MAX_CARD_BYTES`]; a byte-order mark is ignored); errors
    /// name the file and line.
    pub fn read(path: &Path) -> Result<(Self, String)> {
        let text = lexbench_core::text::read_text_at_most(path, MAX_CARD_BYTES)?;
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

impl ModelCard {
    /// The card's problems, each with its line in `text` (the card as read from `path`): a text over
    /// [`MAX_CARD_FIELD_CHARS`].
    pub fn check(&self, path: &Path, text: &str) -> Vec<Problem> {
        let fields: [(&str, Option<&String>); 10] = [
            ("name", self.name.as_ref()),
            ("description", self.description.as_ref()),
            ("base_model", self.base_model.as_ref()),
            ("url", self.url.as_ref()),
            ("paper", self.paper.as_ref()),
            ("code", self.code.as_ref()),
            ("license", self.license.as_ref()),
            ("training_data", self.training_data.as_ref()),
            ("dataset_hash", self.dataset_hash.as_ref()),
            ("paper_row", self.paper_row.as_ref()),
        ];
        let authors = self.authors.iter().map(|a| ("authors", Some(a)));
        fields
            .into_iter()
            .chain(authors)
            .filter_map(|(key, value)| {
                let value = value?;
                let problem = |message: String| Problem {
                    path: path.to_owned(),
                    line: line_of_key(text, key),
                    message,
                };
                let len = value.chars().count();
                if len > MAX_CARD_FIELD_CHARS {
                    return Some(problem(format!(
                        "{key} is {len} characters long; at most {MAX_CARD_FIELD_CHARS} are allowed"
                    )));
                }
                // The card's texts reach the pages as the name does: no control, format (U+202E
                // reorders what follows), private-use or blank-looking characters; a description
                // may hold line breaks and tabs.
                if value.chars().next().is_some_and(crate::submit::is_mark) {
                    return Some(problem(format!(
                        "{key} starts with a combining mark (U+{:04X}), which has no letter of its own to \
                         combine with and would fall on the text before it on the page",
                        value.chars().next().map_or(0, u32::from)
                    )));
                }
                let allowed = |c: char| key == "description" && matches!(c, '\n' | '\t');
                value
                    .chars()
                    .find(|c| {
                        !allowed(*c)
                            && (crate::submit::is_hidden(*c) || crate::submit::is_invisible(*c))
                    })
                    .map(|c| {
                        problem(format!(
                            "{key} holds U+{:04X}, a control, format, private-use or blank-looking character; \
                             card texts hold visible text only",
                            u32::from(c)
                        ))
                    })
            })
            .chain(self.paper_row.as_deref().and_then(|key| {
                if crate::reference::is_row_key(key) {
                    return None;
                }
                Some(Problem {
                    path: path.to_owned(),
                    line: line_of_key(text, "paper_row"),
                    message: format!(
                        "paper_row {key:?} is no published row; known rows: {}",
                        crate::reference::row_keys().join(", ")
                    ),
                })
            }))
            .collect()
    }
}

impl ModelCard {
    /// The card's problems as the card of a model submission (`path` and `text` as for
    /// [`ModelCard::check`], whose problems come first): every field of [`REQUIRED_FOR_MODEL`] given
    /// and not blank, a `name` the leaderboard accepts ([`crate::submit::check_system_name`], not the
    /// baseline's), and no `dataset_hash`.
    pub fn check_for_model(&self, path: &Path, text: &str) -> Vec<Problem> {
        let mut problems = self.check(path, text);
        let problem = |key: &str, message: String| Problem {
            path: path.to_owned(),
            line: line_of_key(text, key),
            message,
        };
        let values = [
            self.name.as_ref(),
            self.description.as_ref(),
            self.base_model.as_ref(),
            self.license.as_ref(),
            self.training_data.as_ref(),
        ];
        for (key, value) in REQUIRED_FOR_MODEL.into_iter().zip(values) {
            match value {
                None => problems.push(Problem {
                    path: path.to_owned(),
                    line: None,
                    message: format!(
                        "{key} is missing; a model's card gives {} (\"none\" where nothing applies)",
                        REQUIRED_FOR_MODEL.join(", ")
                    ),
                }),
                Some(v) if v.trim().is_empty() => {
                    problems.push(problem(key, format!("{key} is blank")));
                }
                Some(_) => {}
            }
        }
        if let Some(name) = self.name.as_deref().filter(|n| !n.trim().is_empty()) {
            if let Err(e) = crate::submit::check_system_name(name) {
                let message = match e {
                    Error::Param(m) => m,
                    e => e.to_string(),
                };
                problems.push(problem("name", message));
            } else if crate::board::is_baseline_name(name) {
                problems.push(problem(
                    "name",
                    format!(
                        "name {name:?} is reserved for the {} baseline",
                        crate::board::BASELINE
                    ),
                ));
            }
        }
        if self.dataset_hash.is_some() {
            problems.push(problem(
                "dataset_hash",
                "dataset_hash has no place in a model's card: the harness records the version of each \
                 dataset it runs the model on"
                    .into(),
            ));
        }
        problems
    }
}

/// The 1-based line where TOML key `key` is set (`key = …`), if one is.
pub(crate) fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
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
