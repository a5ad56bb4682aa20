//! `cellar inspect lsm`: the live files per keyspace and level, rebuilt by replaying the
//! manifest into `LsmMeta` exactly as open does, without opening (and so modifying) the
//! database.

use std::io::Write;
use std::path::Path;

use cellar_engine::tools::log::TailPolicy;
use cellar_engine::tools::manifest::{
    read_manifest_records, replay, FileMeta, KeyspaceMeta, LsmMeta,
};
use cellar_engine::tools::objects::objects_layout;

use crate::dbdir::{current_manifest, read_input};
use crate::error::{CliError, CliResult, Outcome};
use crate::show::{count, escape, escape_truncated, user_key, VALUE_PREVIEW};

pub fn run(
    db: &Path,
    store: &cellar_server::ObjectStoreArgs,
    out: &mut dyn Write,
) -> CliResult<Outcome> {
    if crate::place::is_url(db) {
        return run_objects(db, store, out);
    }
    let path = current_manifest(db)?;
    let bytes = read_input(&path)?;
    let read = read_manifest_records(&bytes, &path, TailPolicy::TolerateTornTail)?;
    let meta = replay(&read.records, &path)?;

    writeln!(out, "manifest: {}", path.display())?;
    writeln!(out, "edits: {}", read.records.len())?;
    if read.dropped_tail_bytes > 0 {
        writeln!(
            out,
            "torn tail: {} bytes dropped (an edit whose write never completed)",
            read.dropped_tail_bytes
        )?;
    }
    writeln!(out, "log number: {}", meta.log_number)?;
    writeln!(out, "next file number: {}", meta.next_file_number)?;
    writeln!(out, "last sequence: {}", meta.last_sequence)?;
    writeln!(out, "next keyspace id: {}", meta.next_keyspace_id)?;
    print_levels(&meta, out)
}

/// A database in an object store: its newest snapshot (read, never written) and the WAL
/// objects, then the levels as for a directory.
fn run_objects(
    db: &Path,
    store: &cellar_server::ObjectStoreArgs,
    out: &mut dyn Write,
) -> CliResult<Outcome> {
    let at = crate::place::Location::reach(db, store)?;
    let Some(layout) = objects_layout(&*at.vfs, &at.dir)? else {
        return Err(CliError::Usage(format!(
            "{}: no manifest snapshot, not a Cellar database",
            db.display()
        )));
    };
    let meta = &layout.meta;
    writeln!(out, "database: {}", db.display())?;
    writeln!(out, "storage: object store")?;
    writeln!(out, "snapshot: {}", layout.snapshot_id)?;
    writeln!(out, "writer epoch: {}", meta.writer_epoch)?;
    let wal = match meta.wal_placement {
        Some(0) => "local (on the writer's disk)",
        Some(1) => "object (in the bucket)",
        _ => "unknown",
    };
    writeln!(out, "wal: {wal}")?;
    writeln!(out, "log number: {}", meta.log_number)?;
    writeln!(
        out,
        "wal objects: {} ({})",
        layout.wal_objects,
        count(layout.fences as u64, "fence", "fences")
    )?;
    writeln!(out, "next file number: {}", meta.next_file_number)?;
    writeln!(out, "last sequence: {}", meta.last_sequence)?;
    writeln!(out, "next keyspace id: {}", meta.next_keyspace_id)?;
    print_levels(meta, out)
}

/// Every keyspace's levels, then the totals.
fn print_levels(meta: &LsmMeta, out: &mut dyn Write) -> CliResult<Outcome> {
    let (mut all_files, mut all_bytes, mut all_tombstones) = (0usize, 0u64, 0usize);
    for (id, k) in &meta.keyspaces {
        let (files, bytes) = print_keyspace(out, *id, k)?;
        all_files += files;
        all_bytes += bytes;
        all_tombstones += k.range_tombstones.len();
    }
    writeln!(out)?;
    writeln!(
        out,
        "total: {}, {}, {all_bytes} bytes, {}",
        count(meta.keyspaces.len() as u64, "keyspace", "keyspaces"),
        count(all_files as u64, "file", "files"),
        count(all_tombstones as u64, "range tombstone", "range tombstones")
    )?;
    Ok(Outcome::Clean)
}

/// One keyspace: its files per level (count, bytes, key range) and its range tombstones.
/// Returns its file count and bytes.
fn print_keyspace(out: &mut dyn Write, id: u32, k: &KeyspaceMeta) -> CliResult<(usize, u64)> {
    writeln!(out)?;
    writeln!(out, "keyspace {id} {}:", escape(k.name.as_bytes()))?;
    let (mut files, mut bytes) = (0usize, 0u64);
    let used: Vec<(usize, Vec<&FileMeta>)> = k
        .levels
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i, l.values().collect()))
        .collect();
    if used.is_empty() {
        writeln!(out, "  (no files)")?;
    } else {
        writeln!(
            out,
            "  {:<6} {:>6} {:>12}  key range",
            "level", "files", "bytes"
        )?;
        for (level, fs) in &used {
            let size: u64 = fs.iter().map(|f| f.size).sum();
            let lo = fs.iter().map(|f| user_key(&f.smallest)).min();
            let hi = fs.iter().map(|f| user_key(&f.largest)).max();
            let range = match (lo, hi) {
                (Some(lo), Some(hi)) => format!(
                    "{} .. {}",
                    escape_truncated(lo, VALUE_PREVIEW),
                    escape_truncated(hi, VALUE_PREVIEW)
                ),
                _ => String::new(),
            };
            writeln!(
                out,
                "  {:<6} {:>6} {:>12}  {range}",
                format!("L{level}"),
                fs.len(),
                size
            )?;
            files += fs.len();
            bytes += size;
        }
        writeln!(out, "  {:<6} {:>6} {:>12}", "total", files, bytes)?;
    }
    writeln!(out, "  range tombstones: {}", k.range_tombstones.len())?;
    for t in &k.range_tombstones {
        writeln!(
            out,
            "    [{}, {}) @{}",
            escape(&t.start),
            escape(&t.end),
            t.seq
        )?;
    }
    Ok((files, bytes))
}
