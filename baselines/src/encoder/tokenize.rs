//! Tokenisation with the `tokenizers` crate, and batching with longest-in-batch padding.
//!
//! Checkpoints' `tokenizer.json` files carry their own padding and truncation (all-MiniLM-L6-v2's
//! hard-codes `Fixed(128)`, MODELS.md "Facts that bite"), so both are set explicitly here: no padding
//! inside the tokenizer (batches are padded by [`pad_batch`], to the longest sequence), truncation
//! to the caller's `max_len`.

use std::borrow::Cow;
use std::path::Path;

use candle_core::{Device, Tensor};
use tokenizers::{EncodeInput, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::bert::Inputs;
use crate::error::{Error, Result};

/// One tokenised sequence: ids and segment ids, same length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    /// Token ids, special tokens included.
    pub ids: Vec<u32>,
    /// Segment ids.
    pub type_ids: Vec<u32>,
    /// 1 for tokens the model attends to (all, unless a caller masks some).
    pub mask: Vec<u32>,
}

/// Strings put before every query and every passage text a model reads: E5 models are trained on
/// `"query: …"` and `"passage: …"` (MODELS.md) and rank worse without them. Empty = no prefix.
/// Applied to the text before tokenisation, so the prefix's tokens count towards the truncation
/// length, and only where a neural encoder reads text (never for BM25).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextPrefixes {
    /// Before every query.
    pub query: String,
    /// Before every passage (document, article).
    pub passage: String,
}

impl TextPrefixes {
    /// Whether neither text gets a prefix.
    pub fn is_empty(&self) -> bool {
        self.query.is_empty() && self.passage.is_empty()
    }

    /// `texts` with the query prefix (borrowed as they are when it is empty).
    pub fn queries<'t>(&self, texts: &[&'t str]) -> Vec<Cow<'t, str>> {
        prefixed(&self.query, texts)
    }

    /// `texts` with the passage prefix (borrowed as they are when it is empty).
    pub fn passages<'t>(&self, texts: &[&'t str]) -> Vec<Cow<'t, str>> {
        prefixed(&self.passage, texts)
    }

    /// `(query, passage)` pairs with both prefixes: a cross-encoder reads `[CLS] query: q [SEP]
    /// passage: p [SEP]`.
    pub fn pairs<'t>(&self, pairs: &[(&'t str, &'t str)]) -> Vec<(Cow<'t, str>, Cow<'t, str>)> {
        pairs
            .iter()
            .map(|&(q, p)| (with_prefix(&self.query, q), with_prefix(&self.passage, p)))
            .collect()
    }
}

fn with_prefix<'t>(prefix: &str, text: &'t str) -> Cow<'t, str> {
    if prefix.is_empty() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{prefix}{text}"))
    }
}

fn prefixed<'t>(prefix: &str, texts: &[&'t str]) -> Vec<Cow<'t, str>> {
    texts.iter().map(|t| with_prefix(prefix, t)).collect()
}

/// The `&str`s of prefixed texts, for the tokenizer.
pub fn as_strs<'a>(texts: &'a [Cow<'_, str>]) -> Vec<&'a str> {
    texts.iter().map(|t| t.as_ref()).collect()
}

/// A `tokenizer.json` with explicit truncation and no padding.
#[derive(Debug, Clone)]
pub struct TextTokenizer {
    inner: Tokenizer,
    max_len: usize,
    pad_id: u32,
}

fn tok_err(context: impl Into<String>) -> impl FnOnce(tokenizers::Error) -> Error {
    let context = context.into();
    move |e| Error::Tokenizer {
        context,
        message: e.to_string(),
    }
}

impl TextTokenizer {
    /// Loads `path` (a `tokenizer.json`), truncating every sequence (or pair, longest first) to
    /// `max_len` tokens including special tokens.
    pub fn from_file(path: &Path, max_len: usize) -> Result<Self> {
        let inner = Tokenizer::from_file(path).map_err(tok_err(path.display().to_string()))?;
        Self::new(inner, max_len)
    }

    /// Wraps a tokenizer, resetting its padding and truncation.
    pub fn new(mut inner: Tokenizer, max_len: usize) -> Result<Self> {
        if max_len < 4 {
            return Err(Error::Param(format!("max_len must be at least 4, got {max_len}")));
        }
        let pad_id = inner
            .get_padding()
            .map(|p| p.pad_id)
            .or_else(|| inner.token_to_id("[PAD]"))
            .or_else(|| inner.token_to_id("<pad>"))
            .unwrap_or(0);
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_len,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(tok_err("setting truncation"))?;
        Ok(Self {
            inner,
            max_len,
            pad_id,
        })
    }

    /// The truncation length.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The padding token's id.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// The id of `token`, if it is in the vocabulary.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The underlying tokenizer.
    pub fn inner(&self) -> &Tokenizer {
        &self.inner
    }

    fn convert(enc: &tokenizers::Encoding) -> Tokens {
        Tokens {
            ids: enc.get_ids().to_vec(),
            type_ids: enc.get_type_ids().to_vec(),
            mask: enc.get_attention_mask().to_vec(),
        }
    }

    /// Tokenises single texts (`[CLS] text [SEP]` for BERT).
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        let inputs: Vec<EncodeInput<'_>> = texts.iter().map(|t| (*t).into()).collect();
        let encs = self
            .inner
            .encode_batch(inputs, true)
            .map_err(tok_err("encoding texts"))?;
        Ok(encs.iter().map(Self::convert).collect())
    }

    /// Content token ids of single texts, without special tokens (no `[CLS]` / `[SEP]`), truncated
    /// to `max_len` content tokens: the input of the hierarchical article encoder, which wraps
    /// segments itself.
    pub fn encode_content(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let inputs: Vec<EncodeInput<'_>> = texts.iter().map(|t| (*t).into()).collect();
        let encs = self
            .inner
            .encode_batch(inputs, false)
            .map_err(tok_err("encoding texts without special tokens"))?;
        Ok(encs.iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// Tokenises pairs (`[CLS] a [SEP] b [SEP]`, segment ids 0 then 1).
    pub fn encode_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<Tokens>> {
        let inputs: Vec<EncodeInput<'_>> = pairs.iter().map(|&(a, b)| (a, b).into()).collect();
        let encs = self
            .inner
            .encode_batch(inputs, true)
            .map_err(tok_err("encoding pairs"))?;
        Ok(encs.iter().map(Self::convert).collect())
    }
}

/// Pads sequences to the longest with `pad_id` (mask 0, segment 0) and stacks them into `(b, s)`
/// tensors.
pub fn pad_batch(seqs: &[&Tokens], pad_id: u32, device: &Device) -> Result<Inputs> {
    let b = seqs.len();
    let s = seqs.iter().map(|t| t.ids.len()).max().unwrap_or(0).max(1);
    let mut ids = vec![pad_id; b * s];
    let mut types = vec![0u32; b * s];
    let mut mask = vec![0u32; b * s];
    for (i, t) in seqs.iter().enumerate() {
        let n = t.ids.len();
        ids[i * s..i * s + n].copy_from_slice(&t.ids);
        types[i * s..i * s + n].copy_from_slice(&t.type_ids);
        mask[i * s..i * s + n].copy_from_slice(&t.mask);
    }
    Ok(Inputs {
        input_ids: Tensor::from_vec(ids, (b, s), device)?,
        type_ids: Tensor::from_vec(types, (b, s), device)?,
        attention_mask: Tensor::from_vec(mask, (b, s), device)?,
    })
}
