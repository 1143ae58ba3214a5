//! CuSINeS negatives in the trainer: per training topic, the fused difficulty of its candidates (pool
//! or corpus) cut into buckets, and `negatives.curriculum` draws per positive on the easy → hard
//! schedule (progress = epoch / epochs).
//!
//! - Semantic view: the current model's scores of every candidate, recomputed at the start of each
//!   epoch ([`SemanticSource::Dynamic`], via [`crate::train::model::Trainable::candidate_scores`]), or
//!   BM25's ranking computed once ([`SemanticSource::StaticBm25`], [`bm25_rank_scores`]: the order the
//!   BM25-negatives baseline takes its negatives in; candidates BM25 does not match tie last).
//! - Draws: per positive, listed hardest first (see [`CurriculumNegatives::draw`]).
//! - Structural views: BSARD's legislative graph (`graph.json` in the dataset folder, see
//!   [`LegalGraph`]) for a corpus-wide dataset; for a pooled dataset (ECtHR) one tree per topic
//!   from its pool's paragraph numbers and sections (`num`, `section` in `corpus.jsonl`).
//! - Ablations from the config: `views` (e.g. structure only), `enabled = false` (uniform draw over
//!   all candidates), `semantic = "static_bm25"`.
//! - What each epoch drew ([`DrawStats`], from [`CurriculumNegatives::draw_stats`]; the trainer writes
//!   it to `train_log.jsonl` and `summary.json`): the negatives drawn per bucket and their mean rank by
//!   the semantic view's scores (BM25's with the static view), so how hard "hard" is can be read off a
//!   run.

use std::collections::HashMap;
use std::path::Path;

use lexbench_core::rng::SplitMix64;
use serde::{Deserialize, Serialize};

use super::CurriculumDraws;
use crate::curriculum::{
    Buckets, CorpusStructure, CurriculumConfig, CurriculumSampler, Difficulty, QueryViews, SemanticSource,
};
use crate::error::{Error, Result};
use crate::sparse::{Analyzer, Bm25Index, Bm25Params};
use crate::train::data::SplitData;

pub use lexbench_core::graph::{GRAPH_FILE, GraphNode, LegalGraph};

/// The graph node of each corpus document of `split` (`None`: not in the graph).
pub fn doc_nodes(g: &LegalGraph, split: &SplitData) -> Vec<Option<usize>> {
    split.docs.iter().map(|d| g.node_of(&d.doc)).collect()
}

/// One pooled topic's structure: the judgment tree over its pool, indexed locally.
#[derive(Debug, Clone)]
struct PoolStructure {
    structure: CorpusStructure,
    local: HashMap<usize, usize>,
}

#[derive(Debug, Clone)]
enum Structures {
    Corpus(CorpusStructure),
    PerTopic(Vec<PoolStructure>),
}

/// CuSINeS for one training split: the configuration, the structure, static scores if any.
#[derive(Debug, Clone)]
pub struct CurriculumNegatives {
    cfg: CurriculumConfig,
    sampler: CurriculumSampler,
    structures: Option<Structures>,
    bm25: Option<Vec<Vec<f64>>>,
    /// The seed of the order among equally difficult candidates (per topic, [`Self::with_tie_seed`]);
    /// `None`: doc index ascending.
    tie_seed: Option<u64>,
}

