//! The client's data types: what a caller writes and reads, converted to and from the
//! proto messages at the edge.

use std::time::Duration;

use cellar_proto::v1 as pb;
use cellar_proto::wire::{DeleteRef, MutationRef, PutRef};

/// How a write is made durable before the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// The server's `--durability`.
    #[default]
    Default,
    /// Kept in the server process: lost if it crashes.
    Buffered,
    /// Written to the OS: survives a crash of the server process.
    Flush,
    /// fdatasync'd: survives power loss.
    Sync,
}

impl Durability {
    pub(crate) fn to_proto(self) -> i32 {
        (match self {
            Durability::Default => pb::Durability::Default,
            Durability::Buffered => pb::Durability::Buffered,
            Durability::Flush => pb::Durability::Flush,
            Durability::Sync => pb::Durability::Sync,
        }) as i32
    }
}

/// Writes one cell. Without [`Put::at`], the server assigns the timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Put {
    pub row: Vec<u8>,
    pub family: String,
    pub qualifier: Vec<u8>,
    /// Nanoseconds since the Unix epoch.
    pub timestamp: Option<u64>,
    pub value: Vec<u8>,
}

impl Put {
    pub fn new(
        row: impl Into<Vec<u8>>,
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Put {
        Put {
            row: row.into(),
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp: None,
            value: value.into(),
        }
    }

    /// At this timestamp (nanoseconds).
    pub fn at(mut self, timestamp: u64) -> Put {
        self.timestamp = Some(timestamp);
        self
    }
}

/// Deletes a row, a family of a row, a column, or one version of a column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delete {
    pub row: Vec<u8>,
    pub family: Option<String>,
    pub qualifier: Option<Vec<u8>>,
    pub timestamp: Option<u64>,
}

impl Delete {
    /// Every cell of the row.
    pub fn row(row: impl Into<Vec<u8>>) -> Delete {
        Delete {
            row: row.into(),
            family: None,
            qualifier: None,
            timestamp: None,
        }
    }

    /// Every cell of the row in one family.
    pub fn family(row: impl Into<Vec<u8>>, family: impl Into<String>) -> Delete {
        Delete {
            family: Some(family.into()),
            ..Delete::row(row)
        }
    }

    /// Every version of one column.
    pub fn column(
        row: impl Into<Vec<u8>>,
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
    ) -> Delete {
        Delete {
            qualifier: Some(qualifier.into()),
            ..Delete::family(row, family)
        }
    }

    /// The version of a column at `timestamp`.
    pub fn version(
        row: impl Into<Vec<u8>>,
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        timestamp: u64,
    ) -> Delete {
        Delete {
            timestamp: Some(timestamp),
            ..Delete::column(row, family, qualifier)
        }
    }
}

/// A put or a delete, for [`crate::Client::mutate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    Put(Put),
    Delete(Delete),
}

impl From<Put> for Mutation {
    fn from(p: Put) -> Self {
        Mutation::Put(p)
    }
}

impl From<Delete> for Mutation {
    fn from(d: Delete) -> Self {
        Mutation::Delete(d)
    }
}

impl Mutation {
    /// The mutation as the request encoder reads it.
    pub(crate) fn as_wire(&self) -> MutationRef<'_> {
        match self {
            Mutation::Put(p) => MutationRef::Put(PutRef {
                row: &p.row,
                family: &p.family,
                qualifier: &p.qualifier,
                timestamp: p.timestamp,
                value: &p.value,
            }),
            Mutation::Delete(d) => MutationRef::Delete(DeleteRef {
                row: &d.row,
                family: d.family.as_deref().unwrap_or_default(),
                qualifier: d.qualifier.as_deref(),
                timestamp: d.timestamp,
            }),
        }
    }

    pub(crate) fn into_proto(self) -> pb::Mutation {
        let kind = match self {
            Mutation::Put(p) => pb::mutation::Kind::Put(pb::Put {
                row: p.row,
                family: p.family,
                qualifier: p.qualifier,
                timestamp: p.timestamp,
                value: p.value,
            }),
            Mutation::Delete(d) => pb::mutation::Kind::Delete(pb::Delete {
                row: d.row,
                family: d.family.unwrap_or_default(),
                qualifier: d.qualifier,
                timestamp: d.timestamp,
            }),
        };
        pb::Mutation { kind: Some(kind) }
    }
}

/// A family (every qualifier) or one column of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub family: String,
    pub qualifier: Option<Vec<u8>>,
}

impl Column {
    pub fn family(family: impl Into<String>) -> Column {
        Column {
            family: family.into(),
            qualifier: None,
        }
    }

    pub fn new(family: impl Into<String>, qualifier: impl Into<Vec<u8>>) -> Column {
        Column {
            family: family.into(),
            qualifier: Some(qualifier.into()),
        }
    }

    pub(crate) fn to_proto(&self) -> pb::Column {
        pb::Column {
            family: self.family.clone(),
            qualifier: self.qualifier.clone(),
        }
    }
}

/// What a Get or MultiGet returns of each row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Empty: every family.
    pub columns: Vec<Column>,
    /// Timestamps `[min, max)`; `max` 0 = no upper bound.
    pub min_timestamp: u64,
    pub max_timestamp: u64,
    /// 0: each family's MAX_VERSIONS.
    pub max_versions: u32,
}

impl ReadOptions {
    pub fn columns(mut self, columns: impl IntoIterator<Item = Column>) -> Self {
        self.columns.extend(columns);
        self
    }

