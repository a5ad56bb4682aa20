//! The operating system's file system.

// Unsafe code here: system calls std does not wrap (`fallocate`, `posix_fadvise`, `preadv2`,
// `cachestat`, `flock`, `sync_file_range`).
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use super::{CreateOutcome, FileLock, RandomAccessFile, Vfs, WritableFile};
use crate::error::{Error, Result};

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealVfs;

struct RealWritable {
    file: File,
    path: String,
    len: u64,
    /// The file system said it cannot reserve space (`EOPNOTSUPP`): appends just grow the
    /// file, and `preallocate` stops asking.
    no_fallocate: bool,
}

impl WritableFile for RealWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| Error::io(&self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
    fn start_writeback(&mut self, offset: u64, len: u64) -> Result<()> {
        start_writeback(&self.file, &self.path, offset, len)
    }
    fn preallocate(&mut self, len: u64) -> Result<()> {
        let Ok(len) = libc::off64_t::try_from(len) else {
            return Ok(());
        };
        if self.no_fallocate {
            return Ok(());
        }
        // Mode 0 (not FALLOC_FL_KEEP_SIZE): the size must change now, once, for the later
        // syncs not to change it (see the trait).
        // SAFETY: the descriptor is open for the life of `self.file`; the call only reads
        // its arguments.
        let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, 0, len) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                self.no_fallocate = true;
                return Ok(());
            }
            return Err(Error::io(&self.path, e));
        }
        Ok(())
    }
    fn trim(&mut self) -> Result<()> {
        self.file
            .set_len(self.len)
            .map_err(|e| Error::io(&self.path, e))
    }
    fn len(&self) -> u64 {
        self.len
    }
}

