//! Training examples: (query, positive, negatives), and batches without duplicates.
//!
//! For every topic and every one of its positives, [`examples`] draws negatives from the topic's
//! candidates (ECtHR: the judgment's other paragraphs; BSARD: the corpus) in the configured mix:
//! - **BM25**: BM25's top non-positive candidates in rank order (`bm25_order = "ranked"`, the ECtHR
//!   paper's), or uniformly from its top `bm25_depth` non-positives (`"uniform"`); ranked once;
//! - **model**: uniformly from the model's own top `model_depth` non-positive candidates (ANCE; the
//!   ranking is recomputed by the trainer at every epoch and, with `model_refresh_steps`, every N
//!   updates);
//! - **random**: uniformly from the remaining candidates.
//!
//! A topic's positives are never its negatives, and one example never holds a document twice. When a
//! source runs dry (a short judgment) the rest is filled at random; when every candidate is used the
//! example has fewer negatives (recorded in the epoch's statistics by the trainer).
//!
//! [`batches`] shuffles and packs examples so that no batch holds two examples of the same topic or the
//! same positive twice: in-batch negatives then never contain a copy of the example's own positive.

pub mod curriculum;

use std::collections::HashSet;

use lexbench_core::rng::SplitMix64;

use crate::sparse::{Analyzer, Bm25Index, Bm25Params};
use crate::train::config::{NegativeOrder, NegativesConfig};
use crate::train::data::SplitData;

/// One training example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// Topic index in the split.
    pub topic: usize,
    /// The positive document (corpus index).
    pub positive: usize,
    /// Negative documents (corpus indices).
    pub negatives: Vec<usize>,
}

/// Per-topic rankings of candidates (corpus indices, best first), indexed like the split's topics.
pub type Rankings = Vec<Vec<usize>>;

/// BM25 rankings of every topic's candidates (pool or corpus), `depth` deep, analysed in the split's
/// declared language.
pub fn bm25_rankings(split: &SplitData, dataset: &str, depth: usize) -> Rankings {
    let params = Bm25Params::default();
    let analyzer = Analyzer::new(params.language_of(dataset, split.language));
    let index = Bm25Index::build(analyzer, split.docs.iter().map(|d| (&d.doc, d.text.as_str())));
    // Whole-corpus topics in one batch on all cores; pooled ones one by one.
    let whole: Vec<&str> = split
        .topics
        .iter()
        .filter(|t| t.pool.is_none())
        .map(|t| t.text.as_str())
        .collect();
    let mut whole_hits = index.search_batch(&whole, &params, depth).into_iter();
    split
        .topics
        .iter()
        .map(|t| {
            let hits = match &t.pool {
                Some(p) => {
                    let nums: Vec<u32> = p.iter().map(|&d| d as u32).collect();
                    index.search_pool(&t.text, &nums, &params, params.idf, depth)
                }
                None => whole_hits.next().unwrap_or_default(),
            };
            hits.iter()
                .filter_map(|h| split.index.get(&h.doc).copied())
                .collect()
        })
        .collect()
}

fn take_from(
    ranked: &[usize],
    depth: usize,
    n: usize,
    order: NegativeOrder,
    excluded: &HashSet<usize>,
    chosen: &mut Vec<usize>,
    rng: &mut SplitMix64,
) {
    let take = match order {
        NegativeOrder::Ranked => n,
        NegativeOrder::Uniform => depth,
    };
    let mut pool: Vec<usize> = ranked
        .iter()
        .copied()
        .filter(|d| !excluded.contains(d) && !chosen.contains(d))
        .take(take)
        .collect();
    if order == NegativeOrder::Ranked {
        chosen.append(&mut pool);
        return;
    }
    for _ in 0..n.min(pool.len()) {
        let i = rng.below(pool.len());
        chosen.push(pool.swap_remove(i));
    }
}

/// The examples of one epoch (see the module documentation). `bm25` and `model` hold rankings for
/// every topic when their source is used.
pub fn examples(
    split: &SplitData,
    cfg: &NegativesConfig,
    bm25: Option<&Rankings>,
    model: Option<&Rankings>,
    rng: &mut SplitMix64,
) -> Vec<Example> {
    examples_with(split, cfg, bm25, model, None, rng)
}

