//! Issue 54 (a hostile probe of the command line): the judgment readers behind `parse judgment` and
//! `import release --texts`.
//!
//! Properties checked:
//! - item 2: a HUDOC JSON document saved under another judgment's itemid (`001-171804.json` holding
//!   the document of 001-100038) is not imported as that judgment's text: its pairs are left out as
//!   `unparsed`, and stderr and the card name the file and both itemids; with no other text the import
//!   fails naming the file;
//! - item 3: a segmented corpus's block repeating a paragraph number in sequence (a `FAKE` § 29 just
//!   before the real one) keeps neither block: the number is refused, the pair labelling it is left
//!   out, and the blocks left out are counted per reason on stderr, in `sources.json` and on the card;
//!   no `FAKE` text reaches the dataset;
//! - item 14: `parse judgment` of a JSON array is an error naming the file (exit 2, nothing printed),
//!   not a judgment with `item: null`; a 10,000-character itemid is echoed once, shortened, with its
//!   length.

use std::path::{Path, PathBuf};

use crate::common::{lexbench, lexbench_no_data};

fn root(name: &str) -> PathBuf {
    let dir = lexbench_core::testing::scratch_root().join(format!(
        "lexbench-cli-probe3-readers-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn import(data: &Path, texts: &[&Path], name: &str) -> std::process::Output {
    let release = lexbench_core::testing::fixtures_dir().join("tum_release");
    let mut args = vec![
        "import".to_owned(),
        "release".to_owned(),
        release.display().to_string(),
    ];
    for t in texts {
        args.push("--texts".to_owned());
        args.push(t.display().to_string());
    }
    args.extend(["--name".to_owned(), name.to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lexbench(data, &args)
}

fn sources_json(data: &Path, name: &str) -> serde_json::Value {
    let bytes = std::fs::read(data.join("datasets").join(name).join("sources.json")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Item 2: the file's name says 001-171804 (12 release pairs), its `itemid` 001-100038 (a judgment
/// the release does not cite). Beside it, 001-105217.json is the judgment it is named for.
#[test]
fn import_texts_refuses_a_hudoc_json_of_another_judgment() {
    let root = root("wrong-json");
    let flat = lexbench_core::testing::fixtures_dir().join("hudoc/flat");
    let texts = root.join("texts");
    std::fs::create_dir_all(&texts).unwrap();
    std::fs::copy(flat.join("001-100038.json"), texts.join("001-171804.json")).unwrap();
    std::fs::copy(flat.join("001-105217.json"), texts.join("001-105217.json")).unwrap();
    let data = root.join("data");

    let out = import(&data, &[&texts], "wrong-json");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("left out 001-171804:")
            && stderr.contains("001-171804.json")
            && stderr.contains("001-100038"),
        "{stderr}"
    );
    let s = sources_json(&data, "wrong-json");
    assert_eq!(s["left_out"]["unparsed"], 12, "{s}");
    assert_eq!(s["sources"][0]["parsed"], 1, "{s}");
    assert_eq!(s["sources"][0]["unparsed"], 1, "{s}");
    let card = std::fs::read_to_string(data.join("datasets/wrong-json/card.md")).unwrap();
    assert!(
        card.contains("left out 001-171804:") && card.contains("001-100038"),
        "{card}"
    );

    // The wrong document alone: nothing to import, an error naming the file.
    std::fs::remove_file(texts.join("001-105217.json")).unwrap();
    let out = import(&data, &[&texts], "wrong-json-alone");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("001-171804.json") && stderr.contains("001-100038"),
        "{stderr}"
    );
    assert!(!data.join("datasets/wrong-json-alone").exists());
    let _ = std::fs::remove_dir_all(&root);
}

/// A release judgment cited by a training pair (§§ 25, 35) and a testing pair (§ 29).
const ITEM: &str = "001-57627";

/// A corpus of [`ITEM`]'s paragraphs 1-40, with `extra` blocks inserted before the block of each
/// given number.
fn corpus(path: &Path, extra: &[(u32, serde_json::Value)]) {
    let mut paragraphs = Vec::new();
    for n in 1..=40u32 {
        paragraphs.extend(extra.iter().filter(|e| e.0 == n).map(|e| e.1.clone()));
        paragraphs.push(serde_json::json!({"num": n, "text": format!("{n}. Paragraph {n} as printed.")}));
    }
    let line = serde_json::json!({"itemid": ITEM, "case_name": "CASE OF A v. B", "paragraphs": paragraphs});
    std::fs::write(path, format!("{line}\n")).unwrap();
}

/// Item 3: `{"num": 29, "text": "FAKE"}` just before the real § 29.
#[test]
fn import_texts_reports_a_repeated_paragraph_number() {
    let root = root("repeated");
    let data = root.join("data");
    let fake = root.join("fake.jsonl");
    corpus(
        &fake,
        &[(29, serde_json::json!({"num": 29, "text": "29. FAKE paragraph."}))],
    );
    let out = import(&data, &[&fake], "repeated");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The number is refused: the testing pair (§ 29) is left out, the training pair kept.
    let s = sources_json(&data, "repeated");
    assert_eq!(s["kept"]["test"], 0, "{s}");
    assert_eq!(s["kept"]["train"], 1, "{s}");
    assert_eq!(s["left_out"]["missing_paragraph"], 1, "{s}");
    assert_eq!(s["sources"][0]["blocks_left_out"]["repeated_number"], 2, "{s}");
    assert!(
        stderr.contains("repeated_number") && stderr.contains("paragraph number 29"),
        "{stderr}"
    );
    let card = std::fs::read_to_string(data.join("datasets/repeated/card.md")).unwrap();
    assert!(card.contains("paragraph number 29"), "{card}");
    let corpus_file = std::fs::read_to_string(data.join("datasets/repeated/corpus.jsonl")).unwrap();
    assert!(
        !corpus_file.contains("FAKE"),
        "the FAKE block reached the dataset"
    );

    // Out of sequence (a quotation after § 35 carrying 29): the real § 29 is kept, the other block
    // counted as out of order.
    let quoted = root.join("quoted.jsonl");
    corpus(
        &quoted,
        &[(36, serde_json::json!({"num": 29, "text": "29. FAKE quotation."}))],
    );
    let out = import(&data, &[&quoted], "quoted");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let s = sources_json(&data, "quoted");
    assert_eq!(s["kept"]["test"], 1, "{s}");
    assert_eq!(s["sources"][0]["blocks_left_out"]["out_of_order"], 1, "{s}");
    assert!(stderr.contains("out_of_order"), "{stderr}");
    let corpus_file = std::fs::read_to_string(data.join("datasets/quoted/corpus.jsonl")).unwrap();
    assert!(
        !corpus_file.contains("FAKE"),
        "the FAKE block reached the dataset"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// Item 14.
#[test]
fn parse_judgment_refuses_a_json_array_and_shortens_a_long_itemid() {
    let root = root("parse");
    let doc: serde_json::Value = serde_json::from_slice(
        &std::fs::read(lexbench_core::testing::fixtures_dir().join("hudoc/flat/001-100038.json")).unwrap(),
    )
    .unwrap();
    let array = root.join("array.json");
    std::fs::write(&array, serde_json::to_vec(&serde_json::json!([doc])).unwrap()).unwrap();
    let out = lexbench_no_data(&["parse", "judgment", array.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        stderr.contains("array.json") && stderr.contains("a JSON array"),
        "{stderr}"
    );

    let mut long = doc.clone();
    long["itemid"] = serde_json::Value::String(format!("001-{}", "1".repeat(9996)));
    let long_file = root.join("long.json");
    std::fs::write(&long_file, serde_json::to_vec(&long).unwrap()).unwrap();
    let out = lexbench_no_data(&["parse", "judgment", long_file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("long.json") && stderr.contains("(10000 characters)"),
        "{stderr}"
    );
    assert!(stderr.len() < 400, "{} bytes: {stderr}", stderr.len());
    let _ = std::fs::remove_dir_all(&root);
}
