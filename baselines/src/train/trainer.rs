//! The one training loop: epochs of shuffled duplicate-free batches, AdamW per parameter group with
//! warm-up and linear decay, gradient clipping, a checkpoint per epoch, model selection on
//! validation, exact resumption. What is trained and how its loss is computed is an [`Objective`]:
//! fine-tuning an encoder ([`super::finetune`]: DPR, ANCE, ColBERT, cross-encoder, hierarchical),
//! DR+GNN's graph stage ([`super::dr_gnn`]) and QABISAR ([`super::qabisar`]).
//!
//! Determinism: every random choice is drawn from a stream named by a [`SeedPurpose`] and derived from
//! `(seed, purpose, epoch or step)` — the epoch's example order and negatives, each step's dropout
//! masks, CuSINeS's draws — so nothing but the parameters and the optimisers' moments has to be saved
//! for a resumed run to continue exactly as an uninterrupted one would — from an epoch's end or from
//! between two of its updates. Whatever an objective computes from the model at an epoch's start
//! (ANCE's negatives, CuSINeS's dynamic scores, QABISAR's query features) comes from the model as it
//! was at the end of the previous epoch, i.e. its checkpoint; a checkpoint within an epoch saves what
//! the epoch's examples were drawn from (QABISAR's query features are not saved: it checkpoints at
//! epochs' ends only).
//!
//! Output folder (`out`):
//! ```text
//! config.toml                     the configuration, as run (a resumed run must match it)
//! train_log.jsonl                 one line per update (loss, lr, gradient norm, examples/s), per evaluation,
//!                                 and per epoch what CuSINeS's curriculum drew (`"event": "curriculum"`)
//! checkpoints/epoch-N/            params (the objective's files), optimizer[-G].safetensors, state.json
//! checkpoints/step-S/             the same after update S within an epoch, with epoch-inputs.json (what
//!                                 the epoch's examples were drawn from): written every
//!                                 `TrainOptions::checkpoint_every` and before each validation, the
//!                                 latest kept until the epoch's checkpoint supersedes it
//! checkpoints/ance-negatives-epoch-N.json   model-mined negatives used in epoch N (ANCE), and with
//!                                 `negatives.model_refresh_steps`, `ance-negatives-epoch-N-step-S.json`:
//!                                 those mined again before update S + 1
//! ```
//! and what the objective exports for the selected epoch.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{Device, Tensor, Var};
use lexbench_core::rng::SplitMix64;
use serde::{Deserialize, Serialize};

pub use super::seeds::{LoopSeeds, SeedPurpose, derive_seed};

use super::config::NegativesConfig;
use super::data::SplitData;
use super::negatives::curriculum::{CurriculumNegatives, DrawStats};
use super::negatives::{CurriculumDraws, Example, Rankings, batches, examples, examples_with};
use super::optim::{AdamW, AdamWConfig, LinearSchedule, clip_grad_norm};
use super::params::{load_tensors, save_tensors};
use crate::error::{Error, Result, io_err};
use lexbench_engine::dropout;

/// How to run (not part of the experiment's identity).
#[derive(Debug, Clone, Default)]
pub struct TrainOptions {
    /// Show a progress bar.
    pub progress: bool,
    /// Stop (as if interrupted) after this many epochs in total; a later call resumes.
    pub stop_after_epoch: Option<usize>,
    /// Ignore existing checkpoints and start over.
    pub restart: bool,
    /// Also checkpoint within an epoch once this long has passed since the last checkpoint (`None`:
    /// only at an epoch's end and before its validation). Results do not depend on it.
    pub checkpoint_every: Option<std::time::Duration>,
    /// Stop (as if interrupted) after this many updates in total, with a checkpoint there; a later
    /// call resumes from it.
    pub stop_after_step: Option<u64>,
    /// Stop once this is set (by a SIGTERM or SIGINT handler: a scheduler's preemption, a Ctrl-C),
    /// after the update under way, with a checkpoint there when the training resumes within an
    /// epoch (else at the last epoch's end); a later call resumes from it.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl TrainOptions {
    /// Whether [`TrainOptions::interrupt`] is set.
    pub fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// One epoch's facts (in `summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// 1-based epoch.
    pub epoch: usize,
    /// Updates in the epoch.
    pub steps: usize,
    /// Mean training loss.
    pub loss: f64,
    /// Validation score (`None` without a validation split).
    pub val: Option<f64>,
    /// Seconds spent training (without validation).
    pub train_s: f64,
    /// Seconds spent validating.
    pub val_s: f64,
    /// Examples per second while training.
    pub examples_per_s: f64,
    /// What the epoch's CuSINeS curriculum drew (negatives and mean semantic rank per bucket), when
    /// the curriculum is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curriculum: Option<DrawStats>,
}

