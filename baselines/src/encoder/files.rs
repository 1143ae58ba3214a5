//! The files of a model folder that are lexbench's own, beside HuggingFace's `config.json`,
//! `model.safetensors` and tokenizer files: a PEFT folder's `adapter_config.json` ([`AdapterFile`])
//! and `adapter_model.safetensors`, how to tell which weights file a folder holds and whether it
//! carries a hierarchical article encoder, and the text prefixes a folder trained here must be ranked
//! with ([`ranking_prefixes`], from its [`TRAINING_RECORD`]). Written by `train::export`, read by [`super::BertModel`],
//! the scorers and the ranking layer.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TextPrefixes;
use super::peft::PeftConfig;
use crate::error::{Error, Result, io_err};

/// The PEFT folder's description (`adapter_config.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterFile {
    /// The method and its settings.
    pub peft: PeftConfig,
    /// The base model's folder, absolute.
    pub base_model: PathBuf,
    /// sha256 of the base's `model.safetensors`: loading refuses another base.
    pub base_sha256: String,
    /// Trainable parameters and the whole model's.
    pub trainable_params: usize,
    /// Parameters of the whole model.
    pub total_params: usize,
}

/// The file name of the PEFT description.
pub const ADAPTER_CONFIG: &str = "adapter_config.json";
/// The file name of the PEFT weights.
pub const ADAPTER_WEIGHTS: &str = "adapter_model.safetensors";

/// A folder trained here records how (`train::export` writes it): `{"config": <the training
/// configuration>, …}`. Distinct from [`crate::checkpoints::RECORD_FILE`], the install record of a fetched
/// checkpoint.
pub const TRAINING_RECORD: &str = "lexbench-training.json";

/// The text prefixes a model folder was trained with (`config.data.query_prefix` and
/// `passage_prefix` of its [`TRAINING_RECORD`]; absent = none); `None` for a folder not trained here.
pub fn trained_prefixes(dir: &Path) -> Result<Option<TextPrefixes>> {
    let path = dir.join(TRAINING_RECORD);
    if !present(&path)? {
        return Ok(None);
    }
    let record: serde_json::Value = read_model_json(&path)?;
    let data = &record["config"]["data"];
    let field = |key: &str| -> Result<String> {
        match &data[key] {
            serde_json::Value::Null => Ok(String::new()),
            serde_json::Value::String(s) => Ok(s.clone()),
            other => Err(Error::Format {
                path: path.clone(),
                message: format!("config.data.{key} is {other}, not a string"),
            }),
        }
    };
    Ok(Some(TextPrefixes {
        query: field("query_prefix")?,
        passage: field("passage_prefix")?,
    }))
}

/// The prefixes to rank with the model in `dir`: for a folder trained here, the ones it was trained
/// with — a prefix `asked` leaves empty is taken from training, one that differs from training's is
/// refused (the model learned to read the other); for any other folder, `asked`.
pub fn ranking_prefixes(dir: &Path, asked: &TextPrefixes) -> Result<TextPrefixes> {
    let Some(trained) = trained_prefixes(dir)? else {
        return Ok(asked.clone());
    };
    for (what, asked, trained) in [
        ("query", &asked.query, &trained.query),
        ("passage", &asked.passage, &trained.passage),
    ] {
        if !asked.is_empty() && asked != trained {
            let how = if trained.is_empty() {
                format!("without a {what} prefix")
            } else {
                format!("with the {what} prefix {trained:?}")
            };
            return Err(Error::Param(format!(
                "{}: trained {how} ({TRAINING_RECORD}), asked to rank with {asked:?}: a trained folder \
                 ranks with its training prefixes; leave the {what} prefix out",
                dir.display()
            )));
        }
    }
    Ok(trained)
}

/// The weights file of a folder written here: `model.safetensors`, or a PEFT folder's
/// `adapter_model.safetensors` (which holds any trained head). A folder from elsewhere may hold its
/// weights otherwise (shards, `pytorch_model.bin`): [`super::weights::Weights::of_folder`].
pub fn weights_file(dir: &Path) -> PathBuf {
    let full = dir.join("model.safetensors");
    let peft = dir.join(ADAPTER_WEIGHTS);
    if !full.is_file() && peft.is_file() {
        peft
    } else {
        full
    }
}

