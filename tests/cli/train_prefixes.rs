//! Text prefixes through the command line (issue 22, item 11: multilingual-e5-small's `query: ` /
//! `passage: ` on BSARD), with a tiny random BERT written here (no download) on the sample's BSARD.
//!
//! Properties checked: `lexbench train` with `[data] query_prefix` / `passage_prefix` records them in
//! the trained folder's `lexbench-training.json`; `lexbench run dense` on that folder ranks with them
//! (its sidecar names them, and its run is the one training wrote, and the one the same weights
//! without the training record give when the prefixes are passed as flags, not without them); a
//! `--query-prefix` or `--passage-prefix` other than the trained one is refused (exit 2) naming both,
//! the same one is accepted.

use std::path::{Path, PathBuf};

use crate::common::{lexbench, read_json as json, run_columns as cols, sample_data, tiny_bert};

#[test]
fn a_trained_folder_ranks_with_its_training_prefixes() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-prefixes-cli-{}", std::process::id()));
    sample_data(&data);
    let base = data.join("tiny-bert");
    tiny_bert(&base);
    let cfg = data.join("e5-prefixes.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
name = "tiny-prefixes"
model = "dpr"
base = {base:?}
seed = 1

[data]
dataset = "bsard"
val_split = ""
max_query_len = 16
max_doc_len = 32
query_prefix = "query: "
passage_prefix = "passage: "

[negatives]
bm25 = 1

[schedule]
epochs = 1
batch_size = 8
max_steps = 2

[eval]
measure = "R@100"
top_k = 1000
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
    let model: PathBuf = data.join("models/tiny-prefixes/model");
    let record = json(&model.join("lexbench-training.json"));
    assert_eq!(record["config"]["data"]["query_prefix"], "query: ", "{record}");
    assert_eq!(
        record["config"]["data"]["passage_prefix"], "passage: ",
        "{record}"
    );
    let runs = data.join("runs/bsard/test");
    let trained_run = runs.join("tiny-prefixes.trec");
    assert_eq!(
        json(&runs.join("tiny-prefixes.json"))["config"]["query_prefix"],
        "query: "
    );

    let dense = |model: &Path, system: &str, extra: &[&str]| {
        let mut a = vec![
            "run",
            "dense",
            "--model",
            model.to_str().unwrap(),
            "--dataset",
            "bsard",
            "--split",
            "test",
            "--system",
            system,
        ];
        a.extend_from_slice(extra);
        lexbench(&data, &a)
    };
    // `run dense` on the trained folder: the trained prefixes, without being told.
    let again = dense(&model, "again", &[]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains(r#"prefixes "query: " / "passage: ""#), "{stderr}");
    let side = json(&runs.join("again.json"));
    assert_eq!(side["config"]["query_prefix"], "query: ", "{side}");
    assert_eq!(side["config"]["passage_prefix"], "passage: ", "{side}");
    assert_eq!(cols(&runs.join("again.trec")), cols(&trained_run));

    // The same weights without the training record rank so only when given the prefixes (and the
    // trained lengths: queries 16 tokens, passages 32).
    let bare = data.join("bare-model");
    std::fs::create_dir_all(&bare).unwrap();
    for e in std::fs::read_dir(&model).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "lexbench-training.json" {
            std::fs::copy(e.path(), bare.join(e.file_name())).unwrap();
        }
    }
    let flags = [
        "--query-prefix",
        "query: ",
        "--passage-prefix",
        "passage: ",
        "--max-len",
        "32",
        "--query-max-len",
        "16",
    ];
    let prefixed = dense(&bare, "bare-prefixed", &flags);
    assert!(
        prefixed.status.success(),
        "{}",
        String::from_utf8_lossy(&prefixed.stderr)
    );
    assert_eq!(cols(&runs.join("bare-prefixed.trec")), cols(&trained_run));
    let side = json(&runs.join("bare-prefixed.json"));
    assert_eq!(side["config"]["query_max_len"], 16, "{side}");
    assert_eq!(side["config"]["encode"]["max_len"], 32, "{side}");
    let plain = dense(&bare, "bare-plain", &flags[4..]);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert_ne!(cols(&runs.join("bare-plain.trec")), cols(&trained_run));

    // Flags that contradict the trained prefixes are refused; the same ones are accepted.
    for (flag, value, trained) in [
        ("--query-prefix", "question: ", "query: "),
        ("--passage-prefix", "article: ", "passage: "),
    ] {
        let out = dense(&model, "other", &[flag, value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{trained:?}")) && err.contains(&format!("{value:?}")),
            "{err}"
        );
        assert!(!runs.join("other.trec").exists());
    }
    let same = dense(&model, "same", &flags[..4]);
    assert!(same.status.success(), "{}", String::from_utf8_lossy(&same.stderr));
    assert_eq!(cols(&runs.join("same.trec")), cols(&trained_run));
    std::fs::remove_dir_all(&data).ok();
}
