//! The SLURM executor of `lexbench experiment run --executor slurm`: the cells still to run become
//! one `sbatch` job array, each task running `lexbench experiment cell FILE INDEX` (the same command
//! the local executor runs), and `squeue` tells what is queued or running.
//!
//! Nothing of SLURM is linked in: lexbench writes a batch script and calls `sbatch`, `squeue`,
//! `scancel` as a user would, and says so when they are missing. The one assumption is a file
//! system the nodes share with the machine that submits: the data directory, the experiment file, the
//! configurations, the base models and the `lexbench` binary are named by their absolute paths, and
//! each task starts in the directory `run` was started in (relative paths of the configurations,
//! such as `base = "models/minilm"`, mean there what they mean here).
//!
//! Each submission is a folder `DATA/experiments/<name>/slurm/<n>/`: `array.sh` (the batch script:
//! the `#SBATCH` options, the cell index of each array task), `tasks.tsv` (task → cell → key) and
//! `job` (the job id `sbatch` gave); `DATA/experiments/<name>/slurm/jobs.txt` lists the jobs. Each
//! task's output goes to `DATA/experiments/<name>/logs/slurm-<job>_<task>.log`. The array is
//! submitted with `--requeue` (a preempted or failed node's task is run again, and resumes from its
//! checkpoints) and `--open-mode=append` (a requeued task's log keeps what the first run wrote).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use lexbench_core::datadir::DataDir;

use crate::experiment::{Plan, SlurmSpec};

/// The sbatch options of a submission: the experiment file's `[slurm]`, with the command line's
/// over it.
pub fn options(file: &SlurmSpec, flags: &SlurmSpec) -> SlurmSpec {
    SlurmSpec {
        partition: flags.partition.clone().or_else(|| file.partition.clone()),
        account: flags.account.clone().or_else(|| file.account.clone()),
        time: flags.time.clone().or_else(|| file.time.clone()),
        mem: flags.mem.clone().or_else(|| file.mem.clone()),
        cpus_per_task: flags.cpus_per_task.or(file.cpus_per_task),
        gres: flags.gres.clone().or_else(|| file.gres.clone()),
        max_parallel: flags.max_parallel.or(file.max_parallel),
        extra: file.extra.iter().chain(&flags.extra).cloned().collect(),
    }
}

/// A value as one word of a shell script, single-quoted.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// An sbatch option's value must be one line without quotes of its own: `#SBATCH` lines are not
/// read by a shell.
fn check_option(name: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.chars().any(|c| c.is_control() || c == '"' || c == '\'') {
        bail!("slurm {name} {value:?}: give one line without quotes or control characters");
    }
    Ok(())
}

/// What each array task runs and where: the paths the batch script names (absolute, as the
/// compute nodes see the shared file system) and the `experiment cell` arguments after the cell.
#[derive(Debug, Clone)]
pub struct TaskCommand<'a> {
    /// The lexbench binary.
    pub exe: &'a Path,
    /// The data directory (`--data`).
    pub data: &'a Path,
    /// The experiment file.
    pub file: &'a Path,
    /// The tasks' working directory (`--chdir`).
    pub workdir: &'a Path,
    /// The folder of the tasks' logs (`--output`).
    pub logs: &'a Path,
    /// Arguments of `experiment cell` after the cell (`--checkpoint-minutes`, the device).
    pub cell_args: &'a [String],
}

