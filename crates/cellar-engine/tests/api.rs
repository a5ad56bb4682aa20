//! The public API, edge by edge: keyspaces, batches, range deletes, limits, prefixes and
//! bounds, snapshots, checkpoints, close and locking.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use cellar_engine::vfs::{MemVfs, RealVfs};
use cellar_engine::{
    Db, DbIterator, Durability, Error, Keyspace, Options, ReadOptions, WriteBatch, WriteOptions,
};

use common::{mem_vfs, scan_all, tiny_options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DB: &str = "/db";

fn open_mem(mem: &MemVfs, background: bool) -> Db {
    Db::open(DB, tiny_options(Arc::new(mem.clone()), background)).expect("open")
}

fn sync() -> WriteOptions {
    WriteOptions::new(Durability::Sync)
}

fn ro() -> ReadOptions {
    ReadOptions::default()
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn v(i: u32, tag: &str) -> Vec<u8> {
    format!("{tag}-{i}-{}", "z".repeat((i % 40) as usize)).into_bytes()
}

fn collect(it: &mut DbIterator, forward: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    it.status().expect("iterator status");
    out
}

fn range(m: &Model, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    if let (Bound::Included(l), Bound::Excluded(h)) = (&lo, &hi) {
        if l >= h {
            return Vec::new();
        }
    }
    m.range((lo, hi))
        .map(|(a, b)| (a.clone(), b.clone()))
        .collect()
}

fn sst_bytes_on_disk(mem: &MemVfs) -> u64 {
    mem.list_all()
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "sst"))
        .map(|(_, n)| n)
        .sum()
}

fn is_invalid(r: &cellar_engine::Result<impl std::fmt::Debug>) -> bool {
    matches!(r, Err(Error::InvalidArgument(_)))
}

// ---------------------------------------------------------------------------------------
// Keyspaces.

#[test]
fn keyspace_create_rejects_duplicates_and_bad_names() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let a = db.create_keyspace("a").expect("create");
    assert_eq!(a.name(), "a");
    assert!(matches!(
        db.create_keyspace("a"),
        Err(Error::KeyspaceExists(_))
    ));
    assert!(matches!(
        db.create_keyspace("default"),
        Err(Error::KeyspaceExists(_))
    ));
    assert!(is_invalid(&db.create_keyspace("")));
    assert!(is_invalid(&db.create_keyspace(&"n".repeat(256))));
    db.create_keyspace(&"n".repeat(255)).expect("255-byte name");
    assert!(is_invalid(&db.drop_keyspace("default")));
    assert!(matches!(
        db.drop_keyspace("missing"),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        db.keyspace("missing"),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert_eq!(db.keyspace("a").expect("lookup"), a);
    // A failed create changed nothing.
    let mut names = db.keyspace_names();
    names.sort();
    assert_eq!(
        names,
        vec!["a".to_string(), "default".into(), "n".repeat(255)]
    );
}

#[test]
fn keyspace_names_survive_reopen_and_power_loss() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    for n in ["users", "orders", "x y z", "ünïcødé"] {
        db.create_keyspace(n).expect("create");
    }
    db.drop_keyspace("orders").expect("drop");
    let mut want = vec![
        "default".to_string(),
        "users".into(),
        "x y z".into(),
        "ünïcødé".into(),
    ];
    want.sort();
    // Create and drop are durable when they return.
    let image = mem.crash_clone();
    drop(db);
    for vfs in [mem.clone(), image] {
        let db = open_mem(&vfs, false);
        let mut names = db.keyspace_names();
        names.sort();
        assert_eq!(names, want);
        let users = db.keyspace("users").expect("users");
        db.put(&users, b"k", b"v", &sync()).expect("put");
        assert!(db.keyspace("orders").is_err());
    }
}

/// Each batch writes key i into three keyspaces (and deletes an older key in one): after a
/// crash at any moment, every batch is there in all three keyspaces or in none, and the
/// batches present are a prefix that holds every durable one.
#[test]
fn keyspace_batches_are_all_or_nothing_after_crashes() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let names = ["a", "b", "c"];
    let kss: Vec<Keyspace> = names
        .iter()
        .map(|n| db.create_keyspace(n).expect("create"))
        .collect();
    // Model: (keyspace name, key) → value, after each batch.
    type Multi = BTreeMap<(String, Vec<u8>), Vec<u8>>;
    let mut states: Vec<Multi> = vec![Multi::new()];
    let mut images = Vec::new();
    let (mut durable_power, mut durable_process) = (0usize, 0usize);
    for i in 0..240u32 {
        let mut b = WriteBatch::new();
        let mut st = states.last().cloned().unwrap_or_default();
        for (ks, n) in kss.iter().zip(names) {
            b.put(ks, &k(i), &v(i, n));
            st.insert((n.to_string(), k(i)), v(i, n));
        }
        if i >= 30 {
            b.delete(&kss[1], &k(i - 30));
            st.remove(&("b".to_string(), k(i - 30)));
        }
        let d = match i % 10 {
            0 => Durability::Sync,
            1..=4 => Durability::Flush,
            _ => Durability::Buffered,
        };
        db.write(b, &WriteOptions::new(d)).expect("write");
        states.push(st);
        match d {
            Durability::Sync => {
                durable_power = states.len() - 1;
                durable_process = durable_power;
            }
            Durability::Flush => durable_process = states.len() - 1,
            Durability::Buffered => {}
        }
        if i % 37 == 36 {
            images.push((mem.crash_clone(), durable_power, "power loss", i));
            images.push((
                mem.process_crash_clone(),
                durable_process,
                "process crash",
                i,
            ));
        }
    }
    assert!(db.stats().flushes > 3);
    for (image, must, label, at) in images {
        let db = open_mem(&image, false);
        let mut got = Multi::new();
        for n in names {
            let ks = db.keyspace(n).expect("keyspace");
            for (key, val) in scan_all(&db, &ks) {
                got.insert((n.to_string(), key), val);
            }
        }
        let p = states.iter().position(|s| *s == got);
        match p {
            Some(p) if p >= must => {}
            Some(p) => {
                panic!("{label} after batch {at}: prefix {p} lost durable batches up to {must}")
            }
            None => {
                panic!("{label} after batch {at}: state is no prefix of the batches (torn batch?)")
            }
        }
    }
}

