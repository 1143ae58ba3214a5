//! BERT and the RoBERTa family on candle-nn, trainable and open to PEFT.
//!
//! Module and tensor names mirror HuggingFace checkpoints (`embeddings.word_embeddings.weight`,
//! `encoder.layer.{i}.attention.self.query.weight`, …, `pooler.dense.weight`; the prefix of the
//! architecture `config.json` names is detected: `bert.`, `roberta.`, DPR's
//! `question_encoder.bert_model.` / `ctx_encoder.bert_model.`), so any HF BERT, DPR, RoBERTa,
//! CamemBERT or XLM-R folder loads, and any other is refused ([`super::arch`]). The RoBERTa family
//! differs only in its embeddings: positions after the padding index, token type 0 always. Unlike
//! candle-transformers' BERT, dropout is real: `forward_t(…, train = true)` applies it,
//! `train = false` is deterministic.

use std::path::Path;

use candle_core::{D, DType, Device, Tensor};
use candle_nn::{Embedding, VarBuilder};

use lexbench_engine::dropout::Dropout;

use super::arch::Arch;
use super::config::{BertConfig, HiddenAct};
use super::peft::{
    Adapter, AdapterConfig, LinearKind, Lora, LoraConfig, PeftLinear, Prefix, PrefixConfig, PrefixEncoder,
};
use crate::error::{Error, Result, weights_err};

/// Layer normalisation over the last dimension, `(x - μ) / sqrt(σ² + ε) · γ + β`.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f64,
}

impl LayerNorm {
    /// Loads `weight` and `bias` (checkpoints' `LayerNorm.weight` / `.bias`).
    pub fn load(dim: usize, eps: f64, vb: VarBuilder<'_>) -> Result<Self> {
        Ok(Self {
            weight: vb.get_with_hints(dim, "weight", candle_nn::Init::Const(1.0))?,
            bias: vb.get_with_hints(dim, "bias", candle_nn::Init::Const(0.0))?,
            eps,
        })
    }

    /// Uses candle's fused kernel unless gradients must flow (it has no backward pass).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let tracking = x.track_op() || self.weight.track_op() || self.bias.track_op();
        if !tracking && x.is_contiguous() {
            return Ok(candle_nn::ops::layer_norm(
                x,
                &self.weight,
                &self.bias,
                self.eps as f32,
            )?);
        }
        if let Some(y) = lexbench_engine::kernels::layer_norm(x, &self.weight, &self.bias, self.eps)? {
            return Ok(y);
        }
        self.composite(x)
    }

    /// `LayerNorm(x + residual)`; with `fused`, one pass on the CPU when nothing is tracked
    /// (encoder/kernels.rs).
    pub fn forward_add(&self, x: &Tensor, residual: &Tensor, fused: bool) -> Result<Tensor> {
        let tracking = [x, residual, &self.weight, &self.bias]
            .iter()
            .any(|t| t.track_op());
        if fused && !tracking {
            let wb = Tensor::stack(&[&self.weight, &self.bias], 0)?;
            if let Some(y) = lexbench_engine::kernels::add_layer_norm(x, residual, &wb, self.eps)? {
                return Ok(y);
            }
        }
        self.forward(&(x + residual)?)
    }

    fn composite(&self, x: &Tensor) -> Result<Tensor> {
        let n = x.dim(D::Minus1)? as f64;
        let mean = (x.sum_keepdim(D::Minus1)? / n)?;
        let xc = x.broadcast_sub(&mean)?;
        let var = (xc.sqr()?.sum_keepdim(D::Minus1)? / n)?;
        let xn = xc.broadcast_div(&(var + self.eps)?.sqrt()?)?;
        Ok(xn.broadcast_mul(&self.weight)?.broadcast_add(&self.bias)?)
    }
}

fn activate(act: HiddenAct, x: &Tensor) -> Result<Tensor> {
    Ok(match act {
        HiddenAct::Gelu => x.gelu_erf()?,
        HiddenAct::GeluTanh => x.gelu()?,
        HiddenAct::Relu => x.relu()?,
    })
}

/// Word + position + token-type embeddings, layer norm, dropout.
#[derive(Debug, Clone)]
pub struct Embeddings {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    layer_norm: LayerNorm,
    dropout: Dropout,
    /// RoBERTa family: the padding index positions start after (and token types are always 0).
    roberta_pad: Option<u32>,
    /// The longest input in tokens ([`BertConfig::max_tokens`]).
    max_tokens: usize,
}

