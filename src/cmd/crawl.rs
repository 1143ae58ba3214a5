//! `lexbench crawl hudoc|guides|bsard`: fetch the public sources into `DATA/raw` with the crawl
//! driver [`lexbench::crawl`].
//!
//! Arguments are validated before the raw store is opened or a request made (base URLs are http(s)
//! URLs with a host, dates real calendar dates from 1959 to next year with `--since` ≤ `--until`,
//! document types non-empty; `--rate`, `--concurrency`, `--timeout` and `--retries` within the ranges
//! their help gives, checked by [`HttpConfig::validate`] for every source): a typo exits 2 at once
//! instead of being retried as a network error, and no value makes the crawler panic.
//!
//! A bot check (a Cloudflare challenge page) stops the crawl at once, exit 2, with a message saying
//! what to do (wait, `--rate`, `--user-agent`, a mirror, `--offline`); it is never retried.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use lexbench::crawl::{CrawlReport, FetchOptions, Source, crawl};
use lexbench_core::GuideId;
use lexbench_core::datadir::DataDir;
use lexbench_crawlers::bsard::{BSARD_FILES, BsardSettings, EJUSTICE_BASE};
use lexbench_crawlers::date::Date;
use lexbench_crawlers::guides::{self, GuideSettings};
use lexbench_crawlers::http::HttpConfig;
use lexbench_crawlers::hudoc::{self, HudocSettings};

/// Settings shared by every source.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Requests per second, across all concurrent downloads (0.001..=10000).
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    pub rate: f64,
    /// Downloads in flight at once (1..=64).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = crate::cmd::args::unsigned::<usize>)]
    pub concurrency: usize,
    /// Timeout of one attempt, in seconds (1..=3600).
    #[arg(long, default_value_t = 75, allow_negative_numbers = true, value_parser = crate::cmd::args::unsigned::<u64>)]
    pub timeout: u64,
    /// Retries after a failed attempt (403, 429, 5xx, timeouts, cut bodies; 0..=20).
    #[arg(long, default_value_t = 6, allow_negative_numbers = true, value_parser = retries)]
    pub retries: u64,
    /// The User-Agent sent with every request; default `lexbench/VERSION (…)`. Name yourself and a
    /// contact address if a site answers with a bot check.
    #[arg(long)]
    pub user_agent: Option<String>,
    /// Make no request: rebuild the indexes from what the raw store already holds.
    #[arg(long)]
    pub offline: bool,
    /// Fetch again URLs the store already has.
    #[arg(long, conflicts_with = "offline")]
    pub refresh: bool,
}

/// `--retries`: a whole number; one too large for any integer is named with the bound that matters
/// (0..=20), not the integer type's (the range check itself is [`CommonArgs::fetch_options`]'s).
fn retries(s: &str) -> std::result::Result<u64, String> {
    crate::cmd::args::unsigned::<u64>(s).map_err(|e| {
        if e.starts_with("too large") {
            format!(
                "too large: retries must be within 0..={}",
                lexbench_crawlers::http::MAX_RETRIES
            )
        } else {
            e
        }
    })
}

