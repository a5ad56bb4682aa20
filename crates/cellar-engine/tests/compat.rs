//! On-disk compatibility: a database written by an older build of the same format version
//! must open. `tests/fixtures/v1-db/` holds such a database (SSTs in three codecs on several
//! levels, a manifest with range tombstones and two keyspaces, CURRENT, and a WAL whose
//! records were never flushed). It is committed, never regenerated casually: rebuilding it
//! with a newer build defeats its purpose. `regenerate_v1_fixture` (ignored, and a no-op
//! unless `CELLAR_REGENERATE_V1_FIXTURE=1`) rebuilds it; run it only when the format version
//! changes, and then keep the old one too.
//!
//! The expected contents come from `fixture_ops` (replayed into a model) and are pinned by a
//! literal table (`PINNED`), so a change to the ops cannot silently change what is checked.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cellar_engine::vfs::RealVfs;
use cellar_engine::{Compression, Db, Durability, Options, ReadOptions, WriteBatch, WriteOptions};

type Multi = BTreeMap<(String, Vec<u8>), Vec<u8>>;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-db")
}

#[derive(Debug, Clone)]
enum Op {
    Put(&'static str, Vec<u8>, Vec<u8>),
    Delete(&'static str, Vec<u8>),
    DeleteRange(&'static str, Vec<u8>, Vec<u8>),
}

/// One step of the fixture's history.
#[derive(Debug, Clone)]
enum Step {
    /// Writes, one batch each.
    Batch(Vec<Op>, Durability),
    Flush,
    CompactDefault,
    /// Close and reopen with another codec (so the SSTs use several).
    Reopen(Compression),
}

fn user(i: u32) -> Vec<u8> {
    format!("user{i:04}").into_bytes()
}

fn order(i: u32) -> Vec<u8> {
    format!("order{i:05}").into_bytes()
}

/// Deterministic, mildly compressible values of varied length.
fn val(tag: &str, i: u32) -> Vec<u8> {
    let mut x = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ tag.len() as u64;
    let len = 12 + (i % 50) as usize;
    let mut v = format!("{tag}:{i}:").into_bytes();
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b"abcdefgh"[(x % 8) as usize]);
    }
    v
}

/// The whole history of the fixture. Never change it without regenerating the fixture.
fn fixture_ops() -> Vec<Step> {
    let mut s = Vec::new();
    let put = |ks, k, v| Op::Put(ks, k, v);
    // Round 1 (LZ4): users, flushed and compacted onto deeper levels.
    for i in 0..400 {
        s.push(Step::Batch(
            vec![put("default", user(i), val("u1", i))],
            Durability::Buffered,
        ));
    }
    s.push(Step::CompactDefault);
    // Round 2 (zstd): orders in their own keyspace, overwrites and deletes of users.
    s.push(Step::Reopen(Compression::Zstd));
    for i in 0..150 {
        s.push(Step::Batch(
            vec![put("orders", order(i), val("o1", i))],
            Durability::Flush,
        ));
    }
    for i in (0..400).step_by(5) {
        s.push(Step::Batch(
            vec![put("default", user(i), val("u2", i))],
            Durability::Flush,
        ));
    }
    for i in (0..400).step_by(13) {
        s.push(Step::Batch(
            vec![Op::Delete("default", user(i))],
            Durability::Flush,
        ));
    }
    s.push(Step::Batch(
        vec![Op::DeleteRange("default", user(200), user(230))],
        Durability::Sync,
    ));
    s.push(Step::Flush);
    // Round 3 (no compression): more, flushed to L0, plus a range delete in the manifest.
    s.push(Step::Reopen(Compression::None));
    for i in 400..460 {
        s.push(Step::Batch(
            vec![put("default", user(i), val("u3", i))],
            Durability::Flush,
        ));
    }
    s.push(Step::Batch(
        vec![Op::DeleteRange("orders", order(40), order(60))],
        Durability::Flush,
    ));
    s.push(Step::Flush);
    // Finally, synced writes that stay in the WAL: cross-keyspace batches, a delete, a
    // range delete, an empty value and the empty key.
    s.push(Step::Batch(
        vec![
            put("default", user(7), b"wal-7".to_vec()),
            put("orders", order(7), b"wal-o7".to_vec()),
        ],
        Durability::Sync,
    ));
    s.push(Step::Batch(
        vec![Op::Delete("default", user(1))],
        Durability::Sync,
    ));
    s.push(Step::Batch(
        vec![Op::DeleteRange("default", user(300), user(310))],
        Durability::Sync,
    ));
    s.push(Step::Batch(
        vec![
            put("default", b"".to_vec(), b"empty-key".to_vec()),
            put("orders", b"empty-value".to_vec(), Vec::new()),
            put("default", user(205), b"after-range-delete".to_vec()),
        ],
        Durability::Sync,
    ));
    s
}

fn apply(m: &mut Multi, op: &Op) {
    match op {
        Op::Put(ks, k, v) => {
            m.insert((ks.to_string(), k.clone()), v.clone());
        }
        Op::Delete(ks, k) => {
            m.remove(&(ks.to_string(), k.clone()));
        }
        Op::DeleteRange(ks, a, b) => {
            let lo = (ks.to_string(), a.clone());
            let hi = (ks.to_string(), b.clone());
            let doomed: Vec<_> = m
                .range((Bound::Included(lo), Bound::Excluded(hi)))
                .map(|(k, _)| k.clone())
                .collect();
            for k in doomed {
                m.remove(&k);
            }
        }
    }
}

fn expected() -> Multi {
    let mut m = Multi::new();
    for step in fixture_ops() {
        if let Step::Batch(ops, _) = step {
            for op in &ops {
                apply(&mut m, op);
            }
        }
    }
    m
}

/// Spot checks written out by hand: (keyspace, key, value or None for absent).
const PINNED: &[(&str, &str, Option<&str>)] = &[
    ("default", "", Some("empty-key")),
    ("default", "user0001", None),
    ("default", "user0007", Some("wal-7")),
    ("default", "user0013", None),
    ("default", "user0200", None),
    ("default", "user0205", Some("after-range-delete")),
    ("default", "user0229", None),
    ("default", "user0230", Some("u2:230:")),
    ("default", "user0231", Some("u1:231:")),
    ("default", "user0305", None),
    ("default", "user0399", Some("u1:399:")),
    ("default", "user0459", Some("u3:459:")),
    ("default", "user0460", None),
    ("orders", "order00007", Some("wal-o7")),
    ("orders", "order00039", Some("o1:39:")),
    ("orders", "order00040", None),
    ("orders", "order00060", Some("o1:60:")),
    ("orders", "order00149", Some("o1:149:")),
    ("orders", "empty-value", Some("")),
];

fn writer_options(compression: Compression) -> Options {
    Options {
        vfs: Arc::new(RealVfs),
        memtable_size_bytes: 8 << 10,
        block_size_bytes: 512,
        block_restart_interval: 8,
        compression,
        l0_compaction_trigger: 3,
        level1_size_bytes: 16 << 10,
        level_size_ratio: 4,
        num_levels: 4,
        target_file_size_bytes: 8 << 10,
        wal_buffer_bytes: 4 << 10,
        background_work: false,
        ..Options::default()
    }
}

/// Rebuilds `tests/fixtures/v1-db`. Run it only when the format version changes:
/// `CELLAR_REGENERATE_V1_FIXTURE=1 cargo test -p cellar-engine --test compat -- --ignored
/// regenerate_v1_fixture`.
#[test]
#[ignore = "rebuilds the committed compatibility fixture"]
fn regenerate_v1_fixture() {
    // `--include-ignored` must not rebuild the committed fixture by accident.
    if std::env::var_os("CELLAR_REGENERATE_V1_FIXTURE").is_none() {
        eprintln!("set CELLAR_REGENERATE_V1_FIXTURE=1 to rebuild tests/fixtures/v1-db");
        return;
    }
    let dir = fixture_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove old fixture");
    }
    let mut db = Db::open(&dir, writer_options(Compression::Lz4)).expect("open");
    let mut orders = None;
    for step in fixture_ops() {
        match step {
            Step::Batch(ops, d) => {
                let mut b = WriteBatch::new();
                for op in &ops {
                    let ks_name = match op {
                        Op::Put(ks, ..) | Op::Delete(ks, ..) | Op::DeleteRange(ks, ..) => *ks,
                    };
                    let ks = if ks_name == "default" {
                        db.default_keyspace()
                    } else {
                        if orders.is_none() {
                            orders = Some(db.create_keyspace(ks_name).expect("create"));
                        }
                        db.keyspace(ks_name).expect("keyspace")
                    };
                    match op {
                        Op::Put(_, k, v) => b.put(&ks, k, v),
                        Op::Delete(_, k) => b.delete(&ks, k),
                        Op::DeleteRange(_, a, c) => b.delete_range(&ks, a, c),
                    }
                }
                db.write(b, &WriteOptions::new(d)).expect("write");
            }
            Step::Flush => db.flush().expect("flush"),
            Step::CompactDefault => db
                .compact_range(&db.default_keyspace(), None, None)
                .expect("compact"),
            Step::Reopen(c) => {
                db.close().expect("close");
                db = Db::open(&dir, writer_options(c)).expect("reopen");
            }
        }
    }
    // Leave the WAL as a crash would: no close (which only syncs; the records are synced
    // already), and no LOCK file.
    drop(db);
    let _ = std::fs::remove_file(dir.join("LOCK"));
    let mut total = 0;
    for e in std::fs::read_dir(&dir).expect("read fixture") {
        let e = e.expect("entry");
        let n = e.metadata().expect("metadata").len();
        eprintln!("{:>8}  {}", n, e.file_name().to_string_lossy());
        total += n;
    }
    assert!(total < 100_000, "fixture is {total} bytes");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read fixture dir") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
}

