//! Page text clean-up: running headers and footers out, page numbers and the update date kept aside.
//!
//! A guide page, as a PDF text extractor gives it, starts with the running header (the guide's short
//! title, one or two lines) and ends with the footer `European Court of Human Rights  N/53  Last update:
//! 31.08.2023` (some guides print `Update:`), either on three lines or glued onto one line together with
//! the first line of the body (the Art 2 fixture). [`clean_pages`] removes both and returns the body
//! lines of every page with the printed page number.
//!
//! Heuristics (each checked by a test in this module):
//! - the running header is the longest run of leading non-blank lines (at most 3) shared, modulo
//!   whitespace, by at least half of the pages after the cover; only those leading lines are removed;
//! - a footer line is `European Court of Human Rights` alone or followed by `N/M`; whatever follows the
//!   footer on the same line (`… Last update: 31.08.2023  I.  General considerations`) is body text;
//! - lone `N/M` lines and lone `(Last) Update: dd.mm.yyyy` lines are footer parts.

use std::sync::LazyLock;

use regex::Regex;

/// One page after clean-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The printed page number (`6/57` → 6) if the footer gave one, else the 1-based position.
    pub number: u32,
    /// The body lines, trailing whitespace removed; blank lines kept (they separate blocks).
    pub lines: Vec<String>,
}

/// What the clean-up found besides the pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageSet {
    /// The cleaned pages, in order.
    pub pages: Vec<Page>,
    /// The running header, its lines joined with a space, whitespace collapsed.
    pub header: Option<String>,
    /// The `Last update` date from the footers (ISO 8601).
    pub updated: Option<String>,
}

static FOOTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*European Court of Human Rights\s*(?:(\d{1,4})\s*/\s*\d{1,4})?\s*(?:(?:Last\s+)?[Uu]pdate:\s*(\d{2})\.(\d{2})\.(\d{4}))?\s*(.*)$",
    )
    .expect("static regex")
});
static PAGE_NO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(\d{1,4})\s*/\s*\d{1,4}\s*$").expect("static regex"));
static UPDATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:Last\s+)?[Uu]pdate:\s*(\d{2})\.(\d{2})\.(\d{4})\s*$").expect("static regex")
});

/// Whitespace removed: the comparison key for text that PDF extraction spaces irregularly
/// (`self -harm`, `vulnerabl e`).
pub fn compact(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Whitespace runs collapsed to one space, ends trimmed.
pub fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Splits extracted text on form feeds (one page each) and cleans the pages.
pub fn clean_text(text: &str) -> PageSet {
    let mut raw: Vec<&str> = text.split('\u{c}').collect();
    // A trailing form feed leaves an empty last "page".
    while raw.last().is_some_and(|p| p.trim().is_empty()) && raw.len() > 1 {
        raw.pop();
    }
    clean_pages(&raw.iter().map(|p| (None, *p)).collect::<Vec<_>>())
}

/// Cleans pages given as (known page number, text).
///
/// Zero-width characters ([`super::citation::is_zero_width`]: U+200B, U+200C, U+200D, U+2060,
/// U+FEFF) are taken out first: they take no room on the page, and one at the start of a line (the
/// byte-order mark of a second file joined by `cat`) would hide a heading's number, a footer or a
/// citation's case name (issue 54, item 6).
pub fn clean_pages(raw: &[(Option<u32>, &str)]) -> PageSet {
    let visible: Vec<std::borrow::Cow<'_, str>> = raw
        .iter()
        .map(|(_, t)| {
            if t.contains(super::citation::is_zero_width) {
                std::borrow::Cow::Owned(
                    t.chars()
                        .filter(|&c| !super::citation::is_zero_width(c))
                        .collect(),
                )
            } else {
                std::borrow::Cow::Borrowed(*t)
            }
        })
        .collect();
    let split: Vec<Vec<&str>> = visible.iter().map(|t| t.lines().collect()).collect();
    let header = running_header(&split);
    let header_keys: Vec<String> = header.iter().map(|l| compact(l)).collect();
    let mut updated = None;
    let mut pages = Vec::with_capacity(raw.len());
    for (i, lines) in split.iter().enumerate() {
        let mut number = raw[i].0;
        let mut out: Vec<String> = Vec::with_capacity(lines.len());
        // Leading header lines (only in order, only at the top).
        let mut k = 0;
        let mut skip_until = 0;
        for (j, l) in lines.iter().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            if k < header_keys.len() && compact(l) == header_keys[k] {
                k += 1;
                skip_until = j + 1;
            } else {
                break;
            }
        }
        for l in &lines[skip_until..] {
            if let Some(c) = FOOTER
                .captures(l)
                .filter(|c| c.get(1).is_some() || c[5].trim().is_empty())
            {
                if let Some(n) = c.get(1) {
                    number = number.or_else(|| n.as_str().parse().ok());
                }
                if let (Some(d), Some(m), Some(y)) = (c.get(2), c.get(3), c.get(4)) {
                    updated.get_or_insert_with(|| format!("{}-{}-{}", y.as_str(), m.as_str(), d.as_str()));
                }
                let rest = c.get(5).map_or("", |r| r.as_str()).trim_end();
                if !rest.trim().is_empty() {
                    out.push(rest.to_owned());
                }
                continue;
            }
            if let Some(c) = PAGE_NO.captures(l) {
                number = number.or_else(|| c[1].parse().ok());
                continue;
            }
            if let Some(c) = UPDATE.captures(l) {
                updated.get_or_insert_with(|| format!("{}-{}-{}", &c[3], &c[2], &c[1]));
                continue;
            }
            out.push(l.trim_end().to_owned());
        }
        // Trailing blank lines carry nothing.
        while out.last().is_some_and(|l| l.trim().is_empty()) {
            out.pop();
        }
        pages.push(Page {
            number: number.unwrap_or(i as u32 + 1),
            lines: out,
        });
    }
    PageSet {
        pages,
        header: (!header.is_empty()).then(|| squash(&header.join(" "))),
        updated,
    }
}

