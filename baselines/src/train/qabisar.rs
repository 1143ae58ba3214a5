//! QABISAR (query-article bipartite graph for statutory article retrieval), in the paper's two stages.
//!
//! - **Stage 1** trains the bi-encoder as a plain dense retriever ([`super::finetune::train`] into
//!   `OUT`, as the rest of the config says); `lexbench train` runs it first. Stage 2 starts from the
//!   encoder stage 1 selected (its sha256 is part of stage 2's identity, so a checkpoint of stage 2
//!   over another encoder is refused) and trains in `OUT/qabisar`.
//! - **Graph**: the training queries ([`stage_two_split`]: the training split's and the validation
//!   split's, "all queries from the training set"), BSARD's legislative graph (structure nodes and articles; corpus
//!   articles missing from it are isolated nodes) with edges typed by the kinds of the nodes they join
//!   ([`EdgeList::typed_by_node_kinds`]: `query→article`, `article→query`, `code→book`,
//!   `section→article`, `article→section`, …; and the GAT's self-loops). The statute graph is the
//!   hierarchy, as the paper's; `article→article next` / `previous` edges (article order within a
//!   code) only with `qabisar.sequence_edges = true`, an option of ours, off by default. The
//!   edge-type embeddings are as wide as the node features unless `edge_dim` says otherwise.
//! - **Node features**: articles and structure labels embedded once by the **stage-1 encoder**,
//!   without gradient (the article side is frozen in stage 2). Query nodes: the batch's questions
//!   are embedded by the current query encoder **with gradient** in each batch's forward pass, and
//!   those embeddings are their nodes' features (joint training: the paper's "joint training drives
//!   the bi-encoder to update in tandem with the graph representations"); every other query node
//!   keeps a cached embedding, without gradient, refreshed by the query encoder at each epoch start.
//! - **Per batch**: a GATv2 over the sampled `hops`-hop subgraph around the batch's query nodes and
//!   candidate articles (positives, sampled negatives, other examples' articles), drawn as if the
//!   batch questions' own `query→article` / `article→query` edges to their positives were not in the
//!   graph (unless `keep_batch_positive_edges`): the teacher does not read the answer off the graph,
//!   as a validation or test question, which has no such edges, cannot either. Loss =
//!   `contrastive_weight` · NLL(graph query rep · graph article reps) + `kd_weight` ·
//!   KL(softmax(graph scores) ‖ softmax(student scores)) where the student scores are the **query
//!   encoder**'s embedding of the batch's questions (the same tensor as their node features) against
//!   the detached graph article reps, and the teacher is detached: the KD gradient reaches only the
//!   query encoder's trainable parameters (LoRA or full), the contrastive one the GAT and, through
//!   the batch's query-node features, the query encoder. Scores are the bi-encoder's
//!   (`[biencoder]`): dot product / temperature (the paper's, with `cosine = false`) or cosine · scale.
//! - **Inference**: graph article reps from the whole graph (no dropout) × the distilled query
//!   encoder's embedding of the test question (test questions are not in the graph).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use super::config::{QabisarConfig, TrainConfig};
use super::data::SplitData;
use super::dr_gnn::{GraphFeatures, load_selected_encoder};
use super::finetune::{config_text, negative_sources};
use super::model::{Trainable, run_from_corpus_scores};
use super::negatives::{Example, Rankings};
use super::optim::AdamWConfig;
use super::params::ParamStore;
use super::seeds::{LoopSeeds, SeedPurpose, derive_seed};
use super::trainer::{LoopSpec, Objective, ParamGroup, State, TrainOptions, Trainer};
use crate::error::{Error, Result, io_err};
use crate::graph::{Adjacency, Direction, EdgeList, EdgeType, Gat, Subgraph};
use crate::rank::neural::NeuralOutput;
use crate::train::losses::{contrastive_nll, kl_distillation};

