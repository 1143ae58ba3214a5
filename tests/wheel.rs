//! `pip install lexbench` (issue 33, item 3): the wheel `scripts/build-wheel` makes (maturin, the
//! command line as a binary inside a Python wheel), installed into a fresh virtual environment with
//! no package index, runs as a user runs it.
//!
//! Properties checked:
//! - `scripts/build-wheel --profile dev OUT` prints the path of one wheel in `OUT`, named for the
//!   crate's version, and leaves nothing else there (no temporary folder);
//! - `pip install --no-index` installs it into a fresh `python3 -m venv` (no network, no dependency);
//! - the installed distribution's version (`importlib.metadata`) and `lexbench --version` are the
//!   crate's;
//! - the installed `lexbench pipeline`, run from a folder outside the checkout, runs every stage on the
//!   embedded sample, exits 0 and writes the datasets, the BM25 runs and the leaderboard;
//! - after the test build, the dev wheel's build compiles no dependency (no registry crate): it reuses
//!   the test build's artifacts. (Checked when this test is built with the dev profile and default
//!   features, as `scripts/test` builds it.)
//!
//! maturin is the pinned one `scripts/python-tools` installs into `$LEXBENCH_PY_TOOLS` (default
//! `target/py-tools-venv`); without it the test fails, naming that script. `LEXBENCH_TEST_WHEEL=PATH`
//! tests that wheel instead of building one (a release wheel, say).
//!
//! Build cost: the dev wheel packages the binary a dev `cargo build -p lexbench` makes; the root
//! package's normal dependencies carry the features `cargo test --workspace` unifies into them
//! (`lexbench-core/testing`, aho-corasick's `default`: Cargo.toml), so after the test build every unit
//! is fresh, the binary included, and the wheel costs maturin's manylinux check and the deflate of the
//! 200 MB debug binary. Were a dependency's features to differ again, the wheel build would compile
//! that crate and everything above it (29 crates, 8 minutes on 2 cores, for aho-corasick's `default`):
//! the test fails naming them.
//!
//! Its own test binary, not a module of `tests/cli`: a wheel build that does compile something re-links
//! `target/debug/lexbench`, which is missing while it links, and the `tests/cli` tests that run beside
//! it in one process start that file. Cargo runs test binaries one after another, so nothing runs the
//! binary while this test builds; after it the file is there again (and untouched when nothing was
//! compiled: cargo leaves an up-to-date binary in place).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The checkout (this package's root).
fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `cmd`'s output, or a test failure naming the command and what it printed.
fn ok(cmd: &mut Command) -> Output {
    let what = format!("{cmd:?}");
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The wheel under test: `LEXBENCH_TEST_WHEEL`, or one `scripts/build-wheel --profile dev` builds into
/// `out` (checked to hold that wheel and nothing else).
fn wheel(out: &Path) -> PathBuf {
    if let Some(w) = std::env::var_os("LEXBENCH_TEST_WHEEL") {
        let w = PathBuf::from(w);
        assert!(w.is_file(), "LEXBENCH_TEST_WHEEL={}: no such file", w.display());
        return w;
    }
    let tools = std::env::var_os("LEXBENCH_PY_TOOLS")
        .map_or_else(|| checkout().join("target/py-tools-venv"), PathBuf::from);
    let tools = if tools.is_relative() {
        checkout().join(tools)
    } else {
        tools
    };
    assert!(
        tools.join("bin/maturin").is_file(),
        "maturin not found in {}: run scripts/python-tools (it installs the pinned maturin there; \
         scripts/test runs it) or set LEXBENCH_PY_TOOLS",
        tools.display()
    );
    let built = ok(Command::new(checkout().join("scripts/build-wheel"))
        .args([OsStr::new("--profile"), OsStr::new("dev"), out.as_os_str()])
        // cargo runs this test with the root package's build-script outputs in the environment
        // (`OUT_DIR`, `LEXBENCH_BUILD_REV`); the wheel's cargo must see the test build's environment,
        // or build scripts that track them (ring's, the root's) run again and their crates recompile.
        .env_remove("OUT_DIR")
        .env_remove("LEXBENCH_BUILD_REV")
        .env("LEXBENCH_PY_TOOLS", &tools));
    // The test build's own binary is in `…/debug/` for the dev profile. A release test build shares
    // nothing with the dev wheel's build and a cuda one differs from it: the wheel's build then compiles.
    let dev_test_build = Path::new(env!("CARGO_BIN_EXE_lexbench"))
        .parent()
        .and_then(Path::file_name)
        == Some(OsStr::new("debug"));
    if dev_test_build && !cfg!(feature = "cuda") {
        // cargo's status lines: `Compiling NAME vX (PATH)` for workspace crates (recompiled when a
        // source changes during the run), without a path for registry crates.
        let stderr = String::from_utf8_lossy(&built.stderr);
        let compiled: Vec<&str> = stderr
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("Compiling "))
            .filter(|c| !c.contains(" ("))
            .collect();
        assert!(
            compiled.is_empty(),
            "the dev wheel's build recompiled {} dependencies after the test build: {compiled:?}; \
             their features differ from the test build's (make the root package's normal \
             dependencies enable them, Cargo.toml)\n{stderr}",
            compiled.len()
        );
    }
    let printed = String::from_utf8(built.stdout).unwrap();
    let w = PathBuf::from(printed.trim_end());
    assert_eq!(
        printed.lines().count(),
        1,
        "stdout is the wheel's path alone: {printed:?}"
    );
    let listed: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        listed,
        std::slice::from_ref(&w),
        "{} holds the wheel alone",
        out.display()
    );
    w
}

