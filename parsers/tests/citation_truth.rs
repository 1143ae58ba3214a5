//! The citation reader against a hand-labelled truth set (`tests/data/citation_truth.tsv`, described
//! in `tests/data/README.md`): 331 citations in 90 passages of the Article 1 and terrorism guides,
//! annotated by reading the guides, not the reader's output.
//!
//! For each passage (whole numbered paragraphs, lines `first..=last` of the fixture guide) the reader
//! runs on the passage's text and two things are compared:
//! - **labels**: the (case, paragraph) pairs, what a benchmark label is made of. Recall is counted per
//!   truth kind (`direct`, `ibid`, `previous_sentence`, `deferred`), precision per the reader's own
//!   kind (a pair we read the same way twice counts once);
//! - **cases**: the cases a passage cites (any kind, case-level included), which measures the name
//!   reading on its own.
//!
//! Case names are compared by [`resolve::name_key`] (case, diacritics, punctuation folded), as the
//! resolver compares them. The figures are printed, snapshotted with every difference, and held to
//! floors: a change that loses a label fails here and names it.

use std::collections::{BTreeMap, BTreeSet};

use lexbench_core::records::ReadKind;
use lexbench_core::testing::fixture;
use lexbench_parsers::guide::citation::extract_text;
use lexbench_parsers::guide::resolve::name_key;

/// One row of the truth file.
struct Row {
    passage: (String, usize, usize),
    case: String,
    paragraphs: Vec<u32>,
    kind: String,
}

fn truth() -> Vec<Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/citation_truth.tsv");
    let text = std::fs::read_to_string(path).expect("truth file readable");
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().expect("header");
    assert_eq!(
        header,
        "guide\tfirst_line\tlast_line\tcase\tyear\tparagraphs\tkind\traw"
    );
    lines
        .map(|(i, line)| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 8, "{path}:{}: {} fields", i + 1, f.len());
            let num = |s: &str| -> usize {
                s.parse()
                    .unwrap_or_else(|_| panic!("{path}:{}: bad line number {s:?}", i + 1))
            };
            Row {
                passage: (f[0].to_owned(), num(f[1]), num(f[2])),
                case: f[3].to_owned(),
                paragraphs: f[5]
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| {
                        s.parse()
                            .unwrap_or_else(|_| panic!("{path}:{}: bad paragraph {s:?}", i + 1))
                    })
                    .collect(),
                kind: f[6].to_owned(),
            }
        })
        .collect()
}

fn guide_lines(guide: &str) -> Vec<String> {
    let file = match guide {
        "art1" => "guides/text/guide_art_1_eng.txt",
        "terrorism" => "guides/text/guide_terrorism_eng.txt",
        other => panic!("unknown guide {other:?} in the truth file"),
    };
    std::fs::read_to_string(fixture(file))
        .expect("guide readable")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Hits over a total, with the items missed (or wrongly found).
#[derive(Default)]
struct Tally {
    hit: usize,
    total: usize,
    wrong: Vec<String>,
}

impl Tally {
    fn add(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.total += 1;
        if ok {
            self.hit += 1;
        } else {
            self.wrong.push(what());
        }
    }
    fn rate(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.hit as f64 / self.total as f64
        }
    }
    fn line(&self) -> String {
        format!("{:.3} ({}/{})", self.rate(), self.hit, self.total)
    }
}

type Pair = (String, u32);

