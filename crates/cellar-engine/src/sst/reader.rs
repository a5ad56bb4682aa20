//! Reads an SST: footer, index, filter and properties at open (the index and filter stay
//! resident), data blocks on demand through the block cache.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::block::{Block, BlockIter, IndexBlock};
use crate::sst::bloom::{key_hash, BloomFilter};
use crate::sst::cache::BlockCache;
use crate::sst::format::{
    decode_block, decode_block_slice, BlockHandle, Footer, Properties, FOOTER_LEN, MAX_BLOCK_LEN,
};
use crate::stats::Counters;
use crate::types::{self, lookup_key, ValueKind};
use crate::vfs::RandomAccessFile;

/// A coalesced `multi_get` read never spans more than this (unless one block is larger).
pub const MAX_COALESCED_READ: u64 = 256 << 10;

/// The newest version of a key visible at the requested sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupResult {
    Found { seq: u64, value: Vec<u8> },
    Deleted { seq: u64 },
}

/// Cheap to clone: every clone and every iterator shares one `Inner`.
#[derive(Clone)]
pub struct SstReader {
    inner: Arc<Inner>,
    /// For an ingested file: every entry is stored with sequence 0 and read as if written
    /// with this sequence number (one entry per user key, see `db/ingest.rs`).
    global_seq: Option<u64>,
}

struct Inner {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    shared_path: Arc<Path>,
    file_number: u64,
    cache: Arc<BlockCache>,
    counters: Arc<Counters>,
    footer: Footer,
    index: IndexBlock,
    filter: Option<BloomFilter>,
    props: Properties,
    /// Start of the footer: every block must end at or before it.
    meta_limit: u64,
}

/// What follows a read: reads elsewhere in the file (lookups, metadata at open), or the
/// next bytes (iterators, checksum verification). The Vfs reads ahead only for `Scan`
/// (`RandomAccessFile::read_exact_at_scan`): ahead of a lookup it only delays the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Point,
    Scan,
}

/// One pread of `len` bytes at `offset`, counted as a device read.
fn pread(
    file: &dyn RandomAccessFile,
    counters: &Counters,
    offset: u64,
    len: u64,
    access: Access,
) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    match access {
        Access::Point => file.read_exact_at(&mut buf, offset)?,
        Access::Scan => file.read_exact_at_scan(&mut buf, offset)?,
    }
    Counters::add(&counters.device_reads, 1);
    Counters::add(&counters.device_read_bytes, len);
    Ok(buf)
}

fn check_handle(path: &Path, h: BlockHandle, limit: u64) -> Result<()> {
    if h.size > MAX_BLOCK_LEN || h.end() > limit {
        return Err(Error::corruption(
            path,
            h.offset,
            format!(
                "block handle (offset {}, size {}) outside the file",
                h.offset, h.size
            ),
        ));
    }
    Ok(())
}

/// Reads, checks and decompresses one block (no cache).
fn read_block_contents(
    file: &dyn RandomAccessFile,
    path: &Path,
    counters: &Counters,
    limit: u64,
    h: BlockHandle,
    access: Access,
) -> Result<Vec<u8>> {
    check_handle(path, h, limit)?;
    let raw = pread(file, counters, h.offset, h.len_with_trailer(), access)?;
    decode_block(path, h.offset, raw)
}

