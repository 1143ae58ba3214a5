//! The MTEB export: a Hugging Face folder in the layout MTEB's task types load, and the task's
//! metadata.
//!
//! A pooled dataset (ECtHR) is a **reranking** task, one row per topic and split (setting):
//!
//! ```text
//! data/<split>.parquet   config default: query_id, query, positive, negative, positive_ids, negative_ids
//! ```
//!
//! `positive` holds the texts of the pool's relevant paragraphs (grade ≥ 1), `negative` the rest of
//! the topic's pool (its judgment's other paragraphs), both in the pool's order; the `_ids` columns
//! name them, so a ranking can be written as a TREC run and `R@k%` cut at a share of
//! `len(positive) + len(negative)`. Grades above 1 become plain positives.
//!
//! A dataset without pools (BSARD) is a **retrieval** task, in the layout of MTEB's Hub datasets:
//!
//! ```text
//! corpus/corpus.parquet    config corpus, split corpus: _id, title, text
//! queries/queries.parquet  config queries, split queries: _id, text
//! qrels/<split>.parquet    config default: query-id, corpus-id, score
//! ```
//!
//! `mteb_metadata.json` holds the fields of MTEB's `TaskMetadata` (name, description, reference,
//! dataset, type, category, modalities, eval_splits, eval_langs, main_score, date, domains,
//! task_subtypes, license, annotations_creators, dialect, sample_creation, bibtex_citation,
//! descriptive_stats), with `dataset.path` `.` (this folder: set it to the folder's path or its Hub
//! repository) and `dataset.revision` the dataset's version.

use std::collections::BTreeMap;

use lexbench_core::DocId;
use lexbench_core::dataset::Language;
use serde::Serialize;

use super::card::{self, Config};
use super::hf::{corpus_table, parquet_file, qrels_table, queries_table};
use super::table::{Table, Values};
use super::{Files, Format, Source, SplitData, add, input, pretty_json};
use crate::error::Result;

/// Every file of the MTEB export.
pub(super) fn files(src: &Source) -> Result<Files> {
    let mut files = Files::new();
    let tables = if src.pooled() {
        reranking(src)?
    } else {
        retrieval(src)?
    };
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
    add(
        &mut files,
        "mteb_metadata.json",
        pretty_json(&metadata(src, &tables))?,
    )?;
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

/// The reranking form: one table per split.
fn reranking(src: &Source) -> Result<Tables> {
    let mut splits = Vec::new();
    for split in &src.splits {
        splits.push((split.hf_name.clone(), reranking_table(src, split)?));
    }
    Ok(vec![ConfigTables {
        name: "default",
        folder: "data",
        file: None,
        splits,
    }])
}

/// One row per topic of `split`: the query, its pool split into positives and negatives.
pub(super) fn reranking_table(src: &Source, split: &SplitData) -> Result<Table> {
    let n = split.topics.len();
    let (mut ids, mut queries) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut pos, mut neg, mut pos_ids, mut neg_ids) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let text: BTreeMap<&DocId, &str> = src.corpus.iter().map(|d| (&d.doc, d.text.as_str())).collect();
    let no_judgments = BTreeMap::new();
    for t in &split.topics {
        let topic = src.topic(t)?;
        let pool = src.pool(t)?;
        let judged = split.qrels.get(t).unwrap_or(&no_judgments);
        if let Some((d, _)) = judged.iter().find(|(d, g)| **g >= 1 && !pool.contains(d)) {
            return Err(input(
                &src.dir.qrels(&split.name),
                format!(
                    "topic {t}: relevant document {d} is not in its pool, so the reranking form would lose it"
                ),
            ));
        }
        let (p, q): (Vec<&DocId>, Vec<&DocId>) =
            pool.iter().partition(|d| judged.get(*d).is_some_and(|g| *g >= 1));
        let texts = |docs: &[&DocId]| -> Vec<String> {
            docs.iter()
                .map(|d| text.get(d).map_or_else(String::new, |t| (*t).to_owned()))
                .collect()
        };
        ids.push(t.to_string());
        queries.push(topic.text.clone());
        pos.push(texts(&p));
        neg.push(texts(&q));
        pos_ids.push(p.iter().map(ToString::to_string).collect());
        neg_ids.push(q.iter().map(ToString::to_string).collect());
    }
    Ok(Table::default()
        .col("query_id", Values::Str(ids))
        .col("query", Values::Str(queries))
        .col("positive", Values::StrList(pos))
        .col("negative", Values::StrList(neg))
        .col("positive_ids", Values::StrList(pos_ids))
        .col("negative_ids", Values::StrList(neg_ids)))
}

/// The retrieval form: corpus, every query, qrels per split.
fn retrieval(src: &Source) -> Result<Tables> {
    let all: Vec<_> = src.topics.keys().cloned().collect();
    Ok(vec![
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
    ])
}

