//! Issue 55, item 2: `lexbench reproduce ENTRY`, one command per leaderboard row.
//!
//! Properties checked (on the embedded sample):
//! - a run's sidecar records the command that made it (`invocation.command`, without `--data`), the
//!   binary's sha256, the CPU and the threads; the entry made from it carries the sidecar;
//! - `reproduce` runs that command again in a scratch data directory and compares the new run with
//!   the entry bit for bit: exit 0 and "bit for bit" when it is the same; the user's own run and
//!   data are untouched and the scratch folder is removed;
//! - another command (`--command` with another seed) is not a reproduction: exit 1, what differs
//!   named, the scratch folder kept; with `--tolerance` wide enough it is "within tolerance";
//! - an entry whose run names no command is refused (exit 1) until `--command` gives one; commands
//!   that make no run, or that name a data directory, are refused (exit 2), and run nothing;
//! - every reproduction is a line of `DATA/leaderboard/reproductions.jsonl`; `leaderboard
//!   --reproductions` lists every entry with the command that made it and its last reproduction; the
//!   log travels with `leaderboard --export` / `--import`, and an imported log's lines are claims,
//!   kept apart (`reproductions-imported.jsonl`) and shown as such;
//! - a CPU training whose run records the engine's promise (`invocation.cpu_bits`) is held to it: made
//!   on 1 thread and made again on 2, it reproduces bit for bit, with no tolerance (issue 72, item 5).

use std::path::{Path, PathBuf};

use crate::common::{lexbench, lexbench_env, read_json, sample_data, tiny_bert};

fn data(name: &str) -> PathBuf {
    let d = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-cli-reproduce-{}-{name}", std::process::id()));
    sample_data(&d);
    d
}

