//! Batches large enough to be put into the memtable by several threads at once.

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
    let vfs = MemVfs::new();
    let opts = Options {
        vfs: Arc::new(vfs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", opts.clone()).expect("open");
    let ks = db.default_keyspace();
    let mut model = BTreeMap::new();
    let mut b = WriteBatch::new();
    // 30,000 ops over 1,000 keys: every key is written, overwritten and deleted many times,
    // in chunks the parallel apply splits differently; the last op of each key must win.
    for i in 0..30_000u32 {
        let k = format!("k{:04}", (i * 7919) % 1000).into_bytes();
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
        if i == 20_000 {
            b.delete_range(&ks, b"k0100", b"k0200");
            model.retain(|k: &Vec<u8>, _| {
                !(k.as_slice() >= b"k0100".as_slice() && k.as_slice() < b"k0200".as_slice())
            });
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
