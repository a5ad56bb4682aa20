//! A reader's index and filter: one resident index and filter (format version 1), or a
//! partitioned index (version 2) whose small top level is resident and whose index and
//! filter partitions are either pinned at open (while the database's metadata budget
//! allows) or read on demand through the block cache.
//!
//! Blocks are numbered file-wide ("ordinals", 0..num_blocks) in both layouts, so the
//! reader and its iterators never care which layout a file has: partition `p` holds
//! ordinals `first_block[p]..first_block[p + 1]`.

use std::ops::Deref;
use std::sync::Arc;

use crate::cache::Cached;
use crate::cache::MetadataBudget;
use crate::error::{Error, Result};
use crate::sst::block::Block;
use crate::sst::bloom::{key_hash, BloomFilter};
use crate::sst::format::{decode_block_slice, BlockHandle, Footer, Properties};
use crate::sst::index::{IndexBlock, IndexEntry};
use crate::sst::source::Source;
use crate::types;

/// Borrowed from the reader (pinned) or shared with the block cache (loaded on demand).
pub(crate) enum Held<'a, T> {
    Pinned(&'a T),
    Cached(Arc<T>),
}

impl<T> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Held::Pinned(t) => t,
            Held::Cached(t) => t,
        }
    }
}

/// A filter to probe: a whole filter block, or one partition's lines of a pinned file's
/// joined filter.
pub(crate) enum FilterRef<'a> {
    Whole(Held<'a, BloomFilter>),
    Lines {
        joined: &'a BloomFilter,
        first: u64,
        count: u64,
    },
}

impl FilterRef<'_> {
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    pub fn may_contain_hash(&self, h: u64) -> bool {
        match self {
            FilterRef::Whole(f) => f.may_contain_hash(h),
            FilterRef::Lines {
                joined,
                first,
                count,
            } => joined.may_contain_hash_in(h, *first, *count),
        }
    }

    pub fn prefetch(&self, h: u64) {
        match self {
            FilterRef::Whole(f) => f.prefetch(h),
            FilterRef::Lines {
                joined,
                first,
                count,
            } => joined.prefetch_in(h, *first, *count),
        }
    }
}

/// One partition's index and filter, ready to search.
pub(crate) struct Part<'a> {
    pub index: Held<'a, IndexBlock>,
    pub filter: Option<FilterRef<'a>>,
    /// Ordinal of the partition's first data block.
    pub first_block: usize,
}

// One per open file, inside the reader: boxing the larger variant would only add a pointer
// chase to every lookup.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Meta {
    Single {
        index: IndexBlock,
        filter: Option<BloomFilter>,
    },
    Partitioned(Partitions),
}

pub(crate) struct Partitions {
    /// Entry `p`: partition `p`'s last separator → its index partition.
    top: IndexBlock,
    /// Filter partition of each partition; empty when the file has no filter.
    filters: Vec<BlockHandle>,
    /// Ordinal of each partition's first data block, plus the total at the end.
    first_block: Vec<usize>,
    /// File offset of each partition's first data block, plus the data area's end.
    data_starts: Vec<u64>,
    /// Decoded at open while the budget allowed.
    pinned: Option<Pinned>,
}

/// A pinned file's partitions: the index partitions joined into one index over every data
/// block (a lookup then touches no per-partition structure), and the filter partitions.
struct Pinned {
    index: IndexBlock,
    filters: PinnedFilters,
}

enum PinnedFilters {
    None,
    /// Every partition's lines in one bit array (what this build writes).
    Joined {
        joined: BloomFilter,
        starts: Vec<u64>,
    },
    /// By partition, when their layouts differ.
    Separate(Vec<BloomFilter>),
}

