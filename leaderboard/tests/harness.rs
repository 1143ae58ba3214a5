//! Properties checked, on tiny datasets written in the test with the core layout types:
//! - each malformed run is rejected with every problem named by file and line — bad columns (fields
//!   after the sixth included, which `lexbench eval` would ignore as trec_eval does), a bad
//!   number, an unknown topic, a document outside the topic's pool (or the corpus), a duplicate
//!   document (both lines), a dataset hash in the sidecar or model card that is not the dataset's —
//!   and the leaderboard directory is byte-for-byte unchanged after a rejection;
//! - an accepted run's entry holds exactly the scores of `lexbench_core::evaluate` on the same run,
//!   the task's measures (pooled: R@k%; corpus: R@100/200/500, AP, RPrec), the run's sha256, the
//!   dataset hash, missing topics and a ties warning;
//! - entries are never overwritten, and concurrent submissions all land with distinct names;
//! - the board marks a clearly better system ▲ against BM25 (paired randomization + Holm), leaves a
//!   coin-flip system unmarked, and marks † an entry on a dataset version that is no longer current;
//!   Markdown is snapshot-tested, HTML is checked for its sortable table and plots;
//! - regression files come out OK / OKish / FAIL as their tolerances say; the shipped ones
//!   (`leaderboard/regressions/*.toml`) parse and validate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lexbench_core::testing::TinyDataset;
use lexbench_core::{PoolSizes, Qrels, ReadOptions, Run, TopicId, evaluate};
use lexbench_leaderboard::board::Sig;
use lexbench_leaderboard::regression::{Expectations, Status, check};
use lexbench_leaderboard::{Error, SubmitRequest, render_site, submit};

const TOPICS: usize = 30;
const POOL: usize = 20;

