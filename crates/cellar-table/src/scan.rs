//! Scans: one engine iterator per selected family, merged row by row.
//!
//! The scan picks the next row (the smallest, or the largest when reversed, among the
//! families' current rows), then walks that row family by family in schema order, so cells
//! come out ordered by (row, family, qualifier, timestamp newest first). Reversed, each
//! family's iterator sits on the last key of its current row; to read the row forward it
//! seeks to the row's start, and afterwards back before it. Nothing is buffered.
//!
//! Per column, the scan skips versions outside the time range or older than the family's
//! TTL, and returns at most MAX_VERSIONS (the family's, or the spec's override) of the
//! rest. Versions past the last wanted one are stepped over a few at a time and then
//! skipped with one seek to the column's end (like RocksDB's sequential-skip limit).

use std::ops::Bound;
use std::sync::Arc;

use cellar_engine::{DbIterator, ReadOptions, Snapshot};

use crate::cell_key::{column_range, put_row_start, row_prefix_start, row_range, DecodedCellKey};
use crate::error::{hex, Result, TableError};
use crate::table::{Cell, Table};
use crate::timestamp::now_nanos;

/// `next()` calls spent inside one unwanted column before seeking past it.
const SKIP_NEXTS_BEFORE_SEEK: usize = 8;

/// Which rows a scan visits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RowSelection {
    #[default]
    All,
    Exact(Vec<u8>),
    Range {
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    },
    /// Rows starting with these bytes.
    Prefix(Vec<u8>),
}

/// A family (every qualifier) or one column of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnSelector {
    Family(String),
    Column { family: String, qualifier: Vec<u8> },
}

/// Timestamps `[min, max)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub min: u64,
    pub max: u64,
}

impl Default for TimeRange {
    /// Every timestamp a cell can have.
    fn default() -> Self {
        TimeRange {
            min: 0,
            max: u64::MAX,
        }
    }
}

/// What a scan returns. The default is every visible cell of the table.
#[derive(Debug, Clone, Default)]
pub struct ScanSpec {
    pub rows: RowSelection,
    /// Empty: every family. Otherwise only the families and columns listed (a family
    /// listed whole wins over columns of it).
    pub columns: Vec<ColumnSelector>,
    pub time_range: TimeRange,
    /// Overrides every family's MAX_VERSIONS (0: every version). The engine keeps versions
    /// beyond a family's MAX_VERSIONS, so a larger override sees them.
    pub max_versions: Option<u32>,
    /// At most this many cells.
    pub limit: Option<usize>,
    /// Rows in descending order; cells within a row still in ascending order.
    pub reverse: bool,
    /// Read as of this snapshot; otherwise the scan takes one when it starts, so that it
    /// sees every family at one instant.
    pub snapshot: Option<Snapshot>,
}

impl ScanSpec {
    /// Every cell of one row.
    pub fn row(row: &[u8]) -> Self {
        ScanSpec {
            rows: RowSelection::Exact(row.to_vec()),
            ..ScanSpec::default()
        }
    }

    /// Every cell of the rows starting with `prefix`.
    pub fn prefix(prefix: &[u8]) -> Self {
        ScanSpec {
            rows: RowSelection::Prefix(prefix.to_vec()),
            ..ScanSpec::default()
        }
    }
}

/// Qualifiers a scan wants from a family, sorted and deduplicated; `None` wants all.
type WantedQualifiers = Option<Vec<Vec<u8>>>;

/// One family's iterator and what the scan wants from it.
struct FamilyCursor {
    table: Arc<str>,
    family: Arc<str>,
    keyspace: String,
    it: DbIterator,
    qualifiers: WantedQualifiers,
    /// 0: every version.
    max_versions: u32,
    /// Visible timestamps: `[min_ts, max_ts)` (time range and TTL).
    min_ts: u64,
    max_ts: u64,
    /// The decoded current key, when `it` is valid.
    valid: bool,
    key: DecodedCellKey,
    /// The current row is the row being returned: checked once per row, not per cell.
    in_scan_row: bool,
    /// The first error met; the cursor is invalid from then on.
    error: Option<TableError>,
    /// Versions of the current column returned so far (`None`: no column yet in this row).
    column: Option<(Vec<u8>, u32)>,
    /// The cursor is on the cell returned last: move past it before looking further (the
    /// move is deferred so that the caller can borrow the cell meanwhile).
    pending_next: bool,
}

