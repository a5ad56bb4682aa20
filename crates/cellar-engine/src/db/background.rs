//! Background work: one thread flushes frozen memtables to level 0, another runs the
//! compactions the picker asks for. Both publish their results through `log_and_apply`.

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::open::open_table;
use super::{DbInner, SuperVersion};
use crate::compaction::{self, write_sorted_run, CompactionSpec, OutputSpec, RunFilter};
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator};
use crate::log::{LogKind, LogWriter};
use crate::manifest::{
    manifest_file_name, wal_file_name, write_current, FileMeta, RangeTombstone, VersionEdit,
};
use crate::memtable::Memtable;
use crate::options::KeyspaceOptions;
use crate::options::Options;
use crate::sst::SstOptions;
use crate::stats::Counters;
use crate::types::SeqNo;
use crate::version::{LsmMeta, Version};
use crate::vfs::Vfs;

/// A manifest larger than this is rewritten as one snapshot edit in a new file.
const MANIFEST_ROLLOVER_BYTES: u64 = 64 << 20;

pub(super) fn start(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    for (name, work) in [
        ("cellar-flush", flush_once as fn(&DbInner) -> Result<bool>),
        ("cellar-compact", compact_once),
    ] {
        let inner = Arc::clone(inner);
        let t = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || worker_loop(&inner, work))
            .map_err(|e| Error::io(name, e))?;
        threads.push(t);
    }
    Ok(threads)
}

fn worker_loop(inner: &DbInner, work: fn(&DbInner) -> Result<bool>) {
    loop {
        let epoch = {
            let bg = inner.bg.lock();
            if bg.shutting_down {
                return;
            }
            bg.epoch
        };
        let did_work = if inner.check_poisoned().is_ok() {
            match work(inner) {
                Ok(w) => w,
                Err(e) => {
                    inner.poison(&e);
                    false
                }
            }
        } else {
            false
        };
        if did_work {
            continue;
        }
        let mut bg = inner.bg.lock();
        if bg.epoch == epoch && !bg.shutting_down {
            inner.bg_cv.wait(&mut bg);
        }
    }
}

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
                    let _ = inner
                        .vfs
                        .remove(&inner.dir.join(crate::manifest::sst_file_name(f.number)));
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
    let _ = inner
        .vfs
        .remove(&inner.dir.join(wal_file_name(mem.wal_number())));
    Counters::add(&inner.counters.flushes, 1);
    Counters::add(&inner.counters.flush_bytes, bytes);
    Ok(true)
}

pub(crate) fn flush_all_immutables(inner: &DbInner) -> Result<()> {
    while flush_once(inner)? {}
    Ok(())
}

