//! The header every run sidecar (`RUN.json` beside `RUN.trec`) starts with: which system made the
//! run, on which dataset version and split, with which seed, from which checkout.
//!
//! The BM25 runner and the dense / ColBERT / cross-encoder runners (`baselines`) embed
//! [`SidecarHeader`] with `#[serde(flatten)]` and add their own fields (configuration, index facts,
//! model, timings); the harness (`leaderboard`) reads a submitted sidecar's claims through
//! [`SidecarClaims`], which takes any JSON object: a sidecar not written by lexbench may lack fields.
//!
//! ```
//! use lexbench_core::run::{SidecarClaims, SidecarHeader};
//!
//! let h = SidecarHeader {
//!     schema_version: 1,
//!     system: "bm25".into(),
//!     dataset: "bsard".into(),
//!     split: "test".into(),
//!     dataset_hash: "ab12".into(),
//!     seed: 0,
//!     git_revision: None,
//!     program: None,
//!     invocation: None,
//! };
//! let text = serde_json::to_string(&h)?;
//! assert!(text.starts_with(r#"{"schema_version":1,"system":"bm25","dataset":"bsard""#));
//! let claims: SidecarClaims = serde_json::from_str(&text)?;
//! assert_eq!(claims.system.as_deref(), Some("bm25"));
//! let foreign: SidecarClaims = serde_json::from_str(r#"{"system": "mine", "split": 3}"#)?;
//! assert_eq!((foreign.system.as_deref(), foreign.split), (Some("mine"), None));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Deserializer, Serialize};

/// The schema version of the sidecars lexbench writes.
pub const SIDECAR_SCHEMA: u32 = 1;

/// The fields every sidecar lexbench writes starts with, in this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SidecarHeader {
    /// [`SIDECAR_SCHEMA`] when written (0 in sidecars written before it was recorded).
    #[serde(default)]
    pub schema_version: u32,
    /// The system (`bm25`, or the name given to a dense run).
    pub system: String,
    /// The dataset's name.
    pub dataset: String,
    /// The split ranked.
    pub split: String,
    /// The dataset's identity ([`crate::dataset::DatasetManifest::dataset_hash`]).
    pub dataset_hash: String,
    /// The seed (0 for a deterministic system; recorded so every sidecar has one).
    pub seed: u64,
    /// `git rev-parse HEAD` of the checkout that produced the run, or `LEXBENCH_GIT_REV`, if known.
    pub git_revision: Option<String>,
    /// The program that wrote it (`lexbench-baselines 0.1.0`), if recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The command line that made the run, when a `lexbench` command did ([`invocation`]): what
    /// `lexbench reproduce` runs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<Invocation>,
}

/// The `lexbench` command that made a run, and where: recorded in its sidecar, so that the run (and
/// the leaderboard entry made from it) says how to make it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invocation {
    /// The arguments after the program's name, without the options that say where and how to
    /// print (`--data`, `--format`, `-v`): `["run", "dense", "--model", "models/minilm", …]`. Paths
    /// are as given, relative to the directory it ran in (the repository's root, for the commands
    /// the README, `docs/` and the scripts give).
    pub command: Vec<String>,
    /// The sha256 of the executable that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
    /// The CPU it ran on (`/proc/cpuinfo`'s model name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The threads its thread pools were given (`RAYON_NUM_THREADS`, else the CPUs available).
    pub threads: usize,
    /// The sha256 of each configuration file the command names (an argument ending in `.toml` that
    /// is a file: `train CONFIG`, `run bm25 --config F`), by the argument as given.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub configs: std::collections::BTreeMap<String, String>,
    /// [`CPU_BITS`] of the binary that ran it: what its CPU engine promises of the bits. Absent in
    /// sidecars written before it was recorded (whose trainings made no such promise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_bits: Option<String>,
}

/// What this build's CPU engine promises of the bits, recorded in every [`Invocation`]:
/// `same-on-any-cpu-1` — on the CPU, encoding and training give the same bits on every vector path
/// (AVX-512, AVX2, portable) and on any thread count (`lexbench-engine` sums over rows in fixed
/// pieces, its products by construction), so a CPU training made by such a binary is made again bit
/// for bit on any x86-64 machine (`lexbench reproduce` holds it to that). A later engine that keeps
/// the promise with other bits changes the number.
pub const CPU_BITS: &str = "same-on-any-cpu-1";

/// The options of the `lexbench` command line that take a value and say only where or how to print
/// (global options): left out of an [`Invocation`]'s command.
const GLOBAL_WITH_VALUE: [&str; 2] = ["--data", "--format"];

static INVOCATION: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Records the command line this process was started with (`std::env::args`, the program's name
/// first): the `lexbench` binary calls it once at start, and every sidecar written after names it.
/// Library users who never call it write sidecars without an invocation.
pub fn record_invocation(args: impl IntoIterator<Item = String>) {
    let _ = INVOCATION.set(command_of(args));
}

/// The command of `args` (program name first): the arguments without the global options
/// `GLOBAL_WITH_VALUE` (with their values, as `--data D` or `--data=D`) and `-v`/`--verbose`.
pub fn command_of(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.into_iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a);
            out.extend(it);
            break;
        }
        if GLOBAL_WITH_VALUE.contains(&a.as_str()) {
            it.next();
            continue;
        }
        if GLOBAL_WITH_VALUE
            .iter()
            .any(|g| a.strip_prefix(g).is_some_and(|r| r.starts_with('=')))
        {
            continue;
        }
        if a == "--verbose" || (a.starts_with("-v") && a[1..].chars().all(|c| c == 'v')) {
            continue;
        }
        out.push(a);
    }
    out
}

