//! Regression expectations: TOML files that state the scores a baseline must reach on a dataset, checked
//! against the leaderboard's entries and reported Anserini-style as OK / OKish / FAIL.
//!
//! ```toml
//! description = "BM25 on BSARD test, as published"
//! source = "Louis & Spanakis (ACL 2022), Table 3"
//! dataset = "bsard"
//! split = "test"
//! system = "BM25"   # the baseline (any spelling checks the baseline's entry)
//! ok = 0.01       # |got − expected| ≤ ok → OK (default tolerances for every measure)
//! okish = 0.05    # ≤ okish → OKish; beyond → FAIL
//!
//! [corpus]        # optional: the dataset's shape (exact, else FAIL)
//! documents = 22633
//! topics = 222
//!
//! [measures]
//! "R@100" = { expected = 0.493 }
//! "AP" = { expected = 0.168, okish = 0.08 }
//! ```
//! Scores are fractions (0.493, not 49.3). The entry checked is the latest one of that system on that
//! dataset and split, preferring the dataset version built now.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::board::{is_baseline, is_baseline_name};
use crate::card::line_of;
use crate::entry::Entry;
use crate::error::{Error, Result};

/// A regression file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    /// What this checks.
    #[serde(default)]
    pub description: Option<String>,
    /// Where the expected values come from.
    #[serde(default)]
    pub source: Option<String>,
    /// The dataset.
    pub dataset: String,
    /// The split.
    pub split: String,
    /// The system's name on the leaderboard.
    pub system: String,
    /// Default OK tolerance (absolute). Default 0.005.
    #[serde(default = "default_ok")]
    pub ok: f64,
    /// Default OKish tolerance (absolute). Default 0.02.
    #[serde(default = "default_okish")]
    pub okish: f64,
    /// The dataset's expected shape.
    #[serde(default)]
    pub corpus: Option<CorpusShape>,
    /// Expected means by measure name.
    pub measures: BTreeMap<String, Expected>,
}

fn default_ok() -> f64 {
    0.005
}
fn default_okish() -> f64 {
    0.02
}

/// The dataset's expected shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusShape {
    /// Documents in the corpus.
    #[serde(default)]
    pub documents: Option<usize>,
    /// Topics in the split.
    #[serde(default)]
    pub topics: Option<usize>,
}

/// One expected value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The expected mean.
    pub expected: f64,
    /// This measure's OK tolerance.
    #[serde(default)]
    pub ok: Option<f64>,
    /// This measure's OKish tolerance.
    #[serde(default)]
    pub okish: Option<f64>,
}

impl Expectations {
    /// Reads and validates a regression file; errors name the file and line.
    pub fn read(path: &Path) -> Result<Self> {
        let text = lexbench_core::text::read_text(path)?;
        let e: Self = toml::from_str(&text).map_err(|e| Error::Format {
            path: path.to_owned(),
            message: match e.span() {
                Some(s) => format!("line {}: {}", line_of(&text, s.start), e.message()),
                None => e.message().to_owned(),
            },
        })?;
        e.validate().map_err(|message| Error::Format {
            path: path.to_owned(),
            message,
        })?;
        Ok(e)
    }

    /// Tolerances are finite, 0 ≤ ok ≤ okish; measures parse.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let check = |name: &str, ok: f64, okish: f64| {
            if !(ok.is_finite() && okish.is_finite() && 0.0 <= ok && ok <= okish) {
                return Err(format!("{name}: tolerances must satisfy 0 ≤ ok ≤ okish"));
            }
            Ok(())
        };
        check("defaults", self.ok, self.okish)?;
        if self.measures.is_empty() {
            return Err("no [measures]".into());
        }
        for (name, e) in &self.measures {
            name.parse::<lexbench_core::Measure>()
                .map_err(|e| e.to_string())?;
            check(name, e.ok.unwrap_or(self.ok), e.okish.unwrap_or(self.okish))?;
        }
        Ok(())
    }
}

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Status {
    /// Within the OK tolerance.
    #[serde(rename = "OK")]
    Ok,
    /// Within the OKish tolerance.
    #[serde(rename = "OKish")]
    OkIsh,
    /// Beyond it, or nothing to check.
    #[serde(rename = "FAIL")]
    Fail,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "OK",
            Status::OkIsh => "OKish",
            Status::Fail => "FAIL",
        })
    }
}

