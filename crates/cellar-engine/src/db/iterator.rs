//! The user-facing iterator: turns the merged stream of internal entries (every version,
//! tombstones included) into the live keys visible at one sequence number, within bounds,
//! forward and backward.

use std::sync::Arc;

use super::read::{check_key, keyspace_version, tombstone_sets, ReadOptions};
use super::{Db, SuperVersion};
use crate::batch::Keyspace;
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, LevelIterator, MergingIterator};
use crate::range_del::TombstoneCursors;
use crate::types::{
    make_internal_key, split_internal, unpack_trailer, SeqNo, ValueKind, MAX_SEQ, TRAILER_LEN,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Iterates live keys in order. Positioned with `seek*`, moved with `next`/`prev`; check
/// `status()` when it becomes invalid to tell the end from an error.
pub struct DbIterator {
    iter: MergingIterator,
    seq: SeqNo,
    /// Follow the keys the iterator visits, in either direction.
    tombstones: TombstoneCursors,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    /// The entry found by a backward walk, which has moved the merged iterator past it.
    /// Going forward the merged iterator stays on the entry and lends key and value.
    key: Vec<u8>,
    value: Vec<u8>,
    /// Going forward, the user key whose older versions are being stepped over.
    skip: Vec<u8>,
    err: Option<Error>,
    // Keeps memtables and files alive while the iterator exists.
    _sv: Arc<SuperVersion>,
}

/// The user key of an internal key the merged iterator holds (`find_next` checked its
/// length before stopping on it).
fn user_key_of(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// Whether two user keys are equal, their last bytes compared first: consecutive keys of a
/// scan nearly always differ near their end (a counter, a timestamp), so most comparisons
/// end there without a call to `memcmp`.
fn same_user_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.last() == b.last() && a == b
}

/// The smallest key greater than every key starting with `prefix`, if one exists.
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last < 0xff {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

impl Db {
    /// An iterator over `ks` as of `ro.snapshot` (or now), limited by the bounds and prefix
    /// of `ro`. It starts unpositioned: call a `seek*` first.
    pub fn iter(&self, ks: &Keyspace, ro: ReadOptions) -> Result<DbIterator> {
        let inner = &self.inner;
        let sv = inner.read_view(&ro);
        let seq = inner.read_seq(&ro);
        let kv = keyspace_version(&sv, ks)?;
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for m in sv.memtables() {
            children.push(Box::new(m.iter(ks.id)));
        }
        for (level, files) in kv.levels.iter().enumerate() {
            if level == 0 {
                // Each level-0 file is a level of its own: a seek before its first key or
                // past its last reads nothing from it (iter/level.rs).
                for f in files {
                    children.push(Box::new(LevelIterator::new(vec![Arc::clone(f)])));
                }
            } else if !files.is_empty() {
                children.push(Box::new(LevelIterator::new(files.clone())));
            }
        }
        let tombstones = TombstoneCursors::new(tombstone_sets(&sv, kv, ks.id));
        let mut lower = ro.lower_bound;
        let mut upper = ro.upper_bound;
        if let Some(p) = &ro.prefix {
            check_key(p)?;
            if lower.as_ref().is_none_or(|l| l < p) {
                lower = Some(p.clone());
            }
            if let Some(succ) = prefix_successor(p) {
                if upper.as_ref().is_none_or(|u| *u > succ) {
                    upper = Some(succ);
                }
            }
        }
        Ok(DbIterator {
            iter: MergingIterator::new(children),
            seq,
            tombstones,
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            skip: Vec::new(),
            err: None,
            _sv: sv,
        })
    }
}

impl DbIterator {
    /// Whether the iterator is positioned at an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => user_key_of(self.iter.key()),
            Direction::Reverse => &self.key,
        }
    }

    /// REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => self.iter.value(),
            Direction::Reverse => &self.value,
        }
    }

    /// The first error met, if any (then the iterator is invalid).
    pub fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.iter.status(),
        }
    }

    /// Positions at the first key (the lower bound, when set).
    pub fn seek_to_first(&mut self) {
        self.direction = Direction::Forward;
        match self.lower.clone() {
            Some(l) => self.iter.seek(&make_internal_key(&l, self.seq, 0xff)),
            None => self.iter.seek_to_first(),
        }
        self.find_next(false);
    }

    /// Positions at the last key below the upper bound, when set.
    pub fn seek_to_last(&mut self) {
        self.direction = Direction::Reverse;
        match self.upper.clone() {
            // The first internal key of `upper`: everything before it is below the bound.
            Some(u) => self
                .iter
                .seek_for_prev(&make_internal_key(&u, MAX_SEQ, 0xff)),
            None => self.iter.seek_to_last(),
        }
        self.find_prev();
    }

    /// Positions at the first key >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.direction = Direction::Forward;
        let t = match &self.lower {
            Some(l) if l.as_slice() > target => l.clone(),
            _ => target.to_vec(),
        };
        self.iter.seek(&make_internal_key(&t, self.seq, 0xff));
        self.find_next(false);
    }

    /// Positions at the last key <= `target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        if self.upper.as_ref().is_some_and(|u| target >= u.as_slice()) {
            return self.seek_to_last();
        }
        self.direction = Direction::Reverse;
        // The last internal key of `target`: seq 0 sorts after all its versions.
        self.iter.seek_for_prev(&make_internal_key(target, 0, 0));
        self.find_prev();
    }

    /// Moves to the next key; does nothing when not `valid()`.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            // The merged iterator sits before the current key; jump past all of its versions.
            self.direction = Direction::Forward;
            self.iter.seek(&make_internal_key(&self.key, 0, 0));
            std::mem::swap(&mut self.skip, &mut self.key);
        } else {
            self.skip.clear();
            self.skip.extend_from_slice(user_key_of(self.iter.key()));
            self.iter.next();
        }
        self.find_next(true);
    }

    /// Moves to the previous key; does nothing when not `valid()`.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // Step back before every version of the current key.
            let k = make_internal_key(self.key(), MAX_SEQ, 0xff);
            self.direction = Direction::Reverse;
            self.iter.seek_for_prev(&k);
        }
        self.find_prev();
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        self.err = Some(e);
    }

    fn bad_key(&mut self) {
        self.fail(Error::corruption(
            "(iterator)",
            0,
            "internal key shorter than its trailer",
        ));
    }

    /// Moves forward to the newest visible live entry, stopping on it; with `skipping`, of a
    /// key other than `self.skip`.
    fn find_next(&mut self, mut skipping: bool) {
        while self.iter.valid() {
            let Some((ukey, trailer)) = split_internal(self.iter.key()) else {
                return self.bad_key();
            };
            let (seq, kind) = unpack_trailer(trailer);
            if seq <= self.seq && !(skipping && same_user_key(ukey, &self.skip)) {
                if self.upper.as_ref().is_some_and(|u| ukey >= u.as_slice()) {
                    break;
                }
                if kind == ValueKind::Put as u8
                    && seq >= self.tombstones.max_covering_seq(ukey, self.seq)
                {
                    self.valid = true;
                    return;
                }
                // Deleted: hide its older versions too.
                self.skip.clear();
                self.skip.extend_from_slice(ukey);
                skipping = true;
            }
            self.iter.next();
        }
        self.valid = false;
        if let Err(e) = self.iter.status() {
            self.err = Some(e);
        }
    }

    /// Moves backward to the previous key whose newest visible entry is live. Walking
    /// backward meets a key's versions oldest first, so the decision for a key is made when
    /// the walk leaves it.
    fn find_prev(&mut self) {
        let mut have = false;
        self.key.clear();
        self.value.clear();
        while self.iter.valid() {
            let Some((ukey, trailer)) = split_internal(self.iter.key()) else {
                return self.bad_key();
            };
            let (seq, kind) = unpack_trailer(trailer);
            if seq <= self.seq {
                if have && ukey < self.key.as_slice() {
                    break;
                }
                if self.lower.as_ref().is_some_and(|l| ukey < l.as_slice()) {
                    break;
                }
                if kind == ValueKind::Put as u8
                    && seq >= self.tombstones.max_covering_seq(ukey, self.seq)
                {
                    self.key.clear();
                    self.key.extend_from_slice(ukey);
                    self.value.clear();
                    self.value.extend_from_slice(self.iter.value());
                    have = true;
                } else {
                    have = false;
                    self.key.clear();
                    self.value.clear();
                }
            }
            self.iter.prev();
        }
        // The walk meets a key's older versions first: if a source failed before the newer
        // ones were seen, what was saved may be stale. An error always wins.
        if let Err(e) = self.iter.status() {
            return self.fail(e);
        }
        self.valid = have;
    }
}
