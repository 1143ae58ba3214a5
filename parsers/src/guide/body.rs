//! Locating headings in the body and cutting the text under each.
//!
//! Body paragraphs are numbered continuously through a guide (`19.  A State's jurisdiction …`), so a
//! line starting with `1.` may be a heading or a paragraph. With a table of contents (or a PDF outline)
//! the titles decide: [`locate`] walks the entries in order and takes the first later body line whose
//! text, after its number and without whitespace, equals the entry's title — possibly continued on up
//! to three following lines (headings wrap) and possibly followed by a footnote number glued to the
//! title (`Dissolution of political parties8`). The body's own number is kept and compared with the
//! table of contents' (the Terrorism guide's contents list `Right to a fair trial` unnumbered and its
//! sub-headings as `3.`–`6.`, the body prints `B.` and `1.`–`4.`): every disagreement becomes a
//! warning, and the body's numbering wins because the text under the headings follows it.
//!
//! Without any table of contents (the Art 2 partial pages) [`infer`] reads headings from numbering
//! alone: a numbered short line is a heading when its number continues an open heading sequence or
//! starts a new level, and an arabic number is a paragraph when it is the next paragraph number.

use std::sync::LazyLock;

use lexbench_core::records::Warning;
use regex::Regex;

use super::text::{Page, compact, squash};
use super::toc::{Kind, Leveled, Leveler, TocEntry, split_number};

/// A body line with the page it is printed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Printed page number.
    pub page: u32,
    /// The text.
    pub text: String,
}

/// Flattens pages into lines.
pub fn lines_of(pages: &[Page]) -> Vec<Line> {
    pages
        .iter()
        .flat_map(|p| {
            p.lines.iter().map(move |l| Line {
                page: p.number,
                text: l.clone(),
            })
        })
        .collect()
}

/// A heading found (or not) in the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// The number used for the hierarchy (the body's when it printed one).
    pub number: Option<String>,
    /// The title.
    pub title: String,
    /// The page the table of contents gives.
    pub toc_page: Option<u32>,
    /// Where the heading starts and ends in the body lines (end exclusive), if found.
    pub span: Option<(usize, usize)>,
    /// The printed page in the body, if found.
    pub body_page: Option<u32>,
}

/// Is `r` the title `t` (both compacted), possibly followed by a glued footnote number?
fn title_matches(r: &str, t: &str) -> bool {
    r == t || (r.starts_with(t) && r.len() > t.len() && r[t.len()..].bytes().all(|b| b.is_ascii_digit()))
}

/// Tries to read heading `t` (compacted) at line `i`: returns (body number, end line) on success.
fn match_at(lines: &[Line], i: usize, t: &str) -> Option<(Option<String>, usize)> {
    let (num, rest) = split_number(&lines[i].text);
    let attempts: [(Option<String>, String); 2] = [(num, compact(&rest)), (None, compact(&lines[i].text))];
    for (num, mut r) in attempts {
        if r.is_empty() {
            continue;
        }
        let mut end = i + 1;
        let mut extra = 0;
        loop {
            if title_matches(&r, t) {
                return Some((num, end));
            }
            if !(t.starts_with(&r) && r.chars().count() >= 8 && extra < 3) {
                break;
            }
            // Continue on the next non-blank line.
            while end < lines.len() && lines[end].text.trim().is_empty() {
                end += 1;
            }
            if end >= lines.len() {
                break;
            }
            r.push_str(&compact(&lines[end].text));
            end += 1;
            extra += 1;
        }
    }
    None
}

fn warn(code: &str, message: String, at: Option<String>) -> Warning {
    Warning {
        code: code.to_owned(),
        message,
        at,
    }
}

fn show(number: &Option<String>, title: &str) -> String {
    match number {
        Some(n) => format!("{n}. {title}"),
        None => title.to_owned(),
    }
}

