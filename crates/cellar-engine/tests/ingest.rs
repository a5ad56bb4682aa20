//! Bulk ingestion: files written outside the WAL and memtable, made visible atomically.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use cellar_engine::tools::sst::SstFile;
use cellar_engine::vfs::{MemVfs, Vfs};
use cellar_engine::{
    Compression, Db, Durability, Error, KeyspaceOptions, ReadOptions, WriteOptions,
};
use common::{scan_all, tiny_options};

fn open(vfs: &MemVfs) -> Db {
    Db::open("/db", tiny_options(Arc::new(vfs.clone()), false)).expect("open")
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn sst_count(vfs: &MemVfs) -> usize {
    vfs.list(std::path::Path::new("/db"))
        .expect("list")
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .count()
}

fn ingest_range(db: &Db, ks: &cellar_engine::Keyspace, keys: impl Iterator<Item = u32>, tag: &str) {
    let mut w = db.ingest_writer(ks).expect("writer");
    for i in keys {
        w.put(&key(i), format!("{tag}{i}").as_bytes()).expect("put");
    }
    db.ingest(vec![w.finish().expect("finish")])
        .expect("ingest");
}

#[test]
fn ingest_into_empty_keyspace_reads_back_every_way() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let ks = db.default_keyspace();
    ingest_range(&db, &ks, (0..2000).map(|i| i * 2), "v");
    let ro = ReadOptions::default();
    assert_eq!(
        db.get(&ks, &key(10), &ro).expect("get"),
        Some(b"v10".to_vec())
    );
    assert_eq!(db.get(&ks, &key(11), &ro).expect("get"), None);
    let keys = [key(0), key(1), key(3998), key(4000)];
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let got = db.multi_get(&ks, &refs, &ro).expect("multi_get");
    assert_eq!(
        got,
        vec![Some(b"v0".to_vec()), None, Some(b"v3998".to_vec()), None]
    );
    assert_eq!(scan_all(&db, &ks).len(), 2000);

    let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
    it.seek(&key(11));
    assert_eq!(it.key(), key(12).as_slice());
    it.prev();
    assert_eq!(it.key(), key(10).as_slice());
    it.seek_for_prev(&key(11));
    assert_eq!(it.key(), key(10).as_slice());
    it.seek_to_last();
    assert_eq!(it.key(), key(3998).as_slice());
    // An empty keyspace takes the files at its deepest level: no compaction needed.
    let stats = db.stats();
    let levels = &stats.keyspaces[0].levels;
    assert!(levels.last().expect("levels").files > 0, "{levels:?}");
    assert!(levels[..levels.len() - 1].iter().all(|l| l.files == 0));
}

#[test]
fn ingested_data_is_newer_than_earlier_writes_and_older_than_later_ones() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let ks = db.default_keyspace();
    let wo = WriteOptions::new(Durability::Buffered);
    db.put(&ks, &key(1), b"before-memtable", &wo).expect("put");
    db.put(&ks, &key(2), b"before-flushed", &wo).expect("put");
    db.flush().expect("flush");
    db.put(&ks, &key(3), b"before-memtable", &wo).expect("put");
    let snap = db.snapshot();

    let mut w = db.ingest_writer(&ks).expect("writer");
    w.put(&key(1), b"loaded").expect("put");
    w.put(&key(2), b"loaded").expect("put");
    w.delete(&key(3)).expect("delete");
    w.put(&key(4), b"loaded").expect("put");
    db.ingest(vec![w.finish().expect("finish")])
        .expect("ingest");

    let ro = ReadOptions::default();
    for i in [1, 2, 4] {
        assert_eq!(
            db.get(&ks, &key(i), &ro).expect("get"),
            Some(b"loaded".to_vec())
        );
    }
    assert_eq!(db.get(&ks, &key(3), &ro).expect("get"), None);
    // A snapshot taken before the load does not see it.
    let at = ReadOptions::at(&snap);
    assert_eq!(db.get(&ks, &key(4), &at).expect("get"), None);
    assert_eq!(
        db.get(&ks, &key(1), &at).expect("get"),
        Some(b"before-memtable".to_vec())
    );
    assert_eq!(scan_all(&db, &ks).len(), 3);
    drop(snap);

    db.put(&ks, &key(2), b"after", &wo).expect("put");
    db.flush().expect("flush");
    db.compact_range(&ks, None, None).expect("compact");
    assert_eq!(
        db.get(&ks, &key(2), &ro).expect("get"),
        Some(b"after".to_vec())
    );
    assert_eq!(
        db.get(&ks, &key(1), &ro).expect("get"),
        Some(b"loaded".to_vec())
    );
    assert_eq!(db.get(&ks, &key(3), &ro).expect("get"), None);
}

