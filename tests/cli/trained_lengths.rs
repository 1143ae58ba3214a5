//! Trained folders are ranked at the lengths they were trained with, with a tiny random BERT written
//! here (no download) on the sample's datasets.
//!
//! Properties checked:
//! - a bi-encoder trained with `max_query_len` (8) shorter than `max_doc_len` (32), on BSARD questions
//!   longer than 8 tokens, is ranked by `lexbench train --run` and by `lexbench run dense` on its
//!   folder exactly as the network ranks in training (queries cut at 8 tokens, passages at 32; the
//!   network rebuilt from its checkpoint), and the run's sidecar names both lengths;
//! - a cross-encoder trained with pairs of 8 + 24 tokens, reranking BM25's top 5 with `lexbench run
//!   cross-encoder --depth 5`, reads its pairs at 32 tokens, not at the command's `--max-len`: each
//!   reranked paragraph has the score the full-pool run of `lexbench train --run` gave it, and the
//!   sidecar names the trained length and the first stage.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lexbench_baselines::Device;
use lexbench_baselines::train::data::SplitData;
use lexbench_baselines::train::model::Trainable;
use lexbench_core::Run;

use crate::common::{lexbench, read_json as json, sample_data, tiny_bert};

fn read_run(p: &Path) -> Run {
    Run::read(p, &Default::default()).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Writes `DATA/<name>.toml` (a tiny training of `model` on `dataset` from the tiny BERT in `base`),
/// trains it with `--run test` and returns the trained model folder.
pub(crate) fn train(
    data: &Path,
    base: &Path,
    name: &str,
    model: &str,
    dataset: &str,
    lengths: (usize, usize),
) -> PathBuf {
    let cfg = data.join(format!("{name}.toml"));
    std::fs::write(
        &cfg,
        format!(
            r#"
name = "{name}"
model = "{model}"
base = {base:?}
seed = 5

[data]
dataset = "{dataset}"
val_split = ""
max_query_len = {q}
max_doc_len = {d}

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
            base = base.display().to_string(),
            q = lengths.0,
            d = lengths.1,
        ),
    )
    .unwrap();
    let out = lexbench(
        data,
        &["train", cfg.to_str().unwrap(), "--run", "test", "--quiet"],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    data.join("models").join(name).join("model")
}

#[test]
fn a_trained_bi_encoder_reads_queries_at_its_training_length() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-lengths-dense-{}", std::process::id()));
    sample_data(&data);
    let base = data.join("tiny-bert");
    tiny_bert(&base);
    let model = train(&data, &base, "tiny-short-queries", "dpr", "bsard", (8, 32));

    // Test questions longer than 8 tokens: the cut changes what the network reads.
    let test = SplitData::load(&data, "bsard", "test", false).unwrap();
    let tok =
        lexbench_baselines::encoder::TextTokenizer::from_file(&base.join("tokenizer.json"), 64).unwrap();
    let texts: Vec<&str> = test.topics.iter().map(|t| t.text.as_str()).collect();
    let long = tok
        .encode(&texts)
        .unwrap()
        .iter()
        .filter(|t| t.ids.len() > 8)
        .count();
    assert!(long > 0, "no test question is longer than 8 tokens");

    // The network as training ranks with it, rebuilt from its (only) checkpoint.
    let cfg = lexbench::train::trained_config(&model).unwrap().unwrap();
    let net = Trainable::build(&cfg, &Device::Cpu).unwrap();
    net.store
        .load_values(&data.join("models/tiny-short-queries/checkpoints/epoch-1/params.safetensors"))
        .unwrap();
    let in_training = net.rank(&test, 1000, None, 8).unwrap();

    let runs = data.join("runs/bsard/test");
    let args = [
        "run",
        "dense",
        "--model",
        model.to_str().unwrap(),
        "--dataset",
        "bsard",
        "--split",
        "test",
        "--system",
        "again",
    ];
    let again = lexbench(&data, &args);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains("queries 8 tokens, documents 32"), "{stderr}");
    for system in ["tiny-short-queries", "again"] {
        let run = read_run(&runs.join(format!("{system}.trec")));
        assert_eq!(run.topics.len(), in_training.topics.len(), "{system}");
        for (topic, hits) in &in_training.topics {
            let got = &run.topics[topic];
            assert_eq!(got.len(), hits.len(), "{system} {topic}");
            for (x, y) in hits.iter().zip(got) {
                assert_eq!(x.doc, y.doc, "{system} {topic}");
                assert!(
                    (x.score - y.score).abs() < 1e-5,
                    "{system} {topic} {}: {} in training, {} in the run",
                    x.doc,
                    x.score,
                    y.score
                );
            }
        }
        let side = json(&runs.join(format!("{system}.json")));
        assert_eq!(side["config"]["query_max_len"], 8, "{side}");
        assert_eq!(side["config"]["encode"]["max_len"], 32, "{side}");
    }
    std::fs::remove_dir_all(&data).ok();
}

#[test]
fn a_trained_cross_encoder_reranks_at_its_training_length() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-lengths-cross-{}", std::process::id()));
    sample_data(&data);
    let base = data.join("tiny-bert");
    tiny_bert(&base);
    let model = train(&data, &base, "tiny-ce", "cross_encoder", "ecthr", (8, 24));
    let runs = data.join("runs/ecthr/test");
    // `train --run` scores every paragraph of each judgment.
    let full = read_run(&runs.join("tiny-ce.trec"));
    assert!(full.topics.values().all(|h| h.len() == 20));

    let args = [
        "run",
        "cross-encoder",
        "--model",
        model.to_str().unwrap(),
        "--dataset",
        "ecthr",
        "--split",
        "test",
        "--system",
        "deep5",
        "--depth",
        "5",
    ];
    let out = lexbench(&data, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("trained here"), "{stderr}");
    let side = json(&runs.join("deep5.json"));
    assert_eq!(side["config"]["max_len"], 32, "{side}");
    assert_eq!(side["config"]["depth"], 5, "{side}");
    assert_eq!(side["config"]["first_stage"], "bm25 top 5", "{side}");
    let deep = read_run(&runs.join("deep5.trec"));
    assert_eq!(deep.topics.len(), full.topics.len());
    for (topic, hits) in &deep.topics {
        assert_eq!(hits.len(), 5, "{topic}");
        let scores: BTreeMap<_, f64> = full.topics[topic].iter().map(|h| (&h.doc, h.score)).collect();
        for h in hits {
            let s = scores[&h.doc];
            assert!(
                (h.score - s).abs() < 1e-5,
                "{topic} {}: {} reranked, {s} over the pool",
                h.doc,
                h.score
            );
        }
    }
    std::fs::remove_dir_all(&data).ok();
}