impl Embeddings {
    fn load(cfg: &BertConfig, vb: VarBuilder<'_>) -> Result<Self> {
        let emb = |n: usize, name: &str| -> Result<Embedding> {
            let w = vb.pp(name).get_with_hints(
                (n, cfg.hidden_size),
                "weight",
                candle_nn::Init::Randn {
                    mean: 0.0,
                    stdev: 0.02,
                },
            )?;
            Ok(Embedding::new(w, cfg.hidden_size))
        };
        Ok(Self {
            word: emb(cfg.vocab_size, "word_embeddings")?,
            position: emb(cfg.max_position_embeddings, "position_embeddings")?,
            token_type: emb(cfg.type_vocab_size, "token_type_embeddings")?,
            layer_norm: LayerNorm::load(cfg.hidden_size, cfg.layer_norm_eps, vb.pp("LayerNorm"))?,
            dropout: Dropout::new(cfg.hidden_dropout_prob),
            roberta_pad: cfg.arch()?.is_roberta_family().then_some(cfg.pad_token_id),
            max_tokens: cfg.max_tokens(),
        })
    }

    /// The word-embedding matrix, `(vocab, hidden)`.
    pub fn word_embeddings(&self) -> &Tensor {
        self.word.embeddings()
    }

    fn forward_t(&self, input_ids: &Tensor, type_ids: &Tensor, train: bool) -> Result<Tensor> {
        use candle_core::Module;
        let (_b, s) = input_ids.dims2()?;
        let max = self.max_tokens;
        if s > max {
            return Err(Error::Param(format!(
                "max_len must be at most the model's {max} positions, got a sequence of {s} tokens"
            )));
        }
        let x = self.word.forward(input_ids)?;
        let x = match self.roberta_pad {
            None => {
                let pos = Tensor::arange(0u32, s as u32, input_ids.device())?;
                let x = x.broadcast_add(&self.position.forward(&pos)?)?;
                (x + self.token_type.forward(type_ids)?)?
            }
            Some(pad) => {
                let pos = roberta_positions(input_ids, pad)?;
                let x = (x + self.position.forward(&pos)?)?;
                // No token types: row 0 for every token, a text pair's second text included
                // (RoBERTa tokenizers return no token_type_ids, so transformers uses zeros).
                x.broadcast_add(&self.token_type.embeddings().get(0)?)?
            }
        };
        let x = self.layer_norm.forward(&x)?;
        Ok(self.dropout.forward(&x, train)?)
    }
}

/// RoBERTa's position ids, `(b, s)` `u32`: `cumsum(ids != pad) * (ids != pad) + pad`, transformers'
/// `create_position_ids_from_input_ids` (`modeling_roberta.py`): the first token is at `pad + 1`,
/// padding at `pad`.
pub fn roberta_positions(input_ids: &Tensor, pad: u32) -> Result<Tensor> {
    let keep = input_ids.ne(pad)?.to_dtype(DType::F32)?;
    let pos = (keep.cumsum(1)? * &keep)? + f64::from(pad);
    Ok(pos?.to_dtype(DType::U32)?)
}

/// Self-attention with its output projection, residual and layer norm; hosts LoRA on its four
/// linears, an adapter after the output projection and a key/value prefix.
#[derive(Debug, Clone)]
pub struct Attention {
    query: PeftLinear,
    key: PeftLinear,
    value: PeftLinear,
    output: PeftLinear,
    layer_norm: LayerNorm,
    adapter: Option<Adapter>,
    prefix: Option<Prefix>,
    /// Frozen inference path: `[W_q/√d | W_k | W_v]ᵀ` `(hidden, 3 hidden)` and the matching bias, so
    /// one matrix multiply yields queries (already scaled), keys and values. Only without LoRA on
    /// query, key or value.
    qkv: Option<(Tensor, Tensor)>,
    heads: usize,
    head_dim: usize,
    probs_dropout: Dropout,
    hidden_dropout: Dropout,
    /// candle's composite softmax only (the reference path of [`BertModel::set_fast_paths`]`(false)`).
    plain: bool,
}

impl Attention {
    fn load(cfg: &BertConfig, vb: VarBuilder<'_>) -> Result<Self> {
        let h = cfg.hidden_size;
        let sv = vb.pp("self");
        let ov = vb.pp("output");
        Ok(Self {
            query: PeftLinear::load(h, h, sv.pp("query"))?,
            key: PeftLinear::load(h, h, sv.pp("key"))?,
            value: PeftLinear::load(h, h, sv.pp("value"))?,
            output: PeftLinear::load(h, h, ov.pp("dense"))?,
            layer_norm: LayerNorm::load(h, cfg.layer_norm_eps, ov.pp("LayerNorm"))?,
            adapter: None,
            prefix: None,
            qkv: None,
            heads: cfg.num_attention_heads,
            head_dim: cfg.head_dim(),
            probs_dropout: Dropout::new(cfg.attention_probs_dropout_prob),
            hidden_dropout: Dropout::new(cfg.hidden_dropout_prob),
            plain: false,
        })
    }

