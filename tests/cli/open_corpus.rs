//! The open-corpus setting (`lexbench build open`, `lexbench project`), on the embedded sample:
//! - derived from the per-judgment dataset: the same corpus byte for byte, one topic per heading,
//!   relevant = the union of the heading's labels over every judgment, recomputed here from the
//!   source's files; the seen setting's headings in `train`, the unseen settings' in their own
//!   splits; `task.json` names the source's version; the certificate passes;
//! - scored as an open-domain retrieval task: the harness's BM25 baseline records nDCG@10, R@100,
//!   R@1000, AP and RR@10, and the board shows the section "Open corpus";
//! - a heading in two settings is a leak: the derivation is refused, naming the check, and writes nothing;
//! - dense runs rank the whole corpus; ColBERT reranks a first stage (`--rerank bm25 --depth N`, or
//!   BM25's top 1,000 ranked in memory without it);
//! - `lexbench project` reads an open ranking as the per-judgment task: an open run made of the
//!   per-judgment BM25 runs scores, projected, exactly as those runs do under `lexbench eval`.

use std::collections::{BTreeMap, BTreeSet};

use lexbench_core::dataset::{Dataset, DatasetManifest};
use lexbench_core::{ReadOptions, Run, Task};
use serde_json::Value;

use crate::common::{lexbench, read_json, sample_data};

fn scratch(name: &str) -> std::path::PathBuf {
    lexbench_core::testing::scratch_root().join(format!("lexbench-open-{}-{name}", std::process::id()))
}

fn ok(o: &std::process::Output) -> String {
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The open split of a source split.
fn open_split(s: &str) -> &'static str {
    match s {
        "train" | "val" | "test" => "train",
        "unseen_query" => "unseen_query",
        "unseen_guide" => "unseen_guide",
        other => panic!("unexpected split {other}"),
    }
}

