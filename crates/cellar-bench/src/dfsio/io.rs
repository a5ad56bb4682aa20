//! One TestDFSIO task: write a file of `size` bytes in `buffer`-sized appends, or read it
//! back sequentially and check every byte.
//!
//! Content (why it is incompressible and not dedupable): a random pattern of one buffer is
//! drawn once per run from a seeded RNG; every 4 KiB block of every file is that pattern's
//! bytes at the same offset with its first 16 bytes replaced by a stamp, the file's number
//! and the block's offset in the file (two u64, little-endian). Random bytes do not
//! compress, and no two 4 KiB blocks of the run are equal, so neither compression nor block
//! deduplication below the file system can shrink the work. (TestDFSIO writes a buffer of
//! one repeated character, which is what made SeaweedFS's figures meaningless in its TestDFSIO run.)
//!
//! Both tasks go through the engine's `Vfs` (`create` + `append` + `sync`, `open_read` +
//! `read_exact_at`) or, for the `posix` baseline, through `std::fs` directly. A write task
//! ends with `sync` (fdatasync): its time includes making the file durable.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cellar_engine::vfs::{RandomAccessFile, RealVfs, Vfs, WritableFile};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

use crate::error::{BenchError, Result};
use crate::measure::Latency;

pub const BLOCK: usize = 4096;
const STAMP: usize = 16;

/// Which file layer a task goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// `cellar_engine::vfs::RealVfs`, the engine's own I/O path.
    CellarVfs,
    /// `std::fs::File` with `write_all`, `sync_data` and `read_exact_at`: what the Vfs
    /// should cost nothing over.
    Posix,
}

impl Layer {
    pub fn from_name(name: &str) -> Option<Layer> {
        match name {
            "cellar" => Some(Layer::CellarVfs),
            "posix" => Some(Layer::Posix),
            _ => None,
        }
    }
}

/// The run's random pattern, one buffer long (a multiple of [`BLOCK`] bytes or not).
pub struct Pattern {
    bytes: Vec<u8>,
}

impl Pattern {
    pub fn new(buffer_bytes: usize, seed: u64) -> Pattern {
        let mut bytes = vec![0u8; buffer_bytes];
        StdRng::seed_from_u64(seed).fill_bytes(&mut bytes);
        Pattern { bytes }
    }

    /// The content of file `file` at `offset` (a multiple of the buffer size), `out.len()`
    /// bytes: the pattern with every 4 KiB block stamped.
    pub fn fill(&self, file: u64, offset: u64, out: &mut [u8]) {
        out.copy_from_slice(&self.bytes[..out.len()]);
        for (i, block) in out.chunks_mut(BLOCK).enumerate() {
            let n = block.len().min(STAMP);
            block[..n].copy_from_slice(&stamp(file, offset + (i * BLOCK) as u64)[..n]);
        }
    }

    /// Whether `got`, read at `offset` of file `file`, is what [`Pattern::fill`] wrote:
    /// each block's stamp, then its pattern bytes (compared in place, no copy).
    pub fn check(&self, file: u64, offset: u64, got: &[u8]) -> bool {
        got.chunks(BLOCK).enumerate().all(|(i, block)| {
            let start = i * BLOCK;
            let n = block.len().min(STAMP);
            block[..n] == stamp(file, offset + start as u64)[..n]
                && block[n..] == self.bytes[start + n..start + block.len()]
        })
    }
}

fn stamp(file: u64, offset: u64) -> [u8; STAMP] {
    let mut s = [0u8; STAMP];
    s[..8].copy_from_slice(&file.to_le_bytes());
    s[8..].copy_from_slice(&offset.to_le_bytes());
    s
}

/// What one task measured.
#[derive(Default)]
pub struct TaskOut {
    pub bytes: u64,
    /// Wall time of the task, less the content check of reads (not part of TestDFSIO's read).
    pub seconds: f64,
    /// One sample per buffer-sized write or read call.
    pub calls: Latency,
    /// Writes: the final fdatasync.
    pub sync_seconds: f64,
    /// Reads: time spent checking the content (left out of `seconds`).
    pub verify_seconds: f64,
    /// Reads: bytes whose content was checked.
    pub verified_bytes: u64,
}

fn vfs_err(path: &Path, e: cellar_engine::Error) -> BenchError {
    BenchError::io(path, std::io::Error::other(e.to_string()))
}

/// A file being written, through either layer.
enum Writer {
    Vfs(Box<dyn WritableFile>),
    Posix(File),
}

impl Writer {
    fn create(layer: Layer, path: &Path) -> Result<Writer> {
        Ok(match layer {
            Layer::CellarVfs => Writer::Vfs(RealVfs.create(path).map_err(|e| vfs_err(path, e))?),
            Layer::Posix => Writer::Posix(File::create(path).map_err(|e| BenchError::io(path, e))?),
        })
    }

    fn append(&mut self, path: &Path, data: &[u8]) -> Result<()> {
        match self {
            Writer::Vfs(f) => f.append(data).map_err(|e| vfs_err(path, e)),
            Writer::Posix(f) => f.write_all(data).map_err(|e| BenchError::io(path, e)),
        }
    }

