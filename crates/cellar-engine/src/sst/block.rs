//! Block contents (after decompression): prefix-compressed entries followed by a restart
//! array.
//!
//! ```text
//! entry*  restart_offset: u32 LE * num_restarts  num_restarts: u32 LE
//! entry = varint shared | varint non_shared | varint value_len | key[shared..] | value
//! ```
//! Every `restart_interval`-th entry stores its whole key (`shared == 0`) and its offset is
//! listed in the restart array, so a seek binary-searches restarts and then scans at most
//! one interval. Data blocks hold internal keys; index blocks (interval 1) are read
//! through [`IndexBlock`](crate::sst::index::IndexBlock).

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use smallvec::SmallVec;

use crate::coding::{self, Decoder};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;

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

/// A decoded (uncompressed) block, remembering where it came from for error messages. Its
/// bytes are its own (read and decompressed) or a slice of the file's memory map (a stored
/// uncompressed block read in place, `sst/source.rs`).
pub struct Block {
    data: Bytes,
    /// Heap bytes the block holds: what the block cache is charged for it.
    held: usize,
    pub(super) restarts_off: usize,
    pub(super) num_restarts: usize,
    pub(super) path: Arc<Path>,
    pub(super) offset: u64,
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
        let held = data.capacity();
        Block::from_bytes(Bytes::from(data), held, path, offset)
    }

    /// [`new`](Self::new) for bytes that stay in the file's memory map: no heap bytes held.
    pub fn mapped(data: Bytes, path: Arc<Path>, offset: u64) -> Result<Block> {
        Block::from_bytes(data, 0, path, offset)
    }

    fn from_bytes(data: Bytes, held: usize, path: Arc<Path>, offset: u64) -> Result<Block> {
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
        // Every block starts a restart at its first entry; `restart_point` relies on it.
        if coding::get_u32(&data, restarts_off) != Some(0) {
            return Err(corrupt("first restart point is not at offset 0"));
        }
        Ok(Block {
            data,
            held,
            restarts_off,
            num_restarts: n,
            path,
            offset,
        })
    }

    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The bytes a point lookup in this block reads first, for a prefetch before the block
    /// is reached: every entry of a block asked for whole (`entries_if_few_intervals`), else
    /// the restart array.
    pub fn lookup_bytes(&self) -> &[u8] {
        let bytes = self
            .entries_if_few_intervals()
            .unwrap_or(self.restarts_off..self.data.len());
        self.data.get(bytes).unwrap_or_default()
    }

    /// Every entry's bytes, if the block has at most `WHOLE_BLOCK_MAX_INTERVALS` restart
    /// intervals: the blocks a seek asks for whole.
    fn entries_if_few_intervals(&self) -> Option<std::ops::Range<usize>> {
        (self.num_restarts <= WHOLE_BLOCK_MAX_INTERVALS).then_some(0..self.restarts_off)
    }

    /// Memory charged to the block cache.
    pub fn charge(&self) -> usize {
        self.held + std::mem::size_of::<Block>()
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
        Arc::clone(self).into_iter_with(Vec::new())
    }

    /// An iterator that owns `self` and builds its keys in `key` (cleared): an SST
    /// iterator's step to the next block hands over the buffer of the block iterator it
    /// replaces, instead of a fresh one per block.
    pub fn into_iter_with(self: Arc<Self>, mut key: Vec<u8>) -> BlockIter {
        key.clear();
        BlockIter {
            current: self.restarts_off,
            next_off: self.restarts_off,
            block: self,
            restart_idx: 0,
            key,
            value: (0, 0),
            behind: Behind::default(),
            err: None,
            #[cfg(test)]
            decoded: 0,
        }
    }

    /// A `Corruption` error naming this block's file and offset.
    pub fn corruption(&self, why: &str) -> Error {
        Error::corruption(&*self.path, self.offset, why.to_string())
    }

    /// Offset of restart `i`, which must point into the entry area.
    pub(super) fn restart_point(&self, i: usize) -> Option<usize> {
        // Restart 0 is at offset 0 (checked in `new`). Answering without the array saves a
        // lookup one cache miss when the block has a single restart point, as blocks of
        // values over ~256 bytes do (four 1.1 KB YCSB records per 4 KiB block): the restart
        // array sits at the block's end, in a line nothing else of the lookup touches.
        if i == 0 {
            return Some(0);
        }
        let p = coding::get_u32(
            &self.data,
            self.restarts_off.checked_add(i.checked_mul(4)?)?,
        )?;
        let p = p as usize;
        (p <= self.restarts_off).then_some(p)
    }

    /// Before a seek's restart search: asks for the whole block at once when it has at most
    /// `WHOLE_BLOCK_MAX_INTERVALS` restart intervals, and says whether it did. Such a block's
    /// entries are large (three intervals of at most 16 entries in 4 KiB with 100-byte
    /// values), so the interval the seek walks is a third of it or more, and the restart
    /// entries the search reads are then in flight beside the restart array instead of missed
    /// after it.
    fn prefetch_if_few_intervals(&self) -> bool {
        let Some(entries) = self.entries_if_few_intervals() else {
            return false;
        };
        self.prefetch_bytes(entries);
        true
    }

    /// Asks for every cache line of restart interval `i` at once, before a seek walks it.
    /// Each entry's place is known only once the entry before it is decoded, so the walk's
    /// loads, one or two lines apart, would otherwise miss one after another: with 100-byte
    /// values a 16-entry interval spans ~32 lines (docs/design/point-lookup-cpu.md, "The
    /// interval asked for at once").
    fn prefetch_interval(&self, i: usize) {
        if let Some(bytes) = self.interval(i) {
            self.prefetch_bytes(bytes);
        }
    }

    /// Asks for one address in every `CACHE_LINE` bytes of `bytes`.
    fn prefetch_bytes(&self, bytes: std::ops::Range<usize>) {
        for at in bytes.step_by(CACHE_LINE) {
            prefetch::read_at(&self.data, at);
        }
    }

    /// The bytes of restart interval `i`: from its restart point to the next one, or to the
    /// restart array after the last. `None` when `i` or its restart point is out of range.
    fn interval(&self, i: usize) -> Option<std::ops::Range<usize>> {
        if i >= self.num_restarts {
            return None;
        }
        let start = self.restart_point(i)?;
        let end = if i + 1 < self.num_restarts {
            self.restart_point(i + 1)?
        } else {
            self.restarts_off
        };
        (start <= end).then_some(start..end)
    }

    // Every step of a scan decodes one entry: inlined into `parse_next` whatever the
    // compiler's heuristics decide that day (docs/design/codegen.md).
    #[inline(always)]
    fn decode_entry(&self, off: usize) -> Option<EntryLoc> {
        let entry = self.data.get(off..self.restarts_off)?;
        // Small keys and values (the common case) have three one-byte lengths: read them
        // without the general varint decoder.
        let (shared, non_shared, value_len, header) = match entry {
            [a, b, c, ..] if (a | b | c) < 0x80 => (*a as usize, *b as usize, *c as usize, 3),
            _ => {
                let mut d = Decoder::new(entry);
                let lens = (d.varint_usize()?, d.varint_usize()?, d.varint_usize()?);
                (lens.0, lens.1, lens.2, d.position())
            }
        };
        let key_start = off + header;
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
    pub(super) fn restart_entry(&self, i: usize) -> Option<(&[u8], &[u8], usize)> {
        let e = self.decode_entry(self.restart_point(i)?)?;
        (e.shared == 0).then(|| {
            (
                &self.data[e.key_start..e.value_start],
                &self.data[e.value_start..e.next],
                e.next,
            )
        })
    }

    /// The last restart whose key is below `target` (0 when none is): the first entry
    /// `>= target` is in its interval or the next. `None` when a restart entry is damaged.
    fn restart_before(&self, target: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let (k, _, _) = self.restart_entry(mid)?;
            if compare_internal(k, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }

    /// A point lookup's seek: the value of the first entry `>= target`, whose internal key
    /// it leaves in `key`; `None` when every entry is below `target`. What [`BlockIter::seek`]
    /// finds, without an iterator: a lookup takes no reference to the block, keeps no
    /// position to step from, and builds a key (in the caller's buffer, on its stack for
    /// user keys of up to 88 bytes) only when it cannot tell from the target alone where the
    /// key sorts (see `below_at`; docs/design/point-lookup-cpu.md).
    pub fn seek_point<'a>(&'a self, target: &[u8], key: &mut PointKey) -> Result<Option<&'a [u8]>> {
        let (tu, tt) = types::split_internal(target).unwrap_or((target, 0));
        let whole = self.prefetch_if_few_intervals();
        let start = self
            .restart_before(target)
            .ok_or_else(|| self.corruption("malformed restart entry"))?;
        let mut off = self
            .restart_point(start)
            .ok_or_else(|| self.corruption("restart point out of range"))?;
        if !whole {
            self.prefetch_interval(start);
        }
        key.clear();
        // The length of the key last decoded.
        let mut key_len = 0;
        // When the key last decoded sorts below `target` at a byte `m` of both user keys (its
        // first `m` bytes are the target's, its byte `m` is smaller), `Some(m)`, and `key` is
        // stale: a key sharing more than `m` bytes with it sorts below too (its user key
        // differs from the target's at `m` the same way, or is a shorter prefix of it), and
        // one sharing fewer starts with the target's bytes, so neither needs `key`.
        let mut below_at: Option<usize> = None;
        while off < self.restarts_off {
            let e = self
                .decode_entry(off)
                .ok_or_else(|| self.corruption("malformed block entry"))?;
            if e.shared > key_len {
                return Err(self.corruption("entry shares more bytes than the previous key has"));
            }
            key_len = e.shared + (e.value_start - e.key_start);
            if key_len < types::TRAILER_LEN {
                return Err(self.corruption("internal key shorter than its trailer"));
            }
            off = e.next;
            let suffix = &self.data[e.key_start..e.value_start];
            let (order, at) = match below_at {
                Some(m) if e.shared > m => continue,
                Some(_) => {
                    let (order, at) = compare_suffix(e.shared, suffix, tu, tt);
                    if at.is_none() {
                        key.clear();
                        key.extend_from_slice(&tu[..e.shared]);
                        key.extend_from_slice(suffix);
                    }
                    (order, at)
                }
                None => {
                    key.truncate(e.shared);
                    key.extend_from_slice(suffix);
                    compare_suffix(0, key, tu, tt)
                }
            };
            if order != Ordering::Less {
                return Ok(Some(&self.data[e.value_start..e.next]));
            }
            below_at = at;
        }
        Ok(None)
    }
}

