//! End-to-end test of `lexbench pipeline` on the embedded sample.
//!
//! Properties checked:
//! - the pipeline runs every stage offline (loopback only) and exits 0;
//! - it writes the raw store, parsed records, a certified ECtHR dataset and a BSARD dataset (with its
//!   legislative graph), BM25 runs, leaderboard entries, the Markdown and HTML leaderboards;
//! - the leaderboard lists BM25 with, for each split, the scores `lexbench eval` gives on the same run
//!   (so the harness reports exactly what the evaluator computes);
//! - every qrel of the built dataset walks back to a guide heading, a raw citation and the raw-store
//!   objects of the guide and the judgment (provenance is complete);
//! - a second run on the same directory reuses the crawl and rebuilds the identical dataset.

use crate::common::{lexbench, read_json as json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn pipeline_on_the_sample() {
    let data: PathBuf =
        lexbench_core::testing::scratch_root().join(format!("lexbench-pipeline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let out = lexbench(&data, &["pipeline"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for stage in [
        "[1/5] crawl",
        "[2/5] parse",
        "[3/5] build + split",
        "[4/5] bm25 baseline",
        "[5/5] leaderboard",
    ] {
        assert!(stderr.contains(stage), "{stage} missing from\n{stderr}");
    }
    assert!(stderr.contains("24/24 citations resolved"), "{stderr}");
    for f in [
        "raw/manifest.jsonl",
        "raw/index/hudoc_metadata.jsonl",
        "parsed/ecthr/judgments.jsonl",
        "parsed/ecthr/guides.jsonl",
        "datasets/ecthr/manifest.json",
        "datasets/ecthr/certificate.json",
        "datasets/bsard/graph.json",
        "datasets/bsard/manifest.json",
        "leaderboard/index.md",
        "leaderboard/site/index.html",
    ] {
        assert!(data.join(f).is_file(), "{f} not written");
    }
    let cert = json(&data.join("datasets/ecthr/certificate.json"));
    assert_eq!(cert["passed"], true);

    // `stats` puts the dataset's figures beside the paper's (issue 30, item 3).
    let st = lexbench(&data, &["stats", "ecthr", "--format", "json"]);
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let rows = st["beside_paper"].as_array().expect("beside_paper");
    let train = rows.iter().find(|r| r["measure"] == "pairs, train").unwrap();
    assert_eq!(train["paper"], "2,230");
    assert_eq!(train["here"], st["stats"]["splits"]["train"]["pairs"].to_string());
    let human = lexbench(&data, &["stats", "ecthr"]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("beside the paper"));

    // The leaderboard's BM25 scores equal `lexbench eval` on the same runs.
    let index = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(index.contains("| BM25 ✓ |"), "the harness ran it: {index}");
    let ds = data.join("datasets/ecthr");
    let mut checked = BTreeMap::new();
    for entry in std::fs::read_dir(data.join("leaderboard/entries")).unwrap() {
        let e = json(&entry.unwrap().path());
        assert_eq!(e["system"], "BM25");
        // The harness ran BM25 itself: a verified entry, rechecked bit for bit.
        assert_eq!(e["provenance"]["model"]["kind"], "bm25", "{e}");
        let id = e["id"].as_str().unwrap();
        let re = lexbench(&data, &["leaderboard", "--recheck", id]);
        assert!(re.status.success(), "{}", String::from_utf8_lossy(&re.stderr));
        let dataset = e["dataset"]["name"].as_str().unwrap().to_owned();
        let split = e["dataset"]["split"].as_str().unwrap().to_owned();
        let dir = data.join("datasets").join(&dataset);
        let run = data.join(format!("runs/{dataset}/{split}/bm25.trec"));
        let qrels = dir.join(format!("qrels/{split}.tsv"));
        let pools = dir.join("pools.jsonl");
        // ECtHR ranks each judgment's paragraphs (R@k% of the pool); BSARD the whole corpus.
        let measures: &[&str] = if dataset == "ecthr" {
            &["R@2%", "R@5%", "R@10%"]
        } else {
            &["R@100", "R@200", "R@500", "AP", "RPrec"]
        };
        let joined = measures.join(",");
        let mut args = vec![
            "eval",
            run.to_str().unwrap(),
            qrels.to_str().unwrap(),
            "-m",
            &joined,
        ];
        if dataset == "ecthr" {
            args.extend(["--pools", pools.to_str().unwrap()]);
        }
        args.extend(["--format", "json"]);
        let eval = lexbench(&data, &args);
        assert!(eval.status.success(), "{}", String::from_utf8_lossy(&eval.stderr));
        let direct: serde_json::Value = serde_json::from_slice(&eval.stdout).unwrap();
        for m in measures {
            let m = *m;
            let board = e["scores"][m].as_f64().unwrap_or_else(|| panic!("{m} in {e}"));
            let want = direct["measures"][m].as_f64().unwrap();
            assert!(
                (board - want).abs() < 1e-12,
                "{split} {m}: leaderboard {board}, eval {want}"
            );
            // And the Markdown shows it (in percent, two decimals).
            assert!(
                index.contains(&format!("{:.2}", want * 100.0)),
                "{split} {m} {want} not in\n{index}"
            );
        }
        *checked.entry(dataset).or_insert(0) += 1;
    }
    let want: BTreeMap<String, i32> = [("ecthr".to_owned(), 3), ("bsard".to_owned(), 1)].into();
    assert_eq!(
        checked, want,
        "ECtHR test, unseen_query, unseen_guide; BSARD test"
    );

    // The regression file for the sample: BM25's expected scores, checked OK / OKish / FAIL.
    let regression =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("leaderboard/regressions/sample-ecthr-test-bm25.toml");
    let check = lexbench(&data, &["leaderboard", "--check", regression.to_str().unwrap()]);
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(check.status.success(), "{report}");
    assert!(report.contains("3 OK, 0 OKish, 0 FAIL"), "{report}");

    // Provenance: every qrel → audit record → guide heading + raw citation + raw objects.
    let audit = lines(&ds.join("audit.jsonl"));
    let mut by_qrel: BTreeMap<(String, u64), Vec<&serde_json::Value>> = BTreeMap::new();
    for a in &audit {
        by_qrel
            .entry((
                a["topic"].as_str().unwrap().to_owned(),
                a["paragraph"].as_u64().unwrap(),
            ))
            .or_default()
            .push(a);
    }
    let manifest = lines(&data.join("raw/manifest.jsonl"));
    let stored: std::collections::BTreeSet<&str> =
        manifest.iter().filter_map(|m| m["sha256"].as_str()).collect();
    let guides = lines(&data.join("parsed/ecthr/guides.jsonl"));
    let mut qrels = 0;
    for split in ["train", "val", "test", "unseen_query", "unseen_guide"] {
        let text = std::fs::read_to_string(ds.join(format!("qrels/{split}.tsv"))).unwrap();
        for line in text.lines() {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let num: u64 = cols[2].rsplit(':').next().unwrap().parse().unwrap();
            let sources = &by_qrel[&(cols[0].to_owned(), num)];
            for s in sources {
                assert!(stored.contains(s["judgment_sha256"].as_str().unwrap()));
                assert!(stored.contains(s["guide_sha256"].as_str().unwrap()));
                let path: Vec<&str> = s["path"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap())
                    .collect();
                assert!(path.len() >= 2, "a heading path: {path:?}");
                let guide = guides.iter().find(|g| g["guide"]["id"] == s["guide"]).unwrap();
                let query = guide["queries"].as_array().unwrap().iter().find(|q| {
                    q["path"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|p| p.as_str().unwrap())
                        .collect::<Vec<_>>()
                        == path
                });
                let query = query.unwrap_or_else(|| panic!("no heading {path:?}"));
                let raw = s["raw"].as_str().unwrap();
                assert!(
                    query["citations"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|c| c["raw"] == raw)
                );
            }
            qrels += 1;
        }
    }
    // scripts/make_sample.py cites 24 (heading, judgment) pairs; five of them cite two paragraphs.
    assert_eq!(qrels, 29);

    // A second run reuses the crawl and rebuilds the same dataset.
    let first = json(&ds.join("manifest.json"));
    let again = lexbench(&data, &["pipeline"]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains("using the crawl already in"), "{stderr}");
    assert_eq!(json(&ds.join("manifest.json")), first);
    let _ = std::fs::remove_dir_all(&data);
}
