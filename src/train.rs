//! `lexbench train CONFIG`: fine-tune a model as a TOML experiment describes (see
//! `baselines/configs/`), optionally sweeping learning rates and ranking splits with the selected
//! model afterwards; `lexbench share`: the trainable-parameter share of PEFT settings from a
//! `config.json` alone.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use lexbench_baselines::encoder::peft::{PeftConfig, PeftMethod};
use lexbench_baselines::train::config::{ArticleEncoder, ModelKind, TrainConfig};
use lexbench_baselines::train::{Summary, TrainOptions, train};

/// Arguments of `lexbench train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// The experiment (TOML), e.g. baselines/configs/ecthr/dpr-minilm.toml.
    pub config: PathBuf,
    /// Output folder [default: DATA/models/<name>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the config's base model folder.
    #[arg(long)]
    pub base: Option<PathBuf>,
    /// Replace the config's learning rate.
    #[arg(long)]
    pub lr: Option<f64>,
    /// Replace the config's number of epochs.
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Train once per learning rate of the config's `lr_sweep` and keep the best on validation.
    #[arg(long)]
    pub sweep: bool,
    /// Discard existing checkpoints instead of resuming from them.
    #[arg(long)]
    pub restart: bool,
    /// After training, rank these splits with the selected model (comma-separated), writing
    /// DATA/runs/<dataset>/<split>/<name>.trec.
    #[arg(long, value_delimiter = ',')]
    pub run: Vec<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

fn print_summary(s: &Summary, out: &Path) {
    println!(
        "{}: {} trainable of {} parameters ({:.3}%)",
        s.name, s.trainable_params, s.total_params, s.trainable_pct
    );
    let fmt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.4}"));
    println!("  epoch 0 (zero-shot): {} {}", s.measure, fmt(s.zero_shot_val));
    for e in &s.epochs {
        println!(
            "  epoch {}: loss {:.4}, {} {}, {:.1} s training ({:.2} examples/s), {:.1} s validation",
            e.epoch,
            e.loss,
            s.measure,
            fmt(e.val),
            e.train_s,
            e.examples_per_s,
            e.val_s
        );
    }
    println!(
        "  selected epoch {} ({} {})",
        s.best_epoch,
        s.measure,
        fmt(s.best_val)
    );
    println!("  model: {}", out.join("model").display());
}

