//! Golden tests against transformers (PyTorch) on small random-weight replicas of the HuggingFace
//! checkpoints lexbench loads, made by `scripts/hf-replicas` with the pinned PyTorch and transformers
//! and committed in `tests/golden/hf-replicas` with the sha256 of the script and pins that made them
//! (nothing downloaded; `the_committed_replicas_are_the_current_scripts` fails when they are stale, and
//! CI's `scripts/hf-replicas --check` makes them again and compares). `$LEXBENCH_HF_REPLICAS` names
//! another folder; without one these tests fail, never skip.
//!
//! Each replica keeps its checkpoint's `config.json` (`model_type`, `architectures`, positions,
//! token types, padding index, layer-norm epsilon) and tensor names (the class that saved it), with
//! 2 layers, hidden 32, a small vocabulary and a tokenizer of its kind. Reference values:
//! `reference.json` in that folder, written by `scripts/hf_replicas.py` with torch 2.15.0,
//! transformers 5.24.0, tokenizers 0.23.3: `AutoTokenizer.from_pretrained(dir)(texts, padding=True)`
//! then `Model.from_pretrained(dir)(**batch).last_hidden_state` (the class of `architectures`).
//!
//! Properties checked, for BERT (legal-bert-base-uncased's shape), DPR question and context encoders,
//! RoBERTa (roberta-base), CamemBERT (camembert-base), XLM-R (multilingual-e5-base) and the two
//! cross-encoders below:
//! - token ids of single texts and of a text pair equal transformers' exactly;
//! - the last hidden state of a padded batch of four texts (real tokens), its mean over the attention
//!   mask, the `[CLS]` state, the pooler and DPR's output equal transformers' within 1e-5 (max |Δ|);
//! - a text pair's hidden states equal transformers' within 1e-5: segment ids 0 / 1 for BERT, none
//!   (type 0 everywhere) for the RoBERTa family;
//! - `SentenceEncoder::embed` (mean pooling, length-sorted batches) gives the reference means;
//! - the RoBERTa family's padding index is 1 and its longest input `max_position_embeddings - 2`;
//! - one in-batch softmax step of a RoBERTa bi-encoder (dot products of mean-pooled vectors, dropout
//!   0, the training forward pass) gives PyTorch's loss and gradients of eight named parameters
//!   (word, position and token-type embeddings, layer norms, attention and feed-forward weights)
//!   within 1e-5;
//! - cross-encoders of cross-encoder/ms-marco-MiniLM-L-12-v2's shape (`BertForSequenceClassification`:
//!   pooler, `classifier`) and cross-encoder/stsb-roberta-base's (`RobertaForSequenceClassification`:
//!   `classifier.dense` → tanh → `classifier.out_proj` on the first token, no pooler) read their head
//!   from the checkpoint and give transformers' logits for a padded batch of pairs within 1e-5;
//! - a folder of a model lexbench does not run (GPT-2) is refused naming config.json and the
//!   model_type;
//! - sentence-transformers folders (`SentenceTransformer(dir).encode(texts)` with
//!   sentence-transformers 6.2.0 is the reference) give its vectors within 1e-5 through
//!   `SentenceEncoder` with no pooling asked and the folder's `max_seq_length`: all-MiniLM-L6-v2's
//!   shape in the hub's older layout (BERT, mean, Normalize, max_seq_length 12 so truncation shows),
//!   msmarco-roberta-base-ance-firstp's (RoBERTa, `[CLS]`, Dense with Identity, LayerNorm) and a
//!   Dense with tanh after max pooling; a pooling asked against the folder's `Pooling` module is
//!   refused naming its config.json, one that agrees is fine; unsupported modules and pooling modes
//!   are refused naming the file; DPR without modules pools with `[CLS]`;
//! - a ColBERT folder shaped like colbert-ir/colbertv2.0 (`HF_ColBERT`, `bert.` weights,
//!   `linear.weight`, `artifact.metadata`) runs with its own projection, markers and lengths: query
//!   and document token ids (marker after `[CLS]`, `[MASK]` padding to query_maxlen, not attended),
//!   query vectors (every position), document vectors (skiplist and padding dropped) and MaxSim
//!   scores equal the reference computed in `scripts/hf_replicas.py` from ColBERT's algorithm within
//!   1e-5.

use std::collections::BTreeMap;
use std::path::PathBuf;

use candle_core::{Device, Tensor};
use lexbench_baselines::encoder::bert::encoder_tensors;
use lexbench_baselines::encoder::st;
use lexbench_baselines::encoder::{
    Arch, BertConfig, BertModel, EncodeOptions, Pooling, SentenceEncoder, TextTokenizer, Tokens, pad_batch,
    pool,
};
use lexbench_baselines::scorers::CrossEncoder;
use lexbench_baselines::scorers::colbert::{ColBert, ColBertConfig, has_projection};
use lexbench_baselines::train::params::ParamStore;
use serde::Deserialize;

