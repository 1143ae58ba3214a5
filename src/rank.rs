//! One way from a model folder to a ranker: [`from_folder`], used by `lexbench run` (for a folder
//! trained here), `lexbench train --run` and `lexbench experiment collect` (the folder just trained)
//! and the submission harness (`submit --model`, `leaderboard --recheck`).
//!
//! - A folder **trained here** (its `lexbench-training.json`,
//!   [`lexbench_baselines::train::export::TrainingRecord`]) is ranked with the settings it was trained
//!   with, whoever asks: queries at `data.max_query_len` tokens and documents at `data.max_doc_len`
//!   (a cross-encoder's pair at their sum), the trained pooling and similarity, ColBERT's trained
//!   settings, the trained text prefixes (the rankers read them from the folder). A bi-encoder with a
//!   hierarchical article encoder is rebuilt from its configuration
//!   ([`lexbench_baselines::train::export::TrainedRanker`]). Asked as another kind than it was
//!   trained as, it is refused, with one message for every caller.
//! - **Any other folder** is ranked as the kind asked, at the lengths asked
//!   ([`Ask::lengths`]: an entry's recorded ones) or else the folder's own ([`lengths`]: its
//!   sentence-transformers files, a ColBERT checkpoint's `artifact.metadata`, else `lexbench run`'s
//!   defaults).
//!
//! A cross-encoder's reranking depth ([`Ask::depth`]) applies to cross-encoders only.

use std::path::Path;

use anyhow::{Result, bail};
use lexbench_baselines::Device;
use lexbench_baselines::encoder::EncodeOptions;
use lexbench_baselines::rank::colbert::{ColBertParams, ColBertRanker};
use lexbench_baselines::rank::cross::{CrossEncoderRanker, CrossParams};
use lexbench_baselines::rank::dense::{DenseParams, DenseRanker};
use lexbench_baselines::rank::model::NeuralRanker;
use lexbench_baselines::scorers::Similarity;
use lexbench_baselines::train::TrainConfig;
use lexbench_baselines::train::config::ModelKind as Trained;
use lexbench_baselines::train::export::{TRAINING_RECORD, TrainedRanker, TrainingRecord};
use lexbench_leaderboard::ModelKind;
use lexbench_leaderboard::entry::RankLengths;

/// What a caller asks of a model folder.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    /// The kind of model the caller ranks with (`run dense` a bi-encoder, `submit --kind …`).
    pub kind: ModelKind,
    /// The system's name in the run.
    pub system: &'a str,
    /// Documents kept per topic.
    pub top_k: usize,
    /// A cross-encoder reranks BM25's top `depth` (`None`: the pool). Refused for other kinds.
    pub depth: Option<usize>,
    /// An untrained folder's lengths (an entry's recorded ones); `None`: [`lengths`]. Never used for
    /// a folder trained here (its training's).
    pub lengths: Option<&'a RankLengths>,
}

/// A folder's ranker and what it ranks with.
pub struct FolderRanker {
    /// The ranker.
    pub ranker: NeuralRanker,
    /// The lengths it cuts queries and documents at.
    pub lengths: RankLengths,
    /// The folder's training record, when it was trained here.
    pub trained: Option<TrainingRecord>,
}

impl std::fmt::Debug for FolderRanker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FolderRanker")
            .field("lengths", &self.lengths)
            .field("trained", &self.trained.as_ref().map(|t| &t.name))
            .finish_non_exhaustive()
    }
}

/// The kind a training of `model` makes.
pub fn kind_of(model: Trained) -> ModelKind {
    match model {
        Trained::Dpr | Trained::Ance => ModelKind::BiEncoder,
        Trained::Colbert => ModelKind::Colbert,
        Trained::CrossEncoder => ModelKind::CrossEncoder,
    }
}

/// The training record of `folder`, if it was trained here.
pub fn trained(folder: &Path) -> Result<Option<TrainingRecord>> {
    Ok(TrainingRecord::read(folder)?)
}

/// Refuses a folder trained as another kind than `kind`.
pub fn check_kind(folder: &Path, record: &TrainingRecord, kind: ModelKind) -> Result<()> {
    if kind_of(record.config.model) != kind {
        bail!(
            "{}: trained as {:?} ({}), not a {kind} model",
            folder.display(),
            record.config.model,
            record.name
        );
    }
    Ok(())
}

/// Why a BM25 "model" is refused.
pub fn not_a_folder(model: &Path) -> String {
    format!(
        "{}: BM25 is lexbench's own baseline, not a model folder (`lexbench submit --baseline`)",
        model.display()
    )
}