fn scratch(name: &str) -> PathBuf {
    let dir =
        lexbench_core::testing::scratch_root().join(format!("lexbench-lb-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn topic(i: usize) -> String {
    format!("q{i}/001-{}", 1000 + i)
}
fn doc(i: usize, j: usize) -> String {
    format!("001-{}:{}", 1000 + i, j + 1)
}

/// A pooled dataset (ECtHR-like): TOPICS topics, each ranking its own judgment's POOL paragraphs, the
/// relevant ones being paragraphs 3 and 7. `salt` changes one corpus text (a new dataset version).
/// Without `pools`, every topic ranks the whole corpus (BSARD-like). Returns the dataset hash.
fn mini_dataset(data: &Path, salt: &str, pools: bool) -> String {
    let mut ds = TinyDataset::new("mini");
    for i in 0..TOPICS {
        let docs: Vec<String> = (0..POOL).map(|j| doc(i, j)).collect();
        let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
        for d in &docs {
            ds = ds.doc(d, &format!("text of {d} {salt}"));
        }
        ds = ds.topic(
            &topic(i),
            &format!("q{i}"),
            &format!("query {i}"),
            &[docs[2], docs[6]],
            "test",
        );
        if pools {
            ds = ds.pool(&topic(i), &docs);
        }
    }
    ds.open_in(data).unwrap().hash()
}

/// [`mini_dataset`] with pools.
fn pooled_dataset(data: &Path, salt: &str) -> String {
    mini_dataset(data, salt, true)
}

/// A run file: for each topic, the pool in the order given by `order(i)` (paragraph indices).
fn write_run(path: &Path, tag: &str, topics: usize, order: impl Fn(usize) -> Vec<usize>) {
    let mut s = String::new();
    for i in 0..topics {
        for (r, j) in order(i).into_iter().enumerate() {
            s.push_str(&format!(
                "{} Q0 {} {} {} {tag}\n",
                topic(i),
                doc(i, j),
                r + 1,
                100 - r
            ));
        }
    }
    std::fs::write(path, s).unwrap();
}

/// Every file under `dir` with its bytes.
fn snapshot_dir(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The sidecar `lexbench run bm25` writes beside its run (the fields the harness reads).
fn bm25_sidecar(run: &Path, hash: &str) {
    let side = serde_json::json!({
        "schema_version": 1,
        "system": "bm25",
        "dataset": "mini",
        "split": "test",
        "dataset_hash": hash,
        "program": "lexbench-baselines 0.1.0",
    });
    std::fs::write(run.with_extension("json"), side.to_string()).unwrap();
}

/// Records `run` (a BM25 run with its sidecar) as the baseline, as the harness does after running
/// BM25 itself (`lexbench submit --baseline`).
fn submit_bm25(data: &Path, run: &Path) -> lexbench_leaderboard::Result<lexbench_leaderboard::Submitted> {
    use lexbench_leaderboard::entry::{Harness, ModelRef};
    let harness = Harness {
        model: ModelRef {
            path: "builtin:bm25".into(),
            kind: lexbench_leaderboard::ModelKind::Bm25,
            sha256: "ef".repeat(32),
            files: BTreeMap::new(),
            architecture: None,
            checkpoint: None,
        },
        lexbench_version: "0.1.0".into(),
        git_revision: None,
        device: "cpu".into(),
        seconds: 0.1,
        submission: "bm25-1".into(),
        lengths: None,
    };
    lexbench_leaderboard::submit_baseline(&req(data, run, "BM25"), harness)
}

fn req<'a>(data: &'a Path, run: &'a Path, name: &'a str) -> SubmitRequest<'a> {
    SubmitRequest {
        data,
        run,
        dataset: "mini",
        split: "test",
        name,
        card: None,
    }
}

fn rejection(res: lexbench_leaderboard::Result<lexbench_leaderboard::Submitted>) -> Vec<String> {
    match res {
        Err(Error::Rejected { problems }) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn malformed_runs_are_rejected_naming_the_line_and_change_nothing() {
    let data = scratch("reject");
    let hash = pooled_dataset(&data, "");
    // One good entry and a rendered board first, so "unchanged" is about real files.
    let good = data.join("good.trec");
    write_run(&good, "good", TOPICS, |_| (0..POOL).collect());
    submit(&req(&data, &good, "good")).unwrap();
    render_site(&data).unwrap();
    let before = snapshot_dir(&data.join("leaderboard"));
    assert!(before.keys().any(|p| p.ends_with("index.md")));

    let bad = data.join("bad.trec");
    let path = bad.display().to_string();
    let head = format!("{} Q0 {} 1 9 t\n", topic(0), doc(0, 0));
    let cases: Vec<(&str, String, Vec<String>)> = vec![
        (
            "bad columns",
            format!("{head}{} Q0 {} 2 8\n", topic(0), doc(0, 1)),
            vec![format!(
                "{path}:2: expected 6 columns (topic Q0 doc rank score tag), found 5"
            )],
        ),
        (
            // `lexbench eval` ignores fields after the sixth, as trec_eval does; a submission may not.
            "extra fields",
            format!("{head}{} Q0 {} 2 8 t extra\n", topic(0), doc(0, 1)),
            vec![format!(
                "{path}:2: expected 6 columns (topic Q0 doc rank score tag), found 7"
            )],
        ),
        (
            "bad score",
            format!("{head}{} Q0 {} 2 high t\n", topic(0), doc(0, 1)),
            vec![format!("{path}:2: score \"high\" is not a finite number")],
        ),
        (
            "unknown topic",
            format!("{head}q99/001-9 Q0 {} 2 8 t\n", doc(0, 1)),
            vec![format!(
                "{path}:2: unknown topic q99/001-9: not in split test of dataset mini"
            )],
        ),
        (
            "outside the pool",
            format!("{head}{} Q0 {} 2 8 t\n", topic(0), doc(1, 0)),
            vec![format!(
                "{path}:2: document {} is not in the pool of topic {}",
                doc(1, 0),
                topic(0)
            )],
        ),
        (
            "duplicate",
            format!(
                "{head}{} Q0 {} 2 8 t\n{} Q0 {} 3 7 t\n",
                topic(0),
                doc(0, 1),
                topic(0),
                doc(0, 0)
            ),
            vec![format!(
                "{path}:3: duplicate document {} for topic {} (first on line 1)",
                doc(0, 0),
                topic(0)
            )],
        ),
    ];
    for (what, text, want) in cases {
        std::fs::write(&bad, text).unwrap();
        assert_eq!(rejection(submit(&req(&data, &bad, what))), want, "{what}");
        assert_eq!(
            snapshot_dir(&data.join("leaderboard")),
            before,
            "{what}: leaderboard changed"
        );
    }

    // Several problems at once are all listed.
    std::fs::write(&bad, format!("{head}x\n{} Q0 {} 3 7 t\n", topic(0), doc(5, 5))).unwrap();
    assert_eq!(rejection(submit(&req(&data, &bad, "many"))).len(), 2);

    // Wrong dataset hash: in the run's sidecar (bad.json) and in the model card; named by line.
    write_run(&bad, "t", TOPICS, |_| (0..POOL).collect());
    let sidecar = data.join("bad.json");
    std::fs::write(
        &sidecar,
        "{\n  \"system\": \"x\",\n  \"dataset_hash\": \"0000\"\n}\n",
    )
    .unwrap();
    assert_eq!(
        rejection(submit(&req(&data, &bad, "stale"))),
        vec![format!(
            "{}:3: the run was made for dataset_hash 0000, but the submission is for {hash}",
            sidecar.display()
        )]
    );
    std::fs::remove_file(&sidecar).unwrap();
    let card = data.join("card.toml");
    std::fs::write(&card, "description = \"x\"\n\ndataset_hash = \"abc\"\n").unwrap();
    let mut r = req(&data, &bad, "carded");
    r.card = Some(&card);
    let got = rejection(submit(&r));
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with(&format!(
            "{}:3: dataset_hash abc does not match dataset mini",
            card.display()
        )),
        "{got:?}"
    );
    assert_eq!(
        snapshot_dir(&data.join("leaderboard")),
        before,
        "leaderboard changed"
    );
}

#[test]
fn entry_scores_are_the_evaluator_scores() {
    let data = scratch("accept");
    let hash = pooled_dataset(&data, "");
    let run_path = data.join("r.trec");
    // Topic 0 is left out; topic 1 has tied scores; others rank the pool backwards.
    let mut text = String::new();
    for i in 1..TOPICS {
        for j in 0..POOL {
            let score = if i == 1 { 1.0 } else { j as f64 };
            text.push_str(&format!("{} Q0 {} {} {score} sys\n", topic(i), doc(i, j), j + 1));
        }
    }
    std::fs::write(&run_path, text).unwrap();
    let card = data.join("card.toml");
    std::fs::write(
        &card,
        format!("description = \"reverse order\"\nauthors = [\"T. Est\"]\ndataset_hash = \"{hash}\"\n"),
    )
    .unwrap();
    let mut r = req(&data, &run_path, "Reverse");
    r.card = Some(&card);
    let sub = submit(&r).unwrap();
    let e = &sub.entry;
    assert_eq!(
        e.measures,
        vec![
            "R@2%",
            "R@5%",
            "R@10%",
            "R@2%nearest",
            "R@5%nearest",
            "R@10%nearest"
        ]
    );
    assert_eq!(e.dataset.hash, hash);
    assert_eq!(
        (e.dataset.topics, e.dataset.documents, e.dataset.pooled),
        (TOPICS, TOPICS * POOL, true)
    );
    assert_eq!(
        e.run.sha256,
        lexbench_core::dataset::sha256_file(&run_path).unwrap()
    );
    assert_eq!(e.missing_topics, vec![TopicId::new(topic(0)).unwrap()]);
    assert!(
        e.warnings.iter().any(|w| w.contains("tied scores")),
        "{:?}",
        e.warnings
    );
    assert_eq!(e.card.as_ref().unwrap().authors, vec!["T. Est"]);
    // The same numbers as evaluating the run directly.
    let ds = data.join("datasets/mini");
    let run = Run::read(&run_path, &ReadOptions::default()).unwrap();
    let qrels = Qrels::read(&ds.join("qrels/test.tsv"), &ReadOptions::default()).unwrap();
    let pools = PoolSizes::read(&ds.join("pools.jsonl")).unwrap();
    let measures =
        lexbench_core::Measure::parse_list("R@2%,R@5%,R@10%,R@2%nearest,R@5%nearest,R@10%nearest").unwrap();
    let ev = evaluate(&run, &qrels, &measures, Some(&pools)).unwrap();
    for (m, v) in measures.iter().zip(&ev.mean) {
        assert_eq!(e.scores[&m.to_string()], *v, "{m}");
    }
    assert_eq!(e.per_topic, ev.per_topic);
    // The file on disk is that entry.
    let back: lexbench_leaderboard::Entry =
        serde_json::from_str(&std::fs::read_to_string(&sub.path).unwrap()).unwrap();
    assert_eq!(&back, e);
    assert_eq!(sub.path.file_stem().unwrap().to_string_lossy(), e.id);
}

#[test]
fn corpus_tasks_use_the_bsard_measures_and_the_corpus_as_candidates() {
    let data = scratch("corpus");
    mini_dataset(&data, "", false);
    let run_path = data.join("r.trec");
    // Any corpus document is a candidate now, even another judgment's paragraph. (Two topics of
    // different lengths: a ranking that stops where the ranker found nothing more, not a cut.)
    std::fs::write(
        &run_path,
        format!(
            "{} Q0 {} 1 2 s\n{} Q0 {} 2 1 s\n{} Q0 {} 1 1 s\n",
            topic(0),
            doc(3, 2),
            topic(0),
            doc(0, 2),
            topic(1),
            doc(1, 2),
        ),
    )
    .unwrap();
    let e = submit(&req(&data, &run_path, "s")).unwrap().entry;
    assert_eq!(e.measures, vec!["R@100", "R@200", "R@500", "AP", "RPrec"]);
    assert!(!e.dataset.pooled);
    std::fs::write(&run_path, format!("{} Q0 nowhere 1 2 s\n", topic(0))).unwrap();
    let path = run_path.display();
    assert_eq!(
        rejection(submit(&req(&data, &run_path, "s"))),
        vec![format!(
            "{path}:1: document nowhere is not in the corpus of dataset mini"
        )]
    );
}

/// A run cut at the same depth for every topic is refused for each measure deeper than the cut (R@500
/// of a run cut at 200 would silently equal R@200); a run as deep as the measures, or as deep as the
/// candidates, is scored.
#[test]
fn a_run_cut_shallower_than_a_measure_is_refused() {
    let data = scratch("shallow");
    mini_dataset(&data, "", false); // 600 documents: R@100, R@200, R@500 read 100, 200, 500
    let run_path = data.join("cut.trec");
    let corpus = TOPICS * POOL;
    // Topic i ranks n corpus documents starting from its own judgment's.
    let write_cut = |n: usize| {
        let mut s = String::new();
        for i in 0..TOPICS {
            for r in 0..n {
                let k = (i * POOL + r) % corpus;
                s.push_str(&format!(
                    "{} Q0 {} {} {} s\n",
                    topic(i),
                    doc(k / POOL, k % POOL),
                    r + 1,
                    n - r
                ));
            }
        }
        std::fs::write(&run_path, s).unwrap();
    };
    write_cut(200);
    let problems = rejection(submit(&req(&data, &run_path, "s")));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("cut at 200 documents per topic, too shallow for R@500")
            && problems[0].contains("rank at least 500"),
        "{problems:?}"
    );
    assert!(rejection_left_nothing(&data));
    write_cut(100);
    let problems = rejection(submit(&req(&data, &run_path, "s")));
    assert_eq!(problems.len(), 2, "R@200 and R@500: {problems:?}");
    write_cut(500);
    assert!(submit(&req(&data, &run_path, "s")).is_ok());
}

/// No entry was written.
fn rejection_left_nothing(data: &Path) -> bool {
    std::fs::read_dir(data.join("leaderboard/entries")).map_or(true, |mut d| d.next().is_none())
}

#[test]
fn concurrent_submissions_all_land_and_never_overwrite() {
    let data = scratch("concurrent");
    pooled_dataset(&data, "");
    let run_path = data.join("r.trec");
    write_run(&run_path, "same", TOPICS, |_| (0..POOL).collect());
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (data, run_path) = (data.clone(), run_path.clone());
            // Same system name, same run, same moment: the names must still differ.
            std::thread::spawn(move || submit(&req(&data, &run_path, "same")).unwrap().path)
        })
        .collect();
    let mut paths: Vec<PathBuf> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 8);
    let (entries, _) = lexbench_leaderboard::entry::read_all(&data.join("leaderboard/entries")).unwrap();
    assert_eq!(entries.len(), 8);
    // No temporary files are left behind.
    let names: Vec<String> = std::fs::read_dir(data.join("leaderboard/entries"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.ends_with(".json") && !n.starts_with('.')),
        "{names:?}"
    );
}