/// BM25 scores of every candidate of every topic (aligned with [`SplitData::candidates`]; 0 where
/// BM25 does not match).
pub fn bm25_scores(split: &SplitData, dataset: &str) -> Vec<Vec<f64>> {
    let params = Bm25Params::default();
    let analyzer = Analyzer::new(params.language_of(dataset, split.language));
    let index = Bm25Index::build(analyzer, split.docs.iter().map(|d| (&d.doc, d.text.as_str())));
    // Whole-corpus topics in one batch on all cores, every document deep (their candidates); pooled
    // ones one by one.
    let whole: Vec<usize> = (0..split.topics.len())
        .filter(|&t| split.topics[t].pool.is_none())
        .collect();
    let depth = split.docs.len();
    let queries: Vec<&str> = whole.iter().map(|&t| split.topics[t].text.as_str()).collect();
    let mut whole_hits = index.search_batch(&queries, &params, depth).into_iter();
    (0..split.topics.len())
        .map(|t| {
            let topic = &split.topics[t];
            let cands = split.candidates(t);
            let hits = match &topic.pool {
                Some(p) => {
                    let nums: Vec<u32> = p.iter().map(|&d| d as u32).collect();
                    index.search_pool(&topic.text, &nums, &params, params.idf, cands.len())
                }
                None => {
                    let mut hits = whole_hits.next().unwrap_or_default();
                    hits.truncate(cands.len());
                    hits
                }
            };
            let by_doc: HashMap<usize, f64> = hits
                .iter()
                .filter_map(|h| split.index.get(&h.doc).map(|&d| (d, h.score)))
                .collect();
            cands
                .iter()
                .map(|d| by_doc.get(d).copied().unwrap_or(0.0))
                .collect()
        })
        .collect()
}

/// The static semantic view's scores: BM25's ranking of every topic's candidates (the ranking BM25
/// negatives are taken from, [`super::bm25_rankings`], trec_eval order: score descending, ties by doc
/// id), as scores that keep its order — `n − place` for the `n` candidates BM25 ranks, 0 for those it
/// does not match (whole-corpus topics; tied, so the curriculum's seeded shuffle orders them). So the
/// static view ranks the candidates exactly as the BM25-negatives baseline does, ties included: with
/// the semantic view alone, the fixed schedule and `top_n = buckets × negatives.curriculum`, the hard
/// bucket is BM25's top `negatives.curriculum` non-relevant articles, the baseline's negatives.
pub fn bm25_rank_scores(split: &SplitData, dataset: &str) -> Vec<Vec<f64>> {
    let rankings = super::bm25_rankings(split, dataset, split.docs.len());
    rankings
        .iter()
        .enumerate()
        .map(|(t, ranked)| {
            let n = ranked.len();
            let place: HashMap<usize, usize> = ranked.iter().enumerate().map(|(i, &d)| (d, i)).collect();
            split
                .candidates(t)
                .iter()
                .map(|d| place.get(d).map_or(0.0, |&i| (n - i) as f64))
                .collect()
        })
        .collect()
}

/// What one epoch's curriculum draws were, per bucket (index 0 = easiest; in `train_log.jsonl` as an
/// `"event": "curriculum"` line and in `summary.json`'s epochs): how many negatives were drawn from
/// each bucket, and their mean rank among their topic's candidates by the semantic view's scores —
/// BM25's with the static view (`semantic = "static_bm25"`), the model's at the start of the epoch with
/// the dynamic one. Ranks start at 1 (the best-scored candidate, positives included, as in a run);
/// tied candidates share the mean of the places they take (so a draw among BM25's unmatched articles
/// counts as the middle of their block, not its top). No ranks when the semantic view is off.
///
/// A diagnostic of how hard "hard" is: how far down the semantic ranking the hard bucket's negatives
/// reach, e.g. with `top_n = 0` (the default: every candidate, the corpus cut in thirds) against
/// `top_n = 100`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawStats {
    /// Whose scores rank the candidates (`None`: the semantic view is off, no ranks).
    pub semantic: Option<SemanticSource>,
    /// Negatives drawn from each bucket, over every topic and positive.
    pub drawn: Vec<usize>,
    /// Their mean rank, per bucket (`None`: nothing drawn from it, or no semantic view).
    pub mean_rank: Vec<Option<f64>>,
    /// The mean rank of every draw.
    pub mean_rank_all: Option<f64>,
}

/// The rank of `score` among `sorted` (descending, `total_cmp`): 1 + the candidates scored higher +
/// half of the others scored the same (the mean of the places a tied block takes).
fn mid_rank(sorted: &[f64], score: f64) -> f64 {
    let higher = sorted.partition_point(|x| x.total_cmp(&score).is_gt());
    let same = sorted[higher..].partition_point(|x| x.total_cmp(&score).is_eq());
    higher as f64 + (same.max(1) as f64 + 1.0) / 2.0
}

