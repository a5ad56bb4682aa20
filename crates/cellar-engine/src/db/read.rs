//! Point reads. A lookup walks memtables newest first, then level 0 newest first, then one
//! file per deeper level; the first entry it meets decides (a newer source always holds
//! newer versions). Range tombstones are checked once, against the entry found: one binary
//! search in each fragmented set (the version's and every memtable's, see `range_del`).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::{Db, DbInner, SuperVersion};
use crate::batch::Keyspace;
use crate::error::{Error, Result};
use crate::range_del::{FragmentedTombstones, TombstoneCursors};
use crate::sst::bloom::key_hash;
use crate::sst::{Landing, LookupResult};
use crate::stats::Counters;
use crate::types::{SeqNo, MAX_KEY_LEN};
use crate::version::{FileHandle, KeyspaceVersion};

/// A consistent view of the database at one sequence number. Compaction keeps every
/// version a live snapshot can see. Dropping the last clone releases it.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

struct SnapshotInner {
    seq: SeqNo,
    registry: Arc<Mutex<BTreeMap<SeqNo, usize>>>,
    /// A follower's snapshot holds the state it was taken on: the writer, which does not
    /// know the follower's snapshots, compacts away the versions below its own, and the
    /// follower's next state may lack the ones this snapshot reads.
    pinned: Option<Arc<SuperVersion>>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        let mut r = self.registry.lock();
        if let Some(n) = r.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                r.remove(&self.seq);
            }
        }
    }
}

impl Snapshot {
    /// The sequence number the snapshot reads at: it sees every write up to it.
    pub fn sequence(&self) -> SeqNo {
        self.inner.seq
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({})", self.inner.seq)
    }
}

/// How a read sees the database: at a snapshot or now, and which keys an iterator covers.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot; the latest state when `None`.
    pub snapshot: Option<Snapshot>,
    /// Iterators: first key (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: end key (exclusive).
    pub upper_bound: Option<Vec<u8>>,
    /// Iterators: only keys starting with this prefix (narrows the bounds).
    pub prefix: Option<Vec<u8>>,
}

impl ReadOptions {
    /// Options that read at `snapshot`, with no bounds.
    pub fn at(snapshot: &Snapshot) -> Self {
        ReadOptions {
            snapshot: Some(snapshot.clone()),
            ..Default::default()
        }
    }
}

pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_LEN} bytes",
            key.len()
        )));
    }
    Ok(())
}

impl DbInner {
    pub(crate) fn read_seq(&self, ro: &ReadOptions) -> SeqNo {
        match &ro.snapshot {
            Some(s) => s.sequence(),
            None => self.last_visible.load(),
        }
    }

    pub(crate) fn new_snapshot(&self) -> Snapshot {
        // A follower swaps its state whole: the state and the sequence read together.
        let pinned = self.follow.as_ref().map(|_| self.sv.read().clone());
        let mut r = self.snapshots.lock();
        let seq = self.last_visible.load();
        *r.entry(seq).or_insert(0) += 1;
        Snapshot {
            inner: Arc::new(SnapshotInner {
                seq,
                registry: Arc::clone(&self.snapshots),
                pinned,
            }),
        }
    }

    /// The state a read with `ro` looks at: its snapshot's pinned state (a follower's), or
    /// the current one.
    pub(crate) fn read_view(&self, ro: &ReadOptions) -> Arc<SuperVersion> {
        match ro.snapshot.as_ref().and_then(|s| s.inner.pinned.as_ref()) {
            Some(sv) => Arc::clone(sv),
            None => self.super_version(),
        }
    }
}

pub(crate) fn keyspace_version<'a>(
    sv: &'a SuperVersion,
    ks: &Keyspace,
) -> Result<&'a KeyspaceVersion> {
    sv.version
        .keyspaces
        .get(&ks.id)
        .ok_or_else(|| Error::KeyspaceNotFound(ks.name().to_string()))
}

/// Every fragmented range-tombstone set of `ks` a reader of `sv` must check: the version's
/// and each memtable's (empty ones left out).
pub(crate) fn tombstone_sets<'a>(
    sv: &'a SuperVersion,
    kv: &'a KeyspaceVersion,
    ks: u32,
) -> impl Iterator<Item = Arc<FragmentedTombstones>> + 'a {
    let version = Some(&kv.range_dels)
        .filter(|s| !s.is_empty())
        .map(Arc::clone);
    let memtables = sv
        .memtables()
        .filter(|m| m.has_range_tombstones())
        .flat_map(move |m| m.range_del_sets(ks));
    version.into_iter().chain(memtables)
}

