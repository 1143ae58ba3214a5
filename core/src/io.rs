//! Files at the edges: atomic writes and JSON Lines.
//!
//! Every writer in lexbench goes through [`write_atomic`]: the content is written to a temporary file
//! in the destination's directory, flushed to disk, and renamed over the destination. A reader never
//! sees a half-written file, and a failed write leaves the previous version in place.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, LineError, Result};

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// A temporary name beside `path`, unique within this process and across processes.
fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_owned());
    path.with_file_name(format!(".{name}.tmp.{}.{n}", std::process::id()))
}

/// Writes a file atomically: `fill` writes into a buffered temporary file beside `path`, which is
/// synced and renamed over `path` only if `fill` succeeds. Parent directories are created.
pub fn write_atomic<F>(path: &Path, fill: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    let tmp = temp_path(path);
    let result = (|| {
        let file = File::create(&tmp)?;
        let mut w = BufWriter::new(file);
        fill(&mut w)?;
        let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        // Best effort: the temporary file is ours and useless now.
        let _ = fs::remove_file(&tmp);
        return Err(Error::Io {
            path: path.to_owned(),
            source: e,
        });
    }
    Ok(())
}

/// Writes `value` as pretty-printed JSON plus a newline, atomically.
pub fn write_json_pretty<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|source| Error::Serialise {
        path: path.to_owned(),
        source,
    })?;
    write_atomic(path, |w| {
        w.write_all(text.as_bytes())?;
        w.write_all(b"\n")
    })
}

/// The name of the temporary folder a process builds `name` in: `.{name}.partial-{pid}`.
fn partial_name(name: &str) -> String {
    format!(".{name}.partial-{}", std::process::id())
}

/// The name a previous version of `name` has while the fallback swap runs: `.{name}.old-{pid}`.
fn old_name(name: &str) -> String {
    format!(".{name}.old-{}", std::process::id())
}

/// Writes a whole directory atomically: `fill` writes into a fresh temporary directory
/// `.{name}.partial-{pid}` beside `dir`; only if it succeeds is it swapped in for `dir`. On failure
/// the temporary directory is removed and `dir` is untouched.
///
/// The swap leaves the old or the new complete directory under `dir` at every instant:
/// - on Linux it is one `renameat2(RENAME_EXCHANGE)`: the new directory takes `dir`'s name and the old
///   one takes the temporary name in a single atomic step; the old one is then removed;
/// - where exchange is not supported (other systems, file systems without it) the old directory is
///   renamed to `.{name}.old-{pid}` and the new one into place; a process killed between the two
///   renames leaves no `dir`, and [`recover_leftovers`] (run when any command opens the data
///   directory) renames the old one back.
///
/// A process killed at any other moment leaves at most a hidden leftover that [`recover_leftovers`]
/// removes.
pub fn write_dir_atomic<T, E, F>(dir: &Path, fill: F) -> std::result::Result<T, E>
where
    F: FnOnce(&Path) -> std::result::Result<T, E>,
    E: From<Error>,
{
    // `file_name` is `None` for paths ending in `..`: such a path names no folder to replace.
    let Some(name) = dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Err(Error::Io {
            path: dir.to_owned(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a folder name that can be replaced",
            ),
        }
        .into());
    };
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io_err(parent))?;
    let tmp = parent.join(partial_name(&name));
    if fs::symlink_metadata(&tmp).is_ok() {
        fs::remove_dir_all(&tmp).map_err(io_err(&tmp))?;
    }
    fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
    let value = match fill(&tmp) {
        Ok(v) => v,
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if let Err(e) = swap_in(&tmp, dir, &parent.join(old_name(&name)), exchange) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e.into());
    }
    Ok(value)
}

