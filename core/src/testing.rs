//! Test support shared by every crate's tests, behind the `testing` feature (enable it in a
//! crate's `[dev-dependencies]`): where the real fixtures are, [`TinyDataset`](crate::testing::TinyDataset), a small built
//! dataset written in the layout [`Dataset::open`](crate::dataset::Dataset::open) reads, and `scratch_root`, the folder tests
//! write under (cleared of finished test processes' folders).
//!
//! Fixtures (real judgments, guides, HUDOC metadata, the published release) live outside the
//! repository, in `../shared/fixtures` beside the checkout, or wherever `LEXBENCH_FIXTURES` points.
//! CI always has them, so a missing folder is a failure, never a silent skip.
//!
//! ```
//! use lexbench_core::dataset::{Dataset, Language};
//! use lexbench_core::testing::TinyDataset;
//!
//! let data = std::env::temp_dir().join(format!("lexbench-tiny-doc-{}", std::process::id()));
//! TinyDataset::new("mini")
//!     .language(Language::English)
//!     .doc("d1", "the right to a fair trial")
//!     .doc("d2", "the prohibition of torture")
//!     .topic("t1", "q1", "fair trial", &["d1"], "test")
//!     .pool("t1", &["d1", "d2"])
//!     .write_in(&data)?;
//! let ds = Dataset::open_in(&data, "mini")?;
//! assert_eq!(ds.split_topics("test")?[0].text, "fair trial");
//! # std::fs::remove_dir_all(&data)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod scratch;
pub use scratch::scratch_root;
#[cfg(test)]
use scratch::{process_start, sweep_dead_scratch};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::dataset::{CorpusDoc, Dataset, DatasetDir, DatasetManifest, DatasetTopic, Language};
use crate::error::{Error, Result};
use crate::graph::{GRAPH_FILE, LegalGraph};
use crate::ids::{DocId, QueryId, TopicId};
use crate::records::{Pool, Split};
use crate::trec::Qrels;

/// The fixtures folder: `$LEXBENCH_FIXTURES`, else the first `shared/fixtures` found beside the
/// current directory or one of its ancestors (cargo runs tests in the package's folder, so from
/// `CHECKOUT/core` this finds `CHECKOUT/../shared/fixtures`).
///
/// # Panics
/// When the folder does not exist: tests that need fixtures must fail, not skip, without them.
pub fn fixtures_dir() -> PathBuf {
    let dir = match std::env::var_os("LEXBENCH_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => {
            let cwd = std::env::current_dir().unwrap_or_default();
            cwd.ancestors()
                .map(|a| a.join("shared/fixtures"))
                .find(|d| d.is_dir())
                .unwrap_or_else(|| cwd.join("../shared/fixtures"))
        }
    };
    assert!(
        dir.is_dir(),
        "fixtures folder {} not found: set LEXBENCH_FIXTURES or put ../shared/fixtures beside the checkout",
        dir.display()
    );
    dir
}

/// The HuggingFace replicas and transformers' outputs on them (`scripts/hf-replicas`): the committed
/// `tests/golden/hf-replicas` of the checkout, or the folder `$LEXBENCH_HF_REPLICAS` names (such as
/// the ones `scripts/hf-replicas --check` has just made in target/).
///
/// # Panics
/// When it has no `reference.json`: the golden tests fail, never skip.
pub fn hf_replicas_dir() -> PathBuf {
    let dir = std::env::var_os("LEXBENCH_HF_REPLICAS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/hf-replicas"),
        PathBuf::from,
    );
    assert!(
        dir.join("reference.json").is_file(),
        "{} has no reference.json: it is committed (tests/golden/hf-replicas, made by \
         scripts/hf-replicas); LEXBENCH_HF_REPLICAS names another folder",
        dir.display()
    );
    dir
}

/// A file under the fixtures folder, which must exist.
///
/// # Panics
/// When the file does not exist.
pub fn fixture(rel: &str) -> PathBuf {
    let p = fixtures_dir().join(rel);
    assert!(p.is_file(), "fixture {} not found", p.display());
    p
}

/// What the manifest of a [`TinyDataset`] says built it.
pub const TINY_BUILT_BY: &str = "lexbench-core testing::TinyDataset";