#[test]
fn keyspace_drop_reclaims_files_and_invalidates_handles() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks0 = db.default_keyspace();
    for i in 0..200 {
        db.put(&ks0, &k(i), &v(i, "d"), &WriteOptions::default())
            .expect("put");
    }
    let big = db.create_keyspace("big").expect("create");
    for i in 0..1500 {
        db.put(&big, &k(i), &v(i, "big"), &WriteOptions::default())
            .expect("put");
    }
    db.compact_range(&big, None, None).expect("compact");
    // Some of it also unflushed, in the memtable and WAL.
    for i in 0..20 {
        db.put(&big, &k(i), b"unflushed", &sync()).expect("put");
    }
    let with_big = sst_bytes_on_disk(&mem);
    let big_stats = db
        .stats()
        .keyspaces
        .iter()
        .find(|s| s.name == "big")
        .map(|s| s.levels.iter().map(|l| l.bytes).sum::<u64>())
        .expect("big stats");
    assert!(big_stats > 20_000, "big holds {big_stats} bytes");
    // An iterator opened before the drop keeps reading what it saw.
    let mut before = db.iter(&big, ro()).expect("iter");
    db.drop_keyspace("big").expect("drop");
    before.seek_to_first();
    assert_eq!(collect(&mut before, true).len(), 1500);
    drop(before);
    // The old handle is dead for reads and writes.
    assert!(matches!(
        db.get(&big, &k(1), &ro()),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        db.put(&big, b"x", b"y", &sync()),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        db.iter(&big, ro()).map(|_| ()),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        db.multi_get(&big, &[b"x".as_slice()], &ro()),
        Err(Error::KeyspaceNotFound(_))
    ));
    assert!(matches!(
        db.compact_range(&big, None, None),
        Err(Error::KeyspaceNotFound(_))
    ));
    let mut mixed = WriteBatch::new();
    mixed.put(&ks0, b"never", b"applied");
    mixed.put(&big, b"x", b"y");
    assert!(db.write(mixed, &sync()).is_err());
    assert_eq!(db.get(&ks0, b"never", &ro()).expect("get"), None);
    // Its files go once nothing reads them; a flush drops its memtable entries.
    db.flush().expect("flush");
    db.compact_range(&ks0, None, None).expect("compact");
    let after = sst_bytes_on_disk(&mem);
    assert!(
        after + big_stats <= with_big + 2_000,
        "SST bytes on disk {with_big} → {after}, the dropped keyspace held {big_stats}"
    );
    assert!(!db.stats().keyspaces.iter().any(|s| s.name == "big"));
    // Recreating the name gives an empty keyspace, also after a reopen and a power loss.
    let big2 = db.create_keyspace("big").expect("recreate");
    assert_ne!(big2.id(), big.id());
    assert!(scan_all(&db, &big2).is_empty());
    assert_eq!(db.get(&big2, &k(1), &ro()).expect("get"), None);
    db.put(&big2, b"fresh", b"1", &sync()).expect("put");
    let image = mem.crash_clone();
    drop(db);
    for vfs in [mem.clone(), image] {
        let db = open_mem(&vfs, false);
        let big2 = db.keyspace("big").expect("big");
        let got = scan_all(&db, &big2);
        assert_eq!(got.len(), 1, "{:?}", got.keys().take(3).collect::<Vec<_>>());
        assert_eq!(scan_all(&db, &db.default_keyspace()).len(), 200);
        assert!(matches!(
            db.get(&big, &k(1), &ro()),
            Err(Error::KeyspaceNotFound(_))
        ));
    }
}

/// Drop a keyspace whose writes are only in the WAL, recreate it, crash: replay must skip
/// the old keyspace's records (they belong to a dropped id), never feed them to the new one.
#[test]
fn keyspace_dropped_with_unflushed_writes_does_not_resurrect() {
    let (mem, _) = mem_vfs();
    let mut o = tiny_options(Arc::new(mem.clone()), false);
    o.memtable_size_bytes = 1 << 20;
    let db = Db::open(DB, o.clone()).expect("open");
    let t = db.create_keyspace("t").expect("create");
    for i in 0..50 {
        db.put(&t, &k(i), b"old", &sync()).expect("put");
    }
    db.drop_keyspace("t").expect("drop");
    let t2 = db.create_keyspace("t").expect("recreate");
    db.put(&t2, &k(1), b"new", &sync()).expect("put");
    for image in [mem.crash_clone(), mem.process_crash_clone()] {
        let mut o = o.clone();
        o.vfs = Arc::new(image);
        let db = Db::open(DB, o).expect("recover");
        let t = db.keyspace("t").expect("t");
        let got = scan_all(&db, &t);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got.get(&k(1)).map(|v| v.as_slice()),
            Some(b"new".as_slice())
        );
    }
}

// ---------------------------------------------------------------------------------------
// Range deletes.

#[test]
fn delete_range_hides_keys_across_flush_compaction_and_reopen() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    let mut model = Model::new();
    for i in 0..1000 {
        db.put(&ks, &k(i), &v(i, "a"), &WriteOptions::default())
            .expect("put");
        model.insert(k(i), v(i, "a"));
    }
    db.flush().expect("flush");
    let check = |db: &Db, model: &Model, what: &str| {
        assert_eq!(&scan_all(db, &ks), model, "{what}: scan");
        for i in (0..1000).step_by(7) {
            assert_eq!(
                db.get(&ks, &k(i), &ro()).expect("get").as_ref(),
                model.get(&k(i)),
                "{what}: get {i}"
            );
        }
        let keys: Vec<Vec<u8>> = (90..220).map(k).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|x| x.as_slice()).collect();
        let got = db.multi_get(&ks, &refs, &ro()).expect("multi_get");
        for (key, g) in keys.iter().zip(got) {
            assert_eq!(g.as_ref(), model.get(key), "{what}: multi_get");
        }
        let mut it = db.iter(&ks, ro()).expect("iter");
        it.seek_to_last();
        let mut back = collect(&mut it, false);
        back.reverse();
        assert_eq!(
            back,
            range(model, Bound::Unbounded, Bound::Unbounded),
            "{what}: reverse"
        );
    };
    let before = db.snapshot();
    let model_before = model.clone();
    db.delete_range(&ks, &k(100), &k(200), &sync())
        .expect("delete_range");
    for i in 100..200 {
        model.remove(&k(i));
    }
    check(&db, &model, "memtable tombstone");
    // The end is exclusive; an empty range deletes nothing.
    assert!(model.contains_key(&k(200)));
    db.delete_range(&ks, &k(300), &k(300), &sync())
        .expect("empty range");
    check(&db, &model, "empty range");
    assert!(is_invalid(&db.delete_range(&ks, &k(5), &k(4), &sync())));
    // Writes after the tombstone are visible again.
    db.put(&ks, &k(150), b"reborn", &sync()).expect("put");
    model.insert(k(150), b"reborn".to_vec());
    check(&db, &model, "put after tombstone");
    db.flush().expect("flush");
    check(&db, &model, "after flush");
    // A range delete in a batch with a put inside the range: the put (later op) survives.
    let mut b = WriteBatch::new();
    b.delete_range(&ks, &k(400), &k(500));
    b.put(&ks, &k(450), b"in-batch");
    db.write(b, &sync()).expect("batch");
    for i in 400..500 {
        model.remove(&k(i));
    }
    model.insert(k(450), b"in-batch".to_vec());
    check(&db, &model, "batch");
    // The snapshot from before still sees everything, also after compaction.
    assert_eq!(scan_all_at(&db, &before), model_before);
    db.compact_range(&ks, None, None).expect("compact");
    check(&db, &model, "after compaction with a snapshot");
    assert_eq!(scan_all_at(&db, &before), model_before);
    assert_eq!(
        db.get(&ks, &k(120), &ReadOptions::at(&before))
            .expect("get"),
        Some(v(120, "a"))
    );
    drop(before);
    db.compact_range(&ks, None, None).expect("compact");
    check(&db, &model, "after compaction");
    drop(db);
    let db = open_mem(&mem, false);
    check(&db, &model, "after reopen");
    let image = mem.crash_clone();
    drop(db);
    let db = open_mem(&image, false);
    check(&db, &model, "after power loss");
}

