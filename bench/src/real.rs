//! The real-passage workload of `lexbench-bench --mode real`: real paragraphs of a corpus,
//! each at its own length, through the batching a user gets, against sentence-transformers.
//!
//! - Candle runs exactly the path of `lexbench run dense` (and `submit --model`'s bi-encoder run):
//!   [`SentenceEncoder::embed`], which tokenises, sorts the texts by token length (ties in input
//!   order), cuts batches of `batch_size`, pads each to its longest, encodes, pools and normalises.
//!   Tokenisation is timed, as it is in sentence-transformers' `encode`. (`run dense` embeds the
//!   distinct texts missing from its cache in chunks of 2048, `cache::FLUSH_EVERY`, one `embed` call
//!   each: up to 2048 distinct passages, the default 2000 included, its batches are these.)
//! - The peer is sentence-transformers' `SentenceTransformer.encode` on the same texts, batch size,
//!   truncation and normalisation (`bench/scripts/bench_encoder.py`, engine `st`). It sorts by
//!   descending character count (`np.argsort([-len(text) …])`, sentence-transformers 6.2
//!   `sentence_transformer/model.py` `_inference`), so its batches carry other padding than ours.
//!   PyTorch (transformers' model on candle's sorted batches, pre-tokenised) runs beside it.
//! - Every engine's work is counted in real tokens: FLOPs per passage at its own length
//!   ([`crate::harness::encoder_flops`]), no compute spent on padding counted; the padding each batching adds
//!   is reported beside it ([`Padding`]), with the token-length distribution ([`LengthStats`]).
//! - The engines must compute the same vectors: on a sample of passages ([`sample`]), each Python
//!   engine's vector must have a cosine of at least [`MIN_COSINE`] with candle's ([`min_cosine`]),
//!   or the run fails.
//!
//! ```
//! use lexbench_bench::real::{Padding, length_order};
//! // Token lengths 5, 3, 8, 3, 1 in batches of 2: sorted [1, 3] [3, 5] [8], 4 pad tokens.
//! let lengths = [5, 3, 8, 3, 1];
//! let p = Padding::of(&lengths, &length_order(&lengths), 2)?;
//! assert_eq!((p.real_tokens, p.pad_tokens, p.batches), (20, 4, 3));
//! assert_eq!(p.share(), 0.2);
//! # Ok::<(), lexbench_baselines::Error>(())
//! ```

use lexbench_core::ItemId;
use serde::Serialize;

use crate::harness::{
    CandleEngine, CandleTask, TRANSFORMER_FLOP_FORMULA, TaskSpec, batches_json, candle_label, encoder_flops,
};
use lexbench_baselines::encoder::{EncodeOptions, SentenceEncoder, Tokens};
use lexbench_baselines::error::{Error, Result};

/// One paragraph of the corpus the workload reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealPassage {
    /// The judgment it belongs to.
    pub item: ItemId,
    /// Its printed number.
    pub num: u32,
    /// Its text, as a dataset holds it (the leading number removed).
    pub text: String,
}

impl RealPassage {
    /// `001-100093 §12`, as errors and the report name a passage.
    pub fn label(&self) -> String {
        format!("{} §{}", self.item, self.num)
    }
}

/// The smallest cosine a Python engine's vector may have with candle's for the same passage.
pub const MIN_COSINE: f64 = 0.999;

/// Passages whose vectors every engine's are compared on (at most).
pub const CHECK_PASSAGES: usize = 64;

/// Token lengths of the passages, after truncation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LengthStats {
    /// Passages.
    pub passages: usize,
    /// Real tokens in all (special tokens included, padding not).
    pub tokens: usize,
    /// The shortest.
    pub min: usize,
    /// The median (the mean of the two middle lengths for an even count).
    pub median: f64,
    /// The mean.
    pub mean: f64,
    /// The 90th percentile, nearest rank: the ⌈0.9·n⌉-th shortest.
    pub p90: usize,
    /// The longest.
    pub max: usize,
}

