//! The on-disk layout of a built dataset, shared by the builders (`splits`), the systems (`baselines`)
//! and the harness (`leaderboard`).
//!
//! ```text
//! datasets/<name>/
//!   queries.jsonl        one DatasetTopic per topic (ECtHR: a query–judgment pair; BSARD: a question)
//!   corpus.jsonl         one CorpusDoc per retrievable unit (paragraph, article)
//!   corpus.parquet       the same table for analysis (written by `splits`; systems read the JSONL)
//!   pools.jsonl          one Pool per topic (ECtHR); absent when every topic ranks the whole corpus
//!   qrels/<split>.tsv    TREC qrels of the split's topics
//!   splits/<split>.json  the Split: its topic ids
//!   stats.json, audit.jsonl, card.md
//!   manifest.json        DatasetManifest: sha256 of every other file
//! ```
//!
//! A dataset's identity is the sha256 of its manifest's `files` map ([`DatasetManifest::dataset_hash`]):
//! two datasets with the same hash have byte-identical files. Runs and leaderboard entries record it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::eval::Task;
use crate::ids::{DocId, GuideId, ItemId, QueryId, TopicId};
use crate::records::Section;
use crate::records::{Pool, Split};
use crate::trec::{Qrels, ReadOptions};
use serde::de::DeserializeOwned;

/// Version of the dataset layout; bumped when a file's schema changes.
pub const LAYOUT_VERSION: u32 = 1;

/// One topic of a dataset: a line of `queries.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetTopic {
    /// The topic (what runs and qrels name).
    pub topic: TopicId,
    /// The query it asks (several ECtHR topics share one query, one per judgment).
    pub query: QueryId,
    /// The query text given to systems.
    pub text: String,
    /// ECtHR: the judgment whose paragraphs the topic ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ItemId>,
    /// ECtHR: the guide the query comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guide: Option<GuideId>,
}

/// One retrievable unit: a line of `corpus.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusDoc {
    /// Its id in runs and qrels.
    pub doc: DocId,
    /// Its text.
    pub text: String,
    /// ECtHR: the judgment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ItemId>,
    /// ECtHR: the printed paragraph number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num: Option<u32>,
    /// ECtHR: the judgment section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<Section>,
}

/// The language of a dataset's texts (queries and corpus), as its manifest declares it; ISO 639-1
/// codes in the file. Italian, Romanian, Russian, Turkish and Ukrainian are the query languages of
/// the cross-lingual ECtHR datasets (`ecthr-xl-<code>`, LexCLiPR), whose corpus is English.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Language {
    /// English (ECtHR).
    #[serde(rename = "en")]
    English,
    /// French (BSARD).
    #[serde(rename = "fr")]
    French,
    /// Italian.
    #[serde(rename = "it")]
    Italian,
    /// Romanian.
    #[serde(rename = "ro")]
    Romanian,
    /// Russian.
    #[serde(rename = "ru")]
    Russian,
    /// Turkish.
    #[serde(rename = "tr")]
    Turkish,
    /// Ukrainian.
    #[serde(rename = "uk")]
    Ukrainian,
}

impl Language {
    /// Every language, in code order of declaration.
    pub const ALL: [Language; 7] = [
        Language::English,
        Language::French,
        Language::Italian,
        Language::Romanian,
        Language::Russian,
        Language::Turkish,
        Language::Ukrainian,
    ];

