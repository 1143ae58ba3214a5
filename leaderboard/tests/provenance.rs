//! Provenance, integrity and portable results of leaderboard entries.
//!
//! Properties checked, on a tiny pooled dataset written in the test:
//! - `submit` (a run file) always writes a self-reported entry, whatever its card and sidecar say;
//!   `submit_verified` (the model path) writes a verified one, and requires a model card whose
//!   problems (missing or blank fields, the baseline's name, a `dataset_hash`) name the card file
//!   and line;
//! - every new entry carries a seal that matches its content; an entry edited afterwards (to say
//!   verified, or a score) fails its integrity check: left out of the board (listed as tampered),
//!   refused by `find_entry`; a schema-1 entry that says it is verified fails it too;
//! - the board shows a verified row with ✓ apart from the same system's self-reported row, and
//!   `verified_only` keeps verified rows and the baseline;
//! - export then import into a fresh data directory with the same dataset renders the same pages
//!   byte for byte, and importing again changes nothing; import refuses (naming the file, writing
//!   nothing) an unknown format version, an unknown entry schema, a dataset version other than the
//!   one built here, a dataset not built, a broken seal, and a score that is not the mean of its
//!   per-topic values;
//! - `recheck::compare` finds a one-ulp difference in a per-topic value and a different run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lexbench_core::testing::TinyDataset;
use lexbench_leaderboard::entry::{Harness, ModelRef, entries_dir, read_entries, seal_of};
use lexbench_leaderboard::{
    Error, ModelKind, Provenance, RenderOptions, SubmitRequest, portable, render_site, render_site_with,
    submit, submit_verified,
};

const TOPICS: usize = 12;
const POOL: usize = 10;

