//! TREC qrels and run files, the lingua franca of submissions.
//!
//! - qrels: `topic 0 doc relevance` (4 columns; the second is ignored, relevance an integer, ≥ 1
//!   counts as relevant);
//! - runs: `topic Q0 doc rank score tag` (6 columns; rank is checked to be an integer but, as in
//!   trec_eval, ordering comes from the score: descending, ties broken by doc id descending, scores
//!   compared as the 32-bit floats trec_eval stores them in — see [`trec_order`]).
//!
//! Readers reject, with file and line: a wrong number of columns, a non-numeric or non-finite score,
//! a non-integer rank or relevance, the same document twice for a topic, a topic outside a declared set
//! ([`ReadOptions::known_topics`]), bytes that are not UTF-8, a line longer than [`MAX_LINE_BYTES`]
//! (found without reading the rest of it), a run tag longer than [`MAX_TAG_BYTES`], and a file
//! without records. A leading byte-order mark is removed ([`crate::text`]). Writers are atomic and
//! deterministic (topics sorted, documents in ranking order).
//!
//! trec_eval itself is more lenient about run lines: `get_trec_results.c` reads the first six fields
//! and skips the rest of the line ("Any field following run_id is ignored").
//! [`ReadOptions::extra_run_fields`] reads runs that way (`lexbench eval` does, and warns with the count [`Run::read_with_notes`]
//! returns); by default, as for a leaderboard submission, a seventh field is an error. Qrels always
//! have exactly four columns.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, LineError, Result};
use crate::ids::{DocId, TopicId};
use crate::io::write_atomic;
use crate::text::Lines;

/// The longest line a qrels or run file may have, in bytes (terminator excluded). Real lines are
/// well under 200 bytes (`q12/001-175180 Q0 001-175180:45 1 12.345678 bm25`); the cap keeps a
/// corrupt or hostile file from being read into memory as one line.
pub const MAX_LINE_BYTES: usize = 4096;

/// The longest run tag (last column of a run), in bytes. The tag is copied into leaderboard entries.
pub const MAX_TAG_BYTES: usize = 256;
const _: () = assert!(MAX_TAG_BYTES == 256, "Run::write's message states the limit");

/// Options shared by the qrels and run readers.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// When set, a topic outside this set is an error ([`LineError::UnknownTopic`]).
    pub known_topics: Option<BTreeSet<TopicId>>,
    /// Run files only: accept lines with whitespace-separated fields after the sixth column (the run
    /// tag) and ignore those fields, as trec_eval does. Default `false`: such a line is a
    /// [`LineError::Columns`] error. [`Run::read_with_notes`] counts the lines that had them.
    pub extra_run_fields: bool,
}

/// What a reader accepted that the caller may want to warn about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadNotes {
    /// Run lines with fields after the sixth column, ignored ([`ReadOptions::extra_run_fields`]).
    pub lines_with_extra_fields: usize,
    /// The first of those lines (1-based), if any.
    pub first_line_with_extra_fields: Option<usize>,
}

/// Relevance judgments: topic → document → grade. Grades ≥ 1 are relevant; 0 and negative grades are
/// judged non-relevant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Qrels {
    /// Judgments per topic, sorted.
    pub topics: BTreeMap<TopicId, BTreeMap<DocId, i32>>,
}

impl Qrels {
    /// Adds one judgment; returns the previous grade if the pair was already judged.
    pub fn insert(&mut self, topic: TopicId, doc: DocId, rel: i32) -> Option<i32> {
        self.topics.entry(topic).or_default().insert(doc, rel)
    }

    /// Number of judgments.
    pub fn len(&self) -> usize {
        self.topics.values().map(BTreeMap::len).sum()
    }

    /// True when there are no judgments.
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }

    /// Reads a qrels file.
    pub fn read(path: &Path, opts: &ReadOptions) -> Result<Self> {
        let mut q = Qrels::default();
        let mut first_line: HashMap<(TopicId, DocId), usize> = HashMap::new();
        // Qrels are always strict: the extra-fields option is about run files.
        for_each_record(path, 4, false, "topic 0 doc relevance", |line_no, cols| {
            let topic = topic_col(cols[0], opts)?;
            let doc = DocId::new(cols[2]).map_err(|e| LineError::Id(e.to_string()))?;
            let rel: i32 = cols[3].parse().map_err(|_| LineError::NotANumber {
                column: "relevance",
                value: cols[3].to_owned(),
                expected: "integer",
            })?;
            if let Some(first) = first_line.insert((topic.clone(), doc.clone()), line_no) {
                return Err(LineError::DuplicateDoc {
                    topic: topic.to_string(),
                    doc: doc.to_string(),
                    first_line: first,
                });
            }
            q.insert(topic, doc, rel);
            Ok(())
        })?;
        Ok(q)
    }

    /// Writes the qrels atomically, sorted by topic and document.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| {
            for (t, docs) in &self.topics {
                for (d, rel) in docs {
                    writeln!(w, "{t} 0 {d} {rel}")?;
                }
            }
            Ok(())
        })
    }
}