    /// The ISO 639-1 code (`en`, `fr`, …), as manifests write it.
    pub fn code(self) -> &'static str {
        match self {
            Language::English => "en",
            Language::French => "fr",
            Language::Italian => "it",
            Language::Romanian => "ro",
            Language::Russian => "ru",
            Language::Turkish => "tr",
            Language::Ukrainian => "uk",
        }
    }

    /// The English name, lower case (`english`, `french`, …).
    pub fn name(self) -> &'static str {
        match self {
            Language::English => "english",
            Language::French => "french",
            Language::Italian => "italian",
            Language::Romanian => "romanian",
            Language::Russian => "russian",
            Language::Turkish => "turkish",
            Language::Ukrainian => "ukrainian",
        }
    }

    /// The language a dataset named `dataset` is taken to be in when its manifest declares none:
    /// French for `bsard…`, English otherwise (what BM25's analyzer then follows).
    pub fn default_for(dataset: &str) -> Language {
        if dataset.starts_with("bsard") {
            Language::French
        } else {
            Language::English
        }
    }

    /// The language whose code or English name is `s` (case-insensitive).
    pub fn parse(s: &str) -> Option<Language> {
        let s = s.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|l| l.code() == s || l.name() == s)
    }
}

/// The file in which a dataset declares its task where its shape does not say it ([`TaskFile`]).
pub const TASK_FILE: &str = "task.json";

/// `task.json`: the task a dataset declares (the open-corpus setting: [`Task::OpenCorpus`]), and the
/// dataset it was derived from. A defining file: its sha256 is in the manifest, so it is part of the
/// dataset's identity like every other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// The task.
    pub task: Task,
    /// The dataset it was derived from, by name and identity hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<DerivedFrom>,
}

/// The dataset another was derived from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DerivedFrom {
    /// Its name.
    pub name: String,
    /// Its identity hash ([`DatasetManifest::dataset_hash`]).
    pub hash: String,
}

/// `manifest.json`: what the dataset is and the sha256 of each of its files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetManifest {
    /// The dataset's name (`ecthr`, `bsard`, `ecthr-release`).
    pub name: String,
    /// [`LAYOUT_VERSION`] at build time.
    pub layout_version: u32,
    /// The program that built it (`lexbench 0.1.0`).
    pub built_by: String,
    /// The language of its texts (`"en"`, `"fr"`); absent in manifests written before it was
    /// recorded. BM25's analyzer follows it, so it is part of the identity hash where it is not the
    /// language an undeclared one is taken to be ([`Language::default_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    /// The language of the corpus where it is not [`DatasetManifest::language`], which is then the
    /// queries' (the cross-lingual `ecthr-xl-fr`: French queries, English paragraphs); absent when
    /// queries and corpus share one language. Part of the identity hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_language: Option<Language>,
    /// Relative path (with `/`) → sha256, for every file that defines the dataset (all but the
    /// manifest itself and the [`DatasetManifest::extras`]).
    pub files: BTreeMap<String, String>,
    /// Relative path → sha256 of the files that illustrate the dataset without defining it: the
    /// card's plots (`plots/…`). They are verified like the others but left out of the identity
    /// hash, so building with or without `--plots` gives the same dataset version.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extras: BTreeMap<String, String>,
}

/// Folders of a dataset whose files are [`DatasetManifest::extras`], not part of its identity.
pub const EXTRA_DIRS: &[&str] = &["plots/"];

impl DatasetManifest {
    /// The dataset's identity: sha256 over `path sha256\n` lines of [`DatasetManifest::files`],
    /// sorted, then a `\0language CODE\n` and a `\0corpus_language CODE\n` line for each of
    /// [`DatasetManifest::scored_languages`] (everything beyond the files that changes a score; a
    /// dataset in the language its name implies hashes as its files alone, as before languages
    /// were hashed).
    pub fn dataset_hash(&self) -> String {
        let mut h = Sha256::new();
        for (path, sha) in &self.files {
            h.update(path.as_bytes());
            h.update(b" ");
            h.update(sha.as_bytes());
            h.update(b"\n");
        }
        let (language, corpus) = self.scored_languages();
        for (label, l) in [("language", language), ("corpus_language", corpus)] {
            if let Some(l) = l {
                h.update(format!("\0{label} {}\n", l.code()).as_bytes());
            }
        }
        crate::hash::to_hex(&h.finalize())
    }

