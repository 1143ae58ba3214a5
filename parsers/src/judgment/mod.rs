//! HUDOC judgments (DOCX, HTML) into numbered paragraphs.
//!
//! Two readers reduce their format to a list of [`Block`]s (text in document order with the evidence
//! the format keeps): [`docx`] (zip + WordprocessingML: style ids, `SEQ` fields) and [`html`] (HUDOC's
//! conversion endpoint: text and opaque class names). One segmenter, [`segment`], turns blocks into a
//! [`Judgment`]: the main judgment's paragraphs `1..N` with a [`Section`](lexbench_core::Section) each,
//! the separate opinions with their own numbering, and structured warnings (gaps, duplicates, numbers
//! out of order, quoted numbering, tables of contents, extracts) instead of silent guesses. Its module
//! documentation lists every heuristic and why it exists.
//!
//! ```no_run
//! # fn main() -> lexbench_parsers::Result<()> {
//! use lexbench_parsers::judgment::{item_from_file_name, parse};
//! let bytes = std::fs::read("001-175180.docx").expect("readable");
//! let j = parse(&bytes, "001-175180.docx", item_from_file_name("001-175180.docx"))?;
//! println!("{} paragraphs, {} opinions", j.paragraphs.len(), j.opinions.len());
//! # Ok(()) }
//! ```

pub mod docx;
pub mod html;
pub mod segment;

use lexbench_core::{ItemId, Judgment, Warning};

pub use segment::{Block, Meta};

use crate::Result;

/// The two formats HUDOC serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Word file (zip).
    Docx,
    /// HTML from the conversion endpoint.
    Html,
}

/// Tells DOCX from HTML by content: a zip archive starts with `PK`.
pub fn detect(bytes: &[u8]) -> Format {
    if bytes.starts_with(b"PK") {
        Format::Docx
    } else {
        Format::Html
    }
}

/// The itemid in a file name such as `001-175180.docx` (`None` for `CASE_OF_X.docx`).
pub fn item_from_file_name(name: &str) -> Option<ItemId> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let stem = base.split('.').next().unwrap_or(base);
    stem.parse().ok()
}

/// Parses a HUDOC DOCX judgment. `source` names the document in errors and warnings.
///
/// # Errors
/// [`crate::Error::Invalid`] when the bytes are not a zip, hold no `word/document.xml`, the XML is
/// broken or truncated (an element left open at the end), or the body is empty.
pub fn parse_docx(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    let blocks = docx::blocks(bytes, source)?;
    let meta = Meta {
        source,
        item,
        format: "DOCX",
    };
    segment::segment(&blocks, meta, Vec::new())
}

/// Parses a HUDOC HTML judgment.
///
/// # Errors
/// [`crate::Error::Invalid`] when the bytes hold no markup or no text.
pub fn parse_html(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    let (blocks, lossy) = html::blocks(bytes, source)?;
    let mut warnings = Vec::new();
    if lossy {
        warnings.push(Warning {
            code: "invalid_utf8".into(),
            message: "the HTML is not valid UTF-8; invalid bytes were replaced".into(),
            at: None,
        });
    }
    let meta = Meta {
        source,
        item,
        format: "HTML",
    };
    segment::segment(&blocks, meta, warnings)
}

/// Parses either format, chosen by [`detect`].
///
/// # Errors
/// As [`parse_docx`] or [`parse_html`].
pub fn parse(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    match detect(bytes) {
        Format::Docx => parse_docx(bytes, source, item),
        Format::Html => parse_html(bytes, source, item),
    }
}
