//! The data directory (`./data`, `--data DIR` or `LEXBENCH_DATA`) and where each stage's files live
//! in it:
//!
//! ```text
//! raw/        the crawl: content-addressed objects, manifest, indexes
//! parsed/     parsed records (parsed/ecthr/judgments.jsonl, guides.jsonl)
//! datasets/   built datasets, one folder per name
//! runs/       runs/<dataset>/<split>/<system>.trec (+ .json sidecar)
//! models/     fine-tuned models, one folder per name
//! leaderboard/ entries, index.md, site/
//! ```
//!
//! Every name that becomes a folder or file here (dataset, split, system) goes through
//! [`check_name`]: it is a name, never a path. [`DataDir::open`] settles what interrupted writes left
//! behind ([`recover_leftovers`]) before a command reads anything.

use std::path::{Path, PathBuf};

use crate::dataset::DatasetDir;
use crate::error::Result;
use crate::ids::check_name;
use crate::io::{Recovered, recover_leftovers};

/// The folders of a data directory that lexbench writes (and the journal's): no export, of a
/// dataset or of the leaderboard, goes into one of them (`exports/`, the default home of dataset
/// exports, is not one).
pub const WRITTEN_FOLDERS: [&str; 8] = [
    "raw",
    "parsed",
    "datasets",
    "runs",
    "models",
    "leaderboard",
    "cache",
    ".lexbench",
];

/// A data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// The data directory at `root`, as it is (no recovery).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Opens the data directory at `root` for a command: from now on this process journals every
    /// temporary it writes there ([`crate::journal`]), and what the journal says processes that are
    /// gone left is settled first (a dataset whose replacement was cut short is put back; their
    /// temporary files and folders are deleted; nothing the journal does not name is touched).
    /// Returns what was done, for the command to report. A `root` that does not exist yet is fine.
    pub fn open(root: impl Into<PathBuf>) -> Result<(Self, Vec<Recovered>)> {
        let dir = Self::new(root);
        crate::journal::register(&dir.root);
        let recovered = recover_leftovers(&dir.root)?;
        Ok((dir, recovered))
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `raw/`: the crawl store.
    pub fn raw(&self) -> PathBuf {
        self.root.join("raw")
    }

    /// `parsed/`.
    pub fn parsed(&self) -> PathBuf {
        self.root.join("parsed")
    }

    /// `datasets/<name>`, for a valid dataset name.
    pub fn dataset(&self, name: &str) -> Result<DatasetDir> {
        DatasetDir::in_data(&self.root, name)
    }

    /// `runs/<dataset>/<split>/<system>.trec`, for valid names.
    pub fn run_file(&self, dataset: &str, split: &str, system: &str) -> Result<PathBuf> {
        check_name("dataset name", dataset)?;
        check_name("split name", split)?;
        check_name("system name", system)?;
        Ok(self
            .root
            .join("runs")
            .join(dataset)
            .join(split)
            .join(format!("{system}.trec")))
    }

    /// `models/`.
    pub fn models(&self) -> PathBuf {
        self.root.join("models")
    }

    /// `leaderboard/`.
    pub fn leaderboard(&self) -> PathBuf {
        self.root.join("leaderboard")
    }
}

#[cfg(test)]
mod tests {
    //! Properties: names never become paths outside their folder.
    use super::*;

    #[test]
    fn names_stay_inside_the_data_directory() {
        let d = DataDir::new("/data");
        assert_eq!(
            d.run_file("ecthr", "test", "bm25").unwrap(),
            PathBuf::from("/data/runs/ecthr/test/bm25.trec")
        );
        assert_eq!(
            d.dataset("ecthr").unwrap().0,
            PathBuf::from("/data/datasets/ecthr")
        );
        for (ds, split, sys) in [
            ("../../other/datasets/ecthr", "test", "bm25"),
            ("/abs/path/datasets/ecthr", "test", "bm25"),
            ("ecthr", "../../x", "bm25"),
            ("ecthr", "test", "../../x"),
            ("", "test", "bm25"),
        ] {
            assert!(d.run_file(ds, split, sys).is_err(), "{ds} {split} {sys}");
        }
        for bad in ["", ".", "..", "../raw", "/tmp/x"] {
            assert!(d.dataset(bad).is_err(), "{bad:?}");
        }
    }
}
