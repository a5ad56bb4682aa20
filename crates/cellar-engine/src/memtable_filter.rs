//! A bloom filter over the user keys of one memtable, so a lookup of a key the memtable does
//! not hold skips the skiplist search. A point read searches every memtable before any SST,
//! and a search of a large skiplist is ~20 dependent node visits, most of them cache misses,
//! while most keys a read-heavy workload asks for are not in the memtable. The filter answers
//! with one word, which the lookup asks for together with the SSTs' filter lines.
//!
//! Register-blocked: all of a key's bits lie in one 64-bit word, chosen by the high half of
//! its `sst::bloom::key_hash`. The write path sets them with one atomic `or`: the write leader
//! sets bits while readers test them, and inserts of a large batch run on several threads at
//! once. Spreading the bits over a 512-bit line, as SST filters do, took one locked `or` per
//! bit, and six of them were half the cost of a memtable insert in a key-ordered load
//! (docs/design/memtable-filter.md). Bits are set before the entry enters the skiplist, and
//! an entry is read only at a sequence published after it was inserted (an Acquire load of
//! the last visible sequence, see `db::read`), so a reader that may see an entry also sees its
//! bits. Keyspaces share the filter: a key of another keyspace can only cause a false
//! positive, which costs the search the filter would have saved.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::sst::bloom::{line_of, PROBE_MIX};
use crate::sst::prefetch;

/// Bits set per key. At the default size (16 KiB per MiB of memtable) a memtable of 150-byte
/// entries gets ~19 bits per key, where 6 bits in one word give a false-positive rate of
/// about 0.1 %; at 10 bits per key (entries of ~75 bytes), about 2 %.
const PROBES: u32 = 6;

pub struct MemtableFilter {
    words: Box<[AtomicU64]>,
}

impl MemtableFilter {
    /// A filter of about `bytes` (whole 64-byte lines); `None` below one line.
    pub fn new(bytes: usize) -> Option<MemtableFilter> {
        let words = bytes / 64 * 8;
        if words == 0 {
            return None;
        }
        Some(MemtableFilter {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Index of the word that holds the bits of a key with hash `h`.
    fn word_of(&self, h: u64) -> usize {
        line_of(h, self.words.len() as u64)
    }

    /// The key's `PROBES` bits within its word, from the low half of its hash.
    fn mask(h: u64) -> u64 {
        let mut x = h as u32;
        let mut mask = 0u64;
        for _ in 0..PROBES {
            mask |= 1 << (x >> 26);
            x = x.wrapping_mul(PROBE_MIX);
        }
        mask
    }

    /// Records a key whose `sst::bloom::key_hash` is `h`.
    pub fn add(&self, h: u64) {
        if let Some(w) = self.words.get(self.word_of(h)) {
            w.fetch_or(Self::mask(h), Relaxed);
        }
    }

    /// False means no key with hash `h` was added.
    pub fn may_contain(&self, h: u64) -> bool {
        let mask = Self::mask(h);
        self.words
            .get(self.word_of(h))
            .is_none_or(|w| w.load(Relaxed) & mask == mask)
    }

    /// Starts loading the word `may_contain(h)` reads.
    pub fn prefetch(&self, h: u64) {
        prefetch::read_at(&self.words, self.word_of(h));
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

    /// Adds `keys` keys to a 16 KiB filter, checks each is found, and returns how many of
    /// 100 000 keys never added it claims.
    fn false_positives_after(keys: u32) -> usize {
        let f = MemtableFilter::new(16 << 10).expect("a filter");
        assert_eq!(f.bytes(), 16 << 10);
        let added: Vec<u64> = (0..keys)
            .map(|i| key_hash(format!("key{i}").as_bytes()))
            .collect();
        for &h in &added {
            f.add(h);
        }
        assert!(added.iter().all(|&h| f.may_contain(h)));
        (0..100_000u32)
            .filter(|i| f.may_contain(key_hash(format!("other{i}").as_bytes())))
            .count()
    }

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        // ~22 bits per key (entries of ~150 bytes at the default filter size): well under 1 %.
        let fp = false_positives_after(6000);
        assert!(fp < 1000, "{fp} false positives in 100000");
    }

    #[test]
    fn dense_filter_stays_useful() {
        // 10 bits per key: entries of ~75 bytes at the default filter size.
        let fp = false_positives_after(13_000);
        assert!(fp < 3000, "{fp} false positives in 100000");
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
