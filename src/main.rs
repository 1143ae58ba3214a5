//! The `lexbench` command line: a thin layer over the stage crates (`main → run(cli) → cmd_*`).
//!
//! Exit codes: 0 success, 1 a check failed, 2 an error (bad input, unreadable file), with the error
//! chain printed once.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use lexbench_core::datadir::DataDir;

/// One module per command: its arguments, the library call, the printing.
mod cmd {
    pub mod args;
    pub mod build;
    pub mod crawl;
    pub mod encode;
    pub mod eval;
    pub mod experiment;
    pub mod export;
    pub mod leaderboard;
    pub mod models;
    pub mod parse_citations;
    pub mod parse_guide;
    pub mod parse_judgment;
    pub mod parse_store;
    pub mod pipeline;
    pub mod reproduce;
    pub mod run;
    pub mod submit;
    pub mod train;
}
use cmd::args::{OutputFormat, RecordFormat};
use cmd::{
    build, crawl, encode, eval, experiment, export, leaderboard, models, parse_citations, parse_guide,
    parse_judgment, parse_store, pipeline, reproduce, run, submit, train,
};

/// Rebuild legal-retrieval benchmarks (ECtHR paragraph retrieval, BSARD) from their public sources,
/// run the baselines, evaluate and rank them.
#[derive(Debug, Parser)]
#[command(name = "lexbench", version, about, propagate_version = true)]
struct Cli {
    /// More logging (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,

    /// The data directory (raw store, parsed records, datasets, runs, leaderboard).
    #[arg(long, global = true, env = "LEXBENCH_DATA", default_value = "data")]
    data: PathBuf,

    /// Output format: human or json for reports (eval, submit, stats, diff; default human), json or jsonl for
    /// parsed records (parse judgment, parse guide; default json), hf, beir or mteb for `export`.
    #[arg(long, global = true, value_enum)]
    format: Option<OutputFormat>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Evaluate a TREC run against TREC qrels as `trec_eval -c` does (mean over every qrels topic).
    Eval(eval::EvalArgs),
    /// Read a run of an open-corpus setting as the per-judgment task it was derived from: each cited
    /// judgment's paragraphs in the open ranking's order, scored R@k% with that dataset's pools.
    Project(eval::ProjectArgs),
    /// Parse raw documents into records and print them.
    #[command(subcommand)]
    Parse(ParseCommand),
    /// Fetch and convert pretrained encoders (MODELS.md).
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Print the embeddings of texts as one JSON array (one array of floats per text).
    Encode(encode::EncodeArgs),
    /// Run every stage (crawl, parse, build, split, BM25, submit, leaderboard) on the embedded sample,
    /// or on the crawl already in DATA/raw.
    Pipeline(pipeline::PipelineArgs),
    /// Build a dataset from parsed records into DATA/datasets.
    #[command(subcommand)]
    Build(build::BuildCommand),
    /// Import a published dataset release.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Write a built dataset as a folder other tools open: a Hugging Face `datasets` folder, BEIR's
    /// layout or an MTEB task (--format hf|beir|mteb), into DATA/exports or --out.
    Export(export::ExportArgs),
    /// Compare two datasets per split: queries and pairs added, removed, changed (exit 1 if any).
    Diff(build::DiffArgs),
    /// Split the pairs of a built ECtHR dataset again (seed, held-out guides, shares) into a new dataset.
    Split(build::SplitArgs),
    /// Print a dataset's statistics and certificate summary (or, with --bsard-questions, the counts of
    /// BSARD question files alone).
    Stats(build::StatsArgs),
    /// Fetch public sources (HUDOC, the case-law guides, BSARD) into DATA/raw, politely and resumably.
    #[command(subcommand)]
    Crawl(crawl::CrawlCommand),
    /// Run a baseline over a dataset split: DATA/runs/<dataset>/<split>/<system>.trec + .json sidecar.
    #[command(subcommand)]
    Run(run::RunCommand),
    /// Record leaderboard entries: a run file validated against the split it claims and evaluated
    /// (self-reported), or a model the harness runs itself over every evaluated split (--model,
    /// verified).
    Submit(submit::SubmitArgs),
    /// Render DATA/leaderboard (index.md, site/index.html, SVG plots); check regression files;
    /// recheck a verified entry; export or import result files.
    Leaderboard(leaderboard::LeaderboardArgs),
    /// Make a leaderboard row again from the command that made it (recorded in its run's sidecar, or
    /// --command) and compare it with the row: bit for bit, or within a stated tolerance for training;
    /// recorded in DATA/leaderboard/reproductions.jsonl (`leaderboard --reproductions`).
    Reproduce(reproduce::ReproduceArgs),
    /// Fine-tune a model as a TOML experiment describes (baselines/configs/), resuming from checkpoints.
    Train(train::TrainArgs),
    /// A grid of trainings as one file (experiments/): plan its cells, run them on this machine or
    /// through SLURM, see where it stands, collect the selected models' runs and table.
    #[command(subcommand)]
    Experiment(experiment::ExperimentCommand),
    /// The trainable-parameter share ("% train") of the PEFT settings, from a config.json alone.
    Share(train::ShareArgs),
}