fn scratch(name: &str) -> PathBuf {
    let dir =
        lexbench_core::testing::scratch_root().join(format!("lexbench-prov-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn topic(i: usize) -> String {
    format!("q{i}/001-{}", 2000 + i)
}
fn doc(i: usize, j: usize) -> String {
    format!("001-{}:{}", 2000 + i, j + 1)
}

/// TOPICS topics ranking their own judgment's POOL paragraphs; paragraph 2 is relevant. `salt`
/// changes a text (another dataset version). Returns the dataset hash.
fn dataset(data: &Path, salt: &str) -> String {
    let mut ds = TinyDataset::new("mini");
    for i in 0..TOPICS {
        let docs: Vec<String> = (0..POOL).map(|j| doc(i, j)).collect();
        let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
        for d in &docs {
            ds = ds.doc(d, &format!("text of {d} {salt}"));
        }
        ds = ds
            .topic(&topic(i), &format!("q{i}"), "query", &[docs[1]], "test")
            .pool(&topic(i), &docs);
    }
    ds.open_in(data).unwrap().hash()
}

/// A run ranking each pool in the order `order(i)`.
fn run(path: &Path, tag: &str, order: impl Fn(usize) -> Vec<usize>) {
    let mut s = String::new();
    for i in 0..TOPICS {
        for (r, j) in order(i).into_iter().enumerate() {
            s.push_str(&format!(
                "{} Q0 {} {} {} {tag}\n",
                topic(i),
                doc(i, j),
                r + 1,
                50 - r
            ));
        }
    }
    std::fs::write(path, s).unwrap();
}

fn good_card(dir: &Path) -> PathBuf {
    let p = dir.join("card.toml");
    std::fs::write(
        &p,
        "name = \"Model X\"\ndescription = \"a model\"\nbase_model = \"none\"\nlicense = \"MIT\"\ntraining_data = \"none\"\n",
    )
    .unwrap();
    p
}

fn harness() -> Harness {
    Harness {
        model: ModelRef {
            path: "/models/x".into(),
            kind: ModelKind::BiEncoder,
            sha256: "ab".repeat(32),
            files: BTreeMap::from([("config.json".into(), "cd".repeat(32))]),
            architecture: None,
            checkpoint: None,
        },
        lexbench_version: "0.1.0".into(),
        git_revision: None,
        device: "cpu".into(),
        seconds: 1.5,
        submission: "model-x-1".into(),
        lengths: Some(lexbench_leaderboard::entry::RankLengths {
            query: Some(128),
            document: 128,
            source: "sentence_bert_config.json max_seq_length".into(),
        }),
    }
}

fn req<'a>(data: &'a Path, run: &'a Path, name: &'a str, card: Option<&'a Path>) -> SubmitRequest<'a> {
    SubmitRequest {
        data,
        run,
        dataset: "mini",
        split: "test",
        name,
        card,
    }
}

/// A data directory with the dataset, a BM25 baseline, a verified "Model X" and a self-reported
/// "Model X" (the same run file, submitted as a run).
fn board_data(name: &str) -> (PathBuf, String) {
    let data = scratch(name);
    let hash = dataset(&data, "");
    let bm25 = data.join("bm25.trec");
    run(&bm25, "bm25", |i| (0..POOL).map(|j| (j + i) % POOL).collect());
    let side = serde_json::json!({"schema_version": 1, "system": "bm25", "dataset": "mini", "split": "test",
        "dataset_hash": hash, "program": "lexbench-baselines 0.1.0"});
    std::fs::write(bm25.with_extension("json"), side.to_string()).unwrap();
    let mut h = harness();
    h.model = ModelRef {
        path: "builtin:bm25".into(),
        kind: ModelKind::Bm25,
        sha256: "ef".repeat(32),
        files: BTreeMap::new(),
        architecture: None,
        checkpoint: None,
    };
    lexbench_leaderboard::submit_baseline(&req(&data, &bm25, "BM25", None), h).unwrap();
    let model = data.join("model.trec");
    run(&model, "harness-model-x", |_| (1..POOL).chain([0]).collect());
    let card = good_card(&data);
    submit_verified(&req(&data, &model, "Model X", Some(&card)), harness()).unwrap();
    submit(&req(&data, &model, "Model X", Some(&card))).unwrap();
    (data, hash)
}

#[test]
fn run_files_are_self_reported_and_only_the_model_path_verifies() {
    let (data, _) = board_data("provenance");
    let set = read_entries(&entries_dir(&data)).unwrap();
    assert!(set.tampered.is_empty() && set.skipped.is_empty());
    let marks: Vec<(String, bool)> = set
        .entries
        .iter()
        .map(|e| (e.system.clone(), e.provenance.is_verified()))
        .collect();
    assert_eq!(
        marks,
        [
            ("BM25".to_owned(), true),
            ("Model X".to_owned(), true),
            ("Model X".to_owned(), false)
        ]
    );
    for e in &set.entries {
        let v = serde_json::to_value(e).unwrap();
        assert_eq!(e.seal.as_deref(), Some(seal_of(&v).as_str()), "sealed");
    }
    let verified = &set.entries[1];
    assert_eq!(verified.provenance.harness(), Some(&harness()));

    let out = render_site(&data).unwrap();
    let rows: Vec<(String, bool)> = out.boards[0]
        .rows
        .iter()
        .map(|r| (r.system.clone(), r.verified))
        .collect();
    assert!(rows.contains(&("Model X".into(), true)) && rows.contains(&("Model X".into(), false)));
    let md = std::fs::read_to_string(&out.markdown).unwrap();
    assert!(md.contains("| Model X ✓ |") && md.contains("| Model X |"), "{md}");
    let html = std::fs::read_to_string(&out.html).unwrap();
    assert!(html.contains("class=\"self-reported\"") && html.contains("class=\"verified\""));

    let only = render_site_with(&data, &RenderOptions { verified_only: true }).unwrap();
    let rows: Vec<(String, bool)> = only.boards[0]
        .rows
        .iter()
        .map(|r| (r.system.clone(), r.verified))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.contains(&("Model X".into(), true)) && rows.contains(&("BM25".into(), true)));
}

#[test]
fn model_cards_are_checked_naming_the_card_file_and_line() {
    let data = scratch("cards");
    dataset(&data, "");
    let model = data.join("model.trec");
    run(&model, "m", |_| (0..POOL).collect());
    let card = data.join("card.toml");
    let problems = |text: &str, name: &str| -> Vec<String> {
        std::fs::write(&card, text).unwrap();
        match submit_verified(&req(&data, &model, name, Some(&card)), harness()) {
            Err(Error::Rejected { problems }) => problems.iter().map(ToString::to_string).collect(),
            other => panic!("expected a rejection, got {other:?}"),
        }
    };
    let got = problems("name = \"X\"\ndescription = \"  \"\nlicense = \"MIT\"\n", "X");
    let c = card.display().to_string();
    assert!(got.contains(&format!("{c}:2: description is blank")), "{got:?}");
    for missing in ["base_model", "training_data"] {
        assert!(
            got.iter()
                .any(|p| p.starts_with(&format!("{c}: {missing} is missing"))),
            "{got:?}"
        );
    }
    let full = "description = \"d\"\nbase_model = \"none\"\nlicense = \"MIT\"\ntraining_data = \"none\"\n";
    let got = problems(&format!("name = \"bm25\"\n{full}"), "bm25");
    assert!(got[0].contains(":1: name \"bm25\" is reserved"), "{got:?}");
    let got = problems(&format!("name = \"X\"\n{full}dataset_hash = \"abc\"\n"), "X");
    assert!(got[0].contains(":6: dataset_hash has no place"), "{got:?}");
    std::fs::write(&card, format!("name = \"X\"\n{full}")).unwrap();
    assert!(matches!(
        submit_verified(&req(&data, &model, "Y", Some(&card)), harness()),
        Err(Error::Param(_))
    ));
    assert!(matches!(
        submit_verified(&req(&data, &model, "X", None), harness()),
        Err(Error::Param(_))
    ));
    assert!(!entries_dir(&data).exists(), "nothing was written");
}

#[test]
fn edited_entries_fail_their_integrity_check() {
    let (data, _) = board_data("tampered");
    let set = read_entries(&entries_dir(&data)).unwrap();
    let verified = set
        .entries
        .iter()
        .find(|e| e.system == "Model X" && e.provenance.is_verified())
        .unwrap();
    let plain = set
        .entries
        .iter()
        .find(|e| e.system == "Model X" && !e.provenance.is_verified())
        .unwrap();
    let file = |id: &str| entries_dir(&data).join(format!("{id}.json"));
    let read = |id: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(file(id)).unwrap()).unwrap()
    };

    // A self-reported entry edited to say verified.
    let mut forged = read(&plain.id);
    forged["provenance"] = read(&verified.id)["provenance"].clone();
    std::fs::write(file(&plain.id), serde_json::to_string_pretty(&forged).unwrap()).unwrap();
    // A verified entry with another score.
    let mut better = read(&verified.id);
    better["scores"]["R@10%"] = 0.5.into();
    std::fs::write(file(&verified.id), serde_json::to_string_pretty(&better).unwrap()).unwrap();
    // A schema-1 entry that says it is verified (schema 1 has no verified entries, nor seals).
    let mut old = forged.clone();
    old["schema_version"] = 1.into();
    old["id"] = "old".into();
    old.as_object_mut().unwrap().remove("seal");
    std::fs::write(file("old"), old.to_string()).unwrap();
    // Issue 29, item 12: a sealed self-reported entry "downgraded" to schema 1 with its seal
    // removed and its scores raised to 100: an unsealed entry is never shown as it is.
    let bm25 = set.entries.iter().find(|e| e.system == "BM25").unwrap();
    let mut down = read(&bm25.id);
    down["system"] = "Downgraded".into();
    down["provenance"] = serde_json::json!({"status": "self_reported"});
    down["schema_version"] = 1.into();
    down["id"] = "downgraded".into();
    down["scores"]["R@10%"] = 1.0.into();
    down.as_object_mut().unwrap().remove("seal");
    std::fs::write(file("downgraded"), down.to_string()).unwrap();
    // Issue 29, item 3: an entry whose id is a path (resealed: anyone can compute a seal) is left
    // out; its id would be a file name on export.
    let mut pathy = read(&plain.id);
    pathy["id"] = "../../../../tmp/X".into();
    pathy["seal"] = seal_of(&pathy).into();
    std::fs::write(file("pathy"), pathy.to_string()).unwrap();

    let out = render_site(&data).unwrap();
    assert_eq!(out.tampered.len(), 5, "{:?}", out.tampered);
    assert!(
        out.boards[0].rows.iter().all(|r| r.system != "Downgraded"),
        "the downgraded entry is not shown"
    );
    for id in [
        &plain.id,
        &verified.id,
        &"old".to_owned(),
        &"downgraded".to_owned(),
        &"pathy".to_owned(),
    ] {
        assert!(
            out.tampered
                .iter()
                .any(|t| t.contains(id.as_str()) && t.contains("integrity check failed")),
            "{id}: {:?}",
            out.tampered
        );
    }
    assert!(
        out.boards[0].rows.iter().all(|r| !r.verified || r.baseline),
        "no verified row is left but the baseline's"
    );
    let err = lexbench_leaderboard::recheck::find_entry(&data, &verified.id).unwrap_err();
    assert!(matches!(err, Error::Tampered { .. }), "{err}");
    assert!(err.to_string().contains("does not match its content"), "{err}");
}

