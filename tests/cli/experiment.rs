//! `lexbench experiment`: an experiment file expanded into cells, run by the local executor, and
//! collected (the SLURM executor: `experiment_slurm.rs`, on the same experiment).
//!
//! Properties checked:
//! - `plan experiments/ecthr/paper.toml` is the paper's grid: 120 cells in 10 trainings (Table 1's
//!   4 × 5 learning rates; Table 2's 2 models × (20 LoRA + 15 adapter + 15 prefix points)), and the
//!   DPR/ANCE PEFT extension 100 more, without a dataset or a model at hand (no keys yet, said so);
//! - a small experiment on the sample (two configurations × three learning rates, one epoch, a tiny
//!   model) runs every cell once with `--jobs 2`, selects each training's point on validation as
//!   `train --sweep` does (the best score, the first of a tie), submits the selected model's run to
//!   the leaderboard under the training's name, and writes `results.md`; `status` shows every cell
//!   done; a second `run` runs no cell and adds no entry;
//! - a cell that fails (its base model gone) is `failed` in `status` with its error, the run exits 1
//!   naming the cell's log, and the next `run` runs it again;
//! - a cell sent SIGTERM part-way (a scheduler's preemption; stopped first, so that load cannot
//!   carry it to its end) checkpoints after the update under way, exits 143 saying so, is still pending in `status`, and its next run resumes from the
//!   checkpoint and finishes;
//! - a bad experiment file is refused naming the file and its line;
//! - `experiments/ecthr/real-text.toml` (the real-text experiment as it was run) builds its dataset
//!   with the command it names, and the results kept from its earlier runs
//!   (`baselines/configs/ecthr/results/release-text`) import onto it.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{lexbench, sample_data, tiny_bert};
use crate::data_safety::scratch;

/// The small experiment on the sample, with the tiny model at `model`: two configurations × three
/// learning rates, one epoch, ranked on the test split.
pub(crate) fn small_experiment(root: &Path, model: &Path) -> PathBuf {
    small_experiment_with(root, model, 1)
}

/// [`small_experiment`] with `epochs` epochs.
pub(crate) fn small_experiment_with(root: &Path, model: &Path, epochs: usize) -> PathBuf {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let configs = repo.join("baselines/configs/ecthr/cpu");
    let file = root.join("small.toml");
    let text = format!(
        r#"name = "small"
description = "Two sample configurations, three learning rates each, one epoch, a tiny model."

[dataset]
name = "ecthr"

[rank]
splits = ["test"]

[set]
base = "{model}"
"schedule.epochs" = {epochs}
"data.max_query_len" = 16
"data.max_doc_len" = 40
lr_sweep = [1e-5, 1e-3, 3e-3]

[[train]]
config = "{dpr}"
name = "small-dpr-lora"

[[train]]
config = "{cross}"
name = "small-cross-lora"
"#,
        model = model.display(),
        epochs = epochs,
        dpr = configs.join("dpr-lora.toml").display(),
        cross = configs.join("cross-encoder-lora.toml").display(),
    );
    std::fs::write(&file, text).unwrap();
    file
}

