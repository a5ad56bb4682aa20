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

fn objects_object_wal(bucket: Arc<dyn Vfs>) -> Options {
    let mut o = tiny_options(bucket, false);
    o.storage = StorageLayout::Objects {
        wal: WalLocation::Object,
    };
    o
}

fn put_sync(db: &Db, k: &[u8], v: &[u8]) -> cellar_engine::Result<()> {
    let sync = WriteOptions::new(cellar_engine::Durability::Sync);
    db.put(&db.default_keyspace(), k, v, &sync)
}

#[test]
fn with_the_wal_in_the_bucket_a_synced_write_survives_the_machine() {
    let bucket = MemVfs::new();
    let a = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
    for i in 0..300u32 {
        put_sync(&a, format!("k{i:04}").as_bytes(), b"v").unwrap();
    }
    put(&a, b"unsynced", b"v").unwrap();
    // The machine is gone: no close, no drop; only what the bucket acknowledged remains.
    std::mem::forget(a);
    let b = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
    for i in 0..300u32 {
        assert_eq!(
            get(&b, format!("k{i:04}").as_bytes()).as_deref(),
            Some(&b"v"[..])
        );
    }
    assert_eq!(get(&b, b"unsynced"), None);
}

#[test]
fn with_the_wal_in_the_bucket_the_next_synced_write_of_a_fenced_writer_fails() {
    let bucket = MemVfs::new();
    let a = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
    put_sync(&a, b"k1", b"a").unwrap();
    let b = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
    let err = put_sync(&a, b"k2", b"a").err();
    assert!(matches!(err, Some(Error::Fenced(_))), "{err:?}");
    assert!(matches!(put(&a, b"k3", b"a"), Err(Error::Fenced(_))));
    assert_eq!(get(&b, b"k1").as_deref(), Some(&b"a"[..]));
    put_sync(&b, b"k4", b"b").unwrap();
    drop(a);
    drop(b);
    let c = Db::open("/db", objects_object_wal(Arc::new(bucket))).unwrap();
    assert_eq!(get(&c, b"k2"), None);
    assert_eq!(get(&c, b"k4").as_deref(), Some(&b"b"[..]));
}

#[test]
/// Sixteen writers committing at once through WAL objects: every write is there after a
/// reopen. (That they share objects, group commit, is a matter of timing, measured by
/// `cellar-bench objstore`'s durable_puts_t16, not asserted here.)
fn sixteen_sync_writers_through_wal_objects_lose_nothing() {
    let bucket = MemVfs::new();
    let db = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
    std::thread::scope(|s| {
        for t in 0..16u32 {
            let db = db.clone();
            s.spawn(move || {
                for i in 0..50u32 {
                    put_sync(&db, format!("t{t:02}-{i:03}").as_bytes(), b"v").unwrap();
                }
            });
        }
    });
    let objects = bucket
        .list_all()
        .iter()
        .filter(|(p, _)| p.starts_with("/db/wal"))
        .count();
    // At most one object per write (and the open's fence).
    assert!(objects <= 16 * 50 + 1, "{objects}");
    drop(db);
    let db = Db::open("/db", objects_object_wal(Arc::new(bucket))).unwrap();
    assert_eq!(get(&db, b"t15-049").as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_writer_paused_across_newer_writers_stays_fenced() {
    // The WAL in the bucket: two newer opens (the second deletes what the first replayed).
    let bucket = MemVfs::new();
    let a = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
    put_sync(&a, b"k1", b"a").unwrap();
    for _ in 0..2 {
        let b = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
        put_sync(&b, b"kb", b"b").unwrap();
        b.close().unwrap();
    }
    assert!(matches!(put_sync(&a, b"k2", b"a"), Err(Error::Fenced(_))));

    // The WAL local: a newer writer publishes so often that the id this one would publish
    // next was deleted again.
    let bucket = MemVfs::new();
    let a = Db::open("/db", objects(Arc::new(bucket.clone()), &MemVfs::new())).unwrap();
    let b = Db::open("/db", objects(Arc::new(bucket.clone()), &MemVfs::new())).unwrap();
    for i in 0..20u32 {
        put(&b, format!("b{i}").as_bytes(), b"b").unwrap();
        b.flush().unwrap();
    }
    put(&a, b"k2", b"a").unwrap();
    assert!(matches!(a.flush(), Err(Error::Fenced(_))));
    drop(a);
    drop(b);
    let c = Db::open("/db", objects(Arc::new(bucket), &MemVfs::new())).unwrap();
    assert_eq!(get(&c, b"k2"), None);
    assert_eq!(get(&c, b"b19").as_deref(), Some(&b"b"[..]));
}

fn follower_options(bucket: Arc<dyn Vfs>) -> Options {
    let mut o = objects_object_wal(bucket);
    o.object_store.follow_interval = std::time::Duration::from_millis(5);
    o
}

#[test]
fn a_follower_sees_every_write_across_flushes_and_compactions_and_refuses_writes() {
    let bucket = MemVfs::new();
    let mut wo = objects_object_wal(Arc::new(bucket.clone()));
    wo.object_store.gc_grace = std::time::Duration::ZERO;
    let w = Db::open("/db", wo).unwrap();
    put_sync(&w, b"before", b"1").unwrap();
    let f = Db::open_follower("/db", follower_options(Arc::new(bucket.clone()))).unwrap();
    assert_eq!(get(&f, b"before").as_deref(), Some(&b"1"[..]));
    assert!(matches!(put(&f, b"k", b"v"), Err(Error::ReadOnly(_))));
    for round in 0..5u32 {
        for i in 0..100u32 {
            put_sync(&w, format!("r{round}-{i:03}").as_bytes(), b"v").unwrap();
        }
        if round % 2 == 0 {
            w.flush().unwrap();
        } else {
            w.compact_range(&w.default_keyspace(), None, None).unwrap();
        }
        f.catch_up().unwrap();
        for i in 0..100u32 {
            let k = format!("r{round}-{i:03}");
            assert_eq!(get(&f, k.as_bytes()).as_deref(), Some(&b"v"[..]), "{k}");
        }
    }
    let status = f.follower_status().unwrap();
    assert_eq!(status.last_sequence, w.stats().last_sequence);
    assert!(status.error.is_none(), "{status:?}");
    assert!(w.follower_status().is_none());
}

#[test]
fn a_follower_never_sees_a_torn_state() {
    let bucket = MemVfs::new();
    let mut wo = objects_object_wal(Arc::new(bucket.clone()));
    wo.object_store.gc_grace = std::time::Duration::ZERO;
    let w = Db::open("/db", wo).unwrap();
    let ks = w.default_keyspace();
    let mut b = cellar_engine::WriteBatch::new();
    b.put(&ks, b"x", b"00000");
    b.put(&ks, b"y", b"00000");
    w.write(b, &WriteOptions::new(cellar_engine::Durability::Sync))
        .unwrap();
    let f = Db::open_follower("/db", follower_options(Arc::new(bucket.clone()))).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..300u32 {
                let v = format!("{i:05}");
                let mut b = cellar_engine::WriteBatch::new();
                b.put(&ks, b"x", v.as_bytes());
                b.put(&ks, b"y", v.as_bytes());
                w.write(b, &WriteOptions::new(cellar_engine::Durability::Sync))
                    .unwrap();
                if i % 40 == 0 {
                    w.flush().unwrap();
                }
                if i % 100 == 0 {
                    w.compact_range(&ks, None, None).unwrap();
                }
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let fks = f.default_keyspace();
        let mut seen = Vec::new();
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let snap = f.snapshot();
            let ro = ReadOptions::at(&snap);
            let x = f.get(&fks, b"x", &ro).unwrap();
            let y = f.get(&fks, b"y", &ro).unwrap();
            assert_eq!(x, y, "torn read");
            let x = x.unwrap();
            assert!(seen.last().is_none_or(|l| *l <= x), "went back in time");
            seen.push(x);
        }
    });
    f.catch_up().unwrap();
    assert_eq!(get(&f, b"x").as_deref(), Some(&b"00299"[..]));
}

