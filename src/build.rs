//! Datasets: the ECtHR build from parsed records, the BSARD build from its CSV files (a folder or the
//! raw store), the import of the published release, a re-split of a built dataset, and what differs
//! between two datasets (`lexbench build|import|split|stats|diff`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lexbench_core::datadir::DataDir;
use lexbench_core::dataset::DatasetDir;
use lexbench_core::io::read_jsonl;
use lexbench_core::{GuideFile, ItemId, Judgment};
use lexbench_splits::assemble::{AssemblyReport, LabelKinds, assemble};
use lexbench_splits::bsard::BsardWritten;
use lexbench_splits::open::OpenWritten;
use lexbench_splits::release::read_release;
use lexbench_splits::settings::{Assignment, SeenQueries, SplitConfig, assign};
use lexbench_splits::write::{BuildInput, Written, write_dataset};

/// Where BSARD's CSV files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BsardSource {
    /// A folder holding articles_fr.csv, questions_fr_train.csv, questions_fr_test.csv.
    Folder(PathBuf),
    /// The files `lexbench crawl bsard` stored (`DATA/raw/index/bsard.jsonl`).
    RawStore,
}

/// BSARD's files: name → (where it was read from, text). From a folder, the files present; from
/// the raw store, those its BSARD index lists, named by the URL they were crawled from.
pub fn bsard_files(data: &DataDir, from: &BsardSource) -> Result<BTreeMap<String, (PathBuf, String)>> {
    let mut out = BTreeMap::new();
    match from {
        BsardSource::Folder(dir) => {
            // Either layout: the v1 names or the names of the Hugging Face copy since 2023
            // (articles.csv, questions_train.csv, questions_test.csv), read as the v1 files.
            for (v1, current) in lexbench_crawlers::bsard::RENAMED {
                let found: Vec<PathBuf> = [v1, current]
                    .iter()
                    .map(|f| dir.join(f))
                    .filter(|p| p.is_file())
                    .collect();
                if found.len() > 1 {
                    anyhow::bail!(
                        "{}: both {v1} and {current} (the same file under its two names); keep one",
                        dir.display()
                    );
                }
                if let Some(p) = found.into_iter().next() {
                    let text = lexbench_core::text::read_text(&p)?;
                    out.insert((*v1).to_owned(), (p, text));
                }
            }
        }
        BsardSource::RawStore => {
            let index = data.raw().join("index/bsard.jsonl");
            // The error names the file; the context says what it is and how to get it.
            let files: Vec<lexbench_crawlers::bsard::SourceFile> = read_jsonl(&index).context(
                "the index of the crawled BSARD files (run `lexbench crawl bsard` or pass --from)",
            )?;
            let store = lexbench_crawlers::store::RawStore::open(data.raw())?;
            for f in files {
                let bytes = store.get(&f.sha256)?;
                // Errors (and the BOM warning) name the file by the URL it was crawled from.
                let text = lexbench_core::text::text_from_bytes(bytes, Path::new(&f.url))?;
                out.insert(f.name.clone(), (PathBuf::from(&f.url), text));
            }
        }
    }
    Ok(out)
}

/// A dataset written: what [`write_dataset`] reported and its folder.
#[derive(Debug)]
pub struct Built<W> {
    /// What was written.
    pub written: W,
    /// The dataset's folder.
    pub dir: PathBuf,
}

/// Builds the BSARD dataset `name` (under `DATA/datasets`) from `from`.
pub fn build_bsard(data: &DataDir, name: &str, from: &BsardSource) -> Result<Built<BsardWritten>> {
    use lexbench_splits::bsard::{read_articles, read_questions, write_bsard};
    let files = bsard_files(data, from)?;
    let (apath, atext) = files
        .get("articles_fr.csv")
        .context("articles_fr.csv is missing")?;
    let articles = read_articles(apath, atext)?;
    let known = articles.iter().map(|a| &a.id).collect();
    let mut splits = BTreeMap::new();
    for (file, split) in [
        ("questions_fr_train.csv", "train"),
        ("questions_fr_test.csv", "test"),
    ] {
        if let Some((p, t)) = files.get(file) {
            splits.insert(split.to_owned(), read_questions(p, t, &known)?);
        }
    }
    if splits.is_empty() {
        anyhow::bail!("no questions file (questions_fr_train.csv, questions_fr_test.csv)");
    }
    let dir = data.dataset(name)?.0;
    let written = write_bsard(&dir, name, &articles, &splits)?;
    Ok(Built { written, dir })
}

/// The counts of BSARD question files alone (`lexbench stats --bsard-questions`): what a build would
/// need an articles file for, reported without one. Each path is a questions CSV (its split is the name
/// after `questions_fr_`, else the file stem) or a folder holding `questions_fr_train.csv` and/or
/// `questions_fr_test.csv`.
pub fn bsard_questions_report(paths: &[PathBuf]) -> Result<lexbench_splits::bsard::QuestionsReport> {
    use lexbench_splits::bsard::{parse_questions, questions_report};
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let found: Vec<PathBuf> = ["questions_fr_train.csv", "questions_fr_test.csv"]
                .iter()
                .map(|f| p.join(f))
                .filter(|f| f.is_file())
                .collect();
            if found.is_empty() {
                anyhow::bail!(
                    "{}: no questions_fr_train.csv or questions_fr_test.csv in this folder",
                    p.display()
                );
            }
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    let mut by_split = BTreeMap::new();
    for f in files {
        let stem = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let split = stem.strip_prefix("questions_fr_").unwrap_or(&stem).to_owned();
        let text = lexbench_core::text::read_text(&f)?;
        let parsed = parse_questions(&f, &text)?;
        if let Some((other, _)) = by_split.insert(split.clone(), (f.clone(), parsed)) {
            anyhow::bail!("{} and {} are both split {split:?}", other.display(), f.display());
        }
    }
    Ok(questions_report(&by_split))
}

/// Options of the ECtHR build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcthrOptions {
    /// The dataset's name (`DATA/datasets/NAME`).
    pub name: String,
    /// A split configuration (JSON: seed, unseen_guides, shares); `None`: the paper's proportions.
    pub split_config: Option<PathBuf>,
    /// Overrides the configuration's seed.
    pub seed: Option<u64>,
    /// Also draw SVG histograms for the dataset card.
    pub plots: bool,
    /// Which readings of a pinpoint become labels (stated on the card).
    pub labels: LabelKinds,
}

