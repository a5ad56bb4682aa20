//! Counters the engine keeps while it runs, and the `Stats` snapshot `Db::stats()` returns.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters, shared by every component of one database. Relaxed atomics: these are
/// for observation, never for synchronisation.
#[derive(Debug, Default)]
pub struct Counters {
    /// `pread`s issued against SST files (block cache misses, possibly coalesced).
    pub device_reads: AtomicU64,
    pub device_read_bytes: AtomicU64,
    /// Of `device_reads`, the point reads the OS served from its page cache without
    /// waiting on the disk (`RandomAccessFile::read_cached_at`).
    pub page_cache_reads: AtomicU64,
    /// Block reads served in place through a file's memory map (`sst/mapped.rs`), not
    /// counted in `device_reads`.
    pub mapped_reads: AtomicU64,
    pub block_cache_hits: AtomicU64,
    pub block_cache_misses: AtomicU64,
    /// Point lookups a bloom filter answered "absent" without touching a block.
    pub bloom_negatives: AtomicU64,
    /// Filter said "maybe" but the key was not in the file.
    pub bloom_false_positives: AtomicU64,
    pub gets: AtomicU64,
    pub writes: AtomicU64,
    pub write_bytes: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub wal_bytes: AtomicU64,
    /// Writers whose batch was committed by another writer's WAL write (group commit).
    pub grouped_writes: AtomicU64,
    pub stall_micros: AtomicU64,
    pub slowdown_micros: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub compactions: AtomicU64,
    /// Compactions running now (a gauge, not a total).
    pub compactions_running: AtomicU64,
    pub compaction_read_bytes: AtomicU64,
    pub compaction_write_bytes: AtomicU64,
    /// SSTs read whole into the page cache by the cold-start warm-up, the bytes read, and
    /// the bytes it found cached already and skipped.
    pub warm_ups: AtomicU64,
    pub warm_up_bytes: AtomicU64,
    pub warm_up_cached_bytes: AtomicU64,
}

impl Counters {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }
}

/// One level of one keyspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Level number (0 is L0).
    pub level: usize,
    /// SST files in the level.
    pub files: usize,
    /// Their total size in bytes.
    pub bytes: u64,
}

/// One keyspace: its levels and range tombstones.
#[derive(Debug, Clone, Default)]
pub struct KeyspaceStats {
    /// The keyspace's name.
    pub name: String,
    /// Its levels, L0 first.
    pub levels: Vec<LevelStats>,
    /// Live range tombstones.
    pub range_tombstones: usize,
}

