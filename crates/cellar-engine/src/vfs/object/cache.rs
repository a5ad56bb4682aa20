//! The disk cache of an [`ObjectVfs`](super::ObjectVfs): chunks of immutable objects kept in
//! local files, so that a block read once from the object store is read from local disk
//! afterwards, across restarts too.
//!
//! A chunk is identified by (object key, object version, offset, length); the version is the
//! ETag (or the size when the store gives none), so an object recreated under the same name
//! is never served from the old one's chunks. Each chunk is one file
//! `<dir>/chunks/<hash>-<offset>-<len>.chunk`: the data, then a trailer naming the key and
//! version and holding the data's crc32c. At startup the index is rebuilt from the trailers,
//! with file mtimes as the LRU order; a chunk whose checksum does not match (a torn or
//! corrupted file) is dropped when first read, never served. The byte budget evicts the
//! least recently read chunks.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// Where the disk cache lives and how many bytes of chunk data it may hold.
#[derive(Debug, Clone)]
pub struct DiskCacheConfig {
    /// The cache directory (chunks go to `<dir>/chunks`, write spill files to `<dir>/spill`).
    pub dir: PathBuf,
    /// Byte budget of chunk data; the least recently read chunks are evicted past it.
    pub bytes: u64,
}

const MAGIC: u64 = 0x4345_4c4c_4152_4331; // "CELLARC1"
/// key_len, version_len, offset, len, data crc, meta crc, magic.
const TAIL: u64 = 4 + 4 + 8 + 8 + 4 + 4 + 8;

/// One cached chunk.
struct Chunk {
    path: PathBuf,
    tick: u64,
    /// Its checksum was checked in this process (or it was written by it).
    verified: bool,
}

/// The index: chunks by object (key + version) and range, and the LRU order.
#[derive(Default)]
struct State {
    objects: HashMap<String, BTreeMap<(u64, u64), Chunk>>,
    lru: BTreeMap<u64, (String, (u64, u64))>,
    tick: u64,
    bytes: u64,
}

/// The cache (see the module docs).
pub(crate) struct DiskCache {
    chunks: PathBuf,
    budget: u64,
    state: Mutex<State>,
    /// Open handles of recently read chunk files: a hit then costs one `pread`, not an
    /// `open`, a `pread` and a `close` (which made warm reads through the cache 1.6× slower
    /// than from a local database's page cache). Bounded by [`OPEN_FILES`]; a chunk's file
    /// is never rewritten, so a handle outliving its eviction still reads the right bytes.
    open_files: Mutex<HashMap<PathBuf, std::sync::Arc<File>>>,
}

/// At most this many chunk files are kept open.
const OPEN_FILES: usize = 1024;

/// What a chunk's trailer says.
struct Trailer {
    ident: String,
    offset: u64,
    len: u64,
    crc: u32,
}

static TMP: AtomicU64 = AtomicU64::new(0);

/// The identity of an object version: its key and ETag (or size).
pub(crate) fn ident(key: &str, version: &str) -> String {
    format!("{key}\n{version}")
}

impl DiskCache {
    /// Opens (creating) the cache in `config.dir` and rebuilds its index from the chunk files.
    pub(crate) fn open(config: &DiskCacheConfig) -> Result<DiskCache> {
        let chunks = config.dir.join("chunks");
        fs::create_dir_all(&chunks).map_err(|e| Error::io(&chunks, e))?;
        let cache = DiskCache {
            chunks,
            budget: config.bytes,
            state: Mutex::new(State::default()),
            open_files: Mutex::new(HashMap::new()),
        };
        cache.rebuild()?;
        Ok(cache)
    }

    /// Bytes of chunk data held.
    pub(crate) fn bytes(&self) -> u64 {
        self.state.lock().bytes
    }

    /// Fills `buf` from a cached chunk covering `offset..offset+buf.len()` of `ident`, and
    /// says whether it could. A chunk that fails its checksum or cannot be read is dropped.
    pub(crate) fn read(&self, ident: &str, buf: &mut [u8], offset: u64) -> bool {
        let end = offset + buf.len() as u64;
        let Some((range, path, verified)) = self.lookup(ident, offset, end) else {
            return false;
        };
        let ok =
            (verified || self.verify(&path, range.1)) && self.pread(&path, buf, offset - range.0);
        if ok {
            self.state.lock().mark_verified(ident, range);
        } else {
            self.drop_chunk(ident, range);
        }
        ok
    }

