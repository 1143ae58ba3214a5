//! `scripts/gpu-cells` (real-text training cells on a lent GPU machine) as a dry run on this machine:
//! a stand-in for the CUDA binary (a shell script that "trains" by writing the files `lexbench train
//! --run` writes, and fails for one cell), a stand-in `nvidia-smi`, a small dataset folder and model
//! folder. The payload goes through every step a real lease takes: packed into parts, each part
//! received on its own, assembled and checked, the cells run in order within a time budget, and the
//! results brought back as one xz tarball. What no dry run shows (the CUDA build itself, PyTorch's
//! CUDA libraries) was exercised on an H100 (baselines/configs/ecthr/README.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lexbench_core::sha256_hex;

use crate::data_safety::scratch;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn write_exe(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn sh(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("bash runs");
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What `lexbench train CONFIG --run ...` leaves, written by a stand-in; `text-dpr-prefix` fails.
const FAKE_LEXBENCH: &str = r#"#!/bin/sh
# --data D train CONFIG --device cuda --quiet --run test,unseen_query,unseen_guide
data=$2; cfg=$4; cell=$(basename "$cfg" .toml)
[ "$3" = train ] && [ -f "$cfg" ] || { echo "stand-in: bad call: $*" >&2; exit 2; }
[ "$5 $6" = "--device cuda" ] || { echo "stand-in: not asked for cuda: $*" >&2; exit 2; }
[ -f "$GPU_CELLS_MODELS/minilm/config.json" ] || { echo "stand-in: no model" >&2; exit 2; }
case $cell in *prefix) echo "stand-in: $cell fails" >&2; exit 3;; esac
# With MEET set, the first two cells wait (10 s at most) until both have started: they pass only
# when they run at the same time.
if [ -n "${MEET:-}" ]; then
  touch "$MEET/$cell"; i=0
  while [ "$(ls "$MEET" | wc -l)" -lt 2 ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "stand-in: $cell ran alone" >&2; exit 4; }; sleep 0.1
  done
fi
for s in test unseen_query unseen_guide; do
  mkdir -p "$data/runs/ecthr-release-text/$s"
  echo "q1 Q0 d1 1 1.5 $cell" > "$data/runs/ecthr-release-text/$s/$cell.trec"
done
mkdir -p "$data/models/$cell"
echo '{"best_epoch": 1}' > "$data/models/$cell/summary.json"
echo '{"epoch": 1, "event": "eval"}' > "$data/models/$cell/train_log.jsonl"
"#;

struct DryRun {
    root: PathBuf,
    env: Vec<(&'static str, PathBuf)>,
    path: String,
}

impl DryRun {
    fn new(name: &str) -> DryRun {
        let root = scratch(&format!("gpu-cells-{name}"));
        // The dataset folder: a manifest and a file that does not compress, so the payload splits
        // into several 4 KiB parts.
        let ds = root.join("data/datasets/ecthr-release-text");
        std::fs::create_dir_all(&ds).unwrap();
        let noise: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        std::fs::write(ds.join("corpus.jsonl"), &noise).unwrap();
        std::fs::write(
            ds.join("manifest.json"),
            format!(
                r#"{{"name": "ecthr-release-text", "files": {{"corpus.jsonl": "{}", "pools.jsonl": "ab"}}}}"#,
                sha256_hex(&noise)
            ),
        )
        .unwrap();
        let models = root.join("models-here/minilm");
        std::fs::create_dir_all(&models).unwrap();
        std::fs::write(models.join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
        let fake = root.join("lexbench");
        write_exe(&fake, FAKE_LEXBENCH);
        let xz = Command::new("xz").args(["-k", "-f"]).arg(&fake).status().unwrap();
        assert!(xz.success());
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        write_exe(
            &bin.join("nvidia-smi"),
            "#!/bin/sh\ncase \"$*\" in *noheader*) ;; *) echo 'name, driver_version, memory.total [MiB]';; esac\necho 'Stand-in GPU'\n",
        );
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        DryRun {
            env: vec![
                ("GPU_CELLS_BIN", root.join("lexbench.xz")),
                ("GPU_CELLS_WORK", root.join("there")),
            ],
            root,
            path,
        }
    }

    fn gpu_cells(&self, models: &str, args: &[&str]) -> Output {
        self.gpu_cells_with(models, args, &[])
    }

    fn gpu_cells_with(&self, models: &str, args: &[&str], vars: &[(&str, &Path)]) -> Output {
        let mut c = Command::new("bash");
        c.arg(repo().join("scripts/gpu-cells"))
            .args(args)
            .env("PATH", &self.path)
            .env("GPU_CELLS_MODELS", self.root.join(models))
            .env("PYTHON", "python3");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        for (k, v) in vars {
            c.env(k, v);
        }
        sh(&mut c)
    }

    /// Packs into `stage` (parts of 4 KiB) and receives every part, in order, on "the machine".
    fn pack_and_receive(&self) -> usize {
        let stage = self.root.join("stage");
        let data = self.root.join("data");
        let out = self.gpu_cells(
            "models-here",
            &["pack", data.to_str().unwrap(), stage.to_str().unwrap(), "4K"],
        );
        assert!(out.status.success(), "pack failed");
        let mut parts: Vec<PathBuf> = std::fs::read_dir(&stage)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        parts.sort();
        for p in &parts {
            let out = self.gpu_cells("models-there", &["receive", p.to_str().unwrap()]);
            assert!(out.status.success(), "receive {} failed", p.display());
        }
        parts.len()
    }

    /// The results tarball, unpacked: (cells.jsonl records, status.txt).
    fn results(&self, out: &Path) -> (Vec<serde_json::Value>, String) {
        let dir = self.root.join("back");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let st = Command::new("tar")
            .arg("-C")
            .arg(&dir)
            .arg("-xJf")
            .arg(out.join("results.tar.xz"))
            .status()
            .unwrap();
        assert!(st.success());
        let recs = std::fs::read_to_string(dir.join("results/cells.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (
            recs,
            std::fs::read_to_string(dir.join("results/status.txt")).unwrap_or_default(),
        )
    }
}

#[test]
fn gpu_cells_dry_run_brings_back_the_finished_cells() {
    let d = DryRun::new("ok");
    let parts = d.pack_and_receive();
    assert!(
        parts >= 3,
        "a 20 kB payload in 4 KiB parts is several parts, got {parts}"
    );
    let out = d.root.join("out");
    let r = d.gpu_cells(
        "models-there",
        &[
            "run",
            out.to_str().unwrap(),
            "600",
            "text-ance",
            "text-dpr-prefix",
            "text-dpr-lora",
        ],
    );
    assert!(r.status.success());
    let (recs, status) = d.results(&out);
    // The dataset version the runner computes: the sha256 of the manifest's "path sha\n" lines, sorted.
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.root.join("data/datasets/ecthr-release-text/manifest.json")).unwrap(),
    )
    .unwrap();
    let mut lines: Vec<String> = manifest["files"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, s)| format!("{p} {}\n", s.as_str().unwrap()))
        .collect();
    lines.sort();
    let version = sha256_hex(lines.concat().as_bytes());
    let names: Vec<&str> = recs.iter().map(|r| r["cell"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["text-ance", "text-dpr-lora"],
        "the failed cell is not recorded: {status}"
    );
    let bin_sha = sha256_hex(FAKE_LEXBENCH.as_bytes());
    for r in &recs {
        assert_eq!(r["dataset_version"], version.as_str());
        assert_eq!(r["device"], "cuda:0 (Stand-in GPU)");
        assert_eq!(r["binary_sha256"], bin_sha.as_str());
        assert_eq!(r["git_revision"].as_str().unwrap().len(), 40, "{r}");
        assert!(r["wall_s"].as_f64().unwrap() >= 0.0);
    }
    assert!(status.contains("cell text-dpr-prefix: exit 3"), "{status}");
    for cell in ["text-ance", "text-dpr-lora"] {
        for split in ["test", "unseen_query", "unseen_guide"] {
            let run =
                std::fs::read_to_string(d.root.join(format!("back/results/{cell}/{split}.trec"))).unwrap();
            assert_eq!(run, format!("q1 Q0 d1 1 1.5 {cell}\n"));
        }
        assert!(d.root.join(format!("back/results/{cell}/summary.json")).is_file());
    }
    // The model went where the configs read it from, unchanged.
    assert_eq!(
        std::fs::read_to_string(d.root.join("models-there/minilm/config.json")).unwrap(),
        r#"{"model_type": "bert"}"#
    );
}

#[test]
fn gpu_cells_starts_no_cell_past_its_budget() {
    let d = DryRun::new("budget");
    d.pack_and_receive();
    let out = d.root.join("out");
    let r = d.gpu_cells("models-there", &["run", out.to_str().unwrap(), "30", "text-ance"]);
    assert!(r.status.success());
    let (recs, status) = d.results(&out);
    assert!(recs.is_empty());
    assert!(status.contains("cell text-ance: not started"), "{status}");
}

#[test]
fn gpu_cells_refuses_a_damaged_or_missing_part() {
    let d = DryRun::new("damaged");
    d.pack_and_receive();
    let parts = d.root.join("there/parts");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    // A part lost in transit: the tarball ends early or the sums differ; nothing runs.
    std::fs::remove_file(&names[1]).unwrap();
    let out = d.root.join("out");
    let r = d.gpu_cells(
        "models-there",
        &["run", out.to_str().unwrap(), "600", "text-ance"],
    );
    assert!(!r.status.success(), "a payload missing a part must not run");
    assert!(!out.join("results.tar.xz").exists());
    // Without the stand-in's folder, pack names what is missing.
    let r = d.gpu_cells(
        "no-models",
        &[
            "pack",
            d.root.join("data").to_str().unwrap(),
            d.root.join("stage2").to_str().unwrap(),
        ],
    );
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("no-models/minilm"));
}

#[test]
fn gpu_cells_lanes_run_cells_side_by_side() {
    let d = DryRun::new("lanes");
    d.pack_and_receive();
    let cells = ["text-ance", "text-dpr-lora", "text-dpr-adapter"];
    let run = |lanes: &str, tag: &str| {
        let meet = d.root.join(format!("meet-{tag}"));
        std::fs::create_dir_all(&meet).unwrap();
        let out = d.root.join(format!("out-{tag}"));
        let mut args = vec!["run", out.to_str().unwrap(), "600"];
        args.extend(cells);
        let r = d.gpu_cells_with(
            "models-there",
            &args,
            &[("MEET", &meet), ("GPU_CELLS_JOBS", Path::new(lanes))],
        );
        assert!(r.status.success());
        d.results(&out)
    };
    // Two lanes: the first two cells meet, the third follows in whichever lane is free first.
    let (recs, status) = run("2", "two");
    let mut names: Vec<&str> = recs.iter().map(|r| r["cell"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        ["text-ance", "text-dpr-adapter", "text-dpr-lora"],
        "{status}"
    );
    assert!(recs.iter().all(|r| r["lanes"] == 2), "{recs:?}");
    assert_eq!(status.lines().count(), 3, "{status}");
    // A lane count that is not one is refused before anything runs.
    let bad = d.gpu_cells_with(
        "models-there",
        &[
            "run",
            d.root.join("out-bad").to_str().unwrap(),
            "600",
            "text-ance",
        ],
        &[("GPU_CELLS_JOBS", Path::new("two"))],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("GPU_CELLS_JOBS (two)"));
    assert!(!d.root.join("out-bad/results.tar.xz").exists());
    // One lane: the first cell waits for the second in vain, so the check above can fail.
    std::fs::remove_dir_all(d.root.join("there/results")).unwrap();
    let (recs, status) = run("1", "one");
    assert!(status.contains("cell text-ance: exit 4"), "{status}");
    assert!(recs.iter().all(|r| r["lanes"] == 1), "{recs:?}");
}
