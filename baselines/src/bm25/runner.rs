//! The edge: BM25 over a built dataset (`DATA/datasets/<name>`, see `lexbench_core::dataset`) into
//! `DATA/runs/<name>/<split>/bm25.trec` and its JSON sidecar.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::dataset::{CorpusDoc, Dataset, DatasetDir, DatasetManifest, DatasetTopic};
use lexbench_core::run::SidecarHeader;
use lexbench_core::{Pool, Run, Split, TopicId};
use serde::{Deserialize, Serialize};

use super::analyzer::Analyzer;
use super::index::Bm25Index;
use super::params::Bm25Params;
use crate::error::{Error, Result};

/// The run tag and file stem of BM25 runs.
pub const SYSTEM: &str = "bm25";

pub use lexbench_core::run::SIDECAR_SCHEMA;

/// `bm25.json`, written beside the run: what produced it, on which data, how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSidecar {
    /// System `bm25`, dataset, split, its version, seed 0 (BM25 is deterministic), revision, program.
    #[serde(flatten)]
    pub header: SidecarHeader,
    /// The parameters, the analyzer resolved.
    pub config: Bm25Params,
    /// Index facts.
    pub index: IndexFacts,
    /// Topics ranked and hits written.
    pub topics: usize,
    /// Total hits written.
    pub hits: usize,
    /// Wall-clock seconds per phase.
    pub timings: Timings,
}

/// Facts about the index a run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexFacts {
    /// Documents indexed.
    pub documents: usize,
    /// Distinct terms.
    pub vocabulary: usize,
    /// Whether topics were ranked within pools (`pools.jsonl`) or over the whole corpus.
    pub pooled: bool,
}

/// Wall-clock seconds per phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timings {
    /// Reading and checking the dataset.
    pub read_s: f64,
    /// Analysing and indexing the corpus.
    pub index_s: f64,
    /// Ranking every topic.
    pub retrieve_s: f64,
    /// Writing the run.
    pub write_s: f64,
}

/// What [`run_dataset`] wrote.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// `DATA/runs/<dataset>/<split>/bm25.trec`.
    pub run_path: PathBuf,
    /// `DATA/runs/<dataset>/<split>/bm25.json`.
    pub sidecar_path: PathBuf,
    /// The sidecar's content.
    pub sidecar: RunSidecar,
}

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

/// Ranks every topic of `split` of the dataset `DATA/datasets/<dataset>` with BM25 and writes the run
/// and its sidecar under `DATA/runs/<dataset>/<split>/`. Topics with a pool (ECtHR) rank their pool;
/// without `pools.jsonl` (BSARD) every topic ranks the whole corpus.
pub fn run_dataset(data: &Path, dataset: &str, split: &str, params: &Bm25Params) -> Result<RunOutput> {
    params.validate()?;
    let mut params = params.clone();
    let t0 = Instant::now();
    let dir = DatasetDir::in_data(data, dataset)?;
    let inputs = read_inputs(&dir, split)?;
    params.language = Some(params.language_of(dataset, inputs.manifest.language));
    let t1 = Instant::now();
    let analyzer = Analyzer::new(params.language_of(dataset, inputs.manifest.language));
    let index = Bm25Index::build(analyzer, inputs.corpus.iter().map(|d| (&d.doc, d.text.as_str())));
    let t2 = Instant::now();
    let mut run = Run::new(SYSTEM);
    for topic in &inputs.topics {
        let hits = match &inputs.pools {
            Some(pools) => {
                let pool = pools.get(&topic.topic).ok_or_else(|| Error::Format {
                    path: dir.pools(),
                    message: format!("topic {} has no pool", topic.topic),
                })?;
                let mut numbers = Vec::with_capacity(pool.docs.len());
                for d in &pool.docs {
                    numbers.push(index.doc_number(d).ok_or_else(|| Error::Format {
                        path: dir.pools(),
                        message: format!(
                            "pool of topic {} lists {d}, which is not in corpus.jsonl",
                            topic.topic
                        ),
                    })?);
                }
                index.search_pool(&topic.text, &numbers, &params, params.idf, params.top_k)
            }
            None => index.search(&topic.text, &params, params.top_k),
        };
        run.topics.insert(topic.topic.clone(), hits);
    }
    let t3 = Instant::now();
    let run_path = run_path(data, dataset, split, SYSTEM)?;
    run.write(&run_path)?;
    let t4 = Instant::now();
    let sidecar = RunSidecar {
        header: SidecarHeader {
            schema_version: SIDECAR_SCHEMA,
            system: SYSTEM.to_owned(),
            dataset: dataset.to_owned(),
            split: split.to_owned(),
            dataset_hash: inputs.manifest.dataset_hash(),
            seed: 0,
            git_revision: git_revision(),
            program: Some(format!("lexbench-baselines {}", env!("CARGO_PKG_VERSION"))),
        },
        config: params,
        index: IndexFacts {
            documents: index.len(),
            vocabulary: index.vocabulary_len(),
            pooled: inputs.pools.is_some(),
        },
        topics: run.topics.len(),
        hits: run.len(),
        timings: Timings {
            read_s: (t1 - t0).as_secs_f64(),
            index_s: (t2 - t1).as_secs_f64(),
            retrieve_s: (t3 - t2).as_secs_f64(),
            write_s: (t4 - t3).as_secs_f64(),
        },
    };
    let sidecar_path = run_path.with_extension("json");
    lexbench_core::io::write_json_pretty(&sidecar_path, &sidecar)?;
    Ok(RunOutput {
        run_path,
        sidecar_path,
        sidecar,
    })
}
