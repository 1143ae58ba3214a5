//! The write journal: how lexbench knows which temporaries in a data directory are its own.
//!
//! Every temporary that [`write_atomic`](crate::io::write_atomic) and
//! [`write_dir_atomic`](crate::io::write_dir_atomic) create under a data directory opened by
//! [`DataDir::open`](crate::datadir::DataDir::open) is first named in a journal entry,
//! `DATA/.lexbench/journal/{pid}-{n}.json`, and the entry is removed once the temporary is gone
//! (renamed into place or deleted). A process killed in between leaves the entry naming exactly what
//! it left, and [`recover`] (run by the next command that opens the data directory) settles those
//! paths and nothing else: a file or folder that no entry names is never touched, whatever its name
//! (`notes/.report.md.old-20231231` is a user's file, not a leftover).
//!
//! An entry is one JSON object:
//!
//! ```json
//! {"kind": "tmp", "path": "runs/ecthr/test/.bm25.trec.tmp.4242.0.9f1c0a7e3b5d2c48", "token": "9f1c0a7e3b5d2c48"}
//! {"kind": "partial", "path": "datasets/.ecthr.partial-4242.9f1c0a7e3b5d2c48", "token": "9f1c0a7e3b5d2c48"}
//! {"kind": "old", "path": "datasets/.ecthr.old-4242.9f1c0a7e3b5d2c48", "target": "datasets/ecthr", "token": "9f1c0a7e3b5d2c48"}
//! ```
//!
//! `path` and `target` are relative to the data directory (so a moved data directory still
//! recovers) and hold only plain components; the leftover's own name must also be the name that kind
//! of temporary of that process has (`.{name}.tmp.{pid}.{n}.{token}`, `.{name}.partial-{pid}.{token}`,
//! `.{name}.old-{pid}.{token}`), or the entry is set aside unused. The entry is written before the
//! temporary exists, so a kill at any instant leaves either no temporary or an entry that names it.
//!
//! `token` is the writing process's random token ([`token`]: 16 hex digits drawn from the operating
//! system's randomness when the process starts writing), kept in the entry and in the temporary's
//! name. No file a user or another program made has such a name, and the token of a process that
//! never ran on a data directory can not be read off anything in it: an entry crafted to name a
//! user's `notes/.thesis.tex.old-4242` names no temporary, whatever else it records.
//!
//! The writer also records the folder it makes the temporary in (`folder`: its device and inode,
//! [`Identity`]), which exists before the temporary does:
//!
//! ```json
//! {"kind": "tmp", "path": "runs/ecthr/test/.bm25.trec.tmp.4242.0.9f1c0a7e3b5d2c48", "folder": {"dev": 2049, "ino": 1311}, "token": "9f1c0a7e3b5d2c48"}
//! ```
//!
//! A data directory may come from someone else (copied, unpacked, shared), journal and all, so an
//! entry is a claim, not a proof. [`recover`] acts on a path only when it can prove that this
//! journal's writer made it: the journal folder is a real folder of the data directory (not a
//! symbolic link to another one's), the entry a small regular file, the path inside the data
//! directory with no symbolic link on the way, the folder holding it the very folder the entry
//! records (same device and inode: a copied or unpacked directory has new ones, a crafted entry can
//! not know them; a data directory moved within its file system keeps them), and what stands at the
//! path of the temporary's kind (a file for `tmp`, a folder for `partial` and `old`). Anything else is
//! left where it is and reported (`ignored the write-journal entry …`).

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The journal's folder inside a data directory.
pub const JOURNAL_DIR: &str = ".lexbench/journal";

/// The data directories whose temporaries this process journals (absolute, lexically normalised).
static ROOTS: RwLock<Vec<PathBuf>> = RwLock::new(Vec::new());

/// What kind of temporary an entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A file being written (`.{name}.tmp.{pid}.{n}`): removed.
    Tmp,
    /// A folder being built, or after an exchange the previous version (`.{name}.partial-{pid}`):
    /// removed.
    Partial,
    /// A complete previous version parked by the fallback swap (`.{name}.old-{pid}`): put back
    /// where it belongs when nothing is there, else removed.
    Old,
}

/// One journal entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The temporary's kind.
    pub kind: Kind,
    /// The temporary, relative to the data directory, `/`-separated.
    pub path: String,
    /// For [`Kind::Old`]: where the parked version belongs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The folder the temporary is made in, as the writer found it before making it: recovery
    /// touches `path` (and `target`, beside it) only in this very folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<Identity>,
    /// The writing process's [`token`], which ends the temporary's name: recovery touches only a
    /// temporary whose name carries the entry's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// How many hex digits a [`token`] has.
pub const TOKEN_LEN: usize = 16;

/// This process's random token (see the module documentation): [`TOKEN_LEN`] lower-case hex digits,
/// the same for every temporary the process makes. Drawn from the randomness the standard library
/// seeds its hash maps with (the operating system's), once.
pub fn token() -> &'static str {
    use std::hash::{BuildHasher, Hasher};
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOKEN.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("{:016x}", h.finish())
    })
}

/// Is `s` a token's form ([`TOKEN_LEN`] lower-case hex digits)?
pub fn is_token(s: &str) -> bool {
    s.len() == TOKEN_LEN
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A file's or folder's identity on this machine: its device and inode. A copy, or the same name made
/// anew, has another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The device (file system) holding it.
    pub dev: u64,
    /// Its inode on that device.
    pub ino: u64,
}

