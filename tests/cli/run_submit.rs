//! End-to-end tests of `lexbench run bm25`, `lexbench submit` and `lexbench leaderboard`.
//!
//! Properties checked, on tiny datasets written here in the core layout:
//! - `run bm25` writes DATA/runs/D/S/bm25.trec and bm25.json (config with the resolved analyzer, seed,
//!   dataset hash, timings); a pooled dataset ranks only each topic's pool; `--k1/--b` reach the
//!   sidecar; out-of-range parameters exit 2; `--variant rank-bm25-okapi` writes its own run
//!   (`rank-bm25-okapi.trec`, rank_bm25's defaults in the sidecar) and refuses an analyzer or corpus
//!   statistics;
//! - the BM25 ranking is sensible on both languages (the paragraph about the query ranks first; French
//!   matches across accents and inflections);
//! - `submit` accepts the run, and the entry's scores equal `lexbench eval` of the same run with the
//!   dataset's qrels and pools; a malformed run exits 1 naming the line and leaves the leaderboard
//!   untouched;
//! - a run that is not UTF-8 is rejected like any other invalid run (exit 1, file and line named);
//!   a missing run is an I/O error (exit 2) whose path and cause are printed once;
//! - `leaderboard` writes index.md, site/index.html and a plot listing the system, and `--check`
//!   prints OK / OKish / FAIL and exits 1 on a FAIL.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::lexbench;
use lexbench_core::testing::TinyDataset;

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// ECtHR-like: two judgments of four paragraphs; two queries, each paired with both judgments.
fn ecthr_like(data: &Path) -> String {
    ecthr_like_named(data, "mini-ecthr")
}

/// [`ecthr_like`] under another dataset name.
fn ecthr_like_named(data: &Path, name: &str) -> String {
    let paras = [
        (
            "001-100001:1",
            "The applicant was born in 1970 and lives in Kyiv.",
        ),
        (
            "001-100001:2",
            "He complained that he had been tortured by police officers during questioning.",
        ),
        (
            "001-100001:3",
            "The Government contested the admissibility of the application.",
        ),
        (
            "001-100001:4",
            "The Court reiterates that the right to a fair trial includes access to a lawyer.",
        ),
        ("001-100002:1", "The applicant company publishes a newspaper."),
        (
            "001-100002:2",
            "The domestic courts ordered the newspaper to pay damages for defamation.",
        ),
        (
            "001-100002:3",
            "Freedom of expression protects journalists reporting on matters of public interest.",
        ),
        (
            "001-100002:4",
            "The applicant was ill-treated in police custody, which amounts to torture.",
        ),
    ];
    let mut ds = TinyDataset::new(name);
    for (id, text) in paras {
        ds = ds.doc(id, text);
    }
    let queries = [
        (
            "torture",
            "Prohibition of torture. Ill-treatment by police officers",
        ),
        ("expression", "Freedom of expression of journalists and the press"),
    ];
    for (q, text) in queries {
        for item in ["001-100001", "001-100002"] {
            let t = format!("{q}/{item}");
            let rel = match (q, item) {
                ("torture", "001-100001") => "001-100001:2",
                ("torture", _) => "001-100002:4",
                (_, "001-100001") => "001-100001:4",
                _ => "001-100002:3",
            };
            let pool: Vec<String> = (1..=4).map(|n| format!("{item}:{n}")).collect();
            let pool: Vec<&str> = pool.iter().map(String::as_str).collect();
            ds = ds.topic(&t, q, text, &[rel], "test").pool(&t, &pool);
        }
    }
    ds.open_in(data).unwrap().hash()
}

