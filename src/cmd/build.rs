//! `lexbench build ecthr|bsard`, `lexbench import release`, `lexbench split`, `lexbench stats`,
//! `lexbench diff`: arguments and printing around [`lexbench::build`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use lexbench::build::{self as lib, BsardSource, EcthrOptions, SplitOptions};
use lexbench_core::datadir::DataDir;
use lexbench_splits::assemble::LabelKinds;
use lexbench_splits::write::Written;

use crate::cmd::args::ReportFormat;

/// Which dataset to build.
#[derive(Debug, Subcommand)]
pub enum BuildCommand {
    /// The ECtHR paragraph-retrieval dataset from DATA/parsed/ecthr (run `lexbench parse store` first).
    Ecthr(BuildEcthrArgs),
    /// The BSARD dataset from its CSV files (a folder, or the crawl in DATA/raw).
    Bsard(BuildBsardArgs),
    /// The open-corpus setting of an ECtHR dataset with judgment texts: one topic per guide heading,
    /// ranking every paragraph of every judgment; relevant: every paragraph cited under the heading.
    Open(BuildOpenArgs),
}

/// Arguments of `lexbench build open`.
#[derive(Debug, Args)]
pub struct BuildOpenArgs {
    /// The ECtHR dataset it is derived from (a name under DATA/datasets, or a folder).
    #[arg(long)]
    pub from: String,
    /// The dataset's name (DATA/datasets/NAME) [default: FROM-open].
    #[arg(long, value_parser = crate::name_arg)]
    pub name: Option<String>,
}

/// Arguments of `lexbench build bsard`.
#[derive(Debug, Args)]
pub struct BuildBsardArgs {
    /// The dataset's name.
    #[arg(long, default_value = "bsard", value_parser = crate::name_arg)]
    pub name: String,
    /// A folder with articles_fr.csv, questions_fr_train.csv, questions_fr_test.csv (or their names
    /// since 2023: articles.csv, questions_train.csv, questions_test.csv); default: the
    /// files `lexbench crawl bsard` stored (DATA/raw/index/bsard.jsonl).
    #[arg(long)]
    pub from: Option<PathBuf>,
}

/// Arguments of `lexbench build ecthr`.
#[derive(Debug, Args)]
pub struct BuildEcthrArgs {
    /// The dataset's name (DATA/datasets/NAME).
    #[arg(long, default_value = "ecthr", value_parser = crate::name_arg)]
    pub name: String,
    /// A split configuration (JSON: seed, unseen_guides, shares); default: the paper's proportions.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
    /// Override the configuration's seed (a whole number ≥ 0).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::cmd::args::unsigned::<u64>)]
    pub seed: Option<u64>,
    /// Also draw SVG histograms for the dataset card (DATA/datasets/NAME/plots/).
    #[arg(long)]
    pub plots: bool,
    /// Also derive its open-corpus setting, DATA/datasets/NAME-open (`lexbench build open`).
    #[arg(long)]
    pub open: bool,
    /// Which pinpoints become labels: `all` (direct, deferred, previous sentence, ibid) or `release`
    /// (direct and ibid only, the published release's kinds, for `lexbench diff` against it).
    #[arg(long, value_enum, default_value_t = Labels::All)]
    pub labels: Labels,
}

/// `--labels` of `lexbench build ecthr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Labels {
    /// Every pinpoint the guides give.
    All,
    /// The published release's kinds: direct and ibid.
    Release,
}

impl From<Labels> for LabelKinds {
    fn from(l: Labels) -> Self {
        match l {
            Labels::All => LabelKinds::All,
            Labels::Release => LabelKinds::Release,
        }
    }
}

/// Arguments of `lexbench split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// The ECtHR dataset whose pairs are split again (a name under DATA/datasets).
    pub dataset: String,
    /// The new dataset's name (default: DATASET-split).
    #[arg(long, value_parser = crate::name_arg)]
    pub name: Option<String>,
    /// A split configuration (JSON); default: the paper's proportions and the release's held-out guides.
    #[arg(long)]
    pub split_config: Option<PathBuf>,
    /// Override the configuration's seed (a whole number ≥ 0).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::cmd::args::unsigned::<u64>)]
    pub seed: Option<u64>,
}

