//! A seeded random ranking of each topic's candidates (its pool, or the whole corpus): the floor a
//! leaderboard shows. Scores are uniform in [0, 1) from [`SplitMix64`], one stream per topic seeded by
//! the seed and the topic's id (a topic ranks the same whatever split it is in, wherever it sits),
//! candidate by candidate in the candidates' order; ties (equal as `f32`) are broken by doc id
//! ([`trec_order`]).

use lexbench_core::Run;
use lexbench_core::rng::SplitMix64;
use lexbench_core::trec::{Hit, trec_order};
use serde::{Deserialize, Serialize};

use super::{Ranked, Ranker, SplitInputs};
use crate::error::Result;

/// Settings of a random run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomParams {
    /// The generator's seed (also the sidecar's).
    pub seed: u64,
}

/// What a random run's sidecar records besides the common fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomDetails {
    /// The settings.
    pub config: RandomParams,
}

/// Ranks every candidate of each topic by a seeded uniform score.
#[derive(Debug, Clone)]
pub struct RandomRanker {
    params: RandomParams,
}

impl RandomRanker {
    /// A ranker drawing from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            params: RandomParams { seed },
        }
    }
}

impl Ranker for RandomRanker {
    type Details = RandomDetails;

    fn seed(&self) -> u64 {
        self.params.seed
    }

    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<RandomDetails>> {
        let t0 = std::time::Instant::now();
        let mut run = Run::new("random");
        for t in &inputs.topics {
            let mut rng = SplitMix64::new(self.params.seed ^ fnv1a(t.topic.as_str()));
            let mut hits: Vec<Hit> = inputs
                .candidates(&t.topic)?
                .into_iter()
                .map(|d| Hit {
                    doc: d.clone(),
                    score: rng.unit_f64(),
                })
                .collect();
            hits.sort_by(trec_order);
            run.topics.insert(t.topic.clone(), hits);
        }
        Ok(Ranked {
            run,
            details: RandomDetails {
                config: self.params.clone(),
            },
            timings: [("rank_s".to_owned(), t0.elapsed().as_secs_f64())].into(),
        })
    }
}

/// FNV-1a of a topic id: its stream's offset from the seed.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    //! Properties: one seed gives one ranking, two seeds give two; every candidate is ranked once.

    use std::collections::BTreeSet;

    use super::*;

    /// One topic of a hand-written dataset ranking the whole corpus (20 documents).
    fn inputs() -> SplitInputs {
        let data =
            lexbench_core::testing::scratch_root().join(format!("lexbench-random-{}", std::process::id()));
        let ds = data.join("datasets/flat");
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(ds.join("splits")).unwrap();
        let corpus: Vec<String> = (0..20)
            .map(|i| serde_json::json!({"doc": format!("art-{i}"), "text": "article"}).to_string())
            .collect();
        std::fs::write(ds.join("corpus.jsonl"), corpus.join("\n") + "\n").unwrap();
        let topic = serde_json::json!({"topic": "q1", "query": "q1", "text": "a question"});
        std::fs::write(ds.join("queries.jsonl"), format!("{topic}\n")).unwrap();
        let split = serde_json::json!({"dataset": "flat", "name": "test", "topics": ["q1"]});
        std::fs::write(ds.join("splits/test.json"), split.to_string()).unwrap();
        lexbench_core::dataset::DatasetManifest::write_for(&ds, "flat", "test").unwrap();
        SplitInputs::read(&data, "flat", "test").unwrap()
    }

    fn order(seed: u64, inputs: &SplitInputs) -> Vec<String> {
        let ranked = RandomRanker::new(seed).rank(inputs).unwrap();
        assert_eq!(ranked.run.topics.len(), 1);
        ranked
            .run
            .topics
            .values()
            .next()
            .unwrap()
            .iter()
            .map(|h| h.doc.to_string())
            .collect()
    }

    #[test]
    fn seeded_random_rankings() {
        let inputs = inputs();
        let a = order(1, &inputs);
        assert_eq!(a, order(1, &inputs), "same seed, same ranking");
        assert_ne!(a, order(2, &inputs), "another seed, another ranking");
        let once: BTreeSet<&String> = a.iter().collect();
        assert_eq!((a.len(), once.len()), (20, 20), "every candidate ranked once");
        assert_eq!(RandomRanker::new(9).seed(), 9);
    }
}
