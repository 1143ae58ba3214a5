//! Evaluation with trec_eval semantics, plus the pool-relative recall the ECtHR task needs.
//!
//! # Semantics (the same as `trec_eval -c`)
//! - **Ranking** comes from the score, descending; equal scores are ordered by doc id *descending*
//!   (trec_eval's `comp_sim_docno`). The rank column of a run file is ignored. Scores are compared as
//!   trec_eval stores them, 32-bit floats ([`trec_order`](crate::trec::trec_order)): `1.00000001` ties `1.0` and `-0` ties
//!   `0`, and the doc id then decides, as in trec_eval (comparing the 64-bit values would rank these
//!   differently and change `RR`, `AP`, …).
//! - **Relevance**: a judged document is relevant when its grade is at least
//!   [`EvalParams::min_rel`] (trec_eval's `-l`, default 1); lower grades and unjudged documents are
//!   not. Every measure that counts relevant documents (`R@k`, `R@k%`, `P@k`, `AP`, `RPrec`, `RR`)
//!   uses that threshold, for the relevant documents retrieved and for the relevant count R alike.
//! - **nDCG ignores `min_rel`**, as trec_eval's does: `m_ndcg.c` / `m_ndcg_cut.c` take the gain of a
//!   document from its grade (`rel_levels`, every level ≥ 0, gain = level) and never read
//!   `relevance_level`, which only `te_form_res_rels` applies to `num_rel` and `num_rel_ret`. So with
//!   `min_rel = 2` a grade-1 document still earns gain 1 in DCG and in the ideal DCG, and a topic whose
//!   documents are all grade 1 has R = 0 (0 on the counting measures) but a non-zero nDCG. Negative
//!   grades have gain 0 (trec_eval reads them as "in the pool, unjudged").
//! - **Averaging**: the mean is over *every topic in the qrels*, including topics without relevant
//!   documents (they score 0) and topics missing from the run (they score 0 on every measure, as with
//!   `trec_eval -c`). Topics in the run but not in the qrels are ignored and listed in
//!   [`Evaluation::ignored_topics`].
//! - A topic without relevant documents scores 0 on every counting measure (trec_eval's
//!   convention), and 0 on nDCG unless it has positive grades below `min_rel` (see above).
//!
//! # Measures (names as ir_measures writes them)
//! | name | definition |
//! |---|---|
//! | `R@k` | relevant documents in the top k / relevant documents |
//! | `R@k%` | `R@c` with `c = max(1, ⌈k·n/100⌉)`, `n` the topic's pool size (see below) |
//! | `P@k` | relevant documents in the top k / k (k is the divisor even when fewer were retrieved) |
//! | `AP` (alias `MAP`) | sum of precision at each relevant retrieved document / relevant documents |
//! | `RPrec` (alias `MRP`) | precision at rank R, R = relevant documents |
//! | `nDCG@k`, `nDCG` | DCG with gain = grade and discount `log2(rank + 1)`, over the ideal DCG of all judged documents, both cut at k |
//! | `RR@k`, `RR` (alias `MRR`) | 1 / rank of the first relevant document within the top k (0 if none) |
//!
//! # Recall@k% and the choice it makes
//! The ECtHR paragraph-retrieval task (Santosh et al., 2024) ranks the paragraphs of one judgment per
//! topic and reports Recall@k% for k = 2, 5, 10: recall within the top k percent of the judgment's
//! paragraphs. The published release ships no evaluation code, so the cut-off is our choice, stated
//! here: for a pool of `n` documents, the cut-off is `⌈k·n/100⌉` (rounded *up*, computed in integers so
//! no floating-point error can move it), and at least 1. A 21-paragraph judgment at 2% thus looks at
//! the top 1 paragraph, a 120-paragraph judgment at 5% at the top 6, and a 101-paragraph one at 10% at
//! the top 11. Pool sizes come from the dataset's `pools.jsonl` ([`PoolSizes`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize, Serializer};

use crate::error::{Error, LineError, Result};
use crate::ids::{DocId, TopicId};
use crate::io::read_jsonl;
use crate::records::Pool;
use crate::trec::{Hit, Qrels, Run};

