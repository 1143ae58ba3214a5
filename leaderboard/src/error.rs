//! The one error type of `lexbench-leaderboard`.

use std::fmt;
use std::path::PathBuf;

/// One reason a submission is rejected: the file, the 1-based line (when the problem has one) and
/// what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The file (the run, its sidecar, the model card).
    pub path: PathBuf,
    /// The line, when the problem sits on one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Errors of `lexbench-leaderboard`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The run (or its sidecar or card) does not fit the dataset it claims; nothing was written.
    #[error("submission rejected ({} problem(s)):\n{}", problems.len(), list(problems))]
    Rejected {
        /// Every problem found (at most [`crate::validate::MAX_PROBLEMS`]).
        problems: Vec<Problem>,
    },
    /// Reading or writing a file failed. The message is the path; the cause is the error's `source`,
    /// so the chain printed with `{:#}` names each once.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A JSON or TOML file does not have its expected shape.
    #[error("{}: {message}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line where known.
        message: String,
    },
    /// A leaderboard entry fails its integrity check (`entry::check_integrity`): it was changed after
    /// it was written, or says it is verified where it cannot be.
    #[error("{}: integrity check failed: {message}", path.display())]
    Tampered {
        /// The entry file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A dataset is missing or inconsistent.
    #[error("dataset {name}: {message}")]
    Dataset {
        /// The dataset.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// An argument the user gave is not allowed: a system name that is blank, too long, holds hidden
    /// characters or claims the reserved baseline name. The message names the argument and what is
    /// allowed. Inconsistent data is [`Error::Dataset`] or [`Error::Rejected`], a file problem
    /// [`Error::Io`] or [`Error::Format`].
    #[error("invalid parameter: {0}")]
    Param(String),
    /// Drawing a plot failed.
    #[error("plot {}: {message}", path.display())]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// The drawing backend's message.
        message: String,
    },
    /// An error from `lexbench-core` (reading qrels, pools, evaluating).
    #[error(transparent)]
    Core(#[from] lexbench_core::Error),
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}