/// Which source to crawl.
#[derive(Debug, Subcommand)]
pub enum CrawlCommand {
    /// HUDOC metadata (search) and judgment bodies.
    Hudoc {
        /// First kpdate (YYYY-MM-DD).
        #[arg(long, default_value = "1959-01-01")]
        since: String,
        /// Last kpdate (YYYY-MM-DD); default today.
        #[arg(long)]
        until: Option<String>,
        /// Language code.
        #[arg(long, default_value = "ENG")]
        lang: String,
        /// Document types (comma-separated); HEJUD = judgments.
        #[arg(long, value_delimiter = ',', default_value = "HEJUD")]
        doctype: Vec<String>,
        /// HUDOC's base URL.
        #[arg(long, default_value = hudoc::HUDOC_BASE)]
        base_url: String,
        /// Also fetch the HTML bodies.
        #[arg(long)]
        html: bool,
        /// Metadata only: fetch no bodies.
        #[arg(long)]
        metadata_only: bool,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// The case-law guide PDFs.
    Guides {
        /// Guide ids (comma-separated); default: the 37 English guides of 2023-2024.
        #[arg(long, value_delimiter = ',')]
        ids: Vec<String>,
        /// Base URL of the Knowledge Sharing platform.
        #[arg(long, default_value = guides::KS_BASE)]
        ks_base: String,
        /// Base URL of the Court's site.
        #[arg(long, default_value = guides::WWW_BASE)]
        www_base: String,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// BSARD's published files (from a mirror) and Justel PDFs.
    Bsard {
        /// The mirror serving BSARD's CSV files, e.g.
        /// https://huggingface.co/datasets/maastrichtlawtech/bsard/resolve/main (or resolve/COMMIT to
        /// pin a revision). Each file is asked for under its current name (articles.csv,
        /// questions_train.csv, questions_test.csv), then its v1 name (articles_fr.csv, …), and
        /// recorded under the v1 name.
        #[arg(long)]
        base_url: String,
        /// Files to fetch from the mirror (comma-separated).
        #[arg(long, value_delimiter = ',')]
        files: Vec<String>,
        /// Justel acts to fetch (comma-separated): NUMAC@YYYY-MM-DD (the promulgation date, under
        /// which Justel files the PDF), the act's ELI (…/eli/loi/2020/04/27/2020030910/justel), or a
        /// bare numac whose first eight digits are that date (1804032150, Code civil). Numacs may
        /// hold capital letters (2019A41000).
        #[arg(long, value_delimiter = ',')]
        numac: Vec<String>,
        /// eJustice's base URL.
        #[arg(long, default_value = EJUSTICE_BASE)]
        ejustice_base: String,
        #[command(flatten)]
        common: CommonArgs,
    },
}

impl CommonArgs {
    fn fetch_options(&self) -> anyhow::Result<FetchOptions> {
        let defaults = HttpConfig::default();
        Ok(FetchOptions {
            http: HttpConfig {
                rate_per_sec: self.rate,
                concurrency: self.concurrency,
                timeout: Duration::from_secs(self.timeout),
                // Past u32, the value is still named with the documented range.
                max_retries: u32::try_from(self.retries)
                    .ok()
                    .filter(|&r| r <= lexbench_crawlers::http::MAX_RETRIES)
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "invalid setting: --retries {}: retries must be within 0..={}",
                            self.retries,
                            lexbench_crawlers::http::MAX_RETRIES
                        )
                    })?,
                user_agent: self.user_agent.clone().unwrap_or(defaults.user_agent.clone()),
                ..defaults
            },
            offline: self.offline,
            refresh: self.refresh,
        })
    }
}

fn progress() -> ProgressBar {
    let bar = ProgressBar::new(0);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:>14} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn date(s: &str, what: &str) -> Result<Date> {
    s.parse::<Date>().with_context(|| format!("--{what}"))
}

/// The source and fetch options the arguments describe.
fn source(cmd: &CrawlCommand) -> Result<(Source, &CommonArgs)> {
    Ok(match cmd {
        CrawlCommand::Hudoc {
            since,
            until,
            lang,
            doctype,
            base_url,
            html,
            metadata_only,
            common,
        } => (
            Source::Hudoc(HudocSettings {
                base_url: base_url.clone(),
                lang: lang.clone(),
                doctypes: doctype.clone(),
                since: date(since, "since")?,
                until: until
                    .as_deref()
                    .map(|u| date(u, "until"))
                    .transpose()?
                    .unwrap_or_else(Date::today),
                docx: !metadata_only,
                html: *html && !metadata_only,
                ..HudocSettings::default()
            }),
            common,
        ),
        CrawlCommand::Guides {
            ids,
            ks_base,
            www_base,
            common,
        } => {
            let mut settings = GuideSettings {
                ks_base: ks_base.clone(),
                www_base: www_base.clone(),
                ..GuideSettings::default()
            };
            if !ids.is_empty() {
                settings.ids = ids
                    .iter()
                    .map(|i| GuideId::normalised(i))
                    .collect::<Result<_, _>>()
                    .context("--ids")?;
            }
            (Source::Guides(settings), common)
        }
        CrawlCommand::Bsard {
            base_url,
            files,
            numac,
            ejustice_base,
            common,
        } => (
            Source::Bsard(BsardSettings {
                base_url: base_url.clone(),
                files: if files.is_empty() {
                    BSARD_FILES.iter().map(|s| (*s).to_owned()).collect()
                } else {
                    files.clone()
                },
                ejustice_base: ejustice_base.clone(),
                numacs: numac.clone(),
            }),
            common,
        ),
    })
}

