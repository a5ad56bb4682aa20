//! Block contents (after decompression): prefix-compressed entries followed by a restart
//! array.
//!
//! ```text
//! entry*  restart_offset: u32 LE * num_restarts  num_restarts: u32 LE
//! entry = varint shared | varint non_shared | varint value_len | key[shared..] | value
//! ```
//! Every `restart_interval`-th entry stores its whole key (`shared == 0`) and its offset is
//! listed in the restart array, so a seek binary-searches restarts and then scans at most
//! one interval. Data blocks hold internal keys; the index block (interval 1) is read
//! through [`IndexBlock`].

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use crate::coding::{self, Decoder};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::format::{BlockHandle, BLOCK_TRAILER_LEN};
use crate::sst::prefetch;
use crate::types::{self, compare_internal};

pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    interval: usize,
    /// Entries since the last restart.
    counter: usize,
    entries: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            interval: restart_interval.max(1),
            counter: 0,
            entries: 0,
            last_key: Vec::new(),
        }
    }

    /// Keys must arrive in increasing order; only the caller knows which order that is.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter >= self.interval {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        } else {
            shared = key
                .iter()
                .zip(&self.last_key)
                .take_while(|(a, b)| a == b)
                .count();
        }
        coding::put_varint(&mut self.buf, shared as u64);
        coding::put_varint(&mut self.buf, (key.len() - shared) as u64);
        coding::put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
        self.entries += 1;
    }

    /// Size of the block if it were finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    pub fn num_entries(&self) -> usize {
        self.entries
    }

    /// Returns the finished block and resets the builder for the next one.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            coding::put_u32(&mut out, *r);
        }
        coding::put_u32(&mut out, self.restarts.len() as u32);
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.entries = 0;
        self.last_key.clear();
        out
    }
}

/// A decoded (uncompressed) block, remembering where it came from for error messages.
pub struct Block {
    data: Vec<u8>,
    restarts_off: usize,
    num_restarts: usize,
    path: Arc<Path>,
    offset: u64,
}

/// Location of one decoded entry inside the block.
#[derive(Debug, Clone, Copy)]
struct EntryLoc {
    shared: usize,
    key_start: usize,
    value_start: usize,
    next: usize,
}

impl Block {
    /// Validates the restart array's framing; entries are checked lazily as they are read.
    pub fn new(data: Vec<u8>, path: Arc<Path>, offset: u64) -> Result<Block> {
        let corrupt = |why: &str| Error::corruption(&*path, offset, why.to_string());
        let n_at = data
            .len()
            .checked_sub(4)
            .ok_or_else(|| corrupt("block too short for a restart count"))?;
        let n = coding::get_u32(&data, n_at).ok_or_else(|| corrupt("truncated block"))? as usize;
        let restarts_off = n
            .checked_mul(4)
            .and_then(|b| n_at.checked_sub(b))
            .ok_or_else(|| corrupt("restart count larger than the block"))?;
        if n == 0 {
            return Err(corrupt("block has no restart points"));
        }
        Ok(Block {
            data,
            restarts_off,
            num_restarts: n,
            path,
            offset,
        })
    }

    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// File offset of the block (the key of the block cache and of error messages).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Memory charged to the block cache.
    pub fn charge(&self) -> usize {
        self.data.capacity() + std::mem::size_of::<Block>()
    }

    /// Starts loading the restart array and the middle restart's entry, where a seek in
    /// this block begins.
    pub fn prefetch(&self) {
        prefetch::read_at(&self.data, self.restarts_off);
        if let Some(p) = self.restart_point(self.num_restarts / 2) {
            prefetch::read_at(&self.data, p);
        }
    }

    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter {
            block: Arc::clone(self),
            current: self.restarts_off,
            next_off: self.restarts_off,
            restart_idx: 0,
            key: Vec::new(),
            value: (0, 0),
            err: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A `Corruption` error naming this block's file and offset.
    pub fn corruption(&self, why: &str) -> Error {
        Error::corruption(&*self.path, self.offset, why.to_string())
    }

    /// Offset of restart `i`, which must point into the entry area.
    fn restart_point(&self, i: usize) -> Option<usize> {
        let p = coding::get_u32(
            &self.data,
            self.restarts_off.checked_add(i.checked_mul(4)?)?,
        )?;
        let p = p as usize;
        (p <= self.restarts_off).then_some(p)
    }

    fn decode_entry(&self, off: usize) -> Option<EntryLoc> {
        let mut d = Decoder::new(self.data.get(off..self.restarts_off)?);
        let shared = d.varint_usize()?;
        let non_shared = d.varint_usize()?;
        let value_len = d.varint_usize()?;
        let key_start = off + d.position();
        let value_start = key_start.checked_add(non_shared)?;
        let next = value_start.checked_add(value_len)?;
        (next <= self.restarts_off).then_some(EntryLoc {
            shared,
            key_start,
            value_start,
            next,
        })
    }

    /// The full key and value of the entry at restart `i` (which must have `shared == 0`).
    fn restart_entry(&self, i: usize) -> Option<(&[u8], &[u8], usize)> {
        let e = self.decode_entry(self.restart_point(i)?)?;
        (e.shared == 0).then(|| {
            (
                &self.data[e.key_start..e.value_start],
                &self.data[e.value_start..e.next],
                e.next,
            )
        })
    }
}

/// Iterates a data block's internal keys. Never panics on damaged contents: it becomes
/// invalid and reports `Corruption` through `status`.
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry; `restarts_off` when not valid.
    current: usize,
    next_off: usize,
    /// Restart interval holding `current`.
    restart_idx: usize,
    key: Vec<u8>,
    value: (usize, usize),
    err: Option<Error>,
}

