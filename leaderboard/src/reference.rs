//! Published figures the boards stand beside: the papers' tables as data
//! (`leaderboard/references/*.toml`, embedded in the binary), and the "beside the paper" table that
//! sets each published row next to the entries that stand beside it.
//!
//! A reference names its task (`pooled`: ECtHR paragraphs; `corpus`: BSARD articles), its measures,
//! its settings with the split each is in our datasets, and its rows. An entry stands beside a row
//! when its model card says `paper_row = "<key>"` ([`crate::ModelCard::paper_row`]); the baseline
//! stands beside [`BASELINE_ROW`]. Several published rows may share a key (a paper that prints the
//! same system twice with different figures: Santosh et al. 2024's ColBERT in Tables 1 and 2), and
//! several of our entries may stand beside one row (stand-ins, budgets); their names say which is
//! which.
//!
//! The figures are copied from `../shared/design/PAPERS.md`; a test reads that file and checks
//! every number.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::board::DatasetBoard;

/// The key of the row the baseline (BM25 run by the harness) stands beside.
pub const BASELINE_ROW: &str = "bm25";

/// The embedded references, by file name.
const SOURCES: [(&str, &str); 3] = [
    (
        "santosh2024-ecthr.toml",
        include_str!("../references/santosh2024-ecthr.toml"),
    ),
    (
        "santosh2024-cusines.toml",
        include_str!("../references/santosh2024-cusines.toml"),
    ),
    ("qabisar.toml", include_str!("../references/qabisar.toml")),
];

/// One paper's published figures for one task.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// The paper, as cited on the page.
    pub paper: String,
    /// `pooled` or `corpus`: the task of the boards it applies to.
    pub task: String,
    /// The datasets it applies to, by name; a trailing `*` matches any rest (`ecthr-*`).
    pub datasets: Vec<String>,
    /// Its measures, in the order of each row's values (leaderboard measure names).
    pub measures: Vec<String>,
    /// Its settings, in its column order.
    pub settings: Vec<Setting>,
    /// Its rows, in its order.
    #[serde(rename = "row")]
    pub rows: Vec<PaperRow>,
    /// Decimals of the percentages as the paper prints them (0: two-decimal fractions, as the ECtHR
    /// paper; 1: `49.3`, as the BSARD papers).
    #[serde(default)]
    pub decimals: usize,
    /// What the page says above its table (default: the ECtHR tables' note).
    #[serde(default)]
    pub note: Option<String>,
}

/// A setting (column group) of a published table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    /// The paper's name for it.
    pub paper: String,
    /// The split it is in our datasets.
    pub split: String,
}

/// A published row.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperRow {
    /// What an entry's card names to stand beside it.
    pub key: String,
    /// The table it is printed in.
    pub table: String,
    /// The system as the paper names it.
    pub system: String,
    /// The checkpoint it starts from, as the paper names it.
    pub init: String,
    /// One list per setting, one value per measure (fractions, as printed).
    pub values: Vec<Vec<f64>>,
}

/// Every embedded reference, parsed and checked once.
pub fn references() -> &'static [Reference] {
    static REFS: OnceLock<Vec<Reference>> = OnceLock::new();
    REFS.get_or_init(|| {
        SOURCES
            .iter()
            .map(|(name, text)| {
                let r: Reference = toml::from_str(text)
                    .unwrap_or_else(|e| panic!("embedded reference {name} does not parse: {e}"));
                if let Err(why) = r.check() {
                    panic!("embedded reference {name}: {why}");
                }
                r
            })
            .collect()
    })
}

impl Reference {
    /// Shapes agree: a value per setting and measure, keys are names, a row's key is not used twice
    /// in one table.
    pub fn check(&self) -> std::result::Result<(), String> {
        if !matches!(self.task.as_str(), "pooled" | "corpus") {
            return Err(format!("task {:?} is neither pooled nor corpus", self.task));
        }
        let mut seen = BTreeSet::new();
        for row in &self.rows {
            if row.key.is_empty() || !row.key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(format!("row key {:?} is not a name", row.key));
            }
            if !seen.insert((row.table.as_str(), row.key.as_str())) {
                return Err(format!("{} has row {} twice", row.table, row.key));
            }
            if row.values.len() != self.settings.len()
                || row.values.iter().any(|v| v.len() != self.measures.len())
            {
                return Err(format!(
                    "row {} ({}) has {:?} values; expected {} settings × {} measures",
                    row.key,
                    row.table,
                    row.values.iter().map(Vec::len).collect::<Vec<_>>(),
                    self.settings.len(),
                    self.measures.len()
                ));
            }
        }
        Ok(())
    }

    /// Does it apply to `board`: a dataset it names, the same task, and the board shows every
    /// measure it gives?
    pub fn applies_to(&self, board: &DatasetBoard) -> bool {
        let named = self.datasets.iter().any(|d| match d.strip_suffix('*') {
            Some(prefix) => board.name.starts_with(prefix),
            None => board.name == *d,
        });
        named && self.task == board.task.as_str() && self.measures.iter().all(|m| board.measures.contains(m))
    }
}

