//! PDF → page texts and outline.
//!
//! Library facts this follows (ARCHITECTURE.md, "Library facts"): the outline is read with lopdf 0.47's
//! `Document::get_toc` (pdf-extract's lopdf 0.42 merges duplicate titles and garbles PDFDocEncoding);
//! pages are extracted one by one with `pdf_extract::output_doc_page`, because the by-pages helper
//! stops silently at the first failing page; pdf-extract has known `unwrap` panics on real files, so
//! the whole extraction runs under `catch_unwind` and a panic becomes an error naming the file. A page
//! that fails alone becomes an empty page and a warning.

use std::panic::{AssertUnwindSafe, catch_unwind};

use lexbench_core::records::Warning;

use crate::{Error, Result};

/// An outline (bookmark) entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineEntry {
    /// Depth from 1.
    pub level: u8,
    /// The bookmark's title (with the heading's number, as printed).
    pub title: String,
    /// The physical page it points to (1-based).
    pub page: Option<u32>,
}

/// What a PDF gives the guide parser.
#[derive(Debug, Clone, Default)]
pub struct PdfText {
    /// Text of each page, in order.
    pub pages: Vec<String>,
    /// The outline, if the PDF has one.
    pub outline: Option<Vec<OutlineEntry>>,
    /// Pages that failed, outline errors.
    pub warnings: Vec<Warning>,
}

fn invalid(source_name: &str, message: String) -> Error {
    Error::Invalid {
        source_name: source_name.to_owned(),
        format: "PDF",
        message,
    }
}

/// The most outline items and named-destination nodes [`outline`] reads: far above a real guide's
/// few hundred bookmarks.
const MAX_OUTLINE_NODES: usize = 100_000;

/// Checks, before lopdf walks them, that the outline (`/First`, `/Next`) and the named-destination
/// tree (`/Kids`) are trees of at most [`MAX_OUTLINE_NODES`] nodes: lopdf 0.47's `get_toc` follows
/// `/Next` without remembering where it has been, so an item whose `/Next` leads back to itself
/// loops until memory runs out (found by the `guide_pdf` fuzz target: a 3 KB file took 3.7 GB and
/// aborted `parse guide`), and a `/Kids` array naming its own node twice doubles the work at each of
/// lopdf's 100 levels. Any node reached twice is refused (a cycle, or a shared node).
fn check_outline_trees(doc: &lopdf::Document) -> std::result::Result<(), String> {
    use lopdf::Object;
    let Ok(catalog) = doc.catalog() else {
        return Ok(());
    };
    let mut seen = std::collections::HashSet::new();
    let mut nodes = 0usize;
    let mut walk = |root: Option<&Object>, what: &str, links: &[&[u8]]| {
        let mut stack: Vec<&Object> = root.into_iter().collect();
        while let Some(obj) = stack.pop() {
            let dict = match obj {
                Object::Reference(id) => {
                    if !seen.insert(*id) {
                        return Err(format!("{what} reaches object {} {} twice", id.0, id.1));
                    }
                    match doc.get_object(*id).and_then(Object::as_dict) {
                        Ok(d) => d,
                        Err(_) => continue,
                    }
                }
                Object::Dictionary(d) => d,
                _ => continue,
            };
            nodes += 1;
            if nodes > MAX_OUTLINE_NODES {
                return Err(format!("{what} has more than {MAX_OUTLINE_NODES} nodes"));
            }
            for &link in links {
                match dict.get(link) {
                    Ok(Object::Array(items)) => stack.extend(items.iter()),
                    Ok(o) => stack.push(o),
                    Err(_) => {}
                }
            }
        }
        Ok(())
    };
    walk(catalog.get(b"Outlines").ok(), "the outline", &[b"First", b"Next"])?;
    // Where lopdf looks for named destinations: the catalog's /Dests, else /Names → /Dests.
    let dests = catalog.get(b"Dests").ok().or_else(|| {
        let names = match catalog.get(b"Names").ok()? {
            Object::Reference(id) => doc.get_object(*id).ok()?,
            o => o,
        };
        names.as_dict().ok()?.get(b"Dests").ok()
    });
    walk(dests, "the named destinations", &[b"Kids"])
}

/// Reads the outline with lopdf 0.47: `Ok(None)` when the PDF has none. An outline that is not a
/// tree (`check_outline_trees`) is ignored with a warning, as one lopdf cannot read is.
pub fn outline(source_name: &str, bytes: &[u8]) -> Result<(Option<Vec<OutlineEntry>>, Vec<Warning>)> {
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| invalid(source_name, e.to_string()))?;
    if let Err(why) = check_outline_trees(&doc) {
        return Ok((
            None,
            vec![Warning {
                code: "outline_error".into(),
                message: format!("the outline could not be read: {why}"),
                at: None,
            }],
        ));
    }
    match doc.get_toc() {
        Ok(toc) => {
            let warnings = toc
                .errors
                .iter()
                .map(|e| Warning {
                    code: "outline_error".into(),
                    message: e.clone(),
                    at: None,
                })
                .collect();
            let entries = toc
                .toc
                .into_iter()
                .map(|t| OutlineEntry {
                    level: u8::try_from(t.level).unwrap_or(u8::MAX),
                    title: super::text::squash(&t.title),
                    page: u32::try_from(t.page).ok().filter(|&p| p > 0),
                })
                .collect::<Vec<_>>();
            Ok(((!entries.is_empty()).then_some(entries), warnings))
        }
        Err(lopdf::Error::NoOutline) => Ok((None, Vec::new())),
        // A catalog without an `/Outlines` entry is a PDF without bookmarks, not a broken outline.
        Err(e) if e.to_string().contains("Outlines") => Ok((None, Vec::new())),
        Err(e) => Ok((
            None,
            vec![Warning {
                code: "outline_error".into(),
                message: format!("the outline could not be read: {e}"),
                at: None,
            }],
        )),
    }
}

/// Extracts page texts (pdf-extract, page by page) and the outline.
pub fn read(source_name: &str, bytes: &[u8]) -> Result<PdfText> {
    if !bytes.starts_with(b"%PDF") {
        return Err(invalid(source_name, "the file does not start with %PDF".into()));
    }
    let (outline, mut warnings) = outline(source_name, bytes)?;
    let extracted = catch_unwind(AssertUnwindSafe(
        || -> std::result::Result<(Vec<String>, Vec<Warning>), String> {
            let doc = pdf_extract::Document::load_mem(bytes).map_err(|e| e.to_string())?;
            let mut pages = Vec::new();
            let mut warnings = Vec::new();
            for (num, _) in doc.get_pages() {
                let mut s = String::new();
                let result = {
                    let mut out = pdf_extract::PlainTextOutput::new(&mut s);
                    pdf_extract::output_doc_page(&doc, &mut out, num)
                };
                if let Err(e) = result {
                    warnings.push(Warning {
                        code: "page_extraction_failed".into(),
                        message: format!("page {num}: {e}"),
                        at: Some(format!("page {num}")),
                    });
                    s.clear();
                }
                pages.push(s);
            }
            Ok((pages, warnings))
        },
    ));
    match extracted {
        Ok(Ok((pages, w))) => {
            warnings.extend(w);
            Ok(PdfText {
                pages,
                outline,
                warnings,
            })
        }
        Ok(Err(e)) => Err(invalid(source_name, e)),
        Err(_) => Err(invalid(
            source_name,
            "pdf-extract panicked while reading the text".into(),
        )),
    }
}
