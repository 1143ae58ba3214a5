//! The Court's case-law guide PDFs.
//!
//! Two URL patterns serve them (DATA.md §2): the Knowledge Sharing platform
//! (`{ks}/documents/d/echr-ks/{id}`) and the Court's site (`{www}/documents/d/echr/{id}`), both without
//! a `.pdf` suffix. A miss redirects to an HTML "page not found" that answers 200, so a guide is only
//! accepted when the answer is a PDF ([`BodyKind::Pdf`]: `%PDF-` within its first 1,024 bytes); the
//! "page not found" is a failed fetch, not stored.

use std::collections::BTreeMap;
use std::path::Path;

use indicatif::ProgressBar;
use lexbench_core::GuideId;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fetch::{Fetched, Fetcher};
use crate::kind::BodyKind;

/// The Knowledge Sharing platform.
pub const KS_BASE: &str = "https://ks.echr.coe.int";
/// The Court's site.
pub const WWW_BASE: &str = "https://www.echr.coe.int";

/// The English guides of 2023-2024 (DATA.md §2): 28 article guides, the admissibility guide, 8 themes.
pub const ENGLISH_GUIDES: &[&str] = &[
    "guide_art_1_eng",
    "guide_art_2_eng",
    "guide_art_3_eng",
    "guide_art_4_eng",
    "guide_art_5_eng",
    "guide_art_6_civil_eng",
    "guide_art_6_criminal_eng",
    "guide_art_7_eng",
    "guide_art_8_eng",
    "guide_art_9_eng",
    "guide_art_10_eng",
    "guide_art_11_eng",
    "guide_art_12_eng",
    "guide_art_13_eng",
    "guide_art_14_art_1_protocol_12_eng",
    "guide_art_15_eng",
    "guide_art_17_eng",
    "guide_art_18_eng",
    "guide_art_46_eng",
    "guide_art_1_protocol_1_eng",
    "guide_art_2_protocol_1_eng",
    "guide_art_3_protocol_1_eng",
    "guide_art_2_protocol_4_eng",
    "guide_art_3_protocol_4_eng",
    "guide_art_4_protocol_4_eng",
    "guide_art_1_protocol_7_eng",
    "guide_art_2_protocol_7_eng",
    "guide_art_4_protocol_7_eng",
    "admissibility_guide_eng",
    "guide_data_protection_eng",
    "guide_environment_eng",
    "guide_immigration_eng",
    "guide_mass_protests_eng",
    "guide_prisoners_rights_eng",
    "guide_lgbti_rights_eng",
    "guide_social_rights_eng",
    "guide_terrorism_eng",
];

/// Where to look for guides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuideSettings {
    /// The Knowledge Sharing platform's base URL.
    pub ks_base: String,
    /// The Court site's base URL.
    pub www_base: String,
    /// The guides to fetch.
    pub ids: Vec<GuideId>,
}

impl Default for GuideSettings {
    fn default() -> Self {
        Self {
            ks_base: KS_BASE.to_owned(),
            www_base: WWW_BASE.to_owned(),
            ids: ENGLISH_GUIDES
                .iter()
                .filter_map(|g| GuideId::new(*g).ok())
                .collect(),
        }
    }
}

impl GuideSettings {
    /// Checks the settings: both base URLs are http(s) URLs with a host.
    ///
    /// # Errors
    /// [`crate::Error::Config`] naming the option (`--ks-base`, `--www-base`) and the value.
    pub fn validate(&self) -> Result<()> {
        crate::http::check_base_url("--ks-base", &self.ks_base)?;
        crate::http::check_base_url("--www-base", &self.www_base)
    }
}

/// The URLs tried for a guide, in order.
pub fn guide_urls(s: &GuideSettings, id: &GuideId) -> [String; 2] {
    [
        format!("{}/documents/d/echr-ks/{id}", s.ks_base.trim_end_matches('/')),
        format!("{}/documents/d/echr/{id}", s.www_base.trim_end_matches('/')),
    ]
}

/// A guide found: one line of `raw/index/guides.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuideSource {
    /// The guide.
    pub id: GuideId,
    /// The URL that served the PDF.
    pub url: String,
    /// The PDF's name in the raw store.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// What a guide crawl did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuidesReport {
    /// Guides found.
    pub found: BTreeMap<GuideId, GuideSource>,
    /// Guides obtained from the store without a request.
    pub cached: usize,
    /// Guides not found at any URL, with what each URL gave.
    pub missing: BTreeMap<GuideId, Vec<String>>,
}

/// Fetches every guide of `settings`.
pub async fn crawl_guides(
    fetcher: &Fetcher,
    settings: &GuideSettings,
    progress: &ProgressBar,
) -> Result<GuidesReport> {
    settings.validate()?;
    let mut report = GuidesReport::default();
    progress.set_message("guides");
    progress.inc_length(settings.ids.len() as u64);
    for id in &settings.ids {
        let mut tried = Vec::new();
        for url in guide_urls(settings, id) {
            let got = fetcher.fetch(&url, &format!("guide {id}"), BodyKind::Pdf).await?;
            match got {
                Fetched::Body {
                    sha256,
                    bytes,
                    cached,
                    ..
                } => {
                    report.cached += usize::from(cached);
                    report.found.insert(
                        id.clone(),
                        GuideSource {
                            id: id.clone(),
                            url,
                            sha256,
                            bytes: bytes.len() as u64,
                        },
                    );
                    tried.clear();
                    break;
                }
                Fetched::NoBody { status, .. } => tried.push(format!("{url}: HTTP {status} without a body")),
                Fetched::NotFound { status } => tried.push(format!("{url}: HTTP {status}")),
                Fetched::Failed { reason } => tried.push(format!("{url}: {reason}")),
                Fetched::Missing => tried.push(format!("{url}: not in the store (offline)")),
            }
        }
        if !report.found.contains_key(id) {
            report.missing.insert(id.clone(), tried);
        }
        progress.inc(1);
    }
    Ok(report)
}

/// Writes `raw/index/guides.jsonl`, sorted by guide id, atomically.
pub fn write_index(path: &Path, found: &BTreeMap<GuideId, GuideSource>) -> Result<()> {
    lexbench_core::io::write_jsonl(path, found.values())?;
    Ok(())
}