#[derive(Debug, Subcommand)]
enum ImportCommand {
    /// The published ECtHR release (tum_release/*.jsonl) as DATA/datasets/ecthr-release.
    Release(build::ImportReleaseArgs),
    /// LexCLiPR (hudoc/lexclipr: labels.jsonl, judgments.jsonl) as one cross-lingual dataset per
    /// query language, DATA/datasets/ecthr-xl-<code> (English paragraphs as the corpus).
    Lexclipr(build::ImportLexcliprArgs),
}

#[derive(Debug, Subcommand)]
enum ParseCommand {
    /// Parse HUDOC judgments (DOCX or HTML) into numbered paragraphs.
    Judgment(parse_judgment::ParseJudgmentArgs),
    /// Parse case-law guides (PDF or extracted text) into headings, queries and citations.
    Guide(parse_guide::ParseGuideArgs),
    /// Parse everything the raw store holds (judgments, guides) into DATA/parsed/ecthr.
    Store(parse_store::ParseStoreArgs),
    /// Read the pinpoint citations of any text (a guide sentence, paragraph or body): one JSON line each.
    Citations(parse_citations::ParseCitationsArgs),
}

/// Clap value parser of a dataset, split or system name: one safe folder or file name under the data
/// directory, never a path ([`lexbench_core::check_name`]).
pub(crate) fn name_arg(s: &str) -> std::result::Result<String, String> {
    lexbench_core::check_name("name", s)
        .map(str::to_owned)
        .map_err(|e| e.to_string())
}

fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Colours only on a terminal: a warning redirected to a file or read by a test is plain text.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Does the command read or write the data directory? Those that do first settle what interrupted
/// writes left there ([`lexbench_core::datadir::DataDir::open`]).
fn uses_data_dir(command: &Command) -> bool {
    !matches!(
        command,
        Command::Eval(_)
            | Command::Parse(ParseCommand::Judgment(_) | ParseCommand::Guide(_) | ParseCommand::Citations(_))
            | Command::Models(_)
            | Command::Encode(_)
            | Command::Share(_)
            | Command::Stats(build::StatsArgs { dataset: None, .. })
    )
}

fn run(cli: Cli) -> Result<ExitCode> {
    let data = if uses_data_dir(&cli.command) {
        let (data, recovered) = DataDir::open(&cli.data)?;
        for r in recovered {
            eprintln!("note: {r}");
        }
        data
    } else {
        DataDir::new(&cli.data)
    };
    match cli.command {
        Command::Eval(args) => eval::cmd_eval(&args, OutputFormat::report(cli.format, "eval")?),
        Command::Project(args) => {
            eval::cmd_project(&data, &args, OutputFormat::report(cli.format, "project")?)
        }
        Command::Crawl(cmd) => crawl::cmd_crawl(&data, &cmd),
        Command::Pipeline(args) => pipeline::cmd_pipeline(&data, &args),
        Command::Build(cmd) => build::cmd_build(&data, &cmd),
        Command::Import(ImportCommand::Release(args)) => build::cmd_import_release(&data, &args),
        Command::Import(ImportCommand::Lexclipr(args)) => build::cmd_import_lexclipr(&data, &args),
        Command::Diff(args) => build::cmd_diff(&data, &args, OutputFormat::report(cli.format, "diff")?),
        Command::Split(args) => build::cmd_split(&data, &args),
        Command::Export(args) => export::cmd_export(&data, &args, cli.format),
        Command::Stats(args) => build::cmd_stats(&data, &args, OutputFormat::report(cli.format, "stats")?),
        Command::Parse(ParseCommand::Judgment(args)) => {
            parse_judgment::cmd_parse_judgment(&args, OutputFormat::records(cli.format, "parse judgment")?)
        }
        Command::Parse(ParseCommand::Guide(args)) => {
            parse_guide::cmd_parse_guide(&args, OutputFormat::records(cli.format, "parse guide")?)
        }
        Command::Parse(ParseCommand::Store(args)) => parse_store::cmd_parse_store(&data, &args),
        Command::Parse(ParseCommand::Citations(args)) => parse_citations::cmd_parse_citations(
            &args,
            match cli.format {
                None | Some(OutputFormat::Jsonl) => RecordFormat::Jsonl,
                format => OutputFormat::records(format, "parse citations")?,
            },
        ),
        Command::Models(cmd) => models::cmd_models(&cmd),
        Command::Run(cmd) => run::cmd_run(data.root(), &cmd),
        Command::Submit(args) => {
            submit::cmd_submit(&data, &args, OutputFormat::report(cli.format, "submit")?)
        }
        Command::Leaderboard(args) => leaderboard::cmd_leaderboard(&data, &args),
        Command::Encode(args) => encode::cmd_encode(&args),
        Command::Reproduce(args) => reproduce::cmd_reproduce(&data, &args),
        Command::Train(args) => train::cmd_train(&data, &args),
        Command::Experiment(cmd) => experiment::cmd_experiment(&data, &cmd),
        Command::Share(args) => train::cmd_share(&args),
    }
}

