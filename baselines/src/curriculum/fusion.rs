//! Ranks with ties, reciprocal rank fusion, and the per-query difficulty order ([`Difficulty`]).

use std::cmp::Ordering;
use std::collections::HashSet;

use super::config::CurriculumConfig;
use super::schedule::Buckets;
use super::structure::CorpusStructure;
use crate::error::{Error, Result};

/// 1-based **competition ("min") ranks** of difficulty scores, higher score = harder = better rank:
/// `rank(i) = 1 + #{j : score[j] > score[i]}`. Tied candidates share the smallest rank of their group
/// (scores 5, 3, 3, 1 → ranks 1, 2, 2, 4), so a rank never depends on the input order.
/// `-∞` is allowed (an unreachable candidate): all of them tie for the last rank.
/// Errors on NaN. Not what [`rrf`] fuses (it fuses [`permutation_ranks`], as the paper's rankings
/// are permutations); kept for reports that want tied ranks.
pub fn ranks_with_ties(scores: &[f64]) -> Result<Vec<usize>> {
    if let Some(i) = scores.iter().position(|s| s.is_nan()) {
        return Err(Error::data(
            "curriculum difficulty scores",
            format!("score {i} is NaN"),
        ));
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Descending; no NaN left, so `partial_cmp` is total here.
    order.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap_or(Ordering::Equal));
    let mut ranks = vec![0; scores.len()];
    let mut rank = 1;
    for (pos, &i) in order.iter().enumerate() {
        if pos > 0 && scores[i] != scores[order[pos - 1]] {
            rank = pos + 1;
        }
        ranks[i] = rank;
    }
    Ok(ranks)
}

/// The 1-based ranks of one view as a **permutation** of the query's negatives (CuSINeS: each view
/// ranks the negatives, then the rankings are fused): difficulty score descending (higher = harder =
/// rank 1), **ties broken by `ids` ascending** — the candidates' corpus indices, so on BSARD the
/// article that comes first in the release's order ranks first among equally distant or equally
/// scored ones. Every rank 1..=n appears once, and the ranks do not depend on the input order.
/// `-∞` is allowed (an unreachable candidate: last, by id). Errors on NaN, on `ids` not one per score,
/// and on repeated ids.
pub fn permutation_ranks(scores: &[f64], ids: &[usize]) -> Result<Vec<usize>> {
    permutation_ranks_seeded(scores, ids, None)
}

/// Where a candidate stands among those it ties with: its id itself without a seed (corpus order),
/// else a seeded hash of it, so that the order among ties is a shuffle fixed by the seed and carries
/// no trace of the corpus's order (issue 56: articles early in BSARD's corpus ranked "harder" among
/// the many at infinite hierarchical distance).
pub fn tie_key(seed: Option<u64>, id: usize) -> (u64, usize) {
    match seed {
        None => (0, id),
        Some(s) => {
            let mut r =
                lexbench_core::rng::SplitMix64::new(s ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            (r.next_u64(), id)
        }
    }
}

/// [`permutation_ranks`] with ties broken by [`tie_key`] of `seed` (`None`: by id ascending).
pub fn permutation_ranks_seeded(scores: &[f64], ids: &[usize], seed: Option<u64>) -> Result<Vec<usize>> {
    if let Some(i) = scores.iter().position(|s| s.is_nan()) {
        return Err(Error::data(
            "curriculum difficulty scores",
            format!("score {i} is NaN"),
        ));
    }
    if ids.len() != scores.len() {
        return Err(Error::internal(format!(
            "curriculum: {} ids for {} scores",
            ids.len(),
            scores.len()
        )));
    }
    let keys: Vec<(u64, usize)> = ids.iter().map(|&i| tie_key(seed, i)).collect();
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| {
        scores[b]
            .partial_cmp(&scores[a])
            .unwrap_or(Ordering::Equal)
            .then(keys[a].cmp(&keys[b]))
    });
    let mut sorted_ids = ids.to_vec();
    sorted_ids.sort_unstable();
    if let Some(w) = sorted_ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::data(
            "curriculum candidates",
            format!("doc {} is listed twice", w[0]),
        ));
    }
    let mut ranks = vec![0; scores.len()];
    for (pos, &i) in order.iter().enumerate() {
        ranks[i] = pos + 1;
    }
    Ok(ranks)
}

