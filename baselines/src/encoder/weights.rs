//! The weights of a model folder in the forms people have them ([`Weights`]): one safetensors file
//! (`model.safetensors`, or a PEFT folder's `adapter_model.safetensors`), safetensors shards listed by
//! `model.safetensors.index.json` (what `save_pretrained` writes for a large model), or a PyTorch
//! checkpoint `pytorch_model.bin` (what it wrote before safetensors), looked for in that order
//! ([`Weights::of_model`]).
//!
//! **A PyTorch checkpoint is read without running it.** `pytorch_model.bin` is a zip (torch.save's
//! format since PyTorch 1.6) whose `data.pkl` is a Python pickle: unpickled by Python, its globals
//! are imported and called, so a file can run any code (`posix.system`, `builtins.eval`) as it loads.
//! lexbench never runs Python on it: candle's pickle reader (`candle_core::pickle`) interprets the
//! opcodes itself, and only builds a description of each object. On top of that, every global the
//! pickle names is checked as it is read ([`ALLOWED_GLOBALS`]: the tensor rebuilds, the storage
//! types, `collections.OrderedDict`, as PyTorch's own `weights_only` loader allows), and a file
//! naming any other is refused, naming the file and the global. What the objects cost is bounded
//! too (objects built, memo copies counted; text held; depth: [`super::pickle_check`]), by a walk
//! over the opcodes that builds nothing, before candle's reader builds anything. Only then are its
//! tensors read.
//!
//! **Shards stay inside the folder.** Each shard the index names must be a plain relative path
//! (no `..`, no absolute path), and each tensor of its `weight_map` must be in the shard it names.
//!
//! Every form's floating-point weights must be finite ([`super::files::check_finite_weights`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::files::{ADAPTER_WEIGHTS, present, read_model_json, read_weights, regular_file};
use crate::error::{Error, Result, io_err, weights_err};

/// The safetensors file of a complete model.
pub const SAFETENSORS: &str = "model.safetensors";
/// The index of a model saved in safetensors shards (`weight_map`: tensor → shard file).
pub const SAFETENSORS_INDEX: &str = "model.safetensors.index.json";
/// A PyTorch checkpoint (torch.save of the state dict).
pub const PYTORCH_BIN: &str = "pytorch_model.bin";

/// The globals (`module.name`) a PyTorch checkpoint's pickle may name: the state dict's
/// `OrderedDict`, the functions that rebuild a tensor or a parameter from a storage, and the storage
/// types candle reads. PyTorch's `torch/_weights_only_unpickler.py` allows these and a few more.
pub const ALLOWED_GLOBALS: [&str; 9] = [
    "collections.OrderedDict",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_parameter",
    "torch.FloatStorage",
    "torch.DoubleStorage",
    "torch.HalfStorage",
    "torch.BFloat16Storage",
    "torch.ByteStorage",
    "torch.LongStorage",
];

/// Where a model folder's weights are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Weights {
    /// One safetensors file (also what a folder without weights is taken to lack: reading it says
    /// which file is missing).
    Safetensors(PathBuf),
    /// Safetensors shards listed by an index.
    Sharded {
        /// `model.safetensors.index.json`.
        index: PathBuf,
        /// Each tensor and the shard that holds it (a path inside the folder).
        weight_map: BTreeMap<String, PathBuf>,
    },
    /// A PyTorch checkpoint, `pytorch_model.bin`.
    Pickle(PathBuf),
}

/// `model.safetensors.index.json` as `save_pretrained` writes it (`metadata.total_size` is not
/// needed).
#[derive(Debug, Deserialize)]
struct Index {
    weight_map: BTreeMap<String, String>,
}

impl Weights {
    /// The complete model's weights in `dir`: `model.safetensors`, else the shards of
    /// `model.safetensors.index.json` (checked: every shard inside the folder), else
    /// `pytorch_model.bin`; with none of them, `model.safetensors` (missing).
    pub fn of_model(dir: &Path) -> Result<Self> {
        let single = dir.join(SAFETENSORS);
        if present(&single)? {
            return Ok(Self::Safetensors(single));
        }
        let index = dir.join(SAFETENSORS_INDEX);
        if present(&index)? {
            return Self::sharded(dir, index);
        }
        let bin = dir.join(PYTORCH_BIN);
        if present(&bin)? {
            return Ok(Self::Pickle(bin));
        }
        Ok(Self::Safetensors(single))
    }