    /// The declared languages that change a score beyond what the files hold: the language where
    /// it is not [`Language::default_for`] the dataset's name, and the corpus's language where
    /// one is declared.
    pub fn scored_languages(&self) -> (Option<Language>, Option<Language>) {
        (
            self.language.filter(|l| *l != Language::default_for(&self.name)),
            self.corpus_language,
        )
    }

    /// Reads `DIR/manifest.json`.
    pub fn read(dir: &Path) -> Result<Self> {
        crate::io::read_json(&dir.join("manifest.json"))
    }

    /// Hashes every file under `dir` (except `manifest.json` and hidden files) into a manifest and
    /// writes it atomically as `dir/manifest.json`, without a language
    /// ([`DatasetManifest::write_with_language`]).
    pub fn write_for(dir: &Path, name: &str, built_by: &str) -> Result<Self> {
        Self::write_with_language(dir, name, built_by, None)
    }

    /// [`DatasetManifest::write_for`], declaring the dataset's `language`.
    pub fn write_with_language(
        dir: &Path,
        name: &str,
        built_by: &str,
        language: Option<Language>,
    ) -> Result<Self> {
        Self::write_with_languages(dir, name, built_by, language, None)
    }

    /// [`DatasetManifest::write_with_language`], declaring also the corpus's language where it
    /// differs from `language` (then the queries' language); a `corpus_language` equal to
    /// `language` is not written.
    pub fn write_with_languages(
        dir: &Path,
        name: &str,
        built_by: &str,
        language: Option<Language>,
        corpus_language: Option<Language>,
    ) -> Result<Self> {
        let corpus_language = corpus_language.filter(|c| Some(*c) != language);
        let mut files = BTreeMap::new();
        let mut extras = BTreeMap::new();
        for path in walk(dir)? {
            let rel = relative(dir, &path);
            if rel == "manifest.json" {
                continue;
            }
            let sha = sha256_file(&path)?;
            if EXTRA_DIRS.iter().any(|d| rel.starts_with(d)) {
                extras.insert(rel, sha);
            } else {
                files.insert(rel, sha);
            }
        }
        let m = DatasetManifest {
            name: name.to_owned(),
            layout_version: LAYOUT_VERSION,
            built_by: built_by.to_owned(),
            language,
            corpus_language,
            files,
            extras,
        };
        let path = dir.join("manifest.json");
        let text = serde_json::to_string_pretty(&m).map_err(|source| Error::Serialise {
            path: path.clone(),
            source,
        })?;
        crate::io::write_atomic(&path, |w| {
            use std::io::Write;
            w.write_all(text.as_bytes())?;
            w.write_all(b"\n")
        })?;
        Ok(m)
    }

    /// Checks that every listed file exists with its sha256; returns the paths that do not. A path
    /// that does not stay inside `dir` (absolute, `..`, empty parts) is an error naming it, and is
    /// never opened: a manifest is a file anyone can edit, and hashing `../../disk.img` would read
    /// 20 GiB outside the dataset. A listed path that is a link or not a regular file fails too.
    pub fn verify(&self, dir: &Path) -> Result<Vec<String>> {
        self.check_paths(dir)?;
        let mut bad = Vec::new();
        for (rel, sha) in self.files.iter().chain(&self.extras) {
            let p = dir.join(rel);
            let regular = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_file());
            if !regular || &sha256_file(&p)? != sha {
                bad.push(rel.clone());
            }
        }
        Ok(bad)
    }

    /// Refuses a manifest whose file paths leave the dataset's folder (module docs of
    /// [`DatasetManifest::verify`]).
    pub fn check_paths(&self, dir: &Path) -> Result<()> {
        for rel in self.files.keys().chain(self.extras.keys()) {
            if !is_dataset_path(rel) {
                return Err(Error::MissingInput(format!(
                    "{}: the file path {:?} is not a path inside the dataset (only relative paths of \
                     plain names separated by `/` are)",
                    dir.join("manifest.json").display(),
                    rel.chars().take(200).collect::<String>()
                )));
            }
        }
        Ok(())
    }

    /// The sha256 the manifest records for `rel` (a file or an extra).
    pub fn sha256_of(&self, rel: &str) -> Option<&str> {
        self.files
            .get(rel)
            .or_else(|| self.extras.get(rel))
            .map(String::as_str)
    }
}

