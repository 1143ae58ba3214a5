//! The reader of HUDOC mirror documents (`hudoc/flat/<itemid>.json`: metadata and the HTML body
//! flattened to one line; SOURCES.md) on the 248 real documents, through the same segmenter as DOCX,
//! HTML and text.
//!
//! Properties checked:
//! - every document is detected as a HUDOC JSON document and parses (all but one, refused as it
//!   prints no paragraph number at all: see the test), without a panic, into a main
//!   judgment with numbered paragraphs whose numbers strictly increase, with the itemid, title and
//!   date of its metadata; its `full_text` saved alone is detected as flattened text and gives the
//!   same paragraphs and opinions; aggregate figures (paragraphs, opinions, warnings) are printed
//!   (`--nocapture`);
//! - one YAML snapshot per chosen judgment (an old Grand Chamber judgment with numbered opinions, a
//!   Chamber judgment, a Grand Chamber judgment with unnumbered opinions, a Committee judgment, a
//!   recent judgment): counts, first and last numbers, section runs, opinions, warning codes and the
//!   first 40 characters of a few paragraphs — structure only, never the texts;
//! - agreement with two independent segmentations of the same judgments: `hudoc/lexclipr` (18
//!   judgments in common) and `hudoc/text` read by the text reader (11 in common). For each, the share
//!   of the other source's numbered paragraphs whose number we have, and the share whose opening
//!   matches ours (first 40 characters after removing white space and folding case). The table is
//!   printed; the means and the worst judgment must stay above thresholds stated below.
#![allow(missing_docs, clippy::unwrap_used)]

mod judgment_common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use judgment_common::section_runs;
use lexbench_core::Judgment;
use lexbench_parsers::judgment::segment::{excerpt, ranges};
use lexbench_parsers::judgment::{Format, detect, item_from_file_name, parse, parse_text};
use serde::Serialize;

fn flat_dir() -> PathBuf {
    lexbench_core::testing::fixtures_dir().join("hudoc/flat")
}

/// Every flat JSON fixture, sorted. The folder must exist: a missing one fails the test.
fn flat_fixtures() -> Vec<PathBuf> {
    let dir = flat_dir();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 248, "the 248 HUDOC JSON documents in {}", dir.display());
    v
}

