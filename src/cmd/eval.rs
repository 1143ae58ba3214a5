//! `lexbench eval RUN QRELS`: trec_eval-exact evaluation from the command line.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use lexbench_core::{EvalParams, Evaluation, Measure, PoolSizes, Qrels, ReadOptions, Run, evaluate_with};

use crate::cmd::args::ReportFormat;

/// The measures `lexbench eval` reports when none are asked for: those `trec_eval -c -m map -m Rprec
/// -m recall.100 -m ndcg_cut.10` prints, plus the ECtHR task's R@k% when pool sizes are given.
const DEFAULT_MEASURES: &str = "AP,RPrec,R@100,nDCG@10";
const DEFAULT_POOL_MEASURES: &str = "R@2%,R@5%,R@10%";

/// Arguments of `lexbench eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The run: `topic Q0 doc rank score tag` per line. As in trec_eval, fields after the tag are
    /// ignored (one warning says how many lines had them).
    pub run: PathBuf,
    /// The qrels: `topic 0 doc relevance` per line.
    pub qrels: PathBuf,
    /// Comma-separated measures, ir_measures names: R@k, R@k% (R@k%nearest, R@k%floor: the cut-off rounded otherwise), P@k, AP, RPrec, nDCG@k, RR@k.
    /// [default: AP,RPrec,R@100,nDCG@10, plus R@2%,R@5%,R@10% with --pools]
    #[arg(long, short, value_delimiter = ',')]
    pub measures: Vec<String>,
    /// Also print every topic's values.
    #[arg(long)]
    pub per_topic: bool,
    /// Pool sizes for R@k%: the dataset's pools.jsonl (`{"topic": …, "docs": [...]}` per line).
    #[arg(long)]
    pub pools: Option<PathBuf>,
    /// The lowest grade that counts as relevant (trec_eval's -l). Used by R@k, R@k%, P@k, AP, RPrec
    /// and RR; nDCG's gains are the grades whatever this is, as in trec_eval.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true)]
    pub min_rel: i32,
}

/// Runs `lexbench eval`.
pub fn cmd_eval(args: &EvalArgs, format: ReportFormat) -> Result<ExitCode> {
    let measures: Vec<Measure> = if args.measures.is_empty() {
        let mut m = Measure::parse_list(DEFAULT_MEASURES)?;
        if args.pools.is_some() {
            m.extend(Measure::parse_list(DEFAULT_POOL_MEASURES)?);
        }
        m
    } else {
        args.measures
            .iter()
            .map(|m| m.trim().parse())
            .collect::<Result<_, _>>()
            .context("--measures")?
    };
    let params = EvalParams::new(args.min_rel).context("--min-rel")?;
    // Read runs as trec_eval does: fields after the sixth are ignored (a submission stays strict).
    let opts = ReadOptions {
        extra_run_fields: true,
        ..ReadOptions::default()
    };
    // The two files are read at once (the run, by far the larger, on all cores itself).
    let (qrels, run) = std::thread::scope(|scope| {
        let qrels = scope.spawn(|| Qrels::read(&args.qrels, &opts));
        let run = Run::read_with_notes(&args.run, &opts);
        let qrels = qrels.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (qrels, run)
    });
    let qrels = qrels.context("reading the qrels")?;
    let (run, notes) = run.context("reading the run")?;
    if let Some(first) = notes.first_line_with_extra_fields {
        let n = notes.lines_with_extra_fields;
        let (lines, have) = if n == 1 {
            ("line", "has")
        } else {
            ("lines", "have")
        };
        eprintln!(
            "warning: {n} {lines} of {} {have} fields after the sixth (first: line {first}); \
             ignored, as trec_eval does",
            args.run.display(),
        );
    }
    let pools = args
        .pools
        .as_deref()
        .map(PoolSizes::read)
        .transpose()
        .context("reading the pools")?;
    let ev = evaluate_with(&run, &qrels, &measures, pools.as_ref(), &params)?;
    report_notes(&ev);
    let out = match format {
        ReportFormat::Human => render_human(&ev, args.per_topic),
        ReportFormat::Json => render_json(&ev, args.per_topic)?,
    };
    print!("{out}");
    // The process ends here: freeing a million hits one by one would cost a tenth of the command's
    // time, and the operating system takes the memory back at once.
    std::mem::forget((run, qrels, ev));
    Ok(ExitCode::SUCCESS)
}