/// The card's "Files" section for this format.
fn layout(src: &Source) -> String {
    let mut s = String::new();
    if src.pooled() {
        s.push_str(
            "MTEB's reranking form, one row per topic and setting (split): `data/<split>.parquet` (config \
             `default`) with `query_id`, `query`, `positive` (the texts of the pool's relevant paragraphs), \
             `negative` (the rest of the topic's pool: its judgment's other paragraphs), and `positive_ids`, \
             `negative_ids` naming them (to write a TREC run; `R@k%` cuts at a share of the pool, \
             positives and negatives together). Grades above 1 count as plain positives.\n",
        );
    } else {
        s.push_str(
            "MTEB's retrieval form: `corpus/corpus.parquet` (config `corpus`, split `corpus`: `_id`, `title`, \
             `text`), `queries/queries.parquet` (config `queries`, split `queries`: `_id`, `text`, every \
             question), `qrels/<split>.parquet` (config `default`: `query-id`, `corpus-id`, `score`).\n",
        );
    }
    s.push_str(
        "\n`mteb_metadata.json` holds the task's metadata with the fields of MTEB's `TaskMetadata`; its \
         `dataset.path` is `.` (this folder): set it to the folder's path, or to its repository once on the Hub.\n",
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
    descriptive_stats: Stats,
}

/// `TaskMetadata.dataset`: what `datasets.load_dataset(**dataset)` is given.
#[derive(Serialize)]
struct DatasetRef {
    path: &'static str,
    revision: String,
}

/// Rows per evaluated split.
#[derive(Serialize)]
struct Stats {
    n_samples: BTreeMap<String, usize>,
}

const ECTHR_BIBTEX: &str = "@inproceedings{santosh2024querydriven,\n  title = {Query-driven Relevant Paragraph Extraction from Legal Judgments},\n  author = {Santosh, T. Y. S. S. and Quero Hernandez, Elvin and Grabmair, Matthias},\n  booktitle = {Proceedings of the 2024 Joint International Conference on Computational Linguistics, Language Resources and Evaluation (LREC-COLING 2024)},\n  year = {2024}\n}";
const BSARD_BIBTEX: &str = "@inproceedings{louis-spanakis-2022-statutory,\n  title = {A Statutory Article Retrieval Dataset in {F}rench},\n  author = {Louis, Antoine and Spanakis, Gerasimos},\n  booktitle = {Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)},\n  year = {2022},\n  doi = {10.18653/v1/2022.acl-long.468}\n}";

/// The task's metadata.
fn metadata(src: &Source, tables: &Tables) -> Metadata {
    let pooled = src.pooled();
    let eval_splits: Vec<String> = src.evaluated().map(|s| s.hf_name.clone()).collect();
    let rows: BTreeMap<&str, usize> = tables
        .iter()
        .filter(|c| c.name == "default")
        .flat_map(|c| c.splits.iter().map(|(s, t)| (s.as_str(), t.rows())))
        .collect();
    let n_samples = src
        .evaluated()
        .map(|s| {
            // Reranking: rows are topics; retrieval: the split's queries.
            let n = if pooled {
                rows.get(s.hf_name.as_str()).copied().unwrap_or(0)
            } else {
                s.topics.len()
            };
            (s.hf_name.clone(), n)
        })
        .collect();
    let lang = match src.language {
        Some(Language::French) => "fra-Latn",
        Some(Language::English) => "eng-Latn",
        None if pooled => "eng-Latn",
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
        } else {
            "Statutory article retrieval (BSARD): retrieve the Belgian statutory articles relevant to a \
             French legal question from the whole corpus. Rebuilt by lexbench."
                .into()
        },
        reference: if pooled {
            "https://arxiv.org/abs/2404.00595"
        } else {
            "https://aclanthology.org/2022.acl-long.468/"
        },
        dataset: DatasetRef {
            path: ".",
            revision: src.version.clone(),
        },
        kind: if pooled { "Reranking" } else { "Retrieval" },
        category: "s2p",
        modalities: ["text"],
        eval_splits,
        eval_langs: vec![lang],
        main_score: if pooled { "map" } else { "ndcg_at_10" },
        date: None,
        domains: ["Legal", "Written"],
        task_subtypes: Vec::new(),
        license: if pooled {
            "not specified"
        } else {
            "cc-by-nc-sa-4.0"
        },
        annotations_creators: if pooled { "derived" } else { "expert-annotated" },
        dialect: Vec::new(),
        sample_creation: "found",
        bibtex_citation: if pooled { ECTHR_BIBTEX } else { BSARD_BIBTEX },
        descriptive_stats: Stats { n_samples },
    }
}
