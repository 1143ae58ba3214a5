//! A model folder ranked as one of the three neural kinds, behind one type: a caller that chooses
//! the kind at run time (the submission harness, `lexbench submit --model DIR --kind K`) ranks
//! through the same seam ([`super::Ranker`], [`super::write_run`]) as `lexbench run dense|colbert|
//! cross-encoder`, with the same rankers. A bi-encoder trained here with a hierarchical article
//! encoder ranks as [`NeuralRanker::Trained`]: the network rebuilt from its training configuration
//! and the folder's weights, as `lexbench train … --run` ranks it.

use super::colbert::ColBertRanker;
use super::cross::CrossEncoderRanker;
use super::dense::DenseRanker;
use super::neural::NeuralDetails;
use super::{Ranked, Ranker, SplitInputs};
use crate::error::Result;

/// A bi-encoder, a ColBERT model or a cross-encoder, loaded (boxed: the rankers differ in size).
pub enum NeuralRanker {
    /// Query and document embeddings compared ([`DenseRanker`]).
    Dense(Box<DenseRanker>),
    /// Late interaction ([`ColBertRanker`]).
    ColBert(Box<ColBertRanker>),
    /// Query–document pairs scored ([`CrossEncoderRanker`]).
    Cross(Box<CrossEncoderRanker>),
    /// A trained bi-encoder [`DenseRanker`] cannot load (a hierarchical article encoder's `hier.…`
    /// tensors), rebuilt from its training configuration by the training layer
    /// (`train::export::TrainedRanker`; a trait object, since ranking sits below training).
    Trained(Box<dyn Ranker<Details = NeuralDetails>>),
}

impl Ranker for NeuralRanker {
    type Details = NeuralDetails;

    fn seed(&self) -> u64 {
        match self {
            NeuralRanker::Dense(r) => r.seed(),
            NeuralRanker::ColBert(r) => r.seed(),
            NeuralRanker::Cross(r) => r.seed(),
            NeuralRanker::Trained(r) => r.seed(),
        }
    }

    fn rank(&mut self, inputs: &SplitInputs) -> Result<Ranked<NeuralDetails>> {
        match self {
            NeuralRanker::Dense(r) => r.rank(inputs),
            NeuralRanker::ColBert(r) => r.rank(inputs),
            NeuralRanker::Cross(r) => r.rank(inputs),
            NeuralRanker::Trained(r) => r.rank(inputs),
        }
    }
}
