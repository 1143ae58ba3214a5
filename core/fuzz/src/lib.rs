//! What the core fuzz targets share. The TREC readers and [`lexbench_core::text::Lines`] read from a
//! path, so each run writes its input to a scratch file of its own: one per process and name, under
//! the system's temporary folder (two targets, or two fuzzer processes, never share one).

use std::path::PathBuf;

/// A scratch path for this process: `$TMPDIR/lexbench-fuzz-<pid>/<name>`, its folder created.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lexbench-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the scratch folder");
    dir.join(name)
}

/// Writes `bytes` to the scratch file `name` and returns its path.
pub fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = scratch(name);
    std::fs::write(&p, bytes).expect("write the scratch file");
    p
}
