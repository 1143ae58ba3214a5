//! Polite HTTP: an identifying User-Agent, a global request rate, a concurrency limit, timeouts, and
//! retries with exponential backoff and jitter that honour `Retry-After`.
//!
//! A bot check is not retried: a 403 or 503 that carries `cf-mitigated: challenge` or Cloudflare's
//! challenge page ("Just a moment…", `/cdn-cgi/challenge-platform/`) fails at once with
//! [`Failure::challenge`] set, and the fetcher stops the crawl ([`crate::Error::Challenged`]):
//! retrying would only spend the budget and make the next answer more likely a block.
//!
//! What is retried (DATA.md §1, "Politeness"): 403 (HUDOC's Cloudflare layer), 429, 5xx, connection
//! errors, timeouts, bodies cut short, and empty 200 bodies (up to [`HttpConfig::empty_retries`], then
//! accepted as empty). What is not: other 4xx (a 404 is an answer), 204 ("no body" is an answer).
//! Every attempt, retries included, passes the rate limiter; only requests in flight count against the
//! concurrency limit (a request waiting out a backoff does not hold a slot).
//!
//! The waits between attempts (backoff, `Retry-After`) go through a [`Sleeper`], `tokio::time::sleep`
//! unless [`PoliteClient::with_sleeper`] says otherwise, so tests observe the waits asked for instead of
//! timing them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, Semaphore};

use crate::error::{Error, Result};

/// Checks a base URL setting: an absolute `http` or `https` URL with a host, no credentials, and
/// nothing after its path (request URLs are the base followed by a path, so a query or fragment would
/// garble them). `option` names the setting in the message (`--base-url`). Called before anything is
/// fetched, so a typo fails at once instead of being retried as a network error.
///
/// Credentials (`https://user:secret@host/`) are refused, not stripped: every request URL is written
/// to the raw store's manifest, the indexes and the logs, so a password in it would be stored in the
/// clear; stripping it instead would silently crawl without the authentication the user asked for.
/// The crawler sends no credentials: use a mirror that needs none. The error shows the URL with its
/// credentials and query values replaced by `***` ([`redact_url`]).
///
/// # Errors
/// [`Error::Config`] naming the option, the (redacted) value and what is wrong with it.
pub fn check_base_url(option: &str, url: &str) -> Result<()> {
    let shown = redact_url(url);
    let bad = |why: &str| {
        Error::Config(format!(
            "{option} {shown:?} is not an http(s) URL with a host: {why}"
        ))
    };
    if url.trim() != url {
        return Err(bad("it has leading or trailing spaces"));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad(&format!("its scheme is {:?}", parsed.scheme())));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad(
            "it holds credentials (the part before '@'), which would be written to the raw store's \
             manifest and logs; lexbench sends none: use a mirror that needs none",
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad("a base URL has no query or fragment"));
    }
    Ok(())
}

/// `url` fit to print: the credentials of its authority (`user:secret@`) become `***@` and the
/// value of every query parameter `***`, whether or not the URL parses (a URL refused for a typo may
/// still hold a password).
pub fn redact_url(url: &str) -> String {
    let (head, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rfind('@') {
        Some(at) if !head.is_empty() => format!("***{}", &authority[at..]),
        _ => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (query, None),
            };
            let query: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None => p.to_owned(),
                })
                .collect();
            let fragment = fragment.map(|f| format!("#{f}")).unwrap_or_default();
            format!("{path}?{}{fragment}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{head}{authority}{tail}")
}

/// Settings of the polite client. Defaults follow what existing HUDOC clients do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Sent with every request; HUDOC's Cloudflare layer answers anonymous clients with 403.
    pub user_agent: String,
    /// Requests per second across all tasks (default 2).
    pub rate_per_sec: f64,
    /// Requests in flight at once (default 4).
    pub concurrency: usize,
    /// Timeout of one attempt, connection to last byte (default 75 s).
    pub timeout: Duration,
    /// Retries after the first attempt (default 6).
    pub max_retries: u32,
    /// First backoff (default 1 s); doubles each retry, with jitter.
    pub backoff_base: Duration,
    /// Longest backoff or `Retry-After` wait honoured (default 120 s).
    pub backoff_max: Duration,
    /// How often an empty 200 body is retried before it is accepted as empty (default 2).
    pub empty_retries: u32,
    /// The largest body accepted, in bytes (default 64 MiB, the largest judgment or guide the parsers
    /// take). A longer one fails at once, without retries, having read no more than this: told by
    /// `Content-Length` before reading, or while reading when the server does not send it.
    pub max_body_bytes: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            user_agent: format!(
                "lexbench/{} (legal-retrieval benchmark rebuild; polite crawler)",
                env!("CARGO_PKG_VERSION")
            ),
            rate_per_sec: 2.0,
            concurrency: 4,
            timeout: Duration::from_secs(75),
            max_retries: 6,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(120),
            empty_retries: 2,
            max_body_bytes: 64 << 20,
        }
    }
}

