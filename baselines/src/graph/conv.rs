//! GATv2 (Brody, Alon & Yahav 2022) as PyTorch Geometric's `GATv2Conv(share_weights=False)`, and a
//! layer that wraps it with a residual connection and an activation.
//!
//! For an edge `j → i` with attribute `e_ij`, per head:
//! `x_l = lin_l(x)` (sources), `x_r = lin_r(x)` (destinations),
//! `s_ij = attᵀ LeakyReLU(x_l[j] + x_r[i] + lin_edge(e_ij))`, `α_ij = softmax_j(s_ij)` over the
//! incoming edges of `i`, `out_i = Σ_j α_ij x_l[j] + bias`; heads are concatenated (or averaged).
//! A node without incoming edges gets `bias` alone (with self-loops it gets itself).

use candle_core::{DType, Device, Tensor};
use candle_nn::{Init, VarBuilder};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use lexbench_engine::dropout::Dropout;

/// Options of one [`GatV2Conv`] (PyG's constructor arguments).
#[derive(Debug, Clone, PartialEq)]
pub struct GatV2Config {
    /// Input width (`in_channels`).
    pub in_dim: usize,
    /// Width of one head (`out_channels`).
    pub out_dim: usize,
    /// Attention heads.
    pub heads: usize,
    /// Width of edge attributes (`edge_dim`); `None`: no `lin_edge`.
    pub edge_dim: Option<usize>,
    /// Concatenate the heads (`(n, heads · out_dim)`) or average them (`(n, out_dim)`).
    pub concat: bool,
    /// Slope of the LeakyReLU for negative inputs (PyG's default 0.2).
    pub negative_slope: f64,
    /// Dropout on the attention weights, training only (PyG's default 0).
    pub dropout: f32,
    /// Remove existing self-loops and add one per node, its edge attribute the mean of the node's
    /// incoming edge attributes (PyG's `fill_value="mean"`; 0 for a node without incoming edges).
    pub add_self_loops: bool,
}

impl GatV2Config {
    /// PyG's defaults for the given sizes: concatenated heads, slope 0.2, no dropout, self-loops.
    pub fn new(in_dim: usize, out_dim: usize, heads: usize, edge_dim: Option<usize>) -> Self {
        Self {
            in_dim,
            out_dim,
            heads,
            edge_dim,
            concat: true,
            negative_slope: 0.2,
            dropout: 0.0,
            add_self_loops: true,
        }
    }

    /// Checks the sizes and rates.
    pub fn validate(&self) -> Result<()> {
        if self.in_dim == 0 || self.out_dim == 0 || self.heads == 0 || self.edge_dim == Some(0) {
            return Err(Error::Param(format!(
                "gatv2 in_dim, out_dim, heads and edge_dim must be at least 1, got {}, {}, {}, {:?}",
                self.in_dim, self.out_dim, self.heads, self.edge_dim
            )));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::Param(format!(
                "gatv2 attention dropout must be in [0, 1), got {}",
                self.dropout
            )));
        }
        if !self.negative_slope.is_finite() {
            return Err(Error::Param(format!(
                "gatv2 negative_slope must be finite, got {}",
                self.negative_slope
            )));
        }
        Ok(())
    }

    /// Width of the output: `heads · out_dim` when concatenating, else `out_dim`.
    pub fn output_dim(&self) -> usize {
        if self.concat {
            self.heads * self.out_dim
        } else {
            self.out_dim
        }
    }
}

/// Glorot (Xavier) uniform initialisation, as PyG's `glorot` (bound `√(6 / (fan_in + fan_out))`).
pub(crate) fn glorot(fan_in: usize, fan_out: usize) -> Init {
    let bound = (6.0 / (fan_in + fan_out) as f64).sqrt();
    Init::Uniform {
        lo: -bound,
        up: bound,
    }
}

/// Checks that `src` and `dst` have the same length and index nodes below `n`.
pub(crate) fn check_edges(n: usize, src: &[u32], dst: &[u32]) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::internal(format!(
            "edge index: {} sources but {} destinations",
            src.len(),
            dst.len()
        )));
    }
    if let Some(&bad) = src.iter().chain(dst).find(|&&v| v as usize >= n) {
        return Err(Error::data(
            "graph edges",
            format!("node {bad} is out of range for {n} nodes"),
        ));
    }
    Ok(())
}

fn index_tensor(ids: &[u32], device: &Device) -> Result<Tensor> {
    Ok(Tensor::from_slice(ids, ids.len(), device)?)
}

