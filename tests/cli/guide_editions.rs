//! Issue 35, item 7: guide editions.
//!
//! Properties checked: `build ecthr` writes each guide's "Last update" date on the dataset card; when
//! the guides' dates are more than a year apart (a build mixing editions) it warns on stderr and on
//! the card, naming the oldest and newest guide; guides of one edition give no warning.

use crate::common::{lexbench, sample_data};

fn scratch(name: &str) -> std::path::PathBuf {
    lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-editions-{}-{name}", std::process::id()))
}

/// Sets the `updated` date of the parsed guide `id` in `data`.
fn set_updated(data: &std::path::Path, id: &str, date: &str) {
    let path = data.join("parsed/ecthr/guides.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    let mut hit = false;
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["guide"]["id"] == id {
            v["guide"]["updated"] = date.into();
            hit = true;
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    assert!(hit, "no guide {id} in {text}");
    std::fs::write(&path, out).unwrap();
}

#[test]
fn a_build_mixing_guide_editions_warns_and_the_card_records_each_date() {
    let data = scratch("mixed");
    sample_data(&data);
    let text = std::fs::read_to_string(data.join("parsed/ecthr/guides.jsonl")).unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["guide"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(ids.len() >= 2, "{ids:?}");
    set_updated(&data, &ids[0], "2026-08-31");
    set_updated(&data, &ids[1], "2026-02-28");
    let out = lexbench(&data, &["build", "ecthr", "--name", "one-edition"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("different editions"), "{stderr}");
    let card = std::fs::read_to_string(data.join("datasets/one-edition/card.md")).unwrap();
    assert!(
        card.contains(&format!("{} 2026-08-31", ids[0])) && card.contains(&format!("{} 2026-02-28", ids[1])),
        "{card}"
    );

    set_updated(&data, &ids[1], "2022-08-31");
    let out = lexbench(&data, &["build", "ecthr", "--name", "mixed"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warning = format!(
        "warning: the guides are of different editions: \"Last update\" 2022-08-31 ({}) to 2026-08-31 ({})",
        ids[1], ids[0]
    );
    assert!(stderr.contains(&warning), "{stderr}");
    let card = std::fs::read_to_string(data.join("datasets/mixed/card.md")).unwrap();
    assert!(
        card.contains("Warning: the guides are of different editions"),
        "{card}"
    );
}
