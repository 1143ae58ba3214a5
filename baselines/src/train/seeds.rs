//! Every random stream of training, named: one [`SeedPurpose`] per use, so that no two draws share a
//! stream by accident and a resumed run re-derives exactly the streams an uninterrupted one uses.
//!
//! A stream is `derive_seed(seed, purpose, n)` where `n` is the epoch (example order, negatives,
//! curriculum draws), the global step (dropout masks, QABISAR's subgraph samples) or a constant
//! (initial weights). The numbers are part of every trained model's identity: changing one changes
//! every result trained with it.

use lexbench_core::rng::SplitMix64;

/// What a derived seed is for. The discriminants are the historical numbers (results depend on them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum SeedPurpose {
    /// Fine-tuning: each epoch's example order (`n` = epoch).
    Shuffle = 1,
    /// Fine-tuning: each epoch's BM25, random and model-mined negatives (`n` = epoch).
    Negatives = 2,
    /// Fine-tuning: each step's dropout masks (`n` = step).
    Dropout = 3,
    /// Fine-tuning: each epoch's CuSINeS curriculum draws (`n` = epoch).
    Curriculum = 4,
    /// CuSINeS: the order among equally difficult candidates in a view (articles of another code
    /// are all at infinite hierarchical distance), one seeded shuffle per topic (`n` = 0).
    CurriculumTies = 5,
    /// DR+GNN: each epoch's example order; with `n = u64::MAX`, the GAT's initial weights.
    GnnShuffle = 11,
    /// DR+GNN: each epoch's negatives.
    GnnNegatives = 12,
    /// DR+GNN: each step's dropout masks.
    GnnDropout = 13,
    /// DR+GNN: each epoch's curriculum draws.
    GnnCurriculum = 14,
    /// QABISAR: each epoch's example order.
    QabisarShuffle = 21,
    /// QABISAR: each epoch's negatives.
    QabisarNegatives = 22,
    /// QABISAR: each step's dropout masks.
    QabisarDropout = 23,
    /// QABISAR: each step's subgraph sample.
    QabisarSample = 24,
    /// QABISAR: each epoch's curriculum draws.
    QabisarCurriculum = 25,
    /// QABISAR: the GAT's initial weights (`n` = 0).
    QabisarInit = 26,
}

/// A derived seed for `(purpose, n)`.
pub fn derive_seed(seed: u64, purpose: SeedPurpose, n: u64) -> u64 {
    let purpose = purpose as u64;
    let mut r = SplitMix64::new(seed ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n.rotate_left(32));
    r.next_u64()
}

/// The four streams the training loop draws from, for one kind of training.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopSeeds {
    /// Each epoch's example order.
    pub shuffle: SeedPurpose,
    /// Each epoch's negatives.
    pub negatives: SeedPurpose,
    /// Each step's dropout masks.
    pub dropout: SeedPurpose,
    /// Each epoch's curriculum draws.
    pub curriculum: SeedPurpose,
}

impl LoopSeeds {
    /// Fine-tuning an encoder (DPR, ANCE, ColBERT, cross-encoder, hierarchical).
    pub const ENCODER: Self = Self {
        shuffle: SeedPurpose::Shuffle,
        negatives: SeedPurpose::Negatives,
        dropout: SeedPurpose::Dropout,
        curriculum: SeedPurpose::Curriculum,
    };
    /// DR+GNN's second stage.
    pub const GNN: Self = Self {
        shuffle: SeedPurpose::GnnShuffle,
        negatives: SeedPurpose::GnnNegatives,
        dropout: SeedPurpose::GnnDropout,
        curriculum: SeedPurpose::GnnCurriculum,
    };
    /// QABISAR.
    pub const QABISAR: Self = Self {
        shuffle: SeedPurpose::QabisarShuffle,
        negatives: SeedPurpose::QabisarNegatives,
        dropout: SeedPurpose::QabisarDropout,
        curriculum: SeedPurpose::QabisarCurriculum,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purposes_keep_their_numbers_and_streams_differ() {
        // The numbers are in every trained model's identity: a renumbering must fail here.
        let all = [
            (SeedPurpose::Shuffle, 1),
            (SeedPurpose::Negatives, 2),
            (SeedPurpose::Dropout, 3),
            (SeedPurpose::Curriculum, 4),
            (SeedPurpose::GnnShuffle, 11),
            (SeedPurpose::GnnNegatives, 12),
            (SeedPurpose::GnnDropout, 13),
            (SeedPurpose::GnnCurriculum, 14),
            (SeedPurpose::QabisarShuffle, 21),
            (SeedPurpose::QabisarNegatives, 22),
            (SeedPurpose::QabisarDropout, 23),
            (SeedPurpose::QabisarSample, 24),
            (SeedPurpose::QabisarCurriculum, 25),
            (SeedPurpose::QabisarInit, 26),
        ];
        let mut seen = std::collections::HashSet::new();
        for (p, n) in all {
            assert_eq!(p as u64, n);
            assert!(seen.insert(derive_seed(7, p, 0)), "{p:?} repeats a stream");
        }
        assert_ne!(
            derive_seed(7, SeedPurpose::Dropout, 1),
            derive_seed(7, SeedPurpose::Dropout, 2)
        );
    }
}
