//! Text prefixes in training (`[data] query_prefix` / `passage_prefix`: multilingual-e5-small's
//! `query: ` / `passage: `), on the tiny random BERT (no download).
//!
//! Properties checked:
//! - a network built with prefixes reads exactly what the same network without them reads when the
//!   texts carry the prefixes themselves, and not the bare texts: query and passage embeddings (flat
//!   and hierarchical), QABISAR's query encoding with gradient, the loss of a training batch (DPR,
//!   ColBERT, cross-encoder) and the validation ranking; the query prefix goes before queries only,
//!   the passage prefix before passages only (the test prefixes are distinct vocabulary words);
//! - a configuration without prefixes serialises without prefix keys (the identity a resumed run
//!   checks is unchanged), one with prefixes round-trips;
//! - an exported folder records its prefixes, and `lexbench run dense`'s code path (`DenseRanker`)
//!   ranks with them: as the trained network ranks, as the same weights without the training record
//!   rank when given the prefixes (and not without them); a different prefix is refused;
//! - the hierarchical article encoder takes its segment markers from the tokenizer: `<s> … </s>` for
//!   an XLM-R-style tokenizer such as multilingual-e5-small's (it used to require `[CLS]`);
//! - the shipped BSARD configurations train multilingual-e5-small with its prefixes, at widths that
//!   fit it (384 wide, 12 heads, 512 positions), except the labelled MiniLM ablation.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use candle_core::Device;
use lexbench_baselines::encoder::EncodeOptions;
use lexbench_baselines::encoder::files::{TRAINING_RECORD, trained_prefixes};
use lexbench_baselines::rank::dense::{DenseParams, DenseRanker};
use lexbench_baselines::rank::{RunTarget, write_run};
use lexbench_baselines::train::config::TrainConfig;
use lexbench_baselines::train::data::SplitData;
use lexbench_baselines::train::model::{Batch, Trainable};
use lexbench_baselines::train::{TrainOptions, train};
use lexbench_core::testing::TinyDataset;

type Res<T> = Result<T, Box<dyn std::error::Error>>;
type TestResult = Res<()>;

/// Test prefixes made of words of the tiny vocabulary, distinct from each other, so that a prefix put
/// before the wrong text, or a missing one, changes the tokens.
const Q: &str = "what is ";
const P: &str = "article : ";

/// A training configuration on the tiny model and dataset (`model`: dpr, colbert, cross_encoder),
/// with the given prefixes (empty: none). Lengths fit the tiny BERT's 64 positions.
fn config(base: &Path, model: &str, query_prefix: &str, passage_prefix: &str) -> TrainConfig {
    let mut data = toml::Table::new();
    for (k, v) in [
        ("dataset", "tiny"),
        ("train_split", "train"),
        ("val_split", "val"),
    ] {
        data.insert(k.into(), v.into());
    }
    data.insert("max_query_len".into(), 12.into());
    data.insert("max_doc_len".into(), 24.into());
    for (k, v) in [("query_prefix", query_prefix), ("passage_prefix", passage_prefix)] {
        if !v.is_empty() {
            data.insert(k.into(), v.into());
        }
    }
    let text = format!(
        r#"
name = "prefixes"
model = "{model}"
base = {base:?}
seed = 7
data = {data}

[negatives]
random = 1
bm25 = 1

[optim]
lr = 1e-3

[schedule]
epochs = 1
batch_size = 4

[colbert]
dim = 16

[eval]
measure = "R@25%"
top_k = 100
"#,
        base = base.display().to_string(),
        data = toml::Value::Table(data),
    );
    let cfg: TrainConfig = toml::from_str(&text).expect("test config");
    cfg.validate().expect("valid test config");
    cfg
}

