//! End-to-end tests of `lexbench export DATASET --format hf|beir|mteb` (issue 33), on the embedded
//! sample's ECtHR and BSARD datasets, with the real Python libraries: `datasets` 5.2.0, `pyarrow`
//! 26.0.1 and `pytrec_eval` (pytrec-eval-terrier 0.5.11) from `$LEXBENCH_PY_TOOLS` (default
//! `target/py-tools-venv`, installed by `scripts/python-tools`, which `scripts/test` runs). Without
//! that environment these tests fail, naming what to run; they never skip. The Python side is
//! `scripts/export_roundtrip.py`, one process per format, offline (`HF_DATASETS_OFFLINE`,
//! `HF_HUB_OFFLINE`, `HF_HOME` in the test's own folder).
//!
//! Properties checked, for each format and both datasets:
//! - the export opens with its library (hf: `load_dataset(DIR, CONFIG)` for every config and split,
//!   the default config being the queries, and pyarrow on every Parquet file; beir: `datasets`' json
//!   and csv builders as BEIR's Hugging Face loader uses them; mteb: `load_dataset` of MTEB 2.x's
//!   corpus, queries, qrels and (ECtHR) top_ranked configs, and the names of MTEB 2.x's `TaskMetadata`
//!   fields in `mteb_metadata.json` — export_libraries.rs opens both with mteb and beir themselves);
//! - what the library reads is the dataset, record for record: every corpus text (and ECtHR's item,
//!   paragraph number and section), every topic's text (and query, judgment, guide where the format
//!   carries them), each split's topics in order, its qrels with their grades and, for ECtHR, every
//!   topic's pool (in the judgment's order; MTEB: its top_ranked candidates);
//! - the counts equal `lexbench stats`'s (ECtHR: pairs and queries per split, paragraphs, relevant
//!   labels; BSARD: articles, questions per split, the derived train-fit and validation splits,
//!   relevant articles);
//! - the same for a small pooled dataset whose pools (21 to 101 documents) tell the ways of rounding
//!   `k%` of a pool apart, which the sample's 20-paragraph judgments do not;
//! - a run made from the export (scripts/export_roundtrip.py ranks by shared words, with many ties)
//!   scored by pytrec_eval over the export's qrels equals `lexbench eval` of the same run file against
//!   the dataset's qrels, for every split: AP, RPrec, R@100, R@200, R@500, nDCG@10, P@5, RR, and for
//!   ECtHR R@2%, R@5%, R@10% computed from the export's pools against `lexbench eval --pools`;
//! - an export is deterministic: a second export of the same version has the same bytes, file for
//!   file, and its `lexbench-export.json` names the dataset's version and every file's sha256.
//!
//! And for the command itself ([`export_refuses_what_it_must_not_write`]): a non-empty `--out` is
//! refused and left as it was, `--force` replaces an earlier export whole with no leftover beside it
//! and refuses a non-empty folder that is not an export, an `--out`
//! inside the dataset or holding the data directory is refused even with `--force`, a missing or
//! report `--format` is refused, a dataset changed after its build is refused before anything is
//! written, and the default folder is `DATA/exports/DATASET-FORMAT`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use lexbench_core::dataset::{CorpusDoc, Dataset};
use lexbench_core::{ReadOptions, sha256_hex};
use serde_json::{Value, json};

use crate::common::{lexbench, lexbench_no_data, read_json, sample_data};
use crate::data_safety::tree;

/// The Python environment with `datasets`, `pyarrow` and `pytrec_eval`; its absence fails the test.
fn py_tools_python() -> PathBuf {
    crate::common::venv_python(
        "LEXBENCH_PY_TOOLS",
        "py-tools-venv",
        "these tests open the exports with Hugging Face datasets, pyarrow and pytrec_eval from that \
         environment. Run scripts/python-tools (scripts/test does), or point LEXBENCH_PY_TOOLS at an \
         environment with datasets==5.2.0, pyarrow==26.0.1, pytrec-eval-terrier==0.5.11",
    )
}

