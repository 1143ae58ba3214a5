//! What every end-to-end test shares: running the binary, and the sample data directory
//! ([`sample_data`]) built once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `lexbench --data DATA ARGS…`, with the caller's `RUST_LOG` and `LEXBENCH_DATA` removed and the
/// git revision fixed (`LEXBENCH_GIT_REV=test-revision`), so sidecars do not depend on the checkout.
pub fn lexbench(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lexbench"))
        .arg("--data")
        .arg(data)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .env("LEXBENCH_GIT_REV", "test-revision")
        .output()
        .expect("run lexbench")
}

/// `lexbench ARGS…` for commands that use no data directory (`eval`, `parse judgment|guide`).
pub fn lexbench_no_data(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lexbench"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .output()
        .expect("run lexbench")
}

/// A fresh copy, at `dest`, of the data directory `lexbench pipeline` makes from the embedded sample
/// (crawl, parsed store, built datasets, BM25 runs, leaderboard): for tests that start from the
/// sample rather than test the pipeline itself. The pipeline runs once per test binary, into a
/// template folder; each caller gets its own recursive copy, so tests can not disturb each other.
/// `dest` is replaced if it exists.
///
/// # Panics
/// When the pipeline fails or a copy does.
pub fn sample_data(dest: &Path) {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    let template = TEMPLATE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("lexbench-cli-sample-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = lexbench(&dir, &["pipeline"]);
        assert!(
            out.status.success(),
            "lexbench pipeline (the shared sample data) failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    });
    let _ = std::fs::remove_dir_all(dest);
    copy_tree(template, dest);
}

/// Copies the folder `from` to `to`, recursively (files and folders; the template holds nothing
/// else).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&src, &dst);
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        } else {
            panic!("{}: neither a file nor a folder", src.display());
        }
    }
}