/// A retrieval measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Measure {
    /// `R@k`: recall in the top k.
    Recall(u32),
    /// `R@k%`: recall in the top k percent of the topic's pool, the cut-off rounded up
    /// ([`pct_cutoff`]).
    RecallPct(u32),
    /// `R@k%nearest`: the same with the cut-off rounded to the nearest integer, halves up
    /// ([`pct_cutoff_nearest`]). The paper does not say how it rounds; both are reported so readers
    /// can compare.
    RecallPctNearest(u32),
    /// `R@k%floor`: the same with the cut-off rounded down, at least 1 ([`pct_cutoff_floor`]): how
    /// the only public BM25 script on this dataset cuts (LexCLiPR's `max(1, n·k // 100)`), reported
    /// beside the other two so that its figures can be compared with ours.
    RecallPctFloor(u32),
    /// `P@k`: precision in the top k.
    Precision(u32),
    /// `AP`: average precision (its mean is MAP).
    AP,
    /// `RPrec`: R-precision (its mean is MRP).
    RPrec,
    /// `nDCG@k` (`None`: no cut-off).
    NDCG(Option<u32>),
    /// `RR@k` (`None`: no cut-off).
    RR(Option<u32>),
}

impl Measure {
    /// Does this measure need the topic's pool size?
    pub fn needs_pool(&self) -> bool {
        matches!(
            self,
            Measure::RecallPct(_) | Measure::RecallPctNearest(_) | Measure::RecallPctFloor(_)
        )
    }

    /// The ranks this measure reads for a topic with `candidates` documents to rank (its pool, or the
    /// corpus): `Some(d)` for a cut-off measure (`R@k`, `P@k`, `nDCG@k`, `RR@k`: `k`; `R@k%`: its
    /// cut-off in the pool), never more than `candidates`; `None` for a measure of the whole ranking
    /// (`AP`, `RPrec`, uncut `nDCG` and `RR`). A run that ranks fewer documents for a topic than this
    /// depth is scored as if the rest were irrelevant: too shallow for the measure.
    pub fn depth(&self, candidates: usize) -> Option<usize> {
        let d = match *self {
            Measure::Recall(k) | Measure::Precision(k) => k as usize,
            Measure::NDCG(Some(k)) | Measure::RR(Some(k)) => k as usize,
            Measure::RecallPct(k) => pct_cutoff(k, candidates),
            Measure::RecallPctNearest(k) => pct_cutoff_nearest(k, candidates),
            Measure::RecallPctFloor(k) => pct_cutoff_floor(k, candidates),
            Measure::AP | Measure::RPrec | Measure::NDCG(None) | Measure::RR(None) => return None,
        };
        Some(d.min(candidates))
    }

    /// Parses a comma-separated list (`"AP,R@100,nDCG@10"`).
    pub fn parse_list(s: &str) -> Result<Vec<Measure>> {
        s.split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::parse)
            .collect()
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Measure::Recall(k) => write!(f, "R@{k}"),
            Measure::RecallPct(k) => write!(f, "R@{k}%"),
            Measure::RecallPctNearest(k) => write!(f, "R@{k}%nearest"),
            Measure::RecallPctFloor(k) => write!(f, "R@{k}%floor"),
            Measure::Precision(k) => write!(f, "P@{k}"),
            Measure::AP => f.write_str("AP"),
            Measure::RPrec => f.write_str("RPrec"),
            Measure::NDCG(None) => f.write_str("nDCG"),
            Measure::NDCG(Some(k)) => write!(f, "nDCG@{k}"),
            Measure::RR(None) => f.write_str("RR"),
            Measure::RR(Some(k)) => write!(f, "RR@{k}"),
        }
    }
}

