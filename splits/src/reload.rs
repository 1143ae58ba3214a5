//! Reading a built dataset back into pairs, so it can be split again (`lexbench split`).

use std::collections::{BTreeMap, BTreeSet};

use lexbench_core::dataset::{Dataset, DatasetDir, DatasetTopic};
use lexbench_core::{ParagraphId, Qrels, ReadOptions, TopicId};

use crate::error::{Error, Result};
use crate::pairs::{Pair, QrelSource};
use crate::settings::Assignment;

/// The pairs of a dataset (ECtHR layout: every topic has an item and a guide) with their current
/// assignment to splits, and the provenance from `audit.jsonl`. The dataset is opened with
/// [`Dataset::open`] (verified against its manifest).
pub fn load_pairs(dir: &DatasetDir) -> Result<(Vec<Pair>, Assignment)> {
    let ds = Dataset::open(dir.clone())?;
    let topics: Vec<DatasetTopic> = ds.topics()?;
    let audit_path = dir.0.join("audit.jsonl");
    // Read as verified against the manifest, as every other file of the dataset.
    let audit: Vec<QrelSource> = if ds.manifest().sha256_of("audit.jsonl").is_some() {
        let bytes = ds.verified_bytes("audit.jsonl")?;
        match lexbench_core::io::read_jsonl_bytes(&bytes, &audit_path) {
            Ok(a) => a,
            Err(lexbench_core::Error::Empty { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        }
    } else {
        Vec::new()
    };
    let mut sources: BTreeMap<TopicId, Vec<QrelSource>> = BTreeMap::new();
    for s in audit {
        sources.entry(s.topic.clone()).or_default().push(s);
    }
    let mut index: BTreeMap<TopicId, usize> = BTreeMap::new();
    let mut pairs = Vec::new();
    for t in topics {
        let (Some(item), Some(guide)) = (t.item.clone(), t.guide.clone()) else {
            return Err(Error::Input {
                path: dir.queries(),
                line: 0,
                message: format!("topic {} has no judgment or guide: not an ECtHR dataset", t.topic),
            });
        };
        index.insert(t.topic.clone(), pairs.len());
        pairs.push(Pair {
            query: t.query,
            text: t.text,
            guide,
            item,
            relevant: BTreeSet::new(),
            sources: sources.remove(&t.topic).unwrap_or_default(),
        });
    }
    let mut assignment = Assignment::new();
    for split in ds.split_names()? {
        let path = dir.qrels(&split);
        let qrels = match ds.qrels(&split, &ReadOptions::default()) {
            Ok(q) => q,
            Err(lexbench_core::Error::Empty { .. }) => Qrels::default(),
            Err(e) => return Err(e.into()),
        };
        let mut members = Vec::new();
        for (topic, docs) in &qrels.topics {
            let &i = index.get(topic).ok_or_else(|| Error::Input {
                path: path.clone(),
                line: 0,
                message: format!("topic {topic} is not in queries.jsonl"),
            })?;
            for (doc, rel) in docs {
                if *rel >= 1 {
                    let p = ParagraphId::try_from(doc).map_err(|e| Error::Input {
                        path: path.clone(),
                        line: 0,
                        message: e.to_string(),
                    })?;
                    pairs[i].relevant.insert(p.num);
                }
            }
            members.push(i);
        }
        members.sort_unstable();
        assignment.insert(split, members);
    }
    Ok((pairs, assignment))
}
