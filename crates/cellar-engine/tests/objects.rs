//! A database in an object store (`StorageLayout::Objects`), on in-memory storage: the
//! writer epoch fences an older writer, nothing is renamed, a manifest publish whose outcome
//! is unknown is resolved, and the machine's loss keeps what was flushed. The same engine
//! against a real SeaweedFS is tested in `object_store.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use cellar_engine::vfs::{FaultVfs, IoKind, MemVfs, Vfs};
use cellar_engine::{Db, Error, Options, ReadOptions, StorageLayout, WalLocation, WriteOptions};

use common::tiny_options;

/// Options for a database whose objects live in `bucket` and whose WAL lives in `local`.
fn objects(bucket: Arc<dyn Vfs>, local: &MemVfs) -> Options {
    let mut o = tiny_options(bucket, false);
    o.storage = StorageLayout::Objects {
        wal: WalLocation::Local {
            vfs: Arc::new(local.clone()),
            dir: "/wal".into(),
        },
    };
    o
}

fn get(db: &Db, k: &[u8]) -> Option<Vec<u8>> {
    db.get(&db.default_keyspace(), k, &ReadOptions::default())
        .expect("get")
}

fn put(db: &Db, k: &[u8], v: &[u8]) -> cellar_engine::Result<()> {
    db.put(&db.default_keyspace(), k, v, &WriteOptions::default())
}

#[test]
fn a_second_writer_fences_the_first() {
    let bucket = MemVfs::new();
    let (wal_a, wal_b) = (MemVfs::new(), MemVfs::new());
    let a = Db::open("/db", objects(Arc::new(bucket.clone()), &wal_a)).unwrap();
    put(&a, b"k1", b"a").unwrap();
    a.flush().unwrap();

    let b = Db::open("/db", objects(Arc::new(bucket.clone()), &wal_b)).unwrap();
    assert_eq!(b.stats().writer_epoch, a.stats().writer_epoch + 1);
    assert_eq!(get(&b, b"k1").as_deref(), Some(&b"a"[..]));

    // The first writer's local WAL still takes the write; its publish is refused.
    put(&a, b"k2", b"a").unwrap();
    let err = a.flush().err();
    assert!(matches!(err, Some(Error::Fenced(_))), "{err:?}");
    let err = put(&a, b"k3", b"a").err();
    assert!(matches!(err, Some(Error::Fenced(_))), "{err:?}");
    // Reads of what it had keep working.
    assert_eq!(get(&a, b"k1").as_deref(), Some(&b"a"[..]));

    put(&b, b"k4", b"b").unwrap();
    b.flush().unwrap();
    drop(a);
    drop(b);
    let c = Db::open("/db", objects(Arc::new(bucket.clone()), &wal_b)).unwrap();
    assert_eq!(get(&c, b"k1").as_deref(), Some(&b"a"[..]));
    assert_eq!(get(&c, b"k2"), None);
    assert_eq!(get(&c, b"k4").as_deref(), Some(&b"b"[..]));
    // The fenced writer's upload is an orphan that the next open deleted.
    let live = c.stats().keyspaces[0]
        .levels
        .iter()
        .map(|l| l.files)
        .sum::<usize>();
    let ssts = bucket
        .list_all()
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "sst"))
        .count();
    assert_eq!(ssts, live);
}

#[test]
fn the_machine_loss_keeps_what_was_flushed_and_a_restart_keeps_everything() {
    let bucket = MemVfs::new();
    let wal = MemVfs::new();
    let db = Db::open("/db", objects(Arc::new(bucket.clone()), &wal)).unwrap();
    put(&db, b"flushed", b"1").unwrap();
    db.flush().unwrap();
    put(&db, b"logged", b"2").unwrap();
    drop(db);

    // Same machine: the local WAL is replayed.
    let db = Db::open("/db", objects(Arc::new(bucket.clone()), &wal)).unwrap();
    assert_eq!(get(&db, b"logged").as_deref(), Some(&b"2"[..]));
    put(&db, b"lost", b"3").unwrap();
    drop(db);

    // Another machine: only the bucket.
    let db = Db::open("/db", objects(Arc::new(bucket.clone()), &MemVfs::new())).unwrap();
    assert_eq!(get(&db, b"flushed").as_deref(), Some(&b"1"[..]));
    assert_eq!(get(&db, b"logged").as_deref(), Some(&b"2"[..]));
    assert_eq!(get(&db, b"lost"), None);
    drop(db);

    // Back on the first machine: its WAL belongs to an older epoch and is never replayed.
    let db = Db::open("/db", objects(Arc::new(bucket), &wal)).unwrap();
    assert_eq!(get(&db, b"lost"), None);
}

