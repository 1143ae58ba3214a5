//! A faithful local HUDOC (and guide and BSARD host) for tests, on 127.0.0.1 and a random port.
//!
//! It implements what the crawler meets on the real sites (DATA.md §1-2, §4):
//! - `GET /app/query/results`: the query clauses the crawler sends (`doctype=`, `languageisocode=`,
//!   `kpdate>=`/`<=`, `itemid:`, `NOT (…)`), `select`, `start`/`length` (a `length` over 500 is
//!   refused with 400), `resultcount`, results in the `sort` asked for (`itemid Ascending` is stable;
//!   `kpdate Descending` orders same-day documents differently on every request, as HUDOC does, so
//!   its pages overlap and skip rows), and **the cap**: rows past
//!   `start + i ≥ 10,000` silently come back empty. Dates are sent in HUDOC's two forms (ISO for even
//!   positions, `DD/MM/YYYY HH:MM:SS` for odd ones).
//! - `GET /app/conversion/docx?library=ECHR&id=…&filename=…`: the DOCX, 204 for items without a body,
//!   404 without `filename`.
//! - `GET /app/conversion/docx/html/body?library=ECHR&id=…`: the HTML, or 204.
//! - `GET /documents/d/echr-ks/{id}` and `/documents/d/echr/{id}`: a guide PDF; a miss redirects (302)
//!   to an HTML "page not found" answered with 200.
//! - any other path registered in [`FakeConfig::files`] (BSARD's CSV mirror, Justel PDFs).
//! - **Faults**, per request: Cloudflare's bot check (403, "Just a moment…", `cf-mitigated:
//!   challenge`) to clients without a User-Agent (or python-requests'); [`Faults::scripted`] answers
//!   (a cut JSON search page, an empty 200, a challenge, a DOCX conversion that fails every time); and
//!   with
//!   probability [`Faults::rate`] one of 403, 429 with `Retry-After`, 500, a delay past the client's
//!   timeout, a connection reset, a truncated body, an empty 200. Requests matching
//!   [`Faults::always_fail`] always answer 500.
//!
//! It records every request (time, path, status) and the largest number of requests in flight, so
//! tests can check politeness. The server speaks HTTP/1.1 with one request per connection.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::date::Date;

/// One document the fake HUDOC knows.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeItem {
    /// `001-NNNNNN`.
    pub itemid: String,
    /// `CASE OF …`.
    pub docname: String,
    /// `HEJUD`, `HEDEC`, …
    pub doctype: String,
    /// `ENG`, `FRE`, …
    pub lang: String,
    /// Its `kpdate`.
    pub kpdate: Date,
    /// A language placeholder.
    pub placeholder: bool,
    /// The DOCX body (`None`: 204).
    pub docx: Option<Vec<u8>>,
    /// The HTML body (`None`: 204).
    pub html: Option<String>,
    /// Search columns that replace the generated ones (`appno`, `ecli`, …).
    pub columns: Map<String, Value>,
}

/// Fault injection.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Probability that a request gets a fault (0 = none).
    pub rate: f64,
    /// Seed of the fault sequence.
    pub seed: u64,
    /// `Retry-After` sent with 429, in seconds.
    pub retry_after_secs: u64,
    /// How long a "delay" fault waits before answering (set it past the client's timeout).
    pub delay: Duration,
    /// Requests whose target (path and query) contains one of these strings always answer 500.
    pub always_fail: BTreeSet<String>,
    /// The first this-many requests answer 429 with `Retry-After` (a server asking for a pause).
    pub throttle_first: u64,
    /// Answers HUDOC gives some requests, checked in order before the random faults.
    pub scripted: Vec<Rule>,
}

/// A scripted answer: requests whose target (path and query) contains `target_contains` get
/// `answer`, the first `times` of them (0: every one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// A substring of the target (`start=500&`, `id=001-208029&filename`, `/app/conversion`).
    pub target_contains: String,
    /// What they get.
    pub answer: Scripted,
    /// How many matching requests get it (0: all).
    pub times: u64,
}

/// What a [`Rule`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scripted {
    /// 200, `application/json`, with a body that is not a search answer: JSON cut short
    /// (`{"resultcount": 3, "results": [{"colu`), as an overloaded search node sends.
    Malformed,
    /// 200 with an empty body (HUDOC's conversion does this for a while).
    Empty,
    /// 403 with Cloudflare's "Just a moment…" challenge page (HTML, `cf-mitigated: challenge`).
    Challenge,
    /// 503 with `cf-mitigated: challenge` and a short HTML body without the usual words.
    ChallengeHeader,
    /// 500, every time (the DOCX conversion of some items, 001-208029, 001-160044).
    ServerError,
}

