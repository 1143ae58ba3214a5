//! End-to-end tests that a user can not lose or corrupt data through the command line.
//!
//! Properties checked:
//! - dataset, split and system names are names, never paths: `--name ""`, `../raw`, `.`, `..` and
//!   absolute paths are refused before anything is written, and nothing else in the data directory
//!   (the crawl, other datasets) changes; `--dataset` of `run` and `submit` takes no path either, and
//!   the leaderboard leaves out an entry whose dataset name is a path instead of writing outside;
//! - a replacement interrupted between its two renames (the fallback swap) is put back by the next
//!   command; temporary files of killed `submit` / `leaderboard` processes are removed (the kill
//!   loops themselves, `kill -9` at seeded random moments of every writing command, are in
//!   [`crate::kills`], which shares this module's helpers);
//! - `build ecthr` without parsed judgments names the missing file;
//! - plots do not change a dataset's version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{lexbench, sample_data};
use lexbench_core::dataset::DatasetManifest;
use lexbench_core::journal::{Entry, Kind};

/// A fresh folder `lexbench-safety-PID-NAME` in the temporary directory.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let d =
        lexbench_core::testing::scratch_root().join(format!("lexbench-safety-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every file under `root` (relative path → content), to show that nothing changed.
pub(crate) fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Names under `root` that interrupted writes leave: `.X.partial-PID`, `.X.old-PID`, `.X.tmp.PID.N`,
/// and entries of the write journal (`.lexbench/journal/`) still open.
pub(crate) fn leftovers(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root.join(lexbench_core::journal::JOURNAL_DIR)) {
        out.extend(rd.map(|e| e.unwrap().path().display().to_string()));
    }
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.')
                && (name.contains(".partial-") || name.contains(".old-") || name.contains(".tmp."))
            {
                out.push(e.path().display().to_string());
            } else if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// The dataset's version after checking that it is complete: its manifest verifies.
pub(crate) fn complete_version(dir: &Path) -> String {
    let m = DatasetManifest::read(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let bad = m.verify(dir).unwrap();
    assert!(bad.is_empty(), "{}: incomplete dataset, {bad:?}", dir.display());
    m.dataset_hash()
}

/// The published ECtHR release of the fixtures.
pub(crate) fn release() -> PathBuf {
    lexbench_core::testing::fixtures_dir().join("tum_release")
}

/// A second release, differing from the real one by its last training pair, in `dir`.
pub(crate) fn other_release(dir: &Path) -> PathBuf {
    let out = dir.join("release-b");
    std::fs::create_dir_all(&out).unwrap();
    for e in std::fs::read_dir(release()).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let text = if p.file_name().unwrap() == "training.jsonl" {
            let lines: Vec<&str> = text.lines().collect();
            lines[..lines.len() - 1].join("\n") + "\n"
        } else {
            text
        };
        std::fs::write(out.join(p.file_name().unwrap()), text).unwrap();
    }
    out
}

#[test]
fn names_are_never_paths() {
    let root = scratch("names");
    let data = root.join("data");
    // A crawl and a dataset that must survive every refused command.
    std::fs::create_dir_all(data.join("raw/objects")).unwrap();
    std::fs::write(data.join("raw/manifest.jsonl"), "{\"kept\": true}\n").unwrap();
    std::fs::create_dir_all(data.join("datasets/keep")).unwrap();
    std::fs::write(data.join("datasets/keep/manifest.json"), "{}\n").unwrap();
    let before = tree(&data);
    let outside = root.join("outside");
    let rel = release();
    let rel = rel.to_str().unwrap();
    for name in [
        "",
        "../raw",
        ".",
        "..",
        outside.to_str().unwrap(),
        "a/b",
        ".hidden",
    ] {
        for args in [
            vec!["import", "release", rel, "--name", name],
            vec!["build", "ecthr", "--name", name],
            vec!["build", "bsard", "--name", name],
            vec!["split", "keep", "--name", name],
            vec!["pipeline", "--name", name],
            vec!["run", "bm25", "--dataset", name, "--split", "test"],
            vec!["run", "bm25", "--dataset", "keep", "--split", name],
        ] {
            let out = lexbench(&data, &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} accepted: {stderr}");
            assert!(stderr.contains("invalid"), "{args:?}: {stderr}");
            assert_eq!(tree(&data), before, "{args:?} changed the data directory");
            assert!(!outside.exists(), "{args:?} wrote {}", outside.display());
            assert!(!root.join("raw").exists() && !root.join("a").exists());
        }
    }
    assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
}

#[test]
fn runs_and_submissions_stay_in_their_data_directory() {
    let root = scratch("paths");
    let data = root.join("data");
    let other = root.join("other");
    sample_data(&data);
    sample_data(&other);
    let other_before = tree(&other);

    // `run bm25 --dataset ../../other/datasets/ecthr` would write into the other directory's dataset.
    let out = lexbench(
        &data,
        &[
            "run",
            "bm25",
            "--dataset",
            "../../other/datasets/ecthr",
            "--split",
            "test",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tree(&other), other_before);

    // `submit --dataset /abs/path/datasets/ecthr` would be accepted without a sidecar.
    let run = data.join("runs/ecthr/test/bm25.trec");
    let abs = other.join("datasets/ecthr");
    let out = lexbench(
        &data,
        &[
            "submit",
            run.to_str().unwrap(),
            "--dataset",
            abs.to_str().unwrap(),
            "--split",
            "test",
            "--name",
            "path-dataset",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entries = data.join("leaderboard/entries");
    let n_entries = std::fs::read_dir(&entries).unwrap().count();

    // An entry written before names were checked, whose dataset is a path: left out, never followed.
    let any = std::fs::read_dir(&entries)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut entry: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&any).unwrap()).unwrap();
    let escape = root.join("escaped");
    entry["dataset"]["name"] = serde_json::Value::String(escape.join("x").display().to_string());
    entry["id"] = "old-entry".into();
    // Sealed again (anyone can compute a seal): the leaderboard still never follows the path.
    entry["seal"] = lexbench_leaderboard::entry::seal_of(&entry).into();
    std::fs::write(entries.join("old-entry.json"), entry.to_string()).unwrap();
    let out = lexbench(&data, &["leaderboard"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("is not a name"), "{stderr}");
    assert!(
        !escape.exists(),
        "the leaderboard wrote outside the data directory"
    );
    assert_eq!(std::fs::read_dir(&entries).unwrap().count(), n_entries + 1);
    assert_eq!(tree(&other), other_before);
}

/// Writes the journal entries the process `pid` would have left for `leftovers` (kind, path, and
/// where an old version belongs), as a process killed mid-write leaves them.
pub(crate) fn journal(data: &Path, pid: u32, leftovers: &[(Kind, String, Option<&str>)]) {
    for (n, (kind, path, target)) in leftovers.iter().enumerate() {
        let entry = Entry {
            kind: *kind,
            path: path.clone(),
            target: target.map(str::to_owned),
            folder: None,
            token: None,
        };
        lexbench_core::journal::write_entry(data, pid, n as u64, &entry).unwrap();
    }
}

/// Issue 29, item 1: files a user keeps in the data directory whose names look like lexbench's
/// temporaries (with "pids" of no running process) are neither renamed nor removed by the next
/// command: recovery acts only on what the write journal names.
#[test]
fn a_users_files_that_look_like_temporaries_survive_every_command() {
    let root = scratch("users-files");
    let data = root.join("data");
    sample_data(&data);
    let files = [
        "notes/.report.md.old-20231231",
        ".thesis.tex.old-20240101",
        ".draft.tmp.2024.1",
        "datasets/.notes.old-99999999",
        "runs/ecthr/.mine.trec.tmp.99999999.0",
    ];
    for f in files {
        let p = data.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, f).unwrap();
    }
    std::fs::create_dir_all(data.join(".photos.partial-7777777")).unwrap();
    std::fs::write(data.join(".photos.partial-7777777/a.jpg"), "jpg").unwrap();
    for args in [
        &["stats", "ecthr"][..],
        &["leaderboard"],
        &["run", "bm25", "--dataset", "ecthr", "--split", "test"],
    ] {
        let out = lexbench(&data, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for f in files {
        assert_eq!(std::fs::read_to_string(data.join(f)).unwrap(), f, "{f}");
    }
    assert!(!data.join("notes/report.md").exists(), "not renamed");
    assert!(data.join(".photos.partial-7777777/a.jpg").is_file());
    std::fs::remove_dir_all(&root).ok();
}

/// Issue 54, item 1: a journal entry in a data directory that came from someone else is a claim,
/// not a proof. An entry whose path runs through a symbolic link out of the data directory, one that
/// names a user's file in a temporary's form, and a journal folder linked to another data
/// directory's journal: the next command touches none of what they name, goes on, and says what it
/// ignored.
#[test]
fn a_journal_entry_is_never_followed_out_of_the_data_directory() {
    let root = scratch("journal-out");
    let data = root.join("data");
    sample_data(&data);
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(elsewhere.join(".photos.partial-999991")).unwrap();
    std::fs::write(elsewhere.join(".photos.partial-999991/a.jpg"), "jpg").unwrap();
    std::fs::write(elsewhere.join(".x.tmp.999991.0"), "mine").unwrap();
    std::fs::create_dir_all(elsewhere.join(".y.old-999991")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, data.join("ext")).unwrap();
    std::fs::create_dir_all(data.join("notes")).unwrap();
    std::fs::write(data.join("notes/.thesis.tex.old-20240101"), "chapter 1").unwrap();
    let journal_dir = data.join(lexbench_core::journal::JOURNAL_DIR);
    std::fs::create_dir_all(&journal_dir).unwrap();
    for (file, text) in [
        (
            "999991-0.json",
            r#"{"kind":"partial","path":"ext/.photos.partial-999991"}"#,
        ),
        ("999991-1.json", r#"{"kind":"tmp","path":"ext/.x.tmp.999991.0"}"#),
        (
            "999991-2.json",
            r#"{"kind":"old","path":"ext/.y.old-999991","target":"ext/y"}"#,
        ),
        (
            "20240101-0.json",
            r#"{"kind":"old","path":"notes/.thesis.tex.old-20240101","target":"notes/thesis.tex"}"#,
        ),
    ] {
        std::fs::write(journal_dir.join(file), format!("{text}\n")).unwrap();
    }
    let out = lexbench(&data, &["stats", "ecthr"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        elsewhere.join(".photos.partial-999991/a.jpg").is_file(),
        "{stderr}"
    );
    assert!(elsewhere.join(".x.tmp.999991.0").is_file(), "{stderr}");
    assert!(elsewhere.join(".y.old-999991").is_dir(), "{stderr}");
    assert!(!elsewhere.join("y").exists(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(data.join("notes/.thesis.tex.old-20240101")).unwrap(),
        "chapter 1"
    );
    assert!(!data.join("notes/thesis.tex").exists());
    assert_eq!(
        stderr.matches("ignored the write-journal entry").count(),
        4,
        "{stderr}"
    );
    assert!(stderr.contains("ext/.photos.partial-999991"), "{stderr}");

    // A journal folder that is a link to another data directory's journal: that one's entries are
    // neither acted on nor consumed.
    let other = root.join("other");
    sample_data(&other);
    let pid = dead_pid();
    let tmp = format!("runs/.a.trec.tmp.{pid}.0.{T}");
    std::fs::write(other.join(&tmp), "half").unwrap();
    std::fs::write(data.join(&tmp), "mine").unwrap();
    journal(&other, pid, &[(Kind::Tmp, tmp.clone(), None)]);
    std::fs::remove_dir_all(&journal_dir).unwrap();
    std::os::unix::fs::symlink(other.join(lexbench_core::journal::JOURNAL_DIR), &journal_dir).unwrap();
    let out = lexbench(&data, &["stats", "ecthr"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(std::fs::read_to_string(data.join(&tmp)).unwrap(), "mine");
    assert!(other.join(&tmp).is_file(), "{stderr}");
    assert_eq!(leftovers(&other).len(), 2, "{:?}", leftovers(&other));
    // Its own command settles it.
    let out = lexbench(&other, &["stats", "ecthr"]);
    assert!(out.status.success());
    assert!(leftovers(&other).is_empty(), "{:?}", leftovers(&other));
    std::fs::remove_dir_all(&root).ok();
}

/// A writer's token ([`lexbench_core::journal::token`]), for the leftovers of dead processes made here.
pub(crate) const T: &str = "0123456789abcdef";

/// The id of a process that has exited.
pub(crate) fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn interrupted_replacements_and_temporary_files_are_settled_by_the_next_command() {
    let root = scratch("recover");
    let data = root.join("data");
    sample_data(&data);
    let ds = data.join("datasets/ecthr");
    let version = complete_version(&ds);
    let pid = dead_pid();
    // The state a kill between the fallback swap's two renames leaves: the old version parked, the
    // new one complete beside it, no dataset under its name.
    let parked = data.join(format!("datasets/.ecthr.old-{pid}.{T}"));
    std::fs::rename(&ds, &parked).unwrap();
    let new = data.join(format!("datasets/.ecthr.partial-{pid}.{T}"));
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(new.join("queries.jsonl"), "{}\n").unwrap();
    // Temporary files of a killed `submit` and `leaderboard`.
    let tmp_entry = data.join(format!("leaderboard/entries/.ecthr__test__x.tmp.{pid}.0.{T}"));
    std::fs::write(&tmp_entry, "{\"half").unwrap();
    let tmp_page = data.join(format!("leaderboard/site/.index.html.tmp.{pid}.3.{T}"));
    std::fs::write(&tmp_page, "<html").unwrap();
    // What the killed process's write journal says it left.
    journal(
        &data,
        pid,
        &[
            (
                Kind::Old,
                format!("datasets/.ecthr.old-{pid}.{T}"),
                Some("datasets/ecthr"),
            ),
            (Kind::Partial, format!("datasets/.ecthr.partial-{pid}.{T}"), None),
            (
                Kind::Tmp,
                format!("leaderboard/entries/.ecthr__test__x.tmp.{pid}.0.{T}"),
                None,
            ),
            (
                Kind::Tmp,
                format!("leaderboard/site/.index.html.tmp.{pid}.3.{T}"),
                None,
            ),
        ],
    );

    let out = lexbench(&data, &["leaderboard"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("restored"), "{stderr}");
    assert_eq!(complete_version(&ds), version, "the previous version is back");
    assert!(leftovers(&data).is_empty(), "{:?}", leftovers(&data));

    // Leftovers of a process that is still running are its own: left alone.
    let live = data.join(format!("datasets/.ecthr.partial-{}.{T}", std::process::id()));
    std::fs::create_dir_all(&live).unwrap();
    let out = lexbench(&data, &["stats", "ecthr"]);
    assert!(out.status.success());
    assert!(live.is_dir());
    std::fs::remove_dir_all(&live).unwrap();
}

#[test]
fn building_without_parsed_judgments_names_the_file() {
    let root = scratch("no-judgments");
    let data = root.join("data");
    sample_data(&data);
    std::fs::remove_file(data.join("parsed/ecthr/judgments.jsonl")).unwrap();
    let out = lexbench(&data, &["build", "ecthr"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("parsed/ecthr/judgments.jsonl"), "{stderr}");
    assert!(stderr.contains("lexbench parse store"), "{stderr}");
}

#[test]
fn plots_do_not_change_the_dataset_version() {
    let root = scratch("plots");
    let data = root.join("data");
    // The pipeline draws the card's plots and submits BM25 on that version.
    sample_data(&data);
    let ds = data.join("datasets/ecthr");
    assert!(ds.join("plots").is_dir(), "the pipeline draws plots");
    let with = complete_version(&ds);
    // Rebuilt without plots, with the pipeline's split configuration: only the plots differ.
    let cfg_copy = root.join("split_config.json");
    std::fs::copy(ds.join("split_config.json"), &cfg_copy).unwrap();
    let out = lexbench(
        &data,
        &["build", "ecthr", "--split-config", cfg_copy.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!ds.join("plots").exists());
    assert_eq!(complete_version(&ds), with, "plots changed the dataset's version");
    assert!(lexbench(&data, &["leaderboard"]).status.success());
    let md = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    let stale: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with('|') && l.contains('†'))
        .collect();
    assert!(
        stale.is_empty(),
        "entries marked stale after a rebuild without plots: {stale:?}"
    );
}

#[test]
fn the_card_states_which_labels_it_holds() {
    let root = scratch("labels");
    let data = root.join("data");
    sample_data(&data);
    let card = |name: &str| std::fs::read_to_string(data.join(format!("datasets/{name}/card.md"))).unwrap();
    assert!(card("ecthr").contains("`--labels all`"), "{}", card("ecthr"));
    let out = lexbench(&data, &["build", "ecthr", "--name", "rel", "--labels", "release"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(card("rel").contains("`--labels release`"), "{}", card("rel"));
    let out = lexbench(&data, &["build", "ecthr", "--name", "bad", "--labels", "some"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--labels"));
}
