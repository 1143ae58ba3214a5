//! `lexbench pipeline`: every stage, in order, on the embedded sample or on a data directory.
//!
//! 1. **crawl** — when `DATA/raw` is empty: the embedded sample is served on a loopback port by the
//!    local HUDOC stand-in and crawled with the real crawler (metadata, DOCX bodies, guide PDFs,
//!    BSARD-format CSV files);
//!    when `DATA/raw` holds a crawl, it is used as it is.
//! 2. **parse** — `lexbench parse store`: judgments and guides into `DATA/parsed/ecthr`.
//! 3. **build + split** — `lexbench build ecthr`: pairs, pools, qrels, the settings, the certificate;
//!    `lexbench build bsard` when BSARD's files were crawled (the sample has a fictional statute book).
//! 4. **bm25** — a run per evaluated split.
//! 5. **submit** and **leaderboard** — each run validated, evaluated and ranked.
//!
//! Each stage prints what it wrote; every stage is also a command of its own.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::ProgressBar;
use lexbench_core::GuideId;
use lexbench_crawlers::bsard::{self, BSARD_FILES, BsardSettings};
use lexbench_crawlers::fake_hudoc::FakeServer;
use lexbench_crawlers::fetch::Fetcher;
use lexbench_crawlers::guides::{self, GuideSettings};
use lexbench_crawlers::http::{HttpConfig, PoliteClient};
use lexbench_crawlers::hudoc::{self, HudocSettings};
use lexbench_crawlers::store::RawStore;

use crate::build::{BuildBsardArgs, BuildEcthrArgs, build_bsard, build_ecthr};
use crate::sample;

/// Arguments of `lexbench pipeline`.
#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// The dataset's name.
    #[arg(long, default_value = "ecthr", value_parser = crate::name_arg)]
    pub name: String,
    /// A split configuration (JSON); default: the sample's when running on the sample, else the paper's.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
}

/// The splits a baseline is run and ranked on.
pub const EVALUATED_SPLITS: [&str; 3] = ["test", "unseen_query", "unseen_guide"];

fn stage(n: usize, name: &str) -> Instant {
    eprintln!("[{n}/5] {name}");
    Instant::now()
}

fn done(t: Instant) {
    eprintln!("      ({:.1} s)", t.elapsed().as_secs_f64());
}

/// Crawls the embedded sample from a loopback server into `data/raw`.
async fn crawl_sample(data: &Path) -> Result<()> {
    let server = FakeServer::start(sample::fake_config()?)
        .await
        .context("starting the sample server")?;
    let raw = data.join("raw");
    let store = Arc::new(RawStore::open(&raw)?);
    let client = PoliteClient::new(HttpConfig {
        rate_per_sec: 200.0,
        ..HttpConfig::default()
    })?;
    let fetcher = Fetcher::online(store, client);
    let settings = HudocSettings {
        base_url: server.base_url(),
        since: sample::SINCE,
        until: sample::UNTIL,
        ..HudocSettings::default()
    };
    let hidden = ProgressBar::hidden();
    let meta = hudoc::crawl_metadata(&fetcher, &settings, &hidden).await?;
    hudoc::write_index(&raw.join("index/hudoc_metadata.jsonl"), &meta.records)?;
    let bodies = hudoc::crawl_bodies(&fetcher, &meta.records, &settings, 4, &hidden).await?;
    hudoc::write_bodies_index(&raw.join("index/hudoc_bodies.jsonl"), &bodies.stored)?;
    let gs = GuideSettings {
        ks_base: server.base_url(),
        www_base: server.base_url(),
        ids: sample::GUIDES
            .iter()
            .map(|(id, _)| GuideId::new(*id))
            .collect::<Result<_, _>>()?,
    };
    let g = guides::crawl_guides(&fetcher, &gs, &hidden).await?;
    guides::write_index(&raw.join("index/guides.jsonl"), &g.found)?;
    let bs = BsardSettings {
        base_url: format!("{}/bsard", server.base_url()),
        files: BSARD_FILES.iter().map(|f| (*f).to_owned()).collect(),
        ejustice_base: server.base_url(),
        numacs: Vec::new(),
    };
    let b = bsard::crawl_bsard(&fetcher, &bs, &hidden).await?;
    bsard::write_index(&raw.join("index/bsard.jsonl"), &b.found)?;
    eprintln!(
        "      served the embedded sample on {} and crawled {} judgments ({} bodies), {} guides and {} BSARD files → {}",
        server.base_url(),
        meta.records.len(),
        bodies.stored.len(),
        g.found.len(),
        b.found.len(),
        raw.display()
    );
    if !bodies.failed.is_empty()
        || !g.missing.is_empty()
        || !meta.failed_pages.is_empty()
        || !b.failed.is_empty()
    {
        anyhow::bail!(
            "the sample crawl lost documents: {:?} {:?} {:?}",
            bodies.failed,
            g.missing,
            b.failed
        );
    }
    Ok(())
}

