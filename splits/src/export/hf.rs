//! The Hugging Face export: a folder `datasets.load_dataset(DIR, CONFIG)` opens offline as it is.
//!
//! ```text
//! corpus/corpus.parquet      config corpus, split corpus: _id, title, text [, item, num, section]
//! queries/<split>.parquet    config queries (the default): _id (the topic), text [, query, item, guide]
//! qrels/<split>.parquet      config qrels: query-id, corpus-id, score
//! pools/<split>.parquet      config pools (pooled datasets): query-id, corpus-ids
//! README.md                  YAML configs + dataset_info, then the dataset card
//! ```
//!
//! Column names are BEIR's and MTEB's (`_id`, `query-id`, `corpus-id`, `score`), so the same code
//! reads either; a split's name has `_` for `-` ([`super::hf_split_name`]).

use lexbench_core::TopicId;
use lexbench_core::dataset::CorpusDoc;

use super::card::{self, Config, SplitFile};
use super::table::{Table, Values};
use super::{Files, Format, Source, SplitData, add};
use crate::error::Result;

/// The corpus: `_id`, `title` (empty: the datasets have none), `text`, and where documents have
/// them (ECtHR) `item`, `num`, `section`.
pub(super) fn corpus_table(src: &Source) -> Table {
    let docs = &src.corpus;
    let strings = |f: &dyn Fn(&CorpusDoc) -> String| Values::Str(docs.iter().map(f).collect());
    let mut t = Table::default()
        .col("_id", strings(&|d| d.doc.to_string()))
        .col("title", strings(&|_| String::new()))
        .col("text", strings(&|d| d.text.clone()));
    if docs
        .iter()
        .any(|d| d.item.is_some() || d.num.is_some() || d.section.is_some())
    {
        t = t
            .col(
                "item",
                Values::OptStr(
                    docs.iter()
                        .map(|d| d.item.as_ref().map(ToString::to_string))
                        .collect(),
                ),
            )
            .col("num", Values::OptU32(docs.iter().map(|d| d.num).collect()))
            .col(
                "section",
                Values::OptStr(
                    docs.iter()
                        .map(|d| {
                            d.section
                                .and_then(|s| serde_json::to_value(s).ok())
                                .and_then(|v| v.as_str().map(str::to_owned))
                        })
                        .collect(),
                ),
            );
    }
    t
}

/// Which optional query columns the dataset has (the same for every split, so that one config's
/// splits share their features).
struct QueryColumns {
    query: bool,
    item: bool,
    guide: bool,
}

impl QueryColumns {
    fn of(src: &Source) -> Self {
        let t = src.topics.values();
        QueryColumns {
            query: t.clone().any(|t| t.query.as_str() != t.topic.as_str()),
            item: t.clone().any(|t| t.item.is_some()),
            guide: t.clone().any(|t| t.guide.is_some()),
        }
    }
}

/// The topics `topics`: `_id` (the topic), `text`, and where the dataset has them `query` (the
/// query asked; ECtHR topics share it), `item` (the judgment ranked), `guide`.
pub(super) fn queries_table(src: &Source, topics: &[TopicId]) -> Result<Table> {
    let rows = topics.iter().map(|t| src.topic(t)).collect::<Result<Vec<_>>>()?;
    let cols = QueryColumns::of(src);
    let mut t = Table::default()
        .col(
            "_id",
            Values::Str(rows.iter().map(|r| r.topic.to_string()).collect()),
        )
        .col("text", Values::Str(rows.iter().map(|r| r.text.clone()).collect()));
    if cols.query {
        t = t.col(
            "query",
            Values::Str(rows.iter().map(|r| r.query.to_string()).collect()),
        );
    }
    if cols.item {
        let v = rows
            .iter()
            .map(|r| r.item.as_ref().map(ToString::to_string))
            .collect();
        t = t.col("item", Values::OptStr(v));
    }
    if cols.guide {
        let v = rows
            .iter()
            .map(|r| r.guide.as_ref().map(ToString::to_string))
            .collect();
        t = t.col("guide", Values::OptStr(v));
    }
    Ok(t)
}

/// The split's judgments, by topic then document: `query-id`, `corpus-id`, `score` (the grade).
pub(super) fn qrels_table(split: &SplitData) -> Table {
    let rows: Vec<_> = split
        .qrels
        .iter()
        .flat_map(|(t, docs)| docs.iter().map(move |(d, g)| (t, d, *g)))
        .collect();
    Table::default()
        .col(
            "query-id",
            Values::Str(rows.iter().map(|r| r.0.to_string()).collect()),
        )
        .col(
            "corpus-id",
            Values::Str(rows.iter().map(|r| r.1.to_string()).collect()),
        )
        .col("score", Values::I32(rows.iter().map(|r| r.2).collect()))
}