/// One retrieved document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The document.
    pub doc: DocId,
    /// The system's score; higher is better.
    pub score: f64,
}

/// The trec_eval ranking order: score descending, then doc id descending.
///
/// trec_eval keeps a run's scores as `float sim` (`trec_format.h`: `atof`'s double rounded to 32
/// bits) and `comp_sim_docno` compares those floats, then `strcmp(docno2, docno1)`. So do we: scores
/// are rounded to `f32` for ordering, which makes `1.00000001` and `1.0` a tie, as are `-0` and `0`
/// (equal floats), and the tie is broken by doc id. Rounding never reverses two scores, it can only
/// make them equal. Bytes of the doc ids are compared, as `strcmp` does.
pub fn trec_order(a: &Hit, b: &Hit) -> Ordering {
    trec_score(b.score)
        .total_cmp(&trec_score(a.score))
        .then_with(|| b.doc.as_str().cmp(a.doc.as_str()))
}

/// A score as trec_eval compares it: rounded to the nearest `f32`, with `-0` taken as `0` (equal
/// floats in C). Two scores tie in [`trec_order`] exactly when these values are equal.
pub fn trec_score(score: f64) -> f32 {
    let s = score as f32;
    if s == 0.0 { 0.0 } else { s }
}

/// A run: ranked documents per topic and the run's tag.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    /// The run tag (last column); taken from the first line when read.
    pub tag: String,
    /// Hits per topic, in no particular order until [`Run::sort`] is called.
    pub topics: BTreeMap<TopicId, Vec<Hit>>,
}

impl Run {
    /// An empty run with a tag.
    pub fn new(tag: impl Into<String>) -> Self {
        Self {
            tag: tag.into(),
            topics: BTreeMap::new(),
        }
    }

    /// Number of hits.
    pub fn len(&self) -> usize {
        self.topics.values().map(Vec::len).sum()
    }

    /// True when there are no hits.
    pub fn is_empty(&self) -> bool {
        self.topics.values().all(Vec::is_empty)
    }

    /// Sorts every topic's hits into trec_eval order ([`trec_order`]).
    pub fn sort(&mut self) {
        for hits in self.topics.values_mut() {
            hits.sort_by(trec_order);
        }
    }

    /// Reads a run file.
    pub fn read(path: &Path, opts: &ReadOptions) -> Result<Self> {
        Self::read_with_notes(path, opts).map(|(run, _)| run)
    }

    /// Reads a run file, also returning what was accepted but worth a warning (lines with extra
    /// fields, when [`ReadOptions::extra_run_fields`] allows them).
    pub fn read_with_notes(path: &Path, opts: &ReadOptions) -> Result<(Self, ReadNotes)> {
        let mut run = Run::default();
        let notes = for_each_record(path, 6, opts.extra_run_fields, RUN_FORMAT, |_, cols| {
            let doc = DocId::new(cols[2]).map_err(|e| LineError::Id(e.to_string()))?;
            cols[3].parse::<i64>().map_err(|_| LineError::NotANumber {
                column: "rank",
                value: cols[3].to_owned(),
                expected: "integer",
            })?;
            let score = cols[4]
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite())
                .ok_or_else(|| LineError::NotANumber {
                    column: "score",
                    value: cols[4].to_owned(),
                    expected: "finite number",
                })?;
            if cols[5].len() > MAX_TAG_BYTES {
                return Err(LineError::TooLong {
                    column: "tag",
                    len: cols[5].len(),
                    max: MAX_TAG_BYTES,
                });
            }
            if run.tag.is_empty() {
                run.tag = cols[5].to_owned();
            }
            // Look the topic up by &str first: only a new topic allocates and validates an id.
            let hit = Hit { doc, score };
            match run.topics.get_mut(cols[0]) {
                Some(hits) => hits.push(hit),
                None => {
                    run.topics.insert(topic_col(cols[0], opts)?, vec![hit]);
                }
            }
            Ok(())
        })?;
        // Duplicates are rare: detect them cheaply here, and only when one exists read the file again
        // to report the first one in file order with both line numbers.
        let has_duplicate = run.topics.values().any(|hits| {
            let mut seen = HashSet::with_capacity(hits.len());
            hits.iter().any(|h| !seen.insert(h.doc.as_str()))
        });
        if has_duplicate {
            return Err(first_duplicate(path, opts.extra_run_fields));
        }
        Ok((run, notes))
    }

    /// Writes the run atomically: topics sorted, hits in trec_eval order, ranks from 1, scores with
    /// enough digits to round-trip.
    pub fn write(&self, path: &Path) -> Result<()> {
        let tag = if self.tag.is_empty() {
            "lexbench"
        } else {
            &self.tag
        };
        if tag.chars().any(char::is_whitespace) {
            return Err(Error::InvalidId {
                kind: "run tag",
                value: tag.to_owned(),
                reason: "must not contain whitespace",
            });
        }
        if tag.len() > MAX_TAG_BYTES {
            // Written, it could not be read back.
            return Err(Error::InvalidId {
                kind: "run tag",
                value: tag.chars().take(40).collect::<String>() + "…",
                reason: "longer than 256 bytes (MAX_TAG_BYTES)",
            });
        }
        write_atomic(path, |w| {
            for (t, hits) in &self.topics {
                let mut order: Vec<&Hit> = hits.iter().collect();
                order.sort_by(|a, b| trec_order(a, b));
                for (i, h) in order.iter().enumerate() {
                    writeln!(w, "{t} Q0 {} {} {:?} {tag}", h.doc, i + 1, h.score)?;
                }
            }
            Ok(())
        })
    }
}

