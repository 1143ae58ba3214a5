//! Records the revision this binary is built from (`LEXBENCH_BUILD_REV`, read by `src/main.rs`), so a
//! run's sidecar names the code that made it, not whatever the current directory's checkout holds
//! when it runs. Built outside a git checkout (a source tarball) it records nothing. The build
//! script reruns when the checkout's HEAD or the branch it points to moves; uncommitted edits are
//! not tracked (the revision is HEAD's).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LEXBENCH_BUILD_REV");
    // Where HEAD and the branch it names live (a worktree's .git is a file pointing elsewhere).
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--git-path", &branch])
    {
        println!("cargo:rerun-if-changed={p}");
    }
    let rev = std::env::var("LEXBENCH_BUILD_REV")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| git(&["rev-parse", "HEAD"]));
    if let Some(rev) = rev {
        println!("cargo:rustc-env=LEXBENCH_BUILD_REV={}", rev.trim());
    }
}
