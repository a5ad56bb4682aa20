//! `cellar inspect sst`: footer, properties, index, filter, data blocks and (optionally)
//! entries of one SST, decoded straight from the file's bytes so that a damaged section is
//! reported where it is and the sections before it are still shown.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use cellar_engine::iter::InternalIterator;
use cellar_engine::sst::bloom::BloomFilter;
use cellar_engine::sst::format::{
    check_block, decode_block, BlockHandle, Footer, Properties, FOOTER_LEN, MAGIC, MAX_BLOCK_LEN,
};
use cellar_engine::sst::{Block, IndexBlock, IndexEntry};
use cellar_engine::Error;

use crate::dbdir::read_input;
use crate::error::{CliResult, Outcome};
use crate::show::{
    compression_name, count, escape, escape_truncated, internal_key, seq_range, VALUE_PREVIEW,
};

/// Index separators shown before "... and N more".
const INDEX_PREVIEW: usize = 8;

pub struct SstArgs<'a> {
    pub path: &'a Path,
    pub entries: bool,
    pub limit: Option<usize>,
}

struct SstFile<'a> {
    path: &'a Path,
    shared_path: Arc<Path>,
    bytes: Vec<u8>,
    /// Offset of the footer: every block ends at or before it.
    meta_limit: u64,
}

