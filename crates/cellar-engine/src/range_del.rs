//! Fragmented range tombstones: what reads check keys against.
//!
//! Range tombstones overlap freely. [`FragmentedTombstones`] cuts them at every start and end
//! key into disjoint, sorted fragments `[start, end)`, each holding the ascending, distinct
//! sequence numbers of every tombstone that spans it:
//!
//! ```text
//! tombstones   [a ─────────── e)@7      [c ── g)@9
//! fragments    [a ── c)[7]  [c ── e)[7, 9]  [e ── g)[9]
//! ```
//!
//! A read at sequence `S` asks for the newest tombstone visible to it that covers a key: one
//! binary search finds the fragment, a second (usually just a look at the last element) the
//! largest sequence ≤ `S`. An entry with sequence `s` is deleted when that answer is > `s`.
//! The set is built once (per version, or per memtable state) and shared through an `Arc`;
//! reads neither copy nor allocate. Iterators keep a [`FragmentCursor`] per set that follows
//! the keys they visit, so a scan pays O(log n) per seek and amortized O(1) per step.
//!
//! Nested tombstones make the stored sequence numbers grow with the nesting depth (a fragment
//! keeps every tombstone over it, since any of them may be the newest one a snapshot sees).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use crate::manifest::RangeTombstone;
use crate::types::SeqNo;

/// A run of `len` elements from `off` in one of the set's flat arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    off: usize,
    len: usize,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.off..self.off + self.len
    }
}

#[derive(Debug, Clone, Copy)]
struct Fragment {
    /// Into `key_bytes`.
    start: Span,
    /// Into `key_bytes`; exclusive.
    end: Span,
    /// Into `seqs`: ascending, distinct, never empty.
    seqs: Span,
}

/// Disjoint tombstone fragments sorted by key; immutable once built.
#[derive(Debug, Default)]
pub struct FragmentedTombstones {
    fragments: Vec<Fragment>,
    /// Every start and end key, back to back (a fragment's start shares the bytes of the
    /// previous fragment's end when they are equal).
    key_bytes: Vec<u8>,
    seqs: Vec<SeqNo>,
}

/// One input of the fragmenter: `[start, end)` deleted at each of `seqs`.
struct Piece<'a> {
    start: &'a [u8],
    end: &'a [u8],
    seqs: &'a [SeqNo],
}

