//! Writing a dataset directory (layout in `lexbench_core::dataset`), atomically and deterministically.
//!
//! The directory is written under a temporary name beside its destination and renamed into place only
//! when every file is written and the split certificate passed: a failed build leaves the previous
//! dataset untouched. Nothing in the files depends on the clock or the machine, so two builds from the
//! same inputs are byte-identical (a test checks it).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use lexbench_core::dataset::{CorpusDoc, DatasetManifest, DatasetTopic, Language, sha256_file};
use lexbench_core::io::{write_atomic, write_jsonl};
use lexbench_core::{DocId, GuideId, ItemId, Judgment, ParagraphId, Pool, Qrels, Split, TopicId};
use serde::Serialize;

use crate::assemble::AssemblyReport;
use crate::error::{Error, Result};
use crate::pairs::{Pair, QrelSource};
use crate::settings::{Assignment, Certificate, SPLITS, SeenQueries, SplitConfig, certify};

/// Everything a dataset is made from.
#[derive(Debug, Clone, Copy)]
pub struct BuildInput<'a> {
    /// The dataset's name (`ecthr`, `ecthr-release`).
    pub name: &'a str,
    /// Its pairs.
    pub pairs: &'a [Pair],
    /// Which split each pair is in.
    pub assignment: &'a Assignment,
    /// Parsed judgments: pools and corpus come from them (pairs whose judgment is absent get no pool).
    pub judgments: &'a BTreeMap<ItemId, Judgment>,
    /// The split configuration, if the splits were built (not imported).
    pub config: Option<&'a SplitConfig>,
    /// The assembly report, if the pairs were assembled from parsed documents.
    pub assembly: Option<&'a AssemblyReport>,
    /// One line for the card saying where the inputs came from.
    pub sources: &'a str,
    /// Also draw SVG histograms (`plots/`) for the card.
    pub plots: bool,
    /// Lines the card adds under the sources (what was left out of the inputs, and why).
    pub notes: &'a [String],
}

/// Five-number-ish summary of a distribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Count.
    pub n: usize,
    /// Minimum.
    pub min: f64,
    /// Median (lower middle for even n).
    pub median: f64,
    /// Mean.
    pub mean: f64,
    /// Maximum.
    pub max: f64,
}

impl Summary {
    /// Summarises `v` (`None` when empty).
    pub fn of(mut v: Vec<f64>) -> Option<Self> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(Self {
            n,
            min: v[0],
            median: v[(n - 1) / 2],
            mean: v.iter().sum::<f64>() / n as f64,
            max: v[n - 1],
        })
    }
}

/// `stats.json`: the paper's Figure 3 quantities. Tokens are whitespace-separated words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Pairs, queries, judgments, guides per split.
    pub splits: BTreeMap<String, BTreeMap<String, usize>>,
    /// Pairs per guide and split.
    pub pairs_per_guide: BTreeMap<GuideId, BTreeMap<String, usize>>,
    /// Paragraphs per judgment (judgments with a pool).
    pub paragraphs_per_judgment: Option<Summary>,
    /// Relevant paragraphs per pair.
    pub relevant_per_pair: Option<Summary>,
    /// Share of a pair's pool that is relevant, in percent (pairs with a pool).
    pub relevant_share_percent: Option<Summary>,
    /// Query length in tokens (distinct queries).
    pub query_tokens: Option<Summary>,
    /// Paragraph length in tokens (corpus).
    pub paragraph_tokens: Option<Summary>,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Written {
    /// The manifest (its `dataset_hash()` is the dataset's identity).
    pub manifest: DatasetManifest,
    /// The split certificate.
    pub certificate: Certificate,
    /// The statistics.
    pub stats: Stats,
}

fn tokens(s: &str) -> f64 {
    s.split_whitespace().count() as f64
}

fn of<'a>(a: &'a Assignment, name: &str) -> &'a [usize] {
    a.get(name).map(Vec::as_slice).unwrap_or(&[])
}

