//! The generated query strings against the published release's (DATA.md §3).
//!
//! Properties checked:
//! - of the release's 37 Article 2 queries, those whose headings all appear on the Art 2 partial pages
//!   (at least 8 leaf headings do) are generated from those pages, equal modulo whitespace;
//! - how many match exactly, after collapsing whitespace, and after removing whitespace is measured and
//!   snapshotted, with the pairs side by side (release string | generated string).

use std::collections::BTreeSet;

use lexbench_core::testing::fixture;
use lexbench_parsers::guide::query::modulo_whitespace;
use lexbench_parsers::guide::text::squash;
use serde_json::{Value, json};

mod guide_common;

fn release_queries(prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for split in ["training", "validation", "testing", "unseen_article", "unseen"] {
        let path = fixture(&format!("tum_release/{split}.jsonl"));
        for line in std::fs::read_to_string(&path).expect("release readable").lines() {
            let row: Value = serde_json::from_str(line).expect("JSON row");
            let q = row["query"].as_str().expect("query string");
            if q.starts_with(prefix) {
                out.insert(q.to_owned());
            }
        }
    }
    out
}

#[test]
fn art_2_queries_equal_the_release_modulo_whitespace() {
    let release = release_queries("Article 2. Right to life");
    assert_eq!(release.len(), 37);
    let g = guide_common::art2_pages();
    let mut pairs = Vec::new();
    let (mut exact, mut squashed, mut compacted) = (0, 0, 0);
    for r in &release {
        let hit = g
            .queries
            .iter()
            .find(|q| modulo_whitespace(&q.text) == modulo_whitespace(r));
        if let Some(q) = hit {
            compacted += 1;
            exact += usize::from(q.text == *r);
            squashed += usize::from(squash(&q.text) == squash(r));
            pairs.push(json!({ "release": r, "generated": q.text, "path": q.path }));
        }
    }
    assert!(compacted >= 8, "only {compacted} release queries generated");
    insta::assert_yaml_snapshot!(json!({
        "release_queries": release.len(),
        "generated_queries": g.queries.len(),
        "equal_exactly": exact,
        "equal_whitespace_collapsed": squashed,
        "equal_whitespace_removed": compacted,
        "pairs": pairs,
    }));
}
