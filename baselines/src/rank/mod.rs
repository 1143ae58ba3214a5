//! The retrieval layer: ranking a split of a built dataset into a TREC run and its JSON sidecar under
//! `DATA/runs/<dataset>/<split>/<system>.{trec,json}`, the layout the leaderboard reads.
//!
//! One seam: a retriever is a [`Ranker`] (its settings, model and device in a struct) that turns the
//! split's [`SplitInputs`] into a [`Ranked`] run with its details; [`write_run`] reads the inputs once,
//! ranks, tags the run with the [`RunTarget`]'s system and writes the `.trec` and the [`RunSidecar`]
//! beside it.
//!
//! - [`bm25`]: BM25 ([`crate::sparse`]) over each topic's pool or the whole corpus.
//! - [`dense`]: a zero-shot bi-encoder; [`colbert`]: late interaction (MaxSim); [`cross`]: a
//!   cross-encoder reranking BM25's top candidates; [`neural`]: the details every neural run records
//!   (also written for runs of trained graph models).
//! - [`random`]: a seeded random ranking of each topic's candidates, the floor of a leaderboard.
//! - [`model`]: the three neural rankers behind one type ([`model::NeuralRanker`]), for callers that
//!   choose the kind at run time (the submission harness).
//!
//! [`rank_split`] ranks a split without writing anything (the harness's recheck writes the run
//! where it compares it).
//!
//! Below it: `encoder`, `scorers`, `sparse`; above it: `train`, whose trained models are rankers too.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use lexbench_core::dataset::{CorpusDoc, Dataset, DatasetDir, DatasetManifest, DatasetTopic};
use lexbench_core::run::{SIDECAR_SCHEMA, SidecarHeader};
use lexbench_core::{DocId, Pool, Run, Split, TopicId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub mod bm25;
pub mod cache;
pub mod colbert;
pub mod cross;
pub mod dense;
pub mod model;
pub mod neural;
pub mod random;

/// `DATA/runs/<dataset>/<split>/<system>.trec`; each part must be a name, not a path
/// ([`lexbench_core::check_name`]), so a run is never written outside `DATA/runs`.
pub fn run_path(data: &Path, dataset: &str, split: &str, system: &str) -> Result<PathBuf> {
    Ok(lexbench_core::datadir::DataDir::new(data).run_file(dataset, split, system)?)
}

static BUILD_REVISION: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Records the revision the running program was built from (the `lexbench` binary calls it once at
/// start with what its build script found); [`git_revision`] then returns it.
pub fn set_build_revision(rev: &'static str) {
    let _ = BUILD_REVISION.set(rev);
}

/// The revision of the code that runs: `LEXBENCH_GIT_REV` if set; else the revision the binary was
/// built from ([`set_build_revision`]); else, for a library caller, `git rev-parse HEAD` in the
/// current directory; else `None`. (Before the build revision, a binary of an older revision run
/// inside a newer checkout recorded the checkout's revision, not its own.)
pub fn git_revision() -> Option<String> {
    if let Ok(v) = std::env::var("LEXBENCH_GIT_REV")
        && !v.trim().is_empty()
    {
        return Some(v.trim().to_owned());
    }
    if let Some(rev) = BUILD_REVISION.get() {
        return Some((*rev).to_owned());
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let rev = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !rev.is_empty()).then_some(rev)
}

/// Where a run goes: `DATA/runs/<dataset>/<split>/<system>.{trec,json}`, each name checked
/// ([`lexbench_core::check_name`]) when the target is made, so a run is never written outside
/// `DATA/runs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTarget {
    data: PathBuf,
    dataset: String,
    split: String,
    system: String,
}

impl RunTarget {
    /// The run of `system` over `split` of `DATA/datasets/<dataset>`.
    pub fn new(data: impl Into<PathBuf>, dataset: &str, split: &str, system: &str) -> Result<Self> {
        lexbench_core::check_name("dataset name", dataset)?;
        lexbench_core::check_name("split name", split)?;
        lexbench_core::check_name("system name", system)?;
        Ok(Self {
            data: data.into(),
            dataset: dataset.to_owned(),
            split: split.to_owned(),
            system: system.to_owned(),
        })
    }

    /// The data directory.
    pub fn data(&self) -> &Path {
        &self.data
    }

    /// The dataset's name.
    pub fn dataset(&self) -> &str {
        &self.dataset
    }

    /// The split's name.
    pub fn split(&self) -> &str {
        &self.split
    }

    /// The system's name: the run's tag and file stem.
    pub fn system(&self) -> &str {
        &self.system
    }

    /// `DATA/runs/<dataset>/<split>/<system>.trec`.
    pub fn run_file(&self) -> Result<PathBuf> {
        run_path(&self.data, &self.dataset, &self.split, &self.system)
    }
}

/// A progress bar of `len` `units` on standard error when it is a terminal and `show` holds (hidden
/// otherwise): `WHAT [====>     ] done/len UNITS (elapsed / eta)`.
pub(crate) fn progress_bar(len: usize, what: &str, units: &str, show: bool) -> indicatif::ProgressBar {
    if !show || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len as u64);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what} [{{bar:30}}] {{pos}}/{{len}} {units} ({{elapsed}} / {{eta}})"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    b
}