impl PinnedFilters {
    fn get(&self, i: usize) -> Option<FilterRef<'_>> {
        match self {
            PinnedFilters::None => None,
            PinnedFilters::Joined { joined, starts } => {
                let (first, end) = (*starts.get(i)?, *starts.get(i + 1)?);
                Some(FilterRef::Lines {
                    joined,
                    first,
                    count: end - first,
                })
            }
            PinnedFilters::Separate(v) => v.get(i).map(|f| FilterRef::Whole(Held::Pinned(f))),
        }
    }

    fn resident_bytes(&self) -> usize {
        match self {
            PinnedFilters::None => 0,
            PinnedFilters::Joined { joined, starts } => filter_bytes(joined) + starts.len() * 8,
            PinnedFilters::Separate(v) => v.iter().map(filter_bytes).sum(),
        }
    }
}

/// What opening charged to the metadata budget (released when the reader is dropped).
pub(crate) struct Opened {
    pub meta: Meta,
    pub charged_bytes: u64,
}

impl Meta {
    pub fn open(
        src: &Source,
        footer: &Footer,
        props: &Properties,
        budget: &MetadataBudget,
    ) -> Result<Opened> {
        if footer.is_partitioned() {
            return Partitions::open(src, footer, props, budget);
        }
        let index = IndexBlock::new(src.read_block(footer.index)?, src.meta_limit)?;
        let filter = if footer.has_filter() {
            let h = footer.filter;
            Some(BloomFilter::from_block(&src.path, h.offset, src.read(h)?)?)
        } else {
            None
        };
        if props.num_data_blocks != index.len() as u64 {
            return Err(src.corruption(
                footer.index.offset,
                "index entry count disagrees with properties",
            ));
        }
        let charged_bytes =
            (index.resident_bytes() + filter.as_ref().map_or(0, filter_bytes)) as u64;
        budget.charge(charged_bytes);
        Ok(Opened {
            meta: Meta::Single { index, filter },
            charged_bytes,
        })
    }

    pub fn num_blocks(&self) -> usize {
        match self {
            Meta::Single { index, .. } => index.len(),
            Meta::Partitioned(p) => p.first_block.last().copied().unwrap_or(0),
        }
    }

    pub fn has_filter(&self) -> bool {
        match self {
            Meta::Single { filter, .. } => filter.is_some(),
            Meta::Partitioned(p) => !p.filters.is_empty(),
        }
    }

    pub fn num_partitions(&self) -> usize {
        match self {
            Meta::Single { .. } => 1,
            Meta::Partitioned(p) => p.top.len(),
        }
    }

    /// Whether every partition is resident (always, for an unpartitioned file).
    pub fn is_pinned(&self) -> bool {
        match self {
            Meta::Single { .. } => true,
            Meta::Partitioned(p) => p.pinned.is_some(),
        }
    }

    /// Bytes held for the life of the reader.
    pub fn resident_bytes(&self) -> u64 {
        let bytes = match self {
            Meta::Single { index, filter } => {
                index.resident_bytes() + filter.as_ref().map_or(0, filter_bytes)
            }
            Meta::Partitioned(p) => p.top_bytes() + p.pinned_bytes(),
        };
        bytes as u64
    }

    /// The partition whose data blocks hold the first entry >= the internal key
    /// `user_key ++ trailer`; `None` when that is past every key of the file.
    pub fn partition_of(&self, user_key: &[u8], trailer: u64) -> Result<Option<usize>> {
        match self {
            Meta::Single { .. } => Ok(Some(0)),
            Meta::Partitioned(p) => p.top.find_split(user_key, trailer),
        }
    }

    /// The partition holding block `ord`.
    pub fn partition_of_block(&self, ord: usize) -> usize {
        match self {
            Meta::Single { .. } => 0,
            Meta::Partitioned(p) => p
                .first_block
                .partition_point(|&f| f <= ord)
                .saturating_sub(1),
        }
    }