/// `DATA/datasets/tiny`: 2 judgments × 6 paragraphs, 4 topics (train 3, val 1), pooled.
fn tiny_dataset(data: &Path) -> TestResult {
    const TEXTS: [&str; 6] = [
        "the applicant complained of a violation of the convention",
        "the court is the state law",
        "right to a fair trial and privacy",
        "margin of appreciation of the state",
        "the article on privacy in law",
        "what is the right of the applicant",
    ];
    let mut ds = TinyDataset::new("tiny");
    for j in 0..2 {
        for (p, text) in TEXTS.iter().enumerate() {
            ds = ds.doc(&format!("001-9900{j}:{}", p + 1), text);
        }
    }
    let queries = [
        "violation of the convention",
        "fair trial",
        "margin of appreciation",
        "privacy law",
    ];
    for (t, q) in queries.iter().enumerate() {
        let j = t % 2;
        let topic = format!("q{t}/001-9900{j}");
        let docs: Vec<String> = (1..=6).map(|p| format!("001-9900{j}:{p}")).collect();
        let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let positive = format!("001-9900{j}:{}", [1, 3, 4, 5][t]);
        let split = if t < 3 { "train" } else { "val" };
        ds = ds
            .topic(&topic, &format!("q{t}"), q, &[&positive], split)
            .pool(&topic, &docs);
    }
    ds.write_in(data)?;
    Ok(())
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("prefixes", name)
}

/// `batch` with the prefixes written into its texts.
fn prefixed<'a>(batch: &Batch<'_>, owned: &'a mut Vec<String>) -> Batch<'a> {
    owned.clear();
    owned.extend(batch.queries.iter().map(|q| format!("{Q}{q}")));
    owned.extend(batch.passages.iter().map(|p| format!("{P}{p}")));
    let (queries, passages) = owned.split_at(batch.queries.len());
    Batch {
        queries: queries.iter().map(String::as_str).collect(),
        passages: passages.iter().map(String::as_str).collect(),
        positive: batch.positive.clone(),
        negatives: batch.negatives.clone(),
        is_positive_of: batch.is_positive_of.clone(),
    }
}

#[test]
fn the_prefixes_reach_the_network_in_training() -> TestResult {
    let base = common::tiny_folder("prefix-net")?;
    let (q, d) = (
        "fair trial of the applicant",
        "the court complained of a violation",
    );
    let (qp, dp) = (format!("{Q}{q}"), format!("{P}{d}"));
    // Embeddings: ranking, validation, ANCE, CuSINeS, DR+GNN and QABISAR all go through these.
    let with = Trainable::build(&config(&base, "dpr", Q, P), &Device::Cpu)?;
    let plain = Trainable::build(&config(&base, "dpr", "", ""), &Device::Cpu)?;
    assert_eq!(with.prefixes().query, Q);
    let embed = |net: &Trainable, text: &str, query: bool| net.embed_texts(&[text], query, 4);
    assert_eq!(embed(&with, q, true)?, embed(&plain, &qp, true)?);
    assert_ne!(embed(&with, q, true)?, embed(&plain, q, true)?);
    assert_ne!(embed(&with, q, true)?, embed(&plain, &format!("{P}{q}"), true)?);
    assert_eq!(embed(&with, d, false)?, embed(&plain, &dp, false)?);
    assert_ne!(embed(&with, d, false)?, embed(&plain, d, false)?);
    assert_ne!(embed(&with, d, false)?, embed(&plain, &format!("{Q}{d}"), false)?);
    // QABISAR's student side, with gradient.
    let student = |net: &Trainable, text: &str| -> Res<Vec<Vec<f32>>> {
        Ok(net.encode_queries_t(&[text], false)?.to_vec2::<f32>()?)
    };
    assert_eq!(student(&with, q)?, student(&plain, &qp)?);
    assert_ne!(student(&with, q)?, student(&plain, q)?);

    // The loss of a training batch, for each kind of network.
    let batch = Batch {
        queries: vec![q, "margin of appreciation"],
        passages: vec![d, "the state law", "privacy in the convention"],
        positive: vec![0, 1],
        negatives: vec![vec![2], vec![2]],
        is_positive_of: vec![HashSet::from([0]), HashSet::from([1])],
    };
    let mut owned = Vec::new();
    let with_texts = prefixed(&batch, &mut owned);
    for model in ["dpr", "colbert", "cross_encoder"] {
        let with = Trainable::build(&config(&base, model, Q, P), &Device::Cpu)?;
        let plain = Trainable::build(&config(&base, model, "", ""), &Device::Cpu)?;
        let loss =
            |net: &Trainable, b: &Batch<'_>| -> Res<f32> { Ok(net.loss(b, false)?.to_scalar::<f32>()?) };
        let l = loss(&with, &batch)?;
        assert_eq!(l, loss(&plain, &with_texts)?, "{model}");
        assert_ne!(l, loss(&plain, &batch)?, "{model}");
    }

    // Validation ranking (and ANCE's mining, which ranks the same way).
    let data = scratch("net");
    tiny_dataset(&data)?;
    let val = SplitData::load(&data, "tiny", "val", false)?;
    let mut val_with_texts = val.clone();
    for t in &mut val_with_texts.topics {
        t.text = format!("{Q}{}", t.text);
    }
    for d in &mut val_with_texts.docs {
        d.text = format!("{P}{}", d.text);
    }
    for model in ["dpr", "colbert", "cross_encoder"] {
        let with = Trainable::build(&config(&base, model, Q, P), &Device::Cpu)?;
        let plain = Trainable::build(&config(&base, model, "", ""), &Device::Cpu)?;
        let run = with.rank(&val, 100, None, 4)?;
        assert_eq!(
            run.topics,
            plain.rank(&val_with_texts, 100, None, 4)?.topics,
            "{model}"
        );
        assert_ne!(run.topics, plain.rank(&val, 100, None, 4)?.topics, "{model}");
    }
    std::fs::remove_dir_all(&data).ok();
    Ok(())
}