/// QABISAR's model: the query encoder, the frozen article features, the graph and the GAT.
pub struct Qabisar {
    cfg: QabisarConfig,
    /// The query encoder (its store holds the encoder's trainable parameters).
    pub net: Trainable,
    /// The GAT's parameters.
    pub gnn_store: ParamStore,
    gat: Gat,
    /// Features of the non-query nodes (structure, articles), frozen.
    base_x: Tensor,
    /// Query-node features `(train topics, dim)`, refreshed by [`Qabisar::refresh_queries`]: the
    /// cache the query nodes outside a batch read (the batch's own are embedded with gradient).
    query_x: Tensor,
    /// Query nodes come first: node `t` is training topic `t`; then `base_x`'s nodes.
    edges: EdgeList,
    adjacency: Adjacency,
    /// Graph node of each corpus doc.
    doc_node: Vec<u32>,
    /// Every edge type's name by id ([`EdgeList::typed_by_node_kinds`]).
    edge_types: Vec<String>,
    /// For each query node (training topic), the positions in `edges` of its edges to and from its
    /// positive articles: what a batch training on it leaves out (`keep_batch_positive_edges`).
    answer_edges: Vec<Vec<usize>>,
    /// The sha256 of the stage-1 encoder's weights.
    encoder: String,
    seed: u64,
}

impl std::fmt::Debug for Qabisar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qabisar")
            .field("nodes", &self.nodes())
            .field("edges", &self.edges.len())
            .finish()
    }
}

impl Qabisar {
    /// Builds stage 2 for `split` (the training split) of `DATA/datasets/<cfg.data.dataset>`, which
    /// must hold `graph.json`, over the encoder stage 1 trained in `out` (an error when `out` holds
    /// none: run [`super::finetune::train`] into it first).
    pub fn build(
        cfg: &TrainConfig,
        split: &SplitData,
        data: &Path,
        out: &Path,
        device: &Device,
    ) -> Result<Self> {
        let q = cfg
            .qabisar
            .clone()
            .ok_or_else(|| Error::internal("QABISAR's stage 2 called without a [qabisar] section"))?;
        q.validate()?;
        let net = Trainable::build(cfg, device)?;
        let encoder = load_selected_encoder(&net, out)?.ok_or_else(|| {
            Error::Folder {
                path: out.to_owned(),
                message: "QABISAR's stage 2 starts from the bi-encoder stage 1 trained here, and this folder \
                          holds no trained encoder (no summary.json with a selected epoch): train stage 1 there \
                          first (`lexbench train` runs both stages)"
                    .into(),
            }
        })?;
        let feats = GraphFeatures::build(&net, split, data, &cfg.data.dataset, device)?;
        let dim = feats.dim();
        let base_nodes = feats.nodes();
        let base_x = feats.x;
        let nq = split.topics.len();
        let shift = |n: usize| -> Result<u32> {
            u32::try_from(n + nq).map_err(|_| Error::data("qabisar graph", "more than 2^32 nodes"))
        };
        let doc_node: Vec<u32> = feats.doc_node.iter().map(|&n| shift(n)).collect::<Result<_>>()?;
        let structural = super::dr_gnn::legal_graph_edges(&feats.graph, q.sequence_edges)?;
        let mut edges = EdgeList::new();
        for (t, topic) in split.topics.iter().enumerate() {
            for &d in &topic.positives {
                edges.push(t as u32, doc_node[d], EdgeType::QueryArticle);
                edges.push(doc_node[d], t as u32, EdgeType::ArticleQuery);
            }
        }
        for k in 0..structural.len() {
            edges.src.push(structural.src[k] + nq as u32);
            edges.dst.push(structural.dst[k] + nq as u32);
            edges.types.push(structural.types[k]);
        }
        // Node kinds: the queries, the graph's nodes, then the corpus articles it lacks.
        let mut kinds: Vec<&str> = vec!["query"; nq];
        kinds.extend(feats.graph.nodes.iter().map(|n| n.kind.as_str()));
        kinds.resize(nq + base_nodes, "article");
        let (edges, edge_types) = edges.typed_by_node_kinds(&kinds)?;
        let nodes = nq + base_nodes;
        // A query node's only edges are those to and from its positives (no self-loop is listed).
        let mut answer_edges = vec![Vec::new(); nq];
        for k in 0..edges.len() {
            let (a, b) = (edges.src[k] as usize, edges.dst[k] as usize);
            if a == b {
                continue;
            }
            for t in [a, b] {
                if t < nq {
                    answer_edges[t].push(k);
                }
            }
        }
        let adjacency = Adjacency::new(nodes, &edges, Direction::Incoming)?;
        let gnn_store = ParamStore::new(derive_seed(cfg.seed, SeedPurpose::QabisarInit, 0));
        let gat = Gat::load(
            &q.gat(dim, edge_types.len())?,
            gnn_store.var_builder(device).pp("gat"),
        )?;
        let query_x = Tensor::zeros((nq, dim), DType::F32, device)?;
        let mut me = Self {
            cfg: q,
            net,
            gnn_store,
            gat,
            base_x,
            query_x,
            edges,
            adjacency,
            doc_node,
            edge_types,
            answer_edges,
            encoder,
            seed: cfg.seed,
        };
        me.refresh_queries(split)?;
        Ok(me)
    }

