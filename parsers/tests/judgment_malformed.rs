//! Malformed input to the judgment parsers: every failure is an error naming the file, never a panic.
//!
//! Properties checked:
//! - not a zip, a damaged zip, a zip without `word/document.xml`, broken XML, non-UTF-8 XML and an
//!   empty body each give [`lexbench_parsers::Error::Invalid`] whose message names the file and the
//!   problem;
//! - a real `word/document.xml` cut short (in text, in a tag, between paragraphs, before the root's
//!   end tag) is an error, never a shorter judgment;
//! - [`parse`] tells DOCX, HTML and plain text apart by content (`PK`, markup), whatever the file is
//!   called, parses a text judgment, refuses text without a numbered paragraph as plain text, and
//!   refuses what is none of them (a PDF, random bytes — quickly —, legacy Word, RTF, gzip, UTF-16,
//!   an empty file) with an error naming the file and what it looks like;
//! - a mutation smoke test (a stand-in for the fuzz target, deterministic so it runs in CI): for every
//!   DOCX fixture, `word/document.xml` truncated, with byte ranges deleted, duplicated or overwritten,
//!   and the zip bytes themselves damaged, never make either parser panic; the same for HTML;
//! - input one byte over [`MAX_INPUT_BYTES`] is [`lexbench_parsers::Error::TooLarge`] in every
//!   judgment parser and in the guide parsers (their own cap), naming the source and the limit; at the
//!   cap it is parsed (and refused for what it is, not for its size).
#![allow(missing_docs, clippy::unwrap_used)]

mod judgment_common;

use std::io::{Read, Write};

use judgment_common::{docx_fixtures, name};
use lexbench_parsers::judgment::{MAX_INPUT_BYTES, html, parse, parse_docx, parse_html, parse_text};

