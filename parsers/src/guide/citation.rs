//! Pinpoint citations: `Assanidze v. Georgia [GC], 2004, §§ 146-147`.
//!
//! The grammar (DATA.md §2), read on whitespace-collapsed text so that citations wrapping lines are
//! whole:
//!
//! ```text
//! citation  = name " v. " respondent { qualifier | "[GC]" | "(dec.)" | "(dec)" } [ "," year ]
//!             [ "," app-nos ] [ "," ("§" | "§§") list ]
//! list      = item { ("," | "and") item }          item = n ["in fine"] [ ("-" | "–") n ]
//! ibid      = "ibid" ["."] [","] [ ("§" | "§§") list ]
//! ```
//!
//! Heuristics (documented because they are guesses):
//! - the *left* edge of a case name is found by walking back from ` v. ` over capitalised words,
//!   initials and connectors (`and`, `of`, `the`, `de`, `van`, `on behalf of` …); a lower-case word,
//!   `(`, `;` or a comma ends the walk, and leading words such as `See`, `In`, `Also` are dropped;
//! - the respondent is capitalised words and connectors; a following parenthesis is part of the name
//!   when it is a qualifier (`(no. 1)`, `(re Crimea)`, `(merits)`, `(preliminary objections)` …);
//! - an abbreviated range keeps the start's leading digits (`243-44` → 243, 244); a number followed
//!   by a month name is a date, not a paragraph, and ends the list;
//! - numbers are read whole, never cut to their first digits: a pinpoint with a number outside
//!   1..=[`MAX_PARAGRAPH`] (`§ 12345`), or a range that does not go up or spans more than
//!   [`MAX_RANGE`] paragraphs (`§§ 1-999999999`, `§§ 40-30`, `§§ 1-600`), is *unreadable*: the
//!   citation keeps its case, year and flags and the pinpoint's text in `raw`, but gets no
//!   paragraphs (`case_level_only`) and is marked [`Found::unreadable_pinpoint`], rather than a list
//!   of paragraphs the text does not give; a bare pinpoint (`(§ 12345)`) that is unreadable is no
//!   citation at all;
//! - a mention such as `Z.B. v. France` with neither year, flags nor `§` is not a citation;
//! - joined cases (`Razvozzhayev v. Russia and Ukraine and Udaltsov v. Russia`) add at most
//!   [`MAX_JOINED`] cases to the first;
//! - zero-width characters ([`is_zero_width`]: U+200B, U+200C, U+200D, U+2060, U+FEFF) are not
//!   there: the text is read as it looks;
//! - `ibid.` refers to the previous non-ibid citation in the same text (the same heading); with none
//!   before it, it is kept with an empty case name and an `ibid_without_antecedent` mark.

use std::sync::LazyLock;

use lexbench_core::records::{Citation, CitationFlags, ReadKind};
use regex::Regex;
use serde::Serialize;

/// A citation with where it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// The record.
    pub citation: Citation,
    /// Byte offset of the raw string in the text given to [`extract`].
    pub start: usize,
    /// Byte offset of its end.
    pub end: usize,
    /// No paragraph numbers: a case-level citation only.
    pub case_level_only: bool,
    /// The citation printed a pinpoint that cannot be read (a number over [`MAX_PARAGRAPH`], an
    /// absurd range: see [`pinpoint`]); it is kept without paragraphs, so `case_level_only` too.
    pub unreadable_pinpoint: bool,
}

impl Found {
    /// How the paragraphs were tied to the case.
    pub fn read(&self) -> ReadKind {
        self.citation.read
    }

    /// An `ibid.` citation (its case name is copied from the antecedent).
    pub fn is_ibid(&self) -> bool {
        self.citation.read == ReadKind::Ibid
    }
}

static V_ANCHOR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r" v\. ").expect("static regex"));
static RESPONDENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:(?:the|of|and|former|de|du|del|la|le)\s+)*\p{Lu}[\p{L}\p{M}'’\-]*(?:\s+(?:(?:the|of|and|former|de|du|del|la|le)\s+)*\p{Lu}[\p{L}\p{M}'’\-]*)*",
    )
    .expect("static regex")
});
/// `, Germany and Norway` after a respondent: a list of respondent States.
static RESPONDENT_LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:,\s+(?:the\s+)?\p{Lu}[\p{L}\p{M}'’\-]*(?:\s+\p{Lu}[\p{L}\p{M}'’\-]*)*)+\s+and\s+(?:the\s+)?\p{Lu}[\p{L}\p{M}'’\-]*(?:\s+\p{Lu}[\p{L}\p{M}'’\-]*)*",
    )
    .expect("static regex")
});
/// What may follow a respondent list: a flag, a qualifier or the year.
static AFTER_LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:\(dec|\[\s*GC|\(no\.|,\s*(?:19[5-9]|20[0-4])\d\b)").expect("static regex")
});
/// `Boivin v. 34 member States of the Council of Europe`: the collective respondent.
static MEMBER_STATES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{1,2}\s+member\s+States\s+of\s+the\s+(?:Council\s+of\s+Europe|European\s+Union)")
        .expect("static regex")
});
static GC: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\[\s*GC\s*\]").expect("static regex"));
static DEC: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\(\s*dec\s*\.?\s*\)").expect("static regex"));
static QUALIFIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*\((?:(?:no\.|No\.|nos\.|re |merits|preliminary|just satisfaction|extracts|revision|interpretation|striking|friendly|Article|partial|principal|satisfaction)[^()]{0,50}|[IVX]{1,6})\)")
        .expect("static regex")
});
static YEAR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*,\s*((?:19[5-9]|20[0-4])\d)\b").expect("static regex"));
static APPNOS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*,\s*nos?\.\s*\d+/\d+(?:\s*(?:,|and)\s*\d+/\d+)*(?:\s+and\s+\d+\s+others)?")
        .expect("static regex")
});
static SECTION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*,?\s*§§?\s*").expect("static regex"));
static NUM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d+)").expect("static regex"));
static IN_FINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s+in\s+fine\b").expect("static regex"));
static RANGE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*[-–]\s*(\d+)").expect("static regex"));
static SEP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:,|and|&)\s*(?:§§?\s*)?").expect("static regex"));
static MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)\b",
    )
    .expect("static regex")
});
static COMMISSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*,\s*Commission(?:’s)?\s+(decision|report|Report|Decision)(?:\s+of\s+\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+((?:19[5-9]|20[0-4])\d)|\s*,\s*((?:19[5-9]|20[0-4])\d)\b)?",
    )
    .expect("static regex")
});
/// `X. and Y. v. Switzerland (Commission decision of 14 July 1977)`.
static COMMISSION_PAREN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*\(\s*Commission(?:’s)?\s+(decision|report|Report|Decision)\s+of\s+\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+((?:19[5-9]|20[0-4])\d)\s*\)",
    )
    .expect("static regex")
});
/// `, (D.R.) 2, p. 32`: the volume and page of Decisions and Reports, before a pinpoint.
static DR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*,\s*\(?D\.\s*R\.\)?\s*\d{1,3}\s*,\s*pp?\.\s*\d{1,4}(?:\s*[-–]\s*\d{1,4})?")
        .expect("static regex")
});
static IBID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b[Ii]bid\b\.?").expect("static regex"));

const CONNECTORS: &[&str] = &[
    "and", "of", "the", "de", "da", "du", "des", "del", "della", "di", "van", "von", "der", "den", "la",
    "le", "el", "al", "ve", "y", "on", "behalf", "for", "und", "et", "v", "&", "–",
];
/// Capitalised words that are never part of a party's name: met while walking back from ` v. `,
/// they end the name (`the Convention and N.C. v. Turkey`).
const NAME_STOP: &[&str] = &[
    "Convention",
    "Court",
    "Court’s",
    "Article",
    "Articles",
    "Protocol",
    "Protocols",
    "Government",
    "Governments",
    "Chamber",
    "Contracting",
    "Rule",
    "Rules",
    "Judge",
    "Judges",
    "Commission",
    "Commission’s",
];
const LEADING: &[&str] = &[
    "See",
    "see",
    "In",
    "Also",
    "also",
    "Compare",
    "Cf.",
    "cf.",
    "Contrast",
    "But",
    "And",
    "Moreover",
    "Similarly",
    "Unlike",
    "As",
    "Thus",
    "and",
    "of",
    "the",
    "on",
    "for",
    "behalf",
    "de",
    "del",
    "la",
    "le",
    "v",
    "–",
];

/// The largest paragraph number a pinpoint may give: 9,999. The Court's longest judgments run to a
/// few thousand paragraphs (inter-State cases: `Georgia v. Russia (I)` has under 400, `Ukraine and
/// the Netherlands v. Russia` under 1,000 in its admissibility decision); a five-digit "paragraph"
/// is a misprint or not a paragraph at all, and reading its first four digits (`§ 12345` → 1234)
/// would invent one.
pub const MAX_PARAGRAPH: u32 = 9_999;

/// The longest range a pinpoint may give, in paragraphs: 500. The widest real ranges in the guides
/// are a few dozen paragraphs (`§§ 83-89`, `§§ 243-44`); a longer one is a misprint
/// (`§§ 1-999999999`) and would put hundreds of wrong paragraphs in the relevance labels.
pub const MAX_RANGE: u32 = 500;

/// The most cases a joined name may add after the first (`Razvozzhayev v. Russia and Ukraine and
/// Udaltsov v. Russia` adds one; the guides never print more than that): 3. Without a bound, a text
/// made of ` v. ` (`X v. Y X v. Y …`) was one chain read again from each of its ` v. `, quadratic in
/// the text (issue 54). A longer chain is read from its last four cases.
pub const MAX_JOINED: usize = 3;

