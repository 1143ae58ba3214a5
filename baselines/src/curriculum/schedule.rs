//! Difficulty buckets, the easy→hard schedule, and the sampler that draws negatives from them.

use std::collections::HashMap;

use lexbench_core::rng::SplitMix64;

use super::config::{CurriculumConfig, validate_schedule};
use crate::error::{Error, Result};

/// Probability mass on the phase's own bucket in [`Schedule::for_buckets`] (B ≥ 2).
pub const PEAK_MASS: f64 = 0.7;

/// A query's candidates in B difficulty buckets. **Bucket 0 is the easiest** (lowest fused difficulty),
/// bucket B − 1 the hardest; the order given to [`Buckets::split`] is hardest first and each bucket is a
/// contiguous slice of it (kept in that order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    buckets: Vec<Vec<usize>>,
}

impl Buckets {
    /// Splits `order` (doc indices, hardest first, e.g. [`super::Difficulty::order`]) into `b`
    /// contiguous buckets of near-equal size: every bucket holds `n / b` or `n / b + 1` candidates and
    /// the larger ones are the **hardest** (so with fewer candidates than buckets the easiest buckets are
    /// the empty ones). Errors when `b` is 0.
    pub fn split(order: &[usize], b: usize) -> Result<Self> {
        if b == 0 {
            return Err(Error::Param(
                "curriculum buckets must be at least 1, got 0".into(),
            ));
        }
        let (base, extra) = (order.len() / b, order.len() % b);
        let mut buckets = vec![Vec::new(); b];
        let mut start = 0;
        for i in (0..b).rev() {
            // Buckets b−1 (hardest) … b−extra get one more.
            let size = base + usize::from(i >= b - extra);
            buckets[i] = order[start..start + size].to_vec();
            start += size;
        }
        Ok(Self { buckets })
    }

    /// Number of buckets B.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Whether there is no bucket (never, for a value built by [`Buckets::split`]).
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Bucket `i` (0 = easiest); empty when `i` ≥ B.
    pub fn bucket(&self, i: usize) -> &[usize] {
        self.buckets.get(i).map_or(&[], Vec::as_slice)
    }

    /// Total number of candidates over all buckets.
    pub fn total(&self) -> usize {
        self.buckets.iter().map(Vec::len).sum()
    }

    /// The bucket holding `doc`, if any.
    pub fn bucket_of(&self, doc: usize) -> Option<usize> {
        self.buckets.iter().position(|b| b.contains(&doc))
    }
}

/// The easy→hard schedule: P phases (rows) × B buckets (columns, 0 = easiest); row p gives the bucket
/// probabilities while the training progress `t` ∈ [0, 1) has `floor(t · P) = p`.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    rows: Vec<Vec<f64>>,
}

impl Schedule {
    /// The paper's three buckets (easy, medium, hard) and three phases (thirds of training):
    /// 0.7/0.2/0.1, then 0.15/0.7/0.15, then 0.1/0.2/0.7.
    pub fn paper_default() -> Self {
        Self {
            rows: vec![vec![0.7, 0.2, 0.1], vec![0.15, 0.7, 0.15], vec![0.1, 0.2, 0.7]],
        }
    }

    /// One bucket, probability 1, one phase: no curriculum.
    pub fn uniform() -> Self {
        Self {
            rows: vec![vec![1.0]],
        }
    }

    /// The generalisation to B buckets: B phases; phase p puts [`PEAK_MASS`] = 0.7 on bucket p and
    /// shares the remaining 0.3 among the other buckets q in proportion to `1 / |p − q|` (nearer buckets
    /// get more). For B = 3 this gives exactly the paper's rows (0.3 · (1 : ½) = 0.2, 0.1; 0.3 · (1 : 1) =
    /// 0.15, 0.15), and B = 3 returns [`Schedule::paper_default`]'s literal numbers; B = 1 is
    /// [`Schedule::uniform`]; B = 2 gives 0.7/0.3 then 0.3/0.7. Errors when `b` is 0.
    pub fn for_buckets(b: usize) -> Result<Self> {
        match b {
            0 => Err(Error::Param(
                "curriculum buckets must be at least 1, got 0".into(),
            )),
            1 => Ok(Self::uniform()),
            3 => Ok(Self::paper_default()),
            _ => Ok(Self::inverse_distance(b)),
        }
    }

    /// The formula of [`Schedule::for_buckets`] for b ≥ 2.
    pub(crate) fn inverse_distance(b: usize) -> Self {
        let rows = (0..b)
            .map(|p| {
                let norm: f64 = (0..b)
                    .filter(|&q| q != p)
                    .map(|q| 1.0 / p.abs_diff(q) as f64)
                    .sum();
                (0..b)
                    .map(|q| {
                        if q == p {
                            PEAK_MASS
                        } else {
                            (1.0 - PEAK_MASS) / p.abs_diff(q) as f64 / norm
                        }
                    })
                    .collect()
            })
            .collect();
        Self { rows }
    }

