//! Trainable parameters: a `VarMap` whose new variables are drawn from a seeded generator keyed by
//! the variable's name, or copied from a checkpoint.
//!
//! `candle_nn::VarMap` initialises new variables from candle's unseedable CPU generator. A
//! [`ParamStore`] is a `VarBuilder` backend that instead
//! - copies the value from its initial tensors when it has one of that name (full fine-tuning: the
//!   pretrained weights become variables), checking the shape;
//! - otherwise draws it from `SplitMix64(seed ⊕ fnv1a(name))`, following the [`Init`] hint the model
//!   gives (constant, normal, uniform, Kaiming as PyTorch defines it).
//!
//! Keying by name makes a variable's initial value independent of the order in which the model asks
//! for its variables. Every variable in the store is trainable: frozen weights never enter it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Shape, Tensor, Var};
use candle_nn::init::{Init, NormalOrUniform};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{VarBuilder, VarMap};
use lexbench_core::rng::SplitMix64;

use crate::error::{Error, Result, candle_message, weights_err};

/// FNV-1a of a name: the per-variable part of the seed.
pub fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Values for `init` over `shape`, drawn from `SplitMix64(seed ⊕ fnv1a(name))`.
pub fn seeded_values(shape: &Shape, name: &str, init: Init, seed: u64) -> Vec<f32> {
    let n = shape.elem_count();
    let mut rng = SplitMix64::new(seed ^ fnv1a(name));
    let mut normal = |mean: f64, std: f64| {
        // Box–Muller on (0, 1] so that ln never sees 0.
        let u = 1.0 - rng.unit_f64();
        let v = rng.unit_f64();
        (mean + std * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    };
    match init {
        Init::Const(c) => vec![c as f32; n],
        Init::Randn { mean, stdev } => (0..n).map(|_| normal(mean, stdev)).collect(),
        Init::Uniform { lo, up } => {
            let mut rng = SplitMix64::new(seed ^ fnv1a(name));
            (0..n).map(|_| (lo + (up - lo) * rng.unit_f64()) as f32).collect()
        }
        Init::Kaiming {
            dist,
            fan,
            non_linearity,
        } => {
            let std = non_linearity.gain() / (fan.for_shape(shape).max(1) as f64).sqrt();
            match dist {
                NormalOrUniform::Normal => (0..n).map(|_| normal(0.0, std)).collect(),
                NormalOrUniform::Uniform => {
                    let bound = 3f64.sqrt() * std;
                    let mut rng = SplitMix64::new(seed ^ fnv1a(name));
                    (0..n)
                        .map(|_| (-bound + 2.0 * bound * rng.unit_f64()) as f32)
                        .collect()
                }
            }
        }
    }
}

/// The trainable variables of one training run (see the module documentation).
#[derive(Clone)]
pub struct ParamStore {
    map: VarMap,
    seed: u64,
    initial: Arc<HashMap<String, Tensor>>,
    /// A view ([`ParamStore::detached_view`]): hands out the variables' values detached from the
    /// graph and creates none.
    detached: bool,
}

impl std::fmt::Debug for ParamStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamStore")
            .field("variables", &self.names().len())
            .field("seed", &self.seed)
            .finish()
    }
}

