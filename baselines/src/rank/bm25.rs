//! BM25 over a built dataset (`DATA/datasets/<name>`, see `lexbench_core::dataset`) into
//! `DATA/runs/<name>/<split>/bm25.trec` and its JSON sidecar.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::Run;
use lexbench_core::dataset::DatasetDir;
use lexbench_core::run::SidecarHeader;
use serde::{Deserialize, Serialize};

use super::{git_revision, read_inputs, run_path};
use crate::error::{Error, Result};
use crate::sparse::{Analyzer, Bm25Index, Bm25Params};

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

#[cfg(test)]
mod tests {
    //! Properties: the dataset runner writes a run over the split's topics (pools respected) and a
    //! sidecar with the dataset hash and config.

    use std::path::PathBuf;

    use lexbench_core::dataset::{CorpusDoc, DatasetManifest, DatasetTopic};
    use lexbench_core::{DocId, Pool, QueryId, ReadOptions, Run, Split, TopicId};

    use super::*;
    use crate::sparse::Language;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lexbench-bm25-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn runner_ranks_pools_and_writes_sidecar() {
        let data = scratch("runner");
        let ds = data.join("datasets/mini");
        std::fs::create_dir_all(ds.join("splits")).unwrap();
        let d = |s: &str| DocId::new(s).unwrap();
        let corpus = vec![
            CorpusDoc {
                doc: d("001-1:1"),
                text: "The applicant complained of torture in prison".into(),
                item: None,
                num: None,
                section: None,
            },
            CorpusDoc {
                doc: d("001-1:2"),
                text: "The Government contested the complaint".into(),
                item: None,
                num: None,
                section: None,
            },
            CorpusDoc {
                doc: d("001-2:1"),
                text: "Prison conditions and torture were examined".into(),
                item: None,
                num: None,
                section: None,
            },
        ];
        let q = QueryId::new("q1").unwrap();
        let topics = vec![
            DatasetTopic {
                topic: TopicId::new("q1/001-1").unwrap(),
                query: q.clone(),
                text: "torture in prison".into(),
                item: None,
                guide: None,
            },
            DatasetTopic {
                topic: TopicId::new("q1/001-2").unwrap(),
                query: q,
                text: "torture in prison".into(),
                item: None,
                guide: None,
            },
        ];
        let pools = vec![
            Pool {
                topic: topics[0].topic.clone(),
                docs: vec![d("001-1:1"), d("001-1:2")],
            },
            Pool {
                topic: topics[1].topic.clone(),
                docs: vec![d("001-2:1")],
            },
        ];
        lexbench_core::io::write_jsonl(&ds.join("corpus.jsonl"), &corpus).unwrap();
        lexbench_core::io::write_jsonl(&ds.join("queries.jsonl"), &topics).unwrap();
        lexbench_core::io::write_jsonl(&ds.join("pools.jsonl"), &pools).unwrap();
        let split = Split {
            dataset: "mini".into(),
            name: "test".into(),
            topics: vec![topics[0].topic.clone()],
        };
        std::fs::write(
            ds.join("splits/test.json"),
            serde_json::to_string(&split).unwrap(),
        )
        .unwrap();
        let manifest = DatasetManifest::write_for(&ds, "mini", "test").unwrap();

        let out = run_dataset(&data, "mini", "test", &Bm25Params::default()).unwrap();
        assert_eq!(out.run_path, data.join("runs/mini/test/bm25.trec"));
        let run = Run::read(&out.run_path, &ReadOptions::default()).unwrap();
        assert_eq!(run.topics.len(), 1, "only the split's topics");
        let hits = &run.topics[&topics[0].topic];
        assert_eq!(
            hits.iter().map(|h| h.doc.as_str()).collect::<Vec<_>>(),
            vec!["001-1:1", "001-1:2"]
        );
        let side: RunSidecar =
            serde_json::from_str(&std::fs::read_to_string(&out.sidecar_path).unwrap()).unwrap();
        assert_eq!(side.header.dataset_hash, manifest.dataset_hash());
        assert_eq!(side.config.language, Some(Language::English));
        assert_eq!((side.topics, side.hits, side.index.documents), (1, 2, 3));
        assert!(side.index.pooled);

        // A dataset file changed after its manifest was written is refused.
        std::fs::write(ds.join("corpus.jsonl"), "{}\n").unwrap();
        let err = run_dataset(&data, "mini", "test", &Bm25Params::default()).unwrap_err();
        assert!(err.to_string().contains("corpus.jsonl"), "{err}");
    }
}
