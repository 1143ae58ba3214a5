//! The matrix-product workload of `lexbench-bench --mode gemm`: the encoder's matrix products
//! alone, at the shapes one forward pass runs, to tell how much of the encoder's distance from the FMA
//! peak is in the products themselves.
//!
//! - The shapes ([`shapes`]) come from the model's `config.json` at `batch × max_len` rows: the
//!   query/key/value projection as **one** product `(rows × H)·(H × 3H)` (the frozen inference path
//!   fuses the three: `bert.rs`, `Attention::fuse_qkv`), the attention output `(H × H)`, the
//!   feed-forward up `(H × I)` and down `(I × H)`; and one layer's attention, two products per
//!   (sequence, head), the scores `(T × d)·(d × T)` and the context `(T × T)·(T × d)`, `d = H/heads`.
//! - Candle's engine runs the call the encoder makes for each shape ([`EncoderCall`]):
//!   `kernels::linear` (one gemm into the bias rows, over the cores when large); candle's `matmul`
//!   for the feed-forward up when the activation is exact GELU (the encoder adds that bias in its
//!   fused bias + GELU kernel, not timed here); `kernels::fused_attention` (per (sequence, head) on
//!   one thread, by blocks of query rows: scores, softmax, weighted sum; the pairs spread over the
//!   threads; the softmax timed, not counted).
//!   Beside it, `candle-matmul` is candle's plain `matmul` of the same shape (batched for the
//!   attention, without the softmax).
//! - PyTorch runs `torch.nn.functional.linear(x, w, b)`, and for the attention
//!   `scaled_dot_product_attention` (what transformers' BERT runs), on the same values: every input
//!   is drawn by [`seeded_uniform`], which `bench/scripts/bench_encoder.py` draws bit for bit (numpy), and
//!   the first rows of its output must be within [`MAX_ABS_DIFF`] of candle's, or the run fails.
//! - FLOPs are 2·M·N·K per product ([`GemmShape::flops`]). The report ([`GemmReport`]) gives, per
//!   shape and engine, GFLOP/s, the share of the computed peak and of the FMA throughput measured on
//!   the engine's vector path (`Machine::measured_flops`; none in a debug build), and a layer total:
//!   the four linear products once each, as one encoder layer runs them, timed round by round, with
//!   candle / each other engine per round.
//!
//! ```
//! use lexbench_baselines::encoder::BertConfig;
//! use lexbench_bench::gemm::{Product, shapes};
//! // The tiny config: H 32, I 64, 4 heads of 8; batch 2 × 8 tokens = 16 rows.
//! let s = shapes(&BertConfig::tiny(), 2, 8);
//! assert_eq!(s[0].product, Product::Qkv);
//! assert_eq!((s[0].m, s[0].k, s[0].n), (16, 32, 96));
//! assert_eq!(s[0].flops(), 2.0 * 16.0 * 32.0 * 96.0);
//! ```

use candle_core::{DType, Device, Tensor};
use serde::Serialize;

use crate::harness::{
    BenchReport, BenchSettings, CandleEngine, CandleTask, RatioReport, TaskSpec, candle_label, pair_stats,
};
use crate::machine::median;
use lexbench_baselines::encoder::seeded::SEED;
use lexbench_baselines::encoder::{BertConfig, HiddenAct};
use lexbench_baselines::error::{Error, Result};
use lexbench_engine::kernels;

/// How the workload counts FLOPs.
pub const GEMM_FLOP_FORMULA: &str =
    "2·M·N·K per (M × K)·(K × N) product; the bias and the softmax not counted";

/// The largest |difference| allowed between a Python engine's checked outputs and candle's: the
/// inputs are the same values, so only the order of the sums differs, on outputs of order 1.
pub const MAX_ABS_DIFF: f64 = 1e-3;

/// Rows of each product's output compared between engines.
const CHECK_ROWS: usize = 4;

