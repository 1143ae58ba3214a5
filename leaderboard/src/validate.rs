//! Run validation against the dataset split a submission claims.
//!
//! Every line of the run is checked and each problem is reported with its line, up to
//! [`MAX_PROBLEMS`]: UTF-8 text, at most [`MAX_LINE_BYTES`] bytes (a longer line is skipped unread),
//! the six TREC columns (`topic Q0 doc rank score tag`), ids and a tag without control characters, an
//! integer rank, a finite score, a tag of at most [`MAX_TAG_BYTES`] bytes, a topic of the split, a
//! document among the topic's candidates (its pool for ECtHR, the corpus for BSARD), and no document
//! twice for a topic (both lines named). A leading byte-order mark is not part of the first topic.
//! Topics of the split the run leaves out are not an error: they are reported and score 0, as with
//! `trec_eval -c`. Tied scores (equal as trec_eval compares them, [`trec_score`]) are warned about,
//! because the ranking among them then comes from the doc ids (trec_eval's rule), not from the
//! system.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use lexbench_core::text::Lines;
use lexbench_core::trec::{MAX_LINE_BYTES, MAX_TAG_BYTES, trec_score};
use lexbench_core::{DocId, Measure, Run, TopicId};

use crate::dataset::DatasetView;
use crate::error::{Error, Problem, Result};

/// At most this many problems are listed in a rejection.
pub const MAX_PROBLEMS: usize = 50;

/// At most this many distinct run tags are kept in a [`Report`] (a run normally has one).
pub const MAX_TAGS: usize = 16;

/// What validation found in an acceptable run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Records (non-blank lines).
    pub lines: usize,
    /// The run tags seen (normally one; at most [`MAX_TAGS`] are kept).
    pub tags: BTreeSet<String>,
    /// True when the run has more than [`MAX_TAGS`] distinct tags.
    pub more_tags: bool,
    /// Topics of the split with no line in the run (they score 0).
    pub missing_topics: Vec<TopicId>,
    /// Topics with at least two documents at the same score.
    pub topics_with_ties: usize,
    /// Human-readable warnings (missing topics, ties, several tags).
    pub warnings: Vec<String>,
}