#[test]
fn nothing_is_ever_renamed() {
    let bucket = FaultVfs::new(Arc::new(MemVfs::new()));
    bucket.fail_after(IoKind::Rename, 1);
    let wal = MemVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(bucket.clone());
    let db = Db::open("/db", objects(Arc::clone(&vfs), &wal)).unwrap();
    for i in 0..400u32 {
        put(&db, format!("key{i:05}").as_bytes(), &[7u8; 40]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    drop(db);
    let db = Db::open("/db", objects(vfs, &wal)).unwrap();
    assert_eq!(get(&db, b"key00399").as_deref(), Some(&[7u8; 40][..]));
    assert_eq!(bucket.count(IoKind::Rename), 0);
}

#[test]
fn a_publish_with_an_unknown_outcome_is_resolved_by_reading_it_back() {
    let mem = MemVfs::new();
    let bucket = FaultVfs::new(Arc::new(mem.clone()));
    let wal = MemVfs::new();
    let db = Db::open("/db", objects(Arc::new(bucket.clone()), &wal)).unwrap();
    put(&db, b"k", b"v").unwrap();
    // The snapshot lands but the request reports a failure.
    bucket.ambiguous_nth(IoKind::CreateIfAbsent, 1);
    db.flush().unwrap();
    put(&db, b"k2", b"v").unwrap();
    db.flush().unwrap();
    drop(db);
    let db = Db::open("/db", objects(Arc::new(mem), &MemVfs::new())).unwrap();
    assert_eq!(get(&db, b"k").as_deref(), Some(&b"v"[..]));
    assert_eq!(get(&db, b"k2").as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_publish_that_keeps_failing_stops_writes_and_a_reopen_recovers() {
    let mem = MemVfs::new();
    let bucket = FaultVfs::new(Arc::new(mem.clone()));
    let wal = MemVfs::new();
    let db = Db::open("/db", objects(Arc::new(bucket.clone()), &wal)).unwrap();
    put(&db, b"k", b"v").unwrap();
    bucket.fail_after(IoKind::CreateIfAbsent, 1);
    bucket.fail_after(IoKind::Read, 1);
    assert!(db.flush().is_err());
    assert!(matches!(put(&db, b"k2", b"v"), Err(Error::Poisoned(_))));
    drop(db);
    bucket.clear();
    let db = Db::open("/db", objects(Arc::new(bucket), &wal)).unwrap();
    assert_eq!(get(&db, b"k").as_deref(), Some(&b"v"[..]));
}

#[test]
fn writers_opening_together_get_distinct_epochs() {
    let bucket = MemVfs::new();
    let opened: Vec<Db> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let b = bucket.clone();
                s.spawn(move || Db::open("/db", objects(Arc::new(b), &MemVfs::new())))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("thread").ok())
            .collect()
    });
    assert!(!opened.is_empty());
    let mut epochs: Vec<u64> = opened.iter().map(|d| d.stats().writer_epoch).collect();
    epochs.sort_unstable();
    epochs.dedup();
    assert_eq!(epochs.len(), opened.len());
    // Only the newest may publish.
    let newest = *epochs.last().unwrap();
    for db in &opened {
        put(db, b"k", b"v").unwrap();
        let r = db.flush();
        assert_eq!(r.is_ok(), db.stats().writer_epoch == newest, "{r:?}");
    }
}

#[test]
fn an_empty_prefix_with_tables_but_no_manifest_is_refused() {
    let bucket = MemVfs::new();
    bucket.create_dir_all(Path::new("/db")).unwrap();
    let mut f = bucket.create(Path::new("/db/000009.sst")).unwrap();
    f.append(b"x").unwrap();
    f.sync().unwrap();
    let err = Db::open("/db", objects(Arc::new(bucket), &MemVfs::new())).err();
    assert!(matches!(&err, Some(e) if e.is_corruption()), "{err:?}");
}
