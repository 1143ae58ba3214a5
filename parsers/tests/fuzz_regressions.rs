//! Inputs found by the fuzz targets in `parsers/fuzz` (`scripts/fuzz`), kept as regression tests,
//! each rebuilt here by code as the smallest PDF with the same structure.
//!
//! Properties checked:
//! - `guide_pdf` (2026-11-25, 30-minute run, `oom-7e98dad6…`, 3.4 KB): an outline item whose `/Next`
//!   is itself made lopdf's outline reader loop until memory ran out (3.7 GB, then `parse guide`
//!   aborted). An outline or named-destination tree that reaches a node twice (a `/Next` or `/First`
//!   cycle, a `/Kids` array naming its own node) is now ignored with an `outline_error` warning
//!   naming the object, and the guide is read from its text; a well-formed outline of the same file
//!   still gives its bookmarks.
#![allow(missing_docs, clippy::unwrap_used)]

use lexbench_parsers::guide::pdf::outline;

/// A one-page PDF whose catalog holds `catalog_extra` and with `objects` (number, body) added, its
/// cross-reference table computed.
fn pdf(catalog_extra: &str, objects: &[(u32, String)]) -> Vec<u8> {
    let content = "BT /F1 12 Tf 72 720 Td (Introduction) Tj ET";
    let mut all: Vec<(u32, String)> = vec![
        (1, format!("<< /Type /Catalog /Pages 2 0 R {catalog_extra} >>")),
        (2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into()),
        (
            3,
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
                .into(),
        ),
        (4, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into()),
        (
            5,
            format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        ),
    ];
    all.extend(objects.iter().cloned());
    all.sort_by_key(|(n, _)| *n);
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (n, body) in &all {
        offsets.push((*n, out.len()));
        out.extend_from_slice(format!("{n} 0 obj\n{body}\nendobj\n").as_bytes());
    }
    let size = all.last().unwrap().0 + 1;
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for n in 1..size {
        match offsets.iter().find(|(m, _)| *m == n) {
            Some((_, at)) => out.extend_from_slice(format!("{at:010} 00000 n \n").as_bytes()),
            None => out.extend_from_slice(b"0000000000 65535 f \n"),
        }
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    out
}

/// Outline items 10 (and 11) under the outline dictionary 9; `next10` is item 10's `/Next`.
fn with_outline(next10: &str, first11: &str) -> Vec<u8> {
    pdf(
        "/Outlines 9 0 R",
        &[
            (
                9,
                "<< /Type /Outlines /First 10 0 R /Last 11 0 R /Count 2 >>".into(),
            ),
            (
                10,
                format!("<< /Title (Introduction) /Parent 9 0 R /Dest [3 0 R /XYZ 0 842 0] {next10} >>"),
            ),
            (
                11,
                format!(
                    "<< /Title (I. Scope) /Parent 9 0 R /Prev 10 0 R /Dest [3 0 R /XYZ 0 842 0] {first11} >>"
                ),
            ),
        ],
    )
}

#[test]
fn an_outline_that_is_not_a_tree_is_ignored_with_a_warning() {
    // The well-formed file first: its two bookmarks are read (the check refuses no real outline).
    let (entries, warnings) = outline("ok.pdf", &with_outline("/Next 11 0 R", "")).unwrap();
    let titles: Vec<String> = entries.unwrap().into_iter().map(|e| e.title).collect();
    assert_eq!(titles, ["Introduction", "I. Scope"]);
    assert!(warnings.is_empty(), "{warnings:?}");

    for (name, bytes, object) in [
        // The fuzz input's structure: item 10's /Next is item 10.
        ("next-loop.pdf", with_outline("/Next 10 0 R", ""), "object 10 0"),
        // A child pointing back at its parent.
        (
            "first-loop.pdf",
            with_outline("/Next 11 0 R", "/First 10 0 R"),
            "object 10 0",
        ),
        // A named-destination tree whose node lists itself twice.
        (
            "kids-loop.pdf",
            pdf(
                "/Names 20 0 R",
                &[
                    (20, "<< /Dests 21 0 R >>".into()),
                    (21, "<< /Kids [21 0 R 21 0 R] >>".into()),
                ],
            ),
            "object 21 0",
        ),
    ] {
        let (entries, warnings) = outline(name, &bytes).unwrap();
        assert!(entries.is_none(), "{name}");
        assert_eq!(warnings.len(), 1, "{name}: {warnings:?}");
        assert_eq!(warnings[0].code, "outline_error");
        assert!(
            warnings[0].message.contains(&format!("reaches {object} twice")),
            "{name}: {}",
            warnings[0].message
        );
    }
}
