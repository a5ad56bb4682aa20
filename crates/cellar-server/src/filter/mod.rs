//! HBase's filter language (`filterString` in Thrift, `filter` in gRPC and REST scans):
//! parsed once per scan ([`Filter::parse`]), then applied to each row in scan order by one
//! [`FilterRun`] per scan.
//!
//! # Syntax (HBase's `ParseFilter`)
//! `Name(arg, ...)` filters, combined with `AND`, `OR`, the unary `SKIP` and `WHILE`, and
//! parentheses. Precedence, tightest first: parentheses, `SKIP`/`WHILE`, `AND`, `OR`, so
//! `A AND SKIP B OR C` is `(A AND (SKIP B)) OR C`. Filter names, comparator types and the
//! operators `AND OR SKIP WHILE` are case-sensitive as in HBase (a wrong case gets an error
//! naming the right spelling); `true`/`false` are not. Strings are single-quoted, `''`
//! inside is one quote; whitespace is free between tokens (`PageFilter (1)`).
//!
//! ```text
//! expr    := and ("OR" and)*
//! and     := unary ("AND" unary)*
//! unary   := ("SKIP" | "WHILE") unary | primary
//! primary := "(" expr ")" | NAME "(" [arg ("," arg)*] ")"
//! arg     := 'quoted string' | op | word            (op: < <= = != >= >; word: 12, true)
//! ```
//!
//! Comparison operators: `< <= = != >= >`, read as `cell OP operand`.
//! Comparators `'type:operand'`: `binary`, `binaryprefix` (only the cell's first
//! `len(operand)` bytes are compared), `substring` (contains, ignoring case) and
//! `regexstring` (a `regex` crate pattern found anywhere, `.` matching newlines); the last
//! two allow only `=` and `!=`. Patterns are Unicode-aware: `.` and classes match UTF-8
//! characters, so they skip bytes that are not UTF-8 (HBase's Java regex reads each byte
//! as a Latin-1 character).
//!
//! Arguments are separated by exactly one comma; HBase's parser also takes missing or extra
//! commas (`RowFilter(= 'binary:a')`), which are refused here with their byte position.
//!
//! # Filters
//! - `PrefixFilter('p')`: rows whose key starts with `p`.
//! - `KeyOnlyFilter()`: every cell with its value emptied; `KeyOnlyFilter(true)` puts the
//!   value's length there instead (4 bytes, big-endian).
//! - `FirstKeyOnlyFilter()`: the first cell of each row.
//! - `ColumnPrefixFilter('q')`, `MultipleColumnPrefixFilter('a', 'b', ...)`: the cells
//!   whose qualifier starts with (one of) the prefix(es).
//! - `SingleColumnValueFilter('f', 'q', op, 'cmp' [, filterIfColumnMissing,
//!   latestVersionOnly])`: whole rows whose `f:q` value compares. Defaults `false, true`:
//!   only the newest version is tested, and rows without the column pass unless
//!   `filterIfColumnMissing` is `true`. With `latestVersionOnly` `false`, any version that
//!   compares lets the row in.
//! - `PageFilter(n)`: at most `n` rows are returned through it; after the `n`th the scan
//!   ends.
//! - `RowFilter(op, 'cmp')`: rows whose key compares. `QualifierFilter(op, 'cmp')`,
//!   `ValueFilter(op, 'cmp')`: the cells whose qualifier / value compares.
//!
//! A row left without cells is not returned.
//!
//! # Combining (HBase's FilterList MUST_PASS_ALL / MUST_PASS_ONE)
//! Each filter decides about the row as read (its original cells), independently of its
//! siblings: whether the row passes, and which cells it keeps (and how it changes values).
//! - `A AND B`: the row passes if both pass it; a cell is kept if both keep it.
//! - `A OR B`: the row passes if either passes it; a cell is kept if it is kept by a side
//!   that passes the row (a side that rejects the row contributes no cells).
//! - Value changes (KeyOnlyFilter) apply to the kept cells, in the order the filters are
//!   written, from each side that kept the cell.
//! - `SKIP f`: the row is returned as `f` leaves it only if `f` passes it and keeps every
//!   cell; otherwise it is skipped whole.
//! - `WHILE f`: like `SKIP f`, except that the first row it rejects ends the scan (without
//!   that row).
//! - The scan ends early when no later row can pass: under `AND` when one side is spent
//!   (a PageFilter that has returned its rows, a WHILE that failed), under `OR` when every
//!   side is.
//!
//! Where this differs from HBase's implementation, it does so to stay independent of the
//! filters' order. In HBase, the filters of an `AND` do not see the cells of a row that one
//! of them rejected by its key (which matters to a WHILE), and a PageFilter counts a row it
//! passes even when a filter after it in the same `AND` drops the row; here every filter
//! sees every row, and a PageFilter counts only rows actually returned. `SKIP PrefixFilter('p')` keeps the rows with
//! the prefix (HBase's SkipFilter ignores row-key decisions). A PrefixFilter does not end a
//! scan once past its prefix (the scan's direction is not known here); a scan narrows its
//! range with [`Filter::row_prefix_hint`] instead.
//!
//! # Limits
//! Filter strings over [`MAX_FILTER_BYTES`], nesting (parentheses, SKIP, WHILE) deeper than
//! [`MAX_DEPTH`], more than [`MAX_PATTERNS`] regex or substring comparators, and patterns
//! that compile to more than 2 MiB are refused with a [`FilterError`].

