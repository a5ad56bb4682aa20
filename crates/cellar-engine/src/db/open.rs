//! Opening a database: manifest replay, WAL replay, a fresh WAL and manifest, and removal of
//! files nothing refers to. The order is what makes recovery idempotent: the new manifest
//! (naming the L0 files that hold the replayed WALs) is made current before any old WAL or
//! orphan is removed, so a crash at any point leaves a state the next open recovers from.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use super::version_set::open_table;
use super::visibility::VisibleSeq;
use super::{flush, write, BgState, DbInner, ManifestSink, ManifestState, SuperVersion, WalState};
use crate::batch::decode_batch;
use crate::cache::{BlockCache, WarmUp};
use crate::error::{Error, Result};
use crate::log::{read_log, LogContents, LogKind, LogWriter, TailPolicy};
use crate::manifest::{
    manifest_file_name, parse_file_name, read_current, read_manifest, wal_file_name, write_current,
    FileKind, VersionEdit,
};
use crate::memtable::Memtable;
use crate::options::{KeyspaceOptions, Options, StorageLayout};
use crate::stats::Counters;
use crate::types::SeqNo;
use crate::version::{FileHandle, LsmMeta, Version};
use crate::vfs::{FileLock, Vfs};

pub(crate) const DEFAULT_KEYSPACE: &str = "default";

pub(super) fn new_meta(num_levels: usize) -> Result<LsmMeta> {
    let mut meta = LsmMeta {
        next_file_number: 1,
        ..LsmMeta::default()
    };
    let edit = VersionEdit {
        created_keyspaces: vec![(0, DEFAULT_KEYSPACE.to_string())],
        next_keyspace_id: Some(1),
        ..VersionEdit::default()
    };
    meta.apply(&edit, num_levels)
        .map_err(|e| Error::InvalidArgument(format!("initial version: {e}")))?;
    Ok(meta)
}

/// Refuses settings under which writers could wait forever or files could not be cut.
fn validate_options(o: &Options) -> Result<()> {
    let bad = |why: &str| Err(Error::InvalidArgument(format!("options: {why}")));
    if o.num_levels < 2 {
        return bad("num_levels must be at least 2");
    }
    if o.max_immutable_memtables == 0 {
        return bad("max_immutable_memtables must be at least 1 (writers would wait forever)");
    }
    if o.flush_threads == 0 && o.background_work {
        return bad("flush_threads must be at least 1 (frozen memtables would never be written)");
    }
    if o.l0_compaction_trigger == 0 {
        return bad("l0_compaction_trigger must be at least 1");
    }
    if o.l0_stop_trigger < o.l0_compaction_trigger {
        return bad("l0_stop_trigger must be at least l0_compaction_trigger (writers would wait for a compaction that never starts)");
    }
    if o.memtable_size_bytes == 0 || o.block_size_bytes == 0 || o.target_file_size_bytes == 0 {
        return bad("memtable, block and target file sizes must be positive");
    }
    if o.level_size_ratio < 2 {
        return bad("level_size_ratio must be at least 2");
    }
    Ok(())
}

fn multi_get_pool(threads: usize) -> Result<Option<rayon::ThreadPool>> {
    if threads <= 1 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("cellar-mget-{i}"))
        .build()
        .map(Some)
        .map_err(|e| {
            Error::io(
                "multi_get thread pool",
                std::io::Error::other(e.to_string()),
            )
        })
}

/// Whether `dir` holds data a new database must not delete: any SST, or a WAL with records.
fn holds_data(vfs: &dyn Vfs, dir: &Path, names: &[String]) -> Result<bool> {
    for name in names {
        match parse_file_name(name) {
            Some(FileKind::Sst(_)) => return Ok(true),
            Some(FileKind::Wal(_)) => {
                let path = dir.join(name);
                let bytes = vfs.read_all(&path)?;
                let log = read_log(&bytes, &path, LogKind::Wal, TailPolicy::TolerateTornTail);
                if log.map_or(true, |l| !l.records.is_empty()) {
                    return Ok(true);
                }
            }
            _ => {}
        }
    }
    Ok(false)
}