/// Computes the statistics.
pub fn stats(input: &BuildInput<'_>) -> Stats {
    let pairs = input.pairs;
    let cert = certify(pairs, input.assignment);
    let mut pairs_per_guide: BTreeMap<GuideId, BTreeMap<String, usize>> = BTreeMap::new();
    for s in SPLITS {
        for &i in of(input.assignment, s) {
            *pairs_per_guide
                .entry(pairs[i].guide.clone())
                .or_default()
                .entry(s.to_owned())
                .or_default() += 1;
        }
    }
    let items: BTreeSet<&ItemId> = pairs.iter().map(|p| &p.item).collect();
    let sizes: BTreeMap<&ItemId, usize> = items
        .iter()
        .filter_map(|i| input.judgments.get(*i).map(|j| (*i, j.paragraphs.len())))
        .collect();
    let queries: BTreeMap<&str, &str> = pairs
        .iter()
        .map(|p| (p.query.as_str(), p.text.as_str()))
        .collect();
    Stats {
        splits: cert.sizes,
        pairs_per_guide,
        paragraphs_per_judgment: Summary::of(sizes.values().map(|n| *n as f64).collect()),
        relevant_per_pair: Summary::of(pairs.iter().map(|p| p.relevant.len() as f64).collect()),
        relevant_share_percent: Summary::of(
            pairs
                .iter()
                .filter_map(|p| {
                    sizes
                        .get(&p.item)
                        .map(|n| 100.0 * p.relevant.len() as f64 / *n as f64)
                })
                .collect(),
        ),
        query_tokens: Summary::of(queries.values().map(|t| tokens(t)).collect()),
        paragraph_tokens: Summary::of(
            sizes
                .keys()
                .filter_map(|i| input.judgments.get(*i))
                .flat_map(|j| j.paragraphs.iter().map(|p| tokens(&p.text)))
                .collect(),
        ),
    }
}

fn json_file<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    Ok(lexbench_core::io::write_json_pretty(path, value)?)
}

/// Writes the dataset to `dir` (replacing a previous build only on success).
pub fn write_dataset(dir: &Path, input: &BuildInput<'_>) -> Result<Written> {
    let mut certificate = certify(input.pairs, input.assignment);
    if input
        .config
        .is_some_and(|c| c.seen_queries == SeenQueries::Required)
    {
        certificate.require_seen_queries();
    }
    if !certificate.passed {
        let failed = certificate
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| format!("{}: {}", c.name, c.detail.join(", ")))
            .collect();
        return Err(Error::Leak(failed));
    }
    let (manifest, stats) =
        lexbench_core::io::write_dir_atomic(dir, |tmp| write_into(tmp, input, &mut certificate))?;
    Ok(Written {
        manifest,
        certificate,
        stats,
    })
}

