//! The memtable: a concurrent skiplist of recent writes for every keyspace, plus the range
//! tombstones written since it was created.
//!
//! Entries are ordered by (keyspace, internal key), so one memtable serves every keyspace
//! and a flush writes one SST per keyspace by walking it once. Writers insert concurrently
//! (see `db::write`), while any number of readers look up and iterate. The skiplist
//! ([`skiplist`]) keeps its nodes, keys and values in an arena ([`arena`]) freed whole when
//! the memtable drops.
//!
//! Readers check keys against the range tombstones through fragmented sets (see
//! [`crate::range_del`]), kept per keyspace and brought up to date by the first read after a
//! tombstone arrives. Rebuilding one set from everything on every change would cost O(n) per
//! read when deletes and reads alternate, so each keyspace keeps two: a large `base` and a
//! small `recent` set of the latest tombstones, rebuilt alone on a change and merged into
//! `base` once it holds about √n of them (amortized O(√n) per tombstone, two sets per read).

use std::collections::HashMap;
use std::sync::atomic::{
    AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release, Ordering::SeqCst,
};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::coding::head8;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::manifest::RangeTombstone;
use crate::memtable_filter::MemtableFilter;
use crate::range_del::FragmentedTombstones;
#[cfg(test)]
use crate::sst::bloom::key_hash;
use crate::sst::LookupResult;
use crate::types::{lookup_key, pack_trailer, split_internal, SeqNo, ValueKind, MAX_SEQ};

mod arena;
mod skiplist;

use skiplist::{NewEntry, NodeRef, Probe, RawNode, SkipList};

/// [`head8`] of the user key of `ikey` (the trailer is not part of it).
fn key_head(ikey: &[u8]) -> u64 {
    head8(&ikey[..ikey.len().saturating_sub(8)])
}

/// Where `ikey` sorts in keyspace `ks`.
fn probe(ks: u32, ikey: &[u8]) -> Probe<'_> {
    Probe {
        ks,
        head: key_head(ikey),
        ikey,
    }
}

/// Per-tombstone bookkeeping beyond its key bytes (vector slot, allocations).
const TOMBSTONE_OVERHEAD_BYTES: usize = 80;

/// `recent` is merged into `base` once it holds at least this many tombstones and its size
/// squared reaches `base`'s.
const RECENT_TOMBSTONES_MERGE_MIN: usize = 16;

/// The fragmented range tombstones of one keyspace of a memtable.
#[derive(Default)]
struct KeyspaceRangeDels {
    base: Arc<FragmentedTombstones>,
    /// Tombstones merged into `base`.
    base_count: usize,
    /// Tombstones not in `base`; `recent` is built from them.
    pending: Vec<RangeTombstone>,
    /// `None` when stale (`pending` changed since it was built).
    recent: Option<Arc<FragmentedTombstones>>,
}

impl KeyspaceRangeDels {
    fn add(&mut self, t: RangeTombstone) {
        self.pending.push(t);
        self.recent = None;
    }

    /// Both sets, brought up to date.
    fn sets(&mut self) -> [Arc<FragmentedTombstones>; 2] {
        let recent = match &self.recent {
            Some(r) => Arc::clone(r),
            None => {
                let n = self.pending.len();
                let r = if n >= RECENT_TOMBSTONES_MERGE_MIN && n * n >= self.base_count {
                    let fresh = FragmentedTombstones::build(&self.pending);
                    self.base = Arc::new(FragmentedTombstones::merge(&self.base, &fresh));
                    self.base_count += n;
                    self.pending.clear();
                    Arc::new(FragmentedTombstones::default())
                } else {
                    Arc::new(FragmentedTombstones::build(&self.pending))
                };
                self.recent = Some(Arc::clone(&r));
                r
            }
        };
        [Arc::clone(&self.base), recent]
    }
}

