//! The fetcher: a URL goes to the raw store first and to the network only if the store does not have a
//! successful answer for it (or a refresh is asked for). Offline, the network is never used.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lexbench_core::ManifestEntry;

use crate::date::now_rfc3339;
use crate::error::{Error, Result};
use crate::http::PoliteClient;
use crate::kind::BodyKind;
use crate::store::RawStore;

/// What fetching a URL gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    /// A 2xx answer with a body, stored under `sha256`.
    Body {
        /// The object's name.
        sha256: String,
        /// The body.
        bytes: Vec<u8>,
        /// HTTP status.
        status: u16,
        /// `Content-Type`.
        content_type: Option<String>,
        /// Served from the store without a request.
        cached: bool,
    },
    /// A 2xx answer without a body: HUDOC's 204 for items without a document (final, stored), or an
    /// empty 200 (status 200: HUDOC's conversion sends them for a while; not a final answer, so it is
    /// recorded as an error and asked again by a rerun).
    NoBody {
        /// HTTP status.
        status: u16,
        /// Served from the store without a request.
        cached: bool,
    },
    /// A final answer that is not a success (404 and other 4xx).
    NotFound {
        /// HTTP status.
        status: u16,
    },
    /// Every attempt failed.
    Failed {
        /// Why.
        reason: String,
    },
    /// Offline, and the store has no answer for this URL.
    Missing,
}

/// Store-first fetching.
#[derive(Debug, Clone)]
pub struct Fetcher {
    store: Arc<RawStore>,
    client: Option<PoliteClient>,
    refresh: bool,
    requests: Arc<AtomicU64>,
}

