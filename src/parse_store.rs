//! Parse store: everything the raw store holds into `DATA/parsed/ecthr/` (`lexbench parse store`,
//! the pipeline's second stage).
//!
//! Inputs are the crawl's indexes (`raw/index/hudoc_metadata.jsonl`, `hudoc_bodies.jsonl`,
//! `guides.jsonl`) and the objects they name. Outputs:
//! - `parsed/ecthr/judgments.jsonl`: one `Judgment` per item (DOCX preferred over HTML), with the HUDOC
//!   title and date and the source's URL and sha256 as provenance;
//! - `parsed/ecthr/guides.jsonl`: one `GuideFile` per guide, citations resolved to itemids against the
//!   crawled HUDOC metadata (and, with `--meta DIR`, HUDOC's reference lists);
//! - `parsed/ecthr/parse_report.json`: counts, failures and citation-resolution audits.
//!
//! A document that fails to parse — or is no judgment: a PDF, binary data, a page without a single
//! numbered paragraph — is reported with its itemid, sha256 and URL and skipped (exit code 1); the
//! stage fails only when nothing parses.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use lexbench_core::datadir::DataDir;
use lexbench_core::io::{read_jsonl, write_jsonl};
use lexbench_core::{GuideFile, HudocMeta, ItemId, Judgment, Provenance};
use lexbench_crawlers::guides::GuideSource;
use lexbench_crawlers::hudoc::BodyRecord;
use lexbench_crawlers::store::RawStore;
use lexbench_parsers::guide::{self, resolve};
use serde_json::json;

/// What the stage did.
#[derive(Debug, Clone, Default)]
pub struct ParseSummary {
    /// Judgments parsed.
    pub judgments: usize,
    /// Guides parsed.
    pub guides: usize,
    /// Queries in those guides.
    pub queries: usize,
    /// Citations resolved / seen.
    pub citations_resolved: usize,
    /// Citations seen.
    pub citations: usize,
    /// Documents that failed, with the reason.
    pub failures: Vec<String>,
}

fn read_index<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    match read_jsonl(path) {
        Ok(v) => Ok(v),
        Err(lexbench_core::Error::Empty { .. }) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

fn bar(len: usize, msg: &'static str) -> ProgressBar {
    let b = ProgressBar::new(len as u64);
    if let Ok(s) = ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len}") {
        b.set_style(s.progress_chars("=> "));
    }
    b.set_message(msg);
    b
}

/// HUDOC metadata as citation-resolution records.
fn case_records(meta: &BTreeMap<ItemId, HudocMeta>) -> Vec<resolve::CaseRecord> {
    meta.values()
        .map(|m| resolve::CaseRecord {
            itemid: Some(m.itemid.clone()),
            name: m.docname.clone(),
            appnos: m.appno.clone(),
            year: m
                .judgementdate
                .as_deref()
                .or(m.kpdate.as_deref())
                .and_then(|d| d.get(..4))
                .and_then(|y| y.parse().ok()),
            decision: match m.doctype.as_str() {
                "HEJUD" | "HFJUD" => Some(false),
                "HEDEC" | "HFDEC" => Some(true),
                _ => None,
            },
        })
        .collect()
}

fn extra_records(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut texts = Vec::new();
    for f in resolve::Metadata::FILES {
        let p = dir.join(f);
        if p.is_file() {
            texts.push((f.to_owned(), lexbench_core::text::read_text(&p)?));
        }
    }
    if texts.is_empty() {
        bail!("{}: no HUDOC metadata file found", dir.display());
    }
    Ok(texts)
}

