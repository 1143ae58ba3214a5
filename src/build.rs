//! `lexbench build ecthr`, `lexbench import release`, `lexbench diff`: datasets from parsed records or
//! from the published release, and what differs between two of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use lexbench_core::dataset::DatasetDir;
use lexbench_core::io::read_jsonl;
use lexbench_core::{GuideFile, ItemId, Judgment};
use lexbench_splits::assemble::{AssemblyReport, assemble};
use lexbench_splits::release::read_release;
use lexbench_splits::settings::{SplitConfig, assign};
use lexbench_splits::write::{BuildInput, Written, write_dataset};

/// Which dataset to build.
#[derive(Debug, Subcommand)]
pub enum BuildCommand {
    /// The ECtHR paragraph-retrieval dataset from DATA/parsed/ecthr (run `lexbench parse store` first).
    Ecthr(BuildEcthrArgs),
    /// The BSARD dataset from its CSV files (a folder, or the crawl in DATA/raw).
    Bsard(BuildBsardArgs),
}

/// Arguments of `lexbench build bsard`.
#[derive(Debug, Args)]
pub struct BuildBsardArgs {
    /// The dataset's name.
    #[arg(long, default_value = "bsard", value_parser = crate::name_arg)]
    pub name: String,
    /// A folder with articles_fr.csv, questions_fr_train.csv, questions_fr_test.csv; default: the
    /// files `lexbench crawl bsard` stored (DATA/raw/index/bsard.jsonl).
    #[arg(long)]
    pub from: Option<PathBuf>,
}

/// The BSARD files: name → (where it was read from, text).
fn bsard_files(data: &Path, from: Option<&Path>) -> Result<BTreeMap<String, (PathBuf, String)>> {
    let mut out = BTreeMap::new();
    match from {
        Some(dir) => {
            for f in lexbench_crawlers::bsard::BSARD_FILES {
                let p = dir.join(f);
                if p.is_file() {
                    out.insert((*f).to_owned(), (p.clone(), lexbench_core::text::read_text(&p)?));
                }
            }
        }
        None => {
            let index = data.join("raw/index/bsard.jsonl");
            // The error names the file; the context says what it is and how to get it.
            let files: Vec<lexbench_crawlers::bsard::SourceFile> = read_jsonl(&index).context(
                "the index of the crawled BSARD files (run `lexbench crawl bsard` or pass --from)",
            )?;
            let store = lexbench_crawlers::store::RawStore::open(data.join("raw"))?;
            for f in files {
                let bytes = store.get(&f.sha256)?;
                // Errors (and the BOM warning) name the file by the URL it was crawled from.
                let text = lexbench_core::text::text_from_bytes(bytes, Path::new(&f.url))?;
                out.insert(f.name.clone(), (PathBuf::from(&f.url), text));
            }
        }
    }
    Ok(out)
}

/// Builds the BSARD dataset.
pub fn build_bsard(
    data: &Path,
    args: &BuildBsardArgs,
) -> Result<(lexbench_splits::bsard::BsardWritten, PathBuf)> {
    use lexbench_splits::bsard::{read_articles, read_questions, write_bsard};
    let files = bsard_files(data, args.from.as_deref())?;
    let (apath, atext) = files
        .get("articles_fr.csv")
        .context("articles_fr.csv is missing")?;
    let articles = read_articles(apath, atext)?;
    let known = articles.iter().map(|a| &a.id).collect();
    let mut splits = BTreeMap::new();
    for (file, split) in [
        ("questions_fr_train.csv", "train"),
        ("questions_fr_test.csv", "test"),
    ] {
        if let Some((p, t)) = files.get(file) {
            splits.insert(split.to_owned(), read_questions(p, t, &known)?);
        }
    }
    if splits.is_empty() {
        anyhow::bail!("no questions file (questions_fr_train.csv, questions_fr_test.csv)");
    }
    let dir = DatasetDir::in_data(data, &args.name)?.0;
    let w = write_bsard(&dir, &args.name, &articles, &splits)?;
    Ok((w, dir))
}

/// Arguments of `lexbench build ecthr`.
#[derive(Debug, Args)]
pub struct BuildEcthrArgs {
    /// The dataset's name (DATA/datasets/NAME).
    #[arg(long, default_value = "ecthr", value_parser = crate::name_arg)]
    pub name: String,
    /// A split configuration (JSON: seed, unseen_guides, shares); default: the paper's proportions.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
    /// Override the configuration's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also draw SVG histograms for the dataset card (DATA/datasets/NAME/plots/).
    #[arg(long)]
    pub plots: bool,
}

