//! Flushes: a frozen memtable's entries become one L0 file per keyspace, its range
//! tombstones go to the manifest, and its WAL is deleted once the edit is durable.

use std::path::Path;
use std::sync::Arc;

use super::version_set::log_and_apply;
use super::DbInner;
use crate::compaction::{write_sorted_run, OutputSpec, RunFilter};
use crate::error::Result;
use crate::manifest::{sst_file_name, FileMeta, RangeTombstone, VersionEdit};
use crate::memtable::Memtable;
use crate::options::{KeyspaceOptions, Options};
use crate::sst::SstOptions;
use crate::stats::Counters;
use crate::types::SeqNo;
use crate::vfs::Vfs;

/// What a flush produces: new L0 files and the range tombstones that go to the manifest.
pub(crate) type FlushOutput = (Vec<(u32, FileMeta)>, Vec<(u32, RangeTombstone)>);

/// Writes one memtable's entries (one L0 file per keyspace) and returns them with the
/// memtable's range tombstones. Keyspaces not in `live` (dropped) are skipped.
pub(crate) fn flush_to_files(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    opts: &Options,
    alloc: &dyn Fn() -> u64,
    mem: &Arc<Memtable>,
    live: &[(u32, KeyspaceOptions)],
    oldest_snapshot: SeqNo,
) -> Result<FlushOutput> {
    let mut files = Vec::new();
    let filter = RunFilter {
        oldest_snapshot,
        bottommost: false,
        range_tombstones: Vec::new(),
        user: None,
        newest_snapshot: 0,
    };
    for ks in mem.keyspaces() {
        let Some((_, ks_opts)) = live.iter().find(|(id, _)| *id == ks) else {
            continue;
        };
        let out = OutputSpec {
            vfs,
            dir,
            sst: SstOptions::for_keyspace(opts, ks_opts),
            target_file_size_bytes: u64::MAX,
            grandparents: &[],
            alloc_file_number: alloc,
        };
        let mut it = mem.iter(ks);
        for f in write_sorted_run(&mut it, &out, &filter)? {
            files.push((ks, f));
        }
    }
    if !files.is_empty() {
        vfs.sync_dir(dir)?;
    }
    let tombstones = mem
        .all_range_tombstones()
        .into_iter()
        .filter(|(ks, _)| live.iter().any(|(id, _)| id == ks))
        .collect();
    Ok((files, tombstones))
}

/// The frozen memtables being flushed, by WAL number (`DbInner::flushes`).
#[derive(Default)]
pub(crate) struct FlushClaims {
    taken: Vec<u64>,
}

/// A flush's claim on its memtable, given up when the flush ends, installed or not.
struct Claim<'a> {
    inner: &'a DbInner,
    wal: u64,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.inner.flushes.lock().taken.retain(|w| *w != self.wal);
        self.inner.flushes_cv.notify_all();
    }
}

/// Flushes the oldest frozen memtable no other flush has taken; `false` when there is
/// none. A failure poisons the database, whichever thread ran the flush.
pub(crate) fn flush_once(inner: &DbInner) -> Result<bool> {
    flush_once_inner(inner).inspect_err(|e| inner.poison(e))
}

fn flush_once_inner(inner: &DbInner) -> Result<bool> {
    let Some((mem, _claim)) = claim_oldest(inner) else {
        return Ok(false);
    };
    // Writes logged before the memtable froze may still be inserting it.
    mem.wait_for_writes();
    let live: Vec<(u32, KeyspaceOptions)> = inner
        .super_version()
        .version
        .keyspaces
        .iter()
        .map(|(id, k)| (*id, k.options))
        .collect();
    let (files, tombstones) = flush_to_files(
        &inner.vfs,
        &inner.dir,
        &inner.opts,
        &|| inner.alloc_file_number(),
        &mem,
        &live,
        inner.oldest_snapshot(),
    )?;
    if let Err(e) = wait_for_turn(inner, &mem) {
        for (_, f) in &files {
            let _ = inner.vfs.remove(&inner.dir.join(sst_file_name(f.number)));
        }
        return Err(e);
    }
    install(inner, &mem, &files, &tombstones)?;
    Ok(true)
}