#[test]
fn the_writer_keeps_the_files_a_follower_lease_pins() {
    let bucket = MemVfs::new();
    let mut wo = objects_object_wal(Arc::new(bucket.clone()));
    wo.object_store.gc_grace = std::time::Duration::ZERO;
    let w = Db::open("/db", wo).unwrap();
    for i in 0..300u32 {
        put(&w, format!("k{i:04}").as_bytes(), &[1u8; 40]).unwrap();
    }
    w.flush().unwrap();
    let mut fo = follower_options(Arc::new(bucket.clone()));
    fo.object_store.follow_interval = std::time::Duration::from_secs(3600);
    let f = Db::open_follower("/db", fo).unwrap();
    let ssts = |b: &MemVfs| -> Vec<std::path::PathBuf> {
        b.list_all()
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| p.extension().is_some_and(|e| e == "sst"))
            .collect()
    };
    let followed = ssts(&bucket);
    // The writer rewrites every file while the follower still reads the old ones (an
    // object store, unlike MemVfs, fails reads of a deleted object: check they exist).
    w.compact_range(&w.default_keyspace(), None, None).unwrap();
    for i in 0..300u32 {
        put(&w, format!("k{i:04}").as_bytes(), &[2u8; 40]).unwrap();
    }
    w.flush().unwrap();
    w.compact_range(&w.default_keyspace(), None, None).unwrap();
    let now = ssts(&bucket);
    assert!(
        followed.iter().all(|p| now.contains(p)),
        "{followed:?} {now:?}"
    );
    let fks = f.default_keyspace();
    let mut it = f.iter(&fks, ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), &[1u8; 40][..]);
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 300);
    drop(it);
    // Caught up, the follower pins the newest snapshot: the old files may go.
    f.catch_up().unwrap();
    assert_eq!(get(&f, b"k0000").as_deref(), Some(&[2u8; 40][..]));
    f.catch_up().unwrap();
    put(&w, b"z", b"z").unwrap();
    w.flush().unwrap();
    let listed: usize = w.stats().keyspaces[0].levels.iter().map(|l| l.files).sum();
    assert_eq!(ssts(&bucket).len(), listed);
}

#[test]
fn a_follower_keeps_up_across_writer_restarts() {
    let bucket = MemVfs::new();
    let f = {
        let w = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
        put_sync(&w, b"first", b"1").unwrap();
        Db::open_follower("/db", follower_options(Arc::new(bucket.clone()))).unwrap()
    };
    for epoch in 0..3u32 {
        // A new writer process (the last one stopped without closing): a new epoch.
        let w = Db::open("/db", objects_object_wal(Arc::new(bucket.clone()))).unwrap();
        for i in 0..50u32 {
            put_sync(&w, format!("e{epoch}-{i:02}").as_bytes(), b"v").unwrap();
        }
        w.flush().unwrap();
        put_sync(&w, format!("e{epoch}-tail").as_bytes(), b"v").unwrap();
        f.catch_up().unwrap();
        assert_eq!(get(&f, b"first").as_deref(), Some(&b"1"[..]));
        for e in 0..=epoch {
            for k in [format!("e{e}-00"), format!("e{e}-49"), format!("e{e}-tail")] {
                assert_eq!(get(&f, k.as_bytes()).as_deref(), Some(&b"v"[..]), "{k}");
            }
        }
        std::mem::forget(w);
    }
    assert!(f.follower_status().unwrap().error.is_none());
}