/// Reciprocal rank fusion: `fused[i] = Σ_v 1 / (k + rank_v(i))` with each view's ranks from
/// [`permutation_ranks`] (1-based, a permutation: ties broken by `ids` ascending). Every view holds
/// one difficulty score per candidate (higher = harder) and all views have the same length as `ids`;
/// a view switched off is simply not passed. Errors on no view, unequal lengths, NaN scores, repeated
/// ids, or `k` not finite or negative.
pub fn rrf<V: AsRef<[f64]>>(views: &[V], ids: &[usize], k: f64) -> Result<Vec<f64>> {
    rrf_seeded(views, ids, k, None)
}

/// [`rrf`] with each view's ties broken by [`tie_key`] of `seed`.
pub fn rrf_seeded<V: AsRef<[f64]>>(
    views: &[V],
    ids: &[usize],
    k: f64,
    seed: Option<u64>,
) -> Result<Vec<f64>> {
    if !k.is_finite() || k < 0.0 {
        return Err(Error::Param(format!(
            "curriculum rrf_k must be a finite number ≥ 0, got {k}"
        )));
    }
    let Some(first) = views.first() else {
        return Err(Error::internal("curriculum rrf: no view to fuse"));
    };
    let n = first.as_ref().len();
    let mut fused = vec![0.0; n];
    for (v, view) in views.iter().enumerate() {
        let view = view.as_ref();
        if view.len() != n {
            return Err(Error::internal(format!(
                "curriculum rrf: view {v} has {} scores, view 0 has {n}",
                view.len()
            )));
        }
        for (f, r) in fused.iter_mut().zip(permutation_ranks_seeded(view, ids, seed)?) {
            *f += 1.0 / (k + r as f64);
        }
    }
    Ok(fused)
}

/// A distance turned into a difficulty score: `-d` (nearer = harder); `None` (unreachable, another
/// code) → `-∞`, which [`ranks_with_ties`] ranks last, all tied.
pub fn distance_difficulty(d: Option<usize>) -> f64 {
    d.map_or(f64::NEG_INFINITY, |d| -(d as f64))
}

/// What one query brings to [`Difficulty::for_query`].
#[derive(Debug, Clone, Copy)]
pub struct QueryViews<'a> {
    /// The candidate pool (doc indices). Positives found in it are removed before ranking; duplicates
    /// are an error.
    pub candidates: &'a [usize],
    /// The query's relevant docs (doc indices).
    pub positives: &'a [usize],
    /// The semantic view: one score per entry of `candidates` (higher = harder), from the current model
    /// or BM25. Needed when the semantic view is on.
    pub semantic: Option<&'a [f64]>,
    /// The corpus structure for the hierarchical and sequential views. Needed when either is on.
    pub structure: Option<&'a CorpusStructure>,
    /// The seed of the order among equally difficult candidates ([`tie_key`]); `None`: doc index
    /// ascending (the corpus's order, which favours early articles: kept for tests and reports).
    pub tie_seed: Option<u64>,
}

/// The candidates of one query ordered **hardest first**: by fused RRF score descending, ties broken
/// by doc index ascending.
#[derive(Debug, Clone, PartialEq)]
pub struct Difficulty {
    /// Doc indices, hardest first.
    pub order: Vec<usize>,
    /// The fused score of each entry of `order`.
    pub fused: Vec<f64>,
}

