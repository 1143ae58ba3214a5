//! Parameter-efficient fine-tuning hooks: LoRA on any attention/FFN linear, bottleneck adapters after
//! attention and after the FFN, and per-layer key/value prefixes (direct, or computed by the
//! reparametrisation MLP, [`PrefixEncoder`]).
//!
//! The base model's weights are constants (loaded from a checkpoint); PEFT parameters come from a
//! separate [`candle_nn::VarBuilder`] backed by a [`candle_nn::VarMap`], so only they receive
//! gradients and only they are handed to the optimiser.

use candle_core::Tensor;
use candle_nn::{Init, VarBuilder};

use lexbench_engine::dropout::Dropout;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which linear layer of a transformer layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinearKind {
    /// `attention.self.query`.
    Query,
    /// `attention.self.key`.
    Key,
    /// `attention.self.value`.
    Value,
    /// `attention.output.dense`.
    AttentionOutput,
    /// `intermediate.dense` (FFN in).
    Intermediate,
    /// `output.dense` (FFN out).
    Output,
}

impl LinearKind {
    /// The name used for this linear's PEFT parameters.
    pub fn name(self) -> &'static str {
        match self {
            Self::Query => "query",
            Self::Key => "key",
            Self::Value => "value",
            Self::AttentionOutput => "attention_output",
            Self::Intermediate => "intermediate",
            Self::Output => "output",
        }
    }
}

/// LoRA (Hu et al. 2021): `y = W x + b + (alpha / r) · B A dropout(x)`, `A` Kaiming-uniform, `B` zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraConfig {
    /// Rank `r` (default 8).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Scale numerator `alpha` (default 16): the update is scaled by `alpha / r`.
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Dropout on the LoRA branch's input (default 0.1, training only).
    #[serde(default = "default_lora_dropout")]
    pub dropout: f32,
    /// The wrapped linears (default query and value, as in the paper).
    #[serde(default = "default_targets")]
    pub targets: Vec<LinearKind>,
}

fn default_rank() -> usize {
    8
}
fn default_alpha() -> f64 {
    16.0
}
fn default_lora_dropout() -> f32 {
    0.1
}
fn default_targets() -> Vec<LinearKind> {
    vec![LinearKind::Query, LinearKind::Value]
}

impl Default for LoraConfig {
    fn default() -> Self {
        Self {
            rank: default_rank(),
            alpha: default_alpha(),
            dropout: default_lora_dropout(),
            targets: default_targets(),
        }
    }
}

impl LoraConfig {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        if self.rank == 0 {
            return Err(Error::Param("lora rank must be at least 1, got 0".into()));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::Param(format!(
                "lora dropout must be in [0, 1), got {}",
                self.dropout
            )));
        }
        Ok(())
    }
}

/// The low-rank branch of one linear.
#[derive(Debug, Clone)]
pub struct Lora {
    /// `A`, shape `(r, in)`.
    pub a: Tensor,
    /// `B`, shape `(out, r)`.
    pub b: Tensor,
    /// `alpha / r`.
    pub scale: f64,
    dropout: Dropout,
}

impl Lora {
    /// Creates `lora_A.weight` and `lora_B.weight` under `vb`.
    pub fn new(cfg: &LoraConfig, in_dim: usize, out_dim: usize, vb: VarBuilder<'_>) -> Result<Self> {
        cfg.validate()?;
        let a = vb.get_with_hints(
            (cfg.rank, in_dim),
            "lora_A.weight",
            candle_nn::init::DEFAULT_KAIMING_UNIFORM,
        )?;
        let b = vb.get_with_hints((out_dim, cfg.rank), "lora_B.weight", Init::Const(0.0))?;
        Ok(Self {
            a,
            b,
            // α / r, as AdapterHub (and HF PEFT) scale the update; the ECtHR paper's Eq. (4) writes
            // the update scaled by α alone. The two agree at r = 1 only: with r = 8, α = 16 the
            // update here is 2 · B A, where Eq. (4) read literally gives 16 · B A.
            scale: cfg.alpha / cfg.rank as f64,
            dropout: Dropout::new(cfg.dropout),
        })
    }

    /// The update `scale · B A dropout(x)` for `x` of shape `(n, in)`.
    fn forward_t(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        let x = self.dropout.forward(x, train)?;
        Ok((x.matmul(&self.a.t()?)?.matmul(&self.b.t()?)? * self.scale)?)
    }

    /// The dense update `scale · B A`, shape `(out, in)`.
    pub fn delta(&self) -> Result<Tensor> {
        Ok((self.b.matmul(&self.a)? * self.scale)?)
    }
}