    fn sync(&mut self, path: &Path) -> Result<()> {
        match self {
            Writer::Vfs(f) => f.sync().map_err(|e| vfs_err(path, e)),
            Writer::Posix(f) => f.sync_data().map_err(|e| BenchError::io(path, e)),
        }
    }
}

/// A file being read, through either layer.
enum Reader {
    Vfs(Arc<dyn RandomAccessFile>),
    Posix(File),
}

impl Reader {
    fn open(layer: Layer, path: &Path) -> Result<(Reader, u64)> {
        Ok(match layer {
            Layer::CellarVfs => {
                let f = RealVfs
                    .open_read(path, false)
                    .map_err(|e| vfs_err(path, e))?;
                let size = f.size();
                (Reader::Vfs(f), size)
            }
            Layer::Posix => {
                let f = File::open(path).map_err(|e| BenchError::io(path, e))?;
                let size = f.metadata().map_err(|e| BenchError::io(path, e))?.len();
                (Reader::Posix(f), size)
            }
        })
    }

    fn read_exact_at(&self, path: &Path, buf: &mut [u8], offset: u64) -> Result<()> {
        match self {
            // A TestDFSIO read streams the file: the Vfs's scan read keeps the OS readahead.
            Reader::Vfs(f) => f
                .read_exact_at_scan(buf, offset)
                .map_err(|e| vfs_err(path, e)),
            Reader::Posix(f) => f
                .read_exact_at(buf, offset)
                .map_err(|e| BenchError::io(path, e)),
        }
    }
}

/// Writes file number `file` at `path`: `size` bytes in `buffer`-sized appends, then sync.
pub fn write_task(
    layer: Layer,
    pattern: &Pattern,
    path: &Path,
    file: u64,
    size: u64,
    buffer: usize,
) -> Result<TaskOut> {
    let mut out = TaskOut::default();
    let mut buf = vec![0u8; buffer];
    let started = Instant::now();
    let mut f = Writer::create(layer, path)?;
    let mut offset = 0u64;
    while offset < size {
        let n = (size - offset).min(buffer as u64) as usize;
        pattern.fill(file, offset, &mut buf[..n]);
        let t0 = Instant::now();
        f.append(path, &buf[..n])?;
        out.calls.record(t0.elapsed());
        offset += n as u64;
    }
    let t0 = Instant::now();
    f.sync(path)?;
    out.sync_seconds = t0.elapsed().as_secs_f64();
    out.bytes = offset;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// Reads file number `file` at `path` sequentially in `buffer`-sized reads and checks it.
pub fn read_task(
    layer: Layer,
    pattern: &Pattern,
    path: &Path,
    file: u64,
    buffer: usize,
) -> Result<TaskOut> {
    let mut out = TaskOut::default();
    let mut buf = vec![0u8; buffer];
    let started = Instant::now();
    let (f, size) = Reader::open(layer, path)?;
    let mut verify = Duration::ZERO;
    let mut offset = 0u64;
    while offset < size {
        let n = (size - offset).min(buffer as u64) as usize;
        let t0 = Instant::now();
        f.read_exact_at(path, &mut buf[..n], offset)?;
        out.calls.record(t0.elapsed());
        let t1 = Instant::now();
        if !pattern.check(file, offset, &buf[..n]) {
            return Err(BenchError::Verify {
                engine: "dfsio",
                workload: "dfsio",
                what: format!(
                    "{}: the {n} bytes at offset {offset} are not what the write task wrote",
                    path.display()
                ),
            });
        }
        verify += t1.elapsed();
        out.verified_bytes += n as u64;
        offset += n as u64;
    }
    out.bytes = offset;
    out.verify_seconds = verify.as_secs_f64();
    out.seconds = (started.elapsed() - verify).as_secs_f64();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dfsio_pattern_blocks_are_all_different_and_checked() {
        let p = Pattern::new(3 * BLOCK + 100, 7);
        let mut a = vec![0u8; 3 * BLOCK + 100];
        let mut b = vec![0u8; 3 * BLOCK + 100];
        p.fill(0, 0, &mut a);
        p.fill(1, 0, &mut b);
        assert_ne!(a[..BLOCK], a[BLOCK..2 * BLOCK]);
        assert_ne!(a[..BLOCK], b[..BLOCK]);
        assert!(p.check(0, 0, &a));
        assert!(!p.check(1, 0, &a), "another file's content");
        assert!(!p.check(0, a.len() as u64, &a), "another offset's content");
        a[2 * BLOCK + 50] ^= 1;
        assert!(!p.check(0, 0, &a), "a flipped bit");
    }

    #[test]
    fn dfsio_tasks_round_trip_through_both_layers() {
        let dir = tempfile::tempdir().unwrap();
        let p = Pattern::new(10_000, 1);
        for (i, layer) in [Layer::CellarVfs, Layer::Posix].into_iter().enumerate() {
            let path = dir.path().join(format!("f{i}"));
            let w = write_task(layer, &p, &path, i as u64, 25_000, 10_000).unwrap();
            assert_eq!((w.bytes, w.calls.count()), (25_000, 3));
            let r = read_task(layer, &p, &path, i as u64, 10_000).unwrap();
            assert_eq!((r.bytes, r.verified_bytes), (25_000, 25_000));
            assert!(read_task(layer, &p, &path, 9, 10_000).is_err());
        }
    }
}
