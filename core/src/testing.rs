//! Test support shared by every crate's tests: where the real fixtures are.
//!
//! Fixtures (real judgments, guides, HUDOC metadata, the published release) live outside the
//! repository, in `../shared/fixtures` beside the checkout, or wherever `LEXBENCH_FIXTURES` points.
//! CI always has them, so a missing folder is a failure, never a silent skip.

use std::path::PathBuf;

/// The fixtures folder: `$LEXBENCH_FIXTURES`, else the first `shared/fixtures` found beside the
/// current directory or one of its ancestors (cargo runs tests in the package's folder, so from
/// `CHECKOUT/core` this finds `CHECKOUT/../shared/fixtures`).
///
/// # Panics
/// When the folder does not exist: tests that need fixtures must fail, not skip, without them.
pub fn fixtures_dir() -> PathBuf {
    let dir = match std::env::var_os("LEXBENCH_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => {
            let cwd = std::env::current_dir().unwrap_or_default();
            cwd.ancestors()
                .map(|a| a.join("shared/fixtures"))
                .find(|d| d.is_dir())
                .unwrap_or_else(|| cwd.join("../shared/fixtures"))
        }
    };
    assert!(
        dir.is_dir(),
        "fixtures folder {} not found: set LEXBENCH_FIXTURES or put ../shared/fixtures beside the checkout",
        dir.display()
    );
    dir
}

/// A file under the fixtures folder, which must exist.
///
/// # Panics
/// When the file does not exist.
pub fn fixture(rel: &str) -> PathBuf {
    let p = fixtures_dir().join(rel);
    assert!(p.is_file(), "fixture {} not found", p.display());
    p
}