fn read_all(db: &Db) -> Multi {
    let mut out = Multi::new();
    for name in db.keyspace_names() {
        let ks = db.keyspace(&name).expect("keyspace");
        let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
        it.seek_to_first();
        while it.valid() {
            out.insert((name.clone(), it.key().to_vec()), it.value().to_vec());
            it.next();
        }
        it.status().expect("scan");
    }
    out
}

fn check(db: &Db, want: &Multi, what: &str) {
    let mut names = db.keyspace_names();
    names.sort();
    assert_eq!(
        names,
        vec!["default".to_string(), "orders".into()],
        "{what}"
    );
    let got = read_all(db);
    assert_eq!(got.len(), want.len(), "{what}: key count");
    assert!(got == *want, "{what}: contents differ");
    for ((ks, k), v) in want {
        let ks = db.keyspace(ks).expect("keyspace");
        assert_eq!(
            db.get(&ks, k, &ReadOptions::default())
                .expect("get")
                .as_ref(),
            Some(v),
            "{what}: get {:?}",
            String::from_utf8_lossy(k)
        );
    }
}

fn check_pinned(db: &Db) {
    for (ks, k, v) in PINNED {
        let ks = db.keyspace(ks).expect("keyspace");
        let got = db
            .get(&ks, k.as_bytes(), &ReadOptions::default())
            .expect("get");
        match v {
            None => assert_eq!(got, None, "pinned {k}"),
            Some(prefix) => {
                let got = got.unwrap_or_else(|| panic!("pinned {k} is missing"));
                if prefix.is_empty() || !prefix.ends_with(':') {
                    assert_eq!(got, prefix.as_bytes(), "pinned {k}");
                } else {
                    assert!(got.starts_with(prefix.as_bytes()), "pinned {k}: {got:?}");
                }
            }
        }
    }
}

