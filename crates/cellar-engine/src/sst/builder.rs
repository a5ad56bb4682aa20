//! Writes an SST from internal keys added in increasing order: data blocks as they fill,
//! then the filter, index and properties blocks and the footer.
//!
//! The index is cut into partitions of about `index_partition_bytes` as it grows (each
//! with the bloom keys of its data blocks). At finish, a file with one partition is written
//! as version 1 (one filter, one index); otherwise as version 2: filter partitions, index
//! partitions, then a top-level index with one entry per partition (its last separator →
//! index and filter partition handles). Both layouts are in `docs/format/sstable.md`.

use crate::error::{Error, Result};
use crate::options::Compression;
use crate::sst::block::BlockBuilder;
use crate::sst::bloom::BloomBuilder;
use crate::sst::compress_skip::CompressionSkip;
use crate::sst::format::{
    block_crc, compress_block, mask_crc, BlockHandle, Footer, Properties, FORMAT_VERSION,
    FORMAT_VERSION_PARTITIONED,
};
use crate::sst::index::{encode_index_value, encode_top_level_value};
use crate::sst::{SstOptions, SstSummary};
use crate::types::{self, compare_internal, ValueKind};
use crate::vfs::WritableFile;

/// An entry (key and value) of at least this share of `block_size_bytes`, and at least
/// `LARGE_ENTRY_MIN_BYTES`, ends its data block.
///
/// Why: a point read checks the checksum of the whole block it reads, so its cost follows
/// the block's bytes, not the entry's. Four entries of 1 KiB in one 4 KiB block made a read
/// of one of them check four times the bytes it returns; in a block of their own, the
/// checksum reads the lines the copy of the value reads next. Below the floor, an index
/// entry per data entry would cost more than the checksum saves. The measurement:
/// docs/design/large-entry-blocks.md.
pub(crate) const LARGE_ENTRY_SHARE: usize = 4;
pub(crate) const LARGE_ENTRY_MIN_BYTES: usize = 512;

/// Whether an entry of `entry_bytes` (key and value) ends its block.
pub(crate) fn is_large_entry(entry_bytes: usize, block_size_bytes: usize) -> bool {
    entry_bytes >= (block_size_bytes / LARGE_ENTRY_SHARE).max(LARGE_ENTRY_MIN_BYTES)
}

/// Blocks are gathered into writes of about this size instead of one syscall per block.
const WRITE_BUFFER: usize = 64 << 10;

pub struct SstBuilder {
    file: Box<dyn WritableFile>,
    opts: SstOptions,
    data: BlockBuilder,
    /// The whole index, written as is when the file ends up with one partition.
    index: BlockBuilder,
    /// The index partition being filled, and the ones already cut.
    part_index: BlockBuilder,
    /// The separator (and trailer) of the last index entry: a partition's top-level key.
    last_separator: (Vec<u8>, Option<u64>),
    partitions: Vec<IndexPartition>,
    /// The bloom keys of every partition, told apart by `IndexPartition::bloom_end`.
    bloom: Option<BloomBuilder>,
    /// Bytes of the file so far, buffered or not.
    offset: u64,
    /// The end of the last range the OS was asked to write back.
    written_back: u64,
    out: Vec<u8>,
    /// The last flushed data block waits for the next key to choose its separator.
    pending: Option<BlockHandle>,
    last_key: Vec<u8>,
    props: Properties,
    /// Stops trying to compress data blocks while they do not compress.
    compress_skip: CompressionSkip,
}

/// A finished index partition, kept in memory until the file's end decides the layout.
struct IndexPartition {
    contents: Vec<u8>,
    /// The partition's last separator: the key of its top-level entry.
    last_separator: Vec<u8>,
    last_trailer: Option<u64>,
    /// Bloom hashes `[previous partition's bloom_end, bloom_end)` are this partition's.
    bloom_end: usize,
}