impl SstReader {
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        cache: Arc<BlockCache>,
        counters: Arc<Counters>,
    ) -> Result<SstReader> {
        let size = file.size();
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &path,
                0,
                format!("file is {size} bytes, shorter than an SST footer"),
            ));
        }
        let meta_limit = size - FOOTER_LEN as u64;
        let raw = pread(
            &*file,
            &counters,
            meta_limit,
            FOOTER_LEN as u64,
            Access::Point,
        )?;
        let footer = Footer::decode(&path, meta_limit, &raw)?;
        let shared_path: Arc<Path> = Arc::from(path.as_path());
        let read = |h| read_block_contents(&*file, &path, &counters, meta_limit, h, Access::Point);

        let index_block = Block::new(
            read(footer.index)?,
            shared_path.clone(),
            footer.index.offset,
        )?;
        let index = IndexBlock::new(index_block, meta_limit)?;
        let filter = if footer.has_filter() {
            let h = footer.filter;
            Some(BloomFilter::from_block(&path, h.offset, read(h)?)?)
        } else {
            None
        };
        let h = footer.properties;
        let props = Properties::decode(&path, h.offset, &read(h)?)?;
        if props.num_data_blocks != index.len() as u64 {
            return Err(Error::corruption(
                &path,
                footer.index.offset,
                "index entry count disagrees with properties",
            ));
        }
        Ok(SstReader {
            global_seq: None,
            inner: Arc::new(Inner {
                file,
                path,
                shared_path,
                file_number,
                cache,
                counters,
                footer,
                index,
                filter,
                props,
                meta_limit,
            }),
        })
    }

    /// Reads every entry as if written with sequence `g` (the file must store sequence 0).
    pub fn with_global_seq(mut self, g: Option<u64>) -> Self {
        self.global_seq = g;
        self
    }

    pub fn global_seq(&self) -> Option<u64> {
        self.global_seq
    }

    /// The sequence to probe with for a read at `seq`, or `None` when this file's entries
    /// are all newer than `seq`.
    fn probe_seq(&self, seq: u64) -> Option<u64> {
        match self.global_seq {
            None => Some(seq),
            Some(g) if g <= seq => Some(types::MAX_SEQ),
            Some(_) => None,
        }
    }

    fn restamp(&self, r: LookupResult) -> LookupResult {
        match (self.global_seq, r) {
            (Some(g), LookupResult::Found { value, .. }) => LookupResult::Found { seq: g, value },
            (Some(g), LookupResult::Deleted { .. }) => LookupResult::Deleted { seq: g },
            (None, r) => r,
        }
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn file_number(&self) -> u64 {
        self.inner.file_number
    }

    pub fn properties(&self) -> &Properties {
        &self.inner.props
    }

    pub fn footer(&self) -> &Footer {
        &self.inner.footer
    }

    /// The resident index (for `cellar inspect`: `len()`, `entry(i)`).
    pub fn index(&self) -> &IndexBlock {
        &self.inner.index
    }

    pub fn file_size(&self) -> u64 {
        self.inner.file.size()
    }

    /// Bytes of index and filter held in memory for the life of the reader.
    pub fn resident_bytes(&self) -> u64 {
        let filter = self.inner.filter.as_ref().map_or(0, |f| f.resident_bytes());
        (self.inner.index.resident_bytes() + filter) as u64
    }

    /// The bloom filter's answer (true when the file has no filter).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.inner
            .filter
            .as_ref()
            .is_none_or(|f| f.may_contain(user_key))
    }

    pub fn data_block_handles(&self) -> Result<Vec<BlockHandle>> {
        let ix = &self.inner.index;
        (0..ix.len()).map(|i| ix.handle(i)).collect()
    }

    /// Reads one block bypassing the cache (for inspection); iterate it with `Block::iter`.
    pub fn read_block(&self, h: BlockHandle) -> Result<Arc<Block>> {
        Ok(Arc::new(self.inner.read_block_uncached(h, Access::Point)?))
    }

    /// Reads every block from disk, checking crc, decompression and entry framing.
    pub fn verify_checksums(&self) -> Result<()> {
        let inner = &*self.inner;
        let f = &inner.footer;
        let mut meta = vec![f.index, f.properties];
        if f.has_filter() {
            meta.push(f.filter);
        }
        for h in meta {
            read_block_contents(
                &*inner.file,
                &inner.path,
                &inner.counters,
                inner.meta_limit,
                h,
                Access::Scan,
            )?;
        }
        for h in self.data_block_handles()? {
            let block = Arc::new(inner.read_block_uncached(h, Access::Scan)?);
            let mut it = block.iter();
            it.seek_to_first();
            while it.valid() {
                it.next();
            }
            it.status()?;
        }
        Ok(())
    }

    /// Newest entry of `user_key` with sequence <= `seq`; `None` if this file has none.
    pub fn get(&self, user_key: &[u8], seq: u64) -> Result<Option<LookupResult>> {
        let inner = &*self.inner;
        let Some(seq) = self.probe_seq(seq) else {
            return Ok(None);
        };
        if !inner.filter_admits(user_key) {
            return Ok(None);
        }
        let target = lookup_key(user_key, seq);
        let found = match inner.index.find(&target)? {
            // Every separator is below target: so is every key of the file.
            None => None,
            Some(i) => {
                let block = inner.data_block(i, true, Access::Point)?;
                lookup_in_block(&block, user_key, &target)?
            }
        };
        inner.note_miss(found.is_none());
        Ok(found.map(|r| self.restamp(r)))
    }

    /// Looks up every `keys[i]` (ascending user keys) whose `results[i]` is `None`, reading
    /// each needed block once and runs of adjacent uncached blocks with one pread.
    pub fn multi_get(
        &self,
        keys: &[&[u8]],
        seq: u64,
        results: &mut [Option<LookupResult>],
    ) -> Result<()> {
        if keys.len() != results.len() {
            return Err(Error::InvalidArgument(
                "multi_get: keys and results differ in length".into(),
            ));
        }
        let inner = &*self.inner;
        let Some(seq) = self.probe_seq(seq) else {
            return Ok(());
        };
        // Each step below first asks the CPU for the memory the next one reads, for every
        // key, so the cache misses of the batch overlap (see `prefetch`): bloom lines, then
        // index windows, then (further down) the blocks' restart arrays.
        let pending: Vec<usize> = (0..keys.len()).filter(|&i| results[i].is_none()).collect();
        let mut admitted: Vec<(usize, Vec<u8>)> = Vec::with_capacity(pending.len());
        match &inner.filter {
            Some(f) => {
                let hashes: Vec<u64> = pending.iter().map(|&i| key_hash(keys[i])).collect();
                for &h in &hashes {
                    f.prefetch(h);
                }
                for (&i, &h) in pending.iter().zip(&hashes) {
                    if f.may_contain_hash(h) {
                        admitted.push((i, lookup_key(keys[i], seq)));
                    } else {
                        Counters::add(&inner.counters.bloom_negatives, 1);
                    }
                }
            }
            None => admitted.extend(pending.iter().map(|&i| (i, lookup_key(keys[i], seq)))),
        }
        for (_, target) in &admitted {
            inner.index.prefetch(target);
        }
        // (block ordinal, key index, lookup key)
        let mut probes: Vec<(usize, usize, Vec<u8>)> = Vec::with_capacity(admitted.len());
        for (i, target) in admitted {
            match inner.index.find(&target)? {
                Some(b) => probes.push((b, i, target)),
                None => inner.note_miss(true),
            }
        }
        // Sorted input gives sorted ordinals already; sorting keeps unsorted input correct.
        probes.sort_by_key(|p| (p.0, p.1));
        let mut ords: Vec<usize> = probes.iter().map(|p| p.0).collect();
        ords.dedup();
        let mut blocks = Vec::with_capacity(ords.len());
        for &o in &ords {
            blocks.push(inner.cached_block(o)?.1);
        }
        inner.fill_runs(&ords, &mut blocks)?;
        for b in blocks.iter().flatten() {
            b.prefetch();
        }

        let mut at = 0;
        for (ord, i, target) in &probes {
            while ords[at] != *ord {
                at += 1;
            }
            let block = blocks[at]
                .as_ref()
                .ok_or_else(|| Error::corruption(&inner.path, 0, "block missing after read"))?;
            let found = lookup_in_block(block, keys[*i], target)?;
            inner.note_miss(found.is_none());
            results[*i] = found.map(|r| self.restamp(r));
        }
        Ok(())
    }

    /// An iterator over every entry; data blocks it reads go into the block cache.
    pub fn iter(&self) -> SstIterator {
        self.iter_with(true)
    }

    /// `fill_cache: false` for scans (compaction) that should not evict the hot set.
    pub fn iter_with(&self, fill_cache: bool) -> SstIterator {
        SstIterator {
            reader: self.clone(),
            fill_cache,
            block_idx: 0,
            data: None,
            err: None,
            key_buf: Vec::new(),
        }
    }
}

