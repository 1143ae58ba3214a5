//! `lexbench import lexclipr`: LexCLiPR's labels and segmented judgments as one cross-lingual ECtHR
//! dataset per query language (`ecthr-xl-<code>`), in the monolingual layout: topics (heading path,
//! judgment), pools (the judgment's paragraphs), qrels of `train`, `val` and `test` from the labels,
//! the certificate and card of every dataset; beside them LexCLiPR's `train_all` as published
//! (`qrels/train_all.tsv`, `splits/train_all.json`), the links to the English headings
//! (`english_topics.jsonl`) and the row counts (`lexclipr.json`). The manifest declares the queries'
//! language and an English corpus, which BM25 reads to analyse each side with its own chain.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use lexbench_core::datadir::DataDir;
use lexbench_core::dataset::{DatasetManifest, Language};
use lexbench_core::{ItemId, Judgment, ParagraphId, Qrels, Split, TopicId};
use lexbench_splits::lexclipr::{self, LEFT_OUT_REASONS, Labels, RowCounts, TRAIN_ALL, XlPairs};
use lexbench_splits::write::{BuildInput, Written, write_dataset};
use serde::Serialize;

use crate::build::{Built, InputLabel};

/// The labels file of a LexCLiPR folder.
pub const LABELS_FILE: &str = "labels.jsonl";
/// The segmented judgments of a LexCLiPR folder.
pub const JUDGMENTS_FILE: &str = "judgments.jsonl";
/// The report written into each dataset.
pub const REPORT_FILE: &str = "lexclipr.json";
/// The links from a language's topics to the English ones.
pub const LINKS_FILE: &str = "english_topics.jsonl";

/// The dataset name of a query language: `ecthr-xl-<code>`.
pub fn dataset_name(lang: Language) -> String {
    format!("ecthr-xl-{}", lang.code())
}

/// The BM25 analyser the queries of `lang` go through (documents: English), as the card names it.
pub fn query_analyser(lang: Language) -> &'static str {
    match lang {
        Language::English => "english (Lucene's English chain: stop words, Snowball English)",
        Language::French => "french (Lucene's French chain: stop words, Snowball French, accents folded)",
        _ => "plain (Unicode lower-case tokens, no stop words, no stemming)",
    }
}

/// What one language's dataset holds, written into it as [`REPORT_FILE`].
#[derive(Debug, Clone, Serialize)]
pub struct XlReport {
    /// `ecthr-xl-<code>`.
    pub dataset: String,
    /// The query language (ISO 639-1).
    pub query_language: Language,
    /// The corpus's language.
    pub corpus_language: Language,
    /// The BM25 analyser of the queries.
    pub bm25_query_analyser: String,
    /// Rows of `labels.jsonl` per LexCLiPR split: read, kept, merged, left out by reason.
    pub rows: BTreeMap<String, RowCounts>,
    /// Topics per split (`train_all` included).
    pub topics: BTreeMap<String, usize>,
    /// Topics linked to an English topic ([`LINKS_FILE`]); and those with several candidates.
    pub english_links: usize,
    /// Topics whose heading path matches more than one English one (not linked).
    pub ambiguous_links: usize,
    /// Every row left out: `labels.jsonl:LINE topic: why`.
    pub left_out: Vec<String>,
}

/// One language imported.
#[derive(Debug)]
pub struct XlImport {
    /// The dataset written.
    pub built: Built<Written>,
    /// Its report.
    pub report: XlReport,
}

/// A link line of [`LINKS_FILE`].
#[derive(Debug, Serialize)]
struct Link<'a> {
    topic: &'a TopicId,
    english_topic: &'a TopicId,
}

