//! Model-based test: random puts (explicit and automatic timestamps), deletes of rows,
//! families, columns and versions, buffered writes, engine flushes, snapshots, reopens and
//! scans with random specs, against a `BTreeMap` of cells.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Bound;

use cellar_engine::vfs::MemVfs;
use cellar_engine::{Durability, Snapshot};
use cellar_table::{
    CellStore, ColumnSelector, FamilyOptions, RowSelection, ScanSpec, Table, TableSchema,
    TimeRange, WriterOptions,
};
use common::{collect, open_store, Flat};
use proptest::prelude::*;

/// Families in schema order (deliberately not alphabetical) and their MAX_VERSIONS.
const FAMILIES: [(&str, u32); 3] = [("z", 1), ("a", 3), ("m", 0)];
const TABLE: &str = "model";

/// (row, family index, qualifier, newest first) → value.
type Model = BTreeMap<(Vec<u8>, usize, Vec<u8>, Reverse<u64>), Vec<u8>>;

#[derive(Debug, Clone)]
struct Spec {
    rows: RowSelection,
    /// Empty: all; otherwise (family index, qualifier or whole family).
    columns: Vec<(usize, Option<Vec<u8>>)>,
    time_range: TimeRange,
    max_versions: Option<u32>,
    limit: Option<usize>,
    reverse: bool,
    at_snapshot: bool,
}

/// (row, family index, qualifier, timestamp or `None` for the oracle's).
type BufferedPut = (Vec<u8>, usize, Vec<u8>, Option<u64>);

#[derive(Debug, Clone)]
enum Op {
    Put {
        row: Vec<u8>,
        family: usize,
        qualifier: Vec<u8>,
        ts: Option<u64>,
        value: Vec<u8>,
    },
    /// Puts through a `TableWriter` whose buffer never fills: applied at `flush`.
    BufferedPuts(Vec<BufferedPut>),
    DeleteRow(Vec<u8>),
    DeleteFamily(Vec<u8>, usize),
    DeleteColumn(Vec<u8>, usize, Vec<u8>),
    DeleteVersion(Vec<u8>, usize, Vec<u8>, u64),
    Scan(Spec),
    Snapshot,
    FlushEngine,
    Reopen,
}

fn key_bytes(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0x00u8), Just(0xFF), Just(b'a'), Just(b'b')],
        0..=max_len,
    )
}

fn row() -> impl Strategy<Value = Vec<u8>> {
    key_bytes(2)
}

fn qualifier() -> impl Strategy<Value = Vec<u8>> {
    key_bytes(1)
}

/// Small explicit timestamps (auto ones are far larger), or the oracle's.
fn timestamp() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![2 => (1u64..6).prop_map(Some), 1 => Just(None)]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        row().prop_map(Bound::Included),
        row().prop_map(Bound::Excluded),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    let rows = prop_oneof![
        Just(RowSelection::All),
        row().prop_map(RowSelection::Exact),
        (bound(), bound()).prop_map(|(start, end)| RowSelection::Range { start, end }),
        key_bytes(2).prop_map(RowSelection::Prefix),
    ];
    let columns = prop_oneof![
        Just(Vec::new()),
        prop::collection::vec((0..3usize, prop::option::of(qualifier())), 1..4),
    ];
    let time_range = prop_oneof![
        Just(TimeRange::default()),
        (0u64..7, prop_oneof![0u64..7, Just(u64::MAX)])
            .prop_map(|(min, max)| TimeRange { min, max }),
    ];
    (
        rows,
        columns,
        time_range,
        prop::option::of(0u32..4),
        prop::option::of(0usize..12),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(rows, columns, time_range, max_versions, limit, reverse, at_snapshot)| Spec {
                rows,
                columns,
                time_range,
                max_versions,
                limit,
                reverse,
                at_snapshot,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (row(), 0..3usize, qualifier(), timestamp(), key_bytes(3)).prop_map(
            |(row, family, qualifier, ts, value)| Op::Put { row, family, qualifier, ts, value }
        ),
        2 => prop::collection::vec((row(), 0..3usize, qualifier(), timestamp()), 1..6)
            .prop_map(Op::BufferedPuts),
        2 => row().prop_map(Op::DeleteRow),
        2 => (row(), 0..3usize).prop_map(|(r, f)| Op::DeleteFamily(r, f)),
        2 => (row(), 0..3usize, qualifier()).prop_map(|(r, f, q)| Op::DeleteColumn(r, f, q)),
        2 => (row(), 0..3usize, qualifier(), 1u64..6)
            .prop_map(|(r, f, q, t)| Op::DeleteVersion(r, f, q, t)),
        8 => spec().prop_map(Op::Scan),
        1 => Just(Op::Snapshot),
        1 => Just(Op::FlushEngine),
        1 => Just(Op::Reopen),
    ]
}