impl Inner {
    /// Bloom check, counting negatives.
    fn filter_admits(&self, user_key: &[u8]) -> bool {
        match &self.filter {
            Some(f) if !f.may_contain(user_key) => {
                Counters::add(&self.counters.bloom_negatives, 1);
                false
            }
            _ => true,
        }
    }

    /// A lookup that passed the filter but found nothing was a false positive (approximate:
    /// a key present only with newer sequence numbers is counted too).
    fn note_miss(&self, missed: bool) {
        if missed && self.filter.is_some() {
            Counters::add(&self.counters.bloom_false_positives, 1);
        }
    }

    fn read_block_uncached(&self, h: BlockHandle, access: Access) -> Result<Block> {
        let data = read_block_contents(
            &*self.file,
            &self.path,
            &self.counters,
            self.meta_limit,
            h,
            access,
        )?;
        Block::new(data, self.shared_path.clone(), h.offset)
    }

    /// Looks block `ord` up in the cache, counting the hit or miss.
    fn cached_block(&self, ord: usize) -> Result<(BlockHandle, Option<Arc<Block>>)> {
        let h = self.index.handle(ord)?;
        let hit = self.cache.get(self.file_number, h.offset);
        let c = if hit.is_some() {
            &self.counters.block_cache_hits
        } else {
            &self.counters.block_cache_misses
        };
        Counters::add(c, 1);
        Ok((h, hit))
    }

