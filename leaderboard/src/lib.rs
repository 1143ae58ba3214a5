//! # lexbench-leaderboard
//!
//! The submission harness: run validation against the dataset it claims (format, topics, pools, dataset
//! hash), evaluation with `lexbench_core::eval`, paired significance tests against the BM25 baseline,
//! schema-versioned entries written atomically, regression expectations (OK / OKish / FAIL), and
//! Markdown / HTML rendering.
//!
//! Status: not built yet (see the BM25 + leaderboard + pipeline issue).