/// What the ECtHR build wrote, and how pairs were assembled from citations.
#[derive(Debug)]
pub struct EcthrBuild {
    /// The dataset written.
    pub built: Built<Written>,
    /// Citations seen, pairs made, citations dropped and why.
    pub assembly: AssemblyReport,
    /// What the build warns about (guides of different editions).
    pub warnings: Vec<String>,
}

/// The most days between the "Last update" dates of the guides one build reads before it warns
/// that it mixes editions: the Court updates its guides in rounds, about twice a year, so guides
/// crawled together are within a year of each other; further apart, some were crawled (or kept in
/// the raw store) from an older round.
pub const EDITION_SPAN_DAYS: i64 = 366;

/// The card's line on guide editions (each guide's printed "Last update" date) and, when the guides
/// are of different editions (dates more than [`EDITION_SPAN_DAYS`] apart), a warning naming the
/// oldest and newest.
pub fn guide_editions(guides: &[GuideFile]) -> (String, Option<String>) {
    use lexbench_core::time::Date;
    let mut dated: Vec<(Date, &str)> = Vec::new();
    let mut undated = Vec::new();
    let mut listed = Vec::new();
    for g in guides {
        let id = g.guide.id.as_str();
        match g.guide.updated.as_deref().and_then(|d| d.parse::<Date>().ok()) {
            Some(d) => {
                dated.push((d, id));
                listed.push(format!("{id} {d}"));
            }
            None => {
                undated.push(id);
                listed.push(format!("{id} (no date found)"));
            }
        }
    }
    let line = format!(
        "Guide editions (the \"Last update\" each guide prints): {}.",
        if listed.is_empty() {
            "none".to_owned()
        } else {
            listed.join("; ")
        }
    );
    dated.sort();
    let warning = match (dated.first(), dated.last()) {
        (Some(old), Some(new)) if new.0.days() - old.0.days() > EDITION_SPAN_DAYS => Some(format!(
            "the guides are of different editions: \"Last update\" {} ({}) to {} ({}), more than a year \
             apart; crawl the guides again (lexbench crawl guides --refresh, then parse store) to build \
             from one edition",
            old.0, old.1, new.0, new.1
        )),
        _ => None,
    };
    (line, warning)
}

/// Builds the ECtHR dataset from `DATA/parsed/ecthr` (run [`crate::parse_store::parse_store`]
/// first).
pub fn build_ecthr(data: &DataDir, options: &EcthrOptions) -> Result<EcthrBuild> {
    let guides_path = data.parsed().join("ecthr/guides.jsonl");
    let guides: Vec<GuideFile> =
        read_jsonl(&guides_path).context("the parsed guides (run `lexbench parse store` first)")?;
    let judgments = load_judgments(data, true)?;
    let mut cfg: SplitConfig = match &options.split_config {
        Some(p) => lexbench_core::io::read_json(p)
            .with_context(|| format!("{}: not a split configuration", p.display()))?,
        None => SplitConfig::default(),
    };
    if let Some(seed) = options.seed {
        cfg.seed = seed;
    }
    let (pairs, assembly) = assemble(&guides, &judgments, options.labels);
    if options.split_config.is_none() {
        // The default holds out the release's guides: those of them this build has. (A guide a
        // user's configuration names must be there: `assign` refuses one that is not.)
        cfg.unseen_guides.retain(|g| pairs.iter().any(|p| &p.guide == g));
    }
    let (assignment, seen_note) = assign_seen(&pairs, &mut cfg, options.split_config.is_none())?;
    let dir = data.dataset(&options.name)?.0;
    let sources = format!(
        "{} parsed guides and {} parsed judgments (DATA/parsed/ecthr, from the raw store DATA/raw)",
        guides.len(),
        judgments.len()
    );
    let (editions, mixed) = guide_editions(&guides);
    let mut notes = vec![options.labels.card_line().to_owned(), editions];
    notes.extend(mixed.iter().map(|w| format!("Warning: {w}.")));
    notes.extend(seen_note);
    let written = write_dataset(
        &dir,
        &BuildInput {
            name: &options.name,
            pairs: &pairs,
            assignment: &assignment,
            judgments: &judgments,
            config: Some(&cfg),
            assembly: Some(&assembly),
            sources: &sources,
            plots: options.plots,
            notes: &notes,
        },
    )?;
    Ok(EcthrBuild {
        built: Built { written, dir },
        assembly,
        warnings: mixed.into_iter().collect(),
    })
}

/// A dataset made from pairs that were already labelled (a release, a re-split).
#[derive(Debug)]
pub struct Relabelled {
    /// The dataset written.
    pub built: Built<Written>,
    /// Pairs in it.
    pub pairs: usize,
    /// The seed of the split, when it was drawn here.
    pub seed: Option<u64>,
}

/// Imports the published release in `release` (training.jsonl, validation.jsonl, testing.jsonl,
/// unseen_article.jsonl, unseen.jsonl) as dataset `name`, with the judgments of the parsed store
/// (`DATA/parsed/ecthr/judgments.jsonl`, when present).
pub fn import_release(data: &DataDir, release: &Path, name: &str) -> Result<Relabelled> {
    let r = read_release(release)?;
    let judgments = load_judgments(data, false)?;
    let sources = format!("the published release {}", InputLabel::of(release)?);
    write_relabelled(data, name, &r.pairs, &r.assignment, &judgments, &sources, &[])
}

/// How a dataset names an input it was built from: its file or folder name and the sha256 of its
/// content, never its path. A dataset's version is the hash of its files (card and `sources.json`
/// included), so a path there would make the same inputs at another place another version (issue
/// 55: the fixtures beside the checkout gave one version, the same files elsewhere another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputLabel {
    /// The path as given (shown in messages, never written into a dataset).
    pub path: PathBuf,
    /// Its last component (`tum_release`, `judgments.jsonl`).
    pub name: String,
    /// The sha256 of its content ([`lexbench_core::hash::sha256_content`]).
    pub sha256: String,
}

