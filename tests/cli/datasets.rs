//! End-to-end tests of the dataset commands on the published release.
//!
//! Properties checked: `import release` writes a certified dataset with the release's split sizes;
//! `split` re-splits its pairs with a seed, keeping the unseen-guide setting identical (the release's
//! four held-out guides) and putting no test judgment in training; `diff` reports exactly that (404
//! unseen-guide pairs the same) and exits 1 because other splits changed; `stats` prints the version
//! and statistics; a stats request for a missing dataset exits 2 naming the file. Both print a report
//! for people by default and one JSON document with the global `--format json`, the same numbers.
//! `stats --bsard-questions` counts the real BSARD question files alone (a folder or the files, no data
//! directory needed): 222 / 886 questions, 1,060 test pairs as listed, the repeated article noted; a
//! broken file exits 2 naming file and line; a dataset and `--bsard-questions` together are refused.

use crate::common::lexbench;

#[test]
fn import_split_diff_stats() {
    let data =
        lexbench_core::testing::scratch_root().join(format!("lexbench-cli-datasets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let release = lexbench_core::testing::fixtures_dir().join("tum_release");
    let out = lexbench(&data, &["import", "release", release.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for (split, n) in [
        ("train", 2243),
        ("val", 306),
        ("test", 486),
        ("unseen_query", 700),
        ("unseen_guide", 404),
    ] {
        assert!(
            stderr.contains(&format!("{split:<13} {n:>6} pairs")),
            "{split}: {stderr}"
        );
    }

    let out = lexbench(
        &data,
        &["split", "ecthr-release", "--seed", "11", "--name", "resplit"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("certificate: passed"), "{stderr}");
    let cert: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("datasets/resplit/certificate.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cert["shared_judgments"]["train∩test"], 0);

    let out = lexbench(&data, &["diff", "resplit", "--against", "ecthr-release"]);
    assert_eq!(out.status.code(), Some(1), "the seen splits differ");
    let human = String::from_utf8_lossy(&out.stdout);
    let row = human
        .lines()
        .find(|l| l.starts_with("unseen_guide "))
        .unwrap_or_else(|| panic!("{human}"));
    assert_eq!(
        row.split_whitespace().skip(1).collect::<Vec<_>>(),
        ["0", "0", "0", "0", "0", "404"],
        "{human}"
    );
    assert!(
        human.contains("resplit and ecthr-release are different"),
        "{human}"
    );
    let out = lexbench(
        &data,
        &[
            "--format",
            "json",
            "diff",
            "resplit",
            "--against",
            "ecthr-release",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "the seen splits differ");
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["unseen_guide"]["pairs_same"], 404);
    assert_eq!(d["unseen_guide"]["pairs_added"], 0);
    assert_eq!(d["unseen_guide"]["pairs_removed"], 0);
    let total_same: u64 = ["train", "val", "test", "unseen_query", "unseen_guide"]
        .iter()
        .map(|s| d[s]["pairs_same"].as_u64().unwrap() + d[s]["pairs_added"].as_u64().unwrap())
        .sum();
    assert_eq!(
        total_same, 4139,
        "every pair is in exactly one split of the new dataset"
    );

    let out = lexbench(&data, &["--format", "json", "stats", "resplit"]);
    assert!(out.status.success());
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let version = s["version"].as_str().unwrap();
    assert_eq!(version.len(), 64);
    assert_eq!(s["stats"]["splits"]["unseen_guide"]["pairs"], 404);
    let out = lexbench(&data, &["stats", "resplit"]);
    assert!(out.status.success());
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(human.contains(&format!("version  {version}\n")), "{human}");
    assert!(human.contains("certificate  passed"), "{human}");
    let line = human
        .lines()
        .find(|l| l.trim_start().starts_with("splits.unseen_guide.pairs "))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(line.ends_with(" 404"), "{line}");

    let out = lexbench(&data, &["stats", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("manifest.json"));
    let _ = std::fs::remove_dir_all(&data);
}

/// `import release --texts` builds `ecthr-release-text` from the release's pairs whose judgment text
/// is in the shared folder: 298 pairs in the release's own splits, every relevant paragraph in its
/// judgment's pool, and a card saying how many pairs were left out and why.
#[test]
fn import_release_with_judgment_texts() {
    let data = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-release-text-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let fixtures = lexbench_core::testing::fixtures_dir();
    let (release, texts) = (fixtures.join("tum_release"), fixtures.join("hudoc/text"));
    let args = [
        "import",
        "release",
        release.to_str().unwrap(),
        "--texts",
        texts.to_str().unwrap(),
    ];
    let out = lexbench(&data, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("imported 298 pairs"), "{stderr}");
    let out = lexbench(&data, &["--format", "json", "stats", "ecthr-release-text"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (split, n) in [
        ("train", 166),
        ("val", 22),
        ("test", 48),
        // unseen_article.jsonl (seen guides, unseen queries) and unseen.jsonl (the four held-out
        // guides: Art 3, Art 11, Environment, Mass protests); only three of those guides have a
        // judgment with text here.
        ("unseen_query", 50),
        ("unseen_guide", 12),
    ] {
        assert_eq!(stats["stats"]["splits"][split]["pairs"], n, "{split}: {stats}");
    }
    let dir = data.join("datasets/ecthr-release-text");
    let card = std::fs::read_to_string(dir.join("card.md")).unwrap();
    assert!(card.contains("298 of the release's"), "{card}");
    assert!(card.contains("pairs left out"), "{card}");
    // Every qrel paragraph is in its topic's pool.
    let ds = lexbench_core::dataset::Dataset::open(lexbench_core::dataset::DatasetDir(dir)).unwrap();
    let pools: std::collections::BTreeMap<_, _> = ds
        .pools()
        .unwrap()
        .expect("pooled")
        .into_iter()
        .map(|p| (p.topic, p.docs))
        .collect();
    for split in ["train", "val", "test", "unseen_query", "unseen_guide"] {
        for (topic, docs) in ds.qrels(split, &Default::default()).unwrap().topics {
            for doc in docs.keys() {
                assert!(pools[&topic].contains(doc), "{split}: {topic} {doc}");
            }
        }
    }
}

#[test]
fn stats_of_the_real_bsard_question_files() {
    use crate::common::lexbench_no_data;
    let dir = lexbench_core::testing::fixtures_dir().join("bsard");
    let out = lexbench_no_data(&[
        "stats",
        "--bsard-questions",
        dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (test, train) = (&j["files"]["test"], &j["files"]["train"]);
    assert_eq!(test["questions"], 222);
    assert_eq!(train["questions"], 886);
    assert_eq!(
        (&test["pairs_listed"], &test["pairs"]),
        (&1060.into(), &1059.into())
    );
    assert_eq!(
        (&train["pairs_listed"], &train["pairs"]),
        (&5784.into(), &5784.into())
    );
    assert_eq!(
        (&test["articles"], &train["articles"], &j["all"]["articles"]),
        (&491.into(), &1534.into(), &1611.into())
    );
    assert_eq!(j["all"]["categories"].as_object().unwrap().len(), 7);
    assert_eq!(j["all"]["categories"]["Famille"], 67 + 272);
    assert_eq!(test["repeated"][0]["article"], "1102");

    // The same files named one by one, printed for people.
    let files: Vec<String> = ["questions_fr_test.csv", "questions_fr_train.csv"]
        .iter()
        .map(|f| dir.join(f).to_string_lossy().into_owned())
        .collect();
    let out = lexbench_no_data(&["stats", "--bsard-questions", &files[0], &files[1]]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Lines with their padding collapsed.
    let lines: Vec<String> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for want in [
        "questions 222",
        "questions 886",
        "pairs_listed 1060",
        "note: line 183: question q274 lists article 1102 2 times",
        "questions 1108",
        "categories.Logement 304",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want:?} not in\n{stdout}");
    }

    // A broken copy: exit 2, the file and line named.
    let tmp =
        lexbench_core::testing::scratch_root().join(format!("lexbench-cli-bsard-q-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let broken = tmp.join("questions_fr_test.csv");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "775,Logement,x,Encore ?,,1";
    std::fs::write(&broken, lines.join("\n")).unwrap();
    let out = lexbench_no_data(&["stats", "--bsard-questions", broken.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("questions_fr_test.csv:4: question id 775 appears twice (first on line 2)"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&tmp);

    let out = lexbench_no_data(&["stats", "bsard", "--bsard-questions", &files[0]]);
    assert_eq!(out.status.code(), Some(2));
}
