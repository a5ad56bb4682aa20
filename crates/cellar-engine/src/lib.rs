//! Cellar's storage engine: a log-structured merge tree for hundreds of millions of small
//! records. See `docs/ARCHITECTURE.md` for the layers and the data flow.
#![deny(clippy::unwrap_used)]

pub mod coding;
pub mod error;
pub mod log;
pub mod manifest;
pub mod options;
pub mod sst;
pub mod stats;
pub mod types;
pub mod vfs;

pub use error::{Error, Result};
pub use options::{Compression, Durability, KeyspaceOptions, Options, WriteOptions};
pub use stats::Stats;

pub mod batch;
pub mod compaction;
mod db;
pub mod iter;
pub mod memtable;
mod memtable_filter;
pub mod range_del;
pub mod version;

pub use batch::{Keyspace, WriteBatch};
pub use db::{Db, DbIterator, IngestFiles, IngestWriter, ReadOptions, Snapshot};
