//! `lexbench run <system>`: run a baseline over a built dataset's split and write its TREC run and
//! JSON sidecar under `DATA/runs/<dataset>/<split>/`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use lexbench_baselines::encoder::TextPrefixes;
use lexbench_baselines::rank::bm25::{self, Bm25Ranker};
use lexbench_baselines::rank::{RunTarget, write_run};
use lexbench_baselines::sparse::{Bm25Params, Bm25Variant, IdfScope, Language};

use crate::cmd::args::{DatasetSplit, ModelDevice, unsigned};

/// The systems `lexbench run` knows.
#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// Okapi BM25 (exact lengths; Anserini's k1 = 0.9, b = 0.4 by default), or with `--variant
    /// rank-bm25-okapi` rank_bm25's BM25Okapi over `str.lower().split()` tokens.
    Bm25(Bm25Args),
    /// Zero-shot dense retrieval with a bi-encoder from a HuggingFace BERT folder (e.g. models/minilm).
    Dense(DenseArgs),
    /// Late interaction (ColBERT's MaxSim). A checkpoint without ColBERT's projection (all-MiniLM-L6-v2)
    /// gets a seeded one: late interaction over its token states, not ColBERT.
    Colbert(NeuralArgs),
    /// A cross-encoder reranking BM25's top candidates (run `lexbench run bm25` first).
    CrossEncoder(CrossArgs),
    /// A seeded random ranking of each topic's candidates: the floor of a leaderboard.
    Random(RandomArgs),
}

/// Arguments of `lexbench run random`.
#[derive(Debug, Args)]
pub struct RandomArgs {
    #[command(flatten)]
    pub at: DatasetSplit,
    /// The generator's seed (`-1` is read as a value and refused, not taken for a flag).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = unsigned::<u64>)]
    pub seed: u64,
    /// The system's name: the run's file name and tag.
    #[arg(long, default_value = "random", value_parser = crate::name_arg)]
    pub system: String,
}

/// Arguments shared by the neural runs.
#[derive(Debug, Args)]
pub struct NeuralArgs {
    #[command(flatten)]
    pub encoder: ModelDevice,
    #[command(flatten)]
    pub at: DatasetSplit,
    /// The system's name: the run's file name and tag.
    #[arg(long, default_value = "colbert", value_parser = crate::name_arg)]
    pub system: String,
    /// Documents kept per topic.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub top_k: usize,
    /// Query length in tokens, `[MASK]` augmentation included [default: the checkpoint's
    /// artifact.metadata query_maxlen, else 32, ColBERT's]. A folder trained here reads queries and
    /// documents at its training's lengths.
    #[arg(long, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub query_max_len: Option<usize>,
    /// Document truncation length in tokens [default: the checkpoint's artifact.metadata doc_maxlen,
    /// else 180, ColBERT's].
    #[arg(long, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub doc_max_len: Option<usize>,
    /// Rerank the top `--depth` documents of this system's run of the same split (`bm25`, `dense`,
    /// …; run it first) instead of scoring every candidate: a corpus-wide dataset of a hundred
    /// thousand paragraphs (the open corpus) is too many to encode token by token.
    #[arg(long, value_name = "SYSTEM", value_parser = crate::name_arg)]
    pub rerank: Option<String>,
    /// Documents reranked per topic with `--rerank`.
    #[arg(long, default_value_t = 1000, requires = "rerank", allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub depth: usize,
}

/// Arguments of `lexbench run cross-encoder`.
#[derive(Debug, Args)]
pub struct CrossArgs {
    #[command(flatten)]
    pub encoder: ModelDevice,
    #[command(flatten)]
    pub at: DatasetSplit,
    /// The system's name.
    #[arg(long, default_value = "cross-encoder", value_parser = crate::name_arg)]
    pub system: String,
    /// Rerank BM25's top N candidates per topic (needs `lexbench run bm25` first). Default: every
    /// paragraph of the topic's pool (the paper's protocol), or BM25's top 100 on a corpus-wide dataset.
    #[arg(long, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub depth: Option<usize>,
    /// Truncation length of the query–passage pair. A folder trained here reads pairs at its
    /// training's lengths (query + document), with or without --depth.
    #[arg(long, default_value_t = 256, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub max_len: usize,
}