/// A paragraph list read by [`pinpoint`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pinpoint {
    /// The paragraphs, in the order printed (ranges expanded); empty when `unreadable`.
    pub paragraphs: Vec<u32>,
    /// Bytes of the input the list took (all of it, also when unreadable).
    pub used: usize,
    /// A number outside 1..=[`MAX_PARAGRAPH`], or a range that does not go up or spans more than
    /// [`MAX_RANGE`] paragraphs: the list gives no paragraphs at all (not the readable part of it,
    /// which would pass for the whole).
    pub unreadable: bool,
}

/// A paragraph number as printed, read whole: `None` outside 1..=[`MAX_PARAGRAPH`].
fn paragraph_number(digits: &str) -> Option<u32> {
    digits
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_PARAGRAPH).contains(n))
}

/// Reads a paragraph list at the start of `s` (after `§`/`§§`): `146-147`, `61, 67, 71`,
/// `34 in fine and 35-36`, `243-44`. See the module's heuristics for what ends a list and what
/// makes it unreadable.
pub fn pinpoint(s: &str) -> Pinpoint {
    let mut out = Vec::new();
    let mut unreadable = false;
    let mut pos = 0;
    loop {
        let rest = &s[pos..];
        let Some(m) = NUM.captures(rest) else { break };
        let mut p = pos + m[0].len();
        if MONTH.is_match(&s[p..]) {
            break;
        }
        let start = paragraph_number(&m[1]);
        unreadable |= start.is_none();
        if let Some(f) = IN_FINE.find(&s[p..]) {
            p += f.end();
        }
        if let Some(r) = RANGE.captures(&s[p..]) {
            let end_txt = &r[1];
            if let Some(start) = start {
                // Abbreviated range: `243-44` → 244 (the start has at most four digits here, so
                // the scale cannot overflow).
                let abbreviated = end_txt.len() < m[1].len();
                let end = end_txt.parse::<u32>().ok().map(|end| {
                    if abbreviated && end < start {
                        let scale = 10u32.pow(end_txt.len() as u32);
                        end + (start - start % scale)
                    } else {
                        end
                    }
                });
                match end.filter(|&e| e > start && e - start <= MAX_RANGE && e <= MAX_PARAGRAPH) {
                    Some(end) => out.extend(start..=end),
                    None => unreadable = true,
                }
            }
            p += r[0].len();
            if let Some(f) = IN_FINE.find(&s[p..]) {
                p += f.end();
            }
        } else if let Some(start) = start {
            out.push(start);
        }
        pos = p;
        // A separator counts only when a number follows (`§ 84 and the cases cited therein`).
        match SEP.find(&s[pos..]) {
            Some(sep) if s[pos + sep.end()..].starts_with(|c: char| c.is_ascii_digit()) => pos += sep.end(),
            _ => break,
        }
    }
    looked_at(pos);
    if unreadable {
        out.clear();
    }
    Pinpoint {
        paragraphs: out,
        used: pos,
        unreadable,
    }
}

/// Parses a paragraph list at the start of `s`; returns the numbers and the bytes consumed (see
/// [`pinpoint`]: an unreadable list gives no numbers).
pub fn paragraph_list(s: &str) -> (Vec<u32>, usize) {
    let p = pinpoint(s);
    (p.paragraphs, p.used)
}

/// The reader's work, for the tests that keep it linear in the text (issue 54, item 9): every step
/// that looks at a stretch of the text (a word walked over, a regex match consumed, a window searched,
/// a name built or compared) adds the bytes it covers. It is a model of the cost, not a measurement;
/// outside tests it compiles to nothing. Timed tests are not used for performance: a bound of `c`
/// bytes per byte of input is deterministic.
#[cfg(test)]
mod work {
    use std::cell::Cell;

    thread_local! {
        /// Bytes looked at on this thread since [`take`].
        static LOOKED_AT: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn add(bytes: usize) {
        LOOKED_AT.with(|c| c.set(c.get().saturating_add(bytes)));
    }

    /// The count so far, and back to zero.
    pub(super) fn take() -> usize {
        LOOKED_AT.with(|c| c.replace(0))
    }
}

/// Counts `bytes` of work ([`work`], tests only).
#[inline]
fn looked_at(bytes: usize) {
    #[cfg(test)]
    work::add(bytes);
    #[cfg(not(test))]
    let _ = bytes;
}

/// Walks back from `anchor` (the byte offset of ` v. `) to the start of the case name.
fn name_start(text: &str, anchor: usize) -> Option<usize> {
    let before = &text[..anchor];
    let mut words: Vec<(usize, &str)> = Vec::new();
    let mut end = before.len();
    loop {
        let seg = &before[..end];
        let s = seg.rfind(' ').map_or(0, |i| i + 1);
        let w = &seg[s..];
        looked_at(w.len() + 1);
        if w.is_empty() {
            break;
        }
        // `(Name` opens the citation: take the word without its parenthesis, then stop.
        if let Some(stripped) = w.strip_prefix('(') {
            if stripped.chars().next().is_some_and(char::is_uppercase) {
                words.push((s + 1, stripped));
            }
            break;
        }
        // `Refah Partisi (the Welfare Party) and Others v. Turkey`: a parenthesis inside the name
        // (no digits, not a `(dec.)` flag) is walked over.
        if w.ends_with(')') {
            let mut group_start = None;
            let mut e = s;
            for _ in 0..6 {
                if e == 0 {
                    break;
                }
                let seg = &before[..e - 1];
                let gs = seg.rfind(' ').map_or(0, |i| i + 1);
                looked_at(e - gs);
                if seg[gs..].starts_with('(') {
                    group_start = Some(gs);
                    break;
                }
                e = gs;
            }
            let Some(gs) = group_start else { break };
            let group = &before[gs..s + w.len()];
            if group.chars().any(|c| c.is_ascii_digit()) || group.contains("dec") || gs == 0 {
                break;
            }
            words.push((gs, group));
            end = gs - 1;
            continue;
        }
        // `S., V. and A. v. Denmark`: an initial followed by a comma stays in the name.
        let initial_comma =
            w.len() <= 4 && w.ends_with(".,") && w.chars().next().is_some_and(char::is_uppercase);
        // `De Wilde, Ooms and Versyp v. Belgium`: a capitalised word and a comma before a list of names
        // that ends in `and Name` stays in the name.
        let list_comma = w.ends_with(',')
            && !w.contains(')')
            && w.chars().next().is_some_and(char::is_uppercase)
            && !NAME_STOP.contains(&w.trim_end_matches(','))
            && !LEADING.contains(&w.trim_end_matches(','))
            && names_list_follows(&words);
        if !initial_comma
            && !list_comma
            && (w.ends_with(',') || w.ends_with(';') || w.ends_with(':') || w.contains(')'))
        {
            break;
        }
        // `… under the Convention and N.C. v. Turkey`: words that are never part of a party's name end
        // the walk.
        if NAME_STOP.contains(&w) {
            break;
        }
        // A word closing a sentence (`… in Iraq. In Al-Jedda v. …`) is not part of the name; initials
        // (`N.D.`, `A.`) and company suffixes are.
        if let Some(core) = w.strip_suffix('.')
            && core.chars().count() > 3
            && !core.contains('.')
            && !["Inc", "Ltd", "Bros", "Corp"].contains(&core)
        {
            break;
        }
        let first = w.chars().next().unwrap_or(' ');
        let digit_name = first.is_ascii_digit() && w.chars().any(char::is_alphabetic);
        // `Branko Tomaši ć and Others v. Croatia`: a PDF text extractor split a word before a letter
        // with a diacritic; the lone lower-case letter belongs to the capitalised word before it.
        let split_letter = w.chars().count() == 1 && first.is_lowercase() && !first.is_ascii();
        if split_letter {
            words.push((s, w));
            if s == 0 {
                break;
            }
            end = s - 1;
            continue;
        }
        if first.is_uppercase() || digit_name || first == '“' || CONNECTORS.contains(&w) {
            words.push((s, w));
        } else {
            break;
        }
        if s == 0 {
            break;
        }
        end = s - 1;
    }
    // Drop leading connectors and words like "See", "In".
    while words.last().is_some_and(|(_, w)| LEADING.contains(w)) {
        words.pop();
    }
    match words.last() {
        Some(&(i, _)) => Some(i).filter(|&i| i < anchor),
        None => lowercase_name_start(before),
    }
}

/// The words collected so far (nearest ` v. ` first) read as `Name and Name`: a comma before them
/// separates names of one party list.
fn names_list_follows(words: &[(usize, &str)]) -> bool {
    if !(3..=6).contains(&words.len()) {
        return false;
    }
    looked_at(words.len());
    let ws: Vec<&str> = words.iter().rev().map(|(_, w)| *w).collect();
    ws.len() >= 3
        && ws.len() <= 6
        && ws.contains(&"and")
        && ws
            .last()
            .is_some_and(|w| w.chars().next().is_some_and(char::is_uppercase))
        && ws
            .iter()
            .all(|w| *w == "and" || *w == "&" || w.chars().next().is_some_and(|c| c.is_uppercase()))
}

/// `(Twenty-one detained persons v. Germany, …)`: a name of lower-case words is taken only when it
/// opens a parenthesis or follows `;`, within five words.
fn lowercase_name_start(before: &str) -> Option<usize> {
    let mut end = before.len();
    for _ in 0..5 {
        let seg = before[..end].trim_end();
        if seg.is_empty() || seg.ends_with([',', '.', ':', ')']) {
            return None;
        }
        let s = seg.rfind(' ').map_or(0, |i| i + 1);
        let w = &seg[s..];
        looked_at(end - s);
        if let Some(rest) = w.strip_prefix('(') {
            return rest
                .chars()
                .next()
                .is_some_and(char::is_uppercase)
                .then_some(s + 1);
        }
        if before[..s].trim_end().ends_with(';') && w.chars().next().is_some_and(char::is_uppercase) {
            return Some(s);
        }
        if w.chars().any(|c| c.is_ascii_digit()) || s == 0 {
            return None;
        }
        end = s;
    }
    None
}

/// `Branko Tomaši ć and Others` → `Branko Tomašić and Others`: a lone lower-case letter with a
/// diacritic is the end of the word before it, split by a PDF text extractor.
fn join_split_letters(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, w) in name.split(' ').enumerate() {
        let lone = w.chars().count() == 1 && w.chars().all(|c| c.is_lowercase() && !c.is_ascii());
        if i > 0 && !lone {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// Characters that take no room on the page: zero width space, non-joiner and joiner (U+200B,
/// U+200C, U+200D), word joiner (U+2060) and the zero width no-break space, which is also the
/// byte-order mark (U+FEFF, at the start of a file, or of a later line where files saved with one
/// were joined). The citation reader reads text as it looks: they are not there (issue 54, item 6:
/// one glued onto the first word of a case name lost the citation). Read as nothing rather than as
/// a space, since they are invisible: `Assan\u{200b}idze` looks like, and is, `Assanidze`.
pub fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200b}' | '\u{200c}' | '\u{200d}' | '\u{2060}' | '\u{feff}')
}

/// Extracts the citations of one text (normally the text under one heading, whitespace collapsed):
/// the citations as printed (`direct`, case-level, `ibid`), then the bare pinpoints that refer to a
/// case named before them (`deferred`, `previous_sentence`), in text order.
///
/// A text holding zero-width characters ([`is_zero_width`]) is read without them (and its white
/// space collapsed, as [`extract_text`] does); offsets are still offsets in `text`.
pub fn extract(text: &str) -> Vec<Found> {
    if !text.contains(is_zero_width) {
        return read(text);
    }
    let squashed = Squashed::new(text);
    read(&squashed.text)
        .into_iter()
        .map(|f| squashed.found_in_original(f))
        .collect()
}

/// [`extract`] on text as the reader reads it.
fn read(text: &str) -> Vec<Found> {
    let mut out = printed(text);
    let bare = bare_pinpoints(text, &out);
    out.extend(bare);
    out.sort_by_key(|f| f.start);
    out
}

/// A text as the reader reads it: white space runs collapsed to one space, ends trimmed,
/// zero-width characters ([`is_zero_width`]) taken out; with, for each of its bytes, the offset
/// of that byte in the text as given.
struct Squashed {
    text: String,
    /// `map[i]`: the byte offset in the original of byte `i` of `text`.
    map: Vec<usize>,
    /// The original's length.
    len: usize,
}

impl Squashed {
    fn new(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut map: Vec<usize> = Vec::with_capacity(original.len());
        let mut pending_space = None;
        looked_at(original.len());
        for (i, c) in original.char_indices() {
            if is_zero_width(c) {
                continue;
            }
            if c.is_whitespace() {
                if !text.is_empty() && pending_space.is_none() {
                    pending_space = Some(i);
                }
                continue;
            }
            if let Some(at) = pending_space.take() {
                text.push(' ');
                map.push(at);
            }
            text.push(c);
            map.extend((0..c.len_utf8()).map(|k| i + k));
        }
        Squashed {
            text,
            map,
            len: original.len(),
        }
    }