    /// Only versions with `min <= timestamp < max` (`max` 0: no upper bound).
    pub fn time_range(mut self, min: u64, max: u64) -> Self {
        self.min_timestamp = min;
        self.max_timestamp = max;
        self
    }

    pub fn max_versions(mut self, n: u32) -> Self {
        self.max_versions = n;
        self
    }

    pub(crate) fn time_range_proto(&self) -> Option<pb::TimeRange> {
        time_range_proto(self.min_timestamp, self.max_timestamp)
    }

    pub(crate) fn columns_proto(&self) -> Vec<pb::Column> {
        self.columns.iter().map(Column::to_proto).collect()
    }
}

pub(crate) fn time_range_proto(min: u64, max: u64) -> Option<pb::TimeRange> {
    (min != 0 || max != 0).then_some(pb::TimeRange { min, max })
}

/// One version of one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub family: String,
    pub qualifier: Vec<u8>,
    /// Nanoseconds since the Unix epoch.
    pub timestamp: u64,
    pub value: Vec<u8>,
}

/// A row's cells, in (family in schema order, qualifier, newest first) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowResult {
    pub row: Vec<u8>,
    pub cells: Vec<Cell>,
}

impl RowResult {
    /// The newest value of a column.
    pub fn value(&self, family: &str, qualifier: &[u8]) -> Option<&[u8]> {
        self.cells
            .iter()
            .find(|c| c.family == family && c.qualifier == qualifier)
            .map(|c| c.value.as_slice())
    }

    pub(crate) fn from_proto(r: pb::Row) -> RowResult {
        RowResult {
            row: r.row,
            cells: r
                .cells
                .into_iter()
                .map(|c| Cell {
                    family: c.family,
                    qualifier: c.qualifier,
                    timestamp: c.timestamp,
                    value: c.value,
                })
                .collect(),
        }
    }
}

/// Block compression of a family's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    Default,
    None,
    Lz4,
    Zstd,
}

/// One column family of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilySchema {
    pub name: String,
    /// Versions a read returns; 0 = every version.
    pub max_versions: u32,
    /// Cells older than this are invisible.
    pub ttl: Option<Duration>,
    pub compression: Compression,
    pub bloom_filter: bool,
}

impl FamilySchema {
    /// A family keeping 1 version, forever, with default compression and a bloom filter.
    pub fn new(name: impl Into<String>) -> FamilySchema {
        FamilySchema {
            name: name.into(),
            max_versions: 1,
            ttl: None,
            compression: Compression::Default,
            bloom_filter: true,
        }
    }

    pub fn max_versions(mut self, n: u32) -> Self {
        self.max_versions = n;
        self
    }

    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    pub fn compression(mut self, c: Compression) -> Self {
        self.compression = c;
        self
    }
}

/// A table: its name and families, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    pub name: String,
    pub families: Vec<FamilySchema>,
}

impl TableSchema {
    pub fn new(name: impl Into<String>) -> TableSchema {
        TableSchema {
            name: name.into(),
            families: Vec::new(),
        }
    }

    /// Adds a family (builder style).
    pub fn family(mut self, f: FamilySchema) -> Self {
        self.families.push(f);
        self
    }

    pub(crate) fn to_proto(&self) -> pb::TableSchema {
        pb::TableSchema {
            name: self.name.clone(),
            families: self
                .families
                .iter()
                .map(|f| pb::FamilySchema {
                    name: f.name.clone(),
                    max_versions: f.max_versions,
                    ttl_seconds: f.ttl.map_or(0, |d| d.as_secs()),
                    compression: (match f.compression {
                        Compression::Default => pb::Compression::Default,
                        Compression::None => pb::Compression::None,
                        Compression::Lz4 => pb::Compression::Lz4,
                        Compression::Zstd => pb::Compression::Zstd,
                    }) as i32,
                    no_bloom_filter: !f.bloom_filter,
                })
                .collect(),
        }
    }

    pub(crate) fn from_proto(s: pb::TableSchema) -> TableSchema {
        TableSchema {
            name: s.name,
            families: s
                .families
                .into_iter()
                .map(|f| FamilySchema {
                    compression: match pb::Compression::try_from(f.compression) {
                        Ok(pb::Compression::None) => Compression::None,
                        Ok(pb::Compression::Lz4) => Compression::Lz4,
                        Ok(pb::Compression::Zstd) => Compression::Zstd,
                        _ => Compression::Default,
                    },
                    name: f.name,
                    max_versions: f.max_versions,
                    ttl: (f.ttl_seconds > 0).then(|| Duration::from_secs(f.ttl_seconds)),
                    bloom_filter: !f.no_bloom_filter,
                })
                .collect(),
        }
    }
}

/// A bulk load's options (see `cellar load`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Default: the first column.
    pub row_key_column: Option<String>,
    pub timestamp_column: Option<String>,
    pub ignore_unknown_columns: bool,
    /// Count and skip malformed lines instead of failing the whole load.
    pub skip_bad_lines: bool,
    /// The data is gzip-compressed.
    pub gzip: bool,
}

/// What a load did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadStats {
    pub lines: u64,
    pub cells: u64,
    pub bad_lines: u64,
    pub bytes: u64,
}

/// The output of HQL statements, as the shell prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HqlOutput {
    pub output: String,
    /// Each failed statement's error, with its line (the shell's `error (line N): ...`).
    pub errors: Vec<String>,
}
