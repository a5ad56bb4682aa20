//! Reads (`get*`), writes (`mutateRow*`, `deleteAll*`, `atomicIncrement`) and scanners,
//! with HBase's semantics (docs/server.md, "Thrift gateway"): missing rows are left out of
//! results, one version per column unless asked, puts before deletes.

use std::collections::VecDeque;
use std::ops::Bound;

use cellar_engine::Durability;
use cellar_table::{Cell, ColumnSelector, RowSelection, ScanSpec, Table, TimeRange, WriterOptions};

use super::handler::{nanos_to_ts, open_table, table_error, ts_to_nanos, CallContext};
use super::idl::{BatchMutation, Fields, Mutation, Success, TCell, TRowResult, TScan, ThriftError};
use super::scanners::OpenScanner;
use crate::filter::{Filter, FilterError};
use crate::rows::{Row, RowScanner};
use crate::state::ServerState;

/// A parsed column string (see `handler.rs` for the convention).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    Family(String),
    Qualified(String, Vec<u8>),
}

pub fn parse_column(c: &[u8]) -> Result<Column, ThriftError> {
    let (fam, qual) = match c.iter().position(|&b| b == b':') {
        Some(i) => (&c[..i], Some(&c[i + 1..])),
        None => (c, None),
    };
    let fam = std::str::from_utf8(fam)
        .map_err(|_| {
            ThriftError::IllegalArgument(format!(
                "column {:?}: the family name is not UTF-8",
                String::from_utf8_lossy(c)
            ))
        })?
        .to_string();
    Ok(match qual {
        Some(q) => Column::Qualified(fam, q.to_vec()),
        None => Column::Family(fam),
    })
}

fn selectors(columns: &[&[u8]]) -> Result<Vec<ColumnSelector>, ThriftError> {
    columns
        .iter()
        .map(|c| {
            Ok(match parse_column(c)? {
                Column::Family(family) => ColumnSelector::Family(family),
                Column::Qualified(family, qualifier) => {
                    ColumnSelector::Column { family, qualifier }
                }
            })
        })
        .collect()
}

fn time_range(ts: Option<i64>) -> Result<TimeRange, ThriftError> {
    Ok(match ts {
        Some(ms) => TimeRange {
            min: 0,
            max: ts_to_nanos(ms)?,
        },
        None => TimeRange::default(),
    })
}

/// A row as `TRowResult`: one cell per column (the newest the scan returned), sorted by
/// (family, qualifier), keyed "family:qualifier".
pub fn row_result(row: Row, sorted: bool) -> TRowResult {
    let mut cells = row.cells;
    cells.sort_by(|a, b| {
        (a.family.as_bytes(), &a.qualifier).cmp(&(b.family.as_bytes(), &b.qualifier))
    });
    cells.dedup_by(|b, a| a.family == b.family && a.qualifier == b.qualifier);
    TRowResult {
        row: row.key,
        columns: cells.into_iter().map(column_entry).collect(),
        sorted,
    }
}

fn column_entry(c: Cell) -> (Vec<u8>, TCell) {
    let mut name = Vec::with_capacity(c.family.len() + 1 + c.qualifier.len());
    name.extend_from_slice(c.family.as_bytes());
    name.push(b':');
    name.extend_from_slice(&c.qualifier);
    let cell = TCell {
        value: c.value,
        timestamp: nanos_to_ts(c.timestamp),
    };
    (name, cell)
}

/// `get`, `getVer(Ts)`, `getRow(s)(WithColumns)(Ts)`.
pub fn read(st: &ServerState, method: &str, a: Fields<'_>) -> Result<Success, ThriftError> {
    let table = open_table(st, a.req_str(1, "tableName")?)?;
    match method {
        "get" => get_versions(
            &table,
            a.req_binary(2, "row")?,
            a.req_binary(3, "column")?,
            1,
            None,
        ),
        "getVer" => {
            let n = a.req_i32(4, "numVersions")?;
            get_versions(
                &table,
                a.req_binary(2, "row")?,
                a.req_binary(3, "column")?,
                n,
                None,
            )
        }
        "getVerTs" => {
            let (ts, n) = (a.req_i64(4, "timestamp")?, a.req_i32(5, "numVersions")?);
            get_versions(
                &table,
                a.req_binary(2, "row")?,
                a.req_binary(3, "column")?,
                n,
                Some(ts),
            )
        }
        _ => {
            let many = method.starts_with("getRows");
            let rows = if many {
                a.binary_list(2)
            } else {
                vec![a.req_binary(2, "row")?]
            };
            let with_columns = method.contains("WithColumns");
            let columns = if with_columns {
                a.binary_list(3)
            } else {
                Vec::new()
            };
            let ts = match (method.ends_with("Ts"), with_columns) {
                (false, _) => None,
                (true, true) => Some(a.req_i64(4, "timestamp")?),
                (true, false) => Some(a.req_i64(3, "timestamp")?),
            };
            get_rows(&table, &rows, &columns, ts)
        }
    }
}

