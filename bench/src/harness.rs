//! Encoder throughput, for `lexbench-bench` and `cargo bench -p lexbench-bench --bench
//! encoder`: candle against PyTorch and ONNX Runtime on the same model folder, token ids, batches and
//! thread count, in the same run, engines alternating.
//!
//! - A run opens with the machine report ([`Machine`]: CPU, the vector path gemm takes, the measured
//!   clock, the FP32 FMA peak) and the load average, and closes with the load average again
//!   ([`BenchReport`]).
//! - A task ([`CandleTask`], [`TaskSpec`]) is one workload: encoding passages ([`encode_task`]), or,
//!   built by the command line from the scorers, cross-encoder pairs over a pool and ColBERT
//!   documents and MaxSim; or real paragraphs of a corpus through the batching `run dense` gives,
//!   against sentence-transformers' `encode` ([`real`]: token lengths, padding, tokens/s); or one
//!   layer's matrix products alone at the encoder's shapes ([`gemm`]: GFLOP/s per shape against the
//!   peak and the measured FMA throughput, and a layer total). Its FLOPs come from the model's config
//!   ([`transformer_flops`], formula [`TRANSFORMER_FLOP_FORMULA`]). One DPR training step is a task
//!   too, built a layer above (`train::bench`) and measured the same way.
//! - Engines alternate, pass by pass: candle, PyTorch, ONNX Runtime, candle, … for `pairs` rounds
//!   after one untimed warm-up pass each, with a 200 ms pause before every pass so that no
//!   engine's spinning threads overlap the next one. The Python engines live in one process
//!   (`bench/scripts/bench_encoder.py`) that keeps the model loaded and times one pass per request
//!   ([`PythonSide`]). Each pair gives a ratio candle / other ([`pair_stats`]: per pair, median,
//!   min–max).
//! - Each engine's figure: items/s (median over rounds, and best) → achieved GFLOP/s (FLOPs of
//!   the task ÷ seconds) → share of the peak of its vector path. Each Python engine's outputs on the
//!   first and last batch are compared with candle's (max |Δ|): the engines did the same work.
//!
//! Every engine times the forward pass and what the task adds (pooling, normalisation, head,
//! projection) on pre-tokenised, longest-padded batches; tokenisation is excluded, except in the real
//! task, where candle's `SentenceEncoder::embed` and sentence-transformers' `encode` are timed whole.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::machine::{CpuTimes, Isa, Machine, VectorPath, cpu_times, loadavg, median};
use crate::{gemm, real};
use lexbench_baselines::encoder::{BertConfig, Pooling, SentenceEncoder, Tokens};
use lexbench_baselines::error::{Error, Result, io_err};

/// Deterministic English passages of about 200 words (well over 128 tokens).
pub fn passages(n: usize) -> Vec<String> {
    const S: [&str; 8] = [
        "The applicant complained under Article 6 of the Convention about the length of the proceedings before the domestic courts.",
        "The Government contested that argument and submitted that the applicant had failed to exhaust domestic remedies.",
        "The Court reiterates that the reasonableness of the length of proceedings must be assessed in the light of the circumstances of the case.",
        "In the present case the period to be taken into consideration began when the applicant lodged his civil claim with the regional court.",
        "Having regard to its case-law on the subject, the Court considers that the length of the proceedings was excessive and failed to meet the requirement.",
        "The applicant also relied on Article 13, alleging that he had no effective remedy in respect of his complaint under Article 6.",
        "The Court notes that this complaint is not manifestly ill-founded within the meaning of Article 35 and is not inadmissible on any other grounds.",
        "There has accordingly been a violation of Article 6 § 1 of the Convention, and the Court awards the applicant a sum in respect of non-pecuniary damage.",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|i| {
            let mut p = format!("Passage {i}.");
            for _ in 0..8 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                p.push(' ');
                p.push_str(S[(state >> 33) as usize % S.len()]);
            }
            p
        })
        .collect()
}

/// How [`transformer_flops`] counts.
pub const TRANSFORMER_FLOP_FORMULA: &str = "L·(8·T·H² + 4·T²·H + 4·T·H·I) per sequence of T tokens: per layer the Q, K, V \
     and output projections 4·2·T·H², the scores Q·Kᵀ and probabilities·V 2·2·T²·H (all heads), the \
     feed-forward up and down 2·2·T·H·I; a multiply-add counts 2; embeddings, biases, layer norms, softmax, \
     GELU and pooling are not counted";

/// FLOPs of one forward pass of a BERT-style encoder over one sequence of `tokens` tokens
/// ([`TRANSFORMER_FLOP_FORMULA`]); all-MiniLM-L6-v2 (L 6, H 384, I 1536) at 128 tokens:
/// 2.87 GFLOP.
pub fn transformer_flops(layers: usize, hidden: usize, intermediate: usize, tokens: usize) -> f64 {
    let (l, h, i, t) = (layers as f64, hidden as f64, intermediate as f64, tokens as f64);
    l * (8.0 * t * h * h + 4.0 * t * t * h + 4.0 * t * h * i)
}

/// [`transformer_flops`] of `cfg`'s encoder.
pub fn encoder_flops(cfg: &BertConfig, tokens: usize) -> f64 {
    transformer_flops(
        cfg.num_hidden_layers,
        cfg.hidden_size,
        cfg.intermediate_size,
        tokens,
    )
}

/// Candle's per-round ratio against another engine's, from the seconds of each round: candle's
/// rate over the other's, `other_seconds / candle_seconds`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairStats {
    /// One ratio per round, in order.
    pub per_pair: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

/// [`PairStats`] of rounds where engine A took `a[i]` seconds and B `b[i]` for the same work: the
/// ratio of A's rate to B's, `b[i] / a[i]`, per round; `None` without a complete round.
pub fn pair_stats(a: &[f64], b: &[f64]) -> Option<PairStats> {
    let per_pair: Vec<f64> = a.iter().zip(b).map(|(a, b)| b / a).collect();
    if per_pair.is_empty() {
        return None;
    }
    Some(PairStats {
        median: median(&per_pair),
        min: per_pair.iter().copied().fold(f64::INFINITY, f64::min),
        max: per_pair.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        per_pair,
    })
}

/// What is measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BenchSettings {
    /// Passages of the encode task (default 256).
    pub passages: usize,
    /// Sequences per forward pass (default 32).
    pub batch: usize,
    /// Truncation length in tokens (default 128; ColBERT's `doc_maxlen`).
    pub max_len: usize,
    /// Threads of every engine (default candle's: `RAYON_NUM_THREADS` or every logical CPU);
    /// PyTorch and ONNX Runtime are told this many.
    pub threads: usize,
    /// Timed rounds, each one pass of every engine (default 5).
    pub pairs: usize,
    /// Paragraphs in the cross-encoder and ColBERT pool (default 100).
    pub pool: usize,
    /// Queries per ColBERT MaxSim pass (default 20).
    pub queries: usize,
    /// Run ONNX Runtime beside PyTorch (default true).
    pub ort: bool,
    /// Also time candle with the encoder's fast paths off (a plain candle port), encode task only
    /// (default false).
    pub plain: bool,
    /// Paragraphs of the real task, the first of the corpus in file order (default 2000).
    pub real_passages: usize,
    /// Truncation length of the real task in tokens (default 256; the command line gives `run
    /// dense`'s default, the model's `max_seq_length`, else 256).
    pub real_max_len: usize,
    /// Calls of each product per timed pass of the gemm tasks (default 10).
    pub gemm_repeats: usize,
    /// Run the Python engines under the allocator policy `lexbench` runs under (glibc keeps and
    /// reuses freed memory: `MALLOC_MMAP_MAX_=0`, `MALLOC_TRIM_THRESHOLD_=-1`, the environment names of
    /// what `lexbench_engine::heap::keep_freed_memory` sets), not glibc's defaults (default false).
    /// With the defaults PyTorch maps, faults in and zeroes a fresh block for each large tensor; on
    /// a KVM guest of an Intel Xeon that cost its training step 30–50 % (bench/LOG.md, "Pages").
    pub peer_kept_memory: bool,
}