/// The columns of a run line, for error messages.
const RUN_FORMAT: &str = "topic Q0 doc rank score tag";

/// The error for the first repeated (topic, doc) pair of a run file, in file order.
fn first_duplicate(path: &Path, extra_fields: bool) -> Error {
    let mut first_line: HashMap<(String, String), usize> = HashMap::new();
    let scan = for_each_record(
        path,
        6,
        extra_fields,
        RUN_FORMAT,
        |line_no, cols| match first_line.insert((cols[0].to_owned(), cols[2].to_owned()), line_no) {
            Some(first) => Err(LineError::DuplicateDoc {
                topic: cols[0].to_owned(),
                doc: cols[2].to_owned(),
                first_line: first,
            }),
            None => Ok(()),
        },
    );
    match scan {
        Err(e) => e,
        // The file changed between the two reads.
        Ok(_) => Error::Io {
            path: path.to_owned(),
            source: std::io::Error::other("the file changed while it was being read"),
        },
    }
}

fn topic_col(s: &str, opts: &ReadOptions) -> Result<TopicId, LineError> {
    let t = TopicId::new(s).map_err(|e| LineError::Id(e.to_string()))?;
    if let Some(known) = &opts.known_topics
        && !known.contains(&t)
    {
        return Err(LineError::UnknownTopic(t.to_string()));
    }
    Ok(t)
}

/// Calls `f(line_no, columns)` for every non-blank line with exactly `n` columns (with `extra`, at
/// least `n`: `f` sees the first `n` and the lines with more are counted in the notes); wraps errors
/// with the file and line; fails on a file without records. Lines are read through [`Lines`] (BOM
/// removed, UTF-8 checked, at most [`MAX_LINE_BYTES`]).
fn for_each_record<F>(path: &Path, n: usize, extra: bool, format: &'static str, mut f: F) -> Result<ReadNotes>
where
    F: FnMut(usize, &[&str]) -> Result<(), LineError>,
{
    let mut records = 0usize;
    let mut notes = ReadNotes::default();
    let mut lines = Lines::open(path, Some(MAX_LINE_BYTES))?;
    while let Some((line_no, line)) = lines.next_line()? {
        let at_line = |error| Error::Line {
            path: path.to_owned(),
            line: line_no,
            error,
        };
        let line = line.map_err(at_line)?;
        // Up to 8 columns are kept without allocating; the count is exact either way.
        let mut cols = [""; 8];
        let mut found = 0usize;
        for c in line.split_whitespace() {
            if found < cols.len() {
                cols[found] = c;
            }
            found += 1;
        }
        if found == 0 {
            continue;
        }
        if extra && found > n {
            notes.lines_with_extra_fields += 1;
            notes.first_line_with_extra_fields.get_or_insert(line_no);
        }
        let res = if found < n || (found > n && !extra) {
            Err(LineError::Columns {
                expected: n,
                found,
                format,
            })
        } else {
            f(line_no, &cols[..n])
        };
        res.map_err(at_line)?;
        records += 1;
    }
    if records == 0 {
        return Err(Error::Empty {
            path: path.to_owned(),
        });
    }
    Ok(notes)
}
