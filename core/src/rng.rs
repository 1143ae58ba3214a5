//! A small seeded generator (SplitMix64) and a Fisher–Yates shuffle: splits must be the same on every
//! platform and every version of every dependency, so they do not depend on `rand`'s algorithms.

/// SplitMix64's increment of the state per output (the "golden gamma").
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output for a state (its finaliser).
#[inline(always)]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 (Steele, Lea & Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// The state: the `i`-th output from here (1-based) is `mix(state + i · GAMMA)`, so a stream
    /// can be drawn in independent pieces ([`SplitMix64::skip`] then moves past them).
    pub fn state(&self) -> u64 {
        self.0
    }

    /// Moves past `n` outputs, as `n` calls of [`SplitMix64::next_u64`] would.
    pub fn skip(&mut self, n: u64) {
        self.0 = self.0.wrapping_add(GAMMA.wrapping_mul(n));
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias for n ≪ 2^64 is negligible).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties: the sequence is fixed by the seed; a shuffle is a permutation.
    use super::*;

    #[test]
    fn fixed_sequence_and_permutation() {
        // First output of SplitMix64 seeded with 0 (the reference implementation's test vector).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut v: Vec<u32> = (0..100).collect();
        SplitMix64::new(42).shuffle(&mut v);
        let mut w = v.clone();
        w.sort_unstable();
        assert_eq!(w, (0..100).collect::<Vec<_>>());
        let mut again: Vec<u32> = (0..100).collect();
        SplitMix64::new(42).shuffle(&mut again);
        assert_eq!(v, again);
    }

    #[test]
    fn the_stream_in_pieces_is_the_stream() {
        let mut a = SplitMix64::new(0xDEAD_BEEF);
        let seq: Vec<u64> = (0..10).map(|_| a.next_u64()).collect();
        let mut b = SplitMix64::new(0xDEAD_BEEF);
        let s = b.state();
        let pieces: Vec<u64> = (1..=10u64)
            .map(|i| mix(s.wrapping_add(GAMMA.wrapping_mul(i))))
            .collect();
        assert_eq!(seq, pieces);
        b.skip(10);
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
