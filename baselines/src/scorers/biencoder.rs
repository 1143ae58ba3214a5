//! The bi-encoder (DPR, ANCE, sentence-transformers): queries and passages encoded independently,
//! scored by dot product or cosine.

use serde::{Deserialize, Serialize};

use crate::encoder::SentenceEncoder;
use crate::error::Result;

/// How two vectors are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Similarity {
    /// `q · d` (DPR, ANCE).
    Dot,
    /// `q · d / (|q| |d|)`.
    Cosine,
}

/// `sim(a, b)`; cosine of a zero vector is 0.
pub fn similarity(a: &[f32], b: &[f32], sim: Similarity) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    match sim {
        Similarity::Dot => dot,
        Similarity::Cosine => {
            let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
            let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
            if na == 0.0 || nb == 0.0 {
                0.0
            } else {
                dot / (na * nb)
            }
        }
    }
}

/// Scores of every query against every document: `out[q][d]`.
pub fn similarity_matrix(queries: &[Vec<f32>], docs: &[Vec<f32>], sim: Similarity) -> Vec<Vec<f32>> {
    queries
        .iter()
        .map(|q| docs.iter().map(|d| similarity(q, d, sim)).collect())
        .collect()
}

/// A [`SentenceEncoder`] with a similarity.
#[derive(Debug, Clone)]
pub struct BiEncoder {
    /// The encoder (its options choose pooling and normalisation).
    pub encoder: SentenceEncoder,
    /// The similarity.
    pub similarity: Similarity,
}

impl BiEncoder {
    /// Encodes queries and documents and scores every pair: `out[q][d]`.
    pub fn score(&self, queries: &[&str], docs: &[&str]) -> Result<Vec<Vec<f32>>> {
        let q = self.encoder.embed(queries)?;
        let d = self.encoder.embed(docs)?;
        Ok(similarity_matrix(&q, &d, self.similarity))
    }
}
