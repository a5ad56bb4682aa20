//! One SST decoded section by section, straight from its bytes, so that a damaged section is
//! reported where it is and the sections before it can still be shown (`cellar inspect sst`).
//! Every section is validated the way the reader validates it at open.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::options::Compression;
use crate::sst::bloom::BloomFilter;
use crate::sst::format::{check_block, decode_block};
use crate::sst::{Block, BlockIter, IndexBlock};
use crate::vfs::Vfs;

pub use crate::sst::format::{
    BlockHandle, Footer, Properties, FOOTER_LEN, FORMAT_VERSION, FORMAT_VERSION_PARTITIONED, MAGIC,
    MAX_BLOCK_LEN,
};
pub use crate::sst::IndexEntry;

/// The bytes of one SST file.
pub struct SstFile {
    path: PathBuf,
    shared_path: Arc<Path>,
    bytes: Vec<u8>,
    /// Offset of the footer: every block ends at or before it.
    meta_limit: u64,
}

/// An index block (a file's single-level index, the top level of a partitioned index, or
/// one partition), its entries decoded one at a time.
pub struct IndexView(IndexBlock);

/// A bloom filter (or filter partition) as decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterInfo {
    /// `cache-local` or `classic`.
    pub layout: &'static str,
    /// Bits in the filter.
    pub bits: u64,
    /// Hash functions per key.
    pub k: u32,
    /// Decoded size (without the block trailer).
    pub bytes: usize,
}

/// A data block as checked and decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataBlockInfo {
    /// The codec it was stored with.
    pub compression: Compression,
    /// Decompressed size.
    pub uncompressed_bytes: usize,
    /// Entries in the block.
    pub entries: u64,
}

/// A decoded data block, whose entries are read with [`DataBlock::entries`].
pub struct DataBlock(Arc<Block>);

/// A cursor over a data block's entries, in order: `valid`, `key` (an internal key),
/// `value`, `next`, and `status` once it stops.
pub struct BlockEntries(BlockIter);

impl SstFile {
    /// `bytes` read from `path`. A file shorter than a footer is corruption.
    pub fn new(path: &Path, bytes: Vec<u8>) -> Result<SstFile> {
        if bytes.len() < FOOTER_LEN {
            return Err(Error::corruption(
                path,
                0,
                format!("file is {} bytes, shorter than an SST footer", bytes.len()),
            ));
        }
        let meta_limit = (bytes.len() - FOOTER_LEN) as u64;
        Ok(SstFile {
            path: path.to_path_buf(),
            shared_path: Arc::from(path),
            bytes,
            meta_limit,
        })
    }

    /// Reads the whole file through `vfs`.
    pub fn read(vfs: &dyn Vfs, path: &Path) -> Result<SstFile> {
        SstFile::new(path, vfs.read_all(path)?)
    }

    /// Where the footer starts.
    pub fn footer_offset(&self) -> u64 {
        self.meta_limit
    }

    /// Decodes and checks the footer.
    pub fn footer(&self) -> Result<Footer> {
        let at = self.meta_limit;
        Footer::decode(&self.path, at, &self.bytes[at as usize..])
    }

    /// Decodes the properties block the footer points to.
    pub fn properties(&self, footer: &Footer) -> Result<Properties> {
        let h = footer.properties;
        Properties::decode(&self.path, h.offset, &self.contents(h)?)
    }

    /// The single-level index of an unpartitioned (version 1) file.
    pub fn index(&self, footer: &Footer) -> Result<IndexView> {
        let block = self.owned_block(footer.index)?;
        Ok(IndexView(IndexBlock::new(block, self.meta_limit)?))
    }

