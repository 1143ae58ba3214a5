//! Format-independent segmentation: a judgment's blocks (one per Word paragraph or HTML `<p>`, in
//! document order) into the main judgment's numbered paragraphs, their sections, the separate opinions
//! and structured warnings.
//!
//! The readers ([`super::docx`], [`super::html`], [`super::text`]) reduce their format to a list of
//! [`Block`]s, keeping whatever evidence the format offers (a Word style id and `SEQ` field for DOCX, an
//! opaque class name for HTML, nothing but the line for plain text); every decision below is made
//! here, once, so the formats cannot drift apart.
//!
//! # Heuristics, and why
//!
//! 1. **Regions.** The main judgment runs from its first section title (`PROCEDURE`, `INTRODUCTION`,
//!    `THE FACTS`) to `FOR THESE REASONS` (the operative provisions, whose own `1.`, `2.` items are
//!    *not* paragraphs: the printed numbering `1..N` stops before them). Separate opinions start at an
//!    upper-case heading naming an `OPINION` (or `DECLARATION`) of a judge; an `Appendix`/`Annex`
//!    heading ends the last region. Anything before the first section title (cover page, the
//!    judgment's own table of contents, the composition of the Court) is never numbered text.
//! 2. **Candidates.** A block whose text starts with `N.` followed by white space is a *candidate*
//!    paragraph start. Candidates are many more than paragraphs: quotations of other judgments start
//!    with their numbers (`35.  The impugned judgment…`), statutes quote `1.`, `2.`, headings read
//!    `1.  Court of Appeal`, tables of contents list `1.  Relevant provisions <tab> 7`.
//! 3. **Evidence, never a single rule.** Each candidate gets a weight: +1 base; +2 for a Word `SEQ`
//!    field (how the Registry numbers paragraphs); +0.5 for a paragraph style (`ECHRPara`, `JuPara`);
//!    −2.5 for a quotation style (`ECHRParaQuote`, `JuQuot`); −3 for a heading style; −0.9 when the
//!    text looks like a heading (short, no closing punctuation, a heading marker or capitals: a little
//!    weight is left, because plain text cuts paragraphs mid-sentence, `70. The applicant claimed
//!    75,000 euros (EUR) in respect of` then `non-pecuniary damage.` on the next line, and such a
//!    paragraph must still fill its place when nothing else has its number; a real paragraph with the
//!    same number always outweighs a numbered heading); −1.2 when it lies inside an open quotation (a
//!    `“` opened in an earlier block and not yet closed); −0.4 when the block before ends with a colon
//!    or is an ellipsis (the usual lead-in to a quotation). Table of contents lines (style `TOC*`, or
//!    text ending in a tab and a page number) are never candidates.
//!
//!    3a. **Quotations left open.** A closing mark left out by a typo (`(“the District Court)`) or a
//!    quotation closed with the wrong mark would put every later paragraph "inside a quotation". An
//!    open quotation is closed by a `SEQ` field, a heading, 40 blocks without a closing mark, and —
//!    the evidence plain text and HTML have — a block numbered exactly one more than the highest
//!    number seen outside quotations so far: quoted numbers rarely continue the judgment's own.
//! 4. **The main numbering is the best increasing chain.** Among the candidates we choose the strictly
//!    increasing subsequence maximising the sum of weights minus 0.2 per number skipped (from 0). A
//!    quoted run `35.`–`39.` can only join the chain by pushing out the judgment's own `35.`–`39.`,
//!    so evidence decides, and a real gap (an "extracts" publication) costs little against the
//!    paragraphs after it. This is a longest-path search in a DAG, O(candidates²).
//! 5. **Learning the document's own styling.** HTML class names are hashed and differ between
//!    documents, but within one document the same Word style gives the same class. After a first
//!    chain, the class (or style) shared by most chain members is taken as "the paragraph class":
//!    candidates with it gain 0.75, candidates with another class lose 0.75, and the chain is chosen
//!    again. This separates quoted paragraphs from real ones in HTML where nothing else does.
//! 6. **Everything between two chain members belongs to the first** (sub-paragraphs `(a)`, `(i)`,
//!    quotations, lists, quoted numbers), except headings and tables of contents, which are dropped.
//!    A heading without style or marker is recognised by its place: a short capitalised line without
//!    closing punctuation, outside quotations, right before the next paragraph or heading.
//! 7. **Sections** follow the section titles: `PROCEDURE`, `INTRODUCTION`, `THE FACTS` (and
//!    `THE CIRCUMSTANCES OF THE CASE`), `RELEVANT …` (and, inside the facts, any other roman-numbered
//!    part such as `II. RELEVANT DOMESTIC LAW`, `V. COMPARATIVE LAW`, `IV. DRAFTING HISTORY`), `THE LAW`.
//!    [`Section::Operative`] is not used for paragraphs: the operative provisions carry no paragraph
//!    numbers (heuristic 1).
//! 8. **Opinions** are numbered when their own chain starts at `1.` before any substantial text
//!    (short lines such as `(Translation)` or `Table of contents` may precede it); otherwise every block is a paragraph numbered from 1 (quotations, by style or open quote, stay
//!    with the paragraph before), and typed numbers inside such an opinion raise a warning.
//!
//! Warnings (codes): `numbering_gap`, `duplicate_number`, `number_out_of_order`,
//! `suspected_quoted_numbering`, `numbered_heading`, `typed_number`, `extracts`, `table_of_contents`,
//! `no_section_titles`, `no_operative_provisions`, `no_numbered_paragraphs`, `opinion_numbering_mixed`,
//! `appendix`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use lexbench_core::{ItemId, Judgment, Opinion, Paragraph, Provenance, Section, Warning};
use regex::Regex;

