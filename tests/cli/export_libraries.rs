//! The MTEB and BEIR exports opened and evaluated by the libraries themselves (issue 58, item 1):
//! `mteb` 2.26.0 and `beir` 2.2.0, which `scripts/python-tools` installs into `$LEXBENCH_HF_VENV`
//! (default `target/hf-ref-venv`, the environment with PyTorch and sentence-transformers that
//! `scripts/hf-replicas` makes), with the real all-MiniLM-L6-v2 (`models/minilm`). The Python side is
//! `scripts/export_libraries.py`, offline. They need PyTorch, which a newcomer's `scripts/test` does not
//! install: they are `#[ignore]`d there and run by `scripts/test --full` and CI (`CI=true`), which
//! make that environment; without it or the model they fail, naming what to run.
//!
//! Properties checked, on the embedded sample's BSARD (retrieval), ECtHR (per-judgment reranking) and
//! ECtHR's open-corpus setting (retrieval, no candidates; issue 73):
//! - mteb: `mteb_metadata.json` passes MTEB's own `TaskMetadata` (its schema forbids fields it does
//!   not know, and its category and type vocabularies are 2.x's), `AbsTaskRetrieval.load_data` reads
//!   the folder, and what it read is the dataset: every corpus text, every evaluated topic's text,
//!   each evaluated split's qrels with their grades, and for ECtHR each topic's candidates
//!   (`top_ranked`) are its pool, in order;
//! - beir: `GenericDataLoader.load(split)` reads every split: the corpus, the split's topics and its
//!   qrels equal the dataset's;
//! - each library's evaluation of MiniLM (its own ranking, saved and written as a TREC run) scores as
//!   `lexbench eval` of that run where their measures overlap: nDCG@10, AP (MAP@1000), R@100, P@5,
//!   and for MTEB RR (MRR@1000), to the libraries' 5-decimal rounding; on BSARD nDCG@10 is
//!   that of a working model (the 0.52), not of a ranking by chance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use lexbench_core::ReadOptions;
use lexbench_core::dataset::Dataset;
use serde_json::Value;

use crate::common::{lexbench, lexbench_no_data, minilm, sample_data};

/// The datasets exported: the sample's BSARD (retrieval), ECtHR (per-judgment reranking) and ECtHR's
/// open-corpus setting (retrieval over every paragraph, `lexbench build open`).
const EXPORTED: [&str; 3] = ["bsard", "ecthr", "ecthr-open"];

/// The Python with mteb, beir and sentence-transformers; its absence fails the test.
fn python() -> PathBuf {
    crate::common::venv_python(
        "LEXBENCH_HF_VENV",
        "hf-ref-venv",
        "these tests open the exports with mteb and beir from that environment. Run scripts/hf-replicas \
         --env and then scripts/python-tools mteb (scripts/test --full does both), or set LEXBENCH_HF_VENV",
    )
}

