//! A test file that records the writeback hints it gets, for the writers that give them
//! (the WAL and the SST builder).

use std::sync::Arc;

use super::WritableFile;
use crate::error::{Error, Result};

/// The `(offset, len)` of every hint, in order.
pub(crate) type Hints = Arc<parking_lot::Mutex<Vec<(u64, u64)>>>;

/// Passes everything through to `inner` and records the writeback hints it gets; fails them
/// when `fail` is set.
pub(crate) struct HintRecorder {
    pub inner: Box<dyn WritableFile>,
    pub hints: Hints,
    pub fail: bool,
}

impl WritableFile for HintRecorder {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn start_writeback(&mut self, offset: u64, len: u64) -> Result<()> {
        if self.fail {
            return Err(Error::io(
                "hinted",
                std::io::Error::other("injected writeback failure"),
            ));
        }
        self.hints.lock().push((offset, len));
        Ok(())
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// Checks that `hints` start at `start`, follow each other without gaps, and each cover at
/// least `every` bytes.
pub(crate) fn assert_contiguous(hints: &[(u64, u64)], start: u64, every: u64) {
    assert_eq!(hints.first().map(|h| h.0), Some(start), "{hints:?}");
    for pair in hints.windows(2) {
        assert_eq!(pair[0].0 + pair[0].1, pair[1].0, "gap: {hints:?}");
    }
    assert!(hints.iter().all(|&(_, l)| l >= every), "{hints:?}");
}
