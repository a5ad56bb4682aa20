//! The files of an [`ObjectVfs`](super::ObjectVfs): [`ObjectWriter`] spills appends locally
//! and uploads the whole object on `sync`; [`ObjectReader`] serves positional reads from the
//! disk cache or with ranged GETs.

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use parking_lot::Mutex;

use super::cache::ident;
use super::counters::add;
use super::Inner;
use crate::error::{Error, Result};
use crate::vfs::{RandomAccessFile, WritableFile};

/// Objects larger than this are uploaded in parts (`WriteMultipart`), not in one PUT.
const MULTIPART_ABOVE: u64 = 16 << 20;
/// The part size of a multipart upload.
const PART: usize = 8 << 20;
/// A scan read that misses fetches the aligned window of this size around it.
pub(crate) const SCAN_WINDOW: u64 = 4 << 20;

static SPILL: AtomicU64 = AtomicU64::new(0);

/// Where a writer's appended bytes wait for `sync`.
enum Spill {
    File { path: PathBuf, file: File },
    Memory(Vec<u8>),
}

/// A file being written: appends go to the spill, `sync` uploads all of it as the object.
pub(crate) struct ObjectWriter {
    inner: Arc<Inner>,
    key: ObjectPath,
    spill: Spill,
    len: u64,
    crc: u32,
    /// Uploaded: the spill file now belongs to the disk cache too (hard-linked), so it
    /// must not change. Objects are written once; an append after `sync` is refused.
    uploaded: bool,
}

impl ObjectWriter {
    pub(crate) fn new(inner: Arc<Inner>, key: ObjectPath) -> Result<ObjectWriter> {
        let spill = match &inner.spill_dir {
            Some(dir) => {
                let n = SPILL.fetch_add(1, Ordering::Relaxed);
                let path = dir.join(format!("{}-{n}", std::process::id()));
                let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
                Spill::File { path, file }
            }
            None => Spill::Memory(Vec::new()),
        };
        Ok(ObjectWriter {
            inner,
            key,
            spill,
            len: 0,
            crc: 0,
            uploaded: false,
        })
    }

    /// Uploads the spill as the whole object; the new object's version (ETag, else size).
    fn upload(&mut self) -> Result<String> {
        let store = self.inner.store.clone();
        let (key, len) = (self.key.clone(), self.len);
        let source = match &mut self.spill {
            Spill::Memory(data) => Source::Bytes(Bytes::from(data.clone())),
            Spill::File { path, file } => {
                file.flush().map_err(|e| Error::io(&*path, e))?;
                Source::File(path.clone())
            }
        };
        let put = upload(store, key, source, len);
        let result = self.inner.request(&self.key, put)?;
        self.inner.counters.put(self.key.as_ref(), len);
        Ok(version_of(result.e_tag.as_deref(), len))
    }
}

/// What an upload reads: the bytes, or the spill file holding them.
enum Source {
    Bytes(Bytes),
    File(PathBuf),
}

/// Uploads `len` bytes of `source` as the object `key`.
async fn upload(
    store: Arc<dyn ObjectStore>,
    key: ObjectPath,
    source: Source,
    len: u64,
) -> object_store::Result<object_store::PutResult> {
    match source {
        Source::Bytes(data) => store.put(&key, PutPayload::from(data)).await,
        Source::File(path) => upload_file(store, key, path, len).await,
    }
}

/// Uploads the first `len` bytes of the file at `path`: one PUT when small, else parts.
async fn upload_file(
    store: Arc<dyn ObjectStore>,
    key: ObjectPath,
    path: PathBuf,
    len: u64,
) -> object_store::Result<object_store::PutResult> {
    let local = |e: std::io::Error| object_store::Error::Generic {
        store: "spill file",
        source: Box::new(e),
    };
    let mut file = File::open(&path).map_err(local)?.take(len);
    if len <= MULTIPART_ABOVE {
        let mut data = Vec::with_capacity(len as usize);
        file.read_to_end(&mut data).map_err(local)?;
        return store.put(&key, PutPayload::from(data)).await;
    }
    let mut upload = WriteMultipart::new_with_chunk_size(store.put_multipart(&key).await?, PART);
    let mut buf = vec![0u8; PART];
    loop {
        let n = file.read(&mut buf).map_err(local)?;
        if n == 0 {
            break;
        }
        upload.wait_for_capacity(4).await?;
        upload.write(&buf[..n]);
    }
    upload.finish().await
}

/// The version of an object for the disk cache: its ETag, else its size.
pub(crate) fn version_of(e_tag: Option<&str>, size: u64) -> String {
    match e_tag {
        Some(tag) => format!("e:{tag}"),
        None => format!("s:{size}"),
    }
}