/// With no snapshot in the way, the compaction that meets a range tombstone drops the
/// entries it covers.
#[test]
fn delete_range_then_compaction_drops_covered_entries() {
    let (mem, _) = mem_vfs();
    let mut o = tiny_options(Arc::new(mem.clone()), false);
    o.memtable_size_bytes = 1 << 20;
    let db = Db::open(DB, o).expect("open");
    let ks = db.default_keyspace();
    for i in 0..1000 {
        db.put(&ks, &k(i), &v(i, "a"), &WriteOptions::default())
            .expect("put");
    }
    db.flush().expect("flush");
    let before = db.stats();
    assert_eq!(before.keyspaces[0].levels[0].files, 1);
    db.delete_range(&ks, &k(100), &k(600), &sync())
        .expect("delete_range");
    db.compact_range(&ks, None, None).expect("compact");
    let s = db.stats();
    assert_eq!(
        s.sst_entries, 500,
        "entries {} → {}",
        before.sst_entries, s.sst_entries
    );
    assert!(
        s.sst_bytes < before.sst_bytes * 2 / 3,
        "{} → {}",
        before.sst_bytes,
        s.sst_bytes
    );
    assert_eq!(scan_all(&db, &ks).len(), 500);
}

/// Range tombstones live in the manifest, not in SSTs, so a compaction's inputs are chosen
/// without regard to them. Data already on the deepest level that a range delete covers
/// must still be reclaimable: `compact_range` over the range has to rewrite those files
/// (and the tombstone should then be collected).
#[test]
fn delete_range_covered_data_on_the_deepest_level_is_reclaimed_by_compact_range() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    for i in 0..1000 {
        db.put(&ks, &k(i), &v(i, "a"), &WriteOptions::default())
            .expect("put");
    }
    db.compact_range(&ks, None, None).expect("compact");
    let before = db.stats();
    db.delete_range(&ks, &k(100), &k(600), &sync())
        .expect("delete_range");
    db.compact_range(&ks, None, None).expect("compact");
    let s = db.stats();
    assert_eq!(scan_all(&db, &ks).len(), 500);
    assert_eq!(
        s.sst_entries, 500,
        "entries {} → {}: covered data not reclaimed ({:?})",
        before.sst_entries, s.sst_entries, s.keyspaces[0].levels
    );
    assert_eq!(
        s.keyspaces[0].range_tombstones, 0,
        "tombstone not collected"
    );
}

/// The same when a snapshot pinned the covered data during the first compaction.
#[test]
fn delete_range_covered_data_is_reclaimed_after_the_snapshot_goes() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    for i in 0..1000 {
        db.put(&ks, &k(i), &v(i, "a"), &WriteOptions::default())
            .expect("put");
    }
    db.flush().expect("flush");
    let snap = db.snapshot();
    db.delete_range(&ks, &k(100), &k(600), &sync())
        .expect("delete_range");
    for i in 700..800 {
        db.put(&ks, &k(i), b"overwritten", &sync()).expect("put");
    }
    db.compact_range(&ks, None, None).expect("compact");
    // The snapshot still sees everything, so nothing could be dropped yet.
    assert_eq!(scan_all_at(&db, &snap).len(), 1000);
    let pinned = db.stats();
    drop(snap);
    db.compact_range(&ks, None, None).expect("compact");
    let s = db.stats();
    assert_eq!(scan_all(&db, &ks).len(), 500);
    assert_eq!(
        s.sst_entries, 500,
        "entries {} → {} after the snapshot was released and compact_range ran",
        pinned.sst_entries, s.sst_entries
    );
}

#[test]
fn delete_range_over_everything_including_empty_and_ff_keys() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    let keys: Vec<Vec<u8>> = vec![
        vec![],
        vec![0],
        b"a".to_vec(),
        vec![0xff],
        vec![0xff, 0xff, 0xff],
    ];
    for key in &keys {
        db.put(&ks, key, b"x", &sync()).expect("put");
    }
    db.flush().expect("flush");
    // [empty, ff ff ff) covers all but the last key.
    db.delete_range(&ks, b"", &[0xff, 0xff, 0xff], &sync())
        .expect("delete_range");
    let want: Model = [(vec![0xff, 0xff, 0xff], b"x".to_vec())].into();
    assert_eq!(scan_all(&db, &ks), want);
    db.compact_range(&ks, None, None).expect("compact");
    assert_eq!(scan_all(&db, &ks), want);
    assert_eq!(db.get(&ks, b"", &ro()).expect("get"), None);
    drop(db);
    let db = open_mem(&mem, false);
    assert_eq!(scan_all(&db, &db.default_keyspace()), want);
}

fn scan_all_at(db: &Db, snap: &cellar_engine::Snapshot) -> Model {
    let mut it = db
        .iter(&db.default_keyspace(), ReadOptions::at(snap))
        .expect("iter");
    it.seek_to_first();
    collect(&mut it, true).into_iter().collect()
}

// ---------------------------------------------------------------------------------------
// Limits, empty keys and values.