    /// Nodes of the graph.
    pub fn nodes(&self) -> usize {
        self.adjacency.num_nodes()
    }

    /// Every edge type's name by id.
    pub fn edge_types(&self) -> &[String] {
        &self.edge_types
    }

    /// The sha256 of the stage-1 encoder's weights stage 2 started from.
    pub fn encoder_sha256(&self) -> &str {
        &self.encoder
    }

    /// The frozen input features of every corpus doc's article node, `(docs, dim)`: the stage-1
    /// encoder's passage embeddings.
    pub fn article_features(&self) -> Result<Tensor> {
        let nq = self.query_x.dims2()?.0 as u32;
        let rows: Vec<u32> = self.doc_node.iter().map(|&n| n - nq).collect();
        Ok(self
            .base_x
            .index_select(&Tensor::new(rows.as_slice(), self.base_x.device())?, 0)?)
    }

    /// Re-embeds the cached query-node features with the current query encoder (no gradient).
    pub fn refresh_queries(&mut self, split: &SplitData) -> Result<()> {
        let texts: Vec<&str> = split.topics.iter().map(|t| t.text.as_str()).collect();
        let rows = self.net.embed_texts(&texts, true, 32)?;
        let dim = self.base_x.dims2()?.1;
        self.query_x = Tensor::from_vec(
            rows.into_iter().flatten().collect::<Vec<f32>>(),
            (texts.len(), dim),
            self.base_x.device(),
        )?;
        Ok(())
    }

    fn features(&self) -> Result<Tensor> {
        Ok(Tensor::cat(&[&self.query_x, &self.base_x], 0)?)
    }

    /// Graph article representations of every corpus doc from the whole graph, `(docs, dim)`,
    /// normalised for cosine scores, without dropout or gradient.
    pub fn article_reps(&self) -> Result<Tensor> {
        let h = self.gat.forward_t(
            &self.features()?,
            (&self.edges.src, &self.edges.dst),
            &self.edges.types,
            false,
        )?;
        let idx = Tensor::new(self.doc_node.as_slice(), h.device())?;
        Ok(self.net.similarity().prepare(&h.index_select(&idx, 0)?)?.detach())
    }

    /// The graph node of corpus doc `doc` (query nodes come first: node `t` is training topic `t`).
    pub fn doc_node(&self, doc: usize) -> u32 {
        self.doc_node[doc]
    }