use crate::{Error, Result};

/// One block of text in document order: a Word paragraph or an HTML `<p>`, with the evidence its format
/// offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// The text as found (tabs and no-break spaces kept; [`normalize`] folds them).
    pub text: String,
    /// The Word style id (`ECHRPara`), when the format has named styles.
    pub style: Option<String>,
    /// An opaque class name (HTML), meaningful only within one document.
    pub class: Option<String>,
    /// The block holds a Word `SEQ` field (the Registry's paragraph counter).
    pub seq: bool,
    /// The block sits in a table cell.
    pub in_table: bool,
}

/// Who asks for the segmentation: the document's name (for errors), its itemid and the format name.
#[derive(Debug, Clone)]
pub struct Meta<'a> {
    /// The document (file name or itemid), as the caller names it.
    pub source: &'a str,
    /// The itemid, when known.
    pub item: Option<ItemId>,
    /// The format, "DOCX", "HTML" or "TEXT".
    pub format: &'static str,
}

/// Folds white space: no-break spaces and tabs become spaces, runs collapse to one, soft hyphens and
/// zero-width spaces go; the result is trimmed. Paragraph texts are built from normalised blocks, so
/// DOCX and HTML of the same judgment give the same text.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        match c {
            '\u{ad}' | '\u{200b}' | '\u{feff}' => {}
            c if c.is_whitespace() => space = true,
            c => {
                if space && !out.is_empty() {
                    out.push(' ');
                }
                space = false;
                out.push(c);
            }
        }
    }
    out
}

fn re(s: &str) -> Regex {
    Regex::new(s).expect("a valid built-in regex")
}

/// `N.` then white space (or nothing) at the start of a normalised block.
static NUMBERED: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d{1,4})\.(?:\s+(.*)|$)"));
/// A table-of-contents line: a tab (or dot leaders) and a page number at the end of the raw text.
static TOC_LINE: LazyLock<Regex> = LazyLock::new(|| re(r"(?:\t|\.{4,}|…{2,})\s*\d{1,4}\s*$"));
/// A heading marker: `IV.`, `A.`, `1.`, `(a)`, `a)`, `(iv)`, `i.`, `(α)`, `γ)`, a bullet.
static HEADING_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:[IVXLC]{1,6}\.|[A-Z]\.|\d{1,3}\.|\(?[a-z]{1,5}\)|\(?[\p{Greek}]{1,3}\)|[a-z]{1,5}\.|[-–—•·▪])\s")
});
/// A roman-numbered part (`II.  RELEVANT DOMESTIC LAW`).
static ROMAN: LazyLock<Regex> = LazyLock::new(|| re(r"^[IVXL]{1,6}\.\s"));
/// A judgment date as printed on the cover (`27 June 2017`).
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(\d{1,2}) (January|February|March|April|May|June|July|August|September|October|November|December) (\d{4})$",
    )
});
static OPINION: LazyLock<Regex> = LazyLock::new(|| re(r"\b(OPINION|DECLARATION|STATEMENT)\b.*\bJUDGES?\b"));
static APPENDIX: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^(appendix|annex)(\b.{0,60})?$"));

/// How a Word style reads, from its id (the Registry's templates, 2007 `Ju*` and 2017 `ECHR*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StyleClass {
    Para,
    Quote,
    Heading,
    Toc,
    Other,
}

fn style_class(style: Option<&str>) -> StyleClass {
    let Some(s) = style else {
        return StyleClass::Other;
    };
    let s = s.to_ascii_lowercase();
    if s.starts_with("toc") {
        StyleClass::Toc
    } else if s.contains("quot") {
        StyleClass::Quote
    } else if s.contains("heading")
        || s.starts_with("juh")
        || s.starts_with("opih")
        || (s.starts_with("echrtitle") && !s.contains("centre"))
    {
        StyleClass::Heading
    } else if s.contains("para") {
        StyleClass::Para
    } else {
        StyleClass::Other
    }
}