/// Runs the compaction the picker wants most; `false` when nothing is over its target.
pub(crate) fn compact_once(inner: &DbInner) -> Result<bool> {
    let _c = inner.compaction_lock.lock();
    let sv = inner.super_version();
    match compaction::pick(&sv.version, &inner.opts) {
        Some(spec) => {
            run_compaction(inner, &spec)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// REQUIRES: `inner.compaction_lock` held by the caller. A failure poisons the database.
pub(crate) fn run_compaction(inner: &DbInner, spec: &CompactionSpec) -> Result<()> {
    run_compaction_inner(inner, spec)
        .and_then(|()| collect_range_tombstones(inner, spec.ks))
        .inspect_err(|e| inner.poison(e))
}

/// Removes the range tombstones of `ks` that hide nothing any more: no file holds an entry
/// in the range older than the tombstone. (Such entries can only be in files: they were
/// flushed before the tombstone reached the manifest, and every later write is newer.)
/// Scanning the range costs little: right after the compaction that applied a tombstone the
/// range is empty, and while older data remains the first entry found usually shows it.
/// REQUIRES: `inner.compaction_lock` held (no compaction changes files meanwhile).
fn collect_range_tombstones(inner: &DbInner, ks: u32) -> Result<()> {
    let sv = inner.super_version();
    let Some(kv) = sv.version.keyspaces.get(&ks) else {
        return Ok(());
    };
    let mut dead = Vec::new();
    for t in &kv.range_tombstones {
        let mut hides = false;
        'files: for f in kv.levels.iter().flatten() {
            if f.meta.min_seq >= t.seq
                || f.smallest_user_key() >= t.end.as_slice()
                || f.largest_user_key() < t.start.as_slice()
            {
                continue;
            }
            let mut it = f.reader.iter_with(false);
            it.seek(&crate::types::make_internal_key(
                &t.start,
                crate::types::MAX_SEQ,
                0xff,
            ));
            while it.valid() {
                let (ukey, trailer) = crate::types::split_internal(it.key()).unwrap_or((&[], 0));
                if ukey >= t.end.as_slice() {
                    break;
                }
                if crate::types::unpack_trailer(trailer).0 < t.seq {
                    hides = true;
                    break 'files;
                }
                it.next();
            }
            it.status()?;
        }
        if !hides {
            dead.push(t.clone());
        }
    }
    if dead.is_empty() {
        return Ok(());
    }
    log_and_apply(
        inner,
        |meta| {
            let mut edit = VersionEdit::default();
            if let Some(k) = meta.keyspaces.get(&ks) {
                for t in dead {
                    if k.range_tombstones.contains(&t) {
                        edit.deleted_range_tombstones.push((ks, t));
                    }
                }
            }
            Ok(edit)
        },
        None,
    )
}

fn run_compaction_inner(inner: &DbInner, spec: &CompactionSpec) -> Result<()> {
    let ks = spec.ks;
    let mut edit = VersionEdit::default();
    for f in &spec.inputs {
        edit.deleted_files
            .push((ks, spec.level as u32, f.meta.number));
    }
    for f in &spec.next_inputs {
        edit.deleted_files
            .push((ks, spec.output_level as u32, f.meta.number));
    }
    if spec.is_trivial_move() {
        for f in &spec.inputs {
            edit.added_files
                .push((ks, spec.output_level as u32, f.meta.clone()));
        }
    } else {
        let sv = inner.super_version();
        let Some(kv) = sv.version.keyspaces.get(&ks) else {
            return Ok(()); // dropped meanwhile
        };
        let (lo, hi) = spec.key_range();
        let bottommost = (spec.output_level + 1..kv.levels.len())
            .all(|l| kv.overlapping(l, &lo, &hi).is_empty());
        let oldest_snapshot = inner.oldest_snapshot();
        let filter = RunFilter {
            oldest_snapshot,
            bottommost,
            range_tombstones: kv
                .range_tombstones
                .iter()
                .filter(|t| t.seq <= oldest_snapshot)
                .cloned()
                .collect(),
            user: inner
                .compaction_filters
                .read()
                .get(&ks)
                .map(|f| std::cell::RefCell::new(f.start())),
            newest_snapshot: inner
                .snapshots
                .lock()
                .keys()
                .next_back()
                .copied()
                .unwrap_or(0),
        };
        let children: Vec<Box<dyn InternalIterator>> = spec
            .all_inputs()
            .map(|f| Box::new(f.reader.iter_with(false)) as Box<dyn InternalIterator>)
            .collect();
        let mut it = MergingIterator::new(children);
        let out = OutputSpec {
            vfs: &inner.vfs,
            dir: &inner.dir,
            sst: SstOptions::for_keyspace(&inner.opts, &kv.options),
            target_file_size_bytes: inner.opts.target_file_size_bytes,
            alloc_file_number: &|| inner.alloc_file_number(),
        };
        let outputs = write_sorted_run(&mut it, &out, &filter)?;
        if !outputs.is_empty() {
            inner.vfs.sync_dir(&inner.dir)?;
        }
        let read: u64 = spec.all_inputs().map(|f| f.meta.size).sum();
        let written: u64 = outputs.iter().map(|f| f.size).sum();
        Counters::add(&inner.counters.compaction_read_bytes, read);
        Counters::add(&inner.counters.compaction_write_bytes, written);
        for f in outputs {
            edit.added_files.push((ks, spec.output_level as u32, f));
        }
    }
    Counters::add(&inner.counters.compactions, 1);
    log_and_apply(
        inner,
        |meta| {
            if meta.keyspaces.contains_key(&ks) {
                return Ok(edit.clone());
            }
            // The keyspace was dropped while this ran: its inputs went with it, and the
            // outputs are nobody's.
            for (_, _, f) in &edit.added_files {
                if !edit.deleted_files.iter().any(|(_, _, n)| *n == f.number) {
                    let _ = inner
                        .vfs
                        .remove(&inner.dir.join(crate::manifest::sst_file_name(f.number)));
                }
            }
            Ok(VersionEdit::default())
        },
        None,
    )
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

    let logged = m
        .writer
        .add_record(&edit.encode())
        .and_then(|_| m.writer.sync());
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
    let re_added: Vec<u64> = edit.added_files.iter().map(|(_, _, f)| f.number).collect();
    for (_, _, n) in &edit.deleted_files {
        if !re_added.contains(n) {
            if let Some(h) = m.open_files.remove(n) {
                h.mark_obsolete();
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
                h.mark_obsolete();
            }
        }
    }
    m.meta = meta;
    {
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
    if m.writer.file_size() > MANIFEST_ROLLOVER_BYTES {
        if let Err(e) = roll_manifest(inner, &mut m) {
            inner.poison(&e);
            return Err(e);
        }
    }
    drop(m);
    inner.signal_bg();
    Ok(())
}

/// Starts a new manifest holding one snapshot edit, then points CURRENT at it.
fn roll_manifest(inner: &DbInner, m: &mut super::ManifestState) -> Result<()> {
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
    let old = std::mem::replace(&mut m.writer, w);
    drop(old);
    let _ = inner
        .vfs
        .remove(&inner.dir.join(manifest_file_name(m.number)));
    m.number = number;
    Ok(())
}
