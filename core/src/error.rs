//! The one error type of `lexbench-core`.
//!
//! An error that wraps another (an I/O error, a JSON error) says what it was doing and returns the
//! wrapped error as its [`source`](std::error::Error::source) without repeating its text, so the
//! chain printed once with `{:#}` (the binary's `error: …` line) names the file and the cause once.

use std::path::PathBuf;

/// What went wrong on one line of a text file (TREC, JSON Lines, CSV, …).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LineError {
    /// The line does not have the format's number of whitespace-separated columns.
    #[error("expected {expected} columns ({format}), found {found}")]
    Columns {
        /// How many columns the format has.
        expected: usize,
        /// How many the line has.
        found: usize,
        /// The format's column names, for the message.
        format: &'static str,
    },
    /// A column that must be a number is not one.
    #[error("{column} {value:?} is not {} {expected}", article(expected))]
    NotANumber {
        /// The column's name.
        column: &'static str,
        /// What the line holds there.
        value: String,
        /// What was expected ("finite number", "integer").
        expected: &'static str,
    },
    /// The same document appears twice for one topic.
    #[error("document {doc} appears twice for topic {topic} (first on line {first_line})")]
    DuplicateDoc {
        /// The topic.
        topic: String,
        /// The repeated document.
        doc: String,
        /// Where it first appeared.
        first_line: usize,
    },
    /// The topic is not one of the topics the caller declared.
    #[error("unknown topic {0}")]
    UnknownTopic(String),
    /// An id column is malformed.
    #[error("{0}")]
    Id(String),
    /// A JSON line does not parse or does not have the record's shape.
    #[error("invalid JSON record: {0}")]
    Json(String),
    /// The line's bytes are not UTF-8 (`byte`: 1-based offset of the first invalid byte in the line).
    #[error("not valid UTF-8 (byte {byte} of the line; save the file as UTF-8)")]
    NotUtf8 {
        /// Where the first invalid byte is, counted from 1 in the line.
        byte: usize,
    },
    /// The line is longer than the format allows; it was not read further.
    #[error("the line is longer than {max} bytes")]
    LineTooLong {
        /// The most a line may hold, in bytes.
        max: usize,
    },
    /// A column holds an integer outside the range the format allows.
    #[error("{column} {value} is out of range ({min} to {max})")]
    OutOfRange {
        /// The column's name.
        column: &'static str,
        /// What the line holds there (at most 40 characters of it).
        value: String,
        /// The smallest value allowed.
        min: i64,
        /// The largest value allowed.
        max: i64,
    },
    /// A quoted CSV field is never closed (the line is where it opens).
    #[error("a quoted field opens here and is never closed (a missing `\"`?)")]
    UnterminatedQuote,
    /// A column is longer than the format allows.
    #[error("{column} is {len} bytes long; at most {max} are allowed")]
    TooLong {
        /// The column's name.
        column: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The most it may hold.
        max: usize,
    },
}

/// "an" before a vowel ("an integer"), else "a" ("a finite number").
fn article(noun: &str) -> &'static str {
    if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// Errors of `lexbench-core`. Each names what was being read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed. The message is the path; the cause is the error's
    /// [`source`](std::error::Error::source), so a chain printed with `{:#}` names each once.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// One line of a file is malformed.
    #[error("{}:{line}: {error}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        error: LineError,
    },
    /// The file is larger than the reader accepts (it was not read further).
    #[error(
        "{}: the file is larger than {}, the most this reader accepts",
        path.display(),
        crate::text::human_bytes(*max_bytes)
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The most the reader accepts.
        max_bytes: usize,
    },
    /// The file holds no records.
    #[error("{}: the file is empty (no records)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// An id does not have its documented shape.
    /// The value is echoed shortened ([`crate::text::shown`]).
    #[error("invalid {kind} {}: {reason}", crate::text::shown(value))]
    InvalidId {
        /// Which kind of id.
        kind: &'static str,
        /// The offending text.
        value: String,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// A measure name does not parse.
    #[error("unknown measure {name:?}: {reason}")]
    Measure {
        /// The name as given.
        name: String,
        /// What is accepted instead.
        reason: String,
    },
    /// A measure needs information that was not supplied (e.g. `R@5%` without pool sizes).
    #[error("{0}")]
    MissingInput(String),
    /// An evaluation parameter is out of range (e.g. a negative `min_rel`).
    #[error("invalid {name} {value}: {reason}")]
    Param {
        /// The parameter.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is accepted instead.
        reason: &'static str,
    },
    /// A folder that should hold a built dataset has no `manifest.json`.
    #[error("no manifest.json in {} (is the dataset built?)", dir.display())]
    NotBuilt {
        /// The dataset folder.
        dir: PathBuf,
    },
    /// Files of a built dataset differ from its manifest (changed, missing).
    #[error("{}: files differ from manifest.json ({}); rebuild the dataset", dir.display(), files.join(", "))]
    Changed {
        /// The dataset folder.
        dir: PathBuf,
        /// The files that differ, relative to it.
        files: Vec<String>,
    },
    /// A dataset has no split of that name.
    #[error("{}: no split {split:?} (splits: {})", path.display(), known.join(", "))]
    NoSplit {
        /// The split's file, absent.
        path: PathBuf,
        /// The split asked for.
        split: String,
        /// The splits it has.
        known: Vec<String>,
    },
    /// Serialising a record failed (the cause is the error's `source`).
    #[error("cannot serialise a record for {}", path.display())]
    Serialise {
        /// The file being written.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
}

impl Error {
    /// The line-level error inside, if this is one (handy in tests and for callers that map lines).
    pub fn line_error(&self) -> Option<(usize, &LineError)> {
        match self {
            Error::Line { line, error, .. } => Some((*line, error)),
            _ => None,
        }
    }
}

/// `e` and its causes on one line, `: `-separated — what the binary's `{:#}` prints — for a message
/// that embeds an error as text (the error's own `Display` names only what it was doing).
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
