//! One iterator trait for every layer (memtable, SST block, SST file, level, merge), so the
//! DB iterator is a composition of small pieces.

use crate::error::Result;

mod level;
mod merge;
pub use level::LevelIterator;
pub use merge::MergingIterator;
#[cfg(test)]
pub(crate) use merge::VecIterator;

/// Iterates internal keys (see [`crate::types`]) in [`crate::types::compare_internal`] order.
///
/// On an I/O or corruption error the iterator becomes invalid and `status` returns the error.
pub trait InternalIterator: Send {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// Positions at the first entry whose key is >= `ikey`.
    fn seek(&mut self, ikey: &[u8]);
    /// Positions at the last entry whose key is <= `ikey`.
    fn seek_for_prev(&mut self, ikey: &[u8]);
    /// REQUIRES: `valid()`.
    fn next(&mut self);
    /// REQUIRES: `valid()`.
    fn prev(&mut self);
    /// REQUIRES: `valid()`. The current internal key.
    fn key(&self) -> &[u8];
    /// REQUIRES: `valid()`, and `load` called since the iterator was positioned, for an
    /// iterator that positions without reading (`LevelIterator`); `MergingIterator` loads
    /// every entry it hands out.
    fn value(&self) -> &[u8];
    fn status(&self) -> Result<()>;
    /// Reads the current entry if a seek positioned the iterator without reading it (its key
    /// known from metadata); true if it did. The entry's key is unchanged unless that
    /// metadata was wrong; a failed read leaves the iterator invalid with the error.
    fn load(&mut self) -> bool {
        false
    }
}

impl<T: InternalIterator + ?Sized> InternalIterator for Box<T> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last()
    }
    fn seek(&mut self, ikey: &[u8]) {
        (**self).seek(ikey)
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        (**self).seek_for_prev(ikey)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn prev(&mut self) {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
    fn load(&mut self) -> bool {
        (**self).load()
    }
}
