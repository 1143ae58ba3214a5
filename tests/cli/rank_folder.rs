//! One way from a model folder to a ranker (`lexbench::rank::from_folder`): the three commands that
//! rank a folder trained here rank it the same way.
//!
//! Properties checked, with a tiny random BERT trained here (no download) on the sample's ECtHR
//! dataset at lengths other than any command's defaults (queries 8, paragraphs 24 tokens):
//! - `lexbench train --run test`, `lexbench run dense --model FOLDER` and `lexbench submit --model
//!   FOLDER --kind bi-encoder` write the same run for the test split, line for line (topic,
//!   document, rank, score; only the system's tag differs), and the harness records the training's
//!   lengths as where they come from;
//! - the folder asked for as another kind is refused by `run colbert`, `run cross-encoder` and
//!   `submit --kind colbert` with the same message (trained as Dpr, not a colbert / cross-encoder
//!   model), and nothing is written.

use std::path::Path;

use crate::common::{lexbench, sample_data, tiny_bert};
use crate::data_safety::scratch;
use crate::experiment::ok;
use crate::trained_lengths::train;

/// The run's lines without the tag column.
fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(w.len(), 6, "{l}");
            w[..5].join(" ")
        })
        .collect()
}

#[test]
fn a_trained_folder_ranks_the_same_through_run_train_and_submit() {
    let root = scratch("rank-folder");
    let data = root.join("data");
    sample_data(&data);
    let base = root.join("tiny-bert");
    tiny_bert(&base);
    let model = train(&data, &base, "tiny-folder", "dpr", "ecthr", (8, 24));
    let m = model.to_str().unwrap();
    let runs = data.join("runs/ecthr/test");
    let trained = lines(&runs.join("tiny-folder.trec"));
    assert!(trained.len() > 10, "{trained:?}");

    ok(&lexbench(
        &data,
        &[
            "run",
            "dense",
            "--model",
            m,
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--system",
            "via-run",
        ],
    ));
    assert_eq!(lines(&runs.join("via-run.trec")), trained);

    let card = root.join("card.toml");
    std::fs::write(
        &card,
        "name = \"via-submit\"\ndescription = \"a test model\"\nbase_model = \"none\"\nlicense = \"MIT\"\n\
         training_data = \"none\"\n",
    )
    .unwrap();
    ok(&lexbench(
        &data,
        &[
            "submit",
            "--model",
            m,
            "--kind",
            "bi-encoder",
            "--card",
            card.to_str().unwrap(),
            "--dataset",
            "ecthr",
            "--split",
            "test",
        ],
    ));
    let submitted: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("harness-via-submit") && n.ends_with(".trec")
        })
        .collect();
    assert_eq!(submitted.len(), 1, "{submitted:?}");
    assert_eq!(lines(&submitted[0]), trained);
    let entry = std::fs::read_dir(data.join("leaderboard/entries"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("ecthr__test__via-submit"))
        .expect("the submitted entry");
    let e: serde_json::Value = serde_json::from_slice(&std::fs::read(entry).unwrap()).unwrap();
    let lengths = &e["provenance"]["lengths"];
    assert_eq!(lengths["source"], "lexbench-training.json", "{e}");
    assert_eq!(lengths["query"], 8, "{e}");
    assert_eq!(lengths["document"], 24, "{e}");

    // Asked as another kind: one message whoever asks, nothing written.
    let before = std::fs::read_dir(&runs).unwrap().count();
    for (args, kind) in [
        (
            vec![
                "run",
                "colbert",
                "--model",
                m,
                "--dataset",
                "ecthr",
                "--split",
                "test",
            ],
            "colbert",
        ),
        (
            vec![
                "run",
                "cross-encoder",
                "--model",
                m,
                "--dataset",
                "ecthr",
                "--split",
                "test",
            ],
            "cross-encoder",
        ),
        (
            vec![
                "submit",
                "--model",
                m,
                "--kind",
                "colbert",
                "--card",
                card.to_str().unwrap(),
                "--dataset",
                "ecthr",
                "--split",
                "test",
            ],
            "colbert",
        ),
    ] {
        let out = lexbench(&data, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains(&format!("trained as Dpr (tiny-folder), not a {kind} model")),
            "{args:?}: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(&runs).unwrap().count(), before);
    let _ = std::fs::remove_dir_all(&root);
}
