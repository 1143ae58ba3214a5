//! Issue 68 (the fourth hostile probe), the cases that need more than one command line: two
//! `reproduce` of one entry at once (item 1), and pickle bombs under a memory cap (items 9, 10).
//! The cases one command line shows are rows of `hostile::fourth_probe`.
//!
//! Properties checked:
//! - (item 1) two `lexbench reproduce ID` started together, five rounds: the data directory's
//!   dataset keeps every byte (the second reproduce is refused while the first holds the entry's
//!   lock, or runs after it), and every run that ends reports the reproduction or the lock, never a
//!   failure to read the dataset;
//! - (items 9, 10) a `pytorch_model.bin` whose pickle doubles a list through its memo 63 times
//!   (about a kilobyte), and one of 200,000 nested empty lists, are refused by `encode` with exit 2,
//!   naming the file and the bound, under an address-space cap of 2 GiB and a watchdog: no abort,
//!   no stack overflow;
//! - (item 12) a `pytorch_model.bin` written here as torch.save writes one (a pickle of
//!   `_rebuild_tensor_v2` over storages `archive/data/N`) encodes as the safetensors folder it was
//!   made from, also with its word embeddings stored transposed (column-major: what torch keeps for
//!   `weight.t()`); a storage offset of 10^12, a negative one, a short storage, a tensor reaching past
//!   the storage it shares, strides neither in rows nor columns, and a compressed storage are each
//!   refused with exit 2, naming the file, the tensor and (where it is one) the storage.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{bin, lexbench, lexbench_spawn, sample_data, tiny_bert};

fn scratch(name: &str) -> PathBuf {
    let d = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-probe4-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every file under `root` with its sha256.
fn hashes(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_owned(),
                    lexbench_core::sha256_hex(&std::fs::read(&p).unwrap()),
                );
            }
        }
    }
    out
}

