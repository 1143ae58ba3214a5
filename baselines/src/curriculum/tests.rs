//! Properties checked:
//! 1. Each view ranks the query's negatives as a permutation (score descending, ties by doc index,
//!    `-∞` last, NaN and repeated ids are errors); competition ranks are still available; RRF on
//!    hand-made rankings matches fused values worked out by hand, with ties inside views and with a
//!    view switched off; the difficulty order does not depend on the input order and breaks fused
//!    ties by doc index.
//! 2. Bucket split (bucket 0 = easiest, near-equal sizes, extra on the hard side, empty buckets when
//!    B > n); by default the buckets cover every negative of the query; the paper's 3-bucket schedule
//!    at progress 0.0, 0.34, 0.99; B = 1 puts all mass on the one bucket; B = 5 rows sum to 1 and
//!    peak on their own bucket; explicit schedules and configs are validated.
//! 3. Graph distances (multi-source BFS) on a small hand-drawn hierarchy; sequential distances over
//!    the statutes linearised as one sequence (two codes end to end, an article alone in its code
//!    included); sequence edges → (group, position), with malformed chains rejected; an edge naming
//!    an unknown node is `Error::Data`, a bad config value `Error::Param`.
//! 4. Sampler: bucket shares over many draws match the schedule within 4 standard errors; positives
//!    never drawn; no duplicates within a query; deterministic per seed; n > candidates returns all;
//!    empty and zero-probability buckets are handled.
//! 5. ECtHR structural views from (paragraph number, section) lists.

use std::collections::HashSet;

use lexbench_core::rng::SplitMix64;

use super::schedule::Schedule as S;
use super::*;

const K: f64 = 60.0;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

// ---------------------------------------------------------------- 1. ranks and RRF

#[test]
fn ranks_are_competition_ranks() {
    assert_eq!(ranks_with_ties(&[5.0, 3.0, 3.0, 1.0]).unwrap(), vec![1, 2, 2, 4]);
    assert_eq!(ranks_with_ties(&[1.0, 3.0, 5.0, 3.0]).unwrap(), vec![4, 2, 1, 2]);
    let inf = f64::NEG_INFINITY;
    assert_eq!(
        ranks_with_ties(&[inf, -2.0, inf, -1.0]).unwrap(),
        vec![3, 2, 3, 1]
    );
    assert!(ranks_with_ties(&[]).unwrap().is_empty());
    assert!(matches!(
        ranks_with_ties(&[1.0, f64::NAN]),
        Err(crate::Error::Data { .. })
    ));
}

/// Issue 31, item 9: each view gives a permutation of the query's negatives; ties are broken by doc
/// index ascending, whatever the input order.
#[test]
fn each_view_is_a_permutation_ties_broken_by_doc_index() {
    let inf = f64::NEG_INFINITY;
    // ids 10, 11, 12, 13: 11 and 12 tie at 3 → 11 first; the two -∞ last, by id.
    assert_eq!(
        permutation_ranks(&[5.0, 3.0, 3.0, 1.0], &[10, 11, 12, 13]).unwrap(),
        vec![1, 2, 3, 4]
    );
    assert_eq!(
        permutation_ranks(&[3.0, 3.0, 5.0, 3.0], &[13, 12, 11, 10]).unwrap(),
        vec![4, 3, 1, 2]
    );
    assert_eq!(
        permutation_ranks(&[inf, -2.0, inf, -1.0], &[7, 1, 3, 2]).unwrap(),
        vec![4, 2, 3, 1]
    );
    assert!(permutation_ranks(&[], &[]).unwrap().is_empty());
    assert!(matches!(
        permutation_ranks(&[1.0, f64::NAN], &[0, 1]),
        Err(crate::Error::Data { .. })
    ));
    assert!(permutation_ranks(&[1.0, 1.0], &[4, 4]).is_err());
    assert!(permutation_ranks(&[1.0], &[0, 1]).is_err());
    // Through a query: a structural view full of ties (all at distance 2) still fuses a permutation:
    // the structure-only order of equally distant candidates is the doc order.
    let paras = [
        (1, "Facts"),
        (2, "Facts"),
        (3, "Facts"),
        (4, "Facts"),
        (5, "Facts"),
    ];
    let structure = CorpusStructure::from_judgment(&paras).unwrap();
    let config = CurriculumConfig {
        views: ViewSet {
            semantic: false,
            hierarchical: true,
            sequential: false,
        },
        ..CurriculumConfig::default()
    };
    let d = Difficulty::for_query(
        &config,
        QueryViews {
            candidates: &[4, 2, 0, 3, 1],
            positives: &[2],
            semantic: None,
            structure: Some(&structure),
            tie_seed: None,
        },
    )
    .unwrap();
    assert_eq!(d.order, vec![0, 1, 3, 4]);
    let want: Vec<f64> = (1..=4).map(|r| 1.0 / (K + r as f64)).collect();
    assert_eq!(d.fused, want, "ranks 1, 2, 3, 4: no shared rank");
}

