//! Iterates an SST in `compare_internal` order: the index picks a data block (through the
//! partitions of a partitioned file), a [`BlockIter`] walks it; ingested files are read with
//! their global sequence number.

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::block::BlockIter;
use std::sync::Arc;

use crate::sst::mapped::WalkWatch;
use crate::sst::open_file::OpenFile;
use crate::sst::readahead::{Readahead, Step};
use crate::types;

/// Two-level iteration: the index (through its partitions, if any) picks a data block, a
/// [`BlockIter`] walks it.
/// Holds the open file (shared with the reader), so it is `'static` and `Send`. Errors are sticky: after one, the
/// iterator stays invalid and `status` keeps returning it.
pub struct SstIterator {
    file: Arc<OpenFile>,
    /// Entries read back with this sequence number (an ingested file).
    global_seq: Option<u64>,
    fill_cache: bool,
    block_idx: usize,
    data: Option<BlockIter>,
    err: Option<Error>,
    /// The current key restamped with the file's global sequence (ingested files only).
    key_buf: Vec<u8>,
    /// Bytes read ahead of a walk over blocks the cache does not hold.
    ahead: Readahead,
    /// Which of the walk's reads through the file's map are timed.
    watch: WalkWatch,
}

impl SstIterator {
    pub(super) fn new(file: Arc<OpenFile>, global_seq: Option<u64>, fill_cache: bool) -> Self {
        SstIterator {
            file,
            global_seq,
            fill_cache,
            block_idx: 0,
            data: None,
            err: None,
            key_buf: Vec::new(),
            ahead: Readahead::default(),
            watch: WalkWatch::default(),
        }
    }

    /// After every move: for an ingested file, the current key with its trailer's sequence
    /// replaced by the global one.
    fn restamp(&mut self) {
        let Some(g) = self.global_seq else {
            return;
        };
        self.key_buf.clear();
        if let Some(d) = self.data.as_ref().filter(|d| d.valid()) {
            if let Some((uk, trailer)) = types::split_internal(d.key()) {
                let (_, kind) = types::unpack_trailer(trailer);
                self.key_buf.extend_from_slice(uk);
                self.key_buf
                    .extend_from_slice(&types::pack_trailer(g, kind).to_le_bytes());
            }
        }
    }

    fn seek_stored(&mut self, target: &[u8]) {
        self.data = None;
        if self.err.is_some() {
            return;
        }
        let inner = &*self.file;
        match inner.meta.find_block(&inner.src, target) {
            Err(e) => self.set_err(e),
            Ok(None) => {}
            Ok(Some(i)) => {
                if self.position(i, |d| d.seek(target)) {
                    self.skip_forward();
                }
            }
        }
    }

    fn seek_for_prev_stored(&mut self, target: &[u8]) {
        self.data = None;
        if self.err.is_some() {
            return;
        }
        let inner = &*self.file;
        let n = inner.meta.num_blocks();
        // Past every separator means past every key: the answer is the file's last entry.
        match inner.meta.find_block(&inner.src, target) {
            Err(e) => self.set_err(e),
            Ok(found) if n > 0 => {
                if self.position(found.unwrap_or(n - 1), |d| d.seek_for_prev(target)) {
                    self.skip_backward();
                }
            }
            Ok(_) => {}
        }
    }

    fn stored_user_key_is(&self, uk: &[u8]) -> bool {
        self.data
            .as_ref()
            .filter(|d| d.valid())
            .and_then(|d| types::split_internal(d.key()))
            .is_some_and(|(k, _)| k == uk)
    }
    fn set_err(&mut self, e: Error) {
        self.err.get_or_insert(e);
        self.data = None;
    }

