//! SVG plots with plotters: for each dataset split, every system's score on each measure as a line
//! (the baseline in black, others in palette colours, stale versions marked †), so the table's
//! numbers can be compared at a glance.

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

/// Draws `board`'s `split` into the SVG file `path` (written atomically).
pub fn plot_split(board: &DatasetBoard, split: &str, path: &Path) -> Result<()> {
    let svg = draw(board, split).map_err(|message| Error::Plot {
        path: path.to_owned(),
        message,
    })?;
    lexbench_core::io::write_atomic(path, |w| std::io::Write::write_all(w, svg.as_bytes()))?;
    Ok(())
}

fn draw(board: &DatasetBoard, split: &str) -> std::result::Result<String, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let m = board.measures.len().max(1) as i32;
        let ymax = board
            .rows
            .iter()
            .filter_map(|r| r.cells.get(split))
            .flat_map(|c| c.scores.iter().flatten())
            .fold(0.0f64, |a, b| a.max(*b))
            .mul_add(100.0, 0.0)
            .clamp(1.0, 100.0);
        let ymax = (ymax * 1.1).min(100.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{} · {split}", board.name), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.5f64..(f64::from(m) - 0.5), 0.0f64..ymax)
            .map_err(|e| err(&e))?;
        let names = board.measures.clone();
        chart
            .configure_mesh()
            .x_labels(names.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("score (%)")
            .light_line_style(WHITE.mix(0.0))
            .disable_x_mesh()
            .draw()
            .map_err(|e| err(&e))?;
        for (k, row) in board.rows.iter().enumerate() {
            let Some(cell) = row.cells.get(split) else {
                continue;
            };
            let color = if row.baseline {
                BLACK.to_rgba()
            } else {
                let (r, g, b) = PALETTE[k % PALETTE.len()];
                RGBColor(r, g, b).to_rgba()
            };
            let pts: Vec<(f64, f64)> = cell
                .scores
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i as f64, 100.0 * v)))
                .collect();
            let mut label = row.shown_name();
            if row.verified {
                label.push(' ');
                label.push_str(crate::render::VERIFIED_MARK);
            }
            if cell.stale {
                label.push_str(" †");
            }
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled())))
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}
