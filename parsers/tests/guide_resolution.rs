//! Resolution of the Art 1 and Terrorism guides' citations to itemids, using only the fixtures.
//!
//! Properties checked:
//! - every citation gets an outcome (resolved, ambiguous or unresolved with a reason), and the core
//!   record carries the itemid and method exactly when resolved;
//! - the guides' "List of cited cases" is read (entries counted);
//! - the audit (counts, rate, methods, the names not resolved with their reasons) is snapshotted, so a
//!   change in the resolution rate shows up in review.

use lexbench_core::ids::GuideId;
use lexbench_core::testing::fixture;
use lexbench_parsers::guide::{self, resolve};

fn metadata() -> resolve::Metadata {
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

#[test]
fn resolution_audit() {
    let meta = metadata();
    assert!(meta.len() > 25_000, "{}", meta.len());
    let mut audits = Vec::new();
    for name in ["guide_art_1_eng", "guide_terrorism_eng"] {
        let text = std::fs::read_to_string(fixture(&format!("guides/text/{name}.txt"))).expect("fixture");
        let mut g = guide::parse_text(name, GuideId::new(name).expect("id"), &text).expect("parses");
        let audit = resolve::resolve_guide(&mut g, &meta);
        assert!(
            audit.cited_cases_entries > 50,
            "{name}: {}",
            audit.cited_cases_entries
        );
        assert_eq!(
            audit.resolved + audit.ambiguous + audit.unresolved,
            audit.citations
        );
        for (q, d) in g.queries.iter().zip(&g.details) {
            for (c, cd) in q.citations.iter().zip(&d.citations) {
                let o = cd.resolution.as_ref().expect("every citation has an outcome");
                assert_eq!(
                    c.resolved.is_some(),
                    o.status == resolve::Status::Resolved,
                    "{}",
                    c.raw
                );
                assert_eq!(c.how.is_some(), c.resolved.is_some(), "{}", c.raw);
                if o.status != resolve::Status::Resolved {
                    assert!(o.reason.is_some(), "{}", c.raw);
                }
            }
        }
        audits.push(audit);
    }
    insta::assert_yaml_snapshot!(audits);
}
