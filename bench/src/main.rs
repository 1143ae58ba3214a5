//! `lexbench-bench`: the candle encoder against PyTorch and ONNX Runtime on the same model folder,
//! token ids, batches and thread count, engines alternating pass by pass ([`lexbench_bench::harness`]),
//! headed by the machine report (CPU, vector path, measured clock, FP32 FMA peak:
//! [`lexbench_bench::machine`]) and the load average before and after. `--mode` picks the workloads:
//! encoding passages, cross-encoder pairs over a pool (`scorers::cross`), ColBERT documents and MaxSim
//! over a pool (`scorers::colbert`), real paragraphs of a segmented judgment corpus through `run
//! dense`'s batching against sentence-transformers ([`lexbench_bench::real`]), and one layer's matrix
//! products alone at the encoder's shapes against `torch.nn.functional.linear`
//! ([`lexbench_bench::gemm`]: only `config.json` is read); `--train-step` adds one DPR training step,
//! measured the same way ([`lexbench_bench::train_step`]). The corpus is read here, with the reader
//! `lexbench import release --texts` uses (`lexbench_parsers::judgment::segmented`), before any model
//! is loaded.
//!
//! A developer's tool, not part of the `lexbench` binary: `cargo run --release -p lexbench-bench --
//! --mode encode,gemm`. Built in the dev profile the figures are those of the dev build (candle and
//! gemm at opt-level 3, the rest not; the clock is then read, not measured).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use lexbench::device::DeviceChoice;
use lexbench_baselines::Device;
use lexbench_baselines::encoder::{BertModel, TextTokenizer};
use lexbench_baselines::scorers::colbert::{ColBert, ColBertConfig, MaxSimDocs};
use lexbench_baselines::scorers::cross::CrossEncoder;
use lexbench_bench::gemm;
use lexbench_bench::harness::{
    self as bench, BenchReport, BenchSettings, CandleTask, ColbertInputs, CrossInputs, PythonSide,
};
use lexbench_bench::machine::Machine;
use lexbench_bench::real::{self, RealPassage};

/// The allocator policy of the Python engines (`--peer-allocator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PeerAllocator {
    /// glibc's defaults.
    Default,
    /// Freed memory kept and reused, as `lexbench` runs.
    Kept,
}

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReportFormat {
    /// Aligned text for people.
    Human,
    /// One JSON document.
    Json,
}

/// glibc's allocator with large blocks in transparent huge pages, as `lexbench` runs (engine's `heap`).
#[global_allocator]
static ALLOCATOR: lexbench_engine::heap::HugePages = lexbench_engine::heap::HugePages;

fn main() -> ExitCode {
    // The allocator policy `lexbench` runs under (engine's `heap`), so the figures are its.
    lexbench_engine::heap::keep_freed_memory();
    let args = BenchArgs::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// A workload of `lexbench-bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Passages through the bi-encoder: forward, pooling, normalisation (`--passages`).
    Encode,
    /// One query against each paragraph of a pool (`--pool`) through a cross-encoder: pairs/s.
    Cross,
    /// ColBERT over a pool (`--pool`): documents to token vectors, and MaxSim of `--queries` queries
    /// against them.
    Colbert,
    /// Real paragraphs (`--texts`, `--real-passages`) through the bi-encoder as `run dense` batches
    /// them (sorted by token length), against sentence-transformers' `encode`: passages/s, real
    /// tokens/s, token lengths, each engine's padding.
    Real,
    /// One layer's matrix products alone, at `--batch` × `--max-len` rows (the model's config): Q/K/V
    /// fused, attention output, feed-forward up and down, and the attention per (sequence, head), each
    /// as the encoder calls it, beside candle's plain matmul and PyTorch's F.linear (its scaled dot
    /// product attention): GFLOP/s, share of the peak and of the measured FMA throughput, layer total.
    Gemm,
}

