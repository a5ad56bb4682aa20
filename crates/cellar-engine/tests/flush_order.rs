//! Two flushes at once (`Options::flush_threads`): the newer memtable's files may be written
//! first, but they are installed only after the older memtable's, so level 0's order, the
//! manifest's log number and the WALs deleted all follow the order the memtables froze.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cellar_engine::vfs::{FaultVfs, IoKind, MemVfs, Vfs};
use cellar_engine::{Db, Durability, Options, ReadOptions, WriteOptions};

use common::{scan_all, tiny_options};

const DB: &str = "/db";

fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

fn options(vfs: Arc<dyn Vfs>) -> Options {
    Options {
        flush_threads: 2,
        // Keep level 0 as the flushes leave it.
        l0_compaction_trigger: 100,
        l0_slowdown_trigger: 200,
        l0_stop_trigger: 300,
        ..tiny_options(vfs, true)
    }
}

/// Puts `tag`-valued records of keys 0, 1, ... until the database holds `frozen` frozen
/// memtables; returns how many keys it wrote.
fn write_until_frozen(db: &Db, tag: &str, frozen: usize) -> u32 {
    let ks = db.default_keyspace();
    let w = WriteOptions::new(Durability::Flush);
    let mut i = 0;
    while db.stats().immutable_memtables < frozen {
        db.put(&ks, &key(i), format!("{tag}{i:040}").as_bytes(), &w)
            .expect("put");
        i += 1;
        assert!(i < 100_000, "no memtable froze");
    }
    i
}

fn level0_files(db: &Db) -> usize {
    db.stats().keyspaces[0].levels[0].files
}

fn wal_files(mem: &MemVfs) -> usize {
    mem.list_all()
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "wal"))
        .count()
}

#[test]
fn a_newer_flush_waits_for_the_older_one_to_install() {
    let mem = MemVfs::new();
    let fault = FaultVfs::new(Arc::new(mem.clone()));
    let vfs: Arc<dyn Vfs> = Arc::new(fault.clone());
    let db = Db::open(DB, options(Arc::clone(&vfs))).expect("open");

    // The older memtable's flush stops before it creates its file.
    let older = fault.hold_next(IoKind::Create, ".sst");
    let first = write_until_frozen(&db, "a", 1);
    assert!(
        older.wait_reached(Duration::from_secs(10)),
        "no flush began"
    );
    let second = write_until_frozen(&db, "b", 2);
    let wals = wal_files(&mem);

    // The newer memtable's file is written and synced, and its flush waits for its turn.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let synced = mem.list_all().into_iter().any(|(p, len)| {
            p.extension().is_some_and(|e| e == "sst")
                && len > 0
                && mem.synced_len(&p).is_ok_and(|s| s == len)
        });
        if synced {
            break;
        }
        assert!(Instant::now() < deadline, "the newer flush wrote no file");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(level0_files(&db), 0, "the newer flush installed first");
    assert_eq!(db.stats().flushes, 0);
    assert_eq!(wal_files(&mem), wals, "a WAL was deleted out of order");

    older.release();
    db.flush().expect("flush");
    assert!(level0_files(&db) >= 2, "both flushes installed");
    let ks = db.default_keyspace();
    let expect = |db: &Db| {
        for i in 0..first.max(second) {
            let tag = if i < second { "b" } else { "a" };
            let got = db.get(&ks, &key(i), &ReadOptions::default()).expect("get");
            assert_eq!(
                got.as_deref(),
                Some(format!("{tag}{i:040}").as_bytes()),
                "key {i}"
            );
        }
    };
    expect(&db);
    assert_eq!(scan_all(&db, &ks).len(), first.max(second) as usize);

    // After a power loss the flushed files and the manifest agree.
    drop(db);
    let copy: Arc<dyn Vfs> = Arc::new(mem.crash_clone());
    let db = Db::open(DB, options(copy)).expect("reopen");
    expect(&db);
}
