//! Properties checked:
//! - scores equal bm25s (`method="lucene"`, float64) on a small corpus for four (k1, b) settings, to
//!   1e-12 relative (reference: `python3 scripts/bm25_reference.py > baselines/tests/data/bm25_golden.json`,
//!   bm25s 0.3.16);
//! - the top-k heap returns exactly the k best in trec_eval order, ties broken by doc id descending,
//!   the same as sorting everything;
//! - pool ranking with pool statistics equals indexing the pool alone; with corpus statistics it
//!   equals the corpus scores of those documents; every pool document is ranked;
//! - parameters: defaults 0.9/0.4, ranges checked (`Error::Param`), unknown TOML keys rejected.

use lexbench_core::trec::trec_order;
use lexbench_core::{DocId, Hit};

use super::*;

fn golden() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bm25_golden.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ids(n: usize) -> Vec<DocId> {
    (0..n).map(|i| DocId::new(format!("d{i}")).unwrap()).collect()
}

#[test]
fn scores_match_bm25s_lucene() {
    let g = golden();
    let corpus: Vec<&str> = g["corpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let analyzer = Analyzer::new(Language::English);
    // The golden corpus is pre-analysed: the English chain must leave it unchanged.
    for text in &corpus {
        assert_eq!(analyzer.analyze(text).join(" "), *text);
    }
    let docs = ids(corpus.len());
    let index = Bm25Index::build(analyzer, docs.iter().zip(corpus.iter().copied()));
    let all: Vec<u32> = (0..corpus.len() as u32).collect();
    let mut checked = 0;
    for case in g["cases"].as_array().unwrap() {
        let params = Bm25Params {
            k1: case["k1"].as_f64().unwrap(),
            b: case["b"].as_f64().unwrap(),
            ..Bm25Params::default()
        };
        let query = case["query"].as_str().unwrap();
        let terms = index.query_terms(query);
        let want: Vec<f64> = case["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        for (d, w) in all.iter().zip(&want) {
            let got = index.score(*d, &terms, &index.corpus_stats(), &params);
            assert!(
                (got - w).abs() <= 1e-12 * w.abs().max(1.0),
                "{query} k1={} b={} doc {d}: {got} vs {w}",
                params.k1,
                params.b
            );
            checked += 1;
        }
        // The accumulator path (search) gives the same numbers for the matching documents.
        for hit in index.search(query, &params, 100) {
            let d = index.doc_number(&hit.doc).unwrap() as usize;
            assert!((hit.score - want[d]).abs() <= 1e-12 * want[d].max(1.0));
            assert!(want[d] > 0.0);
        }
        assert_eq!(
            index.search(query, &params, 100).len(),
            want.iter().filter(|w| **w > 0.0).count()
        );
    }
    assert_eq!(checked, 4 * 5 * 8);
}

#[test]
fn heap_top_k_is_the_sorted_prefix_with_ties_by_doc_id() {
    // Many equal scores: documents of identical text.
    let texts: Vec<String> = (0..40)
        .map(|i| {
            if i % 3 == 0 {
                "court law".into()
            } else if i % 3 == 1 {
                "court".into()
            } else {
                "law state".into()
            }
        })
        .collect();
    let docs = ids(texts.len());
    let index = Bm25Index::build(
        Analyzer::new(Language::English),
        docs.iter().zip(texts.iter().map(String::as_str)),
    );
    let params = Bm25Params::default();
    let full = index.search("court law", &params, usize::MAX >> 1);
    let mut sorted = full.clone();
    sorted.sort_by(trec_order);
    assert_eq!(full, sorted, "returned in trec_eval order");
    for k in [1, 5, 13, 14, 27, 40] {
        assert_eq!(
            index.search("court law", &params, k),
            full[..k.min(full.len())].to_vec(),
            "k = {k}"
        );
    }
    // Within equal scores, larger doc ids come first ("d9" > "d39" > "d36" as strings).
    let top: Vec<&str> = full.iter().take(3).map(|h| h.doc.as_str()).collect();
    assert_eq!(top, vec!["d9", "d6", "d39"]);
    assert!(index.search("court", &params, 0).is_empty());
}

#[test]
fn pool_statistics_equal_a_pool_only_index() {
    let texts = [
        "court law state",
        "court court",
        "law home life",
        "state right",
        "court right law",
        "home",
    ];
    let docs = ids(texts.len());
    let index = Bm25Index::build(Analyzer::new(Language::English), docs.iter().zip(texts));
    let pool = [1u32, 2, 4, 5];
    let alone = Bm25Index::build(
        Analyzer::new(Language::English),
        pool.iter().map(|&d| (&docs[d as usize], texts[d as usize])),
    );
    let params = Bm25Params::default();
    let pooled = index.search_pool("court law", &pool, &params, IdfScope::Pool, 100);
    assert_eq!(pooled.len(), pool.len(), "every pool document is ranked");
    let alone_hits = alone.search("court law", &params, 100);
    for h in &alone_hits {
        let p = pooled.iter().find(|x| x.doc == h.doc).unwrap();
        assert!((p.score - h.score).abs() < 1e-12);
    }
    assert_eq!(
        pooled.last().unwrap(),
        &Hit {
            doc: docs[5].clone(),
            score: 0.0
        }
    );
    // Corpus scope: the corpus scores of the pool's documents.
    let corpus_scoped = index.search_pool("court law", &pool, &params, IdfScope::Corpus, 100);
    let corpus_hits = index.search("court law", &params, 100);
    for h in corpus_scoped.iter().filter(|h| h.score > 0.0) {
        assert_eq!(
            corpus_hits.iter().find(|x| x.doc == h.doc).unwrap().score,
            h.score
        );
    }
    // And the two scopes differ here (df of "court" is 3/6 in the corpus, 2/4 in the pool; N differs).
    assert_ne!(pooled[0].score, corpus_scoped[0].score);
}

#[test]
fn params_defaults_ranges_and_unknown_keys() {
    let p = Bm25Params::default();
    assert_eq!((p.k1, p.b, p.top_k, p.idf), (0.9, 0.4, 1000, IdfScope::Pool));
    let r = Bm25Params::robertson();
    assert_eq!((r.k1, r.b), (1.2, 0.75));
    assert_eq!(
        Bm25Params::from_toml("k1 = 1.2\nb = 0.75\nidf = \"corpus\"")
            .unwrap()
            .idf,
        IdfScope::Corpus
    );
    for bad in [
        "b = 1.5",
        "k1 = -1.0",
        "top_k = 0",
        "k2 = 1.0",
        "idf = \"global\"",
    ] {
        assert!(Bm25Params::from_toml(bad).is_err(), "{bad} accepted");
    }
    // A setting out of range is `Error::Param`, naming the setting, its range and the value.
    let k1 = Bm25Params {
        k1: -1.0,
        ..Bm25Params::default()
    };
    let err = k1.validate().unwrap_err();
    assert!(matches!(err, crate::Error::Param(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "invalid parameter: bm25 k1 must be a finite number ≥ 0, got -1"
    );
    assert_eq!(p.language_for("bsard"), Language::French);
    assert_eq!(p.language_for("ecthr"), Language::English);
    // The manifest's language wins over the name; the configured one over both.
    use lexbench_core::dataset::Language as Declared;
    assert_eq!(p.language_of("mini", Some(Declared::French)), Language::French);
    assert_eq!(
        p.language_of("bsard-en", Some(Declared::English)),
        Language::English
    );
    assert_eq!(p.language_of("bsard-x", None), Language::French);
    let en = Bm25Params {
        language: Some(Language::English),
        ..Bm25Params::default()
    };
    assert_eq!(en.language_of("bsard", Some(Declared::French)), Language::English);
    // A cross-lingual dataset (queries in the declared language, corpus English): each side its
    // own chain; languages without one take the plain chain; configured analyzers win.
    assert_eq!(
        p.languages_of("ecthr-xl-fr", Some(Declared::French), Some(Declared::English)),
        (Language::English, Language::French)
    );
    for d in [
        Declared::Italian,
        Declared::Romanian,
        Declared::Russian,
        Declared::Turkish,
        Declared::Ukrainian,
    ] {
        assert_eq!(
            p.languages_of("ecthr-xl", Some(d), Some(Declared::English)),
            (Language::English, Language::Plain),
            "{d:?}"
        );
        assert_eq!(p.language_of("x", Some(d)), Language::Plain);
    }
    assert_eq!(
        p.languages_of("ecthr", Some(Declared::English), None),
        (Language::English, Language::English)
    );
    assert_eq!(
        en.languages_of("ecthr-xl-ru", Some(Declared::Russian), Some(Declared::English)),
        (Language::English, Language::English)
    );
    let q = Bm25Params {
        query_language: Some(Language::French),
        ..Bm25Params::default()
    };
    assert_eq!(
        q.languages_of("ecthr-xl-it", Some(Declared::Italian), Some(Declared::English)),
        (Language::English, Language::French)
    );
    // The default parameters serialise without the field.
    assert!(!serde_json::to_string(&p).unwrap().contains("query_language"));
}

/// The rank_bm25 variant: its own k1 and b defaults (from the constructor and from a config that
/// names it), the default parameters' JSON unchanged by the variant field (the baseline's model
/// hash is taken over it), language and corpus statistics refused.
#[test]
fn rank_bm25_variant_params() {
    assert_eq!(
        serde_json::to_string(&Bm25Params::default()).unwrap(),
        r#"{"k1":0.9,"b":0.4,"idf":"pool","top_k":1000}"#
    );
    let okapi = Bm25Params::rank_bm25_okapi();
    assert_eq!(
        (okapi.k1, okapi.b, okapi.variant),
        (1.5, 0.75, Bm25Variant::RankBm25Okapi)
    );
    assert_eq!(
        Bm25Params::from_toml("variant = \"rank-bm25-okapi\"").unwrap(),
        okapi
    );
    let p = Bm25Params::from_toml("variant = \"rank-bm25-okapi\"\nk1 = 1.2").unwrap();
    assert_eq!((p.k1, p.b), (1.2, 0.75));
    // A variant given over a config (the command line's `--variant`) sets the defaults too.
    let p = Bm25Params::from_toml_as("top_k = 10", Some(Bm25Variant::RankBm25Okapi)).unwrap();
    assert_eq!((p.k1, p.b, p.top_k), (1.5, 0.75, 10));
    assert_eq!(
        Bm25Params::from_toml_as("variant = \"rank-bm25-okapi\"", Some(Bm25Variant::Lexbench)).unwrap(),
        Bm25Params::default()
    );
    for bad in [
        "variant = \"rank-bm25-okapi\"\nlanguage = \"english\"",
        "variant = \"rank-bm25-okapi\"\nidf = \"corpus\"",
        "variant = \"bm25s\"",
    ] {
        assert!(Bm25Params::from_toml(bad).is_err(), "{bad} accepted");
    }
}

/// A query chain other than the documents': its terms are looked up among the documents' terms
/// (a plain-chain `judgments` misses the English stem `judgment`, which the English chain finds);
/// the documents' own chain given as the query chain changes nothing.
#[test]
fn query_analyzer_other_than_the_documents() {
    let texts = [
        "The judgments of the Court",
        "Prison conditions in Ukraine, Article 8",
    ];
    let docs = ids(texts.len());
    let english = Bm25Index::build(Analyzer::new(Language::English), docs.iter().zip(texts));
    let judgment = english.query_terms("judgments");
    assert_eq!(judgment.len(), 1);
    let plain = Bm25Index::build(Analyzer::new(Language::English), docs.iter().zip(texts))
        .with_query_analyzer(Analyzer::new(Language::Plain));
    assert_eq!(plain.query_analyzer().language(), Language::Plain);
    assert_eq!(plain.analyzer().language(), Language::English);
    assert!(plain.query_terms("judgments").is_empty());
    // Numbers and words the English chain leaves as they are meet; `Ukraine` (English `ukrain`) not.
    assert_eq!(
        plain.query_terms("Стаття 8 prison Ukraine"),
        english.query_terms("8 prison")
    );
    let french = Bm25Index::build(Analyzer::new(Language::English), docs.iter().zip(texts))
        .with_query_analyzer(Analyzer::new(Language::French));
    // French stems `prisons` to `prison` (English's stem too) and drops `les` and `de`.
    assert_eq!(
        french.query_terms("les prisons de"),
        english.query_terms("prison")
    );
    let same = Bm25Index::build(Analyzer::new(Language::English), docs.iter().zip(texts))
        .with_query_analyzer(Analyzer::new(Language::English));
    assert_eq!(same.query_terms("judgments"), judgment);
}