/// Encoder and training-step throughput against PyTorch and ONNX Runtime, in the same run.
#[derive(Debug, Parser)]
#[command(name = "lexbench-bench", version)]
struct BenchArgs {
    /// A HuggingFace BERT folder.
    #[arg(long, default_value = "models/minilm")]
    model: PathBuf,
    /// Workloads, comma-separated: encode, cross, colbert, real, gemm.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "encode")]
    mode: Vec<Mode>,
    /// Number of passages of the encode workload (each long enough to be truncated to `--max-len`
    /// tokens).
    #[arg(long, default_value_t = 256)]
    passages: usize,
    /// Sequences per forward pass.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Truncation length in tokens (ColBERT's document length) [default: 128; real: `run dense`'s
    /// default, the model's max_seq_length (sentence_bert_config.json), else 256].
    #[arg(long)]
    max_len: Option<usize>,
    /// Timed rounds: each runs one pass of every engine (candle, PyTorch, ONNX Runtime, candle, …),
    /// or one step of each of the training step's (candle, PyTorch, candle, …; this replaces its
    /// former `--repeats`, best of N); the report gives each round's ratio, their median and range.
    #[arg(long, default_value_t = 5)]
    pairs: usize,
    /// Paragraphs in the pool of the cross and colbert workloads.
    #[arg(long, default_value_t = 100)]
    pool: usize,
    /// Queries per ColBERT MaxSim pass.
    #[arg(long, default_value_t = 20)]
    queries: usize,
    /// The corpus of the real workload: JSON Lines, one judgment a line, `{"itemid", "paragraphs":
    /// [{"num", "text"}]}`, read as `import release --texts` reads it (leading numbers removed,
    /// unnumbered blocks left out) [default: $LEXBENCH_FIXTURES/hudoc/lexclipr/judgments.jsonl;
    /// LEXBENCH_FIXTURES defaults to ../shared/fixtures beside the checkout].
    #[arg(long, value_name = "FILE")]
    texts: Option<PathBuf>,
    /// Paragraphs of the real workload: the first N of `--texts` in file order (deterministic; all
    /// of them when the file has fewer).
    #[arg(long, default_value_t = 2000)]
    real_passages: usize,
    /// Calls of each product per timed pass of the gemm workload.
    #[arg(long, default_value_t = 10)]
    gemm_repeats: usize,
    /// The Python with torch and transformers (and onnxruntime, onnx, onnxscript for ONNX Runtime:
    /// `scripts/bench-env` makes target/bench-venv).
    #[arg(long, env = "LEXBENCH_PYTHON", default_value = "python3")]
    python: String,
    /// Skip PyTorch and ONNX Runtime.
    #[arg(long)]
    no_python: bool,
    /// Skip ONNX Runtime.
    #[arg(long)]
    no_ort: bool,
    /// The allocator policy of the Python engines' process: `default` (glibc's: a fresh mapping,
    /// faulted in and zeroed, for each large block) or `kept` (freed memory kept and reused, as
    /// `lexbench` runs: `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=-1`). The report names it.
    #[arg(long, value_enum, default_value = "default")]
    peer_allocator: PeerAllocator,
    /// Also time candle with the encoder's fast paths off (encode workload).
    #[arg(long)]
    plain: bool,
    /// Also time one DPR training step (batch 8 × query + 1 positive + 5 negatives of `--max-len`
    /// tokens, backward, AdamW) against PyTorch's (scripts/bench_train_step.py), step by step in
    /// `--pairs` rounds like the other workloads: examples/s, GFLOP/s (3 × the forward's FLOPs),
    /// share of the peak, candle / PyTorch per pair.
    #[arg(long)]
    train_step: bool,
    /// Only the training step (implies `--train-step`), after the machine report.
    #[arg(long)]
    train_step_only: bool,
    /// Where candle runs: cpu, cuda or cuda:N [default: cuda when built with the `cuda` feature and a
    /// GPU is present, else cpu]; the Python engines always run on the CPU.
    #[arg(long, value_name = "cpu|cuda[:N]", value_parser = clap::value_parser!(DeviceChoice))]
    device: Option<DeviceChoice>,
    /// The report's format.
    #[arg(long, value_enum, default_value = "human")]
    format: ReportFormat,
}

