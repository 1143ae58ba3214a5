//! The content-addressed raw store: `raw/objects/ab/cdef…` and `raw/manifest.jsonl`.
//!
//! Invariants, checked by [`RawStore::verify`]:
//! - every body is stored once, under its sha256 (two hex characters of fan-out, then the rest);
//! - an object is written atomically (temporary file + rename) *before* its manifest line is appended,
//!   so a crash can leave an object without a line (harmless: it is refetched or reused) but never a
//!   line pointing at nothing;
//! - the manifest is append-only; a torn last line (a crash in the middle of an append) is cut off when
//!   the store is opened, and a corrupt line anywhere else is an error naming the line.
//!
//! One crawl process per data directory: the store serialises appends within a process.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lexbench_core::ManifestEntry;
use lexbench_core::io::write_atomic;
use lexbench_core::sha256_hex;

use crate::error::{Error, Result};

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// The manifest's entries with their 1-based line numbers; blank lines are skipped, a line that does not
/// parse is an error naming it.
fn parse_manifest<'a>(
    path: &'a Path,
    text: &'a str,
) -> impl Iterator<Item = Result<(usize, ManifestEntry)>> + 'a {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(move |(i, l)| {
            serde_json::from_str(l)
                .map(|e| (i + 1, e))
                .map_err(|e| Error::Manifest {
                    path: path.to_owned(),
                    line: i + 1,
                    message: e.to_string(),
                })
        })
}

/// The raw store of a data directory.
#[derive(Debug)]
pub struct RawStore {
    root: PathBuf,
    manifest: Mutex<ManifestState>,
}

#[derive(Debug)]
struct ManifestState {
    file: File,
    /// The latest successful entry per URL.
    done: HashMap<String, ManifestEntry>,
    /// The latest failed entry per URL, if it came after the URL's latest success.
    failed: HashMap<String, ManifestEntry>,
    lines: usize,
}

/// What [`RawStore::verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VerifyReport {
    /// Manifest lines.
    pub lines: usize,
    /// Lines that name an object.
    pub with_object: usize,
    /// Distinct objects on disk.
    pub objects: usize,
}