/// A small but valid built dataset, described in a few calls and written in the layout of
/// [`crate::dataset`]: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`, `splits/<split>.json`,
/// `pools.jsonl` and `graph.json` when given, and the manifest ([`DatasetManifest`]) last.
///
/// The output is deterministic: corpus, topics and pools in the order given, each split's topics
/// sorted, qrels sorted ([`Qrels::write`]). Ids are checked when written: an invalid one makes
/// [`TinyDataset::write`] fail naming it, so the builder's calls chain without `?`.
#[derive(Debug, Clone)]
pub struct TinyDataset {
    name: String,
    language: Option<Language>,
    corpus: Vec<CorpusDoc>,
    /// `(topic, query, text, split)`; no split: in `queries.jsonl` only.
    topics: Vec<(String, String, String, Option<String>)>,
    /// `(topic, doc, grade)`.
    judgments: Vec<(String, String, i32)>,
    pools: Vec<(String, Vec<String>)>,
    graph: Option<LegalGraph>,
    /// The first id that did not parse, reported by `write`.
    bad_id: Option<String>,
}

impl TinyDataset {
    /// An empty dataset called `name` (the manifest's and the splits' `dataset`), with no language.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            language: None,
            corpus: Vec::new(),
            topics: Vec::new(),
            judgments: Vec::new(),
            pools: Vec::new(),
            graph: None,
            bad_id: None,
        }
    }

    /// Declares the language of its texts in the manifest.
    pub fn language(mut self, language: Language) -> Self {
        self.language = Some(language);
        self
    }

    /// Adds document `doc` with `text` to the corpus.
    pub fn doc(self, doc: &str, text: &str) -> Self {
        match DocId::new(doc) {
            Ok(doc) => self.corpus_doc(CorpusDoc {
                doc,
                text: text.to_owned(),
                item: None,
                num: None,
                section: None,
            }),
            Err(e) => self.bad(e),
        }
    }

    /// Adds a whole corpus record (ECtHR paragraphs carry `item`, `num` and `section`).
    pub fn corpus_doc(mut self, doc: CorpusDoc) -> Self {
        self.corpus.push(doc);
        self
    }

    /// Adds topic `topic` asking query `query` with `text`, in split `split`, with `positives`
    /// judged relevant (grade 1) in `qrels/<split>.tsv`.
    pub fn topic(mut self, topic: &str, query: &str, text: &str, positives: &[&str], split: &str) -> Self {
        self.topics.push((
            topic.to_owned(),
            query.to_owned(),
            text.to_owned(),
            Some(split.to_owned()),
        ));
        for p in positives {
            self.judgments.push((topic.to_owned(), (*p).to_owned(), 1));
        }
        self
    }

    /// Adds a topic to `queries.jsonl` that no split names (and no qrels judge).
    pub fn unsplit_topic(mut self, topic: &str, query: &str, text: &str) -> Self {
        self.topics
            .push((topic.to_owned(), query.to_owned(), text.to_owned(), None));
        self
    }

    /// Gives topic `topic` the candidate pool `docs` (`pools.jsonl`, written once any pool is given).
    pub fn pool(mut self, topic: &str, docs: &[&str]) -> Self {
        self.pools
            .push((topic.to_owned(), docs.iter().map(|d| (*d).to_owned()).collect()));
        self
    }

    /// Writes `graph` as the dataset's `graph.json`.
    pub fn graph(mut self, graph: LegalGraph) -> Self {
        self.graph = Some(graph);
        self
    }

    fn bad(mut self, e: Error) -> Self {
        self.bad_id.get_or_insert(e.to_string());
        self
    }

    /// Writes the dataset as the folder `dir`, replacing it whole if it exists
    /// ([`crate::io::write_dir_atomic`]); returns `dir`. Fails on an invalid id, a split that names
    /// a topic twice, a judgment or pool of a topic that is not in `queries.jsonl`, or an I/O error.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        if let Some(bad) = &self.bad_id {
            return Err(Error::MissingInput(format!("TinyDataset {}: {bad}", self.name)));
        }
        let mut topics = Vec::new();
        let mut split_of: BTreeMap<TopicId, Option<&str>> = BTreeMap::new();
        let mut splits: BTreeMap<&str, Vec<TopicId>> = BTreeMap::new();
        for (topic, query, text, split) in &self.topics {
            let topic = TopicId::new(topic.as_str())?;
            if split_of.insert(topic.clone(), split.as_deref()).is_some() {
                return Err(self.invalid(format!("topic {topic} is given twice")));
            }
            if let Some(split) = split {
                crate::ids::check_name("split name", split)?;
                splits.entry(split).or_default().push(topic.clone());
            }
            topics.push(DatasetTopic {
                topic,
                query: QueryId::new(query.as_str())?,
                text: text.clone(),
                item: None,
                guide: None,
            });
        }
        let mut qrels: BTreeMap<&str, Qrels> = BTreeMap::new();
        for (topic, doc, grade) in &self.judgments {
            let topic = TopicId::new(topic.as_str())?;
            let Some(Some(split)) = split_of.get(&topic) else {
                return Err(self.invalid(format!("judged topic {topic} is in no split")));
            };
            qrels
                .entry(split)
                .or_default()
                .insert(topic, DocId::new(doc.as_str())?, *grade);
        }
        let pools = self
            .pools
            .iter()
            .map(|(topic, docs)| {
                let topic = TopicId::new(topic.as_str())?;
                if !split_of.contains_key(&topic) {
                    return Err(self.invalid(format!("pooled topic {topic} is not in queries.jsonl")));
                }
                let docs = docs
                    .iter()
                    .map(|d| DocId::new(d.as_str()))
                    .collect::<Result<_>>()?;
                Ok(Pool { topic, docs })
            })
            .collect::<Result<Vec<_>>>()?;
        crate::io::write_dir_atomic(dir, |tmp| -> Result<()> {
            crate::io::write_jsonl(&tmp.join("corpus.jsonl"), &self.corpus)?;
            crate::io::write_jsonl(&tmp.join("queries.jsonl"), &topics)?;
            if !pools.is_empty() {
                crate::io::write_jsonl(&tmp.join("pools.jsonl"), &pools)?;
            }
            for (name, mut list) in splits {
                list.sort();
                let split = Split {
                    dataset: self.name.clone(),
                    name: name.to_owned(),
                    topics: list,
                };
                crate::io::write_json_pretty(&tmp.join("splits").join(format!("{name}.json")), &split)?;
            }
            for (name, q) in &qrels {
                q.write(&tmp.join("qrels").join(format!("{name}.tsv")))?;
            }
            if let Some(graph) = &self.graph {
                graph.write(&tmp.join(GRAPH_FILE))?;
            }
            DatasetManifest::write_with_language(tmp, &self.name, TINY_BUILT_BY, self.language)?;
            Ok(())
        })?;
        Ok(dir.to_owned())
    }

    /// Writes the dataset as `data/datasets/<name>` ([`DatasetDir::in_data`]); returns that folder.
    pub fn write_in(&self, data: &Path) -> Result<PathBuf> {
        let dir = DatasetDir::in_data(data, &self.name)?;
        self.write(&dir.0)
    }

    /// [`TinyDataset::write_in`], then [`Dataset::open`] on the result.
    pub fn open_in(&self, data: &Path) -> Result<Dataset> {
        Dataset::open(DatasetDir(self.write_in(data)?))
    }

    fn invalid(&self, why: String) -> Error {
        Error::MissingInput(format!("TinyDataset {}: {why}", self.name))
    }
}