/// Puts the complete directory `tmp` in the place of `dir` with `exchange`, or, where it is not
/// supported, with two renames through `old`, the fallback's parking name.
fn swap_in(
    tmp: &Path,
    dir: &Path,
    old: &Path,
    exchange: impl Fn(&Path, &Path) -> io::Result<()>,
) -> Result<()> {
    if fs::symlink_metadata(dir).is_err() {
        // Nothing to replace: one rename (it fails, rather than merging, if `dir` appears meanwhile).
        return fs::rename(tmp, dir).map_err(io_err(dir));
    }
    match exchange(tmp, dir) {
        Ok(()) => {
            // `tmp` now holds the previous version. Removing it is housekeeping: if it fails (or the
            // process dies now) the new version is already in place and the leftover is swept later.
            let _ = fs::remove_dir_all(tmp);
            return Ok(());
        }
        Err(e) if exchange_unsupported(&e) => {}
        Err(e) => return Err(io_err(dir)(e)),
    }
    if fs::symlink_metadata(old).is_ok() {
        fs::remove_dir_all(old).map_err(io_err(old))?;
    }
    fs::rename(dir, old).map_err(io_err(dir))?;
    if let Err(e) = fs::rename(tmp, dir) {
        // Put the previous version back; if even that fails, recovery will.
        let _ = fs::rename(old, dir);
        return Err(io_err(dir)(e));
    }
    let _ = fs::remove_dir_all(old);
    Ok(())
}

/// Atomically exchanges two paths (both must exist).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
}

/// Atomically exchanges two paths: not available here, so the caller falls back.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exchange(_a: &Path, _b: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Does this error mean "the kernel or file system can not exchange", as opposed to a real failure?
fn exchange_unsupported(e: &io::Error) -> bool {
    // EINVAL: the file system does not support RENAME_EXCHANGE; ENOSYS: kernel older than 3.15.
    const EINVAL: i32 = 22;
    const ENOSYS: i32 = 38;
    e.kind() == io::ErrorKind::Unsupported || matches!(e.raw_os_error(), Some(EINVAL | ENOSYS))
}

/// One leftover of an interrupted write that [`recover_leftovers`] dealt with.
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
        }
    }
}

/// A leftover's kind, parsed from its name.
#[derive(Debug, PartialEq, Eq)]
enum LeftoverKind<'a> {
    /// `.{name}.partial-{pid}`: a directory being built (or, after an exchange, the old version).
    Partial,
    /// `.{name}.old-{pid}`: a complete previous version of `name`, parked by the fallback swap.
    Old(&'a str),
    /// `.{name}.tmp.{pid}.{n}`: a file being written by [`write_atomic`].
    Tmp,
}

