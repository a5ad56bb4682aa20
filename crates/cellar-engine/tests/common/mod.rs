//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use cellar_engine::vfs::{MemVfs, Vfs};
use cellar_engine::{Compression, Db, Keyspace, Options, ReadOptions};

/// Options that make a few hundred writes exercise flushes, multi-level compaction and
/// multi-block files.
pub fn tiny_options(vfs: Arc<dyn Vfs>, background: bool) -> Options {
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
        background_work: background,
        ..Options::default()
    }
}

pub fn mem_vfs() -> (MemVfs, Arc<dyn Vfs>) {
    let m = MemVfs::new();
    let a: Arc<dyn Vfs> = Arc::new(m.clone());
    (m, a)
}

/// Every live key and value of `ks`, by a forward scan.
pub fn scan_all(db: &Db, ks: &Keyspace) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(ks, ReadOptions::default()).expect("iterator");
    it.seek_to_first();
    let mut out = BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().expect("scan status");
    out
}

/// The model's `delete_range`: removes every key in `[start, end)`.
pub fn model_delete_range(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, start: &[u8], end: &[u8]) {
    model.retain(|k, _| !(k.as_slice() >= start && k.as_slice() < end));
}

/// Puts `count` records `key{i:08}` → `{i:0100}` (buffered) and flushes them into one SST.
pub fn put_numbered_records_and_flush(db: &Db, count: u32) {
    let ks = db.default_keyspace();
    let wo = cellar_engine::WriteOptions::new(cellar_engine::Durability::Buffered);
    for i in 0..count {
        let value = format!("{i:0100}");
        db.put(&ks, format!("key{i:08}").as_bytes(), value.as_bytes(), &wo)
            .expect("put");
    }
    db.flush().expect("flush");
}
