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
use lexbench_splits::release::read_release;
use lexbench_splits::settings::{SplitConfig, assign};
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
            for f in lexbench_crawlers::bsard::BSARD_FILES {
                let p = dir.join(f);
                if p.is_file() {
                    out.insert((*f).to_owned(), (p.clone(), lexbench_core::text::read_text(&p)?));
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
    let assignment = assign(&pairs, &cfg)?;
    let dir = data.dataset(&options.name)?.0;
    let sources = format!(
        "{} parsed guides and {} parsed judgments (DATA/parsed/ecthr, from the raw store DATA/raw)",
        guides.len(),
        judgments.len()
    );
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
            notes: &[options.labels.card_line().to_owned()],
        },
    )?;
    Ok(EcthrBuild {
        built: Built { written, dir },
        assembly,
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
    let sources = format!("the published release in {}", release.display());
    write_relabelled(data, name, &r.pairs, &r.assignment, &judgments, &sources, &[])
}

/// What [`import_release_texts`] left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Release pairs whose judgment has no `<itemid>.txt` in the text folder.
    pub no_text: usize,
    /// Release pairs whose judgment's text did not parse, with the first judgments and why.
    pub unparsed: usize,
    /// `(itemid, reason)` of every judgment left out, in itemid order.
    pub judgments: Vec<(ItemId, String)>,
}

/// Imports the published release with judgment texts from `texts` (`<itemid>.txt`, one printed
/// paragraph per line, or any format `lexbench parse judgment` reads under `<itemid>.docx|html`):
/// pairs whose judgment has no readable text are left out (counted in [`Dropped`] and on the card);
/// every relevant paragraph of a kept pair must be in its judgment's parsed paragraphs, or the
/// import fails naming the pair, the paragraph and the file.
pub fn import_release_texts(
    data: &DataDir,
    release: &Path,
    texts: &Path,
    name: &str,
) -> Result<(Relabelled, Dropped)> {
    let r = read_release(release)?;
    if !texts.is_dir() {
        anyhow::bail!(
            "{}: no such folder (the judgment texts, <itemid>.txt)",
            texts.display()
        );
    }
    let items: std::collections::BTreeSet<&ItemId> = r.pairs.iter().map(|p| &p.item).collect();
    let mut judgments = BTreeMap::new();
    let mut missing: BTreeMap<ItemId, (bool, String)> = BTreeMap::new();
    let mut files: BTreeMap<ItemId, PathBuf> = BTreeMap::new();
    for item in items {
        let Some(path) = ["txt", "docx", "html"]
            .iter()
            .map(|ext| texts.join(format!("{item}.{ext}")))
            .find(|p| p.is_file())
        else {
            missing.insert(item.clone(), (true, "no text file".into()));
            continue;
        };
        let bytes = lexbench_parsers::judgment::read_file(&path)?;
        let source = path.display().to_string();
        match lexbench_parsers::judgment::parse(&bytes, &source, Some(item.clone())) {
            Ok(j) => {
                judgments.insert(item.clone(), j);
                files.insert(item.clone(), path);
            }
            Err(e) => {
                missing.insert(item.clone(), (false, format!("{}: {e}", path.display())));
            }
        }
    }
    // Keep the pairs with a judgment; every relevant paragraph must be one of its paragraphs.
    let mut kept = Vec::new();
    let mut new_index = vec![None; r.pairs.len()];
    let mut dropped = Dropped::default();
    for (i, pair) in r.pairs.iter().enumerate() {
        let Some(j) = judgments.get(&pair.item) else {
            match missing.get(&pair.item) {
                Some((true, _)) => dropped.no_text += 1,
                _ => dropped.unparsed += 1,
            }
            continue;
        };
        let nums: std::collections::BTreeSet<u32> = j.paragraphs.iter().map(|p| p.num).collect();
        if let Some(bad) = pair.relevant.iter().find(|n| !nums.contains(n)) {
            anyhow::bail!(
                "{}: the release marks paragraph {bad} of {} relevant to {:?} (topic {}), but the parsed \
                 text has no paragraph {bad} (it has {} paragraphs)",
                files[&pair.item].display(),
                pair.item,
                pair.text,
                pair.topic(),
                nums.len()
            );
        }
        new_index[i] = Some(kept.len());
        kept.push(pair.clone());
    }
    if kept.is_empty() {
        let why = missing
            .values()
            .next()
            .map_or(String::new(), |(_, w)| format!(" (first: {w})"));
        anyhow::bail!(
            "{}: no judgment of the release's {} pairs has a readable text there{why}",
            texts.display(),
            r.pairs.len()
        );
    }
    dropped.judgments = missing.into_iter().map(|(i, (_, why))| (i, why)).collect();
    let assignment = r
        .assignment
        .iter()
        .map(|(split, idx)| (split.clone(), idx.iter().filter_map(|&i| new_index[i]).collect()))
        .collect();
    let mut notes = vec![format!(
        "{} of the release's {} pairs have their judgment's text in {} ({} judgments parsed); {} \
         pairs left out: {} with no text file, {} whose text did not parse.",
        kept.len(),
        r.pairs.len(),
        texts.display(),
        judgments.len(),
        dropped.no_text + dropped.unparsed,
        dropped.no_text,
        dropped.unparsed
    )];
    notes.extend(
        dropped
            .judgments
            .iter()
            .filter(|(_, why)| why != "no text file")
            .map(|(item, why)| format!("left out {item}: {why}")),
    );
    let sources = format!(
        "the published release in {}, judgment texts from {}",
        release.display(),
        texts.display()
    );
    let out = write_relabelled(data, name, &kept, &assignment, &judgments, &sources, &notes)?;
    Ok((out, dropped))
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
    let dir = data.dataset(name)?.0;
    let written = write_dataset(
        &dir,
        &BuildInput {
            name,
            pairs,
            assignment,
            judgments,
            config: None,
            assembly: None,
            sources,
            plots: false,
            notes,
        },
    )?;
    Ok(Relabelled {
        built: Built { written, dir },
        pairs: pairs.len(),
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
    let assignment = assign(&pairs, &cfg)?;
    // A dataset given as a path (a folder outside the data directory) names the new one by its
    // folder's name: the path itself is not a name.
    let stem = from
        .0
        .file_name()
        .map_or_else(|| options.dataset.clone(), |n| n.to_string_lossy().into_owned());
    let name = options.name.clone().unwrap_or_else(|| format!("{stem}-split"));
    let judgments = load_judgments(data, false)?;
    let dir = data.dataset(&name)?.0;
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
            notes: &[],
        },
    )?;
    Ok(Relabelled {
        built: Built { written, dir },
        pairs: pairs.len(),
        seed: Some(cfg.seed),
    })
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
/// `{"dataset", "version", "stats", "certificate": {"passed", "shared_judgments"}}`. The dataset is
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
    if dir.join("certificate.json").exists() {
        let c = read("certificate.json")?;
        out["certificate"] =
            serde_json::json!({"passed": c["passed"], "shared_judgments": c["shared_judgments"]});
    }
    Ok(out)
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