/// Where a path passed to `Db::open` points: a directory as given, or, for an `s3://`
/// URL, the prefix in the bucket with `Options::vfs` and `Options::storage` set to reach it.
pub(super) fn resolve_location(
    path: &Path,
    opts: Options,
    writer: bool,
) -> Result<(PathBuf, Options)> {
    let Some(url) = super::location::object_store_url(path) else {
        return Ok((path.to_path_buf(), opts));
    };
    super::location::open_url(url, opts, writer)
}

/// Opens (or creates) the database in `dir`, in named phases whose order makes recovery
/// idempotent (see the module doc).
pub(super) fn open_inner(dir: &Path, opts: Options) -> Result<DbInner> {
    validate_options(&opts)?;
    match opts.storage.clone() {
        StorageLayout::Directory => open_directory(dir, opts),
        StorageLayout::Objects { wal } => super::open_objects::open_objects(dir, opts, wal),
    }
}

fn open_directory(dir: &Path, opts: Options) -> Result<DbInner> {
    let vfs = Arc::clone(&opts.vfs);
    require_dir(&*vfs, dir, &opts)?;
    let lock = vfs.lock(&dir.join("LOCK"))?;
    let counters = Arc::new(Counters::default());
    let cache = new_block_cache(&opts, &counters);

    let names = vfs.list(dir)?;
    let (mut meta, existing) = load_meta(&*vfs, dir, &opts, &names)?;
    let (wals, max_seen) = existing_file_numbers(&names);
    let next_file = AtomicU64::new(meta.next_file_number.max(max_seen + 1).max(1));
    let alloc = || next_file.fetch_add(1, Ordering::SeqCst);

    let (recovered, last_seq) = replay_wals(&*vfs, dir, &opts, &meta, existing, wals)?;
    flush_recovered(&vfs, dir, &opts, &alloc, &mut meta, &recovered, last_seq)?;

    // The new WAL's number goes into the manifest before the file exists: while a replayed
    // WAL is the newest file of its kind it is read tolerating a torn (or reserved, all
    // zero) tail, but once a newer WAL exists it must be complete. Created first, the new
    // WAL would make a crash before CURRENT names the new manifest unrecoverable: the old
    // manifest still lists the replayed WAL, now not the newest.
    let wal_number = alloc();
    let manifest_number = alloc();
    meta.log_number = wal_number;
    meta.last_sequence = last_seq;
    meta.next_file_number = next_file.load(Ordering::SeqCst);
    let manifest_writer = write_new_manifest(&*vfs, dir, &meta, manifest_number)?;
    let mapped = matches!(opts.storage, StorageLayout::Directory);
    let wal_writer = create_wal(&*vfs, dir, wal_number, mapped)?;

    let mut open_files = HashMap::new();
    let version = Version::build(&meta, &mut open_files, &mut |f| {
        open_table(&vfs, dir, &opts, &cache, &counters, f)
    })?;
    remove_obsolete(&*vfs, dir, &names, &meta, wal_number, manifest_number);
    assemble(Opened {
        dir: dir.to_path_buf(),
        wal_vfs: Arc::clone(&vfs),
        wal_dir: dir.to_path_buf(),
        lock,
        counters,
        cache,
        meta,
        open_files,
        version,
        wal_writer,
        wal_number,
        last_seq,
        next_file: next_file.load(Ordering::SeqCst),
        sink: ManifestSink::Log(manifest_writer),
        manifest_number,
        opts,
    })
}

/// What an open recovered and created, for [`assemble`].
pub(super) struct Opened {
    pub dir: PathBuf,
    pub opts: Options,
    pub wal_vfs: Arc<dyn Vfs>,
    pub wal_dir: PathBuf,
    pub lock: Box<dyn FileLock>,
    pub counters: Arc<Counters>,
    pub cache: Arc<BlockCache>,
    pub meta: LsmMeta,
    pub open_files: HashMap<u64, Arc<FileHandle>>,
    pub version: Version,
    pub wal_writer: LogWriter,
    pub wal_number: u64,
    pub last_seq: SeqNo,
    pub next_file: u64,
    pub sink: ManifestSink,
    pub manifest_number: u64,
}