/// Runs `lexbench pipeline`.
pub fn cmd_pipeline(data: &Path, args: &PipelineArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let raw_manifest = data.join("raw/manifest.jsonl");
    let on_sample = !raw_manifest.exists();

    let t = stage(1, "crawl");
    if on_sample {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        rt.block_on(crawl_sample(data))?;
    } else {
        eprintln!("      using the crawl already in {}", data.join("raw").display());
    }
    done(t);

    let t = stage(2, "parse");
    let parsed = crate::parse_store::parse_store(data, None)?;
    eprintln!(
        "      {} judgments, {} guides, {} queries, {}/{} citations resolved → {}",
        parsed.judgments,
        parsed.guides,
        parsed.queries,
        parsed.citations_resolved,
        parsed.citations,
        data.join("parsed/ecthr").display()
    );
    for f in &parsed.failures {
        eprintln!("      failed: {f}");
    }
    done(t);

    let t = stage(3, "build + split");
    // A data directory seeded from the sample keeps the sample's split configuration on later runs.
    let sample_config = data.join("sample_split_config.json");
    if on_sample {
        std::fs::write(&sample_config, sample::SPLIT_CONFIG)
            .with_context(|| format!("writing {}", sample_config.display()))?;
    }
    let split_config = match &args.split_config {
        Some(p) => Some(p.clone()),
        None => sample_config.exists().then_some(sample_config),
    };
    let (written, assembly, dir) = build_ecthr(
        data,
        &BuildEcthrArgs {
            name: args.name.clone(),
            split_config,
            seed: None,
            plots: true,
        },
    )?;
    eprintln!(
        "      {} pairs from {} citations; certificate {}; dataset {} → {}",
        assembly.pairs,
        assembly.citations,
        if written.certificate.passed {
            "passed"
        } else {
            "FAILED"
        },
        &written.manifest.dataset_hash()[..16],
        dir.display()
    );
    for (split, sizes) in &written.stats.splits {
        eprintln!(
            "        {split:<13} {:>4} pairs",
            sizes.get("pairs").unwrap_or(&0)
        );
    }
    let with_bsard = data.join("raw/index/bsard.jsonl").exists();
    if with_bsard {
        let (w, dir) = build_bsard(
            data,
            &BuildBsardArgs {
                name: "bsard".into(),
                from: None,
            },
        )?;
        eprintln!(
            "      bsard: {} articles, questions {:?}, legislative graph of {} nodes → {}",
            w.articles,
            w.questions,
            w.graph.0,
            dir.display()
        );
    }
    done(t);

    let t = stage(4, "bm25");
    let mut runs: Vec<(&str, &str, PathBuf)> = Vec::new();
    for split in EVALUATED_SPLITS {
        if written
            .stats
            .splits
            .get(split)
            .and_then(|s| s.get("pairs"))
            .copied()
            .unwrap_or(0)
            == 0
        {
            eprintln!("      {split}: no topics, skipped");
            continue;
        }
        let out = lexbench_baselines::rank::bm25::run_dataset(
            data,
            &args.name,
            split,
            &lexbench_baselines::sparse::Bm25Params::default(),
        )?;
        eprintln!("      {}/{split}: {}", args.name, out.run_path.display());
        runs.push((args.name.as_str(), split, out.run_path));
    }
    if with_bsard {
        let out = lexbench_baselines::rank::bm25::run_dataset(
            data,
            "bsard",
            "test",
            &lexbench_baselines::sparse::Bm25Params::default(),
        )?;
        eprintln!("      bsard/test: {}", out.run_path.display());
        runs.push(("bsard", "test", out.run_path));
    }
    done(t);

    let t = stage(5, "submit + leaderboard");
    leaderboard_stage(data, &runs)?;
    done(t);

    eprintln!("pipeline finished in {:.1} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// Submits each run as "BM25" and renders the leaderboard.
fn leaderboard_stage(data: &Path, runs: &[(&str, &str, PathBuf)]) -> Result<()> {
    use lexbench_leaderboard::submit::{SubmitRequest, submit};
    for (dataset, split, run) in runs {
        let s = submit(&SubmitRequest {
            data,
            run,
            dataset,
            split,
            name: "BM25",
            card: None,
        })
        .with_context(|| format!("submitting {}", run.display()))?;
        eprintln!("      {dataset}/{split}: entry {}", s.path.display());
    }
    let r = lexbench_leaderboard::render::render_site(data)?;
    eprintln!("      {}", r.markdown.display());
    eprintln!("      {}", r.html.display());
    for p in &r.plots {
        eprintln!("      {}", p.display());
    }
    Ok(())
}