impl LengthStats {
    /// The statistics of `lengths`; `None` for no passage.
    pub fn of(lengths: &[usize]) -> Option<Self> {
        let mut v = lengths.to_vec();
        v.sort_unstable();
        let n = v.len();
        let (&min, &max) = (v.first()?, v.last()?);
        let tokens: usize = v.iter().sum();
        let median = if n % 2 == 1 {
            v[n / 2] as f64
        } else {
            (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
        };
        // Nearest rank: the smallest length with at least 90 % of the passages at or below it.
        let rank = (9 * n).div_ceil(10).max(1);
        Some(Self {
            passages: n,
            tokens,
            min,
            median,
            mean: tokens as f64 / n as f64,
            p90: v[rank - 1],
            max,
        })
    }
}

/// The order [`SentenceEncoder::embed`] batches passages in: by token length ascending, ties in
/// input order (its `sort_by_key(|&i| (toks[i].ids.len(), i))`).
pub fn length_order(lengths: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| (lengths[i], i));
    order
}

/// Characters of each text: Unicode code points, Python's `len`, sentence-transformers' sort key
/// (`BaseModel._input_length` of a string).
pub fn char_counts(texts: &[&str]) -> Vec<usize> {
    texts.iter().map(|t| t.chars().count()).collect()
}

/// sentence-transformers' order as far as it can be rebuilt here from the texts' [`char_counts`]:
/// character count descending, ties in input order. Its `np.argsort` is not stable, so ties may come
/// out otherwise there: the Python side reports its real order, which is used when it ran.
pub fn char_length_order(chars: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..chars.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(chars[i]), i));
    order
}

/// The padding a batching adds: the passages taken in `order`, cut into batches of `batch`, each
/// padded to its longest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Padding {
    /// Batches.
    pub batches: usize,
    /// Real tokens (the sum of the lengths).
    pub real_tokens: usize,
    /// Pad tokens: Σ over batches of (longest × size − the batch's real tokens).
    pub pad_tokens: usize,
}

impl Padding {
    /// The padding of `lengths` (by passage) batched in `order` by `batch`. An `order` that is not a
    /// permutation of the passages, or a zero batch, is an error.
    pub fn of(lengths: &[usize], order: &[usize], batch: usize) -> Result<Self> {
        let mut seen = vec![false; lengths.len()];
        for &i in order {
            match seen.get_mut(i) {
                Some(s) if !*s => *s = true,
                _ => {
                    return Err(Error::data(
                        "bench batching order",
                        format!("passage {i} out of range or repeated"),
                    ));
                }
            }
        }
        if order.len() != lengths.len() {
            return Err(Error::data(
                "bench batching order",
                format!("{} passages ordered, {} passages", order.len(), lengths.len()),
            ));
        }
        if batch == 0 {
            return Err(Error::Param("bench batch must be at least 1, got 0".into()));
        }
        let mut p = Self {
            batches: 0,
            real_tokens: 0,
            pad_tokens: 0,
        };
        for chunk in order.chunks(batch) {
            let real: usize = chunk.iter().map(|&i| lengths[i]).sum();
            let longest = chunk.iter().map(|&i| lengths[i]).max().unwrap_or(0);
            p.batches += 1;
            p.real_tokens += real;
            p.pad_tokens += longest * chunk.len() - real;
        }
        Ok(p)
    }

    /// Pad tokens over real tokens (0 for none).
    pub fn share(&self) -> f64 {
        if self.real_tokens == 0 {
            0.0
        } else {
            self.pad_tokens as f64 / self.real_tokens as f64
        }
    }
}

/// The passages whose vectors are compared: at most [`CHECK_PASSAGES`], evenly spaced over the input
/// (`i·n/k` for `i < k`), the first included.
pub fn sample(n: usize) -> Vec<usize> {
    let k = n.min(CHECK_PASSAGES);
    (0..k).map(|i| i * n / k).collect()
}

/// The smallest cosine between row `r` of `ours` and of `theirs` (both row-major `(rows, dim)`), and
/// that row; an error when the shapes differ or are empty.
pub fn min_cosine(ours: &[f32], theirs: &[f64], dim: usize) -> Result<(f64, usize)> {
    if dim == 0 || ours.is_empty() || ours.len() != theirs.len() || !ours.len().is_multiple_of(dim) {
        return Err(Error::data(
            "bench vector check",
            format!(
                "candle gave {} values, the other engine {}, in rows of {dim}",
                ours.len(),
                theirs.len()
            ),
        ));
    }
    let mut worst = (f64::INFINITY, 0);
    for (r, (a, b)) in ours.chunks(dim).zip(theirs.chunks(dim)).enumerate() {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * y).sum();
        let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
        let c = dot / (na * nb).max(1e-12);
        // A NaN is the worst of all.
        if c.is_nan() || c < worst.0 {
            worst = (c, r);
            if c.is_nan() {
                break;
            }
        }
    }
    Ok(worst)
}

