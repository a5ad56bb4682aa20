//! Background work: `Options::flush_threads` threads flush frozen memtables to level 0
//! (`flush.rs`), another runs the compactions the picker asks for (here). All publish their
//! results through `version_set::log_and_apply`.

use std::sync::Arc;
use std::thread::JoinHandle;

use super::flush::flush_once;
use super::version_set::log_and_apply;
use super::DbInner;
use crate::compaction::{self, write_sorted_run, CompactionSpec, OutputSpec, RunFilter};
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator};
use crate::manifest::VersionEdit;
use crate::options::{StorageLayout, WalLocation};
use crate::sst::SstOptions;
use crate::stats::Counters;
use crate::version::KeyspaceVersion;

/// One unit of background work; `false` when there was none.
type Work = fn(&DbInner) -> Result<bool>;

pub(super) fn start(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    let flushers = (1..=inner.opts.flush_threads.max(1)).map(|i| {
        let name = match i {
            1 => "cellar-flush".to_string(),
            i => format!("cellar-flush-{i}"),
        };
        (name, flush_once as Work)
    });
    for (name, work) in flushers.chain([("cellar-compact".to_string(), compact_once as Work)]) {
        let inner = Arc::clone(inner);
        let t = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || worker_loop(&inner, work))
            .map_err(|e| Error::io(name, e))?;
        threads.push(t);
    }
    if let StorageLayout::Objects {
        wal: WalLocation::Object,
    } = &inner.opts.storage
    {
        let inner = Arc::clone(inner);
        let t = std::thread::Builder::new()
            .name("cellar-wal-tick".to_string())
            .spawn(move || wal_tick_loop(&inner))
            .map_err(|e| Error::io("cellar-wal-tick", e))?;
        threads.push(t);
    }
    Ok(threads)
}

/// With the WAL in the object store, writes without `Sync` wait in memory for the next
/// WAL object: this writes one every `wal_flush_interval` while any wait, so that such a
/// write is durable within that interval (docs/durability.md).
fn wal_tick_loop(inner: &DbInner) {
    let interval = inner.opts.object_store.wal_flush_interval;
    loop {
        {
            let mut bg = inner.bg.lock();
            if bg.shutting_down {
                return;
            }
            inner.bg_cv.wait_for(&mut bg, interval);
            if bg.shutting_down {
                return;
            }
        }
        if inner.check_poisoned().is_err() {
            continue;
        }
        let mut wal = inner.wal.lock();
        if wal.writer.has_unsynced() {
            let next = wal.last_seq + 1;
            if let Err(e) = wal.sync(&inner.opts, next) {
                drop(wal);
                inner.poison(&e);
            }
        }
    }
}

fn worker_loop(inner: &DbInner, work: Work) {
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
    let _running = Running::start(&inner.counters.compactions_running);
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

/// Merges the inputs of `spec` (a compaction that rewrites) into new files of its output
/// level, dropping what no reader can see any more (`RunFilter`).
fn merge_inputs(
    inner: &DbInner,
    spec: &CompactionSpec,
    kv: &KeyspaceVersion,
) -> Result<Vec<crate::manifest::FileMeta>> {
    let ks = spec.ks;
    let (lo, hi) = spec.key_range();
    let bottommost =
        (spec.output_level + 1..kv.levels.len()).all(|l| kv.overlapping(l, &lo, &hi).is_empty());
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
    // A sorted level's files are in key order, so the grandparents come out in order.
    let grandparents: Vec<(Vec<u8>, Vec<u8>)> = kv
        .overlapping(spec.output_level + 1, &lo, &hi)
        .iter()
        .map(|f| {
            (
                f.smallest_user_key().to_vec(),
                f.largest_user_key().to_vec(),
            )
        })
        .collect();
    let out = OutputSpec {
        vfs: &inner.vfs,
        dir: &inner.dir,
        sst: SstOptions::for_keyspace(&inner.opts, &kv.options)
            .skewed(bottommost, inner.opts.bloom_bits_skew),
        target_file_size_bytes: inner.opts.target_file_size_bytes,
        grandparents: &grandparents,
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
    Ok(outputs)
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
        for f in merge_inputs(inner, spec, kv)? {
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

/// Counts one compaction in progress (`Stats::compactions_running`) until dropped.
struct Running<'a>(&'a std::sync::atomic::AtomicU64);

impl<'a> Running<'a> {
    fn start(c: &'a std::sync::atomic::AtomicU64) -> Self {
        c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Running(c)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::Running;

    #[test]
    fn running_counts_a_compaction_until_it_ends_even_by_an_error() {
        let c = AtomicU64::new(0);
        {
            let _a = Running::start(&c);
            let _b = Running::start(&c);
            assert_eq!(c.load(Ordering::Relaxed), 2);
        }
        assert_eq!(c.load(Ordering::Relaxed), 0);
        fn fails(c: &AtomicU64) -> Result<(), ()> {
            let _r = Running::start(c);
            Err(())
        }
        assert!(fails(&c).is_err());
        assert_eq!(c.load(Ordering::Relaxed), 0);
    }

    /// Compactions write sparser filters where their output is the bottom of its key range
    /// and denser ones above it; flushes (and files moved down unchanged) keep the base.
    #[test]
    fn filter_density_follows_the_output_depth() {
        use crate::options::{Durability, Options, WriteOptions};
        use crate::vfs::MemVfs;
        use crate::Db;

        let opts = Options {
            vfs: std::sync::Arc::new(MemVfs::new()),
            memtable_size_bytes: 8 << 10,
            block_size_bytes: 256,
            l0_compaction_trigger: 2,
            level1_size_bytes: 16 << 10,
            level_size_ratio: 4,
            num_levels: 5,
            target_file_size_bytes: 8 << 10,
            bloom_bits_per_key: 10,
            bloom_bits_skew: 3,
            ..Options::default()
        };
        let db = Db::open("/db", opts).expect("open");
        let ks = db.default_keyspace();
        let wo = WriteOptions::new(Durability::Buffered);
        for i in 0..20_000u64 {
            let k = format!("{:08}", i.wrapping_mul(0x9E37_79B9) % 1_000_003);
            db.put(&ks, k.as_bytes(), &[b'v'; 40], &wo).expect("put");
        }
        db.flush().expect("flush");
        db.wait_for_background_work().expect("settle");

        let sv = db.inner.super_version();
        let kv = sv.version.keyspaces.values().next().expect("keyspace");
        let bits = |level: usize| -> Vec<u32> {
            kv.levels[level]
                .iter()
                .map(|f| f.reader.properties().bloom_bits_per_key)
                .collect()
        };
        let deepest = (0..kv.levels.len())
            .rev()
            .find(|&l| !kv.levels[l].is_empty())
            .expect("files");
        assert!(deepest >= 2, "the workload builds at least three levels");
        let all: Vec<u32> = (0..=deepest).flat_map(bits).collect();
        assert!(all.iter().all(|b| [7, 10, 13].contains(b)), "{all:?}");
        assert!(all.contains(&7) && all.contains(&13), "{all:?}");
        assert!(bits(0).iter().all(|&b| b == 10), "flushes: {:?}", bits(0));
        // The deepest level is mostly compactions' bottom outputs. Not all: the rule looks
        // at a compaction's whole key range, and one of its output files with nothing below
        // its own part of the range may later move down unchanged.
        let bottom = bits(deepest);
        let sparse = bottom.iter().filter(|&&b| b == 7).count();
        assert!(sparse * 2 > bottom.len(), "deepest level: {bottom:?}");
    }
}
