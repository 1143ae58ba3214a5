//! The cross-encoder (monoBERT): `[CLS] q [SEP] p [SEP]` (segment ids 0 then 1) through BERT, a
//! classification head, one relevance logit.
//!
//! The heads are HuggingFace's sequence-classification heads with one label:
//! - `BertForSequenceClassification`: the pooler (`tanh(W h_[CLS] + b)`), then
//!   `classifier.{weight,bias}` (cross-encoder/ms-marco-MiniLM-L-12-v2);
//! - `RobertaForSequenceClassification` (also CamemBERT, XLM-R): no pooler;
//!   `classifier.out_proj(tanh(classifier.dense(h_<s>)))` on the first token's state
//!   (`RobertaClassificationHead` in `modeling_roberta.py`), the pair read as `<s> q </s></s> p </s>`.
//!
//! A checkpoint without a head (all-MiniLM-L6-v2, MODELS.md) gets a new BERT-style head on its pooler
//! from a `VarMap`, to be fine-tuned.

use std::path::Path;

use candle_core::{Device, Tensor};
use candle_nn::{Init, VarBuilder};

use crate::encoder::{BertModel, TextTokenizer, Tokens, pad_batch};
use crate::error::{Error, Result};

/// A sequence-classification head with one label (see the module documentation).
#[derive(Debug, Clone)]
enum Head {
    /// `BertForSequenceClassification`: `classifier` on the pooler's output.
    Pooler { w: Tensor, b: Tensor },
    /// `RobertaForSequenceClassification`: `out_proj(tanh(dense(h_0)))`.
    Roberta {
        dense_w: Tensor,
        dense_b: Tensor,
        out_w: Tensor,
        out_b: Tensor,
    },
}

/// BERT (or a RoBERTa-family encoder) + a classification head.
#[derive(Debug, Clone)]
pub struct CrossEncoder {
    model: BertModel,
    tokenizer: TextTokenizer,
    head: Head,
    head_from_checkpoint: bool,
    batch_size: usize,
}

impl CrossEncoder {
    /// Builds from parts: `model` must have a pooler; `head` holds (or creates, from a `VarMap`)
    /// `classifier.weight` `(1, hidden)` and `classifier.bias` `(1,)`.
    pub fn new(
        model: BertModel,
        tokenizer: TextTokenizer,
        head: VarBuilder<'_>,
        batch_size: usize,
    ) -> Result<Self> {
        if model.pooler().is_none() {
            return Err(Error::Model(
                "a cross-encoder needs a checkpoint with a pooler (pooler.dense.*); this one has none".into(),
            ));
        }
        if batch_size == 0 {
            return Err(Error::Param(
                "cross-encoder batch_size must be at least 1, got 0".into(),
            ));
        }
        let h = model.config().hidden_size;
        let c = head.pp("classifier");
        let w = c.get_with_hints(
            (1, h),
            "weight",
            Init::Randn {
                mean: 0.0,
                stdev: 0.02,
            },
        )?;
        let b = c.get_with_hints(1, "bias", Init::Const(0.0))?;
        Ok(Self {
            model,
            tokenizer,
            head: Head::Pooler { w, b },
            head_from_checkpoint: false,
            batch_size,
        })
    }