impl Identity {
    /// The identity `meta` describes (`None` where the platform has none to give).
    pub fn of(meta: &fs::Metadata) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(Self {
                dev: meta.dev(),
                ino: meta.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }

    /// The identity of what is at `path` itself (a symbolic link is not followed).
    pub fn at(path: &Path) -> Option<Self> {
        fs::symlink_metadata(path).ok().as_ref().and_then(Self::of)
    }
}

/// Journals the temporaries of writes under `root` from now on, in this process.
pub fn register(root: &Path) {
    let Some(root) = normalised(root) else { return };
    let mut roots = ROOTS.write().unwrap_or_else(|e| e.into_inner());
    if !roots.contains(&root) {
        roots.push(root);
    }
}

/// `path` made absolute and lexically normalised (`.` dropped, `..` taken back), without touching
/// the file system.
fn normalised(path: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(path).ok()?;
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// The registered data directory holding `path` (the deepest one) and `path` relative to it.
fn root_of(path: &Path) -> Option<(PathBuf, String)> {
    let roots = ROOTS.read().unwrap_or_else(|e| e.into_inner());
    if roots.is_empty() {
        return None;
    }
    let abs = normalised(path)?;
    let root = roots
        .iter()
        .filter(|r| abs.starts_with(r) && abs != **r)
        .max_by_key(|r| r.components().count())?
        .clone();
    let rel = relative_string(abs.strip_prefix(&root).ok()?)?;
    Some((root, rel))
}

/// `rel` as a `/`-separated string of plain components (`None` for anything else).
fn relative_string(rel: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?),
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// A journal entry written for a temporary about to be created; [`Intent::done`] removes it once the
/// temporary is gone. Dropping it without `done` leaves the entry (the temporary may still exist).
///
/// Code that makes a temporary of its own (not through [`crate::io`]'s writers) in the data directory
/// records it the same way, with a name of the kind's form, so that a kill never leaves it for good.
#[derive(Debug)]
#[must_use = "call done() once the temporary is gone"]
pub struct Intent {
    /// The entry's file.
    entry: Option<PathBuf>,
}

impl Intent {
    /// Records, when `path` lies in a registered data directory, that this process is about to
    /// create the temporary `path` of `kind` (`target`: where an `Old` version belongs). Journaling
    /// is best effort: a journal that can not be written (a read-only data directory, where the write
    /// itself fails next) records nothing.
    pub fn record(kind: Kind, path: &Path, target: Option<&Path>) -> Self {
        let none = Self { entry: None };
        let Some((root, rel)) = root_of(path) else {
            return none;
        };
        let target = match target {
            Some(t) => match root_of(t) {
                Some((r, t)) if r == root => Some(t),
                _ => return none,
            },
            None => None,
        };
        // The folder the temporary goes in exists before it (every writer creates it first).
        let folder = root.join(&rel).parent().and_then(Identity::at);
        let entry = Entry {
            kind,
            path: rel,
            target,
            folder,
            token: Some(token().to_owned()),
        };
        let Ok(text) = serde_json::to_string(&entry) else {
            return none;
        };
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(JOURNAL_DIR);
        // A journal that is not a real folder of this data directory (a symbolic link to another
        // one's) is never written through: recovery would not read it either.
        let hidden = root.join(".lexbench");
        if fs::symlink_metadata(&hidden).is_ok_and(|m| !m.file_type().is_dir())
            || fs::create_dir_all(&dir).is_err()
            || !real_dir(&hidden)
            || !real_dir(&dir)
        {
            return none;
        }
        let file = dir.join(format!("{}-{n}.json", std::process::id()));
        let written = fs::write(&file, text + "\n");
        Self {
            entry: written.is_ok().then_some(file),
        }
    }

    /// The temporary is gone: the entry goes too.
    pub fn done(self) {
        if let Some(file) = self.entry {
            let _ = fs::remove_file(file);
        }
    }
}

/// Is `path` itself a folder (not a symbolic link to one)?
fn real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

/// Writes a journal entry as process `pid` would have: for tests that make the state a killed
/// process leaves without killing one. An entry without `folder` records the folder its path is in
/// now (if it exists), as the writer does, and an entry without `token` the token its path's name
/// ends with (if any); to write an entry exactly as given, fill `folder` and `token` or write the
/// file yourself.
pub fn write_entry(root: &Path, pid: u32, n: u64, entry: &Entry) -> Result<()> {
    let dir = root.join(JOURNAL_DIR);
    let file = dir.join(format!("{pid}-{n}.json"));
    let mut entry = entry.clone();
    if entry.token.is_none() {
        let name = Path::new(&entry.path).file_name().and_then(|n| n.to_str());
        entry.token = name.and_then(parse_name).map(|(_, _, t)| t.to_owned());
    }
    if entry.folder.is_none()
        && let Some(parent) = root.join(&entry.path).parent()
    {
        entry.folder = Identity::at(parent);
    }
    let text = serde_json::to_string(&entry).map_err(|source| Error::Serialise {
        path: file.clone(),
        source,
    })?;
    fs::create_dir_all(&dir)
        .and_then(|()| fs::write(&file, text + "\n"))
        .map_err(|source| Error::Io { path: file, source })
}

/// One leftover of an interrupted write that [`recover`] dealt with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// A previous version parked by an interrupted swap was put back in place (`from` → `to`).
    Restored {
        /// The parked folder.
        from: PathBuf,
        /// Where it belongs.
        to: PathBuf,
    },
    /// An incomplete new version, a superseded old one or a temporary file was removed.
    Removed(PathBuf),
    /// A leftover that could not be settled now (a read-only data directory): left, with its journal
    /// entry, for a later command.
    Left {
        /// The leftover.
        path: PathBuf,
        /// Why it is still there.
        why: String,
    },
    /// A journal that is not a real folder of the data directory (a symbolic link): not read,
    /// nothing acted on.
    Unread {
        /// The journal folder (or the `.lexbench` folder above it).
        path: PathBuf,
        /// What it is.
        why: String,
    },
    /// A journal entry that names no temporary of its process (edited by hand?), or one that can
    /// not be proved to be what its writer made: set aside, and the path it names left alone.
    Ignored {
        /// The entry's file.
        entry: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovered::Restored { from, to } => write!(
                f,
                "restored {} from an interrupted replacement ({})",
                to.display(),
                from.display()
            ),
            Recovered::Removed(p) => write!(f, "removed {}, left by an interrupted write", p.display()),
            Recovered::Left { path, why } => write!(
                f,
                "left {}, a leftover of an interrupted write, for a later command: {why}",
                path.display()
            ),
            Recovered::Unread { path, why } => {
                write!(f, "did not read the write journal {}: {why}", path.display())
            }
            Recovered::Ignored { entry, why } => {
                write!(f, "ignored the write-journal entry {}: {why}", entry.display())
            }
        }
    }
}

/// A leftover's kind, parsed from its name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NameKind<'a> {
    /// `.{name}.partial-{pid}.{token}`.
    Partial,
    /// `.{name}.old-{pid}.{token}`, with `name`.
    Old(&'a str),
    /// `.{name}.tmp.{pid}.{n}.{token}`.
    Tmp,
}