    fn data_block(&self, ord: usize, fill_cache: bool, access: Access) -> Result<Arc<Block>> {
        let (h, hit) = self.cached_block(ord)?;
        if let Some(b) = hit {
            return Ok(b);
        }
        let block = Arc::new(self.read_block_uncached(h, access)?);
        if fill_cache {
            self.cache.insert(self.file_number, h.offset, block.clone());
        }
        Ok(block)
    }

    /// Reads the missing `blocks` (ordinals `ords`), one pread per run of blocks that are
    /// adjacent in the file.
    fn fill_runs(&self, ords: &[usize], blocks: &mut [Option<Arc<Block>>]) -> Result<()> {
        let mut j = 0;
        while j < ords.len() {
            if blocks[j].is_some() {
                j += 1;
                continue;
            }
            let mut handles = vec![self.index.handle(ords[j])?];
            let start = handles[0].offset;
            let mut k = j + 1;
            while k < ords.len() && blocks[k].is_none() && ords[k] == ords[k - 1] + 1 {
                let h = self.index.handle(ords[k])?;
                let prev_end = handles[handles.len() - 1].end();
                if h.offset != prev_end || h.end() - start > MAX_COALESCED_READ {
                    break;
                }
                handles.push(h);
                k += 1;
            }
            for h in &handles {
                check_handle(&self.path, *h, self.meta_limit)?;
            }
            let end = handles[handles.len() - 1].end();
            let buf = pread(
                &*self.file,
                &self.counters,
                start,
                end - start,
                Access::Point,
            )?;
            for (slot, h) in blocks[j..k].iter_mut().zip(&handles) {
                let from = (h.offset - start) as usize;
                let raw = &buf[from..from + h.len_with_trailer() as usize];
                let data = decode_block_slice(&self.path, h.offset, raw)?;
                let block = Arc::new(Block::new(data, self.shared_path.clone(), h.offset)?);
                self.cache.insert(self.file_number, h.offset, block.clone());
                *slot = Some(block);
            }
            j = k;
        }
        Ok(())
    }
}

/// The first entry >= `target` in `block`, if it belongs to `user_key`.
fn lookup_in_block(
    block: &Arc<Block>,
    user_key: &[u8],
    target: &[u8],
) -> Result<Option<LookupResult>> {
    let mut it = block.iter();
    it.seek(target);
    it.status()?;
    // Running off the block's end means the key is absent: the separator of this block is
    // either this block's last key or below the next block's first user key.
    if !it.valid() {
        return Ok(None);
    }
    let Some((uk, trailer)) = types::split_internal(it.key()) else {
        return Ok(None);
    };
    if uk != user_key {
        return Ok(None);
    }
    let (seq, kind) = types::unpack_trailer(trailer);
    match ValueKind::from_u8(kind) {
        Some(ValueKind::Put) => Ok(Some(LookupResult::Found {
            seq,
            value: it.value().to_vec(),
        })),
        Some(ValueKind::Delete) => Ok(Some(LookupResult::Deleted { seq })),
        None => Err(block.corruption(&format!("unknown value kind {kind}"))),
    }
}

/// Two-level iteration: the resident index picks a data block, a [`BlockIter`] walks it.
/// Holds a reader clone, so it is `'static` and `Send`. Errors are sticky: after one, the
/// iterator stays invalid and `status` keeps returning it.
pub struct SstIterator {
    reader: SstReader,
    fill_cache: bool,
    block_idx: usize,
    data: Option<BlockIter>,
    err: Option<Error>,
    /// The current key restamped with the file's global sequence (ingested files only).
    key_buf: Vec<u8>,
}

impl SstIterator {
    /// After every move: for an ingested file, the current key with its trailer's sequence
    /// replaced by the global one.
    fn restamp(&mut self) {
        let Some(g) = self.reader.global_seq else {
            return;
        };
        self.key_buf.clear();
        if let Some(d) = self.data.as_ref().filter(|d| d.valid()) {
            if let Some((uk, trailer)) = types::split_internal(d.key()) {
                let (_, kind) = types::unpack_trailer(trailer);
                self.key_buf.extend_from_slice(uk);
                self.key_buf
                    .extend_from_slice(&types::pack_trailer(g, kind).to_le_bytes());
            }
        }
    }

    fn seek_stored(&mut self, target: &[u8]) {
        self.data = None;
        if self.err.is_some() {
            return;
        }
        match self.reader.inner.index.find(target) {
            Err(e) => self.set_err(e),
            Ok(None) => {}
            Ok(Some(i)) => {
                if self.position(i, |d| d.seek(target)) {
                    self.skip_forward();
                }
            }
        }
    }

