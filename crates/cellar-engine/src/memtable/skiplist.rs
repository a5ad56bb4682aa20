//! The memtable's ordered index: a skiplist whose nodes hold their key and value inline and
//! live in the memtable's [`Arena`].
//!
//! Entries order as (keyspace, head of the user key, internal key), where the head is the
//! user key's first 8 bytes as a big-endian number: a search compares most nodes it passes
//! on two numbers, the keyspace in the node's header and the head loaded from the key right
//! after it, in the cache line it already loaded.
//!
//! **Concurrency.** Any number of threads insert at once and readers never wait. An insert
//! writes its node, then links it level by level, bottom first, each with a compare-and-swap
//! on its predecessor's pointer (release): a node reachable at level i is reachable at every
//! level below, and a reader that loads a pointer (acquire) sees the node's bytes as they
//! were written. Nothing is removed before the list drops, so a node, once found, stays valid
//! as long as the list. This is the design of LevelDB's and RocksDB's memtable skiplists.
//!
//! **Node layout** (8-aligned): `height` next pointers, highest level first, then the
//! [`Header`] (12 bytes), the internal key and the value. A node is named by the address of
//! its header, and its link at level `i` sits `8 × (i + 1)` bytes below it, as in RocksDB's
//! inline skiplist: the header needs no height to find the key, and a 12-byte header after
//! 8-byte links keeps the node at 12 bytes of bookkeeping plus its links, where a header
//! that held the key's head and its height took 24. For a 16-byte key and a 100-byte value
//! (124 bytes with the trailer) a node takes 147 bytes on average against 163, so a memtable
//! holds 11 % more entries before it is flushed (docs/design/arena-memtable.md).

// Nodes are variable-sized records in arena memory, reached through raw pointers.
#![allow(unsafe_code)]

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering::Release;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::Acquire, Ordering::Relaxed};

use parking_lot::Mutex;

use super::arena::{Arena, ALIGN};
use crate::types::compare_internal;

mod run;

pub(super) use run::NewEntry;

/// Levels of the tallest node. With a quarter of the nodes reaching each next level, 12
/// levels index about 4^12 = 16 M entries before searches lengthen.
pub(super) const MAX_HEIGHT: usize = 12;

#[repr(C)]
struct Header {
    ks: u32,
    /// The internal key's length times 16, plus the node's height (at most `MAX_HEIGHT`,
    /// below 16): a key of up to 64 KiB and its trailer need 17 bits.
    key_len_height: u32,
    value_len: u32,
}

/// Bits of `Header::key_len_height` that hold the height.
const HEIGHT_BITS: u32 = 4;
const _: () = assert!(MAX_HEIGHT < 1 << HEIGHT_BITS);

const HEADER_BYTES: usize = size_of::<Header>();
const LINK_BYTES: usize = size_of::<AtomicPtr<Header>>();

/// Where an entry sorts: the node's order, for a key that is not (yet) in the list.
#[derive(Clone, Copy)]
pub(super) struct Probe<'k> {
    pub ks: u32,
    pub head: u64,
    pub ikey: &'k [u8],
}

/// A node of a list that outlives `'a`.
#[derive(Clone, Copy)]
pub(super) struct NodeRef<'a> {
    ptr: NonNull<Header>,
    _list: PhantomData<&'a SkipList>,
}

/// A node pointer without the list's lifetime, for a cursor that keeps its list alive by
/// other means (see [`SkipList::node`]).
#[derive(Clone, Copy)]
pub(super) struct RawNode(NonNull<Header>);

// SAFETY: a published node is immutable except for its atomic links; the pointer is only
// dereferenced through `SkipList::node`, whose caller vouches that the list is alive.
unsafe impl Send for RawNode {}
// SAFETY: as above.
unsafe impl Sync for RawNode {}

