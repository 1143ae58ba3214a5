//! The one error type of `lexbench-splits`.

use std::path::PathBuf;

/// Errors of `lexbench-splits`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed (or a core record did not parse).
    #[error(transparent)]
    Core(#[from] lexbench_core::Error),
    /// An input file is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Input {
        /// The file.
        path: PathBuf,
        /// The 1-based line (0: the whole file).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A split configuration is invalid.
    #[error("invalid split configuration: {0}")]
    Config(String),
    /// `seen_queries = "required"` cannot be met: no judgment can be held out for a split while
    /// its queries keep a training pair (data that repeats too few queries across judgments).
    #[error(
        "no judgment can be held out for {split} while its queries stay in training: the seen \
         guides' {pairs} pairs repeat too few queries across judgments; set seen_queries = \
         \"preferred\" in the split configuration (fill the split with unseen queries, counted on \
         the card) or \"off\""
    )]
    SeenQueries {
        /// The split that stays empty (`test` or `val`).
        split: String,
        /// The seen guides' pairs left for train / val / test.
        pairs: usize,
    },
    /// The split certificate found a leak; the dataset is not written.
    #[error("the split certificate failed: {}", .0.join("; "))]
    Leak(Vec<String>),
    /// There is nothing to build from.
    #[error("{0}")]
    Empty(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
