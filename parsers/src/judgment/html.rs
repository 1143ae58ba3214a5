//! HUDOC HTML (the `conversion/docx/html/body` endpoint, generated from the Registry's Word files) into
//! [`Block`]s.
//!
//! What that HTML keeps of the Word file (DATA.md §1): one `<p>` per Word paragraph, sometimes one
//! printed paragraph split over several `<p>`; class names that are hashes of the formatting, stable
//! within a document but not across documents (so they are kept as an opaque [`Block::class`] and
//! only ever compared within the document); paragraph numbers as text (`12.` then no-break spaces);
//! footnote reference marks (`<sup>`/`<a href="#_ftn1">`) inside the text and the footnotes
//! themselves at the end. Named styles and `SEQ` fields are gone, so the segmenter relies on the text
//! and on the classes.
//!
//! Rules: every `<p>`, `<h1>`–`<h6>` and `<li>` is a block, in document order (a `<div>` holding text
//! directly, outside any of those, is a block too); `<br>` is a line break; `script`, `style`,
//! `head` are skipped; footnote reference marks are dropped (a `<sup>`, or a link whose target is
//! `#_ftn…`/`#ftn…`/`#footnote…`); footnote bodies (an element whose id starts with `ftn`, `_ftn` or
//! `footnote`, or whose class names footnotes) are dropped. Blocks inside `<td>`/`<th>` are marked as
//! table text.

use scraper::{ElementRef, Html, Node};

use super::segment::Block;
use crate::{Error, Result};

fn invalid(source: &str, message: impl Into<String>) -> Error {
    Error::Invalid {
        source_name: source.to_string(),
        format: "HTML",
        message: message.into(),
    }
}

const BLOCKS: [&str; 8] = ["p", "h1", "h2", "h3", "h4", "h5", "h6", "li"];

fn is_footnote_body(e: &ElementRef<'_>) -> bool {
    let id = e.value().id().unwrap_or("").to_ascii_lowercase();
    let class = e.value().attr("class").unwrap_or("").to_ascii_lowercase();
    id.starts_with("ftn")
        || id.starts_with("_ftn")
        || id.starts_with("footnote")
        || class.contains("footnote")
}

fn is_footnote_mark(e: &ElementRef<'_>) -> bool {
    let name = e.value().name();
    let href = e.value().attr("href").unwrap_or("").to_ascii_lowercase();
    name == "sup"
        || (name == "a"
            && (href.starts_with("#_ftn") || href.starts_with("#ftn") || href.starts_with("#footnote")))
}

/// Appends the text under `e` to `out`, dropping footnote marks; `<br>` becomes a line break.
fn collect_text(e: ElementRef<'_>, out: &mut String) {
    for child in e.children() {
        match child.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(el) => {
                if el.name() == "br" {
                    out.push('\n');
                    continue;
                }
                if let Some(ce) = ElementRef::wrap(child) {
                    if is_footnote_mark(&ce) || matches!(el.name(), "script" | "style") {
                        continue;
                    }
                    collect_text(ce, out);
                }
            }
            _ => {}
        }
    }
}

fn walk(e: ElementRef<'_>, in_table: bool, out: &mut Vec<Block>) {
    let name = e.value().name();
    if matches!(name, "script" | "style" | "head" | "title") || is_footnote_body(&e) {
        return;
    }
    let in_table = in_table || matches!(name, "td" | "th");
    if BLOCKS.contains(&name) {
        let mut text = String::new();
        collect_text(e, &mut text);
        out.push(Block {
            text,
            style: None,
            class: e
                .value()
                .attr("class")
                .and_then(|c| c.split_whitespace().next())
                .map(str::to_string),
            seq: false,
            in_table,
        });
        return;
    }
    // Text held directly by a container (a `<div>` without `<p>`): one block per run of such text.
    let mut loose = String::new();
    for child in e.children() {
        match child.value() {
            Node::Text(t) => loose.push_str(t),
            Node::Element(_) => {
                if let Some(ce) = ElementRef::wrap(child) {
                    if is_footnote_mark(&ce) {
                        continue;
                    }
                    if matches!(
                        ce.value().name(),
                        "span" | "b" | "i" | "em" | "strong" | "u" | "a"
                    ) {
                        collect_text(ce, &mut loose);
                        continue;
                    }
                    if !loose.trim().is_empty() {
                        out.push(Block {
                            text: std::mem::take(&mut loose),
                            in_table,
                            ..Block::default()
                        });
                    }
                    loose.clear();
                    walk(ce, in_table, out);
                }
            }
            _ => {}
        }
    }
    if !loose.trim().is_empty() {
        out.push(Block {
            text: loose,
            in_table,
            ..Block::default()
        });
    }
}

/// HTML bytes into blocks. Invalid UTF-8 is replaced (and reported by the caller through `lossy`).
///
/// # Errors
/// [`Error::Invalid`] when the bytes hold no markup at all (`<` never occurs) or are binary data —
/// e.g. a DOCX or a PDF handed to the HTML reader (refused before the HTML parser spends seconds and
/// hundreds of megabytes on them).
pub fn blocks(bytes: &[u8], source: &str) -> Result<(Vec<Block>, bool)> {
    if super::looks_binary(bytes) {
        return Err(invalid(source, "binary data, not an HTML document"));
    }
    let text = String::from_utf8_lossy(bytes);
    let lossy = matches!(text, std::borrow::Cow::Owned(_));
    if !text.trim().is_empty() && !text.contains('<') {
        return Err(invalid(source, "no markup: not an HTML document"));
    }
    let doc = Html::parse_document(&text);
    let mut out = Vec::new();
    walk(doc.root_element(), false, &mut out);
    Ok((out, lossy))
}