impl SstBuilder {
    pub fn new(file: Box<dyn WritableFile>, opts: SstOptions) -> Self {
        let mut props = Properties::new(opts.compression);
        props.bloom_bits_per_key = opts.bloom_bits_per_key;
        props.block_size_bytes = opts.block_size_bytes as u64;
        props.block_restart_interval = opts.block_restart_interval.max(1) as u64;
        props.min_seq = u64::MAX;
        SstBuilder {
            offset: file.len(),
            written_back: file.len(),
            file,
            data: BlockBuilder::new(opts.block_restart_interval),
            index: BlockBuilder::new(1),
            part_index: BlockBuilder::new(1),
            last_separator: (Vec::new(), None),
            partitions: Vec::new(),
            bloom: (opts.bloom_bits_per_key > 0)
                .then(|| BloomBuilder::new(opts.bloom_bits_per_key)),
            opts,
            out: Vec::new(),
            pending: None,
            last_key: Vec::new(),
            props,
            compress_skip: CompressionSkip::default(),
        }
    }

    /// Adds one entry. `ikey` must sort after every key added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let Some((ukey, trailer)) = types::split_internal(ikey) else {
            return Err(Error::InvalidArgument(
                "SST key shorter than an internal-key trailer".into(),
            ));
        };
        debug_assert!(
            self.props.num_entries == 0
                || compare_internal(&self.last_key, ikey) == std::cmp::Ordering::Less,
            "SST keys must be added in increasing order"
        );
        let new_user_key = self.props.num_entries == 0 || types::user_key(&self.last_key) != ukey;
        let mut cut = false;
        if let Some(h) = self.pending.take() {
            cut = self.add_index_entry(h, Some(ikey));
        }
        // A key whose versions straddle a partition boundary goes into both filters: a
        // lookup may be sent to either partition depending on its sequence number.
        if new_user_key || cut {
            if let Some(b) = &mut self.bloom {
                b.add_key(ukey);
            }
        }
        let (seq, kind) = types::unpack_trailer(trailer);
        let p = &mut self.props;
        if p.num_entries == 0 {
            p.smallest = ikey.to_vec();
        }
        p.num_entries += 1;
        if kind == ValueKind::Delete as u8 {
            p.num_deletions += 1;
        }
        p.min_seq = p.min_seq.min(seq);
        p.max_seq = p.max_seq.max(seq);
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;

        self.data.add(ikey, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        if is_large_entry(ikey.len() + value.len(), self.opts.block_size_bytes)
            || self.data.size_estimate() >= self.opts.block_size_bytes
        {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Bytes the file would have if finished now (index and filter estimated).
    pub fn estimated_file_size(&self) -> u64 {
        let pending = self.data.size_estimate() + self.index.size_estimate();
        let filter = self.bloom.as_ref().map_or(0, |b| b.estimated_len());
        self.offset + (pending + filter) as u64
    }

    pub fn finish(mut self) -> Result<SstSummary> {
        self.flush_data_block()?;
        if let Some(h) = self.pending.take() {
            self.add_index_entry(h, None);
        }
        if !self.part_index.is_empty() {
            self.cut_partition();
        }
        let (index, filter, version) = if self.partitions.len() > 1 {
            self.write_partitioned()?
        } else {
            self.write_single()?
        };

        let p = &mut self.props;
        if p.num_entries == 0 {
            p.min_seq = 0;
        }
        p.largest = self.last_key.clone();
        p.creation_time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let props_raw = p.encode();
        let properties = self.write_block(&props_raw, Compression::None)?.0;

        let footer = Footer {
            index,
            filter,
            properties,
            version,
        };
        let footer = footer.encode();
        self.out.extend_from_slice(&footer);
        self.offset += footer.len() as u64;
        self.flush_out()?;
        self.file.sync()?;
        let p = &self.props;
        Ok(SstSummary {
            file_size: self.offset,
            num_entries: p.num_entries,
            num_deletions: p.num_deletions,
            smallest: p.smallest.clone(),
            largest: p.largest.clone(),
            min_seq: p.min_seq,
            max_seq: p.max_seq,
        })
    }

    /// Version 1: one filter block, one index block. Returns (index, filter, version).
    fn write_single(&mut self) -> Result<(BlockHandle, BlockHandle, u32)> {
        let filter = match &self.bloom {
            Some(b) if b.num_keys() > 0 => {
                let bits = b.finish();
                // Bloom bits are random: compressing them would only cost CPU.
                self.write_block(&bits, Compression::None)?.0
            }
            _ => BlockHandle::default(),
        };
        let index_raw = self.index.finish();
        let index = self.write_block(&index_raw, self.opts.compression)?.0;
        self.props.index_bytes = index.len_with_trailer();
        self.props.filter_bytes = if filter.size > 0 {
            filter.len_with_trailer()
        } else {
            0
        };
        Ok((index, filter, FORMAT_VERSION))
    }

    /// Version 2: filter partitions, index partitions, top-level index (whose handle goes
    /// into the footer's index slot; the footer's filter slot stays (0, 0)).
    fn write_partitioned(&mut self) -> Result<(BlockHandle, BlockHandle, u32)> {
        let parts = std::mem::take(&mut self.partitions);
        let mut filters = Vec::with_capacity(parts.len());
        let mut bloom_start = 0;
        for part in &parts {
            let h = match self.bloom.as_ref() {
                Some(b) => {
                    let bits = b.finish_range(bloom_start..part.bloom_end);
                    self.write_block(&bits, Compression::None)?.0
                }
                None => BlockHandle::default(),
            };
            bloom_start = part.bloom_end;
            self.props.filter_bytes += if h.size > 0 { h.len_with_trailer() } else { 0 };
            filters.push(h);
        }
        let mut top = BlockBuilder::new(1);
        let mut value = Vec::with_capacity(32);
        for (part, filter) in parts.iter().zip(filters) {
            let h = self.write_block(&part.contents, self.opts.compression)?.0;
            self.props.index_bytes += h.len_with_trailer();
            value.clear();
            encode_top_level_value(h, filter, part.last_trailer, &mut value);
            top.add(&part.last_separator, &value);
        }
        let top_raw = top.finish();
        let index = self.write_block(&top_raw, self.opts.compression)?.0;
        self.props.index_bytes += index.len_with_trailer();
        self.props.num_index_partitions = parts.len() as u64;
        Ok((index, BlockHandle::default(), FORMAT_VERSION_PARTITIONED))
    }

    /// Closes the current index partition; its filter takes the bloom keys added so far.
    fn cut_partition(&mut self) {
        let bloom_end = self.bloom.as_ref().map_or(0, |b| b.mark());
        let (last_separator, last_trailer) = std::mem::take(&mut self.last_separator);
        self.partitions.push(IndexPartition {
            contents: self.part_index.finish(),
            last_separator,
            last_trailer,
            bloom_end,
        });
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let raw = self.data.finish();
        let codec = self.opts.compression;
        let tried = codec != Compression::None && self.compress_skip.should_try();
        let (h, used) = self.write_block(&raw, if tried { codec } else { Compression::None })?;
        if tried {
            self.compress_skip.record(used != Compression::None);
        }
        self.props.num_data_blocks += 1;
        self.props.data_bytes += h.len_with_trailer();
        self.pending = Some(h);
        Ok(())
    }

    /// Appends payload + trailer; returns the block's handle and the codec it was stored
    /// with (`None` when compressing did not pay).
    fn write_block(
        &mut self,
        raw: &[u8],
        codec: Compression,
    ) -> Result<(BlockHandle, Compression)> {
        let start = self.out.len();
        let used = compress_block(raw, codec, &mut self.out);
        let handle = BlockHandle::new(self.offset, (self.out.len() - start) as u64);
        let crc = mask_crc(block_crc(&self.out[start..], used as u8));
        self.out.push(used as u8);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.offset = handle.end();
        if self.out.len() >= WRITE_BUFFER {
            self.flush_out()?;
        }
        Ok((handle, used))
    }

    /// Hands the buffered bytes to the OS, and every `writeback_bytes` asks it to start
    /// writing them to the disk: the disk then writes while the file is built, and the
    /// `fdatasync` that ends it waits for the last stretch only.
    fn flush_out(&mut self) -> Result<()> {
        if !self.out.is_empty() {
            self.file.append(&self.out)?;
            self.out.clear();
        }
        // `out` is empty: every byte of the file so far is with the OS.
        let pending = self.offset - self.written_back;
        let every = self.opts.writeback_bytes;
        if every > 0 && pending >= every {
            self.file.start_writeback(self.written_back, pending)?;
            self.written_back = self.offset;
        }
        Ok(())
    }

    /// Index key for the block ending in `last_key`, given the first key of the next block.
    /// Usually a short user key strictly between the two (no trailer needed: it stands for
    /// the largest internal key of that user key); the full last key only when one user
    /// key's versions straddle the boundary. Returns whether the entry closed an index
    /// partition.
    fn add_index_entry(&mut self, handle: BlockHandle, next: Option<&[u8]>) -> bool {
        let last_user = types::user_key(&self.last_key);
        let mut value = Vec::with_capacity(20);
        let (sep, trailer) = match next {
            Some(next) if types::user_key(next) == last_user => {
                (last_user.to_vec(), Some(types::trailer(&self.last_key)))
            }
            Some(next) => (shortest_separator(last_user, types::user_key(next)), None),
            None => (short_successor(last_user), None),
        };
        encode_index_value(handle, trailer, &mut value);
        self.index.add(&sep, &value);
        self.part_index.add(&sep, &value);
        self.last_separator = (sep, trailer);
        let limit = self.opts.index_partition_bytes;
        if limit > 0 && self.part_index.size_estimate() >= limit {
            self.cut_partition();
            return true;
        }
        false
    }
}

/// A short `s` with `a <= s < b` (requires `a < b`). Takes the common prefix plus one byte
/// of `a` bumped by one when that stays below `b`; otherwise keeps `a`'s next byte and bumps
/// the first later byte of `a` that is not 0xff. Falls back to `a` itself.
pub fn shortest_separator(a: &[u8], b: &[u8]) -> Vec<u8> {
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if p >= a.len() || p >= b.len() {
        // One is a prefix of the other: `a` is a prefix of `b`, nothing shorter fits.
        return a.to_vec();
    }
    if a[p] < 0xff && a[p] + 1 < b[p] {
        let mut s = a[..=p].to_vec();
        s[p] += 1;
        return s;
    }
    // a[..=p] < b[..=p], so any bump after position p stays below b.
    for i in p + 1..a.len() {
        if a[i] < 0xff {
            let mut s = a[..=i].to_vec();
            s[i] += 1;
            return s;
        }
    }
    a.to_vec()
}

/// A short `s >= a`: `a` cut after its first non-0xff byte, which is bumped.
pub fn short_successor(a: &[u8]) -> Vec<u8> {
    match a.iter().position(|&x| x != 0xff) {
        Some(i) => {
            let mut s = a[..=i].to_vec();
            s[i] += 1;
            s
        }
        None => a.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn separators() {
        assert_eq!(shortest_separator(b"abc", b"abe"), b"abd");
        assert_eq!(shortest_separator(b"abcxyz", b"abd"), b"abcy");
        assert_eq!(shortest_separator(b"ab", b"abc"), b"ab");
        assert_eq!(shortest_separator(b"ab\xff\xff", b"ac"), b"ab\xff\xff");
        assert_eq!(shortest_separator(b"", b"a"), b"");
        assert_eq!(short_successor(b"\xff\xffa"), b"\xff\xffb");
        assert_eq!(short_successor(b"\xff"), b"\xff");
        assert_eq!(short_successor(b"abc"), b"b");
    }

    proptest! {
        #[test]
        fn separator_is_between(mut a in proptest::collection::vec(any::<u8>(), 0..6),
                                mut b in proptest::collection::vec(any::<u8>(), 0..6)) {
            if a == b { b.push(0); }
            if a > b { std::mem::swap(&mut a, &mut b); }
            let s = shortest_separator(&a, &b);
            prop_assert!(a <= s && s < b);
            prop_assert!(s.len() <= a.len());
            prop_assert!(short_successor(&a) >= a);
        }
    }
}
