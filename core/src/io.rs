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

/// Writes a whole directory atomically: `fill` writes into a fresh temporary directory beside `dir`;
/// only if it succeeds is the temporary directory swapped in for `dir` (the previous `dir`, if any, is
/// removed after the new one is in place). On failure the temporary directory is removed and `dir` is
/// untouched.
pub fn write_dir_atomic<T, E, F>(dir: &Path, fill: F) -> std::result::Result<T, E>
where
    F: FnOnce(&Path) -> std::result::Result<T, E>,
    E: From<Error>,
{
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io_err(parent))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dir".to_owned());
    let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    if tmp.exists() {
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
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    if dir.exists() {
        fs::rename(dir, &old).map_err(io_err(dir))?;
    }
    fs::rename(&tmp, dir).map_err(io_err(dir))?;
    if old.exists() {
        fs::remove_dir_all(&old).map_err(io_err(&old))?;
    }
    Ok(value)
}

/// Opens `path` for buffered reading.
pub(crate) fn open_reader(path: &Path) -> Result<BufReader<File>> {
    let f = File::open(path).map_err(io_err(path))?;
    Ok(BufReader::with_capacity(1 << 16, f))
}

/// Reads a JSON Lines file: one record per non-blank line. Errors name the file and line; a file with
/// no records is an error ([`Error::Empty`]). A leading byte-order mark is removed and bytes that are
/// not UTF-8 are an error at their line ([`crate::text::Lines`]).
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut out = Vec::new();
    let mut lines = crate::text::Lines::open(path, None)?;
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
    //! Properties: atomic writes replace whole files or nothing; JSONL errors carry the line number.
    use super::*;

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
}
