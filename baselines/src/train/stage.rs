//! What a configuration trains after its encoder, chosen by the configuration: DR+GNN's GNN over the
//! legislative graph (`[gnn]`), QABISAR's stage 2 over the query–article–structure graph
//! (`[qabisar]`), or nothing (the encoder's folder is ranked as any model folder is). Each stage is
//! an [`super::trainer::Objective`] of the one training loop; this is the one place that reads which.

use std::path::Path;

use candle_core::Device;

use super::config::TrainConfig;
use super::dr_gnn::{GnnSummary, train_dr_gnn};
use super::qabisar::{QabisarSummary, train_qabisar};
use super::trainer::TrainOptions;
use crate::error::Result;
use crate::rank::neural::NeuralOutput;

/// A second stage's summary.
#[derive(Debug, Clone)]
pub enum SecondStage {
    /// DR+GNN's GNN stage.
    Gnn(GnnSummary),
    /// QABISAR's stage 2 (GAT over the query–article–structure graph, distilled into the query
    /// encoder).
    Qabisar(QabisarSummary),
}

/// The name of the stage `cfg` trains after its encoder (for messages), or `None`.
pub fn second_stage_name(cfg: &TrainConfig) -> Option<&'static str> {
    if cfg.qabisar.is_some() {
        Some("QABISAR stage 2")
    } else if cfg.gnn.is_some() {
        Some("GNN stage")
    } else {
        None
    }
}

/// Trains the stage `cfg` configures after its encoder, over the encoder trained in `out` (its
/// `model/` folder), and ranks `splits` with it (the stage writes the runs); `Ok(None)` when the
/// configuration has no second stage. The configuration's validation allows one at most.
pub fn train_second_stage(
    cfg: &TrainConfig,
    data: &Path,
    out: &Path,
    device: &Device,
    splits: &[String],
    opts: &TrainOptions,
) -> Result<Option<(SecondStage, Vec<NeuralOutput>)>> {
    if cfg.qabisar.is_some() {
        let (q, outs) = train_qabisar(cfg, data, out, device, splits, opts)?;
        return Ok(Some((SecondStage::Qabisar(q), outs)));
    }
    if cfg.gnn.is_some() {
        let (g, outs) = train_dr_gnn(cfg, data, out, device, splits, opts)?;
        return Ok(Some((SecondStage::Gnn(g), outs)));
    }
    Ok(None)
}
