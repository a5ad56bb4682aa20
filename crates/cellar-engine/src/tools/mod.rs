//! Read-only tools over the files of a database directory, for `cellar inspect` and
//! `cellar check` (and for tests that look at what is on disk): decode an SST section by
//! section, read a WAL's records and batches, replay a manifest into per-keyspace levels, and
//! verify every checksum of a directory or of a database in an object store (`objects`).
//! Nothing here opens a database, takes its lock, or creates, modifies or deletes a file;
//! the caller reads the bytes and prints the results. The one exception is `backup`, which
//! writes the destination of a copy (`cellar backup` and `restore`), never its source.
//!
//! The types these functions return are the engine's own descriptions of its formats
//! (`docs/format/`), re-exported here and nowhere else, so that a format and its tool stay
//! one definition.

pub mod backup;
pub mod check;
pub mod keys;
pub mod log;
pub mod manifest;
pub mod objects;
pub mod sst;
