//! The networks being trained, their losses, and ranking with them (validation, ANCE mining).
//!
//! - Bi-encoder (DPR, ANCE): one BERT shared by queries and passages (`biencoder.encoders =
//!   "shared"`, sentence-transformers' convention for all-MiniLM-L6-v2), or two, a query encoder E_q and
//!   a passage encoder E_p, both starting from the base checkpoint (`"separate"`: DPR's two towers,
//!   the ECtHR paper's "separate encoders"); the query encoder's trainable variables are named
//!   `query_encoder.…` ([`QUERY_ENCODER`]). Scores are dot products, or cosines times `scale`. With
//!   `article_encoder = "hierarchical"` passages go through a [`HierarchicalEncoder`] over the
//!   passage BERT (segments → `[CLS]` → segment transformer → max-pool), whose new parameters are
//!   trainable variables `hier.…`; queries keep the plain (query) BERT.
//!   Loss: negative log-likelihood of the positive among the example's negatives and, with
//!   `in_batch`, every other passage of the batch — except passages that are positives of the same
//!   topic, which are masked out.
//! - ColBERT: MaxSim over normalised projected token vectors, same loss.
//! - Cross-encoder: binary cross-entropy with logits on (query, positive) = 1 and (query, negative) = 0.
//!
//! Text prefixes (`[data] query_prefix` / `passage_prefix`, E5's `query: ` / `passage: `) are put
//! before the texts here, inside [`Trainable`], so every path that reads text through the network
//! gets them: training batches, validation and ANCE rankings, CuSINeS's model scores, DR+GNN's and
//! QABISAR's embeddings ([`Trainable::embed_texts`], [`Trainable::encode_queries_t`]). Bi-encoders
//! (flat and hierarchical: the passage prefix starts the first segment) and ColBERT (after its
//! `[Q]` / `[D]` marker) prefix queries and passages alike; a cross-encoder reads
//! `[CLS] query_prefix q [SEP] passage_prefix p [SEP]`. Callers pass the dataset's texts as they are.
//!
//! Full fine-tuning turns every checkpoint tensor into a trainable variable ([`ParamStore`] initial
//! values); PEFT keeps the base as constants and trains only LoRA / adapter / prefix parameters (and
//! a new head). Weights the checkpoint lacks — ColBERT's projection, the cross-encoder's classifier —
//! start from the same seeded values as the zero-shot runs (`dense::seeded_normal` with `dense::SEED`),
//! so epoch 0 is the zero-shot model.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use candle_core::{D, DType, Device, Tensor};
use candle_nn::VarBuilder;
use lexbench_core::Run;
use lexbench_core::trec::{Hit, trec_order};

use super::config::{Encoders, ModelKind, TrainConfig};
use super::data::SplitData;
use super::params::ParamStore;
use crate::encoder::hier::{HierarchicalEncoder, SpecialTokens};
use crate::encoder::peft::PeftMethod;
use crate::encoder::seeded::{SEED, seeded_normal};
use crate::encoder::tokenize::as_strs;
use crate::encoder::{
    BertConfig, BertModel, TextPrefixes, TextTokenizer, Tokens, forward_by_length, l2_normalize, pad_batch,
    pool,
};
use crate::error::{Error, Result};
use crate::scorers::colbert::ColBert;
use crate::scorers::cross::CrossEncoder;

/// The network.
#[derive(Debug, Clone)]
pub enum Net {
    /// DPR / ANCE.
    Bi {
        /// The passage encoder, and the query encoder when it is shared.
        model: BertModel,
        /// The query encoder when it is separate (`biencoder.encoders = "separate"`).
        query_model: Option<Box<BertModel>>,
        /// Query tokenizer (query truncation).
        query_tok: TextTokenizer,
        /// Passage tokenizer (passage truncation).
        doc_tok: TextTokenizer,
        /// The hierarchical article encoder, when passages use it.
        articles: Option<Box<HierArticles>>,
    },
    /// ColBERT.
    Colbert(ColBert),
    /// Cross-encoder.
    Cross(CrossEncoder),
}

/// Passages through the hierarchical encoder: content ids (no special tokens, truncated to what
/// the segments keep) and the encoder over the shared BERT.
#[derive(Debug, Clone)]
pub struct HierArticles {
    /// The encoder (its BERT is the bi-encoder's, sharing the variables).
    pub encoder: HierarchicalEncoder,
    /// Content tokenizer: `(seg_len − 2) · max_segments` tokens, no special tokens.
    pub tokenizer: TextTokenizer,
}

