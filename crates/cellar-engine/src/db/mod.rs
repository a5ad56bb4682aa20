//! The database: ties the WAL, memtables, versions and background work together.
//!
//! Locks, in the order they may be taken: `writers` (the write queue) → `wal` (held by the
//! write leader) → `manifest` → `sv`. `bg` is never held while taking another. No lock but
//! `wal` (by the leader, for the WAL write itself) and `manifest` (for the manifest append)
//! is held across I/O.

mod admin;
mod background;
mod flush;
mod follower;
mod gc;
mod ingest;
mod iterator;
mod location;
mod open;
mod open_objects;
mod read;
mod version_set;
mod visibility;
mod wal;
mod write;

pub(crate) use wal::WalState;

pub use location::object_store_url;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

pub use follower::FollowerStatus;
pub use ingest::{IngestFiles, IngestWriter};
pub use iterator::DbIterator;
pub use read::{ReadOptions, Snapshot};

use crate::batch::Keyspace;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::log::LogWriter;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::stats::Counters;
use crate::types::SeqNo;
use crate::version::{FileHandle, LsmMeta, Version};
use crate::vfs::{FileLock, Vfs};

/// What a read needs, swapped atomically whenever a memtable is frozen or a version changes.
pub(crate) struct SuperVersion {
    pub mem: Arc<Memtable>,
    /// Frozen memtables waiting for flush, newest first.
    pub imms: Vec<Arc<Memtable>>,
    pub version: Arc<Version>,
}

impl SuperVersion {
    pub fn memtables(&self) -> impl Iterator<Item = &Arc<Memtable>> {
        std::iter::once(&self.mem).chain(self.imms.iter())
    }
}

/// Where manifest changes go.
pub(crate) enum ManifestSink {
    /// A directory: edits appended to the manifest log `CURRENT` names.
    Log(LogWriter),
    /// An object store: each change a new snapshot object with this writer's epoch.
    Objects {
        /// This writer's epoch (bumped by its open).
        epoch: u64,
    },
}

pub(crate) struct ManifestState {
    pub meta: LsmMeta,
    pub sink: ManifestSink,
    /// The manifest file's number (directory) or the newest snapshot's id (object store).
    pub number: u64,
    pub open_files: HashMap<u64, Arc<FileHandle>>,
}

#[derive(Default)]
pub(crate) struct BgState {
    pub shutting_down: bool,
    /// Bumped on every event a background thread or a waiting writer may care about.
    pub epoch: u64,
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub opts: Options,
    pub vfs: Arc<dyn Vfs>,
    /// Where the WALs live: `vfs` and `dir` for a directory; a local file system for a
    /// database in an object store (`WalLocation::Local`).
    pub wal_vfs: Arc<dyn Vfs>,
    pub wal_dir: PathBuf,
    pub counters: Arc<Counters>,
    pub cache: Arc<BlockCache>,
    pub sv: RwLock<Arc<SuperVersion>>,
    /// Highest sequence number whose write is in the memtable: what new reads see.
    pub last_visible: visibility::VisibleSeq,
    pub next_file_number: AtomicU64,
    pub wal: Mutex<WalState>,
    pub writers: Mutex<write::WriteQueue>,
    pub writers_cv: Condvar,
    /// Held shared by each direct (non-`Sync`) write until it is visible, and exclusively
    /// by `exclusive_writes`, so an ingest sees no write in flight.
    pub write_gate: RwLock<()>,
    pub manifest: Mutex<ManifestState>,
    /// One compaction at a time (background or `compact_range`).
    pub compaction_lock: Mutex<()>,
    /// The frozen memtables being flushed, by WAL number: each flush takes the oldest one
    /// nobody has taken, and installs its files once every older one is installed.
    pub flushes: Mutex<flush::FlushClaims>,
    /// Signalled when a flush installs its files or gives up its claim.
    pub flushes_cv: Condvar,
    pub bg: Mutex<BgState>,
    pub bg_cv: Condvar,
    pub snapshots: Arc<Mutex<BTreeMap<SeqNo, usize>>>,
    /// Serves large `multi_get` batches in parallel (`Options::multi_get_threads`).
    pub multi_get_pool: Option<rayon::ThreadPool>,
    /// Share (per mille) of the last `multi_get`'s block lookups that waited on the disk
    /// (missed both the block cache and the page cache): decides the next one's
    /// parallelism. Starts high so that a cold database goes parallel at once.
    pub multi_get_wait_permille: AtomicU64,
    /// Block cache miss share of the last `multi_get` (per mille), for the same decision.
    pub multi_get_miss_permille: AtomicU64,
    /// Per keyspace: the layer above's compaction filter (`Db::set_compaction_filter`).
    pub compaction_filters: RwLock<HashMap<u32, Arc<dyn crate::compaction::CompactionFilter>>>,
    /// In an object store: SSTs retired by version edits, waiting for `gc::collect`.
    pub retired: Mutex<Vec<gc::Retired>>,
    /// What a follower tracks (`Db::open_follower`); `None` for a writer.
    pub follow: Option<follower::Follow>,
    poisoned: AtomicBool,
    poison_reason: Mutex<Option<Error>>,
    pub _lock: Box<dyn FileLock>,
}

