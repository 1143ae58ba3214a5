//! # lexbench-crawlers
//!
//! Polite fetching of the public sources into a content-addressed raw store. This is the only crate
//! that touches the network.
//!
//! - [`store::RawStore`]: `raw/objects/ab/cdef…` named by sha256, and the append-only
//!   `raw/manifest.jsonl` (one [`lexbench_core::ManifestEntry`] per fetch). Objects are written
//!   atomically before their manifest line; a torn last line is repaired on open.
//! - [`http::PoliteClient`]: identifying User-Agent, global rate limit, concurrency limit, timeouts,
//!   retries with backoff and jitter honouring `Retry-After`.
//! - [`fetch::Fetcher`]: store first, network second; [`fetch::Fetcher::offline`] never requests. A
//!   body that is not the [`kind::BodyKind`] asked for (an HTML page for a CSV, an unasked gzip
//!   stream) is a failed fetch, not stored.
//! - [`hudoc`]: metadata search with date-window bisection under the 10,000-result cap, and bodies
//!   (DOCX, HTML; `204` is "no body"). [`guides`]: case-law guide PDFs. [`bsard`]: BSARD's CSV files
//!   and Justel PDFs.
//! - [`fake_hudoc`]: a faithful local HUDOC with fault injection, which the tests crawl.
//! - [`hub`]: the Hugging Face Hub (`lexbench models fetch hf:ORG/NAME[@REVISION]`): revision to
//!   commit, the files an encoder folder needs, resumable and verified downloads;
//!   [`fake_hub`]: a Hub-shaped loopback server with fault injection for its tests.
//!
//! ```
//! use lexbench_crawlers::hudoc::{docx_url, search_url};
//! let item = "001-175180".parse().unwrap();
//! assert!(docx_url("https://hudoc.echr.coe.int", &item).ends_with("&filename=001-175180.docx"));
//! assert!(search_url("http://127.0.0.1:1", "itemid:\"001-1\"", 0, 500).contains("&length=500&"));
//! ```

pub mod bsard;
pub mod date;
pub mod error;
pub mod fake_hub;
pub mod fake_hudoc;
pub mod fetch;
pub mod guides;
pub mod http;
pub mod hub;
pub mod hudoc;
pub mod kind;
pub mod store;

pub use error::{Error, Result};
