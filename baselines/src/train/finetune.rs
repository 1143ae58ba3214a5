//! Fine-tuning an encoder — DPR, ANCE, ColBERT, cross-encoder, the hierarchical article encoder; fully
//! or with PEFT — as an [`Objective`] of the one training loop ([`super::trainer`]), with model
//! selection on the validation split.
//!
//! Output folder (`DATA/models/<name>/` by default): the loop's `config.toml`, `train_log.jsonl` and
//! `checkpoints/`, plus
//! ```text
//! model/                          the best epoch on the validation split (see `export`)
//! summary.json                    per-epoch validation scores and times, the trainable share
//! ```

use std::path::Path;

use candle_core::{Device, Tensor};
use lexbench_core::eval::{Measure, PoolSizes, evaluate};
use serde::{Deserialize, Serialize};

use super::config::{ModelKind, TrainConfig};
use super::data::SplitData;
use super::model::{Batch, Trainable, rankings_of};
use super::negatives::curriculum::CurriculumNegatives;
use super::negatives::{Example, Rankings, bm25_rankings};
use super::trainer::{
    EpochStats, LoopSeeds, LoopSpec, NegativeSources, Objective, ParamGroup, State, TrainOptions, Trainer,
};
use crate::error::{Error, Result};

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

/// The validation split and how it is scored.
pub(crate) struct Validation {
    pub(crate) split: SplitData,
    pub(crate) measure: Measure,
    pub(crate) pools: Option<PoolSizes>,
    /// A cross-encoder over a whole corpus reranks BM25's top 100 at validation.
    pub(crate) rerank: Option<Rankings>,
}

/// Fine-tuning one encoder network.
struct Finetune<'a> {
    cfg: &'a TrainConfig,
    net: Trainable,
    train_split: &'a SplitData,
    val: Option<Validation>,
    /// `OUT/model`.
    model_dir: std::path::PathBuf,
    device: Device,
}

impl Objective for Finetune<'_> {
    fn loss_name(&self) -> (&'static str, &'static str) {
        ("loss", "the learning rate")
    }

    fn param_groups(&self) -> Vec<ParamGroup> {
        vec![ParamGroup {
            vars: self.net.store.vars(),
            optim: self.cfg.optim.clone(),
        }]
    }

    fn save(&self, dir: &Path) -> Result<()> {
        self.net.store.save(&dir.join("params.safetensors"))
    }

    fn load(&mut self, dir: &Path) -> Result<()> {
        self.net.store.load_values(&dir.join("params.safetensors"))
    }

    /// ANCE: the model's own ranking of the training topics' candidates, as it is now.
    fn start_epoch(&mut self, split: &SplitData, _epoch: usize) -> Result<Option<Rankings>> {
        self.refresh_model_negatives(split)
    }

    /// ANCE: as at an epoch's start ([`Self::start_epoch`]).
    fn refresh_model_negatives(&mut self, split: &SplitData) -> Result<Option<Rankings>> {
        if self.cfg.negatives.model == 0 {
            return Ok(None);
        }
        let most_positives = split.topics.iter().map(|t| t.positives.len()).max();
        let depth = self.cfg.negatives.model_depth + most_positives.unwrap_or(0);
        let run = self.net.rank(split, depth, None, 32)?;
        Ok(Some(rankings_of(split, &run)))
    }

    fn candidate_scores(&self, split: &SplitData) -> Result<Vec<Vec<f64>>> {
        self.net.candidate_scores(split, 32)
    }

    fn loss(&self, split: &SplitData, batch: &[&Example], _step: u64) -> Result<Tensor> {
        self.net.loss(&Batch::of(split, batch), true)
    }

    /// Ranks the validation split with the network's inference view (no autograd graph, the fused
    /// inference kernels), built afresh over the current weights.
    fn validate(&self) -> Result<Option<f64>> {
        let Some(v) = &self.val else { return Ok(None) };
        let run = self.net.inference_view(self.cfg, &self.device)?.rank(
            &v.split,
            self.cfg.eval.top_k,
            v.rerank.as_deref(),
            32,
        )?;
        let ev = evaluate(&run, &v.split.qrels, &[v.measure], v.pools.as_ref())?;
        Ok(ev.get(v.measure))
    }

    /// The selected model, exported to `OUT/model` with its training record.
    fn export(&self, state: &State) -> Result<()> {
        let cfg = self.cfg;
        let record = super::export::TrainingRecord {
            base: cfg.base.clone(),
            config: cfg.clone(),
            dataset: cfg.data.dataset.clone(),
            dataset_hash: self.train_split.dataset_hash.clone(),
            description: cfg.description.clone(),
            epoch: state.best_epoch,
            measure: cfg.eval.measure.clone(),
            model: cfg.model,
            name: cfg.name.clone(),
            record_version: super::export::TrainingRecord::VERSION,
            seed: cfg.seed,
            total_params: self.net.total_params,
            trainable_params: self.net.trainable_params(),
            val: state.best_val,
        };
        super::export::export(
            cfg,
            &self.net.store,
            self.net.trainable_params(),
            self.net.total_params,
            &self.model_dir,
            &record,
        )
    }
}

