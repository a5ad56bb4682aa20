//! Every byte the engine reads or writes goes through [`Vfs`], so tests can swap the disk
//! for an in-memory one that simulates crashes ([`MemVfs`]) or fails the Nth operation
//! ([`FaultVfs`]).
//!
//! The contract mirrors POSIX as the durability design relies on it:
//! - `WritableFile::append` hands bytes to the OS: they survive a process crash, not power loss.
//! - `WritableFile::sync` makes the file's contents durable (fdatasync).
//! - Creating, renaming or removing a file is durable only after `sync_dir` on its directory.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;

mod fault;
#[cfg(test)]
pub(crate) mod hints;
mod mapped;
mod mem;
mod real;

#[cfg(feature = "object-store")]
pub mod object;

pub use fault::{FaultVfs, Hold, IoKind};
pub use mem::MemVfs;
#[cfg(all(test, target_os = "linux"))]
pub(crate) use real::this_thread_io_priority;
pub use real::{set_idle_io_priority_for_this_thread, RealVfs};

/// A file open for appending. Dropping it without `sync` may lose the appended bytes on
/// power loss.
pub trait WritableFile: Send {
    /// Hands `data` to the OS (a `write(2)`); not durable until `sync`.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Makes every appended byte durable (`fdatasync`).
    fn sync(&mut self) -> Result<()>;
    /// Asks the OS to start writing `len` appended bytes at `offset` to the disk, without
    /// waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)`). Promises nothing about durability:
    /// it only leaves less for the next `sync` to write. A Vfs without such a call ignores it.
    fn start_writeback(&mut self, offset: u64, len: u64) -> Result<()> {
        let _ = (offset, len);
        Ok(())
    }
    /// Reserves the file's space up to `len` bytes: the file becomes (at least) `len` bytes
    /// long, reading as zeros past what was appended, and later appends overwrite those
    /// zeros instead of growing the file. Why: on ext4 an `fdatasync` after an append that
    /// grew the file must also commit the new size to the journal, one more disk write;
    /// inside reserved space it writes the data alone (measured in docs/durability.md,
    /// "Reserved space"). A Vfs that cannot reserve ignores the call.
    fn preallocate(&mut self, len: u64) -> Result<()> {
        let _ = len;
        Ok(())
    }
    /// Cuts the file back to the bytes appended, dropping reserved space past them. Like
    /// any size change it is durable after the next `sync`.
    fn trim(&mut self) -> Result<()> {
        Ok(())
    }
    /// Whether the file reserves space past its appends by itself (a file from
    /// [`Vfs::create_mapped`]), which `trim` cuts off.
    fn reserves_ahead(&self) -> bool {
        false
    }
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// Whether nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file open for positional reads (`pread`). Shared between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` with the bytes at `offset`; an error if the file is shorter. A point read:
    /// a Vfs should fetch these bytes and no more (no readahead), because the next point
    /// read is somewhere else and bytes read ahead only delay it.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// The same, for a read that is part of a long scan in file order (an iterator past its
    /// first windows, compaction, checksum verification), where the OS reading ahead of it
    /// pays.
    fn read_exact_at_scan(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.read_exact_at(buf, offset)
    }
    /// Fills `buf` like [`read_exact_at`](Self::read_exact_at) only if the OS can serve it
    /// without waiting on the device (its page cache holds the bytes), and says whether it
    /// did. `false` says nothing about `buf`: the caller reads it with `read_exact_at`. It
    /// lets the engine count the reads that really reach the disk, which is what decides
    /// whether a batch of lookups is worth spreading over threads. The default never knows.
    fn read_cached_at(&self, _buf: &mut [u8], _offset: u64) -> Result<bool> {
        Ok(false)
    }
    /// Asks the OS to start reading `len` bytes at `offset` into its page cache, and says
    /// whether it took the request. A hint, not a read: the OS may read less, later, or
    /// nothing, so a caller that needs the bytes cached still reads them (the warm-up does,
    /// and the hint has the whole range submitted at once). The default, and a direct-read
    /// file, take no hints.
    fn will_need(&self, _offset: u64, _len: u64) -> bool {
        false
    }
    /// Whether the OS's page cache holds every page of the `len` bytes at `offset` now, when
    /// the OS can tell without reading them; `None` when it cannot. A snapshot that may be
    /// stale by the time it returns: for hints (the warm-up skips what it would only copy),
    /// never for correctness. The default never knows.
    fn is_cached(&self, _offset: u64, _len: u64) -> Option<bool> {
        None
    }
    /// The whole file as one read-only view that stays valid while any clone of it is held:
    /// a shared memory map of a local file, or `None` when the Vfs has none (the default; a
    /// direct-read file, whose reads are to bypass the page cache; a Vfs that injects read
    /// faults). Only for files never written again (SSTs). Reading the view reads the page
    /// cache without a system call; a page it does not hold is read from the device on first
    /// touch, and a device error there stops the process (`SIGBUS`) where `read_exact_at`
    /// returns an error. The engine reads through the view only while the page cache holds
    /// the file (docs/design/mapped-reads.md) and checks every block's checksum as it does
    /// for a read.
    fn map_whole(&self) -> Option<Bytes> {
        None
    }
    /// The file's size in bytes.
    fn size(&self) -> u64;
}

