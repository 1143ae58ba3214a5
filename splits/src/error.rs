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
    /// The split certificate found a leak; the dataset is not written.
    #[error("the split certificate failed: {}", .0.join("; "))]
    Leak(Vec<String>),
    /// There is nothing to build from.
    #[error("{0}")]
    Empty(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
