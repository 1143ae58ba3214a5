//! `scripts/real-text-experiment DATA status`: where a long experiment stands, read from DATA alone;
//! and `DATA carry` / `DATA restore`: an unfinished training cell packed into RESULTS and unpacked on
//! a fresh machine (the second test).
//! On a stand-in DATA folder (a dataset manifest, cell records, a training log over two epochs, a
//! checkpoint): the cells recorded on the dataset version built there are listed done with their
//! seconds and device, one recorded on another version is to run again, the training cell under way with its update,
//! epoch, speed, newest checkpoint and the hours its training still needs (from the updates of its
//! first epoch and the config's epochs), the others to run; a broken record is refused naming its file
//! and line; and nothing is built or fetched (no `DATA/bin`, no model folder).

use std::path::PathBuf;
use std::process::{Command, Output};

use lexbench_core::sha256_hex;

use crate::data_safety::scratch;

fn status(data: &std::path::Path) -> Output {
    script(data, "status", &[])
}

/// `scripts/real-text-experiment DATA STEP` with the environment `env`.
fn script(data: &std::path::Path, step: &str, env: &[(&str, &std::ffi::OsStr)]) -> Output {
    script_steps(data, &[step], env)
}

/// `scripts/real-text-experiment DATA STEP…` with the environment `env`.
fn script_steps(data: &std::path::Path, steps: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new("bash");
    cmd.arg(repo.join("scripts/real-text-experiment"))
        .arg(data)
        .args(steps);
    cmd.env_remove("LEXBENCH_COMMIT")
        .env_remove("LEXBENCH_CARRY_MAX_MB");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn status_reads_records_and_the_training_log_and_runs_nothing() {
    let data = scratch("experiment-status");
    // The dataset version as the script computes it: sha256 of "path size" lines in path order.
    let manifest = data.join("datasets/ecthr-release-text/manifest.json");
    std::fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    std::fs::write(
        &manifest,
        r#"{"files": {"queries.jsonl": 10, "corpus.jsonl": 20}}"#,
    )
    .unwrap();
    let version = sha256_hex(b"corpus.jsonl 20\nqueries.jsonl 10\n");
    let rec = |cell: &str, extra: &str| {
        let v = if cell == "import" {
            "an older version"
        } else {
            version.as_str()
        };
        format!(
            r#"{{"cell": "{cell}", "dataset_version": "{v}", "wall_s": 12.5, "cpu_s": 20, "git_revision": "0123456789abcdef", "finished_at": "2026-11-27T10:00:00Z"{extra}}}"#
        )
    };
    let records = [
        rec("import", ""),
        rec("bm25", ""),
        rec("text-ance", r#", "device": "cuda:0 (a GPU)""#),
    ]
    .join("\n");
    std::fs::write(data.join("cells.jsonl"), records + "\n").unwrap();
    // text-dpr-adapter (2 epochs in its config): 10 updates of 4 examples in epoch 1, 2 in epoch 2.
    let model = data.join("models/text-dpr-adapter");
    std::fs::create_dir_all(model.join("checkpoints/step-10")).unwrap();
    let log: String = (1..=12)
        .map(|step| {
            let epoch = if step <= 10 { 1 } else { 2 };
            format!(r#"{{"epoch":{epoch},"examples":4,"examples_per_s":2.0,"loss":0.5,"step":{step}}}"#)
                + "\n"
        })
        .collect::<String>()
        + "{\"epoch\":2,\"exam"; // a line cut short by a kill
    std::fs::write(model.join("train_log.jsonl"), log).unwrap();

    let out = status(&data);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "2 of 26 cells recorded on the dataset built there (version {})",
            &version[..12]
        )),
        "{text}"
    );
    assert!(
        text.contains("to run   import (recorded on another dataset version: runs again)"),
        "{text}"
    );
    assert!(
        text.contains("done     bm25: 12.5 s wall, 20 s CPU, rev 0123456, 2026-11-27T10:00:00Z"),
        "{text}"
    );
    assert!(
        text.contains("done     text-ance: 12.5 s wall") && text.contains("cuda:0 (a GPU)"),
        "{text}"
    );
    // 2 epochs × 10 updates − 12 done = 8 updates × 4 examples / 2 examples/s = 16 s.
    assert!(
        text.contains(
            "running  text-dpr-adapter: update 12, epoch 2 of 2, 2.00 examples/s (last 12 updates)"
        ),
        "{text}"
    );
    assert!(text.contains("checkpoint step-10"), "{text}");
    assert!(
        text.contains("training needs about 0.0 h more (8 updates;"),
        "{text}"
    );
    assert!(text.contains("to run   text-dpr-prefix"), "{text}");
    assert!(text.contains("to run   zs-minilm/test"), "{text}");
    assert!(
        !data.join("bin").exists() && !data.join("submissions").exists(),
        "status built or made something"
    );

    // A broken record: refused with its file and line.
    std::fs::write(data.join("cells.jsonl"), rec("bm25", "") + "\n{not json\n").unwrap();
    let out = status(&data);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cells.jsonl:2: not a JSON record"), "{err}");
}

