//! Evaluating a 1,000-topic × 1,000-hit run (1M lines) with 6 measures.
//!
//! Two benchmarks: `evaluate` on in-memory data (ranking + measures), and `read+evaluate` from TREC
//! files on disk (what `lexbench eval` does). Data are generated from a fixed seed: per topic, 1,000
//! retrieved documents with scores on a coarse grid (ties are common) and 50 judged documents, about
//! half relevant, some not retrieved. `scripts/bench_python_eval.py` times pytrec_eval and ranx on data
//! of the same shape.

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;
use std::io::Write;

use criterion::{Criterion, criterion_group, criterion_main};
use lexbench_core::rng::SplitMix64;
use lexbench_core::{DocId, Measure, Qrels, ReadOptions, Run, TopicId, evaluate, trec::Hit};

fn data(topics: usize, hits: usize) -> (Run, Qrels) {
    let mut rng = SplitMix64::new(20261122);
    let mut run = Run::new("bench");
    let mut qrels = Qrels::default();
    for t in 0..topics {
        let topic = TopicId::new(format!("T{t:04}")).unwrap();
        let mut list = Vec::with_capacity(hits);
        for d in 0..hits {
            let score = rng.below(1000) as f64 / 10.0;
            list.push(Hit {
                doc: DocId::new(format!("D{t:04}-{d:05}")).unwrap(),
                score,
            });
        }
        for _ in 0..50 {
            // Docs up to 1.2 × hits: about one judged document in six is not retrieved.
            let d = rng.below(hits * 6 / 5);
            let rel = rng.below(3) as i32;
            qrels.insert(topic.clone(), DocId::new(format!("D{t:04}-{d:05}")).unwrap(), rel);
        }
        run.topics.insert(topic, list);
    }
    (run, qrels)
}

fn measures() -> Vec<Measure> {
    Measure::parse_list("AP,RPrec,R@100,nDCG@10,P@10,RR@10").unwrap()
}

fn bench(c: &mut Criterion) {
    let (run, qrels) = data(1000, 1000);
    let ms = measures();
    let mut g = c.benchmark_group("eval_1000x1000");
    g.sample_size(10);
    g.bench_function("evaluate", |b| {
        b.iter(|| evaluate(black_box(&run), black_box(&qrels), &ms, None).unwrap())
    });

    let dir = std::env::temp_dir().join(format!("lexbench-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run_path = dir.join("run.trec");
    let qrels_path = dir.join("qrels.txt");
    run.write(&run_path).unwrap();
    qrels.write(&qrels_path).unwrap();
    g.bench_function("read+evaluate", |b| {
        b.iter(|| {
            let q = Qrels::read(&qrels_path, &ReadOptions::default()).unwrap();
            let r = Run::read(&run_path, &ReadOptions::default()).unwrap();
            evaluate(&r, &q, &ms, None).unwrap()
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::io::stdout().flush();
}

criterion_group!(benches, bench);
criterion_main!(benches);
