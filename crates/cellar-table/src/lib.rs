//! Tables of cells on the Cellar engine, after HBase and Hypertable.
//!
//! A table has column families; a cell is (row, family, qualifier, timestamp) → value, with
//! rows and qualifiers arbitrary bytes and timestamps nanoseconds since the Unix epoch.
//! Each family is its own engine keyspace `t/<table>/<family>` (an "access group"), keyed
//! by [`cell_key`] so that byte order is (row, qualifier, newest timestamp first). Table
//! definitions live in the database's `__catalog` keyspace. Formats: `docs/format/cells.md`.
//!
//! ```no_run
//! use cellar_engine::{Durability, Options};
//! use cellar_table::{CellStore, FamilyOptions, ScanSpec, TableSchema};
//!
//! # fn main() -> cellar_table::Result<()> {
//! let store = CellStore::open("/tmp/db", Options::default())?;
//! store.create_table(TableSchema::new("users").family("info", FamilyOptions::default()))?;
//! let users = store.table("users")?;
//! users.put(b"alice", "info", b"email", None, b"a@example.com", Durability::Sync)?;
//! for cell in users.scan(ScanSpec::prefix(b"al"))? {
//!     let cell = cell?;
//!     println!("{:?} {}:{:?} = {:?}", cell.row, cell.family, cell.qualifier, cell.value);
//! }
//! # Ok(())
//! # }
//! ```

pub mod catalog;
pub mod cell_key;
pub mod error;
mod gc;
mod mutate;
pub mod scan;
pub mod schema;
mod store;
mod table;
pub mod timestamp;
mod writer;

pub use error::{Result, TableError};
pub use mutate::{Mutation, MutationBatch};
pub use scan::{CellRef, ColumnSelector, RowSelection, ScanSpec, Scanner, TimeRange};
pub use schema::{FamilyCompression, FamilyOptions, FamilySchema, TableSchema};
pub use store::CellStore;
pub use table::{Cell, Table};
pub use timestamp::{next_timestamp, reserve_timestamps};
pub use writer::{TableWriter, WriterOptions, DEFAULT_WRITE_BUFFER_BYTES};