/// A reader that closes stdout early (`lexbench stats … | head`) is normal use, not a crash: `print!`
/// panics on the broken pipe, and this hook turns exactly that panic into a quiet exit. Any other
/// failure to print (standard output on a full device, `> /dev/full`; a file over `ulimit -f`) is an
/// error, exit 2 with a message, never a panic with a backtrace; standard error that can not be
/// written either (both streams on a full device) is exit 2 without one. Every other panic goes to the
/// default hook. (Commands that record something before they report it check their report is
/// written first, or undo the record: `submit`.)
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if msg.contains("failed printing to stdout") {
            if msg.contains("Broken pipe") {
                std::process::exit(0);
            }
            let cause = msg.split_once(": ").map_or(msg, |(_, c)| c);
            // Never `eprintln!` here: with standard error full too it would panic inside the hook,
            // and Rust aborts (exit 134).
            let _ = writeln!(
                std::io::stderr(),
                "error: writing to standard output failed: {cause}"
            );
            std::process::exit(2);
        }
        if msg.contains("failed printing to stderr") {
            // Nowhere left to say it: the exit status is the message.
            std::process::exit(2);
        }
        default(info);
    }));
}

/// What clap's `exit` does for an error of the command line, except that help and the version
/// (printed on standard output) are an error when they could not be written (a full device): clap
/// ignores that and exits 0 having printed nothing.
fn parse_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let text = e.render();
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            // In colour, as clap prints it.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        let mut out = std::io::stdout().lock();
        return match write!(out, "{text}").and_then(|()| out.flush()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(err) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "error: writing to standard output failed: {err}"
                );
                ExitCode::from(2)
            }
        };
    }
    // Usage errors go to standard error (with the user's colours on a terminal), exit 2.
    let _ = e.print();
    ExitCode::from(if e.use_stderr() { 2 } else { 0 })
}

/// The process's allocator: glibc's, with every whole 2 MiB piece of a large block (the models'
/// tensors, the matrix products' operands) in a transparent huge page (engine's `heap`): in a
/// virtual machine, 4 KiB pages cost the encoder's products 10–17 % of their time in TLB misses.
#[global_allocator]
static ALLOCATOR: lexbench_engine::heap::HugePages = lexbench_engine::heap::HugePages;

fn main() -> ExitCode {
    quiet_broken_pipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    // Every run sidecar written from here on names this command (`lexbench reproduce` reruns it).
    lexbench_core::run::record_invocation(std::env::args_os().map(|a| a.to_string_lossy().into_owned()));
    // ... and the revision this binary was built from (build.rs), not the current directory's.
    if let Some(rev) = option_env!("LEXBENCH_BUILD_REV") {
        lexbench_baselines::rank::set_build_revision(rev);
    }
    init_logging(cli.verbose);
    // The process's allocator policy, set here and nowhere in the libraries: glibc keeps and reuses
    // freed memory instead of mapping and zeroing a fresh block for each of candle's per-op buffers
    // (a MiniLM training step otherwise spent about 40 % of its time in page faults). Memory stays
    // at its peak until the command ends, which a command that runs no model does not notice.
    lexbench_engine::heap::keep_freed_memory();
    if let Some(w) = lexbench_core::run::threads_warning() {
        let _ = writeln!(std::io::stderr(), "warning: {w}");
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Standard error may be unwritable too (a full device): the exit status still says it.
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::from(2)
        }
    }
}