/// A split of a built dataset as every ranker sees it: the manifest, the split's topics (in the
/// split's order) with their texts, the corpus and the pools, read once and checked
/// ([`Dataset::open`] verifies the manifest).
#[derive(Debug, Clone)]
pub struct SplitInputs {
    /// The data directory it was read from.
    pub data: PathBuf,
    /// The dataset's name.
    pub dataset: String,
    /// `DATA/datasets/<dataset>`.
    pub dir: DatasetDir,
    /// The split's name.
    pub split: String,
    /// The dataset's manifest.
    pub manifest: DatasetManifest,
    /// The split's topics, in the split's order.
    pub topics: Vec<DatasetTopic>,
    /// The corpus.
    pub corpus: Vec<CorpusDoc>,
    /// Pools by topic (`pools.jsonl`), or `None` when every topic ranks the whole corpus.
    pub pools: Option<BTreeMap<TopicId, Pool>>,
    /// What its topics rank ([`Dataset::task`]).
    pub task: lexbench_core::Task,
    /// Doc id → index in `corpus`.
    by_doc: HashMap<DocId, usize>,
}

impl SplitInputs {
    /// Reads `split` of `DATA/datasets/<dataset>`.
    pub fn read(data: &Path, dataset: &str, split: &str) -> Result<Self> {
        lexbench_core::check_name("split name", split)?;
        let dir = DatasetDir::in_data(data, dataset)?;
        let ds = Dataset::open(dir.clone())?;
        let split_rec: Split = ds.split(split)?;
        let split_path = dir.split(split);
        let all: Vec<DatasetTopic> = ds.topics()?;
        let by_topic: BTreeMap<&TopicId, &DatasetTopic> = all.iter().map(|t| (&t.topic, t)).collect();
        let mut topics = Vec::with_capacity(split_rec.topics.len());
        for t in &split_rec.topics {
            let rec = by_topic.get(t).ok_or_else(|| Error::Format {
                path: split_path.clone(),
                message: format!("topic {t} is not in queries.jsonl"),
            })?;
            topics.push((*rec).clone());
        }
        let corpus: Vec<CorpusDoc> = ds.corpus()?;
        let task = ds.task()?;
        let pools = ds
            .pools()?
            .map(|list| list.into_iter().map(|p| (p.topic.clone(), p)).collect());
        let by_doc = corpus
            .iter()
            .enumerate()
            .map(|(i, d)| (d.doc.clone(), i))
            .collect();
        Ok(Self {
            data: data.to_owned(),
            dataset: dataset.to_owned(),
            manifest: ds.manifest().clone(),
            dir,
            split: split.to_owned(),
            topics,
            corpus,
            pools,
            task,
            by_doc,
        })
    }

