//! sha256 as lower-case hex: of bytes in memory ([`sha256_hex`]), of a file, streamed
//! ([`sha256_file`]), and of bytes fed piece by piece ([`Sha256Stream`]). Every stage names content this way (the raw store's objects, a dataset's
//! manifest, model files), so there is one implementation.
//!
//! ```
//! assert_eq!(
//!     lexbench_core::sha256_hex(b"abc"),
//!     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
//! );
//! ```

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// sha256 of a file's content, or of a folder's: over its regular files (links followed, hidden names
/// skipped, as a dataset's manifest lists them) as sorted `relative/path sha256` lines, so that the same
/// files anywhere give the same hash. What a dataset names an input by (never its path).
pub fn sha256_content(path: &Path) -> Result<String> {
    if path.is_file() {
        return sha256_file(path);
    }
    let mut lines = Vec::new();
    for p in crate::dataset::walk(path)? {
        lines.push(format!(
            "{} {}\n",
            crate::dataset::relative(path, &p),
            sha256_file(&p)?
        ));
    }
    lines.sort();
    Ok(sha256_hex(lines.concat().as_bytes()))
}

/// sha256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// sha256 of bytes fed piece by piece (a download hashed as it is checked), lower-case hex.
#[derive(Debug, Clone, Default)]
pub struct Sha256Stream(Sha256);

impl Sha256Stream {
    /// A fresh hash.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest, lower-case hex.
    pub fn hex(self) -> String {
        to_hex(&self.0.finalize())
    }
}

/// sha256 of the file at `path`, lower-case hex, read in 64 KiB blocks (a model's weights are never
/// held in memory whole). Errors name the file.
pub fn sha256_file(path: &Path) -> Result<String> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(to_hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    //! Properties: the known sha256 test vectors, and a streamed file hash equal to the in-memory one
    //! across block boundaries.
    use super::*;

    #[test]
    fn known_vectors_and_streaming_agree() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let dir = crate::testing::scratch_root().join(format!("lexbench-core-hash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("big");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(sha256_file(&p).unwrap(), sha256_hex(&bytes));
        let mut s = Sha256Stream::new();
        for c in bytes.chunks(999) {
            s.update(c);
        }
        assert_eq!(s.hex(), sha256_hex(&bytes));
        assert!(sha256_file(&dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A folder's content hash is the same wherever the folder lies and whatever else is hidden in
    /// it, and changes with any file's bytes or name.
    #[test]
    fn a_folders_content_hash_ignores_where_it_lies() {
        let root =
            crate::testing::scratch_root().join(format!("lexbench-hash-content-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for place in ["a", "b c/d"] {
            let d = root.join(place).join("texts");
            std::fs::create_dir_all(d.join("sub")).unwrap();
            std::fs::write(d.join("001-1.txt"), "one").unwrap();
            std::fs::write(d.join("sub/001-2.txt"), "two").unwrap();
        }
        std::fs::write(root.join("b c/d/texts/.hidden"), "x").unwrap();
        let (a, b) = (root.join("a/texts"), root.join("b c/d/texts"));
        assert_eq!(sha256_content(&a).unwrap(), sha256_content(&b).unwrap());
        std::fs::write(b.join("sub/001-2.txt"), "tw0").unwrap();
        assert_ne!(sha256_content(&a).unwrap(), sha256_content(&b).unwrap());
        std::fs::write(b.join("sub/001-2.txt"), "two").unwrap();
        std::fs::rename(b.join("sub/001-2.txt"), b.join("sub/001-3.txt")).unwrap();
        assert_ne!(sha256_content(&a).unwrap(), sha256_content(&b).unwrap());
        assert_eq!(sha256_content(&a.join("001-1.txt")).unwrap(), sha256_hex(b"one"));
        let _ = std::fs::remove_dir_all(&root);
    }
}
