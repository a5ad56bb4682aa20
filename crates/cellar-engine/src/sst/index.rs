//! The resident form of an index block: decoded once (at open, or when a partition is
//! loaded) into a compact layout that a point lookup searches without touching the encoded
//! block. See `docs/format/sstable.md` ("Index block", "Partitioned index").

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use crate::coding::{self, Decoder};
use crate::error::{Error, Result};
use crate::sst::block::Block;
use crate::sst::format::{BlockHandle, BLOCK_TRAILER_LEN};
use crate::sst::head_tree::HeadTree;
use crate::sst::prefetch;
use crate::sst::suffixes::{cmp_short, Suffix, Suffixes};
use crate::types;

/// One index entry: the separator's user key, its trailer when it had to keep one, and the
/// data block it points to. A separator without a trailer stands for `(user_key, trailer 0)`,
/// the largest internal key with that user key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The separator's user key.
    pub user_key: Vec<u8>,
    /// The separator's trailer, when it keeps one.
    pub trailer: Option<u64>,
    /// The data block.
    pub handle: BlockHandle,
}

/// Index entry value: varint offset, varint size, then an optional 8-byte LE trailer.
pub fn encode_index_value(handle: BlockHandle, trailer: Option<u64>, dst: &mut Vec<u8>) {
    handle.encode_to(dst);
    if let Some(t) = trailer {
        coding::put_u64(dst, t);
    }
}

/// Top-level entry value of a partitioned index: the index partition's handle, the filter
/// partition's handle ((0, 0) without filters), then the optional trailer as above.
pub fn encode_top_level_value(
    index: BlockHandle,
    filter: BlockHandle,
    trailer: Option<u64>,
    dst: &mut Vec<u8>,
) {
    index.encode_to(dst);
    encode_index_value(filter, trailer, dst);
}

/// Block ends as u32 while the data area is under 4 GiB (always, at the default 64 MiB
/// target file size), else u64.
enum BlockEnds {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl BlockEnds {
    fn get(&self, i: usize) -> u64 {
        match self {
            BlockEnds::Narrow(v) => v.get(i).map_or(0, |&e| u64::from(e)),
            BlockEnds::Wide(v) => v.get(i).copied().unwrap_or(0),
        }
    }
    fn bytes(&self) -> usize {
        match self {
            BlockEnds::Narrow(v) => v.len() * 4,
            BlockEnds::Wide(v) => v.len() * 8,
        }
    }
    fn prefetch(&self, i: usize) {
        match self {
            BlockEnds::Narrow(v) => prefetch::read_at(v, i),
            BlockEnds::Wide(v) => prefetch::read_at(v, i),
        }
    }
}

/// The resident index, decoded once into a compact form: the separators' common prefix is
/// stored once, the rest of each separator (its suffix) mostly as a length byte beside its
/// search head (`suffixes.rs`), and each block by its end offset alone (the blocks an index
/// covers are contiguous, so block `i` starts where block `i - 1` ends and block 0 at
/// `first_offset`). That is ~14 bytes per data block, against ~25 for the encoded index
/// block, which keeps index + filter under 2 bytes per key. The same form serves an
/// unpartitioned file's index, each index partition and the top level of a partitioned
/// index (whose "blocks" are the index partitions).
pub struct IndexBlock {
    len: usize,
    first_offset: u64,
    prefix: Vec<u8>,
    /// Each separator after `prefix`.
    suffixes: Suffixes,
    block_ends: BlockEnds,
    /// (entry, trailer) for the rare separators that need one, by entry.
    trailers: Vec<(u32, u64)>,
    /// Every suffix's first 8 bytes after `head_base` (big-endian, zero-padded) as a search
    /// tree whose nodes are two cache lines: a lookup reads 3–4 nodes, the upper ones cached,
    /// and compares whole separators only where a head equals the target's.
    heads: HeadTree,
    /// Bytes every suffix but the last one starts with, skipped by the heads. The last
    /// separator of a file is a short successor ("1" after db_bench's "0000000001999990"),
    /// so the common prefix of *all* separators is usually empty and, without this, every
    /// head would read the same leading zeros and narrow nothing.
    head_base: Vec<u8>,
    path: Arc<Path>,
    offset: u64,
}

impl IndexBlock {
    /// An unpartitioned file's index: data blocks contiguous from offset 0, ending at or
    /// before `data_limit`.
    pub fn new(block: Block, data_limit: u64) -> Result<IndexBlock> {
        Ok(Self::decode(block, 0, data_limit, false)?.0)
    }