    /// The weights a folder's heads are read from: [`Self::of_model`], or for a PEFT folder (no
    /// complete model, an `adapter_model.safetensors`) that file, which holds any trained head.
    pub fn of_folder(dir: &Path) -> Result<Self> {
        let w = Self::of_model(dir)?;
        let peft = dir.join(ADAPTER_WEIGHTS);
        if matches!(&w, Self::Safetensors(p) if !present(p)?) && present(&peft)? {
            return Ok(Self::Safetensors(peft));
        }
        Ok(w)
    }

    fn sharded(dir: &Path, index: PathBuf) -> Result<Self> {
        let parsed: Index = read_model_json(&index)?;
        if parsed.weight_map.is_empty() {
            return Err(Error::Format {
                path: index,
                message: "weight_map is empty: the index names no tensor".into(),
            });
        }
        let mut weight_map = BTreeMap::new();
        for (tensor, shard) in parsed.weight_map {
            let rel = Path::new(&shard);
            let inside = !shard.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
            if !inside {
                return Err(Error::Format {
                    path: index,
                    message: format!(
                        "weight_map puts tensor {tensor} in shard {shard:?}, which is not a file of the model \
                         folder: a shard is named by a relative path inside it, without `..`"
                    ),
                });
            }
            weight_map.insert(tensor, dir.join(rel));
        }
        Ok(Self::Sharded { index, weight_map })
    }

    /// The file errors name: the safetensors file, the index, the checkpoint.
    pub fn path(&self) -> &Path {
        match self {
            Self::Safetensors(p) | Self::Pickle(p) => p,
            Self::Sharded { index, .. } => index,
        }
    }

    /// Every file the weights are read from: the one file, or the index and each shard once (in
    /// name order).
    pub fn files(&self) -> Vec<PathBuf> {
        match self {
            Self::Safetensors(p) | Self::Pickle(p) => vec![p.clone()],
            Self::Sharded { index, weight_map } => {
                let shards: BTreeSet<&PathBuf> = weight_map.values().collect();
                std::iter::once(index.clone())
                    .chain(shards.into_iter().cloned())
                    .collect()
            }
        }
    }

    /// A hash of the weights: the file's sha256 for one file; for shards, the sha256 of the text
    /// `NAME  SHA256\n` over the index and each shard (names relative to the folder of the index,
    /// sorted).
    pub fn sha256(&self) -> Result<String> {
        match self {
            Self::Safetensors(p) | Self::Pickle(p) => {
                regular_file(p)?;
                Ok(lexbench_core::dataset::sha256_file(p)?)
            }
            Self::Sharded { index, .. } => {
                let dir = index.parent().unwrap_or(Path::new(""));
                let mut text = String::new();
                for f in self.files() {
                    regular_file(&f)?;
                    let name = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
                    text.push_str(&format!("{name}  {}\n", lexbench_core::dataset::sha256_file(&f)?));
                }
                Ok(lexbench_core::sha256_hex(text.as_bytes()))
            }
        }
    }

    /// The tensors' names (safetensors: from the headers; a checkpoint: from its checked pickle). A
    /// shard that lacks a tensor the index puts in it is [`Error::Format`] naming both.
    pub fn tensor_names(&self) -> Result<BTreeSet<String>> {
        match self {
            Self::Safetensors(p) => header_names(p),
            Self::Sharded { weight_map, .. } => {
                let mut headers: HashMap<&Path, BTreeSet<String>> = HashMap::new();
                for (tensor, shard) in weight_map {
                    if !headers.contains_key(shard.as_path()) {
                        headers.insert(shard, header_names(shard)?);
                    }
                    if !headers[shard.as_path()].contains(tensor) {
                        return Err(self.missing_in_shard(tensor, shard));
                    }
                }
                Ok(weight_map.keys().cloned().collect())
            }
            Self::Pickle(p) => Ok(checked_checkpoint(p)?.tensor_infos().keys().cloned().collect()),
        }
    }

    fn missing_in_shard(&self, tensor: &str, shard: &Path) -> Error {
        Error::Format {
            path: shard.to_owned(),
            message: format!(
                "no tensor {tensor}, which {} puts in this shard",
                self.path().display()
            ),
        }
    }

