//! `lexbench run colbert` zero-shot takes query and document lengths like the other rankers (issue 31,
//! item 7), with a tiny random BERT written here (no download) on the sample's ECtHR dataset.
//!
//! Properties checked:
//! - without flags the run reads at ColBERT's lengths (32, 180); `--query-max-len 12 --doc-max-len 9`
//!   reads queries at 12 tokens and documents at 9, the sidecar names both, and the ranking changes
//!   (the sample's paragraphs are longer than 9 tokens);
//! - a checkpoint without ColBERT's projection is named as late interaction with a seeded projection,
//!   not ColBERT, in the sidecar (`projection`) and on the command's output;
//! - lengths below ColBERT's minimum are refused with exit 2.

use crate::common::{lexbench, read_json as json, sample_data, tiny_bert};

#[test]
fn run_colbert_takes_query_and_document_lengths() {
    let data = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-colbert-lengths-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    sample_data(&data);
    let base = data.join("tiny-bert");
    tiny_bert(&base);
    let m = base.to_str().unwrap();
    let run = |system: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "colbert",
            "--model",
            m,
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--system",
            system,
        ];
        args.extend_from_slice(extra);
        lexbench(&data, &args)
    };
    let runs = data.join("runs/ecthr/test");

    let out = run("cb-default", &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("late interaction") && stdout.contains("not ColBERT"),
        "{stdout}"
    );
    let side = json(&runs.join("cb-default.json"));
    let config = &side["config"];
    assert_eq!(config["colbert"]["query_maxlen"], 32, "{config}");
    assert_eq!(config["colbert"]["doc_maxlen"], 180, "{config}");
    assert!(
        config["projection"]
            .as_str()
            .unwrap()
            .contains("not a trained ColBERT"),
        "{config}"
    );

    let out = run("cb-short", &["--query-max-len", "12", "--doc-max-len", "9"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let side = json(&runs.join("cb-short.json"));
    let config = &side["config"];
    assert_eq!(config["colbert"]["query_maxlen"], 12, "{config}");
    assert_eq!(config["colbert"]["doc_maxlen"], 9, "{config}");
    let scores = |name: &str| -> Vec<String> {
        std::fs::read_to_string(runs.join(format!("{name}.trec")))
            .unwrap()
            .lines()
            .map(|l| l.split_whitespace().nth(4).unwrap().to_owned())
            .collect()
    };
    assert_ne!(scores("cb-default"), scores("cb-short"));

    for bad in [["--query-max-len", "2"], ["--doc-max-len", "1"]] {
        let out = run("cb-bad", &bad);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bad:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::remove_dir_all(&data).ok();
}