#[test]
fn board_significance_stale_marks_and_rendering() {
    let data = scratch("board");
    let old_hash = pooled_dataset(&data, "");
    // BM25 finds a relevant paragraph at rank 2 on even topics and misses both on odd ones; the
    // oracle ranks both first; the coin flip swaps BM25's fortunes topic by topic.
    let bm25 = data.join("bm25.trec");
    write_run(&bm25, "bm25", TOPICS, |i| {
        if i % 2 == 0 {
            [vec![0, 2], (0..POOL).filter(|j| *j != 0 && *j != 2).collect()].concat()
        } else {
            (8..POOL).chain(0..8).collect()
        }
    });
    let oracle = data.join("oracle.trec");
    write_run(&oracle, "oracle", TOPICS, |_| {
        [vec![2, 6], (0..POOL).filter(|j| *j != 2 && *j != 6).collect()].concat()
    });
    let coin = data.join("coin.trec");
    write_run(&coin, "coin", TOPICS, |i| {
        if i % 2 == 1 {
            [vec![0, 2], (0..POOL).filter(|j| *j != 0 && *j != 2).collect()].concat()
        } else {
            (8..POOL).chain(0..8).collect()
        }
    });
    bm25_sidecar(&bm25, &old_hash);
    submit_bm25(&data, &bm25).unwrap();
    submit(&req(&data, &oracle, "oracle")).unwrap();
    submit(&req(&data, &coin, "coin")).unwrap();
    // An entry on an older dataset version: rebuild, resubmit bm25 and oracle, keep "legacy" old.
    let legacy = data.join("legacy.trec");
    write_run(&legacy, "legacy", TOPICS, |_| (0..POOL).collect());
    submit(&req(&data, &legacy, "legacy")).unwrap();
    let new_hash = pooled_dataset(&data, "v2");
    assert_ne!(old_hash, new_hash);
    bm25_sidecar(&bm25, &new_hash);
    submit_bm25(&data, &bm25).unwrap();
    submit(&req(&data, &oracle, "oracle")).unwrap();
    submit(&req(&data, &coin, "coin")).unwrap();

    let out = render_site(&data).unwrap();
    let b = &out.boards[0];
    assert_eq!(b.current_hash.as_deref(), Some(new_hash.as_str()));
    let row = |s: &str| b.rows.iter().find(|r| r.system == s).unwrap().cells["test"].clone();
    assert_eq!(row("oracle").sig, vec![Sig::Better; 3]);
    assert_eq!(row("coin").sig, vec![Sig::Same; 3]);
    assert_eq!(
        row("BM25").sig,
        vec![Sig::Baseline; 3],
        "the baseline is the BM25 run submitted as BM25"
    );
    assert!(row("legacy").stale && !row("oracle").stale);
    assert_eq!(
        row("legacy").sig,
        vec![Sig::Untested; 3],
        "other dataset version: not tested"
    );
    assert_eq!(row("oracle").hash, new_hash);
    assert_eq!(b.rows[0].system, "oracle", "sorted by R@10%");

    let md = std::fs::read_to_string(&out.markdown).unwrap();
    insta::assert_snapshot!("board_markdown", md.replace(&new_hash[..12], "[current]"));
    let html = std::fs::read_to_string(&out.html).unwrap();
    assert!(
        html.contains("<table class=\"board\">")
            && html.contains("class=\"sortable\" data-col=\"3\">R@10%</th>")
    );
    assert!(html.contains("plots/mini-test.svg") && html.contains("<span class=\"stale\""));
    let svg = std::fs::read_to_string(&out.plots[0]).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("oracle") && svg.contains("R@5%"),
        "{}",
        &svg[..200.min(svg.len())]
    );
    // Issue 33, item 4: bars per measure with a bootstrap whisker each, not lines joining measures.
    // Every row's cell has an interval around its mean; the plot draws a bar per (system, measure)
    // (plus the legend's swatches) and no polyline.
    let board = &out.boards[0];
    let cells: Vec<_> = board.rows.iter().filter_map(|r| r.cells.get("test")).collect();
    for c in &cells {
        for (v, ci) in c.scores.iter().zip(&c.ci) {
            let (v, (lo, hi)) = (v.unwrap(), ci.unwrap());
            assert!(lo <= v + 1e-12 && v <= hi + 1e-12, "{lo} {v} {hi}");
        }
    }
    assert!(svg.contains("95 % bootstrap interval"));
    let rects = svg.matches("<rect").count();
    assert!(
        rects >= cells.len() * board.measures.len() + cells.len(),
        "{rects} rects for {} systems × {} measures",
        cells.len(),
        board.measures.len()
    );
    // Polylines are axes, ticks and whiskers: two points each (a line over the measures had one
    // point per measure).
    for points in svg.split("points=\"").skip(1) {
        let points = &points[..points.find('"').unwrap()];
        assert_eq!(
            points.split_whitespace().count(),
            2,
            "a line joins measures: {points}"
        );
    }

    // Regression expectations against these entries (coin: R@10% = 0.5 exactly, half the topics 1/2).
    let file = data.join("coin.toml");
    std::fs::write(
        &file,
        "dataset = \"mini\"\nsplit = \"test\"\nsystem = \"coin\"\nok = 0.01\nokish = 0.05\n\
         [corpus]\ndocuments = 600\ntopics = 30\n\
         [measures]\n\"R@10%\" = { expected = 0.25 }\n\"R@5%\" = { expected = 0.03 }\n\"R@2%\" = { expected = 0.9 }\n",
    )
    .unwrap();
    let exp = Expectations::read(&file).unwrap();
    let (entries, _) = lexbench_leaderboard::entry::read_all(&data.join("leaderboard/entries")).unwrap();
    let got: Vec<(String, Status)> = check(&file, &exp, &entries, Some(&new_hash))
        .into_iter()
        .map(|o| (o.check, o.status))
        .collect();
    assert_eq!(
        got,
        vec![
            ("documents".into(), Status::Ok),
            ("topics".into(), Status::Ok),
            ("R@10%".into(), Status::Ok),
            ("R@2%".into(), Status::Fail),
            ("R@5%".into(), Status::OkIsh),
        ]
    );
    std::fs::write(
        &file,
        "dataset = \"mini\"\nsplit = \"test\"\nsystem = \"x\"\nbogus = 1\n[measures]\n",
    )
    .unwrap();
    let err = Expectations::read(&file).unwrap_err().to_string();
    assert!(err.contains("line 4"), "{err}");
}

