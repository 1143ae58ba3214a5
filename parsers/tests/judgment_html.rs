//! The HTML judgment parser, on HTML made from the real DOCX fixtures and on small hand-made pages.
//!
//! There are no HUDOC HTML fixtures, so [`to_hudoc_html`] converts a DOCX fixture's blocks into HTML
//! shaped like HUDOC's conversion endpoint (DATA.md §1): one `<p>` per Word paragraph with a class
//! name that is a hash of the Word style (stable within the document, meaningless across documents),
//! no style names and no `SEQ` fields; the number `N.` in its own `<span>` for some paragraphs and
//! alone in its own `<p>` for others; long paragraphs split over two `<p>` at a sentence end;
//! footnote reference marks (`<sup><a href="#_ftn1">[1]</a></sup>`) in the text and footnote bodies
//! (`<div id="ftn1">`) at the end; tabs as `&#9;`, no-break spaces as `&nbsp;`.
//!
//! Properties checked:
//! - one YAML snapshot per fixture of the HTML parse (`insta::glob!`), same structure as the DOCX
//!   snapshots;
//! - on every fixture the HTML and DOCX parsers agree on the main judgment: the same paragraph numbers,
//!   the same section for each, the same text (white space folded), and the same number of opinions;
//!   numbered opinions agree on their numbers too (unnumbered opinions may differ: without styles,
//!   unmarked opinion headings and quotations read as text — reported, not asserted);
//! - hand-made pages: a number alone in its `<p>`, a paragraph split over `<p>`s, footnotes dropped,
//!   a quoted run that only its class tells apart, malformed markup parsed without a panic.
#![allow(missing_docs, clippy::unwrap_used)]

mod judgment_common;

use judgment_common::{docx_fixtures, fnv, name, parse_fixture, summary};
use lexbench_parsers::judgment::{docx, parse_html, segment::normalize};

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\u{a0}' => out.push_str("&nbsp;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

/// HUDOC-shaped HTML from a DOCX's blocks (see the module documentation).
fn to_hudoc_html(bytes: &[u8]) -> String {
    let blocks = docx::blocks(bytes, "fixture").unwrap();
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>.s0{}</style></head><body><div class=\"WordSection1\">\n",
    );
    let mut footnotes = Vec::new();
    let num_re = regex::Regex::new(r"^(\d{1,4}\.)([\u{a0}\s]+)(.*)$").unwrap();
    for (k, b) in blocks.iter().enumerate() {
        let class = format!(
            "s{}",
            &fnv(b.style.as_deref().unwrap_or("Normal"))[..8].to_uppercase()
        );
        let text = b.text.as_str();
        let numbered = num_re.captures(text).filter(|_| b.seq);
        match numbered {
            // Every 7th numbered paragraph: the number alone in its own <p>.
            Some(c) if k % 7 == 0 => {
                html.push_str(&format!("<p class=\"{class}\">{}</p>\n", escape(&c[1])));
                html.push_str(&format!("<p class=\"{class}\">{}</p>\n", escape(&c[3])));
            }
            // Otherwise the number in its own span, the text after, a long text split at a sentence
            // end over two <p>, and every 5th paragraph a footnote mark after its first sentence.
            Some(c) => {
                let rest = &c[3];
                let mut body = escape(rest);
                if k % 5 == 0
                    && let Some(dot) = body.find(". ")
                {
                    footnotes.push(format!("Footnote to block {k}."));
                    let n = footnotes.len();
                    body.insert_str(
                        dot + 1,
                        &format!("<sup><a href=\"#_ftn{n}\" name=\"_ftnref{n}\">[{n}]</a></sup>"),
                    );
                }
                let split = (body.len() > 600)
                    .then(|| {
                        let mid = (body.len() / 2..).find(|&i| body.is_char_boundary(i))?;
                        body[mid..].find(". ").map(|i| mid + i + 1)
                    })
                    .flatten()
                    .filter(|&i| !body[..i].contains("<sup>") || body[..i].contains("</sup>"));
                let (first, second) = match split {
                    Some(i) => (&body[..i], Some(body[i..].trim_start())),
                    None => (body.as_str(), None),
                };
                html.push_str(&format!(
                    "<p class=\"{class}\"><span class=\"sB8D990E2\">{}</span><span>{}{}</span></p>\n",
                    escape(&c[1]),
                    escape(&c[2]),
                    first
                ));
                if let Some(s) = second {
                    html.push_str(&format!("<p class=\"{class}\">{s}</p>\n"));
                }
            }
            None => {
                let tag = if b.in_table { "td" } else { "p" };
                if tag == "td" {
                    html.push_str(&format!(
                        "<table><tr><td><p class=\"{class}\">{}</p></td></tr></table>\n",
                        escape(text)
                    ));
                } else {
                    html.push_str(&format!("<p class=\"{class}\">{}</p>\n", escape(text)));
                }
            }
        }
    }
    html.push_str("</div>\n<div style=\"mso-element:footnote-list\"><hr>\n");
    for (i, f) in footnotes.iter().enumerate() {
        let n = i + 1;
        html.push_str(&format!(
            "<div id=\"ftn{n}\"><p class=\"sFOOT\"><a href=\"#_ftnref{n}\" name=\"_ftn{n}\">[{n}]</a> {f}</p></div>\n"
        ));
    }
    html.push_str("</div></body></html>\n");
    html
}

