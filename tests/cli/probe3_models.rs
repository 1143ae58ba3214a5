//! Issue 54 (a hostile probe of the command line), items 4, 8 and 11: model folders and the Hub.
//!
//! Properties checked:
//! - (item 8) a model folder whose `config.json` is a link to `/dev/urandom`, whose `tokenizer.json`
//!   is a link to `/dev/zero`, or whose `model.safetensors` is a FIFO is refused by `encode`,
//!   `run dense` and `submit --model`: exit 2, one error naming the file and saying it is not a
//!   regular file (nothing is read from it, nothing waits on it); a symbolic link to a regular file
//!   is fine; a `config.json` or `tokenizer.json` over its documented cap (16 MiB, 64 MiB) is refused
//!   naming the file and the cap;
//! - (item 4) weights holding a NaN or an infinity are refused by `encode` and `run dense` when the
//!   model loads: exit 2, the error names `model.safetensors` and the tensor; no vector is printed,
//!   no run is written;
//! - (item 11) `models fetch hf:…`: a file listed at 10¹⁵ bytes is refused at once, naming the file
//!   and the limit, with no download and no retry (not "out of reach"); a server that drips the
//!   weights at one byte a second is given up on after the stall timeout (one second here),
//!   saying the download stalled; an empty `model.safetensors` or one that is no safetensors file is
//!   refused before anything is installed.
//!
//! The commands run under a watchdog (a few minutes) so that a regression that hangs (the FIFO, the
//! drip) fails instead of blocking the suite; no test measures time.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{bin, sample_data, tiny_bert};

