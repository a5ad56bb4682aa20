//! What Linux tells about this process (`/proc/self/io`, `/proc/self/status`), the page
//! cache, the block device under a path (`/sys/dev/block/*/stat`: bytes written, whether it
//! is idle), and the size of a directory tree.

// Unsafe code here: `sync(2)` and `geteuid(2)` through libc.
#![allow(unsafe_code)]

use std::path::Path;

use crate::error::{BenchError, Result};

/// Process-wide (all threads) I/O counters from `/proc/self/io`.
#[derive(Debug, Clone, Copy, Default)]
pub struct IoCounters {
    /// Read-type system calls (`read`, `pread64`, ...), page cache hits included.
    pub syscr: u64,
    /// Bytes the process caused to be fetched from the block device.
    pub read_bytes: u64,
    /// Bytes the process caused to be sent to the block device (counted when pages are
    /// dirtied, so a write that is still in the page cache counts).
    pub write_bytes: u64,
    /// Of `write_bytes`, dirty pages that never reached the device because their file was
    /// truncated or deleted first.
    pub cancelled_write_bytes: u64,
}

impl IoCounters {
    /// Bytes written to the device between `self` and `later`.
    pub fn device_bytes_written_until(&self, later: &IoCounters) -> u64 {
        let written = later.write_bytes.saturating_sub(self.write_bytes);
        let cancelled = later
            .cancelled_write_bytes
            .saturating_sub(self.cancelled_write_bytes);
        written.saturating_sub(cancelled)
    }
}

pub fn io_counters() -> Option<IoCounters> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    Some(IoCounters {
        syscr: field(&text, "syscr:")?,
        read_bytes: field(&text, "read_bytes:")?,
        write_bytes: field(&text, "write_bytes:")?,
        cancelled_write_bytes: field(&text, "cancelled_write_bytes:")?,
    })
}

fn field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.trim();
        let num = rest.split_whitespace().next()?;
        num.parse().ok()
    })
}

/// Bytes written to the block device that holds `path` since boot: the sectors-written
/// field of its `/sys/dev/block/MAJ:MIN/stat` (the kernel counts 512-byte sectors there
/// whatever the device's own sector size). Unlike `/proc/self/io`, which counts a mapped
/// page as written when it is dirtied, this counts only what reached the device, from every
/// process. `None` when `path` is not on a block device (tmpfs, overlay, a network file
/// system) or the counters cannot be read.
pub fn device_bytes_written(path: &Path) -> Option<u64> {
    let stat = device_stat_path(path)?;
    sectors_written(&std::fs::read_to_string(stat).ok()?).map(|s| s.saturating_mul(512))
}

/// The seventh field of a block device's `stat` file (docs: Documentation/block/stat.rst).
fn sectors_written(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(6)?.parse().ok()
}

/// The `stat` file of the block device that holds `path`.
fn device_stat_path(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    Some(format!(
        "/sys/dev/block/{}:{}/stat",
        libc::major(dev),
        libc::minor(dev)
    ))
}

/// Milliseconds the device has spent with I/O in flight since boot (`io_ticks`, the tenth
/// field of its `stat` file).
fn io_ticks_ms(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(9)?.parse().ok()
}

/// How long `wait_for_quiet_device` waited, and whether the device went quiet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuietWait {
    pub waited: std::time::Duration,
    pub quiet: bool,
}

impl QuietWait {
    /// "idle for 5 s after 12 s", or "still busy after 300 s", for a wait for `quiet`.
    pub fn describe(&self, quiet: std::time::Duration) -> String {
        let waited = self.waited.as_secs_f64();
        if self.quiet {
            format!("idle for {:.0} s after {waited:.0} s", quiet.as_secs_f64())
        } else {
            format!("still busy after {waited:.0} s")
        }
    }
}

/// Share of wall time the device may be busy and still count as idle: a journal
/// commit or a log line may touch it, a discard or a writeback keeps it busy.
const IDLE_BUSY_SHARE: f64 = 0.02;

/// `sync(2)`, then waits until the device that holds `path` has been idle for `quiet`
/// (busy less than 2 % of each half second by its `io_ticks`), at most `timeout`. A file system
/// mounted with `discard` trims a deleted file's blocks after the delete returns, and the
/// dirty pages of a large write reach the device after the writer is gone: a measurement
/// that starts then shares the device with them. `None` when `path` is not on a block device
/// whose counters can be read.
pub fn wait_for_quiet_device(
    path: &Path,
    quiet: std::time::Duration,
    timeout: std::time::Duration,
) -> Option<QuietWait> {
    use std::time::{Duration, Instant};
    let stat = device_stat_path(path)?;
    let ticks = || io_ticks_ms(&std::fs::read_to_string(&stat).ok()?);
    sync_all();
    let start = Instant::now();
    let step = Duration::from_millis(500);
    let idle_ms = (step.as_secs_f64() * 1000.0 * IDLE_BUSY_SHARE).ceil() as u64;
    let mut last = ticks()?;
    let mut idle_since = Instant::now();
    loop {
        if idle_since.elapsed() >= quiet {
            return Some(QuietWait {
                waited: start.elapsed(),
                quiet: true,
            });
        }
        if start.elapsed() >= timeout {
            return Some(QuietWait {
                waited: start.elapsed(),
                quiet: false,
            });
        }
        std::thread::sleep(step);
        let now = ticks()?;
        if now.saturating_sub(last) > idle_ms {
            idle_since = Instant::now();
        }
        last = now;
    }
}

