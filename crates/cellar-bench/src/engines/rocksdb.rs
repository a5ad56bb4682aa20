//! RocksDB, built from source by the `rocksdb` crate (RocksDB 11.8 with crate 0.25), tuned as
//! RocksDB's own guides recommend for this machine (docs/benchmarks.md, "How RocksDB is
//! configured"). What every engine shares is fixed by the harness: LZ4, 4 KiB blocks, bloom
//! filters at 10 bits/key, the same block cache and memtable sizes.
//!
//! Index and filter blocks live in one of two places (`OpenConfig::rocksdb_index_filter_in_cache`):
//! - held by the table readers outside the block cache (RocksDB's default and what Cellar
//!   does: a cold point read then costs one data-block read);
//! - partitioned and charged to the block cache at high priority, the top level pinned (the
//!   configuration RocksDB's "Partitioned Index/Filters" guide gives for a bounded memory
//!   budget: only the partitions in use compete for the cache, and they are evicted last).

use std::path::Path;
use std::time::{Duration, Instant};

use rocksdb::statistics::Ticker;
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType,
    Options, WriteBatch, WriteOptions, DB, DEFAULT_COLUMN_FAMILY_NAME,
};

use crate::engine::{copy_found, Direction, Engine, EngineStats, OpenConfig, Seek};
use crate::error::{BenchError, Result};

const NAME: &str = "rocksdb";

/// Background threads for flushes and compactions: RocksDB's guide sizes the pool to the
/// cores (`IncreaseParallelism`); with two cores, two compactions and a flush can overlap
/// without starving the foreground threads of more than that.
const BACKGROUND_JOBS: i32 = 3;

fn err(op: &'static str) -> impl FnOnce(rocksdb::Error) -> BenchError {
    move |e| BenchError::engine(NAME, op, e)
}

pub struct RocksEngine {
    db: DB,
    /// Kept for its statistics object (`get_ticker_count`).
    opts: Options,
    statistics: bool,
    index_filter_in_cache: bool,
    write: WriteOptions,
    write_sync: WriteOptions,
    _cache: Cache,
}

/// The table format: 4 KiB blocks, a full bloom filter, the shared block cache, and where
/// index and filter blocks live (module doc).
fn table_options(cache: &Cache, index_filter_in_cache: bool) -> BlockBasedOptions {
    let mut table = BlockBasedOptions::default();
    table.set_block_size(4096);
    table.set_bloom_filter(10.0, false); // false: full filter, not block-based
    table.set_block_cache(cache);
    if index_filter_in_cache {
        table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
        table.set_partition_filters(true);
        table.set_metadata_block_size(4096);
        table.set_cache_index_and_filter_blocks(true);
        table.set_cache_index_and_filter_blocks_with_high_priority(true);
        table.set_pin_top_level_index_and_filter(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    }
    table
}

/// Database options: the guide's basic tuning (dynamic level sizes, background jobs for two
/// cores, 1 MiB `bytes_per_sync`, pipelined writes for concurrent writers) around the
/// harness's memtable size.
fn db_options(cfg: &OpenConfig, table: &BlockBasedOptions) -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_compression_type(DBCompressionType::Lz4);
    opts.set_write_buffer_size(cfg.memtable_bytes as usize);
    // One active memtable plus two waiting for flush, as Cellar's default.
    opts.set_max_write_buffer_number(3);
    opts.set_level_compaction_dynamic_level_bytes(true);
    opts.set_max_background_jobs(BACKGROUND_JOBS);
    opts.set_bytes_per_sync(1 << 20);
    opts.set_enable_pipelined_write(true);
    opts.set_use_direct_reads(cfg.direct_reads);
    // Each workload reopens the database: keep old info LOGs from piling up in db_bytes.
    opts.set_keep_log_file_num(1);
    opts.set_block_based_table_factory(table);
    if cfg.rocksdb_statistics {
        opts.enable_statistics();
    }
    opts
}

impl RocksEngine {
    pub fn open(path: &Path, cfg: &OpenConfig) -> Result<Self> {
        // RocksDB's LRU cache, with its default high-priority pool (half the capacity) that
        // keeps index and filter partitions ahead of data blocks.
        let cache = Cache::new_lru_cache(cfg.block_cache_bytes as usize);
        let table = table_options(&cache, cfg.rocksdb_index_filter_in_cache);
        let opts = db_options(cfg, &table);
        // The default column family is named explicitly so that `cf_handle("default")`
        // (needed by `batched_multi_get_cf`) finds it, with these same options (`open_cf`
        // would give it `Options::default()`).
        let default_cf = ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, opts.clone());
        let db = DB::open_cf_descriptors(&opts, path, [default_cf]).map_err(err("open"))?;

