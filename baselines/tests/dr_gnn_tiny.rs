//! DR+GNN and CuSINeS on a tiny corpus-wide dataset with a legislative graph (no download).
//!
//! Properties checked:
//! - DR+GNN trains the encoder, then the GAT over `graph.json`, and writes a run over the whole corpus
//!   with a dense-run sidecar; two runs with the same seed write the same run;
//! - CuSINeS's structural views read `graph.json` for a corpus-wide dataset;
//! - QABISAR: the distillation loss's gradient reaches the query encoder's LoRA parameters and no GAT
//!   parameter, the graph contrastive loss's the GAT and no encoder parameter; training writes a run
//!   over the corpus for test questions (not in the graph).

mod common;

use std::path::{Path, PathBuf};

use candle_core::Device;
use lexbench_baselines::curriculum::CurriculumConfig;
use lexbench_baselines::train::config::TrainConfig;
use lexbench_baselines::train::data::SplitData;
use lexbench_baselines::train::dr_gnn::train_dr_gnn;
use lexbench_baselines::train::negatives::examples;
use lexbench_baselines::train::qabisar::{Qabisar, train_qabisar};
use lexbench_baselines::train::{TrainOptions, train};
use lexbench_core::ArticleId;
use lexbench_core::graph::{GraphNode, LegalGraph};
use lexbench_core::rng::SplitMix64;
use lexbench_core::testing::TinyDataset;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WORDS: &[&str] = &[
    "the",
    "court",
    "article",
    "convention",
    "applicant",
    "violation",
    "right",
    "fair",
    "trial",
    "privacy",
    "state",
    "law",
];

fn scratch(name: &str) -> PathBuf {
    common::scratch("drgnn", name)
}

/// `DATA/datasets/law`: 12 articles under one code with two books, article order 1 → … → 12; 8
/// questions (6 train, 2 test), each relevant to two neighbouring articles.
fn tiny_law(data: &Path) -> TestResult {
    law(data, true)
}