/// The loop's state, saved with every checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Epochs done.
    pub epoch: usize,
    /// Updates done.
    pub step: u64,
    /// The selected epoch, from 1 (0: none trained yet; the untrained model is never selected).
    pub best_epoch: usize,
    /// Its validation score.
    pub best_val: Option<f64>,
    /// The validation score before training.
    pub zero_shot_val: Option<f64>,
    /// Per epoch.
    pub epochs: Vec<EpochStats>,
    /// In a checkpoint taken between two updates (`step-S`): where epoch `epoch + 1` stands. `None`
    /// at an epoch's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<WithinEpoch>,
}

/// How far an epoch had gone when a checkpoint was taken within it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithinEpoch {
    /// Batches of the epoch done (all of them: trained, not yet validated).
    pub batches: usize,
    /// The sum of their losses.
    pub loss_sum: f64,
    /// Examples seen.
    pub seen: usize,
    /// Seconds spent training the epoch so far, over every run that trained it.
    pub train_s: f64,
    /// ANCE's mid-epoch refreshes of the model negatives done.
    pub refreshes: u64,
}

/// What an epoch's examples were drawn from, saved with a checkpoint within it: a resumed run draws
/// the same examples without the model as it was at the epoch's start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EpochInputs {
    /// The model's rankings the current examples were drawn with (ANCE; after any refresh).
    rankings: Option<Rankings>,
    /// CuSINeS's draws for the epoch.
    draws: Option<CurriculumDraws>,
    /// What the curriculum drew.
    curriculum: Option<DrawStats>,
}

const EPOCH_INPUTS: &str = "epoch-inputs.json";

/// The checkpoint folder of `epoch`.
pub fn checkpoint_dir(out: &Path, epoch: usize) -> PathBuf {
    out.join("checkpoints").join(format!("epoch-{epoch}"))
}

/// The checkpoint folder taken after update `step`, within an epoch.
fn step_dir(out: &Path, step: u64) -> PathBuf {
    out.join("checkpoints").join(format!("step-{step}"))
}

/// The numbered checkpoint folders of `out` named `prefix`N that hold a state, by N.
fn checkpoints_named(out: &Path, prefix: &str) -> Vec<(u64, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(out.join("checkpoints")) else {
        return Vec::new();
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e
                .file_name()
                .to_str()?
                .strip_prefix(prefix)?
                .parse::<u64>()
                .ok()?;
            Some((n, e.path()))
        })
        .filter(|(_, p)| p.join("state.json").is_file())
        .collect();
    found.sort();
    found
}

/// The checkpoint to resume from: the latest epoch's, or a later one taken within the next epoch.
fn latest_checkpoint(out: &Path) -> Result<Option<PathBuf>> {
    let epoch = checkpoints_named(out, "epoch-").pop();
    let Some((step, dir)) = checkpoints_named(out, "step-").pop() else {
        return Ok(epoch.map(|(_, d)| d));
    };
    // A step checkpoint the epoch's checkpoint superseded (left by a run killed before removing it)
    // is older than that epoch's end.
    let st: State = lexbench_core::io::read_json(&dir.join("state.json"))?;
    let done = epoch.as_ref().map_or(0, |(e, _)| *e as usize);
    Ok(if st.within.is_some() && st.step == step && st.epoch >= done {
        Some(dir)
    } else {
        epoch.map(|(_, d)| d)
    })
}

/// The checkpoint to resume from ([`latest_checkpoint`]), with every step checkpoint it supersedes
/// removed: one left by a run killed between writing an epoch's checkpoint and removing the step
/// checkpoints before it, which no later checkpoint would remove when that epoch was the last.
fn resume_point(out: &Path) -> Result<Option<PathBuf>> {
    let from = latest_checkpoint(out)?;
    if let Some(dir) = &from {
        let keep = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("step-"))
            .and_then(|s| s.parse::<u64>().ok());
        remove_step_checkpoints(out, keep);
    }
    Ok(from)
}

/// Removes the step checkpoints other than `keep` (best effort: one left behind is older than the
/// checkpoint just written and is never resumed from).
fn remove_step_checkpoints(out: &Path, keep: Option<u64>) {
    for (s, dir) in checkpoints_named(out, "step-") {
        if Some(s) == keep {
            continue;
        }
        // Renamed to a journaled hidden name first, so that a kill during the removal never leaves
        // a visible `step-S` folder that has lost its `state.json`, and the next command that opens
        // the data directory removes what it left (both found by `kills::killed_training_…`).
        if let Err(e) = lexbench_core::io::remove_dir_journaled(&dir) {
            tracing::warn!("could not remove {}: {e}", dir.display());
        }
    }
}

