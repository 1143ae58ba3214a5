//! The seeded generator splits use: the shared SplitMix64 of `lexbench_core::rng`.

pub use lexbench_core::rng::SplitMix64;