/// A linear layer `y = x Wᵀ + b` that PEFT can wrap with [`Lora`].
///
/// For frozen weights the transposed matrix is kept contiguous ([`PeftLinear::freeze`]), which spares
/// the matrix multiply a strided read on every call.
#[derive(Debug, Clone)]
pub struct PeftLinear {
    weight: Tensor,
    weight_t: Option<Tensor>,
    bias: Option<Tensor>,
    lora: Option<Lora>,
    /// candle's own matmul and bias add only (the reference path of
    /// [`crate::encoder::BertModel::set_fast_paths`]`(false)`), not the fused training kernel.
    plain: bool,
}

impl PeftLinear {
    /// Loads `weight` (`(out, in)`) and `bias` (`(out,)`) from `vb`, as checkpoints name them.
    pub fn load(in_dim: usize, out_dim: usize, vb: VarBuilder<'_>) -> Result<Self> {
        let weight = vb.get_with_hints(
            (out_dim, in_dim),
            "weight",
            candle_nn::init::DEFAULT_KAIMING_NORMAL,
        )?;
        let bias = vb.get_with_hints(out_dim, "bias", Init::Const(0.0))?;
        Ok(Self {
            weight,
            weight_t: None,
            bias: Some(bias),
            lora: None,
            plain: false,
        })
    }

    /// Keeps a contiguous transposed copy of the weight for faster inference. Only for weights that
    /// will not be trained: a later update of the variable would not reach the copy.
    pub fn freeze(&mut self) -> Result<()> {
        self.weight_t = Some(self.weight.t()?.contiguous()?);
        Ok(())
    }

    /// Drops the transposed copy made by [`PeftLinear::freeze`].
    pub fn unfreeze(&mut self) {
        self.weight_t = None;
    }

    /// With `plain`, runs candle's matmul and bias add only (no fused kernel).
    pub fn set_plain(&mut self, plain: bool) {
        self.plain = plain;
    }

    /// The weight, shape `(out, in)`.
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The bias, shape `(out,)`.
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    /// The LoRA branch, if any.
    pub fn lora(&self) -> Option<&Lora> {
        self.lora.as_ref()
    }

    /// Attaches a LoRA branch (replacing any previous one).
    pub fn set_lora(&mut self, lora: Lora) {
        self.lora = Some(lora);
    }

    /// Folds the LoRA branch into the weight: `W ← W + scale · B A`. Outputs are unchanged (up to
    /// rounding) and inference costs what the base model costs.
    pub fn merge_lora(&mut self) -> Result<()> {
        if let Some(lora) = self.lora.take() {
            self.weight = (&self.weight + lora.delta()?.detach())?.detach();
            if self.weight_t.is_some() {
                self.freeze()?;
            }
        }
        Ok(())
    }

    /// `x` of any shape `(…, in)` to `(…, out)`.
    pub fn forward_t(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        self.forward_impl(x, train, true)
    }

    /// [`PeftLinear::forward_t`] without adding the bias (for callers that fuse it with what follows).
    pub fn forward_t_no_bias(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        self.forward_impl(x, train, false)
    }

    /// `gelu(x · Wᵀ + b)` (exact GELU) without gradient: frozen weights without LoRA in one product
    /// that applies the bias and GELU as it finishes each piece of the output
    /// (`lexbench_engine::kernels::linear_gelu`), otherwise the product and then the fused bias +
    /// GELU pass. The same values either way.
    pub fn forward_bias_gelu(&self, x: &Tensor, bias: &Tensor) -> Result<Tensor> {
        match &self.weight_t {
            Some(wt) if self.lora.is_none() => {
                let dims = x.dims();
                let in_dim = dims[dims.len() - 1];
                let y = lexbench_engine::kernels::linear_gelu(
                    &x.reshape((x.elem_count() / in_dim, in_dim))?,
                    wt,
                    bias,
                )?;
                let mut out_dims = dims.to_vec();
                let last = out_dims.len() - 1;
                out_dims[last] = y.dim(1)?;
                Ok(y.reshape(out_dims)?)
            }
            _ => Ok(lexbench_engine::gelu::bias_gelu(
                &self.forward_t_no_bias(x, false)?,
                bias,
            )?),
        }
    }

