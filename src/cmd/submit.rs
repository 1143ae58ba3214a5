//! `lexbench submit RUN --dataset D --split S --name NAME [--card FILE]`: validate a run against the
//! dataset split it claims, evaluate it and record a leaderboard entry.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use lexbench_leaderboard::{Error, SubmitRequest, submit};

use crate::cmd::args::{DatasetSplit, ReportFormat};

/// Arguments of `lexbench submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The TREC run (`topic Q0 doc rank score tag`); a JSON sidecar beside it (RUN.json) is checked too.
    pub run: PathBuf,
    /// The dataset and split the run ranks.
    #[command(flatten)]
    pub at: DatasetSplit,
    /// The system's name on the leaderboard.
    #[arg(long)]
    pub name: String,
    /// A model card (TOML: description, authors, url, paper, code, license, training_data,
    /// parameters, dataset_hash).
    #[arg(long)]
    pub card: Option<PathBuf>,
}

/// Runs `lexbench submit`: exit 0 accepted, 1 rejected (problems on stderr), 2 other errors.
pub fn cmd_submit(data: &Path, args: &SubmitArgs, format: ReportFormat) -> Result<ExitCode> {
    let req = SubmitRequest {
        data,
        run: &args.run,
        dataset: &args.at.dataset,
        split: &args.at.split,
        name: &args.name,
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
    for w in &sub.entry.warnings {
        eprintln!("warning: {w}");
    }
    match format {
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&sub.entry)?),
        ReportFormat::Human => {
            let e = &sub.entry;
            println!(
                "accepted {} on {}/{} (dataset {}), {} topics:",
                e.system,
                e.dataset.name,
                e.dataset.split,
                &e.dataset.hash[..12.min(e.dataset.hash.len())],
                e.per_topic.len()
            );
            for m in &e.measures {
                println!("  {m:<8} {:.4}", e.scores[m]);
            }
            println!("entry: {}", sub.path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
