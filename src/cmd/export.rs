//! `lexbench export DATASET --format hf|beir|mteb [--out DIR] [--force]`: a built dataset as a
//! folder the Hugging Face `datasets` library, BEIR or MTEB opens as it is
//! ([`lexbench_splits::export`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use lexbench_core::datadir::DataDir;
use lexbench_core::dataset::Dataset;
use lexbench_splits::export::{ExportOptions, Format, export};

use crate::cmd::args::OutputFormat;

/// Arguments of `lexbench export` (the format is the global `--format hf|beir|mteb`).
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The dataset (a name under DATA/datasets).
    #[arg(value_parser = crate::name_arg)]
    pub dataset: String,
    /// The export folder, absent or empty unless --force [default: DATA/exports/DATASET-FORMAT]. It
    /// may not be, hold or lie inside the dataset's folder, nor hold the data directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace a non-empty --out that holds an earlier export (its lexbench-export.json) whole: the
    /// new export is written beside it and swapped in at once, so the old folder stays complete
    /// until the new one is. Any other non-empty folder is refused, --force or not.
    #[arg(long)]
    pub force: bool,
}

/// Runs `lexbench export`.
pub fn cmd_export(data: &DataDir, args: &ExportArgs, format: Option<OutputFormat>) -> Result<ExitCode> {
    let format = match format {
        Some(OutputFormat::Hf) => Format::Hf,
        Some(OutputFormat::Beir) => Format::Beir,
        Some(OutputFormat::Mteb) => Format::Mteb,
        None => bail!("`lexbench export` needs --format hf, beir or mteb"),
        Some(other) => bail!(
            "--format {}: `lexbench export` writes hf, beir or mteb",
            clap::ValueEnum::to_possible_value(&other).map_or_else(String::new, |v| v.get_name().to_owned())
        ),
    };
    let out = args.out.clone().unwrap_or_else(|| {
        data.root()
            .join("exports")
            .join(format!("{}-{format}", args.dataset))
    });
    let ds = Dataset::open_in(data.root(), &args.dataset)
        .with_context(|| format!("opening the dataset {}", args.dataset))?;
    let opts = ExportOptions {
        force: args.force,
        protect: vec![data.root().to_owned()],
        forbid_inside: lexbench_core::datadir::WRITTEN_FOLDERS
            .iter()
            .map(|f| data.root().join(f))
            .collect(),
        training_splits: lexbench::submit::TRAINING_SPLITS
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        exported_by: format!("lexbench {}", env!("CARGO_PKG_VERSION")),
    };
    let report = export(&ds, format, &out, &opts)
        .with_context(|| format!("exporting {} as {format}", args.dataset))?;
    for l in &report.leftovers {
        eprintln!("{}: {l}", if l.removed { "note" } else { "warning" });
    }
    println!(
        "exported {} (version {}) as {format} to {}{}",
        report.dataset,
        report.version,
        report.out.display(),
        if report.replaced {
            ", replacing what it held"
        } else {
            ""
        }
    );
    let c = &report.counts;
    println!("  corpus  {} documents", c.corpus);
    let width = c.topics.keys().map(String::len).max().unwrap_or(0).max(6);
    for (split, topics) in &c.topics {
        let qrels = c.qrels.get(split).copied().unwrap_or(0);
        let pools = c
            .pools
            .get(split)
            .map_or_else(String::new, |n| format!(", {n} pools"));
        println!("  {split:<width$}  {topics} topics, {qrels} judgments{pools}");
    }
    let bytes: u64 = report.files.values().sum();
    println!("  {} files, {bytes} bytes", report.files.len());
    Ok(ExitCode::SUCCESS)
}