/// A stand-in dataset manifest in `data`; returns the version the script computes from it.
fn stand_in_dataset(data: &std::path::Path, size: u64) -> String {
    let manifest = data.join("datasets/ecthr-release-text/manifest.json");
    std::fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    std::fs::write(&manifest, format!(r#"{{"files": {{"corpus.jsonl": {size}}}}}"#)).unwrap();
    sha256_hex(format!("corpus.jsonl {size}\n").as_bytes())
}

#[test]
fn carry_packs_an_unfinished_cell_and_a_fresh_data_folder_resumes_from_it() {
    let root = scratch("experiment-carry");
    let results = root.join("results");
    let env = [("LEXBENCH_RESULTS", results.as_os_str())];
    let data = root.join("first");
    let version = stand_in_dataset(&data, 20);
    // text-dpr is recorded done; text-colbert-adapter is under way: an epoch checkpoint, a step
    // checkpoint, a step folder whose state.json a kill never wrote, an atomic write's temporary
    // folder, the model selected so far.
    std::fs::write(
        data.join("cells.jsonl"),
        format!("{{\"cell\": \"text-dpr\", \"dataset_version\": \"{version}\"}}\n"),
    )
    .unwrap();
    let done = data.join("models/text-dpr/checkpoints/epoch-1");
    std::fs::create_dir_all(&done).unwrap();
    std::fs::write(done.join("state.json"), r#"{"step": 5, "epoch": 1}"#).unwrap();
    let cell = data.join("models/text-colbert-adapter");
    let files: [(&str, &[u8]); 6] = [
        ("config.toml", b"name = \"text-colbert-adapter\"\n"),
        ("train_log.jsonl", b"{\"step\": 1}\n"),
        ("checkpoints/epoch-1/state.json", br#"{"step": 20, "epoch": 1}"#),
        (
            "checkpoints/step-30/state.json",
            br#"{"step": 30, "epoch": 1, "within": {}}"#,
        ),
        ("checkpoints/step-30/params.safetensors", &[0, 1, 2, 255]),
        ("model/adapter_model.safetensors", &[7; 100]),
    ];
    for (name, bytes) in files {
        let p = cell.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    for junk in [
        "checkpoints/step-10/params.safetensors",
        "checkpoints/.tmp-step-40/params.safetensors",
    ] {
        let p = cell.join(junk);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"not a checkpoint").unwrap();
    }
    // A stale carry of the finished cell is removed.
    std::fs::create_dir_all(results.join("in-progress")).unwrap();
    std::fs::write(results.join("in-progress/text-dpr.tar"), b"old").unwrap();

    let out = script(&data, "carry", &env);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("text-colbert-adapter: carried step-30 (update 30,"),
        "{text}"
    );
    assert!(
        text.contains("text-dpr: recorded done; its carry removed"),
        "{text}"
    );
    assert!(!results.join("in-progress/text-dpr.tar").exists());
    let tar = results.join("in-progress/text-colbert-adapter.tar");
    assert!(tar.is_file());
    assert!(!data.join("bin").exists(), "carry built something");

    // Over the size cap: refused, the carry already there kept.
    let cap = [
        ("LEXBENCH_RESULTS", results.as_os_str()),
        ("LEXBENCH_CARRY_MAX_MB", "0".as_ref()),
    ];
    let out = script(&data, "carry", &cap);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("text-colbert-adapter: not carried:") && text.contains("over LEXBENCH_CARRY_MAX_MB=0"),
        "{text}"
    );
    assert!(tar.is_file());

    // A fresh DATA folder on the same dataset version gets the cell back, byte for byte, with
    // the carry's record; what was not a complete checkpoint stays behind.
    let fresh = root.join("fresh");
    stand_in_dataset(&fresh, 20);
    let out = script(&fresh, "restore", &env);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("text-colbert-adapter: restored step-30 (update 30,"),
        "{text}"
    );
    let back = fresh.join("models/text-colbert-adapter");
    for (name, bytes) in files {
        assert_eq!(std::fs::read(back.join(name)).unwrap(), bytes, "{name}");
    }
    assert!(!back.join("checkpoints/step-10").exists() && !back.join("checkpoints/.tmp-step-40").exists());
    let carried: serde_json::Value =
        serde_json::from_slice(&std::fs::read(back.join("carried.json")).unwrap()).unwrap();
    assert_eq!(carried["dataset_version"], version.as_str());
    assert_eq!(carried["checkpoint"], "step-30");
    let config = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("baselines/configs/ecthr/cpu/text-colbert-adapter.toml"),
    )
    .unwrap();
    assert_eq!(carried["config_sha256"], sha256_hex(&config).as_str());

    // Not twice: the folder now holds checkpoints of its own.
    let out = script(&fresh, "restore", &env);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("carry not restored:") && text.contains("holds checkpoints of its own"),
        "{text}"
    );

    // Another dataset version: not restored, nothing written.
    let other = root.join("other");
    stand_in_dataset(&other, 21);
    let out = script(&other, "restore", &env);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("carry not restored: made on dataset version"),
        "{text}"
    );
    assert!(!other.join("models").exists());
}