#[test]
fn configs_without_prefixes_serialise_as_before() -> TestResult {
    let base = common::tiny_folder("prefix-toml")?;
    let plain = toml::to_string_pretty(&config(&base, "dpr", "", ""))?;
    assert!(
        !plain.contains("query_prefix") && !plain.contains("passage_prefix"),
        "{plain}"
    );
    let cfg = config(&base, "dpr", "query: ", "passage: ");
    let text = toml::to_string_pretty(&cfg)?;
    assert!(
        text.contains("query_prefix = \"query: \"") && text.contains("passage_prefix = \"passage: \""),
        "{text}"
    );
    assert_eq!(toml::from_str::<TrainConfig>(&text)?, cfg);
    Ok(())
}

/// Copies the files of `from` into a new folder `to`, but the training record.
fn copy_without_record(from: &Path, to: &Path) -> TestResult {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_name() != TRAINING_RECORD {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}

#[test]
fn an_exported_folder_ranks_with_its_training_prefixes() -> TestResult {
    let base = common::tiny_folder("prefix-export")?;
    let data = scratch("export");
    tiny_dataset(&data)?;
    let mut cfg = config(&base, "dpr", Q, P);
    cfg.data.val_split = String::new(); // keep the last epoch
    let out = data.join("models/prefixes");
    train(&cfg, &data, &out, &Device::Cpu, &TrainOptions::default())?;
    let model = out.join("model");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model.join(TRAINING_RECORD))?)?;
    assert_eq!(record["config"]["data"]["query_prefix"], Q);
    assert_eq!(record["config"]["data"]["passage_prefix"], P);
    let recorded = trained_prefixes(&model)?.ok_or("no training record")?;
    assert_eq!((recorded.query.as_str(), recorded.passage.as_str()), (Q, P));

    // The trained network ranks the validation split…
    let net = Trainable::build(&cfg, &Device::Cpu)?;
    net.store
        .load_values(&out.join("checkpoints/epoch-1/params.safetensors"))?;
    let val = SplitData::load(&data, "tiny", "val", false)?;
    let trained = net.rank(&val, 100, None, 8)?;
    // …and `lexbench run dense`'s code path, given no prefixes, ranks the same with the recorded ones.
    let params = |system: &str, query_prefix: &str, passage_prefix: &str| DenseParams {
        system: system.into(),
        encode: EncodeOptions {
            max_len: 24,
            ..EncodeOptions::default()
        },
        top_k: 100,
        query_prefix: query_prefix.into(),
        passage_prefix: passage_prefix.into(),
        ..DenseParams::default()
    };
    let rank = |dir: &Path, p: DenseParams| -> Res<(lexbench_core::Run, serde_json::Value)> {
        let system = p.system.clone();
        let mut ranker = DenseRanker::new(dir, p, &Device::Cpu)?;
        let out = write_run(&mut ranker, &RunTarget::new(&data, "tiny", "val", &system)?)?;
        let run = lexbench_core::Run::read(&out.run_path, &Default::default())?;
        let sidecar: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out.sidecar_path)?)?;
        Ok((run, sidecar))
    };
    let (dense, sidecar) = rank(&model, params("dense", "", ""))?;
    assert_eq!(sidecar["config"]["query_prefix"], Q, "{sidecar}");
    assert_eq!(sidecar["config"]["passage_prefix"], P, "{sidecar}");
    assert_same_scores(&trained, &dense);
    // The same prefixes asked for explicitly are accepted.
    assert_same_scores(&trained, &rank(&model, params("same", Q, P))?.0);
    // The same weights without the record: the prefixes must be given to rank as training did.
    let bare = data.join("bare-model");
    copy_without_record(&model, &bare)?;
    assert_same_scores(&trained, &rank(&bare, params("bare-prefixed", Q, P))?.0);
    let (unprefixed, _) = rank(&bare, params("bare", "", ""))?;
    assert_ne!(scores(&trained), scores(&unprefixed));
    // A prefix other than the trained one is refused, naming it.
    for (q, p) in [("query: ", ""), ("", "passage: ")] {
        let e = DenseRanker::new(&model, params("other", q, p), &Device::Cpu)
            .err()
            .ok_or("a different prefix was accepted")?
            .to_string();
        assert!(
            e.contains("trained with the") && e.contains(TRAINING_RECORD),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&data).ok();
    Ok(())
}