/// Trainable variables with their own optimiser (its learning rate is the schedule's peak).
pub struct ParamGroup {
    /// The variables, by name.
    pub vars: Vec<(String, Var)>,
    /// The optimiser's settings.
    pub optim: AdamWConfig,
}

/// What the loop trains: the networks, their loss, what is saved and exported.
pub trait Objective {
    /// How a diverging loss is named and what to lower, for the error (`"loss"`, `"the learning
    /// rate"`).
    fn loss_name(&self) -> (&'static str, &'static str);
    /// The parameter groups. Clipping is over all of them, in this order.
    fn param_groups(&self) -> Vec<ParamGroup>;
    /// Writes the trainable values into a checkpoint folder.
    fn save(&self, dir: &Path) -> Result<()>;
    /// Reads them back from a checkpoint folder.
    fn load(&mut self, dir: &Path) -> Result<()>;
    /// Called at the start of epoch `epoch` (0-based), before its negatives are drawn: returns the
    /// model's own rankings of the training topics when they are negatives (ANCE), and refreshes
    /// whatever the objective recomputes per epoch.
    fn start_epoch(&mut self, _split: &SplitData, _epoch: usize) -> Result<Option<Rankings>> {
        Ok(None)
    }
    /// Within an epoch, every `negatives.model_refresh_steps` updates: the model's own rankings of
    /// the training topics as it is now (ANCE's refresh at a checkpoint), or `None` when the objective
    /// mines no model negatives. Nothing else is recomputed.
    fn refresh_model_negatives(&mut self, _split: &SplitData) -> Result<Option<Rankings>> {
        Ok(None)
    }
    /// The model's scores of each training topic's candidates (CuSINeS's dynamic semantic view).
    fn candidate_scores(&self, split: &SplitData) -> Result<Vec<Vec<f64>>>;
    /// The training loss of one batch (`step`: the global update number).
    fn loss(&self, split: &SplitData, batch: &[&Example], step: u64) -> Result<Tensor>;
    /// The validation score of the current weights (`None`: no validation; the last epoch is kept).
    fn validate(&self) -> Result<Option<f64>> {
        Ok(None)
    }
    /// Exports the current weights as the selected model of `state.best_epoch` (a trained epoch).
    fn export(&self, state: &State) -> Result<()>;
    /// Whether a checkpoint within an epoch resumes exactly: `false` when [`Self::start_epoch`]
    /// leaves state besides its rankings that the saved parameters cannot restore (QABISAR's query
    /// nodes); such objectives are checkpointed at epochs' ends only.
    fn resumes_within_epoch(&self) -> bool {
        true
    }
}

/// The negatives every objective draws from: static BM25 rankings and CuSINeS's curriculum.
pub struct NegativeSources {
    /// The configuration of the mix.
    pub cfg: NegativesConfig,
    /// BM25's rankings of the training topics (when BM25 negatives are used).
    pub bm25: Option<Rankings>,
    /// CuSINeS's curriculum (when configured).
    pub curriculum: Option<CurriculumNegatives>,
}

impl NegativeSources {
    /// Epoch `epoch`'s curriculum draws (of `epochs`; progress `epoch / epochs`) from the stream
    /// `seeds.curriculum` of `seed`, and what they were; `None` without a curriculum. `scores`: the
    /// model's candidate scores when the semantic view is dynamic
    /// ([`CurriculumNegatives::needs_model_scores`]).
    pub fn curriculum_draws(
        &self,
        split: &SplitData,
        (seed, seeds): (u64, LoopSeeds),
        (epoch, epochs): (usize, usize),
        scores: Option<&[Vec<f64>]>,
    ) -> Result<Option<(CurriculumDraws, DrawStats)>> {
        let Some(c) = &self.curriculum else {
            return Ok(None);
        };
        let buckets = c.buckets(split, scores)?;
        let progress = epoch as f64 / epochs as f64;
        let mut rng = SplitMix64::new(derive_seed(seed, seeds.curriculum, epoch as u64));
        let draws = c.draw(split, &buckets, progress, self.cfg.curriculum, &mut rng)?;
        let stats = c.draw_stats(split, &buckets, &draws, scores)?;
        Ok(Some((draws, stats)))
    }