/// `len` values uniform on `[−scale, scale)`: value `i` is `scale · ((z_i >> 40) / 2²³ − 1)`, `z_i` the
/// `i`-th output of SplitMix64 seeded with `seed` (`lexbench_core::rng::SplitMix64`). 24 random bits
/// make every step exact in f32 for a power-of-two `scale`, so `bench/scripts/bench_encoder.py`
/// (`seeded_uniform`, vectorised in numpy) holds the same bits.
pub fn seeded_uniform(seed: u64, len: usize, scale: f32) -> Vec<f32> {
    let mut rng = lexbench_core::rng::SplitMix64::new(seed);
    (0..len)
        .map(|_| ((rng.next_u64() >> 40) as f32 / 8_388_608.0 - 1.0) * scale)
        .collect()
}

/// The scale of a weight with `k` inputs: the power of two nearest `1/√k` (outputs of order 1, and
/// exact in f32 on both sides).
fn weight_scale(k: usize) -> f32 {
    2f32.powi(-((k.max(1) as f64).sqrt().log2().round() as i32))
}

/// One of the encoder layer's matrix products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Product {
    /// Queries, keys and values in one product.
    Qkv,
    /// The attention's output projection.
    AttentionOutput,
    /// The feed-forward block's first linear layer.
    FfnUp,
    /// Its second.
    FfnDown,
    /// Scores and context of every (sequence, head).
    Attention,
}

impl Product {
    /// `qkv`, `attention-output`, `ffn-up`, `ffn-down`, `attention`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Qkv => "qkv",
            Self::AttentionOutput => "attention-output",
            Self::FfnUp => "ffn-up",
            Self::FfnDown => "ffn-down",
            Self::Attention => "attention",
        }
    }

    /// One of the four linear products a layer total counts.
    pub fn is_linear(self) -> bool {
        self != Self::Attention
    }
}

/// What the encoder calls for a product (inference with its fast paths, on the CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EncoderCall {
    /// `kernels::linear(x, wt, bias)`: one gemm into the bias rows (`PeftLinear` with a frozen weight).
    Linear,
    /// candle's `x.matmul(wt)`, no bias: the feed-forward up before the fused bias + GELU kernel
    /// (`Layer::forward_t` with exact GELU).
    Matmul,
    /// `kernels::fused_attention`: per (sequence, head), on one thread, `Kᵀ` and `V` packed once,
    /// then block of query rows by block the scores, the softmax and the weighted sum; (sequence,
    /// head) pairs spread over the threads.
    FusedAttention,
}

impl EncoderCall {
    /// The function: `kernels::linear`, `matmul`, `kernels::fused_attention`.
    pub fn function(self) -> &'static str {
        match self {
            Self::Linear => "kernels::linear",
            Self::Matmul => "matmul",
            Self::FusedAttention => "kernels::fused_attention",
        }
    }

    /// The call, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Linear => "kernels::linear (one gemm into the bias rows)",
            Self::Matmul => {
                "matmul, no bias (the encoder adds it in the fused bias + GELU kernel, not timed)"
            }
            Self::FusedAttention => {
                "kernels::fused_attention (per (sequence, head) on one thread: scores, softmax and weighted \
                 sum by blocks of query rows; its softmax timed, not counted)"
            }
        }
    }
}

/// A product's shape and how the encoder runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GemmShape {
    /// Which product.
    pub product: Product,
    /// Rows of the left factor (`batch × seq` for a linear layer, `seq` for the attention).
    pub m: usize,
    /// The inner dimension.
    pub k: usize,
    /// Columns of the result.
    pub n: usize,
    /// `(m × k)·(k × n)` products per call: 1 for a linear layer; for the attention 2 per (sequence,
    /// head), the scores `(T × d)·(d × T)` and the context `(T × T)·(T × d)`, of the same FLOPs.
    pub products: usize,
    /// What the encoder calls.
    pub call: EncoderCall,
    /// Sequences.
    pub batch: usize,
    /// Tokens per sequence.
    pub seq: usize,
    /// Attention heads.
    pub heads: usize,
    /// Width of a head.
    pub head_dim: usize,
}

impl GemmShape {
    /// FLOPs of one call: `products × 2·m·k·n`.
    pub fn flops(&self) -> f64 {
        self.products as f64 * 2.0 * (self.m * self.k * self.n) as f64
    }

    /// The task's name in the report: `gemm-qkv`, ….
    pub fn task_name(&self) -> String {
        format!("gemm-{}", self.product.name())
    }