    /// `(b, n, hidden)` → `(b, heads, n, head_dim)`.
    fn split_heads(&self, x: &Tensor) -> Result<Tensor> {
        let (b, n, _) = x.dims3()?;
        Ok(x.reshape((b, n, self.heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?)
    }

    /// [`Attention::split_heads`], times `scale` when given, as one op with its own backward pass
    /// on the CPU (lexbench-engine's kernels: the same values as candle's ops).
    fn heads_apart(&self, x: &Tensor, scale: Option<f64>) -> Result<Tensor> {
        if let Some(t) = lexbench_engine::kernels::split_heads(x, self.heads, scale)? {
            return Ok(t);
        }
        let t = self.split_heads(x)?;
        Ok(match scale {
            Some(m) => (t * m)?,
            None => t,
        })
    }

    fn scale(&self) -> f64 {
        1.0 / (self.head_dim as f64).sqrt()
    }

    /// Builds the fused query/key/value projection (see the `qkv` field), or drops it when a LoRA
    /// branch wraps one of the three.
    fn fuse_qkv(&mut self) -> Result<()> {
        let lora = self.query.lora().is_some() || self.key.lora().is_some() || self.value.lora().is_some();
        let biases = (self.query.bias(), self.key.bias(), self.value.bias());
        self.qkv = match biases {
            (Some(bq), Some(bk), Some(bv)) if !lora => {
                let wq = (self.query.weight() * self.scale())?;
                let w = Tensor::cat(&[&wq, self.key.weight(), self.value.weight()], 0)?;
                let bq = (bq * self.scale())?;
                let b = Tensor::cat(&[&bq, bk, bv], 0)?;
                Some((w.t()?.contiguous()?.detach(), b.detach()))
            }
            _ => None,
        };
        Ok(())
    }

    /// Queries (scaled by `1/√d`), keys and values, each `(b, heads, s, head_dim)`.
    fn project(&self, x: &Tensor, train: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let (b, s, hidden) = x.dims3()?;
        if let Some((w, bias)) = &self.qkv {
            let qkv = x
                .reshape((b * s, hidden))?
                .matmul(w)?
                .broadcast_add(bias)?
                .reshape((b, s, 3, self.heads, self.head_dim))?
                .permute((2, 0, 3, 1, 4))?
                .contiguous()?;
            return Ok((qkv.get(0)?, qkv.get(1)?, qkv.get(2)?));
        }
        let q = self.heads_apart(&self.query.forward_t(x, train)?, Some(self.scale()))?;
        let k = self.heads_apart(&self.key.forward_t(x, train)?, None)?;
        let v = self.heads_apart(&self.value.forward_t(x, train)?, None)?;
        Ok((q, k, v))
    }

    /// `x`: `(b, s, hidden)`; `mask_bias`: `(b, 1, 1, s)`, 0 where attended and a large negative
    /// number at padding, or `None` when the batch has no padding; `prefix`: this pass's prefix
    /// computed by the reparametrisation MLP, else the layer's own.
    fn forward_t(
        &self,
        x: &Tensor,
        mask_bias: Option<&Tensor>,
        prefix: Option<&Prefix>,
        train: bool,
    ) -> Result<Tensor> {
        let (b, s, hidden) = x.dims3()?;
        if let Some((w, qkv_bias)) = &self.qkv {
            // Inference on the CPU without prefixes: one fused pass per (sequence, head) over the
            // fused projection (encoder/kernels.rs); the composite path below otherwise.
            let fused = !train
                && prefix.is_none()
                && self.prefix.is_none()
                && x.device().is_cpu()
                && x.dtype() == DType::F32
                && !x.track_op();
            if fused {
                let qkv = lexbench_engine::kernels::linear(&x.reshape((b * s, hidden))?, w, qkv_bias)?;
                let mask = match mask_bias {
                    Some(m) => m.reshape((b, s))?,
                    None => Tensor::zeros((b, s), DType::F32, x.device())?,
                };
                let ctx =
                    lexbench_engine::kernels::fused_attention(&qkv, &mask, b, s, self.heads, self.head_dim)?
                        .reshape((b, s, hidden))?;
                let mut out = self.output.forward_t(&ctx, train)?;
                if let Some(a) = &self.adapter {
                    out = a.forward_t(&out, train)?;
                }
                return self.layer_norm.forward_add(&out, x, true);
            }
        }
        let (q, mut k, mut v) = self.project(x, train)?;
        let mut bias = mask_bias.cloned();
        if let Some(p) = prefix.or(self.prefix.as_ref()) {
            let n = p.len();
            let heads = |t: &Tensor| -> Result<Tensor> {
                Ok(t.reshape((1, n, self.heads, self.head_dim))?
                    .transpose(1, 2)?
                    .broadcast_as((b, self.heads, n, self.head_dim))?
                    .contiguous()?)
            };
            k = Tensor::cat(&[&heads(&p.key)?, &k], 2)?;
            v = Tensor::cat(&[&heads(&p.value)?, &v], 2)?;
            if let Some(m) = &bias {
                let zeros = Tensor::zeros((b, 1, 1, n), m.dtype(), m.device())?;
                bias = Some(Tensor::cat(&[&zeros, m], 3)?);
            }
        }
        let mut scores = q.matmul(&k.t()?)?;
        // The mask, softmax and (in training) dropout in one op with its own backward pass
        // (lexbench-engine's kernels) on the CPU.
        let fused = if self.plain {
            None
        } else {
            let keys = k.dim(2)?;
            let mask = match &bias {
                Some(m) => m.reshape((b, keys))?,
                None => Tensor::zeros((b, keys), scores.dtype(), scores.device())?,
            };
            lexbench_engine::kernels::masked_softmax_dropout(&scores, &mask, self.probs_dropout, train)?
        };
        let probs = match fused {
            Some(p) => p,
            None => {
                if let Some(m) = &bias {
                    scores = scores.broadcast_add(m)?;
                }
                let probs = if scores.track_op() {
                    candle_nn::ops::softmax(&scores, D::Minus1)?
                } else {
                    candle_nn::ops::softmax_last_dim(&scores)?
                };
                self.probs_dropout.forward(&probs, train)?
            }
        };
        let ctx = probs.matmul(&v)?;
        let ctx = match lexbench_engine::kernels::merge_heads(&ctx)? {
            Some(t) => t,
            None => ctx.transpose(1, 2)?.contiguous()?.reshape((b, s, hidden))?,
        };
        let mut out = self.output.forward_t(&ctx, train)?;
        out = self.hidden_dropout.forward(&out, train)?;
        if let Some(a) = &self.adapter {
            out = a.forward_t(&out, train)?;
        }
        self.layer_norm.forward(&(out + x)?)
    }
}

/// One transformer layer: attention, then the feed-forward block with residual and layer norm.
#[derive(Debug, Clone)]
pub struct Layer {
    attention: Attention,
    intermediate: PeftLinear,
    output: PeftLinear,
    layer_norm: LayerNorm,
    adapter: Option<Adapter>,
    act: HiddenAct,
    dropout: Dropout,
    fused_gelu: bool,
}

impl Layer {
    fn load(cfg: &BertConfig, vb: VarBuilder<'_>) -> Result<Self> {
        Ok(Self {
            attention: Attention::load(cfg, vb.pp("attention"))?,
            intermediate: PeftLinear::load(
                cfg.hidden_size,
                cfg.intermediate_size,
                vb.pp("intermediate").pp("dense"),
            )?,
            output: PeftLinear::load(
                cfg.intermediate_size,
                cfg.hidden_size,
                vb.pp("output").pp("dense"),
            )?,
            layer_norm: LayerNorm::load(
                cfg.hidden_size,
                cfg.layer_norm_eps,
                vb.pp("output").pp("LayerNorm"),
            )?,
            adapter: None,
            act: cfg.hidden_act,
            dropout: Dropout::new(cfg.hidden_dropout_prob),
            fused_gelu: true,
        })
    }

    fn linear_mut(&mut self, kind: LinearKind) -> &mut PeftLinear {
        match kind {
            LinearKind::Query => &mut self.attention.query,
            LinearKind::Key => &mut self.attention.key,
            LinearKind::Value => &mut self.attention.value,
            LinearKind::AttentionOutput => &mut self.attention.output,
            LinearKind::Intermediate => &mut self.intermediate,
            LinearKind::Output => &mut self.output,
        }
    }

    fn linears_mut(&mut self) -> [&mut PeftLinear; 6] {
        [
            &mut self.attention.query,
            &mut self.attention.key,
            &mut self.attention.value,
            &mut self.attention.output,
            &mut self.intermediate,
            &mut self.output,
        ]
    }

    fn forward_t(
        &self,
        x: &Tensor,
        mask_bias: Option<&Tensor>,
        prefix: Option<&Prefix>,
        train: bool,
    ) -> Result<Tensor> {
        let a = self.attention.forward_t(x, mask_bias, prefix, train)?;
        let h = match (self.act, self.intermediate.bias()) {
            (HiddenAct::Gelu, Some(b)) if self.fused_gelu && !train => {
                self.intermediate.forward_bias_gelu(&a, b)?
            }
            // Training: GELU with its own backward pass on the CPU (encoder/kernels.rs).
            (HiddenAct::Gelu, _) if self.fused_gelu => {
                let x = self.intermediate.forward_t(&a, train)?;
                match lexbench_engine::kernels::gelu_train(&x)? {
                    Some(y) => y,
                    None => x.gelu_erf()?,
                }
            }
            _ => activate(self.act, &self.intermediate.forward_t(&a, train)?)?,
        };
        let mut out = self.output.forward_t(&h, train)?;
        out = self.dropout.forward(&out, train)?;
        if let Some(ad) = &self.adapter {
            out = ad.forward_t(&out, train)?;
        }
        self.layer_norm.forward_add(&out, &a, self.fused_gelu)
    }
}

/// `tanh(dense(h_[CLS]))`: BERT's pooler, the input of a cross-encoder head.
#[derive(Debug, Clone)]
pub struct Pooler {
    dense: PeftLinear,
}

impl Pooler {
    /// `hidden`: `(b, s, h)` → `(b, h)`.
    pub fn forward_t(&self, hidden: &Tensor, train: bool) -> Result<Tensor> {
        let cls = hidden.narrow(1, 0, 1)?.squeeze(1)?;
        Ok(self.dense.forward_t(&cls, train)?.tanh()?)
    }
}

/// The inputs of one batch, all `(b, s)` `u32` tensors.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// Token ids.
    pub input_ids: Tensor,
    /// Segment ids (0 for the first text, 1 for the second of a pair).
    pub type_ids: Tensor,
    /// 1 for real tokens, 0 for padding.
    pub attention_mask: Tensor,
}

/// A BERT encoder: embeddings, `num_hidden_layers` layers, and the pooler when the checkpoint has one.
#[derive(Debug, Clone)]
pub struct BertModel {
    config: BertConfig,
    arch: Arch,
    embeddings: Embeddings,
    layers: Vec<Layer>,
    pooler: Option<Pooler>,
    /// Prefix tuning's reparametrisation MLP: every layer's prefixes, computed at each forward pass.
    prefix_encoder: Option<PrefixEncoder>,
    device: Device,
    frozen: bool,
    skip_unpadded_mask: bool,
}

impl BertModel {
    /// Loads from a `VarBuilder` rooted where the checkpoint's `embeddings.*` live. With
    /// `with_pooler`, `pooler.dense.*` must be present (or is created when `vb` is backed by a
    /// `VarMap`). Loading changes nothing of the process: the allocator policy that suits candle's
    /// per-op buffers ([`lexbench_engine::heap::keep_freed_memory`]) is the program's to set (the `lexbench`
    /// binary sets it at its start; a library user decides for their own process).
    pub fn load(cfg: &BertConfig, vb: VarBuilder<'_>, with_pooler: bool) -> Result<Self> {
        cfg.validate()?;
        let embeddings = Embeddings::load(cfg, vb.pp("embeddings"))?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(cfg, vb.pp(format!("encoder.layer.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        let pooler = if with_pooler {
            Some(Pooler {
                dense: PeftLinear::load(cfg.hidden_size, cfg.hidden_size, vb.pp("pooler").pp("dense"))?,
            })
        } else {
            None
        };
        Ok(Self {
            config: cfg.clone(),
            arch: cfg.arch()?,
            embeddings,
            layers,
            pooler,
            prefix_encoder: None,
            device: vb.device().clone(),
            frozen: false,
            skip_unpadded_mask: true,
        })
    }

    /// Loads a HuggingFace folder (`config.json`, and `model.safetensors`, safetensors shards or
    /// `pytorch_model.bin`: [`crate::encoder::weights::Weights`]) of an architecture lexbench
    /// runs ([`Arch`]: BERT, DPR, RoBERTa, CamemBERT, XLM-R; any other `model_type` is an
    /// [`Error::Format`] naming `config.json`), with frozen weights. The pooler is loaded when the
    /// checkpoint has one.
    ///
    /// A PEFT folder written by training (`adapter_config.json` + `adapter_model.safetensors`) loads
    /// its base model (checked against the recorded sha256), then the PEFT weights; LoRA is merged
    /// into the base weights, adapters and prefixes stay as modules. Prefixes trained through the
    /// reparametrisation MLP are in the folder as its output (the direct form, see
    /// [`PrefixConfig::materialized`]).
    pub fn from_dir(dir: &Path, device: &Device) -> Result<Self> {
        if crate::encoder::files::present(&dir.join(crate::encoder::files::ADAPTER_CONFIG))? {
            return Self::from_peft_dir(dir, device);
        }
        let cfg = BertConfig::from_file(&dir.join("config.json"))?;
        let found = crate::encoder::weights::Weights::of_model(dir)?;
        let vb = found.var_builder(device, "config.json")?;
        let weights = found.path().to_owned();
        let arch = cfg.arch()?;
        let prefix =
            weights_prefix(arch, |name| vb.contains_tensor(name)).map_err(|message| Error::Format {
                path: weights.clone(),
                message,
            })?;
        let vb = match prefix.strip_suffix('.') {
            Some(p) => p.split('.').fold(vb, |vb, part| vb.pp(part)),
            None => vb,
        };
        let with_pooler = vb.contains_tensor("pooler.dense.weight");
        // A config.json whose sizes do not fit the weights fails here: name the file and tensor.
        let mut model =
            Self::load(&cfg, vb, with_pooler).map_err(|e| e.in_weights(&weights, "config.json"))?;
        model.freeze()?;
        Ok(model)
    }

    fn from_peft_dir(dir: &Path, device: &Device) -> Result<Self> {
        use crate::encoder::files::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, AdapterFile};
        use crate::encoder::peft::PeftMethod;
        let cfg_path = dir.join(ADAPTER_CONFIG);
        let a: AdapterFile = crate::encoder::files::read_model_json(&cfg_path)?;
        let base_weights = a.base_model.join("model.safetensors");
        crate::encoder::files::regular_file(&base_weights)?;
        let sha = lexbench_core::dataset::sha256_file(&base_weights)?;
        if sha != a.base_sha256 {
            return Err(Error::Format {
                path: cfg_path,
                message: format!(
                    "trained on a base with sha256 {}, but {} has {sha}",
                    a.base_sha256,
                    base_weights.display()
                ),
            });
        }
        let mut model = Self::from_dir(&a.base_model, device)?;
        let weights = dir.join(ADAPTER_WEIGHTS);
        let bytes = crate::encoder::files::read_weights(&weights)?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)
            .map_err(weights_err(&weights, ADAPTER_CONFIG))?
            .pp("peft");
        match a.peft.method {
            PeftMethod::Lora => model.add_lora(&a.peft.lora, vb),
            PeftMethod::Adapter => model.add_adapters(&a.peft.adapter, vb),
            PeftMethod::Prefix => model.add_prefix(&a.peft.prefix.materialized(), vb),
        }
        .map_err(|e| e.in_weights(&weights, ADAPTER_CONFIG))?;
        if a.peft.method == PeftMethod::Lora {
            model.merge_lora()?;
        }
        Ok(model)
    }