/// Exports the sample's BSARD and ECtHR as `format` and runs scripts/export_libraries.py on them.
fn exported(format: &str) -> (PathBuf, Value) {
    let root = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-export-lib-{}-{format}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let data = root.join("data");
    sample_data(&data);
    let o = lexbench(&data, &["build", "open", "--from", "ecthr"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut specs = Vec::new();
    for name in EXPORTED {
        let out = root.join(format!("{name}-{format}"));
        let o = lexbench(
            &data,
            &["export", name, "--format", format, "--out", out.to_str().unwrap()],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        specs.push(format!("{name}={}", out.display()));
    }
    let runs = root.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/export_libraries.py");
    let home = root.join("hf-home");
    let out = Command::new(python())
        .arg(&script)
        .arg(format)
        .arg(minilm())
        .arg(&runs)
        .args(&specs)
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .env("HF_HOME", &home)
        .env("HF_DATASETS_CACHE", home.join("datasets"))
        .env("MTEB_CACHE", root.join("mteb-cache"))
        .env("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        .env("TQDM_DISABLE", "1")
        .env("TOKENIZERS_PARALLELISM", "false")
        .output()
        .expect("run export_libraries.py");
    assert!(
        out.status.success(),
        "export_libraries.py {format} failed on today's {format} export:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "export_libraries.py {format} printed no JSON ({e}): {:.2000}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (root, read)
}

/// `lexbench eval RUN QRELS --measures M --format json`'s measures.
fn lexbench_eval(run: &str, qrels: &Path, measures: &[&str]) -> Value {
    let list = measures.join(",");
    let out = lexbench_no_data(&[
        "eval",
        run,
        qrels.to_str().unwrap(),
        "--measures",
        &list,
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["measures"].clone()
}

/// Checks what `lib` read of dataset `name` against the dataset, split by split (`split_name`: the
/// export's name of a split, `None` for a split the library does not read), and each evaluated
/// split's scores against `lexbench eval` (`pairs`: the library's measure, ours, the tolerance).
fn check(
    data: &Path,
    lib: &str,
    name: &str,
    read: &Value,
    split_name: &dyn Fn(&str) -> String,
    pairs: &[(&str, &str, f64)],
) {
    let ds = Dataset::open_in(data, name).unwrap();
    let what = format!("{lib} on the {name} export");
    let docs: Vec<lexbench_core::dataset::CorpusDoc> = ds.corpus().unwrap();
    let texts: BTreeMap<String, String> = docs.into_iter().map(|d| (d.doc.to_string(), d.text)).collect();
    let corpus: BTreeMap<String, String> = serde_json::from_value(read["corpus"].clone()).unwrap();
    assert_eq!(corpus, texts, "{what}: the corpus");
    let topics: BTreeMap<String, String> = ds
        .topics()
        .unwrap()
        .into_iter()
        .map(|t| (t.topic.to_string(), t.text))
        .collect();
    let queries: BTreeMap<String, String> = serde_json::from_value(read["queries"].clone()).unwrap();
    for (t, text) in &queries {
        assert_eq!(topics.get(t), Some(text), "{what}: the text of topic {t}");
    }
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
    let splits = read["splits"].as_object().unwrap();
    let mut evaluated = 0;
    for split in ds.split_names().unwrap() {
        let Some(got) = splits.get(&split_name(&split)) else {
            continue;
        };
        let qrels = ds.qrels(&split, &ReadOptions::default()).unwrap();
        let want: BTreeMap<String, BTreeMap<String, i64>> = qrels
            .topics
            .iter()
            .map(|(t, docs)| {
                let docs = docs.iter().map(|(d, g)| (d.to_string(), i64::from(*g))).collect();
                (t.to_string(), docs)
            })
            .collect();
        let got_qrels: BTreeMap<String, BTreeMap<String, i64>> =
            serde_json::from_value(got["qrels"].clone()).unwrap();
        assert_eq!(got_qrels, want, "{what}: the qrels of {split}");
        for t in want.keys() {
            assert!(
                queries.contains_key(t),
                "{what}: {split}'s topic {t} was not read"
            );
        }
        if !got["top_ranked"].is_null() {
            let top: BTreeMap<String, Vec<String>> =
                serde_json::from_value(got["top_ranked"].clone()).unwrap();
            for (t, docs) in &top {
                assert_eq!(
                    Some(docs),
                    pools.get(t),
                    "{what}: the candidates of {t} in {split}"
                );
            }
            assert_eq!(top.len(), want.len(), "{what}: candidates of {split}");
        } else {
            assert!(
                pools.is_empty() || lib == "beir",
                "{what}: {split} lost its pools"
            );
        }
        if name.ends_with("-open") {
            assert!(
                got["top_ranked"].is_null() && pools.is_empty(),
                "{what}: the open corpus is a plain retrieval task, without candidates"
            );
        }
        let Some(scores) = got["scores"].as_object() else {
            continue;
        };
        evaluated += 1;
        let run = got["run"].as_str().unwrap();
        let qrels_file = data
            .join("datasets")
            .join(name)
            .join(format!("qrels/{split}.tsv"));
        let ours_names: Vec<&str> = pairs.iter().map(|(_, o, _)| *o).collect();
        let ours = lexbench_eval(run, &qrels_file, &ours_names);
        for (theirs, o, tol) in pairs {
            let a = scores
                .get(*theirs)
                .and_then(Value::as_f64)
                .unwrap_or_else(|| panic!("{what}: {split} has no {theirs}: {scores:?}"));
            let b = ours[*o].as_f64().unwrap();
            assert!(
                (a - b).abs() <= *tol,
                "{what}, {split}: {lib}'s {theirs} {a}, lexbench eval's {o} {b} (run {run})"
            );
        }
        if name == "bsard" && split == "test" {
            let ndcg = ours["nDCG@10"].as_f64().unwrap();
            assert!(
                ndcg > 0.4,
                "{what}: MiniLM's nDCG@10 {ndcg} is not a working model's"
            );
        }
    }
    assert!(evaluated > 0, "{what}: no split was evaluated");
}

#[test]
#[ignore = "needs PyTorch (target/hf-ref-venv): scripts/test --full runs it, as CI does"]
fn mteb_2_loads_the_mteb_export_and_scores_as_lexbench_eval() {
    let (root, read) = exported("mteb");
    assert_eq!(read["versions"]["mteb"], "2.26.0", "{}", read["versions"]);
    let data = root.join("data");
    // MTEB rounds its means to 5 decimals.
    let pairs = [
        ("ndcg_at_10", "nDCG@10", 5e-6),
        ("map_at_1000", "AP", 5e-6),
        ("recall_at_100", "R@100", 5e-6),
        ("precision_at_5", "P@5", 5e-6),
        ("mrr_at_1000", "RR", 5e-6),
    ];
    for name in EXPORTED {
        let r = &read["datasets"][name];
        check(&data, "mteb", name, r, &|s| s.replace('-', "_"), &pairs);
        let meta = crate::common::read_json(&root.join(format!("{name}-mteb/mteb_metadata.json")));
        for split in r["splits"].as_object().unwrap().values() {
            assert_eq!(
                split["main_score"],
                split["scores"][meta["main_score"].as_str().unwrap()]
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
#[ignore = "needs PyTorch (target/hf-ref-venv): scripts/test --full runs it, as CI does"]
fn beir_loads_the_beir_export_and_scores_as_lexbench_eval() {
    let (root, read) = exported("beir");
    assert_eq!(read["versions"]["beir"], "2.2.0", "{}", read["versions"]);
    let data = root.join("data");
    // BEIR rounds its means to 5 decimals.
    let pairs = [
        ("NDCG@10", "nDCG@10", 5e-6),
        ("MAP@1000", "AP", 5e-6),
        ("Recall@100", "R@100", 5e-6),
        ("P@5", "P@5", 5e-6),
    ];
    for name in EXPORTED {
        check(
            &data,
            "beir",
            name,
            &read["datasets"][name],
            &|s| s.to_owned(),
            &pairs,
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
