//! Opening a database in an object store (`StorageLayout::Objects`). The order is the
//! fencing protocol of `docs/object-storage.md`:
//!
//! 1. read the newest manifest snapshot (its writer epoch `e`);
//! 2. replay the local WALs this machine kept for epoch `e`'s writer, if any, into level-0
//!    SSTs (uploaded, not yet referenced);
//! 3. publish snapshot `id + 1` with epoch `e + 1`, create-if-absent. Losing that race
//!    means another writer opened at the same moment: drop what step 2 uploaded and start
//!    over from step 1;
//! 4. only now, with this writer's epoch published so that no older writer can publish
//!    again, delete what no snapshot references (orphan SSTs, old local WALs).
//!
//! File numbers are drawn from a range of their own per epoch (`epoch << EPOCH_SHIFT`), so
//! a fenced writer still uploading can never overwrite a file of a newer one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::open::{
    assemble, create_wal, existing_file_numbers, flush_recovered, new_block_cache, new_meta,
    replay_wals, Opened,
};
use super::version_set::open_table;
use super::{write, DbInner, ManifestSink};
use crate::batch::decode_batch;
use crate::error::{Error, Result};
use crate::log::objects::{
    encode_wal_object, read_wal_object, wal_object_ids, wal_object_path, ObjectWal, WAL_DIR,
};
use crate::manifest::leases::min_pinned_snapshot;
use crate::manifest::objects::{
    publish_snapshot, read_snapshot, snapshot_ids, snapshot_path, Published, KEEP_SNAPSHOTS,
    MANIFEST_DIR,
};
use crate::manifest::{parse_file_name, sst_file_name, FileKind};
use crate::memtable::Memtable;
use crate::options::{Options, WalLocation};
use crate::stats::Counters;
use crate::types::SeqNo;
use crate::version::{LsmMeta, Version};
use crate::vfs::{create_if_absent_resolved, CreateOutcome};
use crate::vfs::{is_not_found, NoLock, Vfs};

/// Epoch `e` numbers its files from `e << EPOCH_SHIFT`: 2^40 files per epoch, 2^24 epochs.
pub(crate) const EPOCH_SHIFT: u32 = 40;
/// `LsmMeta::wal_placement` of a writer with `wal=local` and with `wal=object`.
const WAL_LOCAL: u64 = 0;
const WAL_IN_OBJECTS: u64 = 1;
/// Opens that lose the race for the next snapshot to another opening writer, before giving up.
const OPEN_ATTEMPTS: usize = 3;

pub(super) fn open_objects(dir: &Path, opts: Options, wal: WalLocation) -> Result<DbInner> {
    opts.vfs.create_dir_all(&dir.join(MANIFEST_DIR))?;
    let lock: Box<dyn crate::vfs::FileLock> = match &wal {
        WalLocation::Local { vfs, dir } => {
            vfs.create_dir_all(dir)?;
            vfs.lock(&dir.join("LOCK"))?
        }
        WalLocation::Object => {
            opts.vfs.create_dir_all(&dir.join(WAL_DIR))?;
            Box::new(NoLock)
        }
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let opened = match &wal {
            WalLocation::Local { vfs, dir: wal_dir } => try_open(dir, &opts, vfs, wal_dir),
            WalLocation::Object => try_open_object_wal(dir, &opts),
        };
        match opened {
            Ok(o) => return assemble(Opened { lock, opts, ..o }),
            Err(OpenError::LostRace(e)) if attempt >= OPEN_ATTEMPTS => return Err(e),
            Err(OpenError::LostRace(_)) => continue,
            Err(OpenError::Other(e)) => return Err(e),
        }
    }
}

enum OpenError {
    /// Another writer published the snapshot id this open wanted.
    LostRace(Error),
    Other(Error),
}

impl From<Error> for OpenError {
    fn from(e: Error) -> Self {
        OpenError::Other(e)
    }
}

