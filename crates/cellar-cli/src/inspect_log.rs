//! `cellar inspect wal` and `cellar inspect manifest`: the records of a log file, decoded.

use std::io::Write;
use std::path::Path;

use cellar_engine::tools::log::{
    decode_batch, read_log, BatchOp, LogContents, LogKind, TailPolicy, FILE_HEADER_LEN,
};
use cellar_engine::tools::manifest::{
    manifest_file_name, read_current, read_manifest_records, VersionEdit,
};
use cellar_engine::vfs::RealVfs;
use cellar_engine::Error;

use crate::dbdir::{current_manifest, read_input, require_db_dir};
use crate::error::{CliResult, Outcome};
use crate::show::{count, escape, internal_key, seq_range};

/// Reads a log with `read`. On damage in the middle of the file, reads again the prefix
/// that ends at the damaged record (which holds only whole, valid records) so the records
/// before the damage can still be shown, and returns the error alongside.
fn read_up_to_damage<T>(
    bytes: &[u8],
    read: impl Fn(&[u8]) -> Result<T, Error>,
) -> Result<(T, Option<Error>), Error> {
    let err = match read(bytes) {
        Ok(v) => return Ok((v, None)),
        Err(e) => e,
    };
    if let Error::Corruption { offset, .. } = &err {
        let at = usize::try_from(*offset).unwrap_or(usize::MAX);
        if (FILE_HEADER_LEN..bytes.len()).contains(&at) {
            if let Ok(v) = read(&bytes[..at]) {
                return Ok((v, Some(err)));
            }
        }
    }
    Err(err)
}

/// The header line: magic and version, or why there is none.
fn print_header(out: &mut dyn Write, bytes: &[u8], log: &LogContents) -> CliResult<()> {
    if bytes.is_empty() {
        writeln!(out, "header: none (empty file)")?;
    } else if log.valid_len == 0 {
        writeln!(out, "header: torn at creation (no complete header)")?;
    } else if let (Some(magic), Some(version)) = (bytes.get(..8), bytes.get(8..12)) {
        let mut v = [0u8; 4];
        v.copy_from_slice(version);
        let kind = if magic == LogKind::Wal.magic() {
            "WAL"
        } else {
            "manifest"
        };
        writeln!(
            out,
            "header: kind {kind} (magic {}), version {}",
            escape(magic),
            u32::from_le_bytes(v)
        )?;
    }
    Ok(())
}

fn print_totals(
    out: &mut dyn Write,
    records: usize,
    bytes: usize,
    log: &LogContents,
    damage: Option<&Error>,
) -> CliResult<()> {
    writeln!(out)?;
    writeln!(out, "records: {records}")?;
    writeln!(out, "bytes: {bytes} (valid prefix {})", log.valid_len)?;
    if let Some(e) = damage {
        writeln!(out, "ERROR {e}")?;
    } else if log.dropped_tail_bytes > 0 && log.unwritten_gap {
        writeln!(
            out,
            "unwritten page: {} bytes dropped at offset {}, where a record runs into zeros up to a page boundary with more bytes after it (pages of a mapped WAL written back out of order before a power loss; recovery discards them if the WAL was never synced, and reports corruption otherwise)",
            log.dropped_tail_bytes, log.valid_len
        )?;
    } else if log.dropped_tail_bytes > 0 && log.unwritten_tail {
        writeln!(
            out,
            "unwritten tail: {} zero bytes at offset {} (space reserved ahead of the records, or a write the crash never started; recovery discards it)",
            log.dropped_tail_bytes, log.valid_len
        )?;
    } else if log.dropped_tail_bytes > 0 {
        writeln!(
            out,
            "torn tail: {} bytes dropped at offset {} (a write cut short by a crash; recovery discards it)",
            log.dropped_tail_bytes, log.valid_len
        )?;
    } else {
        writeln!(out, "torn tail: none")?;
    }
    Ok(())
}

