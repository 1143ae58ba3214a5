//! Fine-tuning: DPR, ANCE, ColBERT and cross-encoders, fully or with LoRA, bottleneck adapters or
//! prefix tuning, on any built dataset.
//!
//! - [`config::TrainConfig`]: one TOML per experiment (`baselines/configs/`), read and validated
//!   whole in [`config`], with its per-model sections ([`config::GnnConfig`],
//!   [`config::QabisarConfig`]) and its grid ([`config::sweep`]); the configuration imports none of
//!   the training modules, which import it.
//! - [`params::ParamStore`]: trainable variables, seeded by name or copied from a checkpoint.
//! - [`optim`]: AdamW with a saveable state, linear warm-up/decay, gradient clipping.
//! - [`data::SplitData`], [`negatives`]: examples with BM25 / random / model-mined negatives and
//!   duplicate-free batches.
//!   [`negatives::curriculum`]: CuSINeS curriculum negatives in training (the views of
//!   [`crate::curriculum`] computed for a dataset, refreshed per epoch).
//! - [`losses`]: the contrastive NLL and score distillation (QABISAR).
//! - [`dr_gnn`]: DR+GNN, a GAT over the legislative graph enriching the trained encoder's article
//!   embeddings.
//! - [`qabisar`]: QABISAR's stage 2 (stage 1 is [`finetune::train`]): a GAT over training queries,
//!   articles and the legislative hierarchy, over the stage-1 encoder's features, distilled into the
//!   query encoder.
//! - [`model::Trainable`]: the networks and their losses; ranking for validation and ANCE.
//! - [`trainer`]: the one training loop (checkpoints, exact resumption, the step, model selection)
//!   and the [`trainer::Objective`] each kind of training plugs into it; [`seeds`]: its named random
//!   streams; [`finetune::train`]: fine-tuning an encoder; [`export`]: HF folders and PEFT-only folders.
//! - [`stage`]: the stage a configuration trains after its encoder (DR+GNN's GNN, QABISAR's stage
//!   2), chosen by the configuration.
//! - [`share`]: the trainable-parameter share of a configuration, computed from `config.json` alone.
//! - [`config::sweep`]: hyperparameter grids (`[sweep]`, `lr_sweep`) expanded into named, validated
//!   points.

pub mod config;
pub mod data;
pub mod dr_gnn;
pub mod export;
pub mod finetune;
pub mod losses;
pub mod model;
pub mod negatives;
pub mod optim;
pub mod params;
pub mod qabisar;
pub mod seeds;
pub mod share;
mod spans;
pub mod stage;
pub mod trainer;

pub use config::TrainConfig;
pub use finetune::{Summary, train};
pub use trainer::TrainOptions;
