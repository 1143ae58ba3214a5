//! `lexbench pipeline`: every stage on the embedded sample or a crawl ([`lexbench::pipeline`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use lexbench::pipeline::{PipelineOptions, run_pipeline};
use lexbench_core::datadir::DataDir;

/// Arguments of `lexbench pipeline`.
#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// The dataset's name.
    #[arg(long, default_value = "ecthr", value_parser = crate::name_arg)]
    pub name: String,
    /// A split configuration (JSON); default: the sample's when running on the sample, else the paper's.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
}

/// Runs `lexbench pipeline`, printing each stage's progress to stderr.
pub fn cmd_pipeline(data: &DataDir, args: &PipelineArgs) -> Result<ExitCode> {
    let options = PipelineOptions {
        name: args.name.clone(),
        split_config: args.split_config.clone(),
    };
    run_pipeline(data, &options, &mut |line| eprintln!("{line}"))?;
    Ok(ExitCode::SUCCESS)
}