    /// The top level of a partitioned (version 2) file's index: one entry per partition
    /// (its last separator → the partition's index block), and each partition's filter
    /// handle ((0, 0) when the file has no filters).
    pub fn top_level_index(
        &self,
        footer: &Footer,
        props: &Properties,
    ) -> Result<(IndexView, Vec<BlockHandle>)> {
        let index_start = props.data_bytes.saturating_add(props.filter_bytes);
        let block = self.owned_block(footer.index)?;
        let (top, filters) = IndexBlock::decode(block, index_start, footer.index.offset, true)?;
        Ok((IndexView(top), filters))
    }

    /// One index partition, whose data blocks start at `data_start` (where the previous
    /// partition's end) and end at or before `data_limit`.
    pub fn partition_index(
        &self,
        h: BlockHandle,
        data_start: u64,
        data_limit: u64,
    ) -> Result<IndexView> {
        let block = self.owned_block(h)?;
        Ok(IndexView(
            IndexBlock::decode(block, data_start, data_limit, false)?.0,
        ))
    }

    /// A filter block or filter partition.
    pub fn filter(&self, h: BlockHandle) -> Result<FilterInfo> {
        let data = self.contents(h)?;
        let bytes = data.len();
        let filter = BloomFilter::from_block(&self.path, h.offset, data)?;
        let (k, bits, layout) = filter.describe();
        Ok(FilterInfo {
            layout,
            bits,
            k,
            bytes,
        })
    }

    /// Checks a data block's checksum, decodes it and counts its entries.
    pub fn data_block_info(&self, h: BlockHandle) -> Result<DataBlockInfo> {
        let compression = check_block(&self.path, h.offset, self.raw(h)?)?;
        let block = self.data_block(h)?;
        let mut it = block.entries();
        let mut entries = 0;
        while it.valid() {
            entries += 1;
            it.next();
        }
        it.status()?;
        Ok(DataBlockInfo {
            compression,
            uncompressed_bytes: block.0.data().len(),
            entries,
        })
    }

    /// Checks and decodes the data block at `h`.
    pub fn data_block(&self, h: BlockHandle) -> Result<DataBlock> {
        Ok(DataBlock(Arc::new(self.owned_block(h)?)))
    }

    fn raw(&self, h: BlockHandle) -> Result<&[u8]> {
        if h.size > MAX_BLOCK_LEN || h.end() > self.meta_limit {
            return Err(Error::corruption(
                &self.path,
                h.offset,
                format!(
                    "block handle (offset {}, size {}) outside the file",
                    h.offset, h.size
                ),
            ));
        }
        // In range: end <= meta_limit <= bytes.len().
        Ok(&self.bytes[h.offset as usize..h.end() as usize])
    }

    /// Checks and decompresses a block.
    fn contents(&self, h: BlockHandle) -> Result<Vec<u8>> {
        decode_block(&self.path, h.offset, self.raw(h)?.to_vec())
    }

    fn owned_block(&self, h: BlockHandle) -> Result<Block> {
        Block::new(self.contents(h)?, self.shared_path.clone(), h.offset)
    }
}

impl IndexView {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the index has no entry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `i`th entry.
    pub fn entry(&self, i: usize) -> Result<IndexEntry> {
        self.0.entry(i)
    }

    /// The block handle of the `i`th entry.
    pub fn handle(&self, i: usize) -> Result<BlockHandle> {
        self.0.handle(i)
    }

    /// Where the blocks this index covers end.
    pub fn end_offset(&self) -> u64 {
        self.0.end_offset()
    }
}

impl DataBlock {
    /// A cursor at the block's first entry.
    pub fn entries(&self) -> BlockEntries {
        let mut it = self.0.iter();
        it.seek_to_first();
        BlockEntries(it)
    }
}

impl BlockEntries {
    /// Whether the cursor is at an entry.
    pub fn valid(&self) -> bool {
        self.0.valid()
    }

    /// REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        self.0.key()
    }

    /// REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        self.0.value()
    }

    /// Moves to the next entry.
    pub fn next(&mut self) {
        self.0.next();
    }

    /// The error that stopped the cursor, if any.
    pub fn status(&self) -> Result<()> {
        self.0.status()
    }
}