/// What the report needs of the real task beyond its timings.
#[derive(Debug, Clone, PartialEq)]
pub struct RealCheck {
    /// Where the passages came from.
    pub source: String,
    /// Token lengths after truncation, in input order.
    pub lengths: Vec<usize>,
    /// Character counts, in input order (sentence-transformers' sort key).
    pub chars: Vec<usize>,
    /// Candle's batching order ([`length_order`]).
    pub order: Vec<usize>,
    /// Passages per batch.
    pub batch: usize,
    /// The checked passages ([`sample`]) and their labels, in the order of the check's rows.
    pub sample: Vec<(usize, String)>,
    /// Width of a vector.
    pub dim: usize,
}

/// One batching of the real task and the padding it adds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Batching {
    /// Whose batching (`candle`, `st`); PyTorch runs candle's batches.
    pub engine: String,
    /// How its order is made, and where it was read.
    pub order: String,
    /// Batches, real and pad tokens.
    #[serde(flatten)]
    pub padding: Padding,
    /// Pad tokens over real tokens.
    pub padding_share: f64,
}

/// The real task's own report: its passages' lengths and each batching's padding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RealReport {
    /// The corpus file.
    pub source: String,
    /// Token lengths after truncation.
    pub lengths: LengthStats,
    /// Candle's batching, then sentence-transformers'.
    pub batchings: Vec<Batching>,
    /// Passages each Python engine's vectors were compared on.
    pub checked_passages: usize,
}

impl RealCheck {
    /// The report of the batchings: candle's, and sentence-transformers' from `st` (the order and
    /// token lengths the script reported) or, without it, rebuilt here ([`char_length_order`]).
    /// Token lengths of sentence-transformers that differ from ours are a note in `notes`.
    pub fn report(&self, st: &serde_json::Value, notes: &mut Vec<String>) -> Result<RealReport> {
        let lengths = LengthStats::of(&self.lengths)
            .ok_or_else(|| Error::internal("bench real: a task without passages"))?;
        let candle = Padding::of(&self.lengths, &self.order, self.batch)?;
        let mut batchings = vec![Batching {
            engine: "candle".into(),
            order: "SentenceEncoder::embed: token length ascending, ties in input order (PyTorch runs these \
                    batches)"
                .into(),
            padding_share: candle.share(),
            padding: candle,
        }];
        let as_usizes = |v: &serde_json::Value| -> Option<Vec<usize>> {
            v.as_array()?
                .iter()
                .map(|x| x.as_u64().and_then(|x| usize::try_from(x).ok()))
                .collect()
        };
        let (st_order, st_lengths, how) = match (as_usizes(&st["order"]), as_usizes(&st["lengths"])) {
            (Some(order), Some(lengths)) => {
                let differ = lengths.iter().zip(&self.lengths).filter(|(a, b)| a != b).count();
                if differ > 0 || lengths.len() != self.lengths.len() {
                    notes.push(format!(
                        "real: sentence-transformers tokenised {differ} of {} passages to another length than \
                         candle (its padding is computed from its own lengths)",
                        self.lengths.len()
                    ));
                }
                if st["flattened"].as_bool() == Some(true) {
                    notes.push(
                        "real: sentence-transformers flattened its inputs (no padding at all): its padding \
                         below is that of its order had it padded"
                            .into(),
                    );
                }
                (
                    order,
                    lengths,
                    "its own: character count descending (np.argsort), as bench/scripts/bench_encoder.py read it",
                )
            }
            _ => (
                char_length_order(&self.chars),
                self.lengths.clone(),
                "rebuilt here (sentence-transformers did not run): character count descending, ties in \
                     input order (numpy's unstable argsort may order ties otherwise)",
            ),
        };
        let st_padding = Padding::of(&st_lengths, &st_order, self.batch)?;
        batchings.push(Batching {
            engine: "st".into(),
            order: how.into(),
            padding_share: st_padding.share(),
            padding: st_padding,
        });
        Ok(RealReport {
            source: self.source.clone(),
            lengths,
            batchings,
            checked_passages: self.sample.len(),
        })
    }
}

