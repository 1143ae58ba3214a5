//! Fine-tuning as a TOML experiment describes (`baselines/configs/`): the trainer dispatch (encoder
//! trainer, DR+GNN, QABISAR, the hierarchical article encoder), the hyperparameter sweep (the
//! config's `[sweep]` grid and `lr_sweep`, expanded by `lexbench_baselines::train::config::sweep`) and
//! ranking splits with the selected model (`lexbench train`).
//!
//! The sweep and the dispatch stay here rather than in `lexbench_baselines::train`: ranking splits
//! after training goes through `lexbench run`'s code paths (dense, ColBERT, cross-encoder) with
//! `lexbench run`'s file layout, and the selection itself ([`select_point`]) is a pure function tested
//! here.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lexbench_baselines::Device;
use lexbench_baselines::rank::neural::NeuralOutput;
use lexbench_baselines::rank::{RunTarget, write_run};
use lexbench_baselines::train::config::sweep::{SweepPoint, axes, points};
use lexbench_baselines::train::config::{Overrides, TrainConfig};
use lexbench_baselines::train::stage::{SecondStage, second_stage_name, train_second_stage};
use lexbench_baselines::train::{Summary, TrainOptions, train};
use lexbench_core::datadir::DataDir;

/// What to train, and what to do afterwards.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainRequest {
    /// The experiment (TOML).
    pub config: PathBuf,
    /// Output folder; `None`: `DATA/models/<name>`.
    pub out: Option<PathBuf>,
    /// Replaces the config's base model folder.
    pub base: Option<PathBuf>,
    /// Replaces the config's learning rate.
    pub lr: Option<f64>,
    /// Replaces the config's number of epochs.
    pub epochs: Option<usize>,
    /// `KEY=VALUE` overrides of the config's TOML (dotted keys), applied before it is read.
    pub set: Vec<(String, String)>,
    /// Trains every point of the config's grid (`[sweep]`, `lr_sweep`) and keeps the best on
    /// validation.
    pub sweep: bool,
    /// Discards existing checkpoints instead of resuming from them.
    pub restart: bool,
    /// Splits to rank with the selected model afterwards.
    pub run: Vec<String>,
    /// No progress bar.
    pub quiet: bool,
    /// Also checkpoint within an epoch this often (`None`: at epochs' ends and before validating).
    pub checkpoint_every: Option<std::time::Duration>,
}

impl TrainRequest {
    /// What the request changes in its experiment file.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            base: self.base.clone(),
            lr: self.lr,
            epochs: self.epochs,
            set: self.set.clone(),
            sweep: self.sweep,
        }
    }
}

/// One training run: its folder and summary.
#[derive(Debug, Clone)]
pub struct Trained {
    /// The learning rate it used.
    pub lr: f64,
    /// Its folder (`model/` inside is the selected epoch).
    pub dir: PathBuf,
    /// Losses, validation per epoch, the selected epoch.
    pub summary: Summary,
    /// The grid point it trained (name, settings, configuration), when sweeping.
    pub point: Option<SweepPoint>,
}

/// What [`train_experiment`] did: an encoder trained (once, or once per point of a sweep), then the
/// second stage the configuration names, if any, then the splits ranked.
#[derive(Debug, Clone)]
pub struct TrainReport {
    /// Every training run, in the order of the sweep (one without a sweep).
    pub trained: Vec<Trained>,
    /// The point the sweep selected (index into `trained`), when sweeping.
    pub selected: Option<usize>,
    /// DR+GNN's GNN stage or QABISAR's stage 2, when configured
    /// (`lexbench_baselines::train::stage`).
    pub second_stage: Option<SecondStage>,
    /// Runs written.
    pub runs: Vec<PathBuf>,
}

/// The sweep's choice among the points' best validation scores, in the order of the sweep: the
/// highest score; a point without one (or with NaN) counts as the lowest; ties keep the smaller index
/// (the point enumerated first). `None` for an empty sweep.
pub fn select_point(scores: &[Option<f64>]) -> Option<usize> {
    scores
        .iter()
        .enumerate()
        .max_by(|a, b| {
            let score = |s: &Option<f64>| s.filter(|v| !v.is_nan()).unwrap_or(f64::MIN);
            score(a.1).total_cmp(&score(b.1)).then(b.0.cmp(&a.0))
        })
        .map(|(i, _)| i)
}

