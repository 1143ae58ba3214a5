//! The paper's evaluation settings, built from pairs with an explicit seed, and the certificate that
//! proves they do not leak.
//!
//! 1. *Unseen guide*: every pair of the held-out guides (a list, or guides drawn by seed until their
//!    share of pairs is reached).
//! 2. *Seen guide / unseen query*: from the other guides, whole queries drawn by seed until their pairs
//!    reach the configured share.
//! 3. *Seen guide / seen query*: the remaining pairs split into train / val / test **by judgment**, so
//!    the test and validation judgments never occur in training, and — the setting's name — every
//!    test and validation query occurs in training ([`SeenQueries`]): a judgment goes to test or
//!    validation only if each of its queries keeps a pair with another judgment that can still train.
//!
//! The defaults reproduce the paper's proportions (Santosh et al. 2024: 4,109 pairs; 403 unseen-guide,
//! 694 unseen-query, 2,230 / 302 / 480 train / val / test).

use std::collections::{BTreeMap, BTreeSet};

use lexbench_core::{GuideId, ItemId, QueryId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::pairs::{Pair, fold};
use crate::rng::SplitMix64;

/// Split names, in the order they are reported.
pub const SPLITS: [&str; 5] = ["train", "val", "test", "unseen_query", "unseen_guide"];

/// The release's held-out guides: Article 3, Article 11, Environment, Mass protests.
pub const RELEASE_UNSEEN_GUIDES: [&str; 4] = [
    "guide_art_3_eng",
    "guide_art_11_eng",
    "guide_environment_eng",
    "guide_mass_protests_eng",
];

/// How to split. A TOML/JSON file a user can read and diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SplitConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Guides held out whole. Empty: draw guides by seed until `unseen_guide_share` is reached.
    pub unseen_guides: Vec<GuideId>,
    /// Share of all pairs in held-out guides when they are drawn (paper: 403 / 4,109).
    pub unseen_guide_share: f64,
    /// Share of the seen guides' pairs whose queries are held out (paper: 694 / 3,706).
    pub unseen_query_share: f64,
    /// Share of the remaining pairs for validation (paper: 302 / 3,012).
    pub val_share: f64,
    /// Share of the remaining pairs for test (paper: 480 / 3,012).
    pub test_share: f64,
    /// Whether the seen setting's test and validation queries must occur in training.
    pub seen_queries: SeenQueries,
}

/// How strictly *seen query* is kept: the paper's seen setting evaluates queries the model was
/// trained on ("seen guide / seen query"; in the release 242 of 257 test queries occur in training).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeenQueries {
    /// Every test and validation query occurs in training: a judgment is held out for test or
    /// validation only when each of its queries keeps a training pair; the certificate checks it,
    /// and a build where no judgment can be held out that way is refused.
    #[default]
    Required,
    /// As `Required` while judgments qualify; a split still short of its share is then filled with
    /// the other judgments (for data with few repeated queries, such as the embedded sample). The
    /// certificate counts the seen queries but does not require them.
    Preferred,
    /// No constraint: train / val / test by judgment only (the splits before this option).
    Off,
}

impl Default for SplitConfig {
    fn default() -> Self {
        Self {
            seed: 2024,
            unseen_guides: RELEASE_UNSEEN_GUIDES
                .iter()
                .filter_map(|g| GuideId::new(*g).ok())
                .collect(),
            unseen_guide_share: 403.0 / 4109.0,
            unseen_query_share: 694.0 / 3706.0,
            val_share: 302.0 / 3012.0,
            test_share: 480.0 / 3012.0,
            seen_queries: SeenQueries::Required,
        }
    }
}

impl SplitConfig {
    /// Checks the shares.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("unseen_guide_share", self.unseen_guide_share),
            ("unseen_query_share", self.unseen_query_share),
            ("val_share", self.val_share),
            ("test_share", self.test_share),
        ] {
            if !(0.0..1.0).contains(&v) {
                return Err(Error::Config(format!("{name} must be in [0, 1), got {v}")));
            }
        }
        if self.val_share + self.test_share >= 1.0 {
            return Err(Error::Config(
                "val_share + test_share must leave pairs for training".into(),
            ));
        }
        Ok(())
    }
}

/// Pair indices per split name.
pub type Assignment = BTreeMap<String, Vec<usize>>;

