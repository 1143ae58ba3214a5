//! ECtHR assembly: parsed guides (queries with resolved pinpoint citations) and parsed judgments into
//! query–judgment pairs, candidate pools and relevance labels.
//!
//! Rules:
//! - one pair per (query, cited judgment); its relevant paragraphs are the cited paragraph numbers that
//!   exist in the parsed main judgment;
//! - the pool of a pair is every paragraph of that judgment's main text (separate opinions excluded);
//! - nothing is dropped silently: citations without paragraph numbers, unresolved citations, cited
//!   judgments that were not parsed, and cited paragraph numbers the judgment does not have are counted
//!   by reason, with examples, in the [`AssemblyReport`].

use std::collections::{BTreeMap, BTreeSet};

use lexbench_core::{GuideFile, ItemId, Judgment, QueryId, TopicId};
use serde::{Deserialize, Serialize};

use crate::pairs::{Pair, QrelSource};

/// Why something did not become a label.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssemblyReport {
    /// Citations seen.
    pub citations: usize,
    /// Counts by reason: `no_paragraphs` (a case-level citation), `unresolved`, `judgment_missing`,
    /// `paragraph_missing` (a cited number the judgment does not have), `pair_without_valid_paragraph`.
    pub dropped: BTreeMap<String, usize>,
    /// Up to 50 examples per reason.
    pub examples: BTreeMap<String, Vec<String>>,
    /// Pairs made.
    pub pairs: usize,
}

impl AssemblyReport {
    fn drop(&mut self, reason: &str, example: String) {
        *self.dropped.entry(reason.to_owned()).or_default() += 1;
        let ex = self.examples.entry(reason.to_owned()).or_default();
        if ex.len() < 50 {
            ex.push(example);
        }
    }
}

/// Pairs from parsed guides and judgments.
pub fn assemble(guides: &[GuideFile], judgments: &BTreeMap<ItemId, Judgment>) -> (Vec<Pair>, AssemblyReport) {
    let mut report = AssemblyReport::default();
    // (query, item) → pair under construction; BTreeMap keeps the output order deterministic.
    let mut pairs: BTreeMap<(QueryId, ItemId), Pair> = BTreeMap::new();
    for gf in guides {
        let guide_sha = gf.guide.provenance.sha256.clone();
        for (qi, q) in gf.queries.iter().enumerate() {
            for (ci, c) in q.citations.iter().enumerate() {
                report.citations += 1;
                let at = format!("{} / {} / {}", gf.guide.id, q.id, c.raw);
                if c.paragraphs.is_empty() {
                    report.drop("no_paragraphs", at);
                    continue;
                }
                let Some(item) = &c.resolved else {
                    report.drop("unresolved", at);
                    continue;
                };
                let Some(j) = judgments.get(item) else {
                    report.drop("judgment_missing", format!("{at} → {item}"));
                    continue;
                };
                let have: BTreeSet<u32> = j.paragraphs.iter().map(|p| p.num).collect();
                let span = gf.spans.get(qi).and_then(|s| s.get(ci)).copied();
                let topic = TopicId::pair(&q.id, item);
                let pair = pairs.entry((q.id.clone(), item.clone())).or_insert_with(|| Pair {
                    query: q.id.clone(),
                    text: q.text.clone(),
                    guide: gf.guide.id.clone(),
                    item: item.clone(),
                    relevant: BTreeSet::new(),
                    sources: Vec::new(),
                });
                for &p in &c.paragraphs {
                    if !have.contains(&p) {
                        report.drop("paragraph_missing", format!("{at} → {item} § {p}"));
                        continue;
                    }
                    pair.relevant.insert(p);
                    pair.sources.push(QrelSource {
                        topic: topic.clone(),
                        paragraph: p,
                        guide: gf.guide.id.clone(),
                        path: q.path.clone(),
                        raw: c.raw.clone(),
                        span,
                        how: c.how,
                        item: item.clone(),
                        judgment_sha256: j.provenance.sha256.clone(),
                        guide_sha256: guide_sha.clone(),
                        release_row: None,
                    });
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((q, item), pair) in pairs {
        if pair.relevant.is_empty() {
            report.drop("pair_without_valid_paragraph", format!("{q} / {item}"));
        } else {
            out.push(pair);
        }
    }
    report.pairs = out.len();
    (out, report)
}