/// Topics that were ignored or scored 0 go to stderr, so stdout stays a clean report.
fn report_notes(ev: &Evaluation) {
    let list = |ts: &[lexbench_core::TopicId]| {
        let shown: Vec<&str> = ts.iter().take(10).map(|t| t.as_str()).collect();
        let more = if ts.len() > 10 {
            format!(" and {} more", ts.len() - 10)
        } else {
            String::new()
        };
        format!("{}{more}", shown.join(", "))
    };
    if !ev.missing_topics.is_empty() {
        eprintln!(
            "note: {} qrels topic(s) have no results in the run and score 0: {}",
            ev.missing_topics.len(),
            list(&ev.missing_topics)
        );
    }
    if !ev.ignored_topics.is_empty() {
        eprintln!(
            "note: {} run topic(s) are not in the qrels and are ignored: {}",
            ev.ignored_topics.len(),
            list(&ev.ignored_topics)
        );
    }
}

/// trec_eval's layout: `measure  topic  value`, values to 4 decimals, per-topic rows first.
fn render_human(ev: &Evaluation, per_topic: bool) -> String {
    let names: Vec<String> = ev.measures.iter().map(ToString::to_string).collect();
    let width = names.iter().map(String::len).max().unwrap_or(0).max(6);
    let mut out = String::new();
    if per_topic {
        for (topic, values) in &ev.per_topic {
            for (name, v) in names.iter().zip(values) {
                let _ = writeln!(out, "{name:<width$}\t{topic}\t{v:.4}");
            }
        }
    }
    let _ = writeln!(out, "{:<width$}\tall\t{}", "num_q", ev.per_topic.len());
    for (name, v) in names.iter().zip(&ev.mean) {
        let _ = writeln!(out, "{name:<width$}\tall\t{v:.4}");
    }
    out
}

fn render_json(ev: &Evaluation, per_topic: bool) -> Result<String> {
    use serde_json::{Map, Value, json};
    let by_name = |values: &[f64]| -> Map<String, Value> {
        ev.measures
            .iter()
            .zip(values)
            .map(|(m, v)| (m.to_string(), json!(v)))
            .collect()
    };
    let mut doc = json!({
        "num_topics": ev.per_topic.len(),
        "min_rel": ev.params.min_rel,
        "measures": by_name(&ev.mean),
        "missing_topics": ev.missing_topics,
        "ignored_topics": ev.ignored_topics,
    });
    if per_topic {
        let topics: Map<String, Value> = ev
            .per_topic
            .iter()
            .map(|(t, v)| (t.to_string(), Value::Object(by_name(v))))
            .collect();
        doc["per_topic"] = Value::Object(topics);
    }
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

/// Arguments of `lexbench project`.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// A run of the open-corpus setting (`lexbench run … --dataset OPEN --split SPLIT`).
    pub run: PathBuf,
    /// The open-corpus dataset it ranks (DATA/datasets/OPEN, made by `lexbench build open`).
    #[arg(long)]
    pub dataset: String,
    /// The split it ranks (train, unseen_query, unseen_guide).
    #[arg(long)]
    pub split: String,
    /// Also write each projected run as OUT/<source split>.trec.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs `lexbench project`: an open-corpus run read as the per-judgment task of the dataset it was
/// derived from (`lexbench::open`), R@k% per source split.
pub fn cmd_project(
    data: &lexbench_core::datadir::DataDir,
    args: &ProjectArgs,
    format: ReportFormat,
) -> Result<ExitCode> {
    let run = Run::read(&args.run, &ReadOptions::default()).context("reading the run")?;
    let (source, projected) = lexbench::open::project(data.root(), &args.dataset, &args.split, &run)?;
    if let Some(dir) = &args.out {
        for p in &projected {
            let path = dir.join(format!("{}.trec", p.split));
            p.run.write(&path)?;
            eprintln!("run: {}", path.display());
        }
    }
    match format {
        ReportFormat::Human => {
            println!(
                "{} {} read as {} (each cited judgment's paragraphs in the open ranking's order):",
                args.dataset, args.split, source
            );
            for p in &projected {
                let means = lexbench::open::means(p);
                let cells: Vec<String> = means.iter().map(|(m, v)| format!("{m}={v:.4}")).collect();
                println!(
                    "  {:<13} {:>5} pairs  {}",
                    p.split,
                    p.evaluation.per_topic.len(),
                    cells.join(" ")
                );
            }
        }
        ReportFormat::Json => {
            let doc: serde_json::Map<String, serde_json::Value> = projected
                .iter()
                .map(|p| {
                    (
                        p.split.clone(),
                        serde_json::json!({
                            "pairs": p.evaluation.per_topic.len(),
                            "measures": lexbench::open::means(p).into_iter().map(|(m, v)| (m, serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
                        }),
                    )
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({"source": source, "splits": doc}))?
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