impl BlockIter {
    fn mark_invalid(&mut self) {
        self.current = self.block.restarts_off;
        self.next_off = self.block.restarts_off;
        self.key.clear();
    }

    fn fail(&mut self, why: &str) {
        if self.err.is_none() {
            self.err = Some(self.block.corruption(why));
        }
        self.mark_invalid();
    }

    fn seek_to_restart(&mut self, i: usize) -> bool {
        match self.block.restart_point(i) {
            Some(p) => {
                self.key.clear();
                self.restart_idx = i;
                self.next_off = p;
                true
            }
            None => {
                self.fail("restart point out of range");
                false
            }
        }
    }

    /// Decodes the entry at `next_off`; false at the end of the block or on corruption.
    fn parse_next(&mut self) -> bool {
        let b = &*self.block;
        self.current = self.next_off;
        if self.current >= b.restarts_off {
            self.mark_invalid();
            return false;
        }
        let Some(e) = b.decode_entry(self.current) else {
            self.fail("malformed block entry");
            return false;
        };
        if e.shared > self.key.len() {
            self.fail("entry shares more bytes than the previous key has");
            return false;
        }
        self.key.truncate(e.shared);
        self.key
            .extend_from_slice(&b.data[e.key_start..e.value_start]);
        if self.key.len() < types::TRAILER_LEN {
            self.fail("internal key shorter than its trailer");
            return false;
        }
        self.value = (e.value_start, e.next);
        self.next_off = e.next;
        while self.restart_idx + 1 < b.num_restarts
            && b.restart_point(self.restart_idx + 1)
                .is_some_and(|p| p <= self.current)
        {
            self.restart_idx += 1;
        }
        true
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.current < self.block.restarts_off
    }

    fn seek_to_first(&mut self) {
        if self.err.is_none() && self.seek_to_restart(0) {
            self.parse_next();
        }
    }

