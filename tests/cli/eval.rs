//! End-to-end tests of `lexbench eval`.
//!
//! Properties checked:
//! - on the trec_eval reference case (`core/tests/data/trec_eval`, expected values from trec_eval 9),
//!   the human report matches `trec_eval -c -m map -m Rprec -m recall.100 -m ndcg_cut.10` to 4 decimals;
//! - the JSON report carries full-precision means, per-topic values and the ignored/missing topics;
//! - R@k% is reported when pools are given and refused without them;
//! - bad input exits with code 2 and prints the error chain once, naming file and line;
//! - run lines with fields after the sixth give the same report plus one warning counting them;
//! - `--min-rel N` (trec_eval's `-l`) moves the counting measures, not nDCG, and refuses N < 0;
//! - a qrels topic missing from the run counts in the mean with 0, as with `trec_eval -c`.

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
    let dir =
        lexbench_core::testing::scratch_root().join(format!("lexbench-cli-eval-{}", std::process::id()));
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

/// Case (a) of `core/tests/trec_eval_cases.rs` through the binary: fields after the sixth column are
/// ignored, as trec_eval does, with one warning counting the lines; the report is byte for byte the
/// report of the run without them.
#[test]
fn extra_fields_after_the_sixth_are_ignored_with_one_warning() {
    let qrels = scratch("x.qrels", "g1 0 a 3\ng1 0 b 2\ng1 0 c 1\ng1 0 d 0\n");
    let plain = scratch(
        "x-plain.run",
        "g1 Q0 a 1 0.9 s\ng1 Q0 c 2 0.5 s\ng1 Q0 b 3 0.5 s\ng1 Q0 d 4 0.1 s\n",
    );
    let decorated = scratch(
        "x-dec.run",
        "g1 Q0 a 1 0.9 s\ng1 Q0 c 2 0.5 s 7 x\ng1 Q0 b 3 0.5 s\tnote\ng1 Q0 d 4 0.1 s extra\n",
    );
    let p = |x: &PathBuf| x.to_string_lossy().into_owned();
    let args = |run: &PathBuf| {
        let run = p(run);
        let out = lexbench_no_data(&["eval", &run, &p(&qrels), "-m", "AP,P@2,nDCG@3", "--per-topic"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (want, quiet) = args(&plain);
    let (got, stderr) = args(&decorated);
    assert_eq!(got, want);
    assert!(!quiet.contains("warning"), "{quiet}");
    assert_eq!(stderr.matches("warning:").count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: 3 lines of {} have fields after the sixth (first: line 2); ignored, as trec_eval does",
            decorated.display()
        )),
        "{stderr}"
    );
    // By hand: c and b tie at 0.5 and doc ids descending put c first: a (3), c (1), b (2), d (0).
    // Relevant (≥ 1): a, c, b at ranks 1-3, R = 3 → AP = (1/1 + 2/2 + 3/3)/3 = 1, P@2 = 2/2 = 1.
    let all: Vec<Vec<&str>> = want
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.get(1) == Some(&"all"))
        .collect();
    assert!(all.contains(&vec!["AP", "all", "1.0000"]), "{want}");
    assert!(all.contains(&vec!["P@2", "all", "1.0000"]), "{want}");
}

/// Case (c) through the binary: `--min-rel 2` is trec_eval's `-l2`; nDCG keeps the grades as gains.
#[test]
fn min_rel_changes_the_counting_measures_but_not_ndcg() {
    let qrels = scratch(
        "m.qrels",
        "g1 0 a 3\ng1 0 b 2\ng1 0 c 1\ng1 0 d 0\ng1 0 e 2\ng1 0 f 3\ng1 0 g 1\n",
    );
    let run = scratch(
        "m.run",
        "g1 Q0 a 1 0.9 s\ng1 Q0 x 2 0.8 s\ng1 Q0 c 3 0.5 s\ng1 Q0 e 4 0.5 s\n\
         g1 Q0 d 5 0.4 s\ng1 Q0 b 6 0.3 s\ng1 Q0 y 7 0.2 s\n",
    );
    let p = |x: &PathBuf| x.to_string_lossy().into_owned();
    let eval = |min_rel: &str| -> serde_json::Value {
        let out = lexbench_no_data(&[
            "eval",
            &p(&run),
            &p(&qrels),
            "-m",
            "P@5,R@10,AP,RPrec,nDCG@5",
            "--min-rel",
            min_rel,
            "--format",
            "json",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Ranking a (3), x, e (2), c (1) — e before c: tie at 0.5, doc id descending — d (0), b (2), y.
    // --min-rel 2: R = 4 (a, b, e, f), found at ranks 1, 3, 6: P@5 = 2/5, R@10 = 3/4,
    // AP = (1/1 + 2/3 + 3/6)/4 = 13/24, RPrec = 2/4; nDCG@5 = 4.430676558073393 / 7.1409951840957.
    let two = eval("2");
    assert_eq!(two["min_rel"], 2);
    let want = [
        ("P@5", 0.4),
        ("R@10", 0.75),
        ("AP", 13.0 / 24.0),
        ("RPrec", 0.5),
        ("nDCG@5", 0.6204564551368581),
    ];
    for (name, v) in want {
        let got = two["measures"][name].as_f64().unwrap();
        assert!((got - v).abs() < 1e-12, "{name}: {got} vs {v}");
    }
    // Default 1: R = 6, found at 1, 3, 4, 6: P@5 = 3/5, AP = 37/72; nDCG@5 the same as above.
    let one = eval("1");
    assert_eq!(one["min_rel"], 1);
    assert!((one["measures"]["P@5"].as_f64().unwrap() - 0.6).abs() < 1e-12);
    assert!((one["measures"]["AP"].as_f64().unwrap() - 37.0 / 72.0).abs() < 1e-12);
    assert_eq!(one["measures"]["nDCG@5"], two["measures"]["nDCG@5"]);

    let out = lexbench_no_data(&["eval", &p(&run), &p(&qrels), "--min-rel", "-1"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--min-rel") && stderr.contains("min_rel -1"),
        "{stderr}"
    );
}

/// Case (b) through the binary: `lexbench eval` always averages as `trec_eval -c` does.
#[test]
fn a_qrels_topic_missing_from_the_run_counts_as_with_trec_eval_c() {
    let qrels = scratch("c.qrels", "t1 0 d1 1\nt1 0 d2 1\nt2 0 d5 1\nt3 0 d7 1\n");
    let run = scratch(
        "c.run",
        "t1 Q0 d1 1 3 r\nt1 Q0 d3 2 2 r\nt1 Q0 d2 3 1 r\nt2 Q0 d4 1 2 r\nt2 Q0 d5 2 1 r\n",
    );
    let out = lexbench_no_data(&[
        "eval",
        &run.to_string_lossy(),
        &qrels.to_string_lossy(),
        "-m",
        "AP,P@5",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    // t1 AP 5/6, P@5 2/5; t2 AP 1/2, P@5 1/5; t3 absent: 0, 0. Over 3 topics: AP 4/9 = 0.4444,
    // P@5 1/5 = 0.2000 (trec_eval without -c: 2 topics, AP 0.6667, P@5 0.3000).
    let value = |name: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().nth(2).unwrap().to_owned())
            .unwrap_or_else(|| panic!("no {name} in\n{stdout}"))
    };
    assert_eq!(value("num_q"), "3");
    assert_eq!(value("AP"), "0.4444");
    assert_eq!(value("P@5"), "0.2000");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("1 qrels topic(s) have no results in the run and score 0: t3")
    );
}
