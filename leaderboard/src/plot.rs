//! SVG plots with plotters, one per dataset split: every system's mean on each measure as a bar,
//! grouped by measure, with its 95 % bootstrap interval over topics as a whisker
//! ([`crate::stats::bootstrap_ci`]); the baseline in dark grey, others in palette colours, stale
//! versions marked † in the legend (below the chart, one entry per system). Where the measures hold
//! several recall cut-offs beside other measures (BSARD: R@100, R@200, R@500 beside AP and RPrec), a
//! second panel draws recall against the cut-off, one line per system: a line joins values of one
//! measure family only, never different measures.

use std::path::Path;

use plotters::prelude::*;

use crate::board::DatasetBoard;
use crate::error::{Error, Result};

/// Tableau 10 without its grey: distinct, readable on white.
const PALETTE: [(u8, u8, u8); 9] = [
    (78, 121, 167),
    (242, 142, 43),
    (225, 87, 89),
    (118, 183, 178),
    (89, 161, 79),
    (237, 201, 72),
    (176, 122, 161),
    (255, 157, 167),
    (156, 117, 95),
];

/// The baseline's colour.
const BASELINE_GREY: (u8, u8, u8) = (90, 90, 90);

/// The colour of the `k`-th of `n` systems (the baseline aside): the palette while it has a colour
/// for each, else `n` hues spread evenly round the colour wheel, lightness alternating, so that no two
/// systems share a colour however many the board holds (issue 58: at 17 systems a repeating palette
/// gave ANCE and DPR + adapters one colour).
fn system_colour(k: usize, n: usize) -> (u8, u8, u8) {
    if n <= PALETTE.len() {
        return PALETTE[k % PALETTE.len()];
    }
    let hue = 360.0 * k as f64 / n as f64;
    let lightness = if k.is_multiple_of(2) { 0.40 } else { 0.60 };
    hsl(hue, 0.65, lightness)
}

/// HSL (hue in degrees, saturation and lightness in 0..=1) to RGB.
fn hsl(h: f64, s: f64, l: f64) -> (u8, u8, u8) {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = (h.rem_euclid(360.0)) / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    (byte(r), byte(g), byte(b))
}

/// Draws `board`'s `split` into the SVG file `path` (written atomically).
pub fn plot_split(board: &DatasetBoard, split: &str, path: &Path) -> Result<()> {
    let svg = draw(board, split).map_err(|message| Error::Plot {
        path: path.to_owned(),
        message,
    })?;
    lexbench_core::io::write_atomic(path, |w| std::io::Write::write_all(w, svg.as_bytes()))?;
    Ok(())
}

/// `R@100` → 100, `R@5%` → 5: the cut-off of a recall measure, if it is one.
fn cutoff(measure: &str) -> Option<f64> {
    let k = measure.strip_prefix("R@")?;
    k.strip_suffix('%').unwrap_or(k).parse().ok()
}

/// One system on the split: its legend label, colour and cell.
struct Series<'a> {
    label: String,
    color: RGBColor,
    cell: &'a crate::board::Cell,
}

fn series<'a>(board: &'a DatasetBoard, split: &str) -> Vec<Series<'a>> {
    let n = board
        .rows
        .iter()
        .filter(|row| !row.baseline && row.cells.contains_key(split))
        .count();
    let mut k = 0;
    board
        .rows
        .iter()
        .filter_map(|row| {
            let cell = row.cells.get(split)?;
            let (r, g, b) = if row.baseline {
                BASELINE_GREY
            } else {
                k += 1;
                system_colour(k - 1, n)
            };
            let mut label = row.shown_name();
            if row.verified {
                label.push(' ');
                label.push_str(crate::render::VERIFIED_MARK);
            }
            if row.baseline {
                label.push_str(" (baseline)");
            }
            if cell.stale {
                label.push_str(" †");
            }
            Some(Series {
                label,
                color: RGBColor(r, g, b),
                cell,
            })
        })
        .collect()
}

const WIDTH: u32 = 860;
const CHART_HEIGHT: u32 = 380;
const LEGEND_ROW: u32 = 22;
const LEGEND_COLUMNS: usize = 2;