#[test]
fn oversized_key_and_value_are_invalid_and_change_nothing() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    db.put(&ks, b"before", b"1", &sync()).expect("put");
    let big_key = vec![b'k'; 64 * 1024 + 1];
    let max_key = vec![b'm'; 64 * 1024];
    let big_value = vec![b'v'; 64 * 1024 * 1024 + 1];
    let wal_before: u64 = mem
        .list_all()
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "wal"))
        .map(|(_, n)| n)
        .sum();
    assert!(is_invalid(&db.put(&ks, &big_key, b"v", &sync())));
    assert!(is_invalid(&db.put(&ks, b"k", &big_value, &sync())));
    assert!(is_invalid(&db.delete(&ks, &big_key, &sync())));
    assert!(is_invalid(&db.delete_range(&ks, b"a", &big_key, &sync())));
    assert!(is_invalid(&db.delete_range(
        &ks,
        &big_key,
        &big_key,
        &sync()
    )));
    // One bad op spoils the whole batch.
    let mut b = WriteBatch::new();
    b.put(&ks, b"good", b"1");
    b.put(&ks, &big_key, b"2");
    b.put(&ks, b"good2", b"3");
    assert!(is_invalid(&db.write(b, &sync())));
    let mut b = WriteBatch::new();
    b.put(&ks, b"good", b"1");
    b.put(&ks, b"bad", &big_value);
    assert!(is_invalid(&db.write(b, &sync())));
    drop(big_value);
    // Reads refuse oversized keys too.
    assert!(is_invalid(&db.get(&ks, &big_key, &ro())));
    assert!(is_invalid(&db.multi_get(
        &ks,
        &[b"a".as_slice(), &big_key],
        &ro()
    )));
    assert!(db
        .iter(
            &ks,
            ReadOptions {
                prefix: Some(big_key.clone()),
                ..ReadOptions::default()
            }
        )
        .is_err());
    // Nothing was written, nothing changed, and the db still takes writes.
    let wal_after: u64 = mem
        .list_all()
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "wal"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(wal_before, wal_after, "a refused write reached the WAL");
    let want: Model = [(b"before".to_vec(), b"1".to_vec())].into();
    assert_eq!(scan_all(&db, &ks), want);
    db.put(&ks, &max_key, b"max", &sync()).expect("64 KiB key");
    db.put(&ks, b"after", b"2", &sync()).expect("put");
    db.flush().expect("flush");
    drop(db);
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    assert_eq!(
        db.get(&ks, &max_key, &ro()).expect("get"),
        Some(b"max".to_vec())
    );
    assert_eq!(scan_all(&db, &ks).len(), 3);
}

#[test]
fn max_size_value_round_trips() {
    let (mem, _) = mem_vfs();
    let mut o = Options {
        vfs: Arc::new(mem.clone()),
        background_work: false,
        ..Options::default()
    };
    o.memtable_size_bytes = 1 << 20;
    let db = Db::open(DB, o.clone()).expect("open");
    let ks = db.default_keyspace();
    let mut big = vec![0u8; 64 * 1024 * 1024];
    for (i, b) in big.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    db.put(&ks, b"big", &big, &sync()).expect("64 MiB value");
    db.put(&ks, b"small", b"s", &sync()).expect("put");
    assert!(db.get(&ks, b"big", &ro()).expect("get").as_ref() == Some(&big));
    // Recovered from the WAL, then read from an SST.
    let image = mem.crash_clone();
    drop(db);
    o.vfs = Arc::new(image);
    let db = Db::open(DB, o).expect("recover");
    assert!(db.get(&ks, b"big", &ro()).expect("get").as_ref() == Some(&big));
    db.compact_range(&ks, None, None).expect("compact");
    assert!(db.get(&ks, b"big", &ro()).expect("get").as_ref() == Some(&big));
}

#[test]
fn empty_key_and_empty_value_work_everywhere() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    db.put(&ks, b"", b"empty-key", &sync()).expect("empty key");
    db.put(&ks, b"e", b"", &sync()).expect("empty value");
    db.put(&ks, b"f", b"x", &sync()).expect("put");
    let check = |db: &Db, what: &str| {
        assert_eq!(
            db.get(&ks, b"", &ro()).expect("get"),
            Some(b"empty-key".to_vec()),
            "{what}"
        );
        assert_eq!(
            db.get(&ks, b"e", &ro()).expect("get"),
            Some(Vec::new()),
            "{what}"
        );
        let got = db
            .multi_get(&ks, &[b"".as_slice(), b"e", b"nope"], &ro())
            .expect("multi_get");
        assert_eq!(
            got,
            vec![Some(b"empty-key".to_vec()), Some(Vec::new()), None]
        );
        let mut it = db.iter(&ks, ro()).expect("iter");
        it.seek_to_first();
        assert!(it.valid(), "{what}");
        assert_eq!(it.key(), b"");
        it.seek_for_prev(b"");
        assert!(it.valid() && it.key().is_empty(), "{what}");
        it.seek_for_prev(b"d");
        assert!(it.valid() && it.key().is_empty(), "{what}");
        it.seek(b"");
        assert_eq!(collect(&mut it, true).len(), 3, "{what}");
        it.seek_to_last();
        let back = collect(&mut it, false);
        assert_eq!(back.len(), 3, "{what}");
        assert_eq!(back[2].0, b"");
    };
    check(&db, "memtable");
    db.flush().expect("flush");
    check(&db, "sst");
    db.compact_range(&ks, None, None).expect("compact");
    check(&db, "compacted");
    drop(db);
    let db = open_mem(&mem, false);
    check(&db, "reopened");
    db.delete(&ks, b"", &sync()).expect("delete empty key");
    assert_eq!(db.get(&ks, b"", &ro()).expect("get"), None);
    // An empty batch is a no-op.
    db.write(WriteBatch::new(), &sync()).expect("empty batch");
}

// ---------------------------------------------------------------------------------------
// Iteration: prefixes, bounds, seek_for_prev.

/// Keys around prefix edges: 0x00 and 0xff bytes, a prefix equal to a whole key.
fn edge_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = vec![
        vec![],
        vec![0x00],
        vec![0x00, 0xff],
        vec![0x01],
        b"ab".to_vec(),
        b"ab\x00".to_vec(),
        b"ab\xff".to_vec(),
        b"ab\xff\xff".to_vec(),
        b"ac".to_vec(),
        b"b".to_vec(),
        vec![0xfe, 0xff],
        vec![0xfe, 0xff, 0xff],
        vec![0xff],
        vec![0xff, 0x00],
        vec![0xff, 0xfe, 0xff],
        vec![0xff, 0xff],
        vec![0xff, 0xff, 0x00],
        vec![0xff, 0xff, 0xff],
        vec![0xff, 0xff, 0xff, 0xff, 0x10],
    ];
    for i in 0..60u8 {
        keys.push(vec![b'p', i, 0xff]);
    }
    keys
}

