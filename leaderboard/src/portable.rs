//! Portable results: the leaderboard's entries as files another data directory can import
//! (`lexbench leaderboard --export DIR` / `--import DIR`), as a results repository would keep them.
//!
//! **Format** ([`RESULT_FORMAT`], version [`RESULT_FORMAT_VERSION`]): one JSON file per entry, named
//! `<entry id>.json`:
//!
//! ```json
//! {
//!   "format": "lexbench-result",
//!   "format_version": 1,
//!   "entry": { … }
//! }
//! ```
//!
//! `entry` is the leaderboard entry exactly as `DATA/leaderboard/entries/<id>.json` holds it
//! ([`crate::Entry`], schema [`crate::SCHEMA_VERSION`]): the system's name and model card
//! (`card`), the model (`provenance`: `self_reported`, or `verified` with the model folder's sha256,
//! its files, kind, the lexbench version, device and time), the dataset version (`dataset`: name,
//! split, `hash` — the dataset manifest's hash, its version — and layout version), the measures,
//! the split's scores (`scores`) and each topic's values (`per_topic`, in the order of `measures`),
//! the run's sha256 and its sidecar, and the entry's `seal` ([`crate::entry::seal_of`]).
//!
//! **Import** validates every file before writing any, and refuses (naming the file) one whose
//! format, format version or entry schema is unknown, whose seal does not match, whose dataset
//! version is not the one built here (a dataset not built here, or built at another version, is an
//! unknown version: build it first), whose names are not names, or whose numbers do not fit the
//! dataset: the measures must be the task's, the topics exactly the split's judged topics, and each
//! score exactly (bit for bit) the mean of its per-topic values as the evaluator computes it. Entries
//! keep their ids, so exporting a leaderboard and importing it into a fresh data directory with the
//! same datasets built renders the same pages byte for byte. An entry already there with the same
//! bytes is left as it is; another entry under the same id is an error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dataset::{DatasetView, current_hash};
use crate::entry::{
    Entry, EntrySet, OLDEST_SCHEMA_VERSION, Placed, SCHEMA_VERSION, check_integrity, entries_dir,
    is_entry_id, read_entries, write_existing,
};
use crate::error::{Error, Problem, Result, io_err};
use crate::submit::check_system_name;

/// The `format` of a result file.
pub const RESULT_FORMAT: &str = "lexbench-result";
/// The version of the result format this lexbench writes and reads.
pub const RESULT_FORMAT_VERSION: u32 = 1;
/// The largest result file read, in bytes.
pub const MAX_RESULT_BYTES: usize = 64 << 20;

/// One result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultFile {
    /// [`RESULT_FORMAT`].
    pub format: String,
    /// [`RESULT_FORMAT_VERSION`].
    pub format_version: u32,
    /// The entry.
    pub entry: Entry,
}

/// What [`export`] wrote.
#[derive(Debug, Clone, Default)]
pub struct Exported {
    /// One file per entry.
    pub files: Vec<PathBuf>,
    /// Entries not exported: a newer schema, or a failed integrity check (`PATH: why`).
    pub left_out: Vec<String>,
}

/// Writes every entry of `DATA/leaderboard/entries` that passes its checks into `dir` as
/// `<id>.json` ([`ResultFile`]), each atomically; a file of the same name in `dir` is replaced.
///
/// `dir` may not be the data directory itself or lie inside one of the folders lexbench keeps there
/// (`leaderboard/`, `datasets/`, `runs/`, …): an export into `leaderboard/entries` would write each
/// entry's export wrapper over the entry. Paths are compared after resolving links.
pub fn export(data: &Path, dir: &Path) -> Result<Exported> {
    refuse_inside_data(data, dir)?;
    let EntrySet {
        entries,
        skipped,
        tampered,
    } = read_entries(&entries_dir(data))?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = dir.join(format!("{}.json", entry.id));
        let file = ResultFile {
            format: RESULT_FORMAT.to_owned(),
            format_version: RESULT_FORMAT_VERSION,
            entry,
        };
        lexbench_core::io::write_json_pretty(&path, &file)?;
        files.push(path);
    }
    // The reproductions of the entries travel with them (crate::reproduction).
    let log = crate::reproduction::log_path(data);
    if log.is_file() {
        let all = crate::reproduction::read_log(&log)?;
        lexbench_core::io::write_jsonl(&dir.join(crate::reproduction::LOG_FILE), all.iter())?;
    }
    Ok(Exported {
        files,
        left_out: [skipped, tampered].concat(),
    })
}

