//! `lexbench import lexclipr DIR --lang …`, then `run bm25` and `eval` on each language's test split.
//!
//! Properties checked, on the real LexCLiPR fixture (English and French):
//! - every row of `labels.jsonl` of the two languages is counted in its split, and is kept or left
//!   out by a reason (`lexclipr.json`), the counts being those measured (no judgment in
//!   judgments.jsonl, a cited paragraph missing); only the languages asked for are written;
//! - the manifest declares the query language and an English corpus; the qrels of train, val, test
//!   and train_all hold the kept topics; French topics link to English ones;
//! - BM25 analyses French queries with the French chain and English paragraphs with the English
//!   one (sidecar), and the R@k% figures on the test splits are the measured ones;
//! - `lexbench leaderboard` shows the "Cross-lingual (LexCLiPR)" section: a row per language, English
//!   first, with its test topics, a column group per system (the BM25 baseline first), each cell the
//!   language's board cell marked against its own BM25 (a seeded random ranking: ▼ in both);
//! - `--union` writes ecthr-xl-all: every topic of the two languages in its split or left out by
//!   reason, its train split less the topics citing a paragraph some language evaluates under the
//!   same guide, no query language declared, an English corpus;
//! - an unknown language is refused, naming it.

use std::collections::BTreeMap;

use crate::common::{lexbench, read_json};

