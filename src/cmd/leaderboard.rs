//! `lexbench leaderboard [--check FILE…]`: render DATA/leaderboard/index.md, site/index.html and
//! the SVG plots from the entries; optionally check regression expectations (OK / OKish / FAIL).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use lexbench_leaderboard::dataset::current_hash;
use lexbench_leaderboard::entry::{entries_dir, read_all};
use lexbench_leaderboard::regression::{self, Expectations, Status};
use lexbench_leaderboard::render_site;

/// Arguments of `lexbench leaderboard`.
#[derive(Debug, Args)]
pub struct LeaderboardArgs {
    /// Regression files (TOML) to check against the entries; any FAIL exits with 1.
    #[arg(long, num_args = 1..)]
    pub check: Vec<PathBuf>,
}

/// Runs `lexbench leaderboard`.
pub fn cmd_leaderboard(data: &Path, args: &LeaderboardArgs) -> Result<ExitCode> {
    let out = render_site(data).context("rendering the leaderboard")?;
    for s in &out.skipped {
        eprintln!("warning: skipped {s}");
    }
    let entries: usize = out.boards.iter().map(|b| b.rows.len()).sum();
    println!("{} dataset(s), {entries} system row(s)", out.boards.len());
    println!("markdown: {}", out.markdown.display());
    println!("html:     {}", out.html.display());
    for p in &out.plots {
        println!("plot:     {}", p.display());
    }
    if args.check.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let (all, _) = read_all(&entries_dir(data))?;
    let mut outcomes = Vec::new();
    for file in &args.check {
        let exp = Expectations::read(file)?;
        let cur = current_hash(data, &exp.dataset);
        outcomes.extend(regression::check(file, &exp, &all, cur.as_deref()));
    }
    print!("{}", regression::render(&outcomes));
    Ok(if outcomes.iter().any(|o| o.status == Status::Fail) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
