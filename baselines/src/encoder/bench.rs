//! Encoder throughput, for `lexbench bench-encoder` and `cargo bench -p lexbench-baselines --bench
//! encoder`: passages per second of [`SentenceEncoder`] and, in the same run, of PyTorch (through
//! `scripts/bench_encoder.py`, which loads the same folder with sentence-transformers) on the same
//! passages, batch size, truncation and thread count. Both sides time forward + mean pooling + L2
//! normalisation on pre-tokenised, longest-padded batches; tokenisation is excluded on both sides.
//! candle is measured twice, with the encoder's fast paths off (a plain candle port: strided
//! transposed weights, separate Q/K/V projections, libm `erf` GELU, the mask added even without
//! padding) and on, so one run shows the ratio before and after the optimisations.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::encoder::{SentenceEncoder, Tokens};
use crate::error::{Error, Result, io_err};

/// Deterministic English passages of about 200 words (well over 128 tokens).
pub fn passages(n: usize) -> Vec<String> {
    const S: [&str; 8] = [
        "The applicant complained under Article 6 of the Convention about the length of the proceedings before the domestic courts.",
        "The Government contested that argument and submitted that the applicant had failed to exhaust domestic remedies.",
        "The Court reiterates that the reasonableness of the length of proceedings must be assessed in the light of the circumstances of the case.",
        "In the present case the period to be taken into consideration began when the applicant lodged his civil claim with the regional court.",
        "Having regard to its case-law on the subject, the Court considers that the length of the proceedings was excessive and failed to meet the requirement.",
        "The applicant also relied on Article 13, alleging that he had no effective remedy in respect of his complaint under Article 6.",
        "The Court notes that this complaint is not manifestly ill-founded within the meaning of Article 35 and is not inadmissible on any other grounds.",
        "There has accordingly been a violation of Article 6 § 1 of the Convention, and the Court awards the applicant a sum in respect of non-pecuniary damage.",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|i| {
            let mut p = format!("Passage {i}.");
            for _ in 0..8 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                p.push(' ');
                p.push_str(S[(state >> 33) as usize % S.len()]);
            }
            p
        })
        .collect()
}

/// One side's measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    /// Passages per second (best repetition).
    pub passages_per_s: f64,
    /// Seconds of the best repetition.
    pub seconds: f64,
    /// Mean tokens per passage after truncation.
    pub mean_tokens: f64,
    /// What ran (e.g. `candle 0.11 (release build)`, `PyTorch 2.15.0`).
    pub label: String,
}

/// Times `enc` on `texts` in batches of `batch` (after one warm-up batch), best of `repeats`.
pub fn time_candle(
    enc: &SentenceEncoder,
    texts: &[&str],
    batch: usize,
    repeats: usize,
) -> Result<Throughput> {
    if batch == 0 || texts.is_empty() {
        return Err(Error::Param(format!(
            "bench passages and batch must be at least 1, got {} and {batch}",
            texts.len()
        )));
    }
    let toks = enc.tokenizer().encode(texts)?;
    let mean_tokens = toks.iter().map(|t| t.ids.len()).sum::<usize>() as f64 / toks.len() as f64;
    let batches: Vec<Vec<&Tokens>> = toks.chunks(batch).map(|c| c.iter().collect()).collect();
    enc.encode_tokens(&batches[0])?;
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        for b in &batches {
            enc.encode_tokens(b)?;
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(Throughput {
        passages_per_s: texts.len() as f64 / best,
        seconds: best,
        mean_tokens,
        label: format!(
            "candle (lexbench, {:?}, {} build)",
            enc.model().device(),
            if cfg!(debug_assertions) { "dev" } else { "release" }
        ),
    })
}

/// What is measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchSettings {
    /// Number of passages.
    pub passages: usize,
    /// Passages per forward pass.
    pub batch: usize,
    /// Truncation length in tokens.
    pub max_len: usize,
    /// CPU threads (candle uses all available; PyTorch is told this many).
    pub threads: usize,
    /// Timed repetitions (the best counts).
    pub repeats: usize,
}

impl Default for BenchSettings {
    fn default() -> Self {
        Self {
            passages: 256,
            batch: 32,
            max_len: 128,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            repeats: 3,
        }
    }
}