/// A point-in-time copy of everything `Db::stats()` reports.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// `pread`s issued against SST files (block cache misses, possibly coalesced).
    pub device_reads: u64,
    /// Bytes those reads returned.
    pub device_read_bytes: u64,
    /// Of `device_reads`, the point reads the page cache served without waiting on the disk.
    pub page_cache_reads: u64,
    /// Block reads served in place through a file's memory map while the page cache held
    /// the file (not in `device_reads`).
    pub mapped_reads: u64,
    /// Block lookups the block cache served.
    pub block_cache_hits: u64,
    /// Block lookups the block cache missed.
    pub block_cache_misses: u64,
    /// Bytes the block cache holds.
    pub block_cache_bytes: u64,
    /// Point lookups a bloom filter answered "absent" without touching a block.
    pub bloom_negatives: u64,
    /// Lookups a filter let through for a key the file did not hold.
    pub bloom_false_positives: u64,
    /// Point lookups.
    pub gets: u64,
    /// Write batches committed.
    pub writes: u64,
    /// Bytes of those batches.
    pub write_bytes: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// Bytes written to the WAL.
    pub wal_bytes: u64,
    /// Writers whose batch was committed by another writer's WAL write (group commit).
    pub grouped_writes: u64,
    /// Microseconds writers waited on a full L0 or too many frozen memtables.
    pub stall_micros: u64,
    /// Microseconds writers were delayed as L0 grew (`Options::l0_slowdown_trigger`).
    pub slowdown_micros: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Bytes of SSTs the flushes wrote.
    pub flush_bytes: u64,
    /// Compactions.
    pub compactions: u64,
    /// Compactions running when the snapshot was taken.
    pub compactions_running: u64,
    /// Bytes compactions read.
    pub compaction_read_bytes: u64,
    /// Bytes compactions wrote.
    pub compaction_write_bytes: u64,
    /// Files the cold-start warm-up read whole (`Options::warm_up_budget_bytes`).
    pub warm_ups: u64,
    /// Bytes the warm-up read.
    pub warm_up_bytes: u64,
    /// Bytes of the files it warmed that the page cache held already, which it did not read.
    pub warm_up_cached_bytes: u64,
    /// Size of the live files the warm-up warmed or has queued.
    pub warm_up_budget_used_bytes: u64,
    /// Bytes in the active and frozen memtables.
    pub memtable_bytes: u64,
    /// Frozen memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Bytes of SST index blocks and bloom filters held in memory for the life of their
    /// files (index and filter partitions in the block cache are not counted).
    pub resident_index_filter_bytes: u64,
    /// What the open files charge to `Options::max_resident_metadata_bytes`.
    pub metadata_budget_used_bytes: u64,
    /// Entries (all versions, tombstones included) in live SSTs.
    pub sst_entries: u64,
    /// Bytes of live SSTs.
    pub sst_bytes: u64,
    /// The last sequence number given to a write.
    pub last_sequence: u64,
    /// Every keyspace.
    pub keyspaces: Vec<KeyspaceStats>,
    /// Counters of the storage under the engine, by name: for a database in an object store
    /// its requests (GETs, PUTs, bytes, per file kind) and its disk cache's hits, misses and
    /// bytes (`Vfs::counters`); empty on a local file system.
    pub storage: Vec<(&'static str, u64)>,
    /// The writer epoch of a database in an object store (0 in a directory).
    pub writer_epoch: u64,
}

impl Counters {
    pub fn snapshot_into(&self, s: &mut Stats) {
        s.device_reads = self.device_reads.load(Relaxed);
        s.device_read_bytes = self.device_read_bytes.load(Relaxed);
        s.page_cache_reads = self.page_cache_reads.load(Relaxed);
        s.mapped_reads = self.mapped_reads.load(Relaxed);
        s.block_cache_hits = self.block_cache_hits.load(Relaxed);
        s.block_cache_misses = self.block_cache_misses.load(Relaxed);
        s.bloom_negatives = self.bloom_negatives.load(Relaxed);
        s.bloom_false_positives = self.bloom_false_positives.load(Relaxed);
        s.gets = self.gets.load(Relaxed);
        s.writes = self.writes.load(Relaxed);
        s.write_bytes = self.write_bytes.load(Relaxed);
        s.wal_syncs = self.wal_syncs.load(Relaxed);
        s.wal_bytes = self.wal_bytes.load(Relaxed);
        s.grouped_writes = self.grouped_writes.load(Relaxed);
        s.stall_micros = self.stall_micros.load(Relaxed);
        s.slowdown_micros = self.slowdown_micros.load(Relaxed);
        s.flushes = self.flushes.load(Relaxed);
        s.flush_bytes = self.flush_bytes.load(Relaxed);
        s.compactions = self.compactions.load(Relaxed);
        s.compactions_running = self.compactions_running.load(Relaxed);
        s.compaction_read_bytes = self.compaction_read_bytes.load(Relaxed);
        s.compaction_write_bytes = self.compaction_write_bytes.load(Relaxed);
        s.warm_ups = self.warm_ups.load(Relaxed);
        s.warm_up_bytes = self.warm_up_bytes.load(Relaxed);
        s.warm_up_cached_bytes = self.warm_up_cached_bytes.load(Relaxed);
    }
}
