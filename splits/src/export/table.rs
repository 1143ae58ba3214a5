//! The tables of the Hugging Face and MTEB exports: each written as Parquet (polars, fixed
//! options: zstd, one row group up to 512² rows, statistics as polars writes them) and described by
//! the `features` list a README's `dataset_info:` block gives `datasets`.
//!
//! Polars stores strings as Arrow string views and says so in the file's Arrow schema, which
//! `datasets` would report as `Value('string_view')`; the README's features declare `string`, so
//! `load_dataset` casts them to plain strings (the Parquet columns are UTF-8 byte arrays either
//! way, which any Parquet reader takes).

use polars::prelude::{
    Column, DataFrame, IntoColumn, ListBuilderTrait, ListStringChunkedBuilder, NamedFrom, ParquetWriter,
    Series,
};

use crate::error::{Error, Result};

/// The values of one column.
#[derive(Debug, Clone)]
pub(super) enum Values {
    /// Strings (`string`).
    Str(Vec<String>),
    /// Strings, some missing (`string`, nullable).
    OptStr(Vec<Option<String>>),
    /// Unsigned integers, some missing (`uint32`, nullable).
    OptU32(Vec<Option<u32>>),
    /// Integers (`int32`).
    I32(Vec<i32>),
    /// Lists of strings (`list: string`).
    StrList(Vec<Vec<String>>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Str(v) => v.len(),
            Values::OptStr(v) => v.len(),
            Values::OptU32(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::StrList(v) => v.len(),
        }
    }

    /// The feature's YAML under `- name: …` (indented by `pad`).
    fn feature_yaml(&self, pad: &str) -> String {
        match self {
            Values::Str(_) | Values::OptStr(_) => format!("{pad}  dtype: string\n"),
            Values::OptU32(_) => format!("{pad}  dtype: uint32\n"),
            Values::I32(_) => format!("{pad}  dtype: int32\n"),
            Values::StrList(_) => format!("{pad}  list: string\n"),
        }
    }

    fn column(&self, name: &str) -> Column {
        match self {
            Values::Str(v) => Series::new(name.into(), v).into_column(),
            Values::OptStr(v) => Series::new(name.into(), v).into_column(),
            Values::OptU32(v) => Series::new(name.into(), v).into_column(),
            Values::I32(v) => Series::new(name.into(), v).into_column(),
            Values::StrList(v) => {
                let total = v.iter().map(Vec::len).sum();
                let mut b = ListStringChunkedBuilder::new(name.into(), v.len(), total);
                for list in v {
                    b.append_values_iter(list.iter().map(String::as_str));
                }
                b.finish().into_column()
            }
        }
    }
}

/// A table: named columns of equal length, in order.
#[derive(Debug, Clone, Default)]
pub(super) struct Table {
    columns: Vec<(&'static str, Values)>,
}

impl Table {
    /// Adds a column.
    pub(super) fn col(mut self, name: &'static str, values: Values) -> Self {
        self.columns.push((name, values));
        self
    }

    /// The values of column `name`.
    #[cfg(test)]
    pub(super) fn column(&self, name: &str) -> Option<&Values> {
        self.columns.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Its rows.
    pub(super) fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, v)| v.len())
    }

    /// The `features:` entries of a README's `dataset_info` (each line indented by `pad`).
    pub(super) fn features_yaml(&self, pad: &str) -> String {
        let mut s = String::new();
        for (name, values) in &self.columns {
            s.push_str(&format!("{pad}- name: {}\n", super::card::yaml_str(name)));
            s.push_str(&values.feature_yaml(pad));
        }
        s
    }

    /// The table as Parquet bytes; `rel` (the file it becomes) names it in errors.
    pub(super) fn parquet(&self, rel: &str) -> Result<Vec<u8>> {
        let rows = self.rows();
        if let Some((name, v)) = self.columns.iter().find(|(_, v)| v.len() != rows) {
            return Err(Error::Empty(format!(
                "internal: {rel}: column {name} has {} rows, not {rows}",
                v.len()
            )));
        }
        let err = |e: polars::prelude::PolarsError| Error::Empty(format!("writing {rel} (Parquet): {e}"));
        let columns = self.columns.iter().map(|(n, v)| v.column(n)).collect();
        let mut df = DataFrame::new(rows, columns).map_err(err)?;
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).map_err(err)?;
        Ok(bytes)
    }
}