    /// `(4096 × 384)·(384 × 1152)`; the attention's two products and their count.
    pub fn dims(&self) -> String {
        let (m, k, n) = (self.m, self.k, self.n);
        match self.product {
            Product::Attention => format!(
                "({m} × {k})·({k} × {n}) and ({m} × {n})·({n} × {k}) for each of {} (sequence, head) pairs",
                self.products / 2
            ),
            _ => format!("({m} × {k})·({k} × {n})"),
        }
    }
}

/// The matrix products of one layer of `cfg`'s encoder over `batch` sequences of `max_len` tokens
/// (at most the model's `max_tokens`, as the tokenizer truncates): the fused query/key/value
/// projection, the attention output, the feed-forward up and down, then the attention.
pub fn shapes(cfg: &BertConfig, batch: usize, max_len: usize) -> Vec<GemmShape> {
    let t = max_len.min(cfg.max_tokens());
    let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
    let (heads, d) = (cfg.num_attention_heads, cfg.head_dim());
    let rows = batch * t;
    let linear = |product, k, n, call| GemmShape {
        product,
        m: rows,
        k,
        n,
        products: 1,
        call,
        batch,
        seq: t,
        heads,
        head_dim: d,
    };
    // Exact GELU (with a bias, which every loaded linear layer has) goes through the fused bias + GELU
    // kernel after a bias-free matmul; the other activations after `kernels::linear`.
    let up = if cfg.hidden_act == HiddenAct::Gelu {
        EncoderCall::Matmul
    } else {
        EncoderCall::Linear
    };
    vec![
        linear(Product::Qkv, h, 3 * h, EncoderCall::Linear),
        linear(Product::AttentionOutput, h, h, EncoderCall::Linear),
        linear(Product::FfnUp, h, i, up),
        linear(Product::FfnDown, i, h, EncoderCall::Linear),
        GemmShape {
            product: Product::Attention,
            m: t,
            k: d,
            n: t,
            products: 2 * batch * heads,
            call: EncoderCall::FusedAttention,
            batch,
            seq: t,
            heads,
            head_dim: d,
        },
    ]
}

/// Reads `config.json` of the model folder `dir` (the workload loads no weights).
pub fn read_config(dir: &std::path::Path) -> Result<BertConfig> {
    BertConfig::from_file(&dir.join("config.json"))
}

/// The shapes of `cfg` ([`shapes`] at `s.batch × s.max_len`) and one task per shape, each pass
/// `s.gemm_repeats` calls. Candle's CPU only: the kernels and the peak are the CPU's.
pub fn gemm_tasks<'a>(
    cfg: &BertConfig,
    device: &Device,
    s: &BenchSettings,
) -> Result<(Vec<GemmShape>, Vec<CandleTask<'a>>)> {
    if !device.is_cpu() {
        return Err(Error::Param(format!(
            "bench gemm: the workload times candle's CPU kernels against the CPU's FMA peak, not {device:?}"
        )));
    }
    // As the first model of a process does (`BertModel::load`): candle's per-op buffers reused.
    lexbench_engine::heap::keep_freed_memory();
    let shapes = shapes(cfg, s.batch, s.max_len);
    let mut tasks = Vec::with_capacity(shapes.len());
    for (i, shape) in shapes.iter().enumerate() {
        let seed = SEED + 16 * i as u64;
        tasks.push(match shape.call {
            EncoderCall::FusedAttention => attention_task(shape, seed, device, s.gemm_repeats)?,
            _ => linear_task(shape, seed, device, s.gemm_repeats)?,
        });
    }
    Ok((shapes, tasks))
}

fn spec(shape: &GemmShape, description: String, item: &str, repeats: usize) -> TaskSpec {
    TaskSpec {
        name: shape.task_name(),
        description,
        item: item.into(),
        unit: format!("{item}s"),
        items: repeats,
        flops: repeats as f64 * shape.flops(),
        flop_formula: GEMM_FLOP_FORMULA.into(),
        mean_tokens: shape.seq as f64,
    }
}