#[test]
fn english_and_french_from_the_real_fixture() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-cli-lexclipr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let dir = lexbench_core::testing::fixtures_dir().join("hudoc/lexclipr");
    let out = lexbench(
        &data,
        &[
            "import",
            "lexclipr",
            dir.to_str().unwrap(),
            "--lang",
            "en",
            "--lang",
            "french",
            "--union",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("ecthr-xl-fr: queries fr (BM25 analyser: french"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ecthr-xl-en: queries en (BM25 analyser: english"),
        "{stderr}"
    );
    let mut written: Vec<String> = std::fs::read_dir(data.join("datasets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, ["ecthr-xl-all", "ecthr-xl-en", "ecthr-xl-fr"]);

    // The labels, counted here from the file itself.
    let text = std::fs::read_to_string(dir.join("labels.jsonl")).unwrap();
    let mut rows: BTreeMap<(String, String), usize> = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *rows
            .entry((
                v["lang"].as_str().unwrap().to_owned(),
                v["split"].as_str().unwrap().to_owned(),
            ))
            .or_default() += 1;
    }
    for (code, lang) in [("en", "english"), ("fr", "french")] {
        let ds = data.join(format!("datasets/ecthr-xl-{code}"));
        let report = read_json(&ds.join("lexclipr.json"));
        let counts = report["rows"].as_object().unwrap();
        assert_eq!(counts.len(), 4, "{counts:?}");
        for (split, c) in counts {
            let left: u64 = c["left_out"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(
                c["rows"].as_u64().unwrap() as usize,
                rows[&(lang.to_owned(), split.clone())],
                "{code} {split}"
            );
            assert_eq!(
                c["rows"].as_u64().unwrap(),
                c["kept"].as_u64().unwrap() + left,
                "{code} {split}"
            );
            // Kept rows are topics (or merged into one); each topic is in the split's qrels.
            let topics = report["topics"][split].as_u64().unwrap();
            assert_eq!(
                topics,
                c["kept"].as_u64().unwrap() - c["merged"].as_u64().unwrap()
            );
            let qrels = std::fs::read_to_string(ds.join(format!("qrels/{split}.tsv"))).unwrap();
            let in_qrels: std::collections::BTreeSet<&str> = qrels
                .lines()
                .map(|l| l.split_whitespace().next().unwrap())
                .collect();
            assert_eq!(in_qrels.len() as u64, topics, "{code} {split}");
        }
        let manifest = read_json(&ds.join("manifest.json"));
        assert_eq!(manifest["language"], code);
        assert_eq!(
            manifest["corpus_language"],
            if code == "en" {
                serde_json::Value::Null
            } else {
                "en".into()
            }
        );
        assert!(manifest["files"]["qrels/train_all.tsv"].is_string());
        let card = std::fs::read_to_string(ds.join("card.md")).unwrap();
        assert!(card.contains("train_all (the guides published whole"), "{card}");
        assert!(card.contains("Split certificate: passed"), "{card}");
    }
    // The measured counts: what is left out, and why.
    let en = read_json(&data.join("datasets/ecthr-xl-en/lexclipr.json"));
    assert_eq!(en["rows"]["test"]["kept"], 249);
    assert_eq!(en["rows"]["test"]["left_out"]["no_judgment"], 109);
    assert_eq!(en["rows"]["val"]["merged"], 1);
    let fr = read_json(&data.join("datasets/ecthr-xl-fr/lexclipr.json"));
    assert_eq!(fr["rows"]["test"]["left_out"]["missing_paragraph"], 1);
    assert_eq!(fr["rows"]["train_all"]["kept"], 89);
    assert_eq!(fr["english_links"], 104);
    let links = std::fs::read_to_string(data.join("datasets/ecthr-xl-fr/english_topics.jsonl")).unwrap();
    assert_eq!(links.lines().count(), 104);

    // The union of English and French: every topic of the two in its split, or left out by reason;
    // its train split less what any of the seven languages evaluates.
    let all = read_json(&data.join("datasets/ecthr-xl-all/lexclipr.json"));
    for split in ["train", "val", "test"] {
        let c = &all["topics"][split];
        let languages = en["topics"][split].as_u64().unwrap() + fr["topics"][split].as_u64().unwrap();
        assert_eq!(c["topics"].as_u64().unwrap(), languages, "{split}");
        let left: u64 = c["left_out"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(c["kept"].as_u64().unwrap() + left, languages, "{split}");
        let qrels =
            std::fs::read_to_string(data.join(format!("datasets/ecthr-xl-all/qrels/{split}.tsv"))).unwrap();
        let topics: std::collections::BTreeSet<&str> = qrels
            .lines()
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(topics.len() as u64, c["kept"].as_u64().unwrap(), "{split}");
    }
    assert_eq!(
        all["topics"]["test"]["kept"],
        249 + 261,
        "test is the languages' test, whole"
    );
    let leaked = all["topics"]["train"]["left_out"]["cited_in_an_evaluation_split"]
        .as_u64()
        .unwrap();
    assert!(leaked > 0, "{all}");
    assert!(
        all["left_out"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("fr train ")),
        "{all}"
    );
    let manifest = read_json(&data.join("datasets/ecthr-xl-all/manifest.json"));
    assert!(
        manifest["language"].is_null(),
        "queries in several languages: {manifest}"
    );
    assert_eq!(manifest["corpus_language"], "en");

    // BM25 on each test split: the analysers chosen, and the figures.
    for (code, query, want) in [
        ("en", None, [0.2390, 0.3641, 0.4890]),
        ("fr", Some("french"), [0.1274, 0.2116, 0.3081]),
    ] {
        let name = format!("ecthr-xl-{code}");
        let out = lexbench(&data, &["run", "bm25", "--dataset", &name, "--split", "test"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run = data.join(format!("runs/{name}/test/bm25.trec"));
        let side = read_json(&run.with_extension("json"));
        let config = &side["config"];
        assert_eq!(config["language"], "english", "{config}");
        assert_eq!(config["query_language"].as_str(), query, "{config}");
        let ds = data.join(format!("datasets/{name}"));
        let out = lexbench(
            &data,
            &[
                "--format",
                "json",
                "eval",
                run.to_str().unwrap(),
                ds.join("qrels/test.tsv").to_str().unwrap(),
                "--pools",
                ds.join("pools.jsonl").to_str().unwrap(),
                "-m",
                "R@2%,R@5%,R@10%",
            ],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let eval: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for (m, w) in ["R@2%", "R@5%", "R@10%"].iter().zip(want) {
            let got = eval["measures"][*m].as_f64().unwrap();
            assert!((got - w).abs() < 5e-5, "{code} {m}: {got} vs {w}");
        }
    }

    // The board's cross-lingual section: BM25 (the harness's baseline) and a seeded random ranking
    // on both test splits, English first, each language's cells marked against its own BM25.
    let ok = |out: std::process::Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    ok(lexbench(
        &data,
        &[
            "submit",
            "--baseline",
            "--dataset",
            "ecthr-xl-fr,ecthr-xl-en",
            "--splits",
            "test",
        ],
    ));
    for code in ["fr", "en"] {
        let name = format!("ecthr-xl-{code}");
        ok(lexbench(
            &data,
            &[
                "run",
                "random",
                "--dataset",
                &name,
                "--split",
                "test",
                "--seed",
                "7",
            ],
        ));
        let run = data.join(format!("runs/{name}/test/random.trec"));
        ok(lexbench(
            &data,
            &[
                "submit",
                run.to_str().unwrap(),
                "--dataset",
                &name,
                "--split",
                "test",
                "--name",
                "seeded random",
            ],
        ));
    }
    ok(lexbench(&data, &["leaderboard"]));
    let page = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    let at = page.find("## Cross-lingual (LexCLiPR)").expect("the section");
    assert!(
        at < page.find("## ecthr-xl-en").unwrap(),
        "before the languages' own boards"
    );
    let table: Vec<&str> = page[at..]
        .lines()
        .filter(|l| l.starts_with("| "))
        .take_while(|l| !l.starts_with("| system"))
        .collect();
    assert_eq!(table.len(), 3, "{table:?}");
    assert!(
        table[0].starts_with(
            "| queries | language | test topics | BM25 R@2% | BM25 R@5% | BM25 R@10% | seeded random R@2%"
        ),
        "{}",
        table[0]
    );
    // English first, with its test topics; BM25's R@10% is the figure checked above, unmarked (the
    // baseline); random is significantly worse than BM25 in both languages.
    assert!(
        table[1].starts_with("| en | english | 249 | 23.90 | 36.41 | 48.90 |"),
        "{}",
        table[1]
    );
    assert!(
        table[2].starts_with("| fr | french | 261 | 12.74 | 21.16 | 30.81 |"),
        "{}",
        table[2]
    );
    for row in &table[1..] {
        let random_r10 = row.split('|').nth(9).unwrap();
        assert!(random_r10.contains('▼'), "{row}");
    }
    let html = std::fs::read_to_string(data.join("leaderboard/site/index.html")).unwrap();
    assert!(html.contains("<h2 id=\"cross-lingual\">Cross-lingual (LexCLiPR)</h2>"));

    let out = lexbench(
        &data,
        &["import", "lexclipr", dir.to_str().unwrap(), "--lang", "german"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown language \"german\""));
    let _ = std::fs::remove_dir_all(&data);
}