    /// The offset in the original of byte `i` of the text (its end: the original's end).
    fn start_of(&self, i: usize) -> usize {
        self.map.get(i).copied().unwrap_or(self.len)
    }

    /// The offset in the original just past the character of the text that ends at `end`.
    fn end_of(&self, end: usize) -> usize {
        match self.text[..end].chars().next_back() {
            Some(c) => self.map[end - c.len_utf8()] + c.len_utf8(),
            None => 0,
        }
    }

    /// `f` with offsets in the original.
    fn found_in_original(&self, mut f: Found) -> Found {
        f.start = self.start_of(f.start);
        f.end = self.end_of(f.end);
        f
    }
}

/// A citation found in a text as given (not whitespace-collapsed): [`extract_text`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Located {
    /// The citation; its `start`/`end` are byte offsets in the text as given.
    pub found: Found,
    /// The 1-based line of the text where it starts.
    pub line: usize,
}

/// The citation reader on any text (a sentence, a paragraph, a guide body): whitespace runs are
/// collapsed as the guide parser does (so citations wrapping lines are whole), then offsets are
/// mapped back to the text as given, with the line where each citation starts.
///
/// Zero-width characters ([`is_zero_width`]) are not text: a byte-order mark at the very start, as
/// for every other reader of a user file ([`lexbench_core::text`]), but also one at the start of a
/// later line (files saved with one, joined by `cat`) and a zero width space anywhere; they never
/// glue onto a word (`\u{feff}Assanidze v. Georgia …` would lose its case name, and the citation
/// with it). Offsets still count their bytes.
pub fn extract_text(text: &str) -> Vec<Located> {
    let squashed = Squashed::new(text);
    // Lines are counted from the previous citation on ([`read`] returns them in text order), so
    // the count costs one pass over the text, not one per citation.
    let (mut line, mut counted) = (1, 0);
    read(&squashed.text)
        .into_iter()
        .map(|f| {
            let f = squashed.found_in_original(f);
            if f.start >= counted {
                line += text.as_bytes()[counted..f.start]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
            } else {
                line -= text.as_bytes()[f.start..counted]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
            }
            counted = f.start;
            Located { found: f, line }
        })
        .collect()
}

/// The citations printed as such: a case with its year, flags or pinpoint, and `ibid.`.
fn printed(text: &str) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let mut cursor = 0;
    // The last non-ibid citation so far (what an `ibid.` refers to), kept rather than searched for.
    let mut antecedent = None;
    // Candidate starts: every ` v. ` and every `ibid`, in text order.
    let mut anchors: Vec<(usize, bool)> = V_ANCHOR.find_iter(text).map(|m| (m.start(), false)).collect();
    anchors.extend(IBID.find_iter(text).map(|m| (m.start(), true)));
    anchors.sort_unstable();
    for (at, ibid) in anchors {
        if at < cursor {
            continue;
        }
        let found = if ibid {
            ibid_at(text, at, antecedent.map(|i: usize| &out[i].citation))
        } else {
            case_at(text, at)
        };
        if let Some(f) = found {
            cursor = f.end;
            if !f.is_ibid() {
                antecedent = Some(out.len());
            }
            out.push(f);
        }
    }
    out
}

/// The case name and flags of a citation whose ` v. ` is at `anchor`: (start, name, flags, end).
pub(crate) fn head(text: &str, anchor: usize) -> Option<(usize, String, CitationFlags, usize)> {
    let start = name_start(text, anchor)?;
    let after = anchor + " v. ".len();
    let resp = RESPONDENT
        .find(&text[after..])
        .or_else(|| MEMBER_STATES.find(&text[after..]))?;
    let mut p = after + resp.end();
    looked_at(resp.end() + anchor - start);
    let mut name = format!(
        "{} v. {}",
        join_split_letters(text[start..anchor].trim()),
        resp.as_str().trim()
    );
    // Joined cases: `Razvozzhayev v. Russia and Ukraine and Udaltsov v. Russia`; at most
    // [`MAX_JOINED`], so that text made of ` v. ` is not read again from each of them.
    let mut joined = 0;
    while joined < MAX_JOINED && text[p..].starts_with(" v. ") {
        joined += 1;
        let Some(more) = RESPONDENT.find(&text[p + 4..]) else {
            break;
        };
        name.push_str(" v. ");
        name.push_str(more.as_str().trim());
        p += 4 + more.end();
        looked_at(4 + more.end());
    }
    // Several respondents: `Saramati v. France, Germany and Norway (dec.) [GC], 2007`.
    if let Some(m) = RESPONDENT_LIST.find(&text[p..])
        && AFTER_LIST.is_match(&text[p + m.end()..])
    {
        name.push_str(m.as_str());
        p += m.end();
    }
    let mut flags = CitationFlags::default();
    loop {
        let rest = &text[p..];
        if let Some(m) = GC.find(rest) {
            flags.grand_chamber = true;
            p += m.end();
        } else if let Some(m) = DEC.find(rest) {
            flags.decision = true;
            p += m.end();
        } else if let Some(m) = QUALIFIER.find(rest) {
            name.push(' ');
            name.push_str(m.as_str().trim());
            p += m.end();
        } else {
            break;
        }
    }
    Some((start, name, flags, p))
}