/// Checks the run file at `path` against `view`; `Err(Error::Rejected)` lists every problem found.
pub fn validate_run(path: &Path, view: &DatasetView) -> Result<Report> {
    lexbench_core::text::check_size(path, lexbench_core::trec::MAX_FILE_BYTES)?;
    let mut lines = Lines::open(path, Some(MAX_LINE_BYTES))?.at_most(lexbench_core::trec::MAX_FILE_BYTES);
    let mut problems = Vec::new();
    let mut report = Report::default();
    let mut first_line: HashMap<(String, String), usize> = HashMap::new();
    let mut scores: HashMap<String, Vec<f32>> = HashMap::new();
    let problem = |line: usize, message: String, problems: &mut Vec<Problem>| {
        if problems.len() < MAX_PROBLEMS {
            problems.push(Problem {
                path: path.to_owned(),
                line: Some(line),
                message,
            });
        }
    };
    while let Some((line_no, line)) = lines.next_line()? {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                // Not UTF-8, or too long to read: a problem of that line, and on to the next.
                report.lines += 1;
                problem(line_no, e.to_string(), &mut problems);
                continue;
            }
        };
        // Spaces and tabs only, as trec_eval and the run reader split a line.
        let cols: Vec<&str> = lexbench_core::trec::columns(line).collect();
        if cols.is_empty() {
            continue;
        }
        report.lines += 1;
        if cols.len() != 6 {
            problem(
                line_no,
                format!(
                    "expected 6 columns (topic Q0 doc rank score tag), found {}",
                    cols.len()
                ),
                &mut problems,
            );
            continue;
        }
        let (topic, doc, rank, score, tag) = (cols[0], cols[2], cols[3], cols[4], cols[5]);
        // Ids as the run reader takes them: no control character (a NUL, an escape), which the
        // messages below would print raw.
        if let Err(e) = TopicId::new(topic).and_then(|_| DocId::new(doc)) {
            problem(line_no, e.to_string(), &mut problems);
            continue;
        }
        if tag.chars().any(char::is_control) {
            problem(
                line_no,
                format!("tag {tag:?} holds a control character"),
                &mut problems,
            );
        }
        if let Err(e) = lexbench_core::trec::int_col::<i64>("rank", rank) {
            problem(line_no, e.to_string(), &mut problems);
        }
        let score_value = score.parse::<f64>().ok().filter(|s| s.is_finite());
        if score_value.is_none() {
            problem(
                line_no,
                format!("score {score:?} is not a finite number"),
                &mut problems,
            );
        }
        if tag.len() > MAX_TAG_BYTES {
            problem(
                line_no,
                format!(
                    "tag is {} bytes long; at most {MAX_TAG_BYTES} are allowed",
                    tag.len()
                ),
                &mut problems,
            );
        }
        if !view.topics.contains(topic) {
            problem(
                line_no,
                format!(
                    "unknown topic {topic}: not in split {} of dataset {}",
                    view.split, view.name
                ),
                &mut problems,
            );
            continue;
        }
        if !view.is_candidate(topic, doc) {
            let place = if view.pools.is_some() {
                format!("the pool of topic {topic}")
            } else {
                format!("the corpus of dataset {}", view.name)
            };
            problem(
                line_no,
                format!("document {doc} is not in {place}"),
                &mut problems,
            );
        }
        if let Some(first) = first_line.insert((topic.to_owned(), doc.to_owned()), line_no) {
            problem(
                line_no,
                format!("duplicate document {doc} for topic {topic} (first on line {first})"),
                &mut problems,
            );
        }
        if tag.len() <= MAX_TAG_BYTES && !report.tags.contains(tag) {
            if report.tags.len() < MAX_TAGS {
                report.tags.insert(tag.to_owned());
            } else {
                report.more_tags = true;
            }
        }
        if let Some(s) = score_value {
            scores.entry(topic.to_owned()).or_default().push(trec_score(s));
        }
    }
    if report.lines == 0 {
        problems.push(Problem {
            path: path.to_owned(),
            line: None,
            message: "the run is empty".into(),
        });
    }
    if !problems.is_empty() {
        return Err(Error::Rejected { problems });
    }
    report.missing_topics = view
        .topics
        .iter()
        .filter(|t| !scores.contains_key(t.as_str()))
        .cloned()
        .collect();
    report.topics_with_ties = scores
        .values_mut()
        .map(|s| {
            s.sort_by(f32::total_cmp);
            s.windows(2).any(|w| w[0] == w[1])
        })
        .filter(|tied| *tied)
        .count();
    if !report.missing_topics.is_empty() {
        let shown: Vec<&str> = report
            .missing_topics
            .iter()
            .take(5)
            .map(TopicId::as_str)
            .collect();
        report.warnings.push(format!(
            "{} of {} topics of the split have no results and score 0 ({}{})",
            report.missing_topics.len(),
            view.topics.len(),
            shown.join(", "),
            if report.missing_topics.len() > 5 {
                ", …"
            } else {
                ""
            }
        ));
    }
    if report.topics_with_ties > 0 {
        report.warnings.push(format!(
            "{} topic(s) have tied scores; ties are ordered by doc id descending (trec_eval)",
            report.topics_with_ties
        ));
    }
    if report.more_tags {
        report
            .warnings
            .push(format!("the run has more than {MAX_TAGS} different tags"));
    } else if report.tags.len() > 1 {
        report
            .warnings
            .push(format!("the run has {} different tags", report.tags.len()));
    }
    Ok(report)
}

/// Problems of a run cut too short for the measures the board shows (R@500 of a run cut at 200 would
/// silently equal R@200). A cut shows as every topic ranking the same number of documents `N` while
/// more candidates were there to rank; rankings of varied lengths are what a ranker found (BM25 ranks
/// only documents sharing a term with the query) and pass. One problem per cut-off measure deeper than
/// the cut, with the number of topics and the cure.
pub fn check_depth(run: &Run, view: &DatasetView, measures: &[Measure], path: &Path) -> Vec<Problem> {
    let mut lengths = run.topics.values().map(Vec::len);
    let Some(cut) = lengths.next() else {
        return Vec::new();
    };
    if lengths.any(|n| n != cut) {
        return Vec::new();
    }
    let candidates = |topic: &TopicId| match &view.pools {
        Some(p) => p.get(topic).map_or(0, |docs| docs.len()),
        None => view.corpus.len(),
    };
    let mut problems = Vec::new();
    for m in measures {
        let short: Vec<(&TopicId, usize)> = run
            .topics
            .keys()
            .filter_map(|t| m.depth(candidates(t)).filter(|&d| cut < d).map(|d| (t, d)))
            .collect();
        let Some(&(topic, need)) = short.iter().max_by_key(|(t, d)| (*d, std::cmp::Reverse(*t))) else {
            continue;
        };
        problems.push(Problem {
            path: path.to_owned(),
            line: None,
            message: format!(
                "the run is cut at {cut} documents per topic, too shallow for {m}: it reads up to {need} \
                 (topic {topic}) in {} of {} topics; rank at least {need} per topic (for a trained model, \
                 [eval] top_k in its configuration)",
                short.len(),
                run.topics.len()
            ),
        });
    }
    problems
}