#[test]
fn the_open_setting_is_the_union_of_a_headings_labels_over_the_whole_corpus() {
    let data = scratch("derive");
    sample_data(&data);
    ok(&lexbench(&data, &["build", "open", "--from", "ecthr"]));
    let src = Dataset::open_in(&data, "ecthr").unwrap();
    let open = Dataset::open_in(&data, "ecthr-open").unwrap();

    assert_eq!(open.task().unwrap(), Task::OpenCorpus);
    assert!(
        open.pools().unwrap().is_none(),
        "no pools: every topic ranks the corpus"
    );
    let from = open.task_file().unwrap().unwrap().derived_from.unwrap();
    assert_eq!((from.name.as_str(), from.hash), ("ecthr", src.hash()));
    assert_eq!(
        open.verified_bytes("corpus.jsonl").unwrap(),
        src.verified_bytes("corpus.jsonl").unwrap(),
        "the corpus is the source's, byte for byte"
    );

    // What the open setting must be, recomputed from the source's files.
    let topics = src.topics().unwrap();
    let query_of: BTreeMap<String, String> = topics
        .iter()
        .map(|t| (t.topic.to_string(), t.query.to_string()))
        .collect();
    let mut want_rel: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut want_split: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for split in src.split_names().unwrap() {
        for t in src.split(&split).unwrap().topics {
            want_split
                .entry(query_of[t.as_str()].clone())
                .or_default()
                .insert(open_split(&split));
        }
        for (t, docs) in src.qrels(&split, &ReadOptions::default()).unwrap().topics {
            let e = want_rel.entry(query_of[t.as_str()].clone()).or_default();
            e.extend(docs.iter().filter(|(_, g)| **g >= 1).map(|(d, _)| d.to_string()));
        }
    }
    assert!(
        want_split.values().all(|s| s.len() == 1),
        "the sample's settings keep each heading in one open split"
    );
    let several = want_rel.values().filter(|d| {
        d.iter()
            .map(|d| d.split(':').next().unwrap())
            .collect::<BTreeSet<_>>()
            .len()
            > 1
    });
    assert!(
        several.count() > 0,
        "some heading of the sample cites two judgments (else the union is not exercised)"
    );

    let mut got_rel: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut got_split: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for split in open.split_names().unwrap() {
        let s: &'static str = open_split(&split);
        for t in open.split(&split).unwrap().topics {
            got_split.entry(t.to_string()).or_default().insert(s);
        }
        for (t, docs) in open.qrels(&split, &ReadOptions::default()).unwrap().topics {
            got_rel
                .entry(t.to_string())
                .or_default()
                .extend(docs.keys().map(ToString::to_string));
        }
    }
    assert_eq!(
        open.split_names().unwrap(),
        ["train", "unseen_guide", "unseen_query"]
    );
    assert_eq!(got_rel, want_rel, "relevant = the union of each heading's labels");
    assert_eq!(got_split, want_split, "each heading in its setting's split");
    let open_topics = open.topics().unwrap();
    assert_eq!(open_topics.len(), want_rel.len(), "one topic per heading");
    for t in &open_topics {
        assert_eq!(t.topic.as_str(), t.query.as_str());
        assert!(t.item.is_none() && t.guide.is_some());
    }
    let cert = read_json(&data.join("datasets/ecthr-open/certificate.json"));
    assert_eq!(cert["passed"], true, "{cert}");
    assert_eq!(cert["checks"].as_array().unwrap().len(), 6);

    // Scored as a retrieval task over the corpus.
    ok(&lexbench(
        &data,
        &["submit", "--baseline", "--dataset", "ecthr-open"],
    ));
    let mut entries = 0;
    for e in std::fs::read_dir(data.join("leaderboard/entries")).unwrap() {
        let e = read_json(&e.unwrap().path());
        if e["dataset"]["name"] == "ecthr-open" {
            entries += 1;
            assert_eq!(e["dataset"]["task"], "open-corpus");
            assert_eq!(
                e["measures"],
                serde_json::json!(["nDCG@10", "R@100", "R@1000", "AP", "RR@10"])
            );
        }
    }
    assert!(entries > 0, "the baseline recorded entries on the open setting");
    ok(&lexbench(&data, &["leaderboard"]));
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(md.contains("## Open corpus: ecthr-open"), "{md}");
    assert!(md.contains("unseen\\_query nDCG@10"), "{md}");
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn a_heading_in_two_settings_is_refused_and_nothing_is_written() {
    let data = scratch("leak");
    sample_data(&data);
    // Move one training pair whose heading keeps other seen pairs into unseen_query: its heading is
    // then in two open splits.
    let dir = data.join("datasets/ecthr");
    let src = Dataset::open_in(&data, "ecthr").unwrap();
    let query = |t: &str| t.split('/').next().unwrap().to_owned();
    let train: Vec<String> = src
        .split("train")
        .unwrap()
        .topics
        .iter()
        .map(ToString::to_string)
        .collect();
    let seen: Vec<String> = ["train", "val", "test"]
        .iter()
        .flat_map(|s| src.split(s).unwrap().topics)
        .map(|t| t.to_string())
        .collect();
    let moved = train
        .iter()
        .find(|t| seen.iter().filter(|o| query(o) == query(t)).count() > 1)
        .expect("a seen heading with two pairs")
        .clone();
    let mut split_files = BTreeMap::new();
    for s in ["train", "unseen_query"] {
        split_files.insert(s, read_json(&dir.join(format!("splits/{s}.json"))));
    }
    let keep: Vec<Value> = split_files["train"]["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t.as_str() != Some(moved.as_str()))
        .cloned()
        .collect();
    split_files.get_mut("train").unwrap()["topics"] = Value::Array(keep);
    split_files.get_mut("unseen_query").unwrap()["topics"]
        .as_array_mut()
        .unwrap()
        .push(Value::String(moved.clone()));
    for (s, v) in &split_files {
        std::fs::write(dir.join(format!("splits/{s}.json")), v.to_string()).unwrap();
    }
    let mut qrels: BTreeMap<&str, String> = BTreeMap::new();
    for s in ["train", "unseen_query"] {
        qrels.insert(
            s,
            std::fs::read_to_string(dir.join(format!("qrels/{s}.tsv"))).unwrap(),
        );
    }
    let (moved_lines, kept): (Vec<&str>, Vec<&str>) = qrels["train"]
        .lines()
        .partition(|l| l.split_whitespace().next() == Some(moved.as_str()));
    std::fs::write(dir.join("qrels/train.tsv"), kept.join("\n") + "\n").unwrap();
    std::fs::write(
        dir.join("qrels/unseen_query.tsv"),
        format!("{}{}\n", qrels["unseen_query"], moved_lines.join("\n")),
    )
    .unwrap();
    DatasetManifest::write_with_language(&dir, "ecthr", "test", src.manifest().language).unwrap();

    let o = lexbench(&data, &["build", "open", "--from", "ecthr"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("every heading is in exactly one split"), "{err}");
    assert!(err.contains(&query(&moved)), "{err}");
    assert!(!data.join("datasets/ecthr-open").exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn an_open_run_projected_onto_its_judgments_scores_as_the_per_judgment_runs() {
    let data = scratch("project");
    sample_data(&data);
    ok(&lexbench(&data, &["build", "open", "--from", "ecthr"]));
    let src = Dataset::open_in(&data, "ecthr").unwrap();
    let query_of: BTreeMap<String, String> = src
        .topics()
        .unwrap()
        .iter()
        .map(|t| (t.topic.to_string(), t.query.to_string()))
        .collect();
    // The per-judgment BM25 runs of every split, merged per heading into one open run per open split.
    let mut open_runs: BTreeMap<&str, Run> = BTreeMap::new();
    let mut per_split: BTreeMap<String, Value> = BTreeMap::new();
    for split in src.split_names().unwrap() {
        ok(&lexbench(
            &data,
            &["run", "bm25", "--dataset", "ecthr", "--split", &split],
        ));
        let path = data.join(format!("runs/ecthr/{split}/bm25.trec"));
        let run = Run::read(&path, &ReadOptions::default()).unwrap();
        let merged = open_runs
            .entry(open_split(&split))
            .or_insert_with(|| Run::new("bm25"));
        for (t, hits) in run.topics {
            let q = lexbench_core::TopicId::new(query_of[t.as_str()].clone()).unwrap();
            merged.topics.entry(q).or_default().extend(hits);
        }
        let pools = data.join("datasets/ecthr/pools.jsonl");
        let qrels = data.join(format!("datasets/ecthr/qrels/{split}.tsv"));
        let out = ok(&crate::common::lexbench_no_data(&[
            "eval",
            path.to_str().unwrap(),
            qrels.to_str().unwrap(),
            "--pools",
            pools.to_str().unwrap(),
            "-m",
            "R@2%,R@5%,R@10%,R@2%nearest,R@5%nearest,R@10%nearest",
            "--format",
            "json",
        ]));
        per_split.insert(
            split,
            serde_json::from_str::<Value>(&out).unwrap()["measures"].clone(),
        );
    }
    let mut compared = 0;
    for (open_split, run) in &mut open_runs {
        run.sort();
        let file = data.join(format!("open-{open_split}.trec"));
        run.write(&file).unwrap();
        let out = ok(&lexbench(
            &data,
            &[
                "project",
                file.to_str().unwrap(),
                "--dataset",
                "ecthr-open",
                "--split",
                open_split,
                "--format",
                "json",
            ],
        ));
        let got: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(got["source"], "ecthr");
        for (split, v) in got["splits"].as_object().unwrap() {
            let want = &per_split[split];
            for (m, x) in v["measures"].as_object().unwrap() {
                let (a, b) = (x.as_f64().unwrap(), want[m].as_f64().unwrap());
                assert!(
                    (a - b).abs() < 1e-12,
                    "{split} {m}: projected {a}, per-judgment {b}"
                );
            }
            compared += 1;
        }
    }
    assert_eq!(compared, per_split.len(), "every source split was projected");
    // A split the open setting does not have is an error.
    let o = lexbench(
        &data,
        &[
            "project",
            data.join("open-train.trec").to_str().unwrap(),
            "--dataset",
            "ecthr-open",
            "--split",
            "test",
        ],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not one of the open setting's"));
    let _ = std::fs::remove_dir_all(&data);
}

/// The open setting's files never depend on where it was built: two derivations in two data
/// directories give the same dataset version.
#[test]
fn the_open_setting_is_the_same_version_wherever_it_is_derived() {
    let (a, b) = (scratch("same-a"), scratch("same-b"));
    let mut hashes = Vec::new();
    for d in [&a, &b] {
        sample_data(d);
        ok(&lexbench(
            d,
            &["build", "open", "--from", "ecthr", "--name", "open-x"],
        ));
        hashes.push(Dataset::open_in(d, "open-x").unwrap().hash());
    }
    assert_eq!(hashes[0], hashes[1]);
    for d in [&a, &b] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The neural runs over the open corpus: dense by exact search over every paragraph (the run is the
/// same as scoring every paragraph one by one, `scorers::exact`'s tests), ColBERT reranking BM25's
/// top 20 of each topic (`--rerank bm25 --depth 20`): every document it ranks is one of those, and it
/// ranks all of them.
#[test]
fn dense_ranks_the_whole_corpus_and_colbert_reranks_a_first_stage() {
    let data = scratch("neural");
    sample_data(&data);
    ok(&lexbench(&data, &["build", "open", "--from", "ecthr"]));
    let model = crate::common::minilm();
    let model = model.to_str().unwrap();
    let at = ["--dataset", "ecthr-open", "--split", "unseen_query"];
    ok(&lexbench(&data, &[&["run", "bm25"][..], &at].concat()));
    ok(&lexbench(
        &data,
        &[&["run", "dense", "--model", model, "--top-k", "30"][..], &at].concat(),
    ));
    let o = lexbench(
        &data,
        &[&["run", "colbert", "--model", model, "--depth", "20"][..], &at].concat(),
    );
    assert!(!o.status.success(), "--depth without --rerank is refused");
    ok(&lexbench(
        &data,
        &[
            &[
                "run", "colbert", "--model", model, "--rerank", "bm25", "--depth", "20",
            ][..],
            &at,
        ]
        .concat(),
    ));
    let read = |system: &str| {
        Run::read(
            &data.join(format!("runs/ecthr-open/unseen_query/{system}.trec")),
            &ReadOptions::default(),
        )
        .unwrap()
    };
    let (bm25, dense, colbert) = (read("bm25"), read("dense"), read("colbert"));
    let corpus = Dataset::open_in(&data, "ecthr-open")
        .unwrap()
        .corpus::<lexbench_core::dataset::CorpusDoc>()
        .unwrap()
        .len();
    assert!(
        corpus > 30,
        "the sample's corpus is larger than the dense run's depth"
    );
    let items = |hits: &[lexbench_core::Hit]| {
        hits.iter()
            .map(|h| h.doc.as_str().split(':').next().unwrap().to_owned())
            .collect::<BTreeSet<_>>()
    };
    for (t, hits) in &dense.topics {
        assert_eq!(hits.len(), 30, "{t}: the top 30 of the whole corpus");
        assert!(
            items(hits).len() > 1,
            "{t}: paragraphs of several judgments ranked together"
        );
    }
    for (t, first) in &bm25.topics {
        let mut first = first.clone();
        first.sort_by(lexbench_core::trec::trec_order);
        first.truncate(20);
        let want: BTreeSet<&str> = first.iter().map(|h| h.doc.as_str()).collect();
        let got: BTreeSet<&str> = colbert.topics[t].iter().map(|h| h.doc.as_str()).collect();
        assert_eq!(got, want, "{t}: ColBERT reranks exactly BM25's top 20");
    }
    let side = read_json(&data.join("runs/ecthr-open/unseen_query/colbert.json"));
    assert_eq!(
        side["config"]["first_stage"],
        serde_json::json!({"system": "bm25", "depth": 20}),
        "{side}"
    );
    assert!(side["config"]["first_stage_ranked_here"].is_null());
    // Without --rerank, over the open corpus (and so in the harness's `submit --model`): BM25's top
    // 1,000, ranked here, not every paragraph token by token.
    ok(&lexbench(
        &data,
        &[
            &["run", "colbert", "--model", model, "--system", "colbert-all"][..],
            &at,
        ]
        .concat(),
    ));
    let side = read_json(&data.join("runs/ecthr-open/unseen_query/colbert-all.json"));
    assert_eq!(
        side["config"]["first_stage"],
        serde_json::json!({"system": "bm25", "depth": 1000}),
        "{side}"
    );
    assert_eq!(side["config"]["first_stage_ranked_here"], true, "{side}");
    for (t, hits) in &read("colbert-all").topics {
        let first: BTreeSet<&str> = bm25.topics[t].iter().map(|h| h.doc.as_str()).collect();
        assert!(
            hits.iter().all(|h| first.contains(h.doc.as_str())),
            "{t}: only BM25's documents"
        );
        assert_eq!(hits.len(), first.len().min(1000), "{t}");
    }
    let _ = std::fs::remove_dir_all(&data);
}

/// `--open` on `build ecthr` derives NAME-open beside the dataset, the same as `build open` would.
#[test]
fn build_ecthr_open_derives_the_setting_beside_the_dataset() {
    let data = scratch("flag");
    sample_data(&data);
    ok(&lexbench(&data, &["build", "ecthr", "--name", "e2", "--open"]));
    let open = Dataset::open_in(&data, "e2-open").unwrap();
    assert_eq!(open.task().unwrap(), Task::OpenCorpus);
    let from = open.task_file().unwrap().unwrap().derived_from.unwrap();
    assert_eq!(from.hash, Dataset::open_in(&data, "e2").unwrap().hash());
    ok(&lexbench(
        &data,
        &["build", "open", "--from", "e2", "--name", "e2-again"],
    ));
    assert_eq!(
        open.verified_bytes("qrels/unseen_query.tsv").unwrap(),
        Dataset::open_in(&data, "e2-again")
            .unwrap()
            .verified_bytes("qrels/unseen_query.tsv")
            .unwrap()
    );
    // `import release --open` needs judgment texts.
    let o = lexbench(&data, &["import", "release", "somewhere", "--open"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--texts"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&data);
}
