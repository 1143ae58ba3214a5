//! The `[sweep]` table of a training configuration, as read and checked; its expansion into points
//! is [`super::sweep`]'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// The `[sweep]` table: dotted key → the values it takes (see [`super::sweep`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepGrid {
    axes: BTreeMap<String, Vec<toml::Value>>,
}

impl SweepGrid {
    /// A grid of `axes` (dotted key → values).
    pub fn new(axes: BTreeMap<String, Vec<toml::Value>>) -> Self {
        Self { axes }
    }

    /// No axis.
    pub fn is_empty(&self) -> bool {
        self.axes.is_empty()
    }

    /// The axes, in key order.
    pub fn axes(&self) -> &BTreeMap<String, Vec<toml::Value>> {
        &self.axes
    }

    /// Checks the shape of the grid: keys without empty parts, at least one value per axis, `lr`
    /// once (and not beside a non-empty `lr_sweep`, `with_lr_sweep`). The points themselves are
    /// checked when expanded ([`super::sweep::points`]).
    pub fn validate(&self, with_lr_sweep: bool) -> Result<()> {
        let bad = |m: String| Err(Error::Param(m));
        for (key, values) in &self.axes {
            if key.split('.').any(str::is_empty) {
                return bad(format!("[sweep] key {key:?} has an empty part"));
            }
            if values.is_empty() {
                return bad(format!("[sweep] {key} has no values"));
            }
        }
        let lr_axes = ["lr", "optim.lr"]
            .iter()
            .filter(|k| self.axes.contains_key(**k))
            .count();
        if lr_axes + usize::from(with_lr_sweep) > 1 {
            return bad(
                "the learning rate is swept twice: keep one of lr_sweep, [sweep] lr and [sweep] \"optim.lr\""
                    .into(),
            );
        }
        Ok(())
    }
}

impl Serialize for SweepGrid {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.axes.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SweepGrid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        fn flatten(
            prefix: &str,
            table: toml::Table,
            out: &mut BTreeMap<String, Vec<toml::Value>>,
        ) -> std::result::Result<(), String> {
            for (k, v) in table {
                let key = if prefix.is_empty() {
                    k
                } else {
                    format!("{prefix}.{k}")
                };
                match v {
                    toml::Value::Array(values) => {
                        out.insert(key, values);
                    }
                    toml::Value::Table(t) => flatten(&key, t, out)?,
                    other => {
                        return Err(format!(
                            "[sweep] {key} must list its values (an array), got {other}"
                        ));
                    }
                }
            }
            Ok(())
        }
        let table = toml::Table::deserialize(d)?;
        let mut axes = BTreeMap::new();
        flatten("", table, &mut axes).map_err(serde::de::Error::custom)?;
        Ok(Self { axes })
    }
}
