//! `Table`: writes and reads of one table's cells.
//!
//! A put is one engine put of the cell key (`cell_key.rs`) in the family's keyspace. Deletes
//! of a row, a family of a row or a column are range deletions over the encoded ranges (a
//! row delete covers every family in one atomic batch); deleting one version deletes its
//! key. A delete removes the cells that exist when it is applied, whatever their
//! timestamps; cells written after it are visible, whatever their timestamps (unlike
//! HBase's delete markers, which also mask later writes of older timestamps).

use std::sync::Arc;

use cellar_engine::{
    Db, Durability, Keyspace, WriteBatch, WriteOptions, MAX_KEY_LEN, MAX_VALUE_LEN,
};

use crate::cell_key::{
    column_range, column_range_up_to, encode_cell_key, encoded_cell_key_len, row_range,
};
use crate::error::{Result, TableError};
use crate::scan::{ScanSpec, Scanner};
use crate::schema::{FamilyOptions, FamilySchema, TableSchema};
use crate::timestamp::{next_timestamp, MAX_TIMESTAMP};
use crate::writer::{TableWriter, WriterOptions};

/// One version of one column of one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub row: Vec<u8>,
    /// Shared with every cell of the family the scan returns.
    pub family: Arc<str>,
    pub qualifier: Vec<u8>,
    /// Nanoseconds since the Unix epoch.
    pub timestamp: u64,
    pub value: Vec<u8>,
}

/// A family of an open table: its schema and its keyspace.
#[derive(Debug, Clone)]
pub(crate) struct FamilyHandle {
    pub name: Arc<str>,
    pub keyspace: Keyspace,
    pub options: FamilyOptions,
}

impl FamilyHandle {
    pub fn new(f: &FamilySchema, keyspace: Keyspace) -> Self {
        FamilyHandle {
            name: Arc::from(f.name.as_str()),
            keyspace,
            options: f.options.clone(),
        }
    }
}

/// A handle on one table, from `CellStore::table`. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Table {
    inner: Arc<TableInner>,
}

#[derive(Debug)]
struct TableInner {
    db: Db,
    schema: Arc<TableSchema>,
    /// In schema order.
    families: Vec<FamilyHandle>,
}