impl SstFile<'_> {
    fn raw(&self, h: BlockHandle) -> Result<&[u8], Error> {
        if h.size > MAX_BLOCK_LEN || h.end() > self.meta_limit {
            return Err(Error::corruption(
                self.path,
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
    fn contents(&self, h: BlockHandle) -> Result<Vec<u8>, Error> {
        decode_block(self.path, h.offset, self.raw(h)?.to_vec())
    }

    fn owned_block(&self, h: BlockHandle) -> Result<Block, Error> {
        Block::new(self.contents(h)?, self.shared_path.clone(), h.offset)
    }

    fn block(&self, h: BlockHandle) -> Result<Arc<Block>, Error> {
        Ok(Arc::new(self.owned_block(h)?))
    }
}

pub fn run(args: &SstArgs<'_>, out: &mut dyn Write) -> CliResult<Outcome> {
    let bytes = read_input(args.path)?;
    writeln!(out, "sst: {}", args.path.display())?;
    writeln!(out, "file size: {} bytes", bytes.len())?;
    if bytes.len() < FOOTER_LEN {
        return Err(Error::corruption(
            args.path,
            0,
            format!("file is {} bytes, shorter than an SST footer", bytes.len()),
        )
        .into());
    }
    let meta_limit = (bytes.len() - FOOTER_LEN) as u64;
    let footer = Footer::decode(args.path, meta_limit, &bytes[meta_limit as usize..])?;
    let f = SstFile {
        path: args.path,
        shared_path: Arc::from(args.path),
        bytes,
        meta_limit,
    };
    print_footer(out, &footer, meta_limit)?;

    let props = Properties::decode(
        args.path,
        footer.properties.offset,
        &f.contents(footer.properties)?,
    )?;
    print_properties(out, &props)?;

    let mut outcome = Outcome::Clean;
    let entries = if footer.is_partitioned() {
        let (entries, o) = print_partitions(out, &f, &footer, &props)?;
        outcome = o;
        entries
    } else {
        let index = IndexBlock::new(f.owned_block(footer.index)?, meta_limit)?;
        (0..index.len())
            .map(|i| index.entry(i))
            .collect::<Result<Vec<_>, _>>()?
    };
    print_index(out, &entries)?;
    if props.num_data_blocks != entries.len() as u64 {
        writeln!(
            out,
            "  ERROR: the index has {} entries but the properties record {} data blocks",
            entries.len(),
            props.num_data_blocks
        )?;
        outcome = Outcome::Damaged;
    }

    if !footer.is_partitioned() {
        print_filter(out, &f, &footer)?;
    }

    let handles: Vec<BlockHandle> = entries.iter().map(|e| e.handle).collect();
    if print_data_blocks(out, &f, &handles)? == Outcome::Damaged {
        outcome = Outcome::Damaged;
    }
    if (args.entries || args.limit.is_some())
        && print_entries(out, &f, &handles, args.limit)? == Outcome::Damaged
    {
        outcome = Outcome::Damaged;
    }
    Ok(outcome)
}

fn handle_str(h: BlockHandle) -> String {
    format!("offset {}, size {}", h.offset, h.size)
}

fn print_footer(out: &mut dyn Write, f: &Footer, at: u64) -> CliResult<()> {
    writeln!(out)?;
    writeln!(out, "footer (offset {at}, {FOOTER_LEN} bytes):")?;
    writeln!(
        out,
        "  magic: {} (0x{MAGIC:016x})",
        escape(&MAGIC.to_le_bytes())
    )?;
    writeln!(out, "  format version: {}", f.version)?;
    writeln!(out, "  index handle: {}", handle_str(f.index))?;
    if f.has_filter() {
        writeln!(out, "  filter handle: {}", handle_str(f.filter))?;
    } else {
        writeln!(out, "  filter handle: none")?;
    }
    writeln!(out, "  properties handle: {}", handle_str(f.properties))?;
    Ok(())
}

fn print_properties(out: &mut dyn Write, p: &Properties) -> CliResult<()> {
    writeln!(out)?;
    writeln!(out, "properties:")?;
    writeln!(out, "  entries: {}", p.num_entries)?;
    writeln!(out, "  deletions: {}", p.num_deletions)?;
    writeln!(
        out,
        "  sequence range: {}",
        seq_range(p.num_entries, p.min_seq, p.max_seq)
    )?;
    writeln!(out, "  smallest key: {}", internal_key(&p.smallest))?;
    writeln!(out, "  largest key: {}", internal_key(&p.largest))?;
    writeln!(out, "  raw key bytes: {}", p.raw_key_bytes)?;
    writeln!(out, "  raw value bytes: {}", p.raw_value_bytes)?;
    writeln!(out, "  data blocks: {}", p.num_data_blocks)?;
    writeln!(out, "  compression: {}", compression_name(p.compression))?;
    writeln!(out, "  bloom bits per key: {}", p.bloom_bits_per_key)?;
    writeln!(out, "  block size: {}", p.block_size_bytes)?;
    writeln!(
        out,
        "  block restart interval: {}",
        p.block_restart_interval
    )?;
    writeln!(out, "  data bytes: {}", p.data_bytes)?;
    writeln!(out, "  index bytes: {}", p.index_bytes)?;
    writeln!(out, "  filter bytes: {}", p.filter_bytes)?;
    writeln!(out, "  creation time: {}", p.creation_time)?;
    if p.num_index_partitions > 0 {
        writeln!(out, "  index partitions: {}", p.num_index_partitions)?;
    }
    Ok(())
}

fn separator(e: &IndexEntry) -> String {
    match e.trailer {
        None => escape(&e.user_key),
        Some(t) => {
            let mut k = e.user_key.to_vec();
            k.extend_from_slice(&t.to_le_bytes());
            internal_key(&k)
        }
    }
}

fn print_index(out: &mut dyn Write, entries: &[IndexEntry]) -> CliResult<()> {
    writeln!(out)?;
    writeln!(out, "index: {} entries", entries.len())?;
    for (i, e) in entries.iter().take(INDEX_PREVIEW).enumerate() {
        writeln!(out, "  #{i} {} -> {}", separator(e), handle_str(e.handle))?;
    }
    if entries.len() > INDEX_PREVIEW {
        writeln!(out, "  ... and {} more", entries.len() - INDEX_PREVIEW)?;
    }
    Ok(())
}

/// A partitioned (version 2) file: the top level, then one line per partition (its index
/// and its filter, each decoded and validated the way the reader does). Returns every
/// data block's index entry, up to the first damaged partition.
fn print_partitions(
    out: &mut dyn Write,
    f: &SstFile<'_>,
    footer: &Footer,
    props: &Properties,
) -> CliResult<(Vec<IndexEntry>, Outcome)> {
    let index_start = props.data_bytes.saturating_add(props.filter_bytes);
    let top_block = f.owned_block(footer.index)?;
    let (top, filters) = IndexBlock::decode(top_block, index_start, footer.index.offset, true)?;
    writeln!(out)?;
    writeln!(out, "top-level index: {} partitions", top.len())?;
    for p in 0..top.len() {
        let e = top.entry(p)?;
        let filter = match filters.get(p) {
            Some(h) if *h != BlockHandle::default() => handle_str(*h),
            _ => "none".to_string(),
        };
        writeln!(
            out,
            "  #{p} {} -> index {}; filter {filter}",
            separator(&e),
            handle_str(e.handle)
        )?;
    }
    writeln!(out)?;
    writeln!(out, "partitions:")?;
    let mut entries = Vec::new();
    let mut data_start = 0;
    for p in 0..top.len() {
        let h = top.handle(p)?;
        let index = f
            .owned_block(h)
            .and_then(|b| IndexBlock::decode(b, data_start, props.data_bytes, false));
        let index = match index {
            Ok((ix, _)) => ix,
            Err(e) => {
                writeln!(out, "  #{p} index {}: ERROR {e}", handle_str(h))?;
                return Ok((entries, Outcome::Damaged));
            }
        };
        let first = entries.len();
        for i in 0..index.len() {
            entries.push(index.entry(i)?);
        }
        data_start = index.end_offset();
        let filter = match filters.get(p) {
            Some(fh) if *fh != BlockHandle::default() => {
                match f
                    .contents(*fh)
                    .and_then(|d| BloomFilter::from_block(f.path, fh.offset, d))
                {
                    Ok(filter) => {
                        let (k, bits, layout) = filter.describe();
                        format!("{layout}, {bits} bits, k = {k}")
                    }
                    Err(e) => {
                        writeln!(out, "  #{p} filter {}: ERROR {e}", handle_str(*fh))?;
                        return Ok((entries, Outcome::Damaged));
                    }
                }
            }
            _ => "none".to_string(),
        };
        writeln!(
            out,
            "  #{p} {} (data blocks #{first}..=#{}); filter: {filter}",
            count(index.len() as u64, "entry", "entries"),
            entries.len().saturating_sub(1)
        )?;
    }
    Ok((entries, Outcome::Clean))
}

fn print_filter(out: &mut dyn Write, f: &SstFile<'_>, footer: &Footer) -> CliResult<()> {
    writeln!(out)?;
    if !footer.has_filter() {
        writeln!(out, "filter: none")?;
        return Ok(());
    }
    let h = footer.filter;
    let data = f.contents(h)?;
    // Decoded (and validated) the same way the reader does.
    let filter = BloomFilter::from_block(f.path, h.offset, data.clone())?;
    let (k, bits, layout) = filter.describe();
    writeln!(
        out,
        "filter: {layout}, {bits} bits, k = {k}, {} bytes ({} on disk with trailer)",
        data.len(),
        h.len_with_trailer()
    )?;
    Ok(())
}

/// Entry count of a decoded block, or the error that stopped the walk.
fn count_entries(block: &Arc<Block>) -> Result<u64, Error> {
    let mut it = block.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status()?;
    Ok(n)
}

fn print_data_blocks(
    out: &mut dyn Write,
    f: &SstFile<'_>,
    handles: &[BlockHandle],
) -> CliResult<Outcome> {
    writeln!(out)?;
    writeln!(out, "data blocks: {}", handles.len())?;
    let mut outcome = Outcome::Clean;
    for (i, h) in handles.iter().enumerate() {
        let described = f
            .raw(*h)
            .and_then(|raw| check_block(f.path, h.offset, raw))
            .and_then(|codec| {
                let block = f.block(*h)?;
                let n = count_entries(&block)?;
                Ok((codec, block.data().len(), n))
            });
        match described {
            Ok((codec, raw_len, n)) => writeln!(
                out,
                "  #{i} {}, compression {}, uncompressed {raw_len}, {}",
                handle_str(*h),
                compression_name(codec),
                count(n, "entry", "entries")
            )?,
            Err(e) => {
                writeln!(out, "  #{i} {}: ERROR {e}", handle_str(*h))?;
                outcome = Outcome::Damaged;
            }
        }
    }
    Ok(outcome)
}

fn print_entries(
    out: &mut dyn Write,
    f: &SstFile<'_>,
    handles: &[BlockHandle],
    limit: Option<usize>,
) -> CliResult<Outcome> {
    writeln!(out)?;
    match limit {
        Some(n) => writeln!(out, "entries (at most {n}):")?,
        None => writeln!(out, "entries:")?,
    }
    let limit = limit.unwrap_or(usize::MAX);
    let mut shown = 0usize;
    for (i, h) in handles.iter().enumerate() {
        if shown >= limit {
            writeln!(out, "  ... (limit reached)")?;
            break;
        }
        writeln!(out, "  -- block #{i} (offset {}) --", h.offset)?;
        let block = match f.block(*h) {
            Ok(b) => b,
            Err(e) => {
                writeln!(out, "  ERROR {e}")?;
                return Ok(Outcome::Damaged);
            }
        };
        let mut it = block.iter();
        it.seek_to_first();
        while it.valid() && shown < limit {
            writeln!(
                out,
                "  {} => {}",
                internal_key(it.key()),
                escape_truncated(it.value(), VALUE_PREVIEW)
            )?;
            shown += 1;
            it.next();
        }
        if let Err(e) = it.status() {
            writeln!(out, "  ERROR {e}")?;
            return Ok(Outcome::Damaged);
        }
    }
    Ok(Outcome::Clean)
}
