//! A model folder whose files are wrong, through the command line (issue 21, item 11).
//!
//! Properties checked: `lexbench encode --model DIR` on a folder whose `config.json` does not fit its
//! `model.safetensors`, or whose `model.safetensors` is cut short, exits 2 with a single error line
//! naming the weights file (and, for a mismatch, the tensor and both shapes) — even with
//! `RUST_BACKTRACE=1`, under which candle's errors carry a backtrace. The folder is written here: a
//! hand-made safetensors file (8-byte header length, JSON header, zeros) and the tiny BERT config.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lexbench_baselines::encoder::BertConfig;

fn encode(model: &Path) -> Output {
    Command::new(crate::common::bin())
        .args(["encode", "--model"])
        .arg(model)
        .arg("some text")
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "1")
        .env("RUST_LIB_BACKTRACE", "1")
        .output()
        .expect("run lexbench")
}

/// A model folder holding one tensor, `embeddings.word_embeddings.weight` of shape `[100, 32]`, and
/// the tiny config with `hidden_size` = `hidden`.
fn folder(name: &str, hidden: usize) -> PathBuf {
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-model-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let n = 100 * 32 * 4;
    let header = format!(
        r#"{{"embeddings.word_embeddings.weight":{{"dtype":"F32","shape":[100,32],"data_offsets":[0,{n}]}}}}"#
    );
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.resize(bytes.len() + n, 0);
    std::fs::write(dir.join("model.safetensors"), bytes).expect("weights");
    let cfg = BertConfig {
        hidden_size: hidden,
        ..BertConfig::tiny()
    };
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string(&cfg).expect("JSON"),
    )
    .expect("config");
    dir
}

fn one_error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "not one line:\n{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr
}

#[test]
fn config_that_does_not_fit_the_weights_is_one_line_naming_the_file() {
    let dir = folder("shape", 16);
    let err = one_error_line(&encode(&dir));
    let weights = dir.join("model.safetensors");
    assert!(
        err.trim_end().ends_with(&format!(
            "{}: tensor embeddings.word_embeddings.weight has shape [100, 32], config.json expects [100, 16]",
            weights.display()
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn truncated_weights_are_one_line_naming_the_file() {
    let dir = folder("truncated", 32);
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).expect("weights");
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).expect("cut");
    let err = one_error_line(&encode(&dir));
    assert!(
        err.contains(&format!(
            "{}: not a valid safetensors file (truncated, or another format): ",
            weights.display()
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