impl InputLabel {
    /// Names `path` by its name and content.
    pub fn of(path: &Path) -> Result<Self> {
        let name = std::path::absolute(path)
            .ok()
            .as_deref()
            .and_then(Path::file_name)
            .map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
        Ok(Self {
            path: path.to_owned(),
            name,
            sha256: lexbench_core::hash::sha256_content(path)?,
        })
    }

    /// `s` with the path replaced by the name wherever it occurs (messages about the input's files
    /// that go into a dataset).
    pub fn unpathed(&self, s: &str) -> String {
        let p = self.path.display().to_string();
        if p.is_empty() {
            s.to_owned()
        } else {
            s.replace(&p, &self.name)
        }
    }
}

impl std::fmt::Display for InputLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (sha256 {})",
            self.name,
            &self.sha256[..16.min(self.sha256.len())]
        )
    }
}

/// Where `import release --texts` takes judgment texts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextSource {
    /// A folder of `<itemid>.txt|.docx|.html|.json` files, each read by
    /// [`lexbench_parsers::judgment::parse`].
    Folder(PathBuf),
    /// A segmented corpus, JSON Lines of judgments already cut into paragraphs
    /// ([`lexbench_parsers::judgment::segmented`]).
    Corpus(PathBuf),
}

/// The file extensions looked for in a [`TextSource::Folder`], in this order: the first that
/// exists is the judgment's file there.
pub const TEXT_EXTENSIONS: &[&str] = &["txt", "docx", "html", "json"];

impl TextSource {
    /// A folder is a [`TextSource::Folder`], a `.jsonl` file a [`TextSource::Corpus`]; anything
    /// else is an error naming the path.
    pub fn from_path(path: &Path) -> Result<Self> {
        if path.is_dir() {
            Ok(Self::Folder(path.to_owned()))
        } else if path.is_file() && lexbench_parsers::judgment::segmented::is_corpus_path(path) {
            Ok(Self::Corpus(path.to_owned()))
        } else if path.exists() {
            anyhow::bail!(
                "{}: judgment texts are a folder of <itemid>.txt|.docx|.html|.json files or a .jsonl \
                 segmented corpus, not this file",
                path.display()
            )
        } else {
            anyhow::bail!(
                "{}: no such folder or file (the judgment texts: a folder of <itemid>.txt|.docx|.html|.json, \
                 or a .jsonl segmented corpus)",
                path.display()
            )
        }
    }

    /// The path given.
    pub fn path(&self) -> &Path {
        match self {
            Self::Folder(p) | Self::Corpus(p) => p,
        }
    }

    /// `folder` or `corpus`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Folder(_) => "folder",
            Self::Corpus(_) => "corpus",
        }
    }
}

/// What one text source held of the release's judgments.
#[derive(Debug, Clone, Default, PartialEq)]
struct SourceTexts {
    /// Parsed judgments with at least one numbered paragraph.
    parsed: BTreeMap<ItemId, Judgment>,
    /// Judgments there whose text did not parse (or has no numbered paragraph), and why.
    unparsed: BTreeMap<ItemId, String>,
    /// A corpus's blocks of the release judgments it holds that were left out of their paragraphs.
    blocks_left_out: Option<lexbench_parsers::judgment::segmented::BlocksLeftOut>,
    /// A corpus's judgments with a paragraph number repeated in sequence: `ITEM (FILE:LINE): why`.
    repeated_numbers: Vec<String>,
}

/// Reads the release's judgments (`items`) from one source.
fn read_source(source: &TextSource, items: &std::collections::BTreeSet<&ItemId>) -> Result<SourceTexts> {
    let mut out = SourceTexts::default();
    match source {
        TextSource::Folder(dir) => {
            for &item in items {
                let Some(path) = TEXT_EXTENSIONS
                    .iter()
                    .map(|ext| dir.join(format!("{item}.{ext}")))
                    .find(|p| p.is_file())
                else {
                    continue;
                };
                let bytes = lexbench_parsers::judgment::read_file(&path)?;
                let name = path.display().to_string();
                match lexbench_parsers::judgment::parse(&bytes, &name, Some(item.clone())) {
                    // A document that says it is another judgment (a HUDOC JSON's `itemid`) is not
                    // this judgment's text, whatever its file is called.
                    Ok(j) if j.item.as_ref().is_some_and(|own| own != item) => {
                        let own = j.item.as_ref().map(ToString::to_string).unwrap_or_default();
                        out.unparsed.insert(
                            item.clone(),
                            format!(
                                "{name}: the document is {own} (its `itemid`), not {item} as its file \
                                 name says: another judgment's text, not used"
                            ),
                        );
                    }
                    Ok(j) if !j.paragraphs.is_empty() => {
                        out.parsed.insert(item.clone(), j);
                    }
                    Ok(_) => {
                        out.unparsed
                            .insert(item.clone(), format!("{name}: no numbered paragraph"));
                    }
                    Err(e) => {
                        out.unparsed.insert(item.clone(), e.to_string());
                    }
                }
            }
        }
        TextSource::Corpus(path) => {
            use lexbench_parsers::judgment::segmented;
            let bytes = segmented::read_file(path)?;
            let name = path.display().to_string();
            let mut left_out = segmented::BlocksLeftOut::default();
            for e in segmented::parse(&bytes, &name)? {
                let Some(item) = e.judgment.item.clone().filter(|i| items.contains(i)) else {
                    continue;
                };
                left_out.add(&e.left_out);
                if e.left_out.repeated_number > 0
                    && let Some(w) = e.judgment.warnings.iter().find(|w| w.code == "repeated_number")
                {
                    out.repeated_numbers
                        .push(format!("{item} ({name}:{}): {}", e.line, w.message));
                }
                if e.judgment.paragraphs.is_empty() {
                    out.unparsed
                        .insert(item, format!("{name}:{}: no numbered paragraph", e.line));
                } else {
                    out.parsed.insert(item, e.judgment);
                }
            }
            out.blocks_left_out = Some(left_out);
        }
    }
    Ok(out)
}

/// How many characters of a paragraph's opening [`opening`] compares.
pub const OPENING_CHARS: usize = 40;

/// A paragraph's opening as two sources are compared on: its letters and digits, lower-cased, the
/// first [`OPENING_CHARS`] of them (white space, punctuation, quotation-mark styles and no-break
/// spaces are the differences between two extractions of one text that say nothing about it).
pub fn opening(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .take(OPENING_CHARS)
        .collect()
}