    /// The examples of epoch `epoch` over its curriculum `draws` and the model's rankings, the
    /// `refresh`-th time they are drawn in the epoch (0: at its start; `k`: after the `k`-th
    /// mid-epoch refresh of ANCE's negatives), each from its own stream of `seeds.negatives`.
    pub fn examples(
        &self,
        split: &SplitData,
        (seed, seeds): (u64, LoopSeeds),
        (epoch, refresh): (usize, u64),
        model_rank: Option<&Rankings>,
        draws: Option<&CurriculumDraws>,
    ) -> Vec<Example> {
        let stream = epoch as u64 | (refresh << 32);
        let mut rng = SplitMix64::new(derive_seed(seed, seeds.negatives, stream));
        examples_with(split, &self.cfg, self.bm25.as_ref(), model_rank, draws, &mut rng)
    }
}

/// What the loop needs besides the objective.
pub struct LoopSpec<'a> {
    /// Where config, log and checkpoints go.
    pub out: &'a Path,
    /// The text `config.toml` holds: a resumed run must have written the same.
    pub identity: String,
    /// The base seed and the streams.
    pub seed: u64,
    /// The streams of this kind of training.
    pub seeds: LoopSeeds,
    /// The training split.
    pub split: &'a SplitData,
    /// The split's name and dataset, for errors.
    pub what: String,
    /// Epochs.
    pub epochs: usize,
    /// Examples per batch.
    pub batch_size: usize,
    /// Share of the updates spent warming up.
    pub warmup_ratio: f64,
    /// Stop after this many updates (0: no limit).
    pub max_steps: usize,
    /// Gradient-norm clip (0: off).
    pub max_grad_norm: f64,
    /// The validation measure's name (in the log).
    pub measure: String,
    /// Negatives.
    pub negatives: &'a NegativeSources,
    /// Where the optimisers' moments live.
    pub device: &'a Device,
}

/// What the loop did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The final state (epochs, selection).
    pub state: State,
    /// Whether training ran to its end rather than stopping to be resumed.
    pub finished: bool,
}

struct Log {
    path: PathBuf,
    file: std::fs::File,
}

impl Log {
    /// Opens `out/train_log.jsonl` for appending. Resuming from `resumed`, it first drops the lines
    /// the resumed run writes again: those of later epochs, and within an epoch checkpointed part-way
    /// the updates after the checkpoint's, the refreshes from it on and the evaluation (the
    /// epoch's curriculum line stays: its draws are not redone). Starting over (no checkpoint), it
    /// drops every line: a run killed before its first checkpoint left lines (epoch 0's evaluation,
    /// some updates) that this run writes again.
    fn open(out: &Path, resumed: Option<&State>) -> Result<Self> {
        let path = out.join("train_log.jsonl");
        if let Some(st) = resumed
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            let keep = |v: &serde_json::Value| -> bool {
                let Some(ep) = v["epoch"].as_u64().map(|e| e as usize) else {
                    return false;
                };
                if ep <= st.epoch {
                    return true;
                }
                if ep > st.epoch + 1 || st.within.is_none() {
                    return false;
                }
                let step = v["step"].as_u64();
                match v["event"].as_str() {
                    None => step.is_some_and(|s| s <= st.step),
                    Some("curriculum") => true,
                    Some("model_negatives") => step.is_some_and(|s| s < st.step),
                    Some(_) => false,
                }
            };
            let kept: String = text
                .lines()
                .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| keep(&v)))
                .map(|l| format!("{l}\n"))
                .collect();
            lexbench_core::io::write_atomic(&path, |w| w.write_all(kept.as_bytes()))?;
        }
        let mut options = std::fs::OpenOptions::new();
        if resumed.is_some() {
            options.append(true);
        } else {
            options.write(true).truncate(true);
        }
        let file = options.create(true).open(&path).map_err(io_err(&path))?;
        Ok(Self { path, file })
    }

    fn line(&mut self, v: &serde_json::Value) -> Result<()> {
        writeln!(self.file, "{v}").map_err(io_err(&self.path))?;
        self.file.flush().map_err(io_err(&self.path))
    }
}

fn progress_bar(show: bool, total: u64, at: u64) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(total);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} epoch {prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed} / {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    b.set_position(at);
    b
}

/// One optimiser and its schedule.
struct Optimiser {
    opt: AdamW,
    sched: LinearSchedule,
    file: &'static str,
}

/// The checkpoint file of parameter group `g`'s optimiser state.
fn optimizer_file(g: usize) -> &'static str {
    const FILES: [&str; 4] = [
        "optimizer.safetensors",
        "optimizer-1.safetensors",
        "optimizer-2.safetensors",
        "optimizer-3.safetensors",
    ];
    FILES[g.min(FILES.len() - 1)]
}

