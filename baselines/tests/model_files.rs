//! A model folder's files as the loaders read them (issue 54, items 4, 8 and 11).
//!
//! Properties checked:
//! - (item 8) only regular files are read (a symbolic link to one is fine): a FIFO, a device or a
//!   directory at `config.json`, `tokenizer.json` or `model.safetensors` is an error naming the file
//!   and what it is, found without opening it; `config.json` and `tokenizer.json` over their caps
//!   ([`files::MAX_MODEL_JSON_BYTES`], [`files::MAX_TOKENIZER_BYTES`]) are refused naming the file and
//!   the cap, from the size alone;
//! - (item 4) weights holding a NaN or an infinity (f32, f16, bf16) are refused when the model loads,
//!   naming the file and the tensor; finite weights whose activations overflow give an error naming
//!   the text, never a non-finite vector;
//! - (item 11) [`files::check_weights_header`] accepts a real safetensors file and refuses an empty
//!   file, another format, a header describing no tensor and a file cut short.

mod common;

use std::path::Path;

use lexbench_baselines::Device;
use lexbench_baselines::encoder::{EncodeOptions, SentenceEncoder, files};

fn load(dir: &Path) -> Result<SentenceEncoder, lexbench_baselines::Error> {
    SentenceEncoder::from_dir(dir, &Device::Cpu, EncodeOptions::default())
}

fn err(dir: &Path) -> String {
    match load(dir) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => format!("{e:#}"),
    }
}

