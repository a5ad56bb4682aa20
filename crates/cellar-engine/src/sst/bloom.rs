//! One bloom filter per file (or per index partition) over user keys (not internal keys: a lookup asks "any version
//! of this key?").
//!
//! Two layouts, told apart by the block's last byte; both use `h = xxh3_64(user_key)` and
//! bit `i` of a byte array is `bits[i / 8] >> (i % 8)`.
//!
//! **Cache-local** (written by this build): `bits[64 * lines] ++ k: u8 ++ 0xC2`. A key lives in
//! one 512-bit line, `line = ((h >> 32) * lines) >> 32`; with `x = h as u32`, it sets bit
//! `x >> 23` of that line, then `x = x * 0x9E3779B9` (wrapping), `k` times. One cache miss per
//! check instead of `k`, for a false-positive rate a little above the classic layout's.
//!
//! **Classic** (read for files written before): `bits[ceil(m/8)] ++ k: u8` (`k` in 1..=30), a
//! key sets bits `(h1 + j*h2) mod m`, `h1 = h`, `h2 = h.rotate_left(32) | 1`, `m = 8 * bits.len()`.

use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};

/// Probes for a given budget: `round(bits * ln 2)` minimises the false-positive rate.
pub fn num_probes(bits_per_key: u32) -> u32 {
    ((f64::from(bits_per_key) * std::f64::consts::LN_2).round() as u32).clamp(1, 30)
}

/// Marks the cache-local layout (never a valid classic probe count).
const CACHE_LOCAL: u8 = 0xC2;
const LINE_BYTES: usize = 64;
const LINE_BITS: u32 = 512;
/// Odd multiplier that derives each next probe from the last (here and in the memtable
/// filter).
pub(crate) const PROBE_MIX: u32 = 0x9E37_79B9;

/// The hash a filter is probed with.
pub fn key_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// The line (of `lines`) a key with hash `h` lives in, in the cache-local layout.
pub(crate) fn line_of(h: u64, lines: u64) -> usize {
    (((h >> 32) * lines) >> 32) as usize
}

/// The `k` bits (0..512) a key with hash `h` sets within its line, in the cache-local layout.
pub(crate) fn line_bits(h: u64, k: u32) -> impl Iterator<Item = usize> {
    let mut x = h as u32;
    (0..k).map(move |_| {
        let bit = (x >> 23) as usize;
        x = x.wrapping_mul(PROBE_MIX);
        bit
    })
}

fn probes(h: u64) -> (u64, u64) {
    (h, h.rotate_left(32) | 1)
}

/// Collects key hashes while the table is written, then lays out the bit array.
pub struct BloomBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    pub fn new(bits_per_key: u32) -> Self {
        BloomBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// The caller adds each distinct user key once (versions of a key are adjacent).
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.hashes.push(xxh3_64(user_key));
    }

    pub fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    /// Bytes the finished filter block will take (for file-size estimates).
    pub fn estimated_len(&self) -> usize {
        self.hashes.len() * self.bits_per_key as usize / 8 + 9
    }

    /// Hashes added so far: a partition's filter covers a range of them.
    pub fn mark(&self) -> usize {
        self.hashes.len()
    }

    pub fn finish(&self) -> Vec<u8> {
        self.finish_range(0..self.hashes.len())
    }

    /// The filter block over the keys added between two [`mark`](Self::mark)s.
    pub fn finish_range(&self, range: std::ops::Range<usize>) -> Vec<u8> {
        let hashes = self.hashes.get(range).unwrap_or(&[]);
        let want_bits = hashes.len() as u64 * u64::from(self.bits_per_key);
        let lines = want_bits.div_ceil(u64::from(LINE_BITS)).max(1);
        let k = num_probes(self.bits_per_key);
        let mut out = vec![0u8; lines as usize * LINE_BYTES + 2];
        for &h in hashes {
            let base = line_of(h, lines) * LINE_BYTES;
            for bit in line_bits(h, k) {
                out[base + bit / 8] |= 1 << (bit % 8);
            }
        }
        let n = out.len();
        out[n - 2] = k as u8;
        out[n - 1] = CACHE_LOCAL;
        out
    }
}

