//! `lexbench parse guide`: print the records the guide parser makes of the given files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::RecordFormat;

/// Arguments of `lexbench parse guide`.
#[derive(Debug, Args)]
pub struct ParseGuideArgs {
    /// The files to parse.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    pub format: RecordFormat,
}

/// Runs `lexbench parse guide`.
pub fn cmd_parse_guide(args: &ParseGuideArgs) -> Result<ExitCode> {
    let _ = (&args.files, args.format);
    bail!("the guide parser is not built yet")
}
