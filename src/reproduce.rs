//! `lexbench reproduce ENTRY`: a leaderboard row made again from the command that made it, and
//! compared with what the row records.
//!
//! - A verified entry (the harness ran the model: `submit --model`, `submit --baseline`) is rechecked
//!   as `leaderboard --recheck` does ([`crate::submit::recheck`]): bit for bit on the CPU.
//! - A self-reported entry whose run a `lexbench` command made names that command in its run's
//!   sidecar (`invocation`, [`lexbench_core::run::Invocation`]); `--command` gives one for an entry
//!   that names none (made elsewhere, or before commands were recorded). Only `run …` and `train …`
//!   are run. The command runs in a scratch data directory, `DATA/cache/reproduce/<entry id>`, that
//!   holds the entry's dataset (its files linked, not copied) and the split's BM25 run (a
//!   cross-encoder reranks it), so nothing of DATA is overwritten and a training starts from its
//!   seed, not from a checkpoint here. The run it writes is evaluated exactly as a submission and
//!   compared with the entry: bit for bit (the run's sha256, every per-topic value and score; "same
//!   figures" when only the run file differs: another CPU's float sums, no figure changed), or,
//!   for a command on a GPU, or a training whose run was made before the CPU engine promised the
//!   same bits on any CPU and thread count (its invocation records no
//!   [`lexbench_core::run::CPU_BITS`]), each measure's mean within [`TRAINED_TOLERANCE`] unless
//!   `--tolerance` says otherwise. A CPU training that records the promise is held to it: bit for bit.
//!
//! Every reproduction that ran is recorded in `DATA/leaderboard/reproductions.jsonl`
//! ([`lexbench_leaderboard::reproduction`]); the scratch folder is removed when the entry was
//! reproduced and kept (with the run) when not.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use lexbench_core::datadir::DataDir;
use lexbench_leaderboard::SubmitRequest;
use lexbench_leaderboard::entry::Entry;
use lexbench_leaderboard::reproduction::{self, Outcome, Reproduction, TRAINED_TOLERANCE};

use crate::submit::{CheckFailed, built_version_is_the_entrys, recheck};

/// What `lexbench reproduce` is asked.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The entry: an id in `DATA/leaderboard/entries`, or an entry file.
    pub entry: String,
    /// The command to run instead of the one the entry records (the `lexbench` arguments, without
    /// `--data`).
    pub command: Option<Vec<String>>,
    /// Compare each measure's mean within this absolute tolerance instead of bit for bit.
    pub tolerance: Option<f64>,
    /// With a verified entry: its model folder, when it is no longer where the entry says.
    pub model: Option<PathBuf>,
}

/// The subcommands `reproduce` runs: the ones that make runs.
const RUNNABLE: [&str; 2] = ["run", "train"];

/// Reproduces an entry (module docs) and records the reproduction. `Ok` holds the record whatever
/// the outcome (the caller exits 1 unless it [`Outcome::passed`]); `Err` is an entry that cannot be
/// reproduced here (another dataset version, no command, a command not allowed, a tampered entry).
pub fn reproduce(data: &DataDir, req: &Request) -> Result<Reproduction> {
    let (recorded, path) = lexbench_leaderboard::recheck::find_entry(data.root(), &req.entry)?;
    built_version_is_the_entrys(data, &recorded, &path, "reproduce")?;
    let t0 = Instant::now();
    let rec = if recorded.provenance.is_verified() && req.command.is_none() {
        if req.tolerance.is_some() {
            bail!("--tolerance: a verified entry is rechecked bit for bit on the CPU");
        }
        let command = vec![
            "leaderboard".to_owned(),
            "--recheck".to_owned(),
            recorded.id.clone(),
        ];
        match recheck(data, &req.entry, req.model.as_deref()) {
            Ok(r) => record(&recorded, command, Outcome::Identical, None, vec![], r.seconds),
            Err(e) => match e.downcast_ref::<CheckFailed>() {
                Some(CheckFailed(why)) => record(
                    &recorded,
                    command,
                    Outcome::Differs,
                    None,
                    why.lines().map(str::to_owned).collect(),
                    t0.elapsed().as_secs_f64(),
                ),
                None => return Err(e),
            },
        }
    } else {
        if req.model.is_some() {
            bail!("--model: only a verified entry is rechecked from a model folder; give --command");
        }
        run_again(data, &recorded, &path, req)?
    };
    reproduction::append(&reproduction::log_path(data.root()), &rec).context("recording the reproduction")?;
    Ok(rec)
}