/// A linear product: `x` `(m, k)`, the weight `(n, k)` as a checkpoint stores it (PyTorch's
/// `F.linear` reads it so; candle gets the contiguous transposed copy `PeftLinear::freeze` keeps),
/// the bias `(n)`, drawn from `seed`, `seed + 1`, `seed + 2`.
fn linear_task<'a>(shape: &GemmShape, seed: u64, device: &Device, repeats: usize) -> Result<CandleTask<'a>> {
    let (m, k, n) = (shape.m, shape.k, shape.n);
    let w_scale = weight_scale(k);
    let x = Tensor::from_vec(seeded_uniform(seed, m * k, 1.0), (m, k), device)?;
    let w = Tensor::from_vec(seeded_uniform(seed + 1, n * k, w_scale), (n, k), device)?;
    let wt = w.t()?.contiguous()?;
    let b = Tensor::from_vec(seeded_uniform(seed + 2, n, 1.0), n, device)?;
    let call: fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor> = match shape.call {
        EncoderCall::Matmul => |x, wt, _| Ok(x.matmul(wt)?),
        _ => |x, wt, b| Ok(kernels::linear(x, wt, b)?),
    };
    // The check is the layer's pre-activation output, `x · wt + b`, whichever call runs.
    let mut y = call(&x, &wt, &b)?;
    if shape.call == EncoderCall::Matmul {
        y = y.broadcast_add(&b)?;
    }
    let check = y
        .narrow(0, 0, m.min(CHECK_ROWS))?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let python = serde_json::json!({
        "kind": "gemm",
        "op": "linear",
        "m": m,
        "k": k,
        "n": n,
        "repeats": repeats,
        "x": {"seed": seed, "scale": 1.0},
        "w": {"seed": seed + 1, "scale": w_scale},
        "b": {"seed": seed + 2, "scale": 1.0},
        "check_rows": CHECK_ROWS,
    });
    let what = match shape.product {
        Product::Qkv => "query/key/value projection (fused)",
        Product::AttentionOutput => "attention output projection",
        Product::FfnUp => "feed-forward up",
        _ => "feed-forward down",
    };
    let description = format!(
        "{what} {} + bias, {repeats} per pass: candle {} as the encoder calls it; candle's plain matmul; \
         PyTorch torch.nn.functional.linear(x, w, b)",
        shape.dims(),
        shape.call.describe()
    );
    let label = candle_label(device);
    let engines = vec![
        CandleEngine {
            name: "candle".into(),
            label: format!("{label}: {}", shape.call.describe()),
            device: device.clone(),
            pass: {
                let (x, wt, b) = (x.clone(), wt.clone(), b.clone());
                Box::new(move || {
                    for _ in 0..repeats {
                        call(&x, &wt, &b)?;
                    }
                    Ok(())
                })
            },
        },
        CandleEngine {
            name: "candle-matmul".into(),
            label: format!("{label}: candle matmul x·wt, no bias"),
            device: device.clone(),
            pass: Box::new(move || {
                for _ in 0..repeats {
                    x.matmul(&wt)?;
                }
                Ok(())
            }),
        },
    ];
    Ok(CandleTask {
        spec: spec(shape, description, "product", repeats),
        engines,
        check,
        python: Some(python),
        real: None,
    })
}

