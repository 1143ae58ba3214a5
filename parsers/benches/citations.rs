//! The citation reader on hostile text (issue 54, item 9: it was quadratic on text dense with
//! ` v. `), as `lexbench parse citations` ([`citation::extract_text`]) and `lexbench parse guide`
//! ([`guide::parse_text`]) run it. One group, `hostile_citations`, throughput in bytes:
//!
//! - `x_v_y/N`: `X v. Y ` repeated N times (issue: 20,000, 140 KB, took 22 s);
//! - `a_v_newline/N`: `A v. \n` repeated N times (issue: 200,000, over 60 s);
//! - `bare_pinpoint/N`: `(§ 2) ` repeated N times (issue: 200,000, 13.7 s);
//! - `bare_pinpoint_after_case/N`: the same after `In Smith v. Malta, 2001, the Court held ` (every
//!   pinpoint then refers to that case: the search for a short name ran from the case to each one);
//! - `guide_with_block/N`: the Art 1 guide's text (the fixture) with a block of `X v. Y ` repeated
//!   N times inserted in the middle of its body (issue: 20,000, 5.1 s instead of 0.08 s).
//!
//! Sizes are the times `LEXBENCH_BENCH_SCALE` (a number, default 1), so that the code
//! before the fix can be measured at a smaller scale, e.g.
//! `LEXBENCH_BENCH_SCALE=0.1 cargo bench -p lexbench-parsers --bench citations`. Linear code takes
//! ten times as long at scale 1 as at scale 0.1; quadratic code a hundred times.

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lexbench_core::ids::GuideId;
use lexbench_core::testing::fixture;
use lexbench_parsers::guide::{self, citation};

/// `LEXBENCH_BENCH_SCALE`, default 1.
fn scale() -> f64 {
    match std::env::var("LEXBENCH_BENCH_SCALE") {
        Ok(s) => match s.trim().parse::<f64>() {
            Ok(x) if x > 0.0 && x.is_finite() => x,
            _ => panic!("LEXBENCH_BENCH_SCALE={s:?}: expected a positive number such as 0.1"),
        },
        Err(_) => 1.0,
    }
}

fn scaled(n: usize, scale: f64) -> usize {
    ((n as f64 * scale).round() as usize).max(1)
}

fn hostile(c: &mut Criterion) {
    let scale = scale();
    let mut g = c.benchmark_group("hostile_citations");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(5));

    let shapes: [(&str, &str, &str, usize); 4] = [
        ("x_v_y", "", "X v. Y ", 20_000),
        ("a_v_newline", "", "A v. \n", 200_000),
        ("bare_pinpoint", "", "(§ 2) ", 200_000),
        (
            "bare_pinpoint_after_case",
            "In Smith v. Malta, 2001, the Court held ",
            "(§ 2) ",
            200_000,
        ),
    ];
    for (name, before, unit, n) in shapes {
        let n = scaled(n, scale);
        let text = format!("{before}{}", unit.repeat(n));
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("{name}/{n}"), |b| {
            b.iter(|| citation::extract_text(black_box(&text)).len())
        });
    }

    let id = GuideId::new("guide_art_1_eng").expect("id");
    let text = std::fs::read_to_string(fixture("guides/text/guide_art_1_eng.txt")).expect("utf-8 fixture");
    // The start of a line in the middle of the body (past the table of contents).
    let mid = text.len() / 2;
    let at = mid + text[mid..].find('\n').expect("a line break") + 1;
    let n = scaled(20_000, scale);
    let big = format!("{}{}\n{}", &text[..at], "X v. Y ".repeat(n), &text[at..]);
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function(format!("guide_with_block/{n}"), |b| {
        b.iter(|| {
            let g = guide::parse_text("art1", id.clone(), black_box(&big)).expect("parses");
            g.queries.iter().map(|q| q.citations.len()).sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(citation_benches, hostile);
criterion_main!(citation_benches);
