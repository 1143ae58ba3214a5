//! `lexbench reproduce ENTRY`: make a leaderboard row again from the command that made it and
//! compare ([`lexbench::reproduce`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use lexbench::reproduce::{Request, reproduce};
use lexbench::submit::CheckFailed;
use lexbench_core::datadir::DataDir;
use lexbench_leaderboard::Error;
use lexbench_leaderboard::reproduction::{Outcome, shell_words};

/// Arguments of `lexbench reproduce`.
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The entry: an id (the file stem in DATA/leaderboard/entries) or an entry file.
    pub entry: String,
    /// The lexbench command that made the entry's run, for an entry whose run names none (one
    /// shell-quoted string: `--command "run dense --model models/minilm --dataset D --split test
    /// --system S"`); only `run …` and `train …` are run.
    #[arg(long, allow_hyphen_values = true)]
    pub command: Option<String>,
    /// Accept each measure's mean within this absolute difference instead of bit for bit [default:
    /// bit for bit, or 0.02 for a training command or one on a GPU].
    #[arg(long, allow_negative_numbers = true)]
    pub tolerance: Option<f64>,
    /// A verified entry's model folder, when it is no longer where the entry says.
    #[arg(long)]
    pub model: Option<PathBuf>,
}

/// Runs `lexbench reproduce`: exit 0 reproduced, 1 not (or not reproducible here: another dataset
/// version, no command, a tampered entry), 2 other errors.
pub fn cmd_reproduce(data: &DataDir, args: &ReproduceArgs) -> Result<ExitCode> {
    let command = match &args.command {
        None => None,
        Some(c) => Some(split_command(c)?),
    };
    let req = Request {
        entry: args.entry.clone(),
        command,
        tolerance: args.tolerance,
        model: args.model.clone(),
    };
    let r = match reproduce(data, &req) {
        Ok(r) => r,
        Err(e) => {
            if let Some(f) = e.downcast_ref::<CheckFailed>() {
                eprintln!("not reproduced: {f}");
                return Ok(ExitCode::from(1));
            }
            if let Some(t @ Error::Tampered { .. }) = e.downcast_ref::<Error>() {
                eprintln!("not reproduced: {t}");
                return Ok(ExitCode::from(1));
            }
            return Err(e);
        }
    };
    let how = match (r.outcome, r.tolerance) {
        (Outcome::Identical, _) => "bit for bit".to_owned(),
        (Outcome::SameFigures, _) => {
            "with every per-topic value and score bit for bit, not the run file".to_owned()
        }
        (Outcome::WithinTolerance, Some(t)) => format!("within ±{t} on every measure's mean"),
        (o, _) => o.as_str().to_owned(),
    };
    let line = format!(
        "{}/{} {} ({}): `lexbench {}` in {:.1} s",
        r.dataset,
        r.split,
        r.entry,
        r.system,
        shell_words(&r.command),
        r.seconds
    );
    if r.outcome.passed() {
        println!("reproduced {how}: {line}");
        for d in &r.differences {
            println!("  {d}");
        }
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("NOT reproduced ({how}): {line}");
        for d in &r.differences {
            eprintln!("  {d}");
        }
        Ok(ExitCode::from(1))
    }
}

/// Splits `--command`'s string as a POSIX shell splits words ('…' and "…" quotes, backslash
/// escapes; no expansions).
fn split_command(s: &str) -> Result<Vec<String>> {
    shlex::split(s)
        .ok_or_else(|| anyhow::anyhow!("--command: a quote is not closed, or it ends in a backslash"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_splits_as_a_shell_splits_words() {
        assert_eq!(
            split_command(r#"run dense --query-prefix 'query: ' --x "a \"b\"" c\ d"#).unwrap(),
            [
                "run",
                "dense",
                "--query-prefix",
                "query: ",
                "--x",
                "a \"b\"",
                "c d"
            ]
        );
        assert_eq!(split_command("''").unwrap(), [""]);
        assert!(split_command("run 'x").is_err());
        // What shell_words writes, split_command reads back.
        let words: Vec<String> = ["a b", "it's", "", "x,y"].iter().map(|s| s.to_string()).collect();
        assert_eq!(split_command(&shell_words(&words)).unwrap(), words);
    }
}
