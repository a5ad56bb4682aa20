//! The version set: the manifest's state, the one way to change it (`log_and_apply`: make
//! an edit durable, then publish the version it yields), the manifest's rollover, and the
//! opening of the SSTs a version lists.

use std::path::Path;
use std::sync::Arc;

use super::{DbInner, ManifestSink, ManifestState, SuperVersion};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::log::{LogKind, LogWriter};
use crate::manifest::objects::{publish_snapshot, snapshot_path, Published, KEEP_SNAPSHOTS};
use crate::manifest::{manifest_file_name, sst_file_name, write_current, FileMeta, VersionEdit};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::sst::SstReader;
use crate::stats::Counters;
use crate::version::{FileHandle, LsmMeta, Version};
use crate::vfs::Vfs;

/// A manifest larger than this is rewritten as one snapshot edit in a new file.
const MANIFEST_ROLLOVER_BYTES: u64 = 64 << 20;

/// Opens the SST `f` names, as every version lists it: through the database's block cache,
/// its keys read with the file's global sequence number when it was ingested.
pub(crate) fn open_table(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    opts: &Options,
    cache: &Arc<BlockCache>,
    counters: &Arc<Counters>,
    f: &FileMeta,
) -> Result<Arc<FileHandle>> {
    let path = dir.join(sst_file_name(f.number));
    let file = vfs.open_read(&path, opts.use_direct_reads)?;
    let reader = SstReader::open(
        file,
        path.clone(),
        f.number,
        Arc::clone(cache),
        Arc::clone(counters),
        opts.mapped_reads,
    )?
    .with_global_seq(f.global_seq);
    Ok(Arc::new(FileHandle::new(
        f.clone(),
        reader,
        path,
        Arc::clone(vfs),
    )))
}

/// Makes an edit durable in the manifest, then publishes the new version. `make_edit` runs
/// under the manifest lock, so decisions it makes from `meta` cannot race other edits.
/// `flushed` is the frozen memtable whose contents the edit's new files now hold.
pub(crate) fn log_and_apply(
    inner: &DbInner,
    make_edit: impl FnOnce(&LsmMeta) -> Result<VersionEdit>,
    flushed: Option<&Arc<Memtable>>,
) -> Result<()> {
    let mut m = inner.manifest.lock();
    let mut edit = make_edit(&m.meta)?;
    let levels = inner.opts.num_levels;
    let bug = |e: String| Error::InvalidArgument(format!("internal error: bad version edit: {e}"));
    let mut meta = m.meta.clone();
    meta.apply(&edit, levels).map_err(bug)?;
    let next_file = inner
        .next_file_number
        .load(std::sync::atomic::Ordering::SeqCst);
    edit.next_file_number = Some(next_file);
    meta.next_file_number = meta.next_file_number.max(next_file);

    meta.writer_epoch = m.meta.writer_epoch;
    let logged = match &mut m.sink {
        ManifestSink::Log(w) => w.add_record(&edit.encode()).and_then(|_| w.sync()),
        ManifestSink::Objects { epoch } => {
            let epoch = *epoch;
            publish_next_snapshot(inner, &mut m, &meta, epoch)
        }
    };
    if let Err(e) = logged {
        inner.poison(&e);
        return Err(e);
    }
    let (vfs, dir, opts, cache, counters) = (
        &inner.vfs,
        &inner.dir,
        &inner.opts,
        &inner.cache,
        &inner.counters,
    );
    let version = match Version::build(&meta, &mut m.open_files, &mut |f| {
        open_table(vfs, dir, opts, cache, counters, f)
    }) {
        Ok(v) => v,
        Err(e) => {
            inner.poison(&e);
            return Err(e);
        }
    };
    let retired = retire_files(&mut m, &edit);
    match m.sink {
        ManifestSink::Log(_) => retired.iter().for_each(|h| h.mark_obsolete()),
        ManifestSink::Objects { .. } => {
            let at = m.number;
            let mut r = inner.retired.lock();
            r.extend(retired.iter().map(|h| super::gc::Retired::new(h, at)));
        }
    }
    m.meta = meta;
    publish(inner, version, flushed);
    let log_size = match &m.sink {
        ManifestSink::Log(w) => w.file_size(),
        ManifestSink::Objects { .. } => 0,
    };
    if log_size > MANIFEST_ROLLOVER_BYTES {
        if let Err(e) = roll_manifest(inner, &mut m) {
            inner.poison(&e);
            return Err(e);
        }
    }
    let objects = matches!(m.sink, ManifestSink::Objects { .. });
    drop(m);
    if objects {
        super::gc::collect(inner);
    }
    inner.signal_bg();
    Ok(())
}

