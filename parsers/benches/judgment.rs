//! Judgment parsing throughput on the real fixtures (`../shared/fixtures/hudoc/docx/`, 12 judgments).
//!
//! Three benchmarks, each over the whole fixture set and reported as paragraphs per second (main
//! judgment and opinion paragraphs): `docx` (unzip, XML, segmentation), `html` (the same judgments
//! converted to simple HUDOC-like HTML beforehand: HTML parsing and segmentation), and `segment` (the
//! format-independent segmenter alone, on blocks read once). A full HUDOC English crawl is ~25k
//! judgments; the projected time is printed after the DOCX run.

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lexbench_parsers::judgment::{self, Block, Meta, docx, segment};

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = lexbench_core::testing::fixtures_dir().join("hudoc/docx");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("fixtures folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "docx"))
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, std::fs::read(&p).expect("readable fixture"))
        })
        .collect();
    v.sort();
    v
}

/// Plain HUDOC-shaped HTML: one `<p class="sHASH">` per block.
fn to_html(blocks: &[Block]) -> String {
    let mut s = String::from("<html><body>");
    for b in blocks {
        let class = b.style.as_deref().unwrap_or("Normal").len();
        let text = b.text.replace('&', "&amp;").replace('<', "&lt;");
        s.push_str(&format!("<p class=\"s{class:08X}\">{text}</p>\n"));
    }
    s.push_str("</body></html>");
    s
}

fn paragraphs(j: &lexbench_core::Judgment) -> u64 {
    (j.paragraphs.len() + j.opinions.iter().map(|o| o.paragraphs.len()).sum::<usize>()) as u64
}

fn bench(c: &mut Criterion) {
    let files = fixtures();
    let total: u64 = files
        .iter()
        .map(|(n, b)| paragraphs(&judgment::parse_docx(b, n, None).expect("parses")))
        .sum();
    let blocks: Vec<(String, Vec<Block>)> = files
        .iter()
        .map(|(n, b)| (n.clone(), docx::blocks(b, n).expect("blocks")))
        .collect();
    let html: Vec<(String, String)> = blocks.iter().map(|(n, b)| (n.clone(), to_html(b))).collect();

    // A one-off wall-clock figure for the projection (criterion's own figures are printed below).
    let t = Instant::now();
    let rounds = 5;
    for _ in 0..rounds {
        for (n, b) in &files {
            black_box(judgment::parse_docx(b, n, None).expect("parses"));
        }
    }
    let per_judgment = t.elapsed().as_secs_f64() / (rounds * files.len()) as f64;
    println!(
        "docx: {} judgments, {total} paragraphs; {:.1} ms per judgment, {:.0} paragraphs/s; \
         projected for 25,000 judgments: {:.0} s on one core",
        files.len(),
        per_judgment * 1e3,
        total as f64 / (per_judgment * files.len() as f64),
        per_judgment * 25_000.0
    );

    let mut g = c.benchmark_group("judgment");
    g.throughput(Throughput::Elements(total));
    g.sample_size(20);
    g.bench_function("docx", |b| {
        b.iter(|| {
            for (n, bytes) in &files {
                black_box(judgment::parse_docx(bytes, n, None).expect("parses"));
            }
        })
    });
    g.bench_function("html", |b| {
        b.iter(|| {
            for (n, h) in &html {
                black_box(judgment::parse_html(h.as_bytes(), n, None).expect("parses"));
            }
        })
    });
    g.bench_function("segment", |b| {
        b.iter(|| {
            for (n, bl) in &blocks {
                let meta = Meta {
                    source: n,
                    item: None,
                    format: "DOCX",
                };
                black_box(segment::segment(bl, meta, Vec::new()).expect("segments"));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
