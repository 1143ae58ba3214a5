//! Training-step throughput, for `lexbench bench-encoder --train-step`: one DPR step (forward over
//! queries and passages, NLL over each query's positive and negatives, backward, AdamW) in candle
//! and, in the same run, in PyTorch (`scripts/bench_train_step.py`, the same model folder, texts,
//! lengths, batch, loss and optimiser settings, thread count).
//!
//! The step: `batch` examples, each a query, one positive and `negatives` negatives, every text
//! truncated to `max_len` tokens (the passages are long enough that every text has exactly
//! `max_len`); mean pooling, cosine × 20 (the MiniLM presets' scoring), no in-batch negatives;
//! full fine-tuning with dropout on (train mode); AdamW at lr 2e-5, weight decay 0.01. Timed: the
//! whole step. candle tokenises inside its loss, so its figure includes tokenisation (a few
//! milliseconds of a step of seconds); PyTorch's is timed on pre-tokenised tensors: the comparison
//! leans, slightly, against candle.

use std::path::Path;
use std::time::Instant;

use super::config::TrainConfig;
use super::model::{Batch, Trainable};
use super::optim::{AdamW, AdamWConfig};
use crate::encoder::bench::{passages, run_reference_script};
use crate::error::{Error, Result};

/// What one training-step measurement runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSettings {
    /// Examples per step.
    pub batch: usize,
    /// Negatives per example.
    pub negatives: usize,
    /// Tokens per text.
    pub max_len: usize,
    /// Timed steps after one warm-up step (the best counts).
    pub steps: usize,
    /// CPU threads (candle uses all available; PyTorch is told this many).
    pub threads: usize,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            batch: 8,
            negatives: 5,
            max_len: 128,
            steps: 3,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// One side's training-step measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct StepThroughput {
    /// Training examples per second (best step).
    pub examples_per_s: f64,
    /// Seconds of the best step.
    pub seconds: f64,
    /// What ran.
    pub label: String,
}

/// The texts of one step: `batch` queries, then `batch · (1 + negatives)` passages.
pub fn step_texts(s: &StepSettings) -> (Vec<String>, Vec<String>) {
    let all = passages(s.batch * (2 + s.negatives));
    let (q, p) = all.split_at(s.batch);
    (q.to_vec(), p.to_vec())
}

/// Times the candle step on `model` (a HuggingFace BERT folder) on `device`.
pub fn time_candle_step(model: &Path, device: &crate::Device, s: &StepSettings) -> Result<StepThroughput> {
    if s.batch == 0 || s.steps == 0 || s.max_len < 4 {
        return Err(Error::Param(format!(
            "train-step bench: batch and steps must be at least 1 and max_len at least 4, got {}, {} and {}",
            s.batch, s.steps, s.max_len
        )));
    }
    let text = format!(
        r#"
name = "bench"
model = "dpr"
base = {base}
seed = 1
[data]
dataset = "bench"
max_query_len = {len}
max_doc_len = {len}
[negatives]
random = {neg}
[schedule]
epochs = 1
batch_size = {batch}
[biencoder]
pooling = "mean"
cosine = true
scale = 20.0
in_batch = false
"#,
        base = toml::Value::String(model.display().to_string()),
        len = s.max_len,
        neg = s.negatives,
        batch = s.batch
    );
    let cfg: TrainConfig =
        toml::from_str(&text).map_err(|e| Error::internal(format!("bench config: {e}")))?;
    let net = Trainable::build(&cfg, device)?;
    let optim = AdamWConfig {
        lr: 2e-5,
        weight_decay: 0.01,
        ..AdamWConfig::default()
    };
    let mut adamw = AdamW::new(net.store.vars(), optim)?;
    let (queries, passages) = step_texts(s);
    let per = 1 + s.negatives;
    let batch = Batch {
        queries: queries.iter().map(String::as_str).collect(),
        passages: passages.iter().map(String::as_str).collect(),
        positive: (0..s.batch).map(|i| i * per).collect(),
        negatives: (0..s.batch)
            .map(|i| (i * per + 1..(i + 1) * per).collect())
            .collect(),
        is_positive_of: vec![Default::default(); s.batch],
    };
    let step = |adamw: &mut AdamW| -> Result<()> {
        let loss = net.loss(&batch, true)?;
        let grads = loss.backward()?;
        adamw.step(&grads, 2e-5)
    };
    step(&mut adamw)?;
    let mut best = f64::INFINITY;
    for _ in 0..s.steps {
        let t = Instant::now();
        step(&mut adamw)?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    let seconds = best;
    Ok(StepThroughput {
        examples_per_s: s.batch as f64 / seconds,
        seconds,
        label: format!(
            "candle (lexbench, {device:?}, {} build)",
            if cfg!(debug_assertions) { "dev" } else { "release" }
        ),
    })
}

/// Runs `scripts/bench_train_step.py` with `python` on the same model, texts and settings.
pub fn time_pytorch_step(
    python: &str,
    script: &Path,
    model: &Path,
    s: &StepSettings,
) -> Result<StepThroughput> {
    let (queries, passages) = step_texts(s);
    let args = [
        "--model".to_owned(),
        model.display().to_string(),
        "--negatives".to_owned(),
        s.negatives.to_string(),
        "--max-len".to_owned(),
        s.max_len.to_string(),
        "--threads".to_owned(),
        s.threads.to_string(),
        "--steps".to_owned(),
        s.steps.to_string(),
    ];
    let input = serde_json::json!({"queries": queries, "passages": passages});
    let v = run_reference_script(python, script, &args, "texts", &input)?;
    let num = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok(StepThroughput {
        examples_per_s: num("examples_per_s"),
        seconds: num("seconds"),
        label: format!(
            "PyTorch {} ({} threads)",
            v["torch"].as_str().unwrap_or("?"),
            v["threads"]
        ),
    })
}

/// Measures the candle step on `device` and (when `python` is given) PyTorch's on the CPU; the
/// report lines.
pub fn run(
    model: &Path,
    device: &crate::Device,
    python: Option<&str>,
    script: &Path,
    s: &StepSettings,
) -> Result<Vec<String>> {
    let mut lines = vec![format!(
        "training step: DPR, {}, batch {} × (query + 1 positive + {} negatives) of {} tokens, AdamW, {} threads, best of {}",
        model.display(),
        s.batch,
        s.negatives,
        s.max_len,
        s.threads,
        s.steps
    )];
    let line = |t: &StepThroughput| {
        format!(
            "{}: {:.2} examples/s ({:.2} s per step)",
            t.label, t.examples_per_s, t.seconds
        )
    };
    let ours = time_candle_step(model, device, s)?;
    lines.push(line(&ours));
    if let Some(py) = python {
        match time_pytorch_step(py, script, model, s) {
            Ok(theirs) => {
                lines.push(line(&theirs));
                lines.push(format!(
                    "training step candle / PyTorch: {:.2}",
                    ours.examples_per_s / theirs.examples_per_s
                ));
            }
            Err(e) => lines.push(format!(
                "PyTorch: unavailable ({})",
                lexbench_core::error::chain(&e)
            )),
        }
    }
    Ok(lines)
}