/// Imports LexCLiPR's folder `dir` (`labels.jsonl`, `judgments.jsonl`) as one dataset per language
/// of `langs` (every language of the labels when empty), each written atomically; with `union`, also
/// their union ([`UNION_DATASET`], [`lexclipr::union`]).
pub fn import_lexclipr(
    data: &DataDir,
    dir: &Path,
    langs: &[Language],
    union: bool,
) -> Result<(Vec<XlImport>, Option<UnionImport>)> {
    let labels_path = dir.join(LABELS_FILE);
    let judgments_path = dir.join(JUDGMENTS_FILE);
    let labels = lexclipr::read_labels(&labels_path)?;
    let judgments = read_judgments(&judgments_path)?;
    let numbers: BTreeMap<ItemId, BTreeSet<u32>> = judgments
        .iter()
        .map(|(i, j)| (i.clone(), j.paragraphs.iter().map(|p| p.num).collect()))
        .collect();
    let present: BTreeSet<Language> = labels.rows.iter().map(|r| r.lang).collect();
    let langs: Vec<Language> = if langs.is_empty() {
        present.iter().copied().collect()
    } else {
        for l in langs {
            if !present.contains(l) {
                anyhow::bail!(
                    "{}: no row in {} (languages there: {})",
                    labels_path.display(),
                    l.name(),
                    present.iter().map(|l| l.code()).collect::<Vec<_>>().join(", ")
                );
            }
        }
        langs
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let sources = format!(
        "LexCLiPR's labels {} and segmented judgments {}",
        InputLabel::of(&labels_path)?,
        InputLabel::of(&judgments_path)?
    );
    // Every language's pairs: the union's leak check reads all of them, whatever is imported.
    let all: Vec<XlPairs> = present
        .iter()
        .map(|&lang| lexclipr::pairs_for(&labels, lang, &numbers))
        .collect::<std::result::Result<_, _>>()?;
    let chosen: Vec<&XlPairs> = all.iter().filter(|x| langs.contains(&x.lang)).collect();
    let imports = chosen
        .iter()
        .map(|xl| {
            write_language(data, &labels, xl, &judgments, &sources)
                .with_context(|| format!("writing {}", dataset_name(xl.lang)))
        })
        .collect::<Result<Vec<_>>>()?;
    let union = if union {
        let everyone: Vec<&XlPairs> = all.iter().collect();
        let u = lexclipr::union(&chosen, &everyone);
        Some(
            write_union(data, &chosen, &u, &judgments, &sources)
                .with_context(|| format!("writing {UNION_DATASET}"))?,
        )
    } else {
        None
    };
    Ok((imports, union))
}

/// The union dataset's name.
pub const UNION_DATASET: &str = lexbench_leaderboard::crosslingual::UNION_DATASET;

/// What [`UNION_DATASET`] holds, written into it as [`REPORT_FILE`].
#[derive(Debug, Clone, Serialize)]
pub struct UnionReport {
    /// [`UNION_DATASET`].
    pub dataset: String,
    /// The languages whose datasets it joins.
    pub languages: Vec<Language>,
    /// Topics per split: the languages', kept, left out by reason.
    pub topics: BTreeMap<String, lexclipr::UnionCounts>,
    /// Kept topics per language and split.
    pub per_language: BTreeMap<String, BTreeMap<String, usize>>,
    /// Every topic left out: `LANG SPLIT TOPIC: why`.
    pub left_out: Vec<String>,
}

/// The union written.
#[derive(Debug)]
pub struct UnionImport {
    /// The dataset written.
    pub built: Built<Written>,
    /// Its report.
    pub report: UnionReport,
}

fn write_union(
    data: &DataDir,
    langs: &[&XlPairs],
    u: &lexclipr::XlUnion,
    judgments: &BTreeMap<ItemId, Judgment>,
    sources: &str,
) -> Result<UnionImport> {
    let report = UnionReport {
        dataset: UNION_DATASET.to_owned(),
        languages: langs.iter().map(|x| x.lang).collect(),
        topics: u.counts.clone(),
        per_language: u.per_language.clone(),
        left_out: u.left_out.clone(),
    };
    let codes: Vec<&str> = report.languages.iter().map(|l| l.code()).collect();
    let mut notes = vec![
        format!(
            "The union of LexCLiPR's datasets ecthr-xl-<code> for {}: every language's topics in its \
             own split, the corpus the English judgments' paragraphs, for training one model on all \
             languages at once (evaluate it on each language's own test split). The queries are in \
             several languages: the manifest declares none, so BM25 (training negatives) reads them \
             with the English chain.",
            codes.join(", ")
        ),
        "LexCLiPR splits each language's guides on its own: the same citation (guide, judgment, \
         paragraph) can be a training row in one language and a test row in another. A train topic \
         citing a paragraph that a val or test topic of any language (all seven, its own included) \
         cites under the same guide is left out, and a val topic citing one a test topic cites \
         (cited_in_an_evaluation_split); so is a topic whose heading path and judgment an earlier \
         language has (same_topic_in_another_language)."
            .to_owned(),
        "Topics per split (the languages' / kept / left out by reason):".to_owned(),
    ];
    for (split, c) in &u.counts {
        notes.push(format!(
            "{split}: {} / {} / {}",
            c.topics,
            c.kept,
            lexclipr::UNION_LEFT_OUT_REASONS
                .iter()
                .map(|r| format!("{r} {}", c.left_out.get(*r).copied().unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let input = BuildInput {
        name: UNION_DATASET,
        pairs: &u.pairs,
        assignment: &u.assignment,
        judgments,
        config: None,
        assembly: None,
        sources,
        plots: false,
        notes: &notes,
    };
    let dir = data.dataset(UNION_DATASET)?.0;
    let written = lexbench_core::io::write_dir_atomic(&dir, |tmp| -> Result<Written> {
        let mut written = write_dataset(tmp, &input)?;
        lexbench_core::io::write_json_pretty(&tmp.join(REPORT_FILE), &report)?;
        let m = &written.manifest;
        written.manifest =
            DatasetManifest::write_with_languages(tmp, &m.name, &m.built_by, None, Some(Language::English))?;
        Ok(written)
    })?;
    Ok(UnionImport {
        built: Built { written, dir },
        report,
    })
}

/// `judgments.jsonl` read as `import release --texts` reads a segmented corpus; a judgment given
/// twice keeps its first text.
fn read_judgments(path: &Path) -> Result<BTreeMap<ItemId, Judgment>> {
    use lexbench_parsers::judgment::segmented;
    let bytes = segmented::read_file(path)?;
    let mut out = BTreeMap::new();
    for e in segmented::parse(&bytes, &path.display().to_string())? {
        if let Some(item) = e.judgment.item.clone()
            && !e.judgment.paragraphs.is_empty()
        {
            out.entry(item).or_insert(e.judgment);
        }
    }
    Ok(out)
}

fn write_language(
    data: &DataDir,
    labels: &Labels,
    xl: &XlPairs,
    judgments: &BTreeMap<ItemId, Judgment>,
    sources: &str,
) -> Result<XlImport> {
    let name = dataset_name(xl.lang);
    let mut topics: BTreeMap<String, usize> = xl
        .assignment
        .iter()
        .map(|(s, idx)| (s.clone(), idx.len()))
        .collect();
    topics.insert(TRAIN_ALL.to_owned(), xl.train_all.len());
    let report = XlReport {
        dataset: name.clone(),
        query_language: xl.lang,
        corpus_language: Language::English,
        bm25_query_analyser: query_analyser(xl.lang).to_owned(),
        rows: xl.counts.clone(),
        topics,
        english_links: xl.english_topic.len(),
        ambiguous_links: xl.ambiguous_links,
        left_out: xl.left_out.clone(),
    };
    let notes = card_notes(labels, xl, &report);
    let input = BuildInput {
        name: &name,
        pairs: &xl.pairs,
        assignment: &xl.assignment,
        judgments,
        config: None,
        assembly: None,
        sources,
        plots: false,
        notes: &notes,
    };
    let dir = data.dataset(&name)?.0;
    let written = lexbench_core::io::write_dir_atomic(&dir, |tmp| -> Result<Written> {
        let mut written = write_dataset(tmp, &input)?;
        // LexCLiPR's train_all, as published: its topics are topics of the partition.
        let mut qrels = Qrels::default();
        let by_topic: BTreeMap<TopicId, &ItemId> = xl.pairs.iter().map(|p| (p.topic(), &p.item)).collect();
        for (topic, relevant) in &xl.train_all {
            let item = by_topic[topic];
            for &n in relevant {
                qrels.insert(topic.clone(), ParagraphId::new(item.clone(), n).doc_id(), 1);
            }
        }
        qrels.write(&tmp.join("qrels").join(format!("{TRAIN_ALL}.tsv")))?;
        lexbench_core::io::write_json_pretty(
            &tmp.join("splits").join(format!("{TRAIN_ALL}.json")),
            &Split {
                dataset: name.clone(),
                name: TRAIN_ALL.to_owned(),
                topics: xl.train_all.keys().cloned().collect(),
            },
        )?;
        let links: Vec<Link<'_>> = xl
            .english_topic
            .iter()
            .map(|(topic, english_topic)| Link { topic, english_topic })
            .collect();
        lexbench_core::io::write_jsonl(&tmp.join(LINKS_FILE), &links)?;
        lexbench_core::io::write_json_pretty(&tmp.join(REPORT_FILE), &report)?;
        let m = &written.manifest;
        written.manifest = DatasetManifest::write_with_languages(
            tmp,
            &m.name,
            &m.built_by,
            Some(xl.lang),
            Some(Language::English),
        )?;
        Ok(written)
    })?;
    Ok(XlImport {
        built: Built { written, dir },
        report,
    })
}

/// The card's lines: what the dataset is, LexCLiPR's splits, the analyser, the rows per split.
fn card_notes(labels: &Labels, xl: &XlPairs, report: &XlReport) -> Vec<String> {
    let lang = xl.lang;
    let mut notes = vec![
        format!(
            "Cross-lingual: queries are LexCLiPR's {} guide heading paths (headings joined by \" . \"), \
             the corpus the English judgments' paragraphs. Query language {} (manifest `language`), \
             corpus English (`corpus_language`).",
            lang.name(),
            lang.code()
        ),
        format!(
            "BM25 analyses queries with the {} analyser and paragraphs with the English one.",
            query_analyser(lang)
        ),
        "LexCLiPR's splits kept as published: train, val and test are disjoint (no heading path and \
         judgment in two of them) and certified here; train_all (the guides published whole, as \
         `<guide>_relevant.json`) repeats rows of train, val and test — every train_all topic is a \
         topic of one of them — so it is written beside the partition (qrels/train_all.tsv, \
         splits/train_all.json), not certified, and training on it trains on evaluation pairs."
            .to_owned(),
    ];
    let in_eval = xl
        .train_all
        .keys()
        .filter(|t| {
            ["val", "test"].iter().any(|s| {
                xl.assignment
                    .get(*s)
                    .is_some_and(|idx| idx.iter().any(|&i| &xl.pairs[i].topic() == *t))
            })
        })
        .count();
    notes.push(format!(
        "train_all: {} topics, {in_eval} of them topics of val or test.",
        xl.train_all.len()
    ));
    let rows_of_lang = labels.rows.iter().filter(|r| r.lang == lang).count();
    if labels.empty_headings > 0 {
        notes.push(format!(
            "{} rows of labels.jsonl (all languages) have an empty heading in their path, dropped \
             from it.",
            labels.empty_headings
        ));
    }
    notes.push(format!(
        "Rows of labels.jsonl in {}: {rows_of_lang}; per split (rows / kept / merged into an earlier \
         row of the same topic / left out by reason):",
        lang.name()
    ));
    for (split, c) in &report.rows {
        notes.push(format!(
            "{split}: {} / {} / {} / {}",
            c.rows,
            c.kept,
            c.merged,
            LEFT_OUT_REASONS
                .iter()
                .map(|r| format!("{r} {}", c.left_out.get(*r).copied().unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if lang != Language::English {
        notes.push(format!(
            "{} topics link to the English topic of the same guide, judgment and paragraphs \
             ({LINKS_FILE}); {} match several English heading paths and are not linked.",
            report.english_links, report.ambiguous_links
        ));
    }
    notes.push(format!(
        "Rows left out ({}), each in {REPORT_FILE}.",
        report.left_out.len()
    ));
    notes
}