/// The invocation recorded by [`record_invocation`], with the executable's sha256, the CPU and the
/// threads; `None` when none was recorded (a library caller).
pub fn invocation() -> Option<Invocation> {
    let command = INVOCATION.get()?.clone();
    static BINARY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let binary_sha256 = BINARY
        .get_or_init(|| {
            std::env::current_exe()
                .ok()
                .and_then(|p| crate::hash::sha256_file(&p).ok())
        })
        .clone();
    let configs = config_hashes(&command);
    Some(Invocation {
        command,
        binary_sha256,
        cpu: cpu_model(),
        threads: threads(),
        configs,
        cpu_bits: Some(CPU_BITS.to_owned()),
    })
}

/// The sha256 of each argument of `command` that ends in `.toml` and is a readable file.
pub fn config_hashes(command: &[String]) -> std::collections::BTreeMap<String, String> {
    command
        .iter()
        .filter(|a| a.ends_with(".toml"))
        .filter_map(|a| {
            let p = std::path::Path::new(a);
            let sha = p.is_file().then(|| crate::hash::sha256_file(p).ok()).flatten()?;
            Some((a.clone(), sha))
        })
        .collect()
}

/// The CPU's model name (`/proc/cpuinfo`), when it can be read.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The threads a thread pool gets: `RAYON_NUM_THREADS` when it is a positive number (at most the
/// CPUs, as the vendored candle caps its pools), else the CPUs
/// available to this process.
pub fn threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .map_or(cpus(), |n| n.min(cpus()))
}

/// The logical CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A warning when `RAYON_NUM_THREADS` (or `CANDLE_NUM_THREADS`) asks for more threads than there
/// are CPUs: the pools are capped at the CPUs ([`threads`]), and the user should know.
pub fn threads_warning() -> Option<String> {
    ["RAYON_NUM_THREADS", "CANDLE_NUM_THREADS"].iter().find_map(|var| {
        let asked = std::env::var(var).ok()?.trim().parse::<usize>().ok()?;
        (asked > cpus()).then(|| {
            format!(
                "{var}={asked} is more than the {} CPU(s) this process may run on: {} thread(s) used (more only \
                 take turns, and slow every product down)",
                cpus(),
                cpus()
            )
        })
    })
}

/// What the harness checks in a submitted sidecar: the header's claims, each where the sidecar
/// holds it as a string (a missing field, or one of another type, is `None` and not checked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SidecarClaims {
    /// The system that made the run.
    #[serde(default, deserialize_with = "string_or_none")]
    pub system: Option<String>,
    /// The dataset it was made for.
    #[serde(default, deserialize_with = "string_or_none")]
    pub dataset: Option<String>,
    /// The split.
    #[serde(default, deserialize_with = "string_or_none")]
    pub split: Option<String>,
    /// The dataset version.
    #[serde(default, deserialize_with = "string_or_none")]
    pub dataset_hash: Option<String>,
}

impl SidecarClaims {
    /// The claims of a sidecar already read as JSON (nothing, when it is not an object).
    pub fn of(value: &serde_json::Value) -> Self {
        Self::deserialize(value).unwrap_or_default()
    }
}

fn string_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    //! Properties: a header embedded with `flatten` keeps its field names, first and in order; claims
    //! take what is a string and ignore the rest, and a sidecar that is not an object claims nothing.
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Embedding {
        #[serde(flatten)]
        header: SidecarHeader,
        config: u32,
    }

    #[test]
    fn flattened_header_and_lenient_claims() {
        let e = Embedding {
            header: SidecarHeader {
                schema_version: SIDECAR_SCHEMA,
                system: "s".into(),
                dataset: "d".into(),
                split: "t".into(),
                dataset_hash: "h".into(),
                seed: 7,
                git_revision: None,
                program: Some("p".into()),
                invocation: None,
            },
            config: 3,
        };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(
            text,
            r#"{"schema_version":1,"system":"s","dataset":"d","split":"t","dataset_hash":"h","seed":7,"git_revision":null,"program":"p","config":3}"#
        );
        let back: Embedding = serde_json::from_str(&text).unwrap();
        assert_eq!(back.header, e.header);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(SidecarClaims::of(&v).dataset_hash.as_deref(), Some("h"));
        assert_eq!(
            SidecarClaims::of(&serde_json::json!([1, 2])),
            SidecarClaims::default()
        );
        let odd = SidecarClaims::of(&serde_json::json!({"dataset": 3, "split": null}));
        assert_eq!((odd.dataset, odd.split), (None, None));
    }

    #[test]
    fn a_command_leaves_out_where_and_how_to_print() {
        let args = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            command_of(args(
                "lexbench --data /home/me/d -vv run bm25 --format=json --dataset x --split test"
            )),
            args("run bm25 --dataset x --split test")
        );
        assert_eq!(
            command_of(args(
                "lb run dense --query-prefix -v --data=d --verbose --model m"
            )),
            args("run dense --query-prefix --model m"),
            "`-v` alone is the global flag wherever it stands"
        );
        // After `--` nothing is an option.
        assert_eq!(command_of(args("lb eval -- --data x")), args("eval -- --data x"));
    }
}
