//! Writes: `mutateRow(s)(Ts)`, `deleteAll(Row)(Ts)` and `atomicIncrement`, with HBase's
//! semantics: every put before every delete, one atomic write per call, `writeToWAL=false`
//! as a buffered write, deletes with a timestamp removing the versions at or before it.

use cellar_engine::Durability;
use cellar_table::{ColumnSelector, RowSelection, ScanSpec, Table, TimeRange, WriterOptions};

use super::data::{parse_column, Column};
use super::handler::{open_table, table_error, ts_to_nanos};
use super::idl::{BatchMutation, Fields, Mutation, Success, ThriftError};
use crate::state::ServerState;

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