/// Arguments of `lexbench run dense`.
#[derive(Debug, Args)]
pub struct DenseArgs {
    #[command(flatten)]
    pub encoder: ModelDevice,
    #[command(flatten)]
    pub at: DatasetSplit,
    /// The system's name: the run's file name and tag.
    #[arg(long, default_value = "dense", value_parser = crate::name_arg)]
    pub system: String,
    /// Pooling of the token states [default: the model's: its sentence-transformers Pooling
    /// module's, [CLS] for DPR, else mean]. One contradicting the model's sentence-transformers
    /// modules is an error.
    #[arg(long, value_enum)]
    pub pooling: Option<PoolingArg>,
    /// Similarity of query and document vectors.
    #[arg(long, value_enum, default_value = "cosine")]
    pub similarity: SimilarityArg,
    /// Truncation length in tokens (documents, and queries unless --query-max-len is given)
    /// [default: the model's max_seq_length (sentence_bert_config.json), else 256].
    #[arg(long, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub max_len: Option<usize>,
    /// Truncation length of queries in tokens [default: --max-len]. A folder trained here reads
    /// queries and documents at its training's lengths.
    #[arg(long, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub query_max_len: Option<usize>,
    /// Documents kept per topic.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub top_k: usize,
    /// Put before every query (E5 models want `--query-prefix "query: "`). A folder trained here
    /// ranks with its training's prefixes: leave this out, or give the same.
    #[arg(long, default_value = "")]
    pub query_prefix: String,
    /// Put before every document (E5 models want `--passage-prefix "passage: "`).
    #[arg(long, default_value = "")]
    pub passage_prefix: String,
}

/// Pooling of the token states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PoolingArg {
    /// Mean over the real tokens (sentence-transformers).
    Mean,
    /// The [CLS] token (DPR, ANCE).
    Cls,
    /// Max over the real tokens.
    Max,
}

/// Similarity of vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimilarityArg {
    /// Cosine.
    Cosine,
    /// Dot product.
    Dot,
}

/// Statistics scope for pooled datasets (see `lexbench_baselines::sparse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IdfArg {
    /// N, df and avgdl of the topic's pool (default).
    Pool,
    /// Of the whole corpus.
    Corpus,
}

/// The analyzer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LanguageArg {
    /// English: stop words, Snowball English stemmer.
    English,
    /// French: stop words, Snowball French stemmer, accents folded.
    French,
}

/// Arguments of `lexbench run bm25`.
#[derive(Debug, Args)]
pub struct Bm25Args {
    #[command(flatten)]
    pub at: DatasetSplit,
    /// A TOML file of parameters (k1, b, idf, top_k, language); flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Term-frequency saturation [default: 0.9]. A value with a sign (`--k1 -1`) is read as the
    /// value and refused by validation, not taken for a flag.
    #[arg(long, allow_hyphen_values = true)]
    pub k1: Option<f64>,
    /// Length normalisation, 0..1 [default: 0.4] (signed values as --k1).
    #[arg(long, allow_hyphen_values = true)]
    pub b: Option<f64>,
    /// Statistics when ranking within pools [default: pool].
    #[arg(long, value_enum)]
    pub idf: Option<IdfArg>,
    /// Documents kept per topic [default: 1000].
    #[arg(long, allow_negative_numbers = true, value_parser = unsigned::<usize>)]
    pub top_k: Option<usize>,
    /// The analyzer [default: french for bsard*, english otherwise; not with rank-bm25-okapi].
    #[arg(long, value_enum)]
    pub language: Option<LanguageArg>,
    /// Which BM25 [default: lexbench, or the config's `variant`]. Its defaults of k1 and b follow
    /// it (rank-bm25-okapi: 1.5 and 0.75).
    #[arg(long, value_enum)]
    pub variant: Option<VariantArg>,
    /// The system's name: the run's file name and tag [default: bm25, or the variant's name].
    #[arg(long, value_parser = crate::name_arg)]
    pub system: Option<String>,
}

/// The BM25 implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VariantArg {
    /// lexbench's: the analyzer (stop words, stemmer), Lucene's idf.
    Lexbench,
    /// rank_bm25 0.2.2's BM25Okapi (k1 1.5, b 0.75, ε 0.25) over `text.lower().split()` tokens,
    /// one index per pool: the BM25 of LexCLiPR's public script on the ECtHR data.
    RankBm25Okapi,
}