/// The training loop (see the module documentation).
pub struct Trainer<'a, O: Objective> {
    spec: LoopSpec<'a>,
    objective: O,
    vars: Vec<(String, Var)>,
    optimisers: Vec<Optimiser>,
    plans: Vec<Vec<Vec<usize>>>,
    total_steps: u64,
}

impl<'a, O: Objective> Trainer<'a, O> {
    /// Plans every epoch's batches (they depend on the seed alone: topics and positives, not
    /// negatives) and the optimisers.
    pub fn new(spec: LoopSpec<'a>, objective: O) -> Result<Self> {
        if objective.param_groups().len() > 4 {
            return Err(Error::internal("at most 4 parameter groups"));
        }
        let template = examples(
            spec.split,
            &Default::default(),
            None,
            None,
            &mut SplitMix64::new(0),
        );
        if template.is_empty() {
            return Err(Error::data(
                spec.what.clone(),
                "no training examples (no topic with a relevant document)",
            ));
        }
        let plans: Vec<Vec<Vec<usize>>> = (0..spec.epochs)
            .map(|e| {
                let mut rng = SplitMix64::new(derive_seed(spec.seed, spec.seeds.shuffle, e as u64));
                batches(&template, spec.batch_size, &mut rng)
            })
            .collect();
        let mut total_steps: u64 = plans.iter().map(|p| p.len() as u64).sum();
        if spec.max_steps > 0 {
            total_steps = total_steps.min(spec.max_steps as u64);
        }
        let warmup = (spec.warmup_ratio * total_steps as f64).round() as u64;
        let mut vars = Vec::new();
        let mut optimisers = Vec::new();
        for (g, group) in objective.param_groups().into_iter().enumerate() {
            vars.extend(group.vars.iter().cloned());
            optimisers.push(Optimiser {
                sched: LinearSchedule {
                    peak: group.optim.lr,
                    warmup,
                    total: total_steps,
                },
                opt: AdamW::new(group.vars, group.optim)?,
                file: optimizer_file(g),
            });
        }
        Ok(Self {
            spec,
            objective,
            vars,
            optimisers,
            plans,
            total_steps,
        })
    }

    /// The objective (to rank or report after training).
    pub fn objective(&self) -> &O {
        &self.objective
    }

    /// Gives the objective back.
    pub fn into_objective(self) -> O {
        self.objective
    }

    /// Prepares `out` (restart, identity check) and returns the checkpoint to resume from.
    fn prepare(&self, opts: &TrainOptions) -> Result<Option<PathBuf>> {
        let out = self.spec.out;
        std::fs::create_dir_all(out).map_err(io_err(out))?;
        let cfg_path = out.join("config.toml");
        if opts.restart {
            // Journaled like the step checkpoints: a kill never leaves half a model folder.
            for p in [out.join("checkpoints"), out.join("model")] {
                lexbench_core::io::remove_dir_journaled(&p)?;
            }
            std::fs::remove_file(out.join("train_log.jsonl")).ok();
        }
        let resume_from = resume_point(out)?;
        if resume_from.is_some() {
            let old = std::fs::read_to_string(&cfg_path).map_err(io_err(&cfg_path))?;
            if old != self.spec.identity {
                return Err(Error::Folder {
                    path: out.to_owned(),
                    message: format!(
                        "holds checkpoints of a different configuration ({}); use another name or --restart",
                        cfg_path.display()
                    ),
                });
            }
        } else {
            let text = self.spec.identity.as_bytes();
            lexbench_core::io::write_atomic(&cfg_path, |w| w.write_all(text))?;
        }
        Ok(resume_from)
    }

    /// Loads the checkpoint in `dir`: parameters, optimiser moments, the loop's state, and within an
    /// epoch what its examples were drawn from.
    fn resume(&mut self, dir: &Path) -> Result<(State, Option<EpochInputs>)> {
        let st: State = lexbench_core::io::read_json(&dir.join("state.json"))?;
        self.objective.load(dir)?;
        for o in &mut self.optimisers {
            o.opt
                .load_state(&load_tensors(&dir.join(o.file), self.spec.device)?, st.step)?;
        }
        let inputs = match &st.within {
            Some(w) => {
                tracing::info!(
                    "resuming {} after update {} (batch {} of epoch {})",
                    self.spec.out.display(),
                    st.step,
                    w.batches,
                    st.epoch + 1
                );
                Some(lexbench_core::io::read_json(&dir.join(EPOCH_INPUTS))?)
            }
            None => {
                tracing::info!("resuming {} after epoch {}", self.spec.out.display(), st.epoch);
                None
            }
        };
        Ok((st, inputs))
    }

