//! Model folders as people have them (issue 58, item 3), end to end.
//!
//! Properties checked:
//! - a folder holding its weights as `pytorch_model.bin` (written by PyTorch's `torch.save`, as
//!   transformers' `save_pretrained` wrote them before safetensors), or as two safetensors shards
//!   with `model.safetensors.index.json`, encodes exactly as the same weights in
//!   `model.safetensors` (`lexbench encode`, bit for bit), and its model hash covers those files;
//! - a `pytorch_model.bin` whose pickle calls `posix.system` is refused naming the file and the
//!   global, and the command it carries is not run (Python's own `pickle.loads` of the same bytes
//!   does run it: the payload is armed);
//! - an index putting a shard outside the folder (`../x.safetensors`) is refused naming the index,
//!   even though the file is there;
//! - `lexbench submit --model` ranks a folder at its own `max_seq_length`, where the harness had a
//!   fixed 256: at 128 the entry records the lengths and where they came from, the run's sidecar
//!   says 128, and `--recheck` reproduces it; at 8 (the sample's paragraphs are shorter than 128
//!   tokens) its run is `lexbench run dense --max-len 8`'s, not `--max-len 256`'s.
//!
//! The PyTorch and sharded files are the committed replicas' (`tests/golden/hf-replicas`, written by
//! PyTorch and transformers in `scripts/hf_replicas.py`); the armed pickle is made at test time by the
//! system's `python3`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{
    lexbench, lexbench_no_data, replicas, run_columns, sample_data, tiny_bert, tiny_bert_with,
};

fn scratch(name: &str) -> PathBuf {
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-model-folders-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the Python `code` with `args` (`sys.argv[1:]`) under the system's `python3` (the standard
/// library only).
fn py(code: &str, args: &[&Path]) {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Copies the folder's config and tokenizer to `to` (its weights are written apart).
fn same_model_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

fn encode(model: &Path) -> Output {
    lexbench_no_data(&[
        "encode",
        "--model",
        model.to_str().unwrap(),
        "la loi est le droit",
        "un article du code civil",
    ])
}

#[test]
fn pytorch_bin_and_safetensors_shards_encode_as_model_safetensors() {
    // The same BERT replica as PyTorch and transformers wrote it three ways (scripts/hf_replicas.py,
    // `weight_forms`): `model.safetensors`, `torch.save`'s `pytorch_model.bin`, and `save_pretrained`'s
    // shards with `model.safetensors.index.json`.
    let st = replicas().join("legal-bert");
    let bin = replicas().join("legal-bert-bin");
    let sharded = replicas().join("legal-bert-sharded");
    assert!(bin.join("pytorch_model.bin").is_file() && !bin.join("model.safetensors").exists());
    assert!(sharded.join("model-00002-of-00003.safetensors").is_file());
    assert!(!sharded.join("model.safetensors").exists());

    let want = encode(&st);
    assert!(want.status.success(), "{}", stderr(&want));
    for dir in [&bin, &sharded] {
        let got = encode(dir);
        assert!(got.status.success(), "{}: {}", dir.display(), stderr(&got));
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&want.stdout),
            "{}: other vectors than model.safetensors'",
            dir.display()
        );
    }

    // The model hash covers the weight files read: the checkpoint, or the index and every shard.
    let files = |dir: &Path| {
        lexbench::submit::model_sha256(dir, lexbench_leaderboard::ModelKind::BiEncoder)
            .unwrap()
            .files
    };
    assert!(files(&bin).contains_key("pytorch_model.bin"), "{:?}", files(&bin));
    let names: Vec<String> = files(&sharded).into_keys().collect();
    for f in [
        "model.safetensors.index.json",
        "model-00001-of-00003.safetensors",
        "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors",
    ] {
        assert!(names.iter().any(|n| n == f), "{f} not hashed: {names:?}");
    }
}

