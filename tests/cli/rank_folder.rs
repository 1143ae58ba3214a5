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
//!   model), and nothing is written;
//! - a verified entry's model hash (`lexbench::submit::model_sha256`) names exactly the files the
//!   loader found while building the harness's ranker, for a sentence-transformers folder, a
//!   ColBERT folder with its metadata, a folder with a separate query encoder, a cross-encoder and a
//!   folder trained here: a file the loader reads, added to a folder (a pooling module, the ColBERT
//!   metadata, a query encoder), changes the hash; a file it does not read (a README, a tokenizer
//!   config) does not.

use std::collections::BTreeSet;
use std::path::Path;

use lexbench_leaderboard::ModelKind;

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

/// The files the harness's loader finds in `dir` as `kind`, named as the hash names them.
fn loader_reads(dir: &Path, kind: ModelKind) -> BTreeSet<String> {
    let lengths = lexbench::rank::lengths(dir, kind).unwrap();
    let ask = lexbench::rank::Ask {
        kind,
        system: "reads",
        top_k: 10,
        depth: None,
        lengths: Some(&lengths),
    };
    let (ranker, found) = lexbench_baselines::encoder::files::recording_reads(|| {
        lexbench::rank::from_folder(dir, &ask, &lexbench_baselines::Device::Cpu)
    });
    ranker.unwrap();
    found
        .iter()
        .filter_map(|p| p.strip_prefix(dir).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// The model hash and the names it covers.
fn identity(dir: &Path, kind: ModelKind) -> (String, BTreeSet<String>) {
    let f = lexbench::submit::model_sha256(dir, kind).unwrap();
    (f.sha256, f.files.into_keys().collect())
}

#[test]
fn the_model_hash_covers_every_file_the_loader_opened_and_no_other() {
    let root = scratch("model-hash-reads");
    let dir = root.join("st");
    tiny_bert(&dir);
    let check = |kind: ModelKind| -> String {
        let (sha, names) = identity(&dir, kind);
        assert_eq!(names, loader_reads(&dir, kind), "{kind}: hashed ≠ read");
        for must in ["config.json", "model.safetensors", "tokenizer.json"] {
            assert!(names.contains(must), "{kind}: {must} not hashed: {names:?}");
        }
        sha
    };
    let bare = check(ModelKind::BiEncoder);
    std::fs::write(dir.join("README.md"), "a model card").unwrap();
    std::fs::write(dir.join("tokenizer_config.json"), r#"{"do_lower_case": true}"#).unwrap();
    assert_eq!(
        check(ModelKind::BiEncoder),
        bare,
        "files the loader does not read"
    );

    // A pooling module, which the loader reads: another model.
    crate::common::mean_pooling_module(&dir);
    let mean = check(ModelKind::BiEncoder);
    assert_ne!(mean, bare, "a pooling module added");
    let (_, names) = identity(&dir, ModelKind::BiEncoder);
    assert!(
        names.contains("modules.json") && names.contains("1_Pooling/config.json"),
        "{names:?}"
    );
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 32, "pooling_mode_cls_token": true}"#,
    )
    .unwrap();
    assert_ne!(
        check(ModelKind::BiEncoder),
        mean,
        "another pooling is another model"
    );

    // ColBERT's metadata, read as a ColBERT model only.
    let colbert = check(ModelKind::Colbert);
    std::fs::write(
        dir.join("artifact.metadata"),
        r#"{"query_maxlen": 16, "doc_maxlen": 24}"#,
    )
    .unwrap();
    let (_, names) = identity(&dir, ModelKind::Colbert);
    assert!(names.contains("artifact.metadata"), "{names:?}");
    assert_ne!(check(ModelKind::Colbert), colbert, "ColBERT metadata added");

    // The cross-encoder reads what it reads.
    check(ModelKind::CrossEncoder);

    // A separate query encoder (a copy of the folder's model): its files are hashed too.
    let before = check(ModelKind::BiEncoder);
    let q = dir.join("query_encoder");
    std::fs::create_dir_all(&q).unwrap();
    for f in ["config.json", "model.safetensors", "tokenizer.json"] {
        std::fs::copy(dir.join(f), q.join(f)).unwrap();
    }
    let with_query = check(ModelKind::BiEncoder);
    let (_, names) = identity(&dir, ModelKind::BiEncoder);
    assert!(names.contains("query_encoder/model.safetensors"), "{names:?}");
    assert_ne!(with_query, before, "a query encoder added");

    // A folder trained here: its training record is read, and hashed.
    let data = root.join("data");
    sample_data(&data);
    let base = root.join("tiny-bert");
    tiny_bert(&base);
    let model = train(&data, &base, "tiny-hash", "dpr", "ecthr", (8, 24));
    let (_, names) = identity(&model, ModelKind::BiEncoder);
    assert_eq!(names, loader_reads(&model, ModelKind::BiEncoder));
    assert!(names.contains("lexbench-training.json"), "{names:?}");
    let _ = std::fs::remove_dir_all(&root);
}
