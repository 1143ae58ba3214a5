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
///
/// An iterative walk over the tree's links (first child, next sibling, parent): markup nested tens
/// of thousands of elements deep costs no stack (issue 29: 60,000 nested `<div>` overflowed it).
fn collect_text(e: ElementRef<'_>, out: &mut String) {
    let root = *e;
    let mut next = root.first_child();
    while let Some(node) = next {
        let mut descend = false;
        match node.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(el) if el.name() == "br" => out.push('\n'),
            Node::Element(el) => {
                descend = ElementRef::wrap(node)
                    .is_some_and(|ce| !is_footnote_mark(&ce) && !matches!(el.name(), "script" | "style"));
            }
            _ => {}
        }
        next = if descend { node.first_child() } else { None };
        // No child to go down to: the next sibling of the node or of its nearest ancestor below
        // `root` that has one.
        let mut at = node;
        while next.is_none() {
            next = at.next_sibling();
            match at.parent() {
                Some(p) if next.is_none() && p.id() != root.id() => at = p,
                _ => break,
            }
        }
    }
}

/// Enters `e`: skipped or a block (pushed to `out`) give `None`; a container whose children are to
/// be walked gives whether they are in a table cell.
fn enter(e: ElementRef<'_>, in_table: bool, out: &mut Vec<Block>) -> Option<bool> {
    let name = e.value().name();
    if matches!(name, "script" | "style" | "head" | "title") || is_footnote_body(&e) {
        return None;
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
        return None;
    }
    Some(in_table)
}

/// The blocks under `root`, in document order. Text held directly by a container (a `<div>` without
/// `<p>`) makes one block per run of such text. The open containers are an explicit stack (next
/// child to visit, in a table cell, loose text not yet made a block), not the call stack, so nesting
/// depth costs memory only, as the parsed document already does.
fn walk(root: ElementRef<'_>, out: &mut Vec<Block>) {
    let mut stack = Vec::new();
    if let Some(in_table) = enter(root, false, out) {
        stack.push((root.first_child(), in_table, String::new()));
    }
    while let Some((next, in_table, loose)) = stack.last_mut() {
        let Some(child) = *next else {
            let (_, in_table, loose) = stack.pop().expect("a frame");
            if !loose.trim().is_empty() {
                out.push(Block {
                    text: loose,
                    in_table,
                    ..Block::default()
                });
            }
            continue;
        };
        *next = child.next_sibling();
        match child.value() {
            Node::Text(t) => loose.push_str(t),
            Node::Element(_) => {
                let Some(ce) = ElementRef::wrap(child) else {
                    continue;
                };
                if is_footnote_mark(&ce) {
                    continue;
                }
                if matches!(
                    ce.value().name(),
                    "span" | "b" | "i" | "em" | "strong" | "u" | "a"
                ) {
                    collect_text(ce, loose);
                    continue;
                }
                if !loose.trim().is_empty() {
                    out.push(Block {
                        text: std::mem::take(loose),
                        in_table: *in_table,
                        ..Block::default()
                    });
                }
                loose.clear();
                let in_table = *in_table;
                if let Some(t) = enter(ce, in_table, out) {
                    stack.push((ce.first_child(), t, String::new()));
                }
            }
            _ => {}
        }
    }
}

/// The deepest element nesting accepted: 1,000. HUDOC's HTML (Word paragraphs in a few `<div>`s,
/// tables, lists) nests a few dozen deep; the HTML parser's tree building costs time proportional to
/// the depth for each element (its scope checks walk the open elements), so 60,000 nested `<div>`
/// (300 KB) take minutes, and a 64 MiB file of them hours (issue 29).
pub const MAX_DEPTH: usize = 1_000;

/// Elements that never have content (no end tag).
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
    "wbr", "basefont", "bgsound", "frame", "keygen",
];
/// Elements whose content is raw text, skipped to their end tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

/// Elements whose start tag closes an open element of the same family (an HTML parser's implied
/// end tags), with the elements that bound the search for it.
fn implied_close(name: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    const TABLE: &[&str] = &["table", "template", "html"];
    Some(match name {
        "p" => (
            &["p"],
            &[
                "table", "td", "th", "caption", "button", "object", "applet", "marquee", "html",
            ],
        ),
        "li" => (&["li"], &["ul", "ol", "table", "td", "th", "html"]),
        "dt" | "dd" => (&["dt", "dd"], &["dl", "table", "td", "th", "html"]),
        "tr" => (&["tr"], TABLE),
        "td" | "th" => (&["td", "th"], &["tr", "table", "template", "html"]),
        "thead" | "tbody" | "tfoot" => (&["thead", "tbody", "tfoot"], TABLE),
        "option" => (&["option"], &["select", "optgroup", "html"]),
        _ => return None,
    })
}

