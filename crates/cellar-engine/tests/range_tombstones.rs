//! Thousands of range tombstones, shaped like the table layer's deletes (one per row, one per
//! column, a few wide ones, rows written again afterwards), spread over the manifest, a
//! frozen-then-flushed memtable and the active one, read at the latest state and at two
//! snapshots; then again after reopen and after a full compaction. Every read path (get,
//! multi_get, scans both ways, seeks with walks) must agree with a `BTreeMap` model.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use cellar_engine::vfs::MemVfs;
use cellar_engine::{Db, Durability, Keyspace, Options, ReadOptions, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const ROWS: u32 = 4_000;
const CELLS_PER_ROW: u32 = 3;

fn row(i: u32) -> Vec<u8> {
    format!("row{i:05}").into_bytes()
}

fn cell(i: u32, c: u32) -> Vec<u8> {
    let mut k = row(i);
    k.extend_from_slice(format!("/c{c}").as_bytes());
    k
}

/// `[start, end)` covering every cell of rows `from..to`.
fn rows(from: u32, to: u32) -> (Vec<u8>, Vec<u8>) {
    (row(from), row(to))
}

/// `[start, end)` covering exactly one row.
fn one_row(i: u32) -> (Vec<u8>, Vec<u8>) {
    let mut end = row(i);
    end.push(b'/' + 1);
    (row(i), end)
}

/// `[start, end)` covering exactly one cell.
fn one_cell(i: u32, c: u32) -> (Vec<u8>, Vec<u8>) {
    let mut end = cell(i, c);
    end.push(0);
    (cell(i, c), end)
}

fn open(vfs: &MemVfs) -> Db {
    let opts = Options {
        vfs: Arc::new(vfs.clone()),
        background_work: false,
        ..Options::default()
    };
    Db::open("/db", opts).expect("open")
}

struct Writer<'a> {
    db: &'a Db,
    ks: &'a Keyspace,
    model: &'a mut Model,
    tombstones: usize,
}

impl Writer<'_> {
    fn put(&mut self, k: Vec<u8>, tag: &str) {
        let v = format!("{tag}:{}", String::from_utf8_lossy(&k)).into_bytes();
        self.db
            .put(self.ks, &k, &v, &WriteOptions::new(Durability::Buffered))
            .expect("put");
        self.model.insert(k, v);
    }

    fn delete_range(&mut self, (start, end): (Vec<u8>, Vec<u8>)) {
        self.db
            .delete_range(
                self.ks,
                &start,
                &end,
                &WriteOptions::new(Durability::Buffered),
            )
            .expect("delete_range");
        common::model_delete_range(self.model, &start, &end);
        self.tombstones += 1;
    }
}

/// Every key ever written, plus keys between and around them.
fn probes() -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new(), b"a".to_vec(), b"zzz".to_vec()];
    for i in 0..ROWS {
        out.push(row(i));
        for c in 0..=CELLS_PER_ROW {
            out.push(cell(i, c));
        }
    }
    out
}

fn collect(db: &Db, ks: &Keyspace, ro: &ReadOptions, forward: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(ks, ro.clone()).expect("iterator");
    let mut out = Vec::new();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    it.status().expect("scan");
    out
}