impl HierArticles {
    /// The hierarchical article encoder over `model` (the same BERT: same variables, PEFT included);
    /// its segment-level parameters are new trainable variables under `hier.` in `store`.
    fn build(
        model: &BertModel,
        h: &crate::encoder::hier::HierConfig,
        doc_tok: &TextTokenizer,
        tok_path: &Path,
        store: &ParamStore,
        device: &Device,
    ) -> Result<Self> {
        // The tokenizer's own markers around a text: `[CLS] … [SEP]` for BERT's WordPiece, `<s> … </s>`
        // for XLM-R's SentencePiece (multilingual-e5-small).
        let around = doc_tok.encode(&[""])?;
        let (cls, sep) = match around.first().map(|t| t.ids.as_slice()) {
            Some(&[cls, sep]) => (cls, sep),
            other => {
                return Err(Error::Format {
                    path: tok_path.to_owned(),
                    message: format!(
                        "the tokenizer wraps a text in {:?}, not one start and one end token \
                         ([CLS] … [SEP]), which the hierarchical encoder needs",
                        other.unwrap_or_default()
                    ),
                });
            }
        };
        let special = SpecialTokens {
            cls,
            sep,
            pad: doc_tok.pad_id(),
        };
        let content_len = (h.seg_len.saturating_sub(2) * h.max_segments).max(4);
        let encoder =
            HierarchicalEncoder::new(model.clone(), h, special, store.var_builder(device).pp("hier"))?;
        Ok(Self {
            encoder,
            tokenizer: TextTokenizer::from_file(tok_path, content_len)?,
        })
    }

    /// Content token ids of `texts` (as given: [`Trainable`] adds the passage prefix before).
    pub fn content_ids(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        self.tokenizer.encode_content(texts)
    }

    /// The segments a text is cut into (`[CLS] … [SEP]` each).
    pub fn segments(&self, text: &str) -> Result<Vec<Vec<u32>>> {
        let ids = self.content_ids(&[text])?;
        self.encoder.segments(&ids[0])
    }
}

/// A network with its trainable parameters.
#[derive(Debug, Clone)]
pub struct Trainable {
    /// The model kind.
    pub kind: ModelKind,
    /// The network.
    pub net: Net,
    /// Its trainable variables.
    pub store: ParamStore,
    /// The base checkpoint's configuration.
    pub bert: BertConfig,
    /// Parameters of the whole model (base + PEFT + head).
    pub total_params: usize,
    cosine: bool,
    similarity: super::config::Similarity,
    in_batch: bool,
    pooling: crate::encoder::Pooling,
    prefixes: TextPrefixes,
}

/// The prefix of the separate query encoder's variables (`query_encoder.embeddings.…`), and the
/// subfolder of an exported model that holds it.
pub const QUERY_ENCODER: &str = crate::rank::dense::QUERY_ENCODER_DIR;

/// A checkpoint's tensors with its architecture's encoder prefix removed (`bert.`, `roberta.`, DPR's
/// `question_encoder.bert_model.` / `ctx_encoder.bert_model.`; `encoder::bert::encoder_tensors`).
pub fn base_tensors(dir: &Path, device: &Device) -> Result<HashMap<String, Tensor>> {
    let path = dir.join("model.safetensors");
    let arch = BertConfig::from_file(&dir.join("config.json"))?.arch()?;
    let out = crate::encoder::bert::encoder_tensors(&path, arch, device)?;
    if !out.contains_key("embeddings.word_embeddings.weight") {
        return Err(Error::Format {
            path,
            message: "no embeddings.word_embeddings.weight (not a BERT checkpoint?)".into(),
        });
    }
    Ok(out)
}

impl Trainable {
    /// Builds the configured network from `cfg.base` (see the module documentation).
    pub fn build(cfg: &TrainConfig, device: &Device) -> Result<Self> {
        Self::build_over(cfg, device, None)
    }