/// The longest run of leading non-blank lines (at most 3) that at least half of the pages after the
/// first share, compared without whitespace.
fn running_header<'a>(pages: &[Vec<&'a str>]) -> Vec<&'a str> {
    let body: Vec<Vec<&str>> = pages
        .iter()
        .skip(1)
        .map(|p| {
            p.iter()
                .copied()
                .filter(|l| !l.trim().is_empty())
                .take(3)
                .collect()
        })
        .collect();
    if body.is_empty() {
        return Vec::new();
    }
    // At least half of the pages, and at least two when there are two.
    let need = body.len().div_ceil(2).max(body.len().min(2));
    let mut best: Vec<&str> = Vec::new();
    for n in 1..=3 {
        // The most common n-line prefix.
        let mut counts: std::collections::BTreeMap<Vec<String>, (usize, Vec<&str>)> = Default::default();
        for p in &body {
            if p.len() >= n {
                let key: Vec<String> = p[..n].iter().map(|l| compact(l)).collect();
                counts.entry(key).or_insert((0, p[..n].to_vec())).0 += 1;
            }
        }
        let top = counts.into_values().max_by_key(|(c, _)| *c);
        match top {
            Some((c, lines)) if c >= need && !FOOTER.is_match(lines[n - 1]) => best = lines,
            _ => break,
        }
    }
    best
}

#[cfg(test)]
mod tests {
    //! Properties: headers are removed only at the top of a page; footers are removed in their
    //! three-line and one-line forms, keeping body text glued after them; page numbers and the update
    //! date are read from footers.
    use super::*;

    const P1: &str = "Guide on X\nof the Convention\n\nCover\n";
    const P2: &str = "Guide on X –\nConcepts\n\nI.  Heading\n\n1.  Text.\n\nEuropean Court of Human Rights  \n\n6/57 \n\nLast update: 31.08.2023 \n";
    const P3: &str = "Guide on X –\nConcepts\n\nmore text Guide on X –\n\nEuropean Court of Human Rights  7/57  Update: 31.08.2023  A.  Glued heading\nbody\n";

    #[test]
    fn headers_and_footers() {
        let set = clean_text(&[P1, P2, P3].join("\u{c}"));
        assert_eq!(set.header.as_deref(), Some("Guide on X – Concepts"));
        assert_eq!(set.updated.as_deref(), Some("2023-08-31"));
        assert_eq!(set.pages[1].number, 6);
        assert_eq!(set.pages[2].number, 7);
        let p2: Vec<&str> = set.pages[1]
            .lines
            .iter()
            .map(String::as_str)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(p2, ["I.  Heading", "1.  Text."]);
        let p3: Vec<&str> = set.pages[2]
            .lines
            .iter()
            .map(String::as_str)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(p3, ["more text Guide on X –", "A.  Glued heading", "body"]);
    }

    #[test]
    fn body_line_starting_like_the_court_is_kept() {
        let set = clean_text("a\u{c}European Court of Human Rights (hereafter the Court)\n");
        assert_eq!(
            set.pages[1].lines,
            ["European Court of Human Rights (hereafter the Court)"]
        );
    }
}