fn row_selected(sel: &RowSelection, row: &[u8]) -> bool {
    match sel {
        RowSelection::All => true,
        RowSelection::Exact(r) => row == r.as_slice(),
        RowSelection::Prefix(p) => row.starts_with(p),
        RowSelection::Range { start, end } => {
            let after_start = match start {
                Bound::Included(s) => row >= s.as_slice(),
                Bound::Excluded(s) => row > s.as_slice(),
                Bound::Unbounded => true,
            };
            let before_end = match end {
                Bound::Included(e) => row <= e.as_slice(),
                Bound::Excluded(e) => row < e.as_slice(),
                Bound::Unbounded => true,
            };
            after_start && before_end
        }
    }
}

fn column_selected(spec: &Spec, family: usize, qualifier: &[u8]) -> bool {
    spec.columns.is_empty()
        || spec
            .columns
            .iter()
            .any(|(f, q)| *f == family && q.as_ref().is_none_or(|q| q.as_slice() == qualifier))
}

/// What the scan should return, computed from the model.
fn model_scan(model: &Model, spec: &Spec) -> Vec<Flat> {
    let mut rows: Vec<&Vec<u8>> = model.keys().map(|k| &k.0).collect();
    rows.dedup();
    if spec.reverse {
        rows.reverse();
    }
    let mut out = Vec::new();
    for row in rows {
        if !row_selected(&spec.rows, row) {
            continue;
        }
        let start = (row.clone(), 0, Vec::new(), Reverse(u64::MAX));
        let mut versions = 0;
        let mut column: Option<(usize, &Vec<u8>)> = None;
        for ((r, f, q, Reverse(ts)), v) in model.range(start..) {
            if r != row {
                break;
            }
            if column != Some((*f, q)) {
                column = Some((*f, q));
                versions = 0;
            }
            let max = spec.max_versions.unwrap_or(FAMILIES[*f].1);
            if !column_selected(spec, *f, q)
                || *ts < spec.time_range.min
                || *ts >= spec.time_range.max
                || (max != 0 && versions >= max)
            {
                continue;
            }
            versions += 1;
            out.push((
                r.clone(),
                FAMILIES[*f].0.to_string(),
                q.clone(),
                *ts,
                v.clone(),
            ));
        }
    }
    // The model orders a row's families by index, which is schema order.
    out.truncate(spec.limit.unwrap_or(usize::MAX));
    out
}

fn to_scan_spec(spec: &Spec, snapshot: Option<Snapshot>) -> ScanSpec {
    ScanSpec {
        rows: spec.rows.clone(),
        columns: spec
            .columns
            .iter()
            .map(|(f, q)| match q {
                None => ColumnSelector::Family(FAMILIES[*f].0.to_string()),
                Some(q) => ColumnSelector::Column {
                    family: FAMILIES[*f].0.to_string(),
                    qualifier: q.clone(),
                },
            })
            .collect(),
        time_range: spec.time_range,
        max_versions: spec.max_versions,
        limit: spec.limit,
        reverse: spec.reverse,
        snapshot,
    }
}

fn model_delete(model: &mut Model, keep: impl Fn(&[u8], usize, &[u8], u64) -> bool) {
    model.retain(|(r, f, q, Reverse(ts)), _| keep(r, *f, q, *ts));
}