/// A filter read back from disk; kept resident for the life of the reader.
pub struct BloomFilter {
    data: Vec<u8>,
    num_bits: u64,
    k: u32,
    /// Lines of the cache-local layout; 0 for the classic one.
    lines: u64,
}

impl BloomFilter {
    pub fn from_block(path: &Path, offset: u64, mut data: Vec<u8>) -> Result<BloomFilter> {
        let corrupt = |why: &str| Error::corruption(path, offset, why.to_string());
        let mut last = data.pop().ok_or_else(|| corrupt("empty filter block"))?;
        let cache_local = last == CACHE_LOCAL;
        if cache_local {
            last = data
                .pop()
                .ok_or_else(|| corrupt("filter block without probe count"))?;
        }
        let k = u32::from(last);
        if !(1..=30).contains(&k) {
            return Err(corrupt("filter probe count out of range"));
        }
        if data.is_empty() {
            return Err(corrupt("filter has no bits"));
        }
        if cache_local && !data.len().is_multiple_of(LINE_BYTES) {
            return Err(corrupt("cache-local filter is not a whole number of lines"));
        }
        data.shrink_to_fit();
        Ok(BloomFilter {
            num_bits: data.len() as u64 * 8,
            lines: if cache_local {
                (data.len() / LINE_BYTES) as u64
            } else {
                0
            },
            data,
            k,
        })
    }

    /// False means the key is certainly absent from the file.
    #[cfg(test)]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// Starts loading the cache line `may_contain_hash(h)` will read (cache-local layout;
    /// the classic layout's probes are spread out and are not prefetched).
    pub fn prefetch(&self, h: u64) {
        if self.lines > 0 {
            super::prefetch::read_at(&self.data, line_of(h, self.lines) * LINE_BYTES);
        }
    }

    /// `may_contain` for a key whose [`key_hash`] is `h`.
    pub fn may_contain_hash(&self, h: u64) -> bool {
        if self.lines > 0 {
            return self.line_admits(line_of(h, self.lines), h);
        }
        let (h1, h2) = probes(h);
        (0..u64::from(self.k)).all(|j| {
            let bit = h1.wrapping_add(j.wrapping_mul(h2)) % self.num_bits;
            self.data
                .get((bit / 8) as usize)
                .is_some_and(|b| b & (1 << (bit % 8)) != 0)
        })
    }

    /// The cache-local check in line `at` of the bit array.
    fn line_admits(&self, at: usize, h: u64) -> bool {
        let Some(line) = self
            .data
            .get(at * LINE_BYTES..)
            .and_then(|d| d.get(..LINE_BYTES))
        else {
            return true;
        };
        line_bits(h, self.k).all(|bit| line[bit / 8] & (1 << (bit % 8)) != 0)
    }

    /// Joins cache-local filters with one probe count into one bit array (so a pinned
    /// partitioned file keeps one filter object): filter `i`'s lines are
    /// `starts[i]..starts[i + 1]`. `None` if any filter is classic or the counts differ.
    pub fn concat(parts: &[BloomFilter]) -> Option<(BloomFilter, Vec<u64>)> {
        let k = parts.first()?.k;
        if parts.iter().any(|f| f.lines == 0 || f.k != k) {
            return None;
        }
        let mut data = Vec::with_capacity(parts.iter().map(|f| f.data.len()).sum());
        let mut starts = Vec::with_capacity(parts.len() + 1);
        starts.push(0);
        for f in parts {
            data.extend_from_slice(&f.data);
            starts.push(starts[starts.len() - 1] + f.lines);
        }
        let lines = starts[starts.len() - 1];
        let joined = BloomFilter {
            num_bits: data.len() as u64 * 8,
            data,
            k,
            lines,
        };
        Some((joined, starts))
    }

    /// `may_contain_hash` in the filter of a [`concat`](Self::concat) that occupies
    /// `count` lines from line `first`.
    pub fn may_contain_hash_in(&self, h: u64, first: u64, count: u64) -> bool {
        self.line_admits((first + line_of(h, count) as u64) as usize, h)
    }