impl Default for BenchSettings {
    fn default() -> Self {
        Self {
            passages: 256,
            batch: 32,
            max_len: 128,
            threads: candle_core::utils::get_num_threads(),
            pairs: 5,
            pool: 100,
            queries: 20,
            ort: true,
            plain: false,
            real_passages: 2000,
            real_max_len: 256,
            gemm_repeats: 10,
            peer_kept_memory: false,
        }
    }
}

impl BenchSettings {
    /// Refuses zero counts and a `max_len` or `real_max_len` below 4.
    pub fn validate(&self) -> Result<()> {
        for (what, v) in [
            ("passages", self.passages),
            ("batch", self.batch),
            ("threads", self.threads),
            ("pairs", self.pairs),
            ("pool", self.pool),
            ("queries", self.queries),
            ("real_passages", self.real_passages),
            ("gemm_repeats", self.gemm_repeats),
        ] {
            if v == 0 {
                return Err(Error::Param(format!("bench {what} must be at least 1, got 0")));
            }
        }
        for (what, v) in [("max_len", self.max_len), ("real_max_len", self.real_max_len)] {
            if v < 4 {
                return Err(Error::Param(format!("bench {what} must be at least 4, got {v}")));
            }
        }
        Ok(())
    }
}

/// One workload, as the report names and counts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskSpec {
    /// `encode`, `cross`, `colbert-docs`, `colbert-maxsim`, `real`, `gemm-qkv`, ….
    pub name: String,
    /// What one pass does, in words.
    pub description: String,
    /// What an item is (`passage`, `pair`, `document`, `query`, `product`, `call`).
    pub item: String,
    /// Items, plural (`passages`, …).
    pub unit: String,
    /// Items per pass.
    pub items: usize,
    /// FLOPs of one pass.
    pub flops: f64,
    /// How `flops` is counted.
    pub flop_formula: String,
    /// Mean tokens per sequence (after truncation).
    pub mean_tokens: f64,
}

/// A candle engine's timed pass.
pub struct CandleEngine<'a> {
    /// Short name (`candle`, `candle-plain`).
    pub name: String,
    /// What ran.
    pub label: String,
    /// One pass over the task's batches.
    pub pass: Box<dyn FnMut() -> Result<()> + 'a>,
    /// Where the pass runs: a timed pass ends when this device has finished its work
    /// (`synchronize`: a no-op on the CPU; on CUDA the kernels are launched asynchronously).
    pub device: candle_core::Device,
}

impl CandleEngine<'_> {
    /// One pass, until the device has finished it.
    fn run_synced(&mut self) -> Result<()> {
        (self.pass)()?;
        self.device.synchronize()?;
        Ok(())
    }
}

/// A task with candle's engines, candle's check outputs and the Python side's input.
pub struct CandleTask<'a> {
    /// The workload.
    pub spec: TaskSpec,
    /// Candle's engines; the first is "candle", the one every ratio is taken against.
    pub engines: Vec<CandleEngine<'a>>,
    /// Candle's outputs on the first and last batch (see `bench/scripts/bench_encoder.py`, `check_of`).
    pub check: Vec<f32>,
    /// The task for `bench/scripts/bench_encoder.py` (`kind`, token ids, weights), or `None` for candle
    /// only.
    pub python: Option<serde_json::Value>,
    /// The real task's lengths, batching and vector check ([`real::real_task`]); `None` for the
    /// others, whose check is compared value by value.
    pub real: Option<real::RealCheck>,
}

/// `[ids, segment ids, mask]` per sequence, one array per batch of `batch`: the token ids of
/// `bench/scripts/bench_encoder.py`'s input.
pub fn batches_json(seqs: &[Tokens], batch: usize) -> serde_json::Value {
    serde_json::Value::Array(
        seqs.chunks(batch.max(1))
            .map(|b| serde_json::json!(b.iter().map(seq_json).collect::<Vec<_>>()))
            .collect(),
    )
}

/// `[ids, segment ids, mask]` of one sequence.
pub fn seq_json(t: &Tokens) -> serde_json::Value {
    serde_json::json!([t.ids, t.type_ids, t.mask])
}

/// Rows of each checked batch in the encode task's check (32 × 384 floats would bloat the protocol).
const CHECK_ROWS: usize = 4;

/// The encode task: `s.passages` of [`passages`] through `enc` (forward, pooling, the folder's
/// modules, normalisation) in batches of `s.batch`; with `plain`, a second candle engine on that
/// encoder (a clone with the fast paths off).
pub fn encode_task<'a>(
    enc: &'a SentenceEncoder,
    plain: Option<&'a SentenceEncoder>,
    s: &BenchSettings,
) -> Result<CandleTask<'a>> {
    let texts = passages(s.passages);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let toks = enc.tokenizer().encode(&refs)?;
    let cfg = enc.model().config();
    let flops = toks.iter().map(|t| encoder_flops(cfg, t.ids.len())).sum();
    let mean_tokens = toks.iter().map(|t| t.ids.len()).sum::<usize>() as f64 / toks.len() as f64;
    let batches: Vec<Vec<Tokens>> = toks.chunks(s.batch).map(<[Tokens]>::to_vec).collect();
    let mut check = Vec::new();
    for b in first_and_last(&batches) {
        let refs: Vec<&Tokens> = b.iter().collect();
        let v = enc.encode_tokens(&refs)?;
        let rows = v.dim(0)?.min(CHECK_ROWS);
        check.extend(v.narrow(0, 0, rows)?.flatten_all()?.to_vec1::<f32>()?);
    }
    let pooling = match enc.pooling() {
        Pooling::Mean => "mean",
        Pooling::Cls => "cls",
        Pooling::Max => "max",
    };
    let python = serde_json::json!({
        "kind": "encode",
        "pad_id": enc.tokenizer().pad_id(),
        "batches": batches_json(&toks, s.batch),
        "check_rows": CHECK_ROWS,
        "pooling": pooling,
    });
    let pass = |e: &'a SentenceEncoder, batches: Vec<Vec<Tokens>>| -> Box<dyn FnMut() -> Result<()> + 'a> {
        Box::new(move || {
            for b in &batches {
                let refs: Vec<&Tokens> = b.iter().collect();
                e.encode_tokens(&refs)?;
            }
            Ok(())
        })
    };
    let mut engines = vec![CandleEngine {
        name: "candle".into(),
        label: candle_label(enc.model().device()),
        pass: pass(enc, batches.clone()),
        device: enc.model().device().clone(),
    }];
    if let Some(p) = plain {
        engines.push(CandleEngine {
            name: "candle-plain".into(),
            label: format!("{}, fast paths off", candle_label(p.model().device())),
            pass: pass(p, batches),
            device: p.model().device().clone(),
        });
    }
    Ok(CandleTask {
        spec: TaskSpec {
            name: "encode".into(),
            description: format!(
                "{} passages in batches of {}: forward, {} pooling, L2 normalisation",
                s.passages, s.batch, pooling
            ),
            item: "passage".into(),
            unit: "passages".into(),
            items: s.passages,
            flops,
            flop_formula: TRANSFORMER_FLOP_FORMULA.into(),
            mean_tokens,
        },
        engines,
        check,
        python: Some(python),
        real: None,
    })
}

/// The first and (when there are two or more) the last batch: what every engine's check covers.
pub fn first_and_last<T>(batches: &[T]) -> Vec<&T> {
    match batches {
        [] => vec![],
        [one] => vec![one],
        [first, .., last] => vec![first, last],
    }
}

/// Deterministic short questions (the cross-encoder's query, ColBERT's queries).
pub fn queries(n: usize) -> Vec<String> {
    const Q: [&str; 4] = [
        "Was the length of the civil proceedings before the domestic courts reasonable under Article 6 § 1?",
        "Did the applicant have an effective remedy for the length of the proceedings (Article 13)?",
        "Must the applicant exhaust domestic remedies before complaining about the length of proceedings?",
        "What just satisfaction does the Court award for non-pecuniary damage caused by delays?",
    ];
    (0..n)
        .map(|i| format!("Question {i}: {}", Q[i % Q.len()]))
        .collect()
}