/// Asks the OS to start writing `len` bytes of `file` at `offset` to the disk, without
/// waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)`); see `WritableFile::start_writeback`.
pub(super) fn start_writeback(file: &File, path: &str, offset: u64, len: u64) -> Result<()> {
    let (Ok(offset), Ok(len)) = (
        libc::off64_t::try_from(offset),
        libc::off64_t::try_from(len),
    ) else {
        return Ok(());
    };
    // SAFETY: the descriptor is open for the life of `file`; the call only reads its
    // arguments.
    let rc = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
    if rc != 0 {
        return Err(Error::io(path, std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Point reads and scans go through different open file descriptions because the kernel
/// keeps one readahead state per description (`struct file`) and `posix_fadvise` sets it for
/// the whole description. Left at the default, random point reads trip the readahead
/// heuristics (a read just after cached pages looks like a sequential stream) and become
/// reads of up to `read_ahead_kb` (8 MiB on the benchmark VM) that the lookups behind them
/// wait for, which gives cold random reads a p99 of tens of milliseconds
/// (docs/design/cold-start-warm-up.md). So `file`, used by point
/// reads and short walks, is advised `POSIX_FADV_RANDOM` (RocksDB's `advise_random_on_open`),
/// and long scans get a second description that keeps the readahead, opened on their first
/// read so that files nobody scans hold one descriptor.
struct RealReadable {
    file: File,
    scan: OnceLock<File>,
    path: PathBuf,
    size: u64,
    direct: bool,
    /// `preadv2(RWF_NOWAIT)` was refused as unsupported: `read_cached_at` stops trying.
    no_nowait: AtomicBool,
    /// `cachestat` was refused (a kernel before 6.5): `is_cached` stops asking.
    no_cachestat: AtomicBool,
}

/// O_DIRECT needs offset, length and buffer aligned to the logical block size.
const DIRECT_ALIGN: u64 = 4096;

impl RealReadable {
    fn read_direct(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let start = offset / DIRECT_ALIGN * DIRECT_ALIGN;
        let end = (offset + buf.len() as u64).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        let len = (end - start) as usize;
        // Over-allocate and slice at an aligned address instead of a custom allocator.
        let mut raw = vec![0u8; len + DIRECT_ALIGN as usize];
        let shift = raw.as_ptr().align_offset(DIRECT_ALIGN as usize);
        let aligned = &mut raw[shift..shift + len];
        let mut done = 0usize;
        while done < len {
            let n = self
                .file
                .read_at(&mut aligned[done..], start + done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        let from = (offset - start) as usize;
        if done < from + buf.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "short read",
            ));
        }
        buf.copy_from_slice(&aligned[from..from + buf.len()]);
        Ok(())
    }

    /// The description scans read through, opened on first use. Two threads may both open
    /// one; the loser's is closed.
    fn scan_file(&self) -> std::io::Result<&File> {
        if let Some(f) = self.scan.get() {
            return Ok(f);
        }
        let f = File::open(&self.path)?;
        Ok(self.scan.get_or_init(|| f))
    }
}

impl RandomAccessFile for RealReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let r = if self.direct {
            self.read_direct(buf, offset)
        } else {
            self.file.read_exact_at(buf, offset)
        };
        r.map_err(|e| Error::io(&self.path, e))
    }
    fn read_exact_at_scan(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        if self.direct {
            // O_DIRECT bypasses the page cache: there is no readahead to ask for.
            return self.read_exact_at(buf, offset);
        }
        self.scan_file()
            .and_then(|f| f.read_exact_at(buf, offset))
            .map_err(|e| Error::io(&self.path, e))
    }
    fn will_need(&self, offset: u64, len: u64) -> bool {
        if self.direct {
            return false;
        }
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
        else {
            return false;
        };
        // SAFETY: posix_fadvise only reads its arguments; the descriptor is open while
        // `self` lives.
        let rc = unsafe {
            libc::posix_fadvise(
                self.file.as_raw_fd(),
                offset,
                len,
                libc::POSIX_FADV_WILLNEED,
            )
        };
        rc == 0
    }
    fn read_cached_at(&self, buf: &mut [u8], offset: u64) -> Result<bool> {
        // O_DIRECT reads never come from the page cache; with RWF_NOWAIT they would only
        // be asked not to block on locks.
        if self.direct || self.no_nowait.load(Relaxed) {
            return Ok(false);
        }
        let Ok(at) = libc::off_t::try_from(offset) else {
            return Ok(false);
        };
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        loop {
            // SAFETY: `iov` describes `buf`, which is valid for writes of its length for
            // the whole call, and the descriptor is open for the life of `self.file`.
            let n = unsafe { libc::preadv2(self.file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
            // One call only. A RWF_NOWAIT read that misses the page cache still starts the
            // read of the missing pages, and a short read means some were missing: asking
            // again would find them read by then and count a read that waited on the
            // device as cached.
            if n >= 0 {
                let n = n as usize;
                if n < buf.len() && offset + n as u64 >= self.size {
                    return Err(Error::io(
                        &self.path,
                        std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short read"),
                    ));
                }
                return Ok(n == buf.len());
            }
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                // Not cached: the caller's ordinary read waits for the device.
                Some(libc::EAGAIN) => Ok(false),
                // A kernel or file system without RWF_NOWAIT: stop asking.
                Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS) => {
                    self.no_nowait.store(true, Relaxed);
                    Ok(false)
                }
                Some(libc::EINTR) => continue,
                _ => Err(Error::io(&self.path, e)),
            };
        }
    }
    fn is_cached(&self, offset: u64, len: u64) -> Option<bool> {
        if self.direct || len == 0 || self.no_cachestat.load(Relaxed) {
            return None;
        }
        let pages = page_count(offset, len);
        match cached_pages(&self.file, offset, len) {
            Ok(cached) => Some(cached >= pages),
            Err(e) => {
                if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EOPNOTSUPP)) {
                    self.no_cachestat.store(true, Relaxed);
                }
                None
            }
        }
    }
    fn map_whole(&self) -> Option<bytes::Bytes> {
        if self.direct || self.size == 0 {
            return None;
        }
        let len = usize::try_from(self.size).ok()?;
        // SAFETY: the map is read-only and shared, and the engine maps only SSTs, which are
        // never written or truncated once written (the database's lock keeps other
        // processes from writing them). A failed map is no view: reads use `pread`.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(&self.file) }.ok()?;
        // A page the page cache no longer holds is read by a fault; without this advice the
        // kernel reads a window around it, as it would ahead of a `pread` on a descriptor
        // not advised random (see `RealReadable`). Only a hint: where refused, reads stay
        // correct.
        let _ = map.advise(memmap2::Advice::Random);
        Some(bytes::Bytes::from_owner(map))
    }
    fn size(&self) -> u64 {
        self.size
    }
}

/// `cachestat(2)`'s system call number, the same on every architecture (Linux 6.5 and later);
/// the `libc` crate names it for only a few targets.
const SYS_CACHESTAT: libc::c_long = 451;