    /// Validates every entry (framing; handles contiguous from `first_offset` and ending at
    /// or before `limit`) and builds the resident form. With `with_filters` (the top level
    /// of a partitioned index) every value carries a second handle, the partition's filter,
    /// returned by entry; either every filter handle is (0, 0) or none is.
    pub fn decode(
        block: Block,
        first_offset: u64,
        limit: u64,
        with_filters: bool,
    ) -> Result<(IndexBlock, Vec<BlockHandle>)> {
        let len = if block.restarts_off == 0 {
            0
        } else {
            block.num_restarts
        };
        let mut raw: Vec<(&[u8], BlockHandle, Option<u64>)> = Vec::with_capacity(len);
        let mut filters = Vec::new();
        let mut prev_end = first_offset;
        for i in 0..len {
            let bad = || block.corruption("malformed index entry");
            let (k, v, end) = block.restart_entry(i).ok_or_else(bad)?;
            let next = if i + 1 < len {
                block.restart_point(i + 1)
            } else {
                Some(block.restarts_off)
            };
            if next != Some(end) {
                return Err(block.corruption("index restart array does not match entries"));
            }
            let mut d = Decoder::new(v);
            let handle = BlockHandle::decode_from(&mut d).ok_or_else(bad)?;
            if with_filters {
                filters.push(BlockHandle::decode_from(&mut d).ok_or_else(bad)?);
            }
            let trailer = match d.remaining().len() {
                0 => None,
                8 => Some(d.u64().ok_or_else(bad)?),
                _ => return Err(bad()),
            };
            if handle.offset != prev_end || handle.end() > limit {
                return Err(block.corruption("index points outside the contiguous area it covers"));
            }
            prev_end = handle.end();
            raw.push((k, handle, trailer));
        }
        let none = BlockHandle::default();
        if filters.contains(&none) && filters.iter().any(|h| *h != none) {
            return Err(block.corruption("some index partitions have a filter, some do not"));
        }
        let ix = Self::build(&raw, first_offset, Arc::clone(&block.path), block.offset)?;
        Ok((ix, filters))
    }

    /// One index over consecutive partitions (each starting where the previous one ends):
    /// what a pinned partitioned file keeps, so that its lookups search one structure, as
    /// in a version 1 file, instead of touching a partition's own cold fields first.
    pub fn concat(parts: &[IndexBlock]) -> Result<IndexBlock> {
        let mut entries = Vec::with_capacity(parts.iter().map(|p| p.len).sum());
        for p in parts {
            for i in 0..p.len {
                entries.push(p.entry(i)?);
            }
        }
        let raw: Vec<(&[u8], BlockHandle, Option<u64>)> = entries
            .iter()
            .map(|e| (&e.user_key[..], e.handle, e.trailer))
            .collect();
        let Some(first) = parts.first() else {
            return Err(Error::InvalidArgument("no index partitions to join".into()));
        };
        Self::build(&raw, first.first_offset, first.path(), first.offset)
    }

    /// The compact form of validated entries (contiguous handles from `first_offset`).
    fn build(
        raw: &[(&[u8], BlockHandle, Option<u64>)],
        first_offset: u64,
        path: Arc<Path>,
        offset: u64,
    ) -> Result<IndexBlock> {
        let len = raw.len();
        let keys: Vec<&[u8]> = raw.iter().map(|r| r.0).collect();
        let prefix = common_prefix(&keys);
        let suffixes: Vec<&[u8]> = raw.iter().map(|r| &r.0[prefix.len()..]).collect();
        let trailers = raw
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.2.map(|t| (i as u32, t)))
            .collect();
        let head_base = match suffixes.split_last() {
            Some((_, rest)) if !rest.is_empty() => common_prefix(rest).to_vec(),
            _ => Vec::new(),
        };
        let heads: Vec<u64> = suffixes.iter().map(|s| head_of(&head_base, s)).collect();
        let too_big = || Error::corruption(&*path, offset, "index separators exceed 4 GiB");
        let suffixes = Suffixes::build(&suffixes, &head_base).ok_or_else(too_big)?;
        let last_end = raw.last().map_or(first_offset, |r| r.1.end());
        let block_ends = if last_end <= u64::from(u32::MAX) {
            BlockEnds::Narrow(raw.iter().map(|r| r.1.end() as u32).collect())
        } else {
            BlockEnds::Wide(raw.iter().map(|r| r.1.end()).collect())
        };
        Ok(IndexBlock {
            len,
            first_offset,
            prefix: prefix.to_vec(),
            suffixes,
            block_ends,
            trailers,
            heads: HeadTree::new(&heads),
            head_base,
            path,
            offset,
        })
    }

