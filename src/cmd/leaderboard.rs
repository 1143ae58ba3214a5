//! `lexbench leaderboard`: render DATA/leaderboard/index.md, site/index.html and the SVG plots from
//! the entries (`--verified-only`: verified entries and the baseline), optionally checking
//! regression expectations (OK / OKish / FAIL); or `--recheck ENTRY` (re-run a verified entry's
//! model on the CPU, bit for bit), `--export DIR` (one result file per entry), `--import DIR`
//! (validate and merge result files, then render).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{ArgGroup, Args};
use lexbench::submit::{CheckFailed, recheck};
use lexbench_core::datadir::DataDir;
use lexbench_leaderboard::dataset::current_hash;
use lexbench_leaderboard::entry::{entries_dir, read_all};
use lexbench_leaderboard::regression::{self, Expectations, Status};
use lexbench_leaderboard::{Error, RenderOptions, portable, render_site_with, reproduction};

/// Arguments of `lexbench leaderboard`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("action").args(["recheck", "export", "import", "rekey", "reproductions"])))]
pub struct LeaderboardArgs {
    /// Regression files (TOML) to check against the entries; any FAIL exits with 1.
    #[arg(long, num_args = 1..)]
    pub check: Vec<PathBuf>,
    /// Render verified entries only (made by `lexbench submit --model`), beside the BM25 baseline.
    #[arg(long)]
    pub verified_only: bool,
    /// Re-run a verified entry's model on the CPU and check that it reproduces the entry bit for bit
    /// (the run's sha256, every per-topic value); ENTRY is an entry id or an entry file. Exit 1 if
    /// not.
    #[arg(long, value_name = "ENTRY")]
    pub recheck: Option<String>,
    /// With --recheck: the model folder, when it is no longer where the entry says.
    #[arg(long, requires = "recheck")]
    pub model: Option<PathBuf>,
    /// Write every entry as a result file (`<id>.json`, schema-versioned) into DIR.
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Validate the result files in DIR against the datasets built here and merge them into the
    /// leaderboard (all or none), then render it. Exit 1 if a file is refused.
    #[arg(long, value_name = "DIR")]
    pub import: Option<PathBuf>,
    /// Re-key the result files in DIR that name the dataset version held in the folder --from
    /// (a copy of that version) to the version of the same dataset built here, after proving the
    /// two hold the same content (every file but the card and sources.json identical); their
    /// figures are not touched, each records the change and is sealed again.
    #[arg(long, value_name = "DIR", requires = "from")]
    pub rekey: Option<PathBuf>,
    /// List every entry with the command that made it, how to reproduce it (`lexbench reproduce`)
    /// and its last reproduction (DATA/leaderboard/reproductions.jsonl; an imported claim shown as
    /// one), as a Markdown table.
    #[arg(long)]
    pub reproductions: bool,
    /// With --rekey: the folder of the dataset version the entries name.
    #[arg(long, value_name = "OLD_DATASET", requires = "rekey")]
    pub from: Option<PathBuf>,
}

/// Runs `lexbench leaderboard`.
pub fn cmd_leaderboard(data: &DataDir, args: &LeaderboardArgs) -> Result<ExitCode> {
    if let Some(entry) = &args.recheck {
        return cmd_recheck(data, entry, args.model.as_deref());
    }
    if args.reproductions {
        let (all, _) = read_all(&entries_dir(data.root()))?;
        let log = reproduction::read_log(&reproduction::log_path(data.root()))?;
        let imported = reproduction::read_imported(data.root())?;
        print!("{}", reproduction::table(&all, &log, &imported));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = &args.export {
        let out = portable::export(data.root(), dir)
            .with_context(|| format!("exporting the leaderboard to {}", dir.display()))?;
        for s in &out.left_out {
            eprintln!("warning: not exported: {s}");
        }
        println!("{} result file(s) in {}", out.files.len(), dir.display());
        return Ok(
            if out.left_out.iter().any(|s| s.contains("integrity check failed")) {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            },
        );
    }
    if let (Some(dir), Some(old)) = (&args.rekey, &args.from) {
        let out = portable::rekey(data.root(), dir, old)
            .with_context(|| format!("re-keying the result files in {}", dir.display()))?;
        println!(
            "re-keyed {} result file(s) in {} from version {} to {} ({} dataset files identical); {} left as they were",
            out.rekeyed.len(),
            dir.display(),
            &out.from[..12],
            &out.to[..12],
            out.identical_files,
            out.left.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = &args.import {
        match portable::import(data.root(), dir) {
            Ok(out) => {
                println!(
                    "imported {} entr{} from {} ({} already there){}",
                    out.written.len(),
                    if out.written.len() == 1 { "y" } else { "ies" },
                    dir.display(),
                    out.already_there.len(),
                    match out.reproductions {
                        0 => String::new(),
                        n => format!(
                            "; {n} reproduction(s) it claims kept as imported claims (not checked here; \
                             `lexbench reproduce ID` checks one)"
                        ),
                    }
                );
            }
            Err(e @ Error::Rejected { .. }) => {
                eprintln!("import refused, nothing was written: {e}");
                return Ok(ExitCode::from(1));
            }
            Err(e) => return Err(e).with_context(|| format!("importing {}", dir.display())),
        }
    }
    let options = RenderOptions {
        verified_only: args.verified_only,
    };
    let out = render_site_with(data.root(), &options).context("rendering the leaderboard")?;
    for s in &out.skipped {
        eprintln!("warning: skipped {s}");
    }
    for s in &out.tampered {
        eprintln!("error: left out {s}");
    }
    let entries: usize = out.boards.iter().map(|b| b.rows.len()).sum();
    println!("{} dataset(s), {entries} system row(s)", out.boards.len());
    println!("markdown: {}", out.markdown.display());
    println!("html:     {}", out.html.display());
    for p in &out.plots {
        println!("plot:     {}", p.display());
    }
    let mut failed = !out.tampered.is_empty();
    if !args.check.is_empty() {
        let (all, _) = read_all(&entries_dir(data.root()))?;
        let mut outcomes = Vec::new();
        for file in &args.check {
            let exp = Expectations::read(file)?;
            let cur = current_hash(data.root(), &exp.dataset);
            outcomes.extend(regression::check(file, &exp, &all, cur.as_deref()));
        }
        print!("{}", regression::render(&outcomes));
        failed |= outcomes.iter().any(|o| o.status == Status::Fail);
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--recheck ENTRY`: exit 0 reproduced, 1 not reproduced (or not a verified, intact entry), 2 other
/// errors.
fn cmd_recheck(data: &DataDir, entry: &str, model: Option<&Path>) -> Result<ExitCode> {
    match recheck(data, entry, model) {
        Ok(r) => {
            let e = &r.entry;
            println!(
                "reproduced {} bit for bit on the CPU in {:.1} s: {}/{}, run sha256 {}, {} topics × {} measures identical",
                e.id,
                r.seconds,
                e.dataset.name,
                e.dataset.split,
                e.run.sha256,
                e.per_topic.len(),
                e.measures.len()
            );
            println!("run: {}", r.run.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if let Some(f) = e.downcast_ref::<CheckFailed>() {
                eprintln!("recheck failed: {f}");
                return Ok(ExitCode::from(1));
            }
            if let Some(t @ Error::Tampered { .. }) = e.downcast_ref::<Error>() {
                eprintln!("recheck failed: {t}");
                return Ok(ExitCode::from(1));
            }
            Err(e)
        }
    }
}