    /// The subgraph a batch of `exs` trains on at `step` ([`Self::losses`]): its seeds are the batch's
    /// query nodes, then its articles' nodes.
    pub fn batch_subgraph(&self, exs: &[&Example], step: u64) -> Result<Subgraph> {
        Ok(self.batch(exs, step)?.sub)
    }

    /// The batch's articles, query and article seeds and its sampled subgraph.
    fn batch(&self, exs: &[&Example], step: u64) -> Result<Batch> {
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
        // Seeds: the batch's query nodes (distinct topics), then its articles' nodes.
        let mut seeds: Vec<u32> = Vec::new();
        let mut q_local = Vec::with_capacity(exs.len());
        for e in exs {
            let n = e.topic as u32;
            let i = seeds.iter().position(|&s| s == n).unwrap_or_else(|| {
                seeds.push(n);
                seeds.len() - 1
            });
            q_local.push(i as u32);
        }
        let nqb = seeds.len();
        let mut a_local = Vec::with_capacity(docs.len());
        for &d in &docs {
            let n = self.doc_node[d];
            let i = seeds.iter().position(|&s| s == n).unwrap_or_else(|| {
                seeds.push(n);
                seeds.len() - 1
            });
            a_local.push(i as u32);
        }
        // The batch questions' edges to their own answers are left out (unless kept): the teacher
        // must not read the positives off the graph.
        let left_out: HashSet<usize> = if self.cfg.keep_batch_positive_edges {
            HashSet::new()
        } else {
            seeds[..nqb]
                .iter()
                .flat_map(|&t| self.answer_edges[t as usize].iter().copied())
                .collect()
        };
        let sub = self.adjacency.sample_without(
            &seeds,
            self.cfg.hops,
            Some(self.cfg.fanout),
            derive_seed(self.seed, SeedPurpose::QabisarSample, step),
            &left_out,
        )?;
        Ok(Batch {
            docs,
            pos,
            own,
            seeds,
            nqb,
            q_local,
            a_local,
            sub,
        })
    }

    /// The two losses of one batch: `(graph contrastive, distillation into the query encoder)`.
    /// `step` seeds the subgraph sample.
    pub fn losses(&self, split: &SplitData, exs: &[&Example], step: u64) -> Result<(Tensor, Tensor)> {
        let device = self.base_x.device();
        let Batch {
            docs,
            pos,
            own,
            seeds,
            nqb,
            q_local,
            a_local,
            sub,
        } = self.batch(exs, step)?;
        // Joint training: the batch's questions are embedded by the query encoder with gradient, and
        // those embeddings are their query nodes' features (the subgraph's first nodes, the seeds), so
        // the graph loss reaches the query encoder too. The other query nodes the sample reaches
        // (through a shared article) keep the features of the epoch's start, without gradient.
        let texts: Vec<&str> = seeds[..nqb]
            .iter()
            .map(|&t| split.topics[t as usize].text.as_str())
            .collect();
        // Contiguous: `[CLS]` pooling without normalisation (dot products) gives a strided slice.
        let q_nodes = self.net.encode_queries_t(&texts, true)?.contiguous()?;
        let cached = self
            .features()?
            .index_select(&Tensor::new(&sub.nodes[nqb..], device)?, 0)?;
        let x = Tensor::cat(&[&q_nodes, &cached], 0)?;
        let h = self
            .gat
            .forward_t(&x, (&sub.edges.src, &sub.edges.dst), &sub.edges.types, true)?;
        let sim = self.net.similarity();
        let hq = sim.prepare(&h.index_select(&Tensor::new(q_local.as_slice(), device)?, 0)?)?;
        let ha = sim.prepare(&h.index_select(&Tensor::new(a_local.as_slice(), device)?, 0)?)?;
        let p = docs.len();
        let mut mask = vec![0f32; exs.len() * p];
        for (i, e) in exs.iter().enumerate() {
            let positives: HashSet<usize> = split.topics[e.topic].positives.iter().copied().collect();
            for (j, d) in docs.iter().enumerate() {
                if j != pos[i] as usize && !own[i].contains(&j) && positives.contains(d) {
                    mask[i * p + j] = -1e4;
                }
            }
        }
        let mask = Tensor::from_vec(mask, (exs.len(), p), device)?;
        let graph_scores = (sim.scores(&hq, &ha)? + &mask)?;
        let contrastive = contrastive_nll(&graph_scores, &pos)?;
        // The student: the same embeddings of the batch's questions (one dropout mask per question).
        let q = q_nodes.index_select(&Tensor::new(q_local.as_slice(), device)?, 0)?;
        let student = (sim.scores(&q, &ha.detach())? + &mask)?;
        let kd = kl_distillation(&student, &graph_scores, self.cfg.temperature)?;
        Ok((contrastive, kd))
    }