impl FragmentedTombstones {
    /// Fragments `tombstones` (any order; empty ranges cover nothing and are left out).
    pub fn build<'a>(tombstones: impl IntoIterator<Item = &'a RangeTombstone>) -> Self {
        Self::from_pieces(
            tombstones
                .into_iter()
                .map(|t| Piece {
                    start: &t.start,
                    end: &t.end,
                    seqs: std::slice::from_ref(&t.seq),
                })
                .collect(),
        )
    }

    /// The set covering what `a` and `b` cover, each key at the union of their sequences:
    /// equal to building from the tombstones of both.
    pub fn merge(a: &Self, b: &Self) -> Self {
        Self::from_pieces(
            (0..a.len())
                .map(|i| a.piece(i))
                .chain((0..b.len()).map(|i| b.piece(i)))
                .collect(),
        )
    }

    /// Sweeps the sorted boundaries once, keeping the pieces that span the current gap in a
    /// heap by end (to retire them) and their sequences in a counted set.
    fn from_pieces(mut pieces: Vec<Piece<'_>>) -> Self {
        pieces.retain(|p| p.start < p.end && !p.seqs.is_empty());
        pieces.sort_by(|a, b| a.start.cmp(b.start));
        let mut bounds: Vec<&[u8]> = pieces.iter().flat_map(|p| [p.start, p.end]).collect();
        bounds.sort_unstable();
        bounds.dedup();

        let mut out = FragmentedTombstones::default();
        let mut active: BinaryHeap<Reverse<(&[u8], usize)>> = BinaryHeap::new();
        let mut active_seqs: BTreeMap<SeqNo, usize> = BTreeMap::new();
        let mut next = 0;
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            while let Some(Reverse((end, i))) = active.peek().copied() {
                if end > lo {
                    break;
                }
                active.pop();
                for s in pieces[i].seqs {
                    if let Some(n) = active_seqs.get_mut(s) {
                        *n -= 1;
                        if *n == 0 {
                            active_seqs.remove(s);
                        }
                    }
                }
            }
            while let Some(p) = pieces.get(next).filter(|p| p.start <= lo) {
                active.push(Reverse((p.end, next)));
                for s in p.seqs {
                    *active_seqs.entry(*s).or_insert(0) += 1;
                }
                next += 1;
            }
            if !active_seqs.is_empty() {
                out.push(lo, hi, active_seqs.keys());
            }
        }
        debug_assert!(out.check().is_ok(), "{:?}", out.check());
        out
    }

    /// Appends fragment `[start, end)` at `seqs` (ascending), extending the last fragment
    /// instead when it ends at `start` with the same sequences.
    fn push<'s>(&mut self, start: &[u8], end: &[u8], seqs: impl Iterator<Item = &'s SeqNo>) {
        let seqs_from = self.seqs.len();
        self.seqs.extend(seqs);
        let seqs = Span {
            off: seqs_from,
            len: self.seqs.len() - seqs_from,
        };
        let end_span = self.push_key(end);
        if let Some(last) = self.fragments.last_mut() {
            let touches = &self.key_bytes[last.end.range()] == start;
            if touches && self.seqs[last.seqs.range()] == self.seqs[seqs.range()] {
                last.end = end_span;
                self.seqs.truncate(seqs_from);
                return;
            }
            let start_span = if touches {
                last.end
            } else {
                self.push_key(start)
            };
            self.fragments.push(Fragment {
                start: start_span,
                end: end_span,
                seqs,
            });
            return;
        }
        let start_span = self.push_key(start);
        self.fragments.push(Fragment {
            start: start_span,
            end: end_span,
            seqs,
        });
    }

    fn push_key(&mut self, key: &[u8]) -> Span {
        let off = self.key_bytes.len();
        self.key_bytes.extend_from_slice(key);
        Span {
            off,
            len: key.len(),
        }
    }

    fn piece(&self, i: usize) -> Piece<'_> {
        Piece {
            start: self.start(i),
            end: self.end(i),
            seqs: self.seqs(i),
        }
    }

    /// Number of fragments.
    pub fn len(&self) -> usize {
        self.fragments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// REQUIRES: `i < len()`.
    pub fn start(&self, i: usize) -> &[u8] {
        &self.key_bytes[self.fragments[i].start.range()]
    }

    /// REQUIRES: `i < len()`. Exclusive.
    pub fn end(&self, i: usize) -> &[u8] {
        &self.key_bytes[self.fragments[i].end.range()]
    }

    /// REQUIRES: `i < len()`. Ascending and distinct.
    pub fn seqs(&self, i: usize) -> &[SeqNo] {
        &self.seqs[self.fragments[i].seqs.range()]
    }

    /// The first fragment of `from..to` that ends after `key` (`to` if none). Over all
    /// fragments, that is the one holding `key`, if any does.
    /// REQUIRES: every fragment before `from` ends at or before `key`, and `to` is `len()`
    /// or a fragment that ends after `key`.
    fn first_ending_after(&self, from: usize, to: usize, key: &[u8]) -> usize {
        from + self.fragments[from..to].partition_point(|f| &self.key_bytes[f.end.range()] <= key)
    }

    /// The largest sequence of fragment `i` that is ≤ `read_seq`, if `i` holds `key`; else 0.
    fn covering_seq_at(&self, i: usize, key: &[u8], read_seq: SeqNo) -> SeqNo {
        if i >= self.len() || self.start(i) > key {
            return 0;
        }
        let seqs = self.seqs(i);
        match seqs.last() {
            Some(&newest) if newest <= read_seq => newest,
            _ => {
                let n = seqs.partition_point(|&s| s <= read_seq);
                n.checked_sub(1).map_or(0, |j| seqs[j])
            }
        }
    }

    /// The newest sequence ≤ `read_seq` of a tombstone covering `key`, or 0 if none does.
    /// An entry of `key` with sequence `s` is deleted for that reader iff the answer is > `s`.
    pub fn max_covering_seq(&self, key: &[u8], read_seq: SeqNo) -> SeqNo {
        self.covering_seq_at(self.first_ending_after(0, self.len(), key), key, read_seq)
    }

    /// The structure's invariants: fragments non-empty, sorted and disjoint; sequences
    /// ascending, distinct and present.
    pub fn check(&self) -> Result<(), String> {
        for i in 0..self.len() {
            if self.start(i) >= self.end(i) {
                return Err(format!("fragment {i} is empty"));
            }
            if i > 0 && self.end(i - 1) > self.start(i) {
                return Err(format!("fragment {i} overlaps fragment {}", i - 1));
            }
            let s = self.seqs(i);
            if s.is_empty() || s.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("fragment {i} has sequences {s:?}"));
            }
        }
        Ok(())
    }
}

