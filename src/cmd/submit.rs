//! `lexbench submit`, two ways:
//! - `submit RUN --dataset D --split S --name NAME [--card FILE]`: validate a run file against the
//!   dataset split it claims, evaluate it and record a self-reported leaderboard entry;
//! - `submit --model DIR --kind bi-encoder|cross-encoder|colbert --card CARD [--dataset D,…]
//!   [--splits S,…] [--device …]`: the harness runs the model itself over every evaluated split and
//!   records a verified entry per split (`lexbench::submit`), resuming an interrupted run;
//! - `submit --baseline [--dataset D,…] [--splits S,…]`: the harness runs lexbench's BM25 itself and
//!   records it as the leaderboard's baseline (`BM25`, verified), the only way a baseline is made.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{ArgGroup, Args, ValueEnum};
use lexbench::submit::{ModelSubmission, STOP_AFTER_ENV, scores_line, submit_model};
use lexbench_core::datadir::DataDir;
use lexbench_leaderboard::{Error, ModelKind, SubmitRequest, submit};

use crate::cmd::args::{DeviceArg, ReportFormat};

/// Arguments of `lexbench submit`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["run", "model", "baseline"])))]
pub struct SubmitArgs {
    /// The TREC run (`topic Q0 doc rank score tag`), self-reported; a JSON sidecar beside it
    /// (RUN.json) is checked too. Leave it out with --model.
    pub run: Option<PathBuf>,
    /// With RUN: the dataset it ranks. With --model: the datasets to run the model on
    /// (comma-separated or repeated) [default: every dataset built under DATA/datasets].
    #[arg(long, value_parser = crate::name_arg, value_delimiter = ',')]
    pub dataset: Vec<String>,
    /// With RUN: the split it ranks.
    #[arg(long, value_parser = crate::name_arg, requires = "run")]
    pub split: Option<String>,
    /// With RUN: the system's name on the leaderboard (a model's name is its card's `name`).
    #[arg(long, requires = "run")]
    pub name: Option<String>,
    /// A model card (TOML). With RUN, optional: description, authors, url, paper, code, license,
    /// training_data, parameters, dataset_hash. With --model, required: name, description,
    /// base_model, license, training_data (and optional authors, url, paper, code, parameters).
    #[arg(long)]
    pub card: Option<PathBuf>,
    /// A model folder for the harness to run itself (verified entries): a HuggingFace BERT folder,
    /// a PEFT folder, or one `lexbench train` wrote.
    #[arg(long, requires_all = ["kind", "card"], conflicts_with = "run")]
    pub model: Option<PathBuf>,
    /// How the model ranks.
    #[arg(long, value_enum, requires = "model")]
    pub kind: Option<KindArg>,
    /// Record the leaderboard's baseline: the harness runs lexbench's BM25 (default parameters)
    /// itself on every evaluated split and records it as `BM25`, verified. A run file is never the
    /// baseline, whatever its sidecar says.
    #[arg(long, conflicts_with_all = ["run", "model", "card", "name", "split"])]
    pub baseline: bool,
    /// With --model or --baseline: the splits to run on, in every dataset (comma-separated)
    /// [default: each dataset's evaluated splits, all but train and val].
    #[arg(long, value_parser = crate::name_arg, value_delimiter = ',')]
    pub splits: Vec<String>,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// `--kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// Query and document embeddings compared (as `lexbench run dense`).
    BiEncoder,
    /// Query–document pairs scored (as `lexbench run cross-encoder`).
    CrossEncoder,
    /// Late interaction, MaxSim (as `lexbench run colbert`).
    Colbert,
}

impl From<KindArg> for ModelKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::BiEncoder => ModelKind::BiEncoder,
            KindArg::CrossEncoder => ModelKind::CrossEncoder,
            KindArg::Colbert => ModelKind::Colbert,
        }
    }
}

/// Runs `lexbench submit`: exit 0 accepted, 1 rejected (problems on stderr), 2 other errors.
pub fn cmd_submit(data: &DataDir, args: &SubmitArgs, format: ReportFormat) -> Result<ExitCode> {
    if args.baseline {
        return submit_the_baseline(data, args, format);
    }
    if args.run.is_some() && !args.splits.is_empty() {
        bail!("--splits is for --model and --baseline; a run file ranks one --split");
    }
    match (&args.run, &args.model) {
        (Some(run), None) => submit_run(data.root(), run, args, format),
        (None, Some(model)) => submit_a_model(data, model, args, format),
        _ => bail!("give a run file or --model DIR, not both"),
    }
}

