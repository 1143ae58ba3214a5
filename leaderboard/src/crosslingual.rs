//! The cross-lingual section of the board: LexCLiPR's datasets (`ecthr-xl-<code>`, one per query
//! language, the corpus the same English judgments) read as one language × system table on the
//! `test` split. Each cell is the system's cell of its language's board, so its marks are that
//! board's: a paired randomization test against BM25 on the same language's topics, Holm-corrected
//! over that split's tests. English comes first, the row every other language reads against; the
//! languages' test topics differ (different rows survive the import), which the section says.

use std::collections::BTreeMap;

use lexbench_core::dataset::Language;

use crate::board::{DatasetBoard, Sig};

/// The name prefix of LexCLiPR's datasets.
pub const PREFIX: &str = "ecthr-xl-";
/// The union of the languages' datasets (`lexbench import lexclipr --union`): a training set, not a
/// language of the section.
pub const UNION_DATASET: &str = "ecthr-xl-all";
/// The split the section shows.
pub const SPLIT: &str = "test";

/// One system on one language's test split.
#[derive(Debug, Clone, PartialEq)]
pub struct XlCell {
    /// Means in [`XlSection::measures`] order.
    pub scores: Vec<Option<f64>>,
    /// Against BM25 on this language, per measure.
    pub sig: Vec<Sig>,
    /// Holm-adjusted p-values per measure (when tested).
    pub p_holm: Vec<Option<f64>>,
    /// Evaluated on another dataset version than the one built now.
    pub stale: bool,
    /// The entry shown.
    pub entry: String,
}

/// One query language.
#[derive(Debug, Clone, PartialEq)]
pub struct XlRow {
    /// Its code (`en`, `fr`, …).
    pub code: String,
    /// Its English name (`french`), when lexbench knows the code.
    pub name: Option<&'static str>,
    /// The dataset.
    pub dataset: String,
    /// Test topics (the most any of its cells was evaluated on).
    pub topics: usize,
    /// Cells in [`XlSection::systems`] order (`None`: the system has no entry in this language).
    pub cells: Vec<Option<XlCell>>,
}

/// The section: rows by language, English first; a column group per system.
#[derive(Debug, Clone, PartialEq)]
pub struct XlSection {
    /// Measures of each system's group (the boards' shown measures: R@2%, R@5%, R@10%).
    pub measures: Vec<String>,
    /// Systems: the baseline first, then by their mean primary measure (R@10%) over the languages
    /// they were evaluated in, most languages first.
    pub systems: Vec<String>,
    /// Whether each system's entries are the baseline's.
    pub baseline: Vec<bool>,
    /// The languages.
    pub rows: Vec<XlRow>,
}

/// The section from the boards, `None` when no LexCLiPR dataset has a `test` cell.
pub fn section(boards: &[DatasetBoard]) -> Option<XlSection> {
    let xl: Vec<&DatasetBoard> = boards
        .iter()
        .filter(|b| {
            b.name.starts_with(PREFIX) && b.name != UNION_DATASET && b.splits.iter().any(|s| s == SPLIT)
        })
        .collect();
    let first = xl.first()?;
    let measures = first.measures.clone();
    let primary = measures
        .iter()
        .position(|m| m == first.task.primary_measure())
        .unwrap_or(measures.len().saturating_sub(1));
    // Per system: languages seen, the sum of its primary means, whether it is the baseline.
    let mut seen: BTreeMap<String, (usize, f64, bool)> = BTreeMap::new();
    for b in &xl {
        for r in &b.rows {
            if let Some(c) = r.cells.get(SPLIT) {
                let e = seen.entry(r.shown_name()).or_insert((0, 0.0, r.baseline));
                e.0 += 1;
                e.1 += c.scores.get(primary).copied().flatten().unwrap_or(0.0);
                e.2 |= r.baseline;
            }
        }
    }
    let mut systems: Vec<(String, (usize, f64, bool))> = seen.into_iter().collect();
    systems.sort_by(|(an, (al, asum, ab)), (bn, (bl, bsum, bb))| {
        bb.cmp(ab)
            .then(bl.cmp(al))
            .then((bsum / *bl as f64).total_cmp(&(asum / *al as f64)))
            .then(an.cmp(bn))
    });
    let mut rows: Vec<XlRow> = xl
        .iter()
        .map(|b| {
            let code = b.name[PREFIX.len()..].to_owned();
            let by_name: BTreeMap<String, &crate::board::Row> =
                b.rows.iter().map(|r| (r.shown_name(), r)).collect();
            let cells: Vec<Option<XlCell>> = systems
                .iter()
                .map(|(name, _)| {
                    let c = by_name.get(name)?.cells.get(SPLIT)?;
                    // The board's measures, in the section's order (a board with other measures
                    // shows what it has).
                    let at = |m: &String| b.measures.iter().position(|x| x == m);
                    Some(XlCell {
                        scores: measures.iter().map(|m| at(m).and_then(|i| c.scores[i])).collect(),
                        sig: measures
                            .iter()
                            .map(|m| at(m).map_or(Sig::Untested, |i| c.sig[i]))
                            .collect(),
                        p_holm: measures.iter().map(|m| at(m).and_then(|i| c.p_holm[i])).collect(),
                        stale: c.stale,
                        entry: c.entry.clone(),
                    })
                })
                .collect();
            let topics = b
                .rows
                .iter()
                .filter_map(|r| r.cells.get(SPLIT).map(|c| c.topics))
                .max()
                .unwrap_or(0);
            XlRow {
                name: Language::parse(&code).map(Language::name),
                code,
                dataset: b.name.clone(),
                topics,
                cells,
            }
        })
        .collect();
    rows.sort_by(|a, b| (a.code != "en", &a.code).cmp(&(b.code != "en", &b.code)));
    Some(XlSection {
        measures,
        baseline: systems.iter().map(|(_, (_, _, b))| *b).collect(),
        systems: systems.into_iter().map(|(n, _)| n).collect(),
        rows,
    })
}