/// The static negatives of `cfg` for `split`: BM25 rankings and the curriculum, when configured.
pub fn negative_sources(cfg: &TrainConfig, split: &SplitData, data: &Path) -> Result<NegativeSources> {
    let dataset = &cfg.data.dataset;
    Ok(NegativeSources {
        cfg: cfg.negatives.clone(),
        bm25: (cfg.negatives.bm25 > 0)
            .then(|| bm25_rankings(split, dataset, cfg.negatives.bm25_depth.max(1) * 4)),
        curriculum: match &cfg.curriculum {
            Some(c) => Some(CurriculumNegatives::new(c, split, data, dataset)?.with_tie_seed(
                crate::train::seeds::derive_seed(
                    cfg.seed,
                    crate::train::seeds::SeedPurpose::CurriculumTies,
                    0,
                ),
            )),
            None => None,
        },
    })
}

/// The configuration as TOML: what `config.toml` holds and a resumed run must match.
pub(crate) fn config_text(cfg: &TrainConfig) -> Result<String> {
    toml::to_string_pretty(cfg).map_err(|e| Error::internal(format!("config to TOML: {e}")))
}

/// `cfg`'s validation split (`data.val_split`) and measure (`eval.measure`); `None` without a split.
pub(crate) fn validation(cfg: &TrainConfig, data: &Path) -> Result<Option<Validation>> {
    let measure: Measure = cfg
        .eval
        .measure
        .parse()
        .map_err(|e: lexbench_core::Error| Error::Param(format!("eval.measure: {e}")))?;
    if cfg.data.val_split.is_empty() {
        return Ok(None);
    }
    let split = SplitData::load(data, &cfg.data.dataset, &cfg.data.val_split, false)?;
    if measure.needs_pool() && !split.pooled() {
        return Err(Error::Param(format!(
            "eval.measure = {:?} needs pools, but dataset {} ranks its whole corpus: choose a cut-off \
             measure such as \"R@100\"",
            cfg.eval.measure, cfg.data.dataset
        )));
    }
    let pools = if split.pooled() {
        let p = lexbench_core::dataset::DatasetDir::in_data(data, &cfg.data.dataset)?.pools();
        Some(PoolSizes::read(&p)?)
    } else {
        None
    };
    let rerank = (!split.pooled() && cfg.model == ModelKind::CrossEncoder)
        .then(|| bm25_rankings(&split, &cfg.data.dataset, 100));
    Ok(Some(Validation {
        split,
        measure,
        pools,
        rerank,
    }))
}

