//! Citations to HUDOC itemids, from metadata records the caller hands in (pure: no disk, no network).
//!
//! Order of evidence, as the guide-parser issue asks:
//!
//! 1. the guide's own "List of cited cases" ([`parse_cited_cases`]): full citations with application
//!    numbers and dates, matched to a short citation by case name (exact key, or the loosened key and
//!    the year);
//! 2. the Court's reference list (`case_law_references_eng.csv`, [`Metadata::references_csv`]): title,
//!    application numbers, date — again by name (and year when the citation prints one);
//! 3. application numbers → itemids through sources that carry both (HUDOC RSS export, the historical
//!    citation catalogue) — recorded as [`Resolution::CitedCasesList`] or
//!    [`Resolution::ApplicationNumber`];
//! 4. otherwise the case name against HUDOC docnames (`itemid_to_docname…json`, the French/English
//!    itemid table, RSS titles): exact key → [`Resolution::TitleAndYear`] (the year is checked when the
//!    source has a date), loosened key → [`Resolution::FuzzyName`].
//!
//! Name keys fold diacritics and case, drop `CASE OF`/`AFFAIRE`, punctuation and the word `the`
//! (`v. Republic of Moldova` and `v. THE REPUBLIC OF MOLDOVA` meet); the loosened key also drops
//! parenthetical qualifiers other than `(no. N)` (`(merits)`, `(preliminary objections)`) and
//! `and Others`. Several itemids for one case (a judgment and a decision, merits and just satisfaction)
//! are narrowed by the `(dec.)` flag (HUDOC docnames of judgments start with `CASE OF`) and by the year;
//! what stays several is kept as ambiguous with its candidates. Nothing is guessed silently: every
//! outcome carries its method, a confidence and, when not resolved, a reason.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;

use lexbench_core::ids::ItemId;
use lexbench_core::records::{CitationFlags, ReadKind, Resolution};
use regex::Regex;
use serde::Serialize;

use super::ParsedGuide;

/// Resolved, ambiguous or unresolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// One itemid.
    Resolved,
    /// Several candidate itemids.
    Ambiguous,
    /// None.
    Unresolved,
}

/// The outcome of resolving one citation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// Resolved / ambiguous / unresolved.
    pub status: Status,
    /// The itemid when resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub itemid: Option<ItemId>,
    /// The method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub how: Option<Resolution>,
    /// 0..1: 0.95 cited-cases list + application number, 0.9 reference list + application number,
    /// 0.8 exact name with year checked, 0.7 exact name without a date to check, 0.5 loosened name.
    pub confidence: f32,
    /// Candidates when ambiguous.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<ItemId>,
    /// Why not resolved (or how an ambiguity arose).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Outcome {
    fn unresolved(reason: String) -> Self {
        Self {
            status: Status::Unresolved,
            itemid: None,
            how: None,
            confidence: 0.0,
            candidates: Vec::new(),
            reason: Some(reason),
        }
    }
}

/// One metadata record about a case: from any source, with or without an itemid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseRecord {
    /// The HUDOC itemid, if the source gives it.
    pub itemid: Option<ItemId>,
    /// The case name or docname.
    pub name: String,
    /// Application numbers (`71503/01`).
    pub appnos: Vec<String>,
    /// Year of the judgment or decision, if known.
    pub year: Option<u16>,
    /// Is it a decision (`Some(true)`), a judgment (`Some(false)`), unknown (`None`)?
    pub decision: Option<bool>,
}

static APPNO: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d{1,6}/\d{2}\b").expect("static regex"));
static YEAR4: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(1[89]\d\d|20\d\d)\b").expect("static regex"));
static RSS_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"<item><title>([^<]*)</title><pubDate>[^<]*?(\d{4})[^<]*</pubDate><description>([^<]*)</description><link>[^<]*"itemid":\["([0-9]{3}-[0-9]+)"\]"#)
        .expect("static regex")
});
static PAREN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\(([^()]*)\)").expect("static regex"));

fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    const MAP: &[(&str, char)] = &[
        ("ÀÁÂÃÄÅĀĂĄàáâãäåāăą", 'A'),
        ("ÇĆĈĊČçćĉċč", 'C'),
        ("ĎĐďđ", 'D'),
        ("ÈÉÊËĒĔĖĘĚèéêëēĕėęě", 'E'),
        ("ĜĞĠĢĝğġģ", 'G'),
        ("ĤĦĥħ", 'H'),
        ("ÌÍÎÏĨĪĬĮİìíîïĩīĭįı", 'I'),
        ("Ĵĵ", 'J'),
        ("Ķķ", 'K'),
        ("ĹĻĽĿŁĺļľŀł", 'L'),
        ("ÑŃŅŇñńņň", 'N'),
        ("ÒÓÔÕÖØŌŎŐòóôõöøōŏő", 'O'),
        ("ŔŖŘŕŗř", 'R'),
        ("ŚŜŞŠȘśŝşšș", 'S'),
        ("ŢŤŦȚţťŧț", 'T'),
        ("ÙÚÛÜŨŪŬŮŰŲùúûüũūŭůűų", 'U'),
        ("Ŵŵ", 'W'),
        ("ÝŸŶýÿŷ", 'Y'),
        ("ŹŻŽźżž", 'Z'),
    ];
    for (set, to) in MAP {
        if set.contains(c) {
            return *to;
        }
    }
    c.to_ascii_uppercase()
}

fn key_of(s: &str) -> String {
    // HUDOC titles of judgments published in part end in `[Extracts]` (`CASE OF SLIMANI v. FRANCE
    // [Extracts]`); guides cite them without it.
    let s = s.trim_end();
    let s = s
        .strip_suffix("[Extracts]")
        .or_else(|| s.strip_suffix("[extracts]"))
        .or_else(|| s.strip_suffix("(extracts)"))
        .unwrap_or(s);
    let folded: String = s.chars().map(fold_char).collect::<String>().to_uppercase();
    let folded = folded.replace("ß", "SS").replace("Æ", "AE").replace("Œ", "OE");
    let cleaned: String = folded
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    let mut words: Vec<&str> = cleaned.split_whitespace().collect();
    if words.starts_with(&["CASE", "OF"]) {
        words.drain(..2);
    } else if words.first() == Some(&"AFFAIRE") {
        words.remove(0);
    }
    words.retain(|w| *w != "THE");
    // French state names slip into English guides (`ROJ TV A/S v. Danemark`, `… v. Chypre and
    // Turkey`), and HUDOC now writes `Türkiye`: one spelling per state.
    let words: Vec<&str> = words
        .into_iter()
        .map(|w| match w {
            "DANEMARK" => "DENMARK",
            "CHYPRE" => "CYPRUS",
            "TURQUIE" | "TURKIYE" => "TURKEY",
            "BELGIQUE" => "BELGIUM",
            "ALLEMAGNE" => "GERMANY",
            "GRECE" => "GREECE",
            "ESPAGNE" => "SPAIN",
            "ITALIE" => "ITALY",
            "SUISSE" => "SWITZERLAND",
            "POLOGNE" => "POLAND",
            "ROUMANIE" => "ROMANIA",
            "RUSSIE" => "RUSSIA",
            "AUTRICHE" => "AUSTRIA",
            "HONGRIE" => "HUNGARY",
            "LITUANIE" => "LITHUANIA",
            "LETTONIE" => "LATVIA",
            "SUEDE" => "SWEDEN",
            "NORVEGE" => "NORWAY",
            "FINLANDE" => "FINLAND",
            "IRLANDE" => "IRELAND",
            "CROATIE" => "CROATIA",
            "SLOVAQUIE" => "SLOVAKIA",
            "BULGARIE" => "BULGARIA",
            "ARMENIE" => "ARMENIA",
            "GEORGIE" => "GEORGIA",
            other => other,
        })
        .collect();
    words.join(" ")
}

/// The exact name key: diacritics and case folded, `CASE OF`, punctuation and `the` dropped.
pub fn name_key(s: &str) -> String {
    key_of(s)
}

/// The loosened key: also without qualifiers other than `(no. N)`, and without `and Others`.
pub fn base_key(s: &str) -> String {
    let stripped = PAREN.replace_all(s, |c: &regex::Captures<'_>| {
        let inner = c[1].trim_start().to_ascii_lowercase();
        if inner.starts_with("no.") || inner.starts_with("no ") {
            c[0].to_owned()
        } else {
            String::new()
        }
    });
    key_of(&stripped).replace(" AND OTHERS", "")
}

