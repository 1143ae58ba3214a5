//! DR+GNN: article embeddings enriched by a GATv2 over BSARD's legislative graph.
//!
//! Two stages, CPU-cheap:
//! 1. the bi-encoder is fine-tuned by [`super::finetune::train`] as the rest of the config says (the
//!    epoch it selected on validation is used; PEFT or full);
//! 2. with the encoder **frozen**, node features are computed once, without gradient: article nodes
//!    get the passage embedding of their article's text, structure nodes (code, book, …) the passage
//!    embedding of their label; corpus articles missing from the graph are isolated nodes. A [`Gat`]
//!    (edge types parent → child, child → parent and self-loop: the legislative hierarchy, as the
//!    papers' graph holds it; next / previous article only with `gnn.sequence_edges = true`, an
//!    option of ours, off by default — [`legal_graph_edges`]) maps them to enriched
//!    vectors, mixed with the input by a learned gate (`residual_mix`, `σ(m)·gat + (1 − σ(m))·x`,
//!    `m` starting at 0) and prepared for the encoder's scoring (L2-normalised for cosine; as they
//!    are for the dot product, `biencoder.cosine = false`, the paper configs'). The GAT (and the
//!    gate) are trained with the contrastive NLL between the frozen query embeddings and the
//!    enriched article vectors of training questions: the positive against the example's sampled
//!    negatives (`[negatives]`: BM25, random and CuSINeS curriculum ones, the latter scored with the
//!    current enriched vectors at each GNN epoch) and the other examples' articles (in-batch).
//!    After each GNN epoch the validation questions (`data.val_split`) are ranked over the whole
//!    corpus and scored by `eval.measure` (R@100 in the BSARD configs, as stage 1); the best epoch is
//!    kept ("the best model is determined based on performance evaluation on the validation set"),
//!    the last one without a validation split.
//!
//! Inference ranks the whole corpus by the encoder's scoring of `query` and `enriched article`
//! (cosine × `gnn.scale`, or dot product / `biencoder.temperature`) with the selected epoch's GAT.
//! Every GNN step runs the GAT over the whole graph (the fictional sample has ~300 nodes; the real
//! corpus ~27k, fine on a GPU, slow on a CPU). Output: `OUT/gnn/model.safetensors` (the selected
//! GAT and gate), `OUT/gnn/gnn.json` (with each epoch's validation score and the epoch selected),
//! and runs with the sidecar of other neural runs.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use candle_core::{Device, Tensor};
use candle_nn::Init;
use serde::{Deserialize, Serialize};

use super::config::{GnnConfig, Similarity, TrainConfig};
use super::data::SplitData;
use super::finetune::{Summary, Validation, config_text, negative_sources, validation};
use super::model::{Trainable, run_from_corpus_scores};
use super::negatives::Example;
use super::negatives::curriculum::{GRAPH_FILE, LegalGraph};
use super::params::ParamStore;
use super::seeds::{LoopSeeds, SeedPurpose, derive_seed};
use super::trainer::{LoopSpec, Objective, ParamGroup, State, TrainOptions, Trainer, checkpoint_dir};
use crate::error::{Error, Result};
use crate::graph::{EdgeList, Gat};
use crate::rank::neural::NeuralOutput;
use lexbench_core::eval::evaluate;

/// The legislative graph's edges the graph models (DR+GNN, QABISAR) read: every parent → child pair
/// of the hierarchy (code → book → … → article) in both directions, and — only with
/// `sequence_edges` — every article → next-article pair of a code in both directions (types
/// [`crate::graph::EdgeType::NextArticle`] and `PreviousArticle`). Off by default: the statute graph
/// of the CuSINeS (DR+GNN) and QABISAR papers is the legislative hierarchy; article-order edges are
/// our option.
pub fn legal_graph_edges(graph: &LegalGraph, sequence_edges: bool) -> Result<EdgeList> {
    let sequence: &[(usize, usize)] = if sequence_edges { &graph.sequence } else { &[] };
    EdgeList::from_legal_graph(&graph.hierarchy, sequence)
}

/// Loads into `net` the encoder the first stage selected in `out` (`OUT/summary.json`'s best epoch,
/// its checkpoint's trainable values) and returns the sha256 of those weights; `None` when `out`
/// holds no trained first stage (no summary, or epoch 0 selected), leaving `net` as built.
pub(crate) fn load_selected_encoder(net: &Trainable, out: &Path) -> Result<Option<String>> {
    let summary_path = out.join("summary.json");
    if !summary_path.is_file() {
        return Ok(None);
    }
    let s: Summary = lexbench_core::io::read_json(&summary_path)?;
    if s.best_epoch == 0 {
        return Ok(None);
    }
    let weights = checkpoint_dir(out, s.best_epoch).join("params.safetensors");
    net.store.load_values(&weights)?;
    Ok(Some(lexbench_core::hash::sha256_file(&weights)?))
}