/// The ranker of `folder` for `ask` (module documentation).
pub fn from_folder(folder: &Path, ask: &Ask<'_>, device: &Device) -> Result<FolderRanker> {
    if ask.kind == ModelKind::Bm25 {
        bail!(not_a_folder(folder));
    }
    if ask.depth.is_some() && ask.kind != ModelKind::CrossEncoder {
        bail!(
            "{}: a reranking depth applies to cross-encoders, not to a {} model",
            folder.display(),
            ask.kind
        );
    }
    if let Some(record) = trained(folder)? {
        check_kind(folder, &record, ask.kind)?;
        let lengths = trained_lengths(folder, &record.config);
        let ranker = trained_ranker(&record.config, folder, ask, device)?;
        return Ok(FolderRanker {
            ranker,
            lengths,
            trained: Some(record),
        });
    }
    let lengths = match ask.lengths {
        Some(l) => l.clone(),
        None => lengths(folder, ask.kind)?,
    };
    let system = ask.system.to_owned();
    let ranker = match ask.kind {
        ModelKind::Bm25 => bail!(not_a_folder(folder)),
        ModelKind::BiEncoder => {
            let mut params = DenseParams {
                system,
                top_k: ask.top_k,
                ..DenseParams::default()
            };
            params.encode.max_len = lengths.document;
            params.query_max_len = lengths.query;
            NeuralRanker::Dense(Box::new(DenseRanker::new(folder, params, device)?))
        }
        ModelKind::Colbert => {
            let mut params = ColBertParams {
                system,
                top_k: ask.top_k,
                ..ColBertParams::default()
            };
            params.colbert.doc_maxlen = lengths.document;
            params.colbert.query_maxlen = lengths.query.unwrap_or(params.colbert.query_maxlen);
            NeuralRanker::ColBert(Box::new(ColBertRanker::new(folder, params, device)?))
        }
        ModelKind::CrossEncoder => {
            let params = CrossParams {
                system,
                depth: ask.depth,
                max_len: lengths.document,
            };
            NeuralRanker::Cross(Box::new(CrossEncoderRanker::new(folder, params, device)?))
        }
    };
    Ok(FolderRanker {
        ranker,
        lengths,
        trained: None,
    })
}

/// The ranker of a folder trained here with the settings of its training (`cfg`).
fn trained_ranker(cfg: &TrainConfig, folder: &Path, ask: &Ask<'_>, device: &Device) -> Result<NeuralRanker> {
    let system = ask.system.to_owned();
    Ok(match cfg.model {
        Trained::Dpr | Trained::Ance if cfg.biencoder.hierarchical().is_some() => {
            let mut named = cfg.clone();
            named.name = system;
            named.eval.top_k = ask.top_k;
            NeuralRanker::Trained(Box::new(TrainedRanker::from_folder(&named, folder, device)?))
        }
        Trained::Dpr | Trained::Ance => {
            let params = DenseParams {
                system,
                encode: EncodeOptions {
                    max_len: cfg.data.max_doc_len,
                    pooling: Some(cfg.biencoder.pooling),
                    normalize: cfg.biencoder.cosine,
                    ..EncodeOptions::default()
                },
                query_max_len: Some(cfg.data.max_query_len),
                similarity: if cfg.biencoder.cosine {
                    Similarity::Cosine
                } else {
                    Similarity::Dot
                },
                top_k: ask.top_k,
                ..DenseParams::default()
            };
            NeuralRanker::Dense(Box::new(DenseRanker::new(folder, params, device)?))
        }
        Trained::Colbert => {
            let params = ColBertParams {
                system,
                colbert: cfg.colbert_settings(),
                top_k: ask.top_k,
                first_stage: None,
            };
            NeuralRanker::ColBert(Box::new(ColBertRanker::new(folder, params, device)?))
        }
        Trained::CrossEncoder => {
            let params = CrossParams {
                system,
                depth: ask.depth,
                max_len: cfg.data.max_query_len + cfg.data.max_doc_len,
            };
            NeuralRanker::Cross(Box::new(CrossEncoderRanker::new(folder, params, device)?))
        }
    })
}

/// The model's positions (`config.json`), where the bi-encoder and cross-encoder rankers cut.
fn positions(folder: &Path) -> Option<usize> {
    lexbench_baselines::encoder::BertConfig::from_file(&folder.join("config.json"))
        .ok()
        .map(|c| c.max_tokens())
}

