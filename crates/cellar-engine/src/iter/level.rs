//! Concatenates the disjoint, sorted files of one level (≥ 1) into one iterator, opening a
//! file's iterator only when the walk reaches it.

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
}

impl LevelIterator {
    pub fn new(files: Vec<Arc<FileHandle>>) -> Self {
        LevelIterator {
            files,
            index: 0,
            cur: None,
        }
    }

    fn open(&mut self, index: usize) -> bool {
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
        self.cur.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }
    fn seek_to_last(&mut self) {
        if let Some(last) = self.files.len().checked_sub(1) {
            self.open(last);
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
            self.skip_backward();
        } else {
            self.cur = None;
        }
    }
    fn seek(&mut self, ikey: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.meta.largest, ikey) == Ordering::Less);
        if self.open(i) {
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
            None => self.cur = None,
        }
    }
    fn next(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.key()).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.value()).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        match &self.cur {
            Some(c) => c.status(),
            None => Ok(()),
        }
    }
}