/// The engine over what an open recovered: an empty memtable on the new WAL, the version.
pub(super) fn assemble(o: Opened) -> Result<DbInner> {
    let sv = SuperVersion {
        mem: Arc::new(Memtable::new(o.wal_number, o.opts.memtable_filter_bytes())),
        imms: Vec::new(),
        version: Arc::new(o.version),
    };
    Ok(DbInner {
        dir: o.dir,
        vfs: Arc::clone(&o.opts.vfs),
        wal_vfs: o.wal_vfs,
        wal_dir: o.wal_dir,
        counters: o.counters,
        cache: o.cache,
        sv: RwLock::new(Arc::new(sv)),
        last_visible: VisibleSeq::new(o.last_seq),
        next_file_number: AtomicU64::new(o.next_file),
        wal: Mutex::new(WalState::new(
            o.wal_writer,
            o.wal_number,
            o.last_seq,
            &o.opts,
        )),
        writers: Mutex::new(write::WriteQueue::default()),
        writers_cv: Condvar::new(),
        write_gate: parking_lot::RwLock::new(()),
        manifest: Mutex::new(ManifestState {
            meta: o.meta,
            sink: o.sink,
            number: o.manifest_number,
            open_files: o.open_files,
        }),
        compaction_lock: Mutex::new(()),
        flushes: Mutex::new(flush::FlushClaims::default()),
        flushes_cv: Condvar::new(),
        bg: Mutex::new(BgState::default()),
        bg_cv: Condvar::new(),
        snapshots: Arc::new(Mutex::new(BTreeMap::new())),
        multi_get_pool: multi_get_pool(o.opts.multi_get_threads)?,
        multi_get_wait_permille: AtomicU64::new(1000),
        multi_get_miss_permille: AtomicU64::new(1000),
        compaction_filters: Default::default(),
        retired: Mutex::new(Vec::new()),
        follow: None,
        poisoned: Default::default(),
        poison_reason: Mutex::new(None),
        _lock: o.lock,
        opts: o.opts,
    })
}

/// Creates `dir` (with `create_if_missing`), or requires that it exists.
fn require_dir(vfs: &dyn Vfs, dir: &Path, opts: &Options) -> Result<()> {
    if opts.create_if_missing {
        vfs.create_dir_all(dir)
    } else if !vfs.exists(dir) {
        Err(Error::InvalidArgument(format!(
            "no database at {} (create_if_missing is off)",
            dir.display()
        )))
    } else {
        Ok(())
    }
}

/// The database's block cache, with the doorkeeper and the warm-up its options ask for.
pub(super) fn new_block_cache(opts: &Options, counters: &Arc<Counters>) -> Arc<BlockCache> {
    let mut cache = BlockCache::with_metadata_budget(
        opts.block_cache_size_bytes,
        opts.max_resident_metadata_bytes,
    );
    if opts.block_cache_doorkeeper && !opts.use_direct_reads {
        cache = cache.with_doorkeeper();
    }
    if opts.warm_up_budget_bytes > 0 && !opts.use_direct_reads {
        cache = cache.with_warm_up(Arc::new(WarmUp::new(
            opts.warm_up_budget_bytes,
            opts.warm_up_read_bytes_per_sec,
            Arc::clone(counters),
        )));
    }
    Arc::new(cache)
}