    /// A user-given B × B schedule, checked by [`validate_schedule`] (B = the number of rows).
    pub fn explicit(rows: Vec<Vec<f64>>) -> Result<Self> {
        validate_schedule(&rows, rows.len())?;
        Ok(Self { rows })
    }

    /// The schedule of a configuration ([`CurriculumConfig::schedule`]).
    pub fn from_config(config: &CurriculumConfig) -> Result<Self> {
        config.schedule()
    }

    /// Number of phases P.
    pub fn phases(&self) -> usize {
        self.rows.len()
    }

    /// Number of buckets B.
    pub fn buckets(&self) -> usize {
        self.rows.first().map_or(0, Vec::len)
    }

    /// All rows (phase by phase).
    pub fn rows(&self) -> &[Vec<f64>] {
        &self.rows
    }

    /// The phase of training progress `t` (fraction of the training done, in [0, 1)):
    /// `floor(t · P)`, clamped to [0, P − 1] (so t ≥ 1 is the last phase; t < 0 and NaN the first).
    pub fn phase(&self, progress: f64) -> usize {
        let p = (progress * self.phases() as f64).floor();
        if p.is_nan() || p < 0.0 {
            0
        } else {
            (p as usize).min(self.phases().saturating_sub(1))
        }
    }

    /// The bucket probabilities at progress `t` (row [`Schedule::phase`]).
    pub fn probs(&self, progress: f64) -> &[f64] {
        self.rows.get(self.phase(progress)).map_or(&[], Vec::as_slice)
    }
}

/// Draws a query's negatives from its [`Buckets`] following a [`Schedule`].
#[derive(Debug, Clone, PartialEq)]
pub struct CurriculumSampler {
    schedule: Schedule,
}

impl CurriculumSampler {
    /// A sampler with this schedule.
    pub fn new(schedule: Schedule) -> Self {
        Self { schedule }
    }

    /// A sampler for a configuration (validated; one bucket when the curriculum is off).
    pub fn from_config(config: &CurriculumConfig) -> Result<Self> {
        Ok(Self::new(config.schedule()?))
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Draws `n` distinct negatives at training progress `progress`: each draw picks a bucket with the
    /// schedule's probabilities renormalised over the buckets that still have candidates, then a
    /// uniform candidate in it, without replacement. If only zero-probability buckets remain, the draw
    /// goes on uniformly over their remaining candidates, so the result always has
    /// `min(n, buckets.total())` entries: `n` ≥ the number of candidates returns them all (in drawn
    /// order). Each draw costs O(B) and memory is O(n), whatever the bucket sizes. Errors when the
    /// bucket count differs from the schedule's.
    pub fn sample(
        &self,
        buckets: &Buckets,
        progress: f64,
        n: usize,
        rng: &mut SplitMix64,
    ) -> Result<Vec<usize>> {
        if buckets.len() != self.schedule.buckets() {
            return Err(Error::internal(format!(
                "curriculum: {} buckets for a schedule of {}",
                buckets.len(),
                self.schedule.buckets()
            )));
        }
        let probs = self.schedule.probs(progress);
        let b = buckets.len();
        // A virtual Fisher–Yates shuffle per bucket: the first `taken[i]` slots hold the drawn
        // candidates; `moved[i]` records the slots whose content differs from the bucket's.
        let mut taken = vec![0usize; b];
        let mut moved: Vec<HashMap<usize, usize>> = vec![HashMap::new(); b];
        let want = n.min(buckets.total());
        let mut out = Vec::with_capacity(want);
        while out.len() < want {
            let left = |i: usize| buckets.bucket(i).len() - taken[i];
            let mass: f64 = (0..b).filter(|&i| left(i) > 0).map(|i| probs[i]).sum();
            let chosen = if mass > 0.0 {
                let u = rng.unit_f64() * mass;
                let mut acc = 0.0;
                let mut pick = None;
                for i in (0..b).filter(|&i| left(i) > 0 && probs[i] > 0.0) {
                    acc += probs[i];
                    pick = Some(i);
                    if u < acc {
                        break;
                    }
                }
                pick
            } else {
                let mut r = rng.below((0..b).map(left).sum());
                (0..b).find(|&i| {
                    if r < left(i) {
                        true
                    } else {
                        r -= left(i);
                        false
                    }
                })
            };
            let Some(i) = chosen else { break };
            let bucket = buckets.bucket(i);
            let t = taken[i];
            let j = t + rng.below(bucket.len() - t);
            let at = |m: &HashMap<usize, usize>, s: usize| m.get(&s).copied().unwrap_or(bucket[s]);
            let (drawn, first) = (at(&moved[i], j), at(&moved[i], t));
            moved[i].insert(j, first);
            taken[i] += 1;
            out.push(drawn);
        }
        Ok(out)
    }
}
