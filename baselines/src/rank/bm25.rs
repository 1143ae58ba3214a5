//! BM25 over a built dataset (`DATA/datasets/<name>`, see `lexbench_core::dataset`): the
//! [`Bm25Ranker`] behind `DATA/runs/<name>/<split>/bm25.trec` and its JSON sidecar.

use std::time::Instant;

use lexbench_core::trec::trec_order;
use lexbench_core::{Hit, Run};
use serde::{Deserialize, Serialize};

use super::{Ranked, Ranker, RunOutput, RunSidecar, SplitInputs};
use crate::error::{Error, Result};
use crate::sparse::rank_bm25::{OkapiDoc, RANK_BM25_EPSILON, RankBm25Okapi, lower_split};
use crate::sparse::{Analyzer, Bm25Index, Bm25Params, Bm25Variant};

/// The run tag and file stem of BM25 runs.
pub const SYSTEM: &str = "bm25";

/// The run tag and file stem of [`Bm25Variant::RankBm25Okapi`]'s runs by default.
pub const RANK_BM25_OKAPI_SYSTEM: &str = "rank-bm25-okapi";

pub use lexbench_core::run::SIDECAR_SCHEMA;

/// What a BM25 sidecar records besides the common fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bm25Details {
    /// The parameters, the analyzer resolved (from the dataset's manifest when not given).
    pub config: Bm25Params,
    /// Index facts.
    pub index: IndexFacts,
}

/// `bm25.json`, written beside the run.
pub type Bm25Sidecar = RunSidecar<Bm25Details>;

/// What writing a BM25 run wrote.
pub type Bm25Output = RunOutput<Bm25Details>;

/// Facts about the index a run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexFacts {
    /// Documents indexed.
    pub documents: usize,
    /// Distinct terms.
    pub vocabulary: usize,
}

/// BM25: topics with a pool (ECtHR) rank their pool; without `pools.jsonl` (BSARD) every topic ranks
/// the whole corpus. Deterministic (seed 0).
#[derive(Debug, Clone)]
pub struct Bm25Ranker {
    params: Bm25Params,
}

impl Bm25Ranker {
    /// A ranker with `params` (validated).
    pub fn new(params: Bm25Params) -> Result<Self> {
        params.validate()?;
        Ok(Self { params })
    }
}

impl Ranker for Bm25Ranker {
    type Details = Bm25Details;

    fn seed(&self) -> u64 {
        0
    }

    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<Bm25Details>> {
        if self.params.variant == Bm25Variant::RankBm25Okapi {
            return rank_okapi(&self.params, inputs);
        }
        let t1 = Instant::now();
        let mut params = self.params.clone();
        let (language, query_language) = params.languages_of(
            &inputs.dataset,
            inputs.manifest.language,
            inputs.manifest.corpus_language,
        );
        params.language = Some(language);
        params.query_language = (query_language != language).then_some(query_language);
        let index = Bm25Index::build(
            Analyzer::new(language),
            inputs.corpus.iter().map(|d| (&d.doc, d.text.as_str())),
        )
        .with_query_analyzer(Analyzer::new(query_language));
        let t2 = Instant::now();
        let mut run = Run::new(SYSTEM);
        // Pool topics are ranked as they come (a pool naming an unknown document is an error); the
        // whole-corpus ones are collected and ranked together on all cores.
        let mut whole = Vec::new();
        for topic in &inputs.topics {
            match inputs.pool(&topic.topic)? {
                Some(pool) => {
                    let mut numbers = Vec::with_capacity(pool.docs.len());
                    for d in &pool.docs {
                        numbers.push(index.doc_number(d).ok_or_else(|| Error::Format {
                            path: inputs.dir.pools(),
                            message: format!(
                                "pool of topic {} lists {d}, which is not in corpus.jsonl",
                                topic.topic
                            ),
                        })?);
                    }
                    let hits = index.search_pool(&topic.text, &numbers, &params, params.idf, params.top_k);
                    run.topics.insert(topic.topic.clone(), hits);
                }
                None => whole.push(topic),
            }
        }
        let queries: Vec<&str> = whole.iter().map(|t| t.text.as_str()).collect();
        for (topic, hits) in whole
            .iter()
            .zip(index.search_batch(&queries, &params, params.top_k))
        {
            run.topics.insert(topic.topic.clone(), hits);
        }
        let t3 = Instant::now();
        Ok(Ranked {
            run,
            details: Bm25Details {
                index: IndexFacts {
                    documents: index.len(),
                    vocabulary: index.vocabulary_len(),
                },
                config: params,
            },
            timings: [
                ("index_s".to_owned(), (t2 - t1).as_secs_f64()),
                ("retrieve_s".to_owned(), (t3 - t2).as_secs_f64()),
            ]
            .into(),
        })
    }
}

