//! An open SST's file and everything a block read needs: bounds checks, the point-read
//! path (page cache probe, warm-up rent), scan reads with readahead, checksum and
//! decompression, and the block cache lookup. Every block read of a reader goes through
//! a [`Source`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::cache::probe::ProbeBackoff;
use crate::cache::warm::WarmthHandle;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::sst::block::Block;
use crate::sst::format::{decode_block, BlockHandle, MAX_BLOCK_LEN};
use crate::sst::mapped::MappedFile;
use crate::stats::Counters;
use crate::vfs::RandomAccessFile;

/// The file and what reading it needs: every block read goes through here.
pub(crate) struct Source {
    pub(super) file: Arc<dyn RandomAccessFile>,
    pub path: PathBuf,
    pub shared_path: Arc<Path>,
    pub file_number: u64,
    pub cache: Arc<BlockCache>,
    pub(super) counters: Arc<Counters>,
    /// Start of the footer: every block must end at or before it.
    pub meta_limit: u64,
    /// The file's cold-start warm-up state, when the cache has a warm-up (`cache/warm.rs`).
    pub(super) warmth: Option<WarmthHandle>,
    /// When point reads ask the page cache first (`cache/probe.rs`).
    pub(super) probe: ProbeBackoff,
    /// The file's memory map, which point reads use while the page cache holds the file
    /// (`sst/mapped.rs`).
    pub(super) mapped: Option<MappedFile>,
}

/// What follows a read: reads elsewhere in the file (lookups, metadata; `Batch` for the
/// reads of a `multi_get`, which its caller waits for together), the few blocks after it
/// (an iterator's short walk after a seek), or the file onward (a long scan, checksum
/// verification). The Vfs reads ahead only for `Scan`
/// (`RandomAccessFile::read_exact_at_scan`): ahead of a lookup it only delays the next one,
/// and a short walk asks for what it needs itself (`sst/readahead.rs`), so the kernel's
/// readahead on top of it would read up to its whole window more per seek from the disk
/// (docs/design/scan-readahead.md, "Short walks").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    Point,
    Batch,
    Walk,
    Scan,
}

impl Source {
    /// One point pread of `len` bytes at `offset`, counted as a device read.
    pub fn pread(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.pread_as(offset, len, Access::Point)
    }

    /// [`pread`](Self::pread) for one of the reads of a `multi_get`.
    pub fn pread_batch(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.pread_as(offset, len, Access::Batch)
    }

    fn pread_as(&self, offset: u64, len: u64, access: Access) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        self.pread_into(&mut buf, offset, access)?;
        Ok(buf)
    }

    /// Fills `buf` from `offset`, counted as a device read.
    pub(super) fn pread_into(&self, buf: &mut [u8], offset: u64, access: Access) -> Result<()> {
        // Point reads and a seek's reads of a file that may still be warmed are timed: both
        // are random reads, and their wait is the rent that decides when reading the file
        // whole pays. The page cache probe is timed with the read: when it misses it has
        // already sent the read to the device, and the wait after it is only part of the
        // read's. Scans read ahead and are sequential already: they pay none.
        let renting = match &self.warmth {
            Some(w) if access != Access::Scan && w.0.reads_disk() => Some(w),
            _ => None,
        };
        let cached = match renting {
            Some(w) => {
                let _in_flight = w.0.point_read(access == Access::Batch);
                let started = Instant::now();
                let cached = self.read_raw(buf, offset, access)?;
                w.0.pay(started.elapsed());
                cached
            }
            None => self.read_raw(buf, offset, access)?,
        };
        Counters::add(&self.counters.device_reads, 1);
        Counters::add(&self.counters.device_read_bytes, buf.len() as u64);
        if cached {
            Counters::add(&self.counters.page_cache_reads, 1);
        }
        Ok(())
    }

    /// One read of `access`'s kind; whether the page cache served it. A point read probes
    /// the page cache first (`read_point`), since its count of reads the page cache served
    /// steers `multi_get`; a seek's read goes straight to the file; a scan's reads ahead.
    fn read_raw(&self, buf: &mut [u8], offset: u64, access: Access) -> Result<bool> {
        match access {
            Access::Point | Access::Batch => return self.read_point(buf, offset),
            Access::Walk => self.file.read_exact_at(buf, offset)?,
            Access::Scan => self.file.read_exact_at_scan(buf, offset)?,
        }
        Ok(false)
    }

    /// A point read that first asks for the bytes only if the page cache holds them, and
    /// says whether it did: such a read is counted as one that did not reach the disk
    /// (`multi_get` spreads a batch over threads only when reads do). After misses the
    /// probe is skipped for a while (`cache/probe.rs`).
    fn read_point(&self, buf: &mut [u8], offset: u64) -> Result<bool> {
        if self.probe.should_probe() {
            let cached = self.file.read_cached_at(buf, offset)?;
            self.probe.probed(cached);
            if cached {
                return Ok(true);
            }
        }
        self.file.read_exact_at(buf, offset)?;
        Ok(false)
    }

    pub fn corruption(&self, offset: u64, why: &str) -> Error {
        Error::corruption(&self.path, offset, why.to_string())
    }

    pub(super) fn check_handle(&self, h: BlockHandle) -> Result<()> {
        if h.size > MAX_BLOCK_LEN || h.end() > self.meta_limit {
            return Err(Error::corruption(
                &self.path,
                h.offset,
                format!(
                    "block handle (offset {}, size {}) outside the file",
                    h.offset, h.size
                ),
            ));
        }
        Ok(())
    }

    /// Reads, checks and decompresses one block (no cache), as a point read.
    pub fn read(&self, h: BlockHandle) -> Result<Vec<u8>> {
        self.read_as(h, Access::Point)
    }

    fn read_as(&self, h: BlockHandle, access: Access) -> Result<Vec<u8>> {
        self.check_handle(h)?;
        let raw = self.pread_as(h.offset, h.len_with_trailer(), access)?;
        decode_block(&self.path, h.offset, raw)
    }

    /// Data block `h`'s stored bytes in place, for a point read or iterator step that goes
    /// through the file's map (`sst/mapped.rs`), counted as a mapped read. `h` must be within
    /// the file.
    pub(super) fn mapped_raw(&self, h: BlockHandle) -> Option<&[u8]> {
        let raw = self.mapped.as_ref()?.point_read(h)?;
        Counters::add(&self.counters.mapped_reads, 1);
        Some(raw)
    }

    pub fn read_block(&self, h: BlockHandle) -> Result<Block> {
        self.read_block_as(h, Access::Point)
    }

    pub(super) fn read_block_as(&self, h: BlockHandle, access: Access) -> Result<Block> {
        Block::new(self.read_as(h, access)?, self.shared_path.clone(), h.offset)
    }

    /// A block cache lookup, counted as a hit or a miss.
    pub fn cache_lookup<T>(&self, get: impl FnOnce(&BlockCache) -> Option<T>) -> Option<T> {
        let hit = get(&self.cache);
        count_cache(&self.counters, hit.is_some());
        hit
    }
}

/// Counts a partition's cache hit or miss like a data block's.
pub(crate) fn count_cache(counters: &Counters, hit: bool) {
    let c = if hit {
        &counters.block_cache_hits
    } else {
        &counters.block_cache_misses
    };
    Counters::add(c, 1);
}