/// How two sources' texts of one judgment agree: the share of paragraph numbers both have (of the
/// numbers either has), and the share of those common numbers whose [`opening`]s are equal (0 when
/// none is common).
pub fn judgment_agreement(a: &Judgment, b: &Judgment) -> (usize, f64, f64) {
    let a: BTreeMap<u32, &str> = a.paragraphs.iter().map(|p| (p.num, p.text.as_str())).collect();
    let b: BTreeMap<u32, &str> = b.paragraphs.iter().map(|p| (p.num, p.text.as_str())).collect();
    let common: Vec<u32> = a.keys().filter(|n| b.contains_key(n)).copied().collect();
    let union = a.len() + b.len() - common.len();
    let share = if union == 0 {
        0.0
    } else {
        common.len() as f64 / union as f64
    };
    let same = common.iter().filter(|n| opening(a[n]) == opening(b[n])).count();
    let openings = if common.is_empty() {
        0.0
    } else {
        same as f64 / common.len() as f64
    };
    (common.len(), share, openings)
}

/// The judgment on which two sources agree least.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorstJudgment {
    /// The judgment.
    pub item: ItemId,
    /// Paragraph numbers in both texts.
    pub common_numbers: usize,
    /// Share of the numbers either text has that both have.
    pub number_share: f64,
    /// Share of the common numbers whose openings agree.
    pub opening_agreement: f64,
}

/// How two text sources agree on the release judgments they both parsed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SourceAgreement {
    /// The earlier source on the command line.
    pub a: String,
    /// The later one.
    pub b: String,
    /// Release judgments both parsed.
    pub judgments: usize,
    /// Mean over those judgments of the share of paragraph numbers in common (of the numbers either
    /// has).
    pub mean_number_share: Option<f64>,
    /// Mean over those judgments of the share of common numbers whose openings (first
    /// [`OPENING_CHARS`] letters and digits) agree.
    pub mean_opening_agreement: Option<f64>,
    /// The judgment with the lowest opening agreement (then number share, then itemid).
    pub worst: Option<WorstJudgment>,
}

fn agreement(a: &SourceTexts, b: &SourceTexts, names: (String, String)) -> SourceAgreement {
    let mut rows: Vec<WorstJudgment> = a
        .parsed
        .iter()
        .filter_map(|(item, ja)| {
            b.parsed.get(item).map(|jb| {
                let (common, share, openings) = judgment_agreement(ja, jb);
                WorstJudgment {
                    item: item.clone(),
                    common_numbers: common,
                    number_share: share,
                    opening_agreement: openings,
                }
            })
        })
        .collect();
    let n = rows.len();
    let mean = |f: fn(&WorstJudgment) -> f64| (n > 0).then(|| rows.iter().map(f).sum::<f64>() / n as f64);
    let (mean_number_share, mean_opening_agreement) =
        (mean(|r| r.number_share), mean(|r| r.opening_agreement));
    rows.sort_by(|x, y| {
        x.opening_agreement
            .total_cmp(&y.opening_agreement)
            .then(x.number_share.total_cmp(&y.number_share))
            .then(x.item.cmp(&y.item))
    });
    SourceAgreement {
        a: names.0,
        b: names.1,
        judgments: n,
        mean_number_share,
        mean_opening_agreement,
        worst: rows.into_iter().next(),
    }
}

/// Why a release pair was left out of an import with texts.
pub const LEFT_OUT_REASONS: [&str; 3] = ["no_text", "unparsed", "missing_paragraph"];

/// One text source's share of an import.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceCount {
    /// Its position on the command line, from 1 (its precedence: lower wins).
    pub rank: usize,
    /// Its name (the last component of the path given; never the path: [`InputLabel`]).
    pub source: String,
    /// The sha256 of its content ([`lexbench_core::hash::sha256_content`]).
    pub sha256: String,
    /// `folder` or `corpus`.
    pub kind: &'static str,
    /// Release judgments it holds a text of that parsed.
    pub parsed: usize,
    /// Release judgments it holds a text of that did not parse.
    pub unparsed: usize,
    /// Release judgments whose text was taken from it.
    pub used: usize,
    /// A corpus only: the blocks of the release judgments it holds that were left out of their
    /// numbered paragraphs, by reason (`unnumbered`, `out_of_order`, `repeated_number`, `empty`;
    /// `lexbench_parsers::judgment::segmented`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks_left_out: Option<BTreeMap<String, usize>>,
    /// A corpus only: its release judgments with a paragraph number two blocks in sequence carry
    /// (neither kept), one line each: `ITEM (FILE:LINE): what was left out`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeated_numbers: Vec<String>,
}

/// What [`import_release_texts`] did with the text sources: written into the dataset as
/// `sources.json` and shown by `lexbench stats`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TextImport {
    /// The rule that picks a judgment's text.
    pub precedence: String,
    /// The sources, in command-line order.
    pub sources: Vec<SourceCount>,
    /// Release pairs, and those kept, per setting.
    pub release_pairs: BTreeMap<String, usize>,
    /// Pairs kept per setting.
    pub kept: BTreeMap<String, usize>,
    /// Pairs left out per reason ([`LEFT_OUT_REASONS`]), all settings together.
    pub left_out: BTreeMap<String, usize>,
    /// Pairs left out per setting and reason.
    pub left_out_per_setting: BTreeMap<String, BTreeMap<String, usize>>,
    /// Agreement of every two sources on the judgments both parsed, keyed `"i-j"` by their ranks.
    pub agreement: BTreeMap<String, SourceAgreement>,
}

/// What [`import_release_texts`] left out, beside the counts of [`TextImport`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Release pairs whose judgment has no text in any source.
    pub no_text: usize,
    /// Release pairs whose judgment's texts all failed to parse (a document whose own itemid is
    /// another judgment's, such as a HUDOC JSON saved under the wrong name, counts here, and so does a
    /// judgment two sources give the titles of two cases).
    pub unparsed: usize,
    /// Release pairs a paragraph of whose labels is not in the text used.
    pub missing_paragraph: usize,
    /// `(itemid, reason)` of every judgment whose texts did not parse, in itemid order.
    pub judgments: Vec<(ItemId, String)>,
    /// `(topic, reason)` of every pair left out for a missing paragraph, in release order.
    pub pairs: Vec<(String, String)>,
}

