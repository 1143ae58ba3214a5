//! End-to-end test of `lexbench crawl` against the local HUDOC stand-in.
//!
//! Properties checked: the command crawls metadata and bodies into `DATA/raw` (objects, manifest,
//! `index/hudoc_metadata.jsonl`), prints a summary, exits 0; a second run with `--offline` makes no
//! request and writes the same index; a guide that does not exist makes the command exit 1 naming it;
//! a bad date exits 2 naming the option; bad arguments of every source (a base URL that is no http(s)
//! URL with a host, an empty document type, a year outside 1959..=next year, `--since` after
//! `--until`) exit 2 at once, naming the option, before the raw store is touched.

use std::path::PathBuf;
use std::process::Output;

use lexbench_crawlers::date::Date;
use lexbench_crawlers::fake_hudoc::{FakeConfig, FakeItem, FakeServer, Faults, Rule, Scripted};

fn scratch(name: &str) -> PathBuf {
    let d = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-crawl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs the binary off the async workers, so the in-process server keeps answering meanwhile.
async fn lexbench(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(crate::common::bin())
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

/// Issue 35, item 6: a bot check stops `lexbench crawl` at once (exit 2, one line naming what to do,
/// one request, no retries); `--user-agent` sets the User-Agent, so the same crawl passes with one
/// the site accepts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_check_exits_2_and_user_agent_is_settable() {
    let items = (0..5)
        .map(|n| FakeItem {
            itemid: format!("001-{}", 600_000 + n),
            docname: format!("CASE OF UA {n} v. NOWHERE"),
            doctype: "HEJUD".into(),
            lang: "ENG".into(),
            kpdate: Date::from_days(Date { y: 2021, m: 1, d: 1 }.days() + n),
            placeholder: false,
            docx: Some(format!("docx body {n}").into_bytes()),
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
    let data = scratch("bot-check");
    let d = data.to_string_lossy().into_owned();
    let base = server.base_url();
    let run = |ua: &str| {
        args(&[
            "--data",
            &d,
            "crawl",
            "hudoc",
            "--base-url",
            &base,
            "--since",
            "2021-01-01",
            "--until",
            "2021-01-31",
            "--rate",
            "500",
            "--user-agent",
            ua,
        ])
    };
    let out = lexbench(run("python-requests/2.31.0")).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for needle in ["HTTP 403 with a bot check", "--user-agent", "--rate", "--offline"] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert_eq!(server.log().len(), 1, "the bot check was retried");

    let out = lexbench(run("lexbench-test (crawler@example.org)")).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("bodies: 5 fetched"), "{stderr}");
}

/// Issue 35, item 2: a DOCX that HUDOC fails to convert every time (500) made `lexbench crawl hudoc`
/// exit 1 on every rerun. Its HTML body is taken instead: exit 0, the body index says `html`, and a
/// rerun does not ask for that DOCX again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docx_failing_for_good_is_taken_as_html_and_exits_0() {
    let items = (0..4)
        .map(|n| FakeItem {
            itemid: format!("001-{}", 208_029 + n),
            docname: format!("CASE OF HTML {n} v. NOWHERE"),
            doctype: "HEJUD".into(),
            lang: "ENG".into(),
            kpdate: Date::from_days(Date { y: 2020, m: 11, d: 1 }.days() + n),
            placeholder: false,
            docx: Some(format!("docx body {n}").into_bytes()),
            html: Some(format!("<html><body><p>1.  Text {n}</p></body></html>")),
            columns: Default::default(),
        })
        .collect();
    let server = FakeServer::start(FakeConfig {
        items,
        faults: Faults {
            scripted: vec![Rule {
                target_contains: "id=001-208029&filename".into(),
                answer: Scripted::ServerError,
                times: 0,
            }],
            ..Faults::default()
        },
        ..FakeConfig::default()
    })
    .await
    .unwrap();
    let data = scratch("docx-gone");
    let d = data.to_string_lossy().into_owned();
    let base = server.base_url();
    let a = args(&[
        "--data",
        &d,
        "crawl",
        "hudoc",
        "--base-url",
        &base,
        "--since",
        "2020-11-01",
        "--until",
        "2020-11-30",
        "--rate",
        "500",
        "--retries",
        "1",
    ]);
    for run in 0..2 {
        let out = lexbench(a.clone()).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "run {run}: {stderr}");
        assert!(
            stderr.contains("1 bodies taken as HTML because their DOCX fails for good")
                && stderr.contains("001-208029: DOCX failed for good"),
            "run {run}: {stderr}"
        );
    }
    let docx_asked = server
        .log()
        .iter()
        .filter(|l| l.target.contains("id=001-208029&filename"))
        .count();
    assert_eq!(docx_asked, 2, "the rerun asked for the DOCX again");
    let index = std::fs::read_to_string(data.join("raw/index/hudoc_bodies.jsonl")).unwrap();
    assert!(
        index
            .lines()
            .any(|l| l.contains("\"001-208029\"") && l.contains("\"format\":\"html\"")),
        "{index}"
    );
}