/// The legislative graph of a corpus-wide dataset with node features from an encoder: structure nodes
/// are embedded from their labels, articles from their text; corpus documents missing from the graph
/// become isolated nodes appended at the end.
pub(crate) struct GraphFeatures {
    /// The graph as `graph.json` holds it.
    pub graph: LegalGraph,
    /// Node features `(nodes, dim)`, computed without gradient.
    pub x: Tensor,
    /// Corpus index → node index.
    pub doc_node: Vec<usize>,
}

impl GraphFeatures {
    /// Reads `DATA/datasets/<dataset>/graph.json` and embeds its nodes with `net`.
    pub(crate) fn build(
        net: &Trainable,
        split: &SplitData,
        data: &Path,
        dataset: &str,
        device: &Device,
    ) -> Result<Self> {
        let dir = lexbench_core::dataset::DatasetDir::in_data(data, dataset)?;
        let graph = LegalGraph::read(&dir.0.join(GRAPH_FILE))?;
        let nodes = super::negatives::curriculum::doc_nodes(&graph, split);
        let mut texts: Vec<&str> = graph.nodes.iter().map(|n| n.label.as_str()).collect();
        let mut doc_node = Vec::with_capacity(nodes.len());
        for (d, node) in nodes.iter().enumerate() {
            match node {
                Some(n) => {
                    texts[*n] = split.docs[d].text.as_str();
                    doc_node.push(*n);
                }
                None => doc_node.push(usize::MAX),
            }
        }
        for (d, n) in doc_node.iter_mut().enumerate() {
            if *n == usize::MAX {
                *n = texts.len();
                texts.push(split.docs[d].text.as_str());
            }
        }
        let rows = net.embed_texts(&texts, false, 32)?;
        let dim = rows.first().map_or(0, Vec::len);
        let flat: Vec<f32> = rows.into_iter().flatten().collect();
        let x = Tensor::from_vec(flat, (texts.len(), dim), device)?;
        Ok(Self { graph, x, doc_node })
    }

    /// Nodes (graph nodes plus appended isolated articles).
    pub(crate) fn nodes(&self) -> usize {
        self.x.dims()[0]
    }

    /// Width of the node features.
    pub(crate) fn dim(&self) -> usize {
        self.x.dims().get(1).copied().unwrap_or(0)
    }
}

/// What the GNN stage reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GnnSummary {
    /// Mean loss per GNN epoch.
    pub losses: Vec<f64>,
    /// Seconds per GNN epoch (node features included).
    pub epoch_s: Vec<f64>,
    /// The validation score (`eval.measure` on `data.val_split`) after each GNN epoch; `None`
    /// without a validation split.
    #[serde(default)]
    pub val: Vec<Option<f64>>,
    /// The GNN epoch the runs rank with (1-based): the validation best, ties to the earlier; the last
    /// without a validation split.
    #[serde(default)]
    pub best_epoch: usize,
    /// Graph nodes (structure + articles + isolated corpus articles).
    pub nodes: usize,
    /// Directed edges the GAT reads, self-loops not counted (hierarchy in both directions, plus article
    /// order with `gnn.sequence_edges`).
    #[serde(default)]
    pub edges: usize,
    /// Trainable parameters of the GAT and the gate.
    pub trainable_params: usize,
    /// The runs written.
    pub runs: Vec<String>,
}

/// The frozen encoder, the graph and the GAT.
struct Stage {
    net: Trainable,
    store: ParamStore,
    gat: Gat,
    mix: Option<Tensor>,
    x: Tensor,
    edges: EdgeList,
    /// Graph node of each corpus doc.
    doc_node: Tensor,
    /// Cosine · `gnn.scale`, or dot / `biencoder.temperature` (the encoder's scoring).
    sim: Similarity,
    /// The GAT's optimiser (`gnn.lr`, the rest of `[optim]`).
    optim: super::optim::AdamWConfig,
}

