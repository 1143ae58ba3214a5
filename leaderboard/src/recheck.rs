//! Rechecking a verified entry: the harness's run of the same model, made again, compared with what
//! the entry recorded, bit for bit.
//!
//! The caller (the root crate's `recheck`, which can run models) finds the entry ([`find_entry`]),
//! checks the model folder's hash, ranks the split again and evaluates the new run with
//! [`crate::submit::assess`], exactly as a submission; [`compare`] then lists every difference: the
//! run's sha256 and line count, the measures, the missing topics, each topic's value of each measure
//! and each score, compared as bits (`f64::to_bits`), not within a tolerance.

use std::path::{Path, PathBuf};

use crate::entry::{Entry, entries_dir, read_entry};
use crate::error::{Error, Result};

/// The entry `entry` names: an entry id (the file stem in `DATA/leaderboard/entries`) or a path to
/// an entry file; read with its integrity check ([`read_entry`]: a changed entry is
/// [`Error::Tampered`]).
pub fn find_entry(data: &Path, entry: &str) -> Result<(Entry, PathBuf)> {
    let as_path = PathBuf::from(entry);
    let path = if crate::entry::is_entry_id(entry) && !as_path.is_file() {
        entries_dir(data).join(format!("{entry}.json"))
    } else {
        as_path
    };
    if !path.is_file() {
        return Err(Error::Param(format!(
            "no entry {entry}: neither an entry id in {} nor an entry file",
            entries_dir(data).display()
        )));
    }
    let e = read_entry(&path)?;
    if let Err(message) = names_are_names(&e) {
        return Err(Error::Tampered { path, message });
    }
    Ok((e, path))
}

/// Checks that what an entry names as files and folders are names, whatever its seal says (anyone
/// can seal an entry): its id (`reproduce` fills and removes `cache/reproduce/<id>`), its dataset
/// and split (folders of the data directory) and its run file (the file compared), none a path.
fn names_are_names(e: &Entry) -> std::result::Result<(), String> {
    let short = |s: &str| s.chars().take(80).collect::<String>();
    if !crate::entry::is_entry_id(&e.id) {
        return Err(format!(
            "its id {:?} is not an entry id (letters, digits, '-', '_' and '.', not starting with '.'): an id \
             names files and folders, and this one would lead elsewhere",
            short(&e.id)
        ));
    }
    for (kind, v) in [
        ("dataset name", &e.dataset.name),
        ("split name", &e.dataset.split),
    ] {
        lexbench_core::check_name(kind, v).map_err(|err| format!("its {kind}: {err}"))?;
    }
    let f = &e.run.file;
    let plain = !f.is_empty()
        && f != "."
        && f != ".."
        && !f.contains(['/', '\\', '\0'])
        && Path::new(f).file_name() == Some(std::ffi::OsStr::new(f));
    if !plain {
        return Err(format!(
            "its run file {:?} is not a file name (a path, or `..`): a run made again is compared in a folder \
             of its own, never with a file elsewhere",
            short(f)
        ));
    }
    Ok(())
}

/// At most this many differences are listed.
pub const MAX_DIFFERENCES: usize = 20;

/// Every way `now` (a re-run, assessed) differs from `recorded`, at most [`MAX_DIFFERENCES`]; empty
/// when the run is the same file and every value the same bits.
pub fn compare(recorded: &Entry, now: &Entry) -> Vec<String> {
    let mut out = Vec::new();
    let (r, n) = (&recorded.run, &now.run);
    if r.sha256 != n.sha256 {
        out.push(format!(
            "the run differs: sha256 {} recorded, {} now ({} lines recorded, {} now)",
            r.sha256, n.sha256, r.lines, n.lines
        ));
    }
    if recorded.measures != now.measures {
        out.push(format!(
            "measures {:?} recorded, {:?} now",
            recorded.measures, now.measures
        ));
        return out;
    }
    if recorded.missing_topics != now.missing_topics {
        out.push(format!(
            "topics without results: {} recorded, {} now",
            recorded.missing_topics.len(),
            now.missing_topics.len()
        ));
    }
    for (topic, was) in &recorded.per_topic {
        let Some(is) = now.per_topic.get(topic) else {
            out.push(format!("topic {topic}: recorded, not evaluated now"));
            continue;
        };
        for ((m, a), b) in recorded.measures.iter().zip(was).zip(is) {
            if a.to_bits() != b.to_bits() {
                out.push(format!("topic {topic} {m}: {a} recorded, {b} now"));
            }
        }
    }
    for topic in now.per_topic.keys() {
        if !recorded.per_topic.contains_key(topic) {
            out.push(format!("topic {topic}: evaluated now, not recorded"));
        }
    }
    for m in &recorded.measures {
        let (a, b) = (recorded.scores.get(m), now.scores.get(m));
        if a.map(|v| v.to_bits()) != b.map(|v| v.to_bits()) {
            out.push(format!("{m}: {a:?} recorded, {b:?} now"));
        }
    }
    out.truncate(MAX_DIFFERENCES);
    out
}

/// Every measure whose mean differs between `recorded` and `now` by more than `tolerance`
/// (absolute), and any difference in the measures or the topics evaluated; empty when `now` is
/// within the tolerance. Per-topic values are not held to it (one topic may move a rank).
pub fn compare_within(recorded: &Entry, now: &Entry, tolerance: f64) -> Vec<String> {
    let mut out = Vec::new();
    if recorded.measures != now.measures {
        out.push(format!(
            "measures {:?} recorded, {:?} now",
            recorded.measures, now.measures
        ));
        return out;
    }
    let (a, b): (Vec<_>, Vec<_>) = (
        recorded.per_topic.keys().collect(),
        now.per_topic.keys().collect(),
    );
    if a != b {
        out.push(format!(
            "topics evaluated: {} recorded, {} now, not the same",
            a.len(),
            b.len()
        ));
    }
    for m in &recorded.measures {
        match (recorded.scores.get(m), now.scores.get(m)) {
            (Some(x), Some(y)) if (x - y).abs() <= tolerance => {}
            (x, y) => out.push(format!("{m}: {x:?} recorded, {y:?} now (beyond ±{tolerance})")),
        }
    }
    out.truncate(MAX_DIFFERENCES);
    out
}