impl<'a> NodeRef<'a> {
    fn header(self) -> &'a Header {
        // SAFETY: `ptr` points at a node's initialized header, alive as long as the list.
        unsafe { self.ptr.as_ref() }
    }

    fn height(self) -> usize {
        (self.header().key_len_height & ((1 << HEIGHT_BITS) - 1)) as usize
    }

    fn key_len(self) -> usize {
        (self.header().key_len_height >> HEIGHT_BITS) as usize
    }

    fn link(self, level: usize) -> &'a AtomicPtr<Header> {
        debug_assert!(level < self.height());
        // SAFETY: a node is allocated with `height` links right below its header
        // (`SkipList::write_node`), each 8-aligned because the allocation is.
        unsafe {
            &*self
                .ptr
                .as_ptr()
                .cast::<u8>()
                .sub((level + 1) * LINK_BYTES)
                .cast::<AtomicPtr<Header>>()
        }
    }

    fn next(self, level: usize) -> Option<NodeRef<'a>> {
        NonNull::new(self.link(level).load(Acquire)).map(|ptr| NodeRef {
            ptr,
            _list: PhantomData,
        })
    }

    fn bytes_at(self, offset: usize, len: usize) -> &'a [u8] {
        // SAFETY: `insert` wrote `len` bytes at `offset` of this node before publishing it.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>().add(offset), len) }
    }

    pub fn ks(self) -> u32 {
        self.header().ks
    }

    /// The internal key (user key and trailer).
    pub fn key(self) -> &'a [u8] {
        self.bytes_at(HEADER_BYTES, self.key_len())
    }

    pub fn value(self) -> &'a [u8] {
        let at = HEADER_BYTES + self.key_len();
        self.bytes_at(at, self.header().value_len as usize)
    }

    /// The head of the node's user key ([`super::key_head`]), loaded from the key.
    fn head(self) -> u64 {
        super::key_head(self.key())
    }

    /// The next node in order.
    pub fn successor(self) -> Option<NodeRef<'a>> {
        self.next(0)
    }

    pub fn raw(self) -> RawNode {
        RawNode(self.ptr)
    }

    fn cmp(self, p: &Probe<'_>) -> Ordering {
        self.header()
            .ks
            .cmp(&p.ks)
            .then_with(|| self.head().cmp(&p.head))
            .then_with(|| compare_internal(self.key(), p.ikey))
    }
}

pub(super) struct SkipList {
    arena: Arena,
    /// A node with `MAX_HEIGHT` links and no entry: the start of every search.
    first: NonNull<Header>,
    /// The height of the tallest node inserted (searches start there).
    height: AtomicUsize,
    /// Where the last insert that held this lock linked its node.
    hint: Mutex<Splice>,
}

/// An insert's neighbours at every level up to `height`: `prev[i]` sorts before the node and
/// `next[i]` (`None`: the end) after it. The next insert starts from the last one's splice
/// when its key falls between the same neighbours at level 0, as keys arriving in order do:
/// the splices of higher levels then bracket it too (each lies outside the one below), and
/// the search from the top, a comparison per node passed on every level, is skipped. A
/// neighbour may be stale (another thread linked a node since): the compare-and-swap that
/// links the node then fails and the search goes on from `prev[i]`, as it does anyway.
struct Splice {
    prev: [RawNode; MAX_HEIGHT],
    next: [Option<RawNode>; MAX_HEIGHT],
    /// Levels recorded; 0 before the first insert.
    height: usize,
}

impl Splice {
    /// Records where `node` (of `height` links, in a list `top` levels high) was linked.
    fn remember(
        &mut self,
        node: NodeRef<'_>,
        height: usize,
        top: usize,
        prev: &Neighbours<'_>,
        next: &Successors<'_>,
    ) {
        for level in 0..top {
            let p = if level < height { node } else { prev[level] };
            self.prev[level] = p.raw();
            self.next[level] = next[level].map(NodeRef::raw);
        }
        self.height = top;
    }
}

// SAFETY: the list's memory is its arena's, and every shared mutation is an atomic link
// store or the arena's mutex (module comment).
unsafe impl Send for SkipList {}
// SAFETY: as above.
unsafe impl Sync for SkipList {}

impl SkipList {
    pub(super) fn new() -> SkipList {
        let arena = Arena::new();
        let first = Self::write_node(&arena, MAX_HEIGHT, 0, [&[], &[]], &[]);
        SkipList {
            arena,
            first,
            height: AtomicUsize::new(1),
            hint: Mutex::new(Splice {
                prev: [RawNode(first); MAX_HEIGHT],
                next: [None; MAX_HEIGHT],
                height: 0,
            }),
        }
    }

