//! Case-law guides (PDF, text) into headings, queries and pinpoint citations.
//!
//! The pipeline, one module per step:
//!
//! 1. [`text`]: pages (form feeds in extracted text, or PDF pages) → body lines without running
//!    headers and footers; the printed page numbers and the "Last update" date are kept;
//! 2. [`toc`]: the table of contents (or the PDF outline, [`pdf`]) → entries and levels
//!    (`I.` → `A.` → `1.` → `a.` → `i.`);
//! 3. [`body`]: each entry located in the body (TOC/body disagreements become warnings; no entry
//!    found at all, a table of contents without its body, is an error), the text under each
//!    heading; without any table of contents, headings are inferred from numbering;
//! 4. [`query`]: one query per heading path, as a structured path and in the release's string form;
//! 5. [`citation`]: pinpoint citations in the text under each heading;
//! 6. [`resolve`]: citations to HUDOC itemids from metadata records the caller hands in.
//!
//! Everything is pure: callers pass bytes or text and a source name used in errors.
//!
//! ```
//! use lexbench_core::ids::GuideId;
//! let text = "Guide on Article 9 of the Convention – Freedom\n\u{c}Guide on Article 9 of the Convention – Freedom\nTable of contents\nIntroduction ........ 3\nI.  Scope ........ 3\n\u{c}Guide on Article 9 of the Convention – Freedom\nIntroduction\n1.  Text (X v. Y, 2001, § 4).\nI.  Scope\n2.  More (Z v. W [GC], 2010, §§ 5-6).\n";
//! let g = lexbench_parsers::guide::parse_text("demo.txt", GuideId::new("guide_art_9_eng").unwrap(), text).unwrap();
//! assert_eq!(g.guide.sections.len(), 2);
//! assert_eq!(g.queries[1].path, ["I. Scope"]);
//! assert_eq!(g.queries[1].citations[0].paragraphs, [5, 6]);
//! ```

pub mod body;
pub mod citation;
pub mod pdf;
pub mod query;
pub mod resolve;
pub mod text;
pub mod toc;

use lexbench_core::ids::{GuideId, QueryId};
use lexbench_core::records::{Guide, GuideQuery, GuideSection, Provenance, ReadKind, Warning};
use serde::Serialize;

use crate::{Error, Result};
use text::{PageSet, squash};
use toc::{Kind, TocEntry};

/// The producer string recorded in provenance.
pub const PRODUCER: &str = concat!("lexbench-parsers ", env!("CARGO_PKG_VERSION"), " guide");

/// Where the hierarchy came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HierarchySource {
    /// The PDF outline (bookmarks).
    Outline,
    /// The printed table of contents.
    TableOfContents,
    /// Inferred from the body's numbering (no table of contents).
    Inferred,
}

/// Per-query facts beyond the core record: offsets, ibid, resolution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryDetail {
    /// The query.
    pub query: QueryId,
    /// The query's heading level and kind.
    pub level: u8,
    /// The printed page of the heading in the body, if located.
    pub page: Option<u32>,
    /// One entry per citation of the query (same order as `GuideQuery::citations`).
    pub citations: Vec<CitationDetail>,
}

/// Facts about one citation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CitationDetail {
    /// Byte offsets of the raw string in the heading's text (whitespace collapsed), see
    /// [`ParsedGuide::texts`].
    pub start: usize,
    /// End offset.
    pub end: usize,
    /// How the paragraphs were tied to the case: `direct`, `deferred`, `previous_sentence`, `ibid`.
    pub read: ReadKind,
    /// No paragraph numbers.
    pub case_level_only: bool,
    /// A pinpoint was printed but cannot be read (`§ 12345`, `§§ 1-999999999`): no paragraphs, and
    /// an `unreadable_pinpoint` warning on the guide ([`citation::pinpoint`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreadable_pinpoint: bool,
    /// How resolution went, once [`resolve::resolve_guide`] ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<resolve::Outcome>,
}

