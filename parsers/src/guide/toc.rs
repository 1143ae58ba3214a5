//! The table of contents: entries (number, title, page) and the heading hierarchy they imply.
//!
//! Entries are lines ending in dot leaders and a page number (`1.   The burden of proof ....... 46`;
//! a long title leaves room for a single dot: `… territory of another State . 20`);
//! an entry may wrap, its first line(s) then lack the leaders and are joined to the next line that has
//! them. Numbers are classified into kinds — `I.` roman, `A.` capital, `1.` arabic, `a.` lower-case
//! letter, `i.` lower-case roman — and levels follow from nesting, not from the kind alone (the
//! Terrorism guide puts `1.` directly under `V.`). See [`assign_levels`] for the `i.`/`I.`/`v.`
//! ambiguity between letters and roman numerals.

use std::sync::LazyLock;

use regex::Regex;

use super::text::{Page, squash};

/// The kind of a heading number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `I.`, `II.` …
    Roman,
    /// `A.`, `B.` …
    Capital,
    /// `1.`, `2.` …
    Arabic,
    /// `a.`, `b.` …
    Lower,
    /// `i.`, `ii.` …
    LowerRoman,
    /// No number: "Introduction", "List of cited cases".
    None,
}

impl Kind {
    /// Does the release string form (DATA.md §3) keep numbers of this kind?
    pub fn printed_in_release(self) -> bool {
        matches!(self, Kind::Arabic | Kind::Lower | Kind::LowerRoman)
    }
}

/// A table-of-contents entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TocEntry {
    /// The printed number without its period (`II`, `b`), if any.
    pub number: Option<String>,
    /// The title, whitespace collapsed.
    pub title: String,
    /// The page the entry points to.
    pub page: Option<u32>,
}

static LEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(.*?)\s*(?:(?:\.\s*){3,}|\s\.\s*)(\d{1,4})\s*$").expect("static regex"));
static NUMBERED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*([IVXLC]+|[A-Z]|\d{1,3}|[a-z]|[ivxl]+)\.\s+(\S.*)$").expect("static regex")
});

/// Splits `N.  Title` into number and title; unnumbered text gives `(None, text)`.
pub fn split_number(line: &str) -> (Option<String>, String) {
    match NUMBERED.captures(line) {
        Some(c) => (Some(c[1].to_owned()), squash(&c[2])),
        None => (None, squash(line)),
    }
}

/// The "Table of contents" line, in the guides' languages seen so far (English, French, Ukrainian).
fn is_toc_title(line: &str) -> bool {
    let t = squash(line);
    ["table of contents", "contents", "table des matières", "зміст"]
        .iter()
        .any(|w| t.to_lowercase() == *w)
}

/// Finds the table of contents: the page with a `Table of contents` line and the following pages as
/// long as they hold entries. Returns the entries and the index of the first page after it, or `None`
/// when the document has no table of contents.
pub fn parse_toc(pages: &[Page]) -> Option<(Vec<TocEntry>, usize)> {
    let start = pages
        .iter()
        .position(|p| p.lines.iter().any(|l| is_toc_title(l)))?;
    let mut entries = Vec::new();
    let mut end = start;
    for (i, page) in pages.iter().enumerate().skip(start) {
        let mut pending = String::new();
        let mut found = 0;
        let mut seen_title = i > start;
        for l in &page.lines {
            let t = squash(l);
            if t.is_empty() {
                continue;
            }
            if !seen_title {
                seen_title = is_toc_title(&t);
                continue;
            }
            if let Some(c) = LEADER.captures(&t) {
                let text = if pending.is_empty() {
                    c[1].to_owned()
                } else {
                    format!("{pending} {}", &c[1])
                };
                pending.clear();
                let (number, title) = split_number(&text);
                entries.push(TocEntry {
                    number,
                    title,
                    page: c[2].parse().ok(),
                });
                found += 1;
            } else if pending.split_whitespace().count() < 40 {
                // A wrapped entry's first line (joined to the next line with leaders).
                if !pending.is_empty() {
                    pending.push(' ');
                }
                pending.push_str(&t);
            }
        }
        if found == 0 && i > start {
            break;
        }
        end = i + 1;
    }
    (!entries.is_empty()).then_some((entries, end))
}

