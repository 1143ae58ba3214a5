//! `lexbench import release RELEASE --texts SRC [--texts SRC …]`: the published release with judgment
//! texts from several sources (folders of judgment files, segmented JSON Lines corpora).
//!
//! Properties checked:
//! - on the real fixtures (the release, `hudoc/text` and the segmented `hudoc/lexclipr` corpus), the
//!   pairs kept per setting and the pairs left out per reason (no text, text not parsed, a labelled
//!   paragraph missing from the text used) are the measured ones, and add up to the release; no kept
//!   pair has a relevant paragraph outside its pool; the two sources' agreement on the judgments both
//!   hold is on the card and in `stats --format json`, and the dataset verifies with `sources.json`
//!   in its manifest;
//! - precedence: with two hand-made sources that differ on one judgment, the first given is the
//!   text used (its paragraph set decides which pairs are kept), the comparison reports the
//!   difference whichever comes first, and a missing labelled paragraph leaves its pair out instead
//!   of failing the import;
//! - a path that is neither a folder nor a `.jsonl` corpus is refused, naming it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::lexbench;

fn stats_json(data: &Path, name: &str) -> serde_json::Value {
    let out = lexbench(data, &["--format", "json", "stats", name]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every qrel paragraph of the dataset in `dir` is in its topic's pool (`splits`: those with pairs).
fn positives_in_pools(dir: &Path, splits: &[&str]) {
    let ds =
        lexbench_core::dataset::Dataset::open(lexbench_core::dataset::DatasetDir(dir.to_owned())).unwrap();
    assert!(ds.manifest().files.contains_key("sources.json"));
    let pools: BTreeMap<_, _> = ds
        .pools()
        .unwrap()
        .expect("pooled")
        .into_iter()
        .map(|p| (p.topic, p.docs))
        .collect();
    for split in splits {
        for (topic, docs) in ds.qrels(split, &Default::default()).unwrap().topics {
            for doc in docs.keys() {
                assert!(pools[&topic].contains(doc), "{split}: {topic} {doc}");
            }
        }
    }
}

#[test]
fn a_folder_and_a_segmented_corpus_of_real_judgments() {
    let data = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-import-texts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let fixtures = lexbench_core::testing::fixtures_dir();
    let release = fixtures.join("tum_release");
    let (text, corpus) = (
        fixtures.join("hudoc/text"),
        fixtures.join("hudoc/lexclipr/judgments.jsonl"),
    );
    let out = lexbench(
        &data,
        &[
            "import",
            "release",
            release.to_str().unwrap(),
            "--texts",
            text.to_str().unwrap(),
            "--texts",
            corpus.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("imported 2532 pairs"), "{stderr}");
    assert!(
        stderr.contains("left out 1607 pairs: 1573 whose judgment has no text in any source, 0 whose text did not parse, 34 with a labelled paragraph missing"),
        "{stderr}"
    );

    let stats = stats_json(&data, "ecthr-release-text");
    let t = &stats["text_sources"];
    // Pairs kept per setting, and left out per setting and reason (no text, not parsed, missing
    // paragraph): they add up to the release's rows per file (after merging repeated rows).
    for (split, kept, release_pairs, no_text, missing) in [
        ("train", 1326, 2243, 902, 15),
        ("val", 184, 306, 120, 2),
        ("test", 295, 486, 190, 1),
        ("unseen_query", 437, 700, 250, 13),
        ("unseen_guide", 290, 404, 111, 3),
    ] {
        assert_eq!(stats["stats"]["splits"][split]["pairs"], kept, "{split}");
        assert_eq!(t["kept"][split], kept, "{split}");
        assert_eq!(t["release_pairs"][split], release_pairs, "{split}");
        let left = &t["left_out_per_setting"][split];
        assert_eq!(left["no_text"], no_text, "{split}: {left}");
        assert_eq!(left["missing_paragraph"], missing, "{split}: {left}");
        assert!(left.get("unparsed").is_none(), "{split}: {left}");
        assert_eq!(kept + no_text + missing, release_pairs, "{split}");
    }
    assert_eq!(
        t["left_out"],
        serde_json::json!({"no_text": 1573, "unparsed": 0, "missing_paragraph": 34})
    );
    // The sources in precedence order: every release judgment of hudoc/text is used from it, the
    // corpus supplies the rest.
    let used: Vec<(u64, u64)> = t["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["parsed"].as_u64().unwrap(), s["used"].as_u64().unwrap()))
        .collect();
    assert_eq!(used, [(134, 134), (1085, 1032)]);
    // Agreement of the two sources on the 53 judgments both hold (SOURCES.md: same numbering).
    let a = &t["agreement"]["1-2"];
    assert_eq!(a["judgments"], 53, "{a}");
    let share = a["mean_number_share"].as_f64().unwrap();
    let openings = a["mean_opening_agreement"].as_f64().unwrap();
    assert!((share - 0.9785).abs() < 1e-3, "{a}");
    assert!((openings - 0.9995).abs() < 1e-3, "{a}");
    assert_eq!(a["worst"]["item"], "001-102617", "{a}");

    let human = lexbench(&data, &["stats", "ecthr-release-text"]);
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(
        human.contains("text_sources.agreement.1-2.judgments")
            && human.contains("text_sources.left_out.missing_paragraph"),
        "{human}"
    );
    let dir = data.join("datasets/ecthr-release-text");
    let card = std::fs::read_to_string(dir.join("card.md")).unwrap();
    for needle in [
        "2532 of the release's 4139 pairs",
        "1607 pairs left out: 1573 with no text in any source, 0 whose text did not parse, 34 with a labelled paragraph missing",
        "Sources 1-2 agree on 53 judgments in common: mean share of paragraph numbers in common 0.978",
        "worst 001-102617",
        "first source, in the order given on the command line",
    ] {
        assert!(card.contains(needle), "{needle}\n{card}");
    }
    assert_eq!(card.matches("left out pair ").count(), 34, "{card}");
    positives_in_pools(&dir, &["train", "val", "test", "unseen_query", "unseen_guide"]);
    let _ = std::fs::remove_dir_all(&data);
}

/// A release judgment cited by a training pair (§§ 25, 35) and a testing pair (§ 29).
const ITEM: &str = "001-57627";

/// Source A: a segmented corpus with paragraphs 1-40 of [`ITEM`]. Source B: a folder whose text of
/// it has the same numbers but paragraph 35, and other words.
fn conflicting_sources(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::create_dir_all(dir.join("b")).unwrap();
    let paragraphs: Vec<serde_json::Value> = (1..=40)
        .map(|n| serde_json::json!({"num": n, "text": format!("{n}. Paragraph {n} as source A prints it.")}))
        .chain([serde_json::json!({"num": null, "text": "An unnumbered quotation."})])
        .collect();
    let line = serde_json::json!({"itemid": ITEM, "case_name": "CASE OF A v. B", "source_file": "made here", "paragraphs": paragraphs});
    let a = dir.join("a.jsonl");
    std::fs::write(&a, format!("{line}\n")).unwrap();
    let mut text = String::from("CASE OF A v. B\n\nPROCEDURE\n\n");
    for n in (1..=40).filter(|&n| n != 35) {
        if n == 10 {
            text.push_str("THE LAW\n\n");
        }
        text.push_str(&format!(
            "{n}. Text {n} in the words of source B, which differ.\n\n"
        ));
    }
    std::fs::write(dir.join("b").join(format!("{ITEM}.txt")), text).unwrap();
    (a, dir.join("b"))
}

#[test]
fn the_first_source_given_wins_and_conflicts_are_reported() {
    let root = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-import-conflict-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (a, b) = conflicting_sources(&root.join("src"));
    let release = lexbench_core::testing::fixtures_dir().join("tum_release");
    let data = root.join("data");
    let import = |first: &Path, second: &Path, name: &str| {
        let out = lexbench(
            &data,
            &[
                "import",
                "release",
                release.to_str().unwrap(),
                "--texts",
                first.to_str().unwrap(),
                "--texts",
                second.to_str().unwrap(),
                "--name",
                name,
            ],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        stats_json(&data, name)
    };

    // A first: its text has every labelled paragraph; both pairs are kept.
    let s = import(&a, &b, "a-first");
    let t = &s["text_sources"];
    assert_eq!(s["stats"]["splits"]["train"]["pairs"], 1);
    assert_eq!(s["stats"]["splits"]["test"]["pairs"], 1);
    assert_eq!(t["left_out"]["missing_paragraph"], 0);
    assert_eq!(t["sources"][0]["used"], 1);
    assert_eq!(t["sources"][1]["used"], 0);
    // 39 numbers in common of 40, and no opening agrees.
    let agreement = &t["agreement"]["1-2"];
    assert_eq!(agreement["judgments"], 1);
    assert!((agreement["mean_number_share"].as_f64().unwrap() - 39.0 / 40.0).abs() < 1e-9);
    assert_eq!(agreement["mean_opening_agreement"], 0.0);
    assert_eq!(agreement["worst"]["item"], ITEM);
    assert_eq!(agreement["worst"]["common_numbers"], 39);
    positives_in_pools(&data.join("datasets/a-first"), &["train", "test"]);

    // B first: its text lacks § 35, so the training pair is left out (not the import); the
    // testing pair is kept.
    let s = import(&b, &a, "b-first");
    let t = &s["text_sources"];
    assert_eq!(s["stats"]["splits"]["train"]["pairs"], 0);
    assert_eq!(s["stats"]["splits"]["test"]["pairs"], 1);
    assert_eq!(t["left_out"]["missing_paragraph"], 1);
    assert_eq!(t["left_out_per_setting"]["train"]["missing_paragraph"], 1);
    assert_eq!(t["sources"][0]["used"], 1);
    assert_eq!(t["agreement"]["1-2"]["mean_opening_agreement"], 0.0);
    let card = std::fs::read_to_string(data.join("datasets/b-first/card.md")).unwrap();
    assert!(
        card.contains(&format!(
            "labelled paragraph(s) 35 not among the 39 paragraphs of {ITEM}"
        )),
        "{card}"
    );
    positives_in_pools(&data.join("datasets/b-first"), &["test"]);

    // Neither a folder nor a .jsonl corpus.
    let csv = root.join("src/texts.csv");
    std::fs::write(&csv, "x\n").unwrap();
    let out = lexbench(
        &data,
        &[
            "import",
            "release",
            release.to_str().unwrap(),
            "--texts",
            csv.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("texts.csv") && stderr.contains(".jsonl segmented corpus"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
