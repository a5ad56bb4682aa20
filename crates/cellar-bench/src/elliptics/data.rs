//! The records and read streams of `cellar-bench elliptics`, made identically here
//! and in the Java peer (bench/java/common/.../TextRecords.java), so that every engine stores
//! the same bytes and reads the same keys in the same order.
//!
//! - Record `i` (`0 <= i < records`): key = `i` in zero-padded decimal, [`KEY_BYTES`] bytes
//!   (keygen.rs; key order is index order, so the load is a batch upload in key order, as
//!   the write-up's HBase bulk upload was).
//! - Its value, `value_size` bytes of English-like text: words of [`WORDS`] separated by one
//!   space, word `w` being `WORDS[o_w >> 58]` where `o_w` is output `w` (0-based) of
//!   SplitMix64 (peer_keys.rs) seeded with `i ^ TEXT_SALT`; words are appended until the text
//!   is at least `value_size` bytes long, then it is cut to exactly `value_size` bytes. A
//!   64-word vocabulary makes the text compress about as well as the write-up's "easily
//!   compressible" production records, and exact sizes let a read check its value's length.
//! - Read `j` of stream `s` (each timed phase has its own stream, see [`Stream`]): record
//!   `nth(seed + s, j) % records` (wrapping add; `nth` is peer_keys::nth).
//!
//! bench/java/elliptics-vector.txt pins all of this: [`vector_lines`] must reproduce it, and
//! so must TextRecordsTest and the Java peer's `--self-test`.

use crate::keygen::KeyGen;
use crate::peer_keys::{nth, SplitMix64};

pub const KEY_BYTES: usize = 16;
/// "text" in ASCII.
pub const TEXT_SALT: u64 = 0x74_65_78_74;

/// The shared vector, as checked in (comments and blank lines included).
#[cfg(test)]
pub const VECTOR_FILE: &str = include_str!("../../../../bench/java/elliptics-vector.txt");

/// 64 common English words (a power of two: the top 6 bits of an output pick one, unbiased).
pub const WORDS: [&str; 64] = [
    "the", "of", "and", "to", "in", "is", "was", "that", "for", "on", "with", "as", "by", "at",
    "from", "his", "her", "they", "which", "this", "have", "were", "but", "not", "are", "had",
    "one", "all", "their", "there", "been", "when", "would", "some", "time", "people", "other",
    "into", "more", "could", "first", "water", "after", "where", "through", "long", "little",
    "very", "before", "great", "world", "between", "server", "record", "storage", "small",
    "object", "index", "cache", "random", "disk", "median", "reply", "upload",
];

/// Which read stream a timed phase draws its keys from: distinct phases read distinct keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Fixed,
    /// Step `n` (0-based) of the max-rate search.
    RateStep(u64),
    Range10,
    Range100,
}

impl Stream {
    pub fn id(self) -> u64 {
        match self {
            Stream::Fixed => 0,
            Stream::Range10 => 1,
            Stream::Range100 => 2,
            Stream::RateStep(n) => 16 + n,
        }
    }
}

pub fn key(index: u64, out: &mut Vec<u8>) {
    KeyGen::new(KEY_BYTES).fill(index, out);
}

/// Each word of [`WORDS`] followed by its space, padded to 8 bytes, with its length: the
/// generator copies a whole word with one 8-byte store. A copy per word through `memmove`
/// made the generator as costly as the engines' whole write path in the load it times.
const PADDED_WORDS: [([u8; 8], usize); 64] = {
    let mut out = [([0u8; 8], 0usize); 64];
    let mut i = 0;
    while i < 64 {
        let w = WORDS[i].as_bytes();
        assert!(w.len() < 8, "a word and its space must fit 8 bytes");
        let mut j = 0;
        while j < w.len() {
            out[i].0[j] = w[j];
            j += 1;
        }
        out[i].0[w.len()] = b' ';
        out[i].1 = w.len() + 1;
        i += 1;
    }
    out
};

/// Writes the value of record `index` into `out` (resized to `value_size`). Appending
/// "word " until the text reaches `value_size`, then cutting, gives the same bytes as
/// joining words with spaces: a space the cut keeps is the one joining would add next.
pub fn value(index: u64, value_size: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(value_size + 8, 0);
    let mut g = SplitMix64::new(index ^ TEXT_SALT);
    let mut pos = 0;
    while pos < value_size {
        let (word, len) = &PADDED_WORDS[(g.next_u64() >> 58) as usize];
        out[pos..pos + 8].copy_from_slice(word);
        pos += len;
    }
    out.truncate(value_size);
}

