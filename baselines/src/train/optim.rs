//! AdamW with a saveable state, the linear warm-up/decay schedule and global-norm gradient clipping,
//! as PyTorch and HuggingFace define them.
//!
//! - [`AdamW`]: `torch.optim.AdamW` (decoupled weight decay `p ← p − lr·wd·p`, bias-corrected
//!   moments, `ε` added to `√v̂`). candle-nn's `AdamW` keeps its moments private, so a checkpoint could
//!   not restore them; this one saves and loads them ([`AdamW::state`], [`AdamW::load_state`]).
//!   Biases and layer-norm weights get no weight decay (HuggingFace's `no_decay` convention). On the
//!   CPU the update runs in place (three passes over each parameter instead of fourteen new
//!   tensors), with the tensor expressions' operations one for one: the same bits.
//! - [`LinearSchedule`]: `get_linear_schedule_with_warmup` — 0 → lr over the warm-up steps, then
//!   linearly to 0 at the last step.
//! - [`clip_grad_norm`]: `torch.nn.utils.clip_grad_norm_` — scales all gradients by
//!   `max_norm / (‖g‖₂ + 1e-6)` when the global norm exceeds `max_norm`.

use std::collections::BTreeMap;

use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// AdamW's hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdamWConfig {
    /// Peak learning rate (default 3e-5).
    #[serde(default = "default_lr")]
    pub lr: f64,
    /// β₁ (default 0.9).
    #[serde(default = "default_beta1")]
    pub beta1: f64,
    /// β₂ (default 0.999).
    #[serde(default = "default_beta2")]
    pub beta2: f64,
    /// ε (default 1e-8).
    #[serde(default = "default_eps")]
    pub eps: f64,
    /// Decoupled weight decay (default 0.01), not applied to biases and layer norms.
    #[serde(default = "default_wd")]
    pub weight_decay: f64,
}

fn default_lr() -> f64 {
    3e-5
}
fn default_beta1() -> f64 {
    0.9
}
fn default_beta2() -> f64 {
    0.999
}
fn default_eps() -> f64 {
    1e-8
}
fn default_wd() -> f64 {
    0.01
}

impl Default for AdamWConfig {
    fn default() -> Self {
        Self {
            lr: default_lr(),
            beta1: default_beta1(),
            beta2: default_beta2(),
            eps: default_eps(),
            weight_decay: default_wd(),
        }
    }
}

impl AdamWConfig {
    /// Checks the ranges (every value finite).
    pub fn validate(&self) -> Result<()> {
        let ok = self.lr.is_finite()
            && self.lr > 0.0
            && (0.0..1.0).contains(&self.beta1)
            && (0.0..1.0).contains(&self.beta2)
            && self.eps.is_finite()
            && self.eps > 0.0
            && self.weight_decay.is_finite()
            && self.weight_decay >= 0.0;
        if ok {
            Ok(())
        } else {
            Err(Error::Param(format!(
                "AdamW needs a finite lr > 0, β in [0, 1), a finite ε > 0 and a finite weight decay ≥ 0 \
                 (got lr {}, β {} and {}, ε {}, weight decay {})",
                self.lr, self.beta1, self.beta2, self.eps, self.weight_decay
            )))
        }
    }
}

/// Whether a parameter takes weight decay: not biases, not layer-norm weights.
pub fn decays(name: &str) -> bool {
    !(name.ends_with("bias") || name.contains("LayerNorm") || name.contains("layer_norm"))
}

struct Slot {
    name: String,
    var: Var,
    m: Tensor,
    v: Tensor,
    decay: bool,
}

/// AdamW over named variables (see the module documentation).
pub struct AdamW {
    slots: Vec<Slot>,
    step: u64,
    cfg: AdamWConfig,
    /// Update CPU f32 parameters in place (`in_place`); off, every update is tensor expressions.
    in_place: bool,
}

impl std::fmt::Debug for AdamW {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdamW")
            .field("variables", &self.slots.len())
            .field("step", &self.step)
            .field("cfg", &self.cfg)
            .finish()
    }
}

