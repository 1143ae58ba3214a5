//! End-to-end test of the zero-shot dense run with the real all-MiniLM-L6-v2 (`scripts/fetch-models`).
//!
//! Properties checked: on the sample's datasets (built by `lexbench pipeline`), `lexbench run dense`
//! ranks every topic's whole pool (ECtHR) or the corpus (BSARD) in trec_eval order with scores in
//! [-1, 1]; the leaderboard accepts the run; a second run encodes no document again (the embedding
//! cache) and writes the identical run; ColBERT and the cross-encoder (weights the checkpoint lacks are
//! seeded) are deterministic, and the cross-encoder asks for the BM25 run it reranks; a missing model
//! folder is an error naming it.

use crate::common::{lexbench, sample_data};
use std::collections::BTreeMap;

fn model() -> String {
    crate::common::minilm().to_string_lossy().into_owned()
}

#[test]
fn dense_runs_on_the_sample() {
    let model = model();
    let data = lexbench_core::testing::scratch_root().join(format!("lexbench-dense-{}", std::process::id()));
    sample_data(&data);

    for (dataset, split) in [("ecthr", "test"), ("bsard", "test")] {
        let args = [
            "run",
            "dense",
            "--model",
            &model,
            "--dataset",
            dataset,
            "--split",
            split,
            "--system",
            "minilm",
        ];
        let out = lexbench(&data, &args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run_path = data.join(format!("runs/{dataset}/{split}/minilm.trec"));
        let first = std::fs::read_to_string(&run_path).unwrap();
        // Every topic of the split has a ranking; ranks are 1.. in score order; cosines are in [-1, 1].
        let mut per_topic: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for line in first.lines() {
            let c: Vec<&str> = line.split_whitespace().collect();
            per_topic.entry(c[0]).or_default().push(c[4].parse().unwrap());
        }
        let split_json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(data.join(format!("datasets/{dataset}/splits/{split}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(per_topic.len(), split_json["topics"].as_array().unwrap().len());
        for scores in per_topic.values() {
            assert!(scores.windows(2).all(|w| w[0] >= w[1]));
            assert!(scores.iter().all(|s| (-1.0001..=1.0001).contains(s)));
        }
        if dataset == "ecthr" {
            // The sample's judgments have 20 paragraphs each: the whole pool is ranked.
            assert!(per_topic.values().all(|s| s.len() == 20));
        }
        let sub = lexbench(
            &data,
            &[
                "submit",
                run_path.to_str().unwrap(),
                "--dataset",
                dataset,
                "--split",
                split,
                "--name",
                "MiniLM zero-shot",
            ],
        );
        assert!(sub.status.success(), "{}", String::from_utf8_lossy(&sub.stderr));

        // Again: documents come from the cache, the run is identical.
        let again = lexbench(&data, &args);
        assert!(again.status.success());
        assert!(
            String::from_utf8_lossy(&again.stdout).contains("0 documents encoded now"),
            "{stdout}"
        );
        assert_eq!(std::fs::read_to_string(&run_path).unwrap(), first);
    }
    // ColBERT (seeded projection) and the cross-encoder (seeded head, reranking BM25's top 10) are
    // deterministic: two runs write the same file; every test topic is ranked.
    for (system, extra) in [("colbert", vec![]), ("cross-encoder", vec!["--depth", "10"])] {
        let mut args = vec![
            "run",
            system,
            "--model",
            &model,
            "--dataset",
            "ecthr",
            "--split",
            "test",
        ];
        args.extend(extra.iter().copied());
        let out = lexbench(&data, &args);
        assert!(
            out.status.success(),
            "{system}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = data.join(format!("runs/ecthr/test/{system}.trec"));
        let first = std::fs::read_to_string(&path).unwrap();
        assert!(lexbench(&data, &args).status.success());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            first,
            "{system} is not deterministic"
        );
        let topics: std::collections::BTreeSet<&str> = first
            .lines()
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(topics.len(), 4, "{system}");
        if system == "cross-encoder" {
            assert!(String::from_utf8_lossy(&out.stdout).contains("seeded untrained"));
            assert!(first.lines().count() <= 4 * 10);
        }
    }
    let cross_val = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "cross-encoder",
            "--model",
            &model,
            "--dataset",
            "ecthr",
            "--split",
            "val",
        ];
        args.extend_from_slice(extra);
        lexbench(&data, &args)
    };
    let out = cross_val(&["--depth", "10"]);
    assert_eq!(out.status.code(), Some(2), "no BM25 run for val yet");
    assert!(String::from_utf8_lossy(&out.stderr).contains("lexbench run bm25"));
    // Without a depth, the cross-encoder scores every paragraph of each pool (the paper's protocol):
    // no BM25 run needed, 20 paragraphs per judgment of the sample.
    let out = cross_val(&[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = std::fs::read_to_string(data.join("runs/ecthr/val/cross-encoder.trec")).unwrap();
    let side: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("runs/ecthr/val/cross-encoder.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(side["config"]["first_stage"], "the pool");
    assert_eq!(
        run.lines().count() as u64,
        side["topics"].as_u64().unwrap() * 20,
        "{run}"
    );

    let board = lexbench(&data, &["leaderboard"]);
    assert!(board.status.success());
    let index = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(index.contains("MiniLM zero-shot"), "{index}");

    let out = lexbench(
        &data,
        &[
            "run",
            "dense",
            "--model",
            "/nonexistent/model",
            "--dataset",
            "ecthr",
            "--split",
            "test",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/model"));
    let _ = std::fs::remove_dir_all(&data);
}
