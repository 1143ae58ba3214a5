//! The French chain on real Belgian statutory text: the 77 BSARD articles of
//! `$LEXBENCH_FIXTURES/bsard/articles_fr_fragment.jsonl` (Code civil; 42 of them cut at about 500
//! characters).
//!
//! Properties checked, as the analyzer's documentation promises them:
//! - every article gives a non-empty list of terms, each lower-case, without an apostrophe, already
//!   folded to ASCII (folding changes nothing), and none of them a stop word, accented or not;
//! - elisions split: after every `l'`, `d'`, `qu'`, `n'`, `s'`, `j'`, `c'`, `m'`, `t'` (straight or
//!   typographic apostrophe) the elided article or pronoun is dropped and the word that follows gives
//!   the same terms as the word alone;
//! - the same text typed without accents gives mostly the same terms (measured: 92.5% of them);
//! - BM25 over the 77 articles (Anserini's k1 = 0.9, b = 0.4, corpus statistics) ranks an article
//!   first for a query of ten consecutive words of its own text (taken at a third of the text) for
//!   most articles (measured: 67/77; 66/77 when the query is typed without accents; 73/77 in the top
//!   3; all of them somewhere); the floors are the measured figures less one or two articles.

use lexbench_core::DocId;
use serde::Deserialize;

use super::*;

#[derive(Deserialize)]
struct FragmentArticle {
    bsard_id: u64,
    text: String,
    truncated: bool,
}

fn articles() -> Vec<FragmentArticle> {
    let path = lexbench_core::testing::fixture("bsard/articles_fr_fragment.jsonl");
    let arts: Vec<FragmentArticle> = lexbench_core::io::read_jsonl(&path).unwrap();
    assert_eq!(arts.len(), 77);
    assert_eq!(arts.iter().filter(|a| a.truncated).count(), 42);
    arts
}

const ELIDED: &[&str] = &["l", "d", "qu", "n", "s", "j", "c", "m", "t"];

#[test]
fn every_article_gives_folded_lower_case_terms_without_stop_words() {
    let a = Analyzer::new(Language::French);
    let stop: std::collections::HashSet<String> = FRENCH_STOP_WORDS
        .iter()
        .flat_map(|w| [(*w).to_owned(), fold_accents(w)])
        .collect();
    let (mut terms, mut stop_tokens) = (0, 0);
    for art in articles() {
        let t = a.analyze(&art.text);
        assert!(!t.is_empty(), "article {} gives no term", art.bsard_id);
        terms += t.len();
        for term in &t {
            assert_eq!(*term, term.to_lowercase(), "article {}", art.bsard_id);
            assert_eq!(*term, fold_accents(term), "article {}: not folded", art.bsard_id);
            assert!(
                !term.contains(['\'', '\u{2019}']),
                "article {}: {term}",
                art.bsard_id
            );
            assert!(
                !ELIDED.contains(&term.as_str()),
                "article {}: {term}",
                art.bsard_id
            );
        }
        // A stop word (accented or not, any case) gives no term. (A stem may still equal one:
        // `leurs` → `leur`, as in Lucene, where the stop filter also runs before the stemmer.)
        for token in art.text.split(|c: char| !c.is_alphanumeric()) {
            let lower = token.to_lowercase();
            if stop.contains(&lower) || stop.contains(&fold_accents(&lower)) {
                stop_tokens += 1;
                assert!(a.analyze(token).is_empty(), "article {}: {token}", art.bsard_id);
                assert!(
                    a.analyze(&fold_accents(token)).is_empty(),
                    "article {}: {token}",
                    art.bsard_id
                );
            }
        }
    }
    eprintln!("{terms} terms; {stop_tokens} stop-word tokens dropped");
    assert!(terms > 3_000, "{terms} terms");
    assert!(stop_tokens > 1_000, "{stop_tokens} stop-word tokens");
}

