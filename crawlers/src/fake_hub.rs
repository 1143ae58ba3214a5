//! A Hub-shaped server on 127.0.0.1 and a random port, for the tests of [`crate::hub`] and of
//! `lexbench models fetch hf:…`.
//!
//! It answers what the real Hub answers to the requests lexbench makes:
//! - `GET /api/models/{org}/{name}/revision/{revision}[?blobs=true]`: `{"id", "sha", "siblings"}`,
//!   each sibling `{rfilename}` and, with `blobs=true`, `size`, `blobId` (git's id of the file or,
//!   for an LFS file, of its pointer) and `lfs: {sha256, size, pointerSize}`. The revision is a
//!   branch or tag of [`FakeRepo::refs`] or a commit sha, percent-encoded; unknown: 404.
//! - `GET /{org}/{name}/resolve/{revision}/{path}`: the file; an LFS file redirects (302, absolute
//!   URL) to `/lfs-store/{sha256}`, as the real Hub sends LFS files to its storage host, when
//!   [`FakeHubConfig::redirect_lfs`].
//! - `Range: bytes=N-` on files: 206 with `Content-Range`, 416 past the end.
//!
//! Faults ([`HubFaults`]): files served with a flipped byte under their listed hashes, a connection
//! closed after N body bytes, a connection that stalls after N bytes (until the client gives up or
//! is killed), a required token (401 without `Authorization: Bearer`). Every request is logged with
//! its `Range` and `Authorization` headers ([`HubLogged`]). One request per connection.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::hub::git_blob_id;

/// One file of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeHubFile {
    /// The path in the repository.
    pub path: String,
    /// The content.
    pub bytes: Vec<u8>,
    /// Stored with Git LFS (listed with `lfs.sha256`, served through the redirect).
    pub lfs: bool,
}

impl FakeHubFile {
    /// A file.
    pub fn new(path: &str, bytes: impl Into<Vec<u8>>, lfs: bool) -> Self {
        Self {
            path: path.to_owned(),
            bytes: bytes.into(),
            lfs,
        }
    }
}

/// One commit of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeCommit {
    /// The commit sha (40 hex digits; [`fake_commit`] makes one).
    pub sha: String,
    /// Its files.
    pub files: Vec<FakeHubFile>,
}

/// A model repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeRepo {
    /// `org/name`.
    pub repo: String,
    /// Its commits.
    pub commits: Vec<FakeCommit>,
    /// Branches and tags → commit sha (`main` among them).
    pub refs: BTreeMap<String, String>,
}

/// A commit sha made from a label (git's blob id of it: 40 hex digits).
pub fn fake_commit(label: &str) -> String {
    git_blob_id(label.as_bytes())
}

/// A fault on the answers for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The file's path in the repository.
    pub path: String,
    /// The file offset after which the body stops.
    pub after: u64,
    /// How many answers for the file get the fault (later ones are whole).
    pub times: u32,
}

/// Fault injection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubFaults {
    /// Paths served with one byte flipped, under their true listed hashes and size.
    pub corrupt: BTreeSet<String>,
    /// Close the connection after [`Cut::after`] bytes.
    pub cut: Option<Cut>,
    /// Send [`Cut::after`] bytes, then hang (for up to two minutes) without closing.
    pub stall: Option<Cut>,
    /// Require `Authorization: Bearer {token}` on API and resolve requests (401 otherwise).
    pub token: Option<String>,
}