fn draw(board: &DatasetBoard, split: &str) -> std::result::Result<String, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let series = series(board, split);
    let legend_rows = series.len().div_ceil(LEGEND_COLUMNS) as u32;
    let height = CHART_HEIGHT + 16 + legend_rows * LEGEND_ROW;
    let cutoffs: Vec<(usize, f64)> = board
        .measures
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((i, cutoff(m)?)))
        .collect();
    let curve = cutoffs.len() >= 2 && cutoffs.len() < board.measures.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (top, legend) = root.split_vertically(CHART_HEIGHT);
        let top = top
            .titled(&format!("{} · {split}", board.name), ("sans-serif", 20))
            .map_err(|e| err(&e))?;
        let (bars_area, curve_area) = if curve {
            let (l, r) = top.split_horizontally(WIDTH * 60 / 100);
            (l, Some(r))
        } else {
            (top, None)
        };
        // The y range: the highest upper whisker, with room.
        let ymax = series
            .iter()
            .flat_map(|s| {
                s.cell
                    .scores
                    .iter()
                    .zip(&s.cell.ci)
                    .filter_map(|(v, ci)| ci.map(|c| c.1).or(*v))
            })
            .fold(0.0f64, f64::max);
        let ymax = (100.0 * ymax * 1.1).clamp(1.0, 100.0);

        let m = board.measures.len().max(1);
        let names = board.measures.clone();
        let mut chart = ChartBuilder::on(&bars_area)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.5f64..(m as f64 - 0.5), 0.0f64..ymax)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(m)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("mean over topics (%), 95 % bootstrap interval")
            .light_line_style(WHITE)
            .disable_x_mesh()
            .draw()
            .map_err(|e| err(&e))?;
        let n = series.len().max(1) as f64;
        let width = 0.8 / n;
        for (k, s) in series.iter().enumerate() {
            for (i, v) in s.cell.scores.iter().enumerate() {
                let Some(v) = v else { continue };
                let x0 = i as f64 - 0.4 + k as f64 * width;
                let x1 = x0 + width * 0.9;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, 100.0 * v)],
                        s.color.filled(),
                    )))
                    .map_err(|e| err(&e))?;
                if let Some((lo, hi)) = s.cell.ci.get(i).copied().flatten() {
                    let xm = (x0 + x1) / 2.0;
                    let cap = width * 0.25;
                    let whisker = BLACK.stroke_width(1);
                    let lines = [
                        vec![(xm, 100.0 * lo), (xm, 100.0 * hi)],
                        vec![(xm - cap, 100.0 * lo), (xm + cap, 100.0 * lo)],
                        vec![(xm - cap, 100.0 * hi), (xm + cap, 100.0 * hi)],
                    ];
                    chart
                        .draw_series(lines.into_iter().map(|l| PathElement::new(l, whisker)))
                        .map_err(|e| err(&e))?;
                }
            }
        }

        if let Some(area) = curve_area {
            let ks: Vec<f64> = cutoffs.iter().map(|c| c.1).collect();
            let labels: Vec<String> = cutoffs.iter().map(|(i, _)| board.measures[*i].clone()).collect();
            let mut chart = ChartBuilder::on(&area)
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(40)
                .build_cartesian_2d(-0.3f64..(ks.len() as f64 - 0.7), 0.0f64..ymax)
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_labels(ks.len())
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 1e-6 && i >= 0.0 {
                        labels.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .x_desc("recall at cut-off k")
                .light_line_style(WHITE)
                .disable_x_mesh()
                .draw()
                .map_err(|e| err(&e))?;
            for s in &series {
                let pts: Vec<(f64, f64)> = cutoffs
                    .iter()
                    .enumerate()
                    .filter_map(|(x, (i, _))| Some((x as f64, 100.0 * s.cell.scores[*i]?)))
                    .collect();
                let style = s.color.stroke_width(2);
                chart
                    .draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(|e| err(&e))?;
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 3, s.color.filled())))
                    .map_err(|e| err(&e))?;
            }
        }

        // The legend: a swatch and the system's name, in rows of LEGEND_COLUMNS.
        let column = (WIDTH as i32 - 40) / LEGEND_COLUMNS as i32;
        for (k, s) in series.iter().enumerate() {
            let x = 20 + (k % LEGEND_COLUMNS) as i32 * column;
            let y = 8 + (k / LEGEND_COLUMNS) as i32 * LEGEND_ROW as i32;
            legend
                .draw(&Rectangle::new([(x, y), (x + 14, y + 14)], s.color.filled()))
                .map_err(|e| err(&e))?;
            legend
                .draw(&Text::new(s.label.clone(), (x + 20, y), ("sans-serif", 14)))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distance(a: (u8, u8, u8), b: (u8, u8, u8)) -> f64 {
        let d = |x: u8, y: u8| f64::from(x) - f64::from(y);
        (d(a.0, b.0).powi(2) + d(a.1, b.1).powi(2) + d(a.2, b.2).powi(2)).sqrt()
    }

    /// Issue 58, item 2: every system of a board has a colour of its own, at 3 systems as at 17 or
    /// 40, each far enough from every other and from the baseline's grey to be told apart.
    #[test]
    fn no_two_systems_share_a_colour() {
        for n in [1, 3, 9, 10, 17, 24, 40] {
            let colours: Vec<_> = (0..n).map(|k| system_colour(k, n)).collect();
            for (i, a) in colours.iter().enumerate() {
                assert!(distance(*a, BASELINE_GREY) > 40.0, "{n}: {i} {a:?} looks grey");
                for (j, b) in colours.iter().enumerate().skip(i + 1) {
                    let far = if n <= 24 { 30.0 } else { 15.0 };
                    assert!(distance(*a, *b) > far, "{n} systems: {i} {a:?} and {j} {b:?}");
                }
            }
        }
        assert_eq!(hsl(0.0, 1.0, 0.5), (255, 0, 0));
        assert_eq!(hsl(120.0, 1.0, 0.5), (0, 255, 0));
        assert_eq!(hsl(240.0, 1.0, 0.5), (0, 0, 255));
    }
}
