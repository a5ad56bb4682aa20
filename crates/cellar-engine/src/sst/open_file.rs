//! An open SST as every clone of its reader and every iterator over it shares it: the
//! [`Source`] blocks are read through, the footer, properties and index/filter metadata,
//! and the data block reads that go through the block cache.

use std::sync::Arc;

use crate::cache::MetadataBudget;
use crate::error::Result;
use crate::options::Compression;
use crate::sst::block::Block;
use crate::sst::format::{
    check_block, decode_block_slice, BlockHandle, Footer, Properties, BLOCK_TRAILER_LEN,
};
use crate::sst::meta::Meta;
use crate::sst::readahead::{Readahead, Step};
use crate::sst::source::{Access, Source};
use crate::stats::Counters;

/// A coalesced `multi_get` read never spans more than this (unless one block is larger).
pub const MAX_COALESCED_READ: u64 = 256 << 10;

/// An iterator's reads go through the kernel's readahead only once it is a long scan: until
/// then its own windows read what it needs (see [`Access`]).
fn walk_or_scan(ahead: &Readahead) -> Access {
    if ahead.is_long_scan() {
        Access::Scan
    } else {
        Access::Walk
    }
}

/// A block for one point lookup: shared with the block cache, or read in place through the
/// file's map for this lookup alone.
pub(super) enum PointBlock {
    Shared(Arc<Block>),
    InPlace(Block),
}

impl std::ops::Deref for PointBlock {
    type Target = Block;
    fn deref(&self) -> &Block {
        match self {
            PointBlock::Shared(b) => b,
            PointBlock::InPlace(b) => b,
        }
    }
}

/// What a reader opened: shared by its clones and iterators through an `Arc`.
pub(crate) struct OpenFile {
    pub(super) src: Source,
    pub(super) footer: Footer,
    pub(super) meta: Meta,
    pub(super) props: Properties,
    pub(super) budget: Arc<MetadataBudget>,
    /// What this reader charged to `budget`; given back on drop.
    pub(super) charged_bytes: u64,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        self.budget.release(self.charged_bytes);
    }
}

impl OpenFile {
    /// A lookup that passed the filter but found nothing was a false positive (approximate:
    /// a key present only with newer sequence numbers is counted too).
    pub(super) fn note_miss(&self, missed: bool) {
        if missed && self.meta.has_filter() {
            Counters::add(&self.src.counters.bloom_false_positives, 1);
        }
    }

    /// Looks a data block up in the cache, counting the hit or miss.
    pub(super) fn cached_block(&self, h: BlockHandle) -> Option<Arc<Block>> {
        self.src
            .cache_lookup(|c| c.get(self.src.file_number, h.offset))
    }

    /// Data block `h` for a point lookup. While the file's map is in use, a block stored
    /// uncompressed is read in place and not cached (`sst/mapped.rs`); otherwise from the
    /// cache, else decompressed from the map or read, and kept by the cache under its
    /// admission rule for point reads (`cache/admission.rs`).
    pub(super) fn point_block(&self, h: BlockHandle) -> Result<PointBlock> {
        if let Some(block) = self.block_in_place(h, true)? {
            return Ok(PointBlock::InPlace(block));
        }
        if let Some(b) = self.cached_block(h) {
            return Ok(PointBlock::Shared(b));
        }
        if let Some(b) = self.mapped_miss(h)? {
            return Ok(PointBlock::Shared(b));
        }
        let block = Arc::new(self.src.read_block_as(h, Access::Point)?);
        self.src
            .cache
            .insert_point_read(self.src.file_number, h.offset, block.clone());
        Ok(PointBlock::Shared(block))
    }