/// One layer's attention: the fused projection's output `(batch · seq, 3 · heads · d)` drawn from
/// `seed` (queries taken as already scaled, as the fused projection makes them), no padding.
fn attention_task<'a>(
    shape: &GemmShape,
    seed: u64,
    device: &Device,
    repeats: usize,
) -> Result<CandleTask<'a>> {
    let (b, t, heads, d) = (shape.batch, shape.seq, shape.heads, shape.head_dim);
    let hid = heads * d;
    let qkv = Tensor::from_vec(
        seeded_uniform(seed, b * t * 3 * hid, 1.0),
        (b * t, 3 * hid),
        device,
    )?;
    // The encoder's mask of a batch without padding.
    let mask = Tensor::zeros((b, t), DType::F32, device)?;
    let ctx = kernels::fused_attention(&qkv, &mask, b, t, heads, d)?;
    let check = ctx
        .narrow(0, 0, (b * t).min(CHECK_ROWS))?
        .flatten_all()?
        .to_vec1::<f32>()?;
    // `(b · heads, t, d)` each, contiguous, as the plain path's `split_heads` makes them.
    let split = qkv
        .reshape((b, t, 3, heads, d))?
        .permute((2, 0, 3, 1, 4))?
        .contiguous()?;
    let part = |i: usize| -> Result<Tensor> { Ok(split.get(i)?.reshape((b * heads, t, d))?) };
    let (q, k, v) = (part(0)?, part(1)?, part(2)?);
    let python = serde_json::json!({
        "kind": "gemm",
        "op": "attention",
        "batch": b,
        "seq": t,
        "heads": heads,
        "head_dim": d,
        "repeats": repeats,
        "qkv": {"seed": seed, "scale": 1.0},
        "check_rows": CHECK_ROWS,
    });
    let description = format!(
        "one layer's attention, {}, no padding, {repeats} per pass: candle {} as the encoder calls it; \
         candle's batched matmuls Q·Kᵀ then ·V (no softmax); PyTorch scaled_dot_product_attention (softmax \
         included, as transformers' BERT runs it)",
        shape.dims(),
        shape.call.describe()
    );
    let label = candle_label(device);
    let engines = vec![
        CandleEngine {
            name: "candle".into(),
            label: format!("{label}: {}", shape.call.describe()),
            device: device.clone(),
            pass: Box::new(move || {
                for _ in 0..repeats {
                    kernels::fused_attention(&qkv, &mask, b, t, heads, d)?;
                }
                Ok(())
            }),
        },
        CandleEngine {
            name: "candle-matmul".into(),
            label: format!("{label}: candle batched matmuls, no softmax"),
            device: device.clone(),
            pass: Box::new(move || {
                for _ in 0..repeats {
                    q.matmul(&k.t()?)?.matmul(&v)?;
                }
                Ok(())
            }),
        },
    ];
    Ok(CandleTask {
        spec: spec(shape, description, "call", repeats),
        engines,
        check,
        python: Some(python),
        real: None,
    })
}

/// One engine's rate on a product (or a layer's), against the peak and the measured throughput.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GemmFigures {
    /// `candle`, `candle-matmul`, `torch`.
    pub engine: String,
    /// GFLOP/s, median round.
    pub gflops: f64,
    /// Over the computed FMA peak of the engine's vector path.
    pub share_of_peak: f64,
    /// The FMA throughput measured on that path on every bench thread, GFLOP/s (`None`: not
    /// measured, as in a debug build).
    pub measured_gflops: Option<f64>,
    /// `gflops / measured_gflops`.
    pub share_of_measured: Option<f64>,
}

/// One shape's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeReport {
    /// The task's name (`gemm-qkv`, …).
    pub task: String,
    /// The shape.
    pub shape: GemmShape,
    /// FLOPs of one call.
    pub flops: f64,
    /// Each engine, candle's first.
    pub engines: Vec<GemmFigures>,
}

/// One engine over a layer's four linear products.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerEngine {
    /// Its rate.
    #[serde(flatten)]
    pub figures: GemmFigures,
    /// Seconds of the four products, one call each, per round ([`round_sums`]).
    pub seconds: Vec<f64>,
    /// Their median.
    pub median_seconds: f64,
}

/// The four linear products once each, as one encoder layer runs them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerTotal {
    /// The products counted.
    pub products: Vec<String>,
    /// Their FLOPs.
    pub flops: f64,
    /// Each engine that ran all four, candle's first.
    pub engines: Vec<LayerEngine>,
    /// Candle / each other engine, round by round.
    pub ratios: Vec<RatioReport>,
}

/// The gemm workload's summary (the tasks' own figures are in the report's tasks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GemmReport {
    /// Sequences.
    pub batch: usize,
    /// Tokens per sequence.
    pub seq: usize,
    /// Rows of the linear products.
    pub rows: usize,
    /// Calls per timed pass.
    pub repeats: usize,
    /// Per shape.
    pub shapes: Vec<ShapeReport>,
    /// The layer total.
    pub layer_total: LayerTotal,
    /// Why the shares of the measured FMA throughput are missing, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
}

