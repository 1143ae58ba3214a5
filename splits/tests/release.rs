//! The split builder and certificate on the published release.
//!
//! Properties checked:
//! - the release reads as 4,139 rows → pairs, with its splits' documented sizes;
//! - the release's own splits pass the certificate (no query crosses into its unseen settings);
//! - run on the release's pairs with the release's held-out guides, the builder reproduces the
//!   unseen-guide setting exactly (404 pairs) and the other settings near the configured shares, with
//!   no test judgment in training;
//! - a deliberately leaked split (an unseen-query pair moved into training, a held-out guide's pair
//!   moved into test) fails the certificate, and `write_dataset` refuses to write it;
//! - building twice from the same inputs gives byte-identical files, and every qrel of the built
//!   dataset walks back to a release row naming its guide.

use std::collections::{BTreeMap, BTreeSet};

use lexbench_core::dataset::{DatasetDir, DatasetManifest};
use lexbench_core::{Qrels, ReadOptions, testing::fixtures_dir};
use lexbench_splits::pairs::{QrelSource, fold};
use lexbench_splits::release::{Release, read_release};
use lexbench_splits::settings::{SeenQueries, SplitConfig, assign, certify};
use lexbench_splits::write::{BuildInput, write_dataset};

fn release() -> Release {
    read_release(&fixtures_dir().join("tum_release")).expect("the release reads")
}

fn size(r: &Release, split: &str) -> usize {
    r.assignment.get(split).map_or(0, Vec::len)
}

#[test]
fn the_release_reads_with_its_documented_sizes() {
    let r = release();
    // DATA.md §3: training 2243, validation 306, testing 486, unseen_article 700, unseen 404 rows.
    let rows: usize = ["train", "val", "test", "unseen_query", "unseen_guide"]
        .iter()
        .map(|s| size(&r, s))
        .sum::<usize>()
        + r.merged_rows;
    assert_eq!(rows, 4139);
    assert_eq!(r.merged_rows, 0, "no row repeats a (split, query, judgment)");
    assert_eq!(size(&r, "unseen_guide"), 404);
    assert_eq!(size(&r, "unseen_query"), 700);
    let queries: BTreeSet<&str> = r.pairs.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(queries.len(), 712);
    let guides: BTreeSet<_> = r.pairs.iter().map(|p| &p.guide).collect();
    assert_eq!(guides.len(), 28);
    let cert = certify(&r.pairs, &r.assignment);
    assert!(cert.passed, "{:#?}", cert.checks);
    // The release does share judgments between training and test; the certificate lists it.
    assert!(cert.shared_judgments["train∩test"] > 0);
}

#[test]
fn the_builder_reproduces_the_release_unseen_guide_setting() {
    let r = release();
    let cfg = SplitConfig::default();
    let a = assign(&r.pairs, &cfg).unwrap();
    assert_eq!(
        a["unseen_guide"].len(),
        404,
        "the release's unseen-guide setting has 404 pairs"
    );
    let release_unseen: BTreeSet<usize> = r.assignment["unseen_guide"].iter().copied().collect();
    let ours: BTreeSet<usize> = a["unseen_guide"].iter().copied().collect();
    assert_eq!(ours, release_unseen, "the same pairs, not only the same number");
    let cert = certify(&r.pairs, &a);
    assert!(cert.passed, "{:#?}", cert.checks);
    assert_eq!(cert.shared_judgments["train∩test"], 0, "test judgments are new");
    assert_eq!(cert.shared_judgments["train∩val"], 0);
    let sizes: Vec<(&str, usize)> = ["train", "val", "test", "unseen_query", "unseen_guide"]
        .iter()
        .map(|s| (*s, a[*s].len()))
        .collect();
    eprintln!(
        "split sizes from the release's pairs, seed {}: {sizes:?}",
        cfg.seed
    );
    // The other settings land near the configured shares of the 3,735 seen-guide pairs.
    let seen = r.pairs.len() - 404;
    let uq = a["unseen_query"].len() as f64 / seen as f64;
    assert!(
        (uq - cfg.unseen_query_share).abs() < 0.02,
        "unseen-query share {uq:.3}"
    );
    let rest = (seen - a["unseen_query"].len()) as f64;
    let test = a["test"].len() as f64 / rest;
    assert!((test - cfg.test_share).abs() < 0.02, "test share {test:.3}");
    // Determinism: same seed, same splits; another seed, other splits.
    assert_eq!(assign(&r.pairs, &cfg).unwrap(), a);
    let other = assign(&r.pairs, &SplitConfig { seed: 7, ..cfg }).unwrap();
    assert_ne!(other["test"], a["test"]);
}

