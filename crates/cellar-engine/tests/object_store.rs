//! The engine on a real SeaweedFS (`cellar-testkit`), opened by `s3://` URL: both WAL
//! placements, the machine's loss, fencing, followers, the switch between placements, the
//! cache directory's owner, and what a cold point read costs in requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use cellar_engine::{
    Db, Durability, Error, ObjectStoreOptions, Options, ReadOptions, WalMode, WriteOptions,
};
use cellar_testkit::SeaweedFs;

fn seaweed() -> &'static SeaweedFs {
    SeaweedFs::shared().unwrap()
}

fn options(server: &SeaweedFs, cache: &Path, wal: WalMode) -> Options {
    Options {
        object_store: ObjectStoreOptions {
            wal,
            cache_dir: Some(cache.to_path_buf()),
            endpoint: Some(server.endpoint()),
            access_key_id: Some(server.access_key().to_string()),
            secret_access_key: Some(server.secret_key().to_string()),
            follow_interval: Duration::from_millis(20),
            ..ObjectStoreOptions::default()
        },
        memtable_size_bytes: 256 << 10,
        ..Options::default()
    }
}

fn put(db: &Db, k: &[u8], v: &[u8], d: Durability) {
    db.put(&db.default_keyspace(), k, v, &WriteOptions::new(d))
        .unwrap()
}

fn get(db: &Db, k: &[u8]) -> Option<Vec<u8>> {
    db.get(&db.default_keyspace(), k, &ReadOptions::default())
        .unwrap()
}

fn storage(db: &Db, name: &str) -> u64 {
    db.stats()
        .storage
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, v)| *v)
}

#[test]
fn a_database_in_the_bucket_survives_reopen_with_its_local_wal() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("reopen"));
    let cache = tempfile::tempdir().unwrap();
    let db = Db::open(&url, options(s, cache.path(), WalMode::Local)).unwrap();
    for i in 0..5000u32 {
        put(
            &db,
            format!("key{i:06}").as_bytes(),
            &[b'v'; 100],
            Durability::Flush,
        );
    }
    db.flush().unwrap();
    put(&db, b"in-the-wal", b"1", Durability::Sync);
    db.close().unwrap();
    let db = Db::open(&url, options(s, cache.path(), WalMode::Local)).unwrap();
    assert_eq!(get(&db, b"key004999").as_deref(), Some(&[b'v'; 100][..]));
    assert_eq!(get(&db, b"in-the-wal").as_deref(), Some(&b"1"[..]));
    assert!(storage(&db, "object_put_requests_manifest") > 0);
}

#[test]
fn with_the_wal_in_the_bucket_a_new_machine_finds_every_synced_write() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("machine"));
    let first = tempfile::tempdir().unwrap();
    let db = Db::open(&url, options(s, first.path(), WalMode::Object)).unwrap();
    for i in 0..200u32 {
        put(&db, format!("k{i:04}").as_bytes(), b"v", Durability::Sync);
    }
    // The machine is lost: no close, and its disk is gone.
    std::mem::forget(db);
    drop(first);
    let second = tempfile::tempdir().unwrap();
    let db = Db::open(&url, options(s, second.path(), WalMode::Object)).unwrap();
    for i in 0..200u32 {
        assert_eq!(
            get(&db, format!("k{i:04}").as_bytes()).as_deref(),
            Some(&b"v"[..])
        );
    }
}

#[test]
fn a_second_writer_fences_the_first_on_seaweedfs() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("fence"));
    let (ca, cb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Db::open(&url, options(s, ca.path(), WalMode::Object)).unwrap();
    put(&a, b"k1", b"a", Durability::Sync);
    let b = Db::open(&url, options(s, cb.path(), WalMode::Object)).unwrap();
    let sync = WriteOptions::new(Durability::Sync);
    let err = a.put(&a.default_keyspace(), b"k2", b"a", &sync).err();
    assert!(matches!(err, Some(Error::Fenced(_))), "{err:?}");
    assert_eq!(get(&b, b"k1").as_deref(), Some(&b"a"[..]));
}

#[test]
fn a_follower_on_seaweedfs_sees_the_writers_writes() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("follow"));
    let (cw, cf) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let w = Db::open(&url, options(s, cw.path(), WalMode::Object)).unwrap();
    put(&w, b"a", b"1", Durability::Sync);
    let f = Db::open_follower(&url, options(s, cf.path(), WalMode::Object)).unwrap();
    assert_eq!(get(&f, b"a").as_deref(), Some(&b"1"[..]));
    for i in 0..3000u32 {
        put(
            &w,
            format!("k{i:05}").as_bytes(),
            &[7u8; 100],
            Durability::Flush,
        );
    }
    put(&w, b"b", b"2", Durability::Sync);
    w.flush().unwrap();
    f.catch_up().unwrap();
    assert_eq!(get(&f, b"b").as_deref(), Some(&b"2"[..]));
    assert_eq!(get(&f, b"k02999").as_deref(), Some(&[7u8; 100][..]));
    assert_eq!(
        f.follower_status().unwrap().last_sequence,
        w.stats().last_sequence
    );
}

#[test]
fn switching_the_wal_placement_loses_nothing() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("switch"));
    let cache = tempfile::tempdir().unwrap();
    let db = Db::open(&url, options(s, cache.path(), WalMode::Local)).unwrap();
    put(&db, b"local", b"1", Durability::Sync);
    db.close().unwrap();
    let db = Db::open(&url, options(s, cache.path(), WalMode::Object)).unwrap();
    assert_eq!(get(&db, b"local").as_deref(), Some(&b"1"[..]));
    put(&db, b"object", b"2", Durability::Sync);
    db.close().unwrap();
    let db = Db::open(&url, options(s, cache.path(), WalMode::Local)).unwrap();
    assert_eq!(get(&db, b"local").as_deref(), Some(&b"1"[..]));
    assert_eq!(get(&db, b"object").as_deref(), Some(&b"2"[..]));
}

#[test]
fn a_cache_directory_serves_one_database() {
    let s = seaweed();
    let cache = tempfile::tempdir().unwrap();
    let one = s.url(&s.fresh_prefix("one"));
    let other = s.url(&s.fresh_prefix("other"));
    Db::open(&one, options(s, cache.path(), WalMode::Local))
        .unwrap()
        .close()
        .unwrap();
    let err = Db::open(&other, options(s, cache.path(), WalMode::Local)).err();
    assert!(
        matches!(&err, Some(Error::ObjectStore(m)) if m.contains("belongs to")),
        "{err:?}"
    );
}

#[test]
fn a_cold_point_read_costs_one_get() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("cold"));
    let cache = tempfile::tempdir().unwrap();
    let db = Db::open(&url, options(s, cache.path(), WalMode::Local)).unwrap();
    for i in 0..20000u32 {
        put(
            &db,
            format!("key{i:06}").as_bytes(),
            &[b'v'; 100],
            Durability::Buffered,
        );
    }
    db.flush().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    db.close().unwrap();
    // A fresh machine: an empty cache directory.
    let cold = tempfile::tempdir().unwrap();
    let mut o = options(s, cold.path(), WalMode::Local);
    o.warm_up_budget_bytes = 0;
    let db = Db::open(&url, o).unwrap();
    let mut gets = Vec::new();
    for i in (0..20000u32).step_by(997) {
        let before = storage(&db, "object_get_requests_sst");
        assert!(get(&db, format!("key{i:06}").as_bytes()).is_some());
        gets.push(storage(&db, "object_get_requests_sst") - before);
    }
    assert!(gets.iter().all(|g| *g <= 1), "GETs per cold read: {gets:?}");
}
