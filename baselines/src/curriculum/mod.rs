//! CuSINeS curriculum negative sampling (LREC-COLING 2024): rank a query's negatives by difficulty from
//! three views, fuse the rankings with reciprocal rank fusion, cut them into easy→hard buckets and draw
//! negatives from the buckets on an easy→hard schedule. Pure Rust; the trainer supplies the semantic
//! scores.
//!
//! - Views (one difficulty score per candidate, **higher = harder**):
//!   semantic — the current model's query–candidate scores, refreshed each epoch
//!   ([`SemanticSource::Dynamic`]) or static BM25 scores ([`SemanticSource::StaticBm25`]), same code
//!   path; hierarchical — `-`(graph distance to the nearest positive) in the legislative tree
//!   ([`hierarchical_distances`], one multi-source BFS per query); sequential — `-`(distance to the
//!   nearest positive in the statutes linearised as one sequence: the articles of every code, code
//!   after code, [`linear_positions`]) ([`sequential_distances`]). Unreachable (another code's tree,
//!   outside the graph) → `-∞`. [`CorpusStructure`] holds the structure of BSARD
//!   ([`CorpusStructure::from_legal_graph`]) or of one ECtHR judgment
//!   ([`CorpusStructure::from_judgment`]: paragraphs under sections, paragraph numbers).
//! - Fusion: each view ranks the query's negatives as a **permutation** ([`permutation_ranks`]:
//!   score descending), then [`rrf`] with `k` = 60 by default, so nothing depends on input order.
//!   [`Difficulty`] orders a query's candidates hardest first: fused score descending. Ties (within a
//!   view, and of fused scores) go by a shuffle fixed by the query's tie seed ([`tie_key`],
//!   [`QueryViews::tie_seed`]; training derives it from its seed, `SeedPurpose::CurriculumTies`), not
//!   by the corpus's order: BSARD's legislative graph has no root, so every article of another code is
//!   at infinite hierarchical distance, and breaking those ties by doc index ranked the articles early
//!   in the release "harder" (issue 56). Without a seed, ties go by doc index ascending.
//!   Positives are removed from the pool before ranking.
//! - Buckets: [`Buckets::split`] cuts the hardest-first order — its first
//!   [`CurriculumConfig::top_n`] (the BSARD configs: buckets × negatives per positive, so the hard
//!   bucket is the BM25 baseline's pool, as CuSINeS's rows imply), or all of the query's negatives
//!   with `top_n = 0` — into B contiguous near-equal buckets;
//!   **bucket 0 = easiest**, bucket B − 1 = hardest (larger buckets on the hard side).
//! - Schedule: [`Schedule::paper_default`] (3 buckets, thirds of training: 0.7/0.2/0.1,
//!   0.15/0.7/0.15, 0.1/0.2/0.7); [`Schedule::for_buckets`] generalises to B phases (0.7 on bucket p in
//!   phase p, the rest ∝ 1/distance); [`Schedule::explicit`] takes a validated B × B matrix. Phase of
//!   progress t: `floor(t · P)`, clamped.
//! - Sampling: [`CurriculumSampler::sample`] draws n distinct negatives, bucket by schedule
//!   (renormalised over non-empty buckets) then uniform within, with `lexbench_core::rng::SplitMix64`.
//! - [`CurriculumConfig`]: the knobs; `enabled = false` (no curriculum) = one bucket, uniform draw
//!   over all candidates.
//!
//! ```
//! use lexbench_baselines::curriculum::{
//!     CorpusStructure, CurriculumConfig, CurriculumSampler, Difficulty, QueryViews,
//! };
//! use lexbench_core::rng::SplitMix64;
//!
//! // One judgment: paragraphs 1–6, two sections; paragraph index 2 is relevant.
//! let paras = [(1, "Facts"), (2, "Facts"), (3, "Facts"), (4, "Law"), (5, "Law"), (6, "Law")];
//! let structure = CorpusStructure::from_judgment(&paras)?;
//! let config = CurriculumConfig::default();
//! let candidates = [0, 1, 2, 3, 4, 5];
//! let semantic = [0.1, 0.5, 0.9, 0.8, 0.2, 0.0];
//! let query = QueryViews { candidates: &candidates, positives: &[2], semantic: Some(&semantic), structure: Some(&structure), tie_seed: None };
//! let difficulty = Difficulty::for_query(&config, query)?;
//! assert_eq!(difficulty.order, vec![1, 3, 0, 4, 5]); // the positive is gone
//! let buckets = difficulty.buckets(config.effective_buckets())?;
//! let sampler = CurriculumSampler::from_config(&config)?;
//! let negatives = sampler.sample(&buckets, 0.5, 2, &mut SplitMix64::new(7))?;
//! assert_eq!(negatives.len(), 2);
//! # Ok::<(), lexbench_baselines::Error>(())
//! ```

mod config;
mod fusion;
mod schedule;
mod structure;
#[cfg(test)]
mod tests;

pub use config::{
    CurriculumConfig, DEFAULT_TOP_N, SCHEDULE_SUM_TOLERANCE, SemanticSource, ViewSet, validate_schedule,
};
pub use fusion::{
    Difficulty, QueryViews, distance_difficulty, permutation_ranks, permutation_ranks_seeded,
    ranks_with_ties, rrf, rrf_seeded, tie_key,
};
pub use schedule::{Buckets, CurriculumSampler, PEAK_MASS, Schedule};
pub use structure::{
    CorpusStructure, hierarchical_distances, linear_positions, sequence_positions, sequential_distances,
    undirected_adjacency,
};
