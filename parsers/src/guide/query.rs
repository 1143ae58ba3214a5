//! Queries from heading paths: the structured path and the release's string form.
//!
//! The published release (DATA.md §3) writes a query as
//! `"{guide title} .    {L1}. [{n}.  {L3}.]    {L2}. [{x}.  {deepest}]"`: numbers of roman (`I.`) and
//! capital (`A.`) headings are stripped, arabic and lower-case numbers kept, an arabic heading is printed
//! *before* its capital-letter parent, and a path deeper than three levels prints only its deepest
//! heading after the first three (the Article 1 of Protocol No. 1 rows print `i.  Claims …` right after
//! `A.`'s title, without the `b.` between). [`release_string`] follows that; the release's whitespace is
//! irregular (extraction artefacts), so comparisons with it are made modulo whitespace.

use std::sync::LazyLock;

use regex::Regex;

use super::toc::Kind;

/// A heading on a path, as the string form needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathItem {
    /// The number's kind.
    pub kind: Kind,
    /// The printed number, if any.
    pub number: Option<String>,
    /// The title.
    pub title: String,
}

impl PathItem {
    /// `I. Title`, or the title alone.
    pub fn display(&self) -> String {
        match &self.number {
            Some(n) => format!("{n}. {}", self.title),
            None => self.title.clone(),
        }
    }

    /// The item as the release prints it: ` {n}.  {title}` for kept numbers, `    {title}` otherwise.
    fn release(&self) -> String {
        match (&self.number, self.kind.printed_in_release()) {
            (Some(n), true) => format!(" {n}.  {}", self.title),
            _ => format!("    {}", self.title),
        }
    }
}

static ARTICLE_TITLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^Guide on (Article \d+(?: of Protocol No\. ?\d+)?)(?: of the (?:European )?Convention(?: on Human Rights)?)?\s*[–-]\s*(.+)$")
        .expect("static regex")
});
static THEME_TITLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^Guide (?:on|to) (?:the )?case-law of the (?:European )?Convention\s*[–-]\s*(.+)$")
        .expect("static regex")
});

/// The guide title as the release writes it, from the running header: `Guide on Article 2 of the
/// Convention – Right to life` → `Article 2. Right to life`; `Guide on case-law of the Convention –
/// Terrorism` → `Terrorism`. Other headers are returned unchanged.
pub fn release_title(header: &str) -> String {
    let h = super::text::squash(header);
    if let Some(c) = ARTICLE_TITLE.captures(&h) {
        return format!("{}. {}", &c[1], c[2].trim());
    }
    if let Some(c) = THEME_TITLE.captures(&h) {
        return c[1].trim().to_owned();
    }
    h
}

/// The release's string form of a heading path.
pub fn release_string(title: &str, path: &[PathItem]) -> String {
    let mut s = format!("{title} .");
    let head = &path[..path.len().min(3)];
    let mut order: Vec<&PathItem> = head.iter().collect();
    // An arabic heading is printed before its capital-letter parent.
    if order.len() == 3 && order[2].kind == Kind::Arabic && order[1].kind == Kind::Capital {
        order.swap(1, 2);
    }
    for item in order {
        s.push_str(&item.release());
        s.push('.');
    }
    if path.len() > 3 {
        let last = &path[path.len() - 1];
        match &last.number {
            Some(n) => s.push_str(&format!(" {n}.  {}", last.title)),
            None => s.push_str(&format!("   {}", last.title)),
        }
    } else {
        s.push(' ');
    }
    s
}

/// Whitespace removed: the comparison key "modulo whitespace".
pub fn modulo_whitespace(s: &str) -> String {
    super::text::compact(s)
}

#[cfg(test)]
mod tests {
    //! Properties: the string form strips roman/capital numbers, keeps arabic/lower ones, prints an
    //! arabic heading before its capital parent, and prints only the deepest heading past level 3; the
    //! three examples are real release rows.
    use super::*;

    fn item(kind: Kind, n: &str, t: &str) -> PathItem {
        PathItem {
            kind,
            number: Some(n.to_owned()),
            title: t.to_owned(),
        }
    }

    #[test]
    fn release_rows() {
        let t = release_title("Guide on Article 2  of the Convention –  Right to life");
        assert_eq!(t, "Article 2. Right to life");
        let two = [
            item(Kind::Roman, "I", "General considerations"),
            item(
                Kind::Capital,
                "C",
                "Applicability of Article 2 in near death situations",
            ),
        ];
        assert_eq!(
            release_string(&t, &two),
            "Article 2. Right to life .    General considerations.    Applicability of Article 2 in near death situations. "
        );
        let three = [
            item(Kind::Roman, "II", "Protection of life"),
            item(Kind::Capital, "C", "Protection of life in context"),
            item(Kind::Arabic, "2", "Protection of persons from self-harm"),
        ];
        assert_eq!(
            release_string(&t, &three),
            "Article 2. Right to life .    Protection of life. 2.  Protection of persons from self-harm.    Protection of life in context. "
        );
        let mut four = three.to_vec();
        four[2] = item(
            Kind::Arabic,
            "4",
            "Protection of persons in the context of healthcare",
        );
        four.push(item(Kind::Lower, "a", "General population"));
        assert_eq!(
            modulo_whitespace(&release_string(&t, &four)),
            modulo_whitespace(
                "Article 2. Right to life .    Protection of life. 4.   Protection of persons in the context of healthcare.    Protection of life in context. a.  General population"
            )
        );
        assert_eq!(
            release_title("Guide on case-law of the Convention – Terrorism"),
            "Terrorism"
        );
    }
}
