//! The retrieval layer: ranking a split of a built dataset into a TREC run and its JSON sidecar under
//! `DATA/runs/<dataset>/<split>/<system>.{trec,json}`, the layout the leaderboard reads.
//!
//! - [`bm25`]: BM25 ([`crate::sparse`]) over each topic's pool or the whole corpus.
//! - [`dense`]: a zero-shot bi-encoder; [`colbert`]: late interaction (MaxSim); [`cross`]: a
//!   cross-encoder reranking BM25's top candidates; [`neural`]: the sidecar of every neural run
//!   (also written for runs of trained graph models) and its writer.
//!
//! Below it: `encoder`, `scorers`, `sparse`; above it: `train`, which ranks with trained models
//! through [`neural::write_neural_run`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lexbench_core::dataset::{CorpusDoc, Dataset, DatasetDir, DatasetManifest, DatasetTopic};
use lexbench_core::{Pool, Split, TopicId};

use crate::error::{Error, Result};

pub mod bm25;
pub mod colbert;
pub mod cross;
pub mod dense;
pub mod neural;

/// `DATA/runs/<dataset>/<split>/<system>.trec`; each part must be a name, not a path
/// ([`lexbench_core::check_name`]), so a run is never written outside `DATA/runs`.
pub fn run_path(data: &Path, dataset: &str, split: &str, system: &str) -> Result<PathBuf> {
    Ok(lexbench_core::datadir::DataDir::new(data).run_file(dataset, split, system)?)
}

/// The revision of the checkout: `LEXBENCH_GIT_REV` if set, else `git rev-parse HEAD` in the current
/// directory, else `None`.
pub fn git_revision() -> Option<String> {
    if let Ok(v) = std::env::var("LEXBENCH_GIT_REV")
        && !v.trim().is_empty()
    {
        return Some(v.trim().to_owned());
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let rev = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !rev.is_empty()).then_some(rev)
}

/// The topics of a split with their texts and pools, read and checked (shared with the neural runs).
pub(crate) struct Inputs {
    pub(crate) manifest: DatasetManifest,
    pub(crate) topics: Vec<DatasetTopic>,
    pub(crate) corpus: Vec<CorpusDoc>,
    pub(crate) pools: Option<BTreeMap<TopicId, Pool>>,
}

pub(crate) fn read_inputs(dir: &DatasetDir, split: &str) -> Result<Inputs> {
    lexbench_core::check_name("split name", split)?;
    let ds = Dataset::open(dir.clone())?;
    let split_rec: Split = ds.split(split)?;
    let split_path = dir.split(split);
    let all: Vec<DatasetTopic> = ds.topics()?;
    let by_topic: BTreeMap<&TopicId, &DatasetTopic> = all.iter().map(|t| (&t.topic, t)).collect();
    let mut topics = Vec::with_capacity(split_rec.topics.len());
    for t in &split_rec.topics {
        let rec = by_topic.get(t).ok_or_else(|| Error::Format {
            path: split_path.clone(),
            message: format!("topic {t} is not in queries.jsonl"),
        })?;
        topics.push((*rec).clone());
    }
    let corpus: Vec<CorpusDoc> = ds.corpus()?;
    let pools = ds
        .pools()?
        .map(|list| list.into_iter().map(|p| (p.topic.clone(), p)).collect());
    Ok(Inputs {
        manifest: ds.manifest().clone(),
        topics,
        corpus,
        pools,
    })
}
