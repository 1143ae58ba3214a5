//! # lexbench-crawlers
//!
//! Polite fetching of the public sources into a content-addressed raw store:
//!
//! - **HUDOC** search (paged, partitioned by `kpdate` windows under the 10,000-result cap) and judgment
//!   bodies (DOCX and HTML; `204 No Content` is "no body", not an error);
//! - the Court's **case-law guide** PDFs;
//! - the **BSARD** sources (articles, questions).
//!
//! Every body lands in `raw/objects/ab/cdef…` named by its sha256, and one line per fetch is appended to
//! `raw/manifest.jsonl` (the manifest record types live in `lexbench-core`). Crawls resume from the
//! manifest and rebuild offline from what the store already holds. This is the only crate that touches
//! the network.
//!
//! Status: not built yet (see the crawler issue); the crate exists so the workspace has its final shape.