    /// Whether topics rank their pools (`pools.jsonl`) rather than the whole corpus.
    pub fn pooled(&self) -> bool {
        self.pools.is_some()
    }

    /// The corpus index of `doc`, if it is in the corpus.
    pub fn doc_index(&self, doc: &DocId) -> Option<usize> {
        self.by_doc.get(doc).copied()
    }

    /// The text of `doc`, a candidate from the pools (or the corpus): a document missing from
    /// `corpus.jsonl` is an error naming it and `pools.jsonl`.
    pub fn text(&self, doc: &DocId) -> Result<&str> {
        let listed_in = if self.pooled() {
            self.dir.pools()
        } else {
            self.dir.corpus()
        };
        self.text_listed_in(doc, &listed_in)
    }

    /// The text of `doc`, listed in the file `listed_in` (a pool, a first-stage run): a document
    /// missing from `corpus.jsonl` is an error naming it and that file.
    pub fn text_listed_in(&self, doc: &DocId, listed_in: &Path) -> Result<&str> {
        match self.doc_index(doc) {
            Some(i) => Ok(self.corpus[i].text.as_str()),
            None => Err(Error::Format {
                path: listed_in.to_owned(),
                message: format!("{doc} is listed here but has no text in corpus.jsonl"),
            }),
        }
    }

    /// The pool of `topic`, or `None` when the dataset is not pooled; a pooled dataset's topic
    /// without a pool is an error naming `pools.jsonl`.
    pub fn pool(&self, topic: &TopicId) -> Result<Option<&Pool>> {
        match &self.pools {
            None => Ok(None),
            Some(pools) => pools.get(topic).map(Some).ok_or_else(|| Error::Format {
                path: self.dir.pools(),
                message: format!("topic {topic} has no pool"),
            }),
        }
    }

    /// The candidates of `topic`: its pool, or the whole corpus when the dataset is not pooled.
    pub fn candidates(&self, topic: &TopicId) -> Result<Vec<&DocId>> {
        Ok(match self.pool(topic)? {
            Some(pool) => pool.docs.iter().collect(),
            None => self.corpus.iter().map(|d| &d.doc).collect(),
        })
    }
}

/// What a [`Ranker`] returns: the run (its tag is set by [`write_run`]), what the sidecar records of
/// the ranker, and wall-clock seconds per phase (`<phase>_s`).
#[derive(Debug, Clone)]
pub struct Ranked<D> {
    /// Hits per topic.
    pub run: Run,
    /// The ranker's own sidecar fields (flattened into [`RunSidecar`]).
    pub details: D,
    /// Seconds per phase.
    pub timings: BTreeMap<String, f64>,
}

/// A retriever: ranks each topic of a split. It holds its settings, model and device; [`write_run`]
/// does the reading and writing.
pub trait Ranker {
    /// What its sidecar records besides the common fields (settings, model, index facts).
    type Details: Serialize;

    /// The seed recorded in the sidecar (0 for a deterministic ranker).
    fn seed(&self) -> u64;

    /// Ranks every topic of `inputs`.
    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<Self::Details>>;
}

/// The JSON sidecar written beside every run: what produced it, on which data, how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSidecar<D> {
    /// System, dataset, split, its version, the ranker's seed, revision, program.
    #[serde(flatten)]
    pub header: SidecarHeader,
    /// The ranker's own fields.
    #[serde(flatten)]
    pub details: D,
    /// Whether topics ranked their pools (`pools.jsonl`) or the whole corpus.
    pub pooled: bool,
    /// Topics ranked.
    pub topics: usize,
    /// Hits written.
    pub hits: usize,
    /// Wall-clock seconds per phase: `read_s` and `write_s` (the writer's), the ranker's own.
    pub timings: BTreeMap<String, f64>,
}

