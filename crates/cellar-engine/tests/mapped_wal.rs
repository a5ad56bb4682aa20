//! The WAL of a directory database that does not sync is appended through a memory map
//! (`Vfs::create_mapped`, docs/design/mapped-wal.md). These tests run on the real file
//! system: what a killed process leaves is the files as the OS has them.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use cellar_engine::tools::log::{read_log, LogKind, TailPolicy};
use cellar_engine::{Db, Durability, Options, ReadOptions, WriteOptions};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read db dir") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
}

fn options() -> Options {
    Options {
        // Small memtables: the writes below fill several WALs.
        memtable_size_bytes: 256 << 10,
        // The writer flushes full memtables itself, so the files stand still between writes.
        background_work: false,
        ..Options::default()
    }
}

fn value(i: u32) -> Vec<u8> {
    format!("{i:08}-{}", "v".repeat(150 + (i % 50) as usize)).into_bytes()
}

/// WAL files in `dir`, oldest first, with their bytes.
fn wals(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "wal"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).expect("read")))
        .collect();
    out.sort();
    out
}

/// Every `Flush` write is in the OS's hands when `write` returns: a copy of the files taken
/// while the database is open (a killed process) opens with all of them. The newest WAL
/// ends in reserved zeros until the database is dropped.
#[test]
fn a_killed_writer_loses_no_flushed_write() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (live, copy) = (tmp.path().join("live"), tmp.path().join("copy"));
    let db = Db::open(&live, options()).expect("open");
    let ks = db.default_keyspace();
    let wo = WriteOptions::new(Durability::Flush);
    let n = 6000u32;
    for i in 0..n {
        db.put(&ks, format!("key{i:06}").as_bytes(), &value(i), &wo)
            .expect("put");
    }
    copy_dir(&live, &copy);

    let found = wals(&copy);
    let newest = found.last().expect("a WAL");
    let (name, bytes) = newest;
    let log = read_log(
        bytes,
        Path::new(name),
        LogKind::Wal,
        TailPolicy::TolerateTornTail,
    )
    .expect("newest WAL");
    assert!(!log.records.is_empty(), "the newest WAL holds writes");
    assert!(
        log.unwritten_tail && log.dropped_tail_bytes > 0,
        "reserved zeros"
    );

    let reopened = Db::open(&copy, options()).expect("open the copy");
    let ks2 = reopened.default_keyspace();
    for i in 0..n {
        let got = reopened
            .get(
                &ks2,
                format!("key{i:06}").as_bytes(),
                &ReadOptions::default(),
            )
            .expect("get");
        assert_eq!(got.as_deref(), Some(value(i).as_slice()), "key {i}");
    }
    drop(reopened);

    // Closed, the newest WAL is cut back to its last record too.
    drop(db);
    for (name, bytes) in wals(&live) {
        let log = read_log(&bytes, Path::new(&name), LogKind::Wal, TailPolicy::Strict)
            .expect("a closed database's WAL is whole");
        assert_eq!(log.valid_len, bytes.len() as u64, "{name}");
    }
}
