//! LexCLiPR (a cross-lingual dataset built on the same release) as an input: guide heading paths in
//! seven languages paired with the English judgments' paragraphs they cite.
//!
//! `labels.jsonl`, one row per (language, split, guide file, heading path, judgment):
//! `{"lang", "split", "file", "query": [heading, …], "itemid", "link", "case_name",
//! "paragraph_numbers"}`. Each language becomes one dataset of the monolingual ECtHR layout
//! (`ecthr-xl-<code>`): a topic is a (heading path, judgment) pair, its pool the judgment's
//! paragraphs, its relevant paragraphs the row's numbers.
//!
//! LexCLiPR's splits, as the data shows them: `train`, `val` and `test` are disjoint (no (heading
//! path, judgment) pair in two of them); `train_all` is the labelled pairs of the guides published
//! as `<guide>_relevant.json` (whole guides), every one of which is also a row of `train`, `val` or
//! `test`. `train_all` is therefore not a fourth part of a partition but another view of the same
//! rows: it is kept as published (its own qrels and split file), outside the certified partition,
//! and training on it trains on evaluation pairs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lexbench_core::dataset::Language;
use lexbench_core::records::ReadKind;
use lexbench_core::{GuideId, ItemId, TopicId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::pairs::{Pair, QrelSource, query_id_for};
use crate::settings::Assignment;

/// LexCLiPR's splits that partition its rows, in the order they are read.
pub const PARTITION: [&str; 3] = ["train", "val", "test"];

/// LexCLiPR's whole-guide view, overlapping [`PARTITION`].
pub const TRAIN_ALL: &str = "train_all";

/// Why a row of `labels.jsonl` is not a label of its language's dataset.
pub const LEFT_OUT_REASONS: [&str; 4] = [
    "no_judgment",
    "missing_paragraph",
    "topic_in_two_splits",
    "train_all_only",
];

/// How a heading path becomes a query text: its headings joined by this.
pub const PATH_SEPARATOR: &str = " . ";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    lang: String,
    split: String,
    file: String,
    query: Vec<String>,
    itemid: String,
    #[allow(dead_code)]
    link: String,
    #[allow(dead_code)]
    case_name: String,
    paragraph_numbers: Vec<u32>,
}

/// One row of `labels.jsonl`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Its 1-based line.
    pub line: usize,
    /// The query language.
    pub lang: Language,
    /// `train`, `train_all`, `val` or `test`.
    pub split: String,
    /// The guide file it comes from (`Guide_Art_2_ENG_test.json`).
    pub file: String,
    /// The heading path.
    pub path: Vec<String>,
    /// The judgment.
    pub item: ItemId,
    /// The cited paragraphs (non-empty, none 0).
    pub paragraphs: BTreeSet<u32>,
}

impl Label {
    /// The query text: the heading path joined by [`PATH_SEPARATOR`].
    pub fn text(&self) -> String {
        self.path.join(PATH_SEPARATOR)
    }

    /// The topic: (query, judgment).
    pub fn topic(&self) -> TopicId {
        TopicId::pair(&query_id_for(&self.text()), &self.item)
    }

    /// The guide file's family, the same for every language and split of one guide
    /// ([`guide_family`]).
    pub fn family(&self) -> String {
        guide_family(&self.file)
    }
}

/// The guide a file name belongs to, language and split taken off, lower case, spaces as `_`:
/// `Guide_Art_1_Protocol 7_FRE_val.json` and `Guide_Art_1_Protocol_7_ENG_relevant.json` are both
/// `guide_art_1_protocol_7`.
pub fn guide_family(file: &str) -> String {
    let stem = file.strip_suffix(".json").unwrap_or(file);
    let mut parts: Vec<String> = stem
        .split(['_', ' ', '-', '.'])
        .filter(|p| !p.is_empty() && *p != "json")
        .map(str::to_ascii_lowercase)
        .collect();
    if parts
        .last()
        .is_some_and(|p| ["train", "val", "test", "relevant", "all"].contains(&p.as_str()))
    {
        parts.pop();
    }
    if parts.last().is_some_and(|p| LANGUAGE_TAGS.contains(&p.as_str())) {
        parts.pop();
    }
    parts.join("_")
}

