//! The Hugging Face Hub: resolving a model repository's revision to a commit, choosing the files
//! a lexbench encoder folder needs, and downloading them resumably and verified.
//!
//! The Hub's HTTP interface, as `huggingface_hub` (`hf_api.py` `model_info`, `file_download.py`
//! `hf_hub_url`) uses it:
//! - `GET {endpoint}/api/models/{org}/{name}/revision/{revision}?blobs=true` (the revision
//!   percent-encoded whole, `/` included: `refs%2Fpr%2F1`) answers JSON with the commit `sha` and
//!   `siblings: [{rfilename, size, blobId, lfs?: {sha256, size}}]` ([`RepoInfo`]);
//! - `GET {endpoint}/{org}/{name}/resolve/{commit}/{path}` answers the file, for LFS files through a
//!   redirect to a storage host (followed; `Authorization` is not carried to another host).
//!
//! What is checked ([`HubClient::download`]): a file stored with Git LFS must have the sha256 the
//! Hub lists (`lfs.sha256`); any other file the git blob id (`sha1("blob {len}\0" + bytes)`, computed
//! by the small [`Sha1`] here); both must have the listed size. A file that fails is deleted and
//! refused ([`Error::Mismatch`] names the file and both hashes).
//!
//! Resuming: a file is written to `{dest}.part`; a later attempt (a retry after the connection
//! dropped, or another process after a kill) asks for the rest with `Range: bytes={len}-` and
//! appends, or starts over when the server answers the whole file. Only a complete, verified file
//! is renamed to `dest`.
//!
//! Which files ([`select`]): `config.json`, the tokenizer files, `model.safetensors`, and the
//! sentence-transformers files (`modules.json`, `config_sentence_transformers.json`,
//! `sentence_bert_config.json`, and the JSON, text and safetensors files of module folders such as
//! `1_Pooling/` and `2_Dense/`). Other weight formats (PyTorch pickles, TensorFlow, Flax, ONNX,
//! OpenVINO) are skipped; a repository with no `model.safetensors` is refused, saying so.
//!
//! ```
//! use lexbench_crawlers::hub::{HubRef, git_blob_id};
//! let r: HubRef = "hf:sentence-transformers/all-MiniLM-L6-v2@refs/pr/1".parse().unwrap();
//! assert_eq!((r.repo.as_str(), r.revision()), ("sentence-transformers/all-MiniLM-L6-v2", "refs/pr/1"));
//! assert_eq!(r.folder_name(), "sentence-transformers--all-MiniLM-L6-v2");
//! // git's id of the empty file
//! assert_eq!(git_blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
//! ```

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use indicatif::ProgressBar;
use serde::Deserialize;

use crate::error::{Error, Result};

/// The public Hub, used when neither `--endpoint` nor `HF_ENDPOINT` names another (a mirror, or a
/// loopback server in the tests). The one place the Hub's address is written in the code.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// The revision fetched when none is named.
pub const DEFAULT_REVISION: &str = "main";

/// A model repository and revision as the command line names it: `hf:ORG/NAME[@REVISION]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubRef {
    /// `ORG/NAME`.
    pub repo: String,
    /// The revision asked for (a branch, a tag, a commit sha, `refs/pr/N`); `None` is
    /// [`DEFAULT_REVISION`].
    pub explicit_revision: Option<String>,
}

impl HubRef {
    /// The revision to resolve.
    pub fn revision(&self) -> &str {
        self.explicit_revision.as_deref().unwrap_or(DEFAULT_REVISION)
    }

    /// The folder name the model is installed under: `ORG--NAME` (a repository id never holds
    /// `--`, so the name is unambiguous).
    pub fn folder_name(&self) -> String {
        self.repo.replacen('/', "--", 1)
    }

    /// Is the revision asked for a full commit sha (nothing to resolve)?
    pub fn is_pinned(&self) -> bool {
        self.explicit_revision.as_deref().is_some_and(is_commit)
    }
}

impl fmt::Display for HubRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hf:{}", self.repo)?;
        if let Some(r) = &self.explicit_revision {
            write!(f, "@{r}")?;
        }
        Ok(())
    }
}

