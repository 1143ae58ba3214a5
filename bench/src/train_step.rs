//! Training-step throughput, for `lexbench-bench --train-step`: one DPR step (forward over
//! queries and passages, NLL over each query's positive and negatives, backward, AdamW) in candle
//! and, in the same run, in PyTorch (`scripts/bench_train_step.py`, the same model folder, texts,
//! lengths, batch, loss and optimiser settings, thread count), measured as the encoder's workloads
//! are ([`crate::harness::BenchReport::measure`]): a task, `train-step`, whose engines
//! alternate step by step (candle, PyTorch, candle, …) for `pairs` rounds after one untimed warm-up
//! step each, with the same pause before every step
//! ([`SETTLE`](crate::harness::SETTLE)); per engine the median and best examples/s, GFLOP/s
//! and its share of the peak (and of the measured FMA throughput, in a release build); per pair the
//! candle / PyTorch ratio, with median and range.
//!
//! The step: `batch` examples, each a query, one positive and `negatives` negatives, every text
//! truncated to `max_len` tokens (the passages are long enough that every text has exactly
//! `max_len`); mean pooling, cosine × 20 (the MiniLM presets' scoring), no in-batch negatives;
//! full fine-tuning with dropout on (train mode); AdamW at lr 2e-5, weight decay 0.01. Timed: the
//! whole step. candle tokenises inside its loss, so its figure includes tokenisation (a few
//! milliseconds of a step of seconds); PyTorch's is timed on pre-tokenised tensors: the comparison
//! leans, slightly, against candle. Its FLOPs: [`step_flops`] (3 × the forward's, an approximation:
//! [`STEP_FLOP_FORMULA`]). Both engines' check is the loss of the step's batch before the first
//! step, dropout off: the same weights, texts and loss give the same value.

use std::path::Path;

use crate::harness::{
    CandleEngine, CandleTask, TRANSFORMER_FLOP_FORMULA, TaskSpec, candle_label, encoder_flops, passages,
};
use lexbench_baselines::encoder::BertConfig;
use lexbench_baselines::encoder::tokenize::as_strs;
use lexbench_baselines::error::{Error, Result};
use lexbench_baselines::train::config::TrainConfig;
use lexbench_baselines::train::model::{Batch, Net, Trainable};
use lexbench_baselines::train::optim::{AdamW, AdamWConfig};

/// The name of the training step's task in the report.
pub const TASK: &str = "train-step";

/// What one training-step measurement runs (the rounds and threads are the bench's:
/// [`crate::harness::BenchSettings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSettings {
    /// Examples per step (default 8).
    pub batch: usize,
    /// Negatives per example (default 5).
    pub negatives: usize,
    /// Tokens per text (default 128).
    pub max_len: usize,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            batch: 8,
            negatives: 5,
            max_len: 128,
        }
    }
}

impl StepSettings {
    /// Refuses an empty batch and a `max_len` below 4.
    pub fn validate(&self) -> Result<()> {
        if self.batch == 0 || self.max_len < 4 {
            return Err(Error::Param(format!(
                "train-step bench: batch must be at least 1 and max_len at least 4, got {} and {}",
                self.batch, self.max_len
            )));
        }
        Ok(())
    }
}

/// How [`step_flops`] counts.
pub const STEP_FLOP_FORMULA: &str = "3 × the forward FLOPs of every sequence of the step (queries and passages, each at \
     its own token length), forward + backward ≈ 3 × forward (the backward pass's gradients of activations and of \
     weights cost about two forwards: an approximation); the loss, pooling and AdamW are not counted; the forward";

/// FLOPs of one training step over sequences of `query_tokens` and `passage_tokens` tokens:
/// 3 × [`encoder_flops`] of each ([`STEP_FLOP_FORMULA`]).
pub fn step_flops(cfg: &BertConfig, query_tokens: &[usize], passage_tokens: &[usize]) -> f64 {
    3.0 * query_tokens
        .iter()
        .chain(passage_tokens)
        .map(|&t| encoder_flops(cfg, t))
        .sum::<f64>()
}

