//! The reproductions of the leaderboard's rows: each `lexbench reproduce ENTRY` — the command that
//! made an entry's run, run again, its run evaluated and compared with the entry — is recorded as one
//! line of `DATA/leaderboard/reproductions.jsonl` ([`Reproduction`]); [`table`] lists every entry
//! with the command that made it and its last reproduction (`lexbench leaderboard --reproductions`).
//!
//! The log travels with the entries: `leaderboard --export DIR` writes it as
//! `DIR/reproductions.jsonl`. What `--import DIR` finds there is someone else's claim, not a
//! reproduction made here: its lines (of entries it imports) go to a log of their own,
//! `DATA/leaderboard/reproductions-imported.jsonl` ([`ImportedClaim`], [`merge`]), each marked with
//! the folder it came from and when it was imported. The table shows a claim as one (never as this
//! data directory's reproduction), and a claim never supplies the command `reproduce` runs
//! ([`proven_command`] reads only the log of reproductions made here). Nothing is exported but the
//! reproductions made here.
//!
//! A line records when and where (CPU, threads, binary) a reproduction ran; nothing in it is hashed
//! or compared, so the clock and the machine may be named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::entry::{Entry, ModelKind};
use crate::error::{Error, Result};

/// The log's file name, in `DATA/leaderboard` and in an export folder.
pub const LOG_FILE: &str = "reproductions.jsonl";
/// The file of imported claims, in `DATA/leaderboard`.
pub const IMPORTED_FILE: &str = "reproductions-imported.jsonl";
/// The largest reproduction log an import reads.
pub const MAX_LOG_BYTES: usize = 64 << 20;

/// The tolerance of a reproduction that cannot be bit for bit: the mean of each measure within this
/// absolute difference (two points of recall). Training is run again from its seed, but a GPU's
/// reductions are not ordered, and the threads and vector width of another CPU reorder a float sum;
/// training amplifies such differences. Two points is about one standard error of a split's mean
/// R@10% here (per-topic values spread about 0.35 over some 300 topics: 0.35 / √300 ≈ 0.02): within
/// it, a reproduction is as close as a second seed would be.
pub const TRAINED_TOLERANCE: f64 = 0.02;

/// How a reproduction came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The same run file (sha256) and every value the same bits.
    Identical,
    /// Every per-topic value and score the same bits, but not the same run file: on another CPU a
    /// float sum is reordered (vector width, threads), scores differ in their last digits and near-ties
    /// may swap, but no relevant paragraph crosses a cut-off, so no figure of the entry changes.
    SameFigures,
    /// Not the same bits, but every measure's mean within the tolerance.
    WithinTolerance,
    /// Not reproduced: the values differ (beyond the tolerance, when one was given).
    Differs,
    /// The command failed (exit status not 0, or no run written).
    Failed,
}

impl Outcome {
    /// Whether the entry was reproduced.
    pub fn passed(self) -> bool {
        matches!(
            self,
            Outcome::Identical | Outcome::SameFigures | Outcome::WithinTolerance
        )
    }

    /// The word the table prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Identical => "identical",
            Outcome::SameFigures => "same figures",
            Outcome::WithinTolerance => "within tolerance",
            Outcome::Differs => "DIFFERS",
            Outcome::Failed => "FAILED",
        }
    }
}

/// One reproduction of one entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reproduction {
    /// The entry's id.
    pub entry: String,
    /// Its system, dataset and split (for a reader of the log alone).
    pub system: String,
    /// The dataset.
    pub dataset: String,
    /// The split.
    pub split: String,
    /// The dataset version it ran on.
    pub dataset_hash: String,
    /// What was run: the `lexbench` arguments (`run dense --model …`), or
    /// `["leaderboard", "--recheck", ID]` for a verified entry, whose model the harness runs itself.
    pub command: Vec<String>,
    /// How it came out.
    pub outcome: Outcome,
    /// The absolute tolerance on each measure's mean, when not bit for bit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// What differs (at most [`crate::recheck::MAX_DIFFERENCES`]), or why it failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// Wall-clock seconds of the command (the evaluation not counted).
    pub seconds: f64,
    /// When it finished (UTC, RFC 3339).
    pub finished_at: String,
    /// The CPU (`/proc/cpuinfo`'s model name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The threads it was given.
    pub threads: usize,
    /// The sha256 of the `lexbench` binary that reproduced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
    /// The checkout's revision, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_revision: Option<String>,
}

