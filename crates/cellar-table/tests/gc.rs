//! Compactions reclaim cells past their family's TTL (and keep versions beyond MAX_VERSIONS,
//! which a time-range read may still show).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use cellar_engine::vfs::MemVfs;
use cellar_engine::Durability;
use cellar_table::schema::family_keyspace_name;
use cellar_table::{FamilyOptions, ScanSpec, TableSchema};
use common::open_store;

#[test]
fn compaction_drops_expired_cells_and_keeps_versions() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(
            TableSchema::new("t")
                .family(
                    "v",
                    FamilyOptions {
                        max_versions: 2,
                        ..FamilyOptions::default()
                    },
                )
                .family(
                    "ttl",
                    FamilyOptions {
                        max_versions: 0,
                        ttl: Some(Duration::from_secs(3600)),
                        ..FamilyOptions::default()
                    },
                ),
        )
        .expect("create");
    let t = store.table("t").expect("table");
    let now = cellar_table::timestamp::now_nanos();
    for row in 0..50u32 {
        let r = format!("row{row:03}");
        for v in 0..5u64 {
            t.put(
                r.as_bytes(),
                "v",
                b"q",
                Some(1_000 + v),
                b"x",
                Durability::Buffered,
            )
            .expect("put");
        }
        // One cell a day old (expired), one fresh.
        t.put(
            r.as_bytes(),
            "ttl",
            b"",
            Some(now - 86_400_000_000_000),
            b"old",
            Durability::Buffered,
        )
        .expect("put");
        t.put(
            r.as_bytes(),
            "ttl",
            b"",
            Some(now),
            b"new",
            Durability::Buffered,
        )
        .expect("put");
    }
    let stored = |store: &cellar_table::CellStore| -> usize {
        // max_versions 0 overrides the family's: every stored version that is not expired.
        store
            .table("t")
            .expect("table")
            .scan(ScanSpec {
                max_versions: Some(0),
                ..ScanSpec::default()
            })
            .expect("scan")
            .count()
    };
    assert_eq!(stored(&store), 50 * 5 + 50);
    let db = store.db();
    for f in ["v", "ttl"] {
        let ks = db.keyspace(&family_keyspace_name("t", f)).expect("ks");
        db.compact_range(&ks, None, None).expect("compact");
    }
    // Every version stays; the expired cells are gone from the files.
    assert_eq!(stored(&store), 50 * 5 + 50);
    assert_eq!(
        db.stats().sst_entries as usize,
        50 * 5 + 50 + catalog_entries(&store)
    );
    // What reads return did not change.
    let row = t.get_row(b"row007").expect("row");
    assert_eq!(row.len(), 2 + 1, "{row:?}");
    // The filters come back with the store after a reopen.
    drop(t);
    drop(store);
    let store = open_store(&vfs);
    assert_eq!(stored(&store), 50 * 5 + 50);
}

fn catalog_entries(store: &cellar_table::CellStore) -> usize {
    let db = store.db();
    let ks = db.keyspace("__catalog").expect("catalog");
    let mut it = db
        .iter(&ks, cellar_engine::ReadOptions::default())
        .expect("iter");
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    n
}
