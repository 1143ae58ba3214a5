//! Hostile training configurations (issue 29, items 17 and 20): every bad value is refused when the
//! file is read, before any model is loaded, by one error line naming the file and the line
//! (`PATH:LINE:`), the key, the value as written and what is allowed.
//!
//! Properties checked, one table of bad values over one valid configuration:
//! - learning rates that are infinite, NaN, negative or zero (`optim.lr`, each `lr_sweep` value, each
//!   value of a `[sweep]` learning-rate axis); a NaN, infinite or negative gradient-clipping norm; a
//!   NaN, infinite or non-positive LoRA alpha, a LoRA rank of 0; weight decay, dropout, warm-up,
//!   epochs, batch size, negatives counts and depths out of their documented ranges;
//! - lengths beyond the documented maximum ([`MAX_SEQ_LEN`]) and a float where an integer is expected
//!   (refused, never truncated);
//! - selection measures that do not parse (`P@0`, an unknown name);
//! - a value set by `--set` is named by its override instead of a line;
//! - the valid configuration itself, and every shipped configuration, still reads.

use std::path::{Path, PathBuf};

use lexbench_baselines::train::config::{MAX_SEQ_LEN, TrainConfig};

const VALID: &str = r#"name = "hostile"
model = "dpr"
base = "models/minilm"
seed = 1

[data]
dataset = "ecthr"
max_query_len = 64
max_doc_len = 128

[negatives]
bm25 = 4
random = 1

[optim]
lr = 1e-4
weight_decay = 0.01

[schedule]
epochs = 2
batch_size = 4
warmup_ratio = 0.1
max_grad_norm = 1.0

[eval]
measure = "R@10%"

[peft]
method = "lora"
lora = { rank = 8, alpha = 16.0, dropout = 0.1 }
"#;

fn dir() -> PathBuf {
    let d = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-config-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `VALID` with `from` replaced by `to`, written to `dir/<n>.toml`.
fn write(dir: &Path, n: usize, from: &str, to: &str) -> (PathBuf, String) {
    assert!(VALID.contains(from), "{from:?} is not in the valid config");
    let text = VALID.replacen(from, to, 1);
    let path = dir.join(format!("case-{n}.toml"));
    std::fs::write(&path, &text).expect("write config");
    (path, text)
}

/// The 1-based line of `text` on which `needle` starts.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {text}"));
    text[..at].matches('\n').count() + 1
}

#[test]
fn the_valid_configuration_reads() {
    let d = dir();
    let (path, _) = write(&d, 0, "", "");
    TrainConfig::from_file(&path).expect("valid");
}

