//! Reads (`get`, `getVer(Ts)`, `getRow(s)(WithColumns)(Ts)`) and what reads, writes and
//! scans share: column strings, time ranges, rows as `TRowResult`. Missing rows are left
//! out of results and each column gives its newest version, as in HBase.

use cellar_table::{Cell, ColumnSelector, RowSelection, ScanSpec, Table, TimeRange};

use super::handler::{nanos_to_ts, open_table, table_error, ts_to_nanos};
use super::idl::{Fields, Success, TCell, TRowResult, ThriftError};
use crate::rows::Row;
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

pub fn selectors(columns: &[&[u8]]) -> Result<Vec<ColumnSelector>, ThriftError> {
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

pub fn time_range(ts: Option<i64>) -> Result<TimeRange, ThriftError> {
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
