//! The `lexbench` application library: the stage orchestration behind the command line, callable
//! without spawning the binary. Each function takes the data directory
//! ([`lexbench_core::datadir::DataDir`]) and typed options, and returns a typed report; the binary
//! (`src/main.rs`, `src/cmd/`) only parses arguments, calls these and prints.
//!
//! - [`crawl`]: the crawl driver of `lexbench crawl` and `lexbench pipeline` ([`crawl::crawl`],
//!   [`crawl::crawl_sample`]);
//! - [`parse_store`]: the raw store into `parsed/ecthr/*.jsonl`;
//! - [`build`]: the ECtHR and BSARD builds (BSARD's CSV files from a folder or the raw store), the
//!   release import, re-splits, statistics and diffs;
//! - [`lexclipr`]: LexCLiPR's cross-lingual labels as one dataset per query language;
//! - [`train`]: the trainer dispatch and the hyperparameter sweep ([`train::select_point`]);
//! - [`submit`]: the submission harness for models (`lexbench submit --model`: run the model over
//!   every evaluated split, record verified entries, resume after a kill) and the recheck of a
//!   verified entry (`lexbench leaderboard --recheck`);
//! - [`device`]: `--device cpu|cuda[:N]` and the default device;
//! - [`hub_fetch`]: `lexbench models fetch hf:ORG/NAME[@REVISION]`, a Hugging Face Hub checkpoint
//!   downloaded (crawlers' Hub client), verified and installed with its record (baselines');
//! - [`pipeline`]: every stage on the embedded sample ([`sample`]) or a crawl.
//!
//! Stage crates never depend on each other; what needs two of them (crawl, then parse; build, then
//! rank) meets here. This is the application layer: errors are [`anyhow`] chains naming what was
//! read.
//!
//! ```
//! // The sweep keeps the best validation score; ties go to the point listed first.
//! let pick = lexbench::train::select_point(&[Some(0.4), Some(0.5), Some(0.5)]);
//! assert_eq!(pick, Some(1));
//! ```

pub mod build;
pub mod crawl;
pub mod device;
pub mod experiment;
pub mod hub_fetch;
pub mod lexclipr;
pub mod open;
pub mod parse_store;
pub mod pipeline;
pub mod rank;
pub mod reproduce;
pub mod sample;
pub mod slurm;
pub mod submit;
pub mod train;