/// `struct cachestat_range` of `<linux/mman.h>`.
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat` of `<linux/mman.h>`: page counts over the range.
#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Pages of the page cache holding `len` bytes at `offset` of `file`, counted by the kernel
/// without reading them (`cachestat`).
fn cached_pages(file: &File, offset: u64, len: u64) -> std::io::Result<u64> {
    let range = CachestatRange { off: offset, len };
    let mut stat = Cachestat::default();
    // SAFETY: the kernel reads `range` and writes `stat`, both live and of the layout the
    // call defines; the descriptor is open for the call.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0u32,
        )
    };
    if rc == 0 {
        Ok(stat.nr_cache)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Pages the `len` bytes at `offset` touch.
fn page_count(offset: u64, len: u64) -> u64 {
    let page = page_size();
    (offset + len).div_ceil(page) - offset / page
}

fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf only reads its argument.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
    })
}

/// Turns the kernel's readahead off for point reads through `file` (see [`RealReadable`]).
/// Only a hint: where it fails (a file system that rejects it) reads stay correct and only
/// the readahead remains, so the error is not worth failing an open for.
fn advise_random(file: &File) {
    // SAFETY: posix_fadvise only reads its arguments; the descriptor is open for the call.
    let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
}

/// Sets the calling thread's I/O priority to the idle class (`idle`), or back to the default
/// one its CPU priority gives. An I/O scheduler that honours priorities (mq-deadline, BFQ)
/// dispatches an idle thread's reads, buffered and readahead alike, only when no other request
/// is outstanding (mq-deadline still serves them within its `prio_aging_expire`). Returns
/// whether the kernel took it; under the `none` scheduler it changes nothing, and where it
/// fails the thread reads at its usual priority.
pub fn set_idle_io_priority_for_this_thread(idle: bool) -> bool {
    #[cfg(target_os = "linux")]
    {
        let class = if idle { IOPRIO_IDLE } else { IOPRIO_DEFAULT };
        // SAFETY: ioprio_set takes three integers and touches no memory of ours; `who` 0 with
        // IOPRIO_WHO_PROCESS is the calling thread.
        unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, class) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = idle;
        false
    }
}

/// The calling thread's I/O priority as `ioprio_get` gives it (tests check the class).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn this_thread_io_priority() -> libc::c_long {
    // SAFETY: ioprio_get takes two integers; `who` 0 is the calling thread.
    unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) }
}

/// `ioprio_set`'s target kind for one thread, the idle class's value (class 3 in the top
/// bits, `IOPRIO_CLASS_SHIFT` 13, level 0) and the "none" class that follows the CPU
/// priority, every thread's default, from linux/ioprio.h.
#[cfg(target_os = "linux")]
const IOPRIO_WHO_PROCESS: libc::c_int = 1;
#[cfg(target_os = "linux")]
const IOPRIO_IDLE: libc::c_int = 3 << 13;
#[cfg(target_os = "linux")]
const IOPRIO_DEFAULT: libc::c_int = 0;

struct RealLock {
    _file: File,
}
impl FileLock for RealLock {}

/// Writes `data` to a temporary name and syncs it, then publishes it with `link(2)`, which
/// fails with `EEXIST` instead of replacing an existing file: a no-clobber create that a
/// reader never sees half written. The directory sync makes the new name durable.
fn create_if_absent(path: &Path, data: &[u8]) -> Result<CreateOutcome> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    // `.tmp`: the name the engine treats as an unfinished write and removes at open.
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = parent.join(tmp_name);
    let written = (|| {
        let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(data).map_err(|e| Error::io(&tmp, e))?;
        f.sync_data().map_err(|e| Error::io(&tmp, e))
    })();
    let linked = written.and_then(|()| match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(CreateOutcome::Created),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(CreateOutcome::AlreadyExists),
        Err(e) => Err(Error::io(path, e)),
    });
    let _ = std::fs::remove_file(&tmp);
    let outcome = linked?;
    if outcome == CreateOutcome::Created {
        let dir = File::open(parent).map_err(|e| Error::io(parent, e))?;
        dir.sync_all().map_err(|e| Error::io(parent, e))?;
    }
    Ok(outcome)
}

impl Vfs for RealVfs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Box::new(RealWritable {
            file,
            path: path.display().to_string(),
            len: 0,
            no_fallocate: false,
        }))
    }

    fn create_mapped(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let name = path.display().to_string();
        Ok(
            match super::mapped::MappedWritable::new(file, name.clone())? {
                Ok(mapped) => Box::new(mapped),
                // No space reservation (tmpfs before 2.6.x, some FUSE file systems): without it
                // a mapped page past the file's end would fault, so this file is written.
                Err(file) => Box::new(RealWritable {
                    file,
                    path: name,
                    len: 0,
                    no_fallocate: true,
                }),
            },
        )
    }

    fn open_read(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        let mut oo = OpenOptions::new();
        oo.read(true);
        if direct {
            oo.custom_flags(libc::O_DIRECT);
        }
        let file = oo.open(path).map_err(|e| Error::io(path, e))?;
        if !direct {
            advise_random(&file);
        }
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        Ok(Arc::new(RealReadable {
            file,
            scan: OnceLock::new(),
            path: path.to_path_buf(),
            size,
            direct,
            no_nowait: AtomicBool::new(false),
            no_cachestat: AtomicBool::new(false),
        }))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        std::fs::read(path).map_err(|e| Error::io(path, e))
    }

    fn create_if_absent(&self, path: &Path, data: &[u8]) -> Result<CreateOutcome> {
        create_if_absent(path, data)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| Error::io(from, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::hard_link(from, to).map_err(|e| Error::io(to, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let f = File::open(dir).map_err(|e| Error::io(dir, e))?;
        f.sync_all().map_err(|e| Error::io(dir, e))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(path)
            .map_err(|e| Error::io(path, e))?
            .len())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        // SAFETY: flock on a valid, owned descriptor.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(Error::Locked(path.display().to_string()));
        }
        Ok(Box::new(RealLock { _file: file }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread that asks is the one whose class changes, to idle and back, and no other.
    #[cfg(target_os = "linux")]
    #[test]
    fn idle_io_priority_applies_to_the_calling_thread_only() {
        let get = this_thread_io_priority;
        let before = get();
        let in_thread = std::thread::spawn(move || {
            let idle = (set_idle_io_priority_for_this_thread(true), get());
            let back = (set_idle_io_priority_for_this_thread(false), get());
            (idle, back)
        })
        .join()
        .expect("thread");
        // Class 3 (idle) in bits 13 and up, level 0: as `ionice -c 3` sets it.
        let idle: libc::c_long = 3 << 13;
        assert_eq!(in_thread.0, (true, idle));
        assert_eq!(in_thread.1, (true, before), "back to the default class");
        assert_eq!(get(), before);
        assert_ne!(before, idle);
    }

    /// `start_writeback` is a real `sync_file_range` on the file (a wrong flag or
    /// descriptor would fail with EINVAL/EBADF) and leaves the bytes as written.
    #[test]
    fn writeback_hint_on_a_real_file_keeps_its_bytes() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let p = dir.path().join("f");
        let vfs = RealVfs;
        let mut f = vfs.create(&p)?;
        let data: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
        f.append(&data[..1 << 20])?;
        f.start_writeback(0, 1 << 20)?;
        f.append(&data[1 << 20..])?;
        f.start_writeback(1 << 20, 2 << 20)?;
        // Past the end of the file is no error either: the kernel clamps the range.
        f.start_writeback(3 << 20, 1 << 20)?;
        f.sync()?;
        drop(f);
        assert_eq!(vfs.read_all(&p)?, data);
        Ok(())
    }

    /// `read_cached_at` serves bytes the page cache holds (a file just written) exactly as
    /// `read_exact_at` does, says "not cached" rather than failing when they are not, and
    /// reports a read past the end as an error, never as "not cached".
    #[test]
    fn cached_reads_return_the_bytes_or_say_not_cached() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 253) as u8).collect();
        let p = synced_file(dir.path(), &data)?;
        let vfs = RealVfs;
        let r = vfs.open_read(&p, false)?;
        let mut buf = vec![0u8; 10_000];
        if r.read_cached_at(&mut buf, 123_456)? {
            assert_eq!(buf, data[123_456..133_456]);
        } else {
            eprintln!("this file system serves no RWF_NOWAIT reads: only the errors are checked");
        }
        // Evicted (clean pages): either "not cached", or the right bytes where the file
        // system keeps them anyway.
        evict(&p)?;
        let mut buf = vec![0u8; 4096];
        if r.read_cached_at(&mut buf, 8192)? {
            assert_eq!(buf, data[8192..12288]);
        }
        let mut buf = vec![0u8; 4096];
        r.read_exact_at(&mut buf, 8192)?;
        assert_eq!(buf, data[8192..12288]);
        // Past the end of a file whose last page is cached: an error, not "not cached".
        let mut last = vec![0u8; 50];
        r.read_exact_at(&mut last, (1 << 20) - 50)?;
        let mut tail = vec![0u8; 100];
        if r.read_cached_at(&mut last, (1 << 20) - 50)? {
            assert!(r.read_cached_at(&mut tail, (1 << 20) - 50).is_err());
        }
        assert!(r.read_exact_at(&mut tail, (1 << 20) - 50).is_err());
        // A hint to read a range ahead is taken and changes nothing read; one past the end
        // is harmless.
        assert!(r.will_need(0, 1 << 20));
        r.will_need(1 << 30, 4096);
        let mut buf = vec![0u8; 4096];
        r.read_exact_at(&mut buf, 8192)?;
        assert_eq!(buf, data[8192..12288]);
        // Direct reads never come from the page cache, and take no hints.
        let d = vfs.open_read(&p, true);
        if let Ok(d) = d {
            assert!(!d.read_cached_at(&mut buf, 0)?);
            assert!(!d.will_need(0, 4096));
        }
        Ok(())
    }

    /// A file `f` in `dir` holding `data`, synced (its pages clean, so they can be evicted).
    fn synced_file(dir: &Path, data: &[u8]) -> Result<PathBuf> {
        let p = dir.join("f");
        let mut f = RealVfs.create(&p)?;
        f.append(data)?;
        f.sync()?;
        Ok(p)
    }

    /// Asks the kernel to drop the file's clean pages from the page cache.
    fn evict(p: &Path) -> Result<()> {
        let file = File::open(p).map_err(|e| Error::io(p, e))?;
        // SAFETY: posix_fadvise only reads its arguments; the descriptor is open.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        Ok(())
    }

    /// `is_cached` sees pages a read brought in and pages evicted, where the kernel has
    /// `cachestat` (6.5 and later); elsewhere it says it cannot tell.
    #[test]
    fn is_cached_follows_the_page_cache() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let p = synced_file(dir.path(), &vec![5u8; 1 << 20])?;
        let vfs = RealVfs;
        let r = vfs.open_read(&p, false)?;
        evict(&p)?;
        let Some(evicted) = r.is_cached(0, 1 << 20) else {
            eprintln!("this kernel has no cachestat: nothing to check");
            return Ok(());
        };
        if evicted {
            eprintln!("this file system keeps its pages in memory: nothing to check");
            return Ok(());
        }
        let mut buf = vec![0u8; 8192];
        r.read_exact_at(&mut buf, 4096)?;
        assert_eq!(r.is_cached(4096, 8192), Some(true));
        assert_eq!(
            r.is_cached(4100, 100),
            Some(true),
            "a range inside a cached page"
        );
        assert_eq!(
            r.is_cached(0, 8192),
            Some(false),
            "the first page was not read"
        );
        assert_eq!(
            r.is_cached(4096, 8193),
            Some(false),
            "one byte into an uncached page"
        );
        assert_eq!(
            vfs.open_read(&p, true).ok().and_then(|d| d.is_cached(0, 1)),
            None
        );
        Ok(())
    }

    /// `preallocate` grows the file with zeros without moving the append position, and
    /// `trim` cuts it back to what was appended.
    #[test]
    fn reserved_space_reads_as_zeros_until_trimmed() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let p = dir.path().join("f");
        let vfs = RealVfs;
        let mut f = vfs.create(&p)?;
        f.append(b"head")?;
        f.preallocate(1 << 16)?;
        f.append(b"-tail")?;
        f.sync()?;
        assert_eq!(f.len(), 9);
        let bytes = vfs.read_all(&p)?;
        assert_eq!(
            bytes.len(),
            1 << 16,
            "space reserved (tmpfs and ext4 both can)"
        );
        assert_eq!(&bytes[..9], b"head-tail");
        assert!(bytes[9..].iter().all(|&b| b == 0));
        // Reserving less than the file holds changes nothing.
        f.preallocate(4)?;
        assert_eq!(vfs.file_size(&p)?, 1 << 16);
        f.trim()?;
        f.sync()?;
        assert_eq!(vfs.read_all(&p)?, b"head-tail");
        Ok(())
    }
}