fn case_at(text: &str, anchor: usize) -> Option<Found> {
    let (start, name, flags, mut p) = head(text, anchor)?;
    let mut year = None;
    if let Some(c) = YEAR.captures(&text[p..]) {
        year = c[1].parse().ok();
        p += c[0].len();
    }
    if let Some(m) = APPNOS.find(&text[p..]) {
        p += m.end();
    }
    let mut flags = flags;
    // `X. v. Germany, Commission decision of 25 September 1965` / `…, Commission report, 1976`.
    if let Some(c) = COMMISSION.captures(&text[p..]) {
        flags.commission = true;
        flags.decision |= c[1].eq_ignore_ascii_case("decision");
        if let Some(y) = c.get(2).or_else(|| c.get(3)) {
            year = year.or_else(|| y.as_str().parse().ok());
        }
        p += c[0].len();
        if let Some(m) = DR.find(&text[p..]) {
            p += m.end();
        }
    } else if let Some(c) = COMMISSION_PAREN.captures(&text[p..]) {
        flags.commission = true;
        flags.decision |= c[1].eq_ignore_ascii_case("decision");
        year = year.or_else(|| c[2].parse().ok());
        p += c[0].len();
    }
    let mut paragraphs = Vec::new();
    let mut unreadable_pinpoint = false;
    if let Some(m) = SECTION.find(&text[p..]) {
        let pin = pinpoint(&text[p + m.end()..]);
        if !pin.paragraphs.is_empty() || pin.unreadable {
            paragraphs = pin.paragraphs;
            unreadable_pinpoint = pin.unreadable;
            p += m.end() + pin.used;
        }
    }
    if year.is_none()
        && paragraphs.is_empty()
        && !unreadable_pinpoint
        && !flags.grand_chamber
        && !flags.decision
        && !flags.commission
    {
        return None;
    }
    let raw = text[start..p].trim_end_matches([',', ' ']).to_owned();
    let end = start + raw.len();
    Some(Found {
        case_level_only: paragraphs.is_empty(),
        unreadable_pinpoint,
        citation: Citation {
            raw,
            case_name: name,
            year,
            flags,
            paragraphs,
            resolved: None,
            how: None,
            read: ReadKind::Direct,
        },
        start,
        end,
    })
}

/// An `ibid.` at `at`, referring to `antecedent` (the previous non-ibid citation, if any).
fn ibid_at(text: &str, at: usize, antecedent: Option<&Citation>) -> Option<Found> {
    let m = IBID.find(&text[at..])?;
    let mut p = at + m.end();
    let mut paragraphs = Vec::new();
    let mut unreadable_pinpoint = false;
    if let Some(s) = SECTION.find(&text[p..]) {
        let pin = pinpoint(&text[p + s.end()..]);
        if !pin.paragraphs.is_empty() || pin.unreadable {
            paragraphs = pin.paragraphs;
            unreadable_pinpoint = pin.unreadable;
            p += s.end() + pin.used;
        }
    }
    Some(Found {
        case_level_only: paragraphs.is_empty(),
        unreadable_pinpoint,
        citation: Citation {
            raw: text[at..p].to_owned(),
            case_name: antecedent.map(|c| c.case_name.clone()).unwrap_or_default(),
            year: antecedent.and_then(|c| c.year),
            flags: antecedent.map(|c| c.flags).unwrap_or_default(),
            paragraphs,
            resolved: None,
            how: None,
            read: ReadKind::Ibid,
        },
        start: at,
        end: p,
    })
}

/// `(§ 116)`, `(§§ 83-89)`, `(see § 37)`: a pinpoint in parentheses with no case of its own.
static BARE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\((?:see(?:\s+also)?,?\s+)?§§?\s*").expect("static regex"));
/// What may close a bare pinpoint: the parenthesis, or words saying what the paragraphs are about
/// (`(see also §§ 44-54 regarding the application of …)`), never `above` / `below`.
static BARE_CLOSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:(?:,?\s*and the cases cited therein\s*)?[);]|,?\s+(?:regarding|concerning|as regards|on the|with regard to|in respect of)\s[^()]*\))",
    )
    .expect("static regex")
});
/// `the Rowe and Davis judgment`, `In the Al-Nashiri case`: a case called by a short name.
static SHORT_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:the|In|in)\s+(\p{Lu}[\p{L}\p{M}’'\-]*(?:\s+(?:and\s+)?\p{Lu}[\p{L}\p{M}’'\-]*){0,3})\s+(?:judgment|case|decision)\b",
    )
    .expect("static regex")
});
/// Words before a period that do not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "v", "no", "No", "nos", "Nos", "dec", "cf", "ibid", "Ibid", "Art", "p", "pp", "para", "paras", "seq",
    "al", "Mr", "Mrs", "Ms", "Dr", "St", "Inc", "Ltd", "vol", "op", "cit", "Co", "approx",
];

/// A case named in the text: a citation of [`printed`] or a bare mention (`In Z.B. v. France the …`).
struct Mention {
    end: usize,
    name: String,
    /// The applicant part of `name`, lower-cased ([`applicant_of`]), made once.
    applicant: String,
    year: Option<u16>,
    flags: CitationFlags,
    /// Can a later bare pinpoint refer to it? Not when it is a supporting reference: inside
    /// parentheses after other words (`(see, inter alia, Dvorski v. Croatia [GC], § 81)`,
    /// `(cf. Guzzardi v. Italy, 1980)`) or with its own pinpoint inside parentheses.
    antecedent: bool,
}

/// Byte offsets where a sentence starts (after `. ` and before a capital, a digit or a parenthesis,
/// unless the word before the period is an abbreviation or an initial).
fn sentence_starts(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices('.') {
        let after = &text[i + 1..];
        if !after.starts_with(' ') {
            continue;
        }
        let next = after.trim_start();
        if !next.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit() || c == '(' || c == '“') {
            continue;
        }
        let word = text[..i].rsplit(' ').next().unwrap_or("");
        looked_at(word.len());
        let word = word.trim_start_matches(['(', '“', '"']);
        let initial = word.chars().count() <= 2 && word.chars().next().is_some_and(char::is_uppercase);
        if ABBREVIATIONS.contains(&word) || initial || word.contains('.') {
            continue;
        }
        out.push(text.len() - next.len());
    }
    out
}

/// The sentence holding `pos`: the last of `starts` (in text order) at or before it, else 0.
fn sentence_of(starts: &[usize], pos: usize) -> usize {
    match starts.partition_point(|&b| b <= pos) {
        0 => 0,
        i => starts[i - 1],
    }
}

/// The byte offset of the parenthesis open at a position within its sentence, if any, for
/// positions met in text order: the parentheses still open are kept from one call to the next (and
/// dropped when the sentence changes), in one pass over the text instead of a scan back to the
/// sentence's start per call, which made a long sentence with many cases (a list of cited cases)
/// quadratic.
///
/// A position may also step back (a name that reaches back over a parenthesis: `(A v. B) C v. D`
/// starts before the mention inside it): the innermost open parenthesis after each parenthesis of
/// the sentence scanned so far is kept, and looked up, rather than the sentence scanned again from
/// its start (which was quadratic on text made of such names, issue 54).
#[derive(Default)]
struct OpenParens {
    sentence: usize,
    scanned: usize,
    open: Vec<usize>,
    /// For each `(` or `)` of the sentence before `scanned`, in order: its offset and the innermost
    /// parenthesis open after it ([`usize::MAX`]: none).
    after: Vec<(usize, usize)>,
}

impl OpenParens {
    fn at(&mut self, text: &str, sentence: usize, pos: usize) -> Option<usize> {
        if sentence != self.sentence || self.scanned < sentence {
            // Another sentence: start again from its start.
            *self = OpenParens {
                sentence,
                scanned: sentence,
                ..OpenParens::default()
            };
        }
        if pos < self.scanned {
            // A step back within the part of the sentence already scanned.
            let i = self.after.partition_point(|&(at, _)| at < pos);
            looked_at(usize::BITS as usize - i.leading_zeros() as usize);
            return i
                .checked_sub(1)
                .map(|i| self.after[i].1)
                .filter(|&open| open != usize::MAX);
        }
        // Parentheses are ASCII, so bytes are characters here; a `)` closes the innermost open `(`
        // (one with none open is ignored).
        looked_at(pos - self.scanned);
        for (i, b) in text.as_bytes()[self.scanned..pos].iter().enumerate() {
            match b {
                b'(' => self.open.push(self.scanned + i),
                b')' => {
                    self.open.pop();
                }
                _ => continue,
            }
            let top = self.open.last().copied().unwrap_or(usize::MAX);
            self.after.push((self.scanned + i, top));
        }
        self.scanned = pos;
        self.open.last().copied()
    }
}

/// Are the offsets `key` gives non-decreasing through `items`? The one-pass lookups below rely on
/// it (it holds for what [`printed`] and [`mentions`] return: each starts where the one before
/// ended); where it does not, they search as before.
fn in_order<T>(items: &[T], key: impl Fn(&T) -> usize) -> bool {
    items.windows(2).all(|w| key(&w[0]) <= key(&w[1]))
}

fn mentions(text: &str, found: &[Found], starts: &[usize]) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    // The printed case citation holding an anchor: the cases' starts and ends increase (a name never
    // reaches back over an earlier ` v. `), so the first one ending after the anchor is the only
    // candidate, and a pointer that only moves forward finds it.
    let cases: Vec<&Found> = found.iter().filter(|f| !f.is_ibid()).collect();
    let sorted = in_order(&cases, |f| f.start) && in_order(&cases, |f| f.end);
    let mut next_case = 0;
    let mut parens = OpenParens::default();
    for m in V_ANCHOR.find_iter(text) {
        let at = m.start();
        if out.last().is_some_and(|p| at < p.end) {
            continue;
        }
        let printed = if sorted {
            while cases.get(next_case).is_some_and(|f| f.end <= at) {
                next_case += 1;
            }
            cases.get(next_case).copied().filter(|f| f.start <= at)
        } else {
            cases.iter().copied().find(|f| f.start <= at && at < f.end)
        };
        let (start, end, name, year, flags, pinpoint) = match printed {
            Some(f) => (
                f.start,
                f.end,
                f.citation.case_name.clone(),
                f.citation.year,
                f.citation.flags,
                !f.case_level_only,
            ),
            None => {
                let Some((start, name, flags, end)) = head(text, at) else {
                    continue;
                };
                (start, end, name, None, flags, false)
            }
        };
        looked_at(name.len());
        let sentence = sentence_of(starts, start);
        let supporting = parens
            .at(text, sentence, start)
            .is_some_and(|open| pinpoint || !text[open + 1..start].trim().is_empty());
        out.push(Mention {
            end,
            applicant: applicant_of(&name),
            name,
            year,
            flags,
            antecedent: !supporting,
        });
    }
    out
}

