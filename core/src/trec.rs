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
use std::collections::{BTreeMap, BTreeSet, HashMap};
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

/// The largest qrels or run file the readers take: 1 GiB, about 30 million lines (an MS MARCO-size
/// run of 7,000 queries × 1,000 documents is about 250 MB). A run is held in memory to be evaluated
/// (peak memory is measured in the project's ARCHITECTURE.md, "Input limits"); the cap is checked
/// from the file's size, before reading.
pub const MAX_FILE_BYTES: usize = 1 << 30;

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
        Self::read_from(path, None, opts)
    }

    /// [`Qrels::read`] of the bytes of `path` already in memory (a dataset file whose bytes were
    /// checked against its manifest: what is parsed is what was verified).
    pub fn read_bytes(bytes: &[u8], path: &Path, opts: &ReadOptions) -> Result<Self> {
        Self::read_from(path, Some(bytes), opts)
    }

    fn read_from(path: &Path, bytes: Option<&[u8]>, opts: &ReadOptions) -> Result<Self> {
        let mut q = Qrels::default();
        let mut first_line: HashMap<(TopicId, DocId), usize> = HashMap::new();
        // Qrels are always strict: the extra-fields option is about run files.
        for_each_record(path, bytes, 4, false, "topic 0 doc relevance", |line_no, cols| {
            let topic = topic_col(cols[0], opts)?;
            let doc = DocId::new(cols[2]).map_err(|e| LineError::Id(e.to_string()))?;
            let rel: i32 = int_col("relevance", cols[3])?;
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
        let bytes = crate::text::read_line_bytes_at_most(path, MAX_FILE_BYTES, MAX_LINE_BYTES)?;
        if crate::text::ByteLines::has_bom(&bytes) {
            crate::text::warn_bom(path);
        }
        // Each core parses a chunk of whole lines; the chunks are merged in file order, so the run,
        // its tag, its notes and the first error (by line) are those of a line-by-line read.
        let chunks = crate::text::split_at_lines(&bytes, threads_for(bytes.len()));
        let parsed: Vec<RunChunk<'_>> = if chunks.len() <= 1 {
            chunks
                .iter()
                .map(|c| RunChunk::parse(c, true, opts.extra_run_fields))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = chunks
                    .iter()
                    .enumerate()
                    .map(|(i, c)| scope.spawn(move || RunChunk::parse(c, i == 0, opts.extra_run_fields)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            })
        };
        let mut run = Run::default();
        let mut notes = ReadNotes::default();
        let mut records = 0usize;
        let mut offset = 0usize;
        for chunk in parsed {
            let at_line = |line: usize, error| Error::Line {
                path: path.to_owned(),
                line: offset + line,
                error,
            };
            if run.tag.is_empty()
                && let Some(tag) = chunk.tag
            {
                run.tag = tag.to_owned();
            }
            for group in chunk.groups {
                match run.topics.get_mut(group.topic) {
                    Some(hits) => hits.extend(group.hits),
                    None => {
                        let topic = topic_col(group.topic, opts).map_err(|e| at_line(group.line, e))?;
                        run.topics.insert(topic, group.hits);
                    }
                }
            }
            if let Some((line, error)) = chunk.error {
                return Err(at_line(line, error));
            }
            notes.lines_with_extra_fields += chunk.extra_lines;
            if notes.first_line_with_extra_fields.is_none() {
                notes.first_line_with_extra_fields = chunk.first_extra_line.map(|l| offset + l);
            }
            records += chunk.records;
            offset += chunk.lines;
        }
        if records == 0 {
            return Err(Error::Empty {
                path: path.to_owned(),
            });
        }
        // Duplicates are rare: detect them cheaply here (topics split over the cores), and only when
        // one exists read the file again to report the first one in file order with both lines.
        if any_duplicate(&run) {
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

/// Cores to parse a file of `len` bytes on: one below 1 MB (threads cost more than they save).
fn threads_for(len: usize) -> usize {
    if len < 1 << 20 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Consecutive lines of one topic in a chunk of a run file.
struct TopicGroup<'a> {
    topic: &'a str,
    /// The group's first line, counted in the chunk (where a bad topic is reported).
    line: usize,
    hits: Vec<Hit>,
}

/// What one chunk of a run file holds, up to its first bad line.
struct RunChunk<'a> {
    /// Lines in the chunk (all of them, read to the end unless a line failed).
    lines: usize,
    records: usize,
    groups: Vec<TopicGroup<'a>>,
    tag: Option<&'a str>,
    extra_lines: usize,
    first_extra_line: Option<usize>,
    /// The first bad line (counted in the chunk) and what is wrong with it.
    error: Option<(usize, LineError)>,
}

impl<'a> RunChunk<'a> {
    fn empty() -> Self {
        Self {
            lines: 0,
            records: 0,
            groups: Vec::new(),
            tag: None,
            extra_lines: 0,
            first_extra_line: None,
            error: None,
        }
    }

    /// Parses the lines of `bytes` (`first`: the chunk starts the file) by the rules of
    /// [`for_each_record`] with six columns, stopping at the first bad line.
    fn parse(bytes: &'a [u8], first: bool, extra: bool) -> Self {
        let mut c = Self::empty();
        for (line_no, line) in crate::text::ByteLines::new(bytes, Some(MAX_LINE_BYTES), first) {
            c.lines = line_no;
            let res = line.and_then(|line| {
                let mut cols = [""; 8];
                let found = split_columns(line, &mut cols);
                if found == 0 {
                    return Ok(false);
                }
                if extra && found > 6 {
                    c.extra_lines += 1;
                    c.first_extra_line.get_or_insert(line_no);
                }
                if found < 6 || (found > 6 && !extra) {
                    return Err(LineError::Columns {
                        expected: 6,
                        found,
                        format: RUN_FORMAT,
                    });
                }
                let hit = run_hit(&cols[..6])?;
                c.tag.get_or_insert(cols[5]);
                match c.groups.last_mut() {
                    Some(g) if g.topic == cols[0] => g.hits.push(hit),
                    _ => c.groups.push(TopicGroup {
                        topic: cols[0],
                        line: line_no,
                        hits: vec![hit],
                    }),
                }
                Ok(true)
            });
            match res {
                Ok(record) => c.records += usize::from(record),
                Err(e) => {
                    c.error = Some((line_no, e));
                    break;
                }
            }
        }
        c
    }
}

/// Splits `line` at spaces and tabs, as trec_eval does (9.0.8, `get_results` / `get_qrels`: only
/// `' '` and `'\t'` separate columns), keeping the first `cols.len()` columns; returns how many there
/// are. Any other character, a no-break space (U+00A0) or another Unicode space included, belongs
/// to the column it is in: splitting there too would shift a line's columns where trec_eval does
/// not. (A line's terminator, `\n` or `\r\n`, is already gone.)
pub(crate) fn split_columns<'a>(line: &'a str, cols: &mut [&'a str]) -> usize {
    // Byte by byte: a space or tab byte never occurs inside a multi-byte UTF-8 character, so every
    // split point is a character boundary whatever the line holds.
    let mut found = 0usize;
    let mut keep = |c: &'a str| {
        if let Some(slot) = cols.get_mut(found) {
            *slot = c;
        }
        found += 1;
    };
    let bytes = line.as_bytes();
    let mut start = None;
    for (i, &b) in bytes.iter().enumerate() {
        match (b == b' ' || b == b'\t', start) {
            (true, Some(s)) => {
                keep(&line[s..i]);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        keep(&line[s..]);
    }
    found
}

/// The columns of a TREC line as trec_eval reads them (`split_columns`: spaces and tabs only), for
/// readers that check a line themselves (the submission validator).
pub fn columns(line: &str) -> impl Iterator<Item = &str> {
    line.split([' ', '\t']).filter(|c| !c.is_empty())
}

/// An integer column: an integer too large or small for it is out of range (naming the range), any
/// other text not an integer. Public for readers that check a line themselves, so that they word it
/// the same way.
pub fn int_col<T>(column: &'static str, value: &str) -> Result<T, LineError>
where
    T: std::str::FromStr + num_bounds::Bounded,
{
    value.parse::<T>().map_err(|_| {
        let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            LineError::OutOfRange {
                column,
                value: value.chars().take(40).collect(),
                min: T::MIN,
                max: T::MAX,
            }
        } else {
            LineError::NotANumber {
                column,
                value: value.to_owned(),
                expected: "integer",
            }
        }
    })
}

/// The bounds of the integer types of TREC columns, as `i64`.
pub mod num_bounds {
    /// An integer type's range.
    pub trait Bounded {
        /// The smallest value.
        const MIN: i64;
        /// The largest value.
        const MAX: i64;
    }
    impl Bounded for i32 {
        const MIN: i64 = i32::MIN as i64;
        const MAX: i64 = i32::MAX as i64;
    }
    impl Bounded for i64 {
        const MIN: i64 = i64::MIN;
        const MAX: i64 = i64::MAX;
    }
}

/// The hit of a run line's six columns (document, rank checked, finite score, tag length checked).
fn run_hit(cols: &[&str]) -> Result<Hit, LineError> {
    let doc = DocId::new(cols[2]).map_err(|e| LineError::Id(e.to_string()))?;
    int_col::<i64>("rank", cols[3])?;
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
    Ok(Hit { doc, score })
}

/// True when some topic of `run` lists a document twice (topics checked on all cores).
fn any_duplicate(run: &Run) -> bool {
    let topics: Vec<&Vec<Hit>> = run.topics.values().collect();
    let check = |part: &[&Vec<Hit>]| {
        let mut seen = rustc_hash::FxHashSet::default();
        part.iter().any(|hits| {
            seen.clear();
            seen.reserve(hits.len());
            hits.iter().any(|h| !seen.insert(h.doc.as_str()))
        })
    };
    let threads = if run.len() < 1 << 15 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    if threads <= 1 || topics.len() < 2 {
        return check(&topics);
    }
    let per = topics.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = topics
            .chunks(per)
            .map(|p| scope.spawn(move || check(p)))
            .collect();
        // Every handle is joined (`any` would stop at the first true), a panic carried on.
        let found: Vec<bool> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        found.contains(&true)
    })
}

/// The columns of a run line, for error messages.
const RUN_FORMAT: &str = "topic Q0 doc rank score tag";

/// The error for the first repeated (topic, doc) pair of a run file, in file order.
fn first_duplicate(path: &Path, extra_fields: bool) -> Error {
    let mut first_line: HashMap<(String, String), usize> = HashMap::new();
    let scan = for_each_record(
        path,
        None,
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
fn for_each_record<F>(
    path: &Path,
    bytes: Option<&[u8]>,
    n: usize,
    extra: bool,
    format: &'static str,
    mut f: F,
) -> Result<ReadNotes>
where
    F: FnMut(usize, &[&str]) -> Result<(), LineError>,
{
    let mut records = 0usize;
    let mut notes = ReadNotes::default();
    let mut handle = |line_no: usize, line: Result<&str, LineError>| -> Result<()> {
        let at_line = |error| Error::Line {
            path: path.to_owned(),
            line: line_no,
            error,
        };
        let line = line.map_err(at_line)?;
        // Up to 8 columns are kept without allocating; the count is exact either way.
        let mut cols = [""; 8];
        let found = split_columns(line, &mut cols);
        if found == 0 {
            return Ok(());
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
        Ok(())
    };
    match bytes {
        Some(b) => {
            if b.len() > MAX_FILE_BYTES {
                return Err(Error::TooLarge {
                    path: path.to_owned(),
                    max_bytes: MAX_FILE_BYTES,
                });
            }
            for (line_no, line) in crate::text::ByteLines::new(b, Some(MAX_LINE_BYTES), true) {
                handle(line_no, line)?;
            }
        }
        None => {
            crate::text::check_size(path, MAX_FILE_BYTES)?;
            let mut lines = Lines::open(path, Some(MAX_LINE_BYTES))?.at_most(MAX_FILE_BYTES);
            while let Some((line_no, line)) = lines.next_line()? {
                handle(line_no, line)?;
            }
        }
    }
    if records == 0 {
        return Err(Error::Empty {
            path: path.to_owned(),
        });
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    //! Properties: the chunked run reader gives exactly what a line-by-line read gives — hits, tag,
    //! notes, or the first error with its line — on files large enough to be split over the cores,
    //! with the bad line placed in either half.
    use super::*;

    /// The line-by-line reader the chunked one replaced, as the reference.
    fn reference(path: &Path, opts: &ReadOptions) -> Result<(Run, ReadNotes)> {
        let mut run = Run::default();
        let notes = for_each_record(path, None, 6, opts.extra_run_fields, RUN_FORMAT, |_, cols| {
            let hit = run_hit(cols)?;
            if run.tag.is_empty() {
                run.tag = cols[5].to_owned();
            }
            match run.topics.get_mut(cols[0]) {
                Some(hits) => hits.push(hit),
                None => {
                    run.topics.insert(topic_col(cols[0], opts)?, vec![hit]);
                }
            }
            Ok(())
        })?;
        let dup = run.topics.values().any(|hits| {
            let mut seen = std::collections::HashSet::new();
            hits.iter().any(|h| !seen.insert(h.doc.as_str()))
        });
        if dup {
            return Err(first_duplicate(path, opts.extra_run_fields));
        }
        Ok((run, notes))
    }

    fn outcome(r: Result<(Run, ReadNotes)>) -> String {
        match r {
            Ok((run, notes)) => format!("{run:?} {notes:?}"),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn the_chunked_reader_equals_a_line_by_line_read() {
        let dir = crate::testing::scratch_root().join(format!("lexbench-trec-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 36,000 lines (~1.3 MB: read on every core); topics in runs of 100 lines, and topic q5
        // comes back near the end (its hits are merged across chunks).
        let mut lines: Vec<String> = (0..36_000)
            .map(|i| {
                let t = if i >= 35_900 { 5 } else { i / 100 };
                format!("q{t} Q0 d{i} {} {}.25 tag{}", i % 100 + 1, 36_000 - i, i % 3)
            })
            .collect();
        const LATE: usize = 27_000; // a line in the second half
        type Edit = Box<dyn Fn(&mut Vec<String>)>;
        let variants: Vec<(&str, Edit, ReadOptions)> = vec![
            ("clean", Box::new(|_| {}), ReadOptions::default()),
            (
                "bad score LATE",
                Box::new(|l| l[LATE] = l[LATE].replace(".25", "x")),
                ReadOptions::default(),
            ),
            (
                "bad score early and LATE",
                Box::new(|l| {
                    l[3] = l[3].replace(".25", "nan");
                    l[LATE] = l[LATE].replace(".25", "x");
                }),
                ReadOptions::default(),
            ),
            (
                "blank and CRLF lines",
                Box::new(|l| {
                    l[10] = String::new();
                    l[LATE] = format!("{}\r", l[LATE]);
                }),
                ReadOptions::default(),
            ),
            (
                "extra fields, strict",
                Box::new(|l| l[LATE].push_str(" more")),
                ReadOptions::default(),
            ),
            (
                "extra fields, lenient",
                Box::new(|l| {
                    l[LATE].push_str(" more");
                    l[LATE + 7].push_str(" and more");
                }),
                ReadOptions {
                    extra_run_fields: true,
                    ..ReadOptions::default()
                },
            ),
            (
                "unknown topic LATE",
                Box::new(|_| {}),
                ReadOptions {
                    known_topics: Some((0..300).map(|t| TopicId::new(format!("q{t}")).unwrap()).collect()),
                    ..ReadOptions::default()
                },
            ),
            (
                "duplicate across chunks",
                Box::new(|l| l[35_950] = l[35_950].replace("d35950", "d510")),
                ReadOptions::default(),
            ),
            (
                "line too long LATE",
                Box::new(|l| l[LATE].push_str(&" x".repeat(MAX_LINE_BYTES))),
                ReadOptions::default(),
            ),
            (
                "bad id LATE",
                Box::new(|l| l[LATE] = l[LATE].replace(" d", " \u{7}d")),
                ReadOptions::default(),
            ),
            (
                "unicode spaces",
                Box::new(|l| l[LATE] = l[LATE].replace(' ', "\u{2003}")),
                ReadOptions::default(),
            ),
        ];
        for (name, edit, opts) in &variants {
            let mut v = lines.clone();
            edit(&mut v);
            let mut bytes = v.join("\n").into_bytes();
            bytes.push(b'\n');
            if *name == "clean" {
                // And with a byte-order mark, a byte that is not UTF-8 late, in a second file.
                let mut bad = bytes.clone();
                let at = bad.len() * 3 / 4;
                let at = at + bad[at..].iter().position(|&b| b == b'd').unwrap();
                bad[at] = 0xff;
                let mut bom = b"\xef\xbb\xbf".to_vec();
                bom.extend_from_slice(&bad);
                let p = dir.join("bom-not-utf8.trec");
                std::fs::write(&p, &bom).unwrap();
                let got = outcome(Run::read_with_notes(&p, opts));
                assert!(got.starts_with("error:") && got.contains("UTF-8"), "{got}");
                assert_eq!(got, outcome(reference(&p, opts)), "bom, not UTF-8");
            }
            let p = dir.join("run.trec");
            std::fs::write(&p, &bytes).unwrap();
            assert!(bytes.len() > 1 << 20, "large enough to be read in chunks");
            let got = outcome(Run::read_with_notes(&p, opts));
            assert_eq!(got, outcome(reference(&p, opts)), "{name}");
            if *name != "clean"
                && !name.contains("lenient")
                && !name.contains("CRLF")
                && !name.contains("unicode")
            {
                assert!(
                    got.starts_with("error:"),
                    "{name}: {}",
                    &got[..got.len().min(200)]
                );
            }
        }
        lines.truncate(3);
        let p = dir.join("small.trec");
        std::fs::write(&p, lines.join("\n")).unwrap();
        let got = outcome(Run::read_with_notes(&p, &ReadOptions::default()));
        assert_eq!(got, outcome(reference(&p, &ReadOptions::default())));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
