//! BSARD sources: the published CSV files from a mirror, and optionally Justel consolidated PDFs.
//!
//! The dataset's own host is not reachable from every machine, so the base URL is a setting (a mirror
//! of the dataset's files). The Hugging Face copy (`maastrichtlawtech/bsard`) renamed its files on
//! 19 September 2023 ([`RENAMED`]): `articles.csv`, `questions_train.csv`, `questions_test.csv` at
//! `…/resolve/main`, the v1 names `articles_fr.csv`, `questions_fr_train.csv`,
//! `questions_fr_test.csv` at earlier revisions (pin one with `--base-url
//! https://huggingface.co/datasets/maastrichtlawtech/bsard/resolve/COMMIT`). Either layout is
//! accepted: a file is asked for under its current name, then (on 404, or offline when the store
//! lacks it) under the other, and recorded in `raw/index/bsard.jsonl` under its v1 name, the
//! URL saying which was fetched. (The Parquet copy under `refs/convert/parquet` is not read.)
//!
//! Justel PDFs live under the act's promulgation date, not under the numac's first eight digits:
//! `img_l/pdf/2020/04/27/2020030910_F.pdf`, and a numac may hold letters (`2019A41000`). An act is
//! given as `NUMAC@YYYY-MM-DD`, as its ELI (`…/eli/loi/2020/04/27/2020030910/justel`, which holds
//! both), or as a bare numac, whose first eight characters are taken as the date only when they are
//! one (right for the old codes, `1804032150`: Code civil of 21 March 1804). An act whose date is not
//! known is reported as a failure naming what to give; the crawl goes on. Justel PDFs are addressed by their numac: the first eight digits are the
//! promulgation date, e.g. `1804032150` → `{base}/img_l/pdf/1804/03/21/1804032150_F.pdf` (Code civil).
//! (True of that one; see below.)

use std::collections::BTreeMap;
use std::path::Path;

use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use crate::date::Date;
use crate::error::{Error, Result};
use crate::fetch::{Fetched, Fetcher};
use crate::kind::BodyKind;

/// The v1 files (DATA.md §4).
pub const BSARD_FILES: &[&str] = &[
    "articles_fr.csv",
    "questions_fr_train.csv",
    "questions_fr_test.csv",
];
/// The files renamed in the Hugging Face copy on 19 September 2023: (v1 name, current name).
pub const RENAMED: &[(&str, &str)] = &[
    ("articles_fr.csv", "articles.csv"),
    ("questions_fr_train.csv", "questions_train.csv"),
    ("questions_fr_test.csv", "questions_test.csv"),
];

/// The v1 name of a BSARD file under either name (`articles.csv` → `articles_fr.csv`); other names
/// are returned as they are.
pub fn v1_name(name: &str) -> &str {
    RENAMED
        .iter()
        .find(|(old, new)| *old == name || *new == name)
        .map_or(name, |(old, _)| old)
}

/// The names a file is asked for, in order: its current name, then its v1 name.
fn names_to_try(name: &str) -> Vec<&str> {
    match RENAMED.iter().find(|(old, new)| *old == name || *new == name) {
        Some((old, new)) => vec![new, old],
        None => vec![name],
    }
}

/// eJustice, which serves Justel PDFs.
pub const EJUSTICE_BASE: &str = "https://www.ejustice.just.fgov.be";

/// What to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BsardSettings {
    /// The mirror holding the CSV files.
    pub base_url: String,
    /// The files to fetch from it.
    pub files: Vec<String>,
    /// eJustice's base URL.
    pub ejustice_base: String,
    /// Justel acts to fetch (optional): `NUMAC`, `NUMAC@YYYY-MM-DD` or an ELI ([`JustelAct::parse`]).
    pub numacs: Vec<String>,
}