    /// Block `h` read in place through the map, if the file's lookups go there first and
    /// the block is stored uncompressed. A compressed block is left to the cached path; it
    /// counts toward turning the file's lookups to the block cache first
    /// (`MappedFile::saw_block`). `timed`: the read counts toward the residency recheck and
    /// one slow enough to have faulted rechecks at once (every point read; some of a walk's,
    /// `WalkWatch`).
    fn block_in_place(&self, h: BlockHandle, timed: bool) -> Result<Option<Block>> {
        let Some(m) = self.src.mapped.as_ref() else {
            return Ok(None);
        };
        if timed {
            m.note_read(&*self.src.file);
        }
        if m.cache_first() {
            return Ok(None);
        }
        self.src.check_handle(h)?;
        let Some(raw) = self.src.mapped_raw(h) else {
            return Ok(None);
        };
        // The checksum reads every byte of the block: a page fault, if any, is taken here.
        let check = || check_block(&self.src.path, h.offset, raw);
        let codec = if timed {
            m.timed(&*self.src.file, check)
        } else {
            check()
        }?;
        let compressed = codec != Compression::None;
        m.saw_block(compressed);
        if compressed {
            return Ok(None);
        }
        let payload = m.share(&raw[..raw.len() - BLOCK_TRAILER_LEN]);
        Block::mapped(payload, self.src.shared_path.clone(), h.offset).map(Some)
    }

    /// Data block `ord` (file-wide ordinal) for an iterator. While the file's map is in use,
    /// a block stored uncompressed is read in place, as a point read's is, and not cached.
    /// Otherwise: `step` is how the iterator got here from the block it read last (the next
    /// one, the previous one, or a jump); from the second cache miss in a row in one direction
    /// on, a miss reads a window of the file into `ahead` and the next blocks that way are
    /// decoded from it (`sst/readahead.rs`). `timed`: see `block_in_place`.
    pub(super) fn block_at(
        &self,
        ord: usize,
        fill_cache: bool,
        ahead: &mut Readahead,
        step: Step,
        timed: bool,
    ) -> Result<Arc<Block>> {
        let h = self.meta.handle(&self.src, ord)?;
        let sequential = ahead.follow(step);
        if let Some(block) = self.block_in_place(h, timed)? {
            return Ok(Arc::new(block));
        }
        // Only a block this walk could keep counts toward the walks' hit rate: a compaction's
        // or a long scan's lookups miss by design and say nothing about what walks come back to.
        let keeps = fill_cache && !ahead.is_long_scan();
        let cached = self.cached_block(h);
        if keeps {
            self.src.cache.record_walk_lookup(cached.is_some());
        }
        if let Some(b) = cached {
            return Ok(b);
        }
        if sequential && ahead.raw(h).is_none() {
            if let Some(window) = ahead.next_window() {
                self.read_window(h, window, ahead)?;
            }
        }
        let (block, windowed) = match ahead.raw(h) {
            Some(raw) => {
                let data = decode_block_slice(&self.src.path, h.offset, raw)?;
                (
                    Block::new(data, self.src.shared_path.clone(), h.offset)?,
                    true,
                )
            }
            None => match self.mapped_block(h)? {
                Some(block) => (block, false),
                None => (self.src.read_block_as(h, walk_or_scan(ahead))?, false),
            },
        };
        let block = Arc::new(block);
        // A long scan's blocks come from its windows; they are not kept. A short walk's
        // blocks are, those read through a window always, a seek's block under the walks'
        // admission rule (cache/admission.rs, `WalkHitRate`).
        if keeps {
            let cache = &self.src.cache;
            if windowed {
                cache.insert(self.src.file_number, h.offset, block.clone());
            } else {
                cache.insert_walk_block(self.src.file_number, h.offset, block.clone());
            }
        }
        Ok(block)
    }

    /// Reads `window` bytes of the file into `ahead`: from block `h` on going forward,
    /// ending with it going backward (at least the block, nothing past the footer's start).
    fn read_window(&self, h: BlockHandle, window: u64, ahead: &mut Readahead) -> Result<()> {
        self.src.check_handle(h)?;
        let len = window.max(h.len_with_trailer());
        let start = ahead.window_start(h, len);
        let len = len.min(self.src.meta_limit - start);
        let access = walk_or_scan(ahead);
        let buf = ahead.refill(start, len as usize);
        let read = self.src.pread_into(buf, start, access);
        if read.is_err() {
            ahead.clear();
        }
        read
    }