    /// The configuration.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// The architecture (`config.json`'s `model_type`).
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The embedding layer.
    pub fn embeddings(&self) -> &Embeddings {
        &self.embeddings
    }

    /// The pooler, if the checkpoint has one.
    pub fn pooler(&self) -> Option<&Pooler> {
        self.pooler.as_ref()
    }

    /// Prepares base linears for inference with frozen weights (contiguous transposed copies).
    /// Call only when the base weights will not be trained.
    pub fn freeze(&mut self) -> Result<()> {
        self.frozen = true;
        for layer in &mut self.layers {
            for lin in layer.linears_mut() {
                lin.freeze()?;
            }
            layer.attention.fuse_qkv()?;
        }
        if let Some(p) = &mut self.pooler {
            p.dense.freeze()?;
        }
        Ok(())
    }

    /// Turns the inference fast paths on (the default after [`BertModel::from_dir`]) or off:
    /// pre-transposed weights, the fused query/key/value projection, the fused bias + GELU kernel,
    /// no attention mask for batches without padding.
    /// Off, the model runs as a plain candle port would (for benchmarks and cross-checks).
    pub fn set_fast_paths(&mut self, on: bool) -> Result<()> {
        self.skip_unpadded_mask = on;
        for layer in &mut self.layers {
            layer.fused_gelu = on;
            layer.attention.plain = !on;
            for lin in layer.linears_mut() {
                lin.set_plain(!on);
            }
            if !on {
                layer.attention.qkv = None;
                for lin in layer.linears_mut() {
                    lin.unfreeze();
                }
            }
        }
        if on {
            self.freeze()?;
        } else {
            self.frozen = false;
        }
        Ok(())
    }