impl DbInner {
    pub fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.sv.read())
    }

    /// The path of WAL `number`.
    pub fn wal_path(&self, number: u64) -> PathBuf {
        self.wal_dir.join(crate::manifest::wal_file_name(number))
    }

    pub fn alloc_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// Fail-stop: after a write-path I/O error nothing more is acknowledged until reopen,
    /// because what is on disk may no longer match what was acknowledged.
    pub fn poison(&self, why: &Error) {
        let mut r = self.poison_reason.lock();
        if r.is_none() {
            *r = Some(why.clone());
        }
        self.poisoned.store(true, Ordering::SeqCst);
        self.signal_bg();
    }

    pub fn check_poisoned(&self) -> Result<()> {
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(match self.poison_reason.lock().clone() {
                // A fenced writer stays fenced: every later write says so, not "poisoned".
                Some(Error::Fenced(why)) => Error::Fenced(why),
                Some(Error::ReadOnly(why)) => Error::ReadOnly(why),
                Some(e) => Error::Poisoned(e.to_string()),
                None => Error::Poisoned(String::new()),
            });
        }
        Ok(())
    }

    pub fn signal_bg(&self) {
        let mut bg = self.bg.lock();
        bg.epoch = bg.epoch.wrapping_add(1);
        self.bg_cv.notify_all();
    }

    pub fn oldest_snapshot(&self) -> SeqNo {
        let snaps = self.snapshots.lock();
        let visible = self.last_visible.load();
        snaps.keys().next().copied().unwrap_or(visible).min(visible)
    }

    pub fn keyspace_by_name(&self, name: &str) -> Option<Keyspace> {
        let sv = self.super_version();
        sv.version
            .keyspaces
            .iter()
            .find(|(_, k)| &*k.name == name)
            .map(|(id, k)| Keyspace {
                id: *id,
                name: Arc::clone(&k.name),
            })
    }
}

/// Stops the background threads when the last `Db` handle goes away.
struct ShutdownGuard {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for ShutdownGuard {
    fn drop(&mut self) {
        {
            let mut bg = self.inner.bg.lock();
            bg.shutting_down = true;
            self.inner.bg_cv.notify_all();
        }
        if let Some(w) = self.inner.cache.warm_up() {
            w.shutdown();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        // Buffered writes reach the OS (or, with the WAL in an object store, their object)
        // on a clean close, and a mapped WAL is cut back to its last record; an error here
        // has nobody to tell.
        let mut wal = self.inner.wal.lock();
        let _ = wal.writer.finish_unsynced();
        if matches!(
            self.inner.opts.storage,
            crate::options::StorageLayout::Objects {
                wal: crate::options::WalLocation::Object
            }
        ) {
            let _ = wal.writer.sync();
        }
    }
}

/// A Cellar database. Cheap to clone; all clones share one engine, which shuts down
/// (stopping its background threads) when the last clone is dropped.
#[derive(Clone)]
pub struct Db {
    inner: Arc<DbInner>,
    guard: Arc<ShutdownGuard>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.inner.dir).finish()
    }
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in `path`, recovering
    /// whatever the last process left: see `docs/durability.md`.
    ///
    /// `path` may be an `s3://bucket/prefix` URL (with the cargo feature `object-store`):
    /// the database then lives in that S3-compatible object store, as set by
    /// `Options::object_store` (docs/object-storage.md).
    pub fn open(path: impl AsRef<std::path::Path>, opts: Options) -> Result<Db> {
        let (dir, opts) = open::resolve_location(path.as_ref(), opts, true)?;
        Db::open_inner_at(&dir, opts)
    }

    /// [`Db::open`] of a location already resolved.
    pub(crate) fn open_inner_at(dir: &std::path::Path, opts: Options) -> Result<Db> {
        let inner = Arc::new(open::open_inner(dir, opts)?);
        let guard = Arc::new(ShutdownGuard {
            inner: Arc::clone(&inner),
            threads: Mutex::new(Vec::new()),
        });
        if inner.opts.background_work {
            let threads = background::start(&inner)?;
            *guard.threads.lock() = threads;
        }
        inner.signal_bg();
        Ok(Db { inner, guard })
    }

    /// The database's directory.
    pub fn path(&self) -> &std::path::Path {
        &self.inner.dir
    }

    /// Syncs the WAL and, if this is the last handle (clones, and the tables or writers of
    /// a layer above that hold one, count), stops background work and waits for it; with
    /// other handles alive the background threads keep running until the last one goes.
    /// Dropping the last handle does the same but cannot report an error.
    pub fn close(self) -> Result<()> {
        let r = {
            let mut wal = self.inner.wal.lock();
            let next = wal.last_seq + 1;
            wal.finish(&self.inner.opts, next)
        };
        drop(self.guard);
        r
    }
}
