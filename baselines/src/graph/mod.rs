//! Graph neural components for statutory article retrieval (DR+GNN / CuSINeS, QABISAR on BSARD).
//!
//! - [`conv`]: the GATv2 convolution ([`GatV2Conv`], PyTorch Geometric's `GATv2Conv` with
//!   `edge_dim`, `share_weights=False`) and [`GatLayer`] (residual + activation).
//! - [`Gat`]: a stack of [`GatLayer`]s over a typed graph; every [`EdgeType`] has a learned
//!   embedding that is the edge attribute of its edges.
//! - [`sample`]: L-hop neighbourhood sampling with a fanout limit ([`sample::sample_subgraph`]).
//!
//! Graphs are plain edge lists of `u32` node indices (`src[k] → dst[k]`, messages flow from source
//! to destination); [`EdgeList::from_legal_graph`] turns the BSARD legislative graph's parent → child
//! and article → next-article pairs into typed edges in both directions.

pub mod conv;
pub mod sample;

pub use conv::{Activation, AttentionWeights, GatLayer, GatV2Config, GatV2Conv, segment_softmax};
pub use sample::{Adjacency, Direction, SampleOptions, Subgraph, sample_subgraph};

use candle_core::Tensor;
use candle_nn::{Init, VarBuilder};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The kinds of edges of a retrieval graph; each has its own learned embedding in a [`Gat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeType {
    /// Query → article (a query node linked to a candidate article).
    QueryArticle,
    /// Article → query.
    ArticleQuery,
    /// Parent → child in the legislative hierarchy (code → book → … → article).
    ParentChild,
    /// Child → parent.
    ChildParent,
    /// Article → the next article of the same code.
    NextArticle,
    /// Article → the previous article.
    PreviousArticle,
    /// A node to itself.
    SelfLoop,
}

impl EdgeType {
    /// Every type, in index order.
    pub const ALL: [Self; 7] = [
        Self::QueryArticle,
        Self::ArticleQuery,
        Self::ParentChild,
        Self::ChildParent,
        Self::NextArticle,
        Self::PreviousArticle,
        Self::SelfLoop,
    ];
    /// Number of types (rows of the default edge-type embedding).
    pub const COUNT: usize = Self::ALL.len();

    /// The row of the edge-type embedding.
    pub fn index(self) -> u32 {
        self as u32
    }

    /// The type's generic name (`parent→child`, `self`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::QueryArticle => "query→article",
            Self::ArticleQuery => "article→query",
            Self::ParentChild => "parent→child",
            Self::ChildParent => "child→parent",
            Self::NextArticle => "next",
            Self::PreviousArticle => "previous",
            Self::SelfLoop => "self",
        }
    }
}

/// A typed, directed edge list: `src[k] → dst[k]` of type `types[k]` (an [`EdgeType::index`] or any
/// id below a [`Gat`]'s `num_edge_types`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EdgeList {
    /// Sources.
    pub src: Vec<u32>,
    /// Destinations.
    pub dst: Vec<u32>,
    /// Edge-type ids.
    pub types: Vec<u32>,
}

fn node_id(v: usize) -> Result<u32> {
    u32::try_from(v)
        .map_err(|_| Error::data("legislative graph", format!("node index {v} does not fit in u32")))
}

impl EdgeList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `src → dst` of type `ty`.
    pub fn push(&mut self, src: u32, dst: u32, ty: EdgeType) {
        self.src.push(src);
        self.dst.push(dst);
        self.types.push(ty.index());
    }

    /// Number of edges.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Whether there is no edge.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Checks that the three lists have the same length and every node is below `num_nodes`.
    pub fn validate(&self, num_nodes: usize) -> Result<()> {
        if self.types.len() != self.src.len() {
            return Err(Error::internal(format!(
                "edge list: {} edges but {} types",
                self.src.len(),
                self.types.len()
            )));
        }
        conv::check_edges(num_nodes, &self.src, &self.dst)
    }

    /// The legislative graph's edges in both directions: for every `(parent, child)` of `hierarchy`
    /// a [`EdgeType::ParentChild`] and a [`EdgeType::ChildParent`] edge, for every `(article, next)` of
    /// `sequence` a [`EdgeType::NextArticle`] and a [`EdgeType::PreviousArticle`] edge (node indices as
    /// in `lexbench_core::graph::LegalGraph`).
    pub fn from_legal_graph(hierarchy: &[(usize, usize)], sequence: &[(usize, usize)]) -> Result<Self> {
        let mut edges = Self::new();
        for &(parent, child) in hierarchy {
            let (p, c) = (node_id(parent)?, node_id(child)?);
            edges.push(p, c, EdgeType::ParentChild);
            edges.push(c, p, EdgeType::ChildParent);
        }
        for &(article, next) in sequence {
            let (a, b) = (node_id(article)?, node_id(next)?);
            edges.push(a, b, EdgeType::NextArticle);
            edges.push(b, a, EdgeType::PreviousArticle);
        }
        Ok(edges)
    }

    /// The same edges with their types relabelled by the kinds of the nodes they join (QABISAR's
    /// typed edges): `section→article`, `article→section`, `query→article`, `article→article next`,
    /// … A name is `{kind of src}→{kind of dst}`, followed by ` next` or ` previous` for the
    /// sequential types (both join two articles). Ids: the [`EdgeType`]s keep theirs (the GAT adds
    /// its self-loops as [`EdgeType::SelfLoop`]; `query→article` and `article→query` are already
    /// named by node kinds); every other name gets a new id from [`EdgeType::COUNT`] on, in sorted
    /// order, so the ids depend on the graph's kinds and not on the edges' order.
    /// Self-loops given in the list keep [`EdgeType::SelfLoop`].
    ///
    /// `kinds[v]` is node `v`'s kind. Returns the relabelled list and every type's name by id (the
    /// first [`EdgeType::COUNT`] are the generic names); a GAT over it needs `num_edge_types` =
    /// `names.len()`.
    pub fn typed_by_node_kinds<S: AsRef<str>>(&self, kinds: &[S]) -> Result<(Self, Vec<String>)> {
        self.validate(kinds.len())?;
        let self_loop = EdgeType::SelfLoop.index();
        let name = |k: usize| -> Option<String> {
            let t = self.types[k];
            if t == self_loop {
                return None;
            }
            let suffix = if t == EdgeType::NextArticle.index() {
                " next"
            } else if t == EdgeType::PreviousArticle.index() {
                " previous"
            } else {
                ""
            };
            let (s, d) = (self.src[k] as usize, self.dst[k] as usize);
            Some(format!("{}→{}{suffix}", kinds[s].as_ref(), kinds[d].as_ref()))
        };
        let mut all: Vec<String> = EdgeType::ALL.iter().map(|t| t.name().to_owned()).collect();
        // A name that is already a generic one (`query→article`) keeps the generic id.
        let names: std::collections::BTreeSet<String> = (0..self.len())
            .filter_map(name)
            .filter(|n| !all.contains(n))
            .collect();
        let mut ids: std::collections::HashMap<String, u32> = all
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
        for n in &names {
            ids.insert(n.clone(), ids.len() as u32);
        }
        let mut out = Self::new();
        for k in 0..self.len() {
            out.src.push(self.src[k]);
            out.dst.push(self.dst[k]);
            out.types.push(match name(k) {
                Some(n) => ids[&n],
                None => self_loop,
            });
        }
        all.extend(names);
        Ok((out, all))
    }
}

/// Configuration of a [`Gat`] stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatConfig {
    /// Width of the input node vectors (default 768, a BERT-base encoder's).
    #[serde(default = "default_in_dim")]
    pub in_dim: usize,
    /// Attention heads per layer (default 4).
    #[serde(default = "default_heads")]
    pub heads: usize,
    /// Width of one head; heads are concatenated, so layers output `heads · head_dim` (default 192,
    /// so that 4 heads give back 768 and GNN outputs live in the encoder's space).
    #[serde(default = "default_head_dim")]
    pub head_dim: usize,
    /// Number of layers (default 2).
    #[serde(default = "default_layers")]
    pub num_layers: usize,
    /// Width of the edge-type embeddings (default 32).
    #[serde(default = "default_edge_dim")]
    pub edge_dim: usize,
    /// Rows of the edge-type embedding (default [`EdgeType::COUNT`]).
    #[serde(default = "default_edge_types")]
    pub num_edge_types: usize,
    /// Dropout on attention weights, training only (default 0.1).
    #[serde(default = "default_dropout")]
    pub attention_dropout: f32,
    /// LeakyReLU slope of the attention (default 0.2).
    #[serde(default = "default_slope")]
    pub negative_slope: f64,
    /// Replace the input's self-loops by one [`EdgeType::SelfLoop`] edge per node (default true), so
    /// every node attends to itself.
    #[serde(default = "default_true")]
    pub self_loops: bool,
    /// Residual connections (default true).
    #[serde(default = "default_true")]
    pub residual: bool,
    /// Activation after every layer but the last (default ELU).
    #[serde(default = "default_activation")]
    pub activation: Activation,
}

fn default_in_dim() -> usize {
    768
}
fn default_heads() -> usize {
    4
}
fn default_head_dim() -> usize {
    192
}
fn default_layers() -> usize {
    2
}
fn default_edge_dim() -> usize {
    32
}
fn default_edge_types() -> usize {
    EdgeType::COUNT
}
fn default_dropout() -> f32 {
    0.1
}
fn default_slope() -> f64 {
    0.2
}
fn default_true() -> bool {
    true
}
fn default_activation() -> Activation {
    Activation::Elu
}

impl Default for GatConfig {
    fn default() -> Self {
        Self {
            in_dim: default_in_dim(),
            heads: default_heads(),
            head_dim: default_head_dim(),
            num_layers: default_layers(),
            edge_dim: default_edge_dim(),
            num_edge_types: default_edge_types(),
            attention_dropout: default_dropout(),
            negative_slope: default_slope(),
            self_loops: default_true(),
            residual: default_true(),
            activation: default_activation(),
        }
    }
}

impl GatConfig {
    /// Checks sizes and rates.
    pub fn validate(&self) -> Result<()> {
        if self.num_layers == 0 {
            return Err(Error::Param("gat num_layers must be at least 1, got 0".into()));
        }
        if self.num_edge_types == 0 {
            return Err(Error::Param(
                "gat num_edge_types must be at least 1, got 0".into(),
            ));
        }
        if self.self_loops && self.num_edge_types <= EdgeType::SelfLoop.index() as usize {
            return Err(Error::Param(format!(
                "gat self_loops needs the self-loop edge type (id {}), so num_edge_types must be above it, got {}",
                EdgeType::SelfLoop.index(),
                self.num_edge_types
            )));
        }
        self.layer(0).validate()
    }

    /// Width of the stack's output, `heads · head_dim`.
    pub fn output_dim(&self) -> usize {
        self.heads * self.head_dim
    }

    fn layer(&self, i: usize) -> GatV2Config {
        GatV2Config {
            in_dim: if i == 0 { self.in_dim } else { self.output_dim() },
            out_dim: self.head_dim,
            heads: self.heads,
            edge_dim: Some(self.edge_dim),
            concat: true,
            negative_slope: self.negative_slope,
            dropout: self.attention_dropout,
            add_self_loops: false,
        }
    }
}

/// A stack of GATv2 layers over a typed graph. Parameters: `edge_type_embedding.weight`
/// `(num_edge_types, edge_dim)` and `layers.{i}.conv.{lin_l,lin_r,lin_edge,att,bias}`,
/// `layers.{i}.res.weight` (see [`GatLayer`]).
#[derive(Debug, Clone)]
pub struct Gat {
    cfg: GatConfig,
    edge_type_embedding: Tensor,
    /// The layers, input first.
    pub layers: Vec<GatLayer>,
}

impl Gat {
    /// Loads or creates the parameters under `vb`.
    pub fn load(cfg: &GatConfig, vb: VarBuilder<'_>) -> Result<Self> {
        cfg.validate()?;
        let edge_type_embedding = vb.pp("edge_type_embedding").get_with_hints(
            (cfg.num_edge_types, cfg.edge_dim),
            "weight",
            Init::Randn {
                mean: 0.0,
                stdev: 1.0,
            },
        )?;
        let layers = (0..cfg.num_layers)
            .map(|i| {
                GatLayer::load(
                    &cfg.layer(i),
                    cfg.residual,
                    cfg.activation,
                    vb.pp(format!("layers.{i}")),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            cfg: cfg.clone(),
            edge_type_embedding,
            layers,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GatConfig {
        &self.cfg
    }

    /// Node vectors `x` `(n, in_dim)` → `(n, heads · head_dim)`, over the edges
    /// `edge_index.0[k] → edge_index.1[k]` of type `edge_types[k]`.
    pub fn forward_t(
        &self,
        x: &Tensor,
        edge_index: (&[u32], &[u32]),
        edge_types: &[u32],
        train: bool,
    ) -> Result<Tensor> {
        let n = x
            .dims2()
            .map_err(|_| Error::internal(format!("GAT input must be (nodes, features), got {:?}", x.dims())))?
            .0;
        let (src, dst) = edge_index;
        if edge_types.len() != src.len() {
            return Err(Error::internal(format!(
                "GAT: {} edges but {} edge types",
                src.len(),
                edge_types.len()
            )));
        }
        conv::check_edges(n, src, dst)?;
        if let Some(&bad) = edge_types
            .iter()
            .find(|&&t| t as usize >= self.cfg.num_edge_types)
        {
            return Err(Error::data(
                "graph edges",
                format!(
                    "edge type {bad} is out of range: the GAT knows {} types (num_edge_types)",
                    self.cfg.num_edge_types
                ),
            ));
        }
        let (src, dst, types) = if self.cfg.self_loops {
            let mut edges = EdgeList::new();
            for k in (0..src.len()).filter(|&k| src[k] != dst[k]) {
                edges.src.push(src[k]);
                edges.dst.push(dst[k]);
                edges.types.push(edge_types[k]);
            }
            for v in 0..n as u32 {
                edges.push(v, v, EdgeType::SelfLoop);
            }
            (edges.src, edges.dst, edges.types)
        } else {
            (src.to_vec(), dst.to_vec(), edge_types.to_vec())
        };
        let edge_attr = if types.is_empty() {
            None
        } else {
            let ids = Tensor::from_slice(&types, types.len(), x.device())?;
            Some(self.edge_type_embedding.index_select(&ids, 0)?)
        };
        let mut h = x.clone();
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward_t(&h, &src, &dst, edge_attr.as_ref(), i != last, train)?;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked:
    //! - the legislative graph's pairs become typed edges in both directions;
    //! - a [`Gat`] stack maps `(n, in)` to `(n, heads · head_dim)`, creates PyG-named parameters per
    //!   layer and the edge-type embedding, and every node gets a finite vector (self-loops);
    //! - gradients reach the edge-type embedding rows of the types used;
    //! - an edge naming an unknown node or edge type is `Error::Data`, edge lists of unequal
    //!   lengths are `Error::Internal`, a bad config value is `Error::Param`; the config's serde
    //!   defaults and `deny_unknown_fields`.
    use candle_core::{DType, Device, Tensor};
    use candle_nn::{VarBuilder, VarMap};

    use super::*;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn small() -> GatConfig {
        GatConfig {
            in_dim: 5,
            heads: 2,
            head_dim: 3,
            edge_dim: 4,
            ..GatConfig::default()
        }
    }

    #[test]
    fn legal_graph_edges_in_both_directions() -> R {
        let e = EdgeList::from_legal_graph(&[(0, 1), (1, 2)], &[(2, 3)])?;
        assert_eq!(e.src, [0, 1, 1, 2, 2, 3]);
        assert_eq!(e.dst, [1, 0, 2, 1, 3, 2]);
        let t = |x: EdgeType| x.index();
        assert_eq!(
            e.types,
            [
                t(EdgeType::ParentChild),
                t(EdgeType::ChildParent),
                t(EdgeType::ParentChild),
                t(EdgeType::ChildParent),
                t(EdgeType::NextArticle),
                t(EdgeType::PreviousArticle)
            ]
        );
        e.validate(4)?;
        // Node 3 is named by an edge but the graph has 3 nodes (0..3): the data are inconsistent.
        let err = e.validate(3).unwrap_err();
        assert!(matches!(err, Error::Data { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "inconsistent data in graph edges: node 3 is out of range for 3 nodes"
        );
        let mut short = e.clone();
        short.types.pop();
        assert!(matches!(short.validate(4), Err(Error::Internal(_))));
        Ok(())
    }

    #[test]
    fn edge_types_named_by_the_node_kinds_they_join() -> R {
        // code 0 → book 1 → articles 2, 3 (2 → 3 in sequence); query 4 → article 2; a self-loop.
        let mut e = EdgeList::from_legal_graph(&[(0, 1), (1, 2), (1, 3)], &[(2, 3)])?;
        e.push(4, 2, EdgeType::QueryArticle);
        e.push(2, 4, EdgeType::ArticleQuery);
        e.push(3, 3, EdgeType::SelfLoop);
        let kinds = ["code", "book", "article", "article", "query"];
        let (typed, names) = e.typed_by_node_kinds(&kinds)?;
        assert_eq!(typed.src, e.src);
        assert_eq!(typed.dst, e.dst);
        let got: Vec<&str> = typed.types.iter().map(|&t| names[t as usize].as_str()).collect();
        assert_eq!(
            got,
            [
                "code→book",
                "book→code",
                "book→article",
                "article→book",
                "book→article",
                "article→book",
                "article→article next",
                "article→article previous",
                "query→article",
                "article→query",
                "self"
            ]
        );
        // The generic types keep their ids; the new names follow in sorted order.
        assert_eq!(typed.types[8], EdgeType::QueryArticle.index());
        assert_eq!(typed.types[10], EdgeType::SelfLoop.index());
        assert_eq!(
            &names[EdgeType::COUNT..],
            [
                "article→article next",
                "article→article previous",
                "article→book",
                "book→article",
                "book→code",
                "code→book"
            ]
        );
        // Ids do not depend on the edges' order.
        let mut rev = EdgeList::new();
        for k in (0..e.len()).rev() {
            rev.src.push(e.src[k]);
            rev.dst.push(e.dst[k]);
            rev.types.push(e.types[k]);
        }
        let (typed_rev, names_rev) = rev.typed_by_node_kinds(&kinds)?;
        assert_eq!(names_rev, names);
        let back: Vec<u32> = typed_rev.types.iter().rev().copied().collect();
        assert_eq!(back, typed.types);
        // A GAT over the typed list needs a row per name.
        let cfg = GatConfig {
            num_edge_types: names.len(),
            ..small()
        };
        let gat = Gat::load(
            &cfg,
            VarBuilder::from_varmap(&VarMap::new(), DType::F32, &Device::Cpu),
        )?;
        let x = Tensor::randn(0f32, 1.0, (5, 5), &Device::Cpu)?;
        assert_eq!(
            gat.forward_t(&x, (&typed.src, &typed.dst), &typed.types, false)?
                .dims(),
            &[5, 6]
        );
        // A node without a kind is an inconsistency, not a panic.
        assert!(matches!(
            e.typed_by_node_kinds(&kinds[..4]),
            Err(Error::Data { .. })
        ));
        Ok(())
    }

    #[test]
    fn gat_stack_shapes_parameters_gradients() -> R {
        let vars = VarMap::new();
        let gat = Gat::load(&small(), VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu))?;
        {
            let data = vars.data().lock().expect("vars");
            for name in [
                "edge_type_embedding.weight",
                "layers.0.conv.lin_l.weight",
                "layers.0.conv.lin_edge.weight",
                "layers.0.conv.att",
                "layers.0.res.weight",
                "layers.1.conv.bias",
            ] {
                assert!(data.contains_key(name), "missing {name}");
            }
            // Layer 0 maps 5 → 6 (projection), layer 1 maps 6 → 6: identity residual.
            assert!(!data.contains_key("layers.1.res.weight"));
        }
        let mut edges = EdgeList::from_legal_graph(&[(0, 1), (0, 2)], &[(1, 2)])?;
        edges.push(3, 1, EdgeType::QueryArticle);
        let x = Tensor::randn(0f32, 1.0, (5, 5), &Device::Cpu)?;
        let y = gat.forward_t(&x, (&edges.src, &edges.dst), &edges.types, false)?;
        assert_eq!(y.dims(), &[5, 6]);
        assert!(y.to_vec2::<f32>()?.iter().flatten().all(|v| v.is_finite()));
        let grads = y.sqr()?.sum_all()?.backward()?;
        let emb = vars.data().lock().expect("vars")["edge_type_embedding.weight"]
            .as_tensor()
            .clone();
        let g = grads
            .get(&emb)
            .ok_or("no gradient for the edge-type embedding")?
            .to_vec2::<f32>()?;
        let used = |t: EdgeType| g[t.index() as usize].iter().any(|v| *v != 0.0);
        assert!(used(EdgeType::ParentChild) && used(EdgeType::QueryArticle) && used(EdgeType::SelfLoop));
        assert!(!used(EdgeType::ArticleQuery), "an unused type gets no gradient");

        assert!(matches!(
            gat.forward_t(&x, (&[0], &[1]), &[99], false),
            Err(Error::Data { .. })
        ));
        assert!(matches!(
            gat.forward_t(&x, (&[0], &[1]), &[], false),
            Err(Error::Internal(_))
        ));
        assert!(matches!(
            gat.forward_t(&x, (&[0], &[7]), &[0], false),
            Err(Error::Data { .. })
        ));
        Ok(())
    }

    #[test]
    fn config_serde_and_validation() -> R {
        let cfg: GatConfig = serde_json::from_str(r#"{"heads": 2}"#)?;
        assert_eq!(cfg.heads, 2);
        assert_eq!(cfg.head_dim, 192);
        assert_eq!(cfg.num_edge_types, EdgeType::COUNT);
        assert!(serde_json::from_str::<GatConfig>(r#"{"head": 2}"#).is_err());
        GatConfig::default().validate()?;
        let bad = [
            GatConfig {
                num_layers: 0,
                ..small()
            },
            GatConfig {
                num_edge_types: 3,
                ..small()
            },
            GatConfig {
                attention_dropout: 1.5,
                ..small()
            },
            GatConfig {
                head_dim: 0,
                ..small()
            },
        ];
        for cfg in bad {
            assert!(matches!(cfg.validate(), Err(Error::Param(_))), "{cfg:?}");
        }
        Ok(())
    }
}
