//! Exports of a built dataset for the tools people evaluate with: a Hugging Face `datasets` folder
//! ([`Format::Hf`]), a BEIR folder ([`Format::Beir`]) and an MTEB task ([`Format::Mteb`]).
//!
//! [`export`] reads the dataset through [`Dataset`] (every file checked against its manifest, so
//! what is exported is the version its hash names), renders every file of the chosen format in
//! memory ([`render`]), and writes them as one folder with
//! [`write_dir_atomic`](lexbench_core::io::write_dir_atomic): a hidden `.NAME.partial-PID.TOKEN` sibling
//! swapped in at the end, so a reader sees no export or a complete one.
//!
//! - **Deterministic.** The same dataset version gives the same bytes: rows in the dataset's order
//!   (corpus as `corpus.jsonl`, topics as each split lists them, qrels by topic then document,
//!   pools in the pool's order), JSON with fixed key order, Parquet through polars with fixed
//!   options, no timestamps. `lexbench-export.json` lists every file's sha256.
//! - **Safe.** A non-empty `out` is refused unless [`ExportOptions::force`] (then replaced whole,
//!   atomically); an `out` that is the dataset's folder, lies inside it, or holds it or a folder of
//!   [`ExportOptions::protect`] (the data directory) is refused even then, as is a file or a link.
//!   `force` replaces only an earlier export (a folder with [`EXPORT_RECORD`]): any other non-empty
//!   folder is refused, since replacing it would delete it. An `out` inside a folder of
//!   [`ExportOptions::forbid_inside`] (the data directory's `runs/`, `datasets/`, `leaderboard/`, its
//!   journal …) is refused too. The temporary folder of an export killed before it finished is
//!   removed by the next export to the same `out` when it proves to be one ([`leftovers`]).
//! - **Complete for evaluation.** ECtHR ranks the paragraphs of one judgment per topic, so every
//!   format carries the pools (HF `pools` config, BEIR `candidates/<split>.jsonl`, MTEB's
//!   `top_ranked` config): `R@k%` needs each pool's size.
//!
//! Which task a dataset is follows its pools, as everywhere in lexbench: a dataset with
//! `pools.jsonl` (ECtHR) is per-judgment reranking, one without (BSARD) ranks the whole corpus.
//!
//! ```
//! use lexbench_core::dataset::{Dataset, Language};
//! use lexbench_core::testing::TinyDataset;
//! use lexbench_splits::export::{Format, render};
//!
//! let data = std::env::temp_dir().join(format!("lexbench-export-doc-{}", std::process::id()));
//! TinyDataset::new("mini")
//!     .language(Language::French)
//!     .doc("a1", "Le bail est écrit.")
//!     .doc("a2", "Le juge de paix tranche.")
//!     .topic("q1", "q1", "Qui tranche ?", &["a2"], "test")
//!     .write_in(&data)?;
//! let ds = Dataset::open_in(&data, "mini")?;
//! let files = render(&ds, Format::Beir, &Default::default())?;
//! assert_eq!(files["qrels/test.tsv"], b"query-id\tcorpus-id\tscore\nq1\ta2\t1\n");
//! assert!(files.contains_key("corpus.jsonl") && files.contains_key("README.md"));
//! # std::fs::remove_dir_all(&data)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod beir;
mod card;
mod hf;
pub mod leftovers;
mod mteb;
mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use lexbench_core::dataset::{CorpusDoc, Dataset, DatasetTopic, Language};
use lexbench_core::{DocId, ReadOptions, TopicId};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::pairs::QrelSource;
pub use leftovers::Leftover;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A folder `datasets.load_dataset(DIR, CONFIG)` opens as it is: Parquet per config and split
    /// (`corpus`, `queries`, `qrels`, and with pools `pools`), a README with the YAML `configs:` and
    /// `dataset_info:` blocks and the dataset card.
    Hf,
    /// BEIR's layout: `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl`,
    /// `qrels/<split>.tsv`, with pools `candidates/<split>.jsonl`, and a README.
    Beir,
    /// An MTEB 2.x task: corpus, queries, qrels and, for a pooled dataset (a reranking task), each
    /// topic's candidates as `top_ranked`, with the task's metadata in `mteb_metadata.json`.
    Mteb,
}