#[cfg(test)]
mod tests {
    //! Properties: what [`TinyDataset`] writes is a dataset [`Dataset::open`] accepts, with the
    //! topics, splits, qrels, pools, graph and language given; writing twice gives the same bytes
    //! (and replaces the folder whole); an invalid id or an unknown topic is an error naming it.
    use super::*;
    use crate::ArticleId;
    use crate::graph::GraphNode;
    use crate::trec::ReadOptions;

    fn scratch(name: &str) -> PathBuf {
        let d =
            crate::testing::scratch_root().join(format!("lexbench-core-tiny-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_sweep_removes_only_the_folders_of_processes_that_are_gone() {
        let me = std::process::id();
        let Some(start) = process_start(me) else {
            return; // no /proc here: nothing is ever removed (see `sweep_dead_scratch`)
        };
        let parent = scratch("sweep");
        let live = format!("{me}-{start}");
        let reused = format!("{me}-{}", start + 1); // this id, another start: a dead process's
        let gone = "4294967295-1".to_string(); // above any pid_max
        for name in [&live, &reused, &gone, &"notes".to_string(), &"17".to_string()] {
            std::fs::create_dir_all(parent.join(name).join("inner")).unwrap();
        }
        sweep_dead_scratch(&parent, "mine");
        let mut left: Vec<String> = std::fs::read_dir(&parent)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut kept = vec!["17".to_string(), "notes".to_string(), live.clone()];
        kept.sort();
        assert_eq!(left, kept);
        // The process's own root sits under the shared parent and survives its own sweep.
        let root = scratch_root();
        assert!(root.is_dir() && root.ends_with(&live), "{}", root.display());
        std::fs::remove_dir_all(&parent).unwrap();
    }

    fn sample() -> TinyDataset {
        let mut graph = LegalGraph::default();
        graph.nodes.push(GraphNode {
            kind: "article".into(),
            label: "d1".into(),
        });
        graph.article_nodes.insert(ArticleId::new("d1").unwrap(), 0);
        TinyDataset::new("tiny")
            .language(Language::French)
            .doc("d1", "un")
            .doc("d2", "deux")
            .topic("t2", "q1", "deux ?", &["d2"], "test")
            .topic("t1", "q1", "un ?", &["d1", "d2"], "test")
            .topic("t3", "q3", "trois ?", &[], "train")
            .unsplit_topic("t4", "q4", "quatre ?")
            .pool("t1", &["d1", "d2"])
            .graph(graph)
    }

    #[test]
    fn dataset_open_accepts_what_it_writes() {
        let data = scratch("open");
        let ds = sample().open_in(&data).unwrap();
        assert_eq!(ds.manifest().name, "tiny");
        assert_eq!(ds.manifest().built_by, TINY_BUILT_BY);
        assert_eq!(ds.manifest().language, Some(Language::French));
        assert_eq!(ds.split_names().unwrap(), vec!["test", "train"]);
        let names = |v: Vec<DatasetTopic>| v.into_iter().map(|t| t.topic.to_string()).collect::<Vec<_>>();
        assert_eq!(names(ds.topics().unwrap()), vec!["t2", "t1", "t3", "t4"]);
        assert_eq!(
            names(ds.split_topics("test").unwrap()),
            vec!["t1", "t2"],
            "sorted"
        );
        assert_eq!(ds.split("train").unwrap().dataset, "tiny");
        let qrels = ds.qrels("test", &ReadOptions::default()).unwrap();
        assert_eq!(qrels.len(), 3);
        assert!(
            !ds.dir().qrels("train").exists(),
            "a split without judgments has no qrels"
        );
        let pools = ds.pools().unwrap().unwrap();
        assert_eq!(pools.len(), 1);
        assert_eq!(ds.corpus::<CorpusDoc>().unwrap().len(), 2);
        let graph = LegalGraph::read(&ds.dir().0.join(GRAPH_FILE)).unwrap();
        assert_eq!(graph.node_of(&DocId::new("d1").unwrap()), Some(0));
        assert!(ds.manifest().files.contains_key(GRAPH_FILE));
    }

    #[test]
    fn output_is_deterministic_and_replaces_the_folder() {
        let data = scratch("det");
        let a = sample().open_in(&data).unwrap().hash();
        std::fs::write(data.join("datasets/tiny/stray.txt"), "x").unwrap();
        let b = sample().open_in(&data).unwrap().hash();
        assert_eq!(a, b);
        assert!(!data.join("datasets/tiny/stray.txt").exists());
        let without_pools = TinyDataset::new("tiny")
            .doc("d1", "un")
            .topic("t1", "q1", "un", &["d1"], "test");
        let ds = without_pools.open_in(&data).unwrap();
        assert_ne!(ds.hash(), a);
        assert!(ds.pools().unwrap().is_none());
    }

    #[test]
    fn bad_ids_and_unknown_topics_are_errors() {
        let data = scratch("bad");
        let err = TinyDataset::new("x").doc("a b", "t").write_in(&data).unwrap_err();
        assert!(err.to_string().contains("\"a b\""), "{err}");
        let err = TinyDataset::new("x")
            .doc("d", "t")
            .topic("t1", "q", "x", &[], "test")
            .pool("t9", &["d"])
            .write_in(&data)
            .unwrap_err();
        assert!(err.to_string().contains("t9"), "{err}");
        assert!(TinyDataset::new("../x").write_in(&data).is_err());
    }
}
