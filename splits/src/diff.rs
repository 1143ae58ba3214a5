//! `lexbench diff`: what changed between two datasets, per split.
//!
//! Datasets built by different means name their queries differently (a guide parser's ids, a hash of
//! the release's text), so pairs are matched by (folded query text, judgment itemid) and their qrels
//! compared as sets of paragraph numbers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lexbench_core::dataset::{Dataset, DatasetDir, DatasetTopic};
use lexbench_core::{ParagraphId, ReadOptions, TopicId};
use serde::Serialize;

use crate::error::Result;
use crate::pairs::fold;

/// Differences in one split.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SplitDiff {
    /// Distinct queries only in the new dataset.
    pub queries_added: usize,
    /// Distinct queries only in the old dataset.
    pub queries_removed: usize,
    /// Pairs only in the new dataset.
    pub pairs_added: usize,
    /// Pairs only in the old dataset.
    pub pairs_removed: usize,
    /// Pairs in both whose relevant paragraphs differ.
    pub pairs_changed: usize,
    /// Pairs in both with the same relevant paragraphs.
    pub pairs_same: usize,
    /// Up to 5 examples of each kind.
    pub samples: Vec<String>,
}

/// Differences per split (splits present in either dataset).
pub type DiffReport = BTreeMap<String, SplitDiff>;

type Key = (String, String);

fn load(ds: &Dataset, topics: &[DatasetTopic], split: &str) -> Result<BTreeMap<Key, BTreeSet<u32>>> {
    let by_topic: BTreeMap<&TopicId, &DatasetTopic> = topics.iter().map(|t| (&t.topic, t)).collect();
    let mut out: BTreeMap<Key, BTreeSet<u32>> = BTreeMap::new();
    if !ds.dir().qrels(split).exists() {
        return Ok(out);
    }
    let qrels = match ds.qrels(split, &ReadOptions::default()) {
        Ok(q) => q,
        Err(lexbench_core::Error::Empty { .. }) => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    for (topic, docs) in &qrels.topics {
        let Some(t) = by_topic.get(topic) else { continue };
        let item = t.item.as_ref().map(|i| i.to_string()).unwrap_or_default();
        let rel: BTreeSet<u32> = docs
            .iter()
            .filter(|(_, g)| **g >= 1)
            .filter_map(|(d, _)| ParagraphId::try_from(d).ok().map(|p| p.num))
            .collect();
        out.insert((fold(&t.text), item), rel);
    }
    Ok(out)
}

/// Compares `new` against `old`; both are opened with [`Dataset::open`] (verified against their
/// manifests).
pub fn diff(new: &Path, old: &Path) -> Result<DiffReport> {
    let a = Dataset::open(DatasetDir(new.to_owned()))?;
    let b = Dataset::open(DatasetDir(old.to_owned()))?;
    let (ta, tb) = (a.topics()?, b.topics()?);
    let mut names: BTreeSet<String> = a.split_names()?.into_iter().collect();
    names.extend(b.split_names()?);
    let mut report = DiffReport::new();
    for split in names {
        let (na, nb) = (load(&a, &ta, &split)?, load(&b, &tb, &split)?);
        let qa: BTreeSet<&String> = na.keys().map(|k| &k.0).collect();
        let qb: BTreeSet<&String> = nb.keys().map(|k| &k.0).collect();
        let mut d = SplitDiff {
            queries_added: qa.difference(&qb).count(),
            queries_removed: qb.difference(&qa).count(),
            ..SplitDiff::default()
        };
        let mut samples: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut sample = |kind: &'static str, text: String| {
            let v = samples.entry(kind).or_default();
            if v.len() < 5 {
                v.push(format!("{kind}: {text}"));
            }
        };
        for (k, rel) in &na {
            match nb.get(k) {
                None => {
                    d.pairs_added += 1;
                    sample("added", format!("{} | {}", k.1, k.0));
                }
                Some(old) if old != rel => {
                    d.pairs_changed += 1;
                    sample("changed", format!("{} | {} | {old:?} → {rel:?}", k.1, k.0));
                }
                Some(_) => d.pairs_same += 1,
            }
        }
        for k in nb.keys().filter(|k| !na.contains_key(*k)) {
            d.pairs_removed += 1;
            sample("removed", format!("{} | {}", k.1, k.0));
        }
        d.samples = samples.into_values().flatten().collect();
        report.insert(split, d);
    }
    Ok(report)
}