pub fn wal(path: &Path, out: &mut dyn Write) -> CliResult<Outcome> {
    let bytes = read_input(path)?;
    writeln!(out, "wal: {}", path.display())?;
    let (log, damage) = read_up_to_damage(&bytes, |b| {
        read_log(b, path, LogKind::Wal, TailPolicy::TolerateUnwrittenPages)
    })?;
    print_header(out, &bytes, &log)?;
    let mut outcome = if damage.is_some() {
        Outcome::Damaged
    } else {
        Outcome::Clean
    };
    for (i, (offset, payload)) in log.payloads(&bytes).enumerate() {
        writeln!(out)?;
        let b = match decode_batch(payload, path, offset) {
            Ok(b) => b,
            Err(e) => {
                writeln!(
                    out,
                    "record #{i} offset {offset} length {}: ERROR {e}",
                    payload.len()
                )?;
                outcome = Outcome::Damaged;
                continue;
            }
        };
        if b.is_synced_predecessors() {
            writeln!(
                out,
                "record #{i} offset {offset} length {}: synced-predecessors record at seq {} \
                 (every older WAL was synced whole before it)",
                payload.len(),
                b.seq
            )?;
            continue;
        }
        writeln!(
            out,
            "record #{i} offset {offset} length {}: first seq {}, {}",
            payload.len(),
            b.seq,
            count(b.count, "op", "ops")
        )?;
        for (j, op) in b.ops.iter().enumerate() {
            let seq = b.seq.saturating_add(j as u64);
            let line = match op {
                BatchOp::Put { ks, key, value } => {
                    format!("PUT ks {ks} key {} value_len {}", escape(key), value.len())
                }
                BatchOp::Delete { ks, key } => format!("DEL ks {ks} key {}", escape(key)),
                BatchOp::Ingested => "INGESTED (sequence taken by ingested files)".to_string(),
                BatchOp::DeleteRange { ks, start, end } => format!(
                    "DELRANGE ks {ks} start {} end {}",
                    escape(start),
                    escape(end)
                ),
            };
            writeln!(out, "  @{seq} {line}")?;
        }
    }
    print_totals(out, log.records.len(), bytes.len(), &log, damage.as_ref())?;
    Ok(outcome)
}

pub fn manifest(db: &Path, file: Option<&Path>, out: &mut dyn Write) -> CliResult<Outcome> {
    let path = match file {
        Some(f) => {
            if !f.exists() {
                require_db_dir(db)?;
            }
            crate::dbdir::resolve(f, Some(db))
        }
        None => current_manifest(db)?,
    };
    let bytes = read_input(&path)?;
    let named_by_current = file.is_none()
        || read_current(&RealVfs, db)
            .ok()
            .flatten()
            .map(|n| db.join(manifest_file_name(n)))
            .is_some_and(|c| c == path);
    let note = if named_by_current {
        " (named by CURRENT)"
    } else {
        ""
    };
    writeln!(out, "manifest: {}{note}", path.display())?;
    let (read, damage) = read_up_to_damage(&bytes, |b| {
        read_manifest_records(b, &path, TailPolicy::TolerateTornTail)
    })?;
    let log = LogContents {
        records: Vec::new(),
        valid_len: read.valid_len,
        dropped_tail_bytes: read.dropped_tail_bytes,
        ..LogContents::default()
    };
    print_header(out, &bytes, &log)?;
    let mut outcome = if damage.is_some() {
        Outcome::Damaged
    } else {
        Outcome::Clean
    };
    for (i, r) in read.records.iter().enumerate() {
        writeln!(out)?;
        match &r.edit {
            Ok(e) => {
                writeln!(
                    out,
                    "edit #{i} offset {} length {}:",
                    r.offset, r.payload_len
                )?;
                print_edit(out, e)?;
            }
            Err(e) => {
                writeln!(
                    out,
                    "edit #{i} offset {} length {}: ERROR {e}",
                    r.offset, r.payload_len
                )?;
                outcome = Outcome::Damaged;
            }
        }
    }
    print_level_writes(
        out,
        read.records.iter().filter_map(|r| r.edit.as_ref().ok()),
    )?;
    print_totals(out, read.records.len(), bytes.len(), &log, damage.as_ref())?;
    Ok(outcome)
}

/// Bytes the edits wrote into each level: a file number added for the first time is a
/// file written (a flush, a compaction's output, an ingest); added again, it was moved
/// down without a rewrite. A manifest starts (at open, or when it rolls over) with an edit
/// listing the files that exist then: those were written before it and are not counted.
/// So this is where the write amplification of flushes and compactions went since then.
fn print_level_writes<'a>(
    out: &mut dyn Write,
    mut edits: impl Iterator<Item = &'a VersionEdit>,
) -> CliResult<()> {
    // Per level: (files written, bytes written, bytes moved in).
    let mut levels: Vec<(u64, u64, u64)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    if let Some(first) = edits.next() {
        seen.extend(first.added_files.iter().map(|(_, _, f)| f.number));
    }
    for (_, level, f) in edits.flat_map(|e| e.added_files.iter()) {
        let l = *level as usize;
        if levels.len() <= l {
            levels.resize(l + 1, (0, 0, 0));
        }
        if seen.insert(f.number) {
            levels[l].0 += 1;
            levels[l].1 += f.size;
        } else {
            levels[l].2 += f.size;
        }
    }
    if levels.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "written per level after the first edit (a file added again under its number was moved, not rewritten):"
    )?;
    for (l, (files, written, moved)) in levels.iter().enumerate() {
        writeln!(
            out,
            "  L{l}: {} written, {written} bytes; {moved} bytes moved in",
            count(*files, "file", "files")
        )?;
    }
    let total: u64 = levels.iter().map(|l| l.1).sum();
    writeln!(out, "  total: {total} bytes written")?;
    Ok(())
}

