//! The machine's one random source: ChaCha8, seeded, never global.
//!
//! Every random choice in a run (SPE placement, synthetic traffic, random
//! targets) draws from the machine's [`Rng`], so the same seed gives the
//! same run, bit for bit.

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A seeded random number generator.
#[derive(Debug, Clone)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Another independent stream of `seed`'s generator, for a purpose whose
    /// draws must not shift the main stream's (a new source of variation
    /// leaves placements and traffic as they were).
    pub fn stream(seed: u64, stream: u64) -> Rng {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        Rng(r)
    }

    /// A uniform 64-bit value.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform value in `0..n` (n > 0), without modulo bias.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        // Lemire's multiply-shift with rejection.
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            let low = m as u64;
            // The threshold is below `n`: a `low` at or above `n` is accepted
            // without its division.
            if low >= n || low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform float in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Trials until the first success of a Bernoulli(p) sequence (>= 1).
    #[inline]
    pub fn geometric(&mut self, p: f64) -> u64 {
        if p >= 1.0 {
            return 1;
        }
        self.geometric_ln((1.0 - p).ln())
    }

    /// [`Rng::geometric`] for `p < 1` given `ln_q = (1 - p).ln()`: a source
    /// drawing many gaps at one rate takes the logarithm once (same values).
    #[inline]
    pub fn geometric_ln(&mut self, ln_q: f64) -> u64 {
        let u = 1.0 - self.unit(); // (0, 1]
                                   // The quotient is >= 0 (or -0.0): `as u64` truncates, which is its
                                   // floor, without a call to `floor` (and saturates as it did).
        ((u.ln() / ln_q) as u64).saturating_add(1)
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn geometric_has_the_right_mean() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let mean = (0..n).map(|_| r.geometric(0.01) as f64).sum::<f64>() / n as f64;
        assert!((mean - 100.0).abs() < 2.0, "{mean}");
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(3);
        assert!((0..1000).all(|_| r.below(11) < 11));
    }
}