/// Weights the bench gives a head or projection the checkpoint may lack (a checkpoint's own is not
/// read: the cost is the same, and both sides get these values): `rows × cols` values N(0, stdev²)
/// from [`lexbench_baselines::encoder::seeded`]'s fixed seed under `name`, and a zero vector of each
/// `(name, len)` in `zeros` (biases). The variables and the values.
pub fn seeded_weights(
    name: &str,
    rows: usize,
    cols: usize,
    stdev: f64,
    zeros: &[(&str, usize)],
    device: &candle_core::Device,
) -> Result<(candle_nn::VarBuilder<'static>, Vec<f32>)> {
    use lexbench_baselines::encoder::seeded::{SEED, seeded_normal};
    let values = seeded_normal(rows, cols, stdev, SEED);
    let mut tensors = std::collections::HashMap::new();
    tensors.insert(
        name.to_owned(),
        candle_core::Tensor::from_vec(values.clone(), (rows, cols), device)?,
    );
    for (z, len) in zeros {
        tensors.insert(
            (*z).to_owned(),
            candle_core::Tensor::zeros(*len, candle_core::DType::F32, device)?,
        );
    }
    Ok((
        candle_nn::VarBuilder::from_tensors(tensors, candle_core::DType::F32, device),
        values,
    ))
}

/// What the cross-encoder task reads: the pairs as the scorer tokenises them (one query against each
/// paragraph of the pool), the pad id, the one-logit head's weights `(1, hidden)` and bias.
#[derive(Debug, Clone)]
pub struct CrossInputs {
    /// `[CLS] q [SEP] p [SEP]` per pair.
    pub pairs: Vec<Tokens>,
    /// The pad id.
    pub pad_id: u32,
    /// The head's weights.
    pub head_weight: Vec<f32>,
    /// The head's bias.
    pub head_bias: f32,
}

/// The cross-encoder task: the pairs through `forward` (the scorer's logits for one batch:
/// transformer, BERT pooler, the one-logit head) in batches of `s.batch`.
pub fn cross_task<'a>(
    forward: impl Fn(&[&Tokens]) -> Result<candle_core::Tensor> + 'a,
    inputs: CrossInputs,
    cfg: &BertConfig,
    device: &candle_core::Device,
    s: &BenchSettings,
) -> Result<CandleTask<'a>> {
    let CrossInputs {
        pairs,
        pad_id,
        head_weight,
        head_bias,
    } = inputs;
    let h = cfg.hidden_size as f64;
    let flops = pairs
        .iter()
        .map(|t| encoder_flops(cfg, t.ids.len()) + 2.0 * h * h + 2.0 * h)
        .sum();
    let mean_tokens = mean_len(&pairs);
    let batches: Vec<Vec<Tokens>> = pairs.chunks(s.batch).map(<[Tokens]>::to_vec).collect();
    let mut check = Vec::new();
    for b in first_and_last(&batches) {
        let refs: Vec<&Tokens> = b.iter().collect();
        check.extend(forward(&refs)?.to_vec1::<f32>()?);
    }
    let python = serde_json::json!({
        "kind": "cross",
        "pad_id": pad_id,
        "batches": batches_json(&pairs, s.batch),
        "head_weight": head_weight,
        "head_bias": head_bias,
    });
    let n = pairs.len();
    Ok(CandleTask {
        spec: TaskSpec {
            name: "cross".into(),
            description: format!(
                "one query against a pool of {n} paragraphs, pairs in batches of {}: forward, BERT pooler, \
                 one-logit head",
                s.batch
            ),
            item: "pair".into(),
            unit: "pairs".into(),
            items: n,
            flops,
            flop_formula: format!("{TRANSFORMER_FLOP_FORMULA}; + pooler 2·H² + head 2·H per pair"),
            mean_tokens,
        },
        engines: vec![CandleEngine {
            name: "candle".into(),
            label: candle_label(device),
            device: device.clone(),
            pass: Box::new(move || {
                for b in &batches {
                    let refs: Vec<&Tokens> = b.iter().collect();
                    forward(&refs)?;
                }
                Ok(())
            }),
        }],
        check,
        python: Some(python),
        real: None,
    })
}

/// What the ColBERT tasks read: the pool's documents and the queries as the scorer tokenises them
/// (markers, `[MASK]` augmentation), which document tokens count (ColBERT's punctuation mask), the
/// projection's values `(dim, hidden)`, the pad id.
#[derive(Debug, Clone)]
pub struct ColbertInputs {
    /// `[CLS] [D] d… [SEP]` per paragraph.
    pub docs: Vec<Tokens>,
    /// Per document, per token: whether its vector is kept.
    pub keep: Vec<Vec<bool>>,
    /// `[CLS] [Q] q… [SEP] [MASK]…` per query.
    pub queries: Vec<Tokens>,
    /// The projection, row-major `(dim, hidden)`.
    pub linear: Vec<f32>,
    /// Its output width.
    pub dim: usize,
    /// The pad id.
    pub pad_id: u32,
}

/// The kept vectors of each sequence of one batch's output `v` `(b, s, dim)`, as ColBERT's scorer
/// selects them (`index_select` of the kept positions).
fn kept_rows(v: &candle_core::Tensor, keep: &[&Vec<bool>]) -> Result<Vec<candle_core::Tensor>> {
    keep.iter()
        .enumerate()
        .map(|(row, k)| {
            let idx: Vec<u32> = (0..k.len()).filter(|&j| k[j]).map(|j| j as u32).collect();
            let idx = candle_core::Tensor::new(idx.as_slice(), v.device())?;
            Ok(v.get(row)?.index_select(&idx, 0)?)
        })
        .collect()
}

/// MaxSim of one query's vectors against documents prepared beforehand, one score per document.
pub type MaxSimScorer<'a> = Box<dyn Fn(&candle_core::Tensor) -> Result<Vec<f32>> + 'a>;