pub(crate) fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The ids of the leaderboard's entries.
pub(crate) fn entries(data: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data.join("leaderboard/entries"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn the_papers_grid_is_120_cells_and_the_extension_100() {
    let root = scratch("experiment-paper");
    let data = root.join("empty");
    for (file, line) in [
        (
            "experiments/ecthr/paper.toml",
            "ecthr-paper: 120 cells in 10 trainings on ecthr-release-text (ranked on test, unseen_query, unseen_guide)",
        ),
        (
            "experiments/ecthr/paper-peft-extension.toml",
            "ecthr-paper-peft-extension: 100 cells in 6 trainings on ecthr-release-text",
        ),
    ] {
        let out = lexbench(&data, &["experiment", "plan", file]);
        let stdout = ok(&out);
        assert!(stdout.starts_with(line), "{stdout}");
        assert!(
            stdout.contains("keys: not yet (DATA/datasets/ecthr-release-text is not built)"),
            "{stdout}"
        );
    }
    let out = lexbench(
        &data,
        &["experiment", "plan", "experiments/ecthr/paper.toml", "--json"],
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points: Vec<(String, usize)> = plan["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap().to_owned(),
                g["cells"].as_array().unwrap().len(),
            )
        })
        .collect();
    let want: Vec<(String, usize)> = [
        ("paper-dpr", 5),
        ("paper-ance", 5),
        ("paper-colbert", 5),
        ("paper-cross-encoder", 5),
        ("paper-colbert-lora", 20),
        ("paper-colbert-adapter", 15),
        ("paper-colbert-prefix", 15),
        ("paper-cross-encoder-lora", 20),
        ("paper-cross-encoder-adapter", 15),
        ("paper-cross-encoder-prefix", 15),
    ]
    .map(|(n, c)| (n.to_owned(), c))
    .into();
    assert_eq!(points, want);
    // The points are named as `train --sweep` names them.
    let names: Vec<&str> = plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["point"].as_str())
        .collect();
    assert_eq!(
        &names[..5],
        ["lr-1e-5", "lr-3e-5", "lr-5e-5", "lr-1e-4", "lr-3e-4"]
    );
    assert!(names.contains(&"lr-3e-4_peft.lora-alpha-16-rank-16"), "{names:?}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_local_experiment_runs_each_cell_once_and_collects_the_selected_models() {
    let root = scratch("experiment-local");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny");
    tiny_bert(&model);
    let file = small_experiment(&root, &model);
    let f = file.to_str().unwrap();
    let before = entries(&data);

    let stdout = ok(&lexbench(&data, &["experiment", "plan", f]));
    assert!(
        stdout.starts_with("small: 6 cells in 2 trainings on ecthr (ranked on test)"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("| pending |").count(), 6, "{stdout}");

    let out = lexbench(&data, &["experiment", "run", f, "--jobs", "2"]);
    let stdout = ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("small: 6 of 6 cells to run (local executor)"),
        "{stderr}"
    );
    let exp = data.join("experiments/small");
    // Each training's selected point is the best validation score of its cells (the first of a tie).
    for group in ["small-dpr-lora", "small-cross-lora"] {
        let mut cells: Vec<(f64, String, String)> = Vec::new();
        for e in std::fs::read_dir(exp.join("cells")).unwrap() {
            let p = e.unwrap().path();
            if !p.is_dir() {
                continue;
            }
            let r: serde_json::Value =
                serde_json::from_slice(&std::fs::read(p.join("cell.json")).unwrap()).unwrap();
            if r["group"] == group {
                cells.push((
                    r["best_val"].as_f64().unwrap_or(f64::MIN),
                    r["point"].as_str().unwrap().to_owned(),
                    r["key"].as_str().unwrap().to_owned(),
                ));
            }
        }
        assert_eq!(cells.len(), 3, "{group}: {cells:?}");
        let order = ["lr-1e-5", "lr-1e-3", "lr-3e-3"];
        cells.sort_by_key(|c| order.iter().position(|o| *o == c.1));
        let best = cells
            .iter()
            .fold(None::<&(f64, String, String)>, |b, c| match b {
                Some(b) if b.0 >= c.0 => Some(b),
                _ => Some(c),
            })
            .unwrap();
        let collected: serde_json::Value = serde_json::from_slice(
            &std::fs::read(exp.join("collected").join(format!("{group}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(collected["selected"], best.2.as_str(), "{group}: {collected}");
        assert!(
            stdout.contains(&format!("{group}: selected {} (val", best.1)),
            "{stdout}"
        );
        assert!(data.join(format!("runs/ecthr/test/{group}.trec")).is_file());
    }
    let after = entries(&data);
    let new: Vec<&String> = after.iter().filter(|e| !before.contains(e)).collect();
    assert_eq!(new.len(), 2, "{new:?}");
    assert!(
        new.iter().any(|e| e.contains("small-dpr-lora"))
            && new.iter().any(|e| e.contains("small-cross-lora"))
    );
    let table = std::fs::read_to_string(exp.join("results.md")).unwrap();
    assert!(
        table.contains("| small-dpr-lora |") && table.contains("| small-cross-lora |"),
        "{table}"
    );

    let stdout = ok(&lexbench(&data, &["experiment", "status", f]));
    assert!(stdout.contains("6/6 cells done"), "{stdout}");
    assert!(stdout.contains("| small-dpr-lora | 3 | 0 | 0 | 0 |"), "{stdout}");

    // Again: nothing runs, nothing is added.
    let out = lexbench(&data, &["experiment", "run", f, "--jobs", "2"]);
    ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("small: 0 of 6 cells to run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(entries(&data), after);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_failed_cell_is_shown_and_runs_again() {
    let root = scratch("experiment-failed");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny");
    tiny_bert(&model);
    let file = small_experiment(&root, &model);
    let f = file.to_str().unwrap();
    let out = lexbench(&data, &["experiment", "plan", f, "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = plan["cells"][0]["key"].as_str().unwrap().to_owned();
    // Cell 0's training folder can not be made (a file stands where it goes): its training fails.
    let cell = data.join("experiments/small/cells").join(&key);
    std::fs::create_dir_all(&cell).unwrap();
    std::fs::write(cell.join("train"), "in the way").unwrap();
    let out = lexbench(&data, &["experiment", "run", f]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("failed: cell 0: exit") && stderr.contains(&format!("logs/{key}.log")),
        "{stderr}"
    );
    let stdout = ok(&lexbench(&data, &["experiment", "status", f]));
    assert!(stdout.contains("| small-dpr-lora | 2 | 0 | 1 | 0 |"), "{stdout}");
    assert!(
        stdout.contains("failed: cell 0 (small-dpr-lora lr-1e-5):"),
        "{stdout}"
    );
    assert!(
        !data
            .join("experiments/small/collected/small-dpr-lora.json")
            .exists()
    );
    // Out of the way: the next run runs that cell alone and collects.
    std::fs::remove_file(cell.join("train")).unwrap();
    let out = lexbench(&data, &["experiment", "run", f]);
    ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("small: 1 of 6 cells to run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!cell.join("failed.json").exists());
    assert!(
        data.join("experiments/small/collected/small-dpr-lora.json")
            .is_file()
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_bad_experiment_file_is_named_with_its_line() {
    let root = scratch("experiment-bad");
    let file = root.join("bad.toml");
    std::fs::write(
        &file,
        "name = \"x\"\n[dataset]\nname = \"ecthr\"\n\n[[train]]\nconfig = \"a.toml\"\nlr = 3\n",
    )
    .unwrap();
    let out = lexbench(
        &root.join("data"),
        &["experiment", "plan", file.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml:7") && err.contains("lr"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_cell_stopped_by_sigterm_checkpoints_exits_143_and_resumes() {
    let root = scratch("experiment-sigterm");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("tiny");
    tiny_bert(&model);
    let file = small_experiment_with(&root, &model, 4);
    let f = file.to_str().unwrap();
    let out = lexbench(&data, &["experiment", "plan", f, "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = plan["cells"][0]["key"].as_str().unwrap().to_owned();
    let ckpt = data
        .join("experiments/small/cells")
        .join(&key)
        .join("train/checkpoints");
    let child = std::process::Command::new(crate::common::bin())
        .arg("--data")
        .arg(&data)
        .args(["experiment", "cell", f, "0", "--checkpoint-minutes", "0.0001"])
        .env("LEXBENCH_GIT_REV", "test-revision")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once it has checkpointed within its first two epochs (of four), it is stopped (SIGSTOP: the
    // machine's load can not carry it to its end), sent SIGTERM and woken.
    let t = std::time::Instant::now();
    loop {
        let names: Vec<String> = std::fs::read_dir(&ckpt)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if names.iter().any(|n| n.starts_with("step-")) && !names.iter().any(|n| n == "epoch-2") {
            break;
        }
        assert!(t.elapsed().as_secs() < 120, "no step checkpoint: {names:?}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    for sig in ["-STOP", "-TERM", "-CONT"] {
        assert!(
            std::process::Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success()
        );
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(143),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("interrupted by signal 15"), "{stdout}");
    assert!(
        !ckpt
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("cell.json")
            .exists()
    );
    let stdout = ok(&lexbench(&data, &["experiment", "status", f]));
    assert!(stdout.contains("| small-dpr-lora | 0 | 0 | 0 | 3 |"), "{stdout}");
    let stdout = ok(&lexbench(&data, &["experiment", "cell", f, "0"]));
    assert!(stdout.contains("resuming from checkpoints/step-"), "{stdout}");
    assert!(stdout.contains(": trained,"), "{stdout}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The real-text experiment file names the command that builds its dataset; run as written (the
/// fixtures wherever `LEXBENCH_FIXTURES` says) it builds the dataset the kept results were made on:
/// every entry of `baselines/configs/ecthr/results/release-text` imports, the plan then has its keys,
/// and every training cell those results record is a training of the file.
#[test]
fn the_real_text_experiment_builds_its_dataset_and_its_kept_results_import() {
    let root = scratch("experiment-real-text");
    let data = root.join("data");
    let file = "experiments/ecthr/real-text.toml";
    let stdout = ok(&lexbench(&data, &["experiment", "plan", file]));
    assert!(
        stdout.starts_with(
            "ecthr-real-text: 15 cells in 15 trainings on ecthr-release-text (ranked on test, unseen_query, unseen_guide)"
        ),
        "{stdout}"
    );
    let build = stdout
        .lines()
        .find_map(|l| l.strip_prefix("dataset built by: lexbench "))
        .unwrap_or_else(|| panic!("no build command in:\n{stdout}"));
    let fixtures = lexbench_core::testing::fixtures_dir();
    let args: Vec<String> = build
        .split_whitespace()
        .map(|w| w.replace("../shared/fixtures", fixtures.to_str().unwrap()))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&lexbench(&data, &args));

    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let kept = repo.join("baselines/configs/ecthr/results/release-text");
    ok(&lexbench(
        &data,
        &["leaderboard", "--import", kept.join("entries").to_str().unwrap()],
    ));
    let count = |d: &Path| {
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
    let n = count(&kept.join("entries"));
    assert!(n >= 40, "{n} kept entries");
    assert_eq!(count(&data.join("leaderboard/entries")), n);

    let stdout = ok(&lexbench(&data, &["experiment", "plan", file, "--json"]));
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(plan["dataset_version"].is_string(), "{plan}");
    assert!(plan["cells"][0]["key"].is_string(), "{plan}");
    let trainings: Vec<&str> = plan["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    let recorded: Vec<String> = std::fs::read_to_string(kept.join("cells.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["cell"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .filter(|c| c.starts_with("text-"))
        .collect();
    assert!(recorded.len() >= 10, "{recorded:?}");
    for c in &recorded {
        assert!(
            trainings.contains(&c.as_str()),
            "{c} is not a training of {file}: {trainings:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
