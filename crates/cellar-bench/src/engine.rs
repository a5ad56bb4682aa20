//! The one interface every benchmarked engine implements. Workloads only talk to this
//! trait, so each engine runs exactly the same loops.

use std::path::Path;
use std::time::Duration;

use crate::error::Result;

/// How a workload wants the engine opened. Everything else (compression LZ4, 4 KiB blocks,
/// 10 bits/key bloom filters) is fixed and identical for every engine.
#[derive(Debug, Clone)]
pub struct OpenConfig {
    pub block_cache_bytes: u64,
    pub memtable_bytes: u64,
    /// Read table files with O_DIRECT (bypass the page cache).
    pub direct_reads: bool,
    /// RocksDB only: enable its statistics object (the source of device reads).
    #[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
    pub rocksdb_statistics: bool,
    /// RocksDB only: index and filter blocks partitioned in the block cache (else held by
    /// the table readers).
    #[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
    pub rocksdb_index_filter_in_cache: bool,
    /// Cellar only: how a database opened at an `s3://bucket/prefix` path is set up
    /// (the `objstore` suite's bucket variants); `None` everywhere else.
    pub object_store: Option<ObjectStoreTarget>,
}

/// Cellar's settings for a database in an S3-compatible bucket
/// (`cellar_engine::ObjectStoreOptions`): where its WAL lives and its local disk cache.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ObjectStoreTarget {
    /// The WAL in the bucket (`wal=object`) rather than on local disk (`wal=local`).
    pub wal_in_bucket: bool,
    /// The disk cache of SST data (and, with `wal=local`, the WAL).
    pub cache_dir: std::path::PathBuf,
    pub cache_bytes: u64,
    /// The S3 endpoint; `None`: `AWS_ENDPOINT_URL`.
    pub endpoint: Option<String>,
}

/// Where a scan positions its iterator before visiting entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seek {
    First,
    Last,
    /// The key the caller wrote into the key buffer.
    Key,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// Counters an engine can report about itself; `None` where it has no such counter.
#[derive(Debug, Clone, Default)]
pub struct EngineStats {
    /// Reads issued against table files (block cache misses).
    pub device_reads: Option<u64>,
    /// What `device_reads` counts, for the record.
    pub device_reads_method: &'static str,
    pub resident_index_filter_bytes: Option<u64>,
    pub stall_micros: Option<u64>,
    pub wal_syncs: Option<u64>,
    /// Bytes the engine read ahead of lookups to warm its files (Cellar's cold-start
    /// warm-up), and the files it warmed.
    pub warm_up_bytes: Option<u64>,
    pub warm_ups: Option<u64>,
    /// Counters of the storage under the engine by name (Cellar in a bucket: its GETs and
    /// PUTs per file kind, its disk cache's hits and misses); empty when it has none.
    pub storage: Vec<(&'static str, u64)>,
}

/// [`Engine::read_into`]'s answer from the value an engine found: copied into `out`.
pub fn copy_found(value: Option<&[u8]>, out: &mut Vec<u8>) -> bool {
    out.clear();
    out.extend_from_slice(value.unwrap_or_default());
    value.is_some()
}

pub trait Engine: Send + Sync {
    fn name(&self) -> &'static str;

    /// One key, one write. `sync`: durable (fsync) before returning.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()>;

    /// All entries in one atomic write.
    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()>;

    /// The length of the value stored under `key`, if any. (Lengths, not values: each
    /// adapter uses its engine's cheapest way to read a value; the harness checks sizes.)
    fn get(&self, key: &[u8]) -> Result<Option<usize>>;

    /// The value stored under `key`, copied into `out` (replacing what it held); `false`
    /// when there is none. What a client that uses the value pays: a YCSB read hands every
    /// field's bytes to its caller, while [`get`](Self::get)'s length lets an engine that
    /// returns a reference into its memory map answer without touching the value.
    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// Value lengths for all keys, in order, through the engine's batched lookup.
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>>;

    /// Creates ONE iterator and drives it: for each position `next_seek` asks for (it may
    /// write a key into the buffer and answer [`Seek::Key`]), positions the iterator
    /// (`seek` forward, `seek_for_prev` in reverse) and visits up to `limit` entries, moving
    /// in `dir`. Stops when `next_seek` answers `None`.
    fn scan(
        &self,
        dir: Direction,
        limit: usize,
        next_seek: &mut dyn FnMut(&mut Vec<u8>) -> Option<Seek>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()>;

    /// Writes the memtable(s) out to table files and waits for that.
    fn flush(&self) -> Result<()>;

    /// Compacts the whole key range.
    fn compact(&self) -> Result<()>;

    /// Waits until no flush or compaction is pending or running (or `timeout` passes).
    fn wait_for_background(&self, timeout: Duration) -> Result<()>;

    fn stats(&self) -> EngineStats;

    fn close(self: Box<Self>) -> Result<()>;
}

/// Opens engine `name` at `path`.
pub fn open(name: &str, path: &Path, cfg: &OpenConfig) -> Result<Box<dyn Engine>> {
    crate::engines::open(name, path, cfg)
}

/// The entries of a client buffer that holds keys and values back to back, `ends` giving
/// each entry's (key end, value end) offsets: what `put_batch` takes.
pub fn buffered_entries<'a>(buf: &'a [u8], ends: &[(usize, usize)]) -> Vec<(&'a [u8], &'a [u8])> {
    let mut start = 0;
    ends.iter()
        .map(|&(key_end, value_end)| {
            let e = (&buf[start..key_end], &buf[key_end..value_end]);
            start = value_end;
            e
        })
        .collect()
}

/// Big enough for every block of the dataset, uncompressed, with room to spare: 1.5 × the
/// raw key+value bytes plus 8 MiB, rounded up to a MiB.
pub fn auto_cache_bytes(num: u64, key_size: usize, value_size: usize) -> u64 {
    let raw = num.saturating_mul((key_size + value_size) as u64);
    let want = raw.saturating_mul(3) / 2 + 8 * (1 << 20);
    want.div_ceil(1 << 20) << 20
}
