//! The open-corpus setting: the guides' headings searched across the whole case law.
//!
//! The paper's task ranks the paragraphs of one judgment known to be cited; this setting starts a
//! step earlier, as a lawyer or a guide's author does ("where has the Court said this?"). It is
//! derived from any ECtHR dataset with judgment texts ([`derive()`]):
//!
//! - **corpus**: the source's `corpus.jsonl`, byte for byte: every paragraph of every judgment;
//! - **topics**: one per guide heading (the source's query id is the topic id), ranking the whole
//!   corpus; no pools;
//! - **relevant**: every paragraph the guides cite under that heading, in any judgment of the corpus
//!   (the union of the heading's per-judgment qrels);
//! - **splits**: a heading belongs to one split, or the setting leaks. The source's unseen-query and
//!   unseen-guide headings already form whole splits and keep their names. The seen setting's
//!   train, validation and test share their headings by design (*seen query*: a test query has
//!   training pairs with other judgments): in an open corpus, where every judgment's paragraphs
//!   answer the heading, its test topics would ask for paragraphs the training split labels
//!   relevant under the same heading. So the seen setting's headings form one split, `train`,
//!   relevant as everywhere else; a model trained on the per-judgment setting has seen them, and
//!   is read on `unseen_query` and `unseen_guide` only (the card says so).
//!
//! The certificate (`certificate.json`) proves what the per-judgment setting's certificate proves, at
//! the heading level, and that the qrels are exactly the source's labels in the corpus.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use lexbench_core::dataset::{
    Dataset, DatasetDir, DatasetManifest, DatasetTopic, DerivedFrom, Language, TASK_FILE, TaskFile,
    sha256_file,
};
use lexbench_core::io::write_atomic;
use lexbench_core::{DocId, GuideId, ParagraphId, Qrels, QueryId, Split, Task, TopicId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::pairs::Pair;
use crate::settings::{Check, check, text_crossings};
use crate::write::Summary;

/// The open setting's splits, in the order they are reported.
pub const OPEN_SPLITS: [&str; 3] = ["train", "unseen_query", "unseen_guide"];

/// The open split a source split's headings go to.
fn open_split(source_split: &str) -> Option<&'static str> {
    match source_split {
        "train" | "val" | "test" => Some("train"),
        "unseen_query" => Some("unseen_query"),
        "unseen_guide" => Some("unseen_guide"),
        _ => None,
    }
}

/// One heading of the open setting.
#[derive(Debug, Clone)]
struct Heading {
    text: String,
    guide: GuideId,
    /// The source splits its pairs are in.
    source_splits: BTreeSet<String>,
    /// The relevant paragraphs (in the corpus).
    relevant: BTreeSet<DocId>,
    /// The judgments cited under it (with at least one paragraph in the corpus).
    judgments: BTreeSet<String>,
}

/// The open setting's certificate (`certificate.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenCertificate {
    /// Whether every check passed.
    pub passed: bool,
    /// The source dataset, by name and identity hash.
    pub derived_from: DerivedFrom,
    /// The checks.
    pub checks: Vec<Check>,
    /// Per open split: its topics, the source splits they come from, the source's pairs behind them.
    pub sizes: BTreeMap<String, BTreeMap<String, usize>>,
    /// Source labels left out because their judgment has no text in the corpus (a relevant paragraph
    /// no system can retrieve); 0 for a source built with texts.
    pub labels_without_text: usize,
    /// sha256 of every split and qrels file, filled in when the dataset is written.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// `stats.json` of the open setting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenStats {
    /// Paragraphs in the corpus.
    pub corpus_paragraphs: usize,
    /// Judgments in the corpus.
    pub corpus_judgments: usize,
    /// Per split: topics, relevant paragraphs, judgments cited, guides.
    pub splits: BTreeMap<String, BTreeMap<String, usize>>,
    /// Relevant paragraphs per topic.
    pub relevant_per_topic: Option<Summary>,
    /// Judgments cited per topic.
    pub judgments_per_topic: Option<Summary>,
    /// Query length in tokens (whitespace-separated words).
    pub query_tokens: Option<Summary>,
}

