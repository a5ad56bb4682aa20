//! The records and lookup sample of `cellar-bench mapfile`, made identically here
//! and in the Java peers (bench/java/common/.../Dataset.java), so that every engine writes
//! the same values and looks up the same keys.
//!
//! - SplitMix64 (Steele, Lea, Flood 2014): the state starts at the seed; each output adds
//!   `GAMMA` to the state and returns `mix(state)`. All arithmetic wraps on `u64`.
//! - Record `i` (`0 <= i < records`): key = `i` in zero-padded decimal, `key_size` bytes
//!   (the same keys as `db`, see keygen.rs), so key order is index order.
//! - Its value, `value_size` bytes: the first `r = value_size - value_size / 2` bytes are
//!   printable, byte `j` being `32 + b % 95` where `b` is byte `j % 8` (little-endian) of
//!   output `j / 8` of SplitMix64 seeded with `i ^ VALUE_SALT`; the rest repeats them
//!   (`v[j] = v[j - r]`), so values compress to about half.
//! - Lookups per iteration: `L = max(1, (records as f64 * fraction) as u64)`.
//! - Lookup `j` of iteration `k`: record `nth(seed, k * L + j) % records`, `nth(s, n)` being
//!   output `n` (0-based) of the generator started at `s`.
//!
//! bench/java/vector.txt pins all of this: [`vector_lines`] must reproduce it, and so must
//! each Java peer's `--self-test`.

/// SplitMix64's increment (the golden ratio in 64-bit fixed point).
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
/// "value" in ASCII.
pub const VALUE_SALT: u64 = 0x76_61_6C_75_65;

/// The shared vector, as checked in (comments and blank lines included).
pub const VECTOR_FILE: &str = include_str!("../../../bench/java/vector.txt");

pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Output `n` (0-based) of a generator started at `seed`.
pub fn nth(seed: u64, n: u64) -> u64 {
    mix(seed.wrapping_add(n.wrapping_add(1).wrapping_mul(GAMMA)))
}

pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }
}

/// `32 + b % 95` for every byte `b`: a printable character per generator byte, looked up so
/// that making a value costs the benchmark's writing thread little next to the engine's.
const PRINTABLE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = 32 + (b % 95) as u8;
        b += 1;
    }
    t
};

/// Writes the value of record `index` into `out` (its length is the value size).
pub fn value(index: u64, out: &mut [u8]) {
    let raw = out.len() - out.len() / 2;
    let mut g = SplitMix64::new(index ^ VALUE_SALT);
    let (head, tail) = out.split_at_mut(raw);
    for chunk in head.chunks_mut(8) {
        let word = g.next_u64().to_le_bytes();
        for (byte, b) in chunk.iter_mut().zip(word) {
            *byte = PRINTABLE[usize::from(b)];
        }
    }
    // The second part is at most as long as the first.
    tail.copy_from_slice(&head[..tail.len()]);
}

pub fn lookups_per_iteration(records: u64, fraction: f64) -> u64 {
    ((records as f64 * fraction) as u64).max(1)
}

/// The record looked up `j`-th in iteration `iteration`.
pub fn lookup_index(seed: u64, records: u64, per_iteration: u64, iteration: u64, j: u64) -> u64 {
    nth(seed, iteration.wrapping_mul(per_iteration).wrapping_add(j)) % records.max(1)
}

/// The records iteration `iteration` looks up, in order.
pub fn sample(seed: u64, records: u64, per_iteration: u64, iteration: u64) -> Vec<u64> {
    (0..per_iteration)
        .map(|j| lookup_index(seed, records, per_iteration, iteration, j))
        .collect()
}

fn key_string(index: u64, key_size: usize) -> String {
    let mut k = Vec::new();
    crate::keygen::KeyGen::new(key_size).fill(index, &mut k);
    String::from_utf8_lossy(&k).into_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn value_hex(index: u64, size: usize) -> String {
    let mut v = vec![0u8; size];
    value(index, &mut v);
    hex(&v)
}

fn outputs(seed: u64, n: usize) -> String {
    let mut g = SplitMix64::new(seed);
    let words: Vec<String> = (0..n).map(|_| format!("{:016x}", g.next_u64())).collect();
    words.join(" ")
}

fn lookups(seed: u64, records: u64, per: u64, iteration: u64, count: u64) -> String {
    let idx: Vec<String> = (0..count)
        .map(|j| lookup_index(seed, records, per, iteration, j).to_string())
        .collect();
    idx.join(" ")
}

/// The vector's lines as this side computes them (Vector.java makes the same ones).
pub fn vector_lines() -> Vec<String> {
    let mut out = vec![
        format!("splitmix64 seed=0: {}", outputs(0, 4)),
        format!(
            "splitmix64 seed=18446744073709551615: {}",
            outputs(u64::MAX, 2)
        ),
        format!("splitmix64 nth seed=301 n=999: {:016x}", nth(301, 999)),
    ];
    for i in [0u64, 42, 9_999_999] {
        out.push(format!("key size=16 index={i}: {}", key_string(i, 16)));
    }
    out.push(format!("key size=8 index=12345: {}", key_string(12345, 8)));
    for records in [1_000_000u64, 100_000, 50] {
        out.push(format!(
            "per_iteration records={records} fraction=0.01: {}",
            lookups_per_iteration(records, 0.01)
        ));
    }
    for it in [0u64, 2] {
        out.push(format!(
            "lookups records=1000000 per=10000 seed=301 iteration={it}: {}",
            lookups(301, 1_000_000, 10_000, it, 8)
        ));
    }
    out.push(format!(
        "lookup records=100000 per=1000 seed=7 iteration=1 j=999: {}",
        lookup_index(7, 100_000, 1000, 1, 999)
    ));
    out.push(format!("value size=100 index=0: {}", value_hex(0, 100)));
    out.push(format!(
        "value size=100 index=123456: {}",
        value_hex(123_456, 100)
    ));
    out.push(format!("value size=7 index=5: {}", value_hex(5, 7)));
    out
}

/// The lines of a vector text that matter (no comments, no blank lines).
pub fn significant_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_keys_match_the_shared_vector() {
        assert_eq!(vector_lines(), significant_lines(VECTOR_FILE));
    }

    #[test]
    fn splitmix64_matches_published_outputs() {
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut h = SplitMix64::new(42);
        for n in 0..10 {
            assert_eq!(nth(42, n), h.next_u64());
        }
    }

    #[test]
    fn peer_values_repeat_their_printable_half() {
        let mut v = [0u8; 100];
        value(7, &mut v);
        assert_eq!(v[..50], v[50..]);
        assert!(v.iter().all(|b| (32..127).contains(b)));
        let mut odd = [0u8; 7];
        value(7, &mut odd);
        assert_eq!(odd[..3], odd[4..]);
    }

    #[test]
    fn peer_sample_is_in_range_and_differs_by_iteration() {
        let a = sample(301, 1000, 10, 0);
        let b = sample(301, 1000, 10, 1);
        assert_eq!(a.len(), 10);
        assert!(a.iter().chain(&b).all(|&i| i < 1000));
        assert_ne!(a, b);
        assert_eq!(a, sample(301, 1000, 10, 0));
    }
}