/// Is `s` a full git commit sha (40 lower-case hex digits)?
pub fn is_commit(s: &str) -> bool {
    is_hex(s, 40)
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One part of a repository id: the Hub's rule (`huggingface_hub` `validate_repo_id`): letters,
/// digits, `-`, `_`, `.`; not starting or ending with `-` or `.`; no `--` or `..`.
fn valid_repo_part(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 96
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !p.starts_with(['-', '.'])
        && !p.ends_with(['-', '.'])
        && !p.contains("--")
        && !p.contains("..")
}

impl FromStr for HubRef {
    type Err = Error;

    /// Parses `hf:ORG/NAME[@REVISION]`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::Config(format!("{s:?} is not hf:ORG/NAME[@REVISION]: {why}"));
        let rest = s
            .strip_prefix("hf:")
            .ok_or_else(|| bad("it does not start with hf:"))?;
        let (repo, revision) = match rest.split_once('@') {
            Some((repo, rev)) => (repo, Some(rev)),
            None => (rest, None),
        };
        let Some((org, name)) = repo.split_once('/') else {
            return Err(bad("the repository is ORG/NAME"));
        };
        if !valid_repo_part(org) || !valid_repo_part(name) {
            return Err(bad(
                "ORG and NAME are letters, digits, '-', '_' and '.', not starting or ending with '-' or '.', without '--' or '..'",
            ));
        }
        if let Some(rev) = revision
            && (rev.is_empty()
                || rev.len() > 255
                || rev.chars().any(|c| c.is_control() || c.is_whitespace())
                || rev.split('/').any(|p| p.is_empty() || p == "." || p == ".."))
        {
            return Err(bad("the revision is a branch, tag, commit sha or refs/pr/N"));
        }
        Ok(Self {
            repo: repo.to_owned(),
            explicit_revision: revision.map(str::to_owned),
        })
    }
}

/// What the Hub's model-info endpoint says of a revision (the fields lexbench reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepoInfo {
    /// The commit the revision resolves to.
    pub sha: String,
    /// The repository's files at that commit.
    #[serde(default)]
    pub siblings: Vec<Sibling>,
}

/// One file of a repository, as listed with `?blobs=true`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Sibling {
    /// The path in the repository.
    pub rfilename: String,
    /// Its size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// Its git blob id (for an LFS file, the pointer's).
    #[serde(default, rename = "blobId")]
    pub blob_id: Option<String>,
    /// For a file stored with Git LFS, the content's sha256 and size.
    #[serde(default)]
    pub lfs: Option<LfsInfo>,
}

/// The LFS part of a [`Sibling`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LfsInfo {
    /// sha256 of the content.
    pub sha256: String,
    /// Size of the content.
    pub size: u64,
}

/// How a downloaded file is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// An LFS file: sha256 of the content.
    Sha256(String),
    /// A file in git itself: its git blob id.
    GitBlob(String),
}

/// A file to download, with what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedFile {
    /// The path in the repository (and in the model folder).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its expected hash.
    pub check: Check,
}

/// The files chosen from a repository ([`select`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// What to download, sorted by path.
    pub files: Vec<WantedFile>,
    /// What is left out (other weight formats, model cards, …), sorted.
    pub skipped: Vec<String>,
    /// What a user should know (no `tokenizer.json`, a module folder with pickled weights only).
    pub warnings: Vec<String>,
}

/// Files taken from the repository's top level.
const TOP_FILES: [&str; 17] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "sentencepiece.bpe.model",
    "spiece.model",
    "tokenizer.model",
    "modules.json",
    "config_sentence_transformers.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "generation_config.json",
];

/// Weight files lexbench can not read, named in the refusal of a repository without
/// `model.safetensors`.
const OTHER_WEIGHTS: [&str; 4] = [
    "pytorch_model.bin",
    "tf_model.h5",
    "flax_model.msgpack",
    "model.onnx",
];

