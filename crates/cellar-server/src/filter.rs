//! HBase's filter language (`filterString` in Thrift, `filter` in gRPC and REST scans):
//! parsed once per scan, applied to each row. The supported filters and their semantics:
//! docs/server.md, "Filters".

use cellar_table::Cell;

/// A filter string that does not parse, or names a filter Cellar does not implement.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FilterError {
    #[error("filter {0:?} is not supported (supported: docs/server.md, \"Filters\")")]
    Unsupported(String),
    #[error("malformed filter string at byte {at}: {reason}")]
    Syntax { at: usize, reason: String },
}

/// A parsed filter.
#[derive(Debug, Clone)]
pub struct Filter {
    _text: String,
}

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        Err(FilterError::Unsupported(text.to_string()))
    }

    /// The state of one scan's pass through the filter (PageFilter counts rows).
    pub fn start(&self) -> FilterRun {
        FilterRun {}
    }
}

/// What a filter decided about one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowVerdict {
    Include,
    Skip,
    /// Return this row, then end the scan.
    IncludeThenStop,
    /// End the scan without this row.
    Stop,
}

/// One scan's filter state.
#[derive(Debug)]
pub struct FilterRun {}

impl FilterRun {
    /// Decides about a row; may drop or change its cells (KeyOnlyFilter empties values).
    pub fn apply(&mut self, _row: &[u8], _cells: &mut Vec<Cell>) -> RowVerdict {
        RowVerdict::Include
    }
}
