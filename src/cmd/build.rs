//! `lexbench build ecthr|bsard`, `lexbench import release`, `lexbench split`, `lexbench stats`,
//! `lexbench diff`: arguments and printing around [`lexbench::build`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use lexbench::build::{self as lib, BsardSource, EcthrOptions, SplitOptions};
use lexbench_core::datadir::DataDir;
use lexbench_splits::write::Written;

/// Which dataset to build.
#[derive(Debug, Subcommand)]
pub enum BuildCommand {
    /// The ECtHR paragraph-retrieval dataset from DATA/parsed/ecthr (run `lexbench parse store` first).
    Ecthr(BuildEcthrArgs),
    /// The BSARD dataset from its CSV files (a folder, or the crawl in DATA/raw).
    Bsard(BuildBsardArgs),
}

/// Arguments of `lexbench build bsard`.
#[derive(Debug, Args)]
pub struct BuildBsardArgs {
    /// The dataset's name.
    #[arg(long, default_value = "bsard", value_parser = crate::name_arg)]
    pub name: String,
    /// A folder with articles_fr.csv, questions_fr_train.csv, questions_fr_test.csv; default: the
    /// files `lexbench crawl bsard` stored (DATA/raw/index/bsard.jsonl).
    #[arg(long)]
    pub from: Option<PathBuf>,
}

/// Arguments of `lexbench build ecthr`.
#[derive(Debug, Args)]
pub struct BuildEcthrArgs {
    /// The dataset's name (DATA/datasets/NAME).
    #[arg(long, default_value = "ecthr", value_parser = crate::name_arg)]
    pub name: String,
    /// A split configuration (JSON: seed, unseen_guides, shares); default: the paper's proportions.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
    /// Override the configuration's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also draw SVG histograms for the dataset card (DATA/datasets/NAME/plots/).
    #[arg(long)]
    pub plots: bool,
}

/// Arguments of `lexbench split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// The ECtHR dataset whose pairs are split again (a name under DATA/datasets).
    pub dataset: String,
    /// The new dataset's name (default: DATASET-split).
    #[arg(long, value_parser = crate::name_arg)]
    pub name: Option<String>,
    /// A split configuration (JSON); default: the paper's proportions and the release's held-out guides.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
    /// Override the configuration's seed.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Arguments of `lexbench stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The dataset (a name under DATA/datasets, or a path).
    pub dataset: String,
}

/// Arguments of `lexbench import release`.
#[derive(Debug, Args)]
pub struct ImportReleaseArgs {
    /// The release folder (training.jsonl, validation.jsonl, testing.jsonl, unseen_article.jsonl, unseen.jsonl).
    pub dir: PathBuf,
    /// The dataset's name.
    #[arg(long, default_value = "ecthr-release", value_parser = crate::name_arg)]
    pub name: String,
}

/// Arguments of `lexbench diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The dataset to compare (a name under DATA/datasets, or a path).
    pub dataset: String,
    /// The dataset to compare against.
    #[arg(long)]
    pub against: String,
}

fn report(w: &Written, dir: &Path) {
    for (split, sizes) in &w.stats.splits {
        eprintln!(
            "  {split:<13} {:>6} pairs {:>5} queries {:>5} judgments",
            sizes.get("pairs").unwrap_or(&0),
            sizes.get("queries").unwrap_or(&0),
            sizes.get("judgments").unwrap_or(&0)
        );
    }
    eprintln!(
        "  certificate: {}; dataset {} → {}",
        if w.certificate.passed { "passed" } else { "FAILED" },
        &w.manifest.dataset_hash()[..16],
        dir.display()
    );
}

/// Runs `lexbench split`: the pairs of a built dataset split again into a new dataset.
pub fn cmd_split(data: &DataDir, args: &SplitArgs) -> Result<ExitCode> {
    let r = lib::split_dataset(
        data,
        &SplitOptions {
            dataset: args.dataset.clone(),
            name: args.name.clone(),
            split_config: args.split_config.clone(),
            seed: args.seed,
        },
    )?;
    eprintln!(
        "split {} pairs of {} with seed {}",
        r.pairs,
        args.dataset,
        r.seed.unwrap_or_default()
    );
    report(&r.built.written, &r.built.dir);
    Ok(ExitCode::SUCCESS)
}

/// Runs `lexbench stats`: prints the dataset's statistics and certificate summary as JSON.
pub fn cmd_stats(data: &DataDir, args: &StatsArgs) -> Result<ExitCode> {
    let out = lib::dataset_stats(data, &args.dataset)?;
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}

/// Runs `lexbench build`.
pub fn cmd_build(data: &DataDir, cmd: &BuildCommand) -> Result<ExitCode> {
    match cmd {
        BuildCommand::Ecthr(args) => {
            let b = lib::build_ecthr(
                data,
                &EcthrOptions {
                    name: args.name.clone(),
                    split_config: args.split_config.clone(),
                    seed: args.seed,
                    plots: args.plots,
                },
            )?;
            eprintln!(
                "ecthr: {} pairs from {} citations",
                b.assembly.pairs, b.assembly.citations
            );
            for (reason, n) in &b.assembly.dropped {
                eprintln!("  not a label ({reason}): {n}");
            }
            report(&b.built.written, &b.built.dir);
            Ok(ExitCode::SUCCESS)
        }
        BuildCommand::Bsard(args) => {
            let from = match &args.from {
                Some(dir) => BsardSource::Folder(dir.clone()),
                None => BsardSource::RawStore,
            };
            let b = lib::build_bsard(data, &args.name, &from)?;
            let w = &b.written;
            eprintln!(
                "bsard: {} articles, questions {:?}, graph of {} nodes and {} hierarchy edges; dataset {} → {}",
                w.articles,
                w.questions,
                w.graph.0,
                w.graph.1,
                &w.manifest.dataset_hash()[..16],
                b.dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs `lexbench import release`.
pub fn cmd_import_release(data: &DataDir, args: &ImportReleaseArgs) -> Result<ExitCode> {
    let r = lib::import_release(data, &args.dir, &args.name)?;
    eprintln!("imported {} pairs", r.pairs);
    report(&r.built.written, &r.built.dir);
    Ok(ExitCode::SUCCESS)
}

/// Runs `lexbench diff`: exit 1 when the datasets differ.
pub fn cmd_diff(data: &DataDir, args: &DiffArgs) -> Result<ExitCode> {
    let (d, same) = lib::diff_datasets(data, &args.dataset, &args.against)?;
    println!("{}", serde_json::to_string_pretty(&d)?);
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
