//! Filters on real scans: a table in a temporary store, read through `RowScanner` as the
//! protocols read it.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cellar_engine::{Durability, Options};
use cellar_server::filter::Filter;
use cellar_server::rows::RowScanner;
use cellar_table::{CellStore, FamilyOptions, ScanSpec, Table, TableSchema};

fn store_with_table(dir: &std::path::Path) -> (CellStore, Table) {
    let store = CellStore::open(dir, Options::default()).unwrap();
    let versions = FamilyOptions {
        max_versions: 3,
        ..FamilyOptions::default()
    };
    store
        .create_table(
            TableSchema::new("t")
                .family("cf1", versions.clone())
                .family("cf2", versions),
        )
        .unwrap();
    let table = store.table("t").unwrap();
    // (row, family, qualifier, timestamp, value); a later timestamp is a newer version.
    let cells: &[(&str, &str, &str, u64, &str)] = &[
        ("row1", "cf1", "qual1", 10, "val1"),
        ("row1", "cf1", "qual2", 10, "other"),
        ("row2", "cf1", "qual1", 10, "val2"),
        ("row3", "cf2", "x", 10, "no qual1 here"),
        ("row4", "cf1", "qual1", 10, "val1"),
        ("row4", "cf1", "qual1", 20, "val9"),
        ("row5", "cf1", "qual1", 10, "val1"),
        ("row5", "cf2", "y", 10, "5"),
    ];
    for (row, family, qualifier, ts, value) in cells {
        table
            .put(
                row.as_bytes(),
                family,
                qualifier.as_bytes(),
                Some(*ts),
                value.as_bytes(),
                Durability::Buffered,
            )
            .unwrap();
    }
    (store, table)
}

/// A scan of the newest version of each column, as HBase's scans are by default.
fn latest() -> ScanSpec {
    ScanSpec {
        max_versions: Some(1),
        ..ScanSpec::default()
    }
}

/// Each returned row as `key` and its `family:qualifier=value` cells.
fn scan(table: &Table, spec: ScanSpec, filter: &str, limit: Option<u64>) -> Vec<String> {
    let filter = Filter::parse(filter).unwrap();
    let mut scanner = RowScanner::new(table, spec, Some(&filter), limit).unwrap();
    let mut out = Vec::new();
    while let Some(row) = scanner.next_row() {
        let row = row.unwrap();
        let mut line = String::from_utf8(row.key).unwrap();
        for c in row.cells {
            let q = String::from_utf8(c.qualifier).unwrap();
            let v = String::from_utf8(c.value).unwrap();
            line.push_str(&format!(" {}:{q}={v}", c.family));
        }
        out.push(line);
        assert!(out.len() <= 100, "bounded");
    }
    assert!(scanner.is_done());
    out
}

#[test]
fn filter_single_column_value_as_happybase_tests_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, table) = store_with_table(dir.path());
    let rows = scan(
        &table,
        latest(),
        "SingleColumnValueFilter ('cf1','qual1',=,'binary:val1')",
        None,
    );
    // row2 fails; row3 lacks the column and passes; row4's newest version is val9.
    assert_eq!(
        rows,
        [
            "row1 cf1:qual1=val1 cf1:qual2=other",
            "row3 cf2:x=no qual1 here",
            "row5 cf1:qual1=val1 cf2:y=5",
        ]
    );
    let rows = scan(
        &table,
        ScanSpec {
            max_versions: Some(0),
            ..latest()
        },
        "SingleColumnValueFilter('cf1','qual1',=,'binary:val1',true,false)",
        None,
    );
    assert_eq!(
        rows.len(),
        3,
        "row1, row4 (an older version) and row5: {rows:?}"
    );
    assert!(rows[1].starts_with("row4 cf1:qual1=val9 cf1:qual1=val1"));
}

#[test]
fn filter_page_and_key_only_on_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, table) = store_with_table(dir.path());
    assert_eq!(
        scan(
            &table,
            latest(),
            "FirstKeyOnlyFilter() AND KeyOnlyFilter()",
            None
        ),
        [
            "row1 cf1:qual1=",
            "row2 cf1:qual1=",
            "row3 cf2:x=",
            "row4 cf1:qual1=",
            "row5 cf1:qual1="
        ]
    );
    assert_eq!(scan(&table, latest(), "PageFilter(2)", None).len(), 2);
    assert_eq!(scan(&table, latest(), "PageFilter(4)", Some(1)).len(), 1);
    // Rows left without cells are not returned.
    assert_eq!(
        scan(&table, latest(), "ValueFilter(=,'substring:VAL1')", None),
        ["row1 cf1:qual1=val1", "row5 cf1:qual1=val1"]
    );
}

#[test]
fn filter_prefix_hint_narrows_a_scan_to_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, table) = store_with_table(dir.path());
    let text = "PrefixFilter('row4') AND KeyOnlyFilter() OR PrefixFilter('row4') AND PageFilter(5)";
    assert_eq!(Filter::parse(text).unwrap().row_prefix_hint(), None);
    let text = "PrefixFilter('row4') AND KeyOnlyFilter()";
    let hint = Filter::parse(text).unwrap().row_prefix_hint().unwrap();
    let narrowed = scan(
        &table,
        ScanSpec {
            max_versions: Some(1),
            ..ScanSpec::prefix(&hint)
        },
        text,
        None,
    );
    assert_eq!(narrowed, scan(&table, latest(), text, None));
    assert_eq!(narrowed, ["row4 cf1:qual1="]);
}