/// The entry's command (or `--command`) run in a scratch data directory, its run assessed and
/// compared.
fn run_again(data: &DataDir, recorded: &Entry, path: &Path, req: &Request) -> Result<Reproduction> {
    let log = reproduction::read_log(&reproduction::log_path(data.root()))?;
    let command = match (&req.command, reproduction::recorded_command(recorded)) {
        (Some(c), _) => c.clone(),
        (None, Some(c)) => c,
        (None, None) if reproduction::proven_command(&recorded.id, &log).is_some() => {
            let c = reproduction::proven_command(&recorded.id, &log)
                .unwrap_or_default()
                .to_vec();
            eprintln!(
                "{}: its run names no command; running the one its last passing reproduction ran",
                recorded.id
            );
            c
        }
        (None, None) => bail!(CheckFailed(format!(
            "{}: its run names no command that made it (a run made elsewhere, or before lexbench recorded \
             commands); give one with --command, e.g. --command 'run bm25 --dataset {} --split {}'",
            path.display(),
            recorded.dataset.name,
            recorded.dataset.split
        ))),
    };
    check_command(&command)?;
    // A configuration file that changed since the entry was made: the reproduction runs today's file,
    // and says so.
    let recorded_configs: std::collections::BTreeMap<String, String> = recorded
        .run
        .sidecar
        .as_ref()
        .and_then(|s| s.get("invocation")?.get("configs").cloned())
        .and_then(|c| serde_json::from_value(c).ok())
        .unwrap_or_default();
    let now_configs = lexbench_core::run::config_hashes(&command);
    let changed: Vec<String> = recorded_configs
        .iter()
        .filter(|(f, sha)| now_configs.get(*f) != Some(*sha))
        .map(|(f, sha)| {
            format!(
                "{f}: sha256 {} when the entry was made, {} now",
                &sha[..sha.len().min(12)],
                now_configs.get(f).map_or("missing", |s| &s[..s.len().min(12)])
            )
        })
        .collect();
    for c in &changed {
        eprintln!("warning: the configuration changed: {c}");
    }
    let on_gpu = command
        .iter()
        .zip(command.iter().skip(1))
        .any(|(a, b)| a == "--device" && b != "cpu")
        || command
            .iter()
            .any(|a| a.starts_with("--device=") && a != "--device=cpu");
    // A CPU training made by a binary whose engine promises the same bits on any CPU and thread
    // count (the run's invocation records `cpu_bits`) is held to them, as a ranking is; one made
    // before that promise, or on a GPU, to the tolerance.
    let recorded_bits = recorded
        .run
        .sidecar
        .as_ref()
        .and_then(|s| s.get("invocation")?.get("cpu_bits")?.as_str().map(str::to_owned));
    let bits_promised = recorded_bits.as_deref() == Some(lexbench_core::run::CPU_BITS);
    let trained = command.first().is_some_and(|c| c == "train");
    let tolerance = req
        .tolerance
        .or((on_gpu || (trained && !bits_promised)).then_some(TRAINED_TOLERANCE));
    if trained && !on_gpu && bits_promised && req.tolerance.is_none() {
        eprintln!(
            "a CPU training made by an engine that gives the same bits on any CPU and thread count \
             ({}): compared bit for bit",
            lexbench_core::run::CPU_BITS
        );
    }
    if let Some(t) = tolerance
        && !(t.is_finite() && (0.0..=1.0).contains(&t))
    {
        bail!(
            "--tolerance {}: give a number from 0 to 1 (an absolute difference of a recall, MAP or MRP mean, \
             which lie in [0, 1])",
            short_number(t)
        );
    }
    let d = &recorded.dataset;
    // One reproduce of an entry at a time: a second one would share (and remove) the first's
    // scratch folder. The id is a checked name (find_entry), so the folder is one of cache/reproduce.
    let cache = data.root().join("cache").join("reproduce");
    let lock = lexbench_core::io::FileLock::try_exclusive(&cache.join(format!(".{}.lock", recorded.id)))?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "another `lexbench reproduce {}` is running on {} (its lock is {}); wait for it to end",
                recorded.id,
                data.root().display(),
                cache.join(format!(".{}.lock", recorded.id)).display()
            )
        })?;
    let scratch = cache.join(&recorded.id);
    prepare_scratch(data, &scratch, &d.name, &d.split)?;
    let runs_dir = scratch.join("runs").join(&d.name).join(&d.split);
    let before = run_files(&runs_dir)?;
    let exe = std::env::current_exe().context("finding the lexbench executable")?;
    eprintln!(
        "reproducing {} with `lexbench --data {} {}`",
        recorded.id,
        scratch.display(),
        reproduction::shell_words(&command)
    );
    let t0 = Instant::now();
    let status = std::process::Command::new(&exe)
        .arg("--data")
        .arg(&scratch)
        .args(&command)
        // Its report is progress here: reproduce's standard output holds the verdict alone.
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status()
        .with_context(|| format!("starting {}", exe.display()))?;
    let seconds = t0.elapsed().as_secs_f64();
    let run = runs_dir.join(&recorded.run.file);
    // The run compared is the one the command wrote: a file of the scratch folder that was there
    // before (the split's BM25 run, linked in for a cross-encoder to rerank) is not the command's.
    let written: Vec<String> = run_files(&runs_dir)?
        .into_iter()
        .filter(|(name, id)| name.ends_with(".trec") && before.get(name) != Some(id))
        .map(|(name, _)| name)
        .collect();
    let wrote_it = written.contains(&recorded.run.file);
    if !status.success() || !wrote_it {
        let why = if !status.success() {
            format!("the command exited with {status}")
        } else if written.is_empty() {
            format!("the command wrote no run (the entry's is {})", run.display())
        } else {
            format!(
                "the command wrote {}, not the entry's run {}",
                written.join(", "),
                recorded.run.file
            )
        };
        drop(lock);
        return Ok(record(
            recorded,
            command,
            Outcome::Failed,
            tolerance,
            vec![why],
            seconds,
        ));
    }
    let now = lexbench_leaderboard::submit::assess(&SubmitRequest {
        data: data.root(),
        run: &run,
        dataset: &d.name,
        split: &d.split,
        name: &recorded.system,
        card: None,
    })
    .with_context(|| format!("evaluating the run made again, {}", run.display()))?;
    let exact = lexbench_leaderboard::recheck::compare(recorded, &now.entry);
    // Only the run file differs (the first line compare writes): the figures are the same bits.
    let same_figures = exact.len() == 1 && recorded.run.sha256 != now.entry.run.sha256;
    let (outcome, differences) = match tolerance {
        _ if exact.is_empty() => (Outcome::Identical, vec![]),
        _ if same_figures => (Outcome::SameFigures, exact),
        None => (Outcome::Differs, exact),
        Some(t) => {
            let beyond = lexbench_leaderboard::recheck::compare_within(recorded, &now.entry, t);
            if beyond.is_empty() {
                (Outcome::WithinTolerance, exact)
            } else {
                (Outcome::Differs, beyond)
            }
        }
    };
    if outcome.passed() {
        lexbench_core::io::remove_dir_journaled(&scratch)?;
    }
    lock.remove()?;
    let differences = changed
        .into_iter()
        .map(|c| format!("configuration changed: {c}"))
        .chain(differences)
        .collect();
    Ok(record(
        recorded,
        command,
        outcome,
        tolerance,
        differences,
        seconds,
    ))
}