/// The language tags the Court's guide file names end with.
const LANGUAGE_TAGS: [&str; 12] = [
    "eng", "fre", "fra", "ita", "rom", "ron", "rou", "rum", "rus", "tur", "ukr", "ukr2",
];

/// The guide id of a file: its name without the split, lower case, spaces as `_`
/// (`guide_art_1_protocol_7_fre`).
pub fn guide_id(file: &str) -> Result<GuideId> {
    let stem = file.strip_suffix(".json").unwrap_or(file);
    let stem = ["_train", "_val", "_test", "_relevant"]
        .iter()
        .find_map(|s| stem.strip_suffix(s))
        .unwrap_or(stem);
    // The Romanian and Ukrainian files keep the original's extension: `Guide_Art_10_RUM.json_test.json`.
    let stem = stem.strip_suffix(".json").unwrap_or(stem);
    let id: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    Ok(GuideId::new(id)?)
}

/// `labels.jsonl`, read and checked.
#[derive(Debug, Clone)]
pub struct Labels {
    /// The file read.
    pub path: PathBuf,
    /// Every row, in file order.
    pub rows: Vec<Label>,
    /// Rows whose heading path held an empty heading, dropped from the path.
    pub empty_headings: usize,
}

/// Reads `labels.jsonl`: each line a row; a line that is not one, an unknown language or split, a bad
/// itemid, a heading path with no heading or an empty paragraph list or a paragraph 0 is an error
/// naming the file and line. Empty headings in a path (nothing but white space and default-ignorable
/// code points, [`lexbench_core::text::is_default_ignorable`]) are dropped ([`Labels::empty_headings`]).
pub fn read_labels(path: &Path) -> Result<Labels> {
    let text = lexbench_core::text::read_text(path)?;
    let bad = |line: usize, message: String| Error::Input {
        path: path.to_owned(),
        line,
        message,
    };
    let mut rows = Vec::new();
    let mut empty_headings = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let row: Row = serde_json::from_str(line).map_err(|e| bad(n, e.to_string()))?;
        let lang =
            Language::parse(&row.lang).ok_or_else(|| bad(n, format!("unknown language {:?}", row.lang)))?;
        if !PARTITION.contains(&row.split.as_str()) && row.split != TRAIN_ALL {
            return Err(bad(
                n,
                format!(
                    "unknown split {:?} (LexCLiPR's are train, train_all, val, test)",
                    row.split
                ),
            ));
        }
        let item: ItemId = row.itemid.parse().map_err(|e| bad(n, format!("{e}")))?;
        // LexCLiPR's French, Italian and Romanian paths sometimes end in an empty heading: dropped.
        let mut path = row.query;
        let before = path.len();
        // A heading of nothing but spaces and default-ignorable code points (U+200B) shows nothing.
        path.retain(|h| !lexbench_core::text::without_ignorables(h).trim().is_empty());
        if path.len() < before {
            empty_headings += 1;
        }
        if path.is_empty() {
            return Err(bad(n, "the heading path is empty".into()));
        }
        if row.paragraph_numbers.is_empty() || row.paragraph_numbers.contains(&0) {
            return Err(bad(n, "paragraph list is empty or holds 0".into()));
        }
        rows.push(Label {
            line: n,
            lang,
            split: row.split,
            file: row.file,
            path,
            item,
            paragraphs: row.paragraph_numbers.into_iter().collect(),
        });
    }
    if rows.is_empty() {
        return Err(bad(0, "no rows".into()));
    }
    Ok(Labels {
        path: path.to_owned(),
        rows,
        empty_headings,
    })
}