fn create(store: &CellStore) {
    let mut schema = TableSchema::new(TABLE);
    for (name, max_versions) in FAMILIES {
        schema = schema.family(
            name,
            FamilyOptions {
                max_versions,
                ..FamilyOptions::default()
            },
        );
    }
    store.create_table(schema).expect("create table");
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let vfs = MemVfs::new();
    let mut store = open_store(&vfs);
    create(&store);
    let mut table: Table = store.table(TABLE).expect("table");
    let mut model = Model::new();
    let mut snapshot: Option<(Snapshot, Model)> = None;
    let d = Durability::Flush;
    for op in ops {
        match op {
            Op::Put {
                row,
                family,
                qualifier,
                ts,
                value,
            } => {
                let f = FAMILIES[family].0;
                let ts = table.put(&row, f, &qualifier, ts, &value, d).expect("put");
                model.insert((row, family, qualifier, Reverse(ts)), value);
            }
            Op::BufferedPuts(puts) => {
                let mut w = table.writer(WriterOptions::default());
                let mut pending = Vec::new();
                for (i, (row, family, qualifier, ts)) in puts.into_iter().enumerate() {
                    let value = vec![i as u8];
                    let ts = w
                        .put(&row, FAMILIES[family].0, &qualifier, ts, &value)
                        .expect("buffered put");
                    pending.push(((row, family, qualifier, Reverse(ts)), value));
                }
                let seen = collect(
                    table
                        .scan(to_scan_spec(&all_versions(), None))
                        .expect("scan"),
                );
                prop_assert_eq!(seen, model_scan(&model, &all_versions()));
                w.flush().expect("writer flush");
                model.extend(pending);
            }
            Op::DeleteRow(r) => {
                table.delete_row(&r, d).expect("delete row");
                model_delete(&mut model, |row, _, _, _| row != r.as_slice());
            }
            Op::DeleteFamily(r, fam) => {
                table
                    .delete_family(&r, FAMILIES[fam].0, d)
                    .expect("delete family");
                model_delete(&mut model, |row, f, _, _| row != r.as_slice() || f != fam);
            }
            Op::DeleteColumn(r, fam, q) => {
                table
                    .delete_column(&r, FAMILIES[fam].0, &q, d)
                    .expect("delete column");
                model_delete(&mut model, |row, f, qq, _| {
                    (row, f, qq) != (r.as_slice(), fam, q.as_slice())
                });
            }
            Op::DeleteVersion(r, fam, q, t) => {
                table
                    .delete_version(&r, FAMILIES[fam].0, &q, t, d)
                    .expect("delete version");
                model.remove(&(r, fam, q, Reverse(t)));
            }
            Op::Scan(spec) => {
                let (snap, expected) = match (&snapshot, spec.at_snapshot) {
                    (Some((s, m)), true) => (Some(s.clone()), model_scan(m, &spec)),
                    _ => (None, model_scan(&model, &spec)),
                };
                let got = collect(table.scan(to_scan_spec(&spec, snap)).expect("scan"));
                prop_assert_eq!(got, expected, "spec {:?}", spec);
            }
            Op::Snapshot => snapshot = Some((store.db().snapshot(), model.clone())),
            Op::FlushEngine => store.db().flush().expect("engine flush"),
            Op::Reopen => {
                snapshot = None;
                drop(table);
                drop(store);
                store = open_store(&vfs);
                table = store.table(TABLE).expect("table after reopen");
            }
        }
    }
    let all = collect(
        table
            .scan(to_scan_spec(&all_versions(), None))
            .expect("scan"),
    );
    prop_assert_eq!(all, model_scan(&model, &all_versions()));
    Ok(())
}

/// Every version of every cell.
fn all_versions() -> Spec {
    Spec {
        rows: RowSelection::All,
        columns: Vec::new(),
        time_range: TimeRange::default(),
        max_versions: Some(0),
        limit: None,
        reverse: false,
        at_snapshot: false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn table_matches_model(ops in prop::collection::vec(op(), 1..150)) {
        run(ops)?;
    }
}