fn scratch(name: &str) -> PathBuf {
    let d = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-probe3-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cmd` to its end, or kills it after `limit` (a watchdog for regressions that hang, not a
/// measure): the output then says so in its stderr.
pub(crate) fn run_watched(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lexbench");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            let s = child.wait().unwrap();
            let mut stderr = e.join().unwrap();
            stderr
                .extend_from_slice(format!("\n[watchdog: still running after {limit:?}, killed]").as_bytes());
            return Output {
                status: s,
                stdout: o.join().unwrap(),
                stderr,
            };
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

const WATCHDOG: Duration = Duration::from_secs(240);

fn lexbench_watched(data: Option<&Path>, args: &[&str]) -> Output {
    lexbench_watched_env(data, args, &[])
}

fn lexbench_watched_env(data: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    for (k, v) in env {
        c.env(k, v);
    }
    if let Some(d) = data {
        c.arg("--data").arg(d);
    }
    c.args(args)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env_remove("LEXBENCH_MODELS")
        .env("LEXBENCH_GIT_REV", "test-revision");
    run_watched(c, WATCHDOG)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit 2 with every needle in stderr.
fn refused(out: &Output, needles: &[&str], what: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what}: exit {:?}\n{stderr}",
        out.status
    );
    for n in needles {
        assert!(stderr.contains(n), "{what}: no {n:?} in\n{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{what}: a panic\n{stderr}");
}

/// The three commands that load a model folder, over `model` (`data`: the sample data directory).
fn model_commands(model: &str, card: &str) -> Vec<(&'static str, Vec<String>)> {
    let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        ("encode", v(&["encode", "--model", model, "some text"])),
        (
            "run dense",
            v(&[
                "run",
                "dense",
                "--model",
                model,
                "--dataset",
                "ecthr",
                "--split",
                "test",
                "--system",
                "probe3",
            ]),
        ),
        (
            "submit --model",
            v(&["submit", "--model", model, "--kind", "bi-encoder", "--card", card]),
        ),
    ]
}

pub(crate) fn card(dir: &Path) -> PathBuf {
    let path = dir.join("card.toml");
    std::fs::write(
        &path,
        "name = \"Probe three\"\ndescription = \"a test model\"\nbase_model = \"none\"\nlicense = \"MIT\"\n\
         training_data = \"none\"\n",
    )
    .unwrap();
    path
}

/// Item 8: `config.json` → `/dev/urandom`, `tokenizer.json` → `/dev/zero`, `model.safetensors` a FIFO.
#[cfg(unix)]
#[test]
fn model_files_that_are_not_regular_files_are_refused() {
    let root = scratch("special");
    let data = root.join("data");
    sample_data(&data);
    let card = card(&root);
    for (file, make) in [
        ("config.json", "urandom"),
        ("tokenizer.json", "zero"),
        ("model.safetensors", "fifo"),
    ] {
        let model = root.join(format!("model-{make}"));
        tiny_bert(&model);
        let p = model.join(file);
        std::fs::remove_file(&p).unwrap();
        match make {
            "urandom" => std::os::unix::fs::symlink("/dev/urandom", &p).unwrap(),
            "zero" => std::os::unix::fs::symlink("/dev/zero", &p).unwrap(),
            _ => assert!(Command::new("mkfifo").arg(&p).status().unwrap().success()),
        }
        let kind = if make == "fifo" {
            "a FIFO"
        } else {
            "a character device"
        };
        let m = model.to_str().unwrap();
        for (what, args) in model_commands(m, card.to_str().unwrap()) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = lexbench_watched(Some(&data), &args);
            let named = p.display().to_string();
            refused(
                &out,
                &[&named, kind, "not a regular file"],
                &format!("{what} with {file} → {make}"),
            );
            assert!(
                out.stdout.is_empty() || !text(&out.stdout).contains('['),
                "{what}: printed vectors"
            );
        }
        assert!(!data.join("runs/ecthr/test/probe3.trec").exists());
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Item 8: a symbolic link to a regular file is a regular file.
#[cfg(unix)]
#[test]
fn model_files_linked_to_regular_files_load() {
    let root = scratch("links");
    let real = root.join("real");
    tiny_bert(&real);
    let model = root.join("linked");
    std::fs::create_dir_all(&model).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::os::unix::fs::symlink(real.join(f), model.join(f)).unwrap();
    }
    let out = lexbench_watched(None, &["encode", "--model", model.to_str().unwrap(), "some text"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Vec<Vec<f32>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.len(), 1);
    let _ = std::fs::remove_dir_all(&root);
}

/// Item 8: `config.json` and `tokenizer.json` over their documented caps (sparse files: no disk).
#[test]
fn model_json_files_over_their_caps_are_refused() {
    let root = scratch("caps");
    for (file, cap, label) in [
        ("config.json", 16u64 << 20, "16 MiB"),
        ("tokenizer.json", 64 << 20, "64 MiB"),
    ] {
        let model = root.join(file.replace('.', "-"));
        tiny_bert(&model);
        let p = model.join(file);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        f.set_len(cap + 1).unwrap();
        drop(f);
        let out = lexbench_watched(None, &["encode", "--model", model.to_str().unwrap(), "some text"]);
        let named = p.display().to_string();
        refused(&out, &[&named, &format!("larger than {label}")], file);
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Overwrites the first element of tensor `name` in the safetensors file `path` with the f32 `v`.
pub(crate) fn poke(path: &Path, name: &str, v: f32) {
    let mut bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let t = &header[name];
    assert_eq!(t["dtype"], "F32", "{name}: {header}");
    let at = 8 + n + t["data_offsets"][0].as_u64().unwrap() as usize;
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

/// The name of a tensor of the tiny BERT's weights ending with `suffix`.
pub(crate) fn tensor_named(path: &Path, suffix: &str) -> String {
    let bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    header
        .keys()
        .find(|k| k.ends_with(suffix))
        .unwrap_or_else(|| panic!("no tensor *{suffix} in {:?}", header.keys().collect::<Vec<_>>()))
        .clone()
}

/// Item 4: NaN or infinite weights are refused when the model loads, naming the file and tensor.
#[test]
fn non_finite_weights_are_refused_naming_the_tensor() {
    let root = scratch("nan");
    let data = root.join("data");
    sample_data(&data);
    let card = card(&root);
    for (label, v, suffix) in [
        ("NaN", f32::NAN, "layer.0.attention.self.query.weight"),
        ("infinity", f32::INFINITY, "word_embeddings.weight"),
    ] {
        let model = root.join(format!("model-{label}"));
        tiny_bert(&model);
        let weights = model.join("model.safetensors");
        let name = tensor_named(&weights, suffix);
        poke(&weights, &name, v);
        let m = model.to_str().unwrap();
        for (what, args) in model_commands(m, card.to_str().unwrap()) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = lexbench_watched(Some(&data), &args);
            let named = weights.display().to_string();
            refused(
                &out,
                &[
                    &named,
                    &format!("tensor {name} holds a non-finite weight ({label}"),
                ],
                &format!("{what} with a {label} in {name}"),
            );
            assert!(
                !text(&out.stdout).contains("null"),
                "{what}: {}",
                text(&out.stdout)
            );
        }
        assert!(!data.join("runs/ecthr/test/probe3.trec").exists());
    }
    let _ = std::fs::remove_dir_all(&root);
}

// ---- item 11: the Hub ----

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// How the loopback server below answers for `model.safetensors`.
#[derive(Clone, Copy)]
enum Weights {
    /// Listed at 10¹⁵ bytes, served as the real (short) file.
    ListedHuge,
    /// Listed and served whole, but at one byte a second.
    Drip,
}

/// A minimal Hub on 127.0.0.1: the model-info answer for `org/probe` at `main` and its files
/// (`config.json`, `tokenizer.json` as plain git files, `model.safetensors` in LFS, no redirect);
/// every request's target is logged. One request per connection; each on its own thread.
fn hub_server(mode: Weights) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let weights = lexbench_core::sha256_hex(b"placeholder").into_bytes();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("config.json", br#"{"model_type":"bert"}"#.to_vec()),
        ("tokenizer.json", br#"{"version":"1.0"}"#.to_vec()),
        ("model.safetensors", weights),
    ];
    let siblings: Vec<serde_json::Value> = files
        .iter()
        .map(|(p, b)| {
            if *p == "model.safetensors" {
                let size: u64 = match mode {
                    Weights::ListedHuge => 1_000_000_000_000_000,
                    Weights::Drip => b.len() as u64,
                };
                serde_json::json!({"rfilename": p, "size": size, "blobId": "0".repeat(40),
                    "lfs": {"sha256": lexbench_core::sha256_hex(b), "size": size, "pointerSize": 130}})
            } else {
                serde_json::json!({"rfilename": p, "size": b.len(),
                    "blobId": lexbench_crawlers::hub::git_blob_id(b)})
            }
        })
        .collect();
    let info = serde_json::json!({"id": "org/probe", "sha": COMMIT, "siblings": siblings}).to_string();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&log);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let (info, files, log) = (info.clone(), files.clone(), Arc::clone(&log));
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match s.read(&mut b) {
                        Ok(1) => head.push(b[0]),
                        _ => return,
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                log.lock().unwrap().push(target.clone());
                let reply = |s: &mut std::net::TcpStream, status: &str, body: &[u8]| {
                    let _ = write!(
                        s,
                        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(body);
                };
                if target.starts_with("/api/models/org/probe/revision/main") {
                    reply(&mut s, "200 OK", info.as_bytes());
                    return;
                }
                let prefix = format!("/org/probe/resolve/{COMMIT}/");
                let Some((_, body)) = target
                    .strip_prefix(&prefix)
                    .and_then(|p| files.iter().find(|(f, _)| *f == p))
                else {
                    reply(&mut s, "404 Not Found", b"no");
                    return;
                };
                match (target.ends_with("model.safetensors"), mode) {
                    (true, Weights::Drip) => {
                        let _ = write!(
                            s,
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        for byte in body {
                            if s.write_all(&[*byte]).and_then(|()| s.flush()).is_err() {
                                return;
                            }
                            std::thread::sleep(Duration::from_secs(1));
                        }
                    }
                    _ => reply(&mut s, "200 OK", body),
                }
            });
        }
    });
    (base, seen)
}

/// `models fetch hf:org/probe` from `base` with the stall timeout at one second
/// (`LEXBENCH_HUB_STALL_TIMEOUT`, the environment form of `--stall-timeout`).
fn fetch(models: &Path, base: &str) -> Output {
    let args = [
        "models",
        "fetch",
        "--dir",
        models.to_str().unwrap(),
        "--endpoint",
        base,
        "hf:org/probe",
    ];
    lexbench_watched_env(None, &args, &[("LEXBENCH_HUB_STALL_TIMEOUT", "1")])
}

/// Item 11: a file listed over the limit is refused at once, for what it is.
#[test]
fn hub_fetch_refuses_a_file_listed_over_the_limit() {
    let (base, log) = hub_server(Weights::ListedHuge);
    let models = scratch("huge").join("models");
    let out = fetch(&models, &base);
    refused(
        &out,
        &["model.safetensors", "1000000000000000 bytes", "64 GiB"],
        "a file listed at 10^15 bytes",
    );
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("out of reach") && !stderr.contains("could not reach"),
        "{stderr}"
    );
    let got = log.lock().unwrap().clone();
    assert!(
        !got.iter().any(|t| t.ends_with("model.safetensors")),
        "the file was asked for: {got:?}"
    );
    assert!(!models.join("org--probe").exists());
}

/// Item 11: a server dripping the weights is given up on after the stall timeout.
#[test]
fn hub_fetch_gives_up_on_a_dripping_server() {
    let (base, log) = hub_server(Weights::Drip);
    let models = scratch("drip").join("models");
    let out = fetch(&models, &base);
    refused(
        &out,
        &["model.safetensors", "stalled"],
        "a server dripping 1 byte/s",
    );
    assert!(!models.join("org--probe").exists());
    let asked = log
        .lock()
        .unwrap()
        .iter()
        .filter(|t| t.ends_with("model.safetensors"))
        .count();
    assert!(asked >= 1, "{asked}");
}

/// Item 11: empty or invalid weights are refused before anything is installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_fetch_refuses_empty_or_invalid_weights() {
    use lexbench_crawlers::fake_hub::{
        FakeCommit, FakeHub, FakeHubConfig, FakeHubFile, FakeRepo, fake_commit,
    };
    let repo = |name: &str, weights: Vec<u8>| FakeRepo {
        repo: format!("org/{name}"),
        commits: vec![FakeCommit {
            sha: fake_commit(name),
            files: vec![
                FakeHubFile::new("config.json", r#"{"model_type":"bert"}"#, false),
                FakeHubFile::new("tokenizer.json", r#"{"version":"1.0"}"#, false),
                FakeHubFile::new("model.safetensors", weights, true),
            ],
        }],
        refs: BTreeMap::from([("main".into(), fake_commit(name))]),
    };
    let server = FakeHub::start(FakeHubConfig {
        repos: vec![repo("empty", Vec::new()), repo("garbage", vec![0xAB; 5000])],
        redirect_lfs: true,
        ..FakeHubConfig::default()
    })
    .await
    .unwrap();
    let base = server.base_url();
    for (name, needle) in [
        ("empty", "0 bytes: not a safetensors file"),
        ("garbage", "not a safetensors file"),
    ] {
        let models = scratch(&format!("weights-{name}")).join("models");
        let (m, b) = (models.clone(), base.clone());
        let out = tokio::task::spawn_blocking(move || {
            lexbench_watched(
                None,
                &[
                    "models",
                    "fetch",
                    "--dir",
                    m.to_str().unwrap(),
                    "--endpoint",
                    &b,
                    &format!("hf:org/{name}"),
                ],
            )
        })
        .await
        .unwrap();
        refused(
            &out,
            &["model.safetensors", needle, "nothing was installed"],
            name,
        );
        assert!(!models.join(format!("org--{name}")).exists(), "{name}: installed");
    }
}