/// `sync(2)`: every dirty page of every file system is on its device when it returns.
pub fn sync_all() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// The machine's RAM (`MemTotal` of `/proc/meminfo`) in bytes.
pub fn mem_total_bytes() -> Option<u64> {
    parse_mem_total(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_mem_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Peak resident set size (`VmHWM`) in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    field(&text, "VmHWM:").map(|kb| kb * 1024)
}

/// Resets `VmHWM` to the current RSS (Linux ≥ 4.0), so the next reading is the peak of
/// what follows. Returns whether that worked.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `sync(2)`, then drops the page cache, dentries and inodes (needs root).
pub fn drop_page_cache() -> std::io::Result<()> {
    sync_all();
    std::fs::write("/proc/sys/vm/drop_caches", "3")
}

/// Whether this process may drop the page cache: root, and a test drop works (which also
/// drops it once). `Err` says why not.
pub fn can_drop_caches() -> std::result::Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    drop_page_cache().map_err(|e| format!("/proc/sys/vm/drop_caches: {e}"))
}

/// Bytes of all regular files under `dir` (0 if it does not exist).
pub fn dir_size(dir: &Path) -> Result<u64> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(BenchError::io(dir, e)),
    };
    let mut total = 0;
    for entry in entries {
        let entry = entry.map_err(|e| BenchError::io(dir, e))?;
        let path = entry.path();
        let meta = match entry.metadata() {
            Ok(m) => m,
            // Removed under us (a compaction deleting an input): not part of the size.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(BenchError::io(&path, e)),
        };
        if meta.is_dir() {
            total += dir_size(&path)?;
        } else if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}

/// Removes `dir` and everything in it; fine if it is not there.
pub fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BenchError::io(dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_counters() {
        let io = io_counters().expect("/proc/self/io");
        let _ = std::fs::read("/proc/self/status").unwrap();
        assert!(io_counters().unwrap().syscr > io.syscr);
        assert!(peak_rss_bytes().unwrap() > 0);
    }

    #[test]
    fn reads_a_block_devices_sectors_written() {
        // Documentation/block/stat.rst: reads, merges, sectors, ticks, then the writes'.
        let line = "   22150     6171  1398482    10213   380044   140519  7612144   404567 0 0 0";
        assert_eq!(sectors_written(line), Some(7_612_144));
        assert_eq!(sectors_written("1 2 3"), None);
        assert_eq!(io_ticks_ms(line), Some(0));
        let busy = "1 2 3 4 5 6 7 8 0 2392748 24224590 536871 48 3050682784 162331";
        assert_eq!(io_ticks_ms(busy), Some(2_392_748));
        assert_eq!(io_ticks_ms("1 2 3"), None);
    }

    #[test]
    fn waits_for_the_device_and_gives_up_at_the_timeout() {
        use std::time::Duration;
        let d = tempfile::tempdir().unwrap();
        let Some(w) =
            wait_for_quiet_device(d.path(), Duration::from_millis(600), Duration::from_secs(5))
        else {
            return; // not on a block device here (tmpfs): nothing to wait for
        };
        assert!(w.waited >= Duration::from_millis(500), "{w:?}");
        // A timeout shorter than the quiet period ends the wait unquiet.
        let w = wait_for_quiet_device(d.path(), Duration::from_secs(60), Duration::from_secs(1))
            .unwrap();
        assert!(!w.quiet && w.waited >= Duration::from_secs(1), "{w:?}");
        assert!(w.waited < Duration::from_secs(3), "{w:?}");
        assert!(w
            .describe(Duration::from_secs(60))
            .starts_with("still busy after "));
        let done = QuietWait {
            waited: Duration::from_secs(12),
            quiet: true,
        };
        assert_eq!(
            done.describe(Duration::from_secs(5)),
            "idle for 5 s after 12 s"
        );
    }

    #[test]
    fn sums_a_tree() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), [0u8; 100]).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/b"), [0u8; 23]).unwrap();
        assert_eq!(dir_size(d.path()).unwrap(), 123);
        assert_eq!(dir_size(&d.path().join("missing")).unwrap(), 0);
        remove_dir(&d.path().join("sub")).unwrap();
        assert_eq!(dir_size(d.path()).unwrap(), 100);
    }

    #[test]
    fn parses_fields() {
        let t = "rchar: 10\nsyscr: 5\nread_bytes: 4096\n";
        assert_eq!(field(t, "syscr:"), Some(5));
        assert_eq!(field(t, "read_bytes:"), Some(4096));
        assert_eq!(field("VmHWM:\t  1234 kB\n", "VmHWM:"), Some(1234));
        assert_eq!(
            parse_mem_total("MemTotal:       24568036 kB\nMemFree: 1 kB\n"),
            Some(24568036 * 1024)
        );
        assert_eq!(parse_mem_total("MemTotal: lots\n"), None);
        let t = "write_bytes: 8192\ncancelled_write_bytes: 4096\n";
        assert_eq!(field(t, "write_bytes:"), Some(8192));
        assert_eq!(field(t, "cancelled_write_bytes:"), Some(4096));
    }

    #[test]
    fn device_writes_leave_out_cancelled_pages() {
        let at = |write_bytes, cancelled_write_bytes| IoCounters {
            write_bytes,
            cancelled_write_bytes,
            ..IoCounters::default()
        };
        assert_eq!(at(100, 10).device_bytes_written_until(&at(1100, 60)), 950);
        assert_eq!(at(100, 10).device_bytes_written_until(&at(100, 10)), 0);
    }
}
