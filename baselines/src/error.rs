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
    /// A value the user chose is out of range: a hyper-parameter, a PEFT, BM25, ColBERT, GAT or
    /// curriculum setting, a schedule, a model name. Use it only for settings; the message names the
    /// setting, the value and what is allowed (`bm25 k1 must be finite and ≥ 0, got -1`). A malformed
    /// config file whose path is known is [`Error::Format`] instead.
    #[error("invalid parameter: {0}")]
    Param(String),
    /// A model cannot serve as asked: it lacks what the use needs (a pooler for a cross-encoder, a
    /// checkpoint's weights among a repository's files) or is not installed. The message names the
    /// model (its folder where known) and what to do.
    #[error("{0}")]
    Model(String),
    /// A folder a run works in holds another run's state, or lacks the state the run starts from
    /// (checkpoints of another configuration, a second stage without its first): the folder and
    /// what to do.
    #[error("{}: {message}", path.display())]
    Folder {
        /// The folder.
        path: PathBuf,
        /// What is there, or missing, and what to do.
        message: String,
    },
    /// The input data contradict themselves or each other: a graph edge naming an unknown node, a
    /// document id with no text, an empty corpus, qrels or a pool naming unknown docs, a candidate
    /// listed twice, a cache holding vectors of another width. Nothing the user can fix by changing
    /// a setting; the data (or the step that produced them) must be fixed. Build it with
    /// `Error::data`.
    #[error("inconsistent data in {context}: {message}")]
    Data {
        /// What was being read: `graph edges`, `curriculum candidates`, a cache file.
        context: String,
        /// What is wrong, naming the offending id or index.
        message: String,
    },
    /// Training produced a non-finite value (loss, gradient norm): the optimisation diverged. The
    /// usual cure is a lower learning rate, which `what` suggests.
    #[error("training diverged at step {step}: {what}")]
    Diverged {
        /// The optimisation step (as counted by the trainer) at which the value was seen.
        step: u64,
        /// The value and how to avoid it: `loss is NaN (epoch 2): lower the learning rate`.
        what: String,
    },
    /// An invariant of this crate's own code broke: tensors built here disagree in shape, a value
    /// checked earlier is gone, a caller inside the workspace broke a documented precondition. Never
    /// the user's fault: the message says what broke, and the display says it is a bug. Build it with
    /// `Error::internal`.
    #[error("internal error (a bug in lexbench, please report it): {0}")]
    Internal(String),
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
    /// [`Error::Data`]: `context` names what was being read, `message` what is wrong in it.
    pub fn data(context: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Data {
            context: context.into(),
            message: message.into(),
        }
    }

    /// [`Error::Internal`], saying which invariant broke.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }

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

/// [`Error::Io`] for `path`, as a `map_err` argument.
pub fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked: each kind of failure displays as one line saying which kind it is (what
    //! the CLI prints after `error: `). That sites produce the right variant is checked beside them:
    //! `Param` in `sparse::tests` (BM25 k1) and `curriculum::tests`, `Data` in `graph::tests` and
    //! `curriculum::tests` (edges naming unknown nodes), `Internal` in `graph::tests` and
    //! `encoder::hier::tests` (lists of unequal length, an empty batch). `Diverged` has no site
    //! outside `train/` yet.
    use super::*;

    #[test]
    fn displays_name_the_kind_of_failure() {
        let cases = [
            (
                Error::Param("bm25 b must be in [0, 1], got 2".into()),
                "invalid parameter: bm25 b must be in [0, 1], got 2",
            ),
            (
                Error::data("graph edges", "node 9 is out of range for 8 nodes"),
                "inconsistent data in graph edges: node 9 is out of range for 8 nodes",
            ),
            (
                Error::Diverged {
                    step: 12,
                    what: "loss is NaN (epoch 2): lower the learning rate".into(),
                },
                "training diverged at step 12: loss is NaN (epoch 2): lower the learning rate",
            ),
            (
                Error::internal("segment softmax: 3 scores but 2 destinations"),
                "internal error (a bug in lexbench, please report it): segment softmax: 3 scores but 2 \
                 destinations",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
