//! BSARD (Louis & Spanakis 2022): statutory articles, questions, the legislative graph, and the dataset.
//!
//! Both published CSV layouts are read unchanged (DATA.md §4):
//! - v1 `articles_fr.csv`: `id, article, code, article_no, description, law_type` — the hierarchy is in
//!   `description` (`Livre I, Titre II, Chapitre III`);
//! - the later layout: `id, reference, article, law_type, code, book, part, act, chapter, section,
//!   subsection, description` — the hierarchy has columns.
//!
//! Questions: `id, question, category, subcategory, extra_description, article_ids` (comma-separated).
//!
//! The **legislative graph** has a node per code, per hierarchy level below it (book → part/title → act
//! → chapter → section → subsection) and per article, with parent→child edges; the **sequential view**
//! links each article to the next one of the same code, in file order (the published files list
//! articles in the order of the codes).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use lexbench_core::dataset::{CorpusDoc, DatasetManifest, DatasetTopic};
use lexbench_core::io::{write_atomic, write_json_pretty, write_jsonl};
use lexbench_core::{Article, ArticleId, Qrels, QueryId, Split, TopicId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A question: one line of `questions.jsonl` of the parsed BSARD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The question id.
    pub id: QueryId,
    /// The question.
    pub text: String,
    /// `Famille`, `Logement`, …
    pub category: String,
    /// The sub-category.
    pub subcategory: String,
    /// The relevant articles.
    pub articles: Vec<ArticleId>,
}

use lexbench_core::graph::{GraphNode, LegalGraph};

/// A CSV row with the line it starts on.
type Row = (usize, Vec<String>);

/// A CSV file's header and its non-blank rows, every row checked to have the header's number of fields.
/// A leading byte-order mark ("CSV UTF-8" exports) is not part of the first column's name.
fn records(path: &Path, text: &str) -> Result<(Vec<String>, Vec<Row>)> {
    let mut rows = lexbench_core::csv::parse(text, path)?
        .into_iter()
        .map(|r| (r.line, r.fields));
    let Some((_, header)) = rows.next() else {
        return Err(Error::Input {
            path: path.to_owned(),
            line: 1,
            message: "empty file".into(),
        });
    };
    let mut out = Vec::new();
    for (line, r) in rows {
        if r.len() == 1 && r[0].trim().is_empty() {
            continue;
        }
        if r.len() != header.len() {
            return Err(Error::Input {
                path: path.to_owned(),
                line,
                message: format!("{} fields, the header has {}", r.len(), header.len()),
            });
        }
        out.push((line, r));
    }
    Ok((header, out))
}

fn header_index<'a>(path: &'a Path, header: &'a [String]) -> impl Fn(&str) -> Result<usize> + 'a {
    move |name: &str| {
        header
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| Error::Input {
                path: path.to_owned(),
                line: 1,
                message: format!("no column {name:?} (columns: {})", header.join(", ")),
            })
    }
}

