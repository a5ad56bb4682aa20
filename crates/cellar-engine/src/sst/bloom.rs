//! One bloom filter per file over user keys (not internal keys: a lookup asks "any version
//! of this key?").
//!
//! Filter block contents: `bits[ceil(m/8)] ++ k: u8`, where bit `i` is `bits[i / 8] >> (i % 8)`
//! and `m = 8 * bits.len()`. A key sets bits `(h1 + j*h2) mod m` for `j in 0..k`, with
//! `h = xxh3_64(user_key)`, `h1 = h`, `h2 = h.rotate_left(32) | 1` (Kirsch–Mitzenmacher double
//! hashing: two hash values give k nearly independent probes at the cost of one hash).

use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};

/// Probes for a given budget: `round(bits * ln 2)` minimises the false-positive rate.
pub fn num_probes(bits_per_key: u32) -> u32 {
    ((f64::from(bits_per_key) * std::f64::consts::LN_2).round() as u32).clamp(1, 30)
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

    pub fn finish(&self) -> Vec<u8> {
        // At least 64 bits so that tiny files do not have absurd false-positive rates.
        let want_bits = (self.hashes.len() as u64 * u64::from(self.bits_per_key)).max(64);
        let nbytes = want_bits.div_ceil(8) as usize;
        let m = nbytes as u64 * 8;
        let k = num_probes(self.bits_per_key);
        let mut out = vec![0u8; nbytes + 1];
        for &h in &self.hashes {
            let (h1, h2) = probes(h);
            for j in 0..u64::from(k) {
                let bit = h1.wrapping_add(j.wrapping_mul(h2)) % m;
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out[nbytes] = k as u8;
        out
    }
}

/// A filter read back from disk; kept resident for the life of the reader.
pub struct BloomFilter {
    data: Vec<u8>,
    num_bits: u64,
    k: u32,
}

impl BloomFilter {
    pub fn from_block(path: &Path, offset: u64, mut data: Vec<u8>) -> Result<BloomFilter> {
        let corrupt = |why: &str| Error::corruption(path, offset, why.to_string());
        let k = u32::from(data.pop().ok_or_else(|| corrupt("empty filter block"))?);
        if !(1..=30).contains(&k) {
            return Err(corrupt("filter probe count out of range"));
        }
        if data.is_empty() {
            return Err(corrupt("filter has no bits"));
        }
        data.shrink_to_fit();
        Ok(BloomFilter {
            num_bits: data.len() as u64 * 8,
            data,
            k,
        })
    }

    /// False means the key is certainly absent from the file.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let (h1, h2) = probes(xxh3_64(user_key));
        (0..u64::from(self.k)).all(|j| {
            let bit = h1.wrapping_add(j.wrapping_mul(h2)) % self.num_bits;
            self.data
                .get((bit / 8) as usize)
                .is_some_and(|b| b & (1 << (bit % 8)) != 0)
        })
    }

    /// Bytes held in memory (bit array + the probe count byte on disk).
    pub fn resident_bytes(&self) -> usize {
        self.data.len() + 1
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

    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let n = 20_000u32;
        let key = |i: u32| format!("user-key-{i:08}").into_bytes();
        let f = filter((0..n).map(key), 10);
        assert!((0..n).all(|i| f.may_contain(&key(i))));
        let trials = 200_000u32;
        let fp = (n..n + trials).filter(|&i| f.may_contain(&key(i))).count();
        let rate = fp as f64 / f64::from(trials);
        println!(
            "bloom false-positive rate at 10 bits/key: {:.3}%",
            rate * 100.0
        );
        assert!(rate < 0.02, "false-positive rate {rate}");
    }

    #[test]
    fn tiny_and_damaged_filters() {
        let f = filter(std::iter::once(b"a".to_vec()), 10);
        assert!(f.may_contain(b"a"));
        assert_eq!(f.resident_bytes(), 9);
        for bad in [vec![], vec![7], vec![0xff, 0], vec![0xff, 31]] {
            assert!(BloomFilter::from_block(Path::new("f"), 0, bad).is_err());
        }
    }
}
