//! The stage orchestration of the `lexbench` library, called in process (no binary spawned).
//!
//! Properties checked:
//! - the crawl driver fetches HUDOC metadata and bodies from the local fake HUDOC into the raw store
//!   and its index, reports no problem, and a second, offline crawl rebuilds the same index from the
//!   store without a single request;
//! - the driver refuses bad settings before the raw store is created;
//! - parse store turns a small raw store (the sample crawled by the driver) into every judgment and
//!   guide, and an empty raw store is an error naming it;
//! - parse store on a raw store built by hand parses the judgment and reports the body that is no
//!   judgment by itemid and sha256, skipping it;
//! - BSARD built from a folder of CSV files and from the crawled raw store holds the same articles
//!   and questions;
//! - the whole pipeline runs in process and reports its runs, entries and pages;
//! - the trainer dispatch refuses a missing base model and a sweep without learning rates before
//!   training or writing anything;
//! - the learning-rate sweep keeps the best validation score, ties to the rate listed first.

use std::path::PathBuf;

use indicatif::ProgressBar;
use lexbench::build::{BsardSource, build_bsard};
use lexbench::crawl::{CrawlReport, FetchOptions, Source, crawl, crawl_sample, runtime};
use lexbench_core::datadir::DataDir;
use lexbench_crawlers::fake_hudoc::FakeServer;
use lexbench_crawlers::hudoc::HudocSettings;