/// What became of one language's rows, per split: rows read, kept as labels, merged into an
/// earlier row of the same split, (heading path, judgment), and left out by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RowCounts {
    /// Rows of the split.
    pub rows: usize,
    /// Rows that are a label of the dataset (merged ones included).
    pub kept: usize,
    /// Of the kept rows, those that repeat an earlier (heading path, judgment) of the split, whose
    /// paragraphs are added to it.
    pub merged: usize,
    /// Rows left out, by reason ([`LEFT_OUT_REASONS`]).
    pub left_out: BTreeMap<String, usize>,
}

/// One language as a dataset's pairs.
#[derive(Debug, Clone)]
pub struct XlPairs {
    /// The query language.
    pub lang: Language,
    /// The pairs of `train`, `val` and `test`.
    pub pairs: Vec<Pair>,
    /// Which of them is in which split.
    pub assignment: Assignment,
    /// `train_all` as published: its topics and each one's relevant paragraphs (every topic is one
    /// of [`XlPairs::pairs`]).
    pub train_all: BTreeMap<TopicId, BTreeSet<u32>>,
    /// Rows per split.
    pub counts: BTreeMap<String, RowCounts>,
    /// Rows left out: `labels.jsonl:LINE topic: why`.
    pub left_out: Vec<String>,
    /// Each non-English topic whose heading path maps to exactly one English topic: the same guide
    /// family, the same judgment, the same paragraphs ([`english_links`]).
    pub english_topic: BTreeMap<TopicId, TopicId>,
    /// Topics with more than one such English topic (no link recorded).
    pub ambiguous_links: usize,
}