    /// Allocates a node and writes its null links, header, key and value; returns its
    /// header's address, which names it.
    fn write_node(
        arena: &Arena,
        height: usize,
        ks: u32,
        key: [&[u8]; 2],
        value: &[u8],
    ) -> NonNull<Header> {
        let key_len = key[0].len() + key[1].len();
        let links = height * LINK_BYTES;
        let node = arena.alloc(links + HEADER_BYTES + key_len + value.len());
        let header = Header {
            ks,
            // The batch checks bound keys to 64 KiB and values to 64 MiB (types::MAX_*_LEN),
            // so both shifted lengths fit.
            key_len_height: ((key_len as u32) << HEIGHT_BITS) | height as u32,
            value_len: value.len() as u32,
        };
        let base = node.as_ptr();
        // SAFETY: `node` is a fresh allocation of `links + HEADER_BYTES + key_len +
        // value.len()` bytes, 8-aligned, so the links and the header (4-aligned fields) at
        // `base + links` are aligned; every write below stays inside it, and nothing else
        // sees it yet.
        unsafe {
            for i in 0..height {
                base.add(i * LINK_BYTES)
                    .cast::<AtomicPtr<Header>>()
                    .write(AtomicPtr::new(ptr::null_mut()));
            }
            let h = base.add(links);
            h.cast::<Header>().write(header);
            let k = h.add(HEADER_BYTES);
            ptr::copy_nonoverlapping(key[0].as_ptr(), k, key[0].len());
            ptr::copy_nonoverlapping(key[1].as_ptr(), k.add(key[0].len()), key[1].len());
            ptr::copy_nonoverlapping(value.as_ptr(), k.add(key_len), value.len());
            NonNull::new_unchecked(h.cast::<Header>())
        }
    }

