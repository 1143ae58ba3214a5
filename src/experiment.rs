//! Experiments: a grid of trainings written down as one file, expanded into cells, each cell run once
//! (on this machine or by a scheduler) and the whole collected into leaderboard entries and a table
//! (`lexbench experiment plan|run|cell|status|collect`; `docs/experiments.md`).
//!
//! **An experiment is a file** (TOML, `experiments/ecthr/paper.toml`):
//!
//! ```toml
//! name = "ecthr-paper"                      # a name: DATA/experiments/<name>
//! description = "…"
//!
//! [dataset]
//! name = "ecthr-release-text"               # DATA/datasets/<name>, the dataset every training reads
//! version = "4f0c…"                         # optional: its version (manifest hash), checked
//! build = "lexbench import release …"       # optional: the command that builds it (shown, not run)
//!
//! [rank]
//! splits = ["test", "unseen_query", "unseen_guide"]   # ranked with each selected model
//!
//! [set]                                     # `--set` for every training (dotted keys)
//! "data.dataset" = "ecthr-release-text"
//!
//! [[train]]
//! config = "../../baselines/configs/ecthr/dpr.toml"   # relative to this file
//! name = "dpr"                              # optional: the system's name (default: the config's)
//! set = { "schedule.epochs" = 5 }           # optional: more `--set`
//! seeds = [20261122]                        # optional (default: the config's seed)
//! sweep = true                              # optional (default: the config's grid, if it has one)
//!
//! [slurm]                                   # optional: `--executor slurm`'s sbatch options
//! partition = "gpu"
//! time = "04:00:00"
//! ```
//!
//! **Cells.** Each `[[train]]` entry × seed is a *group* (one row of the results); each point of its
//! grid ([`lexbench_baselines::train::config::sweep`], named as `train --sweep` names it) is a
//! *cell*. A cell's key is the sha256 of what its result depends on: the dataset's name and version,
//! the configuration after every override (as JSON, the base model by its content, never its path),
//! the point, the seed and the revision of the code ([`cell_key_text`]). A cell trains under
//! `DATA/experiments/<name>/cells/<key>/train` (resuming from its checkpoints there) and is done
//! when `cells/<key>/cell.json` exists, written atomically at its end; a done cell is never run
//! again, and a cell that failed leaves `failed.json` (its error) and runs again on the next
//! `run`. One process runs a cell at a time (a lock beside it).
//!
//! **Collect.** A group whose cells are all done selects its point on validation as `train --sweep`
//! does ([`crate::train::select_point`]), ranks the `[rank]` splits with the selected model under the
//! group's name, and submits each run to the leaderboard (once per selected cell:
//! `collected/<group>.json`); the board is rendered and `results.md` written beside the cells.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use lexbench_baselines::Device;
use lexbench_baselines::train::config::sweep::points;
use lexbench_baselines::train::config::{ArticleEncoder, Overrides, TrainConfig};
use lexbench_baselines::train::{Summary, TrainOptions};
use lexbench_core::datadir::DataDir;
use serde::{Deserialize, Serialize};

/// The record a finished cell leaves in its folder.
pub const CELL_RECORD: &str = "cell.json";
/// The record a failed cell leaves (removed when it runs again).
pub const CELL_FAILED: &str = "failed.json";
/// The most bytes an experiment file may have.
const MAX_FILE_BYTES: usize = 1 << 20;

/// An experiment file (module documentation).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// Its name (a folder name: `DATA/experiments/<name>`).
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: String,
    /// The dataset every training reads.
    pub dataset: DatasetSpec,
    /// What is ranked with each selected model.
    #[serde(default)]
    pub rank: RankSpec,
    /// Overrides for every training (`--set KEY=VALUE`).
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    /// The trainings.
    pub train: Vec<TrainSpec>,
    /// `--executor slurm`'s options.
    #[serde(default)]
    pub slurm: SlurmSpec,
}

/// `[dataset]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// `DATA/datasets/<name>`.
    pub name: String,
    /// Its version (manifest hash, or a prefix of 12 or more of its hex digits), checked when given.
    #[serde(default)]
    pub version: Option<String>,
    /// The command that builds it (shown by `plan`; not run).
    #[serde(default)]
    pub build: Option<String>,
}