/// The record read `j`-th in stream `stream`.
pub fn read_index(seed: u64, stream: Stream, records: u64, j: u64) -> u64 {
    nth(seed.wrapping_add(stream.id()), j) % records.max(1)
}

#[cfg(test)]
fn text(index: u64, size: usize) -> String {
    let mut v = Vec::new();
    value(index, size, &mut v);
    String::from_utf8_lossy(&v).into_owned()
}

#[cfg(test)]
fn reads(seed: u64, stream: Stream, records: u64, count: u64) -> String {
    let idx: Vec<String> = (0..count)
        .map(|j| read_index(seed, stream, records, j).to_string())
        .collect();
    idx.join(" ")
}

/// The vector's lines as this side computes them (TextRecords.java makes the same ones).
#[cfg(test)]
pub fn vector_lines() -> Vec<String> {
    let mut out = Vec::new();
    for i in [0u64, 1, 20_000_000 - 1] {
        let mut k = Vec::new();
        key(i, &mut k);
        out.push(format!("key index={i}: {}", String::from_utf8_lossy(&k)));
    }
    for (i, size) in [(0u64, 200usize), (42, 200), (19_999_999, 200), (7, 13)] {
        out.push(format!("value size={size} index={i}: {}", text(i, size)));
    }
    for stream in [
        Stream::Fixed,
        Stream::Range10,
        Stream::Range100,
        Stream::RateStep(0),
        Stream::RateStep(5),
    ] {
        out.push(format!(
            "reads seed=301 stream={} records=20000000: {}",
            stream.id(),
            reads(301, stream, 20_000_000, 6)
        ));
    }
    out.push(format!(
        "read seed=7 stream=3 records=1000 j=123456: {}",
        nth(7u64.wrapping_add(3), 123_456) % 1000
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer_keys::significant_lines;

    #[test]
    fn elliptics_data_matches_the_shared_vector() {
        assert_eq!(vector_lines(), significant_lines(VECTOR_FILE));
    }

    #[test]
    fn elliptics_values_are_exact_size_words() {
        let mut v = Vec::new();
        for i in 0..100 {
            value(i, 200, &mut v);
            assert_eq!(v.len(), 200);
            let text = std::str::from_utf8(&v).unwrap();
            let words: Vec<&str> = text.split(' ').collect();
            // Every word but the cut last one is from the list.
            for w in &words[..words.len() - 1] {
                assert!(WORDS.contains(w), "{w:?} in {text:?}");
            }
        }
        value(3, 0, &mut v);
        assert!(v.is_empty());
    }

    /// The rule as the module states it (and as the Java peer writes it): words joined
    /// by single spaces until the text is long enough, then cut.
    fn joined_words(index: u64, value_size: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut g = SplitMix64::new(index ^ TEXT_SALT);
        while out.len() < value_size {
            if !out.is_empty() {
                out.push(b' ');
            }
            out.extend_from_slice(WORDS[(g.next_u64() >> 58) as usize].as_bytes());
        }
        out.truncate(value_size);
        out
    }

    #[test]
    fn elliptics_values_are_the_joined_words_at_every_size() {
        let mut v = Vec::new();
        for size in (0..40).chain([199, 200, 201, 1000]) {
            for i in [0u64, 1, 7, 42, 12_345, 19_999_999] {
                value(i, size, &mut v);
                assert_eq!(v, joined_words(i, size), "record {i}, {size} bytes");
            }
        }
    }

    #[test]
    fn elliptics_values_compress() {
        let mut all = Vec::new();
        let mut v = Vec::new();
        for i in 0..1000 {
            value(i, 200, &mut v);
            all.extend_from_slice(&v);
        }
        let packed = lz4_flex::compress(&all);
        assert!(
            packed.len() * 3 < all.len() * 2,
            "{} of {}",
            packed.len(),
            all.len()
        );
    }

    #[test]
    fn elliptics_streams_differ_and_stay_in_range() {
        let a: Vec<u64> = (0..50)
            .map(|j| read_index(1, Stream::Fixed, 100, j))
            .collect();
        let b: Vec<u64> = (0..50)
            .map(|j| read_index(1, Stream::RateStep(0), 100, j))
            .collect();
        assert_ne!(a, b);
        assert!(a.iter().chain(&b).all(|&i| i < 100));
    }
}