/// [`tiny_law`], with or without `graph.json`.
fn law(data: &Path, with_graph: bool) -> TestResult {
    let text = |i: usize| -> String {
        (0..6)
            .map(|k| WORDS[(i * 5 + k * 7) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut ds = TinyDataset::new("law");
    for i in 1..=12 {
        ds = ds.doc(&i.to_string(), &text(i));
    }
    let node = |kind: &str, label: &str| GraphNode {
        kind: kind.into(),
        label: label.into(),
    };
    let mut graph = LegalGraph {
        nodes: vec![
            node("code", "code of law"),
            node("book", "the court"),
            node("book", "privacy"),
        ],
        hierarchy: vec![(0, 1), (0, 2)],
        ..LegalGraph::default()
    };
    for i in 1..=12usize {
        graph.nodes.push(node("article", &i.to_string()));
        let n = 2 + i;
        graph.hierarchy.push((if i <= 6 { 1 } else { 2 }, n));
        if i < 12 {
            graph.sequence.push((n, n + 1));
        }
        graph.article_nodes.insert(ArticleId::new(i.to_string())?, n);
    }
    if with_graph {
        ds = ds.graph(graph);
    }
    for t in 0..8usize {
        let pos = [1 + (t * 3) % 11, 2 + (t * 3) % 11];
        let first = text(pos[0]);
        let words: Vec<&str> = first.split(' ').take(3).collect();
        let pos: Vec<String> = pos.iter().map(|p| p.to_string()).collect();
        let pos: Vec<&str> = pos.iter().map(String::as_str).collect();
        let topic = format!("q{t}");
        let split = if t < 6 { "train" } else { "test" };
        ds = ds.topic(&topic, &topic, &words.join(" "), &pos, split);
    }
    ds.write_in(data)?;
    Ok(())
}

fn config(base: &Path, name: &str) -> Result<TrainConfig, Box<dyn std::error::Error>> {
    let text = format!(
        r#"
name = "{name}"
model = "dpr"
base = "{}"
seed = 5
[data]
dataset = "law"
val_split = ""
max_query_len = 12
max_doc_len = 16
[negatives]
random = 1
curriculum = 2
[optim]
lr = 1e-3
[schedule]
epochs = 1
batch_size = 4
[eval]
top_k = 100
[curriculum]
semantic = "dynamic"
[gnn]
epochs = 2
batch_size = 4
heads = 4
edge_dim = 8
"#,
        base.display()
    );
    Ok(toml::from_str(&text)?)
}

#[test]
fn dr_gnn_trains_and_ranks_the_corpus() -> TestResult {
    let base = common::tiny_folder("drgnn")?;
    let data = scratch("drgnn");
    tiny_law(&data)?;
    let cfg = config(&base, "gnn")?;
    cfg.validate()?;
    assert_eq!(cfg.curriculum, Some(CurriculumConfig::default()));
    let mut runs = Vec::new();
    for out in ["a", "b"] {
        let out = data.join("models").join(out);
        train(&cfg, &data, &out, &Device::Cpu, &TrainOptions::default())?;
        let (summary, outputs) = train_dr_gnn(
            &cfg,
            &data,
            &out,
            &Device::Cpu,
            &["test".into()],
            &TrainOptions::default(),
        )?;
        assert_eq!(summary.losses.len(), 2);
        assert!(summary.losses.iter().all(|l| l.is_finite()));
        // 3 structure nodes + 12 articles.
        assert_eq!(summary.nodes, 15);
        assert_eq!(outputs.len(), 1);
        assert_eq!(outputs[0].sidecar.topics, 2);
        assert_eq!(outputs[0].sidecar.hits, 24);
        assert!(out.join("gnn").join("model.safetensors").is_file());
        runs.push(std::fs::read_to_string(&outputs[0].run_path)?);
    }
    let bytes = |p: &str| std::fs::read(data.join("models").join(p)).expect("file");
    assert!(
        bytes("a/checkpoints/epoch-1/params.safetensors")
            == bytes("b/checkpoints/epoch-1/params.safetensors"),
        "encoder"
    );
    assert!(
        bytes("a/gnn/model.safetensors") == bytes("b/gnn/model.safetensors"),
        "gnn"
    );
    assert_eq!(runs[0], runs[1]);
    // Without graph.json, neither the GNN nor the structural curriculum views can run.
    law(&data, false)?;
    let out = data.join("models").join("c");
    let err = train(&cfg, &data, &out, &Device::Cpu, &TrainOptions::default()).expect_err("no graph");
    assert!(err.to_string().contains("structural views need"), "{err}");
    Ok(())
}

fn qabisar_config(base: &Path) -> Result<TrainConfig, Box<dyn std::error::Error>> {
    let text = format!(
        r#"
name = "qabisar"
model = "dpr"
base = "{}"
seed = 9
[data]
dataset = "law"
val_split = ""
max_query_len = 12
max_doc_len = 16
[negatives]
random = 2
[optim]
lr = 1e-3
[schedule]
epochs = 2
batch_size = 4
[eval]
top_k = 100
[peft]
method = "lora"
lora = {{ rank = 4, alpha = 8 }}
[qabisar]
heads = 4
edge_dim = 8
hops = 2
fanout = 4
"#,
        base.display()
    );
    Ok(toml::from_str(&text)?)
}

#[test]
fn qabisar_distills_into_the_query_encoder_only() -> TestResult {
    let base = common::tiny_folder("qabisar")?;
    let data = scratch("qabisar");
    tiny_law(&data)?;
    let cfg = qabisar_config(&base)?;
    cfg.validate()?;
    let split = SplitData::load(&data, "law", "train", true)?;
    let model = Qabisar::build(&cfg, &split, &data, &Device::Cpu)?;
    // 6 query nodes + 3 structure nodes + 12 articles.
    assert_eq!(model.nodes(), 21);
    let mut neg = cfg.negatives.clone();
    neg.random = 2;
    let exs = examples(&split, &neg, None, None, &mut SplitMix64::new(1));
    let refs: Vec<_> = exs.iter().take(4).collect();
    let (contrastive, kd) = model.losses(&split, &refs, 0)?;
    let enc = model.net.store.vars();
    let gnn = model.gnn_store.vars();
    assert!(enc.iter().all(|(k, _)| k.starts_with("peft.")), "LoRA only");
    let norm = |g: &candle_core::backprop::GradStore, v: &candle_core::Var| -> f32 {
        g.get(v.as_tensor())
            .map(|t| {
                t.sqr()
                    .and_then(|t| t.sum_all())
                    .and_then(|t| t.to_scalar::<f32>())
                    .unwrap_or(0.0)
            })
            .unwrap_or(0.0)
    };
    let g = kd.backward()?;
    assert!(gnn.iter().all(|(_, v)| norm(&g, v) == 0.0), "KD reached the GAT");
    assert!(
        enc.iter().any(|(_, v)| norm(&g, v) > 0.0),
        "KD did not reach the query encoder"
    );
    let g = contrastive.backward()?;
    assert!(
        enc.iter().all(|(_, v)| norm(&g, v) == 0.0),
        "contrastive reached the encoder"
    );
    assert!(
        gnn.iter().any(|(_, v)| norm(&g, v) > 0.0),
        "contrastive did not reach the GAT"
    );
    // End to end: a run over the whole corpus for the test questions.
    let out = data.join("models").join("qabisar");
    let (summary, outputs) = train_qabisar(
        &cfg,
        &data,
        &out,
        &Device::Cpu,
        &["test".into()],
        &TrainOptions::default(),
    )?;
    assert_eq!(summary.losses.len(), 2);
    assert!(summary.losses.iter().all(|l| l.is_finite()));
    assert_eq!(outputs[0].sidecar.topics, 2);
    assert_eq!(outputs[0].sidecar.hits, 24);
    Ok(())
}

/// QABISAR and DR+GNN train through the one training loop: stopped after an epoch and resumed,
/// they end exactly where an uninterrupted run ends (same weights, same run).
#[test]
fn graph_objectives_resume_exactly() -> TestResult {
    let base = common::tiny_folder("resume")?;
    let data = scratch("resume");
    tiny_law(&data)?;
    let stop = TrainOptions {
        stop_after_epoch: Some(1),
        ..TrainOptions::default()
    };
    let all = TrainOptions::default();
    let test = ["test".to_owned()];
    let qcfg = qabisar_config(&base)?;
    let (whole, interrupted) = (data.join("models/q-whole"), data.join("models/q-stopped"));
    let (_, o1) = train_qabisar(&qcfg, &data, &whole, &Device::Cpu, &test, &all)?;
    let run1 = std::fs::read_to_string(&o1[0].run_path)?;
    let (s, _) = train_qabisar(&qcfg, &data, &interrupted, &Device::Cpu, &test, &stop)?;
    assert_eq!(s.losses.len(), 1, "stopped after one epoch");
    assert!(interrupted.join("checkpoints/epoch-1/gnn.safetensors").is_file());
    let (s, o2) = train_qabisar(&qcfg, &data, &interrupted, &Device::Cpu, &test, &all)?;
    assert_eq!(s.losses.len(), 2, "the resumed run reports every epoch");
    assert_eq!(run1, std::fs::read_to_string(&o2[0].run_path)?);
    let bytes = |d: &Path, f: &str| std::fs::read(d.join("qabisar").join(f)).expect("model file");
    assert!(bytes(&whole, "model.safetensors") == bytes(&interrupted, "model.safetensors"));
    assert!(bytes(&whole, "encoder.safetensors") == bytes(&interrupted, "encoder.safetensors"));

    let cfg = config(&base, "gnn")?;
    let out = data.join("models/gnn");
    train(&cfg, &data, &out, &Device::Cpu, &all)?;
    let (_, o1) = train_dr_gnn(&cfg, &data, &out, &Device::Cpu, &test, &all)?;
    let run1 = std::fs::read_to_string(&o1[0].run_path)?;
    let gnn1 = std::fs::read(out.join("gnn/model.safetensors"))?;
    let restart = TrainOptions {
        restart: true,
        stop_after_epoch: Some(1),
        ..TrainOptions::default()
    };
    train_dr_gnn(&cfg, &data, &out, &Device::Cpu, &test, &restart)?;
    let (_, o2) = train_dr_gnn(&cfg, &data, &out, &Device::Cpu, &test, &all)?;
    assert_eq!(run1, std::fs::read_to_string(&o2[0].run_path)?);
    assert!(gnn1 == std::fs::read(out.join("gnn/model.safetensors"))?);
    // Resuming over another encoder is refused: the stage's identity names the encoder.
    let other = TrainOptions {
        restart: true,
        ..TrainOptions::default()
    };
    let mut cfg2 = cfg.clone();
    cfg2.seed += 1;
    train(&cfg2, &data, &data.join("models/gnn2"), &Device::Cpu, &other)?;
    std::fs::remove_dir_all(out.join("gnn/checkpoints/epoch-2"))?;
    std::fs::copy(
        data.join("models/gnn2/checkpoints/epoch-1/params.safetensors"),
        out.join("checkpoints/epoch-1/params.safetensors"),
    )?;
    let err = train_dr_gnn(&cfg, &data, &out, &Device::Cpu, &test, &all).expect_err("stale GNN checkpoint");
    assert!(err.to_string().contains("different configuration"), "{err}");
    Ok(())
}