/// `[rank]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RankSpec {
    /// The splits each selected model ranks (and submits).
    #[serde(default)]
    pub splits: Vec<String>,
}

/// One `[[train]]` entry.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrainSpec {
    /// The training configuration, relative to the experiment file.
    pub config: PathBuf,
    /// The system's name on the board (default: the configuration's `name`).
    #[serde(default)]
    pub name: Option<String>,
    /// More overrides (after the file's `[set]`).
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    /// Seeds (default: the configuration's).
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// Train the configuration's grid (default: when it has one).
    #[serde(default)]
    pub sweep: Option<bool>,
}

/// `[slurm]`: sbatch options for `--executor slurm` (flags of the same names override them).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurmSpec {
    /// `--partition`.
    #[serde(default)]
    pub partition: Option<String>,
    /// `--account`.
    #[serde(default)]
    pub account: Option<String>,
    /// `--time` (a cell's limit).
    #[serde(default)]
    pub time: Option<String>,
    /// `--mem`.
    #[serde(default)]
    pub mem: Option<String>,
    /// `--cpus-per-task`.
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
    /// `--gres` (`gpu:1`).
    #[serde(default)]
    pub gres: Option<String>,
    /// At most this many cells at once (`--array=…%M`).
    #[serde(default)]
    pub max_parallel: Option<usize>,
    /// More `#SBATCH` lines, each an sbatch option (`--qos=high`).
    #[serde(default)]
    pub extra: Vec<String>,
}

impl ExperimentFile {
    /// Reads and checks the experiment file `path`: a TOML error names the file and line; names are
    /// names; every training names a configuration that exists.
    pub fn read(path: &Path) -> Result<Self> {
        let text = lexbench_core::text::read_text_at_most(path, MAX_FILE_BYTES)?;
        let spec: Self = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            match line {
                Some(l) => anyhow::anyhow!("{}:{l}: {}", path.display(), e.message()),
                None => anyhow::anyhow!("{}: {}", path.display(), e.message()),
            }
        })?;
        let bad = |what: String| anyhow::anyhow!("{}: {what}", path.display());
        lexbench_core::check_name("experiment", &spec.name).map_err(|e| bad(e.to_string()))?;
        lexbench_core::check_name("dataset", &spec.dataset.name).map_err(|e| bad(e.to_string()))?;
        if let Some(v) = &spec.dataset.version
            && (v.len() < 12 || v.len() > 64 || !v.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(bad(format!(
                "[dataset] version {v:?}: give the dataset's version (its manifest hash, 12 to 64 hex digits)"
            )));
        }
        for s in &spec.rank.splits {
            lexbench_core::check_name("split", s).map_err(|e| bad(format!("[rank] {e}")))?;
        }
        if spec.train.is_empty() {
            return Err(bad("no [[train]] entry: an experiment trains something".into()));
        }
        for (i, t) in spec.train.iter().enumerate() {
            if let Some(n) = &t.name {
                lexbench_core::check_name("system", n)
                    .map_err(|e| bad(format!("[[train]] {}: {e}", i + 1)))?;
            }
        }
        Ok(spec)
    }
}

/// One group: a `[[train]]` entry with one seed, one row of the results.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// The system's name (the entry's, or its configuration's; `-seed-N` added when it has several
    /// seeds).
    pub name: String,
    /// The configuration file, as the experiment names it.
    pub config: PathBuf,
    /// The seed.
    pub seed: u64,
    /// Its cells (indices into [`Plan::cells`]), in the order of the grid.
    pub cells: Vec<usize>,
}

/// One cell: a configuration to train.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Its index in the plan (a SLURM array task's index).
    pub index: usize,
    /// Its group (index into [`Plan::groups`]).
    pub group: usize,
    /// The grid point's name (`lr-3e-5`), `None` for a configuration trained once.
    pub point: Option<String>,
    /// The seed.
    pub seed: u64,
    /// Its content key (module documentation); `None` until the dataset is built and the base
    /// models are there.
    pub key: Option<String>,
    /// What the key covers, one line per part.
    #[serde(skip)]
    pub key_text: Option<String>,
    /// The configuration it trains.
    #[serde(skip)]
    pub config: TrainConfig,
}