/// Fragmented sets of the memtable's range tombstones, by keyspace.
#[derive(Default)]
struct RangeDelCache {
    /// How many of `Memtable::range_tombstones` are filed into `by_keyspace`.
    filed: usize,
    by_keyspace: HashMap<u32, KeyspaceRangeDels>,
}

/// What draws a node's height: the key's hash and the sequence number, so versions of one
/// key get heights of their own, and the same writes give the same memtable size (where
/// flushes cut) whichever insert path took them.
fn height_seed(key_hash: u64, seq: SeqNo) -> u64 {
    key_hash ^ seq
}

/// An entry for [`Memtable::insert_sorted`]; `hash` is the user key's `key_hash`.
#[derive(Debug, Clone, Copy)]
pub struct SortedEntry<'a> {
    pub ks: u32,
    pub user_key: &'a [u8],
    pub hash: u64,
    pub seq: SeqNo,
    pub kind: ValueKind,
    pub value: &'a [u8],
}

pub struct Memtable {
    list: SkipList,
    range_tombstones: Mutex<Vec<(u32, RangeTombstone)>>,
    /// `range_tombstones.len()`, readable without the lock.
    range_tombstone_count: AtomicUsize,
    /// Lock order: `range_del_cache`, then `range_tombstones` (the writer takes only the
    /// latter, and never waits for a rebuild).
    range_del_cache: Mutex<RangeDelCache>,
    approx_bytes: AtomicUsize,
    /// Direct writes (see `db/write.rs`) numbered for this memtable and not yet inserted: a
    /// flush waits for them to drain, since they were logged before the memtable froze.
    writes_in_flight: AtomicUsize,
    /// The WAL file whose records this memtable holds.
    wal_number: u64,
    /// Over the user keys of every entry (not range tombstones); `None` when disabled.
    filter: Option<MemtableFilter>,
}

impl Memtable {
    /// A memtable for the records of WAL `wal_number`, with a bloom filter of about
    /// `filter_bytes` over its keys (none for 0, see `Options::memtable_filter_bytes`).
    pub fn new(wal_number: u64, filter_bytes: usize) -> Self {
        Memtable {
            filter: MemtableFilter::new(filter_bytes),
            list: SkipList::new(),
            range_tombstones: Mutex::new(Vec::new()),
            range_tombstone_count: AtomicUsize::new(0),
            range_del_cache: Mutex::new(RangeDelCache::default()),
            approx_bytes: AtomicUsize::new(0),
            writes_in_flight: AtomicUsize::new(0),
            wal_number,
        }
    }

    /// A writer has logged a batch for this memtable and will insert it (outside the WAL
    /// lock). Pair with [`Memtable::end_write`].
    pub fn begin_write(&self) {
        self.writes_in_flight.fetch_add(1, SeqCst);
    }

    pub fn end_write(&self) {
        self.writes_in_flight.fetch_sub(1, SeqCst);
    }

    /// Waits until every write begun on this memtable has been inserted. Only called on a
    /// frozen memtable, which gains no new writers; the ones in flight are a few inserts
    /// away from done.
    pub fn wait_for_writes(&self) {
        while self.writes_in_flight.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
    }

    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    pub fn approx_bytes(&self) -> usize {
        self.approx_bytes.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.range_tombstones.lock().is_empty()
    }

    #[cfg(test)]
    pub fn insert(&self, ks: u32, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        self.insert_hashed(ks, user_key, key_hash(user_key), seq, kind, value);
    }

    /// Adds an entry whose `user_key` has the `key_hash` `h`.
    pub fn insert_hashed(
        &self,
        ks: u32,
        user_key: &[u8],
        h: u64,
        seq: SeqNo,
        kind: ValueKind,
        value: &[u8],
    ) {
        let trailer = pack_trailer(seq, kind as u8).to_le_bytes();
        // Before the entry is in the skiplist: a reader that can find it must pass the filter.
        if let Some(f) = &self.filter {
            f.add(h);
        }
        let bytes = self.list.insert(
            ks,
            head8(user_key),
            [user_key, &trailer],
            value,
            height_seed(h, seq),
        );
        self.approx_bytes.fetch_add(bytes, Relaxed);
    }