/// Arguments of `lexbench split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// The ECtHR dataset whose pairs are split again (a name under DATA/datasets).
    pub dataset: String,
    /// The new dataset's name (default: DATASET-split).
    #[arg(long, value_parser = crate::name_arg)]
    pub name: Option<String>,
    /// A split configuration (JSON); default: the paper's proportions and the release's held-out guides.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
    /// Override the configuration's seed.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Arguments of `lexbench stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The dataset (a name under DATA/datasets, or a path).
    pub dataset: String,
}

/// Arguments of `lexbench import release`.
#[derive(Debug, Args)]
pub struct ImportReleaseArgs {
    /// The release folder (training.jsonl, validation.jsonl, testing.jsonl, unseen_article.jsonl, unseen.jsonl).
    pub dir: PathBuf,
    /// The dataset's name.
    #[arg(long, default_value = "ecthr-release", value_parser = crate::name_arg)]
    pub name: String,
}

/// Arguments of `lexbench diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The dataset to compare (a name under DATA/datasets, or a path).
    pub dataset: String,
    /// The dataset to compare against.
    #[arg(long)]
    pub against: String,
}

/// A dataset to read, by name (`DATA/datasets/NAME`) or, for the read-only commands (`stats`,
/// `diff`, `split`'s source), by folder path. Datasets are only ever written by name.
fn dataset_path(data: &Path, name: &str) -> PathBuf {
    match DatasetDir::in_data(data, name) {
        Ok(d) if d.0.is_dir() || !Path::new(name).is_dir() => d.0,
        _ => PathBuf::from(name),
    }
}

/// Parsed judgments of `data`, by itemid (those without an itemid are skipped). Without
/// `parsed/ecthr/judgments.jsonl` there are none, or, when they are `required`, an error naming the
/// file.
pub fn load_judgments(data: &Path, required: bool) -> Result<BTreeMap<ItemId, Judgment>> {
    let path = data.join("parsed/ecthr/judgments.jsonl");
    if !path.exists() {
        if required {
            anyhow::bail!(
                "{}: no such file: the parsed judgments are missing (run `lexbench parse store` first)",
                path.display()
            );
        }
        return Ok(BTreeMap::new());
    }
    let js: Vec<Judgment> = read_jsonl(&path)?;
    Ok(js
        .into_iter()
        .filter_map(|j| j.item.clone().map(|i| (i, j)))
        .collect())
}

fn report(w: &Written, dir: &Path) {
    for (split, sizes) in &w.stats.splits {
        eprintln!(
            "  {split:<13} {:>6} pairs {:>5} queries {:>5} judgments",
            sizes.get("pairs").unwrap_or(&0),
            sizes.get("queries").unwrap_or(&0),
            sizes.get("judgments").unwrap_or(&0)
        );
    }
    eprintln!(
        "  certificate: {}; dataset {} → {}",
        if w.certificate.passed { "passed" } else { "FAILED" },
        &w.manifest.dataset_hash()[..16],
        dir.display()
    );
}

