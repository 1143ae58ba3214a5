//! `scripts/real-text-experiment DATA status`: where a long experiment stands, read from DATA alone.
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
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(repo.join("scripts/real-text-experiment"))
        .arg(data)
        .arg("status")
        .output()
        .expect("bash runs");
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
            "2 of 25 cells recorded on the dataset built there (version {})",
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