impl ParamStore {
    /// An empty store whose new variables are drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        Self::with_initial(seed, HashMap::new())
    }

    /// A store whose variables start from `initial` where it has them (a checkpoint's tensors).
    pub fn with_initial(seed: u64, initial: HashMap<String, Tensor>) -> Self {
        Self {
            map: VarMap::new(),
            seed,
            initial: Arc::new(initial),
            detached: false,
        }
    }

    /// The same variables seen as constants: a `VarBuilder` over this view returns each variable's
    /// current value detached from the autograd graph (the same storage: no copy, and later updates
    /// of the variable show through), and refuses a name the store does not hold instead of creating
    /// it. A network built over it runs the inference fast paths (fused kernels skip anything that
    /// records a graph): [`crate::train::model::Trainable::inference_view`].
    pub fn detached_view(&self) -> Self {
        Self {
            detached: true,
            ..self.clone()
        }
    }

    /// A `VarBuilder` creating (or returning) this store's variables.
    pub fn var_builder(&self, device: &Device) -> VarBuilder<'static> {
        VarBuilder::from_backend(Box::new(self.clone()), DType::F32, device.clone())
    }

    /// The variables' names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().keys().cloned().collect();
        v.sort();
        v
    }

    /// The variables, sorted by name.
    pub fn vars(&self) -> Vec<(String, Var)> {
        let data = self.lock();
        let mut v: Vec<(String, Var)> = data.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Number of scalar parameters.
    pub fn num_params(&self) -> usize {
        self.lock().values().map(|v| v.elem_count()).sum()
    }

    /// The current values, sorted by name (detached copies).
    pub fn tensors(&self) -> Result<BTreeMap<String, Tensor>> {
        self.vars()
            .into_iter()
            .map(|(k, v)| Ok((k, v.as_tensor().detach().copy()?)))
            .collect()
    }

    /// Writes every variable to a safetensors file, atomically (a temporary file renamed into place).
    pub fn save(&self, path: &Path) -> Result<()> {
        save_tensors(path, &self.tensors()?)
    }

    /// Sets every variable from a safetensors file written by [`ParamStore::save`]; a variable missing
    /// from the file or of another shape is an error naming both.
    pub fn load_values(&self, path: &Path) -> Result<()> {
        self.load_values_from(&[("", path)])
    }

    /// [`Self::load_values`] from several files: a variable named `PREFIX.rest` is read as `rest` from
    /// the file given with `PREFIX` (the longest prefix that matches; `""` matches every name). An
    /// exported model with a separate query encoder keeps `query_encoder.…` in its subfolder's file.
    pub fn load_values_from(&self, files: &[(&str, &Path)]) -> Result<()> {
        let device = self
            .vars()
            .first()
            .map(|(_, v)| v.device().clone())
            .unwrap_or(Device::Cpu);
        let mut loaded = Vec::with_capacity(files.len());
        for &(prefix, path) in files {
            let file =
                candle_core::safetensors::load(path, &device).map_err(weights_err(path, "the model"))?;
            loaded.push((prefix, path, file));
        }
        for (name, var) in self.vars() {
            let source = loaded
                .iter()
                .filter_map(|(prefix, path, file)| {
                    let rest = if prefix.is_empty() {
                        Some(name.as_str())
                    } else {
                        name.strip_prefix(prefix).and_then(|r| r.strip_prefix('.'))
                    };
                    rest.map(|r| (prefix.len(), r, *path, file))
                })
                .max_by_key(|(len, ..)| *len);
            let Some((_, key, path, file)) = source else {
                return Err(Error::internal(format!("no weights file for variable {name}")));
            };
            let t = file.get(key).ok_or_else(|| Error::Format {
                path: path.to_owned(),
                message: format!("no tensor {key}"),
            })?;
            if t.shape() != var.shape() {
                return Err(Error::Format {
                    path: path.to_owned(),
                    message: format!(
                        "{name} has shape {:?}, the model wants {:?}",
                        t.shape(),
                        var.shape()
                    ),
                });
            }
            var.set(&t.to_dtype(var.dtype())?)?;
        }
        Ok(())
    }

    /// What a `VarBuilder` gets for an existing variable: the variable itself, or in a view its value
    /// detached from the graph (the same storage).
    fn hand_out(&self, v: &Var) -> Tensor {
        if self.detached {
            v.as_tensor().detach()
        } else {
            v.as_tensor().clone()
        }
    }

    /// A view creates no variable: asking it for a name it does not hold is an error.
    fn refuse_in_view(&self, name: &str) -> candle_core::Result<()> {
        if self.detached {
            candle_core::bail!("the detached view of the parameters has no variable {name}");
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Var>> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still usable.
        self.map.data().lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Writes tensors to a safetensors file atomically.
pub fn save_tensors(path: &Path, tensors: &BTreeMap<String, Tensor>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(crate::error::io_err(dir))?;
    }
    let tmp = path.with_extension("safetensors.part");
    let map: HashMap<String, Tensor> = tensors.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    candle_core::safetensors::save(&map, &tmp).map_err(|e| Error::Format {
        path: tmp.clone(),
        message: candle_message(&e),
    })?;
    std::fs::rename(&tmp, path).map_err(crate::error::io_err(path))
}

/// Reads a safetensors file into a map.
pub fn load_tensors(path: &Path, device: &Device) -> Result<HashMap<String, Tensor>> {
    candle_core::safetensors::load(path, device).map_err(weights_err(path, "the model"))
}

/// The error candle-nn's own var builders raise for a tensor of the wrong shape (without a captured
/// backtrace), so `Error::in_weights` can name the tensor and the shapes.
fn shape_mismatch(name: &str, expected: Shape, got: &Shape) -> candle_core::Error {
    candle_core::Error::UnexpectedShape {
        msg: format!("shape mismatch for {name}"),
        expected,
        got: got.clone(),
    }
}

impl SimpleBackend for ParamStore {
    fn get(&self, s: Shape, name: &str, h: Init, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let mut data = self.map.data().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = data.get(name) {
            if v.shape() != &s {
                return Err(shape_mismatch(name, s, v.shape()));
            }
            return Ok(self.hand_out(v));
        }
        self.refuse_in_view(name)?;
        let value = match self.initial.get(name) {
            Some(t) => {
                if t.shape() != &s {
                    return Err(shape_mismatch(name, s, t.shape()));
                }
                t.to_device(dev)?.to_dtype(dtype)?.copy()?
            }
            None => {
                Tensor::from_vec(seeded_values(&s, name, h, self.seed), s.clone(), dev)?.to_dtype(dtype)?
            }
        };
        let var = Var::from_tensor(&value)?;
        let t = var.as_tensor().clone();
        data.insert(name.to_owned(), var);
        Ok(t)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        if let Some(v) = self.lock().get(name) {
            return Ok(self.hand_out(v));
        }
        self.refuse_in_view(name)?;
        match self.initial.get(name) {
            Some(t) => self.get(t.shape().clone(), name, Init::Const(0.0), dtype, dev),
            None => candle_core::bail!("no variable {name}"),
        }
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.lock().contains_key(name) || (!self.detached && self.initial.contains_key(name))
    }
}

#[cfg(test)]
mod tests {
    //! Properties: initial values depend on the seed and the name only (not on creation order);
    //! Kaiming-uniform bounds follow PyTorch; checkpoint values are copied; save/load round-trips.
    use super::*;

    #[test]
    fn seeded_by_name_not_order() -> Result<()> {
        let dev = Device::Cpu;
        let a = ParamStore::new(3);
        let vb = a.var_builder(&dev);
        let x1 = vb.get_with_hints((4, 5), "x", candle_nn::init::DEFAULT_KAIMING_UNIFORM)?;
        let y1 = vb.get_with_hints(
            7,
            "y",
            Init::Randn {
                mean: 0.0,
                stdev: 1.0,
            },
        )?;
        let b = ParamStore::new(3);
        let vb = b.var_builder(&dev);
        let y2 = vb.get_with_hints(
            7,
            "y",
            Init::Randn {
                mean: 0.0,
                stdev: 1.0,
            },
        )?;
        let x2 = vb.get_with_hints((4, 5), "x", candle_nn::init::DEFAULT_KAIMING_UNIFORM)?;
        assert_eq!(x1.to_vec2::<f32>()?, x2.to_vec2::<f32>()?);
        assert_eq!(y1.to_vec1::<f32>()?, y2.to_vec1::<f32>()?);
        // Kaiming uniform, fan_in 5, ReLU gain √2: bound = √3 · √2 / √5 ≈ 1.0954.
        assert!(
            x1.flatten_all()?
                .to_vec1::<f32>()?
                .iter()
                .all(|v| v.abs() <= 1.0955)
        );
        let c = ParamStore::new(4);
        let x3 = c
            .var_builder(&dev)
            .get_with_hints((4, 5), "x", candle_nn::init::DEFAULT_KAIMING_UNIFORM)?;
        assert_ne!(x1.to_vec2::<f32>()?, x3.to_vec2::<f32>()?);
        Ok(())
    }

    #[test]
    fn initial_values_and_round_trip() -> Result<()> {
        let dev = Device::Cpu;
        let w = Tensor::new(&[[1f32, 2.0], [3.0, 4.0]], &dev)?;
        let s = ParamStore::with_initial(1, [("w".to_owned(), w.clone())].into());
        let vb = s.var_builder(&dev);
        assert_eq!(vb.get((2, 2), "w")?.to_vec2::<f32>()?, w.to_vec2::<f32>()?);
        assert!(vb.get((2, 3), "w").is_err());
        let _ = vb.get_with_hints(3, "b", Init::Const(0.5))?;
        let dir =
            lexbench_core::testing::scratch_root().join(format!("lexbench-params-{}", std::process::id()));
        let path = dir.join("p.safetensors");
        s.save(&path)?;
        for (_, v) in s.vars() {
            v.set(&v.as_tensor().zeros_like()?)?;
        }
        s.load_values(&path)?;
        let t = s.tensors()?;
        assert_eq!(t["w"].to_vec2::<f32>()?, w.to_vec2::<f32>()?);
        assert_eq!(t["b"].to_vec1::<f32>()?, vec![0.5; 3]);
        assert_eq!(s.num_params(), 7);
        std::fs::remove_dir_all(dir).ok();
        Ok(())
    }
}
