//! Pre-segmented judgment corpora: JSON Lines, one judgment a line, already cut into paragraphs.
//!
//! Any corpus that has segmented ECtHR judgments itself (a research dataset, an export of another
//! tool) can be read as this format, and its judgments then serve wherever parsed judgments do
//! (`lexbench import release --texts CORPUS.jsonl`). One line is one judgment:
//!
//! ```json
//! {"itemid": "001-100093", "case_name": "CASE OF X v. Y", "source_file": "where it came from",
//!  "paragraphs": [{"num": 1, "text": "1. The case originated …"}, {"num": null, "text": "(1) …"}]}
//! ```
//!
//! - `itemid` (required): the HUDOC itemid, `001-NNNNNN`. An itemid may appear on one line only.
//! - `case_name` (optional): the title (`CASE OF X v. Y`); `source_file` (optional): where the corpus
//!   took the judgment from, kept in [`Entry::source_file`].
//! - `paragraphs` (required): the judgment's blocks in document order, each `{"num", "text"}`. `num`
//!   is the printed paragraph number (1 to [`MAX_PARAGRAPH_NUMBER`]), or `null` (or absent) for an
//!   unnumbered block (a quoted list, a heading, a continuation). `text` may repeat the number
//!   (`"12. The applicant …"`): a leading `12.` followed by white space is removed, as the other
//!   readers remove it. Unknown fields are refused (a misspelt `paragraph` is an error, not an empty
//!   judgment).
//!
//! What becomes the judgment's paragraphs, and what is reported in its warnings:
//! - **Unnumbered blocks** are left out of the numbered paragraphs (a corpus that has cut them off
//!   its paragraph has said they are not part of it); one `unnumbered_blocks` warning counts them.
//! - **Numbers that restart or go back** (a separate opinion numbered from 1, a heading carrying a
//!   list number, a quoted paragraph) are left out: a numbered block is kept only when its number is
//!   higher than the last kept one, and not when the next numbered block would fit between the two
//!   (a stray high number, say a quoted `2010.`, does not swallow the paragraphs after it). This
//!   keeps the longest sensible increasing run rather than the first run alone: on the real corpus a
//!   heading `1. The applicant's victim status` between paragraphs 47 and 49 would otherwise cost
//!   paragraphs 49 to 129. One `number_out_of_order` warning counts and lists the blocks left out.
//! - **Repeated numbers** (issue 54): a kept paragraph's number may be carried by another block
//!   with text. When that block is as much in sequence as the kept one — it lies between the
//!   paragraphs kept before and after, and its nearest numbered neighbours with other numbers are
//!   lower before it and higher after it (or absent) — nothing tells which block is the paragraph
//!   (`{"num": 17, "text": "FAKE"}` just before or after the real § 17: both sit between § 16 and
//!   § 18). Then **neither is kept**: the number is missing from the judgment (a pair labelling it is
//!   left out by the caller, never labelled against the wrong text), and one `repeated_number`
//!   warning counts the blocks and names the numbers and blocks. Keeping the first (or any) would let
//!   one inserted block replace a real paragraph without a trace. A repeat out of sequence (a
//!   restart, a quotation after § 18 carrying 17) is a number out of order, as above, and the
//!   paragraph in sequence is kept. What numbers cannot show is not caught: a block carrying 17 that
//!   is the only one in sequence (the real § 17 moved out of place) is taken for the paragraph.
//! - **Skipped numbers** are kept as they are (paragraph 6 follows 4); one `numbering_gap` warning
//!   lists the numbers missing, counting from 1 (an extract that starts at 20 misses 1-19).
//! - A numbered block with no text is left out (`empty_paragraph`).
//! - Every block left out is counted by reason in [`Entry::left_out`] ([`BlocksLeftOut`]), and the
//!   warnings' counts are of every block (their examples are the first ten): `import release
//!   --texts` reports the counts on stderr, in the dataset's `sources.json` and on its card.
//! - Paragraphs get [`Section::Unknown`]: the format carries no section headings. There are no
//!   separate opinions.
//!
//! A judgment left with no numbered paragraph is still returned (with a `no_numbered_paragraphs`
//! warning): it is for the caller to count it, one judgment of a corpus is not worth failing the
//! corpus for. A line that is not such an object (bad JSON, a wrong type, an invalid itemid, a
//! number 0, a repeated itemid), is not UTF-8 or is longer than [`MAX_INPUT_BYTES`] is an error
//! naming the file and the line. A leading byte-order mark is removed (with a warning in the log);
//! blank lines are skipped; a file without any judgment is an error.
//!
//! ```
//! use lexbench_parsers::judgment::segmented;
//! let line = r#"{"itemid": "001-57574", "case_name": "CASE OF X v. Y", "paragraphs": [
//!     {"num": 1, "text": "1. The case originated."}, {"num": null, "text": "(a) a list"},
//!     {"num": 2, "text": "2. The applicant."}, {"num": 1, "text": "1. An opinion."}]}"#;
//! let corpus = segmented::parse(line.replace('\n', " ").as_bytes(), "c.jsonl")?;
//! let j = &corpus[0].judgment;
//! assert_eq!(j.paragraphs.iter().map(|p| p.num).collect::<Vec<_>>(), [1, 2]);
//! assert_eq!(j.paragraphs[0].text, "The case originated.");
//! let err = segmented::parse(b"{\"itemid\": 3}", "c.jsonl").unwrap_err();
//! assert!(err.to_string().starts_with("c.jsonl:1: "), "{err}");
//! # Ok::<(), lexbench_parsers::Error>(())
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use lexbench_core::text::ByteLines;
use lexbench_core::{ItemId, Judgment, Paragraph, Provenance, Section, Warning};
use serde::Deserialize;

