//! The crawl driver shared by `lexbench crawl` and `lexbench pipeline`: one source's settings in, the
//! raw store and its index files (`DATA/raw/index/*.jsonl`) written, a typed report out.
//!
//! [`crawl`] validates the source's settings and the HTTP settings before the raw store is opened or
//! a request made, so a typo is refused at once instead of being retried as a network error;
//! [`crawl_with`] runs one source with a [`Fetcher`] already open (the pipeline crawls the three
//! sources of the embedded sample with one client); [`crawl_sample`] serves the embedded sample on a
//! loopback port and crawls it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use lexbench_core::GuideId;
use lexbench_core::datadir::DataDir;
use lexbench_crawlers::bsard::{self, BSARD_FILES, BsardReport, BsardSettings};
use lexbench_crawlers::fake_hudoc::FakeServer;
use lexbench_crawlers::fetch::Fetcher;
use lexbench_crawlers::guides::{self, GuideSettings, GuidesReport};
use lexbench_crawlers::http::{HttpConfig, PoliteClient};
use lexbench_crawlers::hudoc::{self, BodiesReport, HudocSettings, MetadataReport};
use lexbench_crawlers::store::RawStore;

use crate::sample;

/// How to fetch: the polite client's settings and the store's policy.
#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// Rate, concurrency, timeout and retries of the client.
    pub http: HttpConfig,
    /// Make no request: rebuild the indexes from what the raw store already holds.
    pub offline: bool,
    /// Fetch again URLs the store already has.
    pub refresh: bool,
}

/// One public source and what to fetch from it.
#[derive(Debug, Clone)]
pub enum Source {
    /// HUDOC metadata (search) and, as the settings say, judgment bodies.
    Hudoc(HudocSettings),
    /// The case-law guide PDFs.
    Guides(GuideSettings),
    /// BSARD's published files and Justel PDFs.
    Bsard(BsardSettings),
}

impl Source {
    /// Checks the source's settings.
    pub fn validate(&self) -> Result<()> {
        match self {
            Source::Hudoc(s) => s.validate()?,
            Source::Guides(s) => s.validate()?,
            Source::Bsard(s) => s.validate()?,
        }
        Ok(())
    }
}

/// What a HUDOC crawl did.
#[derive(Debug, Clone)]
pub struct HudocCrawl {
    /// The metadata crawl.
    pub metadata: MetadataReport,
    /// Where the metadata index was written (`raw/index/hudoc_metadata.jsonl`).
    pub metadata_index: PathBuf,
    /// The body crawl, unless only metadata was asked for (boxed: the report is large).
    pub bodies: Option<Box<BodiesReport>>,
}

/// What a crawl did, per source.
#[derive(Debug, Clone)]
pub enum CrawlReport {
    /// HUDOC.
    Hudoc(HudocCrawl),
    /// The guides, and where their index was written (`raw/index/guides.jsonl`).
    Guides(GuidesReport, PathBuf),
    /// BSARD, and where its index was written (`raw/index/bsard.jsonl`).
    Bsard(BsardReport, PathBuf),
}

impl CrawlReport {
    /// Problems a rerun may fix: failed pages and bodies, days over HUDOC's cap, short windows,
    /// bodies still empty (200 without a body) after every round, bodies missing offline, guides not
    /// found, files not fetched. A body taken as HTML because its DOCX fails for good is not one.
    pub fn problems(&self) -> usize {
        match self {
            CrawlReport::Hudoc(h) => {
                let m = &h.metadata;
                m.failed_pages.len()
                    + m.over_cap_days.len()
                    + m.short_windows.len()
                    + h.bodies
                        .as_ref()
                        .map_or(0, |b| b.failed.len() + b.empty.len() + b.missing)
            }
            CrawlReport::Guides(r, _) => r.missing.len(),
            CrawlReport::Bsard(r, _) => r.failed.len(),
        }
    }
}

/// Opens the raw store `raw` and the client `options` describe (validated first).
pub fn open_fetcher(raw: &Path, options: &FetchOptions) -> Result<Fetcher> {
    options.http.validate()?;
    let store =
        Arc::new(RawStore::open(raw).with_context(|| format!("opening the raw store {}", raw.display()))?);
    if options.offline {
        return Ok(Fetcher::offline(store));
    }
    Ok(Fetcher::online(store, PoliteClient::new(options.http.clone())?).refreshing(options.refresh))
}

/// A multi-threaded async runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Crawls `source` into `data`'s raw store: settings checked, then the store and client opened, then
/// the source fetched and its index written. Blocks on its own runtime; `progress` shows the
/// downloads.
pub fn crawl(
    data: &DataDir,
    source: &Source,
    options: &FetchOptions,
    progress: &ProgressBar,
) -> Result<CrawlReport> {
    source.validate()?;
    let raw = data.raw();
    let fetcher = open_fetcher(&raw, options)?;
    runtime()?.block_on(crawl_with(
        &fetcher,
        &raw,
        source,
        options.http.concurrency,
        progress,
    ))
}