/// The two ColBERT tasks. `colbert-docs`: the pool's documents through `forward` (the scorer's
/// projected, normalised token vectors of one batch) in batches of `s.batch`, the kept vectors
/// selected per document. `colbert-maxsim`: every query's vectors against every document's (both
/// computed once, untimed) through `maxsim`: given the documents' vectors it prepares them once
/// (untimed, as PyTorch's side pads them into one tensor once) and returns the scorer of one
/// query against all of them (`scorers::colbert::MaxSimDocs`, what `run colbert` scores with).
pub fn colbert_tasks<'a>(
    forward: impl Fn(&[&Tokens]) -> Result<candle_core::Tensor> + 'a,
    maxsim: impl FnOnce(&[candle_core::Tensor]) -> Result<MaxSimScorer<'a>>,
    inputs: ColbertInputs,
    cfg: &BertConfig,
    device: &candle_core::Device,
    s: &BenchSettings,
) -> Result<Vec<CandleTask<'a>>> {
    let ColbertInputs {
        docs,
        keep,
        queries,
        linear,
        dim,
        pad_id,
    } = inputs;
    if docs.len() != keep.len() || docs.iter().zip(&keep).any(|(d, k)| d.ids.len() != k.len()) {
        return Err(Error::internal(
            "bench: ColBERT keep masks do not match the documents",
        ));
    }
    let doc_vectors = colbert_doc_vectors(&forward, &docs, &keep, s.batch)?;
    let mut docs_check = Vec::new();
    for d in first_and_last(&doc_vectors) {
        docs_check.extend(d.flatten_all()?.to_vec1::<f32>()?);
    }
    let mut query_vectors = Vec::with_capacity(queries.len());
    for b in queries.chunks(s.batch) {
        let refs: Vec<&Tokens> = b.iter().collect();
        let v = forward(&refs)?;
        for row in 0..b.len() {
            query_vectors.push(v.get(row)?);
        }
    }
    let stacked = maxsim(&doc_vectors)?;
    let maxsim_check = match query_vectors.first() {
        Some(q) => stacked(q)?,
        None => Vec::new(),
    };
    let h = cfg.hidden_size as f64;
    let docs_flops = docs
        .iter()
        .map(|t| encoder_flops(cfg, t.ids.len()) + 2.0 * t.ids.len() as f64 * h * dim as f64)
        .sum();
    let kept: Vec<usize> = keep.iter().map(|k| k.iter().filter(|x| **x).count()).collect();
    let maxsim_flops = queries
        .iter()
        .map(|q| {
            kept.iter()
                .map(|&d| 2.0 * (q.ids.len() * d * dim) as f64)
                .sum::<f64>()
        })
        .sum();
    let keep_json: Vec<Vec<u8>> = keep
        .iter()
        .map(|k| k.iter().map(|&x| u8::from(x)).collect())
        .collect();
    let common = serde_json::json!({
        "pad_id": pad_id,
        "batches": batches_json(&docs, s.batch),
        "keep": keep_json,
        "linear": linear,
        "dim": dim,
    });
    let mut docs_input = common.clone();
    docs_input["kind"] = "colbert_docs".into();
    let mut maxsim_input = common;
    maxsim_input["kind"] = "colbert_maxsim".into();
    maxsim_input["queries"] = queries.iter().map(seq_json).collect();
    let (n, nq) = (docs.len(), queries.len());
    let docs_task = CandleTask {
        spec: TaskSpec {
            name: "colbert-docs".into(),
            description: format!(
                "a pool of {n} paragraphs in batches of {}: forward, projection to {dim}, L2 normalisation per token, \
                 the kept (non-punctuation) vectors selected per document",
                s.batch
            ),
            item: "document".into(),
            unit: "documents".into(),
            items: n,
            flops: docs_flops,
            flop_formula: format!("{TRANSFORMER_FLOP_FORMULA}; + projection 2·T·H·dim per document"),
            mean_tokens: mean_len(&docs),
        },
        engines: vec![CandleEngine {
            name: "candle".into(),
            label: candle_label(device),
            device: device.clone(),
            pass: {
                let (d, k, batch) = (docs.clone(), keep.clone(), s.batch);
                Box::new(move || colbert_doc_vectors(&forward, &d, &k, batch).map(drop))
            },
        }],
        check: docs_check,
        python: Some(docs_input),
        real: None,
    };
    let maxsim_task = CandleTask {
        spec: TaskSpec {
            name: "colbert-maxsim".into(),
            description: format!(
                "MaxSim of {nq} queries ({} vectors each) against the {n} documents' kept vectors, all precomputed",
                queries.first().map_or(0, |q| q.ids.len())
            ),
            item: "query".into(),
            unit: "queries".into(),
            items: nq,
            flops: maxsim_flops,
            flop_formula: "2·Lq·Ld·dim per (query, document): Lq query vectors, Ld kept document vectors; the max and sum not counted"
                .into(),
            mean_tokens: mean_len(&queries),
        },
        engines: vec![CandleEngine {
            name: "candle".into(),
            label: candle_label(device),
            device: device.clone(),
            pass: Box::new(move || {
                for q in &query_vectors {
                    stacked(q)?;
                }
                Ok(())
            }),
        }],
        check: maxsim_check,
        python: Some(maxsim_input),
        real: None,
    };
    Ok(vec![docs_task, maxsim_task])
}

/// The kept vectors of every document, batch by batch, as the scorer encodes documents.
fn colbert_doc_vectors(
    forward: &dyn Fn(&[&Tokens]) -> Result<candle_core::Tensor>,
    docs: &[Tokens],
    keep: &[Vec<bool>],
    batch: usize,
) -> Result<Vec<candle_core::Tensor>> {
    let mut out = Vec::with_capacity(docs.len());
    for (b, k) in docs.chunks(batch).zip(keep.chunks(batch)) {
        let refs: Vec<&Tokens> = b.iter().collect();
        let v = forward(&refs)?;
        out.extend(kept_rows(&v, &k.iter().collect::<Vec<_>>())?);
    }
    Ok(out)
}

/// Mean length of `seqs` (0 for none).
fn mean_len(seqs: &[Tokens]) -> f64 {
    seqs.iter().map(|t| t.ids.len()).sum::<usize>() as f64 / seqs.len().max(1) as f64
}

/// The smallest cosine between `engine`'s check vectors (`theirs`) and candle's (`ours`) on the real
/// task's sampled passages; below [`real::MIN_COSINE`] the run fails: the engines would not be doing
/// the same work, and their timings not comparable.
fn check_cosines(r: &real::RealCheck, engine: &str, ours: &[f32], theirs: &[f64]) -> Result<f64> {
    let (c, row) = real::min_cosine(ours, theirs, r.dim)?;
    if c.is_nan() || c < real::MIN_COSINE {
        let passage = r.sample.get(row).map_or("?", |(_, label)| label.as_str());
        return Err(Error::data(
            format!("bench real task, {}", r.source),
            format!(
                "{engine}'s vector of passage {passage} has a cosine of {c:.6} with candle's, below {}: the \
                 engines do not compute the same vectors, so their timings are not compared",
                real::MIN_COSINE
            ),
        ));
    }
    Ok(c)
}

/// `candle (lexbench, Cpu, release build)`.
pub fn candle_label(device: &candle_core::Device) -> String {
    format!(
        "candle (lexbench, {device:?}, {} build)",
        if cfg!(debug_assertions) { "dev" } else { "release" }
    )
}

/// One engine's figures on one task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineReport {
    /// Short name: `candle`, `candle-plain`, `torch`, `ort`.
    pub engine: String,
    /// What ran (versions, threads).
    pub label: String,
    /// The vector path its peak is taken on.
    pub path: String,
    /// That peak, GFLOP/s.
    pub peak_gflops: f64,
    /// Seconds of each timed pass, by round.
    pub seconds: Vec<f64>,
    /// Items per second, median over rounds.
    pub median_per_s: f64,
    /// Items per second of the fastest round.
    pub best_per_s: f64,
    /// The task's FLOPs over the median round's seconds, GFLOP/s.
    pub median_gflops: f64,
    /// `median_gflops / peak_gflops`.
    pub share_of_peak: f64,
    /// The FMA throughput measured on that path on every bench thread, GFLOP/s
    /// ([`Machine::measured_flops`]; absent when not measured, as in a debug build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_gflops: Option<f64>,
    /// `median_gflops / measured_gflops`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_of_measured: Option<f64>,
    /// Largest |difference| between its check outputs and candle's (`None` for candle's engines).
    pub max_abs_diff: Option<f64>,
    /// Where the CPU time of candle's timed passes went: the calling thread's, the pool's, and the
    /// share of the CPUs left idle ([`crate::machine::ThreadUse`]; candle's engines only, where
    /// `/proc/self/task` is there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<crate::machine::ThreadUse>,
    /// Real tokens per second, median over rounds (the real task).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_tokens_per_s: Option<f64>,
    /// The smallest cosine of its vectors with candle's over the checked passages (the real task's
    /// Python engines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_cosine: Option<f64>,
}

/// Candle against one other engine, pair by pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioReport {
    /// Always `candle`.
    pub numerator: String,
    /// The other engine.
    pub denominator: String,
    /// Candle's rate over the other's, per pair.
    #[serde(flatten)]
    pub stats: PairStats,
}

impl RatioReport {
    /// The report line: `{indent}{what}candle / other per pair: r1 r2 … → median m (min–max)`.
    pub fn line(&self, what: &str) -> String {
        let per: Vec<String> = self.stats.per_pair.iter().map(|x| format!("{x:.3}")).collect();
        format!(
            "  {what}{} / {} per pair: {} → median {:.3} ({:.3}–{:.3})",
            self.numerator,
            self.denominator,
            per.join(" "),
            self.stats.median,
            self.stats.min,
            self.stats.max
        )
    }
}

/// One task's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    /// The workload.
    pub spec: TaskSpec,
    /// Every engine's figures, candle's first.
    pub engines: Vec<EngineReport>,
    /// Candle / each other engine.
    pub ratios: Vec<RatioReport>,
    /// The real task's token lengths and padding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real: Option<real::RealReport>,
}