impl FromStr for Measure {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = |reason: &str| Error::Measure {
            name: s.to_owned(),
            reason: reason.to_owned(),
        };
        let cutoff = |k: &str| -> Result<u32> {
            match k.parse::<u32>() {
                Ok(k) if k > 0 => Ok(k),
                _ => Err(bad("the cut-off must be a positive integer")),
            }
        };
        let (name, k) = match s.split_once('@') {
            Some((n, k)) => (n, Some(k)),
            None => (s, None),
        };
        match (name, k) {
            ("AP" | "MAP", None) => Ok(Measure::AP),
            ("RPrec" | "MRP", None) => Ok(Measure::RPrec),
            ("nDCG", None) => Ok(Measure::NDCG(None)),
            ("RR" | "MRR", None) => Ok(Measure::RR(None)),
            ("nDCG", Some(k)) => Ok(Measure::NDCG(Some(cutoff(k)?))),
            ("RR" | "MRR", Some(k)) => Ok(Measure::RR(Some(cutoff(k)?))),
            ("P", Some(k)) => Ok(Measure::Precision(cutoff(k)?)),
            ("R", Some(k)) => match k
                .strip_suffix("%nearest")
                .map(|p| (p, Measure::RecallPctNearest as fn(u32) -> Measure))
                .or_else(|| {
                    k.strip_suffix("%floor")
                        .map(|p| (p, Measure::RecallPctFloor as fn(u32) -> Measure))
                })
                .or_else(|| {
                    k.strip_suffix('%')
                        .map(|p| (p, Measure::RecallPct as fn(u32) -> Measure))
                }) {
                Some((pct, make)) => {
                    let p = cutoff(pct)?;
                    if p > 100 {
                        return Err(bad("a percentage cut-off must be at most 100"));
                    }
                    Ok(make(p))
                }
                None => Ok(Measure::Recall(cutoff(k)?)),
            },
            _ => Err(bad(
                "expected one of R@k, R@k%, R@k%nearest, R@k%floor, P@k, AP (MAP), RPrec (MRP), nDCG, nDCG@k, RR, RR@k (MRR@k)",
            )),
        }
    }
}

impl Serialize for Measure {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Measure {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Pool sizes per topic, for `R@k%`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolSizes(pub BTreeMap<TopicId, usize>);

impl PoolSizes {
    /// Reads `pools.jsonl` (`{"topic": …, "docs": [...]}` per line). A topic listed twice, or a pool
    /// listing a document twice, is an error naming the line.
    pub fn read(path: &Path) -> Result<Self> {
        let pools: Vec<Pool> = read_jsonl(path)?;
        let mut sizes = BTreeMap::new();
        // read_jsonl skips blank lines, so count lines again only to report the right one on error.
        let text = crate::text::read_text(path)?;
        let line_of = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, _)| i + 1);
        for (pool, line) in pools.into_iter().zip(line_of) {
            let unique: BTreeSet<&DocId> = pool.docs.iter().collect();
            if unique.len() != pool.docs.len() {
                return Err(Error::Line {
                    path: path.to_owned(),
                    line,
                    error: LineError::Json(format!("pool of topic {} lists a document twice", pool.topic)),
                });
            }
            if sizes.insert(pool.topic.clone(), pool.docs.len()).is_some() {
                return Err(Error::Line {
                    path: path.to_owned(),
                    line,
                    error: LineError::Json(format!("topic {} has a second pool", pool.topic)),
                });
            }
        }
        Ok(Self(sizes))
    }
}

/// The measures of a pooled task (ECtHR): recall within the top 2, 5 and 10 % of the topic's pool.
pub const POOLED_MEASURES: &str = "R@2%,R@5%,R@10%";
/// The measures of a whole-corpus task (BSARD), as its paper reports them.
pub const CORPUS_MEASURES: &str = "R@100,R@200,R@500,AP,RPrec";

/// Measures a pooled task's entries record beside [`POOLED_MEASURES`] without showing them as
/// columns: the same recalls with the cut-off rounded to the nearest integer. The paper does not say
/// how it rounds `k%` of a judgment's paragraphs, so tables set beside its figures give both.
pub const POOLED_EXTRA_MEASURES: &str = "R@2%nearest,R@5%nearest,R@10%nearest";

/// The measures of the open-corpus ECtHR setting (every judgment's paragraphs, one topic per guide
/// heading), as the open-domain libraries (BEIR, MTEB) read a retrieval task: nDCG@10, recall at 100
/// and 1,000, MAP and MRR@10.
pub const OPEN_CORPUS_MEASURES: &str = "nDCG@10,R@100,R@1000,AP,RR@10";

