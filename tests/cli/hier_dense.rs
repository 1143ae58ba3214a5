//! A bi-encoder trained with a hierarchical article encoder ranks like any other trained folder
//! (issue 31, item 8): with a tiny random BERT written here (no download) on the sample's BSARD.
//!
//! Properties checked: `lexbench train` with `article_encoder = "hierarchical"` writes a folder with
//! `hier.…` tensors and a run (`--run test`); `lexbench run dense --model` on that folder exits 0 and
//! writes the same ranking (the network rebuilt from the training record, under the system name
//! asked for), with a sidecar naming the hierarchical article encoder; `lexbench submit --model`
//! ranks it too and records a verified entry.

use std::path::PathBuf;

use crate::common::{lexbench, read_json as json, run_columns as cols, sample_data, tiny_bert};

#[test]
fn a_hierarchical_model_ranks_through_run_dense_and_submit() {
    let data = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-hier-dense-cli-{}", std::process::id()));
    sample_data(&data);
    let base = data.join("tiny-bert");
    tiny_bert(&base);
    let cfg = data.join("tiny-hier.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
name = "tiny-hier"
model = "dpr"
base = {base:?}
seed = 1

[data]
dataset = "bsard"
train_split = "train-fit"
val_split = "validation"
max_query_len = 16
max_doc_len = 32

[negatives]
bm25 = 1

[schedule]
epochs = 1
batch_size = 8
max_steps = 2

[eval]
measure = "R@100"
top_k = 1000

[biencoder]
article_encoder = "hierarchical"

[biencoder.hier]
seg_len = 16
max_segments = 2
heads = 4
"#,
            base = base.display().to_string()
        ),
    )
    .unwrap();
    let out = lexbench(
        &data,
        &["train", cfg.to_str().unwrap(), "--run", "test", "--quiet"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let model: PathBuf = data.join("models/tiny-hier/model");
    assert!(lexbench_baselines::encoder::files::has_hier_tensors(&model).unwrap());
    let runs = data.join("runs/bsard/test");
    let trained_run = runs.join("tiny-hier.trec");

    let out = lexbench(
        &data,
        &[
            "run",
            "dense",
            "--model",
            model.to_str().unwrap(),
            "--dataset",
            "bsard",
            "--split",
            "test",
            "--system",
            "tiny-hier-dense",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(cols(&runs.join("tiny-hier-dense.trec")), cols(&trained_run));
    let side = json(&runs.join("tiny-hier-dense.json"));
    assert_eq!(side["config"]["article_encoder"], "hierarchical", "{side}");
    let tag = std::fs::read_to_string(runs.join("tiny-hier-dense.trec")).unwrap();
    assert!(
        tag.lines().all(|l| l.ends_with(" tiny-hier-dense")),
        "the system asked for"
    );

    // `submit --model`: ranked by the harness and recorded as verified (one split is enough here).
    let card = data.join("card.toml");
    std::fs::write(
        &card,
        "name = \"Tiny hierarchical\"\ndescription = \"a tiny random BERT, hierarchical articles\"\n\
         base_model = \"none\"\nlicense = \"MIT\"\ntraining_data = \"none\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lexbench"))
        .arg("--data")
        .arg(&data)
        .args(["submit", "--model"])
        .arg(&model)
        .args(["--kind", "bi-encoder", "--card"])
        .arg(&card)
        .args(["--device", "cpu"])
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .env(lexbench::submit::STOP_AFTER_ENV, "1")
        .env("LEXBENCH_GIT_REV", "test-revision")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stopped after 1 split"),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    let entries: Vec<serde_json::Value> = std::fs::read_dir(data.join("leaderboard/entries"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| json(&p))
        .filter(|e| e["system"] == "Tiny hierarchical")
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["provenance"]["status"], "verified", "{:?}", entries[0]);
    std::fs::remove_dir_all(&data).ok();
}
