//! Guide parsing throughput on the real fixtures, reported as pages per second.
//!
//! Four benchmarks: `text` (the Art 1 guide's extracted text, 53 pages: clean-up, table of contents,
//! body, queries, citations), `pdf` (the rendered Art 1 PDF: pdf-extract page by page, outline, then
//! the same), `citations` (extraction alone over the text under every heading of the Art 1 and
//! Terrorism guides) and `resolve` (resolving the Art 1 guide's citations against the HUDOC metadata
//! fixtures, index built once). Run with `cargo bench -p lexbench-parsers --bench guide`.

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lexbench_core::ids::GuideId;
use lexbench_core::testing::fixture;
use lexbench_parsers::guide::{self, citation, resolve};

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixture(rel)).expect("readable fixture")
}

fn benches(c: &mut Criterion) {
    let id = GuideId::new("guide_art_1_eng").expect("id");
    let text = String::from_utf8(read("guides/text/guide_art_1_eng.txt")).expect("utf-8");
    let pdf = read("guides/pdf/guide_art_1_eng.rendered.pdf");
    let pages = text.split('\u{c}').count() as u64;

    let mut g = c.benchmark_group("guide");
    g.sample_size(10);
    g.throughput(Throughput::Elements(pages));
    g.bench_function("text", |b| {
        b.iter(|| guide::parse_text("art1", id.clone(), black_box(&text)).expect("parses"))
    });
    g.bench_function("pdf", |b| {
        b.iter(|| guide::parse_pdf("art1", id.clone(), black_box(&pdf)).expect("parses"))
    });

    let terrorism = String::from_utf8(read("guides/text/guide_terrorism_eng.txt")).expect("utf-8");
    let mut texts = guide::parse_text("art1", id.clone(), &text)
        .expect("parses")
        .texts;
    texts.extend(
        guide::parse_text(
            "terrorism",
            GuideId::new("guide_terrorism_eng").expect("id"),
            &terrorism,
        )
        .expect("parses")
        .texts,
    );
    let bytes: u64 = texts.iter().map(|t| t.len() as u64).sum();
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("citations", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| citation::extract(black_box(t)).len())
                .sum::<usize>()
        })
    });

    let meta_texts: Vec<(&str, String)> = resolve::Metadata::FILES
        .iter()
        .map(|f| {
            (
                *f,
                String::from_utf8(read(&format!("hudoc/meta/{f}"))).expect("utf-8"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = meta_texts.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let meta = resolve::Metadata::from_files(&refs).expect("metadata");
    let parsed = guide::parse_text("art1", id, &text).expect("parses");
    let n: usize = parsed.queries.iter().map(|q| q.citations.len()).sum();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("resolve", |b| {
        b.iter(|| {
            let mut p = parsed.clone();
            resolve::resolve_guide(&mut p, black_box(&meta)).resolved
        })
    });
    g.finish();
}

criterion_group!(guide_benches, benches);
criterion_main!(guide_benches);
