//! HUDOC documents as HUDOC mirrors store them: a JSON object of metadata (`itemid`, `title`,
//! `date`, `app_no`, `doc_type`, …) with the judgment's `full_text`, the HUDOC HTML body *flattened*
//! to one line; and that flattened text saved alone.
//!
//! What the flattening keeps of the HTML: the CSS rules of its `<style>` element first (`.s800EAC49 {
//! font-size:12pt } …`), then the text of every element joined by single spaces, with no-break spaces,
//! non-breaking and soft hyphens written as entities (`&#xa0;`, `&#x2011;`, `&#xad;`), each with a
//! space either side. Paragraph boundaries are gone: a paragraph number's tab has become
//! `12. &#xa0; &#xa0; ` before its text, an empty paragraph a lone `&#xa0;`, and headings run into
//! the text around them (`… (Rule 60). THE FACTS I. &#xa0; &#xa0; THE CIRCUMSTANCES OF THE CASE 7.
//! &#xa0; &#xa0; The applicant …`).
//!
//! This module rebuilds [`Block`]s from that line, and the one segmenter ([`super::segment`]) does the
//! rest, as for DOCX and HTML. Block boundaries are put:
//!
//! 1. before a **paragraph marker**: a number and a full stop followed by spaces holding a no-break
//!    space (`12. &#xa0; `; the tab of a numbered Word paragraph). A typed number without one
//!    (`190. The …`) is not a boundary: sentences end with numbers (`… in 2006. The …`) far more
//!    often than typed paragraph numbers occur;
//! 2. before a **heading or list marker** followed by two no-break spaces (`A. &#xa0; &#xa0; `,
//!    `IV. &#xa0; &#xa0; `, `(a) &#xa0; &#xa0; `): one would be a no-break space in a name (`Mr
//!    &#xa0; M. &#xa0; Ferschtman`);
//! 3. at a run of two or more no-break spaces elsewhere (empty paragraphs), and, before `Delivers
//!    the following judgment`, around the cover page's application line and date;
//! 4. around a **separate opinion's heading**: a run of words without lower-case letters holding
//!    `OPINION` (or `DECLARATION`, `STATEMENT`) and `JUDGE` (`… M.O.B. CONCURRING OPINION OF JUDGE
//!    ROZAKIS I have voted …`);
//! 5. before an **upper-case title at the end of a block**, after the sentence before it ends
//!    (`… (Rule 60). THE FACTS`, `… points. FOR THESE REASONS, THE COURT UNANIMOUSLY`).
//!
//! A wrong boundary costs little: text between two paragraphs of the chosen numbering goes back to
//! the paragraph before (segmenter heuristic 6). Blocks that began with a marker followed by a
//! no-break space carry the class `tab`, the others none, so the segmenter's learning pass
//! (heuristic 5) favours numbers printed the way the document prints its paragraph numbers.
//!
//! Entities are decoded (`&#xa0;`, `&#x…;`, `&#…;`, `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`);
//! non-breaking and soft hyphens are joined to the words around them (`brother &#x2011; in-law` is
//! `brother-in-law`), and the spaces the flattening put before `,`, `;` and `)` and after `(` go.
//! Paragraphs in an opinion printed without numbers cannot be told apart in the flat text: such an
//! opinion is one paragraph.

use std::sync::LazyLock;

use lexbench_core::ItemId;
use regex::Regex;

use super::segment::Block;
use crate::{Error, Result};

/// The format name in errors and provenance for the JSON document.
pub const JSON_FORMAT: &str = "HUDOC JSON";
/// The format name for the flattened text alone.
pub const FLAT_FORMAT: &str = "flat HTML text";

/// A HUDOC mirror's JSON document: the metadata the reader uses and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `itemid`.
    pub item: ItemId,
    /// `title` (`CASE OF A. v. THE NETHERLANDS`), when present and not empty.
    pub title: Option<String>,
    /// `date` as `YYYY-MM-DD`, when present and of that form.
    pub date: Option<String>,
    /// `full_text`: the flattened body (or HTML, if the mirror kept the markup).
    pub full_text: String,
}