use super::MAX_INPUT_BYTES;
use crate::{Error, Result};

/// The format's name in errors.
const FORMAT: &str = "segmented judgment corpus (JSON Lines)";

/// The highest paragraph number a block may carry (as the guides' citation reader: no judgment has
/// ten thousand paragraphs).
pub const MAX_PARAGRAPH_NUMBER: u32 = 9999;

/// The largest corpus file [`read_file`] reads: 4 GiB (every English HUDOC judgment is a few GB at
/// most; one line, one judgment, is at most [`MAX_INPUT_BYTES`]).
pub const MAX_CORPUS_BYTES: usize = 4 << 30;

/// How many examples a summary warning lists.
const EXAMPLES: usize = 10;

/// One judgment of a corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The line it was read from (from 1).
    pub line: usize,
    /// The corpus's own note of where it took the judgment from (`source_file`).
    pub source_file: Option<String>,
    /// The judgment: numbered paragraphs as the module documentation says, and warnings.
    pub judgment: Judgment,
    /// The blocks of the line left out of the judgment's paragraphs, counted by reason (every block
    /// is either a paragraph or counted here).
    pub left_out: BlocksLeftOut,
}

/// The blocks of one judgment left out of its numbered paragraphs, by reason (module
/// documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BlocksLeftOut {
    /// Blocks without a number.
    pub unnumbered: usize,
    /// Numbered blocks whose number restarts, goes back, or is a stray high number.
    pub out_of_order: usize,
    /// Numbered blocks whose number another block in sequence carries too (none of them is kept).
    pub repeated_number: usize,
    /// Numbered blocks without text.
    pub empty: usize,
}