/// What [`Vfs::create_if_absent`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The file did not exist; it now holds exactly the given bytes, durably.
    Created,
    /// A file of that name existed already (another writer's); it was left untouched.
    AlreadyExists,
}

/// The file system the engine does all its I/O through: [`RealVfs`] in production,
/// [`MemVfs`] and [`FaultVfs`] in tests.
pub trait Vfs: Send + Sync + 'static {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) a file for many small appends, each of which must reach the
    /// OS before the caller goes on (the WAL of unsynced writes). A Vfs that can map files
    /// appends through a shared memory map, a copy with no system call, and reserves the
    /// file's space ahead of the appends: the file reads as zeros past them until `trim`
    /// (`reserves_ahead`). The default is `create`.
    fn create_mapped(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens a file for positional reads. `direct` asks for O_DIRECT (page cache bypassed);
    /// a Vfs without such a mode ignores it.
    fn open_read(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>>;
    /// Reads a whole (small) file: CURRENT, manifests, WALs during recovery.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>>;
    /// Renames `from` to `to`, replacing `to`. Durable after `sync_dir`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file. Durable after `sync_dir`.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Hard-links `from` as `to` (checkpoints). Both must be on the same Vfs.
    fn hard_link(&self, from: &Path, to: &Path) -> Result<()>;
    /// File names (not paths) in `dir`.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates `dir` and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// The size of the file at `path`.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Creates `path` holding exactly `data`, durably, only if nothing of that name exists:
    /// the one conditional write a database on an object store needs (a numbered manifest
    /// or WAL object created this way fences an older writer; `docs/object-storage.md`).
    /// Returns `AlreadyExists` when another writer's file is there. An error leaves the
    /// outcome unknown (a request that timed out may have created the file): the caller
    /// resolves it by reading the file back, never by guessing.
    fn create_if_absent(&self, path: &Path, data: &[u8]) -> Result<CreateOutcome>;
    /// Counters of the storage under the engine (requests, bytes, cache hits and misses),
    /// by name, for `Db::stats` and `/metrics`. A local file system keeps none.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Takes an exclusive lock so that two processes cannot open one database. The lock is
    /// released when the returned guard is dropped.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
}

/// A held lock from [`Vfs::lock`]; dropping it releases the lock.
pub trait FileLock: Send + Sync {}

/// A lock that holds nothing: where writers are fenced by conditional creates (a database
/// in an object store) rather than by a lock file.
pub struct NoLock;

impl FileLock for NoLock {}

/// Whether `e` says a file does not exist.
pub fn is_not_found(e: &crate::error::Error) -> bool {
    matches!(e, crate::error::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// [`Vfs::create_if_absent`], with an unknown outcome resolved rather than guessed: after an
/// error, the file is read back. Our bytes there: created. Other bytes: another writer's.
/// Nothing there: the create is tried again (a few times). The bytes a caller creates this
/// way must identify their writer (an epoch), so that another writer's can never be equal.
pub fn create_if_absent_resolved(vfs: &dyn Vfs, path: &Path, data: &[u8]) -> Result<CreateOutcome> {
    const ATTEMPTS: usize = 3;
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let err = match vfs.create_if_absent(path, data) {
            Ok(outcome) => return Ok(outcome),
            Err(e) => e,
        };
        match vfs.read_all(path) {
            Ok(found) if found == data => return Ok(CreateOutcome::Created),
            Ok(_) => return Ok(CreateOutcome::AlreadyExists),
            Err(e) if is_not_found(&e) => last = Some(err),
            // Neither the create nor the check got through: the outcome stays unknown.
            Err(_) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| {
        crate::error::Error::io(path, std::io::Error::other("create-if-absent failed"))
    }))
}