/// The file of a dataset imported with texts that records its text sources ([`TextImport`]).
pub const TEXT_SOURCES_FILE: &str = "sources.json";

/// The precedence rule, as the card and `sources.json` state it.
pub const TEXT_PRECEDENCE: &str = "a judgment's text is taken from the first source, in the order \
     given on the command line, that holds a text of it that parses; a later source's text of the same \
     judgment is only compared with it";

/// Imports the published release with judgment texts from `texts`, in precedence order: each a
/// folder of `<itemid>.txt|.docx|.html|.json` (the first extension of [`TEXT_EXTENSIONS`] present;
/// read as `lexbench parse judgment` reads it) or a `.jsonl` segmented corpus. A judgment's text is
/// the first source's that parses ([`TEXT_PRECEDENCE`]); where two sources hold the same judgment
/// they are compared ([`SourceAgreement`]). A release pair is left out, and counted by reason, when
/// its judgment has no text in any source, when every text of it failed to parse or is another
/// judgment's document (a HUDOC JSON whose `itemid` is not the one its file is named for; two
/// sources whose titles of it name two cases, [`lexbench_parsers::judgment::title`]), or when a
/// paragraph the release labels relevant is not in the text used (never kept with a positive
/// missing from its pool).
pub fn import_release_texts(
    data: &DataDir,
    release: &Path,
    texts: &[PathBuf],
    name: &str,
) -> Result<(Relabelled, Dropped, TextImport)> {
    if texts.is_empty() {
        anyhow::bail!("no judgment texts given");
    }
    let r = read_release(release)?;
    let sources: Vec<TextSource> = texts
        .iter()
        .map(|p| TextSource::from_path(p))
        .collect::<Result<_>>()?;
    for (i, s) in sources.iter().enumerate() {
        if sources[..i].iter().any(|t| t.path() == s.path()) {
            anyhow::bail!("{}: the same judgment texts are given twice", s.path().display());
        }
    }
    // What goes into the dataset names each source by its name and content, never its path.
    let labels: Vec<InputLabel> = texts.iter().map(|p| InputLabel::of(p)).collect::<Result<_>>()?;
    let release_label = InputLabel::of(release)?;
    let unpathed = |s: &str| -> String {
        labels
            .iter()
            .chain(std::iter::once(&release_label))
            .fold(s.to_owned(), |s, l| l.unpathed(&s))
    };
    let items: std::collections::BTreeSet<&ItemId> = r.pairs.iter().map(|p| &p.item).collect();
    let read: Vec<SourceTexts> = sources
        .iter()
        .map(|s| read_source(s, &items))
        .collect::<Result<_>>()?;

    // Each judgment's text: the first source that parsed it.
    let mut judgments: BTreeMap<ItemId, Judgment> = BTreeMap::new();
    let mut used_from: BTreeMap<ItemId, usize> = BTreeMap::new();
    let mut unparsed: BTreeMap<ItemId, Vec<String>> = BTreeMap::new();
    for &item in &items {
        // Where two sources give this judgment titles of two cases, one of them holds another
        // judgment's text under this one's name, and no one can tell which: neither is used.
        let titled: Vec<(usize, &str)> = read
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.parsed.get(item).map(|j| (k, j.title.trim())))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        let clash = titled.iter().enumerate().find_map(|(x, a)| {
            titled[x + 1..]
                .iter()
                .find(|b| !lexbench_parsers::judgment::title::agree(a.1, b.1))
                .map(|b| (*a, *b))
        });
        if let Some(((a, ta), (b, tb))) = clash {
            unparsed.insert(
                item.clone(),
                vec![format!(
                    "{} calls {item} {ta:?} but {} calls it {tb:?}: texts of two judgments under one \
                     itemid, neither used",
                    labels[a].name, labels[b].name
                )],
            );
            continue;
        }
        match read.iter().position(|s| s.parsed.contains_key(item)) {
            Some(k) => {
                judgments.insert(item.clone(), read[k].parsed[item].clone());
                used_from.insert(item.clone(), k);
            }
            None => {
                let why: Vec<String> = read
                    .iter()
                    .filter_map(|s| s.unparsed.get(item).cloned())
                    .collect();
                if !why.is_empty() {
                    unparsed.insert(item.clone(), why);
                }
            }
        }
    }

    let split_of: BTreeMap<usize, &str> = r
        .assignment
        .iter()
        .flat_map(|(split, idx)| idx.iter().map(move |&i| (i, split.as_str())))
        .collect();
    let mut kept = Vec::new();
    let mut new_index = vec![None; r.pairs.len()];
    let mut dropped = Dropped::default();
    let mut left_out_per_setting: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (i, pair) in r.pairs.iter().enumerate() {
        let reason = match judgments.get(&pair.item) {
            None if unparsed.contains_key(&pair.item) => {
                dropped.unparsed += 1;
                "unparsed"
            }
            None => {
                dropped.no_text += 1;
                "no_text"
            }
            Some(j) => {
                let nums: std::collections::BTreeSet<u32> = j.paragraphs.iter().map(|p| p.num).collect();
                let missing: Vec<String> = pair
                    .relevant
                    .iter()
                    .filter(|n| !nums.contains(n))
                    .map(u32::to_string)
                    .collect();
                if missing.is_empty() {
                    new_index[i] = Some(kept.len());
                    kept.push(pair.clone());
                    continue;
                }
                dropped.missing_paragraph += 1;
                dropped.pairs.push((
                    pair.topic().to_string(),
                    format!(
                        "labelled paragraph(s) {} not among the {} paragraphs of {} in {}",
                        missing.join(", "),
                        nums.len(),
                        pair.item,
                        labels[used_from[&pair.item]].name
                    ),
                ));
                "missing_paragraph"
            }
        };
        let split = split_of.get(&i).copied().unwrap_or("none");
        *left_out_per_setting
            .entry(split.to_owned())
            .or_default()
            .entry(reason.to_owned())
            .or_default() += 1;
    }
    if kept.is_empty() {
        let why = unparsed
            .values()
            .next()
            .map_or(String::new(), |w| format!(" (first: {})", w[0]));
        anyhow::bail!(
            "{}: no judgment of the release's {} pairs has a readable text there with its labelled \
             paragraphs{why}",
            texts
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            r.pairs.len()
        );
    }
    dropped.judgments = unparsed
        .iter()
        .map(|(i, why)| (i.clone(), why.join("; ")))
        .collect();
    let assignment: lexbench_splits::settings::Assignment = r
        .assignment
        .iter()
        .map(|(split, idx)| (split.clone(), idx.iter().filter_map(|&i| new_index[i]).collect()))
        .collect();

    let label = |k: usize| labels[k].name.clone();
    let mut agreements = BTreeMap::new();
    for a in 0..read.len() {
        for b in a + 1..read.len() {
            agreements.insert(
                format!("{}-{}", a + 1, b + 1),
                agreement(&read[a], &read[b], (label(a), label(b))),
            );
        }
    }
    let report = TextImport {
        precedence: TEXT_PRECEDENCE.to_owned(),
        sources: sources
            .iter()
            .enumerate()
            .map(|(k, s)| SourceCount {
                rank: k + 1,
                source: label(k),
                sha256: labels[k].sha256.clone(),
                kind: s.kind(),
                parsed: read[k].parsed.len(),
                unparsed: read[k].unparsed.len(),
                used: used_from.values().filter(|&&u| u == k).count(),
                blocks_left_out: read[k]
                    .blocks_left_out
                    .map(|b| b.by_reason().iter().map(|&(r, n)| (r.to_owned(), n)).collect()),
                repeated_numbers: read[k].repeated_numbers.iter().map(|r| unpathed(r)).collect(),
            })
            .collect(),
        release_pairs: r
            .assignment
            .iter()
            .map(|(s, idx)| (s.clone(), idx.len()))
            .collect(),
        kept: assignment.iter().map(|(s, idx)| (s.clone(), idx.len())).collect(),
        left_out: LEFT_OUT_REASONS
            .iter()
            .zip([dropped.no_text, dropped.unparsed, dropped.missing_paragraph])
            .map(|(r, n)| ((*r).to_owned(), n))
            .collect(),
        left_out_per_setting,
        agreement: agreements,
    };

    let notes: Vec<String> = text_import_notes(&report, &dropped, r.pairs.len(), kept.len(), judgments.len())
        .iter()
        .map(|n| unpathed(n))
        .collect();
    let sources_line = format!(
        "the published release {}, judgment texts from {}",
        InputLabel::of(release)?,
        labels
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let extra = serde_json::to_vec_pretty(&report)?;
    let input = BuildInput {
        name,
        pairs: &kept,
        assignment: &assignment,
        judgments: &judgments,
        config: None,
        assembly: None,
        sources: &sources_line,
        plots: false,
        notes: &notes,
    };
    let out = write_with_extra(data, &input, Some((TEXT_SOURCES_FILE, &extra)))?;
    Ok((out, dropped, report))
}