    /// Partition `i`, from memory or through the cache (reading it on a miss).
    pub fn part<'a>(&'a self, src: &Source, i: usize, with_filter: bool) -> Result<Part<'a>> {
        match self {
            Meta::Single { index, filter } => Ok(Part {
                index: Held::Pinned(index),
                filter: filter.as_ref().map(|f| FilterRef::Whole(Held::Pinned(f))),
                first_block: 0,
            }),
            Meta::Partitioned(p) => p.part(src, i, with_filter),
        }
    }

    /// The one block that can hold the first entry >= `target`, by ordinal.
    pub fn find_block(&self, src: &Source, target: &[u8]) -> Result<Option<usize>> {
        let (tu, tt) = types::split_internal(target).unwrap_or((target, 0));
        let Some(i) = self.partition_of(tu, tt)? else {
            return Ok(None);
        };
        let part = self.part(src, i, false)?;
        Ok(part.index.find(target)?.map(|b| part.first_block + b))
    }

    pub fn handle(&self, src: &Source, ord: usize) -> Result<BlockHandle> {
        let part = self.part(src, self.partition_of_block(ord), false)?;
        part.index.handle(ord.wrapping_sub(part.first_block))
    }

    /// Every data block's index entry, in file order.
    pub fn entries(&self, src: &Source) -> Result<Vec<IndexEntry>> {
        let mut out = Vec::with_capacity(self.num_blocks());
        // One index over every block, or one per partition.
        let indexes = match self {
            Meta::Partitioned(Partitions {
                pinned: Some(_), ..
            }) => 1,
            _ => self.num_partitions(),
        };
        for i in 0..indexes {
            let part = self.part(src, i, false)?;
            for j in 0..part.index.len() {
                out.push(part.index.entry(j)?);
            }
        }
        Ok(out)
    }

    /// Reads every metadata block from disk again, checking each crc and decoding it the
    /// way a lookup would (a partitioned file's partitions one by one).
    pub fn verify(&self, src: &Source, footer: &Footer) -> Result<()> {
        match self {
            Meta::Single { .. } => {
                src.read(footer.index)?;
                if footer.has_filter() {
                    src.read(footer.filter)?;
                }
                Ok(())
            }
            Meta::Partitioned(p) => {
                src.read(footer.index)?;
                for i in 0..p.top.len() {
                    p.load_index(src, i)?;
                    if !p.filters.is_empty() {
                        p.load_filter(src, i)?;
                    }
                }
                Ok(())
            }
        }
    }
}

fn filter_bytes(f: &BloomFilter) -> usize {
    f.resident_bytes() + std::mem::size_of::<BloomFilter>()
}

impl Partitions {
    fn open(
        src: &Source,
        footer: &Footer,
        props: &Properties,
        budget: &MetadataBudget,
    ) -> Result<Opened> {
        let (top, filters, index_start) = Self::read_top_level(src, footer, props)?;
        let mut parts = Partitions {
            top,
            filters,
            first_block: vec![0],
            data_starts: vec![0],
            pinned: None,
        };
        let indexes = parts.read_index_partitions(src, props, index_start, footer.index.offset)?;
        let top_bytes = parts.top_bytes() as u64;
        budget.charge(top_bytes);
        let charged_bytes = match parts.pin_or_cache(src, indexes, budget) {
            Ok(pinned_bytes) => top_bytes + pinned_bytes,
            Err(e) => {
                budget.release(top_bytes);
                return Err(e);
            }
        };
        Ok(Opened {
            meta: Meta::Partitioned(parts),
            charged_bytes,
        })
    }

    /// The top-level index and the filter partitions' handles, checked against the
    /// properties and the file's layout (data | filter partitions | index partitions | top
    /// level | properties); and where the index partitions start.
    fn read_top_level(
        src: &Source,
        footer: &Footer,
        props: &Properties,
    ) -> Result<(IndexBlock, Vec<BlockHandle>, u64)> {
        let top_at = footer.index.offset;
        let bad = |why: &str| Err(src.corruption(top_at, why));
        let Some(index_start) = props.data_bytes.checked_add(props.filter_bytes) else {
            return bad("properties give impossible section sizes");
        };
        let (top, mut filters) =
            IndexBlock::decode(src.read_block(footer.index)?, index_start, top_at, true)?;
        if top.is_empty() || top.len() as u64 != props.num_index_partitions {
            return bad("top-level index entry count disagrees with properties");
        }
        if top.end_offset() != top_at {
            return bad("index partitions do not end where the top level starts");
        }
        if filters.first() == Some(&BlockHandle::default()) {
            filters.clear();
        }
        let mut filter_end = props.data_bytes;
        for h in &filters {
            if h.offset != filter_end {
                return bad("filter partitions are not contiguous after the data blocks");
            }
            filter_end = h.end();
        }
        if filter_end != index_start {
            return bad("filter partitions do not end where the index partitions start");
        }
        Ok((top, filters, index_start))
    }

