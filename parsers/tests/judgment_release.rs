//! The published ECtHR paragraph-retrieval release (Santosh et al. 2024, `../shared/fixtures/tum_release/`)
//! against our parses of the judgments it cites that are among the fixtures.
//!
//! Properties checked:
//! - every paragraph the release cites in 001-175180, 001-176769, 001-177299, 001-177406, 001-179556
//!   and 001-175667 exists in our parse of that judgment (the release's numbers are printed
//!   paragraph numbers, so an off-by-one segmentation would show here);
//! - each cited paragraph lies in the Court's assessment (`THE LAW`), where the guides' principles come
//!   from, not in the procedure or the facts;
//! - the test prints each query beside the start of every paragraph it cites (run with
//!   `--nocapture`), so a reader can see that they match.
#![allow(missing_docs, clippy::unwrap_used)]

mod judgment_common;

use std::collections::BTreeMap;

use judgment_common::parse_fixture;
use lexbench_core::Section;
use lexbench_parsers::judgment::segment::excerpt;
use serde::Deserialize;

#[derive(Deserialize)]
struct Row {
    split: String,
    judgment_id: String,
    query: String,
    paragraphs: Vec<u32>,
}

const CITED: [&str; 6] = [
    "001-175180",
    "001-176769",
    "001-177299",
    "001-177406",
    "001-179556",
    "001-175667",
];

#[test]
fn every_cited_paragraph_exists_and_reads_like_its_query() {
    let dir = lexbench_core::testing::fixtures_dir().join("tum_release");
    // (judgment, query) → (splits, paragraphs); `seen` repeats `testing`, so rows are deduplicated.
    let mut rows: BTreeMap<(String, String), (Vec<String>, Vec<u32>)> = BTreeMap::new();
    for split in [
        "training",
        "validation",
        "testing",
        "seen",
        "unseen_article",
        "unseen",
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{split}.jsonl"))).unwrap();
        for line in text.lines() {
            let r: Row = serde_json::from_str(line).unwrap();
            if CITED.contains(&r.judgment_id.as_str()) {
                let e = rows
                    .entry((
                        r.judgment_id,
                        r.query.split_whitespace().collect::<Vec<_>>().join(" "),
                    ))
                    .or_default();
                e.0.push(r.split);
                e.1 = r.paragraphs;
            }
        }
    }
    assert!(
        rows.len() >= 15,
        "expected the release rows of the six judgments, got {}",
        rows.len()
    );
    let mut checked = 0;
    let mut missing = Vec::new();
    let mut outside_law = Vec::new();
    for id in CITED {
        let j = parse_fixture(&format!("{id}.docx"));
        for ((_, query), (splits, nums)) in rows.iter().filter(|((i, _), _)| i == id) {
            println!("\n{id} [{}] {query}", splits.join(", "));
            for n in nums {
                match j.paragraphs.iter().find(|p| p.num == *n) {
                    Some(p) => {
                        checked += 1;
                        println!("  § {n} ({:?}): {}", p.section, excerpt(&p.text, 110));
                        if p.section != Section::Law {
                            outside_law.push(format!("{id} § {n} {:?}", p.section));
                        }
                    }
                    None => missing.push(format!("{id} § {n}")),
                }
            }
        }
    }
    println!("\n{checked} cited paragraphs found");
    assert!(
        missing.is_empty(),
        "cited paragraphs missing from our parse: {missing:?}"
    );
    assert!(checked >= 50, "{checked}");
    assert!(
        outside_law.is_empty(),
        "cited paragraphs outside THE LAW: {outside_law:?}"
    );
}
