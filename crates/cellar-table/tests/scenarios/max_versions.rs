//! MAX_VERSIONS: per family, overridden per scan, and 0 meaning every version.

use cellar_engine::vfs::MemVfs;
use cellar_engine::Durability;
use cellar_table::{FamilyOptions, ScanSpec, Table, TableSchema, TimeRange};

use crate::common::{collect, open_store};

fn versions(t: &Table, family: &str, spec: ScanSpec) -> Vec<u64> {
    collect(t.scan(spec).expect("scan"))
        .into_iter()
        .filter(|c| c.1 == family)
        .map(|c| c.3)
        .collect()
}

fn family(max_versions: u32) -> FamilyOptions {
    FamilyOptions {
        max_versions,
        ..FamilyOptions::default()
    }
}

#[test]
fn max_versions_per_family_and_override() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(
            TableSchema::new("t")
                .family("one", FamilyOptions::default())
                .family("three", family(3))
                .family("all", family(0)),
        )
        .expect("create");
    let t = store.table("t").expect("table");
    for f in ["one", "three", "all"] {
        for ts in 1..=5 {
            t.put(b"r", f, b"q", Some(ts), b"v", Durability::Flush)
                .expect("put");
        }
    }
    let row = || ScanSpec::row(b"r");
    assert_eq!(versions(&t, "one", row()), vec![5]);
    assert_eq!(versions(&t, "three", row()), vec![5, 4, 3]);
    assert_eq!(versions(&t, "all", row()), vec![5, 4, 3, 2, 1]);

    let every = ScanSpec {
        max_versions: Some(0),
        ..row()
    };
    assert_eq!(versions(&t, "one", every.clone()), vec![5, 4, 3, 2, 1]);
    assert_eq!(versions(&t, "three", every), vec![5, 4, 3, 2, 1]);
    let two = ScanSpec {
        max_versions: Some(2),
        ..row()
    };
    assert_eq!(versions(&t, "one", two.clone()), vec![5, 4]);
    assert_eq!(versions(&t, "all", two), vec![5, 4]);

    // Versions are counted among those in the time range.
    let range = ScanSpec {
        time_range: TimeRange { min: 2, max: 5 },
        ..row()
    };
    assert_eq!(versions(&t, "one", range.clone()), vec![4]);
    assert_eq!(versions(&t, "three", range.clone()), vec![4, 3, 2]);
    assert_eq!(versions(&t, "all", range), vec![4, 3, 2]);
}

#[test]
fn max_versions_skips_long_version_chains() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(TableSchema::new("t").family("f", family(2)))
        .expect("create");
    let t = store.table("t").expect("table");
    // Enough versions per column that the scan seeks past the rest of each column.
    for row in [&b"a"[..], b"b"] {
        for q in [&b"x"[..], b"y"] {
            for ts in 1..=40 {
                t.put(row, "f", q, Some(ts), b"v", Durability::Flush)
                    .expect("put");
            }
        }
    }
    store.db().flush().expect("flush");
    let got: Vec<(Vec<u8>, Vec<u8>, u64)> = collect(t.scan(ScanSpec::default()).expect("scan"))
        .into_iter()
        .map(|c| (c.0, c.2, c.3))
        .collect();
    let mut want = Vec::new();
    for row in [b"a", b"b"] {
        for q in [b"x", b"y"] {
            for ts in [40, 39] {
                want.push((row.to_vec(), q.to_vec(), ts));
            }
        }
    }
    assert_eq!(got, want);
}

#[test]
fn max_versions_auto_timestamps_make_distinct_versions() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(TableSchema::new("t").family("f", family(0)))
        .expect("create");
    let t = store.table("t").expect("table");
    let mut stamps = Vec::new();
    for i in 0..100u8 {
        stamps.push(
            t.put(b"r", "f", b"q", None, &[i], Durability::Buffered)
                .expect("put"),
        );
    }
    let cells = t.get_row(b"r").expect("get row");
    assert_eq!(cells.len(), 100);
    stamps.reverse();
    assert_eq!(
        cells.iter().map(|c| c.timestamp).collect::<Vec<_>>(),
        stamps
    );
    assert_eq!(cells[0].value, vec![99]);
}
