//! Block cache admission for point reads: a data block a lookup read is kept in the cache
//! only the second time it is missed within a recent window (a "doorkeeper", as in
//! TinyLFU), so that blocks read once are not copied into fresh cache memory.
//!
//! Why: a cold random lookup reads a block it will most likely never read again, yet
//! caching it costs a new allocation of the decompressed block. While the cache fills, every
//! such allocation is memory the process has never touched: a page fault and a zeroed page
//! per 4 KiB, expensive on a VM that hands freed guest memory back to its host, and it
//! evicts blocks read more often once the cache is full. A block read once and dropped
//! reuses the allocator's memory of the block before. A block read twice is admitted on its
//! second miss, so a hot set enters the cache after one extra read of each of its blocks,
//! which the page cache serves.
//!
//! The gate does not adapt to the workload: a hot set pays one extra read per block, once.
//! The measurements, and what would change the rule: docs/design/block-cache-admission.md.
//!
//! Not used with direct reads (the second read would go to the device) nor for metadata
//! and the blocks scans read through their readahead windows, which keep their own rules
//! (`fill_cache`). A seek's block passes it only while walks mostly miss (`WalkHitRate`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use xxhash_rust::xxh3::xxh3_64;

/// Fewest and most bits of the filter: 8 KiB to 2 MiB.
const MIN_BITS: usize = 1 << 16;
const MAX_BITS: usize = 1 << 24;

/// Blocks of this size the filter is sized for: one bit per ~block of cache capacity, times
/// four, so that a window remembers about as many blocks as the cache holds.
const BLOCK_ESTIMATE_BYTES: usize = 4096;
const BITS_PER_BLOCK: usize = 4;

/// A set of recently missed blocks, forgetting everything when it fills up.
pub struct Doorkeeper {
    words: Box<[AtomicU64]>,
    mask: u64,
    /// Bits set since the last reset; at `reset_at` the filter is cleared, so at most an
    /// eighth of the bits are ever set and a block seen for the first time is let in by a
    /// collision less than 1 time in 8.
    set: AtomicUsize,
    reset_at: usize,
}

impl Doorkeeper {
    /// A doorkeeper for a block cache of `cache_capacity_bytes`.
    pub fn for_cache(cache_capacity_bytes: usize) -> Self {
        let blocks = cache_capacity_bytes / BLOCK_ESTIMATE_BYTES;
        let bits = blocks
            .saturating_mul(BITS_PER_BLOCK)
            .clamp(MIN_BITS, MAX_BITS)
            .next_power_of_two();
        Doorkeeper {
            words: (0..bits / 64).map(|_| AtomicU64::new(0)).collect(),
            mask: (bits - 1) as u64,
            set: AtomicUsize::new(0),
            reset_at: bits / 8,
        }
    }

    /// Whether the block at `offset` of file `file_number`, just missed, should enter the
    /// cache: yes if it was missed before within the window, and otherwise it is remembered.
    /// Races between threads may admit a block once too early or forget one mark; either
    /// only moves one block's admission by one read.
    pub fn admit(&self, file_number: u64, offset: u64) -> bool {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&file_number.to_le_bytes());
        key[8..].copy_from_slice(&offset.to_le_bytes());
        let bit = xxh3_64(&key) & self.mask;
        let (word, mask) = ((bit / 64) as usize, 1u64 << (bit % 64));
        let Some(w) = self.words.get(word) else {
            return true;
        };
        if w.load(Relaxed) & mask != 0 {
            return true;
        }
        if w.fetch_or(mask, Relaxed) & mask != 0 {
            return true;
        }
        if self.set.fetch_add(1, Relaxed) + 1 >= self.reset_at {
            self.reset();
        }
        false
    }

    fn reset(&self) {
        self.set.store(0, Relaxed);
        for w in self.words.iter() {
            w.store(0, Relaxed);
        }
    }

    /// Bits of the filter (for tests and `Debug`).
    pub fn bits(&self) -> usize {
        self.words.len() * 64
    }
}

impl std::fmt::Debug for Doorkeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doorkeeper")
            .field("bits", &self.bits())
            .field("set", &self.set.load(Relaxed))
            .finish()
    }
}

