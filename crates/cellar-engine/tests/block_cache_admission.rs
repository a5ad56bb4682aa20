//! A data block a point lookup reads enters the block cache on its second miss, not its first
//! (`Options::block_cache_doorkeeper`, `cache/admission.rs`); with the doorkeeper off it enters
//! on the first. Scans fill the cache as before. The counters are the database's own
//! (`Stats::block_cache_hits`), read before and after each lookup.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

mod common;

use cellar_engine::{Db, Keyspace, Options, ReadOptions};

/// A database of 20 000 records in one SST, reopened so that its block cache is empty.
fn reopened_db(dir: &Path, doorkeeper: bool) -> Db {
    let opts = || Options {
        block_cache_doorkeeper: doorkeeper,
        ..Options::default()
    };
    {
        let db = Db::open(dir, opts()).expect("open");
        common::put_numbered_records_and_flush(&db, 20_000);
    }
    Db::open(dir, opts()).expect("reopen")
}

/// The record every test reads.
const KEY: &[u8] = b"key00012345";

/// Block cache hits the lookup of `KEY` adds (and it finds the record's value).
fn hits_of_get(db: &Db, ks: &Keyspace) -> u64 {
    let before = db.stats().block_cache_hits;
    let got = db.get(ks, KEY, &ReadOptions::default()).expect("get");
    assert_eq!(got, Some(format!("{:0100}", 12_345).into_bytes()));
    db.stats().block_cache_hits - before
}

#[test]
fn a_point_read_block_is_cached_on_its_second_miss() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = reopened_db(dir.path(), true);
    let ks = db.default_keyspace();
    assert_eq!(hits_of_get(&db, &ks), 0, "first read: a miss");
    assert_eq!(
        hits_of_get(&db, &ks),
        0,
        "second read: a miss, now admitted"
    );
    assert_eq!(hits_of_get(&db, &ks), 1, "third read: a hit");
}

#[test]
fn without_the_doorkeeper_the_first_miss_is_cached() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = reopened_db(dir.path(), false);
    let ks = db.default_keyspace();
    assert_eq!(hits_of_get(&db, &ks), 0, "first read: a miss");
    assert_eq!(hits_of_get(&db, &ks), 1, "second read: a hit");
}

#[test]
fn a_scan_fills_the_cache_for_point_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = reopened_db(dir.path(), true);
    let ks = db.default_keyspace();
    let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
    it.seek(KEY);
    assert!(it.valid());
    it.status().expect("scan");
    drop(it);
    assert_eq!(hits_of_get(&db, &ks), 1);
}