/// The applicant part of a case name, lower-cased: `rowe and davis` for `Rowe and Davis v. the
/// United Kingdom`.
fn applicant_of(name: &str) -> String {
    looked_at(name.len());
    name.split(" v. ").next().unwrap_or("").to_lowercase()
}

/// Does a short name (lower-cased) give the first words of an applicant ([`applicant_of`])?
fn applicant_starts_with(applicant: &str, short: &str) -> bool {
    looked_at(short.len());
    applicant
        .strip_prefix(short)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
}

/// The most spaces a short name has in collapsed text: four names joined by `and`
/// ([`SHORT_REF`]).
const SHORT_SPACES: usize = 6;

/// The first mention whose applicant starts with a given short name, found through an index of
/// the mentions' applicants by their first words (up to [`SHORT_SPACES`] + 1 of them) made once,
/// instead of a search through all the mentions per short name (quadratic on text made of short
/// names, issue 54).
struct ByShortName<'a> {
    named: &'a [Mention],
    first: Option<std::collections::HashMap<&'a str, usize>>,
}

impl<'a> ByShortName<'a> {
    fn new(named: &'a [Mention]) -> Self {
        ByShortName { named, first: None }
    }

    /// `named.iter().find(|c| applicant_starts_with(&c.applicant, short))`.
    fn find(&mut self, short: &str) -> Option<&'a Mention> {
        let named = self.named;
        if short.matches(' ').count() > SHORT_SPACES {
            // Never in collapsed text: the search itself.
            looked_at(named.len());
            return named.iter().find(|c| applicant_starts_with(&c.applicant, short));
        }
        let first = self.first.get_or_insert_with(|| {
            let mut first = std::collections::HashMap::new();
            for (i, c) in named.iter().enumerate() {
                let a = c.applicant.as_str();
                let spaces = a.match_indices(' ').map(|(at, _)| at).take(SHORT_SPACES + 1);
                for end in spaces.chain([a.len()]) {
                    looked_at(end);
                    first.entry(&a[..end]).or_insert(i);
                }
            }
            first
        });
        looked_at(short.len());
        first.get(short).map(|&i| &named[i])
    }
}

/// The last short name (`the Rowe and Davis judgment`: `Rowe and Davis`) in `text[from..to]`, for
/// windows met in text order, each `to` the `(` of a bare pinpoint: a window that starts where the
/// previous one started is searched only from where that one ended, instead of from its start
/// again (quadratic on a sentence of bare pinpoints, issue 54). The result is the same, as a short
/// name holds no parenthesis and so never spans a previous window's end.
#[derive(Default)]
struct LastShortRef {
    from: usize,
    to: usize,
    /// The byte range of the last short name found in `text[from..to]`.
    last: Option<(usize, usize)>,
}

impl LastShortRef {
    fn in_window<'t>(&mut self, text: &'t str, from: usize, to: usize) -> Option<&'t str> {
        if from != self.from || to < self.to || self.to < from {
            *self = LastShortRef {
                from,
                to: from,
                last: None,
            };
        }
        looked_at(to - self.to);
        if let Some(g) = SHORT_REF
            .captures_iter(&text[self.to..to])
            .last()
            .and_then(|c| c.get(1))
        {
            self.last = Some((self.to + g.start(), self.to + g.end()));
        }
        self.to = to;
        self.last.map(|(s, e)| &text[s..e])
    }
}