fn submit_run(data: &Path, run: &Path, args: &SubmitArgs, format: ReportFormat) -> Result<ExitCode> {
    let (dataset, split, name) = match (args.dataset.as_slice(), &args.split, &args.name) {
        ([dataset], Some(split), Some(name)) => (dataset, split, name),
        ([_, _, ..], _, _) => bail!("a run ranks one dataset: give one --dataset"),
        _ => bail!("submitting a run needs --dataset D --split S --name NAME"),
    };
    if args.device.device.is_some() {
        bail!("--device is for --model: a run file is not run");
    }
    let req = SubmitRequest {
        data,
        run,
        dataset,
        split,
        name,
        card: args.card.as_deref(),
    };
    let sub = match submit(&req) {
        Ok(s) => s,
        Err(e @ Error::Rejected { .. }) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let warnings: String = sub
        .entry
        .warnings
        .iter()
        .map(|w| format!("warning: {w}\n"))
        .collect();
    let report = match format {
        ReportFormat::Json => serde_json::to_string_pretty(&sub.entry)? + "\n",
        ReportFormat::Human => {
            use std::fmt::Write as _;
            let e = &sub.entry;
            let mut r = format!(
                "accepted {} on {}/{} (dataset {}), {} topics, self-reported:\n",
                e.system,
                e.dataset.name,
                e.dataset.split,
                &e.dataset.hash[..12.min(e.dataset.hash.len())],
                e.per_topic.len()
            );
            for m in &e.measures {
                let _ = writeln!(r, "  {m:<8} {:.4}", e.scores[m]);
            }
            let _ = writeln!(r, "entry: {}", sub.path.display());
            r
        }
    };
    report_or_undo(&warnings, &report, std::slice::from_ref(&sub.path))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a submission's warnings to standard error and its report to standard output; if either
/// fails (a full device, a closed pipe), the entries just recorded are removed again and the failure
/// is the command's error: a submission either is recorded and reported, or is not recorded (issue
/// 29, item 13: `submit … > /dev/full` used to record the entry and then die with a backtrace; issue
/// 54, item 10: with standard error full too it recorded the entry and panicked on a warning).
fn report_or_undo(warnings: &str, report: &str, entries: &[PathBuf]) -> Result<()> {
    use std::io::Write;
    let written = {
        let mut err = std::io::stderr().lock();
        err.write_all(warnings.as_bytes()).and_then(|()| err.flush())
    }
    .and_then(|()| {
        let mut out = std::io::stdout().lock();
        out.write_all(report.as_bytes()).and_then(|()| out.flush())
    });
    if let Err(e) = written {
        let mut kept = Vec::new();
        for p in entries {
            if std::fs::remove_file(p).is_err() {
                kept.push(p.display().to_string());
            }
        }
        if kept.is_empty() {
            bail!("writing the report failed ({e}): the submission was not recorded");
        }
        bail!(
            "writing the report failed ({e}); the entries {} were recorded and could not be removed",
            kept.join(", ")
        );
    }
    Ok(())
}

fn submit_a_model(data: &DataDir, model: &Path, args: &SubmitArgs, format: ReportFormat) -> Result<ExitCode> {
    let (Some(kind), Some(card)) = (args.kind, &args.card) else {
        bail!("--model needs --kind and --card");
    };
    let stop_after = match std::env::var(STOP_AFTER_ENV) {
        Ok(v) => Some(
            v.trim()
                .parse::<usize>()
                .map_err(|_| anyhow::anyhow!("{STOP_AFTER_ENV}={v:?} is not a number of splits"))?,
        ),
        Err(_) => None,
    };
    let req = ModelSubmission {
        model: model.to_owned(),
        kind: kind.into(),
        card: card.clone(),
        datasets: args.dataset.clone(),
        splits: args.splits.clone(),
        device: args.device.device()?,
        stop_after,
        progress: format == ReportFormat::Human,
    };
    let human = format == ReportFormat::Human;
    let out = match submit_model(data, &req, &mut |line| {
        if human {
            println!("{line}");
        }
    }) {
        Ok(out) => out,
        Err(e) => {
            if let Some(rejected @ Error::Rejected { .. }) = e.downcast_ref::<Error>() {
                eprintln!("{rejected}");
                return Ok(ExitCode::from(1));
            }
            return Err(e);
        }
    };
    match format {
        ReportFormat::Json => {
            let entries: Vec<_> = out.splits.iter().map(|s| &s.entry).collect();
            println!("{}", serde_json::to_string_pretty(&entries)?);
        }
        ReportFormat::Human => {
            println!(
                "verified: {} ({} model {}, sha256 {}) on {}, submission {}:",
                out.system,
                req.kind,
                model.display(),
                &out.model.sha256[..16],
                out.device,
                out.submission
            );
            for s in &out.splits {
                println!(
                    "  {}/{}: {}{}",
                    s.planned.dataset,
                    s.planned.split,
                    scores_line(&s.entry),
                    if s.earlier {
                        " (recorded before the interruption)"
                    } else {
                        ""
                    }
                );
                println!("    entry: {}", s.path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn submit_the_baseline(data: &DataDir, args: &SubmitArgs, format: ReportFormat) -> Result<ExitCode> {
    if args.device.device.is_some() {
        bail!("--device is for --model: BM25 runs on the CPU");
    }
    let human = format == ReportFormat::Human;
    let subs = lexbench::submit::submit_baseline(data, &args.dataset, &args.splits, &mut |line| {
        if human {
            println!("{line}");
        }
    })?;
    match format {
        ReportFormat::Json => {
            let entries: Vec<_> = subs.iter().map(|s| &s.entry).collect();
            println!("{}", serde_json::to_string_pretty(&entries)?);
        }
        ReportFormat::Human => println!(
            "verified: the {} baseline on {} split(s)",
            lexbench_leaderboard::board::BASELINE,
            subs.len()
        ),
    }
    Ok(ExitCode::SUCCESS)
}
