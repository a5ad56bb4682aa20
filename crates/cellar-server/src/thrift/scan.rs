//! Scanners: `scannerOpenWithScan` (every TScan field happybase sends), the older
//! `scannerOpen*` variants, and `scannerGet(List)`, whose replies are bounded by
//! `--max-reply-bytes`. The registry of open scanners is `scanners.rs`.

use std::collections::VecDeque;
use std::ops::Bound;

use cellar_table::{RowSelection, ScanSpec, Table};

use super::data::{row_result, selectors, time_range};
use super::handler::{open_table, table_error, CallContext};
use super::idl::{Fields, Success, TScan, ThriftError};
use super::scanners::OpenScanner;
use crate::filter::{Filter, FilterError};
use crate::rows::{Row, RowScanner};
use crate::state::ServerState;

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