impl Format {
    /// Every format, in the order the command line lists them.
    pub const ALL: [Format; 3] = [Format::Hf, Format::Beir, Format::Mteb];

    /// The name the command line and the files use (`hf`, `beir`, `mteb`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Hf => "hf",
            Format::Beir => "beir",
            Format::Mteb => "mteb",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| Error::Config(format!("unknown export format {s:?} (hf, beir or mteb)")))
    }
}

/// What [`export`] is told besides the format. `Default`: refuse a non-empty `out`, protect no
/// folder but the dataset's own, treat no split as training-only.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Replace a non-empty `out` that is an earlier export (it has [`EXPORT_RECORD`]; atomically:
    /// the old folder stays whole until the new one takes its place). Without it a non-empty `out`
    /// is refused and left as it is; any other non-empty folder is refused even with it.
    pub force: bool,
    /// Folders the export may neither replace nor be written over (the data directory): an `out`
    /// that is one of them or holds one is refused, `force` or not. The dataset's folder is always
    /// protected, and an `out` inside it refused.
    pub protect: Vec<PathBuf>,
    /// Folders an `out` may not lie inside (the folders of the data directory that lexbench writes,
    /// [`WRITTEN_FOLDERS`](lexbench_core::datadir::WRITTEN_FOLDERS)): an export there would mix
    /// with, or be taken for, lexbench's own files.
    pub forbid_inside: Vec<PathBuf>,
    /// Splits that train and select models and are not evaluated (the harness's
    /// `TRAINING_SPLITS`); MTEB's `eval_splits` are the others.
    pub training_splits: Vec<String>,
    /// The program writing the export (`lexbench 0.1.0`), recorded in `lexbench-export.json`.
    pub exported_by: String,
}

/// The files of an export: path inside the export folder (`/`-separated) → bytes.
pub type Files = BTreeMap<String, Vec<u8>>;

/// The name of the file that records what an export is and every other file's sha256.
pub const EXPORT_RECORD: &str = "lexbench-export.json";

/// What [`export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportReport {
    /// The format.
    pub format: Format,
    /// The dataset's name.
    pub dataset: String,
    /// The dataset's version (its manifest's hash), which the export records.
    pub version: String,
    /// The export folder.
    pub out: PathBuf,
    /// Whether a non-empty folder was replaced (`force`).
    pub replaced: bool,
    /// Leftovers of earlier exports to `out` killed before they finished (`.NAME.partial-PID.TOKEN` beside
    /// it, of a process that is gone): removed when each still held the mark its export wrote first,
    /// else left and reported here.
    pub leftovers: Vec<Leftover>,
    /// Every file written and its size in bytes.
    pub files: BTreeMap<String, u64>,
    /// The rows exported.
    pub counts: Counts,
}

/// The rows of an export, as a user of the export counts them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Documents in the corpus.
    pub corpus: usize,
    /// Topics per split (dataset names).
    pub topics: BTreeMap<String, usize>,
    /// Judgments per split.
    pub qrels: BTreeMap<String, usize>,
    /// Pools per split (pooled datasets only).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pools: BTreeMap<String, usize>,
}

/// One split of the dataset as the exports need it.
#[derive(Debug, Clone)]
struct SplitData {
    /// Its name in the dataset.
    name: String,
    /// Its name where a split name must be a Python identifier-like word (HF, MTEB): `-` becomes
    /// `_` ([`hf_split_name`]).
    hf_name: String,
    /// Its topics, in the split's order.
    topics: Vec<TopicId>,
    /// Its judgments: topic → document → grade.
    qrels: BTreeMap<TopicId, BTreeMap<DocId, i32>>,
}

/// The dataset, read once and checked, in the shape every format renders from.
#[derive(Debug, Clone)]
struct Source {
    /// The dataset's folder (errors name its files).
    dir: lexbench_core::dataset::DatasetDir,
    name: String,
    version: String,
    language: Option<Language>,
    corpus: Vec<CorpusDoc>,
    topics: BTreeMap<TopicId, DatasetTopic>,
    splits: Vec<SplitData>,
    /// Topic → its candidates, in the pool's order (`None`: every topic ranks the whole corpus).
    pools: Option<BTreeMap<TopicId, Vec<DocId>>>,
    /// What its topics rank ([`lexbench_core::dataset::Dataset::task`]).
    task: lexbench_core::Task,
    /// `card.md`, when the dataset has one.
    card: Option<String>,
    /// `stats.json`, when the dataset has one (pretty JSON, as written).
    stats: Option<String>,
    /// Label kinds and resolutions counted from `audit.jsonl` (ECtHR), when it has one.
    labels: Option<LabelKinds>,
    training_splits: Vec<String>,
    exported_by: String,
}