    /// A `VarBuilder` over the weights, as f32 on `device` (`config` names the file the model's
    /// sizes come from, for a shape error).
    pub fn var_builder(&self, device: &Device, config: &str) -> Result<VarBuilder<'static>> {
        match self {
            Self::Safetensors(p) => {
                let bytes = read_weights(p)?;
                VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)
                    .map_err(weights_err(p, config))
            }
            Self::Sharded { .. } | Self::Pickle(_) => Ok(VarBuilder::from_tensors(
                self.tensors(device)?,
                DType::F32,
                device,
            )),
        }
    }

    /// Every tensor, in its own dtype, on `device`.
    pub fn tensors(&self, device: &Device) -> Result<HashMap<String, Tensor>> {
        match self {
            Self::Safetensors(p) => {
                let bytes = read_weights(p)?;
                candle_core::safetensors::load_buffer(&bytes, device).map_err(weights_err(p, "config.json"))
            }
            Self::Sharded { weight_map, .. } => {
                let mut by_shard: BTreeMap<&PathBuf, Vec<&String>> = BTreeMap::new();
                for (tensor, shard) in weight_map {
                    by_shard.entry(shard).or_default().push(tensor);
                }
                let mut out = HashMap::new();
                for (shard, names) in by_shard {
                    let bytes = read_weights(shard)?;
                    let mut all = candle_core::safetensors::load_buffer(&bytes, device)
                        .map_err(weights_err(shard, "config.json"))?;
                    for name in names {
                        let t = all
                            .remove(name)
                            .ok_or_else(|| self.missing_in_shard(name, shard))?;
                        out.insert(name.clone(), t);
                    }
                }
                Ok(out)
            }
            Self::Pickle(p) => {
                let pth = checked_checkpoint(p)?;
                let names: BTreeSet<&String> = pth.tensor_infos().keys().collect();
                let mut out = HashMap::new();
                for name in names {
                    let bad = |e: candle_core::Error| Error::Format {
                        path: p.to_owned(),
                        message: format!("tensor {name}: {e}"),
                    };
                    let Some(t) = pth.get(name).map_err(bad)? else {
                        continue;
                    };
                    // A tensor saved transposed (column-major, as torch keeps `weight.t()`) is read
                    // as a transposed view; the model's kernels take it laid out in rows.
                    let t = t.contiguous().map_err(bad)?;
                    check_finite_tensor(p, name, &t)?;
                    out.insert(name.clone(), t.to_device(device)?);
                }
                Ok(out)
            }
        }
    }
}

/// The checkpoint `path`, its pickle checked ([`check_pickle`]) and then each tensor's storage
/// ([`check_storages`]): what candle's reader will read is there.
fn checked_checkpoint(path: &Path) -> Result<candle_core::pickle::PthTensors> {
    check_pickle(path)?;
    let pth = candle_core::pickle::PthTensors::new(path, None).map_err(pickle_err(path))?;
    check_storages(path, &pth)?;
    Ok(pth)
}