/// A sentence-transformers module folder: `{digits}_{name}` (`1_Pooling`, `2_Dense`).
fn is_module_dir(d: &str) -> bool {
    let Some((n, name)) = d.split_once('_') else {
        return false;
    };
    !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A repository path that is safe to write under a folder: `/`-separated plain parts.
fn safe_path(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 1024
        && !p.contains('\\')
        && !p.chars().any(char::is_control)
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Chooses the files of `info` to download (module docs, "Which files"), with what each must be.
/// `what` names the repository and commit in errors (`hf:org/name@sha`).
///
/// # Errors
/// [`Error::Source`] when the repository has no `config.json` or no `model.safetensors` (saying
/// which weights it has instead: pickled PyTorch weights, sharded safetensors), lists a path that
/// is not a plain relative path, or gives a chosen file without its size and hash.
pub fn select(info: &RepoInfo, what: &str) -> Result<Selection> {
    let refuse = |message: String| Error::Source {
        url: what.to_owned(),
        message,
    };
    let names: std::collections::BTreeSet<&str> =
        info.siblings.iter().map(|s| s.rfilename.as_str()).collect();
    if let Some(bad) = names.iter().find(|p| !safe_path(p)) {
        return Err(refuse(format!(
            "the repository lists the path {bad:?}, which is not a plain relative path"
        )));
    }
    if !names.contains("config.json") {
        return Err(refuse(
            "no config.json: not a transformers model repository".into(),
        ));
    }
    if !names.contains("model.safetensors") {
        let message = if names.contains("model.safetensors.index.json") {
            "its weights are sharded (model.safetensors.index.json); lexbench loads one model.safetensors"
                .to_owned()
        } else {
            let other: Vec<&str> = OTHER_WEIGHTS.into_iter().filter(|w| names.contains(w)).collect();
            let has = if other.is_empty() {
                "no weights lexbench knows".to_owned()
            } else {
                format!("only {}", other.join(", "))
            };
            format!(
                "no model.safetensors ({has}); lexbench needs safetensors weights (candle reads no pickles). \
                 The Hub's conversion bot may have opened one under a revision refs/pr/N: try hf:ORG/NAME@refs/pr/N"
            )
        };
        return Err(refuse(message));
    }
    let mut sel = Selection::default();
    for s in &info.siblings {
        let p = s.rfilename.as_str();
        let taken = TOP_FILES.contains(&p)
            || match p.split_once('/') {
                Some((dir, file)) => {
                    is_module_dir(dir)
                        && !file.contains('/')
                        && [".json", ".txt", ".safetensors", ".model"]
                            .iter()
                            .any(|e| file.ends_with(e))
                }
                None => false,
            };
        if !taken {
            sel.skipped.push(p.to_owned());
            if let Some((dir, "pytorch_model.bin")) = p.split_once('/')
                && is_module_dir(dir)
                && !names.contains(format!("{dir}/model.safetensors").as_str())
            {
                sel.warnings.push(format!(
                    "{dir}/ has only pytorch_model.bin (not downloaded): that module's weights are missing"
                ));
            }
            continue;
        }
        let (size, check) = match (&s.lfs, &s.blob_id, s.size) {
            (Some(lfs), _, _) if is_hex(&lfs.sha256, 64) => (lfs.size, Check::Sha256(lfs.sha256.clone())),
            (Some(lfs), _, _) => {
                return Err(refuse(format!(
                    "{p}: the listed LFS sha256 {:?} is not a sha256",
                    lfs.sha256
                )));
            }
            (None, Some(blob), Some(size)) if is_hex(blob, 40) => (size, Check::GitBlob(blob.clone())),
            _ => {
                return Err(refuse(format!(
                    "{p}: the listing gives no size and hash to check the file against (blobId, lfs.sha256)"
                )));
            }
        };
        sel.files.push(WantedFile {
            path: p.to_owned(),
            size,
            check,
        });
    }
    if !names.contains("tokenizer.json") {
        sel.warnings.push(
            "no tokenizer.json: lexbench's encoders load tokenizer.json, so this folder needs one before use"
                .into(),
        );
    }
    sel.files.sort_by(|a, b| a.path.cmp(&b.path));
    sel.skipped.sort();
    Ok(sel)
}

/// Percent-encodes `s` for a URL path: unreserved characters stay, and `/` when `keep_slash`.
pub fn encode_path(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// SHA-1, streamed (FIPS 180-4). Only for git blob ids, the Hub's names of files kept in git
/// itself; every file's sha256 is checked or recorded as well.
#[derive(Clone)]
pub struct Sha1 {
    h: [u32; 5],
    block: [u8; 64],
    filled: usize,
    len: u64,
}

impl Default for Sha1 {
    fn default() -> Self {
        Self {
            h: [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0],
            block: [0; 64],
            filled: 0,
            len: 0,
        }
    }
}

impl fmt::Debug for Sha1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sha1").field("len", &self.len).finish()
    }
}

impl Sha1 {
    /// A fresh hash.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `data`.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        while !data.is_empty() {
            let n = (64 - self.filled).min(data.len());
            self.block[self.filled..self.filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
            if self.filled == 64 {
                let block = self.block;
                self.compress(&block);
                self.filled = 0;
            }
        }
    }

    /// The digest, lower-case hex.
    pub fn hex(mut self) -> String {
        let bits = self.len.wrapping_mul(8);
        self.update(&[0x80]);
        while self.filled != 56 {
            self.update(&[0]);
        }
        self.update(&bits.to_be_bytes());
        let bytes: Vec<u8> = self.h.iter().flat_map(|w| w.to_be_bytes()).collect();
        lexbench_core::hash::to_hex(&bytes)
    }

    fn compress(&mut self, block: &[u8; 64]) {
        let mut w = [0u32; 80];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = self.h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..20 => ((b & c) | (!b & d), 0x5A82_7999),
                20..40 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..60 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (h, v) in self.h.iter_mut().zip([a, b, c, d, e]) {
            *h = h.wrapping_add(v);
        }
    }
}

/// git's blob id of `bytes`: `sha1("blob {len}\0" + bytes)`.
pub fn git_blob_id(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.hex()
}

/// The sha256 of the file at `path`, and its git blob id when `blob` (one read).
fn hash_file(path: &Path, blob: bool) -> Result<(String, Option<String>)> {
    use lexbench_core::hash::Sha256Stream;
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let mut sha256 = Sha256Stream::new();
    let mut sha1 = blob.then(|| {
        let mut h = Sha1::new();
        h.update(format!("blob {len}\0").as_bytes());
        h
    });
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        sha256.update(&buf[..n]);
        if let Some(h) = &mut sha1 {
            h.update(&buf[..n]);
        }
    }
    Ok((sha256.hex(), sha1.map(Sha1::hex)))
}

