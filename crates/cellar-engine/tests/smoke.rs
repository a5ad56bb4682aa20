//! Straight-line scenarios that must exercise every layer (a sanity check that the small
//! options used by the model test really cause flushes, compactions and multi-level trees).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use cellar_engine::{Db, Durability, ReadOptions, WriteOptions};
use common::{mem_vfs, scan_all, tiny_options};

#[test]
fn tiny_options_reach_deep_levels() {
    let (_m, vfs) = mem_vfs();
    let db = Db::open("/db", tiny_options(Arc::clone(&vfs), false)).expect("open");
    let ks = db.default_keyspace();
    let wo = WriteOptions::new(Durability::Buffered);
    for i in 0..5000u32 {
        let k = format!("key{:05}", (i * 7919) % 3000);
        db.put(&ks, k.as_bytes(), format!("value-{i}").as_bytes(), &wo)
            .expect("put");
    }
    let s = db.stats();
    assert!(s.flushes > 10, "flushes {}", s.flushes);
    assert!(s.compactions > 5, "compactions {}", s.compactions);
    let deep = s.keyspaces[0].levels.iter().filter(|l| l.files > 0).count();
    assert!(deep >= 2, "levels in use: {:?}", s.keyspaces[0].levels);
    let all = scan_all(&db, &ks);
    assert_eq!(all.len(), 3000);
    let got = db
        .get(&ks, b"key00007", &ReadOptions::default())
        .expect("get");
    assert!(got.is_some());
}

/// Keys written in order flush to level-0 files that overlap nothing: compaction moves them
/// down without rewriting a byte, and every key reads back (docs/design/level0-trivial-move.md).
#[test]
fn key_ordered_writes_move_out_of_level0_without_a_rewrite() {
    let (_m, vfs) = mem_vfs();
    let db = Db::open("/db", tiny_options(Arc::clone(&vfs), false)).expect("open");
    let ks = db.default_keyspace();
    let wo = WriteOptions::new(Durability::Buffered);
    for i in 0..5000u32 {
        let k = format!("key{i:05}");
        db.put(&ks, k.as_bytes(), format!("value-{i}").as_bytes(), &wo)
            .expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_background_work().expect("background");
    let s = db.stats();
    assert!(s.flushes > 10, "flushes {}", s.flushes);
    assert!(s.compactions > 0, "compactions {}", s.compactions);
    assert_eq!(s.compaction_write_bytes, 0, "a compaction rewrote data");
    assert!(
        s.keyspaces[0].levels.iter().skip(1).any(|l| l.files > 0),
        "levels: {:?}",
        s.keyspaces[0].levels
    );
    let all = scan_all(&db, &ks);
    assert_eq!(all.len(), 5000);
    for i in (0..5000u32).step_by(97) {
        let got = db
            .get(
                &ks,
                format!("key{i:05}").as_bytes(),
                &ReadOptions::default(),
            )
            .expect("get");
        assert_eq!(got.as_deref(), Some(format!("value-{i}").as_bytes()));
    }
}
