//! Resolution of the Art 1 and Terrorism guides' citations to itemids, using only the fixtures.
//!
//! Properties checked:
//! - every citation gets an outcome (resolved, ambiguous or unresolved with a reason), and the core
//!   record carries the itemid and method exactly when resolved;
//! - the guides' "List of cited cases" is read (entries counted);
//! - the audit (counts, rate, methods, the names not resolved with their reasons) is snapshotted, so a
//!   change in the resolution rate shows up in review;
//! - on the Art 2 partial pages, resolved itemids agree with the itemids the guide's own hyperlinks
//!   point to (at least 90%).

use lexbench_core::ids::GuideId;
use lexbench_core::testing::fixture;
use lexbench_parsers::guide::{self, resolve};

mod guide_common;

#[test]
fn resolution_audit() {
    let meta = guide_common::metadata();
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

/// The Art 2 pages CSV lists, per page, the itemids its citations link to (taken from the PDF's
/// hyperlinks by the project that made the fixture): an independent check of resolution on the
/// partial pages. Measured: how many resolved citations point to an itemid linked from the pages
/// (agreement), how many do not, and how many linked itemids the resolution reaches.
#[test]
fn art_2_resolution_agrees_with_the_guide_links() {
    let meta = guide_common::metadata();
    let mut g = guide_common::art2_pages();
    let audit = resolve::resolve_guide(&mut g, &meta);
    let rows: Vec<Vec<String>> =
        lexbench_core::csv::read(&fixture("guides/text/guide_art_2_eng_pages_with_citations.csv"))
            .expect("csv")
            .into_iter()
            .map(|r| r.fields)
            .collect();
    let mut linked = std::collections::BTreeSet::new();
    for r in &rows[1..] {
        let m: std::collections::BTreeMap<String, String> =
            serde_json::from_str(&r[2]).expect("citations column");
        linked.extend(m.into_keys());
    }
    // The guide links some cases to their French original (`AFFAIRE SOARE ET AUTRES c. ROUMANIE`);
    // resolution gives the English item. Count those through the French/English itemid table.
    let english_of: std::collections::BTreeMap<String, String> =
        lexbench_core::csv::read(&fixture("hudoc/meta/french_to_english_itemids.csv"))
            .expect("csv")
            .into_iter()
            .map(|r| r.fields)
            .skip(1)
            .filter(|r| r.len() >= 2)
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
    let via_french: std::collections::BTreeSet<String> =
        linked.iter().filter_map(|i| english_of.get(i).cloned()).collect();
    let resolved: Vec<String> = g
        .queries
        .iter()
        .flat_map(|q| &q.citations)
        .filter_map(|c| c.resolved.as_ref().map(|i| i.to_string()))
        .collect();
    let agree = resolved.iter().filter(|i| linked.contains(*i)).count();
    let agree_french = resolved
        .iter()
        .filter(|i| !linked.contains(*i) && via_french.contains(*i))
        .count();
    let disagree: std::collections::BTreeSet<&String> = resolved
        .iter()
        .filter(|i| !linked.contains(*i) && !via_french.contains(*i))
        .collect();
    let reached = linked
        .iter()
        .filter(|i| resolved.contains(i) || english_of.get(*i).is_some_and(|e| resolved.contains(e)))
        .count();
    assert!(
        (agree + agree_french) * 10 >= resolved.len() * 9,
        "agreement {agree}+{agree_french}/{}",
        resolved.len()
    );
    insta::assert_yaml_snapshot!(serde_json::json!({
        "citations": audit.citations,
        "resolved": audit.resolved,
        "resolved_agreeing_with_links": agree,
        "resolved_agreeing_through_french_links": agree_french,
        "resolved_not_linked": disagree,
        "linked_itemids": linked.len(),
        "linked_itemids_reached": reached,
    }));
}