/// Issue 55, item 4: the runner on a fresh machine whose fixtures lie elsewhere. A new data folder,
/// the fixtures reached through a path with a space in it (not `../shared/fixtures`), the committed
/// results (a copy, so the repository is not written): `scripts/real-text-experiment` builds the
/// dataset (the import cell), imports every committed entry, and skips every other cell as recorded —
/// the cell records name the version the entries were re-keyed from, which counts as the version
/// built here. Nothing is ranked or trained: no run is written, no model trained. (The binary is the
/// one under test, put where the script keeps its copy, so nothing is built.)
#[test]
fn a_fresh_machine_imports_every_committed_entry_and_runs_nothing_recorded() {
    let root = scratch("runner-fresh");
    let data = root.join("data");
    let fixtures = root.join("fixtures elsewhere");
    std::os::unix::fs::symlink(lexbench_core::testing::fixtures_dir(), &fixtures).unwrap();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let committed = repo.join("baselines/configs/ecthr/results/release-text");
    let results = root.join("results");
    crate::common::copy_tree(&committed, &results);
    std::fs::create_dir_all(data.join("bin")).unwrap();
    std::fs::copy(crate::common::bin(), data.join("bin/lexbench")).unwrap();
    std::fs::write(data.join("bin/revision"), "test-revision\n").unwrap();
    let recorded: std::collections::BTreeSet<String> = std::fs::read_to_string(committed.join("cells.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["cell"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .filter(|c| c != "import")
        .collect();
    // The steps of every recorded cell (a zero-shot model's step covers its three settings); a cell
    // the committed results do not record (one still training elsewhere) would run, and is not asked.
    let mut steps: Vec<&str> = recorded
        .iter()
        .map(|c| match c.split_once('/').map_or(c.as_str(), |(m, _)| m) {
            "zs-minilm" => "minilm",
            "zs-colbert" => "colbert",
            "zs-e5" => "e5",
            other => other,
        })
        .collect();
    steps.dedup();
    let out = script_steps(
        &data,
        &steps,
        &[
            ("LEXBENCH_RESULTS", results.as_os_str()),
            ("LEXBENCH_FIXTURES", fixtures.as_os_str()),
        ],
    );
    assert!(out.status.success(), "the runner failed on a fresh machine");
    let text = String::from_utf8_lossy(&out.stdout);
    let ran: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("cell ") && !l.ends_with("done before, skipped"))
        .collect();
    assert_eq!(ran.len(), 1, "only the import runs: {ran:#?}");
    assert!(ran[0].starts_with("cell import: lb import release"), "{}", ran[0]);
    let skipped = text
        .lines()
        .filter(|l| l.ends_with("done before, skipped"))
        .count();
    assert_eq!(
        skipped,
        recorded.len(),
        "every recorded cell but the import is skipped"
    );
    let entries = |d: &std::path::Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count()
    };
    assert_eq!(
        entries(&data.join("leaderboard/entries")),
        entries(&committed.join("entries")),
        "every committed entry imported"
    );
    assert!(!data.join("runs").exists(), "nothing ranked");
    assert!(!data.join("models").exists(), "nothing trained");
    assert!(
        steps.len() >= 10,
        "the committed results record the zero-shot and training cells: {steps:?}"
    );
    std::fs::remove_dir_all(&root).ok();
}