fn get_rows(
    table: &Table,
    rows: &[&[u8]],
    columns: &[&[u8]],
    ts: Option<i64>,
) -> Result<Success, ThriftError> {
    let columns = selectors(columns)?;
    let time_range = time_range(ts)?;
    let mut out = Vec::new();
    for row in rows {
        let spec = ScanSpec {
            rows: RowSelection::Exact(row.to_vec()),
            columns: columns.clone(),
            time_range,
            max_versions: Some(1),
            ..ScanSpec::default()
        };
        let cells = table
            .scan(spec)
            .map_err(table_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(table_error)?;
        if !cells.is_empty() {
            out.push(row_result(
                Row {
                    key: row.to_vec(),
                    cells,
                },
                false,
            ));
        }
    }
    Ok(Success::Rows(out))
}

fn get_versions(
    table: &Table,
    row: &[u8],
    column: &[u8],
    versions: i32,
    ts: Option<i64>,
) -> Result<Success, ThriftError> {
    if versions < 1 {
        return Err(ThriftError::Io(format!(
            "numVersions must be at least 1, got {versions}"
        )));
    }
    let col = parse_column(column)?;
    let family = match &col {
        Column::Family(f) | Column::Qualified(f, _) => f,
    };
    // A family keeps MAX_VERSIONS versions: more are not visible, as in HBase.
    let kept = table
        .schema()
        .find_family(family)
        .map_or(0, |f| f.options.max_versions);
    let wanted = versions as u32;
    let max_versions = if kept == 0 { wanted } else { wanted.min(kept) };
    let spec = ScanSpec {
        rows: RowSelection::Exact(row.to_vec()),
        columns: selectors(&[column])?,
        time_range: time_range(ts)?,
        max_versions: Some(max_versions),
        ..ScanSpec::default()
    };
    let cells = table
        .scan(spec)
        .map_err(table_error)?
        .map(|c| {
            c.map(|c| TCell {
                value: c.value,
                timestamp: nanos_to_ts(c.timestamp),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(table_error)?;
    Ok(Success::Cells(cells))
}

/// One write, checked, in the order it is applied.
enum Op {
    Put {
        row: Vec<u8>,
        family: String,
        qualifier: Vec<u8>,
        value: Vec<u8>,
    },
    DeleteFamily {
        row: Vec<u8>,
        family: String,
    },
    DeleteColumn {
        row: Vec<u8>,
        family: String,
        qualifier: Vec<u8>,
    },
    DeleteColumnUpTo {
        row: Vec<u8>,
        family: String,
        qualifier: Vec<u8>,
        max_ts: u64,
    },
}

/// `mutateRow(s)(Ts)` and `deleteAll(Row)(Ts)`.
pub fn mutate(st: &ServerState, method: &str, a: Fields<'_>) -> Result<Success, ThriftError> {
    let table = open_table(st, a.req_str(1, "tableName")?)?;
    let row_arg = || a.req_binary(2, "row").map(<[u8]>::to_vec);
    let (batches, ts) = match method {
        "mutateRows" | "mutateRowsTs" => {
            let ts = if method == "mutateRowsTs" {
                Some(a.req_i64(3, "timestamp")?)
            } else {
                None
            };
            (
                a.struct_list(2)
                    .into_iter()
                    .map(BatchMutation::decode)
                    .collect(),
                ts,
            )
        }
        "mutateRow" | "mutateRowTs" => {
            let ts = if method == "mutateRowTs" {
                Some(a.req_i64(4, "timestamp")?)
            } else {
                None
            };
            let mutations = a.struct_list(3).into_iter().map(Mutation::decode).collect();
            (
                vec![BatchMutation {
                    row: row_arg()?,
                    mutations,
                }],
                ts,
            )
        }
        "deleteAll" | "deleteAllTs" => {
            let ts = if method == "deleteAllTs" {
                Some(a.req_i64(4, "timestamp")?)
            } else {
                None
            };
            let m = delete_of(a.req_binary(3, "column")?.to_vec());
            (
                vec![BatchMutation {
                    row: row_arg()?,
                    mutations: vec![m],
                }],
                ts,
            )
        }
        "deleteAllRow" | "deleteAllRowTs" => {
            let ts = if method == "deleteAllRowTs" {
                Some(a.req_i64(3, "timestamp")?)
            } else {
                None
            };
            let mutations = table
                .schema()
                .families
                .iter()
                .map(|f| delete_of(f.name.clone().into_bytes()))
                .collect();
            (
                vec![BatchMutation {
                    row: row_arg()?,
                    mutations,
                }],
                ts,
            )
        }
        other => {
            return Err(ThriftError::Io(format!(
                "internal error: {other} is not a mutation"
            )))
        }
    };
    mutate_rows(st, &table, batches, ts)
}

fn delete_of(column: Vec<u8>) -> Mutation {
    Mutation {
        is_delete: true,
        column,
        value: Vec::new(),
        write_to_wal: true,
    }
}

/// HBase's `mutateRowsTs`: every put of every row, then every delete, in one atomic
/// write. A delete with a timestamp removes the versions at or before it.
fn mutate_rows(
    st: &ServerState,
    table: &Table,
    batches: Vec<BatchMutation>,
    ts: Option<i64>,
) -> Result<Success, ThriftError> {
    let put_ts = ts.map(ts_to_nanos).transpose()?;
    // Versions at or before `ts` ms are those below (ts + 1) ms in nanoseconds.
    let delete_up_to = ts
        .map(|ms| ts_to_nanos(ms.saturating_add(1)).map(|ns| ns - 1))
        .transpose()?;
    let (mut puts, mut deletes) = (Vec::new(), Vec::new());
    let (mut with_wal, mut without_wal) = (0u64, 0u64);
    for bm in batches {
        for m in bm.mutations {
            if m.write_to_wal {
                with_wal += 1;
            } else {
                without_wal += 1;
            }
            let op = check_mutation(table, &bm.row, m, put_ts, delete_up_to)?;
            match op {
                Op::Put { .. } => puts.push(op),
                _ => deletes.push(op),
            }
        }
    }
    // A family delete with a timestamp is one column delete per qualifier present.
    let mut resolved = Vec::with_capacity(deletes.len());
    for op in deletes {
        match (op, delete_up_to) {
            (Op::DeleteFamily { row, family }, Some(max_ts)) => {
                for qualifier in qualifiers_up_to(table, &row, &family, max_ts)? {
                    resolved.push(Op::DeleteColumnUpTo {
                        row: row.clone(),
                        family: family.clone(),
                        qualifier,
                        max_ts,
                    });
                }
            }
            (op, _) => resolved.push(op),
        }
    }
    let durability = if without_wal > 0 && with_wal == 0 {
        Durability::Buffered
    } else {
        st.default_durability()
    };
    st.metrics.mutations_without_wal.inc_by(without_wal);
    let mut writer = table.writer(WriterOptions {
        buffer_size_bytes: usize::MAX,
        durability,
    });
    for op in puts.into_iter().chain(resolved) {
        let done = match op {
            Op::Put {
                row,
                family,
                qualifier,
                value,
            } => writer
                .put(&row, &family, &qualifier, put_ts, &value)
                .map(|_| ()),
            Op::DeleteFamily { row, family } => writer.delete_family(&row, &family),
            Op::DeleteColumn {
                row,
                family,
                qualifier,
            } => writer.delete_column(&row, &family, &qualifier),
            Op::DeleteColumnUpTo {
                row,
                family,
                qualifier,
                max_ts,
            } => writer.delete_column_up_to(&row, &family, &qualifier, max_ts),
        };
        done.map_err(table_error)?;
    }
    writer.flush().map_err(table_error)?;
    Ok(Success::Void)
}

/// Checks one mutation before anything is buffered (a buffered writer flushes what it
/// holds when dropped, so a bad mutation must be found first).
fn check_mutation(
    table: &Table,
    row: &[u8],
    m: Mutation,
    put_ts: Option<u64>,
    delete_up_to: Option<u64>,
) -> Result<Op, ThriftError> {
    let row = row.to_vec();
    let op = match (m.is_delete, parse_column(&m.column)?) {
        (false, Column::Family(f)) => {
            return Err(ThriftError::IllegalArgument(format!(
                "put to {f:?} names no column: write \"{f}:qualifier\" (or \"{f}:\" for the \
                 empty qualifier); only a delete may name a whole family"
            )))
        }
        (false, Column::Qualified(family, qualifier)) => {
            table
                .check_put(&row, &family, &qualifier, put_ts, &m.value)
                .map_err(table_error)?;
            Op::Put {
                row,
                family,
                qualifier,
                value: m.value,
            }
        }
        (true, Column::Family(family)) => {
            table
                .check_delete(&row, Some(&family), b"")
                .map_err(table_error)?;
            Op::DeleteFamily { row, family }
        }
        (true, Column::Qualified(family, qualifier)) => {
            table
                .check_delete(&row, Some(&family), &qualifier)
                .map_err(table_error)?;
            match delete_up_to {
                Some(max_ts) => Op::DeleteColumnUpTo {
                    row,
                    family,
                    qualifier,
                    max_ts,
                },
                None => Op::DeleteColumn {
                    row,
                    family,
                    qualifier,
                },
            }
        }
    };
    Ok(op)
}

/// The qualifiers of `family` in `row` that have a version at or before `max_ts`.
fn qualifiers_up_to(
    table: &Table,
    row: &[u8],
    family: &str,
    max_ts: u64,
) -> Result<Vec<Vec<u8>>, ThriftError> {
    let spec = ScanSpec {
        rows: RowSelection::Exact(row.to_vec()),
        columns: vec![ColumnSelector::Family(family.to_string())],
        time_range: TimeRange {
            min: 0,
            max: max_ts.saturating_add(1),
        },
        max_versions: Some(1),
        ..ScanSpec::default()
    };
    let mut out = Vec::new();
    for cell in table.scan(spec).map_err(table_error)? {
        out.push(cell.map_err(table_error)?.qualifier);
    }
    Ok(out)
}

/// `atomicIncrement`: the column holds an 8-byte big-endian i64 (absent: 0); a bare
/// family names its empty qualifier. Atomic against concurrent increments of the column.
pub fn atomic_increment(st: &ServerState, a: Fields<'_>) -> Result<Success, ThriftError> {
    let name = a.req_str(1, "tableName")?;
    let table = open_table(st, name)?;
    let row = a.req_binary(2, "row")?;
    let column = a.req_binary(3, "column")?;
    let amount = a.req_i64(4, "value")?;
    let (family, qualifier) = match parse_column(column)? {
        Column::Family(f) => (f, Vec::new()),
        Column::Qualified(f, q) => (f, q),
    };
    let mut lock_key = family.clone().into_bytes();
    lock_key.push(b':');
    lock_key.extend_from_slice(&qualifier);
    let _held = st.counter_lock(name, row, &lock_key).lock();
    let spec = ScanSpec {
        rows: RowSelection::Exact(row.to_vec()),
        columns: vec![ColumnSelector::Column {
            family: family.clone(),
            qualifier: qualifier.clone(),
        }],
        max_versions: Some(1),
        ..ScanSpec::default()
    };
    let current = table
        .scan(spec)
        .map_err(table_error)?
        .next()
        .transpose()
        .map_err(table_error)?;
    let old = match &current {
        None => 0,
        Some(c) => {
            let bytes: [u8; 8] = c.value.as_slice().try_into().map_err(|_| {
                ThriftError::IllegalArgument(format!(
                    "field is not a long: {:?} holds {} bytes, a counter holds 8 \
                     (big-endian i64)",
                    String::from_utf8_lossy(column),
                    c.value.len()
                ))
            })?;
            i64::from_be_bytes(bytes)
        }
    };
    let new = old.wrapping_add(amount);
    if current.is_none() || amount != 0 {
        table
            .put(
                row,
                &family,
                &qualifier,
                None,
                &new.to_be_bytes(),
                st.default_durability(),
            )
            .map_err(table_error)?;
    }
    Ok(Success::I64(new))
}

/// `scannerOpenWithScan` and the older `scannerOpen*` variants.
pub fn scanner_open(
    ctx: &CallContext,
    st: &ServerState,
    method: &str,
    a: Fields<'_>,
) -> Result<Success, ThriftError> {
    let table = open_table(st, a.req_str(1, "tableName")?)?;
    let owned = |b: Option<&[u8]>| b.map(<[u8]>::to_vec);
    let prefix = method == "scannerOpenWithPrefix";
    let scan = match method {
        "scannerOpenWithScan" => a.strukt(2).map(TScan::decode).unwrap_or_default(),
        "scannerOpenWithPrefix" => TScan {
            start_row: owned(a.binary(2)),
            columns: a.binary_list(3).into_iter().map(<[u8]>::to_vec).collect(),
            ..TScan::default()
        },
        _ => {
            let with_stop = method.starts_with("scannerOpenWithStop");
            let cols = if with_stop { 4 } else { 3 };
            TScan {
                start_row: owned(a.binary(2)),
                stop_row: if with_stop { owned(a.binary(3)) } else { None },
                columns: a
                    .binary_list(cols)
                    .into_iter()
                    .map(<[u8]>::to_vec)
                    .collect(),
                timestamp: if method.ends_with("Ts") {
                    Some(a.req_i64(cols + 1, "timestamp")?)
                } else {
                    None
                },
                ..TScan::default()
            }
        }
    };
    open_scan(ctx, st, &table, scan, prefix)
}

/// Rows a scan visits. Reversed, HBase's start row is the high end (inclusive) and the
/// stop row the low end (exclusive).
fn scan_rows(scan: &TScan, prefix: bool) -> RowSelection {
    let nonempty = |r: &Option<Vec<u8>>| r.clone().filter(|r| !r.is_empty());
    let (start, stop) = (nonempty(&scan.start_row), nonempty(&scan.stop_row));
    if prefix {
        return match start {
            Some(p) => RowSelection::Prefix(p),
            None => RowSelection::All,
        };
    }
    if scan.reversed {
        RowSelection::Range {
            start: stop.map_or(Bound::Unbounded, Bound::Excluded),
            end: start.map_or(Bound::Unbounded, Bound::Included),
        }
    } else {
        RowSelection::Range {
            start: start.map_or(Bound::Unbounded, Bound::Included),
            end: stop.map_or(Bound::Unbounded, Bound::Excluded),
        }
    }
}

fn open_scan(
    ctx: &CallContext,
    st: &ServerState,
    table: &Table,
    scan: TScan,
    prefix: bool,
) -> Result<Success, ThriftError> {
    let columns: Vec<&[u8]> = scan.columns.iter().map(Vec::as_slice).collect();
    let filter = match scan.filter_string.as_deref() {
        Some(f) if !f.is_empty() => {
            let text = String::from_utf8_lossy(f);
            Some(Filter::parse(&text).map_err(|e| {
                ThriftError::Io(match e {
                    FilterError::Unsupported(_) => e.to_string(),
                    e => format!("filter string {text:?}: {e}"),
                })
            })?)
        }
        _ => None,
    };
    let spec = ScanSpec {
        rows: scan_rows(&scan, prefix),
        columns: selectors(&columns)?,
        time_range: time_range(scan.timestamp)?,
        max_versions: Some(1),
        reverse: scan.reversed,
        ..ScanSpec::default()
    };
    let rows = RowScanner::new(table, spec, filter.as_ref(), None).map_err(table_error)?;
    let open = OpenScanner {
        rows,
        sort_columns: scan.sort_columns,
        batch_cells: scan.batch_size.filter(|&n| n > 0).map(|n| n as usize),
        pending: VecDeque::new(),
    };
    let id = ctx
        .scanners
        .open(ctx.conn, open, &st.metrics)
        .map_err(|e| ThriftError::Io(e.to_string()))?;
    Ok(Success::I32(id))
}

/// `scannerGetList` (`scannerGet`: one row): up to `nb_rows` results, fewer when they
/// would exceed `--max-reply-bytes` (at least one); empty at the end of the scan.
pub fn scanner_get(
    ctx: &CallContext,
    st: &ServerState,
    id: i32,
    nb_rows: i32,
) -> Result<Success, ThriftError> {
    let scanner = ctx
        .scanners
        .get(id, &st.metrics)
        .map_err(|e| ThriftError::IllegalArgument(e.to_string()))?;
    let mut s = scanner.lock();
    let max_rows = usize::try_from(nb_rows).unwrap_or(0);
    let max_bytes = st.config.limits.max_reply_bytes;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while out.len() < max_rows {
        if !out.is_empty() && bytes >= max_bytes {
            st.metrics.limit_hit("reply_bytes");
            break;
        }
        let row = match s.pending.pop_front() {
            Some(part) => part,
            None => match s.rows.next_row() {
                None => break,
                Some(row) => row.map_err(table_error)?,
            },
        };
        let row = match s.batch_cells {
            Some(n) if row.cells.len() > n => {
                let mut parts = split_row(row, n);
                let first = parts.pop_front();
                s.pending.extend(parts);
                match first {
                    Some(f) => f,
                    None => continue,
                }
            }
            _ => row,
        };
        bytes += row.approx_bytes();
        out.push(row_result(row, s.sort_columns));
    }
    drop(s);
    ctx.scanners.touch(id);
    Ok(Success::Rows(out))
}

/// A row cut into parts of `n` cells (HBase's scan batching).
fn split_row(row: Row, n: usize) -> VecDeque<Row> {
    let mut parts = VecDeque::new();
    let mut cells = row.cells;
    while !cells.is_empty() {
        let rest = cells.split_off(n.min(cells.len()));
        parts.push_back(Row {
            key: row.key.clone(),
            cells,
        });
        cells = rest;
    }
    parts
}