    /// Wraps the configured linears of every layer with LoRA, parameters created under
    /// `vb` as `layer.{i}.{linear}.lora_{A,B}.weight`.
    pub fn add_lora(&mut self, cfg: &LoraConfig, vb: VarBuilder<'_>) -> Result<()> {
        cfg.validate()?;
        let (h, f) = (self.config.hidden_size, self.config.intermediate_size);
        for (i, layer) in self.layers.iter_mut().enumerate() {
            for &kind in &cfg.targets {
                let (din, dout) = match kind {
                    LinearKind::Intermediate => (h, f),
                    LinearKind::Output => (f, h),
                    _ => (h, h),
                };
                let lora = Lora::new(cfg, din, dout, vb.pp(format!("layer.{i}.{}", kind.name())))?;
                layer.linear_mut(kind).set_lora(lora);
            }
            layer.attention.qkv = None;
        }
        Ok(())
    }

    /// Folds every LoRA branch into its base weight.
    pub fn merge_lora(&mut self) -> Result<()> {
        for layer in &mut self.layers {
            for lin in layer.linears_mut() {
                lin.merge_lora()?;
            }
        }
        if self.frozen {
            self.freeze()?;
        }
        Ok(())
    }

    /// Inserts a bottleneck adapter after attention and after the FFN of every layer, parameters
    /// under `vb` as `layer.{i}.{attention,ffn}.{down,up}.*`.
    pub fn add_adapters(&mut self, cfg: &AdapterConfig, vb: VarBuilder<'_>) -> Result<()> {
        let h = self.config.hidden_size;
        for (i, layer) in self.layers.iter_mut().enumerate() {
            layer.attention.adapter = Some(Adapter::new(cfg, h, vb.pp(format!("layer.{i}.attention")))?);
            layer.adapter = Some(Adapter::new(cfg, h, vb.pp(format!("layer.{i}.ffn")))?);
        }
        Ok(())
    }