impl Stage {
    /// The stage over the encoder `out` selected, and that encoder's identity (the sha256 of its
    /// selected weights, or `untrained`).
    fn build(
        cfg: &TrainConfig,
        gnn: &GnnConfig,
        data: &Path,
        out: &Path,
        device: &Device,
    ) -> Result<(Self, String)> {
        let split = SplitData::load(data, &cfg.data.dataset, &cfg.data.train_split, false)?;
        let net = Trainable::build(cfg, device)?;
        let encoder = load_selected_encoder(&net, out)?.unwrap_or_else(|| "untrained".to_owned());
        let feats = GraphFeatures::build(&net, &split, data, &cfg.data.dataset, device)?;
        let dim = feats.dim();
        let edges = legal_graph_edges(&feats.graph, gnn.sequence_edges)?;
        edges.validate(feats.nodes())?;
        let store = ParamStore::new(derive_seed(cfg.seed, SeedPurpose::GnnShuffle, u64::MAX));
        let vb = store.var_builder(device);
        let gat = Gat::load(&gnn.gat(dim)?, vb.pp("gat"))?;
        let mix = if gnn.residual_mix {
            Some(vb.get_with_hints(1, "mix", Init::Const(0.0))?)
        } else {
            None
        };
        let idx: Vec<u32> = feats.doc_node.iter().map(|&n| n as u32).collect();
        let doc_node = Tensor::new(idx.as_slice(), device)?;
        let optim = super::optim::AdamWConfig {
            lr: gnn.lr,
            ..cfg.optim.clone()
        };
        let stage = Self {
            net,
            store,
            gat,
            mix,
            x: feats.x,
            edges,
            doc_node,
            sim: match cfg.biencoder.similarity() {
                Similarity::Cosine { .. } => Similarity::Cosine { scale: gnn.scale },
                dot => dot,
            },
            optim,
        };
        Ok((stage, encoder))
    }

    /// Enriched, normalised vectors of every corpus doc `(docs, dim)`.
    fn articles(&self, train: bool) -> Result<Tensor> {
        let g = self.gat.forward_t(
            &self.x,
            (&self.edges.src, &self.edges.dst),
            &self.edges.types,
            train,
        )?;
        let v = match &self.mix {
            Some(m) => {
                let a = candle_nn::ops::sigmoid(m)?;
                let one_minus = (a.neg()? + 1.0)?;
                (g.broadcast_mul(&a)? + self.x.broadcast_mul(&one_minus)?)?
            }
            None => g,
        };
        self.sim.prepare(&v.index_select(&self.doc_node, 0)?)
    }

    fn queries(&self, split: &SplitData) -> Result<Tensor> {
        let texts: Vec<&str> = split.topics.iter().map(|t| t.text.as_str()).collect();
        let rows = self.net.embed_texts(&texts, true, 32)?;
        let dim = self.x.dims2()?.1;
        let flat: Vec<f32> = rows.into_iter().flatten().collect();
        let q = Tensor::from_vec(flat, (texts.len(), dim), self.x.device())?;
        self.sim.prepare(&q)
    }

    /// Scores of every corpus doc for every topic, `(topics, docs)`, without gradient.
    fn score_all(&self, q: &Tensor) -> Result<Vec<Vec<f32>>> {
        let e = self.articles(false)?.detach();
        Ok(q.matmul(&e.t()?)?.to_vec2::<f32>()?)
    }
}

/// The contrastive loss of one batch: each example's positive against its negatives and (in-batch)
/// the other examples' positives and negatives that are not positives of its topic.
fn batch_loss(
    stage: &Stage,
    q: &Tensor,
    split: &SplitData,
    exs: &[&Example],
    in_batch: bool,
) -> Result<Tensor> {
    let mut docs: Vec<usize> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    let mut at = |d: usize, docs: &mut Vec<usize>| -> usize {
        *slot.entry(d).or_insert_with(|| {
            docs.push(d);
            docs.len() - 1
        })
    };
    let mut pos = Vec::with_capacity(exs.len());
    let mut own: Vec<HashSet<usize>> = Vec::with_capacity(exs.len());
    for e in exs {
        pos.push(at(e.positive, &mut docs) as u32);
        own.push(e.negatives.iter().map(|&d| at(d, &mut docs)).collect());
    }
    let p = docs.len();
    let mut mask = vec![0f32; exs.len() * p];
    for (i, e) in exs.iter().enumerate() {
        let positives: HashSet<usize> = split.topics[e.topic].positives.iter().copied().collect();
        for (j, d) in docs.iter().enumerate() {
            let allowed = j == pos[i] as usize || own[i].contains(&j) || (in_batch && !positives.contains(d));
            if !allowed {
                mask[i * p + j] = -1e4;
            }
        }
    }
    let device = q.device();
    let topics: Vec<u32> = exs.iter().map(|e| e.topic as u32).collect();
    let qb = q.index_select(&Tensor::new(topics.as_slice(), device)?, 0)?;
    let idx: Vec<u32> = docs.iter().map(|&d| d as u32).collect();
    let e = stage
        .articles(true)?
        .index_select(&Tensor::new(idx.as_slice(), device)?, 0)?;
    let scores = stage.sim.scores(&qb, &e)?;
    let mask = Tensor::from_vec(mask, (exs.len(), p), device)?;
    crate::train::losses::contrastive_nll(&(scores + mask)?, &pos)
}

