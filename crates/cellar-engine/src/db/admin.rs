//! Keyspaces, manual flush and compaction, checkpoints and statistics.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::background::run_compaction;
use super::flush::flush_all_immutables;
use super::open::DEFAULT_KEYSPACE;
use super::version_set::log_and_apply;
use super::Db;
use crate::batch::Keyspace;
use crate::compaction::{pick_bottom_rewrite, pick_range};
use crate::error::{Error, Result};
use crate::log::{LogKind, LogWriter};
use crate::manifest::{manifest_file_name, sst_file_name, write_current, VersionEdit};
use crate::options::KeyspaceOptions;
use crate::stats::{KeyspaceStats, LevelStats, Stats};

const MAX_KEYSPACE_NAME_LEN: usize = 255;

impl Db {
    /// The keyspace every database has.
    pub fn default_keyspace(&self) -> Keyspace {
        Keyspace {
            id: 0,
            name: Arc::from(DEFAULT_KEYSPACE),
        }
    }

    /// The keyspace named `name`, or [`Error::KeyspaceNotFound`].
    pub fn keyspace(&self, name: &str) -> Result<Keyspace> {
        self.inner
            .keyspace_by_name(name)
            .ok_or_else(|| Error::KeyspaceNotFound(name.to_string()))
    }

    /// The names of the live keyspaces.
    pub fn keyspace_names(&self) -> Vec<String> {
        let sv = self.inner.super_version();
        sv.version
            .keyspaces
            .values()
            .map(|k| k.name.to_string())
            .collect()
    }

    /// Creates a keyspace, durably, in one manifest edit.
    pub fn create_keyspace(&self, name: &str) -> Result<Keyspace> {
        self.create_keyspace_with(name, KeyspaceOptions::default())
    }

    /// Creates a keyspace whose files are written with `ks_opts` (compression, block
    /// size, bloom filter) instead of the database's defaults.
    pub fn create_keyspace_with(&self, name: &str, ks_opts: KeyspaceOptions) -> Result<Keyspace> {
        if ks_opts.block_size_bytes == Some(0) {
            return Err(Error::InvalidArgument(
                "keyspace block size must be at least 1 byte".into(),
            ));
        }
        if name.is_empty() || name.len() > MAX_KEYSPACE_NAME_LEN {
            return Err(Error::InvalidArgument(format!(
                "keyspace name must be 1 to {MAX_KEYSPACE_NAME_LEN} bytes"
            )));
        }
        self.inner.check_poisoned()?;
        let mut id = 0;
        log_and_apply(
            &self.inner,
            |meta| {
                if meta.keyspaces.values().any(|k| k.name == name) {
                    return Err(Error::KeyspaceExists(name.to_string()));
                }
                id = meta.next_keyspace_id;
                let keyspace_options = if ks_opts == KeyspaceOptions::default() {
                    Vec::new()
                } else {
                    vec![(id, ks_opts)]
                };
                Ok(VersionEdit {
                    created_keyspaces: vec![(id, name.to_string())],
                    keyspace_options,
                    next_keyspace_id: Some(id + 1),
                    ..VersionEdit::default()
                })
            },
            None,
        )?;
        Ok(Keyspace {
            id,
            name: Arc::from(name),
        })
    }