/// Parses a temporary's file name into its kind, the id of the process that made it and that
/// process's [`token`].
pub(crate) fn parse_name(file_name: &str) -> Option<(NameKind<'_>, u32, &str)> {
    let (rest, token) = file_name.rsplit_once('.')?;
    is_token(token).then_some(())?;
    let (kind, pid) = parse_untokened(rest)?;
    Some((kind, pid, token))
}

/// [`parse_name`] of a name without its token.
fn parse_untokened(file_name: &str) -> Option<(NameKind<'_>, u32)> {
    let rest = file_name.strip_prefix('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((name, pid)) = rest.rsplit_once(".partial-")
        && !name.is_empty()
        && digits(pid)
    {
        return Some((NameKind::Partial, pid.parse().ok()?));
    }
    if let Some((name, pid)) = rest.rsplit_once(".old-")
        && !name.is_empty()
        && digits(pid)
    {
        return Some((NameKind::Old(name), pid.parse().ok()?));
    }
    let (head, n) = rest.rsplit_once('.')?;
    let (name, pid) = head.rsplit_once(".tmp.")?;
    (!name.is_empty() && digits(pid) && digits(n)).then_some(())?;
    Some((NameKind::Tmp, pid.parse().ok()?))
}

/// Is the process `pid` (possibly) still running? Leftovers of running processes are theirs.
pub fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
            return false;
        };
        // ESRCH: no such process. Any other answer (success, EPERM: another user's) means it exists.
        !matches!(rustix::process::test_kill_process(p), Err(e) if e == rustix::io::Errno::SRCH)
    }
    #[cfg(not(unix))]
    {
        // No portable check: keep everything rather than remove a running writer's work.
        true
    }
}

/// Settles what the journal of the data directory `root` says dead processes left: each named
/// temporary file or incomplete folder is removed, a parked previous version is put back where
/// nothing took its place (else removed), and the entry goes. Nothing an entry does not name is
/// touched. Entries of running processes are theirs and left alone.
///
/// Commands started together all run this: a path or entry that vanishes between being listed and
/// being handled (another command settled it first) is no error. Where a leftover can not be
/// removed for lack of permission (a read-only data directory), it is reported as
/// [`Recovered::Left`] and the command goes on. A missing `root` or journal has nothing to recover.
///
/// Process ids are those of this machine: a data directory shared by several machines (or PID
/// namespaces) must not run commands on two of them at once.
pub fn recover(root: &Path) -> Result<Vec<Recovered>> {
    let gone = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
    let io_err = |path: &Path, source: io::Error| Error::Io {
        path: path.to_owned(),
        source,
    };
    let journal = root.join(JOURNAL_DIR);
    // The journal is read only where it is a real folder of this data directory: a symbolic link
    // (to another data directory's journal, or anywhere) is never followed.
    for dir in [root.join(".lexbench"), journal.clone()] {
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(m) => {
                let what = if m.file_type().is_symlink() {
                    match fs::read_link(&dir) {
                        Ok(to) => format!("a symbolic link to {}", to.display()),
                        Err(_) => "a symbolic link".to_owned(),
                    }
                } else {
                    "not a folder".to_owned()
                };
                return Ok(vec![Recovered::Unread {
                    path: dir,
                    why: format!("{what}, not a folder of this data directory; nothing in it was acted on"),
                }]);
            }
            Err(e) if gone(&e) => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&dir, e)),
        }
    }
    let rd = match fs::read_dir(&journal) {
        Ok(rd) => rd,
        Err(e) if gone(&e) => return Ok(Vec::new()),
        Err(e) => return Err(io_err(&journal, e)),
    };
    let mut files = Vec::new();
    for e in rd {
        let e = e.map_err(|e| io_err(&journal, e))?;
        files.push(e.file_name().to_string_lossy().into_owned());
    }
    files.sort();
    let mut done = Vec::new();
    for name in files {
        let entry_file = journal.join(&name);
        let Some(pid) = name.strip_suffix(".json").and_then(entry_pid) else {
            // Not an entry of ours (a journal holds nothing else): left alone.
            continue;
        };
        if process_alive(pid) {
            continue;
        }
        let text = match read_entry(&entry_file) {
            Ok(t) => t,
            Err(e) if gone(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                set_aside(&journal, &name);
                done.push(Recovered::Ignored {
                    entry: entry_file,
                    why: e.to_string(),
                });
                continue;
            }
            Err(e) => return Err(io_err(&entry_file, e)),
        };
        let outcome = match serde_json::from_str::<Entry>(&text) {
            // A torn entry: its process died writing it, before the temporary existed.
            Err(_) if !text.ends_with('\n') => Ok(None),
            Err(e) => Err(format!("not a journal entry ({e})")),
            Ok(entry) => settle(root, pid, &entry),
        };
        match outcome {
            Ok(Some(r)) => {
                let left = matches!(r, Recovered::Left { .. });
                done.push(r);
                if left {
                    continue;
                }
            }
            Ok(None) => {}
            Err(why) => {
                set_aside(&journal, &name);
                done.push(Recovered::Ignored {
                    entry: entry_file,
                    why,
                });
                continue;
            }
        }
        match fs::remove_file(&entry_file) {
            Ok(()) => {}
            Err(e) if gone(&e) => {}
            Err(e) if denied(&e) => {}
            Err(e) => return Err(io_err(&entry_file, e)),
        }
    }
    Ok(done)
}

/// The process id of a journal entry's name without its extension (`{pid}-{n}`).
fn entry_pid(stem: &str) -> Option<u32> {
    let (pid, n) = stem.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// The most an entry may hold: one JSON object of a kind, two paths and a few identities.
const MAX_ENTRY_BYTES: u64 = 64 * 1024;

/// An entry's text: only a regular file (never through a symbolic link, never a device or a FIFO)
/// of at most [`MAX_ENTRY_BYTES`]; anything else is `InvalidData`, saying what it is.
fn read_entry(file: &Path) -> io::Result<String> {
    let meta = fs::symlink_metadata(file)?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file (a journal entry is never followed or read from a device)",
        ));
    }
    if meta.len() > MAX_ENTRY_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} bytes, more than an entry ever holds ({MAX_ENTRY_BYTES})",
                meta.len()
            ),
        ));
    }
    let bytes = fs::read(file)?;
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Sets the entry `name` aside (`{name}.ignored`), so that it is reported once, not at every command.
fn set_aside(journal: &Path, name: &str) {
    let _ = fs::rename(journal.join(name), journal.join(format!("{name}.ignored")));
}

