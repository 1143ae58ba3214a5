//! Kill tests (issue 20, item 2): every command that writes into the data directory is killed with
//! SIGKILL (no destructor, no cleanup runs) at seeded random moments, uniform over its uninterrupted
//! duration, [`KILLS`] times; what it leaves is checked with the crates' own readers before the next
//! command runs, and that next command must complete. Concurrent writers run side by side.
//!
//! Properties checked (each loop prints one line: command, kills, interrupted, finished before the
//! kill, corrupt states, which must be 0):
//! - `import release` and `build ecthr`, alternating two inputs: the dataset is always one of the two
//!   complete versions (manifest verified), and the next command leaves no `.partial-`, `.old-` or
//!   `.tmp.` leftover;
//! - `submit`: every entry file reads and passes its integrity check
//!   ([`lexbench_leaderboard::entry::read_entries`], what `lexbench leaderboard` reads, and
//!   [`read_entry`] of each file), no entry is lost, the killed submission is recorded whole (the
//!   entry an uninterrupted submit of the same run writes, but for its id, time and seal) or not at
//!   all, and the next `submit` of the same run adds exactly one such entry;
//! - `leaderboard`: every page and plot present is the one an uninterrupted render writes, and the
//!   next render completes with the same files;
//! - `train` of a tiny BERT (3 epochs, a checkpoint each): the output folder is absent, or every
//!   checkpoint in it loads (state, parameters, optimiser moments) and is, bit for bit, the
//!   uninterrupted run's checkpoint of that epoch (timings aside); the same command then resumes
//!   (or starts over) and ends with the uninterrupted run's checkpoints, model, summary and log, bit
//!   for bit but for timings;
//! - `crawl hudoc` against the local fake HUDOC: every manifest line but a torn last one parses and
//!   names an object that hashes to its name and has its size, every stored object hashes to its
//!   name, index files parse whole; the next crawl completes, and the store then holds what an
//!   uninterrupted crawl's holds (objects, index files, manifest but fetch times);
//! - 16 `submit`s at once with 16 names (started together on the leftovers of killed writers, which
//!   each of them settles), then 16 with one name (`submit` never replaces an entry:
//!   [`lexbench_leaderboard::entry::write_new`] gives each its own id), all land: 16 entries that
//!   verify each time, and no temporary file is left even before another command runs; two
//!   `build ecthr` of one dataset at once leave one of the two complete versions and no leftover;
//!   two `leaderboard` renders at once leave the pages of an uninterrupted render.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lexbench_core::dataset::DatasetManifest;
use lexbench_core::rng::SplitMix64;
use lexbench_core::{ManifestEntry, sha256_hex};
use lexbench_leaderboard::Entry;
use lexbench_leaderboard::entry::{entries_dir, entry_files, read_entries, read_entry};

use crate::common::{lexbench, lexbench_spawn, sample_data, tiny_bert};
use crate::data_safety::{dead_pid, journal, leftovers, other_release, release, scratch, tree};
use lexbench_core::journal::Kind;

/// Kills per command.
const KILLS: usize = 50;

/// How one kill loop went.
struct Tally {
    command: &'static str,
    kills: usize,
    interrupted: usize,
    finished: usize,
    corrupt: Vec<String>,
    /// What else the loop counted, for its line.
    note: String,
}

impl Tally {
    fn new(command: &'static str) -> Self {
        Self {
            command,
            kills: 0,
            interrupted: 0,
            finished: 0,
            corrupt: Vec::new(),
            note: String::new(),
        }
    }

