//! The one error type of `lexbench-parsers`.

/// Errors of `lexbench-parsers`. Each names the document it was reading (`source`: a file name or an
/// itemid, as the caller supplied it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not what the format requires.
    #[error("{source_name}: not a valid {format}: {message}")]
    Invalid {
        /// The document (file name or itemid).
        source_name: String,
        /// The format expected ("DOCX", "HTML", "PDF", "guide text").
        format: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The input is not a judgment in a supported format (told by content: a PDF, binary data, …).
    #[error("{source_name}: {found}, not a judgment (expected DOCX, HTML or text{note})")]
    NotAJudgment {
        /// The document (file name or itemid).
        source_name: String,
        /// What it looks like ("a PDF", "binary data of no known format", "plain text").
        found: &'static str,
        /// More about why, starting with `; ` (or empty).
        note: &'static str,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