/// The card's lines about an import with texts: counts, precedence, each source, agreement, and
/// what was left out.
fn text_import_notes(
    report: &TextImport,
    dropped: &Dropped,
    release_pairs: usize,
    kept: usize,
    judgments: usize,
) -> Vec<String> {
    let fmt = |x: Option<f64>| x.map_or_else(|| "–".to_owned(), |x| format!("{x:.3}"));
    let mut notes = vec![format!(
        "{kept} of the release's {release_pairs} pairs have their judgment's text in the sources \
         ({judgments} judgments parsed); {} pairs left out: {} with no text in any source, {} whose \
         text did not parse, {} with a labelled paragraph missing from the text used.",
        dropped.no_text + dropped.unparsed + dropped.missing_paragraph,
        dropped.no_text,
        dropped.unparsed,
        dropped.missing_paragraph
    )];
    notes.push(format!("Text sources: {}.", report.precedence));
    for s in &report.sources {
        notes.push(format!(
            "Source {} ({}, {}): {} release judgments parsed, {} did not parse, {} used.",
            s.rank, s.kind, s.source, s.parsed, s.unparsed, s.used
        ));
        if let Some(b) = &s.blocks_left_out {
            notes.push(format!(
                "Source {}: {} blocks of its release judgments left out of their numbered paragraphs \
                 ({}).",
                s.rank,
                b.values().sum::<usize>(),
                blocks_by_reason(b)
            ));
        }
        notes.extend(
            s.repeated_numbers
                .iter()
                .map(|r| format!("Source {}: repeated paragraph number in {r}", s.rank)),
        );
    }
    for (key, a) in &report.agreement {
        let worst = a.worst.as_ref().map_or(String::new(), |w| {
            format!(
                "; worst {} ({} numbers in common, share {:.3}, openings {:.3})",
                w.item, w.common_numbers, w.number_share, w.opening_agreement
            )
        });
        notes.push(format!(
            "Sources {key} agree on {} judgments in common: mean share of paragraph numbers in common \
             {}, mean agreement of the openings ({OPENING_CHARS} letters and digits) of common numbers \
             {}{worst}.",
            a.judgments,
            fmt(a.mean_number_share),
            fmt(a.mean_opening_agreement)
        ));
    }
    notes.extend(
        dropped
            .judgments
            .iter()
            .map(|(item, why)| format!("left out {item}: {why}")),
    );
    notes.extend(
        dropped
            .pairs
            .iter()
            .map(|(topic, why)| format!("left out pair {topic}: {why}")),
    );
    notes
}