    fn first(&self) -> NodeRef<'_> {
        NodeRef {
            ptr: self.first,
            _list: PhantomData,
        }
    }

    fn is_first(&self, n: NodeRef<'_>) -> bool {
        n.ptr == self.first
    }

    /// The node `raw` names.
    ///
    /// # Safety
    /// `raw` came from a node of this list ([`NodeRef::raw`]).
    pub(super) unsafe fn node(&self, raw: RawNode) -> NodeRef<'_> {
        NodeRef {
            ptr: raw.0,
            _list: PhantomData,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.first().next(0).is_none()
    }

    /// Adds an entry whose internal key is `key[0]` followed by `key[1]`, with a height drawn
    /// from `seed` ([`height_of`]); returns the bytes it took. Safe to call from several
    /// threads at once. The key must not be in the list.
    pub(super) fn insert(
        &self,
        ks: u32,
        head: u64,
        key: [&[u8]; 2],
        value: &[u8],
        seed: u64,
    ) -> usize {
        let height = height_of(seed);
        let bytes = node_bytes(height, key[0].len() + key[1].len(), value.len());
        let ptr = Self::write_node(&self.arena, height, ks, key, value);
        let node = NodeRef {
            ptr,
            _list: PhantomData,
        };
        let top = self.raise_height(height);
        let probe = Probe {
            ks,
            head,
            ikey: node.key(),
        };
        // Threads inserting at once do not wait for the hint: all but one search.
        let mut hint = self.hint.try_lock();
        self.place(hint.as_deref_mut(), node, height, &probe, top);
        bytes
    }

    /// The list's height once a node of `height` links is in it: the levels a search
    /// for it starts from.
    fn raise_height(&self, height: usize) -> usize {
        // Read before writing: `fetch_max` is a locked compare-and-swap loop even when the
        // height stays, and every inserting thread would take the line from the others.
        let top = self.height.load(Relaxed);
        if height > top {
            return self.height.fetch_max(height, Relaxed).max(height);
        }
        top
    }

    /// Links the written `node` where it belongs: from the hint's splice when that holds
    /// it, else after a search from the top; then leaves the hint where the node went.
    fn place(
        &self,
        hint: Option<&mut Splice>,
        node: NodeRef<'_>,
        height: usize,
        probe: &Probe<'_>,
        top: usize,
    ) {
        let (mut prev, mut next) = hint
            .as_deref()
            .and_then(|h| self.hinted(h, probe, top))
            .unwrap_or_else(|| self.splice(probe, top));
        Self::link(node, height, probe, &mut prev, &mut next);
        if let Some(h) = hint {
            h.remember(node, height, top, &prev, &next);
        }
    }

    /// Links the written `node` (its key is `probe`'s) at levels below `height` between
    /// `prev` and `next`, found by a search that may be stale: where a compare-and-swap
    /// fails, another node was linked after `prev` since, and the search goes on from it.
    fn link<'a>(
        node: NodeRef<'a>,
        height: usize,
        probe: &Probe<'_>,
        prev: &mut Neighbours<'a>,
        next: &mut Successors<'a>,
    ) {
        for level in 0..height {
            loop {
                let succ = next[level].map_or(ptr::null_mut(), |n| n.ptr.as_ptr());
                node.link(level).store(succ, Relaxed);
                let linked = prev[level].link(level).compare_exchange(
                    succ,
                    node.ptr.as_ptr(),
                    Release,
                    Acquire,
                );
                if linked.is_ok() {
                    break;
                }
                (prev[level], next[level]) = splice_at(prev[level], probe, level);
            }
        }
    }

    /// The neighbours of `p` at every level below `top`, searched from the top.
    fn splice(&self, p: &Probe<'_>, top: usize) -> (Neighbours<'_>, Successors<'_>) {
        let mut prev = [self.first(); MAX_HEIGHT];
        let mut next = [None; MAX_HEIGHT];
        let mut x = self.first();
        for level in (0..top).rev() {
            (prev[level], next[level]) = splice_at(x, p, level);
            x = prev[level];
        }
        (prev, next)
    }

    /// The last insert's splice, if it holds `p` at level 0 and covers every level below
    /// `top` (see [`Splice`]).
    fn hinted(
        &self,
        h: &Splice,
        p: &Probe<'_>,
        top: usize,
    ) -> Option<(Neighbours<'_>, Successors<'_>)> {
        if h.height != top {
            return None;
        }
        // SAFETY: the hint only ever holds nodes of this list (`insert` writes it).
        let node = |raw: RawNode| unsafe { self.node(raw) };
        let before = node(h.prev[0]);
        if !self.is_first(before) && before.cmp(p) != Ordering::Less {
            return None;
        }
        if h.next[0].is_some_and(|n| node(n).cmp(p) == Ordering::Less) {
            return None;
        }
        let mut prev = [self.first(); MAX_HEIGHT];
        let mut next = [None; MAX_HEIGHT];
        for level in 0..top {
            prev[level] = node(h.prev[level]);
            next[level] = h.next[level].map(node);
        }
        Some((prev, next))
    }

    /// The first entry at or after `p`.
    pub(super) fn seek_ge(&self, p: &Probe<'_>) -> Option<NodeRef<'_>> {
        let (_, next) = self.search(p, |o| o == Ordering::Less);
        next
    }

    /// The last entry before `p`.
    pub(super) fn seek_lt(&self, p: &Probe<'_>) -> Option<NodeRef<'_>> {
        let (prev, _) = self.search(p, |o| o == Ordering::Less);
        (!self.is_first(prev)).then_some(prev)
    }

    /// The last entry at or before `p`.
    pub(super) fn seek_le(&self, p: &Probe<'_>) -> Option<NodeRef<'_>> {
        let (prev, _) = self.search(p, |o| o != Ordering::Greater);
        (!self.is_first(prev)).then_some(prev)
    }

    pub(super) fn front(&self) -> Option<NodeRef<'_>> {
        self.first().next(0)
    }

    pub(super) fn back(&self) -> Option<NodeRef<'_>> {
        let mut x = self.first();
        for level in (0..self.height.load(Relaxed)).rev() {
            while let Some(n) = x.next(level) {
                x = n;
            }
        }
        (!self.is_first(x)).then_some(x)
    }

    /// Descends from the top: the last node (or the start) whose order against `p` passes
    /// `before`, and the node after it.
    fn search(
        &self,
        p: &Probe<'_>,
        before: impl Fn(Ordering) -> bool,
    ) -> (NodeRef<'_>, Option<NodeRef<'_>>) {
        let mut x = self.first();
        let mut level = self.height.load(Relaxed).max(1) - 1;
        loop {
            match x.next(level) {
                Some(n) if before(n.cmp(p)) => x = n,
                n if level == 0 => return (x, n),
                _ => level -= 1,
            }
        }
    }
}

