//! `lexbench experiment plan|run|cell|status|collect FILE`: an experiment file's grid as cells
//! ([`lexbench::experiment`]), run on this machine (`--executor local`, `--jobs N` at a time) or as
//! one SLURM job array (`--executor slurm`, [`lexbench::slurm`]), and collected into leaderboard
//! entries and a table.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use lexbench::experiment::{self, CellOutcome, CellState, Plan};
use lexbench_core::datadir::DataDir;

use crate::cmd::args::DeviceArg;

/// `lexbench experiment …`.
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// Expand the experiment into cells and print them (count, keys, what is done).
    Plan(PlanArgs),
    /// Run the cells not done yet, on this machine or through SLURM, then collect what is done.
    Run(RunArgs),
    /// Run one cell (what each executor's task runs): by index or key.
    Cell(CellArgs),
    /// Where the experiment stands: done / running / failed / pending per training.
    Status(PlanArgs),
    /// Select each training's point on validation, rank and submit its runs, write results.md.
    Collect(CollectArgs),
}

/// `plan` and `status`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The experiment file (TOML), e.g. experiments/ecthr/paper.toml.
    pub file: PathBuf,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Where cells run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Executor {
    /// Child processes on this machine, `--jobs` at a time.
    Local,
    /// One `sbatch` job array (a shared file system between the nodes and this machine).
    Slurm,
}

/// `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// Where the cells run.
    #[arg(long, value_enum, default_value_t = Executor::Local)]
    pub executor: Executor,
    /// Local: cells at a time (each a process with a share of the CPUs' threads).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// Checkpoint within an epoch every M minutes (a killed cell resumes there).
    #[arg(long, value_name = "M", default_value_t = 10.0)]
    pub checkpoint_minutes: f64,
    #[command(flatten)]
    pub slurm: crate::cmd::experiment::SlurmArgs,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// sbatch options given on the command line (over the experiment file's `[slurm]`).
#[derive(Debug, Args, Default)]
pub struct SlurmArgs {
    /// SLURM: `--partition`.
    #[arg(long)]
    pub partition: Option<String>,
    /// SLURM: `--account`.
    #[arg(long)]
    pub account: Option<String>,
    /// SLURM: a cell's time limit (`--time`, e.g. 04:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// SLURM: `--mem` per cell (e.g. 16G).
    #[arg(long)]
    pub mem: Option<String>,
    /// SLURM: `--cpus-per-task`.
    #[arg(long)]
    pub cpus_per_task: Option<u32>,
    /// SLURM: `--gres` (e.g. gpu:1).
    #[arg(long)]
    pub gres: Option<String>,
    /// SLURM: at most this many cells at once (`--array=…%M`).
    #[arg(long)]
    pub max_parallel: Option<usize>,
    /// SLURM: one more sbatch option (`--sbatch=--qos=high`). Repeatable.
    #[arg(long = "sbatch", value_name = "OPTION", allow_hyphen_values = true)]
    pub extra: Vec<String>,
    /// SLURM: submit and return without waiting for the array to end.
    #[arg(long)]
    pub no_wait: bool,
}

/// `cell`.
#[derive(Debug, Args)]
pub struct CellArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// The cell: its index in the plan, or its key (8 or more of its first hex digits).
    pub cell: String,
    /// Checkpoint within an epoch every M minutes.
    #[arg(long, value_name = "M", default_value_t = 10.0)]
    pub checkpoint_minutes: f64,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// `collect`.
#[derive(Debug, Args)]
pub struct CollectArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// Runs `lexbench experiment …`.
pub fn cmd_experiment(data: &DataDir, cmd: &ExperimentCommand) -> Result<ExitCode> {
    match cmd {
        ExperimentCommand::Plan(a) => plan(data, a),
        ExperimentCommand::Status(a) => status(data, a),
        ExperimentCommand::Cell(a) => cell(data, a),
        ExperimentCommand::Run(a) => run(data, a),
        ExperimentCommand::Collect(a) => {
            let plan = experiment::plan(data, &a.file)?;
            collect(data, &plan, &a.device.device()?)
        }
    }
}