    /// Offset just past the last block (its trailer included): where the next run of
    /// blocks must start.
    pub fn end_offset(&self) -> u64 {
        match self.len {
            0 => self.first_offset,
            n => self.block_ends.get(n - 1),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The file the index came from (for error messages).
    pub fn path(&self) -> Arc<Path> {
        Arc::clone(&self.path)
    }

    /// File offset of the index block this was decoded from.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held in memory.
    pub fn resident_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.prefix.len()
            + self.suffixes.resident_bytes()
            + self.head_base.len()
            + self.block_ends.bytes()
            + self.trailers.len() * 12
            + self.heads.resident_bytes()
    }

    fn suffix(&self, i: usize) -> Suffix<'_> {
        self.suffixes.get(i, &self.heads, &self.head_base)
    }

    fn trailer(&self, i: usize) -> Option<u64> {
        self.trailers
            .binary_search_by_key(&(i as u32), |(e, _)| *e)
            .ok()
            .map(|j| self.trailers[j].1)
    }

    fn bad_ordinal(&self, i: usize) -> Error {
        Error::corruption(
            &*self.path,
            self.offset,
            format!("index entry {i} out of range {}", self.len),
        )
    }

    pub fn entry(&self, i: usize) -> Result<IndexEntry> {
        if i >= self.len {
            return Err(self.bad_ordinal(i));
        }
        let mut user_key = self.prefix.clone();
        self.suffix(i).append_to(&mut user_key);
        Ok(IndexEntry {
            user_key,
            trailer: self.trailer(i),
            handle: self.handle(i)?,
        })
    }

    pub fn handle(&self, i: usize) -> Result<BlockHandle> {
        if i >= self.len {
            return Err(self.bad_ordinal(i));
        }
        let start = if i == 0 {
            self.first_offset
        } else {
            self.block_ends.get(i - 1)
        };
        let end = self.block_ends.get(i);
        let size = end
            .saturating_sub(start)
            .saturating_sub(BLOCK_TRAILER_LEN as u64);
        Ok(BlockHandle::new(start, size))
    }

    /// Starts loading the memory `find(target)` and `handle` will miss on: the search tree's
    /// last node and the end offsets of the blocks that node covers.
    pub fn prefetch(&self, target: &[u8]) {
        let (tu, _) = types::split_internal(target).unwrap_or((target, 0));
        self.prefetch_user_key(tu);
    }

    /// [`prefetch`](Self::prefetch) for a lookup of the user key `tu`.
    pub fn prefetch_user_key(&self, tu: &[u8]) {
        let Some(rest) = tu.strip_prefix(&self.prefix[..]) else {
            return;
        };
        // The tree's upper nodes are usually cached: its last node, and the block ends of
        // the entries that node covers, are what the search will miss on.
        let window = self.heads.prefetch(self.head(rest));
        self.block_ends.prefetch(window.start);
        self.block_ends.prefetch(window.end.saturating_sub(1));
    }

    /// The search key of a suffix: its 8 bytes after `head_base` (big-endian, zero-padded)
    /// when it starts with `head_base`, else 0 or `u64::MAX` as it sorts below or above
    /// every suffix that does. Monotonic in the suffix, so a head below (above) the
    /// target's means an entry below (above) the target.
    fn head(&self, suffix: &[u8]) -> u64 {
        head_of(&self.head_base, suffix)
    }

    /// The first block whose separator is >= `target`: the only block that can hold the
    /// first entry >= `target`. `None` when `target` is past every key in the file.
    pub fn find(&self, target: &[u8]) -> Result<Option<usize>> {
        let (tu, tt) = types::split_internal(target).unwrap_or((target, 0));
        self.find_split(tu, tt)
    }