impl Table {
    pub(crate) fn new(db: Db, schema: Arc<TableSchema>, families: Vec<FamilyHandle>) -> Self {
        Table {
            inner: Arc::new(TableInner {
                db,
                schema,
                families,
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.inner.schema.name
    }

    /// The schema as of when this handle was taken.
    pub fn schema(&self) -> &TableSchema {
        &self.inner.schema
    }

    /// The database the table lives in (for layers above that write its keyspaces
    /// directly, such as bulk loads).
    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    pub(crate) fn families(&self) -> &[FamilyHandle] {
        &self.inner.families
    }

    /// Each family's name and the engine keyspace that holds its cells (keyed by
    /// [`crate::cell_key`]), in schema order.
    pub fn family_keyspaces(&self) -> impl Iterator<Item = (&str, &Keyspace)> {
        self.inner.families.iter().map(|f| (&*f.name, &f.keyspace))
    }

    pub(crate) fn family(&self, name: &str) -> Result<&FamilyHandle> {
        self.inner
            .families
            .iter()
            .find(|f| &*f.name == name)
            .ok_or_else(|| TableError::FamilyNotFound {
                table: self.name().to_string(),
                family: name.to_string(),
            })
    }

    /// Engine errors of an operation on this table's keyspaces, with a dropped keyspace
    /// reported as the stale handle it means.
    pub(crate) fn map_engine_error(&self, e: cellar_engine::Error) -> TableError {
        match e {
            cellar_engine::Error::KeyspaceNotFound(_) => {
                TableError::StaleHandle(self.name().to_string())
            }
            e => TableError::Engine(e),
        }
    }

    fn write(&self, batch: WriteBatch, durability: Durability) -> Result<()> {
        self.inner
            .db
            .write(batch, &WriteOptions::new(durability))
            .map_err(|e| self.map_engine_error(e))
    }

    /// Writes one cell and returns its timestamp: `ts`, or the next one from the oracle
    /// (`next_timestamp`) when `None`. A put of an existing (row, family, qualifier,
    /// timestamp) replaces its value.
    pub fn put(
        &self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: Option<u64>,
        value: &[u8],
        durability: Durability,
    ) -> Result<u64> {
        let mut batch = WriteBatch::new();
        let mut key = Vec::new();
        let ts = self.add_put(&mut batch, &mut key, row, family, qualifier, ts, value)?;
        self.write(batch, durability)?;
        Ok(ts)
    }

    /// Deletes every cell of `row`, in every family, atomically.
    pub fn delete_row(&self, row: &[u8], durability: Durability) -> Result<()> {
        let mut batch = WriteBatch::new();
        self.add_delete_row(&mut batch, row)?;
        self.write(batch, durability)
    }

    /// Deletes every cell of `row` in `family`.
    pub fn delete_family(&self, row: &[u8], family: &str, durability: Durability) -> Result<()> {
        let mut batch = WriteBatch::new();
        self.add_delete_family(&mut batch, row, family)?;
        self.write(batch, durability)
    }

    /// Deletes every version of column (`row`, `family`, `qualifier`).
    pub fn delete_column(
        &self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        durability: Durability,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        self.add_delete_column(&mut batch, row, family, qualifier)?;
        self.write(batch, durability)
    }

    /// Deletes the version of column (`row`, `family`, `qualifier`) at `ts`.
    pub fn delete_version(
        &self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: u64,
        durability: Durability,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        self.add_delete_version(&mut batch, row, family, qualifier, ts)?;
        self.write(batch, durability)
    }

    /// Cells selected by `spec`, in (row, family in schema order, qualifier, newest
    /// timestamp first) order, rows reversed if `spec.reverse`.
    pub fn scan(&self, spec: ScanSpec) -> Result<Scanner> {
        Scanner::new(self, spec)
    }

    /// Every visible cell of `row` (each family's MAX_VERSIONS and TTL applied).
    pub fn get_row(&self, row: &[u8]) -> Result<Vec<Cell>> {
        self.scan(ScanSpec::row(row))?.collect()
    }

    /// A client-side write buffer on this table.
    pub fn writer(&self, options: WriterOptions) -> TableWriter {
        TableWriter::new(self.clone(), options)
    }

    /// Whether a put of this cell would be accepted (family, key and value sizes,
    /// timestamp), without writing anything: lets a caller check a whole statement before
    /// buffering any of it.
    pub fn check_put(
        &self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: Option<u64>,
        value: &[u8],
    ) -> Result<()> {
        self.family(family)?;
        check_put_sizes(row, qualifier, ts, value)
    }

    /// Whether a delete of `row` (`family` `None`), of a family of it, or of one column
    /// (`qualifier`) would be accepted, without writing anything.
    pub fn check_delete(&self, row: &[u8], family: Option<&str>, qualifier: &[u8]) -> Result<()> {
        if let Some(f) = family {
            self.family(f)?;
        }
        check_key_size(row, qualifier)
    }

    /// Adds a put to `batch`; `key` is scratch space for its cell key.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_put(
        &self,
        batch: &mut WriteBatch,
        key: &mut Vec<u8>,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: Option<u64>,
        value: &[u8],
    ) -> Result<u64> {
        let f = self.family(family)?;
        check_put_sizes(row, qualifier, ts, value)?;
        let ts = ts.unwrap_or_else(next_timestamp);
        key.clear();
        encode_cell_key(row, qualifier, ts, key);
        batch.put(&f.keyspace, key, value);
        Ok(ts)
    }

    pub(crate) fn add_delete_row(&self, batch: &mut WriteBatch, row: &[u8]) -> Result<()> {
        check_key_size(row, b"")?;
        let (start, end) = row_range(row);
        for f in self.families() {
            batch.delete_range(&f.keyspace, &start, &end);
        }
        Ok(())
    }

    pub(crate) fn add_delete_family(
        &self,
        batch: &mut WriteBatch,
        row: &[u8],
        family: &str,
    ) -> Result<()> {
        let f = self.family(family)?;
        check_key_size(row, b"")?;
        let (start, end) = row_range(row);
        batch.delete_range(&f.keyspace, &start, &end);
        Ok(())
    }

    pub(crate) fn add_delete_column(
        &self,
        batch: &mut WriteBatch,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
    ) -> Result<()> {
        let f = self.family(family)?;
        check_key_size(row, qualifier)?;
        let (start, end) = column_range(row, qualifier);
        batch.delete_range(&f.keyspace, &start, &end);
        Ok(())
    }

    /// Deletes the versions of a column whose timestamp is at most `max_ts` (HBase's
    /// `Delete.addColumns(family, qualifier, ts)`).
    pub(crate) fn add_delete_column_up_to(
        &self,
        batch: &mut WriteBatch,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        max_ts: u64,
    ) -> Result<()> {
        let f = self.family(family)?;
        check_key_size(row, qualifier)?;
        let (start, end) = column_range_up_to(row, qualifier, max_ts);
        batch.delete_range(&f.keyspace, &start, &end);
        Ok(())
    }

    pub(crate) fn add_delete_version(
        &self,
        batch: &mut WriteBatch,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: u64,
    ) -> Result<()> {
        let f = self.family(family)?;
        check_key_size(row, qualifier)?;
        let mut key = Vec::new();
        encode_cell_key(row, qualifier, ts, &mut key);
        batch.delete(&f.keyspace, &key);
        Ok(())
    }
}

/// The limits a put must meet besides its family existing.
fn check_put_sizes(row: &[u8], qualifier: &[u8], ts: Option<u64>, value: &[u8]) -> Result<()> {
    check_key_size(row, qualifier)?;
    if value.len() > MAX_VALUE_LEN {
        return Err(TableError::InvalidArgument(format!(
            "value of {} bytes exceeds the limit of {MAX_VALUE_LEN} bytes",
            value.len()
        )));
    }
    if let Some(t) = ts.filter(|&t| t > MAX_TIMESTAMP) {
        return Err(TableError::InvalidArgument(format!(
            "timestamp {t} is reserved; timestamps must be at most {MAX_TIMESTAMP}"
        )));
    }
    Ok(())
}

/// Rejects a row and qualifier whose cell key the engine would refuse.
fn check_key_size(row: &[u8], qualifier: &[u8]) -> Result<()> {
    let len = encoded_cell_key_len(row, qualifier);
    if len > MAX_KEY_LEN {
        return Err(TableError::InvalidArgument(format!(
            "row ({} bytes) and qualifier ({} bytes) are too long: their cell key would be \
             {len} bytes, the limit is {MAX_KEY_LEN} (each 0x00 byte counts twice)",
            row.len(),
            qualifier.len()
        )));
    }
    Ok(())
}

impl Table {
    /// Up to `parts - 1` ascending row keys that cut the table into about `parts` pieces
    /// of similar size (from the families' file indexes, no I/O): scan
    /// `[split[i-1], split[i])` in parallel to read a large table faster.
    pub fn split_rows(&self, parts: usize) -> Result<Vec<Vec<u8>>> {
        let mut rows = Vec::new();
        for f in self.families() {
            let keys = self
                .db()
                .split_keys(&f.keyspace, parts)
                .map_err(|e| self.map_engine_error(e))?;
            rows.extend(keys.iter().map(|k| crate::cell_key::row_prefix_of(k)));
        }
        rows.sort_unstable();
        rows.dedup();
        rows.retain(|r| !r.is_empty());
        if rows.len() < parts {
            return Ok(rows);
        }
        // Evenly spaced among every family's candidates.
        let step = rows.len() as f64 / parts as f64;
        let mut out: Vec<Vec<u8>> = (1..parts)
            .map(|i| rows[((i as f64 * step) as usize).min(rows.len() - 1)].clone())
            .collect();
        out.dedup();
        Ok(out)
    }
}
