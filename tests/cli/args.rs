//! The argument groups shared by commands: `--device`, `--dataset/--split` and the global
//! `--format`.
//!
//! Properties checked:
//! - `--device cuda` on a CPU-only build exits 2 with a message saying so, before anything is read
//!   or written (never a silent CPU run);
//! - `--device cpu` gives the same embeddings as the default device of a CPU-only build;
//! - dataset and split names are checked by every command that takes them (exit 2, nothing written);
//! - `--format` is global (before or after the subcommand), and a format a command does not print is
//!   refused with exit 2 (`stats` and `diff` print human or json, like `eval`).

use crate::common::lexbench;
use std::path::{Path, PathBuf};
use std::process::Output;

fn temp_data(test: &str) -> PathBuf {
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-args-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_on_a_cpu_only_build_is_an_error() {
    let data = temp_data("cuda");
    for device in ["cuda", "cuda:1"] {
        let out = lexbench(
            &data,
            &[
                "run",
                "dense",
                "--device",
                device,
                "--model",
                "models/minilm",
                "--dataset",
                "ecthr",
                "--split",
                "test",
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("built without CUDA"), "{err}");
        assert!(err.contains("--device"), "{err}");
        assert!(out.stdout.is_empty());
    }
    let out = lexbench(
        &data,
        &["encode", "--device", "gpu", "--model", "models/minilm", "x"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a device"), "{}", stderr(&out));
    assert!(!data.exists(), "the data directory was created");
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cpu_is_the_default_of_a_cpu_only_build() {
    let model = crate::common::minilm();
    let data = temp_data("cpu");
    let m = model.to_str().unwrap();
    let default = lexbench(&data, &["encode", "--model", m, "a judgment"]);
    let cpu = lexbench(&data, &["encode", "--model", m, "--device", "cpu", "a judgment"]);
    assert_eq!(default.status.code(), Some(0), "{}", stderr(&default));
    assert_eq!(cpu.status.code(), Some(0), "{}", stderr(&cpu));
    assert_eq!(default.stdout, cpu.stdout);
}

#[test]
fn names_are_checked_by_the_dataset_split_group() {
    let data = temp_data("names");
    for args in [
        &["run", "bm25", "--dataset", "../x", "--split", "test"][..],
        &[
            "run",
            "colbert",
            "--model",
            "m",
            "--dataset",
            "ecthr",
            "--split",
            "a/b",
        ],
        &[
            "submit",
            "run.trec",
            "--dataset",
            "..",
            "--split",
            "test",
            "--name",
            "X",
        ],
    ] {
        let out = lexbench(&data, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("invalid value"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!data.exists(), "the data directory was created");
}

#[test]
fn format_is_global_and_checked_per_command() {
    let data = temp_data("format");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = root.join("core/tests/data/trec_eval/run.trec");
    let qrels = root.join("core/tests/data/trec_eval/qrels.txt");
    let (run, qrels) = (run.to_str().unwrap(), qrels.to_str().unwrap());
    let after = lexbench(&data, &["eval", run, qrels, "--format", "json"]);
    let before = lexbench(&data, &["--format", "json", "eval", run, qrels]);
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));
    assert_eq!(after.stdout, before.stdout);
    let v: serde_json::Value = serde_json::from_slice(&after.stdout).unwrap();
    assert!(v.is_object());

    let out = lexbench(&data, &["eval", run, qrels, "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`eval` prints human or json"),
        "{}",
        stderr(&out)
    );
    let out = lexbench(&data, &["parse", "judgment", "--format", "human", run]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("prints json or jsonl"), "{}", stderr(&out));
    for (command, args) in [
        ("stats", &["stats", "ecthr"][..]),
        ("diff", &["diff", "a", "--against", "b"][..]),
    ] {
        let out = lexbench(&data, &[args, &["--format", "jsonl"]].concat());
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("`{command}` prints human or json")),
            "{}",
            stderr(&out)
        );
    }
}
