//! `cellar backup`, `cellar restore`, and `cellar check` / `inspect lsm` of a database in a
//! real SeaweedFS: a local database backed up to the bucket twice (the second run copies
//! only the new files), restored to a directory and to a fresh prefix, each copy checked
//! and compared key by key with the source; an s3 database backed up to a directory; and a
//! flipped byte in an SST object reported as CORRUPT, naming the object.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use cellar_engine::vfs::object::ObjectVfs;
use cellar_engine::vfs::Vfs;
use cellar_engine::{
    Db, Durability, ObjectStoreOptions, Options, ReadOptions, WalMode, WriteOptions,
};
use cellar_testkit::SeaweedFs;

fn seaweed() -> &'static SeaweedFs {
    SeaweedFs::shared().unwrap()
}

fn cellar(s: &SeaweedFs, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cellar"))
        .envs(s.env())
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn store_options(s: &SeaweedFs, cache: Option<&Path>) -> ObjectStoreOptions {
    ObjectStoreOptions {
        cache_dir: cache.map(Path::to_path_buf),
        endpoint: Some(s.endpoint()),
        access_key_id: Some(s.access_key().to_string()),
        secret_access_key: Some(s.secret_key().to_string()),
        ..ObjectStoreOptions::default()
    }
}

/// Opens `db` (a directory or an s3 URL; the cache in `cache`).
fn open(s: &SeaweedFs, db: &str, cache: &Path) -> Db {
    let opts = Options {
        object_store: store_options(s, Some(cache)),
        ..Options::default()
    };
    Db::open(db, opts).unwrap()
}

/// Every keyspace's every key and value.
fn dump(db: &Db) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut all = Vec::new();
    let mut names = db.keyspace_names();
    names.sort();
    for name in names {
        let ks = db.keyspace(&name).unwrap();
        let mut it = db.iter(&ks, ReadOptions::default()).unwrap();
        it.seek_to_first();
        while it.valid() {
            all.push((name.clone(), it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().unwrap();
    }
    all
}

/// `db` holds exactly `expected` (compared without printing thousands of entries).
fn assert_holds(db: &Db, expected: &[(String, Vec<u8>, Vec<u8>)]) {
    let got = dump(db);
    assert_eq!(got.len(), expected.len(), "entry count");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != expected[i]) {
        panic!("entry {i} differs: {:?} vs {:?}", got[i], expected[i]);
    }
}

fn write_rows(db: &Db, from: u32, to: u32) {
    let wo = WriteOptions::new(Durability::Flush);
    let other = db
        .keyspace("other")
        .or_else(|_| db.create_keyspace("other"))
        .unwrap();
    for i in from..to {
        let k = format!("key{i:06}");
        db.put(&db.default_keyspace(), k.as_bytes(), &[b'v'; 64], &wo)
            .unwrap();
        db.put(&other, k.as_bytes(), format!("o{i}").as_bytes(), &wo)
            .unwrap();
    }
    db.flush().unwrap();
}

/// The numbers in `copied N files (...), skipped M files` of a summary line.
fn counts(o: &Output) -> (u64, u64) {
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let after = |word: &str| -> u64 {
        let at = out.find(word).unwrap_or_else(|| panic!("{out}")) + word.len();
        out[at..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    (after("copied "), after("skipped "))
}

fn check_clean(s: &SeaweedFs, db: &str) {
    let o = cellar(s, &["check", "--db", db]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    assert!(out.contains(": OK") && !out.contains("CORRUPT"), "{out}");
}

#[test]
fn a_local_database_is_backed_up_incrementally_and_restored_anywhere() {
    let s = seaweed();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let src = src.to_str().unwrap();
    let cache = tmp.path().join("cache");
    let db = open(s, src, &cache);
    write_rows(&db, 0, 2000);
    db.close().unwrap();
    let backup = s.url(&s.fresh_prefix("backup"));
    let (copied, skipped) = counts(&cellar(s, &["backup", "--db", src, "--to", &backup]));
    assert!(copied >= 2 && skipped == 0, "{copied} {skipped}");

    let db = open(s, src, &cache);
    write_rows(&db, 2000, 2500);
    db.delete(
        &db.default_keyspace(),
        b"key000007",
        &WriteOptions::default(),
    )
    .unwrap();
    let expected = dump(&db);
    db.close().unwrap();
    let second = cellar(s, &["backup", "--db", src, "--to", &backup]);
    assert!(
        text(&second.stderr).contains("skipped"),
        "{}",
        text(&second.stderr)
    );
    let (copied2, skipped2) = counts(&second);
    // Only the new files: the first backup's SSTs are all still live (no compaction ran).
    assert_eq!(skipped2, copied, "{}", text(&second.stdout));
    assert!(copied2 >= 2, "{}", text(&second.stdout));
    check_clean(s, &backup);
    let lsm = cellar(s, &["inspect", "lsm", "--db", &backup]);
    let lsm = text(&lsm.stdout);
    assert!(
        lsm.contains("storage: object store") && lsm.contains("snapshot: 2"),
        "{lsm}"
    );

    let local = tmp.path().join("restored");
    let local = local.to_str().unwrap();
    let o = cellar(s, &["restore", "--from", &backup, "--db", local]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    check_clean(s, local);
    let db = open(s, local, &cache);
    assert_holds(&db, &expected);
    db.close().unwrap();

    let remote = s.url(&s.fresh_prefix("restored"));
    let o = cellar(s, &["restore", "--from", &backup, "--db", &remote]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    check_clean(s, &remote);
    let db = open(s, &remote, &tmp.path().join("cache-remote"));
    assert_holds(&db, &expected);
    db.close().unwrap();

    let again = cellar(s, &["restore", "--from", &backup, "--db", local]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("already holds a database"));
}

#[test]
fn a_database_open_by_a_writer_is_not_backed_up_from_its_directory() {
    let s = seaweed();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let db = open(s, src.to_str().unwrap(), &tmp.path().join("c"));
    write_rows(&db, 0, 10);
    let to = tmp.path().join("to");
    let o = cellar(
        s,
        &[
            "backup",
            "--db",
            src.to_str().unwrap(),
            "--to",
            to.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("cannot open"),
        "{}",
        text(&o.stderr)
    );
    db.close().unwrap();
}

#[test]
fn an_s3_database_is_backed_up_to_a_directory_and_a_flipped_byte_is_corrupt() {
    let s = seaweed();
    let tmp = tempfile::tempdir().unwrap();
    let prefix = s.fresh_prefix("corrupt");
    let url = s.url(&prefix);
    let db = open(s, &url, &tmp.path().join("cache"));
    write_rows(&db, 0, 1500);
    let expected = dump(&db);
    db.close().unwrap();
    check_clean(s, &url);

    let local = tmp.path().join("copy");
    let local = local.to_str().unwrap();
    let (copied, _) = counts(&cellar(s, &["backup", "--db", &url, "--to", local]));
    assert!(copied >= 2);
    check_clean(s, local);
    let db = open(s, local, &tmp.path().join("cache2"));
    assert_holds(&db, &expected);
    db.close().unwrap();
    // A closed directory is copied as it is, under its LOCK, without being modified.
    let files = |dir: &str| -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, e.metadata().unwrap().len())
            })
            .collect();
        all.sort();
        all
    };
    let before = files(local);
    let again = s.url(&s.fresh_prefix("again"));
    let o = cellar(s, &["restore", "--from", local, "--db", &again]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(files(local), before);
    check_clean(s, &again);

    let vfs = ObjectVfs::connect(&url, &store_options(s, None), None).unwrap();
    let dir = Path::new(&prefix);
    let sst = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".sst"))
        .unwrap();
    let key = dir.join(&sst);
    let mut bytes = vfs.read_all(&key).unwrap();
    // An SST no snapshot lists: an orphan, a warning only.
    let orphan = dir.join("000999.sst");
    let mut f = vfs.create(&orphan).unwrap();
    f.append(&bytes).unwrap();
    f.sync().unwrap();
    let o = cellar(s, &["check", "--db", &url]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}");
    let warn = format!("WARN {}: orphan", orphan.display());
    assert!(
        out.contains(&warn) && out.contains("1 warnings: OK"),
        "{out}"
    );

    bytes[100] ^= 0x20;
    let mut f = vfs.create(&key).unwrap();
    f.append(&bytes).unwrap();
    f.sync().unwrap();

    let o = cellar(s, &["check", "--db", &url]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let name = format!("CORRUPT {}", key.display());
    assert!(out.contains(&name), "{out}");
    assert!(out.contains("DAMAGED"), "{out}");

    vfs.remove(&key).unwrap();
    let o = cellar(s, &["check", "--db", &url]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!("MISSING {}: listed", key.display())),
        "{out}"
    );
}

/// Every object under `prefix` (the SSTs, the snapshots, the WAL objects).
fn objects(vfs: &ObjectVfs, prefix: &str) -> Vec<String> {
    let mut all = Vec::new();
    for sub in ["", "manifest", "wal"] {
        let dir = Path::new(prefix).join(sub);
        for name in vfs.list(&dir).unwrap() {
            let size = vfs.file_size(&dir.join(&name)).unwrap();
            all.push(format!("{sub}/{name} {size}"));
        }
    }
    all.sort();
    all
}

#[test]
fn check_inspect_and_backup_of_a_live_writer_write_nothing_and_do_not_fence_it() {
    let s = seaweed();
    let tmp = tempfile::tempdir().unwrap();
    let prefix = s.fresh_prefix("live");
    let url = s.url(&prefix);
    let opts = Options {
        object_store: ObjectStoreOptions {
            wal: WalMode::Object,
            ..store_options(s, Some(&tmp.path().join("cache")))
        },
        ..Options::default()
    };
    let db = Db::open(&url, opts).unwrap();
    write_rows(&db, 0, 500);
    let sync = WriteOptions::new(Durability::Sync);
    db.put(&db.default_keyspace(), b"in-the-wal", b"1", &sync)
        .unwrap();
    let vfs = ObjectVfs::connect(&url, &store_options(s, None), None).unwrap();
    let before = objects(&vfs, &prefix);

    let o = cellar(s, &["check", "--db", &url]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("/wal/") && out.contains(": fence of the writer of epoch 1"),
        "{out}"
    );
    let lsm = text(&cellar(s, &["inspect", "lsm", "--db", &url]).stdout);
    assert!(
        lsm.contains("writer epoch: 1") && lsm.contains("(1 fence)") && lsm.contains("wal: object"),
        "{lsm}"
    );
    let local = tmp.path().join("copy");
    let (copied, _) = counts(&cellar(
        s,
        &["backup", "--db", &url, "--to", local.to_str().unwrap()],
    ));
    assert!(copied >= 2);
    assert_eq!(objects(&vfs, &prefix), before);

    // Still the writer: not fenced by any of it.
    db.put(&db.default_keyspace(), b"after", b"2", &sync)
        .unwrap();
    db.close().unwrap();
}
