//! `lexbench parse guide`: print the records the guide parser makes of the given files.
//!
//! Each file is a guide PDF or its extracted text (pages separated by form feeds); the guide id is the
//! file name up to its first dot (`guide_art_1_eng.rendered.pdf` → `guide_art_1_eng`), case folded.
//! With `--meta DIR` (a folder holding the HUDOC metadata files, e.g. `../shared/fixtures/hudoc/meta`)
//! citations are resolved to itemids and an audit summary (resolved / ambiguous / unresolved) is
//! printed to stderr and included in the output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use lexbench_core::ids::GuideId;
use lexbench_parsers::guide::{self, ParsedGuide, resolve};
use serde_json::json;

use crate::cmd::args::RecordFormat;

/// Arguments of `lexbench parse guide`.
#[derive(Debug, Args)]
pub struct ParseGuideArgs {
    /// The files to parse: guide PDFs or extracted text (form feeds between pages).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// A folder with HUDOC metadata files (case_law_references_eng.csv,
    /// itemid_to_docname_known_citations.json, …) to resolve citations to itemids.
    #[arg(long)]
    pub meta: Option<PathBuf>,
}

/// The guide id from a file name: the name up to its first dot, case folded.
fn guide_id(path: &Path) -> Result<GuideId> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let stem = name.split('.').next().unwrap_or_default();
    GuideId::normalised(stem)
        .with_context(|| format!("{}: the file name does not give a guide id", path.display()))
}

fn load_meta(dir: &Path) -> Result<resolve::Metadata> {
    let mut texts = Vec::new();
    for f in resolve::Metadata::FILES {
        let p = dir.join(f);
        if p.is_file() {
            let t = lexbench_core::text::read_text(&p)?;
            texts.push((f, t));
        }
    }
    if texts.is_empty() {
        bail!(
            "{}: no HUDOC metadata file found (expected one of {})",
            dir.display(),
            resolve::Metadata::FILES.join(", ")
        );
    }
    let refs: Vec<(&str, &str)> = texts.iter().map(|(n, t)| (*n, t.as_str())).collect();
    Ok(resolve::Metadata::from_files(&refs)?)
}

fn parse_file(path: &Path) -> Result<ParsedGuide> {
    let id = guide_id(path)?;
    let bytes = guide::read_file(path)?;
    let name = path.display().to_string();
    let parsed =
        if bytes.starts_with(b"%PDF") || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
            guide::parse_pdf(&name, id, &bytes)?
        } else {
            let text = String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("{name}: neither a PDF nor UTF-8 text"))?;
            guide::parse_text(&name, id, &text)?
        };
    Ok(parsed)
}

/// Runs `lexbench parse guide`.
pub fn cmd_parse_guide(args: &ParseGuideArgs, format: RecordFormat) -> Result<ExitCode> {
    let meta = args.meta.as_deref().map(load_meta).transpose()?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for path in &args.files {
        let mut parsed = parse_file(path)?;
        let audit = meta.as_ref().map(|m| resolve::resolve_guide(&mut parsed, m));
        if let Some(a) = &audit {
            eprintln!(
                "{}: {} citations, {} resolved ({:.1}%), {} ambiguous, {} unresolved",
                a.guide,
                a.citations,
                a.resolved,
                100.0 * a.rate,
                a.ambiguous,
                a.unresolved
            );
        }
        match format {
            RecordFormat::Json => {
                let doc = json!({ "file": path.display().to_string(), "parsed": parsed, "audit": audit });
                serde_json::to_writer_pretty(&mut out, &doc)?;
                writeln!(out)?;
            }
            RecordFormat::Jsonl => {
                serde_json::to_writer(&mut out, &json!({ "guide": parsed.guide }))?;
                writeln!(out)?;
                for (q, d) in parsed.queries.iter().zip(&parsed.details) {
                    serde_json::to_writer(&mut out, &json!({ "query": q, "detail": d }))?;
                    writeln!(out)?;
                }
                if let Some(a) = &audit {
                    serde_json::to_writer(&mut out, &json!({ "audit": a }))?;
                    writeln!(out)?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
