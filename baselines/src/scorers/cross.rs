//! The cross-encoder (monoBERT): `[CLS] q [SEP] p [SEP]` (segment ids 0 then 1) through BERT, the
//! pooler (`tanh(W h_[CLS] + b)`), and a linear head to one relevance logit.
//!
//! The head is `classifier.{weight,bias}` as in HF `BertForSequenceClassification`; a checkpoint
//! without one (all-MiniLM-L6-v2, MODELS.md) gets a new head from a `VarMap`, to be fine-tuned.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{Init, VarBuilder};

use crate::encoder::{BertModel, TextTokenizer, Tokens, pad_batch};
use crate::error::{Error, Result};

/// BERT + pooler + linear head.
#[derive(Debug, Clone)]
pub struct CrossEncoder {
    model: BertModel,
    tokenizer: TextTokenizer,
    head_w: Tensor,
    head_b: Tensor,
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
            return Err(Error::Param(
                "model: a cross-encoder needs a checkpoint with a pooler (pooler.dense.*); this one has none"
                    .into(),
            ));
        }
        if batch_size == 0 {
            return Err(Error::Param(
                "cross-encoder batch_size must be at least 1, got 0".into(),
            ));
        }
        let h = model.config().hidden_size;
        let c = head.pp("classifier");
        let head_w = c.get_with_hints(
            (1, h),
            "weight",
            Init::Randn {
                mean: 0.0,
                stdev: 0.02,
            },
        )?;
        let head_b = c.get_with_hints(1, "bias", Init::Const(0.0))?;
        Ok(Self {
            model,
            tokenizer,
            head_w,
            head_b,
            batch_size,
        })
    }

    /// Loads a HF folder; the head comes from the checkpoint when it has `classifier.*`, otherwise
    /// from `new_head` (e.g. a fresh `VarMap`).
    pub fn from_dir(dir: &Path, device: &Device, max_len: usize, new_head: VarBuilder<'_>) -> Result<Self> {
        let model = BertModel::from_dir(dir, device)?;
        let tokenizer = TextTokenizer::from_file(&dir.join("tokenizer.json"), max_len)?;
        let weights = crate::encoder::files::weights_file(dir);
        let bytes = std::fs::read(&weights).map_err(crate::error::io_err(&weights))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)
            .map_err(crate::error::weights_err(&weights, "config.json"))?;
        if vb.contains_tensor("classifier.weight") {
            Self::new(model, tokenizer, vb, 32).map_err(|e| e.in_weights(&weights, "config.json"))
        } else {
            Self::new(model, tokenizer, new_head, 32)
        }
    }

    /// The tokenised pairs, as the model sees them.
    pub fn tokenize(&self, pairs: &[(&str, &str)]) -> Result<Vec<Tokens>> {
        self.tokenizer.encode_pairs(pairs)
    }

    /// Logits for one batch of tokenised pairs, `(b,)`.
    pub fn forward_t(&self, seqs: &[&Tokens], train: bool) -> Result<Tensor> {
        let inputs = pad_batch(seqs, self.tokenizer.pad_id(), self.model.device())?;
        let hidden = self.model.forward_t(&inputs, train)?;
        let pooled = self
            .model
            .pooler()
            .ok_or_else(|| Error::internal("cross-encoder: the pooler checked by CrossEncoder::new is gone"))?
            .forward_t(&hidden, train)?;
        let logits = pooled.matmul(&self.head_w.t()?)?.broadcast_add(&self.head_b)?;
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
