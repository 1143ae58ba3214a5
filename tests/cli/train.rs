//! End-to-end test of `lexbench train` with the real all-MiniLM-L6-v2 (`scripts/fetch-models`) on the
//! embedded sample, and of `lexbench share`.
//!
//! Properties checked: a shipped CPU preset (DPR with LoRA) trains for one epoch, writes its log,
//! checkpoint, summary and a PEFT-only model folder, ranks the test split with the selected model, and
//! the leaderboard accepts that run; running the same command again resumes from the checkpoint and
//! trains nothing more; a missing base model is an error naming the config; `lexbench share` prints
//! the trainable share of BERT-base settings computed from a config alone; `--sweep` trains once per
//! learning rate and records the one selected on validation; `--sweep` over a PEFT grid (prefix
//! lengths, through the reparametrisation MLP) trains each point in its own folder, records every
//! point and the selection in `sweep.json` and ranks with the selected point.

use crate::common::{lexbench, sample_data};
use std::path::Path;

#[test]
fn train_a_preset_then_submit() {
    // The preset initialises from models/minilm (its `base`).
    crate::common::minilm();
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-train-cli-{}", std::process::id()));
    sample_data(&data);
    let args = [
        "train",
        "baselines/configs/ecthr/cpu/dpr-lora.toml",
        "--epochs",
        "1",
        "--run",
        "test",
        "--quiet",
    ];
    let out = lexbench(&data, &args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Separate query and passage encoders (issue 31): LoRA r = 8 on each, 73,728 parameters apiece.
    assert!(stdout.contains("sample-dpr-lora: 147456 trainable"), "{stdout}");
    let dir = data.join("models/sample-dpr-lora");
    for f in [
        "config.toml",
        "train_log.jsonl",
        "summary.json",
        "checkpoints/epoch-1/params.safetensors",
        "checkpoints/epoch-1/optimizer.safetensors",
        "model/adapter_config.json",
        "model/adapter_model.safetensors",
        "model/tokenizer.json",
        "model/query_encoder/adapter_config.json",
        "model/query_encoder/adapter_model.safetensors",
        "model/query_encoder/tokenizer.json",
    ] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    assert!(!dir.join("model/model.safetensors").exists());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["epochs"].as_array().unwrap().len(), 1);
    let run = data.join("runs/ecthr/test/sample-dpr-lora.trec");
    assert!(run.is_file());
    let sub = lexbench(
        &data,
        &[
            "submit",
            run.to_str().unwrap(),
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--name",
            "dpr-lora",
        ],
    );
    assert!(sub.status.success(), "{}", String::from_utf8_lossy(&sub.stderr));

    // `lexbench run dense` on the trained folder ranks with its training settings (lengths, pooling,
    // similarity from lexbench-training.json), so it gives the run training wrote; `run colbert`
    // refuses a folder trained as DPR.
    let model = dir.join("model");
    let model = model.to_str().unwrap();
    let run_model = |kind: &str, extra: &[&str]| {
        let mut a = vec![
            "run",
            kind,
            "--model",
            model,
            "--dataset",
            "ecthr",
            "--split",
            "test",
        ];
        a.extend_from_slice(extra);
        lexbench(&data, &a)
    };
    let rerun = run_model("dense", &["--system", "again"]);
    assert!(
        rerun.status.success(),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    let cols = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().0.to_owned())
            .collect()
    };
    assert_eq!(cols(&run), cols(&data.join("runs/ecthr/test/again.trec")));
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("runs/ecthr/test/again.json")).unwrap())
            .unwrap();
    // The preset's max_doc_len, not the command's default of 256.
    assert_eq!(side["config"]["encode"]["max_len"], 128, "{side}");
    let wrong = run_model("colbert", &[]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("trained as"));

    // The same command again resumes after epoch 1 and has nothing left to train.
    let again = lexbench(&data, &args[..4]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let summary2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["epochs"], summary2["epochs"]);

    // A config whose base model is missing is refused with the config's name.
    let bad = data.join("bad.toml");
    let text = std::fs::read_to_string("baselines/configs/ecthr/cpu/dpr.toml")
        .unwrap()
        .replace("base = \"models/minilm\"", "base = \"no/such/model\"");
    std::fs::write(&bad, text).unwrap();
    let out = lexbench(&data, &["train", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("no/such/model"), "{err}");
    std::fs::remove_dir_all(&data).ok();
}

