//! Bulk ingestion: sorted files written outside the memtable and the WAL, then added to one
//! or more keyspaces by a single manifest edit (all of them or none).
//!
//! Sequence numbers. The files are written before anyone knows which sequence number the
//! load will get, so every entry is stored with sequence 0 and the manifest records the
//! file's *global sequence* `g`, chosen at commit as the newest sequence of all: readers
//! restamp each key with `g` (see `SstReader::with_global_seq`). One entry per user key is
//! therefore required. Commit, with writers held off:
//!   1. memtables holding keys in the files' ranges are flushed, so no older version of an
//!      ingested key can be found in a memtable ahead of it;
//!   2. with the compaction lock (no compaction output can land in a range meanwhile), each
//!      file goes to the deepest level such that it overlaps no file at that level or above:
//!      everything above it is then newer, everything below older;
//!   3. `g` = last sequence + 1; an `Ingested` op takes `g` in the WAL (recovery checks WAL
//!      sequence numbers are contiguous) and the WAL is synced, so that every write acknowledged
//!      before the load survives whatever the load survives; then one manifest edit adds every
//!      file.
//!
//! A crash before the edit is synced leaves only orphan files, removed at the next open.

use std::path::PathBuf;
use std::sync::Arc;

use super::version_set::log_and_apply;
use super::Db;
use crate::batch::{Keyspace, WriteBatch};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::manifest::{sst_file_name, FileMeta, VersionEdit};
use crate::options::StorageLayout;
use crate::sst::{SstBuilder, SstOptions};
use crate::types::{self, user_key, ValueKind, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::version::LsmMeta;

/// Writes the files of one keyspace's share of a load. Keys must be added in strictly
/// increasing order; files are cut at the database's target file size.
pub struct IngestWriter {
    db: Db,
    ks: Keyspace,
    sst: SstOptions,
    target_file_size_bytes: u64,
    current: Option<(u64, SstBuilder)>,
    files: Vec<FileMeta>,
    last_key: Vec<u8>,
    ikey: Vec<u8>,
    entries: u64,
}

/// Finished files waiting for [`Db::ingest`]. Dropped without being ingested, they are
/// deleted.
pub struct IngestFiles {
    db: Db,
    ks: Keyspace,
    files: Vec<FileMeta>,
    entries: u64,
}

impl IngestFiles {
    /// The keyspace the files are for.
    pub fn keyspace(&self) -> &Keyspace {
        &self.ks
    }
    /// The number of entries in the files.
    pub fn entries(&self) -> u64 {
        self.entries
    }
    /// The number of files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }
    /// The files' total size in bytes.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    fn remove_files(&mut self) {
        let inner = &self.db.inner;
        for f in self.files.drain(..) {
            let _ = inner.vfs.remove(&inner.dir.join(sst_file_name(f.number)));
        }
    }
}

impl Drop for IngestFiles {
    fn drop(&mut self) {
        self.remove_files();
    }
}

impl Db {
    /// Starts writing files for a bulk load into `ks`.
    pub fn ingest_writer(&self, ks: &Keyspace) -> Result<IngestWriter> {
        self.inner.check_poisoned()?;
        let sv = self.inner.super_version();
        let kv = sv
            .version
            .keyspaces
            .get(&ks.id)
            .ok_or_else(|| Error::KeyspaceNotFound(ks.name.to_string()))?;
        Ok(IngestWriter {
            db: self.clone(),
            ks: ks.clone(),
            sst: SstOptions::for_keyspace(&self.inner.opts, &kv.options),
            target_file_size_bytes: self.inner.opts.target_file_size_bytes,
            current: None,
            files: Vec::new(),
            last_key: Vec::new(),
            ikey: Vec::new(),
            entries: 0,
        })
    }