mod build;
mod compare;
mod eval;
mod parse;

use cellar_table::Cell;

pub use build::SUPPORTED;
use eval::Node;

/// Longest filter string accepted.
pub const MAX_FILTER_BYTES: usize = 64 * 1024;
/// Deepest nesting of parentheses and SKIP/WHILE accepted.
pub const MAX_DEPTH: usize = 64;
/// Most `regexstring`/`substring` comparators in one filter string: each compiles a regex
/// of up to 2 MiB (in up to ~150 ms for the largest), held for the scan.
pub const MAX_PATTERNS: usize = 8;

/// A filter string that does not parse, or names a filter Cellar does not implement.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FilterError {
    #[error("filter {0:?} is not supported (supported: {list})", list = SUPPORTED.join(", "))]
    Unsupported(String),
    #[error("unknown filter {given:?}: filter names are case-sensitive; did you mean {expected}?")]
    NameCase {
        given: String,
        expected: &'static str,
    },
    #[error("{filter} at byte {at}: {reason}")]
    BadArguments {
        filter: &'static str,
        at: usize,
        reason: String,
    },
    #[error("malformed filter string at byte {at}: {reason}")]
    Syntax { at: usize, reason: String },
    #[error("filter string of {len} bytes is longer than the {max} bytes accepted")]
    TooLong { len: usize, max: usize },
    #[error("filter string nests deeper than {max} levels at byte {at}")]
    TooDeep { at: usize, max: usize },
    #[error("filter string has more than {max} regexstring/substring comparators (at byte {at})")]
    TooManyPatterns { at: usize, max: usize },
}

/// A parsed filter.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The tree with fresh per-scan state; each scan runs a copy.
    root: Node,
}

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        Filter::parse_bytes(text.as_bytes())
    }

    /// [`Filter::parse`] for a filter string as bytes (Thrift's `filterString` is binary):
    /// quoted strings may hold any bytes, such as binary row keys for a PrefixFilter.
    pub fn parse_bytes(text: &[u8]) -> Result<Filter, FilterError> {
        if text.len() > MAX_FILTER_BYTES {
            return Err(FilterError::TooLong {
                len: text.len(),
                max: MAX_FILTER_BYTES,
            });
        }
        Ok(Filter {
            root: parse::parse(text)?,
        })
    }

    /// The state of one scan's pass through the filter (PageFilter counts rows).
    pub fn start(&self) -> FilterRun {
        FilterRun {
            root: self.root.clone(),
        }
    }

    /// A row prefix every row the filter returns has (a PrefixFilter at the top level or
    /// under AND), so a scan may read only those rows; the filter still checks it. `None`
    /// when there is none, or when a WHILE must see the rows before the prefix.
    pub fn row_prefix_hint(&self) -> Option<Vec<u8>> {
        if self.root.has_while() {
            return None;
        }
        self.root.required_prefix().map(<[u8]>::to_vec)
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
pub struct FilterRun {
    root: Node,
}

impl FilterRun {
    /// Decides about a row; may drop or change its cells (KeyOnlyFilter empties values).
    /// `cells` are the row's cells in scan order; they are changed only when the verdict
    /// returns the row, which always keeps at least one cell.
    pub fn apply(&mut self, row: &[u8], cells: &mut Vec<Cell>) -> RowVerdict {
        if self.root.exhausted() {
            return RowVerdict::Stop;
        }
        let outcome = self.root.eval(row, cells);
        if self.root.exhausted() {
            // A WHILE rejected this row.
            return RowVerdict::Stop;
        }
        let returned = outcome.returns_row();
        if returned {
            outcome.apply(cells);
        }
        self.root.commit(returned);
        match (returned, self.root.exhausted()) {
            (true, false) => RowVerdict::Include,
            (true, true) => RowVerdict::IncludeThenStop,
            (false, false) => RowVerdict::Skip,
            (false, true) => RowVerdict::Stop,
        }
    }
}

#[cfg(test)]
mod tests;
