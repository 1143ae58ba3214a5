//! The hierarchical article encoder (BSARD's long articles): segments → BERT → a small transformer
//! over the segment vectors → max-pooling.
//!
//! An article's tokens are cut into segments of at most `seg_len` tokens, each re-wrapped as
//! `[CLS] … [SEP]`; every segment is encoded by the BERT encoder and represented by its `[CLS]`
//! state; the sequence of segment vectors, plus learned segment-position embeddings, goes through a
//! `num_layers`-layer transformer encoder (PyTorch's `nn.TransformerEncoderLayer` with
//! `norm_first=False`: post-norm, GELU, `d_model` = the encoder's hidden size, FFN `ffn_multiplier ×
//! d_model`), and the outputs are max-pooled over the article's segments (padding segments of
//! shorter articles in a batch are masked out of both attention and pooling). Queries stay with the
//! plain BERT encoder ([`encode_queries`]).
//!
//! Parameters (under the encoder's `VarBuilder`): `segment_position_embeddings.weight`
//! `(max_segments, d)`, and per layer `segment_encoder.layers.{i}.` + PyTorch's names
//! `self_attn.in_proj_weight` `(3d, d)`, `self_attn.in_proj_bias`, `self_attn.out_proj.{weight,bias}`,
//! `linear1.{weight,bias}`, `linear2.{weight,bias}`, `norm1.{weight,bias}`, `norm2.{weight,bias}`.

use candle_core::{D, Tensor};
use candle_nn::{Init, VarBuilder};
use serde::{Deserialize, Serialize};

use crate::encoder::bert::LayerNorm;
use crate::encoder::{BertConfig, BertModel, Inputs, Pooling, Tokens, pad_batch, pool};
use crate::error::{Error, Result};
use lexbench_engine::dropout::Dropout;

/// Configuration of a [`HierarchicalEncoder`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HierConfig {
    /// Tokens per segment, `[CLS]` and `[SEP]` included (default 128); at least 3 and at most the
    /// encoder's `max_position_embeddings`.
    #[serde(default = "default_seg_len")]
    pub seg_len: usize,
    /// Segments per article; longer articles are truncated (default 16, i.e. about 2,000 tokens at
    /// the default `seg_len`).
    #[serde(default = "default_max_segments")]
    pub max_segments: usize,
    /// Transformer layers over the segment vectors (default 2).
    #[serde(default = "default_layers")]
    pub num_layers: usize,
    /// Attention heads of those layers (default 12); must divide the encoder's hidden size.
    #[serde(default = "default_heads")]
    pub heads: usize,
    /// Feed-forward width as a multiple of the hidden size (default 4).
    #[serde(default = "default_ffn")]
    pub ffn_multiplier: usize,
    /// Dropout on attention weights and after attention / feed-forward blocks, training only
    /// (default 0.1, PyTorch's default); masks come from the seeded [`lexbench_engine::dropout`]
    /// generator, so training runs resume exactly.
    #[serde(default = "default_dropout")]
    pub dropout: f32,
    /// Epsilon of the layer norms (default 1e-5, PyTorch's default).
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
}

fn default_seg_len() -> usize {
    128
}
fn default_max_segments() -> usize {
    16
}
fn default_layers() -> usize {
    2
}
fn default_heads() -> usize {
    12
}
fn default_ffn() -> usize {
    4
}
fn default_dropout() -> f32 {
    0.1
}
fn default_eps() -> f64 {
    1e-5
}

impl Default for HierConfig {
    fn default() -> Self {
        Self {
            seg_len: default_seg_len(),
            max_segments: default_max_segments(),
            num_layers: default_layers(),
            heads: default_heads(),
            ffn_multiplier: default_ffn(),
            dropout: default_dropout(),
            layer_norm_eps: default_eps(),
        }
    }
}

