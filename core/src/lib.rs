//! # lexbench-core
//!
//! The vocabulary every lexbench stage speaks, and the evaluator every number goes through.
//!
//! - [`ids`]: typed, validated identifiers — [`ItemId`] (HUDOC `001-NNNNNN`), [`GuideId`], [`QueryId`],
//!   [`TopicId`], [`DocId`], [`ParagraphId`], [`ArticleId`].
//! - [`records`]: what stages exchange — [`Judgment`], [`Guide`], [`GuideQuery`], [`Citation`],
//!   [`Article`], [`Pool`], [`Split`], [`Provenance`], the raw store's [`ManifestEntry`].
//! - [`trec`]: TREC [`Qrels`] and [`Run`] files, read with file-and-line errors, written atomically.
//! - [`dataset`]: the layout of a built dataset (`queries.jsonl`, `corpus.jsonl`, `pools.jsonl`,
//!   `qrels/`, `splits/`, `manifest.json`) and its identity hash.
//! - [`csv`]: the one RFC 4180 CSV reader (quotes, line breaks in fields, CRLF, byte-order mark),
//!   each record with the line it starts on.
//! - [`graph`]: BSARD's legislative graph, [`LegalGraph`] (`graph.json`), written by `splits` and
//!   read by `baselines`.
//! - [`io`]: [`write_atomic`](io::write_atomic), whole-folder swaps and their crash recovery, JSON
//!   Lines; [`datadir`]: the data directory's layout, where names never become paths; [`text`]: how
//!   user files become text (byte-order mark removed, UTF-8 checked by line, over-long lines refused);
//!   [`journal`]: the write journal that names every temporary a command creates in the data
//!   directory, so that recovery after a kill touches those and nothing else.
//! - [`hash`]: sha256 as lower-case hex, of bytes ([`sha256_hex`]) and of a file, streamed
//!   ([`sha256_file`]).
//! - [`run`]: the [`SidecarHeader`](run::SidecarHeader) every run sidecar starts with, and the
//!   claims the harness checks in a submitted one.
//! - [`rng`], [`time`]: a seeded SplitMix64 and calendar dates / RFC 3339 timestamps, shared so every
//!   stage draws and stamps the same way without a dependency.
//! - `testing` (feature `testing`; no command calls it): where the fixtures are, and `TinyDataset`, a
//!   small built dataset written in a few calls.
//! - [`eval`]: trec_eval-exact measures (`R@k`, `P@k`, `AP`, `RPrec`, `nDCG@k`, `RR@k`) and the
//!   pool-relative `R@k%` of the ECtHR task.
//!
//! ```
//! use lexbench_core::{DocId, Measure, Qrels, Run, TopicId, eval::evaluate, trec::Hit};
//!
//! let t = TopicId::new("q1")?;
//! let mut qrels = Qrels::default();
//! qrels.insert(t.clone(), DocId::new("d1")?, 1);
//! let mut run = Run::new("demo");
//! run.topics.insert(t, vec![
//!     Hit { doc: DocId::new("d2")?, score: 2.0 },
//!     Hit { doc: DocId::new("d1")?, score: 1.0 },
//! ]);
//! let ev = evaluate(&run, &qrels, &["RR".parse()?, "R@1".parse()?], None)?;
//! assert_eq!(ev.mean, vec![0.5, 0.0]);
//! # Ok::<(), lexbench_core::Error>(())
//! ```

pub mod csv;
pub mod datadir;
pub mod dataset;
pub mod error;
pub mod eval;
pub mod graph;
pub mod hash;
pub mod ids;
pub mod io;
pub mod journal;
pub mod records;
pub mod rng;
pub mod run;
/// Test support (fixtures, [`testing::TinyDataset`]): the `testing` feature, for other crates' tests.
/// The `lexbench` package enables it in every build (so that a plain build and the test build share
/// their artifacts: the dev wheel reuses the test build), but no command calls it.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod time;
pub mod trec;

pub use error::{Error, LineError, Result};
pub use eval::{EvalParams, Evaluation, Measure, PoolSizes, Task, evaluate, evaluate_with};
pub use graph::LegalGraph;
pub use hash::{sha256_file, sha256_hex};
pub use ids::{ArticleId, DocId, GuideId, ItemId, ParagraphId, QueryId, TopicId, check_name};
pub use records::{
    Article, Citation, CitationFlags, Guide, GuideFile, GuideQuery, GuideSection, HudocMeta, Judgment,
    ManifestEntry, Opinion, Paragraph, Pool, Provenance, Resolution, Section, Split, Warning,
};
pub use trec::{Hit, Qrels, ReadNotes, ReadOptions, Run};