/// The CPU's cache line: prefetches of a range ask for one per line.
pub(crate) const CACHE_LINE: usize = 64;

/// Blocks of at most this many restart intervals are asked for whole before a seek
/// (`Block::prefetch_if_few_intervals`); larger ones, of smaller entries, only the interval
/// walked.
const WHOLE_BLOCK_MAX_INTERVALS: usize = 4;

/// How the internal key `tu[..shared] ++ suffix` (at least a trailer long; `shared` at most
/// `tu.len()`) sorts against the internal key `tu ++ tt`, and, when it sorts below at a byte
/// both user keys have, that byte's position.
fn compare_suffix(shared: usize, suffix: &[u8], tu: &[u8], tt: u64) -> (Ordering, Option<usize>) {
    let Some(user_len) = (shared + suffix.len()).checked_sub(types::TRAILER_LEN) else {
        return (Ordering::Less, None);
    };
    // A user key that ends within the shared bytes is a shorter prefix of the target's.
    let Some(rest) = user_len.checked_sub(shared) else {
        return (Ordering::Less, None);
    };
    let (ku_rest, trailer) = suffix.split_at(rest);
    let Some(tu_rest) = tu.get(shared..) else {
        return (Ordering::Less, None);
    };
    match ku_rest.iter().zip(tu_rest).position(|(a, b)| a != b) {
        Some(i) if ku_rest[i] < tu_rest[i] => (Ordering::Less, Some(shared + i)),
        Some(_) => (Ordering::Greater, None),
        None => {
            let mut t = [0u8; types::TRAILER_LEN];
            t.copy_from_slice(trailer);
            let kt = u64::from_le_bytes(t);
            (user_len.cmp(&tu.len()).then_with(|| tt.cmp(&kt)), None)
        }
    }
}

