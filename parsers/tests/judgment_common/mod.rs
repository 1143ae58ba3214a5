//! Shared by the judgment tests: the fixture list and a structural summary of a parsed judgment that
//! is safe to commit as a snapshot (counts, numbers, sections, hashes, 32-character excerpts; never
//! whole texts).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use lexbench_core::{Judgment, Paragraph, Section};
use lexbench_parsers::judgment::segment::{excerpt, normalize, ranges};
use serde::Serialize;

/// Every DOCX fixture, sorted.
pub fn docx_fixtures() -> Vec<PathBuf> {
    let dir = lexbench_core::testing::fixtures_dir().join("hudoc/docx");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "docx"))
        .collect();
    v.sort();
    assert!(
        v.len() >= 12,
        "expected the 12 DOCX fixtures in {}",
        dir.display()
    );
    v
}

/// A fixture's file name.
pub fn name(p: &std::path::Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Parses a DOCX fixture by file name (`001-175180.docx`).
pub fn parse_fixture(file: &str) -> Judgment {
    let p = lexbench_core::testing::fixture(&format!("hudoc/docx/{file}"));
    let bytes = std::fs::read(&p).unwrap();
    lexbench_parsers::judgment::parse_docx(
        &bytes,
        file,
        lexbench_parsers::judgment::item_from_file_name(file),
    )
    .unwrap()
}

/// FNV-1a, 64 bits: a stable fingerprint of a paragraph's text for snapshots.
pub fn fnv(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn section_name(s: Section) -> &'static str {
    match s {
        Section::Introduction => "introduction",
        Section::Procedure => "procedure",
        Section::Facts => "facts",
        Section::RelevantLaw => "relevant_law",
        Section::Law => "law",
        Section::Operative => "operative",
        Section::Unknown => "unknown",
    }
}

/// `procedure 1-9`, `facts 10-33`, … : the section of each run of paragraphs.
pub fn section_runs(ps: &[Paragraph]) -> Vec<String> {
    let mut out: Vec<(Section, Vec<u32>)> = Vec::new();
    for p in ps {
        match out.last_mut() {
            Some((s, nums)) if *s == p.section => nums.push(p.num),
            _ => out.push((p.section, vec![p.num])),
        }
    }
    out.into_iter()
        .map(|(s, nums)| format!("{} {}", section_name(s), ranges(&nums)))
        .collect()
}

/// One line per paragraph: number, section, length, text hash, first 32 characters (of the text with
/// white space folded).
pub fn index(ps: &[Paragraph]) -> Vec<String> {
    ps.iter()
        .map(|p| {
            // White space folded, so that DOCX and HTML snapshots of one judgment compare line by line.
            let text = normalize(&p.text);
            format!(
                "{} {} {} {} {}",
                p.num,
                section_name(p.section),
                text.chars().count(),
                &fnv(&text)[..12],
                excerpt(&text, 32)
            )
        })
        .collect()
}

/// The structure of an opinion.
#[derive(Serialize)]
pub struct OpinionSummary {
    pub title: String,
    pub paragraphs: usize,
    pub numbers: String,
    pub index: Vec<String>,
}

/// The structure of a parsed judgment.
#[derive(Serialize)]
pub struct Summary {
    pub item: Option<String>,
    pub title: String,
    pub date: Option<String>,
    pub paragraphs: usize,
    pub numbers: String,
    pub complete: bool,
    pub sections: Vec<String>,
    pub warnings: Vec<String>,
    pub opinions: Vec<OpinionSummary>,
    pub index: Vec<String>,
}

/// Numbers `1..N` without gaps.
pub fn complete(ps: &[Paragraph]) -> bool {
    ps.iter().enumerate().all(|(i, p)| p.num as usize == i + 1)
}

/// Summarises a judgment for a snapshot.
pub fn summary(j: &Judgment) -> Summary {
    let nums: Vec<u32> = j.paragraphs.iter().map(|p| p.num).collect();
    Summary {
        item: j.item.as_ref().map(|i| i.as_str().to_string()),
        title: j.title.clone(),
        date: j.date.clone(),
        paragraphs: j.paragraphs.len(),
        numbers: ranges(&nums),
        complete: complete(&j.paragraphs),
        sections: section_runs(&j.paragraphs),
        warnings: j
            .warnings
            .iter()
            .map(|w| match &w.at {
                Some(at) => format!("{} [{}] {}", w.code, at, w.message),
                None => format!("{} {}", w.code, w.message),
            })
            .collect(),
        opinions: j
            .opinions
            .iter()
            .map(|o| OpinionSummary {
                title: o.title.clone(),
                paragraphs: o.paragraphs.len(),
                numbers: ranges(&o.paragraphs.iter().map(|p| p.num).collect::<Vec<_>>()),
                index: index(&o.paragraphs),
            })
            .collect(),
        index: index(&j.paragraphs),
    }
}