/// `x Wᵀ + b` for `x` `(n, in)`, `W` `(out, in)`.
fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let y = x.matmul(&w.t()?)?;
    Ok(match b {
        Some(b) => y.broadcast_add(b)?,
        None => y,
    })
}

/// The attention weights of one forward pass: `alpha` `(E', heads)` for the edges `src[k] → dst[k]`
/// actually used (with self-loops: the input's non-loop edges in order, then one loop per node).
#[derive(Debug, Clone)]
pub struct AttentionWeights {
    /// Source of every edge.
    pub src: Vec<u32>,
    /// Destination of every edge.
    pub dst: Vec<u32>,
    /// `α`, `(E', heads)`; over the incoming edges of a node each column sums to 1 (before dropout).
    pub alpha: Tensor,
}

/// One GATv2 convolution with PyG's parameter names: `lin_l.weight` `(H·C, in)`, `lin_l.bias`
/// `(H·C)`, `lin_r.weight`, `lin_r.bias`, `lin_edge.weight` `(H·C, edge_dim)` (no bias), `att`
/// `(1, H, C)`, `bias` `(H·C)` (or `(C)` when averaging heads).
#[derive(Debug, Clone)]
pub struct GatV2Conv {
    cfg: GatV2Config,
    lin_l: (Tensor, Tensor),
    lin_r: (Tensor, Tensor),
    lin_edge: Option<Tensor>,
    att: Tensor,
    bias: Tensor,
    dropout: Dropout,
}