    fn forward_impl(&self, x: &Tensor, train: bool, with_bias: bool) -> Result<Tensor> {
        let dims = x.dims();
        let in_dim = dims[dims.len() - 1];
        let n = x.elem_count() / in_dim;
        let x2 = x.reshape((n, in_dim))?;
        let bias = self.bias.as_ref().filter(|_| with_bias);
        let mut y = match (&self.weight_t, bias) {
            // Frozen weights (the inference fast path): matmul and bias in one gemm.
            (Some(wt), Some(b)) => lexbench_engine::kernels::linear(&x2, wt, b)?,
            (Some(wt), None) => x2.matmul(wt)?,
            (None, Some(b))
                if !self.plain
                    && let Some(y) = lexbench_engine::kernels::linear_train(&x2, &self.weight, b)? =>
            {
                y
            }
            (None, b) => {
                let y = x2.matmul(&self.weight.t()?)?;
                match b {
                    Some(b) => y.broadcast_add(b)?,
                    None => y,
                }
            }
        };
        if let Some(lora) = &self.lora {
            y = (y + lora.forward_t(&x2, train)?)?;
        }
        let mut out_dims = dims.to_vec();
        let last = out_dims.len() - 1;
        out_dims[last] = y.dim(1)?;
        Ok(y.reshape(out_dims)?)
    }
}

/// A bottleneck adapter (Houlsby et al. 2019): `x + up(act(down(x)))`, inserted after the attention
/// output projection and after the FFN output projection, before each residual layer norm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterConfig {
    /// Bottleneck width (default 64); ignored when `reduction_factor` is set.
    #[serde(default = "default_bottleneck")]
    pub bottleneck: usize,
    /// Bottleneck as `hidden / reduction_factor` (the ECtHR paper sweeps 8, 16 and 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduction_factor: Option<usize>,
    /// The non-linearity between `down` and `up` (default ReLU, as in the ECtHR paper's adapters).
    #[serde(default)]
    pub activation: AdapterActivation,
    /// Standard deviation of the initial weights (default 1e-3: the adapter starts near identity).
    #[serde(default = "default_adapter_std")]
    pub init_std: f64,
}

/// The adapter's non-linearity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdapterActivation {
    /// `max(0, x)`.
    #[default]
    Relu,
    /// Exact GELU.
    Gelu,
}

impl AdapterConfig {
    /// The bottleneck width for a model of width `hidden`.
    pub fn width(&self, hidden: usize) -> Result<usize> {
        let w = match self.reduction_factor {
            Some(0) => {
                return Err(Error::Param(
                    "adapter reduction_factor must be at least 1, got 0".into(),
                ));
            }
            Some(r) => hidden / r,
            None => self.bottleneck,
        };
        if w == 0 {
            return Err(Error::Param(format!(
                "adapter bottleneck must be at least 1, got 0 (hidden {hidden}, reduction_factor {:?})",
                self.reduction_factor
            )));
        }
        Ok(w)
    }
}

fn default_bottleneck() -> usize {
    64
}
fn default_adapter_std() -> f64 {
    1e-3
}

impl Default for AdapterConfig {
    fn default() -> Self {
        Self {
            bottleneck: default_bottleneck(),
            reduction_factor: None,
            activation: AdapterActivation::default(),
            init_std: default_adapter_std(),
        }
    }
}

/// One bottleneck adapter.
#[derive(Debug, Clone)]
pub struct Adapter {
    down: PeftLinear,
    up: PeftLinear,
    activation: AdapterActivation,
}

impl Adapter {
    /// Creates `down.{weight,bias}` and `up.{weight,bias}` under `vb`.
    pub fn new(cfg: &AdapterConfig, hidden: usize, vb: VarBuilder<'_>) -> Result<Self> {
        let width = cfg.width(hidden)?;
        let init = Init::Randn {
            mean: 0.0,
            stdev: cfg.init_std,
        };
        let mk = |i: usize, o: usize, vb: VarBuilder<'_>| -> Result<PeftLinear> {
            Ok(PeftLinear {
                weight: vb.get_with_hints((o, i), "weight", init)?,
                weight_t: None,
                bias: Some(vb.get_with_hints(o, "bias", Init::Const(0.0))?),
                lora: None,
                plain: false,
            })
        };
        Ok(Self {
            down: mk(hidden, width, vb.pp("down"))?,
            up: mk(width, hidden, vb.pp("up"))?,
            activation: cfg.activation,
        })
    }

    /// `x + up(act(down(x)))`.
    pub fn forward_t(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        let h = self.down.forward_t(x, train)?;
        let h = match self.activation {
            AdapterActivation::Relu => h.relu()?,
            AdapterActivation::Gelu => h.gelu_erf()?,
        };
        Ok((x + self.up.forward_t(&h, train)?)?)
    }
}

