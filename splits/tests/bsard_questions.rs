//! BSARD's real question files (`$LEXBENCH_FIXTURES/bsard/questions_fr_{test,train}.csv`, the published
//! layout `id, category, subcategory, question, extra_description, article_ids`).
//!
//! Properties checked:
//! - every row of both files is read: 222 test and 886 train questions, 1,060 test question–article
//!   pairs as listed (the published count), of which 1,059 are distinct because question 274 lists
//!   article 1102 twice; the other counts (train pairs, distinct articles, categories, sub-categories,
//!   relevant articles per question) equal those of Python's `csv` module on the same files
//!   (`csv.DictReader`, ids split at commas and stripped);
//! - the same files with a byte-order mark, CRLF line ends and spaces in the id lists read the same;
//! - a broken row of the real file (an unknown article, a repeated question id, a quote never closed)
//!   is refused naming the file and the row's line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use lexbench_core::ArticleId;
use lexbench_core::testing::fixture;
use lexbench_splits::bsard::{
    QuestionsFile, QuestionsStats, parse_questions, questions_report, read_questions,
};

fn real(split: &str) -> (PathBuf, String) {
    let p = fixture(&format!("bsard/questions_fr_{split}.csv"));
    let t = lexbench_core::text::read_text(&p).unwrap();
    (p, t)
}

fn parsed(split: &str) -> (PathBuf, QuestionsFile) {
    let (p, t) = real(split);
    let f = parse_questions(&p, &t).unwrap();
    (p, f)
}

fn categories(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect()
}

#[test]
fn the_published_counts() {
    let (_, test) = parsed("test");
    let s = QuestionsStats::of([&test]);
    assert_eq!(s.questions, 222);
    assert_eq!(s.pairs_listed, 1_060);
    assert_eq!(s.pairs, 1_059);
    assert_eq!(s.articles, 491);
    assert_eq!(s.subcategories, 33);
    assert_eq!(
        s.categories,
        categories(&[
            ("Argent", 36),
            ("Etrangers", 13),
            ("Famille", 67),
            ("Justice", 30),
            ("Logement", 66),
            ("Protection sociale", 4),
            ("Travail", 6),
        ])
    );
    let per = s.relevant_per_question.unwrap();
    assert_eq!((per.min, per.median, per.max), (1.0, 2.0, 57.0));
    assert!((per.mean - 1_059.0 / 222.0).abs() < 1e-12);
    // The one repeat: question 274 (line 183) lists 931,932,933,1101,1102,1103,1102.
    assert_eq!(test.repeated.len(), 1);
    let r = &test.repeated[0];
    assert_eq!(
        (r.line, r.question.as_str(), r.article.as_str(), r.times),
        (183, "q274", "1102", 2)
    );

    let (_, train) = parsed("train");
    let s = QuestionsStats::of([&train]);
    assert_eq!(s.questions, 886);
    assert_eq!((s.pairs_listed, s.pairs), (5_784, 5_784));
    assert_eq!(s.articles, 1_534);
    assert_eq!(s.subcategories, 49);
    assert_eq!(
        s.categories,
        categories(&[
            ("Argent", 141),
            ("Etrangers", 50),
            ("Famille", 272),
            ("Justice", 121),
            ("Logement", 238),
            ("Protection sociale", 35),
            ("Travail", 29),
        ])
    );
    assert_eq!(s.relevant_per_question.unwrap().max, 109.0);
    assert!(train.repeated.is_empty());

    let files: BTreeMap<String, (PathBuf, QuestionsFile)> = [
        ("test".to_owned(), parsed("test")),
        ("train".to_owned(), parsed("train")),
    ]
    .into();
    let report = questions_report(&files);
    // DATA.md §4: 1,108 questions in 7 categories.
    assert_eq!(report.all.questions, 1_108);
    assert_eq!(report.all.categories.len(), 7);
    assert_eq!(report.all.pairs_listed, 6_844);
    assert_eq!(report.all.articles, 1_611);
    assert_eq!(report.questions_in_several_files, 0);
    assert_eq!(report.articles_in_several_files, 414);
}

#[test]
fn bom_crlf_and_spaced_id_lists_read_the_same() {
    for split in ["test", "train"] {
        let (p, t) = real(split);
        let plain = parse_questions(&p, &t).unwrap();
        // Spaces after the commas of every quoted id list (`"947, 948"`), CRLF, a BOM.
        let mut variant = String::from("\u{feff}");
        for line in t.lines() {
            let (head, ids) = match line.rsplit_once(",\"") {
                Some((h, ids)) if ids.ends_with('"') => (h, ids.replace(',', ", ")),
                _ => {
                    variant.push_str(line);
                    variant.push_str("\r\n");
                    continue;
                }
            };
            variant.push_str(&format!("{head},\" {ids}\r\n"));
        }
        assert_ne!(variant, t);
        let other = parse_questions(&p, &variant).unwrap();
        assert_eq!(other, plain, "{split}");
    }
}

#[test]
fn broken_rows_of_the_real_file_name_file_and_line() {
    let (p, t) = real("test");
    let mut lines: Vec<String> = t.lines().map(str::to_owned).collect();
    // Every cited article known but 931: the first question citing it is refused, at its line.
    let (_, f) = parsed("test");
    let known_ids: Vec<ArticleId> = f
        .questions
        .iter()
        .flat_map(|q| q.articles.iter().cloned())
        .filter(|a| a.as_str() != "931")
        .collect();
    let known: BTreeSet<&ArticleId> = known_ids.iter().collect();
    let (q, line) = f
        .questions
        .iter()
        .zip(&f.lines)
        .find(|(q, _)| q.articles.iter().any(|a| a.as_str() == "931"))
        .unwrap();
    let err = read_questions(&p, &t, &known).unwrap_err().to_string();
    assert!(
        err.ends_with(&format!(
            "questions_fr_test.csv:{line}: question {} cites article 931, which is not in the articles file",
            q.id
        )),
        "{err}"
    );

    // Line 10 given the id of line 2.
    let first_id = lines[1].split(',').next().unwrap().to_owned();
    let rest = lines[9].split_once(',').unwrap().1.to_owned();
    lines[9] = format!("{first_id},{rest}");
    let err = parse_questions(&p, &(lines.join("\n") + "\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("questions_fr_test.csv:10: question id"), "{err}");
    assert!(err.ends_with("appears twice (first on line 2)"), "{err}");

    // A stray quote opening the category of line 50: the record starting there is refused.
    let (p, t) = real("test");
    let mut lines: Vec<String> = t.lines().map(str::to_owned).collect();
    let (id, rest) = lines[49].split_once(',').unwrap();
    lines[49] = format!("{id},\"{rest}");
    let err = parse_questions(&p, &(lines.join("\n") + "\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("questions_fr_test.csv:50:"), "{err}");
}