fn split_appnos(s: &str) -> Vec<String> {
    APPNO.find_iter(s).map(|m| m.as_str().to_owned()).collect()
}

fn item(s: &str) -> Option<ItemId> {
    ItemId::new(s.trim()).ok()
}

/// Metadata from every source, indexed.
#[derive(Debug, Default)]
pub struct Metadata {
    records: Vec<CaseRecord>,
    by_key: HashMap<String, Vec<usize>>,
    by_base: HashMap<String, Vec<usize>>,
    by_appno: HashMap<String, Vec<usize>>,
}

impl Metadata {
    /// Indexes the records.
    pub fn new(records: Vec<CaseRecord>) -> Self {
        let mut m = Self::default();
        for (i, r) in records.iter().enumerate() {
            m.by_key.entry(name_key(&r.name)).or_default().push(i);
            m.by_base.entry(base_key(&r.name)).or_default().push(i);
            if r.itemid.is_some() {
                for a in &r.appnos {
                    m.by_appno.entry(a.clone()).or_default().push(i);
                }
            }
        }
        m.records = records;
        m
    }

    /// The file names [`Metadata::from_files`] understands (those of `hudoc/meta/`).
    pub const FILES: [&'static str; 5] = [
        "case_law_references_eng.csv",
        "itemid_to_docname_known_citations.json",
        "french_to_english_itemids.csv",
        "historical_citation_catalog.json",
        "hudoc_echr_rss_2000_items.rss",
    ];