impl AdamW {
    /// An optimiser for `vars` (name, variable), moments at zero.
    pub fn new(vars: Vec<(String, Var)>, cfg: AdamWConfig) -> Result<Self> {
        cfg.validate()?;
        let slots = vars
            .into_iter()
            .map(|(name, var)| {
                Ok(Slot {
                    decay: decays(&name),
                    m: var.as_tensor().zeros_like()?,
                    v: var.as_tensor().zeros_like()?,
                    name,
                    var,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            slots,
            step: 0,
            cfg,
            in_place: true,
        })
    }

    /// Updates done so far.
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// One update with learning rate `lr` from `grads`; variables without a gradient are left alone.
    pub fn step(&mut self, grads: &GradStore, lr: f64) -> Result<()> {
        self.step += 1;
        let t = self.step as i32;
        let (b1, b2) = (self.cfg.beta1, self.cfg.beta2);
        let c1 = 1.0 - b1.powi(t);
        let c2 = 1.0 - b2.powi(t);
        let lr_wd = 1.0 - lr * self.cfg.weight_decay;
        for s in &mut self.slots {
            let Some(g) = grads.get(s.var.as_tensor()) else {
                continue;
            };
            // candle detaches the gradients of intermediate tensors but not those of variables: a
            // variable's gradient may still hold the op graph it was computed through (the step's
            // forward activations). Moments built from it would keep that graph, and through the
            // previous moments every earlier step's: memory grew by a whole step's activations per
            // step (3.6 GB for a MiniLM DPR batch of 8).
            let g = &g.detach();
            if self.in_place && lexbench_engine::adamw::applies(&[s.var.as_tensor(), &s.m, &s.v, g]) {
                // The same f32 operations as the tensor expressions below, in place and in three
                // passes instead of fourteen allocated tensors.
                let moment = |beta: f64, squared| lexbench_engine::adamw::Moment {
                    beta: beta as f32,
                    one_minus_beta: (1.0 - beta) as f32,
                    squared,
                };
                let consts = lexbench_engine::adamw::Consts {
                    inv_c1: (1.0 / c1) as f32,
                    inv_c2: (1.0 / c2) as f32,
                    eps: self.cfg.eps as f32,
                    decay: (s.decay && self.cfg.weight_decay > 0.0).then_some(lr_wd as f32),
                    lr: lr as f32,
                };
                s.m.inplace_op2(g, &moment(b1, false))?;
                s.v.inplace_op2(g, &moment(b2, true))?;
                s.var
                    .as_tensor()
                    .inplace_op3(&s.m, &s.v, &lexbench_engine::adamw::Update(consts))?;
                continue;
            }
            s.m = ((&s.m * b1)? + (g * (1.0 - b1))?)?;
            s.v = ((&s.v * b2)? + (g.sqr()? * (1.0 - b2))?)?;
            let m_hat = (&s.m / c1)?;
            let v_hat = (&s.v / c2)?;
            let mut p = s.var.as_tensor().detach();
            if s.decay && self.cfg.weight_decay > 0.0 {
                p = (&p * lr_wd)?;
            }
            let update = (m_hat / (v_hat.sqrt()? + self.cfg.eps)?)?;
            s.var.set(&(p - (update * lr)?)?)?;
        }
        Ok(())
    }

    /// The moments as named tensors (`m.<name>`, `v.<name>`; copies, as the moments are updated in
    /// place) and the step count.
    pub fn state(&self) -> Result<(BTreeMap<String, Tensor>, u64)> {
        let mut out = BTreeMap::new();
        for s in &self.slots {
            out.insert(format!("m.{}", s.name), s.m.copy()?);
            out.insert(format!("v.{}", s.name), s.v.copy()?);
        }
        Ok((out, self.step))
    }

    /// Restores moments and step count saved by [`AdamW::state`].
    pub fn load_state(
        &mut self,
        tensors: &std::collections::HashMap<String, Tensor>,
        step: u64,
    ) -> Result<()> {
        for s in &mut self.slots {
            for (key, slot) in [
                (format!("m.{}", s.name), &mut s.m),
                (format!("v.{}", s.name), &mut s.v),
            ] {
                let t = tensors
                    .get(&key)
                    .ok_or_else(|| Error::internal(format!("optimizer state has no {key}")))?;
                if t.shape() != slot.shape() {
                    return Err(Error::internal(format!(
                        "optimizer state {key}: shape {:?}",
                        t.shape()
                    )));
                }
                // A copy of its own: the moments are updated in place.
                *slot = t.to_device(slot.device())?.copy()?;
            }
        }
        self.step = step;
        Ok(())
    }
}

/// Linear warm-up then linear decay to zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearSchedule {
    /// Peak learning rate.
    pub peak: f64,
    /// Warm-up steps.
    pub warmup: u64,
    /// Total steps.
    pub total: u64,
}

impl LinearSchedule {
    /// The learning rate of update number `step` (0-based), as HuggingFace's
    /// `get_linear_schedule_with_warmup`: `peak · step / warmup` during warm-up, then
    /// `peak · (total − step) / (total − warmup)`, never below 0.
    pub fn lr(&self, step: u64) -> f64 {
        if step < self.warmup {
            return self.peak * step as f64 / self.warmup.max(1) as f64;
        }
        let rest = self.total.saturating_sub(self.warmup).max(1) as f64;
        (self.peak * self.total.saturating_sub(step) as f64 / rest).max(0.0)
    }
}

/// Scales the gradients of `vars` so their global L2 norm is at most `max_norm`; returns the norm
/// before clipping.
pub fn clip_grad_norm(
    grads: &mut GradStore,
    vars: &[(String, Var)],
    max_norm: f64,
    step: u64,
) -> Result<f64> {
    let mut sq = 0f64;
    for (_, v) in vars {
        if let Some(g) = grads.get(v.as_tensor()) {
            sq += f64::from(
                g.sqr()?
                    .sum_all()?
                    .to_dtype(candle_core::DType::F32)?
                    .to_scalar::<f32>()?,
            );
        }
    }
    let norm = sq.sqrt();
    if !norm.is_finite() {
        return Err(Error::Diverged {
            step,
            what: format!("the gradient norm is {norm}: lower the learning rate"),
        });
    }
    if max_norm > 0.0 && norm > max_norm {
        let scale = max_norm / (norm + 1e-6);
        for (_, v) in vars {
            if let Some(g) = grads.remove(v.as_tensor()) {
                grads.insert(v.as_tensor(), (g * scale)?);
            }
        }
    }
    Ok(norm)
}

#[cfg(test)]
mod tests {
    //! Properties: one AdamW step matches PyTorch's update worked out by hand; the schedule's shape;
    //! clipping scales to the maximum norm.
    use super::*;
    use candle_core::Device;