    /// The weighted training loss of one batch.
    pub fn loss(&self, split: &SplitData, exs: &[&Example], step: u64) -> Result<Tensor> {
        let (c, k) = self.losses(split, exs, step)?;
        Ok(((c * self.cfg.contrastive_weight)? + (k * self.cfg.kd_weight)?)?)
    }
}

/// One batch's layout ([`Qabisar::batch`]).
struct Batch {
    /// The batch's distinct corpus docs (positives, then negatives, in order of first use).
    docs: Vec<usize>,
    /// Each example's positive, as an index into `docs`.
    pos: Vec<u32>,
    /// Each example's own negatives, as indices into `docs`.
    own: Vec<HashSet<usize>>,
    /// The subgraph's seeds: the batch's query nodes (the first `nqb`), then its articles' nodes.
    seeds: Vec<u32>,
    nqb: usize,
    /// Each example's query node and each doc's node, as local ids of the subgraph.
    q_local: Vec<u32>,
    a_local: Vec<u32>,
    sub: Subgraph,
}

/// What QABISAR's training reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QabisarSummary {
    /// Mean loss per epoch.
    pub losses: Vec<f64>,
    /// Seconds per epoch.
    pub epoch_s: Vec<f64>,
    /// Graph nodes.
    pub nodes: usize,
    /// Trainable parameters (query encoder + GAT).
    pub trainable_params: usize,
    /// The runs written.
    pub runs: Vec<String>,
}

/// QABISAR as an objective of the training loop: two parameter groups (the query encoder with
/// `[optim]`, the GAT with `qabisar.gnn_lr`), query features refreshed at each epoch's start.
struct QabisarObjective {
    model: Qabisar,
    optim: AdamWConfig,
    /// `OUT/qabisar`.
    dir: std::path::PathBuf,
}

impl Objective for QabisarObjective {
    fn loss_name(&self) -> (&'static str, &'static str) {
        ("qabisar loss", "the learning rates")
    }

    fn param_groups(&self) -> Vec<ParamGroup> {
        let gnn = AdamWConfig {
            lr: self.model.cfg.gnn_lr,
            ..self.optim.clone()
        };
        vec![
            // The query encoder: with separate encoders E_q alone (the article side is frozen).
            ParamGroup {
                vars: self.model.net.query_encoder_vars(),
                optim: self.optim.clone(),
            },
            ParamGroup {
                vars: self.model.gnn_store.vars(),
                optim: gnn,
            },
        ]
    }

    fn save(&self, dir: &Path) -> Result<()> {
        self.model.net.store.save(&dir.join("params.safetensors"))?;
        self.model.gnn_store.save(&dir.join("gnn.safetensors"))
    }

    fn load(&mut self, dir: &Path) -> Result<()> {
        self.model
            .net
            .store
            .load_values(&dir.join("params.safetensors"))?;
        self.model.gnn_store.load_values(&dir.join("gnn.safetensors"))
    }