impl WritableFile for ObjectWriter {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.uploaded {
            return Err(Error::InvalidArgument(format!(
                "{}: an object is written once; it was uploaded already",
                self.key
            )));
        }
        match &mut self.spill {
            Spill::Memory(buf) => buf.extend_from_slice(data),
            Spill::File { path, file } => file.write_all(data).map_err(|e| Error::io(&*path, e))?,
        }
        self.len += data.len() as u64;
        self.crc = crc32c::crc32c_append(self.crc, data);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if self.uploaded {
            return Ok(());
        }
        let version = self.upload()?;
        self.uploaded = true;
        let id = ident(self.key.as_ref(), &version);
        self.inner
            .known
            .lock()
            .insert(self.key.to_string(), (version, self.len));
        if let Some(cache) = &self.inner.cache {
            // The engine reads a new SST right after writing it: keep it locally.
            // The object is uploaded: failing to cache it only costs a GET later.
            let _ = match &self.spill {
                Spill::File { path, .. } => cache.insert_file(&id, path, self.len, self.crc),
                Spill::Memory(data) => cache.insert(&id, 0, data),
            };
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if let Spill::File { path, .. } = &self.spill {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// An object open for positional reads.
pub(crate) struct ObjectReader {
    inner: Arc<Inner>,
    key: ObjectPath,
    size: u64,
    /// The object version's identity in the disk cache.
    ident: String,
    /// The last scan window fetched, for scans without a disk cache.
    window: Mutex<Option<(u64, Bytes)>>,
}

impl ObjectReader {
    /// Opens `key`: one HEAD for its size and ETag, unless this process wrote it.
    pub(crate) fn open(inner: Arc<Inner>, key: ObjectPath) -> Result<ObjectReader> {
        let known = inner.known.lock().get(key.as_ref()).cloned();
        let (version, size) = match known {
            Some(known) => known,
            None => {
                let meta = inner.head(&key)?;
                (version_of(meta.e_tag.as_deref(), meta.size), meta.size)
            }
        };
        let ident = ident(key.as_ref(), &version);
        Ok(ObjectReader {
            inner,
            key,
            size,
            ident,
            window: Mutex::new(None),
        })
    }

    /// Checks that `offset..offset+len` lies inside the object.
    fn range(&self, offset: u64, len: usize) -> Result<Range<u64>> {
        let end = offset
            .checked_add(len as u64)
            .filter(|end| *end <= self.size);
        end.map(|end| offset..end).ok_or_else(|| {
            let msg = format!(
                "read of {len} bytes at {offset} past the end ({} bytes)",
                self.size
            );
            Error::io(
                self.key.as_ref(),
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, msg),
            )
        })
    }

    /// Serves `buf` from the disk cache, counting the hit or miss.
    fn read_cached(&self, buf: &mut [u8], offset: u64) -> bool {
        let Some(cache) = &self.inner.cache else {
            return false;
        };
        let hit = cache.read(&self.ident, buf, offset);
        let counter = if hit {
            &self.inner.counters.cache_hits
        } else {
            &self.inner.counters.cache_misses
        };
        add(counter, 1);
        hit
    }

    /// One ranged GET of exactly `range`; an error if the store returns another length.
    fn get(&self, range: Range<u64>) -> Result<Bytes> {
        let (store, key) = (self.inner.store.clone(), self.key.clone());
        let want = range.clone();
        let bytes = self.inner.request(&self.key, async move {
            let opts = GetOptions::default().with_range(Some(want));
            store.get_opts(&key, opts).await?.bytes().await
        })?;
        self.inner
            .counters
            .get(self.key.as_ref(), bytes.len() as u64);
        if bytes.len() as u64 != range.end - range.start {
            let msg = format!(
                "GET of bytes {}..{} of {} in {} returned {} bytes",
                range.start,
                range.end,
                self.key,
                self.inner.name,
                bytes.len()
            );
            return Err(Error::io(
                self.key.as_ref(),
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, msg),
            ));
        }
        if let Some(cache) = &self.inner.cache {
            // The cache is an optimization: a chunk it cannot store (disk full) is read
            // from the store again next time, not an error of this read.
            let _ = cache.insert(&self.ident, range.start, &bytes);
        }
        Ok(bytes)
    }

    /// Copies `buf` out of the remembered scan window if it covers it.
    fn read_window(&self, buf: &mut [u8], offset: u64) -> bool {
        let window = self.window.lock();
        let Some((start, data)) = window.as_ref() else {
            return false;
        };
        let Some(from) = offset.checked_sub(*start).map(|f| f as usize) else {
            return false;
        };
        match data.get(from..from + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
}

impl RandomAccessFile for ObjectReader {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let range = self.range(offset, buf.len())?;
        if buf.is_empty() || self.read_cached(buf, offset) {
            return Ok(());
        }
        buf.copy_from_slice(&self.get(range)?);
        Ok(())
    }

    fn read_exact_at_scan(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let range = self.range(offset, buf.len())?;
        if buf.is_empty() || self.read_window(buf, offset) || self.read_cached(buf, offset) {
            return Ok(());
        }
        let start = range.start / SCAN_WINDOW * SCAN_WINDOW;
        let end = range
            .end
            .div_ceil(SCAN_WINDOW)
            .saturating_mul(SCAN_WINDOW)
            .min(self.size);
        let data = self.get(start..end)?;
        let from = (offset - start) as usize;
        buf.copy_from_slice(&data[from..from + buf.len()]);
        *self.window.lock() = Some((start, data));
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}