/// The key buffer of [`Block::seek_point`]: inline up to 96 bytes, an internal key of the
/// up-to-64-byte user keys this store is made for, and its 8-byte trailer.
pub type PointKey = SmallVec<[u8; 96]>;

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
    /// The entries before `current` in its restart interval, decoded by the last `prev`
    /// that had to start over from a restart point (see [`Behind`]).
    behind: Behind,
    err: Option<Error>,
    /// Entries decoded so far (tests count the work of a walk).
    #[cfg(test)]
    decoded: usize,
}

/// The entries a backward walk has decoded and not yet returned. Keys are prefix-coded, so
/// stepping back means decoding forward from a restart point; keeping what that decoded
/// makes a walk over an interval of n entries decode each once instead of n²/2 times.
#[derive(Default)]
struct Behind {
    /// Per entry, oldest first: its offset, the end of its key in `keys`, its value range
    /// and the offset after it.
    entries: Vec<BehindEntry>,
    keys: Vec<u8>,
}

struct BehindEntry {
    offset: usize,
    key_end: usize,
    value: (usize, usize),
    next: usize,
}

impl Behind {
    /// Whether the last entry kept is the one just before offset `current`. The block never
    /// changes, so a kept entry that ends where the current one starts is its predecessor.
    fn precedes(&self, current: usize) -> bool {
        self.entries.last().is_some_and(|e| e.next == current)
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.keys.clear();
    }
}

