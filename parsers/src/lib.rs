//! # lexbench-parsers
//!
//! Pure functions from raw bytes to records plus structured warnings:
//!
//! - **judgments**: HUDOC DOCX (WordprocessingML, `SEQ` fields or typed numbers) and HUDOC HTML into the
//!   main judgment's numbered paragraphs with section labels, separate opinions kept apart;
//! - **guides**: case-law guide PDFs → table of contents → heading paths (queries) → pinpoint citations;
//! - **BSARD articles**: statutory articles with their position in the legislative hierarchy.
//!
//! No disk or network access happens here: callers hand in bytes and get `lexbench-core` records back.
//!
//! Status: not built yet (see the judgment-parser and guide-parser issues).

pub mod error;
pub mod guide;
pub mod judgment;

pub use error::{Error, Result};
