//! Shared by the CLI's integration tests: a small deterministic database and a way to run
//! the built `cellar` binary.
#![allow(dead_code)]

pub mod session;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cellar_engine::{Db, Options, WriteBatch, WriteOptions};

/// Small memtable and blocks so a few dozen writes produce several files and blocks; no
/// background threads, so every run writes byte-identical files with the same numbers. The
/// memtable's 3520 bytes cut the first flush after `build_db_with`'s 60 puts, the split the
/// golden files show.
pub fn small_options() -> Options {
    Options {
        memtable_size_bytes: 3520,
        block_size_bytes: 256,
        background_work: false,
        ..Default::default()
    }
}

/// Builds the test database in `dir`: two keyspaces, puts (with binary keys and a value
/// longer than the 64-byte preview), deletes and a range delete, a flush, then a few
/// writes that stay in the WAL (three records, so one is in the middle).
pub fn build_db(dir: &Path) {
    build_db_with(dir, small_options());
}

/// `small_options` with 64-byte blocks and index partitions of 40 bytes (a few blocks
/// each): every SST of `build_db_with` is partitioned (format version 2).
pub fn partitioned_options() -> Options {
    Options {
        block_size_bytes: 64,
        index_partition_bytes: 40,
        ..small_options()
    }
}

pub fn build_db_with(dir: &Path, opts: Options) {
    let db = Db::open(dir, opts).expect("open");
    let ks = db.default_keyspace();
    let users = db.create_keyspace("users").expect("create keyspace");
    let wo = WriteOptions::default();
    for i in 0..60u32 {
        let key = format!("key{i:03}");
        let value = format!("value-{i}-").repeat(1 + (i % 3) as usize);
        db.put(&ks, key.as_bytes(), value.as_bytes(), &wo)
            .expect("put");
    }
    db.put(&ks, b"bin\x00\xff\\key", &[b'x'; 100], &wo)
        .expect("put binary");
    for i in (0..60u32).step_by(7) {
        db.delete(&ks, format!("key{i:03}").as_bytes(), &wo)
            .expect("delete");
    }
    db.delete_range(&ks, b"key010", b"key015", &wo)
        .expect("delete_range");
    for i in 0..5u32 {
        db.put(
            &users,
            format!("user{i}").as_bytes(),
            format!("name-{i}").as_bytes(),
            &wo,
        )
        .expect("put user");
    }
    db.flush().expect("flush");

    // Left in the WAL.
    db.put(&ks, b"late-1", b"one", &wo).expect("put");
    let mut b = WriteBatch::new();
    b.put(&ks, b"late-2", b"two");
    b.delete(&ks, b"key001");
    b.delete_range(&users, b"user1", b"user3");
    db.write(b, &wo).expect("batch");
    db.delete(&users, b"user4", &wo).expect("delete");
    db.close().expect("close");
}

pub fn cellar(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(args)
        .output()
        .expect("run cellar")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Files of `dir` with the given extension, sorted by name (= by number).
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

pub fn manifest_path(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    dir.join(current.trim_end())
}

pub fn flip_byte(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[offset as usize] ^= 0x5a;
    std::fs::write(path, bytes).expect("write");
}