    /// The in-place update is the tensor expressions' update bit for bit, with and without weight
    /// decay, over several steps (moments carried), on tensors large enough to be split over threads.
    #[test]
    fn the_in_place_update_is_the_tensor_update_bit_for_bit() -> Result<()> {
        let mut rng = lexbench_core::rng::SplitMix64::new(7);
        let mut values =
            |n: usize| -> Vec<f32> { (0..n).map(|_| (rng.unit_f64() * 4.0 - 2.0) as f32).collect() };
        let n = (1 << 19) + 3;
        let (w0, b0, x) = (values(n), values(n), values(n));
        let run = |in_place: bool| -> Result<(Vec<f32>, Vec<f32>)> {
            let w = Var::new(w0.as_slice(), &Device::Cpu)?;
            let b = Var::new(b0.as_slice(), &Device::Cpu)?;
            let x = Tensor::new(x.as_slice(), &Device::Cpu)?;
            let mut opt = AdamW::new(
                vec![
                    ("layer.weight".into(), w.clone()),
                    ("layer.bias".into(), b.clone()),
                ],
                AdamWConfig::default(),
            )?;
            opt.in_place = in_place;
            for step in 0..4 {
                // Gradients that differ per step and per element: x·w + b², squared.
                let y = ((x.mul(w.as_tensor())? + b.as_tensor().sqr()?)?.sqr()?.sum_all()? * 1e-3)?;
                let grads = y.backward()?;
                opt.step(&grads, 1e-3 * f64::from(step + 1))?;
            }
            Ok((w.as_tensor().to_vec1()?, b.as_tensor().to_vec1()?))
        };
        let (fast, plain) = (run(true)?, run(false)?);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast.0), bits(&plain.0), "decayed weights");
        assert_eq!(bits(&fast.1), bits(&plain.1), "biases (no decay)");
        assert_ne!(bits(&fast.0), bits(&w0), "the weights moved");
        Ok(())
    }

    /// candle's backward as lexbench patches it (vendor/candle-core/LEXBENCH.md): the first gradient
    /// reaching a tensor is stored as it is, so `a` and `b` of `(a + b)·w` share one gradient tensor,
    /// where the published crate added it into two fresh tensors of zeros. The values are the same,
    /// and the in-place update, which reads gradients only, leaves the shared one as it was.
    #[test]
    fn the_first_gradient_is_stored_not_added_into_zeros() -> Result<()> {
        let a = Var::new(&[1f32, 2.0, 3.0], &Device::Cpu)?;
        let b = Var::new(&[0.5f32, -1.0, 2.0], &Device::Cpu)?;
        let w = Tensor::new(&[1f32, -2.0, 4.0], &Device::Cpu)?;
        let loss = ((a.as_tensor() + b.as_tensor())? * &w)?.sum_all()?;
        let grads = loss.backward()?;
        let ga = grads.get(a.as_tensor()).expect("a has a gradient");
        let gb = grads.get(b.as_tensor()).expect("b has a gradient");
        assert_eq!(ga.to_vec1::<f32>()?, [1.0, -2.0, 4.0]);
        assert_eq!(gb.to_vec1::<f32>()?, [1.0, -2.0, 4.0]);
        let shared = {
            let (sa, _) = ga.storage_and_layout();
            let (sb, _) = gb.storage_and_layout();
            std::ptr::eq(&*sa, &*sb)
        };
        assert!(
            shared,
            "candle-core is not the patched copy (Cargo.toml's [patch.crates-io] → vendor/candle-core)"
        );
        let mut opt = AdamW::new(
            vec![("a".into(), a.clone()), ("b".into(), b.clone())],
            AdamWConfig::default(),
        )?;
        opt.step(&grads, 1e-3)?;
        assert_eq!(
            gb.to_vec1::<f32>()?,
            [1.0, -2.0, 4.0],
            "a gradient changed by the update"
        );
        assert_ne!(a.as_tensor().to_vec1::<f32>()?, [1.0, 2.0, 3.0], "a moved");
        Ok(())
    }

    /// A variable's gradient can carry an op graph (here `a`'s is `grad · b`, `b` a variable); the
    /// moments must not keep it, or every step's graph stays alive through them.
    #[test]
    fn moments_hold_no_graph() -> Result<()> {
        let a = Var::new(&[1f32, 2.0, 3.0], &Device::Cpu)?;
        let b = Var::new(&[0.5f32, -1.0, 2.0], &Device::Cpu)?;
        let mut opt = AdamW::new(
            vec![("a".into(), a.clone()), ("b".into(), b.clone())],
            AdamWConfig::default(),
        )?;
        for _ in 0..3 {
            let loss = (a.as_tensor() * b.as_tensor())?.sum_all()?;
            let grads = loss.backward()?;
            let g = grads.get(a.as_tensor()).expect("a has a gradient");
            assert!(
                g.track_op(),
                "the case this test is about: a gradient with a graph"
            );
            opt.step(&grads, 1e-3)?;
            for s in &opt.slots {
                assert!(
                    !s.m.track_op() && !s.v.track_op(),
                    "{}: a moment holds a graph",
                    s.name
                );
            }
        }
        Ok(())
    }

    #[test]
    fn adamw_first_step_by_hand() -> Result<()> {
        // torch.optim.AdamW([p], lr=0.1, weight_decay=0.5), p = [1, -2], grad = [0.5, 0.5]:
        // m = 0.05, v = 0.00025 → m̂ = 0.5, v̂ = 0.25, update = 0.5 / (0.5 + 1e-8) ≈ 1;
        // p ← p·(1 − 0.1·0.5) − 0.1·1 = [0.85, −2.0]: 0.95 − 0.1 = 0.85, −1.9 − 0.1 = −2.0.
        let p = Var::new(&[1f32, -2.0], &Device::Cpu)?;
        let loss = (p.as_tensor() * 0.5)?.sum_all()?;
        let grads = loss.backward()?;
        let cfg = AdamWConfig {
            lr: 0.1,
            weight_decay: 0.5,
            ..AdamWConfig::default()
        };
        let mut opt = AdamW::new(vec![("w".into(), p.clone())], cfg)?;
        opt.step(&grads, 0.1)?;
        let v = p.as_tensor().to_vec1::<f32>()?;
        assert!((v[0] - 0.85).abs() < 1e-6 && (v[1] + 2.0).abs() < 1e-6, "{v:?}");
        assert_eq!(opt.step_count(), 1);
        Ok(())
    }

    #[test]
    fn schedule_and_clipping() -> Result<()> {
        let s = LinearSchedule {
            peak: 1.0,
            warmup: 2,
            total: 10,
        };
        let lrs: Vec<f64> = (0..11).map(|i| s.lr(i)).collect();
        assert_eq!(&lrs[..4], &[0.0, 0.5, 1.0, 0.875]);
        assert_eq!(lrs[10], 0.0);
        let p = Var::new(&[3f32, 4.0], &Device::Cpu)?;
        let loss = (p.as_tensor().sqr()? * 0.5)?.sum_all()?; // grad = p, norm 5
        let mut grads = loss.backward()?;
        let vars = vec![("p".to_owned(), p.clone())];
        let n = clip_grad_norm(&mut grads, &vars, 1.0, 0)?;
        assert!((n - 5.0).abs() < 1e-6);
        let g = grads.get(p.as_tensor()).expect("grad").to_vec1::<f32>()?;
        assert!((g[0] - 0.6).abs() < 1e-5 && (g[1] - 0.8).abs() < 1e-5, "{g:?}");
        Ok(())
    }
}
