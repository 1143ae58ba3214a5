//! Loading a model whose files are wrong: every error is one line naming the file, never candle's
//! multi-line message or its backtrace (issue 21, item 11).
//!
//! Properties checked, on a tiny random BERT written here:
//! - a `config.json` whose sizes do not fit the weights names `model.safetensors`, the tensor and both
//!   shapes (`tensor embeddings.word_embeddings.weight has shape [100, 32], config.json expects
//!   [100, 16]`);
//! - a tensor missing from the checkpoint is named;
//! - a truncated `model.safetensors`, or a file of another format under that name, names the file;
//! - a PEFT folder whose `adapter_model.safetensors` does not fit its `adapter_config.json` names the
//!   adapter file and the tensor;
//! - a training checkpoint (`params.safetensors`) cut short names the file.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use lexbench_baselines::encoder::files::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, AdapterFile};
use lexbench_baselines::encoder::peft::{PeftConfig, PeftMethod};
use lexbench_baselines::encoder::{BertConfig, BertModel, LinearKind, LoraConfig};
use lexbench_baselines::train::params::ParamStore;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The error of loading `dir`, checked to be a single line.
fn load_error(dir: &Path) -> String {
    let e = BertModel::from_dir(dir, &Device::Cpu)
        .err()
        .unwrap_or_else(|| panic!("{} loaded", dir.display()))
        .to_string();
    assert_eq!(e.lines().count(), 1, "not one line: {e}");
    assert!(!e.contains("backtrace"), "{e}");
    e
}

fn tiny(name: &str) -> Result<PathBuf, Box<dyn std::error::Error>> {
    common::tiny_folder(&format!("load-errors-{name}"))
}

fn write_config(dir: &Path, cfg: &BertConfig) -> TestResult {
    std::fs::write(dir.join("config.json"), serde_json::to_string(cfg)?)?;
    Ok(())
}

#[test]
fn config_that_does_not_fit_the_weights_names_file_tensor_and_shapes() -> TestResult {
    let dir = tiny("shape")?;
    write_config(
        &dir,
        &BertConfig {
            hidden_size: 16,
            ..BertConfig::tiny()
        },
    )?;
    let e = load_error(&dir);
    assert_eq!(
        e,
        format!(
            "{}: tensor embeddings.word_embeddings.weight has shape [100, 32], config.json expects [100, 16]",
            dir.join("model.safetensors").display()
        )
    );
    // A deeper mismatch: the feed-forward size.
    write_config(
        &dir,
        &BertConfig {
            intermediate_size: 48,
            ..BertConfig::tiny()
        },
    )?;
    let e = load_error(&dir);
    assert!(
        e.ends_with("tensor encoder.layer.0.intermediate.dense.weight has shape [64, 32], config.json expects [48, 32]"),
        "{e}"
    );
    Ok(())
}

#[test]
fn a_missing_tensor_is_named() -> TestResult {
    let dir = tiny("missing")?;
    let weights = dir.join("model.safetensors");
    let mut tensors: HashMap<String, Tensor> = candle_core::safetensors::load(&weights, &Device::Cpu)?;
    tensors.remove("encoder.layer.1.output.dense.weight");
    candle_core::safetensors::save(&tensors, &weights)?;
    let e = load_error(&dir);
    assert_eq!(
        e,
        format!(
            "{}: no tensor encoder.layer.1.output.dense.weight, which config.json expects",
            weights.display()
        )
    );
    Ok(())
}

#[test]
fn truncated_or_foreign_weights_name_the_file() -> TestResult {
    let dir = tiny("truncated")?;
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights)?;
    for (what, content) in [
        ("truncated", bytes[..bytes.len() / 2].to_vec()),
        ("header only", bytes[..12].to_vec()),
        ("empty", Vec::new()),
        (
            "text",
            b"version https://git-lfs.github.com/spec/v1\noid sha256:0\n".to_vec(),
        ),
    ] {
        std::fs::write(&weights, &content)?;
        let e = load_error(&dir);
        assert!(
            e.starts_with(&format!(
                "{}: not a valid safetensors file (truncated, or another format): ",
                weights.display()
            )),
            "{what}: {e}"
        );
    }
    Ok(())
}

#[test]
fn adapter_weights_that_do_not_fit_their_config_are_named() -> TestResult {
    let base = tiny("peft-base")?;
    let dir = common::scratch("load-errors", "peft");
    // LoRA of rank 4, described as rank 8.
    let vars = VarMap::new();
    let mut model = BertModel::load(
        &BertConfig::tiny(),
        VarBuilder::from_varmap(&VarMap::new(), DType::F32, &Device::Cpu),
        true,
    )?;
    let lora = |rank| LoraConfig {
        rank,
        alpha: 8.0,
        dropout: 0.0,
        targets: vec![LinearKind::Query, LinearKind::Value],
    };
    model.add_lora(
        &lora(4),
        VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu).pp("peft"),
    )?;
    vars.save(dir.join(ADAPTER_WEIGHTS))?;
    let file = AdapterFile {
        peft: PeftConfig {
            method: PeftMethod::Lora,
            lora: lora(8),
            adapter: Default::default(),
            prefix: Default::default(),
        },
        base_model: base.clone(),
        base_sha256: lexbench_core::dataset::sha256_file(&base.join("model.safetensors"))?,
        trainable_params: 0,
        total_params: 0,
    };
    std::fs::write(dir.join(ADAPTER_CONFIG), serde_json::to_string(&file)?)?;
    let e = load_error(&dir);
    let weights = dir.join(ADAPTER_WEIGHTS);
    assert!(
        e.starts_with(&format!("{}: tensor peft.layer.0.query.", weights.display()))
            && e.contains("has shape [4, 32], adapter_config.json expects [8, 32]"),
        "{e}"
    );
    Ok(())
}

#[test]
fn a_truncated_checkpoint_names_the_file() -> TestResult {
    let dir = common::scratch("load-errors", "checkpoint");
    let store = ParamStore::new(1);
    store
        .var_builder(&Device::Cpu)
        .get_with_hints((4, 5), "w", candle_nn::init::ZERO)?;
    let path = dir.join("params.safetensors");
    store.save(&path)?;
    let bytes = std::fs::read(&path)?;
    std::fs::write(&path, &bytes[..bytes.len() - 7])?;
    let e = store.load_values(&path).err().ok_or("loaded")?.to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(&format!(
            "{}: not a valid safetensors file (truncated, or another format): ",
            path.display()
        )),
        "{e}"
    );
    Ok(())
}