impl BlockIter {
    /// The buffer the iterator built its keys in, for the next block's iterator.
    pub fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

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
        #[cfg(test)]
        {
            self.decoded += 1;
        }
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

impl BlockIter {
    /// Decodes the entries of `original`'s restart interval that come before it (the
    /// previous interval's, when `original` starts one) into `behind`; false when there is
    /// none (the iterator is then invalid) or the block is damaged.
    fn decode_behind(&mut self, original: usize) -> bool {
        // Back up to a restart strictly before the current entry.
        loop {
            match self.block.restart_point(self.restart_idx) {
                Some(p) if p < original => break,
                Some(_) if self.restart_idx > 0 => self.restart_idx -= 1,
                Some(_) => {
                    self.mark_invalid();
                    return false;
                }
                None => {
                    self.fail("restart point out of range");
                    return false;
                }
            }
        }
        if !self.seek_to_restart(self.restart_idx) {
            return false;
        }
        self.behind.clear();
        while self.parse_next() {
            let b = &mut self.behind;
            b.keys.extend_from_slice(&self.key);
            b.entries.push(BehindEntry {
                offset: self.current,
                key_end: b.keys.len(),
                value: self.value,
                next: self.next_off,
            });
            match self.next_off.cmp(&original) {
                Ordering::Less => {}
                Ordering::Equal => return true,
                Ordering::Greater => {
                    self.behind.clear();
                    self.fail("restart array disagrees with entries");
                    return false;
                }
            }
        }
        self.behind.clear();
        false
    }

