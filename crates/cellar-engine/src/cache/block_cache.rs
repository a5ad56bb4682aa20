//! A process-wide cache of decoded SST blocks, keyed by (file number, block offset) and
//! weighed in bytes: decompressed data blocks, and the index and filter partitions of
//! partitioned files that the metadata budget could not pin. Offsets within a file are
//! distinct and file numbers are never reused, so keys stay unique and entries of deleted
//! files simply age out. The cache also carries the database's [`MetadataBudget`], so every
//! reader that shares the cache shares the budget.

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::cache::admission::{Doorkeeper, WalkHitRate};
use crate::cache::warm::WarmUp;
use crate::cache::MetadataBudget;
use crate::sst::block::{Block, CACHE_LINE};
use crate::sst::bloom::BloomFilter;
use crate::sst::index::IndexBlock;
use crate::sst::prefetch;

type Key = (u64, u64);

/// What one cache slot holds; each kind is charged by the memory it keeps.
#[derive(Clone)]
pub enum Cached {
    Data(CachedBlock),
    Index(Arc<IndexBlock>),
    Filter(Arc<BloomFilter>),
}

/// A cached data block, and the bytes a lookup in it reads first (`Block::lookup_bytes`) as
/// an address range, kept beside the `Arc` in the cache's slot.
///
/// Why: the cache hands out a block by cloning its slot's value, and the clone's first touch
/// of the block is the `Arc`'s counter, a likely cache miss; the entries come only after it,
/// a second miss in series. With the range in the slot, `clone` asks for those lines first,
/// so both misses are in flight together (docs/design/point-lookup-cpu.md, "The
/// block's lines asked for with its slot").
pub struct CachedBlock {
    block: Arc<Block>,
    /// Start address and length of the bytes to prefetch; only ever used as a hint.
    lines: (usize, usize),
}

impl CachedBlock {
    fn new(block: Arc<Block>) -> Self {
        let bytes = block.lookup_bytes();
        let lines = (bytes.as_ptr() as usize, bytes.len());
        CachedBlock { block, lines }
    }
}

impl Clone for CachedBlock {
    fn clone(&self) -> Self {
        let (start, len) = self.lines;
        for at in (0..len).step_by(CACHE_LINE) {
            // The block is alive while its slot holds it, and a prefetch never faults.
            prefetch::read((start + at) as *const u8);
        }
        CachedBlock {
            block: Arc::clone(&self.block),
            lines: self.lines,
        }
    }
}

