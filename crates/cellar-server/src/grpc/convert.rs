//! Between the proto messages and the table layer: checked conversions of requests
//! (a bad field is `INVALID_ARGUMENT` naming it), rows and schemas back, and the mapping of
//! table-layer errors to gRPC status codes.

use std::ops::Bound;
use std::time::Duration;

use cellar_engine::Durability;
use cellar_proto::v1 as pb;
use cellar_table::{
    Cell, ColumnSelector, FamilyCompression, FamilyOptions, RowSelection, TableError, TableSchema,
    TimeRange,
};
use tonic::Status;

use crate::rows::Row;
use crate::state::{BlockingTaskFailed, ServerState};

/// A failed request, as the status the client gets; `run_blocking` needs an error type
/// that a failed blocking task converts into.
#[derive(Debug)]
pub struct ApiError(pub Status);

impl From<Status> for ApiError {
    fn from(s: Status) -> Self {
        ApiError(s)
    }
}

impl From<TableError> for ApiError {
    fn from(e: TableError) -> Self {
        ApiError(table_status(e))
    }
}

impl From<BlockingTaskFailed> for ApiError {
    fn from(e: BlockingTaskFailed) -> Self {
        ApiError(Status::internal(e.to_string()))
    }
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Status {
        e.0
    }
}

/// The status code that tells a client what kind of failure a table error is.
pub fn table_status(e: TableError) -> Status {
    let message = e.to_string();
    match e {
        TableError::TableNotFound(_) | TableError::FamilyNotFound { .. } => {
            Status::not_found(message)
        }
        TableError::TableExists(_) | TableError::FamilyExists { .. } => {
            Status::already_exists(message)
        }
        TableError::InvalidArgument(_) => Status::invalid_argument(message),
        // The table was dropped or altered while the request ran: retrying sees the new one.
        TableError::StaleHandle(_) => Status::aborted(message),
        TableError::Corruption { .. } => Status::data_loss(message),
        TableError::Engine(e) => engine_status(e),
    }
}

fn engine_status(e: cellar_engine::Error) -> Status {
    let message = e.to_string();
    match e {
        cellar_engine::Error::InvalidArgument(_) => Status::invalid_argument(message),
        cellar_engine::Error::Corruption { .. } => Status::data_loss(message),
        cellar_engine::Error::Poisoned(_) => Status::unavailable(message),
        _ => Status::internal(message),
    }
}

pub fn invalid(message: impl Into<String>) -> Status {
    Status::invalid_argument(message.into())
}

/// The durability a request asked for; DEFAULT is the server's `--durability`.
pub fn durability(value: i32, state: &ServerState) -> Result<Durability, Status> {
    match pb::Durability::try_from(value) {
        Ok(pb::Durability::Default) => Ok(state.default_durability()),
        Ok(pb::Durability::Buffered) => Ok(Durability::Buffered),
        Ok(pb::Durability::Flush) => Ok(Durability::Flush),
        Ok(pb::Durability::Sync) => Ok(Durability::Sync),
        Err(_) => Err(invalid(format!(
            "durability {value} is not one of DEFAULT (0), BUFFERED (1), FLUSH (2), SYNC (3)"
        ))),
    }
}

pub fn require_table(name: &str) -> Result<(), Status> {
    if name.is_empty() {
        return Err(invalid("the request names no table (field `table`)"));
    }
    Ok(())
}

pub fn schema_to_proto(s: &TableSchema) -> pb::TableSchema {
    pb::TableSchema {
        name: s.name.clone(),
        families: s
            .families
            .iter()
            .map(|f| pb::FamilySchema {
                name: f.name.clone(),
                max_versions: f.options.max_versions,
                ttl_seconds: f.options.ttl.map_or(0, |d| d.as_secs()),
                compression: match f.options.compression {
                    None => pb::Compression::Default,
                    Some(FamilyCompression::None) => pb::Compression::None,
                    Some(FamilyCompression::Lz4) => pb::Compression::Lz4,
                    Some(FamilyCompression::Zstd) => pb::Compression::Zstd,
                } as i32,
                no_bloom_filter: !f.options.bloom_filter,
            })
            .collect(),
    }
}

pub fn schema_from_proto(s: pb::TableSchema) -> Result<TableSchema, Status> {
    require_table(&s.name)?;
    if s.families.is_empty() {
        return Err(invalid(format!(
            "table {:?} needs at least one column family",
            s.name
        )));
    }
    let mut schema = TableSchema::new(s.name);
    for f in s.families {
        let compression = match pb::Compression::try_from(f.compression) {
            Ok(pb::Compression::Default) => None,
            Ok(pb::Compression::None) => Some(FamilyCompression::None),
            Ok(pb::Compression::Lz4) => Some(FamilyCompression::Lz4),
            Ok(pb::Compression::Zstd) => Some(FamilyCompression::Zstd),
            Err(_) => {
                return Err(invalid(format!(
                    "family {:?}: compression {} is not one of DEFAULT, NONE, LZ4, ZSTD",
                    f.name, f.compression
                )))
            }
        };
        let options = FamilyOptions {
            max_versions: f.max_versions,
            ttl: (f.ttl_seconds > 0).then(|| Duration::from_secs(f.ttl_seconds)),
            compression,
            block_size_bytes: None,
            bloom_filter: !f.no_bloom_filter,
        };
        schema = schema.family(f.name, options);
    }
    Ok(schema)
}

