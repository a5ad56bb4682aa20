//! A process-wide cache of decompressed data blocks, keyed by (file number, block offset)
//! and weighed in bytes. File numbers are never reused, so entries of deleted files simply
//! age out.

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::sst::block::Block;

type Key = (u64, u64);

#[derive(Clone, Copy, Debug, Default)]
struct BlockWeighter;

impl Weighter<Key, Arc<Block>> for BlockWeighter {
    fn weight(&self, _key: &Key, block: &Arc<Block>) -> u64 {
        block.charge() as u64
    }
}

pub struct BlockCache {
    /// `None` when the capacity is 0: every lookup misses and nothing is kept.
    inner: Option<Cache<Key, Arc<Block>, BlockWeighter>>,
    capacity: u64,
}

impl BlockCache {
    pub fn new(capacity_bytes: usize) -> Self {
        let inner = (capacity_bytes > 0).then(|| {
            // quick_cache sizes its tables from an item estimate; 4 KiB is the default block.
            let items = (capacity_bytes / 4096).max(16);
            Cache::with_weighter(items, capacity_bytes as u64, BlockWeighter)
        });
        BlockCache {
            inner,
            capacity: capacity_bytes as u64,
        }
    }

    pub fn get(&self, file_number: u64, offset: u64) -> Option<Arc<Block>> {
        self.inner.as_ref()?.get(&(file_number, offset))
    }

    pub fn insert(&self, file_number: u64, offset: u64, block: Arc<Block>) {
        if let Some(c) = &self.inner {
            c.insert((file_number, offset), block);
        }
    }

    /// Bytes currently charged to cached blocks.
    pub fn used_bytes(&self) -> u64 {
        self.inner.as_ref().map_or(0, |c| c.weight())
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("used", &self.used_bytes())
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
        for i in 0..200 {
            c.insert(3, i, block(4000));
        }
        assert!(c.used_bytes() <= 64 << 10, "used {}", c.used_bytes());
        assert!(c.used_bytes() > 0);
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let c = BlockCache::new(0);
        c.insert(1, 0, block(10));
        assert!(c.get(1, 0).is_none());
        assert_eq!(c.used_bytes(), 0);
    }
}