/// The slowest request rate accepted, in requests per second: one request every 1,000 s. A slower
/// rate would make the wait between requests longer than any crawl runs (and, near zero, longer
/// than a [`Duration`] can hold).
pub const MIN_RATE: f64 = 0.001;
/// The fastest request rate accepted, in requests per second (the loopback tests need thousands; a
/// public site should get the default, 2).
pub const MAX_RATE: f64 = 10_000.0;
/// The most requests in flight at once.
pub const MAX_CONCURRENCY: usize = 64;
/// The longest timeout of one attempt (and the longest backoff or `Retry-After` wait): one hour.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// The most retries after the first attempt (of failed attempts, and of empty 200 bodies). With
/// backoff capped at [`HttpConfig::backoff_max`], more would only stretch a doomed fetch over hours.
pub const MAX_RETRIES: u32 = 20;
/// The largest body size that may be configured: 1 GiB.
pub const MAX_BODY_BYTES: u64 = 1 << 30;

impl HttpConfig {
    /// Checks the settings against their documented ranges: the rate within
    /// [`MIN_RATE`]`..=`[`MAX_RATE`] requests/s, the concurrency within `1..=`[`MAX_CONCURRENCY`],
    /// the timeout within 1 ms`..=`[`MAX_TIMEOUT`], retries (and empty-body retries) within
    /// `0..=`[`MAX_RETRIES`], `backoff_base <= backoff_max <= MAX_TIMEOUT`, the body cap within
    /// `1..=`[`MAX_BODY_BYTES`], and a User-Agent that is a non-empty printable header value.
    /// [`PoliteClient::new`] calls it, so no setting can make the client panic (an interval or a
    /// semaphore too large to represent).
    ///
    /// # Errors
    /// [`Error::Config`] naming the command-line option (`--rate`, `--concurrency`, `--timeout`,
    /// `--retries`) or the field, the value and the range accepted.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::Config(what));
        let rate = self.rate_per_sec;
        if !(rate.is_finite() && (MIN_RATE..=MAX_RATE).contains(&rate)) {
            return bad(format!(
                "--rate {rate:?}: requests per second must be a number within {MIN_RATE}..={MAX_RATE}"
            ));
        }
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return bad(format!(
                "--concurrency {}: requests in flight must be within 1..={MAX_CONCURRENCY}",
                self.concurrency
            ));
        }
        if self.timeout < Duration::from_millis(1) || self.timeout > MAX_TIMEOUT {
            return bad(format!(
                "--timeout {} s: the timeout of one attempt must be within 0.001..={} s",
                self.timeout.as_secs_f64(),
                MAX_TIMEOUT.as_secs()
            ));
        }
        if self.max_retries > MAX_RETRIES {
            return bad(format!(
                "--retries {}: retries must be within 0..={MAX_RETRIES}",
                self.max_retries
            ));
        }
        if self.empty_retries > MAX_RETRIES {
            return bad(format!(
                "empty_retries {}: retries of an empty body must be within 0..={MAX_RETRIES}",
                self.empty_retries
            ));
        }
        if self.backoff_max > MAX_TIMEOUT || self.backoff_base > self.backoff_max {
            return bad(format!(
                "backoff_base {} s, backoff_max {} s: must satisfy backoff_base <= backoff_max <= {} s",
                self.backoff_base.as_secs_f64(),
                self.backoff_max.as_secs_f64(),
                MAX_TIMEOUT.as_secs()
            ));
        }
        if self.user_agent.trim().is_empty() || self.user_agent.chars().any(char::is_control) {
            return bad(format!(
                "--user-agent {:?}: the User-Agent must be non-empty printable text",
                self.user_agent
            ));
        }
        if !(1..=MAX_BODY_BYTES).contains(&self.max_body_bytes) {
            return bad(format!(
                "max_body_bytes {}: the largest body must be within 1..={MAX_BODY_BYTES} bytes",
                self.max_body_bytes
            ));
        }
        Ok(())
    }
}