fn invalid(source: &str, format: &'static str, message: impl Into<String>) -> Error {
    Error::Invalid {
        source_name: source.to_string(),
        format,
        message: message.into(),
    }
}

/// Whether `bytes` begin (after a byte-order mark and white space) with a JSON object: the only
/// shape of the JSON documents read here.
pub fn looks_json(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    b.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{')
}

/// Whether `bytes` begin (after a byte-order mark and white space) with a JSON array: `[` and then
/// `{`, `[`, `"` or `]`. No judgment starts so (a text's `[1]` or `[Translation]` does not); a
/// mirror's export of several documents does, and is refused rather than read as flattened text.
pub fn looks_json_array(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let mut rest = b.iter().skip_while(|c| c.is_ascii_whitespace());
    rest.next() == Some(&b'[')
        && matches!(
            rest.find(|c| !c.is_ascii_whitespace()),
            Some(b'{' | b'[' | b'"' | b']')
        )
}

/// Reads a HUDOC mirror's JSON document.
///
/// # Errors
/// [`Error::Invalid`] when the bytes are not a JSON object, or it lacks a string `full_text` or a
/// valid `itemid`.
pub fn document(bytes: &[u8], source: &str) -> Result<Document> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| invalid(source, JSON_FORMAT, format!("not JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| invalid(source, JSON_FORMAT, "not a JSON object"))?;
    let full_text = obj
        .get("full_text")
        .and_then(|t| t.as_str())
        .ok_or_else(|| {
            invalid(
                source,
                JSON_FORMAT,
                "no string `full_text`: not a HUDOC document (expected an object with `itemid` and `full_text`)",
            )
        })?
        .to_string();
    let raw_item = obj
        .get("itemid")
        .and_then(|t| t.as_str())
        .ok_or_else(|| invalid(source, JSON_FORMAT, "no string `itemid`"))?;
    let item: ItemId = raw_item
        .parse()
        .map_err(|e| invalid(source, JSON_FORMAT, format!("`itemid`: {e}")))?;
    let title = obj
        .get("title")
        .and_then(|t| t.as_str())
        .map(|t| super::segment::normalize(&decode(t)))
        .filter(|t| !t.is_empty());
    let date = obj
        .get("date")
        .and_then(|t| t.as_str())
        .map(|d| d.get(..10).unwrap_or(d).to_string())
        .filter(|d| ISO_DATE.is_match(d));
    Ok(Document {
        item,
        title,
        date,
        full_text,
    })
}

fn re(s: &str) -> Regex {
    Regex::new(s).expect("a valid built-in regex")
}

static ISO_DATE: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{4}-\d{2}-\d{2}$"));
/// One CSS rule at the start of the text: a selector list, then a brace-delimited body.
static CSS_RULE: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*[.#@A-Za-z*][^{}<>]{0,400}\{[^{}]{0,4000}\}"));
/// A paragraph marker with a no-break space (written either way) after it.
static ENTITY_MARKER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:^|\s)\d{1,4}\.\s*(?:&#xa0;|&#160;|&nbsp;|\u{a0})"));

/// Whether a text without markup is the flattened form of a HUDOC HTML body: it starts with CSS
/// rules, or (when saved without them) has at least three paragraph markers with a no-break space
/// on fewer lines than markers (a plain-text judgment has one paragraph a line).
pub fn looks_flat(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    if CSS_RULE.is_match(&text) {
        let rest = strip_css(&text);
        // CSS alone is not a judgment; CSS followed by text is the flattened body.
        return rest.len() < text.len() && !rest.trim().is_empty();
    }
    let markers = ENTITY_MARKER.find_iter(&text).count();
    let lines = text.lines().count();
    markers >= 3 && lines * 2 < markers
}

/// The text after the CSS rules at its start.
pub fn strip_css(s: &str) -> &str {
    let mut rest = s;
    while let Some(m) = CSS_RULE.find(rest) {
        rest = &rest[m.end()..];
    }
    rest
}

/// Decodes HTML character references: numeric ones, and the five XML names and `&nbsp;`. Anything
/// else (`&` in text, an unknown name) is kept as written.
pub fn decode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.bytes().take(12).position(|b| b == b';');
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = if let Some(hex) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
            } else if let Some(dec) = name.strip_prefix('#') {
                dec.parse().ok().and_then(char::from_u32)
            } else {
                match name {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    "nbsp" => Some('\u{a0}'),
                    _ => None,
                }
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Repairs what the flattening did to the text between entities and spans: hyphens written as
/// entities are joined to their words (a non-breaking hyphen becomes `-`, a soft hyphen goes), and
/// the space put before `,`, `;`, `)` or after `(` goes.
fn repair(s: &str) -> String {
    static HYPHEN: LazyLock<Regex> = LazyLock::new(|| re(r" ?([\u{2011}\u{ad}]+) ?"));
    static BEFORE: LazyLock<Regex> = LazyLock::new(|| re(r"([^\s\u{a0}]) +([,;)])"));
    static AFTER: LazyLock<Regex> = LazyLock::new(|| re(r"\( +"));
    let s = HYPHEN.replace_all(s, |c: &regex::Captures<'_>| {
        c[1].chars()
            .filter(|&ch| ch == '\u{2011}')
            .map(|_| '-')
            .collect::<String>()
    });
    let s = BEFORE.replace_all(&s, "$1$2");
    AFTER.replace_all(&s, "(").into_owned()
}

/// A number, heading or list marker and the spaces after it, holding no-break spaces.
static MARKER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:^|[ \u{a0}])(?:(\d{1,4} ?\.)|([IVXLC]{1,6}\.|[A-Z]\.|\(?[a-z]{1,4}\)|\(\d{1,2}\)|\d{1,2}\)|\d{1,2}\.\d{1,2}\.?))(?: ?\u{a0})+",
    )
});
/// Two or more no-break spaces in a row (with the flattening's spaces between).
static NBSP_RUN: LazyLock<Regex> = LazyLock::new(|| re(r"\u{a0}(?: ?\u{a0})+"));
static OPINION_WORD: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:OPINION|DECLARATION|STATEMENT)\b"));

