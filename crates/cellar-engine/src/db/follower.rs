//! Followers: read-only instances of a database in an object store, on any machine. A
//! follower loads the newest manifest snapshot and, with `wal=object`, the WAL objects
//! after it; then it polls (`ObjectStoreOptions::follow_interval`) and swaps in each newer
//! state whole, so a read sees one consistent state, never a torn one. It writes nothing
//! but its lease (`manifest/leases.rs`), which keeps the writer from deleting the files of
//! the snapshot it reads; its reads never wait on the writer.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::open::{assemble, new_block_cache, Opened};
use super::open_objects::load_snapshot;
use super::version_set::open_table;
use super::{write, Db, DbInner, ManifestSink, ShutdownGuard, SuperVersion};
use crate::batch::decode_batch;
use crate::error::{Error, Result};
use crate::log::objects::{read_wal_object, wal_object_ids, wal_object_path, WalObject};
use crate::log::{LogKind, LogWriter};
use crate::manifest::leases::{remove_lease, write_lease};
use crate::manifest::objects::snapshot_ids;
use crate::memtable::Memtable;
use crate::options::{Options, StorageLayout, WalLocation};
use crate::stats::Counters;
use crate::version::{FileHandle, LsmMeta, Version};
use crate::vfs::{is_not_found, MemVfs, NoLock, Vfs};

/// Where a follower is, for `Db::follower_status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerStatus {
    /// The manifest snapshot it serves.
    pub snapshot: u64,
    /// The newest WAL object applied (0: none; with `wal=local` there are none).
    pub wal_object: u64,
    /// The newest sequence number it serves.
    pub last_sequence: u64,
    /// Time since its last poll that found it up to date: how far behind it may be.
    pub lag: Duration,
    /// The last poll's error, if it failed (it keeps serving what it has).
    pub error: Option<String>,
}

pub(crate) struct Follow {
    name: String,
    object_wal: bool,
    state: Mutex<FollowState>,
}

struct FollowState {
    snapshot: u64,
    log_number: u64,
    applied_wal: u64,
    open_files: HashMap<u64, Arc<FileHandle>>,
    caught_up: Instant,
    error: Option<String>,
}

impl Db {
    /// Opens a read-only follower of the database in an object store at `path` (an
    /// `s3://` URL or, with `Options::storage` set to `StorageLayout::Objects`, a prefix of
    /// `Options::vfs`). Writes are refused with `Error::ReadOnly`.
    pub fn open_follower(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let (dir, opts) = super::open::resolve_location(path.as_ref(), opts, false)?;
        let StorageLayout::Objects { wal } = &opts.storage else {
            return Err(Error::InvalidArgument(
                "a follower follows a database in an object store (s3://bucket/prefix)".into(),
            ));
        };
        let object_wal = matches!(wal, WalLocation::Object);
        let inner = open_inner(&dir, opts, object_wal)?;
        inner.poison(&Error::ReadOnly("this is a follower".into()));
        let inner = Arc::new(inner);
        let guard = Arc::new(ShutdownGuard {
            inner: Arc::clone(&inner),
            threads: Mutex::new(Vec::new()),
        });
        let polling = Arc::clone(&inner);
        let t = std::thread::Builder::new()
            .name("cellar-follow".into())
            .spawn(move || poll_loop(&polling))
            .map_err(|e| Error::io("cellar-follow", e))?;
        guard.threads.lock().push(t);
        Ok(Db { inner, guard })
    }

    /// Where a follower is; `None` for a writer.
    pub fn follower_status(&self) -> Option<FollowerStatus> {
        let f = self.inner.follow.as_ref()?;
        let st = f.state.lock();
        Some(FollowerStatus {
            snapshot: st.snapshot,
            wal_object: st.applied_wal,
            last_sequence: self.inner.last_visible.load(),
            lag: st.caught_up.elapsed(),
            error: st.error.clone(),
        })
    }

    /// Makes a follower catch up now instead of at its next poll.
    pub fn catch_up(&self) -> Result<()> {
        match &self.inner.follow {
            Some(f) => poll(&self.inner, f),
            None => Ok(()),
        }
    }
}

fn follower_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("follower-{}-{nanos}", std::process::id())
}