/// A fresh data directory for one test.
fn temp_data(test: &str) -> DataDir {
    let dir: PathBuf =
        lexbench_core::testing::scratch_root().join(format!("lexbench-lib-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    DataDir::new(dir)
}

fn fast() -> FetchOptions {
    let mut o = FetchOptions::default();
    o.http.rate_per_sec = 200.0;
    o
}

#[test]
fn crawl_driver_fetches_from_the_fake_hudoc_and_recrawls_offline() {
    let data = temp_data("crawl");
    let rt = runtime().unwrap();
    let server = rt
        .block_on(FakeServer::start(lexbench::sample::fake_config().unwrap()))
        .unwrap();
    let source = Source::Hudoc(HudocSettings {
        base_url: server.base_url(),
        since: lexbench::sample::SINCE,
        until: lexbench::sample::UNTIL,
        ..HudocSettings::default()
    });
    let report = crawl(&data, &source, &fast(), &ProgressBar::hidden()).unwrap();
    assert_eq!(report.problems(), 0, "{report:?}");
    let CrawlReport::Hudoc(h) = &report else {
        panic!("{report:?}")
    };
    assert_eq!(h.metadata.records.len(), 6);
    assert_eq!(h.bodies.as_ref().unwrap().stored.len(), 6);
    let index = data.raw().join("index/hudoc_bodies.jsonl");
    let first = std::fs::read(&index).unwrap();
    assert_eq!(h.metadata_index, data.raw().join("index/hudoc_metadata.jsonl"));

    let requests = server.log().len();
    let offline = FetchOptions {
        offline: true,
        ..fast()
    };
    let again = crawl(&data, &source, &offline, &ProgressBar::hidden()).unwrap();
    assert_eq!(again.problems(), 0, "{again:?}");
    assert_eq!(server.log().len(), requests, "an offline crawl made requests");
    assert_eq!(std::fs::read(&index).unwrap(), first);
    let _ = std::fs::remove_dir_all(data.root());
}

#[test]
fn crawl_driver_refuses_bad_settings_before_opening_the_store() {
    let data = temp_data("crawl-bad");
    let source = Source::Hudoc(HudocSettings {
        base_url: "ftp://example.org".into(),
        ..HudocSettings::default()
    });
    let err = crawl(&data, &source, &fast(), &ProgressBar::hidden()).unwrap_err();
    assert!(format!("{err:#}").contains("ftp://example.org"), "{err:#}");
    assert!(!data.raw().exists(), "the raw store was created");
    let _ = std::fs::remove_dir_all(data.root());
}

#[test]
fn parse_store_of_a_small_raw_store() {
    let data = temp_data("parse");
    let empty = lexbench::parse_store::parse_store(&data, None).unwrap_err();
    assert!(format!("{empty:#}").contains("nothing to parse"), "{empty:#}");

    let c = runtime().unwrap().block_on(crawl_sample(&data)).unwrap();
    assert_eq!((c.judgments, c.bodies, c.guides, c.bsard_files), (6, 6, 2, 3));
    let s = lexbench::parse_store::parse_store(&data, None).unwrap();
    assert_eq!((s.judgments, s.guides), (6, 2), "{s:?}");
    assert!(s.failures.is_empty(), "{:?}", s.failures);
    assert!(s.queries > 0 && s.citations_resolved > 0, "{s:?}");
    for f in ["judgments.jsonl", "guides.jsonl", "parse_report.json"] {
        assert!(data.parsed().join("ecthr").join(f).is_file(), "{f}");
    }

    // BSARD: the crawled files and the same files in a folder give the same dataset content.
    let from_store = build_bsard(&data, "bsard", &BsardSource::RawStore).unwrap();
    let folder = data.root().join("bsard-csv");
    std::fs::create_dir_all(&folder).unwrap();
    for (name, text) in lexbench::sample::BSARD {
        std::fs::write(folder.join(name), text).unwrap();
    }
    let from_folder = build_bsard(&data, "bsard-folder", &BsardSource::Folder(folder)).unwrap();
    assert_eq!(from_store.written.articles, from_folder.written.articles);
    assert_eq!(from_store.written.questions, from_folder.written.questions);
    assert_eq!(from_store.written.graph, from_folder.written.graph);
    assert_eq!(from_folder.dir, data.root().join("datasets/bsard-folder"));
    let _ = std::fs::remove_dir_all(data.root());
}

#[test]
fn parse_store_skips_and_names_a_body_that_is_no_judgment() {
    use lexbench_crawlers::hudoc::{BodyRecord, write_bodies_index};
    use lexbench_crawlers::store::RawStore;
    let data = temp_data("parse-bad");
    let store = RawStore::open(data.raw()).unwrap();
    let (good_id, docx) = lexbench::sample::JUDGMENTS[0];
    let good = store.put(docx).unwrap();
    let bad = store.put(b"<html><body>Access denied</body></html>").unwrap();
    let body = |id: &str, sha: &str| BodyRecord {
        itemid: id.parse().unwrap(),
        format: "docx".into(),
        url: format!("http://127.0.0.1/{id}.docx"),
        sha256: sha.to_owned(),
    };
    let bodies = [body(good_id, &good), body("001-990199", &bad)];
    write_bodies_index(&data.raw().join("index/hudoc_bodies.jsonl"), &bodies).unwrap();

    let s = lexbench::parse_store::parse_store(&data, None).unwrap();
    assert_eq!((s.judgments, s.guides), (1, 0), "{s:?}");
    assert_eq!(s.failures.len(), 1, "{:?}", s.failures);
    assert!(
        s.failures[0].starts_with("001-990199 (docx, sha256 "),
        "{}",
        s.failures[0]
    );
    assert!(s.failures[0].contains(&bad), "{}", s.failures[0]);
    let judgments = std::fs::read_to_string(data.parsed().join("ecthr/judgments.jsonl")).unwrap();
    assert_eq!(judgments.lines().count(), 1);
    assert!(judgments.contains(good_id));
    let _ = std::fs::remove_dir_all(data.root());
}

#[test]
fn pipeline_in_process() {
    let data = temp_data("pipeline");
    let mut log = Vec::new();
    let options = lexbench::pipeline::PipelineOptions {
        name: "ecthr".into(),
        split_config: None,
    };
    let r = lexbench::pipeline::run_pipeline(&data, &options, &mut |l| log.push(l)).unwrap();
    assert!(r.on_sample);
    let runs: Vec<(&str, &str)> = r.runs.iter().map(|(d, s, _)| (d.as_str(), s.as_str())).collect();
    assert_eq!(
        runs,
        [
            ("ecthr", "test"),
            ("ecthr", "unseen_query"),
            ("ecthr", "unseen_guide"),
            ("bsard", "test")
        ]
    );
    assert_eq!(r.entries.len(), 4);
    assert!(r.markdown.is_file() && r.html.is_file());
    assert_eq!(log[0], "[1/5] crawl");
    assert!(log.iter().any(|l| l == "[5/5] leaderboard"), "{log:?}");
    let _ = std::fs::remove_dir_all(data.root());
}

#[test]
fn train_dispatch_checks_before_training() {
    use lexbench::train::{TrainRequest, train_experiment};
    let data = temp_data("train");
    let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("baselines/configs/ecthr/cpu/dpr-lora.toml");
    let cpu = lexbench_baselines::Device::Cpu;
    let missing = TrainRequest {
        config: config.clone(),
        base: Some(data.root().join("no-model")),
        ..TrainRequest::default()
    };
    let e = train_experiment(&data, &missing, &cpu).unwrap_err();
    assert!(format!("{e:#}").contains("has no config.json"), "{e:#}");
    // The CPU presets have no lr_sweep and no [sweep] grid.
    let sweep = TrainRequest {
        config,
        base: Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/minilm")),
        sweep: true,
        ..TrainRequest::default()
    };
    let e = train_experiment(&data, &sweep, &cpu).unwrap_err();
    assert!(format!("{e:#}").contains("--sweep needs lr_sweep"), "{e:#}");
    assert!(!data.models().exists(), "a model folder was written");
    let _ = std::fs::remove_dir_all(data.root());
}

#[test]
fn sweep_selection() {
    use lexbench::train::select_point;
    assert_eq!(select_point(&[]), None);
    assert_eq!(select_point(&[None]), Some(0));
    // The best score wins wherever it is listed.
    assert_eq!(select_point(&[Some(0.2), Some(0.6), Some(0.4)]), Some(1));
    // Ties keep the point listed first, wherever the tie is.
    assert_eq!(select_point(&[Some(0.5), Some(0.5)]), Some(0));
    assert_eq!(
        select_point(&[Some(0.1), Some(0.7), Some(0.3), Some(0.7)]),
        Some(1)
    );
    // A point without a validation score (or a NaN one) loses to any point with one.
    assert_eq!(select_point(&[None, Some(-1.0)]), Some(1));
    assert_eq!(select_point(&[Some(f64::NAN), Some(-1.0)]), Some(1));
    assert_eq!(select_point(&[None, Some(f64::NAN)]), Some(0));
}