#[test]
fn shipped_regression_files_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let exp = Expectations::read(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(!exp.measures.is_empty());
            n += 1;
        }
    }
    assert!(n >= 1);
}

/// A hostile-input scene: the pooled dataset, an empty leaderboard, the run path and its first line.
fn hostile(name: &str) -> (PathBuf, PathBuf, String, BTreeMap<PathBuf, Vec<u8>>) {
    let data = scratch(name);
    pooled_dataset(&data, "");
    std::fs::create_dir_all(data.join("leaderboard")).unwrap();
    let before = snapshot_dir(&data.join("leaderboard"));
    let bad = data.join("bad.trec");
    let line1 = format!("{} Q0 {} 1 9 t\n", topic(0), doc(0, 0));
    (data, bad, line1, before)
}

#[test]
fn a_run_that_is_not_utf8_is_rejected_naming_the_line() {
    let (data, bad, line1, before) = hostile("latin1");
    // Latin-1 é on line 2: a rejection naming file and line, like any other invalid run.
    let mut bytes = line1.into_bytes();
    bytes.extend(format!("{} Q0 {} 2 8 caf", topic(0), doc(0, 1)).bytes());
    bytes.extend(b"\xe9\n");
    std::fs::write(&bad, &bytes).unwrap();
    let got = rejection(submit(&req(&data, &bad, "latin1")));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with(&format!("{}:2: not valid UTF-8", bad.display())),
        "{got:?}"
    );
    assert_eq!(snapshot_dir(&data.join("leaderboard")), before);
}