#[test]
fn two_reproduces_of_one_entry_at_once_keep_the_users_dataset() {
    let root = scratch("race");
    let d = root.join("data");
    sample_data(&d);
    let out = lexbench(
        &d,
        &[
            "run",
            "random",
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--seed",
            "3",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = crate::common::submit_test_run(&d, "runs/ecthr/test/random.trec", "random race");
    let dataset = d.join("datasets/ecthr");
    let before = hashes(&dataset);
    let mut locked = 0;
    for round in 0..5 {
        let children: Vec<_> = (0..2).map(|_| lexbench_spawn(&d, &["reproduce", &id])).collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(0) => {}
                Some(2) if err.contains("another `lexbench reproduce") => locked += 1,
                c => panic!("round {round}: exit {c:?}: {err}"),
            }
        }
        assert_eq!(hashes(&dataset), before, "round {round}: the dataset changed");
    }
    eprintln!("two reproduces at once, 5 rounds: {locked} refused while the other held the entry");
    let out = lexbench(&d, &["stats", "ecthr"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&root);
}

/// A list put in memo 0, then `n` times: a list of two memo copies of the last, put again.
fn memo_bomb(n: usize) -> Vec<u8> {
    let mut p = vec![0x80, 2, b']', b'q', 0];
    for _ in 0..n {
        p.extend_from_slice(&[b']', b'(', b'h', 0, b'h', 0, b'e', b'q', 0]);
    }
    p.push(b'.');
    p
}

/// `n` empty lists, each appended to the one before.
fn nested_lists(n: usize) -> Vec<u8> {
    let mut p = vec![0x80, 2];
    p.extend(std::iter::repeat_n(b']', n));
    p.extend(std::iter::repeat_n(b'a', n - 1));
    p.push(b'.');
    p
}

/// A model folder whose weights are `pytorch_model.bin`, a torch.save-shaped zip of `pickle`.
fn checkpoint_folder(root: &Path, name: &str, pickle: &[u8]) -> PathBuf {
    let m = root.join(name);
    tiny_bert(&m);
    std::fs::remove_file(m.join("model.safetensors")).unwrap();
    let f = std::fs::File::create(m.join("pytorch_model.bin")).unwrap();
    let mut z = zip::ZipWriter::new(f);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    z.start_file("archive/data.pkl", opts).unwrap();
    z.write_all(pickle).unwrap();
    z.start_file("archive/version", opts).unwrap();
    z.write_all(b"3\n").unwrap();
    z.finish().unwrap();
    m
}

#[test]
fn pickle_bombs_are_refused_under_a_memory_cap() {
    let root = scratch("bombs");
    let bomb = memo_bomb(63);
    assert!(bomb.len() < 1200, "{} bytes", bomb.len());
    for (name, pickle, bound) in [
        ("memo-bomb", bomb, "more than 1048576 objects"),
        ("nested", nested_lists(200_000), "deeper than 64 levels"),
    ] {
        let m = checkpoint_folder(&root, name, &pickle);
        // 2 GiB of address space: the bomb asks for 2^63 objects, the nesting for a stack it has not.
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={}", 2u64 << 30))
            .arg("--")
            .arg(bin())
            .args(["encode", "--model"])
            .arg(&m)
            .arg("some text")
            .env_remove("RUST_LOG")
            .env_remove("LEXBENCH_DATA");
        let out = crate::probe3_models::run_watched(c, Duration::from_secs(120));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&m.join("pytorch_model.bin").display().to_string()) && err.contains(bound),
            "{name}: {err}"
        );
        assert!(out.stdout.is_empty(), "{name}: a vector was printed");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// One tensor of a hand-made torch checkpoint: the storage it views (a key of `archive/data/`), and
/// how (offset in elements, shape, strides), as `torch._utils._rebuild_tensor_v2` takes them.
struct View {
    name: String,
    key: String,
    /// The storage's size as the pickle gives it (elements).
    storage_elems: i64,
    offset: i64,
    size: Vec<usize>,
    stride: Vec<usize>,
}

/// A pickle integer: BININT1, BININT or LONG1.
fn pickle_int(p: &mut Vec<u8>, v: i64) {
    if (0..256).contains(&v) {
        p.extend_from_slice(&[b'K', v as u8]);
    } else if let Ok(v) = i32::try_from(v) {
        p.push(b'J');
        p.extend_from_slice(&v.to_le_bytes());
    } else {
        p.extend_from_slice(&[0x8a, 8]);
        p.extend_from_slice(&v.to_le_bytes());
    }
}

fn pickle_str(p: &mut Vec<u8>, s: &str) {
    p.push(b'X');
    p.extend_from_slice(&(s.len() as u32).to_le_bytes());
    p.extend_from_slice(s.as_bytes());
}

/// The `data.pkl` of `torch.save(state_dict)` for these views, as PyTorch writes it (protocol 2:
/// an OrderedDict, each value `_rebuild_tensor_v2(persistent_id(('storage', torch.FloatStorage, key,
/// 'cpu', n)), offset, size, stride, False, OrderedDict())`).
fn torch_pickle(views: &[View]) -> Vec<u8> {
    let mut p = vec![0x80, 2];
    p.extend_from_slice(b"ccollections\nOrderedDict\n)R");
    for v in views {
        pickle_str(&mut p, &v.name);
        p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
        pickle_str(&mut p, "storage");
        p.extend_from_slice(b"ctorch\nFloatStorage\n");
        pickle_str(&mut p, &v.key);
        pickle_str(&mut p, "cpu");
        pickle_int(&mut p, v.storage_elems);
        p.extend_from_slice(b"tQ");
        pickle_int(&mut p, v.offset);
        for dims in [&v.size, &v.stride] {
            p.push(b'(');
            for &d in dims.iter() {
                pickle_int(&mut p, d as i64);
            }
            p.push(b't');
        }
        p.extend_from_slice(b"\x89ccollections\nOrderedDict\n)RtRs");
    }
    p.push(b'.');
    p
}

/// The f32 tensors of a safetensors file: name → (shape, values in rows).
fn safetensors_f32(path: &Path) -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    let bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let data = &bytes[8 + n..];
    header
        .into_iter()
        .filter(|(k, _)| k != "__metadata__")
        .map(|(k, v)| {
            assert_eq!(v["dtype"], "F32", "{k}");
            let shape: Vec<usize> = serde_json::from_value(v["shape"].clone()).unwrap();
            let [a, b]: [usize; 2] = serde_json::from_value(v["data_offsets"].clone()).unwrap();
            let values = data[a..b]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            (k, (shape, values))
        })
        .collect()
}

/// Writes `pytorch_model.bin` in `dir` from `views` and `storages` (key → elements); `compress`:
/// storages deflated (torch.save never does).
fn torch_save(dir: &Path, views: &[View], storages: &BTreeMap<String, Vec<f32>>, compress: bool) {
    let f = std::fs::File::create(dir.join("pytorch_model.bin")).unwrap();
    let mut z = zip::ZipWriter::new(f);
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let data = if compress {
        stored.compression_method(zip::CompressionMethod::Deflated)
    } else {
        stored
    };
    z.start_file("archive/data.pkl", stored).unwrap();
    z.write_all(&torch_pickle(views)).unwrap();
    for (key, values) in storages {
        z.start_file(format!("archive/data/{key}"), data).unwrap();
        for v in values {
            z.write_all(&v.to_le_bytes()).unwrap();
        }
    }
    z.start_file("archive/version", stored).unwrap();
    z.write_all(b"3\n").unwrap();
    z.finish().unwrap();
}

/// Row-major strides of a shape.
fn rows(size: &[usize]) -> Vec<usize> {
    let mut stride = vec![1; size.len()];
    for i in (0..size.len().saturating_sub(1)).rev() {
        stride[i] = stride[i + 1] * size[i + 1];
    }
    stride
}