/// Is `rel` a path inside a dataset: plain names separated by `/`, none empty, `.` or `..`, no `\`,
/// not absolute?
fn is_dataset_path(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.contains('\\')
        && !rel.contains('\0')
        && rel
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !Path::new(rel).is_absolute()
}

/// Paths of a dataset directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetDir(pub PathBuf);

impl DatasetDir {
    /// `DATA/datasets/<name>`; `name` must be a name ([`check_name`](crate::ids::check_name)), never a
    /// path, so a dataset can neither be written outside `DATA/datasets` nor replace a sibling.
    pub fn in_data(data: &Path, name: &str) -> Result<Self> {
        crate::ids::check_name("dataset name", name)?;
        Ok(Self(data.join("datasets").join(name)))
    }
    /// `queries.jsonl`.
    pub fn queries(&self) -> PathBuf {
        self.0.join("queries.jsonl")
    }
    /// `corpus.jsonl`.
    pub fn corpus(&self) -> PathBuf {
        self.0.join("corpus.jsonl")
    }
    /// `pools.jsonl`.
    pub fn pools(&self) -> PathBuf {
        self.0.join("pools.jsonl")
    }
    /// `qrels/<split>.tsv`.
    pub fn qrels(&self, split: &str) -> PathBuf {
        self.0.join("qrels").join(format!("{split}.tsv"))
    }
    /// `splits/<split>.json`.
    pub fn split(&self, split: &str) -> PathBuf {
        self.0.join("splits").join(format!("{split}.json"))
    }
    /// The split names present (`splits/*.json`), sorted.
    pub fn split_names(&self) -> Result<Vec<String>> {
        let dir = self.0.join("splits");
        let rd = std::fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.strip_suffix(".json").map(str::to_owned)
            })
            .collect();
        names.sort();
        Ok(names)
    }
}

pub use crate::hash::sha256_file;

/// A built dataset, opened: the one reader of `datasets/<name>/` for every stage. Opening reads
/// `manifest.json` and verifies every file against it, so whatever is read afterwards is the
/// version [`Dataset::hash`] names; a changed or missing file is [`Error::Changed`], naming them.
///
/// ```
/// # use lexbench_core::dataset::{Dataset, DatasetDir, DatasetManifest};
/// # let dir = std::env::temp_dir().join(format!("lexbench-dataset-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(dir.join("splits"))?;
/// std::fs::write(dir.join("queries.jsonl"), "{\"topic\":\"t1\",\"query\":\"q1\",\"text\":\"x\"}\n")?;
/// std::fs::write(dir.join("splits/test.json"), "{\"dataset\":\"d\",\"name\":\"test\",\"topics\":[\"t1\"]}")?;
/// DatasetManifest::write_for(&dir, "d", "doc")?;
/// let ds = Dataset::open(DatasetDir(dir.clone()))?;
/// assert_eq!(ds.split_topics("test")?[0].text, "x");
/// std::fs::write(dir.join("queries.jsonl"), "")?;
/// assert!(Dataset::open(DatasetDir(dir.clone())).unwrap_err().to_string().contains("queries.jsonl"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Dataset {
    dir: DatasetDir,
    manifest: DatasetManifest,
}