    /// Builds the index from file contents, dispatching on the file name (one of [`Metadata::FILES`];
    /// others are ignored). A malformed JSON file is an error naming it.
    pub fn from_files(files: &[(&str, &str)]) -> crate::Result<Self> {
        let mut records = Vec::new();
        for (name, text) in files {
            let bad = |e: serde_json::Error| crate::Error::Invalid {
                source_name: (*name).to_owned(),
                format: "HUDOC metadata JSON",
                message: e.to_string(),
            };
            match *name {
                "case_law_references_eng.csv" => records.extend(Self::references_csv(text)?),
                "itemid_to_docname_known_citations.json" => {
                    records.extend(Self::docnames_json(text).map_err(bad)?)
                }
                "french_to_english_itemids.csv" => records.extend(Self::french_english_csv(text)?),
                "historical_citation_catalog.json" => {
                    records.extend(Self::historical_catalog(text).map_err(bad)?)
                }
                "hudoc_echr_rss_2000_items.rss" => records.extend(Self::rss(text)),
                _ => {}
            }
        }
        Ok(Self::new(records))
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// No records?
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// `case_law_references_eng.csv`: `citation,title,appnos,date,document_kind,…` (no itemids). A
    /// quote that is never closed is an error naming the file and line.
    pub fn references_csv(text: &str) -> crate::Result<Vec<CaseRecord>> {
        let rows = csv_rows("case_law_references_eng.csv", text)?;
        let Some(header) = rows.first() else {
            return Ok(Vec::new());
        };
        let col = |n: &str| header.iter().position(|h| h == n);
        let (Some(t), Some(a), Some(d)) = (col("title"), col("appnos"), col("date")) else {
            return Ok(Vec::new());
        };
        let kind = col("document_kind");
        Ok(rows
            .iter()
            .skip(1)
            .filter(|r| r.len() > t.max(a).max(d))
            .map(|r| CaseRecord {
                itemid: None,
                name: r[t].clone(),
                appnos: split_appnos(&r[a]),
                year: r[d].get(..4).and_then(|y| y.parse().ok()),
                decision: kind.and_then(|k| match r.get(k).map(String::as_str) {
                    Some("decision") => Some(true),
                    Some("judgment") => Some(false),
                    _ => None,
                }),
            })
            .collect())
    }

    /// `itemid_to_docname…json`: `{itemid: docname}`.
    pub fn docnames_json(text: &str) -> serde_json::Result<Vec<CaseRecord>> {
        let map: BTreeMap<String, String> = serde_json::from_str(text)?;
        Ok(map
            .into_iter()
            .filter_map(|(i, n)| Some(docname_record(item(&i)?, n)))
            .collect())
    }

    /// `french_to_english_itemids.csv`: `fre_id,eng_id,fre_docname,eng_docname`. A quote that is
    /// never closed is an error naming the file and line.
    pub fn french_english_csv(text: &str) -> crate::Result<Vec<CaseRecord>> {
        Ok(csv_rows("french_to_english_itemids.csv", text)?
            .into_iter()
            .skip(1)
            .filter(|r| r.len() >= 4)
            .filter_map(|r| Some(docname_record(item(&r[1])?, r[3].clone())))
            .collect())
    }

    /// `historical_citation_catalog.json`: entries with `target_itemid`, `title`, `appnos`, `date`.
    pub fn historical_catalog(text: &str) -> serde_json::Result<Vec<CaseRecord>> {
        #[derive(serde::Deserialize)]
        struct Entry {
            title: String,
            #[serde(default)]
            appnos: Vec<String>,
            #[serde(default)]
            date: Option<String>,
            #[serde(default)]
            document_kind: Option<String>,
            #[serde(default)]
            target_itemid: Option<String>,
        }
        #[derive(serde::Deserialize)]
        struct Catalog {
            entries: Vec<Entry>,
        }
        let c: Catalog = serde_json::from_str(text)?;
        Ok(c.entries
            .into_iter()
            .filter_map(|e| {
                Some(CaseRecord {
                    itemid: Some(item(e.target_itemid.as_deref()?)?),
                    name: e.title,
                    appnos: e.appnos,
                    year: e
                        .date
                        .as_deref()
                        .and_then(|d| d.get(..4))
                        .and_then(|y| y.parse().ok()),
                    decision: e.document_kind.map(|k| k == "decision"),
                })
            })
            .collect())
    }

    /// A HUDOC RSS export: `<item><title>…</title><pubDate>…</pubDate><description>APPNOS - KIND
    /// </description>…itemid…`. The `pubDate` is the judgment's date (Chiragov: 16 Jun 2015 for the
    /// merits, 12 Dec 2017 for just satisfaction), so its year tells apart items sharing an appno.
    pub fn rss(text: &str) -> Vec<CaseRecord> {
        RSS_ITEM
            .captures_iter(text)
            .filter_map(|c| {
                let (appnos, kind) = c[3].split_once(" - ").unwrap_or((&c[3], ""));
                Some(CaseRecord {
                    itemid: Some(item(&c[4])?),
                    name: c[1].to_owned(),
                    appnos: split_appnos(appnos),
                    year: c[2].parse().ok(),
                    decision: Some(kind.contains("Decision")),
                })
            })
            .collect()
    }
}

fn docname_record(itemid: ItemId, name: String) -> CaseRecord {
    let up = name.to_uppercase();
    let judgment = up.starts_with("CASE OF") || up.starts_with("AFFAIRE");
    CaseRecord {
        itemid: Some(itemid),
        name,
        appnos: Vec::new(),
        year: None,
        decision: Some(!judgment),
    }
}

/// An entry of a guide's "List of cited cases".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CitedCase {
    /// The case name (with qualifiers such as `(no. 2)`).
    pub name: String,
    /// `[GC]`, `(dec.)`.
    pub flags: CitationFlags,
    /// Application numbers.
    pub appnos: Vec<String>,
    /// The year of the date printed last in the entry.
    pub year: Option<u16>,
    /// [`name_key`] of the name, computed once.
    #[serde(skip)]
    pub key: String,
    /// [`base_key`] of the name, computed once.
    #[serde(skip)]
    pub base: String,
}