#[test]
fn the_wheel_installed_in_a_fresh_venv_runs_the_pipeline() {
    let version = env!("CARGO_PKG_VERSION");
    let root = lexbench_core::testing::scratch_root().join(format!("lexbench-wheel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();

    let wheel = wheel(&root.join("wheels"));
    let name = wheel.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with(&format!("lexbench-{version}-")) && name.ends_with(".whl"),
        "{name}: not a lexbench {version} wheel"
    );

    // A fresh environment, filled from the wheel alone: no index, no dependency, no pip config.
    let venv = root.join("venv");
    ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    ok(Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "--isolated",
            "--disable-pip-version-check",
            "install",
        ])
        .args(["--no-index", "--no-deps", "--quiet"])
        .arg(&wheel));
    let installed = ok(Command::new(venv.join("bin/python")).args([
        "-c",
        "import importlib.metadata as m; print(m.version('lexbench'))",
    ]));
    assert_eq!(String::from_utf8_lossy(&installed.stdout).trim(), version);

    // The installed binary, run from a folder outside the checkout with nothing of the caller's.
    let exe = venv.join("bin/lexbench");
    assert!(
        exe.is_file(),
        "pip put no lexbench in {}",
        venv.join("bin").display()
    );
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let lexbench = |args: &[&str]| {
        ok(Command::new(&exe)
            .args(args)
            .current_dir(&work)
            .env_remove("RUST_LOG")
            .env_remove("LEXBENCH_DATA")
            .env_remove("LEXBENCH_GIT_REV"))
    };
    let v = lexbench(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&v.stdout),
        format!("lexbench {version}\n")
    );

    let run = lexbench(&["--data", "data", "pipeline"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("[5/5] leaderboard"), "{stderr}");
    let data = work.join("data");
    for f in [
        "raw/manifest.jsonl",
        "parsed/ecthr/judgments.jsonl",
        "datasets/ecthr/manifest.json",
        "datasets/ecthr/certificate.json",
        "datasets/bsard/manifest.json",
        "runs/ecthr/test/bm25.trec",
        "leaderboard/index.md",
        "leaderboard/site/index.html",
    ] {
        assert!(data.join(f).is_file(), "{f} not written:\n{stderr}");
    }
    let board = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    assert!(board.contains("| BM25 ✓ |"), "{board}");

    std::fs::remove_dir_all(&root).unwrap();
}