fn edge_db(mem: &MemVfs) -> (Db, Model) {
    let db = open_mem(mem, false);
    let ks = db.default_keyspace();
    let mut model = Model::new();
    for (i, key) in edge_keys().into_iter().enumerate() {
        let val = format!("v{i}").into_bytes();
        db.put(&ks, &key, &val, &WriteOptions::default())
            .expect("put");
        model.insert(key, val);
    }
    // Half of the keys flushed to files, deletes and overwrites on top in the memtable.
    db.flush().expect("flush");
    for (i, key) in edge_keys().into_iter().enumerate() {
        if i % 5 == 0 {
            db.delete(&ks, &key, &WriteOptions::default()).expect("del");
            model.remove(&key);
        } else if i % 5 == 1 {
            let val = format!("w{i}").into_bytes();
            db.put(&ks, &key, &val, &WriteOptions::default())
                .expect("put");
            model.insert(key, val);
        }
    }
    (db, model)
}

fn prefix_model(model: &Model, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(a, b)| (a.clone(), b.clone()))
        .collect()
}

#[test]
fn prefix_iteration_covers_exactly_the_prefix_including_ff_prefixes() {
    let (mem, _) = mem_vfs();
    let (db, model) = edge_db(&mem);
    let ks = db.default_keyspace();
    let prefixes: Vec<Vec<u8>> = vec![
        vec![],
        vec![0x00],
        b"ab".to_vec(),
        b"ab\xff".to_vec(),
        vec![0xfe],
        vec![0xfe, 0xff],
        vec![0xff],
        vec![0xff, 0xff],
        vec![0xff, 0xff, 0xff],
        vec![0xff, 0xff, 0xff, 0xff],
        b"p".to_vec(),
        vec![b'p', 30],
        b"zzz".to_vec(),
    ];
    for stage in ["mixed", "compacted"] {
        for p in &prefixes {
            let want = prefix_model(&model, p);
            let mk = || {
                db.iter(
                    &ks,
                    ReadOptions {
                        prefix: Some(p.clone()),
                        ..ReadOptions::default()
                    },
                )
                .expect("iter")
            };
            let mut it = mk();
            it.seek_to_first();
            assert_eq!(
                collect(&mut it, true),
                want,
                "{stage}: prefix {p:x?} forward"
            );
            let mut it = mk();
            it.seek_to_last();
            let mut back = collect(&mut it, false);
            back.reverse();
            assert_eq!(back, want, "{stage}: prefix {p:x?} backward");
            // Seeks outside the prefix stay inside it.
            let mut it = mk();
            it.seek(b"");
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                want.first().map(|x| x.0.clone()),
                "{stage}: prefix {p:x?} seek(empty)"
            );
            it.seek_for_prev(&[0xff; 8]);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                want.last().map(|x| x.0.clone()),
                "{stage}: prefix {p:x?} seek_for_prev(ff..)"
            );
            if !p.is_empty() {
                it.seek_for_prev(b"");
                assert!(
                    !it.valid() || it.key().starts_with(p),
                    "{stage}: prefix {p:x?} seek_for_prev(empty) left the prefix: {:x?}",
                    it.key()
                );
            }
        }
        db.compact_range(&ks, None, None).expect("compact");
    }
}

#[test]
fn bounds_and_seek_for_prev_match_the_model() {
    let (mem, _) = mem_vfs();
    let (db, model) = edge_db(&mem);
    let ks = db.default_keyspace();
    let mut probes: Vec<Vec<u8>> = edge_keys();
    probes.extend([
        vec![0x00, 0x00],
        b"a".to_vec(),
        b"ab\x01".to_vec(),
        b"zz".to_vec(),
        vec![0xff, 0xff, 0xff, 0xff, 0xff],
        vec![b'p', 30],
    ]);
    let bound_choices: Vec<Option<Vec<u8>>> = std::iter::once(None)
        .chain(probes.iter().step_by(3).cloned().map(Some))
        .collect();
    for stage in ["mixed", "compacted"] {
        for lo in &bound_choices {
            for hi in &bound_choices {
                let lob = lo.clone().map_or(Bound::Unbounded, Bound::Included);
                let hib = hi.clone().map_or(Bound::Unbounded, Bound::Excluded);
                let want = range(&model, lob, hib);
                let mut it = db
                    .iter(
                        &ks,
                        ReadOptions {
                            lower_bound: lo.clone(),
                            upper_bound: hi.clone(),
                            ..ReadOptions::default()
                        },
                    )
                    .expect("iter");
                it.seek_to_first();
                assert_eq!(collect(&mut it, true), want, "{stage} [{lo:x?}, {hi:x?})");
                it.seek_to_last();
                let mut back = collect(&mut it, false);
                back.reverse();
                assert_eq!(back, want, "{stage} [{lo:x?}, {hi:x?}) backward");
                for t in &probes {
                    // seek: first key >= t within bounds; seek_for_prev: last key <= t.
                    let ge = want.iter().find(|(k, _)| k >= t).map(|x| x.0.clone());
                    let le = want.iter().rev().find(|(k, _)| k <= t).map(|x| x.0.clone());
                    it.seek(t);
                    assert_eq!(
                        it.valid().then(|| it.key().to_vec()),
                        ge,
                        "{stage} [{lo:x?}, {hi:x?}) seek {t:x?}"
                    );
                    it.seek_for_prev(t);
                    assert_eq!(
                        it.valid().then(|| it.key().to_vec()),
                        le,
                        "{stage} [{lo:x?}, {hi:x?}) seek_for_prev {t:x?}"
                    );
                    // Switching direction from there steps to the neighbour.
                    if let Some(le) = &le {
                        it.next();
                        let after = want.iter().find(|(k, _)| k > le).map(|x| x.0.clone());
                        assert_eq!(
                            it.valid().then(|| it.key().to_vec()),
                            after,
                            "{stage} seek_for_prev {t:x?} then next"
                        );
                    }
                }
            }
        }
        db.compact_range(&ks, None, None).expect("compact");
    }
}

// ---------------------------------------------------------------------------------------
// Snapshots.

