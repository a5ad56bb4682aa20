//! Cellar's storage engine: a log-structured merge tree for hundreds of millions of small
//! records. See `docs/ARCHITECTURE.md` for the layers and the data flow.
//!
//! The public API is what a user of the database needs: [`Db`] and its [`Options`],
//! [`WriteBatch`]es, [`DbIterator`]s, [`Snapshot`]s, bulk ingestion ([`IngestWriter`]),
//! [`Stats`], [`Error`]s, the compaction-filter hook ([`CompactionFilter`]), the I/O layer
//! ([`vfs`]), and read-only [`tools`] over the files of a database directory. Everything
//! else (the formats, the memtable, versions, compaction) is internal to the crate.
#![warn(missing_docs)]

pub mod error;
pub mod options;
pub mod tools;
pub mod vfs;

pub(crate) mod batch;
pub(crate) mod cache;
pub(crate) mod coding;
pub(crate) mod compaction;
mod db;
pub(crate) mod iter;
pub(crate) mod log;
pub(crate) mod manifest;
pub(crate) mod memtable;
mod memtable_filter;
pub(crate) mod range_del;
pub(crate) mod sst;
pub(crate) mod stats;
pub(crate) mod types;
pub(crate) mod version;

pub use batch::{Keyspace, WriteBatch};
pub use compaction::{CompactionFilter, CompactionFilterRun};
pub use db::{
    object_store_url, Db, DbIterator, FollowerStatus, IngestFiles, IngestWriter, ReadOptions,
    Snapshot,
};
pub use error::{Error, Result};
pub use options::{
    Compression, Durability, KeyspaceOptions, ObjectStoreOptions, Options, StorageLayout,
    WalLocation, WalMode, WriteOptions,
};
pub use stats::{KeyspaceStats, LevelStats, Stats};
/// Limits on one key and one value: a write over them is refused with
/// [`Error::InvalidArgument`], and layers above size their own keys to fit.
pub use types::{SeqNo, MAX_KEY_LEN, MAX_VALUE_LEN};
