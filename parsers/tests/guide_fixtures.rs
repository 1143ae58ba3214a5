//! Snapshot tests of the guide parser over the real guide fixtures.
//!
//! Properties checked:
//! - the Art 1 guide's table of contents gives 40 entries (Introduction and List of cited cases
//!   included) nesting down to `ii.`, every one of them located in the body;
//! - citation offsets point at their raw strings in the text under the heading;
//! - the Terrorism guide's contents/body disagreements are reported as warnings (and the body's
//!   numbering is used);
//! - the Art 2 partial pages (no table of contents) give their headings from numbering alone;
//! - the real Ukrainian PDF is read (no panic) and its table of contents gives 18 headings;
//! - both rendered PDFs give the same heading hierarchy as their text files (the Art 1 one from its
//!   outline, the Terrorism one from its printed table of contents);
//! - structure only is snapshotted (headings, counts, short query strings), never whole texts.

use std::collections::BTreeMap;

use lexbench_core::ids::GuideId;
use lexbench_core::records::GuideSection;
use lexbench_core::testing::fixture;
use lexbench_parsers::guide::{self, ParsedGuide};
use serde_json::{Value, json};

mod guide_common;
use guide_common::art2_pages;

fn outline(sections: &[GuideSection], out: &mut Vec<String>) {
    for s in sections {
        let num = s.number.as_deref().map(|n| format!("{n}. ")).unwrap_or_default();
        let page = s.page.map(|p| format!(" (p. {p})")).unwrap_or_default();
        out.push(format!(
            "{}{num}{}{page}",
            "  ".repeat(usize::from(s.level) - 1),
            s.title
        ));
        outline(&s.children, out);
    }
}

fn count(sections: &[GuideSection]) -> usize {
    sections.iter().map(|s| 1 + count(&s.children)).sum()
}

fn max_depth(sections: &[GuideSection]) -> u8 {
    sections
        .iter()
        .map(|s| s.level.max(max_depth(&s.children)))
        .max()
        .unwrap_or(0)
}

/// The structural summary that is snapshotted.
fn summary(g: &ParsedGuide) -> Value {
    let mut headings = Vec::new();
    outline(&g.guide.sections, &mut headings);
    let per_query: BTreeMap<String, usize> = g
        .queries
        .iter()
        .map(|q| (q.id.to_string(), q.citations.len()))
        .collect();
    let sample: Vec<&str> = g.queries.iter().step_by(5).map(|q| q.text.as_str()).collect();
    json!({
        "title": g.guide.title,
        "release_title": g.release_title,
        "updated": g.guide.updated,
        "hierarchy_source": g.hierarchy_source,
        "entries": count(&g.guide.sections),
        "max_depth": max_depth(&g.guide.sections),
        "headings": headings,
        "warnings": g.guide.warnings.iter().map(|w| format!("{}: {}", w.code, w.message)).collect::<Vec<_>>(),
        "queries": g.queries.len(),
        "citations": g.queries.iter().map(|q| q.citations.len()).sum::<usize>(),
        "case_level_only": g.details.iter().flat_map(|d| &d.citations).filter(|c| c.case_level_only).count(),
        "read": lexbench_core::records::ReadKind::ALL
            .iter()
            .map(|k| {
                let n = g.details.iter().flat_map(|d| &d.citations).filter(|c| c.read == *k).count();
                (k.as_str(), n)
            })
            .collect::<BTreeMap<_, _>>(),
        "citations_per_query": per_query,
        "sample_query_strings": sample,
    })
}

fn text_guide(name: &str) -> ParsedGuide {
    let path = fixture(&format!("guides/text/{name}.txt"));
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    guide::parse_text(name, GuideId::new(name).expect("id"), &text).expect("parses")
}

fn pdf_guide(name: &str) -> ParsedGuide {
    let path = fixture(&format!("guides/pdf/{name}.rendered.pdf"));
    let bytes = std::fs::read(&path).expect("fixture readable");
    guide::parse_pdf(name, GuideId::new(name).expect("id"), &bytes).expect("parses")
}

#[test]
fn art_1_table_of_contents() {
    let g = text_guide("guide_art_1_eng");
    assert_eq!(count(&g.guide.sections), 40);
    assert_eq!(max_depth(&g.guide.sections), 5);
    assert!(g.guide.warnings.is_empty(), "{:#?}", g.guide.warnings);
    let titles: Vec<&str> = g.guide.sections.iter().map(|s| s.title.as_str()).collect();
    assert!(titles.contains(&"Introduction") && titles.contains(&"List of cited cases"));
    // Offsets point at the raw string in the heading's text; case-level means no paragraphs.
    for ((q, d), text) in g.queries.iter().zip(&g.details).zip(&g.texts) {
        for (c, cd) in q.citations.iter().zip(&d.citations) {
            assert_eq!(&text[cd.start..cd.end], c.raw, "{}", q.id);
            assert_eq!(cd.case_level_only, c.paragraphs.is_empty());
        }
    }
    insta::assert_yaml_snapshot!(summary(&g));
}

