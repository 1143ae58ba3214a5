//! Shared helpers of the guide tests: loading the Art 2 partial pages.

use lexbench_core::ids::GuideId;
use lexbench_core::testing::fixture;
use lexbench_parsers::guide::{self, ParsedGuide, resolve};

/// The Art 2 partial pages (page texts in the CSV's `page_text` column), parsed.
pub fn art2_pages() -> ParsedGuide {
    let rows: Vec<Vec<String>> =
        lexbench_core::csv::read(&fixture("guides/text/guide_art_2_eng_pages_with_citations.csv"))
            .expect("csv")
            .into_iter()
            .map(|r| r.fields)
            .collect();
    assert_eq!(rows[0][3], "page_text");
    let pages: Vec<(Option<u32>, &str)> = rows[1..].iter().map(|r| (None, r[3].as_str())).collect();
    guide::parse_pages(
        "guide_art_2_eng_pages_with_citations.csv",
        GuideId::new("guide_art_2_eng").expect("id"),
        &pages,
    )
    .expect("parses")
}

/// HUDOC metadata of the fixtures (`hudoc/meta/`), for resolution.
#[allow(dead_code)] // not every test binary resolves
pub fn metadata() -> resolve::Metadata {
    let texts: Vec<(&str, String)> = resolve::Metadata::FILES
        .iter()
        .map(|f| {
            (
                *f,
                std::fs::read_to_string(fixture(&format!("hudoc/meta/{f}"))).expect("meta readable"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = texts.iter().map(|(n, t)| (*n, t.as_str())).collect();
    resolve::Metadata::from_files(&refs).expect("metadata parses")
}