    /// Reads `buf` at `offset` of the chunk file `path`, through a kept-open handle.
    fn pread(&self, path: &Path, buf: &mut [u8], offset: u64) -> bool {
        let open = self.open_files.lock().get(path).cloned();
        let file = match open {
            Some(f) => f,
            None => {
                let Ok(f) = File::open(path) else {
                    return false;
                };
                let f = std::sync::Arc::new(f);
                let mut files = self.open_files.lock();
                if files.len() >= OPEN_FILES {
                    files.clear();
                }
                files.insert(path.to_path_buf(), std::sync::Arc::clone(&f));
                f
            }
        };
        file.read_exact_at(buf, offset).is_ok()
    }

    /// Finds a chunk covering `offset..end` and makes it the most recently used.
    fn lookup(&self, ident: &str, offset: u64, end: u64) -> Option<((u64, u64), PathBuf, bool)> {
        let mut state = self.state.lock();
        let chunks = state.objects.get(ident)?;
        let range = chunks
            .range(..=(offset, u64::MAX))
            .rev()
            .take(16)
            .map(|(r, _)| *r)
            .find(|(o, l)| o + l >= end)?;
        let (path, verified) = state.touch(ident, range)?;
        Some((range, path, verified))
    }

    /// Whether the chunk file at `path` holds `len` bytes of data matching its checksum.
    fn verify(&self, path: &Path, len: u64) -> bool {
        let Ok(mut file) = File::open(path) else {
            return false;
        };
        let Ok(trailer) = read_trailer(&mut file) else {
            return false;
        };
        let mut data = Vec::new();
        let read = file.seek(SeekFrom::Start(0)).is_ok()
            && (&mut file).take(len).read_to_end(&mut data).is_ok();
        let ok = read && trailer.len == len && crc32c::crc32c(&data) == trailer.crc;
        if ok {
            let _ = file.set_modified(SystemTime::now());
        }
        ok
    }

    /// Stores `data` as the chunk at `offset` of the object version `ident`.
    pub(crate) fn insert(&self, ident: &str, offset: u64, data: &[u8]) -> Result<()> {
        if data.len() as u64 > self.budget {
            return Ok(());
        }
        let tmp = self.tmp_path();
        let mut file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        file.write_all(data).map_err(|e| Error::io(&tmp, e))?;
        let crc = crc32c::crc32c(data);
        self.publish(file, tmp, ident, offset, data.len() as u64, crc)
    }

    /// Stores the first `len` bytes of the local file `src` (whose crc32c is `crc`) as the
    /// chunk at offset 0 of `ident`: a freshly uploaded object, read back right away.
    pub(crate) fn insert_file(&self, ident: &str, src: &Path, len: u64, crc: u32) -> Result<()> {
        if len > self.budget {
            return Ok(());
        }
        let tmp = self.tmp_path();
        // The spill file is done with once uploaded: link it in rather than copy an SST of
        // tens of MiB (the copy took CPU and disk from the writers during every flush).
        if fs::hard_link(src, &tmp).is_err() {
            fs::copy(src, &tmp).map_err(|e| Error::io(&tmp, e))?;
        }
        let file = fs::OpenOptions::new()
            .write(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        file.set_len(len).map_err(|e| Error::io(&tmp, e))?;
        self.publish(file, tmp, ident, 0, len, crc)
    }

    /// Appends the trailer to the data in `file`, renames it into place, indexes it, evicts.
    fn publish(
        &self,
        mut file: File,
        tmp: PathBuf,
        ident: &str,
        offset: u64,
        len: u64,
        crc: u32,
    ) -> Result<()> {
        file.seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&tmp, e))?;
        file.write_all(&encode_trailer(ident, offset, len, crc))
            .map_err(|e| Error::io(&tmp, e))?;
        let path = self.chunk_path(ident, offset, len);
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        let evicted = {
            let mut state = self.state.lock();
            state.add(ident.to_string(), (offset, len), path, true);
            state.evict(self.budget)
        };
        remove_files(evicted);
        Ok(())
    }

    fn tmp_path(&self) -> PathBuf {
        let n = TMP.fetch_add(1, Ordering::Relaxed);
        self.chunks.join(format!("tmp-{}-{n}", std::process::id()))
    }

    fn chunk_path(&self, ident: &str, offset: u64, len: u64) -> PathBuf {
        let hash = xxhash_rust::xxh3::xxh3_128(ident.as_bytes());
        self.chunks
            .join(format!("{hash:032x}-{offset}-{len}.chunk"))
    }

    /// Forgets a chunk and removes its file.
    fn drop_chunk(&self, ident: &str, range: (u64, u64)) {
        let path = self.state.lock().remove(ident, range);
        if let Some(p) = &path {
            // A handle to a damaged file must not outlive it: the chunk may be fetched
            // again into a new file of the same name.
            self.open_files.lock().remove(p);
        }
        remove_files(path.into_iter().collect());
    }

    /// Indexes every chunk file in the directory (oldest mtime first), removing leftover
    /// temporary files and files with a damaged trailer, then evicts down to the budget.
    fn rebuild(&self) -> Result<()> {
        let entries = fs::read_dir(&self.chunks).map_err(|e| Error::io(&self.chunks, e))?;
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let is_chunk = path.extension().is_some_and(|e| e == "chunk");
            match File::open(&path).and_then(|mut f| read_trailer(&mut f).map(|t| (t, f))) {
                Ok((t, f)) if is_chunk && f.metadata().is_ok_and(|m| m.len() == t.file_len()) => {
                    let mtime = f.metadata().and_then(|m| m.modified()).ok();
                    found.push((mtime.unwrap_or(SystemTime::UNIX_EPOCH), t, path));
                }
                _ => remove_files(vec![path]),
            }
        }
        found.sort_by_key(|(mtime, _, _)| *mtime);
        let evicted = {
            let mut state = self.state.lock();
            for (_, t, path) in found {
                state.add(t.ident, (t.offset, t.len), path, false);
            }
            state.evict(self.budget)
        };
        remove_files(evicted);
        Ok(())
    }
}