impl FamilyCursor {
    /// Decodes the key the iterator is on; at its end, keeps its error if any.
    fn load(&mut self) {
        self.valid = self.it.valid();
        if !self.valid {
            if let Err(e) = self.it.status() {
                self.error.get_or_insert(e.into());
            }
            return;
        }
        match self.key.decode(self.it.key()) {
            Ok(row_changed) => self.in_scan_row &= !row_changed,
            Err(e) => {
                self.valid = false;
                self.error.get_or_insert(TableError::Corruption {
                    table: self.table.to_string(),
                    location: format!("keyspace {} key {}", self.keyspace, hex(self.it.key())),
                    reason: e.to_string(),
                });
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.it.seek(target);
        self.load();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.it.seek_for_prev(target);
        self.load();
    }

    fn next(&mut self) {
        self.it.next();
        self.load();
    }

    /// Moves past every remaining version of the current column.
    fn skip_column(&mut self) {
        let key = self.it.key();
        let mut column = key[..key.len().saturating_sub(8)].to_vec();
        for _ in 0..SKIP_NEXTS_BEFORE_SEEK {
            self.it.next();
            if !self.it.valid() {
                return self.load();
            }
            let k = self.it.key();
            if k.len() != column.len() + 8 || !k.starts_with(&column) {
                return self.load();
            }
        }
        // `column` ends with the qualifier's terminator 0x00 0x01: 0x00 0x02 is its end.
        if let Some(last) = column.last_mut() {
            *last = 0x02;
        }
        self.seek(&column);
    }

    /// Whether the current cell is in `row`, the row being returned. Once it is, the answer
    /// holds until `load` meets another row or the scan enters the family for a new row.
    fn on_row(&mut self, row: &[u8]) -> bool {
        if !self.in_scan_row {
            self.in_scan_row = self.key.row == row;
        }
        self.in_scan_row
    }

    /// Positions on the next cell of `row` this family should return (the caller reads it
    /// with `cell_ref`); `false` once the cursor has left the row (or failed: see `error`).
    fn next_cell(&mut self, row: &[u8]) -> bool {
        if std::mem::take(&mut self.pending_next) {
            self.next();
        }
        while self.valid && self.on_row(row) {
            if let Some(qs) = &self.qualifiers {
                if qs.binary_search(&self.key.qualifier).is_err() {
                    let next = qs.partition_point(|q| *q <= self.key.qualifier);
                    let target = match qs.get(next) {
                        Some(q) => column_range(row, q).0,
                        None => row_range(row).1,
                    };
                    self.seek(&target);
                    continue;
                }
            }
            if self.key.timestamp >= self.max_ts {
                self.next();
                continue;
            }
            if self.key.timestamp < self.min_ts || self.column_is_full() {
                self.skip_column();
                continue;
            }
            self.pending_next = true;
            return true;
        }
        false
    }

    /// Whether the current column has returned its `max_versions` already; otherwise counts
    /// the current cell as one more of its versions. With every version wanted (0) nothing
    /// is counted: the qualifier comparison per cell would only cost.
    fn column_is_full(&mut self) -> bool {
        if self.max_versions == 0 {
            return false;
        }
        let versions = match &mut self.column {
            Some((q, n)) if *q == self.key.qualifier => n,
            column => {
                let (q, n) = column.insert((Vec::new(), 0));
                q.clone_from(&self.key.qualifier);
                n
            }
        };
        if *versions >= self.max_versions {
            return true;
        }
        *versions += 1;
        false
    }

    fn cell_ref(&self) -> CellRef<'_> {
        CellRef {
            row: &self.key.row,
            family: &self.family,
            qualifier: &self.key.qualifier,
            timestamp: self.key.timestamp,
            value: self.it.value(),
        }
    }
}

/// A cell borrowed from a [`Scanner`] (see [`Scanner::next_ref`]): valid until the scanner
/// moves on. Saves the three allocations of an owned [`Cell`] per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellRef<'a> {
    pub row: &'a [u8],
    pub family: &'a Arc<str>,
    pub qualifier: &'a [u8],
    pub timestamp: u64,
    pub value: &'a [u8],
}