fn check(db: &Db, ks: &Keyspace, ro: &ReadOptions, model: &Model, what: &str) {
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(
        collect(db, ks, ro, true) == expected,
        "{what}: forward scan"
    );
    let mut reversed = expected.clone();
    reversed.reverse();
    assert!(
        collect(db, ks, ro, false) == reversed,
        "{what}: reverse scan"
    );

    let probes = probes();
    for k in &probes {
        let got = db.get(ks, k, ro).expect("get");
        assert_eq!(got.as_ref(), model.get(k), "{what}: get {k:?}");
    }
    let refs: Vec<&[u8]> = probes.iter().map(|k| k.as_slice()).collect();
    let got = db.multi_get(ks, &refs, ro).expect("multi_get");
    for (k, v) in probes.iter().zip(got) {
        assert_eq!(v.as_ref(), model.get(k), "{what}: multi_get {k:?}");
    }

    // Seeks far apart, each followed by a short walk forward and back.
    let mut it = db.iter(ks, ro.clone()).expect("iterator");
    for k in probes.iter().step_by(97) {
        it.seek(k);
        let mut want = model.range(k.clone()..);
        for _ in 0..6 {
            match want.next() {
                Some((wk, wv)) => {
                    assert!(it.valid(), "{what}: seek {k:?} ended early");
                    assert_eq!((it.key(), it.value()), (wk.as_slice(), wv.as_slice()));
                    it.next();
                }
                None => assert!(!it.valid(), "{what}: seek {k:?} went past the end"),
            }
        }
        it.seek_for_prev(k);
        let mut want = model.range(..=k.clone()).rev();
        for _ in 0..6 {
            match want.next() {
                Some((wk, wv)) => {
                    assert!(it.valid(), "{what}: seek_for_prev {k:?} ended early");
                    assert_eq!((it.key(), it.value()), (wk.as_slice(), wv.as_slice()));
                    it.prev();
                }
                None => assert!(
                    !it.valid(),
                    "{what}: seek_for_prev {k:?} went past the start"
                ),
            }
        }
    }
    it.status().expect("seeks");
}

#[test]
fn range_tombstones_by_the_thousand_hide_exactly_what_they_cover() {
    let vfs = MemVfs::new();
    let db = open(&vfs);
    let ks = db.default_keyspace();
    let mut model = Model::new();
    let mut w = Writer {
        db: &db,
        ks: &ks,
        model: &mut model,
        tombstones: 0,
    };
    for i in 0..ROWS {
        for c in 0..CELLS_PER_ROW {
            w.put(cell(i, c), "v1");
        }
    }
    db.flush().expect("flush");
    let before = db.snapshot();
    let model_before = w.model.clone();

    // First half: deletes that end up in the manifest.
    for i in 0..ROWS / 2 {
        match i % 4 {
            0 | 2 => w.delete_range(one_row(i)),
            1 => w.delete_range(one_cell(i, 1)),
            _ => {}
        }
        if i % 100 == 50 {
            w.delete_range(rows(i, i + 7));
        }
    }
    // Some deleted cells come back, newer than their tombstones.
    for i in (0..ROWS / 2).step_by(8) {
        w.put(cell(i, 2), "v2");
    }
    db.flush().expect("flush");
    let mid = db.snapshot();
    let model_mid = w.model.clone();

    // Second half: deletes left in the active memtable, overlapping earlier ones.
    for i in ROWS / 2..ROWS {
        match i % 4 {
            0 | 2 => w.delete_range(one_row(i)),
            1 => w.delete_range(one_cell(i, 1)),
            _ => {}
        }
        if i % 100 == 50 {
            w.delete_range(rows(i - 1000, i + 7));
        }
    }
    for i in (ROWS / 2..ROWS).step_by(8) {
        w.put(cell(i, 0), "v3");
    }
    let tombstones = w.tombstones;
    assert!(tombstones > 3_000, "only {tombstones} tombstones");

    check(&db, &ks, &ReadOptions::default(), &model, "latest");
    check(&db, &ks, &ReadOptions::at(&mid), &model_mid, "mid snapshot");
    check(
        &db,
        &ks,
        &ReadOptions::at(&before),
        &model_before,
        "first snapshot",
    );
    drop((before, mid));

    db.close().expect("close");
    let db = open(&vfs);
    let ks = db.default_keyspace();
    check(&db, &ks, &ReadOptions::default(), &model, "reopened");

    db.compact_range(&ks, None, None).expect("compact");
    check(&db, &ks, &ReadOptions::default(), &model, "compacted");
}
