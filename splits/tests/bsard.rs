//! BSARD on the embedded fictional sample (`sample/bsard`, later CSV layout).
//!
//! Properties checked: every article and question is read; the hierarchy columns become the article's
//! path; positions count within each code; the legislative graph has one node per code, level and
//! article with a tree of edges, and the sequential view links consecutive articles of a code; two
//! builds are byte-identical; a question citing an unknown article is refused naming file and line;
//! the build carves a seeded validation split (10% of the training questions) and the rest
//! (`train-fit`) from `train`, which stays whole.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lexbench_splits::bsard::{
    FIT_SPLIT, VALIDATION_SPLIT, carve_validation, graph, read_articles, read_questions, write_bsard,
};

fn sample(name: &str) -> (std::path::PathBuf, String) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sample/bsard")
        .join(name);
    let t = std::fs::read_to_string(&p).unwrap();
    (p, t)
}

#[test]
fn the_sample_statute_book() {
    let (ap, at) = sample("articles_fr.csv");
    let arts = read_articles(&ap, &at).unwrap();
    // scripts/make_sample.py: 26 topics (one chapter each) × 3 sections × 3 articles = 234 articles.
    assert_eq!(arts.len(), 234);
    assert_eq!(
        arts[0].path.len(),
        3,
        "book, chapter, section: {:?}",
        arts[0].path
    );
    let codes: BTreeSet<&str> = arts.iter().map(|a| a.code.as_str()).collect();
    assert_eq!(codes.len(), 3);
    for code in &codes {
        let pos: Vec<u32> = arts
            .iter()
            .filter(|a| a.code == *code)
            .map(|a| a.position)
            .collect();
        assert_eq!(pos, (0..pos.len() as u32).collect::<Vec<_>>(), "{code}");
    }
    let g = graph(&arts);
    // Nodes: 3 codes + 6 books + 26 chapters + 78 sections + 234 articles; a tree: nodes − roots edges.
    assert_eq!(g.nodes.len(), 3 + 6 + 26 + 78 + 234);
    assert_eq!(g.hierarchy.len(), g.nodes.len() - 3);
    assert_eq!(g.sequence.len(), 234 - 3);

    let known = arts.iter().map(|a| &a.id).collect();
    let mut splits = BTreeMap::new();
    for (file, split) in [
        ("questions_fr_train.csv", "train"),
        ("questions_fr_test.csv", "test"),
    ] {
        let (p, t) = sample(file);
        splits.insert(split.to_owned(), read_questions(&p, &t, &known).unwrap());
    }
    assert_eq!(splits["train"].len() + splits["test"].len(), 52);

    let base = lexbench_core::testing::scratch_root().join(format!("lexbench-bsard-{}", std::process::id()));
    let one = write_bsard(&base.join("one"), "bsard", &arts, &splits).unwrap();
    let two = write_bsard(&base.join("two"), "bsard", &arts, &splits).unwrap();
    assert_eq!(one.manifest.files, two.manifest.files);
    assert!(one.manifest.files.contains_key("graph.json"));

    let (p, t) = sample("questions_fr_test.csv");
    let broken = t.replacen(",\"", ",\"99999,", 1);
    let err = read_questions(&p, &broken, &known).unwrap_err();
    assert!(err.to_string().contains("questions_fr_test.csv:2:"), "{err}");
    assert!(err.to_string().contains("99999"), "{err}");
    let _ = std::fs::remove_dir_all(&base);
}

/// Issue 29, item 6: a question in both the training and the test file (the same id, or the same
/// text under another id) is a leak: the build refuses it, naming the question, and writes nothing.
#[test]
fn a_question_in_two_splits_is_refused() {
    let (ap, at) = sample("articles_fr.csv");
    let arts = read_articles(&ap, &at).unwrap();
    let known = arts.iter().map(|a| &a.id).collect();
    let read = |file: &str| {
        let (p, t) = sample(file);
        read_questions(&p, &t, &known).unwrap()
    };
    let (train, test) = (read("questions_fr_train.csv"), read("questions_fr_test.csv"));
    let base =
        lexbench_core::testing::scratch_root().join(format!("lexbench-bsard-leak-{}", std::process::id()));
    for (case, leaked) in [
        ("same id", train[0].clone()),
        ("same text", {
            let mut q = train[1].clone();
            q.id = lexbench_core::QueryId::new("leak-9999").unwrap();
            q.text = format!("  {}  ", q.text.to_uppercase());
            q
        }),
    ] {
        let mut t = test.clone();
        t.push(leaked.clone());
        let splits = BTreeMap::from([("train".to_owned(), train.clone()), ("test".to_owned(), t)]);
        let dir = base.join("bsard");
        let err = write_bsard(&dir, "bsard", &arts, &splits)
            .unwrap_err()
            .to_string();
        assert!(err.contains(leaked.id.as_str()), "{case}: {err}");
        assert!(!dir.exists(), "{case}: nothing written");
    }
    std::fs::remove_dir_all(&base).ok();
}