/// Arguments of `lexbench stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The dataset (a name under DATA/datasets, or a path).
    #[arg(
        required_unless_present = "bsard_questions",
        conflicts_with = "bsard_questions"
    )]
    pub dataset: Option<String>,
    /// Instead of a dataset: count BSARD question files alone (questions, question–article pairs,
    /// articles cited, categories), without the articles file a build needs. Each is a questions CSV
    /// or a folder holding questions_fr_train.csv / questions_fr_test.csv.
    #[arg(long, num_args = 1.., value_name = "FILE_OR_DIR")]
    pub bsard_questions: Vec<PathBuf>,
}

/// Arguments of `lexbench import release`.
#[derive(Debug, Args)]
pub struct ImportReleaseArgs {
    /// The release folder (training.jsonl, validation.jsonl, testing.jsonl, unseen_article.jsonl, unseen.jsonl).
    pub dir: PathBuf,
    /// Judgment texts, repeatable: a folder of `<itemid>.txt|.docx|.html|.json` (one printed paragraph
    /// per line as text, or any format `lexbench parse judgment` reads) or a `.jsonl` segmented corpus
    /// (one judgment a line: itemid, case_name, source_file, paragraphs [{num, text}]). A judgment's
    /// text comes from the first source given that parses it; where sources share a judgment they are
    /// compared (on the card and in `lexbench stats`). Pairs without a usable text, or missing a
    /// labelled paragraph from it, are left out and counted. Without it, judgments come from the
    /// parsed store.
    #[arg(long, value_name = "SRC")]
    pub texts: Vec<PathBuf>,
    /// The dataset's name (default `ecthr-release`, or `ecthr-release-text` with `--texts`).
    #[arg(long, value_parser = crate::name_arg)]
    pub name: Option<String>,
    /// Also derive its open-corpus setting, DATA/datasets/NAME-open (`lexbench build open`; needs
    /// `--texts`).
    #[arg(long, requires = "texts")]
    pub open: bool,
}

/// Arguments of `lexbench import lexclipr`.
#[derive(Debug, Args)]
pub struct ImportLexcliprArgs {
    /// The LexCLiPR folder (labels.jsonl, judgments.jsonl).
    pub dir: PathBuf,
    /// Query languages to import, repeatable (en, fr, it, ro, ru, tr, uk, or their English names);
    /// default: every language of the labels. Each becomes DATA/datasets/ecthr-xl-<code>.
    #[arg(long = "lang", value_name = "LANG", num_args = 1.., value_parser = lang_arg)]
    pub langs: Vec<lexbench_core::dataset::Language>,
    /// Also write the languages' union, DATA/datasets/ecthr-xl-all, to train one model on every
    /// language: each language's topics in its own split, less the training topics citing what any
    /// language evaluates (LexCLiPR splits each language on its own).
    #[arg(long)]
    pub union: bool,
}

fn lang_arg(s: &str) -> std::result::Result<lexbench_core::dataset::Language, String> {
    lexbench_core::dataset::Language::parse(s)
        .ok_or_else(|| format!("unknown language {s:?} (en, fr, it, ro, ru, tr, uk)"))
}

/// Arguments of `lexbench diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The dataset to compare (a name under DATA/datasets, or a path).
    pub dataset: String,
    /// The dataset to compare against.
    #[arg(long)]
    pub against: String,
}

fn report(w: &Written, dir: &Path) {
    for (split, sizes) in &w.stats.splits {
        eprintln!(
            "  {split:<13} {:>6} pairs {:>5} queries {:>5} judgments",
            sizes.get("pairs").unwrap_or(&0),
            sizes.get("queries").unwrap_or(&0),
            sizes.get("judgments").unwrap_or(&0)
        );
    }
    eprintln!(
        "  certificate: {}; dataset {} → {}",
        if w.certificate.passed { "passed" } else { "FAILED" },
        &w.manifest.dataset_hash()[..16],
        dir.display()
    );
}

