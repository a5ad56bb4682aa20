//! Helpers shared by the table layer's integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use cellar_engine::vfs::{MemVfs, Vfs};
use cellar_engine::{Compression, Options};
use cellar_table::{Cell, CellStore, Scanner};

pub const DB_PATH: &str = "/db";

/// Options that make a few hundred writes exercise flushes, compactions and multi-block
/// files; background work off so runs are deterministic.
pub fn tiny_options(vfs: Arc<dyn Vfs>) -> Options {
    Options {
        vfs,
        memtable_size_bytes: 4 << 10,
        max_immutable_memtables: 2,
        block_size_bytes: 256,
        block_restart_interval: 4,
        compression: Compression::Lz4,
        bloom_bits_per_key: 10,
        block_cache_size_bytes: 64 << 10,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 6,
        l0_stop_trigger: 10,
        level1_size_bytes: 8 << 10,
        level_size_ratio: 4,
        num_levels: 4,
        target_file_size_bytes: 4 << 10,
        wal_buffer_bytes: 1 << 10,
        multi_get_threads: 0,
        background_work: false,
        ..Options::default()
    }
}

/// A store on `vfs` (the same `vfs` reopens the same database).
pub fn open_store(vfs: &MemVfs) -> CellStore {
    CellStore::open(DB_PATH, tiny_options(Arc::new(vfs.clone()))).expect("open store")
}

/// A cell as a plain tuple: (row, family, qualifier, timestamp, value).
pub type Flat = (Vec<u8>, String, Vec<u8>, u64, Vec<u8>);

pub fn flat(c: Cell) -> Flat {
    (
        c.row,
        c.family.to_string(),
        c.qualifier,
        c.timestamp,
        c.value,
    )
}

/// Every cell of a scan, flattened; panics on a scan error.
pub fn collect(scanner: Scanner) -> Vec<Flat> {
    scanner.map(|c| flat(c.expect("scan"))).collect()
}

/// Names of the engine keyspaces that hold table families.
pub fn family_keyspaces(store: &CellStore) -> Vec<String> {
    let mut v: Vec<String> = store
        .db()
        .keyspace_names()
        .into_iter()
        .filter(|n| n.starts_with("t/"))
        .collect();
    v.sort();
    v
}