    /// Prepends trainable key/value prefixes to every layer's attention, parameters under `vb` as
    /// `layer.{i}.prefix.{key,value}`; with `cfg.projection`, computed by the reparametrisation MLP
    /// whose parameters are `prefix_encoder.{embedding,transform.0,transform.2}.…`.
    pub fn add_prefix(&mut self, cfg: &PrefixConfig, vb: VarBuilder<'_>) -> Result<()> {
        cfg.validate()?;
        let h = self.config.hidden_size;
        if cfg.projection {
            let layers = self.layers.len();
            self.prefix_encoder = Some(PrefixEncoder::new(cfg, layers, h, vb.pp("prefix_encoder"))?);
            for layer in &mut self.layers {
                layer.attention.prefix = None;
            }
            return Ok(());
        }
        self.prefix_encoder = None;
        for (i, layer) in self.layers.iter_mut().enumerate() {
            layer.attention.prefix = Some(Prefix::new(cfg, h, vb.pp(format!("layer.{i}.prefix")))?);
        }
        Ok(())
    }

    /// Every layer's prefixes as the next forward pass uses them (computed by the MLP when there is
    /// one), or `None` without prefix tuning.
    pub fn prefixes(&self) -> Result<Option<Vec<Prefix>>> {
        if let Some(e) = &self.prefix_encoder {
            return Ok(Some(e.prefixes()?));
        }
        Ok(self.layers.iter().map(|l| l.attention.prefix.clone()).collect())
    }