/// The lengths of a folder trained here: its training's (`data.max_query_len`, `data.max_doc_len`;
/// a cross-encoder's pair, their sum), cut at the model's positions for a bi-encoder and a
/// cross-encoder, as the rankers cut them.
fn trained_lengths(folder: &Path, cfg: &TrainConfig) -> RankLengths {
    let cut = |n: usize| positions(folder).map_or(n, |p| n.min(p));
    let (q, d) = (cfg.data.max_query_len, cfg.data.max_doc_len);
    let source = TRAINING_RECORD.to_owned();
    match cfg.model {
        Trained::Dpr | Trained::Ance => RankLengths {
            query: Some(cut(q)),
            document: cut(d),
            source,
        },
        Trained::Colbert => RankLengths {
            query: Some(q),
            document: d,
            source,
        },
        Trained::CrossEncoder => RankLengths {
            query: None,
            document: cut(q + d),
            source,
        },
    }
}

/// The lengths ([`RankLengths`]) `folder` is ranked at as `kind`: a folder trained here, its
/// training's; any other, its own — `max_seq_length` of its sentence-transformers files
/// (`sentence_bert_config.json`, else `tokenizer_config.json`'s `model_max_length`) for a
/// bi-encoder or a cross-encoder, `query_maxlen` and `doc_maxlen` of a ColBERT checkpoint's
/// `artifact.metadata` — and where it names none, `lexbench run`'s defaults (256 tokens; ColBERT 32
/// and 180). A bi-encoder's and a cross-encoder's are cut at the model's positions (`config.json`),
/// as the rankers cut them.
pub fn lengths(folder: &Path, kind: ModelKind) -> Result<RankLengths> {
    if let Some(record) = trained(folder)? {
        return Ok(trained_lengths(folder, &record.config));
    }
    let cut = |n: usize| positions(folder).map_or(n, |p| n.min(p));
    let st_length = || -> Result<Option<(usize, String)>> {
        let Some(n) = lexbench_baselines::encoder::st::model_max_len(folder)? else {
            return Ok(None);
        };
        let st = folder.join("sentence_bert_config.json");
        let from_st = st.is_file()
            && lexbench_core::io::read_json::<serde_json::Value>(&st)?
                .get("max_seq_length")
                .is_some_and(|v| !v.is_null());
        let file = if from_st {
            "sentence_bert_config.json"
        } else {
            "tokenizer_config.json"
        };
        Ok(Some((n, format!("{file} max_seq_length"))))
    };
    Ok(match kind {
        ModelKind::Bm25 => bail!(not_a_folder(folder)),
        ModelKind::BiEncoder => {
            let (n, source) =
                st_length()?.unwrap_or_else(|| (DenseParams::default().encode.max_len, "default".to_owned()));
            RankLengths {
                query: Some(cut(n)),
                document: cut(n),
                source,
            }
        }
        ModelKind::Colbert => {
            let cfg = lexbench_baselines::scorers::ColBertConfig::for_model(folder)?;
            let metadata = folder.join(lexbench_baselines::scorers::colbert::METADATA_FILE);
            RankLengths {
                query: Some(cfg.query_maxlen),
                document: cfg.doc_maxlen,
                source: if metadata.is_file() {
                    "artifact.metadata".to_owned()
                } else {
                    "default".to_owned()
                },
            }
        }
        ModelKind::CrossEncoder => {
            let (n, source) =
                st_length()?.unwrap_or_else(|| (CrossParams::default().max_len, "default".to_owned()));
            RankLengths {
                query: None,
                document: cut(n),
                source,
            }
        }
    })
}

/// The lengths an entry recorded before lengths were recorded was ranked at: `lexbench run`'s
/// fixed defaults then (256 tokens; ColBERT 32 and 180), whatever the folder named.
pub fn legacy_lengths(kind: ModelKind) -> RankLengths {
    let source = "default".to_owned();
    match kind {
        ModelKind::Colbert => {
            let c = lexbench_baselines::scorers::ColBertConfig::default();
            RankLengths {
                query: Some(c.query_maxlen),
                document: c.doc_maxlen,
                source,
            }
        }
        ModelKind::CrossEncoder => RankLengths {
            query: None,
            document: CrossParams::default().max_len,
            source,
        },
        ModelKind::BiEncoder | ModelKind::Bm25 => {
            let d = DenseParams::default();
            RankLengths {
                query: Some(d.query_len()),
                document: d.encode.max_len,
                source,
            }
        }
    }
}
