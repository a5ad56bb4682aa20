//! When a point read asks the page cache first (`RandomAccessFile::read_cached_at`).
//!
//! The probe is free when the page cache holds the bytes (it is the read), but when it does
//! not, the read makes a second system call. On a cold file read hard (~100 K reads/s on two
//! cores) that is CPU the lookups need. So after a probe misses,
//! the file's next reads skip it, twice as many after each further miss, up to
//! `MAX_SKIPPED_READS`; one hit starts probing every read again. Reads that skip the probe
//! are counted as reads that waited: at most `MAX_SKIPPED_READS` of them per file after it
//! became cached, which can make one or two `multi_get` batches go parallel for nothing.
//! The measurements: docs/design/page-cache-probe.md.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// The most point reads of a file that skip the probe in a row.
pub const MAX_SKIPPED_READS: u32 = 64;

/// One file's probe schedule. Relaxed atomics: a race only probes once more or less.
#[derive(Debug, Default)]
pub struct ProbeBackoff {
    /// Reads left to skip the probe.
    skip: AtomicU32,
    /// How many the last miss made skip (0 after a hit).
    gap: AtomicU32,
}

impl ProbeBackoff {
    /// Whether this read should ask the page cache first.
    pub fn should_probe(&self) -> bool {
        let left = self.skip.load(Relaxed);
        if left == 0 {
            return true;
        }
        self.skip.store(left - 1, Relaxed);
        false
    }

    /// Records what the probe found.
    pub fn probed(&self, cached: bool) {
        if cached {
            self.gap.store(0, Relaxed);
            return;
        }
        let gap = (self.gap.load(Relaxed) * 2).clamp(1, MAX_SKIPPED_READS);
        self.gap.store(gap, Relaxed);
        self.skip.store(gap, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probes made over `reads` reads, each probe answered by `cached`.
    fn probes(b: &ProbeBackoff, reads: usize, cached: bool) -> usize {
        let mut n = 0;
        for _ in 0..reads {
            if b.should_probe() {
                n += 1;
                b.probed(cached);
            }
        }
        n
    }

    #[test]
    fn misses_back_off_and_one_hit_probes_every_read_again() {
        let b = ProbeBackoff::default();
        // Misses: probes at reads 1, 3, 6, 11, 20, 37, 70 (gaps 1, 2, 4, ... 64), then every 65.
        assert_eq!(probes(&b, 70, false), 7);
        assert_eq!(probes(&b, 650, false), 10);
        // The file became cached: within 64 reads a probe finds it, then every read probes.
        let found = probes(&b, 65, true);
        assert_eq!(found, 1);
        assert_eq!(probes(&b, 100, true), 100);
        // A miss again starts over at a gap of one.
        b.probed(false);
        assert!(!b.should_probe());
        assert!(b.should_probe());
    }
}
