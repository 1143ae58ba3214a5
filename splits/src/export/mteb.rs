//! The MTEB export: a Hugging Face folder in the layout MTEB 2.x's retrieval tasks load
//! (`AbsTaskRetrieval` and its `RetrievalDatasetLoader`, which 2.x also uses for reranking), and the
//! task's metadata.
//!
//! ```text
//! corpus/corpus.parquet          config corpus, split corpus: _id, title, text[, item, num, section]
//! queries/queries.parquet        config queries, split queries: _id, text[, query, item, guide]
//! qrels/<split>.parquet          config default: query-id, corpus-id, score (the grade)
//! top_ranked/<split>.parquet     config top_ranked (pooled datasets): query-id, corpus-ids
//! ```
//!
//! A pooled dataset (ECtHR) is a **reranking** task: `top_ranked` lists each topic's candidates, its
//! pool (the judgment's paragraphs) in the pool's order, and MTEB ranks only those. A dataset without
//! pools (BSARD) is a **retrieval** task over the whole corpus.
//!
//! `mteb_metadata.json` holds the fields of MTEB 2.x's `TaskMetadata` (name, description, reference,
//! dataset, type, category `t2t`, modalities, eval_splits, eval_langs, main_score, date, domains,
//! task_subtypes, license, annotations_creators, dialect, sample_creation, bibtex_citation), with
//! `dataset.path` `.` (this folder: set it to the folder's path or its Hub repository) and
//! `dataset.revision` the dataset's version. MTEB 1.x's vocabulary (category `s2p`,
//! `descriptive_stats`, the query/positive/negative reranking rows) is what 2.x refuses, so the
//! export fits MTEB 2.x (checked with 2.26.0 by tests/cli/export_libraries.rs), not 1.x.

use lexbench_core::dataset::Language;
use serde::Serialize;

use super::card::{self, Config};
use super::hf::{corpus_table, parquet_file, pools_table, qrels_table, queries_table};
use super::table::Table;
use super::{Files, Format, Source, add, input, pretty_json};
use crate::error::Result;

/// Every file of the MTEB export.
pub(super) fn files(src: &Source) -> Result<Files> {
    let mut files = Files::new();
    let tables = tables(src)?;
    let mut configs = Vec::new();
    for c in &tables {
        let mut splits = Vec::new();
        for (split, table) in &c.splits {
            let rel = match c.file {
                Some(file) => format!("{}/{file}.parquet", c.folder),
                None => format!("{}/{split}.parquet", c.folder),
            };
            splits.push(parquet_file(&mut files, split, &rel, table)?);
        }
        // Source::read refuses a dataset without splits: every config has a first table.
        if let Some((_, schema)) = c.splits.first() {
            configs.push(Config {
                name: c.name,
                default: false,
                schema,
                splits,
            });
        }
    }
    let mut readme = card::front_matter(src, &configs);
    readme.push_str(&card::card(src, Format::Mteb, &layout(src)));
    add(&mut files, "README.md", readme.into_bytes())?;
    add(&mut files, "mteb_metadata.json", pretty_json(&metadata(src))?)?;
    Ok(files)
}

/// One config of the export and its tables.
struct ConfigTables {
    /// The config's name.
    name: &'static str,
    /// The folder of its files.
    folder: &'static str,
    /// Its one file's name (without `.parquet`), or `None`: one file per split, named after it.
    file: Option<&'static str>,
    /// Its splits' tables.
    splits: Vec<(String, Table)>,
}

/// The configs of the export.
type Tables = Vec<ConfigTables>;

/// Corpus, every topic, qrels per split and, for a pooled dataset, each split's candidates.
fn tables(src: &Source) -> Result<Tables> {
    let all: Vec<_> = src.topics.keys().cloned().collect();
    let mut tables = vec![
        ConfigTables {
            name: "corpus",
            folder: "corpus",
            file: Some("corpus"),
            splits: vec![("corpus".into(), corpus_table(src))],
        },
        ConfigTables {
            name: "queries",
            folder: "queries",
            file: Some("queries"),
            splits: vec![("queries".into(), queries_table(src, &all)?)],
        },
        ConfigTables {
            name: "default",
            folder: "qrels",
            file: None,
            splits: src
                .splits
                .iter()
                .map(|s| (s.hf_name.clone(), qrels_table(s)))
                .collect(),
        },
    ];
    if src.pooled() {
        let mut splits = Vec::new();
        for s in &src.splits {
            // MTEB ranks only a topic's candidates: a relevant document outside them would be lost.
            for t in &s.topics {
                let pool = src.pool(t)?;
                let mut judged = s.qrels.get(t).into_iter().flatten();
                if let Some((d, _)) = judged.find(|(d, g)| **g >= 1 && !pool.contains(d)) {
                    return Err(input(
                        &src.dir.qrels(&s.name),
                        format!(
                            "topic {t}: relevant document {d} is not in its pool, so the reranking task \
                             (top_ranked) would lose it"
                        ),
                    ));
                }
            }
            splits.push((s.hf_name.clone(), pools_table(src, s)?));
        }
        tables.push(ConfigTables {
            name: "top_ranked",
            folder: "top_ranked",
            file: None,
            splits,
        });
    }
    Ok(tables)
}