impl HierConfig {
    /// Checks the values on their own.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Param(m));
        if self.seg_len < 3 {
            return bad(format!(
                "hier seg_len must be at least 3 (room for a token between [CLS] and [SEP]), got {}",
                self.seg_len
            ));
        }
        if self.max_segments == 0 || self.num_layers == 0 || self.heads == 0 || self.ffn_multiplier == 0 {
            return bad(format!(
                "hier max_segments, num_layers, heads and ffn_multiplier must be at least 1, got {}, {}, {}, {}",
                self.max_segments, self.num_layers, self.heads, self.ffn_multiplier
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return bad(format!("hier dropout must be in [0, 1), got {}", self.dropout));
        }
        if !(self.layer_norm_eps.is_finite() && self.layer_norm_eps > 0.0) {
            return bad(format!(
                "hier layer_norm_eps must be finite and > 0, got {}",
                self.layer_norm_eps
            ));
        }
        Ok(())
    }

    /// [`HierConfig::validate`], and the fit with the encoder: `heads` divides the hidden size,
    /// segments fit the position embeddings.
    pub fn validate_for(&self, bert: &BertConfig) -> Result<()> {
        self.validate()?;
        if !bert.hidden_size.is_multiple_of(self.heads) {
            return Err(Error::Param(format!(
                "hier heads must divide the encoder's hidden size {1}, got {0}",
                self.heads, bert.hidden_size
            )));
        }
        if self.seg_len > bert.max_tokens() {
            return Err(Error::Param(format!(
                "hier seg_len must be at most the encoder's {1} positions, got {0}",
                self.seg_len,
                bert.max_tokens()
            )));
        }
        Ok(())
    }
}

/// The ids of the special tokens a segment is wrapped in, and of padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialTokens {
    /// `[CLS]`.
    pub cls: u32,
    /// `[SEP]`.
    pub sep: u32,
    /// `[PAD]`.
    pub pad: u32,
}

/// Cuts `content` (an article's token ids without special tokens) into consecutive pieces of
/// `seg_len − 2` tokens, each wrapped as `[CLS] piece [SEP]`, keeping at most `max_segments`. An
/// empty article gives one segment `[CLS] [SEP]`.
pub fn segment_tokens(
    content: &[u32],
    seg_len: usize,
    max_segments: usize,
    special: SpecialTokens,
) -> Result<Vec<Vec<u32>>> {
    if seg_len < 3 || max_segments == 0 {
        return Err(Error::Param(format!(
            "hier seg_len must be at least 3 and max_segments at least 1, got {seg_len} and {max_segments}"
        )));
    }
    if content.is_empty() {
        return Ok(vec![vec![special.cls, special.sep]]);
    }
    Ok(content
        .chunks(seg_len - 2)
        .take(max_segments)
        .map(|piece| {
            let mut s = Vec::with_capacity(piece.len() + 2);
            s.push(special.cls);
            s.extend_from_slice(piece);
            s.push(special.sep);
            s
        })
        .collect())
}

/// Queries' vectors: the plain BERT encoder and [`pool`], `(b, h)`.
pub fn encode_queries(bert: &BertModel, inputs: &Inputs, pooling: Pooling, train: bool) -> Result<Tensor> {
    let hidden = bert.forward_t(inputs, train)?;
    pool(&hidden, &inputs.attention_mask, pooling)
}

/// `x Wᵀ + b` for `x` `(…, in)`.
fn linear(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(x.broadcast_matmul(&w.t()?)?.broadcast_add(b)?)
}

/// One post-norm transformer encoder layer with PyTorch's parameter names.
#[derive(Debug, Clone)]
struct SegmentLayer {
    in_proj: (Tensor, Tensor),
    out_proj: (Tensor, Tensor),
    linear1: (Tensor, Tensor),
    linear2: (Tensor, Tensor),
    norm1: LayerNorm,
    norm2: LayerNorm,
    heads: usize,
    dropout: Dropout,
}

/// PyTorch's `nn.Linear` initialisation: weights and biases uniform in `±1/√fan_in`.
fn torch_linear(
    vb: &VarBuilder<'_>,
    name: &str,
    din: usize,
    dout: usize,
    zero_bias: bool,
) -> Result<(Tensor, Tensor)> {
    let bound = 1.0 / (din as f64).sqrt();
    let u = Init::Uniform {
        lo: -bound,
        up: bound,
    };
    let v = vb.pp(name);
    let bias_init = if zero_bias { Init::Const(0.0) } else { u };
    Ok((
        v.get_with_hints((dout, din), "weight", u)?,
        v.get_with_hints(dout, "bias", bias_init)?,
    ))
}