/// Steps 1–4 of the module doc. The returned `Opened` lacks the lock and options, which the
/// caller owns across attempts (placeholders are filled in by it).
fn try_open(
    dir: &Path,
    opts: &Options,
    wal_vfs: &Arc<dyn Vfs>,
    wal_dir: &Path,
) -> std::result::Result<Opened, OpenError> {
    let vfs = Arc::clone(&opts.vfs);
    let counters = Arc::new(Counters::default());
    let cache = new_block_cache(opts, &counters);
    let (mut meta, latest) = load_newest(&*vfs, dir, opts)?;
    let epoch = meta.writer_epoch + 1;

    let wal_names = wal_vfs.list(wal_dir)?;
    let (wals, _) = existing_file_numbers(&wal_names);
    let first = meta.next_file_number.max(epoch << EPOCH_SHIFT).max(1);
    let next_file = AtomicU64::new(first);
    let alloc = || next_file.fetch_add(1, Ordering::SeqCst);
    let existing = latest.is_some();
    let (recovered, last_seq) = replay_wals(&**wal_vfs, wal_dir, opts, &meta, existing, wals)?;
    let before = meta.live_file_numbers();
    flush_recovered(&vfs, dir, opts, &alloc, &mut meta, &recovered, last_seq)?;

    let wal_number = alloc();
    meta.log_number = wal_number;
    meta.last_sequence = last_seq;
    meta.writer_epoch = epoch;
    meta.wal_placement = Some(WAL_LOCAL);
    meta.next_file_number = next_file.load(Ordering::SeqCst);
    let id = latest.map_or(1, |l| l + 1);
    if let Published::Taken { epoch: theirs } =
        publish_snapshot(&*vfs, dir, id, &meta.snapshot_edit())?
    {
        for n in meta.live_file_numbers().difference(&before) {
            let _ = vfs.remove(&dir.join(sst_file_name(*n)));
        }
        return Err(OpenError::LostRace(Error::Fenced(format!(
            "another writer (epoch {theirs}) opened {} at the same time and published \
             manifest {id} first",
            dir.display()
        ))));
    }
    let wal_writer = create_wal(&**wal_vfs, wal_dir, wal_number, false)?;
    let mut open_files = HashMap::new();
    let version = Version::build(&meta, &mut open_files, &mut |f| {
        open_table(&vfs, dir, opts, &cache, &counters, f)
    })?;
    remove_unreferenced(&*vfs, dir, &meta, id);
    remove_old_wals(&**wal_vfs, wal_dir, &wal_names, wal_number);
    Ok(Opened {
        dir: dir.to_path_buf(),
        opts: opts.clone(),
        wal_vfs: Arc::clone(wal_vfs),
        wal_dir: wal_dir.to_path_buf(),
        lock: Box::new(NoLock),
        counters,
        cache,
        meta,
        open_files,
        version,
        wal_writer,
        wal_number,
        last_seq,
        next_file: next_file.load(Ordering::SeqCst),
        sink: ManifestSink::Objects { epoch },
        manifest_number: id,
    })
}

/// Opening with `wal=object`: publish the new epoch, fence the WAL (an empty object at the
/// next free id), replay every WAL object below the fence into level 0, publish that, and
/// delete the replayed objects. Between the two publishes an older writer may still add WAL
/// objects below the fence; they are replayed, so nothing it acknowledged is lost.
fn try_open_object_wal(dir: &Path, opts: &Options) -> std::result::Result<Opened, OpenError> {
    let vfs = Arc::clone(&opts.vfs);
    let counters = Arc::new(Counters::default());
    let cache = new_block_cache(opts, &counters);
    let (mut meta, latest) = load_newest(&*vfs, dir, opts)?;
    let epoch = meta.writer_epoch + 1;
    let next_file = AtomicU64::new(meta.next_file_number.max(epoch << EPOCH_SHIFT).max(1));
    let alloc = || next_file.fetch_add(1, Ordering::SeqCst);
    meta.writer_epoch = epoch;
    meta.wal_placement = Some(WAL_IN_OBJECTS);
    meta.next_file_number = next_file.load(Ordering::SeqCst);
    let mut id = latest.map_or(1, |l| l + 1);
    publish_or_lose(&*vfs, dir, id, &meta)?;

    let (fence, below) = fence_wal(&*vfs, dir, epoch)?;
    let (recovered, last_seq, fences) = replay_wal_objects(&*vfs, dir, opts, &meta, &below)?;
    flush_recovered(&vfs, dir, opts, &alloc, &mut meta, &recovered, last_seq)?;
    let wal_number = alloc();
    meta.log_number = wal_number;
    meta.last_sequence = last_seq;
    meta.next_file_number = next_file.load(Ordering::SeqCst);
    id += 1;
    publish_or_lose(&*vfs, dir, id, &meta)?;
    remove_replayed_wal_objects(&*vfs, dir, &below, &fences);

    let wal_vfs: Arc<dyn Vfs> = Arc::new(ObjectWal::new(Arc::clone(&vfs), dir, epoch, fence + 1));
    let wal_writer = create_wal(&*wal_vfs, dir, wal_number, false)?;
    let mut open_files = HashMap::new();
    let version = Version::build(&meta, &mut open_files, &mut |f| {
        open_table(&vfs, dir, opts, &cache, &counters, f)
    })?;
    remove_unreferenced(&*vfs, dir, &meta, id);
    Ok(Opened {
        dir: dir.to_path_buf(),
        opts: opts.clone(),
        wal_vfs,
        wal_dir: dir.to_path_buf(),
        lock: Box::new(NoLock),
        counters,
        cache,
        meta,
        open_files,
        version,
        wal_writer,
        wal_number,
        last_seq,
        next_file: next_file.load(Ordering::SeqCst),
        sink: ManifestSink::Objects { epoch },
        manifest_number: id,
    })
}