    /// Block `h` checked and decompressed from the file's map and kept under the cache's
    /// admission rule for point reads, if the map is in use (a block-cache miss).
    fn mapped_miss(&self, h: BlockHandle) -> Result<Option<Arc<Block>>> {
        let Some(data) = self.decode_from_map(h)? else {
            return Ok(None);
        };
        if let Some(m) = &self.src.mapped {
            m.saw_block(data.len() != h.size as usize);
        }
        let block = Arc::new(Block::new(data, self.src.shared_path.clone(), h.offset)?);
        self.src
            .cache
            .insert_point_read(self.src.file_number, h.offset, block.clone());
        Ok(Some(block))
    }

    /// Block `h` checked and decompressed from the file's map, if the map is in use: an
    /// iterator's miss that no readahead window holds (a seek's block, the first steps of a
    /// walk).
    ///
    /// Why: while the page cache holds the file, a `pread` only copies the bytes the map
    /// already reaches, through a system call, into a buffer allocated for the purpose. A
    /// walk's windows still read with `pread`: decoding every block of a long walk from the
    /// map ran `readseq` at half to two thirds of their rate (docs/design/mapped-reads.md,
    /// "Iterators").
    fn mapped_block(&self, h: BlockHandle) -> Result<Option<Block>> {
        if let Some(m) = &self.src.mapped {
            // Counts toward the recheck the blocks `block_in_place` left (compressed, or the
            // file's reads go to the cache first).
            m.note_read(&*self.src.file);
        }
        let Some(data) = self.decode_from_map(h)? else {
            return Ok(None);
        };
        Block::new(data, self.src.shared_path.clone(), h.offset).map(Some)
    }

    /// Block `h`'s payload, checked and decompressed from the file's map, if the map is in
    /// use; a read that took long enough to have faulted rechecks residency (`timed`).
    fn decode_from_map(&self, h: BlockHandle) -> Result<Option<Vec<u8>>> {
        self.src.check_handle(h)?;
        let (Some(m), Some(raw)) = (&self.src.mapped, self.src.mapped_raw(h)) else {
            return Ok(None);
        };
        m.timed(&*self.src.file, || {
            decode_block_slice(&self.src.path, h.offset, raw)
        })
        .map(Some)
    }

    /// Data block `h` for a batch of point lookups (`multi_get`): read in place through the
    /// map, else from the cache, else `None` (`fill_runs` reads it).
    pub(super) fn batch_block(&self, h: BlockHandle) -> Result<Option<Arc<Block>>> {
        if let Some(block) = self.block_in_place(h, true)? {
            return Ok(Some(Arc::new(block)));
        }
        Ok(self.cached_block(h))
    }

    /// Reads the missing `blocks` (ordinals and handles `ords`): through the file's map while
    /// it is in use, else one pread per run of blocks that are adjacent in the file.
    pub(super) fn fill_runs(
        &self,
        ords: &[(usize, BlockHandle)],
        blocks: &mut [Option<Arc<Block>>],
    ) -> Result<()> {
        let mut j = 0;
        while j < ords.len() {
            if blocks[j].is_some() {
                j += 1;
                continue;
            }
            if let Some(block) = self.mapped_miss(ords[j].1)? {
                blocks[j] = Some(block);
                j += 1;
                continue;
            }
            let start = ords[j].1.offset;
            let mut k = j + 1;
            while k < ords.len() && blocks[k].is_none() && ords[k].0 == ords[k - 1].0 + 1 {
                let h = ords[k].1;
                if h.offset != ords[k - 1].1.end() || h.end() - start > MAX_COALESCED_READ {
                    break;
                }
                k += 1;
            }
            for (_, h) in &ords[j..k] {
                self.src.check_handle(*h)?;
            }
            let end = ords[k - 1].1.end();
            let buf = self.src.pread_batch(start, end - start)?;
            for (slot, (_, h)) in blocks[j..k].iter_mut().zip(&ords[j..k]) {
                let from = (h.offset - start) as usize;
                let raw = &buf[from..from + h.len_with_trailer() as usize];
                let data = decode_block_slice(&self.src.path, h.offset, raw)?;
                let block = Arc::new(Block::new(data, self.src.shared_path.clone(), h.offset)?);
                self.src
                    .cache
                    .insert_point_read(self.src.file_number, h.offset, block.clone());
                *slot = Some(block);
            }
            j = k;
        }
        Ok(())
    }
}