impl Bm25Args {
    /// The parameters: defaults, then the config file, then the flags; validated.
    pub fn params(&self) -> Result<Bm25Params> {
        let variant = self.variant.map(|v| match v {
            VariantArg::Lexbench => Bm25Variant::Lexbench,
            VariantArg::RankBm25Okapi => Bm25Variant::RankBm25Okapi,
        });
        let mut p = match &self.config {
            Some(path) => {
                let text = lexbench_core::text::read_text(path)?;
                // The flag's variant over the config's: k1 and b the config leaves out take the
                // variant's defaults.
                Bm25Params::from_toml_as(&text, variant).with_context(|| path.display().to_string())?
            }
            None if variant == Some(Bm25Variant::RankBm25Okapi) => Bm25Params::rank_bm25_okapi(),
            None => Bm25Params::default(),
        };
        if let Some(k1) = self.k1 {
            p.k1 = k1;
        }
        if let Some(b) = self.b {
            p.b = b;
        }
        if let Some(idf) = self.idf {
            p.idf = match idf {
                IdfArg::Pool => IdfScope::Pool,
                IdfArg::Corpus => IdfScope::Corpus,
            };
        }
        if let Some(k) = self.top_k {
            p.top_k = k;
        }
        if let Some(l) = self.language {
            p.language = Some(match l {
                LanguageArg::English => Language::English,
                LanguageArg::French => Language::French,
            });
        }
        p.validate()?;
        Ok(p)
    }
}