/// The split's pools, in the split's topic order: `query-id`, `corpus-ids` (in the pool's order).
pub(super) fn pools_table(src: &Source, split: &SplitData) -> Result<Table> {
    let mut lists = Vec::with_capacity(split.topics.len());
    for t in &split.topics {
        lists.push(src.pool(t)?.iter().map(ToString::to_string).collect());
    }
    Ok(Table::default()
        .col(
            "query-id",
            Values::Str(split.topics.iter().map(ToString::to_string).collect()),
        )
        .col("corpus-ids", Values::StrList(lists)))
}

/// Writes `table` as the Parquet file `rel` of split `split` into `files`.
pub(super) fn parquet_file(files: &mut Files, split: &str, rel: &str, table: &Table) -> Result<SplitFile> {
    let bytes = table.parquet(rel)?;
    let f = SplitFile {
        name: split.to_owned(),
        path: rel.to_owned(),
        rows: table.rows(),
        bytes: bytes.len(),
    };
    add(files, rel, bytes)?;
    Ok(f)
}

/// Every file of the Hugging Face export.
pub(super) fn files(src: &Source) -> Result<Files> {
    let mut files = Files::new();
    let corpus = corpus_table(src);
    let corpus_config = Config {
        name: "corpus",
        default: false,
        schema: &corpus,
        splits: vec![parquet_file(
            &mut files,
            "corpus",
            "corpus/corpus.parquet",
            &corpus,
        )?],
    };
    let mut tables: Vec<(&'static str, Vec<(String, Table)>)> =
        vec![("queries", Vec::new()), ("qrels", Vec::new())];
    if src.pooled() {
        tables.push(("pools", Vec::new()));
    }
    for split in &src.splits {
        for (config, list) in &mut tables {
            let table = match *config {
                "queries" => queries_table(src, &split.topics)?,
                "qrels" => qrels_table(split),
                _ => pools_table(src, split)?,
            };
            list.push((split.hf_name.clone(), table));
        }
    }
    let mut configs = vec![corpus_config];
    for (config, list) in &tables {
        let mut splits = Vec::new();
        for (split, table) in list {
            let rel = format!("{config}/{split}.parquet");
            splits.push(parquet_file(&mut files, split, &rel, table)?);
        }
        // Source::read refuses a dataset without splits: every config has a first table.
        if let Some((_, schema)) = list.first() {
            configs.push(Config {
                name: config,
                default: *config == "queries",
                schema,
                splits,
            });
        }
    }
    let mut readme = card::front_matter(src, &configs);
    readme.push_str(&card::card(src, Format::Hf, &layout(src)));
    add(&mut files, "README.md", readme.into_bytes())?;
    Ok(files)
}

/// The card's "Files" section for this format.
fn layout(src: &Source) -> String {
    let corpus_cols = if src.corpus.iter().any(|d| d.item.is_some()) {
        "`_id`, `title` (empty), `text`, `item` (the judgment), `num` (its printed paragraph number), `section`"
    } else {
        "`_id`, `title` (empty), `text`"
    };
    let cols = QueryColumns::of(src);
    let mut query_cols = String::from("`_id` (the topic: what runs and qrels name), `text`");
    if cols.query {
        query_cols.push_str(", `query` (the query asked; several topics share it)");
    }
    if cols.item {
        query_cols.push_str(", `item` (the judgment whose paragraphs the topic ranks)");
    }
    if cols.guide {
        query_cols.push_str(", `guide`");
    }
    let first = src.splits.first().map_or("test", |s| s.hf_name.as_str());
    let mut s = format!(
        "Parquet, one file per config and split; `load_dataset(DIR, CONFIG)` reads them offline.\n\n\
         - `corpus/corpus.parquet` (config `corpus`, split `corpus`): {corpus_cols}.\n\
         - `queries/<split>.parquet` (config `queries`, the default): {query_cols}.\n\
         - `qrels/<split>.parquet` (config `qrels`): `query-id`, `corpus-id`, `score` (the grade; ≥ 1 is relevant).\n"
    );
    if src.pooled() {
        s.push_str(
            "- `pools/<split>.parquet` (config `pools`): `query-id`, `corpus-ids` (the topic's candidates, \
             the judgment's paragraphs in order; `R@k%` cuts at a share of their number).\n",
        );
    }
    s.push_str(&format!(
        "\n```python\nfrom datasets import load_dataset\ncorpus = load_dataset(DIR, \"corpus\", split=\"corpus\")\n\
         queries = load_dataset(DIR, \"queries\", split=\"{first}\")\nqrels = load_dataset(DIR, \"qrels\", split=\"{first}\")\n```\n"
    ));
    s
}