/// Splits `pairs` into the five settings.
pub fn assign(pairs: &[Pair], cfg: &SplitConfig) -> Result<Assignment> {
    cfg.validate()?;
    if pairs.is_empty() {
        return Err(Error::Empty("no pairs to split".into()));
    }
    let mut rng = SplitMix64::new(cfg.seed);
    let mut out: Assignment = SPLITS.iter().map(|s| ((*s).to_owned(), Vec::new())).collect();

    // 1. Unseen guides.
    let guides: BTreeSet<&GuideId> = pairs.iter().map(|p| &p.guide).collect();
    let held: BTreeSet<GuideId> = if cfg.unseen_guides.is_empty() {
        let mut order: Vec<&GuideId> = guides.iter().copied().collect();
        rng.shuffle(&mut order);
        let target = (cfg.unseen_guide_share * pairs.len() as f64).round() as usize;
        let mut held = BTreeSet::new();
        let mut n = 0;
        for g in order {
            if n >= target {
                break;
            }
            n += pairs.iter().filter(|p| &p.guide == g).count();
            held.insert(g.clone());
        }
        held
    } else {
        // A guide named to be held out that has no pair here (a typo, a guide not crawled or
        // parsed) would leave the unseen-guide setting short or empty while the build passes.
        let unknown: Vec<&str> = cfg
            .unseen_guides
            .iter()
            .filter(|g| !guides.contains(g))
            .map(GuideId::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(Error::Config(format!(
                "unseen_guides names {} guide(s) with no pair in this build: {}; the guides with pairs are: {}",
                unknown.len(),
                unknown.join(", "),
                guides.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        cfg.unseen_guides.iter().cloned().collect()
    };
    let mut seen = Vec::new();
    for (i, p) in pairs.iter().enumerate() {
        if held.contains(&p.guide) {
            out.entry("unseen_guide".into()).or_default().push(i);
        } else {
            seen.push(i);
        }
    }

    // 2. Unseen queries: whole queries, by folded text so near-identical texts stay together.
    let mut by_query: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &i in &seen {
        by_query.entry(fold(&pairs[i].text)).or_default().push(i);
    }
    let mut queries: Vec<&String> = by_query.keys().collect();
    rng.shuffle(&mut queries);
    let target = (cfg.unseen_query_share * seen.len() as f64).round() as usize;
    let mut unseen_q: BTreeSet<usize> = BTreeSet::new();
    for q in queries {
        if unseen_q.len() >= target {
            break;
        }
        unseen_q.extend(&by_query[q]);
    }
    let rest: Vec<usize> = seen.into_iter().filter(|i| !unseen_q.contains(i)).collect();
    out.insert("unseen_query".into(), unseen_q.into_iter().collect());

    // 3. Train / val / test by judgment, keeping test and validation queries seen in training.
    let mut by_item: BTreeMap<&ItemId, Vec<usize>> = BTreeMap::new();
    for &i in &rest {
        by_item.entry(&pairs[i].item).or_default().push(i);
    }
    let mut items: Vec<&ItemId> = by_item.keys().copied().collect();
    rng.shuffle(&mut items);
    let test_target = (cfg.test_share * rest.len() as f64).round() as usize;
    let val_target = (cfg.val_share * rest.len() as f64).round() as usize;
    // Pairs per (folded) query that are not yet held out: they, and only they, can still train.
    let mut can_train: BTreeMap<String, usize> = BTreeMap::new();
    for &i in &rest {
        *can_train.entry(fold(&pairs[i].text)).or_default() += 1;
    }
    // Whether holding out these pairs leaves each of their queries a pair that can train.
    let keeps_seen = |ps: &[usize], can_train: &BTreeMap<String, usize>| {
        let mut here: BTreeMap<String, usize> = BTreeMap::new();
        for &i in ps {
            *here.entry(fold(&pairs[i].text)).or_default() += 1;
        }
        here.iter().all(|(q, n)| can_train.get(q).is_some_and(|c| c > n))
    };
    let hold = |ps: &[usize], can_train: &mut BTreeMap<String, usize>| {
        for &i in ps {
            if let Some(c) = can_train.get_mut(&fold(&pairs[i].text)) {
                *c = c.saturating_sub(1);
            }
        }
    };
    let constrained = cfg.seen_queries != SeenQueries::Off;
    let (mut test, mut val, mut train) = (Vec::new(), Vec::new(), Vec::new());
    let mut passed_over = Vec::new();
    for item in items {
        let ps = &by_item[item];
        let short = test.len() < test_target || val.len() < val_target;
        if short && constrained && !keeps_seen(ps, &can_train) {
            passed_over.push(item);
            continue;
        }
        if test.len() < test_target {
            hold(ps, &mut can_train);
            test.extend(ps);
        } else if val.len() < val_target {
            hold(ps, &mut can_train);
            val.extend(ps);
        } else {
            train.extend(ps);
        }
    }
    // The judgments passed over train, except where `Preferred` needs them to fill a short split.
    for item in passed_over {
        let ps = &by_item[item];
        if cfg.seen_queries == SeenQueries::Preferred && test.len() < test_target {
            test.extend(ps);
        } else if cfg.seen_queries == SeenQueries::Preferred && val.len() < val_target {
            val.extend(ps);
        } else {
            train.extend(ps);
        }
    }
    if cfg.seen_queries == SeenQueries::Required {
        for (name, split, target) in [("test", &test, test_target), ("val", &val, val_target)] {
            if split.is_empty() && target > 0 {
                return Err(Error::SeenQueries {
                    split: name.to_owned(),
                    pairs: rest.len(),
                });
            }
        }
    }
    for (name, mut v) in [("train", train), ("val", val), ("test", test)] {
        v.sort_unstable();
        out.insert(name.into(), v);
    }
    if let Some(v) = out.get_mut("unseen_guide") {
        v.sort_unstable();
    }
    Ok(out)
}

/// One guarantee and whether it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// What is guaranteed.
    pub name: String,
    /// Whether it holds.
    pub passed: bool,
    /// Violations (up to 20 examples) or a short confirmation.
    pub detail: Vec<String>,
}

/// The split certificate (`certificate.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Certificate {
    /// Whether every check passed.
    pub passed: bool,
    /// The checks.
    pub checks: Vec<Check>,
    /// Pairs, queries and judgments per split.
    pub sizes: BTreeMap<String, BTreeMap<String, usize>>,
    /// Judgments shared between two splits (`train∩test` → count); informational.
    pub shared_judgments: BTreeMap<String, usize>,
    /// sha256 of every split and qrels file, filled in when the dataset is written.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// For `test` and `val`: how many of their queries occur in training (the seen setting's
    /// premise); a check only where the splits were built with [`SeenQueries::Required`].
    #[serde(default)]
    pub seen_queries: BTreeMap<String, SeenCount>,
}

/// How many of a split's queries occur (as folded text) in training.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenCount {
    /// Distinct queries of the split.
    pub queries: usize,
    /// Of them, those with a training pair.
    pub in_training: usize,
    /// Up to 20 of the others (query ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<String>,
}

/// The check [`Certificate::require_seen_queries`] adds.
pub const SEEN_QUERIES_CHECK: &str = "every test and validation query occurs in training";

impl Certificate {
    /// Adds the check that every test and validation query occurs in training (splits built with
    /// [`SeenQueries::Required`]); the certificate then passes only if it holds.
    pub fn require_seen_queries(&mut self) {
        let violations = ["test", "val"]
            .iter()
            .filter_map(|n| self.seen_queries.get(*n).map(|c| (n, c)))
            .flat_map(|(n, c)| {
                c.unseen
                    .iter()
                    .map(move |q| format!("{n} query {q} not in train"))
            })
            .collect();
        let c = check(SEEN_QUERIES_CHECK, violations);
        self.passed &= c.passed;
        self.checks.push(c);
    }
}

/// The texts of `into` that also occur in `seen`, compared exactly and after [`fold`]: one line per
/// crossing, `LABEL QUERY also in FROM (exact|after folding)`, sorted, without repeats (a text
/// several queries share is named once). The leak checks of the settings' certificate and of the
/// open corpus's (`crate::open`).
pub(crate) fn text_crossings(
    seen: &[(&str, &QueryId)],
    into: &[(&str, &QueryId)],
    label: &str,
    from: &str,
) -> Vec<String> {
    let mut v = Vec::new();
    for folded in [false, true] {
        let key = |t: &str| if folded { fold(t) } else { t.to_owned() };
        let seen: BTreeSet<String> = seen.iter().map(|(t, _)| key(t)).collect();
        let into: BTreeMap<String, &QueryId> = into.iter().map(|(t, q)| (key(t), *q)).collect();
        for (t, q) in into {
            if seen.contains(&t) {
                v.push(format!(
                    "{label} {q} also in {from} ({})",
                    if folded { "after folding" } else { "exact" }
                ));
            }
        }
    }
    v.sort();
    v.dedup();
    v
}

/// One guarantee, passed when `violations` is empty (its first 20 are kept).
pub(crate) fn check(name: &str, violations: Vec<String>) -> Check {
    let passed = violations.is_empty();
    let mut detail: Vec<String> = violations.into_iter().take(20).collect();
    if passed {
        detail.push("holds".into());
    }
    Check {
        name: name.to_owned(),
        passed,
        detail,
    }
}

/// Certifies an assignment: no query text (exact or folded) crosses from the seen splits into the
/// unseen settings, no held-out guide appears outside *unseen guide*, every pair is in one split.
pub fn certify(pairs: &[Pair], a: &Assignment) -> Certificate {
    let of = |name: &str| a.get(name).map(Vec::as_slice).unwrap_or(&[]);
    let texts = |names: &[&str]| -> Vec<(&str, &QueryId)> {
        names
            .iter()
            .flat_map(|n| of(n).iter())
            .map(|&i| (pairs[i].text.as_str(), &pairs[i].query))
            .collect()
    };
    let crossing = |from: &[&str], into: &str| -> Vec<String> {
        text_crossings(
            &texts(from),
            &texts(&[into]),
            &format!("{into} query"),
            &from.join("/"),
        )
    };
    let mut checks = vec![
        check(
            "no unseen-query text occurs in train/val/test",
            crossing(&["train", "val", "test"], "unseen_query"),
        ),
        check(
            "no unseen-guide text occurs in any other split",
            crossing(&["train", "val", "test", "unseen_query"], "unseen_guide"),
        ),
    ];
    let held: BTreeSet<&GuideId> = of("unseen_guide").iter().map(|&i| &pairs[i].guide).collect();
    let mut leaks = Vec::new();
    for n in ["train", "val", "test", "unseen_query"] {
        for &i in of(n) {
            if held.contains(&pairs[i].guide) {
                leaks.push(format!("{n} has a pair of held-out guide {}", pairs[i].guide));
            }
        }
    }
    leaks.sort();
    leaks.dedup();
    checks.push(check("no held-out guide appears outside unseen_guide", leaks));
    let mut count = vec![0usize; pairs.len()];
    for v in a.values() {
        for &i in v {
            count[i] += 1;
        }
    }
    let misplaced: Vec<String> = count
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != 1)
        .map(|(i, c)| format!("pair {} is in {c} splits", pairs[i].topic()))
        .collect();
    checks.push(check("every pair is in exactly one split", misplaced));

    let mut sizes = BTreeMap::new();
    let mut judgments: BTreeMap<&str, BTreeSet<&ItemId>> = BTreeMap::new();
    for n in SPLITS {
        let idx = of(n);
        let q: BTreeSet<&QueryId> = idx.iter().map(|&i| &pairs[i].query).collect();
        let j: BTreeSet<&ItemId> = idx.iter().map(|&i| &pairs[i].item).collect();
        let g: BTreeSet<&GuideId> = idx.iter().map(|&i| &pairs[i].guide).collect();
        sizes.insert(
            n.to_owned(),
            BTreeMap::from([
                ("pairs".to_owned(), idx.len()),
                ("queries".to_owned(), q.len()),
                ("judgments".to_owned(), j.len()),
                ("guides".to_owned(), g.len()),
            ]),
        );
        judgments.insert(n, j);
    }
    let mut shared_judgments = BTreeMap::new();
    for (i, a) in SPLITS.iter().enumerate() {
        for b in &SPLITS[i + 1..] {
            let n = judgments[a].intersection(&judgments[b]).count();
            shared_judgments.insert(format!("{a}∩{b}"), n);
        }
    }
    let trained: BTreeSet<String> = of("train").iter().map(|&i| fold(&pairs[i].text)).collect();
    let mut seen_queries = BTreeMap::new();
    for n in ["test", "val"] {
        let mut queries: BTreeMap<&QueryId, bool> = BTreeMap::new();
        for &i in of(n) {
            let seen = trained.contains(&fold(&pairs[i].text));
            *queries.entry(&pairs[i].query).or_insert(seen) |= seen;
        }
        let unseen: Vec<String> = queries
            .iter()
            .filter(|(_, seen)| !**seen)
            .map(|(q, _)| q.to_string())
            .take(20)
            .collect();
        seen_queries.insert(
            n.to_owned(),
            SeenCount {
                queries: queries.len(),
                in_training: queries.values().filter(|s| **s).count(),
                unseen,
            },
        );
    }
    Certificate {
        passed: checks.iter().all(|c| c.passed),
        checks,
        sizes,
        shared_judgments,
        files: BTreeMap::new(),
        seen_queries,
    }
}
