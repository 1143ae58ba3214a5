//! BM25 indexing and retrieval on a generated corpus of BSARD's size: 22,633 articles, 1,108
//! questions (French analyzer, whole-corpus ranking, top 1000 per question): building the index (on
//! all cores), ranking the questions one `search` at a time, and ranking them in one `search_batch`
//! (on all cores).
//!
//! The corpus is generated deterministically (splitmix64): a 30,000-word vocabulary of French-looking
//! syllable words, Zipf-distributed (s = 1.07), article lengths 20-400 words (mean ≈ 130, BSARD's
//! order), questions 5-30 words. With `LEXBENCH_BENCH_DUMP=DIR` the texts are also written to
//! `DIR/corpus.txt` and `DIR/queries.txt` (one per line) so `scripts/bench_bm25.py` can time a Python
//! BM25 on exactly the same corpus in the same run; `DIR/hits.txt` and `DIR/hits_batch.txt` hold every
//! hit of `search` and `search_batch` with its score's bits (`question doc bits`), so two versions of
//! the index can be compared exactly.
//!
//!     cargo bench -p lexbench-baselines --bench bm25

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use lexbench_baselines::sparse::{Analyzer, Bm25Index, Bm25Params, Language};
use lexbench_core::DocId;

const ARTICLES: usize = 22_633;
const QUESTIONS: usize = 1_108;
const VOCAB: usize = 30_000;

use lexbench_core::rng::SplitMix64;

/// (articles, questions)
fn generate() -> (Vec<String>, Vec<String>) {
    let mut rng = SplitMix64::new(20_261_122);
    let syllables = [
        "la", "re", "con", "tri", "bu", "tion", "dé", "pen", "sé", "ar", "ti", "cle", "loi", "ju", "ge",
        "droit", "pro", "cé", "du", "ré", "gi", "me", "bail", "lo", "ca", "taire", "em", "ploi", "fa", "mil",
    ];
    let vocab: Vec<String> = (0..VOCAB)
        .map(|_| {
            let n = 2 + rng.below(3);
            (0..n).map(|_| syllables[rng.below(syllables.len())]).collect()
        })
        .collect();
    // Zipf cumulative weights.
    let mut cdf = Vec::with_capacity(VOCAB);
    let mut acc = 0.0;
    for r in 1..=VOCAB {
        acc += 1.0 / (r as f64).powf(1.07);
        cdf.push(acc);
    }
    let text = |rng: &mut SplitMix64, len: usize| -> String {
        let words: Vec<&str> = (0..len)
            .map(|_| {
                let u = rng.unit_f64() * acc;
                let i = cdf.partition_point(|c| *c < u).min(VOCAB - 1);
                vocab[i].as_str()
            })
            .collect();
        words.join(" ")
    };
    let articles = (0..ARTICLES)
        .map(|_| {
            let len = 20 + (rng.unit_f64() * rng.unit_f64() * 380.0) as usize + rng.below(60);
            text(&mut rng, len)
        })
        .collect();
    let questions = (0..QUESTIONS)
        .map(|_| {
            let len = 5 + rng.below(26);
            text(&mut rng, len)
        })
        .collect();
    (articles, questions)
}

fn bench(c: &mut Criterion) {
    let (articles, questions) = generate();
    if let Ok(dir) = std::env::var("LEXBENCH_BENCH_DUMP") {
        let dir = std::path::Path::new(&dir);
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("corpus.txt"), articles.join("\n") + "\n").unwrap();
        std::fs::write(dir.join("queries.txt"), questions.join("\n") + "\n").unwrap();
    }
    let ids: Vec<DocId> = (0..articles.len())
        .map(|i| DocId::new(i.to_string()).unwrap())
        .collect();
    let build = || {
        Bm25Index::build(
            Analyzer::new(Language::French),
            ids.iter().zip(articles.iter().map(String::as_str)),
        )
    };
    let mut group = c.benchmark_group("bm25_bsard_size");
    group.sample_size(10);
    group.bench_function("index_22633_articles", |b| b.iter(|| black_box(build())));
    let index = build();
    let params = Bm25Params::default();
    let queries: Vec<&str> = questions.iter().map(String::as_str).collect();
    if let Ok(dir) = std::env::var("LEXBENCH_BENCH_DUMP") {
        // Every hit with its score's bits, so that two versions of the index can be compared exactly.
        // `search_batch` must give the same bytes (hits_batch.txt).
        let dump = |name: &str, runs: &mut dyn Iterator<Item = Vec<lexbench_core::Hit>>| {
            let mut out = String::new();
            for (i, hits) in runs.enumerate() {
                for h in hits {
                    out += &format!("{i} {} {:016x}\n", h.doc, h.score.to_bits());
                }
            }
            std::fs::write(std::path::Path::new(&dir).join(name), out).unwrap();
        };
        dump(
            "hits.txt",
            &mut questions.iter().map(|q| index.search(q, &params, 1000)),
        );
        dump(
            "hits_batch.txt",
            &mut index.search_batch(&queries, &params, 1000).into_iter(),
        );
    }
    group.bench_function("retrieve_1108_questions_top1000", |b| {
        b.iter(|| {
            for q in &questions {
                black_box(index.search(q, &params, 1000));
            }
        })
    });
    group.bench_function("retrieve_batch_1108_questions_top1000", |b| {
        b.iter(|| black_box(index.search_batch(&queries, &params, 1000)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
