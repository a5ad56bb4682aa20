//! Rows out of a table scan: the table layer returns cells in (row, family, qualifier,
//! newest timestamp) order; the protocols all answer in whole rows, after a filter
//! (`filter.rs`) has seen each row. Shared by the Thrift scanners, gRPC and REST.

use cellar_table::{Cell, Result, RowSelection, ScanSpec, Scanner, Table};

use crate::filter::{Filter, FilterRun, RowVerdict};

/// One row's visible cells, in scan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: Vec<u8>,
    pub cells: Vec<Cell>,
}

impl Row {
    /// About what the row costs on the wire (keys, names and values).
    pub fn approx_bytes(&self) -> usize {
        self.key.len()
            + self
                .cells
                .iter()
                .map(|c| c.family.len() + c.qualifier.len() + c.value.len() + 16)
                .sum::<usize>()
    }
}

/// Groups a scan's cells into rows and applies a filter and a row limit.
pub struct RowScanner {
    scanner: Scanner,
    /// The first cell of the next row, read while finishing the previous one.
    next_cell: Option<Cell>,
    filter: Option<FilterRun>,
    rows_left: Option<u64>,
    done: bool,
}

// A Thrift scanner is kept between requests and advanced on whichever blocking thread
// serves the next one.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<RowScanner>();
};

impl RowScanner {
    /// `limit`: most rows returned (after the filter). A filter that only passes rows
    /// with some prefix (a PrefixFilter at the top or under AND) narrows a scan of every
    /// row to that prefix, so the scan reads only those rows.
    pub fn new(
        table: &Table,
        mut spec: ScanSpec,
        filter: Option<&Filter>,
        limit: Option<u64>,
    ) -> Result<RowScanner> {
        narrow_to_prefix_hint(&mut spec, filter);
        Ok(RowScanner {
            scanner: table.scan(spec)?,
            next_cell: None,
            filter: filter.map(Filter::start),
            rows_left: limit,
            done: false,
        })
    }

    /// The next row the filter lets through, or `None` at the end.
    pub fn next_row(&mut self) -> Option<Result<Row>> {
        loop {
            if self.done || self.rows_left == Some(0) {
                return None;
            }
            let mut row = match self.read_row() {
                Ok(Some(row)) => row,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if let Some(f) = &mut self.filter {
                match f.apply(&row.key, &mut row.cells) {
                    RowVerdict::Include => {}
                    RowVerdict::Skip => continue,
                    RowVerdict::IncludeThenStop => self.done = true,
                    RowVerdict::Stop => {
                        self.done = true;
                        return None;
                    }
                }
                if row.cells.is_empty() {
                    continue;
                }
            }
            if let Some(n) = &mut self.rows_left {
                *n -= 1;
            }
            return Some(Ok(row));
        }
    }

    /// Up to `max_rows` rows, stopping early once they hold `max_bytes` (at least one row
    /// is returned when any is left). Empty at the end.
    pub fn next_batch(&mut self, max_rows: usize, max_bytes: usize) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        let mut bytes = 0;
        while out.len() < max_rows && (out.is_empty() || bytes < max_bytes) {
            match self.next_row() {
                Some(row) => {
                    let row = row?;
                    bytes += row.approx_bytes();
                    out.push(row);
                }
                None => break,
            }
        }
        Ok(out)
    }

    /// Whether a `next_batch` cut short by `max_bytes` left rows behind is unknown until
    /// the next call; this says whether the scan has certainly ended.
    pub fn is_done(&self) -> bool {
        self.done || self.rows_left == Some(0)
    }

    fn read_row(&mut self) -> Result<Option<Row>> {
        let first = match self.next_cell.take() {
            Some(c) => c,
            None => match self.scanner.next() {
                Some(c) => c?,
                None => return Ok(None),
            },
        };
        let key = first.row.clone();
        let mut cells = vec![first];
        for cell in self.scanner.by_ref() {
            let cell = cell?;
            if cell.row != key {
                self.next_cell = Some(cell);
                break;
            }
            cells.push(cell);
        }
        Ok(Some(Row { key, cells }))
    }
}

/// Narrows `spec` to the rows `filter` can pass, where that is a prefix and the scan has
/// no narrower selection of its own.
fn narrow_to_prefix_hint(spec: &mut ScanSpec, filter: Option<&Filter>) {
    let Some(hint) = filter.and_then(Filter::row_prefix_hint) else {
        return;
    };
    match &spec.rows {
        RowSelection::All => spec.rows = RowSelection::Prefix(hint),
        RowSelection::Prefix(p) if hint.starts_with(p) => spec.rows = RowSelection::Prefix(hint),
        _ => {}
    }
}
