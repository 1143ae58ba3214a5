//! The SLURM executor on a real one-node cluster: `scripts/slurm-local` starts Debian's munged,
//! slurmctld and slurmd as root in a scratch folder, and the test talks to them with SLURM's own
//! commands, as a user on a login node would.
//!
//! Properties checked, on the small experiment of `experiment.rs` (two configurations × three
//! learning rates on the sample, a tiny model) with four epochs so that a task can be stopped in
//! the middle of its training:
//! - `experiment run --executor slurm` submits one job array of six tasks, two at a time, and writes
//!   the batch script, the task → cell → key map and the job id beside it;
//! - task 0, once it has checkpointed within its first two epochs, is stopped (SIGSTOP, so that
//!   the machine's load cannot carry it to its end), cancelled with `scancel --signal=KILL` (SLURM
//!   sends SIGTERM first) and woken: the cell checkpoints after the update under way and exits,
//!   saying so in its log; then it is requeued with `scontrol requeue`;
//! - task 1 (running beside task 0), at the same point, is stopped and gets a real SIGKILL on its batch process (no time to
//!   checkpoint: it resumes from the last periodic checkpoint), and is requeued;
//! - both requeued tasks run again (restart count 1), resume from their checkpoints and finish; the
//!   array ends with every task COMPLETED;
//! - `experiment status` shows every cell done and the job with nothing left in the queue;
//! - `experiment collect` then selects, ranks and submits, and every cell's record and training
//!   summary, every run file and every leaderboard entry's scores and per-topic values are bit for
//!   bit those of the same experiment run with `--executor local --jobs 2` (one thread per cell on
//!   both executors).
//!
//! Where `scripts/slurm-local check` fails (no packages, not root) the test says so and passes,
//! unless `LEXBENCH_SLURM=required` or `CI=true` (scripts/test sets the first when the check passes):
//! then it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{bin, sample_data, tiny_bert};
use crate::data_safety::scratch;
use crate::experiment::{ok, small_experiment_with};

const EPOCHS: usize = 4;

/// A cluster of `scripts/slurm-local` in a short folder under /tmp (its unix sockets' paths are
/// limited), stopped and removed on drop.
struct Cluster {
    dir: PathBuf,
    conf: String,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-local")
}

impl Cluster {
    fn start() -> Option<Self> {
        let required = std::env::var("LEXBENCH_SLURM").is_ok_and(|v| v == "required")
            || std::env::var("CI").is_ok_and(|v| v == "true");
        let check = Command::new(script()).arg("check").output().unwrap();
        if !check.status.success() {
            let why = String::from_utf8_lossy(&check.stderr);
            assert!(
                !required,
                "no SLURM cluster can be started here: {why} (CI and LEXBENCH_SLURM=required need one: \
                 apt-get install slurmctld slurmd slurm-client munge, as root)"
            );
            eprintln!("experiment_slurm: not run: {}", why.trim());
            return None;
        }
        let dir = PathBuf::from(format!("/tmp/lexbench-slurm-{}", std::process::id()));
        let out = Command::new(script()).arg("start").arg(&dir).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "scripts/slurm-local start {} failed:\n{stdout}\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let conf = stdout
            .trim()
            .strip_prefix("export SLURM_CONF=")
            .unwrap_or_else(|| panic!("slurm-local start printed {stdout:?}"))
            .to_owned();
        Some(Self { dir, conf })
    }

