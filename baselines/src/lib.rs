//! # lexbench-baselines
//!
//! Retrievers and trainers: BM25, and on candle the bi-encoder (DPR, ANCE), ColBERT, cross-encoder, the
//! PEFT variants (LoRA, bottleneck adapters, prefix tuning), the hierarchical article encoder, DR+GNN,
//! CuSINeS curriculum negative sampling and QABISAR. Every system writes a TREC run (a
//! `lexbench_core::trec::Run`) and a JSON sidecar with its configuration and seed.
//!
//! Status: not built yet (see the BM25, encoder, fine-tuning and statutory-retrieval issues).
