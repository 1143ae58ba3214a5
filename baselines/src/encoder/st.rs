//! sentence-transformers model folders: the modules after the transformer, read from the folder
//! (`modules.json` and one subfolder per module), so a bi-encoder pools and projects as its
//! checkpoint does, not as a flag guesses.
//!
//! sentence-transformers runs `modules.json`'s modules in order on the batch: the `Transformer`
//! (this crate's [`super::BertModel`], at the folder's top level), `Pooling`, then any of `Dense`,
//! `LayerNorm` and `Normalize` ([`StModules`]). lexbench reads:
//!
//! | module | files | what it does |
//! |---|---|---|
//! | `Pooling` | `1_Pooling/config.json`: `pooling_mode_cls_token` / `pooling_mode_mean_tokens` / `pooling_mode_max_tokens` (sentence-transformers 2.x–5.x), or `pooling_mode` (6.x) | `[CLS]`, mean over the attention mask, or max over it: exactly one |
//! | `Dense` | `config.json` (`in_features`, `out_features`, `bias`, `activation_function`), `model.safetensors` (`linear.weight`, `linear.bias`) | `act(W x + b)`, act `torch.nn.modules.linear.Identity`, `…activation.Tanh` (the default when unnamed) or `…activation.ReLU` |
//! | `LayerNorm` | `config.json` (`dimension`), `model.safetensors` (`norm.weight`, `norm.bias`) | `torch.nn.LayerNorm`, ε = 1e-5 (ANCE's head) |
//! | `Normalize` | none | L2 normalisation |
//!
//! and the model's longest input, `max_seq_length` of `sentence_bert_config.json` (or, as
//! sentence-transformers 6 saves it, `model_max_length` of `tokenizer_config.json`). Any other
//! module (`WordEmbeddings`, `CNN`, `Router`, …), pooling mode (`mean_sqrt_len_tokens`,
//! `weightedmean_tokens`, `lasttoken`, several at once), a Dense with a residual or another
//! activation, or lower-casing (`do_lower_case`) is refused naming the file: a model read with
//! another head loads without a word and gives other vectors.
//!
//! **Who decides the pooling** ([`super::SentenceEncoder::from_dir`]): the folder's modules, when it
//! has them; a caller's pooling that contradicts them is an error (`lexbench encode --pooling cls` on
//! all-MiniLM-L6-v2), one that agrees is fine. A folder without modules pools as asked, and when
//! nobody asks, `[CLS]` for DPR (its architecture's output) and the mean otherwise
//! ([`default_pooling`]). The modules' `Normalize` always applies (it is part of the model); a
//! caller's `normalize` can only add one. Lengths stay the caller's: `max_seq_length` is the
//! command line's default ([`model_max_len`]).
//!
//! A folder trained here (its `lexbench-training.json`, a PEFT folder's `adapter_config.json`, or
//! the parent's record for its `query_encoder/`) ranks with its training's settings: the
//! sentence-transformers files it copied from its base describe the base, not it, and are not read.

use std::path::{Path, PathBuf};

use candle_core::{D, DType, Device, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::bert::LayerNorm;
use super::{Arch, BertConfig, Pooling, l2_normalize};
use crate::error::{Error, Result, weights_err};

/// The file listing a sentence-transformers folder's modules.
pub const MODULES_FILE: &str = "modules.json";

/// torch's `nn.LayerNorm` default epsilon, which sentence-transformers' `LayerNorm` module keeps.
const LAYER_NORM_EPS: f64 = 1e-5;

/// One entry of `modules.json`.
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

/// A Dense module's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `torch.nn.modules.linear.Identity`.
    Identity,
    /// `torch.nn.modules.activation.Tanh` (sentence-transformers' default).
    Tanh,
    /// `torch.nn.modules.activation.ReLU`.
    Relu,
}

/// A module after the pooling.
#[derive(Debug, Clone)]
pub enum Stage {
    /// `act(x Wᵀ + b)`.
    Dense {
        /// `(out_features, in_features)`.
        weight: Tensor,
        /// `(out_features)`, when the module has one.
        bias: Option<Tensor>,
        /// The activation.
        activation: Activation,
    },
    /// Layer normalisation over the vector.
    LayerNorm(LayerNorm),
    /// L2 normalisation.
    Normalize,
}

/// The modules of a sentence-transformers folder after its transformer (module documentation).
#[derive(Debug, Clone)]
pub struct StModules {
    pooling: Pooling,
    stages: Vec<Stage>,
    max_seq_length: Option<usize>,
    dim: usize,
    tag: String,
    pooling_file: PathBuf,
}