/// Trains every point of `cfg`'s grid (its `[sweep]` table and `lr_sweep`) under `root/<point
/// name>`, writes `root/sweep.json` (the axes, every point's settings, folder and validation score,
/// the selected point) and returns the runs and the index of the selected one. Every point is
/// expanded and validated before the first trains; each resumes from its own checkpoints.
pub fn sweep(
    cfg: &TrainConfig,
    data: &DataDir,
    root: &Path,
    device: &Device,
    opts: &TrainOptions,
) -> Result<(Vec<Trained>, usize)> {
    let grid = points(cfg).with_context(|| cfg.name.clone())?;
    let mut results = Vec::with_capacity(grid.len());
    for point in grid {
        let dir = root.join(&point.name);
        let summary = train(&point.config, data.root(), &dir, device, opts)
            .with_context(|| format!("{} at {}", cfg.name, point.name))?;
        results.push(Trained {
            lr: point.config.optim.lr,
            dir,
            summary,
            point: Some(point),
        });
    }
    let scores: Vec<Option<f64>> = results.iter().map(|t| t.summary.best_val).collect();
    let best = select_point(&scores).context("empty sweep")?;
    let name = |t: &Trained| t.point.as_ref().map(|p| p.name.clone());
    let table: Vec<serde_json::Value> = results
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": name(t),
                "settings": t.point.as_ref().map(|p| &p.settings),
                "lr": t.lr,
                "dir": t.dir,
                "best_epoch": t.summary.best_epoch,
                "val": t.summary.best_val,
            })
        })
        .collect();
    lexbench_core::io::write_json_pretty(
        &root.join("sweep.json"),
        &serde_json::json!({
            "measure": cfg.eval.measure,
            "axes": axes(cfg),
            "selected": name(&results[best]),
            "selected_lr": results[best].lr,
            "runs": table,
        }),
    )?;
    Ok((results, best))
}

/// Trains the experiment `request` names on `device` and ranks the requested splits with the
/// selected model.
pub fn train_experiment(data: &DataDir, request: &TrainRequest, device: &Device) -> Result<TrainReport> {
    // The experiment read and validated whole before any weights are loaded: the configuration
    // with the request's overrides, the base model's config.json, the dataset's splits.
    let mut cfg =
        TrainConfig::load_checked(&request.config, &request.overrides(), data.root(), &request.run)?;
    let opts = TrainOptions {
        progress: !request.quiet,
        restart: request.restart,
        checkpoint_every: request.checkpoint_every,
        ..TrainOptions::default()
    };
    let root = request
        .out
        .clone()
        .unwrap_or_else(|| data.models().join(&cfg.name));
    let (trained, selected) = if request.sweep {
        let (trained, best) =
            sweep(&cfg, data, &root, device, &opts).with_context(|| request.config.display().to_string())?;
        if let Some(p) = &trained[best].point {
            cfg = p.config.clone();
        }
        (trained, Some(best))
    } else {
        let summary = train(&cfg, data.root(), &root, device, &opts).with_context(|| cfg.name.clone())?;
        let t = Trained {
            lr: cfg.optim.lr,
            dir: root.clone(),
            summary,
            point: None,
        };
        (vec![t], None)
    };
    let out = trained[selected.unwrap_or(0)].dir.clone();
    // The stage the configuration trains after the encoder (DR+GNN's GNN, QABISAR's stage 2) writes
    // the runs; without one, every kind, the hierarchical article encoder included, ranks through
    // the one way from a folder to a ranker (`crate::rank::from_folder`), as `lexbench run` and the
    // harness do.
    let (second_stage, runs) = match train_second_stage(&cfg, data.root(), &out, device, &request.run, &opts)
        .with_context(|| {
            format!(
                "{}: {}",
                cfg.name,
                second_stage_name(&cfg).unwrap_or("second stage")
            )
        })? {
        Some((stage, outs)) => (Some(stage), outs.into_iter().map(|o| o.run_path).collect()),
        None => {
            let mut runs = Vec::new();
            for split in &request.run {
                let o = run_split(data, &cfg, &out.join("model"), split, device)
                    .with_context(|| format!("{} on {}/{split}", cfg.name, cfg.data.dataset))?;
                runs.push(o.run_path);
            }
            (None, runs)
        }
    };
    Ok(TrainReport {
        trained,
        selected,
        second_stage,
        runs,
    })
}

/// Ranks `split` with a trained model folder, as `lexbench run` would.
pub fn run_split(
    data: &DataDir,
    cfg: &TrainConfig,
    model: &Path,
    split: &str,
    device: &Device,
) -> Result<NeuralOutput> {
    let target = RunTarget::new(data.root(), &cfg.data.dataset, split, &cfg.name)?;
    rank_trained(cfg, model, &cfg.name, cfg.eval.top_k, None, &target, device)
}

/// The training configuration a model folder records (`lexbench-training.json`), if it was trained
/// here: the settings every ranker must use for it (lengths, pooling, similarity, ColBERT's).
pub fn trained_config(model: &Path) -> Result<Option<TrainConfig>> {
    Ok(crate::rank::trained(model)?.map(|r| r.config))
}