/// Parses the raw store of `data` into `data/parsed/ecthr`; `meta_dir`, a folder of HUDOC metadata
/// files, resolves citations beyond the crawled metadata. Documents that fail are listed in the
/// summary and skipped; nothing parsing at all is an error.
pub fn parse_store(data: &DataDir, meta_dir: Option<&Path>) -> Result<ParseSummary> {
    let raw = data.raw();
    let store = RawStore::open(&raw).with_context(|| format!("opening the raw store {}", raw.display()))?;
    let index = raw.join("index");
    let metas: Vec<HudocMeta> = read_index(&index.join("hudoc_metadata.jsonl"))?;
    let meta: BTreeMap<ItemId, HudocMeta> = metas.into_iter().map(|m| (m.itemid.clone(), m)).collect();
    let bodies: Vec<BodyRecord> = read_index(&index.join("hudoc_bodies.jsonl"))?;
    let guides: Vec<GuideSource> = read_index(&index.join("guides.jsonl"))?;
    let mut summary = ParseSummary::default();

    // Judgments: one body per item, DOCX first.
    let mut chosen: BTreeMap<&ItemId, &BodyRecord> = BTreeMap::new();
    for b in &bodies {
        let better = chosen
            .get(&b.itemid)
            .is_none_or(|c| c.format != "docx" && b.format == "docx");
        if better {
            chosen.insert(&b.itemid, b);
        }
    }
    let pb = bar(chosen.len(), "judgments");
    let mut judgments: Vec<Judgment> = Vec::new();
    for (item, body) in chosen {
        pb.inc(1);
        let parsed = store
            .get(&body.sha256)
            .map_err(anyhow::Error::from)
            .and_then(|bytes| {
                Ok(lexbench_parsers::judgment::parse(
                    &bytes,
                    item.as_str(),
                    Some(item.clone()),
                )?)
            });
        // Where the body came from, so a failure can be found in the store and refetched.
        let origin = format!("{item} ({}, sha256 {}, {})", body.format, body.sha256, body.url);
        match parsed {
            // A body with text but no numbered paragraph (an error page, a challenge page stored as
            // a body) would be an empty judgment: nothing to retrieve, and a silent hole in pools.
            Ok(j) if j.paragraphs.is_empty() => summary.failures.push(format!(
                "{origin}: no numbered paragraph in the main judgment: skipped"
            )),
            Ok(mut j) => {
                if let Some(m) = meta.get(item) {
                    if !m.docname.is_empty() {
                        j.title = m.docname.clone();
                    }
                    j.date = m.judgementdate.clone().or(m.kpdate.clone()).or(j.date);
                }
                let fetched_at = store.lookup(&body.url).map(|e| e.fetched_at);
                j.provenance = Provenance {
                    url: Some(body.url.clone()),
                    sha256: Some(body.sha256.clone()),
                    fetched_at,
                    producer: j.provenance.producer.clone(),
                };
                judgments.push(j);
            }
            Err(e) => summary.failures.push(format!("{origin}: {e:#}")),
        }
    }
    pb.finish_and_clear();
    summary.judgments = judgments.len();

    // Guides, with citations resolved.
    let mut records = case_records(&meta);
    if let Some(dir) = meta_dir {
        let texts = extra_records(dir)?;
        for (name, text) in &texts {
            let bad = |e: serde_json::Error| anyhow::anyhow!("{}: {e}", dir.join(name).display());
            match name.as_str() {
                "case_law_references_eng.csv" => records.extend(resolve::Metadata::references_csv(text)?),
                "itemid_to_docname_known_citations.json" => {
                    records.extend(resolve::Metadata::docnames_json(text).map_err(bad)?)
                }
                "french_to_english_itemids.csv" => {
                    records.extend(resolve::Metadata::french_english_csv(text)?)
                }
                "historical_citation_catalog.json" => {
                    records.extend(resolve::Metadata::historical_catalog(text).map_err(bad)?)
                }
                "hudoc_echr_rss_2000_items.rss" => records.extend(resolve::Metadata::rss(text)),
                _ => {}
            }
        }
    }
    let resolver = resolve::Metadata::new(records);
    let pb = bar(guides.len(), "guides");
    let mut files = Vec::new();
    let mut audits = Vec::new();
    for g in &guides {
        pb.inc(1);
        let parsed = store
            .get(&g.sha256)
            .map_err(anyhow::Error::from)
            .and_then(|bytes| Ok(guide::parse_pdf(g.id.as_str(), g.id.clone(), &bytes)?));
        let mut parsed = match parsed {
            Ok(p) => p,
            Err(e) => {
                summary.failures.push(format!("{} (guide): {e:#}", g.id));
                continue;
            }
        };
        let audit = resolve::resolve_guide(&mut parsed, &resolver);
        summary.citations += audit.citations;
        summary.citations_resolved += audit.resolved;
        audits.push(audit);
        let fetched_at = store.lookup(&g.url).map(|e| e.fetched_at);
        parsed.guide.provenance.url = Some(g.url.clone());
        parsed.guide.provenance.sha256 = Some(g.sha256.clone());
        parsed.guide.provenance.fetched_at = fetched_at;
        let spans = parsed
            .details
            .iter()
            .map(|d| d.citations.iter().map(|c| [c.start, c.end]).collect())
            .collect();
        summary.queries += parsed.queries.len();
        files.push(GuideFile {
            guide: parsed.guide,
            queries: parsed.queries,
            spans,
        });
    }
    pb.finish_and_clear();
    summary.guides = files.len();
    if judgments.is_empty() && files.is_empty() {
        bail!(
            "nothing to parse in {} (run `lexbench crawl` first){}",
            raw.display(),
            if summary.failures.is_empty() {
                String::new()
            } else {
                format!("; failures: {}", summary.failures.join("; "))
            }
        );
    }
    let out = data.parsed().join("ecthr");
    write_jsonl(&out.join("judgments.jsonl"), &judgments)?;
    write_jsonl(&out.join("guides.jsonl"), &files)?;
    let report = json!({
        "judgments": summary.judgments,
        "guides": summary.guides,
        "queries": summary.queries,
        "citations": summary.citations,
        "citations_resolved": summary.citations_resolved,
        "failures": summary.failures,
        "resolution": audits,
    });
    let text = serde_json::to_string_pretty(&report)? + "\n";
    lexbench_core::io::write_atomic(&out.join("parse_report.json"), |w| {
        std::io::Write::write_all(w, text.as_bytes())
    })?;
    Ok(summary)
}