/// Deletes the replayed WAL objects, but never a fence: a fence holds the id an older
/// writer, however long it was paused, would write next (its last id + 1); freed, that id
/// would take its write. Fences are 40 bytes each, one per open.
fn remove_replayed_wal_objects(vfs: &dyn Vfs, dir: &Path, ids: &[u64], fences: &[u64]) {
    for id in ids.iter().filter(|id| !fences.contains(id)) {
        let _ = vfs.remove(&wal_object_path(dir, *id));
    }
}

/// Publishes `meta` as snapshot `id`; another writer's snapshot there lost this open the race.
fn publish_or_lose(
    vfs: &dyn Vfs,
    dir: &Path,
    id: u64,
    meta: &LsmMeta,
) -> std::result::Result<(), OpenError> {
    match publish_snapshot(vfs, dir, id, &meta.snapshot_edit())? {
        Published::Yes => Ok(()),
        Published::Taken { epoch } => Err(OpenError::LostRace(Error::Fenced(format!(
            "another writer (epoch {epoch}) opened {} at the same time and published \
             manifest {id} first",
            dir.display()
        )))),
    }
}

/// Creates this writer's fence: an empty WAL object at the first free id past the newest.
/// Returns its id and the ids below it (older writers' objects, to replay). An id taken by
/// an older writer in the meantime is replayed too; by a newer one, this open lost.
fn fence_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    epoch: u64,
) -> std::result::Result<(u64, Vec<u64>), OpenError> {
    let mut below = wal_object_ids(vfs, dir)?;
    let mut fence = below.last().map_or(1, |l| l + 1);
    let bytes = encode_wal_object(epoch, 0, &[]);
    loop {
        match create_if_absent_resolved(vfs, &wal_object_path(dir, fence), &bytes)? {
            CreateOutcome::Created => return Ok((fence, below)),
            CreateOutcome::AlreadyExists => {
                let theirs = read_wal_object(vfs, dir, fence)?.epoch;
                if theirs > epoch {
                    return Err(OpenError::LostRace(Error::Fenced(format!(
                        "a newer writer (epoch {theirs}) fenced the WAL of {}",
                        dir.display()
                    ))));
                }
                below.push(fence);
                fence += 1;
            }
        }
    }
}

/// Replays, in id order, the batches of the WAL objects `ids` whose logical WAL the
/// manifest does not cover yet, into one memtable. Sequence numbers must run on without a
/// gap: one means an object is missing. Also returns which of `ids` are fences (read here
/// once, so that the deletion after the replay need not read them again).
fn replay_wal_objects(
    vfs: &dyn Vfs,
    dir: &Path,
    opts: &Options,
    meta: &LsmMeta,
    ids: &[u64],
) -> Result<(Arc<Memtable>, SeqNo, Vec<u64>)> {
    let recovered = Arc::new(Memtable::new(0, opts.memtable_filter_bytes()));
    let mut last_seq = meta.last_sequence;
    let mut expected: Option<u64> = None;
    let mut fences = Vec::new();
    for id in ids {
        let object = read_wal_object(vfs, dir, *id)?;
        if object.logical == 0 {
            fences.push(*id);
        }
        if object.logical < meta.log_number {
            continue;
        }
        let path = wal_object_path(dir, *id);
        for (offset, payload) in &object.batches {
            let b = decode_batch(payload, &path, *offset)?;
            if expected.is_some_and(|e| e != b.seq) {
                return Err(Error::corruption(
                    &path,
                    *offset,
                    format!(
                        "sequence gap: expected {}, found {} (a WAL object is missing)",
                        expected.unwrap_or_default(),
                        b.seq
                    ),
                ));
            }
            expected = Some(b.seq + u64::from(b.count));
            write::apply_ops(&recovered, b.seq, b.ops.iter().copied(), &|ks| {
                meta.keyspaces.contains_key(&ks)
            });
            if b.count > 0 {
                last_seq = last_seq.max(b.seq + u64::from(b.count) - 1);
            }
        }
    }
    Ok((recovered, last_seq, fences))
}

