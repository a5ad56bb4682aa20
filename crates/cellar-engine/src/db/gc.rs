//! Garbage collection of SSTs in an object store. In a directory an SST is deleted as soon
//! as no version holds it. In an object store, followers on other machines may still read
//! it through an older snapshot, so a retired SST waits here until (1) no version in this
//! process holds it, (2) the grace period has passed (a follower that has just listed the
//! snapshots registers its lease within it), and (3) no live follower lease pins a snapshot
//! that still lists it (`manifest/leases.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Instant;

use super::DbInner;
use crate::manifest::leases::min_pinned_snapshot;
use crate::version::FileHandle;
use crate::vfs::is_not_found;

/// An SST a version edit retired, waiting to be deleted.
pub(crate) struct Retired {
    path: PathBuf,
    /// The first snapshot that no longer lists it: snapshots below this one do.
    retired_at: u64,
    since: Instant,
    handle: Weak<FileHandle>,
}

impl Retired {
    pub fn new(handle: &Arc<FileHandle>, retired_at: u64) -> Retired {
        Retired {
            path: handle.path.clone(),
            retired_at,
            since: Instant::now(),
            handle: Arc::downgrade(handle),
        }
    }
}

/// Deletes the retired SSTs nothing may read any more (see the module doc). Best effort: a
/// file whose deletion fails stays for the next pass, or is an orphan for the next open.
pub(crate) fn collect(inner: &DbInner) {
    let grace = inner.opts.object_store.gc_grace;
    let due: Vec<(PathBuf, u64)> = inner
        .retired
        .lock()
        .iter()
        .filter(|r| r.since.elapsed() >= grace && r.handle.strong_count() == 0)
        .map(|r| (r.path.clone(), r.retired_at))
        .collect();
    if due.is_empty() {
        return;
    }
    let Ok(pinned) = min_pinned_snapshot(&*inner.vfs, &inner.dir) else {
        return;
    };
    let mut gone = Vec::new();
    for (path, retired_at) in due {
        if pinned.is_some_and(|p| p < retired_at) {
            continue;
        }
        match inner.vfs.remove(&path) {
            Ok(()) => gone.push(path),
            Err(e) if is_not_found(&e) => gone.push(path),
            Err(_) => {}
        }
    }
    inner.retired.lock().retain(|r| !gone.contains(&r.path));
}