/// Whether a model folder's weights hold a hierarchical article encoder's `hier.…` tensors (reads
/// the safetensors header only).
pub fn has_hier_tensors(dir: &Path) -> Result<bool> {
    use std::io::Read;
    let path = weights_file(dir);
    if !present(&path)? {
        return Ok(false);
    }
    let Ok(mut f) = std::fs::File::open(&path) else {
        return Ok(false);
    };
    let mut len = [0u8; 8];
    if f.read_exact(&mut len).is_err() {
        return Ok(false);
    }
    let n = u64::from_le_bytes(len);
    if n > 100 << 20 {
        return Ok(false);
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(io_err(&path))?;
    let Ok(v) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&header) else {
        return Ok(false);
    };
    Ok(v.keys().any(|k| k.starts_with("hier.")))
}

/// The subfolder of a bi-encoder trained with separate encoders that holds its query encoder (the
/// folder itself holds the passage encoder).
pub const QUERY_ENCODER_DIR: &str = "query_encoder";

/// The largest `tokenizer.json` lexbench reads: 64 MiB (the largest real ones, of 250,000-token
/// multilingual vocabularies, are about 35 MB). Checked from the file's size before reading.
pub const MAX_TOKENIZER_BYTES: usize = 64 << 20;

/// The largest of the other JSON files of a model folder (`config.json`, `adapter_config.json`,
/// `tokenizer_config.json`, sentence-transformers' `modules.json`, `sentence_bert_config.json` and
/// module configs, ColBERT's `artifact.metadata`, lexbench's own records): 16 MiB (real ones are a
/// few KB). Checked from the file's size before reading.
pub const MAX_MODEL_JSON_BYTES: usize = 16 << 20;

