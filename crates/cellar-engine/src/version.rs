//! Versions: which SST files and range tombstones make up each keyspace at one moment.
//!
//! [`LsmMeta`] is the plain metadata the manifest's edits build up (replayed at open, then
//! updated by every flush and compaction). [`Version`] is an immutable, shareable view of it
//! with the files open; readers and iterators pin one with an `Arc`, so a file stays on disk
//! until the last version that lists it is gone (see [`FileHandle`]'s `Drop`). Each keyspace's
//! range tombstones are fragmented once here, for every read of the version to share.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use crate::error::Result;
use crate::manifest::{FileMeta, RangeTombstone, VersionEdit};
use crate::options::KeyspaceOptions;
use crate::range_del::FragmentedTombstones;
use crate::sst::SstReader;
use crate::types::{user_key, SeqNo};
use crate::vfs::Vfs;

/// Metadata of one keyspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyspaceMeta {
    /// The keyspace's name.
    pub name: String,
    /// Per level, files by number.
    pub levels: Vec<BTreeMap<u64, FileMeta>>,
    /// Live range tombstones.
    pub range_tombstones: BTreeSet<RangeTombstone>,
    /// How its files are written.
    pub options: KeyspaceOptions,
}

/// Everything the manifest records, as applied so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LsmMeta {
    /// Every live keyspace, by number.
    pub keyspaces: BTreeMap<u32, KeyspaceMeta>,
    /// WAL files with a number below this are obsolete.
    pub log_number: u64,
    /// The next number to give a new file.
    pub next_file_number: u64,
    /// The last sequence number the manifest records.
    pub last_sequence: SeqNo,
    /// The next number to give a new keyspace.
    pub next_keyspace_id: u32,
    /// The epoch of the database's writer in an object store (0 in a directory).
    pub writer_epoch: u64,
    /// Where that writer keeps its WAL: `Some(0)` local disk, `Some(1)` the bucket; `None` in
    /// a directory.
    pub wal_placement: Option<u64>,
}

impl LsmMeta {
    /// Applies one edit; `Err` names what does not fit (the caller reports it as corruption
    /// of the manifest, or as a bug when it is a fresh edit).
    pub fn apply(
        &mut self,
        edit: &VersionEdit,
        num_levels: usize,
    ) -> std::result::Result<(), String> {
        if let Some(n) = edit.log_number {
            self.log_number = n;
        }
        if let Some(n) = edit.next_file_number {
            self.next_file_number = n;
        }
        if let Some(n) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(n);
        }
        if let Some(n) = edit.next_keyspace_id {
            self.next_keyspace_id = n;
        }
        if let Some(n) = edit.writer_epoch {
            self.writer_epoch = n;
        }
        if let Some(p) = edit.wal_placement {
            self.wal_placement = Some(p);
        }
        for (id, name) in &edit.created_keyspaces {
            if self.keyspaces.contains_key(id) {
                return Err(format!("keyspace id {id} created twice"));
            }
            self.keyspaces.insert(
                *id,
                KeyspaceMeta {
                    name: name.clone(),
                    levels: vec![BTreeMap::new(); num_levels],
                    range_tombstones: BTreeSet::new(),
                    options: KeyspaceOptions::default(),
                },
            );
            self.next_keyspace_id = self.next_keyspace_id.max(id + 1);
        }
        for (id, o) in &edit.keyspace_options {
            self.keyspace_mut(*id)?.options = *o;
        }
        for id in &edit.dropped_keyspaces {
            self.keyspaces.remove(id);
        }
        for (ks, level, number) in &edit.deleted_files {
            let k = self.keyspace_mut(*ks)?;
            let lv = k
                .levels
                .get_mut(*level as usize)
                .ok_or_else(|| format!("level {level} out of range"))?;
            if lv.remove(number).is_none() {
                return Err(format!(
                    "deleted file {number} is not in keyspace {ks} level {level}"
                ));
            }
        }
        for (ks, level, meta) in &edit.added_files {
            let k = self.keyspace_mut(*ks)?;
            let lv = k
                .levels
                .get_mut(*level as usize)
                .ok_or_else(|| format!("level {level} out of range"))?;
            lv.insert(meta.number, meta.clone());
            self.next_file_number = self.next_file_number.max(meta.number + 1);
        }
        for (ks, t) in &edit.added_range_tombstones {
            self.keyspace_mut(*ks)?.range_tombstones.insert(t.clone());
        }
        for (ks, t) in &edit.deleted_range_tombstones {
            self.keyspace_mut(*ks)?.range_tombstones.remove(t);
        }
        Ok(())
    }

    fn keyspace_mut(&mut self, ks: u32) -> std::result::Result<&mut KeyspaceMeta, String> {
        self.keyspaces
            .get_mut(&ks)
            .ok_or_else(|| format!("keyspace id {ks} does not exist"))
    }

    /// One edit that rebuilds this state from nothing (the first record of a new manifest).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut e = VersionEdit {
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            next_keyspace_id: Some(self.next_keyspace_id),
            writer_epoch: (self.writer_epoch > 0).then_some(self.writer_epoch),
            wal_placement: self.wal_placement,
            ..VersionEdit::default()
        };
        for (id, k) in &self.keyspaces {
            e.created_keyspaces.push((*id, k.name.clone()));
            if k.options != KeyspaceOptions::default() {
                e.keyspace_options.push((*id, k.options));
            }
            for (level, files) in k.levels.iter().enumerate() {
                for f in files.values() {
                    e.added_files.push((*id, level as u32, f.clone()));
                }
            }
            for t in &k.range_tombstones {
                e.added_range_tombstones.push((*id, t.clone()));
            }
        }
        e
    }

    /// The numbers of every SST of every keyspace.
    pub fn live_file_numbers(&self) -> BTreeSet<u64> {
        self.keyspaces
            .values()
            .flat_map(|k| k.levels.iter().flat_map(|l| l.keys().copied()))
            .collect()
    }
}