#[cfg(unix)]
#[test]
fn only_regular_files_are_read() {
    for (file, target) in [
        ("config.json", "/dev/urandom"),
        ("tokenizer.json", "/dev/zero"),
        ("model.safetensors", "fifo"),
        ("config.json", "dir"),
    ] {
        let dir =
            common::tiny_folder(&format!("special-{}-{target}", file.replace('.', "-")).replace('/', "-"))
                .expect("tiny folder");
        let p = dir.join(file);
        std::fs::remove_file(&p).unwrap();
        let kind = match target {
            "fifo" => {
                assert!(
                    std::process::Command::new("mkfifo")
                        .arg(&p)
                        .status()
                        .unwrap()
                        .success()
                );
                "a FIFO"
            }
            "dir" => {
                std::fs::create_dir(&p).unwrap();
                "a directory"
            }
            dev => {
                std::os::unix::fs::symlink(dev, &p).unwrap();
                "a character device"
            }
        };
        let e = err(&dir);
        assert!(
            e.contains(&p.display().to_string()) && e.contains(kind) && e.contains("not a regular file"),
            "{file} → {target}: {e}"
        );
        let e = files::regular_file(&p).unwrap_err().to_string();
        assert!(e.contains(kind), "{e}");
        assert!(files::present(&p).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(unix)]
#[test]
fn a_link_to_a_regular_file_is_read() {
    let real = common::tiny_folder("linked-real").expect("tiny folder");
    let dir = common::scratch("model-files", "linked");
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::os::unix::fs::symlink(real.join(f), dir.join(f)).unwrap();
    }
    let enc = load(&dir).expect("a folder of links loads");
    assert_eq!(enc.embed(&["privacy"]).unwrap().len(), 1);
    assert!(!files::present(&dir.join("absent.json")).unwrap());
    assert!(files::present(&dir.join("config.json")).unwrap());
}

#[test]
fn model_json_over_its_cap_is_refused_from_its_size() {
    for (file, cap, label) in [
        ("config.json", files::MAX_MODEL_JSON_BYTES, "16 MiB"),
        ("tokenizer.json", files::MAX_TOKENIZER_BYTES, "64 MiB"),
    ] {
        let dir = common::tiny_folder(&format!("cap-{}", file.replace('.', "-"))).expect("tiny folder");
        let p = dir.join(file);
        // Sparse: no disk, and no byte of it is read.
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&p)
            .unwrap()
            .set_len(cap as u64 + 1)
            .unwrap();
        let e = err(&dir);
        assert!(
            e.contains(&p.display().to_string()) && e.contains(&format!("larger than {label}")),
            "{file}: {e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Writes `v` (raw little-endian bits of the tensor's dtype) over the first element of `name` in
/// the safetensors file `path`; returns the tensor's dtype.
fn poke(path: &Path, name: &str, bits: &[u8]) {
    let mut bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let at = 8 + n + header[name]["data_offsets"][0].as_u64().unwrap() as usize;
    bytes[at..at + bits.len()].copy_from_slice(bits);
    std::fs::write(path, bytes).unwrap();
}

fn first_tensor_ending(path: &Path, suffix: &str) -> String {
    let bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    header
        .keys()
        .find(|k| k.ends_with(suffix))
        .expect("tensor")
        .clone()
}

#[test]
fn non_finite_weights_are_refused_naming_the_tensor() {
    for (label, v, suffix) in [
        ("NaN", f32::NAN, "attention.self.key.weight"),
        ("infinity", f32::NEG_INFINITY, "LayerNorm.bias"),
    ] {
        let dir = common::tiny_folder(&format!("nonfinite-{label}")).expect("tiny folder");
        let w = dir.join("model.safetensors");
        let name = first_tensor_ending(&w, suffix);
        poke(&w, &name, &v.to_le_bytes());
        let e = err(&dir);
        assert!(
            e.contains(&w.display().to_string())
                && e.contains(&format!(
                    "tensor {name} holds a non-finite weight ({label} at element 0"
                )),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A safetensors file of one tensor `t` of `dtype` holding `data`.
fn one_tensor(dtype: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let header = serde_json::json!({"t": {"dtype": dtype, "shape": shape, "data_offsets": [0, data.len()]}})
        .to_string();
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

#[test]
fn the_finiteness_check_reads_every_float_dtype() {
    let p = Path::new("w.safetensors");
    let ok = |b: &[u8]| files::check_finite_weights(p, b);
    // f16: 0x3C00 = 1, 0x7C00 = inf, 0x7E00 = NaN; bf16: 0x3F80 = 1, 0x7F80 = inf, 0x7FC0 = NaN.
    let halves = |v: [u16; 3]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    assert!(ok(&one_tensor("F16", &[3], &halves([0x3C00, 0x3C00, 0xFBFF]))).is_ok());
    let e = ok(&one_tensor("F16", &[3], &halves([0x3C00, 0x3C00, 0x7C00])))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tensor t holds a non-finite weight (infinity at element 2 of shape [3])"),
        "{e}"
    );
    let e = ok(&one_tensor("BF16", &[3], &halves([0x3F80, 0x7FC0, 0x3F80])))
        .unwrap_err()
        .to_string();
    assert!(e.contains("(NaN at element 1"), "{e}");
    assert!(ok(&one_tensor("BF16", &[3], &halves([0x3F80, 0x7F7F, 0xFF7F]))).is_ok());
    let f64s: Vec<u8> = [1.0f64, f64::MAX, f64::NAN]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let e = ok(&one_tensor("F64", &[3], &f64s)).unwrap_err().to_string();
    assert!(e.contains("(NaN at element 2"), "{e}");
    // Integers are not floats: every bit pattern is a number.
    assert!(ok(&one_tensor("I32", &[1], &u32::MAX.to_le_bytes())).is_ok());
    // Not a safetensors file: left to the loader's own error.
    assert!(ok(b"garbage").is_ok());
}

#[test]
fn finite_weights_that_overflow_give_an_error_not_a_vector() {
    let dir = common::tiny_folder("overflow").expect("tiny folder");
    let w = dir.join("model.safetensors");
    // Finite weights so large that the embeddings' sum overflows to infinity, and layer norm then
    // gives NaN.
    let bytes = std::fs::read(&w).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let word = header
        .keys()
        .find(|k| k.ends_with("word_embeddings.weight"))
        .unwrap()
        .clone();
    let [start, end] = [0, 1].map(|i| header[&word]["data_offsets"][i].as_u64().unwrap() as usize);
    let mut bytes = bytes;
    for c in bytes[8 + n + start..8 + n + end].chunks_exact_mut(4) {
        c.copy_from_slice(&f32::MAX.to_le_bytes());
    }
    std::fs::write(&w, bytes).unwrap();
    let enc = load(&dir).expect("finite weights load");
    let e = enc.embed(&["privacy", "fair trial"]).unwrap_err().to_string();
    assert!(
        e.contains("text 1 (\"privacy\") has a non-finite embedding"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_weights_header_is_checked_without_loading() {
    let dir = common::scratch("model-files", "headers");
    let real = common::tiny_folder("headers-real").expect("tiny folder");
    files::check_weights_header(&real.join("model.safetensors")).expect("a real file passes");
    let good = one_tensor("F32", &[2], &[0u8; 8]);
    let mut cut = good.clone();
    cut.pop();
    let no_tensor = {
        let h = b"{}      ";
        let mut b = (h.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(h);
        b
    };
    for (name, bytes, needle) in [
        ("empty", Vec::new(), "0 bytes: not a safetensors file"),
        (
            "pickle",
            b"PK\x03\x04 a zip of pickles, not safetensors".to_vec(),
            "not a safetensors file",
        ),
        ("no-tensor", no_tensor, "describes no tensor"),
        ("cut", cut, "cut short or damaged"),
    ] {
        let p = dir.join(format!("{name}.safetensors"));
        std::fs::write(&p, bytes).unwrap();
        let e = files::check_weights_header(&p).unwrap_err().to_string();
        assert!(
            e.contains(&p.display().to_string()) && e.contains(needle),
            "{name}: {e}"
        );
    }
    let p = dir.join("good.safetensors");
    std::fs::write(&p, good).unwrap();
    files::check_weights_header(&p).expect("one tensor of two floats");
}