/// What a file system entry is, for an error message.
fn kind_of(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

thread_local! {
    /// The files [`regular_file`] found on this thread, one set per [`recording_reads`] under way.
    static FOUND: RefCell<Vec<BTreeSet<PathBuf>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` and returns, beside its result, every model file it looked at and found on this thread:
/// each path [`regular_file`] accepted. Every read of a model folder's file goes through it first
/// (the JSON and text readers, the weights readers and checkers, [`present`]), so the set is what
/// the loader read, or found there and let decide (a PEFT folder's weights). Loading runs on the
/// calling thread; recordings nest (an inner one's files are the outer one's too).
///
/// What a verified leaderboard entry hashes is this set for the ranker the harness builds
/// (`lexbench::submit`), so that a file the loader starts reading is in the hash without anyone
/// listing it.
pub fn recording_reads<R>(f: impl FnOnce() -> R) -> (R, BTreeSet<PathBuf>) {
    /// Pops this recording's set, also when `f` panics.
    struct Recording;
    impl Drop for Recording {
        fn drop(&mut self) {
            FOUND.with(|found| found.borrow_mut().pop());
        }
    }
    FOUND.with(|found| found.borrow_mut().push(BTreeSet::new()));
    let recording = Recording;
    let result = f();
    let files = FOUND.with(|found| found.borrow().last().cloned().unwrap_or_default());
    drop(recording);
    (result, files)
}

/// Adds `path` to every recording under way on this thread.
fn note_found(path: &Path) {
    FOUND.with(|found| {
        for set in found.borrow_mut().iter_mut() {
            set.insert(path.to_owned());
        }
    });
}

/// Checks that `path`, a file of a model folder, is a regular file (after following symbolic links:
/// a link to a regular file is fine) and returns its size. A device (`/dev/urandom`), a FIFO, a
/// socket or a directory is [`Error::Format`] naming the file, found without opening it (opening a
/// FIFO would wait for a writer for ever).
pub fn regular_file(path: &Path) -> Result<u64> {
    let m = std::fs::metadata(path).map_err(io_err(path))?;
    if !m.is_file() {
        return Err(Error::Format {
            path: path.to_owned(),
            message: format!(
                "{}, not a regular file: a model folder's files must be regular files (a symbolic link to one is fine)",
                kind_of(m.file_type())
            ),
        });
    }
    note_found(path);
    Ok(m.len())
}

/// Whether the optional model file `path` is there: `false` when nothing is at the path, `true` for
/// a regular file (or a link to one), [`regular_file`]'s error for anything else.
pub fn present(path: &Path) -> Result<bool> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        _ => regular_file(path).map(|_| true),
    }
}

/// The text of the model file `path`: a regular file ([`regular_file`]) of at most `max_bytes`
/// (checked from its size before reading; a larger file is an error naming it and the limit).
pub fn read_model_text(path: &Path, max_bytes: usize) -> Result<String> {
    regular_file(path)?;
    Ok(lexbench_core::text::read_text_at_most(path, max_bytes)?)
}

/// The JSON file `path` of a model folder ([`read_model_text`] with [`MAX_MODEL_JSON_BYTES`]),
/// parsed.
pub fn read_model_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = read_model_text(path, MAX_MODEL_JSON_BYTES)?;
    serde_json::from_str(&text).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })
}

/// The bytes of the weights file `path` (`model.safetensors`, `adapter_model.safetensors`): a
/// regular file ([`regular_file`]; weights have no size cap, their header states their size) whose
/// every floating-point tensor is finite ([`check_finite_weights`]).
pub fn read_weights(path: &Path) -> Result<Vec<u8>> {
    regular_file(path)?;
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    check_finite_weights(path, &bytes)?;
    Ok(bytes)
}

/// Refuses safetensors `bytes` (read from `path`) holding a NaN or an infinity in a floating-point
/// tensor: [`Error::Format`] naming the file, the tensor and the first bad element. One pass over the
/// data. Bytes that are not a safetensors file pass: the loader reports those with its own error.
pub fn check_finite_weights(path: &Path, bytes: &[u8]) -> Result<()> {
    use safetensors::Dtype;
    let Ok(st) = safetensors::SafeTensors::deserialize(bytes) else {
        return Ok(());
    };
    let mut names: Vec<&str> = st.names();
    names.sort_unstable();
    for name in names {
        let Ok(t) = st.tensor(name) else { continue };
        let data = t.data();
        // (bytes per element, exponent mask): all exponent bits set is an infinity or a NaN.
        let first_bad = match t.dtype() {
            Dtype::F64 => first_non_finite::<8>(data, 0x7FF0_0000_0000_0000),
            Dtype::F32 => first_non_finite::<4>(data, 0x7F80_0000),
            Dtype::F16 => first_non_finite::<2>(data, 0x7C00),
            Dtype::BF16 => first_non_finite::<2>(data, 0x7F80),
            _ => None,
        };
        if let Some((i, nan)) = first_bad {
            return Err(Error::Format {
                path: path.to_owned(),
                message: format!(
                    "tensor {name} holds a non-finite weight ({} at element {i} of shape {:?}): the weights are broken \
                     (a diverged training or a damaged file), nothing computed from them would mean anything",
                    if nan { "NaN" } else { "infinity" },
                    t.shape()
                ),
            });
        }
    }
    Ok(())
}

/// The first element of little-endian floats of `N` bytes whose exponent bits (`mask`) are all set,
/// and whether it is a NaN (mantissa not zero) rather than an infinity.
fn first_non_finite<const N: usize>(data: &[u8], mask: u64) -> Option<(usize, bool)> {
    data.chunks_exact(N).enumerate().find_map(|(i, c)| {
        let mut b = [0u8; 8];
        b[..N].copy_from_slice(c);
        let bits = u64::from_le_bytes(b);
        (bits & mask == mask).then(|| {
            // The mantissa: the bits below the exponent.
            let mantissa = mask & mask.wrapping_neg();
            (i, bits & (mantissa - 1) != 0)
        })
    })
}

/// Checks the weights file `path` without loading it: a regular file whose safetensors header
/// parses, describes at least one tensor with consistent offsets, and states the file's size. An
/// empty file, a cut one, or another format is [`Error::Format`] naming it (`lexbench models fetch`
/// checks a download with it before installing).
pub fn check_weights_header(path: &Path) -> Result<()> {
    use std::io::Read;
    let len = regular_file(path)?;
    let bad = |message: String| Error::Format {
        path: path.to_owned(),
        message,
    };
    if len < 8 {
        return Err(bad(format!(
            "{len} bytes: not a safetensors file (it starts with an 8-byte header length)"
        )));
    }
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut n = [0u8; 8];
    f.read_exact(&mut n).map_err(io_err(path))?;
    let n = u64::from_le_bytes(n);
    if !(2..=100 << 20).contains(&n) || n > len - 8 {
        return Err(bad(format!(
            "not a safetensors file: a header of {n} bytes in a file of {len} bytes"
        )));
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(io_err(path))?;
    let meta: safetensors::tensor::Metadata = serde_json::from_slice(&header)
        .map_err(|e| bad(format!("not a safetensors file: its header does not parse: {e}")))?;
    if meta.tensors().is_empty() {
        return Err(bad("the safetensors header describes no tensor".into()));
    }
    let want = 8 + n + meta.data_len() as u64;
    if want != len {
        return Err(bad(format!(
            "the safetensors header describes {want} bytes, the file has {len}: cut short or damaged"
        )));
    }
    Ok(())
}