impl Trailer {
    /// The size of the chunk file this trailer ends.
    fn file_len(&self) -> u64 {
        self.len + self.ident.len() as u64 + TAIL
    }
}

impl State {
    fn add(&mut self, ident: String, range: (u64, u64), path: PathBuf, verified: bool) {
        self.tick += 1;
        let tick = self.tick;
        let chunk = Chunk {
            path,
            tick,
            verified,
        };
        let old = self
            .objects
            .entry(ident.clone())
            .or_default()
            .insert(range, chunk);
        match old {
            Some(old) => {
                self.lru.remove(&old.tick);
            }
            None => self.bytes += range.1,
        }
        self.lru.insert(tick, (ident, range));
    }

    /// Makes a chunk the most recently used; its path and whether it is verified.
    fn touch(&mut self, ident: &str, range: (u64, u64)) -> Option<(PathBuf, bool)> {
        self.tick += 1;
        let tick = self.tick;
        let chunk = self.objects.get_mut(ident)?.get_mut(&range)?;
        let old = std::mem::replace(&mut chunk.tick, tick);
        let found = (chunk.path.clone(), chunk.verified);
        if let Some(entry) = self.lru.remove(&old) {
            self.lru.insert(tick, entry);
        }
        Some(found)
    }

    fn mark_verified(&mut self, ident: &str, range: (u64, u64)) {
        if let Some(chunk) = self.objects.get_mut(ident).and_then(|c| c.get_mut(&range)) {
            chunk.verified = true;
        }
    }

    /// Forgets a chunk; its path, for the caller to remove.
    fn remove(&mut self, ident: &str, range: (u64, u64)) -> Option<PathBuf> {
        let chunks = self.objects.get_mut(ident)?;
        let chunk = chunks.remove(&range)?;
        if chunks.is_empty() {
            self.objects.remove(ident);
        }
        self.lru.remove(&chunk.tick);
        self.bytes -= range.1;
        Some(chunk.path)
    }

    /// Forgets the least recently used chunks until at most `budget` bytes remain; their
    /// paths, for the caller to remove outside the lock.
    fn evict(&mut self, budget: u64) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        while self.bytes > budget {
            let Some((_, (ident, range))) = self.lru.pop_first() else {
                break;
            };
            paths.extend(self.remove(&ident, range));
        }
        paths
    }
}

fn remove_files(paths: Vec<PathBuf>) {
    for path in paths {
        let _ = fs::remove_file(path);
    }
}