#[test]
fn bad_values_are_refused_naming_file_line_key_value_and_range() {
    let d = dir();
    let lr = "must be a finite number > 0";
    let lr_line = "lr = 1e-4";
    let clip = "schedule.max_grad_norm";
    // (replace, with, the text on the line the error names, what the message says)
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (lr_line, "lr = inf", "lr = inf", &["optim.lr = inf", lr]),
        (lr_line, "lr = -inf", "lr = -inf", &["optim.lr = -inf", lr]),
        (lr_line, "lr = nan", "lr = nan", &["optim.lr = NaN", lr]),
        (lr_line, "lr = -1", "lr = -1", &["optim.lr = -1", lr]),
        (lr_line, "lr = 0.0", "lr = 0.0", &["optim.lr = 0", lr]),
        (
            "seed = 1\n",
            "seed = 1\nlr_sweep = [1e-5, inf]\n",
            "lr_sweep",
            &["lr_sweep[1] = inf", lr],
        ),
        (
            "seed = 1\n",
            "seed = 1\nlr_sweep = [-3e-5]\n",
            "lr_sweep",
            &["lr_sweep[0] = -0.00003", lr],
        ),
        (
            "[peft]",
            "[sweep]\nlr = [1e-5, nan]\n\n[peft]",
            "lr = [1e-5, nan]",
            &["sweep.lr[1] = NaN", lr],
        ),
        (
            "[peft]",
            "[sweep]\n\"optim.lr\" = [0.0]\n\n[peft]",
            "\"optim.lr\"",
            &["sweep.optim.lr[0] = 0", lr],
        ),
        (
            "[peft]",
            "[sweep]\n\"peft.lora\" = [{ rank = 8, alpha = inf }]\n\n[peft]",
            "\"peft.lora\"",
            &[
                "sweep.peft.lora[0]",
                "peft.lora.alpha = inf",
                "must be a finite number > 0",
            ],
        ),
        (
            "max_grad_norm = 1.0",
            "max_grad_norm = nan",
            "max_grad_norm",
            &[clip, "= NaN", "must be a finite number ≥ 0 (0: no clipping)"],
        ),
        (
            "max_grad_norm = 1.0",
            "max_grad_norm = inf",
            "max_grad_norm",
            &[clip, "= inf", "must be a finite number ≥ 0"],
        ),
        (
            "max_grad_norm = 1.0",
            "max_grad_norm = -1.0",
            "max_grad_norm",
            &[clip, "= -1", "must be a finite number ≥ 0"],
        ),
        (
            "alpha = 16.0",
            "alpha = nan",
            "lora = ",
            &["peft.lora.alpha = NaN", "must be a finite number > 0"],
        ),
        (
            "alpha = 16.0",
            "alpha = inf",
            "lora = ",
            &["peft.lora.alpha = inf", "must be a finite number > 0"],
        ),
        (
            "alpha = 16.0",
            "alpha = 0.0",
            "lora = ",
            &["peft.lora.alpha = 0", "must be a finite number > 0"],
        ),
        (
            "alpha = 16.0",
            "alpha = -16.0",
            "lora = ",
            &["peft.lora.alpha = -16", "must be a finite number > 0"],
        ),
        (
            "rank = 8",
            "rank = 0",
            "lora = ",
            &["peft.lora.rank = 0", "must be an integer from 1 to"],
        ),
        (
            "dropout = 0.1",
            "dropout = nan",
            "lora = ",
            &["peft.lora.dropout = NaN", "must be a finite number in [0, 1)"],
        ),
        (
            "dropout = 0.1",
            "dropout = 1.5",
            "lora = ",
            &["peft.lora.dropout = 1.5", "must be a finite number in [0, 1)"],
        ),
        (
            "max_query_len = 64",
            "max_query_len = 4000000000",
            "max_query_len",
            &[
                "data.max_query_len = 4000000000",
                "must be an integer from 4 to 8192",
            ],
        ),
        (
            "max_doc_len = 128",
            "max_doc_len = 8193",
            "max_doc_len",
            &["data.max_doc_len = 8193", "must be an integer from 4 to 8192"],
        ),
        (
            "max_query_len = 64",
            "max_query_len = 4e9",
            "max_query_len",
            &["data.max_query_len = 4e9", "expected usize"],
        ),
        (
            "max_query_len = 64",
            "max_query_len = 64.0",
            "max_query_len",
            &["data.max_query_len = 64.0", "expected usize"],
        ),
        (
            "measure = \"R@10%\"",
            "measure = \"P@0\"",
            "measure",
            &["eval.measure = \"P@0\"", "cut-off must be a positive integer"],
        ),
        (
            "measure = \"R@10%\"",
            "measure = \"Recall\"",
            "measure",
            &["eval.measure = \"Recall\"", "expected one of"],
        ),
        (
            "weight_decay = 0.01",
            "weight_decay = -0.1",
            "weight_decay",
            &["optim.weight_decay = -0.1", "must be a finite number in [0, 1]"],
        ),
        (
            "weight_decay = 0.01",
            "weight_decay = nan",
            "weight_decay",
            &["optim.weight_decay = NaN", "must be a finite number in [0, 1]"],
        ),
        (
            "weight_decay = 0.01",
            "weight_decay = 0.01\nbeta2 = 1.0",
            "beta2",
            &["optim.beta2 = 1", "must be a finite number in [0, 1)"],
        ),
        (
            "weight_decay = 0.01",
            "weight_decay = 0.01\neps = inf",
            "eps",
            &["optim.eps = inf", "must be a finite number in (0, 1]"],
        ),
        (
            "warmup_ratio = 0.1",
            "warmup_ratio = nan",
            "warmup_ratio",
            &["schedule.warmup_ratio = NaN", "must be a finite number in [0, 1)"],
        ),
        (
            "warmup_ratio = 0.1",
            "warmup_ratio = 1.0",
            "warmup_ratio",
            &["schedule.warmup_ratio = 1", "must be a finite number in [0, 1)"],
        ),
        (
            "epochs = 2",
            "epochs = 0",
            "epochs",
            &["schedule.epochs = 0", "must be an integer from 1 to 1000"],
        ),
        (
            "epochs = 2",
            "epochs = 1000000",
            "epochs",
            &["schedule.epochs = 1000000", "must be an integer from 1 to 1000"],
        ),
        (
            "epochs = 2",
            "epochs = 2.5",
            "epochs",
            &["schedule.epochs = 2.5", "expected usize"],
        ),
        (
            "batch_size = 4",
            "batch_size = 0",
            "batch_size",
            &["schedule.batch_size = 0", "must be an integer from 1 to 4096"],
        ),
        (
            "batch_size = 4",
            "batch_size = 9223372036854775807",
            "batch_size",
            &[
                "schedule.batch_size = 9223372036854775807",
                "must be an integer from 1 to 4096",
            ],
        ),
        (
            "random = 1",
            "random = 9223372036854775807",
            "random",
            &[
                "negatives.random = 9223372036854775807",
                "must be an integer from 0 to 1000",
            ],
        ),
        (
            "bm25 = 4",
            "bm25 = -1",
            "bm25",
            &["negatives.bm25 = -1", "expected usize"],
        ),
        (
            "bm25 = 4",
            "bm25 = 4\nbm25_depth = 0",
            "bm25_depth",
            &["negatives.bm25_depth = 0", "must be an integer from 1 to 100000"],
        ),
        ("seed = 1", "seed = -1", "seed", &["seed = -1", "expected u64"]),
    ];
    let mut failures = Vec::new();
    for (n, (from, to, at, needles)) in cases.iter().enumerate() {
        let (path, text) = write(&d, n + 1, from, to);
        let line = line_of(&text, at);
        let e = match TrainConfig::from_file(&path) {
            Ok(_) => {
                failures.push(format!("{to:?}: accepted"));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let mut want = vec![format!("{}:{line}: ", path.display())];
        want.extend(needles.iter().map(|s| (*s).to_owned()));
        let missing: Vec<&String> = want.iter().filter(|w| !e.contains(w.as_str())).collect();
        if !missing.is_empty() || e.lines().count() != 1 {
            failures.push(format!("{to:?}: {e:?} lacks {missing:?} (or is not one line)"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(MAX_SEQ_LEN, 8192);
}

#[test]
fn an_override_is_named_by_its_flag() {
    let d = dir();
    let (path, _) = write(&d, 100, "", "");
    for (key, raw, needles) in [
        (
            "optim.lr",
            "-1",
            &[
                "--set optim.lr=-1",
                "optim.lr = -1",
                "must be a finite number > 0",
            ][..],
        ),
        (
            "data.max_query_len",
            "4e9",
            &["--set data.max_query_len=4e9", "expected usize"],
        ),
        (
            "schedule.max_grad_norm",
            "nan",
            &["--set schedule.max_grad_norm=nan", "must be a finite number ≥ 0"],
        ),
        (
            "eval.measure",
            "P@0",
            &["--set eval.measure=P@0", "eval.measure = \"P@0\""],
        ),
    ] {
        let e = TrainConfig::from_file_with(&path, &[(key.to_owned(), raw.to_owned())])
            .expect_err("refused")
            .to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        for n in needles {
            assert!(e.contains(n), "{key}={raw}: {e:?} lacks {n:?}");
        }
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn the_shipped_configurations_read() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let mut stack = vec![root];
    let mut n = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("configs") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                if let Err(e) = TrainConfig::from_file(&p) {
                    panic!("{e}");
                }
                n += 1;
            }
        }
    }
    assert!(n >= 40, "{n}");
}