#[test]
fn terrorism_disagreements_are_warnings() {
    let g = text_guide("guide_terrorism_eng");
    let codes: Vec<&str> = g.guide.warnings.iter().map(|w| w.code.as_str()).collect();
    assert!(codes.contains(&"unnumbered_in_toc"), "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == "number_mismatch").count(), 4);
    insta::assert_yaml_snapshot!(summary(&g));
}

#[test]
fn art_2_partial_pages() {
    let g = art2_pages();
    assert_eq!(g.hierarchy_source, guide::HierarchySource::Inferred);
    insta::assert_yaml_snapshot!(summary(&g));
}

#[test]
fn rendered_pdfs_match_their_text() {
    for (name, source) in [
        ("guide_art_1_eng", guide::HierarchySource::Outline),
        ("guide_terrorism_eng", guide::HierarchySource::TableOfContents),
    ] {
        let from_text = text_guide(name);
        let from_pdf = pdf_guide(name);
        assert_eq!(from_pdf.hierarchy_source, source, "{name}");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        outline(&from_text.guide.sections, &mut a);
        outline(&from_pdf.guide.sections, &mut b);
        assert_eq!(a, b, "{name}: PDF and text hierarchies differ");
        let qa: Vec<&str> = from_text.queries.iter().map(|q| q.text.as_str()).collect();
        let qb: Vec<&str> = from_pdf.queries.iter().map(|q| q.text.as_str()).collect();
        assert_eq!(qa, qb, "{name}: query strings differ");
        let ca: usize = from_text.queries.iter().map(|q| q.citations.len()).sum();
        let cb: usize = from_pdf.queries.iter().map(|q| q.citations.len()).sum();
        assert_eq!(ca, cb, "{name}: citation counts differ");
        // The PDF adds its own findings to the text's warnings (the rendered Art 1 outline leaves out
        // "Note to readers" and nests I.–III. under "Introduction").
        let extra: Vec<&str> = from_pdf
            .guide
            .warnings
            .iter()
            .filter(|w| !from_text.guide.warnings.contains(w))
            .map(|w| w.code.as_str())
            .collect();
        let expected: &[&str] = if source == guide::HierarchySource::Outline {
            &["missing_from_outline", "outline_level_mismatch"]
        } else {
            &[]
        };
        assert_eq!(extra, expected, "{name}");
    }
}

#[test]
fn bad_input_is_an_error_naming_the_file() {
    let id = GuideId::new("guide_x_eng").expect("id");
    let e = guide::parse_pdf("broken.pdf", id.clone(), b"%PDF-1.7 garbage").expect_err("not a PDF");
    assert!(e.to_string().contains("broken.pdf"), "{e}");
    let e = guide::parse_pdf("notpdf.pdf", id.clone(), b"hello").expect_err("not a PDF");
    assert!(e.to_string().contains("notpdf.pdf"), "{e}");
    let e = guide::parse_text("empty.txt", id.clone(), "\u{c}\u{c}").expect_err("empty");
    assert!(e.to_string().contains("empty.txt"), "{e}");
    let e =
        guide::parse_text("prose.txt", id, "Just some prose.\nNo headings at all.").expect_err("no headings");
    assert!(e.to_string().contains("prose.txt"), "{e}");
}

/// A real (Ukrainian, 2018, untagged-outline) guide PDF: pdf-extract reads it without panicking, the
/// table of contents titled "Зміст" gives the hierarchy, and no English citation is found in it.
#[test]
fn real_ukrainian_pdf() {
    let path = fixture("guides/pdf/guide_art_1_ukr_2018.pdf");
    let bytes = std::fs::read(&path).expect("fixture readable");
    let g = guide::parse_pdf(
        "guide_art_1_ukr_2018.pdf",
        GuideId::new("guide_art_1_ukr").expect("id"),
        &bytes,
    )
    .expect("parses");
    assert_eq!(g.hierarchy_source, guide::HierarchySource::TableOfContents);
    assert_eq!(count(&g.guide.sections), 18);
    assert_eq!(max_depth(&g.guide.sections), 3);
    assert!(
        g.guide.warnings.iter().all(|w| w.code == "unnumbered_heading"),
        "{:#?}",
        g.guide.warnings
    );
    assert_eq!(g.queries.iter().map(|q| q.citations.len()).sum::<usize>(), 0);
}