/// What [`derive()`] wrote.
#[derive(Debug, Clone)]
pub struct OpenWritten {
    /// The manifest (its `dataset_hash()` is the dataset's identity).
    pub manifest: DatasetManifest,
    /// The certificate.
    pub certificate: OpenCertificate,
    /// The statistics.
    pub stats: OpenStats,
}

#[derive(Deserialize)]
struct DocItem {
    doc: DocId,
    #[serde(default)]
    item: Option<String>,
}

/// Derives the open-corpus setting `name` from the ECtHR dataset in `source` and writes it to `dir`
/// (atomically: a failed derivation leaves a previous version untouched). The source must have
/// judgment texts (`corpus.jsonl`); a certificate that fails is [`Error::Leak`] and writes nothing.
pub fn derive(source: &DatasetDir, name: &str, dir: &Path) -> Result<OpenWritten> {
    let ds = Dataset::open(source.clone())?;
    let source_name = ds.manifest().name.clone();
    if ds.task()? != Task::Pooled {
        return Err(Error::Input {
            path: source.0.join("manifest.json"),
            line: 0,
            message: format!(
                "dataset {source_name} is not a per-judgment ECtHR dataset (its task is {}); the open \
                 setting is derived from one",
                ds.task()?
            ),
        });
    }
    if ds.manifest().sha256_of("corpus.jsonl").is_none() {
        return Err(Error::Empty(format!(
            "dataset {source_name} has no judgment texts (corpus.jsonl): the open setting ranks them; \
             import the release with --texts, or build from parsed judgments"
        )));
    }
    let corpus_bytes = ds.verified_bytes("corpus.jsonl")?;
    let docs: Vec<DocItem> = lexbench_core::io::read_jsonl_bytes(&corpus_bytes, &source.corpus())?;
    let in_corpus: BTreeSet<&DocId> = docs.iter().map(|d| &d.doc).collect();
    let corpus_judgments = docs
        .iter()
        .filter_map(|d| d.item.as_deref())
        .collect::<BTreeSet<_>>()
        .len();

    let (pairs, assignment) = crate::reload::load_pairs(source)?;
    let mut headings: BTreeMap<QueryId, Heading> = BTreeMap::new();
    let mut labels_without_text = 0usize;
    let mut unknown_splits = Vec::new();
    let mut pairs_per_split: BTreeMap<&str, usize> = BTreeMap::new();
    for (split, members) in &assignment {
        let Some(open) = open_split(split) else {
            unknown_splits.push(split.clone());
            continue;
        };
        for &i in members {
            let p: &Pair = &pairs[i];
            *pairs_per_split.entry(open).or_default() += 1;
            let h = headings.entry(p.query.clone()).or_insert_with(|| Heading {
                text: p.text.clone(),
                guide: p.guide.clone(),
                source_splits: BTreeSet::new(),
                relevant: BTreeSet::new(),
                judgments: BTreeSet::new(),
            });
            h.source_splits.insert(split.clone());
            for &num in &p.relevant {
                let doc = ParagraphId::new(p.item.clone(), num).doc_id();
                if in_corpus.contains(&doc) {
                    h.relevant.insert(doc);
                    h.judgments.insert(p.item.to_string());
                } else {
                    labels_without_text += 1;
                }
            }
        }
    }
    if !unknown_splits.is_empty() {
        return Err(Error::Input {
            path: source.0.join("splits"),
            line: 0,
            message: format!(
                "split {} is not one of the ECtHR settings ({}): the open setting cannot place its headings",
                unknown_splits.join(", "),
                crate::settings::SPLITS.join(", ")
            ),
        });
    }

    // Each heading's open split; a heading whose pairs fall in two open splits is a leak.
    let mut in_split: BTreeMap<&'static str, Vec<&QueryId>> = BTreeMap::new();
    let mut crossing = Vec::new();
    for (q, h) in &headings {
        let opens: BTreeSet<&'static str> = h.source_splits.iter().filter_map(|s| open_split(s)).collect();
        if opens.len() > 1 {
            crossing.push(format!(
                "heading {q} has pairs in {}",
                h.source_splits.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if let Some(first) = opens.into_iter().next() {
            in_split.entry(first).or_default().push(q);
        }
    }
    let certificate = Placed {
        headings: &headings,
        in_split: &in_split,
        pairs: &pairs,
        in_corpus: &in_corpus,
        pairs_per_split: &pairs_per_split,
    }
    .certify(
        crossing,
        DerivedFrom {
            name: source_name.clone(),
            hash: ds.hash(),
        },
        labels_without_text,
    );
    if !certificate.passed {
        let failed = certificate
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| format!("{}: {}", c.name, c.detail.join(", ")))
            .collect();
        return Err(Error::Leak(failed));
    }
    // Headings whose every label lies outside the corpus have nothing to find: left out, counted.
    let kept = |q: &QueryId| !headings[q].relevant.is_empty();

    let stats = OpenStats {
        corpus_paragraphs: docs.len(),
        corpus_judgments,
        splits: OPEN_SPLITS
            .iter()
            .map(|s| {
                let qs: Vec<&QueryId> = in_split
                    .get(s)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|q| kept(q))
                    .collect();
                let judgments: BTreeSet<&String> = qs.iter().flat_map(|q| &headings[*q].judgments).collect();
                let guides: BTreeSet<&GuideId> = qs.iter().map(|q| &headings[*q].guide).collect();
                (
                    (*s).to_owned(),
                    BTreeMap::from([
                        ("topics".to_owned(), qs.len()),
                        (
                            "relevant".to_owned(),
                            qs.iter().map(|q| headings[*q].relevant.len()).sum(),
                        ),
                        ("judgments".to_owned(), judgments.len()),
                        ("guides".to_owned(), guides.len()),
                    ]),
                )
            })
            .collect(),
        relevant_per_topic: Summary::of(
            headings
                .values()
                .filter(|h| !h.relevant.is_empty())
                .map(|h| h.relevant.len() as f64)
                .collect(),
        ),
        judgments_per_topic: Summary::of(
            headings
                .values()
                .filter(|h| !h.relevant.is_empty())
                .map(|h| h.judgments.len() as f64)
                .collect(),
        ),
        query_tokens: Summary::of(
            headings
                .values()
                .filter(|h| !h.relevant.is_empty())
                .map(|h| h.text.split_whitespace().count() as f64)
                .collect(),
        ),
    };

    let mut certificate = certificate;
    let manifest = lexbench_core::io::write_dir_atomic(dir, |tmp| -> Result<DatasetManifest> {
        let topics: Vec<DatasetTopic> = headings
            .iter()
            .filter(|(q, _)| kept(q))
            .map(|(q, h)| DatasetTopic {
                topic: TopicId::query(q),
                query: q.clone(),
                text: h.text.clone(),
                item: None,
                guide: Some(h.guide.clone()),
            })
            .collect();
        lexbench_core::io::write_jsonl(&tmp.join("queries.jsonl"), &topics)?;
        write_atomic(&tmp.join("corpus.jsonl"), |w| w.write_all(&corpus_bytes))?;
        if ds.manifest().sha256_of("corpus.parquet").is_some() {
            let bytes = ds.verified_bytes("corpus.parquet")?;
            write_atomic(&tmp.join("corpus.parquet"), |w| w.write_all(&bytes))?;
        }
        for s in OPEN_SPLITS {
            let mut qrels = Qrels::default();
            let mut split_topics = Vec::new();
            for q in in_split.get(s).into_iter().flatten().filter(|q| kept(q)) {
                let topic = TopicId::query(q);
                for doc in &headings[*q].relevant {
                    qrels.insert(topic.clone(), doc.clone(), 1);
                }
                split_topics.push(topic);
            }
            split_topics.sort();
            let qrels_rel = format!("qrels/{s}.tsv");
            let split_rel = format!("splits/{s}.json");
            qrels.write(&tmp.join(&qrels_rel))?;
            lexbench_core::io::write_json_pretty(
                &tmp.join(&split_rel),
                &Split {
                    dataset: name.to_owned(),
                    name: s.to_owned(),
                    topics: split_topics,
                },
            )?;
            for rel in [qrels_rel, split_rel] {
                let sha = sha256_file(&tmp.join(&rel))?;
                certificate.files.insert(rel, sha);
            }
        }
        lexbench_core::io::write_json_pretty(
            &tmp.join(TASK_FILE),
            &TaskFile {
                task: Task::OpenCorpus,
                derived_from: Some(certificate.derived_from.clone()),
            },
        )?;
        lexbench_core::io::write_json_pretty(&tmp.join("certificate.json"), &certificate)?;
        lexbench_core::io::write_json_pretty(&tmp.join("stats.json"), &stats)?;
        let card = card(name, &stats, &certificate, headings.len() - topics.len());
        write_atomic(&tmp.join("card.md"), |w| w.write_all(card.as_bytes()))?;
        Ok(DatasetManifest::write_with_language(
            tmp,
            name,
            concat!("lexbench ", env!("CARGO_PKG_VERSION")),
            Some(Language::English),
        )?)
    })?;
    Ok(OpenWritten {
        manifest,
        certificate,
        stats,
    })
}

/// The headings placed in their open splits, with what the certificate checks them against.
struct Placed<'a> {
    headings: &'a BTreeMap<QueryId, Heading>,
    in_split: &'a BTreeMap<&'static str, Vec<&'a QueryId>>,
    /// The source's pairs, for the labels.
    pairs: &'a [Pair],
    in_corpus: &'a BTreeSet<&'a DocId>,
    /// The source's pairs behind each open split.
    pairs_per_split: &'a BTreeMap<&'a str, usize>,
}