    /// Adds `entries`, which are in key order (keyspace, then user key; any order among
    /// entries of one key), with the places of several searched for at once
    /// (`skiplist/run.rs`): the same result as [`Memtable::insert_hashed`] for each.
    pub fn insert_sorted(&self, entries: &[SortedEntry<'_>]) {
        const CHUNK: usize = 64;
        let mut trailers = [[0u8; 8]; CHUNK];
        for chunk in entries.chunks(CHUNK) {
            for (t, e) in trailers.iter_mut().zip(chunk) {
                *t = pack_trailer(e.seq, e.kind as u8).to_le_bytes();
                self.prefetch(e.hash);
            }
            // Before the entries are in the skiplist (see `insert_hashed`).
            if let Some(f) = &self.filter {
                for e in chunk {
                    f.add(e.hash);
                }
            }
            let run: Vec<NewEntry<'_>> = chunk
                .iter()
                .zip(&trailers)
                .map(|(e, t)| NewEntry {
                    ks: e.ks,
                    head: head8(e.user_key),
                    key: [e.user_key, t],
                    value: e.value,
                    seed: height_seed(e.hash, e.seq),
                })
                .collect();
            let bytes = self.list.insert_run(&run);
            self.approx_bytes.fetch_add(bytes, Relaxed);
        }
    }

    pub fn add_range_tombstone(&self, ks: u32, start: &[u8], end: &[u8], seq: SeqNo) {
        self.approx_bytes
            .fetch_add(start.len() + end.len() + TOMBSTONE_OVERHEAD_BYTES, Relaxed);
        let mut all = self.range_tombstones.lock();
        all.push((
            ks,
            RangeTombstone {
                start: start.to_vec(),
                end: end.to_vec(),
                seq,
            },
        ));
        self.range_tombstone_count.store(all.len(), Release);
    }

    /// The range tombstones of keyspace `ks` (all sequence numbers) as fragmented sets to
    /// check keys against with [`FragmentedTombstones::max_covering_seq`]. Cheap when no
    /// tombstone arrived since the last call; the sets stay valid (and unchanged) after
    /// later writes.
    pub fn range_del_sets(&self, ks: u32) -> impl Iterator<Item = Arc<FragmentedTombstones>> {
        let mut cache = self.range_del_cache.lock();
        if cache.filed < self.range_tombstone_count.load(Acquire) {
            let all = self.range_tombstones.lock();
            let RangeDelCache { filed, by_keyspace } = &mut *cache;
            for (k, t) in all.iter().skip(*filed) {
                by_keyspace.entry(*k).or_default().add(t.clone());
            }
            *filed = all.len();
        }
        let sets = cache.by_keyspace.get_mut(&ks).map(|k| k.sets());
        drop(cache);
        sets.into_iter().flatten().filter(|s| !s.is_empty())
    }

    pub fn all_range_tombstones(&self) -> Vec<(u32, RangeTombstone)> {
        self.range_tombstones.lock().clone()
    }

    pub fn has_range_tombstones(&self) -> bool {
        self.range_tombstone_count.load(Acquire) > 0
    }

    /// The newest entry of `user_key` visible at `seq`, if this memtable has one.
    #[cfg(test)]
    pub fn get(&self, ks: u32, user_key: &[u8], seq: SeqNo) -> Option<LookupResult> {
        self.get_hashed(ks, user_key, key_hash(user_key), seq)
    }

    /// [`get`](Self::get) for a key whose `key_hash` the caller has computed.
    pub fn get_hashed(&self, ks: u32, user_key: &[u8], h: u64, seq: SeqNo) -> Option<LookupResult> {
        if self.filter.as_ref().is_some_and(|f| !f.may_contain(h)) {
            return None;
        }
        let ikey = lookup_key(user_key, seq);
        let entry = self.list.seek_ge(&probe(ks, &ikey))?;
        if entry.ks() != ks {
            return None;
        }
        let (ukey, trailer) = split_internal(entry.key())?;
        if ukey != user_key {
            return None;
        }
        let (entry_seq, kind) = crate::types::unpack_trailer(trailer);
        match ValueKind::from_u8(kind)? {
            ValueKind::Put => Some(LookupResult::Found {
                seq: entry_seq,
                value: entry.value().to_vec(),
            }),
            ValueKind::Delete => Some(LookupResult::Deleted { seq: entry_seq }),
        }
    }

    /// Starts loading the filter line `get_hashed(.., h, ..)` reads first.
    pub fn prefetch(&self, h: u64) {
        if let Some(f) = &self.filter {
            f.prefetch(h);
        }
    }

    /// Bytes of the key filter (0 when there is none).
    #[cfg(test)]
    pub fn filter_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, MemtableFilter::bytes)
    }

    /// Every keyspace id with entries, in order (flush writes one SST for each).
    pub fn keyspaces(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut next = self.list.front();
        while let Some(e) = next {
            let ks = e.ks();
            out.push(ks);
            next = match ks.checked_add(1) {
                Some(n) => self.list.seek_ge(&probe(n, &FIRST_IKEY)),
                None => None,
            };
        }
        out
    }

    pub fn iter(self: &Arc<Self>, ks: u32) -> MemtableIterator {
        MemtableIterator {
            cur: None,
            ks,
            mem: Arc::clone(self),
        }
    }
}

