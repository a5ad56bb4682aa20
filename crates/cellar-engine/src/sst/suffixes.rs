//! The separator suffixes of a resident index (`IndexBlock`), kept in the smaller of two
//! forms.
//!
//! Every separator is `prefix ++ suffix`, and the index already holds each suffix's 8-byte
//! head: its first 8 bytes after `head_base`, big-endian and zero-padded (see
//! `IndexBlock`). Separators are short (a block's last key cut just past where it differs
//! from the next block's first key), so most suffixes are `head_base` and at most 8 bytes
//! more: for those the head *is* the suffix, and one length byte is all that is left to
//! keep. The others (a separator between two keys that differ only late, and usually the
//! file's last one) are kept in full. Keeping each suffix twice, in the heads and in a byte
//! array with a 4-byte end offset, cost 6 of ~20 bytes per data block with random 16-byte
//! keys, and 19 of 33 with keys in order, whose separators are whole keys
//! (docs/design/resident-metadata.md).
//!
//! - **In heads**: `lens[i]` is the length after `head_base` (0..=8), or [`LONG`] for an
//!   entry kept in full; those entries, ascending, are `long`, their suffixes back to back
//!   in `bytes` with end offsets `ends`.
//! - **Packed**: every suffix in `bytes`/`ends`; `lens` and `long` are empty. Chosen when it
//!   is smaller, i.e. when most separators are long.

use std::cmp::Ordering;

use crate::sst::head_tree::HeadTree;

/// Bytes after `head_base` that a head holds.
const HEAD_BYTES: usize = 8;
/// `lens` entry of a suffix kept in full.
const LONG: u8 = u8::MAX;

pub struct Suffixes {
    lens: Vec<u8>,
    long: Vec<u32>,
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

/// One separator suffix: a slice of the store, or `base ++ tail` rebuilt from a head.
pub enum Suffix<'a> {
    Full(&'a [u8]),
    InHead {
        base: &'a [u8],
        tail: [u8; HEAD_BYTES],
        len: usize,
    },
}

impl Suffix<'_> {
    /// Byte order of this suffix against `t`.
    pub fn cmp_to(&self, t: &[u8]) -> Ordering {
        match self {
            Suffix::Full(s) => cmp_short(s, t),
            Suffix::InHead { base, tail, len } => cmp_concat(base, &tail[..*len], t),
        }
    }

    pub fn append_to(&self, out: &mut Vec<u8>) {
        match self {
            Suffix::Full(s) => out.extend_from_slice(s),
            Suffix::InHead { base, tail, len } => {
                out.extend_from_slice(base);
                out.extend_from_slice(&tail[..*len]);
            }
        }
    }
}

impl Suffixes {
    /// The smaller form of `suffixes`. `None` if the bytes kept in full exceed 4 GiB.
    pub fn build(suffixes: &[&[u8]], head_base: &[u8]) -> Option<Suffixes> {
        let in_head = |s: &[u8]| {
            s.strip_prefix(head_base)
                .filter(|rest| rest.len() <= HEAD_BYTES)
                .map(|rest| rest.len() as u8)
        };
        let lens: Vec<u8> = suffixes
            .iter()
            .map(|s| in_head(s).unwrap_or(LONG))
            .collect();
        let long: Vec<u32> = (0..suffixes.len() as u32)
            .filter(|&i| lens[i as usize] == LONG)
            .collect();
        let long_bytes: usize = long.iter().map(|&i| suffixes[i as usize].len()).sum();
        let all_bytes: usize = suffixes.iter().map(|s| s.len()).sum();
        let in_heads_size = lens.len() + long.len() * 8 + long_bytes;
        let packed_size = suffixes.len() * 4 + all_bytes;
        if in_heads_size < packed_size {
            let (bytes, ends) = pack(long.iter().map(|&i| suffixes[i as usize]))?;
            Some(Suffixes {
                lens,
                long,
                bytes,
                ends,
            })
        } else {
            let (bytes, ends) = pack(suffixes.iter().copied())?;
            Some(Suffixes {
                lens: Vec::new(),
                long: Vec::new(),
                bytes,
                ends,
            })
        }
    }