#[test]
fn the_reader_against_the_hand_labelled_truth() {
    let rows = truth();
    let mut passages: BTreeMap<(String, usize, usize), Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        passages.entry(r.passage.clone()).or_default().push(r);
    }
    let lines: BTreeMap<&str, Vec<String>> = ["art1", "terrorism"]
        .into_iter()
        .map(|g| (g, guide_lines(g)))
        .collect();

    let mut recall: BTreeMap<String, Tally> = BTreeMap::new();
    let mut precision: BTreeMap<&str, Tally> = BTreeMap::new();
    let (mut label_recall, mut label_precision) = (Tally::default(), Tally::default());
    let (mut case_recall, mut case_precision) = (Tally::default(), Tally::default());
    for ((guide, first, last), truth_rows) in &passages {
        let at = |p: &str| format!("{guide}:{first}-{last} {p}");
        let text = lines[guide.as_str()][first - 1..*last].join("\n");
        let found = extract_text(&text);

        // Labels.
        let mut truth_pairs: BTreeMap<String, BTreeSet<Pair>> = BTreeMap::new();
        for r in truth_rows {
            for p in &r.paragraphs {
                truth_pairs
                    .entry(r.kind.clone())
                    .or_default()
                    .insert((name_key(&r.case), *p));
            }
        }
        let mut ours: BTreeMap<ReadKind, BTreeSet<Pair>> = BTreeMap::new();
        for l in &found {
            let c = &l.found.citation;
            for p in &c.paragraphs {
                ours.entry(c.read)
                    .or_default()
                    .insert((name_key(&c.case_name), *p));
            }
        }
        let all_truth: BTreeSet<&Pair> = truth_pairs.values().flatten().collect();
        let all_ours: BTreeSet<&Pair> = ours.values().flatten().collect();
        for (kind, pairs) in &truth_pairs {
            for pair in pairs {
                recall
                    .entry(kind.clone())
                    .or_default()
                    .add(all_ours.contains(pair), || {
                        at(&format!("{} § {}", pair.0, pair.1))
                    });
            }
        }
        for pair in &all_truth {
            label_recall.add(all_ours.contains(pair), || {
                at(&format!("{} § {}", pair.0, pair.1))
            });
        }
        for (kind, pairs) in &ours {
            for pair in pairs {
                precision
                    .entry(kind.as_str())
                    .or_default()
                    .add(all_truth.contains(pair), || {
                        at(&format!("{} § {}", pair.0, pair.1))
                    });
            }
        }
        for pair in &all_ours {
            label_precision.add(all_truth.contains(pair), || {
                at(&format!("{} § {}", pair.0, pair.1))
            });
        }

        // Cases.
        let truth_cases: BTreeSet<String> = truth_rows
            .iter()
            .filter(|r| r.kind != "none")
            .map(|r| name_key(&r.case))
            .collect();
        let our_cases: BTreeSet<String> = found
            .iter()
            .map(|l| name_key(&l.found.citation.case_name))
            .collect();
        for c in &truth_cases {
            case_recall.add(our_cases.contains(c), || at(c));
        }
        for c in &our_cases {
            case_precision.add(truth_cases.contains(c), || at(c));
        }
    }

    let mut report = String::new();
    report.push_str(&format!(
        "passages: {}\nlabels: recall {}, precision {}\ncases:  recall {}, precision {}\n",
        passages.len(),
        label_recall.line(),
        label_precision.line(),
        case_recall.line(),
        case_precision.line(),
    ));
    report.push_str("\nlabel recall by truth kind:\n");
    for (k, t) in &recall {
        report.push_str(&format!("  {k:<18} {}\n", t.line()));
    }
    report.push_str("label precision by our kind:\n");
    for (k, t) in &precision {
        report.push_str(&format!("  {k:<18} {}\n", t.line()));
    }
    let mut list = |title: &str, t: &Tally| {
        report.push_str(&format!("\n{title} ({}):\n", t.wrong.len()));
        for w in &t.wrong {
            report.push_str(&format!("  {w}\n"));
        }
    };
    list("labels missed", &label_recall);
    list("labels not in the truth", &label_precision);
    list("cases missed", &case_recall);
    list("cases not in the truth", &case_precision);
    println!("{report}");
    insta::assert_snapshot!(report);

    // Floors at the figures measured when the truth set was made (raise them as the reader improves).
    assert!(
        label_recall.rate() >= 0.95,
        "label recall {}",
        label_recall.line()
    );
    assert!(
        label_precision.rate() >= 0.97,
        "label precision {}",
        label_precision.line()
    );
    assert!(case_recall.rate() >= 0.95, "case recall {}", case_recall.line());
    assert!(
        case_precision.rate() >= 0.95,
        "case precision {}",
        case_precision.line()
    );
}