/// Reads `articles_fr.csv` in either layout. Positions count articles within their code, in file
/// order.
pub fn read_articles(path: &Path, text: &str) -> Result<Vec<Article>> {
    let (header, rows) = records(path, text)?;
    let header = &header;
    let col = header_index(path, header);
    let (id, article, code) = (col("id")?, col("article")?, col("code")?);
    let levels: Vec<(usize, &str)> = ["book", "part", "act", "chapter", "section", "subsection"]
        .iter()
        .filter_map(|l| col(l).ok().map(|i| (i, *l)))
        .collect();
    let description = col("description").ok();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut position: BTreeMap<String, u32> = BTreeMap::new();
    for (line, r) in &rows {
        let bad = |message: String| Error::Input {
            path: path.to_owned(),
            line: *line,
            message,
        };
        let aid = ArticleId::new(r[id].trim()).map_err(|e| bad(e.to_string()))?;
        if !seen.insert(aid.clone()) {
            return Err(bad(format!("article id {aid} appears twice")));
        }
        let code_name = r[code].trim().to_owned();
        if code_name.is_empty() {
            return Err(bad(format!("article {aid} has no code")));
        }
        let path_levels: Vec<String> = if levels.is_empty() {
            // v1: the hierarchy is the description, comma-separated.
            description
                .map(|d| {
                    r[d].split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            levels
                .iter()
                .map(|(i, _)| r[*i].trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        };
        let pos = position.entry(code_name.clone()).or_default();
        out.push(Article {
            id: aid,
            code: code_name,
            path: path_levels,
            position: *pos,
            text: r[article].trim().to_owned(),
        });
        *pos += 1;
    }
    if out.is_empty() {
        return Err(Error::Input {
            path: path.to_owned(),
            line: 0,
            message: "no articles".into(),
        });
    }
    Ok(out)
}

/// Reads a questions file; every article id must exist in `known`.
pub fn read_questions(path: &Path, text: &str, known: &BTreeSet<&ArticleId>) -> Result<Vec<Question>> {
    let (header, rows) = records(path, text)?;
    let header = &header;
    let col = header_index(path, header);
    let (id, q, ids) = (col("id")?, col("question")?, col("article_ids")?);
    let (cat, sub) = (col("category").ok(), col("subcategory").ok());
    let mut out = Vec::new();
    for (line, r) in &rows {
        let bad = |message: String| Error::Input {
            path: path.to_owned(),
            line: *line,
            message,
        };
        let qid = QueryId::new(format!("q{}", r[id].trim())).map_err(|e| bad(e.to_string()))?;
        let mut articles = Vec::new();
        for a in r[ids].split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let a = ArticleId::new(a).map_err(|e| bad(e.to_string()))?;
            if !known.contains(&a) {
                return Err(bad(format!(
                    "question {qid} cites article {a}, which is not in the articles file"
                )));
            }
            articles.push(a);
        }
        if articles.is_empty() {
            return Err(bad(format!("question {qid} has no relevant article")));
        }
        out.push(Question {
            id: qid,
            text: r[q].trim().to_owned(),
            category: cat.map(|c| r[c].trim().to_owned()).unwrap_or_default(),
            subcategory: sub.map(|c| r[c].trim().to_owned()).unwrap_or_default(),
            articles,
        });
    }
    Ok(out)
}

/// Builds the legislative graph and the sequential view.
pub fn graph(articles: &[Article]) -> LegalGraph {
    let mut g = LegalGraph::default();
    let mut index: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    let kinds = ["book", "part", "act", "chapter", "section", "subsection"];
    let mut last_of_code: BTreeMap<&str, usize> = BTreeMap::new();
    for a in articles {
        let mut key = vec![a.code.clone()];
        let mut parent = *index.entry(key.clone()).or_insert_with(|| {
            g.nodes.push(GraphNode {
                kind: "code".into(),
                label: a.code.clone(),
            });
            g.nodes.len() - 1
        });
        for (depth, level) in a.path.iter().enumerate() {
            key.push(level.clone());
            let kind = kinds.get(depth).copied().unwrap_or("subsection");
            let node = match index.get(&key) {
                Some(&n) => n,
                None => {
                    g.nodes.push(GraphNode {
                        kind: kind.into(),
                        label: level.clone(),
                    });
                    let n = g.nodes.len() - 1;
                    index.insert(key.clone(), n);
                    g.hierarchy.push((parent, n));
                    n
                }
            };
            parent = node;
        }
        g.nodes.push(GraphNode {
            kind: "article".into(),
            label: a.id.to_string(),
        });
        let n = g.nodes.len() - 1;
        g.hierarchy.push((parent, n));
        g.article_nodes.insert(a.id.clone(), n);
        if let Some(prev) = last_of_code.insert(&a.code, n) {
            g.sequence.push((prev, n));
        }
    }
    g
}

/// What a BSARD build wrote.
#[derive(Debug, Clone)]
pub struct BsardWritten {
    /// The manifest.
    pub manifest: DatasetManifest,
    /// Articles.
    pub articles: usize,
    /// Questions per split.
    pub questions: BTreeMap<String, usize>,
    /// Graph nodes and hierarchy edges.
    pub graph: (usize, usize),
}

/// Writes the BSARD dataset: `corpus.jsonl` (articles as documents), `articles.jsonl` (with their
/// hierarchy and position), `graph.json`, `queries.jsonl`, `qrels/<split>.tsv`, `splits/<split>.json`,
/// `stats.json`, `card.md`, `manifest.json`. No `pools.jsonl`: every question ranks the whole corpus.
pub fn write_bsard(
    dir: &Path,
    name: &str,
    articles: &[Article],
    splits: &BTreeMap<String, Vec<Question>>,
) -> Result<BsardWritten> {
    lexbench_core::io::write_dir_atomic(dir, |tmp| write_bsard_into(tmp, name, articles, splits))
}

fn write_bsard_into(
    tmp: &Path,
    name: &str,
    articles: &[Article],
    splits: &BTreeMap<String, Vec<Question>>,
) -> Result<BsardWritten> {
    let g = graph(articles);
    let corpus: Vec<CorpusDoc> = articles
        .iter()
        .map(|a| CorpusDoc {
            doc: a.id.doc_id(),
            text: a.text.clone(),
            item: None,
            num: None,
            section: None,
        })
        .collect();
    write_jsonl(&tmp.join("corpus.jsonl"), &corpus)?;
    write_jsonl(&tmp.join("articles.jsonl"), articles)?;
    g.write(&tmp.join(lexbench_core::graph::GRAPH_FILE))?;
    let mut topics: Vec<DatasetTopic> = Vec::new();
    let mut counts = BTreeMap::new();
    let mut per_question = Vec::new();
    for (split, qs) in splits {
        let mut qrels = Qrels::default();
        let mut ids = Vec::new();
        for q in qs {
            let t = TopicId::query(&q.id);
            for a in &q.articles {
                qrels.insert(t.clone(), a.doc_id(), 1);
            }
            ids.push(t.clone());
            per_question.push(q.articles.len() as f64);
            topics.push(DatasetTopic {
                topic: t,
                query: q.id.clone(),
                text: q.text.clone(),
                item: None,
                guide: None,
            });
        }
        ids.sort();
        counts.insert(split.clone(), qs.len());
        qrels.write(&tmp.join("qrels").join(format!("{split}.tsv")))?;
        write_json_pretty(
            &tmp.join("splits").join(format!("{split}.json")),
            &Split {
                dataset: name.to_owned(),
                name: split.clone(),
                topics: ids,
            },
        )?;
    }
    topics.sort_by(|a, b| a.topic.cmp(&b.topic));
    write_jsonl(&tmp.join("queries.jsonl"), &topics)?;
    let codes: BTreeSet<&str> = articles.iter().map(|a| a.code.as_str()).collect();
    let stats = serde_json::json!({
        "articles": articles.len(),
        "codes": codes.len(),
        "questions": counts,
        "relevant_per_question": crate::write::Summary::of(per_question),
        "article_tokens": crate::write::Summary::of(articles.iter().map(|a| a.text.split_whitespace().count() as f64).collect()),
        "graph": {"nodes": g.nodes.len(), "hierarchy_edges": g.hierarchy.len(), "sequence_edges": g.sequence.len()},
    });
    write_json_pretty(&tmp.join("stats.json"), &stats)?;
    let card = format!(
        "# Dataset card: {name}\n\nBSARD-format statutory article retrieval (Louis & Spanakis 2022): French questions, \
         Belgian-style statutory articles; every question ranks the whole corpus.\n\n{} articles in {} codes; questions: {}.\n\
         Legislative graph: {} nodes, {} hierarchy edges, {} sequential edges (graph.json).\n\nFiles: corpus.jsonl, \
         articles.jsonl, graph.json, queries.jsonl, qrels/<split>.tsv, splits/<split>.json, stats.json, manifest.json.\n",
        articles.len(),
        codes.len(),
        counts
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        g.nodes.len(),
        g.hierarchy.len(),
        g.sequence.len()
    );
    write_atomic(&tmp.join("card.md"), |w| w.write_all(card.as_bytes()))?;
    let manifest = DatasetManifest::write_with_language(
        tmp,
        name,
        concat!("lexbench ", env!("CARGO_PKG_VERSION")),
        Some(lexbench_core::dataset::Language::French),
    )?;
    Ok(BsardWritten {
        manifest,
        articles: articles.len(),
        questions: counts,
        graph: (g.nodes.len(), g.hierarchy.len()),
    })
}

#[cfg(test)]
mod tests {
    //! Properties: CSV quoting (commas, doubled quotes, newlines) and line numbers; both article layouts;
    //! the graph's shape; bad input names the file and line.
    use super::*;

    #[test]
    fn csv_quoting_and_lines() {
        let arts = read_articles(
            Path::new("a.csv"),
            "id,article,code\n\"1\",\"multi\nline, \"\"quoted\"\"\",C\n2,x\n",
        )
        .unwrap_err();
        assert!(arts.to_string().starts_with("a.csv:4: "), "{arts}");
        let err = read_articles(Path::new("a.csv"), "id,article,code\n1,\"open,C\n").unwrap_err();
        assert!(err.to_string().starts_with("a.csv:2: "), "{err}");
    }

    #[test]
    fn v1_layout_and_graph() {
        let text = "id,article,code,article_no,description,law_type\n\
                    1,Art. 1. Texte un,Code civil,1,\"Livre I, Titre I\",national\n\
                    2,Art. 2. Texte deux,Code civil,2,\"Livre I, Titre II\",national\n\
                    3,Art. 1. Autre,Code judiciaire,1,Livre I,national\n";
        let arts = read_articles(Path::new("a.csv"), text).unwrap();
        assert_eq!(arts[1].path, vec!["Livre I", "Titre II"]);
        assert_eq!((arts[1].position, arts[2].position), (1, 0));
        let g = graph(&arts);
        // 2 codes + Livre I (civil) + Titre I + Titre II + Livre I (judiciaire) + 3 articles.
        assert_eq!(g.nodes.len(), 9);
        assert_eq!(g.hierarchy.len(), 7);
        assert_eq!(
            g.sequence.len(),
            1,
            "only the two Code civil articles follow each other"
        );
        let known: BTreeSet<&ArticleId> = arts.iter().map(|a| &a.id).collect();
        let q =
            "id,question,category,subcategory,extra_description,article_ids\n1,Quoi ?,Famille,x,,\"1,9\"\n";
        let err = read_questions(Path::new("q.csv"), q, &known).unwrap_err();
        assert!(err.to_string().starts_with("q.csv:2:"), "{err}");
        let err = read_articles(Path::new("a.csv"), "id,article\n1,x\n").unwrap_err();
        assert!(err.to_string().contains("no column \"code\""), "{err}");
    }

    #[test]
    fn a_bom_is_not_part_of_the_first_column_name() {
        // Excel's "CSV UTF-8" starts the file with U+FEFF: the first column is still `id`.
        let text = "\u{feff}id,article,code,article_no,description,law_type\n\
                    1,Art. 1. Texte,Code civil,1,Livre I,national\n";
        let arts = read_articles(Path::new("a.csv"), text).unwrap();
        assert_eq!(arts[0].id.as_str(), "1");
        let known: BTreeSet<&ArticleId> = arts.iter().map(|a| &a.id).collect();
        let q = "\u{feff}id,question,category,subcategory,extra_description,article_ids\n7,Quoi ?,F,x,,1\n";
        let qs = read_questions(Path::new("q.csv"), q, &known).unwrap();
        assert_eq!(qs.len(), 1);
    }
}
