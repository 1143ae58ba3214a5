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
//!   no stack overflow.

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