fn html_of(file: &str) -> String {
    let p = lexbench_core::testing::fixture(&format!("hudoc/docx/{file}"));
    to_hudoc_html(&std::fs::read(p).unwrap())
}

fn parse_html_of(file: &str) -> lexbench_core::Judgment {
    let html = html_of(file);
    parse_html(
        html.as_bytes(),
        file,
        lexbench_parsers::judgment::item_from_file_name(file),
    )
    .unwrap()
}

#[test]
fn snapshot_html_made_from_every_docx_fixture() {
    insta::glob!("../../../shared/fixtures/hudoc/docx", "*.docx", |path| {
        let j = parse_html_of(&name(path));
        insta::assert_yaml_snapshot!(summary(&j));
    });
}

#[test]
fn html_and_docx_agree_on_the_main_judgment() {
    let mut report = Vec::new();
    for path in docx_fixtures() {
        let file = name(&path);
        let d = parse_fixture(&file);
        let h = parse_html_of(&file);
        assert_eq!(h.title, d.title, "{file}");
        assert_eq!(h.date, d.date, "{file}");
        let dn: Vec<(u32, _)> = d.paragraphs.iter().map(|p| (p.num, p.section)).collect();
        let hn: Vec<(u32, _)> = h.paragraphs.iter().map(|p| (p.num, p.section)).collect();
        assert_eq!(hn, dn, "{file}: numbers and sections");
        let differ: Vec<String> = d
            .paragraphs
            .iter()
            .zip(&h.paragraphs)
            .filter(|(a, b)| normalize(&a.text) != normalize(&b.text))
            .map(|(a, b)| {
                format!(
                    "§ {}:\n  DOCX {}\n  HTML {}",
                    a.num,
                    normalize(&a.text),
                    normalize(&b.text)
                )
            })
            .collect();
        assert!(differ.is_empty(), "{file}: texts differ\n{}", differ.join("\n"));
        assert_eq!(h.opinions.len(), d.opinions.len(), "{file}: opinions");
        for (k, (a, b)) in d.opinions.iter().zip(&h.opinions).enumerate() {
            assert_eq!(a.title, b.title);
            if a.paragraphs.len() != b.paragraphs.len() {
                report.push(format!(
                    "{file} opinion {}: DOCX {} paragraphs, HTML {}",
                    k + 1,
                    a.paragraphs.len(),
                    b.paragraphs.len()
                ));
            }
        }
        // Numbered opinions (typed numbers or SEQ fields) keep their numbers in HTML.
        for (a, b) in d.opinions.iter().zip(&h.opinions) {
            let numbered = !h.warnings.iter().any(|w| w.code == "opinion_numbering_mixed")
                && !d.warnings.iter().any(|w| w.code == "opinion_numbering_mixed");
            if numbered && a.paragraphs.len() == b.paragraphs.len() {
                let an: Vec<u32> = a.paragraphs.iter().map(|p| p.num).collect();
                let bn: Vec<u32> = b.paragraphs.iter().map(|p| p.num).collect();
                assert_eq!(an, bn, "{file}: {}", a.title);
            }
        }
    }
    eprintln!(
        "opinion differences (unnumbered opinions, no styles in HTML):\n{}",
        report.join("\n")
    );
}

fn page(body: &str) -> String {
    format!("<html><body>{body}</body></html>")
}

