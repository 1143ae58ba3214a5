//! Leaderboard entries: the schema-versioned JSON record of one accepted submission, written
//! atomically under a unique name (never over another entry), and read back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use lexbench_core::TopicId;
use serde::{Deserialize, Serialize};

use crate::card::ModelCard;
use crate::error::{Error, Result, io_err};

/// Version of the entry schema; readers skip entries with a newer one.
pub const SCHEMA_VERSION: u32 = 1;

/// One accepted submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// [`SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// The entry's file stem in `DATA/leaderboard/entries/`.
    pub id: String,
    /// The system's name as submitted (`--name`).
    pub system: String,
    /// When it was accepted (UTC, RFC 3339).
    pub submitted_at: String,
    /// The model card, if one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<ModelCard>,
    /// The data it was evaluated on.
    pub dataset: DatasetRef,
    /// The evaluator that produced the scores.
    pub evaluator: String,
    /// The run file.
    pub run: RunRef,
    /// Measure names (ir_measures spelling), in column order.
    pub measures: Vec<String>,
    /// Mean of each measure over every topic of the split's qrels.
    pub scores: BTreeMap<String, f64>,
    /// Each qrels topic's values, in the order of `measures` (missing topics hold zeros).
    pub per_topic: BTreeMap<TopicId, Vec<f64>>,
    /// Topics of the split without results in the run.
    pub missing_topics: Vec<TopicId>,
    /// Warnings from validation (ties, missing topics).
    pub warnings: Vec<String>,
}

/// The dataset version an entry was evaluated on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetRef {
    /// The dataset's name.
    pub name: String,
    /// The split.
    pub split: String,
    /// Its identity hash (`DatasetManifest::dataset_hash`).
    pub hash: String,
    /// The dataset layout version.
    pub layout_version: u32,
    /// Whether topics rank per-topic pools (ECtHR) or the corpus (BSARD).
    pub pooled: bool,
    /// Documents in the corpus.
    pub documents: usize,
    /// Topics in the split.
    pub topics: usize,
}

/// The submitted run file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRef {
    /// Its file name as submitted.
    pub file: String,
    /// sha256 of its bytes.
    pub sha256: String,
    /// Its tag (last column).
    pub tag: String,
    /// Lines.
    pub lines: usize,
    /// The run's JSON sidecar (`RUN.json` beside it), if there was one: config, seed, timings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar: Option<serde_json::Value>,
}

impl Entry {
    /// The mean of measure `name`.
    pub fn score(&self, name: &str) -> Option<f64> {
        self.scores.get(name).copied()
    }

    /// Per-topic values of measure `name`.
    pub fn topic_values(&self, name: &str) -> Option<BTreeMap<&TopicId, f64>> {
        let i = self.measures.iter().position(|m| m == name)?;
        Some(self.per_topic.iter().map(|(t, v)| (t, v[i])).collect())
    }
}

/// `DATA/leaderboard`.
pub fn leaderboard_dir(data: &Path) -> PathBuf {
    data.join("leaderboard")
}

/// `DATA/leaderboard/entries`.
pub fn entries_dir(data: &Path) -> PathBuf {
    leaderboard_dir(data).join("entries")
}

/// A file-name-safe form of a system name: lower-case ASCII letters, digits and `-`.
pub fn slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_matches('-');
    if s.is_empty() {
        "system".into()
    } else {
        s.chars().take(40).collect()
    }
}

/// Writes `entry` into `dir` under a new, unique name `{dataset}__{split}__{slug}__{stamp}__{sha}[-n].json`
/// and returns its path; `entry.id` is set to the chosen stem. The content goes to a temporary file
/// first (synced), which is then hard-linked to the final name: the link fails if the name exists, so
/// an entry is never overwritten, readers never see a partial file, and concurrent submissions each
/// get their own name.
pub fn write_new(dir: &Path, entry: &mut Entry) -> Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let stamp: String = entry
        .submitted_at
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let base = format!(
        "{}__{}__{}__{}__{}",
        slug(&entry.dataset.name),
        slug(&entry.dataset.split),
        slug(&entry.system),
        stamp,
        &entry.run.sha256[..entry.run.sha256.len().min(12)]
    );
    for n in 1..10_000u32 {
        entry.id = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let path = dir.join(format!("{}.json", entry.id));
        if path.exists() {
            continue;
        }
        let tmp = dir.join(format!(
            ".{}.tmp.{}.{}",
            entry.id,
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let text = serde_json::to_string_pretty(&entry).map_err(|e| Error::Format {
            path: path.clone(),
            message: e.to_string(),
        })? + "\n";
        let written = (|| {
            let mut f = std::fs::File::create_new(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_err(&tmp)(e));
        }
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(&path)(e)),
        }
    }
    // Not a parameter the user chose: the folder already holds every name this scheme can give.
    Err(Error::Io {
        path: dir.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("no free entry name for {base}: {base} to {base}-9999 all exist"),
        ),
    })
}

/// Reads every `*.json` entry in `dir` (none if it does not exist), sorted by submission time then
/// id. Entries with a newer schema are skipped and reported in the second list.
pub fn read_all(dir: &Path) -> Result<(Vec<Entry>, Vec<String>)> {
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((entries, skipped)),
        Err(e) => return Err(io_err(dir)(e)),
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    for p in paths {
        let v: serde_json::Value = lexbench_core::io::read_json(&p)?;
        let version = v
            .get("schema_version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if version > u64::from(SCHEMA_VERSION) {
            skipped.push(format!(
                "{}: schema version {version} is newer than {SCHEMA_VERSION}",
                p.display()
            ));
            continue;
        }
        let e: Entry = serde_json::from_value(v).map_err(|e| Error::Format {
            path: p.clone(),
            message: e.to_string(),
        })?;
        entries.push(e);
    }
    entries.sort_by(|a, b| a.submitted_at.cmp(&b.submitted_at).then_with(|| a.id.cmp(&b.id)));
    Ok((entries, skipped))
}

/// The current time in UTC as RFC 3339 with milliseconds (`2026-11-22T13:05:09.123Z`).
pub fn now_rfc3339() -> String {
    lexbench_core::time::now_rfc3339_millis()
}