/// Checks each tensor of a checkpoint against its storage before anything is read, so that a bad
/// one is refused naming the tensor and the storage, not met as "failed to fill whole buffer": the
/// storage is in the archive, stored (not compressed: torch.save never compresses, and a compressed
/// member's declared size is only a claim), at least as long as the pickle says, and the tensor
/// (its offset, shape and strides) lies inside it and is laid out in rows or in columns (a
/// transposed tensor); anything else strided is refused (save it with `.contiguous()`).
pub fn check_storages(path: &Path, pth: &candle_core::pickle::PthTensors) -> Result<()> {
    let file = std::fs::File::open(path).map_err(io_err(path))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| Error::Format {
        path: path.to_owned(),
        message: format!("not a zip archive: {e}"),
    })?;
    let infos: BTreeMap<&String, &candle_core::pickle::TensorInfo> = pth.tensor_infos().iter().collect();
    for (name, info) in infos {
        let bad = |message: String| Error::Format {
            path: path.to_owned(),
            message: format!("tensor {name}: {message}"),
        };
        let elem = info.dtype.size_in_bytes();
        let member = zip
            .by_name(&info.path)
            .map_err(|_| bad(format!("its storage {} is not in the archive", info.path)))?;
        if member.compression() != zip::CompressionMethod::Stored {
            return Err(bad(format!(
                "its storage {} is compressed ({}); torch.save stores storages as they are",
                info.path,
                member.compression()
            )));
        }
        let held = member.size();
        let wanted = info.storage_size.checked_mul(elem);
        if wanted.is_none_or(|w| held < w as u64) {
            return Err(bad(format!(
                "its storage {} holds {held} bytes, but the pickle gives it {} {:?} elements: a short \
                 storage",
                info.path, info.storage_size, info.dtype
            )));
        }
        let storage_bytes = info.storage_size * elem;
        let l = &info.layout;
        if !l.is_contiguous() && !l.is_fortran_contiguous() {
            return Err(bad(format!(
                "stored with strides {:?} for shape {:?}, neither in rows nor in columns: lexbench \
                 reads a tensor saved whole (`.contiguous()` before torch.save)",
                l.stride(),
                l.dims()
            )));
        }
        // The byte after the tensor's last element (its first, for an empty tensor).
        let end = if l.dims().contains(&0) {
            Some(l.start_offset())
        } else {
            l.dims()
                .iter()
                .zip(l.stride())
                .try_fold(0usize, |last, (&d, &s)| (d - 1).checked_mul(s)?.checked_add(last))
                .and_then(|last| {
                    last.checked_add(1)?
                        .checked_mul(elem)?
                        .checked_add(l.start_offset())
                })
        };
        if end.is_none_or(|e| e > storage_bytes) {
            return Err(bad(format!(
                "shape {:?} with strides {:?} from element {} reaches past its storage {} of {} \
                 elements",
                l.dims(),
                l.stride(),
                l.start_offset() / elem,
                info.path,
                info.storage_size
            )));
        }
    }
    Ok(())
}

/// Maps an error of candle's pickle reader to [`Error::Format`] naming the checkpoint.
fn pickle_err(path: &Path) -> impl FnOnce(candle_core::Error) -> Error + '_ {
    move |e| Error::Format {
        path: path.to_owned(),
        message: format!("a PyTorch checkpoint lexbench cannot read: {e}"),
    }
}

/// The tensor names in the header of the safetensors file `path`.
pub fn header_names(path: &Path) -> Result<BTreeSet<String>> {
    use std::io::Read;
    let len = regular_file(path)?;
    let bad = |message: String| Error::Format {
        path: path.to_owned(),
        message,
    };
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut n = [0u8; 8];
    f.read_exact(&mut n)
        .map_err(|_| bad(format!("{len} bytes: not a safetensors file")))?;
    let n = u64::from_le_bytes(n);
    if n > (100 << 20) || n > len.saturating_sub(8) {
        return Err(bad(format!(
            "not a safetensors file: a header of {n} bytes in a file of {len} bytes"
        )));
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(io_err(path))?;
    let v: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })?;
    Ok(v.into_iter()
        .map(|(k, _)| k)
        .filter(|k| k != "__metadata__")
        .collect())
}

/// Checks the PyTorch checkpoint `path` without running it (module docs): a zip holding a
/// `data.pkl` whose every opcode candle's reader knows and whose every global is one of
/// [`ALLOWED_GLOBALS`]. Anything else is [`Error::Format`] naming the file (and the global).
pub fn check_pickle(path: &Path) -> Result<()> {
    regular_file(path)?;
    let bad = |message: String| Error::Format {
        path: path.to_owned(),
        message,
    };
    let file = std::fs::File::open(path).map_err(io_err(path))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
        bad(format!(
            "not a zip archive ({e}): lexbench reads PyTorch checkpoints in torch.save's zip format \
             (PyTorch 1.6 and later); load it in PyTorch and save it again, or as safetensors"
        ))
    })?;
    let mut pickles = Vec::new();
    for n in zip.file_names() {
        let n = n.map_err(|e| bad(format!("a member name of the archive: {e}")))?;
        if n.ends_with("data.pkl") {
            pickles.push(n.into_owned());
        }
    }
    if pickles.is_empty() {
        return Err(bad(
            "no data.pkl in the archive: not a torch.save checkpoint".into()
        ));
    }
    for name in pickles {
        let entry = zip.by_name(&name).map_err(|e| bad(format!("{name}: {e}")))?;
        let mut r = std::io::BufReader::new(entry);
        // Walked before candle's reader builds anything (super::pickle_check): the globals checked
        // as they are read, and what the objects cost bounded.
        if let Err(why) = super::pickle_check::walk(&mut r, &ALLOWED_GLOBALS) {
            return Err(bad(match why.strip_prefix("global:") {
                Some(global) => format!(
                    "refused: its pickle ({name}) names the global {global}, which is not a tensor rebuild: \
                     loaded by PyTorch it would run code (nothing of it was run here); lexbench reads \
                     checkpoints whose pickle names only {} — convert a checkpoint you trust to \
                     safetensors",
                    ALLOWED_GLOBALS.join(", ")
                ),
                None => format!(
                    "{name}: refused, the pickle does not read as a state dict ({why}): lexbench reads the pickle \
                     of a state dict saved by torch.save, nothing else"
                ),
            }));
        }
    }
    Ok(())
}

