//! The one error type of `lexbench-baselines`.

use std::path::{Path, PathBuf};

/// Everything that can go wrong loading, converting or running an encoder.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tensor operation failed (shape mismatch, missing tensor in a checkpoint, …). Shown on one
    /// line and without the backtrace candle captures when `RUST_BACKTRACE` is set (its `Display`
    /// would print it); not a `source`, so `{:#}` chains do not print candle's own text again.
    /// Errors while loading a model file become [`Error::Format`] naming the file
    /// (`Error::in_weights`).
    #[error("{}", candle_message(.0))]
    Candle(candle_core::Error),
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

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Self::Candle(e)
    }
}

impl Error {
    /// Names the weights file a loading error came from: a candle error raised while reading
    /// `weights` becomes [`Error::Format`] with one line naming the tensor and the shapes (`config`
    /// names the file the expected shapes come from, `config.json`); other errors pass unchanged.
    pub(crate) fn in_weights(self, weights: &Path, config: &str) -> Self {
        match self {
            Self::Candle(e) => weights_err(weights, config)(e),
            other => other,
        }
    }
}

/// Maps a candle error raised while reading `weights` to [`Error::Format`] (see [`Error::in_weights`]).
pub(crate) fn weights_err<'a>(
    weights: &'a Path,
    config: &'a str,
) -> impl FnOnce(candle_core::Error) -> Error + 'a {
    move |e| Error::Format {
        path: weights.to_owned(),
        message: weights_message(&e, config),
    }
}

/// The error under candle's wrappers (backtrace, context, path).
fn candle_root(e: &candle_core::Error) -> &candle_core::Error {
    use candle_core::Error as C;
    match e {
        C::WithBacktrace { inner, .. } | C::Context { inner, .. } | C::WithPath { inner, .. } => {
            candle_root(inner)
        }
        other => other,
    }
}

/// What went wrong reading a weights file, in lexbench's words: a tensor whose shape the config does
/// not expect, a tensor missing, a file that is no safetensors file (cut short or another format).
fn weights_message(e: &candle_core::Error, config: &str) -> String {
    use candle_core::Error as C;
    use safetensors::SafeTensorError as S;
    match candle_root(e) {
        // candle-nn's var builders say "shape mismatch for {name}" (and so does `ParamStore`).
        C::UnexpectedShape { msg, expected, got } => match msg.strip_prefix("shape mismatch for ") {
            Some(name) => format!("tensor {name} has shape {got:?}, {config} expects {expected:?}"),
            None => candle_message(e),
        },
        C::CannotFindTensor { path } | C::SafeTensor(S::TensorNotFound(path)) => {
            format!("no tensor {path}, which {config} expects")
        }
        C::SafeTensor(inner) => {
            format!("not a valid safetensors file (truncated, or another format): {inner}")
        }
        _ => candle_message(e),
    }
}

/// candle's message on one line, without the backtrace it may carry.
pub(crate) fn candle_message(e: &candle_core::Error) -> String {
    use candle_core::Error as C;
    let text = match e {
        C::WithBacktrace { inner, .. } => return candle_message(inner),
        C::Context { inner, context } => format!("{context}: {}", candle_message(inner)),
        C::WithPath { inner, path } => format!("{}: {}", path.display(), candle_message(inner)),
        other => other.to_string(),
    };
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join("; ")
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}