/// A whole bench run: machine, load average before and after, each task's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// The model folder.
    pub model: String,
    /// Where candle (and the Python engines) ran: `cpu`, or `cuda:N` ([`BenchReport::on_device`]).
    /// Shares of the peak are of the CPU's, so they are reported on the CPU only.
    pub device: String,
    /// The settings.
    pub settings: BenchSettings,
    /// The machine.
    pub machine: Machine,
    /// `/proc/loadavg` before anything was loaded.
    pub load_before: Option<[f64; 3]>,
    /// What the Python side said when ready (versions, engines; check outputs left out): its first
    /// process's, when a run starts a second (the training step's).
    pub python: Option<serde_json::Value>,
    /// The tasks.
    pub tasks: Vec<TaskReport>,
    /// Engines that could not run, and other remarks.
    pub notes: Vec<String>,
    /// The gemm tasks' summary ([`gemm::summarize`]): per shape and over a layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemm: Option<gemm::GemmReport>,
    /// `/proc/loadavg` at the end.
    pub load_after: Option<[f64; 3]>,
    /// `/proc/stat`'s CPU time when the report began and at the end: the share of the run the
    /// hypervisor stole, and the share idle.
    pub cpu_before: Option<CpuTimes>,
    /// See `cpu_before`.
    pub cpu_after: Option<CpuTimes>,
}

/// The pause before each timed pass: spinning thread pools (ONNX Runtime's, OpenMP's, rayon's) of
/// the previous engine go idle first.
pub const SETTLE: Duration = Duration::from_millis(200);

/// Where the Python engines run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonSide {
    /// The interpreter (with torch and transformers; onnxruntime, onnx, onnxscript for ORT).
    pub python: String,
    /// `bench/scripts/bench_encoder.py`.
    pub script: PathBuf,
    /// `torch`, `st` (sentence-transformers, which the script loads only for a real task),
    /// `openblas` (NumPy's BLAS, which the script runs only for the gemm workload's linear products)
    /// and, optionally, `ort`.
    pub engines: Vec<String>,
    /// Extra environment of the Python process (the forced-AVX2 switches).
    pub env: Vec<(String, String)>,
    /// Where PyTorch runs (`--device` of the scripts): `cpu`, or `cuda:N` when candle runs on that
    /// GPU ([`PythonSide::on_device`]), so that both sides run on the same device.
    pub device: String,
}

impl PythonSide {
    /// PyTorch, sentence-transformers (real task) and ONNX Runtime (when `s.ort`) through `script`; when candle's gemm runs AVX2 on an
    /// AVX-512 CPU (a forced build), PyTorch is told to do the same (`ATEN_CPU_CAPABILITY=avx2`,
    /// `ONEDNN_MAX_CPU_ISA=AVX2`, `MKL_ENABLE_INSTRUCTIONS=AVX2`, and OpenBLAS its Haswell kernels,
    /// `OPENBLAS_CORETYPE=Haswell`; ONNX Runtime has no such switch).
    pub fn new(python: &str, script: &Path, s: &BenchSettings, machine: &Machine) -> Self {
        let mut env = vec![
            ("HF_HUB_OFFLINE".to_owned(), "1".to_owned()),
            ("TRANSFORMERS_VERBOSITY".to_owned(), "error".to_owned()),
            ("HF_HUB_DISABLE_PROGRESS_BARS".to_owned(), "1".to_owned()),
        ];
        if machine.candle_path.isa == Isa::Avx2 && machine.features.avx512f {
            for (k, v) in [
                ("ATEN_CPU_CAPABILITY", "avx2"),
                ("ONEDNN_MAX_CPU_ISA", "AVX2"),
                ("MKL_ENABLE_INSTRUCTIONS", "AVX2"),
                ("OPENBLAS_CORETYPE", "Haswell"),
            ] {
                env.push((k.to_owned(), v.to_owned()));
            }
        }
        if s.peer_kept_memory {
            env.push(("MALLOC_MMAP_MAX_".to_owned(), "0".to_owned()));
            env.push(("MALLOC_TRIM_THRESHOLD_".to_owned(), "-1".to_owned()));
        }
        let mut engines = vec!["torch".to_owned(), "st".to_owned(), "openblas".to_owned()];
        if s.ort {
            engines.push("ort".to_owned());
        }
        Self {
            python: python.to_owned(),
            script: script.to_owned(),
            engines,
            env,
            device: "cpu".to_owned(),
        }
    }

    /// PyTorch on candle's `device`: the same GPU (`cuda:N`, timed to its completion there), or
    /// the CPU.
    pub fn on_device(mut self, device: &candle_core::Device) -> Self {
        self.device = device_name(device);
        self
    }
}

/// `device` as PyTorch and the report name it: `cpu`, or `cuda:N`.
fn device_name(device: &candle_core::Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        _ => "cpu".to_owned(),
    }
}

/// The running `bench/scripts/bench_encoder.py`: one JSON request per timed pass.
struct PythonServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    dir: PathBuf,
    script: PathBuf,
    python: String,
}

impl PythonServer {
    /// Writes the tasks to a temporary file, starts the script and waits for its ready line.
    fn start(
        side: &PythonSide,
        model: &Path,
        threads: usize,
        tasks: &serde_json::Value,
    ) -> Result<(Self, serde_json::Value)> {
        static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            lexbench_core::testing::scratch_root().join(format!("lexbench-bench-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let input = dir.join("tasks.json");
        std::fs::write(&input, serde_json::json!({ "tasks": tasks }).to_string()).map_err(io_err(&input))?;
        let stderr_path = dir.join("stderr.txt");
        let stderr = std::fs::File::create(&stderr_path).map_err(io_err(&stderr_path))?;
        let spawned = Command::new(&side.python)
            .arg(&side.script)
            .arg("--model")
            .arg(model)
            .arg("--input")
            .arg(&input)
            .arg("--threads")
            .arg(threads.to_string())
            .arg("--engines")
            .arg(side.engines.join(","))
            .arg("--device")
            .arg(&side.device)
            .envs(side.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                std::fs::remove_dir_all(&dir).ok();
                return Err(io_err(Path::new(&side.python))(e));
            }
        };
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::internal(
                "bench: the Python process has no piped stdin/stdout",
            ));
        };
        let mut server = Self {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            dir,
            script: side.script.clone(),
            python: side.python.clone(),
        };
        let ready = server.read()?;
        if ready["ready"] != serde_json::Value::Bool(true) {
            return Err(server.protocol_error(&format!("its first line is not the ready line: {ready}")));
        }
        Ok((server, ready))
    }

    /// Times one pass of `task` on `engine`.
    fn time(&mut self, task: &str, engine: &str) -> Result<f64> {
        let line = serde_json::json!({"task": task, "engine": engine}).to_string() + "\n";
        let written = match self.stdin.as_mut() {
            Some(w) => w.write_all(line.as_bytes()).and_then(|()| w.flush()),
            None => Err(std::io::Error::other("stdin closed")),
        };
        if let Err(e) = written {
            return Err(self.protocol_error(&format!("writing a request failed: {e}")));
        }
        let v = self.read()?;
        v["seconds"]
            .as_f64()
            .ok_or_else(|| self.protocol_error(&format!("answered {v} to {}", line.trim())))
    }

    /// The next protocol line, as JSON.
    fn read(&mut self) -> Result<serde_json::Value> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err(self.protocol_error("exited")),
            Ok(_) => serde_json::from_str(&line).map_err(|e| {
                self.protocol_error(&format!("printed {:?}, not a JSON line ({e})", line.trim()))
            }),
            Err(e) => Err(self.protocol_error(&format!("reading its output failed: {e}"))),
        }
    }

    /// An error naming the script, with the last lines of its standard error.
    fn protocol_error(&self, what: &str) -> Error {
        let err = std::fs::read_to_string(self.dir.join("stderr.txt")).unwrap_or_default();
        let tail: Vec<&str> = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(3)
            .collect();
        Error::Io {
            path: self.script.clone(),
            source: std::io::Error::other(format!(
                "{} {what} ({})",
                self.python,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )),
        }
    }
}