impl CellRef<'_> {
    pub fn to_cell(&self) -> Cell {
        Cell {
            row: self.row.to_vec(),
            family: Arc::clone(self.family),
            qualifier: self.qualifier.to_vec(),
            timestamp: self.timestamp,
            value: self.value.to_vec(),
        }
    }
}

/// Iterator over the cells a [`ScanSpec`] selects. After an error it ends.
pub struct Scanner {
    cursors: Vec<FamilyCursor>,
    reverse: bool,
    remaining: Option<usize>,
    /// Whether a row is being returned; then `row` is it and, in a reverse scan,
    /// `row_start` its first key. Both buffers are reused from row to row.
    has_row: bool,
    row: Vec<u8>,
    row_start: Vec<u8>,
    /// The family being read, and whether its cursor has been positioned in the row.
    family_index: usize,
    family_entered: bool,
    /// Whether the family being read has cells in the row.
    in_row: bool,
    done: bool,
    // Keeps the versions the iterators read from being compacted away.
    _snapshot: Snapshot,
}

impl Scanner {
    pub(crate) fn new(table: &Table, spec: ScanSpec) -> Result<Scanner> {
        let wanted = wanted_families(table, &spec.columns)?;
        let snapshot = spec.snapshot.unwrap_or_else(|| table.db().snapshot());
        let mut ro = ReadOptions::at(&snapshot);
        match &spec.rows {
            RowSelection::All => {}
            RowSelection::Exact(r) => {
                let (s, e) = row_range(r);
                ro.lower_bound = Some(s);
                ro.upper_bound = Some(e);
            }
            RowSelection::Range { start, end } => {
                ro.lower_bound = match start {
                    Bound::Included(r) => Some(row_range(r).0),
                    Bound::Excluded(r) => Some(row_range(r).1),
                    Bound::Unbounded => None,
                };
                ro.upper_bound = match end {
                    Bound::Included(r) => Some(row_range(r).1),
                    Bound::Excluded(r) => Some(row_range(r).0),
                    Bound::Unbounded => None,
                };
            }
            RowSelection::Prefix(p) => ro.prefix = Some(row_prefix_start(p)),
        }
        let now = now_nanos();
        let table_name: Arc<str> = Arc::from(table.name());
        let mut cursors = Vec::with_capacity(wanted.len());
        for (index, qualifiers) in wanted {
            let f = &table.families()[index];
            let mut it = table
                .db()
                .iter(&f.keyspace, ro.clone())
                .map_err(|e| table.map_engine_error(e))?;
            if spec.reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            let ttl_min = f.options.ttl.map_or(0, |ttl| {
                now.saturating_sub(u64::try_from(ttl.as_nanos()).unwrap_or(u64::MAX))
            });
            let mut c = FamilyCursor {
                table: Arc::clone(&table_name),
                family: Arc::clone(&f.name),
                keyspace: f.keyspace.name().to_string(),
                it,
                qualifiers,
                max_versions: spec.max_versions.unwrap_or(f.options.max_versions),
                min_ts: spec.time_range.min.max(ttl_min),
                max_ts: spec.time_range.max,
                valid: false,
                key: DecodedCellKey::default(),
                in_scan_row: false,
                error: None,
                column: None,
                pending_next: false,
            };
            c.load();
            if let Some(e) = c.error.take() {
                return Err(e);
            }
            cursors.push(c);
        }
        Ok(Scanner {
            cursors,
            reverse: spec.reverse,
            remaining: spec.limit,
            has_row: false,
            row: Vec::new(),
            row_start: Vec::new(),
            family_index: 0,
            family_entered: false,
            in_row: false,
            done: false,
            _snapshot: snapshot,
        })
    }

