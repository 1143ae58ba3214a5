//! End-to-end tests of `lexbench parse judgment`.
//!
//! Properties checked:
//! - a DOCX judgment prints as one JSON document that reads back as a `lexbench_core::Judgment`
//!   (unknown fields rejected), with the itemid taken from the file name (001-175180: 122 paragraphs,
//!   three opinions);
//! - `--format jsonl` prints one record per line, `item` null for a file name without an itemid;
//! - the format is detected by content: HTML is parsed as HTML and a DOCX renamed `.html` still as
//!   DOCX;
//! - bad input (missing file, not a zip, damaged zip, text without markup, an empty body) prints an
//!   error naming the file and exits with code 2, while the good files given with it are still printed;
//! - a plain-text judgment (one paragraph per line) is parsed like the others, its itemid taken from
//!   the file name; text without a numbered paragraph is refused as plain text;
//! - what is no judgment (a PDF, 50 MB of random bytes) is refused at once, by content, with an error
//!   naming the file and what it looks like.

use std::path::PathBuf;
use std::process::Output;

use crate::common::lexbench_no_data;
use lexbench_core::Judgment;
use lexbench_core::testing::fixture;

fn path(rel: &str) -> String {
    fixture(rel).to_string_lossy().into_owned()
}

fn scratch(name: &str, bytes: &[u8]) -> String {
    let dir =
        lexbench_core::testing::scratch_root().join(format!("lexbench-cli-judgment-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, bytes).expect("write");
    p.to_string_lossy().into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn docx_to_json() {
    let out = lexbench_no_data(&["parse", "judgment", &path("hudoc/docx/001-175180.docx")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: Judgment = serde_json::from_slice(&out.stdout).expect("one Judgment document");
    assert_eq!(j.item.as_ref().map(|i| i.as_str()), Some("001-175180"));
    assert_eq!(j.paragraphs.len(), 122);
    assert_eq!(j.paragraphs[0].num, 1);
    assert!(j.paragraphs[0].text.starts_with("The case originated"));
    assert_eq!(j.opinions.len(), 3);
    assert_eq!(j.date.as_deref(), Some("2017-06-27"));
}

#[test]
fn jsonl_one_record_per_line() {
    let out = lexbench_no_data(&[
        "parse",
        "judgment",
        "--format",
        "jsonl",
        &path("hudoc/docx/001-83979.docx"),
        &path("hudoc/docx/CASE_OF_SARGSYAN_v._AZERBAIJAN.docx"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let records: Vec<Judgment> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a Judgment per line"))
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].item.as_ref().map(|i| i.as_str()), Some("001-83979"));
    assert_eq!(records[0].paragraphs.len(), 41);
    assert!(records[1].item.is_none());
    assert_eq!(records[1].paragraphs.len(), 65);
    assert!(text.contains("\"item\":null"));
}

#[test]
fn format_is_detected_by_content() {
    let html = scratch(
        "001-000001.docx",
        "<html><body><p>CASE OF A v. B</p><p>PROCEDURE</p><p>1.&nbsp;&nbsp;The case.</p></body></html>"
            .as_bytes(),
    );
    let out = lexbench_no_data(&["parse", "judgment", &html]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: Judgment = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(j.provenance.producer.ends_with(" html"));
    assert_eq!(j.item.as_ref().map(|i| i.as_str()), Some("001-000001"));
    let docx = std::fs::read(fixture("hudoc/docx/001-83979.docx")).expect("fixture");
    let renamed = scratch("renamed.html", &docx);
    let out = lexbench_no_data(&["parse", "judgment", &renamed]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: Judgment = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(j.provenance.producer.ends_with(" docx"));
    assert_eq!(j.paragraphs.len(), 41);
}

#[test]
fn plain_text_judgment_to_json() {
    let out = lexbench_no_data(&["parse", "judgment", &path("hudoc/text/001-100469.txt")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: Judgment = serde_json::from_slice(&out.stdout).expect("one Judgment document");
    assert!(
        j.provenance.producer.ends_with(" text"),
        "{}",
        j.provenance.producer
    );
    assert_eq!(j.item.as_ref().map(|i| i.as_str()), Some("001-100469"));
    assert_eq!(j.title, "CASE OF SCHÜTH v. GERMANY");
    assert_eq!(j.date.as_deref(), Some("2010-09-23"));
    assert_eq!(j.paragraphs.len(), 81);
    assert_eq!(j.paragraphs.last().map(|p| p.num), Some(81));
    assert!(j.paragraphs[0].text.starts_with("The case originated"));
    // A text file given with a DOCX: both printed.
    let out = lexbench_no_data(&[
        "parse",
        "judgment",
        "--format",
        "jsonl",
        &path("hudoc/text/001-57422.txt"),
        &path("hudoc/docx/001-83979.docx"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let records: Vec<Judgment> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a Judgment per line"))
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].paragraphs.len(), 46);
    assert_eq!(records[0].opinions.len(), 6);
}

#[test]
fn bad_input_names_the_file_and_exits_2() {
    let cases = [
        (
            scratch("plain.docx", b"just some text"),
            "plain text, not a judgment (expected DOCX, HTML or text; no numbered paragraph `N. …` starts a line of the main judgment)",
        ),
        (
            scratch("damaged.docx", b"PK\x03\x04damaged"),
            "not a valid DOCX: unreadable zip archive",
        ),
        (
            scratch("empty.html", b"<html><body><p></p></body></html>"),
            "empty body",
        ),
    ];
    for (file, why) in &cases {
        let out = lexbench_no_data(&["parse", "judgment", file]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = stderr(&out);
        assert!(
            err.contains(&format!("error: {file}: ")) && err.contains(why),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    let missing = "/nonexistent/001-1.docx";
    let good = path("hudoc/docx/001-83979.docx");
    let out = lexbench_no_data(&["parse", "judgment", "--format", "jsonl", missing, &good]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("error: {missing}: No such file")),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(text.lines().count(), 1, "the good file is still printed");
}

/// Issue 21, item 7: a PDF and 50 MB of random bytes exit 2 at once with an error naming the file and
/// what it looks like; they used to print an empty judgment and exit 0 (the random file after 10 s).
#[test]
fn pdf_and_random_bytes_are_refused_quickly() {
    let pdf = path("guides/pdf/guide_art_1_ukr_2018.pdf");
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let random: Vec<u8> = (0..50 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect();
    let random = scratch("random.docx", &random);
    for (file, why) in [
        (&pdf, "a PDF, not a judgment (expected DOCX, HTML or text)"),
        (&random, "binary data of no known format, not a judgment"),
    ] {
        let t = std::time::Instant::now();
        let out = lexbench_no_data(&["parse", "judgment", file]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("error: {file}: {why}")), "{err}");
        assert!(out.stdout.is_empty());
        assert!(t.elapsed().as_secs_f64() < 5.0, "{file}: took {:?}", t.elapsed());
    }
}
