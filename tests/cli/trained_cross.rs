//! A cross-encoder trained with PEFT through the command line (a tiny random BERT written here, the
//! sample's ECtHR dataset).
//!
//! Properties checked: `lexbench train` of the shipped `cross-encoder-lora.toml` (tiny settings by
//! `--set`, `--base` the tiny BERT) writes its run (the trained PEFT folder holds
//! `adapter_model.safetensors`, not `model.safetensors`, and ranking it used to fail looking for the
//! latter), and `lexbench run cross-encoder` on the trained folder ranks exactly as training did.

use std::path::Path;

use crate::common::{lexbench, run_columns as cols, sample_data, tiny_bert};

#[test]
fn a_peft_cross_encoder_trains_ranks_and_reranks_as_trained() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-trained-cross-{}", std::process::id()));
    sample_data(&data);
    let base = data.join("tiny-bert");
    tiny_bert(&base);
    let config =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines/configs/ecthr/cross-encoder-lora.toml");
    let out = lexbench(
        &data,
        &[
            "train",
            config.to_str().unwrap(),
            "--base",
            base.to_str().unwrap(),
            "--set",
            "schedule.epochs=1",
            "--set",
            "schedule.batch_size=4",
            "--set",
            "schedule.max_steps=2",
            "--set",
            "data.max_query_len=16",
            "--set",
            "data.max_doc_len=32",
            "--out",
            data.join("models/ce-lora").to_str().unwrap(),
            "--run",
            "test",
            "--quiet",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let model = data.join("models/ce-lora/model");
    assert!(model.join("adapter_model.safetensors").is_file());
    assert!(!model.join("model.safetensors").exists());
    let trained = data.join("runs/ecthr/test/ecthr-cross-encoder-lora-minilm.trec");
    let out = lexbench(
        &data,
        &[
            "run",
            "cross-encoder",
            "--model",
            model.to_str().unwrap(),
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--system",
            "again",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = data.join("runs/ecthr/test/again.trec");
    let (a, b) = (cols(&trained), cols(&again));
    assert!(!a.is_empty());
    assert_eq!(a, b, "the trained folder ranks as training did");
    std::fs::remove_dir_all(&data).ok();
}