fn zip_with(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in files {
        w.start_file(*name, opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

fn doc(body: &str) -> Vec<u8> {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document {W}><w:body>{body}</w:body></w:document>"#
    );
    zip_with(&[("word/document.xml", xml.as_bytes())])
}

fn err(bytes: &[u8], file: &str) -> String {
    parse_docx(bytes, file, None).unwrap_err().to_string()
}

#[test]
fn malformed_docx_gives_errors_naming_the_file() {
    let e = err(b"hello, not a zip", "a.docx");
    assert_eq!(e, "a.docx: not a valid DOCX: not a zip archive (no PK signature)");
    let e = err(b"PK\x03\x04 but then nothing", "b.docx");
    assert!(
        e.starts_with("b.docx: not a valid DOCX: unreadable zip archive"),
        "{e}"
    );
    let e = err(&zip_with(&[("word/other.xml", b"<x/>")]), "c.docx");
    assert!(
        e.starts_with("c.docx: not a valid DOCX: no word/document.xml"),
        "{e}"
    );
    let e = err(&doc("<w:p><w:r><w:t>1. text</w:t></w:r></w:body>"), "d.docx");
    assert!(
        e.starts_with("d.docx: not a valid DOCX: broken XML in word/document.xml at byte"),
        "{e}"
    );
    let e = err(
        &zip_with(&[("word/document.xml", b"<w:document>\xff\xfe</w:document>")]),
        "e.docx",
    );
    assert!(
        e.starts_with("e.docx: not a valid DOCX: word/document.xml is not UTF-8"),
        "{e}"
    );
    let e = err(&doc(""), "f.docx");
    assert_eq!(
        e,
        "f.docx: not a valid DOCX: empty body: the document has no text"
    );
    let e = err(&doc("<w:p/><w:p><w:r><w:t> </w:t></w:r></w:p>"), "g.docx");
    assert!(e.contains("g.docx") && e.contains("empty body"), "{e}");
    // WordprocessingML defines no entity beyond XML's five: another one is an error, not text lost.
    let body = "<w:p><w:r><w:t>1. The &bogus; case.</w:t></w:r></w:p>";
    let bytes = doc(body);
    let e = err(&bytes, "h.docx");
    // The zip stores the part as is: its offset in the part is its offset from `<?xml`.
    let find = |s: &[u8]| bytes.windows(s.len()).position(|w| w == s).unwrap();
    let at = find(b"&bogus;") - find(b"<?xml");
    assert_eq!(
        e,
        format!(
            "h.docx: not a valid DOCX: broken XML in word/document.xml at byte {at}: `&bogus;` is neither a predefined entity nor a valid character reference"
        )
    );
    let e = err(&doc("<w:p><w:r><w:t>1. &#0; x</w:t></w:r></w:p>"), "i.docx");
    assert!(e.contains("`&#0;` is neither"), "{e}");
    let ok = parse_docx(
        &doc("<w:p><w:r><w:t>1. A &amp; B &#233;&#x20AC;.</w:t></w:r></w:p>"),
        "j.docx",
        None,
    );
    assert_eq!(ok.unwrap().paragraphs[0].text, "A & B é€.");
}

#[test]
fn a_minimal_docx_parses() {
    let p = |style: &str, seq: bool, text: &str| {
        let field = if seq {
            r#"<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> SEQ level0 \*arabic </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>"#
        } else {
            ""
        };
        format!(
            r#"<w:p><w:pPr><w:pStyle w:val="{style}"/><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>{field}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#
        )
    };
    let body = [
        p("JuCase", false, "CASE OF X v. Y"),
        p("ECHRTitle1", false, "PROCEDURE"),
        p("ECHRPara", true, "1.&#160;&#160;The case &amp; its origin."),
        p("ECHRPara", false, "2.  Typed, not SEQ."),
        p("ECHRTitle1", false, "FOR THESE REASONS, THE COURT"),
        p("JuList", false, "1.  Holds."),
    ]
    .concat();
    let j = parse_docx(&doc(&body), "x.docx", None).unwrap();
    let got: Vec<(u32, &str)> = j.paragraphs.iter().map(|p| (p.num, p.text.as_str())).collect();
    assert_eq!(got, [(1, "The case & its origin."), (2, "Typed, not SEQ.")]);
    assert!(
        j.warnings
            .iter()
            .any(|w| w.code == "typed_number" && w.message.contains("paragraphs 2 "))
    );
    assert_eq!(
        j.provenance.producer,
        format!("lexbench-parsers {} docx", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn parse_detects_the_format_by_content() {
    let html = b"<html><body><p>PROCEDURE</p><p>1.&nbsp;&nbsp;Text.</p></body></html>";
    let j = parse(html, "judgment.docx", None).unwrap();
    assert!(j.provenance.producer.ends_with(" html"));
    assert_eq!(j.paragraphs.len(), 1);
    let e = parse(b"PK garbage", "judgment.html", None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("judgment.html: not a valid DOCX"), "{e}");
}

/// xorshift64*: a tiny deterministic generator, so the smoke test is reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    for _ in 0..1 + rng.below(4) {
        let n = v.len();
        if n == 0 {
            break;
        }
        let at = rng.below(n);
        let len = 1 + rng.below(64.min(n - at));
        match rng.below(4) {
            0 => v.truncate(at),
            1 => {
                v.drain(at..at + len);
            }
            2 => {
                let chunk = v[at..at + len].to_vec();
                let to = rng.below(v.len());
                v.splice(to..to, chunk);
            }
            _ => {
                for b in &mut v[at..at + len] {
                    *b = rng.next() as u8;
                }
            }
        }
    }
    v
}

#[test]
fn mutated_documents_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut errors) = (0usize, 0usize);
    for path in docx_fixtures() {
        let file = name(&path);
        let bytes = std::fs::read(&path).unwrap();
        let mut xml = Vec::new();
        zip::ZipArchive::new(std::io::Cursor::new(&bytes))
            .unwrap()
            .by_name("word/document.xml")
            .unwrap()
            .read_to_end(&mut xml)
            .unwrap();
        for _ in 0..4 {
            let m = mutate(&mut rng, &xml);
            let z = zip_with(&[("word/document.xml", &m)]);
            match parse_docx(&z, &file, None) {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(e.to_string().starts_with(&file), "{e}");
                    errors += 1;
                }
            }
            // The same bytes as HTML: nonsense, but never a panic.
            let _ = parse_html(&m, &file, None);
        }
        for _ in 0..2 {
            let m = mutate(&mut rng, &bytes);
            if let Err(e) = parse(&m, &file, None) {
                assert!(e.to_string().starts_with(&file), "{e}");
            }
        }
    }
    eprintln!("mutated document.xml: {ok} parsed, {errors} refused with an error");
    assert!(
        errors > 0 && ok > 0,
        "the mutations should exercise both outcomes"
    );
}

