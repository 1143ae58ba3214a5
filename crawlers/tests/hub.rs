//! The Hub client against the Hub-shaped loopback server (`lexbench_crawlers::fake_hub`).
//!
//! Properties checked:
//! - a revision resolves to its commit, with every file's size and hash; `refs/pr/N` revisions are
//!   percent-encoded whole; an unknown repository or revision is a 404 error naming it;
//! - a download follows the LFS redirect, verifies, and leaves the file and no `.part`;
//! - a connection cut mid-body is resumed in the same call with `Range: bytes={kept}-`, and the
//!   file is byte-identical;
//! - a partial file left by an earlier process is resumed with a `Range` request;
//! - (issue 54, item 11) a body that stops coming without closing is given up on after the stall
//!   timeout and resumed from where it stopped; when every attempt stalls the error says the
//!   download stalled ([`Error::Source`]), not that the Hub is out of reach;
//! - a file served with a flipped byte under its listed sha256 (LFS) or git blob id (not LFS) is
//!   refused naming the file and both hashes, and its partial file is deleted;
//! - a refused connection is [`Error::Unreachable`] at once, naming the URL;
//! - `HF_TOKEN`'s bearer token reaches the API and resolve requests, and not the storage host.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::ProgressBar;
use lexbench_core::sha256_hex;
use lexbench_crawlers::Error;
use lexbench_crawlers::fake_hub::{
    Cut, FakeCommit, FakeHub, FakeHubConfig, FakeHubFile, FakeRepo, HubFaults, fake_commit,
};
use lexbench_crawlers::hub::{HubClient, HubConfig, HubRef, select};