/// What a dataset's topics rank, and so the measures its leaderboard shows.
///
/// A dataset with pools is [`Task::Pooled`]; one without is [`Task::Corpus`] unless its `task.json`
/// declares [`Task::OpenCorpus`] (`lexbench_core::dataset::Dataset::task`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// Each topic ranks its own pool (ECtHR: one judgment's paragraphs): [`POOLED_MEASURES`].
    Pooled,
    /// Each topic ranks the whole corpus, read as BSARD's papers read it: [`CORPUS_MEASURES`].
    Corpus,
    /// Each topic ranks the whole corpus, read as BEIR and MTEB read a retrieval task:
    /// [`OPEN_CORPUS_MEASURES`] (the ECtHR open-corpus setting).
    OpenCorpus,
}

impl Task {
    /// The task of a dataset with (`true`) or without pools that declares no task.
    pub fn of_shape(pooled: bool) -> Task {
        if pooled { Task::Pooled } else { Task::Corpus }
    }

    /// Does each topic rank a pool?
    pub fn pooled(self) -> bool {
        self == Task::Pooled
    }

    /// Its name in files (`pooled`, `corpus`, `open-corpus`).
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Pooled => "pooled",
            Task::Corpus => "corpus",
            Task::OpenCorpus => "open-corpus",
        }
    }

    /// The task named `s` ([`Task::as_str`]).
    pub fn parse(s: &str) -> Option<Task> {
        [Task::Pooled, Task::Corpus, Task::OpenCorpus]
            .into_iter()
            .find(|t| t.as_str() == s)
    }

    /// The measures the leaderboard shows for it (its columns).
    pub fn measures(self) -> Vec<Measure> {
        let list = match self {
            Task::Pooled => POOLED_MEASURES,
            Task::Corpus => CORPUS_MEASURES,
            Task::OpenCorpus => OPEN_CORPUS_MEASURES,
        };
        Measure::parse_list(list).expect("the task measures parse")
    }

    /// The measures an entry of the task records: [`Task::measures`], then (pooled)
    /// [`POOLED_EXTRA_MEASURES`].
    pub fn recorded_measures(self) -> Vec<Measure> {
        let mut list = self.measures();
        if self == Task::Pooled {
            list.extend(Measure::parse_list(POOLED_EXTRA_MEASURES).expect("the extra measures parse"));
        }
        list
    }

    /// The measure a board of the task sorts by: `R@10%`, `R@100` (BSARD's papers), `nDCG@10`.
    pub fn primary_measure(self) -> &'static str {
        match self {
            Task::Pooled => "R@10%",
            Task::Corpus => "R@100",
            Task::OpenCorpus => "nDCG@10",
        }
    }

    /// The deepest rank a whole-corpus task's measures read (500 for BSARD's R@500, 1,000 for the
    /// open corpus's R@1000); a run must rank at least this many documents per topic. 0 for a pooled
    /// task, whose topics rank their whole pools.
    pub fn depth(self) -> usize {
        if self == Task::Pooled {
            return 0;
        }
        self.measures()
            .iter()
            .filter_map(|m| m.depth(usize::MAX))
            .max()
            .unwrap_or(0)
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The measures the leaderboard shows for a task with or without pools that declares no task
/// ([`Task::of_shape`], [`Task::measures`]).
pub fn task_measures(pooled: bool) -> Vec<Measure> {
    Task::of_shape(pooled).measures()
}

/// The measures an entry of a task with or without pools records ([`Task::recorded_measures`]).
pub fn recorded_measures(pooled: bool) -> Vec<Measure> {
    Task::of_shape(pooled).recorded_measures()
}

/// The deepest rank BSARD's measures read (500: R@500); a run of such a task must rank at least this
/// many documents per topic ([`Task::depth`]).
pub fn corpus_depth() -> usize {
    Task::Corpus.depth()
}

/// The number of top-ranked documents `R@k%` looks at for a pool of `n`: `max(1, ⌈k·n/100⌉)`.
pub fn pct_cutoff(k_percent: u32, n: usize) -> usize {
    let k = k_percent as usize;
    (k * n).div_ceil(100).max(1)
}

/// The cut-off of `R@k%nearest` for a pool of `n`: `max(1, round(k·n/100))`, halves rounded up
/// (`R@5%` of 30 paragraphs: 1.5 → 2, where [`pct_cutoff`] also gives 2; of 50: 2.5 → 3 vs 3; of 41:
/// 2.05 → 2 vs 3).
pub fn pct_cutoff_nearest(k_percent: u32, n: usize) -> usize {
    let k = k_percent as usize;
    ((k * n + 50) / 100).max(1)
}

/// The cut-off of `R@k%floor` for a pool of `n`: `max(1, ⌊k·n/100⌋)` (`R@5%` of 41 paragraphs: 2.05 → 2;
/// of 30: 1.5 → 1, where [`pct_cutoff`] gives 3 and 2).
pub fn pct_cutoff_floor(k_percent: u32, n: usize) -> usize {
    let k = k_percent as usize;
    (k * n / 100).max(1)
}

/// The parameters of an evaluation: the trec_eval options that change the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalParams {
    /// The lowest grade that counts as relevant, trec_eval's `-l` (default 1). At least 0: with 0,
    /// every judged document with a grade ≥ 0 is relevant (unjudged ones never are). A negative value
    /// is refused: trec_eval would then count documents absent from the qrels (its internal -1) as
    /// relevant retrieved but not in R, giving recall above 1. Does not change nDCG's gains.
    pub min_rel: i32,
}