/// The newest snapshot's state and id; a new database's first state and `None`.
fn load_newest(vfs: &dyn Vfs, dir: &Path, opts: &Options) -> Result<(LsmMeta, Option<u64>)> {
    let ids = snapshot_ids(vfs, dir)?;
    let Some(&id) = ids.last() else {
        if holds_tables(vfs, dir)? {
            return Err(Error::corruption(
                dir.join(MANIFEST_DIR),
                0,
                "no manifest snapshot, but the prefix holds SST objects; restore the \
                 manifest/ objects or move the SSTs away",
            ));
        }
        if !opts.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "no database at {} (create_if_missing is off)",
                dir.display()
            )));
        }
        return Ok((new_meta(opts.num_levels)?, None));
    };
    if opts.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "database at {} already exists (error_if_exists is on)",
            dir.display()
        )));
    }
    Ok((load_snapshot(vfs, dir, id, opts.num_levels)?, Some(id)))
}

/// The state snapshot `id` holds, with every keyspace given `num_levels` levels (a writer's
/// open and a follower's poll read it alike).
pub(super) fn load_snapshot(
    vfs: &dyn Vfs,
    dir: &Path,
    id: u64,
    num_levels: usize,
) -> Result<LsmMeta> {
    let mut meta = LsmMeta::default();
    meta.apply(&read_snapshot(vfs, dir, id)?, num_levels)
        .map_err(|e| Error::corruption(snapshot_path(dir, id), 0, e))?;
    for k in meta.keyspaces.values_mut() {
        if k.levels.len() < num_levels {
            k.levels.resize(num_levels, Default::default());
        }
    }
    Ok(meta)
}

fn holds_tables(vfs: &dyn Vfs, dir: &Path) -> Result<bool> {
    match vfs.list(dir) {
        Ok(names) => Ok(names
            .iter()
            .any(|n| matches!(parse_file_name(n), Some(FileKind::Sst(_))))),
        Err(e) if is_not_found(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Deletes SSTs the published snapshot does not list (a fenced writer's uploads, a crashed
/// flush's) and snapshots older than the newest [`KEEP_SNAPSHOTS`]. Best effort.
fn remove_unreferenced(vfs: &dyn Vfs, dir: &Path, meta: &LsmMeta, id: u64) {
    let live = meta.live_file_numbers();
    // A follower's lease on an older snapshot may pin files this one no longer lists, and
    // which they are is not known here: leave them to a later open.
    let pinned_older = !matches!(min_pinned_snapshot(vfs, dir), Ok(p) if p.is_none_or(|p| p >= id));
    if pinned_older {
        return;
    }
    if let Ok(names) = vfs.list(dir) {
        for name in names {
            if let Some(FileKind::Sst(n)) = parse_file_name(&name) {
                if !live.contains(&n) {
                    let _ = vfs.remove(&dir.join(name));
                }
            }
        }
    }
    if let Ok(ids) = snapshot_ids(vfs, dir) {
        for old in ids.into_iter().filter(|o| o + KEEP_SNAPSHOTS <= id) {
            let _ = vfs.remove(&snapshot_path(dir, old));
        }
    }
}

/// Deletes the local WALs other than the new one: replayed ones (now in SSTs the published
/// snapshot lists) and those of older epochs, which no writer may replay.
fn remove_old_wals(vfs: &dyn Vfs, dir: &Path, names: &[String], keep: u64) {
    for name in names {
        match parse_file_name(name) {
            Some(FileKind::Wal(n)) if n != keep => {
                let _ = vfs.remove(&dir.join(name));
            }
            Some(FileKind::Temp) => {
                let _ = vfs.remove(&dir.join(name));
            }
            _ => {}
        }
    }
    let _ = vfs.sync_dir(dir);
}
