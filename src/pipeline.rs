//! The pipeline: every stage, in order, on the embedded sample or on a data directory.
//!
//! 1. **crawl** — when `DATA/raw` is empty: the embedded sample is served on a loopback port by the
//!    local HUDOC stand-in and crawled with the real crawler ([`crate::crawl::crawl_sample`]);
//!    when `DATA/raw` holds a crawl, it is used as it is.
//! 2. **parse** — [`crate::parse_store::parse_store`]: judgments and guides into `DATA/parsed/ecthr`.
//! 3. **build + split** — [`crate::build::build_ecthr`]: pairs, pools, qrels, the settings, the
//!    certificate; [`crate::build::build_bsard`] when BSARD's files were crawled (the sample has a
//!    fictional statute book).
//! 4. **bm25 baseline** — the harness runs BM25 on each evaluated split and records it as the
//!    leaderboard's baseline, a verified entry ([`crate::submit::submit_baseline`]).
//! 5. **leaderboard** — the tables, the page and the plots.
//!
//! Each stage reports what it wrote, line by line, to the `log` the caller gives.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use lexbench_core::datadir::DataDir;

use crate::build::{BsardSource, EcthrOptions, build_bsard, build_ecthr};
use crate::sample;

/// The splits a baseline is run and ranked on.
pub const EVALUATED_SPLITS: [&str; 3] = ["test", "unseen_query", "unseen_guide"];

/// Options of the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineOptions {
    /// The ECtHR dataset's name.
    pub name: String,
    /// A split configuration (JSON); `None`: the sample's when running on the sample, else the
    /// paper's.
    pub split_config: Option<PathBuf>,
}

/// What the pipeline made.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineReport {
    /// Whether the embedded sample was crawled (the raw store was empty).
    pub on_sample: bool,
    /// The BM25 runs: (dataset, split, run file).
    pub runs: Vec<(String, String, PathBuf)>,
    /// The leaderboard entries written.
    pub entries: Vec<PathBuf>,
    /// The leaderboard's Markdown page.
    pub markdown: PathBuf,
    /// The leaderboard's HTML page.
    pub html: PathBuf,
    /// Seconds the whole pipeline took.
    pub seconds: f64,
}

/// Runs every stage on `data`; `log` receives the progress lines (`[1/5] crawl`, what each stage
/// wrote, timings).
pub fn run_pipeline(
    data: &DataDir,
    options: &PipelineOptions,
    log: &mut dyn FnMut(String),
) -> Result<PipelineReport> {
    let started = Instant::now();
    let stage = |log: &mut dyn FnMut(String), n: usize, name: &str| {
        log(format!("[{n}/5] {name}"));
        Instant::now()
    };
    let done = |log: &mut dyn FnMut(String), t: Instant| {
        log(format!("      ({:.1} s)", t.elapsed().as_secs_f64()));
    };
    let on_sample = !data.raw().join("manifest.jsonl").exists();

    let t = stage(log, 1, "crawl");
    if on_sample {
        let c = crate::crawl::runtime()?.block_on(crate::crawl::crawl_sample(data))?;
        log(format!(
            "      served the embedded sample on {} and crawled {} judgments ({} bodies), {} guides and {} BSARD files → {}",
            c.base_url,
            c.judgments,
            c.bodies,
            c.guides,
            c.bsard_files,
            data.raw().display()
        ));
    } else {
        log(format!(
            "      using the crawl already in {}",
            data.raw().display()
        ));
    }
    done(log, t);

    let t = stage(log, 2, "parse");
    let parsed = crate::parse_store::parse_store(data, None)?;
    log(format!(
        "      {} judgments, {} guides, {} queries, {}/{} citations resolved → {}",
        parsed.judgments,
        parsed.guides,
        parsed.queries,
        parsed.citations_resolved,
        parsed.citations,
        data.parsed().join("ecthr").display()
    ));
    for f in &parsed.failures {
        log(format!("      failed: {f}"));
    }
    done(log, t);

    let t = stage(log, 3, "build + split");
    // A data directory seeded from the sample keeps the sample's split configuration on later runs.
    let sample_config = data.root().join("sample_split_config.json");
    if on_sample {
        std::fs::write(&sample_config, sample::SPLIT_CONFIG)
            .with_context(|| format!("writing {}", sample_config.display()))?;
    }
    let split_config = match &options.split_config {
        Some(p) => Some(p.clone()),
        None => sample_config.exists().then_some(sample_config),
    };
    let ecthr = build_ecthr(
        data,
        &EcthrOptions {
            name: options.name.clone(),
            split_config,
            seed: None,
            plots: true,
            labels: lexbench_splits::assemble::LabelKinds::default(),
        },
    )?;
    let written = &ecthr.built.written;
    log(format!(
        "      {} pairs from {} citations; certificate {}; dataset {} → {}",
        ecthr.assembly.pairs,
        ecthr.assembly.citations,
        if written.certificate.passed {
            "passed"
        } else {
            "FAILED"
        },
        &written.manifest.dataset_hash()[..16],
        ecthr.built.dir.display()
    ));
    for (split, sizes) in &written.stats.splits {
        log(format!(
            "        {split:<13} {:>4} pairs",
            sizes.get("pairs").unwrap_or(&0)
        ));
    }
    let with_bsard = data.raw().join("index/bsard.jsonl").exists();
    if with_bsard {
        let b = build_bsard(data, "bsard", &BsardSource::RawStore)?;
        log(format!(
            "      bsard: {} articles, questions {:?}, legislative graph of {} nodes → {}",
            b.written.articles,
            b.written.questions,
            b.written.graph.0,
            b.dir.display()
        ));
    }
    done(log, t);

    let t = stage(log, 4, "bm25 baseline (run by the harness, recorded as verified)");
    let mut planned: Vec<(String, String)> = Vec::new();
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
            log(format!("      {split}: no topics, skipped"));
            continue;
        }
        planned.push((options.name.clone(), split.to_owned()));
    }
    if with_bsard {
        planned.push(("bsard".into(), "test".into()));
    }
    let mut runs: Vec<(String, String, PathBuf)> = Vec::new();
    let mut entries = Vec::new();
    for (dataset, split) in planned {
        let subs = crate::submit::submit_baseline(
            data,
            std::slice::from_ref(&dataset),
            std::slice::from_ref(&split),
            &mut |_| {},
        )
        .with_context(|| format!("running the baseline on {dataset}/{split}"))?;
        let run = data.run_file(&dataset, &split, lexbench_baselines::rank::bm25::SYSTEM)?;
        log(format!("      {dataset}/{split}: {}", run.display()));
        for s in subs {
            log(format!("      {dataset}/{split}: entry {}", s.path.display()));
            entries.push(s.path);
        }
        runs.push((dataset, split, run));
    }
    done(log, t);

    let t = stage(log, 5, "leaderboard");
    let site = lexbench_leaderboard::render::render_site(data.root())?;
    log(format!("      {}", site.markdown.display()));
    log(format!("      {}", site.html.display()));
    for p in &site.plots {
        log(format!("      {}", p.display()));
    }
    done(log, t);

    let seconds = started.elapsed().as_secs_f64();
    log(format!("pipeline finished in {seconds:.1} s"));
    Ok(PipelineReport {
        on_sample,
        runs,
        entries,
        markdown: site.markdown,
        html: site.html,
        seconds,
    })
}