fn write_into(
    tmp: &Path,
    input: &BuildInput<'_>,
    certificate: &mut Certificate,
) -> Result<(DatasetManifest, Stats)> {
    let pairs = input.pairs;

    // queries.jsonl, sorted by topic.
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by_key(|&i| pairs[i].topic());
    let topics: Vec<DatasetTopic> = order
        .iter()
        .map(|&i| DatasetTopic {
            topic: pairs[i].topic(),
            query: pairs[i].query.clone(),
            text: pairs[i].text.clone(),
            item: Some(pairs[i].item.clone()),
            guide: Some(pairs[i].guide.clone()),
        })
        .collect();
    write_jsonl(&tmp.join("queries.jsonl"), &topics)?;

    // corpus.jsonl and pools.jsonl from the judgments the pairs use.
    let items: BTreeSet<&ItemId> = pairs.iter().map(|p| &p.item).collect();
    let mut corpus = Vec::new();
    let mut pool_docs: BTreeMap<&ItemId, Vec<DocId>> = BTreeMap::new();
    for item in &items {
        if let Some(j) = input.judgments.get(*item) {
            let mut paras: Vec<_> = j.paragraphs.iter().collect();
            paras.sort_by_key(|p| p.num);
            for p in paras {
                let doc = ParagraphId::new((*item).clone(), p.num).doc_id();
                pool_docs.entry(item).or_default().push(doc.clone());
                corpus.push(CorpusDoc {
                    doc,
                    text: p.text.clone(),
                    item: Some((*item).clone()),
                    num: Some(p.num),
                    section: Some(p.section),
                });
            }
        }
    }
    if !corpus.is_empty() {
        write_jsonl(&tmp.join("corpus.jsonl"), &corpus)?;
        crate::tables::corpus_parquet(&tmp.join("corpus.parquet"), &corpus)?;
        let pools: Vec<Pool> = order
            .iter()
            .filter_map(|&i| {
                pool_docs.get(&pairs[i].item).map(|docs| Pool {
                    topic: pairs[i].topic(),
                    docs: docs.clone(),
                })
            })
            .collect();
        write_jsonl(&tmp.join("pools.jsonl"), &pools)?;
    }

    // qrels/ and splits/ per split, and the audit trail.
    for s in SPLITS {
        let idx = of(input.assignment, s);
        let mut qrels = Qrels::default();
        let mut split_topics: Vec<TopicId> = Vec::new();
        for &i in idx {
            let p = &pairs[i];
            for &num in &p.relevant {
                qrels.insert(p.topic(), ParagraphId::new(p.item.clone(), num).doc_id(), 1);
            }
            split_topics.push(p.topic());
        }
        split_topics.sort();
        qrels.write(&tmp.join("qrels").join(format!("{s}.tsv")))?;
        json_file(
            &tmp.join("splits").join(format!("{s}.json")),
            &Split {
                dataset: input.name.to_owned(),
                name: s.to_owned(),
                topics: split_topics,
            },
        )?;
    }
    let mut audit: Vec<&QrelSource> = pairs.iter().flat_map(|p| &p.sources).collect();
    audit.sort_by(|a, b| (&a.topic, a.paragraph, &a.raw).cmp(&(&b.topic, b.paragraph, &b.raw)));
    write_jsonl(&tmp.join("audit.jsonl"), audit)?;

    let stats = stats(input);
    json_file(&tmp.join("stats.json"), &stats)?;
    crate::tables::pairs_parquet(
        &tmp.join("pairs.parquet"),
        pairs,
        input.assignment,
        input.judgments,
    )?;
    if input.plots {
        plots(tmp, input)?;
    }
    if let Some(cfg) = input.config {
        json_file(&tmp.join("split_config.json"), cfg)?;
    }
    if let Some(rep) = input.assembly {
        json_file(&tmp.join("assembly.json"), rep)?;
    }
    for sub in ["qrels", "splits"] {
        for s in SPLITS {
            let rel = match sub {
                "qrels" => format!("qrels/{s}.tsv"),
                _ => format!("splits/{s}.json"),
            };
            certificate
                .files
                .insert(rel.clone(), sha256_file(&tmp.join(&rel))?);
        }
    }
    json_file(&tmp.join("certificate.json"), certificate)?;
    let card = card(input, &stats, certificate);
    write_atomic(&tmp.join("card.md"), |w| w.write_all(card.as_bytes()))?;
    // Every dataset this writer builds is ECtHR's (built, imported or re-split): English.
    let manifest = DatasetManifest::write_with_language(
        tmp,
        input.name,
        concat!("lexbench ", env!("CARGO_PKG_VERSION")),
        Some(Language::English),
    )?;
    Ok((manifest, stats))
}

/// The card's histograms.
fn plots(dir: &Path, input: &BuildInput<'_>) -> Result<()> {
    use crate::tables::histogram_svg;
    let pairs = input.pairs;
    let items: BTreeSet<&ItemId> = pairs.iter().map(|p| &p.item).collect();
    let sizes: BTreeMap<&ItemId, f64> = items
        .iter()
        .filter_map(|i| input.judgments.get(*i).map(|j| (*i, j.paragraphs.len() as f64)))
        .collect();
    let plots = dir.join("plots");
    histogram_svg(
        &plots.join("paragraphs_per_judgment.svg"),
        "Paragraphs per judgment",
        "paragraphs",
        &sizes.values().copied().collect::<Vec<_>>(),
        30,
    )?;
    let share: Vec<f64> = pairs
        .iter()
        .filter_map(|p| sizes.get(&p.item).map(|n| 100.0 * p.relevant.len() as f64 / n))
        .collect();
    histogram_svg(
        &plots.join("relevant_share.svg"),
        "Relevant share of a pool",
        "% of paragraphs",
        &share,
        30,
    )?;
    let queries: BTreeMap<&str, f64> = pairs
        .iter()
        .map(|p| (p.query.as_str(), tokens(&p.text)))
        .collect();
    histogram_svg(
        &plots.join("query_tokens.svg"),
        "Query length",
        "tokens",
        &queries.values().copied().collect::<Vec<_>>(),
        30,
    )?;
    let para: Vec<f64> = sizes
        .keys()
        .filter_map(|i| input.judgments.get(*i))
        .flat_map(|j| j.paragraphs.iter().map(|p| tokens(&p.text)))
        .collect();
    histogram_svg(
        &plots.join("paragraph_tokens.svg"),
        "Paragraph length",
        "tokens",
        &para,
        30,
    )
}