/// Parses a leftover's file name into its kind and the id of the process that made it.
fn parse_leftover(file_name: &str) -> Option<(LeftoverKind<'_>, u32)> {
    let rest = file_name.strip_prefix('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((name, pid)) = rest.rsplit_once(".partial-")
        && !name.is_empty()
        && digits(pid)
    {
        return Some((LeftoverKind::Partial, pid.parse().ok()?));
    }
    if let Some((name, pid)) = rest.rsplit_once(".old-")
        && !name.is_empty()
        && digits(pid)
    {
        return Some((LeftoverKind::Old(name), pid.parse().ok()?));
    }
    let (head, n) = rest.rsplit_once('.')?;
    let (name, pid) = head.rsplit_once(".tmp.")?;
    (!name.is_empty() && digits(pid) && digits(n)).then_some(())?;
    Some((LeftoverKind::Tmp, pid.parse().ok()?))
}

/// Is the process `pid` (possibly) still running? Leftovers of running processes are theirs.
fn process_alive(pid: u32) -> bool {
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

/// Finds and settles, under `root` (recursively, not following links), what interrupted atomic writes
/// of dead processes left behind: an old version parked by [`write_dir_atomic`]'s fallback swap whose
/// folder is missing is renamed back; incomplete `.partial-` folders, superseded `.old-` folders and
/// `.tmp.` files are removed. Leftovers of processes still running are left alone (they are theirs).
/// A missing `root` has nothing to recover.
///
/// Commands started together all run this: a path that vanishes between being listed and being
/// handled (another command settled that leftover first, or a writer swapped that folder away) is
/// no error.
///
/// Process ids are those of this machine: a data directory shared by several machines (or PID
/// namespaces) must not run commands on two of them at once.
pub fn recover_leftovers(root: &Path) -> Result<Vec<Recovered>> {
    let gone = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
    let mut done = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if gone(&e) => continue,
            Err(e) => return Err(io_err(&dir)(e)),
        };
        let mut entries = Vec::new();
        for e in rd {
            let e = e.map_err(io_err(&dir))?;
            let ty = match e.file_type() {
                Ok(ty) => ty,
                Err(err) if gone(&err) => continue,
                Err(err) => return Err(io_err(&e.path())(err)),
            };
            entries.push((e.file_name(), ty));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (os_name, ty) in entries {
            let path = dir.join(&os_name);
            let file_name = os_name.to_string_lossy();
            match parse_leftover(&file_name) {
                Some((kind, pid)) if !process_alive(pid) => {
                    let target = match kind {
                        LeftoverKind::Old(name) => Some(dir.join(name)),
                        _ => None,
                    };
                    match target {
                        Some(to) if fs::symlink_metadata(&to).is_err() => match fs::rename(&path, &to) {
                            Ok(()) => done.push(Recovered::Restored { from: path, to }),
                            Err(e) if gone(&e) => {}
                            Err(e) => return Err(io_err(&path)(e)),
                        },
                        _ => {
                            let removed = if ty.is_dir() {
                                fs::remove_dir_all(&path)
                            } else {
                                fs::remove_file(&path)
                            };
                            match removed {
                                Ok(()) => done.push(Recovered::Removed(path)),
                                Err(e) if gone(&e) => {}
                                Err(e) => return Err(io_err(&path)(e)),
                            }
                        }
                    }
                }
                // Not a leftover, or a running process's: descend into ordinary folders only
                // (never into hidden ones, which are not lexbench's).
                Some(_) => {}
                None if ty.is_dir() && !file_name.starts_with('.') => stack.push(path),
                None => {}
            }
        }
    }
    Ok(done)
}

/// Opens `path` for buffered reading.
pub(crate) fn open_reader(path: &Path) -> Result<BufReader<File>> {
    let f = File::open(path).map_err(io_err(path))?;
    Ok(BufReader::with_capacity(1 << 16, f))
}

/// An exclusive advisory lock on a file (`flock`), held until dropped: for work that two processes
/// must not do at once (one model submission run twice). Another process's attempt fails at once
/// instead of waiting. On systems without `flock` the lock is always granted.
#[derive(Debug)]
pub struct FileLock {
    path: PathBuf,
    #[allow(dead_code)] // held for its lock
    file: File,
}

impl FileLock {
    /// Takes the lock on `path` (created when missing, its folder too) without waiting: `None` when
    /// another process holds it. A lock file removed by its last holder ([`FileLock::remove`]) while
    /// this call opened it is noticed (the path no longer names the locked file) and the lock is
    /// taken again on the new file.
    pub fn try_exclusive(path: &Path) -> Result<Option<Self>> {
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?;
        }
        loop {
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(io)?;
            #[cfg(unix)]
            {
                use rustix::fs::{FlockOperation, flock};
                match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                    Ok(()) => {}
                    Err(e) if e == rustix::io::Errno::WOULDBLOCK => return Ok(None),
                    Err(e) => return Err(io(e.into())),
                }
                use std::os::unix::fs::MetadataExt;
                let held = file.metadata().map_err(io)?;
                match fs::metadata(path) {
                    Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => {}
                    // Removed (or replaced) by the holder we waited behind: lock the new file.
                    _ => continue,
                }
            }
            return Ok(Some(Self {
                path: path.to_owned(),
                file,
            }));
        }
    }

    /// Removes the lock file and releases the lock, reporting a failure to remove it (dropping the
    /// lock removes it too, silently). The file is removed while the lock is still held: a process
    /// that opened it just before takes its lock on a removed file, notices, and starts again.
    pub fn remove(self) -> Result<()> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(Error::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

impl Drop for FileLock {
    /// Removes the file (best effort: one left by a failure, or by a killed process, whose lock the
    /// kernel released, is harmless), then releases the lock as the file closes.
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The longest line [`read_jsonl`] reads: 64 MiB. A record of the project is a paragraph, a query,
/// a pool or an article (the longest real one is a few hundred KB); a longer line is an error at its
/// line, skipped unread.
pub const MAX_JSONL_LINE_BYTES: usize = 64 << 20;

/// Reads a JSON Lines file: one record per non-blank line. Errors name the file and line; a file with
/// no records is an error ([`Error::Empty`]). A leading byte-order mark is removed and bytes that are
/// not UTF-8 are an error at their line ([`crate::text::Lines`]); a line is at most
/// [`MAX_JSONL_LINE_BYTES`].
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut out = Vec::new();
    let mut lines = crate::text::Lines::open(path, Some(MAX_JSONL_LINE_BYTES))?;
    while let Some((line_no, line)) = lines.next_line()? {
        let at_line = |error| Error::Line {
            path: path.to_owned(),
            line: line_no,
            error,
        };
        let line = line.map_err(at_line)?;
        if line.trim().is_empty() {
            continue;
        }
        let rec = serde_json::from_str(line).map_err(|e| at_line(LineError::Json(e.to_string())))?;
        out.push(rec);
    }
    if out.is_empty() {
        return Err(Error::Empty {
            path: path.to_owned(),
        });
    }
    Ok(out)
}

/// Reads a JSON file of the project (a manifest, a split, a graph, a sidecar) into `T`: the text is
/// read with [`crate::text::read_text`] (byte-order mark removed, UTF-8 checked by line), and a
/// syntax or shape error is [`Error::Line`] naming the file and the line serde_json stopped at.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = crate::text::read_text(path)?;
    json_from_str(&text, path)
}