/// What the server serves.
#[derive(Debug, Clone, Default)]
pub struct FakeHubConfig {
    /// The repositories.
    pub repos: Vec<FakeRepo>,
    /// Redirect LFS files to `/lfs-store/{sha256}` like the real Hub.
    pub redirect_lfs: bool,
    /// Faults.
    pub faults: HubFaults,
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubLogged {
    /// Path and query.
    pub target: String,
    /// The `Range` header.
    pub range: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The status answered.
    pub status: u16,
}

#[derive(Debug)]
struct Shared {
    cfg: FakeHubConfig,
    addr: SocketAddr,
    log: Mutex<Vec<HubLogged>>,
    faulted: Mutex<BTreeMap<(&'static str, String), u32>>,
}

/// A running fake Hub; stops when dropped.
#[derive(Debug)]
pub struct FakeHub {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeHub {
    /// Starts the server on a random loopback port.
    pub async fn start(cfg: FakeHubConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            cfg,
            addr,
            log: Mutex::new(Vec::new()),
            faulted: Mutex::new(BTreeMap::new()),
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
        Ok(Self { shared, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<HubLogged> {
        self.shared.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// An answer's head and body; `stop` cuts or stalls the body after that many bytes.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    stop: Option<(usize, bool)>,
}

impl Answer {
    fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            stop: None,
        }
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

fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_owned())
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn serve(mut stream: TcpStream, s: Arc<Shared>) -> std::io::Result<()> {
    let Some(head) = read_head(&mut stream).await? else {
        return Ok(());
    };
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let range = header(&head, "range");
    let authorization = header(&head, "authorization");
    let answer = route(&s, &target, range.as_deref(), authorization.as_deref());
    if let Ok(mut log) = s.log.lock() {
        log.push(HubLogged {
            target,
            range,
            authorization,
            status: answer.status,
        });
    }
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        answer.status,
        reason(answer.status),
        answer.body.len()
    );
    for (k, v) in &answer.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    match answer.stop {
        None => stream.write_all(&answer.body).await?,
        Some((n, stall)) => {
            stream.write_all(&answer.body[..n.min(answer.body.len())]).await?;
            stream.flush().await?;
            if stall {
                tokio::time::sleep(Duration::from_secs(120)).await;
            }
            // Dropping the stream closes the connection mid-body.
            return Ok(());
        }
    }
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        _ => "Unknown",
    }
}

fn not_found(what: &str) -> Answer {
    Answer::new(404, "application/json", json!({ "error": what }).to_string())
}

fn find_commit<'a>(repo: &'a FakeRepo, rev: &str) -> Option<&'a FakeCommit> {
    let sha = repo.refs.get(rev).map_or(rev, String::as_str);
    repo.commits.iter().find(|c| c.sha == sha)
}

fn lfs_pointer(f: &FakeHubFile) -> String {
    format!(
        "version lfs-spec-v1\noid sha256:{}\nsize {}\n",
        lexbench_core::sha256_hex(&f.bytes),
        f.bytes.len()
    )
}

fn route(s: &Shared, target: &str, range: Option<&str>, authorization: Option<&str>) -> Answer {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let authorised = match &s.cfg.faults.token {
        Some(t) => authorization == Some(format!("Bearer {t}").as_str()),
        None => true,
    };
    if let Some(rest) = path.strip_prefix("/lfs-store/") {
        // The storage host: signed URLs, no token.
        for repo in &s.cfg.repos {
            for c in &repo.commits {
                for f in &c.files {
                    if f.lfs && lexbench_core::sha256_hex(&f.bytes) == rest {
                        return file_answer(s, f, range);
                    }
                }
            }
        }
        return not_found("no such object");
    }
    if let Some(rest) = path.strip_prefix("/api/models/") {
        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        let [org, name, "revision", rev] = parts.as_slice() else {
            return not_found("unknown API path");
        };
        if !authorised {
            return Answer::new(401, "application/json", r#"{"error":"Invalid credentials"}"#);
        }
        let repo_id = format!("{org}/{name}");
        let Some(repo) = s.cfg.repos.iter().find(|r| r.repo == repo_id) else {
            return not_found("Repository not found");
        };
        let rev = decode(rev);
        let Some(commit) = find_commit(repo, &rev) else {
            return not_found(&format!("Invalid rev id: {rev}"));
        };
        let blobs = query.split('&').any(|p| p == "blobs=true");
        let siblings: Vec<Value> = commit
            .files
            .iter()
            .map(|f| {
                if !blobs {
                    return json!({ "rfilename": f.path });
                }
                let mut v = json!({
                    "rfilename": f.path,
                    "size": f.bytes.len(),
                    "blobId": if f.lfs { git_blob_id(lfs_pointer(f).as_bytes()) } else { git_blob_id(&f.bytes) },
                });
                if f.lfs {
                    v["lfs"] = json!({
                        "sha256": lexbench_core::sha256_hex(&f.bytes),
                        "size": f.bytes.len(),
                        "pointerSize": lfs_pointer(f).len(),
                    });
                }
                v
            })
            .collect();
        let body = json!({
            "_id": "0000",
            "id": repo.repo,
            "modelId": repo.repo,
            "sha": commit.sha,
            "private": false,
            "siblings": siblings,
        });
        return Answer::new(200, "application/json", body.to_string());
    }
    // /{org}/{name}/resolve/{rev}/{path}
    let parts: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
    let [org, name, "resolve", rev, file] = parts.as_slice() else {
        return not_found("unknown path");
    };
    if !authorised {
        return Answer::new(401, "text/plain", "Invalid credentials");
    }
    let repo_id = format!("{org}/{name}");
    let Some(repo) = s.cfg.repos.iter().find(|r| r.repo == repo_id) else {
        return not_found("Repository not found");
    };
    let Some(commit) = find_commit(repo, &decode(rev)) else {
        return not_found("Revision not found");
    };
    let file = decode(file);
    let Some(f) = commit.files.iter().find(|f| f.path == file) else {
        return not_found("Entry not found");
    };
    if f.lfs && s.cfg.redirect_lfs {
        let mut a = Answer::new(302, "text/plain", "Found");
        a.headers.push((
            "Location".into(),
            format!(
                "http://{}/lfs-store/{}",
                s.addr,
                lexbench_core::sha256_hex(&f.bytes)
            ),
        ));
        return a;
    }
    file_answer(s, f, range)
}

/// The file, whole or from `Range: bytes=N-`, with the configured faults.
fn file_answer(s: &Shared, f: &FakeHubFile, range: Option<&str>) -> Answer {
    let mut bytes = f.bytes.clone();
    if s.cfg.faults.corrupt.contains(&f.path) && !bytes.is_empty() {
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xFF;
    }
    let len = bytes.len();
    let start = match range
        .and_then(|r| r.strip_prefix("bytes="))
        .map(|r| r.split('-').next().unwrap_or(""))
    {
        Some(n) => match n.trim().parse::<usize>() {
            Ok(n) if n < len => Some(n),
            _ => {
                let mut a = Answer::new(416, "text/plain", "");
                a.headers.push(("Content-Range".into(), format!("bytes */{len}")));
                return a;
            }
        },
        None => None,
    };
    let from = start.unwrap_or(0);
    let mut a = Answer::new(
        if start.is_some() { 206 } else { 200 },
        "application/octet-stream",
        bytes[from..].to_vec(),
    );
    if start.is_some() {
        a.headers
            .push(("Content-Range".into(), format!("bytes {from}-{}/{len}", len - 1)));
    }
    a.headers.push(("Accept-Ranges".into(), "bytes".into()));
    for (kind, fault, stall) in [
        ("cut", &s.cfg.faults.cut, false),
        ("stall", &s.cfg.faults.stall, true),
    ] {
        let Some(c) = fault else { continue };
        if c.path != f.path || (c.after as usize) <= from {
            continue;
        }
        let Ok(mut done) = s.faulted.lock() else { continue };
        let n = done.entry((kind, c.path.clone())).or_insert(0);
        if *n < c.times {
            *n += 1;
            a.stop = Some((c.after as usize - from, stall));
            break;
        }
    }
    a
}
