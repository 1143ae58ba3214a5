//! BSARD (Louis & Spanakis 2022): statutory articles, questions, the legislative graph, and the dataset.
//!
//! Both published CSV layouts are read unchanged (DATA.md §4):
//! - v1 `articles_fr.csv`: `id, article, code, article_no, description, law_type` — the hierarchy is in
//!   `description` (`Livre I, Titre II, Chapitre III`);
//! - the later layout: `id, reference, article, law_type, code, book, part, act, chapter, section,
//!   subsection, description` — the hierarchy has columns.
//!
//! Questions: `id, question, category, subcategory, extra_description, article_ids` (the sample) or
//! `id, category, subcategory, question, extra_description, article_ids` (the published files): columns
//! are found by name; `article_ids` is a comma-separated list inside one quoted field. The published
//! test file lists one article twice for one question (its 1,060 pairs are 1,059 distinct ones):
//! [`parse_questions`] keeps it once and records the repeat ([`QuestionsFile::repeated`]).
//! [`questions_report`] counts question files alone, without the articles they cite.
//!
//! The **legislative graph** has a node per code, per hierarchy level below it (book → part/title → act
//! → chapter → section → subsection) and per article, with parent→child edges; the **sequential view**
//! links each article to the next one of the same code, in file order (the published files list
//! articles in the order of the codes).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// A questions file as read, before its article ids are checked against an articles file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionsFile {
    /// The questions, in file order; each lists its articles once, in the order first given.
    pub questions: Vec<Question>,
    /// The line each question starts on (one per question).
    pub lines: Vec<usize>,
    /// Article ids as listed, repeats included (the published BSARD counts pairs this way).
    pub listed: usize,
    /// Article ids a question lists more than once (the published test file has one).
    pub repeated: Vec<Repeated>,
}

/// An article id listed more than once by one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repeated {
    /// The line the question starts on.
    pub line: usize,
    /// The question.
    pub question: QueryId,
    /// The article.
    pub article: ArticleId,
    /// How often the question lists it.
    pub times: usize,
}

/// Reads a questions file in either layout (the sample's `id, question, category, …` or the published
/// files' `id, category, subcategory, question, extra_description, article_ids`: columns are found by
/// name). Each row needs an id (unique in the file), a question and at least one article id;
/// `article_ids` is split at commas and each id trimmed, so `"12, 15"` is `12` and `15`. Errors name
/// the file and the line the row starts on.
pub fn parse_questions(path: &Path, text: &str) -> Result<QuestionsFile> {
    let (header, rows) = records(path, text)?;
    let header = &header;
    let col = header_index(path, header);
    let (id, q, ids) = (col("id")?, col("question")?, col("article_ids")?);
    let (cat, sub) = (col("category").ok(), col("subcategory").ok());
    let mut out = QuestionsFile {
        questions: Vec::with_capacity(rows.len()),
        lines: Vec::with_capacity(rows.len()),
        listed: 0,
        repeated: Vec::new(),
    };
    let mut first_line: BTreeMap<QueryId, usize> = BTreeMap::new();
    for (line, r) in &rows {
        let bad = |message: String| Error::Input {
            path: path.to_owned(),
            line: *line,
            message,
        };
        let raw_id = r[id].trim();
        if raw_id.is_empty() {
            return Err(bad("a question without an id".into()));
        }
        let qid = QueryId::new(format!("q{raw_id}")).map_err(|e| bad(e.to_string()))?;
        if let Some(first) = first_line.insert(qid.clone(), *line) {
            return Err(bad(format!(
                "question id {raw_id} appears twice (first on line {first})"
            )));
        }
        let text = r[q].trim();
        if text.is_empty() {
            return Err(bad(format!("question {raw_id} has no text")));
        }
        let mut articles: Vec<ArticleId> = Vec::new();
        for a in r[ids].split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let a = ArticleId::new(a).map_err(|e| bad(format!("question {raw_id}: {e}")))?;
            out.listed += 1;
            if articles.contains(&a) {
                match out
                    .repeated
                    .iter_mut()
                    .find(|x| x.question == qid && x.article == a)
                {
                    Some(x) => x.times += 1,
                    None => out.repeated.push(Repeated {
                        line: *line,
                        question: qid.clone(),
                        article: a,
                        times: 2,
                    }),
                }
            } else {
                articles.push(a);
            }
        }
        if articles.is_empty() {
            return Err(bad(format!("question {raw_id} has no relevant article")));
        }
        out.questions.push(Question {
            id: qid,
            text: text.to_owned(),
            category: cat.map(|c| r[c].trim().to_owned()).unwrap_or_default(),
            subcategory: sub.map(|c| r[c].trim().to_owned()).unwrap_or_default(),
            articles,
        });
        out.lines.push(*line);
    }
    if out.questions.is_empty() {
        return Err(Error::Input {
            path: path.to_owned(),
            line: 0,
            message: "no questions".into(),
        });
    }
    Ok(out)
}