/// Refuses a floating-point tensor holding a NaN or an infinity, as
/// [`super::files::check_finite_weights`] does for safetensors.
fn check_finite_tensor(path: &Path, name: &str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_float() {
        return Ok(());
    }
    let values: Vec<f64> = t.flatten_all()?.to_dtype(DType::F64)?.to_vec1()?;
    if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::Format {
            path: path.to_owned(),
            message: format!(
                "tensor {name} holds a non-finite weight ({} at element {i} of shape {:?}): the weights are broken \
                 (a diverged training or a damaged file), nothing computed from them would mean anything",
                if v.is_nan() { "NaN" } else { "infinity" },
                t.dims()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Properties checked, on files made here (the PyTorch-written ones are in the CLI tests,
    //! `tests/cli/model_folders.rs`): shards and their index give the tensors of the one file; an
    //! index whose shard leaves the folder (`..`, an absolute path) or lacks a tensor it lists is
    //! refused naming the file; a pickle naming a global that is not a tensor rebuild is refused
    //! naming the file and the global, whatever follows it; a file that is not a zip is refused;
    //! the order of look-up.
    use std::io::Write;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-weights-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn tensors() -> HashMap<String, Tensor> {
        let dev = Device::Cpu;
        HashMap::from([
            (
                "a.weight".to_owned(),
                Tensor::arange(0f32, 6.0, &dev).unwrap().reshape((2, 3)).unwrap(),
            ),
            ("a.bias".to_owned(), Tensor::new(&[0.5f32, -1.5], &dev).unwrap()),
            (
                "b.weight".to_owned(),
                Tensor::new(&[[7f32], [8.0]], &dev).unwrap(),
            ),
        ])
    }

    fn save(path: &Path, ts: &HashMap<String, Tensor>) {
        candle_core::safetensors::save(ts, path).unwrap();
    }

    /// `{"weight_map": {tensor: shard}}`.
    fn index(dir: &Path, map: &[(&str, &str)]) {
        let m: serde_json::Map<String, serde_json::Value> =
            map.iter().map(|(t, s)| ((*t).to_owned(), (*s).into())).collect();
        std::fs::write(
            dir.join(SAFETENSORS_INDEX),
            serde_json::json!({"metadata": {"total_size": 0}, "weight_map": m}).to_string(),
        )
        .unwrap();
    }

    fn message(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(e) => format!("{e:#}"),
            Ok(v) => panic!("accepted: {v:?}"),
        }
    }

    #[test]
    fn shards_hold_the_tensors_of_the_one_file() {
        let dir = scratch("shards");
        let all = tensors();
        let (first, second): (HashMap<_, _>, HashMap<_, _>) =
            all.clone().into_iter().partition(|(k, _)| k.starts_with("a."));
        save(&dir.join("model-00001-of-00002.safetensors"), &first);
        save(&dir.join("model-00002-of-00002.safetensors"), &second);
        index(
            &dir,
            &[
                ("a.weight", "model-00001-of-00002.safetensors"),
                ("a.bias", "model-00001-of-00002.safetensors"),
                ("b.weight", "model-00002-of-00002.safetensors"),
            ],
        );
        let w = Weights::of_model(&dir).unwrap();
        assert!(matches!(w, Weights::Sharded { .. }), "{w:?}");
        assert_eq!(w.files().len(), 3, "the index and two shards");
        assert_eq!(
            w.tensor_names().unwrap(),
            all.keys().cloned().collect::<BTreeSet<_>>()
        );
        let got = w.tensors(&Device::Cpu).unwrap();
        assert_eq!(got.len(), all.len());
        for (k, t) in &all {
            let want: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
            let have: Vec<f32> = got[k].flatten_all().unwrap().to_vec1().unwrap();
            assert_eq!((got[k].dims(), have), (t.dims(), want), "{k}");
        }
        let vb = w.var_builder(&Device::Cpu, "config.json").unwrap();
        assert_eq!(vb.get((2, 3), "a.weight").unwrap().dims(), &[2, 3]);
        // model.safetensors, when there is one, is read first.
        save(&dir.join(SAFETENSORS), &all);
        assert_eq!(
            Weights::of_model(&dir).unwrap(),
            Weights::Safetensors(dir.join(SAFETENSORS))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_index_must_keep_to_the_folder_and_its_shards() {
        let root = scratch("escape");
        let dir = root.join("model");
        std::fs::create_dir_all(&dir).unwrap();
        save(&root.join("x.safetensors"), &tensors());
        for shard in ["../x.safetensors", "/etc/passwd", "./../x.safetensors", ""] {
            index(&dir, &[("a.weight", shard)]);
            let m = message(Weights::of_model(&dir));
            assert!(
                m.contains(SAFETENSORS_INDEX) && m.contains("not a file of the model folder"),
                "{shard}: {m}"
            );
        }
        // A tensor the index lists that its shard lacks.
        save(&dir.join("s.safetensors"), &tensors());
        index(
            &dir,
            &[("a.weight", "s.safetensors"), ("c.weight", "s.safetensors")],
        );
        let w = Weights::of_model(&dir).unwrap();
        for m in [message(w.tensor_names()), message(w.tensors(&Device::Cpu))] {
            assert!(
                m.contains("s.safetensors")
                    && m.contains("no tensor c.weight")
                    && m.contains(SAFETENSORS_INDEX),
                "{m}"
            );
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A zip holding `archive/data.pkl` = `pickle`.
    fn checkpoint(path: &Path, pickle: &[u8]) {
        let f = std::fs::File::create(path).unwrap();
        let mut z = zip::ZipWriter::new(f);
        let opts =
            zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        z.start_file("archive/data.pkl", opts).unwrap();
        z.write_all(pickle).unwrap();
        z.finish().unwrap();
    }

    #[test]
    fn a_pickle_naming_another_global_is_refused() {
        let dir = scratch("pickle");
        let bin = dir.join(PYTORCH_BIN);
        // protocol 2: {"w": posix.system("touch /tmp/x")}, and the same through builtins.eval.
        for (global, module, name) in [
            ("posix.system", "posix", "system"),
            ("builtins.eval", "builtins", "eval"),
            ("torch._utils._rebuild_tensor", "torch._utils", "_rebuild_tensor"),
        ] {
            let mut p = b"\x80\x02}q\x00X\x01\x00\x00\x00wq\x01c".to_vec();
            p.extend_from_slice(format!("{module}\n{name}\n").as_bytes());
            p.extend_from_slice(b"X\x0c\x00\x00\x00touch /tmp/x\x85R");
            p.extend_from_slice(b"s.");
            checkpoint(&bin, &p);
            assert_eq!(Weights::of_model(&dir).unwrap(), Weights::Pickle(bin.clone()));
            let w = Weights::of_model(&dir).unwrap();
            for m in [
                message(check_pickle(&bin)),
                message(w.tensor_names()),
                message(w.tensors(&Device::Cpu)),
            ] {
                assert!(
                    m.contains(&bin.display().to_string())
                        && m.contains(&format!("names the global {global},"))
                        && m.contains("refused"),
                    "{m}"
                );
            }
        }
        // Allowed globals only, but an opcode candle's reader does not know (STACK_GLOBAL).
        checkpoint(&bin, b"\x80\x04\x8c\x05posix\x8c\x06system\x93.");
        let m = message(check_pickle(&bin));
        assert!(m.contains("does not read") && m.contains("data.pkl"), "{m}");
        // Not a zip: PyTorch's legacy format, or anything else.
        std::fs::write(&bin, b"\x80\x02}q\x00.").unwrap();
        let m = message(check_pickle(&bin));
        assert!(
            m.contains("not a zip archive") && m.contains(&bin.display().to_string()),
            "{m}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