/// BSARD-like: French articles, no pools.
fn bsard_like(data: &Path) {
    let arts = [
        (
            "1",
            "Le bailleur est tenu de délivrer au preneur le bien loué en bon état de réparations.",
        ),
        (
            "2",
            "Les héritiers succèdent aux biens du défunt selon l'ordre établi par la loi.",
        ),
        (
            "3",
            "Le travailleur a droit à un préavis en cas de licenciement par l'employeur.",
        ),
        (
            "4",
            "L'étranger qui séjourne illégalement sur le territoire peut être éloigné.",
        ),
    ];
    let mut ds = TinyDataset::new("bsard-mini");
    for (id, text) in arts {
        ds = ds.doc(id, text);
    }
    let qs = [
        ("q1", "Mon employeur peut-il me licencier sans preavis ?", "3"),
        ("q2", "Qui herite des biens quand un parent decede ?", "2"),
    ];
    for (q, text, rel) in qs {
        ds = ds.topic(q, q, text, &[rel], "test");
    }
    ds.write_in(data).unwrap();
}

#[test]
fn run_submit_leaderboard_on_a_pooled_dataset() {
    let data = scratch("pooled");
    let hash = ecthr_like(&data);
    let out = ok(&lexbench(
        &data,
        &["run", "bm25", "--dataset", "mini-ecthr", "--split", "test"],
    ));
    assert!(out.contains("ranked 4 topics"), "{out}");
    let run = data.join("runs/mini-ecthr/test/bm25.trec");
    let text = std::fs::read_to_string(&run).unwrap();
    // Each topic ranks exactly its pool (4 paragraphs of its own judgment), the relevant one first.
    for topic in [
        "torture/001-100001",
        "torture/001-100002",
        "expression/001-100001",
        "expression/001-100002",
    ] {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{topic} ")))
            .collect();
        assert_eq!(lines.len(), 4, "{topic}\n{text}");
        let item = topic.split('/').nth(1).unwrap();
        assert!(
            lines
                .iter()
                .all(|l| l.split_whitespace().nth(2).unwrap().starts_with(item))
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("torture/001-100001 Q0 001-100001:2 1 ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("expression/001-100002 Q0 001-100002:3 1 ")),
        "{text}"
    );
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("runs/mini-ecthr/test/bm25.json")).unwrap())
            .unwrap();
    assert_eq!(side["dataset_hash"], hash.as_str());
    assert_eq!(side["git_revision"], "test-revision");
    assert_eq!(side["config"]["k1"], 0.9);
    assert_eq!(side["config"]["language"], "english");
    assert_eq!(side["seed"], 0);
    assert!(side["timings"]["index_s"].as_f64().is_some());

    // The run file, even lexbench's own BM25 run, is never the baseline (issue 29, item 4): the
    // harness records the baseline by running BM25 itself.
    let forged = lexbench(
        &data,
        &[
            "submit",
            run.to_str().unwrap(),
            "--dataset",
            "mini-ecthr",
            "--split",
            "test",
            "--name",
            "BM25",
        ],
    );
    assert_eq!(forged.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&forged.stderr).contains("lexbench submit --baseline"));
    // Submit the baseline; the entry's scores are `lexbench eval`'s on the run it made.
    let sub = ok(&lexbench(
        &data,
        &[
            "submit",
            "--baseline",
            "--dataset",
            "mini-ecthr",
            "--splits",
            "test",
            "--format",
            "json",
        ],
    ));
    let entries: serde_json::Value = serde_json::from_str(&sub).unwrap();
    let entry = entries[0].clone();
    assert_eq!(entry["provenance"]["status"], "verified");
    assert_eq!(entry["provenance"]["model"]["kind"], "bm25");

    let ds = data.join("datasets/mini-ecthr");
    let ev = ok(&lexbench(
        &data,
        &[
            "eval",
            run.to_str().unwrap(),
            ds.join("qrels/test.tsv").to_str().unwrap(),
            "--pools",
            ds.join("pools.jsonl").to_str().unwrap(),
            "--measures",
            "R@2%,R@5%,R@10%",
            "--format",
            "json",
        ],
    ));
    let ev: serde_json::Value = serde_json::from_str(&ev).unwrap();
    for m in ["R@2%", "R@5%", "R@10%"] {
        assert_eq!(entry["scores"][m], ev["measures"][m], "{m}");
    }
    assert_eq!(entry["scores"]["R@10%"], 1.0);
    assert_eq!(entry["run"]["sidecar"]["system"], "bm25");

    // A bad run: exit 1, the line named, nothing written.
    let board = ok(&lexbench(&data, &["leaderboard"]));
    assert!(board.contains("index.html"), "{board}");
    let before: Vec<_> = std::fs::read_dir(data.join("leaderboard/entries"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let md_before = std::fs::read(data.join("leaderboard/index.md")).unwrap();
    let bad = data.join("bad.trec");
    std::fs::write(
        &bad,
        "torture/001-100001 Q0 001-100001:2 1 3 x\ntorture/001-100001 Q0 001-100002:1 2 2 x\n",
    )
    .unwrap();
    let out = lexbench(
        &data,
        &[
            "submit",
            bad.to_str().unwrap(),
            "--dataset",
            "mini-ecthr",
            "--split",
            "test",
            "--name",
            "bad",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:2: document 001-100002:1 is not in the pool of topic torture/001-100001",
            bad.display()
        )),
        "{err}"
    );
    let after: Vec<_> = std::fs::read_dir(data.join("leaderboard/entries"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before, after);
    assert_eq!(
        md_before,
        std::fs::read(data.join("leaderboard/index.md")).unwrap()
    );

    // Rendering and regression checks.
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(md.contains("| BM25 ✓ | 100.00 | 100.00 | 100.00 |"), "{md}");
    assert!(data.join("leaderboard/site/index.html").is_file());
    assert!(
        std::fs::read_to_string(data.join("leaderboard/site/plots/mini-ecthr-test.svg"))
            .unwrap()
            .contains("BM25")
    );
    let reg = data.join("reg.toml");
    std::fs::write(&reg, "dataset = \"mini-ecthr\"\nsplit = \"test\"\nsystem = \"BM25\"\n[measures]\n\"R@10%\" = { expected = 1.0 }\n").unwrap();
    let out = ok(&lexbench(
        &data,
        &["leaderboard", "--check", reg.to_str().unwrap()],
    ));
    assert!(
        out.contains("OK     mini-ecthr/test/BM25") && out.contains("1 OK, 0 OKish, 0 FAIL"),
        "{out}"
    );
    std::fs::write(&reg, "dataset = \"mini-ecthr\"\nsplit = \"test\"\nsystem = \"BM25\"\n[measures]\n\"R@2%\" = { expected = 0.5 }\n").unwrap();
    let out = lexbench(&data, &["leaderboard", "--check", reg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL"));
}

/// A sidecar names the revision the binary was built from (build.rs), not the current directory's
/// checkout: run from a folder outside any checkout, without `LEXBENCH_GIT_REV`, it still records
/// the build's revision (a binary of an older revision run inside a newer checkout recorded the
/// checkout's).
#[test]
fn a_run_records_the_revision_the_binary_was_built_from() {
    let data = scratch("build-rev");
    ecthr_like(&data);
    let out = std::process::Command::new(crate::common::bin())
        .arg("--data")
        .arg(&data)
        .args(["run", "bm25", "--dataset", "mini-ecthr", "--split", "test"])
        .current_dir(&data)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .env_remove("LEXBENCH_GIT_REV")
        .output()
        .unwrap();
    ok(&out);
    assert!(
        !std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&data)
            .output()
            .is_ok_and(|o| o.status.success()),
        "{} is inside a git checkout: the test needs a folder outside one",
        data.display()
    );
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("runs/mini-ecthr/test/bm25.json")).unwrap())
            .unwrap();
    match option_env!("LEXBENCH_BUILD_REV") {
        Some(rev) => {
            assert_eq!(side["git_revision"], rev, "{side}");
            assert_eq!(rev.len(), 40, "{rev}");
        }
        // Built outside a checkout (a source tarball): nothing to record.
        None => assert!(side["git_revision"].is_null(), "{side}"),
    }
    std::fs::remove_dir_all(&data).unwrap();
}

