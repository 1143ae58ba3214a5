//! Guide parsing throughput on the real fixtures, reported as pages per second.
//!
//! Four benchmarks: `text` (the Art 1 guide's extracted text, 53 pages: clean-up, table of contents,
//! body, queries, citations), `pdf` (the rendered Art 1 PDF: pdf-extract page by page, outline, then
//! the same), `citations` (extraction alone over the text under every heading of the Art 1 and
//! Terrorism guides) and `resolve` (resolving the Art 1 guide's citations against the HUDOC metadata
//! fixtures, index built once). Run with `cargo bench -p lexbench-parsers --bench guide`.
//!
//! The `scaling` group shows how time grows with the input (issue 29: both were quadratic):
//! `scaling/citations/N` (the citation reader as `lexbench parse citations` runs it,
//! [`citation::extract_text`], on N lines made by repeating the Art 1 guide's extracted text, 3,247
//! lines) and `scaling/parse_text/N` (the whole guide parser on a guide whose table of contents has
//! one entry and whose body is those N lines under that one heading, page breaks and the table of
//! contents taken out: one long section for the citation reader), for N = 10k, 20k and 40k.
//! `scaling/headings/N` is the guide parser on N lines of numbered headings without a table of
//! contents (`I.`, `A.`, `a.`–`z.`, `B.`, …, `II.`: a heading every other line, all inferred from
//! numbering).
//! Linear code takes twice as long for twice the lines.

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

/// The first `n` lines of the Art 1 guide's text repeated (pages, table of contents and all).
fn repeated_lines(text: &str, n: usize) -> String {
    let mut out = String::new();
    for line in text.lines().cycle().take(n) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn scaling(c: &mut Criterion) {
    let id = GuideId::new("guide_art_1_eng").expect("id");
    let text = String::from_utf8(read("guides/text/guide_art_1_eng.txt")).expect("utf-8");
    let mut g = c.benchmark_group("scaling");
    g.sample_size(10);
    let body: String = text
        .lines()
        .filter(|l| {
            // Not the contents' title nor its entries (`… .......... 9`): the one-entry contents
            // would otherwise run on into the body.
            let t = l.trim_end();
            let head = t.trim_end_matches(|c: char| c.is_ascii_digit());
            t.trim() != "Table of contents" && !(head.len() < t.len() && head.trim_end().ends_with('.'))
        })
        .map(|l| format!("{}\n", l.replace('\u{c}', "")))
        .collect();
    let one_section = |n: usize| {
        format!(
            "Guide\n\u{c}Guide\nTable of contents\nI.  Scope ........ 3\n\u{c}Guide\nI.  Scope\n{}",
            repeated_lines(&body, n)
        )
    };
    for n in [10_000, 20_000, 40_000] {
        let big = repeated_lines(&text, n);
        g.throughput(Throughput::Bytes(big.len() as u64));
        g.bench_function(format!("citations/{}k", n / 1000), |b| {
            b.iter(|| citation::extract_text(black_box(&big)).len())
        });
        let big = one_section(n);
        g.throughput(Throughput::Bytes(big.len() as u64));
        g.bench_function(format!("parse_text/{}k", n / 1000), |b| {
            b.iter(|| {
                let g = guide::parse_text("big", id.clone(), black_box(&big)).expect("parses");
                g.queries.iter().map(|q| q.citations.len()).sum::<usize>()
            })
        });
    }
    for n in [10_000, 20_000, 40_000] {
        let text = headings(n);
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("headings/{}k", n / 1000), |b| {
            b.iter(|| {
                guide::parse_text("headings", id.clone(), black_box(&text))
                    .expect("parses")
                    .queries
                    .len()
            })
        });
    }
    g.finish();
}

/// `n` lines of a guide without a table of contents: `I.  Part 1`, `A.  Chapter A`, `a.  Section a`
/// … `z.`, `B.` …, `II.` …, each heading followed by a blank line (so each is a heading block).
fn headings(n: usize) -> String {
    fn roman(mut v: u32) -> String {
        let mut s = String::new();
        for (w, r) in [
            (100, "C"),
            (90, "XC"),
            (50, "L"),
            (40, "XL"),
            (10, "X"),
            (9, "IX"),
            (5, "V"),
            (4, "IV"),
            (1, "I"),
        ] {
            while v >= w {
                s.push_str(r);
                v -= w;
            }
        }
        s
    }
    let mut text = String::from("Guide\n\u{c}");
    let mut lines = 0;
    let mut push = |text: &mut String, line: String| {
        text.push_str(&line);
        text.push_str("\n\n");
        lines += 2;
        lines >= n
    };
    for part in 1..=399 {
        if push(&mut text, format!("{}.  Part {part}", roman(part))) {
            break;
        }
        for c in 'A'..='Z' {
            if push(&mut text, format!("{c}.  Chapter {c}")) {
                return text;
            }
            for s in 'a'..='z' {
                if push(&mut text, format!("{s}.  Section {s}")) {
                    return text;
                }
            }
        }
    }
    text
}

criterion_group!(guide_benches, benches, scaling);
criterion_main!(guide_benches);