/// A permission or read-only file system error: a leftover that must wait for a writable moment.
fn denied(e: &io::Error) -> bool {
    const EROFS: i32 = 30;
    e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(EROFS)
}

/// A journal path as a path under `root`: only plain components (never `..`, never absolute).
fn under(root: &Path, rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel);
    let plain =
        !rel.is_empty() && !rel.contains('\\') && p.components().all(|c| matches!(c, Component::Normal(_)));
    plain.then(|| root.join(p))
}

/// Settles one entry of the dead process `pid`: `Ok(None)` when its temporary is already gone,
/// `Err` when the entry names something that is not that process's temporary.
fn settle(root: &Path, pid: u32, entry: &Entry) -> std::result::Result<Option<Recovered>, String> {
    let Some(path) = under(root, &entry.path) else {
        return Err(format!(
            "{:?} is not a path inside the data directory",
            entry.path
        ));
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parsed = parse_name(&file_name);
    // The name carries the writer's token, and the entry the same one: nothing a stranger can
    // read off the data directory proves a path is a temporary.
    if let Some((_, p, token)) = &parsed
        && *p == pid
        && entry.token.as_deref() != Some(*token)
    {
        return Err(format!(
            "its token is not the one {:?} ends with (not written by this lexbench, or edited): left \
             in place, remove it yourself if it is a leftover",
            entry.path
        ));
    }
    let target = match (entry.kind, parsed) {
        (Kind::Tmp, Some((NameKind::Tmp, p, _))) if p == pid => None,
        (Kind::Partial, Some((NameKind::Partial, p, _))) if p == pid => None,
        (Kind::Old, Some((NameKind::Old(name), p, _))) if p == pid => {
            let Some(target) = entry.target.as_deref().and_then(|t| under(root, t)) else {
                return Err("an old version without the folder it belongs to".into());
            };
            if target.file_name().and_then(|n| n.to_str()) != Some(name) || target.parent() != path.parent() {
                return Err(format!(
                    "{} does not belong at {}",
                    entry.path,
                    entry.target.as_deref().unwrap_or_default()
                ));
            }
            Some(target)
        }
        _ => {
            return Err(format!(
                "{:?} is not the name of a {:?} temporary of process {pid}",
                entry.path, entry.kind
            ));
        }
    };
    // Every folder on the way from the data directory down is a real folder of it: a symbolic
    // link (`ext -> /elsewhere`) is never followed out.
    let mut on_the_way = root.to_owned();
    let parents: Vec<_> = Path::new(&entry.path).components().collect();
    for c in &parents[..parents.len().saturating_sub(1)] {
        on_the_way.push(c);
        match fs::symlink_metadata(&on_the_way) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                return Err(format!(
                    "{:?} passes through {}, which is not a folder of the data directory (a symbolic \
                     link?): not followed",
                    entry.path,
                    on_the_way.display()
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Ok(Some(left(&path, &e))),
        }
    }
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Ok(Some(left(&path, &e))),
    };
    // The folder must be the one the writer recorded: a name alone proves nothing (a copied data
    // directory, a crafted entry).
    let folder = path.parent().and_then(Identity::at);
    match (entry.folder, folder) {
        (Some(recorded), Some(here)) if recorded == here => {}
        (None, _) => {
            return Err(format!(
                "it does not record the folder of {} (not written by this lexbench): left in place, \
                 remove it yourself if it is a leftover",
                path.display()
            ));
        }
        _ => {
            return Err(format!(
                "{} is not in the folder its writer recorded (the data directory was copied or \
                 unpacked, or the entry comes from elsewhere): left in place, remove it yourself if \
                 it is a leftover",
                path.display()
            ));
        }
    }
    let right_type = match entry.kind {
        Kind::Tmp => meta.file_type().is_file(),
        Kind::Partial | Kind::Old => meta.file_type().is_dir(),
    };
    if !right_type {
        return Err(format!(
            "{} is not what a {:?} temporary is (a {}): left alone",
            path.display(),
            entry.kind,
            if meta.file_type().is_symlink() {
                "symbolic link"
            } else if meta.is_dir() {
                "folder"
            } else {
                "file"
            }
        ));
    }
    if let Some(to) = target
        && fs::symlink_metadata(&to).is_err()
    {
        return Ok(Some(match fs::rename(&path, &to) {
            Ok(()) => Recovered::Restored { from: path, to },
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => left(&path, &e),
        }));
    }
    let removed = if meta.is_dir() {
        fs::remove_dir_all(&path)
    } else {
        fs::remove_file(&path)
    };
    Ok(Some(match removed {
        Ok(()) => Recovered::Removed(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => left(&path, &e),
    }))
}

fn left(path: &Path, e: &io::Error) -> Recovered {
    Recovered::Left {
        path: path.to_owned(),
        why: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    //! Properties: a killed writer's temporaries are settled from the journal, and nothing the
    //! journal does not name is touched, whatever its name.
    use std::io::Write;

    use super::*;
    use crate::io::{write_atomic, write_dir_atomic};

    fn scratch(name: &str) -> PathBuf {
        let dir =
            crate::testing::scratch_root().join(format!("lexbench-journal-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The id of a process that has exited (a child started and waited for).
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn entry(kind: Kind, path: &str, target: Option<&str>) -> Entry {
        Entry {
            kind,
            path: path.into(),
            target: target.map(Into::into),
            folder: None,
            token: None,
        }
    }

    /// A token as a writer draws one ([`token`]), for leftovers of "dead processes" made here.
    const T: &str = "0123456789abcdef";

    fn journal_names(root: &Path) -> Vec<String> {
        match fs::read_dir(root.join(JOURNAL_DIR)) {
            Ok(_) => names(&root.join(JOURNAL_DIR)),
            Err(_) => Vec::new(),
        }
    }

    #[test]
    fn temporary_names_parse() {
        assert_eq!(
            parse_name(&format!(".ecthr.partial-42.{T}")),
            Some((NameKind::Partial, 42, T))
        );
        assert_eq!(
            parse_name(&format!(".ecthr-release.old-7.{T}")),
            Some((NameKind::Old("ecthr-release"), 7, T))
        );
        assert_eq!(
            parse_name(&format!(".bm25.trec.tmp.123.0.{T}")),
            Some((NameKind::Tmp, 123, T))
        );
        assert!(
            is_token(token()) && token() == token(),
            "one token per process, of its form"
        );
        for not in [
            "ecthr",
            ".git",
            ".partial-1",
            ".x.partial-",
            ".x.tmp.1",
            ".x.old-1a",
            "a.tmp.1.2",
            // Without a token, or with something else where it goes.
            ".ecthr.partial-42",
            ".ecthr-release.old-7",
            ".bm25.trec.tmp.123.0",
            ".x.old-7.0123456789ABCDEF",
            ".x.old-7.0123456789abcde",
        ] {
            assert_eq!(parse_name(not), None, "{not}");
        }
    }

    /// Issue 29, item 1: files that merely look like temporaries (a user's notes, a thesis, a draft,
    /// a photo folder, all with dead "pids") are never renamed or removed; the sweep used to match
    /// them by name anywhere in the tree.
    #[test]
    fn files_no_journal_entry_names_are_never_touched() {
        let root = scratch("users-files");
        let files = [
            "notes/.report.md.old-20231231",
            ".thesis.tex.old-20240101",
            "datasets/.draft.tmp.2024.1",
            "runs/.x.trec.tmp.7777777.0",
        ];
        for f in files {
            let p = root.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, "mine").unwrap();
        }
        fs::create_dir_all(root.join(".photos.partial-7777777")).unwrap();
        fs::write(root.join(".photos.partial-7777777/a.jpg"), "jpg").unwrap();
        // A journal entry of a dead process elsewhere does not widen the sweep.
        let pid = dead_pid();
        write_entry(
            &root,
            pid,
            0,
            &entry(Kind::Tmp, &format!("runs/.bm25.trec.tmp.{pid}.0.{T}"), None),
        )
        .unwrap();
        let done = recover(&root).unwrap();
        assert!(done.is_empty(), "{done:?}");
        for f in files {
            assert_eq!(fs::read_to_string(root.join(f)).unwrap(), "mine", "{f}");
        }
        assert!(!root.join("notes/report.md").exists());
        assert!(root.join(".photos.partial-7777777/a.jpg").is_file());
        assert!(journal_names(&root).is_empty(), "the settled entry goes");
    }

    /// An entry naming what is not its process's temporary (a path out of the data directory, a
    /// user's file, another pid's name) is set aside and the path left alone.
    #[test]
    fn entries_that_name_no_temporary_of_theirs_are_ignored() {
        let root = scratch("forged");
        let outside = scratch("forged-outside");
        fs::write(outside.join("precious"), "keep").unwrap();
        fs::write(root.join("report.md"), "keep").unwrap();
        let pid = dead_pid();
        let other = pid.wrapping_add(1);
        fs::write(root.join(format!(".x.tmp.{other}.0.{T}")), "keep").unwrap();
        let bad = [
            entry(Kind::Tmp, "../forged-outside/precious", None),
            entry(Kind::Tmp, &outside.join("precious").display().to_string(), None),
            entry(Kind::Tmp, "report.md", None),
            entry(Kind::Tmp, &format!(".x.tmp.{other}.0.{T}"), None),
            entry(Kind::Old, &format!(".x.old-{pid}.{T}"), Some("y")),
        ];
        for (n, e) in bad.iter().enumerate() {
            write_entry(&root, pid, n as u64, e).unwrap();
        }
        fs::write(root.join(format!(".x.old-{pid}.{T}")), "keep").unwrap();
        let done = recover(&root).unwrap();
        assert_eq!(done.len(), bad.len(), "{done:?}");
        assert!(
            done.iter().all(|r| matches!(r, Recovered::Ignored { .. })),
            "{done:?}"
        );
        assert_eq!(fs::read_to_string(outside.join("precious")).unwrap(), "keep");
        assert_eq!(fs::read_to_string(root.join("report.md")).unwrap(), "keep");
        assert!(root.join(format!(".x.tmp.{other}.0.{T}")).exists());
        assert!(root.join(format!(".x.old-{pid}.{T}")).exists());
        assert!(recover(&root).unwrap().is_empty(), "reported once");
    }

    #[test]
    fn a_swap_interrupted_between_its_renames_is_undone() {
        // The fallback swap killed after parking the old version and before moving the new one in:
        // no `ds`, a complete `.ds.old-PID` and a complete `.ds.partial-PID`, both journaled.
        let root = scratch("interrupted");
        let pid = dead_pid();
        let data = root.join("datasets");
        write_atomic(&data.join(format!(".ds.old-{pid}.{T}")).join("a"), |w| {
            w.write_all(b"old")
        })
        .unwrap();
        write_atomic(&data.join(format!(".ds.partial-{pid}.{T}")).join("a"), |w| {
            w.write_all(b"new")
        })
        .unwrap();
        write_atomic(
            &root.join("runs/x").join(format!(".bm25.trec.tmp.{pid}.3.{T}")),
            |w| w.write_all(b"half"),
        )
        .unwrap();
        let entries = [
            entry(Kind::Partial, &format!("datasets/.ds.partial-{pid}.{T}"), None),
            entry(
                Kind::Old,
                &format!("datasets/.ds.old-{pid}.{T}"),
                Some("datasets/ds"),
            ),
            entry(Kind::Tmp, &format!("runs/x/.bm25.trec.tmp.{pid}.3.{T}"), None),
        ];
        for (n, e) in entries.iter().enumerate() {
            write_entry(&root, pid, n as u64, e).unwrap();
        }
        let done = recover(&root).unwrap();
        assert_eq!(done.len(), 3, "{done:?}");
        assert_eq!(fs::read_to_string(data.join("ds/a")).unwrap(), "old");
        assert_eq!(names(&data), vec!["ds"]);
        assert!(names(&root.join("runs/x")).is_empty());
        assert!(journal_names(&root).is_empty());
        assert!(recover(&root).unwrap().is_empty(), "nothing left the second time");
    }

    #[test]
    fn superseded_versions_are_removed_and_running_writers_left_alone() {
        let root = scratch("superseded");
        let dead = dead_pid();
        let live = std::process::id();
        write_atomic(&root.join("ds/a"), |w| w.write_all(b"current")).unwrap();
        for leftover in [format!(".ds.old-{dead}.{T}"), format!(".ds.partial-{dead}.{T}")] {
            write_atomic(&root.join(&leftover).join("a"), |w| w.write_all(b"stale")).unwrap();
        }
        write_entry(
            &root,
            dead,
            0,
            &entry(Kind::Old, &format!(".ds.old-{dead}.{T}"), Some("ds")),
        )
        .unwrap();
        write_entry(
            &root,
            dead,
            1,
            &entry(Kind::Partial, &format!(".ds.partial-{dead}.{T}"), None),
        )
        .unwrap();
        // A concurrent build of this very process (or another running one) is not a leftover.
        fs::create_dir_all(root.join(format!(".ds.partial-{live}.{T}"))).unwrap();
        write_entry(
            &root,
            live,
            0,
            &entry(Kind::Partial, &format!(".ds.partial-{live}.{T}"), None),
        )
        .unwrap();
        let done = recover(&root).unwrap();
        assert_eq!(done.len(), 2, "{done:?}");
        assert_eq!(fs::read_to_string(root.join("ds/a")).unwrap(), "current");
        assert_eq!(
            names(&root),
            vec![format!(".ds.partial-{live}.{T}"), ".lexbench".into(), "ds".into()]
        );
        assert_eq!(journal_names(&root), vec![format!("{live}-0.json")]);
        assert!(recover(&root.join("missing")).unwrap().is_empty());
    }

    /// Issue 54, item 1: an entry whose path passes through a symbolic link (`ext -> /elsewhere`)
    /// is never followed out of the data directory, for every kind of temporary, even when it
    /// records the identity of what is at the far end.
    #[test]
    fn a_symbolic_link_on_the_way_is_never_followed() {
        let root = scratch("link-out");
        let elsewhere = scratch("link-out-elsewhere");
        std::os::unix::fs::symlink(&elsewhere, root.join("ext")).unwrap();
        let pid = dead_pid();
        let partial = format!(".photos.partial-{pid}.{T}");
        fs::create_dir_all(elsewhere.join(&partial)).unwrap();
        fs::write(elsewhere.join(&partial).join("a.jpg"), "jpg").unwrap();
        let tmp = format!(".x.tmp.{pid}.0.{T}");
        fs::write(elsewhere.join(&tmp), "mine").unwrap();
        let old = format!(".y.old-{pid}.{T}");
        fs::create_dir_all(elsewhere.join(&old)).unwrap();
        let entries = [
            entry(Kind::Partial, &format!("ext/{partial}"), None),
            entry(Kind::Tmp, &format!("ext/{tmp}"), None),
            entry(Kind::Old, &format!("ext/{old}"), Some("ext/y")),
        ];
        for (n, e) in entries.iter().enumerate() {
            write_entry(&root, pid, n as u64, e).unwrap();
        }
        let done = recover(&root).unwrap();
        assert_eq!(done.len(), 3, "{done:?}");
        assert!(
            done.iter().all(|r| matches!(r, Recovered::Ignored { .. })),
            "{done:?}"
        );
        assert!(elsewhere.join(&partial).join("a.jpg").is_file());
        assert!(elsewhere.join(&tmp).is_file());
        assert!(elsewhere.join(&old).is_dir());
        assert!(!elsewhere.join("y").exists(), "nothing renamed out there");
        // The leftover itself a symbolic link: the link is no temporary of ours either.
        let link = format!(".z.partial-{pid}.{T}");
        std::os::unix::fs::symlink(elsewhere.join(&partial), root.join(&link)).unwrap();
        write_entry(&root, pid, 9, &entry(Kind::Partial, &link, None)).unwrap();
        let done = recover(&root).unwrap();
        assert!(matches!(done.as_slice(), [Recovered::Ignored { .. }]), "{done:?}");
        assert!(elsewhere.join(&partial).join("a.jpg").is_file());
        assert!(fs::symlink_metadata(root.join(&link)).is_ok());
    }

    /// Issue 54, item 1: a crafted entry of a "process" that never ran here, naming a user's file
    /// in the form of a temporary (`notes/.thesis.tex.old-20240101`), proves nothing: the file is
    /// neither renamed nor removed, and the entry is reported.
    #[test]
    fn a_crafted_entry_naming_a_users_file_is_ignored() {
        let root = scratch("crafted");
        let notes = root.join("notes");
        fs::create_dir_all(&notes).unwrap();
        fs::write(notes.join(".thesis.tex.old-20240101"), "chapter 1").unwrap();
        fs::write(notes.join(".draft.tmp.20240101.0"), "draft").unwrap();
        let journal = root.join(JOURNAL_DIR);
        fs::create_dir_all(&journal).unwrap();
        fs::write(
            journal.join("20240101-0.json"),
            r#"{"kind":"old","path":"notes/.thesis.tex.old-20240101","target":"notes/thesis.tex"}"#
                .to_owned()
                + "\n",
        )
        .unwrap();
        fs::write(
            journal.join("20240101-1.json"),
            r#"{"kind":"tmp","path":"notes/.draft.tmp.20240101.0"}"#.to_owned() + "\n",
        )
        .unwrap();
        let done = recover(&root).unwrap();
        assert_eq!(done.len(), 2, "{done:?}");
        assert!(
            done.iter().all(|r| matches!(r, Recovered::Ignored { .. })),
            "{done:?}"
        );
        assert!(
            done[0].to_string().contains("notes/.thesis.tex.old-20240101"),
            "{}",
            done[0]
        );
        assert_eq!(
            fs::read_to_string(notes.join(".thesis.tex.old-20240101")).unwrap(),
            "chapter 1"
        );
        assert_eq!(
            fs::read_to_string(notes.join(".draft.tmp.20240101.0")).unwrap(),
            "draft"
        );
        assert!(!notes.join("thesis.tex").exists());
        assert!(recover(&root).unwrap().is_empty(), "reported once");
    }

    /// Issue 68, item 13: a forged entry that carries the real device and inode of the user's folder
    /// (anyone can read them with `stat`) and a token of its own still names no temporary: the
    /// user's `.thesis.tex.old-20240101` has no writer's token in its name. An entry whose token
    /// is not the one its temporary's name ends with is refused too.
    #[test]
    fn a_forged_entry_with_the_real_folder_identity_restores_nothing() {
        let root = scratch("forged-identity");
        let notes = root.join("notes");
        fs::create_dir_all(notes.join(".thesis.tex.old-20240101")).unwrap();
        fs::write(notes.join(".thesis.tex.old-20240101/ch1.tex"), "chapter 1").unwrap();
        let folder = Identity::at(&notes);
        assert!(folder.is_some());
        let forged = |path: &str, token: Option<&str>| Entry {
            kind: Kind::Old,
            path: path.into(),
            target: Some("notes/thesis.tex".into()),
            folder,
            token: token.map(Into::into),
        };
        write_entry(
            &root,
            20_240_101,
            0,
            &forged("notes/.thesis.tex.old-20240101", Some(T)),
        )
        .unwrap();
        // A real-looking leftover of a dead process, but the entry's token is another one.
        let pid = dead_pid();
        let parked = format!(".thesis.tex.old-{pid}.{T}");
        fs::create_dir_all(notes.join(&parked)).unwrap();
        write_entry(
            &root,
            pid,
            0,
            &forged(&format!("notes/{parked}"), Some("fedcba9876543210")),
        )
        .unwrap();
        let done = recover(&root).unwrap();
        assert_eq!(done.len(), 2, "{done:?}");
        assert!(
            done.iter().all(|r| matches!(r, Recovered::Ignored { .. })),
            "{done:?}"
        );
        assert!(
            done.iter().any(|r| r.to_string().contains("its token is not")),
            "{done:?}"
        );
        assert!(!notes.join("thesis.tex").exists(), "nothing restored");
        assert_eq!(
            fs::read_to_string(notes.join(".thesis.tex.old-20240101/ch1.tex")).unwrap(),
            "chapter 1"
        );
        assert!(notes.join(&parked).is_dir());
        // The same leftover with its own token in the entry is a leftover: put back.
        write_entry(&root, pid, 1, &forged(&format!("notes/{parked}"), Some(T))).unwrap();
        let done = recover(&root).unwrap();
        assert!(
            matches!(done.as_slice(), [Recovered::Restored { .. }]),
            "{done:?}"
        );
        assert!(notes.join("thesis.tex").is_dir());
    }

    /// Issue 54, item 1: a journal folder that is a symbolic link to another data directory's
    /// journal is not read: the other directory's entries stay for its own commands.
    #[test]
    fn a_journal_linked_to_another_data_directorys_is_not_read() {
        let mine = scratch("journal-link-mine");
        let theirs = scratch("journal-link-theirs");
        let pid = dead_pid();
        let tmp = format!("runs/.a.trec.tmp.{pid}.0.{T}");
        write_atomic(&theirs.join(&tmp), |w| w.write_all(b"half")).unwrap();
        write_entry(&theirs, pid, 0, &entry(Kind::Tmp, &tmp, None)).unwrap();
        // The same relative path exists in mine too: the entry must not be taken as mine.
        write_atomic(&mine.join(&tmp), |w| w.write_all(b"mine")).unwrap();
        fs::create_dir_all(mine.join(".lexbench")).unwrap();
        std::os::unix::fs::symlink(theirs.join(JOURNAL_DIR), mine.join(JOURNAL_DIR)).unwrap();
        let done = recover(&mine).unwrap();
        assert!(
            !done
                .iter()
                .any(|r| matches!(r, Recovered::Removed(_) | Recovered::Restored { .. })),
            "{done:?}"
        );
        assert_eq!(fs::read_to_string(mine.join(&tmp)).unwrap(), "mine");
        assert_eq!(
            journal_names(&theirs),
            vec![format!("{pid}-0.json")],
            "theirs kept"
        );
        let done = recover(&theirs).unwrap();
        assert!(matches!(done.as_slice(), [Recovered::Removed(_)]), "{done:?}");
    }

    /// Issue 54, item 1: a data directory copied with its journal (another machine's, or a backup)
    /// holds entries whose leftovers are copies, not what the writer made: reported, not removed;
    /// the original directory still settles its own.
    #[test]
    fn a_copied_data_directorys_leftovers_are_reported_not_removed() {
        let root = scratch("copied-from");
        let copy = scratch("copied-to");
        let pid = dead_pid();
        let partial = format!("datasets/.d.partial-{pid}.{T}");
        write_atomic(&root.join(&partial).join("a"), |w| w.write_all(b"half")).unwrap();
        write_entry(&root, pid, 0, &entry(Kind::Partial, &partial, None)).unwrap();
        let st = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", root.display()))
            .arg(&copy)
            .status()
            .unwrap();
        assert!(st.success());
        let done = recover(&copy).unwrap();
        assert!(matches!(done.as_slice(), [Recovered::Ignored { .. }]), "{done:?}");
        assert!(
            copy.join(&partial).join("a").is_file(),
            "the copy's leftover is left"
        );
        let done = recover(&root).unwrap();
        assert!(matches!(done.as_slice(), [Recovered::Removed(_)]), "{done:?}");
    }

    /// Issue 54, item 1: an entry that is a symbolic link to a device is not read (it would never
    /// end), and an oversized one is refused from its size.
    #[test]
    fn entries_that_are_not_small_regular_files_are_not_read() {
        let root = scratch("entry-device");
        let journal = root.join(JOURNAL_DIR);
        fs::create_dir_all(&journal).unwrap();
        let pid = dead_pid();
        std::os::unix::fs::symlink("/dev/zero", journal.join(format!("{pid}-0.json"))).unwrap();
        fs::write(journal.join(format!("{pid}-1.json")), vec![b' '; 1 << 20]).unwrap();
        let done = recover(&root).unwrap();
        assert_eq!(done.len(), 2, "{done:?}");
        assert!(
            done.iter().all(|r| matches!(r, Recovered::Ignored { .. })),
            "{done:?}"
        );
    }

    /// Commands started together after a kill all settle the same leftovers: the one that finds a
    /// leftover already gone must not fail.
    #[test]
    fn leftovers_settled_at_once_by_several_commands() {
        let root = scratch("at-once");
        let pid = dead_pid();
        for n in 0..40 {
            let tmp = format!("entries/.e{n}.json.tmp.{pid}.0.{T}");
            write_atomic(&root.join(&tmp), |w| w.write_all(b"half")).unwrap();
            write_entry(&root, pid, 2 * n, &entry(Kind::Tmp, &tmp, None)).unwrap();
            let partial = format!("datasets/.d{n}.partial-{pid}.{T}");
            write_atomic(&root.join(&partial).join("a"), |w| w.write_all(b"half")).unwrap();
            write_entry(&root, pid, 2 * n + 1, &entry(Kind::Partial, &partial, None)).unwrap();
        }
        let settled: Vec<usize> = std::thread::scope(|s| {
            let all: Vec<_> = (0..8)
                .map(|_| s.spawn(|| recover(&root).map(|done| done.len())))
                .collect();
            all.into_iter().map(|t| t.join().unwrap().unwrap()).collect()
        });
        assert!(settled.iter().sum::<usize>() >= 80, "{settled:?}");
        assert!(names(&root.join("entries")).is_empty());
        assert!(names(&root.join("datasets")).is_empty());
        assert!(journal_names(&root).is_empty());
    }

    /// Writes under a registered data directory journal their temporaries while they exist and leave
    /// no entry behind when they finish, succeeded or failed.
    #[test]
    fn finished_writes_leave_no_entry() {
        let root = scratch("registered");
        register(&root);
        let seen = std::cell::RefCell::new(Vec::new());
        write_atomic(&root.join("runs/a.trec"), |w| {
            seen.borrow_mut().extend(journal_names(&root));
            w.write_all(b"x")
        })
        .unwrap();
        assert_eq!(seen.borrow().len(), 1, "journaled while written");
        let failed = write_atomic(&root.join("runs/b.trec"), |_| Err(std::io::Error::other("no")));
        assert!(failed.is_err());
        write_dir_atomic::<_, Error, _>(&root.join("datasets/d"), |t| {
            write_atomic(&t.join("a"), |w| w.write_all(b"1"))
        })
        .unwrap();
        // Replace it: the exchange (or fallback) parks the old version under a journaled name.
        write_dir_atomic::<_, Error, _>(&root.join("datasets/d"), |t| {
            write_atomic(&t.join("b"), |w| w.write_all(b"2"))
        })
        .unwrap();
        assert!(journal_names(&root).is_empty(), "{:?}", journal_names(&root));
        assert_eq!(names(&root.join("runs")), vec!["a.trec"]);
        assert_eq!(names(&root.join("datasets")), vec!["d"]);
    }

    /// A folder removed by `remove_dir_journaled` and interrupted before it is gone (the kill that
    /// `kills::killed_training_…` once caught leaving `checkpoints/.removing-step-4`) leaves only a
    /// hidden folder that a journal entry of this process names as a `Partial`, which `recover`
    /// settles once the process is dead; uninterrupted, it leaves neither folder nor entry.
    #[test]
    fn an_interrupted_folder_removal_leaves_a_journaled_partial() {
        let root = scratch("removal");
        register(&root);
        let ckpt = root.join("models/m/checkpoints");
        for step in ["step-4", "step-6"] {
            write_atomic(&ckpt.join(step).join("state.json"), |w| w.write_all(b"{}")).unwrap();
        }
        let killed = crate::io::remove_dir_journaled_with(&ckpt.join("step-4"), |_| {
            Err(std::io::Error::other("killed"))
        });
        assert!(killed.is_err());
        let pid = std::process::id();
        let hidden = format!(".step-4.partial-{pid}.{}", token());
        assert_eq!(names(&ckpt), vec![hidden.clone(), "step-6".to_owned()]);
        let journal = root.join(JOURNAL_DIR);
        let entries: Vec<Entry> = names(&journal)
            .iter()
            .map(|n| serde_json::from_slice(&fs::read(journal.join(n)).unwrap()).unwrap())
            .collect();
        let want = format!("models/m/checkpoints/{hidden}");
        let mut want = entry(Kind::Partial, &want, None);
        want.folder = Identity::at(&ckpt);
        want.token = Some(token().to_owned());
        assert_eq!(entries, vec![want], "the entry records the folder it is made in");
        assert_eq!(settle(&root, pid, &entries[0]).unwrap().map(|_| ()), Some(()));
        assert_eq!(names(&ckpt), vec!["step-6"]);
        fs::remove_dir_all(&journal).unwrap();
        crate::io::remove_dir_journaled(&ckpt.join("step-6")).unwrap();
        crate::io::remove_dir_journaled(&ckpt.join("step-6")).unwrap();
        assert!(names(&ckpt).is_empty());
        assert!(journal_names(&root).is_empty());
    }

    /// A leftover in a data directory that can not be written (read-only) is left for later with a
    /// note, and its entry kept: the command still runs (issue 29, item 18). The folder is made
    /// unwritable with `chattr +i` (which binds root too, as tests run here) or, for another user,
    /// with its permission bits.
    #[test]
    fn a_leftover_that_can_not_be_removed_is_left_for_later() {
        let root = scratch("read-only");
        let pid = dead_pid();
        let tmp = format!("runs/.a.trec.tmp.{pid}.0.{T}");
        write_atomic(&root.join(&tmp), |w| w.write_all(b"half")).unwrap();
        write_entry(&root, pid, 0, &entry(Kind::Tmp, &tmp, None)).unwrap();
        let runs = root.join("runs");
        let lock = |on: bool| {
            if rustix::process::geteuid().is_root() {
                let st = std::process::Command::new("chattr")
                    .arg(if on { "+i" } else { "-i" })
                    .arg(&runs)
                    .status()
                    .expect("chattr (e2fsprogs) is needed to make a folder unwritable for root");
                assert!(st.success(), "chattr failed on {}", runs.display());
            } else {
                use std::os::unix::fs::PermissionsExt;
                let mode = if on { 0o555 } else { 0o755 };
                fs::set_permissions(&runs, fs::Permissions::from_mode(mode)).unwrap();
            }
        };
        lock(true);
        let done = recover(&root);
        lock(false);
        let done = done.unwrap();
        assert!(matches!(done.as_slice(), [Recovered::Left { .. }]), "{done:?}");
        assert!(root.join(&tmp).exists());
        assert_eq!(journal_names(&root).len(), 1, "kept for a later command");
        let done = recover(&root).unwrap();
        assert!(matches!(done.as_slice(), [Recovered::Removed(_)]), "{done:?}");
        assert!(journal_names(&root).is_empty());
    }
}
