//! Properties checked, on generated corpora whose chunks keep meeting new terms and that repeat ids
//! across chunk borders (French and English chains):
//! - a build on 2, 3 or 7 workers is the one-thread build: the same term ids, surface cache, document
//!   terms and lengths, postings and total length; and the one-thread build gives the term ids, term
//!   frequencies and lengths of the straightforward build it replaced (terms numbered by first
//!   occurrence of `Analyzer::analyze`'s output, a repeated id keeping its first text);
//! - every score [`Bm25Index::search`] returns is bit for bit [`Bm25Index::score`]'s for that document,
//!   for several (k1, b) asked in turn (the cached length norms follow the parameters), and the
//!   results of two builds on different worker counts are bit for bit the same;
//! - [`Bm25Index::search_batch`] on 1, 2, 3 or 8 workers returns, in query order, bit for bit what
//!   `search` returns per query, empty, stop-word-only and unknown queries included, and documents
//!   copied under other ids (tied scores, ordered by id) among the results;
//! - [`Bm25Index::query_terms`] (surface cache, with analysis on a miss) equals analysing the query and
//!   looking its terms up in the vocabulary.

use std::collections::HashMap;

use lexbench_core::rng::SplitMix64;
use lexbench_core::{DocId, Hit};

use super::*;
use crate::sparse::Language;

/// (ids, texts): 300 documents; document i draws from the first 40 + 4i words of a generated
/// vocabulary, so every chunk meets words no earlier chunk had; every 13th document reuses the id of
/// the document 60 earlier (often in another chunk when built on 3 workers), with text of its own.
fn corpus(language: Language, seed: u64) -> (Vec<DocId>, Vec<String>) {
    let mut rng = SplitMix64::new(seed);
    let syllables: &[&str] = match language {
        Language::French => &[
            "la", "ré", "con", "tri", "bu", "tion", "dé", "pen", "sé", "ar", "ti", "cle", "œu",
        ],
        Language::English | Language::Plain => &[
            "the", "court", "ing", "s", "ed", "ment", "judg", "law", "ful", "right", "of",
        ],
    };
    let extra: &[&str] = match language {
        Language::French => &["l'", "d\u{2019}", "à", "de", "Les", "ÉTAT", "1er", "art.", ","],
        Language::English | Language::Plain => &["'s", "\u{2019}s", "The", "of", "COURT", "8", "§", ";", "İ"],
    };
    let words: Vec<String> = (0..2000)
        .map(|_| {
            let n = 1 + rng.below(3);
            (0..n).map(|_| syllables[rng.below(syllables.len())]).collect()
        })
        .collect();
    let (mut ids, mut texts) = (Vec::new(), Vec::new());
    for i in 0..300 {
        let reach = (40 + 4 * i).min(words.len());
        let len = rng.below(40);
        let mut text = String::new();
        for _ in 0..len {
            let w = if rng.below(5) == 0 {
                extra[rng.below(extra.len())].to_owned()
            } else {
                let w = &words[rng.below(reach)];
                if rng.below(7) == 0 {
                    w.to_uppercase()
                } else {
                    w.clone()
                }
            };
            text += &w;
            text.push(if rng.below(9) == 0 { '\'' } else { ' ' });
        }
        let id = if i % 13 == 12 && i >= 60 {
            format!("d{}", i - 60)
        } else {
            format!("d{i}")
        };
        ids.push(DocId::new(id).unwrap());
        texts.push(text);
    }
    (ids, texts)
}

fn build(language: Language, ids: &[DocId], texts: &[String], threads: usize) -> Bm25Index {
    Bm25Index::build_with_threads(
        Analyzer::new(language),
        ids.iter().zip(texts.iter().map(String::as_str)),
        Some(threads),
    )
}

fn queries(texts: &[String]) -> Vec<String> {
    let mut q: Vec<String> = texts
        .iter()
        .step_by(7)
        .map(|t| t.split(' ').take(6).collect::<Vec<_>>().join(" "))
        .collect();
    q.extend(
        [
            "",
            "of the",
            "de la l'",
            "zzzz qqqq",
            "Court court COURT courts",
            "larebu larebu tri",
        ]
        .map(String::from),
    );
    q
}

/// A hit list as (doc id, score bits): equality is bit for bit.
fn bits(hits: &[Hit]) -> Vec<(String, u64)> {
    hits.iter()
        .map(|h| (h.doc.as_str().to_owned(), h.score.to_bits()))
        .collect()
}

#[test]
fn parallel_build_is_the_one_thread_build() {
    for (language, seed) in [
        (Language::French, 1),
        (Language::English, 2),
        (Language::French, 3),
    ] {
        let (ids, texts) = corpus(language, seed);
        let one = build(language, &ids, &texts, 1);

        // The straightforward build: first id wins, terms numbered by first occurrence.
        let analyzer = Analyzer::new(language);
        let mut vocab: HashMap<String, TermId> = HashMap::new();
        let mut seen: HashMap<&DocId, ()> = HashMap::new();
        let mut docs = Vec::new();
        for (id, text) in ids.iter().zip(&texts) {
            if seen.insert(id, ()).is_some() {
                continue;
            }
            let mut counts: HashMap<TermId, u32> = HashMap::new();
            let terms = analyzer.analyze(text);
            for term in &terms {
                let next = vocab.len() as TermId;
                *counts
                    .entry(*vocab.entry(term.clone()).or_insert(next))
                    .or_insert(0) += 1;
            }
            let mut terms_tf: Vec<(TermId, u32)> = counts.into_iter().collect();
            terms_tf.sort_unstable();
            docs.push(DocTerms {
                terms: terms_tf,
                len: terms.len() as u32,
            });
        }
        assert!(seen.len() < ids.len(), "the corpus repeats ids");
        assert_eq!(
            one.vocab
                .iter()
                .map(|(t, i)| (t.clone(), *i))
                .collect::<HashMap<_, _>>(),
            vocab
        );
        assert_eq!(one.docs, docs);
        assert_eq!(one.ids.len(), seen.len());

        for threads in [2, 3, 7] {
            let many = build(language, &ids, &texts, threads);
            assert_eq!(many.vocab, one.vocab, "{language} on {threads} workers: term ids");
            assert_eq!(
                many.surface, one.surface,
                "{language} on {threads}: surface cache"
            );
            assert_eq!(many.ids, one.ids);
            assert_eq!(many.position, one.position);
            assert_eq!(many.id_rank, one.id_rank);
            assert_eq!(many.docs, one.docs, "{language} on {threads}: documents");
            assert_eq!(many.postings, one.postings, "{language} on {threads}: postings");
            assert_eq!(many.total_len, one.total_len);
            let params = Bm25Params::default();
            for q in queries(&texts) {
                assert_eq!(
                    bits(&many.search(&q, &params, 50)),
                    bits(&one.search(&q, &params, 50)),
                    "{language} on {threads}: {q:?}"
                );
            }
        }
    }
}