pub fn columns(cols: Vec<pb::Column>) -> Result<Vec<ColumnSelector>, Status> {
    cols.into_iter()
        .enumerate()
        .map(|(i, c)| {
            if c.family.is_empty() {
                return Err(invalid(format!("column {i} names no family")));
            }
            Ok(match c.qualifier {
                None => ColumnSelector::Family(c.family),
                Some(qualifier) => ColumnSelector::Column {
                    family: c.family,
                    qualifier,
                },
            })
        })
        .collect()
}

/// `[min, max)`, max 0 meaning no upper bound.
pub fn time_range(t: Option<pb::TimeRange>) -> Result<TimeRange, Status> {
    let Some(t) = t else {
        return Ok(TimeRange::default());
    };
    let max = if t.max == 0 { u64::MAX } else { t.max };
    if t.min >= max {
        return Err(invalid(format!(
            "time range [{}, {}) is empty: min must be below max (max 0 = no upper bound)",
            t.min, t.max
        )));
    }
    Ok(TimeRange { min: t.min, max })
}

pub fn max_versions(n: u32) -> Option<u32> {
    (n > 0).then_some(n)
}

pub fn cell_to_proto(c: Cell) -> pb::Cell {
    pb::Cell {
        family: c.family.to_string(),
        qualifier: c.qualifier,
        timestamp: c.timestamp,
        value: c.value,
    }
}

pub fn row_to_proto(r: Row) -> pb::Row {
    pb::Row {
        row: r.key,
        cells: r.cells.into_iter().map(cell_to_proto).collect(),
    }
}

/// The rows a scan visits: start/stop (swapped roles when reversed) intersected with the
/// prefix.
pub fn row_selection(
    start: Vec<u8>,
    stop: Vec<u8>,
    prefix: Vec<u8>,
    reverse: bool,
) -> RowSelection {
    let bound = |k: Vec<u8>, inclusive: bool| match (k.is_empty(), inclusive) {
        (true, _) => Bound::Unbounded,
        (false, true) => Bound::Included(k),
        (false, false) => Bound::Excluded(k),
    };
    // In ascending terms; reversed, start_row is the (inclusive) upper end.
    let (mut lo, mut hi) = if reverse {
        (bound(stop, false), bound(start, true))
    } else {
        (bound(start, true), bound(stop, false))
    };
    if !prefix.is_empty() {
        if lo == Bound::Unbounded && hi == Bound::Unbounded {
            return RowSelection::Prefix(prefix);
        }
        let prefix_end = prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
        lo = max_lower(lo, Bound::Included(prefix));
        hi = min_upper(hi, prefix_end);
    }
    if lo == Bound::Unbounded && hi == Bound::Unbounded {
        return RowSelection::All;
    }
    RowSelection::Range { start: lo, end: hi }
}

/// The smallest key above every key starting with `prefix`; `None` when there is none.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn key_of(b: &Bound<Vec<u8>>) -> Option<&Vec<u8>> {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    }
}

fn max_lower(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (key_of(&a), key_of(&b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) if x > y => a,
        (Some(x), Some(y)) if x < y => b,
        // Same key: the exclusive bound is the tighter one.
        _ => match a {
            Bound::Excluded(_) => a,
            _ => b,
        },
    }
}

fn min_upper(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (key_of(&a), key_of(&b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) if x < y => a,
        (Some(x), Some(y)) if x > y => b,
        _ => match a {
            Bound::Excluded(_) => a,
            _ => b,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_carries_over_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
    }

    #[test]
    fn row_selection_intersects_range_and_prefix() {
        let v = |s: &str| s.as_bytes().to_vec();
        assert_eq!(
            row_selection(vec![], vec![], vec![], false),
            RowSelection::All
        );
        assert_eq!(
            row_selection(vec![], vec![], v("p"), false),
            RowSelection::Prefix(v("p"))
        );
        assert_eq!(
            row_selection(v("pb"), v("z"), v("p"), false),
            RowSelection::Range {
                start: Bound::Included(v("pb")),
                end: Bound::Excluded(v("q")),
            }
        );
        // Reversed: start is the inclusive upper end, stop the exclusive lower one.
        assert_eq!(
            row_selection(v("m"), v("c"), vec![], true),
            RowSelection::Range {
                start: Bound::Excluded(v("c")),
                end: Bound::Included(v("m")),
            }
        );
    }

    #[test]
    fn time_range_zero_max_is_unbounded_and_empty_is_refused() {
        let t = time_range(Some(pb::TimeRange { min: 5, max: 0 })).expect("valid");
        assert_eq!((t.min, t.max), (5, u64::MAX));
        assert!(time_range(Some(pb::TimeRange { min: 5, max: 5 })).is_err());
    }
}
