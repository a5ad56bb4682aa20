//! Reads an SST: footer, properties and the index and filter at open (kept resident, or
//! for a partitioned file the top level resident and the partitions pinned or cached: see
//! `meta.rs`), data blocks on demand through the block cache.

use std::path::PathBuf;
use std::sync::Arc;

use crate::cache::probe::ProbeBackoff;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::block::{Block, PointKey};
use crate::sst::bloom::key_hash;
use crate::sst::format::{BlockHandle, Footer, Properties, FOOTER_LEN};
use crate::sst::index::IndexEntry;
use crate::sst::iterator::SstIterator;
use crate::sst::mapped::MappedFile;
use crate::sst::meta::{Meta, Part};
use crate::sst::open_file::OpenFile;
use crate::sst::source::{Access, Source};
use crate::stats::Counters;
use crate::types::{self, lookup_key, ValueKind};
use crate::vfs::RandomAccessFile;

/// The newest version of a key visible at the requested sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupResult {
    Found { seq: u64, value: Vec<u8> },
    Deleted { seq: u64 },
}

/// Where a `get` of one key lands in a file, found ahead by
/// [`SstReader::prefetch_lookup`] for [`SstReader::get_landed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landing {
    /// Not looked for (metadata not resident, or its search failed): `get_landed` searches.
    Unknown,
    /// Every entry of the file is newer than the read: nothing to find.
    Skip,
    /// Past every key of the file.
    Past,
    /// In this index partition (0 for a file of one index).
    Partition(usize),
}

/// Cheap to clone: every clone and every iterator shares one `OpenFile`.
#[derive(Clone)]
pub struct SstReader {
    pub(super) inner: Arc<OpenFile>,
    /// For an ingested file: every entry is stored with sequence 0 and read as if written
    /// with this sequence number (one entry per user key, see `db/ingest.rs`).
    pub(super) global_seq: Option<u64>,
}

