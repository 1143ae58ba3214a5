//! `lexbench-bench --mode real` without the Python side (`--no-python`): the report of candle
//! on real paragraphs, with the padding of both batchings.
//!
//! Properties checked:
//! - a corpus line that is not a judgment, a missing file and a file without numbered paragraphs
//!   are errors (exit 2) naming the file (and the line), before any model is loaded;
//! - on a corpus whose token lengths are known (`court` is one WordPiece token of MiniLM), the JSON
//!   report gives the length distribution after `--max-len` truncation and the padding of candle's
//!   batching (`SentenceEncoder::embed`: token length ascending) and of sentence-transformers'
//!   (character count descending, rebuilt here without Python), both hand-counted; the first
//!   `--real-passages` paragraphs are taken in file order, each at its own length in the FLOPs;
//! - by default the workload reads the lexclipr fixture and truncates at `run dense`'s default, the
//!   model's `max_seq_length` (256 for MiniLM), while the other workloads keep 128;
//! - `--mode gemm` reads only the folder's `config.json` (a folder without one is an error naming it)
//!   and reports its five products at `--batch` × `--max-len` rows (truncated to the model's
//!   positions) with hand-counted FLOPs, each engine of candle per shape, ONNX Runtime off, and a layer
//!   total whose seconds are the four linear products' per call, summed round by round; the share of
//!   the measured FMA throughput is there exactly when the throughput was measured (not in a debug
//!   build).
//! - with the real Python side (PyTorch and NumPy from `scripts/hf-replicas`' environment), the gemm
//!   workload runs PyTorch on every product and NumPy's BLAS on each linear one, on the same values
//!   (outputs within 1e-5 of candle's), and the layer total's ratios include both;
//! - `--train-step-only` (a tiny random BERT) reports the DPR training step as a task: 8 examples of
//!   56 sequences, FLOPs 3 × the hand-counted forward of each, per round seconds whose median and
//!   best give examples/s and GFLOP/s against the peak; with a stand-in Python (no torch) answering
//!   `scripts/bench_train_step.py`'s protocol, one PyTorch step is asked per round, and candle /
//!   PyTorch per pair is PyTorch's seconds over candle's, with median and range.

use std::path::{Path, PathBuf};
use std::process::Output;

// The tiny random BERT folder the baselines' tests use (one writer of it in the workspace).
#[path = "../../baselines/tests/common/mod.rs"]
mod common;

/// `lexbench-bench ARGS…`; `_data` is a data directory, which the bench never reads (it must stay
/// absent).
fn lexbench(_data: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lexbench-bench"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run lexbench-bench")
}

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-bench-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The MiniLM folder `scripts/fetch-models` installs (missing is a failure naming the script).
fn minilm() -> String {
    let m = root().join("models/minilm");
    assert!(
        m.join("model.safetensors").is_file() && m.join("config.json").is_file(),
        "model minilm is not installed in {}: run scripts/fetch-models",
        m.display()
    );
    m.to_string_lossy().into_owned()
}

/// `{"itemid": ITEM, "paragraphs": [{"num": 1, "text": "court court …"}, …]}` with `court` repeated
/// `words[i]` times in paragraph `i + 1`.
fn judgment(item: &str, words: &[usize]) -> String {
    let paragraphs: Vec<serde_json::Value> = words
        .iter()
        .enumerate()
        .map(|(i, &k)| serde_json::json!({"num": i + 1, "text": vec!["court"; k].join(" ")}))
        .collect();
    serde_json::json!({"itemid": item, "paragraphs": paragraphs}).to_string()
}

fn real(data: &Path, extra: &[&str]) -> Output {
    let args = [&["--mode", "real", "--no-python", "--pairs", "1"][..], extra].concat();
    lexbench(data, &args)
}