/// The folders of a data directory that lexbench writes (and the journal's): no export goes there.
const DATA_FOLDERS: [&str; 8] = lexbench_core::datadir::WRITTEN_FOLDERS;

/// `path` with links resolved as far as it exists, the rest appended as written; `None` when that
/// rest holds `..` (a path through a folder that does not exist yet, which the kernel would not
/// resolve the same way).
fn resolved(path: &Path) -> std::io::Result<Option<PathBuf>> {
    let abs = std::path::absolute(path)?;
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(mut out) = existing.canonicalize() {
            for part in rest.iter().rev() {
                let part: &std::ffi::OsString = part;
                if part == ".." {
                    return Ok(None);
                }
                if part != "." {
                    out.push(part);
                }
            }
            return Ok(Some(out));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            (Some(parent), None) => {
                // `existing` ends in `..` or `.`: keep it as a component of the rest.
                rest.push(
                    existing
                        .components()
                        .next_back()
                        .map_or_else(Default::default, |c| c.as_os_str().to_owned()),
                );
                existing = parent;
            }
            (None, _) => return Ok(Some(abs)),
        }
    }
}

/// Refuses an export folder that is the data directory or inside one of its lexbench folders.
fn refuse_inside_data(data: &Path, dir: &Path) -> Result<()> {
    let refuse = |why: String| Err(Error::Param(format!("--export {}: {why}", dir.display())));
    let Some(d) = resolved(dir).map_err(io_err(dir))? else {
        return refuse(
            "the path goes through `..` after a folder that does not exist; give the folder plainly".into(),
        );
    };
    let Some(root) = resolved(data).map_err(io_err(data))? else {
        return Ok(());
    };
    if d == root || DATA_FOLDERS.iter().any(|f| d.starts_with(root.join(f))) {
        return refuse(format!(
            "that is {} of the data directory {}; export into a folder of its own",
            if d == root { "the root" } else { "inside a folder" },
            data.display()
        ));
    }
    Ok(())
}

/// A dataset's files that describe how it was made (its inputs' names, where they lay) rather than
/// define what is scored: two versions that differ in these only hold the same content.
pub const DESCRIBING_FILES: [&str; 2] = ["card.md", "sources.json"];

/// What [`rekey`] did.
#[derive(Debug, Clone, Default)]
pub struct Rekeyed {
    /// The version the entries named.
    pub from: String,
    /// The version built here, which they name now.
    pub to: String,
    /// Dataset files compared and found identical.
    pub identical_files: usize,
    /// Result files re-keyed.
    pub rekeyed: Vec<PathBuf>,
    /// Result files of other datasets or versions, left as they are.
    pub left: Vec<PathBuf>,
}