/// Settings of the Hub client.
#[derive(Clone)]
pub struct HubConfig {
    /// The Hub's base URL ([`DEFAULT_ENDPOINT`], `HF_ENDPOINT`, `--endpoint`).
    pub endpoint: String,
    /// A token sent as `Authorization: Bearer` (`HF_TOKEN`), for private and gated repositories.
    pub token: Option<String>,
    /// Attempts per request before giving up (default 5): a dropped connection, a timeout, 429 or
    /// 5xx is tried again (a download from where it stopped); a refused connection is not.
    pub attempts: u32,
    /// The wait before the second attempt, doubled for each further one (default 1 s).
    pub backoff: Duration,
    /// Connecting timeout (default 30 s).
    pub connect_timeout: Duration,
    /// The longest silence while reading an answer (default 60 s); a large file may take as long
    /// as it needs in all.
    pub read_timeout: Duration,
    /// The stall timeout (default 60 s): a body that brings fewer than [`STALL_BYTES`] in this
    /// long has stalled (a server dripping a byte a second is never silent long enough for
    /// `read_timeout`). A stalled download is tried again from where it stopped, like a dropped
    /// connection; when the attempts are spent the error says it stalled.
    pub stall_timeout: Duration,
}

/// The progress a download must make in each [`HubConfig::stall_timeout`]: 16 KiB (at the default
/// timeout, a floor of about 270 bytes a second).
pub const STALL_BYTES: u64 = 16 << 10;

/// The largest model-info answer read: 64 MiB (a repository of thousands of files lists a few MB).
pub const MAX_INFO_BYTES: usize = 64 << 20;

impl Default for HubConfig {
    fn default() -> Self {
        Self {
            endpoint: DEFAULT_ENDPOINT.to_owned(),
            token: None,
            attempts: 5,
            backoff: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(60),
            stall_timeout: Duration::from_secs(60),
        }
    }
}

impl fmt::Debug for HubConfig {
    /// The token is never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubConfig")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("attempts", &self.attempts)
            .field("backoff", &self.backoff)
            .field("stall_timeout", &self.stall_timeout)
            .finish_non_exhaustive()
    }
}

/// What [`HubClient::download`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// sha256 of the file.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
    /// The length of a partial file from an earlier attempt or process that the download went on
    /// from with a `Range` request (`None`: downloaded from the start, or already complete).
    pub resumed_from: Option<u64>,
    /// Whether the file was already complete and verified in the download area.
    pub already_there: bool,
}

/// The Hub client.
#[derive(Debug, Clone)]
pub struct HubClient {
    http: reqwest::Client,
    cfg: HubConfig,
}

enum Failure {
    /// Worth another attempt.
    Retry(String),
    /// The server answered, then sent less than [`STALL_BYTES`] in a stall timeout: worth another
    /// attempt, but not "out of reach" when the attempts are spent.
    Stalled(String),
    /// Not.
    Fatal(Error),
}

/// Watches a body's progress: [`Stall::next`] gives up when fewer than [`STALL_BYTES`] arrived
/// within the stall timeout.
struct Stall {
    timeout: Duration,
    window_start: tokio::time::Instant,
    window_bytes: u64,
}

impl Stall {
    fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            window_start: tokio::time::Instant::now(),
            window_bytes: 0,
        }
    }

    /// The next chunk of `resp`, or [`Failure::Stalled`].
    async fn next(
        &mut self,
        resp: &mut reqwest::Response,
    ) -> std::result::Result<Option<impl std::ops::Deref<Target = [u8]> + use<>>, Failure> {
        let deadline = self.window_start + self.timeout;
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Err(_) => Err(Failure::Stalled(format!(
                "the download stalled: fewer than {STALL_BYTES} bytes in {} s",
                self.timeout.as_secs_f64()
            ))),
            Ok(Ok(Some(chunk))) => {
                self.window_bytes += chunk.len() as u64;
                if self.window_bytes >= STALL_BYTES {
                    self.window_start = tokio::time::Instant::now();
                    self.window_bytes = 0;
                }
                Ok(Some(chunk))
            }
            Ok(Ok(None)) => Ok(None),
            Ok(Err(e)) => Err(Failure::Retry(format!("body cut short: {}", describe(&e)))),
        }
    }
}

