//! The manifest of a database in an object store: numbered snapshot objects
//! (`<prefix>/manifest/<20-digit id>.manifest`), each holding the whole state as one
//! snapshot edit with the writer's epoch, each written create-if-absent. There is no
//! `CURRENT`: the highest id is the state. An object store has no rename and no append, and
//! create-if-absent on the next id is what makes two writers unable to interleave: the one
//! that loses the race reads the winner's epoch and stops if it is newer. Protocol and byte
//! layout: `docs/object-storage.md`.

use std::path::{Path, PathBuf};

use super::edit::VersionEdit;
use crate::error::{Error, Result};
use crate::log::{encode_log, read_log, LogKind, TailPolicy, RECORD_HEADER_LEN};
use crate::vfs::{create_if_absent_resolved, is_not_found, CreateOutcome, Vfs};

/// The subdirectory (key prefix) the snapshots live under.
pub const MANIFEST_DIR: &str = "manifest";
const SUFFIX: &str = ".manifest";
/// How many of the newest snapshots a writer keeps: followers and tools reading one just
/// replaced still find it for a while.
pub const KEEP_SNAPSHOTS: u64 = 8;

/// `00000000000000000007.manifest`: 20 digits, so names sort by id.
pub fn snapshot_name(id: u64) -> String {
    format!("{id:020}{SUFFIX}")
}

/// Where snapshot `id` of the database at `dir` lives.
pub fn snapshot_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(MANIFEST_DIR).join(snapshot_name(id))
}

