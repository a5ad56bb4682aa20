//! `Table::mutate`: a batch of puts and deletes on any rows of one table, written as one
//! engine batch, so a reader sees all of it or none of it.

use cellar_engine::{Durability, WriteBatch, WriteOptions};

use crate::error::Result;
use crate::table::Table;

/// One change to a table, for [`Table::mutate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// Writes one cell; `ts: None` takes the timestamp oracle's next one.
    Put {
        row: Vec<u8>,
        family: String,
        qualifier: Vec<u8>,
        ts: Option<u64>,
        value: Vec<u8>,
    },
    /// Every cell of the row, in every family.
    DeleteRow { row: Vec<u8> },
    /// Every cell of the row in one family.
    DeleteFamily { row: Vec<u8>, family: String },
    /// Every version of one column.
    DeleteColumn {
        row: Vec<u8>,
        family: String,
        qualifier: Vec<u8>,
    },
    /// One version of one column.
    DeleteVersion {
        row: Vec<u8>,
        family: String,
        qualifier: Vec<u8>,
        ts: u64,
    },
}

/// A batch of puts and deletes on one table, written by [`MutationBatch::write`] as one
/// atomic engine write. Each call checks its mutation (family, key and value sizes,
/// timestamp) before adding it: a refused one adds nothing, and the caller may drop the
/// batch unwritten. This is what [`Table::mutate`] and the server's `Mutate` build, the
/// server straight from a request's bytes (no owned [`Mutation`] per put).
pub struct MutationBatch<'t> {
    table: &'t Table,
    batch: WriteBatch,
    put_timestamps: Vec<u64>,
    /// Scratch space for a put's cell key.
    key: Vec<u8>,
}

impl MutationBatch<'_> {
    /// Adds a put; returns its timestamp (`ts`, or the oracle's next one).
    pub fn put(
        &mut self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: Option<u64>,
        value: &[u8],
    ) -> Result<u64> {
        let b = &mut self.batch;
        let ts = self
            .table
            .add_put(b, &mut self.key, row, family, qualifier, ts, value)?;
        self.put_timestamps.push(ts);
        Ok(ts)
    }

    /// Every cell of the row, in every family.
    pub fn delete_row(&mut self, row: &[u8]) -> Result<()> {
        self.table.add_delete_row(&mut self.batch, row)
    }

    /// Every cell of the row in one family.
    pub fn delete_family(&mut self, row: &[u8], family: &str) -> Result<()> {
        self.table.add_delete_family(&mut self.batch, row, family)
    }

    /// Every version of one column.
    pub fn delete_column(&mut self, row: &[u8], family: &str, qualifier: &[u8]) -> Result<()> {
        self.table
            .add_delete_column(&mut self.batch, row, family, qualifier)
    }

    /// One version of one column.
    pub fn delete_version(
        &mut self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        ts: u64,
    ) -> Result<()> {
        self.table
            .add_delete_version(&mut self.batch, row, family, qualifier, ts)
    }

    /// Writes everything added as one atomic write; returns the puts' timestamps in order.
    pub fn write(self, durability: Durability) -> Result<Vec<u64>> {
        if !self.batch.is_empty() {
            self.table
                .db()
                .write(self.batch, &WriteOptions::new(durability))
                .map_err(|e| self.table.map_engine_error(e))?;
        }
        Ok(self.put_timestamps)
    }
}

impl Table {
    /// An empty [`MutationBatch`] with room for about `bytes` of encoded mutations.
    pub fn mutation_batch(&self, bytes: usize) -> MutationBatch<'_> {
        MutationBatch {
            table: self,
            batch: WriteBatch::with_capacity(bytes),
            put_timestamps: Vec::new(),
            key: Vec::new(),
        }
    }

    /// Applies `mutations` in order as one atomic write and returns the puts' timestamps,
    /// in order. Every mutation is checked first (families, key and value sizes,
    /// timestamps): one bad mutation writes nothing.
    pub fn mutate(&self, mutations: &[Mutation], durability: Durability) -> Result<Vec<u64>> {
        let mut batch = self.mutation_batch(0);
        for m in mutations {
            match m {
                Mutation::Put {
                    row,
                    family,
                    qualifier,
                    ts,
                    value,
                } => batch.put(row, family, qualifier, *ts, value).map(drop)?,
                Mutation::DeleteRow { row } => batch.delete_row(row)?,
                Mutation::DeleteFamily { row, family } => batch.delete_family(row, family)?,
                Mutation::DeleteColumn {
                    row,
                    family,
                    qualifier,
                } => batch.delete_column(row, family, qualifier)?,
                Mutation::DeleteVersion {
                    row,
                    family,
                    qualifier,
                    ts,
                } => batch.delete_version(row, family, qualifier, *ts)?,
            }
        }
        batch.write(durability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CellStore, FamilyOptions, TableError, TableSchema};
    use cellar_engine::Options;

    fn put(row: &str, q: &str, ts: Option<u64>, v: &str) -> Mutation {
        Mutation::Put {
            row: row.into(),
            family: "f".into(),
            qualifier: q.into(),
            ts,
            value: v.into(),
        }
    }

    #[test]
    fn mutate_applies_puts_and_deletes_in_order_and_is_atomic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CellStore::open(dir.path(), Options::default()).expect("open");
        store
            .create_table(TableSchema::new("t").family("f", FamilyOptions::default()))
            .expect("create");
        let t = store.table("t").expect("table");
        let ts = t
            .mutate(
                &[put("a", "x", Some(5), "1"), put("b", "x", None, "2")],
                Durability::Buffered,
            )
            .expect("mutate");
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0], 5);
        assert!(ts[1] > 5);
        // A put then a delete of its row in one batch: the delete comes after the put.
        t.mutate(
            &[
                put("c", "x", None, "3"),
                Mutation::DeleteRow { row: "a".into() },
            ],
            Durability::Buffered,
        )
        .expect("mutate");
        assert!(t.get_row(b"a").expect("get").is_empty());
        assert_eq!(t.get_row(b"c").expect("get").len(), 1);
        // An unknown family anywhere in the batch writes nothing.
        let bad = Mutation::DeleteFamily {
            row: "b".into(),
            family: "nope".into(),
        };
        let e = t
            .mutate(&[put("d", "x", None, "4"), bad], Durability::Buffered)
            .expect_err("unknown family");
        assert!(matches!(e, TableError::FamilyNotFound { .. }), "{e}");
        assert!(t.get_row(b"d").expect("get").is_empty());
        assert_eq!(t.get_row(b"b").expect("get").len(), 1);
    }
}