/// The section's heading.
pub const TITLE: &str = "Cross-lingual (LexCLiPR)";

/// The section's note, in plain words (the renderers add their own markup around the names).
pub const NOTE: &str = "The same English judgments queried in other languages: LexCLiPR's guide heading \
    paths in each language against the English judgments' paragraphs (datasets ecthr-xl-<code>, test split; \
    docs/cross-lingual.md). Each cell is its language's board cell, marked against BM25 on that language's \
    topics. English comes first: the row each language reads against. The languages' test topics differ \
    (different rows survive the import), so a gap between two rows is not the cost of the language alone; \
    english_topics.jsonl links each topic to its English one.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::{Cell, Row};

    fn cell(r10: f64, sig: Sig) -> Cell {
        Cell {
            entry: format!("e{r10}"),
            hash: "h".into(),
            stale: false,
            scores: vec![Some(r10 / 4.0), Some(r10 / 2.0), Some(r10)],
            sig: vec![Sig::Same, Sig::Same, sig],
            p_holm: vec![None, None, Some(0.01)],
            ci: vec![None; 3],
            topics: 10,
            hidden: BTreeMap::new(),
        }
    }

    fn row(system: &str, baseline: bool, split: &str, c: Cell) -> Row {
        Row {
            system: system.into(),
            baseline,
            verified: baseline,
            description: None,
            model: None,
            owner: String::new(),
            shared_name: false,
            paper_row: None,
            cells: BTreeMap::from([(split.to_owned(), c)]),
        }
    }

    fn board(name: &str, rows: Vec<Row>) -> DatasetBoard {
        DatasetBoard {
            name: name.into(),
            current_hash: Some("h".into()),
            pooled: true,
            task: lexbench_core::Task::Pooled,
            measures: vec!["R@2%".into(), "R@5%".into(), "R@10%".into()],
            splits: vec!["test".into()],
            rows,
        }
    }

    #[test]
    fn languages_english_first_systems_baseline_first_then_by_mean_r10() {
        let boards = vec![
            board("ecthr", vec![row("BM25", true, "test", cell(0.9, Sig::Baseline))]),
            board(
                "ecthr-xl-fr",
                vec![
                    row("BM25", true, "test", cell(0.3, Sig::Baseline)),
                    row("e5", false, "test", cell(0.44, Sig::Better)),
                    row("minilm", false, "test", cell(0.32, Sig::Same)),
                ],
            ),
            board(
                "ecthr-xl-en",
                vec![
                    row("minilm", false, "test", cell(0.46, Sig::Worse)),
                    row("BM25", true, "test", cell(0.49, Sig::Baseline)),
                ],
            ),
            // Only a val split: not in the section.
            DatasetBoard {
                splits: vec!["val".into()],
                ..board(
                    "ecthr-xl-it",
                    vec![row("BM25", true, "val", cell(0.2, Sig::Baseline))],
                )
            },
            // The union of the languages: a training set, not a language.
            board(
                "ecthr-xl-all",
                vec![row("BM25", true, "test", cell(0.3, Sig::Baseline))],
            ),
        ];
        let s = section(&boards).unwrap();
        assert_eq!(s.measures, ["R@2%", "R@5%", "R@10%"]);
        // minilm is in two languages, e5 in one: languages covered first, then the mean.
        assert_eq!(s.systems, ["BM25", "minilm", "e5"]);
        assert_eq!(s.baseline, [true, false, false]);
        let codes: Vec<&str> = s.rows.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(codes, ["en", "fr"]);
        assert_eq!(s.rows[1].name, Some("french"));
        let en = &s.rows[0];
        assert!(en.cells[2].is_none(), "e5 has no English entry");
        assert_eq!(en.cells[1].as_ref().unwrap().sig[2], Sig::Worse);
        assert_eq!(en.cells[1].as_ref().unwrap().scores[2], Some(0.46));
        let fr = &s.rows[1];
        assert_eq!(fr.cells[2].as_ref().unwrap().sig[2], Sig::Better);
        assert_eq!(fr.cells[2].as_ref().unwrap().p_holm[2], Some(0.01));
        assert_eq!(fr.topics, 10);
    }

    #[test]
    fn no_cross_lingual_board_no_section() {
        assert!(
            section(&[board(
                "ecthr",
                vec![row("BM25", true, "test", cell(0.5, Sig::Baseline))]
            )])
            .is_none()
        );
        assert!(section(&[]).is_none());
    }
}