/// Publishes `meta` as the next snapshot of a database in an object store. Another
/// writer's snapshot at that id means a newer writer opened the database (an older one
/// cannot get past the id where this writer's epoch was published): this one is fenced.
fn publish_next_snapshot(
    inner: &DbInner,
    m: &mut ManifestState,
    meta: &LsmMeta,
    epoch: u64,
) -> Result<()> {
    let id = m.number + 1;
    let mut snap = meta.snapshot_edit();
    snap.writer_epoch = Some(epoch);
    match publish_snapshot(&*inner.vfs, &inner.dir, id, &snap)? {
        Published::Yes => {
            m.number = id;
            if let Some(old) = id.checked_sub(KEEP_SNAPSHOTS) {
                let _ = inner.vfs.remove(&snapshot_path(&inner.dir, old));
            }
            Ok(())
        }
        Published::Taken { epoch: theirs } if theirs > epoch => Err(Error::Fenced(format!(
            "a newer writer (epoch {theirs}) opened {} and published manifest {id}; this \
             writer (epoch {epoch}) accepts no more writes",
            inner.dir.display()
        ))),
        Published::Taken { epoch: theirs } => Err(Error::corruption(
            snapshot_path(&inner.dir, id),
            0,
            format!(
                "manifest {id} holds epoch {theirs}, not newer than this writer's {epoch}: \
                 an older writer got past this writer's epoch"
            ),
        )),
    }
}

/// Files the edit deletes (and every file of a keyspace it drops) leave the open set and are
/// returned, to be deleted once nothing reads them (in a directory: when the last version
/// listing one is gone; in an object store: `gc.rs`). A file the same edit re-adds (a
/// trivial move) stays.
fn retire_files(m: &mut ManifestState, edit: &VersionEdit) -> Vec<Arc<FileHandle>> {
    let mut retired = Vec::new();
    let re_added: Vec<u64> = edit.added_files.iter().map(|(_, _, f)| f.number).collect();
    for (_, _, n) in &edit.deleted_files {
        if !re_added.contains(n) {
            if let Some(h) = m.open_files.remove(n) {
                retired.push(h);
            }
        }
    }
    for ks in &edit.dropped_keyspaces {
        let numbers: Vec<u64> = m
            .meta
            .keyspaces
            .get(ks)
            .map(|k| k.levels.iter().flat_map(|l| l.keys().copied()).collect())
            .unwrap_or_default();
        for n in numbers {
            if let Some(h) = m.open_files.remove(&n) {
                retired.push(h);
            }
        }
    }
    retired
}

/// Swaps in a super version holding `version`, without `flushed` (the frozen memtable
/// whose entries the version's new files now hold).
fn publish(inner: &DbInner, version: Version, flushed: Option<&Arc<Memtable>>) {
    let mut sv = inner.sv.write();
    let imms = sv
        .imms
        .iter()
        .filter(|x| flushed.is_none_or(|f| !Arc::ptr_eq(x, f)))
        .cloned()
        .collect();
    *sv = Arc::new(SuperVersion {
        mem: Arc::clone(&sv.mem),
        imms,
        version: Arc::new(version),
    });
}

/// Starts a new manifest holding one snapshot edit, then points CURRENT at it.
fn roll_manifest(inner: &DbInner, m: &mut ManifestState) -> Result<()> {
    let number = inner.alloc_file_number();
    let path = inner.dir.join(manifest_file_name(number));
    let mut w = LogWriter::new(inner.vfs.create(&path)?, path, LogKind::Manifest)?;
    let mut snap = m.meta.snapshot_edit();
    snap.next_file_number = Some(
        inner
            .next_file_number
            .load(std::sync::atomic::Ordering::SeqCst),
    );
    w.add_record(&snap.encode())?;
    w.sync()?;
    write_current(&*inner.vfs, &inner.dir, number)?;
    let old = std::mem::replace(&mut m.sink, ManifestSink::Log(w));
    drop(old);
    let _ = inner
        .vfs
        .remove(&inner.dir.join(manifest_file_name(m.number)));
    m.number = number;
    Ok(())
}