/// Share of upper-case letters among the letters of `s` (0 when it has fewer than 3 letters).
pub(crate) fn upper_ratio(s: &str) -> f64 {
    let (mut letters, mut upper) = (0usize, 0usize);
    for c in s.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if c.is_uppercase() {
            upper += 1;
        }
    }
    if letters < 3 {
        0.0
    } else {
        upper as f64 / letters as f64
    }
}

/// Short, no closing punctuation, and a heading marker or capitals: how headings look when no style
/// says so (unstyled DOCX, HTML).
fn heading_like(norm: &str, raw: &str) -> bool {
    // A closing quotation mark ends a sentence only after punctuation (`….”`); a heading may end
    // with a quoted phrase (`“necessary in a democratic society”`).
    let closing = ['.', ',', ':', ';', '!', '?', '…', '-'];
    let last = norm.trim_end_matches(['”', '"', '’', '»', '\'']);
    // After its marker a heading starts with a capital (`(a)  The applicant`); list items run on in
    // lower case (`a)  any serious activity …, or`).
    let body = HEADING_MARKER.find(norm).map_or(norm, |m| &norm[m.end()..]);
    let capital = body
        .chars()
        .next()
        .is_none_or(|c| !c.is_alphabetic() || c.is_uppercase());
    norm.chars().count() <= 300
        && capital
        && !last.is_empty()
        && !last.ends_with(closing)
        && (HEADING_MARKER.is_match(norm) || upper_ratio(norm) >= 0.8 || raw.starts_with('\t'))
}

/// What a block is, before any numbering decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Empty,
    Toc,
    Heading,
    Text,
}

#[derive(Debug, Clone)]
struct Info {
    norm: String,
    kind: Kind,
    /// `N.` and the rest of the text, when the block starts with a number.
    num: Option<(u32, String)>,
    style: StyleClass,
    heading_like: bool,
    in_quote: bool,
    after_colon: bool,
    seq: bool,
    key: Option<String>,
}

fn analyse(blocks: &[Block]) -> Vec<Info> {
    let mut infos = Vec::with_capacity(blocks.len());
    let mut depth: i64 = 0;
    let mut open_for = 0usize;
    let mut prev_colon = false;
    // The highest number of a numbered text block seen outside quotations: the numbering so far.
    let mut numbering = 0u32;
    for b in blocks {
        let norm = normalize(&b.text);
        let style = style_class(b.style.as_deref());
        let hl = !norm.is_empty() && heading_like(&norm, &b.text);
        let toc = style == StyleClass::Toc || TOC_LINE.is_match(&b.text);
        let num = if b.in_table || toc {
            None
        } else {
            NUMBERED.captures(&norm).and_then(|c| {
                let n: u32 = c.get(1)?.as_str().parse().ok()?;
                (n > 0).then(|| (n, c.get(2).map_or("", |m| m.as_str()).to_string()))
            })
        };
        // Quotation depth: a SEQ-numbered paragraph closes any quotation left open by a typo, and so
        // does a long run (40 blocks) without a closing mark; a heading closes it too (below). Without
        // SEQ fields, a block numbered exactly one more than the numbering so far closes it as well
        // (heuristic 3a): quoted numbers rarely continue the judgment's own, and a closing mark left
        // out by a typo would otherwise hide the paragraphs after it.
        let continues = num.as_ref().is_some_and(|(n, _)| *n == numbering + 1);
        if b.seq || open_for > 40 || continues {
            depth = 0;
        }
        let in_quote = depth > 0;
        // Text that merely looks like a heading is one only outside quotations: quoted statutes have
        // their own `h)  Freedom of expression` lines.
        let kind = if norm.is_empty() {
            Kind::Empty
        } else if toc {
            Kind::Toc
        } else if style == StyleClass::Heading || (style == StyleClass::Other && hl && !in_quote) {
            Kind::Heading
        } else {
            Kind::Text
        };
        if let Some((n, _)) = &num
            && !in_quote
        {
            numbering = numbering.max(*n);
        }
        if kind == Kind::Heading {
            depth = 0;
        }
        let opens = norm.chars().filter(|&c| c == '“' || c == '«').count() as i64;
        let closes = norm.chars().filter(|&c| c == '”' || c == '»').count() as i64;
        depth = (depth + opens - closes).max(0);
        open_for = if depth > 0 { open_for + 1 } else { 0 };
        let info = Info {
            after_colon: prev_colon,
            kind,
            num,
            style,
            heading_like: hl,
            in_quote,
            seq: b.seq,
            key: b.class.clone().or_else(|| b.style.clone()),
            norm,
        };
        if info.kind != Kind::Empty {
            prev_colon = info.norm.ends_with(':')
                || info.norm.ends_with(":-")
                || info.norm == "..."
                || info.norm == "…";
        }
        infos.push(info);
    }
    infos
}