fn roman_value(s: &str) -> Option<u32> {
    let mut total = 0u32;
    let mut prev = 0u32;
    for c in s.chars().rev() {
        let v = match c.to_ascii_uppercase() {
            'I' => 1,
            'V' => 5,
            'X' => 10,
            'L' => 50,
            'C' => 100,
            _ => return None,
        };
        if v < prev {
            total = total.checked_sub(v)?;
        } else {
            total += v;
            prev = v;
        }
    }
    // Canonical form only (`IIII`, `VX` are not numerals).
    (to_roman(total).eq_ignore_ascii_case(s)).then_some(total)
}

fn to_roman(mut n: u32) -> String {
    let table = [
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut s = String::new();
    for (v, r) in table {
        while n >= v {
            s.push_str(r);
            n -= v;
        }
    }
    s
}

/// The possible (kind, value) readings of a number.
fn readings(number: &str) -> Vec<(Kind, u32)> {
    let mut out = Vec::new();
    if let Ok(n) = number.parse::<u32>() {
        out.push((Kind::Arabic, n));
        return out;
    }
    let mut chars = number.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        if c.is_ascii_uppercase() {
            out.push((Kind::Capital, c as u32 - 'A' as u32 + 1));
        } else if c.is_ascii_lowercase() {
            out.push((Kind::Lower, c as u32 - 'a' as u32 + 1));
        }
    }
    if let Some(v) = roman_value(number) {
        let kind = if number.chars().all(|c| c.is_ascii_uppercase()) {
            Kind::Roman
        } else if number.chars().all(|c| c.is_ascii_lowercase()) {
            Kind::LowerRoman
        } else {
            return out;
        };
        out.push((kind, v));
    }
    out
}

/// Is this unnumbered title front or back matter (always level 1, outside the numbered tree)?
pub fn is_matter(title: &str) -> bool {
    let t = title.to_ascii_lowercase();
    [
        "note to readers",
        "introduction",
        "list of cited cases",
        "table of contents",
        "preliminary remarks",
        "foreword",
    ]
    .iter()
    .any(|m| t.starts_with(m))
}

/// One numbered (or not) heading in document order, to be leveled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leveled {
    /// Kind chosen for the number.
    pub kind: Kind,
    /// Value of the number in its kind (`iv` → 4), 0 when unnumbered.
    pub value: u32,
    /// Depth from 1.
    pub level: u8,
}

/// Assigns kinds and levels to a sequence of heading numbers.
///
/// A stack holds the open headings (kind, value). A heading whose kind is open closes everything
/// below it and becomes a sibling; a new kind opens a child level. Roman headings and front/back matter
/// always start at level 1. For numbers with two readings (`i` letter or roman, `V` capital or roman,
/// `C`, `D`, `L`, `X`…) the reading that *continues* a sequence wins: the next sibling of an open
/// heading of that kind, or the first number (1) of a new child level; when both continue, the
/// sibling reading wins (`h.` → `i.` is a letter); when neither does, the roman reading wins for
/// multi-letter numbers and `i`/`I`, the letter reading otherwise.
pub fn assign_levels(items: &[(Option<&str>, &str)]) -> Vec<Leveled> {
    let mut leveler = Leveler::default();
    items.iter().map(|(number, _)| leveler.push(*number)).collect()
}

/// [`assign_levels`] one heading at a time: the stack of open headings (kind, value) between calls.
/// Each kind is open at most once, so the stack is a few entries deep and a step costs the same
/// however many headings came before (the body's heading inference levels each candidate against
/// all the headings before it).
#[derive(Debug, Clone, Default)]
pub struct Leveler {
    stack: Vec<(Kind, u32)>,
}