fn scratch(name: &str) -> PathBuf {
    let d =
        lexbench_core::testing::scratch_root().join(format!("lexbench-hub-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn weights() -> Vec<u8> {
    (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn repo() -> FakeRepo {
    let main = fake_commit("main");
    FakeRepo {
        repo: "org/tiny-bert".into(),
        commits: vec![FakeCommit {
            sha: main.clone(),
            files: vec![
                FakeHubFile::new("config.json", r#"{"model_type":"bert"}"#, false),
                FakeHubFile::new("tokenizer.json", r#"{"version":"1.0"}"#, false),
                FakeHubFile::new("model.safetensors", weights(), true),
                FakeHubFile::new("pytorch_model.bin", vec![1u8; 100], true),
            ],
        }],
        refs: BTreeMap::from([("main".into(), main.clone()), ("refs/pr/1".into(), main)]),
    }
}

fn client(base: &str) -> HubClient {
    HubClient::new(HubConfig {
        endpoint: base.to_owned(),
        backoff: Duration::from_millis(10),
        ..HubConfig::default()
    })
    .unwrap()
}

async fn hub(faults: HubFaults) -> FakeHub {
    FakeHub::start(FakeHubConfig {
        repos: vec![repo()],
        redirect_lfs: true,
        faults,
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn revisions_resolve_and_files_download_verified() {
    let server = hub(HubFaults::default()).await;
    let c = client(&server.base_url());
    let r: HubRef = "hf:org/tiny-bert@refs/pr/1".parse().unwrap();
    let info = c.repo_info(&r).await.unwrap();
    assert_eq!(info.sha, fake_commit("main"));
    assert!(
        server.log()[0]
            .target
            .ends_with("/revision/refs%2Fpr%2F1?blobs=true"),
        "{:?}",
        server.log()
    );
    let sel = select(&info, "hf:org/tiny-bert").unwrap();
    assert_eq!(sel.skipped, ["pytorch_model.bin"]);
    let dir = scratch("ok");
    for f in &sel.files {
        let d = c
            .download(
                "org/tiny-bert",
                &info.sha,
                f,
                &dir.join(&f.path),
                &ProgressBar::hidden(),
            )
            .await
            .unwrap();
        assert_eq!(d.resumed_from, None);
        assert_eq!(d.sha256, sha256_hex(&std::fs::read(dir.join(&f.path)).unwrap()));
    }
    assert_eq!(std::fs::read(dir.join("model.safetensors")).unwrap(), weights());
    assert!(!dir.join("model.safetensors.part").exists());
    // The LFS file came through the redirect.
    assert!(server.log().iter().any(|l| l.status == 302));
    assert!(
        server
            .log()
            .iter()
            .any(|l| l.target.starts_with("/lfs-store/") && l.status == 200)
    );
    // Unknown repository and revision: 404 naming them.
    for (bad, needle) in [
        ("hf:org/missing", "no org/missing at revision main"),
        ("hf:org/tiny-bert@v9", "no org/tiny-bert at revision v9"),
    ] {
        let e = c.repo_info(&bad.parse().unwrap()).await.unwrap_err().to_string();
        assert!(e.contains("HTTP 404") && e.contains(needle), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_cut_connection_resumes_with_a_range_request() {
    let after = 123_457;
    let server = hub(HubFaults {
        cut: Some(Cut {
            path: "model.safetensors".into(),
            after,
            times: 1,
        }),
        ..HubFaults::default()
    })
    .await;
    let c = client(&server.base_url());
    let info = c.repo_info(&"hf:org/tiny-bert".parse().unwrap()).await.unwrap();
    let sel = select(&info, "x").unwrap();
    let f = sel.files.iter().find(|f| f.path == "model.safetensors").unwrap();
    let dir = scratch("cut");
    let d = c
        .download(
            "org/tiny-bert",
            &info.sha,
            f,
            &dir.join(&f.path),
            &ProgressBar::hidden(),
        )
        .await
        .unwrap();
    assert_eq!(d.resumed_from, Some(after));
    assert_eq!(std::fs::read(dir.join(&f.path)).unwrap(), weights());
    let ranges: Vec<Option<String>> = server
        .log()
        .into_iter()
        .filter(|l| l.target.starts_with("/lfs-store/"))
        .map(|l| l.range)
        .collect();
    // The first answer is cut; the second asks for the rest.
    assert_eq!(
        ranges,
        [None, Some(format!("bytes={after}-"))],
        "{:?}",
        server.log()
    );

    // A partial file left by another process: resumed from its length.
    let dir2 = scratch("left");
    std::fs::create_dir_all(&dir2).unwrap();
    std::fs::write(dir2.join("model.safetensors.part"), &weights()[..1000]).unwrap();
    let d = c
        .download(
            "org/tiny-bert",
            &info.sha,
            f,
            &dir2.join(&f.path),
            &ProgressBar::hidden(),
        )
        .await
        .unwrap();
    assert_eq!(d.resumed_from, Some(1000));
    assert_eq!(std::fs::read(dir2.join(&f.path)).unwrap(), weights());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_download_resumes_then_is_refused_as_stalled() {
    let after = 100_001;
    let stalling = |times| HubFaults {
        stall: Some(Cut {
            path: "model.safetensors".into(),
            after,
            times,
        }),
        ..HubFaults::default()
    };
    let client = |base: &str, attempts| {
        HubClient::new(HubConfig {
            endpoint: base.to_owned(),
            backoff: Duration::from_millis(10),
            stall_timeout: Duration::from_secs(1),
            attempts,
            ..HubConfig::default()
        })
        .unwrap()
    };
    let server = hub(stalling(1)).await;
    let c = client(&server.base_url(), 5);
    let info = c.repo_info(&"hf:org/tiny-bert".parse().unwrap()).await.unwrap();
    let sel = select(&info, "x").unwrap();
    let f = sel.files.iter().find(|f| f.path == "model.safetensors").unwrap();
    let dir = scratch("stall");
    let d = c
        .download(
            "org/tiny-bert",
            &info.sha,
            f,
            &dir.join(&f.path),
            &ProgressBar::hidden(),
        )
        .await
        .unwrap();
    assert_eq!(d.resumed_from, Some(after));
    assert_eq!(std::fs::read(dir.join(&f.path)).unwrap(), weights());

    // One attempt, and it stalls (a resumed attempt would start past the stall).
    let server = hub(stalling(1)).await;
    let c = client(&server.base_url(), 1);
    let dir = scratch("stalled");
    let e = c
        .download(
            "org/tiny-bert",
            &info.sha,
            f,
            &dir.join(&f.path),
            &ProgressBar::hidden(),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Source { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains(
            "model.safetensors: the download stalled: fewer than 16384 bytes in 1 s (after 1 attempts;"
        ) && e.contains(&format!("{after} of 300000 bytes kept")),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn corrupt_files_are_refused_and_deleted() {
    let server = hub(HubFaults {
        corrupt: ["model.safetensors".to_owned(), "config.json".to_owned()].into(),
        ..HubFaults::default()
    })
    .await;
    let c = client(&server.base_url());
    let info = c.repo_info(&"hf:org/tiny-bert".parse().unwrap()).await.unwrap();
    let sel = select(&info, "x").unwrap();
    let dir = scratch("corrupt");
    for (path, what) in [("model.safetensors", "sha256"), ("config.json", "git blob id")] {
        let f = sel.files.iter().find(|f| f.path == path).unwrap();
        let e = c
            .download(
                "org/tiny-bert",
                &info.sha,
                f,
                &dir.join(path),
                &ProgressBar::hidden(),
            )
            .await
            .unwrap_err();
        let Error::Mismatch {
            file,
            what: w,
            expected,
            got,
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!((file.as_str(), w.as_str()), (path, what));
        assert_ne!(expected, got);
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "{path}: {what} {got} does not match the {expected} listed"
            )),
            "{msg}"
        );
        assert!(!dir.join(path).exists() && !dir.join(format!("{path}.part")).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn unreachable_hubs_and_tokens() {
    // A port nobody listens on: bind, note, drop.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let e = client(&base)
        .repo_info(&"hf:org/tiny-bert".parse().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e}");
    assert!(
        e.to_string().starts_with(&format!(
            "could not reach {base}/api/models/org/tiny-bert/revision/main?blobs=true: connection failed"
        )),
        "{e}"
    );

    let server = hub(HubFaults {
        token: Some("hf_test".into()),
        ..HubFaults::default()
    })
    .await;
    let e = client(&server.base_url())
        .repo_info(&"hf:org/tiny-bert".parse().unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("HTTP 401") && e.contains("HF_TOKEN"), "{e}");
    let c = HubClient::new(HubConfig {
        endpoint: server.base_url(),
        token: Some("hf_test".into()),
        ..HubConfig::default()
    })
    .unwrap();
    let info = c.repo_info(&"hf:org/tiny-bert".parse().unwrap()).await.unwrap();
    let sel = select(&info, "x").unwrap();
    let dir = scratch("token");
    for f in &sel.files {
        c.download(
            "org/tiny-bert",
            &info.sha,
            f,
            &dir.join(&f.path),
            &ProgressBar::hidden(),
        )
        .await
        .unwrap();
    }
    for l in server.log().iter().skip(1) {
        let storage = l.target.starts_with("/lfs-store/");
        // reqwest keeps the header on a same-host redirect; the real storage host is another host,
        // where it is dropped. What matters here: every Hub request carried it.
        if !storage {
            assert_eq!(l.authorization.as_deref(), Some("Bearer hf_test"), "{l:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