#[test]
fn search_scores_are_score_bit_for_bit_under_changing_params() {
    let (ids, texts) = corpus(Language::French, 4);
    let index = build(Language::French, &ids, &texts, 3);
    let settings = [
        Bm25Params::default(),
        Bm25Params::robertson(),
        Bm25Params::default(),
        Bm25Params {
            k1: 1.5,
            b: 0.75,
            ..Bm25Params::default()
        },
        Bm25Params {
            k1: 0.0,
            b: 1.0,
            ..Bm25Params::default()
        },
    ];
    let mut hits = 0;
    for params in &settings {
        for q in queries(&texts) {
            let terms = index.query_terms(&q);
            for h in index.search(&q, params, usize::MAX >> 1) {
                let d = index.doc_number(&h.doc).unwrap();
                let want = index.score(d, &terms, &index.corpus_stats(), params);
                assert_eq!(
                    h.score.to_bits(),
                    want.to_bits(),
                    "{q:?} k1={} b={}",
                    params.k1,
                    params.b
                );
                hits += 1;
            }
        }
    }
    assert!(hits > 1000, "{hits}");
}

#[test]
fn search_batch_is_search_per_query() {
    for (language, seed) in [(Language::French, 5), (Language::English, 6)] {
        let (mut ids, mut texts) = corpus(language, seed);
        // Copies under other ids (some sorting before, some after the original): equal scores,
        // which trec_eval order breaks by id.
        for i in (0..texts.len()).step_by(7) {
            ids.push(DocId::new(format!("{}{i}", if i % 2 == 0 { "0" } else { "z" })).unwrap());
            texts.push(texts[i].clone());
        }
        let index = build(language, &ids, &texts, 2);
        let owned = queries(&texts);
        let qs: Vec<&str> = owned.iter().map(String::as_str).collect();
        for params in [Bm25Params::default(), Bm25Params::robertson()] {
            for k in [1, 10, 1000] {
                let want: Vec<_> = qs.iter().map(|q| bits(&index.search(q, &params, k))).collect();
                // k = 1000 keeps every match (the corpus is smaller): the heap's unbounded case.
                assert!(
                    k > index.len() || want.iter().any(|h| h.len() == k),
                    "some query fills k"
                );
                assert!(want.iter().any(Vec::is_empty), "some query matches nothing");
                // Equal scores, ordered by id, inside the results (and so at some cut-offs).
                assert!(
                    k < 1000 || want.iter().any(|h| h.windows(2).any(|w| w[0].1 == w[1].1)),
                    "some query has tied scores"
                );
                for threads in [1, 2, 3, 8] {
                    let got = index.search_batch_with_threads(&qs, &params, k, threads);
                    let got: Vec<_> = got.iter().map(|h| bits(h)).collect();
                    assert_eq!(got, want, "{language}, k = {k}, {threads} workers");
                }
                let got: Vec<_> = index
                    .search_batch(&qs, &params, k)
                    .iter()
                    .map(|h| bits(h))
                    .collect();
                assert_eq!(got, want);
            }
        }
        assert!(index.search_batch(&[], &Bm25Params::default(), 10).is_empty());
        assert_eq!(
            index.search_batch(&qs, &Bm25Params::default(), 0),
            vec![Vec::new(); qs.len()]
        );
    }
}

#[test]
fn query_terms_from_the_cache_equal_analysis() {
    let (ids, texts) = corpus(Language::English, 7);
    let index = build(Language::English, &ids, &texts, 3);
    let analyzer = Analyzer::new(Language::English);
    // Surface forms the corpus lacks but whose stems it has ("judgmentful", "COURTING"), so the
    // miss path finds terms; and stop words, possessives, unknown words.
    let mut qs = queries(&texts);
    qs.extend(
        [
            "judgmentful COURTING courted rights's the court’s",
            "Lawfulness 8 § İ",
        ]
        .map(String::from),
    );
    let mut misses = 0;
    for q in &qs {
        let mut want: Vec<TermId> = analyzer
            .analyze(q)
            .iter()
            .filter_map(|t| index.vocab.get(t).copied())
            .collect();
        want.sort_unstable();
        assert_eq!(index.query_terms(q), run_lengths(&want), "{q:?}");
        let mut buf = String::new();
        analyzer.for_each_token(q, &mut buf, |t| {
            if !index.surface.contains_key(t)
                && analyzer.term(t).is_some_and(|t| index.vocab.contains_key(&t))
            {
                misses += 1;
            }
        });
    }
    assert!(misses > 0, "the miss path is exercised");
}