/// Runs a PyTorch reference script (`scripts/bench_*.py`) with `python`: writes `input` as JSON to a
/// temporary file, passes it as `--{input_flag} FILE` after `args`, and returns the JSON object of the
/// script's last output line. A failed run or an output that is not that line is an error naming the
/// script.
pub fn run_reference_script(
    python: &str,
    script: &Path,
    args: &[String],
    input_flag: &str,
    input: &serde_json::Value,
) -> Result<serde_json::Value> {
    let dir = std::env::temp_dir().join(format!("lexbench-bench-{}-{}", input_flag, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let file = dir.join("input.json");
    std::fs::write(&file, input.to_string()).map_err(io_err(&file))?;
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .arg(format!("--{input_flag}"))
        .arg(&file)
        .output()
        .map_err(io_err(Path::new(python)));
    std::fs::remove_dir_all(&dir).ok();
    let out = out?;
    // The reference script failed (an IO-level failure of the run) or printed something else than
    // its one JSON line (its output is not in the expected format).
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(Error::Io {
            path: script.to_owned(),
            source: std::io::Error::other(format!(
                "{python} exited with {} ({})",
                out.status,
                tail.join(" | ")
            )),
        });
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or("");
    serde_json::from_str(line).map_err(|e| Error::Format {
        path: script.to_owned(),
        message: format!("{python} printed {line:?}, not the expected JSON line: {e}"),
    })
}

/// Runs `scripts/bench_encoder.py` with `python` on the same model, passages and settings.
pub fn time_pytorch(
    python: &str,
    script: &Path,
    model: &Path,
    texts: &[String],
    s: &BenchSettings,
) -> Result<Throughput> {
    let args = [
        "--model".to_owned(),
        model.display().to_string(),
        "--batch".to_owned(),
        s.batch.to_string(),
        "--max-len".to_owned(),
        s.max_len.to_string(),
        "--threads".to_owned(),
        s.threads.to_string(),
        "--repeats".to_owned(),
        s.repeats.to_string(),
    ];
    let v = run_reference_script(python, script, &args, "passages", &serde_json::json!(texts))?;
    let num = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok(Throughput {
        passages_per_s: num("passages_per_s"),
        seconds: num("seconds"),
        mean_tokens: num("mean_tokens"),
        label: format!(
            "PyTorch {} (sentence-transformers {}, {} threads)",
            v["torch"].as_str().unwrap_or("?"),
            v["sentence_transformers"].as_str().unwrap_or("?"),
            v["threads"]
        ),
    })
}

/// Measures candle on `device` and (when `python` is given) PyTorch, always on the CPU, on `model`
/// and returns the report lines.
pub fn run(
    model: &Path,
    device: &crate::Device,
    python: Option<&str>,
    script: &Path,
    s: &BenchSettings,
) -> Result<Vec<String>> {
    let options = crate::encoder::EncodeOptions {
        max_len: s.max_len,
        pooling: Some(crate::encoder::Pooling::Mean),
        normalize: true,
        batch_size: s.batch,
    };
    let mut enc = SentenceEncoder::from_dir(model, device, options)?;
    let texts = passages(s.passages);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut lines = vec![format!(
        "model {}, {} passages truncated to {} tokens, batch {}, {} threads, best of {}",
        model.display(),
        s.passages,
        s.max_len,
        s.batch,
        s.threads,
        s.repeats
    )];
    let line = |t: &Throughput| {
        format!(
            "{}: {:.2} passages/s ({:.2} s, mean {:.1} tokens)",
            t.label, t.passages_per_s, t.seconds, t.mean_tokens
        )
    };
    enc.model_mut().set_fast_paths(false)?;
    let mut plain = time_candle(&enc, &refs, s.batch, s.repeats)?;
    plain.label.push_str(", fast paths off");
    lines.push(line(&plain));
    enc.model_mut().set_fast_paths(true)?;
    let ours = time_candle(&enc, &refs, s.batch, s.repeats)?;
    lines.push(line(&ours));
    lines.push(format!(
        "fast paths on / off: {:.2}",
        ours.passages_per_s / plain.passages_per_s
    ));
    if let Some(py) = python {
        match time_pytorch(py, script, model, &texts, s) {
            Ok(theirs) => {
                lines.push(line(&theirs));
                lines.push(format!(
                    "candle / PyTorch: {:.2} with fast paths, {:.2} without",
                    ours.passages_per_s / theirs.passages_per_s,
                    plain.passages_per_s / theirs.passages_per_s
                ));
            }
            Err(e) => lines.push(format!(
                "PyTorch: unavailable ({})",
                lexbench_core::error::chain(&e)
            )),
        }
    }
    Ok(lines)
}