fn parse_flat_fixture(item: &str) -> Judgment {
    let name = format!("{item}.json");
    let bytes = std::fs::read(flat_dir().join(&name)).unwrap();
    parse(&bytes, &name, item_from_file_name(&name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn full_text(bytes: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    v["full_text"].as_str().unwrap().to_string()
}

#[test]
fn every_flat_document_parses() {
    let mut paragraphs = 0usize;
    let mut with_opinions = 0usize;
    let mut opinions = 0usize;
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    let mut refused: Vec<String> = Vec::new();
    for p in flat_fixtures() {
        let name = judgment_common::name(&p);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(detect(&bytes), Format::HudocJson, "{name}");
        let j = match parse(&bytes, &name, None) {
            Ok(j) => j,
            Err(e) => {
                refused.push(format!("{e}"));
                continue;
            }
        };
        let meta: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            j.item.as_ref().map(ToString::to_string).as_deref(),
            meta["itemid"].as_str(),
            "{name}"
        );
        assert!(!j.title.is_empty(), "{name}: a title");
        assert_eq!(
            j.date.as_deref(),
            meta["date"].as_str().and_then(|d| d.get(..10)),
            "{name}"
        );
        assert!(!j.paragraphs.is_empty(), "{name}: no paragraphs");
        assert!(
            j.paragraphs.windows(2).all(|w| w[0].num < w[1].num),
            "{name}: numbers strictly increase"
        );
        // The body alone, as a user would save it.
        let body = full_text(&bytes);
        assert_eq!(detect(body.as_bytes()), Format::Flat, "{name}: full_text alone");
        let alone =
            parse(body.as_bytes(), "full_text.txt", None).unwrap_or_else(|e| panic!("{name} alone: {e}"));
        assert_eq!(
            alone.paragraphs, j.paragraphs,
            "{name}: the body alone gives the same paragraphs"
        );
        assert_eq!(alone.opinions, j.opinions, "{name}: … and the same opinions");
        paragraphs += j.paragraphs.len();
        opinions += j.opinions.len();
        with_opinions += usize::from(!j.opinions.is_empty());
        for w in &j.warnings {
            *codes.entry(w.code.clone()).or_default() += 1;
        }
    }
    for r in &refused {
        println!("refused: {r}");
    }
    // One document is refused, rightly: 001-77715 is a translation published by an NGO (the ERRC)
    // whose Word numbering was lost, so not one of its paragraphs carries a number (`PROCEDURE The
    // case originated …`); a judgment without numbered paragraphs is nothing to retrieve from.
    assert_eq!(refused.len(), 1, "refusals: {refused:?}");
    assert!(
        refused[0].starts_with("001-77715.json:") && refused[0].contains("not a judgment"),
        "{refused:?}"
    );
    println!(
        "247 of 248 documents parse: {paragraphs} main paragraphs, {opinions} opinions in {with_opinions} judgments; warnings {codes:?}"
    );
}

#[derive(Serialize)]
struct Summary {
    item: String,
    title: String,
    date: Option<String>,
    paragraphs: usize,
    first: u32,
    last: u32,
    sections: Vec<String>,
    opinions: Vec<(String, usize)>,
    warnings: Vec<String>,
    openings: BTreeMap<u32, String>,
}

fn summary(j: &Judgment) -> Summary {
    let n = j.paragraphs.len();
    let picks = [0, 1, n / 2, n - 1];
    Summary {
        item: j.item.as_ref().map(ToString::to_string).unwrap_or_default(),
        title: j.title.clone(),
        date: j.date.clone(),
        paragraphs: n,
        first: j.paragraphs[0].num,
        last: j.paragraphs[n - 1].num,
        sections: section_runs(&j.paragraphs),
        opinions: j
            .opinions
            .iter()
            .map(|o| (excerpt(&o.title, 60), o.paragraphs.len()))
            .collect(),
        warnings: j.warnings.iter().map(|w| w.code.clone()).collect(),
        openings: picks
            .iter()
            .map(|&k| {
                (
                    j.paragraphs[k].num,
                    j.paragraphs[k].text.chars().take(40).collect(),
                )
            })
            .collect(),
    }
}

#[test]
fn snapshot_chosen_flat_documents() {
    for item in ["001-59155", "001-100038", "001-103050", "001-66841"] {
        let j = parse_flat_fixture(item);
        insta::assert_yaml_snapshot!(format!("flat_{item}"), summary(&j));
    }
}

/// The opening of a paragraph as compared: white space removed (the flattening adds and moves
/// spaces around entities and spans), non-breaking hyphens as `-`, soft hyphens gone, case folded,
/// the first 40 characters.
fn opening(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '\u{ad}')
        .map(|c| if c == '\u{2011}' { '-' } else { c })
        .flat_map(char::to_lowercase)
        .take(40)
        .collect()
}

/// A printed paragraph's text without its `N. ` number.
fn strip_number(text: &str, num: u32) -> &str {
    let t = text.trim_start();
    t.strip_prefix(&format!("{num}.")).map_or(t, str::trim_start)
}

struct Agreement {
    item: String,
    theirs: usize,
    numbers: f64,
    openings: f64,
    /// Their numbers we lack, and those whose opening differs (the first few, for the table).
    missing: Vec<u32>,
    differ: Vec<u32>,
}

/// `theirs`: the other source's numbered paragraphs (number, text), the first of each number (a
/// number met again is a restart: an opinion or a quotation).
fn agree(item: &str, ours: &Judgment, theirs: &[(u32, String)]) -> Agreement {
    let mine: BTreeMap<u32, String> = ours
        .paragraphs
        .iter()
        .map(|p| (p.num, opening(&p.text)))
        .collect();
    let mut first: BTreeMap<u32, String> = BTreeMap::new();
    for (n, t) in theirs {
        first.entry(*n).or_insert_with(|| opening(strip_number(t, *n)));
    }
    let have = first.keys().filter(|n| mine.contains_key(n)).count();
    let same = first.iter().filter(|(n, o)| mine.get(n) == Some(o)).count();
    for (n, o) in first
        .iter()
        .filter(|(n, o)| mine.get(n).is_some_and(|m| m != *o))
        .take(3)
    {
        println!("  {item} § {n}: ours {:?} / theirs {o:?}", mine[n]);
    }
    let missing = first.keys().filter(|n| !mine.contains_key(n)).copied().collect();
    let differ = first
        .iter()
        .filter(|(n, o)| mine.get(n).is_some_and(|m| m != *o))
        .map(|(n, _)| *n)
        .collect();
    Agreement {
        missing,
        differ,
        item: item.to_string(),
        theirs: first.len(),
        numbers: have as f64 / first.len() as f64,
        openings: same as f64 / first.len() as f64,
    }
}

/// Minimum mean and minimum worst judgment, for numbers and for openings.
struct Thresholds {
    numbers: (f64, f64),
    openings: (f64, f64),
}

/// Prints the table and checks the mean and the worst judgment against the thresholds.
fn report(source: &str, rows: &[Agreement], expected: usize, min: &Thresholds) {
    assert_eq!(rows.len(), expected, "{source}: judgments in common");
    println!(
        "agreement with {source}:\n{:<12} {:>6} {:>8} {:>9}",
        "itemid", "theirs", "numbers", "openings"
    );
    for r in rows {
        let few = |v: &[u32]| ranges(&v[..v.len().min(12)]);
        println!(
            "{:<12} {:>6} {:>8.3} {:>9.3}  missing [{}] differ [{}]",
            r.item,
            r.theirs,
            r.numbers,
            r.openings,
            few(&r.missing),
            few(&r.differ)
        );
    }
    for (what, f, (min_mean, min_worst)) in [
        (
            "numbers",
            (|r: &Agreement| r.numbers) as fn(&Agreement) -> f64,
            min.numbers,
        ),
        ("openings", |r: &Agreement| r.openings, min.openings),
    ] {
        let mean = rows.iter().map(f).sum::<f64>() / rows.len() as f64;
        let worst = rows.iter().min_by(|a, b| f(a).total_cmp(&f(b))).unwrap();
        println!(
            "{source} {what}: mean {mean:.3}, worst {:.3} ({})",
            f(worst),
            worst.item
        );
        assert!(mean >= min_mean, "{source} {what}: mean {mean:.3} < {min_mean}");
        assert!(
            f(worst) >= min_worst,
            "{source} {what}: {} at {:.3} < {min_worst}",
            worst.item,
            f(worst)
        );
    }
}

fn flat_items() -> BTreeMap<String, PathBuf> {
    flat_fixtures()
        .into_iter()
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect()
}

#[derive(serde::Deserialize)]
struct LexParagraph {
    num: Option<u32>,
    text: String,
}

#[derive(serde::Deserialize)]
struct LexJudgment {
    itemid: String,
    paragraphs: Vec<LexParagraph>,
}

#[test]
fn agrees_with_lexclipr_segmentation() {
    let items = flat_items();
    let path = lexbench_core::testing::fixtures_dir().join("hudoc/lexclipr/judgments.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let lj: LexJudgment = serde_json::from_str(line).unwrap();
        if !items.contains_key(&lj.itemid) {
            continue;
        }
        let ours = parse_flat_fixture(&lj.itemid);
        let theirs: Vec<(u32, String)> = lj
            .paragraphs
            .into_iter()
            .filter_map(|p| p.num.map(|n| (n, p.text)))
            .collect();
        rows.push(agree(&lj.itemid, &ours, &theirs));
    }
    rows.sort_by(|a, b| a.item.cmp(&b.item));
    // Measured: numbers 1.000 for every judgment; openings mean 0.967. Openings differ where the
    // texts differ: 001-168972 is a later revision of the text (`by virtue of section` for `under
    // section`), and in 001-86798 LexCLiPR's own numbering slips by one from § 58 (HUDOC prints `58.
    // In this case, the Court notes …`, which LexCLiPR lacks; its 58-68 are the printed 59-69), so
    // the worst judgment is held to 0.5 while the mean must stay at 0.95.
    let min = Thresholds {
        numbers: (0.99, 0.98),
        openings: (0.95, 0.5),
    };
    report("hudoc/lexclipr", &rows, 18, &min);
}

#[test]
fn agrees_with_text_reader() {
    let dir = lexbench_core::testing::fixtures_dir().join("hudoc/text");
    let mut rows = Vec::new();
    for (item, _) in flat_items() {
        let p = dir.join(format!("{item}.txt"));
        if !p.exists() {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let name = format!("{item}.txt");
        let t = parse_text(&bytes, &name, item_from_file_name(&name)).unwrap();
        let theirs: Vec<(u32, String)> = t.paragraphs.into_iter().map(|p| (p.num, p.text)).collect();
        rows.push(agree(&item, &parse_flat_fixture(&item), &theirs));
    }
    // Measured: numbers 1.000 for every judgment, openings 0.999 (one paragraph of 001-201756).
    let min = Thresholds {
        numbers: (0.99, 0.98),
        openings: (0.98, 0.95),
    };
    report("hudoc/text", &rows, 11, &min);
}