/// What [`write_run`] wrote.
#[derive(Debug, Clone)]
pub struct RunOutput<D> {
    /// `DATA/runs/<dataset>/<split>/<system>.trec`.
    pub run_path: PathBuf,
    /// The sidecar beside it (`.json`).
    pub sidecar_path: PathBuf,
    /// The sidecar's content.
    pub sidecar: RunSidecar<D>,
}

/// The program recorded in every sidecar.
pub fn program() -> String {
    format!("lexbench-baselines {}", env!("CARGO_PKG_VERSION"))
}

/// Reads the split of `target` once and ranks it with `ranker`, the run tagged with the target's
/// system, writing nothing: what [`write_run`] would write in its `.trec`.
pub fn rank_split<R: Ranker>(ranker: &mut R, target: &RunTarget) -> Result<Ranked<R::Details>> {
    let inputs = SplitInputs::read(&target.data, &target.dataset, &target.split)?;
    let mut ranked = ranker.rank(&inputs)?;
    check_finite_scores(&ranked.run, &target.system)?;
    ranked.run.tag = target.system.clone();
    Ok(ranked)
}

/// Refuses a run holding a NaN or an infinite score: a ranking by such scores means nothing, and
/// it must not be written or recorded (issue 54, item 4). The error names the system, the topic and
/// the document.
pub fn check_finite_scores(run: &Run, system: &str) -> Result<()> {
    for (topic, hits) in &run.topics {
        if let Some(h) = hits.iter().find(|h| !h.score.is_finite()) {
            return Err(Error::data(
                format!("the {system} run"),
                format!(
                    "topic {topic}, document {}: the score is {} (the model gave a non-finite score); nothing was written",
                    h.doc, h.score
                ),
            ));
        }
    }
    Ok(())
}

/// Reads the split of `target` once, ranks it with `ranker`, tags the run with the target's system and
/// writes `DATA/runs/<dataset>/<split>/<system>.trec` and its sidecar (`.json`).
pub fn write_run<R: Ranker>(ranker: &mut R, target: &RunTarget) -> Result<RunOutput<R::Details>> {
    let t0 = Instant::now();
    let inputs = SplitInputs::read(&target.data, &target.dataset, &target.split)?;
    let read_s = t0.elapsed().as_secs_f64();
    let Ranked {
        mut run,
        details,
        mut timings,
    } = ranker.rank(&inputs)?;
    check_finite_scores(&run, &target.system)?;
    run.tag = target.system.clone();
    let t1 = Instant::now();
    let run_path = target.run_file()?;
    run.write(&run_path)?;
    timings.insert("read_s".to_owned(), read_s);
    timings.insert("write_s".to_owned(), t1.elapsed().as_secs_f64());
    let sidecar = RunSidecar {
        header: SidecarHeader {
            schema_version: SIDECAR_SCHEMA,
            system: target.system.clone(),
            dataset: target.dataset.clone(),
            split: target.split.clone(),
            dataset_hash: inputs.manifest.dataset_hash(),
            seed: ranker.seed(),
            git_revision: git_revision(),
            program: Some(program()),
            invocation: lexbench_core::run::invocation(),
        },
        details,
        pooled: inputs.pooled(),
        topics: run.topics.len(),
        hits: run.len(),
        timings,
    };
    let sidecar_path = run_path.with_extension("json");
    lexbench_core::io::write_json_pretty(&sidecar_path, &sidecar)?;
    Ok(RunOutput {
        run_path,
        sidecar_path,
        sidecar,
    })
}

#[cfg(test)]
mod tests {
    //! Properties: [`write_run`] reads the split once, tags the run with the target's system whatever
    //! the ranker called it, and writes a sidecar whose header names the system, dataset, split,
    //! dataset hash, the ranker's seed and the program, with the writer's and the ranker's timings;
    //! a target refuses names that are paths; a candidate without text and a pooled topic without a
    //! pool are errors naming the document or topic and the file.

    use std::path::PathBuf;