/// Every topic's hits as `(doc, score)`, scores rounded to 1e-5.
fn scores(run: &lexbench_core::Run) -> Vec<(String, String, i64)> {
    let mut out = Vec::new();
    for (topic, hits) in &run.topics {
        for h in hits {
            out.push((
                topic.to_string(),
                h.doc.to_string(),
                (h.score * 1e5).round() as i64,
            ));
        }
    }
    out
}

fn assert_same_scores(a: &lexbench_core::Run, b: &lexbench_core::Run) {
    assert_eq!(a.topics.len(), b.topics.len());
    for (topic, hits) in &a.topics {
        let other = &b.topics[topic];
        assert_eq!(hits.len(), other.len(), "{topic}");
        for (x, y) in hits.iter().zip(other) {
            assert_eq!(x.doc, y.doc, "{topic}");
            assert!(
                (x.score - y.score).abs() < 1e-5,
                "{topic}: {} vs {}",
                x.score,
                y.score
            );
        }
    }
}

#[test]
fn the_hierarchical_encoder_takes_the_tokenizers_own_markers() -> TestResult {
    // The tiny WordPiece tokenizer with XLM-R's marker names (multilingual-e5-small: `<s> … </s>`).
    let base = common::tiny_folder("prefix-xlmr")?;
    let tok = std::fs::read_to_string(base.join("tokenizer.json"))?
        .replace("[CLS]", "<s>")
        .replace("[SEP]", "</s>");
    assert!(!tok.contains("[CLS]"));
    std::fs::write(base.join("tokenizer.json"), tok)?;
    let hier = |q: &str, p: &str| -> TrainConfig {
        let mut c = config(&base, "dpr", q, p);
        c.biencoder.article_encoder = lexbench_baselines::train::config::ArticleEncoder::Hierarchical;
        c.biencoder.hier = Some(lexbench_baselines::encoder::hier::HierConfig {
            seg_len: 8,
            max_segments: 4,
            heads: 4,
            ..Default::default()
        });
        c
    };
    let with = Trainable::build(&hier(Q, P), &Device::Cpu)?;
    let articles = with.hier_articles().ok_or("no hierarchical encoder")?;
    // The ids the tiny vocabulary gives [CLS] and [SEP], now named <s> and </s>.
    let id = |t: &str| common::VOCAB.iter().position(|v| *v == t).map(|i| i as u32);
    let (cls, sep) = (id("[CLS]").ok_or("[CLS]")?, id("[SEP]").ok_or("[SEP]")?);
    let segments = articles.segments("the applicant complained of a violation of the convention")?;
    assert_eq!(segments.len(), 2, "{segments:?}");
    for s in &segments {
        assert_eq!((s[0], s[s.len() - 1]), (cls, sep), "{segments:?}");
    }
    // Its articles read the passage prefix, once, before the text.
    let plain = Trainable::build(&hier("", ""), &Device::Cpu)?;
    let d = "the court is the state law";
    let embed = |net: &Trainable, text: &str| net.embed_texts(&[text], false, 4);
    assert_eq!(embed(&with, d)?, embed(&plain, &format!("{P}{d}"))?);
    assert_ne!(embed(&with, d)?, embed(&plain, d)?);
    Ok(())
}

