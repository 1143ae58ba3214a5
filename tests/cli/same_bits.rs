//! The same bits on any x86-64 machine, training included (issue 72, item 5): `lexbench encode` and a
//! short training on the sample give byte-identical results on every vector path the CPU has
//! (`LEXBENCH_ISA` = avx512, avx2, portable; a path the CPU lacks is capped to one it has) and on 1, 2
//! and 3 threads (`RAYON_NUM_THREADS`; lexbench caps a count above the CPUs at the CPUs, with a
//! warning, so a 2-core machine runs 1 and 2), with a tiny random BERT written here (no download).
//!
//! Properties checked:
//! - the embeddings `encode` prints are the same bytes under every path × thread count;
//! - a DPR training (full fine-tuning, dropout on, 4 updates of 8 examples: thousands of token rows,
//!   so the bias and layer-norm gradients sum over several pieces of rows) writes the same
//!   `model.safetensors`, byte for byte, under every path × thread count, and the same run.

use crate::common::{lexbench_env, sample_data, tiny_bert};
use std::path::Path;

const PATHS: [&str; 3] = ["avx512", "avx2", "portable"];
const THREADS: [&str; 3] = ["1", "2", "3"];

fn lexbench_on(data: &Path, isa: &str, threads: &str, args: &[&str]) -> std::process::Output {
    let out = lexbench_env(
        data,
        &[("LEXBENCH_ISA", isa), ("RAYON_NUM_THREADS", threads)],
        args,
    );
    assert!(
        out.status.success(),
        "LEXBENCH_ISA={isa} RAYON_NUM_THREADS={threads} lexbench {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn encoding_and_training_give_the_same_bits_on_every_path_and_thread_count() {
    let root =
        lexbench_core::testing::scratch_root().join(format!("lexbench-same-bits-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let base = root.join("tiny-bert");
    tiny_bert(&base);
    let data = root.join("data");
    sample_data(&data);
    let cfg = root.join("bits.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
name = "bits"
model = "dpr"
base = {:?}
seed = 7

[data]
dataset = "ecthr"
val_split = ""
max_query_len = 16
max_doc_len = 48

[negatives]
bm25 = 2
random = 1

[schedule]
epochs = 1
batch_size = 8
max_steps = 4

[eval]
measure = "R@100"
top_k = 1000
"#,
            base.display().to_string()
        ),
    )
    .unwrap();
    let text = "The Court reiterates that Article 6 § 1 secures to everyone the right to a fair hearing.";
    let mut encodings = Vec::new();
    let mut weights = Vec::new();
    let mut runs = Vec::new();
    for isa in PATHS {
        for threads in THREADS {
            let enc = lexbench_on(
                &data,
                isa,
                threads,
                &[
                    "encode",
                    "--model",
                    base.to_str().unwrap(),
                    text,
                    "a second, shorter text",
                ],
            );
            encodings.push(((isa, threads), enc.stdout));
            let _ = std::fs::remove_dir_all(data.join("models/bits"));
            lexbench_on(
                &data,
                isa,
                threads,
                &[
                    "train",
                    cfg.to_str().unwrap(),
                    "--run",
                    "test",
                    "--quiet",
                    "--restart",
                ],
            );
            let w = std::fs::read(data.join("models/bits/model/model.safetensors")).expect("trained weights");
            weights.push(((isa, threads), lexbench_core::hash::sha256_hex(&w)));
            let run = std::fs::read(data.join("runs/ecthr/test/bits.trec")).expect("the run");
            runs.push(((isa, threads), lexbench_core::hash::sha256_hex(&run)));
        }
    }
    let (first, first_enc) = &encodings[0];
    assert!(!first_enc.is_empty());
    for (at, e) in &encodings {
        assert!(e == first_enc, "encode: {at:?} differs from {first:?}");
    }
    for (what, all) in [("model.safetensors", &weights), ("run", &runs)] {
        let (first, sha) = &all[0];
        for (at, s) in all.iter() {
            assert_eq!(s, sha, "{what}: {at:?} differs from {first:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