/// `DATA/leaderboard/reproductions.jsonl`.
pub fn log_path(data: &Path) -> PathBuf {
    data.join("leaderboard").join(LOG_FILE)
}

/// `DATA/leaderboard/reproductions-imported.jsonl`.
pub fn imported_path(data: &Path) -> PathBuf {
    data.join("leaderboard").join(IMPORTED_FILE)
}

/// A reproduction someone else's log claims, imported with its entry (`leaderboard --import`):
/// kept apart from the reproductions made here and shown as a claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedClaim {
    /// The folder it was imported from, as the import was given it.
    pub from: String,
    /// When it was imported (UTC, RFC 3339).
    pub imported_at: String,
    /// The line as the folder's log has it (its machine, date and outcome are the claim's own).
    pub claim: Reproduction,
}

/// The imported claims of `data` (none when there are none).
pub fn read_imported(data: &Path) -> Result<Vec<ImportedClaim>> {
    let path = imported_path(data);
    if !path.exists() {
        return Ok(Vec::new());
    }
    Ok(lexbench_core::io::read_jsonl(&path)?)
}

/// The reproduction log of an export folder (`DIR/reproductions.jsonl`), read before anything is
/// imported: none when the folder has none; one that is not a regular file (a FIFO, a device, a
/// link to one), is over [`MAX_LOG_BYTES`] or has a line that is not a [`Reproduction`] is an error
/// naming the file.
pub fn read_export_log(dir: &Path) -> Result<Vec<Reproduction>> {
    let path = dir.join(LOG_FILE);
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(Error::Io { path, source }),
    };
    if !meta.is_file() {
        return Err(Error::Format {
            path,
            message: "not a regular file (a FIFO, a device or a folder): an export's reproduction log is a \
                      file, and nothing waits on anything else"
                .into(),
        });
    }
    let bytes = lexbench_core::text::read_bytes_at_most(&path, MAX_LOG_BYTES)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    Ok(lexbench_core::io::read_jsonl_bytes(&bytes, &path)?)
}

/// Every line of the log at `path` (none when it does not exist); a line that is not a
/// [`Reproduction`] is an error naming the file and line.
pub fn read_log(path: &Path) -> Result<Vec<Reproduction>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    Ok(lexbench_core::io::read_jsonl(path)?)
}

/// Appends `r` to the log at `path`, rewriting the file atomically (a killed append leaves the log
/// as it was) under a lock beside it, so that two reproductions ending at once both keep their line.
pub fn append(path: &Path, r: &Reproduction) -> Result<()> {
    let _lock = lock_log(path)?;
    let mut all = read_log(path)?;
    all.push(r.clone());
    write_log(path, &all)
}

