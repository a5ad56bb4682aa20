//! Keys and values the way db_bench makes them.
//!
//! Keys: the key index as zero-padded decimal, `key_size` bytes (`0000000000000042`).
//! Values: slices of a 1 MiB buffer built from 100-byte pieces, each `ratio × 100` random
//! printable bytes repeated to fill the piece, so that a value compresses to about `ratio`
//! of its size (db_bench's `RandomGenerator` with `--compression_ratio`).

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Seed of the value buffer (db_bench's `Random rnd(301)`).
const VALUE_SEED: u64 = 301;
const VALUE_BUFFER_BYTES: usize = 1 << 20;
const PIECE_BYTES: usize = 100;

/// Number of decimal digits of `n` (1 for 0).
pub fn decimal_digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

#[derive(Debug, Clone, Copy)]
pub struct KeyGen {
    key_size: usize,
}

impl KeyGen {
    /// REQUIRES: every index used fits in `key_size` decimal digits (see [`Self::fits`]).
    pub fn new(key_size: usize) -> Self {
        KeyGen { key_size }
    }

    /// Whether indexes `0..num` all fit.
    pub fn fits(key_size: usize, num: u64) -> bool {
        decimal_digits(num.saturating_sub(1)) <= key_size
    }

    /// Writes the key of `index` into `buf` (resized to `key_size`).
    pub fn fill(&self, index: u64, buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(self.key_size, b'0');
        write_padded(index, buf);
    }

    #[cfg(test)]
    pub fn key(&self, index: u64) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.key_size);
        self.fill(index, &mut k);
        k
    }
}