    /// Makes the smallest (largest when reversed) current row the row to return; `false`
    /// when no cursor has one.
    fn pick_row(&mut self) -> bool {
        let rows = self.cursors.iter().filter(|c| c.valid).map(|c| &c.key.row);
        let best = if self.reverse { rows.max() } else { rows.min() };
        let Some(best) = best else {
            return false;
        };
        self.row.clear();
        self.row.extend_from_slice(best);
        if self.reverse {
            self.row_start.clear();
            put_row_start(&self.row, &mut self.row_start);
        }
        true
    }

    /// The first error any cursor met.
    fn check_errors(&mut self) -> Result<()> {
        match self.cursors.iter_mut().find_map(|c| c.error.take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Moves to the next cell to return; `false` at the end. The cell is the current one of
    /// `cursors[family_index]`.
    fn advance(&mut self) -> Result<bool> {
        if self.remaining == Some(0) {
            return Ok(false);
        }
        loop {
            if !self.has_row {
                // Only the cursor being read moves, and its error is taken below as soon as
                // it stops in the row; checking every cursor once per row, not once per cell,
                // is the safety net.
                self.check_errors()?;
                if !self.pick_row() {
                    return Ok(false);
                }
                self.has_row = true;
                self.family_index = 0;
                self.family_entered = false;
            }
            let (row, start) = (&self.row, &self.row_start);
            while self.family_index < self.cursors.len() {
                let c = &mut self.cursors[self.family_index];
                if !self.family_entered {
                    self.family_entered = true;
                    c.column = None;
                    c.in_scan_row = false;
                    self.in_row = c.valid && c.on_row(row);
                    if self.reverse && self.in_row {
                        c.seek(start);
                    }
                }
                if c.next_cell(row) {
                    if let Some(n) = &mut self.remaining {
                        *n -= 1;
                    }
                    return Ok(true);
                }
                if self.reverse && self.in_row {
                    c.seek_for_prev(start);
                }
                if let Some(e) = c.error.take() {
                    return Err(e);
                }
                self.family_index += 1;
                self.family_entered = false;
            }
            self.has_row = false;
        }
    }
}

impl Scanner {
    /// The next cell, borrowed: like `Iterator::next` without copying the cell out.
    pub fn next_ref(&mut self) -> Option<Result<CellRef<'_>>> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(true) => Some(Ok(self.cursors[self.family_index].cell_ref())),
            Ok(false) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for Scanner {
    type Item = Result<Cell>;

    fn next(&mut self) -> Option<Result<Cell>> {
        self.next_ref().map(|r| r.map(|c| c.to_cell()))
    }
}

/// The families a scan reads, as (index in the schema, wanted qualifiers or `None` for
/// all), in schema order.
fn wanted_families(
    table: &Table,
    columns: &[ColumnSelector],
) -> Result<Vec<(usize, WantedQualifiers)>> {
    let families = table.families();
    if columns.is_empty() {
        return Ok((0..families.len()).map(|i| (i, None)).collect());
    }
    let mut wanted: Vec<Option<WantedQualifiers>> = vec![None; families.len()];
    for sel in columns {
        let (name, qualifier) = match sel {
            ColumnSelector::Family(f) => (f, None),
            ColumnSelector::Column { family, qualifier } => (family, Some(qualifier)),
        };
        let index = families
            .iter()
            .position(|f| *f.name == **name)
            .ok_or_else(|| TableError::FamilyNotFound {
                table: table.name().to_string(),
                family: name.clone(),
            })?;
        let slot = &mut wanted[index];
        match (slot.as_mut(), qualifier) {
            (_, None) => *slot = Some(None),
            (None, Some(q)) => *slot = Some(Some(vec![q.clone()])),
            (Some(Some(qs)), Some(q)) => qs.push(q.clone()),
            (Some(None), Some(_)) => {}
        }
    }
    Ok(wanted
        .into_iter()
        .enumerate()
        .filter_map(|(i, w)| {
            w.map(|qs| {
                let qs = qs.map(|mut qs| {
                    qs.sort();
                    qs.dedup();
                    qs
                });
                (i, qs)
            })
        })
        .collect())
}