impl CurriculumNegatives {
    /// Prepares CuSINeS for `split` of `DATA/datasets/<dataset>`: the structure when a structural view
    /// is on (errors when the dataset has neither `graph.json` nor paragraph numbers and sections),
    /// BM25 scores for the static semantic view.
    pub fn new(cfg: &CurriculumConfig, split: &SplitData, data: &Path, dataset: &str) -> Result<Self> {
        cfg.validate()?;
        let structures = if cfg.views.hierarchical || cfg.views.sequential {
            let dir = lexbench_core::dataset::DatasetDir::in_data(data, dataset)?;
            Some(Self::structures(split, &dir.0.join(GRAPH_FILE))?)
        } else {
            None
        };
        let bm25 = (cfg.views.semantic && cfg.semantic == SemanticSource::StaticBm25)
            .then(|| bm25_rank_scores(split, dataset));
        Ok(Self {
            cfg: cfg.clone(),
            sampler: CurriculumSampler::from_config(cfg)?,
            structures,
            bm25,
            tie_seed: None,
        })
    }

    fn structures(split: &SplitData, graph: &Path) -> Result<Structures> {
        if !split.pooled() {
            if !graph.is_file() {
                return Err(Error::data(
                    "curriculum",
                    format!(
                        "the structural views need {} (or turn them off in [curriculum.views])",
                        graph.display()
                    ),
                ));
            }
            let g = LegalGraph::read(graph)?;
            return Ok(Structures::Corpus(CorpusStructure::from_legal_graph(
                g.nodes.len(),
                &g.hierarchy,
                &g.sequence,
                doc_nodes(&g, split),
            )?));
        }
        let mut per = Vec::with_capacity(split.topics.len());
        for t in 0..split.topics.len() {
            let cands = split.candidates(t);
            let mut paras = Vec::with_capacity(cands.len());
            for &d in &cands {
                let doc = &split.docs[d];
                let (Some(num), Some(section)) = (doc.num, doc.section) else {
                    return Err(Error::data(
                        "curriculum",
                        format!(
                            "document {} has no paragraph number or section (needed by the \
                             structural views; turn them off in [curriculum.views])",
                            doc.doc
                        ),
                    ));
                };
                paras.push((num as usize, format!("{section:?}")));
            }
            per.push(PoolStructure {
                structure: CorpusStructure::from_judgment(&paras)?,
                local: cands.iter().enumerate().map(|(i, &d)| (d, i)).collect(),
            });
        }
        Ok(Structures::PerTopic(per))
    }

    /// Whether the model must score every candidate at each epoch (dynamic semantic view on).
    pub fn needs_model_scores(&self) -> bool {
        self.cfg.views.semantic && self.cfg.semantic == SemanticSource::Dynamic
    }

    /// The configuration.
    pub fn config(&self) -> &CurriculumConfig {
        &self.cfg
    }

    /// The semantic view's scores of every topic's candidates: the model's (`model`, dynamic view),
    /// BM25's (static view), or none (view off).
    fn semantic<'a>(&'a self, model: Option<&'a [Vec<f64>]>) -> Result<Option<&'a [Vec<f64>]>> {
        Ok(if !self.cfg.views.semantic {
            None
        } else if self.needs_model_scores() {
            Some(model.ok_or_else(|| {
                Error::internal("curriculum: the dynamic semantic view needs the model's scores")
            })?)
        } else {
            self.bm25.as_deref()
        })
    }

    /// Breaks ties among equally difficult candidates by a shuffle fixed by `seed` (one per topic)
    /// instead of the corpus's order, which ranks early articles "harder" among the many at infinite
    /// hierarchical distance (another code: the legislative graph has no root).
    pub fn with_tie_seed(mut self, seed: u64) -> Self {
        self.tie_seed = Some(seed);
        self
    }

    /// The tie seed of topic `t`.
    fn topic_tie_seed(&self, t: usize) -> Option<u64> {
        self.tie_seed
            .map(|s| lexbench_core::rng::SplitMix64::new(s ^ (t as u64).rotate_left(17)).next_u64())
    }