impl Fetcher {
    /// Fetches through `client`, caching in `store`.
    pub fn online(store: Arc<RawStore>, client: PoliteClient) -> Self {
        Self {
            store,
            client: Some(client),
            refresh: false,
            requests: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Serves only from `store`; nothing is requested.
    pub fn offline(store: Arc<RawStore>) -> Self {
        Self {
            store,
            client: None,
            refresh: false,
            requests: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Refetch URLs the store already has.
    pub fn refreshing(mut self, refresh: bool) -> Self {
        self.refresh = refresh;
        self
    }

    /// The store.
    pub fn store(&self) -> &RawStore {
        &self.store
    }

    /// Requests sent so far (each URL fetched over the network counts once, whatever its retries).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Does this fetcher fetch again what the store has (`--refresh`)?
    pub fn is_refreshing(&self) -> bool {
        self.refresh
    }

    /// Is this fetcher offline?
    pub fn is_offline(&self) -> bool {
        self.client.is_none()
    }

    /// Fetches `url`, which should answer a body of kind `kind`; `request` labels the manifest line
    /// (`hudoc-docx 001-175180`).
    ///
    /// A body that is not of that kind ([`BodyKind::check`]: an HTML page for a CSV, a gzip stream
    /// nobody asked for) is [`Fetched::Failed`] with the reason: it is not stored, and its manifest
    /// line records the error, so a rerun fetches it again. A stored answer that fails the check
    /// (stored before the check existed) is fetched again online and reported offline.
    ///
    /// # Errors
    /// The store's errors, and [`Error::Challenged`] when the site answers with a bot check: the
    /// crawl must stop, not go on to the next URL.
    pub async fn fetch(&self, url: &str, request: &str, kind: BodyKind) -> Result<Fetched> {
        self.fetch_checked(url, request, kind, &|_| Ok(())).await
    }

    /// [`Fetcher::fetch`], with `check` as a further test of the body: an answer that fails it (a
    /// search page that is not a search answer) is refused like a body of the wrong kind: reported as
    /// [`Fetched::Failed`], not stored, refetched by a rerun; a stored one is refetched online and
    /// reported offline.
    pub async fn fetch_checked(
        &self,
        url: &str,
        request: &str,
        kind: BodyKind,
        check: &(dyn Fn(&[u8]) -> std::result::Result<(), String> + Sync),
    ) -> Result<Fetched> {
        if !self.refresh
            && let Some(e) = self.store.lookup(url)
        {
            let cached = match &e.sha256 {
                Some(sha) => {
                    let bytes = self.store.get(sha)?;
                    match kind
                        .check(e.content_type.as_deref(), None, &bytes)
                        .and_then(|()| check(&bytes))
                    {
                        Ok(()) => Ok(Fetched::Body {
                            bytes,
                            sha256: sha.clone(),
                            status: e.status,
                            content_type: e.content_type.clone(),
                            cached: true,
                        }),
                        Err(why) => Err(why),
                    }
                }
                // An empty 200 stored as an answer by an older crawl: asked again.
                None if e.status == 200 => Err("an empty 200 answer is not an answer".to_owned()),
                None => Ok(Fetched::NoBody {
                    status: e.status,
                    cached: true,
                }),
            };
            match cached {
                Ok(f) => return Ok(f),
                Err(_) if self.client.is_none() && e.sha256.is_none() => {
                    return Ok(Fetched::NoBody {
                        status: e.status,
                        cached: true,
                    });
                }
                Err(why) if self.client.is_none() => {
                    return Ok(Fetched::Failed {
                        reason: format!("the stored answer is refused: {why}"),
                    });
                }
                Err(why) => tracing::warn!(url, %why, "refetching a stored answer that is refused"),
            }
        }
        let Some(client) = &self.client else {
            return Ok(Fetched::Missing);
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut entry = ManifestEntry {
            url: url.to_owned(),
            fetched_at: String::new(),
            status: 0,
            content_type: None,
            sha256: None,
            bytes: 0,
            request: Some(request.to_owned()),
            etag: None,
            last_modified: None,
            error: None,
        };
        let fetched = match client.get(url).await {
            Ok(r) => {
                entry.status = r.status;
                entry.content_type = r.content_type.clone();
                entry.etag = r.etag;
                entry.last_modified = r.last_modified;
                entry.bytes = r.body.len() as u64;
                if !(200..300).contains(&r.status) {
                    entry.error = Some(format!("HTTP {}", r.status));
                    Fetched::NotFound { status: r.status }
                } else if r.body.is_empty() {
                    if r.status == 200 {
                        entry.error = Some(format!("empty 200 body (after {} attempts)", r.attempts));
                    }
                    Fetched::NoBody {
                        status: r.status,
                        cached: false,
                    }
                } else if let Err(why) = kind
                    .check(r.content_type.as_deref(), r.content_encoding.as_deref(), &r.body)
                    .and_then(|()| check(&r.body))
                {
                    // Not what was asked for: reported, and not stored under the URL's name.
                    entry.error = Some(why.clone());
                    Fetched::Failed { reason: why }
                } else {
                    // The object is durable before the manifest line that names it is written.
                    let sha = self.store.put(&r.body)?;
                    entry.sha256 = Some(sha.clone());
                    Fetched::Body {
                        sha256: sha,
                        bytes: r.body,
                        status: r.status,
                        content_type: r.content_type,
                        cached: false,
                    }
                }
            }
            Err(f) if f.challenge => {
                entry.status = f.status.unwrap_or(0);
                entry.error = Some(f.reason);
                entry.fetched_at = now_rfc3339();
                self.store.record(&entry)?;
                return Err(Error::Challenged {
                    url: url.to_owned(),
                    status: entry.status,
                });
            }
            Err(f) => {
                entry.status = f.status.unwrap_or(0);
                entry.error = Some(format!("{} (after {} attempts)", f.reason, f.attempts));
                Fetched::Failed {
                    reason: entry.error.clone().unwrap_or_default(),
                }
            }
        };
        entry.fetched_at = now_rfc3339();
        self.store.record(&entry)?;
        Ok(fetched)
    }
}
