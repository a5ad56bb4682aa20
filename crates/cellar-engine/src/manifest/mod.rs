//! The manifest: a log (framed by [`crate::log`]) of [`VersionEdit`]s. Replaying every edit
//! in order rebuilds the set of live files, keyspaces and counters. `CURRENT` names the
//! manifest in use. Byte layout: `docs/format/manifest.md`.

mod current;
mod edit;
pub mod leases;
pub mod objects;

use std::path::Path;

pub use current::{
    manifest_file_name, parse_file_name, read_current, sst_file_name, wal_file_name, write_current,
    FileKind, CURRENT_FILE,
};
pub use edit::{FileMeta, RangeTombstone, VersionEdit};

use crate::error::Result;
use crate::log::{read_log, LogKind, TailPolicy, RECORD_HEADER_LEN};
use crate::vfs::Vfs;

/// Every edit of a manifest, and how much of the file they cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestContents {
    pub edits: Vec<VersionEdit>,
    /// Length of the valid prefix (header and whole records).
    pub valid_len: u64,
    /// Bytes of a torn last edit that were dropped.
    pub dropped_tail_bytes: u64,
}

/// Reads every edit of the manifest at `path`. A torn last edit is dropped: the manifest
/// write it belongs to never returned, so the change it describes (a flush or compaction
/// result) was never installed and its files are garbage to collect. Damage anywhere else
/// is `Corruption`.
pub fn read_manifest(vfs: &dyn Vfs, path: &Path) -> Result<Vec<VersionEdit>> {
    Ok(read_manifest_contents(vfs, path)?.edits)
}

/// [`read_manifest`] plus the valid length and the dropped tail, for callers that want to
/// report or repair a torn tail.
pub fn read_manifest_contents(vfs: &dyn Vfs, path: &Path) -> Result<ManifestContents> {
    let bytes = vfs.read_all(path)?;
    let log = read_log(
        &bytes,
        path,
        LogKind::Manifest,
        TailPolicy::TolerateTornTail,
    )?;
    let edits = log
        .records
        .iter()
        .map(|r| {
            let at = r.offset.saturating_add(RECORD_HEADER_LEN as u64);
            VersionEdit::decode(r.payload(&bytes), path, at)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ManifestContents {
        edits,
        valid_len: log.valid_len,
        dropped_tail_bytes: log.dropped_tail_bytes,
    })
}

#[cfg(test)]
mod tests;