    /// The cached query-node features (those outside a batch) are re-embedded by the query encoder as
    /// it is at the epoch's start.
    fn start_epoch(&mut self, split: &SplitData, epoch: usize) -> Result<Option<Rankings>> {
        if epoch > 0 {
            self.model.refresh_queries(split)?;
        }
        Ok(None)
    }

    fn candidate_scores(&self, split: &SplitData) -> Result<Vec<Vec<f64>>> {
        self.model.net.candidate_scores(split, 32)
    }

    fn loss(&self, split: &SplitData, batch: &[&Example], step: u64) -> Result<Tensor> {
        self.model.loss(split, batch, step)
    }

    /// The query nodes refreshed at an epoch's start are not in the checkpoint.
    fn resumes_within_epoch(&self) -> bool {
        false
    }

    fn export(&self, _state: &State) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(io_err(&self.dir))?;
        self.model.gnn_store.save(&self.dir.join("model.safetensors"))?;
        self.model.net.store.save(&self.dir.join("encoder.safetensors"))
    }
}

/// Trains QABISAR's stage 2 after [`super::finetune::train`] has trained the bi-encoder (stage 1)
/// into `out`: the GAT and the distillation into the query encoder (`cfg.schedule` epochs and
/// batches, `cfg.optim` for the query encoder, `qabisar.gnn_lr` for the GAT) through the training
/// loop in `OUT/qabisar` (checkpoints, resumption; the model and `qabisar.json` there), then ranks
/// `splits`.
pub fn train_qabisar(
    cfg: &TrainConfig,
    data: &Path,
    out: &Path,
    device: &Device,
    splits: &[String],
    opts: &TrainOptions,
) -> Result<(QabisarSummary, Vec<NeuralOutput>)> {
    cfg.validate()?;
    let split = stage_two_split(cfg, data)?;
    cfg.eval.check_depth(split.pooled(), split.docs.len())?;
    let model = Qabisar::build(cfg, &split, data, out, device)?;
    let q = model.cfg.clone();
    let nodes = model.nodes();
    // The stage's identity: the configuration, the questions of the graph and the encoder it starts from.
    let identity = format!(
        "{}\n# graph questions: {}\n# encoder: {}\n",
        config_text(cfg)?,
        [cfg.data.train_split.as_str(), cfg.data.val_split.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" + "),
        model.encoder_sha256()
    );
    let edge_types = model.edge_types().to_vec();
    let encoder_params: usize = model
        .net
        .query_encoder_vars()
        .iter()
        .map(|(_, v)| v.elem_count())
        .sum();
    let trainable_params = encoder_params + model.gnn_store.num_params();
    let dir = out.join("qabisar");
    let objective = QabisarObjective {
        model,
        optim: cfg.optim.clone(),
        dir: dir.clone(),
    };
    let negatives = negative_sources(cfg, &split, data)?;
    let spec = LoopSpec {
        out: &dir,
        identity,
        seed: cfg.seed,
        seeds: LoopSeeds::QABISAR,
        split: &split,
        what: format!("split {} of {}", cfg.data.train_split, cfg.data.dataset),
        epochs: q.epochs.unwrap_or(cfg.schedule.epochs),
        batch_size: q.batch_size.unwrap_or(cfg.schedule.batch_size),
        warmup_ratio: cfg.schedule.warmup_ratio,
        max_steps: cfg.schedule.max_steps,
        max_grad_norm: cfg.schedule.max_grad_norm,
        measure: String::new(),
        negatives: &negatives,
        device,
    };
    let mut trainer = Trainer::new(spec, objective)?;
    let outcome = trainer.run(opts)?;
    let mut model = trainer.into_objective().model;
    let epochs = &outcome.state.epochs;
    let mut summary = QabisarSummary {
        losses: epochs.iter().map(|e| e.loss).collect(),
        epoch_s: epochs.iter().map(|e| e.train_s + e.val_s).collect(),
        nodes,
        trainable_params,
        runs: Vec::new(),
    };
    model.refresh_queries(&split)?;
    let articles = model.article_reps()?;
    let mut outputs = Vec::new();
    let mut ranker = QabisarRanker {
        cfg,
        model: &model,
        articles: &articles,
        model_dir: &dir,
    };
    for s in splits {
        let target = crate::rank::RunTarget::new(data, &cfg.data.dataset, s, &cfg.name)?;
        let o = crate::rank::write_run(&mut ranker, &target)?;
        summary.runs.push(o.run_path.display().to_string());
        outputs.push(o);
    }
    lexbench_core::io::write_json_pretty(
        &dir.join("qabisar.json"),
        &serde_json::json!({"name": cfg.name, "qabisar": cfg.qabisar, "stage1_encoder_sha256": model.encoder_sha256(), "nodes": nodes, "edge_types": edge_types, "trainable_params": trainable_params}),
    )?;
    lexbench_core::io::write_json_pretty(&dir.join("summary.json"), &summary)?;
    Ok((summary, outputs))
}