    /// [`find`](Self::find) for the internal key `tu ++ tt` given in its two parts, so a
    /// caller can search before (or without) building the key.
    pub fn find_split(&self, tu: &[u8], tt: u64) -> Result<Option<usize>> {
        // Every separator starts with `prefix`: compare it once, then only the suffixes.
        let p = self.prefix.len();
        match tu.get(..p).map(|head| cmp_short(head, &self.prefix)) {
            // `tu` is shorter than the prefix, or sorts before it: before every separator.
            None | Some(Ordering::Less) => {
                // A shorter `tu` that is a prefix of `prefix` also sorts first.
                let before = tu < &self.prefix[..];
                return Ok(if before || self.len == 0 {
                    (self.len > 0).then_some(0)
                } else {
                    None
                });
            }
            Some(Ordering::Greater) => return Ok(None),
            Some(Ordering::Equal) => {}
        }
        let rest = &tu[p..];
        // Heads are monotonic in the suffixes: an entry whose head is below the target's
        // sorts below it, and one whose head is above sorts above it. Only entries with the
        // target's head (usually none) need their separators compared.
        let (mut lo, mut hi) = self.heads.equal_range(self.head(rest));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let ord = self
                .suffix(mid)
                .cmp_to(rest)
                .then_with(|| tt.cmp(&self.trailer(mid).unwrap_or(0)));
            if ord == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok((lo < self.len).then_some(lo))
    }
}

/// The search head of `suffix` (see [`IndexBlock::head`]) against `head_base`.
fn head_of(head_base: &[u8], suffix: &[u8]) -> u64 {
    let n = head_base.len();
    match suffix.get(..n) {
        Some(b) if cmp_short(b, head_base) == Ordering::Equal => coding::head8(&suffix[n..]),
        _ if suffix < head_base => 0,
        _ => u64::MAX,
    }
}

/// The longest prefix every one of `keys` starts with (empty when there are none).
fn common_prefix<'a>(keys: &[&'a [u8]]) -> &'a [u8] {
    let mut base = keys.first().copied().unwrap_or(&[]);
    for s in keys {
        let n = base
            .iter()
            .zip(s.iter())
            .take_while(|(a, b)| a == b)
            .count();
        base = &base[..n];
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Separators from a two-letter alphabet after a shared prefix, so many share their
    /// first 8 bytes after `head_base` (equal heads) and some carry trailers.
    fn separators() -> impl Strategy<Value = Vec<(Vec<u8>, Option<u64>)>> {
        proptest::collection::vec(
            (
                proptest::collection::vec(prop_oneof![Just(b'0'), Just(b'1')], 0..14),
                proptest::option::weighted(0.2, 0u64..4),
            ),
            1..300,
        )
        .prop_map(|mut v| {
            for (k, _) in &mut v {
                k.splice(0..0, b"user".iter().copied());
            }
            // Internal order: user key ascending, then trailer descending (none as 0).
            v.sort_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| b.1.unwrap_or(0).cmp(&a.1.unwrap_or(0)))
            });
            v.dedup_by(|a, b| a.0 == b.0 && a.1.unwrap_or(0) == b.1.unwrap_or(0));
            v
        })
    }

    proptest! {
        /// The head tree and the separator compares together find what a linear scan finds:
        /// the first separator at or after the target.
        #[test]
        fn find_split_matches_a_linear_scan(
            seps in separators(),
            targets in proptest::collection::vec(
                (proptest::collection::vec(prop_oneof![Just(b'0'), Just(b'1'), Just(b'2')], 0..16),
                 0u64..5),
                1..40,
            ),
        ) {
            let raw: Vec<(&[u8], BlockHandle, Option<u64>)> = seps
                .iter()
                .enumerate()
                .map(|(i, (k, t))| (&k[..], BlockHandle::new(i as u64 * 10, 5), *t))
                .collect();
            let ix = IndexBlock::build(&raw, 0, Arc::from(Path::new("ix")), 0)
                .expect("index builds");
            for (digits, tt) in targets {
                for tu in [[b"user".as_slice(), &digits].concat(), digits.clone(), b"v".to_vec()] {
                    let want = seps.iter().position(|(u, t)| {
                        u[..].cmp(&tu[..]).then_with(|| tt.cmp(&t.unwrap_or(0))) != Ordering::Less
                    });
                    prop_assert_eq!(ix.find_split(&tu, tt).expect("search"), want);
                }
            }
        }
    }
}
