//! Not compressing data blocks that do not compress.
//!
//! A block is stored compressed only when that saves at least 1/8 of it (`compress_block`),
//! so for values that are already dense (random bytes, YCSB's random printable fields,
//! media) every attempt is CPU spent for nothing, in every flush and again in every
//! compaction that rewrites the block. After a few attempts in a row that did not pay, a builder
//! stores the next blocks as they are without trying, backing off exponentially up to 63
//! blocks between attempts, and starts trying every block again after the first attempt
//! that pays. The format is unchanged: every block already names its own codec.

/// The most blocks stored untried between two attempts is `2^MAX_SKIP_SHIFT - 1`.
const MAX_SKIP_SHIFT: u32 = 6;

/// One SST builder's record of how its recent data blocks compressed.
#[derive(Debug, Default)]
pub struct CompressionSkip {
    /// Attempts in a row that did not pay.
    misses: u32,
    /// Blocks still to store without an attempt.
    skip: u32,
}

impl CompressionSkip {
    /// Whether to try compressing the next data block.
    pub fn should_try(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    /// What the attempt `should_try` allowed gave: `paid` if the block was stored
    /// compressed.
    pub fn record(&mut self, paid: bool) {
        if paid {
            self.misses = 0;
            return;
        }
        self.misses = self.misses.saturating_add(1);
        if self.misses >= 2 {
            self.skip = (1u32 << (self.misses - 1).min(MAX_SKIP_SHIFT)) - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `n` blocks through `s`, each compressing when `compresses(i)`; returns how
    /// many were tried.
    fn attempts(s: &mut CompressionSkip, n: usize, compresses: impl Fn(usize) -> bool) -> usize {
        let mut tried = 0;
        for i in 0..n {
            if s.should_try() {
                tried += 1;
                s.record(compresses(i));
            }
        }
        tried
    }

    #[test]
    fn compressible_blocks_are_always_tried() {
        let mut s = CompressionSkip::default();
        assert_eq!(attempts(&mut s, 1000, |_| true), 1000);
    }

    #[test]
    fn incompressible_blocks_back_off_to_one_attempt_in_64() {
        let mut s = CompressionSkip::default();
        let tried = attempts(&mut s, 10_000, |_| false);
        // The first 7 attempts skip 0, 1, 3, 7, 15, 31 and 63 blocks after them (120 in
        // all); every later one skips 63: 7 + (10 000 - 127) / 64 ≈ 161 attempts.
        assert!((150..=170).contains(&tried), "{tried} attempts");
        // The gaps never exceed 63 blocks.
        let mut s = CompressionSkip::default();
        let mut gap = 0;
        for _ in 0..10_000 {
            if s.should_try() {
                assert!(gap <= 63, "gap {gap}");
                gap = 0;
                s.record(false);
            } else {
                gap += 1;
            }
        }
    }

    #[test]
    fn one_attempt_that_pays_resets_the_backoff() {
        let mut s = CompressionSkip::default();
        attempts(&mut s, 1000, |_| false);
        // Data turns compressible: within 64 blocks an attempt sees it, and from then on
        // every block is tried.
        let mut first_paid = None;
        for i in 0..200 {
            if s.should_try() {
                s.record(true);
                first_paid.get_or_insert(i);
            }
        }
        let first = first_paid.unwrap_or(usize::MAX);
        assert!(first < 64, "first attempt after {first} blocks");
        assert_eq!(attempts(&mut s, 100, |_| true), 100);
    }
}