impl BlocksLeftOut {
    /// The reasons and their counts, in a fixed order (`unnumbered`, `out_of_order`,
    /// `repeated_number`, `empty`).
    pub fn by_reason(&self) -> [(&'static str, usize); 4] {
        [
            ("unnumbered", self.unnumbered),
            ("out_of_order", self.out_of_order),
            ("repeated_number", self.repeated_number),
            ("empty", self.empty),
        ]
    }

    /// All blocks left out.
    pub fn total(&self) -> usize {
        self.unnumbered + self.out_of_order + self.repeated_number + self.empty
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Self) {
        self.unnumbered += other.unnumbered;
        self.out_of_order += other.out_of_order;
        self.repeated_number += other.repeated_number;
        self.empty += other.empty;
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJudgment {
    itemid: String,
    #[serde(default)]
    case_name: Option<String>,
    #[serde(default)]
    source_file: Option<String>,
    paragraphs: Vec<RawBlock>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBlock {
    #[serde(default)]
    num: Option<u32>,
    text: String,
}

/// Reads a corpus file of at most [`MAX_CORPUS_BYTES`] (for [`parse`]).
///
/// # Errors
/// The file cannot be read, or is too large.
pub fn read_file(path: &Path) -> lexbench_core::Result<Vec<u8>> {
    lexbench_core::text::read_bytes_at_most(path, MAX_CORPUS_BYTES)
}

/// Whether `path` names a segmented corpus by its extension (`.jsonl`), as `import release --texts`
/// tells a corpus file from a folder of judgments.
pub fn is_corpus_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
}

fn invalid(source: &str, line: usize, message: impl Into<String>) -> Error {
    Error::Invalid {
        source_name: format!("{source}:{line}"),
        format: FORMAT,
        message: message.into(),
    }
}

/// Parses a whole corpus: one [`Entry`] per non-blank line, in file order. `source` names the file in
/// errors (`source:line`).
///
/// # Errors
/// [`Error::Invalid`] naming `source:line` for the first line that is not a judgment of the format
/// (module documentation), or naming `source` when there is no judgment at all.
pub fn parse(bytes: &[u8], source: &str) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<ItemId, usize> = BTreeMap::new();
    for (line_no, line) in ByteLines::new(bytes, Some(MAX_INPUT_BYTES), false) {
        let line = line.map_err(|e| invalid(source, line_no, e.to_string()))?;
        // The byte-order mark, removed with the log line naming the file.
        let line = if line_no == 1 {
            lexbench_core::text::strip_bom(line, Path::new(source))
        } else {
            line
        };
        if line.trim().is_empty() {
            continue;
        }
        let entry = parse_line(line, source, line_no)?;
        if let Some(item) = &entry.judgment.item
            && let Some(first) = seen.insert(item.clone(), line_no)
        {
            return Err(invalid(
                source,
                line_no,
                format!("itemid {item} is already on line {first}"),
            ));
        }
        out.push(entry);
    }
    if out.is_empty() {
        return Err(Error::Invalid {
            source_name: source.to_owned(),
            format: FORMAT,
            message: "no judgment (the file has no non-blank line)".into(),
        });
    }
    Ok(out)
}

/// Parses one line (`line_no` from 1) of the corpus `source`.
///
/// # Errors
/// [`Error::Invalid`] naming `source:line_no` when the line is not a judgment of the format.
pub fn parse_line(line: &str, source: &str, line_no: usize) -> Result<Entry> {
    let raw: RawJudgment = serde_json::from_str(line).map_err(|e| invalid(source, line_no, e.to_string()))?;
    let item: ItemId = raw
        .itemid
        .parse()
        .map_err(|e: lexbench_core::Error| invalid(source, line_no, e.to_string()))?;
    for (i, b) in raw.paragraphs.iter().enumerate() {
        if let Some(n) = b.num
            && !(1..=MAX_PARAGRAPH_NUMBER).contains(&n)
        {
            return Err(invalid(
                source,
                line_no,
                format!("block {i} of {item}: paragraph number {n} is outside 1..={MAX_PARAGRAPH_NUMBER}"),
            ));
        }
    }
    let (paragraphs, warnings, left_out) = select(&raw.paragraphs);
    Ok(Entry {
        line: line_no,
        source_file: raw.source_file,
        left_out,
        judgment: Judgment {
            item: Some(item),
            title: raw.case_name.unwrap_or_default().trim().to_owned(),
            date: None,
            paragraphs,
            opinions: Vec::new(),
            warnings,
            provenance: Provenance {
                sha256: Some(lexbench_core::hash::sha256_hex(line.as_bytes())),
                producer: format!("lexbench-parsers {} segmented", env!("CARGO_PKG_VERSION")),
                ..Provenance::default()
            },
        },
    })
}

/// `text` without a leading `n.` followed by white space (or nothing), trimmed.
fn strip_number(text: &str, n: u32) -> &str {
    let t = text.trim();
    let digits = n.to_string();
    if let Some(rest) = t.strip_prefix(digits.as_str())
        && let Some(rest) = rest.strip_prefix('.')
        && (rest.is_empty() || rest.starts_with(char::is_whitespace))
    {
        return rest.trim_start();
    }
    t
}

/// `1, 3-5, 9` for sorted numbers.
fn ranges(nums: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < nums.len() {
        let mut j = i;
        while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            nums[i].to_string()
        } else {
            format!("{}-{}", nums[i], nums[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

fn warning(code: &str, message: String, at: Option<String>) -> Warning {
    Warning {
        code: code.to_owned(),
        message,
        at,
    }
}

/// `n1 (blocks a, b); n2 (…)`: at most [`EXAMPLES`] numbers, five blocks each.
fn repeated_examples(repeated: &BTreeMap<u32, Vec<usize>>) -> String {
    let mut parts: Vec<String> = repeated
        .iter()
        .take(EXAMPLES)
        .map(|(n, at)| {
            let shown: Vec<String> = at.iter().take(5).map(usize::to_string).collect();
            let more = if at.len() > 5 {
                format!(" and {} more", at.len() - 5)
            } else {
                String::new()
            };
            format!("paragraph number {n} (blocks {}{more})", shown.join(", "))
        })
        .collect();
    if repeated.len() > EXAMPLES {
        parts.push(format!("and {} more numbers", repeated.len() - EXAMPLES));
    }
    parts.join("; ")
}

/// Whether each numbered block is in sequence with its neighbours: the nearest numbered block before
/// it with another number has a lower one (or there is none), the nearest after it with another
/// number a higher one (or there is none). Linear in the blocks.
fn in_sequence(numbered: &[(usize, u32, &str)]) -> Vec<bool> {
    let mut out = vec![false; numbered.len()];
    let mut k = 0;
    while k < numbered.len() {
        let n = numbered[k].1;
        // The run of blocks carrying `n` from `k`: they share their neighbours.
        let end = k + numbered[k..].iter().take_while(|b| b.1 == n).count();
        let before = k.checked_sub(1).map(|j| numbered[j].1);
        let after = numbered.get(end).map(|b| b.1);
        let fits = before.is_none_or(|b| b < n) && after.is_none_or(|a| a > n);
        out[k..end].fill(fits);
        k = end;
    }
    out
}

/// What became of a numbered block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Kept,
    OutOfOrder,
    Empty,
    Repeated,
}

/// The blocks kept as numbered paragraphs, the warnings, and the count of blocks left out (module
/// documentation).
fn select(blocks: &[RawBlock]) -> (Vec<Paragraph>, Vec<Warning>, BlocksLeftOut) {
    let mut warnings = Vec::new();
    let unnumbered: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].num.is_none()).collect();
    let numbered: Vec<(usize, u32, &str)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.num.map(|n| (i, n, strip_number(&b.text, n))))
        .collect();
    // The increasing run: each numbered block kept, out of order or empty.
    // `after[k]`: the last number kept when block `k` came (for the examples of blocks out of order).
    let mut fate = vec![Fate::OutOfOrder; numbered.len()];
    let mut after = vec![0u32; numbered.len()];
    let mut last = 0u32;
    for (k, &(_, n, text)) in numbered.iter().enumerate() {
        let stray_ahead = numbered.get(k + 1).is_some_and(|&(_, m, _)| last < m && m < n);
        if n <= last || stray_ahead {
            after[k] = last;
            continue;
        }
        if text.is_empty() {
            fate[k] = Fate::Empty;
            continue;
        }
        last = n;
        fate[k] = Fate::Kept;
    }
    // Repeated numbers: another block with text carrying a kept paragraph's number, between the
    // paragraphs kept before and after it and in sequence with its own neighbours, is as much the
    // paragraph as the kept one; nothing tells which is, so neither is kept.
    let in_sequence = in_sequence(&numbered);
    let mut positions: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (k, &(_, n, text)) in numbered.iter().enumerate() {
        if !text.is_empty() {
            positions.entry(n).or_default().push(k);
        }
    }
    let kept: Vec<usize> = (0..numbered.len()).filter(|&k| fate[k] == Fate::Kept).collect();
    let mut repeated: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (j, &k) in kept.iter().enumerate() {
        let n = numbered[k].1;
        let same = &positions[&n];
        if same.len() < 2 {
            continue;
        }
        let from = if j == 0 { 0 } else { kept[j - 1] + 1 };
        let to = kept.get(j + 1).copied().unwrap_or(numbered.len());
        let window: Vec<usize> = same[same.partition_point(|&q| q < from)..same.partition_point(|&q| q < to)]
            .iter()
            .copied()
            .filter(|&q| q == k || in_sequence[q])
            .collect();
        if window.len() >= 2 {
            for &q in &window {
                fate[q] = Fate::Repeated;
            }
            repeated.insert(n, window.iter().map(|&q| numbered[q].0).collect());
        }
    }
    let count = |f: Fate| fate.iter().filter(|&&x| x == f).count();
    let (out_of_order_count, repeated_blocks) = (count(Fate::OutOfOrder), count(Fate::Repeated));
    let out_of_order: Vec<String> = (0..numbered.len())
        .filter(|&k| fate[k] == Fate::OutOfOrder)
        .take(EXAMPLES)
        .map(|k| format!("block {}: {} after {}", numbered[k].0, numbered[k].1, after[k]))
        .collect();
    let empty: Vec<u32> = (0..numbered.len())
        .filter(|&k| fate[k] == Fate::Empty)
        .map(|k| numbered[k].1)
        .collect();
    let mut paragraphs: Vec<Paragraph> = Vec::new();
    let mut missing: Vec<u32> = Vec::new();
    let mut previous = 0u32;
    for (k, &(_, n, text)) in numbered.iter().enumerate() {
        if fate[k] == Fate::Kept {
            missing.extend(previous + 1..n);
            previous = n;
            paragraphs.push(Paragraph {
                num: n,
                section: Section::Unknown,
                text: text.to_owned(),
            });
        }
    }
    // A repeated number is reported as such, not as a gap.
    missing.retain(|n| !repeated.contains_key(n));
    if !repeated.is_empty() {
        warnings.push(warning(
            "repeated_number",
            format!(
                "{repeated_blocks} numbered block(s) were left out because two or more blocks carry \
                 their paragraph number in sequence (between the paragraphs kept before and after), \
                 which cannot be told apart, so none of them is kept: {}",
                repeated_examples(&repeated)
            ),
            repeated
                .values()
                .next()
                .and_then(|at| at.first())
                .map(|i| format!("block {i}")),
        ));
    }
    if !unnumbered.is_empty() {
        warnings.push(warning(
            "unnumbered_blocks",
            format!(
                "{} block(s) without a number were left out of the numbered paragraphs",
                unnumbered.len()
            ),
            Some(format!("block {}", unnumbered[0])),
        ));
    }
    if out_of_order_count > 0 {
        let more = out_of_order_count - out_of_order.len();
        warnings.push(warning(
            "number_out_of_order",
            format!(
                "{out_of_order_count} numbered block(s) do not continue the increasing numbering and were left out: {}{}",
                out_of_order.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ),
            None,
        ));
    }
    // Numbers left out for having no text are not missing from the numbering: they are reported
    // as empty.
    let empty_numbers: std::collections::BTreeSet<u32> = empty.iter().copied().collect();
    missing.retain(|n| !empty_numbers.contains(n));
    if !missing.is_empty() {
        warnings.push(warning(
            "numbering_gap",
            format!(
                "{} paragraph number(s) missing: {}",
                missing.len(),
                ranges(&missing)
            ),
            Some(missing[0].to_string()),
        ));
    }
    if !empty.is_empty() {
        warnings.push(warning(
            "empty_paragraph",
            format!("numbered block(s) without text left out: {}", ranges(&empty)),
            Some(empty[0].to_string()),
        ));
    }
    if paragraphs.is_empty() {
        warnings.push(warning(
            "no_numbered_paragraphs",
            "no numbered paragraph with text".to_owned(),
            None,
        ));
    }
    let left_out = BlocksLeftOut {
        unnumbered: unnumbered.len(),
        out_of_order: out_of_order_count,
        repeated_number: repeated_blocks,
        empty: empty.len(),
    };
    (paragraphs, warnings, left_out)
}

#[cfg(test)]
mod tests {
    //! Properties: the number is stripped only when the text starts with it; the kept paragraphs
    //! increase strictly; restarts, a stray high number, gaps, empty and unnumbered blocks are each
    //! reported once.
    use super::*;

    fn blocks(nums: &[Option<u32>]) -> Vec<RawBlock> {
        nums.iter()
            .map(|&num| RawBlock {
                num,
                text: num.map_or("quoted".into(), |n| format!("{n}. Text {n}.")),
            })
            .collect()
    }

    fn kept(nums: &[Option<u32>]) -> (Vec<u32>, Vec<String>) {
        let (p, w, _) = select(&blocks(nums));
        (
            p.iter().map(|p| p.num).collect(),
            w.iter().map(|w| w.code.clone()).collect(),
        )
    }

    #[test]
    fn leading_numbers_are_stripped_only_when_they_are_the_paragraphs() {
        assert_eq!(strip_number(" 12. The applicant", 12), "The applicant");
        assert_eq!(strip_number("12.\tThe applicant", 12), "The applicant");
        assert_eq!(strip_number("12.5 million", 12), "12.5 million");
        assert_eq!(strip_number("1. Heading", 12), "1. Heading");
        assert_eq!(strip_number("12.", 12), "");
    }

    #[test]
    fn restarts_and_stray_numbers_are_left_out_and_gaps_kept() {
        let s = Some;
        assert_eq!(
            kept(&[s(1), s(2), None, s(4), s(1), s(5), s(2010), s(6), s(1), s(2)]),
            (
                vec![1, 2, 4, 5, 6],
                vec![
                    "unnumbered_blocks".into(),
                    "number_out_of_order".into(),
                    "numbering_gap".into()
                ]
            )
        );
        // An extract starting at 20: kept, the missing numbers reported.
        assert_eq!(kept(&[s(20), s(21)]).0, [20, 21]);
        assert_eq!(
            kept(&[None]),
            (
                vec![],
                vec!["unnumbered_blocks".into(), "no_numbered_paragraphs".into()]
            )
        );
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    }
}