/// Whether `dir` is a folder trained here (or the query encoder of one), whose sentence-transformers
/// files are its base's.
fn trained_here(dir: &Path) -> bool {
    let record = |d: &Path| {
        d.join(super::files::TRAINING_RECORD).is_file() || d.join(super::files::ADAPTER_CONFIG).is_file()
    };
    record(dir)
        || (dir
            .file_name()
            .is_some_and(|n| n == crate::encoder::files::QUERY_ENCODER_DIR)
            && dir.parent().is_some_and(record))
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    crate::encoder::files::read_model_json(path)
}

fn format_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// A non-negative integer field of a JSON object, or `None` when absent.
fn usize_field(v: &serde_json::Value, key: &str, path: &Path) -> Result<Option<usize>> {
    match &v[key] {
        serde_json::Value::Null => Ok(None),
        x => x
            .as_u64()
            .map(|n| Some(n as usize))
            .ok_or_else(|| format_err(path, format!("{key} is {x}, not a non-negative integer"))),
    }
}

/// The pooling of a `Pooling` module's `config.json` (either generation of its keys).
fn read_pooling(path: &Path, hidden: usize) -> Result<Pooling> {
    let v = read_json(path)?;
    let dim = match usize_field(&v, "embedding_dimension", path)? {
        Some(d) => Some(d),
        None => usize_field(&v, "word_embedding_dimension", path)?,
    };
    if let Some(d) = dim
        && d != hidden
    {
        return Err(format_err(
            path,
            format!("pools vectors of {d} dimensions, but the transformer's hidden size is {hidden}"),
        ));
    }
    let mut modes: Vec<String> = Vec::new();
    match &v["pooling_mode"] {
        serde_json::Value::Null => {}
        serde_json::Value::String(s) => modes.push(s.clone()),
        serde_json::Value::Array(a) => {
            for m in a {
                let s = m
                    .as_str()
                    .ok_or_else(|| format_err(path, format!("pooling_mode holds {m}, not a string")))?;
                modes.push(s.to_owned());
            }
        }
        other => return Err(format_err(path, format!("pooling_mode is {other}"))),
    }
    // sentence-transformers 2.x–5.x: one boolean per mode.
    for (key, mode) in [
        ("pooling_mode_cls_token", "cls"),
        ("pooling_mode_mean_tokens", "mean"),
        ("pooling_mode_max_tokens", "max"),
        ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
        ("pooling_mode_weightedmean_tokens", "weightedmean"),
        ("pooling_mode_lasttoken", "lasttoken"),
    ] {
        match &v[key] {
            serde_json::Value::Bool(true) if !modes.iter().any(|m| m == mode) => modes.push(mode.to_owned()),
            serde_json::Value::Bool(_) | serde_json::Value::Null => {}
            other => return Err(format_err(path, format!("{key} is {other}, not a boolean"))),
        }
    }
    match modes.as_slice() {
        [m] if m == "cls" => Ok(Pooling::Cls),
        [m] if m == "mean" || m == "mean_tokens" => Ok(Pooling::Mean),
        [m] if m == "max" || m == "max_tokens" => Ok(Pooling::Max),
        [] => Err(format_err(path, "names no pooling mode")),
        _ => Err(format_err(
            path,
            format!(
                "pooling modes {modes:?}: lexbench pools with exactly one of cls, mean and max \
                 (sentence-transformers' pooling_mode_cls_token, _mean_tokens, _max_tokens)"
            ),
        )),
    }
}

/// The activation a Dense module's `activation_function` names.
fn activation(name: Option<&str>, path: &Path) -> Result<Activation> {
    match name {
        // sentence-transformers' Dense defaults to Tanh when the config names none.
        None | Some("torch.nn.modules.activation.Tanh" | "torch.nn.Tanh") => Ok(Activation::Tanh),
        Some("torch.nn.modules.linear.Identity" | "torch.nn.Identity") => Ok(Activation::Identity),
        Some("torch.nn.modules.activation.ReLU" | "torch.nn.ReLU") => Ok(Activation::Relu),
        Some(other) => Err(format_err(
            path,
            format!(
                "activation_function {other:?} is not one lexbench runs (torch.nn.modules.linear.Identity, \
                 torch.nn.modules.activation.Tanh, torch.nn.modules.activation.ReLU)"
            ),
        )),
    }
}

/// The module's weights (`model.safetensors` in its folder, or shards or a `pytorch_model.bin`:
/// [`crate::encoder::weights::Weights`]) and their hash.
fn module_weights(dir: &Path, device: &Device) -> Result<(PathBuf, VarBuilder<'static>, String)> {
    let found = crate::encoder::weights::Weights::of_model(dir)?;
    let weights = found.path().to_owned();
    if let crate::encoder::weights::Weights::Safetensors(_) = &found {
        let bytes = crate::encoder::files::read_weights(&weights)?;
        let sha = lexbench_core::sha256_hex(&bytes);
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)
            .map_err(weights_err(&weights, "config.json"))?;
        return Ok((weights, vb, sha));
    }
    let sha = found.sha256()?;
    let vb = found.var_builder(device, "config.json")?;
    Ok((weights, vb, sha))
}