impl Placed<'_> {
    /// The certificate; `crossing` lists the headings found in two open splits.
    fn certify(
        &self,
        crossing: Vec<String>,
        derived_from: DerivedFrom,
        labels_without_text: usize,
    ) -> OpenCertificate {
        let Placed {
            headings,
            in_split,
            pairs,
            in_corpus,
            pairs_per_split,
        } = *self;
        let of = |s: &str| in_split.get(s).map(Vec::as_slice).unwrap_or(&[]);
        let texts = |names: &[&str]| -> Vec<(&str, &QueryId)> {
            names
                .iter()
                .flat_map(|n| of(n).iter())
                .map(|q| (headings[*q].text.as_str(), *q))
                .collect()
        };
        let text_leaks = |from: &[&str], into: &str| -> Vec<String> {
            text_crossings(
                &texts(from),
                &texts(&[into]),
                &format!("{into} heading"),
                &from.join("/"),
            )
        };
        let held: BTreeSet<&GuideId> = of("unseen_guide").iter().map(|q| &headings[*q].guide).collect();
        let guide_leaks: Vec<String> = ["train", "unseen_query"]
            .iter()
            .flat_map(|s| of(s).iter().map(move |q| (s, q)))
            .filter(|(_, q)| held.contains(&headings[**q].guide))
            .map(|(s, q)| format!("{s} heading {q} is of held-out guide {}", headings[*q].guide))
            .collect();
        // Completeness, recomputed from the pairs: every label of the source in the corpus is a relevant
        // document of its heading's topic, and the topic has no other.
        let mut want: BTreeMap<&QueryId, BTreeSet<DocId>> = BTreeMap::new();
        for p in pairs {
            let e = want.entry(&p.query).or_default();
            for &num in &p.relevant {
                let doc = ParagraphId::new(p.item.clone(), num).doc_id();
                if in_corpus.contains(&doc) {
                    e.insert(doc);
                }
            }
        }
        let mut label_diffs = Vec::new();
        for (q, h) in headings {
            let w = want.get(q).cloned().unwrap_or_default();
            if w != h.relevant {
                label_diffs.push(format!(
                    "heading {q}: {} labels in the source, {} relevant here",
                    w.len(),
                    h.relevant.len()
                ));
            }
        }
        let outside: Vec<String> = headings
            .iter()
            .flat_map(|(q, h)| h.relevant.iter().map(move |d| (q, d)))
            .filter(|(_, d)| !in_corpus.contains(d))
            .map(|(q, d)| format!("heading {q}: {d} is not in the corpus"))
            .collect();
        let checks = vec![
            check("every heading is in exactly one split", crossing),
            check(
                "no unseen-query heading text occurs in train",
                text_leaks(&["train"], "unseen_query"),
            ),
            check(
                "no unseen-guide heading text occurs in any other split",
                text_leaks(&["train", "unseen_query"], "unseen_guide"),
            ),
            check("no held-out guide appears outside unseen_guide", guide_leaks),
            check(
                "each topic's relevant paragraphs are exactly the source's labels of its heading in the corpus",
                label_diffs,
            ),
            check("every relevant paragraph is in the corpus", outside),
        ];
        let sizes = OPEN_SPLITS
            .iter()
            .map(|s| {
                let from: BTreeSet<&String> =
                    of(s).iter().flat_map(|q| &headings[*q].source_splits).collect();
                (
                    (*s).to_owned(),
                    BTreeMap::from([
                        ("headings".to_owned(), of(s).len()),
                        ("source_pairs".to_owned(), *pairs_per_split.get(s).unwrap_or(&0)),
                        ("source_splits".to_owned(), from.len()),
                    ]),
                )
            })
            .collect();
        OpenCertificate {
            passed: checks.iter().all(|c| c.passed),
            derived_from,
            checks,
            sizes,
            labels_without_text,
            files: BTreeMap::new(),
        }
    }
}