/// How the labels were made, counted over `audit.jsonl`.
#[derive(Debug, Clone, Default)]
struct LabelKinds {
    /// How a paragraph was tied to its case (`direct`, `deferred`, …) → labels.
    read: BTreeMap<String, usize>,
    /// How the citation was resolved to a judgment → labels.
    how: BTreeMap<String, usize>,
}

impl Source {
    /// Reads `ds` and checks what the exports rely on: every judged and pooled document is in the
    /// corpus, every topic of a pooled dataset's split has its pool, a pool lists no document
    /// twice, the dataset has a split, and HF split names stay distinct.
    fn read(ds: &Dataset, opts: &ExportOptions) -> Result<Self> {
        let dir = ds.dir().clone();
        let corpus: Vec<CorpusDoc> = ds.corpus()?;
        let mut ids = BTreeSet::new();
        for d in &corpus {
            if !ids.insert(d.doc.clone()) {
                return Err(input(
                    &dir.corpus(),
                    format!("document {} is listed twice", d.doc),
                ));
            }
        }
        let topics: BTreeMap<TopicId, DatasetTopic> =
            ds.topics()?.into_iter().map(|t| (t.topic.clone(), t)).collect();
        let pools = match ds.pools()? {
            None => None,
            Some(list) => {
                let mut pools = BTreeMap::new();
                for p in list {
                    let mut seen = BTreeSet::new();
                    for d in &p.docs {
                        if !seen.insert(d) {
                            return Err(input(
                                &dir.pools(),
                                format!("the pool of topic {} lists document {d} twice", p.topic),
                            ));
                        }
                        if !ids.contains(d) {
                            return Err(input(
                                &dir.pools(),
                                format!(
                                    "the pool of topic {} lists document {d}, which is not in corpus.jsonl",
                                    p.topic
                                ),
                            ));
                        }
                    }
                    if pools.insert(p.topic.clone(), p.docs).is_some() {
                        return Err(input(
                            &dir.pools(),
                            format!("topic {} has a second pool", p.topic),
                        ));
                    }
                }
                Some(pools)
            }
        };
        let mut splits = Vec::new();
        let mut hf_names: BTreeMap<String, String> = BTreeMap::new();
        for name in ds.split_names()? {
            let split = ds.split(&name)?;
            let known: BTreeSet<TopicId> = split.topics.iter().cloned().collect();
            for t in &split.topics {
                if !topics.contains_key(t) {
                    return Err(input(
                        &dir.split(&name),
                        format!("topic {t} is not in queries.jsonl"),
                    ));
                }
                if let Some(pools) = &pools
                    && !pools.contains_key(t)
                {
                    return Err(input(
                        &dir.pools(),
                        format!("topic {t} of split {name} has no pool"),
                    ));
                }
            }
            let opts = ReadOptions {
                known_topics: Some(known),
                ..ReadOptions::default()
            };
            let qrels = ds.qrels(&name, &opts)?.topics;
            for (t, docs) in &qrels {
                for d in docs.keys() {
                    if !ids.contains(d) {
                        return Err(input(
                            &dir.qrels(&name),
                            format!("topic {t} judges document {d}, which is not in corpus.jsonl"),
                        ));
                    }
                }
            }
            let hf_name = hf_split_name(&name)?;
            if let Some(other) = hf_names.insert(hf_name.clone(), name.clone()) {
                return Err(Error::Config(format!(
                    "splits {other:?} and {name:?} would both be called {hf_name:?} in a Hugging Face export"
                )));
            }
            splits.push(SplitData {
                name,
                hf_name,
                topics: split.topics,
                qrels,
            });
        }
        if splits.is_empty() {
            return Err(input(
                &dir.0.join("splits"),
                "the dataset has no split (splits/<split>.json): nothing to export".into(),
            ));
        }
        let manifest = ds.manifest();
        let text = |rel: &str| -> Result<Option<String>> {
            if manifest.sha256_of(rel).is_none() {
                return Ok(None);
            }
            let path = ds.dir().0.join(rel);
            Ok(Some(lexbench_core::text::text_from_bytes(
                ds.verified_bytes(rel)?,
                &path,
            )?))
        };
        let labels = match text("audit.jsonl")? {
            None => None,
            Some(audit) => Some(label_kinds(&audit, &ds.dir().0.join("audit.jsonl"))?),
        };
        Ok(Source {
            dir,
            name: manifest.name.clone(),
            version: ds.hash(),
            language: manifest.language,
            corpus,
            topics,
            splits,
            pools,
            task: ds.task()?,
            card: text("card.md")?,
            stats: text("stats.json")?,
            labels,
            training_splits: opts.training_splits.clone(),
            exported_by: opts.exported_by.clone(),
        })
    }