/// Runs `lexbench run …`.
pub fn cmd_run(data: &Path, cmd: &RunCommand) -> Result<ExitCode> {
    match cmd {
        RunCommand::Bm25(args) => {
            let params = args.params()?;
            let system = args.system.as_deref().unwrap_or(match params.variant {
                Bm25Variant::Lexbench => bm25::SYSTEM,
                Bm25Variant::RankBm25Okapi => bm25::RANK_BM25_OKAPI_SYSTEM,
            });
            let out = RunTarget::new(data, &args.at.dataset, &args.at.split, system)
                .and_then(|target| write_run(&mut Bm25Ranker::new(params)?, &target))
                .with_context(|| format!("BM25 on dataset {} split {}", args.at.dataset, args.at.split))?;
            let s = &out.sidecar;
            let d = &s.details;
            println!(
                "{system} (k1 = {}, b = {}, {}, {} statistics) ranked {} topics of {}/{} over {} documents: {} hits",
                d.config.k1,
                d.config.b,
                match d.config.variant {
                    Bm25Variant::Lexbench => {
                        let docs = d.config.language.map_or("auto".into(), |l| l.to_string());
                        match d.config.query_language {
                            Some(q) => format!("queries {q}, documents {docs}"),
                            None => docs,
                        }
                    }
                    Bm25Variant::RankBm25Okapi => "rank_bm25 BM25Okapi, str.lower().split() tokens".into(),
                },
                if s.pooled {
                    format!("{:?}", d.config.idf).to_lowercase()
                } else {
                    "corpus".into()
                },
                s.topics,
                s.header.dataset,
                s.header.split,
                d.index.documents,
                s.hits,
            );
            println!("run:     {}", out.run_path.display());
            println!("sidecar: {}", out.sidecar_path.display());
            Ok(ExitCode::SUCCESS)
        }
        RunCommand::Dense(args) => {
            let asked = TextPrefixes {
                query: args.query_prefix.clone(),
                passage: args.passage_prefix.clone(),
            };
            let asking = Asking::Dense {
                top_k: args.top_k,
                prefixes: &asked,
            };
            if let Some(out) = trained(&args.encoder, &args.at, &args.system, asking, data)? {
                return out;
            }
            use lexbench_baselines::encoder::{EncodeOptions, Pooling};
            use lexbench_baselines::rank::dense::{DenseParams, DenseRanker};
            use lexbench_baselines::scorers::biencoder::Similarity;
            let params = DenseParams {
                system: args.system.clone(),
                query_max_len: args.query_max_len,
                encode: EncodeOptions {
                    max_len: match args.max_len {
                        Some(n) => n,
                        None => lexbench_baselines::encoder::st::model_max_len(&args.encoder.model)?
                            .unwrap_or(256),
                    },
                    pooling: args.pooling.map(|p| match p {
                        PoolingArg::Mean => Pooling::Mean,
                        PoolingArg::Cls => Pooling::Cls,
                        PoolingArg::Max => Pooling::Max,
                    }),
                    // Cosine needs no normalised vectors, dot products of normalised vectors are cosines:
                    // normalise only for cosine, so `--similarity dot` really is the dot product.
                    normalize: args.similarity == SimilarityArg::Cosine,
                    ..EncodeOptions::default()
                },
                similarity: match args.similarity {
                    SimilarityArg::Cosine => Similarity::Cosine,
                    SimilarityArg::Dot => Similarity::Dot,
                },
                top_k: args.top_k,
                query_prefix: args.query_prefix.clone(),
                passage_prefix: args.passage_prefix.clone(),
            };
            let device = args.encoder.device.device()?;
            let out = DenseRanker::new(&args.encoder.model, params, &device)
                .and_then(|mut ranker| write_run(&mut ranker, &target(data, &args.at, &args.system)?));
            report_neural(out, &args.system, &args.at)
        }
        RunCommand::Colbert(args) => {
            let asking = Asking::Colbert { top_k: args.top_k };
            if args.rerank.is_some() && lexbench::rank::trained(&args.encoder.model)?.is_some() {
                anyhow::bail!(
                    "--rerank: a folder trained here ranks as it was trained (every candidate); rerank with a \
                     zero-shot checkpoint"
                );
            }
            if let Some(out) = trained(&args.encoder, &args.at, &args.system, asking, data)? {
                return out;
            }
            use lexbench_baselines::rank::colbert::{ColBertParams, ColBertRanker};
            // ColBERT's settings, or the checkpoint's own (artifact.metadata); the flags change lengths.
            let mut colbert = lexbench_baselines::scorers::ColBertConfig::for_model(&args.encoder.model)?;
            if let Some(q) = args.query_max_len {
                colbert.query_maxlen = q;
            }
            if let Some(d) = args.doc_max_len {
                colbert.doc_maxlen = d;
            }
            let params = ColBertParams {
                system: args.system.clone(),
                colbert,
                top_k: args.top_k,
                first_stage: args.rerank.as_ref().map(|system| {
                    lexbench_baselines::rank::colbert::FirstStage {
                        system: system.clone(),
                        depth: args.depth,
                    }
                }),
            };
            let device = args.encoder.device.device()?;
            let out = ColBertRanker::new(&args.encoder.model, params, &device)
                .and_then(|mut ranker| write_run(&mut ranker, &target(data, &args.at, &args.system)?));
            report_neural(out, &args.system, &args.at)
        }
        RunCommand::CrossEncoder(args) => {
            let asking = Asking::Cross { depth: args.depth };
            if let Some(out) = trained(&args.encoder, &args.at, &args.system, asking, data)? {
                return out;
            }
            use lexbench_baselines::rank::cross::{CrossEncoderRanker, CrossParams};
            let params = CrossParams {
                system: args.system.clone(),
                depth: args.depth,
                max_len: args.max_len,
            };
            let device = args.encoder.device.device()?;
            let out = CrossEncoderRanker::new(&args.encoder.model, params, &device)
                .and_then(|mut ranker| write_run(&mut ranker, &target(data, &args.at, &args.system)?));
            report_neural(out, &args.system, &args.at)
        }
        RunCommand::Random(args) => {
            use lexbench_baselines::rank::random::RandomRanker;
            let out = target(data, &args.at, &args.system)
                .and_then(|target| write_run(&mut RandomRanker::new(args.seed), &target))
                .with_context(|| {
                    format!(
                        "{} on dataset {} split {}",
                        args.system, args.at.dataset, args.at.split
                    )
                })?;
            let s = &out.sidecar;
            println!(
                "{} (random, seed {}) ranked {} topics of {}/{}: {} hits",
                s.header.system, s.header.seed, s.topics, s.header.dataset, s.header.split, s.hits
            );
            println!("run:     {}", out.run_path.display());
            println!("sidecar: {}", out.sidecar_path.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What a `lexbench run` subcommand asks of a model folder besides its system's name.
#[derive(Debug, Clone, Copy)]
enum Asking<'a> {
    /// `run dense`: documents kept per topic, the text prefixes of its flags.
    Dense {
        top_k: usize,
        prefixes: &'a TextPrefixes,
    },
    /// `run colbert`: documents kept per topic.
    Colbert { top_k: usize },
    /// `run cross-encoder`: rerank BM25's top `depth` (`None`: the pool).
    Cross { depth: Option<usize> },
}

impl Asking<'_> {
    /// The subcommand's name.
    fn command(self) -> &'static str {
        match self {
            Asking::Dense { .. } => "dense",
            Asking::Colbert { .. } => "colbert",
            Asking::Cross { .. } => "cross-encoder",
        }
    }
}

/// The run of `system` over the dataset and split of the arguments.
/// A model folder trained here is ranked with the settings it was trained with (its
/// `lexbench-training.json`: query and document lengths, pooling, similarity, ColBERT's settings,
/// text prefixes), never this command's defaults, with or without a cross-encoder's `--depth`; a
/// folder trained as another kind of model is refused, and so are text prefixes (`run dense`'s flags)
/// other than the trained ones. `None`: not a trained folder.
fn trained(
    encoder: &ModelDevice,
    at: &DatasetSplit,
    system: &str,
    asking: Asking<'_>,
    data: &Path,
) -> Result<Option<Result<ExitCode>>> {
    let Some(record) = lexbench::rank::trained(&encoder.model)? else {
        return Ok(None);
    };
    let cfg = &record.config;
    let kind = match asking {
        Asking::Dense { .. } => lexbench_leaderboard::ModelKind::BiEncoder,
        Asking::Colbert { .. } => lexbench_leaderboard::ModelKind::Colbert,
        Asking::Cross { .. } => lexbench_leaderboard::ModelKind::CrossEncoder,
    };
    lexbench::rank::check_kind(&encoder.model, &record, kind)
        .with_context(|| format!("`lexbench run {}`", asking.command()))?;
    // The rankers take the trained prefixes from the folder themselves; flags that contradict them
    // are refused here, before anything is loaded.
    let default = TextPrefixes::default();
    let (top_k, depth, asked) = match asking {
        Asking::Dense { top_k, prefixes } => (top_k, None, prefixes),
        Asking::Colbert { top_k } => (top_k, None, &default),
        Asking::Cross { depth } => (usize::MAX, depth, &default),
    };
    lexbench_baselines::encoder::files::ranking_prefixes(&encoder.model, asked)?;
    let prefixes = match (cfg.data.query_prefix.as_str(), cfg.data.passage_prefix.as_str()) {
        ("", "") => String::new(),
        (q, p) => format!(", prefixes {q:?} / {p:?}"),
    };
    eprintln!(
        "{}: trained here ({}); ranking with its training settings (queries {} tokens, documents {}{prefixes})",
        encoder.model.display(),
        cfg.name,
        cfg.data.max_query_len,
        cfg.data.max_doc_len
    );
    let device = encoder.device.device()?;
    let out = target(data, at, system)
        .map_err(anyhow::Error::from)
        .and_then(|t| lexbench::train::rank_trained(cfg, &encoder.model, system, top_k, depth, &t, &device));
    Ok(Some(report_neural(out, system, at)))
}

fn target(data: &Path, at: &DatasetSplit, system: &str) -> lexbench_baselines::Result<RunTarget> {
    RunTarget::new(data, &at.dataset, &at.split, system)
}

/// Names the system, dataset and split in a failed neural run's error; prints a finished one.
fn report_neural<E>(
    out: std::result::Result<lexbench_baselines::rank::neural::NeuralOutput, E>,
    system: &str,
    at: &DatasetSplit,
) -> Result<ExitCode>
where
    anyhow::Error: From<E>,
{
    let out = out
        .map_err(anyhow::Error::from)
        .with_context(|| format!("{system} on dataset {} split {}", at.dataset, at.split))?;
    print_neural(&out);
    Ok(ExitCode::SUCCESS)
}

fn print_neural(out: &lexbench_baselines::rank::neural::NeuralOutput) {
    let s = &out.sidecar;
    println!(
        "{} ({}) ranked {} topics of {}/{}: {} hits, {} documents encoded now",
        s.header.system,
        s.details.model,
        s.topics,
        s.header.dataset,
        s.header.split,
        s.hits,
        s.details.encoded_now
    );
    if s.details.config.get("head").and_then(|h| h.as_str()) == Some("new, seeded, untrained") {
        println!("note: the checkpoint has no classifier head; this run uses a seeded untrained one");
    }
    let seeded = lexbench_baselines::rank::colbert::PROJECTION_SEEDED;
    if s.details.config.get("projection").and_then(|h| h.as_str()) == Some(seeded) {
        println!(
            "note: the checkpoint has no ColBERT projection; this run is late interaction over its token \
             states with a seeded projection, not ColBERT"
        );
    }
    println!("run:     {}", out.run_path.display());
    println!("sidecar: {}", out.sidecar_path.display());
}