    /// Replaces the reparametrisation MLP by the prefixes it computes now, as constants: the same
    /// outputs without the MLP (for inference; nothing trains afterwards). A no-op without it.
    pub fn materialize_prefixes(&mut self) -> Result<()> {
        if let Some(e) = self.prefix_encoder.take() {
            for (layer, p) in self.layers.iter_mut().zip(e.materialize()?) {
                layer.attention.prefix = Some(p);
            }
        }
        Ok(())
    }

    /// The last layer's hidden states, `(b, s, hidden)`.
    pub fn forward_t(&self, inputs: &Inputs, train: bool) -> Result<Tensor> {
        let mask = inputs.attention_mask.to_dtype(DType::F32)?;
        let (b, s) = mask.dims2()?;
        // 0 where attended, f32::MIN at padding: exp underflows to exactly 0, so padding keys get
        // exactly zero weight (HuggingFace uses torch.finfo(dtype).min the same way).
        // A batch without padding (common with length-sorted batches) needs no mask at all.
        let padded = !self.skip_unpadded_mask || mask.min_all()?.to_scalar::<f32>()? < 1.0;
        let bias = if padded {
            Some(((mask.ones_like()? - &mask)? * f64::from(f32::MIN))?.reshape((b, 1, 1, s))?)
        } else {
            None
        };
        let mut x = self
            .embeddings
            .forward_t(&inputs.input_ids, &inputs.type_ids, train)?;
        let computed = match &self.prefix_encoder {
            Some(e) => e.prefixes()?,
            None => Vec::new(),
        };
        for (i, layer) in self.layers.iter().enumerate() {
            x = layer.forward_t(&x, bias.as_ref(), computed.get(i), train)?;
        }
        Ok(x)
    }
}

/// The prefix `arch`'s encoder tensors sit under in a checkpoint holding the tensors `has` says it
/// holds: the first of [`Arch::weight_prefixes`] with `{prefix}embeddings.word_embeddings.weight`.
/// The error says where they were looked for.
pub fn weights_prefix(arch: Arch, has: impl Fn(&str) -> bool) -> std::result::Result<&'static str, String> {
    let prefixes = arch.weight_prefixes();
    if let Some(p) = prefixes
        .iter()
        .find(|p| has(&format!("{p}embeddings.word_embeddings.weight")))
    {
        return Ok(p);
    }
    let tried: Vec<String> = prefixes
        .iter()
        .map(|p| format!("{p}embeddings.word_embeddings.weight"))
        .collect();
    Err(format!(
        "no {} (config.json says model_type {arch}: not a {arch} checkpoint?)",
        tried.join(" or ")
    ))
}