    /// Starts `lexbench --data DATA ARGS…`, sends it SIGKILL after `at` and counts whether that
    /// interrupted it or it had finished. A run that failed on its own is a corrupt state: the
    /// previous kill left something it could not read.
    fn kill(&mut self, data: &Path, args: &[&str], at: Duration) {
        let mut child = lexbench_spawn(data, args);
        std::thread::sleep(at);
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        self.kills += 1;
        if out.status.signal() == Some(9) {
            self.interrupted += 1;
        } else if out.status.success() {
            self.finished += 1;
        } else {
            self.corrupt.push(format!(
                "kill {} at {at:?}: {args:?} failed by itself ({}): {}",
                self.kills,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }

    /// Records the check of the state the last kill left; false when it failed.
    fn check(&mut self, at: Duration, state: Result<(), String>) -> bool {
        if let Err(e) = state {
            self.corrupt.push(format!("kill {} at {at:?}: {e}", self.kills));
        }
        self.corrupt.is_empty()
    }

    /// Prints the loop's line; fails on a corrupt state, or when too few kills interrupted the command
    /// for the loop to test anything.
    fn finish(self) {
        eprintln!(
            "{}: {} kills, {} interrupted, {} finished before the kill, {} corrupt{}",
            self.command,
            self.kills,
            self.interrupted,
            self.finished,
            self.corrupt.len(),
            self.note
        );
        assert!(self.corrupt.is_empty(), "{}: {:#?}", self.command, self.corrupt);
        assert_eq!(self.kills, KILLS, "{}", self.command);
        assert!(
            self.interrupted >= self.kills / 4,
            "{}: only {} of {} kills interrupted the command: the loop tests too little",
            self.command,
            self.interrupted,
            self.kills
        );
    }
}

/// A moment uniform over `duration`.
fn moment(rng: &mut SplitMix64, duration: Duration) -> Duration {
    duration.mul_f64(rng.unit_f64())
}

/// Runs `args` uninterrupted `n` times, each required to succeed; returns the shortest duration
/// (start-up included, as the kills count it).
fn shortest_run(data: &Path, args: &[&str], n: usize) -> Duration {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = lexbench(data, args);
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// The next command has run: nothing an interrupted write leaves may remain.
fn no_leftovers(data: &Path) -> Result<(), String> {
    let left = leftovers(data);
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("leftovers after the next command: {left:?}"))
    }
}

/// `Err(stderr)` unless the command succeeded.
fn succeeds(data: &Path, args: &[&str]) -> Result<(), String> {
    let out = lexbench(data, args);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the next {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The dataset's version, after checking that it is complete: its manifest verifies.
fn verified_version(dir: &Path) -> Result<String, String> {
    let m = DatasetManifest::read(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bad = m.verify(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if bad.is_empty() {
        Ok(m.dataset_hash())
    } else {
        Err(format!("{}: incomplete dataset, {bad:?}", dir.display()))
    }
}

/// Kills `lexbench ARGS…` [`KILLS`] times, alternating between two inputs that give two different
/// datasets `name`: after every kill the dataset is one of the two, complete, and the next command
/// (`stats`) leaves no leftover.
fn dataset_loop(data: &Path, command: &'static str, name: &str, variants: [&[&str]; 2], seed: u64) {
    let dir = data.join("datasets").join(name);
    let mut versions = Vec::new();
    let mut duration = Duration::MAX;
    for args in variants {
        duration = duration.min(shortest_run(data, args, 2));
        versions.push(verified_version(&dir).unwrap());
    }
    assert_ne!(
        versions[0], versions[1],
        "the two inputs must give different datasets"
    );
    let mut rng = SplitMix64::new(seed);
    let mut tally = Tally::new(command);
    // Kills after the swap: the killed command's version had replaced the other.
    let mut replaced = 0;
    let mut current = versions[1].clone();
    for i in 0..KILLS {
        let at = moment(&mut rng, duration);
        tally.kill(data, variants[i % 2], at);
        let state = (|| {
            let v = verified_version(&dir)?;
            if !versions.contains(&v) {
                return Err(format!("dataset {v} is neither version"));
            }
            if v != current {
                replaced += 1;
                current = v;
            }
            succeeds(data, &["stats", name])?;
            no_leftovers(data)
        })();
        if !tally.check(at, state) {
            break;
        }
    }
    tally.note =
        format!(" ({replaced} kills after the new version was in place; uninterrupted: {duration:?})");
    tally.finish();
}

#[test]
fn killed_imports_and_builds_leave_the_old_or_the_new_dataset() {
    let root = scratch("kill");
    let data = root.join("data");
    let b = other_release(&root);
    let a = release();
    dataset_loop(
        &data,
        "import release",
        "ecthr-release",
        [
            &["import", "release", a.to_str().unwrap()],
            &["import", "release", b.to_str().unwrap()],
        ],
        21,
    );
    sample_data(&data);
    dataset_loop(
        &data,
        "build ecthr",
        "ecthr",
        [
            &["build", "ecthr", "--seed", "1"],
            &["build", "ecthr", "--seed", "2"],
        ],
        22,
    );
    std::fs::remove_dir_all(&root).ok();
}

/// Every entry of `dir`, after checking each as the leaderboard does: every `*.json` file reads as an
/// entry of a known schema whose seal matches its content (none left out as tampered or too new).
fn verified_entries(dir: &Path) -> Result<Vec<Entry>, String> {
    let set = read_entries(dir).map_err(|e| format!("an entry does not read: {e}"))?;
    if !set.tampered.is_empty() || !set.skipped.is_empty() {
        return Err(format!(
            "entries left out: {:?}",
            [set.tampered, set.skipped].concat()
        ));
    }
    let files = entry_files(dir).map_err(|e| e.to_string())?;
    for f in &files {
        let e = read_entry(f).map_err(|e| format!("{e}"))?;
        if f.file_stem().is_none_or(|s| *s != *e.id) {
            return Err(format!("{}: its id is {}", f.display(), e.id));
        }
    }
    if files.len() != set.entries.len() {
        return Err(format!(
            "{} entry files, {} entries",
            files.len(),
            set.entries.len()
        ));
    }
    Ok(set.entries)
}

/// `Ok` when `e` records the same submission as `reference`: equal in everything but the id, the
/// time and the seal.
fn same_submission(e: &Entry, reference: &Entry) -> Result<(), String> {
    let mut e = e.clone();
    e.id.clone_from(&reference.id);
    e.submitted_at.clone_from(&reference.submitted_at);
    e.seal.clone_from(&reference.seal);
    if e == *reference {
        Ok(())
    } else {
        Err(format!(
            "entry {} is not the submission of an uninterrupted run",
            e.id
        ))
    }
}

#[test]
fn killed_submissions_are_recorded_whole_or_not_at_all() {
    let root = scratch("kill-submit");
    let data = root.join("data");
    sample_data(&data);
    let run = data.join("runs/ecthr/test/bm25.trec");
    let submit = [
        "submit",
        run.to_str().unwrap(),
        "--dataset",
        "ecthr",
        "--split",
        "test",
        "--name",
        "again",
    ];
    let dir = entries_dir(&data);
    let before = verified_entries(&dir).unwrap();
    let duration = shortest_run(&data, &submit, 2);
    let mut entries = verified_entries(&dir).unwrap();
    assert_eq!(entries.len(), before.len() + 2);
    let reference = entries.iter().find(|e| e.system == "again").unwrap().clone();
    let mut rng = SplitMix64::new(12);
    let mut tally = Tally::new("submit");
    let mut recorded = 0;
    for _ in 0..KILLS {
        let at = moment(&mut rng, duration);
        tally.kill(&data, &submit, at);
        let state = (|| {
            let ids: BTreeSet<String> = entries.iter().map(|e| e.id.clone()).collect();
            let now = verified_entries(&dir)?;
            let kept = now.iter().filter(|e| ids.contains(&e.id)).count();
            if kept != ids.len() {
                return Err(format!("{} entries lost", ids.len() - kept));
            }
            let new: Vec<&Entry> = now.iter().filter(|e| !ids.contains(&e.id)).collect();
            match new[..] {
                [] => {}
                [e] => {
                    same_submission(e, &reference)?;
                    recorded += 1;
                }
                _ => return Err(format!("{} entries for one submission", new.len())),
            }
            // The next submit of the same run completes, adding its entry and nothing else.
            succeeds(&data, &submit)?;
            let next = verified_entries(&dir)?;
            let added: Vec<&Entry> = next
                .iter()
                .filter(|e| !now.iter().any(|n| n.id == e.id))
                .collect();
            match added[..] {
                [e] if next.len() == now.len() + 1 => same_submission(e, &reference)?,
                _ => {
                    return Err(format!(
                        "the next submit took {} entries to {}",
                        now.len(),
                        next.len()
                    ));
                }
            }
            entries = next;
            no_leftovers(&data)
        })();
        if !tally.check(at, state) {
            break;
        }
    }
    tally.note = format!(" ({recorded} killed submissions recorded whole, the others absent)");
    tally.finish();
    std::fs::remove_dir_all(&root).ok();
}

/// The rendered leaderboard (`DATA/leaderboard` without its entries and hidden files): relative path
/// → content.
fn site(data: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = tree(&data.join("leaderboard"));
    files.retain(|path, _| {
        !path.starts_with("entries/")
            && !Path::new(path)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
    });
    files
}

#[test]
fn killed_renders_leave_whole_pages() {
    let root = scratch("kill-render");
    let data = root.join("data");
    sample_data(&data);
    let render = ["leaderboard"];
    let duration = shortest_run(&data, &render, 2);
    let reference = site(&data);
    assert!(reference.contains_key("index.md") && reference.contains_key("site/index.html"));
    let mut rng = SplitMix64::new(13);
    let mut tally = Tally::new("leaderboard");
    for _ in 0..KILLS {
        let at = moment(&mut rng, duration);
        tally.kill(&data, &render, at);
        let state = (|| {
            let now = site(&data);
            if let Some(p) = reference.keys().find(|p| !now.contains_key(*p)) {
                return Err(format!("{p} is gone"));
            }
            if let Some(p) = now.keys().find(|p| now.get(*p) != reference.get(*p)) {
                return Err(format!("{p} is not the page an uninterrupted render writes"));
            }
            succeeds(&data, &render)?;
            if site(&data) != reference {
                return Err("the next render wrote other pages".into());
            }
            no_leftovers(&data)
        })();
        if !tally.check(at, state) {
            break;
        }
    }
    tally.finish();
    std::fs::remove_dir_all(&root).ok();
}

/// `lexbench train` of the CPU DPR preset on the tiny BERT `base`, for 3 short epochs, into `out`.
fn train_args(base: &Path, out: &Path) -> Vec<String> {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines/configs/ecthr/cpu/dpr.toml");
    [
        "train",
        config.to_str().unwrap(),
        "--base",
        base.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--epochs",
        "3",
        // The tiny BERT has 64 positions.
        "--set",
        "data.max_query_len=16",
        "--set",
        "data.max_doc_len=32",
        "--quiet",
        // A checkpoint within the epoch every 30 ms: kills land between updates too.
        "--checkpoint-minutes",
        "0.0005",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A training file's JSON without the wall-clock measurements, which no two runs share.
fn without_timings(mut v: serde_json::Value) -> serde_json::Value {
    match &mut v {
        serde_json::Value::Object(m) => {
            for key in ["train_s", "val_s", "examples_per_s"] {
                m.remove(key);
            }
            for x in m.values_mut() {
                *x = without_timings(x.take());
            }
        }
        serde_json::Value::Array(a) => {
            for x in a.iter_mut() {
                *x = without_timings(x.take());
            }
        }
        _ => {}
    }
    v
}

/// Does the file `name` hold `got` where an uninterrupted run wrote `want`? JSON and JSON Lines
/// files are compared value for value without timings, every other file byte for byte.
fn same_file(name: &str, got: &[u8], want: &[u8]) -> bool {
    let values = |bytes: &[u8]| -> Option<Vec<serde_json::Value>> {
        let text = std::str::from_utf8(bytes).ok()?;
        if name.ends_with(".jsonl") {
            text.lines()
                .map(|l| serde_json::from_str(l).ok().map(without_timings))
                .collect()
        } else {
            Some(vec![without_timings(serde_json::from_str(text).ok()?)])
        }
    };
    if name.ends_with(".json") || name.ends_with(".jsonl") {
        values(got).is_some() && values(got) == values(want)
    } else {
        got == want
    }
}

/// What a killed `train` left in its output folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trained {
    /// No output folder.
    Absent,
    /// A folder without a checkpoint: the next run starts over.
    Started,
    /// Checkpoints up to this epoch: the next run resumes after it.
    Checkpoint(usize),
    /// A checkpoint within an epoch, after this update: the next run resumes from it.
    Within(u64),
    /// Training had ended: the summary says finished.
    Complete,
}

/// Checks the output folder `out` of a killed `train` against the uninterrupted run's `reference`:
/// every checkpoint in it loads (state, parameters, optimiser moments) and is that run's checkpoint
/// of its epoch; a model folder holds the model's files, and they load; a summary says training ended
/// and is that run's. Hidden leftovers are allowed (the next command removes them).
fn train_state(out: &Path, reference: &Path) -> Result<Trained, String> {
    use lexbench_baselines::train::params::load_tensors;
    use lexbench_baselines::train::trainer::State;
    if !out.exists() {
        return Ok(Trained::Absent);
    }
    let visible = |dir: &Path| -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        rd.map(|e| e.unwrap().path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect()
    };
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut latest = 0;
    let mut within = None;
    for dir in visible(&out.join("checkpoints")) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(step) = name.strip_prefix("step-") {
            // Within an epoch: no uninterrupted run keeps one to compare with; it must load whole.
            let step: u64 = step
                .parse()
                .map_err(|_| format!("{}: not a checkpoint", dir.display()))?;
            let state: State = lexbench_core::io::read_json(&dir.join("state.json"))
                .map_err(|e| format!("checkpoint after update {step} without its state: {e}"))?;
            if state.step != step || state.within.is_none() {
                return Err(format!("checkpoint step-{step} says {state:?}"));
            }
            for f in visible(&dir) {
                if f.extension().is_some_and(|x| x == "safetensors") {
                    load_tensors(&f, &lexbench_baselines::Device::Cpu).map_err(|e| e.to_string())?;
                }
            }
            read(&dir.join("epoch-inputs.json"))?;
            within = within.max(Some(step));
            continue;
        }
        let epoch: usize = name
            .strip_prefix("epoch-")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("{}: not a checkpoint", dir.display()))?;
        let state: State = lexbench_core::io::read_json(&dir.join("state.json"))
            .map_err(|e| format!("checkpoint {epoch} without its state: {e}"))?;
        if state.epoch != epoch {
            return Err(format!("checkpoint {epoch} says epoch {}", state.epoch));
        }
        let want = reference.join("checkpoints").join(&name);
        for f in visible(&dir) {
            let file = f.file_name().unwrap().to_string_lossy().into_owned();
            if file.ends_with(".safetensors") {
                load_tensors(&f, &lexbench_baselines::Device::Cpu).map_err(|e| e.to_string())?;
            }
            if !same_file(&file, &read(&f)?, &read(&want.join(&file))?) {
                return Err(format!(
                    "checkpoint {epoch}: {file} is not the uninterrupted run's"
                ));
            }
        }
        if visible(&dir).len() != visible(&want).len() {
            return Err(format!("checkpoint {epoch} lacks files"));
        }
        latest = latest.max(epoch);
    }
    if (latest > 0 || within.is_some())
        && read(&out.join("config.toml"))? != read(&reference.join("config.toml"))?
    {
        return Err("config.toml is not the configuration of the checkpoints".into());
    }
    let model = out.join("model");
    if model.exists() {
        let names = |d: &Path| -> BTreeSet<PathBuf> {
            visible(d).iter().map(|p| p.file_name().unwrap().into()).collect()
        };
        if names(&model) != names(&reference.join("model")) {
            return Err(format!("the model folder holds {:?}", names(&model)));
        }
        for f in visible(&model) {
            if f.extension().is_some_and(|x| x == "safetensors") {
                load_tensors(&f, &lexbench_baselines::Device::Cpu).map_err(|e| e.to_string())?;
            }
        }
    }
    let summary = out.join("summary.json");
    if summary.exists() {
        if !same_file(
            "summary.json",
            &read(&summary)?,
            &read(&reference.join("summary.json"))?,
        ) {
            return Err("summary.json is not the uninterrupted run's".into());
        }
        return Ok(Trained::Complete);
    }
    Ok(match within {
        Some(step) => Trained::Within(step),
        None if latest > 0 => Trained::Checkpoint(latest),
        None => Trained::Started,
    })
}

/// `Ok` when the output folder `out` holds what the uninterrupted run wrote in `reference`: the same
/// files, each equal ([`same_file`]: bit for bit, timings aside).
fn same_training(out: &Path, reference: &Path) -> Result<(), String> {
    let (got, want) = (tree(out), tree(reference));
    if got.keys().ne(want.keys()) {
        return Err(format!(
            "files {:?}, the uninterrupted run wrote {:?}",
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        ));
    }
    for (name, bytes) in &got {
        if !same_file(name, bytes, &want[name]) {
            return Err(format!("{name} is not the uninterrupted run's"));
        }
    }
    Ok(())
}

#[test]
fn killed_training_resumes_to_the_uninterrupted_result() {
    let root = scratch("kill-train");
    let data = root.join("data");
    sample_data(&data);
    let base = root.join("tiny-bert");
    tiny_bert(&base);
    let reference = data.join("models/reference");
    let out = data.join("models/killed");
    let args = train_args(&base, &out);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let t = Instant::now();
    // Two uninterrupted runs: the shorter sets the kills' range, and they must agree.
    let twice = data.join("models/reference-2");
    let mut duration = Duration::MAX;
    for dir in [&reference, &twice] {
        let whole = train_args(&base, dir);
        let whole: Vec<&str> = whole.iter().map(String::as_str).collect();
        duration = duration.min(shortest_run(&data, &whole, 1));
    }
    assert!(
        reference.join("checkpoints/epoch-3/state.json").is_file(),
        "the uninterrupted run wrote no third checkpoint"
    );
    same_training(&twice, &reference).unwrap();
    let mut rng = SplitMix64::new(14);
    let mut tally = Tally::new("train");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..KILLS {
        std::fs::remove_dir_all(&out).ok();
        let at = moment(&mut rng, duration);
        tally.kill(&data, &args, at);
        let state = (|| {
            let left = train_state(&out, &reference)?;
            let key = match left {
                Trained::Checkpoint(_) => "checkpoint".to_owned(),
                Trained::Within(_) => "within an epoch".to_owned(),
                other => format!("{other:?}").to_lowercase(),
            };
            *seen.entry(key).or_default() += 1;
            succeeds(&data, &args)?;
            same_training(&out, &reference)?;
            no_leftovers(&data)
        })();
        if !tally.check(at, state) {
            break;
        }
    }
    tally.note = format!(
        " (left: {seen:?}; every next run ended equal to the uninterrupted one; uninterrupted: \
         {duration:?}, the loop: {:?})",
        t.elapsed()
    );
    tally.finish();
    std::fs::remove_dir_all(&root).ok();
}

/// The fake HUDOC's documents: 24 judgments, every fourth without a body.
fn hudoc_items() -> Vec<lexbench_crawlers::fake_hudoc::FakeItem> {
    use lexbench_crawlers::date::Date;
    (0..24)
        .map(|n| lexbench_crawlers::fake_hudoc::FakeItem {
            itemid: format!("001-{}", 600_000 + n),
            docname: format!("CASE OF KILL {n} v. NOWHERE"),
            doctype: "HEJUD".into(),
            lang: "ENG".into(),
            kpdate: Date::from_days(Date { y: 2020, m: 1, d: 1 }.days() + n),
            placeholder: false,
            docx: (n % 4 != 0).then(|| format!("docx body {n} ").repeat(200).into_bytes()),
            html: None,
            columns: Default::default(),
        })
        .collect()
}

/// What a raw store holds: objects and index files (relative path → content), and the manifest's
/// lines without their fetch times, sorted.
type StoreContent = (BTreeMap<String, Vec<u8>>, BTreeMap<String, Vec<u8>>, Vec<String>);

fn store_content(raw: &Path) -> Result<StoreContent, String> {
    let manifest = raw.join("manifest.jsonl");
    let text = std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let mut lines = Vec::new();
    for l in text.lines() {
        let mut e: ManifestEntry = serde_json::from_str(l).map_err(|e| format!("manifest: {e}: {l}"))?;
        e.fetched_at.clear();
        lines.push(serde_json::to_string(&e).unwrap());
    }
    lines.sort();
    Ok((tree(&raw.join("objects")), tree(&raw.join("index")), lines))
}

/// Checks the raw store `raw` a killed crawl left: every manifest line parses (a torn last line, which
/// opening the store cuts off, aside) and names an object that hashes to its name and has its size;
/// every object stored under its final name hashes to that name; every index file parses whole.
/// Returns the number of whole manifest lines and whether a torn last line followed them.
fn raw_state(raw: &Path) -> Result<(usize, bool), String> {
    if !raw.exists() {
        return Ok((0, false));
    }
    let objects = raw.join("objects");
    let object = |sha: &str| std::fs::read(objects.join(&sha[..2]).join(&sha[2..]));
    let manifest = raw.join("manifest.jsonl");
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    let complete = text.rfind('\n').map_or(0, |i| i + 1);
    let whole = text[..complete].lines().count();
    for (n, l) in text[..complete].lines().enumerate() {
        let e: ManifestEntry =
            serde_json::from_str(l).map_err(|e| format!("manifest line {}: {e}", n + 1))?;
        if let Some(sha) = &e.sha256 {
            let bytes = object(sha).map_err(|e| format!("manifest line {}: object {sha}: {e}", n + 1))?;
            if sha256_hex(&bytes) != *sha || bytes.len() as u64 != e.bytes {
                return Err(format!("manifest line {}: object {sha} is not its body", n + 1));
            }
        }
    }
    for (path, bytes) in tree(&objects) {
        let p = Path::new(&path);
        if p.file_name().unwrap().to_string_lossy().starts_with('.') {
            continue;
        }
        if sha256_hex(&bytes) != path.replace('/', "") {
            return Err(format!("object {path} does not hash to its name"));
        }
    }
    for (path, bytes) in tree(&raw.join("index")) {
        if path.starts_with('.') {
            continue;
        }
        let text = String::from_utf8(bytes).map_err(|e| format!("index/{path}: {e}"))?;
        for (n, l) in text.lines().enumerate() {
            serde_json::from_str::<serde_json::Value>(l)
                .map_err(|e| format!("index/{path}:{}: {e}", n + 1))?;
        }
    }
    Ok((whole, complete < text.len()))
}

#[test]
fn killed_crawls_leave_a_store_that_verifies_and_the_next_crawl_completes() {
    use lexbench_crawlers::fake_hudoc::{FakeConfig, FakeServer};
    use lexbench_crawlers::store::RawStore;
    // The server answers on the runtime's own threads while this one runs and kills the crawls.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(FakeServer::start(FakeConfig {
            items: hudoc_items(),
            ..FakeConfig::default()
        }))
        .unwrap();
    let base = server.base_url();
    // Politeness waits (100 requests/s) rather than CPU time make most of a crawl's duration, so
    // the kills stay spread over the whole crawl when other tests load the machine.
    let crawl = [
        "crawl",
        "hudoc",
        "--base-url",
        &base,
        "--since",
        "2020-01-01",
        "--until",
        "2020-12-31",
        "--rate",
        "100",
    ];
    let root = scratch("kill-crawl");
    let reference = root.join("reference");
    let again = root.join("again");
    let duration = shortest_run(&reference, &crawl, 1).min(shortest_run(&again, &crawl, 1));
    let want = store_content(&reference.join("raw")).unwrap();
    assert_eq!(
        store_content(&again.join("raw")).unwrap(),
        want,
        "two uninterrupted crawls must store the same"
    );
    assert_eq!(want.1.len(), 2, "{:?}", want.1.keys());
    let data = root.join("data");
    let mut rng = SplitMix64::new(15);
    let mut tally = Tally::new("crawl hudoc");
    let mut torn = 0;
    // Manifest lines each kill left, to show the kills fall all along the crawl.
    let mut lines = Vec::new();
    for _ in 0..KILLS {
        std::fs::remove_dir_all(&data).ok();
        let at = moment(&mut rng, duration);
        tally.kill(&data, &crawl, at);
        let state = (|| {
            let (n, torn_tail) = raw_state(&data.join("raw"))?;
            lines.push(n);
            torn += usize::from(torn_tail);
            succeeds(&data, &crawl)?;
            let store = RawStore::open(data.join("raw")).map_err(|e| e.to_string())?;
            store.verify().map_err(|e| e.to_string())?;
            if store_content(&data.join("raw"))? != want {
                return Err("the store is not an uninterrupted crawl's".into());
            }
            no_leftovers(&data)
        })();
        if !tally.check(at, state) {
            break;
        }
    }
    lines.sort_unstable();
    tally.note = format!(
        " (manifest lines left: {lines:?} of {}; {torn} torn last lines, cut off by the next crawl; \
         uninterrupted: {duration:?})",
        want.2.len()
    );
    tally.finish();
    drop(server);
    std::fs::remove_dir_all(&root).ok();
}

/// Runs every `args` at once; each must succeed.
fn all_at_once(data: &Path, commands: &[Vec<&str>]) {
    let children: Vec<_> = commands.iter().map(|a| lexbench_spawn(data, a)).collect();
    for (child, args) in children.into_iter().zip(commands) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn sixteen_submissions_at_once_all_land() {
    let root = scratch("concurrent-submit");
    let data = root.join("data");
    sample_data(&data);
    let run = data.join("runs/ecthr/test/bm25.trec");
    let run = run.to_str().unwrap();
    let dir = entries_dir(&data);
    let submit = |name: &'static str| {
        vec![
            "submit",
            run,
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--name",
            name,
        ]
    };
    const NAMES: [&str; 16] = [
        "c00", "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11", "c12", "c13",
        "c14", "c15",
    ];
    let before = verified_entries(&dir).unwrap().len();
    // What killed submits and a killed build leave: all 16 start by settling the same leftovers, and
    // one that finds a leftover already gone must not fail (they used to, "No such file or
    // directory").
    let pid = dead_pid();
    let mut journaled = Vec::new();
    for n in 0..20 {
        std::fs::write(dir.join(format!(".e{n}.tmp.{pid}.0.0123456789abcdef")), "{\"half").unwrap();
        let partial = data.join(format!("datasets/.ecthr.partial-{pid}.0123456789abcdef/x{n}"));
        std::fs::create_dir_all(&partial).unwrap();
        let rel = dir
            .strip_prefix(&data)
            .unwrap()
            .join(format!(".e{n}.tmp.{pid}.0.0123456789abcdef"));
        journaled.push((Kind::Tmp, rel.display().to_string(), None));
    }
    journaled.push((
        Kind::Partial,
        format!("datasets/.ecthr.partial-{pid}.0123456789abcdef"),
        None,
    ));
    journal(&data, pid, &journaled);
    all_at_once(&data, &NAMES.map(submit));
    let entries = verified_entries(&dir).unwrap();
    assert_eq!(entries.len(), before + 16);
    let systems: BTreeSet<&str> = entries.iter().map(|e| e.system.as_str()).collect();
    assert!(NAMES.iter().all(|n| systems.contains(n)), "{systems:?}");
    // Nothing to clean up even before another command runs.
    assert!(leftovers(&data).is_empty(), "{:?}", leftovers(&data));
    // One name 16 times: `submit` never replaces an entry, each lands under its own id (the same
    // run, name and millisecond get `-2`, `-3`, … suffixes).
    all_at_once(&data, &vec![submit("same"); 16]);
    let entries = verified_entries(&dir).unwrap();
    assert_eq!(entries.len(), before + 32);
    let same: Vec<&Entry> = entries.iter().filter(|e| e.system == "same").collect();
    assert_eq!(same.len(), 16);
    for e in &same[1..] {
        same_submission(e, same[0]).unwrap();
    }
    assert!(leftovers(&data).is_empty(), "{:?}", leftovers(&data));
    eprintln!("submit: 16 at once with 16 names and 16 with one name: 32 entries, all verify, no leftover");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn two_builds_and_two_renders_at_once() {
    let root = scratch("concurrent-build");
    let data = root.join("data");
    sample_data(&data);
    let dir = data.join("datasets/ecthr");
    let seeds = ["1", "2"];
    let build = |seed| vec!["build", "ecthr", "--seed", seed];
    let versions: Vec<String> = seeds
        .iter()
        .map(|s| {
            assert!(lexbench(&data, &build(s)).status.success());
            verified_version(&dir).unwrap()
        })
        .collect();
    assert_ne!(versions[0], versions[1]);
    let mut got = BTreeSet::new();
    for _ in 0..8 {
        all_at_once(&data, &seeds.map(build));
        let v = verified_version(&dir).unwrap();
        assert!(versions.contains(&v), "dataset {v} is neither version");
        got.insert(v);
        assert!(leftovers(&data).is_empty(), "{:?}", leftovers(&data));
    }
    assert!(lexbench(&data, &["leaderboard"]).status.success());
    let reference = site(&data);
    for _ in 0..8 {
        all_at_once(&data, &[vec!["leaderboard"], vec!["leaderboard"]]);
        assert!(site(&data) == reference, "two renders at once wrote other pages");
        assert!(leftovers(&data).is_empty(), "{:?}", leftovers(&data));
    }
    eprintln!(
        "build ecthr: 8 rounds of two builds at once, {} distinct outcome(s), each a complete version; \
         leaderboard: 8 rounds of two renders at once, pages as rendered alone",
        got.len()
    );
    std::fs::remove_dir_all(&root).ok();
}