#[test]
fn over_long_tags_lines_cards_and_sidecars_are_rejected() {
    use lexbench_core::trec::{MAX_LINE_BYTES, MAX_TAG_BYTES};
    use lexbench_leaderboard::card::{MAX_CARD_BYTES, MAX_CARD_FIELD_CHARS};
    use lexbench_leaderboard::submit::MAX_SIDECAR_BYTES;
    let (data, bad, line1, before) = hostile("long");
    let path = bad.display().to_string();

    // A tag over MAX_TAG_BYTES, on a later line.
    let long_tag = "x".repeat(MAX_TAG_BYTES + 1);
    std::fs::write(
        &bad,
        format!("{line1}{} Q0 {} 2 8 {long_tag}\n", topic(0), doc(0, 1)),
    )
    .unwrap();
    assert_eq!(
        rejection(submit(&req(&data, &bad, "tag"))),
        vec![format!(
            "{path}:2: tag is {} bytes long; at most {MAX_TAG_BYTES} are allowed",
            MAX_TAG_BYTES + 1
        )]
    );

    // A line over MAX_LINE_BYTES: named, not quoted, and the lines after it are still checked.
    std::fs::write(
        &bad,
        format!(
            "{line1}{} Q0 {} 2 8 {}\n{} Q0 nowhere 3 7 t\n",
            topic(0),
            doc(0, 1),
            "y".repeat(8 * MAX_LINE_BYTES),
            topic(0)
        ),
    )
    .unwrap();
    assert_eq!(
        rejection(submit(&req(&data, &bad, "line"))),
        vec![
            format!("{path}:2: the line is longer than {MAX_LINE_BYTES} bytes"),
            format!(
                "{path}:3: document nowhere is not in the pool of topic {}",
                topic(0)
            ),
        ]
    );

    // A sidecar over MAX_SIDECAR_BYTES is not read, let alone copied into the entry.
    write_run(&bad, "t", TOPICS, |_| (0..POOL).collect());
    let sidecar = data.join("bad.json");
    let huge = format!("{{\"notes\": \"{}\"}}", "z".repeat(MAX_SIDECAR_BYTES));
    std::fs::write(&sidecar, &huge).unwrap();
    let got = rejection(submit(&req(&data, &bad, "sidecar")));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with(&format!("{}: ", sidecar.display())) && got[0].contains("at most"),
        "{got:?}"
    );
    std::fs::remove_file(&sidecar).unwrap();

    // A model card over MAX_CARD_BYTES, and a card field over MAX_CARD_FIELD_CHARS (its line named).
    let card = data.join("card.toml");
    std::fs::write(
        &card,
        format!("description = \"{}\"\n", "d".repeat(MAX_CARD_BYTES)),
    )
    .unwrap();
    let mut r = req(&data, &bad, "card");
    r.card = Some(&card);
    let got = rejection(submit(&r));
    assert!(
        got.len() == 1 && got[0].starts_with(&format!("{}: ", card.display())),
        "{got:?}"
    );
    std::fs::write(
        &card,
        format!(
            "authors = [\"A\"]\nlicense = \"MIT\"\ncode = \"{}\"\n",
            "c".repeat(MAX_CARD_FIELD_CHARS + 1)
        ),
    )
    .unwrap();
    assert_eq!(
        rejection(submit(&r)),
        vec![format!(
            "{}:3: code is {} characters long; at most {MAX_CARD_FIELD_CHARS} are allowed",
            card.display(),
            MAX_CARD_FIELD_CHARS + 1
        )]
    );
    assert_eq!(
        snapshot_dir(&data.join("leaderboard")),
        before,
        "a rejection changes nothing"
    );
}

