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

/// Flushes the oldest frozen memtable; `false` when there is none. A failure poisons the
/// database, whichever thread ran the flush.
pub(crate) fn flush_once(inner: &DbInner) -> Result<bool> {
    flush_once_inner(inner).inspect_err(|e| inner.poison(e))
}

fn flush_once_inner(inner: &DbInner) -> Result<bool> {
    let _flush = inner.flush_lock.lock();
    let sv = inner.super_version();
    let Some(mem) = sv.imms.last().cloned() else {
        return Ok(false);
    };
    // Writes logged before the memtable froze may still be inserting it.
    mem.wait_for_writes();
    // The WAL of the next-older memtable is the first one recovery still needs.
    let next_wal = match sv.imms.len() {
        1 => sv.mem.wal_number(),
        n => sv.imms[n - 2].wal_number(),
    };
    let live: Vec<(u32, KeyspaceOptions)> = sv
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
            for (ks, f) in &files {
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
        Some(&mem),
    )?;
    let _ = inner.wal_vfs.remove(&inner.wal_path(mem.wal_number()));
    inner.wal.lock().forget_through(mem.wal_number());
    Ok(true)
}

pub(crate) fn flush_all_immutables(inner: &DbInner) -> Result<()> {
    while flush_once(inner)? {}
    Ok(())
}
