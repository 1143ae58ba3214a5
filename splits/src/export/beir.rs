//! The BEIR export: the layout BEIR's `GenericDataLoader` (and MTEB's, and `datasets`' `json` and
//! `csv` builders) read.
//!
//! ```text
//! corpus.jsonl             {"_id", "title", "text"[, "metadata": {"item", "num", "section"}]}
//! queries.jsonl            {"_id", "text"[, "metadata": {"query", "item", "guide"}]}, every topic
//! qrels/<split>.tsv        query-id \t corpus-id \t score, with that header line
//! candidates/<split>.jsonl {"query-id", "corpus-ids": [...]} per topic (pooled datasets)
//! README.md                the dataset card; says when the task is per-judgment reranking
//! ```
//!
//! Split names are the dataset's (`train-fit` stays `train-fit`: they are only file names here).

use lexbench_core::DocId;
use serde::Serialize;

use super::{Files, Format, Source, add, card, jsonl};
use crate::error::Result;

/// A line of `corpus.jsonl`.
#[derive(Serialize)]
struct Doc<'a> {
    #[serde(rename = "_id")]
    id: &'a str,
    title: &'a str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<DocMeta<'a>>,
}

/// ECtHR's paragraph metadata.
#[derive(Serialize)]
struct DocMeta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    item: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    num: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    section: Option<serde_json::Value>,
}

/// A line of `queries.jsonl`.
#[derive(Serialize)]
struct Query<'a> {
    #[serde(rename = "_id")]
    id: &'a str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<QueryMeta<'a>>,
}

/// ECtHR's topic metadata: the query the topic asks and the judgment it ranks.
#[derive(Serialize)]
struct QueryMeta<'a> {
    query: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    item: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    guide: Option<&'a str>,
}

/// A line of `candidates/<split>.jsonl`.
#[derive(Serialize)]
struct Candidates<'a> {
    #[serde(rename = "query-id")]
    query: &'a str,
    #[serde(rename = "corpus-ids")]
    docs: &'a [DocId],
}

/// Every file of the BEIR export.
pub(super) fn files(src: &Source) -> Result<Files> {
    let mut files = Files::new();
    let docs = src.corpus.iter().map(|d| {
        let has_meta = d.item.is_some() || d.num.is_some() || d.section.is_some();
        Doc {
            id: d.doc.as_str(),
            title: "",
            text: &d.text,
            metadata: has_meta.then(|| DocMeta {
                item: d.item.as_ref().map(|i| i.as_str()),
                num: d.num,
                section: d.section.and_then(|s| serde_json::to_value(s).ok()),
            }),
        }
    });
    add(&mut files, "corpus.jsonl", jsonl(docs)?)?;
    let queries = src.topics.values().map(|t| {
        let has_meta = t.query.as_str() != t.topic.as_str() || t.item.is_some() || t.guide.is_some();
        Query {
            id: t.topic.as_str(),
            text: &t.text,
            metadata: has_meta.then(|| QueryMeta {
                query: t.query.as_str(),
                item: t.item.as_ref().map(|i| i.as_str()),
                guide: t.guide.as_ref().map(|g| g.as_str()),
            }),
        }
    });
    add(&mut files, "queries.jsonl", jsonl(queries)?)?;
    for split in &src.splits {
        let mut tsv = String::from("query-id\tcorpus-id\tscore\n");
        for (t, docs) in &split.qrels {
            for (d, g) in docs {
                tsv.push_str(&format!("{t}\t{d}\t{g}\n"));
            }
        }
        add(&mut files, &format!("qrels/{}.tsv", split.name), tsv.into_bytes())?;
        if src.pooled() {
            let rows = split
                .topics
                .iter()
                .map(|t| {
                    Ok(Candidates {
                        query: t.as_str(),
                        docs: src.pool(t)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            add(
                &mut files,
                &format!("candidates/{}.jsonl", split.name),
                jsonl(rows)?,
            )?;
        }
    }
    let readme = card::card(src, Format::Beir, &layout(src));
    add(&mut files, "README.md", readme.into_bytes())?;
    Ok(files)
}

/// The card's "Files" section for this format.
fn layout(src: &Source) -> String {
    let mut s = String::from(
        "BEIR's layout (`beir.datasets.data_loader.GenericDataLoader(DIR).load(split=…)` reads it):\n\n\
         - `corpus.jsonl`: `_id`, `title` (empty), `text`",
    );
    if src.corpus.iter().any(|d| d.item.is_some()) {
        s.push_str(", and `metadata` (`item`: the judgment, `num`: its printed paragraph number, `section`)");
    }
    s.push_str(".\n- `queries.jsonl`: every topic, `_id` (what runs and qrels name) and `text`");
    if src.topics.values().any(|t| t.item.is_some()) {
        s.push_str(
            ", and `metadata` (`query`: the query asked, shared by several topics; `item`: the judgment; `guide`)",
        );
    }
    s.push_str(
        ".\n- `qrels/<split>.tsv`: `query-id`, `corpus-id`, `score` (the grade; ≥ 1 is relevant), with a header line.\n",
    );
    if src.pooled() {
        s.push_str(
            "- `candidates/<split>.jsonl`: per topic, `query-id` and `corpus-ids`, its candidates.\n\n\
             **This is per-judgment reranking, not corpus retrieval.** Rank, for each query, only the \
             paragraphs its `candidates` line lists (its judgment's), never the whole corpus: BEIR's \
             retrieval evaluation over `corpus.jsonl` answers another question. Recall@k% cuts each \
             topic's ranking at `max(1, ⌈k·n/100⌉)` of its `n` candidates.\n",
        );
    }
    s
}