/// The texts of one step: `batch` queries, then `batch · (1 + negatives)` passages.
pub fn step_texts(s: &StepSettings) -> (Vec<String>, Vec<String>) {
    let all = passages(s.batch * (2 + s.negatives));
    let (q, p) = all.split_at(s.batch);
    (q.to_vec(), p.to_vec())
}

/// The network and texts the candle step runs; the task borrows it.
pub struct StepSetup {
    net: Trainable,
    queries: Vec<String>,
    passages: Vec<String>,
    settings: StepSettings,
    device: lexbench_baselines::Device,
}

/// Builds the DPR network of the step from `model` (a HuggingFace BERT folder) on `device`.
pub fn load(model: &Path, device: &lexbench_baselines::Device, s: &StepSettings) -> Result<StepSetup> {
    s.validate()?;
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
    let (queries, passages) = step_texts(s);
    Ok(StepSetup {
        net,
        queries,
        passages,
        settings: s.clone(),
        device: device.clone(),
    })
}

/// Token lengths of the step's queries and passages, as its loss tokenises them (prefixes, each
/// encoder's truncation).
fn token_lengths(setup: &StepSetup) -> Result<(Vec<usize>, Vec<usize>)> {
    let Net::Bi {
        query_tok, doc_tok, ..
    } = &setup.net.net
    else {
        return Err(Error::internal(
            "train-step bench: the DPR step is not a bi-encoder",
        ));
    };
    let prefixes = setup.net.prefixes();
    let lengths = |tok: &lexbench_baselines::encoder::TextTokenizer,
                   texts: Vec<std::borrow::Cow<'_, str>>| {
        Ok::<_, Error>(
            tok.encode(&as_strs(&texts))?
                .iter()
                .map(|t| t.ids.len())
                .collect::<Vec<_>>(),
        )
    };
    let q: Vec<&str> = setup.queries.iter().map(String::as_str).collect();
    let p: Vec<&str> = setup.passages.iter().map(String::as_str).collect();
    Ok((
        lengths(query_tok, prefixes.queries(&q))?,
        lengths(doc_tok, prefixes.passages(&p))?,
    ))
}

/// The `train-step` task: candle's engine (one whole step per pass: loss in train mode, backward,
/// AdamW), its check (the loss before any step, dropout off) and PyTorch's input (the texts,
/// negatives, `max_len`).
pub fn task(setup: &StepSetup) -> Result<CandleTask<'_>> {
    let s = &setup.settings;
    let per = 1 + s.negatives;
    let batch = Batch {
        queries: setup.queries.iter().map(String::as_str).collect(),
        passages: setup.passages.iter().map(String::as_str).collect(),
        positive: (0..s.batch).map(|i| i * per).collect(),
        negatives: (0..s.batch)
            .map(|i| (i * per + 1..(i + 1) * per).collect())
            .collect(),
        is_positive_of: vec![Default::default(); s.batch],
    };
    let check = vec![setup.net.loss(&batch, false)?.to_scalar::<f32>()?];
    let (q_len, p_len) = token_lengths(setup)?;
    let sequences = q_len.len() + p_len.len();
    let mean_tokens = q_len.iter().chain(&p_len).sum::<usize>() as f64 / sequences.max(1) as f64;
    let flops = step_flops(&setup.net.bert, &q_len, &p_len);
    let optim = AdamWConfig {
        lr: 2e-5,
        weight_decay: 0.01,
        ..AdamWConfig::default()
    };
    let mut adamw = AdamW::new(setup.net.store.vars(), optim)?;
    let net = &setup.net;
    let python = serde_json::json!({
        "kind": "train_step",
        "queries": setup.queries,
        "passages": setup.passages,
        "negatives": s.negatives,
        "max_len": s.max_len,
    });
    Ok(CandleTask {
        spec: TaskSpec {
            name: TASK.into(),
            description: format!(
                "one DPR training step: {} examples × (query + 1 positive + {} negatives) = {sequences} sequences \
                 of at most {} tokens, mean pooling, cosine × 20, NLL, backward, AdamW (lr 2e-5, weight decay \
                 0.01), dropout on; candle's step includes tokenisation; check: the loss before the first step, \
                 dropout off",
                s.batch, s.negatives, s.max_len
            ),
            item: "example".into(),
            unit: "examples".into(),
            items: s.batch,
            flops,
            flop_formula: format!("{STEP_FLOP_FORMULA}: {TRANSFORMER_FLOP_FORMULA}"),
            mean_tokens,
        },
        engines: vec![CandleEngine {
            name: "candle".into(),
            label: candle_label(&setup.device),
            device: setup.device.clone(),
            pass: Box::new(move || {
                let grads = net.loss(&batch, true)?.backward()?;
                adamw.step(&grads, 2e-5)
            }),
        }],
        check,
        python: Some(python),
        real: None,
    })
}

