//! The `[gnn]` section of a training configuration: DR+GNN's second stage
//! ([`crate::train::dr_gnn`]), and the GAT settings QABISAR's section shares.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::graph::GatConfig;

/// The `[gnn]` section of a training config: DR+GNN's second stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnnConfig {
    /// Epochs over the training examples (default 5).
    #[serde(default = "default_epochs")]
    pub epochs: usize,
    /// Peak learning rate of the GAT (default 1e-3; linear warm-up over 10 %, then decay).
    #[serde(default = "default_lr")]
    pub lr: f64,
    /// Examples per batch (default 16).
    #[serde(default = "default_batch")]
    pub batch_size: usize,
    /// Attention heads (default 4; must divide the encoder's width).
    #[serde(default = "default_heads")]
    pub heads: usize,
    /// GAT layers (default 2).
    #[serde(default = "default_layers")]
    pub num_layers: usize,
    /// Width of the edge-type embeddings (default 16).
    #[serde(default = "default_edge_dim")]
    pub edge_dim: usize,
    /// Attention dropout while training (default 0.1).
    #[serde(default = "default_dropout")]
    pub attention_dropout: f32,
    /// Mix the GAT's output with the input embedding by a learned gate (default true).
    #[serde(default = "default_true")]
    pub residual_mix: bool,
    /// Cosine scale of the scores (default 20); with `biencoder.cosine = false` the stage scores by
    /// dot product over `biencoder.temperature` instead, as the encoder was trained.
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// Also link each article to the next and previous article of its code (default false: the
    /// graph holds the legislative hierarchy only, as the papers' graph does; see
    /// [`crate::train::dr_gnn::legal_graph_edges`]). Left out of the serialised config when false, so the identity of
    /// stages trained before the option is unchanged.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sequence_edges: bool,
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

fn default_epochs() -> usize {
    5
}
pub(crate) fn default_lr() -> f64 {
    1e-3
}
fn default_batch() -> usize {
    16
}
pub(crate) fn default_heads() -> usize {
    4
}
pub(crate) fn default_layers() -> usize {
    2
}
pub(crate) fn default_edge_dim() -> usize {
    16
}
pub(crate) fn default_dropout() -> f32 {
    0.1
}
fn default_true() -> bool {
    true
}
fn default_scale() -> f64 {
    20.0
}

impl Default for GnnConfig {
    fn default() -> Self {
        Self {
            epochs: default_epochs(),
            lr: default_lr(),
            batch_size: default_batch(),
            heads: default_heads(),
            num_layers: default_layers(),
            edge_dim: default_edge_dim(),
            attention_dropout: default_dropout(),
            residual_mix: true,
            scale: default_scale(),
            sequence_edges: false,
        }
    }
}

impl GnnConfig {
    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        if self.epochs == 0 || self.batch_size == 0 || self.heads == 0 || self.num_layers == 0 {
            return Err(Error::Param(
                "gnn: epochs, batch_size, heads and num_layers must be at least 1".into(),
            ));
        }
        if !(self.lr.is_finite() && self.lr > 0.0 && self.scale.is_finite() && self.scale > 0.0) {
            return Err(Error::Param("gnn: lr and scale must be positive".into()));
        }
        if !(0.0..1.0).contains(&self.attention_dropout) {
            return Err(Error::Param("gnn: attention_dropout must be in [0, 1)".into()));
        }
        Ok(())
    }

    /// The GAT's configuration for node vectors of width `dim`.
    pub fn gat(&self, dim: usize) -> Result<GatConfig> {
        gat_config(
            "gnn",
            dim,
            self.heads,
            self.num_layers,
            self.edge_dim,
            self.attention_dropout,
        )
    }
}

/// A GAT over node vectors of width `dim`, `heads` heads of `dim / heads` (concatenated back to
/// `dim`); `who` names the config section in the error when `heads` does not divide `dim`.
pub(crate) fn gat_config(
    who: &str,
    dim: usize,
    heads: usize,
    num_layers: usize,
    edge_dim: usize,
    attention_dropout: f32,
) -> Result<GatConfig> {
    if heads == 0 || !dim.is_multiple_of(heads) {
        return Err(Error::Param(format!(
            "{who}: {heads} heads do not divide the encoder width {dim}"
        )));
    }
    Ok(GatConfig {
        in_dim: dim,
        heads,
        head_dim: dim / heads,
        num_layers,
        edge_dim,
        attention_dropout,
        ..GatConfig::default()
    })
}