/// Stage 2's questions, the graph's query nodes and its training examples: "all queries from the
/// training set", as the paper's graph holds them. Those of `data.train_split` (the first
/// `data.max_train_topics` when set, as stage 1 trained on), then those of `data.val_split` when
/// there is one: the validation questions selected stage 1's epoch, and stage 2 selects nothing (its
/// last epoch is kept), so they can join it.
pub fn stage_two_split(cfg: &TrainConfig, data: &Path) -> Result<SplitData> {
    let mut split = SplitData::load(data, &cfg.data.dataset, &cfg.data.train_split, true)?;
    if cfg.data.max_train_topics > 0 {
        split.topics.truncate(cfg.data.max_train_topics);
    }
    if !cfg.data.val_split.is_empty() {
        split.append(SplitData::load(
            data,
            &cfg.data.dataset,
            &cfg.data.val_split,
            true,
        )?)?;
    }
    Ok(split)
}

/// Trained QABISAR as a ranker: the distilled query encoder's embedding of each question (test
/// questions are not in the graph) against the graph article representations of the whole corpus
/// ([`run_from_corpus_scores`]).
struct QabisarRanker<'a> {
    cfg: &'a TrainConfig,
    model: &'a Qabisar,
    /// [`Qabisar::article_reps`], `(docs, dim)`.
    articles: &'a Tensor,
    /// `OUT/qabisar`, recorded and hashed in the sidecar.
    model_dir: &'a Path,
}

impl crate::rank::Ranker for QabisarRanker<'_> {
    type Details = crate::rank::neural::NeuralDetails;

    fn seed(&self) -> u64 {
        crate::rank::neural::SEED
    }

    fn rank(&mut self, inputs: &crate::rank::SplitInputs) -> Result<crate::rank::Ranked<Self::Details>> {
        let t0 = Instant::now();
        let target = SplitData::from_inputs(inputs, false, false)?;
        let texts: Vec<&str> = target.topics.iter().map(|t| t.text.as_str()).collect();
        let rows = self.model.net.embed_texts(&texts, true, 32)?;
        let dim = self.articles.dims2()?.1;
        let q = Tensor::from_vec(
            rows.into_iter().flatten().collect::<Vec<f32>>(),
            (texts.len(), dim),
            self.articles.device(),
        )?;
        let scores = q.matmul(&self.articles.t()?)?.to_vec2::<f32>()?;
        let (cfg, top_k) = (self.cfg, self.cfg.eval.top_k);
        let run = run_from_corpus_scores(&target, &cfg.name, &scores, top_k);
        let config = serde_json::json!({"model": "qabisar", "train_config": cfg, "top_k": top_k});
        Ok(crate::rank::Ranked {
            run,
            details: crate::rank::neural::NeuralDetails::new(self.model_dir, config, target.docs.len())?,
            timings: [("rank_s".to_owned(), t0.elapsed().as_secs_f64())].into(),
        })
    }
}