    /// Does every topic rank its own pool (ECtHR) rather than the whole corpus (BSARD, the open corpus)?
    fn pooled(&self) -> bool {
        self.pools.is_some()
    }

    /// Is it ECtHR's (per judgment or over the open corpus) rather than BSARD's?
    fn ecthr(&self) -> bool {
        self.task != lexbench_core::Task::Corpus
    }

    /// The topic's record (present: [`Source::read`] checked every split's topics).
    fn topic(&self, t: &TopicId) -> Result<&DatasetTopic> {
        self.topics
            .get(t)
            .ok_or_else(|| Error::Empty(format!("internal: topic {t} vanished after it was checked")))
    }

    /// The topic's pool (present for every split topic of a pooled dataset: [`Source::read`]).
    fn pool(&self, t: &TopicId) -> Result<&[DocId]> {
        self.pools
            .as_ref()
            .and_then(|p| p.get(t))
            .map(Vec::as_slice)
            .ok_or_else(|| Error::Empty(format!("internal: topic {t} has no pool")))
    }

    /// The splits a leaderboard evaluates (all but [`ExportOptions::training_splits`]).
    fn evaluated(&self) -> impl Iterator<Item = &SplitData> {
        self.splits
            .iter()
            .filter(|s| !self.training_splits.contains(&s.name))
    }

    /// The rows an export of this dataset holds.
    fn counts(&self) -> Counts {
        let per = |f: &dyn Fn(&SplitData) -> usize| -> BTreeMap<String, usize> {
            self.splits.iter().map(|s| (s.name.clone(), f(s))).collect()
        };
        Counts {
            corpus: self.corpus.len(),
            topics: per(&|s| s.topics.len()),
            qrels: per(&|s| s.qrels.values().map(BTreeMap::len).sum()),
            pools: if self.pooled() {
                per(&|s| s.topics.len())
            } else {
                BTreeMap::new()
            },
        }
    }
}

/// An [`Error::Input`] about the whole file `path`.
fn input(path: &Path, message: String) -> Error {
    Error::Input {
        path: path.to_owned(),
        line: 0,
        message,
    }
}

/// Counts label kinds over `audit.jsonl` (one [`QrelSource`] a line).
fn label_kinds(text: &str, path: &Path) -> Result<LabelKinds> {
    let mut kinds = LabelKinds::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let source: QrelSource = serde_json::from_str(line).map_err(|e| Error::Input {
            path: path.to_owned(),
            line: i + 1,
            message: e.to_string(),
        })?;
        *kinds.read.entry(source.read.as_str().to_owned()).or_default() += 1;
        let how = match source.how {
            Some(h) => serde_json::to_value(h)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "unknown".to_owned()),
            None => "none recorded".to_owned(),
        };
        *kinds.how.entry(how).or_default() += 1;
    }
    Ok(kinds)
}

/// The name of split `name` where split names must match `\w+(\.\w+)*` (Hugging Face `datasets`,
/// hence MTEB): `-` becomes `_` (`train-fit` → `train_fit`). Dataset split names are already
/// ASCII letters, digits, `-`, `_` and `.`; a name that still does not fit (`a..b`) is refused.
pub fn hf_split_name(name: &str) -> Result<String> {
    let out = name.replace('-', "_");
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if out.split('.').all(word) {
        Ok(out)
    } else {
        Err(Error::Config(format!(
            "split {name:?} has no Hugging Face name (split names there are words joined by '.')"
        )))
    }
}