/// One language's rows as pairs: rows whose judgment is not in `judgments` (judgment → its
/// paragraph numbers), or that cite a paragraph the judgment lacks, or whose (heading path,
/// judgment) is labelled in two of `train`, `val` and `test`, are left out and counted; a
/// `train_all` row whose (heading path, judgment) is no pair of `train`, `val` or `test` is left out
/// as `train_all_only` (LexCLiPR has none: see the module's note).
pub fn pairs_for(
    labels: &Labels,
    lang: Language,
    judgments: &BTreeMap<ItemId, BTreeSet<u32>>,
) -> Result<XlPairs> {
    let file = labels.path.file_name().map_or_else(
        || labels.path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut pairs: Vec<Pair> = Vec::new();
    let mut assignment: Assignment = BTreeMap::new();
    let mut index: BTreeMap<(String, TopicId), usize> = BTreeMap::new();
    let mut counts: BTreeMap<String, RowCounts> = BTreeMap::new();
    let mut left_out = Vec::new();
    let mut train_all_rows = Vec::new();
    let rows = labels.rows.iter().filter(|r| r.lang == lang);
    // A (heading path, judgment) labelled in two of train, val and test (LexCLiPR's Italian Article 9
    // guide repeats headings) is no topic of either: one topic can not be in two splits.
    let mut splits_of: BTreeMap<TopicId, BTreeSet<&str>> = BTreeMap::new();
    for r in rows.clone().filter(|r| r.split != TRAIN_ALL) {
        splits_of.entry(r.topic()).or_default().insert(r.split.as_str());
    }
    for row in rows {
        let c = counts.entry(row.split.clone()).or_default();
        c.rows += 1;
        let topic = row.topic();
        let reason = match judgments.get(&row.item) {
            None => Some((
                "no_judgment",
                format!("judgment {} is not in the judgments", row.item),
            )),
            Some(nums) => {
                let missing: Vec<String> = row
                    .paragraphs
                    .iter()
                    .filter(|n| !nums.contains(n))
                    .map(u32::to_string)
                    .collect();
                (!missing.is_empty()).then(|| {
                    (
                        "missing_paragraph",
                        format!(
                            "paragraph(s) {} not among the {} numbered paragraphs of {}",
                            missing.join(", "),
                            nums.len(),
                            row.item
                        ),
                    )
                })
            }
        };
        let reason = reason.or_else(|| {
            let s = splits_of
                .get(&topic)
                .filter(|s| s.len() > 1 && row.split != TRAIN_ALL)?;
            Some((
                "topic_in_two_splits",
                format!(
                    "the heading path and judgment are labelled in {}",
                    s.iter().copied().collect::<Vec<_>>().join(" and ")
                ),
            ))
        });
        if let Some((reason, why)) = reason {
            *c.left_out.entry(reason.to_owned()).or_default() += 1;
            left_out.push(format!("{file}:{} {topic}: {why}", row.line));
            continue;
        }
        if row.split == TRAIN_ALL {
            train_all_rows.push(row);
            continue;
        }
        c.kept += 1;
        let guide = guide_id(&row.file).map_err(|e| Error::Input {
            path: labels.path.clone(),
            line: row.line,
            message: e.to_string(),
        })?;
        let sources: Vec<QrelSource> = row
            .paragraphs
            .iter()
            .map(|&p| QrelSource {
                topic: topic.clone(),
                paragraph: p,
                guide: guide.clone(),
                path: row.path.clone(),
                raw: row.text(),
                span: None,
                how: None,
                read: ReadKind::Direct,
                item: row.item.clone(),
                judgment_sha256: None,
                guide_sha256: None,
                release_row: Some(format!("{file}:{}", row.line)),
            })
            .collect();
        let key = (row.split.clone(), topic);
        if let Some(&at) = index.get(&key) {
            c.merged += 1;
            pairs[at].relevant.extend(row.paragraphs.iter().copied());
            pairs[at].sources.extend(sources);
            continue;
        }
        index.insert(key, pairs.len());
        assignment.entry(row.split.clone()).or_default().push(pairs.len());
        let text = row.text();
        pairs.push(Pair {
            query: query_id_for(&text),
            text,
            guide,
            item: row.item.clone(),
            relevant: row.paragraphs.clone(),
            sources,
        });
    }
    let in_partition: BTreeSet<TopicId> = pairs.iter().map(Pair::topic).collect();
    let mut train_all: BTreeMap<TopicId, BTreeSet<u32>> = BTreeMap::new();
    for row in train_all_rows {
        let c = counts.entry(TRAIN_ALL.to_owned()).or_default();
        let topic = row.topic();
        if !in_partition.contains(&topic) {
            *c.left_out.entry("train_all_only".to_owned()).or_default() += 1;
            left_out.push(format!(
                "{file}:{} {topic}: a train_all row that is no pair of train, val or test",
                row.line
            ));
            continue;
        }
        c.kept += 1;
        let relevant = train_all.entry(topic).or_default();
        if !relevant.is_empty() {
            c.merged += 1;
        }
        relevant.extend(row.paragraphs.iter().copied());
    }
    let (english_topic, ambiguous_links) = english_links(labels, lang, &pairs);
    Ok(XlPairs {
        lang,
        pairs,
        assignment,
        train_all,
        counts,
        left_out,
        english_topic,
        ambiguous_links,
    })
}

/// Why a language's pair is not a pair of the union ([`union`]).
pub const UNION_LEFT_OUT_REASONS: [&str; 2] =
    ["cited_in_an_evaluation_split", "same_topic_in_another_language"];

/// Topics of the union per split: in the languages' datasets, kept, and left out by reason
/// ([`UNION_LEFT_OUT_REASONS`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnionCounts {
    /// The languages' topics of the split.
    pub topics: usize,
    /// Those that are topics of the union.
    pub kept: usize,
    /// Those left out, by reason.
    pub left_out: BTreeMap<String, usize>,
}

/// Every language's pairs as one dataset, to train one model on all languages at once.
#[derive(Debug, Clone)]
pub struct XlUnion {
    /// The languages' pairs kept, language by language in the order given.
    pub pairs: Vec<Pair>,
    /// Their splits: each pair in its language's split.
    pub assignment: Assignment,
    /// Per split.
    pub counts: BTreeMap<String, UnionCounts>,
    /// Kept topics per language and split.
    pub per_language: BTreeMap<String, BTreeMap<String, usize>>,
    /// Every topic left out: `LANG SPLIT TOPIC: why`.
    pub left_out: Vec<String>,
}

