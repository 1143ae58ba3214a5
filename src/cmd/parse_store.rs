//! `lexbench parse store`: everything the raw store holds into `DATA/parsed/ecthr/`
//! ([`lexbench::parse_store`]). Exit code 1 when a document failed (it is listed and skipped).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use lexbench_core::datadir::DataDir;

/// Arguments of `lexbench parse store`.
#[derive(Debug, Args)]
pub struct ParseStoreArgs {
    /// A folder of HUDOC metadata files (case_law_references_eng.csv, …) to resolve citations
    /// beyond the crawled metadata.
    #[arg(long)]
    pub meta: Option<PathBuf>,
}

/// Runs `lexbench parse store`.
pub fn cmd_parse_store(data: &DataDir, args: &ParseStoreArgs) -> Result<ExitCode> {
    let s = lexbench::parse_store::parse_store(data, args.meta.as_deref())?;
    eprintln!(
        "parsed {} judgments and {} guides ({} queries, {}/{} citations resolved) → {}",
        s.judgments,
        s.guides,
        s.queries,
        s.citations_resolved,
        s.citations,
        data.parsed().join("ecthr").display()
    );
    for f in &s.failures {
        eprintln!("  failed: {f}");
    }
    Ok(if s.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
