//! Inserting a run of entries in key order, their places searched for together.
//!
//! A search through a large memtable misses the CPU cache on most nodes it passes below the
//! top levels (about 20 misses at a million entries), and each miss waits for the one before
//! it, because the next node is known only once the last one has arrived. The searches of
//! different entries do not depend on each other, so [`SkipList::insert_run`] walks
//! [`GROUP`] of them in turns: a step of one search asks for the node its next comparison
//! reads, and the other searches' steps run while that line arrives, so their misses
//! overlap. The group's nodes are then linked in order; where an entry of the same group was
//! linked between a search's neighbours since, the compare-and-swap fails on it and the
//! search goes on from there, as it does for an insert from another thread.
//! docs/design/write-paths.md, "Sorted runs", has the measurements.

use std::array;
use std::cmp::Ordering;
use std::marker::PhantomData;

use super::{
    height_of, node_bytes, Neighbours, NodeRef, Probe, SkipList, Splice, Successors, MAX_HEIGHT,
};
use crate::sst::prefetch;

/// Searches walked in turns. Eight outstanding misses per core is about what the line fill
/// buffers hold; more searches would only wait for a free one.
const GROUP: usize = 8;

/// An entry to insert: its internal key is `key[0]` followed by `key[1]`.
pub(in crate::memtable) struct NewEntry<'a> {
    pub ks: u32,
    pub head: u64,
    pub key: [&'a [u8]; 2],
    pub value: &'a [u8],
    /// Draws the node's height ([`height_of`]).
    pub seed: u64,
}

/// One search in progress: `x` sorts before the probe, `next` is `x`'s successor at
/// `level`, asked for when it was read and compared on the search's next turn.
#[derive(Clone, Copy)]
struct Walk<'a> {
    x: NodeRef<'a>,
    level: usize,
    next: Option<NodeRef<'a>>,
    done: bool,
}