impl BsardSettings {
    /// Checks the settings: both base URLs are http(s) URLs with a host (and no credentials), file
    /// names are plain file names ([`is_plain_file_name`]), numacs have 10 digits.
    ///
    /// # Errors
    /// [`Error::Config`] naming the option (`--base-url`, `--ejustice-base`, `--files`, `--numac`)
    /// and the value.
    pub fn validate(&self) -> Result<()> {
        crate::http::check_base_url("--base-url", &self.base_url)?;
        crate::http::check_base_url("--ejustice-base", &self.ejustice_base)?;
        if let Some(f) = self.files.iter().find(|f| !is_plain_file_name(f)) {
            return Err(Error::Config(format!(
                "--files {f:?}: not a plain file name of the mirror, such as articles_fr.csv \
                 (letters, digits, '.', '_', '-', '+'; not starting with '.'; at most 255 bytes)"
            )));
        }
        for n in &self.numacs {
            JustelAct::parse(n)?;
        }
        Ok(())
    }
}

/// Is `name` a plain file name: 1 to 255 bytes of ASCII letters, digits, `.`, `_`, `-` and `+`, not
/// starting with `.`? The name is appended to the mirror's URL and recorded as the file's name in
/// `raw/index/bsard.jsonl`, so anything that could walk out of the mirror's folder (`..`, `a/b`,
/// `/etc/x`, `a\b`, `%2e%2e`, which URL parsing turns back into `..`), a hidden file, a query or a
/// fragment is refused rather than escaped.
pub fn is_plain_file_name(name: &str) -> bool {
    (1..=255).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
}

/// A Justel act: its numac and, when known, its promulgation date (the date in its PDF's path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JustelAct {
    /// Ten characters, digits and capital letters (`1804032150`, `2019A41000`).
    pub numac: String,
    /// The promulgation date, when given or readable from the numac.
    pub date: Option<Date>,
}

impl JustelAct {
    /// Reads `NUMAC`, `NUMAC@YYYY-MM-DD`, or an ELI (`[https://…/]eli/TYPE/YYYY/MM/DD/NUMAC[/…]`).
    /// A bare numac's date is its first eight characters when they are a calendar date, else unknown.
    ///
    /// # Errors
    /// [`Error::Config`] naming `--numac` and the value: a numac that is not ten digits or capital
    /// letters, a date that is not a calendar date, an ELI without a date and a numac.
    pub fn parse(spec: &str) -> Result<Self> {
        let bad = |why: &str| Error::Config(format!("--numac {spec:?}: {why}"));
        let check_numac = |n: &str| -> Result<String> {
            if n.len() == 10 && n.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()) {
                Ok(n.to_owned())
            } else {
                Err(bad(
                    "a numac has 10 characters, digits or capital letters (1804032150, 2019A41000)",
                ))
            }
        };
        let date = |y: &str, m: &str, d: &str| -> Option<Date> {
            let date: Date = format!("{y}-{m}-{d}").parse().ok()?;
            (y.len() == 4 && m.len() == 2 && d.len() == 2).then_some(date)
        };
        let eli = spec
            .strip_prefix("eli/")
            .or_else(|| spec.find("/eli/").map(|i| &spec[i + 5..]));
        if let Some(eli) = eli {
            let parts: Vec<&str> = eli.split('/').collect();
            if parts.len() < 5 {
                return Err(bad("an ELI reads eli/TYPE/YYYY/MM/DD/NUMAC"));
            }
            let d = date(parts[1], parts[2], parts[3])
                .ok_or_else(|| bad("the ELI's date is not a calendar date"))?;
            return Ok(Self {
                numac: check_numac(parts[4])?,
                date: Some(d),
            });
        }
        if let Some((numac, d)) = spec.split_once('@') {
            let d: Date = d
                .parse()
                .map_err(|_| bad("the date after @ must be a calendar date YYYY-MM-DD"))?;
            return Ok(Self {
                numac: check_numac(numac)?,
                date: Some(d),
            });
        }
        let numac = check_numac(spec)?;
        let date = date(&numac[0..4], &numac[4..6], &numac[6..8]);
        Ok(Self { numac, date })
    }
}