/// Runs `lexbench crawl`: exit 1 when something failed (a rerun retries it).
pub fn cmd_crawl(data: &DataDir, cmd: &CrawlCommand) -> Result<ExitCode> {
    let (source, common) = source(cmd)?;
    let bar = progress();
    let report = crawl(data, &source, &common.fetch_options()?, &bar)?;
    bar.finish_and_clear();
    print_report(&report);
    let problems = report.problems();
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "{problems} problem(s): rerun the same command to retry what failed (stored answers are kept)"
        );
        ExitCode::from(1)
    })
}

fn print_report(report: &CrawlReport) {
    match report {
        CrawlReport::Hudoc(h) => {
            let meta = &h.metadata;
            eprintln!(
                "metadata: {} documents in {} date windows, {} pages ({} from the store) → {}",
                meta.records.len(),
                meta.windows,
                meta.pages,
                meta.cached_pages,
                h.metadata_index.display()
            );
            for (url, why) in &meta.failed_pages {
                eprintln!("  failed page {url}: {why}");
            }
            for (day, n) in &meta.over_cap_days {
                eprintln!("  {day} alone has {n} results, over the cap: rows past 10,000 are lost");
            }
            for (a, b, n, got) in &meta.short_windows {
                eprintln!("  window {a}..{b}: {got} of {n} documents (paging was unstable)");
            }
            if let Some(bodies) = &h.bodies {
                eprintln!(
                    "bodies: {} fetched, {} already stored, {} without a body, {} placeholders skipped, {} failed, {} empty{}",
                    bodies.fetched,
                    bodies.cached,
                    bodies.no_body,
                    bodies.placeholders,
                    bodies.failed.len(),
                    bodies.empty.len(),
                    if bodies.missing > 0 {
                        format!(", {} not in the store (offline)", bodies.missing)
                    } else {
                        String::new()
                    }
                );
                for (url, why) in &bodies.failed {
                    eprintln!("  failed {url}: {why}");
                }
                for url in &bodies.empty {
                    eprintln!("  empty answer (200 without a body) every time: {url}");
                }
                if !bodies.html_fallback.is_empty() {
                    eprintln!(
                        "{} bodies taken as HTML because their DOCX fails for good (--refresh asks for the DOCX again):",
                        bodies.html_fallback.len()
                    );
                    for (item, why) in &bodies.html_fallback {
                        eprintln!("  {item}: {why}");
                    }
                }
            }
        }
        CrawlReport::Guides(r, path) => {
            eprintln!(
                "guides: {} found ({} from the store), {} missing → {}",
                r.found.len(),
                r.cached,
                r.missing.len(),
                path.display()
            );
            for (id, tried) in &r.missing {
                eprintln!("  {id}: {}", tried.join("; "));
            }
        }
        CrawlReport::Bsard(r, path) => {
            eprintln!(
                "bsard: {} files stored, {} failed → {}",
                r.found.len(),
                r.failed.len(),
                path.display()
            );
            for (name, why) in &r.failed {
                eprintln!("  {name}: {why}");
            }
        }
    }
}
