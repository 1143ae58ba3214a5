//! End-to-end tests of `lexbench parse guide`.
//!
//! Properties checked:
//! - a guide's extracted text gives its heading tree and queries as JSON (the Art 1 guide: 40 headings,
//!   38 queries, citations with paragraph lists), the guide id inferred from the file name;
//! - the rendered PDF gives the same queries as the text;
//! - `--meta` resolves citations and prints the audit summary (resolved / ambiguous / unresolved) on
//!   stderr and in the output;
//! - `--format jsonl` prints one JSON record per line;
//! - bad input (missing file, broken PDF, a file name that is no guide id) exits with code 2 and an
//!   error naming the file.

use std::path::PathBuf;
use std::process::Output;

use crate::common::lexbench_no_data;
use lexbench_core::testing::{fixture, fixtures_dir};
use serde_json::Value;

fn path(rel: &str) -> String {
    fixture(rel).to_string_lossy().into_owned()
}

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir =
        lexbench_core::testing::scratch_root().join(format!("lexbench-cli-guide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write");
    p
}

fn count(sections: &Value) -> usize {
    sections
        .as_array()
        .map_or(0, |a| a.iter().map(|s| 1 + count(&s["children"])).sum())
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

#[test]
fn text_guide_to_json() {
    let v = json_of(&lexbench_no_data(&[
        "parse",
        "guide",
        &path("guides/text/guide_art_1_eng.txt"),
    ]));
    let p = &v["parsed"];
    assert_eq!(p["guide"]["id"], "guide_art_1_eng");
    assert_eq!(count(&p["guide"]["sections"]), 40);
    assert_eq!(p["hierarchy_source"], "table_of_contents");
    let queries = p["queries"].as_array().expect("queries");
    assert_eq!(queries.len(), 38);
    let assanidze = queries
        .iter()
        .flat_map(|q| q["citations"].as_array().expect("citations"))
        .find(|c| c["raw"] == "Assanidze v. Georgia [GC], 2004, §§ 146-147")
        .expect("the Assanidze citation");
    assert_eq!(assanidze["paragraphs"], serde_json::json!([146, 147]));
    assert_eq!(assanidze["flags"]["grand_chamber"], true);
    assert!(v["audit"].is_null());
}

#[test]
fn pdf_gives_the_same_queries_as_text() {
    let t = json_of(&lexbench_no_data(&[
        "parse",
        "guide",
        &path("guides/text/guide_terrorism_eng.txt"),
    ]));
    let p = json_of(&lexbench_no_data(&[
        "parse",
        "guide",
        &path("guides/pdf/guide_terrorism_eng.rendered.pdf"),
    ]));
    assert_eq!(p["parsed"]["guide"]["id"], "guide_terrorism_eng");
    let texts = |v: &Value| -> Vec<String> {
        v["parsed"]["queries"]
            .as_array()
            .expect("queries")
            .iter()
            .map(|q| q["text"].to_string())
            .collect()
    };
    assert_eq!(texts(&t), texts(&p));
}

#[test]
fn meta_resolves_and_audits() {
    let meta = fixtures_dir().join("hudoc/meta").to_string_lossy().into_owned();
    let out = lexbench_no_data(&[
        "parse",
        "guide",
        "--meta",
        &meta,
        &path("guides/text/guide_art_1_eng.txt"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = json_of(&out);
    assert!(stderr.contains("guide_art_1_eng: 344 citations,"), "{stderr}");
    let a = &v["audit"];
    let (r, amb, u, n) = (&a["resolved"], &a["ambiguous"], &a["unresolved"], &a["citations"]);
    assert_eq!(
        r.as_u64().unwrap() + amb.as_u64().unwrap() + u.as_u64().unwrap(),
        n.as_u64().unwrap()
    );
    assert!(a["rate"].as_f64().unwrap() > 0.8, "{a}");
    let resolved = v["parsed"]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|q| q["citations"].as_array().unwrap())
        .filter(|c| c["resolved"].is_string())
        .count();
    assert_eq!(resolved as u64, r.as_u64().unwrap());
}

#[test]
fn jsonl_is_one_record_per_line() {
    let out = lexbench_no_data(&[
        "parse",
        "guide",
        "--format",
        "jsonl",
        &path("guides/text/guide_art_1_eng.txt"),
    ]);
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 1 + 38);
    assert!(lines[0]["guide"].is_object());
    assert!(lines[1]["query"]["path"].is_array() && lines[1]["detail"]["citations"].is_array());
}

#[test]
fn bad_input_names_the_file() {
    let out = lexbench_no_data(&["parse", "guide", "/nonexistent/guide_x_eng.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/guide_x_eng.txt"));

    let broken = scratch("guide_broken_eng.pdf", b"%PDF-1.7\nnot really a pdf");
    let out = lexbench_no_data(&["parse", "guide", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("guide_broken_eng.pdf"), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");

    let odd = scratch("Guide Ä.txt", b"Introduction\n");
    let out = lexbench_no_data(&["parse", "guide", odd.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Guide Ä.txt"));
}

/// `lexbench parse citations` with `input` on standard input.
fn citations_stdin(input: &[u8], extra: &[&str]) -> Output {
    use std::io::Write;
    let mut child = std::process::Command::new(crate::common::bin())
        .args(["parse", "citations"])
        .args(extra)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn lexbench");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write stdin");
    child.wait_with_output().expect("run lexbench")
}

#[test]
fn parse_citations_reads_any_text() {
    // From standard input: one JSON line per citation, offsets into the input as given.
    let text = "In Siliadin v. France, 2005, the Court considered\nthat … (§§ 126-127). See also\n(Assanidze v. Georgia [GC], 2004, § 146; ibid., § 149).";
    let out = citations_stdin(text.as_bytes(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["direct", "deferred", "direct", "ibid"]);
    assert_eq!(lines[0]["case_level_only"], true);
    assert_eq!(lines[1]["case_name"], "Siliadin v. France");
    assert_eq!(lines[1]["paragraphs"], serde_json::json!([126, 127]));
    assert_eq!(lines[1]["line"], 2);
    let (s, e) = (
        lines[1]["start"].as_u64().unwrap() as usize,
        lines[1]["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&text[s..e], "§§ 126-127");
    assert_eq!(lines[2]["grand_chamber"], true);
    assert_eq!(lines[3]["case_name"], "Assanidze v. Georgia");

    // A whole guide body from a file, as one JSON array with `--format json`.
    let out = lexbench_no_data(&[
        "--format",
        "json",
        "parse",
        "citations",
        &path("guides/text/guide_terrorism_eng.txt"),
    ]);
    assert!(out.status.success());
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).expect("a JSON array");
    assert!(all.len() > 200, "{}", all.len());
    assert!(all.iter().any(|c| c["kind"] == "previous_sentence"));

    // Bad input: not UTF-8 names the input and the line; a missing file names the file.
    let out = citations_stdin(b"line one\nline \xff two", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("standard input: line 2: not UTF-8"), "{err}");
    let out = lexbench_no_data(&["parse", "citations", "/nonexistent/body.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/body.txt"));
    let out = citations_stdin(b"", &["--format", "human"]);
    assert_eq!(out.status.code(), Some(2));
}
