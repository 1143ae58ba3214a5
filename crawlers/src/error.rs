//! The one error type of `lexbench-crawlers`.

use std::path::PathBuf;

/// Errors of `lexbench-crawlers`. Each names what it was reading or fetching.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file of the raw store could not be read or written (the cause is the error's `source`,
    /// printed once by `{:#}`).
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The raw store's manifest is corrupt in the middle (a torn last line is repaired, not reported).
    #[error("{}:{line}: corrupt manifest line: {message}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A stored object does not match its name (disk corruption or tampering).
    #[error("raw object {sha256} is missing or does not hash to its name ({reason})")]
    Object {
        /// The object's name.
        sha256: String,
        /// What is wrong.
        reason: String,
    },
    /// An answer from a source could not be understood.
    #[error("{url}: {message}")]
    Source {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// A host could not be reached, or kept failing (the model hub offline, a refused connection).
    #[error("could not reach {url}: {reason}")]
    Unreachable {
        /// The URL asked for.
        url: String,
        /// Why.
        reason: String,
    },
    /// A downloaded file is not what its source lists: refused and deleted.
    #[error("{file}: {what} {got} does not match the {expected} listed for it; the file is refused")]
    Mismatch {
        /// The file (its path in the repository).
        file: String,
        /// What was compared (`sha256`, `git blob id`, `size`).
        what: String,
        /// What the source lists.
        expected: String,
        /// What the download has.
        got: String,
    },
    /// A site answered with a bot check (a Cloudflare challenge page) instead of the document: the
    /// crawl stops at once, without retries.
    #[error(
        "{url}: the site answered HTTP {status} with a bot check (a Cloudflare challenge page), not the \
         document; the crawl stopped without retrying. What is stored is kept: wait (an hour or more) \
         and rerun the same command, lower --rate, set --user-agent to one naming you and a contact \
         address, or crawl a mirror (--base-url) or rebuild from the raw store with --offline"
    )]
    Challenged {
        /// The URL asked for.
        url: String,
        /// The status (403 or 503).
        status: u16,
    },
    /// A setting is invalid.
    #[error("invalid setting: {0}")]
    Config(String),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(String),
    /// An error from `lexbench-core` (writing an index file).
    #[error(transparent)]
    Core(#[from] lexbench_core::Error),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