/// The Justel PDF URL of an act (`NUMAC`, `NUMAC@YYYY-MM-DD` or an ELI; [`JustelAct::parse`]):
/// `{base}/img_l/pdf/YYYY/MM/DD/NUMAC_F.pdf`, the date the act's promulgation date.
///
/// # Errors
/// [`Error::Config`] when `spec` does not parse, or names no date (a numac with letters given bare).
pub fn justel_url(base: &str, spec: &str) -> Result<String> {
    let act = JustelAct::parse(spec)?;
    let Some(d) = act.date else {
        return Err(Error::Config(format!(
            "--numac {spec:?}: the act's promulgation date is not known (its PDF lives under it); \
             give NUMAC@YYYY-MM-DD or the act's ELI (…/eli/loi/YYYY/MM/DD/NUMAC)"
        )));
    };
    Ok(format!(
        "{}/img_l/pdf/{:04}/{:02}/{:02}/{}_F.pdf",
        base.trim_end_matches('/'),
        d.y,
        d.m,
        d.d,
        act.numac
    ))
}

/// A file obtained: one line of `raw/index/bsard.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFile {
    /// The file's name (`articles_fr.csv`) or `justel:{numac}`.
    pub name: String,
    /// Where it came from.
    pub url: String,
    /// Its name in the raw store (the recorded checksum).
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// What a BSARD crawl did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BsardReport {
    /// Files obtained.
    pub found: BTreeMap<String, SourceFile>,
    /// Files that could not be obtained, with the reason.
    pub failed: BTreeMap<String, String>,
}

/// Fetches the BSARD files.
pub async fn crawl_bsard(
    fetcher: &Fetcher,
    settings: &BsardSettings,
    progress: &ProgressBar,
) -> Result<BsardReport> {
    settings.validate()?;
    // (name recorded, URLs to try in order, kind)
    let mut jobs: Vec<(String, Vec<String>, BodyKind)> = Vec::new();
    for f in &settings.files {
        let name = v1_name(f).to_owned();
        if jobs.iter().any(|(n, ..)| *n == name) {
            continue;
        }
        let mut urls: Vec<String> = names_to_try(f)
            .into_iter()
            .map(|n| format!("{}/{n}", settings.base_url.trim_end_matches('/')))
            .collect();
        if !fetcher.is_refreshing() {
            // What the store holds first: a rerun asks for nothing it already has.
            urls.sort_by_key(|u| fetcher.store().lookup(u).is_none());
        }
        jobs.push((name, urls, BodyKind::of_file_name(f)));
    }
    let mut report = BsardReport::default();
    for n in &settings.numacs {
        let name = format!("justel:{}", JustelAct::parse(n)?.numac);
        match justel_url(&settings.ejustice_base, n) {
            Ok(url) => jobs.push((name, vec![url], BodyKind::Pdf)),
            // Not an abort: the other files and acts are still fetched.
            Err(e) => {
                report.failed.insert(name, e.to_string());
            }
        }
    }
    progress.set_message("BSARD");
    progress.inc_length(jobs.len() as u64);
    for (name, urls, kind) in jobs {
        // The first URL that answers; a 404 (or, offline, a URL not in the store) tries the next.
        let mut tried = Vec::new();
        let mut answer = None;
        for url in urls {
            let fetched = fetcher.fetch(&url, &format!("bsard {name}"), kind).await?;
            match fetched {
                Fetched::NotFound { status: 404 } | Fetched::Missing => tried.push((url, fetched)),
                _ => {
                    answer = Some((url, fetched));
                    break;
                }
            }
        }
        let (url, fetched) = match answer {
            Some(a) => a,
            None => {
                let why: Vec<String> = tried
                    .iter()
                    .map(|(u, f)| match f {
                        Fetched::Missing => format!("{u}: not in the store (offline)"),
                        _ => format!("{u}: HTTP 404"),
                    })
                    .collect();
                let why = if why.len() == 1 {
                    match &tried[0].1 {
                        Fetched::Missing => "not in the store (offline)".to_owned(),
                        _ => "HTTP 404".to_owned(),
                    }
                } else {
                    why.join("; ")
                };
                report.failed.insert(name, why);
                progress.inc(1);
                continue;
            }
        };
        // A body that is not what the name says (an HTML page, a gzip stream) comes back Failed.
        match fetched {
            Fetched::Body { sha256, bytes, .. } => {
                report.found.insert(
                    name.clone(),
                    SourceFile {
                        name,
                        url,
                        sha256,
                        bytes: bytes.len() as u64,
                    },
                );
            }
            Fetched::NoBody { status, .. } => {
                report
                    .failed
                    .insert(name, format!("HTTP {status} without a body"));
            }
            Fetched::NotFound { status } => {
                report.failed.insert(name, format!("HTTP {status}"));
            }
            Fetched::Failed { reason } => {
                report.failed.insert(name, reason);
            }
            Fetched::Missing => {
                report.failed.insert(name, "not in the store (offline)".into());
            }
        }
        progress.inc(1);
    }
    Ok(report)
}

