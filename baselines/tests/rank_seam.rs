//! The rankers of `rank/` through the one seam ([`write_run`]) on a tiny random BERT and a tiny pooled
//! dataset written here (no download).
//!
//! Properties: a dense run's sidecar carries the neural details (model, hash, settings with both
//! truncation lengths, documents encoded; a query length under 4 tokens is refused) beside the common
//! header (the system as run tag, seed [`SEED`], the program); a pooled candidate without text in
//! `corpus.jsonl` is an error naming it and `pools.jsonl` for dense and ColBERT runs, and a BM25 hit
//! without text one naming it and `bm25.trec` for the cross-encoder — never an empty text scored
//! silently.

mod common;

use std::path::Path;

use candle_core::Device;
use lexbench_baselines::rank::colbert::{ColBertParams, ColBertRanker};
use lexbench_baselines::rank::cross::{CrossEncoderRanker, CrossParams};
use lexbench_baselines::rank::dense::{DenseParams, DenseRanker};
use lexbench_baselines::rank::neural::SEED;
use lexbench_baselines::rank::{RunTarget, write_run};
use lexbench_core::testing::TinyDataset;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// `DATA/datasets/tiny`: three paragraphs, one topic (split `test`) whose pool lists the first two and
/// `extra`.
fn dataset(data: &Path, extra: &str) -> TestResult {
    TinyDataset::new("tiny")
        .doc("001-1:1", "the applicant complained of a violation")
        .doc("001-1:2", "the court and the state")
        .doc("001-1:3", "the margin of appreciation")
        .topic(
            "q1/001-1",
            "q1",
            "violation of the right to a fair trial",
            &["001-1:1"],
            "test",
        )
        .pool("q1/001-1", &["001-1:1", "001-1:2", extra])
        .write_in(data)?;
    Ok(())
}

fn dense_params() -> DenseParams {
    DenseParams {
        system: "dense-tiny".into(),
        ..DenseParams::default()
    }
}

#[test]
fn a_dense_run_writes_the_neural_sidecar() -> TestResult {
    let model = common::tiny_folder("rank-seam-dense")?;
    let data = common::scratch("rank-seam", "dense");
    dataset(&data, "001-1:3")?;
    let mut dense = DenseRanker::new(&model, dense_params(), &Device::Cpu)?;
    let out = write_run(&mut dense, &RunTarget::new(&data, "tiny", "test", "dense-tiny")?)?;
    let run = lexbench_core::Run::read(&out.run_path, &Default::default())?;
    assert_eq!(run.tag, "dense-tiny");
    assert_eq!(run.len(), 3, "the pool");
    let s = &out.sidecar;
    assert_eq!(s.header.seed, SEED);
    assert!(
        s.header
            .program
            .as_deref()
            .is_some_and(|p| p.starts_with("lexbench-baselines "))
    );
    assert_eq!(s.details.model, model.display().to_string());
    assert_eq!(s.details.model_hash.len(), 64);
    assert_eq!(s.details.config["system"], "dense-tiny");
    // One length for queries and documents unless told otherwise; the sidecar names both.
    assert_eq!(s.details.config["query_max_len"], 256);
    assert_eq!(s.details.config["encode"]["max_len"], 256);
    assert_eq!(s.details.encoded_now, 3);
    assert!(s.pooled);
    for phase in [
        "read_s",
        "encode_documents_s",
        "encode_queries_s",
        "rank_s",
        "write_s",
    ] {
        assert!(s.timings.contains_key(phase), "{phase}");
    }
    // A query length shorter than [CLS], [SEP] and two tokens is refused, naming the setting.
    let short = DenseParams {
        query_max_len: Some(3),
        ..dense_params()
    };
    let err = DenseRanker::new(&model, short, &Device::Cpu)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("query_max_len"), "{err}");
    // A second run finds the documents in the cache.
    let again = write_run(&mut dense, &RunTarget::new(&data, "tiny", "test", "dense-tiny")?)?;
    assert_eq!(again.sidecar.details.encoded_now, 0);
    assert!(
        again.sidecar.details.config.get("query_prefix").is_none(),
        "none by default"
    );
    // E5-style prefixes reach the encoder (documents are encoded again: other texts) and the sidecar.
    let params = DenseParams {
        query_prefix: "query: ".into(),
        passage_prefix: "passage: ".into(),
        ..dense_params()
    };
    let mut e5 = DenseRanker::new(&model, params, &Device::Cpu)?;
    let with = write_run(&mut e5, &RunTarget::new(&data, "tiny", "test", "dense-e5")?)?;
    assert_eq!(with.sidecar.details.encoded_now, 3);
    assert_eq!(with.sidecar.details.config["passage_prefix"], "passage: ");
    let scores = |p: &Path| -> Result<Vec<f64>, Box<dyn std::error::Error>> {
        let r = lexbench_core::Run::read(p, &Default::default())?;
        Ok(r.topics.values().flatten().map(|h| h.score).collect())
    };
    assert_ne!(scores(&with.run_path)?, scores(&again.run_path)?);
    Ok(())
}

#[test]
fn a_candidate_without_text_is_an_error_for_every_neural_ranker() -> TestResult {
    let model = common::tiny_folder("rank-seam-missing")?;
    let data = common::scratch("rank-seam", "missing");
    dataset(&data, "001-9:9")?;
    let expect = |err: lexbench_baselines::Error, file: &str| {
        let e = lexbench_core::error::chain(&err);
        assert!(e.contains("001-9:9") && e.contains(file), "{e}");
    };

    let mut dense = DenseRanker::new(&model, dense_params(), &Device::Cpu)?;
    let target = RunTarget::new(&data, "tiny", "test", "dense-tiny")?;
    expect(
        write_run(&mut dense, &target).err().ok_or("dense ranked")?,
        "pools.jsonl",
    );

    let params = ColBertParams {
        system: "colbert-tiny".into(),
        colbert: Default::default(),
        top_k: 10,
        first_stage: None,
    };
    let mut colbert = ColBertRanker::new(&model, params, &Device::Cpu)?;
    let target = RunTarget::new(&data, "tiny", "test", "colbert-tiny")?;
    expect(
        write_run(&mut colbert, &target).err().ok_or("colbert ranked")?,
        "pools.jsonl",
    );

    let bm25 = data.join("runs/tiny/test/bm25.trec");
    std::fs::create_dir_all(bm25.parent().ok_or("no parent")?)?;
    std::fs::write(
        &bm25,
        "q1/001-1 Q0 001-1:1 1 2.0 bm25\nq1/001-1 Q0 001-9:9 2 1.0 bm25\n",
    )?;
    let params = CrossParams {
        system: "cross-tiny".into(),
        depth: Some(10),
        max_len: 32,
    };
    let mut cross = CrossEncoderRanker::new(&model, params, &Device::Cpu)?;
    let target = RunTarget::new(&data, "tiny", "test", "cross-tiny")?;
    expect(
        write_run(&mut cross, &target)
            .err()
            .ok_or("cross-encoder ranked")?,
        "bm25.trec",
    );
    Ok(())
}