/// Takes the oldest frozen memtable that no flush has taken.
fn claim_oldest(inner: &DbInner) -> Option<(Arc<Memtable>, Claim<'_>)> {
    let mut claims = inner.flushes.lock();
    let sv = inner.super_version();
    let mem = sv
        .imms
        .iter()
        .rev()
        .find(|m| !claims.taken.contains(&m.wal_number()))?;
    claims.taken.push(mem.wal_number());
    let claim = Claim {
        inner,
        wal: mem.wal_number(),
    };
    Some((Arc::clone(mem), claim))
}

/// Waits until `mem` is the oldest frozen memtable: files are installed in the order their
/// memtables froze, so that a WAL is deleted only once every older one is, and the
/// manifest's log number only moves forward.
fn wait_for_turn(inner: &DbInner, mem: &Arc<Memtable>) -> Result<()> {
    let mut claims = inner.flushes.lock();
    loop {
        inner.check_poisoned()?;
        let sv = inner.super_version();
        if sv.imms.last().is_some_and(|m| Arc::ptr_eq(m, mem)) {
            return Ok(());
        }
        // The older flush signals when it installs; the timeout only bounds a missed one.
        inner
            .flushes_cv
            .wait_for(&mut claims, std::time::Duration::from_millis(100));
    }
}

/// Publishes a flush's files and the memtable's range tombstones, then deletes its WAL.
/// REQUIRES: `mem` is the oldest frozen memtable (`wait_for_turn`).
fn install(
    inner: &DbInner,
    mem: &Arc<Memtable>,
    files: &[(u32, FileMeta)],
    tombstones: &[(u32, RangeTombstone)],
) -> Result<()> {
    let sv = inner.super_version();
    // The WAL of the next-older memtable is the first one recovery still needs.
    let next_wal = match sv.imms.len() {
        0 | 1 => sv.mem.wal_number(),
        n => sv.imms[n - 2].wal_number(),
    };
    let bytes: u64 = files.iter().map(|(_, f)| f.size).sum();
    let last_seq = inner.last_visible.load();
    // Counted before the edit installs the version without this memtable: `Db::flush`
    // returns as soon as it sees that version, and `stats()` after it must count the flush.
    // A failed edit poisons the database, so an over-count then is never read as progress.
    Counters::add(&inner.counters.flushes, 1);
    Counters::add(&inner.counters.flush_bytes, bytes);
    log_and_apply(
        inner,
        |meta| {
            let mut edit = VersionEdit {
                log_number: Some(next_wal),
                last_sequence: Some(last_seq),
                ..VersionEdit::default()
            };
            // A keyspace dropped while the flush ran takes its files with it.
            for (ks, f) in files {
                if meta.keyspaces.contains_key(ks) {
                    edit.added_files.push((*ks, 0, f.clone()));
                } else {
                    let _ = inner.vfs.remove(&inner.dir.join(sst_file_name(f.number)));
                }
            }
            edit.added_range_tombstones = tombstones
                .iter()
                .filter(|(ks, _)| meta.keyspaces.contains_key(ks))
                .cloned()
                .collect();
            Ok(edit)
        },
        Some(mem),
    )?;
    let _ = inner.wal_vfs.remove(&inner.wal_path(mem.wal_number()));
    inner.wal.lock().forget_through(mem.wal_number());
    Ok(())
}

/// Flushes frozen memtables until none is left, waiting for the ones other threads have
/// taken: a caller that returns while one is still being written would have a checkpoint,
/// say, miss its writes.
pub(crate) fn flush_all_immutables(inner: &DbInner) -> Result<()> {
    loop {
        if flush_once(inner)? {
            continue;
        }
        let mut claims = inner.flushes.lock();
        inner.check_poisoned()?;
        if inner.super_version().imms.is_empty() {
            return Ok(());
        }
        if !claims.taken.is_empty() {
            inner
                .flushes_cv
                .wait_for(&mut claims, std::time::Duration::from_millis(100));
        }
    }
}