/// The challenge page Cloudflare's bot check sends (shortened; the real one loads a script from
/// `/cdn-cgi/challenge-platform/`).
pub const CHALLENGE_PAGE: &str = "<!DOCTYPE html><html lang=\"en-US\"><head><title>Just a moment...</title>\
<meta http-equiv=\"refresh\" content=\"390\"></head><body><div class=\"main-wrapper\">\
<h1>hudoc.echr.coe.int</h1><h2>Verifying you are human. This may take a few seconds.</h2></div>\
<script src=\"/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8f1\"></script></body></html>";

fn challenge(status: u16, body: &str) -> Answer {
    let mut a = Answer::new(status, "text/html; charset=UTF-8", body);
    a.extra_headers.push(("cf-mitigated".into(), "challenge".into()));
    a.extra_headers.push(("Server".into(), "cloudflare".into()));
    a
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            rate: 0.0,
            seed: 1,
            retry_after_secs: 0,
            delay: Duration::from_secs(2),
            always_fail: BTreeSet::new(),
            throttle_first: 0,
            scripted: Vec::new(),
        }
    }
}

/// What the server serves.
#[derive(Debug, Clone, Default)]
pub struct FakeConfig {
    /// HUDOC documents.
    pub items: Vec<FakeItem>,
    /// Guide PDFs by guide id.
    pub guides: BTreeMap<String, Vec<u8>>,
    /// Other paths (`/bsard/articles_fr.csv`) → (content type, body), served with that content type
    /// (an HTML page or a gzip stream under a CSV's name included, as a misconfigured mirror may).
    pub files: BTreeMap<String, (String, Vec<u8>)>,
    /// Faults.
    pub faults: Faults,
    /// A fixed delay before every answer (to make concurrency observable).
    pub latency: Duration,
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// When it arrived.
    pub at: Instant,
    /// Path and query.
    pub target: String,
    /// The status answered (0: connection reset without an answer).
    pub status: u16,
    /// Whether the answer was a full, fault-free one.
    pub clean: bool,
}

#[derive(Debug)]
struct Shared {
    cfg: FakeConfig,
    log: Mutex<Vec<Logged>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    counter: AtomicU64,
    /// Requests each scripted rule has answered.
    rule_hits: Vec<AtomicU64>,
}

/// A running fake server; stops when dropped.
#[derive(Debug)]
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeServer {
    /// Starts the server on a random loopback port.
    pub async fn start(cfg: FakeConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            log: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            rule_hits: cfg.faults.scripted.iter().map(|_| AtomicU64::new(0)).collect(),
            counter: AtomicU64::new(0),
            cfg,
        });
        let s = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, s).await;
                });
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Logged> {
        self.shared.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The most requests that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Forbidden,
    TooMany,
    ServerError,
    Delay,
    Reset,
    Truncated,
    Empty,
}

const FAULTS: [Fault; 7] = [
    Fault::Forbidden,
    Fault::TooMany,
    Fault::ServerError,
    Fault::Delay,
    Fault::Reset,
    Fault::Truncated,
    Fault::Empty,
];

/// SplitMix64 of (seed, n): the n-th request's fault draw.
fn draw(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
    extra_headers: Vec<(String, String)>,
}

impl Answer {
    fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            content_type: content_type.to_owned(),
            body: body.into(),
            extra_headers: Vec::new(),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        302 => "Found",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(Some(String::from_utf8_lossy(&buf[..end]).into_owned()));
        }
        if buf.len() > 64 * 1024 {
            return Ok(None);
        }
    }
}

async fn serve(mut stream: TcpStream, s: Arc<Shared>) -> std::io::Result<()> {
    let Some(head) = read_head(&mut stream).await? else {
        return Ok(());
    };
    let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let at = Instant::now();
    let result = respond(&mut stream, &s, &head).await;
    s.in_flight.fetch_sub(1, Ordering::SeqCst);
    let (target, status, clean) = result?;
    if let Ok(mut log) = s.log.lock() {
        log.push(Logged {
            at,
            target,
            status,
            clean,
        });
    }
    Ok(())
}

