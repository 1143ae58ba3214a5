//! The leaderboard as a table: one per dataset, a row per system, a column group per split (setting)
//! with the task's measures, each non-baseline cell tested against BM25.
//!
//! Choices, stated:
//! - **A row is a system and its provenance**: a system's verified entries (the harness ran its
//!   model, [`crate::entry::Provenance`]) and its self-reported ones (run files) never share a row,
//!   so a verified row ([`Row::verified`]) shows verified numbers only. The same name submitted both
//!   ways gives two rows.
//! - **A name belongs to its submitter**: entries under one system name from submitters whose
//!   cards name other authors ([`owner`]; no card or no authors is an owner too, "no authors
//!   given") are separate rows, each shown with its authors: a second submitter's run under a name
//!   already taken never replaces the first one's row.
//! - **Which entry fills a cell**: of a row's entries on a dataset split, the latest on the dataset
//!   version built now (its `manifest.json` hash); if it has none, its latest on any version, marked
//!   as stale (†) because its scores come from different data.
//! - **The baseline** is the entry [`is_baseline`] says is one: named exactly [`BASELINE`] and run
//!   by the harness itself (`lexbench submit --baseline`: a verified entry whose model is
//!   lexbench's BM25, [`ModelKind::Bm25`]). What a run file or its sidecar says never makes a
//!   baseline: a sidecar is the submitter's text, and a run copied and edited from a BM25 run would
//!   otherwise become the reference every significance mark is computed against. The name is
//!   reserved at submission in any case ([`is_baseline_name`], [`crate::submit()`]), so a board
//!   has at most one baseline row and no submission can become it by its name.
//! - **Significance**: against the baseline's entry in the same split and on the same dataset version
//!   (cells on another version are not tested). For each measure, the paired randomization test over
//!   the split's qrels topics ([`crate::stats`]); the family corrected with Holm is every (system,
//!   measure) test of one dataset split; α = [`ALPHA`].

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::entry::{Entry, ModelKind};
use crate::stats::{holm, paired_randomization};

/// The baseline's name on the leaderboard, reserved for lexbench's BM25 run.
pub const BASELINE: &str = "BM25";

/// The `system` that the sidecar of a run written by `lexbench run bm25` names.
pub const BASELINE_SIDECAR_SYSTEM: &str = "bm25";

/// Is `name` the baseline's name in any case, padding, punctuation or look-alike letters (`bm25`,
/// ` Bm25 `, Cyrillic `ВМ25`, Cherokee `ᏴᎷ25`, script `ℬℳ25`, hooked `ƁM25`, fullwidth `ＢＭ２５`,
/// small capitals `ʙᴍ25`, circled `ⒷⓂ②⑤`, `B M 2 5`)? Such names are reserved: only the harness's own BM25 is recorded under [`BASELINE`].
/// Names are compared by their [`skeleton`], letters and digits only.
pub fn is_baseline_name(name: &str) -> bool {
    let letters = |s: String| -> String { s.chars().filter(|c| c.is_alphanumeric()).collect() };
    letters(skeleton(name)) == letters(skeleton(BASELINE))
}

/// What a name looks like, for telling whether two names can be told apart on a page: Unicode's
/// confusable skeleton (UTS #39, from Unicode's `confusables.txt` through the `unicode-security`
/// crate) of the name in NFKC (circled `Ⓑ`, parenthesised and other compatibility letters and
/// digits as their plain ones), its small capitals (`ʙᴍ`) as capitals, in capitals, with spaces,
/// hidden and blank-looking characters and combining marks left out. Two names with one skeleton
/// look alike (`Аlice` with a Cyrillic `А` and `Alice`); capitals first, since the table maps a
/// small `m` to `rn`.
pub fn skeleton(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let visible = |c: &char| {
        !c.is_whitespace()
            && !crate::submit::is_hidden(*c)
            && !crate::submit::is_mark(*c)
            && !crate::submit::is_invisible(*c)
            && !lexbench_core::text::is_default_ignorable(*c)
    };
    let kept: String = name.nfkc().map(small_capital).filter(visible).collect();
    unicode_security::confusable_detection::skeleton(&kept.to_uppercase())
        .filter(visible)
        .collect()
}

