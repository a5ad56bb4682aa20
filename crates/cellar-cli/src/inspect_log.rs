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
    print_totals(out, read.records.len(), bytes.len(), &log, damage.as_ref())?;
    Ok(outcome)
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