/// A parsed guide: the core records plus details.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedGuide {
    /// The guide and its heading tree.
    pub guide: Guide,
    /// Where the hierarchy came from.
    pub hierarchy_source: HierarchySource,
    /// The guide title in the release's form (`Article 2. Right to life`).
    pub release_title: String,
    /// One query per heading path (front and back matter excluded).
    pub queries: Vec<GuideQuery>,
    /// Details per query, same order.
    pub details: Vec<QueryDetail>,
    /// The text under each query's heading, whitespace collapsed (citation offsets refer to it).
    #[serde(skip)]
    pub texts: Vec<String>,
    /// The "List of cited cases" text, if the guide has one (input to resolution).
    #[serde(skip)]
    pub cited_cases_text: Option<String>,
}

/// The largest guide the readers take, in bytes (a PDF, or its extracted text): 64 MiB.
///
/// The Court's case-law guides are PDFs of a few MB at most (the largest among the fixtures is
/// 0.8 MB, the longest extracted text 0.23 MB); the cap is far above any real one and keeps a wrong
/// file from being parsed at all. Peak memory measured on 50 MB inputs is in the project's
/// ARCHITECTURE.md ("Input limits"). [`parse_text`], [`parse_pages`] (all pages together) and
/// [`parse_pdf`] refuse larger input with [`crate::Error::TooLarge`]; [`read_file`] reads no more
/// than the cap.
pub const MAX_INPUT_BYTES: usize = 64 << 20;

/// Reads a guide file (PDF or text) of at most [`MAX_INPUT_BYTES`] (a larger one is
/// [`lexbench_core::Error::TooLarge`], found before reading it).
///
/// # Errors
/// The file cannot be read, or is too large.
pub fn read_file(path: &std::path::Path) -> lexbench_core::Result<Vec<u8>> {
    lexbench_core::text::read_bytes_at_most(path, MAX_INPUT_BYTES)
}

/// Parses extracted text whose pages are separated by form feeds.
pub fn parse_text(source_name: &str, id: GuideId, text: &str) -> Result<ParsedGuide> {
    crate::error::check_len(text.len(), MAX_INPUT_BYTES, source_name, "guide")?;
    build(source_name, id, text::clean_text(text), None)
}

/// Parses pages given as (printed page number if known, text) — e.g. a CSV of page texts.
pub fn parse_pages(source_name: &str, id: GuideId, pages: &[(Option<u32>, &str)]) -> Result<ParsedGuide> {
    let size = pages.iter().map(|(_, t)| t.len()).sum();
    crate::error::check_len(size, MAX_INPUT_BYTES, source_name, "guide")?;
    build(source_name, id, text::clean_pages(pages), None)
}

/// Parses a guide PDF: pages through pdf-extract, hierarchy from the outline when there is one.
pub fn parse_pdf(source_name: &str, id: GuideId, bytes: &[u8]) -> Result<ParsedGuide> {
    crate::error::check_len(bytes.len(), MAX_INPUT_BYTES, source_name, "guide")?;
    let doc = pdf::read(source_name, bytes)?;
    let pages: Vec<(Option<u32>, &str)> = doc.pages.iter().map(|p| (None, p.as_str())).collect();
    let mut parsed = build(source_name, id, text::clean_pages(&pages), doc.outline.as_deref())?;
    parsed.guide.warnings.extend(doc.warnings);
    Ok(parsed)
}

/// Is this front or back matter, which gets no query?
fn no_query(title: &str) -> bool {
    let t = title.to_ascii_lowercase();
    t.starts_with("note to readers")
        || t.starts_with("list of cited cases")
        || t.starts_with("table of contents")
}