fn open_inner(dir: &Path, opts: Options, object_wal: bool) -> Result<DbInner> {
    let vfs = Arc::clone(&opts.vfs);
    let Some(&newest) = snapshot_ids(&*vfs, dir)?.last() else {
        return Err(Error::InvalidArgument(format!(
            "no database at {} to follow",
            dir.display()
        )));
    };
    let name = follower_name();
    write_lease(&*vfs, dir, &name, newest, opts.object_store.follower_lease)?;
    let counters = Arc::new(Counters::default());
    let cache = new_block_cache(&opts, &counters);
    let meta = load_snapshot(&*vfs, dir, newest, opts.num_levels)?;
    let mut open_files = HashMap::new();
    let version = Version::build(&meta, &mut open_files, &mut |f| {
        open_table(&vfs, dir, &opts, &cache, &counters, f)
    })?;
    // The WAL writer of a read-only instance: never written.
    let scratch = MemVfs::new();
    let wal_path = Path::new("follower.wal").to_path_buf();
    let wal_writer = LogWriter::new(scratch.create(&wal_path)?, wal_path, LogKind::Wal)?;
    let mut inner = assemble(Opened {
        dir: dir.to_path_buf(),
        wal_vfs: Arc::new(scratch),
        wal_dir: Path::new("").to_path_buf(),
        lock: Box::new(NoLock),
        counters,
        cache,
        meta: meta.clone(),
        open_files: HashMap::new(),
        version,
        wal_writer,
        wal_number: 0,
        last_seq: meta.last_sequence,
        next_file: 0,
        sink: ManifestSink::Objects { epoch: 0 },
        manifest_number: newest,
        opts,
    })?;
    inner.follow = Some(Follow {
        name,
        object_wal,
        state: Mutex::new(FollowState {
            snapshot: newest,
            log_number: meta.log_number,
            applied_wal: 0,
            open_files,
            caught_up: Instant::now(),
            error: None,
        }),
    });
    if object_wal {
        let f = inner
            .follow
            .as_ref()
            .ok_or_else(|| Error::ReadOnly("no follow state".into()))?;
        let objects = read_wal_after(&*inner.vfs, dir, 0)?.unwrap_or_default();
        apply_new_wal_objects(&inner, &mut f.state.lock(), &objects)?;
    }
    Ok(inner)
}

fn poll_loop(inner: &DbInner) {
    let Some(f) = &inner.follow else { return };
    loop {
        {
            let mut bg = inner.bg.lock();
            if !bg.shutting_down {
                inner
                    .bg_cv
                    .wait_for(&mut bg, inner.opts.object_store.follow_interval);
            }
            if bg.shutting_down {
                let _ = remove_lease(&*inner.vfs, &inner.dir, &f.name);
                return;
            }
        }
        let r = poll(inner, f);
        f.state.lock().error = r.err().map(|e| e.to_string());
    }
}