/// DR+GNN's second stage as an objective of the training loop: the GAT (and gate) over the frozen
/// encoder's features, trained against the frozen query embeddings of the training topics.
struct GnnObjective {
    stage: Stage,
    /// Frozen query embeddings of the training topics.
    q: Tensor,
    in_batch: bool,
    /// The validation split and the frozen encoder's embeddings of its questions, when the
    /// configuration has one: each GNN epoch is scored on it (`eval.measure`) and the best is kept,
    /// as the first stage's epochs are.
    val: Option<(Validation, Tensor)>,
    /// The run's tag in validation runs (the configuration's name).
    name: String,
    /// The validation run's depth (`eval.top_k`).
    top_k: usize,
    /// `OUT/gnn`.
    dir: std::path::PathBuf,
}

impl Objective for GnnObjective {
    fn loss_name(&self) -> (&'static str, &'static str) {
        ("gnn loss", "gnn.lr")
    }

    fn param_groups(&self) -> Vec<ParamGroup> {
        vec![ParamGroup {
            vars: self.stage.store.vars(),
            optim: self.stage.optim.clone(),
        }]
    }

    fn save(&self, dir: &Path) -> Result<()> {
        self.stage.store.save(&dir.join("params.safetensors"))
    }

    fn load(&mut self, dir: &Path) -> Result<()> {
        self.stage.store.load_values(&dir.join("params.safetensors"))
    }

    fn candidate_scores(&self, split: &SplitData) -> Result<Vec<Vec<f64>>> {
        let all = self.stage.score_all(&self.q)?;
        Ok((0..split.topics.len())
            .map(|t| {
                split
                    .candidates(t)
                    .iter()
                    .map(|&d| f64::from(all[t][d]))
                    .collect()
            })
            .collect())
    }

    fn loss(&self, split: &SplitData, batch: &[&Example], _step: u64) -> Result<Tensor> {
        batch_loss(&self.stage, &self.q, split, batch, self.in_batch)
    }

    /// The validation questions ranked over the whole corpus with the current GAT (no dropout), scored
    /// by `eval.measure`.
    fn validate(&self) -> Result<Option<f64>> {
        let Some((v, q)) = &self.val else {
            return Ok(None);
        };
        let scores = self.stage.score_all(q)?;
        // As deep as the runs it selects for (`eval.top_k`), as the encoder's validation ranks.
        let run = run_from_corpus_scores(&v.split, &self.name, &scores, self.top_k);
        let ev = evaluate(&run, &v.split.qrels, &[v.measure], v.pools.as_ref())?;
        Ok(ev.get(v.measure))
    }

    /// The GAT of the selected epoch, `OUT/gnn/model.safetensors` (what the runs rank with).
    fn export(&self, _state: &State) -> Result<()> {
        self.stage.store.save(&self.dir.join(GNN_WEIGHTS))
    }
}

/// The selected GNN epoch's weights in `OUT/gnn`.
const GNN_WEIGHTS: &str = "model.safetensors";