/// An experiment expanded into cells.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The experiment file.
    pub file: PathBuf,
    /// What it says.
    pub spec: ExperimentFile,
    /// The dataset's version built in the data directory (`None`: not built there).
    pub dataset_version: Option<String>,
    /// The code's revision (in every key).
    pub revision: String,
    /// Rows.
    pub groups: Vec<Group>,
    /// Cells.
    pub cells: Vec<Cell>,
    /// Why keys are missing, when they are.
    pub unkeyed: Option<String>,
}

/// A TOML value as `--set` takes it (its TOML text; a string as itself).
fn set_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What a cell's key covers (module documentation): the dataset, the configuration's sha256 (its
/// JSON with the base model's weights hash, `lexbench_baselines::checkpoints::model_hash`, for its folder), the point, the seed and the revision.
pub fn cell_key_text(
    dataset: &str,
    version: &str,
    config: &TrainConfig,
    base_sha256: &str,
    point: Option<&str>,
    seed: u64,
    revision: &str,
) -> Result<String> {
    let mut value = serde_json::to_value(config).context("the configuration as JSON")?;
    value["base"] = serde_json::Value::String(format!("sha256:{base_sha256}"));
    let json = serde_json::to_string(&value)?;
    Ok(format!(
        "lexbench-experiment-cell-1\ndataset {dataset} {version}\nconfig {}\npoint {}\nseed {seed}\nrevision {revision}\n",
        lexbench_core::hash::sha256_hex(json.as_bytes()),
        point.unwrap_or("-"),
    ))
}

/// Expands the experiment file `path` into cells for the data directory `data` (module
/// documentation). Keys are made when the dataset is built there (at the version the file pins, if
/// it pins one) and every base model folder is there; `plan` shows the cells without them
/// otherwise, and every command that runs cells refuses.
pub fn plan(data: &DataDir, path: &Path) -> Result<Plan> {
    let spec = ExperimentFile::read(path)?;
    let here = path.parent().unwrap_or(Path::new("."));
    let version = match lexbench_core::dataset::Dataset::open_in(data.root(), &spec.dataset.name) {
        Ok(ds) => Some(ds.hash()),
        Err(lexbench_core::Error::NotBuilt { .. }) => None,
        Err(e) => return Err(e).with_context(|| format!("the dataset of {}", path.display())),
    };
    if let (Some(built), Some(pinned)) = (&version, &spec.dataset.version)
        && !built.starts_with(pinned.to_ascii_lowercase().as_str())
    {
        bail!(
            "{}: [dataset] version {pinned}, but DATA/datasets/{} is version {built}: build the \
             dataset the experiment names{}",
            path.display(),
            spec.dataset.name,
            spec.dataset
                .build
                .as_deref()
                .map_or(String::new(), |b| format!(" (`{b}`)"))
        );
    }
    let revision = lexbench_baselines::rank::git_revision().unwrap_or_else(|| "unknown".to_owned());
    let mut groups = Vec::new();
    let mut cells: Vec<Cell> = Vec::new();
    let mut names = BTreeSet::new();
    let mut base_sha: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
    let mut unkeyed = version
        .is_none()
        .then(|| format!("DATA/datasets/{} is not built", spec.dataset.name));
    for (i, t) in spec.train.iter().enumerate() {
        let config_path = here.join(&t.config);
        let set: Vec<(String, String)> = spec
            .set
            .iter()
            .chain(&t.set)
            .map(|(k, v)| (k.clone(), set_text(v)))
            .collect();
        let o = Overrides {
            set,
            ..Overrides::default()
        };
        let cfg = TrainConfig::load(&config_path, &o)
            .with_context(|| format!("{}: [[train]] {}", path.display(), i + 1))?;
        if cfg.data.dataset != spec.dataset.name {
            bail!(
                "{}: [[train]] {} ({}) trains on dataset {:?}, not the experiment's {:?}: set \
                 \"data.dataset\" in [set]",
                path.display(),
                i + 1,
                t.config.display(),
                cfg.data.dataset,
                spec.dataset.name
            );
        }
        if cfg.gnn.is_some()
            || cfg.qabisar.is_some()
            || cfg.biencoder.article_encoder == ArticleEncoder::Hierarchical
        {
            bail!(
                "{}: [[train]] {} ({}): DR+GNN, QABISAR and the hierarchical article encoder train in \
                 stages `lexbench train` runs; an experiment's cells are encoders",
                path.display(),
                i + 1,
                t.config.display()
            );
        }
        let sweep = t
            .sweep
            .unwrap_or(!cfg.sweep.is_empty() || !cfg.lr_sweep.is_empty());
        let grid: Vec<(Option<String>, TrainConfig)> = if sweep {
            points(&cfg)
                .with_context(|| format!("{}: [[train]] {}", path.display(), i + 1))?
                .into_iter()
                .map(|p| (Some(p.name), p.config))
                .collect()
        } else {
            vec![(None, cfg.clone())]
        };
        let seeds = if t.seeds.is_empty() {
            vec![cfg.seed]
        } else {
            t.seeds.clone()
        };
        let base = t.name.clone().unwrap_or_else(|| cfg.name.clone());
        for &seed in &seeds {
            let name = if seeds.len() > 1 {
                format!("{base}-seed-{seed}")
            } else {
                base.clone()
            };
            lexbench_core::check_name("system", &name)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            if !names.insert(name.clone()) {
                bail!(
                    "{}: two trainings are both named {name:?}: give one a `name`",
                    path.display()
                );
            }
            let g = groups.len();
            let mut members = Vec::new();
            for (point, config) in &grid {
                let mut config = config.clone();
                config.seed = seed;
                let sha = base_sha
                    .entry(config.base.clone())
                    .or_insert_with(|| lexbench_baselines::checkpoints::model_hash(&config.base).ok())
                    .clone();
                if sha.is_none() && unkeyed.is_none() {
                    unkeyed = Some(format!(
                        "the base model {} is not there (scripts/fetch-models)",
                        config.base.display()
                    ));
                }
                let key_text = match (&version, &sha) {
                    (Some(v), Some(s)) => Some(cell_key_text(
                        &spec.dataset.name,
                        v,
                        &config,
                        s,
                        point.as_deref(),
                        seed,
                        &revision,
                    )?),
                    _ => None,
                };
                let key = key_text
                    .as_deref()
                    .map(|t| lexbench_core::hash::sha256_hex(t.as_bytes())[..32].to_owned());
                members.push(cells.len());
                cells.push(Cell {
                    index: cells.len(),
                    group: g,
                    point: point.clone(),
                    seed,
                    key,
                    key_text,
                    config,
                });
            }
            groups.push(Group {
                name,
                config: t.config.clone(),
                seed,
                cells: members,
            });
        }
    }
    if unkeyed.is_some() {
        for c in &mut cells {
            c.key = None;
            c.key_text = None;
        }
    }
    Ok(Plan {
        file: path.to_owned(),
        spec,
        dataset_version: version,
        revision,
        groups,
        cells,
        unkeyed,
    })
}

impl Plan {
    /// `DATA/experiments/<name>`.
    pub fn dir(&self, data: &DataDir) -> PathBuf {
        data.root().join("experiments").join(&self.spec.name)
    }

    /// A cell's folder.
    pub fn cell_dir(&self, data: &DataDir, cell: &Cell) -> Result<PathBuf> {
        Ok(self.dir(data).join("cells").join(self.key(cell)?))
    }

    /// A cell's key, or why it has none.
    pub fn key<'a>(&self, cell: &'a Cell) -> Result<&'a str> {
        cell.key.as_deref().ok_or_else(|| {
            anyhow::anyhow!(
                "{}: the cells have no keys yet: {}",
                self.file.display(),
                self.unkeyed.as_deref().unwrap_or("unknown")
            )
        })
    }

    /// The cell whose index or key (or a prefix of 8 or more of its hex digits) is `which`.
    pub fn find(&self, which: &str) -> Result<&Cell> {
        if let Ok(i) = which.parse::<usize>() {
            return self.cells.get(i).with_context(|| {
                format!(
                    "{}: no cell {i} (the plan has {})",
                    self.file.display(),
                    self.cells.len()
                )
            });
        }
        let hits: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| which.len() >= 8 && c.key.as_deref().is_some_and(|k| k.starts_with(which)))
            .collect();
        match hits.as_slice() {
            [c] => Ok(c),
            [] => bail!("{}: no cell has key {which:?}", self.file.display()),
            _ => bail!("{}: {which:?} is the start of several keys", self.file.display()),
        }
    }
}

