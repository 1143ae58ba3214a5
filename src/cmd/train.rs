//! `lexbench train CONFIG`: fine-tune a model as a TOML experiment describes (see
//! `baselines/configs/`), optionally sweeping learning rates and ranking splits with the selected
//! model afterwards ([`lexbench::train`]); `lexbench share`: the trainable-parameter share of PEFT
//! settings from a `config.json` alone.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use lexbench::train::{TrainReport, TrainRequest, train_experiment};
use lexbench_baselines::curriculum::SemanticSource;
use lexbench_baselines::encoder::peft::{PeftConfig, PeftMethod};
use lexbench_baselines::train::Summary;
use lexbench_baselines::train::config::MAX_EPOCHS;
use lexbench_baselines::train::stage::SecondStage;
use lexbench_core::datadir::DataDir;

use crate::cmd::args::DeviceArg;

/// Arguments of `lexbench train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// The experiment (TOML), e.g. baselines/configs/ecthr/cpu/dpr-lora.toml.
    pub config: PathBuf,
    /// Output folder [default: DATA/models/<name>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the config's base model folder.
    #[arg(long)]
    pub base: Option<PathBuf>,
    /// Replace the config's learning rate (a finite number > 0). A value with a sign (`--lr -1`,
    /// `--lr -inf`) is read as the value and refused by validation, not taken for a flag.
    #[arg(long, allow_hyphen_values = true)]
    pub lr: Option<f64>,
    /// Replace the config's number of epochs (1 to 1000).
    #[arg(long, allow_negative_numbers = true, value_parser = epochs_arg)]
    pub epochs: Option<usize>,
    /// Override a value of the config (dotted TOML key), e.g. `--set schedule.batch_size=4
    /// --set data.max_doc_len=64`: a paper-sized config run tiny on the sample. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value, allow_hyphen_values = true)]
    pub set: Vec<(String, String)>,
    /// Train every point of the config's grid (`[sweep]`: every combination of its values;
    /// `lr_sweep`: learning rates) under OUT/<point>, keep the best on validation, write
    /// OUT/sweep.json.
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
    /// Also checkpoint within an epoch every M minutes (`0`: only at an epoch's end and before its
    /// validation). An interrupted run resumes from the latest checkpoint, within the epoch, and
    /// ends as an uninterrupted one would.
    #[arg(long, value_name = "M", default_value_t = 10.0, value_parser = minutes_arg, allow_negative_numbers = true)]
    pub checkpoint_minutes: f64,
    #[command(flatten)]
    pub device: DeviceArg,
}

fn print_summary(s: &Summary, out: &Path) {
    println!(
        "{}: {} trainable of {} parameters ({:.3}%)",
        s.name, s.trainable_params, s.total_params, s.trainable_pct
    );
    let fmt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.4}"));
    let fmt1 = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
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
        if let Some(c) = &e.curriculum {
            let by = match c.semantic {
                Some(SemanticSource::StaticBm25) => "BM25 rank",
                Some(SemanticSource::Dynamic) => "model's rank",
                None => "rank",
            };
            let ranks: Vec<String> = c.mean_rank.iter().map(|r| fmt1(*r)).collect();
            let drawn: Vec<String> = c.drawn.iter().map(usize::to_string).collect();
            println!(
                "    curriculum negatives per bucket, easy → hard: {} drawn, mean {by} {}",
                drawn.join(" / "),
                ranks.join(" / ")
            );
        }
    }
    println!(
        "  selected epoch {} ({} {})",
        s.best_epoch,
        s.measure,
        fmt(s.best_val)
    );
    println!("  model: {}", out.join("model").display());
}

/// `--epochs N`: an integer from 1 to [`MAX_EPOCHS`] (`-1` read as a value and refused, not taken
/// for a flag).
fn epochs_arg(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_EPOCHS).contains(&n) => Ok(n),
        _ => Err(format!("must be an integer from 1 to {MAX_EPOCHS}")),
    }
}

/// `--checkpoint-minutes M`: a finite number ≥ 0 (fractions allowed) of at most a week.
fn minutes_arg(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(m) if (0.0..=7.0 * 24.0 * 60.0).contains(&m) => Ok(m),
        _ => Err("must be a number of minutes from 0 to 10080 (a week)".into()),
    }
}

/// `KEY=VALUE` of `--set`.
fn key_value(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!(
            "expected KEY=VALUE (a dotted key of the config), got {s:?}"
        )),
    }
}

/// Runs `lexbench train`.
pub fn cmd_train(data: &DataDir, args: &TrainArgs) -> Result<ExitCode> {
    let request = TrainRequest {
        config: args.config.clone(),
        out: args.out.clone(),
        base: args.base.clone(),
        lr: args.lr,
        epochs: args.epochs,
        set: args.set.clone(),
        sweep: args.sweep,
        restart: args.restart,
        run: args.run.clone(),
        quiet: args.quiet,
        checkpoint_every: (args.checkpoint_minutes > 0.0)
            .then(|| std::time::Duration::from_secs_f64(args.checkpoint_minutes * 60.0)),
    };
    let device = args.device.device()?;
    let TrainReport {
        trained,
        selected,
        second_stage,
        runs,
    } = train_experiment(data, &request, &device)?;
    for t in &trained {
        if let Some(p) = &t.point {
            println!("point {}:", p.name);
        }
        print_summary(&t.summary, &t.dir);
    }
    if let Some(best) = selected {
        let t = &trained[best];
        let name = t.point.as_ref().map_or("", |p| p.name.as_str());
        println!("sweep: selected {name} ({})", t.dir.display());
    }
    match second_stage {
        Some(SecondStage::Gnn(g)) => {
            println!(
                "  gnn: {} nodes, {} trainable parameters",
                g.nodes, g.trainable_params
            );
            for (i, (l, t)) in g.losses.iter().zip(&g.epoch_s).enumerate() {
                match g.val.get(i).copied().flatten() {
                    Some(v) => println!("  gnn epoch {}: loss {l:.4}, val {v:.4}, {t:.1} s", i + 1),
                    None => println!("  gnn epoch {}: loss {l:.4}, {t:.1} s", i + 1),
                }
            }
            println!("  gnn: ranking with epoch {}", g.best_epoch);
        }
        Some(SecondStage::Qabisar(q)) => {
            println!(
                "  qabisar stage 2: {} graph nodes, {} trainable parameters",
                q.nodes, q.trainable_params
            );
            for (i, (l, t)) in q.losses.iter().zip(&q.epoch_s).enumerate() {
                println!("  qabisar epoch {}: loss {l:.4}, {t:.1} s", i + 1);
            }
        }
        None => {}
    }
    for r in runs {
        println!("run:     {}", r.display());
    }
    Ok(ExitCode::SUCCESS)
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