impl HubClient {
    /// Builds a client.
    ///
    /// # Errors
    /// [`Error::Config`] for an endpoint that is not an http(s) base URL, a token that can not be
    /// a header value, zero attempts; [`Error::Client`] when the HTTP client can not be built.
    pub fn new(mut cfg: HubConfig) -> Result<Self> {
        crate::http::check_base_url("--endpoint", &cfg.endpoint)?;
        while cfg.endpoint.ends_with('/') {
            cfg.endpoint.pop();
        }
        if let Some(t) = &cfg.token
            && (t.trim().is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()))
        {
            return Err(Error::Config(
                "HF_TOKEN: a token is printable ASCII without spaces".into(),
            ));
        }
        if cfg.attempts == 0 || cfg.attempts > crate::http::MAX_RETRIES + 1 {
            return Err(Error::Config(format!(
                "attempts {}: must be within 1..={}",
                cfg.attempts,
                crate::http::MAX_RETRIES + 1
            )));
        }
        crate::http::install_crypto_provider();
        let http = reqwest::Client::builder()
            .user_agent(format!("lexbench/{} (model fetch)", env!("CARGO_PKG_VERSION")))
            .connect_timeout(cfg.connect_timeout)
            .read_timeout(cfg.read_timeout)
            .redirect(reqwest::redirect::Policy::limited(10))
            .build()
            .map_err(|e| Error::Client(e.to_string()))?;
        Ok(Self { http, cfg })
    }

    /// The settings.
    pub fn config(&self) -> &HubConfig {
        &self.cfg
    }

    /// The model-info URL of `r` (with `?blobs=true`, so files carry sizes and hashes).
    pub fn info_url(&self, r: &HubRef) -> String {
        format!(
            "{}/api/models/{}/revision/{}?blobs=true",
            self.cfg.endpoint,
            r.repo,
            encode_path(r.revision(), false)
        )
    }

    /// The download URL of `path` in `repo` at `commit`.
    pub fn file_url(&self, repo: &str, commit: &str, path: &str) -> String {
        format!(
            "{}/{repo}/resolve/{commit}/{}",
            self.cfg.endpoint,
            encode_path(path, true)
        )
    }

    fn get(&self, url: &str) -> reqwest::RequestBuilder {
        let req = self.http.get(url);
        match &self.cfg.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    async fn backoff(&self, attempt: u32) {
        let wait = self.cfg.backoff.saturating_mul(1 << attempt.min(6));
        tokio::time::sleep(wait).await;
    }

    /// Resolves `r`'s revision: the commit and its files.
    ///
    /// # Errors
    /// [`Error::Unreachable`] when the endpoint can not be reached; [`Error::Source`] for an
    /// answer that is not a success (401/403: a private or gated repository; 404: no such
    /// repository or revision) or that can not be read.
    pub async fn repo_info(&self, r: &HubRef) -> Result<RepoInfo> {
        let url = self.info_url(r);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.info_attempt(r, &url).await {
                Ok(info) => return Ok(info),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Stalled(reason)) if attempt >= self.cfg.attempts => {
                    return Err(Error::Source {
                        url,
                        message: format!("{reason} (after {attempt} attempts)"),
                    });
                }
                Err(Failure::Retry(reason)) if attempt >= self.cfg.attempts => {
                    return Err(Error::Unreachable {
                        url,
                        reason: format!("{reason} (after {attempt} attempts)"),
                    });
                }
                Err(Failure::Retry(reason) | Failure::Stalled(reason)) => {
                    tracing::debug!(url, attempt, %reason, "retrying");
                    self.backoff(attempt - 1).await;
                }
            }
        }
    }

    async fn info_attempt(&self, r: &HubRef, url: &str) -> std::result::Result<RepoInfo, Failure> {
        let resp = self
            .get(url)
            .send()
            .await
            .map_err(|e| self.send_failure(url, &e))?;
        let status = resp.status().as_u16();
        if status == 429 || status >= 500 {
            return Err(Failure::Retry(format!("HTTP {status}")));
        }
        if status != 200 {
            return Err(Failure::Fatal(status_error(
                url,
                status,
                &format!("{} at revision {}", r.repo, r.revision()),
            )));
        }
        let mut resp = resp;
        let mut stall = Stall::new(self.cfg.stall_timeout);
        let mut body = Vec::new();
        while let Some(chunk) = stall.next(&mut resp).await? {
            if body.len() + chunk.len() > MAX_INFO_BYTES {
                return Err(Failure::Fatal(Error::Source {
                    url: url.to_owned(),
                    message: format!(
                        "the model-info answer is larger than {}, the most lexbench reads",
                        lexbench_core::text::human_bytes(MAX_INFO_BYTES)
                    ),
                }));
            }
            body.extend_from_slice(&chunk);
        }
        let info: RepoInfo = serde_json::from_slice(&body).map_err(|e| {
            Failure::Fatal(Error::Source {
                url: url.to_owned(),
                message: format!("not a model-info answer: {e}"),
            })
        })?;
        if !is_commit(&info.sha) {
            return Err(Failure::Fatal(Error::Source {
                url: url.to_owned(),
                message: format!("the answer's sha {:?} is not a commit sha", info.sha),
            }));
        }
        if r.is_pinned() && Some(info.sha.as_str()) != r.explicit_revision.as_deref() {
            return Err(Failure::Fatal(Error::Source {
                url: url.to_owned(),
                message: format!("asked for commit {} and was answered {}", r.revision(), info.sha),
            }));
        }
        Ok(info)
    }

    fn send_failure(&self, url: &str, e: &reqwest::Error) -> Failure {
        if e.is_connect() && !e.is_timeout() {
            // Refused, unknown host, no route: nothing another attempt a second later would change.
            Failure::Fatal(Error::Unreachable {
                url: url.to_owned(),
                reason: describe(e),
            })
        } else {
            Failure::Retry(describe(e))
        }
    }

    /// Downloads `file` of `repo` at `commit` to `dest` through `{dest}.part` (module docs:
    /// resuming, checks). A `dest` already there is verified again instead of downloaded.
    /// `progress` gets the file's length and position.
    ///
    /// # Errors
    /// [`Error::Mismatch`] when the complete file does not have the listed hash (the partial file
    /// is deleted); [`Error::Source`] for a final answer that is not the file, or a file longer
    /// than listed; [`Error::Unreachable`] when every attempt failed to reach the Hub or to get
    /// the whole body; [`Error::Io`] naming the file that could not be written.
    pub async fn download(
        &self,
        repo: &str,
        commit: &str,
        file: &WantedFile,
        dest: &Path,
        progress: &ProgressBar,
    ) -> Result<Downloaded> {
        progress.set_length(file.size);
        if dest.is_file() {
            let (sha256, bytes) = self.verify(dest, file)?;
            progress.set_position(bytes);
            return Ok(Downloaded {
                sha256,
                bytes,
                resumed_from: None,
                already_there: true,
            });
        }
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        let part = part_path(dest);
        let url = self.file_url(repo, commit, &file.path);
        let mut resumed_from = None;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self
                .download_attempt(&url, file, &part, progress, &mut resumed_from)
                .await
            {
                Ok(()) => break,
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Stalled(reason)) if attempt >= self.cfg.attempts => {
                    return Err(Error::Source {
                        url,
                        message: format!(
                            "{}: {reason} (after {attempt} attempts; {} of {} bytes kept in {}, a rerun goes on from there)",
                            file.path,
                            file_len(&part),
                            file.size,
                            part.display()
                        ),
                    });
                }
                Err(Failure::Retry(reason)) if attempt >= self.cfg.attempts => {
                    return Err(Error::Unreachable {
                        url,
                        reason: format!(
                            "{reason} (after {attempt} attempts; {} of {} bytes kept in {}, a rerun goes on from there)",
                            file_len(&part),
                            file.size,
                            part.display()
                        ),
                    });
                }
                Err(Failure::Retry(reason) | Failure::Stalled(reason)) => {
                    tracing::info!(url, attempt, %reason, "retrying from byte {}", file_len(&part));
                    self.backoff(attempt - 1).await;
                }
            }
        }
        let (sha256, bytes) = match self.verify(&part, file) {
            Ok(v) => v,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return Err(e);
            }
        };
        std::fs::rename(&part, dest).map_err(io_err(dest))?;
        Ok(Downloaded {
            sha256,
            bytes,
            resumed_from,
            already_there: false,
        })
    }

    /// Checks the complete file at `path` against `file`: size, then the listed hash. Returns its
    /// sha256 and size.
    fn verify(&self, path: &Path, file: &WantedFile) -> Result<(String, u64)> {
        let len = file_len(path);
        if len != file.size {
            return Err(Error::Mismatch {
                file: file.path.clone(),
                what: "size".into(),
                expected: file.size.to_string(),
                got: len.to_string(),
            });
        }
        let (sha256, blob) = hash_file(path, matches!(file.check, Check::GitBlob(_)))?;
        match &file.check {
            Check::Sha256(want) if *want != sha256 => Err(Error::Mismatch {
                file: file.path.clone(),
                what: "sha256".into(),
                expected: want.clone(),
                got: sha256,
            }),
            Check::GitBlob(want) if blob.as_deref() != Some(want.as_str()) => Err(Error::Mismatch {
                file: file.path.clone(),
                what: "git blob id".into(),
                expected: want.clone(),
                got: blob.unwrap_or_default(),
            }),
            _ => Ok((sha256, len)),
        }
    }

    async fn download_attempt(
        &self,
        url: &str,
        file: &WantedFile,
        part: &Path,
        progress: &ProgressBar,
        resumed_from: &mut Option<u64>,
    ) -> std::result::Result<(), Failure> {
        let fatal = |e: Error| Failure::Fatal(e);
        let mut have = file_len(part);
        if have > file.size {
            // Not a prefix of this file: start over.
            std::fs::remove_file(part).map_err(|e| fatal(io_err(part)(e)))?;
            have = 0;
        }
        if have == file.size && have > 0 {
            return Ok(());
        }
        let mut req = self.get(url);
        if have > 0 {
            req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
        }
        let resp = req.send().await.map_err(|e| self.send_failure(url, &e))?;
        let status = resp.status().as_u16();
        let append = match status {
            206 if have > 0 => {
                let start = resp
                    .headers()
                    .get(reqwest::header::CONTENT_RANGE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(content_range_start);
                if start != Some(have) {
                    // A range we did not ask for: drop what we have and ask for everything.
                    std::fs::remove_file(part).map_err(|e| fatal(io_err(part)(e)))?;
                    return Err(Failure::Retry(format!(
                        "HTTP 206 for bytes {start:?}, asked from byte {have}"
                    )));
                }
                *resumed_from = Some(have);
                true
            }
            200 => false,
            416 => {
                std::fs::remove_file(part).map_err(|e| fatal(io_err(part)(e)))?;
                return Err(Failure::Retry(format!(
                    "HTTP 416 for bytes {have}-; starting over"
                )));
            }
            429 | 500..=599 => return Err(Failure::Retry(format!("HTTP {status}"))),
            _ => return Err(fatal(status_error(url, status, &file.path))),
        };
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(part)
            .map_err(|e| fatal(io_err(part)(e)))?;
        let mut written = if append { have } else { 0 };
        progress.set_position(written);
        let mut resp = resp;
        let mut stall = Stall::new(self.cfg.stall_timeout);
        loop {
            match stall.next(&mut resp).await {
                Ok(Some(chunk)) => {
                    written += chunk.len() as u64;
                    if written > file.size {
                        drop(out);
                        let _ = std::fs::remove_file(part);
                        return Err(fatal(Error::Source {
                            url: url.to_owned(),
                            message: format!("{}: longer than the {} bytes listed", file.path, file.size),
                        }));
                    }
                    out.write_all(&chunk).map_err(|e| fatal(io_err(part)(e)))?;
                    progress.set_position(written);
                }
                Ok(None) => break,
                Err(e) => {
                    // What arrived stays in the partial file; the next attempt asks for the rest.
                    let _ = out.flush();
                    return Err(e);
                }
            }
        }
        out.sync_all().map_err(|e| fatal(io_err(part)(e)))?;
        if written < file.size {
            return Err(Failure::Retry(format!(
                "body ended at byte {written} of {}",
                file.size
            )));
        }
        Ok(())
    }
}