    pub fn prefetch_in(&self, h: u64, first: u64, count: u64) {
        let at = (first + line_of(h, count) as u64) as usize;
        super::prefetch::read_at(&self.data, at * LINE_BYTES);
    }

    /// Bytes held in memory (bit array + the trailer bytes on disk).
    pub fn resident_bytes(&self) -> usize {
        self.data.len() + if self.lines > 0 { 2 } else { 1 }
    }

    /// Probe count and layout, for `cellar inspect`.
    pub fn describe(&self) -> (u32, u64, &'static str) {
        let layout = if self.lines > 0 {
            "cache-local"
        } else {
            "classic"
        };
        (self.k, self.num_bits, layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(keys: impl Iterator<Item = Vec<u8>>, bits: u32) -> BloomFilter {
        let mut b = BloomBuilder::new(bits);
        for k in keys {
            b.add_key(&k);
        }
        BloomFilter::from_block(Path::new("f"), 0, b.finish()).expect("valid filter")
    }

    #[test]
    fn probe_counts() {
        assert_eq!(num_probes(10), 7);
        assert_eq!(num_probes(1), 1);
        assert_eq!(num_probes(0), 1);
        assert_eq!(num_probes(100), 30);
    }

    /// The false-positive rates docs/design/resident-metadata.md weighs: the densities
    /// of the bottom level, flushes and the levels above at the default skew.
    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let n = 20_000u32;
        let key = |i: u32| format!("user-key-{i:08}").into_bytes();
        for (bits, bound) in [(8, 0.035), (10, 0.015), (12, 0.007)] {
            let f = filter((0..n).map(key), bits);
            assert!((0..n).all(|i| f.may_contain(&key(i))));
            let trials = 400_000u32;
            let fp = (n..n + trials).filter(|&i| f.may_contain(&key(i))).count();
            let rate = fp as f64 / f64::from(trials);
            println!(
                "bloom false-positive rate at {bits} bits/key: {:.3}%",
                rate * 100.0
            );
            assert!(
                rate < bound,
                "false-positive rate {rate} at {bits} bits/key"
            );
        }
    }

    /// Files written before the cache-local layout keep their filters readable.
    #[test]
    fn classic_layout_still_reads() {
        let mut bits = vec![0u8; 16];
        let h = xxh3_64(b"k");
        let (h1, h2) = probes(h);
        for j in 0..7u64 {
            let bit = h1.wrapping_add(j.wrapping_mul(h2)) % 128;
            bits[(bit / 8) as usize] |= 1 << (bit % 8);
        }
        bits.push(7);
        let f = BloomFilter::from_block(Path::new("f"), 0, bits).expect("classic filter");
        assert!(f.may_contain(b"k"));
        assert_eq!(f.describe().2, "classic");
    }

    #[test]
    fn joined_filters_answer_as_their_parts() {
        let key = |i: u32| format!("k{i:05}").into_bytes();
        let parts: Vec<BloomFilter> = [(0, 40), (40, 1000), (1000, 1003)]
            .iter()
            .map(|&(a, b)| filter((a..b).map(key), 10))
            .collect();
        let (joined, starts) = BloomFilter::concat(&parts).expect("uniform filters");
        for (p, f) in parts.iter().enumerate() {
            let count = starts[p + 1] - starts[p];
            for i in 0..1200 {
                let h = key_hash(&key(i));
                assert_eq!(
                    joined.may_contain_hash_in(h, starts[p], count),
                    f.may_contain_hash(h)
                );
            }
        }
    }

    #[test]
    fn tiny_and_damaged_filters() {
        let f = filter(std::iter::once(b"a".to_vec()), 10);
        assert!(f.may_contain(b"a"));
        // One 64-byte line plus the probe count and layout bytes.
        assert_eq!(f.resident_bytes(), 66);
        let mut short_line = vec![0u8; 63];
        short_line.extend_from_slice(&[7, CACHE_LOCAL]);
        for bad in [
            vec![],
            vec![7],
            vec![0xff, 0],
            vec![0xff, 31],
            vec![7, CACHE_LOCAL],
            short_line,
        ] {
            assert!(BloomFilter::from_block(Path::new("f"), 0, bad).is_err());
        }
    }
}