impl Drop for PythonServer {
    /// Closes the script's input (it exits at end of input and removes its ONNX folder); stops it
    /// after 10 s if it has not.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            self.child.kill().ok();
            self.child.wait().ok();
        }
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// A timed engine of one task.
enum Timed<'t, 'a> {
    Candle(&'t mut CandleEngine<'a>),
    Python(String),
}

impl BenchReport {
    /// Starts a report: reads the load average first (before anything is loaded).
    pub fn begin(model: &Path, settings: &BenchSettings, machine: Machine) -> Self {
        Self {
            load_before: loadavg(),
            cpu_before: cpu_times(),
            cpu_after: None,
            model: model.display().to_string(),
            device: "cpu".to_owned(),
            settings: settings.clone(),
            machine,
            python: None,
            tasks: Vec::new(),
            notes: Vec::new(),
            gemm: None,
            load_after: None,
        }
    }

    /// Measures `tasks`: candle's engines and, when `python` is given, PyTorch's and ONNX Runtime's
    /// (one process for all tasks), alternating, `settings.pairs` rounds after a warm-up pass. An
    /// engine that cannot start is a note, not an error; candle's errors are errors.
    pub fn measure(&mut self, tasks: Vec<CandleTask<'_>>, python: Option<&PythonSide>) -> Result<()> {
        let s = self.settings.clone();
        let mut server = None;
        let mut ready = serde_json::Value::Null;
        if let Some(side) = python {
            let inputs: serde_json::Map<String, serde_json::Value> = tasks
                .iter()
                .filter_map(|t| Some((t.spec.name.clone(), t.python.clone()?)))
                .collect();
            if !inputs.is_empty() {
                match PythonServer::start(side, Path::new(&self.model), s.threads, &inputs.into()) {
                    Ok((srv, r)) => {
                        server = Some(srv);
                        ready = r;
                    }
                    Err(e) => self.notes.push(format!(
                        "{}: unavailable ({})",
                        if side.engines.iter().any(|e| e == "ort") {
                            "PyTorch and ONNX Runtime"
                        } else {
                            "PyTorch"
                        },
                        lexbench_core::error::chain(&e)
                    )),
                }
            }
        }
        if let Some(err) = ready["engines"]["ort"]["error"].as_str() {
            self.notes.push(format!("ONNX Runtime: unavailable ({err})"));
        }
        if let Some(err) = ready["engines"]["st"]["error"].as_str() {
            self.notes
                .push(format!("sentence-transformers: unavailable ({err})"));
        }
        // The check outputs and sentence-transformers' batching (order and lengths of every passage)
        // stay here; the rest (versions, engines) goes into the report now, where `path_of` reads
        // PyTorch's vector path.
        let checks = ready["checks"].take();
        let batching = ready["batching"].take();
        // A second process in the same run (the training step's) is the same interpreter: the first
        // one's versions stay.
        if let serde_json::Value::Object(mut r) = ready
            && self.python.is_none()
        {
            r.remove("checks");
            self.python = Some(serde_json::Value::Object(r));
        }
        for mut task in tasks {
            let name = task.spec.name.clone();
            let python_engines: Vec<String> = match &server {
                Some(_) => ["torch", "st", "ort", "openblas"]
                    .into_iter()
                    .filter(|e| checks[&name][*e].is_array())
                    .map(str::to_owned)
                    .collect(),
                None => Vec::new(),
            };
            let ort_asked = python.is_some_and(|p| p.engines.iter().any(|e| e == "ort"));
            let ort_up = server.is_some()
                && self
                    .python
                    .as_ref()
                    .is_some_and(|p| p["engines"]["ort"]["error"].is_null());
            if ort_asked && ort_up && !python_engines.iter().any(|e| e == "ort") {
                self.notes.push(format!(
                    "{name}: ONNX Runtime not run (scripts/bench_encoder.py exports the encode, cross, real and ColBERT document graphs; MaxSim has none)"
                ));
            }
            for e in &mut task.engines {
                e.run_synced()?; // warm-up (the Python engines warmed up before their ready line)
            }
            let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); task.engines.len() + python_engines.len()];
            let mut cpu: Vec<Option<crate::machine::ThreadUse>> = vec![
                Some(crate::machine::ThreadUse {
                    threads: s.threads,
                    ..Default::default()
                });
                task.engines.len()
            ];
            for _ in 0..s.pairs {
                let mut order: Vec<Timed<'_, '_>> = task.engines.iter_mut().map(Timed::Candle).collect();
                order.extend(python_engines.iter().map(|e| Timed::Python(e.clone())));
                for (i, engine) in order.into_iter().enumerate() {
                    std::thread::sleep(SETTLE);
                    let secs = match engine {
                        Timed::Candle(e) => {
                            let before = crate::machine::thread_times();
                            let t = Instant::now();
                            e.run_synced()?;
                            let secs = t.elapsed().as_secs_f64();
                            match (before, crate::machine::thread_times()) {
                                (Some(b), Some(a)) => {
                                    if let Some(u) = &mut cpu[i] {
                                        u.add(&b, &a, secs);
                                    }
                                }
                                _ => cpu[i] = None,
                            }
                            secs
                        }
                        Timed::Python(e) => match server.as_mut() {
                            Some(srv) => srv.time(&name, &e)?,
                            None => {
                                return Err(Error::internal("bench: a Python engine without its process"));
                            }
                        },
                    };
                    seconds[i].push(secs);
                }
            }
            let mut engines = Vec::new();
            for (i, e) in task.engines.iter().enumerate() {
                let mut report = self.engine_report(&task.spec, &e.name, &e.label, &seconds[i], None);
                report.cpu = cpu[i].take();
                engines.push(report);
            }
            for (j, e) in python_engines.iter().enumerate() {
                let theirs: Vec<f64> = checks[&name][e]
                    .as_array()
                    .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect())
                    .unwrap_or_default();
                let diff = if theirs.len() == task.check.len() {
                    theirs
                        .iter()
                        .zip(&task.check)
                        .map(|(a, b)| (a - f64::from(*b)).abs())
                        .fold(0.0, f64::max)
                } else {
                    self.notes.push(format!(
                        "{name}: {e} checked {} outputs, candle {}",
                        theirs.len(),
                        task.check.len()
                    ));
                    f64::NAN
                };
                let label = self
                    .python
                    .as_ref()
                    .and_then(|p| p["engines"][e]["label"].as_str())
                    .unwrap_or(e)
                    .to_owned();
                let secs = &seconds[task.engines.len() + j];
                let mut report = self.engine_report(&task.spec, e, &label, secs, Some(diff));
                if let Some(r) = &task.real {
                    report.min_cosine = Some(check_cosines(r, e, &task.check, &theirs)?);
                }
                engines.push(report);
            }
            let real = match &task.real {
                Some(r) => {
                    let tokens = r.lengths.iter().sum::<usize>() as f64;
                    for e in &mut engines {
                        e.median_tokens_per_s = Some(tokens / median(&e.seconds));
                    }
                    Some(r.report(&batching[&name]["st"], &mut self.notes)?)
                }
                None => None,
            };
            let ratios = engines
                .iter()
                .skip(1)
                .filter_map(|other| {
                    Some(RatioReport {
                        numerator: engines[0].engine.clone(),
                        denominator: other.engine.clone(),
                        stats: pair_stats(&engines[0].seconds, &other.seconds)?,
                    })
                })
                .collect();
            self.tasks.push(TaskReport {
                spec: task.spec,
                engines,
                ratios,
                real,
            });
        }
        Ok(())
    }

    /// The vector path an engine's peak is taken on: candle's gemm path; PyTorch's as it reports it
    /// (`torch.backends.cpu.get_cpu_capability`); ONNX Runtime's assumed the CPU's best (MLAS picks at
    /// run time and does not say).
    pub(crate) fn path_of(&self, engine: &str) -> (VectorPath, String) {
        let m = &self.machine;
        match engine {
            // sentence-transformers runs PyTorch.
            "torch" | "st" => {
                let cap = self.python.as_ref().unwrap_or(&serde_json::Value::Null)["engines"]["torch"]["cpu_capability"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                match (&m.avx2_path, cap.to_ascii_uppercase().contains("AVX512")) {
                    (Some(avx2), false) if !cap.is_empty() => {
                        (avx2.clone(), format!("{} (torch: {cap})", avx2.description))
                    }
                    _ => (
                        m.best_path.clone(),
                        format!("{} (torch: {cap})", m.best_path.description),
                    ),
                }
            }
            "ort" => (
                m.best_path.clone(),
                format!("{} (assumed: MLAS picks at run time)", m.best_path.description),
            ),
            // Told to take its Haswell (AVX2) kernels where candle's gemm is forced to AVX2.
            "openblas" => match &m.avx2_path {
                Some(avx2) if m.candle_path.isa == Isa::Avx2 && m.features.avx512f => (
                    avx2.clone(),
                    format!("{} (OpenBLAS told OPENBLAS_CORETYPE=Haswell)", avx2.description),
                ),
                _ => (
                    m.best_path.clone(),
                    format!(
                        "{} (assumed: OpenBLAS picks its kernel at run time)",
                        m.best_path.description
                    ),
                ),
            },
            _ => (m.candle_path.clone(), m.candle_path.description.clone()),
        }
    }

    fn engine_report(
        &self,
        spec: &TaskSpec,
        engine: &str,
        label: &str,
        seconds: &[f64],
        max_abs_diff: Option<f64>,
    ) -> EngineReport {
        let med = median(seconds);
        let best = seconds.iter().copied().fold(f64::INFINITY, f64::min);
        let (path, path_text) = self.path_of(engine);
        let peak = self.machine.peak_flops(&path) / 1e9;
        let gflops = spec.flops / med / 1e9;
        let measured = self.machine.measured_flops(path.isa).map(|f| f / 1e9);
        EngineReport {
            engine: engine.to_owned(),
            label: label.to_owned(),
            path: path_text,
            peak_gflops: peak,
            seconds: seconds.to_vec(),
            median_per_s: spec.items as f64 / med,
            best_per_s: spec.items as f64 / best,
            median_gflops: gflops,
            share_of_peak: gflops / peak,
            measured_gflops: measured,
            share_of_measured: measured.map(|m| gflops / m),
            max_abs_diff,
            median_tokens_per_s: None,
            min_cosine: None,
            cpu: None,
        }
    }

    /// The engines run on `device`; on a GPU, a note says that the machine report and the peak are
    /// the CPU's, and the lines give GFLOP/s without a share of that peak.
    pub fn on_device(&mut self, device: &candle_core::Device) {
        self.device = device_name(device);
        if self.device != "cpu" {
            self.notes.push(format!(
                "candle and PyTorch run on {}: the machine report and its peak are the CPU's, so no share \
                 of a peak is given",
                self.device
            ));
        }
    }

    /// Reads the load average at the end.
    pub fn finish(&mut self) {
        self.load_after = loadavg();
        self.cpu_after = cpu_times();
    }

    /// The report for people.
    pub fn lines(&self) -> Vec<String> {
        let load = |l: Option<[f64; 3]>| {
            l.map_or("unknown".to_owned(), |[a, b, c]| {
                format!("{a:.2} {b:.2} {c:.2} (1, 5, 15 min)")
            })
        };
        let s = &self.settings;
        let mut lines = self.machine.lines();
        lines.push(format!("load average before: {}", load(self.load_before)));
        // The real task has its own truncation (`run dense`'s).
        let real = self.tasks.iter().any(|t| t.real.is_some());
        let others = self.tasks.iter().any(|t| t.real.is_none());
        let truncation = match (others, real) {
            (true, true) => format!("{} tokens (the real task: {})", s.max_len, s.real_max_len),
            (false, true) => format!("{} tokens", s.real_max_len),
            _ => format!("{} tokens", s.max_len),
        };
        lines.push(format!(
            "model {}, truncation {truncation}, batch {}, {} threads, {} pairs (engines alternate, one untimed warm-up pass each, {} ms pause before each pass)",
            self.model,
            s.batch,
            s.threads,
            s.pairs,
            SETTLE.as_millis()
        ));
        lines.push(if s.peer_kept_memory {
            "Python engines' allocator: glibc keeping freed memory for reuse, as lexbench runs (--peer-allocator kept)".to_owned()
        } else {
            "Python engines' allocator: glibc's defaults (a fresh mapping for each large block; --peer-allocator kept gives them lexbench's policy)".to_owned()
        });
        for t in &self.tasks {
            let sp = &t.spec;
            lines.push(format!(
                "task {}: {} ({:.1} tokens per sequence on average); {:.4} GFLOP per {}",
                sp.name,
                sp.description,
                sp.mean_tokens,
                sp.flops / sp.items as f64 / 1e9,
                sp.item,
            ));
            lines.push(format!("  FLOPs: {}", sp.flop_formula));
            if let Some(r) = &t.real {
                let l = &r.lengths;
                lines.push(format!(
                    "  token lengths after truncation: median {:.1}, mean {:.1}, p90 {}, min {}, max {} ({} real \
                     tokens in {} passages)",
                    l.median, l.mean, l.p90, l.min, l.max, l.tokens, l.passages
                ));
                for b in &r.batchings {
                    lines.push(format!(
                        "  batching of {}: batches {}, pad tokens {} = {:.1}% of the real tokens [{}]",
                        b.engine,
                        b.padding.batches,
                        b.padding.pad_tokens,
                        100.0 * b.padding_share,
                        b.order
                    ));
                }
            }
            for e in &t.engines {
                let share = if self.device == "cpu" {
                    format!(
                        " = {:.1}% of {:.1} GFLOP/s{} [{}]",
                        100.0 * e.share_of_peak,
                        e.peak_gflops,
                        match (e.share_of_measured, e.measured_gflops) {
                            (Some(x), Some(m)) => format!(", {:.1}% of the measured {m:.1}", 100.0 * x),
                            _ => String::new(),
                        },
                        e.path
                    )
                } else {
                    format!(" [{}]", self.device)
                };
                lines.push(format!(
                    "  {}: {:.2} {}/s median (best {:.2}){} = {:.1} GFLOP/s{share}{}{}",
                    e.label,
                    e.median_per_s,
                    sp.unit,
                    e.best_per_s,
                    e.median_tokens_per_s
                        .map_or(String::new(), |x| format!(", {x:.0} real tokens/s")),
                    e.median_gflops,
                    e.max_abs_diff
                        .map_or(String::new(), |d| format!("; outputs max |Δ| vs candle {d:.1e}")),
                    e.min_cosine.map_or(String::new(), |c| format!(
                        ", min cosine {c:.6} over {} passages",
                        t.real.as_ref().map_or(0, |r| r.checked_passages)
                    ))
                ));
                if let Some(u) = &e.cpu {
                    lines.push(format!(
                        "    CPU in its timed passes (/proc/self/task): {:.1}% of {} CPUs idle; the calling thread {:.2} s, \
                         {} other thread(s) {:.2} s, over {:.2} s of passes",
                        100.0 * u.idle_share(),
                        u.threads,
                        u.calling_s,
                        u.other_threads,
                        u.others_s,
                        u.wall_s
                    ));
                }
            }
            for r in &t.ratios {
                lines.push(r.line(""));
            }
        }
        if let Some(g) = &self.gemm {
            lines.extend(g.lines());
        }
        for n in &self.notes {
            lines.push(format!("note: {n}"));
        }
        lines.push(format!("load average after: {}", load(self.load_after)));
        if let (Some(a), Some(b)) = (self.cpu_before, self.cpu_after)
            && let Some((steal, idle)) = a.shares_until(&b)
        {
            lines.push(format!(
                "CPU time during the run (/proc/stat, all CPUs): {:.1}% stolen by the hypervisor, {:.1}% idle",
                100.0 * steal,
                100.0 * idle
            ));
        }
        lines
    }
}