#[test]
fn rrf_matches_hand_computed_values() {
    // Candidates (doc indices) a = 10, b = 11, c = 12, d = 13; difficulty, higher = harder; each view a
    // permutation, ties by doc index:
    //   semantic      0.9  0.5  0.5  0.1   → ranks 1 2 3 4   (b, c tied: b first)
    //   hierarchical  d=4  d=2  ∞    d=2   → ranks 3 1 4 2   (scores -4 -2 -∞ -2; b, d tied: b first)
    //   sequential    d=1  d=3  ∞    d=1   → ranks 1 3 4 2   (a, d tied: a first)
    // All three views, k = 60:
    //   a = 1/61 + 1/63 + 1/61    b = 1/62 + 1/61 + 1/63
    //   c = 1/63 + 1/64 + 1/64    d = 1/64 + 1/62 + 1/62
    //   a − b = 1/61 − 1/62 > 0;  b − d = (1/61 − 1/62) + (1/63 − 1/64) > 0;  c is smallest
    //   → hardest first: a, b, d, c = 10, 11, 13, 12.
    // Semantic off (structure only):
    //   a = 1/63 + 1/61 = b,  c = 2/64,  d = 2/62 < a (1/x is convex)  → a and b tied (doc index: a
    //   first), d, c → 10, 11, 13, 12.
    let semantic = vec![0.9, 0.5, 0.5, 0.1];
    let hier: Vec<f64> = [Some(4), Some(2), None, Some(2)]
        .into_iter()
        .map(distance_difficulty)
        .collect();
    let seq: Vec<f64> = [Some(1), Some(3), None, Some(1)]
        .into_iter()
        .map(distance_difficulty)
        .collect();
    let cands = [10, 11, 12, 13];
    assert_eq!(ranks_with_ties(&hier).unwrap(), vec![3, 1, 4, 1]);
    assert_eq!(permutation_ranks(&hier, &cands).unwrap(), vec![3, 1, 4, 2]);

    let fused = rrf(&[semantic.clone(), hier.clone(), seq.clone()], &cands, K).unwrap();
    let want = [
        1.0 / 61.0 + 1.0 / 63.0 + 1.0 / 61.0,
        1.0 / 62.0 + 1.0 / 61.0 + 1.0 / 63.0,
        1.0 / 63.0 + 1.0 / 64.0 + 1.0 / 64.0,
        1.0 / 64.0 + 1.0 / 62.0 + 1.0 / 62.0,
    ];
    for (f, w) in fused.iter().zip(want) {
        assert!(close(*f, w), "{f} vs {w}");
    }
    let all = Difficulty::fuse(&cands, &[&semantic, &hier, &seq], K).unwrap();
    assert_eq!(all.order, vec![10, 11, 13, 12]);

    let structure_only = rrf(&[&hier, &seq], &cands, K).unwrap();
    let want = [
        1.0 / 63.0 + 1.0 / 61.0,
        1.0 / 61.0 + 1.0 / 63.0,
        2.0 / 64.0,
        2.0 / 62.0,
    ];
    for (f, w) in structure_only.iter().zip(want) {
        assert!(close(*f, w), "{f} vs {w}");
    }
    assert_eq!(structure_only[0], structure_only[1], "a and b tie exactly");
    let d = Difficulty::fuse(&cands, &[&hier, &seq], K).unwrap();
    assert_eq!(d.order, vec![10, 11, 13, 12]);

    // The same candidates in another input order give the same result.
    let perm = [3, 1, 0, 2];
    let pick = |v: &[f64]| perm.iter().map(|&i| v[i]).collect::<Vec<_>>();
    let cands2: Vec<usize> = perm.iter().map(|&i| cands[i]).collect();
    let d2 = Difficulty::fuse(&cands2, &[pick(&semantic), pick(&hier), pick(&seq)], K).unwrap();
    assert_eq!(d2, all);

    // Errors: no view, unequal lengths, bad k, a view not matching the candidates.
    assert!(rrf::<Vec<f64>>(&[], &[], K).is_err());
    assert!(rrf(&[vec![1.0], vec![1.0, 2.0]], &[0], K).is_err());
    assert!(rrf(&[vec![1.0]], &[0], -1.0).is_err());
    assert!(rrf(&[vec![1.0]], &[0], f64::NAN).is_err());
    assert!(rrf(&[vec![1.0, 2.0]], &[0], K).is_err());
    assert!(Difficulty::fuse(&[1, 2], &[vec![1.0]], K).is_err());
}