fn every(minutes: f64) -> Result<Option<std::time::Duration>> {
    if !(0.0..=10080.0).contains(&minutes) {
        bail!("--checkpoint-minutes {minutes}: give a number of minutes from 0 to 10080 (a week)");
    }
    Ok((minutes > 0.0).then(|| std::time::Duration::from_secs_f64(minutes * 60.0)))
}

/// The first SIGTERM or SIGINT sets the flag (and the number to the signal's); a second one ends the
/// process at once, as without a handler. A cell checkpoints and exits at the flag (SLURM sends
/// SIGTERM before it preempts, requeues or cancels a task, and SIGKILL `KillWait` seconds later).
struct Interrupt {
    flag: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    fn install() -> Result<Self> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let flag = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        for sig in [SIGTERM, SIGINT] {
            // Registered first, so that it sees the flag as the earlier signal left it.
            signal_hook::flag::register_conditional_default(sig, Arc::clone(&flag))
                .context("a handler for SIGTERM / SIGINT")?;
            signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
                .context("a handler for SIGTERM / SIGINT")?;
            signal_hook::flag::register(sig, Arc::clone(&flag)).context("a handler for SIGTERM / SIGINT")?;
        }
        Ok(Self { flag, signal })
    }

    fn set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The exit status for the signal received: 128 + its number, as a shell reports it.
    fn code(&self) -> ExitCode {
        let n = self.signal.load(Ordering::Relaxed).min(127) as u8;
        ExitCode::from(128 + n)
    }
}