impl StModules {
    /// Reads the modules of the sentence-transformers folder `dir` (module documentation); `None`
    /// for a folder without `modules.json` or one trained here.
    pub fn read(dir: &Path, device: &Device) -> Result<Option<Self>> {
        let list = dir.join(MODULES_FILE);
        if !crate::encoder::files::present(&list)? || trained_here(dir) {
            return Ok(None);
        }
        let entries: Vec<Entry> = crate::encoder::files::read_model_json(&list)?;
        // The class name: `sentence_transformers.models.Pooling` (2.x–5.x) or
        // `sentence_transformers.sentence_transformer.modules.pooling.Pooling` (6.x).
        let class = |e: &Entry| -> Result<String> {
            match e.kind.rsplit_once('.') {
                Some((module, class)) if module.starts_with("sentence_transformers.") => Ok(class.to_owned()),
                _ => Err(format_err(
                    &list,
                    format!(
                        "module {:?} is not a sentence-transformers module lexbench runs",
                        e.kind
                    ),
                )),
            }
        };
        let (first, pooling_entry) = match entries.as_slice() {
            [t, p, ..] if class(t)? == "Transformer" && class(p)? == "Pooling" => (t, p),
            _ => {
                return Err(format_err(
                    &list,
                    "lexbench runs a Transformer, then a Pooling, then Dense, LayerNorm or Normalize modules; \
                     this folder's modules start otherwise",
                ));
            }
        };
        if !first.path.is_empty() {
            return Err(format_err(
                &list,
                format!(
                    "the Transformer module is in {:?}: lexbench reads the transformer from the folder's top level",
                    first.path
                ),
            ));
        }
        let cfg = BertConfig::from_file(&dir.join("config.json"))?;
        let hidden = cfg.hidden_size;
        let pooling_file = dir.join(&pooling_entry.path).join("config.json");
        let pooling = read_pooling(&pooling_file, hidden)?;
        let mut tag = format!("st: {pooling:?}");
        let mut dim = hidden;
        let mut stages = Vec::new();
        for e in &entries[2..] {
            let folder = dir.join(&e.path);
            let config = folder.join("config.json");
            match class(e)?.as_str() {
                "Dense" => {
                    let v = read_json(&config)?;
                    let field = |k: &str| -> Result<usize> {
                        usize_field(&v, k, &config)?.ok_or_else(|| format_err(&config, format!("no {k}")))
                    };
                    let (inputs, outputs) = (field("in_features")?, field("out_features")?);
                    if inputs != dim {
                        return Err(format_err(
                            &config,
                            format!(
                                "in_features is {inputs}, but the vectors before it have {dim} dimensions"
                            ),
                        ));
                    }
                    let bias = v["bias"].as_bool().unwrap_or(true);
                    if v["use_residual"].as_bool().unwrap_or(false) {
                        return Err(format_err(
                            &config,
                            "use_residual is true: lexbench runs Dense modules without one",
                        ));
                    }
                    for key in ["module_input_name", "module_output_name"] {
                        if let Some(name) = v[key].as_str()
                            && name != "sentence_embedding"
                        {
                            return Err(format_err(
                                &config,
                                format!(
                                    "{key} is {name:?}: lexbench runs Dense modules on the sentence embedding"
                                ),
                            ));
                        }
                    }
                    let act = activation(v["activation_function"].as_str(), &config)?;
                    let (weights, vb, sha) = module_weights(&folder, device)?;
                    let vb = vb.pp("linear");
                    let weight = vb
                        .get((outputs, inputs), "weight")
                        .map_err(|e| Error::from(e).in_weights(&weights, "config.json"))?;
                    let bias = bias
                        .then(|| vb.get(outputs, "bias"))
                        .transpose()
                        .map_err(|e| Error::from(e).in_weights(&weights, "config.json"))?;
                    tag.push_str(&format!(" dense({inputs}->{outputs}, {act:?}, {sha})"));
                    stages.push(Stage::Dense {
                        weight,
                        bias,
                        activation: act,
                    });
                    dim = outputs;
                }
                "LayerNorm" => {
                    let v = read_json(&config)?;
                    let d = usize_field(&v, "dimension", &config)?
                        .ok_or_else(|| format_err(&config, "no dimension"))?;
                    if d != dim {
                        return Err(format_err(
                            &config,
                            format!("dimension is {d}, but the vectors before it have {dim} dimensions"),
                        ));
                    }
                    let (weights, vb, sha) = module_weights(&folder, device)?;
                    let ln = LayerNorm::load(d, LAYER_NORM_EPS, vb.pp("norm"))
                        .map_err(|e| e.in_weights(&weights, "config.json"))?;
                    tag.push_str(&format!(" layer_norm({d}, {sha})"));
                    stages.push(Stage::LayerNorm(ln));
                }
                "Normalize" => {
                    tag.push_str(" normalize");
                    stages.push(Stage::Normalize);
                }
                other => {
                    return Err(format_err(
                        &list,
                        format!(
                            "module {other} ({}) is not one lexbench runs after the pooling (Dense, LayerNorm, \
                             Normalize)",
                            e.kind
                        ),
                    ));
                }
            }
        }
        let max_seq_length = read_max_seq_length(dir)?;
        Ok(Some(Self {
            pooling,
            stages,
            max_seq_length,
            dim,
            tag,
            pooling_file,
        }))
    }