/// The manifest `CURRENT` names, replayed (or a new database's first state), with every
/// keyspace given `num_levels` levels; and whether the database existed.
fn load_meta(
    vfs: &dyn Vfs,
    dir: &Path,
    opts: &Options,
    names: &[String],
) -> Result<(LsmMeta, bool)> {
    let current = read_current(vfs, dir)?;
    let existing = current.is_some();
    let mut meta = match current {
        // Never start afresh over the files of a database whose CURRENT is gone: the new
        // database would delete them all as orphans. Only an interrupted creation (a WAL
        // with no records and a manifest, nothing acknowledged yet) may be started over.
        None if holds_data(vfs, dir, names)? => {
            return Err(Error::corruption(
                dir.join("CURRENT"),
                0,
                "CURRENT is missing but the directory holds database files; \
                 restore CURRENT (it names the live MANIFEST-NNNNNN) or move the files away",
            ))
        }
        None if !opts.create_if_missing => {
            return Err(Error::InvalidArgument(format!(
                "no database at {} (create_if_missing is off)",
                dir.display()
            )))
        }
        None => new_meta(opts.num_levels)?,
        Some(_) if opts.error_if_exists => {
            return Err(Error::InvalidArgument(format!(
                "database at {} already exists (error_if_exists is on)",
                dir.display()
            )))
        }
        Some(n) => {
            let path = dir.join(manifest_file_name(n));
            let mut meta = LsmMeta::default();
            for (i, edit) in read_manifest(vfs, &path)?.iter().enumerate() {
                meta.apply(edit, opts.num_levels)
                    .map_err(|e| Error::corruption(&path, 0, format!("edit {i}: {e}")))?;
            }
            meta
        }
    };
    for k in meta.keyspaces.values_mut() {
        if k.levels.len() < opts.num_levels {
            k.levels.resize(opts.num_levels, BTreeMap::new());
        }
    }
    Ok((meta, existing))
}

/// The WALs in the directory, and the highest file number of any kind (so new files never
/// reuse one).
pub(super) fn existing_file_numbers(names: &[String]) -> (Vec<u64>, u64) {
    let mut wals = Vec::new();
    let mut max_seen = 0u64;
    for name in names {
        match parse_file_name(name) {
            Some(FileKind::Wal(n)) => {
                wals.push(n);
                max_seen = max_seen.max(n);
            }
            Some(FileKind::Sst(n)) | Some(FileKind::Manifest(n)) => max_seen = max_seen.max(n),
            _ => {}
        }
    }
    (wals, max_seen)
}