/// The batch script for `cells` (indices of the plan's cells, one array task each), each task
/// running `run`.
pub fn script(plan: &Plan, cells: &[usize], o: &SlurmSpec, run: &TaskCommand<'_>) -> Result<String> {
    let TaskCommand {
        exe,
        data,
        file,
        workdir,
        logs,
        cell_args,
    } = *run;
    let mut lines = vec!["#!/bin/bash".to_owned()];
    let mut opt = |name: &str, value: &str| -> Result<()> {
        check_option(name, value)?;
        lines.push(format!("#SBATCH --{name}={value}"));
        Ok(())
    };
    opt("job-name", &format!("lexbench-{}", plan.spec.name))?;
    let last = cells.len().checked_sub(1).context("no cell to submit")?;
    match o.max_parallel {
        Some(m) if m > 0 => opt("array", &format!("0-{last}%{m}"))?,
        _ => opt("array", &format!("0-{last}"))?,
    }
    opt("output", &logs.join("slurm-%A_%a.log").display().to_string())?;
    opt("open-mode", "append")?;
    opt("chdir", &workdir.display().to_string())?;
    for (name, v) in [
        ("partition", &o.partition),
        ("account", &o.account),
        ("time", &o.time),
        ("mem", &o.mem),
        ("gres", &o.gres),
    ] {
        if let Some(v) = v {
            opt(name, v)?;
        }
    }
    if let Some(c) = o.cpus_per_task {
        opt("cpus-per-task", &c.to_string())?;
    }
    lines.push("#SBATCH --requeue".to_owned());
    for e in &o.extra {
        let e = e.trim();
        if !e.starts_with("--") || e.chars().any(|c| c.is_control()) {
            bail!("slurm extra option {e:?}: give an sbatch option (`--qos=high`), one line");
        }
        lines.push(format!("#SBATCH {e}"));
    }
    lines.push(String::new());
    lines.push(format!(
        "# lexbench experiment {}: {} cells, one array task each (tasks.tsv: task, cell, key).",
        plan.spec.name,
        cells.len()
    ));
    lines.push("set -euo pipefail".to_owned());
    lines.push("# As many threads as CPUs allotted (--cpus-per-task), unless the caller chose.".to_owned());
    lines.push(
        "if [ -n \"${SLURM_CPUS_PER_TASK:-}\" ] && [ -z \"${RAYON_NUM_THREADS:-}\" ]; then export RAYON_NUM_THREADS=\"$SLURM_CPUS_PER_TASK\"; fi"
            .to_owned(),
    );
    let list: Vec<String> = cells.iter().map(usize::to_string).collect();
    lines.push(format!("cells=({})", list.join(" ")));
    lines.push("cell=\"${cells[$SLURM_ARRAY_TASK_ID]}\"".to_owned());
    let mut cmd = vec![
        "exec".to_owned(),
        quote(&exe.display().to_string()),
        "--data".to_owned(),
        quote(&data.display().to_string()),
        "experiment".to_owned(),
        "cell".to_owned(),
        quote(&file.display().to_string()),
        "\"$cell\"".to_owned(),
    ];
    cmd.extend(cell_args.iter().map(|a| quote(a)));
    lines.push(cmd.join(" "));
    Ok(lines.join("\n") + "\n")
}

/// A SLURM command, or a clear error when it is not installed.
fn slurm_command(name: &str) -> Result<Command> {
    let found =
        std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()));
    if !found {
        bail!(
            "{name} not found: --executor slurm runs SLURM's own commands (sbatch, squeue, scancel) as \
             a user would; run it where they are (a cluster's login node, or install slurm-client)"
        );
    }
    Ok(Command::new(name))
}