/// Issue 21, item 4: a real judgment whose `word/document.xml` is cut (inside a valid zip) is an
/// error naming the file, never a shorter judgment. Cuts fall in a paragraph's text, inside a tag,
/// between paragraphs and just before the root's end tag.
#[test]
fn truncated_document_xml_is_an_error() {
    let file = "001-175180.docx";
    let bytes = std::fs::read(lexbench_core::testing::fixture(&format!("hudoc/docx/{file}"))).unwrap();
    let mut xml = String::new();
    zip::ZipArchive::new(std::io::Cursor::new(&bytes))
        .unwrap()
        .by_name("word/document.xml")
        .unwrap()
        .read_to_string(&mut xml)
        .unwrap();
    let half = xml.floor_char_boundary(xml.len() / 2);
    let in_text = xml[half..]
        .find("<w:t>")
        .map(|i| half + i + "<w:t>".len() + 3)
        .unwrap();
    let in_tag = xml[half..].find("<w:p ").map(|i| half + i + 3).unwrap();
    let between = xml[half..]
        .find("</w:p>")
        .map(|i| half + i + "</w:p>".len())
        .unwrap();
    let before_root_end = xml.rfind("</w:document>").unwrap();
    for cut in [half, in_text, in_tag, between, before_root_end] {
        let z = zip_with(&[("word/document.xml", &xml.as_bytes()[..cut])]);
        let e = parse_docx(&z, file, None).map(|j| j.paragraphs.len());
        let e = match e {
            Ok(n) => panic!(
                "cut at byte {cut} of {}: parsed {n} paragraphs, expected an error",
                xml.len()
            ),
            Err(e) => e.to_string(),
        };
        // A cut inside a tag is quick-xml's own syntax error; every other cut is caught at the end.
        let expected = if cut == in_tag {
            "001-175180.docx: not a valid DOCX: broken XML in word/document.xml at byte"
        } else {
            "001-175180.docx: not a valid DOCX: word/document.xml is truncated: it ends at byte"
        };
        assert!(e.starts_with(expected), "cut at {cut}: {e}");
        if cut == in_text {
            let t = in_text - 3 - "<w:t>".len();
            assert!(e.contains(&format!("inside <w:t> (opened at byte {t})")), "{e}");
        }
    }
    // The whole part still parses.
    let z = zip_with(&[("word/document.xml", xml.as_bytes())]);
    assert!(parse_docx(&z, file, None).is_ok());
    // Content after the root element, or no root element at all, is malformed too.
    let e = err(
        &zip_with(&[("word/document.xml", format!("{xml}<w:p/>").as_bytes())]),
        "h.docx",
    );
    assert!(e.starts_with("h.docx: not a valid DOCX:"), "{e}");
    let e = err(
        &zip_with(&[("word/document.xml", br#"<?xml version="1.0"?>"#)]),
        "i.docx",
    );
    assert!(
        e.starts_with("i.docx: not a valid DOCX: word/document.xml is truncated"),
        "{e}"
    );
}

/// Issue 21, item 7: [`parse`] tells what a file is by content and refuses what is neither DOCX nor
/// HTML with an error naming the file and what it looks like, instead of an empty judgment. Random
/// bytes are refused without being handed to the HTML parser (which took 10 s and 520 MB on 50 MB).
#[test]
fn what_is_not_a_judgment_is_refused_by_content() {
    let pdf = std::fs::read(lexbench_core::testing::fixture(
        "guides/pdf/guide_art_1_ukr_2018.pdf",
    ))
    .unwrap();
    let e = parse(&pdf, "x.pdf", None).unwrap_err().to_string();
    assert_eq!(e, "x.pdf: a PDF, not a judgment (expected DOCX, HTML or text)");
    // The name does not matter: a PDF called .docx or .html is still a PDF.
    let e = parse(&pdf, "001-175180.html", None).unwrap_err().to_string();
    assert!(e.starts_with("001-175180.html: a PDF, not a judgment"), "{e}");

    let mut rng = Rng(42);
    let random: Vec<u8> = (0..8 << 20).map(|_| rng.next() as u8).collect();
    let t = std::time::Instant::now();
    let e = parse(&random, "random.bin", None).unwrap_err().to_string();
    assert_eq!(
        e,
        "random.bin: binary data of no known format, not a judgment (expected DOCX, HTML or text)"
    );
    assert!(t.elapsed().as_secs_f64() < 1.0, "took {:?}", t.elapsed());

    // Plain text is a judgment when it has numbered paragraphs, and refused as plain text otherwise.
    let text = std::fs::read(lexbench_core::testing::fixture("hudoc/text/001-100469.txt")).unwrap();
    let j = parse(&text, "001-100469.txt", None).unwrap();
    assert!(
        j.provenance.producer.ends_with(" text"),
        "{}",
        j.provenance.producer
    );
    assert_eq!(j.paragraphs.len(), 81);
    for prose in [
        &b"Minutes of the meeting.\nNothing was decided.\n"[..],
        b"PROCEDURE\nThe case originated in an application.\n",
        b"\xef\xbb\xbfTHE FACTS\r\n(a) a list\r\n(b) without numbers\r\n",
    ] {
        let e = parse(prose, "notes.txt", None).unwrap_err().to_string();
        assert_eq!(
            e,
            "notes.txt: plain text, not a judgment (expected DOCX, HTML or text; no numbered paragraph `N. …` starts a line of the main judgment)"
        );
    }
    for (bytes, what) in [
        (&b""[..], "an empty file"),
        (b" \n\t ", "an empty file"),
        (
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\0\0\0\0",
            "a legacy Word document (OLE2 .doc)",
        ),
        (b"{\\rtf1\\ansi hello}", "an RTF document"),
        (b"\x1f\x8b\x08\0\0\0\0\0", "gzip data"),
        (b"\xff\xfe<\0p\0>\0", "UTF-16 text"),
    ] {
        let e = parse(bytes, "f", None).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("f: {what}, not a judgment (expected DOCX, HTML or text)")
        );
    }
    // Markup is HTML, whatever comes first.
    for html in [
        &b"\xef\xbb\xbf <!DOCTYPE html><html><body><p>PROCEDURE</p><p>1. Text.</p></body></html>"[..],
        b"<div><p>PROCEDURE</p><p>1. Text.</p></div>",
        b"Judgment\n<p>PROCEDURE</p><p>1. Text.</p>",
    ] {
        let j = parse(html, "h", None).unwrap();
        assert!(j.provenance.producer.ends_with(" html"));
    }
    // Text in a legacy 8-bit encoding with markup is still HTML (the reader replaces invalid bytes).
    let j = parse(b"<p>PROCEDURE</p><p>1. Caf\xe9.</p>", "latin.html", None).unwrap();
    assert!(j.warnings.iter().any(|w| w.code == "invalid_utf8"));
}

#[test]
fn input_over_the_maximum_is_refused_by_every_parser() {
    use lexbench_core::GuideId;
    use lexbench_parsers::{Error, guide};
    let mut bytes = vec![b'a'; MAX_INPUT_BYTES + 1];
    bytes[..2].copy_from_slice(b"PK");
    fn too_large<T>(r: Result<T, Error>, what: &str) {
        match r {
            Err(e @ Error::TooLarge { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.starts_with("big.src: ") && msg.contains("64 MiB, the most a"),
                    "{msg}"
                );
                assert!(msg.contains(what), "{msg}");
            }
            Err(e) => panic!("not TooLarge: {e}"),
            Ok(_) => panic!("parsed"),
        }
    }
    too_large(parse(&bytes, "big.src", None), "judgment");
    too_large(parse_docx(&bytes, "big.src", None), "judgment");
    too_large(parse_html(&bytes, "big.src", None), "judgment");
    too_large(parse_text(&bytes, "big.src", None), "judgment");
    assert_eq!(
        guide::MAX_INPUT_BYTES,
        MAX_INPUT_BYTES,
        "the test reuses one buffer"
    );
    let id = GuideId::new("guide_big_eng").unwrap();
    too_large(guide::parse_pdf("big.src", id.clone(), &bytes), "guide");
    let text = String::from_utf8(bytes).unwrap();
    too_large(guide::parse_text("big.src", id.clone(), &text), "guide");
    let (a, b) = text.split_at(MAX_INPUT_BYTES / 2);
    too_large(
        guide::parse_pages("big.src", id, &[(None, a), (Some(2), b)]),
        "guide",
    );
    // At the cap: a zip that is not one, refused as such.
    let at_cap = &text.as_bytes()[..MAX_INPUT_BYTES];
    assert!(matches!(
        parse_docx(at_cap, "big.src", None),
        Err(Error::Invalid { .. })
    ));
}

/// Issue 29, item 20a: a DOCX whose zip holds `word/document.xml` twice. The zip reader keeps one of
/// them silently (and a crafted archive can show Word one text and us another): refused, naming the
/// file and the entry.
#[test]
fn two_document_parts_in_one_docx_are_refused() {
    let xml = |n: u32| {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><w:document {W}><w:body><w:p><w:r><w:t>{n}.  The facts.</w:t></w:r></w:p></w:body></w:document>"#
        )
    };
    let (one, two) = (xml(1), xml(2));
    // The zip writer refuses a second entry of one name, so the second is written under a name of
    // the same length and renamed in place (local header and central directory; the stored bytes and
    // their CRC do not involve the name).
    let mut bytes = zip_with(&[
        ("word/document.xml", one.as_bytes()),
        ("word/document.xmX", two.as_bytes()),
    ]);
    let mut renamed = 0;
    for i in 0..bytes.len() - 17 {
        if &bytes[i..i + 17] == b"word/document.xmX" {
            bytes[i + 16] = b'l';
            renamed += 1;
        }
    }
    assert_eq!(renamed, 2);
    let e = err(&bytes, "dup.docx");
    assert_eq!(
        e,
        "dup.docx: not a valid DOCX: the zip archive holds 2 entries named word/document.xml: which one is the document is ambiguous"
    );
    assert!(parse(&bytes, "dup.docx", None).is_err());
}

/// Issue 29, item 15: HTML nested 60,000 elements deep overflowed the stack (the walk and the text
/// collection recursed once per level; exit 134), after the HTML parser had spent minutes building
/// it (its tree building walks the open elements for every new one). Now nesting over
/// [`html::MAX_DEPTH`] is refused before the HTML parser runs, with an error naming the file and the
/// limit; under it, the walk and the text collection are iterative (no stack per level).
#[test]
fn deeply_nested_html_is_refused_not_a_crash() {
    let nested = |open: &str, close: &str, depth: usize, inner: &str| {
        format!(
            "<html><body>{}{inner}{}</body></html>",
            open.repeat(depth),
            close.repeat(depth)
        )
    };
    let deep = nested("<div>", "</div>", 60_000, "<p>1.  The facts.</p>");
    let e = parse_html(deep.as_bytes(), "deep.html", None)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("deep.html: not a valid HTML: elements nested more than 1000 deep (at byte "),
        "{e}"
    );
    assert!(parse(deep.as_bytes(), "deep.html", None).is_err());
    // Inline elements count too (the text collection recursed on them).
    let deep = nested("<span>", "</span>", 60_000, "deep");
    assert!(html::blocks(format!("<p>1. {deep}</p>").as_bytes(), "deep.html").is_err());
    // At the limit (`html`, `body`, `p`, `b` and `i` are five levels): parsed, iteratively, text in order.
    let limit = html::MAX_DEPTH - 5;
    let ok = nested(
        "<div>",
        "</div>",
        limit,
        "before<p>1.  The applicant was born in 1970.</p><p>2.  <b><i>deep</i></b> text</p>after",
    );
    let (blocks, _) = html::blocks(ok.as_bytes(), "ok.html").unwrap();
    let texts: Vec<&str> = blocks.iter().map(|b| b.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "before",
            "1.  The applicant was born in 1970.",
            "2.  deep text",
            "after"
        ]
    );
    let ok = format!(
        "<html><body><p>1. {}deep{}</p></body></html>",
        "<span>".repeat(limit),
        "</span>".repeat(limit)
    );
    let (blocks, _) = html::blocks(ok.as_bytes(), "ok.html").unwrap();
    assert_eq!(blocks[0].text, "1. deep");
    // What an HTML parser closes by itself does not add up: 5,000 unclosed `<p>`, `<li>` and `<td>`,
    // stray end tags, void elements and scripts holding tags.
    let flat = format!(
        "<html><body>{}<ul>{}</ul><table>{}</table>{}{}</body></html>",
        "<p>1. text <span>x".repeat(5_000),
        "<li>item".repeat(5_000),
        "<tr><td>a<td>b".repeat(5_000),
        "</div><br><img src=x>".repeat(5_000),
        "<script>if (a<b) { document.write('<div><div>') }</script>".repeat(5_000),
    );
    assert!(html::blocks(flat.as_bytes(), "flat.html").is_ok());
}
