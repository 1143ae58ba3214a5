//! The BERT encoder: configuration, model with PEFT hooks, tokenisation, pooling.
//!
//! - [`BertConfig`] reads `config.json`; [`BertModel`] mirrors HF tensor names and takes
//!   `forward_t(inputs, train)` with real dropout.
//! - [`peft`]: LoRA ([`LoraConfig`]), bottleneck adapters ([`AdapterConfig`]), prefixes
//!   ([`PrefixConfig`]).
//! - [`TextTokenizer`] + [`pad_batch`]: explicit truncation, longest-in-batch padding.
//! - [`pool`] and [`l2_normalize`]: mean (over the attention mask) or `[CLS]` pooling.

pub mod bert;
pub mod config;
pub mod peft;
pub mod tokenize;

pub use bert::{BertModel, Inputs};
pub use config::{BertConfig, HiddenAct};
pub use peft::{AdapterConfig, LinearKind, LoraConfig, PrefixConfig};
pub use tokenize::{TextTokenizer, Tokens, pad_batch};

use candle_core::{D, DType, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// How a sequence of hidden states becomes one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Mean over the tokens the attention mask keeps (sentence-transformers' default).
    Mean,
    /// The `[CLS]` (first) token's state (DPR, ANCE).
    Cls,
}

impl std::str::FromStr for Pooling {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "mean" => Ok(Self::Mean),
            "cls" => Ok(Self::Cls),
            _ => Err(crate::Error::Param(format!(
                "unknown pooling {s:?} (mean or cls)"
            ))),
        }
    }
}

/// Pools `hidden` (`(b, s, h)`) with `mask` (`(b, s)`, 1 = token) to `(b, h)`.
pub fn pool(hidden: &Tensor, mask: &Tensor, pooling: Pooling) -> Result<Tensor> {
    match pooling {
        Pooling::Cls => Ok(hidden.narrow(1, 0, 1)?.squeeze(1)?),
        Pooling::Mean => {
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let sum = hidden.broadcast_mul(&m)?.sum(1)?;
            // sentence-transformers clamps the count at 1e-9.
            let count = m.sum(1)?.clamp(1e-9, f64::INFINITY)?;
            Ok(sum.broadcast_div(&count)?)
        }
    }
}

/// Divides each row of `x` (`(b, h)`) by its L2 norm (at least 1e-12, as torch's `normalize`).
pub fn l2_normalize(x: &Tensor) -> Result<Tensor> {
    let norm = x
        .sqr()?
        .sum_keepdim(D::Minus1)?
        .sqrt()?
        .clamp(1e-12, f64::INFINITY)?;
    Ok(x.broadcast_div(&norm)?)
}