/// Prefix tuning (Li & Liang 2021): `n` key and value vectors per layer, prepended to every
/// attention's keys and values.
///
/// Parametrised directly by default (trainable `(n, hidden)` keys and values per layer). With
/// `projection = true` they come from the reparametrisation MLP instead (Li & Liang § 4.3; HuggingFace
/// PEFT's `prefix_projection = True`): a trainable `(n, hidden)` embedding → Linear(hidden →
/// `projection_dim`) → tanh → Linear(→ layers · 2 · hidden), computed at every forward pass
/// ([`PrefixEncoder`]). Only its output is needed after training: an exported folder holds the
/// materialised keys and values ([`materialize_prefix_tensors`]), as PEFT saves them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixConfig {
    /// Number of prefix positions (default 10).
    #[serde(default = "default_prefix_len")]
    pub length: usize,
    /// Standard deviation of the initial vectors of the direct parametrisation (default 0.02, BERT's
    /// initialiser range). The MLP's embedding starts N(0, 1) and its linears U(±1/√fan_in), as
    /// PyTorch initialises PEFT's `PrefixEncoder`.
    #[serde(default = "default_prefix_std")]
    pub init_std: f64,
    /// Compute the prefixes with the reparametrisation MLP (default false: direct parameters).
    #[serde(default, skip_serializing_if = "is_false")]
    pub projection: bool,
    /// The MLP's hidden width (PEFT's `encoder_hidden_size`); absent = the model's hidden size. Only
    /// with `projection = true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection_dim: Option<usize>,
}

fn default_prefix_len() -> usize {
    10
}
fn default_prefix_std() -> f64 {
    0.02
}
fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for PrefixConfig {
    fn default() -> Self {
        Self {
            length: default_prefix_len(),
            init_std: default_prefix_std(),
            projection: false,
            projection_dim: None,
        }
    }
}