/// Reads a "List of cited cases" text: one entry per case, wrapped lines joined. An entry starts on a
/// capitalised line with ` v. ` when the previous entry is complete (has a year already: every entry
/// ends with a date or a reporter year); `—A—` letter separators and the introduction are skipped.
pub fn parse_cited_cases(text: &str) -> Vec<CitedCase> {
    let mut entries: Vec<String> = Vec::new();
    // Every entry carries a date or a reporter year, so an entry without a year yet is still open.
    let complete = |e: &str| YEAR4.is_match(e);
    for line in text.lines() {
        let l = super::text::squash(line);
        if l.is_empty() || (l.starts_with('—') && l.chars().count() <= 4) {
            continue;
        }
        let starts = l.contains(" v. ")
            && l.starts_with(|c: char| c.is_uppercase())
            && entries.last().is_none_or(|e| complete(e));
        if starts {
            entries.push(l);
        } else if let Some(last) = entries.last_mut() {
            last.push(' ');
            last.push_str(&l);
        }
    }
    entries
        .iter()
        .filter_map(|e| {
            let anchor = e.find(" v. ")?;
            let (_, name, flags, end) = super::citation::head(e, anchor)?;
            let rest = &e[end..];
            Some(CitedCase {
                key: name_key(&name),
                base: base_key(&name),
                name,
                flags,
                appnos: split_appnos(rest),
                year: YEAR4.find_iter(rest).last().and_then(|m| m.as_str().parse().ok()),
            })
        })
        .collect()
}

/// Resolution counts of one guide.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Audit {
    /// The guide.
    pub guide: String,
    /// Citations seen (ibid included).
    pub citations: usize,
    /// Resolved to one itemid.
    pub resolved: usize,
    /// Several candidates.
    pub ambiguous: usize,
    /// None.
    pub unresolved: usize,
    /// resolved / citations.
    pub rate: f64,
    /// Resolved citations per method.
    pub by_method: BTreeMap<String, usize>,
    /// Entries read from the guide's "List of cited cases".
    pub cited_cases_entries: usize,
    /// Distinct unresolved or ambiguous case names with the reason (sorted by name).
    pub not_resolved: BTreeMap<String, String>,
}

/// Resolves one citation (case name, year, flags).
pub fn resolve(
    meta: &Metadata,
    cited: &[CitedCase],
    name: &str,
    year: Option<u16>,
    flags: CitationFlags,
) -> Outcome {
    if name.is_empty() {
        return Outcome::unresolved("ibid. without an earlier citation under the same heading".into());
    }
    let key = name_key(name);
    let base = base_key(name);
    // 1-2. Application numbers from the cited-cases list, else from the reference list.
    let year_ok = |y: Option<u16>| year.is_none() || y.is_none() || y == year;
    let from_list: Vec<&CitedCase> = cited
        .iter()
        .filter(|c| c.key == key || (c.base == base && year.is_some() && c.year == year))
        .filter(|c| year_ok(c.year))
        .collect();
    // A short form of a long name (`Bosphorus v. Ireland` for `Bosphorus Hava Yolları … v. Ireland`):
    // the one list entry with the same first word and the same respondent, marked as a loosened match.
    let mut short_form = false;
    let from_list = if from_list.is_empty() {
        let (applicant, respondent) = key.split_once(" V ").unwrap_or((&key, ""));
        let first = applicant.split(' ').next().unwrap_or_default();
        let hits: Vec<&CitedCase> = cited
            .iter()
            .filter(|c| {
                let (a, r) = c.key.split_once(" V ").unwrap_or((&c.key, ""));
                r == respondent && a.split(' ').next() == Some(first) && a.len() > applicant.len()
            })
            .collect();
        short_form = hits.len() == 1 && !respondent.is_empty();
        if short_form { hits } else { Vec::new() }
    } else {
        from_list
    };
    let mut appnos: BTreeSet<String> = from_list.iter().flat_map(|c| c.appnos.iter().cloned()).collect();
    // A citation without a year (`Bosphorus v. Ireland, §§ 156-157`) takes the list's, if it is one.
    let list_years: BTreeSet<u16> = from_list.iter().filter_map(|c| c.year).collect();
    let year = year.or_else(|| {
        (list_years.len() == 1)
            .then(|| list_years.iter().copied().next())
            .flatten()
    });
    let (mut how, mut confidence) = if short_form {
        (Resolution::FuzzyName, 0.6)
    } else {
        (Resolution::CitedCasesList, 0.95)
    };
    if appnos.is_empty() {
        how = Resolution::ApplicationNumber;
        confidence = 0.9;
        for i in meta.by_key.get(&key).into_iter().flatten() {
            let r = &meta.records[*i];
            if r.itemid.is_none() && year_ok(r.year) && (year.is_some() || r.year.is_none()) {
                appnos.extend(r.appnos.iter().cloned());
            }
        }
    }
    // 3. Application numbers to itemids.
    if !appnos.is_empty() {
        let hits: Vec<&CaseRecord> = appnos
            .iter()
            .flat_map(|a| meta.by_appno.get(a).into_iter().flatten())
            .map(|i| &meta.records[*i])
            .collect();
        let ids = narrow(&hits, flags, year);
        match ids.len() {
            1 => {
                return Outcome {
                    status: Status::Resolved,
                    itemid: ids.into_iter().next(),
                    how: Some(how),
                    confidence,
                    candidates: Vec::new(),
                    reason: None,
                };
            }
            0 => {}
            _ => {
                return Outcome {
                    status: Status::Ambiguous,
                    itemid: None,
                    how: Some(how),
                    confidence: 0.0,
                    candidates: ids.into_iter().collect(),
                    reason: Some(format!("application no(s) {} match several items", join(&appnos))),
                };
            }
        }
    }
    // 4. Names.
    for (index, k, method, conf) in [
        (&meta.by_key, &key, Resolution::TitleAndYear, 0.8f32),
        (&meta.by_base, &base, Resolution::FuzzyName, 0.5),
    ] {
        let hits: Vec<&CaseRecord> = index
            .get(k)
            .into_iter()
            .flatten()
            .map(|i| &meta.records[*i])
            .filter(|r| r.itemid.is_some())
            .collect();
        let ids = narrow(&hits, flags, year);
        match ids.len() {
            0 => continue,
            1 => {
                let dated = hits.iter().any(|r| r.year.is_some() && r.year == year);
                let confidence = if method == Resolution::TitleAndYear && !dated {
                    0.7
                } else {
                    conf
                };
                return Outcome {
                    status: Status::Resolved,
                    itemid: ids.into_iter().next(),
                    how: Some(method),
                    confidence,
                    candidates: Vec::new(),
                    reason: None,
                };
            }
            _ => {
                return Outcome {
                    status: Status::Ambiguous,
                    itemid: None,
                    how: Some(method),
                    confidence: 0.0,
                    candidates: ids.into_iter().collect(),
                    reason: Some("several HUDOC items share this case name".into()),
                };
            }
        }
    }
    Outcome::unresolved(if appnos.is_empty() {
        "case name not found in the cited-cases list, the reference list or any itemid source".into()
    } else {
        format!(
            "application no(s) {} known, but no itemid source lists them or the name",
            join(&appnos)
        )
    })
}