#[test]
fn ingest_is_atomic_across_keyspaces_and_survives_power_loss() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let a = db.create_keyspace("a").expect("a");
    let b = db.create_keyspace("b").expect("b");
    // A buffered write before the load is made durable by it (prefix semantics).
    db.put(&a, b"early", b"1", &WriteOptions::new(Durability::Buffered))
        .expect("put");
    let mut wa = db.ingest_writer(&a).expect("wa");
    let mut wb = db.ingest_writer(&b).expect("wb");
    for i in 0..300 {
        wa.put(&key(i), b"A").expect("put");
        wb.put(&key(i), b"B").expect("put");
    }
    db.ingest(vec![wa.finish().expect("fa"), wb.finish().expect("fb")])
        .expect("ingest");
    db.put(&a, b"late", b"2", &WriteOptions::new(Durability::Flush))
        .expect("put");
    let crashed = vfs.crash_clone();
    drop(db);
    let db = open(&crashed);
    let a = db.keyspace("a").expect("a");
    let b = db.keyspace("b").expect("b");
    let got_a = scan_all(&db, &a);
    assert_eq!(
        got_a.len(),
        301,
        "300 loaded + the early write (the late one was not synced)"
    );
    assert_eq!(got_a.get(b"early".as_slice()), Some(&b"1".to_vec()));
    assert_eq!(scan_all(&db, &b).len(), 300);
    // The WAL's sequence numbers stay contiguous across the load, and new writes go on.
    db.put(&a, b"after", b"3", &WriteOptions::new(Durability::Sync))
        .expect("put");
    drop(db);
    let db = open(&crashed);
    assert_eq!(scan_all(&db, &db.keyspace("a").expect("a")).len(), 302);
}

#[test]
fn abandoned_or_crashed_loads_leave_nothing() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let ks = db.default_keyspace();
    let before = sst_count(&vfs);
    {
        let mut w = db.ingest_writer(&ks).expect("writer");
        for i in 0..500 {
            w.put(&key(i), b"x").expect("put");
        }
        let files = w.finish().expect("finish");
        assert!(
            files.file_count() > 1,
            "small target file size cuts several files"
        );
        assert!(sst_count(&vfs) > before);
    } // dropped, never ingested
    assert_eq!(sst_count(&vfs), before);
    {
        let mut w = db.ingest_writer(&ks).expect("writer");
        w.put(&key(1), b"x").expect("put");
    } // writer dropped mid-file
    assert_eq!(sst_count(&vfs), before);

    // Files written, then the process dies before the commit: the next open removes them.
    let mut w = db.ingest_writer(&ks).expect("writer");
    for i in 0..500 {
        w.put(&key(i), b"x").expect("put");
    }
    let files = w.finish().expect("finish");
    let crashed = vfs.crash_clone();
    drop(files);
    drop(db);
    let db = open(&crashed);
    assert!(scan_all(&db, &db.default_keyspace()).is_empty());
    assert_eq!(sst_count(&crashed), before);
}

#[test]
fn ingest_rejects_unordered_or_oversized_keys() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let mut w = db.ingest_writer(&db.default_keyspace()).expect("writer");
    w.put(b"b", b"1").expect("put");
    assert!(matches!(w.put(b"b", b"2"), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.put(b"a", b"2"), Err(Error::InvalidArgument(_))));
    let huge = vec![0u8; 70 * 1024];
    assert!(matches!(w.put(&huge, b"2"), Err(Error::InvalidArgument(_))));
}