/// The partial file of `dest`: `{dest}.part`.
pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    dest.with_file_name(name)
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// The first byte of `Content-Range: bytes START-END/LEN`.
fn content_range_start(v: &str) -> Option<u64> {
    v.trim()
        .strip_prefix("bytes ")?
        .split('-')
        .next()?
        .trim()
        .parse()
        .ok()
}

fn status_error(url: &str, status: u16, what: &str) -> Error {
    let message = match status {
        401 | 403 => format!(
            "HTTP {status} for {what}: the repository is private or gated, or does not exist; \
             set HF_TOKEN to a token with access"
        ),
        404 => format!("HTTP 404: no {what} at this endpoint"),
        _ => format!("HTTP {status} for {what}"),
    };
    Error::Source {
        url: url.to_owned(),
        message,
    }
}

fn describe(e: &reqwest::Error) -> String {
    let mut msg = if e.is_timeout() {
        "timeout".to_owned()
    } else if e.is_connect() {
        "connection failed".to_owned()
    } else {
        e.to_string()
    };
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    //! Properties: SHA-1 and git blob ids match the published vectors and git; `hf:` references
    //! parse and refuse what the Hub refuses; the file choice takes the encoder's files, skips
    //! other weight formats, refuses repositories without safetensors weights with the reason, and
    //! carries each file's check; paths are percent-encoded as `huggingface_hub` quotes them.
    use super::*;

    #[test]
    fn sha1_and_git_blob_ids_match_known_values() {
        let sha1 = |b: &[u8]| {
            let mut h = Sha1::new();
            h.update(b);
            h.hex()
        };
        // FIPS 180 examples.
        assert_eq!(sha1(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha1(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            sha1(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        let mut h = Sha1::new();
        for _ in 0..1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(h.hex(), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
        // `printf 'hello world\n' | git hash-object --stdin`
        assert_eq!(
            git_blob_id(b"hello world\n"),
            "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
        );
        // Streaming across odd boundaries agrees.
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let mut h = Sha1::new();
        for c in data.chunks(37) {
            h.update(c);
        }
        assert_eq!(h.hex(), sha1(&data));
    }

    #[test]
    fn references_parse_and_bad_ones_are_refused() {
        let r: HubRef = "hf:org/name".parse().unwrap();
        assert_eq!((r.revision(), r.is_pinned()), ("main", false));
        assert_eq!(r.to_string(), "hf:org/name");
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let r: HubRef = format!("hf:org/name@{sha}").parse().unwrap();
        assert!(r.is_pinned());
        assert_eq!(r.to_string(), format!("hf:org/name@{sha}"));
        for bad in [
            "org/name",
            "hf:name",
            "hf:org/na/me",
            "hf:org/name@",
            "hf:org/../x",
            "hf:org--x/name",
            "hf:-org/name",
            "hf:org/name@a b",
            "hf:org/name@refs//pr",
            "hf:org/name@../../etc",
            "hf:/name",
        ] {
            let e = bad.parse::<HubRef>().expect_err(bad).to_string();
            assert!(e.contains("is not hf:ORG/NAME[@REVISION]"), "{e}");
        }
        assert_eq!(encode_path("refs/pr/1", false), "refs%2Fpr%2F1");
        assert_eq!(
            encode_path("1_Pooling/config.json", true),
            "1_Pooling/config.json"
        );
        assert_eq!(encode_path("a b/é", true), "a%20b/%C3%A9");
    }

    fn sib(path: &str, lfs: bool) -> Sibling {
        Sibling {
            rfilename: path.into(),
            size: Some(10),
            blob_id: Some("a".repeat(40)),
            lfs: lfs.then(|| LfsInfo {
                sha256: "b".repeat(64),
                size: 1000,
            }),
        }
    }

    #[test]
    fn the_file_choice_takes_the_encoder_files_and_refuses_other_weights() {
        let info = RepoInfo {
            sha: "c".repeat(40),
            siblings: vec![
                sib("config.json", false),
                sib("model.safetensors", true),
                sib("pytorch_model.bin", true),
                sib("tf_model.h5", true),
                sib("onnx/model.onnx", true),
                sib("openvino/openvino_model.bin", true),
                sib("tokenizer.json", false),
                sib("vocab.txt", false),
                sib("modules.json", false),
                sib("1_Pooling/config.json", false),
                sib("2_Dense/config.json", false),
                sib("2_Dense/pytorch_model.bin", true),
                sib("README.md", false),
                sib(".gitattributes", false),
            ],
        };
        let sel = select(&info, "hf:o/n").unwrap();
        let paths: Vec<&str> = sel.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "1_Pooling/config.json",
                "2_Dense/config.json",
                "config.json",
                "model.safetensors",
                "modules.json",
                "tokenizer.json",
                "vocab.txt"
            ]
        );
        assert!(sel.skipped.contains(&"pytorch_model.bin".to_owned()));
        assert!(sel.skipped.contains(&"onnx/model.onnx".to_owned()));
        assert_eq!(sel.warnings.len(), 1, "{:?}", sel.warnings);
        assert!(sel.warnings[0].starts_with("2_Dense/ has only pytorch_model.bin"));
        let w = sel.files.iter().find(|f| f.path == "model.safetensors").unwrap();
        assert_eq!((w.size, &w.check), (1000, &Check::Sha256("b".repeat(64))));
        let c = sel.files.iter().find(|f| f.path == "config.json").unwrap();
        assert_eq!((c.size, &c.check), (10, &Check::GitBlob("a".repeat(40))));

        let only_bin = RepoInfo {
            sha: "c".repeat(40),
            siblings: vec![sib("config.json", false), sib("pytorch_model.bin", true)],
        };
        let e = select(&only_bin, "hf:o/n@x").unwrap_err().to_string();
        assert!(
            e.starts_with(
                "hf:o/n@x: no model.safetensors (only pytorch_model.bin); lexbench needs safetensors"
            ),
            "{e}"
        );
        let sharded = RepoInfo {
            sha: "c".repeat(40),
            siblings: vec![
                sib("config.json", false),
                sib("model.safetensors.index.json", false),
            ],
        };
        let e = select(&sharded, "hf:o/n").unwrap_err().to_string();
        assert!(e.contains("sharded"), "{e}");
        let no_tok = RepoInfo {
            sha: "c".repeat(40),
            siblings: vec![sib("config.json", false), sib("model.safetensors", true)],
        };
        assert!(select(&no_tok, "hf:o/n").unwrap().warnings[0].starts_with("no tokenizer.json"));
        let mut unsafe_path = no_tok.clone();
        unsafe_path.siblings.push(sib("../evil.json", false));
        assert!(
            select(&unsafe_path, "hf:o/n")
                .unwrap_err()
                .to_string()
                .contains("not a plain relative path")
        );
        let mut no_hash = no_tok.clone();
        no_hash.siblings[0].blob_id = None;
        assert!(
            select(&no_hash, "hf:o/n")
                .unwrap_err()
                .to_string()
                .contains("config.json: the listing gives no size and hash")
        );
    }

    #[test]
    fn the_token_is_never_printed() {
        let cfg = HubConfig {
            token: Some("hf_secret".into()),
            ..HubConfig::default()
        };
        assert!(!format!("{cfg:?}").contains("hf_secret"));
        assert_eq!(content_range_start("bytes 100-199/200"), Some(100));
        assert_eq!(part_path(Path::new("a/b.json")), Path::new("a/b.json.part"));
    }
}
