//! The README every export carries: for the Hugging Face folders the YAML front matter `datasets`
//! reads (`configs:`, `dataset_info:`), then the dataset card — version, task, files, statistics,
//! sources, label kinds, licence notes and the dataset's own `card.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::table::Table;
use super::{Format, Source};

/// `s` as a YAML scalar: JSON's double-quoted string, which YAML reads the same way.
pub(super) fn yaml_str(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// One split of a [`Config`]: its Parquet file (relative to the export), rows and bytes.
pub(super) struct SplitFile {
    /// The split's name.
    pub name: String,
    /// Its file.
    pub path: String,
    /// Its rows.
    pub rows: usize,
    /// The file's size (the README's `num_bytes`, a size hint `datasets` does not check).
    pub bytes: usize,
}

/// One `configs:` entry of a Hugging Face README: its name, its schema, and its splits' files.
pub(super) struct Config<'a> {
    /// The config's name (`corpus`, `queries`, `qrels`, `pools`, `default`).
    pub name: &'static str,
    /// Whether `load_dataset(DIR)` without a config name opens it.
    pub default: bool,
    /// A table of the config, for its features (every split shares them).
    pub schema: &'a Table,
    /// Its splits.
    pub splits: Vec<SplitFile>,
}

/// The YAML front matter of a Hugging Face README, `---` lines included: the card's metadata, then
/// `dataset_info` (features and rows of each config's splits, which `datasets` checks on loading)
/// and `configs` (which file is which split).
pub(super) fn front_matter(src: &Source, configs: &[Config<'_>]) -> String {
    let mut s = String::from("---\n");
    let _ = writeln!(s, "pretty_name: {}", yaml_str(&title(src)));
    if let Some(lang) = src.language {
        let code = lang.code();
        let _ = writeln!(s, "language:\n- {code}");
    }
    let _ = writeln!(
        s,
        "license: {}",
        if src.ecthr() { "other" } else { "cc-by-nc-sa-4.0" }
    );
    s.push_str(
        "task_categories:\n- text-retrieval\ntask_ids:\n- document-retrieval\ntags:\n- legal\n- lexbench\n",
    );
    s.push_str("dataset_info:\n");
    for c in configs {
        let _ = writeln!(s, "- config_name: {}", c.name);
        s.push_str("  features:\n");
        s.push_str(&c.schema.features_yaml("  "));
        s.push_str("  splits:\n");
        for f in &c.splits {
            let _ = writeln!(
                s,
                "  - name: {}\n    num_bytes: {}\n    num_examples: {}",
                f.name, f.bytes, f.rows
            );
        }
    }
    s.push_str("configs:\n");
    for c in configs {
        let _ = writeln!(s, "- config_name: {}", c.name);
        if c.default {
            s.push_str("  default: true\n");
        }
        s.push_str("  data_files:\n");
        for f in &c.splits {
            let _ = writeln!(s, "  - split: {}\n    path: {}", f.name, yaml_str(&f.path));
        }
    }
    s.push_str("---\n\n");
    s
}

/// The card's title.
fn title(src: &Source) -> String {
    if src.pooled() {
        format!(
            "{}: ECtHR query-driven paragraph retrieval (per-judgment reranking)",
            src.name
        )
    } else if src.ecthr() {
        format!(
            "{}: ECtHR paragraph retrieval over the whole case law (open corpus)",
            src.name
        )
    } else {
        format!("{}: statutory article retrieval (BSARD)", src.name)
    }
}

/// The dataset card in Markdown; `files` describes the export's layout (format-specific).
pub(super) fn card(src: &Source, format: Format, files: &str) -> String {
    let mut s = format!("# {}\n\n", title(src));
    s.push_str("## Version\n\n");
    let _ = writeln!(
        s,
        "Dataset `{}`, version `{}`: the sha256 of its manifest's file list, which `lexbench stats {}` \
         prints and every run and leaderboard entry records. Exported by {} as `{format}`; an export of \
         one version is the same, byte for byte, every time (`{}` lists each file's sha256).\n",
        src.name,
        src.version,
        src.name,
        if src.exported_by.is_empty() {
            "lexbench"
        } else {
            &src.exported_by
        },
        super::EXPORT_RECORD,
    );
    s.push_str("## Task\n\n");
    if src.pooled() {
        s.push_str(
            "Per-judgment reranking. Each topic pairs a query (a heading path of one of the Court's \
             case-law guides) with one judgment; a system ranks the paragraphs of that judgment only, \
             the topic's pool, never the whole corpus. The relevant paragraphs are those the guide cites \
             under the heading. The measure is Recall@k% (k = 2, 5, 10): recall within the top \
             max(1, ⌈k·n/100⌉) paragraphs of a pool of n, so it needs each topic's pool, which the \
             export carries. Several topics share a query (one per judgment the heading cites).\n\n",
        );
    } else if src.ecthr() {
        s.push_str(
            "Open-corpus retrieval. Each topic is a heading path of one of the Court's case-law guides; a \
             system ranks every paragraph of every judgment in the corpus. The relevant paragraphs are all \
             those the guides cite under the heading, in any judgment. Measures: nDCG@10, R@100, R@1000, \
             MAP and MRR@10. A plain retrieval task: no candidates, no pools.\n\n",
        );
    } else {
        s.push_str(
            "Every question ranks the whole corpus of statutory articles. Measures: R@100, R@200, \
             R@500, MAP and R-Precision (as the BSARD, CuSINeS and QABISAR papers report them).\n\n",
        );
    }
    s.push_str("## Files\n\n");
    s.push_str(files);
    s.push_str("\n## Statistics\n\n");
    s.push_str(&statistics(src));
    s.push_str("\n## Sources\n\n");
    if src.ecthr() {
        s.push_str(
            "Judgments from HUDOC (hudoc.echr.coe.int) and the Court's case-law guides, crawled and \
             parsed by lexbench. The task and its published release: Santosh et al., *Query-driven \
             Relevant Paragraph Extraction from Legal Judgments*, LREC-COLING 2024.",
        );
    } else {
        s.push_str(
            "BSARD: Louis & Spanakis, *A Statutory Article Retrieval Dataset in French*, ACL 2022 \
             (French questions and the articles of Belgian codes; huggingface.co/datasets/maastrichtlawtech/bsard), \
             read from its CSV files by lexbench.",
        );
    }
    if let Some(line) = src
        .card
        .as_deref()
        .and_then(|c| c.lines().find(|l| l.starts_with("Sources:")))
    {
        let _ = write!(
            s,
            " This build: {}.",
            line.trim_start_matches("Sources:").trim().trim_end_matches('.')
        );
    }
    s.push_str("\n\n");
    if let Some(labels) = &src.labels {
        s.push_str("## Label kinds\n\n");
        let list = |m: &BTreeMap<String, usize>| {
            m.iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "From `audit.jsonl`, one line per label. How the pinpoint was tied to its case: {}. \
             How the citation was resolved to a judgment: {}.",
            list(&labels.read),
            list(&labels.how)
        );
        if let Some(line) = src
            .card
            .as_deref()
            .and_then(|c| c.lines().find(|l| l.starts_with("- Labels:")))
        {
            let _ = writeln!(s, "{}", line.trim_start_matches("- ").trim());
        }
        s.push('\n');
    }
    s.push_str("## Licence\n\n");
    if src.ecthr() {
        s.push_str(
            "Judgment and guide texts © Council of Europe / European Court of Human Rights, reusable \
             under the Court's terms (HUDOC); the relevance labels are derived by lexbench from the \
             guides' citations. No other licence is claimed over the texts: read the Court's terms \
             before redistributing an export.\n\n",
        );
    } else {
        s.push_str(
            "BSARD is published by its authors under CC BY-NC-SA 4.0 (non-commercial, share-alike); \
             the statutes themselves are Belgian law. A BSARD-format dataset built from other files \
             (lexbench's embedded sample is fictional) carries those files' terms.\n\n",
        );
    }
    if let Some(card) = &src.card {
        s.push_str("## The dataset's card (`card.md`)\n\n");
        for line in card.lines() {
            // One level down: the card's own title becomes a section of this one.
            if line.starts_with('#') {
                s.push('#');
            }
            s.push_str(line);
            s.push('\n');
        }
    }
    s
}

/// Rows per split, counted from what the export holds, and the dataset's `stats.json`.
fn statistics(src: &Source) -> String {
    let mut s = format!("Corpus: {} documents.\n\n", src.corpus.len());
    let pooled = src.pooled();
    s.push_str("| split | topics | queries | judgments | relevant |");
    s.push_str(if pooled {
        " pool sizes (min–max) |\n|---|---|---|---|---|---|\n"
    } else {
        "\n|---|---|---|---|---|\n"
    });
    for split in &src.splits {
        let queries: BTreeSet<_> = split
            .topics
            .iter()
            .filter_map(|t| src.topics.get(t).map(|d| &d.query))
            .collect();
        let judged: usize = split.qrels.values().map(BTreeMap::len).sum();
        let relevant: usize = split
            .qrels
            .values()
            .map(|d| d.values().filter(|&&g| g >= 1).count())
            .sum();
        let name = if split.hf_name == split.name {
            split.name.clone()
        } else {
            format!("{} (`{}`)", split.name, split.hf_name)
        };
        let _ = write!(
            s,
            "| {name} | {} | {} | {judged} | {relevant} |",
            split.topics.len(),
            queries.len()
        );
        if let Some(pools) = &src.pools {
            let sizes: Vec<usize> = split
                .topics
                .iter()
                .filter_map(|t| pools.get(t).map(Vec::len))
                .collect();
            match (sizes.iter().min(), sizes.iter().max()) {
                (Some(lo), Some(hi)) => {
                    let _ = write!(s, " {lo}–{hi} |");
                }
                _ => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    if split_names_differ(src) {
        s.push_str(
            "\nA split name with `-` is written with `_` where split names must be words \
             (Hugging Face `datasets`, MTEB), shown in brackets.\n",
        );
    }
    if let Some(stats) = &src.stats {
        s.push_str(
            "\nThe dataset's own statistics (`stats.json`, as `lexbench stats` prints them):\n\n```json\n",
        );
        s.push_str(stats.trim_end());
        s.push_str("\n```\n");
    }
    s
}

/// Does any split have another name in Hugging Face exports?
fn split_names_differ(src: &Source) -> bool {
    src.splits.iter().any(|s| s.hf_name != s.name)
}