/// Misses of iterator lookups per period of `WalkHitRate`.
pub(crate) const WALK_PERIOD_MISSES: u32 = 4096;

/// Whether the blocks a short walk (a seek and the steps after it) misses are all kept
/// (counted over the lookups of walks that may keep blocks, not a compaction's or a long
/// scan's):
/// while its lookups hit the cache at least as often as they miss over the last period, the
/// cache holds what the walks come back to, and every block goes in; otherwise (walks over
/// more blocks than the cache holds, as random range reads over a large table) a block
/// passes the doorkeeper first, as a point read's does. Blocks a walk reads through its
/// readahead windows are always kept. docs/design/block-cache-admission.md, "Short walks".
#[derive(Debug)]
pub struct WalkHitRate {
    hits: AtomicU32,
    misses: AtomicU32,
    keep_all: AtomicBool,
}

impl Default for WalkHitRate {
    fn default() -> Self {
        WalkHitRate {
            hits: AtomicU32::new(0),
            misses: AtomicU32::new(0),
            keep_all: AtomicBool::new(true),
        }
    }
}

impl WalkHitRate {
    /// Counts one lookup; a period ends at its `WALK_PERIOD_MISSES`-th miss.
    pub fn record(&self, hit: bool) {
        if hit {
            self.hits.fetch_add(1, Relaxed);
            return;
        }
        let misses = self.misses.fetch_add(1, Relaxed) + 1;
        if misses >= WALK_PERIOD_MISSES {
            self.misses.store(0, Relaxed);
            let hits = self.hits.swap(0, Relaxed);
            self.keep_all.store(hits >= misses, Relaxed);
        }
    }

    /// Whether a block a walk missed goes into the cache without the doorkeeper.
    pub fn keep_all(&self) -> bool {
        self.keep_all.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_keep_every_block_while_they_hit_as_often_as_they_miss() {
        let w = WalkHitRate::default();
        assert!(w.keep_all(), "a cold cache keeps what walks read");
        for _ in 0..WALK_PERIOD_MISSES {
            w.record(true);
            w.record(false);
        }
        assert!(w.keep_all());
        for i in 0..WALK_PERIOD_MISSES * 3 {
            w.record(i % 3 == 0);
            if i % 3 == 0 {
                w.record(false);
            }
        }
        assert!(
            !w.keep_all(),
            "one hit in three lookups: the doorkeeper decides"
        );
        for _ in 0..WALK_PERIOD_MISSES {
            w.record(true);
            w.record(true);
            w.record(false);
        }
        assert!(w.keep_all(), "the walks came back to what the cache holds");
    }

    #[test]
    fn a_block_is_admitted_on_its_second_miss() {
        let d = Doorkeeper::for_cache(256 << 20);
        assert!(!d.admit(7, 4096));
        assert!(d.admit(7, 4096));
        assert!(d.admit(7, 4096), "stays admitted until the window resets");
        // Another file's block at the same offset is another block.
        assert!(!d.admit(8, 4096));
    }

    #[test]
    fn the_filter_is_sized_by_the_cache_and_bounded() {
        assert_eq!(Doorkeeper::for_cache(0).bits(), MIN_BITS);
        assert_eq!(Doorkeeper::for_cache(256 << 20).bits(), 1 << 18);
        assert_eq!(Doorkeeper::for_cache(usize::MAX).bits(), MAX_BITS);
    }

    #[test]
    fn first_misses_are_rarely_admitted_and_the_window_forgets() {
        let d = Doorkeeper::for_cache(0);
        let n = 200_000u64;
        let admitted = (0..n).filter(|&i| d.admit(1, i * 4096)).count() as u64;
        // At most an eighth of the bits are set at any time.
        assert!(admitted < n / 8, "{admitted} of {n} first misses admitted");
        // 200 K marks in a window of 8 K: the first blocks were forgotten long ago.
        let again = (0..1000u64).filter(|&i| d.admit(1, i * 4096)).count();
        assert!(again < 200, "{again} of 1000 old blocks still remembered");
    }
}