/// multilingual-e5-small as `scripts/fetch-models` installs it (`models/e5-small/config.json`).
const E5_HIDDEN: usize = 384;
const E5_HEADS: usize = 12;
const E5_POSITIONS: usize = 512;

#[test]
fn bsard_configs_train_e5_with_its_prefixes() -> TestResult {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/bsard");
    let mut paths = Vec::new();
    for d in [dir.clone(), dir.join("paper")] {
        for e in std::fs::read_dir(d)? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "toml") {
                paths.push(p);
            }
        }
    }
    let (mut e5, mut ablations) = (0, 0);
    for p in &paths {
        let cfg = TrainConfig::from_file(p)?;
        let at = p.display();
        if cfg.base == Path::new("models/e5-small") {
            assert_eq!(
                (cfg.data.query_prefix.as_str(), cfg.data.passage_prefix.as_str()),
                ("query: ", "passage: "),
                "{at}"
            );
            assert!(
                cfg.data.max_query_len <= E5_POSITIONS && cfg.data.max_doc_len <= E5_POSITIONS,
                "{at}"
            );
            if let Some(h) = cfg.biencoder.hierarchical() {
                assert!(
                    h.seg_len <= E5_POSITIONS && E5_HIDDEN.is_multiple_of(h.heads),
                    "{at}"
                );
            }
            if let Some(g) = &cfg.gnn {
                assert!(E5_HIDDEN.is_multiple_of(g.heads), "{at}");
            }
            if let Some(q) = &cfg.qabisar {
                assert!(E5_HIDDEN.is_multiple_of(q.heads), "{at}");
            }
            e5 += 1;
        } else {
            // The one English-MiniLM configuration is a labelled ablation.
            assert_eq!(cfg.base, Path::new("models/minilm"), "{at}");
            assert!(cfg.name.contains("minilm-ablation"), "{at}");
            assert!(
                cfg.description.contains("English") && cfg.description.contains("French"),
                "{at}"
            );
            ablations += 1;
        }
    }
    assert_eq!(ablations, 1);
    assert!(e5 >= 22, "{e5} configs on multilingual-e5-small");
    // The widths above are e5-small's (checked against models/e5-small/config.json when written).
    assert!(E5_HIDDEN.is_multiple_of(E5_HEADS));
    Ok(())
}