    /// Makes every set of files visible at once, as the newest data of their keyspaces.
    /// Writers wait while this runs (it may flush memtables first).
    pub fn ingest(&self, sets: Vec<IngestFiles>) -> Result<()> {
        let inner = &self.inner;
        inner.check_poisoned()?;
        for s in &sets {
            if !Arc::ptr_eq(&s.db.inner, inner) {
                return Err(Error::InvalidArgument(
                    "ingest: files were written for another database".into(),
                ));
            }
        }
        if sets.iter().all(|s| s.files.is_empty()) {
            return Ok(());
        }
        let _writers = inner.exclusive_writes();
        // In an object store with a local WAL, the machine's loss keeps the ingested files
        // but not unflushed writes: flushing first keeps what survives a prefix of the
        // writes, as everywhere else.
        let local_wal = matches!(inner.opts.storage, StorageLayout::Objects { .. });
        if local_wal || self.memtables_overlap(&sets) {
            self.flush()?;
        }
        let _compaction = inner.compaction_lock.lock();
        let mut wal = inner.wal.lock();
        let g = wal.last_seq + 1;
        let mut marker = WriteBatch::ingested_marker();
        let logged = wal
            .writer
            .add_record(marker.encode_with_seq(g))
            .and_then(|_| wal.sync(&inner.opts, g + 1));
        if let Err(e) = logged {
            inner.poison(&e);
            return Err(e);
        }
        wal.last_seq = g;
        let r = log_and_apply(
            inner,
            |meta| {
                let mut edit = VersionEdit {
                    last_sequence: Some(g),
                    ..VersionEdit::default()
                };
                place_files(meta, &sets, g, &mut edit)?;
                Ok(edit)
            },
            None,
        );
        // The sequence is used either way: readers may see it (nothing has it on failure).
        inner.last_visible.store(g);
        drop(wal);
        if let Err(e) = r {
            // After a failed manifest write the record may still be on disk: the files stay
            // for the next open to sort out (it removes them unless the edit made it).
            if inner.check_poisoned().is_err() {
                for mut s in sets {
                    s.files.clear();
                }
            }
            return Err(e);
        }
        for mut s in sets {
            s.files.clear(); // now the version's: not to be deleted
        }
        inner.signal_bg();
        Ok(())
    }

    fn memtables_overlap(&self, sets: &[IngestFiles]) -> bool {
        let sv = self.inner.super_version();
        sets.iter().any(|s| {
            let (Some(first), Some(last)) = (s.files.first(), s.files.last()) else {
                return false;
            };
            let (lo, hi) = (user_key(&first.smallest), user_key(&last.largest));
            sv.memtables().any(|m| {
                let mut it = m.iter(s.ks.id);
                it.seek(&types::lookup_key(lo, types::MAX_SEQ));
                it.valid() && user_key(it.key()) <= hi
            })
        })
    }
}

/// Chooses each file's level (the deepest one with no overlap at it or above) and adds it
/// to `edit`, restamped with `g`.
fn place_files(meta: &LsmMeta, sets: &[IngestFiles], g: u64, edit: &mut VersionEdit) -> Result<()> {
    // (keyspace, level, smallest, largest) of the files placed so far by this edit.
    let mut placed: Vec<(u32, usize, Vec<u8>, Vec<u8>)> = Vec::new();
    for s in sets {
        let k = meta
            .keyspaces
            .get(&s.ks.id)
            .ok_or_else(|| Error::KeyspaceNotFound(s.ks.name.to_string()))?;
        for f in &s.files {
            let (lo, hi) = (user_key(&f.smallest), user_key(&f.largest));
            let overlaps_at = |level: usize| {
                k.levels[level]
                    .values()
                    .any(|o| user_key(&o.smallest) <= hi && user_key(&o.largest) >= lo)
                    || placed.iter().any(|(ks, l, a, b)| {
                        *ks == s.ks.id && *l == level && a.as_slice() <= hi && b.as_slice() >= lo
                    })
            };
            let mut level = 0;
            if !overlaps_at(0) {
                while level + 1 < k.levels.len() && !overlaps_at(level + 1) {
                    level += 1;
                }
            }
            placed.push((s.ks.id, level, lo.to_vec(), hi.to_vec()));
            let mut m = f.clone();
            m.smallest = restamp(&f.smallest, g);
            m.largest = restamp(&f.largest, g);
            m.min_seq = g;
            m.max_seq = g;
            m.global_seq = Some(g);
            edit.added_files.push((s.ks.id, level as u32, m));
        }
    }
    Ok(())
}