/// A quick estimate of how deep the document's elements nest, without building it: start tags
/// open elements (void ones do not), an end tag closes back to the innermost open element of its
/// name (a stray one is ignored), and the start tags an HTML parser closes implicitly (`<p>`,
/// `<li>`, `<td>`, …) close an open one of their family first, as that parser does. Returns the
/// byte offset of the start tag that takes the nesting over [`MAX_DEPTH`], if one does. Each tag
/// costs the same whatever the depth (per-name stacks of positions), and the stack never holds more
/// than `MAX_DEPTH` + 1 elements.
fn too_deep(html: &str) -> Option<usize> {
    use std::collections::HashMap;
    let b = html.as_bytes();
    let mut stack: Vec<String> = Vec::new();
    // Where each open element's name occurs in `stack` (innermost last).
    let mut at: HashMap<String, Vec<usize>> = HashMap::new();
    let last = |at: &HashMap<String, Vec<usize>>, names: &[&str]| -> Option<usize> {
        names
            .iter()
            .filter_map(|n| at.get(*n).and_then(|v| v.last().copied()))
            .max()
    };
    let close_to = |stack: &mut Vec<String>, at: &mut HashMap<String, Vec<usize>>, depth: usize| {
        while stack.len() > depth {
            if let Some(n) = stack.pop()
                && let Some(v) = at.get_mut(&n)
            {
                v.pop();
            }
        }
    };
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        let lt = i + off;
        let rest = &html[lt..];
        if rest.starts_with("<!--") {
            i = rest.find("-->").map_or(b.len(), |e| lt + e + 3);
            continue;
        }
        let end_tag = rest.starts_with("</");
        let name_from = lt + if end_tag { 2 } else { 1 };
        let name_len = b[name_from..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-' || **c == b':')
            .count();
        if name_len == 0 || !b[name_from].is_ascii_alphabetic() {
            // `<!DOCTYPE …>`, `<?…>`, a lone `<`: no element.
            i = lt + 1;
            continue;
        }
        let name = html[name_from..name_from + name_len].to_ascii_lowercase();
        // The end of the tag: the first `>` outside a quoted attribute value.
        let mut j = name_from + name_len;
        let mut quote = None;
        while j < b.len() {
            match (quote, b[j]) {
                (None, b'>') => break,
                (None, q @ (b'"' | b'\'')) => quote = Some(q),
                (Some(q), c) if c == q => quote = None,
                _ => {}
            }
            j += 1;
        }
        i = (j + 1).min(b.len());
        if end_tag {
            if let Some(&pos) = at.get(&name).and_then(|v| v.last()) {
                close_to(&mut stack, &mut at, pos);
            }
            continue;
        }
        if VOID.contains(&name.as_str()) {
            continue;
        }
        if let Some((family, bounds)) = implied_close(&name)
            && let Some(open) = last(&at, family)
            && last(&at, bounds).is_none_or(|bound| bound < open)
        {
            close_to(&mut stack, &mut at, open);
        }
        if RAW_TEXT.contains(&name.as_str()) {
            // Raw text up to its end tag (any case) holds no elements.
            i = html[i..]
                .match_indices("</")
                .map(|(e, _)| i + e)
                .find(|&e| {
                    b.get(e + 2..e + 2 + name.len())
                        .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
                })
                .unwrap_or(b.len());
            continue;
        }
        // `<path/>` inside SVG or MathML is closed by its slash (in HTML the slash means nothing).
        if j > 0 && b.get(j - 1) == Some(&b'/') && last(&at, &["svg", "math"]).is_some() {
            continue;
        }
        at.entry(name.clone()).or_default().push(stack.len());
        stack.push(name);
        if stack.len() > MAX_DEPTH {
            return Some(lt);
        }
    }
    None
}

/// HTML bytes into blocks. Invalid UTF-8 is replaced (and reported by the caller through `lossy`).
///
/// # Errors
/// [`Error::Invalid`] when the bytes hold no markup at all (`<` never occurs) or are binary data —
/// e.g. a DOCX or a PDF handed to the HTML reader (refused before the HTML parser spends seconds and
/// hundreds of megabytes on them) —, or when elements nest more than [`MAX_DEPTH`] deep (refused
/// before the HTML parser, whose time grows with the depth for every element).
pub fn blocks(bytes: &[u8], source: &str) -> Result<(Vec<Block>, bool)> {
    if super::looks_binary(bytes) {
        return Err(invalid(source, "binary data, not an HTML document"));
    }
    let text = String::from_utf8_lossy(bytes);
    let lossy = matches!(text, std::borrow::Cow::Owned(_));
    if !text.trim().is_empty() && !text.contains('<') {
        return Err(invalid(source, "no markup: not an HTML document"));
    }
    if let Some(at) = too_deep(&text) {
        return Err(invalid(
            source,
            format!(
                "elements nested more than {MAX_DEPTH} deep (at byte {at}): not a judgment (HUDOC's HTML nests a few dozen at most)"
            ),
        ));
    }
    let doc = Html::parse_document(&text);
    let mut out = Vec::new();
    walk(doc.root_element(), &mut out);
    Ok((out, lossy))
}