#[test]
fn views_switch_off_through_the_config() {
    // Same numbers as above through `for_query`, semantic scores only, positives removed from the pool.
    let semantic = [0.9, 0.5, 0.5, 0.1, 7.0];
    let cands = [10, 11, 12, 13, 14];
    let config = CurriculumConfig {
        views: ViewSet::semantic_only(),
        ..CurriculumConfig::default()
    };
    let q = QueryViews {
        candidates: &cands,
        positives: &[14],
        semantic: Some(&semantic),
        structure: None,
        tie_seed: None,
    };
    let d = Difficulty::for_query(&config, q).unwrap();
    // ranks 1 2 3 4 (the b/c tie broken by doc index) → 1/61, 1/62, 1/63, 1/64.
    assert_eq!(d.order, vec![10, 11, 12, 13]);
    assert!(close(d.fused[1], 1.0 / 62.0) && close(d.fused[2], 1.0 / 63.0));
    // A structural view on without a structure, the semantic view on without scores, NaN, duplicates.
    let all = CurriculumConfig::default();
    assert!(Difficulty::for_query(&all, q).is_err());
    let no_scores = QueryViews { semantic: None, ..q };
    assert!(Difficulty::for_query(&config, no_scores).is_err());
    let nan = [0.1, f64::NAN, 0.2, 0.3, 0.4];
    assert!(
        Difficulty::for_query(
            &config,
            QueryViews {
                semantic: Some(&nan),
                ..q
            }
        )
        .is_err()
    );
    let dup = QueryViews {
        candidates: &[10, 10, 12, 13, 14],
        ..q
    };
    assert!(Difficulty::for_query(&config, dup).is_err());
    // Empty pool: empty order.
    let empty = QueryViews {
        candidates: &[],
        positives: &[1],
        semantic: Some(&[]),
        structure: None,
        tie_seed: None,
    };
    assert!(Difficulty::for_query(&config, empty).unwrap().is_empty());
}

// ---------------------------------------------------------------- 2. buckets and schedule

#[test]
fn buckets_split_easiest_first() {
    let order: Vec<usize> = (0..10).collect(); // 0 = hardest
    let b = Buckets::split(&order, 3).unwrap();
    assert_eq!(b.bucket(2), &[0, 1, 2, 3]); // hardest, takes the extra one
    assert_eq!(b.bucket(1), &[4, 5, 6]);
    assert_eq!(b.bucket(0), &[7, 8, 9]); // easiest
    assert_eq!((b.len(), b.total(), b.bucket_of(5)), (3, 10, Some(1)));
    assert!(b.bucket(3).is_empty());
    // Fewer candidates than buckets: the easy buckets are the empty ones.
    let b = Buckets::split(&[8, 9], 3).unwrap();
    assert_eq!(
        (b.bucket(0), b.bucket(1), b.bucket(2)),
        (&[][..], &[9][..], &[8][..])
    );
    let b = Buckets::split(&[], 3).unwrap();
    assert_eq!((b.len(), b.total()), (3, 0));
    assert!(Buckets::split(&order, 0).is_err());
}

#[test]
fn paper_schedule_and_generalisation() {
    let s = S::paper_default();
    assert_eq!(s.probs(0.0), &[0.7, 0.2, 0.1]);
    assert_eq!(s.probs(0.34), &[0.15, 0.7, 0.15]);
    assert_eq!(s.probs(0.99), &[0.1, 0.2, 0.7]);
    assert_eq!((s.phase(0.0), s.phase(0.34), s.phase(0.99)), (0, 1, 2));
    assert_eq!(
        (s.phase(1.0), s.phase(5.0), s.phase(-0.1), s.phase(f64::NAN)),
        (2, 2, 0, 0)
    );
    assert_eq!(S::for_buckets(3).unwrap(), s);
    // The inverse-distance formula itself reproduces the paper's numbers.
    for (got, want) in S::inverse_distance(3).rows().iter().zip(s.rows()) {
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, *w), "{got:?} vs {want:?}");
        }
    }
    // B = 1: one phase, all mass on the single bucket.
    let one = S::for_buckets(1).unwrap();
    assert_eq!((one.phases(), one.buckets()), (1, 1));
    for t in [0.0, 0.5, 0.99] {
        assert_eq!(one.probs(t), &[1.0]);
    }
    // B = 5: five phases, each row sums to 1 and peaks (0.7) on its own bucket.
    let five = S::for_buckets(5).unwrap();
    assert_eq!((five.phases(), five.buckets()), (5, 5));
    for (p, row) in five.rows().iter().enumerate() {
        assert!(close(row.iter().sum::<f64>(), 1.0), "{row:?}");
        assert!(row.iter().all(|&x| x > 0.0));
        assert_eq!(row[p], PEAK_MASS);
        assert!(row.iter().enumerate().all(|(q, &x)| q == p || x < PEAK_MASS));
    }
    assert_eq!(five.probs(0.45), five.rows()[2].as_slice());
    let two = S::for_buckets(2).unwrap();
    assert!(close(two.rows()[0][1], 0.3) && close(two.rows()[1][0], 0.3));
    assert!(S::for_buckets(0).is_err());
}

