//! The database-wide budget for SST metadata held in memory for the life of a reader
//! (`Options::max_resident_metadata_bytes`). One counter, shared by every reader of a
//! database through its [`BlockCache`](super::BlockCache): a reader charges what it pins at
//! open and gives it back when dropped, so files deleted by compaction free their share.
//!
//! Unpartitioned files and the top levels of partitioned ones are always resident (there is
//! no other way to read them); they are charged unconditionally, so a partitioned file pins
//! its partitions only into what is left.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Debug)]
pub struct MetadataBudget {
    limit_bytes: u64,
    used_bytes: AtomicU64,
}

impl MetadataBudget {
    pub fn new(limit_bytes: u64) -> Self {
        MetadataBudget {
            limit_bytes,
            used_bytes: AtomicU64::new(0),
        }
    }

    /// Charges `n` bytes if that keeps the total within the limit.
    pub fn try_charge(&self, n: u64) -> bool {
        self.used_bytes
            .fetch_update(Relaxed, Relaxed, |used| {
                used.checked_add(n).filter(|&t| t <= self.limit_bytes)
            })
            .is_ok()
    }

    /// Charges `n` bytes whatever the limit (metadata that must stay resident).
    pub fn charge(&self, n: u64) {
        self.used_bytes.fetch_add(n, Relaxed);
    }

    pub fn release(&self, n: u64) {
        // Saturating: a release never exceeds the matching charge, but a miscount must not
        // wrap around and disable pinning for good.
        let _ = self
            .used_bytes
            .fetch_update(Relaxed, Relaxed, |used| Some(used.saturating_sub(n)));
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_within_the_limit_and_releases() {
        let b = MetadataBudget::new(100);
        assert!(b.try_charge(60));
        assert!(!b.try_charge(50));
        b.charge(50);
        assert_eq!(b.used_bytes(), 110);
        assert!(!b.try_charge(1));
        b.release(110);
        assert!(b.try_charge(100));
        assert!(!MetadataBudget::new(0).try_charge(1));
    }
}