fn card(input: &BuildInput<'_>, stats: &Stats, cert: &Certificate) -> String {
    let mut s = format!("# Dataset card: {}\n\n", input.name);
    s.push_str(
        "ECtHR query-driven paragraph retrieval (Santosh et al., LREC-COLING 2024), rebuilt by lexbench.\n",
    );
    s.push_str(
        "Each topic pairs a query (a heading path of a case-law guide) with one judgment; systems rank\n",
    );
    s.push_str(
        "that judgment's paragraphs; relevant paragraphs are those the guide cites under the heading.\n\n",
    );
    s.push_str(&format!("Sources: {}\n\n", input.sources));
    for note in input.notes {
        s.push_str(&format!("- {note}\n"));
    }
    if !input.notes.is_empty() {
        s.push('\n');
    }
    s.push_str("| split | pairs | queries | judgments | guides |\n|---|---|---|---|---|\n");
    for (split, m) in &stats.splits {
        s.push_str(&format!(
            "| {split} | {} | {} | {} | {} |\n",
            m.get("pairs").unwrap_or(&0),
            m.get("queries").unwrap_or(&0),
            m.get("judgments").unwrap_or(&0),
            m.get("guides").unwrap_or(&0)
        ));
    }
    if let Some(p) = &stats.paragraphs_per_judgment {
        s.push_str(&format!(
            "\nParagraphs per judgment: {:.0}–{:.0} (mean {:.2}).",
            p.min, p.max, p.mean
        ));
    }
    if let Some(r) = &stats.relevant_share_percent {
        s.push_str(&format!(
            " Relevant share of a pool: {:.2}%–{:.2}% (mean {:.2}%).",
            r.min, r.max, r.mean
        ));
    }
    s.push_str(&format!(
        "\n\nSplit certificate: {} ({} checks). Judgments shared between train and test: {}.\n",
        if cert.passed { "passed" } else { "FAILED" },
        cert.checks.len(),
        cert.shared_judgments.get("train∩test").unwrap_or(&0)
    ));
    let seen: Vec<String> = ["test", "val"]
        .iter()
        .filter_map(|n| cert.seen_queries.get(*n).map(|c| (n, c)))
        .map(|(n, c)| format!("{n} {} of {}", c.in_training, c.queries))
        .collect();
    if !seen.is_empty() {
        let rule = match input.config.map(|c| c.seen_queries) {
            Some(SeenQueries::Required) => " (required by the split configuration)",
            Some(SeenQueries::Preferred) => " (preferred, not required, by the split configuration)",
            Some(SeenQueries::Off) => " (not constrained by the split configuration)",
            None => " (the imported splits, as they are)",
        };
        s.push_str(&format!(
            "Seen-setting queries that occur in training: {}{rule}.\n",
            seen.join(", ")
        ));
    }
    if let Some(cfg) = input.config {
        s.push_str(&format!(
            "Splits built with seed {} (split_config.json).\n",
            cfg.seed
        ));
    }
    s.push_str(
        "\nLicence: judgment and guide texts © Council of Europe / European Court of Human Rights; \
         reuse under the Court's terms. Labels derived by lexbench.\n\
         Files: queries.jsonl, corpus.jsonl, pools.jsonl, qrels/<split>.tsv, splits/<split>.json, \
         audit.jsonl (provenance of every label), stats.json, certificate.json, manifest.json (sha256 of every file).\n",
    );
    s
}