fn split_config(path: Option<&Path>, seed: Option<u64>) -> Result<SplitConfig> {
    let mut cfg: SplitConfig = match path {
        Some(p) => lexbench_core::io::read_json(p)
            .with_context(|| format!("{}: not a split configuration", p.display()))?,
        None => SplitConfig::default(),
    };
    if let Some(seed) = seed {
        cfg.seed = seed;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// Runs `lexbench split`: the pairs of a built dataset split again into a new dataset.
pub fn cmd_split(data: &Path, args: &SplitArgs) -> Result<ExitCode> {
    let from = DatasetDir(dataset_path(data, &args.dataset));
    let (pairs, _) = lexbench_splits::reload::load_pairs(&from)?;
    let cfg = split_config(args.split_config.as_deref(), args.seed)?;
    let assignment = assign(&pairs, &cfg)?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-split", args.dataset));
    let judgments = load_judgments(data, false)?;
    let dir = DatasetDir::in_data(data, &name)?.0;
    let sources = format!("the pairs of dataset {}, split again", args.dataset);
    let w = write_dataset(
        &dir,
        &BuildInput {
            name: &name,
            pairs: &pairs,
            assignment: &assignment,
            judgments: &judgments,
            config: Some(&cfg),
            assembly: None,
            sources: &sources,
            plots: false,
        },
    )?;
    eprintln!(
        "split {} pairs of {} with seed {}",
        pairs.len(),
        args.dataset,
        cfg.seed
    );
    report(&w, &dir);
    Ok(ExitCode::SUCCESS)
}

/// Runs `lexbench stats`: prints the dataset's statistics and certificate summary as JSON.
pub fn cmd_stats(data: &Path, args: &StatsArgs) -> Result<ExitCode> {
    let dir = dataset_path(data, &args.dataset);
    let read = |f: &str| -> Result<serde_json::Value> {
        let p = dir.join(f);
        Ok(lexbench_core::io::read_json(&p)?)
    };
    let manifest = lexbench_core::dataset::DatasetManifest::read(&dir)?;
    let mut out = serde_json::json!({
        "dataset": manifest.name,
        "version": manifest.dataset_hash(),
        "stats": read("stats.json")?,
    });
    if dir.join("certificate.json").exists() {
        let c = read("certificate.json")?;
        out["certificate"] =
            serde_json::json!({"passed": c["passed"], "shared_judgments": c["shared_judgments"]});
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}

/// Builds the ECtHR dataset from parsed records; returns what was written and the assembly report.
pub fn build_ecthr(data: &Path, args: &BuildEcthrArgs) -> Result<(Written, AssemblyReport, PathBuf)> {
    let guides_path = data.join("parsed/ecthr/guides.jsonl");
    let guides: Vec<GuideFile> =
        read_jsonl(&guides_path).context("the parsed guides (run `lexbench parse store` first)")?;
    let judgments = load_judgments(data, true)?;
    let mut cfg: SplitConfig = match &args.split_config {
        Some(p) => lexbench_core::io::read_json(p)
            .with_context(|| format!("{}: not a split configuration", p.display()))?,
        None => SplitConfig::default(),
    };
    if let Some(seed) = args.seed {
        cfg.seed = seed;
    }
    let (pairs, assembly) = assemble(&guides, &judgments);
    let assignment = assign(&pairs, &cfg)?;
    let dir = DatasetDir::in_data(data, &args.name)?.0;
    let sources = format!(
        "{} parsed guides and {} parsed judgments (DATA/parsed/ecthr, from the raw store DATA/raw)",
        guides.len(),
        judgments.len()
    );
    let written = write_dataset(
        &dir,
        &BuildInput {
            name: &args.name,
            pairs: &pairs,
            assignment: &assignment,
            judgments: &judgments,
            config: Some(&cfg),
            assembly: Some(&assembly),
            sources: &sources,
            plots: args.plots,
        },
    )?;
    Ok((written, assembly, dir))
}

/// Runs `lexbench build`.
pub fn cmd_build(data: &Path, cmd: &BuildCommand) -> Result<ExitCode> {
    match cmd {
        BuildCommand::Ecthr(args) => {
            let (w, assembly, dir) = build_ecthr(data, args)?;
            eprintln!(
                "ecthr: {} pairs from {} citations",
                assembly.pairs, assembly.citations
            );
            for (reason, n) in &assembly.dropped {
                eprintln!("  not a label ({reason}): {n}");
            }
            report(&w, &dir);
            Ok(ExitCode::SUCCESS)
        }
        BuildCommand::Bsard(args) => {
            let (w, dir) = build_bsard(data, args)?;
            eprintln!(
                "bsard: {} articles, questions {:?}, graph of {} nodes and {} hierarchy edges; dataset {} → {}",
                w.articles,
                w.questions,
                w.graph.0,
                w.graph.1,
                &w.manifest.dataset_hash()[..16],
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs `lexbench import release`.
pub fn cmd_import_release(data: &Path, args: &ImportReleaseArgs) -> Result<ExitCode> {
    let r = read_release(&args.dir)?;
    let judgments = load_judgments(data, false)?;
    let dir = DatasetDir::in_data(data, &args.name)?.0;
    let sources = format!("the published release in {}", args.dir.display());
    let w = write_dataset(
        &dir,
        &BuildInput {
            name: &args.name,
            pairs: &r.pairs,
            assignment: &r.assignment,
            judgments: &judgments,
            config: None,
            assembly: None,
            sources: &sources,
            plots: false,
        },
    )?;
    eprintln!("imported {} pairs", r.pairs.len());
    report(&w, &dir);
    Ok(ExitCode::SUCCESS)
}

/// Runs `lexbench diff`.
pub fn cmd_diff(data: &Path, args: &DiffArgs) -> Result<ExitCode> {
    let a = dataset_path(data, &args.dataset);
    let b = dataset_path(data, &args.against);
    let d = lexbench_splits::diff::diff(&a, &b)?;
    println!("{}", serde_json::to_string_pretty(&d)?);
    let same = d.values().all(|s| {
        s.pairs_added + s.pairs_removed + s.pairs_changed + s.queries_added + s.queries_removed == 0
    });
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