#[test]
fn a_bom_hides_neither_the_first_topic_nor_the_card_or_sidecar() {
    let (data, bad, _, _) = hostile("bom");
    write_run(&bad, "t", TOPICS, |_| (0..POOL).collect());
    let mut text = String::from("\u{feff}");
    text.push_str(&std::fs::read_to_string(&bad).unwrap());
    std::fs::write(&bad, text).unwrap();
    std::fs::write(data.join("bad.json"), "\u{feff}{\"system\": \"mine\"}\n").unwrap();
    let card = data.join("card.toml");
    std::fs::write(&card, "\u{feff}description = \"with a BOM\"\n").unwrap();
    let mut r = req(&data, &bad, "bom");
    r.card = Some(&card);
    let e = submit(&r).unwrap().entry;
    assert!(e.missing_topics.is_empty(), "{:?}", e.missing_topics);
    assert_eq!(e.per_topic.len(), TOPICS);
    assert_eq!(e.run.sidecar.unwrap()["system"], "mine");
    assert_eq!(e.card.unwrap().description.as_deref(), Some("with a BOM"));
}

#[test]
fn system_names_with_control_or_format_characters_are_refused() {
    let data = scratch("names");
    pooled_dataset(&data, "");
    let run_path = data.join("r.trec");
    write_run(&run_path, "t", TOPICS, |_| (0..POOL).collect());
    // U+202E (right-to-left override) and the other format characters (Cf), controls (Cc) and line
    // or paragraph separators are refused: they can make one name look like another.
    for name in [
        "good\u{202e}txt.exe",
        "zero\u{200b}width",
        "soft\u{ad}hyphen",
        "bom\u{feff}",
        "iso\u{2066}late",
        "bell\u{7}",
        "line\u{2028}sep",
        "tab\tbed",
    ] {
        match submit(&req(&data, &run_path, name)) {
            Err(Error::Param(m)) => assert!(m.contains("system name"), "{name:?}: {m}"),
            other => panic!("{name:?} accepted: {other:?}"),
        }
    }
}