impl Default for EvalParams {
    fn default() -> Self {
        Self { min_rel: 1 }
    }
}

impl EvalParams {
    /// Parameters with `min_rel` as given, validated.
    pub fn new(min_rel: i32) -> Result<Self> {
        let p = Self { min_rel };
        p.validate()?;
        Ok(p)
    }

    /// Checks the ranges documented on each field.
    pub fn validate(&self) -> Result<()> {
        if self.min_rel < 0 {
            return Err(Error::Param {
                name: "min_rel",
                value: self.min_rel.to_string(),
                reason: "must be at least 0 (trec_eval's -l; 1 is the default)",
            });
        }
        Ok(())
    }

    /// Is a judged grade relevant under these parameters?
    pub fn is_relevant(&self, grade: i32) -> bool {
        grade >= self.min_rel
    }
}

/// The result of evaluating a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The measures, in the order asked for.
    pub measures: Vec<Measure>,
    /// The mean of each measure over every qrels topic (same order as `measures`).
    pub mean: Vec<f64>,
    /// Each qrels topic's values (same order as `measures`); topics missing from the run hold zeros.
    pub per_topic: BTreeMap<TopicId, Vec<f64>>,
    /// Topics in the qrels but not in the run (each scored 0).
    pub missing_topics: Vec<TopicId>,
    /// Topics in the run but not in the qrels (ignored).
    pub ignored_topics: Vec<TopicId>,
    /// The parameters the values were computed with.
    pub params: EvalParams,
}

impl Evaluation {
    /// The mean of `m`, if it was evaluated.
    pub fn get(&self, m: Measure) -> Option<f64> {
        self.measures.iter().position(|x| *x == m).map(|i| self.mean[i])
    }
}

/// Evaluates `run` against `qrels` with the default [`EvalParams`] (grades ≥ 1 relevant). `pools` is
/// required when a measure is `R@k%`, and must then cover every qrels topic.
pub fn evaluate(
    run: &Run,
    qrels: &Qrels,
    measures: &[Measure],
    pools: Option<&PoolSizes>,
) -> Result<Evaluation> {
    evaluate_with(run, qrels, measures, pools, &EvalParams::default())
}

