//! What an export killed before it finished leaves, and how the next export to the same folder
//! settles it.
//!
//! An export is built in `.NAME.partial-PID.TOKEN` beside its folder and swapped in at the end
//! ([`write_dir_atomic`](lexbench_core::io::write_dir_atomic)). Inside a data directory the write
//! journal records that folder; an export elsewhere (`--out ~/exports/x`) has no journal, so the
//! export marks the folder itself: the first file it writes there, [`MARK`], holds the folder's own
//! identity (device and inode), and the last thing it does before the swap is remove it. The next
//! export to the same `out` removes a `.NAME.partial-PID.TOKEN` of a process that is gone only when it is a
//! real folder holding a mark that names that very folder (a copy, a user's folder of that name, or a
//! link, do not); anything else is left and reported. Nothing is removed by its name alone.

use std::io;
use std::path::{Path, PathBuf};

use lexbench_core::journal::{Identity, process_alive};
use serde::Serialize;

use crate::error::Result;

/// The mark an export in progress keeps in its temporary folder.
pub const MARK: &str = ".lexbench-export-in-progress.json";

/// The most a mark holds (one identity).
const MAX_MARK_BYTES: u64 = 4096;

/// A leftover of an earlier export found beside `out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Leftover {
    /// The folder.
    pub path: PathBuf,
    /// Whether it was removed (else it is still there).
    pub removed: bool,
    /// Why it was left, when it was.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.removed {
            write!(
                f,
                "removed {}, left by an export that was interrupted",
                self.path.display()
            )
        } else {
            write!(
                f,
                "left {}, which looks like an interrupted export's folder: {}",
                self.path.display(),
                self.why
            )
        }
    }
}

/// Marks the export's temporary folder `tmp` as one in progress (the first file written there).
pub(crate) fn mark(tmp: &Path) -> Result<()> {
    let id = Identity::at(tmp);
    let text = serde_json::to_string(&id).unwrap_or_else(|_| "null".to_owned());
    lexbench_core::io::write_atomic(&tmp.join(MARK), |w| {
        io::Write::write_all(w, text.as_bytes())?;
        io::Write::write_all(w, b"\n")
    })?;
    Ok(())
}

/// Removes the mark: the folder is complete (the last step before it is swapped in).
pub(crate) fn unmark(tmp: &Path) -> Result<()> {
    std::fs::remove_file(tmp.join(MARK)).map_err(|source| lexbench_core::Error::Io {
        path: tmp.join(MARK),
        source,
    })?;
    Ok(())
}

/// Settles the leftovers of interrupted exports to `out` (module docs). Best effort: a folder that
/// can not be read or removed is reported, never an error of the export.
pub(crate) fn settle(out: &Path) -> Vec<Leftover> {
    let (Some(parent), Some(name)) = (out.parent(), out.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(rd) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.partial-");
    let mut found: Vec<(PathBuf, u32)> = rd
        .filter_map(|e| {
            let e = e.ok()?;
            let file = e.file_name();
            let (pid, token) = file.to_str()?.strip_prefix(&prefix)?.split_once('.')?;
            if pid.is_empty()
                || !pid.bytes().all(|b| b.is_ascii_digit())
                || !lexbench_core::journal::is_token(token)
            {
                return None;
            }
            Some((e.path(), pid.parse().ok()?))
        })
        .filter(|(_, pid)| !process_alive(*pid))
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(path, _)| match proved(&path) {
            Ok(()) => match std::fs::remove_dir_all(&path) {
                Ok(()) => Leftover {
                    path,
                    removed: true,
                    why: String::new(),
                },
                Err(e) => Leftover {
                    path,
                    removed: false,
                    why: format!("could not remove it ({e})"),
                },
            },
            Err(why) => Leftover {
                path,
                removed: false,
                why,
            },
        })
        .collect()
}

/// Is `dir` an export's temporary folder, by its own mark?
fn proved(dir: &Path) -> std::result::Result<(), String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !meta.file_type().is_dir() {
        return Err("not a folder (a link or a file): left alone".into());
    }
    let mark = dir.join(MARK);
    let not_ours = || {
        format!(
            "it holds no mark of an export in progress ({MARK}) naming it; remove it yourself if it \
             is a leftover"
        )
    };
    let Ok(m) = std::fs::symlink_metadata(&mark) else {
        return Err(not_ours());
    };
    if !m.file_type().is_file() || m.len() > MAX_MARK_BYTES {
        return Err(not_ours());
    }
    let text = std::fs::read_to_string(&mark).map_err(|_| not_ours())?;
    let recorded: Option<Identity> = serde_json::from_str(text.trim()).map_err(|_| not_ours())?;
    match (recorded, Identity::of(&meta)) {
        (Some(r), Some(here)) if r == here => Ok(()),
        _ => {
            Err("its mark names another folder (a copy?); remove it yourself if it is a leftover".to_owned())
        }
    }
}