impl SkipList {
    /// Adds `entries`, which are in key order (any order among entries of one user key);
    /// returns the bytes they took. The same entries as [`SkipList::insert`] one by one, and
    /// as safe beside other threads' inserts.
    pub(in crate::memtable) fn insert_run(&self, entries: &[NewEntry<'_>]) -> usize {
        // Threads inserting at once do not wait for the hint: all but one search.
        let mut hint = self.hint.try_lock();
        entries
            .chunks(GROUP)
            .map(|g| self.insert_group(g, hint.as_deref_mut()))
            .sum()
    }

    /// Writes the group's nodes and links them. A group that falls whole between the last
    /// insert's neighbours (keys arriving in order, as in a sorted load) is linked from the
    /// hint, entry after entry, with no search; any other group is searched for together.
    fn insert_group(&self, group: &[NewEntry<'_>], mut hint: Option<&mut Splice>) -> usize {
        let mut bytes = 0;
        let mut heights = [0usize; GROUP];
        let mut nodes = [self.first(); GROUP];
        for (i, e) in group.iter().enumerate() {
            heights[i] = height_of(e.seed);
            bytes += node_bytes(heights[i], e.key[0].len() + e.key[1].len(), e.value.len());
            nodes[i] = NodeRef {
                ptr: Self::write_node(&self.arena, heights[i], e.ks, e.key, e.value),
                _list: PhantomData,
            };
        }
        let top = self.raise_height(heights.iter().copied().max().unwrap_or(1));
        let n = group.len();
        // Slots past the group repeat its last entry; only the first `n` are used.
        let probes: [Probe<'_>; GROUP] = array::from_fn(|i| {
            let j = i.min(n - 1);
            Probe {
                ks: group[j].ks,
                head: group[j].head,
                ikey: nodes[j].key(),
            }
        });
        if let Some(h) = hint
            .as_deref_mut()
            .filter(|h| self.holds(h, &probes[..n], top))
        {
            for i in 0..n {
                self.place(Some(&mut *h), nodes[i], heights[i], &probes[i], top);
            }
            return bytes;
        }
        let mut prev = [[self.first(); MAX_HEIGHT]; GROUP];
        let mut next = [[None; MAX_HEIGHT]; GROUP];
        self.search_together(&probes[..n], top, &mut prev, &mut next);
        for i in 0..n {
            Self::link(nodes[i], heights[i], &probes[i], &mut prev[i], &mut next[i]);
        }
        // The next group may start where this one ended (a neighbour linked by the group
        // since its search only makes the hint stale, which the insert from it allows).
        if let Some(h) = hint {
            let last = n - 1;
            h.remember(nodes[last], heights[last], top, &prev[last], &next[last]);
        }
        bytes
    }

    /// Whether every probe (in key order) falls between the hint's neighbours at level 0.
    fn holds(&self, h: &Splice, probes: &[Probe<'_>], top: usize) -> bool {
        let (Some(first), Some(last)) = (probes.first(), probes.last()) else {
            return false;
        };
        // SAFETY: the hint only ever holds nodes of this list (`insert` writes it).
        let after_last = h.next[0].map(|raw| unsafe { self.node(raw) });
        self.hinted(h, first, top).is_some()
            && after_last.is_none_or(|n| n.cmp(last) == Ordering::Greater)
    }

    /// The neighbours of each probe at every level below `top`, as [`SkipList::splice`]
    /// finds them, with the searches taking turns (module comment).
    fn search_together<'a>(
        &'a self,
        probes: &[Probe<'_>],
        top: usize,
        prev: &mut [Neighbours<'a>; GROUP],
        next: &mut [Successors<'a>; GROUP],
    ) {
        let start = Walk {
            x: self.first(),
            level: top - 1,
            next: self.first().next(top - 1),
            done: false,
        };
        let mut walks = [start; GROUP];
        let mut running = probes.len();
        while running > 0 {
            for (i, p) in probes.iter().enumerate() {
                let w = &mut walks[i];
                if w.done {
                    continue;
                }
                match w.next {
                    Some(n) if n.cmp(p) == Ordering::Less => w.x = n,
                    n => {
                        (prev[i][w.level], next[i][w.level]) = (w.x, n);
                        if w.level == 0 {
                            w.done = true;
                            running -= 1;
                            continue;
                        }
                        w.level -= 1;
                    }
                }
                w.next = w.x.next(w.level);
                if let Some(n) = w.next {
                    // Its header and key head, and its link at this level, read next turn.
                    prefetch::read(n.ptr.as_ptr());
                    prefetch::read(n.link(w.level));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Barrier};

    use super::super::tests::{model_key, order_checker};
    use super::*;
    use crate::coding::head8;
    use crate::types::{make_internal_key, split_internal};

    type ModelKey = (u32, Vec<u8>, std::cmp::Reverse<u64>);

    /// Inserts `(ks, internal key)` pairs, in the order given, as one run.
    fn add_run(l: &SkipList, run: &[(u32, Vec<u8>)]) {
        let entries: Vec<NewEntry<'_>> = run
            .iter()
            .map(|(ks, ikey)| {
                let (u, t) = ikey.split_at(ikey.len() - 8);
                NewEntry {
                    ks: *ks,
                    head: head8(u),
                    key: [u, t],
                    value: ikey,
                    seed: crate::sst::bloom::key_hash(ikey),
                }
            })
            .collect();
        l.insert_run(&entries);
    }

    fn walk(l: &SkipList) -> Vec<ModelKey> {
        std::iter::successors(l.front(), |n| n.successor())
            .map(|n| {
                assert_eq!(n.key(), n.value());
                model_key(n.ks(), n.key())
            })
            .collect()
    }

    proptest::proptest! {
        /// Runs of every shape (scattered over the list, inside one gap, after its end,
        /// with several versions of a key in any order) link the entries a model holds,
        /// beside single inserts.
        #[test]
        fn runs_link_what_an_ordered_set_holds(
            steps in proptest::collection::vec(
                (proptest::collection::vec(
                    (0u32..3, proptest::collection::vec(0u8..6, 0..8), 1u64..6), 1..40),
                 0u8..3),
                1..12),
        ) {
            let l = SkipList::new();
            let mut model = BTreeSet::new();
            let mut next_key = 0u32;
            for (entries, shape) in steps {
                let mut run = Vec::new();
                for (ks, mut k, seq) in entries {
                    if shape == 2 {
                        // After everything so far: an append, as a sorted load makes.
                        k = [&[0xff, 0xff][..], &next_key.to_be_bytes()].concat();
                        next_key += 1;
                    }
                    let ikey = make_internal_key(&k, seq, 1);
                    if model.insert(model_key(ks, &ikey)) {
                        run.push((ks, ikey));
                    }
                }
                // Key order by (keyspace, user key), versions of one key in arrival order.
                run.sort_by(|a, b| {
                    let (ua, _) = split_internal(&a.1).expect("key");
                    let (ub, _) = split_internal(&b.1).expect("key");
                    (a.0, ua).cmp(&(b.0, ub))
                });
                if shape == 1 {
                    for (ks, ikey) in &run {
                        add_run(&l, &[(*ks, ikey.clone())]);
                    }
                } else {
                    add_run(&l, &run);
                }
            }
            let want: Vec<_> = model.iter().cloned().collect();
            proptest::prop_assert_eq!(walk(&l), want);
        }
    }

    /// Runs from several threads, with a reader walking meanwhile: every entry is linked
    /// once, in order.
    #[test]
    fn concurrent_runs_link_every_entry_in_order() {
        let l = Arc::new(SkipList::new());
        let threads = 4u64;
        let runs = 500u64;
        let start = Arc::new(Barrier::new(threads as usize));
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let (l, start) = (Arc::clone(&l), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    for r in 0..runs {
                        // Each run spreads over the whole key space, between other
                        // threads' keys, where the links race.
                        let run: Vec<_> = (0..40u64)
                            .map(|j| {
                                let key = ((j * runs + r) * threads + t).to_be_bytes();
                                (0, make_internal_key(&key, r + 1, 1))
                            })
                            .collect();
                        add_run(&l, &run);
                    }
                })
            })
            .collect();
        let reader = order_checker(Arc::clone(&l));
        for w in writers {
            w.join().expect("writer");
        }
        reader.join().expect("reader");
        let keys = walk(&l);
        assert_eq!(keys.len() as u64, threads * runs * 40);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }
}