/// Submits `cells` (not done yet) as one job array (module documentation): `None` when there is
/// nothing to run.
pub fn submit(
    data: &DataDir,
    plan: &Plan,
    cells: &[usize],
    o: &SlurmSpec,
    checkpoint_minutes: f64,
    device_args: &[String],
) -> Result<Option<String>> {
    if cells.is_empty() {
        return Ok(None);
    }
    let mut sbatch = slurm_command("sbatch")?;
    let root = plan.dir(data);
    let slurm = root.join("slurm");
    let n = std::fs::read_dir(&slurm).map_or(0, |rd| rd.count());
    let dir = slurm.join(format!("{:04}", n + 1));
    let logs = root.join("logs");
    for d in [&dir, &logs] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let abs =
        |p: &Path| std::path::absolute(p).with_context(|| format!("{}: not a usable path", p.display()));
    let exe = std::env::current_exe().context("the lexbench binary")?;
    let workdir = std::env::current_dir().context("the current directory")?;
    let mut cell_args = vec!["--checkpoint-minutes".to_owned(), checkpoint_minutes.to_string()];
    cell_args.extend(device_args.iter().cloned());
    let text = script(
        plan,
        cells,
        o,
        &TaskCommand {
            exe: &exe,
            data: &abs(data.root())?,
            file: &abs(&plan.file)?,
            workdir: &workdir,
            logs: &abs(&logs)?,
            cell_args: &cell_args,
        },
    )?;
    let script_path = dir.join("array.sh");
    lexbench_core::io::write_atomic(&script_path, |w| {
        use std::io::Write;
        w.write_all(text.as_bytes())
    })?;
    let mut tasks = String::from("task\tcell\tkey\n");
    for (t, &c) in cells.iter().enumerate() {
        tasks.push_str(&format!("{t}\t{c}\t{}\n", plan.key(&plan.cells[c])?));
    }
    lexbench_core::io::write_atomic(&dir.join("tasks.tsv"), |w| {
        use std::io::Write;
        w.write_all(tasks.as_bytes())
    })?;
    let out = sbatch
        .arg("--parsable")
        .arg(&script_path)
        .output()
        .context("running sbatch")?;
    if !out.status.success() {
        bail!(
            "sbatch {} failed ({}): {}",
            script_path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    // `--parsable`: `JOBID` or `JOBID;CLUSTER`.
    let job = stdout.trim().split(';').next().unwrap_or("").to_owned();
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        bail!("sbatch printed {stdout:?}, not a job id");
    }
    lexbench_core::io::write_atomic(&dir.join("job"), |w| {
        use std::io::Write;
        writeln!(w, "{job}")
    })?;
    let list = slurm.join("jobs.txt");
    let mut all = std::fs::read_to_string(&list).unwrap_or_default();
    all.push_str(&format!("{job}\t{}\n", dir.display()));
    lexbench_core::io::write_atomic(&list, |w| {
        use std::io::Write;
        w.write_all(all.as_bytes())
    })?;
    Ok(Some(job))
}

/// The jobs submitted for the experiment whose folder is `dir`, oldest first.
pub fn recorded_jobs(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("slurm/jobs.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|j| !j.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The tasks of job `job` that SLURM still has queued or running: `JOBID_TASK STATE` each
/// (`squeue`; empty once all have ended).
pub fn queue_states(job: &str) -> Result<Vec<String>> {
    let out = slurm_command("squeue")?
        .args(["-h", "-r", "-j", job, "-o", "%i %T"])
        .output()
        .context("running squeue")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // A job that ended long ago is no longer known: nothing queued.
        if err.contains("Invalid job id") {
            return Ok(Vec::new());
        }
        bail!("squeue -j {job} failed ({}): {}", out.status, err.trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect())
}

/// The tasks of job `job` as SLURM's accounting has them, queued, running or ended (`sacct`):
/// `JOBID_TASK STATE` each, or `None` where there is no accounting (`sacct` missing, or the cluster
/// runs without slurmdbd: "accounting storage is disabled").
pub fn accounted_states(job: &str) -> Option<Vec<String>> {
    let out = slurm_command("sacct")
        .ok()?
        .args(["-n", "-P", "-X", "-j", job, "-o", "JobID,State"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (id, state) = l.split_once('|')?;
                // "CANCELLED by 0" → CANCELLED.
                let state = state.split_whitespace().next()?;
                Some(format!("{id} {state}"))
            })
            .collect(),
    )
}

/// Waits until job `job` has no task queued or running, telling `log` each change of what is
/// queued.
pub fn wait(job: &str, log: &mut dyn FnMut(String)) -> Result<()> {
    let mut last = None;
    loop {
        let states = queue_states(job)?;
        let summary = summarise(&states);
        if last.as_ref() != Some(&summary) {
            log(format!("slurm job {job}: {summary}"));
            last = Some(summary);
        }
        if states.is_empty() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}

/// `3 RUNNING, 5 PENDING` from `squeue` (or `sacct`) lines.
pub fn summarise(states: &[String]) -> String {
    if states.is_empty() {
        return "no task queued or running".to_owned();
    }
    let mut counts = std::collections::BTreeMap::new();
    for s in states {
        let state = s.rsplit(' ').next().unwrap_or("?");
        *counts.entry(state.to_owned()).or_insert(0usize) += 1;
    }
    counts
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The folder of the newest submission of the experiment whose folder is `dir`.
pub fn newest_submission(dir: &Path) -> Option<PathBuf> {
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir.join("slurm"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subs.sort();
    subs.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_on_the_command_line_win_and_extras_add_up() {
        let file = SlurmSpec {
            partition: Some("cpu".into()),
            time: Some("01:00:00".into()),
            extra: vec!["--qos=low".into()],
            ..SlurmSpec::default()
        };
        let flags = SlurmSpec {
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            extra: vec!["--constraint=a100".into()],
            ..SlurmSpec::default()
        };
        let o = options(&file, &flags);
        assert_eq!(o.partition.as_deref(), Some("gpu"));
        assert_eq!(o.time.as_deref(), Some("01:00:00"));
        assert_eq!(o.gres.as_deref(), Some("gpu:1"));
        assert_eq!(o.extra, vec!["--qos=low", "--constraint=a100"]);
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert!(check_option("time", "1:00\n#SBATCH --x").is_err());
        assert_eq!(
            summarise(&["1_0 RUNNING".into(), "1_1 PENDING".into(), "1_2 PENDING".into()]),
            "2 PENDING, 1 RUNNING"
        );
    }
}
