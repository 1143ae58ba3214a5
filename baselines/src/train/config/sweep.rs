//! Hyperparameter grids: a training configuration's `[sweep]` table (and `lr_sweep`) expanded into
//! points, each a complete, validated configuration with a readable name (`lexbench train --sweep`
//! trains each under `ROOT/<name>` and keeps the best on validation).
//!
//! ```toml
//! [sweep]
//! lr = [1e-5, 3e-5, 5e-5, 1e-4, 3e-4]        # short for optim.lr
//! "peft.prefix.length" = [10, 15, 30]        # any dotted key of the configuration
//! "peft.lora" = [{ rank = 8, alpha = 8 }, { rank = 16, alpha = 16 }]   # keys that move together
//! ```
//!
//! - An axis is a dotted key and its values (a nested table, `[sweep.peft.prefix] length = […]`,
//!   is the same axis). `lr` stands for `optim.lr`; `lr_sweep = […]` is the `lr` axis (not both).
//! - A value is set as `lexbench train --set` sets one ([`super::TrainConfig::from_file_with`]):
//!   only in tables the configuration has; a table value sets only the keys it names (`peft.lora`
//!   above keeps the LoRA targets and dropout).
//! - Points: every combination. Axes go in key order (TOML tables keep none here), each axis's values
//!   in the order listed, the last axis varying fastest; "the first listed" point of a tie is the
//!   first of this enumeration.
//! - A point's name joins `key-value` per axis with `_` (`lr-3e-5_peft.prefix.length-15`): floats
//!   as Rust's `{:e}` (`3e-5`), tables as their `key-value` pairs in key order
//!   (`peft.lora-alpha-8-rank-8`), arrays joined with `+`. Names are folder names: only ASCII letters,
//!   digits, `.`, `_`, `+`, `-`, distinct across points. A learning-rate-only sweep names its points
//!   `lr-1e-5`, … as before grids existed, so such sweeps resume.
//! - A point's configuration is the configuration without its `[sweep]` (`lr_sweep` stays, so that
//!   the identity of points trained before grids existed is unchanged) with the point's values set.
//!   Changing the grid does not change the identity of the points it keeps.

use std::collections::BTreeMap;

use super::{SweepGrid, TrainConfig, set_dotted};
use crate::error::{Error, Result};

/// One point of a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Its folder name (`lr-3e-5_peft.prefix.length-15`).
    pub name: String,
    /// Its value of every axis, keys as the grid writes them.
    pub settings: BTreeMap<String, toml::Value>,
    /// The configuration it trains: validated, without the grid.
    pub config: TrainConfig,
}

/// The axes of `cfg`'s sweep: its `[sweep]` table and `lr_sweep` (as `lr`).
pub fn axes(cfg: &TrainConfig) -> BTreeMap<String, Vec<toml::Value>> {
    let mut axes = cfg.sweep.axes().clone();
    if !cfg.lr_sweep.is_empty() {
        axes.insert(
            "lr".to_owned(),
            cfg.lr_sweep.iter().map(|&lr| toml::Value::Float(lr)).collect(),
        );
    }
    axes
}