#[test]
fn snapshots_are_isolated_while_background_compactions_run() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, true);
    let ks = db.default_keyspace();
    let mut model = Model::new();
    let mut snaps = Vec::new();
    for round in 0..6u32 {
        for i in 0..400 {
            let key = k((i * 7 + round * 13) % 500);
            let val = v(i, &format!("r{round}"));
            db.put(&ks, &key, &val, &WriteOptions::default())
                .expect("put");
            model.insert(key, val);
        }
        let a = (round * 80) % 500;
        db.delete_range(&ks, &k(a), &k(a + 40), &WriteOptions::default())
            .expect("delete_range");
        let doomed: Vec<_> = model
            .range(k(a)..k(a + 40))
            .map(|(x, _)| x.clone())
            .collect();
        for d in doomed {
            model.remove(&d);
        }
        for i in (round..500).step_by(11) {
            db.delete(&ks, &k(i), &WriteOptions::default())
                .expect("del");
            model.remove(&k(i));
        }
        snaps.push((db.snapshot(), model.clone()));
    }
    db.wait_for_background_work().expect("bg");
    db.compact_range(&ks, None, None).expect("compact");
    for (i, (s, m)) in snaps.iter().enumerate() {
        assert_eq!(&scan_all_at(&db, s), m, "snapshot {i}");
        for key in (0..500).map(k) {
            assert_eq!(
                db.get(&ks, &key, &ReadOptions::at(s))
                    .expect("get")
                    .as_ref(),
                m.get(&key),
                "snapshot {i} get"
            );
        }
    }
    // Release them one by one, compacting in between: the others stay intact.
    while let Some((s, m)) = snaps.pop() {
        drop(s);
        db.compact_range(&ks, None, None).expect("compact");
        for (i, (s, m2)) in snaps.iter().enumerate() {
            assert_eq!(
                &scan_all_at(&db, s),
                m2,
                "snapshot {i} after releasing a newer one"
            );
        }
        let _ = m;
    }
    assert_eq!(scan_all(&db, &ks), model);
}

// ---------------------------------------------------------------------------------------
// Checkpoints.

fn real_opts(background: bool) -> Options {
    let mut o = tiny_options(Arc::new(RealVfs), background);
    o.memtable_size_bytes = 16 << 10;
    o
}

#[test]
fn checkpoint_opens_as_its_own_database_with_the_same_data() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, real_opts(false)).expect("open");
    let ks = db.default_keyspace();
    let users = db.create_keyspace("users").expect("create");
    let mut model = Model::new();
    for i in 0..800 {
        db.put(&ks, &k(i), &v(i, "a"), &WriteOptions::default())
            .expect("put");
        model.insert(k(i), v(i, "a"));
    }
    db.compact_range(&ks, None, None).expect("compact");
    db.delete_range(&ks, &k(10), &k(60), &WriteOptions::default())
        .expect("delete_range");
    for i in 10..60 {
        model.remove(&k(i));
    }
    db.put(
        &users,
        b"alice",
        b"1",
        &WriteOptions::new(Durability::Buffered),
    )
    .expect("put");
    // Some writes only in the memtable (unflushed, even unsynced) must be in the copy too.
    for i in 900..920 {
        db.put(
            &ks,
            &k(i),
            b"late",
            &WriteOptions::new(Durability::Buffered),
        )
        .expect("put");
        model.insert(k(i), b"late".to_vec());
    }
    let ckpt = tmp.path().join("ckpt");
    db.checkpoint(&ckpt).expect("checkpoint");
    // Later writes to the source stay out of the copy.
    db.put(&ks, &k(5), b"after", &sync()).expect("put");
    db.delete(&ks, &k(6), &sync()).expect("delete");
    db.compact_range(&ks, None, None).expect("compact");
    let copy = Db::open(&ckpt, real_opts(false)).expect("open checkpoint");
    assert_eq!(scan_all(&copy, &copy.default_keyspace()), model);
    let cu = copy.keyspace("users").expect("users in the copy");
    assert_eq!(
        copy.get(&cu, b"alice", &ro()).expect("get"),
        Some(b"1".to_vec())
    );
    // The copy is independent: writes to it do not reach the source, and it reopens.
    copy.put(&copy.default_keyspace(), b"only-in-copy", b"1", &sync())
        .expect("put");
    copy.compact_range(&copy.default_keyspace(), None, None)
        .expect("compact copy");
    drop(copy);
    assert_eq!(db.get(&ks, b"only-in-copy", &ro()).expect("get"), None);
    assert_eq!(
        db.get(&ks, &k(5), &ro()).expect("get"),
        Some(b"after".to_vec())
    );
    let copy = Db::open(&ckpt, real_opts(false)).expect("reopen checkpoint");
    model.insert(b"only-in-copy".to_vec(), b"1".to_vec());
    assert_eq!(scan_all(&copy, &copy.default_keyspace()), model);
    // Non-empty target: refused, and it did not touch the existing files.
    let err = db.checkpoint(&ckpt);
    assert!(err.is_err(), "checkpoint into a non-empty directory");
    drop(copy);
    let copy = Db::open(&ckpt, real_opts(false)).expect("reopen checkpoint");
    assert_eq!(scan_all(&copy, &copy.default_keyspace()), model);
    // A directory holding one stray file is non-empty too.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(other.join("note.txt"), b"hi").expect("write");
    assert!(db.checkpoint(&other).is_err());
    // An existing empty directory is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    db.checkpoint(&empty).expect("checkpoint into an empty dir");
}

/// A checkpoint is durable when the call returns: a power loss right after keeps it whole.
#[test]
fn checkpoint_survives_power_loss_right_after() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    let mut model = Model::new();
    for i in 0..600 {
        db.put(
            &ks,
            &k(i),
            &v(i, "c"),
            &WriteOptions::new(Durability::Buffered),
        )
        .expect("put");
        model.insert(k(i), v(i, "c"));
    }
    db.checkpoint("/ckpt").expect("checkpoint");
    let image = mem.crash_clone();
    let copy = Db::open("/ckpt", tiny_options(Arc::new(image), false)).expect("open");
    assert_eq!(scan_all(&copy, &copy.default_keyspace()), model);
}

// ---------------------------------------------------------------------------------------
// Open, close, locking.

#[test]
fn close_then_reopen_keeps_every_write_even_buffered_ones() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    for i in 0..10 {
        db.put(
            &ks,
            &k(i),
            b"buffered",
            &WriteOptions::new(Durability::Buffered),
        )
        .expect("put");
    }
    db.close().expect("close");
    // close() synced the WAL: even a power loss keeps the buffered writes.
    let image = mem.crash_clone();
    for vfs in [mem.clone(), image] {
        let db = open_mem(&vfs, false);
        assert_eq!(scan_all(&db, &db.default_keyspace()).len(), 10);
    }
    // Dropping the last handle pushes buffered writes to the OS (a process crash keeps them).
    let db = open_mem(&mem, false);
    for i in 10..20 {
        db.put(
            &ks,
            &k(i),
            b"buffered",
            &WriteOptions::new(Durability::Buffered),
        )
        .expect("put");
    }
    drop(db);
    let db = open_mem(&mem.process_crash_clone(), false);
    assert_eq!(scan_all(&db, &db.default_keyspace()).len(), 20);
}