/// A cited paragraph as the languages share it: (guide family, judgment, paragraph). The same
/// guide's translations cite the same paragraphs under translated headings.
fn citations(p: &Pair) -> impl Iterator<Item = (String, &ItemId, u32)> + '_ {
    let family = guide_family(p.guide.as_str());
    p.relevant.iter().map(move |&n| (family.clone(), &p.item, n))
}

/// The union of `langs`' datasets (their `train`, `val` and `test` pairs, each in its own split),
/// with what would leak across languages left out. LexCLiPR splits each language's guides on its
/// own, so the same citation (guide, judgment, paragraph) can be a training row in one language and
/// a test row in another (in the fixture 403 of the 672 training topics of the seven languages cite
/// a paragraph some language evaluates under the same guide): a model trained on it would have
/// seen the test's answers under a translated heading. So a pair is left out of
///
/// - `train` when any of its citations is cited by a `val` or `test` pair of any of `all` (every
///   language of the labels, not only those in the union), and of `val` when one is cited by a
///   `test` pair (`cited_in_an_evaluation_split`);
/// - any split when an earlier language has the same topic (heading path and judgment:
///   `same_topic_in_another_language`).
///
/// `test` is the languages' test pairs, whole.
pub fn union(langs: &[&XlPairs], all: &[&XlPairs]) -> XlUnion {
    let cited_in = |split: &str| -> BTreeSet<(String, &ItemId, u32)> {
        all.iter()
            .flat_map(|x| {
                x.assignment
                    .get(split)
                    .into_iter()
                    .flatten()
                    .flat_map(|&i| citations(&x.pairs[i]))
            })
            .collect()
    };
    let test = cited_in("test");
    let mut evaluated = cited_in("val");
    evaluated.extend(test.iter().cloned());
    let mut out = XlUnion {
        pairs: Vec::new(),
        assignment: Assignment::new(),
        counts: BTreeMap::new(),
        per_language: BTreeMap::new(),
        left_out: Vec::new(),
    };
    let mut topics: BTreeMap<TopicId, Language> = BTreeMap::new();
    for x in langs {
        for split in PARTITION {
            for &i in x.assignment.get(split).into_iter().flatten() {
                let p = &x.pairs[i];
                let c = out.counts.entry(split.to_owned()).or_default();
                c.topics += 1;
                let leaks = match split {
                    "train" => Some(&evaluated),
                    "val" => Some(&test),
                    _ => None,
                };
                let reason = if leaks.is_some_and(|e| citations(p).any(|k| e.contains(&k))) {
                    Some((
                        "cited_in_an_evaluation_split",
                        "a paragraph it cites is cited under the same guide by an evaluation split"
                            .to_owned(),
                    ))
                } else {
                    topics.get(&p.topic()).map(|l| {
                        (
                            "same_topic_in_another_language",
                            format!("the same heading path and judgment in {}", l.code()),
                        )
                    })
                };
                if let Some((reason, why)) = reason {
                    *c.left_out.entry(reason.to_owned()).or_default() += 1;
                    out.left_out
                        .push(format!("{} {split} {}: {why}", x.lang.code(), p.topic()));
                    continue;
                }
                c.kept += 1;
                topics.insert(p.topic(), x.lang);
                *out.per_language
                    .entry(x.lang.code().to_owned())
                    .or_default()
                    .entry(split.to_owned())
                    .or_default() += 1;
                out.assignment
                    .entry(split.to_owned())
                    .or_default()
                    .push(out.pairs.len());
                out.pairs.push(p.clone());
            }
        }
    }
    out
}