fn plan(data: &DataDir, a: &PlanArgs) -> Result<ExitCode> {
    let plan = experiment::plan(data, &a.file)?;
    if a.json {
        let v = serde_json::json!({
            "experiment": plan.spec.name,
            "dataset": plan.spec.dataset.name,
            "dataset_version": plan.dataset_version,
            "revision": plan.revision,
            "groups": plan.groups,
            "cells": plan.cells,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "{}: {} cells in {} trainings on {} (ranked on {})",
        plan.spec.name,
        plan.cells.len(),
        plan.groups.len(),
        plan.spec.dataset.name,
        if plan.spec.rank.splits.is_empty() {
            "nothing".to_owned()
        } else {
            plan.spec.rank.splits.join(", ")
        }
    );
    if let Some(b) = &plan.spec.dataset.build {
        let _ = writeln!(out, "dataset built by: {b}");
    }
    match &plan.unkeyed {
        Some(why) => {
            let _ = writeln!(out, "keys: not yet ({why})");
        }
        None => {
            let _ = writeln!(
                out,
                "keys: dataset {}, revision {}",
                plan.dataset_version.as_deref().unwrap_or("-"),
                plan.revision
            );
        }
    }
    let _ = writeln!(
        out,
        "\n| training | config | seed | epochs | points |\n|---|---|---|---|---|"
    );
    for g in &plan.groups {
        let first = &plan.cells[g.cells[0]];
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            g.name,
            g.config.display(),
            g.seed,
            first.config.schedule.epochs,
            g.cells.len()
        );
    }
    let _ = writeln!(
        out,
        "\n| cell | training | point | key | state |\n|---|---|---|---|---|"
    );
    for c in &plan.cells {
        let state = if c.key.is_some() {
            state_word(&experiment::cell_state(&plan, data, c)?)
        } else {
            "-"
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {state} |",
            c.index,
            plan.groups[c.group].name,
            c.point.as_deref().unwrap_or("-"),
            c.key.as_deref().map_or("-", |k| &k[..12])
        );
    }
    if let Some(est) = estimate(data, &plan)? {
        let _ = writeln!(out, "\n{est}");
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn state_word(s: &CellState) -> &'static str {
    match s {
        CellState::Done(_) => "done",
        CellState::Running => "running",
        CellState::Failed(_) => "failed",
        CellState::Pending => "pending",
    }
}

/// An estimate of the time still to run, from the recorded wall times of this experiment's done
/// cells of the same training (else of any training).
fn estimate(data: &DataDir, plan: &Plan) -> Result<Option<String>> {
    if plan.unkeyed.is_some() {
        return Ok(None);
    }
    let mut per_group: Vec<Vec<f64>> = vec![Vec::new(); plan.groups.len()];
    let mut pending = vec![0usize; plan.groups.len()];
    for c in &plan.cells {
        match experiment::cell_state(plan, data, c)? {
            CellState::Done(r) => per_group[c.group].push(r.wall_s),
            _ => pending[c.group] += 1,
        }
    }
    let all: Vec<f64> = per_group.iter().flatten().copied().collect();
    if all.is_empty() || pending.iter().sum::<usize>() == 0 {
        return Ok(None);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let overall = mean(&all);
    let secs: f64 = (0..plan.groups.len())
        .map(|g| {
            let m = if per_group[g].is_empty() {
                overall
            } else {
                mean(&per_group[g])
            };
            m * pending[g] as f64
        })
        .sum();
    Ok(Some(format!(
        "estimate: {:.1} h of cell time still to run ({} cells; from the {} cells done here)",
        secs / 3600.0,
        pending.iter().sum::<usize>(),
        all.len()
    )))
}

fn status(data: &DataDir, a: &PlanArgs) -> Result<ExitCode> {
    let plan = experiment::plan(data, &a.file)?;
    if let Some(why) = &plan.unkeyed {
        bail!("{}: nothing can have run: {why}", a.file.display());
    }
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    let (mut total, mut finished) = (0usize, 0usize);
    for g in &plan.groups {
        let mut counts = [0usize; 4];
        for &c in &g.cells {
            let cell = &plan.cells[c];
            let s = experiment::cell_state(&plan, data, cell)?;
            let i = match &s {
                CellState::Done(_) => 0,
                CellState::Running => 1,
                CellState::Failed(e) => {
                    failed.push(format!(
                        "cell {} ({} {}): {e}",
                        c,
                        g.name,
                        cell.point.as_deref().unwrap_or("")
                    ));
                    2
                }
                CellState::Pending => 3,
            };
            counts[i] += 1;
        }
        total += g.cells.len();
        finished += counts[0];
        rows.push((g.name.clone(), counts));
    }
    let jobs = lexbench::slurm::recorded_jobs(&plan.dir(data));
    if a.json {
        let v = serde_json::json!({
            "experiment": plan.spec.name,
            "done": finished,
            "cells": total,
            "trainings": rows.iter().map(|(n, c)| serde_json::json!({
                "name": n, "done": c[0], "running": c[1], "failed": c[2], "pending": c[3]
            })).collect::<Vec<_>>(),
            "failed": failed,
            "slurm_jobs": jobs,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    use std::fmt::Write as _;
    let width = 30usize;
    let filled = (finished * width).checked_div(total).unwrap_or(0);
    let _ = writeln!(
        out,
        "{}: [{}{}] {finished}/{total} cells done",
        plan.spec.name,
        "#".repeat(filled),
        "-".repeat(width - filled)
    );
    let _ = writeln!(
        out,
        "\n| training | done | running | failed | pending |\n|---|---|---|---|---|"
    );
    for (n, c) in &rows {
        let _ = writeln!(out, "| {n} | {} | {} | {} | {} |", c[0], c[1], c[2], c[3]);
    }
    for f in &failed {
        let _ = writeln!(out, "failed: {f}");
    }
    for j in &jobs {
        if let Some(states) = lexbench::slurm::accounted_states(j) {
            let _ = writeln!(
                out,
                "slurm job {j} (sacct): {}",
                lexbench::slurm::summarise(&states)
            );
            continue;
        }
        match lexbench::slurm::queue_states(j) {
            Ok(states) if states.is_empty() => {
                let _ = writeln!(out, "slurm job {j}: no task queued or running");
            }
            Ok(states) => {
                let _ = writeln!(out, "slurm job {j}: {}", states.join(", "));
            }
            Err(e) => {
                let _ = writeln!(out, "slurm job {j}: {e:#}");
            }
        }
    }
    if let Some(est) = estimate(data, &plan)? {
        let _ = writeln!(out, "{est}");
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn cell(data: &DataDir, a: &CellArgs) -> Result<ExitCode> {
    let plan = experiment::plan(data, &a.file)?;
    let cell = plan.find(&a.cell)?;
    let device = a.device.device()?;
    let group = &plan.groups[cell.group].name;
    let point = cell.point.as_deref().unwrap_or("-");
    let interrupt = Interrupt::install()?;
    let every = every(a.checkpoint_minutes)?;
    if !matches!(experiment::cell_state(&plan, data, cell)?, CellState::Done(_)) {
        let job = match (
            std::env::var("SLURM_ARRAY_JOB_ID"),
            std::env::var("SLURM_ARRAY_TASK_ID"),
        ) {
            (Ok(j), Ok(t)) => format!(
                " (SLURM task {j}_{t}, restart {})",
                std::env::var("SLURM_RESTART_COUNT").unwrap_or_else(|_| "0".into())
            ),
            _ => String::new(),
        };
        match experiment::resume_point(data, &plan, cell)? {
            Some(p) => println!("cell {} ({group} {point}){job}: resuming from {p}", cell.index),
            None => println!("cell {} ({group} {point}){job}: starting", cell.index),
        }
    }
    match experiment::run_cell(
        data,
        &plan,
        cell,
        &device,
        every,
        Some(Arc::clone(&interrupt.flag)),
    )? {
        CellOutcome::Trained(r) => println!(
            "cell {} ({group} {point}): trained, {} {} at epoch {}, {:.1} s",
            cell.index,
            r.measure,
            r.best_val.map_or("-".to_owned(), |v| format!("{v:.4}")),
            r.best_epoch,
            r.wall_s
        ),
        CellOutcome::AlreadyDone(_) => println!("cell {} ({group} {point}): done already", cell.index),
        CellOutcome::Busy => println!(
            "cell {} ({group} {point}): another process runs it now; left to it",
            cell.index
        ),
        CellOutcome::Interrupted { epochs } => {
            println!(
                "cell {} ({group} {point}): interrupted by signal {} after {epochs} epoch(s) trained; its \
                 checkpoints are kept and the next run resumes from them",
                cell.index,
                interrupt.signal.load(Ordering::Relaxed)
            );
            return Ok(interrupt.code());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run(data: &DataDir, a: &RunArgs) -> Result<ExitCode> {
    let plan = experiment::plan(data, &a.file)?;
    plan.key(&plan.cells[0])?;
    let todo: Vec<usize> = plan
        .cells
        .iter()
        .filter(|c| !matches!(experiment::cell_state(&plan, data, c), Ok(CellState::Done(_))))
        .map(|c| c.index)
        .collect();
    let device = a.device.device()?;
    eprintln!(
        "{}: {} of {} cells to run ({} executor)",
        plan.spec.name,
        todo.len(),
        plan.cells.len(),
        match a.executor {
            Executor::Local => "local",
            Executor::Slurm => "slurm",
        }
    );
    let ok = match a.executor {
        Executor::Local => {
            let interrupt = Interrupt::install()?;
            let ok = run_local(data, &plan, &todo, a, &interrupt)?;
            if interrupt.set() {
                eprintln!(
                    "{}: interrupted; the cells that were running kept their checkpoints, and the next \
                     run resumes them",
                    plan.spec.name
                );
                return Ok(interrupt.code());
            }
            ok
        }
        Executor::Slurm => {
            let options = lexbench::slurm::options(&plan.spec.slurm, &slurm_overrides(&a.slurm));
            let job = lexbench::slurm::submit(
                data,
                &plan,
                &todo,
                &options,
                a.checkpoint_minutes,
                &a.device.args(),
            )?;
            let Some(job) = job else {
                return collect(data, &plan, &device);
            };
            eprintln!("slurm: submitted job array {job} ({} tasks)", todo.len());
            if a.slurm.no_wait {
                println!("{job}");
                return Ok(ExitCode::SUCCESS);
            }
            lexbench::slurm::wait(&job, &mut |line| eprintln!("{line}"))?;
            true
        }
    };
    let code = collect(data, &plan, &device)?;
    if !ok {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

fn slurm_overrides(a: &SlurmArgs) -> lexbench::experiment::SlurmSpec {
    lexbench::experiment::SlurmSpec {
        partition: a.partition.clone(),
        account: a.account.clone(),
        time: a.time.clone(),
        mem: a.mem.clone(),
        cpus_per_task: a.cpus_per_task,
        gres: a.gres.clone(),
        max_parallel: a.max_parallel,
        extra: a.extra.clone(),
    }
}

/// Runs `todo` as child processes (`lexbench experiment cell`), `--jobs` at a time, each with a
/// share of the threads; each child's output goes to the cell's log. `false` when any failed.
///
/// Once interrupted (SIGTERM, SIGINT) no more cells start, and the running ones are waited for: a
/// Ctrl-C or a scheduler's signal reaches them too (they are in this process's group) and they
/// checkpoint and exit; a signal to this process alone lets them run to their end.
fn run_local(
    data: &DataDir,
    plan: &Plan,
    todo: &[usize],
    a: &RunArgs,
    interrupt: &Interrupt,
) -> Result<bool> {
    let exe = std::env::current_exe().context("the lexbench binary")?;
    let logs = plan.dir(data).join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let jobs = usize::from(a.jobs);
    let threads = (lexbench_core::run::cpus() / jobs).max(1);
    let bar = indicatif::ProgressBar::new(todo.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} cells {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut queue = todo.iter().copied();
    let mut running: Vec<(usize, std::process::Child)> = Vec::new();
    let mut failed = Vec::new();
    loop {
        while running.len() < jobs && !interrupt.set() {
            let Some(i) = queue.next() else { break };
            let cell = &plan.cells[i];
            let log = logs.join(format!("{}.log", plan.key(cell)?));
            let f = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
            let mut cmd = std::process::Command::new(&exe);
            cmd.arg("--data")
                .arg(data.root())
                .args(["experiment", "cell"])
                .arg(&plan.file)
                .arg(i.to_string())
                .arg("--checkpoint-minutes")
                .arg(a.checkpoint_minutes.to_string())
                .args(a.device.args())
                .stdin(std::process::Stdio::null())
                .stdout(f.try_clone()?)
                .stderr(f);
            if jobs > 1 && std::env::var_os("RAYON_NUM_THREADS").is_none() {
                cmd.env("RAYON_NUM_THREADS", threads.to_string());
            }
            running.push((i, cmd.spawn().context("starting a cell")?));
        }
        if running.is_empty() {
            break;
        }
        let mut k = 0;
        while k < running.len() {
            if let Some(st) = running[k].1.try_wait()? {
                let (i, _) = running.swap_remove(k);
                bar.inc(1);
                if !st.success() && !interrupt.set() {
                    let log = logs.join(format!("{}.log", plan.key(&plan.cells[i])?));
                    failed.push(format!("cell {i}: exit {st}; its log: {}", log.display()));
                }
            } else {
                k += 1;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    bar.finish_and_clear();
    for f in &failed {
        eprintln!("failed: {f}");
    }
    Ok(failed.is_empty())
}

fn collect(data: &DataDir, plan: &Plan, device: &lexbench_baselines::Device) -> Result<ExitCode> {
    let report = experiment::collect(data, plan, device)?;
    for c in &report.collected {
        println!(
            "{}: selected {} (val {}); {} runs submitted",
            c.group,
            c.point.as_deref().unwrap_or("-"),
            c.val.map_or("-".to_owned(), |v| format!("{v:.4}")),
            c.runs.len()
        );
    }
    for (g, done, total) in &report.incomplete {
        println!("{g}: {done} of {total} cells done; not collected");
    }
    if let Some(t) = &report.table {
        println!("table: {}", t.display());
    }
    Ok(if report.incomplete.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}