impl RawStore {
    /// Opens (creating if needed) the store at `root` (usually `DATA/raw`), loading the manifest and
    /// repairing a torn last line.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(root.join("objects")).map_err(io_err(&root))?;
        let path = root.join("manifest.jsonl");
        let mut done = HashMap::new();
        let mut failed = HashMap::new();
        let mut lines = 0usize;
        if path.exists() {
            let mut text = String::new();
            File::open(&path)
                .and_then(|mut f| f.read_to_string(&mut text))
                .map_err(io_err(&path))?;
            // Everything after the last newline is a torn append: drop it.
            let complete = text.rfind('\n').map_or(0, |i| i + 1);
            if complete < text.len() {
                tracing::warn!(
                    "{}: cutting off a torn last line ({} bytes) left by an interrupted crawl",
                    path.display(),
                    text.len() - complete
                );
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(io_err(&path))?;
                f.set_len(complete as u64).map_err(io_err(&path))?;
                f.sync_all().map_err(io_err(&path))?;
            }
            for entry in parse_manifest(&path, &text[..complete]) {
                let (_, entry) = entry?;
                lines += 1;
                if entry.is_success() {
                    failed.remove(&entry.url);
                    done.insert(entry.url.clone(), entry);
                } else {
                    failed.insert(entry.url.clone(), entry);
                }
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        Ok(Self {
            root,
            manifest: Mutex::new(ManifestState {
                file,
                done,
                failed,
                lines,
            }),
        })
    }

    /// The store's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the object named `sha256` lives.
    pub fn object_path(&self, sha256: &str) -> PathBuf {
        let (a, b) = sha256.split_at(2.min(sha256.len()));
        self.root.join("objects").join(a).join(b)
    }

    /// Stores `bytes` (once: an existing object is kept) and returns its sha256.
    pub fn put(&self, bytes: &[u8]) -> Result<String> {
        let sha = sha256_hex(bytes);
        let path = self.object_path(&sha);
        if !path.exists() {
            write_atomic(&path, |w| w.write_all(bytes))?;
        }
        Ok(sha)
    }

    /// Reads the object named `sha256`, checking its hash.
    pub fn get(&self, sha256: &str) -> Result<Vec<u8>> {
        let path = self.object_path(sha256);
        let bytes = fs::read(&path).map_err(|e| Error::Object {
            sha256: sha256.to_owned(),
            reason: e.to_string(),
        })?;
        let actual = sha256_hex(&bytes);
        if actual != sha256 {
            return Err(Error::Object {
                sha256: sha256.to_owned(),
                reason: format!("its content hashes to {actual}"),
            });
        }
        Ok(bytes)
    }

    /// Appends one manifest line (durably). Call after the object is stored.
    pub fn record(&self, entry: &ManifestEntry) -> Result<()> {
        let mut line = serde_json::to_string(entry).map_err(|e| Error::Manifest {
            path: self.manifest_path(),
            line: 0,
            message: e.to_string(),
        })?;
        line.push('\n');
        let mut st = self.lock();
        let path = self.manifest_path();
        st.file.write_all(line.as_bytes()).map_err(io_err(&path))?;
        st.file.sync_data().map_err(io_err(&path))?;
        st.lines += 1;
        if entry.is_success() {
            st.failed.remove(&entry.url);
            st.done.insert(entry.url.clone(), entry.clone());
        } else {
            st.failed.insert(entry.url.clone(), entry.clone());
        }
        Ok(())
    }

    /// The latest successful fetch of `url`, if any.
    pub fn lookup(&self, url: &str) -> Option<ManifestEntry> {
        self.lock().done.get(url).cloned()
    }

    /// The latest failed fetch of `url`, when it is later than its latest success (or there is none).
    pub fn last_failure(&self, url: &str) -> Option<ManifestEntry> {
        self.lock().failed.get(url).cloned()
    }

    /// Number of manifest lines.
    pub fn manifest_lines(&self) -> usize {
        self.lock().lines
    }

    /// The manifest file.
    pub fn manifest_path(&self) -> PathBuf {
        self.root.join("manifest.jsonl")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ManifestState> {
        // A panic while holding the lock can not leave the state half-updated in a way that matters
        // (the file append is the commit point), so a poisoned lock is still usable.
        self.manifest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Checks the store's invariants: every manifest line parses, and every object a line names exists
    /// and hashes to its name.
    pub fn verify(&self) -> Result<VerifyReport> {
        let path = self.manifest_path();
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        let mut report = VerifyReport::default();
        for entry in parse_manifest(&path, &text) {
            let (line, entry) = entry?;
            report.lines += 1;
            if let Some(sha) = &entry.sha256 {
                let bytes = self.get(sha)?;
                if bytes.len() as u64 != entry.bytes {
                    return Err(Error::Object {
                        sha256: sha.clone(),
                        reason: format!(
                            "manifest line {} says {} bytes, object has {}",
                            line,
                            entry.bytes,
                            bytes.len()
                        ),
                    });
                }
                report.with_object += 1;
            }
        }
        let objects = self.root.join("objects");
        for dir in fs::read_dir(&objects).map_err(io_err(&objects))? {
            let dir = dir.map_err(io_err(&objects))?.path();
            if dir.is_dir() {
                report.objects += fs::read_dir(&dir)
                    .map_err(io_err(&dir))?
                    .filter_map(|e| e.ok())
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .count();
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    //! Properties: objects are stored once under their hash; a torn manifest tail is repaired on open;
    //! a corrupt middle line is an error naming it; verify catches a tampered object.
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-store-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn entry(url: &str, sha: Option<String>, bytes: u64) -> ManifestEntry {
        ManifestEntry {
            url: url.into(),
            fetched_at: "2026-01-01T00:00:00Z".into(),
            status: if sha.is_some() { 200 } else { 204 },
            content_type: None,
            sha256: sha,
            bytes,
            request: None,
            etag: None,
            last_modified: None,
            error: None,
        }
    }

    #[test]
    fn torn_tail_is_repaired_and_middle_corruption_reported() {
        let root = scratch("torn");
        {
            let s = RawStore::open(&root).unwrap();
            let sha = s.put(b"hello").unwrap();
            assert_eq!(sha, sha256_hex(b"hello"));
            s.record(&entry("http://x/a", Some(sha), 5)).unwrap();
            s.record(&entry("http://x/b", None, 0)).unwrap();
        }
        let m = root.join("manifest.jsonl");
        let mut f = OpenOptions::new().append(true).open(&m).unwrap();
        f.write_all(b"{\"url\":\"http://x/c\",\"fetch").unwrap();
        drop(f);
        let s = RawStore::open(&root).unwrap();
        assert_eq!(s.manifest_lines(), 2);
        assert!(s.lookup("http://x/a").is_some());
        assert!(s.lookup("http://x/c").is_none());
        assert!(fs::read_to_string(&m).unwrap().ends_with('\n'));
        assert_eq!(s.verify().unwrap().with_object, 1);
        drop(s);

        let text = fs::read_to_string(&m).unwrap();
        fs::write(&m, format!("garbage\n{text}")).unwrap();
        let err = RawStore::open(&root).unwrap_err();
        assert!(err.to_string().contains("manifest.jsonl:1:"), "{err}");
    }

    #[test]
    fn verify_catches_a_tampered_object() {
        let root = scratch("tamper");
        let s = RawStore::open(&root).unwrap();
        let sha = s.put(b"body").unwrap();
        s.record(&entry("http://x/a", Some(sha.clone()), 4)).unwrap();
        fs::write(s.object_path(&sha), b"other").unwrap();
        assert!(matches!(s.verify(), Err(Error::Object { .. })));
    }
}