        let write = WriteOptions::default(); // WAL on, no sync: write(2) per write group
        let mut write_sync = WriteOptions::default();
        write_sync.set_sync(true);
        Ok(RocksEngine {
            db,
            opts,
            statistics: cfg.rocksdb_statistics,
            index_filter_in_cache: cfg.rocksdb_index_filter_in_cache,
            write,
            write_sync,
            _cache: cache,
        })
    }

    fn wo(&self, sync: bool) -> &WriteOptions {
        if sync {
            &self.write_sync
        } else {
            &self.write
        }
    }

    fn property(&self, name: &str) -> Result<u64> {
        Ok(self
            .db
            .property_int_value(name)
            .map_err(err("property"))?
            .unwrap_or(0))
    }
}

impl Engine for RocksEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.db
            .put_opt(key, value, self.wo(sync))
            .map_err(err("put"))
    }

    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        let mut b = WriteBatch::default();
        for (k, v) in entries {
            b.put(k, v);
        }
        self.db.write_opt(b, self.wo(sync)).map_err(err("write"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let v = self.db.get_pinned(key).map_err(err("get"))?;
        Ok(v.map(|v| v.len()))
    }

    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let v = self.db.get_pinned(key).map_err(err("get"))?;
        Ok(copy_found(v.as_deref(), out))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        let cf = self
            .db
            .cf_handle(DEFAULT_COLUMN_FAMILY_NAME)
            .ok_or_else(|| BenchError::engine(NAME, "multi_get", "no default column family"))?;
        self.db
            .batched_multi_get_cf(cf, keys, false)
            .into_iter()
            .map(|r| r.map(|v| v.map(|v| v.len())).map_err(err("multi_get")))
            .collect()
    }

    fn scan(
        &self,
        dir: Direction,
        limit: usize,
        next_seek: &mut dyn FnMut(&mut Vec<u8>) -> Option<Seek>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        let mut it = self.db.raw_iterator();
        let mut key = Vec::new();
        while let Some(target) = next_seek(&mut key) {
            match (target, dir) {
                (Seek::First, _) => it.seek_to_first(),
                (Seek::Last, _) => it.seek_to_last(),
                (Seek::Key, Direction::Forward) => it.seek(&key),
                (Seek::Key, Direction::Reverse) => it.seek_for_prev(&key),
            }
            let mut n = 0;
            while n < limit && it.valid() {
                if let (Some(k), Some(v)) = (it.key(), it.value()) {
                    visit(k, v);
                }
                n += 1;
                if n == limit {
                    break;
                }
                match dir {
                    Direction::Forward => it.next(),
                    Direction::Reverse => it.prev(),
                }
            }
            it.status().map_err(err("iterate"))?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.db.flush().map_err(err("flush"))
    }

    fn compact(&self) -> Result<()> {
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    fn wait_for_background(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        const BUSY: [&str; 4] = [
            "rocksdb.mem-table-flush-pending",
            "rocksdb.num-running-flushes",
            "rocksdb.compaction-pending",
            "rocksdb.num-running-compactions",
        ];
        while Instant::now() < deadline {
            let mut busy = 0;
            for p in BUSY {
                busy += self.property(p)?;
            }
            if busy == 0 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(BenchError::engine(
            NAME,
            "wait_for_background",
            format!("background work still running after {timeout:?}"),
        ))
    }

    fn stats(&self) -> EngineStats {
        let ticker = |t: Ticker| self.statistics.then(|| self.opts.get_ticker_count(t));
        EngineStats {
            // Every block cache miss is one read of a block (data, index or filter) from a
            // table file.
            device_reads: ticker(Ticker::BlockCacheMiss),
            device_reads_method: if self.statistics {
                "rocksdb statistics rocksdb.block.cache.miss"
            } else {
                ""
            },
            // Table readers hold index and filter blocks only when they are not cached.
            resident_index_filter_bytes: if self.index_filter_in_cache {
                None
            } else {
                self.property("rocksdb.estimate-table-readers-mem").ok()
            },
            stall_micros: ticker(Ticker::StallMicros),
            wal_syncs: ticker(Ticker::WalFileSynced),
            ..EngineStats::default()
        }
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self.db);
        Ok(())
    }
}