const TOL: f32 = 1e-5;

#[derive(Deserialize)]
struct Pair {
    texts: (String, String),
    token_ids: Vec<u32>,
    type_ids: Option<Vec<u32>>,
    hidden: Vec<Vec<f32>>,
}

#[derive(Deserialize)]
struct Cross {
    pairs: Vec<(String, String)>,
    token_ids: Vec<Vec<u32>>,
    logits: Vec<f32>,
}

/// Pairs longer than an odd content budget, cut by transformers with `truncation="longest_first"`
/// (issue 54, item 7).
#[derive(Deserialize)]
struct CrossTruncated {
    max_length: usize,
    pairs: Vec<(String, String)>,
    token_ids: Vec<Vec<u32>>,
    untruncated_lengths: Vec<(usize, usize)>,
}

#[derive(Deserialize)]
struct Replica {
    checkpoint: String,
    model_type: String,
    texts: Vec<String>,
    token_ids: Vec<Vec<u32>>,
    hidden: Vec<Vec<Vec<f32>>>,
    mean: Vec<Vec<f32>>,
    cls: Vec<Vec<f32>>,
    pooler: Option<Vec<Vec<f32>>>,
    dpr_output: Option<Vec<Vec<f32>>>,
    pair: Pair,
    cross: Option<Cross>,
    cross_truncated: Option<CrossTruncated>,
}