/// Renders every file of `format` for the dataset `ds`, in memory, with the record
/// [`EXPORT_RECORD`] (what was exported, from which version, each other file's sha256).
pub fn render(ds: &Dataset, format: Format, opts: &ExportOptions) -> Result<Files> {
    render_source(&Source::read(ds, opts)?, format)
}

/// [`render`] of a dataset already read.
fn render_source(src: &Source, format: Format) -> Result<Files> {
    let mut files = match format {
        Format::Hf => hf::files(src)?,
        Format::Beir => beir::files(src)?,
        Format::Mteb => mteb::files(src)?,
    };
    let record = Record {
        format,
        dataset: &src.name,
        version: &src.version,
        exported_by: &src.exported_by,
        split_names: src
            .splits
            .iter()
            .filter(|s| s.hf_name != s.name && format != Format::Beir)
            .map(|s| (s.name.as_str(), s.hf_name.as_str()))
            .collect(),
        counts: src.counts(),
        files: files
            .iter()
            .map(|(p, b)| (p.clone(), lexbench_core::sha256_hex(b)))
            .collect(),
    };
    add(&mut files, EXPORT_RECORD, pretty_json(&record)?)?;
    Ok(files)
}

/// `lexbench-export.json`.
#[derive(Serialize)]
struct Record<'a> {
    format: Format,
    dataset: &'a str,
    version: &'a str,
    exported_by: &'a str,
    /// Dataset split name → the name the export uses, where they differ.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    split_names: BTreeMap<&'a str, &'a str>,
    counts: Counts,
    files: BTreeMap<String, String>,
}

/// Exports `ds` as `format` into the folder `out`, atomically ([module docs](self)).
pub fn export(ds: &Dataset, format: Format, out: &Path, opts: &ExportOptions) -> Result<ExportReport> {
    let replaced = check_out(ds, out, opts)?;
    let src = Source::read(ds, opts)?;
    let files = render_source(&src, format)?;
    let leftovers = leftovers::settle(out);
    lexbench_core::io::write_dir_atomic(out, |tmp| -> Result<()> {
        // Marked first, unmarked last: a kill in between leaves a folder the next export to `out`
        // can prove is a leftover of an export (outside a data directory no journal records it).
        leftovers::mark(tmp)?;
        for (rel, bytes) in &files {
            let path = tmp.join(rel);
            lexbench_core::io::write_atomic(&path, |w| io::Write::write_all(w, bytes))?;
        }
        leftovers::unmark(tmp)?;
        Ok(())
    })?;
    Ok(ExportReport {
        format,
        dataset: src.name.clone(),
        version: src.version.clone(),
        out: out.to_owned(),
        replaced,
        leftovers,
        files: files.iter().map(|(p, b)| (p.clone(), b.len() as u64)).collect(),
        counts: src.counts(),
    })
}

/// Adds the file `rel` to `files`; a path rendered twice is a bug of ours, never silently merged.
fn add(files: &mut Files, rel: &str, bytes: Vec<u8>) -> Result<()> {
    if files.insert(rel.to_owned(), bytes).is_some() {
        return Err(Error::Empty(format!("internal: the export renders {rel} twice")));
    }
    Ok(())
}