fn has_lower(t: &str) -> bool {
    t.chars().any(char::is_lowercase)
}

/// Words of a title: no lower-case letter, and something besides punctuation.
fn title_word(t: &str) -> bool {
    !has_lower(t) && t.chars().any(|c| c.is_alphanumeric())
}

/// Section titles that run into the text after them (`… points. FOR THESE REASONS, THE COURT,
/// UNANIMOUSLY, Declares …`), as word sequences.
const TITLES: &[&[&str]] = &[
    &["FOR", "THESE", "REASONS"],
    &["THE", "FACTS"],
    &["AS", "TO", "THE", "FACTS"],
    &["THE", "LAW"],
    &["AS", "TO", "THE", "LAW"],
    &["PROCEDURE"],
    &["INTRODUCTION"],
];

fn sentence_end(w: &str) -> bool {
    w.ends_with(['.', ':', ';', '!', '?', '”', ')'])
}

/// Splits one piece of text (between markers) around the opinion headings and section titles it
/// holds, and before an upper-case title at its end (rules 4 and 5 of the module documentation).
/// Linear in the piece: its words are found once.
fn split_titles(piece: &str, out: &mut Vec<String>) {
    // Words with their byte ranges.
    let toks: Vec<(usize, usize)> = piece
        .char_indices()
        .filter(|&(i, c)| !c.is_whitespace() && (i == 0 || piece[..i].ends_with(char::is_whitespace)))
        .map(|(i, _)| {
            let end = piece[i..]
                .find(char::is_whitespace)
                .map_or(piece.len(), |e| i + e);
            (i, end)
        })
        .collect();
    let word = |k: usize| {
        let w = &piece[toks[k].0..toks[k].1];
        w.trim_end_matches([',', ':'])
    };
    // The end of the run of title words from `k` (inclusive).
    let run_end = |k: usize| {
        let mut e = k;
        while e + 1 < toks.len() && title_word(word(e + 1)) {
            e += 1;
        }
        // `… OF JUDGE ROZAKIS I have voted`: a one-letter word before lower-case text starts it.
        if e > k && e + 1 < toks.len() && word(e).chars().count() == 1 && has_lower(word(e + 1)) {
            e -= 1;
        }
        e
    };
    // Rule 4: headings anywhere in the piece, from `from` (a word index) on.
    let mut from = 0usize;
    let mut k = 0usize;
    while k < toks.len() {
        let w = word(k);
        let heading = if OPINION_WORD.is_match(w) && !has_lower(w) {
            let e = run_end(k);
            (k..=e).any(|j| word(j).starts_with("JUDGE")).then(|| {
                let mut s = k;
                while s > from && {
                    let w = word(s - 1);
                    title_word(w) && !w.contains('.') && w.chars().any(char::is_alphabetic)
                } {
                    s -= 1;
                }
                (s, e)
            })
        } else {
            let title = TITLES
                .iter()
                .any(|t| k + t.len() <= toks.len() && t.iter().enumerate().all(|(j, x)| word(k + j) == *x));
            // After the end of a sentence with text in it (`I. THE LAW` is a title already).
            let after = k > from
                && sentence_end(&piece[toks[k - 1].0..toks[k - 1].1])
                && has_lower(&piece[toks[from].0..toks[k].0]);
            (title && after && k + 1 < toks.len()).then(|| (k, run_end(k)))
        };
        match heading {
            Some((s, e)) => {
                if s > from {
                    split_tail(&piece[toks[from].0..toks[s].0], out);
                }
                out.push(piece[toks[s].0..toks[e].1].to_string());
                from = e + 1;
                k = e + 1;
            }
            None => k += 1,
        }
    }
    if from < toks.len() {
        split_tail(&piece[toks[from].0..], out);
    }
}