#[test]
fn elisions_split_and_the_word_after_keeps_its_terms() {
    let a = Analyzer::new(Language::French);
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for art in articles() {
        let terms = a.analyze(&art.text);
        for word in art
            .text
            .split(|c: char| c.is_whitespace() || ",;:.()«»".contains(c))
        {
            let Some((head, rest)) = word.split_once(['\'', '\u{2019}']) else {
                continue;
            };
            let head = head.to_lowercase();
            if !ELIDED.contains(&head.as_str()) || rest.is_empty() {
                continue;
            }
            *seen.entry(head.clone()).or_default() += 1;
            // `l'article` gives exactly the terms of `article`, and those are among the article's.
            assert_eq!(
                a.analyze(word),
                a.analyze(rest),
                "article {}: {word}",
                art.bsard_id
            );
            for t in a.analyze(rest) {
                assert!(terms.contains(&t), "article {}: {word} → {t}", art.bsard_id);
            }
        }
    }
    eprintln!("elisions checked: {seen:?}");
    // The fragment's elisions, by clitic: l' and d' are everywhere, qu' and n' common.
    for clitic in ["l", "d", "qu", "n"] {
        assert!(seen.get(clitic).copied().unwrap_or(0) >= 5, "{clitic}': {seen:?}");
    }
    assert!(seen.values().sum::<usize>() >= 300, "{seen:?}");
}

#[test]
fn text_typed_without_accents_gives_almost_the_same_terms() {
    // The stemmer runs on the accented word, so an unaccented word may stem differently: the
    // analyzer's "a question typed without accents still matches" holds for most terms, not all.
    let a = Analyzer::new(Language::French);
    let (mut same, mut total) = (0usize, 0usize);
    for art in articles() {
        let accented = a.analyze(&art.text);
        let plain = a.analyze(&fold_accents(&art.text));
        assert_eq!(accented.len(), plain.len(), "article {}", art.bsard_id);
        total += accented.len();
        same += accented.iter().zip(&plain).filter(|(x, y)| x == y).count();
    }
    let share = same as f64 / total as f64;
    eprintln!("terms unchanged without accents: {same}/{total} = {share:.4}");
    // Measured: 3,052 of 3,299 terms (92.5%); the others are stems the Snowball rules cut differently
    // without the accent.
    assert!(share >= 0.92, "{same}/{total}");
}

/// Ten consecutive words of `text` starting at a third of it (all of it when shorter).
fn query_of(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let start = (words.len() / 3).min(words.len().saturating_sub(10));
    words[start..(start + 10).min(words.len())].join(" ")
}

#[test]
fn bm25_finds_each_article_from_ten_of_its_words() {
    let arts = articles();
    let ids: Vec<DocId> = arts
        .iter()
        .map(|a| DocId::new(a.bsard_id.to_string()).unwrap())
        .collect();
    let index = Bm25Index::build(
        Analyzer::new(Language::French),
        ids.iter().zip(arts.iter().map(|a| a.text.as_str())),
    );
    let params = Bm25Params::default();
    let (mut first, mut first_plain) = (0, 0);
    let (mut missed, mut in_top3) = (Vec::new(), 0);
    for (id, art) in ids.iter().zip(&arts) {
        let q = query_of(&art.text);
        let top = |q: &str| index.search(q, &params, 1).first().map(|h| h.doc.clone());
        let ranked = index.search(&q, &params, 77);
        let rank = ranked.iter().position(|h| h.doc == *id).map_or(0, |r| r + 1);
        if (1..=3).contains(&rank) {
            in_top3 += 1;
        }
        if rank == 1 {
            first += 1;
        } else {
            missed.push(format!("{id} at {rank} (first {}): {q}", ranked[0].doc));
        }
        if top(&fold_accents(&q)).as_ref() == Some(id) {
            first_plain += 1;
        }
    }
    eprintln!(
        "ranked first: {first}/77 ({first_plain}/77 without accents), top 3: {in_top3}/77; missed {missed:#?}"
    );
    // Measured: 67/77 first (87.0%), 66/77 without accents, 73/77 in the top 3, every article in the top
    // 7. The misses are articles of the judicial-protection chapter (Art. 492-502), whose formulaic
    // phrases ("la personne à l'égard de laquelle la mesure de protection judiciaire …") recur in
    // their neighbours.
    assert!(first >= 66, "{first}/77 ranked first; missed {missed:#?}");
    assert!(first_plain >= 64, "{first_plain}/77 ranked first without accents");
    assert!(in_top3 >= 72, "{in_top3}/77 in the top 3");
    assert!(!missed.iter().any(|m| m.contains(" at 0 ")), "{missed:#?}");
}