    /// The pooling of the `Pooling` module.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// The `Pooling` module's `config.json` (for errors).
    pub fn pooling_file(&self) -> &Path {
        &self.pooling_file
    }

    /// The modules after the pooling, in order.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// Whether a `Normalize` module comes last (the vectors are unit vectors).
    pub fn normalizes(&self) -> bool {
        matches!(self.stages.last(), Some(Stage::Normalize))
    }

    /// The output dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The model's longest input (`max_seq_length`), when the folder names one.
    pub fn max_seq_length(&self) -> Option<usize> {
        self.max_seq_length
    }

    /// A text naming every module and the sha256 of its weights (for the embedding cache's key).
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Runs the modules after the pooling on pooled vectors `(b, h)`.
    pub fn apply(&self, pooled: &Tensor) -> Result<Tensor> {
        let mut x = pooled.clone();
        for stage in &self.stages {
            x = match stage {
                Stage::Dense {
                    weight,
                    bias,
                    activation,
                } => {
                    let mut y = x.matmul(&weight.t()?)?;
                    if let Some(b) = bias {
                        y = y.broadcast_add(b)?;
                    }
                    match activation {
                        Activation::Identity => y,
                        Activation::Tanh => y.tanh()?,
                        Activation::Relu => y.relu()?,
                    }
                }
                Stage::LayerNorm(ln) => ln.forward(&x.contiguous()?)?,
                Stage::Normalize => l2_normalize(&x)?,
            };
        }
        Ok(x)
    }
}

/// `max_seq_length` of `sentence_bert_config.json`, else (sentence-transformers 6) `model_max_length`
/// of `tokenizer_config.json` when it is a real length (transformers writes 10³⁰ for "none").
fn read_max_seq_length(dir: &Path) -> Result<Option<usize>> {
    let st = dir.join("sentence_bert_config.json");
    if crate::encoder::files::present(&st)? {
        let v = read_json(&st)?;
        if v["do_lower_case"].as_bool() == Some(true) {
            return Err(format_err(
                &st,
                "do_lower_case is true: lexbench tokenises with tokenizer.json alone and does not lower-case \
                 before it",
            ));
        }
        if let Some(n) = usize_field(&v, "max_seq_length", &st)? {
            return Ok(Some(n));
        }
    }
    let tok = dir.join("tokenizer_config.json");
    if crate::encoder::files::present(&tok)? {
        let v = read_json(&tok)?;
        if let Some(n) = v["model_max_length"].as_u64()
            && n <= 1 << 20
        {
            return Ok(Some(n as usize));
        }
    }
    Ok(None)
}

/// The pooling of the model in `dir` when nobody asks for one: its sentence-transformers `Pooling`
/// module's, else `[CLS]` for DPR (its encoders' output is the `[CLS]` state), else the mean.
pub fn default_pooling(dir: &Path) -> Result<Pooling> {
    if let Some(m) = StModules::read(dir, &Device::Cpu)? {
        return Ok(m.pooling());
    }
    let config = dir.join("config.json");
    if !super::files::present(&config)? {
        // A PEFT folder (its base's config) or a folder the encoder refuses with its own error.
        return Ok(Pooling::Mean);
    }
    Ok(match BertConfig::from_file(&config)?.arch() {
        Ok(Arch::Dpr) => Pooling::Cls,
        _ => Pooling::Mean,
    })
}

/// The model's longest input as its sentence-transformers files name it (`max_seq_length`), for the
/// command line's default truncation; `None` for other folders.
pub fn model_max_len(dir: &Path) -> Result<Option<usize>> {
    Ok(StModules::read(dir, &Device::Cpu)?.and_then(|m| m.max_seq_length()))
}

/// Max pooling over the tokens the attention mask keeps, as sentence-transformers does (padding set
/// to -1e9 first): `hidden` `(b, s, h)`, `mask` `(b, s)`.
pub(crate) fn max_pool(hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    // kept: h; padding: -1e9 (h·m + (m − 1)·1e9).
    let fill = ((&m - 1.0)? * 1e9)?;
    let x = hidden.broadcast_mul(&m)?.broadcast_add(&fill)?;
    Ok(x.max(D::Minus2)?)
}
