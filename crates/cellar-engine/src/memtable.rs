//! The memtable: a concurrent skiplist of recent writes for every keyspace, plus the range
//! tombstones written since it was created.
//!
//! Entries are ordered by (keyspace, internal key), so one memtable serves every keyspace
//! and a flush writes one SST per keyspace by walking it once. Only the write leader inserts
//! (see `db::write`), while any number of readers look up and iterate concurrently.
//!
//! Readers check keys against the range tombstones through fragmented sets (see
//! [`crate::range_del`]), kept per keyspace and brought up to date by the first read after a
//! tombstone arrives. Rebuilding one set from everything on every change would cost O(n) per
//! read when deletes and reads alternate, so each keyspace keeps two: a large `base` and a
//! small `recent` set of the latest tombstones, rebuilt alone on a change and merged into
//! `base` once it holds about √n of them (amortized O(√n) per tombstone, two sets per read).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{
    AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release, Ordering::SeqCst,
};
use std::sync::Arc;

use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use parking_lot::Mutex;

use crate::coding::head8;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::manifest::RangeTombstone;
use crate::memtable_filter::MemtableFilter;
use crate::range_del::FragmentedTombstones;
use crate::sst::bloom::key_hash;
use crate::sst::LookupResult;
use crate::types::{
    compare_internal, lookup_key, make_internal_key, split_internal, SeqNo, ValueKind, MAX_SEQ,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemKey {
    pub ks: u32,
    /// The user key's first 8 bytes, big-endian, zero-padded (see [`key_head`]). Compared
    /// before `ikey`: the skiplist node holds it, so a search compares most nodes it
    /// passes without following the pointer to their key bytes, one cache miss less per
    /// level, on the search every point read makes before it reaches an SST.
    head: u64,
    pub ikey: Box<[u8]>,
}

/// [`head8`] of the user key of `ikey` (the trailer is not part of it).
fn key_head(ikey: &[u8]) -> u64 {
    head8(&ikey[..ikey.len().saturating_sub(8)])
}

impl MemKey {
    pub fn new(ks: u32, ikey: Box<[u8]>) -> MemKey {
        MemKey {
            ks,
            head: key_head(&ikey),
            ikey,
        }
    }
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.ks
            .cmp(&other.ks)
            .then_with(|| self.head.cmp(&other.head))
            .then_with(|| compare_internal(&self.ikey, &other.ikey))
    }
}
impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Per-entry bookkeeping the skiplist adds beyond key and value bytes (node, tower, boxes).
const ENTRY_OVERHEAD_BYTES: usize = 80;

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

pub struct Memtable {
    map: SkipMap<MemKey, Box<[u8]>>,
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
            map: SkipMap::new(),
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
        self.map.is_empty() && self.range_tombstones.lock().is_empty()
    }

    pub fn insert(&self, ks: u32, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        let ikey = make_internal_key(user_key, seq, kind as u8).into_boxed_slice();
        // Before the entry is in the skiplist: a reader that can find it must pass the filter.
        if let Some(f) = &self.filter {
            f.add(key_hash(user_key));
        }
        self.approx_bytes
            .fetch_add(ikey.len() + value.len() + ENTRY_OVERHEAD_BYTES, Relaxed);
        self.map.insert(MemKey::new(ks, ikey), value.into());
    }

    pub fn add_range_tombstone(&self, ks: u32, start: &[u8], end: &[u8], seq: SeqNo) {
        self.approx_bytes
            .fetch_add(start.len() + end.len() + ENTRY_OVERHEAD_BYTES, Relaxed);
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
        let probe = MemKey::new(ks, lookup_key(user_key, seq).into_boxed_slice());
        let entry = self.map.lower_bound(Bound::Included(&probe))?;
        let k = entry.key();
        if k.ks != ks {
            return None;
        }
        let (ukey, trailer) = split_internal(&k.ikey)?;
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
        let mut next = self.map.front();
        while let Some(e) = next {
            let ks = e.key().ks;
            out.push(ks);
            next = match ks.checked_add(1) {
                Some(n) => self.map.lower_bound(Bound::Included(&first_key_of(n))),
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

fn first_key_of(ks: u32) -> MemKey {
    MemKey::new(ks, make_internal_key(b"", MAX_SEQ, 0xff).into_boxed_slice())
}

/// Iterates one keyspace of a memtable.
pub struct MemtableIterator {
    // Declared before `mem` so it is dropped first: it borrows `mem.map`.
    cur: Option<Entry<'static, MemKey, Box<[u8]>>>,
    ks: u32,
    mem: Arc<Memtable>,
}

type StaticEntry = Entry<'static, MemKey, Box<[u8]>>;

/// Detaches an entry's lifetime from the borrow of the memtable it came from.
///
/// SAFETY (of every use): the entry borrows `MemtableIterator::mem.map`, which lives as long
/// as the `Arc` held in `mem`; `cur` is always dropped or replaced before `mem` (field
/// order), and the skiplist keeps a node alive while an `Entry` to it exists.
#[allow(unsafe_code)] // a lifetime the compiler cannot see
fn detach(e: Option<Entry<'_, MemKey, Box<[u8]>>>) -> Option<StaticEntry> {
    // SAFETY: see above; only called with entries of `MemtableIterator::mem`.
    unsafe { std::mem::transmute(e) }
}

impl MemtableIterator {
    fn set(&mut self, e: Option<StaticEntry>) {
        self.cur = e.filter(|e| e.key().ks == self.ks);
    }

    fn probe(&self, ikey: &[u8]) -> MemKey {
        MemKey::new(self.ks, ikey.into())
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        let e = detach(
            self.mem
                .map
                .lower_bound(Bound::Included(&first_key_of(self.ks))),
        );
        self.set(e);
    }
    fn seek_to_last(&mut self) {
        let e = detach(match self.ks.checked_add(1) {
            Some(n) => self.mem.map.upper_bound(Bound::Excluded(&first_key_of(n))),
            None => self.mem.map.back(),
        });
        self.set(e);
    }
    fn seek(&mut self, ikey: &[u8]) {
        let p = self.probe(ikey);
        let e = detach(self.mem.map.lower_bound(Bound::Included(&p)));
        self.set(e);
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        let p = self.probe(ikey);
        let e = detach(self.mem.map.upper_bound(Bound::Included(&p)));
        self.set(e);
    }
    fn next(&mut self) {
        let e = detach(self.cur.as_ref().and_then(|e| e.next()));
        self.set(e);
    }
    fn prev(&mut self) {
        let e = detach(self.cur.as_ref().and_then(|e| e.prev()));
        self.set(e);
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|e| &e.key().ikey[..]).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|e| &e.value()[..]).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Memtable keys order as (keyspace, user key bytes, newest sequence first) with
        /// the key head compared first: short keys, keys that are prefixes of others and
        /// zero bytes (which look like the head's padding) included.
        #[test]
        fn memkey_order_is_keyspace_then_user_key_then_newest(
            a in (0u32..2, proptest::collection::vec(0u8..3, 0..12), 0u64..4),
            b in (0u32..2, proptest::collection::vec(0u8..3, 0..12), 0u64..4),
        ) {
            let mk = |(ks, key, seq): &(u32, Vec<u8>, u64)| {
                MemKey::new(*ks, make_internal_key(key, *seq, ValueKind::Put as u8).into())
            };
            let want = a.0.cmp(&b.0)
                .then_with(|| a.1.cmp(&b.1))
                .then_with(|| b.2.cmp(&a.2));
            proptest::prop_assert_eq!(mk(&a).cmp(&mk(&b)), want);
        }
    }

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