/// Rule 5: an upper-case title ending the piece, after a sentence's end.
fn split_tail(piece: &str, out: &mut Vec<String>) {
    let words: Vec<(usize, &str)> = piece
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - piece.as_ptr() as usize, w))
        .collect();
    let mut s = words.len();
    while s > 0 && title_word(words[s - 1].1) && (s == words.len() || !sentence_end(words[s - 1].1)) {
        s -= 1;
    }
    if s > 0 && s < words.len() {
        let at = words[s].0;
        let run = &piece[at..];
        let letters = run.chars().filter(|c| c.is_alphabetic()).count();
        let run_closes = run.trim_end().ends_with(['.', ';', ')', '”', '"']);
        // `I. THE CIRCUMSTANCES`: a marker alone before the title is the title's own.
        let text_before = has_lower(&piece[..at]);
        // `CASE OF A. v. THE NETHERLANDS`: `v.` ends no sentence.
        if letters >= 4
            && sentence_end(words[s - 1].1)
            && words[s - 1].1 != "v."
            && text_before
            && !run_closes
            && super::segment::upper_ratio(run) >= 0.8
        {
            out.push(piece[..at].to_string());
            out.push(run.to_string());
            return;
        }
    }
    out.push(piece.to_string());
}

/// `7 . text` (a span boundary between a paragraph number and its full stop) as `7. text`.
fn joined_number(piece: &str) -> std::borrow::Cow<'_, str> {
    static SPACED: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d{1,4}) \."));
    SPACED.replace(piece, "$1.")
}

