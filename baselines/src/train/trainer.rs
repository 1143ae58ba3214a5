//! The training loop: epochs of shuffled duplicate-free batches, AdamW with warm-up and linear decay,
//! gradient clipping, a checkpoint per epoch, model selection on the validation split, resumption.
//!
//! Determinism: every random choice is drawn from a generator derived from `(seed, purpose, epoch or
//! step)` — initial weights (by name), the epoch's example order and negatives, each step's dropout
//! masks — so nothing but the parameters and the optimiser's moments has to be saved for a resumed
//! run to continue exactly as an uninterrupted one would (CuSINeS's curriculum draws have their own
//! purpose, and its dynamic scores come from the model at the epoch's start). ANCE's model negatives at epoch `e` come
//! from the model as it was at the start of epoch `e`, i.e. the checkpoint of epoch `e − 1`.
//!
//! Output folder (`DATA/models/<name>/` by default):
//! ```text
//! config.toml                     the configuration, as run
//! train_log.jsonl                 one line per update (loss, lr, gradient norm, examples/s) and per evaluation
//! checkpoints/epoch-N/            params.safetensors, optimizer.safetensors, state.json
//! model/                          the best epoch on the validation split (see `export`)
//! summary.json                    per-epoch validation scores and times, the trainable share
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::Device;
use lexbench_core::eval::{Measure, PoolSizes, evaluate};
use lexbench_core::rng::SplitMix64;
use serde::{Deserialize, Serialize};

use super::config::TrainConfig;
use super::data::SplitData;
use super::model::{Batch, Trainable, rankings_of};
use super::negatives::curriculum::CurriculumNegatives;
use super::negatives::{Example, Rankings, batches, examples, examples_with};
use super::optim::{AdamW, LinearSchedule, clip_grad_norm};
use super::params::{load_tensors, save_tensors};
use crate::encoder::dropout;
use crate::error::{Error, Result, io_err};
use crate::sparse::{Analyzer, Bm25Index, Bm25Params};

/// How to run (not part of the experiment's identity).
#[derive(Debug, Clone, Default)]
pub struct TrainOptions {
    /// Show a progress bar.
    pub progress: bool,
    /// Stop (as if interrupted) after this many epochs in total; a later call resumes.
    pub stop_after_epoch: Option<usize>,
    /// Ignore existing checkpoints and start over.
    pub restart: bool,
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
}

/// What `summary.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The run's name.
    pub name: String,
    /// The validation measure.
    pub measure: String,
    /// The validation score before training (epoch 0: the zero-shot model).
    pub zero_shot_val: Option<f64>,
    /// Per epoch.
    pub epochs: Vec<EpochStats>,
    /// The selected epoch.
    pub best_epoch: usize,
    /// Its validation score.
    pub best_val: Option<f64>,
    /// Trainable parameters.
    pub trainable_params: usize,
    /// All parameters.
    pub total_params: usize,
    /// `100 · trainable / total`.
    pub trainable_pct: f64,
    /// The dataset's identity hash.
    pub dataset_hash: String,
    /// Whether training ran to its end (all epochs, or `max_steps`), rather than stopping early
    /// (`TrainOptions::stop_after_epoch`) to be resumed.
    pub finished: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    epoch: usize,
    step: u64,
    best_epoch: usize,
    best_val: Option<f64>,
    zero_shot_val: Option<f64>,
    epochs: Vec<EpochStats>,
}

/// A derived seed for `(purpose, n)`.
pub fn derive_seed(seed: u64, purpose: u64, n: u64) -> u64 {
    let mut r = SplitMix64::new(seed ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n.rotate_left(32));
    r.next_u64()
}

const SHUFFLE: u64 = 1;
const NEGATIVES: u64 = 2;
const DROPOUT: u64 = 3;
const CURRICULUM: u64 = 4;

