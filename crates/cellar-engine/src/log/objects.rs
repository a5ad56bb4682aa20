//! The WAL of a database in an object store with `wal=object`: each group commit becomes
//! one object `<prefix>/wal/<20-digit id>.wal`, written create-if-absent. Ids form one
//! sequence for the database, across writers: a new writer creates an empty "fence" object
//! at the next free id, so an older writer's next WAL write finds its id taken, reads the
//! newer epoch there, and fails with `Error::Fenced` before acknowledging anything more.
//!
//! An object is a whole log (the framing of `docs/format/wal.md`, magic `CELLAR-W`): first a
//! header record (the writer's epoch and the logical WAL number of the memtable its batches
//! belong to, 8 bytes each, little-endian), then the batch records. Logical numbers are the
//! file numbers the engine gives its WALs, so flush accounting (`log_number`) works as for
//! files; the object ids only order and fence.
//!
//! [`ObjectWal`] presents this to the write path as a [`Vfs`] whose files are logical WALs:
//! appends collect records in memory, `sync` writes them as the next object. Nothing of the
//! write path changes; a write is durable when its object is (`Sync` writes at once, the
//! others within `ObjectStoreOptions::wal_flush_interval`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{encode_log, read_log, LogKind, TailPolicy, FILE_HEADER_LEN, RECORD_HEADER_LEN};
use crate::error::{Error, Result};
use crate::manifest::{parse_file_name, FileKind};
use crate::vfs::{
    create_if_absent_resolved, is_not_found, CreateOutcome, FileLock, NoLock, RandomAccessFile,
    Vfs, WritableFile,
};

/// The key prefix WAL objects live under.
pub const WAL_DIR: &str = "wal";
const SUFFIX: &str = ".wal";
const HEADER_RECORD_LEN: usize = 16;

/// `00000000000000000042.wal`.
pub fn wal_object_name(id: u64) -> String {
    format!("{id:020}{SUFFIX}")
}

/// The id in a WAL object's name.
pub fn parse_wal_object_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The ids of every WAL object under `dir` (the database prefix), ascending.
pub fn wal_object_ids(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<u64>> {
    let names = match vfs.list(&dir.join(WAL_DIR)) {
        Ok(n) => n,
        Err(e) if is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut ids: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_wal_object_name(n))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// Where WAL object `id` of the database at `dir` lives.
pub fn wal_object_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(WAL_DIR).join(wal_object_name(id))
}

/// A WAL object's bytes: its header record, then `records` (already framed, as `LogWriter`
/// frames them).
pub fn encode_wal_object(epoch: u64, logical: u64, records: &[u8]) -> Vec<u8> {
    let mut header = [0u8; HEADER_RECORD_LEN];
    header[..8].copy_from_slice(&epoch.to_le_bytes());
    header[8..].copy_from_slice(&logical.to_le_bytes());
    let mut out = encode_log(LogKind::Wal, [header.as_slice()]);
    out.extend_from_slice(records);
    out
}

/// One WAL object, read back.
pub struct WalObject {
    /// The epoch of the writer that wrote it.
    pub epoch: u64,
    /// The logical WAL (memtable) its batches belong to; 0 for a fence.
    pub logical: u64,
    /// The batch records: (file offset of the payload, payload).
    pub batches: Vec<(u64, Vec<u8>)>,
}

/// Reads WAL object `id`. It was created whole: any damage is corruption.
pub fn read_wal_object(vfs: &dyn Vfs, dir: &Path, id: u64) -> Result<WalObject> {
    let path = wal_object_path(dir, id);
    let bytes = vfs.read_all(&path)?;
    let log = read_log(&bytes, &path, LogKind::Wal, TailPolicy::Strict)?;
    let Some((first, rest)) = log.records.split_first() else {
        return Err(Error::corruption(
            &path,
            0,
            "a WAL object has no header record",
        ));
    };
    let header = first.payload(&bytes);
    if header.len() != HEADER_RECORD_LEN {
        return Err(Error::corruption(
            &path,
            first.offset,
            format!(
                "a WAL object's header record holds {} bytes, not 16",
                header.len()
            ),
        ));
    }
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&header[i..i + 8]);
        u64::from_le_bytes(w)
    };
    let batches = rest
        .iter()
        .map(|r| {
            let at = r.offset.saturating_add(RECORD_HEADER_LEN as u64);
            (at, r.payload(&bytes).to_vec())
        })
        .collect();
    Ok(WalObject {
        epoch: word(0),
        logical: word(8),
        batches,
    })
}

/// What the WAL objects of one writer share: the next id, and which ids hold each logical
/// WAL (deleted together when its memtable is flushed).
struct Shared {
    next_id: u64,
    by_logical: BTreeMap<u64, Vec<u64>>,
}

/// The WAL of one writer in the object store, as the write path's [`Vfs`].
pub struct ObjectWal {
    bucket: Arc<dyn Vfs>,
    dir: PathBuf,
    epoch: u64,
    shared: Arc<Mutex<Shared>>,
}

impl ObjectWal {
    /// The WAL of writer `epoch` of the database at `dir`, writing from id `next_id` on.
    pub fn new(bucket: Arc<dyn Vfs>, dir: &Path, epoch: u64, next_id: u64) -> ObjectWal {
        ObjectWal {
            bucket,
            dir: dir.to_path_buf(),
            epoch,
            shared: Arc::new(Mutex::new(Shared {
                next_id,
                by_logical: BTreeMap::new(),
            })),
        }
    }
}

fn logical_number(path: &Path) -> Result<u64> {
    match path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_file_name)
    {
        Some(FileKind::Wal(n)) => Ok(n),
        _ => Err(Error::InvalidArgument(format!(
            "internal error: {} is not a WAL name",
            path.display()
        ))),
    }
}

