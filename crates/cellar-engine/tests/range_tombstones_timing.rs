//! Read cost with many range tombstones, measured by hand (never a pass/fail criterion):
//!
//! ```text
//! cargo test -p cellar-engine --release --test range_tombstones_timing -- --ignored --nocapture
//! ```
//!
//! The shape of the table layer's row deletes: 20,000 keys, then one `delete_range` for every
//! fourth row (5,000 tombstones), read back while the tombstones sit in the memtable and again
//! after a flush has moved them to the manifest (no compaction, so none is collected).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use cellar_engine::{Db, Durability, Keyspace, Options, ReadOptions, WriteOptions};

const ROWS: u32 = 20_000;
const DELETE_EVERY: u32 = 4;
const GETS: u32 = 2_000;
const RUNS: usize = 5;

fn row(i: u32) -> Vec<u8> {
    format!("row{i:08}").into_bytes()
}

fn cell(i: u32) -> Vec<u8> {
    let mut k = row(i);
    k.extend_from_slice(b"\x00cf:q");
    k
}

fn median(mut t: Vec<Duration>) -> Duration {
    t.sort();
    t[t.len() / 2]
}

/// Median time of a full forward (or reverse) scan, and the number of keys it saw.
fn scan(db: &Db, ks: &Keyspace, forward: bool) -> (Duration, usize) {
    let mut times = Vec::new();
    let mut n = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let mut it = db.iter(ks, ReadOptions::default()).expect("iterator");
        n = 0;
        if forward {
            it.seek_to_first();
        } else {
            it.seek_to_last();
        }
        while it.valid() {
            n += 1;
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        it.status().expect("scan");
        times.push(t.elapsed());
    }
    (median(times), n)
}

/// Median time of one point read (over `GETS` spread keys), and how many were found.
fn gets(db: &Db, ks: &Keyspace) -> (Duration, usize) {
    let mut times = Vec::new();
    let mut found = 0;
    for _ in 0..RUNS {
        found = 0;
        let t = Instant::now();
        for j in 0..GETS {
            let i = (j * 7919) % ROWS;
            if db
                .get(ks, &cell(i), &ReadOptions::default())
                .expect("get")
                .is_some()
            {
                found += 1;
            }
        }
        times.push(t.elapsed() / GETS);
    }
    (median(times), found)
}

fn report(label: &str, db: &Db, ks: &Keyspace) {
    let (fwd, n) = scan(db, ks, true);
    let (rev, _) = scan(db, ks, false);
    let (get, found) = gets(db, ks);
    println!(
        "{label:<34} scan fwd {:>9.3} ms  rev {:>9.3} ms  ({n} keys)   get {:>8.2} µs  ({found}/{GETS} found)",
        fwd.as_secs_f64() * 1e3,
        rev.as_secs_f64() * 1e3,
        get.as_secs_f64() * 1e6,
    );
}

/// A database in `dir` holding `ROWS` cells in its memtable.
fn load(dir: &std::path::Path) -> (Db, Keyspace) {
    let opts = Options {
        background_work: false,
        ..Options::default()
    };
    let db = Db::open(dir, opts).expect("open");
    let ks = db.default_keyspace();
    let wo = WriteOptions::new(Durability::Buffered);
    for i in 0..ROWS {
        db.put(&ks, &cell(i), b"value-of-some-cell", &wo)
            .expect("put");
    }
    (db, ks)
}

#[test]
#[ignore = "timing, run by hand"]
fn range_tombstones_read_timing() {
    let wo = WriteOptions::new(Durability::Buffered);
    let plain_dir = tempfile::tempdir().expect("tempdir");
    let (plain, ks) = load(plain_dir.path());
    report("0 tombstones, memtable", &plain, &ks);
    plain.flush().expect("flush");
    report("0 tombstones, flushed", &plain, &ks);
    drop(plain);

    let dir = tempfile::tempdir().expect("tempdir");
    let (db, ks) = load(dir.path());

    let t = Instant::now();
    for i in (0..ROWS).step_by(DELETE_EVERY as usize) {
        let mut end = row(i);
        end.push(0x01);
        db.delete_range(&ks, &row(i), &end, &wo)
            .expect("delete_range");
        // Reads between deletes make a memtable's tombstone set change under readers.
        db.get(&ks, &cell(i + 1), &ReadOptions::default())
            .expect("get");
    }
    println!(
        "{:<34} {:.3} ms",
        "5000 × (delete_range + get)",
        t.elapsed().as_secs_f64() * 1e3
    );
    report("5000 tombstones, memtable", &db, &ks);

    db.flush().expect("flush");
    report("5000 tombstones, manifest", &db, &ks);
}