/// The encoder of the real task: `max_len` (the caller's: `run dense`'s default is the model's
/// `max_seq_length`, else 256), batch `batch`, the model's pooling, normalised (`run dense`'s cosine).
pub fn load_encoder(
    model: &std::path::Path,
    device: &lexbench_baselines::Device,
    max_len: usize,
    batch: usize,
) -> Result<SentenceEncoder> {
    let options = EncodeOptions {
        max_len,
        pooling: None,
        normalize: true,
        batch_size: batch,
    };
    SentenceEncoder::from_dir(model, device, options)
}

/// The real task: `passages` (read from `source`) through `enc.embed` (tokenisation, length sort,
/// batches of the encoder's `batch_size`, forward, pooling, the folder's modules, normalisation),
/// and the same texts for sentence-transformers and PyTorch.
pub fn real_task<'a>(
    enc: &'a SentenceEncoder,
    passages: &[RealPassage],
    source: &str,
) -> Result<CandleTask<'a>> {
    if passages.is_empty() {
        return Err(Error::data(source, "no paragraph to encode"));
    }
    let texts: Vec<String> = passages.iter().map(|p| p.text.clone()).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let toks = enc.tokenizer().encode(&refs)?;
    let lengths: Vec<usize> = toks.iter().map(|t| t.ids.len()).collect();
    let order = length_order(&lengths);
    let batch = enc.options().batch_size;
    let max_len = enc.tokenizer().max_len();
    let cfg = enc.model().config();
    let flops = lengths.iter().map(|&t| encoder_flops(cfg, t)).sum();
    let sampled = sample(passages.len());
    let sample_texts: Vec<&str> = sampled.iter().map(|&i| refs[i]).collect();
    let vectors = enc.embed(&sample_texts)?;
    let dim = vectors.first().map_or(0, Vec::len);
    let check: Vec<f32> = vectors.into_iter().flatten().collect();
    let sorted: Vec<Tokens> = order.iter().map(|&i| toks[i].clone()).collect();
    let pooling = enc.pooling().to_string();
    let python = serde_json::json!({
        "kind": "real",
        "pad_id": enc.tokenizer().pad_id(),
        "batches": batches_json(&sorted, batch),
        "order": order,
        "texts": texts,
        "batch_size": batch,
        "max_len": max_len,
        "normalize": enc.options().normalize,
        "pooling": pooling,
        "sample": sampled,
    });
    let n = passages.len();
    let real = RealCheck {
        source: source.to_owned(),
        chars: char_counts(&refs),
        lengths,
        order,
        batch,
        sample: sampled.iter().map(|&i| (i, passages[i].label())).collect(),
        dim,
    };
    Ok(CandleTask {
        spec: TaskSpec {
            name: "real".into(),
            description: format!(
                "the first {n} paragraphs of {source} in file order, each at its own length (truncated at {max_len} \
                 tokens): candle SentenceEncoder::embed as `run dense` calls it (tokenise, sort by token length, \
                 batches of {batch} padded to their longest, forward, {pooling} pooling, L2 normalisation; \
                 tokenisation timed); sentence-transformers encode() of the same texts (its own sort and \
                 tokenisation, timed); PyTorch on candle's sorted batches, pre-tokenised"
            ),
            item: "passage".into(),
            unit: "passages".into(),
            items: n,
            flops,
            flop_formula: format!(
                "{TRANSFORMER_FLOP_FORMULA}; each passage at its own length: padding is not counted"
            ),
            mean_tokens: real.lengths.iter().sum::<usize>() as f64 / n as f64,
        },
        engines: vec![CandleEngine {
            name: "candle".into(),
            label: candle_label(enc.model().device()),
            device: enc.model().device().clone(),
            pass: Box::new(move || {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                enc.embed(&refs).map(drop)
            }),
        }],
        check,
        python: Some(python),
        real: Some(real),
    })
}