/// Replays the WALs the manifest does not cover yet, oldest first, into one memtable;
/// returns it with the last sequence number recovered.
///
/// A WAL may end cut short by a power loss: the newest one, or an older one, since WALs
/// nobody synced are not synced when their memtable freezes (`db::wal`). A WAL is cut short
/// when it ends in a torn record, or when the next WAL does not continue its sequence
/// numbers. Replay stops there: the newer WALs then hold no write acknowledged as durable
/// (a `Sync` write syncs the older WALs first), and replaying them would skip the lost
/// writes. Unless one of them holds a synced-predecessors record: then the cut WAL had been
/// synced whole, and the cut is damage (`Corruption`).
pub(super) fn replay_wals(
    vfs: &dyn Vfs,
    dir: &Path,
    opts: &Options,
    meta: &LsmMeta,
    existing: bool,
    mut wals: Vec<u64>,
) -> Result<(Arc<Memtable>, SeqNo)> {
    wals.retain(|n| *n >= meta.log_number);
    wals.sort_unstable();
    let recovered = Arc::new(Memtable::new(0, opts.memtable_filter_bytes()));
    let mut last_seq = meta.last_sequence;
    // The WAL the manifest names first holds the oldest unflushed writes: without it the
    // newer ones would be replayed over a hole.
    if let Some(first) = wals.first() {
        if existing && *first != meta.log_number {
            return Err(Error::corruption(
                dir.join(wal_file_name(meta.log_number)),
                0,
                format!(
                    "WAL {} named by the manifest is missing while WAL {first} exists",
                    meta.log_number
                ),
            ));
        }
    }
    // Replayed WALs come from one run of the engine, so their sequence numbers are
    // contiguous: a gap is a cut or a missing WAL.
    let mut expected_seq: Option<u64> = None;
    for (i, n) in wals.iter().enumerate() {
        let path = dir.join(wal_file_name(*n));
        let (bytes, contents) = read_wal(vfs, &path)?;
        if contents.unwritten_gap {
            check_gap_is_unsynced(&bytes, &path, opts, &contents)?;
        }
        for (j, (offset, rec)) in contents.payloads(&bytes).enumerate() {
            let b = decode_batch(rec, &path, offset)?;
            if let Some(e) = expected_seq.filter(|e| b.seq != *e) {
                if j > 0 || later_wal_is_marked(vfs, dir, &wals[i..])? {
                    return Err(Error::corruption(
                        &path,
                        offset,
                        format!("sequence gap: expected {e}, found {} (an older WAL is missing or cut short)", b.seq),
                    ));
                }
                tracing::warn!(
                    "recovery stops before {}: the WAL before it ends at sequence {}, cut \
                     short by a power loss; the writes after the cut were never synced",
                    path.display(),
                    e - 1
                );
                return Ok((recovered, last_seq));
            }
            expected_seq = Some(b.seq + u64::from(b.count));
            write::apply_ops(&recovered, b.seq, b.ops.iter().copied(), &|ks| {
                meta.keyspaces.contains_key(&ks)
            });
            if b.count > 0 {
                last_seq = last_seq.max(b.seq + u64::from(b.count) - 1);
            }
        }
        // A frozen memtable always has writes, so an older WAL without records lost them all.
        let newer = &wals[i + 1..];
        let cut = contents.dropped_tail_bytes > 0 || contents.records.is_empty();
        if cut && !newer.is_empty() {
            if later_wal_is_marked(vfs, dir, newer)? {
                return Err(Error::corruption(
                    &path,
                    contents.valid_len,
                    "WAL cut short although a later WAL records it as synced",
                ));
            }
            tracing::warn!(
                "recovery stops after {}: it ends in a write cut short by a power loss at \
                 offset {}; the newer WALs hold only writes that were never synced",
                path.display(),
                contents.valid_len
            );
            return Ok((recovered, last_seq));
        }
    }
    Ok((recovered, last_seq))
}

/// Reads the WAL at `path` for recovery: a torn tail, or unwritten pages (which the caller
/// checks with [`check_gap_is_unsynced`]), end it.
fn read_wal(vfs: &dyn Vfs, path: &Path) -> Result<(Vec<u8>, LogContents)> {
    let bytes = vfs.read_all(path)?;
    let contents = read_log(
        &bytes,
        path,
        LogKind::Wal,
        TailPolicy::TolerateUnwrittenPages,
    )?;
    Ok((bytes, contents))
}

/// A WAL whose records stop at a page left unwritten before later bytes
/// (`LogContents::unwritten_gap`) was cut by a power loss only if nothing in it was ever
/// synced: a mapped WAL's pages reach the disk in any order until an fdatasync writes them
/// all. That is a directory database's WAL without a synced-predecessors record: its first
/// sync writes one (`db::wal`), and a sync of it from a later WAL leaves one there, which
/// `replay_wals` checks as for any cut. Anywhere else the gap is damage.
fn check_gap_is_unsynced(
    bytes: &[u8],
    path: &Path,
    opts: &Options,
    contents: &LogContents,
) -> Result<()> {
    let damage = || {
        Error::corruption(
            path,
            contents.valid_len,
            "a record runs into a page of zeros with more of the WAL after it, in a WAL that \
             was synced",
        )
    };
    if !matches!(opts.storage, StorageLayout::Directory) {
        return Err(damage());
    }
    for (offset, rec) in contents.payloads(bytes) {
        if decode_batch(rec, path, offset)?.is_synced_predecessors() {
            return Err(damage());
        }
    }
    Ok(())
}