/// The evidence weight of a candidate (heuristic 3), before learning the document's styling.
fn base_weight(i: &Info) -> f64 {
    let mut w = 1.0;
    if i.seq {
        w += 2.0;
    }
    w += match i.style {
        StyleClass::Para => 0.5,
        StyleClass::Quote => -2.5,
        StyleClass::Heading => -3.0,
        StyleClass::Toc | StyleClass::Other => 0.0,
    };
    if i.heading_like {
        w -= HEADING_LIKE;
    }
    if i.in_quote {
        w -= 1.2;
    }
    if i.after_colon {
        w -= 0.4;
    }
    w
}

/// What looking like a heading costs a numbered block (heuristic 3): it leaves a little weight, so
/// that a paragraph whose line merely ends without punctuation (plain text cut mid-sentence, `39. The
/// applicant disputed these arguments`) still fills its place in the numbering when nothing else has
/// its number, while a real paragraph with the same number always wins over a numbered heading.
const HEADING_LIKE: f64 = 0.9;
const GAP_COST: f64 = 0.2;
const LEARNED: f64 = 0.75;

/// The strictly increasing chain of `(number, weight)` maximising Σ weight − GAP_COST × skipped numbers
/// (heuristic 4). Returns positions into `cands`.
fn best_chain(cands: &[(u32, f64)]) -> Vec<usize> {
    let n = cands.len();
    let mut score = vec![f64::NEG_INFINITY; n];
    let mut prev = vec![usize::MAX; n];
    for i in 0..n {
        let (num, w) = cands[i];
        if w <= 0.0 {
            continue;
        }
        let mut best = w - GAP_COST * f64::from(num - 1);
        let mut from = usize::MAX;
        for j in 0..i {
            let (nj, _) = cands[j];
            if nj < num && score[j].is_finite() {
                let s = score[j] + w - GAP_COST * f64::from(num - nj - 1);
                if s > best + 1e-9 {
                    best = s;
                    from = j;
                }
            }
        }
        score[i] = best;
        prev[i] = from;
    }
    let mut end = usize::MAX;
    let mut best = 0.0;
    for (i, &s) in score.iter().enumerate() {
        if s > best + 1e-9 {
            best = s;
            end = i;
        }
    }
    let mut chain = Vec::new();
    while end != usize::MAX {
        chain.push(end);
        end = prev[end];
    }
    chain.reverse();
    chain
}

/// The chain over the candidate blocks `idx` (block indices), with the learning pass (heuristic 5).
/// Returns block indices.
fn choose(infos: &[Info], idx: &[usize]) -> Vec<usize> {
    let weights: Vec<f64> = idx.iter().map(|&i| base_weight(&infos[i])).collect();
    let cands = |w: &[f64]| -> Vec<(u32, f64)> {
        idx.iter()
            .zip(w)
            .map(|(&i, &w)| (infos[i].num.as_ref().map_or(0, |n| n.0), w))
            .collect()
    };
    let first = best_chain(&cands(&weights));
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for &p in &first {
        if let Some(k) = infos[idx[p]].key.as_deref() {
            *counts.entry(k).or_default() += 1;
        }
    }
    let dominant = counts
        .iter()
        .max_by_key(|(k, c)| (**c, std::cmp::Reverse(**k)))
        .filter(|(_, c)| first.len() >= 5 && **c * 10 >= first.len() * 6)
        .map(|(k, _)| (*k).to_string());
    let chain = match dominant {
        None => first,
        Some(dom) => {
            let learned: Vec<f64> = idx
                .iter()
                .zip(&weights)
                .map(|(&i, &w)| match infos[i].key.as_deref() {
                    Some(k) if k == dom => w + LEARNED,
                    Some(_) => w - LEARNED,
                    None => w,
                })
                .collect();
            best_chain(&cands(&learned))
        }
    };
    chain.into_iter().map(|p| idx[p]).collect()
}

/// Section titles (heuristic 7). `in_facts`: whether the facts part is open (roman parts there are
/// relevant law unless they speak of facts).
fn section_of(norm: &str, in_facts: bool) -> Option<Section> {
    if upper_ratio(norm) < 0.8 {
        return None;
    }
    let t = norm.trim_end_matches([',', '.', ':']).to_uppercase();
    let body = ROMAN.find(&t).map_or(t.as_str(), |m| &t[m.end()..]).trim();
    match body {
        "INTRODUCTION" => return Some(Section::Introduction),
        "PROCEDURE" => return Some(Section::Procedure),
        "THE FACTS" | "AS TO THE FACTS" | "FACTS" => return Some(Section::Facts),
        "THE LAW" | "AS TO THE LAW" | "LAW" => return Some(Section::Law),
        _ => {}
    }
    if body.starts_with("THE CIRCUMSTANCES OF THE CASE") {
        return Some(Section::Facts);
    }
    if body.starts_with("RELEVANT ") && !ROMAN.is_match(&t) {
        return Some(Section::RelevantLaw);
    }
    if in_facts && ROMAN.is_match(&t) {
        let facts = ["FACTS", "CIRCUMSTANCES", "PROCEDUR", "BACKGROUND"];
        return Some(if facts.iter().any(|f| body.contains(f)) {
            Section::Facts
        } else {
            Section::RelevantLaw
        });
    }
    None
}

