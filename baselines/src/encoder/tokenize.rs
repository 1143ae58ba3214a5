//! Tokenisation with the `tokenizers` crate, and batching with longest-in-batch padding.
//!
//! Checkpoints' `tokenizer.json` files carry their own padding and truncation (all-MiniLM-L6-v2's
//! hard-codes `Fixed(128)`, MODELS.md "Facts that bite"), so both are set explicitly here: no padding
//! inside the tokenizer (batches are padded by [`pad_batch`], to the longest sequence), truncation
//! to the caller's `max_len`.
//!
//! A training batch mixes lengths (ECtHR paragraphs: median 78 tokens, a long tail cut at the
//! truncation length), and one padded tensor pays for every sequence at the longest's length.
//! [`forward_by_length`] runs a batch as a few groups of similar length instead ([`length_groups`])
//! and returns the rows in input order: the same values (padding is masked), less compute.

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
    /// The same tokenizer without truncation: the two sides of a pair, whole (see
    /// [`TextTokenizer::encode_pairs`]).
    whole: Tokenizer,
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
    /// The file must be a regular file of at most [`super::files::MAX_TOKENIZER_BYTES`].
    pub fn from_file(path: &Path, max_len: usize) -> Result<Self> {
        let text = super::files::read_model_text(path, super::files::MAX_TOKENIZER_BYTES)?;
        let inner: Tokenizer = text.parse().map_err(tok_err(path.display().to_string()))?;
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
        let mut whole = inner.clone();
        whole
            .with_truncation(None)
            .map_err(tok_err("clearing truncation"))?;
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
            whole,
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

    /// Tokenises pairs (`[CLS] a [SEP] b [SEP]`, segment ids 0 then 1), cut to `max_len` as
    /// transformers cuts them (`truncation="longest_first"`): each side is tokenised whole, then the
    /// tokenizers crate's `truncate_encodings` (LongestFirst) cuts the longer side first, and when
    /// both must be cut gives the odd token of an odd budget to the longer side (to the second on a
    /// tie). The crate's own pair encoding first cuts each side to `max_len` alone, so when both
    /// sides are longer than that it sees two equal lengths and gives the odd token to the second
    /// side even when the first is the longer (issue 54, item 7); transformers (tokenizers 0.23.3)
    /// does not.
    pub fn encode_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<Tokens>> {
        let side = |first: bool| -> Result<Vec<tokenizers::Encoding>> {
            let inputs: Vec<EncodeInput<'_>> = pairs
                .iter()
                .map(|&(a, b)| if first { a.into() } else { b.into() })
                .collect();
            self.whole
                .encode_batch(inputs, false)
                .map_err(tok_err("encoding pairs"))
        };
        let (firsts, seconds) = (side(true)?, side(false)?);
        firsts
            .into_iter()
            .zip(seconds)
            .map(|(a, b)| {
                let e = self
                    .inner
                    .post_process(a, Some(b), true)
                    .map_err(tok_err("encoding pairs"))?;
                Ok(Self::convert(&e))
            })
            .collect()
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

/// What one more forward pass costs in [`length_groups`], in padded token positions: every layer's
/// operations are dispatched, and their threads synchronised, once more per group (forward and
/// backward), and small groups multiply less efficiently. Eight sequences of 128 tokens: with 512,
/// DPR training at 128 tokens split batches that gained nothing and measured about 8% slower; at
/// 256 tokens, where a batch's short paragraphs waste most, splitting pays (docs/performance.md).
pub const GROUP_COST_TOKENS: usize = 1024;

/// Splits a batch of sequences of lengths `lens` into groups of similar length, each to be padded
/// to its own longest, so that the padded positions plus `group_cost` per group are fewest (an exact
/// split of the length-sorted batch, by dynamic programming).
///
/// Returns the groups as indices into `lens`, shortest group first, each in ascending length (ties in
/// input order). When one group is cheapest, it is `0..n` in input order: a batch of equal lengths
/// runs exactly as one padded batch would.
pub fn length_groups(lens: &[usize], group_cost: usize) -> Vec<Vec<usize>> {
    let n = lens.len();
    if n <= 1 {
        return vec![(0..n).collect()];
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (lens[i], i));
    let sorted: Vec<usize> = order.iter().map(|&i| lens[i].max(1)).collect();
    // best[j]: the cheapest split of the j shortest; cut[j]: where its last group starts.
    let mut best = vec![0usize; n + 1];
    let mut cut = vec![0usize; n + 1];
    for j in 1..=n {
        let (mut b, mut c) = (usize::MAX, 0);
        for (i, &before) in best.iter().enumerate().take(j) {
            let cost = before + (j - i) * sorted[j - 1] + group_cost;
            if cost < b {
                (b, c) = (cost, i);
            }
        }
        best[j] = b;
        cut[j] = c;
    }
    let mut bounds = Vec::new();
    let mut j = n;
    while j > 0 {
        bounds.push((cut[j], j));
        j = cut[j];
    }
    if bounds.len() == 1 {
        return vec![(0..n).collect()];
    }
    bounds.iter().rev().map(|&(a, b)| order[a..b].to_vec()).collect()
}

/// Runs `forward` over `seqs` in [`length_groups`] (with [`GROUP_COST_TOKENS`]) and returns its
/// rows in input order. `forward` maps a group of sequences to a tensor whose first dimension is
/// the group's size (pooled vectors `(b, h)`, logits `(b,)`); the rows are concatenated and put
/// back in input order with `index_select`, through which gradients flow. With one group, `forward`
/// sees `seqs` as given.
pub fn forward_by_length(
    seqs: &[&Tokens],
    mut forward: impl FnMut(&[&Tokens]) -> Result<Tensor>,
) -> Result<Tensor> {
    let lens: Vec<usize> = seqs.iter().map(|t| t.ids.len()).collect();
    let groups = length_groups(&lens, GROUP_COST_TOKENS);
    if groups.len() == 1 {
        return forward(seqs);
    }
    let mut parts = Vec::with_capacity(groups.len());
    let mut row_of = vec![0u32; seqs.len()];
    let mut row = 0u32;
    for group in &groups {
        let members: Vec<&Tokens> = group.iter().map(|&i| seqs[i]).collect();
        let part = forward(&members)?;
        if part.dims().first() != Some(&members.len()) {
            return Err(Error::internal(format!(
                "forward_by_length: a group of {} sequences gave a tensor of shape {:?}",
                members.len(),
                part.dims()
            )));
        }
        parts.push(part);
        for &i in group {
            row_of[i] = row;
            row += 1;
        }
    }
    let stacked = Tensor::cat(&parts, 0)?;
    let index = Tensor::from_vec(row_of, seqs.len(), stacked.device())?;
    Ok(stacked.index_select(&index, 0)?)
}

#[cfg(test)]
mod tests {
    //! Properties: length groups cover every sequence once, keep a uniform batch whole and in order,
    //! split two clusters of lengths apart; a batch run by length gives the padded batch's values
    //! and gradients.
    use candle_core::{DType, Device, Tensor, Var};
    use candle_nn::{VarBuilder, VarMap};

    use super::*;
    use crate::encoder::seeded::seeded_normal;
    use crate::encoder::{BertConfig, BertModel, Pooling, pool};

    fn tokens(len: usize, seed: u32) -> Tokens {
        let ids: Vec<u32> = (0..len as u32).map(|i| 2 + (i * 7 + seed * 13) % 90).collect();
        Tokens {
            type_ids: vec![0; len],
            mask: vec![1; len],
            ids,
        }
    }

    #[test]
    fn groups_cover_every_sequence_once_in_ascending_length() {
        let lens = [
            128, 20, 128, 35, 17, 128, 90, 22, 128, 128, 31, 128, 19, 128, 128, 25,
        ];
        let groups = length_groups(&lens, 64);
        assert!(groups.len() > 1, "{groups:?}");
        let mut seen: Vec<usize> = groups.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..lens.len()).collect::<Vec<_>>());
        let flat: Vec<usize> = groups.iter().flatten().map(|&i| lens[i]).collect();
        assert!(flat.windows(2).all(|w| w[0] <= w[1]), "{flat:?}");
        // The split is never dearer than one padded batch.
        let cost = |g: &[Vec<usize>]| -> usize {
            g.iter()
                .map(|x| x.len() * x.iter().map(|&i| lens[i]).max().unwrap_or(0) + 64)
                .sum()
        };
        assert!(cost(&groups) < cost(&[(0..lens.len()).collect()]));
    }

    #[test]
    fn a_uniform_batch_stays_whole_and_in_order() {
        assert_eq!(
            length_groups(&[128; 24], GROUP_COST_TOKENS),
            vec![(0..24).collect::<Vec<_>>()]
        );
        assert_eq!(length_groups(&[], GROUP_COST_TOKENS), vec![Vec::<usize>::new()]);
        assert_eq!(length_groups(&[5], GROUP_COST_TOKENS), vec![vec![0]]);
        // Nearly uniform: a second pass would cost more than the padding it saves.
        assert_eq!(length_groups(&[128, 120, 126, 128], GROUP_COST_TOKENS).len(), 1);
    }

    #[test]
    fn two_clusters_of_lengths_are_split_apart() {
        let lens: Vec<usize> = (0..24).map(|i| if i % 2 == 0 { 128 } else { 24 }).collect();
        let groups = length_groups(&lens, GROUP_COST_TOKENS);
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert!(groups[0].iter().all(|&i| lens[i] == 24));
        assert!(groups[1].iter().all(|&i| lens[i] == 128));
    }

    #[test]
    fn by_length_gives_the_padded_batch_values_and_gradients() {
        let vars = VarMap::new();
        let model = BertModel::load(
            &BertConfig::tiny(),
            VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu),
            false,
        )
        .expect("model");
        // Seeded weights of a trained model's scale (N(0, 0.2²); layer norms' weights near 1): the
        // VarMap's own initial values leave most gradients at rounding noise, which compares nothing.
        for (k, (name, var)) in vars.data().lock().expect("vars").iter().enumerate() {
            let n = var.elem_count();
            let noise = seeded_normal(1, n, 0.2, 1 + k as u64);
            let values: Vec<f32> = if name.ends_with("LayerNorm.weight") {
                noise.iter().map(|x| 1.0 + x / 2.0).collect()
            } else {
                noise
            };
            var.set(&Tensor::from_vec(values, var.shape(), &Device::Cpu).expect("values"))
                .expect("set");
        }
        // 30 short sequences and 6 at the tiny model's 60: a split saves 30 × ~55 positions.
        let seqs: Vec<Tokens> = (0..36u32)
            .map(|i| {
                tokens(
                    if i % 6 == 2 {
                        60 - i as usize % 3
                    } else {
                        3 + i as usize % 4
                    },
                    i,
                )
            })
            .collect();
        let refs: Vec<&Tokens> = seqs.iter().collect();
        let lens: Vec<usize> = seqs.iter().map(|t| t.ids.len()).collect();
        assert!(
            length_groups(&lens, GROUP_COST_TOKENS).len() > 1,
            "the test batch must split"
        );
        let encode = |group: &[&Tokens]| -> Result<Tensor> {
            let inputs = pad_batch(group, 0, &Device::Cpu)?;
            let hidden = model.forward_t(&inputs, false)?;
            pool(&hidden, &inputs.attention_mask, Pooling::Mean)
        };
        let whole = encode(&refs).expect("padded batch");
        let grouped = forward_by_length(&refs, encode).expect("by length");
        assert_eq!(whole.dims(), grouped.dims());
        let max_diff = |a: &Tensor, b: &Tensor| -> f32 {
            (a - b)
                .and_then(|d| d.abs())
                .and_then(|d| d.max_all())
                .and_then(|d| d.to_scalar::<f32>())
                .expect("difference")
        };
        assert!(
            max_diff(&whole, &grouped) < 1e-5,
            "values differ by {}",
            max_diff(&whole, &grouped)
        );
        // A loss that weighs rows differently, so a row put back in the wrong place shows.
        let weights = Tensor::arange(1f32, 1.0 + seqs.len() as f32, &Device::Cpu)
            .and_then(|w| w.reshape((seqs.len(), 1)))
            .expect("weights");
        let loss = |v: &Tensor| v.broadcast_mul(&weights).and_then(|x| x.sum_all()).expect("loss");
        let (g_whole, g_grouped) = (
            loss(&whole).backward().expect("backward"),
            loss(&grouped).backward().expect("backward"),
        );
        let all: Vec<Var> = vars.all_vars();
        assert!(!all.is_empty());
        let largest = |t: &Tensor| -> f32 {
            t.abs()
                .and_then(|x| x.max_all())
                .and_then(|x| x.to_scalar::<f32>())
                .expect("largest")
        };
        let pairs: Vec<(Tensor, Tensor)> = all
            .iter()
            .map(|var| {
                let a = g_whole
                    .get(var.as_tensor())
                    .expect("gradient of the padded batch");
                let b = g_grouped.get(var.as_tensor()).expect("gradient by length");
                (a.clone(), b.clone())
            })
            .collect();
        // Each gradient to 1e-4 of its own largest value, with a floor far below every real
        // gradient here for those that are zero in exact arithmetic (the key projections' biases:
        // softmax ignores a constant added to a row), which hold rounding noise only.
        let global = pairs.iter().map(|(a, _)| largest(a)).fold(0f32, f32::max);
        for (a, b) in &pairs {
            let (scale, diff) = (largest(a), max_diff(a, b));
            assert!(
                diff <= 1e-4 * scale + 1e-8 * global,
                "gradients of shape {:?} differ by {diff} (largest {scale})",
                a.dims()
            );
        }
    }
}
