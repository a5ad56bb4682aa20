//! `TableWriter`: a client-side write buffer (HBase's "autoflush off").
//!
//! Mutations accumulate in one engine `WriteBatch` spanning the table's families; when the
//! batch reaches `buffer_size_bytes` it is written, atomically, with the configured
//! durability. Nothing buffered is visible to readers before it is written.

use cellar_engine::{Durability, WriteBatch};

use crate::error::Result;
use crate::table::Table;

/// Default write buffer: 12 MiB.
pub const DEFAULT_WRITE_BUFFER_BYTES: usize = 12 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Encoded batch size at which the buffer is written.
    pub buffer_size_bytes: usize,
    /// How each written batch is made durable.
    pub durability: Durability,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            buffer_size_bytes: DEFAULT_WRITE_BUFFER_BYTES,
            durability: Durability::Flush,
        }
    }
}

/// Buffers mutations of one table and writes them in large atomic batches.
///
/// Call [`TableWriter::flush`] when done: dropping the writer flushes too, but cannot
/// report an error. If a flush fails, the mutations it was writing are discarded (the
/// error says why; an engine write error usually means the database must be reopened).
/// A mutation method that fills the buffer flushes it, so its error may be that flush's:
/// then everything buffered, that mutation included, was discarded. A mutation rejected
/// before it was buffered (unknown family, oversized key) leaves the buffer as it was.
pub struct TableWriter {
    table: Table,
    batch: WriteBatch,
    /// Scratch space for a put's cell key.
    key: Vec<u8>,
    options: WriterOptions,
}

impl TableWriter {
    pub(crate) fn new(table: Table, options: WriterOptions) -> Self {
        TableWriter {
            table,
            batch: WriteBatch::new(),
            key: Vec::new(),
            options,
        }
    }

    /// Buffers a put; returns its timestamp (`ts`, or the oracle's next one).
    pub fn put(
        &mut self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: Option<u64>,
        value: &[u8],
    ) -> Result<u64> {
        let ts = self.table.add_put(
            &mut self.batch,
            &mut self.key,
            row,
            family,
            qualifier,
            ts,
            value,
        )?;
        self.flush_if_full()?;
        Ok(ts)
    }

    /// Buffers the deletion of every cell of `row` (see `Table::delete_row`).
    pub fn delete_row(&mut self, row: &[u8]) -> Result<()> {
        self.table.add_delete_row(&mut self.batch, row)?;
        self.flush_if_full()
    }

    /// Buffers the deletion of `family` in `row`.
    pub fn delete_family(&mut self, row: &[u8], family: &str) -> Result<()> {
        self.table.add_delete_family(&mut self.batch, row, family)?;
        self.flush_if_full()
    }

    /// Buffers the deletion of every version of a column.
    pub fn delete_column(&mut self, row: &[u8], family: &str, qualifier: &[u8]) -> Result<()> {
        self.table
            .add_delete_column(&mut self.batch, row, family, qualifier)?;
        self.flush_if_full()
    }

    /// Buffers the deletion of the versions of a column whose timestamp is at most
    /// `max_ts`.
    pub fn delete_column_up_to(
        &mut self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        max_ts: u64,
    ) -> Result<()> {
        self.table
            .add_delete_column_up_to(&mut self.batch, row, family, qualifier, max_ts)?;
        self.flush_if_full()
    }

    /// Buffers the deletion of one version of a column.
    pub fn delete_version(
        &mut self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: u64,
    ) -> Result<()> {
        self.table
            .add_delete_version(&mut self.batch, row, family, qualifier, ts)?;
        self.flush_if_full()
    }

    /// Mutations buffered and not yet written.
    pub fn buffered_mutations(&self) -> usize {
        self.batch.len()
    }

    /// Encoded size of the buffer, in bytes.
    pub fn buffered_bytes(&self) -> usize {
        self.batch.size_bytes()
    }

    /// Writes everything buffered, atomically, with the configured durability.
    pub fn flush(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        self.table
            .db()
            .write(
                batch,
                &cellar_engine::WriteOptions::new(self.options.durability),
            )
            .map_err(|e| self.table.map_engine_error(e))
    }

    fn flush_if_full(&mut self) -> Result<()> {
        if self.batch.size_bytes() >= self.options.buffer_size_bytes {
            self.flush()?;
        }
        Ok(())
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        // Best effort: the caller who needs to know calls `flush` first.
        let _ = self.flush();
    }
}