/// Fine-tunes `cfg` on `DATA/datasets/<cfg.data.dataset>` into `out` (see the module documentation).
pub fn train(
    cfg: &TrainConfig,
    data: &Path,
    out: &Path,
    device: &Device,
    opts: &TrainOptions,
) -> Result<Summary> {
    cfg.validate()?;
    let identity = config_text(cfg)?;
    let skip = cfg.data.skip_topics_without_text;
    let mut train_split = SplitData::load_with(data, &cfg.data.dataset, &cfg.data.train_split, true, skip)?;
    cfg.eval
        .check_depth(train_split.pooled(), train_split.docs.len())?;
    if cfg.data.max_train_topics > 0 {
        train_split.topics.truncate(cfg.data.max_train_topics);
    }
    let val = validation(cfg, data)?;
    let negatives = negative_sources(cfg, &train_split, data)?;
    let objective = Finetune {
        cfg,
        net: Trainable::build(cfg, device)?,
        train_split: &train_split,
        val,
        model_dir: out.join("model"),
        device: device.clone(),
    };
    let spec = LoopSpec {
        out,
        identity,
        seed: cfg.seed,
        seeds: LoopSeeds::ENCODER,
        split: &train_split,
        what: format!("split {} of {}", cfg.data.train_split, cfg.data.dataset),
        epochs: cfg.schedule.epochs,
        batch_size: cfg.schedule.batch_size,
        warmup_ratio: cfg.schedule.warmup_ratio,
        max_steps: cfg.schedule.max_steps,
        max_grad_norm: cfg.schedule.max_grad_norm,
        measure: cfg.eval.measure.clone(),
        negatives: &negatives,
        device,
    };
    let mut trainer = Trainer::new(spec, objective)?;
    let outcome = trainer.run(opts)?;
    let net = &trainer.objective().net;
    let state = outcome.state;
    let summary = Summary {
        name: cfg.name.clone(),
        measure: cfg.eval.measure.clone(),
        zero_shot_val: state.zero_shot_val,
        epochs: state.epochs,
        best_epoch: state.best_epoch,
        best_val: state.best_val,
        trainable_params: net.trainable_params(),
        total_params: net.total_params,
        trainable_pct: 100.0 * net.trainable_params() as f64 / net.total_params.max(1) as f64,
        dataset_hash: train_split.dataset_hash.clone(),
        finished: outcome.finished,
    };
    lexbench_core::io::write_json_pretty(&out.join("summary.json"), &summary)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    //! BM25 reads the dataset's texts as they are: the text prefixes (`[data] query_prefix` /
    //! `passage_prefix`) are the network's, put before the texts inside [`Trainable`], never BM25's.
    //! The static negative sources of a config with prefixes are those of the same config without,
    //! and not the ones BM25 would rank from prefixed texts (the check is not vacuous).

    use lexbench_core::dataset::Language;
    use lexbench_core::testing::TinyDataset;

    use super::*;

    fn config(query_prefix: &str, passage_prefix: &str) -> TrainConfig {
        let text = format!(
            r#"
name = "bm25-prefixes"
model = "dpr"
base = "unused"
seed = 1
[data]
dataset = "mini"
val_split = ""
query_prefix = {query_prefix:?}
passage_prefix = {passage_prefix:?}
[negatives]
bm25 = 2
bm25_depth = 3
[schedule]
epochs = 1
"#
        );
        toml::from_str(&text).expect("test config")
    }

    #[test]
    fn bm25_negatives_ignore_the_text_prefixes() -> Result<()> {
        let data = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-bm25-prefixes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        TinyDataset::new("mini")
            .language(Language::English)
            .doc("d1", "the right to a fair trial")
            .doc("d2", "the prohibition of torture")
            .doc("d3", "freedom of expression and of the press")
            .doc("d4", "the right to respect for private life")
            .doc("d5", "a fair hearing within a reasonable time")
            .topic("t1", "q1", "fair trial", &["d1"], "train")
            .topic("t2", "q2", "private life", &["d4"], "train")
            .topic("t3", "q3", "freedom of the press", &["d3"], "train")
            .write_in(&data)?;
        let split = SplitData::load(&data, "mini", "train", true)?;
        let sources = |cfg: &TrainConfig| -> Result<Option<Rankings>> {
            Ok(negative_sources(cfg, &split, &data)?.bm25)
        };
        let plain = sources(&config("", ""))?;
        assert!(plain.is_some());
        assert_eq!(sources(&config("torture: ", "passage: "))?, plain);
        assert_eq!(sources(&config("query: ", "passage: "))?, plain);
        // BM25 over texts that carry the query prefix would rank d2 for every topic.
        let mut prefixed = split.clone();
        for t in &mut prefixed.topics {
            t.text = format!("torture: {}", t.text);
        }
        assert_ne!(Some(bm25_rankings(&prefixed, "mini", 12)), plain);
        assert_eq!(Some(bm25_rankings(&split, "mini", 12)), plain);
        std::fs::remove_dir_all(&data).ok();
        Ok(())
    }
}