async fn respond(stream: &mut TcpStream, s: &Shared, head: &str) -> std::io::Result<(String, u16, bool)> {
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default();
    let target = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let user_agent = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("user-agent"))
        .map(|(_, v)| v.trim().to_owned());
    if !s.cfg.latency.is_zero() {
        tokio::time::sleep(s.cfg.latency).await;
    }
    let path = target.split('?').next().unwrap_or("/").to_owned();

    // Cloudflare's answer to anonymous clients: the bot check.
    if user_agent
        .as_deref()
        .is_none_or(|ua| ua.is_empty() || ua.starts_with("python-requests"))
    {
        write_answer(stream, &challenge(403, CHALLENGE_PAGE), None).await?;
        return Ok((target, 403, false));
    }
    for (rule, hits) in s.cfg.faults.scripted.iter().zip(&s.rule_hits) {
        if !target.contains(rule.target_contains.as_str()) {
            continue;
        }
        let hit = hits.fetch_add(1, Ordering::SeqCst);
        if rule.times != 0 && hit >= rule.times {
            continue;
        }
        let a = match rule.answer {
            Scripted::Malformed => Answer::new(
                200,
                "application/json; charset=utf-8",
                r#"{"resultcount": 3, "results": [{"colu"#,
            ),
            Scripted::Empty => Answer::new(200, "application/octet-stream", Vec::new()),
            Scripted::Challenge => challenge(403, CHALLENGE_PAGE),
            Scripted::ChallengeHeader => challenge(503, "<html><body>Please wait</body></html>"),
            Scripted::ServerError => Answer::new(500, "text/plain", "internal error"),
        };
        write_answer(stream, &a, None).await?;
        return Ok((target, a.status, false));
    }
    if s.cfg
        .faults
        .always_fail
        .iter()
        .any(|f| target.contains(f.as_str()))
    {
        write_answer(stream, &Answer::new(500, "text/plain", "internal error"), None).await?;
        return Ok((target, 500, false));
    }
    let n = s.counter.fetch_add(1, Ordering::SeqCst);
    let x = draw(s.cfg.faults.seed, n);
    let fault = if n < s.cfg.faults.throttle_first {
        Some(Fault::TooMany)
    } else {
        (((x >> 11) as f64 / (1u64 << 53) as f64) < s.cfg.faults.rate)
            .then(|| FAULTS[(x % FAULTS.len() as u64) as usize])
    };

    let answer = route(&s.cfg, &target, &path, n);
    match fault {
        None => {
            write_answer(stream, &answer, None).await?;
            Ok((target, answer.status, true))
        }
        Some(Fault::Forbidden) => {
            write_answer(
                stream,
                &Answer::new(403, "text/html", "<html><body>403 Forbidden</body></html>"),
                None,
            )
            .await?;
            Ok((target, 403, false))
        }
        Some(Fault::TooMany) => {
            let mut a = Answer::new(429, "text/plain", "slow down");
            a.extra_headers
                .push(("Retry-After".into(), s.cfg.faults.retry_after_secs.to_string()));
            write_answer(stream, &a, None).await?;
            Ok((target, 429, false))
        }
        Some(Fault::ServerError) => {
            write_answer(stream, &Answer::new(500, "text/plain", "oops"), None).await?;
            Ok((target, 500, false))
        }
        Some(Fault::Delay) => {
            tokio::time::sleep(s.cfg.faults.delay).await;
            // The client has given up by now; the write may fail.
            let _ = write_answer(stream, &answer, None).await;
            Ok((target, answer.status, false))
        }
        Some(Fault::Reset) => {
            // Close without answering.
            let _ = stream.shutdown().await;
            Ok((target, 0, false))
        }
        Some(Fault::Truncated) => {
            if answer.body.len() < 2 {
                write_answer(stream, &Answer::new(500, "text/plain", "oops"), None).await?;
                return Ok((target, 500, false));
            }
            let cut = answer.body.len() / 2;
            write_answer(stream, &answer, Some(cut)).await?;
            Ok((target, answer.status, false))
        }
        Some(Fault::Empty) => {
            write_answer(stream, &Answer::new(200, &answer.content_type, Vec::new()), None).await?;
            Ok((target, 200, false))
        }
    }
}

/// Writes an answer; with `cut`, announces the full length but sends only `cut` bytes of the body.
async fn write_answer(stream: &mut TcpStream, a: &Answer, cut: Option<usize>) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        a.status,
        reason(a.status),
        a.content_type,
        a.body.len()
    );
    for (k, v) in &a.extra_headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    let body = &a.body[..cut.unwrap_or(a.body.len()).min(a.body.len())];
    stream.write_all(body).await?;
    stream.flush().await?;
    stream.shutdown().await
}