/// [`evaluate`] with explicit parameters (e.g. `min_rel`, trec_eval's `-l`), validated first.
pub fn evaluate_with(
    run: &Run,
    qrels: &Qrels,
    measures: &[Measure],
    pools: Option<&PoolSizes>,
    params: &EvalParams,
) -> Result<Evaluation> {
    params.validate()?;
    if measures.is_empty() {
        return Err(Error::MissingInput("no measures to evaluate".into()));
    }
    let needs_pool = measures.iter().any(Measure::needs_pool);
    let mut missing_topics = Vec::new();
    let empty: Vec<Hit> = Vec::new();
    // (topic, its judgments, its hits, its pool size), in topic order.
    let mut work = Vec::with_capacity(qrels.topics.len());
    for (topic, judged) in &qrels.topics {
        let pool_size = if needs_pool {
            let sizes = pools.ok_or_else(|| {
                Error::MissingInput(
                    "R@k% needs the topics' pool sizes (pass the dataset's pools.jsonl)".into(),
                )
            })?;
            Some(*sizes.0.get(topic).ok_or_else(|| {
                Error::MissingInput(format!("no pool size for topic {topic} (needed by R@k%)"))
            })?)
        } else {
            None
        };
        let hits = match run.topics.get(topic) {
            Some(h) => h,
            None => {
                missing_topics.push(topic.clone());
                &empty
            }
        };
        work.push((topic, judged, hits.as_slice(), pool_size));
    }
    // Topics are independent: they are evaluated on all cores, then summed in topic order, so the
    // means do not depend on the thread count.
    let eval_part = |part: &[TopicWork<'_>]| -> Vec<Vec<f64>> {
        part.iter()
            .map(|(_, judged, hits, pool)| evaluate_topic(hits, judged, measures, *pool, params))
            .collect()
    };
    let hits_total: usize = work.iter().map(|w| w.2.len()).sum();
    let threads = if hits_total < 1 << 15 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    let values: Vec<Vec<f64>> = if threads <= 1 || work.len() < 2 {
        eval_part(&work)
    } else {
        let per = work.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = work
                .chunks(per)
                .map(|p| scope.spawn(move || eval_part(p)))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    let mut per_topic = BTreeMap::new();
    let mut sums = vec![0.0f64; measures.len()];
    for ((topic, ..), values) in work.iter().zip(values) {
        for (s, v) in sums.iter_mut().zip(&values) {
            *s += v;
        }
        per_topic.insert((*topic).clone(), values);
    }
    let n = qrels.topics.len().max(1) as f64;
    let mean = sums.into_iter().map(|s| s / n).collect();
    let ignored_topics = run
        .topics
        .keys()
        .filter(|t| !qrels.topics.contains_key(*t))
        .cloned()
        .collect();
    Ok(Evaluation {
        measures: measures.to_vec(),
        mean,
        per_topic,
        missing_topics,
        ignored_topics,
        params: *params,
    })
}

/// One topic to evaluate: its id, judgments, hits and pool size.
type TopicWork<'a> = (&'a TopicId, &'a BTreeMap<DocId, i32>, &'a [Hit], Option<usize>);

