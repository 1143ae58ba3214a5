//! Tables for analysis (Parquet, through polars) and the dataset card's plots (SVG, through plotters).
//!
//! Polars is confined to this module of this crate, with the smallest feature set that writes Parquet
//! (`default-features = false, features = ["parquet"]`); measured on the 2-core development machine it
//! adds about 3 CPU-minutes to a clean debug build (5 min wall while other builds ran).
//!
//! - `corpus.parquet`: `doc, text, item, num, section` (the JSONL corpus as a table);
//! - `pairs.parquet`: one row per topic — `topic, split, guide, item, relevant, pool, share_percent,
//!   query_tokens` — the table behind the paper's Figure 3;
//! - with plots: `plots/*.svg` histograms of paragraphs per judgment, relevant share, query and
//!   paragraph lengths.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use lexbench_core::dataset::CorpusDoc;
use lexbench_core::io::write_atomic;
use lexbench_core::{ItemId, Judgment};
use polars::prelude::*;

use crate::error::{Error, Result};
use crate::pairs::Pair;
use crate::settings::{Assignment, SPLITS};

fn polars_err(path: &Path, e: PolarsError) -> Error {
    Error::Input {
        path: path.to_owned(),
        line: 0,
        message: format!("writing Parquet: {e}"),
    }
}

fn write_parquet(path: &Path, df: &mut DataFrame) -> Result<()> {
    let mut failure = None;
    write_atomic(path, |w| {
        if let Err(e) = ParquetWriter::new(&mut *w).finish(df) {
            failure = Some(e);
            return Err(std::io::Error::other("parquet writer failed"));
        }
        w.flush()
    })
    .map_err(|e| match failure.take() {
        Some(p) => polars_err(path, p),
        None => Error::Core(e),
    })
}

/// Writes `corpus.parquet`.
pub fn corpus_parquet(path: &Path, corpus: &[CorpusDoc]) -> Result<()> {
    let doc: Vec<String> = corpus.iter().map(|d| d.doc.to_string()).collect();
    let text: Vec<String> = corpus.iter().map(|d| d.text.clone()).collect();
    let item: Vec<Option<String>> = corpus
        .iter()
        .map(|d| d.item.as_ref().map(ToString::to_string))
        .collect();
    let num: Vec<Option<u32>> = corpus.iter().map(|d| d.num).collect();
    let section: Vec<Option<String>> = corpus
        .iter()
        .map(|d| {
            d.section
                .and_then(|s| serde_json::to_value(s).ok())
                .and_then(|v| v.as_str().map(str::to_owned))
        })
        .collect();
    let mut df = df!(
        "doc" => doc,
        "text" => text,
        "item" => item,
        "num" => num,
        "section" => section,
    )
    .map_err(|e| polars_err(path, e))?;
    write_parquet(path, &mut df)
}

/// One row per topic.
pub fn pairs_parquet(
    path: &Path,
    pairs: &[Pair],
    assignment: &Assignment,
    judgments: &BTreeMap<ItemId, Judgment>,
) -> Result<()> {
    let mut split_of = vec![""; pairs.len()];
    for s in SPLITS {
        for &i in assignment.get(s).map(Vec::as_slice).unwrap_or(&[]) {
            split_of[i] = s;
        }
    }
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by_key(|&i| pairs[i].topic());
    let pool = |p: &Pair| judgments.get(&p.item).map(|j| j.paragraphs.len() as u32);
    let mut df = df!(
        "topic" => order.iter().map(|&i| pairs[i].topic().to_string()).collect::<Vec<_>>(),
        "split" => order.iter().map(|&i| split_of[i].to_owned()).collect::<Vec<_>>(),
        "guide" => order.iter().map(|&i| pairs[i].guide.to_string()).collect::<Vec<_>>(),
        "item" => order.iter().map(|&i| pairs[i].item.to_string()).collect::<Vec<_>>(),
        "relevant" => order.iter().map(|&i| pairs[i].relevant.len() as u32).collect::<Vec<_>>(),
        "pool" => order.iter().map(|&i| pool(&pairs[i])).collect::<Vec<_>>(),
        "share_percent" => order
            .iter()
            .map(|&i| pool(&pairs[i]).map(|n| 100.0 * pairs[i].relevant.len() as f64 / f64::from(n.max(1))))
            .collect::<Vec<_>>(),
        "query_tokens" => order
            .iter()
            .map(|&i| pairs[i].text.split_whitespace().count() as u32)
            .collect::<Vec<_>>(),
    )
    .map_err(|e| polars_err(path, e))?;
    write_parquet(path, &mut df)
}

/// An SVG histogram of `values` with `bins` equal-width bins.
pub fn histogram_svg(path: &Path, title: &str, x_label: &str, values: &[f64], bins: usize) -> Result<()> {
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let (lo, hi) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        let (lo, hi) = if values.is_empty() {
            (0.0, 1.0)
        } else if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, hi + 0.5)
        };
        let bins = bins.max(1);
        let width = (hi - lo) / bins as f64;
        let mut counts = vec![0u32; bins];
        for v in values {
            let b = (((v - lo) / width) as usize).min(bins - 1);
            counts[b] += 1;
        }
        let top = counts.iter().copied().max().unwrap_or(1).max(1);
        let root = SVGBackend::with_string(&mut svg, (640, 400)).into_drawing_area();
        let draw = |e: DrawingAreaErrorKind<_>| Error::Input {
            path: path.to_owned(),
            line: 0,
            message: format!("plotting: {e}"),
        };
        root.fill(&WHITE).map_err(draw)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(lo..hi, 0u32..top + top / 10 + 1)
            .map_err(draw)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc("count")
            .disable_x_mesh()
            .draw()
            .map_err(draw)?;
        chart
            .draw_series(counts.iter().enumerate().map(|(i, c)| {
                let x0 = lo + i as f64 * width;
                Rectangle::new([(x0, 0), (x0 + width * 0.95, *c)], BLUE.mix(0.6).filled())
            }))
            .map_err(draw)?;
        root.present().map_err(draw)?;
    }
    write_atomic(path, |w| w.write_all(svg.as_bytes()))?;
    Ok(())
}
