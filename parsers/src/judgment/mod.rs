//! HUDOC judgments (DOCX, HTML, plain text) into numbered paragraphs.
//!
//! Three readers reduce their format to a list of [`Block`]s (text in document order with the evidence
//! the format keeps): [`docx`] (zip + WordprocessingML: style ids, `SEQ` fields), [`html`] (HUDOC's
//! conversion endpoint: text and opaque class names) and [`text`] (one line per printed paragraph or
//! heading: the text alone). One segmenter, [`segment`], turns blocks into a
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
pub mod hudoc_json;
pub mod segment;
pub mod segmented;
pub mod text;
pub mod title;

use lexbench_core::{ItemId, Judgment, Warning};

pub use segment::{Block, Meta};

use crate::Result;

/// What a file is, told by its content (never by its name): the two formats HUDOC serves, plain
/// text, or something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Word file (a zip archive: `PK`).
    Docx,
    /// HTML from the conversion endpoint: text with markup.
    Html,
    /// Text without markup (a judgment as `N. text` per line: [`parse_text`]).
    Text,
    /// A HUDOC mirror's JSON document: metadata and the flattened HTML body in `full_text`
    /// ([`parse_hudoc_json`]).
    HudocJson,
    /// The flattened HTML body saved alone: CSS rules, then the text on one line with inline
    /// `N. &#xa0;` paragraph numbers ([`parse_flat`]).
    Flat,
    /// Anything else, described for the user ("a PDF", "binary data of no known format").
    Other(&'static str),
}

/// The largest judgment the readers take, in bytes, whatever its format (DOCX, HTML, text): 64 MiB.
///
/// HUDOC's longest judgments are a few MB (the largest DOCX among the fixtures is 0.24 MB, the
/// longest plain text 0.22 MB); the cap is far above any real one and keeps a wrong file (a disk
/// image, a dump) from being parsed at all. Parsing stays bounded below it: peak memory measured
/// on 50 MB inputs is in the project's ARCHITECTURE.md ("Input limits"). [`parse`] and the
/// format-specific parsers refuse larger input with [`crate::Error::TooLarge`]; [`read_file`] reads no
/// more than the cap.
pub const MAX_INPUT_BYTES: usize = 64 << 20;

/// Reads a judgment file of at most [`MAX_INPUT_BYTES`] (a larger one is
/// [`lexbench_core::Error::TooLarge`], found before reading it).
///
/// # Errors
/// The file cannot be read, or is too large.
pub fn read_file(path: &std::path::Path) -> lexbench_core::Result<Vec<u8>> {
    lexbench_core::text::read_bytes_at_most(path, MAX_INPUT_BYTES)
}

/// How much of the start of a file is searched for markup.
const SNIFF_LEN: usize = 64 * 1024;

/// Binary: a NUL byte, or more than 1 in 100 bytes a control character other than tab, line feed,
/// carriage return and form feed. Text in any ASCII-compatible encoding passes; random bytes (an
/// eighth of them are control characters) fail within their first few hundred bytes.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    let mut control = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if b == 0 {
            return true;
        }
        if (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c)) || b == 0x7f {
            control += 1;
            // Decide early on binary data: past 256 bytes, a running rate over 1% is enough.
            if i >= 256 && control * 100 > i + 1 {
                return true;
            }
        }
    }
    control * 100 > bytes.len()
}

/// Whether the start of a textual file holds markup: it begins with `<` (after a byte-order mark and
/// whitespace), or a tag HUDOC's HTML is made of occurs early on.
fn has_markup(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(SNIFF_LEN)];
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<') {
        return true;
    }
    let lower = head.to_ascii_lowercase();
    [
        "<!doctype html",
        "<html",
        "<body",
        "<div",
        "<p>",
        "<p ",
        "<table",
        "<span",
    ]
    .iter()
    .any(|tag| lower.windows(tag.len()).any(|w| w == tag.as_bytes()))
}