#[test]
fn explicit_schedules_and_configs_are_validated() {
    assert!(S::explicit(vec![vec![0.5, 0.5], vec![0.0, 1.0]]).is_ok());
    assert!(S::explicit(vec![vec![0.5, 0.5 + 1e-7], vec![0.0, 1.0]]).is_ok()); // within 1e-6
    let bad = [
        vec![],                                      // no bucket
        vec![vec![0.5, 0.5]],                        // 1 row for 2 columns
        vec![vec![0.5, 0.5], vec![1.0]],             // ragged
        vec![vec![1.2, -0.2], vec![0.0, 1.0]],       // negative
        vec![vec![0.5, 0.4], vec![0.0, 1.0]],        // sums to 0.9
        vec![vec![f64::NAN, 1.0], vec![0.0, 1.0]],   // NaN
        vec![vec![0.5, 0.5 + 1e-5], vec![0.0, 1.0]], // beyond the tolerance
    ];
    for rows in bad {
        assert!(
            matches!(S::explicit(rows.clone()), Err(crate::Error::Param(_))),
            "{rows:?}"
        );
    }
    let ok = CurriculumConfig {
        buckets: 2,
        schedule: Some(vec![vec![0.9, 0.1], vec![0.2, 0.8]]),
        ..CurriculumConfig::default()
    };
    assert_eq!(ok.schedule().unwrap().probs(0.6), &[0.2, 0.8]);
    let wrong_size = CurriculumConfig {
        buckets: 3,
        ..ok.clone()
    };
    assert!(wrong_size.validate().is_err());
    let off_with_schedule = CurriculumConfig {
        enabled: false,
        ..ok.clone()
    };
    assert!(off_with_schedule.validate().is_err());
    for c in [
        CurriculumConfig {
            rrf_k: -1.0,
            ..Default::default()
        },
        CurriculumConfig {
            rrf_k: f64::INFINITY,
            ..Default::default()
        },
        CurriculumConfig {
            buckets: 0,
            ..Default::default()
        },
        CurriculumConfig {
            views: ViewSet {
                semantic: false,
                hierarchical: false,
                sequential: false,
            },
            ..Default::default()
        },
    ] {
        assert!(c.validate().is_err(), "{c:?}");
    }
    // Curriculum off: one bucket, uniform.
    let off = CurriculumConfig {
        enabled: false,
        buckets: 5,
        ..Default::default()
    };
    assert_eq!(
        (off.effective_buckets(), off.schedule().unwrap()),
        (1, S::uniform())
    );
    // TOML: defaults, a full file, unknown keys rejected.
    assert_eq!(
        CurriculumConfig::from_toml("").unwrap(),
        CurriculumConfig::default()
    );
    let c = CurriculumConfig::from_toml(
        "rrf_k = 10.0\nsemantic = \"static_bm25\"\nbuckets = 2\nschedule = [[1.0, 0.0], [0.5, 0.5]]\n\
         [views]\nsemantic = false\n",
    )
    .unwrap();
    assert_eq!(
        (c.rrf_k, c.semantic, c.views),
        (10.0, SemanticSource::StaticBm25, ViewSet::structure_only())
    );
    assert!(!c.semantic.refresh_every_epoch() && SemanticSource::Dynamic.refresh_every_epoch());
    assert!(CurriculumConfig::from_toml("bucket = 3").is_err());
    assert!(CurriculumConfig::from_toml("[views]\nlexical = true").is_err());
    assert!(CurriculumConfig::from_toml("semantic = \"bm25\"").is_err());
}

// ---------------------------------------------------------------- 3. graph and sequence

/// The hand-made legislative graph (node numbers; a = article):
///
/// ```text
///                  code 0                     code 11
///                /        \                   /     \
///           book 1        book 2           a 12     a 13
///           /    \           |
///       ch 3     ch 4      ch 5
///       /  \       |       /   \
///     a 6  a 7    a 8    a 9   a 10
/// ```
///
/// Article order: 6, 7, 8, 9, 10 in code 0; 12, 13 in code 11. Docs 0..7 are the articles
/// [6, 7, 8, 9, 10, 12, 13]; doc 7 is not in the graph.
fn toy_graph() -> CorpusStructure {
    let hierarchy = [
        (0, 1),
        (0, 2),
        (1, 3),
        (1, 4),
        (2, 5),
        (3, 6),
        (3, 7),
        (4, 8),
        (5, 9),
        (5, 10),
        (11, 12),
        (11, 13),
    ];
    let sequence = [(6, 7), (7, 8), (8, 9), (9, 10), (12, 13)];
    let doc_node = [6, 7, 8, 9, 10, 12, 13]
        .into_iter()
        .map(Some)
        .chain([None])
        .collect();
    CorpusStructure::from_legal_graph(14, &hierarchy, &sequence, doc_node).unwrap()
}

