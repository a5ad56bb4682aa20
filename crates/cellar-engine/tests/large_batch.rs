//! Batches large enough to be put into the memtable as sorted runs (mid-size ones on the
//! writer's thread, large ones by several threads at once): the last op of a key wins.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use cellar_engine::vfs::MemVfs;
use cellar_engine::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
use common::scan_all;

#[test]
fn large_batch_applies_in_op_order() {
    // 30,000 ops over 1,000 keys: every key is written, overwritten and deleted many times,
    // in chunks the parallel apply splits differently.
    applies_in_op_order(30_000, 1000);
}

#[test]
fn mid_size_batch_applies_in_op_order() {
    // 1,000 ops over 100 keys: sorted on the writer's thread.
    applies_in_op_order(1000, 100);
}

#[test]
fn small_batch_applies_in_op_order() {
    applies_in_op_order(100, 10);
}

#[test]
fn batch_at_the_sorted_threshold_applies_in_op_order() {
    // 8 ops over 3 keys: the smallest batch inserted as a sorted run.
    applies_in_op_order(8, 3);
}

/// One batch of `ops` puts and deletes over `keys` keys, with a range deletion two thirds in;
/// the database must hold what the last op of each key says, before and after recovery.
fn applies_in_op_order(ops: u32, keys: u32) {
    let vfs = MemVfs::new();
    let opts = Options {
        vfs: Arc::new(vfs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", opts.clone()).expect("open");
    let ks = db.default_keyspace();
    let mut model = BTreeMap::new();
    let mut b = WriteBatch::new();
    let (from, to) = (
        format!("k{:04}", keys / 10).into_bytes(),
        format!("k{:04}", keys / 5).into_bytes(),
    );
    for i in 0..ops {
        let k = format!("k{:04}", (i * 7919) % keys).into_bytes();
        match i % 5 {
            4 => {
                b.delete(&ks, &k);
                model.remove(&k);
            }
            _ => {
                let v = format!("v{i}").into_bytes();
                b.put(&ks, &k, &v);
                model.insert(k, v);
            }
        }
        if i == ops * 2 / 3 {
            b.delete_range(&ks, &from, &to);
            model.retain(|k: &Vec<u8>, _| !(*k >= from && *k < to));
        }
    }
    db.write(b, &WriteOptions::default()).expect("write");
    assert_eq!(scan_all(&db, &ks), model);
    for (k, v) in model.iter().take(50) {
        assert_eq!(
            db.get(&ks, k, &ReadOptions::default())
                .expect("get")
                .as_ref(),
            Some(v)
        );
    }
    // And the same after recovery from the WAL, and after a flush.
    drop(db);
    let db = Db::open("/db", opts).expect("reopen");
    assert_eq!(scan_all(&db, &ks), model);
    db.flush().expect("flush");
    assert_eq!(scan_all(&db, &ks), model);
}