/// An answer that was not retried away.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Content-Encoding` (the client asks for none, so any but `identity` was not asked for).
    pub content_encoding: Option<String>,
    /// `ETag`.
    pub etag: Option<String>,
    /// `Last-Modified`.
    pub last_modified: Option<String>,
    /// The body.
    pub body: Vec<u8>,
    /// Attempts it took.
    pub attempts: u32,
}

/// A fetch that failed for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The last status seen, if any answer came.
    pub status: Option<u16>,
    /// Why the last attempt failed.
    pub reason: String,
    /// Attempts made.
    pub attempts: u32,
    /// The answer was a bot check (a Cloudflare challenge), not a failure a retry could fix.
    pub challenge: bool,
}

/// How the client waits out a backoff or a `Retry-After` before the next attempt.
pub trait Sleeper: Send + Sync + std::fmt::Debug {
    /// Waits `wait`.
    fn sleep(&self, wait: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
}

/// The [`Sleeper`] of every client unless told otherwise: `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, wait: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        Box::pin(tokio::time::sleep(wait))
    }
}

/// The polite client. Cheap to clone; clones share the rate limiter and concurrency slots.
#[derive(Debug, Clone)]
pub struct PoliteClient {
    inner: reqwest::Client,
    cfg: Arc<HttpConfig>,
    next_slot: Arc<Mutex<Instant>>,
    slots: Arc<Semaphore>,
    jitter: Arc<AtomicU64>,
    sleeper: Arc<dyn Sleeper>,
}

/// Installs rustls' ring crypto provider once (reqwest is built without a default provider so that no
/// C/asm-heavy aws-lc build is needed).
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

enum Attempt {
    Done(Response),
    /// Not worth another attempt (a body over the cap, a bot check).
    Fail {
        status: Option<u16>,
        reason: String,
        challenge: bool,
    },
    Retry {
        status: Option<u16>,
        reason: String,
        wait: Option<Duration>,
    },
}

