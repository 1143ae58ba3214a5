//! Test helpers shared by the integration tests: a tiny random BERT with a tiny WordPiece tokenizer,
//! written as an HF folder (no download).

#![allow(dead_code)]

use std::path::PathBuf;

use candle_core::Device;
use lexbench_baselines::encoder::{BertConfig, BertModel};
use lexbench_baselines::train::params::ParamStore;

/// The seed of the tiny test checkpoint's weights.
pub const TINY_SEED: u64 = 20_261_124;

pub const VOCAB: &[&str] = &[
    "[PAD]",
    "[unused0]",
    "[unused1]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ".",
    ",",
    "?",
    "!",
    ";",
    ":",
    "'",
    "(",
    ")",
    "the",
    "court",
    "article",
    "convention",
    "applicant",
    "complained",
    "of",
    "a",
    "violation",
    "right",
    "to",
    "fair",
    "trial",
    "privacy",
    "is",
    "what",
    "margin",
    "appreciation",
    "state",
    "law",
    "and",
    "in",
    "for",
    "on",
    "##s",
    "##ed",
];

/// A random tiny BERT (with pooler) and a WordPiece tokenizer, as an HF folder.
pub fn tiny_folder(name: &str) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-scorers-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    // Seeded: the same tiny checkpoint on every run and machine, so that what a test asserts of a
    // training step (the loss falls) does not depend on candle's unseedable generator.
    let vars = ParamStore::new(TINY_SEED);
    BertModel::load(&BertConfig::tiny(), vars.var_builder(&Device::Cpu), true)?;
    vars.save(&dir.join("model.safetensors"))?;
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string(&BertConfig::tiny())?,
    )?;
    let vocab: serde_json::Map<String, serde_json::Value> = VOCAB
        .iter()
        .enumerate()
        .map(|(i, t)| ((*t).to_owned(), i.into()))
        .collect();
    let special = |t: &str, id: usize| serde_json::json!({"id": id, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
    let tok = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [special("[PAD]", 0), special("[UNK]", 3), special("[CLS]", 4), special("[SEP]", 5), special("[MASK]", 6)],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [4], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [5], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
    });
    std::fs::write(dir.join("tokenizer.json"), serde_json::to_string(&tok)?)?;
    Ok(dir)
}

/// An empty scratch folder `<tmp>/lexbench-<prefix>-<pid>-<name>`.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let d = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}
