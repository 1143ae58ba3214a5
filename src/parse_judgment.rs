//! `lexbench parse judgment`: print the records the judgment parser makes of the given files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::RecordFormat;

/// Arguments of `lexbench parse judgment`.
#[derive(Debug, Args)]
pub struct ParseJudgmentArgs {
    /// The files to parse.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    pub format: RecordFormat,
}

/// Runs `lexbench parse judgment`.
pub fn cmd_parse_judgment(args: &ParseJudgmentArgs) -> Result<ExitCode> {
    let _ = (&args.files, args.format);
    bail!("the judgment parser is not built yet")
}