/// Every row key of every reference, sorted.
pub fn row_keys() -> Vec<&'static str> {
    references()
        .iter()
        .flat_map(|r| r.rows.iter().map(|row| row.key.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Is `key` a row of some reference?
pub fn is_row_key(key: &str) -> bool {
    references()
        .iter()
        .any(|r| r.rows.iter().any(|row| row.key == key))
}

/// One line of a "beside the paper" table: a published row, or one of our systems under it.
#[derive(Debug, Clone, PartialEq)]
pub enum Line<'a> {
    /// The paper's row.
    Paper(&'a PaperRow),
    /// Our row (index into the board's rows) standing beside the last paper row.
    Ours(usize),
}

/// The lines of `reference` beside `board`: each published row, then the board's rows that stand
/// beside it, best first as on the board. Paper rows none of ours stands beside are kept (the
/// reader sees what was not run).
pub fn beside<'a>(reference: &'a Reference, board: &DatasetBoard) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    for row in &reference.rows {
        lines.push(Line::Paper(row));
        for (i, ours) in board.rows.iter().enumerate() {
            if ours.paper_row.as_deref() == Some(row.key.as_str()) {
                lines.push(Line::Ours(i));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every figure of every embedded reference is the one `../shared/design/PAPERS.md` prints: the
    /// Markdown tables are read row by row (system, init / method) and compared number by number.
    #[test]
    fn the_embedded_figures_are_the_papers() {
        let text = papers_md();
        let santosh = &references()[0];
        assert_eq!(santosh.settings.len(), 3);
        // Table 1: "| system | init | seen | unseen query | unseen article |".
        let table1 = section(&text, "Table 1 (R@2%", "Table 2 (PEFT");
        let mut checked = 0;
        for cols in table_rows(table1) {
            let (system, init) = (cols[0].as_str(), cols[1].as_str());
            let row = santosh
                .rows
                .iter()
                .find(|r| r.table == "Table 1" && r.system == system && r.init == init)
                .unwrap_or_else(|| panic!("Table 1 row {system} / {init} is not in the reference"));
            assert_eq!(row.values, triples(&cols[2..5]), "Table 1 {system} / {init}");
            checked += 1;
        }
        assert_eq!(
            checked,
            santosh.rows.iter().filter(|r| r.table == "Table 1").count()
        );
        // Table 2: "| model | method | % train | seen | unseen query | unseen article |", the model
        // given on its first row only.
        let table2 = section(&text, "Table 2 (PEFT", "Training as stated");
        let mut model = String::new();
        let mut checked = 0;
        for cols in table_rows(table2) {
            if !cols[0].is_empty() {
                model = cols[0].clone();
            }
            let (family, init) = if let Some(f) = model.strip_suffix(" MS MARCO") {
                (f, "MS MARCO")
            } else if let Some(f) = model.strip_suffix(" Legal") {
                (f, "LegalBERT")
            } else {
                panic!("Table 2 model {model:?} is neither MS MARCO nor Legal")
            };
            let method = match cols[1].as_str() {
                "full" => "full fine-tuning",
                "adapter" => "bottleneck adapter",
                "prefix" => "prefix tuning",
                "LoRA" => "LoRA",
                m => panic!("unknown method {m}"),
            };
            let system = format!("{family}, {method} ({}% trained)", cols[2]);
            let row = santosh
                .rows
                .iter()
                .find(|r| r.table == "Table 2" && r.system == system && r.init == init)
                .unwrap_or_else(|| panic!("Table 2 row {system} / {init} is not in the reference"));
            assert_eq!(row.values, triples(&cols[3..6]), "Table 2 {system} / {init}");
            checked += 1;
        }
        assert_eq!(checked, 16);
        assert_eq!(
            checked,
            santosh.rows.iter().filter(|r| r.table == "Table 2").count()
        );
    }

    /// Issue 56, item 7: the CuSINeS and QABISAR figures beside the BSARD boards, checked against
    /// PAPERS.md number by number (percent there, fractions here).
    #[test]
    fn the_embedded_bsard_figures_are_the_papers() {
        let text = papers_md();
        let fractions = |cell: &str| -> Vec<Vec<f64>> {
            vec![
                cell.split('/')
                    .map(|v| (v.trim().parse::<f64>().expect("a number") * 10.0).round() / 1000.0)
                    .collect(),
            ]
        };
        let find = |r: &Reference, system: &str, init: &str| -> Vec<Vec<f64>> {
            r.rows
                .iter()
                .find(|row| row.system == system && row.init == init)
                .unwrap_or_else(|| panic!("{}: no row {system} / {init}", r.paper))
                .values
                .clone()
        };
        let cusines = references()
            .iter()
            .find(|r| r.paper.contains("CuSINeS"))
            .expect("the CuSINeS reference");
        // "| model | encoder | baseline negatives (BM25, fixed) | CuSINeS |".
        let mut checked = 0;
        for cols in table_rows(section(&text, "CuSINeS Table 1", "CuSINeS ablations")) {
            let (model, encoder) = (cols[0].as_str(), cols[1].as_str());
            if model == "BM25" {
                assert_eq!(find(cusines, "BM25", "—"), fractions(&cols[2]));
                checked += 1;
                continue;
            }
            let base = format!("{model}, BM25 negatives (fixed)");
            assert_eq!(
                find(cusines, &base, encoder),
                fractions(&cols[2]),
                "{base} {encoder}"
            );
            let ours = format!("{model}, CuSINeS");
            assert_eq!(
                find(cusines, &ours, encoder),
                fractions(&cols[3]),
                "{ours} {encoder}"
            );
            checked += 2;
        }
        assert_eq!(checked, cusines.rows.len());
        // "QABISAR Table 1 (…): BM25 a / b / c / d / e; bi-encoder without hierarchy …; … QABISAR …."
        let qabisar = references()
            .iter()
            .find(|r| r.paper == "QABISAR")
            .expect("the QABISAR reference");
        let para = section(&text, "QABISAR Table 1", "BSARD's own paper");
        let body = para.split_once("):").expect("QABISAR Table 1 (…):").1;
        let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut checked = 0;
        for part in body.trim().trim_end_matches('.').split(';') {
            let part = part.trim();
            // The name ends where the first figure (a decimal number) begins: "BM25 49.3 / …".
            let words: Vec<&str> = part.split_whitespace().collect();
            let at = words
                .iter()
                .position(|w| w.contains('.') && w.parse::<f64>().is_ok())
                .unwrap_or_else(|| panic!("no figures in {part:?}"));
            let (name, figures) = (words[..at].join(" "), words[at..].join(" "));
            let (name, figures) = (name.as_str(), figures.as_str());
            // The paper's encoder is LegalCamemBERT; BM25 has none.
            let init = if name == "BM25" { "—" } else { "LegalCamemBERT" };
            assert_eq!(find(qabisar, name, init), fractions(figures), "{name}");
            checked += 1;
        }
        assert_eq!(checked, qabisar.rows.len());
    }

    /// `../shared/design/PAPERS.md` (beside the fixtures), the papers' figures as the project keeps them.
    fn papers_md() -> String {
        let design = lexbench_core::testing::fixtures_dir()
            .parent()
            .expect("fixtures has a parent")
            .join("design")
            .join("PAPERS.md");
        std::fs::read_to_string(&design).unwrap_or_else(|e| panic!("{}: {e}", design.display()))
    }

    fn section<'t>(text: &'t str, from: &str, to: &str) -> &'t str {
        let start = text
            .find(from)
            .unwrap_or_else(|| panic!("PAPERS.md has no {from:?}"));
        let end = start
            + text[start..]
                .find(to)
                .unwrap_or_else(|| panic!("PAPERS.md has no {to:?}"));
        &text[start..end]
    }

    /// The data rows of the first Markdown table in `text`, cells trimmed.
    fn table_rows(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .filter(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| {
                l.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_owned())
                    .collect()
            })
            .collect()
    }

    fn triples(cells: &[String]) -> Vec<Vec<f64>> {
        cells
            .iter()
            .map(|c| {
                c.split('/')
                    .map(|v| v.trim().parse::<f64>().expect("a number"))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn references_are_well_formed_and_keys_are_known() {
        assert!(!references().is_empty());
        assert!(is_row_key(BASELINE_ROW));
        assert!(is_row_key("dpr-zero-shot"));
        assert!(!is_row_key("gpt-4"));
        let bad = Reference {
            rows: vec![PaperRow {
                values: vec![vec![0.1]],
                ..references()[0].rows[0].clone()
            }],
            ..references()[0].clone()
        };
        assert!(
            bad.check()
                .unwrap_err()
                .contains("expected 3 settings × 3 measures")
        );
    }
}