impl Dataset {
    /// Opens the dataset in `dir`: reads its manifest and verifies every file against it.
    pub fn open(dir: DatasetDir) -> Result<Self> {
        if !dir.0.join("manifest.json").is_file() {
            return Err(Error::NotBuilt { dir: dir.0 });
        }
        let manifest = DatasetManifest::read(&dir.0)?;
        let files = manifest.verify(&dir.0)?;
        if !files.is_empty() {
            return Err(Error::Changed { dir: dir.0, files });
        }
        Ok(Self { dir, manifest })
    }

    /// Opens `DATA/datasets/<name>` ([`DatasetDir::in_data`]: `name` is a name, never a path).
    pub fn open_in(data: &Path, name: &str) -> Result<Self> {
        Self::open(DatasetDir::in_data(data, name)?)
    }

    /// Its folder and the paths of its files.
    pub fn dir(&self) -> &DatasetDir {
        &self.dir
    }

    /// Its manifest.
    pub fn manifest(&self) -> &DatasetManifest {
        &self.manifest
    }

    /// Its identity ([`DatasetManifest::dataset_hash`]).
    pub fn hash(&self) -> String {
        self.manifest.dataset_hash()
    }

    /// The bytes of the dataset file `rel`, read once and checked against the sha256 its manifest
    /// records: what a caller parses is exactly what was verified, even if the file is rewritten
    /// after [`Dataset::open`] (a file changed in between is [`Error::Changed`]; one the manifest
    /// does not list is one too).
    pub fn verified_bytes(&self, rel: &str) -> Result<Vec<u8>> {
        let changed = || Error::Changed {
            dir: self.dir.0.clone(),
            files: vec![rel.to_owned()],
        };
        let want = self.manifest.sha256_of(rel).ok_or_else(changed)?;
        let path = self.dir.0.join(rel);
        let bytes = crate::text::read_bytes_at_most(&path, MAX_DATASET_FILE_BYTES)?;
        if crate::sha256_hex(&bytes) != want {
            return Err(changed());
        }
        Ok(bytes)
    }

    /// Every topic (`queries.jsonl`), as verified ([`Dataset::verified_bytes`]).
    pub fn topics(&self) -> Result<Vec<DatasetTopic>> {
        let bytes = self.verified_bytes("queries.jsonl")?;
        crate::io::read_jsonl_bytes(&bytes, &self.dir.queries())
    }

