//! What the harness needs to know about a built dataset: its identity, the split's topics and qrels,
//! the candidate documents of each topic (its pool, or the whole corpus), and the task's measures.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use lexbench_core::dataset::{Dataset, DatasetDir, DatasetManifest};
use lexbench_core::{DocId, Measure, PoolSizes, Qrels, ReadOptions, Split, Task, TopicId};
use serde::Deserialize;

use crate::error::{Error, Result};

pub use lexbench_core::eval::{
    CORPUS_MEASURES, OPEN_CORPUS_MEASURES, POOLED_EXTRA_MEASURES, POOLED_MEASURES, recorded_measures,
    task_measures,
};

/// A dataset split, loaded for validating and evaluating runs.
#[derive(Debug)]
pub struct DatasetView {
    /// The dataset's name.
    pub name: String,
    /// The split.
    pub split: String,
    /// The manifest (identity: [`DatasetManifest::dataset_hash`]).
    pub manifest: DatasetManifest,
    /// The split's topics.
    pub topics: BTreeSet<TopicId>,
    /// The split's judgments.
    pub qrels: Qrels,
    /// Candidates per topic when the dataset has pools (ECtHR).
    pub pools: Option<BTreeMap<TopicId, HashSet<DocId>>>,
    /// Every document of the corpus.
    pub corpus: HashSet<DocId>,
    /// What its topics rank ([`Dataset::task`]): its measures.
    pub task: Task,
}

#[derive(Deserialize)]
struct DocOnly {
    doc: DocId,
}

impl DatasetView {
    /// Loads `DATA/datasets/<name>` for `split`, checking its files against the manifest.
    pub fn load(data: &Path, name: &str, split: &str) -> Result<Self> {
        lexbench_core::check_name("split name", split)?;
        // The dataset's own problems, said as the harness says them: "dataset NAME: …".
        let bad = |e: lexbench_core::Error| {
            let message = match &e {
                lexbench_core::Error::NotBuilt { dir } => {
                    format!("no manifest.json in {} (is the dataset built?)", dir.display())
                }
                lexbench_core::Error::Changed { files, .. } => {
                    format!(
                        "files differ from its manifest.json ({}); rebuild it",
                        files.join(", ")
                    )
                }
                lexbench_core::Error::NoSplit { split, known, .. } => {
                    format!("no split {split:?} (splits: {})", known.join(", "))
                }
                _ => return Error::from(e),
            };
            Error::Dataset {
                name: name.to_owned(),
                message,
            }
        };
        let ds = Dataset::open_in(data, name).map_err(bad)?;
        let split_rec: Split = ds.split(split).map_err(bad)?;
        let topics: BTreeSet<TopicId> = split_rec.topics.into_iter().collect();
        let qrels = ds.qrels(
            split,
            &ReadOptions {
                known_topics: Some(topics.clone()),
                ..ReadOptions::default()
            },
        )?;
        let corpus: HashSet<DocId> = ds.corpus::<DocOnly>()?.into_iter().map(|d| d.doc).collect();
        let pools = ds.pools()?.map(|list| {
            list.into_iter()
                .filter(|p| topics.contains(&p.topic))
                .map(|p| (p.topic, p.docs.into_iter().collect()))
                .collect()
        });
        let task = ds.task()?;
        Ok(Self {
            task,
            name: name.to_owned(),
            split: split.to_owned(),
            manifest: ds.manifest().clone(),
            topics,
            qrels,
            pools,
            corpus,
        })
    }

    /// The dataset's identity hash.
    pub fn hash(&self) -> String {
        self.manifest.dataset_hash()
    }

    /// The measures an entry records: [`POOLED_MEASURES`] and [`POOLED_EXTRA_MEASURES`] with pools,
    /// [`CORPUS_MEASURES`] without, [`OPEN_CORPUS_MEASURES`] for the open corpus ([`Task`]).
    pub fn measures(&self) -> Vec<Measure> {
        self.task.recorded_measures()
    }

    /// Pool sizes for `R@k%` (`None` without pools).
    pub fn pool_sizes(&self) -> Option<PoolSizes> {
        self.pools
            .as_ref()
            .map(|p| PoolSizes(p.iter().map(|(t, d)| (t.clone(), d.len())).collect()))
    }

    /// May `doc` be returned for `topic`? (In its pool, or in the corpus when there are no pools.)
    pub fn is_candidate(&self, topic: &str, doc: &str) -> bool {
        match &self.pools {
            Some(p) => p.get(topic).is_some_and(|docs| docs.contains(doc)),
            None => self.corpus.contains(doc),
        }
    }
}

/// The current identity hash of `DATA/datasets/<name>`, if it is built.
pub fn current_hash(data: &Path, name: &str) -> Option<String> {
    DatasetManifest::read(&DatasetDir::in_data(data, name).ok()?.0)
        .ok()
        .map(|m| m.dataset_hash())
}