fn ok(out: &std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Submits `DATA/runs/ecthr/test/<system>.trec` as `name`; its entry id.
fn submit(data: &Path, system: &str, name: &str) -> String {
    let run = data.join("runs/ecthr/test").join(format!("{system}.trec"));
    let out = lexbench(
        data,
        &[
            "--format",
            "json",
            "submit",
            run.to_str().unwrap(),
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--name",
            name,
        ],
    );
    let text = ok(&out, "submit");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

fn log(data: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(data.join("leaderboard/reproductions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_entry_is_made_again_from_the_command_its_run_records() {
    let d = data("recorded");
    ok(
        &lexbench(
            &d,
            &[
                "-v",
                "run",
                "random",
                "--dataset",
                "ecthr",
                "--split",
                "test",
                "--seed",
                "3",
            ],
        ),
        "run random",
    );
    let run = d.join("runs/ecthr/test/random.trec");
    let sidecar = read_json(&d.join("runs/ecthr/test/random.json"));
    let inv = &sidecar["invocation"];
    assert_eq!(
        inv["command"],
        serde_json::json!([
            "run",
            "random",
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--seed",
            "3"
        ]),
        "the command without --data and -v"
    );
    assert_eq!(inv["binary_sha256"].as_str().map(str::len), Some(64));
    assert!(inv["threads"].as_u64().unwrap() >= 1);
    let before = std::fs::read(&run).unwrap();
    let id = submit(&d, "random", "random three");

    let out = lexbench(&d, &["reproduce", &id]);
    let text = ok(&out, "reproduce");
    assert!(text.contains("reproduced bit for bit"), "{text}");
    assert!(
        text.contains("lexbench run random --dataset ecthr --split test --seed 3"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&run).unwrap(),
        before,
        "the user's run is untouched"
    );
    assert!(
        !d.join("cache/reproduce").join(&id).exists(),
        "the scratch folder is removed"
    );

    // Other parameters are another run: not a reproduction, and what differs is named. (BM25's: on the
    // sample, a random ranking's figures hardly depend on its seed.)
    ok(
        &lexbench(&d, &["run", "bm25", "--dataset", "ecthr", "--split", "test"]),
        "run bm25",
    );
    let bm25_id = submit(&d, "bm25", "bm25 again");
    let other = "run bm25 --dataset ecthr --split test --k1 3 --b 0";
    let out = lexbench(&d, &["reproduce", &bm25_id, "--command", other]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("NOT reproduced") && err.contains("the run differs") && err.contains("R@2%: Some("),
        "{err}"
    );
    assert!(
        d.join("cache/reproduce")
            .join(&bm25_id)
            .join("runs/ecthr/test/bm25.trec")
            .is_file(),
        "kept to look at"
    );
    // Within a tolerance wider than any recall difference, it passes as such (never as identical).
    let text = ok(
        &lexbench(
            &d,
            &["reproduce", &bm25_id, "--command", other, "--tolerance", "1"],
        ),
        "reproduce --tolerance",
    );
    assert!(text.contains("reproduced within ±1"), "{text}");

    let l = log(&d);
    let outcomes: Vec<&str> = l.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["identical", "differs", "within_tolerance"]);
    assert_eq!(l[0]["entry"], id.as_str());
    assert_eq!(l[1]["entry"], bm25_id.as_str());
    assert_eq!(l[2]["tolerance"], 1.0);

    // The table: every entry, the command that made it, its last reproduction.
    let table = ok(
        &lexbench(&d, &["leaderboard", "--reproductions"]),
        "--reproductions",
    );
    let row = table.lines().find(|l| l.contains("random three")).unwrap();
    assert!(
        row.contains("`lexbench run random --dataset ecthr --split test --seed 3`")
            && row.contains(&format!("`lexbench reproduce {id}`"))
            && row.contains("| identical, "),
        "{row}"
    );
    let again = table.lines().find(|l| l.contains("bm25 again")).unwrap();
    assert!(again.contains("within tolerance (±1)"), "{again}");
    let bm25 = table
        .lines()
        .find(|l| l.contains("| ecthr | test | BM25 |"))
        .unwrap();
    assert!(
        bm25.contains("lexbench submit --baseline") && bm25.ends_with("| never here |"),
        "{bm25}"
    );

    // The log travels with the entries.
    let out_dir = d.with_extension("export");
    ok(
        &lexbench(&d, &["leaderboard", "--export", out_dir.to_str().unwrap()]),
        "export",
    );
    let other_data = data("recorded-import");
    std::fs::remove_dir_all(other_data.join("leaderboard")).unwrap();
    let text = ok(
        &lexbench(
            &other_data,
            &["leaderboard", "--import", out_dir.to_str().unwrap()],
        ),
        "import",
    );
    // … as claims of the data directory it comes from, kept apart from the reproductions made here
    // (issue 68, item 5): none of its lines is this data directory's, none is a recipe.
    assert!(
        text.contains("3 reproduction(s) it claims kept as imported claims"),
        "{text}"
    );
    assert!(log(&other_data).is_empty());
    let claims =
        std::fs::read_to_string(other_data.join("leaderboard/reproductions-imported.jsonl")).unwrap();
    assert_eq!(claims.lines().count(), 3);
    assert!(claims.contains(&format!(
        "\"from\":{}",
        serde_json::json!(out_dir.display().to_string())
    )));
    let table = ok(
        &lexbench(&other_data, &["leaderboard", "--reproductions"]),
        "--reproductions",
    );
    let row = table.lines().find(|l| l.contains("random three")).unwrap();
    assert!(
        row.contains("| never here; imported claim, not checked here (from ")
            && row.contains("): identical, "),
        "{row}"
    );
    for p in [&d, &other_data, &out_dir] {
        std::fs::remove_dir_all(p).ok();
    }
}

#[test]
fn a_run_without_a_recorded_command_needs_one_and_only_run_commands_are_run() {
    let d = data("unrecorded");
    ok(
        &lexbench(
            &d,
            &[
                "run",
                "random",
                "--dataset",
                "ecthr",
                "--split",
                "test",
                "--seed",
                "9",
                "--system",
                "mine",
            ],
        ),
        "run random",
    );
    // A run made elsewhere: no sidecar says what made it.
    std::fs::remove_file(d.join("runs/ecthr/test/mine.json")).unwrap();
    let id = submit(&d, "mine", "a run made elsewhere");
    let out = lexbench(&d, &["reproduce", &id]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("names no command") && err.contains("--command"),
        "{err}"
    );

    for (command, says) in [
        ("export --format hf --out /tmp/x", "not one that makes a run"),
        (
            "run random --data /elsewhere --dataset ecthr --split test",
            "names --data",
        ),
        (
            "train some.toml --out=/home/someone/model",
            "names --out=/home/someone/model",
        ),
        ("", "empty"),
    ] {
        let out = lexbench(&d, &["reproduce", &id, "--command", command]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{command}: {err}");
        assert!(
            !d.join("cache/reproduce").join(&id).exists(),
            "{command}: nothing run"
        );
    }
    assert!(log(&d).is_empty(), "nothing ran, nothing recorded");

    let text = ok(
        &lexbench(
            &d,
            &[
                "reproduce",
                &id,
                "--command",
                "run random --dataset ecthr --split test --seed 9 --system mine",
            ],
        ),
        "reproduce --command",
    );
    assert!(text.contains("reproduced bit for bit"), "{text}");
    // A command shown to make the entry is its recipe from then on: the table names it, and
    // `reproduce` without --command runs it.
    let table = ok(
        &lexbench(&d, &["leaderboard", "--reproductions"]),
        "--reproductions",
    );
    let row = table
        .lines()
        .find(|l| l.contains("a run made elsewhere"))
        .unwrap();
    assert!(
        row.contains("not recorded; reproduced by `lexbench run random --dataset ecthr --split test --seed 9 --system mine`"),
        "{row}"
    );
    let out = lexbench(&d, &["reproduce", &id]);
    assert!(ok(&out, "reproduce (the proven command)").contains("reproduced bit for bit"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("its last passing reproduction"));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_configuration_the_command_names_is_recorded_and_a_change_is_named() {
    let d = data("config");
    let cfg = d.join("bm25 params.toml");
    std::fs::write(&cfg, "k1 = 1.2\nb = 0.75\n").unwrap();
    let cfg_s = cfg.to_str().unwrap();
    ok(
        &lexbench(
            &d,
            &[
                "run",
                "bm25",
                "--dataset",
                "ecthr",
                "--split",
                "test",
                "--config",
                cfg_s,
            ],
        ),
        "run bm25 --config",
    );
    let sidecar = read_json(&d.join("runs/ecthr/test/bm25.json"));
    assert_eq!(
        sidecar["invocation"]["configs"][cfg_s].as_str(),
        Some(lexbench_core::sha256_file(&cfg).unwrap().as_str()),
        "{sidecar}"
    );
    let id = submit(&d, "bm25", "bm25 k1 1.2");
    let text = ok(&lexbench(&d, &["reproduce", &id]), "reproduce");
    assert!(text.contains("reproduced bit for bit"), "{text}");
    // The same parameters written another way: the figures reproduce, and the change is named.
    std::fs::write(&cfg, "b = 0.75\nk1 = 1.2\n").unwrap();
    let out = lexbench(&d, &["reproduce", &id]);
    let text = ok(&out, "reproduce after the edit");
    assert!(text.contains("configuration changed"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: the configuration changed"));
    // Scores that differ in their last digits but move nothing across a cut-off: the same figures,
    // not the same run file (what another CPU's float sums give).
    let nudged = format!("run bm25 --dataset ecthr --split test --config '{cfg_s}' --k1 1.2000001");
    let text = ok(
        &lexbench(&d, &["reproduce", &id, "--command", &nudged]),
        "reproduce, nudged",
    );
    assert!(
        text.contains("reproduced with every per-topic value and score bit for bit, not the run file"),
        "{text}"
    );
    assert_eq!(log(&d).last().unwrap()["outcome"], "same_figures");
    std::fs::remove_dir_all(&d).ok();
}

/// `lexbench --data DATA ARGS…` on `threads` threads; its output, checked.
fn on_threads(data: &Path, threads: &str, args: &[&str], what: &str) -> String {
    ok(&lexbench_env(data, &[("RAYON_NUM_THREADS", threads)], args), what)
}

#[test]
fn a_cpu_training_is_made_again_bit_for_bit_on_another_thread_count() {
    let d = data("cpu-bits");
    let base = d.join("tiny-bert");
    tiny_bert(&base);
    let cfg = d.join("cpu-bits.toml");
    std::fs::write(
        &cfg,
        format!(
            "name = \"cpu-bits\"\nmodel = \"dpr\"\nbase = {:?}\nseed = 3\n\n[data]\ndataset = \"ecthr\"\n\
             val_split = \"\"\nmax_query_len = 16\nmax_doc_len = 48\n\n[negatives]\nbm25 = 2\nrandom = 1\n\n\
             [schedule]\nepochs = 1\nbatch_size = 8\nmax_steps = 3\n\n[eval]\nmeasure = \"R@100\"\ntop_k = 1000\n",
            base.display().to_string()
        ),
    )
    .unwrap();
    on_threads(
        &d,
        "1",
        &["train", cfg.to_str().unwrap(), "--run", "test", "--quiet"],
        "train on 1 thread",
    );
    let sidecar = read_json(&d.join("runs/ecthr/test/cpu-bits.json"));
    assert_eq!(sidecar["invocation"]["threads"], 1, "{sidecar}");
    assert_eq!(
        sidecar["invocation"]["cpu_bits"],
        lexbench_core::run::CPU_BITS,
        "{sidecar}"
    );
    let id = submit(&d, "cpu-bits", "CPU bits");
    let text = on_threads(&d, "2", &["reproduce", &id], "reproduce on 2 threads");
    assert!(text.contains("reproduced bit for bit"), "{text}");
    let last = log(&d).pop().expect("a reproduction");
    assert_eq!(last["outcome"], "identical", "{last}");
    assert!(
        last["tolerance"].is_null(),
        "held to the bits, not a tolerance: {last}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