    /// Suffix `i`; `heads` and `head_base` must be those it was built with. Out of range
    /// reads as empty (callers check the entry count first).
    pub fn get<'a>(&'a self, i: usize, heads: &HeadTree, head_base: &'a [u8]) -> Suffix<'a> {
        if self.lens.is_empty() {
            return Suffix::Full(self.packed(i));
        }
        match self.lens.get(i) {
            Some(&LONG) => {
                let j = self.long.binary_search(&(i as u32)).unwrap_or(usize::MAX);
                Suffix::Full(self.packed(j))
            }
            Some(&len) => Suffix::InHead {
                base: head_base,
                tail: heads.get(i).unwrap_or(0).to_be_bytes(),
                len: usize::from(len),
            },
            None => Suffix::Full(&[]),
        }
    }

    fn packed(&self, j: usize) -> &[u8] {
        let start = match j {
            0 => 0,
            _ => self.ends.get(j - 1).map_or(0, |&e| e as usize),
        };
        let end = self.ends.get(j).map_or(0, |&e| e as usize);
        self.bytes.get(start..end).unwrap_or(&[])
    }

    /// Bytes held in memory.
    pub fn resident_bytes(&self) -> usize {
        self.lens.len() + self.long.len() * 4 + self.bytes.len() + self.ends.len() * 4
    }
}

/// Back to back, with each one's end offset.
fn pack<'a>(suffixes: impl Iterator<Item = &'a [u8]>) -> Option<(Vec<u8>, Vec<u32>)> {
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for s in suffixes {
        bytes.extend_from_slice(s);
        ends.push(u32::try_from(bytes.len()).ok()?);
    }
    Some((bytes, ends))
}

/// Byte order of `a ++ b` against `t`.
fn cmp_concat(a: &[u8], b: &[u8], t: &[u8]) -> Ordering {
    match t.get(..a.len()) {
        // `t` is shorter than `a`: `a` alone decides, and a tie leaves `a ++ b` longer.
        None => cmp_short(a, t),
        Some(head) => cmp_short(a, head).then_with(|| cmp_short(b, &t[a.len()..])),
    }
}

/// Byte order of two short slices (separator suffixes are a few bytes): an inline loop
/// beats a `memcmp` call at these lengths.
#[inline]
pub fn cmp_short(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    for i in 0..n {
        match a[i].cmp(&b[i]) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding;
    use proptest::prelude::*;

    fn heads_of(suffixes: &[Vec<u8>], base: &[u8]) -> HeadTree {
        let heads: Vec<u64> = suffixes
            .iter()
            .map(|s| s.strip_prefix(base).map_or(u64::MAX, coding::head8))
            .collect();
        HeadTree::new(&heads)
    }

    proptest! {
        /// Whichever form is chosen, every suffix reads back as it went in and compares to
        /// any target as its bytes do.
        #[test]
        fn suffixes_read_back_and_compare_as_their_bytes(
            base in proptest::collection::vec(0u8..3, 0..4),
            tails in proptest::collection::vec(
                proptest::collection::vec(0u8..3, 0..12), 1..60),
            strangers in proptest::collection::vec(
                proptest::collection::vec(0u8..3, 0..6), 0..4),
            targets in proptest::collection::vec(
                proptest::collection::vec(0u8..3, 0..14), 1..20),
        ) {
            // Mostly `base ++ tail`, a few that need not start with `base`.
            let mut suffixes: Vec<Vec<u8>> =
                tails.iter().map(|t| [&base[..], t].concat()).collect();
            suffixes.extend(strangers);
            let heads = heads_of(&suffixes, &base);
            let slices: Vec<&[u8]> = suffixes.iter().map(|s| &s[..]).collect();
            let store = Suffixes::build(&slices, &base).expect("fits");
            for (i, s) in suffixes.iter().enumerate() {
                let got = store.get(i, &heads, &base);
                let mut out = Vec::new();
                got.append_to(&mut out);
                prop_assert_eq!(&out, s);
                for t in &targets {
                    prop_assert_eq!(got.cmp_to(t), s[..].cmp(&t[..]));
                }
            }
        }
    }

    #[test]
    fn short_separators_keep_a_length_byte_each() {
        let base = b"00000".to_vec();
        let suffixes: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| format!("00000{:06}", i * 7).into_bytes())
            .collect();
        let heads = heads_of(&suffixes, &base);
        let slices: Vec<&[u8]> = suffixes.iter().map(|s| &s[..]).collect();
        let store = Suffixes::build(&slices, &base).expect("fits");
        assert_eq!(store.resident_bytes(), 1000);
        let mut out = Vec::new();
        store.get(999, &heads, &base).append_to(&mut out);
        assert_eq!(out, b"00000006993");
    }
}