#[test]
fn graph_distances_by_hand() {
    let g = toy_graph();
    assert_eq!(g.nodes(), 14);
    let cands = [1, 2, 3, 4, 5, 6, 7];
    // From a 6: a 7 via ch 3 = 2; a 8 via ch 3, book 1, ch 4 = 4; a 9, a 10 via the code = 6; code 11's
    // articles and doc 7 are unreachable.
    let d = g.hierarchical_distances(&[0], &cands).unwrap();
    assert_eq!(d, vec![Some(2), Some(4), Some(6), Some(6), None, None, None]);
    // Two positives (a 6 and a 9): the nearest counts.
    let d = g.hierarchical_distances(&[0, 3], &[1, 2, 4]).unwrap();
    assert_eq!(d, vec![Some(2), Some(4), Some(2)]);
    let v = g.hierarchical_view(&[0], &[1, 5]).unwrap();
    assert_eq!(v, vec![-2.0, f64::NEG_INFINITY]);
    // Raw BFS over nodes.
    let adj = undirected_adjacency(14, &[(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (3, 6)]).unwrap();
    let d = hierarchical_distances(&adj, &[6]).unwrap();
    assert_eq!(
        &d[..7],
        &[Some(3), Some(2), Some(4), Some(1), Some(3), Some(5), Some(0)]
    );
    assert_eq!(d[13], None);
    assert!(
        hierarchical_distances(&adj, &[])
            .unwrap()
            .iter()
            .all(Option::is_none)
    );
    assert!(hierarchical_distances(&adj, &[14]).is_err());
    assert!(hierarchical_distances(&[vec![5]], &[0]).is_err());
    assert!(undirected_adjacency(3, &[(0, 3)]).is_err());
    assert!(g.hierarchical_distances(&[0], &[8]).is_err()); // doc out of range
}

#[test]
fn sequential_distances_two_codes() {
    let sequence = [(6, 7), (7, 8), (8, 9), (9, 10), (12, 13)];
    let pos = sequence_positions(14, &sequence).unwrap();
    assert_eq!(
        &pos[6..11],
        &[
            Some((0, 0)),
            Some((0, 1)),
            Some((0, 2)),
            Some((0, 3)),
            Some((0, 4))
        ]
    );
    assert_eq!(
        (pos[12], pos[13], pos[0], pos[11]),
        (Some((1, 0)), Some((1, 1)), None, None)
    );

    let g = toy_graph();
    // The statutes as one sequence: a 6 … a 10 at 0..=4, then code 11's a 12, a 13 at 5, 6.
    // Positive a 7 (doc 1, position 1): a 6 → 1, a 8 → 1, a 9 → 2, a 10 → 3, a 12 → 4, a 13 → 5;
    // doc 7 (outside the graph) → ∞.
    let d = g.sequential_distances(&[1], &[0, 2, 3, 4, 5, 6, 7]).unwrap();
    assert_eq!(
        d,
        vec![Some(1), Some(1), Some(2), Some(3), Some(4), Some(5), None]
    );
    // Positives in both codes: a 7 and a 12.
    let d = g.sequential_distances(&[1, 5], &[4, 6]).unwrap();
    assert_eq!(d, vec![Some(1), Some(1)]);
    assert_eq!(g.sequential_view(&[1], &[3, 6]).unwrap(), vec![-2.0, -5.0]);
    // Raw function: the nearest source on either side.
    let raw = [Some((0, 0)), Some((0, 10)), Some((0, 4)), Some((1, 4)), None];
    assert_eq!(
        sequential_distances(&raw, &[0, 1], &[2, 3, 4]).unwrap(),
        vec![Some(4), None, None]
    );
    assert!(sequential_distances(&raw, &[5], &[0]).is_err());
    // Malformed chains.
    assert!(sequence_positions(3, &[(0, 1), (0, 2)]).is_err()); // two successors
    assert!(sequence_positions(3, &[(0, 2), (1, 2)]).is_err()); // two predecessors
    assert!(sequence_positions(3, &[(0, 1), (1, 0)]).is_err()); // cycle
    assert!(sequence_positions(3, &[(1, 1)]).is_err()); // self-loop
    assert!(sequence_positions(3, &[(0, 3)]).is_err()); // out of range
    // A legislative graph whose edges name an article that is not one of its nodes is inconsistent
    // data, not a bad setting.
    let unknown = CorpusStructure::from_legal_graph(3, &[(0, 1), (1, 7)], &[], vec![Some(1)]).unwrap_err();
    assert!(matches!(unknown, crate::Error::Data { .. }), "{unknown:?}");
    assert_eq!(
        unknown.to_string(),
        "inconsistent data in curriculum graph: edge (1, 7) names a node outside the 3 nodes"
    );
    // A config value out of range is a parameter error naming it.
    let no_buckets = CurriculumConfig {
        buckets: 0,
        ..CurriculumConfig::default()
    };
    assert_eq!(
        no_buckets.validate().unwrap_err().to_string(),
        "invalid parameter: curriculum buckets must be at least 1, got 0"
    );
}

/// Issue 31, item 9: the sequential view runs over the statutes linearised as one sequence, not
/// within one code: codes follow each other in node order (the release's), and an article alone in
/// its code (on no sequence edge) takes its place in the sequence too.
#[test]
fn the_sequential_view_runs_over_the_linearised_statutes() {
    // Nodes: code 0 with articles 1, 2; code 3 with article 4 alone; code 5 with articles 6, 7.
    let hierarchy = [(0, 1), (0, 2), (3, 4), (5, 6), (5, 7)];
    let sequence = [(1, 2), (6, 7)];
    let pos = linear_positions(8, &sequence, [1, 2, 4, 6, 7]).unwrap();
    assert_eq!(
        pos,
        vec![
            None,
            Some((0, 0)),
            Some((0, 1)),
            None,
            Some((0, 2)),
            None,
            Some((0, 3)),
            Some((0, 4))
        ]
    );
    let g = CorpusStructure::from_legal_graph(
        8,
        &hierarchy,
        &sequence,
        vec![Some(1), Some(2), Some(4), Some(6), Some(7)],
    )
    .unwrap();
    // Positive: doc 0 (article 1). Every other article is a finite distance away, across codes.
    assert_eq!(
        g.sequential_distances(&[0], &[1, 2, 3, 4]).unwrap(),
        vec![Some(1), Some(2), Some(3), Some(4)]
    );
    // The hierarchical view still separates the codes.
    assert_eq!(
        g.hierarchical_distances(&[0], &[1, 2]).unwrap(),
        vec![Some(2), None]
    );
    assert!(linear_positions(3, &[], [3]).is_err());
}

/// Issue 31, item 9: by default the buckets cover every negative of the query (`top_n = 0`, ours since
/// issue 56); `top_n` keeps the hardest `top_n` (the BSARD configs: buckets × negatives per positive).
#[test]
fn the_buckets_cover_every_negative_by_default() {
    let config = CurriculumConfig {
        views: ViewSet::semantic_only(),
        ..CurriculumConfig::default()
    };
    assert_eq!(config.top_n, 0);
    let cands: Vec<usize> = (0..300).collect();
    let semantic: Vec<f64> = cands.iter().map(|&d| -(d as f64)).collect();
    let d = Difficulty::for_query(
        &config,
        QueryViews {
            candidates: &cands,
            positives: &[0],
            semantic: Some(&semantic),
            structure: None,
            tie_seed: None,
        },
    )
    .unwrap();
    let kept = config.bucketed(d.len());
    let b = Buckets::split(&d.order[..kept], 3).unwrap();
    assert_eq!(b.total(), 299, "every negative");
    assert_eq!(b.bucket(2), &(1..101).collect::<Vec<_>>()[..], "hardest third");
    let cut = CurriculumConfig { top_n: 30, ..config };
    assert_eq!(cut.bucketed(d.len()), 30);
}

// ---------------------------------------------------------------- 4. sampler

/// Buckets of 3000 candidates: bucket 2 (hardest) = docs 0..1000, 1 = 1000..2000, 0 = 2000..3000.
fn three_thousand() -> Buckets {
    Buckets::split(&(0..3000).collect::<Vec<_>>(), 3).unwrap()
}

#[test]
fn sampler_matches_schedule_proportions() {
    // 4000 queries × 5 negatives = N = 20 000 draws per progress value. Buckets of 1000 never run out
    // within one query, so every draw picks its bucket independently with the schedule's
    // probabilities; each observed share must be within 4 standard errors, 4·sqrt(p(1 − p)/N)
    // (a false failure has probability below 1e-4 per share).
    let buckets = three_thousand();
    let sampler = CurriculumSampler::new(S::paper_default());
    let mut rng = SplitMix64::new(2024);
    for progress in [0.0, 0.5, 0.9] {
        let mut counts = [0usize; 3];
        let (queries, per) = (4000, 5);
        for _ in 0..queries {
            for d in sampler.sample(&buckets, progress, per, &mut rng).unwrap() {
                counts[2 - d / 1000] += 1;
            }
        }
        let n = (queries * per) as f64;
        for (b, &p) in sampler.schedule().probs(progress).iter().enumerate() {
            let share = counts[b] as f64 / n;
            let bound = 4.0 * (p * (1.0 - p) / n).sqrt();
            assert!(
                (share - p).abs() <= bound,
                "t={progress} bucket {b}: {share} vs {p} ± {bound}"
            );
        }
    }
}

#[test]
fn sampler_draws_distinct_non_positive_negatives_deterministically() {
    // Positives 5 and 17 are in the pool; they are removed before ranking and never drawn.
    let cands: Vec<usize> = (0..30).collect();
    let scores: Vec<f64> = cands.iter().map(|&d| (d * 7 % 30) as f64).collect();
    let config = CurriculumConfig {
        views: ViewSet::semantic_only(),
        ..CurriculumConfig::default()
    };
    let q = QueryViews {
        candidates: &cands,
        positives: &[5, 17],
        semantic: Some(&scores),
        structure: None,
        tie_seed: None,
    };
    let difficulty = Difficulty::for_query(&config, q).unwrap();
    assert_eq!(difficulty.len(), 28);
    let buckets = difficulty.buckets(3).unwrap();
    let sampler = CurriculumSampler::from_config(&config).unwrap();
    for seed in 0..50 {
        for (progress, n) in [(0.0, 10), (0.5, 27), (0.9, 28), (0.2, 100)] {
            let got = sampler
                .sample(&buckets, progress, n, &mut SplitMix64::new(seed))
                .unwrap();
            assert_eq!(got.len(), n.min(28));
            assert!(!got.contains(&5) && !got.contains(&17));
            assert_eq!(
                got.iter().collect::<HashSet<_>>().len(),
                got.len(),
                "duplicates: {got:?}"
            );
            let again = sampler
                .sample(&buckets, progress, n, &mut SplitMix64::new(seed))
                .unwrap();
            assert_eq!(got, again);
        }
    }
    let a = sampler
        .sample(&buckets, 0.0, 10, &mut SplitMix64::new(1))
        .unwrap();
    let b = sampler
        .sample(&buckets, 0.0, 10, &mut SplitMix64::new(2))
        .unwrap();
    assert_ne!(a, b);
    // All 3000 of the big pool: a permutation.
    let all = sampler
        .sample(&three_thousand(), 0.3, 5000, &mut SplitMix64::new(9))
        .unwrap();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..3000).collect::<Vec<_>>());
}

