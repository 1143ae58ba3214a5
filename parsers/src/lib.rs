//! # lexbench-parsers
//!
//! Pure functions from raw bytes to records plus structured warnings:
//!
//! - [`judgment`]: HUDOC DOCX (WordprocessingML, `SEQ` fields or typed numbers), HUDOC HTML and plain
//!   text (a printed paragraph per line) into the main judgment's numbered paragraphs
//!   ([`lexbench_core::Judgment`]) with section labels, separate opinions kept apart, and warnings for
//!   gaps, duplicates, quoted numbering, tables of contents;
//! - [`guide`]: case-law guides (PDF with or without an outline, or extracted text) → table of contents
//!   → heading paths (queries, in structured and release form) → pinpoint citations → itemids
//!   ([`guide::resolve`], against HUDOC metadata and the guide's own list of cited cases).
//!
//! BSARD's CSV files are read where the dataset is assembled (`lexbench-splits`), since they are
//! already records. No disk or network access happens here: callers hand in bytes and get
//! `lexbench-core` records back.
//!
//! ```no_run
//! # fn main() -> lexbench_parsers::Result<()> {
//! let bytes = std::fs::read("001-175180.docx").expect("readable");
//! let j = lexbench_parsers::judgment::parse(&bytes, "001-175180.docx", "001-175180".parse().ok())?;
//! let pdf = std::fs::read("guide_art_1_eng.pdf").expect("readable");
//! let g = lexbench_parsers::guide::parse_pdf("guide_art_1_eng.pdf", "guide_art_1_eng".parse().expect("id"), &pdf)?;
//! println!("{} paragraphs; {} queries", j.paragraphs.len(), g.queries.len());
//! # Ok(()) }
//! ```

pub mod error;
pub mod guide;
pub mod judgment;

pub use error::{Error, Result};
