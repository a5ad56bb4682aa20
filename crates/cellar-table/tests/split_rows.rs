//! `Table::split_rows`: pieces that, scanned one by one, give exactly the whole table.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ops::Bound;

use cellar_engine::vfs::MemVfs;
use cellar_engine::Durability;
use cellar_table::{cell_key::row_prefix_of, FamilyOptions, RowSelection, ScanSpec, TableSchema};
use common::open_store;
use proptest::prelude::*;

fn all_cells(t: &cellar_table::Table, rows: RowSelection) -> Vec<cellar_table::Cell> {
    t.scan(ScanSpec {
        rows,
        ..ScanSpec::default()
    })
    .expect("scan")
    .collect::<Result<_, _>>()
    .expect("cells")
}

#[test]
fn split_rows_pieces_cover_the_table_exactly_once() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(
            TableSchema::new("t")
                .family("a", FamilyOptions::default())
                .family("b", FamilyOptions::default()),
        )
        .expect("create");
    let t = store.table("t").expect("table");
    for i in 0..3000u32 {
        // Rows with 0x00 and 0xFF bytes, so that cut separators meet escapes.
        let row = [b'r', (i % 7) as u8 * 0x2a, 0x00, (i / 7) as u8, 0xff];
        t.put(&row, "a", b"q", None, b"value-a", Durability::Buffered)
            .expect("put");
        if i % 3 == 0 {
            t.put(&row, "b", b"", None, b"value-b", Durability::Buffered)
                .expect("put");
        }
    }
    store.db().flush().expect("flush");
    let whole = all_cells(&t, RowSelection::All);
    for parts in [2, 5, 16, 64] {
        let split = t.split_rows(parts).expect("split");
        assert!(split.windows(2).all(|w| w[0] < w[1]), "ascending");
        assert!(split.len() < parts);
        if parts >= 5 {
            assert!(split.len() >= 2, "a multi-block table splits: {split:?}");
        }
        let mut pieces = Vec::new();
        let mut start = Bound::Unbounded;
        for s in split.iter().chain(std::iter::once(&Vec::new())) {
            let end = if s.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Excluded(s.clone())
            };
            pieces.extend(all_cells(
                &t,
                RowSelection::Range {
                    start: start.clone(),
                    end: end.clone(),
                },
            ));
            start = match end {
                Bound::Excluded(s) => Bound::Included(s),
                _ => Bound::Unbounded,
            };
        }
        assert_eq!(pieces, whole, "parts {parts}");
    }
}

proptest! {
    /// A row's prefix taken from any cut of its encoded key never sorts after the row.
    #[test]
    fn row_prefix_of_a_cut_key_is_at_most_the_row(
        row in proptest::collection::vec(prop_oneof![Just(0u8), Just(0xffu8), any::<u8>()], 1..12),
        cut in 0usize..40,
    ) {
        let mut key = Vec::new();
        cellar_table::cell_key::encode_cell_key(&row, b"q", 7, &mut key);
        let p = row_prefix_of(&key[..cut.min(key.len())]);
        prop_assert!(p <= row);
        prop_assert_eq!(row_prefix_of(&key), row);
    }
}
