//! Text prefixes through the command line (issue 22, item 11: multilingual-e5-small's `query: ` /
//! `passage: ` on BSARD), with a tiny random BERT written here (no download) on the sample's BSARD.
//!
//! Properties checked: `lexbench train` with `[data] query_prefix` / `passage_prefix` records them in
//! the trained folder's `lexbench-training.json`; `lexbench run dense` on that folder ranks with them
//! (its sidecar names them, and its run is the one training wrote, and the one the same weights
//! without the training record give when the prefixes are passed as flags, not without them); a
//! `--query-prefix` or `--passage-prefix` other than the trained one is refused (exit 2) naming both,
//! the same one is accepted.

use std::path::{Path, PathBuf};

use lexbench_baselines::Device;
use lexbench_baselines::encoder::{BertConfig, BertModel};
use lexbench_baselines::train::params::ParamStore;

use crate::common::{lexbench, sample_data};

/// A tiny random BERT (2 layers, hidden 32, with pooler) and a small WordPiece tokenizer, as an HF
/// folder: most French words are `[UNK]`, which is enough to see what the network reads.
fn tiny_model(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let vars = ParamStore::new(20_261_124);
    BertModel::load(&BertConfig::tiny(), vars.var_builder(&Device::Cpu), true).unwrap();
    vars.save(&dir.join("model.safetensors")).unwrap();
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string(&BertConfig::tiny()).unwrap(),
    )
    .unwrap();
    let words = [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", ":", "'", "query", "passage", "le",
        "la", "les", "de", "des", "du", "un", "une", "et", "en", "est", "article", "code", "droit", "loi",
        "peut", "il", "qui", "que", "pour", "par", "dans", "sur", "au", "a", "je", "mon",
    ];
    let vocab: serde_json::Map<String, serde_json::Value> = words
        .iter()
        .enumerate()
        .map(|(i, t)| ((*t).to_owned(), i.into()))
        .collect();
    let special = |t: &str, id: usize| serde_json::json!({"id": id, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
    let tok = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [special("[PAD]", 0), special("[UNK]", 1), special("[CLS]", 2), special("[SEP]", 3), special("[MASK]", 4)],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
    });
    std::fs::write(dir.join("tokenizer.json"), tok.to_string()).unwrap();
}

/// The run's lines without the tag (the last column).
fn cols(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().0.to_owned())
        .collect()
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

#[test]
fn a_trained_folder_ranks_with_its_training_prefixes() {
    let data = std::env::temp_dir().join(format!("lexbench-prefixes-cli-{}", std::process::id()));
    sample_data(&data);
    let base = data.join("tiny-bert");
    tiny_model(&base);
    let cfg = data.join("e5-prefixes.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
name = "tiny-prefixes"
model = "dpr"
base = {base:?}
seed = 1

[data]
dataset = "bsard"
val_split = ""
max_query_len = 16
max_doc_len = 32
query_prefix = "query: "
passage_prefix = "passage: "

[negatives]
bm25 = 1

[schedule]
epochs = 1
batch_size = 8
max_steps = 2

[eval]
measure = "R@100"
top_k = 1000
"#,
            base = base.display().to_string()
        ),
    )
    .unwrap();
    let out = lexbench(
        &data,
        &["train", cfg.to_str().unwrap(), "--run", "test", "--quiet"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let model: PathBuf = data.join("models/tiny-prefixes/model");
    let record = json(&model.join("lexbench-training.json"));
    assert_eq!(record["config"]["data"]["query_prefix"], "query: ", "{record}");
    assert_eq!(
        record["config"]["data"]["passage_prefix"], "passage: ",
        "{record}"
    );
    let runs = data.join("runs/bsard/test");
    let trained_run = runs.join("tiny-prefixes.trec");
    assert_eq!(
        json(&runs.join("tiny-prefixes.json"))["config"]["query_prefix"],
        "query: "
    );

    let dense = |model: &Path, system: &str, extra: &[&str]| {
        let mut a = vec![
            "run",
            "dense",
            "--model",
            model.to_str().unwrap(),
            "--dataset",
            "bsard",
            "--split",
            "test",
            "--system",
            system,
        ];
        a.extend_from_slice(extra);
        lexbench(&data, &a)
    };
    // `run dense` on the trained folder: the trained prefixes, without being told.
    let again = dense(&model, "again", &[]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains(r#"prefixes "query: " / "passage: ""#), "{stderr}");
    let side = json(&runs.join("again.json"));
    assert_eq!(side["config"]["query_prefix"], "query: ", "{side}");
    assert_eq!(side["config"]["passage_prefix"], "passage: ", "{side}");
    assert_eq!(cols(&runs.join("again.trec")), cols(&trained_run));

    // The same weights without the training record rank so only when given the prefixes.
    let bare = data.join("bare-model");
    std::fs::create_dir_all(&bare).unwrap();
    for e in std::fs::read_dir(&model).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "lexbench-training.json" {
            std::fs::copy(e.path(), bare.join(e.file_name())).unwrap();
        }
    }
    let flags = [
        "--query-prefix",
        "query: ",
        "--passage-prefix",
        "passage: ",
        "--max-len",
        "32",
    ];
    let prefixed = dense(&bare, "bare-prefixed", &flags);
    assert!(
        prefixed.status.success(),
        "{}",
        String::from_utf8_lossy(&prefixed.stderr)
    );
    assert_eq!(cols(&runs.join("bare-prefixed.trec")), cols(&trained_run));
    let plain = dense(&bare, "bare-plain", &flags[4..]);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert_ne!(cols(&runs.join("bare-plain.trec")), cols(&trained_run));

    // Flags that contradict the trained prefixes are refused; the same ones are accepted.
    for (flag, value, trained) in [
        ("--query-prefix", "question: ", "query: "),
        ("--passage-prefix", "article: ", "passage: "),
    ] {
        let out = dense(&model, "other", &[flag, value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{trained:?}")) && err.contains(&format!("{value:?}")),
            "{err}"
        );
        assert!(!runs.join("other.trec").exists());
    }
    let same = dense(&model, "same", &flags[..4]);
    assert!(same.status.success(), "{}", String::from_utf8_lossy(&same.stderr));
    assert_eq!(cols(&runs.join("same.trec")), cols(&trained_run));
    std::fs::remove_dir_all(&data).ok();
}