/// Runs `lexbench train`.
pub fn cmd_train(data: &Path, args: &TrainArgs) -> Result<ExitCode> {
    let mut cfg = TrainConfig::from_file(&args.config)?;
    if let Some(b) = &args.base {
        cfg.base = b.clone();
    }
    if let Some(lr) = args.lr {
        cfg.optim.lr = lr;
    }
    if let Some(e) = args.epochs {
        cfg.schedule.epochs = e;
    }
    cfg.validate()
        .with_context(|| args.config.display().to_string())?;
    if !cfg.base.join("config.json").is_file() {
        bail!(
            "{}: base model folder {} has no config.json (run scripts/fetch-models for models/minilm)",
            args.config.display(),
            cfg.base.display()
        );
    }
    let device = lexbench_baselines::default_device()?;
    let opts = TrainOptions {
        progress: !args.quiet,
        restart: args.restart,
        ..TrainOptions::default()
    };
    let root = args
        .out
        .clone()
        .unwrap_or_else(|| data.join("models").join(&cfg.name));
    if cfg.qabisar.is_some() {
        // QABISAR replaces the trainer: query encoder + GAT over the query–article–structure graph.
        let root = args
            .out
            .clone()
            .unwrap_or_else(|| data.join("models").join(&cfg.name));
        let (s, outs) =
            lexbench_baselines::train::qabisar::train_qabisar(&cfg, data, &root, &device, &args.run)
                .with_context(|| cfg.name.clone())?;
        println!(
            "{}: QABISAR, {} graph nodes, {} trainable parameters",
            cfg.name, s.nodes, s.trainable_params
        );
        for (i, (l, t)) in s.losses.iter().zip(&s.epoch_s).enumerate() {
            println!("  epoch {}: loss {l:.4}, {t:.1} s", i + 1);
        }
        for o in outs {
            println!("run:     {}", o.run_path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let out = if args.sweep {
        if cfg.lr_sweep.is_empty() {
            bail!("{}: --sweep needs lr_sweep in the config", args.config.display());
        }
        let mut results = Vec::new();
        for &lr in &cfg.lr_sweep {
            let mut c = cfg.clone();
            c.optim.lr = lr;
            let dir = root.join(format!("lr-{lr:e}"));
            let s = train(&c, data, &dir, &device, &opts)
                .with_context(|| format!("{} at lr {lr:e}", cfg.name))?;
            print_summary(&s, &dir);
            results.push((lr, dir, s));
        }
        let best = results
            .iter()
            .enumerate()
            .max_by(|a, b| {
                let (x, y) = (
                    a.1.2.best_val.unwrap_or(f64::MIN),
                    b.1.2.best_val.unwrap_or(f64::MIN),
                );
                // Ties keep the smaller learning rate (listed first).
                x.total_cmp(&y).then(b.0.cmp(&a.0))
            })
            .map(|(i, _)| i)
            .context("empty sweep")?;
        let table: Vec<serde_json::Value> = results
            .iter()
            .map(|(lr, dir, s)| serde_json::json!({"lr": lr, "dir": dir, "best_epoch": s.best_epoch, "val": s.best_val}))
            .collect();
        lexbench_core::io::write_json_pretty(
            &root.join("sweep.json"),
            &serde_json::json!({"measure": cfg.eval.measure, "selected_lr": results[best].0, "runs": table}),
        )?;
        let (lr, dir, _) = results.swap_remove(best);
        println!("sweep: selected lr {lr:e} ({})", dir.display());
        cfg.optim.lr = lr;
        dir
    } else {
        let s = train(&cfg, data, &root, &device, &opts).with_context(|| cfg.name.clone())?;
        print_summary(&s, &root);
        root
    };
    if cfg.gnn.is_some() {
        // DR+GNN: the GAT over the legislative graph on top of the trained encoder; it writes the runs.
        let (g, outs) = lexbench_baselines::train::dr_gnn::train_dr_gnn(&cfg, data, &out, &device, &args.run)
            .with_context(|| format!("{}: GNN stage", cfg.name))?;
        println!(
            "  gnn: {} nodes, {} trainable parameters",
            g.nodes, g.trainable_params
        );
        for (i, (l, t)) in g.losses.iter().zip(&g.epoch_s).enumerate() {
            println!("  gnn epoch {}: loss {l:.4}, {t:.1} s", i + 1);
        }
        for o in outs {
            println!("run:     {}", o.run_path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if cfg.biencoder.article_encoder == ArticleEncoder::Hierarchical {
        // `lexbench run dense` cannot load the hierarchical encoder: rank with the network rebuilt
        // from the selected model folder.
        let outs =
            lexbench_baselines::train::export::write_runs(&cfg, data, &out.join("model"), &device, &args.run)
                .with_context(|| format!("{} on {}", cfg.name, cfg.data.dataset))?;
        for o in outs {
            println!("run:     {}", o.run_path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    for split in &args.run {
        run_split(data, &cfg, &out.join("model"), split)
            .with_context(|| format!("{} on {}/{split}", cfg.name, cfg.data.dataset))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Ranks `split` with a trained model folder, as `lexbench run` would.
fn run_split(data: &Path, cfg: &TrainConfig, model: &Path, split: &str) -> Result<()> {
    use lexbench_baselines::encoder::EncodeOptions;
    use lexbench_baselines::rank::colbert::{ColBertParams, run_colbert};
    use lexbench_baselines::rank::cross::{CrossParams, run_cross_encoder};
    use lexbench_baselines::rank::dense::{DenseParams, run_dense};
    use lexbench_baselines::scorers::Similarity;
    let out = match cfg.model {
        ModelKind::Dpr | ModelKind::Ance => run_dense(
            data,
            &cfg.data.dataset,
            split,
            model,
            &DenseParams {
                system: cfg.name.clone(),
                encode: EncodeOptions {
                    max_len: cfg.data.max_doc_len,
                    pooling: cfg.biencoder.pooling,
                    normalize: cfg.biencoder.cosine,
                    ..EncodeOptions::default()
                },
                similarity: if cfg.biencoder.cosine {
                    Similarity::Cosine
                } else {
                    Similarity::Dot
                },
                top_k: cfg.eval.top_k,
            },
        )?,
        ModelKind::Colbert => run_colbert(
            data,
            &cfg.data.dataset,
            split,
            model,
            &ColBertParams {
                system: cfg.name.clone(),
                colbert: cfg.colbert.clone(),
                top_k: cfg.eval.top_k,
            },
        )?,
        ModelKind::CrossEncoder => run_cross_encoder(
            data,
            &cfg.data.dataset,
            split,
            model,
            &CrossParams {
                system: cfg.name.clone(),
                depth: 100,
                max_len: cfg.data.max_query_len + cfg.data.max_doc_len,
            },
        )?,
    };
    println!("run:     {}", out.run_path.display());
    Ok(())
}

/// Arguments of `lexbench share`.
#[derive(Debug, Args)]
pub struct ShareArgs {
    /// A model's config.json (e.g. models/minilm/config.json); several give one table each.
    #[arg(required = true)]
    pub configs: Vec<PathBuf>,
}

/// Runs `lexbench share`: the ECtHR paper's PEFT settings and their "% train".
pub fn cmd_share(args: &ShareArgs) -> Result<ExitCode> {
    use lexbench_baselines::encoder::BertConfig;
    use lexbench_baselines::train::share::share;
    let mut rows: Vec<(String, Option<PeftConfig>)> = vec![("full fine-tuning".into(), None)];
    let base = PeftConfig {
        method: PeftMethod::Lora,
        lora: Default::default(),
        adapter: Default::default(),
        prefix: Default::default(),
    };
    for r in [8usize, 16] {
        let mut p = base.clone();
        p.lora.rank = r;
        p.lora.alpha = r as f64;
        rows.push((format!("LoRA r = {r} (query, value)"), Some(p)));
    }
    for f in [8usize, 16, 32] {
        let mut p = base.clone();
        p.method = PeftMethod::Adapter;
        p.adapter.reduction_factor = Some(f);
        rows.push((format!("adapter, reduction factor {f}"), Some(p)));
    }
    for n in [10usize, 15, 30] {
        let mut p = base.clone();
        p.method = PeftMethod::Prefix;
        p.prefix.length = n;
        rows.push((format!("prefix, length {n}"), Some(p)));
    }
    for path in &args.configs {
        let cfg = BertConfig::from_file(path)?;
        println!(
            "{} (hidden {}, {} layers, vocabulary {}):",
            path.display(),
            cfg.hidden_size,
            cfg.num_hidden_layers,
            cfg.vocab_size
        );
        println!("| setting | trainable | total | % train |");
        println!("|---|---:|---:|---:|");
        for (label, p) in &rows {
            let s = share(&cfg, true, p.as_ref())?;
            println!("| {label} | {} | {} | {:.2} |", s.trainable, s.total, s.percent);
        }
    }
    Ok(ExitCode::SUCCESS)
}