    /// The corpus (`corpus.jsonl`), each line read as `T` (a [`CorpusDoc`], or a narrower view), as
    /// verified ([`Dataset::verified_bytes`]).
    pub fn corpus<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        let bytes = self.verified_bytes("corpus.jsonl")?;
        crate::io::read_jsonl_bytes(&bytes, &self.dir.corpus())
    }

    /// The pools (`pools.jsonl`), `None` when every topic ranks the whole corpus (the manifest lists
    /// no pools), as verified ([`Dataset::verified_bytes`]).
    pub fn pools(&self) -> Result<Option<Vec<Pool>>> {
        if self.manifest.sha256_of("pools.jsonl").is_none() {
            return Ok(None);
        }
        let bytes = self.verified_bytes("pools.jsonl")?;
        crate::io::read_jsonl_bytes(&bytes, &self.dir.pools()).map(Some)
    }

    /// The split names present, sorted.
    pub fn split_names(&self) -> Result<Vec<String>> {
        self.dir.split_names()
    }

    /// Its `task.json`, as verified, `None` when the manifest lists none.
    pub fn task_file(&self) -> Result<Option<TaskFile>> {
        if self.manifest.sha256_of(TASK_FILE).is_none() {
            return Ok(None);
        }
        let path = self.dir.0.join(TASK_FILE);
        let text = crate::text::text_from_bytes(self.verified_bytes(TASK_FILE)?, &path)?;
        crate::io::json_from_str(&text, &path).map(Some)
    }

    /// What its topics rank, and so its measures: what `task.json` declares, else
    /// [`Task::of_shape`] (pools or not). A declaration that contradicts the files (a pooled task
    /// without `pools.jsonl`, a corpus task with one) is an error naming `task.json`.
    pub fn task(&self) -> Result<Task> {
        let pooled = self.manifest.sha256_of("pools.jsonl").is_some();
        let Some(file) = self.task_file()? else {
            return Ok(Task::of_shape(pooled));
        };
        if file.task.pooled() != pooled {
            return Err(Error::MissingInput(format!(
                "{}: declares the task {:?}, but the dataset {} pools.jsonl",
                self.dir.0.join(TASK_FILE).display(),
                file.task.as_str(),
                if pooled { "has" } else { "has no" }
            )));
        }
        Ok(file.task)
    }

    /// Split `name` (`splits/<name>.json`); `name` must be a name
    /// ([`check_name`](crate::ids::check_name)); an absent split is [`Error::NoSplit`].
    pub fn split(&self, name: &str) -> Result<Split> {
        crate::ids::check_name("split name", name)?;
        let path = self.dir.split(name);
        let rel = format!("splits/{name}.json");
        if !path.is_file() || self.manifest.sha256_of(&rel).is_none() {
            return Err(Error::NoSplit {
                path,
                split: name.to_owned(),
                known: self.split_names().unwrap_or_default(),
            });
        }
        let text = crate::text::text_from_bytes(self.verified_bytes(&rel)?, &path)?;
        crate::io::json_from_str(&text, &path)
    }

    /// The topics of split `name`, in the split's order; a topic the split names that is not in
    /// `queries.jsonl` is an error naming the split file.
    pub fn split_topics(&self, name: &str) -> Result<Vec<DatasetTopic>> {
        let split = self.split(name)?;
        let mut all: BTreeMap<TopicId, DatasetTopic> =
            self.topics()?.into_iter().map(|t| (t.topic.clone(), t)).collect();
        split
            .topics
            .iter()
            .map(|t| {
                all.remove(t).ok_or_else(|| {
                    Error::MissingInput(format!(
                        "{}: topic {t} is not in queries.jsonl",
                        self.dir.split(name).display()
                    ))
                })
            })
            .collect()
    }

    /// The qrels of split `name` (`qrels/<name>.tsv`), read with `options`.
    pub fn qrels(&self, name: &str, options: &ReadOptions) -> Result<Qrels> {
        crate::ids::check_name("split name", name)?;
        let bytes = self.verified_bytes(&format!("qrels/{name}.tsv"))?;
        Qrels::read_bytes(&bytes, &self.dir.qrels(name), options)
    }
}

/// The largest dataset file read whole ([`Dataset::verified_bytes`]): far above any corpus built
/// here (the full ECtHR corpus is about 150 MB).
pub const MAX_DATASET_FILE_BYTES: usize = 4 << 30;