fn query_params(target: &str) -> BTreeMap<String, String> {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn route(cfg: &FakeConfig, target: &str, path: &str, n: u64) -> Answer {
    let params = query_params(target);
    match path {
        "/app/query/results" => search(cfg, &params, n),
        "/app/conversion/docx" => {
            if !params.contains_key("filename") {
                return Answer::new(404, "text/html", "<html>Not Found</html>");
            }
            match find(cfg, &params) {
                Some(FakeItem { docx: Some(d), .. }) => Answer::new(
                    200,
                    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                    d.clone(),
                ),
                Some(_) => Answer::new(204, "text/plain", Vec::new()),
                None => Answer::new(404, "text/html", "<html>Not Found</html>"),
            }
        }
        "/app/conversion/docx/html/body" => match find(cfg, &params) {
            Some(FakeItem { html: Some(h), .. }) => Answer::new(200, "text/html; charset=utf-8", h.clone()),
            Some(_) => Answer::new(204, "text/plain", Vec::new()),
            None => Answer::new(404, "text/html", "<html>Not Found</html>"),
        },
        "/404.html" => Answer::new(200, "text/html", "<html><body>Page not found</body></html>"),
        _ => {
            for prefix in ["/documents/d/echr-ks/", "/documents/d/echr/"] {
                if let Some(id) = path.strip_prefix(prefix) {
                    return match cfg.guides.get(&id.to_ascii_lowercase()) {
                        Some(pdf) => Answer::new(200, "application/pdf", pdf.clone()),
                        None => {
                            let mut a = Answer::new(302, "text/html", "");
                            a.extra_headers.push(("Location".into(), "/404.html".into()));
                            a
                        }
                    };
                }
            }
            match cfg.files.get(path) {
                Some((ct, body)) => Answer {
                    status: 200,
                    content_type: ct.clone(),
                    body: body.clone(),
                    extra_headers: vec![("ETag".into(), format!("\"{}\"", body.len()))],
                },
                None => Answer::new(404, "text/html", "<html>Not Found</html>"),
            }
        }
    }
}

fn find<'a>(cfg: &'a FakeConfig, params: &BTreeMap<String, String>) -> Option<&'a FakeItem> {
    let id = params.get("id")?;
    cfg.items.iter().find(|i| &i.itemid == id)
}

/// The filters the fake understands, read from a HUDOC query string.
#[derive(Debug, Default)]
struct Filter {
    doctypes: BTreeSet<String>,
    excluded: BTreeSet<String>,
    lang: Option<String>,
    since: Option<Date>,
    until: Option<Date>,
    itemid: Option<String>,
}

fn parse_filter(q: &str) -> Filter {
    let mut f = Filter::default();
    // NOT ( … ) groups list excluded document types.
    let mut rest = q.to_owned();
    while let Some(i) = rest.find("NOT (") {
        let tail = &rest[i + 5..];
        let mut depth = 1;
        let mut end = tail.len();
        for (j, c) in tail.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        for t in tail[..end].split("doctype=").skip(1) {
            f.excluded
                .insert(t.split([' ', ')']).next().unwrap_or_default().to_owned());
        }
        rest = format!("{}{}", &rest[..i], &tail[(end + 1).min(tail.len())..]);
    }
    for t in rest.split("doctype=").skip(1) {
        f.doctypes
            .insert(t.split([' ', ')']).next().unwrap_or_default().to_owned());
    }
    let quoted = |key: &str| -> Option<String> {
        let i = rest.find(key)?;
        let tail = &rest[i + key.len()..];
        let tail = tail.strip_prefix('"')?;
        Some(tail[..tail.find('"')?].to_owned())
    };
    f.lang = quoted("languageisocode=").or_else(|| quoted("languageisocode:"));
    f.itemid = quoted("itemid:");
    f.since = quoted("kpdate>=").and_then(|d| Date::parse_hudoc(&d));
    f.until = quoted("kpdate<=").and_then(|d| Date::parse_hudoc(&d));
    f
}

fn hudoc_date(d: Date, iso: bool) -> String {
    if iso {
        format!("{d}T00:00:00.0Z")
    } else {
        format!("{:02}/{:02}/{:04} 00:00:00", d.d, d.m, d.y)
    }
}

