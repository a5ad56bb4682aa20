//! `cellar check`: read-only verification of every checksum in a database directory.
//!
//! Order: `CURRENT`, the manifest it names (strict: every record must check out and decode,
//! and the edits must replay), the live WALs (strict, except that the newest may end in a
//! torn tail, reported as a warning), every SST the manifest lists (all blocks read and
//! checked, and compared with the manifest's record of it), then files nothing refers to
//! (warnings). Nothing is opened for writing and no lock is taken.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cellar_engine::batch::decode_batch;
use cellar_engine::log::{read_log, LogContents, LogKind, TailPolicy};
use cellar_engine::manifest::{
    parse_file_name, read_current, sst_file_name, wal_file_name, FileKind, FileMeta, CURRENT_FILE,
};
use cellar_engine::sst::{BlockCache, SstReader};
use cellar_engine::stats::Counters;
use cellar_engine::version::LsmMeta;
use cellar_engine::vfs::{RealVfs, Vfs};
use cellar_engine::Error;

use crate::dbdir::{read_manifest_records, replay, require_db_dir};
use crate::error::{CliError, CliResult, Outcome};

#[derive(Default)]
struct Tally {
    ok: usize,
    corrupt: usize,
    missing: usize,
    warnings: usize,
}

struct Checker<'a> {
    db: &'a Path,
    out: &'a mut dyn Write,
    tally: Tally,
}

impl Checker<'_> {
    fn ok(&mut self, path: &Path) -> CliResult<()> {
        self.tally.ok += 1;
        writeln!(self.out, "OK {}", path.display())?;
        Ok(())
    }

    fn corrupt(&mut self, path: &Path, e: &Error) -> CliResult<()> {
        self.tally.corrupt += 1;
        writeln!(self.out, "CORRUPT {}: {e}", path.display())?;
        Ok(())
    }

    fn missing(&mut self, path: &Path, why: &str) -> CliResult<()> {
        self.tally.missing += 1;
        writeln!(self.out, "MISSING {}: {why}", path.display())?;
        Ok(())
    }

    fn warn(&mut self, path: &Path, why: &str) -> CliResult<()> {
        self.tally.warnings += 1;
        writeln!(self.out, "WARN {}: {why}", path.display())?;
        Ok(())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.db.join(name)
    }
}

/// Reads and replays the manifest strictly.
fn check_manifest(path: &Path) -> Result<LsmMeta, Error> {
    let bytes = RealVfs.read_all(path)?;
    let read = read_manifest_records(&bytes, path, TailPolicy::Strict)?;
    replay(&read.records, path)
}

/// Reads a WAL and decodes every batch; returns what `read_log` found (no dropped tail
/// under `Strict`).
fn check_wal(path: &Path, tail: TailPolicy) -> Result<LogContents, Error> {
    let bytes = RealVfs.read_all(path)?;
    let log = read_log(&bytes, path, LogKind::Wal, tail)?;
    for (offset, payload) in log.payloads(&bytes) {
        decode_batch(payload, path, offset)?;
    }
    Ok(log)
}

/// Opens an SST, reads every block, and compares it with what the manifest recorded.
fn check_sst(path: &Path, number: u64, listed: Option<&FileMeta>) -> Result<(), Error> {
    let file = RealVfs.open_read(path, false)?;
    let reader = SstReader::open(
        file,
        path.to_path_buf(),
        number,
        Arc::new(BlockCache::new(1 << 20)),
        Arc::new(Counters::default()),
    )?;
    reader.verify_checksums()?;
    let Some(m) = listed else {
        return Ok(());
    };
    let disagree =
        |what: String| Error::corruption(path, 0, format!("file and manifest disagree: {what}"));
    if reader.file_size() != m.size {
        return Err(disagree(format!(
            "file is {} bytes, manifest says {}",
            reader.file_size(),
            m.size
        )));
    }
    let p = reader.properties();
    if p.num_entries != m.num_entries {
        return Err(disagree(format!(
            "file holds {} entries, manifest says {}",
            p.num_entries, m.num_entries
        )));
    }
    if p.smallest != m.smallest || p.largest != m.largest {
        return Err(disagree("key range".to_string()));
    }
    Ok(())
}