    fn load(&mut self, i: usize) -> bool {
        let step = match self.data {
            Some(_) if i == self.block_idx + 1 => Step::Forward,
            Some(_) if i + 1 == self.block_idx => Step::Backward,
            _ => Step::Jump,
        };
        let timed = self.watch.times(step);
        match self
            .file
            .block_at(i, self.fill_cache, &mut self.ahead, step, timed)
        {
            Ok(b) => {
                self.block_idx = i;
                let key = self.data.take().map(BlockIter::into_key_buffer);
                self.data = Some(b.into_iter_with(key.unwrap_or_default()));
                true
            }
            Err(e) => {
                self.set_err(e);
                false
            }
        }
    }

    /// Leaves `data` valid, or moves on to the first entry of a following block.
    fn skip_forward(&mut self) {
        while let Some(d) = &self.data {
            if d.valid() {
                return;
            }
            if let Err(e) = d.status() {
                return self.set_err(e);
            }
            let next = self.block_idx + 1;
            if next >= self.file.meta.num_blocks() {
                self.data = None;
                return;
            }
            if self.load(next) {
                if let Some(d) = &mut self.data {
                    d.seek_to_first();
                }
            }
        }
    }

    fn skip_backward(&mut self) {
        while let Some(d) = &self.data {
            if d.valid() {
                return;
            }
            if let Err(e) = d.status() {
                return self.set_err(e);
            }
            if self.block_idx == 0 {
                self.data = None;
                return;
            }
            if self.load(self.block_idx - 1) {
                if let Some(d) = &mut self.data {
                    d.seek_to_last();
                }
            }
        }
    }

    /// Loads block `i` and positions inside it with `f`; false if nothing was loaded.
    fn position(&mut self, i: usize, f: impl FnOnce(&mut BlockIter)) -> bool {
        if !self.load(i) {
            return false;
        }
        if let Some(d) = &mut self.data {
            f(d);
        }
        true
    }
}

impl InternalIterator for SstIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.data = None;
        if self.err.is_none()
            && self.file.meta.num_blocks() > 0
            && self.position(0, |d| d.seek_to_first())
        {
            self.skip_forward();
        }
        self.restamp();
    }

    fn seek_to_last(&mut self) {
        self.data = None;
        let n = self.file.meta.num_blocks();
        if self.err.is_none() && n > 0 && self.position(n - 1, |d| d.seek_to_last()) {
            self.skip_backward();
        }
        self.restamp();
    }

    fn seek(&mut self, target: &[u8]) {
        let Some(g) = self.global_seq else {
            return self.seek_stored(target);
        };
        // Stored keys carry sequence 0; compare as if they carried `g`.
        let Some((uk, trailer)) = types::split_internal(target) else {
            return self.seek_stored(target);
        };
        let (t, _) = types::unpack_trailer(trailer);
        self.seek_stored(&types::make_internal_key(uk, types::MAX_SEQ, 0xff));
        // (uk, g) sorts after a target (uk, t) only when g <= t; otherwise skip uk's entry.
        if g > t && self.stored_user_key_is(uk) {
            if let Some(d) = &mut self.data {
                d.next();
            }
            self.skip_forward();
        }
        self.restamp();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let Some(g) = self.global_seq else {
            return self.seek_for_prev_stored(target);
        };
        let Some((uk, trailer)) = types::split_internal(target) else {
            return self.seek_for_prev_stored(target);
        };
        let (t, _) = types::unpack_trailer(trailer);
        if g >= t {
            // (uk, g) <= target: land on uk's entry, or the last one before it.
            self.seek_for_prev_stored(&types::make_internal_key(uk, 0, 0));
        } else {
            // (uk, g) > target: the last entry of a smaller user key.
            self.seek_for_prev_stored(&types::make_internal_key(uk, types::MAX_SEQ, 0xff));
            if self.stored_user_key_is(uk) {
                if let Some(d) = &mut self.data {
                    d.prev();
                }
                self.skip_backward();
            }
        }
        self.restamp();
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
        self.restamp();
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
        self.restamp();
    }

    fn key(&self) -> &[u8] {
        if self.global_seq.is_some() {
            return &self.key_buf;
        }
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