/// Measures the encode task of `model` with candle on `device` and (when `python` is given)
/// PyTorch and ONNX Runtime through `script`; the report's lines (`cargo bench --bench encoder`).
pub fn run(
    model: &Path,
    device: &lexbench_baselines::Device,
    python: Option<&str>,
    script: &Path,
    s: &BenchSettings,
) -> Result<Vec<String>> {
    s.validate()?;
    let machine = Machine::detect(s.threads);
    let side = python.map(|p| PythonSide::new(p, script, s, &machine).on_device(device));
    let mut report = BenchReport::begin(model, s, machine);
    report.on_device(device);
    let enc = load_encoder(model, device, s)?;
    let plain = plain_encoder(&enc, s)?;
    let task = encode_task(&enc, plain.as_ref(), s)?;
    report.measure(vec![task], side.as_ref())?;
    report.finish();
    Ok(report.lines())
}

/// The encoder the encode task runs: `s.max_len`, batch `s.batch`, the model's pooling, normalised.
pub fn load_encoder(
    model: &Path,
    device: &lexbench_baselines::Device,
    s: &BenchSettings,
) -> Result<SentenceEncoder> {
    let options = lexbench_baselines::encoder::EncodeOptions {
        max_len: s.max_len,
        pooling: None,
        normalize: true,
        batch_size: s.batch,
    };
    SentenceEncoder::from_dir(model, device, options)
}