/// The capital a small capital letter (`LATIN LETTER SMALL CAPITAL …`, which neither NFKC nor
/// `confusables.txt` maps) stands for; any other character as it is.
fn small_capital(c: char) -> char {
    match c {
        '\u{0262}' => 'G',
        '\u{026a}' => 'I',
        '\u{0274}' => 'N',
        '\u{0280}' => 'R',
        '\u{028f}' => 'Y',
        '\u{0299}' => 'B',
        '\u{029c}' => 'H',
        '\u{029f}' => 'L',
        '\u{1d00}' => 'A',
        '\u{1d04}' => 'C',
        '\u{1d05}' => 'D',
        '\u{1d07}' => 'E',
        '\u{1d0a}' => 'J',
        '\u{1d0b}' => 'K',
        '\u{1d0d}' => 'M',
        '\u{1d0f}' => 'O',
        '\u{1d18}' => 'P',
        '\u{1d1b}' => 'T',
        '\u{1d1c}' => 'U',
        '\u{1d20}' => 'V',
        '\u{1d21}' => 'W',
        '\u{1d22}' => 'Z',
        '\u{a730}' => 'F',
        '\u{a731}' => 'S',
        '\u{a7af}' => 'Q',
        c => c,
    }
}

/// The characters of `a` that are not ASCII, as `U+XXXX`: what tells two look-alike names apart.
pub fn non_ascii(a: &str) -> String {
    let mut v: Vec<String> = a
        .chars()
        .filter(|c| !c.is_ascii())
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    v.dedup();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(" ")
    }
}

/// Is `entry` the baseline: named exactly [`BASELINE`] and made by the harness running lexbench's
/// BM25 (verified, [`ModelKind::Bm25`])?
pub fn is_baseline(entry: &Entry) -> bool {
    entry.system == BASELINE
        && entry
            .provenance
            .harness()
            .is_some_and(|h| h.model.kind == ModelKind::Bm25)
}
/// Significance level after Holm's correction.
pub const ALPHA: f64 = 0.05;

/// How a cell's value compares with the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sig {
    /// The cell is the baseline.
    Baseline,
    /// Significantly better (Holm-adjusted p < α).
    Better,
    /// Significantly worse.
    Worse,
    /// Not significantly different.
    Same,
    /// Not tested (no baseline on this split and dataset version).
    Untested,
}

/// One system on one split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The entry shown.
    pub entry: String,
    /// Its dataset version hash.
    pub hash: String,
    /// True when that is not the dataset version built now.
    pub stale: bool,
    /// Means, in the board's measure order (`None`: the entry lacks the measure).
    pub scores: Vec<Option<f64>>,
    /// Comparison with the baseline per measure.
    pub sig: Vec<Sig>,
    /// Holm-adjusted p-values per measure (when tested).
    pub p_holm: Vec<Option<f64>>,
    /// The 95 % bootstrap interval of each mean over the entry's topics, in the board's measure
    /// order ([`crate::stats::bootstrap_ci`]; `None` without per-topic values).
    pub ci: Vec<Option<(f64, f64)>>,
    /// Topics the entry was evaluated on.
    pub topics: usize,
    /// The means of the measures the task records but does not show as columns (`R@k%nearest`),
    /// by name.
    pub hidden: BTreeMap<String, f64>,
}

/// One system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Its name.
    pub system: String,
    /// True when its entries are the baseline's ([`is_baseline`]).
    pub baseline: bool,
    /// True when its entries were made by the harness from a model (verified), false for run files
    /// (self-reported).
    pub verified: bool,
    /// Its description from the model card, if any.
    pub description: Option<String>,
    /// For a verified row, the checkpoint and architecture its model came from
    /// ([`crate::entry::ModelRef::origin`]), if recorded.
    pub model: Option<String>,
    /// Its submitter: the authors its card names ([`owner`]; empty when none are named).
    pub owner: String,
    /// True when another row of the board has the same system name from another submitter: the
    /// row is then shown with its authors.
    pub shared_name: bool,
    /// The published row it stands beside: its card's `paper_row`, or `bm25` for the baseline
    /// ([`crate::reference`]).
    pub paper_row: Option<String>,
    /// Cells by split.
    pub cells: BTreeMap<String, Cell>,
}