#[test]
fn run_bm25_french_over_the_whole_corpus_and_parameters() {
    let data = scratch("french");
    bsard_like(&data);
    ok(&lexbench(
        &data,
        &[
            "run",
            "bm25",
            "--dataset",
            "bsard-mini",
            "--split",
            "test",
            "--k1",
            "1.2",
            "--b",
            "0.75",
        ],
    ));
    let text = std::fs::read_to_string(data.join("runs/bsard-mini/test/bm25.trec")).unwrap();
    // Accents and inflections: "licencier"/"licenciement", "preavis"/"préavis", "herite"/"héritiers".
    assert!(text.lines().any(|l| l.starts_with("q1 Q0 3 1 ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("q2 Q0 2 1 ")), "{text}");
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("runs/bsard-mini/test/bm25.json")).unwrap())
            .unwrap();
    assert_eq!(
        (side["config"]["k1"].as_f64(), side["config"]["b"].as_f64()),
        (Some(1.2), Some(0.75))
    );
    assert_eq!(side["config"]["language"], "french");
    assert_eq!(side["pooled"], false);
    let out = lexbench(
        &data,
        &[
            "run",
            "bm25",
            "--dataset",
            "bsard-mini",
            "--split",
            "test",
            "--b",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("b must be in [0, 1]"));
    let out = lexbench(
        &data,
        &["run", "bm25", "--dataset", "bsard-mini", "--split", "nosuch"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nosuch.json"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_bm25_rank_bm25_variant() {
    let data = scratch("okapi");
    bsard_like(&data);
    let args = ["run", "bm25", "--dataset", "bsard-mini", "--split", "test"];
    let printed = ok(&lexbench(
        &data,
        &[&args[..], &["--variant", "rank-bm25-okapi"]].concat(),
    ));
    assert!(
        printed.contains("rank-bm25-okapi (k1 = 1.5, b = 0.75, rank_bm25 BM25Okapi"),
        "{printed}"
    );
    // Its own run file: lexbench's BM25 run is not overwritten.
    assert!(!data.join("runs/bsard-mini/test/bm25.trec").exists());
    let text = std::fs::read_to_string(data.join("runs/bsard-mini/test/rank-bm25-okapi.trec")).unwrap();
    assert!(text.lines().all(|l| l.ends_with(" rank-bm25-okapi")), "{text}");
    let side: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("runs/bsard-mini/test/rank-bm25-okapi.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(side["config"]["variant"], "rank-bm25-okapi");
    assert_eq!(
        (side["config"]["k1"].as_f64(), side["config"]["b"].as_f64()),
        (Some(1.5), Some(0.75))
    );
    assert_eq!(side["config"].get("language"), None);
    // The tokeniser is fixed: an analyzer is refused, as are corpus statistics.
    for extra in [&["--language", "french"][..], &["--idf", "corpus"][..]] {
        let out = lexbench(
            &data,
            &[&args[..], &["--variant", "rank-bm25-okapi"], extra].concat(),
        );
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("rank-bm25-okapi"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn submit_rejects_a_run_that_is_not_utf8_and_reports_io_errors_once() {
    let data = scratch("latin1");
    ecthr_like(&data);
    let bad = data.join("latin1.trec");
    std::fs::write(
        &bad,
        b"torture/001-100001 Q0 001-100001:2 1 3 r\xe9sum\xe9\ntorture/001-100001 Q0 001-100001:1 2 2 x\n",
    )
    .unwrap();
    let submit = |run: &Path| {
        lexbench(
            &data,
            &[
                "submit",
                run.to_str().unwrap(),
                "--dataset",
                "mini-ecthr",
                "--split",
                "test",
                "--name",
                "latin1",
            ],
        )
    };
    let out = submit(&bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("submission rejected"), "{err}");
    assert!(
        err.contains(&format!("{}:1: not valid UTF-8", bad.display())),
        "{err}"
    );
    assert!(!data.join("leaderboard/entries").exists());

    let missing = data.join("missing.trec");
    let out = submit(&missing);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert_eq!(err.matches("missing.trec").count(), 1, "the path once: {err}");
    assert_eq!(
        err.matches("No such file or directory").count(),
        1,
        "the cause once: {err}"
    );
}

/// `run random` (the seeded floor of a leaderboard, added through the ranking seam in one file) ranks
/// every pool once, repeats itself for a seed, differs for another, and `submit` takes its run.
#[test]
fn run_random_is_seeded_and_submittable() {
    let data = scratch("random");
    ecthr_like(&data);
    let run = data.join("runs/mini-ecthr/test/random.trec");
    let args = |seed: &'static str| {
        [
            "run",
            "random",
            "--dataset",
            "mini-ecthr",
            "--split",
            "test",
            "--seed",
            seed,
        ]
    };
    ok(&lexbench(&data, &args("3")));
    let first = std::fs::read_to_string(&run).unwrap();
    assert_eq!(
        first.lines().count(),
        16,
        "4 topics × their 4-paragraph pools\n{first}"
    );
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.with_extension("json")).unwrap()).unwrap();
    assert_eq!(side["system"], "random");
    assert_eq!(side["seed"], 3);
    ok(&lexbench(&data, &args("3")));
    assert_eq!(
        first,
        std::fs::read_to_string(&run).unwrap(),
        "same seed, same run"
    );
    ok(&lexbench(&data, &args("4")));
    assert_ne!(
        first,
        std::fs::read_to_string(&run).unwrap(),
        "another seed, another run"
    );
    let run_arg = run.to_str().unwrap();
    let out = ok(&lexbench(
        &data,
        &[
            "submit",
            run_arg,
            "--dataset",
            "mini-ecthr",
            "--split",
            "test",
            "--name",
            "random",
        ],
    ));
    assert!(out.contains("random"), "{out}");
}

/// Issue 30: an entry whose card names a published row (`paper_row`) stands beside it in the "beside
/// the paper" table of index.md and index.html, with R@k%nearest and its topics; the baseline stands
/// beside BM25 without a card; an unknown row is refused with its card line.
#[test]
fn entries_stand_beside_the_papers_rows() {
    let data = scratch("beside");
    // The table stands beside lexbench's ECtHR datasets (`ecthr`, `ecthr-*`) only.
    ecthr_like_named(&data, "ecthr-mini");
    ecthr_like_named(&data, "mini-ecthr");
    ok(&lexbench(
        &data,
        &[
            "submit",
            "--baseline",
            "--dataset",
            "ecthr-mini",
            "--splits",
            "test",
        ],
    ));
    // A reversed BM25 run, standing beside the paper's DPR zero-shot row (a stand-in, named so).
    ok(&lexbench(
        &data,
        &["run", "bm25", "--dataset", "ecthr-mini", "--split", "test"],
    ));
    let text = std::fs::read_to_string(data.join("runs/ecthr-mini/test/bm25.trec")).unwrap();
    let reversed: String = text
        .lines()
        .map(|l| {
            let mut c: Vec<String> = l.split_whitespace().map(str::to_owned).collect();
            c[4] = format!("{}", -c[4].parse::<f64>().unwrap());
            c.join(" ") + "\n"
        })
        .collect();
    let run = data.join("reversed.trec");
    std::fs::write(&run, reversed).unwrap();
    let card = data.join("card.toml");
    std::fs::write(
        &card,
        "description = \"BM25 reversed, standing in for DPR\"\npaper_row = \"dpr-zero-shot\"\n",
    )
    .unwrap();
    let args = |card: &Path| {
        vec![
            "submit".to_owned(),
            run.to_string_lossy().into_owned(),
            "--dataset".into(),
            "ecthr-mini".into(),
            "--split".into(),
            "test".into(),
            "--name".into(),
            "reversed".into(),
            "--card".into(),
            card.to_string_lossy().into_owned(),
        ]
    };
    let a = args(&card);
    ok(&lexbench(
        &data,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    ok(&lexbench(
        &data,
        &[
            "submit",
            "--baseline",
            "--dataset",
            "mini-ecthr",
            "--splits",
            "test",
        ],
    ));
    ok(&lexbench(&data, &["leaderboard"]));
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert_eq!(md.matches("### Beside the paper").count(), 1, "{md}");
    // Boards come by name: the table sits in ecthr-mini's section, none in mini-ecthr's.
    let (ours, other) = (
        md.find("## ecthr-mini").unwrap(),
        md.find("## mini-ecthr").unwrap(),
    );
    let beside_at = md.find("### Beside the paper").unwrap();
    assert!(ours < beside_at && beside_at < other, "{md}");
    let beside = &md[md
        .find("### Beside the paper: Santosh et al., LREC-COLING 2024")
        .expect("beside table")..];
    let lines: Vec<&str> = beside.lines().collect();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in\n{beside}"))
    };
    // BM25's published row, then ours under it: the baseline, with 4 topics and the nearest cut-off.
    let bm25 = at("| Table 1 | BM25 | — | 7 / 17 / 29 | 9 / 23 / 37 | 10 / 25 / 40 |");
    assert!(
        lines[bm25 + 1].starts_with("| | ↳ ours: BM25 ✓ |"),
        "{}",
        lines[bm25 + 1]
    );
    assert!(lines[bm25 + 1].contains("· 4 topics |"), "{}", lines[bm25 + 1]);
    assert!(lines[bm25 + 1].contains("<br>nearest "), "{}", lines[bm25 + 1]);
    assert!(
        lines[bm25 + 1].ends_with("not run | not run |"),
        "{}",
        lines[bm25 + 1]
    );
    let dpr =
        at("| Table 1 | DPR zero-shot | facebook/dpr-question\\_encoder-multiset-base | 11 / 22 / 33 |");
    assert!(
        lines[dpr + 1].starts_with("| | ↳ ours: reversed | BM25 reversed, standing in for DPR |"),
        "{}",
        lines[dpr + 1]
    );
    // A row nothing stands beside has nothing under it.
    let ance = at("| Table 1 | ANCE zero-shot |");
    assert!(lines[ance + 1].starts_with("| Table 1 | ColBERT zero-shot |"));
    let html = std::fs::read_to_string(data.join("leaderboard/site/index.html")).unwrap();
    assert!(html.contains("<table class=\"beside\">"), "{html}");
    assert!(html.contains("↳ <bdi>reversed</bdi>"), "{html}");
    // An unknown row: refused, the card's line named, nothing written.
    let bad = data.join("bad-card.toml");
    std::fs::write(&bad, "description = \"x\"\npaper_row = \"gpt-4\"\n").unwrap();
    let a = args(&bad);
    let out = lexbench(&data, &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-card.toml:2: "), "{err}");
    assert!(err.contains("paper_row \"gpt-4\" is no published row"), "{err}");
}

/// Issue 56, item 7: the BSARD board stands beside the CuSINeS and QABISAR tables (their figures as
/// the papers print them, one decimal), the BM25 baseline under their BM25 rows, no `nearest` line (a
/// corpus task has no pools).
#[test]
fn the_bsard_board_stands_beside_cusines_and_qabisar() {
    let data = scratch("beside-bsard");
    crate::common::sample_data(&data);
    ok(&lexbench(&data, &["leaderboard"]));
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    let html = std::fs::read_to_string(data.join("leaderboard/site/index.html")).unwrap();
    for page in [&md, &html] {
        assert!(page.contains("Beside the paper: Santosh et al., CuSINeS, LREC-COLING 2024"));
        assert!(page.contains("Beside the paper: QABISAR"));
        assert!(
            page.contains("49.3 / 57.3 / 63.0 / 16.8 / 13.6"),
            "BM25 as printed"
        );
        assert!(
            page.contains("84.9 / 89.6 / 93.3 / 46.2 / 36.2"),
            "DR+GNN CuSINeS LegalCamemBERT"
        );
        assert!(page.contains("83.7 / 87.9 / 91.3 / 43.1 / 35.6"), "QABISAR");
    }
    let bsard = &md[md.find("Beside the paper: Santosh et al., CuSINeS").unwrap()..];
    let bsard = &bsard[..bsard.find("Beside the paper: QABISAR").unwrap()];
    assert!(bsard.contains("↳ ours: BM25"), "{bsard}");
    assert!(!bsard.contains("nearest"), "{bsard}");
}