/// FNV-1a of a string: a tie's key, mixed with the request number by [`draw`].
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Orders search hits as HUDOC does for `sort`: `itemid Ascending` (or `Descending`) is a total
/// order, the same on every request; any other sort (`kpdate Descending`, `""` for relevance)
/// orders documents of the same day differently on each request (request number `n`), so pages
/// of one window overlap and skip rows.
fn order_hits(hits: &mut [&FakeItem], sort: &str, n: u64) {
    match sort.trim() {
        "itemid Ascending" => hits.sort_by(|a, b| a.itemid.cmp(&b.itemid)),
        "itemid Descending" => hits.sort_by(|a, b| b.itemid.cmp(&a.itemid)),
        _ => hits.sort_by_cached_key(|i| (std::cmp::Reverse(i.kpdate), draw(n, fnv(&i.itemid)))),
    }
}

fn search(cfg: &FakeConfig, params: &BTreeMap<String, String>, n: u64) -> Answer {
    const CAP: usize = 10_000;
    let start: usize = params.get("start").and_then(|s| s.parse().ok()).unwrap_or(0);
    let length: usize = params.get("length").and_then(|s| s.parse().ok()).unwrap_or(20);
    if length > 500 {
        return Answer::new(400, "text/plain", "length too large");
    }
    let f = parse_filter(params.get("query").map_or("", String::as_str));
    let mut hits: Vec<&FakeItem> = cfg
        .items
        .iter()
        .filter(|i| f.doctypes.is_empty() || f.doctypes.contains(&i.doctype))
        .filter(|i| !f.excluded.contains(&i.doctype))
        .filter(|i| f.lang.as_ref().is_none_or(|l| l == &i.lang))
        .filter(|i| f.since.is_none_or(|d| i.kpdate >= d))
        .filter(|i| f.until.is_none_or(|d| i.kpdate <= d))
        .filter(|i| f.itemid.as_ref().is_none_or(|id| id == &i.itemid))
        .collect();
    order_hits(&mut hits, params.get("sort").map_or("", String::as_str), n);
    let select: Vec<&str> = params
        .get("select")
        .map(|s| s.split(',').map(str::trim).collect())
        .unwrap_or_default();
    let rows: Vec<Value> = hits
        .iter()
        .enumerate()
        .skip(start)
        .take(length)
        // The cap: nothing past the 10,000th row, whatever the paging asks for.
        .filter(|(i, _)| *i < CAP)
        .map(|(i, item)| {
            let all = json!({
                "itemid": item.itemid,
                "docname": item.docname,
                "doctype": item.doctype,
                "languageisocode": item.lang,
                "kpdate": hudoc_date(item.kpdate, i % 2 == 0),
                "judgementdate": hudoc_date(item.kpdate, i % 2 == 1),
                "appno": format!("{}/{:02};{}/{:02}", 10000 + i % 50_000, item.kpdate.y % 100, 20000 + i, item.kpdate.y % 100),
                "importance": ((i % 4) + 1).to_string(),
                "article": "8;8-1",
                "isplaceholder": if item.placeholder { "True" } else { "False" },
                "doctypebranch": "CHAMBER",
                "respondent": "XXX",
            });
            let cols: Map<String, Value> = match all {
                Value::Object(mut m) => {
                    for (k, v) in &item.columns {
                        if !matches!(k.as_str(), "kpdate" | "itemid") {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                    m
                }
                _ => Map::new(),
            };
            let cols: Map<String, Value> = cols
                    .into_iter()
                    .filter(|(k, _)| select.is_empty() || select.contains(&k.as_str()))
                    .collect();
            json!({ "columns": cols })
        })
        .collect();
    let body = json!({ "resultcount": hits.len(), "results": rows });
    Answer::new(200, "application/json; charset=utf-8", body.to_string())
}

#[cfg(test)]
mod tests {
    //! Properties: the query filter reads the crawler's own query form; percent-decoding is exact.
    use super::*;

    #[test]
    fn reads_the_crawlers_query() {
        let q = crate::hudoc::query_string(
            "ENG",
            &["HEJUD".into()],
            Date { y: 2020, m: 1, d: 1 },
            Date { y: 2020, m: 6, d: 30 },
        );
        let f = parse_filter(&q);
        assert_eq!(f.doctypes, BTreeSet::from(["HEJUD".to_owned()]));
        assert_eq!(f.excluded.len(), 3);
        assert_eq!(f.lang.as_deref(), Some("ENG"));
        assert_eq!(f.since, Some(Date { y: 2020, m: 1, d: 1 }));
        assert_eq!(f.until, Some(Date { y: 2020, m: 6, d: 30 }));
        assert_eq!(decode(&crate::hudoc::encode(&q)), q);
    }
}