/// Seconds of one call of each shape summed round by round: `Σ seconds[r] / calls` over the shapes,
/// each given as (its seconds per round, its calls per pass). `None` without a shape or a round, or
/// when the shapes' round counts differ.
pub fn round_sums(per_shape: &[(&[f64], usize)]) -> Option<Vec<f64>> {
    let rounds = per_shape.first()?.0.len();
    if rounds == 0
        || per_shape
            .iter()
            .any(|(s, calls)| s.len() != rounds || *calls == 0)
    {
        return None;
    }
    Some(
        (0..rounds)
            .map(|r| per_shape.iter().map(|(s, calls)| s[r] / *calls as f64).sum())
            .collect(),
    )
}

/// Fails when `engine`'s checked outputs on `task` are further than [`MAX_ABS_DIFF`] from candle's
/// (or could not be compared, NaN): the engines would not be multiplying the same matrices.
pub fn check_diff(task: &str, engine: &str, diff: f64) -> Result<()> {
    if diff.is_nan() || diff > MAX_ABS_DIFF {
        return Err(Error::data(
            format!("bench {task}"),
            format!(
                "{engine}'s outputs differ from candle's by {diff:.1e} (at most {MAX_ABS_DIFF:.0e}; NaN: another \
                 shape): the engines do not multiply the same matrices, so their timings are not compared"
            ),
        ));
    }
    Ok(())
}

/// The summary of the gemm tasks of `report` (measured, one per shape of `shapes`): each engine's
/// figures per shape and over a layer's four linear products. A Python engine whose outputs are not
/// candle's ([`check_diff`]) fails it.
pub fn summarize(report: &BenchReport, shapes: &[GemmShape]) -> Result<GemmReport> {
    let figures = |engine: &str, gflops: f64, peak: f64| {
        let (path, _) = report.path_of(engine);
        let measured = report.machine.measured_flops(path.isa).map(|f| f / 1e9);
        GemmFigures {
            engine: engine.to_owned(),
            gflops,
            share_of_peak: gflops / peak,
            measured_gflops: measured,
            share_of_measured: measured.map(|m| gflops / m),
        }
    };
    let mut out = Vec::with_capacity(shapes.len());
    let mut layer = Vec::new();
    for shape in shapes {
        let name = shape.task_name();
        let task = report
            .tasks
            .iter()
            .find(|t| t.spec.name == name)
            .ok_or_else(|| Error::internal(format!("bench gemm: task {name} was not measured")))?;
        for e in &task.engines {
            if let Some(d) = e.max_abs_diff {
                check_diff(&name, &e.engine, d)?;
            }
        }
        out.push(ShapeReport {
            task: name,
            shape: shape.clone(),
            flops: shape.flops(),
            engines: task
                .engines
                .iter()
                .map(|e| figures(&e.engine, e.median_gflops, e.peak_gflops))
                .collect(),
        });
        if shape.product.is_linear() {
            layer.push((task, shape));
        }
    }
    let flops: f64 = layer.iter().map(|(_, s)| s.flops()).sum();
    let mut engines: Vec<LayerEngine> = Vec::new();
    if let Some((first, _)) = layer.first() {
        for e in &first.engines {
            let per_shape: Option<Vec<(&[f64], usize)>> = layer
                .iter()
                .map(|(t, _)| {
                    let x = t.engines.iter().find(|x| x.engine == e.engine)?;
                    Some((x.seconds.as_slice(), t.spec.items))
                })
                .collect();
            let Some(seconds) = per_shape.as_deref().and_then(round_sums) else {
                continue;
            };
            let med = median(&seconds);
            engines.push(LayerEngine {
                figures: figures(&e.engine, flops / med / 1e9, e.peak_gflops),
                seconds,
                median_seconds: med,
            });
        }
    }
    let ratios = match engines.split_first() {
        Some((candle, others)) => others
            .iter()
            .filter_map(|o| {
                Some(RatioReport {
                    numerator: candle.figures.engine.clone(),
                    denominator: o.figures.engine.clone(),
                    stats: pair_stats(&candle.seconds, &o.seconds)?,
                })
            })
            .collect(),
        None => Vec::new(),
    };
    let missing = out
        .iter()
        .flat_map(|s| &s.engines)
        .any(|f| f.measured_gflops.is_none());
    let not_measured = missing.then(|| {
        if cfg!(debug_assertions) {
            "not measured: a debug build, run a release build".to_owned()
        } else {
            "not measured on this vector path".to_owned()
        }
    });
    let s = &report.settings;
    let seq = shapes.first().map_or(s.max_len, |x| x.seq);
    Ok(GemmReport {
        batch: s.batch,
        seq,
        rows: s.batch * seq,
        repeats: s.gemm_repeats,
        shapes: out,
        layer_total: LayerTotal {
            products: layer.iter().map(|(_, s)| s.product.name().to_owned()).collect(),
            flops,
            engines,
            ratios,
        },
        not_measured,
    })
}