/// Bare pinpoints tied to the case named before them: in the same sentence (`deferred`) or in an
/// earlier one that no other case followed (`previous_sentence`). A short name between the case and
/// the pinpoint (`the Rowe and Davis judgment (§§ 60-62)`) picks the case of that name, or nothing.
fn bare_pinpoints(text: &str, found: &[Found]) -> Vec<Found> {
    let starts = sentence_starts(text);
    let named = mentions(text, found, &starts);
    // Bare pinpoints come in text order, and the ends of `found` and of `named` do not decrease, so
    // each lookup below moves a pointer forward instead of searching the whole list (which made the
    // reader quadratic in the length of the text).
    let found_sorted = in_order(found, |f| f.end);
    // The smallest start of `found[i..]`: does a citation ending after `open` start before it?
    let mut min_start_from = vec![usize::MAX; found.len() + 1];
    for (i, f) in found.iter().enumerate().rev() {
        min_start_from[i] = min_start_from[i + 1].min(f.start);
    }
    let mut next_found = 0;
    let named_sorted = in_order(&named, |c| c.end);
    let (mut named_seen, mut last_antecedent) = (0, None);
    let mut by_short_name = ByShortName::new(&named);
    let mut short_refs = LastShortRef::default();
    let mut out = Vec::new();
    for m in BARE.find_iter(text) {
        let open = m.start();
        let inside_printed = if found_sorted {
            while found.get(next_found).is_some_and(|f| f.end <= open) {
                next_found += 1;
            }
            min_start_from[next_found] <= open + 1
        } else {
            found.iter().any(|f| f.start <= open + 1 && open < f.end)
        };
        if inside_printed {
            continue;
        }
        let (paragraphs, used) = paragraph_list(&text[m.end()..]);
        let close = m.end() + used;
        if paragraphs.is_empty() || !BARE_CLOSE.is_match(&text[close..]) {
            continue;
        }
        let antecedent = if named_sorted {
            while named.get(named_seen).is_some_and(|c| c.end <= open) {
                if named[named_seen].antecedent {
                    last_antecedent = Some(&named[named_seen]);
                }
                named_seen += 1;
            }
            last_antecedent
        } else {
            named.iter().rev().find(|c| c.end <= open && c.antecedent)
        };
        let Some(mut antecedent) = antecedent else {
            continue;
        };
        // A short name in an earlier sentence is a comparison in passing (`As in the Al-Skeini
        // judgment, …`); only one in the pinpoint's own sentence names its case.
        let sentence = sentence_of(&starts, open);
        let from = antecedent.end.max(sentence);
        if let Some(short) = short_refs
            .in_window(text, from, open)
            .filter(|short| !short.split(' ').any(|w| NAME_STOP.contains(&w) || w == "Grand"))
            .map(str::to_lowercase)
            && !applicant_starts_with(&antecedent.applicant, &short)
        {
            match by_short_name.find(&short) {
                Some(c) => antecedent = c,
                None => continue,
            }
        }
        // A sentence starts in (antecedent.end, open].
        let later = starts.partition_point(|&b| b <= open) > starts.partition_point(|&b| b <= antecedent.end);
        let read = if later {
            ReadKind::PreviousSentence
        } else if antecedent.end <= open && text[antecedent.end..open].trim().is_empty() {
            // `Al-Skeini and Others v. the United Kingdom [GC], 2011 (§§ 133-140)`: printed with it.
            ReadKind::Direct
        } else {
            ReadKind::Deferred
        };
        out.push(Found {
            citation: Citation {
                raw: text[open + 1..close].trim().to_owned(),
                case_name: antecedent.name.clone(),
                year: antecedent.year,
                flags: antecedent.flags,
                paragraphs,
                resolved: None,
                how: None,
                read,
            },
            start: open + 1,
            end: close,
            case_level_only: false,
            unreadable_pinpoint: false,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    //! Properties: every citation form of DATA.md §2, each on a real sentence of the fixtures
    //! (whitespace collapsed, as the parser sees it): flags in either order and `(dec)` without a
    //! period, ranges, abbreviated ranges, lists, `in fine`, `ibid.` with its antecedent, `;`
    //! separators, a citation that wrapped a line, case-level citations, and dates that are not
    //! paragraphs.
    use super::*;

    fn one(text: &str) -> Found {
        let all = extract(text);
        assert_eq!(all.len(), 1, "{all:#?}");
        all.into_iter().next().unwrap()
    }

    #[test]
    fn range_gc() {
        // guide_art_1_eng page 9.
        let f = one("with the Convention. (Assanidze v. Georgia [GC], 2004, §§ 146-147). In short,");
        assert_eq!(f.citation.case_name, "Assanidze v. Georgia");
        assert_eq!(f.citation.year, Some(2004));
        assert!(f.citation.flags.grand_chamber && !f.citation.flags.decision);
        assert_eq!(f.citation.paragraphs, [146, 147]);
        assert_eq!(f.citation.raw, "Assanidze v. Georgia [GC], 2004, §§ 146-147");
    }

    #[test]
    fn dec_then_gc_list_and_also() {
        // guide_art_1_eng page 9-10.
        let all = extract(
            "each case (Banković and Others v. Belgium and Others (dec.) [GC], 2001, §§ 61, 67, 71, also Catan and Others v. the Republic of Moldova and Russia [GC], 2012, § 104, and the references therein).",
        );
        assert_eq!(all.len(), 2);
        let b = &all[0].citation;
        assert_eq!(b.case_name, "Banković and Others v. Belgium and Others");
        assert!(b.flags.grand_chamber && b.flags.decision);
        assert_eq!(b.paragraphs, [61, 67, 71]);
        let c = &all[1].citation;
        assert_eq!(
            c.case_name,
            "Catan and Others v. the Republic of Moldova and Russia"
        );
        assert_eq!(c.paragraphs, [104]);
    }

    #[test]
    fn gc_then_dec_without_period() {
        // guide_art_1_eng page 7.
        let f = one(
            "respondent Government (Ukraine and the Netherlands v. Russia [GC] (dec), 2022, § 507). In any event",
        );
        assert!(f.citation.flags.grand_chamber && f.citation.flags.decision);
        assert_eq!(f.citation.case_name, "Ukraine and the Netherlands v. Russia");
        assert_eq!(f.citation.paragraphs, [507]);
    }

    #[test]
    fn qualifier_then_flags() {
        // guide_art_1_eng page 7.
        let f = one("place (Ukraine v. Russia (re Crimea) [GC] (dec.), 2020, § 264; more");
        assert_eq!(f.citation.case_name, "Ukraine v. Russia (re Crimea)");
        assert!(f.citation.flags.grand_chamber && f.citation.flags.decision);
    }

    #[test]
    fn semicolon_separated_and_no_space_after_comma() {
        // guide_art_1_eng page 7.
        let all = extract(
            "grounds (Stephens v. Malta (no. 1),2009, § 45; Vasiliciuc v. Republic of Moldova, 2017, § 22; Veronica Ciobanu v. Republic of Moldova, 2021, § 25).",
        );
        let got: Vec<(&str, Vec<u32>)> = all
            .iter()
            .map(|f| (f.citation.case_name.as_str(), f.citation.paragraphs.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("Stephens v. Malta (no. 1)", vec![45]),
                ("Vasiliciuc v. Republic of Moldova", vec![22]),
                ("Veronica Ciobanu v. Republic of Moldova", vec![25])
            ]
        );
        assert_eq!(all[0].citation.year, Some(2009));
    }

    #[test]
    fn ibid_refers_back() {
        // guide_art_1_eng page 9.
        let all = extract(
            "(Assanidze v. Georgia [GC], 2004, §§ 146-147). In short, … over internal politics (ibid., § 149).",
        );
        assert_eq!(all.len(), 2);
        assert!(all[1].is_ibid());
        assert_eq!(all[1].citation.case_name, "Assanidze v. Georgia");
        assert_eq!(all[1].citation.paragraphs, [149]);
        assert_eq!(all[1].citation.raw, "ibid., § 149");
        // Art 2 pages: "(Ibid, § 80)" without a period, and an ibid without antecedent.
        let lone = extract("was particularly vulnerable (Ibid, § 80).");
        assert_eq!(lone[0].citation.paragraphs, [80]);
        assert_eq!(lone[0].citation.case_name, "");
    }

    #[test]
    fn abbreviated_range_in_fine_and_therein() {
        // guide_art_1_eng page 13 (the citation wraps: "Rantsev" ends one line, "v. Cyprus" starts the next).
        let text = super::super::text::squash(
            "according to the principles developed in Rantsev \nv. Cyprus and Russia, 2010, §§ 243-44. However, the Court",
        );
        let f = one(&text);
        assert_eq!(f.citation.case_name, "Rantsev v. Cyprus and Russia");
        assert_eq!(f.citation.paragraphs, [243, 244]);
        // Art 2 paragraphs CSV: "§§ 123-26" in a list of examples separated by `;`.
        let all = extract(
            "social re-integration schemes: Maiorano and Others v. Italy, 2009, §§ 123-26; concerning high-profile",
        );
        assert_eq!(all[0].citation.paragraphs, [123, 124, 125, 126]);
        // `in fine` does not occur in the fixtures; DATA.md §2's example form.
        assert_eq!(paragraph_list("34 in fine and 35-36)").0, [34, 35, 36]);
        assert_eq!(
            one("(X v. Y, 2000, §§ 34 in fine and 35-36)").citation.paragraphs,
            [34, 35, 36]
        );
        // Art 2 page 8: "§ 84 and the cases cited therein".
        let f = one("(Kotilainen and Others v. Finland, 2020, § 84 and the cases cited therein).");
        assert_eq!(f.citation.paragraphs, [84]);
        assert!(f.citation.raw.ends_with("§ 84"));
        // Terrorism page 9: "§§ 23-24 ;" with a space before the semicolon.
        let all = extract(
            "(Vasiliciuc v. Republic of Moldova, 2017, §§ 23-24 ; Stephens v. Malta (no. 1), 2009, §§ 51-54).",
        );
        assert_eq!(all[0].citation.paragraphs, [23, 24]);
        assert_eq!(all[1].citation.paragraphs, [51, 52, 53, 54]);
    }

    #[test]
    fn wrapped_line_and_section_sign_at_line_start() {
        // guide_art_1_eng page 7, lines joined as the parser joins them.
        let text =
            super::super::text::squash("(Ukraine and the Netherlands v. Russia [GC] (dec),  2022, \n§ 507).");
        assert_eq!(one(&text).citation.paragraphs, [507]);
        let text = super::super::text::squash(
            "(Ilaşcu and Others v. Moldova and Russia [GC], 2004, \n§ 318; Solomou and Others v. Turkey, 2008, § 46).",
        );
        let all = extract(&text);
        assert_eq!(
            all[0].citation.case_name,
            "Ilaşcu and Others v. Moldova and Russia"
        );
        assert_eq!(all[0].citation.paragraphs, [318]);
        assert_eq!(all[1].citation.case_name, "Solomou and Others v. Turkey");
    }

    #[test]
    fn case_level_and_dates_and_mentions() {
        // guide_art_1_eng page 6: a decision cited without paragraphs.
        let f = &extract(
            "(see, for example, Slovenia v. Croatia (dec.) [GC], 2020, or Svetova and Others v. Russia, 2023, §§ 23-28).",
        )[0];
        assert_eq!(f.citation.case_name, "Slovenia v. Croatia");
        assert!(f.case_level_only);
        // Note to readers: a date after the paragraph is not a paragraph.
        let f = one("Parties (Ireland v. the United Kingdom, § 154, 18 January 1978, Series A no. 25).");
        assert_eq!(f.citation.paragraphs, [154]);
        // Terrorism page 22: a bare mention is not a citation.
        assert!(extract("another similar French case, Z.B. v. France. In 2012, 11 years after").is_empty());
        // Terrorism pages: a previous sentence's end is not part of the name.
        let all = extract("(ibid., §§ 88-92). In Mirzoyan v. Armenia, 2019, the Court");
        assert_eq!(all[1].citation.case_name, "Mirzoyan v. Armenia");
        let all = extract("of Iraq. 136. In the Al-Jedda v. the United Kingdom [GC], 2011, § 84");
        assert_eq!(all[0].citation.case_name, "Al-Jedda v. the United Kingdom");
        // A parenthesis inside the name, and joined cases with two `v.`.
        let f = one(
            "(see, mutatis mutandis, Refah Partisi (the Welfare Party) and Others v. Turkey [GC], 2003, § 96).",
        );
        assert_eq!(
            f.citation.case_name,
            "Refah Partisi (the Welfare Party) and Others v. Turkey"
        );
        let f = one("territories (Razvozzhayev v. Russia and Ukraine and Udaltsov v. Russia, 2019, § 160).");
        assert_eq!(
            f.citation.case_name,
            "Razvozzhayev v. Russia and Ukraine and Udaltsov v. Russia"
        );
        // "In the case of X v. Y": leading words are not part of the name.
        let f = one("In the case of Rouillan v. France, 2022, the applicant");
        assert_eq!(f.citation.case_name, "Rouillan v. France");
    }
    fn labels(all: &[Found]) -> Vec<(String, Vec<u32>, ReadKind)> {
        all.iter()
            .filter(|f| !f.case_level_only)
            .map(|f| {
                (
                    f.citation.case_name.clone(),
                    f.citation.paragraphs.clone(),
                    f.read(),
                )
            })
            .collect()
    }

    #[test]
    fn deferred_and_previous_sentence_pinpoints() {
        // The issue's form: the case early in the sentence, its paragraphs later, alone.
        let all =
            extract("In Siliadin v. France, 2005, the Court considered that … was at stake (§§ 126-127).");
        assert_eq!(
            labels(&all),
            [(
                "Siliadin v. France".to_owned(),
                vec![126, 127],
                ReadKind::Deferred
            )]
        );
        assert_eq!(
            all.iter().find(|f| !f.case_level_only).unwrap().citation.year,
            Some(2005)
        );
        // Terrorism guide § 77 (shortened): a supporting reference with its own pinpoint in
        // parentheses is not the antecedent; the case the paragraph is about is.
        let text = "77. In the case of Atristain Gorosabel v. Spain, 2022, the authorities had held the applicant \
            incommunicado. The Court noted that … “denial of choice” (see, inter alia, Dvorski v. Croatia [GC], § 81). \
            In the present case, it noted that … at all (§§ 58-63). It also noted that …";
        let got = labels(&extract(text));
        assert_eq!(
            got[0],
            ("Dvorski v. Croatia".to_owned(), vec![81], ReadKind::Direct)
        );
        assert_eq!(
            got[1],
            (
                "Atristain Gorosabel v. Spain".to_owned(),
                (58..=63).collect(),
                ReadKind::PreviousSentence
            )
        );
        // The issue's form: a case-level citation in parentheses, the pinpoint a sentence later; a
        // `(cf. …)` reference is supporting, so the pinpoint keeps the earlier case.
        let got = labels(&extract(
            "The Court examined the ban (Chitos v. Greece, 2015). It further found support for it (§§ 83-89).",
        ));
        assert_eq!(
            got,
            [(
                "Chitos v. Greece".to_owned(),
                (83..=89).collect(),
                ReadKind::PreviousSentence
            )]
        );
        let got = labels(&extract(
            "81. In Pagerie v. France, 2023, the Court (cf. Guzzardi v. Italy, 1980) found … (§§ 153-160).",
        ));
        assert_eq!(got[0].0, "Pagerie v. France");
        // Right after the citation, in parentheses: printed with it.
        let got = labels(&extract(
            "as defined in Al-Skeini and Others v. the United Kingdom [GC], 2011 (§§ 133-134), …",
        ));
        assert_eq!(got[0].2, ReadKind::Direct);
        // `Article 5 § 1` is no pinpoint, and a bare pinpoint with no case before it gives nothing.
        assert!(
            labels(&extract(
                "under Articles 2, 3 and 5 § 1 of the Convention (§ 12)."
            ))
            .is_empty()
        );
    }

    #[test]
    fn a_short_name_picks_its_case_or_nothing() {
        // Terrorism guide § 72: `the Rowe and Davis judgment (§§ 60-62)`.
        let text = "(Rowe and Davis v. the United Kingdom [GC], 2000, § 61). In Smith v. Malta, 2001, the Court \
            held … 72. The principles, as set out in the Rowe and Davis judgment (§§ 60-62), also apply.";
        let got = labels(&extract(text));
        assert_eq!(
            got.last().unwrap(),
            &(
                "Rowe and Davis v. the United Kingdom".to_owned(),
                vec![60, 61, 62],
                ReadKind::PreviousSentence
            )
        );
        // A short name that names no case of the text: no label rather than a wrong one.
        let got = labels(&extract(
            "In Smith v. Malta, 2001, the Court held … as in the Jones judgment (§ 5).",
        ));
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn names_with_commas_initials_and_commission_texts() {
        let f = one("(De Wilde, Ooms and Versyp v. Belgium, 1971, § 65)");
        assert_eq!(f.citation.case_name, "De Wilde, Ooms and Versyp v. Belgium");
        // guide_art_1_eng: a comma list of names after `the case of`.
        let f = one("was in the case of Gentilhomme, Schaff-Benhadji and Zerouki v. France, 2002. The");
        assert_eq!(
            f.citation.case_name,
            "Gentilhomme, Schaff-Benhadji and Zerouki v. France"
        );
        // Words of the sentence before the name stay out of it.
        let f = one("the rights guaranteed by the Convention and N.C. v. Turkey, 2011, § 12");
        assert_eq!(f.citation.case_name, "N.C. v. Turkey");
        // Terrorism guide: a company name with `&` and a dash.
        let f =
            one("(Sérvulo & Associados – Sociedade de Advogados, RL and Others v. Portugal, 2015, are all");
        assert_eq!(
            f.citation.case_name,
            "Sérvulo & Associados – Sociedade de Advogados, RL and Others v. Portugal"
        );
        // guide_art_1_eng: Commission decisions, year from the date or after a comma.
        let f = one("(X. v. Germany, Commission decision of 25 September 1965). Even if");
        assert_eq!(f.citation.case_name, "X. v. Germany");
        assert_eq!(f.citation.year, Some(1965));
        assert!(f.citation.flags.commission && f.citation.flags.decision && f.case_level_only);
        let f = one("(Cyprus v. Turkey, Commission decision, 1975, (D.R.) 2, p. 32)");
        assert_eq!(f.citation.year, Some(1975));
        let f = one("(Twenty-one detained persons v. Germany, Commission decision, 1968)");
        assert_eq!(f.citation.case_name, "Twenty-one detained persons v. Germany");
        let f = one("(Johansen v. Norway, Commission report, 1985)");
        assert!(f.citation.flags.commission && !f.citation.flags.decision);
        // A lower-case name is taken only at a parenthesis or after `;`.
        assert!(extract("the applicants in these detained persons v. Germany, 1968").is_empty());
        // Art 2 pages: a PDF extractor split `Tomašić`.
        let all = extract(
            "( Osman v. the United Kingdom , 1998, § 115; Branko Tomaši ć and Others v. Croatia , 2009, § 50)",
        );
        assert_eq!(all[0].citation.case_name, "Osman v. the United Kingdom");
        assert_eq!(all[1].citation.case_name, "Branko Tomašić and Others v. Croatia");
    }

    /// Issue 29, item 8: `lexbench parse citations` on a file saved with a byte-order mark lost its
    /// first citation (the mark glued onto the first word of the case name).
    #[test]
    fn a_leading_byte_order_mark_is_not_text() {
        let text = "\u{feff}Assanidze v. Georgia [GC], 2004, §§ 146-147. Then (ibid., § 149).";
        let got = extract_text(text);
        assert_eq!(got.len(), 2, "{got:#?}");
        let f = &got[0].found;
        assert_eq!(f.citation.case_name, "Assanidze v. Georgia");
        assert_eq!(f.citation.paragraphs, [146, 147]);
        // Offsets count the mark's three bytes: they are offsets in the input as given.
        assert_eq!(f.start, 3);
        assert_eq!(
            &text[f.start..f.end],
            "Assanidze v. Georgia [GC], 2004, §§ 146-147"
        );
        assert_eq!(got[1].found.citation.case_name, "Assanidze v. Georgia");
        // A mark alone is no text (marks elsewhere: `zero_width_characters_are_not_text`).
        assert_eq!(extract_text("\u{feff}").len(), 0);
    }

    /// Issue 29, item 9: numbers were cut to four digits (`§ 12345` → 1234, `§§ 1-999999999` →
    /// 1, 9999). Now a number is read whole; outside 1..=9999, or in a range that does not go up or
    /// spans more than 500 paragraphs, the pinpoint is unreadable: the citation keeps its case, year
    /// and flags and the pinpoint in `raw`, gets no paragraphs, and is marked.
    #[test]
    fn numbers_are_read_whole_and_out_of_range_pinpoints_give_no_paragraphs() {
        for (pin, raw_pin) in [
            ("§ 12345", "§ 12345"),
            ("§§ 1-999999999", "§§ 1-999999999"),
            ("§§ 12, 13 and 12345", "§§ 12, 13 and 12345"),
            ("§§ 40-30", "§§ 40-30"),
            ("§§ 1-600", "§§ 1-600"),
            ("§ 0", "§ 0"),
            ("§ 99999999999999999999999", "§ 99999999999999999999999"),
        ] {
            let f = one(&format!("(Smith v. Malta [GC], 2001, {pin}). Then"));
            assert!(f.unreadable_pinpoint && f.case_level_only, "{pin}: {f:#?}");
            assert!(f.citation.paragraphs.is_empty(), "{pin}: {f:#?}");
            assert_eq!(f.citation.raw, format!("Smith v. Malta [GC], 2001, {raw_pin}"));
            assert_eq!(f.citation.year, Some(2001));
            assert!(f.citation.flags.grand_chamber);
        }
        // The limits themselves are readable.
        assert_eq!(paragraph_list("9999").0, [9999]);
        assert_eq!(paragraph_list("1-501").0.len(), 501);
        assert!(pinpoint("1-502").unreadable);
        assert!(pinpoint("10000").unreadable);
        assert_eq!(pinpoint("10000, 3").used, "10000, 3".len());
        // Abbreviated ranges are unchanged; one whose end stays below its start is unreadable.
        assert_eq!(paragraph_list("243-44").0, [243, 244]);
        assert!(pinpoint("243-41").unreadable);
        // A case with no year or flag but an unreadable pinpoint is still a citation.
        let f = one("(Smith v. Malta, § 12345)");
        assert!(f.unreadable_pinpoint && f.citation.paragraphs.is_empty());
        // `ibid.` with an unreadable pinpoint keeps its antecedent, without paragraphs.
        let all = extract("(Smith v. Malta, 2001, § 3). Then (ibid., § 12345).");
        assert_eq!(all[1].citation.case_name, "Smith v. Malta");
        assert!(all[1].unreadable_pinpoint && all[1].citation.paragraphs.is_empty());
        // A bare pinpoint that cannot be read is no citation.
        let all = extract("In Smith v. Malta, 2001, the Court held … (§§ 1-999999999).");
        assert!(all.iter().all(|f| f.citation.paragraphs.is_empty()), "{all:#?}");
        // The guide parser warns, naming the citation.
        let text = "Guide on Article 9 of the Convention – Freedom\n\u{c}Guide on Article 9 of the Convention – Freedom\nTable of contents\nI.  Scope ........ 3\n\u{c}Guide on Article 9 of the Convention – Freedom\nI.  Scope\n2.  More (Z v. W [GC], 2010, § 12345).\n";
        let id = lexbench_core::ids::GuideId::new("guide_art_9_eng").unwrap();
        let g = crate::guide::parse_text("demo.txt", id, text).unwrap();
        assert!(g.queries[0].citations[0].paragraphs.is_empty());
        assert!(g.details[0].citations[0].unreadable_pinpoint);
        let w: Vec<&str> = g.guide.warnings.iter().map(|w| w.code.as_str()).collect();
        assert!(w.contains(&"unreadable_pinpoint"), "{w:?}");
    }

    /// Issue 29, item 16: lines are counted in one pass, not once per citation from the start of
    /// the text (which made `parse citations` quadratic); they are the same lines as before. The
    /// growth with the input is in `benches/guide.rs` (`scaling`), not in a timed test.
    #[test]
    fn lines_counted_in_one_pass_are_the_lines() {
        let text =
            std::fs::read_to_string(lexbench_core::testing::fixture("guides/text/guide_art_1_eng.txt"))
                .unwrap();
        let text = text.repeat(2);
        let got = extract_text(&text);
        assert!(got.len() > 800, "{}", got.len());
        for l in &got {
            assert_eq!(l.line, 1 + text[..l.found.start].matches('\n').count());
        }
    }

    /// The reader's work ([`work`]) on `text` as `lexbench parse citations` reads it
    /// ([`extract_text`]), and what it found.
    fn work_on(text: &str) -> (usize, usize) {
        work::take();
        let n = extract_text(text).len();
        (work::take(), n)
    }

    /// The most work the reader may do per byte of its input: the real guides take about
    /// [`REAL_GUIDE_PER_BYTE`], the worst hostile text below somewhat more.
    const PER_BYTE: usize = 32;

    /// Issue 54, item 9: text dense with ` v. ` (or bare pinpoints) made the reader quadratic: a
    /// chain of joined cases (`X v. Y X v. Y …`) was read again from each of its ` v. `; the search
    /// for a short name (`the Rowe judgment (§ 2)`) ran from the antecedent to each pinpoint, and
    /// lower-cased the antecedent's name each time; the open-parenthesis scan started again from
    /// the sentence's start whenever a name reached back over a parenthesis (`(A v. B) C v. D`).
    /// Work is counted, not timed: at most [`PER_BYTE`] bytes looked at per byte of input.
    #[test]
    fn work_is_linear_in_the_text() {
        let texts = [
            "X v. Y ".repeat(3_000),
            "A v. \n".repeat(3_000),
            "(§ 2) ".repeat(20_000),
            format!(
                "In Smith v. Malta, 2001, the Court held {}",
                "(§ 2) ".repeat(1_000)
            ),
            format!(
                "{}v. Malta, 2001, the Court {}",
                "A ".repeat(3_000),
                "(the Q judgment (§ 2)) ".repeat(300)
            ),
            "(A v. B) C v. D, ".repeat(2_000),
        ];
        let mut over = Vec::new();
        // At two sizes, so that a small quadratic term cannot hide under the bound.
        let texts = texts.iter().flat_map(|t| [t.clone(), t.repeat(4)]);
        for text in &texts.collect::<Vec<_>>() {
            let (w, _) = work_on(text);
            if w > PER_BYTE * text.len() {
                over.push(format!(
                    "{:?}… ({} bytes): {w} bytes looked at, {:.0} per byte",
                    &text[..24],
                    text.len(),
                    w as f64 / text.len() as f64
                ));
            }
        }
        assert!(over.is_empty(), "{over:#?}");
    }

    /// What the real Art 1 guide costs per byte (with some room), as `parse citations` and as the
    /// guide parser (text under each heading) read it; and the guide with a block of
    /// `X v. Y ` inserted in its body (issue 54: 5.1 s instead of 0.08 s).
    const REAL_GUIDE_PER_BYTE: usize = 4;

    #[test]
    fn work_on_a_real_guide_with_and_without_a_hostile_block() {
        let text =
            std::fs::read_to_string(lexbench_core::testing::fixture("guides/text/guide_art_1_eng.txt"))
                .unwrap();
        let (w, n) = work_on(&text);
        assert!(n > 400, "{n}");
        assert!(
            w <= REAL_GUIDE_PER_BYTE * text.len(),
            "{w} for {} bytes",
            text.len()
        );
        let id = lexbench_core::ids::GuideId::new("guide_art_1_eng").unwrap();
        let at = text.find("\n\n").unwrap() + text.len() / 2;
        let at = at + text[at..].find('\n').unwrap() + 1;
        for block in ["", "X v. Y ", "(A v. B) C v. D, "] {
            let big = format!("{}{}\n{}", &text[..at], block.repeat(3_000), &text[at..]);
            work::take();
            let g = crate::guide::parse_text("art1", id.clone(), &big).unwrap();
            let w = work::take();
            assert!(g.queries.len() > 30);
            assert!(
                w <= PER_BYTE * big.len(),
                "{block:?}: {w} for {} bytes",
                big.len()
            );
        }
    }

    /// Issue 54, item 6: a zero-width character (U+200B, U+200C, U+200D, U+2060, U+FEFF) glued
    /// onto the first word of a case name lost the citation: they are invisible, so the reader
    /// reads the text as it looks, without them; offsets stay offsets in the text as given.
    #[test]
    fn zero_width_characters_are_not_text() {
        let text = "See \u{200b}Assanidze v. Georgia [GC], 2004, §§ 146-147.";
        let got = extract_text(text);
        assert_eq!(got.len(), 1, "{got:#?}");
        let f = &got[0].found;
        assert_eq!(f.citation.case_name, "Assanidze v. Georgia");
        assert_eq!(f.citation.paragraphs, [146, 147]);
        assert_eq!(
            &text[f.start..f.end],
            "Assanidze v. Georgia [GC], 2004, §§ 146-147"
        );
        // `cat a.txt b.txt` of two files saved with a byte-order mark: the second mark starts a
        // later line.
        let text = "\u{feff}First (Smith v. Malta, 2001, § 3).\n\u{feff}Assanidze v. Georgia [GC], 2004, §§ 146-147.\n\u{feff}(ibid., § 149)\n";
        let got = extract_text(text);
        let names: Vec<(&str, &[u32], usize)> = got
            .iter()
            .map(|l| {
                (
                    l.found.citation.case_name.as_str(),
                    l.found.citation.paragraphs.as_slice(),
                    l.line,
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("Smith v. Malta", &[3][..], 1),
                ("Assanidze v. Georgia", &[146, 147][..], 2),
                ("Assanidze v. Georgia", &[149][..], 3)
            ]
        );
        // Each of them, anywhere: before a name, inside one, before a comma, in a pinpoint.
        for zw in ['\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}'] {
            let text = format!(
                "(see {zw}Smith v. Malta{zw}, 2001, §{zw} 3{zw}) and (Jo{zw}nes v.{zw} France, 2002, § 4{zw}-5)"
            );
            let got = extract_text(&text);
            let names: Vec<(&str, &[u32])> = got
                .iter()
                .map(|l| {
                    (
                        l.found.citation.case_name.as_str(),
                        l.found.citation.paragraphs.as_slice(),
                    )
                })
                .collect();
            assert_eq!(
                names,
                [("Smith v. Malta", &[3][..]), ("Jones v. France", &[4, 5][..])],
                "{zw:?}"
            );
            // The guide parser's reader (text already collapsed), offsets in the text given.
            let text = format!("In {zw}Smith v. Malta, 2001, § 3{zw}. Then");
            let f = one(&text);
            assert_eq!(f.citation.case_name, "Smith v. Malta", "{zw:?}");
            assert_eq!(&text[f.start..f.end], format!("Smith v. Malta, 2001, § 3"));
        }
        // `lexbench parse guide`: a citation after U+200B, a body line starting with U+FEFF.
        let text = "Guide on Article 9 of the Convention – Freedom\n\u{c}Guide on Article 9 of the Convention – Freedom\nTable of contents\nI.  Scope ........ 3\n\u{c}Guide on Article 9 of the Convention – Freedom\nI.  Scope\n1.  Text (\u{200b}X v. Y, 2001, § 4).\n\u{feff}Z v. W [GC], 2010, §§ 5-6.\n";
        let id = lexbench_core::ids::GuideId::new("guide_art_9_eng").unwrap();
        let g = crate::guide::parse_text("demo.txt", id, text).unwrap();
        let got: Vec<(&str, &[u32])> = g.queries[0]
            .citations
            .iter()
            .map(|c| (c.case_name.as_str(), c.paragraphs.as_slice()))
            .collect();
        assert_eq!(got, [("X v. Y", &[4][..]), ("Z v. W", &[5, 6][..])]);
        // One at the start of every line (headings, contents, running headers) changes nothing.
        let plain = text.replace(['\u{200b}', '\u{feff}'], "");
        let id = lexbench_core::ids::GuideId::new("guide_art_9_eng").unwrap();
        let want = crate::guide::parse_text("demo.txt", id.clone(), &plain).unwrap();
        for zw in ['\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}'] {
            let text = plain
                .split_inclusive('\n')
                .map(|l| format!("{zw}{l}"))
                .collect::<String>();
            let g = crate::guide::parse_text("demo.txt", id.clone(), &text).unwrap();
            assert_eq!(g.queries, want.queries, "{zw:?}");
            assert_eq!(g.guide.title, want.guide.title, "{zw:?}");
        }
    }

    #[test]
    fn offsets_in_the_text_as_given() {
        let text = "First line.\n(Assanidze v. Georgia [GC],\n  2004, §§ 146-147). In short";
        let got = extract_text(text);
        assert_eq!(got.len(), 1);
        let f = &got[0].found;
        assert_eq!(
            &text[f.start..f.end],
            "Assanidze v. Georgia [GC],\n  2004, §§ 146-147"
        );
        assert_eq!(got[0].line, 2);
        assert!(extract_text("").is_empty());
        let text = "é (Smith v. Malta, 2001, § 3)";
        let f = &extract_text(text)[0].found;
        assert_eq!(&text[f.start..f.end], "Smith v. Malta, 2001, § 3");
    }
}