/// Crawls `source` with `fetcher` into the raw store `raw`, HUDOC bodies `concurrency` at a time,
/// and writes the source's index under `raw/index/`.
pub async fn crawl_with(
    fetcher: &Fetcher,
    raw: &Path,
    source: &Source,
    concurrency: usize,
    progress: &ProgressBar,
) -> Result<CrawlReport> {
    let index = raw.join("index");
    Ok(match source {
        Source::Hudoc(settings) => {
            let metadata = hudoc::crawl_metadata(fetcher, settings, progress).await?;
            let metadata_index = index.join("hudoc_metadata.jsonl");
            hudoc::write_index(&metadata_index, &metadata.records)?;
            let bodies = if settings.docx || settings.html {
                let b =
                    hudoc::crawl_bodies(fetcher, &metadata.records, settings, concurrency, progress).await?;
                if !b.stored.is_empty() {
                    hudoc::write_bodies_index(&index.join("hudoc_bodies.jsonl"), &b.stored)?;
                }
                Some(Box::new(b))
            } else {
                None
            };
            CrawlReport::Hudoc(HudocCrawl {
                metadata,
                metadata_index,
                bodies,
            })
        }
        Source::Guides(settings) => {
            let r = guides::crawl_guides(fetcher, settings, progress).await?;
            let path = index.join("guides.jsonl");
            guides::write_index(&path, &r.found)?;
            CrawlReport::Guides(r, path)
        }
        Source::Bsard(settings) => {
            let r = bsard::crawl_bsard(fetcher, settings, progress).await?;
            let path = index.join("bsard.jsonl");
            bsard::write_index(&path, &r.found)?;
            CrawlReport::Bsard(r, path)
        }
    })
}

/// What [`crawl_sample`] did.
#[derive(Debug, Clone)]
pub struct SampleCrawl {
    /// The loopback address the sample was served on.
    pub base_url: String,
    /// Judgments found in the sample's HUDOC search.
    pub judgments: usize,
    /// Judgment bodies stored.
    pub bodies: usize,
    /// Guides stored.
    pub guides: usize,
    /// BSARD files stored.
    pub bsard_files: usize,
}

/// Serves the embedded sample on a loopback port ([`lexbench_crawlers::fake_hudoc`]) and crawls it
/// with the real crawler into `data`'s raw store: HUDOC metadata and DOCX bodies, the guide PDFs,
/// the BSARD-format CSV files. A document lost on the way is an error.
pub async fn crawl_sample(data: &DataDir) -> Result<SampleCrawl> {
    let server = FakeServer::start(sample::fake_config()?)
        .await
        .context("starting the sample server")?;
    let raw = data.raw();
    let options = FetchOptions {
        http: HttpConfig {
            rate_per_sec: 200.0,
            ..HttpConfig::default()
        },
        ..FetchOptions::default()
    };
    let fetcher = open_fetcher(&raw, &options)?;
    let hidden = ProgressBar::hidden();
    let base = server.base_url();
    let sources = [
        Source::Hudoc(HudocSettings {
            base_url: base.clone(),
            since: sample::SINCE,
            until: sample::UNTIL,
            ..HudocSettings::default()
        }),
        Source::Guides(GuideSettings {
            ks_base: base.clone(),
            www_base: base.clone(),
            ids: sample::GUIDES
                .iter()
                .map(|(id, _)| GuideId::new(*id))
                .collect::<Result<_, _>>()?,
        }),
        Source::Bsard(BsardSettings {
            base_url: format!("{base}/bsard"),
            files: BSARD_FILES.iter().map(|f| (*f).to_owned()).collect(),
            ejustice_base: base.clone(),
            numacs: Vec::new(),
        }),
    ];
    let mut out = SampleCrawl {
        base_url: base,
        judgments: 0,
        bodies: 0,
        guides: 0,
        bsard_files: 0,
    };
    let mut lost = Vec::new();
    for source in &sources {
        let report = crawl_with(&fetcher, &raw, source, options.http.concurrency, &hidden).await?;
        match &report {
            CrawlReport::Hudoc(h) => {
                out.judgments = h.metadata.records.len();
                out.bodies = h.bodies.as_ref().map_or(0, |b| b.stored.len());
                lost.extend(h.metadata.failed_pages.iter().map(|(u, w)| format!("{u}: {w}")));
                lost.extend(
                    h.bodies
                        .iter()
                        .flat_map(|b| &b.failed)
                        .map(|(u, w)| format!("{u}: {w}")),
                );
            }
            CrawlReport::Guides(r, _) => {
                out.guides = r.found.len();
                lost.extend(r.missing.iter().map(|(id, t)| format!("{id}: {}", t.join("; "))));
            }
            CrawlReport::Bsard(r, _) => {
                out.bsard_files = r.found.len();
                lost.extend(r.failed.iter().map(|(n, w)| format!("{n}: {w}")));
            }
        }
    }
    if !lost.is_empty() {
        anyhow::bail!("the sample crawl lost documents: {}", lost.join("; "));
    }
    Ok(out)
}
