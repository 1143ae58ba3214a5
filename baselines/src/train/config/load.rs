//! A `train` request's experiment read and validated whole, in one place: the file, the request's
//! overrides (`--base`, `--lr`, `--epochs`, `--set`, `--sweep`), every value's range, then what needs
//! the disk — the base model's `config.json` (its positions) and the dataset's splits — before any
//! weights are loaded. The command line only orchestrates (`src/train.rs`).

use std::path::{Path, PathBuf};

use super::{LR_RANGE, MAX_EPOCHS, TrainConfig, file_error, lr_ok};
use crate::error::Result;

/// What a request changes in its experiment file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Replaces the base model folder (`--base`).
    pub base: Option<PathBuf>,
    /// Replaces the learning rate (`--lr`).
    pub lr: Option<f64>,
    /// Replaces the number of epochs (`--epochs`).
    pub epochs: Option<usize>,
    /// `KEY=VALUE` overrides of the TOML (dotted keys), applied before it is read (`--set`).
    pub set: Vec<(String, String)>,
    /// The request trains the config's grid (`--sweep`): it must have one.
    pub sweep: bool,
}

impl TrainConfig {
    /// The experiment at `path` with `o` applied, every value in its documented range
    /// ([`TrainConfig::check`]); nothing is loaded. `--lr` and `--epochs` are checked first and named
    /// as flags (`dpr.toml: --lr -1: must be a finite number > 0`).
    pub fn load(path: &Path, o: &Overrides) -> Result<Self> {
        if let Some(lr) = o.lr
            && !lr_ok(lr)
        {
            return Err(file_error(path, None, format!("--lr {lr}: must be {LR_RANGE}")));
        }
        if let Some(e) = o.epochs
            && !(1..=MAX_EPOCHS).contains(&e)
        {
            return Err(file_error(
                path,
                None,
                format!("--epochs {e}: must be an integer from 1 to {MAX_EPOCHS}"),
            ));
        }
        let mut cfg = Self::from_file_with(path, &o.set)?;
        if let Some(b) = &o.base {
            cfg.base = b.clone();
        }
        if let Some(lr) = o.lr {
            cfg.optim.lr = lr;
        }
        if let Some(e) = o.epochs {
            cfg.schedule.epochs = e;
        }
        cfg.check().map_err(|e| file_error(path, None, e.to_string()))?;
        if o.sweep && cfg.lr_sweep.is_empty() && cfg.sweep.is_empty() {
            return Err(file_error(
                path,
                None,
                "--sweep needs lr_sweep or a [sweep] grid in the config".into(),
            ));
        }
        Ok(cfg)
    }

    /// [`Self::load`], then what the experiment reads from disk, in order, before any weights: the
    /// base model's `config.json` ([`Self::check_base`]) and the splits of the dataset built under
    /// `data` that it trains, validates and (`run`) ranks ([`Self::check_splits`]).
    pub fn load_checked(path: &Path, o: &Overrides, data: &Path, run: &[String]) -> Result<Self> {
        let cfg = Self::load(path, o)?;
        cfg.check_base(path)?;
        cfg.check_splits(data, run, path)?;
        Ok(cfg)
    }

    /// The base model folder has a `config.json`, and the configured lengths fit the positions it
    /// declares (`max_position_embeddings`), read before the weights. `path` names the experiment.
    pub fn check_base(&self, path: &Path) -> Result<()> {
        let bert_config = self.base.join("config.json");
        if !bert_config.is_file() {
            return Err(file_error(
                path,
                None,
                format!(
                    "base model folder {} has no config.json (run scripts/fetch-models for models/minilm)",
                    self.base.display()
                ),
            ));
        }
        let bert = crate::encoder::BertConfig::from_file(&bert_config)?;
        self.check_positions(bert.max_tokens())
            .map_err(|e| file_error(path, None, format!("{e} ({})", bert_config.display())))
    }

    /// The dataset the experiment trains on is built under the data directory `data` and has the
    /// splits it reads: the training and validation splits and the splits `run` ranks afterwards. An
    /// unknown split is named with the dataset's splits. `path` names the experiment.
    pub fn check_splits(&self, data: &Path, run: &[String], path: &Path) -> Result<()> {
        let name = &self.data.dataset;
        let dir = lexbench_core::dataset::DatasetDir::in_data(data, name)?;
        if !dir.0.join("manifest.json").is_file() {
            return Err(file_error(
                path,
                None,
                format!(
                    "data.dataset = {name:?}: no dataset {name} is built in {} (lexbench build)",
                    dir.0.display()
                ),
            ));
        }
        let known = dir.split_names()?;
        let mut wanted = vec![("data.train_split =", &self.data.train_split)];
        if !self.data.val_split.is_empty() {
            wanted.push(("data.val_split =", &self.data.val_split));
        }
        wanted.extend(run.iter().map(|s| ("--run", s)));
        for (what, split) in wanted {
            lexbench_core::check_name("split name", split)
                .map_err(|e| file_error(path, None, format!("{what} {split:?}: {e}")))?;
            if !known.contains(split) {
                return Err(file_error(
                    path,
                    None,
                    format!(
                        "{what} {split:?}: dataset {name} has no split {split:?} (its splits: {})",
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}