/// The English topic each of `pairs` (in language `lang`) is the translation of: the English rows
/// of the same guide family ([`guide_family`]) and judgment citing the same paragraphs; recorded
/// when exactly one English heading path matches (English pairs link to themselves: none is
/// recorded). Returns the links and how many pairs had more than one candidate.
pub fn english_links(labels: &Labels, lang: Language, pairs: &[Pair]) -> (BTreeMap<TopicId, TopicId>, usize) {
    let mut links = BTreeMap::new();
    if lang == Language::English {
        return (links, 0);
    }
    let mut english: BTreeMap<(String, &ItemId, &BTreeSet<u32>), BTreeSet<TopicId>> = BTreeMap::new();
    for r in labels.rows.iter().filter(|r| r.lang == Language::English) {
        english
            .entry((r.family(), &r.item, &r.paragraphs))
            .or_default()
            .insert(r.topic());
    }
    let family_of: BTreeMap<TopicId, String> = labels
        .rows
        .iter()
        .filter(|r| r.lang == lang)
        .map(|r| (r.topic(), r.family()))
        .collect();
    let mut ambiguous = 0;
    for p in pairs {
        let topic = p.topic();
        let Some(family) = family_of.get(&topic) else {
            continue;
        };
        match english.get(&(family.clone(), &p.item, &p.relevant)) {
            Some(t) if t.len() == 1 => {
                links.insert(topic, t.first().cloned().unwrap_or_else(|| p.topic()));
            }
            Some(_) => ambiguous += 1,
            None => {}
        }
    }
    (links, ambiguous)
}

#[cfg(test)]
mod tests {
    //! Properties: guide files of one guide in two languages and splits share a family; a bad row is
    //! an error naming its line; rows are kept, merged or left out by reason, and counted; train_all
    //! labels topics of the partition; a French path maps to the English one of its family,
    //! judgment and paragraphs.
    use super::*;

    fn row(lang: &str, split: &str, file: &str, path: &[&str], item: &str, paras: &[u32]) -> String {
        serde_json::json!({"lang": lang, "split": split, "file": file, "query": path, "itemid": item,
            "link": "", "case_name": "X", "paragraph_numbers": paras})
        .to_string()
    }