#[test]
fn a_bad_corpus_is_an_error_naming_the_file_and_line() {
    let dir = temp_dir("bad");
    let data = dir.join("data");
    let file = dir.join("corpus.jsonl");
    let bad = r#"{"itemid": "001-2", "paragraphs": [{"num": "one", "text": "x"}]}"#;
    std::fs::write(&file, format!("{}\n\n{bad}\n", judgment("001-1", &[3]))).unwrap();
    let f = file.to_str().unwrap();
    // A model that does not exist: the corpus is read first.
    let model = dir.join("no-model");
    let m = model.to_str().unwrap();
    let out = real(&data, &["--texts", f, "--real-passages", "5", "--model", m]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("{f}:3:")), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    // Enough paragraphs before the bad line: it is not read.
    let out = real(&data, &["--texts", f, "--real-passages", "1", "--model", m]);
    assert!(!stderr(&out).contains(&format!("{f}:3:")), "{}", stderr(&out));

    let missing = dir.join("missing.jsonl");
    let out = real(&data, &["--texts", missing.to_str().unwrap(), "--model", m]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.jsonl"), "{}", stderr(&out));

    let empty = dir.join("unnumbered.jsonl");
    let line = r#"{"itemid": "001-3", "paragraphs": [{"num": null, "text": "a heading"}]}"#;
    std::fs::write(&empty, format!("{line}\n")).unwrap();
    let out = real(&data, &["--texts", empty.to_str().unwrap(), "--model", m]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no paragraph"), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_real_workload_reports_lengths_and_both_paddings() {
    let m = minilm();
    let dir = temp_dir("real");
    let data = dir.join("data");
    let file = dir.join("corpus.jsonl");
    // Words 3, 1, 20 | 1, 6 | 9 → tokens ([CLS] + words + [SEP], at most 16) 5, 3, 16, 3, 8 | (11, not
    // taken: --real-passages 5).
    let lines = [
        judgment("001-1", &[3, 1, 20]),
        judgment("001-2", &[1, 6]),
        judgment("001-3", &[9]),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let f = file.to_str().unwrap();
    let args = [
        "--format",
        "json",
        "--model",
        &m,
        "--texts",
        f,
        "--real-passages",
        "5",
        "--batch",
        "2",
        "--max-len",
        "16",
    ];
    let out = real(&data, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["settings"]["real_max_len"], 16);
    let task = &report["tasks"][0];
    assert_eq!(task["spec"]["name"], "real");
    assert_eq!(task["spec"]["items"], 5);
    let r = &task["real"];
    assert_eq!(r["source"], f);
    // Lengths 3 3 5 8 16: median 5, mean 7, p90 = the 5th = 16.
    let l = &r["lengths"];
    assert_eq!(
        (&l["passages"], &l["tokens"], &l["min"], &l["max"], &l["p90"]),
        (&5.into(), &35.into(), &3.into(), &16.into(), &16.into())
    );
    assert_eq!((l["median"].as_f64(), l["mean"].as_f64()), (Some(5.0), Some(7.0)));
    // candle: [3 3] [5 8] [16] → 3 pad tokens; sentence-transformers by characters, longest first:
    // [16 8] [5 3] [3] → 8 + 2 = 10.
    let b = &r["batchings"];
    assert_eq!(b[0]["engine"], "candle");
    assert_eq!((&b[0]["batches"], &b[0]["pad_tokens"]), (&3.into(), &3.into()));
    assert_eq!(b[1]["engine"], "st");
    assert_eq!((&b[1]["batches"], &b[1]["pad_tokens"]), (&3.into(), &10.into()));
    assert!((b[1]["padding_share"].as_f64().unwrap() - 10.0 / 35.0).abs() < 1e-12);
    // FLOPs: MiniLM (L 6, H 384, I 1536) at each passage's own length.
    let flops: f64 = [3.0, 3.0, 5.0, 8.0, 16.0]
        .iter()
        .map(|t: &f64| 6.0 * (8.0 * t * 384.0 * 384.0 + 4.0 * t * t * 384.0 + 4.0 * t * 384.0 * 1536.0))
        .sum();
    let got = task["spec"]["flops"].as_f64().unwrap();
    assert!((got / flops - 1.0).abs() < 1e-9, "{got} vs {flops}");
    let candle = &task["engines"][0];
    assert_eq!(candle["engine"], "candle");
    let per_s = candle["median_per_s"].as_f64().unwrap();
    let tokens_per_s = candle["median_tokens_per_s"].as_f64().unwrap();
    assert!(
        (tokens_per_s / per_s - 7.0).abs() < 1e-6,
        "{tokens_per_s} {per_s}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn by_default_the_fixture_is_read_at_run_denses_truncation() {
    let m = minilm();
    let dir = temp_dir("default");
    let out = real(&dir.join("data"), &["--model", &m, "--real-passages", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("truncation 256 tokens"), "{report}");
    assert!(report.contains("hudoc/lexclipr/judgments.jsonl"), "{report}");
    assert!(report.contains("real tokens/s"), "{report}");
    assert!(report.contains("batching of st: batches 1"), "{report}");
    std::fs::remove_dir_all(&dir).ok();
}

fn gemm(data: &Path, extra: &[&str]) -> Output {
    let args = [&["--mode", "gemm", "--no-python", "--pairs", "1"][..], extra].concat();
    lexbench(data, &args)
}

/// `dir/model` holding only a config.json, no weights: H 16, I 48, 2 heads of 8, exact GELU, 6
/// positions.
fn gemm_model(dir: &Path) -> PathBuf {
    let model = dir.join("model");
    std::fs::create_dir_all(&model).unwrap();
    let cfg = lexbench_baselines::encoder::BertConfig {
        hidden_size: 16,
        intermediate_size: 48,
        num_attention_heads: 2,
        max_position_embeddings: 6,
        ..lexbench_baselines::encoder::BertConfig::tiny()
    };
    std::fs::write(model.join("config.json"), serde_json::to_string(&cfg).unwrap()).unwrap();
    model
}

#[test]
fn the_gemm_workload_reports_the_configs_products() {
    let dir = temp_dir("gemm");
    let data = dir.join("data");
    let model = gemm_model(&dir);
    let m = model.to_str().unwrap();
    let args = [
        "--format",
        "json",
        "--model",
        m,
        "--batch",
        "2",
        "--max-len",
        "8",
        "--gemm-repeats",
        "3",
    ];
    let out = gemm(&data, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["settings"]["ort"], false);
    let g = &report["gemm"];
    // 8 tokens truncated to the model's 6 positions: 2 × 6 = 12 rows.
    assert_eq!(
        (&g["rows"], &g["seq"], &g["repeats"]),
        (&12.into(), &6.into(), &3.into())
    );
    // (product, m, k, n, products per call, the encoder's call, FLOPs of one call).
    let want = [
        ("qkv", 12, 16, 48, 1, "linear", 18_432.0),
        ("attention-output", 12, 16, 16, 1, "linear", 6_144.0),
        ("ffn-up", 12, 16, 48, 1, "matmul", 18_432.0),
        ("ffn-down", 12, 48, 16, 1, "linear", 18_432.0),
        // 2 sequences × 2 heads, scores (6 × 8)·(8 × 6) and context (6 × 6)·(6 × 8): 8 × 2·6·8·6.
        ("attention", 6, 8, 6, 8, "fused_attention", 4_608.0),
    ];
    let shapes = g["shapes"].as_array().unwrap();
    assert_eq!(shapes.len(), want.len());
    let tasks = report["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), want.len());
    let mut layer_seconds = 0.0;
    for ((s, t), (name, m, k, n, products, call, flops)) in shapes.iter().zip(tasks).zip(want) {
        let sh = &s["shape"];
        assert_eq!(sh["product"], name);
        let dims = (&sh["m"], &sh["k"], &sh["n"], &sh["products"], &sh["call"]);
        assert_eq!(
            dims,
            (&m.into(), &k.into(), &n.into(), &products.into(), &call.into()),
            "{name}"
        );
        assert_eq!(s["flops"].as_f64(), Some(flops), "{name}");
        assert_eq!(t["spec"]["name"], format!("gemm-{name}"));
        assert_eq!(t["spec"]["items"], 3);
        assert_eq!(t["spec"]["flops"].as_f64(), Some(3.0 * flops), "{name}");
        let engines: Vec<&str> = t["engines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["engine"].as_str().unwrap())
            .collect();
        assert_eq!(engines, ["candle", "candle-matmul"], "{name}");
        for f in s["engines"].as_array().unwrap() {
            match f["measured_gflops"].as_f64() {
                Some(measured) => {
                    let share = f["gflops"].as_f64().unwrap() / measured;
                    assert!((f["share_of_measured"].as_f64().unwrap() - share).abs() < 1e-9);
                }
                None => {
                    assert!(f["share_of_measured"].is_null());
                    assert!(g["not_measured"].is_string(), "{g}");
                }
            }
        }
        if name != "attention" {
            layer_seconds += t["engines"][0]["seconds"][0].as_f64().unwrap() / 3.0;
        }
    }
    if cfg!(debug_assertions) {
        assert!(g["not_measured"].as_str().unwrap().contains("debug build"), "{g}");
    }
    let total = &g["layer_total"];
    assert_eq!(
        total["products"],
        serde_json::json!(["qkv", "attention-output", "ffn-up", "ffn-down"])
    );
    assert_eq!(total["flops"].as_f64(), Some(61_440.0));
    assert_eq!(total["engines"][0]["engine"], "candle");
    let candle = total["engines"][0]["seconds"][0].as_f64().unwrap();
    assert!(
        (candle / layer_seconds - 1.0).abs() < 1e-12,
        "{candle} {layer_seconds}"
    );
    let gflops = total["engines"][0]["gflops"].as_f64().unwrap();
    assert!(
        (gflops * candle * 1e9 / 61_440.0 - 1.0).abs() < 1e-9,
        "{gflops} {candle}"
    );
    assert_eq!(total["ratios"][0]["denominator"], "candle-matmul");

    // The report for people ends with the summary.
    let out = gemm(&data, &args[2..]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("gemm summary: the encoder's matrix products at 12 rows (batch 2 × 6 tokens)"),
        "{text}"
    );
    assert!(
        text.contains("  qkv (12 × 16)·(16 × 48) [kernels::linear], 0.0000 GFLOP: candle "),
        "{text}"
    );
    assert!(
        text.contains("layer total candle / candle-matmul per pair: "),
        "{text}"
    );

    // A folder without config.json.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = gemm(&data, &["--model", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("config.json"), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).ok();
}

/// The Python with PyTorch and NumPy that `scripts/hf-replicas --check` (run by `scripts/test --full`
/// and CI) installs: `$LEXBENCH_HF_VENV`, default `target/hf-ref-venv`. Missing is a failure, not a
/// skip (the test that needs it is `#[ignore]`d in a newcomer's `scripts/test`).
fn torch_python() -> PathBuf {
    let venv =
        std::env::var_os("LEXBENCH_HF_VENV").map_or_else(|| root().join("target/hf-ref-venv"), PathBuf::from);
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "{} not found: run scripts/hf-replicas --env (scripts/test --full does), or set LEXBENCH_HF_VENV",
        python.display()
    );
    python
}

/// The gemm workload with the real Python side (`scripts/bench_encoder.py` under PyTorch and
/// NumPy): every product is also run by PyTorch, and each linear product by NumPy's BLAS
/// (`openblas`) on the same drawn values, checked against candle's output; attention has no
/// `openblas` engine; the layer total and its ratios include both.
#[test]
#[ignore = "needs PyTorch (target/hf-ref-venv): scripts/test --full runs it, as CI does"]
fn the_gemm_workload_runs_pytorch_and_numpys_blas_on_the_same_values() {
    let dir = temp_dir("gemm-python");
    let data = dir.join("data");
    let model = gemm_model(&dir);
    let python = torch_python();
    let args = [
        "--mode",
        "gemm",
        "--no-ort",
        "--pairs",
        "1",
        "--format",
        "json",
        "--model",
        model.to_str().unwrap(),
        "--python",
        python.to_str().unwrap(),
        "--batch",
        "2",
        "--max-len",
        "8",
        "--gemm-repeats",
        "2",
    ];
    let out = lexbench(&data, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["notes"], serde_json::json!([]), "{}", report["notes"]);
    for t in report["tasks"].as_array().unwrap() {
        let name = t["spec"]["name"].as_str().unwrap();
        let engines = t["engines"].as_array().unwrap();
        let names: Vec<&str> = engines.iter().map(|e| e["engine"].as_str().unwrap()).collect();
        if name == "gemm-attention" {
            assert_eq!(names, ["candle", "candle-matmul", "torch"], "{name}");
        } else {
            assert_eq!(names, ["candle", "candle-matmul", "torch", "openblas"], "{name}");
            let blas = &engines[3];
            assert!(blas["label"].as_str().unwrap().starts_with("NumPy "), "{blas}");
            let diff = blas["max_abs_diff"].as_f64().unwrap();
            assert!(diff < 1e-5, "{name}: {diff}");
            assert_eq!(seconds_of(blas).len(), 1);
        }
    }
    let ratios: Vec<&str> = report["gemm"]["layer_total"]["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["denominator"].as_str().unwrap())
        .collect();
    assert_eq!(ratios, ["candle-matmul", "torch", "openblas"]);
    std::fs::remove_dir_all(&dir).ok();
}

fn train_step(data: &Path, extra: &[&str]) -> Output {
    let args = [&["--train-step-only", "--max-len", "8"][..], extra].concat();
    lexbench(data, &args)
}

/// FLOPs of one forward pass of [`BertConfig::tiny`] (L 2, H 32, I 64) over `t` tokens, counted
/// by hand: per layer the four projections 8·T·H², the attention 4·T²·H, the feed-forward 4·T·H·I.
fn tiny_forward(t: f64) -> f64 {
    2.0 * (8.0 * t * 32.0 * 32.0 + 4.0 * t * t * 32.0 + 4.0 * t * 32.0 * 64.0)
}

fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn median_of(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn seconds_of(engine: &serde_json::Value) -> Vec<f64> {
    engine["seconds"].as_array().unwrap().iter().map(num).collect()
}

#[test]
fn the_training_step_reports_rates_flops_and_shares_per_round() {
    let dir = temp_dir("train-step");
    let data = dir.join("data");
    let model = common::tiny_folder("bench-train-step").unwrap();
    let m = model.to_str().unwrap();
    let args = ["--format", "json", "--no-python", "--pairs", "3", "--model", m];
    let out = train_step(&data, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks = report["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{report}");
    let spec = &tasks[0]["spec"];
    assert_eq!(spec["name"], "train-step");
    assert_eq!((&spec["items"], &spec["unit"]), (&8.into(), &"examples".into()));
    // 8 examples × (query + positive + 5 negatives) = 56 sequences, every one truncated to 8 tokens;
    // forward + backward counted as 3 forwards.
    assert_eq!(num(&spec["mean_tokens"]), 8.0);
    let flops = 3.0 * 56.0 * tiny_forward(8.0);
    assert!((num(&spec["flops"]) / flops - 1.0).abs() < 1e-12, "{spec}");
    let formula = spec["flop_formula"].as_str().unwrap();
    assert!(
        formula.starts_with("3 × the forward FLOPs") && formula.contains("approximation"),
        "{formula}"
    );
    let engines = tasks[0]["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 1);
    let candle = &engines[0];
    assert_eq!(candle["engine"], "candle");
    let secs = seconds_of(candle);
    assert_eq!(secs.len(), 3);
    let med = median_of(&secs);
    let best = secs.iter().copied().fold(f64::INFINITY, f64::min);
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
    assert!(close(num(&candle["median_per_s"]), 8.0 / med), "{candle}");
    assert!(close(num(&candle["best_per_s"]), 8.0 / best), "{candle}");
    let gflops = num(&candle["median_gflops"]);
    assert!(close(gflops, flops / med / 1e9), "{candle}");
    assert!(close(
        num(&candle["share_of_peak"]),
        gflops / num(&candle["peak_gflops"])
    ));
    match candle["measured_gflops"].as_f64() {
        Some(m) => assert!(close(num(&candle["share_of_measured"]), gflops / m)),
        None => assert!(candle["share_of_measured"].is_null()),
    }
    if cfg!(debug_assertions) {
        assert!(candle["measured_gflops"].is_null(), "{candle}");
    }
    // Without PyTorch: no pair to take a ratio of.
    assert_eq!(tasks[0]["ratios"], serde_json::json!([]));

    // The report for people.
    let out = train_step(&data, &args[2..]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "3 pairs (engines alternate, one untimed warm-up pass each, 200 ms pause before each pass)",
        "task train-step: one DPR training step: 8 examples × (query + 1 positive + 5 negatives) = 56 sequences",
        "  FLOPs: 3 × the forward FLOPs of every sequence",
        "examples/s median (best ",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A stand-in for the bench Python (no torch needed): it answers `scripts/bench_train_step.py`'s
/// protocol, 0.25 s a step, and leaves its arguments, input and requests in `dir`.
#[cfg(unix)]
fn fake_python(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = dir.display();
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$@" > '{d}/args.txt'
while [ $# -gt 0 ]; do
  if [ "$1" = --input ]; then cp "$2" '{d}/input.json'; fi
  shift
done
echo '{{"ready": true, "threads": 1, "engines": {{"torch": {{"label": "fake torch", "cpu_capability": "DEFAULT"}}}}, "checks": {{"train-step": {{"torch": [0.0]}}}}}}'
while read -r line; do
  echo "$line" >> '{d}/requests.txt'
  echo '{{"seconds": 0.25}}'
done
"#
    );
    let path = dir.join("fake-python");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[test]
fn candle_and_pytorch_alternate_step_by_step_with_per_pair_ratios() {
    let dir = temp_dir("train-step-pairs");
    let data = dir.join("data");
    let model = common::tiny_folder("bench-train-step-pairs").unwrap();
    let python = fake_python(&dir);
    let m = model.to_str().unwrap();
    let py = python.to_str().unwrap();
    let args = ["--format", "json", "--pairs", "3", "--model", m, "--python", py];
    let out = train_step(&data, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The Python side got the step's script, the torch engine alone, and the step's texts.
    let argv = std::fs::read_to_string(dir.join("args.txt")).unwrap();
    let argv: Vec<&str> = argv.lines().collect();
    assert!(argv[0].ends_with("scripts/bench_train_step.py"), "{argv:?}");
    assert!(argv.windows(2).any(|w| w == ["--engines", "torch"]), "{argv:?}");
    // PyTorch runs where candle runs: here the CPU (a CUDA build on a GPU passes `cuda:N`).
    assert!(argv.windows(2).any(|w| w == ["--device", "cpu"]), "{argv:?}");
    assert_eq!(report["device"], "cpu");
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("input.json")).unwrap()).unwrap();
    let t = &input["tasks"]["train-step"];
    assert_eq!(
        (&t["kind"], &t["negatives"], &t["max_len"]),
        (&"train_step".into(), &5.into(), &8.into())
    );
    assert_eq!(t["queries"].as_array().unwrap().len(), 8);
    assert_eq!(t["passages"].as_array().unwrap().len(), 48);
    // One request per round: PyTorch's warm-up step is its own, before its ready line.
    let requests = std::fs::read_to_string(dir.join("requests.txt")).unwrap();
    let requests: Vec<serde_json::Value> = requests
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        requests,
        vec![serde_json::json!({"task": "train-step", "engine": "torch"}); 3]
    );

    let task = &report["tasks"][0];
    let engines = task["engines"].as_array().unwrap();
    let names: Vec<&str> = engines.iter().map(|e| e["engine"].as_str().unwrap()).collect();
    assert_eq!(names, ["candle", "torch"]);
    let (candle, torch) = (&engines[0], &engines[1]);
    assert_eq!(torch["label"], "fake torch");
    assert_eq!(seconds_of(torch), vec![0.25; 3]);
    assert_eq!(
        (num(&torch["median_per_s"]), num(&torch["best_per_s"])),
        (32.0, 32.0)
    );
    // The check: candle's loss before the first step against the fake's 0.
    let loss = num(&torch["max_abs_diff"]);
    assert!(loss > 0.0 && loss.is_finite(), "{torch}");
    assert!(candle["max_abs_diff"].is_null());
    // Candle / PyTorch per pair: PyTorch's seconds over candle's, round by round.
    let r = &task["ratios"][0];
    assert_eq!(
        (&r["numerator"], &r["denominator"]),
        (&"candle".into(), &"torch".into())
    );
    let want: Vec<f64> = seconds_of(candle).iter().map(|s| 0.25 / s).collect();
    let per_pair: Vec<f64> = r["per_pair"].as_array().unwrap().iter().map(num).collect();
    assert_eq!(per_pair.len(), 3);
    for (a, b) in per_pair.iter().zip(&want) {
        assert!((a / b - 1.0).abs() < 1e-12, "{per_pair:?} {want:?}");
    }
    assert!((num(&r["median"]) / median_of(&want) - 1.0).abs() < 1e-12);
    let lo = want.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = want.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!((num(&r["min"]), num(&r["max"])), (lo, hi));

    let out = train_step(&data, &args[2..]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  fake torch: 32.00 examples/s median (best 32.00)"),
        "{text}"
    );
    assert!(text.contains("  candle / torch per pair: "), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--device cuda` in a build without the `cuda` feature is refused when the arguments are read
/// (exit 2, naming the flag), never run on the CPU instead.
#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_is_refused_by_a_cpu_only_build() {
    for device in ["cuda", "cuda:1"] {
        let out = lexbench(Path::new("."), &["--device", device, "--no-python"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("built without CUDA"), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}
