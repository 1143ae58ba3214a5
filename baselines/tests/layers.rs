//! The layers of `baselines/src`, lowest first, and what each may use (ARCHITECTURE.md in the
//! repository draws the same picture):
//!
//! | layer | modules | may use |
//! |---|---|---|
//! | 1 | `encoder`, `sparse`, `curriculum` | `error` |
//! | 2 | `checkpoints`, `scorers`, `graph` | `encoder`, `error` |
//! | 3 | `rank` | `encoder`, `checkpoints`, `scorers`, `sparse`, `error` |
//! | 4 | `train` | everything below |
//!
//! Properties checked: no file of a module names (`crate::…`, in code, not comments) a module its
//! layer may not use, nor climbs out of its module with `super::super`; every module under `src/` is
//! in the table; the checker itself flags an upward import, a grouped `use crate::{…}` and a
//! `super::super` in a made-up file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Module → the modules it may use (besides itself).
fn allowed() -> BTreeMap<&'static str, Vec<&'static str>> {
    BTreeMap::from([
        ("error", vec![]),
        ("encoder", vec!["error"]),
        ("sparse", vec!["error"]),
        ("curriculum", vec!["error"]),
        ("checkpoints", vec!["encoder", "error"]),
        ("scorers", vec!["encoder", "error"]),
        ("graph", vec!["encoder", "error"]),
        (
            "rank",
            vec!["encoder", "checkpoints", "scorers", "sparse", "error"],
        ),
        (
            "train",
            vec![
                "encoder",
                "checkpoints",
                "sparse",
                "curriculum",
                "scorers",
                "graph",
                "rank",
                "error",
            ],
        ),
    ])
}

/// The module a source file belongs to: its first folder under `src/`, or its stem (`error.rs`).
/// `lib.rs` is the crate root and belongs to none.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    if first == "lib.rs" {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_owned())
}

/// The top-level modules a line of code names through `crate::` (plain or grouped).
fn crate_refs(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

/// What is wrong with one file's imports, as `file:line: message`.
fn violations(rel: &Path, text: &str, allowed: &BTreeMap<&str, Vec<&str>>) -> Vec<String> {
    let Some(module) = module_of(rel) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let Some(may) = allowed.get(module.as_str()) else {
        return vec![format!("{}: module {module} is in no layer", rel.display())];
    };
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for used in crate_refs(code) {
            // Crate-root items (`crate::Error`, `crate::default_device`) are the crate's surface.
            let is_module = allowed.contains_key(used.as_str());
            if is_module && used != module && !may.contains(&used.as_str()) {
                out.push(format!(
                    "{}:{}: {module} uses crate::{used}, a layer it may not use",
                    rel.display(),
                    i + 1
                ));
            }
        }
        if code.contains("super::super") {
            out.push(format!(
                "{}:{}: super::super climbs out of the module; name it with crate::",
                rel.display(),
                i + 1
            ));
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn lower_layers_never_use_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let allowed = allowed();
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        if let Some(m) = module_of(rel) {
            seen.insert(m);
        }
        problems.extend(violations(rel, &std::fs::read_to_string(f).unwrap(), &allowed));
    }
    assert!(
        files.len() > 40,
        "only {} source files found under {}",
        files.len(),
        src.display()
    );
    assert!(problems.is_empty(), "layer violations:\n{}", problems.join("\n"));
    let layered: std::collections::BTreeSet<String> = allowed.keys().map(|k| (*k).to_owned()).collect();
    assert_eq!(seen, layered, "modules under src/ and the layer table differ");
}

#[test]
fn the_checker_flags_upward_grouped_and_climbing_imports() {
    let allowed = allowed();
    let bad = "use crate::train::export::AdapterFile;\n\
               use crate::{error::Result, rank::run_path};\n\
               // use crate::train::x; (a comment is not an import)\n\
               let x = super::super::foo();\n";
    let v = violations(Path::new("encoder/bert.rs"), bad, &allowed);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(
        v[0].starts_with("encoder/bert.rs:1: encoder uses crate::train"),
        "{v:?}"
    );
    assert!(v[1].contains("crate::rank"), "{v:?}");
    assert!(v[2].starts_with("encoder/bert.rs:4: super::super"), "{v:?}");
    let fine = "use crate::encoder::BertModel;\nuse crate::{Error, Result};\n";
    assert!(violations(Path::new("train/model.rs"), fine, &allowed).is_empty());
    assert_eq!(
        violations(Path::new("extra/mod.rs"), "", &allowed),
        vec!["extra/mod.rs: module extra is in no layer"]
    );
}

/// `unsafe_code` is forbidden workspace-wide (`Cargo.toml`'s `[workspace.lints]`: no file of a crate
/// that takes them can lift it). Exactly two crates set their own lints with `unsafe_code` denied,
/// `lexbench-gemm` and `lexbench-engine`, and within them exactly these files lift it: the products
/// (SIMD intrinsics on packed panels), the products' rate against the gemm crate's (whose API is
/// unsafe), the fused kernels (raw strided pointers, `#[target_feature]` paths), the FMA burn,
/// the allocator policy (glibc), and the products' agreement tests (they call the unsafe entry points
/// attention and the feed-forward layer use: `PackedB`, `sgemm_then`). Any other crate or file fails
/// here, naming it.
#[test]
fn only_the_engine_and_gemm_allow_unsafe_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    let mut manifests = Vec::new();
    for dir in std::fs::read_dir(&root).expect("workspace root") {
        let dir = dir.expect("entry").path();
        if dir.join("Cargo.toml").is_file() && !dir.ends_with("vendor") {
            manifests.push(dir.join("Cargo.toml"));
        }
    }
    manifests.push(root.join("Cargo.toml"));
    let mut own_lints: Vec<String> = Vec::new();
    for m in &manifests {
        let text = std::fs::read_to_string(m).expect("manifest");
        let is_package = text.contains("[package]");
        let inherits = text.contains("[lints]\nworkspace = true");
        if is_package && !inherits {
            own_lints.push(
                m.parent()
                    .expect("dir")
                    .strip_prefix(&root)
                    .expect("under")
                    .display()
                    .to_string(),
            );
        }
    }
    own_lints.sort();
    assert_eq!(
        own_lints,
        ["bench", "engine", "gemm"],
        "crates that do not take the workspace's lints"
    );
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).expect("workspace manifest");
    assert!(
        workspace.contains("unsafe_code = \"forbid\""),
        "the workspace forbids unsafe code"
    );

    let mut files = Vec::new();
    for dir in ["bench", "engine", "gemm"] {
        sources(&root.join(dir), &mut files);
    }
    let marker = ["allow(", "unsafe_code)"].concat();
    let allowed = [
        Path::new("bench/examples/rate.rs"),
        Path::new("engine/src/heap.rs"),
        Path::new("engine/src/kernels.rs"),
        Path::new("engine/src/peak.rs"),
        Path::new("gemm/src/lib.rs"),
        Path::new("gemm/tests/agree.rs"),
    ];
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("source");
        if text.contains(&marker) {
            found.push(f.strip_prefix(&root).expect("under the root").to_path_buf());
        }
    }
    found.sort();
    assert_eq!(found, allowed, "files that allow unsafe code");
    let lib = std::fs::read_to_string(root.join("baselines/src/lib.rs")).expect("baselines lib");
    assert!(
        lib.contains(&["#![forbid(", "unsafe_code)]"].concat()),
        "baselines forbids unsafe code"
    );
}
