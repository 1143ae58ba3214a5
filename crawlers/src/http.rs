//! Polite HTTP: an identifying User-Agent, a global request rate, a concurrency limit, timeouts, and
//! retries with exponential backoff and jitter that honour `Retry-After`.
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

/// Checks a base URL setting: an absolute `http` or `https` URL with a host, and nothing after its
/// path (request URLs are the base followed by a path, so a query or fragment would garble them).
/// `option` names the setting in the message (`--base-url`). Called before anything is fetched, so a
/// typo fails at once instead of being retried as a network error.
///
/// # Errors
/// [`Error::Config`] naming the option, the value and what is wrong with it.
pub fn check_base_url(option: &str, url: &str) -> Result<()> {
    let bad = |why: &str| {
        Error::Config(format!(
            "{option} {url:?} is not an http(s) URL with a host: {why}"
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
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad("a base URL has no query or fragment"));
    }
    Ok(())
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

impl HttpConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        if !(self.rate_per_sec.is_finite() && self.rate_per_sec > 0.0) {
            return Err(Error::Config(format!(
                "rate must be > 0 requests/s, got {}",
                self.rate_per_sec
            )));
        }
        if self.concurrency == 0 {
            return Err(Error::Config("concurrency must be at least 1".into()));
        }
        if self.user_agent.trim().is_empty() {
            return Err(Error::Config("the User-Agent must not be empty".into()));
        }
        if self.max_body_bytes == 0 {
            return Err(Error::Config("the largest body must be at least 1 byte".into()));
        }
        if self.timeout.is_zero() {
            return Err(Error::Config("the timeout must be positive".into()));
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
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

enum Attempt {
    Done(Response),
    /// Not worth another attempt (a body over the cap).
    Fail {
        status: Option<u16>,
        reason: String,
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
                Attempt::Fail { status, reason } => {
                    return Err(Failure {
                        status,
                        reason,
                        attempts,
                    });
                }
            };
            if attempts > self.cfg.max_retries {
                return Err(Failure {
                    status,
                    reason,
                    attempts,
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
        let etag = header(reqwest::header::ETAG);
        let last_modified = header(reqwest::header::LAST_MODIFIED);
        let retry_after = header(reqwest::header::RETRY_AFTER).and_then(|v| parse_retry_after(&v));
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
        };
        if let Some(len) = resp.content_length()
            && len > max
        {
            return too_large(format!("{len} bytes (Content-Length)"));
        }
        let mut resp = resp;
        let mut body = Vec::with_capacity(resp.content_length().unwrap_or(0) as usize);
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
            etag,
            last_modified,
            body,
            attempts: n,
        })
    }
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
            "http://x.example/?q=1",
        ] {
            let e = check_base_url("--base-url", bad).expect_err(bad).to_string();
            assert!(
                e.starts_with(&format!("invalid setting: --base-url {bad:?} is not")),
                "{e}"
            );
        }
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