/// Parses `text`, read from `path`, as JSON; errors as in [`read_json`].
pub fn json_from_str<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Line {
        path: path.to_owned(),
        line: e.line().max(1),
        error: LineError::Json(e.to_string()),
    })
}

/// Writes records as JSON Lines, atomically.
pub fn write_jsonl<'a, T, I>(path: &Path, records: I) -> Result<()>
where
    T: Serialize + 'a,
    I: IntoIterator<Item = &'a T>,
{
    // Serialise first so a record that can not be written is reported as such, not as an I/O error.
    let mut buf = Vec::new();
    for r in records {
        serde_json::to_writer(&mut buf, r).map_err(|source| Error::Serialise {
            path: path.to_owned(),
            source,
        })?;
        buf.push(b'\n');
    }
    write_atomic(path, |w| w.write_all(&buf))
}

#[cfg(test)]
mod tests {
    //! Properties: atomic writes replace whole files or nothing; JSONL errors carry the line number;
    //! a file lock is exclusive until dropped or removed.
    use super::*;

    #[test]
    fn a_file_lock_is_exclusive_until_dropped_or_removed() {
        let dir = std::env::temp_dir().join(format!("lexbench-io-lock-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let p = dir.join("pending").join("k.lock");
        let held = FileLock::try_exclusive(&p).unwrap().expect("free");
        // flock locks belong to the open file: a second open, even in this process, is refused.
        assert!(FileLock::try_exclusive(&p).unwrap().is_none());
        drop(held);
        assert!(!p.exists(), "dropping removes the file");
        let again = FileLock::try_exclusive(&p).unwrap().expect("free after drop");
        assert!(FileLock::try_exclusive(&p).unwrap().is_none());
        again.remove().unwrap();
        assert!(!p.exists());
        let third = FileLock::try_exclusive(&p).unwrap().expect("a new file");
        assert!(p.exists());
        third.remove().unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lexbench-core-io-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn failed_write_keeps_old_content_and_leaves_no_temp() {
        let dir = scratch("fail");
        let p = dir.join("f.txt");
        write_atomic(&p, |w| w.write_all(b"old")).unwrap();
        let err = write_atomic(&p, |w| {
            w.write_all(b"new, half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(err.is_err());
        assert_eq!(fs::read_to_string(&p).unwrap(), "old");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.txt")]);
    }

    #[test]
    fn directories_are_replaced_whole_or_not_at_all() {
        let root = scratch("dir");
        let d = root.join("ds");
        write_dir_atomic::<_, Error, _>(&d, |t| write_atomic(&t.join("a"), |w| w.write_all(b"1"))).unwrap();
        let failed: Result<()> = write_dir_atomic(&d, |t| {
            write_atomic(&t.join("b"), |w| w.write_all(b"2"))?;
            Err(Error::MissingInput("stop".into()))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read_to_string(d.join("a")).unwrap(), "1");
        assert!(!d.join("b").exists());
        let names: Vec<_> = fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("ds")],
            "no temporary directory left"
        );
        write_dir_atomic::<_, Error, _>(&d, |t| write_atomic(&t.join("c"), |w| w.write_all(b"3"))).unwrap();
        assert!(!d.join("a").exists() && d.join("c").exists(), "replaced whole");
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

    #[test]
    fn leftover_names_parse() {
        assert_eq!(
            parse_leftover(".ecthr.partial-42"),
            Some((LeftoverKind::Partial, 42))
        );
        assert_eq!(
            parse_leftover(".ecthr-release.old-7"),
            Some((LeftoverKind::Old("ecthr-release"), 7))
        );
        assert_eq!(
            parse_leftover(".bm25.trec.tmp.123.0"),
            Some((LeftoverKind::Tmp, 123))
        );
        for not in [
            "ecthr",
            ".git",
            ".partial-1",
            ".x.partial-",
            ".x.tmp.1",
            ".x.old-1a",
            "a.tmp.1.2",
        ] {
            assert_eq!(parse_leftover(not), None, "{not}");
        }
    }

    #[test]
    fn a_swap_interrupted_between_its_renames_is_undone() {
        // The fallback swap killed after parking the old version and before moving the new one in:
        // no `ds`, a complete `.ds.old-PID` and a complete `.ds.partial-PID`.
        let root = scratch("interrupted");
        let pid = dead_pid();
        let data = root.join("datasets");
        write_atomic(&data.join(format!(".ds.old-{pid}")).join("a"), |w| {
            w.write_all(b"old")
        })
        .unwrap();
        write_atomic(&data.join(format!(".ds.partial-{pid}")).join("a"), |w| {
            w.write_all(b"new")
        })
        .unwrap();
        write_atomic(
            &root.join("runs/x").join(format!(".bm25.trec.tmp.{pid}.3")),
            |w| w.write_all(b"half"),
        )
        .unwrap();
        let done = recover_leftovers(&root).unwrap();
        assert_eq!(done.len(), 3, "{done:?}");
        assert_eq!(fs::read_to_string(data.join("ds/a")).unwrap(), "old");
        assert_eq!(names(&data), vec!["ds"]);
        assert!(names(&root.join("runs/x")).is_empty());
        assert!(
            recover_leftovers(&root).unwrap().is_empty(),
            "nothing left the second time"
        );
    }

    #[test]
    fn superseded_versions_are_removed_and_running_writers_left_alone() {
        let root = scratch("superseded");
        let dead = dead_pid();
        let live = std::process::id();
        write_atomic(&root.join("ds/a"), |w| w.write_all(b"current")).unwrap();
        for leftover in [format!(".ds.old-{dead}"), format!(".ds.partial-{dead}")] {
            write_atomic(&root.join(&leftover).join("a"), |w| w.write_all(b"stale")).unwrap();
        }
        // A concurrent build of this very process (or another running one) is not a leftover.
        fs::create_dir_all(root.join(format!(".ds.partial-{live}"))).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        let done = recover_leftovers(&root).unwrap();
        assert_eq!(done.len(), 2, "{done:?}");
        assert_eq!(fs::read_to_string(root.join("ds/a")).unwrap(), "current");
        assert_eq!(
            names(&root),
            vec![
                ".ds.partial-".to_owned() + &live.to_string(),
                ".git".into(),
                "ds".into()
            ]
        );
        assert!(recover_leftovers(&root.join("missing")).unwrap().is_empty());
    }

    /// Commands started together after a kill all settle the same leftovers: the one that finds a
    /// leftover already gone must not fail (it used to stop with "No such file or directory").
    #[test]
    fn leftovers_settled_at_once_by_several_commands() {
        let root = scratch("at-once");
        let pid = dead_pid();
        for n in 0..40 {
            write_atomic(&root.join(format!("entries/.e{n}.json.tmp.{pid}.0")), |w| {
                w.write_all(b"half")
            })
            .unwrap();
            write_atomic(&root.join(format!("datasets/.d{n}.partial-{pid}/a")), |w| {
                w.write_all(b"half")
            })
            .unwrap();
        }
        let settled: Vec<usize> = std::thread::scope(|s| {
            let all: Vec<_> = (0..8)
                .map(|_| s.spawn(|| recover_leftovers(&root).map(|done| done.len())))
                .collect();
            all.into_iter().map(|t| t.join().unwrap().unwrap()).collect()
        });
        assert!(settled.iter().sum::<usize>() >= 80, "{settled:?}");
        assert!(names(&root.join("entries")).is_empty());
        assert!(names(&root.join("datasets")).is_empty());
    }

    #[test]
    fn both_swaps_replace_whole() {
        let unsupported = |_: &Path, _: &Path| Err(io::Error::from(io::ErrorKind::Unsupported));
        let broken = |_: &Path, _: &Path| Err(io::Error::from_raw_os_error(13));
        for (how, fallback) in [("exchange", false), ("fallback", true)] {
            let root = scratch(how);
            let d = root.join("ds");
            write_atomic(&d.join("a"), |w| w.write_all(b"1")).unwrap();
            let tmp = root.join(partial_name("ds"));
            write_atomic(&tmp.join("b"), |w| w.write_all(b"2")).unwrap();
            let old = root.join(old_name("ds"));
            if fallback {
                swap_in(&tmp, &d, &old, unsupported).unwrap();
            } else {
                swap_in(&tmp, &d, &old, exchange).unwrap();
            }
            assert_eq!(names(&root), vec!["ds"], "{how}");
            assert_eq!(names(&d), vec!["b"], "{how}");
            // A real failure of the exchange is an error that leaves the current version.
            write_atomic(&tmp.join("c"), |w| w.write_all(b"3")).unwrap();
            assert!(swap_in(&tmp, &d, &old, broken).is_err());
            assert_eq!(names(&d), vec!["b"], "{how}");
        }
        assert!(exchange_unsupported(&io::Error::from_raw_os_error(22)));
        assert!(!exchange_unsupported(&io::Error::from_raw_os_error(13)));
    }

    #[test]
    fn names_that_are_not_folders_are_refused() {
        let root = scratch("dotdot");
        for bad in [root.join(".."), root.join("x/..")] {
            let r: Result<()> = write_dir_atomic(&bad, |_| Ok(()));
            assert!(r.is_err(), "{}", bad.display());
        }
        assert!(names(&root).is_empty(), "nothing written: {:?}", names(&root));
    }

    #[test]
    fn jsonl_round_trip_and_line_numbers() {
        let dir = scratch("jsonl");
        let p = dir.join("r.jsonl");
        write_jsonl(&p, &[serde_json::json!({"a": 1}), serde_json::json!({"a": 2})]).unwrap();
        let back: Vec<serde_json::Value> = read_jsonl(&p).unwrap();
        assert_eq!(back.len(), 2);

        fs::write(&p, "{\"a\":1}\n\n{\"a\":\n").unwrap();
        let err = read_jsonl::<serde_json::Value>(&p).unwrap_err();
        assert_eq!(err.line_error().map(|(l, _)| l), Some(3), "{err}");

        fs::write(&p, "\n  \n").unwrap();
        assert!(matches!(
            read_jsonl::<serde_json::Value>(&p),
            Err(Error::Empty { .. })
        ));
    }

    #[test]
    fn read_json_strips_a_bom_and_names_file_and_line() {
        let dir = scratch("json");
        let p = dir.join("a.json");
        fs::write(&p, "\u{feff}{\"a\": 1}\n").unwrap();
        let v: serde_json::Value = read_json(&p).unwrap();
        assert_eq!(v["a"], 1);
        fs::write(&p, "{\n  \"a\": 1,\n  \"b\": oops\n}\n").unwrap();
        let err = read_json::<serde_json::Value>(&p).unwrap_err();
        assert_eq!(err.line_error().map(|(l, _)| l), Some(3), "{err}");
        assert!(
            err.to_string().starts_with(&format!("{}:3: ", p.display())),
            "{err}"
        );
        fs::write(&p, b"{\"a\": \"caf\xe9\"}").unwrap();
        let err = read_json::<serde_json::Value>(&p).unwrap_err();
        assert!(
            matches!(err.line_error(), Some((1, LineError::NotUtf8 { .. }))),
            "{err}"
        );
    }
}