/// Locates table-of-contents entries in the body lines, in order, reporting disagreements.
pub fn locate(lines: &[Line], entries: &[TocEntry], warnings: &mut Vec<Warning>) -> Vec<Heading> {
    let mut cursor = 0;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let t = compact(&e.title);
        let found = (cursor..lines.len())
            .filter(|&i| !lines[i].text.trim().is_empty())
            .find_map(|i| match_at(lines, i, &t).map(|(n, end)| (i, n, end)));
        let mut h = Heading {
            number: e.number.clone(),
            title: e.title.clone(),
            toc_page: e.page,
            span: None,
            body_page: None,
        };
        match found {
            None => warnings.push(warn(
                "heading_not_in_body",
                format!(
                    "table-of-contents entry “{}” was not found in the body",
                    show(&e.number, &e.title)
                ),
                e.page.map(|p| format!("page {p}")),
            )),
            Some((i, body_number, end)) => {
                cursor = end;
                h.span = Some((i, end));
                h.body_page = Some(lines[i].page);
                let at = Some(format!("page {}", lines[i].page));
                match (&e.number, &body_number) {
                    (Some(a), Some(b)) if a != b => {
                        warnings.push(warn(
                            "number_mismatch",
                            format!(
                                "“{}” is numbered {a}. in the table of contents and {b}. in the body; the body's number is used",
                                e.title
                            ),
                            at,
                        ));
                        h.number = body_number;
                    }
                    (None, Some(b)) => {
                        warnings.push(warn(
                            "unnumbered_in_toc",
                            format!(
                                "“{}” has no number in the table of contents but is numbered {b}. in the body; the body's number is used",
                                e.title
                            ),
                            at,
                        ));
                        h.number = body_number;
                    }
                    (Some(a), None) => warnings.push(warn(
                        "unnumbered_in_body",
                        format!(
                            "“{}” is numbered {a}. in the table of contents but not in the body",
                            e.title
                        ),
                        at,
                    )),
                    _ => {}
                }
                if let Some(tp) = e.page
                    && tp.abs_diff(lines[i].page) > 1
                {
                    warnings.push(warn(
                        "page_mismatch",
                        format!(
                            "“{}” is on page {} of the body, the table of contents says {tp}",
                            e.title, lines[i].page
                        ),
                        Some(format!("page {}", lines[i].page)),
                    ));
                }
            }
        }
        out.push(h);
    }
    out
}

static PARA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(\d{1,4})\.\s+\S").expect("static regex"));
static ANY_MARK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*([IVXLC]+|[A-Z]|\d{1,4}|[a-z]|[ivxl]+)\.\s+\S").expect("static regex"));

/// Infers headings from numbering alone (no table of contents, no outline).
///
/// Heuristics: a heading line is short (its title at most 110 characters after joining a wrap), its
/// title starts with a capital letter or a quote, and its number continues an open heading sequence or
/// starts a new level (as in [`assign_levels`](super::toc::assign_levels)); an arabic number equal to the next paragraph number is
/// a paragraph. A heading continues on the next line when its own line is long (≥ 60 characters, so
/// it reached the margin) and the next line is short (< 50) and unnumbered.
pub fn infer(lines: &[Line]) -> Vec<Heading> {
    let mut out: Vec<Heading> = Vec::new();
    // The levels of `out` as they are assigned, and per level the last heading at it (its index in
    // `out`): the state `assign_levels` over `out` would rebuild for every candidate line.
    let mut leveler = Leveler::default();
    let mut last_at_level: Vec<Option<(usize, Leveled)>> = Vec::new();
    let mut last_para = 0u32;
    let mut i = 0;
    while i < lines.len() {
        let text = squash(&lines[i].text);
        let (number, title) = split_number(&text);
        let Some(number) = number else {
            i += 1;
            continue;
        };
        let para_no: Option<u32> = PARA.captures(&text).and_then(|c| c[1].parse().ok());
        if let Some(n) = para_no
            && (n == last_para + 1 || n == last_para + 2)
        {
            last_para = n;
            i += 1;
            continue;
        }
        let starts_ok = title
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || "“\"‘'".contains(c));
        let mut full = title.clone();
        let mut end = i + 1;
        if text.chars().count() >= 60
            && let Some(next) = lines.get(i + 1)
        {
            let n = squash(&next.text);
            if !n.is_empty() && n.chars().count() < 50 && !ANY_MARK.is_match(&n) {
                full = format!("{full} {n}");
                end = i + 2;
            }
        }
        let short = full.chars().count() <= 110;
        // Would this number continue the heading sequence? Leveled after the headings so far (a
        // copy of their leveler: a few entries), not by leveling them all again.
        let me = leveler.clone().push(Some(number.as_str()));
        // The last heading at this level or above: a sibling to continue, or a parent to start under.
        let before = last_at_level
            .iter()
            .take(usize::from(me.level) + 1)
            .flatten()
            .max_by_key(|(k, _)| *k)
            .map(|(_, l)| l);
        let continues = match before {
            Some(p) if p.level == me.level && p.kind == me.kind => p.value + 1 == me.value,
            _ => me.value == 1,
        };
        // A heading block ends the text block: a blank line, a numbered line or the end follows.
        let ends_block = lines.get(end).is_none_or(|n| {
            let n = n.text.trim();
            n.is_empty() || ANY_MARK.is_match(n) || n.starts_with(['\u{f0a7}', '•', '-'])
        });
        let is_heading = starts_ok && short && continues && ends_block;
        if is_heading {
            let me = leveler.push(Some(number.as_str()));
            let level = usize::from(me.level);
            if last_at_level.len() <= level {
                last_at_level.resize(level + 1, None);
            }
            last_at_level[level] = Some((out.len(), me));
            out.push(Heading {
                number: Some(number),
                title: full,
                toc_page: None,
                span: Some((i, end)),
                body_page: Some(lines[i].page),
            });
            i = end;
        } else {
            if let Some(n) = para_no
                && n > last_para
                && me.kind == Kind::Arabic
                && !short
            {
                last_para = n;
            }
            i += 1;
        }
    }
    out
}