#[test]
fn overlapping_loads_stack_up_and_compact_to_the_newest() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let ks = db.default_keyspace();
    for round in 0..5 {
        ingest_range(
            &db,
            &ks,
            (0..400).filter(|i| i % (round + 1) == 0),
            &format!("r{round}-"),
        );
    }
    let check = |db: &Db| {
        let ro = ReadOptions::default();
        for i in 0..400u32 {
            let newest = (0..5)
                .rev()
                .find(|r| i % (r + 1) == 0)
                .expect("round 0 has all");
            let want = format!("r{newest}-{i}").into_bytes();
            assert_eq!(
                db.get(&ks, &key(i), &ro).expect("get"),
                Some(want.clone()),
                "key {i}"
            );
        }
        let all = scan_all(db, &ks);
        assert_eq!(all.len(), 400);
    };
    check(&db);
    db.compact_range(&ks, None, None).expect("compact");
    check(&db);
    drop(db);
    check(&open(&vfs));
}

#[test]
fn keyspace_options_shape_its_files_and_survive_reopen() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let opts = KeyspaceOptions {
        compression: Some(Compression::Zstd),
        block_size_bytes: Some(1024),
        bloom_bits_per_key: Some(0),
    };
    let ks = db.create_keyspace_with("zs", opts).expect("create");
    for i in 0..200 {
        db.put(&ks, &key(i), b"value value value", &WriteOptions::default())
            .expect("put");
    }
    db.flush().expect("flush");
    ingest_range(&db, &ks, 1000..1200, "v");
    drop(db);
    let db = open(&vfs);
    let ks = db.keyspace("zs").expect("ks");
    db.put(&ks, &key(5000), b"x", &WriteOptions::default())
        .expect("put");
    db.flush().expect("flush");
    let vfs_dyn: Arc<dyn Vfs> = Arc::new(vfs.clone());
    let mut checked = 0;
    for name in vfs.list(std::path::Path::new("/db")).expect("list") {
        if !name.ends_with(".sst") {
            continue;
        }
        let path = std::path::Path::new("/db").join(&name);
        let f = SstFile::read(&*vfs_dyn, &path).expect("read");
        let p = f
            .properties(&f.footer().expect("footer"))
            .expect("properties");
        assert_eq!(p.compression, Compression::Zstd, "{name}");
        assert_eq!(p.block_size_bytes, 1024, "{name}");
        assert_eq!(p.bloom_bits_per_key, 0, "{name}");
        checked += 1;
    }
    assert!(checked >= 3);
}

#[test]
fn writes_racing_a_load_are_neither_lost_nor_reordered() {
    let vfs = MemVfs::new();
    let db = Db::open("/db", tiny_options(Arc::new(vfs.clone()), true)).expect("open");
    let ks = db.default_keyspace();
    let writer = {
        let db = db.clone();
        let ks = ks.clone();
        std::thread::spawn(move || {
            for i in 0..3000u32 {
                db.put(
                    &ks,
                    &key(i % 600),
                    format!("w{i}").as_bytes(),
                    &WriteOptions::default(),
                )
                .expect("put");
            }
        })
    };
    for round in 0..10 {
        ingest_range(&db, &ks, 600..1200, &format!("l{round}-"));
    }
    writer.join().expect("writer");
    let ro = ReadOptions::default();
    for i in 0..600u32 {
        let last = (0..3000u32).filter(|j| j % 600 == i).max().expect("some");
        assert_eq!(
            db.get(&ks, &key(i), &ro).expect("get"),
            Some(format!("w{last}").into_bytes())
        );
    }
    for i in 600..1200u32 {
        assert_eq!(
            db.get(&ks, &key(i), &ro).expect("get"),
            Some(format!("l9-{i}").into_bytes())
        );
    }
    assert_eq!(scan_all(&db, &ks).len(), 1200);
}
