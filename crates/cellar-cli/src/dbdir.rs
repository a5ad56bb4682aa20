//! Read-only access to a database directory: resolving paths, `CURRENT`, manifest replay.
//! Nothing here creates, locks or modifies a file.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use cellar_engine::log::{read_log, LogKind, TailPolicy, RECORD_HEADER_LEN};
use cellar_engine::manifest::{manifest_file_name, read_current, VersionEdit};
use cellar_engine::version::LsmMeta;
use cellar_engine::vfs::RealVfs;
use cellar_engine::{Error, Options};

use crate::error::{CliError, CliResult};

/// `file` as given if it exists, else `db/file` when `--db` was given.
pub fn resolve(file: &Path, db: Option<&Path>) -> PathBuf {
    match db {
        Some(db) if !file.exists() && file.is_relative() => {
            let in_db = db.join(file);
            if in_db.exists() {
                in_db
            } else {
                file.to_path_buf()
            }
        }
        _ => file.to_path_buf(),
    }
}

/// Reads a whole file named on the command line: a path that does not exist or is not a
/// file is a usage error, any other failure an I/O error.
pub fn read_input(path: &Path) -> CliResult<Vec<u8>> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(CliError::Usage(format!("{}: no such file", path.display())))
        }
        Ok(m) if !m.is_file() => {
            return Err(CliError::Usage(format!(
                "{}: not a regular file",
                path.display()
            )))
        }
        _ => {}
    }
    std::fs::read(path).map_err(|e| CliError::Engine(Error::io(path, e)))
}

/// The database directory must exist (no command creates one).
pub fn require_db_dir(db: &Path) -> CliResult<()> {
    match std::fs::metadata(db) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(CliError::Usage(format!(
            "{}: not a directory (--db names a database directory)",
            db.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(CliError::Usage(format!(
            "{}: no such database directory (use --db PATH)",
            db.display()
        ))),
        Err(e) => Err(CliError::Engine(Error::io(db, e))),
    }
}

/// The manifest `CURRENT` names. No `CURRENT` means this is not a database: a usage error.
pub fn current_manifest(db: &Path) -> CliResult<PathBuf> {
    require_db_dir(db)?;
    match read_current(&RealVfs, db)? {
        Some(n) => Ok(db.join(manifest_file_name(n))),
        None => Err(CliError::Usage(format!(
            "{}: no CURRENT file, not a Cellar database",
            db.display()
        ))),
    }
}

/// One decoded manifest record.
pub struct EditRecord {
    /// File offset of the record header.
    pub offset: u64,
    pub payload_len: usize,
    pub edit: Result<VersionEdit, Error>,
}

/// Every record of a manifest, each decoded on its own so one bad edit does not hide the
/// others, plus the valid length and the dropped torn tail (0 under `Strict`).
pub struct ManifestRead {
    pub records: Vec<EditRecord>,
    pub valid_len: u64,
    pub dropped_tail_bytes: u64,
}

pub fn read_manifest_records(
    bytes: &[u8],
    path: &Path,
    tail: TailPolicy,
) -> Result<ManifestRead, Error> {
    let log = read_log(bytes, path, LogKind::Manifest, tail)?;
    let records = log
        .records
        .iter()
        .map(|r| {
            let payload = r.payload(bytes);
            let at = r.offset.saturating_add(RECORD_HEADER_LEN as u64);
            EditRecord {
                offset: r.offset,
                payload_len: payload.len(),
                edit: VersionEdit::decode(payload, path, at),
            }
        })
        .collect();
    Ok(ManifestRead {
        records,
        valid_len: log.valid_len,
        dropped_tail_bytes: log.dropped_tail_bytes,
    })
}

/// Levels to allocate when replaying: the engine's default, or more if an edit names a
/// deeper level (the level count is an open option, not recorded in the manifest).
fn num_levels<'a>(edits: impl Iterator<Item = &'a VersionEdit>) -> usize {
    let deepest = edits
        .flat_map(|e| {
            let added = e.added_files.iter().map(|(_, l, _)| *l);
            let deleted = e.deleted_files.iter().map(|(_, l, _)| *l);
            added.chain(deleted)
        })
        .max()
        .map_or(0, |l| l as usize + 1);
    deepest.max(Options::default().num_levels)
}

/// Replays decoded edits into the metadata the engine would build at open. A record that
/// failed to decode, or an edit that does not fit the state so far, is corruption.
pub fn replay(records: &[EditRecord], path: &Path) -> Result<LsmMeta, Error> {
    let mut edits = Vec::with_capacity(records.len());
    for r in records {
        match &r.edit {
            Ok(e) => edits.push((r.offset, e)),
            Err(e) => return Err(e.clone()),
        }
    }
    let levels = num_levels(edits.iter().map(|(_, e)| *e));
    let mut meta = LsmMeta::default();
    for (i, (offset, edit)) in edits.into_iter().enumerate() {
        meta.apply(edit, levels)
            .map_err(|why| Error::corruption(path, offset, format!("edit #{i}: {why}")))?;
    }
    for k in meta.keyspaces.values_mut() {
        if k.levels.len() < levels {
            k.levels.resize(levels, BTreeMap::new());
        }
    }
    Ok(meta)
}
