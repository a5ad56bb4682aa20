//! A file appended to through a shared memory map: an append is a copy into the page cache,
//! with no system call. The WAL of a database that writes with `Durability::Flush` uses it,
//! because there every put hands its record to the OS on its own, and a `write(2)` per put
//! was most of the writer's time (docs/design/mapped-wal.md).
//!
//! The file is mapped one window at a time. Before a window is mapped, the file's space is
//! reserved up to the window's end (`fallocate`), so the file reads as zeros past the last
//! append (the WAL reader's unwritten tail, docs/format/wal.md) and a page is never touched
//! beyond the file's end: that would raise `SIGBUS`, as would another process truncating
//! the file (the database's lock keeps other writers out). A full disk fails the
//! `fallocate`, an error like a failed `write`, instead of a fault at the copy.

// Unsafe code here: `mmap`, `munmap` and copies into the mapped window.
#![allow(unsafe_code)]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use super::WritableFile;
use crate::error::{Error, Result};

/// Bytes mapped at a time, and the step in which the file's space is reserved.
pub(super) const WINDOW: u64 = 4 << 20;

/// An append at least this long is written into the reserved space with `pwrite` instead of
/// copied through the map. It covers whole pages, and each page a copy reaches first is a
/// page fault (a fresh page-cache page, zeroed, then written over), which costs more than
/// the one system call: loading 1000-record batches (~130 KB each) through the map ran at
/// 0.65x the rate of written WALs (docs/design/mapped-wal.md, "Large records").
const WRITE_MIN_BYTES: usize = 16 << 10;

pub(super) struct MappedWritable {
    file: File,
    path: String,
    /// Bytes appended.
    len: u64,
    /// The file's space is reserved (and its size set) up to here.
    reserved: u64,
    /// The mapped window: `WINDOW` bytes of the file from `window_start`, or none yet.
    window: Option<Window>,
}

struct Window {
    ptr: *mut u8,
    start: u64,
}

// SAFETY: the window's address range is owned by this value alone and used only through
// `&mut self`; moving it to another thread moves that ownership.
unsafe impl Send for MappedWritable {}

impl MappedWritable {
    /// Wraps `file`, freshly created and empty, reserving its first window. Returns the
    /// file back when its file system cannot reserve space (then appends must grow it with
    /// `write(2)`).
    pub(super) fn new(file: File, path: String) -> Result<std::result::Result<Self, File>> {
        if !reserve(&file, &path, WINDOW)? {
            return Ok(Err(file));
        }
        Ok(Ok(MappedWritable {
            file,
            path,
            len: 0,
            reserved: WINDOW,
            window: None,
        }))
    }

    /// The mapped window holding offset `at`, mapping it (and reserving its space) first
    /// if another one is mapped.
    fn window_at(&mut self, at: u64) -> Result<*mut u8> {
        let start = at / WINDOW * WINDOW;
        if let Some(w) = &self.window {
            if w.start == start {
                return Ok(w.ptr);
            }
        }
        self.unmap();
        self.reserve_through(start + WINDOW)?;
        let Ok(offset) = libc::off_t::try_from(start) else {
            return Err(Error::io(
                &self.path,
                std::io::Error::other("file too large"),
            ));
        };
        // SAFETY: a new shared mapping of `WINDOW` bytes of our own descriptor, inside the
        // file's reserved size (above); nothing else refers to that address range.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                WINDOW as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.file.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::io(&self.path, std::io::Error::last_os_error()));
        }
        let ptr = ptr.cast::<u8>();
        self.window = Some(Window { ptr, start });
        Ok(ptr)
    }

    /// Appends `data` with `pwrite` into the reserved space (reserving more, whole windows,
    /// first). The mapped window, if any, shares the page cache's pages, so copies through
    /// it and these writes see each other.
    fn write_at_end(&mut self, data: &[u8]) -> Result<()> {
        let end = self.len + data.len() as u64;
        self.reserve_through(end.div_ceil(WINDOW) * WINDOW)?;
        self.file
            .write_all_at(data, self.len)
            .map_err(|e| Error::io(&self.path, e))?;
        self.len = end;
        Ok(())
    }

    /// Reserves the file's space up to `end` (a window boundary) unless it already is.
    fn reserve_through(&mut self, end: u64) -> Result<()> {
        if self.reserved >= end {
            return Ok(());
        }
        if !reserve(&self.file, &self.path, end)? {
            return Err(Error::io(
                &self.path,
                std::io::Error::other("the file system stopped reserving space"),
            ));
        }
        self.reserved = end;
        Ok(())
    }

    fn unmap(&mut self) {
        if let Some(w) = self.window.take() {
            // SAFETY: `w` was mapped by `window_at` with this length and is unmapped once.
            // A failure leaves the mapping in place, which only holds address space.
            unsafe { libc::munmap(w.ptr.cast(), WINDOW as usize) };
        }
    }
}

