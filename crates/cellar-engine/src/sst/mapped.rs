//! Point reads of data blocks in place, through the file's memory map, while the page cache
//! holds the whole file.
//!
//! A block the block cache does not hold costs a `pread`: a system call, the kernel's page
//! cache lookup and a copy into a fresh buffer, then a block cache insertion whose memory,
//! on a VM that backs guest memory on first touch, faults in at ~10 µs per new page. When
//! the page cache holds the file, the map reaches the same bytes with no call and no copy.
//! A block stored uncompressed is then read in place on every lookup and every iterator step,
//! and never enters the block cache (the page cache is its cache, as in LMDB); a compressed
//! one is decompressed from the map on a block cache miss and cached as before. An
//! iterator's miss that no readahead window holds is decompressed from the map too
//! (`OpenFile::mapped_block`).
//!
//! Every read through the map checks the block's checksum, as a read from the file does:
//! the page cache may have read the bytes from the device again since the last lookup.
//!
//! The map is used only while the page cache holds every page of the file
//! (`RandomAccessFile::is_cached`), checked when the file opens and again every
//! `RECHECK_EVERY` timed reads of it (every point read, some of an iterator's: `WalkWatch`): a page not held would be read by a page fault,
//! which cannot report a device error (`SIGBUS`) and is not timed for the cold-start
//! warm-up. Between two checks a page may be evicted (a dropped page cache evicts them all);
//! its read is then a page fault of that page alone (the map is advised `MADV_RANDOM`, as
//! point reads' descriptor is `POSIX_FADV_RANDOM`), correct and slower. A read through the
//! map that took longer than `FAULTED_READ` checks at once, so such a file leaves the map
//! after one slow read, while a file that was only read slowly (the thread descheduled)
//! stays. The measurements: docs/design/mapped-reads.md.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::sst::format::BlockHandle;
use crate::sst::readahead::Step;
use crate::vfs::RandomAccessFile;

/// A read through the map that takes longer than this waited on the device: a page fault read
/// an evicted page. A read of a resident block takes about a microsecond (its checksum); one
/// 4 KiB device read, 0.1-0.5 ms on the benchmark machine.
const FAULTED_READ: Duration = Duration::from_micros(50);

/// How far the count of blocks found stored as they are may lead (or trail) the count of
/// compressed ones: the last this many blocks decide where a file's lookups go first.
const CODEC_LEAD_LIMIT: i32 = 64;

/// Timed reads of one file between two checks that the page cache still holds it. A check
/// (`cachestat`) costs a few microseconds for a 64 MiB file; a point read about two.
const RECHECK_EVERY: u32 = 4096;

/// A walk's reads through the map between two that are timed (and counted toward the
/// residency recheck). Timing every one cost two clock reads per block, and counting every one
/// rechecked a file for every 4 096 blocks a scan stepped over: 12 % of YCSB E's samples
/// with a block per record (docs/design/large-entry-blocks.md).
const WALK_TIMED_EVERY: u32 = 64;

/// Which of an iterator's reads through the map are timed: the first after a jump (a seek),
/// then every `WALK_TIMED_EVERY`-th, so that a walk into evicted pages leaves the map within
/// that many blocks.
#[derive(Debug, Default)]
pub(crate) struct WalkWatch {
    untimed: u32,
}

impl WalkWatch {
    /// Whether the read of the block a step reaches is timed.
    pub fn times(&mut self, step: Step) -> bool {
        if step == Step::Jump || self.untimed + 1 >= WALK_TIMED_EVERY {
            self.untimed = 0;
            return true;
        }
        self.untimed += 1;
        false
    }
}

/// A file's memory map and whether point reads use it now.
pub(crate) struct MappedFile {
    bytes: Bytes,
    /// The page cache held the whole file at the last check.
    resident: AtomicBool,
    /// Point reads left until the next check. Relaxed: a race checks once more or less.
    until_check: AtomicU32,
    /// Data blocks read through the map stored as they are, less those stored compressed,
    /// within ±`CODEC_LEAD_LIMIT`. While it is negative the file's lookups ask the block
    /// cache first, where its compressed blocks are; otherwise they read the map first,
    /// where its other blocks are read in place. A builder stores a block compressed only
    /// when that saves an eighth of it (`sst/compress_skip.rs`), so most files are all of
    /// one kind, with a few blocks of the other.
    raw_lead: AtomicI32,
}

impl MappedFile {
    /// Maps `file` if its Vfs can, and checks whether the page cache holds it.
    pub fn open(file: &dyn RandomAccessFile) -> Option<MappedFile> {
        let bytes = file.map_whole()?;
        let m = MappedFile {
            bytes,
            resident: AtomicBool::new(false),
            until_check: AtomicU32::new(RECHECK_EVERY),
            raw_lead: AtomicI32::new(0),
        };
        m.check(file);
        Some(m)
    }

    fn check(&self, file: &dyn RandomAccessFile) {
        let held = file.is_cached(0, file.size()) == Some(true);
        self.resident.store(held, Relaxed);
    }

    /// Counts one timed read of the file (through the map or not), checking residency again
    /// every `RECHECK_EVERY`.
    pub fn note_read(&self, file: &dyn RandomAccessFile) {
        let left = self.until_check.load(Relaxed);
        if left > 1 {
            self.until_check.store(left - 1, Relaxed);
            return;
        }
        self.until_check.store(RECHECK_EVERY, Relaxed);
        self.check(file);
    }