/// Issue 35, item 4: `crawl bsard --base-url …/resolve/main` got 404 for all three files (renamed in
/// 2023) and `build bsard` wanted the v1 names. The renamed files are crawled and built, from the
/// store and from a folder holding them under their current names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bsard_is_crawled_and_built_from_the_renamed_files() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample/bsard");
    let repo = "/datasets/maastrichtlawtech/bsard/resolve/main";
    let folder = scratch("bsard-renamed-folder");
    std::fs::create_dir_all(&folder).unwrap();
    let mut files = std::collections::BTreeMap::new();
    for (old, new) in lexbench_crawlers::bsard::RENAMED {
        let body = std::fs::read(sample.join(old)).unwrap();
        std::fs::write(folder.join(new), &body).unwrap();
        files.insert(format!("{repo}/{new}"), ("text/csv".to_owned(), body));
    }
    let server = FakeServer::start(FakeConfig {
        files,
        ..FakeConfig::default()
    })
    .await
    .unwrap();
    let data = scratch("bsard-renamed");
    let d = data.to_string_lossy().into_owned();
    let base = format!("{}{repo}", server.base_url());
    let out = lexbench(args(&[
        "--data",
        &d,
        "crawl",
        "bsard",
        "--base-url",
        &base,
        "--rate",
        "500",
    ]))
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("bsard: 3 files stored, 0 failed"), "{stderr}");
    for from in [None, Some(folder.to_string_lossy().into_owned())] {
        let mut a = args(&["--data", &d, "build", "bsard", "--name", "bsard-renamed"]);
        if let Some(f) = &from {
            a.extend(args(&["--from", f]));
        }
        let out = lexbench(a).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{from:?}: {stderr}");
    }
}

/// Runs the binary with a deadline: a command that is still running after `secs` is killed, and the
/// test fails instead of hanging (a bad base URL used to be retried for 52 s).
fn lexbench_within(secs: u64, args: &[&str]) -> Output {
    use std::process::{Command, Stdio};
    let mut child = Command::new(crate::common::bin())
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lexbench");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "lexbench {args:?} still running after {secs} s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Issue 21, item 10: crawl arguments are validated up front.
#[test]
fn bad_crawl_arguments_exit_2_at_once() {
    let data = scratch("bad-args");
    let d = data.to_string_lossy().into_owned();
    let next_year = (Date::today().y + 1).to_string();
    let too_late = format!("{}-01-01", Date::today().y + 2);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["hudoc", "--base-url", "not-a-url"],
            "--base-url \"not-a-url\"",
        ),
        (
            vec!["hudoc", "--base-url", "ftp://hudoc.example"],
            "--base-url \"ftp://hudoc.example\"",
        ),
        (vec!["hudoc", "--base-url", "http://"], "--base-url \"http://\""),
        (vec!["hudoc", "--base-url", ""], "--base-url \"\""),
        (vec!["hudoc", "--doctype", ""], "--doctype"),
        (vec!["hudoc", "--doctype", "HEJUD,"], "--doctype"),
        (vec!["hudoc", "--since", "99999-01-01"], "--since 99999-01-01"),
        (vec!["hudoc", "--since", "1800-01-01"], "--since 1800-01-01"),
        (vec!["hudoc", "--until", &too_late], "--until"),
        (
            vec!["hudoc", "--since", "2021-01-01", "--until", "2020-01-01"],
            "--since 2021-01-01 is after --until 2020-01-01",
        ),
        (vec!["hudoc", "--since", "2020-02-30"], "--since"),
        (
            vec!["guides", "--ks-base", "not-a-url"],
            "--ks-base \"not-a-url\"",
        ),
        (
            vec!["guides", "--www-base", "mailto:x@example.org"],
            "--www-base \"mailto:x@example.org\"",
        ),
        (
            vec!["bsard", "--base-url", "not-a-url"],
            "--base-url \"not-a-url\"",
        ),
        (
            vec![
                "bsard",
                "--base-url",
                "http://mirror.example",
                "--ejustice-base",
                "ejustice",
            ],
            "--ejustice-base \"ejustice\"",
        ),
    ];
    for (rest, why) in cases {
        let mut a = vec!["--data", &d, "crawl"];
        a.extend(&rest);
        let out = lexbench_within(10, &a);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rest:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(why) && stderr.lines().count() == 1,
            "{rest:?}: {stderr}"
        );
        assert!(!data.join("raw").exists(), "{rest:?} touched the raw store");
    }
    // The bounds themselves are accepted: offline, with an empty store, the crawl runs and reports the
    // search page it lacks (exit 1), rather than refusing the arguments (exit 2).
    let until = format!("{next_year}-12-31");
    let out = lexbench_within(
        10,
        &[
            "--data",
            &d,
            "crawl",
            "hudoc",
            "--since",
            "1959-01-01",
            "--until",
            &until,
            "--offline",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("metadata: 0 documents"), "{stderr}");
    assert!(stderr.contains("not in the store (offline)"), "{stderr}");
}