/// `x` as a short text: `1e300`, not its 301 digits.
fn short_number(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() > 16 { format!("{x:e}") } else { plain }
}

/// A file's device, inode, length and modification time (seconds, nanoseconds).
type FileIdentity = (u64, u64, u64, i64, i64);

/// The files of `dir` (none when it does not exist) with the identity of each (device, inode,
/// length, modification time): a file the command wrote is new or has another identity (every write
/// of lexbench renames a new file into place).
fn run_files(dir: &Path) -> Result<std::collections::BTreeMap<String, FileIdentity>> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e).with_context(|| dir.display().to_string()),
    };
    for e in rd {
        let e = e.with_context(|| dir.display().to_string())?;
        let m = std::fs::symlink_metadata(e.path()).with_context(|| e.path().display().to_string())?;
        if m.is_file() {
            out.insert(
                e.file_name().to_string_lossy().into_owned(),
                (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()),
            );
        }
    }
    Ok(out)
}

/// Refuses a command `reproduce` does not run: anything but `run …` and `train …`, and any that
/// names a data directory (it runs in the scratch one) or an output folder (`train --out`).
fn check_command(command: &[String]) -> Result<()> {
    let Some(first) = command.first() else {
        bail!("--command: empty");
    };
    if !RUNNABLE.contains(&first.as_str()) {
        bail!(
            "the command `{}` is not one that makes a run: lexbench reproduce runs only `run …` and `train …`",
            reproduction::shell_words(command)
        );
    }
    // A command may come from an imported entry or log: it writes nowhere but the scratch data
    // directory (`--data` is reproduce's, and `train --out` would write a model folder elsewhere).
    if let Some(a) = command.iter().find(|a| {
        ["--data", "--out"]
            .iter()
            .any(|o| *a == o || a.strip_prefix(o).is_some_and(|r| r.starts_with('=')))
    }) {
        bail!(
            "the command `{}` names {a}: reproduce runs it in a data directory of its own and writes nowhere else",
            reproduction::shell_words(command)
        );
    }
    Ok(())
}