fn build(
    source_name: &str,
    id: GuideId,
    set: PageSet,
    outline: Option<&[pdf::OutlineEntry]>,
) -> Result<ParsedGuide> {
    let invalid = |message: String| Error::Invalid {
        source_name: source_name.to_owned(),
        format: "guide",
        message,
    };
    if set
        .pages
        .iter()
        .all(|p| p.lines.iter().all(|l| l.trim().is_empty()))
    {
        return Err(invalid("no text in any page".into()));
    }
    let mut warnings: Vec<Warning> = Vec::new();
    let toc = toc::parse_toc(&set.pages);
    let body_from = toc.as_ref().map_or(0, |(_, end)| *end);
    let lines = body::lines_of(&set.pages[body_from..]);
    // Outline levels per heading (when the outline gave the heading), for a consistency check.
    let mut outline_levels: Vec<Option<u8>> = Vec::new();
    let (source, headings) = match (outline, &toc) {
        (Some(o), _) if !o.is_empty() => {
            let entries = merge_outline(o, toc.as_ref().map(|(e, _)| e.as_slice()), &mut warnings);
            outline_levels = entries.iter().map(|(_, l)| *l).collect();
            let entries: Vec<TocEntry> = entries.into_iter().map(|(e, _)| e).collect();
            (
                HierarchySource::Outline,
                body::locate(&lines, &entries, &mut warnings),
            )
        }
        (_, Some((entries, _))) => (
            HierarchySource::TableOfContents,
            body::locate(&lines, entries, &mut warnings),
        ),
        _ => {
            warnings.push(Warning {
                code: "no_table_of_contents".into(),
                message: "no outline and no table of contents: headings inferred from numbering".into(),
                at: None,
            });
            (HierarchySource::Inferred, body::infer(&lines))
        }
    };
    if headings.is_empty() {
        return Err(invalid(
            "no headings found (no outline, no table of contents, no numbered headings)".into(),
        ));
    }
    // Not one entry in the body: the text under every heading would be empty, so every query would
    // come out without citations (the front pages alone, a body lost in extraction).
    if source != HierarchySource::Inferred && headings.iter().all(|h| h.span.is_none()) {
        return Err(invalid(format!(
            "none of the {} {} entries is found in the body (a table of contents without its body?)",
            headings.len(),
            if source == HierarchySource::Outline {
                "outline"
            } else {
                "table-of-contents"
            }
        )));
    }
    let items: Vec<(Option<&str>, &str)> = headings
        .iter()
        .map(|h| (h.number.as_deref(), h.title.as_str()))
        .collect();
    let levels = toc::assign_levels(&items);
    for (h, l) in headings.iter().zip(&levels) {
        if h.number.is_none() && !toc::is_matter(&h.title) {
            warnings.push(Warning {
                code: "unnumbered_heading".into(),
                message: format!("“{}” has no number; it is placed at level {}", h.title, l.level),
                at: h.body_page.or(h.toc_page).map(|p| format!("page {p}")),
            });
        }
    }
    // Outline levels that disagree with numbering: one warning, with the first example (a bookmark
    // tree can nest every heading one level too deep, e.g. under "Introduction"); numbering wins.
    let mismatched: Vec<(&body::Heading, u8, u8)> = headings
        .iter()
        .zip(&levels)
        .zip(&outline_levels)
        .filter_map(|((h, l), ol)| ol.filter(|ol| *ol != l.level).map(|ol| (h, ol, l.level)))
        .collect();
    if let Some((h, ol, nl)) = mismatched.first() {
        warnings.push(Warning {
            code: "outline_level_mismatch".into(),
            message: format!(
                "{} of {} outline entries are at another level than their numbering gives (first: “{}” at level {ol} in the outline, {nl} by numbering); the numbering is used",
                mismatched.len(),
                outline_levels.iter().flatten().count(),
                h.title
            ),
            at: None,
        });
    }
    let texts = body::texts(&lines, &headings);
    let title = set
        .header
        .clone()
        .or_else(|| {
            set.pages
                .first()
                .and_then(|p| p.lines.iter().find(|l| !l.trim().is_empty()).map(|l| squash(l)))
        })
        .unwrap_or_default();
    let release_title = query::release_title(&title);

    // Tree and paths.
    let mut roots: Vec<GuideSection> = Vec::new();
    let mut path: Vec<query::PathItem> = Vec::new();
    let mut queries = Vec::new();
    let mut details = Vec::new();
    let mut query_texts = Vec::new();
    let mut cited_cases_text = None;
    for (k, (h, l)) in headings.iter().zip(&levels).enumerate() {
        let section = GuideSection {
            number: h.number.clone(),
            title: h.title.clone(),
            level: l.level,
            page: h.toc_page.or(h.body_page),
            children: Vec::new(),
        };
        insert(&mut roots, section, l.level);
        path.truncate(usize::from(l.level) - 1);
        path.push(query::PathItem {
            kind: if h.number.is_some() { l.kind } else { Kind::None },
            number: h.number.clone(),
            title: h.title.clone(),
        });
        let text = squash(&texts[k].0);
        if h.title.to_ascii_lowercase().starts_with("list of cited cases") {
            cited_cases_text = Some(texts[k].0.clone());
        }
        if no_query(&h.title) {
            continue;
        }
        let qid = QueryId::new(format!("{}-{:03}", id, k + 1)).map_err(|e| invalid(e.to_string()))?;
        let found = citation::extract(&text);
        for f in found.iter().filter(|f| f.unreadable_pinpoint) {
            warnings.push(Warning {
                code: "unreadable_pinpoint".into(),
                message: format!(
                    "“{}” under “{}”: the pinpoint has a paragraph number outside 1–{} or a range that does not go up or spans more than {} paragraphs; the citation is kept without paragraphs",
                    f.citation.raw,
                    h.title,
                    citation::MAX_PARAGRAPH,
                    citation::MAX_RANGE
                ),
                at: h.body_page.map(|p| format!("page {p}")),
            });
        }
        queries.push(GuideQuery {
            id: qid.clone(),
            guide: id.clone(),
            path: path.iter().map(query::PathItem::display).collect(),
            text: query::release_string(&release_title, &path),
            citations: found.iter().map(|f| f.citation.clone()).collect(),
        });
        details.push(QueryDetail {
            query: qid,
            level: l.level,
            page: h.body_page,
            citations: found
                .iter()
                .map(|f| CitationDetail {
                    start: f.start,
                    end: f.end,
                    read: f.read(),
                    case_level_only: f.case_level_only,
                    unreadable_pinpoint: f.unreadable_pinpoint,
                    resolution: None,
                })
                .collect(),
        });
        query_texts.push(text);
    }
    Ok(ParsedGuide {
        guide: Guide {
            id,
            title,
            updated: set.updated,
            sections: roots,
            warnings,
            provenance: Provenance {
                producer: PRODUCER.to_owned(),
                ..Provenance::default()
            },
        },
        hierarchy_source: source,
        release_title,
        queries,
        details,
        texts: query_texts,
        cited_cases_text,
    })
}

