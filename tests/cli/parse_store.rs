//! End-to-end tests of `lexbench parse store` on a raw store built here.
//!
//! Properties checked: a stored body that is no judgment (a PDF, random bytes, an HTML page with no
//! numbered paragraph such as an anti-bot challenge) is not turned into an empty judgment: it is
//! skipped and reported on stderr and in `parse_report.json` with its itemid, sha256 and URL, the
//! good judgments are still written, and the exit code is 1.

use crate::common::lexbench;
use lexbench_core::Judgment;
use lexbench_crawlers::hudoc::{BodyRecord, write_bodies_index};
use lexbench_crawlers::store::RawStore;

#[test]
fn bodies_that_are_no_judgment_are_skipped_and_named() {
    let data = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-parse-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let store = RawStore::open(data.join("raw")).expect("store");
    let fixture = |rel: &str| std::fs::read(lexbench_core::testing::fixture(rel)).expect("fixture");
    let mut state: u64 = 7;
    let random: Vec<u8> = (0..1 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let bodies: Vec<(&str, &str, Vec<u8>)> = vec![
        ("001-83979", "docx", fixture("hudoc/docx/001-83979.docx")),
        ("001-1", "docx", fixture("guides/pdf/guide_art_1_ukr_2018.pdf")),
        ("001-2", "docx", random),
        (
            "001-3",
            "html",
            b"<html><head><title>Just a moment...</title></head><body><p>Checking your browser.</p></body></html>"
                .to_vec(),
        ),
    ];
    let mut index = Vec::new();
    for (item, format, bytes) in &bodies {
        let sha256 = store.put(bytes).expect("put");
        index.push(BodyRecord {
            itemid: item.parse().expect("itemid"),
            format: (*format).to_owned(),
            url: format!("http://hudoc.test/app/conversion/{format}?id={item}"),
            sha256,
        });
    }
    drop(store);
    write_bodies_index(&data.join("raw/index/hudoc_bodies.jsonl"), &index).expect("index");

    let out = lexbench(&data, &["parse", "store"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for (rec, why) in index[1..].iter().zip([
        "a PDF, not a judgment",
        "binary data of no known format, not a judgment",
        "no numbered paragraph",
    ]) {
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("failed: {}", rec.itemid)))
            .unwrap_or_else(|| panic!("{} not reported: {stderr}", rec.itemid));
        assert!(
            line.contains(&rec.sha256) && line.contains(&rec.url) && line.contains(why),
            "{line}"
        );
    }
    let text = std::fs::read_to_string(data.join("parsed/ecthr/judgments.jsonl")).expect("judgments");
    let items: Vec<String> = text
        .lines()
        .map(|l| {
            let j: Judgment = serde_json::from_str(l).expect("a Judgment");
            j.item.expect("itemid").as_str().to_owned()
        })
        .collect();
    assert_eq!(items, ["001-83979"]);
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("parsed/ecthr/parse_report.json")).expect("report"),
    )
    .expect("JSON");
    assert_eq!(report["failures"].as_array().map(Vec::len), Some(3), "{report}");
    let _ = std::fs::remove_dir_all(&data);
}