/// Trains DR+GNN's second stage after [`super::finetune::train`] has trained the encoder into `out`
/// (in `OUT/gnn`, through the training loop: checkpoints, resumption), then ranks `splits` (writing
/// `DATA/runs/<dataset>/<split>/<name>.trec` and its sidecar).
pub fn train_dr_gnn(
    cfg: &TrainConfig,
    data: &Path,
    out: &Path,
    device: &Device,
    splits: &[String],
    opts: &TrainOptions,
) -> Result<(GnnSummary, Vec<NeuralOutput>)> {
    let gnn = cfg
        .gnn
        .as_ref()
        .ok_or_else(|| Error::internal("DR+GNN's stage called without a [gnn] section"))?;
    gnn.validate()?;
    let mut split = SplitData::load(data, &cfg.data.dataset, &cfg.data.train_split, true)?;
    cfg.eval.check_depth(split.pooled(), split.docs.len())?;
    if cfg.data.max_train_topics > 0 {
        split.topics.truncate(cfg.data.max_train_topics);
    }
    let (stage, encoder) = Stage::build(cfg, gnn, data, out, device)?;
    let dir = out.join("gnn");
    let val = match validation(cfg, data)? {
        Some(v) => {
            let q = stage.queries(&v.split)?;
            Some((v, q))
        }
        None => None,
    };
    let measure = if val.is_some() {
        cfg.eval.measure.clone()
    } else {
        String::new()
    };
    let objective = GnnObjective {
        q: stage.queries(&split)?,
        stage,
        in_batch: cfg.biencoder.in_batch,
        val,
        name: cfg.name.clone(),
        top_k: cfg.eval.top_k,
        dir: dir.clone(),
    };
    let nodes = objective.stage.x.dims2()?.0;
    let edges = objective.stage.edges.len();
    let trainable_params = objective.stage.store.num_params();
    let negatives = negative_sources(cfg, &split, data)?;
    // The stage's identity: the configuration and the encoder it starts from.
    let identity = format!("{}\n# encoder: {encoder}\n", config_text(cfg)?);
    let spec = LoopSpec {
        out: &dir,
        identity,
        seed: cfg.seed,
        seeds: LoopSeeds::GNN,
        split: &split,
        what: format!("split {} of {}", cfg.data.train_split, cfg.data.dataset),
        epochs: gnn.epochs,
        batch_size: gnn.batch_size,
        warmup_ratio: 0.1,
        max_steps: 0,
        max_grad_norm: cfg.schedule.max_grad_norm,
        measure,
        negatives: &negatives,
        device,
    };
    let mut trainer = Trainer::new(spec, objective)?;
    let outcome = trainer.run(opts)?;
    let stage = trainer.into_objective().stage;
    // The runs rank with the selected epoch's GAT (the validation best; the last without a
    // validation split), not with the weights the last epoch left in memory.
    stage.store.load_values(&dir.join(GNN_WEIGHTS))?;
    let epochs = &outcome.state.epochs;
    let mut summary = GnnSummary {
        losses: epochs.iter().map(|e| e.loss).collect(),
        epoch_s: epochs.iter().map(|e| e.train_s + e.val_s).collect(),
        val: epochs.iter().map(|e| e.val).collect(),
        best_epoch: outcome.state.best_epoch,
        nodes,
        edges,
        trainable_params,
        runs: Vec::new(),
    };
    lexbench_core::io::write_json_pretty(
        &dir.join("gnn.json"),
        &serde_json::json!({"name": cfg.name, "gnn": gnn, "nodes": summary.nodes, "edges": summary.edges, "trainable_params": trainable_params, "losses": summary.losses, "epoch_s": summary.epoch_s, "val": summary.val, "best_epoch": summary.best_epoch, "measure": cfg.eval.measure}),
    )?;
    let mut outputs = Vec::new();
    let mut ranker = DrGnnRanker {
        cfg,
        stage: &stage,
        model_dir: &dir,
    };
    for s in splits {
        let target = crate::rank::RunTarget::new(data, &cfg.data.dataset, s, &cfg.name)?;
        let o = crate::rank::write_run(&mut ranker, &target)?;
        summary.runs.push(o.run_path.display().to_string());
        outputs.push(o);
    }
    lexbench_core::io::write_json_pretty(&dir.join("summary.json"), &summary)?;
    Ok((summary, outputs))
}

/// DR+GNN's trained stage as a ranker: the frozen encoder's question embeddings against the enriched
/// vectors of the whole corpus ([`run_from_corpus_scores`]).
struct DrGnnRanker<'a> {
    cfg: &'a TrainConfig,
    stage: &'a Stage,
    /// `OUT/gnn`, recorded and hashed in the sidecar.
    model_dir: &'a Path,
}

impl crate::rank::Ranker for DrGnnRanker<'_> {
    type Details = crate::rank::neural::NeuralDetails;

    fn seed(&self) -> u64 {
        crate::rank::neural::SEED
    }

    fn rank(&mut self, inputs: &crate::rank::SplitInputs) -> Result<crate::rank::Ranked<Self::Details>> {
        let t0 = Instant::now();
        let target = SplitData::from_inputs(inputs, false, false)?;
        let qs = self.stage.queries(&target)?;
        let scores = self.stage.score_all(&qs)?;
        let (cfg, top_k) = (self.cfg, self.cfg.eval.top_k);
        let run = run_from_corpus_scores(&target, &cfg.name, &scores, top_k);
        let config = serde_json::json!({"model": "dr_gnn", "train_config": cfg, "top_k": top_k});
        Ok(crate::rank::Ranked {
            run,
            details: crate::rank::neural::NeuralDetails::new(self.model_dir, config, target.docs.len())?,
            timings: [("rank_s".to_owned(), t0.elapsed().as_secs_f64())].into(),
        })
    }
}