fn card(name: &str, stats: &OpenStats, cert: &OpenCertificate, without_labels: usize) -> String {
    let mut s = format!("# Dataset card: {name}\n\n");
    s.push_str(&format!(
        "The open-corpus setting of ECtHR paragraph retrieval, derived by lexbench from `{}` (dataset \
         {}). Each topic is a case-law guide heading (title → … → heading); systems rank every paragraph \
         of every judgment in the corpus; the relevant paragraphs are all those the guides cite under \
         the heading, in any judgment. Measures: nDCG@10, R@100, R@1000, MAP, MRR@10.\n\n",
        cert.derived_from.name,
        &cert.derived_from.hash[..16.min(cert.derived_from.hash.len())]
    ));
    s.push_str(&format!(
        "Corpus: {} paragraphs of {} judgments (the source's `corpus.jsonl`, unchanged).\n\n",
        stats.corpus_paragraphs, stats.corpus_judgments
    ));
    s.push_str(
        "| split | topics | relevant paragraphs | judgments cited | guides |\n|---|---|---|---|---|\n",
    );
    for split in OPEN_SPLITS {
        if let Some(m) = stats.splits.get(split) {
            s.push_str(&format!(
                "| {split} | {} | {} | {} | {} |\n",
                m.get("topics").unwrap_or(&0),
                m.get("relevant").unwrap_or(&0),
                m.get("judgments").unwrap_or(&0),
                m.get("guides").unwrap_or(&0)
            ));
        }
    }
    if let (Some(r), Some(j)) = (&stats.relevant_per_topic, &stats.judgments_per_topic) {
        s.push_str(&format!(
            "\nRelevant paragraphs per topic: {:.0}–{:.0} (mean {:.2}); judgments cited per topic: {:.0}–{:.0} \
             (mean {:.2}).\n",
            r.min, r.max, r.mean, j.min, j.max, j.mean
        ));
    }
    s.push_str(
        "\nSplits: a heading is in one split. `unseen_query` and `unseen_guide` are the source's settings \
         of the same names. `train` holds the headings of the source's seen setting (its train, val and \
         test, which share headings by design): in an open corpus each of its topics asks for every \
         judgment's cited paragraphs, so a model trained on the per-judgment setting has seen these \
         headings and some of their relevant paragraphs. Read such a model on `unseen_query` and \
         `unseen_guide`; `train` scores zero-shot systems, and trains models for this setting.\n",
    );
    s.push_str(&format!(
        "\nCertificate: {} ({} checks).",
        if cert.passed { "passed" } else { "FAILED" },
        cert.checks.len()
    ));
    if cert.labels_without_text > 0 || without_labels > 0 {
        s.push_str(&format!(
            " Left out: {} source labels whose judgment has no text in the corpus, {} headings with none \
             left.",
            cert.labels_without_text, without_labels
        ));
    }
    s.push_str(
        "\n\nLicence: judgment and guide texts © Council of Europe / European Court of Human Rights; reuse \
         under the Court's terms. Labels derived by lexbench.\nFiles: queries.jsonl, corpus.jsonl, \
         corpus.parquet, qrels/<split>.tsv, splits/<split>.json, task.json (the task and the source), \
         stats.json, certificate.json, manifest.json (sha256 of every file).\n",
    );
    s
}