#[test]
fn system_names_are_escaped_in_markdown_html_and_svg() {
    let data = scratch("escape");
    pooled_dataset(&data, "");
    let run_path = data.join("r.trec");
    write_run(&run_path, "t", TOPICS, |_| (0..POOL).collect());
    // Markup is text: accepted, and escaped in every rendering.
    let evil = "<script>alert(1)</script> *b* [x](javascript:y) <img src=x> &amp; | `c`";
    submit(&req(&data, &run_path, evil)).unwrap();
    submit(&req(&data, &run_path, "Ünïcödé name")).unwrap();
    let out = render_site(&data).unwrap();
    let md = std::fs::read_to_string(&out.markdown).unwrap();
    let row = md
        .lines()
        .find(|l| l.contains("alert"))
        .unwrap_or_else(|| panic!("no row in\n{md}"));
    for raw in ["<script>", "<img", "](javascript", "*b*", "`c`"] {
        assert!(!row.contains(raw), "{raw} unescaped in {row}");
    }
    assert!(
        row.contains("&lt;script&gt;") && row.contains("&amp;amp"),
        "{row}"
    );
    assert!(md.contains("| Ünïcödé name |"), "{md}");
    let html = std::fs::read_to_string(&out.html).unwrap();
    assert!(
        !html.contains("<script>alert") && !html.contains("<img src=x"),
        "html"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let svg = std::fs::read_to_string(&out.plots[0]).unwrap();
    assert!(!svg.contains("<script>") && !svg.contains("<img"), "svg");
}

#[test]
fn the_baseline_is_the_bm25_run_and_no_submission_can_pose_as_it() {
    let data = scratch("baseline");
    let hash = pooled_dataset(&data, "");
    let bm25 = data.join("bm25.trec");
    write_run(&bm25, "bm25", TOPICS, |_| (0..POOL).rev().collect());
    bm25_sidecar(&bm25, &hash);
    // Issue 29, item 4: a run file is never the baseline, even lexbench's own BM25 run with its
    // sidecar (anyone can copy and edit one: the prober's forged run was `awk` over bm25.trec with
    // a sidecar saying `"system": "bm25"`). Only the harness records it.
    assert!(matches!(submit(&req(&data, &bm25, "BM25")), Err(Error::Param(_))));
    submit_bm25(&data, &bm25).unwrap();

    // A user's run under the baseline's name, in any case or spacing: refused, nothing written.
    let mine = data.join("mine.trec");
    write_run(&mine, "mine", TOPICS, |_| (0..POOL).collect());
    let entries = || {
        std::fs::read_dir(data.join("leaderboard/entries"))
            .unwrap()
            .count()
    };
    for name in ["bm25", "BM25", "Bm25", " bm25 ", "BM25\u{200b}"] {
        assert!(
            matches!(submit(&req(&data, &mine, name)), Err(Error::Param(_))),
            "{name:?} accepted"
        );
    }
    // Even lexbench's BM25 run is the baseline only under its exact name.
    assert!(matches!(submit(&req(&data, &bm25, "bm25")), Err(Error::Param(_))));
    assert_eq!(entries(), 1);
    // Under another name the BM25 run is an ordinary system, tested against the baseline.
    submit(&req(&data, &bm25, "bm25 again")).unwrap();
    submit(&req(&data, &mine, "mine")).unwrap();

    let out = render_site(&data).unwrap();
    let b = &out.boards[0];
    let baselines: Vec<&str> = b
        .rows
        .iter()
        .filter(|r| r.baseline)
        .map(|r| r.system.as_str())
        .collect();
    assert_eq!(baselines, vec!["BM25"]);
    let cell = |s: &str| b.rows.iter().find(|r| r.system == s).unwrap().cells["test"].clone();
    assert_eq!(cell("BM25").sig, vec![Sig::Baseline; 3]);
    assert!(
        cell("bm25 again").sig.iter().all(|s| *s == Sig::Same),
        "tested, not a baseline"
    );
    assert!(
        cell("mine").p_holm.iter().all(Option::is_some),
        "tested against BM25"
    );

    // An entry named `bm25` from before the name was reserved (written here by hand, later than the
    // baseline's) is an ordinary row, and a regression file about the baseline, whatever its spelling,
    // checks the baseline's entry, not it.
    let (entries, _) = lexbench_leaderboard::entry::read_all(&data.join("leaderboard/entries")).unwrap();
    let mut legacy = entries.iter().find(|e| e.system == "mine").unwrap().clone();
    legacy.system = "bm25".into();
    legacy.submitted_at = "2999-01-01T00:00:00.000Z".into();
    lexbench_leaderboard::entry::write_new(&data.join("leaderboard/entries"), &mut legacy).unwrap();
    let out = render_site(&data).unwrap();
    let rows: Vec<(&str, bool)> = out.boards[0]
        .rows
        .iter()
        .map(|r| (r.system.as_str(), r.baseline))
        .filter(|(s, _)| s.eq_ignore_ascii_case("bm25"))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.contains(&("BM25", true)) && rows.contains(&("bm25", false)),
        "{rows:?}"
    );
    let file = data.join("bm25.toml");
    std::fs::write(
        &file,
        "dataset = \"mini\"\nsplit = \"test\"\nsystem = \"bm25\"\n[measures]\n\"R@10%\" = { expected = 0.0 }\n",
    )
    .unwrap();
    let exp = Expectations::read(&file).unwrap();
    let (entries, _) = lexbench_leaderboard::entry::read_all(&data.join("leaderboard/entries")).unwrap();
    let picked = lexbench_leaderboard::regression::pick(&exp, &entries, Some(&hash)).unwrap();
    assert_eq!(picked.system, "BM25");
}

/// Issue 29, item 5: a second submitter's run under a name already on the board never replaces the
/// first one's row: each submitter (the authors its card names; no card is a submitter too) keeps a
/// row, both shown with their authors, and the later submission is warned.
#[test]
fn a_name_taken_by_another_submitter_keeps_both_rows() {
    let data = scratch("takeover");
    pooled_dataset(&data, "");
    let first = data.join("first.trec");
    write_run(&first, "first", TOPICS, |_| (0..POOL).collect());
    let card_a = data.join("a.toml");
    std::fs::write(&card_a, "authors = [\"A. Author\"]\n").unwrap();
    let a = submit(&SubmitRequest {
        card: Some(&card_a),
        ..req(&data, &first, "Great System")
    })
    .unwrap();
    assert!(a.entry.warnings.iter().all(|w| !w.contains("another submitter")));
    // Another submitter, better numbers, the same name: with another card, and with none.
    let second = data.join("second.trec");
    write_run(&second, "second", TOPICS, |_| (0..POOL).rev().collect());
    let card_b = data.join("b.toml");
    std::fs::write(&card_b, "authors = [\"B. Other\"]\n").unwrap();
    let b = submit(&SubmitRequest {
        card: Some(&card_b),
        ..req(&data, &second, "Great System")
    })
    .unwrap();
    assert!(
        b.entry
            .warnings
            .iter()
            .any(|w| w.contains("another submitter") && w.contains("A. Author")),
        "{:?}",
        b.entry.warnings
    );
    submit(&req(&data, &second, "Great System")).unwrap();
    // The first submitter again: their own row is updated, no other.
    submit(&SubmitRequest {
        card: Some(&card_a),
        ..req(&data, &second, "Great System")
    })
    .unwrap();

    let out = render_site(&data).unwrap();
    let rows: Vec<(String, String)> = out.boards[0]
        .rows
        .iter()
        .filter(|r| r.system == "Great System")
        .map(|r| (r.owner.clone(), r.shown_name()))
        .collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    for want in [
        "Great System (by A. Author)",
        "Great System (by B. Other)",
        "Great System (no authors given)",
    ] {
        assert!(rows.iter().any(|(_, n)| n == want), "{want}: {rows:?}");
    }
    let md = std::fs::read_to_string(&out.markdown).unwrap();
    assert!(md.contains("| Great System \\(by A. Author\\) |"), "{md}");
}

