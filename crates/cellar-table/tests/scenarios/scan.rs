//! Scans: ordering across families and reversed, snapshots, prefixes of 0xFF bytes, and
//! undecodable keys reported as corruption.

use std::ops::Bound;
use std::sync::Arc;

use cellar_engine::vfs::{FaultVfs, IoKind, MemVfs};
use cellar_engine::{Durability, WriteOptions};
use cellar_table::{
    CellStore, ColumnSelector, FamilyOptions, RowSelection, ScanSpec, Table, TableError,
    TableSchema,
};

use crate::common::{collect, open_store, tiny_options, DB_PATH};

fn setup(vfs: &MemVfs) -> (CellStore, Table) {
    let store = open_store(vfs);
    let all = FamilyOptions {
        max_versions: 0,
        ..FamilyOptions::default()
    };
    store
        .create_table(
            TableSchema::new("t")
                .family("z", all.clone())
                .family("a", all),
        )
        .expect("create");
    let t = store.table("t").expect("table");
    (store, t)
}

/// (row, family, qualifier, ts) of a scan.
fn keys(t: &Table, spec: ScanSpec) -> Vec<(Vec<u8>, String, Vec<u8>, u64)> {
    collect(t.scan(spec).expect("scan"))
        .into_iter()
        .map(|c| (c.0, c.1, c.2, c.3))
        .collect()
}

#[test]
fn scan_orders_by_row_family_qualifier_newest_first() {
    let vfs = MemVfs::new();
    let (store, t) = setup(&vfs);
    let d = Durability::Flush;
    let rows: [&[u8]; 4] = [b"", b"\x00", b"\x00\xff", b"\xff"];
    for (i, row) in rows.iter().enumerate() {
        for f in ["a", "z"] {
            for q in [&b"\xff"[..], b"", b"\x00"] {
                for ts in [1, 3, 2] {
                    t.put(row, f, q, Some(ts), &[i as u8], d).expect("put");
                }
            }
        }
        if i == 1 {
            store.db().flush().expect("flush");
        }
    }
    let mut want = Vec::new();
    for row in rows {
        for f in ["z", "a"] {
            for q in [&b""[..], b"\x00", b"\xff"] {
                for ts in [3, 2, 1] {
                    want.push((row.to_vec(), f.to_string(), q.to_vec(), ts));
                }
            }
        }
    }
    assert_eq!(keys(&t, ScanSpec::default()), want);

    let per_row = want.len() / rows.len();
    let reversed: Vec<_> = want.chunks(per_row).rev().flatten().cloned().collect();
    assert_eq!(
        keys(
            &t,
            ScanSpec {
                reverse: true,
                ..ScanSpec::default()
            }
        ),
        reversed
    );

    let spec = ScanSpec {
        rows: RowSelection::Range {
            start: Bound::Excluded(b"".to_vec()),
            end: Bound::Included(b"\x00\xff".to_vec()),
        },
        columns: vec![ColumnSelector::Column {
            family: "a".into(),
            qualifier: b"\x00".to_vec(),
        }],
        max_versions: Some(1),
        reverse: true,
        limit: Some(1),
        ..ScanSpec::default()
    };
    assert_eq!(
        keys(&t, spec),
        vec![(b"\x00\xff".to_vec(), "a".into(), b"\x00".to_vec(), 3)]
    );

    let prefix = ScanSpec {
        max_versions: Some(1),
        ..ScanSpec::prefix(b"\x00")
    };
    let rows_seen: Vec<Vec<u8>> = keys(&t, prefix).into_iter().map(|k| k.0).collect();
    assert_eq!(rows_seen.len(), 12);
    assert!(rows_seen.iter().all(|r| r.starts_with(b"\x00")));
    assert_eq!(keys(&t, ScanSpec::prefix(b"\xff")).len(), 18);
    assert_eq!(keys(&t, ScanSpec::prefix(b"\xff\xff")).len(), 0);
}

#[test]
fn scan_at_snapshot_ignores_later_writes() {
    let vfs = MemVfs::new();
    let (store, t) = setup(&vfs);
    let d = Durability::Flush;
    t.put(b"r1", "a", b"q", Some(1), b"old", d).expect("put");
    let snapshot = store.db().snapshot();
    t.put(b"r1", "a", b"q", Some(2), b"new", d).expect("put");
    t.put(b"r2", "z", b"q", Some(1), b"new", d).expect("put");
    t.delete_row(b"r1", d).expect("delete");
    store.db().flush().expect("flush");
    let spec = ScanSpec {
        snapshot: Some(snapshot),
        ..ScanSpec::default()
    };
    let cells = collect(t.scan(spec).expect("scan"));
    assert_eq!(
        cells,
        vec![(
            b"r1".to_vec(),
            "a".into(),
            b"q".to_vec(),
            1,
            b"old".to_vec()
        )]
    );
    let now: Vec<Vec<u8>> = collect(t.scan(ScanSpec::default()).expect("scan"))
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(now, vec![b"r2".to_vec()]);
}

#[test]
fn scan_reports_an_undecodable_key_as_corruption() {
    let vfs = MemVfs::new();
    let (store, t) = setup(&vfs);
    t.put(b"a", "a", b"q", Some(1), b"v", Durability::Flush)
        .expect("put");
    let db = store.db();
    let ks = db.keyspace("t/t/a").expect("keyspace");
    db.put(&ks, b"b\x00\x07junk", b"v", &WriteOptions::default())
        .expect("raw put");
    let results: Vec<_> = t.scan(ScanSpec::default()).expect("scan").collect();
    assert_eq!(
        results.len(),
        2,
        "one good cell, then the error, then the end"
    );
    assert!(results[0].is_ok());
    match &results[1] {
        Err(TableError::Corruption {
            table, location, ..
        }) => {
            assert_eq!(table, "t");
            assert!(
                location.contains("t/t/a") && location.contains("620007"),
                "{location}"
            );
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// A read that fails in either family, anywhere in a scan over many rows, ends the scan with
/// the error: the scan never ends as if the table had no more cells. (The scanner looks for
/// errors in the cursor it reads after each cell, and in every cursor once per row.)
#[test]
fn a_failed_read_anywhere_in_a_scan_ends_it_with_the_error() {
    let mem = MemVfs::new();
    let (store, t) = setup(&mem);
    for r in 0..60u32 {
        for family in ["z", "a"] {
            let row = format!("r{r:03}");
            t.put(
                row.as_bytes(),
                family,
                b"q",
                Some(1),
                &[7; 40],
                Durability::Flush,
            )
            .expect("put");
        }
    }
    drop((t, store));
    let mut failed_scans = 0;
    for n in 1..=60 {
        let fault = FaultVfs::new(Arc::new(mem.clone()));
        let store = CellStore::open(DB_PATH, tiny_options(Arc::new(fault.clone()))).expect("open");
        let t = store.table("t").expect("table");
        fault.fail_nth(IoKind::Read, n);
        // The failed read may be one of those that position the scan: then it fails at once,
        // and only the scans that fail midway count below.
        let Ok(scanner) = t.scan(ScanSpec::default()) else {
            continue;
        };
        let results: Vec<_> = scanner.collect();
        let cells = results.iter().take_while(|r| r.is_ok()).count();
        if cells < 120 {
            assert!(
                results.get(cells).is_some_and(|r| r.is_err()),
                "read {n} failed: the scan returned {cells} of 120 cells and ended quietly"
            );
            failed_scans += 1;
        }
    }
    assert!(
        failed_scans > 10,
        "only {failed_scans} scans met a failed read"
    );
}
