//! ECtHR assembly: parsed guides (queries with resolved pinpoint citations) and parsed judgments into
//! query–judgment pairs, candidate pools and relevance labels.
//!
//! Rules:
//! - one pair per (query, cited judgment); its relevant paragraphs are the cited paragraph numbers that
//!   exist in the parsed main judgment;
//! - which readings of a pinpoint become labels is a choice ([`LabelKinds`]): every reading (the
//!   default), or only those the published release used (`direct` and `ibid`), so that a diff against
//!   the release compares like with like;
//! - the pool of a pair is every paragraph of that judgment's main text (separate opinions excluded);
//! - nothing is dropped silently: citations without paragraph numbers, unresolved citations, cited
//!   judgments that were not parsed, and cited paragraph numbers the judgment does not have are counted
//!   by reason, with examples, in the [`AssemblyReport`].

use std::collections::{BTreeMap, BTreeSet};

use lexbench_core::records::ReadKind;
use lexbench_core::{GuideFile, ItemId, Judgment, QueryId, TopicId};
use serde::{Deserialize, Serialize};

use crate::pairs::{Pair, QrelSource};

/// Which readings of a pinpoint become labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelKinds {
    /// Every pinpoint the guides give: `direct`, `deferred`, `previous_sentence`, `ibid`.
    #[default]
    All,
    /// Only the readings the published release used: `direct` and `ibid`.
    Release,
}

impl LabelKinds {
    /// Does a pinpoint read this way become a label?
    pub fn keeps(self, read: ReadKind) -> bool {
        match self {
            Self::All => true,
            Self::Release => matches!(read, ReadKind::Direct | ReadKind::Ibid),
        }
    }

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Release => "release",
        }
    }

    /// The dataset card's line saying which labels it holds.
    pub fn card_line(self) -> &'static str {
        match self {
            Self::All => {
                "Labels: every pinpoint the guides give (`--labels all`): direct, deferred (later in the citing sentence), previous sentence and ibid."
            }
            Self::Release => {
                "Labels: the published release's kinds only (`--labels release`): direct and ibid pinpoints; deferred and previous-sentence pinpoints are counted, not labelled."
            }
        }
    }
}

/// Why something did not become a label.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssemblyReport {
    /// Citations seen.
    pub citations: usize,
    /// Counts by reason: `no_paragraphs` (a case-level citation), `kind_not_kept` (a reading that
    /// [`LabelKinds::Release`] leaves out), `unresolved`, `judgment_missing`, `paragraph_missing` (a
    /// cited number the judgment does not have), `pair_without_valid_paragraph`.
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

/// Pairs from parsed guides and judgments, with the pinpoints `labels` keeps.
pub fn assemble(
    guides: &[GuideFile],
    judgments: &BTreeMap<ItemId, Judgment>,
    labels: LabelKinds,
) -> (Vec<Pair>, AssemblyReport) {
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
                if !labels.keeps(c.read) {
                    report.drop("kind_not_kept", format!("{at} ({})", c.read.as_str()));
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
                        read: c.read,
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

#[cfg(test)]
mod tests {
    //! Properties: every reading becomes a label by default; `release` keeps `direct` and `ibid` and
    //! counts the others; each label's source records how it was read.
    use lexbench_core::records::{Citation, GuideQuery, Provenance};
    use lexbench_core::{Guide, Paragraph, Section};

    use super::*;

    fn cite(read: ReadKind, paragraphs: &[u32]) -> Citation {
        Citation {
            raw: format!("X v. Y ({})", read.as_str()),
            case_name: "X v. Y".into(),
            year: Some(2001),
            flags: Default::default(),
            paragraphs: paragraphs.to_vec(),
            read,
            resolved: Some("001-57574".parse().expect("itemid")),
            how: None,
        }
    }

    fn inputs() -> (Vec<GuideFile>, BTreeMap<ItemId, Judgment>) {
        let item: ItemId = "001-57574".parse().expect("itemid");
        let judgment = Judgment {
            item: Some(item.clone()),
            title: "CASE OF X v. Y".into(),
            date: None,
            paragraphs: (1..=6)
                .map(|num| Paragraph {
                    num,
                    section: Section::Law,
                    text: format!("paragraph {num}"),
                })
                .collect(),
            opinions: vec![],
            warnings: vec![],
            provenance: Provenance::default(),
        };
        let guide = Guide {
            id: "guide_art_1_eng".parse().expect("guide id"),
            title: "Guide".into(),
            updated: None,
            sections: vec![],
            warnings: vec![],
            provenance: Provenance::default(),
        };
        let query = GuideQuery {
            id: QueryId::new("guide_art_1_eng-001").expect("query id"),
            guide: guide.id.clone(),
            path: vec!["Guide".into()],
            text: "Guide".into(),
            citations: vec![
                cite(ReadKind::Direct, &[1]),
                cite(ReadKind::Deferred, &[2]),
                cite(ReadKind::PreviousSentence, &[3, 4]),
                cite(ReadKind::Ibid, &[5]),
            ],
        };
        let file = GuideFile {
            guide,
            queries: vec![query],
            spans: vec![],
        };
        (vec![file], BTreeMap::from([(item, judgment)]))
    }

    #[test]
    fn label_kinds_choose_the_readings() {
        let (guides, judgments) = inputs();
        let (all, report) = assemble(&guides, &judgments, LabelKinds::All);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].relevant, BTreeSet::from([1, 2, 3, 4, 5]));
        assert!(report.dropped.is_empty(), "{report:?}");
        let read: Vec<(u32, ReadKind)> = all[0].sources.iter().map(|s| (s.paragraph, s.read)).collect();
        assert_eq!(
            read,
            [
                (1, ReadKind::Direct),
                (2, ReadKind::Deferred),
                (3, ReadKind::PreviousSentence),
                (4, ReadKind::PreviousSentence),
                (5, ReadKind::Ibid)
            ]
        );

        let (release, report) = assemble(&guides, &judgments, LabelKinds::Release);
        assert_eq!(release[0].relevant, BTreeSet::from([1, 5]));
        assert_eq!(report.dropped.get("kind_not_kept"), Some(&2));
        assert_eq!(report.citations, 4);
        assert!(LabelKinds::Release.card_line().contains("--labels release"));
    }
}