fn join(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// Distinct itemids of `hits`, narrowed by the decision flag and the year when that leaves some.
fn narrow(hits: &[&CaseRecord], flags: CitationFlags, year: Option<u16>) -> BTreeSet<ItemId> {
    let mut set: Vec<&CaseRecord> = hits.to_vec();
    let by_kind: Vec<&CaseRecord> = set
        .iter()
        .copied()
        .filter(|r| r.decision == Some(flags.decision))
        .collect();
    if !by_kind.is_empty() {
        set = by_kind;
    }
    if let Some(y) = year {
        let by_year: Vec<&CaseRecord> = set.iter().copied().filter(|r| r.year == Some(y)).collect();
        if !by_year.is_empty() {
            set = by_year;
        } else {
            // No record gives the cited year: drop the itemids a record dates to another year
            // (`R.R. and Others v. Hungary, 2012`: the 2021 judgment of the same name is dated, the
            // 2012 one is not).
            let other_year: BTreeSet<&ItemId> = set
                .iter()
                .filter(|r| r.year.is_some_and(|ry| ry != y))
                .filter_map(|r| r.itemid.as_ref())
                .collect();
            let undated: Vec<&CaseRecord> = set
                .iter()
                .copied()
                .filter(|r| r.itemid.as_ref().is_some_and(|i| !other_year.contains(i)))
                .collect();
            if !undated.is_empty() {
                set = undated;
            }
        }
    }
    set.iter().filter_map(|r| r.itemid.clone()).collect()
}

/// Resolves every citation of a parsed guide in place and returns the audit.
pub fn resolve_guide(parsed: &mut ParsedGuide, meta: &Metadata) -> Audit {
    let cited = parsed
        .cited_cases_text
        .as_deref()
        .map(parse_cited_cases)
        .unwrap_or_default();
    let mut audit = Audit {
        guide: parsed.guide.id.to_string(),
        citations: 0,
        resolved: 0,
        ambiguous: 0,
        unresolved: 0,
        rate: 0.0,
        by_method: BTreeMap::new(),
        cited_cases_entries: cited.len(),
        not_resolved: BTreeMap::new(),
    };
    for (q, d) in parsed.queries.iter_mut().zip(parsed.details.iter_mut()) {
        let mut last: Option<Outcome> = None;
        for (c, detail) in q.citations.iter_mut().zip(d.citations.iter_mut()) {
            let outcome = if detail.read == ReadKind::Ibid {
                match &last {
                    Some(o) => Outcome {
                        how: o.itemid.as_ref().map(|_| Resolution::Ibid),
                        ..o.clone()
                    },
                    None => resolve(meta, &cited, &c.case_name, c.year, c.flags),
                }
            } else {
                let o = resolve(meta, &cited, &c.case_name, c.year, c.flags);
                last = Some(o.clone());
                o
            };
            c.resolved = outcome.itemid.clone();
            c.how = outcome.how.filter(|_| outcome.status == Status::Resolved);
            audit.citations += 1;
            match outcome.status {
                Status::Resolved => {
                    audit.resolved += 1;
                    if let Some(h) = c.how {
                        let name = serde_json::to_value(h)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned));
                        *audit.by_method.entry(name.unwrap_or_default()).or_default() += 1;
                    }
                }
                Status::Ambiguous => audit.ambiguous += 1,
                Status::Unresolved => audit.unresolved += 1,
            }
            if outcome.status != Status::Resolved {
                audit
                    .not_resolved
                    .entry(if c.case_name.is_empty() {
                        c.raw.clone()
                    } else {
                        c.case_name.clone()
                    })
                    .or_insert_with(|| outcome.reason.clone().unwrap_or_default());
            }
            detail.resolution = Some(outcome);
        }
    }
    audit.rate = if audit.citations == 0 {
        0.0
    } else {
        audit.resolved as f64 / audit.citations as f64
    };
    audit
}