#[cfg(test)]
mod tests {
    //! Properties: a step's FLOPs are 3 × the forward FLOPs of each query and passage at its own
    //! length (a hand count on a tiny config, and MiniLM's default step: 8 × 7 sequences of 128
    //! tokens, 3 × 56 × 2.869 GFLOP); the step's texts are `batch` queries and `batch · (1 +
    //! negatives)` passages, all different; settings refuse an empty batch and a `max_len` below 4.
    use super::*;

    fn cfg(layers: usize, hidden: usize, intermediate: usize) -> BertConfig {
        BertConfig {
            num_hidden_layers: layers,
            hidden_size: hidden,
            intermediate_size: intermediate,
            ..BertConfig::tiny()
        }
    }

    #[test]
    fn a_steps_flops_are_three_forwards_of_each_sequence() {
        // L 2, H 4, I 8: per layer 8·T·16 + 4·T²·4 + 4·T·32 = 256·T + 16·T².
        let c = cfg(2, 4, 8);
        let forward = |t: f64| 2.0 * (256.0 * t + 16.0 * t * t);
        assert_eq!(forward(3.0), 2.0 * 912.0);
        // Queries of 3 and 5 tokens, passages of 6, 6 and 2.
        let want = 3.0 * (forward(3.0) + forward(5.0) + 2.0 * forward(6.0) + forward(2.0));
        assert_eq!(step_flops(&c, &[3, 5], &[6, 6, 2]), want);
        // Each sequence at its own length: not the mean length's.
        assert_ne!(
            step_flops(&c, &[3, 5], &[6, 6, 2]),
            step_flops(&c, &[4, 4], &[4, 4, 6])
        );
        assert_eq!(step_flops(&c, &[], &[]), 0.0);
        // MiniLM's default step: 482 GFLOP.
        let minilm = step_flops(&cfg(6, 384, 1536), &[128; 8], &[128; 48]);
        assert!((minilm / 1e9 - 3.0 * 56.0 * 2.869).abs() < 0.2, "{minilm}");
    }

    #[test]
    fn a_step_has_a_query_and_its_passages_per_example() {
        let s = StepSettings {
            batch: 3,
            negatives: 2,
            ..StepSettings::default()
        };
        let (q, p) = step_texts(&s);
        assert_eq!((q.len(), p.len()), (3, 9));
        let mut all: Vec<&String> = q.iter().chain(&p).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 12);
    }

    #[test]
    fn settings_refuse_an_empty_batch_and_short_texts() {
        assert!(StepSettings::default().validate().is_ok());
        let empty = StepSettings {
            batch: 0,
            ..StepSettings::default()
        };
        assert!(empty.validate().unwrap_err().to_string().contains("batch"));
        let short = StepSettings {
            max_len: 3,
            ..StepSettings::default()
        };
        assert!(short.validate().unwrap_err().to_string().contains("max_len"));
    }
}