    /// The same network (built from the same `cfg`) over this one's variables seen as constants
    /// ([`ParamStore::detached_view`]; no copy of a trainable weight, the frozen base read from
    /// `cfg.base` again): nothing it computes records an autograd graph, so its forward passes take the
    /// inference fast paths — fused attention, fused layer norms, pre-transposed weights (a fully
    /// fine-tuned model's are frozen copies, made once per view). Validation passes run over it. Its
    /// scores are the network's own up to float rounding (the fused kernels sum in another order).
    pub fn inference_view(&self, cfg: &TrainConfig, device: &Device) -> Result<Self> {
        Self::build_over(cfg, device, Some(&self.store))
    }

    /// [`Self::build`], or with `view`, [`Self::inference_view`] of the network whose store it is.
    fn build_over(cfg: &TrainConfig, device: &Device, view: Option<&ParamStore>) -> Result<Self> {
        let bert = BertConfig::from_file(&cfg.base.join("config.json"))?;
        let base_weights = cfg.base.join("model.safetensors");
        let mut tensors = base_tensors(&cfg.base, device)?;
        let h = bert.hidden_size;
        // Heads the checkpoint lacks start from the zero-shot runs' seeded values.
        if cfg.model == ModelKind::Colbert && !tensors.contains_key("linear.weight") {
            let d = cfg.colbert.dim;
            let w = seeded_normal(d, h, 1.0 / (h as f64).sqrt(), SEED);
            tensors.insert("linear.weight".into(), Tensor::from_vec(w, (d, h), device)?);
        }
        if cfg.model == ModelKind::CrossEncoder && !tensors.contains_key("classifier.weight") {
            let w = seeded_normal(1, h, 0.02, SEED);
            tensors.insert("classifier.weight".into(), Tensor::from_vec(w, (1, h), device)?);
            tensors.insert("classifier.bias".into(), Tensor::zeros(1, DType::F32, device)?);
        }
        let with_pooler = cfg.model == ModelKind::CrossEncoder || tensors.contains_key("pooler.dense.weight");
        // Parameters only: checkpoints may carry integer buffers (`embeddings.position_ids`).
        let base_count: usize = tensors
            .values()
            .filter(|t| t.dtype().is_float())
            .map(|t| t.elem_count())
            .sum();
        let separate = cfg.model.is_biencoder() && cfg.biencoder.encoders == Encoders::Separate;
        let (model, query_model, store) = match &cfg.peft {
            None => {
                let mut initial = tensors;
                if separate {
                    // E_q starts as a copy of the base: its own variables, the same values.
                    let copies: Vec<(String, Tensor)> = initial
                        .iter()
                        .map(|(k, v)| (format!("{QUERY_ENCODER}.{k}"), v.clone()))
                        .collect();
                    initial.extend(copies);
                }
                let store = match view {
                    Some(s) => s.detached_view(),
                    None => ParamStore::with_initial(cfg.seed, initial),
                };
                let load = |vb: VarBuilder<'static>| {
                    let mut model = BertModel::load(&bert, vb, with_pooler)
                        .map_err(|e| e.in_weights(&base_weights, "config.json"))?;
                    if view.is_some() {
                        // Never trained: its linears may keep transposed copies, Q/K/V fused.
                        model.freeze()?;
                    }
                    Ok::<_, Error>(model)
                };
                let model = load(store.var_builder(device))?;
                let query_model = if separate {
                    Some(Box::new(load(store.var_builder(device).pp(QUERY_ENCODER))?))
                } else {
                    None
                };
                (model, query_model, store)
            }
            Some(p) => {
                let heads: HashMap<String, Tensor> = tensors
                    .iter()
                    .filter(|(k, _)| k.starts_with("linear.") || k.starts_with("classifier."))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let store = match view {
                    Some(s) => s.detached_view(),
                    None => ParamStore::with_initial(cfg.seed, heads),
                };
                // Each encoder: the frozen base (the same constants) with its own PEFT variables.
                let peft_model = |pvb: VarBuilder<'static>| -> Result<BertModel> {
                    let vb = VarBuilder::from_tensors(tensors.clone(), DType::F32, device);
                    let mut model = BertModel::load(&bert, vb, with_pooler)
                        .map_err(|e| e.in_weights(&base_weights, "config.json"))?;
                    model.freeze()?;
                    match p.method {
                        PeftMethod::Lora => model.add_lora(&p.lora, pvb)?,
                        PeftMethod::Adapter => model.add_adapters(&p.adapter, pvb)?,
                        PeftMethod::Prefix => model.add_prefix(&p.prefix, pvb)?,
                    }
                    Ok(model)
                };
                let model = peft_model(store.var_builder(device).pp("peft"))?;
                let query_model = if separate {
                    Some(Box::new(peft_model(
                        store.var_builder(device).pp(QUERY_ENCODER).pp("peft"),
                    )?))
                } else {
                    None
                };
                (model, query_model, store)
            }
        };
        let tok_path = cfg.base.join("tokenizer.json");
        let net = match cfg.model {
            ModelKind::Dpr | ModelKind::Ance => {
                let doc_tok = TextTokenizer::from_file(&tok_path, cfg.data.max_doc_len)?;
                let articles = match cfg.biencoder.hierarchical() {
                    Some(h) => Some(Box::new(HierArticles::build(
                        &model, &h, &doc_tok, &tok_path, &store, device,
                    )?)),
                    None => None,
                };
                Net::Bi {
                    model,
                    query_model,
                    query_tok: TextTokenizer::from_file(&tok_path, cfg.data.max_query_len)?,
                    doc_tok,
                    articles,
                }
            }
            ModelKind::Colbert => {
                let colbert = cfg.colbert_settings();
                let tok = TextTokenizer::from_file(&tok_path, colbert.doc_maxlen)?;
                Net::Colbert(ColBert::new(model, &tok, store.var_builder(device), colbert)?)
            }
            ModelKind::CrossEncoder => {
                let tok = TextTokenizer::from_file(&tok_path, cfg.data.max_query_len + cfg.data.max_doc_len)?;
                Net::Cross(CrossEncoder::new(model, tok, store.var_builder(device), 32)?)
            }
        };
        let total_params = match &cfg.peft {
            None => store.num_params(),
            Some(_) => {
                let heads: usize = store
                    .vars()
                    .iter()
                    .filter(|(k, _)| {
                        !k.starts_with("peft.")
                            && !k.starts_with("hier.")
                            && !k.starts_with(&format!("{QUERY_ENCODER}.peft."))
                    })
                    .map(|(_, v)| v.elem_count())
                    .sum();
                base_count - heads + store.num_params()
            }
        };
        Ok(Self {
            kind: cfg.model,
            net,
            store,
            bert,
            total_params,
            cosine: cfg.biencoder.cosine,
            similarity: cfg.biencoder.similarity(),
            in_batch: cfg.biencoder.in_batch,
            pooling: cfg.biencoder.pooling,
            prefixes: cfg.data.prefixes(),
        })
    }

    /// Whether queries go through their own encoder E_q (`biencoder.encoders = "separate"`), whose
    /// variables are named `query_encoder.…` ([`QUERY_ENCODER`]).
    pub fn separate_query_encoder(&self) -> bool {
        matches!(
            &self.net,
            Net::Bi {
                query_model: Some(_),
                ..
            }
        )
    }

    /// The trainable variables that embed queries: E_q's (`query_encoder.…`) with separate encoders,
    /// else every variable (the one encoder embeds queries and passages).
    pub fn query_encoder_vars(&self) -> Vec<(String, candle_core::Var)> {
        let prefix = format!("{QUERY_ENCODER}.");
        let separate = self.separate_query_encoder();
        self.store
            .vars()
            .into_iter()
            .filter(|(k, _)| !separate || k.starts_with(&prefix))
            .collect()
    }

    /// Trainable parameters.
    pub fn trainable_params(&self) -> usize {
        self.store.num_params()
    }

    /// The text prefixes put before queries and passages (`[data]`'s).
    pub fn prefixes(&self) -> &TextPrefixes {
        &self.prefixes
    }

    /// The bi-encoder's scoring function (cosine · scale, or dot / temperature); embeddings from
    /// [`Self::embed_texts`] and [`Self::encode_queries_t`] are already normalised for cosine.
    pub fn similarity(&self) -> super::config::Similarity {
        self.similarity
    }

    /// Pooled (and, for cosine, normalised) vectors of token sequences through the query encoder
    /// (`query`) or the passage encoder; one and the same when shared.
    fn bi_encode(&self, seqs: &[&Tokens], train: bool, query: bool) -> Result<Tensor> {
        let Net::Bi {
            model,
            query_model,
            doc_tok,
            ..
        } = &self.net
        else {
            return Err(Error::internal("not a bi-encoder"));
        };
        let model = match (query, query_model) {
            (true, Some(q)) => q.as_ref(),
            _ => model,
        };
        // In groups of similar length: a batch's positives and negatives mix short and long paragraphs.
        let v = forward_by_length(seqs, |group| {
            let inputs = pad_batch(group, doc_tok.pad_id(), model.device())?;
            let hidden = model.forward_t(&inputs, train)?;
            pool(&hidden, &inputs.attention_mask, self.pooling)
        })?;
        if self.cosine { l2_normalize(&v) } else { Ok(v) }
    }

    /// Passage vectors `(n, h)` of one batch (texts already prefixed): the hierarchical encoder over
    /// content ids, or [`Self::bi_encode`] over the passage tokenizer's sequences.
    fn encode_passages(&self, passages: &[&str], train: bool) -> Result<Tensor> {
        let Net::Bi {
            doc_tok, articles, ..
        } = &self.net
        else {
            return Err(Error::internal("not a bi-encoder"));
        };
        match articles {
            Some(a) => {
                let ids = a.content_ids(passages)?;
                let refs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
                let v = a.encoder.forward_t(&refs, train)?;
                if self.cosine { l2_normalize(&v) } else { Ok(v) }
            }
            None => {
                let d = doc_tok.encode(passages)?;
                self.bi_encode(&d.iter().collect::<Vec<_>>(), train, false)
            }
        }
    }

    /// The hierarchical article encoder, when passages use one.
    pub fn hier_articles(&self) -> Option<&HierArticles> {
        match &self.net {
            Net::Bi { articles, .. } => articles.as_deref(),
            _ => None,
        }
    }

    /// Scores `(queries, passages)` of one batch as a `(q, p)` matrix (bi-encoder and ColBERT), the
    /// prefixes put before the texts.
    pub fn score_matrix(&self, queries: &[&str], passages: &[&str], train: bool) -> Result<Tensor> {
        let (queries, passages) = (self.prefixes.queries(queries), self.prefixes.passages(passages));
        let (queries, passages) = (&as_strs(&queries)[..], &as_strs(&passages)[..]);
        match &self.net {
            Net::Bi { query_tok, .. } => {
                let q = query_tok.encode(queries)?;
                let qv = self.bi_encode(&q.iter().collect::<Vec<_>>(), train, true)?;
                let dv = self.encode_passages(passages, train)?;
                let s = qv.matmul(&dv.t()?)?;
                // cosine · scale, or dot / temperature (the embeddings are normalised for cosine).
                Ok((s * self.similarity.factor())?)
            }
            Net::Colbert(cb) => {
                let q = cb.query_tokens(queries)?;
                let d = cb.doc_tokens(passages)?;
                let qv = cb.forward_t(&q.iter().collect::<Vec<_>>(), train)?; // (b, lq, dim)
                // Passages in groups of similar length, each group's token vectors padded with
                // zeros to the batch's longest (the mask below keeps those positions out).
                let longest = d.iter().map(|t| t.ids.len()).max().unwrap_or(0);
                let dv = forward_by_length(&d.iter().collect::<Vec<_>>(), |group| {
                    let v = cb.forward_t(group, train)?;
                    let short = longest.saturating_sub(v.dim(1)?);
                    Ok(if short > 0 {
                        v.pad_with_zeros(1, 0, short)?
                    } else {
                        v
                    })
                })?; // (p, ld, dim)
                let (b, lq, dim) = qv.dims3()?;
                let (p, ld, _) = dv.dims3()?;
                // Padding and (with mask_punctuation) punctuation tokens of passages never match.
                let mut mask = vec![0f32; p * ld];
                for (i, t) in d.iter().enumerate() {
                    for j in 0..ld {
                        let keep =
                            j < t.ids.len() && !(cb.config().mask_punctuation && cb.is_punctuation(t.ids[j]));
                        if !keep {
                            mask[i * ld + j] = -1e4;
                        }
                    }
                }
                let mask = Tensor::from_vec(mask, (1, 1, p, ld), qv.device())?;
                let sim = qv
                    .reshape((b * lq, dim))?
                    .matmul(&dv.reshape((p * ld, dim))?.t()?)?
                    .reshape((b, lq, p, ld))?
                    .broadcast_add(&mask)?;
                Ok(sim.max(D::Minus1)?.sum(1)?)
            }
            Net::Cross(_) => Err(Error::internal("a cross-encoder scores pairs, not matrices")),
        }
    }

    /// The loss of one batch of examples: `(topic text, positive text, negative texts, positives of
    /// the topic as texts' indices)` flattened by the trainer into [`Batch`].
    pub fn loss(&self, batch: &Batch<'_>, train: bool) -> Result<Tensor> {
        match &self.net {
            Net::Cross(ce) => {
                let (queries, passages) = (
                    self.prefixes.queries(&batch.queries),
                    self.prefixes.passages(&batch.passages),
                );
                let mut pairs = Vec::new();
                let mut labels = Vec::new();
                for (i, q) in queries.iter().enumerate() {
                    pairs.push((q.as_ref(), passages[batch.positive[i]].as_ref()));
                    labels.push(1f32);
                    for &n in &batch.negatives[i] {
                        pairs.push((q.as_ref(), passages[n].as_ref()));
                        labels.push(0f32);
                    }
                }
                let toks = ce.tokenize(&pairs)?;
                let logits = forward_by_length(&toks.iter().collect::<Vec<_>>(), |group| {
                    ce.forward_t(group, train)
                })?;
                let y = Tensor::from_vec(labels, logits.shape(), logits.device())?;
                bce_with_logits(&logits, &y)
            }
            _ => {
                let scores = self.score_matrix(&batch.queries, &batch.passages, train)?;
                let (b, p) = scores.dims2()?;
                let mut mask = vec![0f32; b * p];
                for i in 0..b {
                    let own: HashSet<usize> = batch.negatives[i].iter().copied().collect();
                    for j in 0..p {
                        let allowed = j == batch.positive[i]
                            || own.contains(&j)
                            || (self.in_batch && !batch.is_positive_of[i].contains(&j));
                        if !allowed {
                            mask[i * p + j] = -1e4;
                        }
                    }
                }
                let mask = Tensor::from_vec(mask, (b, p), scores.device())?;
                let logits = (scores + mask)?;
                let targets: Vec<u32> = batch.positive.iter().map(|&x| x as u32).collect();
                let targets = Tensor::new(targets.as_slice(), logits.device())?;
                Ok(candle_nn::loss::cross_entropy(&logits, &targets)?)
            }
        }
    }

    /// Ranks every topic of `split` (its pool, or the corpus; for a cross-encoder over the corpus, the
    /// `rerank` candidates given per topic) and keeps the top `k`.
    pub fn rank(
        &self,
        split: &SplitData,
        k: usize,
        rerank: Option<&[Vec<usize>]>,
        batch_size: usize,
    ) -> Result<Run> {
        let mut run = Run::new("model");
        for (topic, (docs, scores)) in split
            .topics
            .iter()
            .zip(self.score_all(split, rerank, batch_size)?)
        {
            run.topics
                .insert(topic.topic.clone(), top_hits(split, &docs, &scores, k));
        }
        Ok(run)
    }

    /// The model's score of every candidate of every topic of `split` (its pool, or the whole
    /// corpus), aligned with [`SplitData::candidates`]: the semantic view of CuSINeS's dynamic
    /// curriculum. A cross-encoder scores every pair (slow over a large corpus).
    pub fn candidate_scores(&self, split: &SplitData, batch_size: usize) -> Result<Vec<Vec<f64>>> {
        Ok(self
            .score_all(split, None, batch_size)?
            .into_iter()
            .map(|(_, s)| s.into_iter().map(f64::from).collect())
            .collect())
    }

    /// Bi-encoder embeddings of `texts` (queries with the query prefix and truncation, passages with
    /// the passage ones or the hierarchical encoder), without gradient or dropout, in input order;
    /// normalised when scores are cosine.
    /// Errors for ColBERT and cross-encoders.
    pub fn embed_texts(&self, texts: &[&str], query: bool, batch_size: usize) -> Result<Vec<Vec<f32>>> {
        let Net::Bi {
            query_tok,
            doc_tok,
            articles,
            ..
        } = &self.net
        else {
            return Err(Error::internal("only a bi-encoder embeds texts"));
        };
        let texts = if query {
            self.prefixes.queries(texts)
        } else {
            self.prefixes.passages(texts)
        };
        let texts = &as_strs(&texts)[..];
        if let (Some(a), false) = (articles, query) {
            let ids = a.content_ids(texts)?;
            let mut order: Vec<usize> = (0..ids.len()).collect();
            order.sort_by_key(|&i| (ids[i].len(), i));
            let mut out = vec![Vec::new(); ids.len()];
            for chunk in order.chunks(batch_size.max(1)) {
                let refs: Vec<&[u32]> = chunk.iter().map(|&i| ids[i].as_slice()).collect();
                let v = a.encoder.forward_t(&refs, false)?;
                let v = if self.cosine { l2_normalize(&v)? } else { v };
                for (&i, r) in chunk.iter().zip(v.to_vec2::<f32>()?) {
                    out[i] = r;
                }
            }
            return Ok(out);
        }
        let tok = if query { query_tok } else { doc_tok };
        let toks = tok.encode(texts)?;
        let mut order: Vec<usize> = (0..toks.len()).collect();
        order.sort_by_key(|&i| (toks[i].ids.len(), i));
        let mut out = vec![Vec::new(); toks.len()];
        for chunk in order.chunks(batch_size.max(1)) {
            let seqs: Vec<&Tokens> = chunk.iter().map(|&i| &toks[i]).collect();
            let rows = self.bi_encode(&seqs, false, query)?.to_vec2::<f32>()?;
            for (&i, r) in chunk.iter().zip(rows) {
                out[i] = r;
            }
        }
        Ok(out)
    }

    /// Bi-encoder embeddings of `queries` (with the query prefix) as a `(n, dim)` tensor **with**
    /// gradient (dropout when `train`), normalised when scores are cosine: the student side of
    /// QABISAR's distillation.
    pub fn encode_queries_t(&self, queries: &[&str], train: bool) -> Result<Tensor> {
        let Net::Bi { query_tok, .. } = &self.net else {
            return Err(Error::internal("only a bi-encoder encodes queries alone"));
        };
        let queries = self.prefixes.queries(queries);
        let toks = query_tok.encode(&as_strs(&queries))?;
        self.bi_encode(&toks.iter().collect::<Vec<_>>(), train, true)
    }

    /// Per topic: its candidates (see [`Trainable::rank`]) and their scores.
    fn score_all(
        &self,
        split: &SplitData,
        rerank: Option<&[Vec<usize>]>,
        batch_size: usize,
    ) -> Result<Vec<(Vec<usize>, Vec<f32>)>> {
        let mut out = Vec::with_capacity(split.topics.len());
        let cand = |t: usize| -> Vec<usize> {
            match rerank {
                Some(r) if split.topics[t].pool.is_none() => r[t].clone(),
                _ => split.candidates(t),
            }
        };
        match &self.net {
            Net::Cross(ce) => {
                for (t, topic) in split.topics.iter().enumerate() {
                    let docs = cand(t);
                    let pairs: Vec<(&str, &str)> = docs
                        .iter()
                        .map(|&d| (topic.text.as_str(), split.docs[d].text.as_str()))
                        .collect();
                    let pairs = self.prefixes.pairs(&pairs);
                    let pairs: Vec<(&str, &str)> =
                        pairs.iter().map(|(q, p)| (q.as_ref(), p.as_ref())).collect();
                    let scores = ce.score(&pairs)?;
                    out.push((docs, scores));
                }
            }
            Net::Colbert(cb) => {
                let mut needed: Vec<usize> = (0..split.topics.len()).flat_map(cand).collect();
                needed.sort_unstable();
                needed.dedup();
                let texts: Vec<&str> = needed.iter().map(|&d| split.docs[d].text.as_str()).collect();
                let enc = cb.encode_docs(&as_strs(&self.prefixes.passages(&texts)))?;
                let by_doc: HashMap<usize, &Tensor> = needed.iter().copied().zip(enc.iter()).collect();
                let queries: Vec<&str> = split.topics.iter().map(|t| t.text.as_str()).collect();
                let qenc = cb.encode_queries(&as_strs(&self.prefixes.queries(&queries)))?;
                for (t, q) in qenc.iter().enumerate() {
                    let docs = cand(t);
                    let vectors: Vec<&Tensor> = docs.iter().map(|d| by_doc[d]).collect();
                    let scores = crate::scorers::colbert::MaxSimDocs::new(&vectors)?.scores(q)?;
                    out.push((docs, scores));
                }
            }
            // `embed_texts` puts the prefixes before the texts.
            Net::Bi { .. } => {
                let mut needed: Vec<usize> = (0..split.topics.len()).flat_map(cand).collect();
                needed.sort_unstable();
                needed.dedup();
                let texts: Vec<&str> = needed.iter().map(|&d| split.docs[d].text.as_str()).collect();
                let dv = self.embed_texts(&texts, false, batch_size)?;
                let by_doc: HashMap<usize, &Vec<f32>> = needed.iter().copied().zip(dv.iter()).collect();
                let queries: Vec<&str> = split.topics.iter().map(|t| t.text.as_str()).collect();
                let qv = self.embed_texts(&queries, true, batch_size)?;
                for (t, q) in qv.iter().enumerate() {
                    let docs = cand(t);
                    let scores: Vec<f32> = docs
                        .iter()
                        .map(|d| by_doc[d].iter().zip(q).map(|(a, b)| a * b).sum())
                        .collect();
                    out.push((docs, scores));
                }
            }
        }
        Ok(out)
    }
}

