//! The statements HQL can say, as plain data.
//!
//! Rows, qualifiers and values are bytes (`Vec<u8>`): a string literal can hold any byte
//! through `\xHH`. Table, family and column names are text. Timestamps are nanoseconds since
//! 1970-01-01 00:00:00 UTC. `Display` (in `display.rs`) prints each statement back as
//! canonical HQL that parses to the same value.
//!
//! Invariants the parser guarantees (and `Display` relies on): names are non-empty; family
//! names hold no ':'; row keys of INSERT and DELETE are non-empty; list fields are non-empty
//! unless documented otherwise; counts documented "at least 1" are at least 1; a
//! `RowPredicate::Range` has at least one bounded end.

use std::ops::Bound;

/// A value together with where its text starts in the script (1-based line and column,
/// counted in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    pub line: usize,
    pub column: usize,
    pub node: T,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    CreateTable(CreateTable),
    DropTable(DropTable),
    ShowTables,
    DescribeTable(TableRef),
    ShowCreateTable(TableRef),
    AlterTable(AlterTable),
    Insert(Insert),
    Select(Select),
    Delete(Delete),
    LoadData(LoadData),
    DumpTable(DumpTable),
    /// `QUIT` or `EXIT`.
    Quit,
    Help,
}

/// A statement's only argument: the table it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    pub table: String,
}

/// `CREATE TABLE [IF NOT EXISTS] name (family [options], ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTable {
    pub if_not_exists: bool,
    pub name: String,
    /// Non-empty, no name twice.
    pub families: Vec<FamilySpec>,
}

/// A column family and the options given for it; `None` leaves the table layer's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilySpec {
    pub name: String,
    /// At least 1.
    pub max_versions: Option<u32>,
    /// At least 1.
    pub ttl_seconds: Option<u64>,
    pub compression: Option<Compression>,
    /// At least 1.
    pub block_size_bytes: Option<u64>,
    /// `true`/`rows` → `Some(true)`, `false`/`none` → `Some(false)`.
    pub bloom: Option<bool>,
}

impl FamilySpec {
    /// A family with no options given.
    pub fn named(name: impl Into<String>) -> Self {
        FamilySpec {
            name: name.into(),
            max_versions: None,
            ttl_seconds: None,
            compression: None,
            block_size_bytes: None,
            bloom: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

/// `DROP TABLE [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropTable {
    pub if_exists: bool,
    pub name: String,
}

/// `ALTER TABLE name ADD (family [options], ...)` or `ALTER TABLE name DROP (family, ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterTable {
    pub name: String,
    pub action: AlterAction,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterAction {
    /// Non-empty, no name twice.
    Add(Vec<FamilySpec>),
    /// Family names; non-empty, no name twice.
    Drop(Vec<String>),
}

/// `INSERT INTO table VALUES (...), ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insert {
    pub table: String,
    /// Non-empty.
    pub cells: Vec<InsertCell>,
}

/// One `(row, [timestamp,] 'family:qualifier', value)` tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertCell {
    /// Non-empty.
    pub row: Vec<u8>,
    /// `None`: the table layer assigns one.
    pub timestamp: Option<u64>,
    pub family: String,
    /// Empty when the column was written `'family'` or `'family:'`.
    pub qualifier: Vec<u8>,
    pub value: Vec<u8>,
}

/// `family` (every qualifier) or `family:qualifier` (that one qualifier, possibly empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRef {
    pub family: String,
    pub qualifier: Option<Vec<u8>>,
}

/// The columns a SELECT reads or a DELETE removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Columns {
    /// `*`
    All,
    /// Non-empty.
    List(Vec<ColumnRef>),
}

/// Which rows a SELECT reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowPredicate {
    /// No ROW condition.
    All,
    /// `ROW = 'k'`
    Exact(Vec<u8>),
    /// `ROW >= 'a' AND ROW < 'b'`, `'a' <= ROW < 'b'`, `ROW > 'a'`, ...; at least one end
    /// bounded.
    Range {
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    },
    /// `ROW =^ 'prefix'`
    Prefix(Vec<u8>),
}

/// `SELECT columns FROM table [WHERE ...] [MAX_VERSIONS n] [LIMIT n] [REVERSE]
/// [DISPLAY_TIMESTAMPS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    pub columns: Columns,
    pub table: String,
    pub row: RowPredicate,
    /// Start and end of the timestamp range (nanoseconds); `(Unbounded, Unbounded)` when the
    /// statement has no TIMESTAMP condition.
    pub timestamp: (Bound<u64>, Bound<u64>),
    /// Newest versions returned per cell; at least 1.
    pub max_versions: Option<u32>,
    /// Cells returned at most.
    pub limit: Option<u64>,
    /// Rows in descending order.
    pub reverse: bool,
    /// Print each cell's timestamp first.
    pub display_timestamps: bool,
}

/// `DELETE columns FROM table WHERE ROW = 'k' [VERSION ts]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delete {
    pub columns: Columns,
    pub table: String,
    /// Non-empty.
    pub row: Vec<u8>,
    /// Only the version with exactly this timestamp; `None`: every version.
    pub version: Option<u64>,
}

/// `LOAD DATA INFILE [options] 'file' INTO TABLE table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadData {
    /// Header column that holds the row key; `None`: the first column.
    pub row_key_column: Option<String>,
    /// Header column that holds each line's timestamp.
    pub timestamp_column: Option<String>,
    /// File whose first line is the header, instead of the data file's first line.
    pub header_file: Option<String>,
    pub ignore_unknown_columns: bool,
    pub skip_bad_lines: bool,
    pub file: String,
    pub table: String,
}

/// `DUMP TABLE table INTO FILE 'file'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpTable {
    pub table: String,
    pub file: String,
}
