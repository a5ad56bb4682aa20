//! `cellar inspect sst`: footer, properties, index, filter, data blocks and (optionally)
//! entries of one SST, decoded straight from the file's bytes so that a damaged section is
//! reported where it is and the sections before it are still shown.

use std::io::Write;
use std::path::Path;

use cellar_engine::tools::sst::{
    BlockHandle, Footer, IndexEntry, Properties, SstFile, FOOTER_LEN, MAGIC,
};

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

pub fn run(args: &SstArgs<'_>, out: &mut dyn Write) -> CliResult<Outcome> {
    let bytes = read_input(args.path)?;
    writeln!(out, "sst: {}", args.path.display())?;
    writeln!(out, "file size: {} bytes", bytes.len())?;
    let f = SstFile::new(args.path, bytes)?;
    let footer = f.footer()?;
    print_footer(out, &footer, f.footer_offset())?;

    let props = f.properties(&footer)?;
    print_properties(out, &props)?;

    let mut outcome = Outcome::Clean;
    let entries = if footer.is_partitioned() {
        let (entries, o) = print_partitions(out, &f, &footer, &props)?;
        outcome = o;
        entries
    } else {
        let index = f.index(&footer)?;
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
    f: &SstFile,
    footer: &Footer,
    props: &Properties,
) -> CliResult<(Vec<IndexEntry>, Outcome)> {
    let (top, filters) = f.top_level_index(footer, props)?;
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
        let index = match f.partition_index(h, data_start, props.data_bytes) {
            Ok(ix) => ix,
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
            Some(fh) if *fh != BlockHandle::default() => match f.filter(*fh) {
                Ok(filter) => {
                    format!("{}, {} bits, k = {}", filter.layout, filter.bits, filter.k)
                }
                Err(e) => {
                    writeln!(out, "  #{p} filter {}: ERROR {e}", handle_str(*fh))?;
                    return Ok((entries, Outcome::Damaged));
                }
            },
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

fn print_filter(out: &mut dyn Write, f: &SstFile, footer: &Footer) -> CliResult<()> {
    writeln!(out)?;
    if !footer.has_filter() {
        writeln!(out, "filter: none")?;
        return Ok(());
    }
    let h = footer.filter;
    // Decoded (and validated) the same way the reader does.
    let filter = f.filter(h)?;
    writeln!(
        out,
        "filter: {}, {} bits, k = {}, {} bytes ({} on disk with trailer)",
        filter.layout,
        filter.bits,
        filter.k,
        filter.bytes,
        h.len_with_trailer()
    )?;
    Ok(())
}

fn print_data_blocks(
    out: &mut dyn Write,
    f: &SstFile,
    handles: &[BlockHandle],
) -> CliResult<Outcome> {
    writeln!(out)?;
    writeln!(out, "data blocks: {}", handles.len())?;
    let mut outcome = Outcome::Clean;
    for (i, h) in handles.iter().enumerate() {
        match f.data_block_info(*h) {
            Ok(b) => writeln!(
                out,
                "  #{i} {}, compression {}, uncompressed {}, {}",
                handle_str(*h),
                compression_name(b.compression),
                b.uncompressed_bytes,
                count(b.entries, "entry", "entries")
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
    f: &SstFile,
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
        let block = match f.data_block(*h) {
            Ok(b) => b,
            Err(e) => {
                writeln!(out, "  ERROR {e}")?;
                return Ok(Outcome::Damaged);
            }
        };
        let mut it = block.entries();
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