    /// Makes the last entry kept in `behind` the current one.
    fn pop_behind(&mut self) {
        let Some(e) = self.behind.entries.pop() else {
            return;
        };
        let key_start = self.behind.entries.last().map_or(0, |p| p.key_end);
        self.key.clear();
        self.key
            .extend_from_slice(&self.behind.keys[key_start..e.key_end]);
        self.behind.keys.truncate(key_start);
        self.current = e.offset;
        self.next_off = e.next;
        self.value = e.value;
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
        let whole = self.block.prefetch_if_few_intervals();
        let Some(lo) = self.block.restart_before(target) else {
            self.fail("malformed restart entry");
            return;
        };
        if !whole {
            self.block.prefetch_interval(lo);
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
        if !self.behind.precedes(original) && !self.decode_behind(original) {
            return;
        }
        self.pop_behind();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{make_internal_key, KIND_FOR_SEEK};
    use proptest::prelude::*;

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

    /// The bytes a seek asks for before walking (`prefetch_interval`) are exactly the
    /// entries of the interval it walks: every one of them, and nothing past the next
    /// restart point or into the restart array.
    #[test]
    fn an_interval_spans_its_entries_and_no_more() {
        for (n, interval) in [(37, 16), (37, 5), (16, 16), (1, 16), (9, 1)] {
            let (block, keys) = build(n, interval);
            let mut covered = 0;
            for i in 0..block.num_restarts {
                let bytes = block.interval(i).expect("interval in range");
                assert_eq!(
                    bytes.start, covered,
                    "interval {i} starts where the one before ends"
                );
                let mut off = bytes.start;
                let mut entries = 0;
                while off < bytes.end {
                    off = block.decode_entry(off).expect("entry").next;
                    entries += 1;
                }
                assert_eq!(off, bytes.end, "interval {i} ends at an entry's end");
                let want = interval.min(n - i * interval);
                assert_eq!(
                    entries, want,
                    "entries of interval {i} ({n} keys, every {interval})"
                );
                covered = bytes.end;
            }
            assert_eq!(covered, block.restarts_off, "{} keys", keys.len());
            assert!(block.interval(block.num_restarts).is_none());
        }
    }

    /// A lookup's first bytes: every entry of a block of a few intervals, the restart array
    /// (to the block's end) of any other.
    #[test]
    fn lookup_bytes_are_the_entries_or_the_restart_array() {
        for (n, interval) in [(37, 16), (64, 16), (65, 16), (37, 5), (1, 16)] {
            let (block, _) = build(n, interval);
            let bytes = block.lookup_bytes();
            let start = bytes.as_ptr() as usize - block.data().as_ptr() as usize;
            let range = start..start + bytes.len();
            if block.num_restarts <= WHOLE_BLOCK_MAX_INTERVALS {
                assert_eq!(range, 0..block.restarts_off, "{n} keys, every {interval}");
            } else {
                assert_eq!(range, block.restarts_off..block.data().len(), "{n} keys");
            }
        }
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
            let mut point_key = PointKey::new();
            for i in 0..=74 {
                let t = make_internal_key(format!("key{:04}", i).as_bytes(), 5, 1);
                it.seek(&t);
                let want = keys.iter().find(|k| compare_internal(k, &t).is_ge());
                assert_eq!(it.valid().then(|| it.key().to_vec()), want.cloned());
                // A point seek finds the same entry, and its value.
                let value = block.seek_point(&t, &mut point_key).expect("point seek");
                assert_eq!(value.map(|_| point_key.to_vec()), want.cloned());
                assert_eq!(value, want.map(|k| &k[..3]));
                it.seek_for_prev(&t);
                let want = keys.iter().rev().find(|k| compare_internal(k, &t).is_le());
                assert_eq!(it.valid().then(|| it.key().to_vec()), want.cloned());
            }
            assert!(it.status().is_ok());
        }
    }

    /// Entries whose lengths take one varint byte each and entries with any length of 128
    /// or more (two bytes) read back the same, mixed in one block.
    #[test]
    fn entries_with_one_and_two_byte_lengths_read_back() {
        for interval in [1, 4] {
            let mut b = BlockBuilder::new(interval);
            let mut want = Vec::new();
            for i in 0..40usize {
                // Every third key is long, every fifth value is long; shared prefixes vary.
                let user = match i % 3 {
                    0 => format!("k{i:03}{}", "x".repeat(150)),
                    _ => format!("k{i:03}"),
                };
                let key = make_internal_key(user.as_bytes(), 5, 1);
                let value = vec![i as u8; if i % 5 == 0 { 130 + i } else { i }];
                b.add(&key, &value);
                want.push((key, value));
            }
            let block = Block::new(b.finish(), Arc::from(Path::new("t.sst")), 0).expect("block");
            let mut it = Arc::new(block).iter();
            it.seek_to_first();
            for (k, v) in &want {
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                it.next();
            }
            assert!(!it.valid());
            assert!(it.status().is_ok());
        }
    }

    /// A backward walk decodes each restart interval once, whatever its length, and a walk
    /// that turns back and forth returns every key with its own value.
    #[test]
    fn backward_walks_decode_each_interval_once() {
        for interval in [1, 3, 16] {
            let (block, keys) = build(64, interval);
            let mut it = block.iter();
            it.seek_to_last();
            let before = it.decoded;
            for k in keys.iter().rev() {
                assert_eq!(it.key(), &k[..]);
                assert_eq!(it.value(), &k[..3]);
                it.prev();
            }
            assert!(!it.valid());
            let walk = it.decoded - before;
            assert!(
                walk <= keys.len() + 1,
                "interval {interval}: {walk} decodes"
            );

            // Two steps back, one forward, from the end to the start.
            it.seek_to_last();
            let mut at = keys.len() - 1;
            while at >= 2 {
                it.prev();
                it.prev();
                it.next();
                at -= 1;
                assert_eq!(it.key(), &keys[at][..], "interval {interval}");
                assert_eq!(it.value(), &keys[at][..3]);
            }
            assert!(it.status().is_ok());
        }
    }

    /// Seeks answer restart 0 without reading the restart array, so a block whose first
    /// restart is not at offset 0 must be rejected when it is loaded, not misread.
    #[test]
    fn first_restart_must_be_at_offset_zero() {
        let (block, _) = build(20, 4);
        let mut d = block.data().to_vec();
        let restarts_off = d.len() - 4 - 4 * block.num_restarts;
        d[restarts_off] = 7;
        match Block::new(d, Arc::from(Path::new("t")), 0) {
            Err(Error::Corruption { reason, .. }) => assert!(reason.contains("offset 0")),
            other => panic!(
                "accepted a block whose first restart is 7: {:?}",
                other.is_ok()
            ),
        }
    }

    fn user_keys() -> impl Strategy<Value = Vec<u8>> {
        // Two letters and short lengths: many keys are prefixes of others or share most of
        // their bytes, which is where a point seek skips keys by their shared prefix.
        proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 0..7)
    }

