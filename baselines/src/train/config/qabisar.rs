//! The `[qabisar]` section of a training configuration: QABISAR's stage 2
//! ([`crate::train::qabisar`]).

use serde::{Deserialize, Serialize};

use super::gnn::{default_dropout, default_heads, default_layers, default_lr, gat_config, is_false};
use crate::error::{Error, Result};
use crate::graph::GatConfig;

/// The `[qabisar]` section of a training config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QabisarConfig {
    /// Stage 2's epochs; absent: `schedule.epochs` (stage 1's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<usize>,
    /// Stage 2's training examples per batch; absent: `schedule.batch_size` (stage 1's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// Learning rate of the GAT (default 1e-3); the query encoder uses `optim.lr`.
    #[serde(default = "default_lr")]
    pub gnn_lr: f64,
    /// Attention heads (default 4; must divide the encoder's width).
    #[serde(default = "default_heads")]
    pub heads: usize,
    /// GAT layers (default 2).
    #[serde(default = "default_layers")]
    pub num_layers: usize,
    /// Width of the edge-type embeddings; absent: the node features' width (the paper's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge_dim: Option<usize>,
    /// Attention dropout while training (default 0.1).
    #[serde(default = "default_dropout")]
    pub attention_dropout: f32,
    /// Hops of the sampled subgraph (default 2).
    #[serde(default = "default_hops")]
    pub hops: usize,
    /// Edges drawn per node per hop (default 10).
    #[serde(default = "default_fanout")]
    pub fanout: usize,
    /// Weight of the graph contrastive loss (default 0.7).
    #[serde(default = "default_contrastive")]
    pub contrastive_weight: f64,
    /// Weight of the distillation into the query encoder (default 0.3).
    #[serde(default = "default_kd")]
    pub kd_weight: f64,
    /// Distillation temperature (default 1).
    #[serde(default = "default_temperature")]
    pub temperature: f64,
    /// Also link each article to the next and previous article of its code (default false: the
    /// hierarchy only, as the paper's graph; see [`crate::train::dr_gnn::legal_graph_edges`]). Left out of
    /// the serialised config when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sequence_edges: bool,
    /// Keep a training question's edges to its positive articles in the subgraph of a batch that
    /// trains on it (default false). With false, each batch question's `query→article` and
    /// `article→query` edges to its own positives are left out of the batch's sampled subgraph, so
    /// the teacher's graph scores (the distillation target and the contrastive loss on graph
    /// vectors) are computed without the answer wired in; the question's other edges and every other
    /// question's stay. Validation and test questions never have such edges (they are ranked by the
    /// query encoder alone). The paper is silent; `true` is the earlier behaviour, kept as a
    /// sensitivity setting. Always written in the serialised config (the stage's identity).
    #[serde(default)]
    pub keep_batch_positive_edges: bool,
}

fn default_hops() -> usize {
    2
}
fn default_fanout() -> usize {
    10
}
fn default_contrastive() -> f64 {
    0.7
}
fn default_kd() -> f64 {
    0.3
}
fn default_temperature() -> f64 {
    1.0
}

impl Default for QabisarConfig {
    fn default() -> Self {
        Self {
            epochs: None,
            batch_size: None,
            gnn_lr: default_lr(),
            heads: default_heads(),
            num_layers: default_layers(),
            edge_dim: None,
            attention_dropout: default_dropout(),
            hops: default_hops(),
            fanout: default_fanout(),
            contrastive_weight: default_contrastive(),
            kd_weight: default_kd(),
            temperature: default_temperature(),
            sequence_edges: false,
            keep_batch_positive_edges: false,
        }
    }
}

impl QabisarConfig {
    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        let zero = |x: Option<usize>| x == Some(0);
        if self.heads == 0
            || self.num_layers == 0
            || self.fanout == 0
            || zero(self.edge_dim)
            || zero(self.epochs)
            || zero(self.batch_size)
        {
            return Err(Error::Param(
                "qabisar: heads, num_layers, fanout, edge_dim, epochs and batch_size must be at least 1"
                    .into(),
            ));
        }
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        if !(ok(self.gnn_lr) && self.gnn_lr > 0.0 && ok(self.temperature) && self.temperature > 0.0) {
            return Err(Error::Param(
                "qabisar: gnn_lr and temperature must be positive".into(),
            ));
        }
        if !(ok(self.contrastive_weight) && ok(self.kd_weight)) {
            return Err(Error::Param(
                "qabisar: loss weights must be finite and ≥ 0".into(),
            ));
        }
        if !(0.0..1.0).contains(&self.attention_dropout) {
            return Err(Error::Param(
                "qabisar: attention_dropout must be in [0, 1)".into(),
            ));
        }
        Ok(())
    }

    /// The GAT over node features of width `dim` and `edge_types` edge types.
    pub(crate) fn gat(&self, dim: usize, edge_types: usize) -> Result<GatConfig> {
        let mut gat = gat_config(
            "qabisar",
            dim,
            self.heads,
            self.num_layers,
            self.edge_dim.unwrap_or(dim),
            self.attention_dropout,
        )?;
        gat.num_edge_types = edge_types;
        Ok(gat)
    }
}