/// What a finished cell records ([`CELL_RECORD`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CellRecord {
    /// Its key.
    pub key: String,
    /// The experiment.
    pub experiment: String,
    /// Its group's name.
    pub group: String,
    /// The grid point.
    pub point: Option<String>,
    /// The seed.
    pub seed: u64,
    /// What the key covers.
    pub key_text: String,
    /// The validation measure.
    pub measure: String,
    /// The selected epoch.
    pub best_epoch: usize,
    /// Its validation score.
    pub best_val: Option<f64>,
    /// Wall seconds of this cell's last run (a resumed cell: the part after the resume).
    pub wall_s: f64,
    /// Where it ran: the device and the CPU.
    pub device: String,
    /// The CPU (model name).
    pub cpu: String,
    /// The scheduler's job, when one ran it (`SLURM_JOB_ID`, `SLURM_ARRAY_JOB_ID_TASK`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// The state of a cell on disk.
#[derive(Debug, Clone, PartialEq)]
pub enum CellState {
    /// Finished: its record.
    Done(Box<CellRecord>),
    /// A process holds its lock.
    Running,
    /// Its last run failed: the error.
    Failed(String),
    /// Not run yet (or interrupted: it resumes from its checkpoints).
    Pending,
}

/// The state of `cell`.
pub fn cell_state(plan: &Plan, data: &DataDir, cell: &Cell) -> Result<CellState> {
    let dir = plan.cell_dir(data, cell)?;
    let record = dir.join(CELL_RECORD);
    if record.is_file() {
        let r: CellRecord = lexbench_core::io::read_json(&record)?;
        if Some(r.key.as_str()) != cell.key.as_deref() {
            bail!("{}: the record of another cell ({})", record.display(), r.key);
        }
        return Ok(CellState::Done(Box::new(r)));
    }
    let lock = lock_path(&dir);
    if lock.is_file() {
        match lexbench_core::io::FileLock::try_exclusive(&lock)? {
            None => return Ok(CellState::Running),
            Some(l) => drop(l),
        }
    }
    let failed = dir.join(CELL_FAILED);
    if failed.is_file() {
        let v: serde_json::Value = lexbench_core::io::read_json(&failed)?;
        return Ok(CellState::Failed(
            v["error"].as_str().unwrap_or("failed").to_owned(),
        ));
    }
    Ok(CellState::Pending)
}