/// An open SST file. When a version edit removes it, it is marked obsolete and deleted from
/// disk as soon as no version (and so no reader or iterator) holds it any more.
pub struct FileHandle {
    pub meta: FileMeta,
    pub reader: SstReader,
    pub path: PathBuf,
    obsolete: AtomicBool,
    vfs: Arc<dyn Vfs>,
}

impl FileHandle {
    pub fn new(meta: FileMeta, reader: SstReader, path: PathBuf, vfs: Arc<dyn Vfs>) -> Self {
        FileHandle {
            meta,
            reader,
            path,
            obsolete: AtomicBool::new(false),
            vfs,
        }
    }
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.meta.smallest)
    }
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.meta.largest)
    }
    pub fn overlaps(&self, start: &[u8], end_inclusive: &[u8]) -> bool {
        self.smallest_user_key() <= end_inclusive && self.largest_user_key() >= start
    }
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Relaxed);
    }
}

impl Drop for FileHandle {
    fn drop(&mut self) {
        if self.obsolete.load(Relaxed) {
            // A failure leaves an orphan that the next open removes.
            let _ = self.vfs.remove(&self.path);
        }
    }
}

#[derive(Clone)]
pub struct KeyspaceVersion {
    pub name: Arc<str>,
    /// Level 0 newest first (by max sequence); deeper levels sorted by key, disjoint.
    pub levels: Vec<Vec<Arc<FileHandle>>>,
    pub range_tombstones: Vec<RangeTombstone>,
    /// `range_tombstones`, fragmented: what reads check keys against.
    pub range_dels: Arc<FragmentedTombstones>,
    pub options: KeyspaceOptions,
}

impl KeyspaceVersion {
    /// The file of a sorted level (≥ 1) that may hold `key`.
    pub fn file_for_key(&self, level: usize, key: &[u8]) -> Option<&Arc<FileHandle>> {
        let files = self.levels.get(level)?;
        let i = files.partition_point(|f| f.largest_user_key() < key);
        files.get(i).filter(|f| f.smallest_user_key() <= key)
    }

    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels
            .get(level)
            .map(|l| l.iter().map(|f| f.meta.size).sum())
            .unwrap_or(0)
    }

    /// Files of `level` whose user-key range meets `[start, end]`.
    pub fn overlapping(&self, level: usize, start: &[u8], end: &[u8]) -> Vec<Arc<FileHandle>> {
        self.levels
            .get(level)
            .map(|l| {
                l.iter()
                    .filter(|f| f.overlaps(start, end))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[derive(Clone, Default)]
pub struct Version {
    pub keyspaces: BTreeMap<u32, KeyspaceVersion>,
}

impl Version {
    /// Builds the version for `meta`, reusing open handles from `open_files` and opening
    /// the rest with `open`.
    pub fn build(
        meta: &LsmMeta,
        open_files: &mut HashMap<u64, Arc<FileHandle>>,
        open: &mut dyn FnMut(&FileMeta) -> Result<Arc<FileHandle>>,
    ) -> Result<Version> {
        let mut v = Version::default();
        for (id, k) in &meta.keyspaces {
            let mut levels = Vec::with_capacity(k.levels.len());
            for files in &k.levels {
                let mut lv = Vec::with_capacity(files.len());
                for f in files.values() {
                    let h = match open_files.get(&f.number) {
                        Some(h) => Arc::clone(h),
                        None => {
                            let h = open(f)?;
                            open_files.insert(f.number, Arc::clone(&h));
                            h
                        }
                    };
                    lv.push(h);
                }
                levels.push(lv);
            }
            if let Some(l0) = levels.first_mut() {
                l0.sort_by_key(|f| std::cmp::Reverse(f.meta.max_seq));
            }
            for l in levels.iter_mut().skip(1) {
                l.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
            }
            v.keyspaces.insert(
                *id,
                KeyspaceVersion {
                    name: Arc::from(k.name.as_str()),
                    levels,
                    range_tombstones: k.range_tombstones.iter().cloned().collect(),
                    range_dels: Arc::new(FragmentedTombstones::build(&k.range_tombstones)),
                    options: k.options,
                },
            );
        }
        Ok(v)
    }
}
