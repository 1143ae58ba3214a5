//! What every end-to-end test shares: running the binary.

use std::path::Path;
use std::process::{Command, Output};

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