#[test]
fn sampler_edge_cases() {
    let sampler = CurriculumSampler::new(S::paper_default());
    let mut rng = SplitMix64::new(3);
    // Empty pool; n = 0.
    let empty = Buckets::split(&[], 3).unwrap();
    assert!(sampler.sample(&empty, 0.0, 5, &mut rng).unwrap().is_empty());
    assert!(
        sampler
            .sample(&three_thousand(), 0.0, 0, &mut rng)
            .unwrap()
            .is_empty()
    );
    // The easy bucket is empty at progress 0 (70 % of the mass): renormalised over the others.
    let small = Buckets::split(&[8, 9], 3).unwrap();
    let mut got = sampler.sample(&small, 0.0, 5, &mut rng).unwrap();
    got.sort_unstable();
    assert_eq!(got, vec![8, 9]);
    // Bucket count ≠ schedule's.
    assert!(
        sampler
            .sample(&Buckets::split(&[1, 2], 2).unwrap(), 0.0, 1, &mut rng)
            .is_err()
    );
    // Zero-probability bucket: drawn only once the others are exhausted.
    let strict = CurriculumSampler::new(S::explicit(vec![vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap());
    let two = Buckets::split(&[0, 1, 2, 3, 4], 2).unwrap(); // bucket 1 = [0, 1, 2], bucket 0 = [3, 4]
    for seed in 0..20 {
        let got = strict.sample(&two, 0.1, 4, &mut SplitMix64::new(seed)).unwrap();
        assert_eq!(got[..2].iter().collect::<HashSet<_>>(), [3, 4].iter().collect());
        assert!(got[2..].iter().all(|d| *d < 3));
        let got = strict.sample(&two, 0.6, 3, &mut SplitMix64::new(seed)).unwrap();
        assert!(got.iter().all(|d| *d < 3));
    }
    // Curriculum off: one bucket holding everything, uniform draws.
    let off = CurriculumConfig {
        enabled: false,
        ..CurriculumConfig::default()
    };
    let uniform = CurriculumSampler::from_config(&off).unwrap();
    let one = Buckets::split(&(0..3000).collect::<Vec<_>>(), off.effective_buckets()).unwrap();
    let mut thirds = [0usize; 3];
    let mut rng = SplitMix64::new(11);
    for _ in 0..2000 {
        for d in uniform.sample(&one, 0.0, 5, &mut rng).unwrap() {
            thirds[d / 1000] += 1;
        }
    }
    // Each third of the pool gets 1/3 of N = 10 000 draws, within 4·sqrt((1/3)(2/3)/N).
    let bound = 4.0 * ((1.0 / 3.0) * (2.0 / 3.0) / 10_000.0f64).sqrt();
    assert!(
        thirds
            .iter()
            .all(|&c| (c as f64 / 10_000.0 - 1.0 / 3.0).abs() <= bound),
        "{thirds:?}"
    );
}

// ---------------------------------------------------------------- 5. ECtHR

#[test]
fn ecthr_views_from_paragraph_lists() {
    // Doc i = the i-th paragraph: numbers 1..=7 in sections Procedure (1–2), Facts (3–5), Law (6–7).
    let paras = [
        (1, "Procedure"),
        (2, "Procedure"),
        (3, "Facts"),
        (4, "Facts"),
        (5, "Facts"),
        (6, "Law"),
        (7, "Law"),
    ];
    let j = CorpusStructure::from_judgment(&paras).unwrap();
    assert_eq!(j.nodes(), 1 + 3 + 7); // root, sections, paragraphs
    // Positive: paragraph 4 (doc 3, Facts). Same section → 2, other section → 4 (via the root).
    let cands = [0, 1, 2, 4, 5, 6];
    assert_eq!(
        j.hierarchical_distances(&[3], &cands).unwrap(),
        [4, 4, 2, 2, 4, 4].map(Some).to_vec()
    );
    assert_eq!(
        j.sequential_distances(&[3], &cands).unwrap(),
        [3, 2, 1, 1, 2, 3].map(Some).to_vec()
    );
    // Two positives: paragraphs 1 (Procedure) and 7 (Law).
    let cands = [1, 2, 3, 4, 5];
    assert_eq!(
        j.hierarchical_distances(&[0, 6], &cands).unwrap(),
        [2, 4, 4, 4, 2].map(Some).to_vec()
    );
    assert_eq!(
        j.sequential_distances(&[0, 6], &cands).unwrap(),
        [1, 2, 3, 2, 1].map(Some).to_vec()
    );
    // Numbering with gaps and sections that come back: positions are the paragraph numbers, sections
    // are matched by label.
    let gaps = [(10, "Facts"), (20, "Law"), (25, "Facts")];
    let j = CorpusStructure::from_judgment(&gaps).unwrap();
    assert_eq!(
        j.hierarchical_distances(&[0], &[1, 2]).unwrap(),
        vec![Some(4), Some(2)]
    );
    assert_eq!(
        j.sequential_distances(&[0], &[1, 2]).unwrap(),
        vec![Some(10), Some(15)]
    );
    // Through the config: structure only, all views.
    let config = CurriculumConfig {
        views: ViewSet::structure_only(),
        ..CurriculumConfig::default()
    };
    let j = CorpusStructure::from_judgment(&paras).unwrap();
    let all: Vec<usize> = (0..7).collect();
    let q = QueryViews {
        candidates: &all,
        positives: &[3],
        semantic: None,
        structure: Some(&j),
        tie_seed: None,
    };
    let d = Difficulty::for_query(&config, q).unwrap();
    // Permutations, ties by doc index. hier: 2, 4, 0, 1, 5, 6 (ranks 1–6). seq: 2, 4 (distance 1),
    // 1, 5 (2), 0, 6 (3). Fused: 2 = 2/61, 4 = 2/62, 1 = 1/64 + 1/63, 0 = 1/63 + 1/65,
    // 5 = 1/65 + 1/64, 6 = 2/66.
    assert_eq!(d.order, vec![2, 4, 1, 0, 5, 6]);
    assert!(
        CorpusStructure::from_judgment::<&str>(&[])
            .unwrap()
            .hierarchical_distances(&[], &[])
            .unwrap()
            .is_empty()
    );
}

/// Issue 56, item 3: with a tie seed, the order among equally difficult candidates (here every
/// candidate at infinite distance, as the articles of another code are in BSARD's rootless graph) is
/// a shuffle fixed by the seed: the same seed gives the same order, another seed another, and over
/// many seeds each candidate comes first about equally often; without one it is the corpus's order,
/// which put early articles first every time.
#[test]
fn ties_are_broken_by_a_seeded_shuffle_not_the_corpus_order() {
    let cands: Vec<usize> = (100..110).collect();
    let tied = vec![f64::NEG_INFINITY; cands.len()];
    let order = |seed: Option<u64>| {
        Difficulty::fuse_seeded(&cands, std::slice::from_ref(&tied), K, seed)
            .unwrap()
            .order
    };
    assert_eq!(order(None), cands, "without a seed: doc index ascending");
    assert_eq!(order(Some(7)), order(Some(7)), "one seed, one order");
    assert_ne!(order(Some(7)), order(Some(8)));
    let mut first = [0usize; 10];
    for seed in 0..1000u64 {
        let o = order(Some(seed));
        let mut sorted = o.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, cands, "a permutation");
        first[o[0] - 100] += 1;
    }
    // Expected 100 each (binomial sd 9.5): 5 sd either way, and never the corpus's first every time.
    assert!(first.iter().all(|&n| (52..=148).contains(&n)), "{first:?}");
    // The same through a query's views: a structural view with every candidate of another code.
    let ranks = permutation_ranks_seeded(&tied, &cands, Some(3)).unwrap();
    let mut r = ranks.clone();
    r.sort_unstable();
    assert_eq!(r, (1..=10).collect::<Vec<_>>());
    assert_ne!(ranks, (1..=10).collect::<Vec<_>>(), "not the corpus order");
    assert!(
        permutation_ranks_seeded(&[1.0, 2.0], &[4, 4], Some(3)).is_err(),
        "a doc twice"
    );
}