fn open_report(b: &lib::Built<lexbench_splits::open::OpenWritten>) {
    let w = &b.written;
    eprintln!(
        "open corpus: {} paragraphs of {} judgments, derived from {}",
        w.stats.corpus_paragraphs, w.stats.corpus_judgments, w.certificate.derived_from.name
    );
    for (split, sizes) in &w.stats.splits {
        eprintln!(
            "  {split:<13} {:>6} topics {:>7} relevant {:>5} judgments",
            sizes.get("topics").unwrap_or(&0),
            sizes.get("relevant").unwrap_or(&0),
            sizes.get("judgments").unwrap_or(&0)
        );
    }
    eprintln!(
        "  certificate: {}; dataset {} → {}",
        if w.certificate.passed { "passed" } else { "FAILED" },
        &w.manifest.dataset_hash()[..16],
        b.dir.display()
    );
}

/// Runs `lexbench split`: the pairs of a built dataset split again into a new dataset.
pub fn cmd_split(data: &DataDir, args: &SplitArgs) -> Result<ExitCode> {
    let r = lib::split_dataset(
        data,
        &SplitOptions {
            dataset: args.dataset.clone(),
            name: args.name.clone(),
            split_config: args.split_config.clone(),
            seed: args.seed,
        },
    )?;
    eprintln!(
        "split {} pairs of {} with seed {}",
        r.pairs,
        args.dataset,
        r.seed.unwrap_or_default()
    );
    report(&r.built.written, &r.built.dir);
    Ok(ExitCode::SUCCESS)
}

/// Runs `lexbench stats`: prints the dataset's version, statistics and certificate summary, as text
/// (`--format human`, the default) or as one JSON document (`--format json`).
pub fn cmd_stats(data: &DataDir, args: &StatsArgs, format: ReportFormat) -> Result<ExitCode> {
    let Some(dataset) = &args.dataset else {
        let report = serde_json::to_value(lib::bsard_questions_report(&args.bsard_questions)?)?;
        match format {
            ReportFormat::Human => print!("{}", render_questions_human(&report)),
            ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        }
        return Ok(ExitCode::SUCCESS);
    };
    let out = lib::dataset_stats(data, dataset)?;
    match format {
        ReportFormat::Human => print!("{}", render_stats_human(&out)),
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&out)?),
    }
    Ok(ExitCode::SUCCESS)
}

/// `stats --bsard-questions` for people: per file its path, one line per count (as `stats` prints
/// them), each repeated article as a note; then the files together.
fn render_questions_human(report: &serde_json::Value) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    if let Some(files) = report["files"].as_object() {
        for (split, f) in files {
            let mut counts = f.clone();
            if let Some(m) = counts.as_object_mut() {
                m.remove("file");
                m.remove("repeated");
            }
            let title = format!("{split}  {}", f["file"].as_str().unwrap_or_default());
            render_block(&mut s, &title, &counts);
            for r in f["repeated"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    s,
                    "  note: line {}: question {} lists article {} {} times",
                    r["line"],
                    r["question"].as_str().unwrap_or_default(),
                    r["article"].as_str().unwrap_or_default(),
                    r["times"]
                );
            }
        }
    }
    let mut all = report["all"].clone();
    for key in ["questions_in_several_files", "articles_in_several_files"] {
        all[key] = report[key].clone();
    }
    render_block(&mut s, "all files", &all);
    s
}

/// A title, then one indented `key  value` line per statistic of `v` ([`flatten_stats`]).
fn render_block(s: &mut String, title: &str, v: &serde_json::Value) {
    use std::fmt::Write;
    let _ = writeln!(s, "{title}");
    let mut lines = Vec::new();
    flatten_stats("", v, &mut lines);
    let width = lines.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    for (key, value) in lines {
        let pad = width - key.chars().count();
        let _ = writeln!(s, "  {key}{:pad$}  {value}", "");
    }
}