impl SstReader {
    /// Opens a file; its partitions (if any) are pinned within the metadata budget of
    /// `cache`, which every reader sharing the cache shares. `mapped`: whether point reads
    /// may read through the file's memory map (`Options::mapped_reads`, `sst/mapped.rs`).
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        cache: Arc<BlockCache>,
        counters: Arc<Counters>,
        mapped: bool,
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
        let warmth = cache.warm_up().map(|w| w.track(&file));
        let mapped = if mapped {
            MappedFile::open(&*file)
        } else {
            None
        };
        let src = Source {
            file,
            shared_path: Arc::from(path.as_path()),
            path,
            file_number,
            cache,
            counters,
            meta_limit,
            warmth,
            probe: ProbeBackoff::default(),
            mapped,
        };
        let raw = src.pread(meta_limit, FOOTER_LEN as u64)?;
        let footer = Footer::decode(&src.path, meta_limit, &raw)?;
        let h = footer.properties;
        let props = Properties::decode(&src.path, h.offset, &src.read(h)?)?;
        let budget = Arc::clone(src.cache.metadata_budget());
        let opened = Meta::open(&src, &footer, &props, &budget)?;
        Ok(SstReader {
            global_seq: None,
            inner: Arc::new(OpenFile {
                src,
                footer,
                meta: opened.meta,
                props,
                budget,
                charged_bytes: opened.charged_bytes,
            }),
        })
    }

    /// Reads every entry as if written with sequence `g` (the file must store sequence 0).
    pub fn with_global_seq(mut self, g: Option<u64>) -> Self {
        self.global_seq = g;
        self
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

    pub fn properties(&self) -> &Properties {
        &self.inner.props
    }

    #[cfg(test)]
    pub fn footer(&self) -> &Footer {
        &self.inner.footer
    }

    /// Every data block's index entry in file order (for `split_keys` and inspection);
    /// reads index partitions that are not resident.
    pub fn index_entries(&self) -> Result<Vec<IndexEntry>> {
        self.inner.meta.entries(&self.inner.src)
    }

    /// Index partitions: 1 for an unpartitioned file.
    #[cfg(test)]
    pub fn num_index_partitions(&self) -> usize {
        self.inner.meta.num_partitions()
    }

    /// Whether every index and filter partition is held in memory (always true for an
    /// unpartitioned file; false when the metadata budget was spent when it opened).
    #[cfg(test)]
    pub fn metadata_pinned(&self) -> bool {
        self.inner.meta.is_pinned()
    }

    pub fn file_size(&self) -> u64 {
        self.inner.src.file.size()
    }

    /// Bytes of index and filter held in memory for the life of the reader (partitions in
    /// the block cache are not counted here).
    pub fn resident_bytes(&self) -> u64 {
        self.inner.meta.resident_bytes()
    }

    /// The bloom filter's answer (true when the file has no filter, and when a filter
    /// partition cannot be read: "maybe" is always a safe answer).
    #[cfg(test)]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let inner = &*self.inner;
        match inner
            .meta
            .partition_of(user_key, seek_trailer(types::MAX_SEQ))
        {
            Ok(Some(p)) => inner.meta.part(&inner.src, p, true).map_or(true, |part| {
                part.filter.is_none_or(|f| f.may_contain(user_key))
            }),
            Ok(None) => !inner.meta.has_filter(),
            Err(_) => true,
        }
    }

    pub fn data_block_handles(&self) -> Result<Vec<BlockHandle>> {
        Ok(self
            .index_entries()?
            .into_iter()
            .map(|e| e.handle)
            .collect())
    }

    /// Reads one block bypassing the cache (for inspection); iterate it with `Block::iter`.
    #[cfg(test)]
    pub fn read_block(&self, h: BlockHandle) -> Result<Arc<Block>> {
        Ok(Arc::new(self.inner.src.read_block(h)?))
    }

    /// Reads every block from disk, checking crc, decompression and entry framing (of a
    /// partitioned file: the top level, every index partition and every filter partition).
    pub fn verify_checksums(&self) -> Result<()> {
        let inner = &*self.inner;
        inner.src.read(inner.footer.properties)?;
        inner.meta.verify(&inner.src, &inner.footer)?;
        for h in self.data_block_handles()? {
            let block = Arc::new(inner.src.read_block_as(h, Access::Scan)?);
            let mut it = block.iter();
            it.seek_to_first();
            while it.valid() {
                it.next();
            }
            it.status()?;
        }
        Ok(())
    }

    /// Starts loading the filter line a `get` of `user_key` at `seq` (whose [`key_hash`] is
    /// `h`) will probe and, with `index`, the index memory its search will miss on, and
    /// returns where that search lands, for [`get_landed`](Self::get_landed). Only for
    /// metadata in memory: an unpinned partition may need a read, which a hint must not do. A
    /// `get` probes several files (level 0's and one per level), and each probe's first step
    /// is a likely cache miss in its filter: asked for together, the misses overlap instead
    /// of queueing one behind another. The index hint is for the file a lookup most likely
    /// ends in (the deepest level holds most keys): its index misses then overlap the
    /// filters'.
    pub fn prefetch_lookup(&self, user_key: &[u8], h: u64, seq: u64, index: bool) -> Landing {
        let inner = &*self.inner;
        let Some(seq) = self.probe_seq(seq) else {
            return Landing::Skip;
        };
        if !inner.meta.is_pinned() {
            return Landing::Unknown;
        }
        // The partition `get` would find: the same target, with the probe's sequence.
        let p = match inner.meta.partition_of(user_key, seek_trailer(seq)) {
            Ok(Some(p)) => p,
            Ok(None) => return Landing::Past,
            // `get` finds the same error again and reports it.
            Err(_) => return Landing::Unknown,
        };
        if let Ok(part) = inner.meta.part(&inner.src, p, true) {
            if let Some(f) = &part.filter {
                f.prefetch(h);
            }
            if index {
                part.index.prefetch_user_key(user_key);
            }
        }
        Landing::Partition(p)
    }

    /// Newest entry of `user_key` with sequence <= `seq`; `None` if this file has none. As
    /// `Db::get` probes a file: the landing found by the prefetch, then the probe.
    #[cfg(test)]
    pub fn get(&self, user_key: &[u8], seq: u64) -> Result<Option<LookupResult>> {
        let landing = self.prefetch_lookup(user_key, key_hash(user_key), seq, true);
        self.get_landed(landing, user_key, seq)
    }

    /// [`get`](Self::get), starting where [`prefetch_lookup`](Self::prefetch_lookup) of the
    /// same key and sequence found the search lands, so the partition is searched for once.
    pub fn get_landed(
        &self,
        landing: Landing,
        user_key: &[u8],
        seq: u64,
    ) -> Result<Option<LookupResult>> {
        let inner = &*self.inner;
        let Some(seq) = self.probe_seq(seq) else {
            return Ok(None);
        };
        let p = match landing {
            Landing::Partition(p) => Some(p),
            Landing::Past => None,
            Landing::Skip => return Ok(None),
            Landing::Unknown => inner.meta.partition_of(user_key, seek_trailer(seq))?,
        };
        // Past every separator: so is every key of the file.
        let Some(p) = p else {
            inner.note_miss(true);
            return Ok(None);
        };
        let part = inner.meta.part(&inner.src, p, true)?;
        if let Some(f) = &part.filter {
            if !f.may_contain(user_key) {
                Counters::add(&inner.src.counters.bloom_negatives, 1);
                return Ok(None);
            }
        }
        // Built only now, on the stack: most probes of a lookup end at some file's filter.
        let mut target = PointKey::new();
        target.extend_from_slice(user_key);
        target.extend_from_slice(&seek_trailer(seq).to_le_bytes());
        let found = match part.index.find(&target)? {
            None => None,
            Some(b) => {
                let block = inner.point_block(part.index.handle(b)?)?;
                lookup_in_block(&block, user_key, &target)?
            }
        };
        inner.note_miss(found.is_none());
        Ok(found.map(|r| self.restamp(r)))
    }

    /// Looks up every `keys[i]` (ascending user keys) whose `results[i]` is `None`, reading
    /// each needed block once and runs of adjacent uncached blocks with one pread.
    // Long by design: one batch's pipeline (route keys to partitions, bloom, index search,
    // block reads, block search), each step prefetching for the next over all keys so their
    // cache misses overlap (`prefetch.rs`); the steps share five per-key vectors.
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
        // Route every key to its partition (always 0 for an unpartitioned file) and load
        // each partition once; the resident top level makes this cheap.
        // (partition, key index)
        let mut routed: Vec<(usize, usize)> = Vec::with_capacity(keys.len());
        for i in (0..keys.len()).filter(|&i| results[i].is_none()) {
            match inner.meta.partition_of(keys[i], seek_trailer(seq))? {
                Some(p) => routed.push((p, i)),
                None => inner.note_miss(true),
            }
        }
        routed.sort_unstable();
        let mut parts: Vec<Part<'_>> = Vec::new();
        // routed[k] searches parts[at[k]].
        let mut at: Vec<usize> = Vec::with_capacity(routed.len());
        let mut last = None;
        for r in &routed {
            if last != Some(r.0) {
                parts.push(inner.meta.part(&inner.src, r.0, true)?);
                last = Some(r.0);
            }
            at.push(parts.len() - 1);
        }
        // Each step below first asks the CPU for the memory the next one reads, for every
        // key, so the cache misses of the batch overlap (see `prefetch`): bloom lines, then
        // index search-tree nodes, then (further down) the blocks' restart arrays.
        let hashes: Vec<u64> = routed.iter().map(|r| key_hash(keys[r.1])).collect();
        for (k, &h) in hashes.iter().enumerate() {
            if let Some(f) = &parts[at[k]].filter {
                f.prefetch(h);
            }
        }
        // (routed entry, lookup key)
        let mut admitted: Vec<(usize, Vec<u8>)> = Vec::with_capacity(routed.len());
        for (k, &h) in hashes.iter().enumerate() {
            match &parts[at[k]].filter {
                Some(f) if !f.may_contain_hash(h) => {
                    Counters::add(&inner.src.counters.bloom_negatives, 1);
                }
                _ => admitted.push((k, lookup_key(keys[routed[k].1], seq))),
            }
        }
        for (k, target) in &admitted {
            parts[at[*k]].index.prefetch(target);
        }
        // (block ordinal, key index, lookup key, block handle)
        let mut probes: Vec<(usize, usize, Vec<u8>, BlockHandle)> =
            Vec::with_capacity(admitted.len());
        for (k, target) in admitted {
            let part = &parts[at[k]];
            let i = routed[k].1;
            match part.index.find(&target)? {
                Some(b) => {
                    let h = part.index.handle(b)?;
                    probes.push((part.first_block + b, i, target, h));
                }
                None => inner.note_miss(true),
            }
        }
        // Sorted input gives sorted ordinals already; sorting keeps unsorted input correct.
        probes.sort_by_key(|p| (p.0, p.1));
        let mut ords: Vec<(usize, BlockHandle)> = probes.iter().map(|p| (p.0, p.3)).collect();
        ords.dedup_by_key(|o| o.0);
        let mut blocks = Vec::with_capacity(ords.len());
        for &(_, h) in &ords {
            blocks.push(inner.batch_block(h)?);
        }
        inner.fill_runs(&ords, &mut blocks)?;
        for b in blocks.iter().flatten() {
            b.prefetch();
        }

        let mut j = 0;
        for (ord, i, target, _) in &probes {
            while ords[j].0 != *ord {
                j += 1;
            }
            let block = blocks[j]
                .as_ref()
                .ok_or_else(|| inner.src.corruption(0, "block missing after read"))?;
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
        SstIterator::new(Arc::clone(&self.inner), self.global_seq, fill_cache)
    }
}

/// The trailer of `lookup_key(_, seq)`: the smallest internal key of a user key at `seq`.
fn seek_trailer(seq: u64) -> u64 {
    types::pack_trailer(seq, types::KIND_FOR_SEEK)
}

/// The first entry >= `target` in `block`, if it belongs to `user_key`.
fn lookup_in_block(block: &Block, user_key: &[u8], target: &[u8]) -> Result<Option<LookupResult>> {
    let mut key = PointKey::new();
    // Running off the block's end means the key is absent: the separator of this block is
    // either this block's last key or below the next block's first user key.
    let Some(value) = block.seek_point(target, &mut key)? else {
        return Ok(None);
    };
    let Some((uk, trailer)) = types::split_internal(&key) else {
        return Ok(None);
    };
    if uk != user_key {
        return Ok(None);
    }
    let (seq, kind) = types::unpack_trailer(trailer);
    match ValueKind::from_u8(kind) {
        Some(ValueKind::Put) => Ok(Some(LookupResult::Found {
            seq,
            value: value.to_vec(),
        })),
        Some(ValueKind::Delete) => Ok(Some(LookupResult::Deleted { seq })),
        None => Err(block.corruption(&format!("unknown value kind {kind}"))),
    }
}