/// Every regular, non-hidden file under `dir`, sorted.
/// `path` relative to `dir`, `/`-separated (what a manifest and [`crate::hash::sha256_content`] name
/// a file by).
pub(crate) fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every regular file under `dir` (links followed, hidden names skipped), sorted.
pub(crate) fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|source| Error::Io {
            path: d.clone(),
            source,
        })?;
        for e in rd {
            let e = e.map_err(|source| Error::Io {
                path: d.clone(),
                source,
            })?;
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! Properties: the manifest lists every file with its hash, the dataset hash changes with any
    //! file, and verify names a changed file.
    use super::*;

    #[test]
    fn manifest_hashes_and_verifies() {
        let dir = crate::testing::scratch_root().join(format!("lexbench-dataset-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("qrels")).unwrap();
        std::fs::write(dir.join("queries.jsonl"), "{}\n").unwrap();
        std::fs::write(dir.join("qrels/test.tsv"), "q 0 d 1\n").unwrap();
        std::fs::write(dir.join(".tmp"), "ignored").unwrap();
        let m = DatasetManifest::write_for(&dir, "t", "test").unwrap();
        assert_eq!(
            m.files.keys().collect::<Vec<_>>(),
            vec!["qrels/test.tsv", "queries.jsonl"]
        );
        assert_eq!(DatasetManifest::read(&dir).unwrap(), m);
        let h = m.dataset_hash();
        assert!(m.verify(&dir).unwrap().is_empty());
        std::fs::write(dir.join("qrels/test.tsv"), "q 0 d 2\n").unwrap();
        assert_eq!(m.verify(&dir).unwrap(), vec!["qrels/test.tsv"]);
        let m2 = DatasetManifest::write_for(&dir, "t", "test").unwrap();
        assert_ne!(m2.dataset_hash(), h);
    }

    #[test]
    fn plots_are_verified_but_not_part_of_the_identity() {
        let dir =
            crate::testing::scratch_root().join(format!("lexbench-dataset-plots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("queries.jsonl"), "{}\n").unwrap();
        let without = DatasetManifest::write_for(&dir, "t", "test").unwrap();
        std::fs::create_dir_all(dir.join("plots")).unwrap();
        std::fs::write(dir.join("plots/a.svg"), "<svg/>").unwrap();
        let with = DatasetManifest::write_for(&dir, "t", "test").unwrap();
        assert_eq!(with.dataset_hash(), without.dataset_hash());
        assert_eq!(with.extras.keys().collect::<Vec<_>>(), vec!["plots/a.svg"]);
        assert!(with.verify(&dir).unwrap().is_empty());
        std::fs::write(dir.join("plots/a.svg"), "<svg></svg>").unwrap();
        assert_eq!(with.verify(&dir).unwrap(), vec!["plots/a.svg"]);
        // The language is declared, read back, and part of the identity (issue 68, item 6: BM25
        // follows it), unless it is the one an undeclared dataset of that name is taken to be in.
        let fr = DatasetManifest::write_with_language(&dir, "t", "test", Some(Language::French)).unwrap();
        assert_ne!(fr.dataset_hash(), with.dataset_hash());
        let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
        assert!(text.contains("\"language\": \"fr\""), "{text}");
        assert_eq!(
            DatasetManifest::read(&dir).unwrap().language,
            Some(Language::French)
        );
        assert!(!text.contains("corpus_language"), "{text}");
        // A cross-lingual dataset declares its corpus's language beside the queries'; the same
        // language twice is written once.
        let xl = DatasetManifest::write_with_languages(
            &dir,
            "t",
            "test",
            Some(Language::Ukrainian),
            Some(Language::English),
        )
        .unwrap();
        assert_ne!(xl.dataset_hash(), with.dataset_hash());
        let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
        assert!(text.contains("\"language\": \"uk\""), "{text}");
        assert!(text.contains("\"corpus_language\": \"en\""), "{text}");
        assert_eq!(DatasetManifest::read(&dir).unwrap(), xl);
        let uk = DatasetManifest::write_with_language(&dir, "t", "test", Some(Language::Ukrainian)).unwrap();
        assert_ne!(
            xl.dataset_hash(),
            uk.dataset_hash(),
            "the corpus's language counts too"
        );
        let en = DatasetManifest::write_with_languages(
            &dir,
            "t",
            "test",
            Some(Language::English),
            Some(Language::English),
        )
        .unwrap();
        assert_eq!(en.corpus_language, None);
        assert_eq!(
            en.dataset_hash(),
            with.dataset_hash(),
            "English is what an undeclared ecthr is"
        );
        let bsard_plain = DatasetManifest::write_for(&dir, "bsard-t", "test").unwrap();
        let bsard_fr =
            DatasetManifest::write_with_language(&dir, "bsard-t", "test", Some(Language::French)).unwrap();
        assert_eq!(
            bsard_fr.dataset_hash(),
            bsard_plain.dataset_hash(),
            "French is what bsard is"
        );
        let bsard_en =
            DatasetManifest::write_with_language(&dir, "bsard-t", "test", Some(Language::English)).unwrap();
        assert_ne!(bsard_en.dataset_hash(), bsard_plain.dataset_hash());
        for l in Language::ALL {
            assert_eq!(Language::parse(l.code()), Some(l));
            assert_eq!(Language::parse(&l.name().to_uppercase()), Some(l));
            assert_eq!(serde_json::to_string(&l).unwrap(), format!("\"{}\"", l.code()));
        }
        assert_eq!(Language::parse("german"), None);
        // A manifest without plots serialises without the field: old manifests stay byte-identical.
        let text = serde_json::to_string(&without).unwrap();
        assert!(!text.contains("extras"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 29, item 11: a manifest naming a path outside the dataset (`../x`, an absolute path) is
    /// refused before anything is hashed; a link is not a dataset file.
    #[test]
    fn manifest_paths_stay_inside_the_dataset() {
        let root =
            crate::testing::scratch_root().join(format!("lexbench-dataset-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("ds");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(root.join("outside"), "secret").unwrap();
        std::fs::write(dir.join("queries.jsonl"), "{}\n").unwrap();
        let m = DatasetManifest::write_for(&dir, "t", "test").unwrap();
        let outside_sha = crate::sha256_hex(b"secret");
        for bad in [
            "../outside",
            "/etc/passwd",
            "a//b",
            "./queries.jsonl",
            "",
            "a\\..\\b",
        ] {
            let mut forged = m.clone();
            forged.files.insert(bad.to_owned(), outside_sha.clone());
            let err = forged.verify(&dir).unwrap_err().to_string();
            assert!(err.contains("is not a path inside the dataset"), "{bad:?}: {err}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("outside"), dir.join("link")).unwrap();
            let mut forged = m.clone();
            forged.files.insert("link".into(), outside_sha);
            assert_eq!(forged.verify(&dir).unwrap(), vec!["link"]);
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Issue 29, item 11: a file rewritten after the dataset was opened (verified) is not read as
    /// if it were the verified one: each read checks the bytes it parses.
    #[test]
    fn what_is_read_is_what_was_verified() {
        let root =
            crate::testing::scratch_root().join(format!("lexbench-dataset-toctou-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("ds");
        std::fs::create_dir_all(dir.join("qrels")).unwrap();
        std::fs::create_dir_all(dir.join("splits")).unwrap();
        let doc = |d: &str| format!("{{\"doc\":\"{d}\",\"text\":\"x\"}}\n");
        std::fs::write(dir.join("corpus.jsonl"), doc("d1")).unwrap();
        std::fs::write(
            dir.join("queries.jsonl"),
            "{\"topic\":\"q1\",\"query\":\"q1\",\"text\":\"x\"}\n",
        )
        .unwrap();
        std::fs::write(dir.join("qrels/test.tsv"), "q1 0 d1 1\n").unwrap();
        std::fs::write(
            dir.join("splits/test.json"),
            "{\"dataset\":\"t\",\"name\":\"test\",\"topics\":[\"q1\"]}\n",
        )
        .unwrap();
        DatasetManifest::write_for(&dir, "t", "test").unwrap();
        let ds = Dataset::open(DatasetDir(dir.clone())).unwrap();
        let docs: Vec<CorpusDoc> = ds.corpus().unwrap();
        assert_eq!(docs.len(), 1);
        std::fs::write(dir.join("corpus.jsonl"), doc("forged")).unwrap();
        std::fs::write(dir.join("qrels/test.tsv"), "q1 0 forged 1\n").unwrap();
        let changed = |e: Error| matches!(e, Error::Changed { .. });
        assert!(changed(ds.corpus::<CorpusDoc>().unwrap_err()));
        assert!(changed(ds.qrels("test", &ReadOptions::default()).unwrap_err()));
        assert!(ds.split("test").is_ok() && ds.topics().is_ok());
        let _ = std::fs::remove_dir_all(&root);
    }
}
