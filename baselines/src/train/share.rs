//! The trainable-parameter share ("% train" in the ECtHR paper's Table 2), computed from a
//! `config.json` alone: no weights are needed, so BERT-base-sized rows can be checked without a
//! download. The counts follow the module shapes of [`crate::encoder`] and are tested against the
//! variables a real model creates.

use serde::Serialize;

use crate::encoder::peft::{PeftConfig, PeftMethod};
use crate::encoder::{BertConfig, LinearKind};
use crate::error::Result;

/// Parameter counts of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Share {
    /// Parameters of the base encoder (embeddings, layers, pooler).
    pub base: usize,
    /// Trainable parameters.
    pub trainable: usize,
    /// All parameters (base + PEFT).
    pub total: usize,
    /// `100 · trainable / total`.
    pub percent: f64,
}

/// Parameters of a BERT encoder with `cfg`'s sizes (with the pooler when `pooler`).
pub fn bert_params(cfg: &BertConfig, pooler: bool) -> usize {
    let (h, f) = (cfg.hidden_size, cfg.intermediate_size);
    let emb = (cfg.vocab_size + cfg.max_position_embeddings + cfg.type_vocab_size) * h + 2 * h;
    let layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * (2 * h);
    emb + cfg.num_hidden_layers * layer + if pooler { h * h + h } else { 0 }
}

/// Parameters a PEFT configuration adds to a model of `cfg`'s sizes.
pub fn peft_params(cfg: &BertConfig, peft: &PeftConfig) -> Result<usize> {
    let (h, f, l) = (cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers);
    Ok(match peft.method {
        PeftMethod::Lora => {
            let per: usize = peft
                .lora
                .targets
                .iter()
                .map(|k| {
                    let (i, o) = match k {
                        LinearKind::Intermediate => (h, f),
                        LinearKind::Output => (f, h),
                        _ => (h, h),
                    };
                    peft.lora.rank * (i + o)
                })
                .sum();
            l * per
        }
        PeftMethod::Adapter => {
            let w = peft.adapter.width(h)?;
            l * 2 * (h * w + w + w * h + h)
        }
        PeftMethod::Prefix if peft.prefix.projection => {
            // The reparametrisation MLP: embedding, hidden → p, p → layers · 2 · hidden.
            let p = peft.prefix.projection_width(h);
            peft.prefix.length * h + (h * p + p) + (p * l * 2 * h + l * 2 * h)
        }
        PeftMethod::Prefix => l * 2 * peft.prefix.length * h,
    })
}

/// The share for full fine-tuning (`peft = None`: everything trains) or a PEFT method.
pub fn share(cfg: &BertConfig, pooler: bool, peft: Option<&PeftConfig>) -> Result<Share> {
    let base = bert_params(cfg, pooler);
    let (trainable, total) = match peft {
        None => (base, base),
        Some(p) => {
            let n = peft_params(cfg, p)?;
            (n, base + n)
        }
    };
    Ok(Share {
        base,
        trainable,
        total,
        percent: 100.0 * trainable as f64 / total as f64,
    })
}