/// One batch, flattened: passage texts are deduplicated, examples point into them.
#[derive(Debug, Clone, Default)]
pub struct Batch<'a> {
    /// One query per example.
    pub queries: Vec<&'a str>,
    /// The distinct passages of the batch.
    pub passages: Vec<&'a str>,
    /// Per example: its positive's index in `passages`.
    pub positive: Vec<usize>,
    /// Per example: its negatives' indices in `passages`.
    pub negatives: Vec<Vec<usize>>,
    /// Per example: indices of passages that are positives of its topic (masked as negatives).
    pub is_positive_of: Vec<HashSet<usize>>,
}

impl<'a> Batch<'a> {
    /// Flattens examples of `split`.
    pub fn of(split: &'a SplitData, examples: &[&super::negatives::Example]) -> Self {
        let mut b = Batch::default();
        let mut slot: BTreeMap<usize, usize> = BTreeMap::new();
        let mut idx = |d: usize, b: &mut Batch<'a>| -> usize {
            *slot.entry(d).or_insert_with(|| {
                b.passages.push(split.docs[d].text.as_str());
                b.passages.len() - 1
            })
        };
        let mut doc_of = Vec::new();
        for e in examples {
            b.queries.push(split.topics[e.topic].text.as_str());
            let p = idx(e.positive, &mut b);
            doc_of.push(e.positive);
            b.positive.push(p);
            let n: Vec<usize> = e.negatives.iter().map(|&d| idx(d, &mut b)).collect();
            b.negatives.push(n);
        }
        for e in examples {
            let pos: HashSet<usize> = split.topics[e.topic]
                .positives
                .iter()
                .filter_map(|d| slot.get(d).copied())
                .collect();
            b.is_positive_of.push(pos);
        }
        b
    }
}