    fn labels(lines: &[String]) -> Result<Labels> {
        let dir = lexbench_core::testing::scratch_root().join(format!(
            "lexbench-lexclipr-{}-{}",
            std::process::id(),
            lines.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("labels.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        read_labels(&path)
    }

    #[test]
    fn families_and_guide_ids() {
        assert_eq!(
            guide_family("Guide_Art_1_Protocol 7_FRE_val.json"),
            "guide_art_1_protocol_7"
        );
        assert_eq!(
            guide_family("Guide_Art_1_Protocol_7_ENG_relevant.json"),
            "guide_art_1_protocol_7"
        );
        assert_eq!(
            guide_family("Admissibility_guide_FRA_test.json"),
            "admissibility_guide"
        );
        assert_eq!(
            guide_id("Guide_Art_1_Protocol 7_FRE_val.json").unwrap().as_str(),
            "guide_art_1_protocol_7_fre"
        );
        // The Romanian and Ukrainian file names keep the original's `.json`.
        assert_eq!(guide_family("Guide_Art_10_RUM.json_test.json"), "guide_art_10");
        assert_eq!(guide_family("Guide_Art_12_RUM.json"), "guide_art_12");
        assert_eq!(
            guide_family("Admissibility_guide_RON.json_val.json"),
            "admissibility_guide"
        );
        assert_eq!(
            guide_id("Guide_Art_10_RUM.json_test.json").unwrap().as_str(),
            "guide_art_10_rum"
        );
    }

    #[test]
    fn bad_rows_name_their_line() {
        let good = row("french", "test", "G_FRE_test.json", &["A", "B"], "001-1", &[1]);
        for (bad, what) in [
            (
                row("german", "test", "G.json", &["A"], "001-1", &[1]),
                "unknown language",
            ),
            (
                row("french", "dev", "G.json", &["A"], "001-1", &[1]),
                "unknown split",
            ),
            (
                row("french", "test", "G.json", &[], "001-1", &[1]),
                "heading path",
            ),
            (
                row("french", "test", "G.json", &[" ", ""], "001-1", &[1]),
                "heading path",
            ),
            (row("french", "test", "G.json", &["A"], "001-1", &[0]), "holds 0"),
            ("{\"lang\": 1}".to_owned(), "invalid type"),
        ] {
            let err = labels(&[good.clone(), bad]).unwrap_err().to_string();
            assert!(
                err.contains("labels.jsonl") && err.contains(":2") && err.contains(what),
                "{err}"
            );
        }
    }

    #[test]
    fn rows_kept_merged_left_out_and_linked() {
        let l = labels(&[
            row(
                "english",
                "test",
                "G_ENG_test.json",
                &["G", "Right"],
                "001-1",
                &[2, 3],
            ),
            row(
                "english",
                "train",
                "G_ENG_train.json",
                &["G", "Other"],
                "001-2",
                &[1],
            ),
            row(
                "french",
                "test",
                "G_FRE_test.json",
                &["G", "Droit"],
                "001-1",
                &[2, 3],
            ),
            row(
                "french",
                "test",
                "G_FRE_test.json",
                // Issue 68, item 13: a heading of only a zero-width space is as empty as "".
                &["G", "Droit", " \u{200b} "],
                "001-1",
                &[3],
            ),
            row(
                "french",
                "test",
                "G_FRE_test.json",
                &["G", "Droit"],
                "001-9",
                &[1],
            ),
            row("french", "val", "G_FRE_val.json", &["G", "Autre"], "001-2", &[7]),
            row(
                "french",
                "train",
                "G_FRE_train.json",
                &["G", "Deux"],
                "001-1",
                &[1],
            ),
            row("french", "val", "G_FRE_val.json", &["G", "Deux"], "001-1", &[2]),
            row(
                "french",
                "train_all",
                "G_FRE_relevant.json",
                &["G", "Droit"],
                "001-1",
                &[2, 3],
            ),
            row(
                "french",
                "train_all",
                "G_FRE_relevant.json",
                &["G", "Seul"],
                "001-2",
                &[1],
            ),
        ])
        .unwrap();
        // The empty heading is dropped: the row merges with the one before it.
        assert_eq!(l.empty_headings, 1);
        let judgments: BTreeMap<ItemId, BTreeSet<u32>> = [
            ("001-1".parse().unwrap(), BTreeSet::from([1, 2, 3])),
            ("001-2".parse().unwrap(), BTreeSet::from([1])),
        ]
        .into();
        let fr = pairs_for(&l, Language::French, &judgments).unwrap();
        assert_eq!(fr.pairs.len(), 1);
        assert_eq!(fr.pairs[0].relevant, BTreeSet::from([2, 3]));
        let test = &fr.counts["test"];
        assert_eq!((test.rows, test.kept, test.merged), (3, 2, 1));
        assert_eq!(test.left_out, BTreeMap::from([("no_judgment".to_owned(), 1)]));
        assert_eq!(
            fr.counts["val"].left_out,
            BTreeMap::from([
                ("missing_paragraph".to_owned(), 1),
                ("topic_in_two_splits".to_owned(), 1)
            ])
        );
        let all = &fr.counts[TRAIN_ALL];
        assert_eq!((all.rows, all.kept), (2, 1));
        assert_eq!(all.left_out, BTreeMap::from([("train_all_only".to_owned(), 1)]));
        assert_eq!(
            fr.train_all.keys().collect::<Vec<_>>(),
            vec![&fr.pairs[0].topic()]
        );
        // Every row is kept or left out for a reason.
        for c in fr.counts.values() {
            assert_eq!(c.rows, c.kept + c.left_out.values().sum::<usize>());
        }
        assert_eq!(
            fr.counts["train"].left_out,
            BTreeMap::from([("topic_in_two_splits".to_owned(), 1)])
        );
        assert_eq!(fr.left_out.len(), 5);
        assert!(fr.left_out[0].starts_with("labels.jsonl:5 "), "{:?}", fr.left_out);
        let en = pairs_for(&l, Language::English, &judgments).unwrap();
        assert_eq!(
            fr.english_topic.get(&fr.pairs[0].topic()),
            Some(&en.pairs[en.assignment["test"][0]].topic())
        );
        assert!(en.english_topic.is_empty());
    }

    #[test]
    fn the_union_leaves_out_what_another_language_evaluates() {
        // English: a test topic citing 001-1 §2 (guide G), a training topic citing 001-9 §1.
        // French: a training topic citing 001-1 §2 under G (English tests it: left out), one citing
        // 001-1 §5 under G (kept), one citing 001-1 §2 under another guide H (kept: not the same
        // guide), a val topic citing 001-1 §2 under G (English tests it: left out), a test topic.
        // Italian: a training topic with the same heading path and judgment as French's kept one
        // (left out), and a val topic citing 001-9 §7 that only Romanian, which the union does not
        // join, tests: left out all the same.
        let l = labels(&[
            row(
                "english",
                "test",
                "G_ENG_test.json",
                &["G", "Right"],
                "001-1",
                &[2],
            ),
            row(
                "english",
                "train",
                "G_ENG_train.json",
                &["G", "Other"],
                "001-9",
                &[1],
            ),
            row(
                "french",
                "train",
                "G_FRE_train.json",
                &["G", "Droit"],
                "001-1",
                &[2],
            ),
            row(
                "french",
                "train",
                "G_FRE_train.json",
                &["G", "Autre"],
                "001-1",
                &[5],
            ),
            row(
                "french",
                "train",
                "H_FRE_train.json",
                &["H", "Droit"],
                "001-1",
                &[2],
            ),
            row("french", "val", "G_FRE_val.json", &["G", "Val"], "001-1", &[2, 4]),
            row("french", "test", "G_FRE_test.json", &["G", "Test"], "001-9", &[3]),
            row(
                "italian",
                "train",
                "G_ITA_train.json",
                &["G", "Autre"],
                "001-1",
                &[5],
            ),
            row(
                "italian",
                "val",
                "G_ITA_val.json",
                &["G", "Valore"],
                "001-9",
                &[7],
            ),
            row(
                "romanian",
                "test",
                "G_RUM.json_test.json",
                &["G", "Test"],
                "001-9",
                &[7],
            ),
        ])
        .unwrap();
        let judgments: BTreeMap<ItemId, BTreeSet<u32>> = ["001-1", "001-9"]
            .iter()
            .map(|i| (ItemId::new(*i).unwrap(), (1..10).collect()))
            .collect();
        let all: Vec<XlPairs> = [
            Language::English,
            Language::French,
            Language::Italian,
            Language::Romanian,
        ]
        .iter()
        .map(|&lang| pairs_for(&l, lang, &judgments).unwrap())
        .collect();
        let everyone: Vec<&XlPairs> = all.iter().collect();
        let u = union(&everyone[..3], &everyone);
        let texts = |split: &str| -> Vec<String> {
            u.assignment[split]
                .iter()
                .map(|&i| u.pairs[i].text.clone())
                .collect()
        };
        assert_eq!(texts("train"), ["G . Other", "G . Autre", "H . Droit"]);
        assert!(!u.assignment.contains_key("val"), "{:?}", u.assignment);
        assert_eq!(texts("test"), ["G . Right", "G . Test"]);
        let n = |split: &str, why: &str| u.counts[split].left_out.get(why).copied().unwrap_or(0);
        assert_eq!(u.counts["train"].topics, 5);
        assert_eq!(u.counts["train"].kept, 3);
        assert_eq!(n("train", "cited_in_an_evaluation_split"), 1);
        assert_eq!(n("train", "same_topic_in_another_language"), 1);
        assert_eq!(n("val", "cited_in_an_evaluation_split"), 2);
        assert_eq!(u.counts["test"].kept, 2);
        assert_eq!(u.per_language["fr"]["train"], 2);
        assert_eq!(u.left_out.len(), 4, "{:?}", u.left_out);
        assert!(
            u.left_out
                .iter()
                .any(|w| w.starts_with("it train ") && w.contains("in fr")),
            "{:?}",
            u.left_out
        );
    }
}