/// The outline's entries, with printed table-of-contents entries the outline lacks put back in place
/// (PDF bookmarks often leave out front matter such as "Note to readers"); each such entry is warned
/// about. Returns entries with their outline level (`None` for entries from the printed contents).
fn merge_outline(
    outline: &[pdf::OutlineEntry],
    printed: Option<&[TocEntry]>,
    warnings: &mut Vec<Warning>,
) -> Vec<(TocEntry, Option<u8>)> {
    let from_outline: Vec<(TocEntry, Option<u8>)> = outline
        .iter()
        .map(|e| {
            let (number, title) = toc::split_number(&e.title);
            (
                TocEntry {
                    number,
                    title,
                    page: e.page,
                },
                Some(e.level),
            )
        })
        .collect();
    let Some(printed) = printed else {
        return from_outline;
    };
    let key = |e: &TocEntry| text::compact(&e.title);
    let in_outline: std::collections::BTreeSet<String> = from_outline.iter().map(|(e, _)| key(e)).collect();
    let mut out = Vec::with_capacity(from_outline.len() + 2);
    let mut o = from_outline.into_iter();
    for p in printed {
        if in_outline.contains(&key(p)) {
            // Outline entries up to and including this one.
            for (e, l) in o.by_ref() {
                let same = key(&e) == key(p);
                out.push((e, l));
                if same {
                    break;
                }
            }
        } else {
            warnings.push(Warning {
                code: "missing_from_outline".into(),
                message: format!(
                    "“{}” is in the printed table of contents but not in the PDF outline",
                    p.title
                ),
                at: p.page.map(|n| format!("page {n}")),
            });
            out.push((p.clone(), None));
        }
    }
    out.extend(o);
    out
}

/// Appends `s` as the last node at depth `level` (1-based) of the tree.
fn insert(roots: &mut Vec<GuideSection>, s: GuideSection, level: u8) {
    let mut list = roots;
    for _ in 1..level {
        if list.is_empty() {
            break;
        }
        let last = list.len() - 1;
        list = &mut list[last].children;
    }
    list.push(s);
}