/// `unnumbered 3, out_of_order 1, repeated_number 0, empty 0`: a corpus's blocks left out, by reason.
pub fn blocks_by_reason(b: &BTreeMap<String, usize>) -> String {
    lexbench_parsers::judgment::segmented::BlocksLeftOut::default()
        .by_reason()
        .iter()
        .map(|(r, _)| format!("{r} {}", b.get(*r).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes a dataset of pairs already labelled and assigned to splits.
fn write_relabelled(
    data: &DataDir,
    name: &str,
    pairs: &[lexbench_splits::pairs::Pair],
    assignment: &lexbench_splits::settings::Assignment,
    judgments: &BTreeMap<ItemId, Judgment>,
    sources: &str,
    notes: &[String],
) -> Result<Relabelled> {
    let input = BuildInput {
        name,
        pairs,
        assignment,
        judgments,
        config: None,
        assembly: None,
        sources,
        plots: false,
        notes,
    };
    write_with_extra(data, &input, None)
}

/// Writes the dataset of `input`, with `extra` (a file name and its bytes) beside its files when
/// given: the whole folder is written atomically, and the extra file is in the manifest (part of
/// the dataset's identity, verified as the others are).
fn write_with_extra(
    data: &DataDir,
    input: &BuildInput<'_>,
    extra: Option<(&str, &[u8])>,
) -> Result<Relabelled> {
    let dir = data.dataset(input.name)?.0;
    let written = match extra {
        None => write_dataset(&dir, input)?,
        Some((file, bytes)) => lexbench_core::io::write_dir_atomic(&dir, |tmp| -> Result<Written> {
            let mut written = write_dataset(tmp, input)?;
            lexbench_core::io::write_atomic(&tmp.join(file), |w| {
                use std::io::Write;
                w.write_all(bytes)?;
                w.write_all(b"\n")
            })?;
            let m = &written.manifest;
            written.manifest = lexbench_core::dataset::DatasetManifest::write_with_language(
                tmp,
                &m.name,
                &m.built_by,
                m.language,
            )?;
            Ok(written)
        })?,
    };
    Ok(Relabelled {
        built: Built { written, dir },
        pairs: input.pairs.len(),
        seed: None,
    })
}

/// Options of a re-split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitOptions {
    /// The ECtHR dataset whose pairs are split again (a name under `DATA/datasets`, or a path).
    pub dataset: String,
    /// The new dataset's name; `None`: `DATASET-split`.
    pub name: Option<String>,
    /// A split configuration (JSON); `None`: the paper's proportions.
    pub split_config: Option<PathBuf>,
    /// Overrides the configuration's seed.
    pub seed: Option<u64>,
}

/// Splits the pairs of a built dataset again into a new dataset.
pub fn split_dataset(data: &DataDir, options: &SplitOptions) -> Result<Relabelled> {
    let from = DatasetDir(dataset_path(data, &options.dataset));
    let (pairs, _) = lexbench_splits::reload::load_pairs(&from)?;
    let mut cfg = split_config(options.split_config.as_deref(), options.seed)?;
    if options.split_config.is_none() {
        // As in `build_ecthr`: the default's held-out guides that these pairs have.
        cfg.unseen_guides.retain(|g| pairs.iter().any(|p| &p.guide == g));
    }
    let (assignment, seen_note) = assign_seen(&pairs, &mut cfg, options.split_config.is_none())?;
    // A dataset given as a path (a folder outside the data directory) names the new one by its
    // folder's name: the path itself is not a name.
    let stem = from
        .0
        .file_name()
        .map_or_else(|| options.dataset.clone(), |n| n.to_string_lossy().into_owned());
    let name = options.name.clone().unwrap_or_else(|| format!("{stem}-split"));
    let judgments = load_judgments(data, false)?;
    let dir = data.dataset(&name)?.0;
    let notes: Vec<String> = seen_note.into_iter().collect();
    let sources = format!("the pairs of dataset {}, split again", options.dataset);
    let written = write_dataset(
        &dir,
        &BuildInput {
            name: &name,
            pairs: &pairs,
            assignment: &assignment,
            judgments: &judgments,
            config: Some(&cfg),
            assembly: None,
            sources: &sources,
            plots: false,
            notes: &notes,
        },
    )?;
    Ok(Relabelled {
        built: Built { written, dir },
        pairs: pairs.len(),
        seed: Some(cfg.seed),
    })
}

/// The open-corpus setting derived from the ECtHR dataset `source` (a name under `DATA/datasets`, or a
/// folder) into `DATA/datasets/NAME` (default `SOURCE-open`; [`lexbench_splits::open`]).
pub fn build_open(data: &DataDir, source: &str, name: Option<&str>) -> Result<Built<OpenWritten>> {
    let from = DatasetDir(dataset_path(data, source));
    let stem = from
        .0
        .file_name()
        .map_or_else(|| source.to_owned(), |n| n.to_string_lossy().into_owned());
    let name = name.map_or_else(|| open_name(&stem), str::to_owned);
    let dir = data.dataset(&name)?.0;
    let written = lexbench_splits::open::derive(&from, &name, &dir).with_context(|| {
        format!(
            "deriving the open-corpus setting {name} from {}",
            from.0.display()
        )
    })?;
    Ok(Built { written, dir })
}

/// The default name of the open-corpus setting of dataset `source`: `SOURCE-open`.
pub fn open_name(source: &str) -> String {
    format!("{source}-open")
}

/// Splits `pairs` with `cfg`. Under the default configuration (`by_default`), data that cannot keep
/// every test and validation query in training (`seen_queries = "required"`: too few queries repeat
/// across judgments, as in a small crawl) is split with `"preferred"` instead — `cfg` then says so,
/// the warning is printed, and the returned line goes on the card; a configuration the user wrote is
/// kept to the letter (the error names the setting to change).
fn assign_seen(
    pairs: &[lexbench_splits::pairs::Pair],
    cfg: &mut SplitConfig,
    by_default: bool,
) -> Result<(Assignment, Option<String>)> {
    match assign(pairs, cfg) {
        Err(lexbench_splits::Error::SeenQueries { split, pairs: n }) if by_default => {
            let note = format!(
                "Warning: the default's seen_queries = \"required\" cannot be met here (no judgment \
                 can be held out for {split} while its queries stay in training; {n} seen-guide \
                 pairs): the splits keep test and validation queries in training where they can \
                 (\"preferred\") and the card counts how many do."
            );
            eprintln!("{note}");
            cfg.seen_queries = SeenQueries::Preferred;
            Ok((assign(pairs, cfg)?, Some(note)))
        }
        other => Ok((other?, None)),
    }
}

/// A split configuration from `path` (or the default), `seed` overriding its seed; validated.
pub fn split_config(path: Option<&Path>, seed: Option<u64>) -> Result<SplitConfig> {
    let mut cfg: SplitConfig = match path {
        Some(p) => lexbench_core::io::read_json(p)
            .with_context(|| format!("{}: not a split configuration", p.display()))?,
        None => SplitConfig::default(),
    };
    if let Some(seed) = seed {
        cfg.seed = seed;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// A dataset to read, by name (`DATA/datasets/NAME`) or, for the read-only commands (`stats`,
/// `diff`, `split`'s source), by folder path. Datasets are only ever written by name.
pub fn dataset_path(data: &DataDir, name: &str) -> PathBuf {
    match data.dataset(name) {
        Ok(d) if d.0.is_dir() || !Path::new(name).is_dir() => d.0,
        _ => PathBuf::from(name),
    }
}

/// Parsed judgments of `data`, by itemid (those without an itemid are skipped). Without
/// `parsed/ecthr/judgments.jsonl` there are none, or, when they are `required`, an error naming the
/// file.
pub fn load_judgments(data: &DataDir, required: bool) -> Result<BTreeMap<ItemId, Judgment>> {
    let path = data.parsed().join("ecthr/judgments.jsonl");
    if !path.exists() {
        if required {
            anyhow::bail!(
                "{}: no such file: the parsed judgments are missing (run `lexbench parse store` first)",
                path.display()
            );
        }
        return Ok(BTreeMap::new());
    }
    let js: Vec<Judgment> = read_jsonl(&path)?;
    Ok(js
        .into_iter()
        .filter_map(|j| j.item.clone().map(|i| (i, j)))
        .collect())
}

/// A dataset's statistics and certificate summary, as `lexbench stats` prints them:
/// `{"dataset", "version", "stats", "certificate": {"passed", "shared_judgments"}}`, and
/// `"text_sources"` ([`TextImport`]) for a release imported with judgment texts. The dataset is
/// verified against its manifest first, as every command that reads it does: a version and a passed
/// certificate are not printed for files that are no longer the ones they describe.
pub fn dataset_stats(data: &DataDir, dataset: &str) -> Result<serde_json::Value> {
    let dir = dataset_path(data, dataset);
    let read = |f: &str| -> Result<serde_json::Value> {
        let p = dir.join(f);
        Ok(lexbench_core::io::read_json(&p)?)
    };
    let opened = lexbench_core::dataset::Dataset::open(DatasetDir(dir.clone()))?;
    let manifest = opened.manifest();
    let mut out = serde_json::json!({
        "dataset": manifest.name,
        "version": manifest.dataset_hash(),
        "stats": read("stats.json")?,
    });
    if manifest.files.contains_key(TEXT_SOURCES_FILE) {
        out["text_sources"] = read(TEXT_SOURCES_FILE)?;
    }
    if let Some(rows) = beside_paper(&out["stats"]) {
        out["beside_paper"] = rows;
    }
    if dir.join("certificate.json").exists() {
        let c = read("certificate.json")?;
        out["certificate"] =
            serde_json::json!({"passed": c["passed"], "shared_judgments": c["shared_judgments"]});
    }
    Ok(out)
}

/// The ECtHR paper's dataset figures (Santosh et al., LREC-COLING 2024, §3; `../shared/design/PAPERS.md`):
/// `(measure, paper's figure, this dataset's statistic as a JSON pointer into stats.json and how to show it)`.
const PAPER_ECTHR: [(&str, &str, &str); 12] = [
    ("pairs, train", "2,230", "/splits/train/pairs"),
    ("pairs, val", "302", "/splits/val/pairs"),
    ("pairs, test (seen query)", "480", "/splits/test/pairs"),
    ("pairs, unseen query", "694", "/splits/unseen_query/pairs"),
    (
        "pairs, unseen guide (article)",
        "403",
        "/splits/unseen_guide/pairs",
    ),
    ("queries, unseen query", "120", "/splits/unseen_query/queries"),
    (
        "queries, unseen guide (article)",
        "111",
        "/splits/unseen_guide/queries",
    ),
    (
        "paragraphs per judgment, min–max",
        "21–942",
        "/paragraphs_per_judgment",
    ),
    (
        "paragraphs per judgment, mean",
        "102.78",
        "/paragraphs_per_judgment/mean",
    ),
    (
        "relevant share per pair (%), min–max",
        "0.10–15",
        "/relevant_share_percent",
    ),
    (
        "relevant share per pair (%), mean",
        "≈ 1.95",
        "/relevant_share_percent/mean",
    ),
    (
        "query tokens, mean / paragraph tokens, mean",
        "≈ 36 / ≈ 135",
        "/query_tokens/mean",
    ),
];

/// The paper's dataset figures beside this dataset's (for an ECtHR dataset: its stats have
/// `paragraphs_per_judgment`): rows of `{measure, here, paper}`. Tokens are counted here as
/// whitespace-separated words; the paper does not say how it counted.
fn beside_paper(stats: &serde_json::Value) -> Option<serde_json::Value> {
    stats.get("paragraphs_per_judgment")?;
    let num = |v: &serde_json::Value| match v.as_f64() {
        Some(x) if x.fract() == 0.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "—".to_owned(),
    };
    let rows = PAPER_ECTHR
        .iter()
        .map(|(measure, paper, pointer)| {
            let v = stats.pointer(pointer).cloned().unwrap_or_default();
            let here = if measure.ends_with("min–max") {
                format!("{}–{}", num(&v["min"]), num(&v["max"]))
            } else if measure.starts_with("query tokens") {
                format!(
                    "{} / {}",
                    num(&v),
                    num(stats
                        .pointer("/paragraph_tokens/mean")
                        .unwrap_or(&serde_json::Value::Null))
                )
            } else {
                num(&v)
            };
            serde_json::json!({"measure": measure, "here": here, "paper": paper})
        })
        .collect();
    Some(serde_json::Value::Array(rows))
}

/// What differs, per split, between dataset `a` and dataset `b` (names or paths); the flag says
/// whether they are the same (no query or pair added, removed or changed).
pub fn diff_datasets(data: &DataDir, a: &str, b: &str) -> Result<(lexbench_splits::diff::DiffReport, bool)> {
    let d = lexbench_splits::diff::diff(&dataset_path(data, a), &dataset_path(data, b))?;
    let same = d.values().all(|s| {
        s.pairs_added + s.pairs_removed + s.pairs_changed + s.queries_added + s.queries_removed == 0
    });
    Ok((d, same))
}