#[test]
fn share_of_bert_base_settings() {
    let out = lexbench(
        Path::new("unused"),
        &["share", "baselines/configs/models/bert-base-uncased.json"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.contains("| full fine-tuning | 109482240 | 109482240 | 100.00 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| LoRA r = 8 (query, value) | 294912 | 109777152 | 0.27 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| prefix, length 10 | 184320 | 109666560 | 0.17 |"),
        "{stdout}"
    );
}

#[test]
fn sweep_selects_a_learning_rate() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-sweep-cli-{}", std::process::id()));
    sample_data(&data);
    let cfg = data.join("sweep.toml");
    let text = std::fs::read_to_string("baselines/configs/ecthr/cpu/dpr-lora.toml")
        .unwrap()
        .replace(
            "name = \"sample-dpr-lora\"",
            "name = \"sweep\"\nlr_sweep = [1e-5, 1e-3]",
        );
    std::fs::write(&cfg, text).unwrap();
    let out = lexbench(
        &data,
        &[
            "train",
            cfg.to_str().unwrap(),
            "--sweep",
            "--epochs",
            "1",
            "--quiet",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("models/sweep/sweep.json")).unwrap())
            .unwrap();
    let runs = sweep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    // The selected rate is the one with the best validation score (ties: the smaller rate).
    let best = runs
        .iter()
        .map(|r| (r["val"].as_f64().unwrap(), r["lr"].as_f64().unwrap()))
        .fold((f64::MIN, 0.0), |a, b| if b.0 > a.0 { b } else { a });
    assert_eq!(sweep["selected_lr"].as_f64().unwrap(), best.1);
    for lr in ["lr-1e-5", "lr-1e-3"] {
        assert!(
            data.join("models/sweep")
                .join(lr)
                .join("model/adapter_config.json")
                .is_file()
        );
    }
    assert!(stdout.contains("sweep: selected lr"), "{stdout}");
    std::fs::remove_dir_all(&data).ok();
}

#[test]
fn sweep_a_peft_grid() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-grid-cli-{}", std::process::id()));
    sample_data(&data);
    let cfg = data.join("grid.toml");
    let text = std::fs::read_to_string("baselines/configs/ecthr/cpu/dpr-prefix.toml")
        .unwrap()
        .replace("name = \"sample-dpr-prefix\"", "name = \"grid\"");
    assert!(text.contains("projection = true"), "the preset reparametrises");
    std::fs::write(
        &cfg,
        format!("{text}\n[sweep]\n\"peft.prefix.length\" = [2, 3]\n"),
    )
    .unwrap();
    let out = lexbench(
        &data,
        &[
            "train",
            cfg.to_str().unwrap(),
            "--sweep",
            "--epochs",
            "1",
            "--set",
            "schedule.max_steps=2",
            "--set",
            "data.max_doc_len=32",
            "--run",
            "test",
            "--quiet",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = data.join("models/grid");
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(
        sweep["axes"],
        serde_json::json!({"peft.prefix.length": [2, 3]}),
        "{sweep}"
    );
    let runs = sweep["runs"].as_array().unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["peft.prefix.length-2", "peft.prefix.length-3"]);
    // The best validation score is selected; a tie goes to the point listed first.
    let vals: Vec<f64> = runs.iter().map(|r| r["val"].as_f64().unwrap()).collect();
    let best = if vals[1] > vals[0] { 1 } else { 0 };
    assert_eq!(sweep["selected"], names[best], "{sweep}");
    for (i, name) in names.iter().enumerate() {
        assert_eq!(runs[i]["settings"]["peft.prefix.length"], i + 2);
        let a: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(name).join("model/adapter_config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(a["peft"]["prefix"]["length"], i + 2, "{a}");
        assert_eq!(a["peft"]["prefix"]["projection"], true, "{a}");
    }
    assert!(
        stdout.contains(&format!("sweep: selected {}", names[best])),
        "{stdout}"
    );
    // The selected point ranked the test split.
    assert!(data.join("runs/ecthr/test/grid.trec").is_file());
    std::fs::remove_dir_all(&data).ok();
}