/// The id in a snapshot's name; `None` for any other name.
pub fn parse_snapshot_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The ids of every snapshot, ascending; none for a prefix without a database.
pub fn snapshot_ids(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<u64>> {
    let names = match vfs.list(&dir.join(MANIFEST_DIR)) {
        Ok(n) => n,
        Err(e) if is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut ids: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_snapshot_name(n))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// A snapshot's bytes: the manifest log framing holding one record, the snapshot edit.
pub fn encode_snapshot(edit: &VersionEdit) -> Vec<u8> {
    encode_log(LogKind::Manifest, [edit.encode().as_slice()])
}

/// Reads snapshot `id`. It was created whole, so anything but exactly one intact record is
/// corruption (no torn tail is tolerated).
pub fn read_snapshot(vfs: &dyn Vfs, dir: &Path, id: u64) -> Result<VersionEdit> {
    let path = snapshot_path(dir, id);
    let bytes = vfs.read_all(&path)?;
    decode_snapshot(&bytes, &path)
}

fn decode_snapshot(bytes: &[u8], path: &Path) -> Result<VersionEdit> {
    let log = read_log(bytes, path, LogKind::Manifest, TailPolicy::Strict)?;
    let [record] = log.records.as_slice() else {
        return Err(Error::corruption(
            path,
            0,
            format!(
                "a manifest snapshot holds exactly one record, found {}",
                log.records.len()
            ),
        ));
    };
    let at = record.offset.saturating_add(RECORD_HEADER_LEN as u64);
    VersionEdit::decode(record.payload(bytes), path, at)
}

/// What publishing a snapshot found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// Ours is now snapshot `id`.
    Yes,
    /// Another writer's snapshot holds `id`; its epoch.
    Taken {
        /// The epoch of the writer that holds the id.
        epoch: u64,
    },
}

/// Writes `edit` (a snapshot carrying `writer_epoch`) as snapshot `id`, create-if-absent.
/// A request whose outcome is unknown is resolved by reading the id back.
///
/// Created is not enough: old snapshots are deleted, so a writer paused long enough could
/// create an id that a newer writer used and has since deleted. Its snapshot is then not
/// the newest, which the listing after the create shows: it counts as taken, by the epoch
/// of the newest snapshot.
pub fn publish_snapshot(
    vfs: &dyn Vfs,
    dir: &Path,
    id: u64,
    edit: &VersionEdit,
) -> Result<Published> {
    let path = snapshot_path(dir, id);
    let bytes = encode_snapshot(edit);
    match create_if_absent_resolved(vfs, &path, &bytes)? {
        CreateOutcome::Created => match snapshot_ids(vfs, dir)?.last() {
            Some(&newest) if newest > id => Ok(Published::Taken {
                epoch: read_snapshot(vfs, dir, newest)?.writer_epoch.unwrap_or(0),
            }),
            _ => Ok(Published::Yes),
        },
        CreateOutcome::AlreadyExists => {
            let theirs = read_snapshot(vfs, dir, id)?;
            Ok(Published::Taken {
                epoch: theirs.writer_epoch.unwrap_or(0),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{FaultVfs, IoKind, MemVfs};
    use std::sync::Arc;

    fn snap(epoch: u64) -> VersionEdit {
        VersionEdit {
            log_number: Some(3),
            writer_epoch: Some(epoch),
            ..VersionEdit::default()
        }
    }

    #[test]
    fn names_sort_and_parse() {
        assert_eq!(snapshot_name(7), "00000000000000000007.manifest");
        assert_eq!(
            parse_snapshot_name(&snapshot_name(u64::MAX)),
            Some(u64::MAX)
        );
        assert_eq!(parse_snapshot_name("7.manifest"), None);
        assert_eq!(parse_snapshot_name("0000000000000000000x.manifest"), None);
    }

    #[test]
    fn the_second_writer_of_an_id_learns_the_first_ones_epoch() -> Result<()> {
        let vfs = MemVfs::new();
        let dir = Path::new("db");
        vfs.create_dir_all(&dir.join(MANIFEST_DIR))?;
        assert_eq!(publish_snapshot(&vfs, dir, 1, &snap(5))?, Published::Yes);
        assert_eq!(
            publish_snapshot(&vfs, dir, 1, &snap(4))?,
            Published::Taken { epoch: 5 }
        );
        assert_eq!(read_snapshot(&vfs, dir, 1)?, snap(5));
        assert_eq!(snapshot_ids(&vfs, dir)?, vec![1]);
        assert_eq!(snapshot_ids(&vfs, Path::new("nothing"))?, Vec::<u64>::new());
        Ok(())
    }

    #[test]
    fn an_id_reused_after_its_deletion_is_not_the_newest() -> Result<()> {
        let vfs = MemVfs::new();
        let dir = Path::new("db");
        vfs.create_dir_all(&dir.join(MANIFEST_DIR))?;
        publish_snapshot(&vfs, dir, 1, &snap(2))?;
        publish_snapshot(&vfs, dir, 9, &snap(2))?;
        vfs.remove(&snapshot_path(dir, 1))?;
        // A writer of epoch 1, paused since before id 1 was published, wakes up.
        assert_eq!(
            publish_snapshot(&vfs, dir, 1, &snap(1))?,
            Published::Taken { epoch: 2 }
        );
        Ok(())
    }

    #[test]
    fn an_ambiguous_create_is_resolved_by_reading_back() -> Result<()> {
        let mem = MemVfs::new();
        let vfs = FaultVfs::new(Arc::new(mem.clone()));
        let dir = Path::new("db");
        vfs.create_dir_all(&dir.join(MANIFEST_DIR))?;
        // Ours landed, but the request reported an error.
        vfs.ambiguous_nth(IoKind::CreateIfAbsent, 1);
        assert_eq!(publish_snapshot(&vfs, dir, 1, &snap(2))?, Published::Yes);
        // Another writer's landed first, and our request failed: theirs, not ours.
        mem.create_if_absent(&snapshot_path(dir, 2), &encode_snapshot(&snap(3)))?;
        vfs.fail_nth(IoKind::CreateIfAbsent, 1);
        assert_eq!(
            publish_snapshot(&vfs, dir, 2, &snap(2))?,
            Published::Taken { epoch: 3 }
        );
        // Nothing landed and the request failed: tried again.
        vfs.fail_nth(IoKind::CreateIfAbsent, 1);
        assert_eq!(publish_snapshot(&vfs, dir, 3, &snap(2))?, Published::Yes);
        Ok(())
    }

    #[test]
    fn a_damaged_snapshot_is_corruption_naming_it() -> Result<()> {
        let vfs = MemVfs::new();
        let dir = Path::new("db");
        vfs.create_dir_all(&dir.join(MANIFEST_DIR))?;
        publish_snapshot(&vfs, dir, 1, &snap(1))?;
        let path = snapshot_path(dir, 1);
        let len = vfs.file_size(&path)?;
        vfs.corrupt_byte(&path, len - 1, 0x40)?;
        let err = read_snapshot(&vfs, dir, 1).err();
        assert!(
            matches!(&err, Some(Error::Corruption { file, .. }) if file.contains("00000000000000000001.manifest")),
            "{err:?}"
        );
        Ok(())
    }
}
