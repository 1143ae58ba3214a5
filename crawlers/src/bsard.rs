//! BSARD sources: the published CSV files from a mirror, and optionally Justel consolidated PDFs.
//!
//! The dataset's own host is not reachable from every machine, so the base URL is a setting (a mirror
//! of the dataset's files). Justel PDFs are addressed by their numac: the first eight digits are the
//! promulgation date, e.g. `1804032150` → `{base}/img_l/pdf/1804/03/21/1804032150_F.pdf` (Code civil).

use std::collections::BTreeMap;
use std::path::Path;

use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fetch::{Fetched, Fetcher};

/// The v1 files (DATA.md §4).
pub const BSARD_FILES: &[&str] = &[
    "articles_fr.csv",
    "questions_fr_train.csv",
    "questions_fr_test.csv",
];
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
    /// Justel numacs to fetch (optional).
    pub numacs: Vec<String>,
}

impl BsardSettings {
    /// Checks the settings: both base URLs are http(s) URLs with a host, file names are plain names
    /// (no `/`), numacs have 10 digits.
    ///
    /// # Errors
    /// [`Error::Config`] naming the option (`--base-url`, `--ejustice-base`, `--files`, `--numac`)
    /// and the value.
    pub fn validate(&self) -> Result<()> {
        crate::http::check_base_url("--base-url", &self.base_url)?;
        crate::http::check_base_url("--ejustice-base", &self.ejustice_base)?;
        if let Some(f) = self
            .files
            .iter()
            .find(|f| f.trim().is_empty() || f.contains(['/', '\\', '?', '#']))
        {
            return Err(Error::Config(format!(
                "--files {f:?}: a file name of the mirror, such as articles_fr.csv"
            )));
        }
        for n in &self.numacs {
            justel_url(&self.ejustice_base, n)?;
        }
        Ok(())
    }
}

/// The Justel PDF URL of a numac.
pub fn justel_url(base: &str, numac: &str) -> Result<String> {
    if numac.len() != 10 || !numac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::Config(format!("--numac {numac:?}: a numac has 10 digits")));
    }
    Ok(format!(
        "{}/img_l/pdf/{}/{}/{}/{numac}_F.pdf",
        base.trim_end_matches('/'),
        &numac[0..4],
        &numac[4..6],
        &numac[6..8]
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
    let mut jobs = Vec::new();
    for f in &settings.files {
        jobs.push((
            f.clone(),
            format!("{}/{f}", settings.base_url.trim_end_matches('/')),
        ));
    }
    for n in &settings.numacs {
        jobs.push((format!("justel:{n}"), justel_url(&settings.ejustice_base, n)?));
    }
    progress.set_message("BSARD");
    progress.inc_length(jobs.len() as u64);
    let mut report = BsardReport::default();
    for (name, url) in jobs {
        match fetcher.fetch(&url, &format!("bsard {name}")).await? {
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
    //! Properties: numacs map to Justel URLs; malformed numacs are refused.
    use super::*;

    #[test]
    fn numac_urls() {
        assert_eq!(
            justel_url("https://e/", "1804032150").unwrap(),
            "https://e/img_l/pdf/1804/03/21/1804032150_F.pdf"
        );
        assert!(justel_url("https://e", "18040321").is_err());
        assert!(justel_url("https://e", "18040321x0").is_err());
    }
}