    /// Writes the checkpoint of `state` atomically: `epoch-N` at an epoch's end, `step-S` (with the
    /// epoch's inputs) within one.
    fn checkpoint(&self, state: &State, inputs: Option<&EpochInputs>) -> Result<()> {
        let dir = match &state.within {
            Some(_) => step_dir(self.spec.out, state.step),
            None => checkpoint_dir(self.spec.out, state.epoch),
        };
        lexbench_core::io::write_dir_atomic(&dir, |tmp| -> Result<()> {
            self.objective.save(tmp)?;
            for o in &self.optimisers {
                let (moments, step) = o.opt.state()?;
                debug_assert_eq!(step, state.step);
                save_tensors(&tmp.join(o.file), &moments)?;
            }
            if let Some(i) = inputs {
                let path = tmp.join(EPOCH_INPUTS);
                lexbench_core::io::write_atomic(&path, |w| {
                    serde_json::to_writer(&mut *w, i).map_err(std::io::Error::other)
                })?;
            }
            lexbench_core::io::write_json_pretty(&tmp.join("state.json"), state)?;
            Ok(())
        })?;
        // The newest checkpoint supersedes every step checkpoint before it.
        let keep = state.within.as_ref().map(|_| state.step);
        remove_step_checkpoints(self.spec.out, keep);
        Ok(())
    }

    /// Draws epoch `epoch`'s examples: curriculum draws (scored by the model as it is now when the
    /// semantic view is dynamic), model-mined, BM25 and random negatives; and what the curriculum
    /// drew, when it is on.
    fn epoch_examples(
        &self,
        epoch: usize,
        model_rank: Option<&Rankings>,
    ) -> Result<(Vec<Example>, Option<DrawStats>, Option<CurriculumDraws>)> {
        let (spec, split) = (&self.spec, self.spec.split);
        let neg = spec.negatives;
        let scores = match &neg.curriculum {
            Some(c) if c.needs_model_scores() => Some(self.objective.candidate_scores(split)?),
            _ => None,
        };
        let (draws, stats) = neg
            .curriculum_draws(
                split,
                (spec.seed, spec.seeds),
                (epoch, spec.epochs),
                scores.as_deref(),
            )?
            .unzip();
        let examples = self.draw_examples(epoch, 0, model_rank, draws.as_ref());
        Ok((examples, stats, draws))
    }

    /// The examples of epoch `epoch` over its curriculum draws and the model's rankings, the
    /// `refresh`-th time they are drawn in the epoch (0: at its start; `k`: after the `k`-th
    /// mid-epoch refresh of ANCE's negatives), each from its own random stream.
    fn draw_examples(
        &self,
        epoch: usize,
        refresh: u64,
        model_rank: Option<&Rankings>,
        draws: Option<&CurriculumDraws>,
    ) -> Vec<Example> {
        let spec = &self.spec;
        spec.negatives.examples(
            spec.split,
            (spec.seed, spec.seeds),
            (epoch, refresh),
            model_rank,
            draws,
        )
    }

    /// One update: reseeded dropout, the loss, a finiteness check, backward, clipping, every
    /// optimiser. Returns the loss, the learning rate of the first group and the gradient norm.
    fn step(&mut self, batch: &[&Example], step: u64, epoch: usize) -> Result<(f64, f64, f64)> {
        dropout::reseed(derive_seed(self.spec.seed, self.spec.seeds.dropout, step));
        let loss = self.objective.loss(self.spec.split, batch, step)?;
        let loss_v = f64::from(loss.to_dtype(candle_core::DType::F32)?.to_scalar::<f32>()?);
        if !loss_v.is_finite() {
            let (name, lower) = self.objective.loss_name();
            return Err(Error::Diverged {
                step,
                what: format!("the {name} is {loss_v} (epoch {}): lower {lower}", epoch + 1),
            });
        }
        let mut grads = loss.backward()?;
        let norm = clip_grad_norm(&mut grads, &self.vars, self.spec.max_grad_norm, step)?;
        let mut first_lr = None;
        for o in &mut self.optimisers {
            let lr = o.sched.lr(step);
            o.opt.step(&grads, lr)?;
            first_lr.get_or_insert(lr);
        }
        Ok((loss_v, first_lr.unwrap_or(0.0), norm))
    }