#[test]
fn export_import_round_trip_and_refusals() {
    let (data, hash) = board_data("export");
    let first = render_site(&data).unwrap();
    let pages = |out: &lexbench_leaderboard::Rendered| -> Vec<Vec<u8>> {
        [&out.markdown, &out.html]
            .into_iter()
            .chain(&out.plots)
            .map(|p| std::fs::read(p).unwrap())
            .collect()
    };
    let results = data.join("results");
    let exported = portable::export(&data, &results).unwrap();
    assert_eq!(exported.files.len(), 3);
    assert!(exported.left_out.is_empty());

    let fresh = scratch("export-fresh");
    assert_eq!(dataset(&fresh, ""), hash);
    let imported = portable::import(&fresh, &results).unwrap();
    assert_eq!(imported.written.len(), 3);
    let again = render_site(&fresh).unwrap();
    assert_eq!(pages(&again), pages(&first), "the same pages, byte for byte");
    let twice = portable::import(&fresh, &results).unwrap();
    assert_eq!((twice.written.len(), twice.already_there.len()), (0, 3));

    // Each refusal names its file; nothing is written.
    let refused = |name: &str, edit: &dyn Fn(&mut serde_json::Value), target: &Path| -> String {
        let dir = data.join(format!("bad-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&exported.files[0]).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(dir.join(format!("{name}.json")), v.to_string()).unwrap();
        let before = std::fs::read_dir(entries_dir(target)).map_or(0, Iterator::count);
        let msg = match portable::import(target, &dir) {
            Err(Error::Rejected { problems }) => {
                assert_eq!(problems.len(), 1, "{problems:?}");
                assert!(problems[0].path.ends_with(format!("{name}.json")), "{problems:?}");
                problems[0].to_string()
            }
            other => panic!("{name}: expected a refusal, got {other:?}"),
        };
        assert_eq!(
            std::fs::read_dir(entries_dir(target)).map_or(0, Iterator::count),
            before
        );
        msg
    };
    let other = scratch("export-other");
    dataset(&other, "v2");
    let none = scratch("export-none");
    let m = refused("format", &|v| v["format_version"] = 7.into(), &other);
    assert!(m.contains("result format version 7 is unknown"), "{m}");
    let m = refused("schema", &|v| v["entry"]["schema_version"] = 9.into(), &other);
    assert!(m.contains("entry schema version 9 is unknown"), "{m}");
    let m = refused("version", &|_| {}, &other);
    assert!(
        m.contains(&format!("dataset mini version {hash} is unknown here")),
        "{m}"
    );
    let m = refused("missing", &|_| {}, &none);
    assert!(m.contains("is not built"), "{m}");
    let m = refused("seal", &|v| v["entry"]["system"] = "Other".into(), &fresh);
    assert!(m.contains("integrity check failed"), "{m}");
    let m = refused(
        "mean",
        &|v| {
            let e = &mut v["entry"];
            e["id"] = "mean-entry".into();
            e["scores"]["R@10%"] = 0.99.into();
            e["seal"] = seal_of(e).into();
        },
        &fresh,
    );
    assert!(m.contains("is not the mean of its per-topic values"), "{m}");
}

#[test]
fn compare_finds_one_ulp() {
    let (data, _) = board_data("compare");
    let set = read_entries(&entries_dir(&data)).unwrap();
    let e = set.entries.iter().find(|e| e.provenance.is_verified()).unwrap();
    assert!(lexbench_leaderboard::recheck::compare(e, e).is_empty());
    let mut now = e.clone();
    now.provenance = Provenance::SelfReported;
    let (topic, values) = now.per_topic.iter_mut().next().unwrap();
    let topic = topic.clone();
    values[0] = f64::from_bits(values[0].to_bits() + 1);
    now.run.sha256 = "0".repeat(64);
    let diff = lexbench_leaderboard::recheck::compare(e, &now);
    assert_eq!(diff.len(), 2, "{diff:?}");
    assert!(diff[0].starts_with("the run differs"), "{diff:?}");
    assert!(diff[1].starts_with(&format!("topic {topic} R@2%")), "{diff:?}");
}

/// Issue 29, items 2 and 3: an export into the data directory's own folders (the entries folder
/// above all, where each entry would be overwritten with its export wrapper) is refused, writing
/// nothing; an entry whose id is a path is left out of the export, never written where it points.
#[test]
fn exports_stay_out_of_the_data_directory_and_where_ids_point() {
    let (data, _) = board_data("export-guard");
    let entries = entries_dir(&data);
    let before: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&entries)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    for dir in [
        entries.clone(),
        data.join("leaderboard"),
        data.join("leaderboard/site/x"),
        data.join("datasets/mini"),
        data.clone(),
        data.join("results/../leaderboard/entries"),
    ] {
        let err = portable::export(&data, &dir).unwrap_err().to_string();
        assert!(err.contains("--export"), "{}: {err}", dir.display());
    }
    #[cfg(unix)]
    {
        // Through a link to the entries folder too.
        let link = data.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&entries, &link).unwrap();
        assert!(portable::export(&data, &link).is_err());
        std::fs::remove_file(&link).unwrap();
    }
    for (p, b) in &before {
        assert_eq!(&std::fs::read(p).unwrap(), b, "{} unchanged", p.display());
    }
    assert!(
        render_site(&data).unwrap().tampered.is_empty(),
        "the board still renders"
    );

    // An entry whose id points out of the export folder (resealed).
    let any = &before[0].0;
    let mut v: serde_json::Value = serde_json::from_slice(&before[0].1).unwrap();
    let target =
        lexbench_core::testing::scratch_root().join(format!("lexbench-export-escape-{}", std::process::id()));
    let _ = std::fs::remove_file(target.with_extension("json"));
    v["id"] = format!("../../../../../../../..{}", target.display()).into();
    v["seal"] = seal_of(&v).into();
    std::fs::write(any, v.to_string()).unwrap();
    let out = portable::export(&data, &data.with_extension("results")).unwrap();
    assert_eq!(out.files.len(), before.len() - 1);
    assert!(
        out.left_out.iter().any(|l| l.contains("is not the file's name")),
        "{:?}",
        out.left_out
    );
    assert!(
        !target.with_extension("json").exists(),
        "nothing written where the id points"
    );
}