fn restamp(ikey: &[u8], g: u64) -> Vec<u8> {
    match types::split_internal(ikey) {
        Some((uk, trailer)) => types::make_internal_key(uk, g, types::unpack_trailer(trailer).1),
        None => ikey.to_vec(),
    }
}

impl IngestWriter {
    /// Adds `key` → `value`; keys must be strictly increasing.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add(key, value, ValueKind::Put)
    }

    /// Adds a deletion of `key` (hides older versions once ingested).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.add(key, b"", ValueKind::Delete)
    }

    fn add(&mut self, key: &[u8], value: &[u8], kind: ValueKind) -> Result<()> {
        if key.len() > MAX_KEY_LEN || value.len() > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "ingest: key of {} bytes or value of {} bytes over the limit ({MAX_KEY_LEN} / {MAX_VALUE_LEN})",
                key.len(),
                value.len()
            )));
        }
        if self.entries > 0 && key <= self.last_key.as_slice() {
            return Err(Error::InvalidArgument(
                "ingest: keys must be added in strictly increasing order".into(),
            ));
        }
        let cut = self
            .current
            .as_ref()
            .is_some_and(|(_, b)| b.estimated_file_size() >= self.target_file_size_bytes);
        if cut {
            self.finish_file()?;
        }
        if self.current.is_none() {
            let inner = &self.db.inner;
            let number = inner.alloc_file_number();
            let path: PathBuf = inner.dir.join(sst_file_name(number));
            let file = inner.vfs.create(&path)?;
            self.current = Some((number, SstBuilder::new(file, self.sst.clone())));
        }
        self.ikey.clear();
        self.ikey.extend_from_slice(key);
        self.ikey
            .extend_from_slice(&types::pack_trailer(0, kind as u8).to_le_bytes());
        if let Some((_, b)) = self.current.as_mut() {
            b.add(&self.ikey, value)?;
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.entries += 1;
        Ok(())
    }

    fn finish_file(&mut self) -> Result<()> {
        if let Some((number, b)) = self.current.take() {
            let s = b.finish()?;
            self.files.push(FileMeta {
                number,
                size: s.file_size,
                smallest: s.smallest,
                largest: s.largest,
                min_seq: 0,
                max_seq: 0,
                num_entries: s.num_entries,
                num_deletions: s.num_deletions,
                global_seq: None,
            });
        }
        Ok(())
    }

    /// Finishes (and syncs) the last file.
    pub fn finish(mut self) -> Result<IngestFiles> {
        let r = self.finish_file();
        let mut out = IngestFiles {
            db: self.db.clone(),
            ks: self.ks.clone(),
            files: std::mem::take(&mut self.files),
            entries: self.entries,
        };
        if let Err(e) = r {
            out.remove_files();
            return Err(e);
        }
        let inner = &self.db.inner;
        if let Err(e) = inner.vfs.sync_dir(&inner.dir) {
            out.remove_files();
            return Err(e);
        }
        Ok(out)
    }
}

impl Drop for IngestWriter {
    /// An abandoned writer leaves no files behind.
    fn drop(&mut self) {
        let inner = &self.db.inner;
        if let Some((number, b)) = self.current.take() {
            drop(b);
            let _ = inner.vfs.remove(&inner.dir.join(sst_file_name(number)));
        }
        for f in self.files.drain(..) {
            let _ = inner.vfs.remove(&inner.dir.join(sst_file_name(f.number)));
        }
    }
}