    use lexbench_core::trec::Hit;
    use lexbench_core::{ReadOptions, Run};

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-rank-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `DATA/datasets/mini`: three paragraphs; topic `q1/001-1` pools `001-1:1`, `001-1:2` and
    /// `extra`; topic `q1/001-2` (in split `nopool`) has no pool.
    fn mini(data: &Path, extra: &str) -> DatasetManifest {
        let ds = data.join("datasets/mini");
        std::fs::create_dir_all(ds.join("splits")).unwrap();
        let corpus = [
            ("001-1:1", "The applicant complained of torture"),
            ("001-1:2", "The Government contested the complaint"),
            ("001-2:1", "Prison conditions were examined"),
        ]
        .map(|(d, t)| serde_json::json!({"doc": d, "text": t}).to_string());
        std::fs::write(ds.join("corpus.jsonl"), corpus.join("\n") + "\n").unwrap();
        let topics = ["q1/001-1", "q1/001-2"]
            .map(|t| serde_json::json!({"topic": t, "query": "q1", "text": "torture"}).to_string());
        std::fs::write(ds.join("queries.jsonl"), topics.join("\n") + "\n").unwrap();
        let pool = serde_json::json!({"topic": "q1/001-1", "docs": ["001-1:1", "001-1:2", extra]});
        std::fs::write(ds.join("pools.jsonl"), format!("{pool}\n")).unwrap();
        for (name, topic) in [("test", "q1/001-1"), ("nopool", "q1/001-2")] {
            let split = serde_json::json!({"dataset": "mini", "name": name, "topics": [topic]});
            std::fs::write(ds.join(format!("splits/{name}.json")), split.to_string()).unwrap();
        }
        DatasetManifest::write_for(&ds, "mini", "test").unwrap()
    }

    /// Scores each candidate by its position; calls its run `internal`.
    struct Stub;

    #[derive(Debug, Serialize)]
    struct StubDetails {
        note: &'static str,
    }

    impl Ranker for Stub {
        type Details = StubDetails;

        fn seed(&self) -> u64 {
            7
        }

        fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<StubDetails>> {
            let mut run = Run::new("internal");
            for t in &inputs.topics {
                let cands = inputs.candidates(&t.topic)?;
                let n = cands.len();
                let hits = cands
                    .into_iter()
                    .enumerate()
                    .map(|(i, d)| Hit {
                        doc: d.clone(),
                        score: (n - i) as f64,
                    })
                    .collect();
                run.topics.insert(t.topic.clone(), hits);
            }
            Ok(Ranked {
                run,
                details: StubDetails { note: "stub" },
                timings: [("rank_s".to_owned(), 0.0)].into(),
            })
        }
    }

    /// [`Stub`], with a NaN or an infinite score for the second candidate of each topic.
    struct NonFinite(f64);

    impl Ranker for NonFinite {
        type Details = StubDetails;

        fn seed(&self) -> u64 {
            7
        }

        fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<StubDetails>> {
            let mut ranked = Stub.rank(inputs)?;
            for hits in ranked.run.topics.values_mut() {
                hits[1].score = self.0;
            }
            Ok(ranked)
        }
    }