    /// A SLURM command (or lexbench) that talks to this cluster.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf).env(
            "PATH",
            format!("{}:/usr/sbin:/sbin", std::env::var("PATH").unwrap_or_default()),
        );
        c
    }

    /// `lexbench --data DATA ARGS…` as `common::lexbench` runs it, against this cluster.
    fn lexbench(&self, data: &Path, args: &[&str]) -> Output {
        self.command(bin())
            .arg("--data")
            .arg(data)
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("LEXBENCH_DATA")
            .env("LEXBENCH_GIT_REV", "test-revision")
            .output()
            .expect("run lexbench")
    }

    /// A field of `scontrol show job JOB` (`JobState`, `Restarts`, `JobId`…), `None` once the job
    /// is gone.
    fn field(&self, job: &str, name: &str) -> Option<String> {
        let out = self
            .command("scontrol")
            .args(["-o", "show", "job", job])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let prefix = format!("{name}=");
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(&prefix).map(str::to_owned))
    }

    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.command(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What the cluster saw of `job`: `scontrol show job` and the daemons' log tails.
    fn report(&self, job: &str) -> String {
        let mut s = self
            .command("scontrol")
            .args(["show", "job", job])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for log in ["slurmctld.log", "slurmd.log"] {
            let text = std::fs::read_to_string(self.dir.join("log").join(log)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            s.push_str(&format!(
                "\n--- {log}\n{}",
                lines[lines.len().saturating_sub(20)..].join("\n")
            ));
        }
        s
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Polls `cond` every 50 ms for up to `limit`.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Whether the cell's training has checkpointed within its first two epochs (of four): a step
/// checkpoint there, and no checkpoint of epoch 2 yet.
fn part_way(cell: &Path) -> bool {
    let ckpt = cell.join("train/checkpoints");
    let names: Vec<String> = std::fs::read_dir(&ckpt)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.iter().any(|n| n.starts_with("step-")) && !names.iter().any(|n| n == "epoch-2")
}

/// `kill SIG PID` for one process: a pid that is not a number above 1 is refused (`scontrol
/// listpids` shows -1 for a step's process not started yet, and `kill -1` signals every process).
fn signal(sig: &str, pid: &str) {
    assert!(
        pid.parse::<u32>().is_ok_and(|p| p > 1),
        "not one process's pid: {pid:?}"
    );
    assert!(
        Command::new("kill").args([sig, pid]).status().unwrap().success(),
        "kill {sig} {pid}"
    );
}

/// Every file under `dir` whose path ends with `suffix`, by path relative to `dir`.
fn files(dir: &Path, suffix: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A cell record without what depends on where and when it ran.
fn record(bytes: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    for k in ["wall_s", "job", "cpu"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

/// A training summary's per-epoch facts without their timings.
fn summary(bytes: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    for e in v["epochs"].as_array_mut().unwrap() {
        for k in ["train_s", "val_s", "examples_per_s"] {
            e.as_object_mut().unwrap().remove(k);
        }
    }
    v
}

/// The experiment's leaderboard entries: system → (run sha256, scores, per-topic values, model files).
fn board(data: &Path) -> Vec<(String, serde_json::Value)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(data.join("leaderboard/entries")).unwrap() {
        let p = e.unwrap().path();
        let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        let system = j["system"].as_str().unwrap_or("").to_owned();
        if !system.starts_with("small-") {
            continue;
        }
        v.push((
            format!("{} {}", system, j["dataset"]["split"]),
            serde_json::json!({
                "run": j["run"]["sha256"],
                "scores": j["scores"],
                "per_topic": j["per_topic"],
                "model": j["provenance"]["model"]["files"],
            }),
        ));
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn a_slurm_experiment_with_a_cancelled_and_a_killed_task_equals_the_local_one() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let root = scratch("experiment-slurm");
    let model = root.join("tiny");
    tiny_bert(&model);
    let file = small_experiment_with(&root, &model, EPOCHS);
    let f = file.to_str().unwrap();
    let local = root.join("local");
    sample_data(&local);
    let on_slurm = root.join("slurm");
    sample_data(&on_slurm);

    let t = Instant::now();
    ok(&crate::common::lexbench(
        &local,
        &["experiment", "run", f, "--jobs", "2"],
    ));
    eprintln!("local executor: {:.1} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let out = cluster.lexbench(
        &on_slurm,
        &[
            "experiment",
            "run",
            f,
            "--executor",
            "slurm",
            "--no-wait",
            "--max-parallel",
            "2",
            "--cpus-per-task",
            "1",
            "--checkpoint-minutes",
            "0.0001",
        ],
    );
    let job = ok(&out).trim().to_owned();
    assert!(job.bytes().all(|b| b.is_ascii_digit()), "{job:?}");
    let exp = on_slurm.join("experiments/small");
    let sub = exp.join("slurm/0001");
    let tasks = std::fs::read_to_string(sub.join("tasks.tsv")).unwrap();
    assert_eq!(tasks.lines().count(), 7, "{tasks}");
    let keys: Vec<String> = tasks
        .lines()
        .skip(1)
        .map(|l| l.split('\t').nth(2).unwrap().to_owned())
        .collect();
    assert_eq!(std::fs::read_to_string(sub.join("job")).unwrap().trim(), job);
    let script = std::fs::read_to_string(sub.join("array.sh")).unwrap();
    for line in [
        "#SBATCH --array=0-5%2",
        "#SBATCH --requeue",
        "#SBATCH --cpus-per-task=1",
    ] {
        assert!(script.contains(line), "{script}");
    }
    let cell = |t: usize| exp.join("cells").join(&keys[t]);
    let task = |t: usize| format!("{job}_{t}");

    // Tasks 0 and 1 run side by side; each is stopped (SIGSTOP) as soon as it has checkpointed
    // within its first two epochs: two more epochs to go whatever the machine's load, so the signal
    // that follows finds it part-way. Its batch process is the cell (`exec lexbench …`).
    let batch_pid = |t: usize| -> Option<String> {
        if cluster.field(&task(t), "JobState").as_deref() != Some("RUNNING") {
            return None;
        }
        let raw = cluster.field(&task(t), "JobId")?;
        let out = cluster
            .command("scontrol")
            .args(["listpids", &raw])
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() >= 4 && w[2] == "batch" && w[3] == "0" && w[0].parse::<u32>().is_ok_and(|p| p > 1))
                .then(|| w[0].to_owned())
        })
    };
    let mut pids: [Option<String>; 2] = [None, None];
    let mut frozen = [false; 2];
    let t0 = Instant::now();
    while !frozen.iter().all(|f| *f) {
        for t in 0..2 {
            if frozen[t] {
                continue;
            }
            if pids[t].is_none() {
                pids[t] = batch_pid(t);
            }
            if let Some(pid) = &pids[t]
                && part_way(&cell(t))
            {
                signal("-STOP", pid);
                frozen[t] = true;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "tasks 0 and 1 not both stopped part-way (stopped: {frozen:?}):\n{}\n{}",
            cluster.report(&task(0)),
            cluster.report(&task(1))
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let [Some(pid0), Some(pid1)] = pids else {
        unreachable!("both stopped")
    };

    // Task 0: cancelled (SLURM sends SIGTERM, and SIGKILL KillWait seconds later); woken, the
    // cell checkpoints after the update under way and exits. Requeued.
    cluster.run("scancel", &["--signal=KILL", &task(0)]);
    signal("-CONT", &pid0);
    assert!(
        wait_for(Duration::from_secs(30), || {
            cluster.field(&task(0), "JobState").as_deref() == Some("CANCELLED")
        }),
        "task 0 not cancelled:\n{}",
        cluster.report(&task(0))
    );
    cluster.run("scontrol", &["requeue", &task(0)]);

    // Task 1: a real SIGKILL on its batch process (no time to checkpoint), requeued.
    signal("-KILL", &pid1);
    assert!(
        wait_for(Duration::from_secs(30), || {
            cluster.field(&task(1), "JobState").as_deref() == Some("FAILED")
        }),
        "task 1 not failed:\n{}",
        cluster.report(&task(1))
    );
    cluster.run("scontrol", &["requeue", &task(1)]);

    // The array runs to its end: every task COMPLETED, the two requeued ones on their second run.
    assert!(
        wait_for(Duration::from_secs(300), || {
            cluster.run("squeue", &["-h", "-r", "-j", &job]).trim().is_empty()
        }),
        "job {job} still queued after 300 s:\n{}",
        cluster.report(&job)
    );
    eprintln!(
        "slurm executor (with the two kills): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    for t in 0..6 {
        assert_eq!(
            cluster.field(&task(t), "JobState").as_deref(),
            Some("COMPLETED"),
            "task {t}:\n{}",
            cluster.report(&task(t))
        );
        let restarts = if t < 2 { "1" } else { "0" };
        assert_eq!(
            cluster.field(&task(t), "Restarts").as_deref(),
            Some(restarts),
            "task {t}"
        );
    }
    let log =
        |t: usize| std::fs::read_to_string(exp.join("logs").join(format!("slurm-{job}_{t}.log"))).unwrap();
    let log0 = log(0);
    eprintln!("task 0's log:\n{log0}\ntask 1's log:\n{}", log(1));
    assert!(log0.contains("interrupted by signal 15"), "{log0}");
    for (t, text) in [(0, log0), (1, log(1))] {
        assert!(text.contains("resuming from checkpoints/"), "task {t}:\n{text}");
        assert!(text.contains(": trained,"), "task {t}:\n{text}");
    }
    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cell(0).join("cell.json")).unwrap()).unwrap();
    assert_eq!(rec["job"], task(0).as_str());

    // `status` from the cells' folders and the queue (no accounting here: sacct fails without
    // slurmdbd, and squeue has nothing left).
    let status = ok(&cluster.lexbench(&on_slurm, &["experiment", "status", f]));
    assert!(status.contains("6/6 cells done"), "{status}");
    assert!(
        status.contains(&format!("slurm job {job}: no task queued or running")),
        "{status}"
    );
    ok(&cluster.lexbench(&on_slurm, &["experiment", "collect", f]));

    // Bit for bit the local executor's.
    let cells_of = |data: &Path| {
        let dir = data.join("experiments/small/cells");
        let records: Vec<(String, serde_json::Value)> = files(&dir, "/cell.json")
            .into_iter()
            .map(|(p, b)| (p, record(&b)))
            .collect();
        let summaries: Vec<(String, serde_json::Value)> = files(&dir, "/train/summary.json")
            .into_iter()
            .map(|(p, b)| (p, summary(&b)))
            .collect();
        (records, summaries)
    };
    let (rl, sl) = cells_of(&local);
    let (rs, ss) = cells_of(&on_slurm);
    assert_eq!(rl.len(), 6);
    assert_eq!(rl, rs);
    assert_eq!(sl, ss);
    let runs = |data: &Path| files(&data.join("runs/ecthr/test"), ".trec");
    let (runs_local, runs_slurm) = (runs(&local), runs(&on_slurm));
    assert!(
        runs_local.iter().any(|(p, _)| p == "small-dpr-lora.trec")
            && runs_local.iter().any(|(p, _)| p == "small-cross-lora.trec"),
        "{:?}",
        runs_local.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    assert_eq!(runs_local, runs_slurm);
    let (bl, bs) = (board(&local), board(&on_slurm));
    assert_eq!(bl.len(), 2, "{bl:?}");
    assert_eq!(bl, bs);
    let table = |data: &Path| std::fs::read_to_string(data.join("experiments/small/results.md")).unwrap();
    assert_eq!(table(&local), table(&on_slurm));

    drop(cluster);
    let _ = std::fs::remove_dir_all(&root);
}