impl Difficulty {
    /// Fuses the given views (one score per candidate each, higher = harder) with [`rrf`] (each view a
    /// permutation, ties by doc index) and orders the candidates hardest first, fused ties by doc
    /// index. Errors as [`rrf`] does, and when a view's length is not the number of candidates.
    pub fn fuse<V: AsRef<[f64]>>(candidates: &[usize], views: &[V], k: f64) -> Result<Self> {
        Self::fuse_seeded(candidates, views, k, None)
    }

    /// [`Difficulty::fuse`] with every tie (within a view, and of fused scores) broken by
    /// [`tie_key`] of `seed`.
    pub fn fuse_seeded<V: AsRef<[f64]>>(
        candidates: &[usize],
        views: &[V],
        k: f64,
        seed: Option<u64>,
    ) -> Result<Self> {
        if let Some(v) = views.iter().position(|v| v.as_ref().len() != candidates.len()) {
            return Err(Error::internal(format!(
                "curriculum: view {v} has {} scores for {} candidates",
                views[v].as_ref().len(),
                candidates.len()
            )));
        }
        let fused = rrf_seeded(views, candidates, k, seed)?;
        let keys: Vec<(u64, usize)> = candidates.iter().map(|&c| tie_key(seed, c)).collect();
        let mut idx: Vec<usize> = (0..candidates.len()).collect();
        idx.sort_by(|&a, &b| {
            fused[b]
                .partial_cmp(&fused[a])
                .unwrap_or(Ordering::Equal)
                .then(keys[a].cmp(&keys[b]))
        });
        Ok(Self {
            order: idx.iter().map(|&i| candidates[i]).collect(),
            fused: idx.iter().map(|&i| fused[i]).collect(),
        })
    }

    /// The difficulty order of one query under `config`: drops the positives from the pool, builds the
    /// views that are on (semantic scores as given; hierarchical and sequential distances to the nearest
    /// positive from `structure`, see [`CorpusStructure`]) and fuses them. An empty pool gives an empty
    /// order. Errors on an invalid config, duplicate candidates, a missing or mis-sized view input, NaN
    /// scores or out-of-range indices.
    pub fn for_query(config: &CurriculumConfig, query: QueryViews<'_>) -> Result<Self> {
        config.validate()?;
        let positives: HashSet<usize> = query.positives.iter().copied().collect();
        let mut seen = HashSet::with_capacity(query.candidates.len());
        if let Some(d) = query.candidates.iter().find(|d| !seen.insert(**d)) {
            return Err(Error::data(
                "curriculum candidates",
                format!("doc {d} is listed twice"),
            ));
        }
        let keep: Vec<usize> = (0..query.candidates.len())
            .filter(|&i| !positives.contains(&query.candidates[i]))
            .collect();
        let candidates: Vec<usize> = keep.iter().map(|&i| query.candidates[i]).collect();
        let mut views: Vec<Vec<f64>> = Vec::with_capacity(config.views.count());
        if config.views.semantic {
            let scores = query.semantic.ok_or_else(|| {
                Error::internal("curriculum: the semantic view is on but no scores were given")
            })?;
            if scores.len() != query.candidates.len() {
                return Err(Error::internal(format!(
                    "curriculum: {} semantic scores for {} candidates",
                    scores.len(),
                    query.candidates.len()
                )));
            }
            views.push(keep.iter().map(|&i| scores[i]).collect());
        }
        if config.views.hierarchical || config.views.sequential {
            let structure = query.structure.ok_or_else(|| {
                Error::internal("curriculum: a structural view is on but no corpus structure was given")
            })?;
            if config.views.hierarchical {
                views.push(structure.hierarchical_view(query.positives, &candidates)?);
            }
            if config.views.sequential {
                views.push(structure.sequential_view(query.positives, &candidates)?);
            }
        }
        Self::fuse_seeded(&candidates, &views, config.rrf_k, query.tie_seed)
    }

    /// Number of ranked candidates.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no candidate is left.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// [`Buckets::split`] of this order into `b` buckets (bucket 0 = easiest).
    pub fn buckets(&self, b: usize) -> Result<Buckets> {
        Buckets::split(&self.order, b)
    }
}
