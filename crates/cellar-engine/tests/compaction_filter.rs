//! The compaction filter hook: entries a layer above hides for good are dropped by
//! compactions, but only where that is safe (every reader sees them, nothing older below).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use cellar_engine::vfs::MemVfs;
use cellar_engine::{CompactionFilter, CompactionFilterRun};
use cellar_engine::{Db, Options, ReadOptions, WriteOptions};
use common::{scan_all, tiny_options};

/// Drops puts whose value is `b"expired"`.
struct DropExpired;
struct DropExpiredRun;

impl CompactionFilter for DropExpired {
    fn start(&self) -> Box<dyn CompactionFilterRun> {
        Box::new(DropExpiredRun)
    }
}

impl CompactionFilterRun for DropExpiredRun {
    fn decide(&mut self, _key: &[u8], value: &[u8], _droppable: bool) -> bool {
        value == b"expired"
    }
}

fn open(vfs: &MemVfs) -> Db {
    let opts = Options {
        ..tiny_options(Arc::new(vfs.clone()), false)
    };
    Db::open("/db", opts).expect("open")
}

#[test]
fn compaction_filter_drops_entries_at_the_bottom_and_nothing_a_snapshot_sees() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let ks = db.default_keyspace();
    let wo = WriteOptions::default();
    for i in 0..200u32 {
        let v: &[u8] = if i % 2 == 0 { b"expired" } else { b"live" };
        db.put(&ks, format!("k{i:04}").as_bytes(), v, &wo)
            .expect("put");
    }
    db.set_compaction_filter(&ks, Some(Arc::new(DropExpired)));
    // A snapshot pins everything: the compaction must keep what it can see.
    let snap = db.snapshot();
    db.compact_range(&ks, None, None).expect("compact");
    assert_eq!(scan_all(&db, &ks).len(), 200);
    let mut it = db.iter(&ks, ReadOptions::at(&snap)).expect("iter");
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert_eq!(n, 200);
    drop(it);
    drop(snap);
    db.compact_range(&ks, None, None).expect("compact");
    let left = scan_all(&db, &ks);
    assert_eq!(left.len(), 100);
    assert!(left.values().all(|v| v == b"live"));
    // Without the filter, nothing more goes.
    db.set_compaction_filter(&ks, None);
    db.put(&ks, b"k9999", b"expired", &wo).expect("put");
    db.compact_range(&ks, None, None).expect("compact");
    assert_eq!(scan_all(&db, &ks).len(), 101);
}

#[test]
fn compaction_filter_never_uncovers_an_older_version_below() {
    // The same key written twice: the old value deep down, the new one ("expired") above.
    // Dropping the new one while the old one survives below would bring the old value back,
    // so above the bottom the filter's verdict is not applied.
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let ks = db.default_keyspace();
    let wo = WriteOptions::default();
    db.put(&ks, b"key", b"old", &wo).expect("put");
    // Incompressible padding, more than level 1's target: "old" must end up below level 1,
    // so that the compaction taking "expired" out of level 0 is not the bottom one.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..300u32 {
        let pad: Vec<u8> = (0..200)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        db.put(&ks, format!("pad{i:04}").as_bytes(), &pad, &wo)
            .expect("put");
    }
    db.compact_range(&ks, None, None).expect("compact");
    let levels = &db.stats().keyspaces[0].levels;
    assert!(
        levels[1].files == 0 && levels[2..].iter().any(|l| l.files > 0),
        "{levels:?}"
    );
    db.put(&ks, b"key", b"expired", &wo).expect("put");
    db.flush().expect("flush");
    db.set_compaction_filter(&ks, Some(Arc::new(DropExpired)));
    // Whatever compactions run, "key" never reads as "old".
    for _ in 0..3 {
        db.put(&ks, b"zz", b"x", &wo).expect("put");
        db.flush().expect("flush");
        let v = db.get(&ks, b"key", &ReadOptions::default()).expect("get");
        assert_ne!(v.as_deref(), Some(b"old".as_slice()));
    }
    db.compact_range(&ks, None, None).expect("compact");
    let v = db.get(&ks, b"key", &ReadOptions::default()).expect("get");
    assert_ne!(v.as_deref(), Some(b"old".as_slice()), "{v:?}");
}