/// A checkpoint's tensors with the prefix of `arch`'s encoder removed ([`weights_prefix`]): what
/// [`BertModel::load`] reads from a `VarBuilder` over them (training starts from these). Tensors
/// outside the prefix (a ColBERT `linear.weight`, a `classifier.*` head, `lm_head.*`) keep their
/// names.
pub fn encoder_tensors(
    weights: &Path,
    arch: Arch,
    device: &Device,
) -> Result<std::collections::HashMap<String, Tensor>> {
    let raw = candle_core::safetensors::load(weights, device).map_err(weights_err(weights, "config.json"))?;
    let prefix = weights_prefix(arch, |name| raw.contains_key(name)).map_err(|message| Error::Format {
        path: weights.to_owned(),
        message,
    })?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| match k.strip_prefix(prefix) {
            Some(rest) if !prefix.is_empty() => (rest.to_owned(), v),
            _ => (k, v),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    //! Properties checked: RoBERTa position ids start after the padding index and leave padding at
    //! it (transformers' `create_position_ids_from_input_ids`); a RoBERTa-family model ignores token
    //! types (a pair's second segment reads type 0), takes `max_position_embeddings - pad - 1` tokens
    //! and refuses one more; the weights prefix follows the architecture. Outputs against
    //! transformers: `tests/hf_golden.rs`.
    use candle_nn::VarMap;

    use super::*;

    fn tiny(cfg: &BertConfig) -> BertModel {
        let vars = VarMap::new();
        BertModel::load(
            cfg,
            VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu),
            false,
        )
        .expect("model")
    }

    fn inputs(ids: &[u32], types: &[u32]) -> Inputs {
        let n = ids.len();
        let t = |v: &[u32]| Tensor::from_vec(v.to_vec(), (1, n), &Device::Cpu).expect("tensor");
        Inputs {
            input_ids: t(ids),
            type_ids: t(types),
            attention_mask: t(&vec![1; n]),
        }
    }

    #[test]
    fn roberta_positions_start_after_padding() {
        let ids = Tensor::new(&[[0u32, 5, 6, 2, 1, 1], [0, 7, 2, 1, 1, 1]], &Device::Cpu).expect("ids");
        let pos = roberta_positions(&ids, 1)
            .expect("positions")
            .to_vec2::<u32>()
            .expect("vec");
        assert_eq!(pos, vec![vec![2, 3, 4, 5, 1, 1], vec![2, 3, 4, 1, 1, 1]]);
    }

    #[test]
    fn roberta_ignores_token_types_and_takes_positions_less_pad_and_one() {
        let cfg = BertConfig::tiny_roberta();
        assert_eq!(cfg.max_tokens(), 64);
        let model = tiny(&cfg);
        let ids = [0u32, 10, 11, 2, 2, 12, 2];
        let zeros = model.forward_t(&inputs(&ids, &[0; 7]), false).expect("forward");
        let pair = model
            .forward_t(&inputs(&ids, &[0, 0, 0, 0, 1, 1, 1]), false)
            .expect("forward");
        let d = (zeros - pair)
            .expect("sub")
            .abs()
            .expect("abs")
            .max_all()
            .expect("max");
        assert_eq!(d.to_scalar::<f32>().expect("scalar"), 0.0);
        let long: Vec<u32> = (0..65).map(|i| 3 + i % 90).collect();
        model
            .forward_t(&inputs(&long[..64], &[0; 64]), false)
            .expect("64 tokens");
        let e = model
            .forward_t(&inputs(&long, &[0; 65]), false)
            .expect_err("65 tokens");
        assert!(e.to_string().contains("at most the model's 64 positions"), "{e}");
        // BERT takes every position row.
        assert_eq!(BertConfig::tiny().max_tokens(), 64);
    }

    #[test]
    fn the_weights_prefix_follows_the_architecture() {
        fn has(names: &[&str]) -> impl Fn(&str) -> bool {
            move |n: &str| names.contains(&n)
        }
        let roberta = ["roberta.embeddings.word_embeddings.weight"];
        assert_eq!(weights_prefix(Arch::Roberta, has(&roberta)), Ok("roberta."));
        let e = weights_prefix(Arch::Bert, has(&roberta)).expect_err("BERT under roberta.");
        assert_eq!(
            e,
            "no bert.embeddings.word_embeddings.weight or embeddings.word_embeddings.weight (config.json says \
             model_type bert: not a bert checkpoint?)"
        );
        let dpr = ["ctx_encoder.bert_model.embeddings.word_embeddings.weight"];
        assert_eq!(
            weights_prefix(Arch::Dpr, has(&dpr)),
            Ok("ctx_encoder.bert_model.")
        );
        let bare = ["embeddings.word_embeddings.weight"];
        for arch in Arch::ALL {
            assert_eq!(weights_prefix(arch, has(&bare)), Ok(""), "{arch}");
        }
    }
}