/// Zero-padded decimal of `n` right-aligned in `out` (which is pre-filled with '0').
fn write_padded(mut n: u64, out: &mut [u8]) {
    let mut i = out.len();
    while i > 0 {
        i -= 1;
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
}

/// Which key index a write or read uses next.
pub struct KeyOrder {
    num: u64,
    next: u64,
    rng: Option<StdRng>,
    /// [`Self::shuffled`]'s order.
    permutation: Option<Vec<u64>>,
}

fn shuffled_indexes(num: u64, seed: u64) -> Vec<u64> {
    use rand::seq::SliceRandom;
    let mut v: Vec<u64> = (0..num.max(1)).collect();
    v.shuffle(&mut StdRng::seed_from_u64(seed));
    v
}

impl KeyOrder {
    /// 0, 1, 2, ... (wrapping at `num`).
    pub fn sequential(num: u64) -> Self {
        KeyOrder {
            num: num.max(1),
            next: 0,
            rng: None,
            permutation: None,
        }
    }

    /// Uniform in `0..num`, reproducible from `seed`.
    pub fn random(num: u64, seed: u64) -> Self {
        KeyOrder {
            num: num.max(1),
            next: 0,
            rng: Some(StdRng::seed_from_u64(seed)),
            permutation: None,
        }
    }

    /// Every index of `0..num` once, in an order shuffled reproducibly from `seed` (a
    /// random fill after which every key exists).
    pub fn shuffled(num: u64, seed: u64) -> Self {
        KeyOrder {
            num: num.max(1),
            next: 0,
            rng: None,
            permutation: Some(shuffled_indexes(num, seed)),
        }
    }

    pub fn next_index(&mut self) -> u64 {
        if let Some(p) = &self.permutation {
            let i = p.get(self.next as usize).copied().unwrap_or(0);
            self.next = (self.next + 1) % self.num;
            return i;
        }
        match &mut self.rng {
            Some(rng) => rng.gen_range(0..self.num),
            None => {
                let i = self.next;
                self.next = (self.next + 1) % self.num;
                i
            }
        }
    }
}

/// db_bench's `RandomGenerator`: hands out consecutive `value_size` slices of a buffer
/// of pieces that compress to `ratio`. Threads share one buffer ([`Self::fork`]).
pub struct ValueGen {
    data: Arc<Vec<u8>>,
    pos: usize,
    value_size: usize,
}

impl ValueGen {
    pub fn new(value_size: usize, ratio: f64) -> Self {
        let mut rng = StdRng::seed_from_u64(VALUE_SEED);
        let target = VALUE_BUFFER_BYTES.max(value_size);
        let mut data = Vec::with_capacity(target + PIECE_BYTES);
        while data.len() < target {
            data.extend_from_slice(&compressible_piece(&mut rng, ratio, PIECE_BYTES));
        }
        ValueGen {
            data: Arc::new(data),
            pos: 0,
            value_size,
        }
    }

    /// A generator over the same buffer for thread `t`, starting elsewhere in it.
    pub fn fork(&self, t: usize) -> ValueGen {
        let slots = (self.data.len() / self.value_size.max(1)).max(1);
        ValueGen {
            data: Arc::clone(&self.data),
            pos: (t * 7919 % slots) * self.value_size,
            value_size: self.value_size,
        }
    }

    pub fn next_value(&mut self) -> &[u8] {
        if self.pos + self.value_size > self.data.len() {
            self.pos = 0;
        }
        self.pos += self.value_size;
        &self.data[self.pos - self.value_size..self.pos]
    }
}

/// `len` bytes: `ratio × len` random printable bytes, repeated (db_bench's
/// `CompressibleString`).
pub fn compressible_piece(rng: &mut StdRng, ratio: f64, len: usize) -> Vec<u8> {
    let raw_len = ((len as f64 * ratio) as usize).clamp(1, len.max(1));
    let raw: Vec<u8> = (0..raw_len)
        .map(|_| b' ' + rng.gen_range(0..95u8))
        .collect();
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let take = (len - out.len()).min(raw.len());
        out.extend_from_slice(&raw[..take]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_16_byte_zero_padded_decimal() {
        let g = KeyGen::new(16);
        assert_eq!(g.key(0), b"0000000000000000");
        assert_eq!(g.key(42), b"0000000000000042");
        assert_eq!(g.key(9_999_999_999), b"0000009999999999");
        for i in [0u64, 1, 7, 123_456, 99_999_999] {
            let k = g.key(i);
            assert_eq!(k.len(), 16);
            assert_eq!(std::str::from_utf8(&k).unwrap().parse::<u64>().unwrap(), i);
        }
    }

    #[test]
    fn key_order_matches_index_order() {
        let g = KeyGen::new(16);
        assert!(g.key(9) < g.key(10));
        assert!(g.key(99_999) < g.key(100_000));
    }

    #[test]
    fn fits_checks_digits() {
        assert!(KeyGen::fits(16, 1_000_000));
        assert!(KeyGen::fits(2, 100));
        assert!(!KeyGen::fits(2, 101));
        assert_eq!(decimal_digits(0), 1);
        assert_eq!(decimal_digits(10), 2);
    }

    #[test]
    fn random_order_is_reproducible_and_in_range() {
        let a: Vec<u64> = {
            let mut o = KeyOrder::random(1000, 7);
            (0..100).map(|_| o.next_index()).collect()
        };
        let mut o = KeyOrder::random(1000, 7);
        let b: Vec<u64> = (0..100).map(|_| o.next_index()).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&i| i < 1000));
        let mut s = KeyOrder::sequential(3);
        let seq: Vec<u64> = (0..5).map(|_| s.next_index()).collect();
        assert_eq!(seq, [0, 1, 2, 0, 1]);
    }

    #[test]
    fn values_have_the_requested_size() {
        let mut v = ValueGen::new(100, 0.5);
        for _ in 0..30_000 {
            assert_eq!(v.next_value().len(), 100);
        }
        let mut big = ValueGen::new(3 << 20, 0.5);
        assert_eq!(big.next_value().len(), 3 << 20);
        let mut forked = big.fork(5);
        assert_eq!(forked.next_value().len(), 3 << 20);
        let base = ValueGen::new(100, 0.5);
        let (mut a, mut b) = (base.fork(0), base.fork(1));
        assert_ne!(a.next_value(), b.next_value());
    }

    #[test]
    fn piece_is_half_random_then_repeated() {
        let mut rng = StdRng::seed_from_u64(1);
        let p = compressible_piece(&mut rng, 0.5, 100);
        assert_eq!(p.len(), 100);
        assert_eq!(p[..50], p[50..]);
        assert!(p.iter().all(|&b| (b' '..=b'~').contains(&b)));
    }

    /// lz4 on a 4 KiB run of values (a data block's worth) comes out at about half.
    #[test]
    fn values_compress_to_about_half_with_lz4() {
        let mut v = ValueGen::new(100, 0.5);
        let mut block = Vec::new();
        while block.len() < 4096 {
            block.extend_from_slice(v.next_value());
        }
        let ratio = lz4_flex::compress(&block).len() as f64 / block.len() as f64;
        assert!((0.45..0.65).contains(&ratio), "lz4 ratio {ratio}");

        let mut incompressible = ValueGen::new(100, 1.0);
        let mut block = Vec::new();
        while block.len() < 4096 {
            block.extend_from_slice(incompressible.next_value());
        }
        let ratio = lz4_flex::compress(&block).len() as f64 / block.len() as f64;
        assert!(
            ratio > 0.95,
            "ratio-1.0 values should not compress: {ratio}"
        );
    }
}