/// Steps a cursor takes one fragment at a time before it falls back to a binary search.
const CURSOR_LINEAR_STEPS: usize = 8;

/// A position in one [`FragmentedTombstones`] that follows a stream of keys: keys close to
/// the previous one (in either direction) cost O(1), distant ones a binary search.
#[derive(Debug)]
pub struct FragmentCursor {
    set: Arc<FragmentedTombstones>,
    /// Where the last key was: the first fragment that ends after it.
    i: usize,
}

impl FragmentCursor {
    pub fn new(set: Arc<FragmentedTombstones>) -> Self {
        FragmentCursor { set, i: 0 }
    }

    /// Same answer as [`FragmentedTombstones::max_covering_seq`].
    pub fn max_covering_seq(&mut self, key: &[u8], read_seq: SeqNo) -> SeqNo {
        self.move_to(key);
        self.set.covering_seq_at(self.i, key, read_seq)
    }

    fn move_to(&mut self, key: &[u8]) {
        let set = &*self.set;
        let n = set.len();
        let ends_after = |i: usize| i == n || key < set.end(i);
        let is_after_prev = |i: usize| i == 0 || set.end(i - 1) <= key;
        let mut i = self.i.min(n);
        if !ends_after(i) {
            // Forward: fragment `i` ends at or before `key`.
            for _ in 0..CURSOR_LINEAR_STEPS {
                i += 1;
                if ends_after(i) {
                    self.i = i;
                    return;
                }
            }
            self.i = set.first_ending_after(i, n, key);
        } else if !is_after_prev(i) {
            // Backward: the fragment before `i` already ends after `key`.
            for _ in 0..CURSOR_LINEAR_STEPS {
                i -= 1;
                if is_after_prev(i) {
                    self.i = i;
                    return;
                }
            }
            self.i = set.first_ending_after(0, i, key);
        } else {
            self.i = i;
        }
    }
}

/// Cursors over every tombstone set a reader sees (a version's and its memtables').
#[derive(Debug, Default)]
pub struct TombstoneCursors {
    cursors: Vec<FragmentCursor>,
}

impl TombstoneCursors {
    /// Empty sets are left out, so reads of a database without tombstones check nothing.
    pub fn new(sets: impl IntoIterator<Item = Arc<FragmentedTombstones>>) -> Self {
        TombstoneCursors {
            cursors: sets
                .into_iter()
                .filter(|s| !s.is_empty())
                .map(FragmentCursor::new)
                .collect(),
        }
    }