fn fixture_listing() -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(fixture_dir())
        .expect("the v1 fixture is missing: run regenerate_v1_fixture once")
        .map(|e| {
            let e = e.expect("entry");
            (
                e.file_name().to_string_lossy().to_string(),
                e.metadata().expect("metadata").len(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn v1_fixture_has_the_expected_files() {
    let files = fixture_listing();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"CURRENT"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("MANIFEST-")),
        "{names:?}"
    );
    assert!(
        names.iter().filter(|n| n.ends_with(".sst")).count() >= 4,
        "{names:?}"
    );
    let wal = files
        .iter()
        .find(|(n, _)| n.ends_with(".wal"))
        .expect("a WAL with unflushed records");
    assert!(wal.1 > 100, "the WAL holds no records: {wal:?}");
    let total: u64 = files.iter().map(|(_, n)| n).sum();
    assert!(total < 100_000, "fixture is {total} bytes");
    // The pinned table agrees with the ops.
    let want = expected();
    for (ks, k, v) in PINNED {
        let got = want.get(&(ks.to_string(), k.as_bytes().to_vec()));
        match v {
            None => assert!(got.is_none(), "{k}"),
            Some(p) => assert!(
                got.is_some_and(|g| g.starts_with(p.as_bytes())),
                "{k}: {got:?}"
            ),
        }
    }
}

#[test]
fn v1_fixture_opens_with_every_record_and_takes_new_writes() {
    let before = fixture_listing();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    copy_dir(&fixture_dir(), &dir);
    let mut want = expected();
    // Default options (7 levels, LZ4, background work), unlike the writer's.
    let opts = || Options {
        create_if_missing: false,
        ..Options::default()
    };
    let db = Db::open(&dir, opts()).expect("open the v1 fixture");
    check(&db, &want, "first open");
    check_pinned(&db);
    // New writes on top of the old files, through flush and compaction.
    let ks = db.default_keyspace();
    let orders = db.keyspace("orders").expect("orders");
    for i in 0..100 {
        let k = format!("new{i:03}").into_bytes();
        db.put(&ks, &k, b"n", &WriteOptions::default())
            .expect("put");
        want.insert(("default".into(), k), b"n".to_vec());
    }
    db.delete(&orders, &order(100), &WriteOptions::default())
        .expect("delete");
    want.remove(&("orders".to_string(), order(100)));
    db.delete_range(
        &ks,
        &user(0),
        &user(20),
        &WriteOptions::new(Durability::Sync),
    )
    .expect("delete_range");
    let doomed: Vec<_> = want
        .range(("default".to_string(), user(0))..("default".to_string(), user(20)))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        want.remove(&k);
    }
    db.flush().expect("flush");
    db.compact_range(&ks, None, None).expect("compact");
    db.compact_range(&orders, None, None).expect("compact");
    check(&db, &want, "after new writes");
    db.close().expect("close");
    let db = Db::open(&dir, opts()).expect("reopen");
    check(&db, &want, "after reopen");
    drop(db);
    // The fixture itself was not touched.
    assert_eq!(fixture_listing(), before);
}

/// The fixture also opens with the options that wrote it (fewer levels, inline work).
#[test]
fn v1_fixture_opens_with_the_writer_options() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    copy_dir(&fixture_dir(), &dir);
    let db = Db::open(&dir, writer_options(Compression::Lz4)).expect("open");
    check(&db, &expected(), "writer options");
}