#[derive(Deserialize)]
struct TrainStep {
    queries: Vec<String>,
    passages: Vec<String>,
    scores: Vec<Vec<f32>>,
    loss: f32,
    grads: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct StReplica {
    checkpoint: String,
    pooling: String,
    max_seq_length: usize,
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

#[derive(Deserialize)]
struct ColBertRef {
    checkpoint: String,
    queries: Vec<String>,
    docs: Vec<String>,
    query_ids: Vec<Vec<u32>>,
    query_attention: Vec<Vec<u32>>,
    doc_ids: Vec<Vec<u32>>,
    doc_kept: Vec<Vec<u32>>,
    query_vectors: Vec<Vec<Vec<f32>>>,
    doc_vectors: Vec<Vec<Vec<f32>>>,
    scores: Vec<Vec<f32>>,
}

#[derive(Deserialize)]
struct Reference {
    replicas: BTreeMap<String, Replica>,
    train_step: TrainStep,
    sentence_transformers: BTreeMap<String, StReplica>,
    colbert: ColBertRef,
}

/// The replicas' folder ([`lexbench_core::testing::hf_replicas_dir`]).
fn replicas() -> PathBuf {
    lexbench_core::testing::hf_replicas_dir()
}

fn reference() -> Reference {
    let path = replicas().join("reference.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn max_delta(got: &[f32], want: &[f32], what: &str) -> f32 {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    got.iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max)
}

fn flat(rows: &[Vec<f32>]) -> Vec<f32> {
    rows.iter().flatten().copied().collect()
}

/// Every value of a JSON array nested to any depth, in order.
fn numbers(v: &serde_json::Value, out: &mut Vec<f32>) {
    match v {
        serde_json::Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
        serde_json::Value::Number(n) => out.push(n.as_f64().unwrap_or(f64::NAN) as f32),
        other => panic!("not a number: {other}"),
    }
}

/// Compares `name`'s replica with transformers; returns the largest |Δ| over every vector compared.
fn check(name: &str) -> f32 {
    let r = reference();
    let rep = r
        .replicas
        .get(name)
        .unwrap_or_else(|| panic!("reference.json has no replica {name}: rerun scripts/hf-replicas"));
    let dir = replicas().join(name);
    let dev = Device::Cpu;
    let model = BertModel::from_dir(&dir, &dev).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(model.arch().model_type(), rep.model_type, "{name}");
    let tok = TextTokenizer::from_file(&dir.join("tokenizer.json"), 512).expect("tokenizer");
    let texts: Vec<&str> = rep.texts.iter().map(String::as_str).collect();
    let toks = tok.encode(&texts).expect("encode");
    let ids: Vec<Vec<u32>> = toks.iter().map(|t| t.ids.clone()).collect();
    assert_eq!(ids, rep.token_ids, "{name}: token ids");

    let mut worst = 0f32;
    let mut note = |what: &str, got: &[f32], want: &[f32]| {
        let d = max_delta(got, want, what);
        assert!(
            d <= TOL,
            "{name} ({}): {what} max |Δ| {d:e} > {TOL:e}",
            rep.checkpoint
        );
        worst = worst.max(d);
    };
    let refs: Vec<&Tokens> = toks.iter().collect();
    let inputs = pad_batch(&refs, tok.pad_id(), &dev).expect("pad");
    let hidden = model.forward_t(&inputs, false).expect("forward");
    let h = hidden.to_vec3::<f32>().expect("hidden");
    for (i, want) in rep.hidden.iter().enumerate() {
        note(
            &format!("hidden state of text {i}"),
            &flat(&h[i][..want.len()]),
            &flat(want),
        );
    }
    let mean = pool(&hidden, &inputs.attention_mask, Pooling::Mean).expect("mean");
    note(
        "mean",
        &flat(&mean.to_vec2::<f32>().expect("mean")),
        &flat(&rep.mean),
    );
    let cls = pool(&hidden, &inputs.attention_mask, Pooling::Cls).expect("cls");
    let cls = flat(&cls.to_vec2::<f32>().expect("cls"));
    note("[CLS] state", &cls, &flat(&rep.cls));
    if let Some(dpr) = &rep.dpr_output {
        note("DPR output ([CLS] pooling)", &cls, &flat(dpr));
    }
    match (&rep.pooler, model.pooler()) {
        (Some(want), Some(p)) => {
            let got = p.forward_t(&hidden, false).expect("pooler");
            note(
                "pooler",
                &flat(&got.to_vec2::<f32>().expect("pooler")),
                &flat(want),
            );
        }
        (None, None) => {}
        (want, got) => panic!(
            "{name}: transformers has a pooler: {}, lexbench: {}",
            want.is_some(),
            got.is_some()
        ),
    }

    // A text pair: BERT's segment ids, none for the RoBERTa family.
    let pair = tok
        .encode_pairs(&[(rep.pair.texts.0.as_str(), rep.pair.texts.1.as_str())])
        .expect("pair");
    assert_eq!(pair[0].ids, rep.pair.token_ids, "{name}: pair token ids");
    if let Some(types) = &rep.pair.type_ids {
        assert_eq!(&pair[0].type_ids, types, "{name}: pair segment ids");
    }
    let inputs = pad_batch(&[&pair[0]], tok.pad_id(), &dev).expect("pad");
    let got = model.forward_t(&inputs, false).expect("pair forward");
    note(
        "pair hidden state",
        &flat(&got.to_vec3::<f32>().expect("pair")[0]),
        &flat(&rep.pair.hidden),
    );

    // The sentence encoder (length-sorted batches, mean pooling, no normalisation).
    let options = EncodeOptions {
        normalize: false,
        pooling: Some(Pooling::Mean),
        batch_size: 3,
        ..EncodeOptions::default()
    };
    let enc = SentenceEncoder::from_dir(&dir, &dev, options).expect("sentence encoder");
    let vecs = enc.embed(&texts).expect("embed");
    note("SentenceEncoder::embed", &flat(&vecs), &flat(&rep.mean));
    eprintln!("{name} ({}): max |Δ| {worst:e}", rep.checkpoint);
    worst
}

#[test]
fn legal_bert_replica_matches_transformers() {
    check("legal-bert");
}

#[test]
fn dpr_question_encoder_replica_matches_transformers() {
    check("dpr-question");
}

#[test]
fn dpr_context_encoder_replica_matches_transformers() {
    check("dpr-ctx");
}

#[test]
fn roberta_replica_matches_transformers() {
    check("roberta");
}

#[test]
fn camembert_replica_matches_transformers() {
    check("camembert");
}

#[test]
fn xlm_roberta_replica_matches_transformers() {
    check("multilingual-e5");
}

/// [`check`], then the cross-encoder's logits for a padded batch of pairs (its head from the
/// checkpoint: BERT's on the pooler, or RoBERTa's on the first token).
fn check_cross(name: &str) {
    let mut worst = check(name);
    let r = reference();
    let want = r.replicas[name]
        .cross
        .as_ref()
        .unwrap_or_else(|| panic!("{name}: no cross-encoder reference: rerun scripts/hf-replicas"));
    let dir = replicas().join(name);
    let fresh = candle_nn::VarMap::new();
    let new_head = candle_nn::VarBuilder::from_varmap(&fresh, candle_core::DType::F32, &Device::Cpu);
    let ce = CrossEncoder::from_dir(&dir, &Device::Cpu, 512, new_head).expect("cross-encoder");
    assert!(
        ce.head_from_checkpoint(),
        "{name}: the checkpoint's head was not used"
    );
    assert!(fresh.all_vars().is_empty(), "{name}: a new head was made");
    let pairs: Vec<(&str, &str)> = want.pairs.iter().map(|(q, p)| (q.as_str(), p.as_str())).collect();
    let toks = ce.tokenize(&pairs).expect("tokenize");
    let ids: Vec<Vec<u32>> = toks.iter().map(|t| t.ids.clone()).collect();
    assert_eq!(ids, want.token_ids, "{name}: pair token ids");
    // One padded batch, in the reference's order, and `score`'s length-sorted batches.
    let refs: Vec<&Tokens> = toks.iter().collect();
    let batch = ce
        .forward_t(&refs, false)
        .expect("forward")
        .to_vec1::<f32>()
        .expect("logits");
    let d = max_delta(&batch, &want.logits, "logits").max(max_delta(
        &ce.score(&pairs).expect("score"),
        &want.logits,
        "scores",
    ));
    assert!(d <= TOL, "{name}: logits max |Δ| {d:e} > {TOL:e}");
    worst = worst.max(d);
    eprintln!("{name} cross-encoder: logits max |Δ| {d:e}, overall {worst:e}");
    check_cross_truncation(name);
}

/// Issue 54, item 7: pairs over an odd content budget are cut as transformers cuts them
/// (`truncation="longest_first"`: the odd token to the longer segment), token for token.
fn check_cross_truncation(name: &str) {
    let r = reference();
    let want = r.replicas[name]
        .cross_truncated
        .as_ref()
        .unwrap_or_else(|| panic!("{name}: no truncated-pair reference: rerun scripts/hf-replicas"));
    let dir = replicas().join(name);
    let fresh = candle_nn::VarMap::new();
    let new_head = candle_nn::VarBuilder::from_varmap(&fresh, candle_core::DType::F32, &Device::Cpu);
    let ce = CrossEncoder::from_dir(&dir, &Device::Cpu, want.max_length, new_head).expect("cross-encoder");
    let pairs: Vec<(&str, &str)> = want.pairs.iter().map(|(q, p)| (q.as_str(), p.as_str())).collect();
    // The references exercise what they claim: the query the longer in the first pair, the passage
    // the longer in the second.
    let (q0, p0) = want.untruncated_lengths[0];
    let (q1, p1) = want.untruncated_lengths[1];
    assert!(q0 > p0 && p1 > q1, "{name}: {:?}", want.untruncated_lengths);
    let toks = ce.tokenize(&pairs).expect("tokenize");
    for ((got, ids), pair) in toks.iter().zip(&want.token_ids).zip(&want.pairs) {
        assert_eq!(
            got.ids.len(),
            want.max_length,
            "{name}: {pair:?} not cut to {}",
            want.max_length
        );
        assert_eq!(&got.ids, ids, "{name}: {pair:?} cut unlike transformers");
    }
    eprintln!(
        "{name}: {} pairs cut at {} tokens as transformers cuts them",
        pairs.len(),
        want.max_length
    );
}

#[test]
fn ms_marco_cross_encoder_replica_matches_transformers() {
    check_cross("ms-marco-cross");
}

#[test]
fn roberta_cross_encoder_replica_matches_transformers() {
    check_cross("roberta-cross");
}

#[test]
fn roberta_family_pads_with_1_and_takes_positions_less_two() {
    for name in ["roberta", "camembert", "multilingual-e5"] {
        let dir = replicas().join(name);
        let options = EncodeOptions {
            max_len: 10_000,
            ..EncodeOptions::default()
        };
        let enc = SentenceEncoder::from_dir(&dir, &Device::Cpu, options).expect("load");
        assert!(enc.model().arch().is_roberta_family(), "{name}");
        assert_eq!(enc.tokenizer().pad_id(), 1, "{name}: <pad>");
        assert_eq!(enc.model().config().max_position_embeddings, 514, "{name}");
        assert_eq!(
            enc.tokenizer().max_len(),
            512,
            "{name}: 514 positions less pad + 1"
        );
        // The longest input runs; one token more is refused, never read past the positions.
        let tok = enc.tokenizer();
        let long = vec!["court"; 600].join(" ");
        let toks = tok.encode(&[&long]).expect("encode");
        assert_eq!(toks[0].ids.len(), 512, "{name}");
        enc.encode_tokens(&[&toks[0]]).expect("512 tokens");
        let mut over = toks[0].clone();
        over.ids.push(over.ids[1]);
        over.type_ids.push(0);
        over.mask.push(1);
        let e = enc.encode_tokens(&[&over]).expect_err("513 tokens").to_string();
        assert!(e.contains("at most the model's 512 positions"), "{name}: {e}");
    }
    let bert = SentenceEncoder::from_dir(
        &replicas().join("legal-bert"),
        &Device::Cpu,
        EncodeOptions {
            max_len: 10_000,
            ..EncodeOptions::default()
        },
    )
    .expect("load");
    assert_eq!(bert.tokenizer().pad_id(), 0);
    assert_eq!(bert.tokenizer().max_len(), 512);
}

#[test]
fn roberta_bi_encoder_training_step_matches_pytorch() {
    let step = reference().train_step;
    let dir = replicas().join("roberta");
    let dev = Device::Cpu;
    let mut cfg = BertConfig::from_file(&dir.join("config.json")).expect("config");
    assert_eq!(cfg.arch().expect("arch"), Arch::Roberta);
    // PyTorch's reference ran in eval mode: no dropout; here the training forward pass without it.
    cfg.hidden_dropout_prob = 0.0;
    cfg.attention_probs_dropout_prob = 0.0;
    let tensors = encoder_tensors(&dir.join("model.safetensors"), Arch::Roberta, &dev).expect("tensors");
    let store = ParamStore::with_initial(1, tensors);
    let model = BertModel::load(&cfg, store.var_builder(&dev), false).expect("model");
    let tok = TextTokenizer::from_file(&dir.join("tokenizer.json"), 512).expect("tokenizer");
    let embed = |texts: &[String]| -> Tensor {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let toks = tok.encode(&texts).expect("encode");
        let refs: Vec<&Tokens> = toks.iter().collect();
        let inputs = pad_batch(&refs, tok.pad_id(), &dev).expect("pad");
        let h = model.forward_t(&inputs, true).expect("forward");
        pool(&h, &inputs.attention_mask, Pooling::Mean).expect("pool")
    };
    let scores = embed(&step.queries)
        .matmul(&embed(&step.passages).t().expect("t"))
        .expect("scores");
    let mut worst = max_delta(
        &flat(&scores.to_vec2::<f32>().expect("scores")),
        &flat(&step.scores),
        "scores",
    );
    assert!(worst <= TOL, "scores max |Δ| {worst:e}");
    let targets = Tensor::new(&[0u32, 1, 2], &dev).expect("targets");
    let loss = candle_nn::loss::cross_entropy(&scores, &targets).expect("loss");
    let got = loss.to_scalar::<f32>().expect("loss");
    assert!(
        (got - step.loss).abs() <= TOL,
        "loss {got} vs PyTorch {}",
        step.loss
    );
    let grads = loss.backward().expect("backward");
    let vars: BTreeMap<String, _> = store.vars().into_iter().collect();
    for (name, want) in &step.grads {
        let var = vars.get(name).unwrap_or_else(|| panic!("no variable {name}"));
        let got = grads
            .get(var.as_tensor())
            .unwrap_or_else(|| panic!("no gradient for {name}"))
            .flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .expect("gradient");
        let mut want_v = Vec::new();
        numbers(want, &mut want_v);
        let d = max_delta(&got, &want_v, name);
        assert!(d <= TOL, "gradient of {name}: max |Δ| {d:e} > {TOL:e}");
        assert!(
            want_v.iter().any(|&x| x != 0.0),
            "{name}: PyTorch's gradient is all zeros"
        );
        worst = worst.max(d);
    }
    eprintln!(
        "roberta training step: loss {got} (PyTorch {}), max |Δ| {worst:e}",
        step.loss
    );
}

#[test]
fn a_model_lexbench_does_not_run_is_refused() {
    let dir = replicas().join("unknown-gpt2");
    let e = BertModel::from_dir(&dir, &Device::Cpu)
        .expect_err("a GPT-2 folder loaded")
        .to_string();
    let config = dir.join("config.json");
    assert!(e.starts_with(&format!("{}: ", config.display())), "{e}");
    assert!(e.contains("model_type \"gpt2\" is not supported"), "{e}");
    assert!(e.contains("roberta") && e.contains("bert"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let e = SentenceEncoder::from_dir(&dir, &Device::Cpu, EncodeOptions::default())
        .expect_err("a GPT-2 folder loaded")
        .to_string();
    assert!(e.contains("gpt2"), "{e}");
}

#[test]
fn a_roberta_config_over_bert_weights_is_refused() {
    // legal-bert's weights (under `bert.`) with a config saying roberta: the tensors are not where
    // a RoBERTa checkpoint has them, so nothing loads under the wrong edges.
    let src = replicas().join("legal-bert");
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-hf-golden-{}-mixed", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(src.join("model.safetensors"), dir.join("model.safetensors")).expect("copy");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).expect("read")).expect("json");
    cfg["model_type"] = "roberta".into();
    cfg["architectures"] = serde_json::json!(["RobertaModel"]);
    cfg["max_position_embeddings"] = 514.into();
    std::fs::write(dir.join("config.json"), cfg.to_string()).expect("write");
    let e = BertModel::from_dir(&dir, &Device::Cpu)
        .expect_err("loaded")
        .to_string();
    assert!(
        e.contains("no roberta.embeddings.word_embeddings.weight or embeddings.word_embeddings.weight"),
        "{e}"
    );
    assert!(e.contains("model_type roberta"), "{e}");
}

#[test]
fn a_cross_encoder_head_with_two_labels_is_refused() {
    let src = replicas().join("ms-marco-cross");
    let dir = lexbench_core::testing::scratch_root()
        .join(format!("lexbench-hf-golden-{}-two-labels", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(src.join(f), dir.join(f)).expect("copy");
    }
    let weights = dir.join("model.safetensors");
    let mut tensors =
        candle_core::safetensors::load(src.join("model.safetensors"), &Device::Cpu).expect("load");
    let w = tensors["classifier.weight"].clone();
    tensors.insert(
        "classifier.weight".into(),
        Tensor::cat(&[&w, &w], 0).expect("cat"),
    );
    tensors.insert(
        "classifier.bias".into(),
        Tensor::zeros(2, candle_core::DType::F32, &Device::Cpu).expect("zeros"),
    );
    candle_core::safetensors::save(&tensors, &weights).expect("save");
    let fresh = candle_nn::VarMap::new();
    let new_head = candle_nn::VarBuilder::from_varmap(&fresh, candle_core::DType::F32, &Device::Cpu);
    let e = CrossEncoder::from_dir(&dir, &Device::Cpu, 512, new_head)
        .expect_err("two labels loaded")
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}: classifier.weight has 2 rows: a classification head with 2 labels, but a cross-encoder gives one \
             relevance logit (num_labels 1)",
            weights.display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sentence-transformers replica `name` through `SentenceEncoder` with nothing asked but the
/// folder's `max_seq_length`: its pooling and modules, against `SentenceTransformer(dir).encode`.
fn check_st(name: &str) -> f32 {
    let r = reference();
    let rep = r
        .sentence_transformers
        .get(name)
        .unwrap_or_else(|| panic!("reference.json has no {name}: rerun scripts/hf-replicas"));
    let dir = replicas().join(name);
    let max_len = st::model_max_len(&dir).expect("max_seq_length").unwrap_or(256);
    let options = EncodeOptions {
        max_len,
        pooling: None,
        normalize: false,
        batch_size: 2,
    };
    let enc =
        SentenceEncoder::from_dir(&dir, &Device::Cpu, options).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(enc.modules().is_some(), "{name}: modules not read");
    assert_eq!(enc.pooling().to_string(), rep.pooling, "{name}: pooling");
    assert_eq!(
        enc.tokenizer().max_len(),
        rep.max_seq_length.min(enc.model().config().max_tokens()),
        "{name}: max_seq_length"
    );
    let texts: Vec<&str> = rep.texts.iter().map(String::as_str).collect();
    let got = enc.embed(&texts).expect("embed");
    let d = max_delta(&flat(&got), &flat(&rep.vectors), name);
    assert!(
        d <= TOL,
        "{name} ({}): max |Δ| {d:e} > {TOL:e} against sentence-transformers",
        rep.checkpoint
    );
    eprintln!("{name} ({}): max |Δ| {d:e}", rep.checkpoint);
    d
}

#[test]
fn all_minilm_style_folder_matches_sentence_transformers() {
    check_st("st-minilm");
    let enc = SentenceEncoder::from_dir(
        &replicas().join("st-minilm"),
        &Device::Cpu,
        EncodeOptions {
            normalize: false,
            ..EncodeOptions::default()
        },
    )
    .expect("load");
    assert!(enc.modules().expect("modules").normalizes(), "Normalize read");
    assert_eq!(enc.pooling(), Pooling::Mean);
}

#[test]
fn ance_style_folder_matches_sentence_transformers() {
    check_st("st-ance");
    let m = st::StModules::read(&replicas().join("st-ance"), &Device::Cpu)
        .expect("read")
        .expect("modules");
    assert_eq!(m.pooling(), Pooling::Cls);
    assert!(matches!(
        m.stages(),
        [
            st::Stage::Dense {
                activation: st::Activation::Identity,
                bias: Some(_),
                ..
            },
            st::Stage::LayerNorm(_)
        ]
    ));
}

#[test]
fn dense_tanh_after_max_pooling_matches_sentence_transformers() {
    check_st("st-tanh");
    let m = st::StModules::read(&replicas().join("st-tanh"), &Device::Cpu)
        .expect("read")
        .expect("modules");
    assert_eq!((m.pooling(), m.dim()), (Pooling::Max, 16));
    assert!(matches!(
        m.stages(),
        [
            st::Stage::Dense {
                activation: st::Activation::Tanh,
                ..
            },
            st::Stage::Normalize
        ]
    ));
}

#[test]
fn a_pooling_against_the_folders_modules_is_refused() {
    let dir = replicas().join("st-ance");
    let load = |pooling| {
        SentenceEncoder::from_dir(
            &dir,
            &Device::Cpu,
            EncodeOptions {
                pooling,
                ..EncodeOptions::default()
            },
        )
    };
    let e = load(Some(Pooling::Mean))
        .expect_err("mean on a [CLS] model")
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}: the model pools with cls (its sentence-transformers Pooling module), but mean pooling was asked \
             for: leave the pooling out to use the model's",
            dir.join("1_Pooling/config.json").display()
        )
    );
    assert_eq!(load(Some(Pooling::Cls)).expect("agrees").pooling(), Pooling::Cls);
    // DPR has no modules: [CLS] unless asked otherwise, and it gives DPR's output.
    let dpr = replicas().join("dpr-question");
    assert_eq!(st::default_pooling(&dpr).expect("pooling"), Pooling::Cls);
    let enc = SentenceEncoder::from_dir(
        &dpr,
        &Device::Cpu,
        EncodeOptions {
            normalize: false,
            ..EncodeOptions::default()
        },
    )
    .expect("dpr");
    assert_eq!(enc.pooling(), Pooling::Cls);
    let r = reference();
    let rep = &r.replicas["dpr-question"];
    let texts: Vec<&str> = rep.texts.iter().map(String::as_str).collect();
    let d = max_delta(
        &flat(&enc.embed(&texts).expect("embed")),
        &flat(rep.dpr_output.as_ref().expect("dpr output")),
        "dpr",
    );
    assert!(d <= TOL, "DPR [CLS] by default: max |Δ| {d:e}");
}

#[test]
fn unsupported_sentence_transformers_modules_are_refused() {
    let src = replicas().join("st-tanh");
    let dir =
        lexbench_core::testing::scratch_root().join(format!("lexbench-hf-golden-{}-st", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for rel in ["", "1_Pooling", "2_Dense", "3_Normalize"] {
        std::fs::create_dir_all(dir.join(rel)).expect("mkdir");
    }
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "sentence_bert_config.json",
        "modules.json",
        "1_Pooling/config.json",
        "2_Dense/config.json",
        "2_Dense/model.safetensors",
        "3_Normalize/config.json",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let load = || {
        SentenceEncoder::from_dir(&dir, &Device::Cpu, EncodeOptions::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    load().expect("the copy loads");
    let edit = |file: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let path = dir.join(file);
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        f(&mut v);
        std::fs::write(&path, v.to_string()).expect("write");
    };
    // Two pooling modes at once (sentence-transformers concatenates them).
    edit("1_Pooling/config.json", &|v| {
        v["pooling_mode"] = serde_json::json!(["max", "mean"])
    });
    let e = load().expect_err("two modes");
    assert!(
        e.starts_with(&dir.join("1_Pooling/config.json").display().to_string()),
        "{e}"
    );
    assert!(e.contains("exactly one of cls, mean and max"), "{e}");
    edit("1_Pooling/config.json", &|v| v["pooling_mode"] = "max".into());
    // An activation lexbench does not run.
    edit("2_Dense/config.json", &|v| {
        v["activation_function"] = "torch.nn.modules.activation.GELU".into();
    });
    let e = load().expect_err("GELU");
    assert!(e.contains("2_Dense/config.json") && e.contains("GELU"), "{e}");
    edit("2_Dense/config.json", &|v| {
        v["activation_function"] = "torch.nn.modules.activation.Tanh".into();
    });
    // A module lexbench does not run.
    edit("modules.json", &|v| {
        v[2]["type"] = "sentence_transformers.models.WeightedLayerPooling".into();
    });
    let e = load().expect_err("WeightedLayerPooling");
    assert!(
        e.contains("modules.json") && e.contains("WeightedLayerPooling"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn colbert_checkpoint_matches_colberts_algorithm() {
    let want = reference().colbert;
    let dir = replicas().join("colbert");
    let cfg = ColBertConfig::for_model(&dir).expect("artifact.metadata");
    assert_eq!(
        (
            cfg.query_maxlen,
            cfg.doc_maxlen,
            cfg.dim,
            cfg.attend_to_mask_tokens
        ),
        (10, 12, 16, false),
        "{cfg:?}"
    );
    assert!(has_projection(&dir).expect("header"));
    // Defaults given: the model's markers, dim and masking replace them; the lengths asked stay.
    let fresh = candle_nn::VarMap::new();
    let new_linear = candle_nn::VarBuilder::from_varmap(&fresh, candle_core::DType::F32, &Device::Cpu);
    let cb = ColBert::from_dir(&dir, &Device::Cpu, cfg, new_linear).expect("colbert");
    assert!(cb.projection_from_checkpoint(), "the checkpoint's linear.weight");
    assert!(fresh.all_vars().is_empty(), "a new projection was made");
    let queries: Vec<&str> = want.queries.iter().map(String::as_str).collect();
    let docs: Vec<&str> = want.docs.iter().map(String::as_str).collect();
    let qt = cb.query_tokens(&queries).expect("query tokens");
    assert_eq!(
        qt.iter().map(|t| t.ids.clone()).collect::<Vec<_>>(),
        want.query_ids
    );
    assert_eq!(
        qt.iter().map(|t| t.mask.clone()).collect::<Vec<_>>(),
        want.query_attention
    );
    let dt = cb.doc_tokens(&docs).expect("doc tokens");
    assert_eq!(dt.iter().map(|t| t.ids.clone()).collect::<Vec<_>>(), want.doc_ids);
    let kept: Vec<Vec<u32>> = dt
        .iter()
        .map(|t| {
            t.ids
                .iter()
                .map(|&id| u32::from(!cb.is_punctuation(id)))
                .collect()
        })
        .collect();
    assert_eq!(kept, want.doc_kept, "skiplist");
    let mut worst = 0f32;
    let mut note = |what: &str, got: &[f32], want: &[f32]| {
        let d = max_delta(got, want, what);
        assert!(d <= TOL, "colbert: {what} max |Δ| {d:e} > {TOL:e}");
        worst = worst.max(d);
    };
    for (i, (q, w)) in cb
        .encode_queries(&queries)
        .expect("queries")
        .iter()
        .zip(&want.query_vectors)
        .enumerate()
    {
        note(
            &format!("query {i} vectors"),
            &flat(&q.to_vec2::<f32>().expect("q")),
            &flat(w),
        );
    }
    for (i, (d, w)) in cb
        .encode_docs(&docs)
        .expect("docs")
        .iter()
        .zip(&want.doc_vectors)
        .enumerate()
    {
        note(
            &format!("document {i} vectors"),
            &flat(&d.to_vec2::<f32>().expect("d")),
            &flat(w),
        );
    }
    let scores = cb.score(&queries, &docs).expect("score");
    note("MaxSim scores", &flat(&scores), &flat(&want.scores));
    eprintln!("colbert ({}): max |Δ| {worst:e}", want.checkpoint);
}

#[test]
fn training_reads_the_base_encoder_of_every_architecture() {
    // `train --base` on a RoBERTa, CamemBERT, DPR or ColBERT folder: the encoder's tensors without
    // the architecture's prefix, the same as the encoder loads; ColBERT's `linear.weight` kept.
    for name in [
        "legal-bert",
        "roberta",
        "camembert",
        "multilingual-e5",
        "dpr-question",
        "dpr-ctx",
        "colbert",
    ] {
        let dir = replicas().join(name);
        let got = lexbench_baselines::train::model::base_tensors(&dir, &Device::Cpu)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let arch = BertConfig::from_file(&dir.join("config.json"))
            .and_then(|c| c.arch())
            .expect("arch");
        let want = encoder_tensors(&dir.join("model.safetensors"), arch, &Device::Cpu).expect("tensors");
        assert_eq!(
            got.keys().collect::<std::collections::BTreeSet<_>>(),
            want.keys().collect(),
            "{name}"
        );
        for key in [
            "embeddings.word_embeddings.weight",
            "encoder.layer.1.output.LayerNorm.bias",
        ] {
            assert!(got.contains_key(key), "{name}: no {key}");
        }
        assert_eq!(got.contains_key("linear.weight"), name == "colbert", "{name}");
    }
}

/// The committed replicas were made by the script and pins in this checkout: their `SCRIPT_SHA256` is
/// scripts/hf-replicas's stamp, sha256 of (the hex sha256 of scripts/hf_replicas.py, a newline, the
/// pins file). A change to either without `scripts/hf-replicas` run and its output committed fails
/// here, naming what to run. (That the folder is that script's output is CI's `--check`.)
#[test]
fn the_committed_replicas_are_the_current_scripts() {
    use sha2::{Digest, Sha256};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let read =
        |p: &str| std::fs::read(root.join(p)).unwrap_or_else(|e| panic!("{}: {e}", root.join(p).display()));
    let script = format!("{:x}", Sha256::digest(read("scripts/hf_replicas.py")));
    let mut stamp = Sha256::new();
    stamp.update(format!("{script}\n"));
    stamp.update(read("scripts/hf-replicas.pins"));
    let want = format!("{:x}", stamp.finalize());
    let committed = String::from_utf8(read("tests/golden/hf-replicas/SCRIPT_SHA256")).unwrap();
    assert_eq!(
        committed.trim(),
        want,
        "tests/golden/hf-replicas was made by another scripts/hf_replicas.py or other pins: run \
         scripts/hf-replicas and commit the folder"
    );
}