impl PrefixConfig {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        if self.length == 0 {
            return Err(Error::Param("prefix length must be at least 1, got 0".into()));
        }
        match (self.projection, self.projection_dim) {
            (_, Some(0)) => Err(Error::Param(
                "prefix projection_dim must be at least 1, got 0".into(),
            )),
            (false, Some(_)) => Err(Error::Param(
                "prefix projection_dim needs projection = true".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The MLP's hidden width for a model of width `hidden`.
    pub fn projection_width(&self, hidden: usize) -> usize {
        self.projection_dim.unwrap_or(hidden)
    }

    /// The direct parametrisation of the same prefixes: how an exported folder holds them (the MLP's
    /// output, materialised).
    pub fn materialized(&self) -> Self {
        Self {
            projection: false,
            projection_dim: None,
            ..self.clone()
        }
    }
}

/// One layer's key and value prefixes, each `(n, hidden)`.
#[derive(Debug, Clone)]
pub struct Prefix {
    /// Keys, `(n, hidden)`.
    pub key: Tensor,
    /// Values, `(n, hidden)`.
    pub value: Tensor,
}

impl Prefix {
    /// Creates `key` and `value` under `vb`.
    pub fn new(cfg: &PrefixConfig, hidden: usize, vb: VarBuilder<'_>) -> Result<Self> {
        if cfg.length == 0 {
            return Err(Error::Param("prefix length must be at least 1, got 0".into()));
        }
        let init = Init::Randn {
            mean: 0.0,
            stdev: cfg.init_std,
        };
        Ok(Self {
            key: vb.get_with_hints((cfg.length, hidden), "key", init)?,
            value: vb.get_with_hints((cfg.length, hidden), "value", init)?,
        })
    }

    /// Number of prefix positions.
    pub fn len(&self) -> usize {
        self.key.dims()[0]
    }

    /// Always false: a prefix has at least one position.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The reparametrisation MLP of prefix tuning, named as PEFT's `PrefixEncoder`: `embedding.weight`
/// `(n, hidden)`, `transform.0` (hidden → `projection_dim`), tanh, `transform.2` (→ layers · 2 ·
/// hidden). Its output row `j` holds position `j`'s key of layer `i` in columns `[2i·hidden,
/// (2i+1)·hidden)` and its value in the next `hidden` columns (PEFT's `view(…, layers · 2, heads,
/// head_dim)` then `split(2)`).
#[derive(Debug, Clone)]
pub struct PrefixEncoder {
    embedding: Tensor,
    down: PeftLinear,
    up: PeftLinear,
    layers: usize,
    hidden: usize,
}

impl PrefixEncoder {
    /// Creates (or reads) the embedding and the two linears under `vb`.
    pub fn new(cfg: &PrefixConfig, layers: usize, hidden: usize, vb: VarBuilder<'_>) -> Result<Self> {
        cfg.validate()?;
        let width = cfg.projection_width(hidden);
        let embedding = vb.pp("embedding").get_with_hints(
            (cfg.length, hidden),
            "weight",
            Init::Randn {
                mean: 0.0,
                stdev: 1.0,
            },
        )?;
        // torch.nn.Linear's default: weight and bias uniform in ±1/√fan_in.
        let linear = |i: usize, o: usize, vb: VarBuilder<'_>| -> Result<PeftLinear> {
            let b = 1.0 / (i as f64).sqrt();
            let init = Init::Uniform { lo: -b, up: b };
            Ok(PeftLinear {
                weight: vb.get_with_hints((o, i), "weight", init)?,
                weight_t: None,
                bias: Some(vb.get_with_hints(o, "bias", init)?),
                lora: None,
                plain: false,
            })
        };
        let t = vb.pp("transform");
        Ok(Self {
            embedding,
            down: linear(hidden, width, t.pp("0"))?,
            up: linear(width, layers * 2 * hidden, t.pp("2"))?,
            layers,
            hidden,
        })
    }

    /// Every layer's prefixes, computed from the current parameters (gradients flow back to them).
    pub fn prefixes(&self) -> Result<Vec<Prefix>> {
        let out = self
            .up
            .forward_t(&self.down.forward_t(&self.embedding, false)?.tanh()?, false)?;
        let h = self.hidden;
        (0..self.layers)
            .map(|i| {
                Ok(Prefix {
                    key: out.narrow(1, 2 * i * h, h)?,
                    value: out.narrow(1, (2 * i + 1) * h, h)?,
                })
            })
            .collect()
    }

    /// [`PrefixEncoder::prefixes`] as constants (detached, contiguous): what inference needs.
    pub fn materialize(&self) -> Result<Vec<Prefix>> {
        self.prefixes()?
            .into_iter()
            .map(|p| {
                Ok(Prefix {
                    key: p.key.detach().contiguous()?,
                    value: p.value.detach().contiguous()?,
                })
            })
            .collect()
    }
}

/// Replaces a reparametrisation MLP's tensors in `tensors` (`{root}prefix_encoder.…`) by the prefixes
/// it computes, named as the direct parametrisation names them (`{root}layer.{i}.prefix.{key,value}`),
/// for a model of `layers` layers of width `hidden`: a folder that loads with
/// [`PrefixConfig::materialized`]. Tensors without the MLP are left as they are.
pub fn materialize_prefix_tensors(
    cfg: &PrefixConfig,
    layers: usize,
    hidden: usize,
    tensors: &mut std::collections::BTreeMap<String, Tensor>,
    root: &str,
) -> Result<()> {
    let inner = format!("{root}prefix_encoder.");
    let names: Vec<String> = tensors
        .keys()
        .filter(|k| k.starts_with(&inner))
        .cloned()
        .collect();
    let Some(device) = names.first().map(|k| tensors[k].device().clone()) else {
        return Ok(());
    };
    let mlp: std::collections::HashMap<String, Tensor> = names
        .iter()
        .filter_map(|k| Some((k[inner.len()..].to_owned(), tensors.remove(k)?)))
        .collect();
    let vb = VarBuilder::from_tensors(mlp, candle_core::DType::F32, &device);
    let encoder = PrefixEncoder::new(cfg, layers, hidden, vb)?;
    for (i, p) in encoder.materialize()?.into_iter().enumerate() {
        tensors.insert(format!("{root}layer.{i}.prefix.key"), p.key);
        tensors.insert(format!("{root}layer.{i}.prefix.value"), p.value);
    }
    Ok(())
}

/// Parameter-efficient fine-tuning: exactly one method, with its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeftConfig {
    /// `lora`, `adapter` or `prefix`.
    pub method: PeftMethod,
    /// LoRA settings (rank, alpha; query and value projections by default).
    #[serde(default)]
    pub lora: LoraConfig,
    /// Adapter settings (reduction factor, ReLU).
    #[serde(default)]
    pub adapter: AdapterConfig,
    /// Prefix settings (length; the reparametrisation MLP with `projection = true`).
    #[serde(default)]
    pub prefix: PrefixConfig,
}

/// A PEFT method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeftMethod {
    /// LoRA (Hu et al. 2021).
    Lora,
    /// Bottleneck adapters (Houlsby et al. 2019).
    Adapter,
    /// Prefix tuning (Li & Liang 2021).
    Prefix,
}