fn lock_path(cell_dir: &Path) -> PathBuf {
    let name = cell_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    cell_dir.with_file_name(format!(".{name}.lock"))
}

/// How running a cell ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CellOutcome {
    /// Trained now.
    Trained(Box<CellRecord>),
    /// It was done already: nothing ran.
    AlreadyDone(Box<CellRecord>),
    /// Another process runs it now: nothing ran.
    Busy,
    /// Stopped by a signal (`TrainOptions::interrupt`), its checkpoints kept: the next run resumes
    /// from them.
    Interrupted {
        /// Epochs trained to their end before it stopped.
        epochs: usize,
    },
}

/// The CPU's model name (`/proc/cpuinfo`), or the architecture.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// The checkpoint the cell's next run resumes from (`checkpoints/step-S` within an epoch, else the
/// latest `checkpoints/epoch-N`: a step checkpoint is removed once an epoch's supersedes it), if any.
pub fn resume_point(data: &DataDir, plan: &Plan, cell: &Cell) -> Result<Option<String>> {
    let dir = plan.cell_dir(data, cell)?.join("train/checkpoints");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Ok(None);
    };
    let (mut step, mut epoch) = (None::<u64>, None::<u64>);
    for e in rd {
        let name = e
            .with_context(|| format!("reading {}", dir.display()))?
            .file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name.strip_prefix("step-").and_then(|n| n.parse().ok()) {
            step = step.max(Some(n));
        } else if let Some(n) = name.strip_prefix("epoch-").and_then(|n| n.parse().ok()) {
            epoch = epoch.max(Some(n));
        }
    }
    Ok(match (step, epoch) {
        (Some(s), _) => Some(format!("checkpoints/step-{s}")),
        (None, Some(e)) => Some(format!("checkpoints/epoch-{e}")),
        (None, None) => None,
    })
}

