//! Sorted string tables: immutable files of internal keys in `compare_internal` order.
//!
//! File layout (all integers little-endian; full byte-level description in
//! `docs/format/sstable.md`):
//!
//! ```text
//! version 1: data blocks | filter block? | index block | properties block | footer
//! version 2: data blocks | filter partitions? | index partitions | top-level index
//!            | properties block | footer
//! ```
//!
//! Every block on disk is `payload ++ type: u8 ++ crc: u32`, where `type` is the
//! [`Compression`] codec of the payload and `crc` is the masked crc32c of `payload ++ type`.
//! A compressed payload is `varint uncompressed_len ++ codec output` (lz4 block format or a
//! zstd frame); blocks whose compression saves less than 1/8 are stored uncompressed.
//!
//! - Data blocks ([`block`]): prefix-compressed entries with restart points, cut once the
//!   uncompressed size reaches `block_size_bytes`.
//! - Filter block ([`bloom`]): one bloom filter over the file's distinct user keys.
//! - Index block ([`index`]): one entry per data block, restart interval 1. Key = a short
//!   user key `S` with `last_key(block) <= (S, trailer 0) < first_key(next block)`; value =
//!   varint offset, varint size, and an 8-byte trailer only when one user key's versions
//!   straddle the boundary (then `S` + trailer is exactly the block's last internal key).
//! - Version 2, when the index outgrows `index_partition_bytes`: index partitions (index
//!   blocks over contiguous runs of data blocks), one filter partition per index partition,
//!   and a top-level index block whose entry per partition is its last separator → varint
//!   index partition handle, varint filter partition handle, optional trailer (`meta.rs`
//!   reads both versions).
//! - Properties block ([`format::Properties`]): counts, sequence range, key range, settings.
//! - Footer ([`format::Footer`]), 64 bytes: index, filter and properties handles as fixed u64
//!   pairs, format version u32, masked crc32c of the preceding 52 bytes, magic "CELLRSST".

pub mod block;
pub mod bloom;
pub mod builder;
mod compress_skip;
pub mod format;
pub(crate) mod head_tree;
pub mod index;
mod iterator;
mod mapped;
mod meta;
mod open_file;
pub(crate) mod prefetch;
mod readahead;
pub mod reader;
mod source;
mod suffixes;

#[cfg(test)]
mod partition_tests;
#[cfg(test)]
mod tests;

pub use block::{Block, BlockIter};
pub use builder::SstBuilder;
pub use index::{IndexBlock, IndexEntry};
pub use iterator::SstIterator;
pub use reader::{Landing, LookupResult, SstReader};

use crate::options::{Compression, KeyspaceOptions, Options};

/// The subset of [`Options`] that shapes an SST file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstOptions {
    /// Uncompressed size at which a data block is cut.
    pub block_size_bytes: usize,
    /// Entries between full keys in a data block (values below 1 act as 1).
    pub block_restart_interval: usize,
    pub compression: Compression,
    /// 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Target size of one index partition; 0 never partitions (see `Options`).
    pub index_partition_bytes: usize,
    /// Bytes written between writeback hints; 0: none (see `Options::sst_writeback_bytes`).
    pub writeback_bytes: u64,
}

impl SstOptions {
    pub fn from_options(o: &Options) -> Self {
        SstOptions {
            block_size_bytes: o.block_size_bytes,
            block_restart_interval: o.block_restart_interval,
            compression: o.compression,
            bloom_bits_per_key: o.bloom_bits_per_key,
            index_partition_bytes: o.index_partition_bytes,
            writeback_bytes: o.sst_writeback_bytes,
        }
    }
}

impl SstOptions {
    /// The database's settings with a keyspace's overrides applied.
    pub fn for_keyspace(o: &Options, ks: &KeyspaceOptions) -> Self {
        SstOptions {
            block_size_bytes: ks.block_size_bytes.unwrap_or(o.block_size_bytes),
            block_restart_interval: o.block_restart_interval,
            compression: ks.compression.unwrap_or(o.compression),
            bloom_bits_per_key: ks.bloom_bits_per_key.unwrap_or(o.bloom_bits_per_key),
            index_partition_bytes: o.index_partition_bytes,
            writeback_bytes: o.sst_writeback_bytes,
        }
    }

    /// The filter density of a compaction's output (see `Options::bloom_bits_skew`):
    /// `bottommost` when no deeper level holds data in its key range.
    pub fn skewed(mut self, bottommost: bool, skew: u32) -> Self {
        if self.bloom_bits_per_key > 0 {
            self.bloom_bits_per_key = if bottommost {
                self.bloom_bits_per_key.saturating_sub(skew).max(1)
            } else {
                self.bloom_bits_per_key.saturating_add(skew)
            };
        }
        self
    }
}

impl Default for SstOptions {
    fn default() -> Self {
        SstOptions::from_options(&Options::default())
    }
}

/// What a finished file holds; `smallest`/`largest` are internal keys (empty if no entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstSummary {
    pub file_size: u64,
    pub num_entries: u64,
    pub num_deletions: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub min_seq: u64,
    pub max_seq: u64,
}
