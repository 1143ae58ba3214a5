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
pub use crate::journal::Recovered;
use crate::journal::{Intent, Kind};

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
    path.with_file_name(format!(
        ".{name}.tmp.{}.{n}.{}",
        std::process::id(),
        crate::journal::token()
    ))
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
    let intent = Intent::record(Kind::Tmp, &tmp, None);
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
        if fs::remove_file(&tmp).is_ok() || fs::symlink_metadata(&tmp).is_err() {
            intent.done();
        }
        return Err(Error::Io {
            path: path.to_owned(),
            source: e,
        });
    }
    intent.done();
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

/// The name of the temporary folder a process builds `name` in: `.{name}.partial-{pid}.{token}`
/// ([`crate::journal::token`]).
pub fn partial_name(name: &str) -> String {
    format!(
        ".{name}.partial-{}.{}",
        std::process::id(),
        crate::journal::token()
    )
}

/// The name a previous version of `name` has while the fallback swap runs:
/// `.{name}.old-{pid}.{token}`.
fn old_name(name: &str) -> String {
    format!(".{name}.old-{}.{}", std::process::id(), crate::journal::token())
}

/// Writes a whole directory atomically: `fill` writes into a fresh temporary directory
/// [`partial_name`] (`.{name}.partial-{pid}.{token}`) beside `dir`; only if it succeeds is it swapped in for `dir`. On failure
/// the temporary directory is removed and `dir` is untouched.
///
/// The swap leaves the old or the new complete directory under `dir` at every instant:
/// - on Linux it is one `renameat2(RENAME_EXCHANGE)`: the new directory takes `dir`'s name and the old
///   one takes the temporary name in a single atomic step; the old one is then removed;
/// - where exchange is not supported (other systems, file systems without it) the old directory is
///   renamed to `.{name}.old-{pid}.{token}` and the new one into place; a process killed between the two
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
    let intent = Intent::record(Kind::Partial, &tmp, None);
    // The entry goes once the temporary folder is gone (moved into place, or removed).
    let settle = |intent: Intent| {
        if fs::symlink_metadata(&tmp).is_err() {
            intent.done();
        }
    };
    if let Err(e) = fs::create_dir(&tmp) {
        settle(intent);
        return Err(io_err(&tmp)(e).into());
    }
    let value = match fill(&tmp) {
        Ok(v) => v,
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            settle(intent);
            return Err(e);
        }
    };
    if let Err(e) = swap_in(&tmp, dir, &parent.join(old_name(&name)), exchange) {
        let _ = fs::remove_dir_all(&tmp);
        settle(intent);
        return Err(e.into());
    }
    settle(intent);
    Ok(value)
}

/// Removes the folder `dir` so that a kill never leaves part of it under its own name: it is first
/// renamed to `.{name}.partial-{pid}.{token}` (journaled before the rename, like [`write_dir_atomic`]'s
/// temporaries), then removed. A process killed during the removal leaves the hidden folder and a
/// journal entry naming it, and [`recover_leftovers`] removes it when the next command opens the data
/// directory. A `dir` that does not exist is not an error.
pub fn remove_dir_journaled(dir: &Path) -> Result<()> {
    remove_dir_journaled_with(dir, |p| fs::remove_dir_all(p))
}

/// [`remove_dir_journaled`] with the removal of the hidden folder given (a test's stands for a kill).
pub(crate) fn remove_dir_journaled_with(
    dir: &Path,
    remove: impl FnOnce(&Path) -> io::Result<()>,
) -> Result<()> {
    if fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    let Some(name) = dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Err(Error::Io {
            path: dir.to_owned(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a folder name"),
        });
    };
    let hidden = dir.with_file_name(partial_name(&name));
    if fs::symlink_metadata(&hidden).is_ok() {
        fs::remove_dir_all(&hidden).map_err(io_err(&hidden))?;
    }
    let intent = Intent::record(Kind::Partial, &hidden, None);
    let result = fs::rename(dir, &hidden)
        .map_err(io_err(dir))
        .and_then(|()| remove(&hidden).map_err(io_err(&hidden)));
    if fs::symlink_metadata(&hidden).is_err() {
        intent.done();
    }
    result
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
    let intent = Intent::record(Kind::Old, old, Some(dir));
    let settle = |intent: Intent| {
        if fs::symlink_metadata(old).is_err() {
            intent.done();
        }
    };
    if let Err(e) = fs::rename(dir, old) {
        settle(intent);
        return Err(io_err(dir)(e));
    }
    if let Err(e) = fs::rename(tmp, dir) {
        // Put the previous version back; if even that fails, recovery will.
        let _ = fs::rename(old, dir);
        settle(intent);
        return Err(io_err(dir)(e));
    }
    let _ = fs::remove_dir_all(old);
    settle(intent);
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

/// Settles what interrupted writes of dead processes left in the data directory `root`, as its write
/// journal names them ([`crate::journal::recover`]); nothing the journal does not name is touched.
pub fn recover_leftovers(root: &Path) -> Result<Vec<Recovered>> {
    crate::journal::recover(root)
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
        jsonl_line(path, line_no, line, &mut out)?;
    }
    if out.is_empty() {
        return Err(Error::Empty {
            path: path.to_owned(),
        });
    }
    Ok(out)
}

/// [`read_jsonl`] of the bytes of `path` already in memory (by the same rules: byte-order mark,
/// UTF-8 and the line cap checked per line, blank lines skipped, no record an error).
pub fn read_jsonl_bytes<T: DeserializeOwned>(bytes: &[u8], path: &Path) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for (line_no, line) in crate::text::ByteLines::new(bytes, Some(MAX_JSONL_LINE_BYTES), true) {
        jsonl_line(path, line_no, line, &mut out)?;
    }
    if out.is_empty() {
        return Err(Error::Empty {
            path: path.to_owned(),
        });
    }
    Ok(out)
}

fn jsonl_line<T: DeserializeOwned>(
    path: &Path,
    line_no: usize,
    line: std::result::Result<&str, LineError>,
    out: &mut Vec<T>,
) -> Result<()> {
    let at_line = |error| Error::Line {
        path: path.to_owned(),
        line: line_no,
        error,
    };
    let line = line.map_err(at_line)?;
    if !line.trim().is_empty() {
        out.push(serde_json::from_str(line).map_err(|e| at_line(LineError::Json(e.to_string())))?);
    }
    Ok(())
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
        let dir = crate::testing::scratch_root().join(format!("lexbench-io-lock-{}", std::process::id()));
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
        let dir =
            crate::testing::scratch_root().join(format!("lexbench-core-io-{}-{name}", std::process::id()));
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

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
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
