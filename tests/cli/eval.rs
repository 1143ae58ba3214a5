//! End-to-end tests of `lexbench eval`.
//!
//! Properties checked:
//! - on the trec_eval reference case (`core/tests/data/trec_eval`, expected values from trec_eval 9),
//!   the human report matches `trec_eval -c -m map -m Rprec -m recall.100 -m ndcg_cut.10` to 4 decimals;
//! - the JSON report carries full-precision means, per-topic values and the ignored/missing topics;
//! - R@k% is reported when pools are given and refused without them;
//! - bad input exits with code 2 and prints the error chain once, naming file and line.

use crate::common::lexbench_no_data;
use std::path::{Path, PathBuf};

fn case(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("core/tests/data/trec_eval")
        .join(file)
        .to_string_lossy()
        .into_owned()
}

fn expected() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(case("expected.json")).unwrap()).unwrap()
}

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lexbench-cli-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn human_report_matches_trec_eval_to_four_decimals() {
    let out = lexbench_no_data(&["eval", &case("run.trec"), &case("qrels.txt")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let exp = expected();
    // trec_eval names → ours: map → AP, Rprec → RPrec, recall_100 → R@100, ndcg_cut_10 → nDCG@10.
    for name in ["AP", "RPrec", "R@100", "nDCG@10"] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} line in\n{stdout}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], "all");
        let want = format!("{:.4}", exp["mean"][name].as_f64().unwrap());
        assert_eq!(cols[2], want, "{name}");
    }
    assert!(stdout.contains("num_q"), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("3 qrels topic(s) have no results"), "{stderr}");
    assert!(stderr.contains("2 run topic(s) are not in the qrels"), "{stderr}");
}

#[test]
fn json_report_has_full_precision_and_per_topic_values() {
    let out = lexbench_no_data(&[
        "eval",
        &case("run.trec"),
        &case("qrels.txt"),
        "--measures",
        "AP,RR,P@5",
        "--per-topic",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let exp = expected();
    for name in ["AP", "RR", "P@5"] {
        let got = doc["measures"][name].as_f64().unwrap();
        let want = exp["mean"][name].as_f64().unwrap();
        assert!((got - want).abs() < 1e-12, "{name}: {got} vs {want}");
        let t = doc["per_topic"]["T05"][name].as_f64().unwrap();
        assert!((t - exp["per_topic"]["T05"][name].as_f64().unwrap()).abs() < 1e-12);
    }
    assert_eq!(doc["num_topics"], 30);
    assert_eq!(doc["ignored_topics"], serde_json::json!(["X01", "X02"]));
    assert_eq!(doc["missing_topics"], serde_json::json!(["T11", "T23", "T29"]));
}

#[test]
fn pool_relative_recall_needs_pools() {
    let qrels = scratch("p.qrels", "a 0 p2 1\n");
    let run = scratch("p.run", "a Q0 p1 1 3 t\na Q0 p2 2 2 t\na Q0 p3 3 1 t\n");
    // 30 paragraphs: 5% → ⌈1.5⌉ = 2 → p2 is inside; 2% → ⌈0.6⌉ = 1 → it is not.
    let docs: Vec<String> = (1..=30).map(|i| format!("p{i}")).collect();
    let pools = scratch(
        "p.pools.jsonl",
        &format!("{}\n", serde_json::json!({"topic": "a", "docs": docs})),
    );
    let p = |x: &PathBuf| x.to_string_lossy().into_owned();
    let out = lexbench_no_data(&[
        "eval",
        &p(&run),
        &p(&qrels),
        "--pools",
        &p(&pools),
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["measures"]["R@2%"], 0.0);
    assert_eq!(doc["measures"]["R@5%"], 1.0);
    assert_eq!(doc["measures"]["R@10%"], 1.0);

    let out = lexbench_no_data(&["eval", &p(&run), &p(&qrels), "-m", "R@5%"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pools.jsonl"));
}

#[test]
fn bad_input_exits_2_naming_file_and_line() {
    let qrels = scratch("b.qrels", "a 0 p2 1\n");
    let run = scratch("b.run", "a Q0 p1 1 3 t\na Q0 p2 2 two t\n");
    let out = lexbench_no_data(&["eval", &run.to_string_lossy(), &qrels.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(&format!("{}:2:", run.display())), "{stderr}");
    assert!(stderr.contains("score \"two\""), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert!(out.stdout.is_empty());

    let out = lexbench_no_data(&[
        "eval",
        &run.to_string_lossy(),
        &qrels.to_string_lossy(),
        "-m",
        "bpref",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown measure \"bpref\""));
}

#[test]
fn input_that_is_not_utf8_names_file_and_line() {
    let qrels = scratch("u.qrels", "a 0 p2 1\n");
    let dir = qrels.parent().unwrap().to_owned();
    // Line 2 ends in Latin-1 "é" (0xE9), as a run saved by a legacy editor would.
    let run = dir.join("u.run");
    std::fs::write(&run, b"a Q0 p1 1 3 t\na Q0 p2 2 2 caf\xe9\n").unwrap();
    let out = lexbench_no_data(&["eval", &run.to_string_lossy(), &qrels.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!("{}:2: not valid UTF-8", run.display())),
        "{stderr}"
    );
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    // The same for the qrels.
    let bad_qrels = dir.join("u2.qrels");
    std::fs::write(&bad_qrels, b"a 0 p1 1\na 0 p\xff 1\n").unwrap();
    let good_run = scratch("u2.run", "a Q0 p1 1 3 t\n");
    let out = lexbench_no_data(&["eval", &good_run.to_string_lossy(), &bad_qrels.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!("{}:2: not valid UTF-8", bad_qrels.display())),
        "{stderr}"
    );
}

#[test]
fn io_errors_print_the_path_and_the_cause_once() {
    let qrels = scratch("io.qrels", "a 0 p2 1\n");
    let missing = qrels.with_file_name("no-such-run.trec");
    let out = lexbench_no_data(&["eval", &missing.to_string_lossy(), &qrels.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert_eq!(
        stderr.matches(&*missing.to_string_lossy()).count(),
        1,
        "the path once: {stderr}"
    );
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "the cause once: {stderr}"
    );
    // A directory where the qrels should be: a read error, also printed once.
    let dir = qrels.parent().unwrap().to_string_lossy().into_owned();
    let out = lexbench_no_data(&["eval", &qrels.to_string_lossy(), &dir]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr.matches("Is a directory").count(),
        1,
        "the cause once: {stderr}"
    );
}