pub fn run(db: &Path, out: &mut dyn Write) -> CliResult<Outcome> {
    require_db_dir(db)?;
    let mut names = RealVfs.list(db)?;
    names.sort();
    let kinds: Vec<(String, Option<FileKind>)> = names
        .into_iter()
        .map(|n| {
            let k = parse_file_name(&n);
            (n, k)
        })
        .collect();
    let has = |f: &dyn Fn(FileKind) -> bool| kinds.iter().any(|(_, k)| k.is_some_and(f));
    let looks_like_db = has(&|k| {
        matches!(
            k,
            FileKind::Current | FileKind::Manifest(_) | FileKind::Sst(_) | FileKind::Wal(_)
        )
    });
    if !looks_like_db {
        return Err(CliError::Usage(format!(
            "{}: no Cellar files here, not a database (use --db PATH)",
            db.display()
        )));
    }

    let mut c = Checker {
        db,
        out,
        tally: Tally::default(),
    };
    writeln!(c.out, "checking {}", db.display())?;

    // CURRENT, then the manifest it names.
    let current_path = c.path(CURRENT_FILE);
    let manifest_number = if has(&|k| k == FileKind::Current) {
        match read_current(&RealVfs, db) {
            Ok(n) => {
                c.ok(&current_path)?;
                n
            }
            Err(e) => {
                c.corrupt(&current_path, &e)?;
                None
            }
        }
    } else {
        c.missing(&current_path, "no CURRENT: the live manifest is unknown")?;
        None
    };
    let mut meta = None;
    if let Some(n) = manifest_number {
        let path = c.path(&cellar_engine::manifest::manifest_file_name(n));
        if !has(&|k| k == FileKind::Manifest(n)) {
            c.missing(&path, "named by CURRENT but not found")?;
        } else {
            match check_manifest(&path) {
                Ok(m) => {
                    c.ok(&path)?;
                    meta = Some(m);
                }
                Err(e) => c.corrupt(&path, &e)?,
            }
        }
    }

    // WALs the manifest does not cover yet are replayed at open: only the newest may end
    // in a torn write. Without a readable manifest every WAL is checked.
    let log_number = meta.as_ref().map_or(0, |m| m.log_number);
    let mut wals: Vec<u64> = kinds
        .iter()
        .filter_map(|(_, k)| match k {
            Some(FileKind::Wal(n)) => Some(*n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    let (live_wals, old_wals): (Vec<u64>, Vec<u64>) =
        wals.into_iter().partition(|n| *n >= log_number);
    for (i, n) in live_wals.iter().enumerate() {
        let path = c.path(&wal_file_name(*n));
        let newest = i + 1 == live_wals.len();
        let policy = if newest {
            TailPolicy::TolerateTornTail
        } else {
            TailPolicy::Strict
        };
        match check_wal(&path, policy) {
            // Zeros after the last record are space the WAL reserved ahead (or a crash
            // left allocated), not a lost write: nothing to warn about.
            Ok(log) if log.dropped_tail_bytes == 0 || log.unwritten_tail => c.ok(&path)?,
            Ok(log) => c.warn(
                &path,
                &format!(
                    "torn tail of {} bytes at offset {} in the newest WAL \
                     (a write cut short by a crash; recovery drops it)",
                    log.dropped_tail_bytes, log.valid_len
                ),
            )?,
            Err(e) => c.corrupt(&path, &e)?,
        }
    }

    // Every SST the manifest lists; without a manifest, every SST present.
    let mut listed: BTreeMap<u64, (u32, usize, FileMeta)> = BTreeMap::new();
    if let Some(m) = &meta {
        for (ks, k) in &m.keyspaces {
            for (level, files) in k.levels.iter().enumerate() {
                for (n, f) in files {
                    listed.insert(*n, (*ks, level, f.clone()));
                }
            }
        }
    }
    let present: BTreeSet<u64> = kinds
        .iter()
        .filter_map(|(_, k)| match k {
            Some(FileKind::Sst(n)) => Some(*n),
            _ => None,
        })
        .collect();
    if meta.is_some() {
        for (n, (ks, level, f)) in &listed {
            let path = c.path(&sst_file_name(*n));
            if !present.contains(n) {
                c.missing(
                    &path,
                    &format!("listed in the manifest (keyspace {ks}, level {level}) but not found"),
                )?;
                continue;
            }
            match check_sst(&path, *n, Some(f)) {
                Ok(()) => c.ok(&path)?,
                Err(e) => c.corrupt(&path, &e)?,
            }
        }
    } else {
        for n in &present {
            let path = c.path(&sst_file_name(*n));
            match check_sst(&path, *n, None) {
                Ok(()) => c.ok(&path)?,
                Err(e) => c.corrupt(&path, &e)?,
            }
        }
    }

    // Files nothing refers to: harmless leftovers the next open deletes.
    if meta.is_some() {
        for n in &old_wals {
            let path = c.path(&wal_file_name(*n));
            c.warn(
                &path,
                &format!("unreferenced: WAL older than the manifest's log number {log_number}"),
            )?;
        }
    }
    for (name, kind) in &kinds {
        let path = c.path(name);
        match kind {
            Some(FileKind::Sst(n)) if meta.is_some() && !listed.contains_key(n) => {
                c.warn(&path, "unreferenced: SST not listed in the manifest")?
            }
            Some(FileKind::Manifest(n)) if Some(*n) != manifest_number => {
                c.warn(&path, "unreferenced: manifest not named by CURRENT")?
            }
            Some(FileKind::Temp) => c.warn(&path, "unreferenced: unfinished temporary file")?,
            None => c.warn(&path, "not a Cellar file (ignored by the engine)")?,
            _ => {}
        }
    }

    let t = &c.tally;
    let bad = t.corrupt + t.missing;
    writeln!(
        c.out,
        "summary: {} ok, {} corrupt, {} missing, {} warnings: {}",
        t.ok,
        t.corrupt,
        t.missing,
        t.warnings,
        if bad == 0 { "OK" } else { "DAMAGED" }
    )?;
    Ok(if bad == 0 {
        Outcome::Clean
    } else {
        Outcome::Damaged
    })
}
