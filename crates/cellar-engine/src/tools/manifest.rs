//! The manifest: which file `CURRENT` names, every record of a manifest decoded on its own,
//! and the edits replayed into the per-keyspace levels open would build.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::log::{read_log, LogKind, TailPolicy, RECORD_HEADER_LEN};
use crate::options::Options;

pub use crate::manifest::{
    manifest_file_name, parse_file_name, read_current, sst_file_name, wal_file_name, FileKind,
    FileMeta, RangeTombstone, VersionEdit, CURRENT_FILE,
};
pub use crate::version::{KeyspaceMeta, LsmMeta};

/// One decoded manifest record.
#[derive(Debug)]
pub struct EditRecord {
    /// File offset of the record header.
    pub offset: u64,
    /// Length of the record's payload.
    pub payload_len: usize,
    /// The edit, or why it does not decode.
    pub edit: Result<VersionEdit>,
}

/// Every record of a manifest, each decoded on its own so one bad edit does not hide the
/// others, plus the valid length and the dropped torn tail (0 under `Strict`).
#[derive(Debug)]
pub struct ManifestRead {
    /// Every whole record, in file order.
    pub records: Vec<EditRecord>,
    /// Length of the header and the whole valid records.
    pub valid_len: u64,
    /// Bytes of the torn tail dropped.
    pub dropped_tail_bytes: u64,
}

/// Reads the records of the manifest `bytes` (read from `path`).
pub fn read_manifest_records(bytes: &[u8], path: &Path, tail: TailPolicy) -> Result<ManifestRead> {
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
pub fn replay(records: &[EditRecord], path: &Path) -> Result<LsmMeta> {
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