/// Runs the benchmark and prints the report.
fn run(args: &BenchArgs) -> Result<ExitCode> {
    let format = args.format;
    // The Python peers beside this crate (`bench/scripts`), read from the checkout this binary was
    // built in: a binary run elsewhere says so before it measures, not a peer "unavailable" after.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if !args.no_python {
        for script in ["scripts/bench_encoder.py", "scripts/bench_train_step.py"] {
            let path = root.join(script);
            if !path.is_file() {
                anyhow::bail!(
                    "{}: no such file: the Python peers' scripts are read from the checkout this \
                     binary was built in (build it in the checkout you run it from, or pass --no-python)",
                    path.display()
                );
            }
        }
    }
    let real_mode = args.mode.contains(&Mode::Real) && !args.train_step_only;
    let real_max_len = match args.max_len {
        Some(n) => n,
        None if real_mode => lexbench_baselines::encoder::st::model_max_len(&args.model)
            .with_context(|| format!("reading the settings of {}", args.model.display()))?
            .unwrap_or(256),
        None => BenchSettings::default().real_max_len,
    };
    let settings = BenchSettings {
        passages: args.passages,
        batch: args.batch,
        max_len: args.max_len.unwrap_or(128),
        pairs: args.pairs,
        pool: args.pool,
        queries: args.queries,
        // ONNX Runtime runs graphs of whole models only: not for the gemm workload alone.
        ort: !args.no_ort && args.mode.iter().any(|m| *m != Mode::Gemm),
        plain: args.plain,
        real_passages: args.real_passages,
        real_max_len,
        gemm_repeats: args.gemm_repeats,
        peer_kept_memory: args.peer_allocator == PeerAllocator::Kept,
        ..BenchSettings::default()
    };
    settings.validate()?;
    let device = lexbench::device::resolve(args.device)?;
    // The corpus first: a bad line is reported before minutes of model loading.
    let texts_file = args.texts.clone().unwrap_or_else(|| {
        std::env::var_os("LEXBENCH_FIXTURES")
            .map_or_else(|| root.join("../../shared/fixtures"), PathBuf::from)
            .join("hudoc/lexclipr/judgments.jsonl")
    });
    let real_passages = real_mode
        .then(|| read_paragraphs(&texts_file, settings.real_passages))
        .transpose()?;
    let machine = Machine::detect(settings.threads);
    let side = (!args.no_python).then(|| {
        PythonSide::new(
            &args.python,
            &root.join("scripts/bench_encoder.py"),
            &settings,
            &machine,
        )
        .on_device(&device)
    });
    let mut report = BenchReport::begin(&args.model, &settings, machine);
    report.on_device(&device);
    if !args.train_step_only {
        let modes = |m: Mode| args.mode.contains(&m);
        let ctx = || format!("benchmarking {}", args.model.display());
        // The models outlive the tasks, which borrow them.
        let enc = modes(Mode::Encode)
            .then(|| bench::load_encoder(&args.model, &device, &settings))
            .transpose()
            .with_context(ctx)?;
        let plain = match &enc {
            Some(e) => bench::plain_encoder(e, &settings).with_context(ctx)?,
            None => None,
        };
        let cross = modes(Mode::Cross)
            .then(|| load_cross(&args.model, &device, &settings))
            .transpose()
            .with_context(ctx)?;
        let colbert = modes(Mode::Colbert)
            .then(|| load_colbert(&args.model, &device, &settings))
            .transpose()
            .with_context(ctx)?;
        let real_enc = real_passages
            .is_some()
            .then(|| real::load_encoder(&args.model, &device, settings.real_max_len, settings.batch))
            .transpose()
            .with_context(ctx)?;
        let gemm_config = modes(Mode::Gemm)
            .then(|| gemm::read_config(&args.model))
            .transpose()
            .with_context(ctx)?;
        let mut tasks: Vec<CandleTask<'_>> = Vec::new();
        if let Some(e) = &enc {
            tasks.push(bench::encode_task(e, plain.as_ref(), &settings).with_context(ctx)?);
        }
        if let Some(c) = &cross {
            tasks.push(cross_task(c, &device, &settings).with_context(ctx)?);
        }
        if let Some(c) = &colbert {
            tasks.extend(colbert_tasks(c, &device, &settings).with_context(ctx)?);
        }
        if let (Some(e), Some(p)) = (&real_enc, &real_passages) {
            let source = texts_file.display().to_string();
            tasks.push(real::real_task(e, p, &source).with_context(ctx)?);
        }
        let mut gemm_shapes = None;
        if let Some(cfg) = &gemm_config {
            let (shapes, t) = gemm::gemm_tasks(cfg, &device, &settings).with_context(ctx)?;
            tasks.extend(t);
            gemm_shapes = Some(shapes);
        }
        report.measure(tasks, side.as_ref()).with_context(ctx)?;
        if let Some(shapes) = &gemm_shapes {
            report.gemm = Some(gemm::summarize(&report, shapes).with_context(ctx)?);
        }
    }
    if args.train_step || args.train_step_only {
        use lexbench_bench::train_step::{self as step, StepSettings};
        let ctx = || format!("benchmarking a training step of {}", args.model.display());
        let steps = StepSettings {
            max_len: settings.max_len,
            ..StepSettings::default()
        };
        // PyTorch's step runs in its own process, on the same interpreter and switches.
        let side = side.map(|mut s| {
            s.script = root.join("scripts/bench_train_step.py");
            s.engines = vec!["torch".to_owned()];
            s
        });
        let setup = step::load(&args.model, &device, &steps).with_context(ctx)?;
        let task = step::task(&setup).with_context(ctx)?;
        report.measure(vec![task], side.as_ref()).with_context(ctx)?;
    }
    report.finish();
    match format {
        ReportFormat::Human => {
            for l in report.lines() {
                println!("{l}");
            }
        }
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
    }
    Ok(ExitCode::SUCCESS)
}