#[test]
fn number_alone_split_paragraphs_and_footnotes() {
    let html = page(concat!(
        "<p class=\"a\">CASE OF X v. Y</p><p class=\"a\">PROCEDURE</p>",
        "<p class=\"p\">1.</p><p class=\"p\">The case originated in an application.</p>",
        "<p class=\"p\"><span>2.</span><span>&nbsp;&nbsp;The applicant complained<sup><a href=\"#_ftn1\">[1]</a></sup> of a breach.</span></p>",
        "<p class=\"p\">It continued on a second line of the same paragraph.</p>",
        "<p class=\"a\">THE LAW</p>",
        "<p class=\"p\">3.&nbsp;&nbsp;The Court holds as follows:</p>",
        "<p class=\"p\">(a)&nbsp;&nbsp;first;</p>",
        "<p class=\"a\">FOR THESE REASONS, THE COURT</p><p class=\"l\">1.&nbsp;&nbsp;Holds that there has been a violation.</p>",
        "<div id=\"ftn1\"><p>[1] A footnote that must not become text.</p></div>",
    ));
    let j = parse_html(page(&html).as_bytes(), "t.html", None).unwrap();
    let texts: Vec<(u32, &str)> = j.paragraphs.iter().map(|p| (p.num, p.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            (1, "The case originated in an application."),
            (
                2,
                "The applicant complained of a breach.\nIt continued on a second line of the same paragraph."
            ),
            (3, "The Court holds as follows:\n(a) first;"),
        ]
    );
    use lexbench_core::Section::*;
    let sections: Vec<_> = j.paragraphs.iter().map(|p| p.section).collect();
    assert_eq!(sections, [Procedure, Procedure, Law]);
    assert_eq!(j.title, "CASE OF X v. Y");
}

#[test]
fn a_quoted_run_is_told_apart_by_its_class() {
    // Paragraph 5 quotes paragraphs 6-8 of another judgment with no quotation marks and no colon;
    // the real 6-8 follow. Both chains have eight members; only the class (shared by the judgment's
    // own paragraphs) separates them.
    let mut body = String::from("<p class=\"t\">PROCEDURE</p>");
    for n in 1..=5 {
        body.push_str(&format!(
            "<p class=\"para\">{n}.&nbsp;&nbsp;Paragraph {n} of the judgment.</p>"
        ));
    }
    for n in 6..=8 {
        body.push_str(&format!(
            "<p class=\"quote\">{n}.&nbsp;&nbsp;Quoted paragraph {n} of another judgment.</p>"
        ));
    }
    for n in 6..=9 {
        body.push_str(&format!(
            "<p class=\"para\">{n}.&nbsp;&nbsp;Paragraph {n} of the judgment.</p>"
        ));
    }
    let j = parse_html(page(&body).as_bytes(), "q.html", None).unwrap();
    let nums: Vec<u32> = j.paragraphs.iter().map(|p| p.num).collect();
    assert_eq!(nums, (1..=9).collect::<Vec<_>>());
    assert!(j.paragraphs[4].text.contains("\n6. Quoted paragraph 6"));
    assert!(j.paragraphs[5].text.starts_with("Paragraph 6 of the judgment"));
    assert!(
        j.warnings
            .iter()
            .any(|w| w.code == "suspected_quoted_numbering" && w.at.as_deref() == Some("§ 5"))
    );
}

#[test]
fn malformed_html_is_parsed_or_refused_without_panic() {
    for input in [
        "<p>1. unclosed <b>bold <p>2. next",
        "<<<>>>",
        "<html><body></body></html>",
        "<p></p><p>   </p>",
        "\u{feff}<p>PROCEDURE</p><p>1.\u{a0}Text</p>",
    ] {
        let _ = parse_html(input.as_bytes(), "bad.html", None);
    }
    let err = parse_html(b"<html><body><p> </p></body></html>", "empty.html", None).unwrap_err();
    assert!(err.to_string().contains("empty.html"), "{err}");
    assert!(err.to_string().contains("empty body"), "{err}");
    let err = parse_html(b"just text, no markup", "plain.txt", None).unwrap_err();
    assert!(err.to_string().contains("plain.txt: not a valid HTML"), "{err}");
    let j = parse_html(&[0xff, b'<', b'p', b'>', b'x'], "latin.html", None).unwrap();
    assert!(j.warnings.iter().any(|w| w.code == "invalid_utf8"));
}
