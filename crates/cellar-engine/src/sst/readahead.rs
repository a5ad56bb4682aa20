//! Readahead inside one iterator: when an iterator misses the block cache on the block next
//! to the one it read last, it reads a window of the file with one pread and decodes the
//! following blocks from it, instead of one pread per block. A walk forward reads the window
//! that starts at the missed block; a walk backward, the window that ends with it. The
//! first sequential miss after a seek still reads its block alone; from the second on, the
//! window starts small and doubles with each miss, so a short walk after a seek (a range
//! read of a few blocks) reads no more than it needs. A seek or a turn starts over.
//!
//! A walk that reads the largest windows is a long scan, and its blocks are not kept in the
//! block cache: it would evict them (and the point reads' hot set) before reading them
//! again, and caching each costs a fresh allocation, a page fault per 4 KiB while the cache
//! fills. The rule and its measurement: docs/design/scan-readahead.md.

use crate::sst::format::BlockHandle;

/// The first window, read at the second sequential miss in a row.
pub const MIN_WINDOW: u64 = 16 << 10;
/// The largest window: the same bound as a coalesced `multi_get` read.
pub const MAX_WINDOW: u64 = super::open_file::MAX_COALESCED_READ;

/// How an iterator reached the block it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A seek, or the first block: no pattern yet.
    Jump,
    /// The block after the one read last.
    Forward,
    /// The block before the one read last.
    Backward,
}

/// The bytes an iterator read ahead, and how much it reads at its next sequential miss.
#[derive(Debug, Default)]
pub struct Readahead {
    /// The walk goes backward (its windows end at the missed block).
    backward: bool,
    start: u64,
    buf: Vec<u8>,
    /// 0 until the second sequential miss in a row.
    window: u64,
    /// A sequential miss happened since the last restart.
    armed: bool,
}

impl Readahead {
    /// Block `h` with its trailer, when the last window holds all of it.
    pub fn raw(&self, h: BlockHandle) -> Option<&[u8]> {
        let from = h.offset.checked_sub(self.start)?;
        let to = from.checked_add(h.len_with_trailer())?;
        self.buf
            .get(usize::try_from(from).ok()?..usize::try_from(to).ok()?)
    }

    /// The size of the window to read at a sequential miss, double the last one; `None` at
    /// the first sequential miss after a restart, which reads its block alone.
    pub fn next_window(&mut self) -> Option<u64> {
        if !std::mem::replace(&mut self.armed, true) {
            return None;
        }
        self.window = (self.window * 2).clamp(MIN_WINDOW, MAX_WINDOW);
        Some(self.window)
    }

    /// Whether the walk has read windows up to the largest: a long scan, whose blocks are
    /// not kept in the block cache.
    pub fn is_long_scan(&self) -> bool {
        self.window >= MAX_WINDOW
    }

    /// The access pattern broke (a seek, a turn): the next sequential miss reads the
    /// smallest window again.
    fn restart(&mut self) {
        self.window = 0;
        self.armed = false;
    }

    /// Notes how the iterator reached its next block; a jump or a turn restarts the
    /// windows. Returns whether the step is sequential (windows apply).
    pub fn follow(&mut self, step: Step) -> bool {
        let backward = match step {
            Step::Jump => {
                self.restart();
                return false;
            }
            Step::Forward => false,
            Step::Backward => true,
        };
        if backward != self.backward {
            self.restart();
            self.backward = backward;
        }
        true
    }

    /// Where the window of `len` bytes for a miss on `h` starts: at the block going
    /// forward; going backward, so that it ends with the block (at the file's start at the
    /// earliest).
    pub fn window_start(&self, h: BlockHandle, len: u64) -> u64 {
        if self.backward {
            (h.offset + h.len_with_trailer()).saturating_sub(len)
        } else {
            h.offset
        }
    }

    /// A buffer of `len` bytes for the window at `start`, reusing the last one's memory.
    /// Its bytes are the last window's where it had any (only new memory is zeroed): the
    /// caller reads the window over all of them, or calls `clear` when that read fails.
    pub fn refill(&mut self, start: u64, len: usize) -> &mut [u8] {
        self.start = start;
        self.buf.truncate(len);
        self.buf.resize(len, 0);
        &mut self.buf
    }

    /// Forgets the bytes (after a failed read), keeping the memory.
    pub fn clear(&mut self) {
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(offset: u64, size: u64) -> BlockHandle {
        BlockHandle { offset, size }
    }

    #[test]
    fn serves_only_blocks_wholly_inside_the_window() {
        let mut r = Readahead::default();
        let len = handle(0, 10).len_with_trailer() as usize;
        r.refill(100, 3 * len).fill(7);
        assert_eq!(r.raw(handle(100, 10)).map(<[u8]>::len), Some(len));
        assert!(r.raw(handle(100 + 2 * len as u64, 10)).is_some());
        assert!(
            r.raw(handle(101 + 2 * len as u64, 10)).is_none(),
            "runs past the end"
        );
        assert!(r.raw(handle(99, 10)).is_none(), "starts before the window");
        r.clear();
        assert!(r.raw(handle(100, 10)).is_none());
    }

    #[test]
    fn the_window_opens_at_the_second_miss_doubles_to_its_bound_and_restarts() {
        let mut r = Readahead::default();
        assert_eq!(
            r.next_window(),
            None,
            "the first sequential miss reads one block"
        );
        assert_eq!(r.next_window(), Some(MIN_WINDOW));
        assert_eq!(r.next_window(), Some(2 * MIN_WINDOW));
        for _ in 0..20 {
            r.next_window();
        }
        assert_eq!(r.next_window(), Some(MAX_WINDOW));
        assert!(r.is_long_scan());
        r.restart();
        assert!(!r.is_long_scan());
        assert_eq!(r.next_window(), None);
        assert_eq!(r.next_window(), Some(MIN_WINDOW));
    }

    #[test]
    fn a_turn_or_a_jump_restarts_and_backward_windows_end_at_the_block() {
        let mut r = Readahead::default();
        assert!(r.follow(Step::Forward));
        r.next_window();
        assert_eq!(r.next_window(), Some(MIN_WINDOW));
        assert!(r.follow(Step::Forward), "same direction keeps the window");
        assert_eq!(r.next_window(), Some(2 * MIN_WINDOW));
        assert!(r.follow(Step::Backward));
        assert_eq!(r.next_window(), None, "a turn starts over");
        let h = handle(100_000, 4000);
        assert_eq!(
            r.window_start(h, 16 << 10),
            h.offset + h.len_with_trailer() - (16 << 10)
        );
        assert_eq!(r.window_start(handle(10, 4000), 16 << 10), 0);
        assert!(!r.follow(Step::Jump));
        assert!(r.follow(Step::Forward));
        assert_eq!(r.window_start(h, 16 << 10), h.offset);
    }
}