/// `value` as pretty JSON and a newline.
fn pretty_json<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Empty(format!("internal: serialising the export: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// One JSON line per row.
fn jsonl<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    for row in rows {
        serde_json::to_writer(&mut bytes, &row)
            .map_err(|e| Error::Empty(format!("internal: serialising the export: {e}")))?;
        bytes.push(b'\n');
    }
    Ok(bytes)
}

/// Refuses an `out` the export must not write ([module docs](self)); returns whether a non-empty
/// folder will be replaced.
fn check_out(ds: &Dataset, out: &Path, opts: &ExportOptions) -> Result<bool> {
    let refuse = |why: String| -> Error {
        Error::Core(lexbench_core::Error::Io {
            path: out.to_owned(),
            source: io::Error::new(io::ErrorKind::InvalidInput, why),
        })
    };
    if out.file_name().is_none() {
        return Err(refuse(
            "not a folder name the export can take (it ends in `..` or is a root)".into(),
        ));
    }
    let target = resolved(out);
    let dataset = resolved(&ds.dir().0);
    if target.starts_with(&dataset) {
        return Err(refuse(format!(
            "inside the dataset's folder {}; export elsewhere",
            ds.dir().0.display()
        )));
    }
    for folder in &opts.forbid_inside {
        if target.starts_with(resolved(folder)) {
            return Err(refuse(format!(
                "inside {}, a folder of the data directory that lexbench writes; export into a folder \
                 of its own (by default DATA/exports/NAME-FORMAT)",
                folder.display()
            )));
        }
    }
    for keep in std::iter::once(&ds.dir().0).chain(&opts.protect) {
        if resolved(keep).starts_with(&target) {
            return Err(refuse(format!(
                "it holds {}, which an export never replaces; give a folder of its own",
                keep.display()
            )));
        }
    }
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(lexbench_core::Error::Io {
                path: out.to_owned(),
                source: e,
            }
            .into());
        }
    };
    if meta.file_type().is_symlink() {
        return Err(refuse("a link; give the folder itself".into()));
    }
    if !meta.is_dir() {
        return Err(refuse("not a folder".into()));
    }
    let empty = std::fs::read_dir(out)
        .map_err(|e| lexbench_core::Error::Io {
            path: out.to_owned(),
            source: e,
        })?
        .next()
        .is_none();
    if !empty && !opts.force {
        return Err(refuse(
            "the folder is not empty; give --force to replace it whole".into(),
        ));
    }
    // --force replaces an earlier export, never a folder of the user's that happens to be named
    // (a home folder, a checkout): it is deleted whole when the new export takes its place.
    if !empty && !out.join(EXPORT_RECORD).is_file() {
        return Err(refuse(format!(
            "the folder is not empty and is not an earlier export (it has no {EXPORT_RECORD}); --force \
             replaces only an export, so move what is there or choose another folder"
        )));
    }
    Ok(!empty)
}