/// A fresh `scratch` data directory holding the dataset `name` of `data` (every file hard-linked,
/// copied where links cannot be made) and the BM25 run of `split`, if there is one.
fn prepare_scratch(data: &DataDir, scratch: &Path, name: &str, split: &str) -> Result<()> {
    if scratch.exists() {
        lexbench_core::io::remove_dir_journaled(scratch)?;
    }
    let from = data.dataset(name)?.0;
    let to = DataDir::new(scratch).dataset(name)?.0;
    link_tree(&from, &to)?;
    let runs = data.root().join("runs").join(name).join(split);
    let into = scratch.join("runs").join(name).join(split);
    for f in ["bm25.trec", "bm25.json"] {
        if runs.join(f).is_file() {
            std::fs::create_dir_all(&into).with_context(|| into.display().to_string())?;
            link_or_copy(&runs.join(f), &into.join(f))?;
        }
    }
    Ok(())
}

/// Every regular file under `from` linked (or copied) to the same place under `to`; a symbolic
/// link or another kind of file there is an error naming it.
fn link_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| to.display().to_string())?;
    for e in std::fs::read_dir(from).with_context(|| from.display().to_string())? {
        let e = e.with_context(|| from.display().to_string())?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().with_context(|| src.display().to_string())?;
        if kind.is_dir() {
            link_tree(&src, &dst)?;
        } else if kind.is_file() {
            link_or_copy(&src, &dst)?;
        } else {
            bail!(
                "{}: not a regular file or folder; the dataset cannot be reproduced from it",
                src.display()
            );
        }
    }
    Ok(())
}

/// Links `src` at `dst` (a path of the fresh scratch folder), or copies it where links cannot be
/// made (another file system, links not allowed). Nothing is ever written through a file already at
/// `dst`: it could be a link to the user's own file, and a copy onto it would truncate that file.
fn link_or_copy(src: &Path, dst: &Path) -> Result<()> {
    let err = match std::fs::hard_link(src, dst) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    if err.kind() == std::io::ErrorKind::AlreadyExists {
        bail!(
            "{}: already there in the scratch folder, which should be new (another process writing it?); \
             nothing was written",
            dst.display()
        );
    }
    let mut from = std::fs::File::open(src).with_context(|| src.display().to_string())?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dst)
        .with_context(|| {
            format!(
                "copying {} to {} (it could not be linked: {err})",
                src.display(),
                dst.display()
            )
        })?;
    std::io::copy(&mut from, &mut to)
        .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
    Ok(())
}

/// The record of one reproduction of `e`, made here and now.
fn record(
    e: &Entry,
    command: Vec<String>,
    outcome: Outcome,
    tolerance: Option<f64>,
    differences: Vec<String>,
    seconds: f64,
) -> Reproduction {
    Reproduction {
        entry: e.id.clone(),
        system: e.system.clone(),
        dataset: e.dataset.name.clone(),
        split: e.dataset.split.clone(),
        dataset_hash: e.dataset.hash.clone(),
        command,
        outcome,
        tolerance,
        differences,
        seconds: (seconds * 10.0).round() / 10.0,
        finished_at: lexbench_core::time::now_rfc3339(),
        cpu: lexbench_core::run::cpu_model(),
        threads: lexbench_core::run::threads(),
        binary_sha256: lexbench_core::run::invocation().and_then(|i| i.binary_sha256),
        git_revision: lexbench_baselines::rank::git_revision(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 68, item 1: a file already at the destination (a hard link of the source, as a second
    /// reproduce left it) is never copied onto: the copy would truncate the user's file.
    #[test]
    fn a_link_already_there_is_refused_not_copied_through() {
        let dir =
            lexbench_core::testing::scratch_root().join(format!("lexbench-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (src, dst) = (dir.join("manifest.json"), dir.join("linked.json"));
        std::fs::write(&src, "the user's dataset").unwrap();
        std::fs::hard_link(&src, &dst).unwrap();
        let e = link_or_copy(&src, &dst).unwrap_err().to_string();
        assert!(e.contains("already there"), "{e}");
        assert_eq!(std::fs::read_to_string(&src).unwrap(), "the user's dataset");
        let fresh = dir.join("fresh.json");
        link_or_copy(&src, &fresh).unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "the user's dataset");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