    /// Block `h`'s stored bytes (payload and trailer) in place, if point reads go through the map:
    /// `None` while the file is not resident. `h` must have been checked against the file's
    /// bounds.
    pub fn point_read(&self, h: BlockHandle) -> Option<&[u8]> {
        if !self.resident.load(Relaxed) {
            return None;
        }
        let start = usize::try_from(h.offset).ok()?;
        let end = start.checked_add(usize::try_from(h.len_with_trailer()).ok()?)?;
        self.bytes.get(start..end)
    }

    /// Runs `read`, which reads a block through the map. A read that took long enough to
    /// have waited on the device checks the file's residency at once: a page was evicted,
    /// or the thread was only held up (descheduled, a slow minor fault), and then the file
    /// stays on the map.
    pub fn timed<T>(&self, file: &dyn RandomAccessFile, read: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = read();
        if started.elapsed() > FAULTED_READ {
            self.check(file);
        }
        out
    }

    /// `part`, a slice of what `point_read` returned, as bytes that share the map (no copy).
    pub fn share(&self, part: &[u8]) -> Bytes {
        self.bytes.slice_ref(part)
    }

    /// Whether a lookup should ask the block cache before the map.
    pub fn cache_first(&self) -> bool {
        self.raw_lead.load(Relaxed) < 0 || !self.resident.load(Relaxed)
    }

    /// Records how a data block read through the map was stored. Relaxed and unlocked: a
    /// lost update only moves the lead by one less.
    pub fn saw_block(&self, compressed: bool) {
        let lead = self.raw_lead.load(Relaxed);
        let next = if compressed { lead - 1 } else { lead + 1 };
        if next.abs() <= CODEC_LEAD_LIMIT {
            self.raw_lead.store(next, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::error::Result;

    /// A mapped file whose page cache residency the test sets.
    struct File {
        bytes: Bytes,
        held: AtomicBool,
    }

    impl RandomAccessFile for File {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            let at = offset as usize;
            buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
            Ok(())
        }
        fn is_cached(&self, _offset: u64, _len: u64) -> Option<bool> {
            Some(self.held.load(Relaxed))
        }
        fn map_whole(&self) -> Option<Bytes> {
            Some(self.bytes.clone())
        }
        fn size(&self) -> u64 {
            self.bytes.len() as u64
        }
    }

    fn file(held: bool) -> File {
        File {
            bytes: Bytes::from(vec![7u8; 1 << 16]),
            held: AtomicBool::new(held),
        }
    }

    fn mapped(m: &MappedFile, f: &File) -> bool {
        m.note_read(f);
        m.point_read(BlockHandle::new(4096, 100)).is_some()
    }

    #[test]
    fn the_map_is_read_only_while_the_page_cache_holds_the_file() {
        let f = file(false);
        let m = MappedFile::open(&f).expect("map");
        assert!(!mapped(&m, &f), "a file not held was read through the map");
        assert!(m.cache_first());
        f.held.store(true, Relaxed);
        // The next check, within RECHECK_EVERY reads, finds it held.
        let reads = (0..RECHECK_EVERY).take_while(|_| !mapped(&m, &f)).count();
        assert!(reads < RECHECK_EVERY as usize, "never read through the map");
        assert!(mapped(&m, &f));
        f.held.store(false, Relaxed);
        let reads = (0..RECHECK_EVERY).take_while(|_| mapped(&m, &f)).count();
        assert!(
            reads < RECHECK_EVERY as usize,
            "an evicted file stayed mapped"
        );
    }

    #[test]
    fn a_slow_read_leaves_the_map_only_if_the_page_cache_lost_the_file() {
        let f = file(true);
        let m = MappedFile::open(&f).expect("map");
        assert!(mapped(&m, &f));
        // Slow, but every page still held (descheduled, say): the file stays on the map.
        m.timed(&f, || std::thread::sleep(FAULTED_READ * 4));
        assert!(
            mapped(&m, &f),
            "a slow read of a resident file left the map"
        );
        // Slow because a page was evicted and read back by the fault.
        f.held.store(false, Relaxed);
        m.timed(&f, || std::thread::sleep(FAULTED_READ * 4));
        assert!(
            !mapped(&m, &f),
            "a fault to the device kept the file mapped"
        );
        f.held.store(true, Relaxed);
        let reads = (0..RECHECK_EVERY).take_while(|_| !mapped(&m, &f)).count();
        assert!(reads < RECHECK_EVERY as usize, "the file never came back");
    }

    #[test]
    fn a_walk_times_its_first_read_and_one_in_every_walk_timed_every() {
        let mut w = WalkWatch::default();
        assert!(w.times(Step::Jump));
        let steps = (0..10 * WALK_TIMED_EVERY).map(|_| w.times(Step::Forward));
        let timed: Vec<usize> = steps.enumerate().filter(|s| s.1).map(|s| s.0).collect();
        assert_eq!(timed.len(), 10, "{timed:?}");
        assert!(timed
            .windows(2)
            .all(|p| p[1] - p[0] == WALK_TIMED_EVERY as usize));
        assert!(w.times(Step::Jump), "a seek's block was not timed");
        assert!(!w.times(Step::Backward));
    }

    #[test]
    fn lookups_go_where_most_of_the_files_blocks_are() {
        let f = file(true);
        let m = MappedFile::open(&f).expect("map");
        assert!(!m.cache_first());
        // A few compressed blocks among stored ones keep the map first.
        for i in 0..100 {
            m.saw_block(i % 10 == 0);
        }
        assert!(!m.cache_first());
        for _ in 0..(2 * CODEC_LEAD_LIMIT) {
            m.saw_block(true);
        }
        assert!(
            m.cache_first(),
            "a compressed file still reads the map first"
        );
        // The lead is bounded: as many stored blocks as the limit turn it back.
        for _ in 0..=CODEC_LEAD_LIMIT {
            m.saw_block(false);
        }
        assert!(!m.cache_first());
    }
}