#[test]
fn a_pickle_that_would_run_code_is_refused_and_not_run() {
    let root = scratch("evil");
    let st = root.join("st");
    tiny_bert(&st);
    let evil = root.join("evil");
    same_model_files(&st, &evil);
    let marker = root.join("pwned");
    // A torch.save-shaped zip whose data.pkl calls os.system (pickled as `posix system`). Python
    // checks first that its own unpickler runs the payload, then removes what it made.
    py(
        r#"
import os, pickle, sys, zipfile
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
data = pickle.dumps({"embeddings.word_embeddings.weight": Payload()}, protocol=2)
assert b"cposix\nsystem\n" in data, data
pickle.loads(data)
assert os.path.exists(sys.argv[2]), "the payload is armed"
os.remove(sys.argv[2])
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("archive/data.pkl", data)
    z.writestr("archive/version", "3\n")
"#,
        &[&evil.join("pytorch_model.bin"), &marker],
    );
    assert!(!marker.exists());
    let out = encode(&evil);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&evil.join("pytorch_model.bin").display().to_string())
            && err.contains("posix.system")
            && err.contains("refused"),
        "{err}"
    );
    assert!(!marker.exists(), "the pickle's command ran");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_index_naming_a_shard_outside_the_folder_is_refused() {
    let root = scratch("escape");
    let st = root.join("st");
    tiny_bert(&st);
    let dir = root.join("model");
    same_model_files(&st, &dir);
    // The file is there, beside the folder: the name alone is refused.
    std::fs::copy(st.join("model.safetensors"), root.join("x.safetensors")).unwrap();
    let index = dir.join("model.safetensors.index.json");
    std::fs::write(
        &index,
        r#"{"metadata": {}, "weight_map": {"embeddings.word_embeddings.weight": "../x.safetensors"}}"#,
    )
    .unwrap();
    let out = encode(&dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&index.display().to_string())
            && err.contains("\"../x.safetensors\"")
            && err.contains("`..`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_harness_ranks_a_folder_at_its_max_seq_length_and_says_so() {
    let root = scratch("lengths");
    let data = root.join("data");
    sample_data(&data);
    let model = root.join("st-128");
    // Positions enough for 256 tokens: the folder's 128, not the model's size, is the limit.
    tiny_bert_with(
        &model,
        &lexbench_baselines::encoder::BertConfig {
            max_position_embeddings: 512,
            ..lexbench_baselines::encoder::BertConfig::tiny()
        },
    );
    crate::common::mean_pooling_module(&model);
    std::fs::write(
        model.join("sentence_bert_config.json"),
        r#"{"max_seq_length": 128, "do_lower_case": false}"#,
    )
    .unwrap();
    let submit = |name: &str| -> serde_json::Value {
        let card = root.join(format!("{name}.toml"));
        std::fs::write(
            &card,
            format!(
                "name = \"{name}\"\ndescription = \"a test model\"\nbase_model = \"none\"\nlicense = \"MIT\"\n\
                 training_data = \"none\"\n"
            ),
        )
        .unwrap();
        let out = lexbench(
            &data,
            &[
                "submit",
                "--model",
                model.to_str().unwrap(),
                "--kind",
                "bi-encoder",
                "--card",
                card.to_str().unwrap(),
                "--dataset",
                "ecthr",
                "--splits",
                "test",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let n = name.trim_start_matches("ST ");
        assert!(
            stdout.contains(&format!(
                "ranking with queries {n}, documents {n} tokens (sentence_bert_config.json max_seq_length)"
            )),
            "{stdout}"
        );
        let mut entries: Vec<serde_json::Value> = std::fs::read_dir(data.join("leaderboard/entries"))
            .unwrap()
            .map(|e| crate::common::read_json(&e.unwrap().path()))
            .filter(|e| e["system"] == name)
            .collect();
        assert_eq!(entries.len(), 1);
        entries.remove(0)
    };

    let e = submit("ST 128");
    assert_eq!(
        e["provenance"]["lengths"],
        serde_json::json!({"query": 128, "document": 128, "source": "sentence_bert_config.json max_seq_length"})
    );
    // The run's own record of its settings (the sidecar `lexbench run dense` writes) says 128.
    let config = &e["run"]["sidecar"]["config"];
    assert_eq!(
        (&config["encode"]["max_len"], &config["query_max_len"]),
        (&serde_json::json!(128), &serde_json::json!(128)),
        "{config}"
    );
    let out = lexbench(&data, &["leaderboard", "--recheck", e["id"].as_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("reproduced"));

    // The sample's paragraphs are shorter than 128 tokens: at 8 the cut shows in the ranking. The
    // harness's run is `lexbench run dense --max-len 8`'s, not the former fixed 256's.
    std::fs::write(
        model.join("sentence_bert_config.json"),
        r#"{"max_seq_length": 8, "do_lower_case": false}"#,
    )
    .unwrap();
    let e = submit("ST 8");
    assert_eq!(e["provenance"]["lengths"]["document"], 8);
    let mut runs = Vec::new();
    for len in ["8", "256"] {
        let system = format!("dense-{len}");
        let out = lexbench(
            &data,
            &[
                "run",
                "dense",
                "--model",
                model.to_str().unwrap(),
                "--dataset",
                "ecthr",
                "--split",
                "test",
                "--system",
                &system,
                "--max-len",
                len,
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        runs.push(run_columns(&data.join(format!("runs/ecthr/test/{system}.trec"))));
    }
    assert_ne!(runs[0], runs[1], "the cut at 8 tokens changes the ranking");
    assert_eq!(
        run_columns(&data.join("runs/ecthr/test/harness-st-8.trec")),
        runs[0],
        "the harness ranked at 8"
    );
    let _ = std::fs::remove_dir_all(&root);
}