/// The lock of the log at `path` (`.reproductions.jsonl.lock` beside it), waited for up to a
/// minute: its holder only reads and rewrites the log.
fn lock_log(path: &Path) -> Result<lexbench_core::io::FileLock> {
    let name = path
        .file_name()
        .map_or_else(|| LOG_FILE.to_owned(), |n| n.to_string_lossy().into_owned());
    let lock = path.with_file_name(format!(".{name}.lock"));
    let start = std::time::Instant::now();
    loop {
        if let Some(l) = lexbench_core::io::FileLock::try_exclusive(&lock)? {
            return Ok(l);
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            return Err(Error::Param(format!(
                "{}: held for over a minute by another lexbench process; the reproduction was not recorded",
                lock.display()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn write_log(path: &Path, all: &[Reproduction]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| Error::Io {
            path: parent.to_owned(),
            source,
        })?;
    }
    Ok(lexbench_core::io::write_jsonl(path, all.iter())?)
}

/// Adds the lines of `claims` (an export folder's log, [`read_export_log`]) whose entry is in `known`
/// to the imported claims of `data`, each marked as come `from` that folder (a claim already there,
/// or a line of this data directory's own log, is not added again); returns the claims added.
pub fn merge(data: &Path, claims: &[Reproduction], known: &BTreeSet<String>, from: &str) -> Result<usize> {
    let ours = read_log(&log_path(data))?;
    let path = imported_path(data);
    let _lock = lock_log(&path)?;
    let mut all = read_imported(data)?;
    let before = all.len();
    let at = lexbench_core::time::now_rfc3339();
    for r in claims {
        if known.contains(&r.entry) && !ours.contains(r) && !all.iter().any(|c| c.claim == *r) {
            all.push(ImportedClaim {
                from: from.to_owned(),
                imported_at: at.clone(),
                claim: r.clone(),
            });
        }
    }
    let added = all.len() - before;
    if added > 0 {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                path: parent.to_owned(),
                source,
            })?;
        }
        lexbench_core::io::write_jsonl(&path, all.iter())?;
    }
    Ok(added)
}

/// What made an entry's run, as the table prints it: the command its run's sidecar records
/// (`lexbench run …`, `lexbench train …`), the harness's `submit` for a verified entry, or `None`
/// when nothing records it (a run made elsewhere, or before commands were recorded).
pub fn made_by(e: &Entry) -> Option<String> {
    if let Some(h) = e.provenance.harness() {
        return Some(if h.model.kind == ModelKind::Bm25 {
            format!(
                "lexbench submit --baseline --dataset {} --splits {}",
                e.dataset.name, e.dataset.split
            )
        } else {
            format!(
                "lexbench submit --model {} --dataset {}",
                h.model.path, e.dataset.name
            )
        });
    }
    recorded_command(e).map(|c| format!("lexbench {}", shell_words(&c)))
}

/// The command of the last reproduction of `entry` in `log` that passed by running a command (not a
/// recheck): for an entry whose run records none, a command shown to make it.
pub fn proven_command<'a>(entry: &str, log: &'a [Reproduction]) -> Option<&'a [String]> {
    log.iter()
        .rev()
        .find(|r| {
            r.entry == entry
                && r.outcome.passed()
                && r.command.first().is_some_and(|c| c == "run" || c == "train")
        })
        .map(|r| r.command.as_slice())
}

/// The command the entry's run sidecar records (`invocation.command`), if any.
pub fn recorded_command(e: &Entry) -> Option<Vec<String>> {
    let c = e.run.sidecar.as_ref()?.get("invocation")?.get("command")?;
    serde_json::from_value(c.clone()).ok()
}