    /// Issue 54, item 4: a NaN or infinite score is an error naming the system, topic and
    /// document; no run file is written.
    #[test]
    fn non_finite_scores_are_refused_and_not_written() {
        let data = scratch("nan");
        mini(&data, "001-2:1");
        for (v, shown) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            let target = RunTarget::new(&data, "mini", "test", "nan-run").unwrap();
            let e = write_run(&mut NonFinite(v), &target).unwrap_err().to_string();
            assert!(
                e.contains("the nan-run run")
                    && e.contains("topic q1/001-1, document 001-1:2")
                    && e.contains(&format!("the score is {shown}")),
                "{e}"
            );
            assert!(!data.join("runs/mini/test/nan-run.trec").exists());
            assert!(!data.join("runs/mini/test/nan-run.json").exists());
            let Err(e) = rank_split(&mut NonFinite(v), &target) else {
                panic!("a run with a {shown} score was accepted");
            };
            assert!(e.to_string().contains("non-finite score"), "{e}");
        }
    }

    #[test]
    fn the_writer_tags_the_run_and_writes_the_sidecar_header() {
        let data = scratch("writer");
        let manifest = mini(&data, "001-2:1");
        let target = RunTarget::new(&data, "mini", "test", "stub-run").unwrap();
        let out = write_run(&mut Stub, &target).unwrap();
        assert_eq!(out.run_path, data.join("runs/mini/test/stub-run.trec"));
        assert_eq!(out.sidecar_path, data.join("runs/mini/test/stub-run.json"));
        let run = Run::read(&out.run_path, &ReadOptions::default()).unwrap();
        assert_eq!(run.tag, "stub-run", "the target's system, not the ranker's name");
        assert_eq!(run.len(), 3);

        let side: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out.sidecar_path).unwrap()).unwrap();
        let header: SidecarHeader = serde_json::from_value(side.clone()).unwrap();
        assert_eq!(header.schema_version, SIDECAR_SCHEMA);
        assert_eq!(
            (
                header.system.as_str(),
                header.dataset.as_str(),
                header.split.as_str()
            ),
            ("stub-run", "mini", "test")
        );
        assert_eq!(header.dataset_hash, manifest.dataset_hash());
        assert_eq!(header.seed, 7, "the ranker's seed");
        assert_eq!(header.program, Some(program()));
        assert_eq!(header, out.sidecar.header);
        let claims = lexbench_core::run::SidecarClaims::of(&side);
        assert_eq!(claims.system.as_deref(), Some("stub-run"));
        assert_eq!(side["note"], "stub", "details are flattened");
        assert_eq!(
            (
                side["pooled"].as_bool(),
                side["topics"].as_u64(),
                side["hits"].as_u64()
            ),
            (Some(true), Some(1), Some(3))
        );
        for phase in ["read_s", "rank_s", "write_s"] {
            assert!(side["timings"][phase].as_f64().is_some(), "{phase}");
        }
    }

    #[test]
    fn a_target_refuses_paths() {
        for (dataset, split, system) in [
            ("../x", "test", "s"),
            ("mini", "a/b", "s"),
            ("mini", "test", ".."),
        ] {
            assert!(
                RunTarget::new("/data", dataset, split, system).is_err(),
                "{dataset} {split} {system}"
            );
        }
    }

    #[test]
    fn a_candidate_without_text_is_named_with_its_file() {
        let data = scratch("no-text");
        mini(&data, "ghost:1");
        let inputs = SplitInputs::read(&data, "mini", "test").unwrap();
        let ghost = DocId::new("ghost:1").unwrap();
        let err = inputs.text(&ghost).unwrap_err().to_string();
        assert!(err.contains("ghost:1") && err.contains("pools.jsonl"), "{err}");
        let run = data.join("runs/mini/test/bm25.trec");
        let err = inputs.text_listed_in(&ghost, &run).unwrap_err().to_string();
        assert!(err.contains("ghost:1") && err.contains("bm25.trec"), "{err}");
        let known = DocId::new("001-1:2").unwrap();
        assert_eq!(
            inputs.text(&known).unwrap(),
            "The Government contested the complaint"
        );
    }

    #[test]
    fn a_pooled_topic_without_a_pool_is_an_error() {
        let data = scratch("no-pool");
        mini(&data, "001-2:1");
        let inputs = SplitInputs::read(&data, "mini", "nopool").unwrap();
        let topic = &inputs.topics[0].topic;
        let err = inputs.candidates(topic).unwrap_err().to_string();
        assert!(err.contains("q1/001-2") && err.contains("pools.jsonl"), "{err}");
        let err = write_run(
            &mut Stub,
            &RunTarget::new(&data, "mini", "nopool", "stub").unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("has no pool"), "{err}");
    }
}
