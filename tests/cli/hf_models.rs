//! HuggingFace folders of other architectures through the command line (issue 32), on the small
//! random replicas `scripts/hf-replicas` made, committed in `tests/golden/hf-replicas` (or the folder
//! `$LEXBENCH_HF_REPLICAS` names; these tests fail, not skip, without them). Reference values: the folder's
//! `reference.json`, transformers' outputs (baselines/tests/hf_golden.rs says how they are made).
//!
//! Properties checked:
//! - `lexbench encode --model <roberta-base replica> "hello world"` prints transformers' vector
//!   (`RobertaModel` last hidden state, mean over the attention mask, the command's default pooling)
//!   within 1e-5; so do the CamemBERT and XLM-R (multilingual-e5-base) replicas, and DPR's question
//!   encoder with `--pooling cls` (DPR's output is the `[CLS]` state);
//! - `lexbench encode` and `lexbench run dense` on a folder of a model lexbench does not run (GPT-2)
//!   exit 2 with one error line naming its config.json and the model_type, and write no run;
//! - `lexbench encode --model <sentence-transformers folder> TEXTS` with no pooling or length flag
//!   prints `SentenceTransformer(dir).encode(TEXTS)` within 1e-5: the all-MiniLM-L6-v2-style folder
//!   (mean, Normalize, its max_seq_length 12 cutting the long text) and the
//!   msmarco-roberta-base-ance-firstp-style one ([CLS], Dense, LayerNorm); DPR without `--pooling`
//!   gives its `[CLS]` output; `--pooling mean` on the ANCE-style folder exits 2 with one line naming
//!   its 1_Pooling/config.json, `--pooling cls` agrees and runs.

use std::process::Output;

use crate::common::{lexbench, lexbench_no_data, replicas, sample_data};

/// The replica's reference value `key` (`mean`, `cls`) of its first text, and that text.
fn reference(name: &str, key: &str) -> (String, Vec<f64>) {
    let path = replicas().join("reference.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("reference.json")).expect("JSON");
    let rep = &doc["replicas"][name];
    let text = rep["texts"][0].as_str().expect("text").to_owned();
    let v = rep[key][0]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: no {key} in reference.json: rerun scripts/hf-replicas"))
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect();
    (text, v)
}

fn stdout_vectors(out: &Output) -> Vec<Vec<f64>> {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a JSON array of vectors")
}

#[test]
fn encode_gives_transformers_vectors_for_roberta_family_and_dpr() {
    for (name, pooling, key) in [
        ("roberta", "mean", "mean"),
        ("camembert", "mean", "mean"),
        ("multilingual-e5", "mean", "mean"),
        ("dpr-question", "cls", "dpr_output"),
    ] {
        let (text, want) = reference(name, key);
        let dir = replicas().join(name);
        let mut args = vec!["encode", "--model", dir.to_str().expect("UTF-8 path")];
        if pooling != "mean" {
            args.extend(["--pooling", pooling]);
        }
        args.push(&text);
        let got = stdout_vectors(&lexbench_no_data(&args));
        assert_eq!(got.len(), 1, "{name}");
        assert_eq!(got[0].len(), want.len(), "{name}");
        let d = got[0]
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(d <= 1e-5, "{name}: max |Δ| {d:e} against transformers");
    }
}

#[test]
fn a_model_lexbench_does_not_run_is_refused_by_encode_and_run_dense() {
    let dir = replicas().join("unknown-gpt2");
    let config = dir.join("config.json");
    let model = dir.to_str().expect("UTF-8 path");
    let check = |out: &Output, what: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{what}: not one line:\n{stderr}");
        assert!(stderr.contains(&config.display().to_string()), "{what}: {stderr}");
        assert!(
            stderr.contains("model_type \"gpt2\" is not supported"),
            "{what}: {stderr}"
        );
    };
    check(
        &lexbench_no_data(&["encode", "--model", model, "hello world"]),
        "encode",
    );
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-hf-models-{}", std::process::id()));
    sample_data(&data);
    let out = lexbench(
        &data,
        &[
            "run",
            "dense",
            "--model",
            model,
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--system",
            "gpt2",
        ],
    );
    check(&out, "run dense");
    assert!(
        !data.join("runs/ecthr/test/gpt2.trec").exists(),
        "a run was written"
    );
    let _ = std::fs::remove_dir_all(&data);
}

/// The sentence-transformers replica `name`'s texts and `SentenceTransformer(dir).encode(texts)`.
fn st_reference(name: &str) -> (Vec<String>, Vec<Vec<f64>>) {
    let path = replicas().join("reference.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("reference.json")).expect("JSON");
    let rep = &doc["sentence_transformers"][name];
    let texts = rep["texts"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: not in reference.json: rerun scripts/hf-replicas"))
        .iter()
        .map(|t| t.as_str().expect("text").to_owned())
        .collect();
    let vectors = serde_json::from_value(rep["vectors"].clone()).expect("vectors");
    (texts, vectors)
}

#[test]
fn encode_runs_the_folders_sentence_transformers_modules() {
    for name in ["st-minilm", "st-ance"] {
        let (texts, want) = st_reference(name);
        let dir = replicas().join(name);
        let mut args = vec!["encode", "--model", dir.to_str().expect("UTF-8 path")];
        args.extend(texts.iter().map(String::as_str));
        let got = stdout_vectors(&lexbench_no_data(&args));
        assert_eq!(got.len(), want.len(), "{name}");
        let d = got
            .iter()
            .flatten()
            .zip(want.iter().flatten())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(d <= 1e-5, "{name}: max |Δ| {d:e} against sentence-transformers");
    }
    // DPR: [CLS] when no pooling is asked for.
    let (text, want) = reference("dpr-question", "dpr_output");
    let dir = replicas().join("dpr-question");
    let got = stdout_vectors(&lexbench_no_data(&[
        "encode",
        "--model",
        dir.to_str().expect("UTF-8 path"),
        &text,
    ]));
    let d = got[0]
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(d <= 1e-5, "dpr-question without --pooling: max |Δ| {d:e}");
    // A pooling against the folder's modules is refused; the same as the folder's runs.
    let dir = replicas().join("st-ance");
    let model = dir.to_str().expect("UTF-8 path");
    let out = lexbench_no_data(&["encode", "--model", model, "--pooling", "mean", "hello world"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "not one line:\n{stderr}");
    assert!(
        stderr.contains(&dir.join("1_Pooling/config.json").display().to_string())
            && stderr.contains("pools with cls"),
        "{stderr}"
    );
    stdout_vectors(&lexbench_no_data(&[
        "encode",
        "--model",
        model,
        "--pooling",
        "cls",
        "hello world",
    ]));
}