/// Writes `raw/index/bsard.jsonl`, atomically.
pub fn write_index(path: &Path, found: &BTreeMap<String, SourceFile>) -> Result<()> {
    lexbench_core::io::write_jsonl(path, found.values())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Properties: numacs map to Justel URLs; malformed numacs are refused; file names that are
    //! paths (or could become one in a URL) are refused naming `--files`, plain names accepted.
    use super::*;

    /// Issue 29 (20c): `--files ..` and other paths were accepted.
    #[test]
    fn file_names_that_are_paths_are_refused() {
        let settings = |f: &str| BsardSettings {
            base_url: "http://mirror.example/bsard".into(),
            files: vec!["articles_fr.csv".into(), f.into()],
            ejustice_base: EJUSTICE_BASE.into(),
            numacs: Vec::new(),
        };
        let long = "a".repeat(256);
        for bad in [
            "",
            " ",
            "..",
            ".",
            "../x",
            "a/b",
            "/etc/passwd",
            "a\\b",
            "..\\x",
            "C:x",
            "%2e%2e",
            "a%2Fb",
            ".hidden",
            "a?b",
            "a#b",
            "a b",
            "a\nb",
            "é.csv",
            &long,
        ] {
            let e = settings(bad).validate().expect_err(bad).to_string();
            assert!(
                e.starts_with(&format!(
                    "invalid setting: --files {bad:?}: not a plain file name"
                )),
                "{e}"
            );
        }
        for ok in [
            "articles_fr.csv",
            "questions_fr_test.csv",
            "v1.0-a+b.csv",
            &"a".repeat(255),
        ] {
            assert!(settings(ok).validate().is_ok(), "{ok}");
        }
    }

    #[test]
    fn numac_urls() {
        assert_eq!(
            justel_url("https://e/", "1804032150").unwrap(),
            "https://e/img_l/pdf/1804/03/21/1804032150_F.pdf"
        );
        assert!(justel_url("https://e", "18040321").is_err());
        assert!(justel_url("https://e", "18040321x0").is_err());
    }

    /// Issue 35, item 5: the path date is the act's promulgation date (from `@DATE` or the ELI),
    /// not the numac's first eight digits; numacs may hold letters.
    #[test]
    fn justel_urls_use_the_acts_date() {
        let want = "https://e/img_l/pdf/2020/04/27/2020030910_F.pdf";
        for spec in [
            "2020030910@2020-04-27",
            "https://www.ejustice.just.fgov.be/eli/loi/2020/04/27/2020030910/justel",
            "eli/loi/2020/04/27/2020030910",
        ] {
            assert_eq!(justel_url("https://e", spec).unwrap(), want, "{spec}");
        }
        assert_eq!(
            justel_url("https://e", "2019A41000@2019-05-02").unwrap(),
            "https://e/img_l/pdf/2019/05/02/2019A41000_F.pdf"
        );
        let lettered = JustelAct::parse("2019A41000").unwrap();
        assert_eq!((lettered.numac.as_str(), lettered.date), ("2019A41000", None));
        let e = justel_url("https://e", "2019A41000").unwrap_err().to_string();
        assert!(e.contains("NUMAC@YYYY-MM-DD") && e.contains("ELI"), "{e}");
        for bad in [
            "2020030910@2020-02-30",
            "eli/loi/2020/13/01/2020030910",
            "eli/loi/2020",
            "2019a41000",
        ] {
            assert!(JustelAct::parse(bad).is_err(), "{bad}");
        }
    }
}
