//! `lexbench parse citations [FILE|-]`: the guide citation reader on any text.
//!
//! The text (a sentence, a guide paragraph, a whole guide body; standard input with `-` or no file)
//! is read as the guide parser reads the text under a heading: whitespace collapsed, citations as
//! printed (`direct`, case-level, `ibid`), then bare pinpoints tied to the case named before them
//! (`deferred`, `previous_sentence`). One JSON line per citation (`--format json`: one array):
//! `case_name`, `year`, the flags, `paragraphs`, `kind`, `start`/`end` (byte offsets in the input),
//! `line` (1-based, where it starts) and `raw` (as printed).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use lexbench_core::records::ReadKind;
use lexbench_parsers::guide::citation;
use serde::Serialize;

use crate::cmd::args::RecordFormat;

/// Arguments of `lexbench parse citations`.
#[derive(Debug, Args)]
pub struct ParseCitationsArgs {
    /// A UTF-8 text file; `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
}

/// One citation as printed by the command.
#[derive(Debug, Serialize)]
struct Line<'a> {
    case_name: &'a str,
    year: Option<u16>,
    grand_chamber: bool,
    decision: bool,
    commission: bool,
    paragraphs: &'a [u32],
    kind: ReadKind,
    case_level_only: bool,
    /// The pinpoint was printed but could not be read (a number outside 1..=9999, a range going down
    /// or spanning more than 500): no paragraphs, never invented ones.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    unreadable_pinpoint: bool,
    start: usize,
    end: usize,
    line: usize,
    raw: &'a str,
}

fn read_input(file: Option<&PathBuf>) -> Result<(String, String)> {
    let (name, bytes) = match file.filter(|f| f.as_os_str() != "-") {
        Some(path) => (
            path.display().to_string(),
            lexbench_parsers::guide::read_file(path)?,
        ),
        None => {
            let max = lexbench_parsers::guide::MAX_INPUT_BYTES;
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(max as u64 + 1)
                .read_to_end(&mut bytes)
                .context("reading standard input")?;
            if bytes.len() > max {
                anyhow::bail!(
                    "standard input: the text is larger than {}, the most a guide may be",
                    lexbench_core::text::human_bytes(max)
                );
            }
            ("standard input".to_owned(), bytes)
        }
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok((name, text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
            anyhow::bail!("{name}: line {line}: not UTF-8 text (byte {at})")
        }
    }
}

/// Runs `lexbench parse citations`.
pub fn cmd_parse_citations(args: &ParseCitationsArgs, format: RecordFormat) -> Result<ExitCode> {
    let (name, text) = read_input(args.file.as_ref())?;
    let found = citation::extract_text(&text);
    tracing::info!(input = %name, citations = found.len(), "read");
    let lines: Vec<Line<'_>> = found
        .iter()
        .map(|l| {
            let c = &l.found.citation;
            Line {
                case_name: &c.case_name,
                year: c.year,
                grand_chamber: c.flags.grand_chamber,
                decision: c.flags.decision,
                commission: c.flags.commission,
                paragraphs: &c.paragraphs,
                kind: c.read,
                case_level_only: l.found.case_level_only,
                unreadable_pinpoint: l.found.unreadable_pinpoint,
                start: l.found.start,
                end: l.found.end,
                line: l.line,
                raw: &c.raw,
            }
        })
        .collect();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match format {
        RecordFormat::Jsonl => {
            for l in &lines {
                serde_json::to_writer(&mut out, l)?;
                writeln!(out)?;
            }
        }
        RecordFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &lines)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