/// `stats` for people: the dataset and version, the certificate, then one line per statistic (nested
/// keys joined with `.`; a distribution `{n, min, median, mean, max}` on one line).
fn render_stats_human(out: &serde_json::Value) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let _ = writeln!(s, "dataset  {}", text(&out["dataset"]));
    let _ = writeln!(s, "version  {}", text(&out["version"]));
    if let Some(c) = out.get("certificate") {
        let passed = c["passed"].as_bool() == Some(true);
        let _ = writeln!(s, "certificate  {}", if passed { "passed" } else { "FAILED" });
        if let Some(shared) = c["shared_judgments"].as_object() {
            for (pair, n) in shared.iter().filter(|(_, n)| n.as_u64() != Some(0)) {
                let _ = writeln!(s, "  shared judgments {pair}: {n}");
            }
        }
    }
    if let Some(rows) = out["beside_paper"].as_array() {
        let _ = writeln!(
            s,
            "beside the paper (Santosh et al. 2024, the dataset's section):"
        );
        let w = rows
            .iter()
            .map(|r| text(&r["measure"]).chars().count())
            .max()
            .unwrap_or(0);
        let _ = writeln!(s, "  {:w$}  {:>14}  {:>14}", "", "here", "paper");
        for r in rows {
            let m = text(&r["measure"]);
            let pad = w - m.chars().count();
            let _ = writeln!(
                s,
                "  {m}{:pad$}  {:>14}  {:>14}",
                "",
                text(&r["here"]),
                text(&r["paper"])
            );
        }
    }
    let mut lines = Vec::new();
    flatten_stats("", &out["stats"], &mut lines);
    if let Some(t) = out.get("text_sources") {
        flatten_stats("text_sources", t, &mut lines);
    }
    let width = lines.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    for (key, value) in lines {
        let pad = width - key.chars().count();
        let _ = writeln!(s, "  {key}{:pad$}  {value}", "");
    }
    s
}

/// `path → value` lines of a statistics object, in key order.
fn flatten_stats(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    let num = |v: &serde_json::Value| match v.as_f64() {
        Some(x) if x.fract() == 0.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => v.to_string(),
    };
    match v {
        serde_json::Value::Object(m)
            if ["n", "min", "median", "mean", "max"]
                .iter()
                .all(|k| m.contains_key(*k)) =>
        {
            let parts: Vec<String> = ["n", "min", "median", "mean", "max"]
                .iter()
                .map(|k| format!("{k} {}", num(&m[*k])))
                .collect();
            out.push((prefix.to_owned(), parts.join("  ")));
        }
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_stats(&key, v, out);
            }
        }
        serde_json::Value::String(t) => out.push((prefix.to_owned(), t.clone())),
        other => out.push((prefix.to_owned(), num(other))),
    }
}

