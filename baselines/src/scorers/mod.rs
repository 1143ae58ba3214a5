//! Scorers over the encoder: [`BiEncoder`] (mean / `[CLS]` pooling, dot or cosine),
//! [`CrossEncoder`] (`[CLS] q [SEP] p [SEP]` → pooler → linear head) and [`ColBert`] (token states →
//! linear projection → L2 norm → MaxSim, with query/document markers, `[MASK]` query augmentation and
//! punctuation masking in documents). All batch their inputs; the bi-encoder and ColBERT expose their
//! vectors so callers can cache them (`rank::cache`).

pub mod biencoder;
pub mod colbert;
pub mod cross;
pub mod exact;

pub use biencoder::{BiEncoder, Similarity, similarity, similarity_matrix};
pub use colbert::{ColBert, ColBertConfig, maxsim};
pub use cross::CrossEncoder;