fn warn(code: &str, message: String, at: Option<String>) -> Warning {
    Warning {
        code: code.into(),
        message,
        at,
    }
}

/// `[1, 2, 3, 5]` → `1-3, 5`.
pub fn ranges(nums: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < nums.len() {
        let mut j = i;
        while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            nums[i].to_string()
        } else {
            format!("{}-{}", nums[i], nums[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// Paragraphs of one region given its chain, and the warnings about numbers left out of the chain.
struct Assembled {
    paragraphs: Vec<Paragraph>,
    warnings: Vec<Warning>,
}

/// Builds paragraphs over blocks `range` from the chain (heuristic 6). `prefix` names the region in
/// warnings (`""` for the main judgment, `"opinion 2 "` for an opinion).
fn assemble(
    infos: &[Info],
    range: std::ops::Range<usize>,
    chain: &[usize],
    with_sections: bool,
    prefix: &str,
    extracts: bool,
) -> Assembled {
    let in_chain: BTreeSet<usize> = chain.iter().copied().collect();
    let chain_nums: BTreeSet<u32> = chain
        .iter()
        .filter_map(|&i| infos[i].num.as_ref().map(|n| n.0))
        .collect();
    let mut paragraphs: Vec<Paragraph> = Vec::new();
    let mut warnings = Vec::new();
    let mut quoted: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut section = Section::Unknown;
    let mut in_facts = false;
    let mut toc = 0usize;
    for i in range {
        let info = &infos[i];
        if with_sections
            && matches!(info.kind, Kind::Heading | Kind::Text)
            && info.num.is_none()
            && let Some(s) = section_of(&info.norm, in_facts)
        {
            section = s;
            in_facts = matches!(s, Section::Facts | Section::RelevantLaw);
            continue;
        }
        if in_chain.contains(&i) {
            let (num, rest) = info.num.clone().unwrap_or_default();
            paragraphs.push(Paragraph {
                num,
                section,
                text: rest,
            });
            continue;
        }
        match info.kind {
            Kind::Empty => continue,
            Kind::Toc => {
                toc += 1;
                continue;
            }
            Kind::Heading | Kind::Text => {}
        }
        let current = paragraphs.last().map(|p| p.num);
        if let (Some((n, _)), Some(cur)) = (&info.num, current) {
            let quote_evidence = info.style == StyleClass::Quote || info.in_quote;
            let heading = info.kind == Kind::Heading || info.style == StyleClass::Heading;
            if heading {
                // A numbered heading (`1.  Court of Appeal`) is normal; say so only when it could have
                // been the next paragraph and no style told us it was a heading.
                if *n == cur + 1 && info.style != StyleClass::Heading {
                    warnings.push(warn(
                        "numbered_heading",
                        format!(
                            "{prefix}block “{}” reads like a heading and was not taken as paragraph {n}",
                            excerpt(&info.norm, 60)
                        ),
                        Some(format!("{prefix}§ {cur}")),
                    ));
                }
            } else if quote_evidence || *n > cur {
                quoted.entry(cur).or_default().push(*n);
            } else if chain_nums.contains(n) {
                warnings.push(warn(
                    "duplicate_number",
                    format!(
                        "{prefix}a second paragraph numbered {n} (“{}”) was kept inside § {cur}",
                        excerpt(&info.norm, 60)
                    ),
                    Some(format!("{prefix}§ {cur}")),
                ));
            } else {
                warnings.push(warn(
                    "number_out_of_order",
                    format!(
                        "{prefix}a paragraph numbered {n} after § {cur} (“{}”) was kept inside § {cur}",
                        excerpt(&info.norm, 60)
                    ),
                    Some(format!("{prefix}§ {cur}")),
                ));
            }
        }
        if info.kind == Kind::Heading || run_in_heading(infos, i, &in_chain) {
            continue;
        }
        if let Some(p) = paragraphs.last_mut() {
            if !p.text.is_empty() {
                p.text.push('\n');
            }
            p.text.push_str(&info.norm);
        }
    }
    for (cur, nums) in quoted {
        warnings.push(warn(
            "suspected_quoted_numbering",
            format!(
                "{prefix}§ {cur} contains blocks numbered {} that do not continue the numbering (quotations or lists); kept as its text",
                nums.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            Some(format!("{prefix}§ {cur}")),
        ));
    }
    let mut expected = 1;
    for p in &paragraphs {
        if p.num > expected {
            let missing = if p.num - 1 == expected {
                format!("{expected}")
            } else {
                format!("{expected}-{}", p.num - 1)
            };
            let why = if extracts {
                " (the judgment is published as extracts)"
            } else {
                ""
            };
            warnings.push(warn(
                "numbering_gap",
                format!("{prefix}no paragraph {missing} before § {}{why}", p.num),
                Some(format!("{prefix}§ {}", p.num)),
            ));
        }
        expected = p.num + 1;
    }
    if toc > 0 {
        warnings.push(warn(
            "table_of_contents",
            format!("{prefix}skipped a table of contents of {toc} lines"),
            None,
        ));
    }
    Assembled { paragraphs, warnings }
}

/// A heading without marker or style (`The issue at stake: …` in HTML): a short line starting with a
/// capital, without closing punctuation, outside quotations, right before the next paragraph or
/// heading. Such a line cannot be the end of the paragraph before it, which would close with
/// punctuation.
fn run_in_heading(infos: &[Info], i: usize, in_chain: &BTreeSet<usize>) -> bool {
    let info = &infos[i];
    let short = info.norm.chars().count() <= 150;
    let capital = info.norm.chars().next().is_some_and(char::is_uppercase);
    let closing = ['.', ',', ':', ';', '!', '?', '…', '-', '”', '"', '’', '»', ')'];
    if !short || !capital || info.in_quote || info.norm.ends_with(closing) {
        return false;
    }
    infos[i + 1..]
        .iter()
        .enumerate()
        .find(|(_, n)| n.kind != Kind::Empty)
        .is_some_and(|(k, n)| n.kind == Kind::Heading || in_chain.contains(&(i + 1 + k)))
}

/// The first `n` characters of `s`, with `…` when cut.
pub fn excerpt(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().count() > n {
        out.push('…');
    }
    out
}

fn is_section_start(info: &Info) -> bool {
    info.num.is_none()
        && matches!(info.kind, Kind::Heading | Kind::Text)
        && matches!(
            section_of(&info.norm, false),
            Some(Section::Introduction | Section::Procedure | Section::Facts)
        )
}

fn is_operative(info: &Info) -> bool {
    matches!(info.kind, Kind::Heading | Kind::Text)
        && upper_ratio(&info.norm) >= 0.8
        && info.norm.to_uppercase().starts_with("FOR THESE REASONS")
}

fn is_opinion_heading(info: &Info) -> bool {
    matches!(info.kind, Kind::Heading | Kind::Text)
        && info.num.is_none()
        && info.norm.chars().count() <= 250
        && upper_ratio(&info.norm) >= 0.8
        && OPINION.is_match(&info.norm)
}

fn is_appendix(info: &Info) -> bool {
    matches!(info.kind, Kind::Heading | Kind::Text) && APPENDIX.is_match(&info.norm)
}

fn candidates(infos: &[Info], range: std::ops::Range<usize>) -> Vec<usize> {
    range.filter(|&i| infos[i].num.is_some()).collect()
}

/// Segments a judgment's blocks into a [`Judgment`] (see the module documentation for the rules).
///
/// # Errors
/// [`Error::Invalid`] when no block has any text (an empty body).
pub fn segment(blocks: &[Block], meta: Meta<'_>, mut warnings: Vec<Warning>) -> Result<Judgment> {
    let infos = analyse(blocks);
    if infos.iter().all(|i| i.kind == Kind::Empty) {
        return Err(Error::Invalid {
            source_name: meta.source.to_string(),
            format: meta.format,
            message: "empty body: the document has no text".into(),
        });
    }
    let n = infos.len();
    let start = match infos.iter().position(is_section_start) {
        Some(s) => s,
        None => {
            warnings.push(warn(
                "no_section_titles",
                "no PROCEDURE / INTRODUCTION / THE FACTS title: numbering searched from the start".into(),
                None,
            ));
            infos
                .iter()
                .position(|i| i.norm.starts_with("Delivers the following judgment"))
                .map_or(0, |p| p + 1)
        }
    };
    let header = &infos[..start];
    let title = header
        .iter()
        .chain(infos.iter().take(80))
        .find(|i| i.norm.to_uppercase().starts_with("CASE OF ") && upper_ratio(&i.norm) >= 0.7)
        .map(|i| i.norm.clone())
        .unwrap_or_default();
    let date = header.iter().find_map(|i| {
        let c = DATE.captures(&i.norm)?;
        let months = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let m = months.iter().position(|m| *m == &c[2])? + 1;
        let d: u32 = c[1].parse().ok()?;
        Some(format!("{}-{m:02}-{d:02}", &c[3]))
    });
    let extracts = header.iter().any(|i| i.norm.eq_ignore_ascii_case("(extracts)"));
    if extracts {
        warnings.push(warn(
            "extracts",
            "published as extracts: paragraphs left out keep their numbers, so the numbering has gaps".into(),
            None,
        ));
    }
    let header_toc = header.iter().filter(|i| i.kind == Kind::Toc).count();
    if header_toc > 0 {
        warnings.push(warn(
            "table_of_contents",
            format!("skipped the judgment's table of contents ({header_toc} lines)"),
            None,
        ));
    }

    let opinion_starts: Vec<usize> = (start..n).filter(|&i| is_opinion_heading(&infos[i])).collect();
    let end = match (start..n).find(|&i| is_operative(&infos[i])) {
        Some(e) => e,
        None => {
            warnings.push(warn(
                "no_operative_provisions",
                "no FOR THESE REASONS title: the main judgment runs to the first opinion or the end".into(),
                None,
            ));
            let appendix = (start..n).find(|&i| is_appendix(&infos[i]));
            opinion_starts.first().copied().or(appendix).unwrap_or(n)
        }
    };
    let opinion_starts: Vec<usize> = opinion_starts.into_iter().filter(|&i| i > end).collect();
    let appendix = (end..n).find(|&i| is_appendix(&infos[i]));
    if let Some(a) = appendix {
        warnings.push(warn(
            "appendix",
            format!(
                "skipped an appendix (“{}”, {} blocks)",
                excerpt(&infos[a].norm, 40),
                n - a
            ),
            None,
        ));
    }
    let stop = appendix.unwrap_or(n);

    let chain = choose(&infos, &candidates(&infos, start..end));
    let main = assemble(&infos, start..end, &chain, true, "", extracts);
    if main.paragraphs.is_empty() {
        warnings.push(warn(
            "no_numbered_paragraphs",
            "no numbered paragraph found in the main judgment".into(),
            None,
        ));
    }
    let typed: Vec<u32> = chain
        .iter()
        .filter(|&&i| !infos[i].seq)
        .filter_map(|&i| infos[i].num.as_ref().map(|n| n.0))
        .collect();
    if chain.iter().any(|&i| infos[i].seq) && !typed.is_empty() {
        warnings.push(warn(
            "typed_number",
            format!(
                "paragraphs {} are numbered by typed text, not by the SEQ field the others use",
                ranges(&typed)
            ),
            None,
        ));
    }
    warnings.extend(main.warnings);

    let mut opinions = Vec::new();
    for (k, &h) in opinion_starts.iter().enumerate() {
        if h >= stop {
            break;
        }
        let to = opinion_starts.get(k + 1).copied().unwrap_or(stop).min(stop);
        let prefix = format!("opinion {} ", k + 1);
        let chain = choose(&infos, &candidates(&infos, h + 1..to));
        // Numbered when the chain starts at 1 before any substantial text: short lines such as
        // `(Translation)` or `Table of contents` may come first.
        let numbered = chain.first().is_some_and(|&c| {
            infos[c].num.as_ref().is_some_and(|n| n.0 == 1)
                && (h + 1..c).all(|i| infos[i].kind != Kind::Text || infos[i].norm.chars().count() < 100)
        });
        let (paragraphs, ws) = if numbered {
            let a = assemble(&infos, h + 1..to, &chain, false, &prefix, false);
            (a.paragraphs, a.warnings)
        } else {
            let mut ws = Vec::new();
            if chain.len() >= 2 {
                let nums: Vec<u32> = chain
                    .iter()
                    .filter_map(|&i| infos[i].num.as_ref().map(|n| n.0))
                    .collect();
                ws.push(warn(
                    "opinion_numbering_mixed",
                    format!(
                        "{prefix}starts unnumbered but has typed numbers {}: every block numbered from 1 instead",
                        ranges(&nums)
                    ),
                    Some(prefix.trim().to_string()),
                ));
            }
            (unnumbered(&infos, h + 1..to), ws)
        };
        warnings.extend(ws);
        opinions.push(Opinion {
            title: infos[h].norm.clone(),
            paragraphs,
        });
    }

    Ok(Judgment {
        item: meta.item,
        title,
        date,
        paragraphs: main.paragraphs,
        opinions,
        warnings,
        provenance: Provenance {
            producer: format!(
                "lexbench-parsers {} {}",
                env!("CARGO_PKG_VERSION"),
                meta.format.to_lowercase()
            ),
            ..Provenance::default()
        },
    })
}

/// An unnumbered opinion: each text block is a paragraph numbered from 1, except quotations (by style
/// or open quotation mark), which stay with the paragraph before.
fn unnumbered(infos: &[Info], range: std::ops::Range<usize>) -> Vec<Paragraph> {
    let mut out: Vec<Paragraph> = Vec::new();
    for i in range {
        let info = &infos[i];
        if info.kind != Kind::Text {
            continue;
        }
        let quote = info.style == StyleClass::Quote || info.in_quote;
        match out.last_mut() {
            Some(p) if quote => {
                p.text.push('\n');
                p.text.push_str(&info.norm);
            }
            _ => out.push(Paragraph {
                num: out.len() as u32 + 1,
                section: Section::Unknown,
                text: info.norm.clone(),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! Properties: white space folds the same way for both formats; the chain prefers evidence over
    //! quoted runs that tie in length; ranges print compactly.
    use super::*;

    #[test]
    fn normalize_folds_white_space() {
        assert_eq!(normalize("\t1.\u{a0}\u{a0}The  case\u{ad}s \n"), "1. The cases");
    }

    #[test]
    fn ranges_compress() {
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    }

    #[test]
    fn chain_prefers_weighted_real_paragraphs_over_a_quoted_run() {
        // 1, 2, then quoted 3, 4 (weak), then real 3, 4, 5: both chains have five members.
        let c = [
            (1, 1.0),
            (2, 1.0),
            (3, 0.2),
            (4, 0.2),
            (3, 1.0),
            (4, 1.0),
            (5, 1.0),
        ];
        assert_eq!(best_chain(&c), vec![0, 1, 4, 5, 6]);
    }

    fn block(style: &str, seq: bool, text: &str) -> Block {
        Block {
            text: text.into(),
            style: (!style.is_empty()).then(|| style.into()),
            seq,
            ..Block::default()
        }
    }

    fn run(blocks: &[Block]) -> Judgment {
        let meta = Meta {
            source: "t",
            item: None,
            format: "DOCX",
        };
        segment(blocks, meta, Vec::new()).expect("segments")
    }

    fn codes(j: &Judgment) -> Vec<(&str, Option<&str>)> {
        j.warnings
            .iter()
            .map(|w| (w.code.as_str(), w.at.as_deref()))
            .collect()
    }

    #[test]
    fn duplicates_and_numbers_out_of_order_are_warned_not_taken() {
        let j = run(&[
            block("", false, "PROCEDURE"),
            block("ECHRPara", true, "1.  One."),
            block("ECHRPara", true, "2.  Two."),
            block("ECHRPara", false, "2.  Two again, typed."),
            block("ECHRPara", true, "3.  Three."),
            block("ECHRPara", false, "1.  One, again."),
            block("ECHRPara", true, "5.  Five."),
            block("ECHRPara", false, "4.  Four, after five."),
        ]);
        let nums: Vec<u32> = j.paragraphs.iter().map(|p| p.num).collect();
        assert_eq!(nums, [1, 2, 3, 5]);
        assert_eq!(j.paragraphs[1].text, "Two.\n2. Two again, typed.");
        assert_eq!(
            codes(&j),
            [
                ("no_operative_provisions", None),
                ("duplicate_number", Some("§ 2")),
                ("duplicate_number", Some("§ 3")),
                ("number_out_of_order", Some("§ 5")),
                ("numbering_gap", Some("§ 5")),
            ]
        );
    }

    #[test]
    fn an_unstyled_numbered_heading_is_not_the_next_paragraph() {
        let j = run(&[
            block("", false, "THE LAW"),
            block("", false, "1.  One."),
            block("", false, "2.  Court of Appeal"),
            block("", false, "2.  Two."),
        ]);
        let nums: Vec<u32> = j.paragraphs.iter().map(|p| p.num).collect();
        assert_eq!(nums, [1, 2]);
        assert_eq!(j.paragraphs[1].section, Section::Law);
        assert!(codes(&j).contains(&("numbered_heading", Some("§ 1"))));
    }

    #[test]
    fn operative_items_and_opinions_are_not_main_paragraphs() {
        let j = run(&[
            block("", false, "CASE OF A v. B"),
            block("", false, "12 March 2020"),
            block("", false, "PROCEDURE"),
            block("", true, "1.  One."),
            block("", false, "FOR THESE REASONS, THE COURT, UNANIMOUSLY,"),
            block("", false, "1.  Holds that there has been a violation;"),
            block("", false, "2.  Dismisses the remainder."),
            block("", false, "CONCURRING OPINION OF JUDGE X"),
            block("OpiPara", false, "I agree."),
            block("OpiParaQuote", false, "“A quotation.”"),
            block("OpiPara", false, "But not entirely."),
        ]);
        assert_eq!(j.title, "CASE OF A v. B");
        assert_eq!(j.date.as_deref(), Some("2020-03-12"));
        assert_eq!(j.paragraphs.len(), 1);
        assert_eq!(j.opinions.len(), 1);
        let o: Vec<(u32, &str)> = j.opinions[0]
            .paragraphs
            .iter()
            .map(|p| (p.num, p.text.as_str()))
            .collect();
        assert_eq!(o, [(1, "I agree.\n“A quotation.”"), (2, "But not entirely.")]);
    }

    #[test]
    fn chain_accepts_a_real_gap() {
        let c = [(1, 3.0), (2, 3.0), (30, 3.0), (31, 3.0)];
        assert_eq!(best_chain(&c), vec![0, 1, 2, 3]);
    }
}