    /// Builds from parts with `RobertaForSequenceClassification`'s head from `head`:
    /// `classifier.dense.{weight,bias}` `(hidden, hidden)` and `classifier.out_proj.{weight,bias}`
    /// `(1, hidden)`. No pooler is needed.
    pub fn with_roberta_head(
        model: BertModel,
        tokenizer: TextTokenizer,
        head: VarBuilder<'_>,
        batch_size: usize,
    ) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::Param(
                "cross-encoder batch_size must be at least 1, got 0".into(),
            ));
        }
        let h = model.config().hidden_size;
        let (dense, out) = (
            head.pp("classifier").pp("dense"),
            head.pp("classifier").pp("out_proj"),
        );
        let head = Head::Roberta {
            dense_w: dense.get((h, h), "weight")?,
            dense_b: dense.get(h, "bias")?,
            out_w: out.get((1, h), "weight")?,
            out_b: out.get(1, "bias")?,
        };
        Ok(Self {
            model,
            tokenizer,
            head,
            head_from_checkpoint: false,
            batch_size,
        })
    }

    /// Loads a HF folder; the head comes from the checkpoint when it has one (`classifier.weight`:
    /// BERT's, on the pooler; `classifier.out_proj.weight` in a RoBERTa-family folder: RoBERTa's),
    /// otherwise from `new_head` (e.g. a fresh `VarMap`; BERT's, on the pooler). `max_len` is cut at
    /// the model's positions ([`crate::encoder::BertConfig::max_tokens`]). A head with more than one
    /// label is refused.
    pub fn from_dir(dir: &Path, device: &Device, max_len: usize, new_head: VarBuilder<'_>) -> Result<Self> {
        let model = BertModel::from_dir(dir, device)?;
        let max_len = max_len.min(model.config().max_tokens());
        let tokenizer = TextTokenizer::from_file(&dir.join("tokenizer.json"), max_len)?;
        let found = crate::encoder::weights::Weights::of_folder(dir)?;
        let vb = found.var_builder(device, "config.json")?;
        let weights = found.path().to_owned();
        let in_weights = |e: Error| e.in_weights(&weights, "config.json");
        let roberta_head = vb.contains_tensor("classifier.out_proj.weight");
        if roberta_head && model.arch().is_roberta_family() {
            one_label(&vb, "classifier.out_proj.weight", &weights)?;
            let ce = Self::with_roberta_head(model, tokenizer, vb, 32).map_err(in_weights)?;
            Ok(Self {
                head_from_checkpoint: true,
                ..ce
            })
        } else if vb.contains_tensor("classifier.weight") {
            one_label(&vb, "classifier.weight", &weights)?;
            let ce = Self::new(model, tokenizer, vb, 32).map_err(in_weights)?;
            Ok(Self {
                head_from_checkpoint: true,
                ..ce
            })
        } else {
            Self::new(model, tokenizer, new_head, 32)
        }
    }

    /// Whether the head was read from the checkpoint (not created from `new_head`).
    pub fn head_from_checkpoint(&self) -> bool {
        self.head_from_checkpoint
    }

    /// The tokenised pairs, as the model sees them.
    pub fn tokenize(&self, pairs: &[(&str, &str)]) -> Result<Vec<Tokens>> {
        self.tokenizer.encode_pairs(pairs)
    }

    /// Logits for one batch of tokenised pairs, `(b,)`.
    pub fn forward_t(&self, seqs: &[&Tokens], train: bool) -> Result<Tensor> {
        let inputs = pad_batch(seqs, self.tokenizer.pad_id(), self.model.device())?;
        let hidden = self.model.forward_t(&inputs, train)?;
        let logits = match &self.head {
            Head::Pooler { w, b } => {
                let pooled = self
                    .model
                    .pooler()
                    .ok_or_else(|| {
                        Error::internal("cross-encoder: the pooler checked by CrossEncoder::new is gone")
                    })?
                    .forward_t(&hidden, train)?;
                pooled.matmul(&w.t()?)?.broadcast_add(b)?
            }
            // transformers' RobertaClassificationHead; its dropouts are identities at inference.
            Head::Roberta {
                dense_w,
                dense_b,
                out_w,
                out_b,
            } => {
                let first = hidden.narrow(1, 0, 1)?.squeeze(1)?;
                let x = first.matmul(&dense_w.t()?)?.broadcast_add(dense_b)?.tanh()?;
                x.matmul(&out_w.t()?)?.broadcast_add(out_b)?
            }
        };
        Ok(logits.squeeze(1)?)
    }

    /// One relevance score per `(query, passage)` pair, in input order.
    pub fn score(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        let toks = self.tokenize(pairs)?;
        let mut order: Vec<usize> = (0..toks.len()).collect();
        order.sort_by_key(|&i| (toks[i].ids.len(), i));
        let mut out = vec![0f32; toks.len()];
        for chunk in order.chunks(self.batch_size) {
            let seqs: Vec<&Tokens> = chunk.iter().map(|&i| &toks[i]).collect();
            let s = self.forward_t(&seqs, false)?.to_vec1::<f32>()?;
            for (&i, v) in chunk.iter().zip(s) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

/// Refuses a classification head with more than one label (`tensor`'s rows): a cross-encoder gives
/// one relevance logit.
fn one_label(vb: &VarBuilder<'_>, tensor: &str, weights: &Path) -> Result<()> {
    let labels = vb
        .get_unchecked(tensor)
        .map_err(|e| Error::from(e).in_weights(weights, "config.json"))?
        .dim(0)?;
    if labels != 1 {
        return Err(Error::Format {
            path: weights.to_owned(),
            message: format!(
                "{tensor} has {labels} rows: a classification head with {labels} labels, but a cross-encoder \
                 gives one relevance logit (num_labels 1)"
            ),
        });
    }
    Ok(())
}