/// Ranks `target` with the trained folder `model` under the settings it was trained with (`cfg`), as
/// system `system`, keeping `top_k` documents per topic; a cross-encoder reranks BM25's top `depth`
/// when one is given ([`crate::rank::from_folder`]).
pub fn rank_trained(
    cfg: &TrainConfig,
    model: &Path,
    system: &str,
    top_k: usize,
    depth: Option<usize>,
    target: &RunTarget,
    device: &Device,
) -> Result<NeuralOutput> {
    let ask = crate::rank::Ask {
        kind: crate::rank::kind_of(cfg.model),
        system,
        top_k,
        depth,
        lengths: None,
    };
    let mut folder = crate::rank::from_folder(model, &ask, device)?;
    Ok(write_run(&mut folder.ranker, target)?)
}

#[cfg(test)]
mod tests {
    //! What `lexbench train` checks before any model is loaded: `--lr` and `--epochs` out of range
    //! (a negative rate included) are refused naming the flag; a split the dataset lacks (validation,
    //! or one `--run` ranks) is refused naming the dataset's splits; a dataset that is not built is
    //! named. None of these reads the base model, which the test does not have.
    use lexbench_core::testing::TinyDataset;

    use super::*;

    const CONFIG: &str = r#"
name = "flags"
model = "dpr"
base = "no/such/model"
seed = 1
[data]
dataset = "mini"
[negatives]
bm25 = 1
[schedule]
epochs = 1
[eval]
measure = "R@10"
"#;

    fn scratch(name: &str) -> PathBuf {
        let d = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-train-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch");
        d
    }

    fn request(dir: &Path, text: &str) -> TrainRequest {
        let config = dir.join("flags.toml");
        std::fs::write(&config, text).expect("config");
        TrainRequest {
            config,
            ..TrainRequest::default()
        }
    }

    #[test]
    fn bad_flags_are_named() {
        let dir = scratch("flags");
        let base = request(&dir, CONFIG);
        let load = |r: &TrainRequest| TrainConfig::load(&r.config, &r.overrides());
        let err = |r: TrainRequest| format!("{:#}", load(&r).expect_err("refused"));
        for lr in [-1.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let e = err(TrainRequest {
                lr: Some(lr),
                ..base.clone()
            });
            assert!(
                e.contains(&format!("--lr {lr}: must be a finite number > 0")) && e.contains("flags.toml"),
                "{e}"
            );
        }
        for epochs in [0, lexbench_baselines::train::config::MAX_EPOCHS + 1] {
            let e = err(TrainRequest {
                epochs: Some(epochs),
                ..base.clone()
            });
            assert!(
                e.contains(&format!("--epochs {epochs}: must be an integer from 1 to")),
                "{e}"
            );
        }
        let cfg = load(&TrainRequest {
            lr: Some(2e-5),
            epochs: Some(3),
            ..base
        })
        .expect("valid");
        assert_eq!((cfg.optim.lr, cfg.schedule.epochs), (2e-5, 3));
    }

    #[test]
    fn unknown_splits_are_refused_before_the_model_is_loaded() {
        let dir = scratch("splits");
        TinyDataset::new("mini")
            .doc("d1", "the right to a fair trial")
            .doc("d2", "the prohibition of torture")
            .topic("t1", "q1", "fair trial", &["d1"], "train")
            .topic("t2", "q2", "torture", &["d2"], "val")
            .write_in(&dir)
            .expect("dataset");
        let data = DataDir::new(&dir);
        let config = |text: &str| {
            let r = request(&dir, text);
            TrainConfig::load(&r.config, &r.overrides()).expect("valid")
        };
        let check = |cfg: &TrainConfig, run: &[&str]| {
            let run: Vec<String> = run.iter().map(|s| (*s).to_owned()).collect();
            cfg.check_splits(data.root(), &run, Path::new("flags.toml"))
                .map_err(|e| format!("{e:#}"))
        };
        let good = config(CONFIG);
        check(&good, &["val"]).expect("known splits");
        for (cfg, run, want) in [
            (
                config(&CONFIG.replace("[negatives]", "val_split = \"dev\"\n[negatives]")),
                &[][..],
                "data.val_split = \"dev\": dataset mini has no split \"dev\" (its splits: train, val)",
            ),
            (
                config(&CONFIG.replace("[negatives]", "train_split = \"test\"\n[negatives]")),
                &[],
                "data.train_split = \"test\": dataset mini has no split \"test\"",
            ),
            (
                good.clone(),
                &["val", "test"],
                "--run \"test\": dataset mini has no split \"test\" (its splits: train, val)",
            ),
            (good.clone(), &["../val"], "--run \"../val\": invalid split name"),
            (
                config(&CONFIG.replace("dataset = \"mini\"", "dataset = \"other\"")),
                &[],
                "data.dataset = \"other\": no dataset other is built",
            ),
        ] {
            let e = check(&cfg, run).expect_err("refused");
            assert!(e.contains(want) && e.starts_with("flags.toml: "), "{e}");
        }
        // The base model folder (checked before the splits, before any weights are read).
        let e = format!(
            "{:#}",
            good.check_base(Path::new("flags.toml")).expect_err("no model")
        );
        assert!(e.contains("no/such/model has no config.json"), "{e}");
    }
}