#[cfg(test)]
mod tests {
    //! Properties: the length statistics (median of odd and even counts, nearest-rank p90, mean,
    //! total) match a hand count; candle's order is `embed`'s (length, then index) and
    //! sentence-transformers' rebuilt one is character count descending with ties in input order,
    //! counting characters, not bytes; the padding of a batching is Σ (longest × size − real) over its
    //! batches, hand-counted for both orders, and an order that is not a permutation is refused; the
    //! sample is evenly spaced and never repeats; the cosine check finds the worst row and refuses
    //! mismatched shapes.
    use super::*;

    #[test]
    fn length_statistics_match_a_hand_count() {
        // Sorted: 1 3 3 5 8 → median 3, mean 4, p90 = ⌈4.5⌉ = 5th = 8.
        let s = LengthStats::of(&[5, 3, 8, 3, 1]).unwrap();
        assert_eq!((s.passages, s.tokens, s.min, s.max, s.p90), (5, 20, 1, 8, 8));
        assert_eq!((s.median, s.mean), (3.0, 4.0));
        // Ten lengths 1..=10: median 5.5, p90 the 9th = 9.
        let ten: Vec<usize> = (1..=10).rev().collect();
        let s = LengthStats::of(&ten).unwrap();
        assert_eq!((s.median, s.p90, s.mean), (5.5, 9, 5.5));
        assert_eq!(LengthStats::of(&[7]).unwrap().p90, 7);
        assert_eq!(LengthStats::of(&[]), None);
    }

    #[test]
    fn orders_are_embeds_and_sentence_transformers() {
        assert_eq!(length_order(&[5, 3, 8, 3, 1]), vec![4, 1, 3, 0, 2]);
        // "éé" is two characters (four bytes); "abc" three; ties keep input order.
        let chars = char_counts(&["éé", "abc", "xy", "a"]);
        assert_eq!(chars, vec![2, 3, 2, 1]);
        assert_eq!(char_length_order(&chars), vec![1, 0, 2, 3]);
    }

    #[test]
    fn padding_is_longest_times_size_minus_real_per_batch() {
        let lengths = [5, 3, 8, 3, 1];
        // embed's order [4 1 3 0 2] in twos: [1 3] pads 2, [3 5] pads 2, [8] none.
        let ours = Padding::of(&lengths, &length_order(&lengths), 2).unwrap();
        assert_eq!((ours.batches, ours.real_tokens, ours.pad_tokens), (3, 20, 4));
        assert_eq!(ours.share(), 0.2);
        // A longest-first order in threes: [8 5 3] pads 3 + 5, [3 1] pads 2.
        let st = Padding::of(&lengths, &[2, 0, 1, 3, 4], 3).unwrap();
        assert_eq!((st.batches, st.pad_tokens), (2, 10));
        assert_eq!(st.share(), 0.5);
        // Unsorted, one batch: everything padded to 8.
        assert_eq!(Padding::of(&lengths, &[0, 1, 2, 3, 4], 5).unwrap().pad_tokens, 20);
        for bad in [&[0, 1, 2, 3][..], &[0, 1, 2, 3, 3], &[0, 1, 2, 3, 5]] {
            assert!(Padding::of(&lengths, bad, 2).is_err(), "{bad:?}");
        }
        assert!(Padding::of(&lengths, &[0, 1, 2, 3, 4], 0).is_err());
        assert_eq!(Padding::of(&[], &[], 2).unwrap().share(), 0.0);
    }

    #[test]
    fn the_sample_is_evenly_spaced() {
        assert_eq!(sample(3), vec![0, 1, 2]);
        let s = sample(2000);
        assert_eq!(s.len(), CHECK_PASSAGES);
        assert_eq!((s[0], s[1], s[63]), (0, 31, 1968));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_cosine_check_finds_the_worst_row() {
        let ours = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8];
        let theirs = [2.0, 0.0, 1.0, 1.0, 0.6, 0.8];
        let (c, row) = min_cosine(&ours, &theirs, 2).unwrap();
        assert_eq!(row, 1);
        assert!((c - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12, "{c}");
        let (c, _) = min_cosine(&ours, &[1.0, 0.0, 0.0, 1.0, 0.6, 0.8], 2).unwrap();
        assert!((c - 1.0).abs() < 1e-12, "{c}");
        assert!(min_cosine(&ours, &theirs[..4], 2).is_err());
        assert!(min_cosine(&[], &[], 2).is_err());
        assert!(min_cosine(&[1.0, f32::NAN], &[1.0, 0.0], 2).unwrap().0.is_nan());
    }
}