    proptest! {
        /// A point seek finds the entry and value an iterator's seek finds, for any keys
        /// (prefixes of one another, many versions of one user key) and any target.
        #[test]
        fn point_seek_finds_what_an_iterator_seek_finds(
            entries in proptest::collection::vec((user_keys(), 0u64..4), 0..60),
            targets in proptest::collection::vec((user_keys(), 0u64..5), 1..30),
            interval in prop::sample::select(vec![1usize, 2, 16]),
        ) {
            let mut keys: Vec<Vec<u8>> =
                entries.iter().map(|(u, s)| make_internal_key(u, *s, 1)).collect();
            keys.sort_by(|a, b| compare_internal(a, b));
            keys.dedup();
            prop_assume!(!keys.is_empty());
            let mut b = BlockBuilder::new(interval);
            for (i, k) in keys.iter().enumerate() {
                b.add(k, i.to_string().as_bytes());
            }
            let block = Arc::new(
                Block::new(b.finish(), Arc::from(Path::new("t")), 0).expect("valid block"),
            );
            let mut it = block.iter();
            let mut key = PointKey::new();
            for (u, seq) in targets {
                let t = make_internal_key(&u, seq, KIND_FOR_SEEK);
                it.seek(&t);
                let want = it.valid().then(|| (it.key().to_vec(), it.value().to_vec()));
                let got = block.seek_point(&t, &mut key).expect("point seek");
                prop_assert_eq!(got.map(|v| (key.to_vec(), v.to_vec())), want);
            }
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
                for t in [&b"key0010\0\0\0\0\0\0\0\0"[..], b"key0039\0\0\0\0\0\0\0\0"] {
                    let _ = b.seek_point(t, &mut PointKey::new());
                }
            }
        }
    }
}