impl GatV2Conv {
    /// Loads (or, over a `VarMap`, creates with PyG's initialisation: Glorot weights, zero biases)
    /// the parameters under `vb`.
    pub fn load(cfg: &GatV2Config, vb: VarBuilder<'_>) -> Result<Self> {
        cfg.validate()?;
        let (h, c) = (cfg.heads, cfg.out_dim);
        let hc = h * c;
        let lin = |name: &str| -> Result<(Tensor, Tensor)> {
            let v = vb.pp(name);
            Ok((
                v.get_with_hints((hc, cfg.in_dim), "weight", glorot(cfg.in_dim, hc))?,
                v.get_with_hints(hc, "bias", Init::Const(0.0))?,
            ))
        };
        let lin_l = lin("lin_l")?;
        let lin_r = lin("lin_r")?;
        let lin_edge = match cfg.edge_dim {
            Some(d) => Some(
                vb.pp("lin_edge")
                    .get_with_hints((hc, d), "weight", glorot(d, hc))?,
            ),
            None => None,
        };
        let att = vb.get_with_hints((1, h, c), "att", glorot(h, c))?;
        let bias = vb.get_with_hints(cfg.output_dim(), "bias", Init::Const(0.0))?;
        Ok(Self {
            cfg: cfg.clone(),
            lin_l,
            lin_r,
            lin_edge,
            att,
            bias,
            dropout: Dropout::new(cfg.dropout),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GatV2Config {
        &self.cfg
    }

    /// `x` `(n, in)`, edges `src[k] → dst[k]`, `edge_attr` `(E, edge_dim)` or `None` → `(n, out)`.
    pub fn forward_t(
        &self,
        x: &Tensor,
        src: &[u32],
        dst: &[u32],
        edge_attr: Option<&Tensor>,
        train: bool,
    ) -> Result<Tensor> {
        Ok(self.forward_with_attention(x, src, dst, edge_attr, train)?.0)
    }

    /// [`GatV2Conv::forward_t`], also returning the attention weights (PyG's
    /// `return_attention_weights=True`).
    pub fn forward_with_attention(
        &self,
        x: &Tensor,
        src: &[u32],
        dst: &[u32],
        edge_attr: Option<&Tensor>,
        train: bool,
    ) -> Result<(Tensor, AttentionWeights)> {
        let (n, in_dim) = x.dims2().map_err(|_| {
            Error::internal(format!(
                "GATv2 input must be (nodes, features), got {:?}",
                x.dims()
            ))
        })?;
        if in_dim != self.cfg.in_dim {
            return Err(Error::internal(format!(
                "GATv2 input has {in_dim} features, the layer expects {}",
                self.cfg.in_dim
            )));
        }
        check_edges(n, src, dst)?;
        let edge_attr = self.check_edge_attr(edge_attr, src.len())?;
        let (src, dst, edge_attr) = if self.cfg.add_self_loops {
            self.with_self_loops(n, src, dst, edge_attr.as_ref())?
        } else {
            (src.to_vec(), dst.to_vec(), edge_attr)
        };
        let (h, c) = (self.cfg.heads, self.cfg.out_dim);
        let device = x.device();
        let e = src.len();
        let xl = linear(x, &self.lin_l.0, Some(&self.lin_l.1))?;
        let (out, alpha) = if e == 0 {
            let alpha = Tensor::zeros((0, h), x.dtype(), device)?;
            let out = Tensor::zeros((n, h * c), x.dtype(), device)?;
            (out, alpha)
        } else {
            let xr = linear(x, &self.lin_r.0, Some(&self.lin_r.1))?;
            let src_t = index_tensor(&src, device)?;
            let dst_t = index_tensor(&dst, device)?;
            let xj = xl.index_select(&src_t, 0)?;
            let mut m = (&xj + xr.index_select(&dst_t, 0)?)?;
            if let (Some(w), Some(attr)) = (&self.lin_edge, &edge_attr) {
                m = (m + linear(attr, w, None)?)?;
            }
            let m = candle_nn::ops::leaky_relu(&m, self.cfg.negative_slope)?;
            let scores = m.reshape((e, h, c))?.broadcast_mul(&self.att)?.sum(2)?;
            let alpha = segment_softmax(&scores, &dst, &dst_t, n)?;
            let alpha_used = if train && self.cfg.dropout > 0.0 {
                self.dropout.forward(&alpha, true)?
            } else {
                alpha.clone()
            };
            let msg = xj
                .reshape((e, h, c))?
                .broadcast_mul(&alpha_used.unsqueeze(2)?)?
                .reshape((e, h * c))?;
            let out = Tensor::zeros((n, h * c), msg.dtype(), device)?.index_add(&dst_t, &msg, 0)?;
            (out, alpha)
        };
        let out = if self.cfg.concat {
            out
        } else {
            out.reshape((n, h, c))?.mean(1)?
        };
        let out = out.broadcast_add(&self.bias)?;
        Ok((out, AttentionWeights { src, dst, alpha }))
    }

    fn check_edge_attr(&self, edge_attr: Option<&Tensor>, e: usize) -> Result<Option<Tensor>> {
        let Some(attr) = edge_attr else {
            return Ok(None);
        };
        let Some(d) = self.cfg.edge_dim else {
            return Err(Error::internal(
                "GATv2: edge attributes given to a layer built without edge_dim",
            ));
        };
        if attr.dims() != [e, d] {
            return Err(Error::internal(format!(
                "GATv2 edge attributes must be ({e}, {d}) for {e} edges, got {:?}",
                attr.dims()
            )));
        }
        Ok(Some(attr.clone()))
    }

    /// PyG's `remove_self_loops` + `add_self_loops(fill_value="mean")`.
    fn with_self_loops(
        &self,
        n: usize,
        src: &[u32],
        dst: &[u32],
        edge_attr: Option<&Tensor>,
    ) -> Result<(Vec<u32>, Vec<u32>, Option<Tensor>)> {
        let keep: Vec<u32> = (0..src.len() as u32)
            .filter(|&k| src[k as usize] != dst[k as usize])
            .collect();
        let mut s: Vec<u32> = keep.iter().map(|&k| src[k as usize]).collect();
        let mut d: Vec<u32> = keep.iter().map(|&k| dst[k as usize]).collect();
        let attr = match edge_attr {
            None => None,
            Some(attr) => {
                let device = attr.device();
                let width = attr.dim(1)?;
                let mut counts = vec![0f32; n];
                for &v in &d {
                    counts[v as usize] += 1.0;
                }
                let counts = Tensor::from_vec(counts, (n, 1), device)?
                    .clamp(1f32, f32::INFINITY)?
                    .to_dtype(attr.dtype())?;
                let mut sums = Tensor::zeros((n, width), attr.dtype(), device)?;
                let kept = if keep.is_empty() {
                    Tensor::zeros((0, width), attr.dtype(), device)?
                } else {
                    let kept = attr.index_select(&index_tensor(&keep, device)?, 0)?;
                    sums = sums.index_add(&index_tensor(&d, device)?, &kept, 0)?;
                    kept
                };
                let loops = sums.broadcast_div(&counts)?;
                Some(Tensor::cat(&[&kept, &loops], 0)?)
            }
        };
        s.extend(0..n as u32);
        d.extend(0..n as u32);
        Ok((s, d, attr))
    }
}

/// Softmax of `scores` `(E, H)` over the edges sharing a destination (`dst`, also as the tensor
/// `dst_t`), for `n` nodes. The per-destination, per-head maximum is subtracted first for numerical
/// stability; it is computed on the host from the detached scores, so it is a constant for autograd
/// (softmax is invariant to a per-destination constant, so the gradient is exact).
pub fn segment_softmax(scores: &Tensor, dst: &[u32], dst_t: &Tensor, n: usize) -> Result<Tensor> {
    let (e, h) = scores.dims2()?;
    if e != dst.len() {
        return Err(Error::internal(format!(
            "segment softmax: {e} scores but {} destinations",
            dst.len()
        )));
    }
    let host = scores.detach().to_dtype(DType::F32)?.to_vec2::<f32>()?;
    let mut max = vec![f32::NEG_INFINITY; n * h];
    for (row, &d) in host.iter().zip(dst) {
        for (k, &v) in row.iter().enumerate() {
            let slot = &mut max[d as usize * h + k];
            *slot = slot.max(v);
        }
    }
    // Nodes without incoming edges are never looked up; keep their entries finite anyway.
    for v in &mut max {
        if !v.is_finite() {
            *v = 0.0;
        }
    }
    let max = Tensor::from_vec(max, (n, h), scores.device())?.to_dtype(scores.dtype())?;
    let ex = scores.broadcast_sub(&max.index_select(dst_t, 0)?)?.exp()?;
    let denom = Tensor::zeros((n, h), ex.dtype(), ex.device())?.index_add(dst_t, &ex, 0)?;
    Ok(ex.broadcast_div(&denom.index_select(dst_t, 0)?)?)
}

/// The non-linearity after a [`GatLayer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// Identity.
    None,
    /// `x` for `x > 0`, `eᵡ − 1` otherwise (the GAT papers' choice).
    Elu,
    /// Exact GELU.
    Gelu,
}

impl Activation {
    /// Applies the activation.
    pub fn apply(self, x: &Tensor) -> Result<Tensor> {
        Ok(match self {
            Self::None => x.clone(),
            Self::Elu => x.elu(1.0)?,
            Self::Gelu => x.gelu_erf()?,
        })
    }
}

/// `act(conv(x) + residual(x))`: a [`GatV2Conv`] with a residual connection (the identity when the
/// widths agree, else a linear projection `res.weight` `(out, in)` without bias) and an activation.
/// Parameters: `conv.*` and `res.weight` under the layer's `VarBuilder`.
#[derive(Debug, Clone)]
pub struct GatLayer {
    conv: GatV2Conv,
    residual: Option<Residual>,
    activation: Activation,
}

#[derive(Debug, Clone)]
enum Residual {
    Identity,
    Projection(Tensor),
}

impl GatLayer {
    /// Loads the convolution under `conv` and, with `residual` and differing widths, `res.weight`.
    pub fn load(
        cfg: &GatV2Config,
        residual: bool,
        activation: Activation,
        vb: VarBuilder<'_>,
    ) -> Result<Self> {
        let conv = GatV2Conv::load(cfg, vb.pp("conv"))?;
        let out = cfg.output_dim();
        let residual = match residual {
            false => None,
            true if out == cfg.in_dim => Some(Residual::Identity),
            true => Some(Residual::Projection(vb.pp("res").get_with_hints(
                (out, cfg.in_dim),
                "weight",
                glorot(cfg.in_dim, out),
            )?)),
        };
        Ok(Self {
            conv,
            residual,
            activation,
        })
    }

    /// The convolution.
    pub fn conv(&self) -> &GatV2Conv {
        &self.conv
    }

    /// As [`GatV2Conv::forward_t`], plus the residual and the activation; `activate = false` skips
    /// the activation (the last layer of a stack).
    pub fn forward_t(
        &self,
        x: &Tensor,
        src: &[u32],
        dst: &[u32],
        edge_attr: Option<&Tensor>,
        activate: bool,
        train: bool,
    ) -> Result<Tensor> {
        let mut y = self.conv.forward_t(x, src, dst, edge_attr, train)?;
        match &self.residual {
            None => {}
            Some(Residual::Identity) => y = (y + x)?,
            Some(Residual::Projection(w)) => y = (y + linear(x, w, None)?)?,
        }
        if activate {
            self.activation.apply(&y)
        } else {
            Ok(y)
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked:
    //! - a hand-worked GATv2 example (1 head, in 2, out 2, edge_dim 1; arithmetic below);
    //! - a 2-head example with edge attributes, with and without PyG's mean-filled self-loops, against
    //!   numpy (`tests/data/gatv2_reference.py --numpy`) and, when `tests/data/gatv2_reference.json`
    //!   exists (written by the same script under PyTorch Geometric), against PyG, both to 1e-5;
    //! - attention weights sum to 1 over the incoming edges of every node; a node without incoming
    //!   edges gets the bias alone, with self-loops it attends to itself;
    //! - gradients reach every parameter (`lin_l`, `lin_r`, `lin_edge`, `att`, `bias`);
    //! - the residual layer projects when widths differ; a node index out of range is `Error::Data`, a
    //!   tensor of the wrong shape `Error::Internal`, a bad config value `Error::Param`.
    use std::collections::HashMap;

    use candle_core::{DType, Device, Tensor};
    use candle_nn::{VarBuilder, VarMap};

    use super::*;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn t2(rows: &[&[f32]]) -> Tensor {
        let c = rows[0].len();
        let flat: Vec<f32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
        Tensor::from_vec(flat, (rows.len(), c), &Device::Cpu).expect("tensor")
    }

    fn t1(v: &[f32]) -> Tensor {
        Tensor::new(v, &Device::Cpu).expect("tensor")
    }

    fn close(a: &Tensor, want: &[Vec<f32>], tol: f32) {
        let got = a.to_vec2::<f32>().expect("values");
        assert_eq!(got.len(), want.len(), "rows: {got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.len(), w.len());
            for (x, y) in g.iter().zip(w) {
                assert!((x - y).abs() <= tol, "{got:?}\n  vs\n{want:?}");
            }
        }
    }

    /// A case of `tests/data/gatv2_reference.py`: the layer with its fixed weights, and the inputs.
    struct Case {
        conv: GatV2Conv,
        x: Tensor,
        src: Vec<u32>,
        dst: Vec<u32>,
        attr: Tensor,
    }

    fn hand_case() -> Case {
        let mut w = HashMap::new();
        w.insert("lin_l.weight".to_owned(), t2(&[&[1.0, 0.0], &[0.0, 1.0]]));
        w.insert("lin_l.bias".to_owned(), t1(&[0.0, 0.0]));
        w.insert("lin_r.weight".to_owned(), t2(&[&[0.0, 1.0], &[1.0, 0.0]]));
        w.insert("lin_r.bias".to_owned(), t1(&[0.0, 0.0]));
        w.insert("lin_edge.weight".to_owned(), t2(&[&[1.0], &[0.0]]));
        w.insert(
            "att".to_owned(),
            t1(&[1.0, -1.0]).reshape((1, 1, 2)).expect("att"),
        );
        w.insert("bias".to_owned(), t1(&[0.5, -0.5]));
        let mut cfg = GatV2Config::new(2, 2, 1, Some(1));
        cfg.add_self_loops = false;
        let vb = VarBuilder::from_tensors(w, DType::F32, &Device::Cpu);
        Case {
            conv: GatV2Conv::load(&cfg, vb).expect("conv"),
            x: t2(&[&[1.0, 0.0], &[0.0, 1.0], &[1.0, 1.0]]),
            src: vec![0, 1, 2],
            dst: vec![2, 2, 0],
            attr: t2(&[&[1.0], &[-2.0], &[2.0]]),
        }
    }

    fn two_heads_case(self_loops: bool) -> Case {
        let mut w = HashMap::new();
        let lin_l: &[&[f32]] = &[
            &[0.2, -0.1, 0.3],
            &[0.4, 0.5, -0.2],
            &[-0.3, 0.1, 0.2],
            &[0.1, -0.4, 0.6],
        ];
        let lin_r: &[&[f32]] = &[
            &[-0.5, 0.2, 0.1],
            &[0.3, -0.3, 0.4],
            &[0.2, 0.6, -0.1],
            &[-0.2, 0.1, 0.3],
        ];
        w.insert("lin_l.weight".to_owned(), t2(lin_l));
        w.insert("lin_l.bias".to_owned(), t1(&[0.1, -0.2, 0.05, 0.0]));
        w.insert("lin_r.weight".to_owned(), t2(lin_r));
        w.insert("lin_r.bias".to_owned(), t1(&[0.0, 0.1, -0.1, 0.2]));
        w.insert(
            "lin_edge.weight".to_owned(),
            t2(&[&[0.3, -0.2], &[0.1, 0.4], &[-0.5, 0.2], &[0.6, 0.1]]),
        );
        w.insert(
            "att".to_owned(),
            t1(&[0.7, -0.4, 0.5, 0.9]).reshape((1, 2, 2)).expect("att"),
        );
        w.insert("bias".to_owned(), t1(&[0.01, -0.02, 0.03, -0.04]));
        let mut cfg = GatV2Config::new(3, 2, 2, Some(2));
        cfg.add_self_loops = self_loops;
        let vb = VarBuilder::from_tensors(w, DType::F32, &Device::Cpu);
        Case {
            conv: GatV2Conv::load(&cfg, vb).expect("conv"),
            x: t2(&[
                &[0.5, -1.0, 2.0],
                &[1.5, 0.25, -0.5],
                &[-1.0, 0.75, 0.5],
                &[0.0, 1.0, -1.5],
            ]),
            // Edge 5 (0 → 0) is a self-loop: kept without self-loops, replaced with them.
            src: vec![0, 2, 3, 1, 3, 0, 2],
            dst: vec![1, 1, 1, 2, 2, 0, 0],
            attr: t2(&[
                &[1.0, 0.0],
                &[0.0, 1.0],
                &[0.5, 0.5],
                &[1.0, 0.0],
                &[0.0, 1.0],
                &[-1.0, 0.5],
                &[0.5, -1.0],
            ]),
        }
    }

    fn run(c: &Case) -> (Tensor, AttentionWeights) {
        c.conv
            .forward_with_attention(&c.x, &c.src, &c.dst, Some(&c.attr), false)
            .expect("forward")
    }

    #[test]
    fn gatv2_hand_example() {
        // x_l = lin_l(x) = x (identity): x_l = [1,0], [0,1], [1,1].
        // x_r = lin_r(x) swaps the two features: x_r = [0,1], [1,0], [1,1].
        // lin_edge(e) = [e, 0]: edges 0→2 (e = 1), 1→2 (e = −2), 2→0 (e = 2).
        // Edge 0→2: x_l[0] + x_r[2] + [1,0] = [1,0] + [1,1] + [1,0] = [3,1]; LeakyReLU = [3,1];
        //   s = att·(3,1) = 1·3 − 1·1 = 2.
        // Edge 1→2: [0,1] + [1,1] + [−2,0] = [−1,2]; LeakyReLU = [−0.2,2]; s = −0.2 − 2 = −2.2.
        // Edge 2→0: [1,1] + [0,1] + [2,0] = [3,2]; s = 1 (the only edge into 0, so α = 1).
        // Node 2: α(0→2) = e² / (e² + e^−2.2) = 1 / (1 + e^−4.2) = 1 / 1.0149956 = 0.9852260,
        //   α(1→2) = 0.0147740; out_2 = 0.9852260·[1,0] + 0.0147740·[0,1] + [0.5,−0.5]
        //   = [1.4852260, −0.4852260].
        // Node 0: out_0 = 1·x_l[2] + bias = [1,1] + [0.5,−0.5] = [1.5, 0.5].
        // Node 1: no incoming edge, so out_1 = bias = [0.5, −0.5].
        let (out, att) = run(&hand_case());
        close(
            &out,
            &[vec![1.5, 0.5], vec![0.5, -0.5], vec![1.485_226, -0.485_226]],
            1e-5,
        );
        close(&att.alpha, &[vec![0.985_226], vec![0.014_774], vec![1.0]], 1e-5);
    }

    /// Values of `python3 tests/data/gatv2_reference.py --numpy` (float64), to 7 decimals.
    fn numpy_two_heads(self_loops: bool) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
        if self_loops {
            (
                vec![
                    vec![0.638_331_1, -0.751_124_7, 0.287_255_9, 1.301_698_8],
                    vec![0.358_035_9, -0.272_268_7, 0.190_452_5, 0.882_177_6],
                    vec![0.021_363_4, 0.232_558_2, 0.075_422_4, -0.391_038_8],
                    vec![-0.44, 0.58, -0.12, -1.34],
                ],
                vec![
                    vec![0.430_309_9, 0.650_662_2],
                    vec![0.228_378_8, 0.168_593_5],
                    vec![0.163_449_8, 0.085_113_9],
                    vec![0.439_525, 0.369_548_9],
                    vec![0.172_983_2, 0.163_005_4],
                    vec![0.293_696_1, 0.176_172_1],
                    vec![0.706_303_9, 0.823_827_9],
                    vec![0.177_861_6, 0.095_630_4],
                    vec![0.387_491_8, 0.467_445_7],
                    vec![1.0, 1.0],
                ],
            )
        } else {
            (
                vec![
                    vec![0.487_292, -0.657_235_6, 0.319_174_3, 1.129_830_7],
                    vec![0.384_653_5, -0.462_057_1, 0.257_646_9, 1.006_126_6],
                    vec![0.044_368, 0.597_939_6, -0.345_523_3, -0.611_386_3],
                    vec![0.01, -0.02, 0.03, -0.04],
                ],
                vec![
                    vec![0.523_403_2, 0.719_464_9],
                    vec![0.277_786_3, 0.186_421],
                    vec![0.198_810_5, 0.094_114_1],
                    vec![0.717_582_2, 0.693_917_8],
                    vec![0.282_417_8, 0.306_082_2],
                    vec![0.543_018_4, 0.725_617_5],
                    vec![0.456_981_6, 0.274_382_5],
                ],
            )
        }
    }

    #[test]
    fn gatv2_two_heads_matches_numpy_and_pyg() -> R {
        let reference =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gatv2_reference.json");
        let pyg: Option<serde_json::Value> = match std::fs::read_to_string(&reference) {
            Ok(text) => Some(serde_json::from_str(&text)?),
            Err(_) => None,
        };
        for (self_loops, name) in [(false, "two_heads"), (true, "two_heads_self_loops")] {
            let case = two_heads_case(self_loops);
            let (out, att) = run(&case);
            let (want_out, want_alpha) = numpy_two_heads(self_loops);
            close(&out, &want_out, 1e-5);
            close(&att.alpha, &want_alpha, 1e-5);
            if self_loops {
                assert_eq!(att.src, [0, 2, 3, 1, 3, 2, 0, 1, 2, 3]);
                assert_eq!(att.dst, [1, 1, 1, 2, 2, 0, 0, 1, 2, 3]);
            }
            if let Some(pyg) = &pyg {
                let as_rows = |v: &serde_json::Value| -> Vec<Vec<f32>> {
                    serde_json::from_value::<Vec<Vec<f32>>>(v.clone()).expect("rows")
                };
                close(&out, &as_rows(&pyg[name]["out"]), 1e-5);
                close(&att.alpha, &as_rows(&pyg[name]["alpha"]), 1e-5);
                let ei: Vec<Vec<u32>> = serde_json::from_value(pyg[name]["edge_index"].clone())?;
                assert_eq!((ei[0].clone(), ei[1].clone()), (att.src.clone(), att.dst.clone()));
            }
        }
        if let Some(pyg) = &pyg {
            let (out, _) = run(&hand_case());
            let rows: Vec<Vec<f32>> = serde_json::from_value(pyg["hand"]["out"].clone())?;
            close(&out, &rows, 1e-5);
        }
        Ok(())
    }

    /// Sums of `alpha` over the incoming edges of every node, `(n, heads)`.
    fn alpha_sums(att: &AttentionWeights, n: usize) -> Vec<Vec<f32>> {
        let alpha = att.alpha.to_vec2::<f32>().expect("alpha");
        let h = alpha.first().map_or(0, Vec::len);
        let mut sums = vec![vec![0f32; h]; n];
        for (row, &d) in alpha.iter().zip(&att.dst) {
            for (s, a) in sums[d as usize].iter_mut().zip(row) {
                *s += a;
            }
        }
        sums
    }

    #[test]
    fn attention_is_a_distribution_per_destination() -> R {
        let vars = VarMap::new();
        let vb = VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu);
        let mut cfg = GatV2Config::new(4, 3, 2, Some(2));
        cfg.add_self_loops = false;
        let conv = GatV2Conv::load(&cfg, vb.pp("plain"))?;
        cfg.add_self_loops = true;
        let looped = GatV2Conv::load(&cfg, vb.pp("looped"))?;
        let x = Tensor::randn(0f32, 1.0, (5, 4), &Device::Cpu)?;
        let (src, dst) = (vec![0u32, 3, 2, 3, 0, 4], vec![1u32, 1, 1, 2, 2, 1]);
        let attr = Tensor::randn(0f32, 1.0, (6, 2), &Device::Cpu)?;
        // Without self-loops: nodes 1 and 2 have incoming edges, 0, 3 and 4 have none.
        let (out, att) = conv.forward_with_attention(&x, &src, &dst, Some(&attr), false)?;
        let sums = alpha_sums(&att, 5);
        for (v, s) in sums.iter().enumerate() {
            let want = if v == 1 || v == 2 { 1.0 } else { 0.0 };
            assert!(s.iter().all(|x| (x - want).abs() < 1e-5), "node {v}: {s:?}");
        }
        let bias = conv.bias.to_vec1::<f32>()?;
        let rows = out.to_vec2::<f32>()?;
        for v in [0, 3, 4] {
            assert_eq!(rows[v], bias, "node {v} without incoming edges gets the bias");
        }
        // With self-loops every node attends to something, itself included.
        let (_, att) = looped.forward_with_attention(&x, &src, &dst, Some(&attr), false)?;
        assert_eq!(att.src.len(), 6 + 5);
        for s in alpha_sums(&att, 5) {
            assert!(s.iter().all(|x| (x - 1.0).abs() < 1e-5), "{s:?}");
        }
        // No edges at all: the bias for every node (no NaN from an empty softmax).
        let (out, att) = conv.forward_with_attention(&x, &[], &[], None, false)?;
        assert_eq!(att.alpha.dims(), &[0, 2]);
        assert!(out.to_vec2::<f32>()?.iter().all(|r| *r == bias));
        Ok(())
    }

    #[test]
    fn gradients_reach_every_parameter() -> R {
        let vars = VarMap::new();
        let vb = VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu);
        let mut cfg = GatV2Config::new(3, 2, 2, Some(2));
        cfg.dropout = 0.5;
        let conv = GatV2Conv::load(&cfg, vb)?;
        let x = Tensor::randn(0f32, 1.0, (4, 3), &Device::Cpu)?;
        let (src, dst) = (vec![0u32, 1, 2, 3, 0], vec![1u32, 2, 1, 1, 3]);
        let attr = Tensor::randn(0f32, 1.0, (5, 2), &Device::Cpu)?;
        let target = Tensor::randn(0f32, 1.0, (4, 4), &Device::Cpu)?;
        let out = conv.forward_t(&x, &src, &dst, Some(&attr), false)?;
        let loss = (out - &target)?.sqr()?.sum_all()?;
        let grads = loss.backward()?;
        let data = vars.data().lock().expect("vars");
        let mut names: Vec<&String> = data.keys().collect();
        names.sort();
        assert_eq!(
            names,
            [
                "att",
                "bias",
                "lin_edge.weight",
                "lin_l.bias",
                "lin_l.weight",
                "lin_r.bias",
                "lin_r.weight"
            ]
        );
        for (name, var) in data.iter() {
            let g = grads
                .get(var.as_tensor())
                .ok_or_else(|| format!("no gradient for {name}"))?;
            let norm = g.sqr()?.sum_all()?.to_scalar::<f32>()?;
            assert!(norm > 0.0 && norm.is_finite(), "{name}: gradient norm {norm}");
        }
        drop(data);
        // Training mode (attention dropout) runs and stays finite.
        let out = conv.forward_t(&x, &src, &dst, Some(&attr), true)?;
        assert!(out.to_vec2::<f32>()?.iter().flatten().all(|v| v.is_finite()));
        Ok(())
    }

    #[test]
    fn residual_layer_and_bad_inputs() -> R {
        let vars = VarMap::new();
        let vb = VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu);
        let cfg = GatV2Config::new(3, 2, 2, Some(2));
        let layer = GatLayer::load(&cfg, true, Activation::Elu, vb.pp("a"))?;
        assert!(vars.data().lock().expect("vars").contains_key("a.res.weight"));
        let x = Tensor::randn(0f32, 1.0, (4, 3), &Device::Cpu)?;
        let y = layer.forward_t(&x, &[0, 1], &[1, 2], None, true, false)?;
        assert_eq!(y.dims(), &[4, 4]);
        // Same widths: identity residual, no projection parameter.
        let same = GatLayer::load(
            &GatV2Config::new(4, 2, 2, None),
            true,
            Activation::Gelu,
            vb.pp("b"),
        )?;
        assert!(!vars.data().lock().expect("vars").contains_key("b.res.weight"));
        assert_eq!(
            same.forward_t(&y, &[0], &[1], None, false, false)?.dims(),
            &[4, 4]
        );

        let conv = layer.conv();
        let attr = Tensor::zeros((2, 2), DType::F32, &Device::Cpu)?;
        let bad = [
            conv.forward_t(
                &Tensor::zeros((4, 5), DType::F32, &Device::Cpu)?,
                &[0],
                &[1],
                None,
                false,
            ),
            conv.forward_t(
                &Tensor::zeros(4, DType::F32, &Device::Cpu)?,
                &[0],
                &[1],
                None,
                false,
            ),
            conv.forward_t(&x, &[0, 1], &[1], None, false),
            conv.forward_t(&x, &[0], &[1], Some(&attr), false),
            same.conv().forward_t(&y, &[0, 1], &[1, 2], Some(&attr), false),
        ];
        for r in bad {
            assert!(matches!(r, Err(Error::Internal(_))), "{r:?}");
        }
        let r = conv.forward_t(&x, &[0, 9], &[1, 2], None, false);
        assert!(matches!(r, Err(Error::Data { .. })), "{r:?}");
        let mut cfg = GatV2Config::new(3, 2, 0, None);
        assert!(matches!(cfg.validate(), Err(Error::Param(_))));
        cfg.heads = 1;
        cfg.dropout = 1.0;
        assert!(matches!(cfg.validate(), Err(Error::Param(_))));
        Ok(())
    }
}
