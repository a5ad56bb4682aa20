//! A bloom filter over the user keys of one memtable, so a lookup of a key the memtable does
//! not hold skips the skiplist search. A point read searches every memtable before any SST,
//! and a search of a large skiplist is ~20 dependent node visits, most of them cache misses,
//! while most keys a read-heavy workload asks for are not in the memtable. The filter answers
//! with one cache line, which the lookup asks for together with the SSTs' filter lines.
//!
//! The layout is the cache-local one of SST filters (`sst::bloom`: one 512-bit line per key,
//! the same line and bit choice from the same `key_hash`), in atomic words, because the
//! write leader sets bits while readers test them. Bits are set before the entry enters the
//! skiplist, and an entry is read only at a sequence published after it was inserted (an
//! Acquire load of the last visible sequence, see `db::read`), so a reader that may see an
//! entry also sees its bits. Keyspaces share the filter: a key of another keyspace can only
//! cause a false positive, which costs the search the filter would have saved.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::sst::bloom::{line_bits, line_of};
use crate::sst::prefetch;

/// Bits set per key. At the default size (16 KiB per MiB of memtable) a memtable of 150-byte
/// entries gets ~19 bits per key, where 6 probes give a false-positive rate under 0.5 %.
const PROBES: u32 = 6;
const LINE_WORDS: usize = 8;

pub struct MemtableFilter {
    words: Box<[AtomicU64]>,
    lines: u64,
}

impl MemtableFilter {
    /// A filter of about `bytes` (whole 64-byte lines); `None` below one line.
    pub fn new(bytes: usize) -> Option<MemtableFilter> {
        let lines = bytes / (LINE_WORDS * 8);
        if lines == 0 {
            return None;
        }
        Some(MemtableFilter {
            words: (0..lines * LINE_WORDS).map(|_| AtomicU64::new(0)).collect(),
            lines: lines as u64,
        })
    }

    fn line(&self, h: u64) -> &[AtomicU64] {
        let at = line_of(h, self.lines) * LINE_WORDS;
        self.words.get(at..at + LINE_WORDS).unwrap_or(&[])
    }

    /// Records a key whose `sst::bloom::key_hash` is `h`.
    pub fn add(&self, h: u64) {
        let line = self.line(h);
        for bit in line_bits(h, PROBES) {
            if let Some(w) = line.get(bit / 64) {
                w.fetch_or(1 << (bit % 64), Relaxed);
            }
        }
    }

    /// False means no key with hash `h` was added.
    pub fn may_contain(&self, h: u64) -> bool {
        let line = self.line(h);
        line_bits(h, PROBES).all(|bit| {
            line.get(bit / 64)
                .is_none_or(|w| w.load(Relaxed) & (1 << (bit % 64)) != 0)
        })
    }

    /// Starts loading the line `may_contain(h)` reads.
    pub fn prefetch(&self, h: u64) {
        prefetch::read_at(&self.words, line_of(h, self.lines) * LINE_WORDS);
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::bloom::key_hash;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let f = MemtableFilter::new(16 << 10).expect("a filter");
        assert_eq!(f.bytes(), 16 << 10);
        let added: Vec<u64> = (0..6000u32)
            .map(|i| key_hash(format!("key{i}").as_bytes()))
            .collect();
        for &h in &added {
            f.add(h);
        }
        assert!(added.iter().all(|&h| f.may_contain(h)));
        let fp = (0..100_000u32)
            .filter(|i| f.may_contain(key_hash(format!("other{i}").as_bytes())))
            .count();
        // ~22 bits per key: well under 1 %.
        assert!(fp < 1000, "{fp} false positives in 100000");
    }

    #[test]
    fn too_small_is_none() {
        assert!(MemtableFilter::new(0).is_none());
        assert!(MemtableFilter::new(63).is_none());
        let f = MemtableFilter::new(64).expect("one line");
        assert!(!f.may_contain(key_hash(b"a")));
        f.add(key_hash(b"a"));
        assert!(f.may_contain(key_hash(b"a")));
    }
}
