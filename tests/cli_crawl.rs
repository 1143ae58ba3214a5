//! End-to-end test of `lexbench crawl` against the local HUDOC stand-in.
//!
//! Properties checked: the command crawls metadata and bodies into `DATA/raw` (objects, manifest,
//! `index/hudoc_metadata.jsonl`), prints a summary, exits 0; a second run with `--offline` makes no
//! request and writes the same index; a guide that does not exist makes the command exit 1 naming it;
//! a bad date exits 2 naming the option.

use std::path::PathBuf;
use std::process::Output;

use lexbench_crawlers::date::Date;
use lexbench_crawlers::fake_hudoc::{FakeConfig, FakeItem, FakeServer};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lexbench-cli-crawl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs the binary off the async workers, so the in-process server keeps answering meanwhile.
async fn lexbench(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_lexbench"))
            .args(args)
            .env_remove("RUST_LOG")
            .output()
            .expect("run lexbench")
    })
    .await
    .expect("join")
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_hudoc_then_offline() {
    let items = (0..30)
        .map(|n| FakeItem {
            itemid: format!("001-{}", 500_000 + n),
            docname: format!("CASE OF CLI {n} v. NOWHERE"),
            doctype: "HEJUD".into(),
            lang: "ENG".into(),
            kpdate: Date::from_days(Date { y: 2020, m: 1, d: 1 }.days() + n),
            placeholder: false,
            docx: (n % 5 != 0).then(|| format!("docx body {n}").into_bytes()),
            html: None,
            columns: Default::default(),
        })
        .collect();
    let server = FakeServer::start(FakeConfig {
        items,
        ..FakeConfig::default()
    })
    .await
    .unwrap();
    let data = scratch("hudoc");
    let d = data.to_string_lossy().into_owned();
    let base = server.base_url();
    let common = [
        "--data",
        &d,
        "crawl",
        "hudoc",
        "--base-url",
        &base,
        "--since",
        "2020-01-01",
        "--until",
        "2020-12-31",
    ];
    let mut online = args(&common);
    online.extend(args(&["--rate", "500"]));
    let out = lexbench(online).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("metadata: 30 documents"), "{stderr}");
    assert!(
        stderr.contains("bodies: 24 fetched, 0 already stored, 6 without a body"),
        "{stderr}"
    );
    let index = data.join("raw/index/hudoc_metadata.jsonl");
    let first = std::fs::read(&index).unwrap();
    assert_eq!(first.iter().filter(|b| **b == b'\n').count(), 30);
    assert!(data.join("raw/manifest.jsonl").exists());

    let requests = server.log().len();
    std::fs::remove_file(&index).unwrap();
    let mut offline = args(&common);
    offline.push("--offline".into());
    let out = lexbench(offline).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("bodies: 0 fetched, 24 already stored, 6 without a body"),
        "{stderr}"
    );
    assert_eq!(server.log().len(), requests, "offline made requests");
    assert_eq!(std::fs::read(&index).unwrap(), first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_reports_failures_and_bad_input() {
    let server = FakeServer::start(FakeConfig::default()).await.unwrap();
    let data = scratch("guides");
    let d = data.to_string_lossy().into_owned();
    let base = server.base_url();
    let out = lexbench(args(&[
        "--data",
        &d,
        "crawl",
        "guides",
        "--ids",
        "guide_art_98_eng",
        "--ks-base",
        &base,
        "--www-base",
        &base,
        "--rate",
        "500",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("guide_art_98_eng"), "{stderr}");
    assert!(stderr.contains("not a PDF"), "{stderr}");

    let out = lexbench(args(&[
        "--data",
        &d,
        "crawl",
        "hudoc",
        "--since",
        "2020-02-30",
        "--offline",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since"));
}