/// Issue 54, item 5: a training question appended to the test file in another Unicode form is the
/// same question: decomposed (NFD: `e` + U+0301 for `é`), and in compatibility forms (full-width
/// letters, a ligature, a no-break space) with other case and spacing, and with default-ignorable
/// code points in it (issue 68, item 8). The certificate compares NFC-folded text and NFKC,
/// case-folded, whitespace-collapsed text without default-ignorables, and refuses all three.
#[test]
fn a_question_leaked_in_another_unicode_form_is_refused() {
    let (ap, at) = sample("articles_fr.csv");
    let arts = read_articles(&ap, &at).unwrap();
    let known = arts.iter().map(|a| &a.id).collect();
    let read = |file: &str| {
        let (p, t) = sample(file);
        read_questions(&p, &t, &known).unwrap()
    };
    let (train, test) = (read("questions_fr_train.csv"), read("questions_fr_test.csv"));
    // A training question with an accented letter, and one with an `a` and a space.
    let accented = train
        .iter()
        .find(|q| q.text.contains(['é', 'è', 'à', 'ç']))
        .expect("an accented training question");
    let nfd: String = accented
        .text
        .chars()
        .flat_map(|c| match c {
            'é' => vec!['e', '\u{301}'],
            'è' => vec!['e', '\u{300}'],
            'à' => vec!['a', '\u{300}'],
            'ç' => vec!['c', '\u{327}'],
            c => vec![c],
        })
        .collect();
    assert_ne!(nfd, accented.text);
    let plain = train
        .iter()
        .find(|q| q.id != accented.id && q.text.contains('a') && q.text.contains(' '))
        .expect("a training question");
    let compat = plain
        .text
        .to_uppercase()
        .replacen('A', "\u{ff21}", 1)
        .replacen(' ', "\u{a0} ", 1)
        .replace("FI", "\u{fb01}");
    assert_ne!(compat, plain.text);
    // Issue 68, item 8: zero-width spaces after its spaces, a word joiner, a soft hyphen, a
    // variation selector: default-ignorable code points, which render as nothing.
    let invisible = plain
        .text
        .replace(' ', " \u{200b}")
        .replacen('a', "a\u{2060}", 1)
        .replacen('e', "e\u{ad}\u{fe0f}", 1);
    assert_ne!(invisible, plain.text);
    let base = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-bsard-unicode-leak-{}", std::process::id()));
    for (case, text, of) in [
        ("NFD", nfd, accented),
        ("NFKC", compat, plain),
        ("default-ignorable", invisible, plain),
    ] {
        let mut q = of.clone();
        q.id = lexbench_core::QueryId::new("leak-9998").unwrap();
        q.text = text;
        let mut t = test.clone();
        t.push(q);
        let splits = BTreeMap::from([("train".to_owned(), train.clone()), ("test".to_owned(), t)]);
        let dir = base.join("bsard");
        let err = write_bsard(&dir, "bsard", &arts, &splits)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("leak-9998") && err.contains(of.id.as_str()),
            "{case}: {err}"
        );
        assert!(!dir.exists(), "{case}: nothing written");
    }
    std::fs::remove_dir_all(&base).ok();
}

/// Issue 31, item 12: model selection on BSARD. The build writes `validation` (10% of the training
/// questions, rounded: 4 of the sample's 39, drawn with a stated seed) and `train-fit` (the other
/// 35), disjoint, together the training questions; `train` and `test` are unchanged; the draw does
/// not depend on the questions' order.
#[test]
fn a_seeded_validation_split_is_carved_from_train() {
    let (ap, at) = sample("articles_fr.csv");
    let arts = read_articles(&ap, &at).unwrap();
    let known = arts.iter().map(|a| &a.id).collect();
    let mut splits = BTreeMap::new();
    for (file, split) in [
        ("questions_fr_train.csv", "train"),
        ("questions_fr_test.csv", "test"),
    ] {
        let (p, t) = sample(file);
        splits.insert(split.to_owned(), read_questions(&p, &t, &known).unwrap());
    }
    let base =
        lexbench_core::testing::scratch_root().join(format!("lexbench-bsard-val-{}", std::process::id()));
    let written = write_bsard(&base, "bsard", &arts, &splits).unwrap();
    assert_eq!(
        written.derived,
        BTreeMap::from([(VALIDATION_SPLIT.to_owned(), 4), (FIT_SPLIT.to_owned(), 35)])
    );
    let ids = |split: &str| -> BTreeSet<String> {
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(base.join("splits").join(format!("{split}.json"))).unwrap(),
        )
        .unwrap();
        v["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    let (train, val, fit) = (ids("train"), ids(VALIDATION_SPLIT), ids(FIT_SPLIT));
    assert_eq!(train.len(), 39);
    assert!(val.is_disjoint(&fit));
    assert_eq!(val.union(&fit).cloned().collect::<BTreeSet<_>>(), train);
    assert!(val.is_disjoint(&ids("test")));
    for split in [VALIDATION_SPLIT, FIT_SPLIT] {
        assert!(base.join("qrels").join(format!("{split}.tsv")).is_file());
    }
    let card = std::fs::read_to_string(base.join("card.md")).unwrap();
    assert!(
        card.contains("validation (4 questions) carved from train"),
        "{card}"
    );
    // The same questions whatever the order of the training file.
    let mut reversed = splits["train"].clone();
    reversed.reverse();
    let key = |qs: Vec<lexbench_splits::bsard::Question>| -> BTreeSet<String> {
        qs.into_iter().map(|q| q.id.to_string()).collect()
    };
    assert_eq!(
        key(carve_validation(&reversed).0),
        key(carve_validation(&splits["train"]).0)
    );
    let _ = std::fs::remove_dir_all(&base);
}