/// Runs `lexbench build`.
pub fn cmd_build(data: &DataDir, cmd: &BuildCommand) -> Result<ExitCode> {
    match cmd {
        BuildCommand::Ecthr(args) => {
            let b = lib::build_ecthr(
                data,
                &EcthrOptions {
                    name: args.name.clone(),
                    split_config: args.split_config.clone(),
                    seed: args.seed,
                    plots: args.plots,
                    labels: args.labels.into(),
                },
            )?;
            eprintln!(
                "ecthr: {} pairs from {} citations",
                b.assembly.pairs, b.assembly.citations
            );
            for (reason, n) in &b.assembly.dropped {
                eprintln!("  not a label ({reason}): {n}");
            }
            for w in &b.warnings {
                eprintln!("warning: {w}");
            }
            report(&b.built.written, &b.built.dir);
            if args.open {
                open_report(&lib::build_open(data, &args.name, None)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        BuildCommand::Open(args) => {
            open_report(&lib::build_open(data, &args.from, args.name.as_deref())?);
            Ok(ExitCode::SUCCESS)
        }
        BuildCommand::Bsard(args) => {
            let from = match &args.from {
                Some(dir) => BsardSource::Folder(dir.clone()),
                None => BsardSource::RawStore,
            };
            let b = lib::build_bsard(data, &args.name, &from)?;
            let w = &b.written;
            eprintln!(
                "bsard: {} articles, questions {:?}, graph of {} nodes and {} hierarchy edges; dataset {} → {}",
                w.articles,
                w.questions,
                w.graph.0,
                w.graph.1,
                &w.manifest.dataset_hash()[..16],
                b.dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs `lexbench import release`.
pub fn cmd_import_release(data: &DataDir, args: &ImportReleaseArgs) -> Result<ExitCode> {
    if args.texts.is_empty() {
        let r = lib::import_release(data, &args.dir, args.name.as_deref().unwrap_or("ecthr-release"))?;
        eprintln!("imported {} pairs", r.pairs);
        report(&r.built.written, &r.built.dir);
        return Ok(ExitCode::SUCCESS);
    }
    let name = args.name.as_deref().unwrap_or("ecthr-release-text");
    let (r, dropped, t) = lib::import_release_texts(data, &args.dir, &args.texts, name)?;
    eprintln!("text sources ({}):", t.precedence);
    for s in &t.sources {
        eprintln!(
            "  {}. {} ({}): {} release judgments parsed, {} did not parse, {} used",
            s.rank, s.source, s.kind, s.parsed, s.unparsed, s.used
        );
        if let Some(b) = &s.blocks_left_out {
            eprintln!(
                "     {} blocks of these judgments left out of their numbered paragraphs ({})",
                b.values().sum::<usize>(),
                lib::blocks_by_reason(b)
            );
        }
        print_capped(
            s.repeated_numbers
                .iter()
                .map(|r| format!("     repeated_number: {r}")),
            s.repeated_numbers.len(),
            "judgments with a repeated number",
        );
    }
    for (key, a) in &t.agreement {
        let f = |x: Option<f64>| x.map_or_else(|| "-".to_owned(), |x| format!("{x:.3}"));
        eprint!(
            "  sources {key}: {} judgments in common, mean number share {}, mean opening agreement {}",
            a.judgments,
            f(a.mean_number_share),
            f(a.mean_opening_agreement)
        );
        match &a.worst {
            Some(w) => eprintln!(
                ", worst {} (share {:.3}, openings {:.3})",
                w.item, w.number_share, w.opening_agreement
            ),
            None => eprintln!(),
        }
    }
    eprintln!(
        "left out {} pairs: {} whose judgment has no text in any source, {} whose text did not parse, \
         {} with a labelled paragraph missing from the text used",
        dropped.no_text + dropped.unparsed + dropped.missing_paragraph,
        dropped.no_text,
        dropped.unparsed,
        dropped.missing_paragraph
    );
    print_capped(
        dropped
            .judgments
            .iter()
            .map(|(item, why)| format!("  left out {item}: {why}")),
        dropped.judgments.len(),
        "judgments left out",
    );
    eprintln!(
        "  {:<13} {:>8} {:>6} {:>8} {:>9} {:>8}",
        "setting", "release", "kept", "no_text", "unparsed", "missing"
    );
    for (split, n) in &t.release_pairs {
        let left = t.left_out_per_setting.get(split);
        let reason = |r: &str| left.and_then(|m| m.get(r)).copied().unwrap_or(0);
        eprintln!(
            "  {split:<13} {n:>8} {:>6} {:>8} {:>9} {:>8}",
            t.kept.get(split).copied().unwrap_or(0),
            reason("no_text"),
            reason("unparsed"),
            reason("missing_paragraph")
        );
    }
    eprintln!("imported {} pairs", r.pairs);
    report(&r.built.written, &r.built.dir);
    if args.open {
        open_report(&lib::build_open(data, name, None)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `lexbench import lexclipr`: one dataset per language, then a table of rows per split.
pub fn cmd_import_lexclipr(data: &DataDir, args: &ImportLexcliprArgs) -> Result<ExitCode> {
    let (imports, union) = lexbench::lexclipr::import_lexclipr(data, &args.dir, &args.langs, args.union)?;
    for x in &imports {
        let r = &x.report;
        eprintln!(
            "{}: queries {} (BM25 analyser: {}), corpus {}",
            r.dataset,
            r.query_language.code(),
            lexbench::lexclipr::query_analyser(r.query_language),
            r.corpus_language.code()
        );
        eprintln!(
            "  {:<10} {:>6} {:>6} {:>7} {:>7} {:>12} {:>18} {:>20} {:>15}",
            "split",
            "rows",
            "kept",
            "merged",
            "topics",
            "no_judgment",
            "missing_paragraph",
            "topic_in_two_splits",
            "train_all_only"
        );
        for (split, c) in &r.rows {
            let n = |k: &str| c.left_out.get(k).copied().unwrap_or(0);
            eprintln!(
                "  {split:<10} {:>6} {:>6} {:>7} {:>7} {:>12} {:>18} {:>20} {:>15}",
                c.rows,
                c.kept,
                c.merged,
                r.topics.get(split).copied().unwrap_or(0),
                n("no_judgment"),
                n("missing_paragraph"),
                n("topic_in_two_splits"),
                n("train_all_only")
            );
        }
        if r.query_language != lexbench_core::dataset::Language::English {
            eprintln!(
                "  {} topics linked to English ones, {} ambiguous",
                r.english_links, r.ambiguous_links
            );
        }
        report(&x.built.written, &x.built.dir);
    }
    if let Some(u) = union {
        let r = &u.report;
        eprintln!(
            "{}: the union of {}; topics per split (the languages' / kept / left out by reason)",
            r.dataset,
            r.languages
                .iter()
                .map(|l| l.code())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (split, c) in &r.topics {
            let n = |k: &str| c.left_out.get(k).copied().unwrap_or(0);
            eprintln!(
                "  {split:<6} {:>6} {:>6}  cited_in_an_evaluation_split {}, same_topic_in_another_language {}",
                c.topics,
                c.kept,
                n("cited_in_an_evaluation_split"),
                n("same_topic_in_another_language")
            );
        }
        report(&u.built.written, &u.built.dir);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the first [`SHOWN_LINES`] of `lines` on stderr, then how many more there are (`n` in all,
/// every one of them on the dataset's card).
fn print_capped(lines: impl Iterator<Item = String>, n: usize, what: &str) {
    for line in lines.take(SHOWN_LINES) {
        eprintln!("{line}");
    }
    if n > SHOWN_LINES {
        eprintln!(
            "  … and {} more {what} (all on the dataset's card)",
            n - SHOWN_LINES
        );
    }
}

/// How many lines of one kind `import release --texts` prints before counting the rest.
const SHOWN_LINES: usize = 10;

/// Runs `lexbench diff`: prints what differs per split, as a table (`--format human`, the default)
/// or as one JSON document (`--format json`); exit 1 when the datasets differ.
pub fn cmd_diff(data: &DataDir, args: &DiffArgs, format: ReportFormat) -> Result<ExitCode> {
    let (d, same) = lib::diff_datasets(data, &args.dataset, &args.against)?;
    match format {
        ReportFormat::Human => print!("{}", render_diff_human(&d, &args.dataset, &args.against, same)),
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&d)?),
    }
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `diff` for people: one row per split (queries and pairs added / removed, pairs changed / the
/// same), its samples under it, then the verdict.
fn render_diff_human(
    d: &lexbench_splits::diff::DiffReport,
    dataset: &str,
    against: &str,
    same: bool,
) -> String {
    use std::fmt::Write;
    let mut s = format!(
        "{:<13} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}\n",
        "split", "queries+", "queries-", "pairs+", "pairs-", "changed", "same"
    );
    for (split, x) in d {
        let _ = writeln!(
            s,
            "{split:<13} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
            x.queries_added, x.queries_removed, x.pairs_added, x.pairs_removed, x.pairs_changed, x.pairs_same
        );
        for sample in &x.samples {
            let _ = writeln!(s, "  {sample}");
        }
    }
    let verdict = if same { "the same" } else { "different" };
    let _ = writeln!(s, "{dataset} and {against} are {verdict}");
    s
}