/// Evaluates one topic: `hits` in any order (they are ranked here the trec_eval way), `judged` the
/// topic's judgments, `pool_size` its pool (needed by `R@k%`; 0 is used if absent), `params` the
/// relevance threshold (see the module docs: nDCG uses the grades whatever the threshold).
pub fn evaluate_topic(
    hits: &[Hit],
    judged: &BTreeMap<DocId, i32>,
    measures: &[Measure],
    pool_size: Option<usize>,
    params: &EvalParams,
) -> Vec<f64> {
    // trec_order with each score's f32 key computed once (the same order: key descending, then doc
    // id descending).
    let mut order: Vec<(f32, &str)> = hits
        .iter()
        .map(|h| (crate::trec::trec_score(h.score), h.doc.as_str()))
        .collect();
    order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(a.1)));
    // Per rank: the document's grade if judged; relevant only if judged and ≥ min_rel.
    let lookup: rustc_hash::FxHashMap<&str, i32> = judged.iter().map(|(d, g)| (d.as_str(), *g)).collect();
    let grades: Vec<Option<i32>> = order.iter().map(|(_, d)| lookup.get(d).copied()).collect();
    let relevant: Vec<bool> = grades
        .iter()
        .map(|g| g.is_some_and(|g| params.is_relevant(g)))
        .collect();
    let num_rel = judged.values().filter(|&&g| params.is_relevant(g)).count();
    // Relevant documents within the first i ranks, for i = 0..=len.
    let mut rel_prefix = Vec::with_capacity(relevant.len() + 1);
    rel_prefix.push(0usize);
    for r in &relevant {
        rel_prefix.push(rel_prefix.last().copied().unwrap_or(0) + usize::from(*r));
    }
    let rel_in_top = |k: usize| rel_prefix[k.min(relevant.len())];

    measures
        .iter()
        .map(|m| {
            if let Measure::NDCG(k) = *m {
                // Gains are the grades (positive ones; trec_eval: gain = level), independent of R.
                return ndcg(&grades, judged, k);
            }
            if num_rel == 0 {
                return 0.0;
            }
            let r = num_rel as f64;
            match *m {
                Measure::Recall(k) => rel_in_top(k as usize) as f64 / r,
                Measure::RecallPct(k) => rel_in_top(pct_cutoff(k, pool_size.unwrap_or(0))) as f64 / r,
                Measure::RecallPctNearest(k) => {
                    rel_in_top(pct_cutoff_nearest(k, pool_size.unwrap_or(0))) as f64 / r
                }
                Measure::RecallPctFloor(k) => {
                    rel_in_top(pct_cutoff_floor(k, pool_size.unwrap_or(0))) as f64 / r
                }
                Measure::Precision(k) => rel_in_top(k as usize) as f64 / f64::from(k),
                Measure::RPrec => rel_in_top(num_rel) as f64 / r,
                Measure::AP => {
                    let mut sum = 0.0;
                    for (i, rel) in relevant.iter().enumerate() {
                        if *rel {
                            sum += rel_prefix[i + 1] as f64 / (i + 1) as f64;
                        }
                    }
                    sum / r
                }
                Measure::RR(k) => {
                    let limit = k.map_or(relevant.len(), |k| (k as usize).min(relevant.len()));
                    relevant[..limit]
                        .iter()
                        .position(|r| *r)
                        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
                }
                Measure::NDCG(_) => unreachable!("handled above"),
            }
        })
        .collect()
}