/// Whether any of `wals` holds a synced-predecessors record (an empty batch, `db::wal`):
/// every WAL before it was synced whole.
fn later_wal_is_marked(vfs: &dyn Vfs, dir: &Path, wals: &[u64]) -> Result<bool> {
    for n in wals {
        let path = dir.join(wal_file_name(*n));
        let (bytes, contents) = read_wal(vfs, &path)?;
        for (offset, rec) in contents.payloads(&bytes) {
            if decode_batch(rec, &path, offset)?.is_synced_predecessors() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The recovered writes go to level 0 (recorded in `meta`) before the WALs holding them
/// are dropped.
pub(super) fn flush_recovered(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    opts: &Options,
    alloc: &dyn Fn() -> u64,
    meta: &mut LsmMeta,
    recovered: &Arc<Memtable>,
    last_seq: SeqNo,
) -> Result<()> {
    let mut edit = VersionEdit::default();
    if !recovered.is_empty() {
        let live: Vec<(u32, KeyspaceOptions)> = meta
            .keyspaces
            .iter()
            .map(|(id, k)| (*id, k.options))
            .collect();
        let (files, tombstones) =
            flush::flush_to_files(vfs, dir, opts, alloc, recovered, &live, last_seq)?;
        for (ks, f) in files {
            edit.added_files.push((ks, 0, f));
        }
        edit.added_range_tombstones = tombstones;
    }
    meta.apply(&edit, opts.num_levels)
        .map_err(|e| Error::InvalidArgument(format!("recovery edit: {e}")))
}

/// Writes `meta` as the one edit of a new manifest, syncs it and makes it current.
fn write_new_manifest(
    vfs: &dyn Vfs,
    dir: &Path,
    meta: &LsmMeta,
    manifest_number: u64,
) -> Result<LogWriter> {
    let manifest_path = dir.join(manifest_file_name(manifest_number));
    let mut manifest_writer = LogWriter::new(
        vfs.create(&manifest_path)?,
        manifest_path,
        LogKind::Manifest,
    )?;
    manifest_writer.add_record(&meta.snapshot_edit().encode())?;
    manifest_writer.sync()?;
    vfs.sync_dir(dir)?;
    write_current(vfs, dir, manifest_number)?;
    Ok(manifest_writer)
}

/// Creates the WAL new writes go to, synced with its directory; `mapped`: appended through
/// a memory map (`Vfs::create_mapped`), for a WAL that is not synced (`db::wal`).
pub(super) fn create_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    wal_number: u64,
    mapped: bool,
) -> Result<LogWriter> {
    let wal_path = dir.join(wal_file_name(wal_number));
    let mut wal_writer = LogWriter::new(
        create_wal_file(vfs, &wal_path, mapped)?,
        wal_path,
        LogKind::Wal,
    )?;
    wal_writer.sync()?;
    vfs.sync_dir(dir)?;
    Ok(wal_writer)
}

/// Creates a WAL's file: appended through a memory map when `mapped` (`Vfs::create_mapped`,
/// while the database has not synced: `WalState::maps_next`), written otherwise.
pub(super) fn create_wal_file(
    vfs: &dyn Vfs,
    path: &Path,
    mapped: bool,
) -> Result<Box<dyn crate::vfs::WritableFile>> {
    if mapped {
        vfs.create_mapped(path)
    } else {
        vfs.create(path)
    }
}

/// Deletes the files nothing refers to any more: SSTs the manifest does not list, the old
/// WALs and manifests, unfinished temporary files. Best effort: a leftover is deleted by
/// the next open.
fn remove_obsolete(
    vfs: &dyn Vfs,
    dir: &Path,
    names: &[String],
    meta: &LsmMeta,
    wal_number: u64,
    manifest_number: u64,
) {
    let live = meta.live_file_numbers();
    for name in names {
        let obsolete = match parse_file_name(name) {
            Some(FileKind::Sst(n)) => !live.contains(&n),
            Some(FileKind::Wal(n)) => n != wal_number,
            Some(FileKind::Manifest(n)) => n != manifest_number,
            Some(FileKind::Temp) => true,
            _ => false,
        };
        if obsolete {
            let _ = vfs.remove(&dir.join(name));
        }
    }
}