type Neighbours<'a> = [NodeRef<'a>; MAX_HEIGHT];
type Successors<'a> = [Option<NodeRef<'a>>; MAX_HEIGHT];

/// Bytes of a node of `height` links holding a key and a value of these lengths, as the
/// arena hands them out.
fn node_bytes(height: usize, key_len: usize, value_len: usize) -> usize {
    (height * LINK_BYTES + HEADER_BYTES + key_len + value_len).next_multiple_of(ALIGN)
}

/// At one level, from `x` (which sorts before `p`) on: the last node before `p` and the one
/// after it.
fn splice_at<'a>(
    mut x: NodeRef<'a>,
    p: &Probe<'_>,
    level: usize,
) -> (NodeRef<'a>, Option<NodeRef<'a>>) {
    loop {
        match x.next(level) {
            Some(n) if n.cmp(p) == Ordering::Less => x = n,
            n => return (x, n),
        }
    }
}

/// A node's height from a well-mixed 64-bit `seed`: 1 + the number of further levels, each
/// reached with probability 1/4. The height comes from the entry (its key's hash and its
/// sequence number, see `Memtable::insert_hashed`), not from a random generator, so the
/// memtable's size after the same writes, and with it where flushes cut, is the same in
/// every run.
fn height_of(seed: u64) -> usize {
    // SplitMix64's finalizer: every bit of the seed reaches the low bits counted below.
    let mut z = seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    // Two trailing zero bits per level: each level with probability 1/4.
    1 + ((z.trailing_zeros() / 2) as usize).min(MAX_HEIGHT - 1)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use crate::coding::head8;
    use crate::types::{make_internal_key, user_key};

    fn probe(ks: u32, ikey: &[u8]) -> Probe<'_> {
        Probe {
            ks,
            head: head8(user_key(ikey)),
            ikey,
        }
    }

    fn add(l: &SkipList, ks: u32, ikey: &[u8], value: &[u8]) {
        let (u, t) = ikey.split_at(ikey.len() - 8);
        l.insert(
            ks,
            head8(u),
            [u, t],
            value,
            crate::sst::bloom::key_hash(ikey),
        );
    }

    /// A reader walking `l` while writers insert: it never sees the order broken.
    pub(super) fn order_checker(l: Arc<SkipList>) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            for _ in 0..50 {
                let keys: Vec<_> = std::iter::successors(l.front(), |n| n.successor())
                    .map(|n| n.key().to_vec())
                    .collect();
                assert!(keys
                    .windows(2)
                    .all(|w| compare_internal(&w[0], &w[1]).is_lt()));
            }
        })
    }

    /// Keys as the memtable orders them, for a `BTreeSet` model.
    pub(super) fn model_key(ks: u32, ikey: &[u8]) -> (u32, Vec<u8>, std::cmp::Reverse<u64>) {
        let (u, t) = crate::types::split_internal(ikey).expect("internal key");
        (ks, u.to_vec(), std::cmp::Reverse(t))
    }

    proptest::proptest! {
        /// Every seek and walk answers as an ordered set of the same entries would.
        #[test]
        fn seeks_and_walks_match_an_ordered_set(
            entries in proptest::collection::vec(
                (0u32..3, proptest::collection::vec(0u8..4, 0..10), 1u64..6), 0..300),
            probes in proptest::collection::vec(
                (0u32..4, proptest::collection::vec(0u8..4, 0..10), 0u64..7), 1..40),
            order in 0u8..3,
        ) {
            let l = SkipList::new();
            let mut model = BTreeSet::new();
            let mut entries = entries;
            // Random order, and in order and reversed, which the last insert's splice serves.
            match order {
                1 => entries.sort_by(|a, b| (a.0, &a.1, std::cmp::Reverse(a.2)).cmp(&(b.0, &b.1, std::cmp::Reverse(b.2)))),
                2 => entries.sort_by(|a, b| (b.0, &b.1, std::cmp::Reverse(b.2)).cmp(&(a.0, &a.1, std::cmp::Reverse(a.2)))),
                _ => {}
            }
            for (ks, k, seq) in &entries {
                let ikey = make_internal_key(k, *seq, 1);
                if model.insert(model_key(*ks, &ikey)) {
                    add(&l, *ks, &ikey, &ikey);
                }
            }
            let walked: Vec<_> = std::iter::successors(l.front(), |n| n.successor())
                .map(|n| { assert_eq!(n.key(), n.value()); model_key(n.ks(), n.key()) })
                .collect();
            let want: Vec<_> = model.iter().cloned().collect();
            proptest::prop_assert_eq!(&walked, &want);
            proptest::prop_assert_eq!(l.back().map(|n| model_key(n.ks(), n.key())),
                want.last().cloned());
            for (ks, k, seq) in &probes {
                let ikey = make_internal_key(k, *seq, 1);
                let p = probe(*ks, &ikey);
                let m = model_key(*ks, &ikey);
                let got = |n: Option<NodeRef<'_>>| n.map(|n| model_key(n.ks(), n.key()));
                proptest::prop_assert_eq!(got(l.seek_ge(&p)), model.range(m.clone()..).next().cloned());
                proptest::prop_assert_eq!(got(l.seek_lt(&p)), model.range(..m.clone()).next_back().cloned());
                proptest::prop_assert_eq!(got(l.seek_le(&p)), model.range(..=m.clone()).next_back().cloned());
            }
        }
    }

    /// Inserts from several threads, with a reader walking the list meanwhile: every entry is
    /// linked once, in order, and the reader never sees the order broken. (A plain store in
    /// place of the compare-and-swap loses entries here.)
    #[test]
    fn concurrent_inserts_link_every_entry_in_order() {
        let l = Arc::new(SkipList::new());
        let threads = 4u64;
        let per_thread = 100_000u64;
        let start = Arc::new(std::sync::Barrier::new(threads as usize));
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let l = Arc::clone(&l);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    for i in 0..per_thread {
                        // Interleaved ascending keys: every thread appends at the same
                        // end of the list, where their links race.
                        let key = (i * threads + t).to_be_bytes();
                        add(&l, 0, &make_internal_key(&key, i + 1, 1), &t.to_le_bytes());
                    }
                })
            })
            .collect();
        let reader = order_checker(Arc::clone(&l));
        for w in writers {
            w.join().expect("writer");
        }
        reader.join().expect("reader");
        let n = std::iter::successors(l.front(), |n| n.successor()).count();
        assert_eq!(n as u64, threads * per_thread);
    }

    /// A node is its links, a 12-byte header, the key and the value, padded to 8 bytes; the
    /// longest key the batch admits and a value of each size come back whole.
    #[test]
    fn nodes_are_links_header_key_value() {
        assert_eq!(HEADER_BYTES, 12);
        // A 16-byte user key with its trailer and a 100-byte value, one link: no padding.
        assert_eq!(node_bytes(1, 24, 100), 144);
        assert_eq!(node_bytes(2, 24, 101), 160);
        let l = SkipList::new();
        let user = vec![0xab; crate::types::MAX_KEY_LEN];
        let long = make_internal_key(&user, 9, 1);
        let values: Vec<Vec<u8>> = (0..40).map(|n| vec![n as u8; n * 37]).collect();
        for (i, v) in values.iter().enumerate() {
            add(&l, 0, &make_internal_key(&[i as u8], 1, 1), v);
        }
        add(&l, 1, &long, b"v");
        let mut n = l.front();
        for (i, v) in values.iter().enumerate() {
            let node = n.expect("every entry is linked");
            assert_eq!(node.key(), make_internal_key(&[i as u8], 1, 1));
            assert_eq!(node.value(), v.as_slice());
            assert!(node.height() >= 1 && node.height() <= MAX_HEIGHT);
            n = node.successor();
        }
        let last = n.expect("the long key is linked");
        assert_eq!(
            (last.ks(), last.key(), last.value()),
            (1, long.as_slice(), &b"v"[..])
        );
        assert!(last.successor().is_none());
    }
}
