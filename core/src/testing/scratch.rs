//! The tests' scratch folders (`scratch_root`). Self-contained, so that the core crate's own
//! integration tests, built without the `testing` feature, include it by path:
//! `#[path = "../src/testing/scratch.rs"] mod scratch;`.

use std::path::{Path, PathBuf};

/// This test process's scratch folder, `$TMPDIR/lexbench-tests/<pid>-<start>` (created): tests put
/// their temporary folders under it instead of straight under `$TMPDIR`.
///
/// A test that fails, or panics before its own clean-up, used to leave its folder behind for good
/// (thousands piled up over a few days of test runs and filled the disk). Now the first call in a
/// process removes the scratch folders of test processes that are gone, so a crashed run's files
/// last until the next test process starts: long enough to read them after a failure, unless
/// `LEXBENCH_KEEP_SCRATCH` is set, which keeps every one. A folder is named by its process's id
/// and start time (Linux's `/proc/PID/stat`), so a later process that reuses the id never has its
/// folder taken for a dead one; where there is no `/proc`, folders are named by the id alone and
/// none is removed.
///
/// # Panics
/// When the folder cannot be created.
pub fn scratch_root() -> PathBuf {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let parent = std::env::temp_dir().join("lexbench-tests");
        let me = std::process::id();
        let name = match process_start(me) {
            Some(start) => format!("{me}-{start}"),
            None => me.to_string(),
        };
        if std::env::var_os("LEXBENCH_KEEP_SCRATCH").is_none() {
            sweep_dead_scratch(&parent, &name);
        }
        let root = parent.join(name);
        std::fs::create_dir_all(&root)
            .unwrap_or_else(|e| panic!("cannot create the scratch folder {}: {e}", root.display()));
        root
    })
    .clone()
}

/// The start time of process `pid` in clock ticks since boot (field 22 of `/proc/PID/stat`), or
/// `None` where there is no such process or no `/proc`.
pub(crate) fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or ')': fields 3 on follow the
    // last ')'. Field 22 is the 20th of them.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Removes the folders under `parent` named `<pid>-<start>` whose process is gone (no process with
/// that id, or one that started at another time). Best effort: a folder that cannot be removed is
/// left for the next sweep.
pub(crate) fn sweep_dead_scratch(parent: &Path, mine: &str) {
    if process_start(std::process::id()).is_none() {
        return; // no /proc: liveness cannot be told, so nothing is removed
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == mine {
            continue;
        }
        let Some((pid, start)) = name.split_once('-') else {
            continue;
        };
        let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
            continue;
        };
        if process_start(pid) != Some(start) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