impl SegmentLayer {
    fn load(cfg: &HierConfig, d: usize, vb: VarBuilder<'_>) -> Result<Self> {
        let sa = vb.pp("self_attn");
        let xavier = (6.0 / (d + 3 * d) as f64).sqrt();
        let in_proj = (
            sa.get_with_hints(
                (3 * d, d),
                "in_proj_weight",
                Init::Uniform {
                    lo: -xavier,
                    up: xavier,
                },
            )?,
            sa.get_with_hints(3 * d, "in_proj_bias", Init::Const(0.0))?,
        );
        let f = cfg.ffn_multiplier * d;
        Ok(Self {
            in_proj,
            out_proj: torch_linear(&sa, "out_proj", d, d, true)?,
            linear1: torch_linear(&vb, "linear1", d, f, false)?,
            linear2: torch_linear(&vb, "linear2", f, d, false)?,
            norm1: LayerNorm::load(d, cfg.layer_norm_eps, vb.pp("norm1"))?,
            norm2: LayerNorm::load(d, cfg.layer_norm_eps, vb.pp("norm2"))?,
            heads: cfg.heads,
            dropout: Dropout::new(cfg.dropout),
        })
    }

    fn drop(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        Ok(self.dropout.forward(x, train)?)
    }

    /// `x` `(b, m, d)`, `bias` `(b, 1, 1, m)` (0 at segments, a large negative number at padding).
    fn forward_t(&self, x: &Tensor, bias: &Tensor, train: bool) -> Result<Tensor> {
        let (b, m, d) = x.dims3()?;
        let (h, dh) = (self.heads, d / self.heads);
        let qkv = linear(x, &self.in_proj.0, &self.in_proj.1)?
            .reshape((b, m, 3, h, dh))?
            .permute((2, 0, 3, 1, 4))?
            .contiguous()?;
        let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
        let scores = (q.matmul(&k.t()?)? / (dh as f64).sqrt())?.broadcast_add(bias)?;
        let probs = self.drop(&candle_nn::ops::softmax(&scores, D::Minus1)?, train)?;
        let ctx = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((b, m, d))?;
        let sa = linear(&ctx, &self.out_proj.0, &self.out_proj.1)?;
        let x = self.norm1.forward(&(x + self.drop(&sa, train)?)?)?;
        let ff = linear(&x, &self.linear1.0, &self.linear1.1)?.gelu_erf()?;
        let ff = linear(&self.drop(&ff, train)?, &self.linear2.0, &self.linear2.1)?;
        self.norm2.forward(&(x + self.drop(&ff, train)?)?)
    }
}

/// BERT over segments, a transformer over the segment vectors, max-pooling (module documentation).
#[derive(Debug, Clone)]
pub struct HierarchicalEncoder {
    bert: BertModel,
    cfg: HierConfig,
    special: SpecialTokens,
    segment_positions: Tensor,
    layers: Vec<SegmentLayer>,
}