/// Issue 29, item 19: names that look like the baseline's (Cyrillic, fullwidth, spaced) are
/// reserved; names that show nothing or cannot be told apart (Hangul fillers, the combining
/// grapheme joiner, private use, a lone combining mark) are refused; card texts follow the same
/// rules (NUL, ESC and U+202E no longer reach the page).
#[test]
fn look_alike_and_invisible_names_and_card_texts_are_refused() {
    let data = scratch("names19");
    pooled_dataset(&data, "");
    let run = data.join("r.trec");
    write_run(&run, "r", TOPICS, |_| (0..POOL).collect());
    for name in [
        "ВМ25",
        "ＢＭ２５",
        "B M 2 5",
        "Βm25",
        "\u{3164}",
        "x\u{3164}",
        "a\u{34f}b",
        "\u{e000}sys",
        "\u{301}",
        "\u{301}abc",
        "\u{115f}\u{1160}",
    ] {
        let got = submit(&req(&data, &run, name));
        assert!(matches!(got, Err(Error::Param(_))), "{name:?} accepted: {got:?}");
    }
    // Accented and non-Latin names are fine.
    submit(&req(&data, &run, "Modèle ünïcödé")).unwrap();
    submit(&req(&data, &run, "Система")).unwrap();
    for (field, value) in [
        ("description", "a\u{0}b"),
        ("description", "esc \u{1b}[31m"),
        ("authors", "\u{202e}evil"),
        ("url", "https://x\u{e000}"),
    ] {
        let card = data.join("card19.toml");
        let text = toml_escape(field, value);
        std::fs::write(&card, &text).unwrap();
        let got = submit(&SubmitRequest {
            card: Some(&card),
            ..req(&data, &run, "carded")
        });
        match got {
            Err(Error::Rejected { problems }) => assert!(
                problems
                    .iter()
                    .any(|p| p.message.contains(field) && p.message.contains("U+")),
                "{field}: {problems:?} ({text})"
            ),
            other => panic!("{field} {value:?}: {other:?}"),
        }
    }
}

/// A TOML line `field = "…"` (or `authors = ["…"]`) with `value`'s characters as `\uXXXX` escapes
/// where they are not printable ASCII.
fn toml_escape(field: &str, value: &str) -> String {
    let mut s = String::new();
    for c in value.chars() {
        if c.is_ascii_graphic() || c == ' ' {
            if c == '"' || c == '\\' {
                s.push('\\');
            }
            s.push(c);
        } else {
            s.push_str(&format!("\\U{:08X}", u32::from(c)));
        }
    }
    if field == "authors" {
        format!("authors = [\"{s}\"]\n")
    } else {
        format!("{field} = \"{s}\"\n")
    }
}

/// Issue 54, item 15: names that look like the baseline's through Unicode's confusables (Cherokee
/// `ᏴᎷ25`, script `ℬℳ25`, hooked `ƁM25`; issue 68, item 13: small capitals `ʙᴍ25`, circled
/// `ⒷⓂ②⑤`, parenthesised `⒝⒨25`) are reserved; a system name that looks like another row's
/// (`DРR`, Cyrillic `Р`, beside `DPR`) and authors that look like another submitter's (`Аlice`,
/// Cyrillic `А`, beside `Alice`) are refused, since the page could not tell the rows apart; a card
/// text may not start with a combining mark.
#[test]
fn confusable_names_authors_and_card_texts_are_refused() {
    let data = scratch("names54");
    pooled_dataset(&data, "");
    let run = data.join("r.trec");
    write_run(&run, "r", TOPICS, |_| (0..POOL).collect());
    for name in ["ᏴᎷ25", "ℬℳ25", "ƁM25", "bm-25", "ᏼꮇ25", "ʙᴍ25", "ⒷⓂ②⑤", "⒝⒨25"]
    {
        let got = submit(&req(&data, &run, name));
        assert!(
            matches!(&got, Err(Error::Param(m)) if m.contains("reserved")),
            "{name:?} accepted: {got:?}"
        );
    }
    submit(&req(&data, &run, "DPR")).unwrap();
    let got = submit(&req(&data, &run, "D\u{420}R"));
    assert!(
        matches!(&got, Err(Error::Param(m)) if m.contains("looks like \"DPR\"") && m.contains("U+0420")),
        "{got:?}"
    );
    let card = |name: &str, authors: &str| {
        let path = data.join(format!("{name}.toml"));
        std::fs::write(&path, toml_escape("authors", authors)).unwrap();
        path
    };
    let alice = card("alice", "Alice");
    submit(&SubmitRequest {
        card: Some(&alice),
        ..req(&data, &run, "Great")
    })
    .unwrap();
    let fake = card("fake", "\u{410}lice");
    let got = submit(&SubmitRequest {
        card: Some(&fake),
        ..req(&data, &run, "Great")
    });
    assert!(
        matches!(&got, Err(Error::Param(m)) if m.contains("look like \"Alice\"") && m.contains("U+0410")),
        "{got:?}"
    );
    // Another submitter who does not look like Alice keeps a row of their own, as before.
    let bob = card("bob", "Bob");
    submit(&SubmitRequest {
        card: Some(&bob),
        ..req(&data, &run, "Great")
    })
    .unwrap();
    let marked = data.join("marked.toml");
    std::fs::write(&marked, toml_escape("description", "\u{301}x")).unwrap();
    let got = submit(&SubmitRequest {
        card: Some(&marked),
        ..req(&data, &run, "marked")
    });
    match got {
        Err(Error::Rejected { problems }) => assert!(
            problems
                .iter()
                .any(|p| p.message.contains("starts with a combining mark")),
            "{problems:?}"
        ),
        other => panic!("{other:?}"),
    }
}