    /// The difficulty buckets of every topic of `split` (bucket 0 = easiest). `model` holds the
    /// model's candidate scores (see [`Self::needs_model_scores`]).
    pub fn buckets(&self, split: &SplitData, model: Option<&[Vec<f64>]>) -> Result<Vec<Buckets>> {
        let semantic_all = self.semantic(model)?;
        let b = self.cfg.effective_buckets();
        (0..split.topics.len())
            .map(|t| {
                let topic = &split.topics[t];
                let cands = split.candidates(t);
                let semantic = semantic_all.map(|s| s[t].as_slice());
                let order = match &self.structures {
                    Some(Structures::PerTopic(per)) => {
                        let p = &per[t];
                        let local: Vec<usize> = (0..cands.len()).collect();
                        let positives: Vec<usize> = topic
                            .positives
                            .iter()
                            .filter_map(|d| p.local.get(d).copied())
                            .collect();
                        let views = QueryViews {
                            candidates: &local,
                            positives: &positives,
                            semantic,
                            structure: Some(&p.structure),
                            tie_seed: self.topic_tie_seed(t),
                        };
                        let d = Difficulty::for_query(&self.cfg, views)?;
                        d.order.iter().map(|&i| cands[i]).collect::<Vec<_>>()
                    }
                    s => {
                        let structure = match s {
                            Some(Structures::Corpus(c)) => Some(c),
                            _ => None,
                        };
                        let views = QueryViews {
                            candidates: &cands,
                            positives: &topic.positives,
                            semantic,
                            structure,
                            tie_seed: self.topic_tie_seed(t),
                        };
                        Difficulty::for_query(&self.cfg, views)?.order
                    }
                };
                Buckets::split(&order[..self.cfg.bucketed(order.len())], b)
            })
            .collect()
    }

    /// What `draws` (from [`Self::draw`] over `buckets`) were: see [`DrawStats`]. `model` holds the
    /// model's candidate scores the buckets were made with (dynamic semantic view). Errors when a
    /// draw is in none of its topic's buckets, or when the draws or scores do not fit the split.
    pub fn draw_stats(
        &self,
        split: &SplitData,
        buckets: &[Buckets],
        draws: &CurriculumDraws,
        model: Option<&[Vec<f64>]>,
    ) -> Result<DrawStats> {
        let semantic_all = self.semantic(model)?;
        let b = self.cfg.effective_buckets();
        let (mut drawn, mut rank_sum) = (vec![0usize; b], vec![0f64; b]);
        if buckets.len() != split.topics.len() || draws.len() != split.topics.len() {
            return Err(Error::internal(format!(
                "curriculum: {} topics, {} bucket sets, {} draws",
                split.topics.len(),
                buckets.len(),
                draws.len()
            )));
        }
        for (t, (bk, per_topic)) in buckets.iter().zip(draws).enumerate() {
            let wanted: HashMap<usize, usize> = per_topic.iter().flatten().map(|&d| (d, 0)).collect();
            if wanted.is_empty() {
                continue;
            }
            // Which bucket each drawn document is in: one pass over the buckets.
            let mut bucket_of = wanted;
            let mut found = 0;
            for i in 0..bk.len() {
                for d in bk.bucket(i) {
                    if let Some(slot) = bucket_of.get_mut(d) {
                        *slot = i;
                        found += 1;
                    }
                }
            }
            if found != bucket_of.len() {
                return Err(Error::internal(format!(
                    "curriculum: a negative of topic {} is in none of its buckets",
                    split.topics[t].topic
                )));
            }
            // The semantic scores, sorted, and where each drawn document's score is.
            let ranked = match semantic_all {
                Some(all) => {
                    let scores = all
                        .get(t)
                        .ok_or_else(|| Error::internal("curriculum: fewer semantic scores than topics"))?;
                    let cands = split.candidates(t);
                    if scores.len() != cands.len() {
                        return Err(Error::internal(format!(
                            "curriculum: {} semantic scores for {} candidates of topic {}",
                            scores.len(),
                            cands.len(),
                            split.topics[t].topic
                        )));
                    }
                    let score_of: HashMap<usize, f64> = cands
                        .iter()
                        .zip(scores)
                        .filter(|(d, _)| bucket_of.contains_key(d))
                        .map(|(&d, &s)| (d, s))
                        .collect();
                    let mut sorted = scores.clone();
                    sorted.sort_by(|a, b| b.total_cmp(a));
                    Some((sorted, score_of))
                }
                None => None,
            };
            for &d in per_topic.iter().flatten() {
                let i = bucket_of[&d];
                drawn[i] += 1;
                if let Some((sorted, score_of)) = &ranked {
                    let score = score_of.get(&d).ok_or_else(|| {
                        Error::internal(format!(
                            "curriculum: a negative of topic {} is not one of its candidates",
                            split.topics[t].topic
                        ))
                    })?;
                    rank_sum[i] += mid_rank(sorted, *score);
                }
            }
        }
        let ranked = semantic_all.is_some();
        let mean = |sum: f64, n: usize| (ranked && n > 0).then(|| sum / n as f64);
        let total: usize = drawn.iter().sum();
        Ok(DrawStats {
            semantic: ranked.then_some(self.cfg.semantic),
            mean_rank: drawn.iter().zip(&rank_sum).map(|(&n, &s)| mean(s, n)).collect(),
            mean_rank_all: mean(rank_sum.iter().sum(), total),
            drawn,
        })
    }