/// Runs one cell (module documentation): trains it under its folder, resuming from its checkpoints,
/// and records it; a done cell is not run again, and one another process holds is left to it. A
/// failure is recorded in [`CELL_FAILED`] and returned.
pub fn run_cell(
    data: &DataDir,
    plan: &Plan,
    cell: &Cell,
    device: &Device,
    checkpoint_every: Option<std::time::Duration>,
    interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
) -> Result<CellOutcome> {
    let dir = plan.cell_dir(data, cell)?;
    if let CellState::Done(r) = cell_state(plan, data, cell)? {
        return Ok(CellOutcome::AlreadyDone(r));
    }
    std::fs::create_dir_all(dir.parent().unwrap_or(&dir))
        .with_context(|| format!("creating {}", dir.display()))?;
    let Some(lock) = lexbench_core::io::FileLock::try_exclusive(&lock_path(&dir))? else {
        return Ok(CellOutcome::Busy);
    };
    // Decided again under the lock: another process may have finished it meanwhile.
    if let CellState::Done(r) = cell_state(plan, data, cell)? {
        return Ok(CellOutcome::AlreadyDone(r));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let _ = std::fs::remove_file(dir.join(CELL_FAILED));
    let group = &plan.groups[cell.group];
    let key_text = cell.key_text.clone().unwrap_or_default();
    lexbench_core::io::write_atomic(&dir.join("key.txt"), |w| {
        use std::io::Write;
        w.write_all(key_text.as_bytes())
    })?;
    let started = std::time::Instant::now();
    let opts = TrainOptions {
        progress: false,
        checkpoint_every,
        interrupt,
        ..TrainOptions::default()
    };
    let trained: Result<Summary> =
        lexbench_baselines::train::train(&cell.config, data.root(), &dir.join("train"), device, &opts)
            .with_context(|| {
                format!(
                    "cell {} ({} {})",
                    cell.index,
                    group.name,
                    cell.point.as_deref().unwrap_or("")
                )
            });
    let summary = match trained {
        Ok(s) => s,
        Err(e) => {
            let _ = lexbench_core::io::write_json_pretty(
                &dir.join(CELL_FAILED),
                &serde_json::json!({ "error": format!("{e:#}") }),
            );
            drop(lock);
            return Err(e);
        }
    };
    if !summary.finished {
        drop(lock);
        return Ok(CellOutcome::Interrupted {
            epochs: summary.epochs.len(),
        });
    }
    let job = match (
        std::env::var("SLURM_ARRAY_JOB_ID"),
        std::env::var("SLURM_ARRAY_TASK_ID"),
        std::env::var("SLURM_JOB_ID"),
    ) {
        (Ok(a), Ok(t), _) => Some(format!("{a}_{t}")),
        (_, _, Ok(j)) => Some(j),
        _ => None,
    };
    let record = CellRecord {
        key: plan.key(cell)?.to_owned(),
        experiment: plan.spec.name.clone(),
        group: group.name.clone(),
        point: cell.point.clone(),
        seed: cell.seed,
        key_text,
        measure: summary.measure.clone(),
        best_epoch: summary.best_epoch,
        best_val: summary.best_val,
        wall_s: started.elapsed().as_secs_f64(),
        device: crate::submit::device_label(device),
        cpu: cpu_name(),
        job,
    };
    lexbench_core::io::write_json_pretty(&dir.join(CELL_RECORD), &record)?;
    drop(lock);
    Ok(CellOutcome::Trained(Box::new(record)))
}

/// What [`collect`] did for one group.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Collected {
    /// The group.
    pub group: String,
    /// The selected cell's key.
    pub selected: String,
    /// Its grid point.
    pub point: Option<String>,
    /// Its validation score.
    pub val: Option<f64>,
    /// `split → (run file, entry file)`, relative to the data directory.
    pub runs: BTreeMap<String, (String, String)>,
    /// `split → measure → score`.
    pub scores: BTreeMap<String, BTreeMap<String, f64>>,
}