impl QuestionsFile {
    /// Checks that every cited article is in `known` (the articles file read with it); the error names
    /// the file, the question's line and the article.
    pub fn check_cited(&self, path: &Path, known: &BTreeSet<&ArticleId>) -> Result<()> {
        for (q, line) in self.questions.iter().zip(&self.lines) {
            if let Some(a) = q.articles.iter().find(|a| !known.contains(a)) {
                return Err(Error::Input {
                    path: path.to_owned(),
                    line: *line,
                    message: format!(
                        "question {} cites article {a}, which is not in the articles file",
                        q.id
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Reads a questions file ([`parse_questions`]); every article id must exist in `known`.
pub fn read_questions(path: &Path, text: &str, known: &BTreeSet<&ArticleId>) -> Result<Vec<Question>> {
    let file = parse_questions(path, text)?;
    file.check_cited(path, known)?;
    Ok(file.questions)
}

/// The counts of one or more question files ([`questions_report`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionsStats {
    /// Questions.
    pub questions: usize,
    /// Question–article pairs as listed (an article a question lists twice counts twice, as in the
    /// published counts).
    pub pairs_listed: usize,
    /// Distinct question–article pairs (what the qrels hold).
    pub pairs: usize,
    /// Distinct articles cited.
    pub articles: usize,
    /// Questions per category.
    pub categories: BTreeMap<String, usize>,
    /// Distinct sub-categories.
    pub subcategories: usize,
    /// Relevant articles per question.
    pub relevant_per_question: Option<crate::write::Summary>,
}

impl QuestionsStats {
    /// The counts over `files` together.
    pub fn of<'a>(files: impl IntoIterator<Item = &'a QuestionsFile>) -> Self {
        let mut s = Self {
            questions: 0,
            pairs_listed: 0,
            pairs: 0,
            articles: 0,
            categories: BTreeMap::new(),
            subcategories: 0,
            relevant_per_question: None,
        };
        let mut articles = BTreeSet::new();
        let mut subcategories = BTreeSet::new();
        let mut per_question = Vec::new();
        for f in files {
            s.pairs_listed += f.listed;
            for q in &f.questions {
                s.questions += 1;
                s.pairs += q.articles.len();
                articles.extend(&q.articles);
                *s.categories.entry(q.category.clone()).or_default() += 1;
                subcategories.insert((&q.category, &q.subcategory));
                per_question.push(q.articles.len() as f64);
            }
        }
        s.articles = articles.len();
        s.subcategories = subcategories.len();
        s.relevant_per_question = crate::write::Summary::of(per_question);
        s
    }
}

/// One question file in a [`QuestionsReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionsFileReport {
    /// Where it was read from.
    pub file: String,
    /// Its counts.
    #[serde(flatten)]
    pub stats: QuestionsStats,
    /// Article ids a question lists more than once.
    pub repeated: Vec<Repeated>,
}

/// The counts of BSARD question files without their articles (`lexbench stats --bsard-questions`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionsReport {
    /// Per split (`train`, `test`, …).
    pub files: BTreeMap<String, QuestionsFileReport>,
    /// All files together.
    pub all: QuestionsStats,
    /// Question ids found in more than one file.
    pub questions_in_several_files: usize,
    /// Articles cited by questions of more than one file.
    pub articles_in_several_files: usize,
}

/// The report over question files, by split name.
pub fn questions_report(files: &BTreeMap<String, (PathBuf, QuestionsFile)>) -> QuestionsReport {
    let mut question_files: BTreeMap<&QueryId, usize> = BTreeMap::new();
    let mut article_files: BTreeMap<&ArticleId, BTreeSet<&str>> = BTreeMap::new();
    for (split, (_, f)) in files {
        for q in &f.questions {
            *question_files.entry(&q.id).or_default() += 1;
            for a in &q.articles {
                article_files.entry(a).or_default().insert(split);
            }
        }
    }
    QuestionsReport {
        files: files
            .iter()
            .map(|(split, (path, f))| {
                (
                    split.clone(),
                    QuestionsFileReport {
                        file: path.display().to_string(),
                        stats: QuestionsStats::of([f]),
                        repeated: f.repeated.clone(),
                    },
                )
            })
            .collect(),
        all: QuestionsStats::of(files.values().map(|(_, f)| f)),
        questions_in_several_files: question_files.values().filter(|n| **n > 1).count(),
        articles_in_several_files: article_files.values().filter(|s| s.len() > 1).count(),
    }
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

/// The split the build carves from the training questions for model selection (issue 31, item 12).
/// BSARD's release has a training and a test file only; the papers select on a validation set taken
/// from the training questions, so the build writes two derived splits beside `train` (kept whole):
/// [`VALIDATION_SPLIT`] and [`FIT_SPLIT`] (the rest), id lists over the same queries and qrels.
pub const VALIDATION_SPLIT: &str = "validation";
/// The training questions left once [`VALIDATION_SPLIT`] is carved out: the split the BSARD configs
/// train on.
pub const FIT_SPLIT: &str = "train-fit";
/// The share of the training questions in [`VALIDATION_SPLIT`]: 10% (ours; the papers do not give
/// the size), rounded, at least one question: 89 of BSARD's 886, 4 of the sample's 39.
pub const VALIDATION_SHARE: f64 = 0.1;
/// The seed of the validation draw (stated, so every build carves the same questions).
pub const VALIDATION_SEED: u64 = 20_261_122;

/// The validation questions carved from `train` and the rest, both in `train`'s order: the question
/// ids sorted, shuffled by [`crate::rng::SplitMix64`] seeded with [`VALIDATION_SEED`], the first
/// `max(1, round(VALIDATION_SHARE · n))` taken. Fewer than two training questions carve nothing.
pub fn carve_validation(train: &[Question]) -> (Vec<Question>, Vec<Question>) {
    if train.len() < 2 {
        return (Vec::new(), train.to_vec());
    }
    let n = ((VALIDATION_SHARE * train.len() as f64).round() as usize).clamp(1, train.len() - 1);
    let mut ids: Vec<&QueryId> = train.iter().map(|q| &q.id).collect();
    ids.sort();
    crate::rng::SplitMix64::new(VALIDATION_SEED).shuffle(&mut ids);
    let chosen: BTreeSet<&QueryId> = ids.into_iter().take(n).collect();
    train.iter().cloned().partition(|q| chosen.contains(&q.id))
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
    /// The splits derived from `train` ([`VALIDATION_SPLIT`], [`FIT_SPLIT`]) and their questions;
    /// empty without a `train` split of at least two questions.
    pub derived: BTreeMap<String, usize>,
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

/// Refuses questions that are in two splits: the same id, or the same text under two ids. Texts are
/// compared twice over: in Unicode normalisation form C (a question decomposed, NFD, is the question
/// composed), and NFKC, case-folded and with white space collapsed ([`crate::pairs::fold_unicode`]:
/// full-width letters, ligatures, no-break spaces, other case and spacing are the same question).
/// A question in both the training and the test file is a leak that would inflate every trained
/// model's score.
pub fn check_disjoint(splits: &BTreeMap<String, Vec<Question>>) -> Result<()> {
    let mut by_id: BTreeMap<&str, &str> = BTreeMap::new();
    // Folded text → (split, id, NFC text) of its first question.
    let mut by_text: BTreeMap<String, (&str, &str, String)> = BTreeMap::new();
    let mut leaks = Vec::new();
    for (split, qs) in splits {
        let mut here_ids = BTreeSet::new();
        let mut here_texts = BTreeSet::new();
        let keys: Vec<(String, String)> = qs
            .iter()
            .map(|q| (crate::pairs::fold_unicode(&q.text), crate::pairs::nfc(&q.text)))
            .collect();
        for (q, (folded, nfc)) in qs.iter().zip(&keys) {
            let id = q.id.as_str();
            if here_ids.insert(id)
                && let Some(other) = by_id.get(id)
            {
                leaks.push(format!("question {id} is in {other} and in {split}"));
            }
            if here_texts.insert(folded.clone())
                && let Some((other, other_id, other_nfc)) = by_text.get(folded)
                && *other_id != id
            {
                let how = if other_nfc == nfc {
                    "the text (NFC)"
                } else {
                    "the text once compatibility forms, case and white space are folded (NFKC)"
                };
                leaks.push(format!(
                    "question {id} ({split}) has {how} of question {other_id} ({other})"
                ));
            }
        }
        for (q, (folded, nfc)) in qs.iter().zip(keys) {
            by_id.entry(q.id.as_str()).or_insert(split);
            by_text
                .entry(folded)
                .or_insert((split.as_str(), q.id.as_str(), nfc));
        }
    }
    if leaks.is_empty() {
        return Ok(());
    }
    let n = leaks.len();
    leaks.truncate(10);
    if n > 10 {
        leaks.push(format!("… {} more", n - 10));
    }
    Err(Error::Leak(leaks))
}

fn write_bsard_into(
    tmp: &Path,
    name: &str,
    articles: &[Article],
    splits: &BTreeMap<String, Vec<Question>>,
) -> Result<BsardWritten> {
    check_disjoint(splits)?;
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
    // The validation split carved from `train` and the rest: id lists over the queries written above.
    let mut derived = BTreeMap::new();
    let (validation, fit) = splits
        .get("train")
        .map(|t| carve_validation(t))
        .unwrap_or_default();
    if !validation.is_empty() {
        for (split, qs) in [(VALIDATION_SPLIT, &validation), (FIT_SPLIT, &fit)] {
            let mut qrels = Qrels::default();
            let mut ids = Vec::new();
            for q in qs {
                let t = TopicId::query(&q.id);
                for a in &q.articles {
                    qrels.insert(t.clone(), a.doc_id(), 1);
                }
                ids.push(t);
            }
            ids.sort();
            derived.insert(split.to_owned(), qs.len());
            qrels.write(&tmp.join("qrels").join(format!("{split}.tsv")))?;
            write_json_pretty(
                &tmp.join("splits").join(format!("{split}.json")),
                &Split {
                    dataset: name.to_owned(),
                    name: split.to_owned(),
                    topics: ids,
                },
            )?;
        }
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
        "derived_from_train": {"splits": derived, "validation_share": VALIDATION_SHARE, "seed": VALIDATION_SEED},
    });
    write_json_pretty(&tmp.join("stats.json"), &stats)?;
    let card = format!(
        "# Dataset card: {name}\n\nBSARD-format statutory article retrieval (Louis & Spanakis 2022): French questions, \
         Belgian-style statutory articles; every question ranks the whole corpus.\n\n{} articles in {} codes; questions: {}.\n\
         Legislative graph: {} nodes, {} hierarchy edges, {} sequential edges (graph.json).\n\n{}Files: corpus.jsonl, \
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
        g.sequence.len(),
        match (derived.get(VALIDATION_SPLIT), derived.get(FIT_SPLIT)) {
            (Some(v), Some(f)) => format!(
                "Model selection: {VALIDATION_SPLIT} ({v} questions) carved from train, {:.0}% drawn with seed \
                 {VALIDATION_SEED}; {FIT_SPLIT} holds the other {f} (train stays whole).\n\n",
                VALIDATION_SHARE * 100.0
            ),
            _ => String::new(),
        }
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
        derived,
    })
}

#[cfg(test)]
mod tests {
    //! Properties: CSV quoting (commas, doubled quotes, newlines) and line numbers; both article layouts;
    //! both question layouts (BOM, CRLF, multi-line quoted questions, spaces in id lists, an article
    //! listed twice kept once and counted as listed); the graph's shape; bad input (unknown article,
    //! repeated question id, no article, no text, a bad id, a missing column) names the file and line.
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

    const BOM: char = '\u{feff}';
    const PUBLISHED_HEADER: &str = "id,category,subcategory,question,extra_description,article_ids";

    #[test]
    fn the_published_question_layout() {
        // The published column order, a BOM, CRLF, a quoted question over two lines with commas and
        // doubled quotes, an id list with spaces, an article listed twice.
        let text = format!(
            "{BOM}{PUBLISHED_HEADER}\r\n\
             775,Logement,Insalubrité,Quels sont les critères d'insalubrité ?,,11822\r\n\
             634,Justice,Infractions,\"Si j’ai commis une infraction,\r\npeut-on dire \"\"non\"\" ?\",\"Amendes, transaction\",\" 13310 , 12,13310\"\r\n\
             9,Famille,Couple,Quoi ?,,\"1,2\"\r\n"
        );
        let f = parse_questions(Path::new("q.csv"), &text).unwrap();
        assert_eq!(f.questions.len(), 3);
        assert_eq!(f.lines, [2, 3, 5]);
        let q = &f.questions[1];
        assert_eq!(q.id.as_str(), "q634");
        assert_eq!(q.text, "Si j’ai commis une infraction,\r\npeut-on dire \"non\" ?");
        assert_eq!(
            (q.category.as_str(), q.subcategory.as_str()),
            ("Justice", "Infractions")
        );
        let ids: Vec<&str> = q.articles.iter().map(ArticleId::as_str).collect();
        assert_eq!(ids, ["13310", "12"]);
        assert_eq!(f.listed, 6, "the repeat counts as listed");
        assert_eq!(f.repeated.len(), 1);
        assert_eq!(
            (
                f.repeated[0].line,
                f.repeated[0].article.as_str(),
                f.repeated[0].times
            ),
            (3, "13310", 2)
        );
        let s = QuestionsStats::of([&f]);
        assert_eq!(
            (s.questions, s.pairs_listed, s.pairs, s.articles, s.subcategories),
            (3, 6, 5, 5, 3)
        );
        assert_eq!(s.categories["Logement"], 1);
        // Checked against an articles file: the unknown article is named with its question's line.
        let known_ids: Vec<ArticleId> = ["11822", "13310", "12", "1"]
            .iter()
            .map(|a| ArticleId::new(*a).unwrap())
            .collect();
        let known: BTreeSet<&ArticleId> = known_ids.iter().collect();
        let err = read_questions(Path::new("q.csv"), &text, &known).unwrap_err();
        assert_eq!(
            err.to_string(),
            "q.csv:5: question q9 cites article 2, which is not in the articles file"
        );
    }

    #[test]
    fn bad_question_rows_name_file_and_line() {
        let err = |rows: &str| {
            parse_questions(Path::new("q.csv"), &format!("{PUBLISHED_HEADER}\n{rows}"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("1,F,x,Quoi ?,,1\n2,F,x,\"Deux\nlignes\",,2\n1,F,x,Encore ?,,3\n"),
            "q.csv:5: question id 1 appears twice (first on line 2)"
        );
        assert_eq!(
            err("1,F,x,Quoi ?,,\" , \"\n"),
            "q.csv:2: question 1 has no relevant article"
        );
        assert_eq!(err("1,F,x,  ,,1\n"), "q.csv:2: question 1 has no text");
        assert_eq!(err(",F,x,Quoi ?,,1\n"), "q.csv:2: a question without an id");
        assert!(
            err("1,F,x,Quoi ?,,\"1 2\"\n").starts_with("q.csv:2: question 1: "),
            "an id with a space inside"
        );
        assert_eq!(err("1,F,x,Quoi ?,1\n"), "q.csv:2: 5 fields, the header has 6");
        assert_eq!(err(""), "q.csv:0: no questions");
        let e = parse_questions(Path::new("q.csv"), "id,question\n1,x\n").unwrap_err();
        assert!(
            e.to_string().starts_with("q.csv:1: no column \"article_ids\""),
            "{e}"
        );
    }
}
