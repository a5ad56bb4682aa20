//! The memtable: a concurrent skiplist of recent writes for every keyspace, plus the range
//! tombstones written since it was created.
//!
//! Entries are ordered by (keyspace, internal key), so one memtable serves every keyspace
//! and a flush writes one SST per keyspace by walking it once. Only the write leader inserts
//! (see `db::write`), while any number of readers look up and iterate concurrently.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use parking_lot::Mutex;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::manifest::RangeTombstone;
use crate::sst::LookupResult;
use crate::types::{
    compare_internal, lookup_key, make_internal_key, split_internal, SeqNo, ValueKind, MAX_SEQ,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemKey {
    pub ks: u32,
    pub ikey: Box<[u8]>,
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.ks
            .cmp(&other.ks)
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

pub struct Memtable {
    map: SkipMap<MemKey, Box<[u8]>>,
    range_tombstones: Mutex<Vec<(u32, RangeTombstone)>>,
    approx_bytes: AtomicUsize,
    /// The WAL file whose records this memtable holds.
    wal_number: u64,
}

impl Memtable {
    pub fn new(wal_number: u64) -> Self {
        Memtable {
            map: SkipMap::new(),
            range_tombstones: Mutex::new(Vec::new()),
            approx_bytes: AtomicUsize::new(0),
            wal_number,
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
        self.approx_bytes
            .fetch_add(ikey.len() + value.len() + ENTRY_OVERHEAD_BYTES, Relaxed);
        self.map.insert(MemKey { ks, ikey }, value.into());
    }

    pub fn add_range_tombstone(&self, ks: u32, start: &[u8], end: &[u8], seq: SeqNo) {
        self.approx_bytes
            .fetch_add(start.len() + end.len() + ENTRY_OVERHEAD_BYTES, Relaxed);
        self.range_tombstones.lock().push((
            ks,
            RangeTombstone {
                start: start.to_vec(),
                end: end.to_vec(),
                seq,
            },
        ));
    }

    /// Range tombstones of keyspace `ks` (all sequence numbers).
    pub fn range_tombstones(&self, ks: u32) -> Vec<RangeTombstone> {
        self.range_tombstones
            .lock()
            .iter()
            .filter(|(k, _)| *k == ks)
            .map(|(_, t)| t.clone())
            .collect()
    }

    pub fn all_range_tombstones(&self) -> Vec<(u32, RangeTombstone)> {
        self.range_tombstones.lock().clone()
    }

    pub fn has_range_tombstones(&self) -> bool {
        !self.range_tombstones.lock().is_empty()
    }

    /// The newest entry of `user_key` visible at `seq`, if this memtable has one.
    pub fn get(&self, ks: u32, user_key: &[u8], seq: SeqNo) -> Option<LookupResult> {
        let probe = MemKey {
            ks,
            ikey: lookup_key(user_key, seq).into_boxed_slice(),
        };
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
    MemKey {
        ks,
        ikey: make_internal_key(b"", MAX_SEQ, 0xff).into_boxed_slice(),
    }
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
fn detach(e: Option<Entry<'_, MemKey, Box<[u8]>>>) -> Option<StaticEntry> {
    // SAFETY: see above; only called with entries of `MemtableIterator::mem`.
    unsafe { std::mem::transmute(e) }
}

impl MemtableIterator {
    fn set(&mut self, e: Option<StaticEntry>) {
        self.cur = e.filter(|e| e.key().ks == self.ks);
    }

    fn probe(&self, ikey: &[u8]) -> MemKey {
        MemKey {
            ks: self.ks,
            ikey: ikey.into(),
        }
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

    #[test]
    fn memtable_get_sees_newest_visible_version() {
        let m = Memtable::new(1);
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
    fn memtable_iterator_stays_in_its_keyspace_both_ways() {
        let m = Arc::new(Memtable::new(1));
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