    /// Draws `n` negatives per positive of every topic at training `progress` ∈ [0, 1]; each
    /// positive's draws are listed hardest first (their order in the fused ranking), as BM25
    /// negatives are listed in BM25's order, so a draw of a whole bucket is that bucket in order.
    pub fn draw(
        &self,
        split: &SplitData,
        buckets: &[Buckets],
        progress: f64,
        n: usize,
        rng: &mut SplitMix64,
    ) -> Result<CurriculumDraws> {
        split
            .topics
            .iter()
            .zip(buckets)
            .map(|(topic, b)| {
                // Each candidate's place in the hardest-first order: the hardest bucket first.
                let place: HashMap<usize, usize> = (0..b.len())
                    .rev()
                    .flat_map(|i| b.bucket(i).iter().copied())
                    .enumerate()
                    .map(|(k, d)| (d, k))
                    .collect();
                topic
                    .positives
                    .iter()
                    .map(|_| {
                        let mut drawn = self.sampler.sample(b, progress, n, rng)?;
                        drawn.sort_by_key(|d| place.get(d).copied().unwrap_or(usize::MAX));
                        Ok(drawn)
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    //! Curriculum negatives are never positives; with all the mass on the hardest bucket they come
    //! from the hardest third; the pooled (per-judgment) structure maps back to corpus indices; the
    //! draw statistics count draws per bucket and rank them by the semantic scores, ties sharing the
    //! mean of their places.
    use super::*;
    use crate::curriculum::{SemanticSource, ViewSet};

    /// The `top_n` option these tests set (the default, 0, buckets every candidate).
    const TOP_100: usize = 100;
    use crate::train::data::Topic;
    use lexbench_core::dataset::CorpusDoc;
    use lexbench_core::records::Section;

    fn split(n: usize, pooled: bool) -> SplitData {
        let docs: Vec<CorpusDoc> = (0..n)
            .map(|i| CorpusDoc {
                doc: format!("d{i}").parse().expect("doc id"),
                text: format!("text {i}"),
                item: None,
                num: Some(i as u32 + 1),
                section: Some(if i < n / 2 { Section::Facts } else { Section::Law }),
            })
            .collect();
        SplitData {
            dataset_hash: String::new(),
            language: None,
            index: docs.iter().enumerate().map(|(i, d)| (d.doc.clone(), i)).collect(),
            docs,
            topics: (0..3)
                .map(|t| Topic {
                    topic: format!("t{t}").parse().expect("topic"),
                    text: format!("q{t}"),
                    positives: vec![t * 3, t * 3 + 1],
                    pool: pooled.then(|| (0..n).collect()),
                })
                .collect(),
            qrels: Default::default(),
        }
    }

    #[test]
    fn bm25_views_analyse_in_the_declared_language() {
        // "etat" matches "État" only once accents are folded, which the French analyzer does and
        // the English one (the guess for a dataset named "law") does not.
        let mut s = split(2, false);
        s.docs[0].text = "Responsabilité de l'État".into();
        s.docs[1].text = "the applicant".into();
        s.topics.truncate(1);
        s.topics[0].text = "etat".into();
        let guessed = bm25_scores(&s, "law");
        s.language = Some(lexbench_core::dataset::Language::French);
        let declared = bm25_scores(&s, "law");
        assert_eq!(guessed[0][0], 0.0, "{guessed:?}");
        assert!(declared[0][0] > 0.0, "{declared:?}");
    }

    /// The static view ranks as BM25's run does (the BM25 baseline's order, ties by doc id), and a
    /// draw is listed hardest first: drawing a whole bucket gives the bucket in the fused order.
    #[test]
    fn static_view_is_bm25s_order_and_draws_are_hardest_first() -> Result<()> {
        let mut s = split(8, false);
        for (i, d) in s.docs.iter_mut().enumerate() {
            // Docs 2 and 3 tie; 7 matches nothing.
            d.text = [
                "court",
                "court",
                "court law",
                "court law",
                "law",
                "law law law",
                "court fair",
                "x",
            ][i]
                .into();
        }
        s.topics.truncate(1);
        s.topics[0].text = "court law".into();
        let scores = bm25_rank_scores(&s, "law");
        let ranked = crate::train::negatives::bm25_rankings(&s, "law", 8);
        let mut by_score: Vec<usize> = (0..8).filter(|&d| scores[0][d] > 0.0).collect();
        by_score.sort_by(|&a, &b| scores[0][b].total_cmp(&scores[0][a]));
        assert_eq!(by_score, ranked[0], "{scores:?}");
        assert_eq!(scores[0][7], 0.0);
        let cfg = CurriculumConfig {
            views: ViewSet::semantic_only(),
            semantic: SemanticSource::StaticBm25,
            schedule: Some(vec![vec![0.0, 0.0, 1.0]; 3]),
            top_n: 6,
            ..CurriculumConfig::default()
        };
        let cn = CurriculumNegatives {
            cfg: cfg.clone(),
            sampler: CurriculumSampler::from_config(&cfg)?,
            structures: None,
            bm25: Some(scores),
            tie_seed: Some(3),
        };
        let buckets = cn.buckets(&s, None)?;
        // Positives 0 and 1 left out: the hard bucket is BM25's top 2 non-positives, in order.
        let top: Vec<usize> = ranked[0].iter().copied().filter(|d| *d > 1).take(2).collect();
        assert_eq!(buckets[0].bucket(2), top.as_slice());
        for seed in 0..8 {
            let draws = cn.draw(&s, &buckets, 0.0, 2, &mut SplitMix64::new(seed))?;
            assert_eq!(draws[0], vec![top.clone(), top.clone()], "seed {seed}");
        }
        Ok(())
    }

    #[test]
    fn hardest_bucket_only() -> Result<()> {
        let s = split(20, true);
        let cfg = CurriculumConfig {
            schedule: Some(vec![vec![0.0, 0.0, 1.0]; 3]),
            ..CurriculumConfig::default()
        };
        let cn = CurriculumNegatives {
            cfg: cfg.clone(),
            sampler: CurriculumSampler::from_config(&cfg)?,
            structures: Some(CurriculumNegatives::structures(&s, Path::new("/nonexistent"))?),
            bm25: None,
            tie_seed: None,
        };
        // The model's scores: doc index descending = harder.
        let scores: Vec<Vec<f64>> = (0..3)
            .map(|t| s.candidates(t).iter().map(|&d| -(d as f64)).collect())
            .collect();
        let buckets = cn.buckets(&s, Some(&scores))?;
        for progress in [0.0, 0.5, 1.0] {
            let draws = cn.draw(&s, &buckets, progress, 4, &mut SplitMix64::new(5))?;
            for (t, per_pos) in draws.iter().enumerate() {
                let d = Difficulty::for_query(
                    &cfg,
                    QueryViews {
                        candidates: &s.candidates(t),
                        positives: &s.topics[t].positives,
                        semantic: Some(&scores[t]),
                        structure: match &cn.structures {
                            Some(Structures::PerTopic(p)) => Some(&p[t].structure),
                            _ => None,
                        },
                        tie_seed: None,
                    },
                )?;
                // 18 non-positives, hardest first; the hardest bucket holds the last third's size.
                let hardest = buckets[t].bucket(2);
                assert!(hardest.len() >= d.len() / 3, "{hardest:?}");
                assert_eq!(per_pos.len(), 2);
                for negs in per_pos {
                    assert_eq!(negs.len(), 4);
                    assert!(negs.iter().all(|n| !s.topics[t].positives.contains(n)));
                    assert!(
                        negs.iter().all(|n| hardest.contains(n)),
                        "{negs:?} vs {hardest:?}"
                    );
                }
            }
        }
        Ok(())
    }

    /// With `top_n = 100` the buckets cut the top 100 candidates, not the whole corpus: over 2,000
    /// corpus-wide candidates ranked by a semantic score (rank = doc index, as BM25's would be), the
    /// hardest bucket's negatives had a mean rank of about 333 when the whole corpus was cut in thirds
    /// (a uniform draw from ranks 0–665), and about 17 now (the hardest third of the top 100). With the Table 3 "fixed" schedule (hard from the start) every
    /// negative comes from the hardest bucket, at every phase.
    #[test]
    fn hard_negatives_come_from_the_top_candidates() -> Result<()> {
        let s = split(2_000, false);
        let scores: Vec<Vec<f64>> = (0..3)
            .map(|t| s.candidates(t).iter().map(|&d| -(d as f64)).collect())
            .collect();
        let fixed = vec![vec![0.0, 0.0, 1.0]; 3];
        let negatives = |top_n: usize| -> Result<(Vec<Buckets>, CurriculumDraws)> {
            let cfg = CurriculumConfig {
                views: ViewSet {
                    semantic: true,
                    hierarchical: false,
                    sequential: false,
                },
                schedule: Some(fixed.clone()),
                top_n,
                ..CurriculumConfig::default()
            };
            let cn = CurriculumNegatives {
                cfg: cfg.clone(),
                sampler: CurriculumSampler::from_config(&cfg)?,
                structures: None,
                bm25: None,
                tie_seed: None,
            };
            let buckets = cn.buckets(&s, Some(&scores))?;
            let mut draws = Vec::new();
            for progress in [0.0, 0.5, 0.99] {
                draws.extend(cn.draw(&s, &buckets, progress, 8, &mut SplitMix64::new(3))?);
            }
            Ok((buckets, draws))
        };
        let mean_rank = |draws: &CurriculumDraws| {
            let all: Vec<usize> = draws.iter().flatten().flatten().copied().collect();
            all.iter().sum::<usize>() as f64 / all.len() as f64
        };
        let (whole_buckets, whole) = negatives(0)?;
        let (top_buckets, top) = negatives(TOP_100)?;
        assert_eq!(whole_buckets[0].total(), 1_998);
        assert_eq!(top_buckets[0].total(), 100);
        let (before, after) = (mean_rank(&whole), mean_rank(&top));
        assert!(before > 300.0 && after < 34.0, "mean rank {before} → {after}");
        // The draw statistics say the same (ranks from 1: the doc index + 1), all from the hard bucket.
        for (top_n, buckets, draws, mean) in [
            (0, &whole_buckets, &whole, before),
            (TOP_100, &top_buckets, &top, after),
        ] {
            let cfg = CurriculumConfig {
                views: ViewSet::semantic_only(),
                schedule: Some(fixed.clone()),
                top_n,
                ..CurriculumConfig::default()
            };
            let cn = CurriculumNegatives {
                cfg: cfg.clone(),
                sampler: CurriculumSampler::from_config(&cfg)?,
                structures: None,
                bm25: None,
                tie_seed: None,
            };
            // `draws` holds three phases' draws of the 3 topics: topic i % 3.
            let per_topic: CurriculumDraws = (0..3)
                .map(|t| draws.iter().skip(t).step_by(3).flatten().cloned().collect())
                .collect();
            let stats = cn.draw_stats(&s, buckets, &per_topic, Some(&scores))?;
            assert_eq!(stats.drawn, vec![0, 0, 3 * 3 * 2 * 8], "{stats:?}");
            assert_eq!(stats.mean_rank[..2], [None, None]);
            let hard = stats.mean_rank[2].expect("ranked");
            assert!((hard - (mean + 1.0)).abs() < 1e-9, "{hard} vs {mean}");
            assert_eq!(stats.mean_rank_all, stats.mean_rank[2]);
            assert_eq!(stats.semantic, Some(SemanticSource::Dynamic));
        }
        // Fixed: only the hardest bucket, at every phase.
        for (i, per_pos) in top.iter().enumerate() {
            let hardest = top_buckets[i % 3].bucket(2);
            assert!(
                per_pos.iter().flatten().all(|n| hardest.contains(n)),
                "{per_pos:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn draw_stats_rank_ties_by_the_mean_of_their_places() -> Result<()> {
        let s = split(8, false);
        let cfg = CurriculumConfig {
            views: ViewSet::semantic_only(),
            semantic: SemanticSource::StaticBm25,
            buckets: 2,
            ..CurriculumConfig::default()
        };
        // Topic 0 (positives 0 and 1): doc 2 scores highest, docs 3–7 tie at 0 (BM25 unmatched).
        let bm25 = vec![vec![0.5, 0.4, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0]; 3];
        let cn = CurriculumNegatives {
            cfg: cfg.clone(),
            sampler: CurriculumSampler::from_config(&cfg)?,
            structures: None,
            bm25: Some(bm25),
            tie_seed: None,
        };
        let buckets = cn.buckets(&s, None)?;
        // Hardest first: 2, then 3–7 tied (by index): buckets [5, 6, 7] (easy) and [2, 3, 4] (hard).
        assert_eq!(buckets[0].bucket(0), &[5, 6, 7]);
        assert_eq!(buckets[0].bucket(1), &[2, 3, 4]);
        let draws: CurriculumDraws = vec![vec![vec![2, 3], vec![6]], vec![], vec![]];
        let stats = cn.draw_stats(&s, &buckets, &draws, None)?;
        assert_eq!(stats.drawn, vec![1, 2]);
        // Among the 8 candidates (positives included): doc 2 is first, docs 3–7 take places 4–8.
        assert_eq!(stats.mean_rank, vec![Some(6.0), Some(3.5)]);
        assert_eq!(stats.mean_rank_all, Some(13.0 / 3.0));
        assert_eq!(stats.semantic, Some(SemanticSource::StaticBm25));
        // A draw outside the buckets is an error, not a panic.
        let stray: CurriculumDraws = vec![vec![vec![0]], vec![], vec![]];
        assert!(cn.draw_stats(&s, &buckets, &stray, None).is_err());
        Ok(())
    }

    #[test]
    fn curriculum_off_and_structure_only() -> Result<()> {
        let s = split(12, true);
        let cfg = CurriculumConfig {
            enabled: false,
            views: ViewSet::structure_only(),
            ..CurriculumConfig::default()
        };
        let cn = CurriculumNegatives {
            cfg: cfg.clone(),
            sampler: CurriculumSampler::from_config(&cfg)?,
            structures: Some(CurriculumNegatives::structures(&s, Path::new("/nonexistent"))?),
            bm25: None,
            tie_seed: None,
        };
        assert!(!cn.needs_model_scores());
        let buckets = cn.buckets(&s, None)?;
        assert!(buckets.iter().all(|b| b.len() == 1 && b.total() == 10));
        let draws = cn.draw(&s, &buckets, 0.3, 50, &mut SplitMix64::new(1))?;
        for (t, per_pos) in draws.iter().enumerate() {
            for negs in per_pos {
                assert_eq!(negs.len(), 10);
                assert!(negs.iter().all(|n| !s.topics[t].positives.contains(n)));
            }
        }
        // A corpus-wide split without graph.json cannot use the structural views.
        let corpus = split(12, false);
        assert!(CurriculumNegatives::structures(&corpus, Path::new("/nonexistent/graph.json")).is_err());
        Ok(())
    }
}