/// The text under each located heading: from its end to the next located heading's start.
pub fn texts(lines: &[Line], headings: &[Heading]) -> Vec<(String, Option<u32>)> {
    // `next_start[k]`: the start of the first located heading after heading k (the end of the
    // lines when none), filled from the back in one pass.
    let mut next_start = vec![lines.len(); headings.len()];
    for k in (0..headings.len().saturating_sub(1)).rev() {
        next_start[k] = headings[k + 1].span.map_or(next_start[k + 1], |(s, _)| s);
    }
    let mut out = Vec::with_capacity(headings.len());
    for (k, h) in headings.iter().enumerate() {
        let Some((_, end)) = h.span else {
            out.push((String::new(), None));
            continue;
        };
        let next = next_start[k];
        let text = lines[end..next.max(end)]
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        out.push((text, h.body_page));
    }
    out
}

#[cfg(test)]
mod tests {
    //! Properties: a wrapped heading and a heading with a glued footnote number are found; a body
    //! paragraph starting `1.` is not taken for the heading `1.`; number disagreements are warned about;
    //! inference tells headings from paragraphs by numbering.
    use super::*;

    fn lines(v: &[&str]) -> Vec<Line> {
        v.iter()
            .map(|t| Line {
                page: 9,
                text: (*t).to_owned(),
            })
            .collect()
    }

    #[test]
    fn locate_wrapped_footnoted_and_renumbered() {
        let l = lines(&[
            "1.  The territoriality principle is a paragraph here",
            "II.  Moving on from the surveillance stage to the active ",
            "phase ",
            "19.  Text",
            "d.  Dissolution of political parties8 ",
            "B.  Right to a fair trial",
        ]);
        let entries = [
            TocEntry {
                number: Some("II".into()),
                title: "Moving on from the surveillance stage to the active phase".into(),
                page: Some(9),
            },
            TocEntry {
                number: Some("D".into()),
                title: "Dissolution of political parties".into(),
                page: Some(9),
            },
            TocEntry {
                number: None,
                title: "Right to a fair trial".into(),
                page: Some(9),
            },
            TocEntry {
                number: Some("1".into()),
                title: "The territoriality principle".into(),
                page: Some(9),
            },
        ];
        let mut w = Vec::new();
        let h = locate(&l, &entries, &mut w);
        assert_eq!(h[0].span, Some((1, 3)));
        assert_eq!(h[1].span, Some((4, 5)));
        assert_eq!(h[1].number.as_deref(), Some("d"));
        assert_eq!(h[2].number.as_deref(), Some("B"));
        assert_eq!(h[3].span, None);
        let codes: Vec<&str> = w.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(
            codes,
            ["number_mismatch", "unnumbered_in_toc", "heading_not_in_body"]
        );
        let t = texts(&l, &h);
        assert_eq!(t[0].0, "19.  Text");
    }

    #[test]
    fn infer_headings_from_numbering() {
        let l = lines(&[
            "I.  General considerations",
            "A.  Interpretation of Article 2",
            "1.  The Court’s approach to the interpretation of Article 2 must be guided by the fact that the object",
            "2.  Article 2 ranks as one of the most fundamental provisions in the Convention, one which in peace",
            "B.  State obligations",
            "3.  Text.",
            "1.  Protection of persons from lethal use of force",
            "4.  Text.",
            "a.  General population",
            "5.  Text.",
            "b.  Persons deprived of their liberty and vulnerable persons under the care of ",
            "the State  ",
            "6.  Text.",
            "2. Deprivation of life shall not be regarded as inflicted in contravention of this Article when it results",
            "from the use of force which is no more than absolutely necessary:",
        ]);
        let h = infer(&l);
        let got: Vec<String> = h.iter().map(|h| show(&h.number, &h.title)).collect();
        assert_eq!(
            got,
            [
                "I. General considerations",
                "A. Interpretation of Article 2",
                "B. State obligations",
                "1. Protection of persons from lethal use of force",
                "a. General population",
                "b. Persons deprived of their liberty and vulnerable persons under the care of the State",
            ]
        );
    }
}
