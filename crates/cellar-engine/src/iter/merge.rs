//! Merges sorted child iterators into one sorted stream, in both directions.
//!
//! Children are few (memtables, L0 files, one iterator per deeper level), so the smallest
//! or largest child is found by a linear scan rather than a heap: fewer branches and no
//! bookkeeping when the direction changes.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
use crate::types::compare_internal;

pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    /// The child that would be current if `current` were exhausted: the next smallest
    /// (largest when reversed) of the others. The others do not move while `current`
    /// steps, so a step only has to compare `current` against it.
    runner_up: Option<usize>,
    forward: bool,
}

impl MergingIterator {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            runner_up: None,
            forward: true,
        }
    }

    /// A child that failed is invalid, but the others are not: merging on would surface
    /// older versions the failed child was hiding. Any failure ends the walk.
    fn any_failed(&self) -> bool {
        self.children
            .iter()
            .any(|c| !c.valid() && c.status().is_err())
    }

    /// Sets `current` to the child whose key sorts first, `runner_up` to the one after it,
    /// where "first" is `Less` going forward and `Greater` going backward. Equal keys go
    /// to the child listed first. The leader is loaded before it is handed out
    /// (`InternalIterator::load`): a child positioned from metadata alone reads its entry
    /// only if it leads.
    fn find_leader(&mut self, first: Ordering) {
        loop {
            self.pick_leader(first);
            match self.current {
                Some(cur) if self.children[cur].load() => continue,
                _ => return,
            }
        }
    }

    /// `find_leader` without the load.
    fn pick_leader(&mut self, first: Ordering) {
        self.current = None;
        self.runner_up = None;
        if self.any_failed() {
            return;
        }
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            let Some(b) = self.current else {
                self.current = Some(i);
                continue;
            };
            if compare_internal(c.key(), self.children[b].key()) == first {
                self.runner_up = self.current;
                self.current = Some(i);
            } else if self
                .runner_up
                .is_none_or(|r| compare_internal(c.key(), self.children[r].key()) == first)
            {
                self.runner_up = Some(i);
            }
        }
    }

    /// After child `cur`, the leader, stepped: whether it still leads. Otherwise (or when
    /// it is exhausted or failed) the caller looks at every child again.
    fn still_leads(&self, cur: usize, first: Ordering) -> bool {
        let c = &self.children[cur];
        if !c.valid() {
            return false;
        }
        self.runner_up.is_none_or(|r| {
            let o = compare_internal(c.key(), self.children[r].key());
            o == first || (o == Ordering::Equal && cur < r)
        })
    }

    fn find_smallest(&mut self) {
        self.find_leader(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.find_leader(Ordering::Greater);
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.forward = true;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.forward = false;
        self.find_largest();
    }

    fn seek(&mut self, ikey: &[u8]) {
        for c in &mut self.children {
            c.seek(ikey);
        }
        self.forward = true;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, ikey: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(ikey);
        }
        self.forward = false;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if !self.forward {
            // Every other child sits before the current key; move each to the first entry
            // after it so that all children agree on the direction.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.forward = true;
            self.children[cur].next();
            return self.find_smallest();
        }
        self.children[cur].next();
        if !self.still_leads(cur, Ordering::Less) {
            self.find_smallest();
        }
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.forward {
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek_for_prev(&key);
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.prev();
                }
            }
            self.forward = false;
            self.children[cur].prev();
            return self.find_largest();
        }
        self.children[cur].prev();
        if !self.still_leads(cur, Ordering::Greater) {
            self.find_largest();
        }
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
}

/// A sorted in-memory iterator; used by tests of the layers above.
#[cfg(test)]
pub(crate) struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

#[cfg(test)]
impl VecIterator {
    pub(crate) fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
        VecIterator { entries, pos: None }
    }
}

#[cfg(test)]
impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = if self.entries.is_empty() {
            None
        } else {
            Some(0)
        };
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, ikey: &[u8]) {
        let i = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, ikey) == Ordering::Less);
        self.pos = (i < self.entries.len()).then_some(i);
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        let i = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, ikey) != Ordering::Greater);
        self.pos = i.checked_sub(1);
    }
    fn next(&mut self) {
        self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.entries.len());
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        self.pos.map(|p| &self.entries[p].0[..]).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.pos.map(|p| &self.entries[p].1[..]).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::make_internal_key;
    use proptest::prelude::*;

    /// A child that, like a level positioned before a file, knows its key after a seek but
    /// has its value only once loaded; a value asked for before that is an error.
    struct Unloaded {
        inner: VecIterator,
        loaded: bool,
    }

    impl InternalIterator for Unloaded {
        fn valid(&self) -> bool {
            self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.inner.seek_to_first();
            self.loaded = false;
        }
        fn seek_to_last(&mut self) {
            self.inner.seek_to_last();
            self.loaded = true;
        }
        fn seek(&mut self, ikey: &[u8]) {
            self.inner.seek(ikey);
            self.loaded = false;
        }
        fn seek_for_prev(&mut self, ikey: &[u8]) {
            self.inner.seek_for_prev(ikey);
            self.loaded = true;
        }
        fn next(&mut self) {
            self.inner.next();
            self.loaded = true;
        }
        fn prev(&mut self) {
            self.inner.prev();
            self.loaded = true;
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            if self.loaded {
                self.inner.value()
            } else {
                b"not loaded"
            }
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
        fn load(&mut self) -> bool {
            !std::mem::replace(&mut self.loaded, true)
        }
    }

    fn ik(k: u8, seq: u64) -> Vec<u8> {
        make_internal_key(&[k], seq, 1)
    }

    proptest! {
        #[test]
        fn merge_equals_sorted_union_in_any_walk(
            parts in proptest::collection::vec(
                proptest::collection::btree_set((0u8..20, 1u64..1000), 0..10), 1..5),
            walk in proptest::collection::vec(any::<bool>(), 0..40),
            seek_to in (0u8..22, 0u64..1000),
            unloaded in proptest::collection::vec(any::<bool>(), 5),
        ) {
            // Sequence numbers are unique across children in the engine; make them so here.
            let mut seen = std::collections::BTreeSet::new();
            let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
            let mut all = Vec::new();
            for p in parts {
                let mut v = Vec::new();
                for (k, s) in p {
                    if seen.insert(s) {
                        v.push((ik(k, s), vec![k]));
                        all.push(ik(k, s));
                    }
                }
                let inner = VecIterator::new(v);
                if unloaded[children.len()] {
                    children.push(Box::new(Unloaded { inner, loaded: true }));
                } else {
                    children.push(Box::new(inner));
                }
            }
            all.sort_by(|a, b| compare_internal(a, b));
            let mut m = MergingIterator::new(children);
            let target = ik(seek_to.0, seek_to.1);
            m.seek(&target);
            let mut pos = all.partition_point(|k| compare_internal(k, &target) == Ordering::Less);
            for fwd in walk {
                if pos >= all.len() {
                    prop_assert!(!m.valid());
                    break;
                }
                prop_assert!(m.valid());
                prop_assert_eq!(m.key(), &all[pos][..]);
                prop_assert_eq!(m.value(), &all[pos][..1]);
                if fwd { m.next(); pos += 1; } else {
                    m.prev();
                    if pos == 0 { prop_assert!(!m.valid()); break; }
                    pos -= 1;
                }
            }
        }
    }
}
