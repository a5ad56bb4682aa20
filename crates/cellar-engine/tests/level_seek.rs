//! A seek reads blocks only from the levels whose files hold keys at or after it before the
//! other levels' next keys: a level whose next file starts after the sought key is positioned
//! at that file's smallest key, from the manifest, and read only if the walk gets there.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use cellar_engine::vfs::Vfs;
use cellar_engine::{Db, Durability, Options, ReadOptions, WriteOptions};

use common::{mem_vfs, scan_all, tiny_options};

const DB: &str = "/db";

fn options(vfs: Arc<dyn Vfs>) -> Options {
    Options {
        // Keep every block a seek reads out of the cache between the seeks measured.
        block_cache_size_bytes: 0,
        // Each stretch stays in the level-0 file its flush wrote: three files with disjoint
        // key ranges, each a level of its own to the iterator.
        l0_compaction_trigger: 100,
        l0_slowdown_trigger: 200,
        l0_stop_trigger: 300,
        memtable_size_bytes: 1 << 20,
        ..tiny_options(vfs, false)
    }
}

fn key(stretch: char, i: u32) -> Vec<u8> {
    format!("{stretch}{i:04}").into_bytes()
}

/// Three stretches of keys, each flushed to a file of its own, as a load in key order
/// leaves them (there in files of different levels). Returns the model.
fn load_in_stretches(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let ks = db.default_keyspace();
    let w = WriteOptions::new(Durability::Buffered);
    let mut model = BTreeMap::new();
    for stretch in ['a', 'b', 'c'] {
        for i in 0..300 {
            let v = format!(
                "{stretch}-{:060}",
                u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            );
            let k = key(stretch, i);
            let v = v.into_bytes();
            db.put(&ks, &k, &v, &w).expect("put");
            model.insert(k, v);
        }
        db.flush().expect("flush");
    }
    model
}

fn level0_files(db: &Db) -> usize {
    db.stats().keyspaces[0].levels[0].files
}

/// Block reads of one seek and a walk of `steps` entries, from a cold block cache.
fn blocks_read(db: &Db, at: &[u8], steps: usize) -> (u64, Vec<Vec<u8>>) {
    let before = db.stats().block_cache_misses;
    let mut it = db
        .iter(&db.default_keyspace(), ReadOptions::default())
        .expect("iter");
    it.seek(at);
    let mut keys = Vec::new();
    while it.valid() && keys.len() < steps {
        keys.push(it.key().to_vec());
        it.next();
    }
    it.status().expect("walk");
    (db.stats().block_cache_misses - before, keys)
}

#[test]
fn a_seek_reads_only_the_levels_whose_keys_it_reaches() {
    let (_mem, vfs) = mem_vfs();
    let db = Db::open(DB, options(vfs)).expect("open");
    let model = load_in_stretches(&db);
    assert_eq!(level0_files(&db), 3, "one file per stretch");

    // Within the first stretch: one file's blocks; the `b` and `c` files are positioned at
    // their first keys without a read. A seek into the last stretch passes the other two
    // files' ends, which reads nothing from them either.
    let (reads, keys) = blocks_read(&db, &key('a', 10), 3);
    assert_eq!(keys, vec![key('a', 10), key('a', 11), key('a', 12)]);
    let (one_level, _) = blocks_read(&db, &key('c', 10), 3);
    assert_eq!(
        reads, one_level,
        "a seek into the first stretch read {reads} blocks, one into the last {one_level}"
    );

    // A walk across the stretches reads the next level when it gets there.
    let (_, keys) = blocks_read(&db, &key('a', 298), 4);
    assert_eq!(
        keys,
        vec![key('a', 298), key('a', 299), key('b', 0), key('b', 1)]
    );
    let (_, keys) = blocks_read(&db, b"b", 1);
    assert_eq!(keys, vec![key('b', 0)]);

    // Every value read through such a position is the stored one.
    let ks = db.default_keyspace();
    assert_eq!(scan_all(&db, &ks), model);
    let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
    for probe in [&b"a"[..], b"a0150", b"a9", b"b", b"b0299", b"c"] {
        it.seek(probe);
        let want = model.range(probe.to_vec()..).next();
        assert_eq!(
            it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
            want.map(|(k, v)| (k.clone(), v.clone())),
            "seek to {}",
            String::from_utf8_lossy(probe)
        );
    }
}
