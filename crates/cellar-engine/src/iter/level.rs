//! Concatenates the disjoint, sorted files of one level (≥ 1) into one iterator, opening a
//! file's iterator only when the walk reaches it.
//!
//! A seek that lands before a file's first key positions at that file without reading it:
//! the entry there is the file's smallest key, which the manifest holds. In a tree whose
//! levels hold different key ranges (a load in key order leaves each level with a later
//! stretch of keys than the one below it) a seek then reads a block of the level whose range
//! holds the key only, instead of one block per level. The file is read when the merge hands
//! that entry out or steps past it (`load`).

use std::cmp::Ordering;
use std::sync::Arc;

use super::InternalIterator;
use crate::error::Result;
use crate::sst::SstIterator;
use crate::types::compare_internal;
use crate::version::FileHandle;

pub struct LevelIterator {
    files: Vec<Arc<FileHandle>>,
    index: usize,
    cur: Option<SstIterator>,
    /// Positioned at the first entry of `files[index]`, which is not open yet (`cur` is
    /// `None`): the key is the file's smallest key.
    at_unread_start: bool,
}

impl LevelIterator {
    pub fn new(files: Vec<Arc<FileHandle>>) -> Self {
        LevelIterator {
            files,
            index: 0,
            cur: None,
            at_unread_start: false,
        }
    }

    fn open(&mut self, index: usize) -> bool {
        self.at_unread_start = false;
        match self.files.get(index) {
            Some(f) => {
                self.index = index;
                self.cur = Some(f.reader.iter());
                true
            }
            None => {
                self.cur = None;
                false
            }
        }
    }

    /// Positions at the first entry of file `index` without reading it, where the manifest's
    /// smallest key is that entry's key as the file's iterator would give it (an ingested
    /// file's entries take its global sequence number as they are read, so it is opened).
    fn position_at_start(&mut self, index: usize) {
        match self.files.get(index) {
            Some(f) if f.meta.global_seq.is_none() => {
                self.index = index;
                self.cur = None;
                self.at_unread_start = true;
            }
            _ => self.open_at_first(index),
        }
    }

    /// Opens file `index` at its first entry (or the first entry after it).
    fn open_at_first(&mut self, index: usize) {
        if self.open(index) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn clear(&mut self) {
        self.cur = None;
        self.at_unread_start = false;
    }

    fn failed(&self) -> bool {
        self.cur.as_ref().is_some_and(|c| c.status().is_err())
    }

    fn skip_forward(&mut self) {
        while self.cur.as_ref().is_some_and(|c| !c.valid()) && !self.failed() {
            if !self.open(self.index + 1) {
                return;
            }
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.cur.as_ref().is_some_and(|c| !c.valid()) && !self.failed() {
            if self.index == 0 {
                self.cur = None;
                return;
            }
            self.open(self.index - 1);
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.at_unread_start || self.cur.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) {
        self.position_at_start(0);
    }
    fn seek_to_last(&mut self) {
        if let Some(last) = self.files.len().checked_sub(1) {
            self.open(last);
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
            self.skip_backward();
        } else {
            self.clear();
        }
    }
    fn seek(&mut self, ikey: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.meta.largest, ikey) == Ordering::Less);
        let before_file = self
            .files
            .get(i)
            .is_some_and(|f| compare_internal(ikey, &f.meta.smallest) != Ordering::Greater);
        if before_file {
            self.position_at_start(i);
        } else if self.open(i) {
            if let Some(c) = self.cur.as_mut() {
                c.seek(ikey);
            }
            self.skip_forward();
        }
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.meta.smallest, ikey) != Ordering::Greater);
        match i.checked_sub(1) {
            Some(i) => {
                self.open(i);
                if let Some(c) = self.cur.as_mut() {
                    c.seek_for_prev(ikey);
                }
                self.skip_backward();
            }
            None => self.clear(),
        }
    }
    fn load(&mut self) -> bool {
        if !self.at_unread_start {
            return false;
        }
        self.open_at_first(self.index);
        true
    }
    fn next(&mut self) {
        // A failed load leaves nothing to step past.
        if self.load() && !self.valid() {
            return;
        }
        if let Some(c) = self.cur.as_mut() {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if self.load() && !self.valid() {
            return;
        }
        if let Some(c) = self.cur.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        if self.at_unread_start {
            return self.files.get(self.index).map_or(&[], |f| &f.meta.smallest);
        }
        self.cur.as_ref().map(|c| c.key()).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        debug_assert!(!self.at_unread_start, "value() of an entry not loaded");
        self.cur.as_ref().map(|c| c.value()).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        match &self.cur {
            Some(c) => c.status(),
            None => Ok(()),
        }
    }
}