/// Files from a *newer* format version are refused with `UnsupportedVersion` naming the file,
/// never read as corruption or (worse) misread.
#[test]
fn future_format_versions_are_refused_naming_the_file() {
    use cellar_engine::tools::sst::Footer;
    // The log header's CRC is masked as LevelDB masks it (docs/format/wal.md).
    let mask_crc = |crc: u32| crc.rotate_right(15).wrapping_add(0xa282_ead8);
    use cellar_engine::Error;

    let listing = fixture_listing();
    let pick = |pred: &dyn Fn(&str) -> bool| -> String {
        listing
            .iter()
            .map(|(n, _)| n.clone())
            .find(|n| pred(n))
            .expect("file kind in the fixture")
    };
    let sst = pick(&|n: &str| n.ends_with(".sst"));
    let wal = pick(&|n: &str| n.ends_with(".wal"));
    let manifest = pick(&|n: &str| n.starts_with("MANIFEST-"));
    let log_header_v2 = |magic: &[u8; 8]| {
        let mut h = Vec::with_capacity(16);
        h.extend_from_slice(magic);
        h.extend_from_slice(&2u32.to_le_bytes());
        let crc = mask_crc(crc32c::crc32c(&h));
        h.extend_from_slice(&crc.to_le_bytes());
        h
    };
    // The WAL and manifest are at version 1, so 2 is their future; SSTs have a version 2
    // (partitioned index), so theirs is 3.
    for (name, kind, future) in [
        (&wal, "wal", 2),
        (&manifest, "manifest", 2),
        (&sst, "sst", 3),
    ] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("db");
        copy_dir(&fixture_dir(), &dir);
        let path = dir.join(name);
        let mut bytes = std::fs::read(&path).expect("read");
        match kind {
            "wal" => bytes[..16].copy_from_slice(&log_header_v2(b"CELLAR-W")),
            "manifest" => bytes[..16].copy_from_slice(&log_header_v2(b"CELLAR-M")),
            _ => {
                let at = bytes.len() - 64;
                let mut footer = Footer::decode(&path, at as u64, &bytes[at..]).expect("v1 footer");
                footer.version = future;
                bytes[at..].copy_from_slice(&footer.encode());
            }
        }
        std::fs::write(&path, &bytes).expect("write");
        let opts = Options {
            create_if_missing: false,
            ..Options::default()
        };
        match Db::open(&dir, opts) {
            Err(Error::UnsupportedVersion { file, found, .. }) => {
                assert!(file.ends_with(name.as_str()), "{kind}: names {file}");
                assert_eq!(found, future, "{kind}");
            }
            Err(e) => panic!("{kind} of version {future}: {e:?}"),
            Ok(_) => panic!("{kind} of version {future} opened"),
        }
    }
}