/// The cross-encoder the cross workload runs: the folder's BERT with its pooler and a seeded
/// one-logit head (as `rank::cross` gives a checkpoint without one: N(0, 0.02²), bias 0; a
/// checkpoint's own head is not read, its cost is the same), and the values PyTorch gets.
struct CrossSetup {
    model: CrossEncoder,
    config: lexbench_baselines::encoder::BertConfig,
    pad_id: u32,
    head_weight: Vec<f32>,
}

fn load_cross(dir: &Path, device: &Device, s: &BenchSettings) -> lexbench_baselines::Result<CrossSetup> {
    let bert = BertModel::from_dir(dir, device)?;
    let config = bert.config().clone();
    let tok = TextTokenizer::from_file(&dir.join("tokenizer.json"), s.max_len.min(config.max_tokens()))?;
    let pad_id = tok.pad_id();
    let h = config.hidden_size;
    let (vb, head_weight) =
        bench::seeded_weights("classifier.weight", 1, h, 0.02, &[("classifier.bias", 1)], device)?;
    Ok(CrossSetup {
        model: CrossEncoder::new(bert, tok, vb, s.batch)?,
        config,
        pad_id,
        head_weight,
    })
}

fn cross_task<'a>(
    c: &'a CrossSetup,
    device: &Device,
    s: &BenchSettings,
) -> lexbench_baselines::Result<CandleTask<'a>> {
    let query = bench::queries(1).remove(0);
    let pool = bench::passages(s.pool);
    let pairs: Vec<(&str, &str)> = pool.iter().map(|p| (query.as_str(), p.as_str())).collect();
    let inputs = CrossInputs {
        pairs: c.model.tokenize(&pairs)?,
        pad_id: c.pad_id,
        head_weight: c.head_weight.clone(),
        head_bias: 0.0,
    };
    bench::cross_task(
        |seqs| c.model.forward_t(seqs, false),
        inputs,
        &c.config,
        device,
        s,
    )
}