/// Re-keys the result files in `dir` that name the dataset version of the folder `old` (a copy of
/// that version, manifest and files) to the version of the same dataset built in `data`, after
/// proving the two hold the same content: both folders verify against their manifests, and every
/// file but [`DESCRIBING_FILES`] is in both with the same sha256. Each re-keyed entry has the old
/// version replaced by the new one wherever it names it, records the change ([`crate::entry::Rekey`])
/// and is sealed again; its figures are not touched. Any difference is an error listing the files,
/// and nothing is written. (Issue 55: the version once covered a card holding the inputs' absolute
/// paths, so the same content built elsewhere had another version.)
pub fn rekey(data: &Path, dir: &Path, old: &Path) -> Result<Rekeyed> {
    use lexbench_core::dataset::{DatasetDir, DatasetManifest};
    let refuse = |why: String| Err(Error::Param(format!("--rekey {}: {why}", dir.display())));
    let old_m = DatasetManifest::read(old)?;
    let bad = old_m.verify(old)?;
    if !bad.is_empty() {
        return refuse(format!(
            "{} does not match its manifest ({}): not a dataset as it was built",
            old.display(),
            bad.join(", ")
        ));
    }
    let name = old_m.name.clone();
    let here = DatasetDir::in_data(data, &name)?.0;
    let new_m = DatasetManifest::read(&here)?;
    let bad = new_m.verify(&here)?;
    if !bad.is_empty() {
        return refuse(format!(
            "{} does not match its manifest ({})",
            here.display(),
            bad.join(", ")
        ));
    }
    let (from, to) = (old_m.dataset_hash(), new_m.dataset_hash());
    if old_m.scored_languages() != new_m.scored_languages() {
        let show = |m: &DatasetManifest| {
            format!(
                "language {}, corpus {}",
                m.language.map_or("undeclared", |l| l.code()),
                m.corpus_language.map_or("the same", |l| l.code())
            )
        };
        return refuse(format!(
            "dataset {name}: {} declares {} and {} declares {}: BM25 follows the language, so the figures \
             of one are not the other's",
            &from[..12],
            show(&old_m),
            &to[..12],
            show(&new_m)
        ));
    }
    let defining = |m: &DatasetManifest| -> BTreeMap<String, String> {
        m.files
            .iter()
            .filter(|(k, _)| !DESCRIBING_FILES.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (a, b) = (defining(&old_m), defining(&new_m));
    let differ: Vec<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !differ.is_empty() {
        return refuse(format!(
            "dataset {name}: {} and {} differ in content, not only in their description: {}",
            &from[..12],
            &to[..12],
            differ.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    let differing: Vec<String> = DESCRIBING_FILES
        .iter()
        .filter(|f| old_m.files.get(**f) != new_m.files.get(**f))
        .map(|f| (*f).to_owned())
        .collect();
    let mut out = Rekeyed {
        from: from.clone(),
        to: to.clone(),
        identical_files: a.len(),
        ..Rekeyed::default()
    };
    let mut planned = Vec::new();
    for path in crate::entry::entry_files(dir)? {
        let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
        let mut v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::Param(format!("{}: not JSON: {e}", path.display())))?;
        let Some(entry) = v.get_mut("entry") else {
            return refuse(format!("{}: not a result file (no \"entry\")", path.display()));
        };
        check_integrity(entry)
            .map_err(|why| Error::Param(format!("{}: integrity check failed: {why}", path.display())))?;
        let names = entry.pointer("/dataset/name").and_then(serde_json::Value::as_str) == Some(&name);
        let hash = entry.pointer("/dataset/hash").and_then(serde_json::Value::as_str);
        if !names || hash != Some(&from) || from == to {
            out.left.push(path);
            continue;
        }
        replace_string(entry, &from, &to);
        let record = crate::entry::Rekey {
            from: from.clone(),
            to: to.clone(),
            identical_files: a.len(),
            differing_files: differing.clone(),
        };
        entry["rekeyed"] = serde_json::to_value(&record).map_err(|e| Error::Param(e.to_string()))?;
        if let Some(m) = entry.as_object_mut() {
            m.remove("seal");
        }
        let seal = crate::entry::seal_of(entry);
        entry["seal"] = serde_json::Value::String(seal);
        let file: ResultFile =
            serde_json::from_value(v).map_err(|e| Error::Param(format!("{}: {e}", path.display())))?;
        planned.push((path, file));
    }
    for (path, file) in planned {
        lexbench_core::io::write_json_pretty(&path, &file)?;
        out.rekeyed.push(path);
    }
    Ok(out)
}

/// Replaces every string in `v` equal to `from` by `to`.
fn replace_string(v: &mut serde_json::Value, from: &str, to: &str) {
    match v {
        serde_json::Value::String(s) if s == from => *s = to.to_owned(),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| replace_string(x, from, to)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| replace_string(x, from, to)),
        _ => {}
    }
}

/// What [`import`] did.
#[derive(Debug, Clone, Default)]
pub struct Imported {
    /// Entries written, by path.
    pub written: Vec<PathBuf>,
    /// Entries that were already there, byte for byte.
    pub already_there: Vec<PathBuf>,
    /// Lines of the folder's `reproductions.jsonl` added to the imported claims here.
    pub reproductions: usize,
}

/// Validates every `*.json` file of `dir` as a result file and, if all pass, merges their entries
/// into `DATA/leaderboard/entries` (module docs). A file that does not pass is named in
/// `Err(Error::Rejected)` with what is wrong, and nothing is written.
pub fn import(data: &Path, dir: &Path) -> Result<Imported> {
    let files = crate::entry::entry_files(dir)?;
    if files.is_empty() {
        return Err(Error::Rejected {
            problems: vec![problem(
                dir,
                format!("no result files (*.json) to import in {}", dir.display()),
            )],
        });
    }
    let mut problems = Vec::new();
    let mut accepted: Vec<(PathBuf, Entry, String)> = Vec::new();
    let mut ids = BTreeSet::new();
    for path in files {
        match check_file(data, &path) {
            Ok(entry) => {
                if !ids.insert(entry.id.clone()) {
                    problems.push(problem(&path, format!("entry {} is in two files", entry.id)));
                    continue;
                }
                let text = serde_json::to_string_pretty(&entry).map_err(|e| Error::Format {
                    path: path.clone(),
                    message: e.to_string(),
                })? + "\n";
                let there = entries_dir(data).join(format!("{}.json", entry.id));
                if let Ok(bytes) = std::fs::read(&there)
                    && bytes != text.as_bytes()
                {
                    problems.push(problem(
                        &path,
                        format!(
                            "entry {} is already in {} with other content",
                            entry.id,
                            there.display()
                        ),
                    ));
                    continue;
                }
                accepted.push((path, entry, text));
            }
            Err(Error::Rejected { problems: p }) => problems.extend(p),
            Err(e) => return Err(e),
        }
    }
    // The folder's reproduction log, read (and refused, when it is no log) before anything is
    // written (crate::reproduction).
    let claims = match crate::reproduction::read_export_log(dir) {
        Ok(c) => c,
        Err(e) => {
            let path = dir.join(crate::reproduction::LOG_FILE);
            problems.push(problem(&path, e.to_string()));
            Vec::new()
        }
    };
    if !problems.is_empty() {
        return Err(Error::Rejected { problems });
    }
    let mut out = Imported::default();
    let known: BTreeSet<String> = accepted.iter().map(|(_, e, _)| e.id.clone()).collect();
    for (_, entry, text) in accepted {
        match write_existing(&entries_dir(data), &entry.id, &text)? {
            Placed::Written(p) => out.written.push(p),
            Placed::AlreadyThere(p) => out.already_there.push(p),
        }
    }
    // The reproductions the folder claims for these entries, kept as claims (crate::reproduction).
    out.reproductions = crate::reproduction::merge(data, &claims, &known, &dir.display().to_string())?;
    Ok(out)
}

fn problem(path: &Path, message: String) -> Problem {
    Problem {
        path: path.to_owned(),
        line: None,
        message,
    }
}

/// One result file, checked (module docs): its entry, or `Err(Error::Rejected)` naming the file.
fn check_file(data: &Path, path: &Path) -> Result<Entry> {
    let reject = |message: String| Error::Rejected {
        problems: vec![problem(path, message)],
    };
    let text = match lexbench_core::text::read_text_at_most(path, MAX_RESULT_BYTES) {
        Ok(t) => t,
        Err(lexbench_core::Error::TooLarge { max_bytes, .. }) => {
            return Err(reject(format!("larger than {max_bytes} bytes")));
        }
        Err(lexbench_core::Error::Line { line, error, .. }) => {
            return Err(reject(format!("line {line}: {error}")));
        }
        Err(e) => return Err(e.into()),
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| reject(format!("not JSON: {e}")))?;
    let format = v.get("format").and_then(serde_json::Value::as_str);
    if format != Some(RESULT_FORMAT) {
        return Err(reject(format!(
            "not a lexbench result file: \"format\" is {}, not \"{RESULT_FORMAT}\"",
            v.get("format").map_or("missing".to_owned(), ToString::to_string)
        )));
    }
    let version = v.get("format_version").and_then(serde_json::Value::as_u64);
    if version != Some(u64::from(RESULT_FORMAT_VERSION)) {
        return Err(reject(format!(
            "result format version {} is unknown (this lexbench reads {RESULT_FORMAT_VERSION})",
            v.get("format_version")
                .map_or("missing".to_owned(), ToString::to_string)
        )));
    }
    let Some(entry_v) = v.get("entry") else {
        return Err(reject("no \"entry\"".into()));
    };
    let schema = entry_v
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if !(u64::from(OLDEST_SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&schema) {
        return Err(reject(format!(
            "entry schema version {schema} is unknown (this lexbench reads {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})"
        )));
    }
    check_integrity(entry_v).map_err(|why| reject(format!("integrity check failed: {why}")))?;
    let file: ResultFile = serde_json::from_value(v).map_err(|e| reject(e.to_string()))?;
    let entry = file.entry;
    if !is_entry_id(&entry.id) {
        return Err(reject(format!("entry id {:?} is not a file name", entry.id)));
    }
    for (what, name) in [
        ("dataset name", &entry.dataset.name),
        ("split name", &entry.dataset.split),
    ] {
        lexbench_core::check_name(what, name).map_err(|e| reject(e.to_string()))?;
    }
    check_system_name(&entry.system).map_err(|e| reject(e.to_string()))?;
    let name = &entry.dataset.name;
    match current_hash(data, name) {
        None => {
            return Err(reject(format!(
                "dataset {name} version {} is unknown here: dataset {name} is not built in {}",
                entry.dataset.hash,
                data.display()
            )));
        }
        Some(h) if h != entry.dataset.hash => {
            return Err(reject(format!(
                "dataset {name} version {} is unknown here: the version built here is {h}",
                entry.dataset.hash
            )));
        }
        Some(_) => {}
    }
    let view = DatasetView::load(data, name, &entry.dataset.split)?;
    let problems = fits(&entry, &view);
    if !problems.is_empty() {
        return Err(Error::Rejected {
            problems: problems.into_iter().map(|m| problem(path, m)).collect(),
        });
    }
    Ok(entry)
}

/// How `entry`'s numbers disagree with the dataset split `view` (empty: they fit).
fn fits(entry: &Entry, view: &DatasetView) -> Vec<String> {
    let mut out = Vec::new();
    let want: Vec<String> = view.measures().iter().map(ToString::to_string).collect();
    if entry.measures != want {
        out.push(format!(
            "measures {:?} are not the task's {:?}",
            entry.measures, want
        ));
        return out;
    }
    let d = &entry.dataset;
    if d.task() != view.task {
        out.push(format!(
            "dataset task {} is not that of {}/{} ({})",
            d.task(),
            view.name,
            view.split,
            view.task
        ));
    }
    if d.pooled != view.pools.is_some() || d.documents != view.corpus.len() || d.topics != view.topics.len() {
        out.push(format!(
            "dataset facts (pooled {}, {} documents, {} topics) are not those of {}/{} (pooled {}, {} documents, {} topics)",
            d.pooled,
            d.documents,
            d.topics,
            view.name,
            view.split,
            view.pools.is_some(),
            view.corpus.len(),
            view.topics.len()
        ));
    }
    let judged: BTreeSet<&str> = view.qrels.topics.keys().map(|t| t.as_str()).collect();
    let given: BTreeSet<&str> = entry.per_topic.keys().map(|t| t.as_str()).collect();
    if judged != given {
        let extra = given.difference(&judged).count();
        let missing = judged.difference(&given).count();
        out.push(format!(
            "per_topic holds {extra} topic(s) the split does not judge and lacks {missing} it does"
        ));
        return out;
    }
    let n = entry.per_topic.len().max(1) as f64;
    for (i, m) in entry.measures.iter().enumerate() {
        let mut sum = 0.0f64;
        for (topic, values) in &entry.per_topic {
            match values.get(i) {
                Some(v) if v.is_finite() && (0.0..=1.0).contains(v) => sum += v,
                _ => {
                    out.push(format!("topic {topic}: no value in [0, 1] for {m}"));
                    return out;
                }
            }
        }
        let mean = sum / n;
        match entry.scores.get(m) {
            Some(s) if s.to_bits() == mean.to_bits() => {}
            Some(s) => out.push(format!(
                "score {m} = {s} is not the mean of its per-topic values ({mean})"
            )),
            None => out.push(format!("no score for {m}")),
        }
    }
    if entry.scores.len() != entry.measures.len() {
        out.push("scores name measures the entry does not list".into());
    }
    out
}
