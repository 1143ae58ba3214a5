//! What every end-to-end test shares: running the binary, the sample data directory
//! ([`sample_data`]) built once, the real MiniLM folder ([`minilm`]) and a tiny random BERT folder
//! ([`tiny_bert`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

/// The binary under test: the one cargo built for these tests, or the one `LEXBENCH_TEST_BIN` names
/// (to run the suite against another build, e.g. an older revision, to see a regression test fail
/// there).
pub fn bin() -> PathBuf {
    std::env::var_os("LEXBENCH_TEST_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_lexbench")), PathBuf::from)
}

/// `lexbench --data DATA ARGS…`, with the caller's `RUST_LOG` and `LEXBENCH_DATA` removed and the
/// git revision fixed (`LEXBENCH_GIT_REV=test-revision`), so sidecars do not depend on the checkout.
pub fn lexbench(data: &Path, args: &[&str]) -> Output {
    lexbench_env(data, &[], args)
}

/// [`lexbench`] with the variables `env` set besides (`RAYON_NUM_THREADS`, `LEXBENCH_ISA`, …).
pub fn lexbench_env(data: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(bin())
        .arg("--data")
        .arg(data)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .env("LEXBENCH_GIT_REV", "test-revision")
        .envs(env.iter().copied())
        .output()
        .expect("run lexbench")
}

/// Writes a sentence-transformers mean-pooling module into the model folder `dir` (`modules.json`
/// naming `1_Pooling`, and its `config.json` for the tiny BERT's width 32).
pub fn mean_pooling_module(dir: &Path) {
    std::fs::write(
        dir.join("modules.json"),
        r#"[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true}"#,
    )
    .unwrap();
}

/// `lexbench --data DATA ARGS…` as [`lexbench`] runs it, started and not waited for: for tests that
/// kill it or run several at once. Its stdout is discarded, its stderr piped (read it with
/// `wait_with_output`).
pub fn lexbench_spawn(data: &Path, args: &[&str]) -> Child {
    Command::new(bin())
        .arg("--data")
        .arg(data)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .env("LEXBENCH_GIT_REV", "test-revision")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lexbench")
}

/// `lexbench ARGS…` for commands that use no data directory (`eval`, `parse judgment|guide`).
pub fn lexbench_no_data(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("LEXBENCH_DATA")
        .output()
        .expect("run lexbench")
}

/// A fresh copy, at `dest`, of the data directory `lexbench pipeline` makes from the embedded sample
/// (crawl, parsed store, built datasets, BM25 runs, leaderboard): for tests that start from the
/// sample rather than test the pipeline itself. The pipeline runs once per test binary, into a
/// template folder; each caller gets its own recursive copy, so tests can not disturb each other.
/// `dest` is replaced if it exists.
///
/// # Panics
/// When the pipeline fails or a copy does.
pub fn sample_data(dest: &Path) {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    let template = TEMPLATE.get_or_init(|| {
        let dir = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-cli-sample-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = lexbench(&dir, &["pipeline"]);
        assert!(
            out.status.success(),
            "lexbench pipeline (the shared sample data) failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    });
    let _ = std::fs::remove_dir_all(dest);
    copy_tree(template, dest);
}

/// Copies the folder `from` to `to`, recursively (files and folders; the template holds nothing
/// else).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&src, &dst);
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        } else {
            panic!("{}: neither a file nor a folder", src.display());
        }
    }
}

/// The real all-MiniLM-L6-v2 folder `scripts/fetch-models` installs in `models/minilm` (the test
/// command runs it first).
///
/// # Panics
/// When the model is not installed, naming the command that installs it: a test that needs it
/// fails, never skips.
pub fn minilm() -> PathBuf {
    let m = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/minilm");
    assert!(
        m.join("model.safetensors").is_file() && m.join("config.json").is_file(),
        "model minilm is not installed in {}: run scripts/fetch-models",
        m.display()
    );
    m
}

/// A tiny random BERT (2 layers, hidden 32, with pooler) and a small WordPiece tokenizer, as an HF
/// folder: most French words are `[UNK]`, which is enough to see what the network reads; ColBERT's
/// markers are in the vocabulary. Seeded:
/// the same weights on every run.
///
/// # Panics
/// When a file cannot be written.
pub fn tiny_bert(dir: &Path) {
    tiny_bert_with(dir, &lexbench_baselines::encoder::BertConfig::tiny());
}

/// [`tiny_bert`] with another configuration (`BertConfig::tiny` with more positions, say).
pub fn tiny_bert_with(dir: &Path, config: &lexbench_baselines::encoder::BertConfig) {
    std::fs::create_dir_all(dir).unwrap();
    let vars = lexbench_baselines::train::params::ParamStore::new(20_261_124);
    lexbench_baselines::encoder::BertModel::load(
        config,
        vars.var_builder(&lexbench_baselines::Device::Cpu),
        true,
    )
    .unwrap();
    vars.save(&dir.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("config.json"), serde_json::to_string(config).unwrap()).unwrap();
    let words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        ".",
        ",",
        "?",
        ":",
        "'",
        "query",
        "passage",
        "le",
        "la",
        "les",
        "de",
        "des",
        "du",
        "un",
        "une",
        "et",
        "en",
        "est",
        "article",
        "code",
        "droit",
        "loi",
        "peut",
        "il",
        "qui",
        "que",
        "pour",
        "par",
        "dans",
        "sur",
        "au",
        "a",
        "je",
        "mon",
        // ColBERT's query and document markers.
        "[unused0]",
        "[unused1]",
    ];
    let vocab: serde_json::Map<String, serde_json::Value> = words
        .iter()
        .enumerate()
        .map(|(i, t)| ((*t).to_owned(), i.into()))
        .collect();
    let special = |t: &str, id: usize| serde_json::json!({"id": id, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
    let tok = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [special("[PAD]", 0), special("[UNK]", 1), special("[CLS]", 2), special("[SEP]", 3), special("[MASK]", 4)],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
    });
    std::fs::write(dir.join("tokenizer.json"), tok.to_string()).unwrap();
}

/// A JSON file, parsed; a missing or malformed file fails the test naming it.
pub fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A TREC run's lines without the tag (the last column): two runs of the same ranking by
/// differently named systems compare equal.
pub fn run_columns(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().0.to_owned())
        .collect()
}

/// The HuggingFace replicas ([`lexbench_core::testing::hf_replicas_dir`]).
pub fn replicas() -> PathBuf {
    lexbench_core::testing::hf_replicas_dir()
}

/// The Python of the environment `$var` names (default `target/DEFAULT` in the checkout); a test that
/// needs it fails, never skips, when it is missing, with `how` (what makes the environment) in the
/// message.
pub fn venv_python(var: &str, default: &str, how: &str) -> PathBuf {
    let venv = std::env::var_os(var).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .join(default)
        },
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    assert!(python.is_file(), "{} not found: {how}", python.display());
    python
}

/// Submits the run file `DATA/rel` of split `ecthr/test` as `name` (`--format json`): its entry id.
///
/// # Panics
/// When the submission fails.
pub fn submit_test_run(data: &Path, rel: &str, name: &str) -> String {
    let run = data.join(rel);
    let out = lexbench(
        data,
        &[
            "--format",
            "json",
            "submit",
            run.to_str().expect("a UTF-8 path"),
            "--dataset",
            "ecthr",
            "--split",
            "test",
            "--name",
            name,
        ],
    );
    assert!(
        out.status.success(),
        "submit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("submit's JSON");
    v["id"].as_str().expect("an entry id").to_owned()
}