fn unsupported(what: &str) -> Error {
    Error::InvalidArgument(format!("internal error: the object WAL does not {what}"))
}

impl Vfs for ObjectWal {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(ObjectWalFile {
            wal: ObjectWal {
                bucket: Arc::clone(&self.bucket),
                dir: self.dir.clone(),
                epoch: self.epoch,
                shared: Arc::clone(&self.shared),
            },
            logical: logical_number(path)?,
            pending: Vec::new(),
            appended: 0,
        }))
    }
    fn open_read(&self, _: &Path, _: bool) -> Result<Arc<dyn RandomAccessFile>> {
        Err(unsupported("read WALs as files"))
    }
    fn read_all(&self, _: &Path) -> Result<Vec<u8>> {
        Err(unsupported("read WALs as files"))
    }
    fn rename(&self, _: &Path, _: &Path) -> Result<()> {
        Err(unsupported("rename"))
    }
    /// Removes a logical WAL: every object that holds its batches.
    fn remove(&self, path: &Path) -> Result<()> {
        let logical = logical_number(path)?;
        let ids = self
            .shared
            .lock()
            .by_logical
            .remove(&logical)
            .unwrap_or_default();
        for id in ids {
            self.bucket.remove(&wal_object_path(&self.dir, id))?;
        }
        Ok(())
    }
    fn hard_link(&self, _: &Path, _: &Path) -> Result<()> {
        Err(unsupported("link"))
    }
    fn list(&self, _: &Path) -> Result<Vec<String>> {
        Err(unsupported("list"))
    }
    fn create_dir_all(&self, _: &Path) -> Result<()> {
        Ok(())
    }
    fn sync_dir(&self, _: &Path) -> Result<()> {
        Ok(())
    }
    fn exists(&self, _: &Path) -> bool {
        false
    }
    fn file_size(&self, _: &Path) -> Result<u64> {
        Err(unsupported("size files"))
    }
    fn create_if_absent(&self, _: &Path, _: &[u8]) -> Result<CreateOutcome> {
        Err(unsupported("create files whole"))
    }
    fn lock(&self, _: &Path) -> Result<Box<dyn FileLock>> {
        Ok(Box::new(NoLock))
    }
}

/// One logical WAL: the records appended since the last `sync`, waiting for their object.
struct ObjectWalFile {
    wal: ObjectWal,
    logical: u64,
    pending: Vec<u8>,
    /// Bytes `LogWriter` appended, its file header included.
    appended: u64,
}

impl WritableFile for ObjectWalFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        // The log writer's file header: each object carries its own.
        let skip = (FILE_HEADER_LEN as u64).saturating_sub(self.appended) as usize;
        self.pending
            .extend_from_slice(data.get(skip..).unwrap_or(&[]));
        self.appended += data.len() as u64;
        Ok(())
    }

    /// Writes the pending records as the next object. Its id taken means a newer writer
    /// fenced this one.
    fn sync(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let w = &self.wal;
        let mut shared = w.shared.lock();
        let id = shared.next_id;
        let path = wal_object_path(&w.dir, id);
        let bytes = encode_wal_object(w.epoch, self.logical, &self.pending);
        match create_if_absent_resolved(&*w.bucket, &path, &bytes)? {
            CreateOutcome::Created => {
                shared.next_id += 1;
                shared.by_logical.entry(self.logical).or_default().push(id);
                self.pending.clear();
                Ok(())
            }
            CreateOutcome::AlreadyExists => {
                let theirs = read_wal_object(&*w.bucket, &w.dir, id)?.epoch;
                if theirs > w.epoch {
                    Err(Error::Fenced(format!(
                        "a newer writer (epoch {theirs}) took WAL object {id} of {}; this \
                         writer (epoch {}) accepts no more writes",
                        w.dir.display(),
                        w.epoch
                    )))
                } else {
                    Err(Error::corruption(
                        &path,
                        0,
                        format!(
                            "WAL object {id} holds epoch {theirs}, not newer than this \
                             writer's {}",
                            w.epoch
                        ),
                    ))
                }
            }
        }
    }

    fn len(&self) -> u64 {
        self.appended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::LogWriter;
    use crate::manifest::wal_file_name;
    use crate::vfs::MemVfs;

    #[test]
    fn each_sync_is_one_object_and_a_taken_id_fences() -> Result<()> {
        let bucket = MemVfs::new();
        let dir = Path::new("db");
        bucket.create_dir_all(&dir.join(WAL_DIR))?;
        let wal = ObjectWal::new(Arc::new(bucket.clone()), dir, 3, 10);
        let path = dir.join(wal_file_name(5));
        let mut w = LogWriter::new(wal.create(&path)?, path.clone(), LogKind::Wal)?;
        w.add_record(b"one")?;
        w.add_record(b"two")?;
        w.sync()?;
        w.sync()?;
        w.add_record(b"three")?;
        w.sync()?;
        assert_eq!(wal_object_ids(&bucket, dir)?, vec![10, 11]);
        let first = read_wal_object(&bucket, dir, 10)?;
        assert_eq!((first.epoch, first.logical), (3, 5));
        let payloads: Vec<&[u8]> = first.batches.iter().map(|(_, p)| p.as_slice()).collect();
        assert_eq!(payloads, vec![&b"one"[..], &b"two"[..]]);

        // A newer writer's fence at the next id.
        bucket.create_if_absent(&wal_object_path(dir, 12), &encode_wal_object(4, 0, &[]))?;
        w.add_record(b"four")?;
        assert!(matches!(w.sync(), Err(Error::Fenced(_))));

        wal.remove(&path)?;
        assert_eq!(wal_object_ids(&bucket, dir)?, vec![12]);
        Ok(())
    }
}
