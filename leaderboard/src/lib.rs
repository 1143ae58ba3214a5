//! # lexbench-leaderboard
//!
//! The submission harness. A submission is a TREC run claimed to rank a split of a built dataset
//! (`DATA/datasets/<name>`, see `lexbench_core::dataset`):
//!
//! - [`validate`]: every line is checked against the dataset (six columns, numbers, topics of the
//!   split, documents in the topic's pool or the corpus, no duplicates), every problem named with its
//!   line; missing topics are reported, ties warned.
//! - [`submit()`]: validation, plus the dataset-version claims of the run's sidecar and the model card
//!   ([`card`]), evaluation with `lexbench_core::eval` (ECtHR: R@2%, R@5%, R@10%; BSARD: R@100,
//!   R@200, R@500, AP, RPrec), and a schema-versioned [`Entry`] written atomically under a new name
//!   in `DATA/leaderboard/entries/` (never over another; concurrent submissions all land).
//! - [`crosslingual`]: the cross-lingual section (LexCLiPR's languages × systems, English first).
//! - [`board`]: the tables (a row per system, a column group per split), with paired randomization
//!   tests against BM25 and Holm's correction ([`stats`]) and marks for stale dataset versions;
//!   [`render_site`] writes `index.md`, `site/index.html` (sortable) and SVG plots ([`plot`]).
//! - [`regression`]: expected scores in TOML, checked OK / OKish / FAIL.
//! - **Provenance** ([`entry`]): an entry is self-reported (a run file, [`submit()`]) or verified
//!   (the harness ran the model itself and calls [`submit_verified`] with the model's sha256, the
//!   lexbench version, device and time); entries carry a seal that readers check, so an entry edited
//!   by hand (to say verified, or to change a score) is left out. The board shows verified rows with
//!   ✓ and can show them alone ([`RenderOptions::verified_only`]); [`recheck`] compares a re-run of
//!   a verified entry's model with the entry, bit for bit.
//! - [`portable`]: entries exported as schema-versioned result files and imported elsewhere, each
//!   checked against the dataset version built there.
//!
//! ```
//! use lexbench_leaderboard::stats::{holm, paired_randomization};
//!
//! let bm25 = [0.2, 0.4, 0.1, 0.5, 0.3, 0.2, 0.6, 0.1];
//! let better = [0.5, 0.7, 0.4, 0.8, 0.6, 0.5, 0.9, 0.4];
//! let p = paired_randomization(&better, &bm25);
//! assert!(p < 0.01);
//! assert_eq!(holm(&[p, 0.5])[1], 0.5);
//! ```

pub mod board;
pub mod card;
pub mod crosslingual;
pub mod dataset;
pub mod entry;
pub mod error;
pub mod plot;
pub mod portable;
pub mod recheck;
pub mod reference;
pub mod regression;
pub mod render;
pub mod reproduction;
pub mod stats;
pub mod submit;
pub mod validate;

pub use card::ModelCard;
pub use dataset::DatasetView;
pub use entry::{Entry, ModelKind, Provenance, SCHEMA_VERSION};
pub use error::{Error, Problem, Result};
pub use render::{RenderOptions, Rendered, render_site, render_site_with};
pub use submit::{SubmitRequest, Submitted, submit, submit_baseline, submit_verified};