/// The internal key that sorts before every other: the empty user key at the highest
/// sequence number and kind.
const FIRST_IKEY: [u8; 8] = ((MAX_SEQ << 8) | 0xff).to_le_bytes();

/// Iterates one keyspace of a memtable.
pub struct MemtableIterator {
    /// A node of `mem.list`, which `mem` keeps alive.
    cur: Option<RawNode>,
    ks: u32,
    mem: Arc<Memtable>,
}

/// The node `raw` names in `mem`'s list.
#[allow(unsafe_code)] // a node pointer kept alive by the Arc next to it
fn resolve(mem: &Memtable, raw: RawNode) -> NodeRef<'_> {
    // SAFETY: every `RawNode` a `MemtableIterator` holds came from its own memtable's list
    // (`keep`), and the iterator's `Arc` keeps that memtable alive while `mem` is borrowed.
    unsafe { mem.list.node(raw) }
}

/// `n` if it belongs to keyspace `ks`.
fn keep(n: Option<NodeRef<'_>>, ks: u32) -> Option<RawNode> {
    n.filter(|n| n.ks() == ks).map(NodeRef::raw)
}

impl MemtableIterator {
    fn current(&self) -> Option<NodeRef<'_>> {
        self.cur.map(|raw| resolve(&self.mem, raw))
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        self.cur = keep(self.mem.list.seek_ge(&probe(self.ks, &FIRST_IKEY)), self.ks);
    }
    fn seek_to_last(&mut self) {
        let n = match self.ks.checked_add(1) {
            Some(next) => self.mem.list.seek_lt(&probe(next, &FIRST_IKEY)),
            None => self.mem.list.back(),
        };
        self.cur = keep(n, self.ks);
    }
    fn seek(&mut self, ikey: &[u8]) {
        self.cur = keep(self.mem.list.seek_ge(&probe(self.ks, ikey)), self.ks);
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.cur = keep(self.mem.list.seek_le(&probe(self.ks, ikey)), self.ks);
    }
    fn next(&mut self) {
        let n = self.current().and_then(NodeRef::successor);
        self.cur = keep(n, self.ks);
    }
    fn prev(&mut self) {
        let n = self
            .current()
            .and_then(|c| self.mem.list.seek_lt(&probe(self.ks, c.key())));
        self.cur = keep(n, self.ks);
    }
    fn key(&self) -> &[u8] {
        self.current().map_or(&[], NodeRef::key)
    }
    fn value(&self) -> &[u8] {
        self.current().map_or(&[], NodeRef::value)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key filter only skips searches: with none, with one saturated line and with the
    /// default size, every lookup answers as the skiplist does.
    #[test]
    fn key_filter_never_hides_an_entry() {
        for filter_bytes in [0, 64, 64 << 10] {
            let m = Memtable::new(1, filter_bytes);
            for i in 0..2000u32 {
                let key = format!("key{i}");
                m.insert(
                    i % 3,
                    key.as_bytes(),
                    u64::from(i) + 1,
                    ValueKind::Put,
                    &i.to_le_bytes(),
                );
            }
            for i in 0..2000u32 {
                let key = format!("key{i}");
                let want = Some(LookupResult::Found {
                    seq: u64::from(i) + 1,
                    value: i.to_le_bytes().to_vec(),
                });
                assert_eq!(
                    m.get(i % 3, key.as_bytes(), MAX_SEQ),
                    want,
                    "{filter_bytes} {key}"
                );
                // The other keyspaces do not hold it, filter or not.
                assert_eq!(m.get((i + 1) % 3, key.as_bytes(), MAX_SEQ), None);
                assert_eq!(m.get(i % 3, format!("absent{i}").as_bytes(), MAX_SEQ), None);
            }
            assert_eq!(m.filter_bytes(), filter_bytes);
        }
    }

    /// A sorted run holds what the same entries inserted one by one hold, in the same
    /// bytes (flushes cut at the same place), and its keys pass the key filter.
    #[test]
    fn a_sorted_run_is_the_same_as_single_inserts() {
        let key = |i: u32| format!("key{}", i.wrapping_mul(2_654_435_761) % 700).into_bytes();
        let entries: Vec<(u32, Vec<u8>, SeqNo, ValueKind)> = (0..1500u32)
            .map(|i| {
                let kind = if i % 7 == 0 {
                    ValueKind::Delete
                } else {
                    ValueKind::Put
                };
                (i % 2, key(i), u64::from(i) + 1, kind)
            })
            .collect();
        let single = Memtable::new(1, 64 << 10);
        for (ks, k, seq, kind) in &entries {
            let v = seq.to_le_bytes();
            let value: &[u8] = if *kind == ValueKind::Put { &v } else { b"" };
            single.insert(*ks, k, *seq, *kind, value);
        }
        let mut sorted = entries.clone();
        sorted.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let values: Vec<[u8; 8]> = sorted.iter().map(|e| e.2.to_le_bytes()).collect();
        let run: Vec<SortedEntry<'_>> = sorted
            .iter()
            .zip(&values)
            .map(|((ks, k, seq, kind), v)| SortedEntry {
                ks: *ks,
                user_key: k,
                hash: key_hash(k),
                seq: *seq,
                kind: *kind,
                value: if *kind == ValueKind::Put { v } else { b"" },
            })
            .collect();
        let by_run = Memtable::new(1, 64 << 10);
        by_run.insert_sorted(&run);
        assert_eq!(by_run.approx_bytes(), single.approx_bytes());
        for (ks, k, seq, _) in &entries {
            for at in [*seq, MAX_SEQ] {
                assert_eq!(
                    by_run.get(*ks, k, at),
                    single.get(*ks, k, at),
                    "{k:?} at {at}"
                );
            }
        }
    }

    /// Flushes cut where the memtable's size says, so the same writes must give the same
    /// size in every run (a golden test of `cellar inspect` builds its database twice).
    #[test]
    fn the_same_writes_give_the_same_size() {
        let fill = || {
            let m = Memtable::new(1, 0);
            for i in 0..5000u32 {
                m.insert(
                    0,
                    &i.to_be_bytes(),
                    u64::from(i) + 1,
                    ValueKind::Put,
                    b"value",
                );
            }
            m.approx_bytes()
        };
        assert_eq!(fill(), fill());
    }

    #[test]
    fn memtable_get_sees_newest_visible_version() {
        let m = Memtable::new(1, 64 << 10);
        m.insert(0, b"k", 1, ValueKind::Put, b"v1");
        m.insert(0, b"k", 3, ValueKind::Put, b"v3");
        m.insert(0, b"k", 5, ValueKind::Delete, b"");
        m.insert(1, b"k", 4, ValueKind::Put, b"other keyspace");
        assert_eq!(m.get(0, b"k", 0), None);
        assert!(matches!(
            m.get(0, b"k", 2),
            Some(LookupResult::Found { seq: 1, .. })
        ));
        assert!(matches!(
            m.get(0, b"k", 4),
            Some(LookupResult::Found { seq: 3, .. })
        ));
        assert!(matches!(
            m.get(0, b"k", 9),
            Some(LookupResult::Deleted { seq: 5 })
        ));
        assert_eq!(m.get(0, b"j", 9), None);
        assert_eq!(m.keyspaces(), vec![0, 1]);
    }

    #[test]
    fn memtable_range_del_sets_track_tombstones_as_they_arrive() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let m = Memtable::new(1, 64 << 10);
        let key = |i: u32| format!("k{i:04}").into_bytes();
        let mut written: Vec<(u32, RangeTombstone)> = Vec::new();
        for seq in 1..=1500u64 {
            let ks = rng.gen_range(0..2u32);
            let a = rng.gen_range(0..1000);
            let (start, end) = (key(a), key(a + rng.gen_range(0..20)));
            m.add_range_tombstone(ks, &start, &end, seq);
            written.push((ks, RangeTombstone { start, end, seq }));
            // Reads between some writes only, so that both sets see batches of all sizes.
            if rng.gen_range(0..4) > 0 {
                continue;
            }
            for _ in 0..8 {
                let (ks, k, read_seq) = (
                    rng.gen_range(0..3u32),
                    key(rng.gen_range(0..1030)),
                    rng.gen_range(0..=seq + 1),
                );
                let expected = written
                    .iter()
                    .filter(|(k2, t)| *k2 == ks && t.seq <= read_seq)
                    .filter(|(_, t)| t.start.as_slice() <= k.as_slice() && k < t.end)
                    .map(|(_, t)| t.seq)
                    .max()
                    .unwrap_or(0);
                let got = m
                    .range_del_sets(ks)
                    .map(|s| s.max_covering_seq(&k, read_seq))
                    .max()
                    .unwrap_or(0);
                assert_eq!(got, expected, "ks {ks} key {k:?} at {read_seq} after {seq}");
            }
        }
        assert!(m.range_del_sets(0).count() >= 1);
        assert_eq!(m.range_del_sets(7).count(), 0);
    }

    #[test]
    fn memtable_iterator_stays_in_its_keyspace_both_ways() {
        let m = Arc::new(Memtable::new(1, 64 << 10));
        for (ks, k) in [(0, "a"), (1, "b"), (1, "c"), (2, "d")] {
            m.insert(ks, k.as_bytes(), 1, ValueKind::Put, b"");
        }
        let mut it = m.iter(1);
        it.seek_to_first();
        let mut fwd = Vec::new();
        while it.valid() {
            fwd.push(crate::types::user_key(it.key()).to_vec());
            it.next();
        }
        assert_eq!(fwd, vec![b"b".to_vec(), b"c".to_vec()]);
        it.seek_to_last();
        assert_eq!(crate::types::user_key(it.key()), b"c");
        it.prev();
        assert_eq!(crate::types::user_key(it.key()), b"b");
        it.prev();
        assert!(!it.valid());
    }
}