/// Curriculum negatives drawn beforehand (see [`curriculum`]): per topic, per positive (in the
/// topic's order), the sampler's draws.
pub type CurriculumDraws = Vec<Vec<Vec<usize>>>;

/// [`examples`] with curriculum negatives: an example's negatives start with its curriculum draws
/// (positives and repeats dropped), then model, BM25 and random ones as configured.
pub fn examples_with(
    split: &SplitData,
    cfg: &NegativesConfig,
    bm25: Option<&Rankings>,
    model: Option<&Rankings>,
    curriculum: Option<&CurriculumDraws>,
    rng: &mut SplitMix64,
) -> Vec<Example> {
    let mut out = Vec::new();
    for (t, topic) in split.topics.iter().enumerate() {
        let excluded: HashSet<usize> = topic.positives.iter().copied().collect();
        let candidates = split.candidates(t);
        for (k, &positive) in topic.positives.iter().enumerate() {
            let mut chosen = Vec::with_capacity(cfg.total());
            if let Some(draws) = curriculum.and_then(|c| c.get(t)).and_then(|c| c.get(k)) {
                for &d in draws.iter().take(cfg.curriculum) {
                    if !excluded.contains(&d) && !chosen.contains(&d) {
                        chosen.push(d);
                    }
                }
            }
            if let (Some(r), true) = (model, cfg.model > 0) {
                let order = NegativeOrder::Uniform;
                take_from(
                    &r[t],
                    cfg.model_depth,
                    cfg.model,
                    order,
                    &excluded,
                    &mut chosen,
                    rng,
                );
            }
            if let (Some(r), true) = (bm25, cfg.bm25 > 0) {
                let order = cfg.bm25_order;
                take_from(
                    &r[t],
                    cfg.bm25_depth,
                    cfg.bm25,
                    order,
                    &excluded,
                    &mut chosen,
                    rng,
                );
            }
            let missing = cfg.total().saturating_sub(chosen.len());
            if missing > 0 {
                let mut rest: Vec<usize> = candidates
                    .iter()
                    .copied()
                    .filter(|d| !excluded.contains(d) && !chosen.contains(d))
                    .collect();
                for _ in 0..missing.min(rest.len()) {
                    let i = rng.below(rest.len());
                    chosen.push(rest.swap_remove(i));
                }
            }
            out.push(Example {
                topic: t,
                positive,
                negatives: chosen,
            });
        }
    }
    out
}

/// Shuffles examples into batches of at most `size` with no repeated topic and no repeated positive
/// within a batch (greedy first fit over a shuffled order).
pub fn batches(examples: &[Example], size: usize, rng: &mut SplitMix64) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    rng.shuffle(&mut order);
    let mut open: Vec<(Vec<usize>, HashSet<usize>, HashSet<usize>)> = Vec::new();
    let mut done = Vec::new();
    for i in order {
        let e = &examples[i];
        let slot = open
            .iter()
            .position(|(_, topics, docs)| !topics.contains(&e.topic) && !docs.contains(&e.positive));
        let slot = match slot {
            Some(s) => s,
            None => {
                open.push((Vec::new(), HashSet::new(), HashSet::new()));
                open.len() - 1
            }
        };
        let b = &mut open[slot];
        b.0.push(i);
        b.1.insert(e.topic);
        b.2.insert(e.positive);
        if b.0.len() == size {
            done.push(open.remove(slot).0);
        }
    }
    done.extend(open.into_iter().map(|b| b.0));
    done
}

#[cfg(test)]
mod tests {
    //! Properties: positives are never negatives; mixes are honoured; short pools fall back to
    //! random; batches never repeat a topic or a positive and cover every example once.
    use super::*;
    use crate::train::data::Topic;
    use lexbench_core::dataset::CorpusDoc;