/// The checkpoint folder of `epoch`.
pub fn checkpoint_dir(out: &Path, epoch: usize) -> PathBuf {
    out.join("checkpoints").join(format!("epoch-{epoch}"))
}

fn latest_checkpoint(out: &Path) -> Option<usize> {
    let entries = std::fs::read_dir(out.join("checkpoints")).ok()?;
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("epoch-")?
                .parse::<usize>()
                .ok()
        })
        .filter(|&e| checkpoint_dir(out, e).join("state.json").is_file())
        .max()
}

/// BM25 rankings of every topic's candidates (pool or corpus), `depth` deep.
pub fn bm25_rankings(split: &SplitData, dataset: &str, depth: usize) -> Rankings {
    let params = Bm25Params::default();
    let analyzer = Analyzer::new(params.language_of(dataset, split.language));
    let index = Bm25Index::build(analyzer, split.docs.iter().map(|d| (&d.doc, d.text.as_str())));
    split
        .topics
        .iter()
        .map(|t| {
            let hits = match &t.pool {
                Some(p) => {
                    let nums: Vec<u32> = p.iter().map(|&d| d as u32).collect();
                    index.search_pool(&t.text, &nums, &params, params.idf, depth)
                }
                None => index.search(&t.text, &params, depth),
            };
            hits.iter()
                .filter_map(|h| split.index.get(&h.doc).copied())
                .collect()
        })
        .collect()
}

struct Log(std::fs::File);

impl Log {
    fn line(&mut self, path: &Path, v: &serde_json::Value) -> Result<()> {
        writeln!(self.0, "{v}").map_err(io_err(path))?;
        self.0.flush().map_err(io_err(path))
    }
}