impl PoliteClient {
    /// Builds a client.
    pub fn new(cfg: HttpConfig) -> Result<Self> {
        cfg.validate()?;
        install_crypto_provider();
        let inner = reqwest::Client::builder()
            .user_agent(cfg.user_agent.clone())
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(30)))
            .redirect(reqwest::redirect::Policy::limited(5))
            .build()
            .map_err(|e| Error::Client(e.to_string()))?;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x5eed, |d| d.as_nanos() as u64)
            | 1;
        Ok(Self {
            inner,
            slots: Arc::new(Semaphore::new(cfg.concurrency)),
            cfg: Arc::new(cfg),
            next_slot: Arc::new(Mutex::new(Instant::now())),
            jitter: Arc::new(AtomicU64::new(seed)),
            sleeper: Arc::new(TokioSleeper),
        })
    }

    /// The same client, waiting between attempts through `sleeper` (the rate limiter's pacing is
    /// not affected).
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// The settings.
    pub fn config(&self) -> &HttpConfig {
        &self.cfg
    }

    /// Waits for this request's turn under the global rate. The slot is taken when the request actually
    /// goes, not when it was planned: a task that wakes late (a busy machine) does not let the
    /// requests queued behind it go in a burst.
    async fn pace(&self) {
        let interval = Duration::from_secs_f64(1.0 / self.cfg.rate_per_sec);
        loop {
            let wait = {
                let mut next = self.next_slot.lock().await;
                let now = Instant::now();
                if now >= *next {
                    *next = now + interval;
                    return;
                }
                *next - now
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// A factor in [0.5, 1.0) from a shared xorshift state (jitter needs no cryptographic quality).
    fn jitter_factor(&self) -> f64 {
        let mut x = self.jitter.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.jitter.store(x, Ordering::Relaxed);
        0.5 + (x >> 11) as f64 / (1u64 << 53) as f64 * 0.5
    }

    fn backoff(&self, retry: u32) -> Duration {
        let base = self.cfg.backoff_base.as_secs_f64() * 2f64.powi(retry.min(30) as i32);
        Duration::from_secs_f64(base.min(self.cfg.backoff_max.as_secs_f64()) * self.jitter_factor())
    }

    /// GETs `url`, retrying what is worth retrying. `Ok` holds any final answer (2xx, 204, 404, …);
    /// `Err` a failure after every retry.
    pub async fn get(&self, url: &str) -> std::result::Result<Response, Failure> {
        let mut empty_seen = 0u32;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let outcome = self.attempt(url, attempts).await;
            let (status, reason, wait) = match outcome {
                Attempt::Done(mut r) => {
                    if r.status == 200 && r.body.is_empty() && empty_seen < self.cfg.empty_retries {
                        empty_seen += 1;
                        (Some(200), "empty 200 body".to_owned(), None)
                    } else {
                        r.attempts = attempts;
                        return Ok(r);
                    }
                }
                Attempt::Retry { status, reason, wait } => (status, reason, wait),
                Attempt::Fail {
                    status,
                    reason,
                    challenge,
                } => {
                    return Err(Failure {
                        status,
                        reason,
                        attempts,
                        challenge,
                    });
                }
            };
            if attempts > self.cfg.max_retries {
                return Err(Failure {
                    status,
                    reason,
                    attempts,
                    challenge: false,
                });
            }
            let wait = wait
                .map(|w| w.min(self.cfg.backoff_max))
                .unwrap_or_else(|| self.backoff(attempts - 1));
            tracing::debug!(url, attempt = attempts, ?wait, %reason, "retrying");
            self.sleeper.sleep(wait).await;
        }
    }

    async fn attempt(&self, url: &str, n: u32) -> Attempt {
        self.pace().await;
        // The semaphore is never closed, so acquiring can not fail.
        let Ok(_permit) = self.slots.acquire().await else {
            return Attempt::Retry {
                status: None,
                reason: "client shut down".into(),
                wait: None,
            };
        };
        tracing::trace!(url, attempt = n, "GET");
        let resp = match self.inner.get(url).send().await {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Retry {
                    status: None,
                    reason: describe(&e),
                    wait: None,
                };
            }
        };
        let status = resp.status().as_u16();
        let header = |name: reqwest::header::HeaderName| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let content_encoding = header(reqwest::header::CONTENT_ENCODING);
        let etag = header(reqwest::header::ETAG);
        let last_modified = header(reqwest::header::LAST_MODIFIED);
        let retry_after = header(reqwest::header::RETRY_AFTER).and_then(|v| parse_retry_after(&v));
        let mitigated = resp
            .headers()
            .get("cf-mitigated")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("challenge"));
        let mut resp = resp;
        if status == 403 || status == 503 {
            // A challenge page is small; read at most 64 KiB of it to look.
            let mut head = Vec::new();
            if !mitigated {
                while head.len() < 64 << 10 {
                    match resp.chunk().await {
                        Ok(Some(c)) => head.extend_from_slice(&c),
                        _ => break,
                    }
                }
            }
            if mitigated || is_challenge_page(&head) {
                return Attempt::Fail {
                    status: Some(status),
                    reason: format!(
                        "HTTP {status}: a bot check (Cloudflare challenge{}), not retried",
                        if mitigated {
                            ", cf-mitigated: challenge"
                        } else {
                            " page"
                        }
                    ),
                    challenge: true,
                };
            }
        }
        if status == 403 || status == 429 || (500..600).contains(&status) {
            return Attempt::Retry {
                status: Some(status),
                reason: format!("HTTP {status}"),
                wait: retry_after,
            };
        }
        let max = self.cfg.max_body_bytes;
        let too_large = |what: String| Attempt::Fail {
            status: Some(status),
            reason: format!("the body is {what}, larger than the {max} bytes accepted (max_body_bytes)"),
            challenge: false,
        };
        if let Some(len) = resp.content_length()
            && len > max
        {
            return too_large(format!("{len} bytes (Content-Length)"));
        }
        // A server's Content-Length is a hint, not a promise: preallocate at most 8 MiB of it.
        let mut body = Vec::with_capacity(resp.content_length().unwrap_or(0).min(8 << 20) as usize);
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if (body.len() + chunk.len()) as u64 > max {
                        return too_large(format!("over {max} bytes"));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Attempt::Retry {
                        status: Some(status),
                        reason: format!("body cut short: {}", describe(&e)),
                        wait: None,
                    };
                }
            }
        }
        Attempt::Done(Response {
            status,
            content_type,
            content_encoding,
            etag,
            last_modified,
            body,
            attempts: n,
        })
    }
}

