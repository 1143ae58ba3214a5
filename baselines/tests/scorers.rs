//! Scorers and the embedding cache on a tiny random BERT with a tiny WordPiece tokenizer, both
//! written here as an HF folder (no download).
//!
//! Properties checked:
//! - dot and cosine similarity on hand-worked vectors; MaxSim on a hand-worked pair; MaxSim of a
//!   query against stacked documents equals MaxSim document by document, and refuses a document
//!   without vectors or of another width;
//! - bi-encoder: an `(queries × docs)` score matrix; with cosine, a text is most similar to itself (1);
//! - cross-encoder: pairs become `[CLS] q [SEP] p [SEP]` with segment ids 0…0 1…1; one score per pair,
//!   the same whether a pair is scored alone or inside a padded, length-sorted batch;
//! - ColBERT: queries are `[CLS] [Q] … [SEP]` padded with `[MASK]` to `query_maxlen` (masks not attended
//!   in v1 mode, attended in v2 mode), documents `[CLS] [D] … [SEP]` truncated to `doc_maxlen`;
//!   vectors have `dim` components and unit norm; punctuation vectors are dropped from documents;
//!   `score` is MaxSim of the encoded matrices;
//! - cache: vectors written once are read back identical by a new cache over the same file, only
//!   uncached texts are encoded, the file is replaced atomically (no temporary left), and a corrupt
//!   file or a dimension change is an error.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use lexbench_baselines::encoder::{EncodeOptions, Pooling, SentenceEncoder, TextTokenizer};
use lexbench_baselines::rank::cache::{CachedEncoder, EmbeddingCache};
use lexbench_baselines::scorers::{
    BiEncoder, ColBert, ColBertConfig, CrossEncoder, Similarity, maxsim, similarity, similarity_matrix,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

mod common;
use common::tiny_folder;

fn encoder(dir: &Path) -> lexbench_baselines::Result<SentenceEncoder> {
    SentenceEncoder::from_dir(
        dir,
        &Device::Cpu,
        EncodeOptions {
            max_len: 32,
            pooling: Some(Pooling::Mean),
            normalize: true,
            batch_size: 2,
        },
    )
}

#[test]
fn similarities_by_hand() -> TestResult {
    let (a, b) = ([3.0, 4.0], [4.0, 3.0]);
    assert_eq!(similarity(&a, &b, Similarity::Dot), 24.0);
    assert!((similarity(&a, &b, Similarity::Cosine) - 0.96).abs() < 1e-6);
    assert_eq!(similarity(&a, &[0.0, 0.0], Similarity::Cosine), 0.0);
    let m = similarity_matrix(&[a.to_vec()], &[a.to_vec(), b.to_vec()], Similarity::Dot);
    assert_eq!(m, vec![vec![25.0, 24.0]]);
    let q = Tensor::new(&[[1f32, 0.0], [0.0, 1.0]], &Device::Cpu)?;
    let d = Tensor::new(&[[1f32, 0.0], [0.6, 0.8], [-1.0, 0.0]], &Device::Cpu)?;
    assert!((maxsim(&q, &d)? - 1.8).abs() < 1e-6);
    Ok(())
}

#[test]
fn stacked_maxsim_equals_maxsim_document_by_document() -> TestResult {
    use lexbench_baselines::scorers::colbert::MaxSimDocs;
    let dev = Device::Cpu;
    // Documents of 1 to 40 vectors (a pool's spread), 8-dimensional, against queries of 1 and 5.
    let docs: Vec<Tensor> = [1usize, 7, 40, 2, 13]
        .iter()
        .map(|&n| Tensor::randn(0f32, 1.0, (n, 8), &dev))
        .collect::<Result<_, _>>()?;
    let stacked = MaxSimDocs::new(&docs)?;
    assert_eq!(stacked.len(), 5);
    for nq in [1, 5] {
        let q = Tensor::randn(0f32, 1.0, (nq, 8), &dev)?;
        let got = stacked.scores(&q)?;
        assert_eq!(got.len(), docs.len());
        for (g, d) in got.iter().zip(&docs) {
            let want = maxsim(&q, d)?;
            assert!((g - want).abs() <= 1e-5 * want.abs().max(1.0), "{g} vs {want}");
        }
    }
    // By hand: the pair of `similarities_by_hand`, and a document whose best match is negative.
    let q = Tensor::new(&[[1f32, 0.0], [0.0, 1.0]], &dev)?;
    let d1 = Tensor::new(&[[1f32, 0.0], [0.6, 0.8], [-1.0, 0.0]], &dev)?;
    let d2 = Tensor::new(&[[-1f32, -0.5]], &dev)?;
    let s = MaxSimDocs::new(&[&d1, &d2])?.scores(&q)?;
    assert!((s[0] - 1.8).abs() < 1e-6 && (s[1] + 1.5).abs() < 1e-6, "{s:?}");
    assert!(MaxSimDocs::new::<Tensor>(&[])?.scores(&q)?.is_empty());
    let empty = Tensor::zeros((0, 2), DType::F32, &dev)?;
    let err = MaxSimDocs::new(&[&d1, &empty]).unwrap_err().to_string();
    assert!(err.contains("document 1 has no token vectors"), "{err}");
    let wide = Tensor::zeros((2, 3), DType::F32, &dev)?;
    let err = MaxSimDocs::new(&[&d1, &wide]).unwrap_err().to_string();
    assert!(err.contains("document 1 has vectors of width 3"), "{err}");
    Ok(())
}

#[test]
fn bi_encoder_scores() -> TestResult {
    let dir = tiny_folder("bi")?;
    let bi = BiEncoder {
        encoder: encoder(&dir)?,
        similarity: Similarity::Cosine,
    };
    let docs = [
        "the applicant complained of a violation",
        "margin of appreciation",
        "fair trial",
    ];
    let s = bi.score(&["margin of appreciation", "fair trial"], &docs)?;
    assert_eq!((s.len(), s[0].len()), (2, 3));
    assert!((s[0][1] - 1.0).abs() < 1e-5 && (s[1][2] - 1.0).abs() < 1e-5);
    assert!(s[0][1] >= s[0][0] && s[0][1] >= s[0][2]);
    Ok(())
}

#[test]
fn cross_encoder_inputs_and_batching() -> TestResult {
    let dir = tiny_folder("cross")?;
    let head = VarMap::new();
    let ce = CrossEncoder::from_dir(
        &dir,
        &Device::Cpu,
        64,
        VarBuilder::from_varmap(&head, DType::F32, &Device::Cpu),
    )?;
    let t = &ce.tokenize(&[("what is the margin", "the state law")])?[0];
    assert_eq!(t.ids, vec![4, 31, 30, 16, 32, 5, 16, 34, 35, 5]);
    assert_eq!(t.type_ids, vec![0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
    let pairs = [
        (
            "fair trial",
            "the applicant complained of a violation of the right to a fair trial",
        ),
        ("privacy", "article"),
        ("margin of appreciation", "the state"),
    ];
    let together = ce.score(&pairs)?;
    assert_eq!(together.len(), 3);
    for (i, p) in pairs.iter().enumerate() {
        let alone = ce.score(&[*p])?[0];
        assert!(
            (alone - together[i]).abs() < 1e-5,
            "pair {i}: {alone} vs {}",
            together[i]
        );
    }
    assert_eq!(head.all_vars().len(), 2, "a new head (weight, bias) is created");
    Ok(())
}

#[test]
fn colbert_tokens_vectors_and_maxsim() -> TestResult {
    let dir = tiny_folder("colbert")?;
    let cfg = ColBertConfig {
        dim: 16,
        query_maxlen: 8,
        doc_maxlen: 10,
        ..ColBertConfig::default()
    };
    let lin = VarMap::new();
    let vb = VarBuilder::from_varmap(&lin, DType::F32, &Device::Cpu);
    let cb = ColBert::from_dir(&dir, &Device::Cpu, cfg.clone(), vb)?;
    let q = &cb.query_tokens(&["fair trial ?"])?[0];
    assert_eq!(q.ids, vec![4, 1, 27, 28, 9, 5, 6, 6]);
    assert_eq!(q.mask, vec![1, 1, 1, 1, 1, 1, 0, 0]);
    let d = &cb.doc_tokens(&["the court , the article ; the convention of the state law"])?[0];
    assert_eq!(d.ids.len(), 10, "truncated to doc_maxlen");
    assert_eq!(&d.ids[..3], &[4, 2, 16]);
    assert_eq!(d.ids[9], 5);
    assert!(cb.is_punctuation(8) && cb.is_punctuation(11) && !cb.is_punctuation(16));

    let qv = cb.encode_queries(&["fair trial ?"])?;
    assert_eq!(qv[0].dims(), &[8, 16]);
    for n in qv[0].sqr()?.sum(1)?.to_vec1::<f32>()? {
        assert!((n - 1.0).abs() < 1e-5);
    }
    let dv = cb.encode_docs(&["the court , the article ; the convention of the state law"])?;
    assert_eq!(dv[0].dims(), &[8, 16], "two punctuation vectors dropped");
    let s = cb.score(
        &["fair trial ?"],
        &["the court , the article ; the convention of the state law"],
    )?;
    assert!((s[0][0] - maxsim(&qv[0], &dv[0])?).abs() < 1e-5);

    let v2 = ColBert::from_dir(
        &dir,
        &Device::Cpu,
        ColBertConfig {
            attend_to_mask_tokens: true,
            ..cfg
        },
        VarBuilder::from_varmap(&lin, DType::F32, &Device::Cpu),
    )?;
    assert_eq!(v2.query_tokens(&["fair trial ?"])?[0].mask, vec![1; 8]);
    Ok(())
}

#[test]
fn cache_round_trip() -> TestResult {
    let dir = tiny_folder("cache")?;
    let enc = encoder(&dir)?;
    let cache_dir = dir.join("cache");
    let texts = ["fair trial", "the court", "fair trial", "margin of appreciation"];
    let first = {
        let mut c = CachedEncoder::open(&enc, &dir, &cache_dir)?;
        let v = c.embed(&texts)?;
        assert_eq!(c.cache().len(), 3, "duplicates are encoded once");
        v
    };
    assert_eq!(first[0], first[2]);
    let direct = enc.embed(&texts)?;
    for (a, b) in first.iter().zip(&direct) {
        assert_eq!(a, b);
    }
    let files: Vec<_> = std::fs::read_dir(&cache_dir)?.collect::<Result<_, _>>()?;
    assert_eq!(files.len(), 1, "one cache file, no temporary left behind");
    let mut again = CachedEncoder::open(&enc, &dir, &cache_dir)?;
    assert_eq!(again.cache().len(), 3);
    assert_eq!(again.embed(&texts)?, first);

    let path = files[0].path();
    let mut c = EmbeddingCache::open(path.clone())?;
    assert!(c.insert("other", vec![0.0; 5]).is_err(), "dimension change");
    std::fs::write(&path, b"LXEMB1\0\0garbage")?;
    assert!(EmbeddingCache::open(path).is_err(), "corrupt file");
    Ok(())
}

#[test]
fn tokenizer_truncates_and_does_not_pad() -> TestResult {
    let dir = tiny_folder("tok")?;
    let t = TextTokenizer::from_file(&dir.join("tokenizer.json"), 5)?;
    let toks = t.encode(&["the court and the state law", "law"])?;
    assert_eq!(toks[0].ids, vec![4, 16, 17, 36, 5]);
    assert_eq!(toks[1].ids, vec![4, 35, 5]);
    Ok(())
}
