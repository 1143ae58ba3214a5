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
    /// The input is larger than the reader accepts ([`crate::judgment::MAX_INPUT_BYTES`],
    /// [`crate::guide::MAX_INPUT_BYTES`]); it was not parsed.
    #[error(
        "{source_name}: {} is larger than {}, the most a {what} may be",
        lexbench_core::text::human_bytes(*size),
        lexbench_core::text::human_bytes(*max_bytes)
    )]
    TooLarge {
        /// The document (file name or itemid).
        source_name: String,
        /// What it was read as ("judgment", "guide").
        what: &'static str,
        /// Its size in bytes.
        size: usize,
        /// The most the reader accepts.
        max_bytes: usize,
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

/// [`Error::TooLarge`] when an input of `size` bytes is over `max_bytes`.
pub(crate) fn check_len(size: usize, max_bytes: usize, source: &str, what: &'static str) -> Result<()> {
    if size > max_bytes {
        return Err(Error::TooLarge {
            source_name: source.to_owned(),
            what,
            size,
            max_bytes,
        });
    }
    Ok(())
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
