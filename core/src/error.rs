//! The one error type of `lexbench-core`.

use std::path::PathBuf;

/// What went wrong on one line of a TREC or JSONL file.
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
    #[error("{column} {value:?} is not a {expected}")]
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
}

/// Errors of `lexbench-core`. Each names what was being read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
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
    /// The file holds no records.
    #[error("{}: the file is empty (no records)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// An id does not have its documented shape.
    #[error("invalid {kind} {value:?}: {reason}")]
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
    /// Serialising a record failed.
    #[error("cannot serialise a record for {}: {source}", path.display())]
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

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