impl Leveler {
    /// Levels the next heading (`None`: unnumbered).
    pub fn push(&mut self, number: Option<&str>) -> Leveled {
        let stack = &mut self.stack;
        let Some(number) = number else {
            // Unnumbered: front/back matter resets; anything else is taken as a level-1 heading too
            // (callers warn about it).
            stack.clear();
            stack.push((Kind::None, 0));
            return Leveled {
                kind: Kind::None,
                value: 0,
                level: 1,
            };
        };
        let rs = readings(number);
        let continues = |k: Kind, v: u32| -> (bool, bool) {
            // (sibling continuation, child start)
            let sib = stack
                .iter()
                .rev()
                .find(|(sk, _)| *sk == k)
                .is_some_and(|(_, sv)| *sv + 1 == v);
            let child = v == 1 && !stack.iter().any(|(sk, _)| *sk == k);
            (sib, child)
        };
        let pick = if rs.len() == 1 {
            rs[0]
        } else if rs.is_empty() {
            (Kind::Arabic, 0)
        } else {
            let scored: Vec<((Kind, u32), (bool, bool))> =
                rs.iter().map(|&(k, v)| ((k, v), continues(k, v))).collect();
            if let Some((r, _)) = scored.iter().find(|(_, (sib, _))| *sib) {
                *r
            } else if let Some((r, _)) = scored.iter().find(|(_, (_, child))| *child) {
                *r
            } else {
                let roman_first = number.len() > 1 || number == "i" || number == "I";
                *rs.iter()
                    .find(|(k, _)| matches!(k, Kind::Roman | Kind::LowerRoman) == roman_first)
                    .unwrap_or(&rs[0])
            }
        };
        let (kind, value) = pick;
        if kind == Kind::Roman || stack.first().is_some_and(|(k, _)| *k == Kind::None) {
            stack.clear();
        }
        if let Some(pos) = stack.iter().position(|(k, _)| *k == kind) {
            stack.truncate(pos);
        }
        stack.push((kind, value));
        Leveled {
            kind,
            value,
            level: stack.len() as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties: dot-leader entries and wrapped entries are read; levels follow nesting; `i.` is a
    //! roman numeral under a letter and a letter after `h.`; `V.` after `H.` is roman when a roman
    //! sequence is open at IV; a number without a readable kind does not panic.
    use super::*;

    fn levels(items: &[(Option<&str>, &str)]) -> Vec<(Kind, u8)> {
        assign_levels(items)
            .into_iter()
            .map(|l| (l.kind, l.level))
            .collect()
    }

    #[test]
    fn nesting_and_ambiguity() {
        let got = levels(&[
            (Option::None, "Introduction"),
            (Some("I"), "t"),
            (Some("A"), "t"),
            (Some("1"), "t"),
            (Some("a"), "t"),
            (Some("i"), "t"),
            (Some("ii"), "t"),
            (Some("b"), "t"),
            (Some("B"), "t"),
            (Some("II"), "t"),
            (Some("1"), "t"),
            (Option::None, "List of cited cases"),
        ]);
        use Kind::*;
        assert_eq!(
            got,
            [
                (None, 1),
                (Roman, 1),
                (Capital, 2),
                (Arabic, 3),
                (Lower, 4),
                (LowerRoman, 5),
                (LowerRoman, 5),
                (Lower, 4),
                (Capital, 2),
                (Roman, 1),
                (Arabic, 2),
                (None, 1)
            ]
        );
    }

    #[test]
    fn letter_i_after_h_and_roman_v_after_capital_h() {
        let mut items = vec![(Some("I"), "t"), (Some("A"), "t")];
        let letters = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        items.extend(letters.iter().map(|l| (Some(*l), "t")));
        let got = levels(&items);
        assert_eq!(got.last(), Some(&(Kind::Lower, 3)));
        let got = levels(&[
            (Some("IV"), "t"),
            (Some("A"), "t"),
            (Some("B"), "t"),
            (Some("C"), "t"),
            (Some("D"), "t"),
            (Some("E"), "t"),
            (Some("F"), "t"),
            (Some("G"), "t"),
            (Some("H"), "t"),
            (Some("V"), "t"),
            (Some("1"), "t"),
        ]);
        assert_eq!(got[8], (Kind::Capital, 2));
        assert_eq!(got[9], (Kind::Roman, 1));
        assert_eq!(got[10], (Kind::Arabic, 2));
        // `C.` after `B.` is a capital, not roman 100.
        assert_eq!(
            levels(&[
                (Some("I"), "t"),
                (Some("A"), "t"),
                (Some("B"), "t"),
                (Some("C"), "t")
            ])[3],
            (Kind::Capital, 2)
        );
    }

    #[test]
    fn entries_with_leaders_and_wraps() {
        let page = Page {
            number: 3,
            lines: [
                "Table of contents",
                "",
                "Introduction ......... 6",
                "a.   Jurisdiction of the “active” State on the grounds of its military action outside its ",
                "",
                "territory ....................... 29 ",
                "i.   “Traditional” military occupation ................. 31 ",
            ]
            .map(String::from)
            .to_vec(),
        };
        let (entries, end) = parse_toc(&[page]).unwrap();
        assert_eq!(end, 1);
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1].number.as_deref(), Some("a"));
        assert!(
            entries[1].title.ends_with("outside its territory"),
            "{}",
            entries[1].title
        );
        assert_eq!(entries[1].page, Some(29));
        assert_eq!(entries[2].title, "“Traditional” military occupation");
    }
}