#[test]
fn second_open_of_the_same_path_is_locked() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, real_opts(false)).expect("open");
    assert!(matches!(
        Db::open(&dir, real_opts(false)),
        Err(Error::Locked(_))
    ));
    // A clone of the handle is not a second open.
    let db2 = db.clone();
    db2.put(&db2.default_keyspace(), b"a", b"1", &sync())
        .expect("put through a clone");
    drop(db);
    // The lock is held until the last clone goes.
    assert!(matches!(
        Db::open(&dir, real_opts(false)),
        Err(Error::Locked(_))
    ));
    drop(db2);
    let db = Db::open(&dir, real_opts(false)).expect("reopen after drop");
    assert_eq!(
        db.get(&db.default_keyspace(), b"a", &ro()).expect("get"),
        Some(b"1".to_vec())
    );
    db.close().expect("close");
    let _db = Db::open(&dir, real_opts(true)).expect("reopen after close");
    // MemVfs locks the same way.
    let (mem, _) = mem_vfs();
    let _a = open_mem(&mem, false);
    assert!(matches!(
        Db::open(DB, tiny_options(Arc::new(mem.clone()), false)),
        Err(Error::Locked(_))
    ));
}

#[test]
fn open_respects_create_if_missing_and_error_if_exists() {
    let (mem, vfs) = mem_vfs();
    let o = |create: bool, exists: bool| Options {
        create_if_missing: create,
        error_if_exists: exists,
        ..tiny_options(Arc::clone(&vfs), false)
    };
    assert!(Db::open(DB, o(false, false)).is_err());
    assert!(!vfs.exists(Path::new(DB).join("CURRENT").as_path()));
    drop(Db::open(DB, o(true, false)).expect("create"));
    assert!(Db::open(DB, o(true, true)).is_err());
    drop(Db::open(DB, o(false, false)).expect("open existing"));
    let _ = mem;
}

#[test]
fn multi_get_handles_duplicates_order_and_missing_keys() {
    let (mem, _) = mem_vfs();
    let db = open_mem(&mem, false);
    let ks = db.default_keyspace();
    for i in 0..300 {
        db.put(&ks, &k(i), &v(i, "m"), &WriteOptions::default())
            .expect("put");
    }
    db.compact_range(&ks, None, None).expect("compact");
    for i in (0..300).step_by(2) {
        db.put(&ks, &k(i), &v(i, "n"), &WriteOptions::default())
            .expect("put");
    }
    let keys: Vec<Vec<u8>> = vec![
        k(299),
        k(0),
        k(0),
        b"zzz".to_vec(),
        k(150),
        Vec::new(),
        k(151),
        k(299),
    ];
    let refs: Vec<&[u8]> = keys.iter().map(|x| x.as_slice()).collect();
    let got = db.multi_get(&ks, &refs, &ro()).expect("multi_get");
    let want: Vec<Option<Vec<u8>>> = keys
        .iter()
        .map(|key| db.get(&ks, key, &ro()).expect("get"))
        .collect();
    assert_eq!(got, want);
    assert_eq!(got[1], Some(v(0, "n")));
    assert_eq!(got[6], Some(v(151, "m")));
    assert!(db.multi_get(&ks, &[], &ro()).expect("empty").is_empty());
}

// ---------------------------------------------------------------------------------------
// Option variations: codecs, filters, block shapes, direct reads.

/// Keys that stress index separators: shared prefixes, 0x00 and 0xff runs, keys that are
/// prefixes of others, many versions of one key.
fn separator_keys() -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for a in [0x00u8, 0x01, b'a', 0xfe, 0xff] {
        for n in 0..6 {
            let mut k = vec![b's', a];
            k.extend(std::iter::repeat_n(0xff, n));
            keys.push(k.clone());
            k.push(0x00);
            keys.push(k.clone());
            k.push(a);
            keys.push(k);
        }
    }
    for i in 0..200u32 {
        keys.push(format!("t{:03}", i * 3).into_bytes());
    }
    keys.sort();
    keys.dedup();
    keys
}

fn probe_keys(keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut probes = keys.to_vec();
    for k in keys {
        let mut a = k.clone();
        a.push(0x00);
        probes.push(a);
        let mut b = k.clone();
        b.push(0xff);
        probes.push(b);
        if !k.is_empty() {
            probes.push(k[..k.len() - 1].to_vec());
        }
    }
    probes.extend(["t001", "t599", "t600", "u", ""].map(|s| s.as_bytes().to_vec()));
    probes
}

fn exercise_options(o: Options, label: &str) {
    let db = Db::open(DB, o.clone()).expect("open");
    let ks = db.default_keyspace();
    let keys = separator_keys();
    let mut model = Model::new();
    // Several versions of every key, spread over memtable, L0 and deeper levels.
    for round in 0..3u32 {
        for (i, key) in keys.iter().enumerate() {
            if (i as u32 + round).is_multiple_of(4) {
                db.delete(&ks, key, &WriteOptions::default())
                    .expect("delete");
                model.remove(key);
            } else {
                let val = format!("{label}-{round}-{i}-{}", "q".repeat(i % 30)).into_bytes();
                db.put(&ks, key, &val, &WriteOptions::default())
                    .expect("put");
                model.insert(key.clone(), val);
            }
        }
        if round == 0 {
            db.compact_range(&ks, None, None).expect("compact");
        } else if round == 1 {
            db.flush().expect("flush");
        }
    }
    let probes = probe_keys(&keys);
    let verify = |db: &Db, what: &str| {
        assert_eq!(scan_all(db, &ks), model, "{label} {what}: scan");
        for p in &probes {
            assert_eq!(
                db.get(&ks, p, &ro()).expect("get").as_ref(),
                model.get(p),
                "{label} {what}: get {p:x?}"
            );
        }
        let refs: Vec<&[u8]> = probes.iter().map(|p| p.as_slice()).collect();
        let got = db.multi_get(&ks, &refs, &ro()).expect("multi_get");
        for (p, g) in probes.iter().zip(got) {
            assert_eq!(g.as_ref(), model.get(p), "{label} {what}: multi_get {p:x?}");
        }
        let mut it = db.iter(&ks, ro()).expect("iter");
        for p in probes.iter().step_by(5) {
            it.seek(p);
            let want = model.range(p.clone()..).next().map(|(k, _)| k.clone());
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                want,
                "{label} {what}: seek {p:x?}"
            );
            it.seek_for_prev(p);
            let want = model
                .range(..=p.clone())
                .next_back()
                .map(|(k, _)| k.clone());
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                want,
                "{label} {what}: seek_for_prev {p:x?}"
            );
        }
    };
    verify(&db, "mixed");
    db.compact_range(&ks, None, None).expect("compact");
    verify(&db, "compacted");
    drop(db);
    let db = Db::open(DB, o).expect("reopen");
    verify(&db, "reopened");
}