    /// Trains (or resumes) to the end, or to `opts.stop_after_epoch` / `opts.stop_after_step`.
    pub fn run(&mut self, opts: &TrainOptions) -> Result<Outcome> {
        let within_ok = self.objective.resumes_within_epoch();
        if opts.stop_after_step.is_some() && !within_ok {
            return Err(Error::Param(
                "this training is checkpointed at epochs' ends only: stop after an epoch instead".into(),
            ));
        }
        let resume_from = self.prepare(opts)?;
        let (mut state, mut inputs) = match &resume_from {
            Some(dir) => self.resume(dir)?,
            None => {
                // Epoch 0 (the untrained model) is measured as the zero-shot reference only: it is
                // never selected or exported, so a sweep never keeps an untrained model either.
                let zero = self.objective.validate()?;
                let state = State {
                    epoch: 0,
                    step: 0,
                    best_epoch: 0,
                    best_val: None,
                    zero_shot_val: zero,
                    epochs: Vec::new(),
                    within: None,
                };
                (state, None)
            }
        };
        let mut log = Log::open(self.spec.out, resume_from.as_ref().map(|_| &state))?;
        if resume_from.is_none() {
            log.line(&serde_json::json!({"epoch": 0, "event": "eval", "measure": self.spec.measure, "val": state.zero_shot_val}))?;
        }
        let bar = progress_bar(opts.progress, self.total_steps, state.step);
        let max_steps = self.spec.max_steps as u64;
        let mut last_checkpoint = Instant::now();
        for epoch in state.epoch..self.plans.len() {
            // Where the epoch stands: from its start, or from a checkpoint within it.
            let resumed = state.within.take();
            if resumed.is_none() {
                if opts.stop_after_epoch.is_some_and(|s| epoch >= s) || opts.interrupted() {
                    bar.finish_and_clear();
                    return Ok(Outcome {
                        state,
                        finished: false,
                    });
                }
                if max_steps > 0 && state.step >= max_steps {
                    break;
                }
            }
            bar.set_prefix(format!("{}/{}", epoch + 1, self.spec.epochs));
            let t0 = Instant::now();
            let (mut exs, mut now, mut w) = match (resumed, inputs.take()) {
                (Some(w), Some(i)) => {
                    let exs = self.draw_examples(epoch, w.refreshes, i.rankings.as_ref(), i.draws.as_ref());
                    (exs, i, w)
                }
                (Some(_), None) => {
                    return Err(Error::internal("a checkpoint within an epoch lacks its inputs"));
                }
                (None, _) => {
                    let model_rank = self.objective.start_epoch(self.spec.split, epoch)?;
                    if let Some(r) = &model_rank {
                        let dir = self.spec.out.join("checkpoints");
                        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
                        let p = dir.join(format!("ance-negatives-epoch-{}.json", epoch + 1));
                        lexbench_core::io::write_json_pretty(&p, r)?;
                    }
                    let (exs, curriculum, draws) = self.epoch_examples(epoch, model_rank.as_ref())?;
                    if let Some(c) = &curriculum {
                        log.line(&serde_json::json!({
                            "epoch": epoch + 1, "event": "curriculum", "semantic": c.semantic,
                            "drawn": c.drawn, "mean_rank": c.mean_rank, "mean_rank_all": c.mean_rank_all,
                        }))?;
                    }
                    let now = EpochInputs {
                        rankings: model_rank,
                        draws,
                        curriculum,
                    };
                    (exs, now, WithinEpoch::default())
                }
            };
            let every = self.spec.negatives.cfg.model_refresh_steps as u64;
            let plan_len = self.plans[epoch].len();
            let first = w.batches;
            // The state as checkpointed within this epoch, `w` as it stands.
            let within = |state: &State, w: &WithinEpoch, t0: Instant| State {
                within: Some(WithinEpoch {
                    train_s: w.train_s + t0.elapsed().as_secs_f64(),
                    ..w.clone()
                }),
                ..state.clone()
            };
            for b in first..plan_len {
                if max_steps > 0 && state.step >= max_steps {
                    break;
                }
                // ANCE: the negatives mined again from the model as it is now, every `every` updates
                // (the refresh at the epoch's start counts for its first update).
                if every > 0
                    && b > 0
                    && state.step % every == 0
                    && let Some(r) = self.objective.refresh_model_negatives(self.spec.split)?
                {
                    w.refreshes += 1;
                    let dir = self.spec.out.join("checkpoints");
                    let p = dir.join(format!(
                        "ance-negatives-epoch-{}-step-{}.json",
                        epoch + 1,
                        state.step
                    ));
                    lexbench_core::io::write_json_pretty(&p, &r)?;
                    log.line(&serde_json::json!({
                        "epoch": epoch + 1, "step": state.step, "event": "model_negatives",
                    }))?;
                    exs = self.draw_examples(epoch, w.refreshes, Some(&r), now.draws.as_ref());
                    now.rankings = Some(r);
                }
                let ts = Instant::now();
                let refs: Vec<&Example> = self.plans[epoch][b].iter().map(|&i| &exs[i]).collect();
                let (loss_v, lr, norm) = self.step(&refs, state.step, epoch)?;
                state.step += 1;
                w.batches = b + 1;
                w.seen += refs.len();
                w.loss_sum += loss_v;
                let rate = refs.len() as f64 / ts.elapsed().as_secs_f64().max(1e-9);
                log.line(&serde_json::json!({
                    "epoch": epoch + 1, "step": state.step, "loss": loss_v, "lr": lr,
                    "grad_norm": norm, "examples": refs.len(), "examples_per_s": rate,
                }))?;
                bar.set_message(format!("loss {loss_v:.4}, {rate:.1} ex/s"));
                bar.inc(1);
                let stop = opts.stop_after_step.is_some_and(|s| state.step >= s) || opts.interrupted();
                let due = opts
                    .checkpoint_every
                    .is_some_and(|d| last_checkpoint.elapsed() >= d);
                if within_ok && (stop || (due && b + 1 < plan_len)) {
                    self.checkpoint(&within(&state, &w, t0), Some(&now))?;
                    last_checkpoint = Instant::now();
                }
                if stop {
                    bar.finish_and_clear();
                    return Ok(Outcome {
                        state,
                        finished: false,
                    });
                }
            }
            // Trained: checkpoint before validating (which can take long), so that an interruption
            // there redoes the validation only.
            if within_ok && w.batches > first {
                self.checkpoint(&within(&state, &w, t0), Some(&now))?;
            }
            let train_s = w.train_s + t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            let val = self.objective.validate()?;
            let val_s = t1.elapsed().as_secs_f64();
            log.line(&serde_json::json!({"epoch": epoch + 1, "event": "eval", "measure": self.spec.measure, "val": val, "train_s": train_s}))?;
            state.epochs.push(EpochStats {
                epoch: epoch + 1,
                steps: w.batches,
                loss: w.loss_sum / w.batches.max(1) as f64,
                val,
                train_s,
                val_s,
                examples_per_s: w.seen as f64 / train_s.max(1e-9),
                curriculum: now.curriculum,
            });
            state.epoch = epoch + 1;
            // Select among trained epochs on validation; without one, the last epoch is kept. The
            // first trained epoch is always a candidate; ties keep the earlier epoch.
            let better = match (val, state.best_val) {
                _ if state.best_epoch == 0 => true,
                (Some(v), Some(b)) => v > b,
                (Some(_), None) | (None, _) => true,
            };
            if better {
                state.best_val = val;
                state.best_epoch = epoch + 1;
                self.objective.export(&state)?;
            }
            self.checkpoint(&state, None)?;
            last_checkpoint = Instant::now();
        }
        bar.finish_and_clear();
        Ok(Outcome {
            state,
            finished: true,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Properties: resuming removes a step checkpoint that an epoch's checkpoint superseded (a run
    //! killed between writing the one and removing the other), and keeps one taken after it.
    use super::*;

    fn state(epoch: usize, step: u64, within: bool) -> State {
        State {
            epoch,
            step,
            best_epoch: 0,
            best_val: None,
            zero_shot_val: None,
            epochs: Vec::new(),
            within: within.then(WithinEpoch::default),
        }
    }

    fn write(out: &Path, name: &str, st: &State) {
        let dir = out.join("checkpoints").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        lexbench_core::io::write_json_pretty(&dir.join("state.json"), st).unwrap();
    }

    #[test]
    fn resuming_removes_the_step_checkpoints_an_epochs_checkpoint_superseded() {
        let out = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-resume-point-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        // Epoch 3 ended at update 9; a step checkpoint of update 6 (within epoch 3) was left behind.
        write(&out, "epoch-3", &state(3, 9, false));
        write(&out, "step-6", &state(2, 6, true));
        assert_eq!(resume_point(&out).unwrap(), Some(checkpoint_dir(&out, 3)));
        assert!(
            !step_dir(&out, 6).exists(),
            "the superseded step checkpoint is removed"
        );
        // A step checkpoint within epoch 4 is newer than epoch 3's: resumed from, and kept.
        write(&out, "step-11", &state(3, 11, true));
        assert_eq!(resume_point(&out).unwrap(), Some(step_dir(&out, 11)));
        assert!(step_dir(&out, 11).join("state.json").is_file());
        let _ = std::fs::remove_dir_all(&out);
    }
}