/// Tells what `bytes` are by content: a zip archive (`PK`) is DOCX, text with markup HTML, text
/// without it [`Format::Text`]; known non-judgment formats (PDF, legacy Word, RTF, compressed data,
/// images, UTF-16, a JSON array) and binary data are [`Format::Other`]. Only the start of a file is searched for
/// markup, and binary data is recognised within its first bytes, so a large file of garbage costs
/// no more than a scan.
pub fn detect(bytes: &[u8]) -> Format {
    const MAGIC: &[(&[u8], &str)] = &[
        (
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
            "a legacy Word document (OLE2 .doc)",
        ),
        (b"{\\rtf", "an RTF document"),
        (b"\x1f\x8b", "gzip data"),
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
        (b"Rar!", "a RAR archive"),
        (b"\xff\xfe", "UTF-16 text"),
        (b"\xfe\xff", "UTF-16 text"),
    ];
    if bytes.starts_with(b"PK") {
        return Format::Docx;
    }
    // PDF readers accept junk before the header within the first kilobyte.
    if bytes[..bytes.len().min(1024)].windows(5).any(|w| w == b"%PDF-") {
        return Format::Other("a PDF");
    }
    if let Some((_, what)) = MAGIC.iter().find(|(m, _)| bytes.starts_with(m)) {
        return Format::Other(what);
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Format::Other("an empty file");
    }
    if looks_binary(bytes) {
        return Format::Other("binary data of no known format");
    }
    if hudoc_json::looks_json(bytes) {
        return Format::HudocJson;
    }
    if hudoc_json::looks_json_array(bytes) {
        return Format::Other(
            "a JSON array (a HUDOC document is one JSON object with `itemid` and `full_text`)",
        );
    }
    if hudoc_json::looks_flat(&bytes[..bytes.len().min(SNIFF_LEN)]) {
        return Format::Flat;
    }
    if has_markup(bytes) {
        Format::Html
    } else {
        Format::Text
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
/// [`crate::Error::TooLarge`] over [`MAX_INPUT_BYTES`]; [`crate::Error::Invalid`] when the bytes are
/// not a zip, hold no `word/document.xml`, the XML is
/// broken or truncated (an element left open at the end), or the body is empty.
pub fn parse_docx(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    crate::error::check_len(bytes.len(), MAX_INPUT_BYTES, source, "judgment")?;
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
    crate::error::check_len(bytes.len(), MAX_INPUT_BYTES, source, "judgment")?;
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

/// Parses a plain-text judgment: one printed paragraph (`N. text`) or heading per line ([`text`]).
/// Invalid UTF-8 is replaced, with an `invalid_utf8` warning naming the first line concerned; a
/// hard-wrapped text is joined back into paragraphs, with a `hard_wrapped` warning.
///
/// # Errors
/// [`crate::Error::NotAJudgment`] when the text holds no numbered paragraph in its main judgment
/// (prose, a list, an error page saved as text): a judgment without paragraphs is nothing to
/// retrieve. [`crate::Error::Invalid`] when it has no text at all.
pub fn parse_text(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    crate::error::check_len(bytes.len(), MAX_INPUT_BYTES, source, "judgment")?;
    let read = text::blocks(bytes, source);
    let mut warnings = Vec::new();
    if let Some(line) = read.invalid_utf8_line {
        warnings.push(Warning {
            code: "invalid_utf8".into(),
            message: format!(
                "the text is not valid UTF-8 (first at line {line}); invalid bytes were replaced"
            ),
            at: None,
        });
    }
    if let Some(width) = read.wrapped_at {
        warnings.push(Warning {
            code: "hard_wrapped".into(),
            message: format!(
                "the text is wrapped at {width} characters: its lines were joined back into paragraphs"
            ),
            at: None,
        });
    }
    let meta = Meta {
        source,
        item,
        format: "TEXT",
    };
    let j = segment::segment(&read.blocks, meta, warnings)?;
    if j.paragraphs.is_empty() {
        return Err(crate::Error::NotAJudgment {
            source_name: source.to_string(),
            found: "plain text",
            note: "; no numbered paragraph `N. …` starts a line of the main judgment",
        });
    }
    Ok(j)
}

/// Parses the flattened HUDOC HTML body a mirror stores (CSS rules, then the text on one line with
/// inline `N. &#xa0;` paragraph numbers; [`hudoc_json`]). Invalid UTF-8 is replaced, with an
/// `invalid_utf8` warning.
///
/// # Errors
/// [`crate::Error::NotAJudgment`] when the text holds no numbered paragraph in its main judgment;
/// [`crate::Error::Invalid`] when it has no text.
pub fn parse_flat(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    crate::error::check_len(bytes.len(), MAX_INPUT_BYTES, source, "judgment")?;
    let text = String::from_utf8_lossy(bytes);
    let mut warnings = Vec::new();
    if matches!(text, std::borrow::Cow::Owned(_)) {
        warnings.push(Warning {
            code: "invalid_utf8".into(),
            message: "the text is not valid UTF-8; invalid bytes were replaced".into(),
            at: None,
        });
    }
    flat_judgment(&text, source, item, hudoc_json::FLAT_FORMAT, warnings)
}

fn flat_judgment(
    text: &str,
    source: &str,
    item: Option<ItemId>,
    format: &'static str,
    warnings: Vec<Warning>,
) -> Result<Judgment> {
    let blocks = hudoc_json::blocks(text);
    let meta = Meta { source, item, format };
    let j = segment::segment(&blocks, meta, warnings)?;
    if j.paragraphs.is_empty() {
        return Err(crate::Error::NotAJudgment {
            source_name: source.to_string(),
            found: "flattened HUDOC text",
            note: "; no numbered paragraph `N. &#xa0; …` in its main judgment",
        });
    }
    Ok(j)
}

/// Parses a HUDOC mirror's JSON document ([`hudoc_json`]): a JSON object with the `itemid`, `title`
/// and `date` of the judgment and its `full_text`, the flattened HTML body (or HTML, read by
/// [`parse_html`]). The itemid, title and date come from the metadata; an `item` the caller gives
/// that differs from the metadata's is reported as an `itemid_mismatch` warning.
///
/// # Errors
/// [`crate::Error::Invalid`] when the JSON is broken or lacks `itemid` or `full_text`; otherwise as
/// [`parse_flat`] or [`parse_html`].
pub fn parse_hudoc_json(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    crate::error::check_len(bytes.len(), MAX_INPUT_BYTES, source, "judgment")?;
    let doc = hudoc_json::document(bytes, source)?;
    let mut warnings = Vec::new();
    if let Some(given) = item.as_ref().filter(|i| **i != doc.item) {
        warnings.push(Warning {
            code: "itemid_mismatch".into(),
            message: format!(
                "the file is named for {given} but its metadata says {}; the metadata wins",
                doc.item
            ),
            at: None,
        });
    }
    let body = doc.full_text.as_bytes();
    let mut j = if !hudoc_json::looks_flat(&body[..body.len().min(SNIFF_LEN)]) && has_markup(body) {
        let mut j = parse_html(body, source, Some(doc.item.clone()))?;
        j.warnings.splice(0..0, warnings);
        j
    } else {
        flat_judgment(
            &doc.full_text,
            source,
            Some(doc.item.clone()),
            hudoc_json::JSON_FORMAT,
            warnings,
        )?
    };
    j.item = Some(doc.item);
    if let Some(t) = doc.title {
        j.title = t;
    }
    if doc.date.is_some() {
        j.date = doc.date;
    }
    Ok(j)
}

/// Parses any of the formats, chosen by [`detect`].
///
/// # Errors
/// As [`parse_docx`], [`parse_html`] or [`parse_text`]; [`crate::Error::NotAJudgment`] for anything
/// that is none of them (a PDF, binary data, an empty file).
pub fn parse(bytes: &[u8], source: &str, item: Option<ItemId>) -> Result<Judgment> {
    // Each format's parser refuses input over MAX_INPUT_BYTES; `detect` reads only the start.
    match detect(bytes) {
        Format::Docx => parse_docx(bytes, source, item),
        Format::Html => parse_html(bytes, source, item),
        Format::Text => parse_text(bytes, source, item),
        Format::HudocJson => parse_hudoc_json(bytes, source, item),
        Format::Flat => parse_flat(bytes, source, item),
        Format::Other(found) => Err(crate::Error::NotAJudgment {
            source_name: source.to_string(),
            found,
            note: "",
        }),
    }
}