#[test]
fn torch_storages_are_checked_and_transposed_tensors_read() {
    const WORDS: &str = "embeddings.word_embeddings.weight";
    let root = scratch("storages");
    let reference = root.join("safetensors");
    tiny_bert(&reference);
    let tensors = safetensors_f32(&reference.join("model.safetensors"));
    let (vocab, hidden) = match tensors[WORDS].0[..] {
        [v, h] => (v, h),
        _ => panic!("word embeddings of two dimensions"),
    };
    let encode = |m: &Path| {
        let mut c = Command::new(bin());
        c.args(["encode", "--model"]).arg(m).arg("query passage");
        c.env_remove("RUST_LOG").env_remove("LEXBENCH_DATA");
        crate::probe3_models::run_watched(c, Duration::from_secs(120))
    };
    let want = encode(&reference);
    assert!(want.status.success(), "{}", String::from_utf8_lossy(&want.stderr));

    // Every tensor its own storage, laid out in rows; `change` edits the views and storages.
    type Change = Box<dyn Fn(&mut Vec<View>, &mut BTreeMap<String, Vec<f32>>)>;
    let folder = |name: &str, change: Change, compress: bool| {
        let m = root.join(name);
        tiny_bert(&m);
        std::fs::remove_file(m.join("model.safetensors")).unwrap();
        let mut views = Vec::new();
        let mut storages = BTreeMap::new();
        for (k, (name, (size, values))) in tensors.iter().enumerate() {
            views.push(View {
                name: name.clone(),
                key: k.to_string(),
                storage_elems: values.len() as i64,
                offset: 0,
                size: size.clone(),
                stride: rows(size),
            });
            storages.insert(k.to_string(), values.clone());
        }
        change(&mut views, &mut storages);
        torch_save(&m, &views, &storages, compress);
        m
    };
    let words_at = |views: &[View]| views.iter().position(|v| v.name == WORDS).unwrap();

    // As written: the same vector as the safetensors folder (the writer is torch.save's format).
    let plain = folder("plain", Box::new(|_, _| {}), false);
    let out = encode(&plain);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        out.stdout, want.stdout,
        "a checkpoint of the same tensors encodes the same"
    );

    // The word embeddings stored transposed: column-major storage, strides (1, vocab).
    let words = tensors[WORDS].1.clone();
    let transposed = folder(
        "transposed",
        Box::new(move |views, storages| {
            let i = words_at(views);
            views[i].stride = vec![1, vocab];
            let key = views[i].key.clone();
            let mut t = vec![0f32; vocab * hidden];
            for r in 0..vocab {
                for c in 0..hidden {
                    t[c * vocab + r] = words[r * hidden + c];
                }
            }
            storages.insert(key, t);
        }),
        false,
    );
    let out = encode(&transposed);
    assert!(
        out.status.success(),
        "transposed word embeddings: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.stdout, want.stdout,
        "transposed word embeddings read as the same weights"
    );

    let refused: Vec<(&str, Change, bool, &str)> = vec![
        (
            "offset-1e12",
            Box::new(move |v, _| {
                let i = words_at(v);
                v[i].offset = 1_000_000_000_000;
            }),
            false,
            "from element 1000000000000 reaches past its storage archive/data/",
        ),
        (
            "negative-offset",
            Box::new(move |v, _| {
                let i = words_at(v);
                v[i].offset = -1;
            }),
            false,
            "a negative storage offset -1",
        ),
        (
            "short-storage",
            Box::new(move |v, s| {
                let i = words_at(v);
                s.get_mut(&v[i].key).unwrap().truncate(hidden);
            }),
            false,
            "a short storage",
        ),
        (
            "aliasing-past",
            Box::new(move |v, s| {
                // The word embeddings view the storage of a tensor smaller than they are.
                let i = words_at(v);
                let small = v.iter().position(|t| t.size == [hidden]).unwrap();
                let (key, elems) = (v[small].key.clone(), v[small].storage_elems);
                s.remove(&v[i].key);
                v[i].key = key;
                v[i].storage_elems = elems;
            }),
            false,
            "reaches past its storage archive/data/",
        ),
        (
            "strided",
            Box::new(move |v, s| {
                let i = words_at(v);
                v[i].stride = vec![2 * hidden, 1];
                v[i].storage_elems = (2 * vocab * hidden) as i64;
                s.insert(v[i].key.clone(), vec![0.5; 2 * vocab * hidden]);
            }),
            false,
            "neither in rows nor in columns",
        ),
        ("compressed", Box::new(|_, _| {}), true, "is compressed"),
    ];
    for (name, change, compress, says) in refused {
        let m = folder(name, change, compress);
        let out = encode(&m);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&m.join("pytorch_model.bin").display().to_string())
                && err.contains("tensor ")
                && err.contains(says),
            "{name}: {err}"
        );
        if name != "compressed" {
            assert!(err.contains(WORDS), "{name}: the tensor is not named: {err}");
        }
        assert!(out.stdout.is_empty(), "{name}: a vector was printed");
    }
    let _ = std::fs::remove_dir_all(&root);
}