/// A value's part of a point name (see the module documentation).
pub fn value_name(v: &toml::Value) -> String {
    match v {
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => format!("{f:e}"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::String(s) => s.clone(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(a) => a.iter().map(value_name).collect::<Vec<_>>().join("+"),
        toml::Value::Table(t) => t
            .iter()
            .map(|(k, v)| format!("{k}-{}", value_name(v)))
            .collect::<Vec<_>>()
            .join("-"),
    }
}

fn file_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'))
}

/// Every point of `cfg`'s grid, in the order of the sweep, each configuration validated. An error
/// when the configuration sweeps nothing, a value does not fit its key, or two points share a name.
pub fn points(cfg: &TrainConfig) -> Result<Vec<SweepPoint>> {
    cfg.sweep.validate(!cfg.lr_sweep.is_empty())?;
    let axes: Vec<(String, Vec<toml::Value>)> = axes(cfg).into_iter().collect();
    if axes.is_empty() {
        return Err(Error::Param(
            "--sweep needs lr_sweep or a [sweep] grid in the config".into(),
        ));
    }
    let mut base = cfg.clone();
    base.sweep = SweepGrid::default();
    let doc = toml::Table::try_from(&base).map_err(|e| Error::internal(format!("config to TOML: {e}")))?;
    let count: usize = axes.iter().map(|(_, v)| v.len()).product();
    let mut out: Vec<SweepPoint> = Vec::with_capacity(count);
    for index in 0..count {
        // Mixed radix, the last axis varying fastest.
        let mut rest = index;
        let mut picks = vec![0; axes.len()];
        for (i, (_, values)) in axes.iter().enumerate().rev() {
            picks[i] = rest % values.len();
            rest /= values.len();
        }
        let settings: BTreeMap<String, toml::Value> = axes
            .iter()
            .zip(&picks)
            .map(|((k, values), &j)| (k.clone(), values[j].clone()))
            .collect();
        let name = settings
            .iter()
            .map(|(k, v)| format!("{k}-{}", value_name(v)))
            .collect::<Vec<_>>()
            .join("_");
        if !file_safe(&name) {
            return Err(Error::Param(format!(
                "[sweep] point {name:?} is not a folder name (ASCII letters, digits, '.', '_', '+', '-', \
                 at most 200): sweep numbers, booleans or plain words"
            )));
        }
        if out.iter().any(|p| p.name == name) {
            return Err(Error::Param(format!(
                "[sweep] two points are named {name} (a value listed twice?)"
            )));
        }
        let mut doc = doc.clone();
        for (key, value) in &settings {
            let target = if key == "lr" { "optim.lr" } else { key.as_str() };
            set_dotted(&mut doc, target, value.clone())
                .map_err(|e| Error::Param(format!("[sweep] {key}: {}", e.message("the configuration"))))?;
        }
        let config: TrainConfig = toml::Value::Table(doc)
            .try_into()
            .map_err(|e: toml::de::Error| Error::Param(format!("[sweep] point {name}: {e}")))?;
        config
            .validate()
            .map_err(|e| Error::Param(format!("[sweep] point {name}: {e}")))?;
        out.push(SweepPoint {
            name,
            settings,
            config,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! Properties: a grid expands to the product of its axes in the documented order, with the
    //! documented names; `lr_sweep` is the `lr` axis and a learning-rate-only sweep keeps its names
    //! and its points' configurations (so it resumes); a table value moves keys together and keeps
    //! the rest of its table; a point's configuration has no grid; bad grids are refused: an axis
    //! without values, the learning rate swept twice, a key the configuration lacks, a value that
    //! does not fit (its type or range: named `sweep.KEY[i]` as soon as the configuration is read), a
    //! value listed twice, a nothing-to-sweep configuration.
    use super::*;

    const CONFIG: &str = r#"
name = "x"
model = "dpr"
base = "models/minilm"
seed = 1
[data]
dataset = "ecthr"
[negatives]
bm25 = 1
[optim]
lr = 3e-4
[schedule]
epochs = 1
[peft]
method = "lora"
lora = { rank = 8, alpha = 16.0, dropout = 0.05 }
"#;

    fn cfg(extra: &str) -> TrainConfig {
        let text = CONFIG.replacen("[data]", &format!("{extra}\n[data]"), 1);
        let cfg: TrainConfig = toml::from_str(&text).expect("parses");
        cfg.validate().expect("valid");
        cfg
    }

    fn with_grid(grid: &str) -> TrainConfig {
        let cfg: TrainConfig = toml::from_str(&format!("{CONFIG}\n[sweep]\n{grid}")).expect("parses");
        cfg.validate().expect("valid");
        cfg
    }

    fn names(points: &[SweepPoint]) -> Vec<&str> {
        points.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn a_grid_expands_to_named_points() -> Result<()> {
        let cfg = with_grid(
            "lr = [1e-5, 3e-5]\n\"peft.lora\" = [{ rank = 8, alpha = 8 }, { rank = 16, alpha = 16 }]\n\"peft.lora.dropout\" = [0.0]",
        );
        let p = points(&cfg)?;
        assert_eq!(
            names(&p),
            [
                "lr-1e-5_peft.lora-alpha-8-rank-8_peft.lora.dropout-0e0",
                "lr-1e-5_peft.lora-alpha-16-rank-16_peft.lora.dropout-0e0",
                "lr-3e-5_peft.lora-alpha-8-rank-8_peft.lora.dropout-0e0",
                "lr-3e-5_peft.lora-alpha-16-rank-16_peft.lora.dropout-0e0",
            ]
        );
        let lora = &p[3].config.peft.as_ref().expect("peft").lora;
        assert_eq!((lora.rank, lora.alpha, lora.dropout), (16, 16.0, 0.0));
        // The other LoRA settings stay.
        assert_eq!(lora.targets, cfg.peft.as_ref().expect("peft").lora.targets);
        assert_eq!(p[3].config.optim.lr, 3e-5);
        assert!(p.iter().all(|p| p.config.sweep.is_empty()));
        assert_eq!(p[1].settings["lr"], toml::Value::Float(1e-5));
        Ok(())
    }

    #[test]
    fn nested_tables_are_the_same_axes() -> Result<()> {
        let a = with_grid("\"peft.lora.rank\" = [4, 8]");
        let b: TrainConfig =
            toml::from_str(&format!("{CONFIG}\n[sweep.peft.lora]\nrank = [4, 8]")).expect("parses");
        assert_eq!(a, b);
        assert_eq!(names(&points(&b)?), ["peft.lora.rank-4", "peft.lora.rank-8"]);
        Ok(())
    }

    #[test]
    fn lr_sweep_is_the_lr_axis_and_keeps_its_names() -> Result<()> {
        let cfg = cfg("lr_sweep = [1e-5, 3e-4]");
        let p = points(&cfg)?;
        assert_eq!(names(&p), ["lr-1e-5", "lr-3e-4"]);
        // The configuration a learning-rate sweep trained before grids existed.
        let mut old = cfg.clone();
        old.optim.lr = 3e-4;
        assert_eq!(p[1].config, old);
        assert_eq!(
            toml::to_string_pretty(&p[1].config).expect("toml"),
            toml::to_string_pretty(&old).expect("toml")
        );
        // Beside another axis, lr comes first (key order).
        let mut both = cfg.clone();
        both.sweep = SweepGrid::new([("peft.lora.rank".to_owned(), vec![toml::Value::Integer(4)])].into());
        assert_eq!(
            names(&points(&both)?),
            ["lr-1e-5_peft.lora.rank-4", "lr-3e-4_peft.lora.rank-4"]
        );
        Ok(())
    }

    #[test]
    fn the_grid_round_trips_through_toml_and_json() -> Result<()> {
        let grid = with_grid("lr = [1e-5]\n\"peft.lora\" = [{ rank = 8, alpha = 8 }]");
        let text = toml::to_string_pretty(&grid).expect("toml");
        let back: TrainConfig = toml::from_str(&text).expect("parses");
        assert_eq!(back, grid);
        let json = serde_json::to_string(&grid).expect("json");
        let back: TrainConfig = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, grid);
        // Without a grid nothing is written: configurations serialise as before.
        assert!(
            !toml::to_string_pretty(&cfg(""))
                .expect("toml")
                .contains("[sweep]")
        );
        Ok(())
    }

    #[test]
    fn bad_grids_are_refused() {
        let err = |cfg: &TrainConfig| points(cfg).expect_err("refused").to_string();
        assert!(err(&cfg("")).contains("--sweep needs lr_sweep or a [sweep] grid"));
        let parse = |grid: &str| -> String {
            match toml::from_str::<TrainConfig>(&format!("{CONFIG}\n[sweep]\n{grid}")) {
                Err(e) => e.to_string(),
                Ok(c) => c
                    .validate()
                    .and_then(|()| points(&c).map(|_| ()))
                    .expect_err("refused")
                    .to_string(),
            }
        };
        for (grid, want) in [
            ("lr = []", "lr has no values"),
            ("lr = 1e-5", "must list its values"),
            ("lr = [1e-5]\n\"optim.lr\" = [2e-5]", "swept twice"),
            ("\"gnn.epochs\" = [1, 2]", "has no [gnn] table"),
            (
                "\"peft.lora.rank\" = [\"eight\"]",
                "sweep.peft.lora.rank[0] = \"eight\": invalid type",
            ),
            (
                "\"peft.lora.rank\" = [8, 0]",
                "sweep.peft.lora.rank[1] = 0: must be an integer from 1 to",
            ),
            (
                "lr = [1e-5, inf]",
                "sweep.lr[1] = inf: must be a finite number > 0",
            ),
            (
                "\"peft.lora\" = [{ rank = 4, alpha = nan }]",
                "sweep.peft.lora[0]: peft.lora.alpha = NaN: must be a finite number > 0",
            ),
            (
                "\"schedule.epochs\" = [2, 2]",
                "two points are named schedule.epochs-2",
            ),
            ("\"description\" = [\"a b\"]", "not a folder name"),
            ("\"optim.lrr\" = [1e-5]", "unknown field"),
        ] {
            let e = parse(grid);
            assert!(e.contains(want), "{grid}: {e}");
        }
        let mut twice = cfg("lr_sweep = [1e-5]");
        twice.sweep = SweepGrid::new([("lr".to_owned(), vec![toml::Value::Float(1e-4)])].into());
        assert!(
            twice
                .validate()
                .expect_err("refused")
                .to_string()
                .contains("swept twice")
        );
    }
}
