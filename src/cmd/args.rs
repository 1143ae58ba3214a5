//! Argument groups shared by several commands (`#[command(flatten)]`), and the global output format.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use lexbench::device::DeviceChoice;
use lexbench_baselines::Device;

/// `--dataset NAME --split NAME`: a split of a built dataset, both checked as names
/// ([`crate::name_arg`]) before anything is read.
#[derive(Debug, Clone, Args)]
pub struct DatasetSplit {
    /// The dataset (a folder under DATA/datasets).
    #[arg(long, value_parser = crate::name_arg)]
    pub dataset: String,
    /// The split (DATA/datasets/<dataset>/splits/<split>.json).
    #[arg(long, value_parser = crate::name_arg)]
    pub split: String,
}

/// `--device cpu|cuda|cuda:N`.
#[derive(Debug, Clone, Args)]
pub struct DeviceArg {
    /// Where the encoder runs: cpu, cuda or cuda:N [default: cuda when built with the `cuda`
    /// feature and a GPU is present, else cpu].
    #[arg(long, value_name = "cpu|cuda[:N]", value_parser = clap::value_parser!(DeviceChoice))]
    pub device: Option<DeviceChoice>,
}

impl DeviceArg {
    /// The device asked for, or the default.
    pub fn device(&self) -> Result<Device> {
        lexbench::device::resolve(self.device)
    }

    /// The flags that ask a child process for the same device (none for the default).
    pub fn args(&self) -> Vec<String> {
        self.device
            .map(|d| vec!["--device".to_owned(), d.to_string()])
            .unwrap_or_default()
    }
}

/// `--model DIR --device …`: an encoder and where it runs.
#[derive(Debug, Clone, Args)]
pub struct ModelDevice {
    /// The model folder (config.json, model.safetensors, tokenizer.json; or one `lexbench train`
    /// wrote).
    #[arg(long)]
    pub model: PathBuf,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// Output format (global `--format`): reports are `human` or `json`; parsed records `json` or
/// `jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned text for people (reports; their default).
    Human,
    /// One JSON document (parsed records: one pretty document per file, their default).
    Json,
    /// One JSON record per line (parsed records).
    Jsonl,
    /// `lexbench export`: a Hugging Face `datasets` folder (Parquet per config and split).
    Hf,
    /// `lexbench export`: BEIR's layout (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).
    Beir,
    /// `lexbench export`: an MTEB task (reranking for ECtHR, retrieval for BSARD).
    Mteb,
}

/// Output format of reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// Aligned text for people.
    Human,
    /// One JSON document.
    Json,
}

/// Output format of parsed records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordFormat {
    /// Pretty-printed JSON, one document per input file.
    Json,
    /// One JSON record per line.
    Jsonl,
}

impl OutputFormat {
    /// The format of a report `command` prints (default human); `jsonl` is refused.
    pub fn report(format: Option<Self>, command: &str) -> Result<ReportFormat> {
        Ok(match format {
            None | Some(OutputFormat::Human) => ReportFormat::Human,
            Some(OutputFormat::Json) => ReportFormat::Json,
            Some(OutputFormat::Jsonl) => bail!("--format jsonl: `{command}` prints human or json"),
            Some(OutputFormat::Hf | OutputFormat::Beir | OutputFormat::Mteb) => {
                bail!("--format hf|beir|mteb is for `lexbench export`; `{command}` prints human or json")
            }
        })
    }

    /// The format of records `command` prints (default json); `human` is refused.
    pub fn records(format: Option<Self>, command: &str) -> Result<RecordFormat> {
        Ok(match format {
            None | Some(OutputFormat::Json) => RecordFormat::Json,
            Some(OutputFormat::Jsonl) => RecordFormat::Jsonl,
            Some(OutputFormat::Human) => bail!("--format human: `{command}` prints json or jsonl"),
            Some(OutputFormat::Hf | OutputFormat::Beir | OutputFormat::Mteb) => {
                bail!("--format hf|beir|mteb is for `lexbench export`; `{command}` prints json or jsonl")
            }
        })
    }
}

/// A count, length or seed on the command line: a whole number ≥ 0, with a message that says so
/// for `-1` (read as a value, not taken for a flag) instead of the parser's "invalid digit", and
/// that names the bound for a whole number too large to hold (`18446744073709551615` for a `u32`).
pub(crate) fn unsigned<T: std::str::FromStr + Unsigned>(s: &str) -> std::result::Result<T, String> {
    let t = s.trim();
    t.parse().map_err(|_| {
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            format!("too large: must be a whole number from 0 to {}", T::MAX_TEXT)
        } else {
            "must be a whole number ≥ 0".to_owned()
        }
    })
}

/// The unsigned integer types of command-line values, with their largest value as text.
pub(crate) trait Unsigned {
    /// The largest value.
    const MAX_TEXT: &'static str;
}

impl Unsigned for u32 {
    const MAX_TEXT: &'static str = "4294967295";
}

impl Unsigned for u64 {
    const MAX_TEXT: &'static str = "18446744073709551615";
}

impl Unsigned for usize {
    #[cfg(target_pointer_width = "64")]
    const MAX_TEXT: &'static str = "18446744073709551615";
    #[cfg(target_pointer_width = "32")]
    const MAX_TEXT: &'static str = "4294967295";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_values_are_the_types_own() {
        assert_eq!(u32::MAX.to_string(), <u32 as Unsigned>::MAX_TEXT);
        assert_eq!(u64::MAX.to_string(), <u64 as Unsigned>::MAX_TEXT);
        assert_eq!(usize::MAX.to_string(), <usize as Unsigned>::MAX_TEXT);
    }
}