/// Rule 1a: typed paragraph numbers (`… 2. The applicants 136. In their written submissions …`):
/// a number and a full stop followed by a capital, that continues the numbering so far (one more
/// than the highest paragraph number before it, with a no-break space or typed; 1 at first: recent
/// judgments are typed throughout, `INTRODUCTION 1. The applicant’s …`), and does not
/// follow a word that introduces a number in a reference (`Article 7. Such …`, `§ 2. The …`).
fn typed_numbers(text: &str, cuts: &[(usize, Option<&'static str>)]) -> Vec<usize> {
    static TYPED: LazyLock<Regex> = LazyLock::new(|| re(r#"(?:^|[ \u{a0}])(\d{1,4}) ?\. +[“"‘(]?\p{Lu}"#));
    const REFERENCE: &[&str] = &[
        "§",
        "§§",
        "article",
        "articles",
        "rule",
        "rules",
        "no.",
        "nos.",
        "protocol",
        "paragraph",
        "paragraphs",
        "para.",
        "p.",
        "pp.",
        "series",
        "vol.",
        "volume",
        "chapter",
        "section",
        "part",
        "annex",
        "point",
        "item",
        "law",
        "act",
        "code",
        "decree",
        "no",
        "number",
    ];
    let mut numbered: Vec<(usize, u32)> = cuts
        .iter()
        .filter(|c| c.1 == Some("tab"))
        .filter_map(|&(at, _)| {
            let digits: String = text[at..].chars().take_while(char::is_ascii_digit).collect();
            Some((at, digits.parse().ok()?))
        })
        .collect();
    let mut typed: Vec<(usize, u32)> = Vec::new();
    for c in TYPED.captures_iter(text) {
        let m = c.get(1).expect("a number");
        let before = text[..m.start()].trim_end();
        let word = before.rsplit([' ', '\u{a0}']).next().unwrap_or("").to_lowercase();
        if REFERENCE.contains(&word.as_str()) {
            continue;
        }
        if let Ok(n) = m.as_str().parse::<u32>() {
            typed.push((m.start(), n));
        }
    }
    numbered.sort_unstable();
    // Walk both in document order, keeping the highest number so far.
    let mut out = Vec::new();
    let (mut i, mut high) = (0usize, 0u32);
    for (at, n) in typed {
        while i < numbered.len() && numbered[i].0 < at {
            high = high.max(numbered[i].1);
            i += 1;
        }
        if n == high + 1 {
            out.push(at);
            high = n;
        }
    }
    out
}

/// The flattened body (CSS rules and all) into blocks, in document order.
pub fn blocks(flat: &str) -> Vec<Block> {
    let text = repair(&decode(strip_css(flat)));
    // Rules 1-3: cut at markers and at runs of no-break spaces. A cut's class: `tab` for a number
    // with a no-break space, `typed` for a typed number (rule 1a), none for the others.
    let mut cuts: Vec<(usize, Option<&'static str>)> = Vec::new();
    for c in MARKER.captures_iter(&text) {
        let whole = c.get(0).expect("match");
        let m = c.get(1).or_else(|| c.get(2)).expect("a marker");
        let nbsp = whole.as_str()[m.end() - whole.start()..]
            .matches('\u{a0}')
            .count();
        // Rule 1 needs one no-break space after a number, rule 2 two after another marker.
        if c.get(1).is_some() || nbsp >= 2 {
            cuts.push((m.start(), c.get(1).is_some().then_some("tab")));
        }
    }
    // The cover page (`CASE OF X v. Y &#xa0; (Application no. …) &#xa0; JUDGMENT &#xa0; STRASBOURG
    // &#xa0; 20 July 2010 &#xa0; FINAL`) separates its lines with single no-break spaces, as titles
    // hold them too (`A. v.&#xa0;THE NETHERLANDS`): before the judgment's opening words, the
    // application line and the date are cut out, so the title and date lines stand alone.
    static COVER: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"\(Application|\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b",
        )
    });
    if let Some(opening) = text.find("Delivers the following judgment") {
        for m in COVER.find_iter(&text[..opening]) {
            cuts.push((m.start(), None));
            if !m.as_str().starts_with('(') {
                cuts.push((m.end(), None));
            }
        }
    }
    let mut marked: Vec<usize> = cuts.iter().map(|c| c.0).collect();
    marked.sort_unstable();
    for m in NBSP_RUN.find_iter(&text) {
        // Not the no-break spaces after a marker (which start within a few bytes of it).
        let i = marked.partition_point(|&at| at <= m.start());
        if i == 0 || m.start() > marked[i - 1] + 8 {
            cuts.push((m.start(), None));
        }
    }
    cuts.extend(
        typed_numbers(&text, &cuts)
            .into_iter()
            .map(|at| (at, Some("typed"))),
    );
    cuts.sort_unstable();
    cuts.dedup_by_key(|c| c.0);
    let mut out = Vec::new();
    let mut push = |piece: &str, class: Option<&'static str>| {
        let mut parts = Vec::new();
        split_titles(piece, &mut parts);
        for (k, p) in parts.into_iter().enumerate() {
            if p.trim_matches(|c: char| c.is_whitespace()).is_empty() {
                continue;
            }
            out.push(Block {
                text: p,
                class: class.filter(|_| k == 0).map(str::to_string),
                ..Block::default()
            });
        }
    };
    let mut from = (0usize, None);
    for &(at, class) in &cuts {
        if at > from.0 {
            push(&joined_number(&text[from.0..at]), from.1);
        }
        from = (at, class);
    }
    push(&joined_number(&text[from.0..]), from.1);
    out
}

#[cfg(test)]
mod tests {
    //! Properties: entities decode and hyphen entities join their words; CSS goes; markers with
    //! no-break spaces cut blocks, a name's initial with one does not; titles run into the text
    //! around them become blocks of their own.
    use super::*;

    fn texts(flat: &str) -> Vec<String> {
        blocks(flat)
            .iter()
            .map(|b| super::super::segment::normalize(&b.text))
            .collect()
    }

    #[test]
    fn entities_decode_and_hyphens_join() {
        assert_eq!(
            decode("a &#xa0; b &amp; c &#160; &bogus; &"),
            "a \u{a0} b & c \u{a0} &bogus; &"
        );
        assert_eq!(
            repair("brother \u{2011} in-law, imme \u{ad} diate ( see X , Y )"),
            "brother-in-law, immediate (see X, Y)"
        );
    }

    #[test]
    fn json_arrays_are_told_from_texts_starting_with_a_bracket() {
        for array in [
            &b"[{\"itemid\": 1}]"[..],
            b"\xef\xbb\xbf \n[ \"a\"]",
            b"[]",
            b"[[1]]",
        ] {
            assert!(looks_json_array(array), "{array:?}");
        }
        for text in [
            &b"[1] The applicant"[..],
            b"[Translation] 1. The case",
            b"{\"a\": 1}",
            b"[",
        ] {
            assert!(!looks_json_array(text), "{text:?}");
        }
    }

    #[test]
    fn css_goes_and_markers_cut() {
        let flat = ".s1 { font-size:12pt } .s2 { margin:0 } &#xa0; &#xa0; CASE OF X v. Y &#xa0; &#xa0; \
                    Delivers the following judgment: PROCEDURE 1. &#xa0; &#xa0; Mr &#xa0; M. &#xa0; Ferschtman \
                    acted (Rule 60). THE FACTS I. &#xa0; &#xa0; THE CIRCUMSTANCES 2. &#xa0; Born in 1970. \
                    FOR THESE REASONS, THE COURT 1 . &#xa0; &#xa0; Holds. J.C. S.Q. CONCURRING OPINION OF JUDGE Z I agree.";
        assert_eq!(
            texts(flat),
            [
                "CASE OF X v. Y",
                "Delivers the following judgment:",
                "PROCEDURE",
                "1. Mr M. Ferschtman acted (Rule 60).",
                "THE FACTS",
                "I. THE CIRCUMSTANCES",
                "2. Born in 1970.",
                "FOR THESE REASONS, THE COURT",
                "1. Holds. J.C. S.Q.",
                "CONCURRING OPINION OF JUDGE Z",
                "I agree.",
            ]
        );
    }
}