/// `path` absolute and lexically normalised, with its longest existing prefix resolved through
/// links (so a link to the data directory is seen for what it is).
fn resolved(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut lexical = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let mut head = lexical.as_path();
    let mut tail = Vec::new();
    loop {
        if let Ok(mut real) = head.canonicalize() {
            for name in tail.iter().rev() {
                real.push(name);
            }
            return real;
        }
        match (head.file_name(), head.parent()) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                head = parent;
            }
            _ => return lexical,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties: every format renders the same bytes twice and its record lists every other file's
    //! sha256; split names become Hugging Face words, and two that would collide are refused; a
    //! judged document outside the corpus is refused, naming the qrels file; the MTEB export gives
    //! each topic its pool as candidates, in MTEB 2.x's metadata vocabulary; `export` refuses an `out` inside the dataset,
    //! holding a protected folder, or not empty (unless forced, when it replaces it whole).
    use super::*;
    use lexbench_core::testing::TinyDataset;

    /// A fresh data directory `lexbench-export-unit-PID-NAME`.
    fn data(name: &str) -> PathBuf {
        let d = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-export-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// A pooled dataset: two topics over one judgment's three paragraphs, in splits `test` and
    /// `train-fit`.
    fn pooled(data: &Path) -> Dataset {
        TinyDataset::new("tiny")
            .language(Language::English)
            .doc("j:1", "the facts")
            .doc("j:2", "the law")
            .doc("j:3", "the remedy")
            .topic("q1/j", "q1", "what law", &["j:2"], "test")
            .topic("q2/j", "q2", "what facts", &["j:1", "j:3"], "train-fit")
            .pool("q1/j", &["j:1", "j:2", "j:3"])
            .pool("q2/j", &["j:1", "j:2", "j:3"])
            .open_in(data)
            .unwrap()
    }

    #[test]
    fn every_format_renders_the_same_bytes_twice() {
        let dir = data("same");
        let ds = pooled(&dir);
        for format in Format::ALL {
            let a = render(&ds, format, &ExportOptions::default()).unwrap();
            assert_eq!(
                a,
                render(&ds, format, &ExportOptions::default()).unwrap(),
                "{format}"
            );
            let record: serde_json::Value = serde_json::from_slice(&a[EXPORT_RECORD]).unwrap();
            assert_eq!(record["version"], ds.hash(), "{format}");
            let listed = record["files"].as_object().unwrap();
            assert_eq!(listed.len() + 1, a.len(), "{format}");
            for (rel, sha) in listed {
                assert_eq!(sha, &lexbench_core::sha256_hex(&a[rel]), "{format} {rel}");
            }
            let readme = String::from_utf8(a["README.md"].clone()).unwrap();
            assert!(
                readme.contains("per-judgment reranking") || readme.contains("Per-judgment reranking"),
                "{format}"
            );
        }
        let beir = render(&ds, Format::Beir, &ExportOptions::default()).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&beir["candidates/train-fit.jsonl"]),
            "{\"query-id\":\"q2/j\",\"corpus-ids\":[\"j:1\",\"j:2\",\"j:3\"]}\n"
        );
        let hf = render(&ds, Format::Hf, &ExportOptions::default()).unwrap();
        assert!(hf.contains_key("pools/train_fit.parquet") && hf.contains_key("qrels/test.parquet"));
        let readme = String::from_utf8(hf["README.md"].clone()).unwrap();
        assert!(
            readme.contains("  - split: train_fit\n    path: \"queries/train_fit.parquet\""),
            "{readme}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn split_names_become_words() {
        assert_eq!(hf_split_name("train-fit").unwrap(), "train_fit");
        assert_eq!(hf_split_name("v1.test").unwrap(), "v1.test");
        assert!(hf_split_name("a..b").is_err());
        let dir = data("collide");
        let ds = TinyDataset::new("t")
            .doc("d", "x")
            .topic("q1", "q1", "x", &["d"], "a-b")
            .topic("q2", "q2", "x", &["d"], "a_b")
            .open_in(&dir)
            .unwrap();
        let err = render(&ds, Format::Hf, &ExportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"a-b\" and \"a_b\""), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_judged_document_outside_the_corpus_is_refused() {
        let dir = data("outside");
        let ds = TinyDataset::new("t")
            .doc("d", "x")
            .topic("q1", "q1", "x", &["gone"], "test")
            .open_in(&dir)
            .unwrap();
        let err = render(&ds, Format::Beir, &ExportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("qrels/test.tsv") && err.contains("gone, which is not in corpus.jsonl"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_mteb_export_gives_each_topic_its_pool_as_candidates() {
        let dir = data("rerank");
        let ds = pooled(&dir);
        let files = render(&ds, Format::Mteb, &ExportOptions::default()).unwrap();
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        for want in [
            "corpus/corpus.parquet",
            "queries/queries.parquet",
            "qrels/train_fit.parquet",
            "top_ranked/train_fit.parquet",
        ] {
            assert!(names.contains(&want), "{want} not in {names:?}");
        }
        let src = Source::read(&ds, &ExportOptions::default()).unwrap();
        let split = src.splits.iter().find(|s| s.name == "train-fit").unwrap();
        let table = hf::pools_table(&src, split).unwrap();
        match table.column("corpus-ids") {
            Some(table::Values::StrList(v)) => assert_eq!(
                v,
                &vec![vec!["j:1".to_owned(), "j:2".to_owned(), "j:3".to_owned()]]
            ),
            other => panic!("corpus-ids: {other:?}"),
        }
        let meta: serde_json::Value = serde_json::from_slice(&files["mteb_metadata.json"]).unwrap();
        assert_eq!(meta["category"], "t2t");
        assert_eq!(meta["type"], "Reranking");
        assert!(meta.get("descriptive_stats").is_none(), "{meta}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn export_refuses_an_out_it_must_not_write() {
        let root = data("out");
        let ds = pooled(&root);
        let opts = ExportOptions {
            protect: vec![root.clone()],
            ..ExportOptions::default()
        };
        let refused = |out: &Path, opts: &ExportOptions, why: &str| {
            let err = chain(export(&ds, Format::Beir, out, opts).unwrap_err());
            assert!(err.contains(why), "{}: {err}", out.display());
        };
        refused(&ds.dir().0.join("x"), &opts, "inside the dataset");
        refused(&root, &opts, "which an export never replaces");
        refused(&root.join("datasets"), &opts, "which an export never replaces");
        let out = root
            .join("../")
            .join(format!("lexbench-export-unit-{}-target", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("keep"), "mine").unwrap();
        refused(&out, &opts, "not empty");
        assert!(out.join("keep").is_file());
        let forced = ExportOptions {
            force: true,
            ..opts.clone()
        };
        // A folder that is not an export is not replaced, even forced.
        refused(&out, &forced, "is not an earlier export");
        assert!(out.join("keep").is_file());
        std::fs::write(out.join(EXPORT_RECORD), "{}").unwrap();
        let report = export(&ds, Format::Beir, &out, &forced).unwrap();
        assert!(report.replaced && !out.join("keep").exists() && out.join("corpus.jsonl").is_file());
        assert_eq!(report.counts.topics["train-fit"], 1);
        assert_eq!(report.counts.qrels["train-fit"], 2);
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Issue 54, item 13: an `out` inside a folder of the data directory that lexbench writes
    /// (runs, datasets, the leaderboard's entries, the journal, even when empty) is refused, `force`
    /// or not, and nothing is written there; `exports/` stays allowed.
    #[test]
    fn an_out_inside_the_data_directorys_own_folders_is_refused() {
        let root = data("forbid");
        let ds = pooled(&root);
        std::fs::create_dir_all(root.join(".lexbench/journal")).unwrap();
        let opts = ExportOptions {
            protect: vec![root.clone()],
            forbid_inside: lexbench_core::datadir::WRITTEN_FOLDERS
                .iter()
                .map(|f| root.join(f))
                .collect(),
            force: true,
            ..ExportOptions::default()
        };
        for out in [
            "runs/x",
            "datasets/zzz",
            "leaderboard/entries/x",
            ".lexbench/journal",
            "models/m",
        ] {
            let err = chain(export(&ds, Format::Beir, &root.join(out), &opts).unwrap_err());
            assert!(
                err.contains("a folder of the data directory that lexbench writes"),
                "{out}: {err}"
            );
            assert!(!root.join(out).join("corpus.jsonl").exists(), "{out}");
        }
        assert!(
            root.join(".lexbench/journal").is_dir(),
            "the journal is not replaced"
        );
        let report = export(&ds, Format::Beir, &root.join("exports/x"), &opts).unwrap();
        assert!(report.out.join("corpus.jsonl").is_file());
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Issue 54, item 13: an export killed before it finished, outside any data directory, leaves
    /// its marked `.NAME.partial-PID.TOKEN`; the next export to the same folder removes it and says so. A
    /// folder of that form without the mark, or whose mark names another folder (a copy), is left
    /// and reported.
    #[test]
    fn an_interrupted_exports_folder_goes_with_the_next_export() {
        let root = data("interrupted");
        let ds = pooled(&root);
        let outside = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-export-left-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&outside);
        std::fs::create_dir_all(&outside).unwrap();
        let dead = || {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        };
        let pid = dead();
        // What a kill leaves: the marked folder, half its files.
        let killed = outside.join(format!(".out.partial-{pid}.0123456789abcdef"));
        std::fs::create_dir_all(&killed).unwrap();
        leftovers::mark(&killed).unwrap();
        std::fs::write(killed.join("corpus.jsonl"), "{\"half").unwrap();
        // A user's folder that merely has the form, and a copy of a marked one.
        let users = outside.join(format!(".out.partial-{}.0123456789abcdef", dead()));
        std::fs::create_dir_all(&users).unwrap();
        std::fs::write(users.join("notes.txt"), "mine").unwrap();
        let copy = outside.join(format!(".out.partial-{}.0123456789abcdef", dead()));
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::copy(killed.join(leftovers::MARK), copy.join(leftovers::MARK)).unwrap();
        let opts = ExportOptions {
            protect: vec![root.clone()],
            ..ExportOptions::default()
        };
        let report = export(&ds, Format::Beir, &outside.join("out"), &opts).unwrap();
        assert!(!killed.exists(), "{:?}", report.leftovers);
        assert!(users.join("notes.txt").is_file());
        assert!(copy.join(leftovers::MARK).is_file());
        let mut told: Vec<_> = report
            .leftovers
            .iter()
            .map(|l| (l.path.clone(), l.removed))
            .collect();
        told.sort();
        let mut want = vec![(killed, true), (users, false), (copy, false)];
        want.sort();
        assert_eq!(told, want, "{:?}", report.leftovers);
        assert!(
            !outside.join("out").join(leftovers::MARK).exists(),
            "no mark in a finished export"
        );
        let _ = std::fs::remove_dir_all(&outside);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// The error and its causes, as the command line prints them.
    fn chain(e: Error) -> String {
        let mut s = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            s.push_str(": ");
            s.push_str(&c.to_string());
            cause = c.source();
        }
        s
    }
}