fn encode_trailer(ident: &str, offset: u64, len: u64, crc: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(ident.len() + TAIL as usize);
    out.extend_from_slice(ident.as_bytes());
    out.extend_from_slice(&(ident.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    let meta_crc = crc32c::crc32c(&out);
    out.extend_from_slice(&meta_crc.to_le_bytes());
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out
}

fn read_trailer(file: &mut File) -> std::io::Result<Trailer> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "damaged cache chunk");
    let size = file.metadata()?.len();
    let mut tail = [0u8; TAIL as usize];
    file.read_exact_at(&mut tail, size.checked_sub(TAIL).ok_or_else(bad)?)?;
    let u32_at = |i: usize| u32::from_le_bytes([tail[i], tail[i + 1], tail[i + 2], tail[i + 3]]);
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&tail[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let ident_len = u64::from(u32_at(0));
    if u64_at(32) != MAGIC || size < TAIL + ident_len {
        return Err(bad());
    }
    let mut meta = vec![0u8; ident_len as usize];
    file.read_exact_at(&mut meta, size - TAIL - ident_len)?;
    meta.extend_from_slice(&tail[..28]);
    if crc32c::crc32c(&meta) != u32_at(28) {
        return Err(bad());
    }
    meta.truncate(ident_len as usize);
    let ident = String::from_utf8(meta).map_err(|_| bad())?;
    Ok(Trailer {
        ident,
        offset: u64_at(8),
        len: u64_at(16),
        crc: u32_at(24),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, bytes: u64) -> DiskCacheConfig {
        DiskCacheConfig {
            dir: dir.to_path_buf(),
            bytes,
        }
    }

    fn read(cache: &DiskCache, id: &str, offset: u64, len: usize) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; len];
        cache.read(id, &mut buf, offset).then_some(buf)
    }

    #[test]
    fn serves_exact_and_covered_ranges_per_version() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(&config(dir.path(), 1 << 20)).unwrap();
        let id = ident("db/1.sst", "e:abc");
        cache.insert(&id, 100, b"hello world").unwrap();
        assert_eq!(read(&cache, &id, 100, 11).unwrap(), b"hello world");
        assert_eq!(read(&cache, &id, 106, 5).unwrap(), b"world");
        assert!(read(&cache, &id, 106, 6).is_none(), "past the chunk");
        assert!(read(&cache, &id, 99, 2).is_none(), "before the chunk");
        assert!(
            read(&cache, &ident("db/1.sst", "e:other"), 100, 5).is_none(),
            "another version"
        );
        assert_eq!(cache.bytes(), 11);
    }

    #[test]
    fn evicts_least_recently_read() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(&config(dir.path(), 300)).unwrap();
        let id = ident("k", "s:1000");
        cache.insert(&id, 0, &[1u8; 100]).unwrap();
        cache.insert(&id, 100, &[2u8; 100]).unwrap();
        cache.insert(&id, 200, &[3u8; 100]).unwrap();
        assert!(read(&cache, &id, 0, 10).is_some()); // chunk 0 now most recent
        cache.insert(&id, 300, &[4u8; 100]).unwrap();
        assert_eq!(cache.bytes(), 300);
        assert!(
            read(&cache, &id, 100, 10).is_none(),
            "the least recently read went"
        );
        assert!(read(&cache, &id, 0, 10).is_some());
        assert!(read(&cache, &id, 300, 10).is_some());
        let files = fs::read_dir(dir.path().join("chunks")).unwrap().count();
        assert_eq!(files, 3);
        cache.insert(&id, 0, &[9u8; 400]).unwrap();
        assert_eq!(cache.bytes(), 300, "a chunk over the budget is not kept");
    }

    #[test]
    fn survives_a_restart_in_lru_order() {
        let dir = tempfile::tempdir().unwrap();
        let id = ident("k", "e:1");
        {
            let cache = DiskCache::open(&config(dir.path(), 1000)).unwrap();
            cache.insert(&id, 0, &[1u8; 100]).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            cache.insert(&id, 100, &[2u8; 100]).unwrap();
            fs::write(dir.path().join("chunks/tmp-1-1"), b"leftover").unwrap();
        }
        let cache = DiskCache::open(&config(dir.path(), 1000)).unwrap();
        assert_eq!(read(&cache, &id, 150, 10).unwrap(), vec![2u8; 10]);
        assert!(!dir.path().join("chunks/tmp-1-1").exists());
        drop(cache);
        // A smaller budget at restart evicts the oldest (by mtime) first.
        let cache = DiskCache::open(&config(dir.path(), 150)).unwrap();
        assert!(read(&cache, &id, 0, 10).is_none());
        assert!(read(&cache, &id, 100, 10).is_some());
    }

    use std::time::Duration;

    #[test]
    fn a_corrupt_or_truncated_chunk_is_dropped_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let id = ident("k", "e:1");
        {
            let cache = DiskCache::open(&config(dir.path(), 1000)).unwrap();
            cache.insert(&id, 0, &[7u8; 100]).unwrap();
            cache.insert(&id, 100, &[8u8; 100]).unwrap();
        }
        let mut paths: Vec<_> = fs::read_dir(dir.path().join("chunks"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort_by_key(|p| p.to_string_lossy().contains("-0-100.chunk"));
        let (second, first) = (&paths[0], &paths[1]);
        // Flip a data byte of the first chunk; truncate the second.
        let mut data = fs::read(first).unwrap();
        data[5] ^= 0xff;
        fs::write(first, &data).unwrap();
        let data = fs::read(second).unwrap();
        fs::write(second, &data[..50]).unwrap();
        let cache = DiskCache::open(&config(dir.path(), 1000)).unwrap();
        assert_eq!(
            cache.bytes(),
            100,
            "the truncated chunk was dropped at startup"
        );
        assert!(
            read(&cache, &id, 0, 10).is_none(),
            "the corrupt chunk is not served"
        );
        assert!(!first.exists() && !second.exists());
        assert_eq!(cache.bytes(), 0);
    }
}