    /// All index partitions in one read: they are needed to learn where each partition's
    /// data blocks start (recorded in `first_block` and `data_starts`), and pinned if the
    /// budget allows.
    fn read_index_partitions(
        &mut self,
        src: &Source,
        props: &Properties,
        index_start: u64,
        top_at: u64,
    ) -> Result<Vec<IndexBlock>> {
        let region = src.pread(index_start, top_at - index_start)?;
        let mut indexes = Vec::with_capacity(self.top.len());
        for i in 0..self.top.len() {
            let h = self.top.handle(i)?;
            let from = (h.offset - index_start) as usize;
            let raw = region
                .get(from..from + h.len_with_trailer() as usize)
                .ok_or_else(|| src.corruption(h.offset, "index partition outside its region"))?;
            let data = decode_block_slice(&src.path, h.offset, raw)?;
            let block = Block::new(data, src.shared_path.clone(), h.offset)?;
            let start = self.data_starts[i];
            let (ix, _) = IndexBlock::decode(block, start, props.data_bytes, false)?;
            self.check_partition(i, &ix)?;
            self.first_block.push(self.first_block[i] + ix.len());
            self.data_starts.push(ix.end_offset());
            indexes.push(ix);
        }
        if self.data_starts.last() != Some(&props.data_bytes)
            || self.first_block.last().map(|&n| n as u64) != Some(props.num_data_blocks)
        {
            return Err(src.corruption(
                top_at,
                "index partitions disagree with the properties' data blocks",
            ));
        }
        Ok(indexes)
    }

    /// Pins the partitions (joined index, joined filters) if the budget has room for them,
    /// and returns the bytes charged for them; otherwise puts the index partitions just
    /// decoded into the block cache, where lookups look for them, instead of reading them
    /// again on first use, and returns 0.
    fn pin_or_cache(
        &mut self,
        src: &Source,
        indexes: Vec<IndexBlock>,
        budget: &MetadataBudget,
    ) -> Result<u64> {
        let filter_len: u64 = self
            .filters
            .iter()
            .map(|h| h.size + std::mem::size_of::<BloomFilter>() as u64)
            .sum();
        // The partitions' own sizes: joining them below changes this a little, and what is
        // kept is charged then.
        let index_len: u64 = indexes.iter().map(|ix| ix.resident_bytes() as u64).sum();
        let want = index_len + filter_len;
        if !budget.try_charge(want) {
            for (i, ix) in indexes.into_iter().enumerate() {
                let h = self.top.handle(i)?;
                src.cache
                    .insert_entry(src.file_number, h.offset, Cached::Index(Arc::new(ix)));
            }
            return Ok(0);
        }
        let pinned = IndexBlock::concat(&indexes).and_then(|index| {
            drop(indexes);
            self.pin(src, index)
        });
        if let Err(e) = pinned {
            budget.release(want);
            return Err(e);
        }
        // Joining the filters changes their size a little: charge what is kept.
        let kept = self.pinned_bytes() as u64;
        if kept < want {
            budget.release(want - kept);
        } else {
            budget.charge(kept - want);
        }
        Ok(kept)
    }

    /// Decodes every filter partition (one read) and keeps them with the joined index.
    fn pin(&mut self, src: &Source, index: IndexBlock) -> Result<()> {
        let mut filters: Vec<BloomFilter> = Vec::with_capacity(self.filters.len());
        if let (Some(first), Some(last)) = (self.filters.first(), self.filters.last()) {
            let start = first.offset;
            let region = src.pread(start, last.end() - start)?;
            for h in &self.filters {
                let from = (h.offset - start) as usize;
                let raw = region
                    .get(from..from + h.len_with_trailer() as usize)
                    .ok_or_else(|| src.corruption(h.offset, "filter outside its region"))?;
                let data = decode_block_slice(&src.path, h.offset, raw)?;
                filters.push(BloomFilter::from_block(&src.path, h.offset, data)?);
            }
        }
        let filters = if filters.is_empty() {
            PinnedFilters::None
        } else {
            match BloomFilter::concat(&filters) {
                Some((joined, starts)) => PinnedFilters::Joined { joined, starts },
                None => PinnedFilters::Separate(filters),
            }
        };
        self.pinned = Some(Pinned { index, filters });
        Ok(())
    }

