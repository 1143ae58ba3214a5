//! The one error type of `lexbench-baselines`.

use std::path::PathBuf;

/// Everything that can go wrong loading, converting or running an encoder.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tensor operation failed (shape mismatch, missing tensor in a checkpoint, …).
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
    /// Reading or writing a file failed (the cause is the error's `source`, printed once by `{:#}`).
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A JSON file (config.json, a cache index) did not parse (the cause is the error's `source`).
    #[error("{}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// The tokenizer could not be loaded or failed on an input.
    #[error("tokenizer {context}: {message}")]
    Tokenizer {
        /// The file or operation.
        context: String,
        /// The tokenizers crate's message.
        message: String,
    },
    /// A model file is not in the expected format (E5S1 container, checksums, config values).
    #[error("{}: {message}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the byte offset or field where known.
        message: String,
    },
    /// A parameter is out of range.
    #[error("invalid parameter: {0}")]
    Param(String),
    /// An error from `lexbench-core` (atomic writes).
    #[error(transparent)]
    Core(#[from] lexbench_core::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}