/// Reserves `file`'s space up to `end` (mode 0: its size becomes `end` too). `false`: the
/// file system cannot.
fn reserve(file: &File, path: &str, end: u64) -> Result<bool> {
    let Ok(len) = libc::off64_t::try_from(end) else {
        return Err(Error::io(path, std::io::Error::other("file too large")));
    };
    // SAFETY: the descriptor is open for the life of `file`; the call only reads its
    // arguments.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return Ok(false);
    }
    Err(Error::io(path, e))
}

impl WritableFile for MappedWritable {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        if data.len() >= WRITE_MIN_BYTES {
            return self.write_at_end(data);
        }
        while !data.is_empty() {
            let base = self.window_at(self.len)?;
            let at = (self.len % WINDOW) as usize;
            let n = data.len().min(WINDOW as usize - at);
            // SAFETY: `base` maps `WINDOW` bytes and `at + n <= WINDOW`; the source is a
            // slice of other memory.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), base.add(at), n) };
            self.len += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    /// `fdatasync` writes the pages dirtied through the map too: Linux marks a shared
    /// mapping's page dirty in the page cache on its first write after each writeback.
    fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }

    fn start_writeback(&mut self, offset: u64, len: u64) -> Result<()> {
        super::real::start_writeback(&self.file, &self.path, offset, len)
    }

    /// Space is already reserved a window at a time.
    fn preallocate(&mut self, _len: u64) -> Result<()> {
        Ok(())
    }

    fn trim(&mut self) -> Result<()> {
        // The window must not outlive the pages it maps; a later append maps it again.
        self.unmap();
        self.file
            .set_len(self.len)
            .map_err(|e| Error::io(&self.path, e))?;
        self.reserved = self.len;
        Ok(())
    }

    fn reserves_ahead(&self) -> bool {
        self.reserved > self.len
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for MappedWritable {
    fn drop(&mut self) {
        self.unmap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{RealVfs, Vfs};

    /// A large append is written, not copied through the map, and reads back in order
    /// between copies through the map, inside a mapped page and across a window's end.
    #[test]
    fn large_appends_are_written_beside_copies_through_the_map() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = dir.path().join("000001.wal");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let Ok(mut f) = MappedWritable::new(file, path.display().to_string())? else {
            return Ok(()); // a file system that cannot reserve space gets a written WAL
        };
        let large = |n: usize, seed: u8| -> Vec<u8> {
            (0..n).map(|j| (j as u8).wrapping_mul(31) ^ seed).collect()
        };
        let mut expected = Vec::new();
        let first = large(WRITE_MIN_BYTES, 1);
        f.append(&first)?;
        expected.extend_from_slice(&first);
        assert!(f.window.is_none(), "written, nothing mapped");
        f.append(b"small record")?;
        expected.extend_from_slice(b"small record");
        assert!(
            f.window.is_some(),
            "a small record is copied through the map"
        );
        // Starts inside the mapped page the small record ended in and ends past the window.
        let across = large(WINDOW as usize, 2);
        f.append(&across)?;
        expected.extend_from_slice(&across);
        f.append(b"tail")?;
        expected.extend_from_slice(b"tail");
        assert_eq!(f.len(), expected.len() as u64);
        assert_eq!(f.reserved, 2 * WINDOW, "reserved in whole windows");
        let on_disk = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        assert_eq!(&on_disk[..expected.len()], &expected[..]);
        assert!(on_disk[expected.len()..].iter().all(|&b| b == 0));
        Ok(())
    }

    /// Appends of every size, across window boundaries, read back as appended; the file
    /// ends in reserved zeros until `trim`, and appends after a `trim` work.
    #[test]
    fn appends_cross_windows_and_trim_cuts_the_reserved_zeros() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = dir.path().join("000001.wal");
        let mut f = RealVfs.create_mapped(&path)?;
        let mut expected = Vec::new();
        let mut i = 0u32;
        while (expected.len() as u64) < 2 * WINDOW + 12_345 {
            let chunk: Vec<u8> = (0..(i * 7919) % 70_001)
                .map(|j| (j as u8) ^ (i as u8) | 1)
                .collect();
            f.append(&chunk)?;
            expected.extend_from_slice(&chunk);
            i += 1;
        }
        assert_eq!(f.len(), expected.len() as u64);
        assert!(f.reserves_ahead());
        let on_disk = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        assert_eq!(
            on_disk.len() as u64,
            3 * WINDOW,
            "reserved to the window's end"
        );
        assert_eq!(&on_disk[..expected.len()], &expected[..]);
        assert!(on_disk[expected.len()..].iter().all(|&b| b == 0));

        f.sync()?;
        f.trim()?;
        assert!(!f.reserves_ahead());
        let on_disk = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        assert_eq!(on_disk, expected);

        f.append(b"after the trim")?;
        expected.extend_from_slice(b"after the trim");
        assert!(f.reserves_ahead());
        f.trim()?;
        drop(f);
        let on_disk = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        assert_eq!(on_disk, expected);
        Ok(())
    }
}