impl GemmReport {
    /// The summary for people, after the tasks' own lines.
    pub fn lines(&self) -> Vec<String> {
        let rate = |f: &GemmFigures| {
            let measured = match (f.share_of_measured, f.measured_gflops) {
                (Some(x), Some(m)) => format!("{:.1}% of the measured {m:.1}", 100.0 * x),
                _ => "share of the measured: not measured".to_owned(),
            };
            format!(
                "{} {:.1} GFLOP/s = {:.1}% of peak, {measured}",
                f.engine,
                f.gflops,
                100.0 * f.share_of_peak
            )
        };
        let mut lines = vec![format!(
            "gemm summary: the encoder's matrix products at {} rows (batch {} × {} tokens), {} calls per pass; \
             each engine against the computed FMA peak and the FMA throughput measured on its vector path{}",
            self.rows,
            self.batch,
            self.seq,
            self.repeats,
            self.not_measured
                .as_ref()
                .map_or(String::new(), |n| format!("; FMA throughput {n}"))
        )];
        for s in &self.shapes {
            let rates: Vec<String> = s.engines.iter().map(rate).collect();
            lines.push(format!(
                "  {} {} [{}], {:.4} GFLOP: {}",
                s.shape.product.name(),
                s.shape.dims(),
                s.shape.call.function(),
                s.flops / 1e9,
                rates.join("; ")
            ));
        }
        let t = &self.layer_total;
        let rates: Vec<String> = t
            .engines
            .iter()
            .map(|e| format!("{} ({:.3} ms)", rate(&e.figures), 1e3 * e.median_seconds))
            .collect();
        lines.push(format!(
            "  layer total ({} once each, {:.4} GFLOP): {}",
            t.products.join(" + "),
            t.flops / 1e9,
            rates.join("; ")
        ));
        for r in &t.ratios {
            lines.push(r.line("layer total "));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    //! Properties: the shapes of a config are the encoder's (Q, K and V as one product of width 3H,
    //! the attention output, the feed-forward up and down, the attention per (sequence, head)), at
    //! `batch × max_len` rows truncated to the model's positions, with the feed-forward up a bias-free
    //! matmul exactly under exact GELU; their FLOPs match a hand count and, summed over the layers,
    //! the encoder's FLOP formula; the seeded values are SplitMix64's top 24 bits (a hand-computed
    //! first value, the same on every call, within the range); the layer total sums one call of each
    //! shape per round and refuses uneven rounds; a Python engine whose outputs are not candle's fails.
    use super::*;

    fn minilm() -> BertConfig {
        BertConfig {
            hidden_size: 384,
            num_hidden_layers: 6,
            num_attention_heads: 12,
            intermediate_size: 1536,
            max_position_embeddings: 512,
            ..BertConfig::tiny()
        }
    }

    #[test]
    fn the_shapes_are_the_encoders() {
        let s = shapes(&minilm(), 32, 128);
        let got: Vec<(Product, usize, usize, usize, usize, EncoderCall)> = s
            .iter()
            .map(|x| (x.product, x.m, x.k, x.n, x.products, x.call))
            .collect();
        assert_eq!(
            got,
            vec![
                (Product::Qkv, 4096, 384, 1152, 1, EncoderCall::Linear),
                (Product::AttentionOutput, 4096, 384, 384, 1, EncoderCall::Linear),
                (Product::FfnUp, 4096, 384, 1536, 1, EncoderCall::Matmul),
                (Product::FfnDown, 4096, 1536, 384, 1, EncoderCall::Linear),
                // 32 sequences × 12 heads, scores and context each.
                (Product::Attention, 128, 32, 128, 768, EncoderCall::FusedAttention),
            ]
        );
        assert_eq!(s[0].task_name(), "gemm-qkv");
        assert_eq!(
            s[4].dims(),
            "(128 × 32)·(32 × 128) and (128 × 128)·(128 × 32) for each of 384 (sequence, head) pairs"
        );
        // Truncated to the model's 64 positions; another activation runs the feed-forward up through
        // `kernels::linear`.
        let tanh = BertConfig {
            hidden_act: HiddenAct::GeluTanh,
            ..BertConfig::tiny()
        };
        let s = shapes(&tanh, 3, 100);
        assert_eq!((s[0].m, s[0].seq, s[4].m), (3 * 64, 64, 64));
        assert_eq!(s[2].call, EncoderCall::Linear);
    }

    #[test]
    fn flops_match_a_hand_count_and_the_encoder_formula() {
        let s = shapes(&minilm(), 32, 128);
        let f: Vec<f64> = s.iter().map(GemmShape::flops).collect();
        // 2 · 4096 · 384 · 1152, 2 · 4096 · 384², 2 · 4096 · 384 · 1536 twice, 768 · 2 · 128² · 32.
        assert_eq!(
            f,
            vec![
                3_623_878_656.0,
                1_207_959_552.0,
                4_831_838_208.0,
                4_831_838_208.0,
                805_306_368.0
            ]
        );
        // Six layers of these, over 32 sequences, are the encode task's FLOPs.
        let layer: f64 = f.iter().sum();
        let formula = 32.0 * crate::harness::transformer_flops(6, 384, 1536, 128);
        assert!((6.0 * layer / formula - 1.0).abs() < 1e-12, "{layer} {formula}");
        let linear: f64 = s
            .iter()
            .filter(|x| x.product.is_linear())
            .map(GemmShape::flops)
            .sum();
        assert_eq!(linear, 14_495_514_624.0);
    }

    #[test]
    fn seeded_values_are_splitmix_top_bits() {
        // SplitMix64(0)'s first output 0xE220A8397B1DCDAF: top 24 bits 0xE220A8 = 14_819_496;
        // 14_819_496 / 2²³ − 1 = 0.766_601_…
        let v = seeded_uniform(0, 3, 1.0);
        assert_eq!(v[0], 14_819_496.0 / 8_388_608.0 - 1.0);
        assert_eq!(seeded_uniform(0, 3, 0.25)[0], v[0] / 4.0);
        assert_eq!(v, seeded_uniform(0, 3, 1.0));
        assert_ne!(v, seeded_uniform(1, 3, 1.0));
        let many = seeded_uniform(SEED, 10_000, 0.5);
        assert!(many.iter().all(|x| (-0.5..0.5).contains(x)));
        let mean = many.iter().map(|&x| f64::from(x)).sum::<f64>() / 1e4;
        assert!(mean.abs() < 0.02, "{mean}");
        assert_eq!(
            (weight_scale(384), weight_scale(1536), weight_scale(64)),
            (1.0 / 16.0, 1.0 / 32.0, 0.125)
        );
    }

    #[test]
    fn the_layer_total_sums_one_call_per_shape_per_round() {
        // Two shapes, 2 and 4 calls per pass, two rounds.
        let a = [2.0, 4.0];
        let b = [4.0, 8.0];
        assert_eq!(round_sums(&[(&a, 2), (&b, 4)]), Some(vec![2.0, 4.0]));
        assert_eq!(round_sums(&[(&a, 2), (&b[..1], 4)]), None);
        assert_eq!(round_sums(&[]), None);
        assert_eq!(round_sums(&[(&[], 1)]), None);
        assert_eq!(round_sums(&[(&a, 0)]), None);
    }

    #[test]
    fn outputs_that_are_not_candles_fail() {
        assert!(check_diff("gemm-qkv", "torch", 2e-6).is_ok());
        let err = check_diff("gemm-qkv", "torch", 0.5).unwrap_err().to_string();
        assert!(
            err.contains("gemm-qkv") && err.contains("torch's outputs"),
            "{err}"
        );
        assert!(check_diff("gemm-qkv", "torch", f64::NAN).is_err());
    }
}