/// The WAL objects with an id of at least `from`, in id order; `None` if one vanished
/// while being read (the writer flushed it away: the caller starts over).
fn read_wal_after(vfs: &dyn Vfs, dir: &Path, from: u64) -> Result<Option<Vec<(u64, WalObject)>>> {
    let mut out = Vec::new();
    for id in wal_object_ids(vfs, dir)?.into_iter().filter(|i| *i >= from) {
        match read_wal_object(vfs, dir, id) {
            Ok(o) => out.push((id, o)),
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(Some(out))
}

/// One catch-up: renew the lease, read the newest snapshot (if newer) and the WAL objects
/// after what was applied, check that no flush raced the reads, swap the new state in.
fn poll(inner: &DbInner, f: &Follow) -> Result<()> {
    let (vfs, dir) = (&*inner.vfs, inner.dir.as_path());
    const ATTEMPTS: usize = 3;
    for _ in 0..ATTEMPTS {
        let mut st = f.state.lock();
        write_lease(
            vfs,
            dir,
            &f.name,
            st.snapshot,
            inner.opts.object_store.follower_lease,
        )?;
        let Some(&newest) = snapshot_ids(vfs, dir)?.last() else {
            return Err(Error::InvalidArgument(format!(
                "the database at {} is gone",
                dir.display()
            )));
        };
        let rebuild = newest != st.snapshot;
        let meta = if rebuild {
            Some(load_snapshot(vfs, dir, newest, inner.opts.num_levels)?)
        } else {
            None
        };
        let objects = if f.object_wal {
            let from = if rebuild { 0 } else { st.applied_wal + 1 };
            match read_wal_after(vfs, dir, from)? {
                Some(o) => o,
                None => continue,
            }
        } else {
            Vec::new()
        };
        if snapshot_ids(vfs, dir)?.last() != Some(&newest) {
            continue;
        }
        match meta {
            Some(meta) => install_snapshot(inner, &mut st, newest, &meta, &objects)?,
            None => apply_new_wal_objects(inner, &mut st, &objects)?,
        }
        st.caught_up = Instant::now();
        return Ok(());
    }
    Ok(())
}

/// Serves snapshot `id` and the WAL objects after it: the new version and a memtable
/// filled with those objects' batches are built first and swapped in together, so no read
/// sees the snapshot without them.
fn install_snapshot(
    inner: &DbInner,
    st: &mut FollowState,
    id: u64,
    meta: &LsmMeta,
    objects: &[(u64, WalObject)],
) -> Result<()> {
    let (vfs, dir, opts) = (&inner.vfs, &inner.dir, &inner.opts);
    let version = Version::build(meta, &mut st.open_files, &mut |f| {
        open_table(vfs, dir, opts, &inner.cache, &inner.counters, f)
    })?;
    let live = meta.live_file_numbers();
    // Dropped, not deleted: the writer deletes files.
    st.open_files.retain(|n, _| live.contains(n));
    let mem = Arc::new(Memtable::new(0, opts.memtable_filter_bytes()));
    let (last, applied) = fill_memtable(inner, &mem, &version, objects, meta.log_number)?;
    let last = last.max(meta.last_sequence);
    // Visible first, then the swap: a read takes the state, then the sequence, so it sees
    // the old state at the new sequence (the old state whole) or the new state at it, never
    // the new state at an old sequence, whose versions the writer may have compacted away.
    inner
        .last_visible
        .store(inner.last_visible.load().max(last));
    *inner.sv.write() = Arc::new(SuperVersion {
        mem,
        imms: Vec::new(),
        version: Arc::new(version),
    });
    st.snapshot = id;
    st.log_number = meta.log_number;
    st.applied_wal = applied;
    Ok(())
}

/// Adds the batches of WAL objects after what is served to the memtable served, then makes
/// them visible at once.
fn apply_new_wal_objects(
    inner: &DbInner,
    st: &mut FollowState,
    objects: &[(u64, WalObject)],
) -> Result<()> {
    let sv = inner.super_version();
    let visible = inner.last_visible.load();
    let (last, applied) = fill_memtable(inner, &sv.mem, &sv.version, objects, st.log_number)?;
    st.applied_wal = st.applied_wal.max(applied);
    inner.last_visible.store(visible.max(last));
    Ok(())
}

/// Inserts into `mem` the batches of `objects` that belong to a logical WAL from
/// `log_number` on — all of them: a snapshot's `last_sequence` is the writer's newest
/// visible write when it flushed, which may already sit in the next memtable's WAL, so it
/// says nothing about which batches the snapshot's files hold. Returns the newest sequence
/// number inserted (0: none) and the newest object id read.
fn fill_memtable(
    inner: &DbInner,
    mem: &Memtable,
    version: &Version,
    objects: &[(u64, WalObject)],
    log_number: u64,
) -> Result<(u64, u64)> {
    let mut last = 0;
    let mut applied = 0;
    for (id, o) in objects {
        applied = applied.max(*id);
        if o.logical < log_number {
            continue;
        }
        let path = wal_object_path(&inner.dir, *id);
        for (offset, payload) in &o.batches {
            let b = decode_batch(payload, &path, *offset)?;
            if b.count == 0 {
                continue;
            }
            write::apply_ops(mem, b.seq, b.ops.iter().copied(), &|ks| {
                version.keyspaces.contains_key(&ks)
            });
            last = b.seq + u64::from(b.count) - 1;
        }
    }
    Ok((last, applied))
}