/// `args` as one shell line: each argument quoted when it holds anything but `[A-Za-z0-9_./,:=@%+-]`.
pub fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./,:=@%+-".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The table of `lexbench leaderboard --reproductions` (Markdown): one row per entry (by dataset,
/// split, system), the command that made it, how to reproduce it, its last reproduction made here
/// (`log`), and the last claim imported for it (`imported`), shown as a claim.
pub fn table(entries: &[Entry], log: &[Reproduction], imported: &[ImportedClaim]) -> String {
    let mut last: BTreeMap<&str, &Reproduction> = BTreeMap::new();
    for r in log {
        last.insert(r.entry.as_str(), r);
    }
    let mut claimed: BTreeMap<&str, &ImportedClaim> = BTreeMap::new();
    for c in imported {
        claimed.insert(c.claim.entry.as_str(), c);
    }
    let said = |r: &Reproduction| {
        let tol = r.tolerance.map_or(String::new(), |t| format!(" (±{t})"));
        format!(
            "{}{tol}, {}, {} s, {}, {} thread(s)",
            r.outcome.as_str(),
            r.finished_at,
            r.seconds.round(),
            r.cpu.as_deref().unwrap_or("CPU unknown"),
            r.threads
        )
    };
    let mut rows: Vec<&Entry> = entries.iter().collect();
    rows.sort_by(|a, b| {
        (&a.dataset.name, &a.dataset.split, &a.system, &a.id).cmp(&(
            &b.dataset.name,
            &b.dataset.split,
            &b.system,
            &b.id,
        ))
    });
    let mut out = String::from(
        "| dataset | split | system | made by | reproduce | last reproduction |\n|---|---|---|---|---|---|\n",
    );
    let cell = |s: &str| s.replace('|', "\\|");
    for e in rows {
        let (made, how) = match (made_by(e), proven_command(&e.id, log)) {
            (Some(m), _) => (format!("`{m}`"), format!("`lexbench reproduce {}`", e.id)),
            (None, Some(c)) => (
                format!("not recorded; reproduced by `lexbench {}`", shell_words(c)),
                format!("`lexbench reproduce {}`", e.id),
            ),
            (None, None) => (
                "not recorded".to_owned(),
                format!("`lexbench reproduce {} --command '…'`", e.id),
            ),
        };
        let mut seen = match last.get(e.id.as_str()) {
            None => "never here".to_owned(),
            Some(r) => said(r),
        };
        if let Some(c) = claimed.get(e.id.as_str()) {
            seen.push_str(&format!(
                "; imported claim, not checked here (from {}, imported {}): {}",
                c.from,
                c.imported_at,
                said(&c.claim)
            ));
        }
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(&e.dataset.name),
            cell(&e.dataset.split),
            cell(&e.system),
            cell(&made),
            cell(&how),
            cell(&seen)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(entry: &str, outcome: Outcome) -> Reproduction {
        Reproduction {
            entry: entry.into(),
            system: "s".into(),
            dataset: "d".into(),
            split: "test".into(),
            dataset_hash: "h".into(),
            command: vec!["run".into(), "random".into()],
            outcome,
            tolerance: None,
            differences: vec![],
            seconds: 1.0,
            finished_at: "2026-11-29T00:00:00Z".into(),
            cpu: None,
            threads: 2,
            binary_sha256: None,
            git_revision: None,
        }
    }

    #[test]
    fn imported_lines_are_claims_kept_apart_once_and_never_a_recipe() {
        let dir =
            lexbench_core::testing::scratch_root().join(format!("lexbench-repro-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (export, data) = (dir.join("export"), dir.join("data"));
        let theirs = export.join(LOG_FILE);
        append(&theirs, &rec("e1", Outcome::Identical)).unwrap();
        append(&theirs, &rec("e2", Outcome::Differs)).unwrap();
        let mut ours = rec("e1", Outcome::Differs);
        ours.finished_at = "2026-11-30T00:00:00Z".into();
        append(&log_path(&data), &ours).unwrap();
        append(&theirs, &ours).unwrap();
        let claims = read_export_log(&export).unwrap();
        assert_eq!(claims.len(), 3);
        let known: BTreeSet<String> = ["e1".to_owned()].into();
        assert_eq!(
            merge(&data, &claims, &known, "export").unwrap(),
            1,
            "e2 is not an entry there; our own line is not a claim"
        );
        assert_eq!(
            merge(&data, &claims, &known, "export").unwrap(),
            0,
            "nothing twice"
        );
        let imported = read_imported(&data).unwrap();
        assert_eq!(imported.len(), 1);
        assert_eq!(imported[0].from, "export");
        assert_eq!(imported[0].claim, rec("e1", Outcome::Identical));
        // The log made here is as it was: the claim passed, but it is no recipe.
        assert_eq!(read_log(&log_path(&data)).unwrap(), vec![ours]);
        assert_eq!(proven_command("e1", &read_log(&log_path(&data)).unwrap()), None);

        std::fs::write(&theirs, "{\"entry\": 3}\n").unwrap();
        let e = read_export_log(&export).unwrap_err().to_string();
        assert!(e.contains(LOG_FILE) && e.contains("line 1"), "{e}");
        std::fs::remove_file(&theirs).unwrap();
        assert!(read_export_log(&export).unwrap().is_empty());
        let st = std::process::Command::new("mkfifo")
            .arg(&theirs)
            .status()
            .unwrap();
        assert!(st.success());
        let e = read_export_log(&export).unwrap_err().to_string();
        assert!(e.contains(LOG_FILE) && e.contains("not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn shell_words_quote_what_a_shell_would_split() {
        let w = |v: &[&str]| shell_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            w(&["run", "dense", "--query-prefix", "query: ", "--x", "it's"]),
            r"run dense --query-prefix 'query: ' --x 'it'\''s'"
        );
        assert_eq!(
            w(&["--splits", "test,unseen_query", ""]),
            "--splits test,unseen_query ''"
        );
    }
}