    /// A partition must cover at least one block and end with its top-level separator,
    /// or a lookup routed to it by the top level could miss its block.
    fn check_partition(&self, i: usize, ix: &IndexBlock) -> Result<()> {
        let top = self.top.entry(i)?;
        let last = ix.len().checked_sub(1).map(|j| ix.entry(j)).transpose()?;
        match last {
            Some(e) if e.user_key == top.user_key && e.trailer == top.trailer => Ok(()),
            _ => Err(Error::corruption(
                &*self.top_path(),
                top.handle.offset,
                "index partition does not end with its top-level separator",
            )),
        }
    }

    fn top_path(&self) -> Arc<std::path::Path> {
        self.top.path()
    }

    fn top_bytes(&self) -> usize {
        self.top.resident_bytes()
            + self.filters.len() * std::mem::size_of::<BlockHandle>()
            + (self.first_block.len() + self.data_starts.len()) * 8
    }

    fn pinned_bytes(&self) -> usize {
        self.pinned
            .as_ref()
            .map_or(0, |p| p.index.resident_bytes() + p.filters.resident_bytes())
    }

    fn part<'a>(&'a self, src: &Source, i: usize, with_filter: bool) -> Result<Part<'a>> {
        let first_block = *self
            .first_block
            .get(i)
            .ok_or_else(|| src.corruption(self.top_offset(), "partition out of range"))?;
        if let Some(p) = &self.pinned {
            // The joined index numbers blocks file-wide.
            return Ok(Part {
                index: Held::Pinned(&p.index),
                filter: p.filters.get(i),
                first_block: 0,
            });
        }
        let filter = if with_filter && !self.filters.is_empty() {
            Some(FilterRef::Whole(Held::Cached(self.load_filter(src, i)?)))
        } else {
            None
        };
        Ok(Part {
            index: Held::Cached(self.load_index(src, i)?),
            filter,
            first_block,
        })
    }

    fn top_offset(&self) -> u64 {
        self.top.offset()
    }

    fn load_index(&self, src: &Source, i: usize) -> Result<Arc<IndexBlock>> {
        let h = self.top.handle(i)?;
        if let Some(ix) = src.cache_lookup(|c| c.get_index(src.file_number, h.offset)) {
            return Ok(ix);
        }
        let block = src.read_block(h)?;
        let (start, end) = (self.data_starts[i], self.data_starts[i + 1]);
        let (ix, _) = IndexBlock::decode(block, start, end, false)?;
        let blocks = self.first_block[i + 1] - self.first_block[i];
        if ix.end_offset() != end || ix.len() != blocks {
            return Err(src.corruption(h.offset, "index partition changed since open"));
        }
        self.check_partition(i, &ix)?;
        let ix = Arc::new(ix);
        src.cache
            .insert_entry(src.file_number, h.offset, Cached::Index(ix.clone()));
        Ok(ix)
    }

    fn load_filter(&self, src: &Source, i: usize) -> Result<Arc<BloomFilter>> {
        let h = *self
            .filters
            .get(i)
            .ok_or_else(|| src.corruption(self.top_offset(), "filter partition out of range"))?;
        if let Some(f) = src.cache_lookup(|c| c.get_filter(src.file_number, h.offset)) {
            return Ok(f);
        }
        let f = Arc::new(BloomFilter::from_block(&src.path, h.offset, src.read(h)?)?);
        src.cache
            .insert_entry(src.file_number, h.offset, Cached::Filter(f.clone()));
        Ok(f)
    }
}