    fn split(pools: Vec<(Vec<usize>, Vec<usize>)>, n_docs: usize) -> SplitData {
        let docs: Vec<CorpusDoc> = (0..n_docs)
            .map(|i| CorpusDoc {
                doc: format!("d{i}").parse().expect("doc id"),
                text: format!("text {i}"),
                item: None,
                num: None,
                section: None,
            })
            .collect();
        SplitData {
            dataset_hash: String::new(),
            language: None,
            index: docs.iter().enumerate().map(|(i, d)| (d.doc.clone(), i)).collect(),
            docs,
            topics: pools
                .into_iter()
                .enumerate()
                .map(|(i, (pos, pool))| Topic {
                    topic: format!("t{i}").parse().expect("topic"),
                    text: format!("q{i}"),
                    positives: pos,
                    pool: Some(pool),
                })
                .collect(),
            qrels: Default::default(),
        }
    }

    #[test]
    fn mix_and_exclusions() {
        let s = split(
            vec![(vec![0, 1], (0..20).collect()), (vec![25], (20..30).collect())],
            30,
        );
        let cfg = NegativesConfig {
            random: 1,
            bm25: 4,
            bm25_order: NegativeOrder::Uniform,
            model: 0,
            bm25_depth: 6,
            model_depth: 30,
            model_refresh_steps: 0,
            curriculum: 0,
        };
        // BM25 ranks positives first: they must be skipped.
        let bm25 = vec![(0..20).collect::<Vec<_>>(), (20..30).rev().collect()];
        let ex = examples(&s, &cfg, Some(&bm25), None, &mut SplitMix64::new(1));
        assert_eq!(ex.len(), 3);
        for e in &ex {
            assert_eq!(e.negatives.len(), 5);
            let pos = &s.topics[e.topic].positives;
            assert!(e.negatives.iter().all(|d| !pos.contains(d)));
            let uniq: HashSet<_> = e.negatives.iter().collect();
            assert_eq!(uniq.len(), 5);
            // The first four come from BM25's top 6 non-positives.
            let top: Vec<usize> = bm25[e.topic]
                .iter()
                .copied()
                .filter(|d| !pos.contains(d))
                .take(6)
                .collect();
            assert!(e.negatives[..4].iter().all(|d| top.contains(d)), "{e:?}");
            assert!(s.candidates(e.topic).contains(&e.negatives[4]));
        }
        // A pool of 3 with 1 positive gives 2 negatives, not 5.
        let s = split(vec![(vec![0], vec![0, 1, 2])], 3);
        let ex = examples(&s, &cfg, None, None, &mut SplitMix64::new(1));
        assert_eq!(ex[0].negatives.len(), 2);
    }

    #[test]
    fn ranked_bm25_negatives_are_the_top_non_positives() {
        let s = split(vec![(vec![3, 5], (0..20).collect())], 20);
        let cfg = NegativesConfig {
            random: 1,
            bm25: 3,
            bm25_order: NegativeOrder::Ranked,
            ..NegativesConfig::default()
        };
        let bm25 = vec![(0..20).rev().collect::<Vec<_>>()];
        for seed in 0..4 {
            let ex = examples(&s, &cfg, Some(&bm25), None, &mut SplitMix64::new(seed));
            for e in &ex {
                assert_eq!(e.negatives[..3], [19, 18, 17]);
                assert!(![3, 5, 19, 18, 17].contains(&e.negatives[3]));
            }
        }
        // Fewer non-positives than asked: the ranking's remainder, then nothing.
        let s = split(vec![(vec![0], vec![0, 1, 2])], 3);
        let ex = examples(
            &s,
            &cfg,
            Some(&vec![vec![2, 0, 1]]),
            None,
            &mut SplitMix64::new(1),
        );
        assert_eq!(ex[0].negatives, [2, 1]);
    }

    #[test]
    fn batches_without_duplicates() {
        let ex: Vec<Example> = (0..40)
            .map(|i| Example {
                topic: i % 7,
                positive: i % 11,
                negatives: vec![],
            })
            .collect();
        let bs = batches(&ex, 4, &mut SplitMix64::new(3));
        let mut seen: Vec<usize> = bs.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
        for b in &bs {
            assert!(b.len() <= 4);
            let t: HashSet<_> = b.iter().map(|&i| ex[i].topic).collect();
            let p: HashSet<_> = b.iter().map(|&i| ex[i].positive).collect();
            assert_eq!(t.len(), b.len());
            assert_eq!(p.len(), b.len());
        }
        assert_eq!(bs, batches(&ex, 4, &mut SplitMix64::new(3)));
    }
}