/// The card's "Files" section for this format.
fn layout(src: &Source) -> String {
    let mut s = String::from(
        "MTEB 2.x's retrieval layout: `corpus/corpus.parquet` (config `corpus`, split `corpus`: `_id`, `title`, \
         `text`), `queries/queries.parquet` (config `queries`, split `queries`: `_id`, `text`, every topic), \
         `qrels/<split>.parquet` (config `default`: `query-id`, `corpus-id`, `score`, the grade)",
    );
    if src.pooled() {
        s.push_str(
            ", and `top_ranked/<split>.parquet` (config `top_ranked`: `query-id`, `corpus-ids`, the topic's \
             pool, its judgment's paragraphs, in order): a reranking task, each topic ranking its own \
             candidates (`R@k%` cuts at a share of the pool).\n",
        );
    } else {
        s.push_str(": a retrieval task over the whole corpus.\n");
    }
    s.push_str(
        "\n`mteb_metadata.json` holds the task's metadata in MTEB 2.x's `TaskMetadata` schema (checked with \
         mteb 2.26.0; MTEB 1.x's `TaskMetadata` has another vocabulary); its `dataset.path` is `.` (this \
         folder): set it to the folder's path, or to its repository once on the Hub.\n",
    );
    s
}

/// `mteb_metadata.json`.
#[derive(Serialize)]
struct Metadata {
    name: String,
    description: String,
    reference: &'static str,
    dataset: DatasetRef,
    #[serde(rename = "type")]
    kind: &'static str,
    category: &'static str,
    modalities: [&'static str; 1],
    eval_splits: Vec<String>,
    eval_langs: Vec<&'static str>,
    main_score: &'static str,
    date: Option<[String; 2]>,
    domains: [&'static str; 2],
    task_subtypes: Vec<&'static str>,
    license: &'static str,
    annotations_creators: &'static str,
    dialect: Vec<&'static str>,
    sample_creation: &'static str,
    bibtex_citation: &'static str,
}

/// `TaskMetadata.dataset`: what `datasets.load_dataset(**dataset)` is given.
#[derive(Serialize)]
struct DatasetRef {
    path: &'static str,
    revision: String,
}

const ECTHR_BIBTEX: &str = "@inproceedings{santosh2024querydriven,\n  title = {Query-driven Relevant Paragraph Extraction from Legal Judgments},\n  author = {Santosh, T. Y. S. S. and Quero Hernandez, Elvin and Grabmair, Matthias},\n  booktitle = {Proceedings of the 2024 Joint International Conference on Computational Linguistics, Language Resources and Evaluation (LREC-COLING 2024)},\n  year = {2024}\n}";
const BSARD_BIBTEX: &str = "@inproceedings{louis-spanakis-2022-statutory,\n  title = {A Statutory Article Retrieval Dataset in {F}rench},\n  author = {Louis, Antoine and Spanakis, Gerasimos},\n  booktitle = {Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)},\n  year = {2022},\n  doi = {10.18653/v1/2022.acl-long.468}\n}";

/// The task's metadata.
fn metadata(src: &Source) -> Metadata {
    let pooled = src.pooled();
    let ecthr = src.ecthr();
    let eval_splits: Vec<String> = src.evaluated().map(|s| s.hf_name.clone()).collect();
    let lang = match src.language {
        Some(Language::French) => "fra-Latn",
        Some(Language::English) => "eng-Latn",
        Some(Language::Italian) => "ita-Latn",
        Some(Language::Romanian) => "ron-Latn",
        Some(Language::Russian) => "rus-Cyrl",
        Some(Language::Turkish) => "tur-Latn",
        Some(Language::Ukrainian) => "ukr-Cyrl",
        None if ecthr => "eng-Latn",
        None => "fra-Latn",
    };
    let camel: String = src
        .name
        .split(['-', '_', '.'])
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    Metadata {
        name: format!(
            "Lexbench{camel}{}",
            if pooled { "Reranking" } else { "Retrieval" }
        ),
        description: if pooled {
            "Query-driven paragraph retrieval from ECtHR judgments: for a query (a heading path of a \
             case-law guide), rerank the paragraphs of one judgment; positives are the paragraphs the \
             guide cites under the heading, negatives the judgment's other paragraphs. Rebuilt by lexbench."
                .into()
        } else if ecthr {
            "Paragraph retrieval over the whole ECtHR case law: for a query (a heading path of a case-law \
             guide), retrieve from every paragraph of every judgment those the guides cite under the \
             heading. The open-corpus setting of lexbench's ECtHR benchmark."
                .into()
        } else {
            "Statutory article retrieval (BSARD): retrieve the Belgian statutory articles relevant to a \
             French legal question from the whole corpus. Rebuilt by lexbench."
                .into()
        },
        reference: if ecthr {
            "https://arxiv.org/abs/2404.00595"
        } else {
            "https://aclanthology.org/2022.acl-long.468/"
        },
        dataset: DatasetRef {
            path: ".",
            revision: src.version.clone(),
        },
        kind: if pooled { "Reranking" } else { "Retrieval" },
        category: "t2t",
        modalities: ["text"],
        eval_splits,
        eval_langs: vec![lang],
        main_score: if pooled { "map_at_1000" } else { "ndcg_at_10" },
        date: None,
        domains: ["Legal", "Written"],
        task_subtypes: Vec::new(),
        license: if ecthr { "not specified" } else { "cc-by-nc-sa-4.0" },
        annotations_creators: if ecthr { "derived" } else { "expert-annotated" },
        dialect: Vec::new(),
        sample_creation: "found",
        bibtex_citation: if ecthr { ECTHR_BIBTEX } else { BSARD_BIBTEX },
    }
}