/// [`Bm25Variant::RankBm25Okapi`]: one rank_bm25 `BM25Okapi` per topic over its pool's documents in
/// the pool's order (a judgment's paragraphs, as LexCLiPR builds one per judgment), or one over the
/// whole corpus for topics without a pool; every candidate ranked, ties in trec_eval's order (doc id
/// descending), the best `top_k` kept. Documents are tokenised once.
fn rank_okapi(params: &Bm25Params, inputs: &SplitInputs) -> Result<Ranked<Bm25Details>> {
    let t1 = Instant::now();
    let mut docs: Vec<Option<OkapiDoc>> = vec![None; inputs.corpus.len()];
    let position: std::collections::HashMap<&lexbench_core::DocId, usize> = inputs
        .corpus
        .iter()
        .enumerate()
        .map(|(i, d)| (&d.doc, i))
        .collect();
    let mut pools: Vec<Option<Vec<usize>>> = Vec::with_capacity(inputs.topics.len());
    for topic in &inputs.topics {
        pools.push(match inputs.pool(&topic.topic)? {
            Some(pool) => Some(
                pool.docs
                    .iter()
                    .map(|d| {
                        position.get(d).copied().ok_or_else(|| Error::Format {
                            path: inputs.dir.pools(),
                            message: format!(
                                "pool of topic {} lists {d}, which is not in corpus.jsonl",
                                topic.topic
                            ),
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
            None => None,
        });
    }
    let whole: Vec<usize> = (0..inputs.corpus.len()).collect();
    for i in pools.iter().flat_map(|p| p.as_deref().unwrap_or(&whole)) {
        if docs[*i].is_none() {
            docs[*i] = Some(OkapiDoc::from_text(&inputs.corpus[*i].text));
        }
    }
    let documents = docs.iter().filter(|d| d.is_some()).count();
    let docs: Vec<OkapiDoc> = docs.into_iter().map(Option::unwrap_or_default).collect();
    let vocabulary: std::collections::HashSet<&str> = docs.iter().flat_map(|d| d.terms()).collect();
    let t2 = Instant::now();
    let mut run = Run::new(SYSTEM);
    let mut corpus_index = None;
    for (topic, pool) in inputs.topics.iter().zip(&pools) {
        let members = pool.as_deref().unwrap_or(&whole);
        let fresh;
        let bm = match pool {
            Some(_) => {
                fresh = RankBm25Okapi::new(
                    members.iter().map(|&i| &docs[i]).collect(),
                    params.k1,
                    params.b,
                    RANK_BM25_EPSILON,
                );
                &fresh
            }
            None => corpus_index.get_or_insert_with(|| {
                RankBm25Okapi::new(docs.iter().collect(), params.k1, params.b, RANK_BM25_EPSILON)
            }),
        };
        let scores = bm.get_scores(&lower_split(&topic.text));
        let mut hits: Vec<Hit> = members
            .iter()
            .zip(scores)
            .map(|(&i, score)| Hit {
                doc: inputs.corpus[i].doc.clone(),
                score,
            })
            .collect();
        hits.sort_by(trec_order);
        hits.truncate(params.top_k);
        run.topics.insert(topic.topic.clone(), hits);
    }
    let t3 = Instant::now();
    Ok(Ranked {
        run,
        details: Bm25Details {
            index: IndexFacts {
                documents,
                vocabulary: vocabulary.len(),
            },
            config: params.clone(),
        },
        timings: [
            ("index_s".to_owned(), (t2 - t1).as_secs_f64()),
            ("retrieve_s".to_owned(), (t3 - t2).as_secs_f64()),
        ]
        .into(),
    })
}

#[cfg(test)]
mod tests {
    //! Properties: the dataset runner writes a run over the split's topics (pools respected) and a
    //! sidecar with the dataset hash and config.

    use std::path::PathBuf;

    use lexbench_core::testing::TinyDataset;
    use lexbench_core::{ReadOptions, Run, TopicId};

    use super::*;
    use crate::rank::{RunTarget, write_run};
    use crate::sparse::Language;

    fn scratch(name: &str) -> PathBuf {
        let dir = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-bm25-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn runner_ranks_pools_and_writes_sidecar() {
        let data = scratch("runner");
        let ds = TinyDataset::new("mini")
            .doc("001-1:1", "The applicant complained of torture in prison")
            .doc("001-1:2", "The Government contested the complaint")
            .doc("001-2:1", "Prison conditions and torture were examined")
            .topic("q1/001-1", "q1", "torture in prison", &[], "test")
            .unsplit_topic("q1/001-2", "q1", "torture in prison")
            .pool("q1/001-1", &["001-1:1", "001-1:2"])
            .pool("q1/001-2", &["001-2:1"])
            .open_in(&data)
            .unwrap();
        let first = TopicId::new("q1/001-1").unwrap();

        let target = RunTarget::new(&data, "mini", "test", SYSTEM).unwrap();
        let mut bm25 = Bm25Ranker::new(Bm25Params::default()).unwrap();
        let out = write_run(&mut bm25, &target).unwrap();
        assert_eq!(out.run_path, data.join("runs/mini/test/bm25.trec"));
        let run = Run::read(&out.run_path, &ReadOptions::default()).unwrap();
        assert_eq!(run.topics.len(), 1, "only the split's topics");
        let hits = &run.topics[&first];
        assert_eq!(
            hits.iter().map(|h| h.doc.as_str()).collect::<Vec<_>>(),
            vec!["001-1:1", "001-1:2"]
        );
        let side: Bm25Sidecar =
            serde_json::from_str(&std::fs::read_to_string(&out.sidecar_path).unwrap()).unwrap();
        assert_eq!(side.header.dataset_hash, ds.hash());
        assert_eq!(side.details.config.language, Some(Language::English));
        assert_eq!((side.topics, side.hits, side.details.index.documents), (1, 2, 3));
        assert!(side.pooled);
        assert_eq!(side.header.system, "bm25");
        assert_eq!(side.header.seed, 0);
        assert_eq!(
            side.header.program.as_deref(),
            Some(concat!("lexbench-baselines ", env!("CARGO_PKG_VERSION")))
        );
        for phase in ["read_s", "index_s", "retrieve_s", "write_s"] {
            assert!(side.timings.contains_key(phase), "{phase}");
        }

        // A dataset file changed after its manifest was written is refused.
        std::fs::write(ds.dir().corpus(), "{}\n").unwrap();
        let err = write_run(&mut bm25, &target).unwrap_err();
        assert!(err.to_string().contains("corpus.jsonl"), "{err}");
    }

    /// `--variant rank-bm25-okapi`: each pool ranked by rank_bm25's scores over the pool alone
    /// ([`RankBm25Okapi`] on `str.lower().split()` tokens), ties by doc id descending, and the variant
    /// in the sidecar.
    #[test]
    fn rank_bm25_variant_scores_each_pool_alone() {
        let data = scratch("okapi");
        let texts = [
            ("001-1:1", "The applicant complained of TORTURE in prison."),
            ("001-1:2", "The Government contested the complaint"),
            ("001-1:3", "nothing"),
            ("001-1:10", "nothing"),
            ("001-2:1", "Prison conditions and torture were examined"),
        ];
        let mut ds = TinyDataset::new("mini");
        for (d, t) in texts {
            ds = ds.doc(d, t);
        }
        let _ds = ds
            .topic("q1/001-1", "q1", "torture in prison", &[], "test")
            .pool("q1/001-1", &["001-1:1", "001-1:2", "001-1:3", "001-1:10"])
            .unsplit_topic("q1/001-2", "q1", "torture in prison")
            .pool("q1/001-2", &["001-2:1"])
            .open_in(&data)
            .unwrap();
        let target = RunTarget::new(&data, "mini", "test", RANK_BM25_OKAPI_SYSTEM).unwrap();
        let mut ranker = Bm25Ranker::new(Bm25Params::rank_bm25_okapi()).unwrap();
        let out = write_run(&mut ranker, &target).unwrap();
        let run = Run::read(&out.run_path, &ReadOptions::default()).unwrap();
        let hits = &run.topics[&TopicId::new("q1/001-1").unwrap()];
        let pool: Vec<OkapiDoc> = texts[..4].iter().map(|(_, t)| OkapiDoc::from_text(t)).collect();
        let want = RankBm25Okapi::new(pool.iter().collect(), 1.5, 0.75, 0.25)
            .get_scores(&lower_split("torture in prison"));
        assert!(want[0] > 0.0 && want[1] == 0.0, "{want:?}");
        assert_eq!(
            hits.iter().map(|h| (h.doc.as_str(), h.score)).collect::<Vec<_>>(),
            // "prison." keeps its full stop: only "torture" and "in" match; the zeros by doc id descending.
            vec![
                ("001-1:1", want[0]),
                ("001-1:3", 0.0),
                ("001-1:2", 0.0),
                ("001-1:10", 0.0)
            ]
        );
        let side: Bm25Sidecar =
            serde_json::from_str(&std::fs::read_to_string(&out.sidecar_path).unwrap()).unwrap();
        assert_eq!(side.details.config.variant, Bm25Variant::RankBm25Okapi);
        assert_eq!(side.details.config.language, None);
        assert_eq!(side.header.system, RANK_BM25_OKAPI_SYSTEM);
        assert_eq!(side.details.index.documents, 4, "the pool's documents tokenised");
    }
}