impl HierarchicalEncoder {
    /// Wraps `bert` (the segment encoder) and loads or creates the segment-level parameters under `vb`.
    pub fn new(
        bert: BertModel,
        cfg: &HierConfig,
        special: SpecialTokens,
        vb: VarBuilder<'_>,
    ) -> Result<Self> {
        cfg.validate_for(bert.config())?;
        let d = bert.config().hidden_size;
        let segment_positions = vb.pp("segment_position_embeddings").get_with_hints(
            (cfg.max_segments, d),
            "weight",
            Init::Randn {
                mean: 0.0,
                stdev: 0.02,
            },
        )?;
        let layers = (0..cfg.num_layers)
            .map(|i| SegmentLayer::load(cfg, d, vb.pp(format!("segment_encoder.layers.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            bert,
            cfg: cfg.clone(),
            special,
            segment_positions,
            layers,
        })
    }

    /// The segment encoder.
    pub fn bert(&self) -> &BertModel {
        &self.bert
    }

    /// The configuration.
    pub fn config(&self) -> &HierConfig {
        &self.cfg
    }

    /// The segments of one article (see [`segment_tokens`]).
    pub fn segments(&self, content: &[u32]) -> Result<Vec<Vec<u32>>> {
        segment_tokens(content, self.cfg.seg_len, self.cfg.max_segments, self.special)
    }

    /// Articles' token ids (without special tokens) → `(b, hidden)`.
    pub fn forward_t(&self, articles: &[&[u32]], train: bool) -> Result<Tensor> {
        if articles.is_empty() {
            return Err(Error::internal(
                "hierarchical encoder: called on an empty batch of articles",
            ));
        }
        let segs = articles
            .iter()
            .map(|a| self.segments(a))
            .collect::<Result<Vec<_>>>()?;
        let counts: Vec<usize> = segs.iter().map(Vec::len).collect();
        let tokens: Vec<Tokens> = segs
            .iter()
            .flatten()
            .map(|ids| Tokens {
                type_ids: vec![0; ids.len()],
                mask: vec![1; ids.len()],
                ids: ids.clone(),
            })
            .collect();
        let refs: Vec<&Tokens> = tokens.iter().collect();
        let device = self.bert.device();
        let inputs = pad_batch(&refs, self.special.pad, device)?;
        let cls = pool(
            &self.bert.forward_t(&inputs, train)?,
            &inputs.attention_mask,
            Pooling::Cls,
        )?;
        let d = cls.dim(1)?;
        let m = counts.iter().copied().max().unwrap_or(1);
        let mut rows = Vec::with_capacity(articles.len());
        let mut mask = Vec::with_capacity(articles.len() * m);
        let mut offset = 0;
        for &c in &counts {
            let mut r = cls.narrow(0, offset, c)?;
            if c < m {
                r = Tensor::cat(&[&r, &Tensor::zeros((m - c, d), cls.dtype(), device)?], 0)?;
            }
            rows.push(r);
            mask.extend((0..m).map(|j| u8::from(j < c)));
            offset += c;
        }
        let b = articles.len();
        let x = Tensor::stack(&rows, 0)?.broadcast_add(&self.segment_positions.narrow(0, 0, m)?)?;
        let mask = Tensor::from_vec(mask, (b, m), device)?;
        let keep = mask.to_dtype(x.dtype())?;
        let bias = ((keep.ones_like()? - &keep)? * f64::from(f32::MIN))?.reshape((b, 1, 1, m))?;
        let mut x = x;
        for layer in &self.layers {
            x = layer.forward_t(&x, &bias, train)?;
        }
        let fill = Tensor::full(f32::MIN, (b, m, d), device)?.to_dtype(x.dtype())?;
        let masked = mask
            .unsqueeze(2)?
            .broadcast_as((b, m, d))?
            .where_cond(&x, &fill)?;
        Ok(masked.max(1)?)
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked (tiny random BERT, hidden 32):
    //! - segmentation: the expected number and content of `[CLS] … [SEP]` segments, truncation at
    //!   `max_segments`, an empty article;
    //! - output shape `(b, hidden)`;
    //! - padding: an article batched with a longer one (fewer segments, shorter segments) gives the
    //!   same vector as encoded alone, to 1e-5 with `train = false`; so does the longer one;
    //! - gradients reach the segment-level parameters and the BERT variables in training mode;
    //! - validation: heads must divide the hidden size (the default 12 does not divide 32), `seg_len`
    //!   within the positions, serde defaults and `deny_unknown_fields`; bad settings are
    //!   `Error::Param`, an empty batch `Error::Internal`.
    use candle_core::{DType, Device, Tensor};
    use candle_nn::{VarBuilder, VarMap};

    use super::*;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    const SPECIAL: SpecialTokens = SpecialTokens {
        cls: 1,
        sep: 2,
        pad: 0,
    };

    fn cfg() -> HierConfig {
        HierConfig {
            seg_len: 8,
            max_segments: 6,
            heads: 4,
            ..HierConfig::default()
        }
    }

    fn encoder(vars: &VarMap) -> crate::Result<HierarchicalEncoder> {
        let vb = VarBuilder::from_varmap(vars, DType::F32, &Device::Cpu);
        let bert = BertModel::load(&BertConfig::tiny(), vb.pp("bert"), false)?;
        HierarchicalEncoder::new(bert, &cfg(), SPECIAL, vb.pp("hier"))
    }

    fn tokens(n: usize, start: u32) -> Vec<u32> {
        (0..n as u32).map(|i| 3 + (start + 7 * i) % 90).collect()
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .and_then(|d| d.abs())
            .and_then(|d| d.flatten_all())
            .and_then(|d| d.max(0))
            .and_then(|d| d.to_scalar::<f32>())
            .expect("diff")
    }

    #[test]
    fn segmentation() -> R {
        let content: Vec<u32> = (10..20).collect();
        let segs = segment_tokens(&content, 5, 16, SPECIAL)?;
        assert_eq!(segs.len(), 4, "10 tokens, 3 per segment");
        assert_eq!(segs[0], [1, 10, 11, 12, 2]);
        assert_eq!(segs[3], [1, 19, 2]);
        assert!(segs.iter().all(|s| s.len() <= 5));
        assert_eq!(segment_tokens(&content, 5, 2, SPECIAL)?.len(), 2);
        assert_eq!(segment_tokens(&content, 12, 16, SPECIAL)?.len(), 1);
        assert_eq!(
            segment_tokens(&(0..300).collect::<Vec<_>>(), 128, 16, SPECIAL)?.len(),
            3
        );
        assert_eq!(segment_tokens(&[], 5, 2, SPECIAL)?, [vec![1, 2]]);
        assert!(matches!(
            segment_tokens(&content, 2, 2, SPECIAL),
            Err(Error::Param(_))
        ));
        assert!(matches!(
            segment_tokens(&content, 5, 0, SPECIAL),
            Err(Error::Param(_))
        ));
        Ok(())
    }

    #[test]
    fn shape_and_padding_invariance() -> R {
        let vars = VarMap::new();
        let enc = encoder(&vars)?;
        let short = tokens(4, 0); // 1 segment of 6 tokens
        let long = tokens(20, 5); // 4 segments (6 + 6 + 6 + 2 content tokens)
        assert_eq!(enc.segments(&long)?.len(), 4);
        let both = enc.forward_t(&[&short, &long], false)?;
        assert_eq!(both.dims(), &[2, 32]);
        let alone = enc.forward_t(&[&short], false)?;
        let d = max_abs_diff(&both.narrow(0, 0, 1)?, &alone);
        assert!(d < 1e-5, "padded short article differs by {d}");
        let alone = enc.forward_t(&[&long], false)?;
        let d = max_abs_diff(&both.narrow(0, 1, 1)?, &alone);
        assert!(d < 1e-5, "long article differs by {d}");
        // Deterministic in evaluation, different articles give different vectors.
        assert_eq!(max_abs_diff(&enc.forward_t(&[&short, &long], false)?, &both), 0.0);
        assert!(max_abs_diff(&both.narrow(0, 0, 1)?, &both.narrow(0, 1, 1)?) > 1e-3);
        assert!(matches!(enc.forward_t(&[], false), Err(Error::Internal(_))));
        Ok(())
    }

    #[test]
    fn gradients_reach_segment_and_token_levels() -> R {
        let vars = VarMap::new();
        let enc = encoder(&vars)?;
        let (a, b) = (tokens(9, 1), tokens(15, 2));
        let out = enc.forward_t(&[&a, &b], true)?;
        let grads = out.sqr()?.sum_all()?.backward()?;
        let data = vars.data().lock().expect("vars");
        for name in [
            "hier.segment_position_embeddings.weight",
            "hier.segment_encoder.layers.0.self_attn.in_proj_weight",
            "hier.segment_encoder.layers.1.linear2.weight",
            "hier.segment_encoder.layers.1.norm2.weight",
            "bert.encoder.layer.0.attention.self.query.weight",
        ] {
            let var = data.get(name).ok_or_else(|| format!("missing {name}"))?;
            let g = grads
                .get(var.as_tensor())
                .ok_or_else(|| format!("no gradient for {name}"))?;
            assert!(
                g.abs()?.sum_all()?.to_scalar::<f32>()? > 0.0,
                "{name}: zero gradient"
            );
        }
        Ok(())
    }

    #[test]
    fn config_validation() -> R {
        let bert = BertConfig::tiny();
        let parsed: HierConfig = serde_json::from_str(r#"{"seg_len": 16}"#)?;
        assert_eq!(parsed.heads, 12);
        assert_eq!(parsed.max_segments, 16);
        assert!(serde_json::from_str::<HierConfig>(r#"{"segment_len": 16}"#).is_err());
        HierConfig::default().validate()?;
        assert!(matches!(
            HierConfig::default().validate_for(&bert),
            Err(Error::Param(_))
        ));
        cfg().validate_for(&bert)?;
        let bad = [
            HierConfig { seg_len: 65, ..cfg() },
            HierConfig { seg_len: 2, ..cfg() },
            HierConfig { heads: 0, ..cfg() },
            HierConfig {
                dropout: 1.0,
                ..cfg()
            },
            HierConfig {
                num_layers: 0,
                ..cfg()
            },
        ];
        for c in bad {
            assert!(matches!(c.validate_for(&bert), Err(Error::Param(_))), "{c:?}");
        }
        Ok(())
    }
}