/// A fresh copy of the sample data directory in `lexbench-export-PID-NAME`.
fn sample(name: &str) -> PathBuf {
    let root =
        lexbench_core::testing::scratch_root().join(format!("lexbench-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    sample_data(&root.join("data"));
    root
}

/// `lexbench export DATASET --format FORMAT ARGS…`, which must succeed.
fn export_ok(data: &Path, dataset: &str, format: &str, args: &[&str]) -> String {
    let mut all = vec!["export", dataset, "--format", format];
    all.extend_from_slice(args);
    let out = lexbench(data, &all);
    assert!(
        out.status.success(),
        "lexbench {}: {}",
        all.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs scripts/export_roundtrip.py on the exports `(name, dir)`; its JSON report.
fn roundtrip(root: &Path, format: &str, exports: &[(&str, PathBuf)]) -> Value {
    let python = py_tools_python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/export_roundtrip.py");
    let runs = root.join(format!("runs-{format}"));
    std::fs::create_dir_all(&runs).unwrap();
    let hf_home = root.join("hf-home");
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .arg(format)
        .arg(&runs)
        .args(exports.iter().map(|(n, d)| format!("{n}={}", d.display())))
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", &hf_home)
        .env("HF_DATASETS_CACHE", hf_home.join("datasets"))
        .env("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        .env("HF_HUB_DISABLE_TELEMETRY", "1");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    assert!(
        out.status.success(),
        "export_roundtrip.py {format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "export_roundtrip.py {format} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The name a split has in `format`'s export (Hugging Face names: `-` → `_`).
fn split_name(format: &str, split: &str) -> String {
    if format == "beir" {
        split.to_owned()
    } else {
        split.replace('-', "_")
    }
}

/// `lexbench stats NAME --format json`.
fn stats(data: &Path, name: &str) -> Value {
    let out = lexbench(data, &["stats", name, "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A JSON number as a count.
fn count(v: &Value) -> usize {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")).round() as usize
}

/// Checks what the library read from `format`'s export of dataset `name` against the dataset itself
/// and `lexbench stats`, and every run's pytrec_eval scores against `lexbench eval`.
fn check_export(data: &Path, format: &str, name: &str, read: &Value) {
    let ds = Dataset::open_in(data, name).unwrap();
    let pooled = ds.pools().unwrap().is_some();
    let corpus: Vec<CorpusDoc> = ds.corpus().unwrap();
    let texts: BTreeMap<String, String> = corpus
        .iter()
        .map(|d| (d.doc.to_string(), d.text.clone()))
        .collect();
    let pools: BTreeMap<String, Vec<String>> = ds
        .pools()
        .unwrap()
        .unwrap_or_default()
        .into_iter()
        .map(|p| {
            (
                p.topic.to_string(),
                p.docs.iter().map(ToString::to_string).collect(),
            )
        })
        .collect();
    let topics: BTreeMap<String, _> = ds
        .topics()
        .unwrap()
        .into_iter()
        .map(|t| (t.topic.to_string(), t))
        .collect();
    let what = format!("{format} export of {name}");

    // The corpus: every text.
    let read_corpus: BTreeMap<String, String> = serde_json::from_value(read["corpus"].clone()).unwrap();
    assert_eq!(read_corpus, texts, "{what}: the corpus");
    if !read["corpus_meta"].is_null() {
        let want: BTreeMap<String, Value> = corpus
            .iter()
            .map(|d| {
                let section = d.section.map(|s| serde_json::to_value(s).unwrap());
                (
                    d.doc.to_string(),
                    json!({"item": d.item, "num": d.num, "section": section}),
                )
            })
            .collect();
        let got: BTreeMap<String, Value> = serde_json::from_value(read["corpus_meta"].clone()).unwrap();
        assert_eq!(got, want, "{what}: the corpus's item, num and section");
    } else {
        let has_meta = corpus.iter().any(|d| d.item.is_some());
        assert!(
            format == "mteb" || !has_meta,
            "{what}: ECtHR paragraphs lost their metadata"
        );
    }

    // Topics: texts, and the query, judgment and guide where the format carries them.
    let read_topics = read["topics"].as_object().unwrap();
    for (t, rec) in read_topics {
        let want = topics
            .get(t)
            .unwrap_or_else(|| panic!("{what}: topic {t} is not the dataset's"));
        assert_eq!(rec["text"], want.text, "{what}: the text of {t}");
        for (key, value) in [
            ("query", Some(want.query.to_string())),
            ("item", want.item.as_ref().map(ToString::to_string)),
            ("guide", want.guide.as_ref().map(ToString::to_string)),
        ] {
            if let Some(got) = rec.get(key) {
                assert_eq!(got.as_str(), value.as_deref(), "{what}: the {key} of {t}");
            } else if value.is_some() && (key != "query" || want.query.as_str() != t) {
                panic!("{what}: topic {t} has no {key}");
            }
        }
    }

    // Splits: topics in order, qrels with grades, pools.
    let read_splits = read["splits"].as_object().unwrap();
    let names = ds.split_names().unwrap();
    let mut expected_names: Vec<String> = names.iter().map(|s| split_name(format, s)).collect();
    expected_names.sort();
    assert_eq!(
        read_splits.keys().cloned().collect::<Vec<_>>(),
        expected_names,
        "{what}: splits"
    );
    let mut all_split_topics = std::collections::BTreeSet::new();
    for split in &names {
        let got = &read_splits[&split_name(format, split)];
        let want_topics: Vec<String> = ds
            .split(split)
            .unwrap()
            .topics
            .iter()
            .map(ToString::to_string)
            .collect();
        all_split_topics.extend(want_topics.iter().cloned());
        if !got["topics"].is_null() {
            assert_eq!(got["topics"], json!(want_topics), "{what}: the topics of {split}");
        }
        let qrels = ds.qrels(split, &ReadOptions::default()).unwrap();
        let want_qrels: BTreeMap<String, BTreeMap<String, i32>> = qrels
            .topics
            .iter()
            .map(|(t, docs)| {
                let docs = docs.iter().map(|(d, g)| (d.to_string(), *g)).collect();
                (t.to_string(), docs)
            })
            .collect();
        let got_qrels: BTreeMap<String, BTreeMap<String, i32>> =
            serde_json::from_value(got["qrels"].clone()).unwrap();
        assert_eq!(got_qrels, want_qrels, "{what}: the qrels of {split}");
        if pooled {
            let got_pools: BTreeMap<String, Vec<String>> =
                serde_json::from_value(got["pools"].clone()).unwrap();
            assert_eq!(got_pools.len(), want_topics.len(), "{what}: pools of {split}");
            for t in &want_topics {
                assert_eq!(got_pools[t], pools[t], "{what}: the pool of {t}");
            }
        } else {
            assert!(got["pools"].is_null(), "{what}: BSARD has no pools");
        }
    }
    if format == "beir" || format == "mteb" {
        let all: Vec<&String> = topics.keys().collect();
        assert_eq!(read_topics.keys().collect::<Vec<_>>(), all, "{what}: every topic");
    } else {
        assert_eq!(
            read_topics
                .keys()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            all_split_topics,
            "{what}: the splits' topics"
        );
    }

    if name != MIXED {
        // `lexbench stats` reads stats.json, which only real builds write.
        check_counts(data, format, name, read);
    }
    check_runs(data, format, name, read, pooled);
}

/// The counts a user of the export sees equal `lexbench stats`'s.
fn check_counts(data: &Path, format: &str, name: &str, read: &Value) {
    let st = &stats(data, name)["stats"];
    let splits = read["splits"].as_object().unwrap();
    let what = format!("{format} export of {name} against lexbench stats");
    let relevant = |split: &Value| -> usize {
        split["qrels"]
            .as_object()
            .unwrap()
            .values()
            .map(|docs| {
                docs.as_object()
                    .unwrap()
                    .values()
                    .filter(|g| g.as_i64() >= Some(1))
                    .count()
            })
            .sum()
    };
    if let Some(per_split) = st["splits"].as_object() {
        // ECtHR: pairs (topics) and queries per split, paragraphs, labels.
        let mut labels = 0;
        for (split, s) in per_split {
            let got = &splits[&split_name(format, split)];
            let topics: Vec<&str> = match got["topics"].as_array() {
                Some(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                None => panic!("{what}: {split} has no topic list"),
            };
            assert_eq!(topics.len(), count(&s["pairs"]), "{what}: pairs of {split}");
            let queries: std::collections::BTreeSet<&str> = topics
                .iter()
                .filter_map(|t| read["topics"][*t]["query"].as_str())
                .collect();
            assert_eq!(queries.len(), count(&s["queries"]), "{what}: queries of {split}");
            labels += relevant(got);
        }
        let pair = &st["relevant_per_pair"];
        assert_eq!(
            labels,
            (pair["mean"].as_f64().unwrap() * pair["n"].as_f64().unwrap()).round() as usize,
            "{what}: labels"
        );
        assert_eq!(
            read["corpus"].as_object().unwrap().len(),
            count(&st["paragraph_tokens"]["n"]),
            "{what}: paragraphs"
        );
    } else {
        // BSARD: articles, questions per split, the derived splits, relevant articles.
        assert_eq!(
            read["corpus"].as_object().unwrap().len(),
            count(&st["articles"]),
            "{what}: articles"
        );
        let questions = |split: &str| -> usize {
            let got = &splits[&split_name(format, split)];
            match got["topics"].as_array() {
                Some(a) => a.len(),
                // BEIR and MTEB's retrieval form list a split's questions through its qrels.
                None => got["qrels"].as_object().unwrap().len(),
            }
        };
        let mut asked = 0;
        for (split, n) in st["questions"].as_object().unwrap() {
            assert_eq!(questions(split), count(n), "{what}: questions of {split}");
            asked += relevant(&splits[&split_name(format, split)]);
        }
        for (split, n) in st["derived_from_train"]["splits"].as_object().unwrap() {
            assert_eq!(questions(split), count(n), "{what}: questions of {split}");
        }
        let per = &st["relevant_per_question"];
        assert_eq!(
            asked,
            (per["mean"].as_f64().unwrap() * per["n"].as_f64().unwrap()).round() as usize,
            "{what}: relevant articles"
        );
    }
}

/// Each run pytrec_eval scored equals `lexbench eval` of the same file against the dataset's qrels
/// (and pools).
fn check_runs(data: &Path, format: &str, name: &str, read: &Value, pooled: bool) {
    let dir = data.join("datasets").join(name);
    let ds = Dataset::open_in(data, name).unwrap();
    for split in ds.split_names().unwrap() {
        let run = &read["runs"][&split_name(format, &split)];
        let py = run["measures"]
            .as_object()
            .unwrap_or_else(|| panic!("{format} {name}: no run for {split}"));
        let measures: Vec<&str> = py.keys().map(String::as_str).collect();
        let file = run["file"].as_str().unwrap();
        let qrels = dir.join("qrels").join(format!("{split}.tsv"));
        let list = measures.join(",");
        let mut args = vec![
            "eval",
            file,
            qrels.to_str().unwrap(),
            "--measures",
            &list,
            "--format",
            "json",
        ];
        let pools = dir.join("pools.jsonl");
        if pooled {
            args.extend(["--pools", pools.to_str().unwrap()]);
            assert!(
                measures.contains(&"R@5%"),
                "{format} {name}: R@k% was not computed from the export"
            );
        }
        let out = lexbench_no_data(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ours: Value = serde_json::from_slice(&out.stdout).unwrap();
        for (m, v) in py {
            let (a, b) = (v.as_f64().unwrap(), ours["measures"][m].as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-12,
                "{format} {name} {split} {m}: pytrec_eval {a}, lexbench eval {b} (run {file})"
            );
        }
    }
}

/// Every file of `dir` with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let t = tree(dir);
    assert!(!t.is_empty(), "{}: nothing exported", dir.display());
    t
}

/// A pooled dataset whose pools have the sizes where the ways of rounding `k%` of a pool part
/// (21, 30, 41, 50, 101 documents; the sample's judgments all have 20 paragraphs, where they agree),
/// with one to three positives at varied ranks and two splits, one with a `-` in its name.
fn mixed_pools(data: &Path) {
    const WORDS: [&str; 12] = [
        "court",
        "article",
        "privacy",
        "press",
        "detention",
        "trial",
        "torture",
        "property",
        "vote",
        "family",
        "speech",
        "remedy",
    ];
    let mut tiny = lexbench_core::testing::TinyDataset::new(MIXED);
    for (i, size) in [21usize, 30, 41, 50, 101].into_iter().enumerate() {
        let docs: Vec<String> = (1..=size).map(|n| format!("j{i}:{n}")).collect();
        for (n, d) in docs.iter().enumerate() {
            let text: Vec<&str> = (0..4)
                .map(|k| WORDS[(i * 5 + n * 7 + k * 3) % WORDS.len()])
                .collect();
            tiny = tiny.doc(d, &text.join(" "));
        }
        let positives: Vec<&str> = [i * 3 % size, size / 2, size - 1][..1 + i % 3]
            .iter()
            .map(|&n| docs[n].as_str())
            .collect();
        let split = if i < 3 { "test" } else { "held-out" };
        let query = format!("{} {} {}", WORDS[i], WORDS[i + 3], WORDS[(i * 4) % WORDS.len()]);
        tiny = tiny
            .topic(&format!("q{i}/j{i}"), &format!("q{i}"), &query, &positives, split)
            .pool(
                &format!("q{i}/j{i}"),
                &docs.iter().map(String::as_str).collect::<Vec<_>>(),
            );
    }
    tiny.write_in(data).unwrap();
}

/// The name of [`mixed_pools`]'s dataset.
const MIXED: &str = "mixed-pools";

/// Exports the sample's datasets and [`mixed_pools`] as `format` twice (same bytes), opens them with
/// the libraries, checks them.
fn round_trip(format: &str) {
    let root = sample(format);
    let data = root.join("data");
    mixed_pools(&data);
    let mut exports = Vec::new();
    for name in ["ecthr", "bsard", MIXED] {
        let a = root.join(format!("{name}-{format}"));
        let b = root.join(format!("{name}-{format}-again"));
        export_ok(&data, name, format, &["--out", a.to_str().unwrap()]);
        export_ok(&data, name, format, &["--out", b.to_str().unwrap()]);
        let (fa, fb) = (files(&a), files(&b));
        assert_eq!(fa, fb, "two {format} exports of {name} differ");
        let record = read_json(&a.join("lexbench-export.json"));
        let version = json!(Dataset::open_in(&data, name).unwrap().hash());
        assert_eq!(
            record["version"], version,
            "{format} {name}: the export's version"
        );
        let sums = record["files"].as_object().unwrap();
        assert_eq!(
            sums.len() + 1,
            fa.len(),
            "{format} {name}: files listed in the record"
        );
        for (rel, bytes) in &fa {
            if rel != "lexbench-export.json" {
                assert_eq!(sums[rel], sha256_hex(bytes), "{format} {name}: {rel}");
            }
        }
        let readme = String::from_utf8(fa["README.md"].clone()).unwrap();
        assert!(
            readme.contains(version.as_str().unwrap()),
            "{format} {name}: the card names the version"
        );
        exports.push((name, a));
    }
    let read = roundtrip(&root, format, &exports);
    for (name, _) in &exports {
        check_export(&data, format, name, &read["datasets"][*name]);
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn hf_exports_open_with_datasets_and_score_as_lexbench_eval() {
    round_trip("hf");
}

#[test]
fn beir_exports_open_with_datasets_and_score_as_lexbench_eval() {
    round_trip("beir");
}

#[test]
fn mteb_exports_open_with_datasets_and_score_as_lexbench_eval() {
    round_trip("mteb");
}

#[test]
fn export_refuses_what_it_must_not_write() {
    let root = sample("refusals");
    let data = root.join("data");
    let fails = |args: &[&str], why: &str| {
        let out = lexbench(&data, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    };

    // The default folder.
    let stdout = export_ok(&data, "bsard", "beir", &[]);
    let default = data.join("exports/bsard-beir");
    assert!(default.join("corpus.jsonl").is_file(), "{stdout}");
    assert!(
        stdout.contains("test") && stdout.contains("13 topics"),
        "{stdout}"
    );

    // A non-empty --out is refused and left as it was; --force replaces it whole.
    let out = root.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let o = out.to_str().unwrap();
    fails(&["export", "ecthr", "--format", "hf", "--out", o], "not empty");
    assert_eq!(tree(&out).keys().collect::<Vec<_>>(), ["notes.txt"]);
    // --force replaces an earlier export only: a folder of the user's would be deleted whole.
    fails(
        &["export", "ecthr", "--format", "hf", "--out", o, "--force"],
        "is not an earlier export",
    );
    assert_eq!(tree(&out).keys().collect::<Vec<_>>(), ["notes.txt"]);
    // An earlier export (with a file added into it since) is replaced whole.
    std::fs::remove_file(out.join("notes.txt")).unwrap();
    export_ok(&data, "ecthr", "beir", &["--out", o]);
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let stdout = export_ok(&data, "ecthr", "hf", &["--out", o, "--force"]);
    assert!(stdout.contains("replacing"), "{stdout}");
    let now = tree(&out);
    assert!(
        !now.contains_key("notes.txt") && now.contains_key("README.md"),
        "{:?}",
        now.keys()
    );
    let beside: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(beside.is_empty(), "leftovers beside the export: {beside:?}");
    // An empty folder is taken without --force.
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    export_ok(&data, "ecthr", "mteb", &["--out", empty.to_str().unwrap()]);

    // Never into the dataset, never over the data directory, --force or not.
    let inside = data.join("datasets/ecthr/hf");
    fails(
        &[
            "export",
            "ecthr",
            "--format",
            "hf",
            "--out",
            inside.to_str().unwrap(),
            "--force",
        ],
        "inside the dataset",
    );
    assert!(!inside.exists());
    let before = tree(&data);
    for over in [
        data.clone(),
        root.clone(),
        data.join("datasets/ecthr"),
        data.join("datasets"),
    ] {
        fails(
            &[
                "export",
                "ecthr",
                "--format",
                "hf",
                "--out",
                over.to_str().unwrap(),
                "--force",
            ],
            "",
        );
    }
    assert_eq!(tree(&data), before, "a refused export changed the data directory");

    // The format is an export format.
    fails(&["export", "ecthr"], "needs --format hf, beir or mteb");
    fails(
        &["export", "ecthr", "--format", "json"],
        "writes hf, beir or mteb",
    );
    fails(&["stats", "ecthr", "--format", "hf"], "is for `lexbench export`");

    // A dataset changed after its build is not exported.
    let queries = data.join("datasets/bsard/queries.jsonl");
    let mut text = std::fs::read_to_string(&queries).unwrap();
    text.push('\n');
    std::fs::write(&queries, text).unwrap();
    let fresh = root.join("fresh");
    fails(
        &[
            "export",
            "bsard",
            "--format",
            "hf",
            "--out",
            fresh.to_str().unwrap(),
        ],
        "differ from manifest.json",
    );
    assert!(!fresh.exists());
    let _ = std::fs::remove_dir_all(&root);
}
