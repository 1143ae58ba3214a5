//! # lexbench-splits
//!
//! Assembling datasets from parsed records and certifying their splits.
//!
//! - [`assemble::assemble`]: parsed guides ([`lexbench_core::GuideFile`]) and judgments into
//!   query–judgment [`pairs::Pair`]s, each relevance label with its provenance
//!   ([`pairs::QrelSource`]), and a report of everything that did not become a label and why.
//! - [`settings::assign`]: the paper's settings with an explicit seed — *unseen guide*,
//!   *seen guide / unseen query*, and train / val / test split by judgment; [`settings::certify`]
//!   proves no query text or held-out guide leaks between them.
//! - [`release::read_release`]: the published release as pairs with its own splits.
//! - [`lexclipr`]: LexCLiPR's labels (guide headings in seven languages → English paragraphs), one
//!   language's rows as pairs, kept or left out by reason, with their links to the English headings.
//! - [`reload::load_pairs`]: a built dataset read back into pairs, to split it again.
//! - [`write::write_dataset`]: the dataset directory (layout in `lexbench_core::dataset`), written
//!   atomically and byte-for-byte reproducibly, with statistics, a card and a manifest.
//! - [`bsard`]: BSARD's CSV layouts, the legislative graph and sequential view, the BSARD dataset.
//! - [`tables`]: `corpus.parquet` and `pairs.parquet` (polars) and SVG histograms (plotters).
//! - [`diff::diff`]: queries and pairs added, removed or changed between two datasets, per split.
//!
//! ```
//! use lexbench_splits::settings::{SplitConfig, assign, certify};
//! use lexbench_splits::pairs::{Pair, query_id_for};
//! let pair = |q: &str, g: &str, item: &str| Pair {
//!     query: query_id_for(q), text: q.into(), guide: g.parse().unwrap(), item: item.parse().unwrap(),
//!     relevant: [1].into(), sources: vec![],
//! };
//! let pairs = vec![pair("A .  x", "guide_a_eng", "001-1"), pair("B .  y", "guide_art_3_eng", "001-2")];
//! let held_out = SplitConfig { unseen_guides: vec!["guide_art_3_eng".parse().unwrap()], ..SplitConfig::default() };
//! let a = assign(&pairs, &held_out)?;
//! assert_eq!(a["unseen_guide"], vec![1]);
//! // A held-out guide with no pair here is an error, not an empty setting.
//! assert!(assign(&pairs, &SplitConfig::default()).is_err());
//! assert!(certify(&pairs, &a).passed);
//! # Ok::<(), lexbench_splits::Error>(())
//! ```

pub mod assemble;
pub mod bsard;
pub mod diff;
pub mod error;
pub mod export;
pub mod lexclipr;
pub mod open;
pub mod pairs;
pub mod release;
pub mod reload;
pub mod rng;
pub mod settings;
pub mod tables;
pub mod write;

pub use error::{Error, Result};
