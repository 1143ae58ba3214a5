//! An open-corpus ranking read as the per-judgment task (`lexbench project`): for each pair of the
//! dataset the open setting was derived from (a heading and a judgment it cites), the judgment's
//! paragraphs in the order the open ranking put them, scored with that dataset's qrels and pools
//! (`R@2%`, `R@5%`, `R@10%`). The two settings can then be read side by side: how much of the
//! per-judgment recall a system keeps when it must also find the judgment.
//!
//! A judgment's paragraphs that the open run did not rank (below its depth, 1,000 by default) are
//! not in the projected ranking: they count as not retrieved, as everything below a run's depth does.

use std::path::Path;

use anyhow::{Context, Result, bail};
use lexbench_core::dataset::Dataset;
use lexbench_core::{
    EvalParams, Evaluation, Measure, PoolSizes, ReadOptions, Run, Task, TopicId, evaluate_with,
};

/// One source split's projection.
#[derive(Debug, Clone)]
pub struct Projected {
    /// The per-judgment dataset's split.
    pub split: String,
    /// The projected run (the open run's tag).
    pub run: Run,
    /// Its evaluation with the split's qrels and pools.
    pub evaluation: Evaluation,
}

/// The source splits whose pairs an open split's headings come from (`lexbench_splits::open`).
fn source_splits(open_split: &str) -> &'static [&'static str] {
    match open_split {
        "train" => &["train", "val", "test"],
        "unseen_query" => &["unseen_query"],
        "unseen_guide" => &["unseen_guide"],
        _ => &[],
    }
}

/// Projects `run` (of split `split` of the open-corpus dataset `open` in `data`) onto the
/// per-judgment dataset it was derived from, which must be the very version (`task.json`'s hash):
/// the source's name and one [`Projected`] per source split.
pub fn project(data: &Path, open: &str, split: &str, run: &Run) -> Result<(String, Vec<Projected>)> {
    let ds = Dataset::open_in(data, open)?;
    let task = ds.task_file()?;
    let Some(from) = task
        .filter(|t| t.task == Task::OpenCorpus)
        .and_then(|t| t.derived_from)
    else {
        bail!(
            "dataset {open} is not an open-corpus setting derived from a per-judgment dataset (its task.json says none)"
        );
    };
    let source = Dataset::open_in(data, &from.name)
        .with_context(|| format!("opening {}, the dataset {open} was derived from", from.name))?;
    if source.hash() != from.hash {
        bail!(
            "dataset {} is version {}, not {} that {open} was derived from: derive it again \
             (`lexbench build open --from {}`)",
            from.name,
            &source.hash()[..16],
            &from.hash[..16.min(from.hash.len())],
            from.name
        );
    }
    let sources = source_splits(split);
    if sources.is_empty() {
        bail!("split {split:?} is not one of the open setting's (train, unseen_query, unseen_guide)");
    }
    let pools = source.pools()?.context("the source dataset has no pools")?;
    let sizes = PoolSizes(pools.iter().map(|p| (p.topic.clone(), p.docs.len())).collect());
    let topics = source.topics()?;
    let measures = lexbench_core::Task::Pooled.recorded_measures();
    let params = EvalParams::default();
    let mut out = Vec::new();
    for s in sources {
        if !source.split_names()?.iter().any(|n| n == s) {
            continue;
        }
        let members: std::collections::BTreeSet<TopicId> = source.split(s)?.topics.into_iter().collect();
        let qrels = source.qrels(
            s,
            &ReadOptions {
                known_topics: Some(members.clone()),
                ..ReadOptions::default()
            },
        )?;
        let mut projected = Run::new(run.tag.clone());
        for t in topics.iter().filter(|t| members.contains(&t.topic)) {
            let Some(item) = &t.item else {
                bail!("topic {} of {} names no judgment", t.topic, from.name);
            };
            let Some(hits) = run.topics.get(&TopicId::query(&t.query)) else {
                continue;
            };
            let kept: Vec<_> = hits
                .iter()
                .filter(|h| {
                    h.doc
                        .as_str()
                        .split_once(':')
                        .is_some_and(|(i, _)| i == item.as_str())
                })
                .cloned()
                .collect();
            if !kept.is_empty() {
                projected.topics.insert(t.topic.clone(), kept);
            }
        }
        projected.sort();
        let evaluation = evaluate_with(&projected, &qrels, &measures, Some(&sizes), &params)?;
        out.push(Projected {
            split: (*s).to_owned(),
            run: projected,
            evaluation,
        });
    }
    Ok((from.name, out))
}

/// Each measure's mean, by name, in the order evaluated (for reports).
pub fn means(p: &Projected) -> Vec<(String, f64)> {
    p.evaluation
        .measures
        .iter()
        .zip(&p.evaluation.mean)
        .map(|(m, v): (&Measure, &f64)| (m.to_string(), *v))
        .collect()
}