    fn seek_to_last(&mut self) {
        if self.err.is_none() && self.seek_to_restart(self.block.num_restarts - 1) {
            while self.parse_next() && self.next_off < self.block.restarts_off {}
        }
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        // Last restart whose key is < target; the answer is in its interval or the next.
        let (mut lo, mut hi) = (0, self.block.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let Some((k, _, _)) = self.block.restart_entry(mid) else {
                self.fail("malformed restart entry");
                return;
            };
            if compare_internal(k, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        if !self.seek_to_restart(lo) {
            return;
        }
        while self.parse_next() {
            if compare_internal(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if compare_internal(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        // Back up to a restart strictly before the current entry, then scan forward to the
        // entry that ends where the current one starts.
        loop {
            match self.block.restart_point(self.restart_idx) {
                Some(p) if p < original => break,
                Some(_) if self.restart_idx > 0 => self.restart_idx -= 1,
                Some(_) => {
                    self.mark_invalid();
                    return;
                }
                None => return self.fail("restart point out of range"),
            }
        }
        if !self.seek_to_restart(self.restart_idx) {
            return;
        }
        while self.parse_next() {
            match self.next_off.cmp(&original) {
                Ordering::Less => {}
                Ordering::Equal => return,
                Ordering::Greater => return self.fail("restart array disagrees with entries"),
            }
        }
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.block.data[self.value.0..self.value.1]
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// One index entry: the separator's user key, its trailer when it had to keep one, and the
/// data block it points to. A separator without a trailer stands for `(user_key, trailer 0)`,
/// the largest internal key with that user key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub user_key: Vec<u8>,
    pub trailer: Option<u64>,
    pub handle: BlockHandle,
}

/// Index entry value: varint offset, varint size, then an optional 8-byte LE trailer.
pub fn encode_index_value(handle: BlockHandle, trailer: Option<u64>, dst: &mut Vec<u8>) {
    handle.encode_to(dst);
    if let Some(t) = trailer {
        coding::put_u64(dst, t);
    }
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
}

/// The resident index, decoded once at open into a compact form: the separators' common
/// prefix is stored once, the rest of each separator back to back, and each data block by
/// its end offset alone (data blocks are contiguous from offset 0, so block `i` starts where
/// block `i - 1` ends). With db_bench's 16-byte keys this halves the bytes per block against
/// keeping the encoded index block, which keeps index + filter under 2 bytes per key.
pub struct IndexBlock {
    len: usize,
    prefix: Vec<u8>,
    suffixes: Vec<u8>,
    /// Entry `i`'s suffix is `suffixes[key_ends[i - 1]..key_ends[i]]`.
    key_ends: Vec<u32>,
    block_ends: BlockEnds,
    /// (entry, trailer) for the rare separators that need one, by entry.
    trailers: Vec<(u32, u64)>,
    /// First 8 bytes (big-endian, zero-padded) of every `HEAD_STRIDE`-th suffix: a
    /// cache-resident first step that narrows the search to one window of nearby entries,
    /// instead of ~log2(blocks) probes into cold memory.
    heads: Vec<u64>,
    path: Arc<Path>,
    offset: u64,
}

impl IndexBlock {
    /// Validates every entry (framing, contiguous handles inside the data area) and builds
    /// the resident form. `data_limit` is the offset data blocks must end before.
    pub fn new(block: Block, data_limit: u64) -> Result<IndexBlock> {
        let len = if block.restarts_off == 0 {
            0
        } else {
            block.num_restarts
        };
        let mut raw: Vec<(&[u8], BlockHandle, Option<u64>)> = Vec::with_capacity(len);
        let mut prev_end = 0u64;
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
            let trailer = match d.remaining().len() {
                0 => None,
                8 => Some(d.u64().ok_or_else(bad)?),
                _ => return Err(bad()),
            };
            if handle.offset != prev_end || handle.end() > data_limit {
                return Err(block.corruption("index points outside the contiguous data area"));
            }
            prev_end = handle.end();
            raw.push((k, handle, trailer));
        }
        let mut prefix: &[u8] = raw.first().map_or(&[], |r| r.0);
        for (k, _, _) in &raw {
            let n = prefix
                .iter()
                .zip(k.iter())
                .take_while(|(a, b)| a == b)
                .count();
            prefix = &prefix[..n];
        }
        let mut suffixes = Vec::with_capacity(raw.iter().map(|r| r.0.len() - prefix.len()).sum());
        let mut key_ends = Vec::with_capacity(len);
        let mut trailers = Vec::new();
        for (i, (k, _, t)) in raw.iter().enumerate() {
            suffixes.extend_from_slice(&k[prefix.len()..]);
            let end = u32::try_from(suffixes.len())
                .map_err(|_| block.corruption("index separators exceed 4 GiB"))?;
            key_ends.push(end);
            if let Some(t) = t {
                trailers.push((i as u32, *t));
            }
        }
        let block_ends = if prev_end <= u64::from(u32::MAX) {
            BlockEnds::Narrow(raw.iter().map(|r| r.1.end() as u32).collect())
        } else {
            BlockEnds::Wide(raw.iter().map(|r| r.1.end()).collect())
        };
        let mut ix = IndexBlock {
            len,
            prefix: prefix.to_vec(),
            suffixes,
            key_ends,
            block_ends,
            trailers,
            heads: Vec::new(),
            path: Arc::clone(&block.path),
            offset: block.offset,
        };
        ix.heads = (0..len)
            .step_by(HEAD_STRIDE)
            .map(|i| head8(ix.suffix(i)))
            .collect();
        Ok(ix)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held in memory.
    pub fn resident_bytes(&self) -> usize {
        self.prefix.len()
            + self.suffixes.len()
            + self.key_ends.len() * 4
            + self.block_ends.bytes()
            + self.trailers.len() * 12
            + self.heads.len() * 8
    }

    fn suffix(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            self.key_ends[i - 1] as usize
        };
        let end = self.key_ends[i] as usize;
        self.suffixes.get(start..end).unwrap_or(&[])
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
        user_key.extend_from_slice(self.suffix(i));
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
            0
        } else {
            self.block_ends.get(i - 1)
        };
        let end = self.block_ends.get(i);
        let size = end
            .saturating_sub(start)
            .saturating_sub(BLOCK_TRAILER_LEN as u64);
        Ok(BlockHandle::new(start, size))
    }

    /// Starts loading the memory `find(target)` will search after its cache-resident first
    /// step: the window's end offsets and separator bytes (and the block's end offset).
    pub fn prefetch(&self, target: &[u8]) {
        let (tu, _) = types::split_internal(target).unwrap_or((target, 0));
        let Some(rest) = tu.strip_prefix(&self.prefix[..]) else {
            return;
        };
        let th = head8(rest);
        let below = self.heads.partition_point(|&h| h < th);
        let lo = below.saturating_sub(1) * HEAD_STRIDE;
        let mid = (lo + HEAD_STRIDE / 2).min(self.len.saturating_sub(1));
        prefetch::read_at(&self.key_ends, lo);
        prefetch::read_at(&self.key_ends, mid);
        if let Some(&at) = self.key_ends.get(mid) {
            prefetch::read_at(&self.suffixes, at as usize);
        }
        match &self.block_ends {
            BlockEnds::Narrow(v) => prefetch::read_at(v, mid),
            BlockEnds::Wide(v) => prefetch::read_at(v, mid),
        }
    }

    /// The first block whose separator is >= `target`: the only block that can hold the
    /// first entry >= `target`. `None` when `target` is past every key in the file.
    pub fn find(&self, target: &[u8]) -> Result<Option<usize>> {
        let (tu, tt) = types::split_internal(target).unwrap_or((target, 0));
        // Every separator starts with `prefix`: compare it once, then only the suffixes.
        let p = self.prefix.len();
        match tu.get(..p).map(|head| head.cmp(&self.prefix[..])) {
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
        // Heads are monotonic in the suffixes: a group whose head is below the target's
        // starts below the target, and one whose head is above starts above it.
        let th = head8(rest);
        let below = self.heads.partition_point(|&h| h < th);
        let not_above = below + self.heads[below..].partition_point(|&h| h <= th);
        let mut lo = below.saturating_sub(1) * HEAD_STRIDE;
        let mut hi = (not_above * HEAD_STRIDE).min(self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let ord = cmp_short(self.suffix(mid), rest)
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

/// Every this-many index entries, one head in `IndexBlock::heads`.
const HEAD_STRIDE: usize = 16;

fn head8(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(a)
}

/// Byte order of two short slices (separator suffixes are a few bytes): an inline loop
/// beats a `memcmp` call at these lengths.
#[inline]
fn cmp_short(a: &[u8], b: &[u8]) -> Ordering {
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
    use crate::types::make_internal_key;

    fn build(n: usize, interval: usize) -> (Arc<Block>, Vec<Vec<u8>>) {
        let mut b = BlockBuilder::new(interval);
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|i| make_internal_key(format!("key{:04}", i * 2).as_bytes(), 5, 1))
            .collect();
        for k in &keys {
            b.add(k, &k[..3]);
        }
        let data = b.finish();
        let block = Block::new(data, Arc::from(Path::new("t.sst")), 0).expect("valid block");
        (Arc::new(block), keys)
    }

    #[test]
    fn iterates_both_ways_and_seeks() {
        for interval in [1, 2, 3, 16] {
            let (block, keys) = build(37, interval);
            let mut it = block.iter();
            it.seek_to_first();
            for k in &keys {
                assert_eq!(it.key(), &k[..]);
                it.next();
            }
            assert!(!it.valid());
            it.seek_to_last();
            for k in keys.iter().rev() {
                assert_eq!(it.key(), &k[..]);
                it.prev();
            }
            assert!(!it.valid());
            for i in 0..=74 {
                let t = make_internal_key(format!("key{:04}", i).as_bytes(), 5, 1);
                it.seek(&t);
                let want = keys.iter().find(|k| compare_internal(k, &t).is_ge());
                assert_eq!(it.valid().then(|| it.key().to_vec()), want.cloned());
                it.seek_for_prev(&t);
                let want = keys.iter().rev().find(|k| compare_internal(k, &t).is_le());
                assert_eq!(it.valid().then(|| it.key().to_vec()), want.cloned());
            }
            assert!(it.status().is_ok());
        }
    }

    #[test]
    fn garbage_never_panics() {
        let (block, _) = build(20, 4);
        let good = block.data().to_vec();
        for i in 0..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut d = good.clone();
                d[i] ^= x;
                let Ok(b) = Block::new(d, Arc::from(Path::new("t")), 0) else {
                    continue;
                };
                let b = Arc::new(b);
                let mut it = b.iter();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() && n < 100 {
                    it.next();
                    n += 1;
                }
                it.seek_to_last();
                while it.valid() && n < 200 {
                    it.prev();
                    n += 1;
                }
                it.seek(b"key0010\0\0\0\0\0\0\0\0");
                it.seek_for_prev(b"key0010\0\0\0\0\0\0\0\0");
            }
        }
    }
}