/// What [`collect`] found.
#[derive(Debug, Clone, Default)]
pub struct CollectReport {
    /// Groups collected (now or before).
    pub collected: Vec<Collected>,
    /// Groups with cells still to run: `(group, done, total)`.
    pub incomplete: Vec<(String, usize, usize)>,
    /// The table written (`results.md`).
    pub table: Option<PathBuf>,
}

/// Collects the experiment (module documentation): each group whose cells are all done is
/// selected on validation, ranked on the `[rank]` splits and submitted, once per selected cell; the
/// board is rendered and `results.md` written.
pub fn collect(data: &DataDir, plan: &Plan, device: &Device) -> Result<CollectReport> {
    let mut report = CollectReport::default();
    let dir = plan.dir(data);
    for group in &plan.groups {
        let mut records = Vec::new();
        for &c in &group.cells {
            if let CellState::Done(r) = cell_state(plan, data, &plan.cells[c])? {
                records.push((c, r));
            }
        }
        if records.len() < group.cells.len() {
            report
                .incomplete
                .push((group.name.clone(), records.len(), group.cells.len()));
            continue;
        }
        let scores: Vec<Option<f64>> = records.iter().map(|(_, r)| r.best_val).collect();
        let best = crate::train::select_point(&scores).context("a group without cells")?;
        let (c, record) = &records[best];
        let cell = &plan.cells[*c];
        let done_path = dir.join("collected").join(format!("{}.json", group.name));
        if done_path.is_file() {
            let before: Collected = lexbench_core::io::read_json(&done_path)?;
            if before.selected == record.key {
                report.collected.push(before);
                continue;
            }
        }
        let model = plan.cell_dir(data, cell)?.join("train").join("model");
        let mut cfg = cell.config.clone();
        cfg.name = group.name.clone();
        let mut runs = BTreeMap::new();
        let mut all_scores = BTreeMap::new();
        for split in &plan.spec.rank.splits {
            let out = crate::train::run_split(data, &cfg, &model, split, device)
                .with_context(|| format!("{} on {}/{split}", group.name, plan.spec.dataset.name))?;
            let req = lexbench_leaderboard::SubmitRequest {
                data: data.root(),
                run: &out.run_path,
                dataset: &plan.spec.dataset.name,
                split,
                name: &group.name,
                card: None,
            };
            let sub = lexbench_leaderboard::submit(&req)
                .with_context(|| format!("submitting {}", out.run_path.display()))?;
            let rel = |p: &Path| p.strip_prefix(data.root()).unwrap_or(p).display().to_string();
            runs.insert(split.clone(), (rel(&out.run_path), rel(&sub.path)));
            all_scores.insert(
                split.clone(),
                sub.entry.scores.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            );
        }
        let collected = Collected {
            group: group.name.clone(),
            selected: record.key.clone(),
            point: record.point.clone(),
            val: record.best_val,
            runs,
            scores: all_scores,
        };
        lexbench_core::io::write_json_pretty(&done_path, &collected)?;
        report.collected.push(collected);
    }
    if !report.collected.is_empty() {
        lexbench_leaderboard::render::render_site(data.root())?;
    }
    let table = dir.join("results.md");
    lexbench_core::io::write_atomic(&table, |w| {
        use std::io::Write;
        w.write_all(results_table(plan, &report).as_bytes())
    })?;
    report.table = Some(table);
    Ok(report)
}