#[test]
fn every_codec_filter_and_block_shape_reads_back_exactly() {
    use cellar_engine::Compression;
    let shapes: [(Compression, u32, usize, usize); 6] = [
        (Compression::None, 10, 256, 4),
        (Compression::Lz4, 0, 256, 1),
        (Compression::Zstd, 10, 256, 16),
        (Compression::Zstd, 1, 1, 1),
        (Compression::Lz4, 20, 1, 2),
        (Compression::None, 0, 8192, 64),
    ];
    for (codec, bloom, block, restart) in shapes {
        let (mem, _) = mem_vfs();
        let o = Options {
            compression: codec,
            bloom_bits_per_key: bloom,
            block_size_bytes: block,
            block_restart_interval: restart,
            ..tiny_options(Arc::new(mem.clone()), false)
        };
        exercise_options(
            o,
            &format!("{codec:?}/bloom{bloom}/block{block}/restart{restart}"),
        );
    }
}

#[test]
fn direct_reads_on_the_real_fs_read_back_exactly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let o = Options {
        use_direct_reads: true,
        block_cache_size_bytes: 0,
        ..real_opts(false)
    };
    // The db lives in `dir`, not DB: open it through a helper that uses the path.
    let db = Db::open(&dir, o.clone()).expect("open with O_DIRECT");
    let ks = db.default_keyspace();
    let mut model = Model::new();
    for i in 0..2000 {
        db.put(&ks, &k(i), &v(i, "d"), &WriteOptions::default())
            .expect("put");
        model.insert(k(i), v(i, "d"));
    }
    db.compact_range(&ks, None, None).expect("compact");
    assert_eq!(scan_all(&db, &ks), model);
    for i in (0..2000).step_by(17) {
        assert_eq!(db.get(&ks, &k(i), &ro()).expect("get"), Some(v(i, "d")));
    }
    let keys: Vec<Vec<u8>> = (0..2000).step_by(3).map(k).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|x| x.as_slice()).collect();
    let got = db.multi_get(&ks, &refs, &ro()).expect("multi_get");
    for (key, g) in keys.iter().zip(got) {
        assert_eq!(g.as_ref(), model.get(key));
    }
    assert!(db.stats().device_reads > 0);
}

/// A labelled change to the options.
type OptionsCase = (&'static str, fn(&mut Options));

/// Degenerate option values are either refused at open (`InvalidArgument`) or work; they
/// never hang a writer or panic.
fn degenerate_options_case(label: &str, tweak: fn(&mut Options)) -> Result<(), String> {
    let (mem, _) = mem_vfs();
    let mut o = tiny_options(Arc::new(mem), true);
    tweak(&mut o);
    let (tx, rx) = std::sync::mpsc::channel();
    let label2 = label.to_string();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            move || -> Result<(), String> {
                let db = match Db::open(DB, o) {
                    Ok(db) => db,
                    Err(Error::InvalidArgument(_)) => return Ok(()),
                    Err(e) => return Err(format!("open: {e}")),
                };
                let ks = db.default_keyspace();
                for i in 0..400 {
                    db.put(&ks, &k(i), &v(i, "g"), &WriteOptions::default())
                        .map_err(|e| format!("put {i}: {e}"))?;
                }
                db.flush().map_err(|e| format!("flush: {e}"))?;
                db.compact_range(&ks, None, None)
                    .map_err(|e| format!("compact: {e}"))?;
                if scan_all(&db, &ks).len() != 400 {
                    return Err("wrong data".into());
                }
                Ok(())
            },
        ));
        let _ = tx.send(r.unwrap_or_else(|_| Err(format!("{label2}: panic"))));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(r) => r.map_err(|e| format!("{label}: {e}")),
        Err(_) => Err(format!("{label}: hung for 10 s")),
    }
}

#[test]
fn degenerate_options_are_refused_or_work() {
    let cases: [OptionsCase; 9] = [
        ("memtable_size_bytes = 0", |o| o.memtable_size_bytes = 0),
        ("block_size_bytes = 0", |o| o.block_size_bytes = 0),
        ("block_restart_interval = 0", |o| {
            o.block_restart_interval = 0
        }),
        ("target_file_size_bytes = 0", |o| {
            o.target_file_size_bytes = 0
        }),
        ("wal_buffer_bytes = 0", |o| o.wal_buffer_bytes = 0),
        ("block_cache_size_bytes = 0", |o| {
            o.block_cache_size_bytes = 0
        }),
        ("level1_size_bytes = 0", |o| o.level1_size_bytes = 0),
        ("level_size_ratio = 0", |o| o.level_size_ratio = 0),
        ("l0_compaction_trigger = 0", |o| o.l0_compaction_trigger = 0),
    ];
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|(label, f)| degenerate_options_case(label, *f).err())
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Stall limits that can never be met must be refused at open, not hang the first writer
/// that fills a memtable.
#[test]
fn impossible_stall_limits_are_refused_at_open() {
    let cases: [OptionsCase; 3] = [
        ("max_immutable_memtables = 0", |o| {
            o.max_immutable_memtables = 0
        }),
        ("l0_stop_trigger = 0", |o| o.l0_stop_trigger = 0),
        ("flush_threads = 0", |o| o.flush_threads = 0),
    ];
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|(label, f)| degenerate_options_case(label, *f).err())
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Regression: `flush` returned once the flushed memtable left the read path, before the
/// flush was counted, so `stats()` right after it could miss the flush (seen as a flaky
/// `/metrics` test in the server).
#[test]
fn stats_count_a_flush_by_the_time_flush_returns() {
    let mem = MemVfs::new();
    let db = open_mem(&mem, true);
    let ks = db.default_keyspace();
    for i in 0..200u32 {
        db.put(&ks, &k(i), &v(i, "f"), &sync()).expect("put");
        db.flush().expect("flush");
        let s = db.stats();
        assert_eq!(s.flushes, u64::from(i) + 1, "flush {i} not counted");
        assert!(s.flush_bytes > 0);
    }
}
