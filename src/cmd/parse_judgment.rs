//! `lexbench parse judgment`: print the records the judgment parser makes of the given files.
//!
//! Each file is a HUDOC judgment as DOCX, HTML, plain text (one printed paragraph `N. text` per
//! line), a HUDOC mirror's JSON document (`{"itemid", "title", "date", …, "full_text"}`, the HTML body
//! flattened to one line; its itemid, title and date are taken from it) or that flattened
//! `full_text` saved alone, told apart by content (a zip starts with `PK`, HTML has markup, JSON is an
//! object, flattened text starts with CSS rules), not by its name; anything
//! else (a PDF, binary data, text without a numbered paragraph) is refused as what it looks like
//! (`error: x.pdf: a PDF, not a judgment (expected DOCX, HTML or text)`). The itemid comes from a file
//! name such as `001-175180.docx` or `001-100469.txt`; other names give no itemid. Files that cannot be read or parsed are
//! reported on stderr (`error: FILE: why`) and the others are still printed; the exit code is then 2.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use lexbench_core::Judgment;
use lexbench_parsers::judgment;

use crate::cmd::args::RecordFormat;

/// Arguments of `lexbench parse judgment`.
#[derive(Debug, Args)]
pub struct ParseJudgmentArgs {
    /// The files to parse: HUDOC judgments, DOCX, HTML, plain text, a HUDOC mirror's JSON document
    /// or its flattened `full_text` (detected by content). The itemid is taken from a file name like
    /// `001-175180.docx` (from the metadata for JSON).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

fn parse_file(path: &Path) -> Result<Judgment> {
    let bytes = judgment::read_file(path)?;
    let name = path.display().to_string();
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    Ok(judgment::parse(
        &bytes,
        &name,
        judgment::item_from_file_name(file_name),
    )?)
}

/// Runs `lexbench parse judgment`.
pub fn cmd_parse_judgment(args: &ParseJudgmentArgs, format: RecordFormat) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = 0usize;
    for path in &args.files {
        let j = match parse_file(path) {
            Ok(j) => j,
            Err(e) => {
                failed += 1;
                // Flush what is printed so far, so stdout and stderr stay in order on a terminal.
                out.flush()?;
                eprintln!("error: {e:#}");
                continue;
            }
        };
        tracing::info!(
            file = %path.display(),
            paragraphs = j.paragraphs.len(),
            opinions = j.opinions.len(),
            warnings = j.warnings.len(),
            "parsed"
        );
        match format {
            RecordFormat::Json => {
                serde_json::to_writer_pretty(&mut out, &j)?;
                writeln!(out)?;
            }
            RecordFormat::Jsonl => {
                serde_json::to_writer(&mut out, &j)?;
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    Ok(if failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