/// Does `body` look like Cloudflare's challenge page ("Just a moment…", the challenge platform's
/// script, the older "Checking your browser" and "Attention Required!" pages)?
pub fn is_challenge_page(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&body[..body.len().min(64 << 10)]).to_ascii_lowercase();
    [
        "<title>just a moment",
        "/cdn-cgi/challenge-platform/",
        "cf_chl_opt",
        "cf-browser-verification",
        "checking your browser before accessing",
        "attention required! | cloudflare",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// `Retry-After` in seconds. (The HTTP-date form is not parsed; the normal backoff applies then.)
fn parse_retry_after(v: &str) -> Option<Duration> {
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "body error"
    } else {
        "request error"
    };
    // The source chain says what actually happened (reset, incomplete message, …).
    let mut msg = format!("{kind}: {e}");
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    //! Properties: settings are validated; backoff grows and stays within its bounds.
    use super::*;

    #[test]
    fn settings_are_validated() {
        let bad = [
            HttpConfig {
                rate_per_sec: 0.0,
                ..HttpConfig::default()
            },
            HttpConfig {
                concurrency: 0,
                ..HttpConfig::default()
            },
            HttpConfig {
                user_agent: " ".into(),
                ..HttpConfig::default()
            },
        ];
        for cfg in bad {
            assert!(cfg.validate().is_err(), "{cfg:?}");
        }
        assert!(HttpConfig::default().validate().is_ok());
    }

    /// Issue 29 (14): values that used to pass `validate` and then panicked (a rate so low that the
    /// interval between requests overflows a `Duration`, a concurrency over the semaphore's limit)
    /// or stalled a crawl for hours are refused, naming the option and the range; the bounds
    /// themselves are accepted.
    #[test]
    fn out_of_range_settings_are_refused_naming_the_option() {
        let d = HttpConfig::default;
        let secs = Duration::from_secs;
        let cases: Vec<(HttpConfig, &str)> = vec![
            (
                HttpConfig {
                    rate_per_sec: 1e-20,
                    ..d()
                },
                "--rate 1e-20: requests per second must be a number within 0.001..=10000",
            ),
            (
                HttpConfig {
                    rate_per_sec: 1e300,
                    ..d()
                },
                "--rate 1e300:",
            ),
            (
                HttpConfig {
                    rate_per_sec: 0.0,
                    ..d()
                },
                "--rate 0.0:",
            ),
            (
                HttpConfig {
                    rate_per_sec: -1.0,
                    ..d()
                },
                "--rate -1.0:",
            ),
            (
                HttpConfig {
                    rate_per_sec: f64::NAN,
                    ..d()
                },
                "--rate NaN:",
            ),
            (
                HttpConfig {
                    rate_per_sec: f64::INFINITY,
                    ..d()
                },
                "--rate inf:",
            ),
            (
                HttpConfig {
                    concurrency: 0,
                    ..d()
                },
                "--concurrency 0: requests in flight must be within 1..=64",
            ),
            (
                HttpConfig {
                    concurrency: 65,
                    ..d()
                },
                "--concurrency 65:",
            ),
            (
                HttpConfig {
                    concurrency: usize::MAX,
                    ..d()
                },
                "--concurrency 18446744073709551615:",
            ),
            (
                HttpConfig {
                    timeout: Duration::ZERO,
                    ..d()
                },
                "--timeout 0 s: the timeout of one attempt must be within 0.001..=3600 s",
            ),
            (
                HttpConfig {
                    timeout: secs(u64::MAX),
                    ..d()
                },
                "--timeout 18446744073709552000 s",
            ),
            (
                HttpConfig {
                    max_retries: 21,
                    ..d()
                },
                "--retries 21: retries must be within 0..=20",
            ),
            (
                HttpConfig {
                    max_retries: u32::MAX,
                    ..d()
                },
                "--retries 4294967295:",
            ),
            (
                HttpConfig {
                    empty_retries: u32::MAX,
                    ..d()
                },
                "empty_retries 4294967295:",
            ),
            (
                HttpConfig {
                    backoff_max: secs(u64::MAX),
                    ..d()
                },
                "backoff_max",
            ),
            (
                HttpConfig {
                    backoff_base: secs(10),
                    backoff_max: secs(5),
                    ..d()
                },
                "backoff_base 10 s",
            ),
            (
                HttpConfig {
                    user_agent: " ".into(),
                    ..d()
                },
                "User-Agent",
            ),
            (
                HttpConfig {
                    user_agent: "a\r\nX-Evil: 1".into(),
                    ..d()
                },
                "User-Agent",
            ),
            (
                HttpConfig {
                    max_body_bytes: 0,
                    ..d()
                },
                "max_body_bytes 0:",
            ),
            (
                HttpConfig {
                    max_body_bytes: u64::MAX,
                    ..d()
                },
                "max_body_bytes 18446744073709551615:",
            ),
        ];
        for (cfg, needle) in cases {
            let e = cfg.validate().expect_err(needle).to_string();
            assert!(e.starts_with("invalid setting: ") && e.contains(needle), "{e}");
            // The client refuses them too, instead of panicking.
            assert!(PoliteClient::new(cfg).is_err(), "{needle}");
        }
        let bounds = [
            HttpConfig {
                rate_per_sec: MIN_RATE,
                concurrency: 1,
                timeout: Duration::from_millis(1),
                max_retries: 0,
                ..d()
            },
            HttpConfig {
                rate_per_sec: MAX_RATE,
                concurrency: MAX_CONCURRENCY,
                timeout: MAX_TIMEOUT,
                max_retries: MAX_RETRIES,
                ..d()
            },
        ];
        for cfg in bounds {
            assert!(cfg.validate().is_ok(), "{cfg:?}");
            assert!(PoliteClient::new(cfg).is_ok());
        }
        // The slowest rate's interval is representable.
        assert_eq!(Duration::from_secs_f64(1.0 / MIN_RATE), secs(1000));
    }

    #[test]
    fn base_urls_are_checked() {
        for ok in [
            "https://hudoc.echr.coe.int",
            "http://127.0.0.1:8080/",
            "http://mirror.example/bsard",
        ] {
            assert!(check_base_url("--base-url", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "not-a-url",
            "hudoc.echr.coe.int",
            "ftp://hudoc.example",
            "file:///tmp/x",
            "http://",
            " http://x.example",
        ] {
            let e = check_base_url("--base-url", bad).expect_err(bad).to_string();
            assert!(
                e.starts_with(&format!("invalid setting: --base-url {bad:?} is not")),
                "{e}"
            );
        }
        let e = check_base_url("--base-url", "http://x.example/?q=1").unwrap_err();
        assert!(
            e.to_string().contains("\"http://x.example/?q=***\" is not"),
            "{e}"
        );
    }

    /// Issue 29 (20d): a base URL with credentials was accepted, and every request URL built on it
    /// (credentials included) was written to the manifest and indexes. It is refused now, and no
    /// error message repeats the secret, whatever else is wrong with the URL.
    #[test]
    fn credentials_in_base_urls_are_refused_and_never_echoed() {
        for (url, shown) in [
            (
                "https://user:secret@mirror.example/bsard",
                "https://***@mirror.example/bsard",
            ),
            ("https://user@mirror.example/", "https://***@mirror.example/"),
            ("https://:secret@mirror.example", "https://***@mirror.example"),
            (
                "http://user:secret@127.0.0.1:8080/x",
                "http://***@127.0.0.1:8080/x",
            ),
            ("http://user:sec ret@host.example/", "http://***@host.example/"),
            ("ftp://user:secret@host.example/", "ftp://***@host.example/"),
            (
                "https://user:secret@host.example/?token=secret#f",
                "https://***@host.example/?token=***#f",
            ),
            (
                "http://x.example/?token=secret&x",
                "http://x.example/?token=***&x",
            ),
        ] {
            for option in ["--base-url", "--ejustice-base", "--ks-base", "--www-base"] {
                let e = check_base_url(option, url).expect_err(url).to_string();
                assert!(
                    e.starts_with(&format!("invalid setting: {option} {shown:?}")),
                    "{e}"
                );
                assert!(!e.contains("secret") && !e.contains("user"), "{e}");
            }
        }
        let e = check_base_url("--base-url", "https://user:secret@mirror.example/").unwrap_err();
        assert!(e.to_string().contains("credentials"), "{e}");
        assert_eq!(redact_url("mailto:x@example.org"), "mailto:x@example.org");
        assert_eq!(redact_url("not-a-url"), "not-a-url");
    }

    #[test]
    fn backoff_is_bounded_and_jittered() {
        let c = PoliteClient::new(HttpConfig::default()).unwrap();
        for retry in 0..40 {
            let b = c.backoff(retry).as_secs_f64();
            let full = (2f64.powi(retry.min(30) as i32)).min(120.0);
            assert!(b >= full * 0.5 - 1e-9 && b < full + 1e-9, "retry {retry}: {b}");
        }
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