/// nDCG (cut at `k` if given) of a ranking whose documents have `grades` (None: unjudged), against the
/// ideal ordering of `judged`. Gain = grade for positive grades, 0 otherwise; discount `log2(rank + 1)`.
fn ndcg(grades: &[Option<i32>], judged: &BTreeMap<DocId, i32>, k: Option<u32>) -> f64 {
    let limit = k.map_or(usize::MAX, |k| k as usize);
    let gain = |g: i32| if g > 0 { f64::from(g) } else { 0.0 };
    let dcg: f64 = grades
        .iter()
        .take(limit)
        .enumerate()
        .filter_map(|(i, g)| g.map(|g| gain(g) / ((i + 2) as f64).log2()))
        .sum();
    let mut ideal: Vec<i32> = judged.values().copied().filter(|g| *g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(limit)
        .enumerate()
        .map(|(i, g)| gain(*g) / ((i + 2) as f64).log2())
        .sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

#[cfg(test)]
mod tests {
    //! Properties: measure names round-trip; the percentage cut-off rounds up in integers.
    use super::*;

    #[test]
    fn measure_names_round_trip() {
        for name in [
            "R@100", "R@5%", "P@10", "AP", "RPrec", "nDCG", "nDCG@10", "RR", "RR@10",
        ] {
            let m: Measure = name.parse().unwrap();
            assert_eq!(m.to_string(), name);
        }
        assert_eq!("MAP".parse::<Measure>().unwrap(), Measure::AP);
        assert_eq!("MRP".parse::<Measure>().unwrap(), Measure::RPrec);
        for bad in ["R@0", "R@", "R@x", "R@101%", "ndcg@10", "P", "bpref"] {
            assert!(bad.parse::<Measure>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn depth_is_the_cut_off_within_the_candidates() {
        let m = |s: &str| s.parse::<Measure>().expect("measure");
        assert_eq!(m("R@500").depth(22_633), Some(500));
        assert_eq!(m("R@500").depth(300), Some(300));
        assert_eq!(m("R@5%").depth(101), Some(6));
        assert_eq!(m("nDCG@10").depth(50), Some(10));
        assert_eq!(m("AP").depth(50), None);
        assert_eq!(m("nDCG").depth(50), None);
        assert_eq!(corpus_depth(), 500);
        assert_eq!(m("R@5%nearest"), Measure::RecallPctNearest(5));
        assert_eq!(m("R@5%nearest").to_string(), "R@5%nearest");
        assert_eq!((pct_cutoff(5, 41), pct_cutoff_nearest(5, 41)), (3, 2));
        assert_eq!((pct_cutoff(5, 50), pct_cutoff_nearest(5, 50)), (3, 3));
        assert_eq!(pct_cutoff_nearest(2, 10), 1);
        // Issue 56, item 6: the floor, as LexCLiPR's BM25 script cuts.
        assert_eq!(m("R@5%floor"), Measure::RecallPctFloor(5));
        assert_eq!(m("R@5%floor").to_string(), "R@5%floor");
        assert!(m("R@5%floor").needs_pool());
        assert_eq!(
            (
                pct_cutoff(5, 41),
                pct_cutoff_nearest(5, 41),
                pct_cutoff_floor(5, 41)
            ),
            (3, 2, 2)
        );
        assert_eq!(
            (
                pct_cutoff(5, 30),
                pct_cutoff_nearest(5, 30),
                pct_cutoff_floor(5, 30)
            ),
            (2, 2, 1)
        );
        assert_eq!((pct_cutoff(10, 100), pct_cutoff_floor(10, 100)), (10, 10));
        assert_eq!(pct_cutoff_floor(2, 10), 1, "never below 1");
        assert_eq!(m("R@5%floor").depth(30), Some(1));
        assert!("R@101%floor".parse::<Measure>().is_err());
        assert_eq!(m("R@5%nearest").depth(41), Some(2));
        assert_eq!(task_measures(true).len(), 3);
        let recorded: Vec<String> = recorded_measures(true).iter().map(ToString::to_string).collect();
        assert_eq!(
            recorded,
            [
                "R@2%",
                "R@5%",
                "R@10%",
                "R@2%nearest",
                "R@5%nearest",
                "R@10%nearest"
            ]
        );
        assert_eq!(recorded_measures(false), task_measures(false));
    }

    #[test]
    fn each_task_has_its_measures_depth_and_name() {
        let names = |t: Task| -> Vec<String> { t.measures().iter().map(ToString::to_string).collect() };
        assert_eq!(
            names(Task::OpenCorpus),
            ["nDCG@10", "R@100", "R@1000", "AP", "RR@10"]
        );
        assert_eq!(names(Task::Corpus), ["R@100", "R@200", "R@500", "AP", "RPrec"]);
        assert_eq!(
            (
                Task::Pooled.depth(),
                Task::Corpus.depth(),
                Task::OpenCorpus.depth()
            ),
            (0, 500, 1000)
        );
        for t in [Task::Pooled, Task::Corpus, Task::OpenCorpus] {
            assert_eq!(Task::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{t}\""));
            assert!(names(t).iter().any(|m| m == t.primary_measure()));
        }
        assert_eq!(Task::OpenCorpus.recorded_measures(), Task::OpenCorpus.measures());
        assert_eq!(Task::of_shape(true), Task::Pooled);
        assert_eq!(Task::parse("open"), None);
    }

    #[test]
    fn pct_cutoff_rounds_up_and_is_at_least_one() {
        assert_eq!(pct_cutoff(2, 21), 1); // 0.42 → 1
        assert_eq!(pct_cutoff(2, 49), 1); // 0.98 → 1
        assert_eq!(pct_cutoff(2, 50), 1); // exactly 1
        assert_eq!(pct_cutoff(2, 51), 2); // 1.02 → 2
        assert_eq!(pct_cutoff(10, 101), 11); // 10.1 → 11
        assert_eq!(pct_cutoff(5, 0), 1);
        assert_eq!(pct_cutoff(100, 7), 7);
    }
}