/// One dataset's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetBoard {
    /// The dataset.
    pub name: String,
    /// The hash of the version built now, if it is built here.
    pub current_hash: Option<String>,
    /// Whether its topics rank pools.
    pub pooled: bool,
    /// What its topics rank: its measures and its primary measure.
    pub task: lexbench_core::Task,
    /// Measure names, in column order.
    pub measures: Vec<String>,
    /// Splits (settings), in column order: `test` first, then alphabetical.
    pub splits: Vec<String>,
    /// Systems, best first by the first split's primary measure.
    pub rows: Vec<Row>,
}

/// A row's key: the system's name, whether its entries are verified, and their submitter
/// ([`owner`]).
type Sys<'a> = (&'a str, bool, String);

/// Who submitted an entry, as far as it says: the authors its card names, joined with `; ` (empty:
/// no card, or no authors).
pub fn owner(e: &Entry) -> String {
    e.card.as_ref().map(|c| c.authors.join("; ")).unwrap_or_default()
}

/// Builds the tables. `current_hash(name)` gives the hash of a dataset as built now.
pub fn build(entries: &[Entry], current_hash: impl Fn(&str) -> Option<String>) -> Vec<DatasetBoard> {
    let mut by_dataset: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        by_dataset.entry(e.dataset.name.as_str()).or_default().push(e);
    }
    let mut boards = Vec::new();
    for (name, list) in by_dataset {
        let current = current_hash(name);
        let pooled = list.iter().any(|e| e.dataset.pooled);
        // An entry that declares a task the others do not (a board mixing versions): the declared one.
        let task = list
            .iter()
            .map(|e| e.dataset.task())
            .max()
            .unwrap_or(lexbench_core::Task::of_shape(pooled));
        let mut measures: Vec<String> = task.measures().iter().map(ToString::to_string).collect();
        // Columns: the task's measures, then any other an entry has, except those every entry of
        // the task records without showing (`R@k%nearest`: in the "beside the paper" table).
        let recorded: Vec<String> = task.recorded_measures().iter().map(ToString::to_string).collect();
        for e in &list {
            for m in &e.measures {
                if !measures.contains(m) && !recorded.contains(m) {
                    measures.push(m.clone());
                }
            }
        }
        let mut splits: Vec<String> = list
            .iter()
            .map(|e| e.dataset.split.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        splits.sort_by_key(|s| (s != "test", s.clone()));

        // The entry of each (system, provenance, split).
        let mut chosen: BTreeMap<(Sys<'_>, &str), &Entry> = BTreeMap::new();
        for e in &list {
            let key = (
                (e.system.as_str(), e.provenance.is_verified(), owner(e)),
                e.dataset.split.as_str(),
            );
            let is_cur = |x: &Entry| current.as_deref() == Some(x.dataset.hash.as_str());
            match chosen.get(&key) {
                Some(old)
                    if (is_cur(old), old.submitted_at.as_str()) >= (is_cur(e), e.submitted_at.as_str()) => {}
                _ => {
                    chosen.insert(key, e);
                }
            }
        }
        let systems: BTreeSet<Sys<'_>> = chosen.keys().map(|(s, _)| s.clone()).collect();
        let mut rows: Vec<Row> = systems
            .iter()
            .map(|sys| Row {
                system: sys.0.to_owned(),
                baseline: chosen.iter().any(|((s, _), e)| s == sys && is_baseline(e)),
                verified: sys.1,
                owner: sys.2.clone(),
                shared_name: systems
                    .iter()
                    .any(|o| o.0 == sys.0 && o.1 == sys.1 && o.2 != sys.2),
                description: chosen
                    .iter()
                    .filter(|((s, _), _)| s == sys)
                    .find_map(|(_, e)| e.card.as_ref().and_then(|c| c.description.clone())),
                model: chosen
                    .iter()
                    .filter(|((s, _), _)| s == sys)
                    .find_map(|(_, e)| e.provenance.harness().and_then(|h| h.model.origin())),
                paper_row: chosen.iter().filter(|((s, _), _)| s == sys).find_map(|(_, e)| {
                    if is_baseline(e) {
                        Some(crate::reference::BASELINE_ROW.to_owned())
                    } else {
                        e.card.as_ref().and_then(|c| c.paper_row.clone())
                    }
                }),
                cells: BTreeMap::new(),
            })
            .collect();
        for split in &splits {
            let base = chosen
                .iter()
                .find(|((_, sp), e)| *sp == split.as_str() && is_baseline(e))
                .map(|(_, e)| *e);
            // (row index, measure index, raw p)
            let mut tests: Vec<(usize, usize, f64)> = Vec::new();
            for (ri, row) in rows.iter_mut().enumerate() {
                let Some(e) = chosen
                    .get(&(
                        (row.system.as_str(), row.verified, row.owner.clone()),
                        split.as_str(),
                    ))
                    .copied()
                else {
                    continue;
                };
                let scores: Vec<Option<f64>> = measures.iter().map(|m| e.score(m)).collect();
                let mut sig = vec![Sig::Untested; measures.len()];
                if is_baseline(e) {
                    sig = vec![Sig::Baseline; measures.len()];
                } else if let Some(b) = base.filter(|b| b.dataset.hash == e.dataset.hash) {
                    for (mi, m) in measures.iter().enumerate() {
                        if let (Some(x), Some(y)) = (e.topic_values(m), b.topic_values(m)) {
                            let topics: BTreeSet<_> = x.keys().chain(y.keys()).collect();
                            let xs: Vec<f64> =
                                topics.iter().map(|t| x.get(*t).copied().unwrap_or(0.0)).collect();
                            let ys: Vec<f64> =
                                topics.iter().map(|t| y.get(*t).copied().unwrap_or(0.0)).collect();
                            tests.push((ri, mi, paired_randomization(&xs, &ys)));
                        }
                    }
                }
                row.cells.insert(
                    split.clone(),
                    Cell {
                        entry: e.id.clone(),
                        hash: e.dataset.hash.clone(),
                        stale: current.as_deref().is_some_and(|c| c != e.dataset.hash),
                        scores,
                        sig,
                        p_holm: vec![None; measures.len()],
                        ci: measures
                            .iter()
                            .map(|m| {
                                let v: Vec<f64> = e.topic_values(m)?.values().copied().collect();
                                crate::stats::bootstrap_ci(&v)
                            })
                            .collect(),
                        topics: e.dataset.topics,
                        hidden: recorded
                            .iter()
                            .filter(|m| !measures.contains(m))
                            .filter_map(|m| Some((m.clone(), e.score(m)?)))
                            .collect(),
                    },
                );
            }
            let adjusted = holm(&tests.iter().map(|t| t.2).collect::<Vec<_>>());
            for ((ri, mi, _), p) in tests.iter().zip(adjusted) {
                let base_score = base.and_then(|b| b.score(&measures[*mi]));
                let cell = rows[*ri].cells.get_mut(split).expect("cell just inserted");
                cell.p_holm[*mi] = Some(p);
                cell.sig[*mi] = match (cell.scores[*mi], base_score) {
                    (Some(x), Some(y)) if p < ALPHA && x > y => Sig::Better,
                    (Some(x), Some(y)) if p < ALPHA && x < y => Sig::Worse,
                    _ => Sig::Same,
                };
            }
        }
        let primary = measures
            .iter()
            .position(|m| m == task.primary_measure())
            .unwrap_or(0);
        let first = splits.first().cloned().unwrap_or_default();
        let key = |r: &Row| {
            r.cells
                .get(&first)
                .and_then(|c| c.scores[primary])
                .unwrap_or(f64::NEG_INFINITY)
        };
        rows.sort_by(|a, b| {
            key(b)
                .total_cmp(&key(a))
                .then_with(|| a.system.cmp(&b.system))
                .then_with(|| b.verified.cmp(&a.verified))
                .then_with(|| a.owner.cmp(&b.owner))
        });
        boards.push(DatasetBoard {
            name: name.to_owned(),
            current_hash: current,
            pooled,
            task,
            measures,
            splits,
            rows,
        });
    }
    boards
}

impl Row {
    /// The row's name as shown: the system's name, with its authors when another submitter's row
    /// has the same name.
    pub fn shown_name(&self) -> String {
        if !self.shared_name {
            return self.system.clone();
        }
        if self.owner.is_empty() {
            format!("{} (no authors given)", self.system)
        } else {
            format!("{} (by {})", self.system, self.owner)
        }
    }
}