/// Trains `cfg` on `DATA/datasets/<cfg.data.dataset>` into `out` (see the module documentation).
pub fn train(
    cfg: &TrainConfig,
    data: &Path,
    out: &Path,
    device: &Device,
    opts: &TrainOptions,
) -> Result<Summary> {
    cfg.validate()?;
    std::fs::create_dir_all(out).map_err(io_err(out))?;
    let cfg_text = toml::to_string_pretty(cfg).map_err(|e| Error::Param(format!("config to TOML: {e}")))?;
    let cfg_path = out.join("config.toml");
    let log_path = out.join("train_log.jsonl");
    if opts.restart {
        for p in [out.join("checkpoints"), out.join("model")] {
            if p.exists() {
                std::fs::remove_dir_all(&p).map_err(io_err(&p))?;
            }
        }
        std::fs::remove_file(&log_path).ok();
    }
    let resume_from = latest_checkpoint(out);
    if resume_from.is_some() {
        let old = std::fs::read_to_string(&cfg_path).map_err(io_err(&cfg_path))?;
        if old != cfg_text {
            return Err(Error::Param(format!(
                "{} holds checkpoints of a different configuration ({}); use another name or --restart",
                out.display(),
                cfg_path.display()
            )));
        }
    } else {
        lexbench_core::io::write_atomic(&cfg_path, |w| w.write_all(cfg_text.as_bytes()))?;
    }

    let skip = cfg.data.skip_topics_without_text;
    let mut train_split = SplitData::load_with(data, &cfg.data.dataset, &cfg.data.train_split, true, skip)?;
    if cfg.data.max_train_topics > 0 {
        train_split.topics.truncate(cfg.data.max_train_topics);
    }
    let val = if cfg.data.val_split.is_empty() {
        None
    } else {
        Some(SplitData::load(
            data,
            &cfg.data.dataset,
            &cfg.data.val_split,
            false,
        )?)
    };
    let measure: Measure = cfg
        .eval
        .measure
        .parse()
        .map_err(|e: lexbench_core::Error| Error::Param(e.to_string()))?;
    let pools = match &val {
        Some(v) if v.pooled() => {
            let p = lexbench_core::dataset::DatasetDir::in_data(data, &cfg.data.dataset)?.pools();
            Some(PoolSizes::read(&p)?)
        }
        _ => None,
    };
    let bm25 = (cfg.negatives.bm25 > 0).then(|| {
        bm25_rankings(
            &train_split,
            &cfg.data.dataset,
            cfg.negatives.bm25_depth.max(1) * 4,
        )
    });
    let curriculum = match &cfg.curriculum {
        Some(c) => Some(CurriculumNegatives::new(
            c,
            &train_split,
            data,
            &cfg.data.dataset,
        )?),
        None => None,
    };
    // A cross-encoder over a whole corpus reranks BM25's top 100 at validation.
    let val_rerank = match &val {
        Some(v) if !v.pooled() && cfg.model == super::config::ModelKind::CrossEncoder => {
            Some(bm25_rankings(v, &cfg.data.dataset, 100))
        }
        _ => None,
    };

    let net = Trainable::build(cfg, device)?;
    let vars = net.store.vars();
    let mut opt = AdamW::new(vars.clone(), cfg.optim.clone())?;

    // Every epoch's batch plan depends on the seed alone (topics and positives, not negatives).
    let template = examples(
        &train_split,
        &Default::default(),
        None,
        None,
        &mut SplitMix64::new(0),
    );
    if template.is_empty() {
        return Err(Error::Param(format!(
            "split {} of {} has no training examples",
            cfg.data.train_split, cfg.data.dataset
        )));
    }
    let plans: Vec<Vec<Vec<usize>>> = (0..cfg.schedule.epochs)
        .map(|e| {
            let mut rng = SplitMix64::new(derive_seed(cfg.seed, SHUFFLE, e as u64));
            batches(&template, cfg.schedule.batch_size, &mut rng)
        })
        .collect();
    let mut total_steps: u64 = plans.iter().map(|p| p.len() as u64).sum();
    if cfg.schedule.max_steps > 0 {
        total_steps = total_steps.min(cfg.schedule.max_steps as u64);
    }
    let sched = LinearSchedule {
        peak: cfg.optim.lr,
        warmup: (cfg.schedule.warmup_ratio * total_steps as f64).round() as u64,
        total: total_steps,
    };

    let evaluate_val = |net: &Trainable| -> Result<Option<f64>> {
        let Some(v) = &val else { return Ok(None) };
        let run = net.rank(v, cfg.eval.top_k, val_rerank.as_deref(), 32)?;
        let ev = evaluate(&run, &v.qrels, &[measure], pools.as_ref())?;
        Ok(ev.get(measure))
    };

    let mut state = match resume_from {
        Some(e) => {
            let dir = checkpoint_dir(out, e);
            let p = dir.join("state.json");
            let st: State = lexbench_core::io::read_json(&p)?;
            net.store.load_values(&dir.join("params.safetensors"))?;
            opt.load_state(
                &load_tensors(&dir.join("optimizer.safetensors"), device)?,
                st.step,
            )?;
            // Keep the log lines up to the checkpoint: the interrupted epoch is redone.
            if let Ok(text) = std::fs::read_to_string(&log_path) {
                let kept: String = text
                    .lines()
                    .filter(|l| {
                        serde_json::from_str::<serde_json::Value>(l)
                            .ok()
                            .and_then(|v| v["epoch"].as_u64())
                            .is_some_and(|ep| ep as usize <= st.epoch)
                    })
                    .map(|l| format!("{l}\n"))
                    .collect();
                lexbench_core::io::write_atomic(&log_path, |w| w.write_all(kept.as_bytes()))?;
            }
            tracing::info!("resuming {} after epoch {}", cfg.name, st.epoch);
            st
        }
        None => {
            let zero = evaluate_val(&net)?;
            State {
                epoch: 0,
                step: 0,
                best_epoch: 0,
                best_val: zero,
                zero_shot_val: zero,
                epochs: Vec::new(),
            }
        }
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(io_err(&log_path))?;
    let mut log = Log(file);
    if resume_from.is_none() {
        log.line(
            &log_path,
            &serde_json::json!({"epoch": 0, "event": "eval", "measure": cfg.eval.measure, "val": state.zero_shot_val}),
        )?;
    }
    let meta = |st: &State, epoch: usize| {
        serde_json::json!({
            "name": cfg.name,
            "description": cfg.description,
            "model": cfg.model,
            "base": cfg.base,
            "dataset": cfg.data.dataset,
            "dataset_hash": train_split.dataset_hash,
            "epoch": epoch,
            "measure": cfg.eval.measure,
            "val": st.best_val,
            "seed": cfg.seed,
            "trainable_params": net.trainable_params(),
            "total_params": net.total_params,
            "config": cfg,
        })
    };
    // The selected model, exported to OUT/model with its training metadata.
    let export_model = |st: &State, epoch: usize| {
        super::export::export(
            cfg,
            &net.store,
            net.trainable_params(),
            net.total_params,
            &out.join("model"),
            &meta(st, epoch),
        )
    };
    if resume_from.is_none() && !out.join("model").join(super::export::TRAINING_RECORD).is_file() {
        // The zero-shot model is the best so far: a run that never improves still leaves a model.
        export_model(&state, 0)?;
    }

    let bar = if opts.progress {
        let b = indicatif::ProgressBar::new(total_steps);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} epoch {prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed} / {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b.set_position(state.step);
        b
    } else {
        indicatif::ProgressBar::hidden()
    };

    let mut finished = true;
    for (epoch, plan) in plans.iter().enumerate().skip(state.epoch) {
        if opts.stop_after_epoch.is_some_and(|s| epoch >= s) {
            finished = false;
            break;
        }
        if cfg.schedule.max_steps > 0 && state.step >= cfg.schedule.max_steps as u64 {
            break;
        }
        bar.set_prefix(format!("{}/{}", epoch + 1, cfg.schedule.epochs));
        let t0 = Instant::now();
        let model_rank = if cfg.negatives.model > 0 {
            let depth = cfg.negatives.model_depth
                + train_split
                    .topics
                    .iter()
                    .map(|t| t.positives.len())
                    .max()
                    .unwrap_or(0);
            let run = net.rank(&train_split, depth, None, 32)?;
            Some(rankings_of(&train_split, &run))
        } else {
            None
        };
        if let Some(r) = &model_rank {
            let p = out
                .join("checkpoints")
                .join(format!("ance-negatives-epoch-{}.json", epoch + 1));
            std::fs::create_dir_all(out.join("checkpoints")).map_err(io_err(out))?;
            lexbench_core::io::write_json_pretty(&p, r)?;
        }
        // CuSINeS: difficulty from the model as it is at the start of the epoch (or static scores).
        let draws = match &curriculum {
            Some(c) => {
                let scores = if c.needs_model_scores() {
                    Some(net.candidate_scores(&train_split, 32)?)
                } else {
                    None
                };
                let buckets = c.buckets(&train_split, scores.as_deref())?;
                let progress = epoch as f64 / cfg.schedule.epochs as f64;
                let mut rng = SplitMix64::new(derive_seed(cfg.seed, CURRICULUM, epoch as u64));
                Some(c.draw(
                    &train_split,
                    &buckets,
                    progress,
                    cfg.negatives.curriculum,
                    &mut rng,
                )?)
            }
            None => None,
        };
        let mut rng = SplitMix64::new(derive_seed(cfg.seed, NEGATIVES, epoch as u64));
        let exs: Vec<Example> = examples_with(
            &train_split,
            &cfg.negatives,
            bm25.as_ref(),
            model_rank.as_ref(),
            draws.as_ref(),
            &mut rng,
        );
        let (mut loss_sum, mut steps, mut seen) = (0f64, 0usize, 0usize);
        for batch_ids in plan {
            if cfg.schedule.max_steps > 0 && state.step >= cfg.schedule.max_steps as u64 {
                break;
            }
            let ts = Instant::now();
            dropout::reseed(derive_seed(cfg.seed, DROPOUT, state.step));
            let refs: Vec<&Example> = batch_ids.iter().map(|&i| &exs[i]).collect();
            let batch = Batch::of(&train_split, &refs);
            let loss = net.loss(&batch, true)?;
            let loss_v = f64::from(loss.to_dtype(candle_core::DType::F32)?.to_scalar::<f32>()?);
            if !loss_v.is_finite() {
                return Err(Error::Param(format!(
                    "loss is {loss_v} at step {} (epoch {}): lower the learning rate",
                    state.step,
                    epoch + 1
                )));
            }
            let mut grads = loss.backward()?;
            let norm = clip_grad_norm(&mut grads, &vars, cfg.schedule.max_grad_norm)?;
            let lr = sched.lr(state.step);
            opt.step(&grads, lr)?;
            state.step += 1;
            steps += 1;
            seen += refs.len();
            loss_sum += loss_v;
            let dt = ts.elapsed().as_secs_f64();
            log.line(
                &log_path,
                &serde_json::json!({
                    "epoch": epoch + 1, "step": state.step, "loss": loss_v, "lr": lr,
                    "grad_norm": norm, "examples": refs.len(), "examples_per_s": refs.len() as f64 / dt.max(1e-9),
                }),
            )?;
            bar.set_message(format!(
                "loss {loss_v:.4}, {:.1} ex/s",
                refs.len() as f64 / dt.max(1e-9)
            ));
            bar.inc(1);
        }
        let train_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let val_score = evaluate_val(&net)?;
        let val_s = t1.elapsed().as_secs_f64();
        let stats = EpochStats {
            epoch: epoch + 1,
            steps,
            loss: loss_sum / steps.max(1) as f64,
            val: val_score,
            train_s,
            val_s,
            examples_per_s: seen as f64 / train_s.max(1e-9),
        };
        log.line(
            &log_path,
            &serde_json::json!({"epoch": epoch + 1, "event": "eval", "measure": cfg.eval.measure, "val": val_score, "train_s": train_s}),
        )?;
        state.epochs.push(stats);
        state.epoch = epoch + 1;
        // Select on validation; without one, the last epoch is kept. Ties keep the earlier epoch.
        let better = match (val_score, state.best_val) {
            (Some(v), Some(b)) => v > b,
            (Some(_), None) => true,
            (None, _) => true,
        };
        if better {
            state.best_val = val_score;
            state.best_epoch = epoch + 1;
            export_model(&state, epoch + 1)?;
        }
        let dir = checkpoint_dir(out, epoch + 1);
        let (opt_state, step) = opt.state();
        let st = state.clone();
        lexbench_core::io::write_dir_atomic(&dir, |tmp| -> Result<()> {
            net.store.save(&tmp.join("params.safetensors"))?;
            save_tensors(&tmp.join("optimizer.safetensors"), &opt_state)?;
            debug_assert_eq!(step, st.step);
            lexbench_core::io::write_json_pretty(&tmp.join("state.json"), &st)?;
            Ok(())
        })?;
    }
    bar.finish_and_clear();
    let summary = Summary {
        name: cfg.name.clone(),
        measure: cfg.eval.measure.clone(),
        zero_shot_val: state.zero_shot_val,
        epochs: state.epochs.clone(),
        best_epoch: state.best_epoch,
        best_val: state.best_val,
        trainable_params: net.trainable_params(),
        total_params: net.total_params,
        trainable_pct: 100.0 * net.trainable_params() as f64 / net.total_params.max(1) as f64,
        dataset_hash: train_split.dataset_hash.clone(),
        finished,
    };
    lexbench_core::io::write_json_pretty(&out.join("summary.json"), &summary)?;
    Ok(summary)
}