#[test]
fn a_leaked_split_fails_the_certificate_and_is_not_written() {
    let r = release();
    let mut a = r.assignment.clone();
    // Move one unseen-query pair into training, and one held-out guide's pair into test.
    let leaked = a.get_mut("unseen_query").unwrap().pop().unwrap();
    a.get_mut("train").unwrap().push(leaked);
    let held = a.get_mut("unseen_guide").unwrap().pop().unwrap();
    a.get_mut("test").unwrap().push(held);
    let cert = certify(&r.pairs, &a);
    assert!(!cert.passed);
    let failed: Vec<&str> = cert
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name.as_str())
        .collect();
    assert!(
        failed.contains(&"no held-out guide appears outside unseen_guide"),
        "{failed:?}"
    );

    // A query whose text differs only in whitespace and case from a training query also leaks.
    let mut pairs = r.pairs.clone();
    let mut a2 = r.assignment.clone();
    let train0 = a2["train"][0];
    let uq0 = a2["unseen_query"][0];
    pairs[uq0].text = format!("  {}  ", pairs[train0].text.to_uppercase());
    assert_eq!(fold(&pairs[uq0].text), fold(&pairs[train0].text));
    let cert = certify(&pairs, &a2);
    assert!(!cert.passed, "folded texts must be caught");
    a2.get_mut("unseen_query").unwrap().retain(|&i| i != uq0);
    a2.get_mut("train").unwrap().push(uq0);

    let dir = lexbench_core::testing::scratch_root().join(format!("lexbench-leak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let judgments = BTreeMap::new();
    let input = BuildInput {
        name: "leaky",
        pairs: &r.pairs,
        assignment: &a,
        judgments: &judgments,
        config: None,
        assembly: None,
        sources: "test",
        plots: false,
        notes: &[],
    };
    let err = write_dataset(&dir, &input).unwrap_err();
    assert!(err.to_string().contains("certificate failed"), "{err}");
    assert!(!dir.exists(), "nothing is written for a leaking split");
}

#[test]
fn builds_are_byte_identical_and_every_qrel_has_provenance() {
    let r = release();
    let cfg = SplitConfig::default();
    let a = assign(&r.pairs, &cfg).unwrap();
    let judgments = BTreeMap::new();
    let input = BuildInput {
        name: "ecthr-release-resplit",
        pairs: &r.pairs,
        assignment: &a,
        judgments: &judgments,
        config: Some(&cfg),
        assembly: None,
        sources: "the published release (tum_release/*.jsonl)",
        plots: true,
        notes: &[],
    };
    let base = lexbench_core::testing::scratch_root().join(format!("lexbench-twice-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let one = write_dataset(&base.join("one"), &input).unwrap();
    let two = write_dataset(&base.join("two"), &input).unwrap();
    assert_eq!(one.manifest.files, two.manifest.files);
    assert_eq!(one.manifest.extras, two.manifest.extras);
    assert!(one.manifest.files.contains_key("pairs.parquet"));
    // Plots are verified but not part of the dataset's identity.
    for f in ["plots/query_tokens.svg", "plots/relevant_share.svg"] {
        assert!(one.manifest.extras.contains_key(f), "{f} missing");
        assert!(!one.manifest.files.contains_key(f), "{f} in the identity");
    }
    for rel in one.manifest.files.keys().chain(one.manifest.extras.keys()) {
        assert_eq!(
            std::fs::read(base.join("one").join(rel)).unwrap(),
            std::fs::read(base.join("two").join(rel)).unwrap(),
            "{rel}"
        );
    }
    // Rebuilding over an existing dataset replaces it whole.
    let again = write_dataset(&base.join("one"), &input).unwrap();
    assert_eq!(again.manifest.dataset_hash(), one.manifest.dataset_hash());
    assert!(
        DatasetManifest::read(&base.join("one"))
            .unwrap()
            .verify(&base.join("one"))
            .unwrap()
            .is_empty()
    );

    // Provenance: every qrel of every split is backed by an audit record naming its guide and the
    // release row it came from, and that row holds the qrel's judgment and paragraph.
    let dir = DatasetDir(base.join("one"));
    let audit: Vec<QrelSource> = lexbench_core::io::read_jsonl(&dir.0.join("audit.jsonl")).unwrap();
    let mut by_qrel: BTreeMap<(String, u32), Vec<&QrelSource>> = BTreeMap::new();
    for s in &audit {
        by_qrel
            .entry((s.topic.to_string(), s.paragraph))
            .or_default()
            .push(s);
    }
    let rows = release_rows();
    let mut checked = 0;
    for split in dir.split_names().unwrap() {
        let qrels = match Qrels::read(&dir.qrels(&split), &ReadOptions::default()) {
            Ok(q) => q,
            Err(lexbench_core::Error::Empty { .. }) => continue,
            Err(e) => panic!("{e}"),
        };
        for (topic, docs) in &qrels.topics {
            for doc in docs.keys() {
                let num: u32 = doc.as_str().rsplit(':').next().unwrap().parse().unwrap();
                let sources = by_qrel
                    .get(&(topic.to_string(), num))
                    .unwrap_or_else(|| panic!("{topic} {doc}"));
                for s in sources {
                    assert!(s.guide.as_str().starts_with("guide_"));
                    let row = &rows[s.release_row.as_ref().unwrap()];
                    assert_eq!(row.0, s.item.to_string());
                    assert!(row.1.contains(&num));
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 5000, "{checked} qrels walked");
}

/// `file:line` → (judgment id, paragraphs) of every release row.
fn release_rows() -> BTreeMap<String, (String, Vec<u32>)> {
    let mut out = BTreeMap::new();
    for f in ["training", "validation", "testing", "unseen_article", "unseen"] {
        let text = std::fs::read_to_string(fixtures_dir().join(format!("tum_release/{f}.jsonl"))).unwrap();
        for (i, line) in text.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let paras = v["paragraphs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_u64().unwrap() as u32)
                .collect();
            out.insert(
                format!("{f}.jsonl:{}", i + 1),
                (v["judgment_id"].as_str().unwrap().to_owned(), paras),
            );
        }
    }
    out
}

/// Issue 29, item 7: a held-out guide that no pair comes from (a typo) is an error naming it, not
/// an empty unseen-guide setting that the certificate passes.
#[test]
fn an_unknown_held_out_guide_is_an_error() {
    let r = release();
    let cfg = SplitConfig {
        unseen_guides: vec![
            lexbench_core::GuideId::new("guide_art_3_eng").unwrap(),
            lexbench_core::GuideId::new("guide_typo").unwrap(),
        ],
        ..SplitConfig::default()
    };
    let err = assign(&r.pairs, &cfg).unwrap_err().to_string();
    assert!(err.contains("guide_typo"), "{err}");
    let named = err.split("; the guides with pairs").next().unwrap();
    assert!(
        !named.contains("guide_art_3_eng"),
        "only the unknown one is named: {err}"
    );
    assert!(
        err.contains("the guides with pairs are: guide_"),
        "the guides with pairs are listed: {err}"
    );
}

/// The distinct queries of `split` and how many occur (folded) in `train`, counted here directly.
fn seen_in_training(
    pairs: &[lexbench_splits::pairs::Pair],
    a: &BTreeMap<String, Vec<usize>>,
    split: &str,
) -> (usize, usize) {
    let trained: BTreeSet<String> = a["train"].iter().map(|&i| fold(&pairs[i].text)).collect();
    let mut queries: BTreeMap<&str, bool> = BTreeMap::new();
    for &i in &a[split] {
        *queries.entry(pairs[i].query.as_str()).or_default() |= trained.contains(&fold(&pairs[i].text));
    }
    (queries.len(), queries.values().filter(|s| **s).count())
}

/// Issue 31, item 6: "seen query" means seen. The release's own seen setting evaluates queries the
/// model trained on (242 of its 257 test queries); splits lexbench builds keep every test and
/// validation query in training while still splitting by judgment, the certificate counts it, and
/// a split where a test query is moved out of training fails the check.
#[test]
fn seen_setting_queries_occur_in_training() {
    let r = release();
    let cert = certify(&r.pairs, &r.assignment);
    let test = &cert.seen_queries["test"];
    assert_eq!(
        (test.queries, test.in_training),
        seen_in_training(&r.pairs, &r.assignment, "test")
    );
    assert_eq!(
        (test.queries, test.in_training),
        (257, 242),
        "the release's figure"
    );
    assert!(cert.passed, "imported splits are counted, not required");

    // Unconstrained (the splits before this option), random judgments leave queries unseen.
    let off = assign(
        &r.pairs,
        &SplitConfig {
            seen_queries: SeenQueries::Off,
            ..SplitConfig::default()
        },
    )
    .unwrap();
    let (q, seen) = seen_in_training(&r.pairs, &off, "test");
    assert!(
        seen < q,
        "without the constraint {seen} of {q} test queries are seen"
    );

    // Required (the default): every test and validation query has a training pair, test and
    // validation judgments still never train, and the shares hold.
    let cfg = SplitConfig::default();
    let a = assign(&r.pairs, &cfg).unwrap();
    for split in ["test", "val"] {
        let (q, seen) = seen_in_training(&r.pairs, &a, split);
        assert!(q > 0 && seen == q, "{split}: {seen} of {q} queries in training");
    }
    let mut cert = certify(&r.pairs, &a);
    cert.require_seen_queries();
    assert!(cert.passed, "{:#?}", cert.checks);
    assert_eq!(cert.shared_judgments["train∩test"], 0);
    assert_eq!(cert.shared_judgments["train∩val"], 0);
    let rest = (a["train"].len() + a["val"].len() + a["test"].len()) as f64;
    let test_share = a["test"].len() as f64 / rest;
    assert!(
        (test_share - cfg.test_share).abs() < 0.02,
        "test share {test_share:.3}"
    );
    eprintln!(
        "seen queries: release test {}/{}; built test {:?}, val {:?}; unconstrained test {seen}/{q}",
        test.in_training,
        test.queries,
        seen_in_training(&r.pairs, &a, "test"),
        seen_in_training(&r.pairs, &a, "val"),
    );

    // Moving every training pair of one test query out of training fails the required check.
    let mut broken = a.clone();
    let victim = fold(&r.pairs[a["test"][0]].text);
    let moved: Vec<usize> = a["train"]
        .iter()
        .copied()
        .filter(|&i| fold(&r.pairs[i].text) == victim)
        .collect();
    broken.get_mut("train").unwrap().retain(|i| !moved.contains(i));
    broken.get_mut("unseen_query").unwrap().extend(&moved);
    let mut cert = certify(&r.pairs, &broken);
    cert.require_seen_queries();
    assert!(!cert.passed);
    assert!(
        cert.checks
            .iter()
            .any(|c| !c.passed && c.name == lexbench_splits::settings::SEEN_QUERIES_CHECK),
        "{:#?}",
        cert.checks
    );
}

/// Data whose queries are never repeated across judgments: `Required` refuses with a message that
/// names the way out; `Preferred` fills the splits and the certificate counts what is unseen.
#[test]
fn queries_that_never_repeat_are_refused_or_counted() {
    let r = release();
    // One pair per query: keep the first pair of each folded query text.
    let mut firsts = BTreeSet::new();
    let pairs: Vec<_> = r
        .pairs
        .iter()
        .filter(|p| firsts.insert(fold(&p.text)))
        .cloned()
        .collect();
    let cfg = SplitConfig {
        unseen_guides: Vec::new(),
        unseen_guide_share: 0.0,
        ..SplitConfig::default()
    };
    let err = assign(&pairs, &cfg).unwrap_err().to_string();
    assert!(err.contains("seen_queries = \"preferred\""), "{err}");
    let a = assign(
        &pairs,
        &SplitConfig {
            seen_queries: SeenQueries::Preferred,
            ..cfg
        },
    )
    .unwrap();
    assert!(!a["test"].is_empty() && !a["val"].is_empty());
    let cert = certify(&pairs, &a);
    assert!(cert.passed);
    assert_eq!(cert.seen_queries["test"].in_training, 0);
    assert_eq!(
        cert.seen_queries["test"].queries,
        seen_in_training(&pairs, &a, "test").0
    );
}