    fn seek_for_prev_stored(&mut self, target: &[u8]) {
        self.data = None;
        if self.err.is_some() {
            return;
        }
        let n = self.reader.inner.index.len();
        // Past every separator means past every key: the answer is the file's last entry.
        match self.reader.inner.index.find(target) {
            Err(e) => self.set_err(e),
            Ok(found) if n > 0 => {
                if self.position(found.unwrap_or(n - 1), |d| d.seek_for_prev(target)) {
                    self.skip_backward();
                }
            }
            Ok(_) => {}
        }
    }

    fn stored_user_key_is(&self, uk: &[u8]) -> bool {
        self.data
            .as_ref()
            .filter(|d| d.valid())
            .and_then(|d| types::split_internal(d.key()))
            .is_some_and(|(k, _)| k == uk)
    }
    fn set_err(&mut self, e: Error) {
        self.err.get_or_insert(e);
        self.data = None;
    }

    fn load(&mut self, i: usize) -> bool {
        match self
            .reader
            .inner
            .data_block(i, self.fill_cache, Access::Scan)
        {
            Ok(b) => {
                self.block_idx = i;
                self.data = Some(b.iter());
                true
            }
            Err(e) => {
                self.set_err(e);
                false
            }
        }
    }

    /// Leaves `data` valid, or moves on to the first entry of a following block.
    fn skip_forward(&mut self) {
        while let Some(d) = &self.data {
            if d.valid() {
                return;
            }
            if let Err(e) = d.status() {
                return self.set_err(e);
            }
            let next = self.block_idx + 1;
            if next >= self.reader.inner.index.len() {
                self.data = None;
                return;
            }
            if self.load(next) {
                if let Some(d) = &mut self.data {
                    d.seek_to_first();
                }
            }
        }
    }

    fn skip_backward(&mut self) {
        while let Some(d) = &self.data {
            if d.valid() {
                return;
            }
            if let Err(e) = d.status() {
                return self.set_err(e);
            }
            if self.block_idx == 0 {
                self.data = None;
                return;
            }
            if self.load(self.block_idx - 1) {
                if let Some(d) = &mut self.data {
                    d.seek_to_last();
                }
            }
        }
    }

    /// Loads block `i` and positions inside it with `f`; false if nothing was loaded.
    fn position(&mut self, i: usize, f: impl FnOnce(&mut BlockIter)) -> bool {
        if !self.load(i) {
            return false;
        }
        if let Some(d) = &mut self.data {
            f(d);
        }
        true
    }
}

impl InternalIterator for SstIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.data = None;
        if self.err.is_none()
            && !self.reader.inner.index.is_empty()
            && self.position(0, |d| d.seek_to_first())
        {
            self.skip_forward();
        }
        self.restamp();
    }

    fn seek_to_last(&mut self) {
        self.data = None;
        let n = self.reader.inner.index.len();
        if self.err.is_none() && n > 0 && self.position(n - 1, |d| d.seek_to_last()) {
            self.skip_backward();
        }
        self.restamp();
    }

    fn seek(&mut self, target: &[u8]) {
        let Some(g) = self.reader.global_seq else {
            return self.seek_stored(target);
        };
        // Stored keys carry sequence 0; compare as if they carried `g`.
        let Some((uk, trailer)) = types::split_internal(target) else {
            return self.seek_stored(target);
        };
        let (t, _) = types::unpack_trailer(trailer);
        self.seek_stored(&types::make_internal_key(uk, types::MAX_SEQ, 0xff));
        // (uk, g) sorts after a target (uk, t) only when g <= t; otherwise skip uk's entry.
        if g > t && self.stored_user_key_is(uk) {
            if let Some(d) = &mut self.data {
                d.next();
            }
            self.skip_forward();
        }
        self.restamp();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let Some(g) = self.reader.global_seq else {
            return self.seek_for_prev_stored(target);
        };
        let Some((uk, trailer)) = types::split_internal(target) else {
            return self.seek_for_prev_stored(target);
        };
        let (t, _) = types::unpack_trailer(trailer);
        if g >= t {
            // (uk, g) <= target: land on uk's entry, or the last one before it.
            self.seek_for_prev_stored(&types::make_internal_key(uk, 0, 0));
        } else {
            // (uk, g) > target: the last entry of a smaller user key.
            self.seek_for_prev_stored(&types::make_internal_key(uk, types::MAX_SEQ, 0xff));
            if self.stored_user_key_is(uk) {
                if let Some(d) = &mut self.data {
                    d.prev();
                }
                self.skip_backward();
            }
        }
        self.restamp();
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
        self.restamp();
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
        self.restamp();
    }

    fn key(&self) -> &[u8] {
        if self.reader.global_seq.is_some() {
            return &self.key_buf;
        }
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