/// The newest sequence ≤ `seq` of a range tombstone of `ks` covering `key`, or 0 if none.
fn covering_seq(sv: &SuperVersion, kv: &KeyspaceVersion, ks: u32, key: &[u8], seq: SeqNo) -> SeqNo {
    tombstone_sets(sv, kv, ks)
        .map(|s| s.max_covering_seq(key, seq))
        .max()
        .unwrap_or(0)
}

fn resolve(found: Option<LookupResult>, tombstone_seq: SeqNo) -> Option<Vec<u8>> {
    match found {
        Some(LookupResult::Found { seq, value }) if seq > tombstone_seq => Some(value),
        _ => None,
    }
}

fn lookup(
    sv: &SuperVersion,
    kv: &KeyspaceVersion,
    ks: u32,
    key: &[u8],
    seq: SeqNo,
) -> Result<Option<LookupResult>> {
    // The memtables first, each behind its key filter (their lines asked for together): a
    // key a memtable may hold is usually there (YCSB D reads the latest writes), and then
    // listing the files and prefetching for them would be wasted work.
    let h = key_hash(key);
    for m in sv.memtables() {
        m.prefetch(h);
    }
    for m in sv.memtables() {
        if let Some(r) = m.get_hashed(ks, key, h, seq) {
            return Ok(Some(r));
        }
    }
    // Ask for the filter line of every file the lookup may probe before probing any, and for
    // the index of the deepest one, so their cache misses overlap. Each prefetch finds the
    // index partition its file's search lands in, and the probe starts from it
    // (docs/design/point-lookup-cpu.md).
    let mut probes: SmallVec<[(&Arc<FileHandle>, Landing); 16]> = probe_files(kv, key, seq)
        .map(|f| (f, Landing::Unknown))
        .collect();
    let last = probes.len().saturating_sub(1);
    for (i, (f, landing)) in probes.iter_mut().enumerate() {
        *landing = f.reader.prefetch_lookup(key, h, seq, i == last);
    }
    for (f, landing) in probes {
        if let Some(r) = f.reader.get_landed(landing, key, seq)? {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// The files a lookup of `key` at `seq` probes, in the order it probes them: level 0's,
/// newest first, whose range holds the key and which hold a write visible at `seq`; then
/// the one file of each deeper level whose range holds the key.
fn probe_files<'a>(
    kv: &'a KeyspaceVersion,
    key: &'a [u8],
    seq: SeqNo,
) -> impl Iterator<Item = &'a Arc<FileHandle>> + 'a {
    let level0 = kv
        .levels
        .first()
        .into_iter()
        .flatten()
        .filter(move |f| f.meta.min_seq <= seq && f.overlaps(key, key));
    let deeper = (1..kv.levels.len()).filter_map(move |level| kv.file_for_key(level, key));
    level0.chain(deeper)
}

/// Block lookups so far, those that waited on the disk (block cache misses the page cache
/// could not serve either), and block cache misses.
fn read_counts(inner: &DbInner) -> (u64, u64, u64) {
    let c = &inner.counters;
    let misses = c.block_cache_misses.load(Ordering::Relaxed);
    let lookups = c.block_cache_hits.load(Ordering::Relaxed) + misses;
    let waited = c
        .device_reads
        .load(Ordering::Relaxed)
        .saturating_sub(c.page_cache_reads.load(Ordering::Relaxed));
    (lookups, waited, misses)
}

/// How the previous `multi_get` went: the shares (per mille) of its block lookups that
/// waited on the disk and that missed the block cache. The next batch's parallelism follows
/// from them, on the guess that consecutive batches look alike.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LastBatch {
    pub wait_permille: u64,
    pub miss_permille: u64,
}

/// A batch waits on the disk when at least this share (per mille) of the previous batch's
/// block lookups did: then more threads mean more reads in flight.
const WAIT_PERMILLE: u64 = 100;

/// When at least this share (per mille) of the previous batch's block lookups waited on the
/// disk, lookups mostly wait on reads: one key per thread then keeps the most reads in
/// flight (a 10-key bucket reaches queue depth 10 instead of 1).
const IO_BOUND_WAIT_PERMILLE: u64 = 500;

/// A batch that does not wait but misses the block cache this often (per mille) spends its
/// time reading blocks from the page cache, checking and decompressing them: CPU work, worth
/// splitting over the cores when there is enough of it.
const CPU_BOUND_MISS_PERMILLE: u64 = 100;

/// Below this many keys per thread, splitting a batch costs more than it saves (when the
/// lookups are served from memory).
const MIN_KEYS_PER_THREAD: usize = 8;

impl LastBatch {
    /// Threads (contiguous runs of the sorted keys) to serve `keys` keys with, given a pool of
    /// `pool` threads: one key per thread when the previous batch mostly waited on the
    /// device, runs of `MIN_KEYS_PER_THREAD` when some of it did, runs over the cores when it
    /// was served by the page cache (CPU work), else the calling thread. Why, and the
    /// measurements: docs/design/page-cache-probe.md.
    pub fn threads_for(self, keys: usize, pool: usize) -> usize {
        let n = if self.wait_permille >= IO_BOUND_WAIT_PERMILLE {
            keys
        } else if self.wait_permille >= WAIT_PERMILLE {
            keys / MIN_KEYS_PER_THREAD
        } else if self.miss_permille >= CPU_BOUND_MISS_PERMILLE {
            (keys / MIN_KEYS_PER_THREAD).min(cores())
        } else {
            1
        };
        n.clamp(1, pool.max(1))
    }
}

fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Newest entry visible at `seq` for each of `sorted` (ascending, distinct user keys), one
/// pass per file.
fn lookup_sorted(
    sv: &SuperVersion,
    kv: &KeyspaceVersion,
    ks: u32,
    sorted: &[&[u8]],
    seq: SeqNo,
) -> Result<Vec<Option<LookupResult>>> {
    let mut found: Vec<Option<LookupResult>> = vec![None; sorted.len()];
    // Hashed once for every memtable's key filter.
    let hashes: Vec<u64> = sorted.iter().map(|k| key_hash(k)).collect();
    for m in sv.memtables() {
        for (i, (k, &h)) in sorted.iter().zip(&hashes).enumerate() {
            if found[i].is_none() {
                found[i] = m.get_hashed(ks, k, h, seq);
            }
        }
    }
    if let Some(l0) = kv.levels.first() {
        for f in l0 {
            if f.meta.min_seq <= seq {
                f.reader.multi_get(sorted, seq, &mut found)?;
            }
        }
    }
    for files in kv.levels.iter().skip(1) {
        let mut start = 0;
        for f in files {
            // Keys before this file's range were served by earlier files (or none).
            start += sorted[start..].partition_point(|k| *k < f.smallest_user_key());
            let end = start + sorted[start..].partition_point(|k| *k <= f.largest_user_key());
            if end > start && found[start..end].iter().any(|r| r.is_none()) {
                f.reader
                    .multi_get(&sorted[start..end], seq, &mut found[start..end])?;
            }
            start = end;
            if start == sorted.len() {
                break;
            }
        }
    }
    Ok(found)
}

impl Db {
    /// The value of `key`, or `None` if it is absent or deleted.
    pub fn get(&self, ks: &Keyspace, key: &[u8], ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        let inner = &self.inner;
        Counters::add(&inner.counters.gets, 1);
        let sv = inner.read_view(ro);
        let seq = inner.read_seq(ro);
        let kv = keyspace_version(&sv, ks)?;
        // Only a value found can be covered by a range tombstone: the guard asks for one
        // then alone.
        Ok(match lookup(&sv, kv, ks.id, key, seq)? {
            Some(LookupResult::Found { seq: at, value })
                if at > covering_seq(&sv, kv, ks.id, key, seq) =>
            {
                Some(value)
            }
            _ => None,
        })
    }

    /// Looks up many keys at once. The keys are sorted and each file is visited once for all
    /// the keys it may hold, so keys sharing a block share its read and adjacent blocks are
    /// read together. Large batches are split into contiguous runs served in parallel
    /// (`Options::multi_get_threads`). Results come back in the order of `keys`.
    pub fn multi_get(
        &self,
        ks: &Keyspace,
        keys: &[&[u8]],
        ro: &ReadOptions,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        for k in keys {
            check_key(k)?;
        }
        let inner = &self.inner;
        Counters::add(&inner.counters.gets, keys.len() as u64);
        let sv = inner.read_view(ro);
        let seq = inner.read_seq(ro);
        let kv = keyspace_version(&sv, ks)?;

        let mut sorted: Vec<&[u8]> = keys.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let tombstones: Vec<Arc<FragmentedTombstones>> = tombstone_sets(&sv, kv, ks.id).collect();
        let run = |chunk: &[&[u8]]| -> Result<Vec<Option<Vec<u8>>>> {
            let found = lookup_sorted(&sv, kv, ks.id, chunk, seq)?;
            // The chunk is sorted: the cursors move forward only.
            let mut cursors = TombstoneCursors::new(tombstones.iter().cloned());
            Ok(chunk
                .iter()
                .zip(found)
                .map(|(k, r)| resolve(r, cursors.max_covering_seq(k, seq)))
                .collect())
        };
        let (lookups0, waited0, misses0) = read_counts(inner);
        let last = LastBatch {
            wait_permille: inner.multi_get_wait_permille.load(Ordering::Relaxed),
            miss_permille: inner.multi_get_miss_permille.load(Ordering::Relaxed),
        };
        let chunks = match &inner.multi_get_pool {
            Some(pool) if last.threads_for(sorted.len(), pool.current_num_threads()) > 1 => {
                let n = last.threads_for(sorted.len(), pool.current_num_threads());
                let per = sorted.len().div_ceil(n);
                use rayon::prelude::*;
                pool.install(|| sorted.par_chunks(per).map(run).collect::<Result<Vec<_>>>())?
            }
            _ => vec![run(&sorted)?],
        };
        remember_waits(inner, (lookups0, waited0, misses0));
        let values: Vec<Option<Vec<u8>>> = chunks.into_iter().flatten().collect();
        Ok(in_caller_order(keys, &sorted, values))
    }

    /// A consistent view for later reads (`ReadOptions::at`).
    pub fn snapshot(&self) -> Snapshot {
        self.inner.new_snapshot()
    }
}

/// Remembers how often the batch since `before` (`read_counts`) waited on the disk: the
/// next batch goes parallel only if waiting is likely (threads cost more than they save on
/// cached lookups when there are few cores).
fn remember_waits(inner: &DbInner, before: (u64, u64, u64)) {
    let (lookups0, waited0, misses0) = before;
    let (lookups1, waited1, misses1) = read_counts(inner);
    let lookups = lookups1.saturating_sub(lookups0);
    if let Some(permille) = (waited1.saturating_sub(waited0) * 1000).checked_div(lookups) {
        inner
            .multi_get_wait_permille
            .store(permille, Ordering::Relaxed);
    }
    if let Some(permille) = (misses1.saturating_sub(misses0) * 1000).checked_div(lookups) {
        inner
            .multi_get_miss_permille
            .store(permille, Ordering::Relaxed);
    }
}

/// The values of `sorted` (sorted, deduplicated `keys`) back in the order of `keys`. Each
/// value moves out to the last position that asked for it; only repeated keys are cloned.
fn in_caller_order(
    keys: &[&[u8]],
    sorted: &[&[u8]],
    mut values: Vec<Option<Vec<u8>>>,
) -> Vec<Option<Vec<u8>>> {
    let slots: Vec<usize> = keys
        .iter()
        .map(|k| sorted.binary_search(k).unwrap_or(0))
        .collect();
    let mut wanted = vec![0usize; sorted.len()];
    for &i in &slots {
        wanted[i] += 1;
    }
    slots
        .into_iter()
        .map(|i| {
            wanted[i] -= 1;
            if wanted[i] == 0 {
                values[i].take()
            } else {
                values[i].clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last(wait_permille: u64, miss_permille: u64) -> LastBatch {
        LastBatch {
            wait_permille,
            miss_permille,
        }
    }

    #[test]
    fn a_batch_spreads_over_threads_by_how_the_last_one_waited() {
        // Waiting on the disk: one key per thread, as many as the pool has.
        assert_eq!(last(1000, 1000).threads_for(10, 32), 10);
        assert_eq!(last(500, 500).threads_for(1000, 32), 32);
        // Waiting sometimes: runs of at least 8 keys.
        assert_eq!(last(200, 900).threads_for(10, 32), 1);
        assert_eq!(last(200, 900).threads_for(100, 32), 12);
        // Misses the page cache served: CPU work, split over the cores only when big.
        assert_eq!(last(0, 900).threads_for(10, 32), 1);
        assert_eq!(last(0, 900).threads_for(1000, 32), cores().min(125));
        // Served by the block cache: the calling thread.
        assert_eq!(last(0, 50).threads_for(1000, 32), 1);
        // Never more threads than the pool, never none.
        assert_eq!(last(1000, 1000).threads_for(100, 4), 4);
        assert_eq!(last(1000, 1000).threads_for(0, 32), 1);
    }
}