/// Binary cross-entropy with logits, averaged: `max(x, 0) − x·y + log(1 + e^{−|x|})` (stable).
pub fn bce_with_logits(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let a = x.relu()?;
    let b = (x * y)?;
    let c = (x.abs()?.neg()?.exp()? + 1.0)?.log()?;
    Ok(((a - b)? + c)?.mean_all()?)
}

/// A run tagged `tag` from scores of every topic of `split` against every corpus document
/// (`scores[t][d]`, corpus indices): each topic keeps its candidates' top `k`, in trec_eval order.
pub(crate) fn run_from_corpus_scores(split: &SplitData, tag: &str, scores: &[Vec<f32>], k: usize) -> Run {
    let mut run = Run::new(tag);
    for (t, topic) in split.topics.iter().enumerate() {
        let docs = split.candidates(t);
        let s: Vec<f32> = docs.iter().map(|&d| scores[t][d]).collect();
        run.topics
            .insert(topic.topic.clone(), top_hits(split, &docs, &s, k));
    }
    run
}

fn top_hits(split: &SplitData, docs: &[usize], scores: &[f32], k: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = docs
        .iter()
        .zip(scores)
        .map(|(&d, &s)| Hit {
            doc: split.docs[d].doc.clone(),
            score: f64::from(s),
        })
        .collect();
    hits.sort_by(trec_order);
    hits.truncate(k);
    hits
}

/// The corpus indices of a run's hits per topic of `split`, best first (for mining negatives).
pub fn rankings_of(split: &SplitData, run: &Run) -> Vec<Vec<usize>> {
    split
        .topics
        .iter()
        .map(|t| {
            run.topics
                .get(&t.topic)
                .map(|hits| {
                    hits.iter()
                        .filter_map(|h| split.index.get(&h.doc).copied())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}