/// The ColBERT scorer the colbert workload runs: the folder's BERT, its settings (markers, `dim`:
/// `artifact.metadata` when it has one), documents of `--max-len` tokens, and a seeded projection
/// (as `rank::colbert` gives a checkpoint without one: N(0, 1/hidden); a checkpoint's own is not read,
/// its cost is the same), whose values PyTorch gets.
struct ColbertSetup {
    model: ColBert,
    config: lexbench_baselines::encoder::BertConfig,
    pad_id: u32,
    linear: Vec<f32>,
}

fn load_colbert(dir: &Path, device: &Device, s: &BenchSettings) -> lexbench_baselines::Result<ColbertSetup> {
    let cfg = ColBertConfig {
        doc_maxlen: s.max_len,
        batch_size: s.batch,
        ..ColBertConfig::default()
    }
    .with_model_settings(dir)?;
    let bert = BertModel::from_dir(dir, device)?;
    let config = bert.config().clone();
    let tok = TextTokenizer::from_file(&dir.join("tokenizer.json"), cfg.doc_maxlen)?;
    let h = config.hidden_size;
    let (vb, linear) =
        bench::seeded_weights("linear.weight", cfg.dim, h, (1.0 / h as f64).sqrt(), &[], device)?;
    Ok(ColbertSetup {
        pad_id: tok.pad_id(),
        model: ColBert::new(bert, &tok, vb, cfg)?,
        config,
        linear,
    })
}

fn colbert_tasks<'a>(
    c: &'a ColbertSetup,
    device: &Device,
    s: &BenchSettings,
) -> lexbench_baselines::Result<Vec<CandleTask<'a>>> {
    let pool = bench::passages(s.pool);
    let pool: Vec<&str> = pool.iter().map(String::as_str).collect();
    let queries = bench::queries(s.queries);
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    let docs = c.model.doc_tokens(&pool)?;
    let mask_punctuation = c.model.config().mask_punctuation;
    let keep = docs
        .iter()
        .map(|t| {
            t.ids
                .iter()
                .map(|&id| !(mask_punctuation && c.model.is_punctuation(id)))
                .collect()
        })
        .collect();
    let inputs = ColbertInputs {
        docs,
        keep,
        queries: c.model.query_tokens(&queries)?,
        linear: c.linear.clone(),
        dim: c.model.config().dim,
        pad_id: c.pad_id,
    };
    bench::colbert_tasks(
        |seqs| c.model.forward_t(seqs, false),
        |docs| {
            let stacked = MaxSimDocs::new(docs)?;
            Ok(Box::new(move |q| stacked.scores(q)))
        },
        inputs,
        &c.config,
        device,
        s,
    )
}

/// The first `n` paragraphs of the segmented judgment corpus `path`, in file order (all of them when
/// it has fewer), each line read as `import release --texts` reads it
/// (`lexbench_parsers::judgment::segmented::parse_line`: leading numbers removed, unnumbered and
/// out-of-order blocks left out). A line that is not a judgment is an error naming the file and
/// the line; so is a file without any paragraph.
fn read_paragraphs(path: &Path, n: usize) -> Result<Vec<RealPassage>> {
    use lexbench_parsers::judgment::segmented;
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let name = path.display().to_string();
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line_no = i + 1;
        let line = line.with_context(|| format!("{name}:{line_no}: not readable as UTF-8 text"))?;
        let line = if line_no == 1 {
            line.strip_prefix('\u{feff}').unwrap_or(&line)
        } else {
            &line
        };
        if line.trim().is_empty() {
            continue;
        }
        let entry = segmented::parse_line(line, &name, line_no)?;
        let Some(item) = entry.judgment.item else {
            anyhow::bail!("{name}:{line_no}: a judgment without an itemid");
        };
        for p in entry.judgment.paragraphs {
            if out.len() == n {
                return Ok(out);
            }
            out.push(RealPassage {
                item: item.clone(),
                num: p.num,
                text: p.text,
            });
        }
        if out.len() == n {
            return Ok(out);
        }
    }
    if out.is_empty() {
        anyhow::bail!("{name}: no paragraph to encode (the real workload reads its numbered paragraphs)");
    }
    Ok(out)
}