/// With `s.plain`, a clone of `enc` with the fast paths off.
pub fn plain_encoder(enc: &SentenceEncoder, s: &BenchSettings) -> Result<Option<SentenceEncoder>> {
    if !s.plain {
        return Ok(None);
    }
    let mut p = enc.clone();
    p.model_mut().set_fast_paths(false)?;
    Ok(Some(p))
}

#[cfg(test)]
mod tests {
    //! Properties: the FLOP formula equals a hand count of every matrix product of a tiny config
    //! (and MiniLM's 2.87 GFLOP at 128 tokens, the issue's ≈ 2.9); pair statistics are B's seconds
    //! over A's per round, with median and range, none without a round; the checked batches are
    //! the first and the last; the batches' JSON is `[ids, types, mask]` per sequence; settings
    //! refuse zero counts and too short truncations (the real task's included); a Python engine whose
    //! vector of a sampled passage is not within the cosine bound of candle's fails the real task,
    //! naming the passage.
    use super::*;

    /// Multiply-adds of a `(m, k) × (k, n)` product, times 2.
    fn mm(m: usize, k: usize, n: usize) -> f64 {
        2.0 * (m * k * n) as f64
    }

    #[test]
    fn the_flop_formula_matches_a_hand_count() {
        // L 2, H 4 (2 heads of 2), I 8, T 3.
        let (l, h, heads, i, t) = (2, 4, 2, 8, 3);
        let dh = h / heads;
        let per_layer = 3.0 * mm(t, h, h) // Q, K, V
            + heads as f64 * mm(t, dh, t) // scores, per head
            + heads as f64 * mm(t, t, dh) // probabilities × V, per head
            + mm(t, h, h) // output projection
            + mm(t, h, i) // feed-forward up
            + mm(t, i, h); // feed-forward down
        assert_eq!(per_layer, 912.0);
        assert_eq!(transformer_flops(l, h, i, t), l as f64 * per_layer);
        let minilm = transformer_flops(6, 384, 1536, 128);
        assert!((minilm / 1e9 - 2.869).abs() < 0.001, "{minilm}");
    }

    #[test]
    fn pair_stats_are_per_round_ratios_with_median_and_range() {
        // A twice as fast, then 1.5×, then 3×.
        let p = pair_stats(&[1.0, 2.0, 1.0], &[2.0, 3.0, 3.0]).unwrap();
        assert_eq!(p.per_pair, vec![2.0, 1.5, 3.0]);
        assert_eq!((p.median, p.min, p.max), (2.0, 1.5, 3.0));
        let even = pair_stats(&[1.0; 4], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(even.median, 2.5);
        // Rounds pair by index; an unfinished round is left out.
        assert_eq!(pair_stats(&[1.0, 1.0], &[2.0]).unwrap().per_pair, vec![2.0]);
        assert_eq!(pair_stats(&[], &[1.0]), None);
    }

    #[test]
    fn checks_cover_the_first_and_last_batch() {
        assert!(first_and_last::<u8>(&[]).is_empty());
        assert_eq!(first_and_last(&[1]), vec![&1]);
        assert_eq!(first_and_last(&[1, 2, 3]), vec![&1, &3]);
    }

    #[test]
    fn batches_json_is_ids_types_mask_per_sequence() {
        let t = |n: u32| Tokens {
            ids: vec![101, n, 102],
            type_ids: vec![0, 0, 0],
            mask: vec![1, 1, 1],
        };
        let v = batches_json(&[t(7), t(8), t(9)], 2);
        assert_eq!(
            v,
            serde_json::json!([
                [
                    [[101, 7, 102], [0, 0, 0], [1, 1, 1]],
                    [[101, 8, 102], [0, 0, 0], [1, 1, 1]]
                ],
                [[[101, 9, 102], [0, 0, 0], [1, 1, 1]]]
            ])
        );
    }

    #[test]
    fn disagreeing_vectors_fail_the_real_task() {
        let r = real::RealCheck {
            source: "c.jsonl".into(),
            lengths: vec![3, 4],
            chars: vec![10, 12],
            order: vec![0, 1],
            batch: 2,
            sample: vec![(0, "001-1 §1".into()), (1, "001-1 §2".into())],
            dim: 2,
        };
        let ours = [1.0, 0.0, 0.6, 0.8];
        let close = check_cosines(&r, "st", &ours, &[1.0, 0.0, 0.6, 0.8001]).unwrap();
        assert!(close > real::MIN_COSINE, "{close}");
        // The second passage's vectors are orthogonal: cosine 0.
        let err = check_cosines(&r, "st", &ours, &[1.0, 0.0, 0.8, -0.6])
            .unwrap_err()
            .to_string();
        assert!(err.contains("001-1 §2") && err.contains("st's vector"), "{err}");
        assert!(check_cosines(&r, "st", &ours, &[1.0]).is_err());
    }

    #[test]
    fn the_peers_get_lexbench_s_allocator_policy_only_when_asked() {
        let machine = Machine::detect(1);
        let env = |kept: bool| {
            let s = BenchSettings {
                peer_kept_memory: kept,
                ..BenchSettings::default()
            };
            PythonSide::new("python3", Path::new("s.py"), &s, &machine).env
        };
        let has = |e: &[(String, String)], k: &str, v: &str| e.iter().any(|(a, b)| a == k && b == v);
        let kept = env(true);
        assert!(
            has(&kept, "MALLOC_MMAP_MAX_", "0") && has(&kept, "MALLOC_TRIM_THRESHOLD_", "-1"),
            "{kept:?}"
        );
        let default = env(false);
        assert!(
            !default.iter().any(|(k, _)| k.starts_with("MALLOC_")),
            "{default:?}"
        );
    }

    #[test]
    fn settings_refuse_zero_counts() {
        assert!(BenchSettings::default().validate().is_ok());
        let zero = BenchSettings {
            pairs: 0,
            ..BenchSettings::default()
        };
        assert!(zero.validate().unwrap_err().to_string().contains("pairs"));
        let short = BenchSettings {
            max_len: 3,
            ..BenchSettings::default()
        };
        assert!(short.validate().is_err());
        let real_short = BenchSettings {
            real_max_len: 3,
            ..BenchSettings::default()
        };
        assert!(
            real_short
                .validate()
                .unwrap_err()
                .to_string()
                .contains("real_max_len")
        );
        let no_gemm = BenchSettings {
            gemm_repeats: 0,
            ..BenchSettings::default()
        };
        assert!(
            no_gemm
                .validate()
                .unwrap_err()
                .to_string()
                .contains("gemm_repeats")
        );
        let no_real = BenchSettings {
            real_passages: 0,
            ..BenchSettings::default()
        };
        assert!(
            no_real
                .validate()
                .unwrap_err()
                .to_string()
                .contains("real_passages")
        );
    }
}