/// The outcome of one line of a regression file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The regression file.
    pub file: PathBuf,
    /// `dataset/split/system`.
    pub target: String,
    /// The measure, or `documents` / `topics`.
    pub check: String,
    /// The expected value.
    pub expected: f64,
    /// The entry's value (`None`: no entry).
    pub got: Option<f64>,
    /// The verdict.
    pub status: Status,
}

/// The entry a regression file checks: the latest of its system (name compared ignoring ASCII case) on
/// its dataset and split, preferring `current_hash`. A file about the baseline (`system = "bm25"`, any
/// case) checks only the baseline's entries ([`is_baseline`]), never another run under a similar name.
pub fn pick<'a>(exp: &Expectations, entries: &'a [Entry], current_hash: Option<&str>) -> Option<&'a Entry> {
    let baseline = is_baseline_name(&exp.system);
    let matching = entries.iter().filter(|e| {
        e.dataset.name == exp.dataset
            && e.dataset.split == exp.split
            && if baseline {
                is_baseline(e)
            } else {
                e.system.trim().eq_ignore_ascii_case(exp.system.trim())
            }
    });
    matching.max_by(|a, b| {
        let cur = |e: &Entry| Some(e.dataset.hash.as_str()) == current_hash;
        cur(a)
            .cmp(&cur(b))
            .then_with(|| a.submitted_at.cmp(&b.submitted_at))
    })
}

/// Checks `exp` (read from `file`) against `entries`.
pub fn check(file: &Path, exp: &Expectations, entries: &[Entry], current_hash: Option<&str>) -> Vec<Outcome> {
    let entry = pick(exp, entries, current_hash);
    let target = format!("{}/{}/{}", exp.dataset, exp.split, exp.system);
    let mut out = Vec::new();
    let verdict = |got: Option<f64>, expected: f64, ok: f64, okish: f64| match got {
        Some(g) if (g - expected).abs() <= ok + 1e-12 => Status::Ok,
        Some(g) if (g - expected).abs() <= okish + 1e-12 => Status::OkIsh,
        _ => Status::Fail,
    };
    if let Some(shape) = &exp.corpus {
        let facts = [
            ("documents", shape.documents, entry.map(|e| e.dataset.documents)),
            ("topics", shape.topics, entry.map(|e| e.dataset.topics)),
        ];
        for (name, want, got) in facts {
            if let Some(want) = want {
                let got = got.map(|g| g as f64);
                out.push(Outcome {
                    file: file.to_owned(),
                    target: target.clone(),
                    check: name.into(),
                    expected: want as f64,
                    got,
                    status: verdict(got, want as f64, 0.0, 0.0),
                });
            }
        }
    }
    for (name, e) in &exp.measures {
        let got = entry.and_then(|en| en.score(name));
        out.push(Outcome {
            file: file.to_owned(),
            target: target.clone(),
            check: name.clone(),
            expected: e.expected,
            got,
            status: verdict(
                got,
                e.expected,
                e.ok.unwrap_or(exp.ok),
                e.okish.unwrap_or(exp.okish),
            ),
        });
    }
    out
}

/// Renders outcomes as an aligned table, one line per check, then a summary line.
pub fn render(outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        // Counts (documents, topics) print as integers, scores with 4 decimals.
        let count = o.check == "documents" || o.check == "topics";
        let num = |v: f64| {
            if count {
                format!("{v:.0}")
            } else {
                format!("{v:.4}")
            }
        };
        let got = o.got.map_or("—".to_owned(), num);
        s.push_str(&format!(
            "{:<6} {:<28} {:<10} expected {:>9}  got {:>9}\n",
            o.status.to_string(),
            o.target,
            o.check,
            num(o.expected),
            got
        ));
    }
    let count = |st: Status| outcomes.iter().filter(|o| o.status == st).count();
    s.push_str(&format!(
        "{} OK, {} OKish, {} FAIL\n",
        count(Status::Ok),
        count(Status::OkIsh),
        count(Status::Fail)
    ));
    s
}