fn print_edit(out: &mut dyn Write, e: &VersionEdit) -> CliResult<()> {
    if e == &VersionEdit::default() {
        writeln!(out, "  (empty edit)")?;
    }
    if let Some(n) = e.log_number {
        writeln!(out, "  log number: {n}")?;
    }
    if let Some(n) = e.next_file_number {
        writeln!(out, "  next file number: {n}")?;
    }
    if let Some(n) = e.last_sequence {
        writeln!(out, "  last sequence: {n}")?;
    }
    if let Some(n) = e.next_keyspace_id {
        writeln!(out, "  next keyspace id: {n}")?;
    }
    for (id, name) in &e.created_keyspaces {
        writeln!(out, "  create keyspace {id} {}", escape(name.as_bytes()))?;
    }
    for (id, o) in &e.keyspace_options {
        writeln!(
            out,
            "  keyspace {id} options: compression {}, block size {}, bloom bits per key {}",
            o.compression
                .map_or("default".into(), |c| format!("{c:?}").to_lowercase()),
            o.block_size_bytes
                .map_or("default".into(), |b| b.to_string()),
            o.bloom_bits_per_key
                .map_or("default".into(), |b| b.to_string()),
        )?;
    }
    for id in &e.dropped_keyspaces {
        writeln!(out, "  drop keyspace {id}")?;
    }
    for (ks, level, f) in &e.added_files {
        writeln!(
            out,
            "  add file {:06} ks {ks} L{level}: {} bytes, keys {} .. {}, seq {}, {} ({})",
            f.number,
            f.size,
            internal_key(&f.smallest),
            internal_key(&f.largest),
            seq_range(f.num_entries, f.min_seq, f.max_seq),
            count(f.num_entries, "entry", "entries"),
            count(f.num_deletions, "deletion", "deletions")
        )?;
        if let Some(g) = f.global_seq {
            writeln!(out, "    ingested: entries read with global sequence {g}")?;
        }
    }
    for (ks, level, number) in &e.deleted_files {
        writeln!(out, "  delete file {number:06} ks {ks} L{level}")?;
    }
    for (ks, t) in &e.added_range_tombstones {
        writeln!(
            out,
            "  add range tombstone ks {ks} [{}, {}) @{}",
            escape(&t.start),
            escape(&t.end),
            t.seq
        )?;
    }
    for (ks, t) in &e.deleted_range_tombstones {
        writeln!(
            out,
            "  delete range tombstone ks {ks} [{}, {}) @{}",
            escape(&t.start),
            escape(&t.end),
            t.seq
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellar_engine::tools::manifest::FileMeta;

    fn file(number: u64, size: u64) -> FileMeta {
        FileMeta {
            number,
            size,
            smallest: b"a\0\0\0\0\0\0\0\x01".to_vec(),
            largest: b"z\0\0\0\0\0\0\0\x01".to_vec(),
            min_seq: 1,
            max_seq: 1,
            num_entries: 1,
            num_deletions: 0,
            global_seq: None,
        }
    }

    #[test]
    fn level_writes_count_a_moved_file_once_and_where_it_was_written() {
        // The manifest's first edit lists what existed when it began: not written since.
        let snapshot = VersionEdit {
            added_files: vec![(0, 3, file(5, 1000))],
            ..VersionEdit::default()
        };
        let flush = VersionEdit {
            added_files: vec![(0, 0, file(7, 100))],
            ..VersionEdit::default()
        };
        let compaction = VersionEdit {
            added_files: vec![(0, 1, file(8, 60))],
            deleted_files: vec![(0, 0, 7)],
            ..VersionEdit::default()
        };
        let moved = VersionEdit {
            added_files: vec![(0, 2, file(8, 60))],
            deleted_files: vec![(0, 1, 8)],
            ..VersionEdit::default()
        };
        let moved_older = VersionEdit {
            added_files: vec![(0, 4, file(5, 1000))],
            deleted_files: vec![(0, 3, 5)],
            ..VersionEdit::default()
        };
        let edits = [&snapshot, &flush, &compaction, &moved, &moved_older];
        let mut out = Vec::new();
        print_level_writes(&mut out, edits.into_iter()).expect("print");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(
            text.contains("L0: 1 file written, 100 bytes; 0 bytes moved in"),
            "{text}"
        );
        assert!(
            text.contains("L1: 1 file written, 60 bytes; 0 bytes moved in"),
            "{text}"
        );
        assert!(
            text.contains("L2: 0 files written, 0 bytes; 60 bytes moved in"),
            "{text}"
        );
        assert!(
            text.contains("L4: 0 files written, 0 bytes; 1000 bytes moved in"),
            "the first edit's file counted as written when moved: {text}"
        );
        assert!(text.contains("total: 160 bytes written"), "{text}");
    }
}
