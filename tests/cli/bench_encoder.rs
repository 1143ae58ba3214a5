//! `lexbench bench-encoder --mode real` without the Python side (`--no-python`): the report of candle
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

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::lexbench;

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lexbench-cli-bench-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn minilm() -> String {
    crate::common::minilm().to_string_lossy().into_owned()
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
    let args = [
        &["bench-encoder", "--mode", "real", "--no-python", "--pairs", "1"][..],
        extra,
    ]
    .concat();
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
    let args = [
        &["bench-encoder", "--mode", "gemm", "--no-python", "--pairs", "1"][..],
        extra,
    ]
    .concat();
    lexbench(data, &args)
}

#[test]
fn the_gemm_workload_reports_the_configs_products() {
    let dir = temp_dir("gemm");
    let data = dir.join("data");
    // Only config.json, no weights: H 16, I 48, 2 heads of 8, exact GELU, 6 positions.
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