    /// The newest sequence ≤ `read_seq` of a tombstone in any set covering `key`, or 0.
    pub fn max_covering_seq(&mut self, key: &[u8], read_seq: SeqNo) -> SeqNo {
        self.cursors
            .iter_mut()
            .map(|c| c.max_covering_seq(key, read_seq))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(start: &str, end: &str, seq: SeqNo) -> RangeTombstone {
        RangeTombstone {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
            seq,
        }
    }

    fn fragments(f: &FragmentedTombstones) -> Vec<(String, String, Vec<SeqNo>)> {
        (0..f.len())
            .map(|i| {
                (
                    String::from_utf8_lossy(f.start(i)).into_owned(),
                    String::from_utf8_lossy(f.end(i)).into_owned(),
                    f.seqs(i).to_vec(),
                )
            })
            .collect()
    }

    fn naive(tombstones: &[RangeTombstone], key: &[u8], read_seq: SeqNo) -> SeqNo {
        tombstones
            .iter()
            .filter(|t| t.seq <= read_seq && t.start.as_slice() <= key && key < t.end.as_slice())
            .map(|t| t.seq)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn range_del_overlapping_tombstones_are_cut_at_every_boundary() {
        let f = FragmentedTombstones::build(&[t("a", "e", 7), t("c", "g", 9), t("x", "x", 3)]);
        let s = |a: &str, b: &str, seqs: &[SeqNo]| (a.to_string(), b.to_string(), seqs.to_vec());
        assert_eq!(
            fragments(&f),
            vec![s("a", "c", &[7]), s("c", "e", &[7, 9]), s("e", "g", &[9])]
        );
        assert_eq!(f.max_covering_seq(b"d", 100), 9);
        assert_eq!(f.max_covering_seq(b"d", 8), 7);
        assert_eq!(f.max_covering_seq(b"d", 6), 0);
        assert_eq!(f.max_covering_seq(b"g", 100), 0);
        assert_eq!(f.max_covering_seq(b"", 100), 0);
    }

    #[test]
    fn range_del_abutting_tombstones_of_one_seq_become_one_fragment() {
        let f = FragmentedTombstones::build(&[t("a", "b", 4), t("b", "c", 4), t("c", "d", 5)]);
        assert_eq!(f.len(), 2);
        assert_eq!((f.start(0), f.end(0)), (&b"a"[..], &b"c"[..]));
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), Just(0xff)],
            0..4,
        )
    }

    fn tombstones() -> impl Strategy<Value = Vec<RangeTombstone>> {
        proptest::collection::vec(
            (key(), key(), 0..40u64).prop_map(|(a, b, seq)| {
                let (start, end) = if a <= b { (a, b) } else { (b, a) };
                RangeTombstone { start, end, seq }
            }),
            0..40,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn range_del_fragments_answer_like_a_scan_of_all_tombstones(
            ts in tombstones(),
            probes in proptest::collection::vec((key(), 0..45u64), 1..60),
        ) {
            let f = FragmentedTombstones::build(&ts);
            prop_assert_eq!(f.check(), Ok(()));
            let mut cursor = FragmentCursor::new(Arc::new(FragmentedTombstones::build(&ts)));
            for (k, s) in &probes {
                let expected = naive(&ts, k, *s);
                prop_assert_eq!(f.max_covering_seq(k, *s), expected, "key {:?} at {}", k, s);
                prop_assert_eq!(cursor.max_covering_seq(k, *s), expected, "cursor, key {:?}", k);
            }
        }

        #[test]
        fn range_del_cursor_follows_sorted_walks_both_ways(
            ts in tombstones(),
            mut keys in proptest::collection::vec(key(), 1..80),
            read_seq in 0..45u64,
        ) {
            keys.sort();
            let mut cursor = FragmentCursor::new(Arc::new(FragmentedTombstones::build(&ts)));
            for k in keys.iter().chain(keys.iter().rev()) {
                prop_assert_eq!(cursor.max_covering_seq(k, read_seq), naive(&ts, k, read_seq));
            }
        }

        #[test]
        fn range_del_merge_equals_building_from_both(a in tombstones(), b in tombstones()) {
            let merged = FragmentedTombstones::merge(
                &FragmentedTombstones::build(&a),
                &FragmentedTombstones::build(&b),
            );
            let both = FragmentedTombstones::build(a.iter().chain(&b));
            prop_assert_eq!(merged.check(), Ok(()));
            prop_assert_eq!(fragments(&merged), fragments(&both));
        }
    }

    #[test]
    fn range_del_cursor_handles_thousands_of_fragments_and_long_jumps() {
        let ts: Vec<RangeTombstone> = (0..5000u64)
            .map(|i| RangeTombstone {
                start: format!("row{:06}", i * 4).into_bytes(),
                end: format!("row{:06}/", i * 4).into_bytes(),
                seq: 10 + i,
            })
            .collect();
        let set = Arc::new(FragmentedTombstones::build(&ts));
        assert_eq!(set.len(), 5000);
        let mut cursor = FragmentCursor::new(Arc::clone(&set));
        let probe = |i: u64| format!("row{i:06}").into_bytes();
        let order = (0..20_000)
            .step_by(3)
            .chain((0..20_000).rev().step_by(7))
            .chain([19_996, 0, 10_000, 4, 19_999]);
        for i in order {
            let expected = if i % 4 == 0 { 10 + i / 4 } else { 0 };
            assert_eq!(
                cursor.max_covering_seq(&probe(i), u64::MAX),
                expected,
                "row {i}"
            );
            assert_eq!(
                set.max_covering_seq(&probe(i), 10 + i / 4),
                expected,
                "row {i}"
            );
        }
    }
}