    /// Drops a keyspace and, atomically, all its data; its files are deleted once no
    /// reader uses them.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        if name == DEFAULT_KEYSPACE {
            return Err(Error::InvalidArgument(
                "the default keyspace cannot be dropped".into(),
            ));
        }
        self.inner.check_poisoned()?;
        let mut dropped = None;
        log_and_apply(
            &self.inner,
            |meta| {
                let id = meta
                    .keyspaces
                    .iter()
                    .find(|(_, k)| k.name == name)
                    .map(|(id, _)| *id)
                    .ok_or_else(|| Error::KeyspaceNotFound(name.to_string()))?;
                dropped = Some(id);
                // Its files go with it: `log_and_apply` marks them obsolete.
                let edit = VersionEdit {
                    dropped_keyspaces: vec![id],
                    ..VersionEdit::default()
                };
                Ok(edit)
            },
            None,
        )?;
        // Ids are never reused, so a filter left behind would only leak.
        if let Some(id) = dropped {
            self.inner.compaction_filters.write().remove(&id);
        }
        Ok(())
    }

    /// Writes every memtable to level 0 and waits until that is done.
    pub fn flush(&self) -> Result<()> {
        let inner = &self.inner;
        inner.check_poisoned()?;
        let target = {
            let mut wal = inner.wal.lock();
            inner.rotate_memtable(&mut wal)?;
            wal.number
        };
        if !inner.opts.background_work {
            return flush_all_immutables(inner);
        }
        inner.signal_bg();
        loop {
            inner.check_poisoned()?;
            let epoch = inner.bg.lock().epoch;
            let sv = inner.super_version();
            if sv.imms.iter().all(|m| m.wal_number() >= target) {
                return Ok(());
            }
            let mut bg = inner.bg.lock();
            if bg.epoch == epoch {
                inner.bg_cv.wait_for(&mut bg, Duration::from_millis(100));
            }
        }
    }

    /// Flushes, then compacts every file of `ks` overlapping `[start, end]` (None =
    /// unbounded) down to the deepest level that holds data.
    pub fn compact_range(
        &self,
        ks: &Keyspace,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        self.flush()?;
        let inner = &self.inner;
        let _c = inner.compaction_lock.lock();
        let last = {
            let sv = inner.super_version();
            let kv = super::read::keyspace_version(&sv, ks)?;
            kv.levels
                .iter()
                .rposition(|l| !l.is_empty())
                .unwrap_or(0)
                .max(1)
        };
        for level in 0..last {
            let sv = inner.super_version();
            if let Some(spec) = pick_range(&sv.version, ks.id, level, start, end) {
                run_compaction(inner, &spec)?;
            }
        }
        let sv = inner.super_version();
        if let Some(spec) = pick_bottom_rewrite(&sv.version, ks.id, last, start, end) {
            run_compaction(inner, &spec)?;
        }
        drop(_c);
        inner.signal_bg();
        Ok(())
    }

    /// Makes a consistent copy of the database in `dir` (which must not exist or be
    /// empty), hard-linking its immutable files. The copy opens as a database of its own.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        let inner = &self.inner;
        let vfs = &inner.vfs;
        if matches!(
            inner.opts.storage,
            crate::options::StorageLayout::Objects { .. }
        ) {
            return Err(Error::InvalidArgument(
                "a checkpoint hard-links files in one directory; a database in an object \
                 store is copied with `cellar backup`"
                    .into(),
            ));
        }
        if vfs.exists(dir) && !vfs.list(dir)?.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} is not empty",
                dir.display()
            )));
        }
        self.flush()?;
        // The version installed with this metadata (both change under the manifest lock)
        // holds every listed file open, so none is deleted while they are linked.
        let (mut meta, _sv) = {
            let m = inner.manifest.lock();
            (m.meta.clone(), inner.super_version())
        };
        vfs.create_dir_all(dir)?;
        let mut linked: Vec<std::path::PathBuf> = Vec::new();
        for n in meta.live_file_numbers() {
            let name = sst_file_name(n);
            if let Err(e) = vfs.hard_link(&inner.dir.join(&name), &dir.join(&name)) {
                // Leave the target empty, so that a retry into it can succeed.
                for l in &linked {
                    let _ = vfs.remove(l);
                }
                return Err(e);
            }
            linked.push(dir.join(&name));
        }
        let manifest_number = meta.next_file_number.max(1);
        // Every write up to the flush is in the files: the copy needs no WAL.
        meta.log_number = manifest_number + 1;
        meta.next_file_number = manifest_number + 2;
        let path = dir.join(manifest_file_name(manifest_number));
        let mut w = LogWriter::new(vfs.create(&path)?, path, LogKind::Manifest)?;
        w.add_record(&meta.snapshot_edit().encode())?;
        w.sync()?;
        vfs.sync_dir(dir)?;
        write_current(&**vfs, dir, manifest_number)?;
        Ok(())
    }

    /// Up to `parts - 1` user keys, ascending, that cut the keyspace's stored data into
    /// about `parts` pieces of similar size: for scanning pieces in parallel. Taken from the
    /// files' indexes (no I/O unless index partitions are not resident); memtable contents are not weighed. Keys may be
    /// shortened separators rather than stored keys.
    pub fn split_keys(&self, ks: &Keyspace, parts: usize) -> Result<Vec<Vec<u8>>> {
        let sv = self.inner.super_version();
        let kv = sv
            .version
            .keyspaces
            .get(&ks.id)
            .ok_or_else(|| Error::KeyspaceNotFound(ks.name.to_string()))?;
        if parts < 2 {
            return Ok(Vec::new());
        }
        // Every data block is one sample, weighed by its size.
        let mut samples: Vec<(Vec<u8>, u64)> = Vec::new();
        for f in kv.levels.iter().flatten() {
            for e in f.reader.index_entries()? {
                samples.push((e.user_key, e.handle.size));
            }
        }
        samples.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let total: u64 = samples.iter().map(|s| s.1).sum();
        let step = total / parts as u64;
        let mut out: Vec<Vec<u8>> = Vec::with_capacity(parts);
        let mut acc = 0u64;
        for (key, size) in samples {
            acc += size;
            let due = step > 0 && acc >= step * (out.len() as u64 + 1) && out.len() + 1 < parts;
            if due && out.last().is_none_or(|l| *l < key) {
                out.push(key);
            }
        }
        Ok(out)
    }

    /// Registers (or with `None` removes) the compaction filter of `ks`: from the next
    /// compaction on, it decides which of the keyspace's entries are dropped for good (see
    /// `compaction::CompactionFilter`). Not persisted: register it again after each open.
    pub fn set_compaction_filter(
        &self,
        ks: &Keyspace,
        filter: Option<Arc<dyn crate::compaction::CompactionFilter>>,
    ) {
        let mut f = self.inner.compaction_filters.write();
        match filter {
            Some(x) => f.insert(ks.id, x),
            None => f.remove(&ks.id),
        };
    }

    /// A snapshot of the engine's counters and of the shape of every keyspace's tree.
    pub fn stats(&self) -> Stats {
        let inner = &self.inner;
        let mut s = Stats::default();
        inner.counters.snapshot_into(&mut s);
        let sv = inner.super_version();
        s.memtable_bytes = sv.memtables().map(|m| m.approx_bytes() as u64).sum();
        s.immutable_memtables = sv.imms.len();
        s.block_cache_bytes = inner.cache.used_bytes();
        s.metadata_budget_used_bytes = inner.cache.metadata_budget().used_bytes();
        s.warm_up_budget_used_bytes = inner.cache.warm_up().map_or(0, |w| w.used_bytes());
        s.last_sequence = inner.last_visible.load();
        s.storage = inner.vfs.counters();
        s.writer_epoch = inner.manifest.lock().meta.writer_epoch;
        for k in sv.version.keyspaces.values() {
            let mut ks = KeyspaceStats {
                name: k.name.to_string(),
                levels: Vec::new(),
                range_tombstones: k.range_tombstones.len(),
            };
            for (level, files) in k.levels.iter().enumerate() {
                for f in files {
                    s.resident_index_filter_bytes += f.reader.resident_bytes();
                    s.sst_entries += f.meta.num_entries;
                    s.sst_bytes += f.meta.size;
                }
                ks.levels.push(LevelStats {
                    level,
                    files: files.len(),
                    bytes: files.iter().map(|f| f.meta.size).sum(),
                });
            }
            s.keyspaces.push(ks);
        }
        s
    }

    /// Waits until no flush is pending and no level is over its compaction target.
    pub fn wait_for_background_work(&self) -> Result<()> {
        let inner = &self.inner;
        loop {
            inner.check_poisoned()?;
            let epoch = inner.bg.lock().epoch;
            let sv = inner.super_version();
            let busy =
                !sv.imms.is_empty() || crate::compaction::pick(&sv.version, &inner.opts).is_some();
            if !busy || !inner.opts.background_work {
                return Ok(());
            }
            let mut bg = inner.bg.lock();
            if bg.epoch == epoch {
                inner.bg_cv.wait_for(&mut bg, Duration::from_millis(50));
            }
        }
    }
}