/// `results.md`: one row per group, the selected point and its validation score, and each ranked
/// split's Recall@k% (or the dataset's measures).
pub fn results_table(plan: &Plan, report: &CollectReport) -> String {
    use std::fmt::Write as _;
    let mut t = format!(
        "# {}\n\n{}\n\nDataset `{}` version `{}`; code revision `{}`; `lexbench experiment collect {}`.\n\n",
        plan.spec.name,
        plan.spec.description,
        plan.spec.dataset.name,
        plan.dataset_version.as_deref().unwrap_or("-"),
        plan.revision,
        plan.file.display()
    );
    let measures: Vec<String> = report
        .collected
        .iter()
        .flat_map(|c| c.scores.values().flat_map(|m| m.keys().cloned()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let _ = write!(t, "| system | selected point | val |");
    for s in &plan.spec.rank.splits {
        for m in &measures {
            let _ = write!(t, " {s} {m} |");
        }
    }
    t.push_str("\n|---|---|---|");
    for _ in 0..plan.spec.rank.splits.len() * measures.len() {
        t.push_str("---|");
    }
    t.push('\n');
    for c in &report.collected {
        let _ = write!(
            t,
            "| {} | {} | {} |",
            c.group,
            c.point.as_deref().unwrap_or("-"),
            c.val.map_or("-".to_owned(), |v| format!("{v:.4}"))
        );
        for s in &plan.spec.rank.splits {
            for m in &measures {
                let v = c.scores.get(s).and_then(|x| x.get(m));
                let _ = write!(t, " {} |", v.map_or("-".to_owned(), |v| format!("{v:.4}")));
            }
        }
        t.push('\n');
    }
    for (g, done, total) in &report.incomplete {
        let _ = writeln!(t, "| {g} | {done} of {total} cells done | | |");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-experiment-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_bad_experiment_file_is_named_with_its_line() {
        let d = scratch("bad");
        let f = d.join("x.toml");
        std::fs::write(&f, "name = \"x\"\n[dataset]\nname = \"ecthr\"\nnope = 1\n").unwrap();
        let e = ExperimentFile::read(&f).unwrap_err().to_string();
        assert!(e.contains("x.toml:4") && e.contains("nope"), "{e}");
        std::fs::write(&f, "name = \"../x\"\ntrain = []\n[dataset]\nname = \"ecthr\"\n").unwrap();
        let e = ExperimentFile::read(&f).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("../x"), "{e}");
        std::fs::write(&f, "name = \"x\"\ntrain = []\n[dataset]\nname = \"ecthr\"\n").unwrap();
        let e = ExperimentFile::read(&f).unwrap_err().to_string();
        assert!(e.contains("no [[train]]"), "{e}");
    }

    #[test]
    fn a_cells_key_covers_what_its_result_depends_on() {
        let cfg = TrainConfig::from_file(Path::new("baselines/configs/ecthr/cpu/dpr-lora.toml")).unwrap();
        let key = |cfg: &TrainConfig, v: &str, point: Option<&str>, seed: u64, rev: &str| {
            cell_key_text("ecthr", v, cfg, "ab", point, seed, rev).unwrap()
        };
        let k = key(&cfg, "v1", Some("lr-1e-5"), 1, "r1");
        assert_eq!(k, key(&cfg, "v1", Some("lr-1e-5"), 1, "r1"));
        for other in [
            key(&cfg, "v2", Some("lr-1e-5"), 1, "r1"),
            key(&cfg, "v1", Some("lr-3e-5"), 1, "r1"),
            key(&cfg, "v1", Some("lr-1e-5"), 2, "r1"),
            key(&cfg, "v1", Some("lr-1e-5"), 1, "r2"),
        ] {
            assert_ne!(k, other);
        }
        let mut lr = cfg.clone();
        lr.optim.lr *= 2.0;
        assert_ne!(k, key(&lr, "v1", Some("lr-1e-5"), 1, "r1"));
        // The base model is its content, not where it lies.
        let mut moved = cfg.clone();
        moved.base = PathBuf::from("/somewhere/else/minilm");
        assert_eq!(k, key(&moved, "v1", Some("lr-1e-5"), 1, "r1"));
        assert!(!k.contains("minilm"), "{k}");
    }
}