/// The fields of each record of the CSV text of file `name` ([`lexbench_core::csv`], the one CSV
/// reader of the project).
fn csv_rows(name: &str, text: &str) -> crate::Result<Vec<Vec<String>>> {
    let records =
        lexbench_core::csv::parse(text, std::path::Path::new(name)).map_err(|e| crate::Error::Invalid {
            source_name: name.to_owned(),
            format: "CSV",
            message: match e.line_error() {
                Some((line, error)) => format!("line {line}: {error}"),
                None => lexbench_core::error::chain(&e),
            },
        })?;
    Ok(records.into_iter().map(|r| r.fields).collect())
}

#[cfg(test)]
mod tests {
    //! Properties: name keys meet across spellings (diacritics, `CASE OF`, `the`); the cited-cases list
    //! is read with wrapped entries; resolution prefers application numbers, narrows several items by
    //! the `(dec.)` flag, and reports ambiguous and unresolved citations with a reason; CSV quoting.
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(
            name_key("Catan and Others v. the Republic of Moldova and Russia"),
            name_key("CASE OF CATAN AND OTHERS v. THE REPUBLIC OF MOLDOVA AND RUSSIA")
        );
        assert_eq!(
            name_key("Banković and Others v. Belgium and Others"),
            name_key("BANKOVIĆ AND OTHERS v. BELGIUM AND OTHERS")
        );
        assert_eq!(
            base_key("Loizidou v. Turkey (merits)"),
            name_key("CASE OF LOIZIDOU v. TURKEY")
        );
        assert_ne!(
            base_key("Stephens v. Malta (no. 1)"),
            base_key("Stephens v. Malta (no. 2)")
        );
    }

    #[test]
    fn cited_list_and_resolution() {
        let list = "—A—\n\nA.A. and Others v. North Macedonia, nos. 55798/16 and 4 others, 5 April 2022\nAssanidze v. Georgia [GC], no. 71503/01, ECHR \n2004-II\nSlovenia v. Croatia (dec.) [GC], no. 54155/16, 18 November 2020\nBosphorus Hava Yolları Turizm ve Ticaret Anonim Şirketi v. Ireland [GC], no. 45036/98, ECHR 2005-VI\n";
        let cited = parse_cited_cases(list);
        assert_eq!(cited.len(), 4, "{cited:#?}");
        assert_eq!(cited[1].name, "Assanidze v. Georgia");
        assert!(cited[1].flags.grand_chamber);
        assert_eq!(cited[1].appnos, ["71503/01"]);
        assert_eq!(cited[2].year, Some(2020));
        let id = |s: &str| ItemId::new(s).unwrap();
        let meta = Metadata::new(vec![
            CaseRecord {
                itemid: Some(id("001-61875")),
                name: "CASE OF ASSANIDZE v. GEORGIA".into(),
                appnos: vec!["71503/01".into()],
                year: Some(2004),
                decision: Some(false),
            },
            CaseRecord {
                itemid: Some(id("001-206897")),
                name: "SLOVENIA v. CROATIA".into(),
                appnos: vec![],
                year: None,
                decision: Some(true),
            },
            CaseRecord {
                itemid: Some(id("001-1")),
                name: "CASE OF SLOVENIA v. CROATIA".into(),
                appnos: vec![],
                year: None,
                decision: Some(false),
            },
            CaseRecord {
                itemid: Some(id("001-2")),
                name: "CASE OF X v. Y".into(),
                appnos: vec![],
                year: None,
                decision: Some(false),
            },
            CaseRecord {
                itemid: Some(id("001-3")),
                name: "CASE OF X v. Y".into(),
                appnos: vec![],
                year: None,
                decision: Some(false),
            },
            CaseRecord {
                itemid: Some(id("001-69564")),
                name: "CASE OF BOSPHORUS HAVA YOLLARI TURIZM VE TICARET ANONIM SIRKETI v. IRELAND".into(),
                appnos: vec!["45036/98".into()],
                year: Some(2005),
                decision: Some(false),
            },
        ]);
        let gc = CitationFlags {
            grand_chamber: true,
            decision: false,
            commission: false,
        };
        let o = resolve(&meta, &cited, "Assanidze v. Georgia", Some(2004), gc);
        assert_eq!(
            (o.status, o.how, o.itemid.as_ref().map(ItemId::as_str)),
            (
                Status::Resolved,
                Some(Resolution::CitedCasesList),
                Some("001-61875")
            )
        );
        let dec = CitationFlags {
            grand_chamber: true,
            decision: true,
            commission: false,
        };
        let o = resolve(&meta, &cited, "Slovenia v. Croatia", Some(2020), dec);
        assert_eq!(o.itemid.as_ref().map(ItemId::as_str), Some("001-206897"));
        assert_eq!(o.how, Some(Resolution::TitleAndYear));
        // The short form of a long name, through the list's application number.
        let o = resolve(
            &meta,
            &cited,
            "Bosphorus v. Ireland",
            None,
            CitationFlags::default(),
        );
        assert_eq!(
            (o.how, o.itemid.as_ref().map(ItemId::as_str)),
            (Some(Resolution::FuzzyName), Some("001-69564")),
            "{o:?}"
        );
        let o = resolve(&meta, &cited, "X v. Y", None, CitationFlags::default());
        assert_eq!((o.status, o.candidates.len()), (Status::Ambiguous, 2));
        let o = resolve(
            &meta,
            &cited,
            "Nobody v. Nowhere",
            Some(2001),
            CitationFlags::default(),
        );
        assert_eq!(o.status, Status::Unresolved);
        assert!(o.reason.is_some());
    }

    #[test]
    fn csv_quoting() {
        let rows = csv_rows("t.csv", "a,b\r\n\"x, \"\"y\"\"\",\"multi\nline\"\r\n").unwrap();
        assert_eq!(
            rows,
            vec![
                vec!["a".to_owned(), "b".into()],
                vec!["x, \"y\"".into(), "multi\nline".into()]
            ]
        );
        let err = Metadata::french_english_csv("fre_id,eng_id\n\"001-1,001-2\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("french_to_english_itemids.csv: not a valid CSV: line 2: a quoted field"),
            "{err}"
        );
    }
}