impl Cached {
    fn charge(&self) -> u64 {
        let bytes = match self {
            Cached::Data(b) => b.block.charge(),
            Cached::Index(ix) => ix.resident_bytes(),
            Cached::Filter(f) => f.resident_bytes() + std::mem::size_of::<BloomFilter>(),
        };
        bytes as u64
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct EntryWeighter;

impl Weighter<Key, Cached> for EntryWeighter {
    fn weight(&self, _key: &Key, entry: &Cached) -> u64 {
        entry.charge()
    }
}

pub struct BlockCache {
    /// `None` when the capacity is 0: every lookup misses and nothing is kept.
    inner: Option<Cache<Key, Cached, EntryWeighter>>,
    capacity: u64,
    budget: Arc<MetadataBudget>,
    /// The database's cold-start warm-up, if on: readers sharing the cache share it.
    warm_up: Option<Arc<WarmUp>>,
    /// Admission of blocks point reads missed (`admission.rs`); `None` admits every one.
    doorkeeper: Option<Doorkeeper>,
    /// Whether blocks short walks miss skip the doorkeeper (`admission.rs`).
    walks: WalkHitRate,
}

impl BlockCache {
    /// A cache whose readers may pin any amount of metadata (tools, tests).
    pub fn new(capacity_bytes: usize) -> Self {
        Self::with_metadata_budget(capacity_bytes, u64::MAX)
    }

    /// A cache whose readers pin index and filter partitions only while their total stays
    /// within `metadata_budget_bytes`.
    pub fn with_metadata_budget(capacity_bytes: usize, metadata_budget_bytes: u64) -> Self {
        let inner = (capacity_bytes > 0).then(|| {
            // quick_cache sizes its tables from an item estimate; 4 KiB is the default block.
            let items = (capacity_bytes / 4096).max(16);
            Cache::with_weighter(items, capacity_bytes as u64, EntryWeighter)
        });
        BlockCache {
            inner,
            capacity: capacity_bytes as u64,
            budget: Arc::new(MetadataBudget::new(metadata_budget_bytes)),
            warm_up: None,
            doorkeeper: None,
            walks: WalkHitRate::default(),
        }
    }

    /// The same cache, whose readers warm their files through `warm_up` (see `warm.rs`).
    pub fn with_warm_up(mut self, warm_up: Arc<WarmUp>) -> Self {
        self.warm_up = Some(warm_up);
        self
    }

    /// The same cache, keeping a block a point read missed only on its second miss
    /// (`admission.rs`).
    pub fn with_doorkeeper(mut self) -> Self {
        self.doorkeeper = Some(Doorkeeper::for_cache(self.capacity as usize));
        self
    }

    /// Keeps a data block a point read just missed, if the doorkeeper lets it in (every
    /// block without one).
    pub fn insert_point_read(&self, file_number: u64, offset: u64, block: Arc<Block>) {
        if self
            .doorkeeper
            .as_ref()
            .is_none_or(|d| d.admit(file_number, offset))
        {
            self.insert(file_number, offset, block);
        }
    }

    /// Counts an iterator's lookup of a data block, hit or miss (`WalkHitRate`).
    pub fn record_walk_lookup(&self, hit: bool) {
        self.walks.record(hit);
    }

    /// Keeps a data block a short walk just missed: always while walks hit the cache at
    /// least as often as they miss, else if the doorkeeper lets it in (`WalkHitRate`).
    pub fn insert_walk_block(&self, file_number: u64, offset: u64, block: Arc<Block>) {
        if self.walks.keep_all() {
            self.insert(file_number, offset, block);
        } else {
            self.insert_point_read(file_number, offset, block);
        }
    }

    pub fn warm_up(&self) -> Option<&Arc<WarmUp>> {
        self.warm_up.as_ref()
    }

    fn lookup(&self, file_number: u64, offset: u64) -> Option<Cached> {
        self.inner.as_ref()?.get(&(file_number, offset))
    }

    pub fn get(&self, file_number: u64, offset: u64) -> Option<Arc<Block>> {
        match self.lookup(file_number, offset)? {
            Cached::Data(b) => Some(b.block),
            _ => None,
        }
    }

    pub fn get_index(&self, file_number: u64, offset: u64) -> Option<Arc<IndexBlock>> {
        match self.lookup(file_number, offset)? {
            Cached::Index(ix) => Some(ix),
            _ => None,
        }
    }

    pub fn get_filter(&self, file_number: u64, offset: u64) -> Option<Arc<BloomFilter>> {
        match self.lookup(file_number, offset)? {
            Cached::Filter(f) => Some(f),
            _ => None,
        }
    }

    pub fn insert(&self, file_number: u64, offset: u64, block: Arc<Block>) {
        self.insert_entry(file_number, offset, Cached::Data(CachedBlock::new(block)));
    }

    pub fn insert_entry(&self, file_number: u64, offset: u64, entry: Cached) {
        if let Some(c) = &self.inner {
            c.insert((file_number, offset), entry);
        }
    }

    /// Bytes currently charged to cached entries.
    pub fn used_bytes(&self) -> u64 {
        self.inner.as_ref().map_or(0, |c| c.weight())
    }

    /// The metadata budget shared by every reader of this cache.
    pub fn metadata_budget(&self) -> &Arc<MetadataBudget> {
        &self.budget
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("used", &self.used_bytes())
            .field("metadata_budget", &self.budget)
            .field("doorkeeper", &self.doorkeeper)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn block(len: usize) -> Arc<Block> {
        let mut data = vec![0u8; len];
        data.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        Arc::new(Block::new(data, Arc::from(Path::new("c")), 0).expect("valid block"))
    }

    #[test]
    fn caches_and_bounds_weight() {
        let c = BlockCache::new(64 << 10);
        c.insert(1, 0, block(1000));
        assert!(c.get(1, 0).is_some());
        assert!(c.get(2, 0).is_none());
        // A data block is not returned as another kind.
        assert!(c.get_index(1, 0).is_none());
        assert!(c.get_filter(1, 0).is_none());
        for i in 0..200 {
            c.insert(3, i, block(4000));
        }
        assert!(c.used_bytes() <= 64 << 10, "used {}", c.used_bytes());
        assert!(c.used_bytes() > 0);
    }

    /// A hit hands out the block that was inserted, not a copy.
    #[test]
    fn a_hit_is_the_inserted_block() {
        let c = BlockCache::new(64 << 10);
        let b = block(1000);
        c.insert(1, 0, Arc::clone(&b));
        let got = c.get(1, 0).expect("cached");
        assert!(Arc::ptr_eq(&got, &b));
        assert_eq!(got.data(), b.data());
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let c = BlockCache::new(0);
        c.insert(1, 0, block(10));
        assert!(c.get(1, 0).is_none());
        assert_eq!(c.used_bytes(), 0);
    }
}
