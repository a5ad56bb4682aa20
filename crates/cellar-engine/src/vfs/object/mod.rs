//! [`ObjectVfs`]: the engine's [`Vfs`] over an S3-compatible object store
//! (`object_store::ObjectStore`), for databases at `s3://bucket/prefix`.
//!
//! Engine paths are object keys relative to the bucket (`prefix/000012.sst`). An object store
//! has no append and no rename, so the engine's object layout writes every file once:
//! [`Vfs::create`] spills appends locally and uploads the whole object on `sync`;
//! [`Vfs::create_if_absent`] is a conditional PUT (`If-None-Match: *`), the one primitive that
//! fences writers; [`Vfs::rename`] is refused. Reads go through a [disk cache](DiskCacheConfig)
//! of immutable chunks; a point read that misses costs exactly one ranged GET of exactly its
//! bytes, a scan read one GET of an aligned window.
//!
//! Mechanisms, one file each: `bridge` (sync → async), `location` (URLs, S3 client),
//! `cache` (disk cache), `file` (the reader and writer), `probe` (does the store enforce
//! conditional creates?), `counters`, and `fault` (fault-injecting stores for tests).

use std::path::Path;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};
use crate::options::ObjectStoreOptions;
use crate::vfs::{CreateOutcome, FileLock, NoLock, RandomAccessFile, Vfs, WritableFile};

mod bridge;
mod cache;
mod counters;
pub mod fault;
mod file;
mod location;
mod probe;

pub use cache::DiskCacheConfig;
pub use location::{build_s3, default_cache_dir, ObjectLocation};
/// The `object_store` crate this backend is built on (for callers that build stores).
pub use object_store;

use bridge::Bridge;
use cache::DiskCache;
use counters::{add, Counters};

/// The engine's [`Vfs`] over an object store (see the module docs).
pub struct ObjectVfs {
    inner: Arc<Inner>,
}

/// What the files of one [`ObjectVfs`] share.
pub(crate) struct Inner {
    store: Arc<dyn ObjectStore>,
    /// For messages: `s3://bucket` or `memory`.
    name: String,
    bridge: Bridge,
    cache: Option<DiskCache>,
    /// Where writers spill their appends until `sync` (`<cache dir>/spill`); in memory
    /// without a cache directory.
    spill_dir: Option<std::path::PathBuf>,
    counters: Counters,
    /// The version (ETag or size) and size of each object this process uploaded, so that
    /// opening it to read needs no HEAD.
    known: parking_lot::Mutex<std::collections::HashMap<String, (String, u64)>>,
}

impl ObjectVfs {
    /// An `ObjectVfs` over any store (`InMemory` in tests), named `display_name` in
    /// messages, with a disk cache when `cache` is given.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        display_name: &str,
        cache: Option<DiskCacheConfig>,
    ) -> Result<ObjectVfs> {
        let (cache, spill_dir) = match cache {
            Some(config) => {
                let spill = config.dir.join("spill");
                std::fs::create_dir_all(&spill).map_err(|e| Error::io(&spill, e))?;
                clear_spill(&spill);
                (Some(DiskCache::open(&config)?), Some(spill))
            }
            None => (None, None),
        };
        let inner = Inner {
            store,
            name: display_name.to_string(),
            bridge: Bridge::new()?,
            cache,
            spill_dir,
            counters: Counters::default(),
            known: parking_lot::Mutex::new(std::collections::HashMap::new()),
        };
        Ok(ObjectVfs {
            inner: Arc::new(inner),
        })
    }

    /// Connects to the bucket of `url` (`s3://bucket/prefix`) with `options` (credentials,
    /// endpoint, region, cache budget), caching in `cache_dir` when given.
    pub fn connect(
        url: &str,
        options: &ObjectStoreOptions,
        cache_dir: Option<&Path>,
    ) -> Result<ObjectVfs> {
        let location = ObjectLocation::parse(url)?;
        let store = build_s3(&location, options)?;
        let cache = cache_dir.map(|dir| DiskCacheConfig {
            dir: dir.to_path_buf(),
            bytes: options.cache_bytes,
        });
        ObjectVfs::new(Arc::new(store), &format!("s3://{}", location.bucket), cache)
    }

    /// The store's name in messages.
    pub fn display_name(&self) -> &str {
        &self.inner.name
    }
}

/// Removes spill files a crashed process left behind (nothing of them was uploaded).
fn clear_spill(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The object key of an engine path: its UTF-8 text without a leading `/`.
pub(crate) fn key_of(path: &Path) -> Result<ObjectPath> {
    let text = path.to_str().ok_or_else(|| {
        Error::ObjectStore(format!("{}: object keys must be UTF-8", path.display()))
    })?;
    ObjectPath::parse(text.trim_start_matches('/'))
        .map_err(|e| Error::ObjectStore(format!("{text:?} is not a valid object key: {e}")))
}

/// Maps a store error on `key`: NotFound → an I/O error of kind NotFound, anything else →
/// an I/O error carrying the store's message.
pub(crate) fn store_error(key: &ObjectPath, err: object_store::Error) -> Error {
    let kind = match err {
        object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
        _ => std::io::ErrorKind::Other,
    };
    Error::io(key.as_ref(), std::io::Error::new(kind, err.to_string()))
}

impl Inner {
    /// Runs a store request on the bridge, mapping its error.
    pub(crate) fn request<T, F>(&self, key: &ObjectPath, future: F) -> Result<T>
    where
        F: std::future::Future<Output = object_store::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.bridge.run(future)?.map_err(|e| store_error(key, e))
    }

    /// HEAD of `key`.
    pub(crate) fn head(&self, key: &ObjectPath) -> Result<object_store::ObjectMeta> {
        add(&self.counters.head_requests, 1);
        let (store, k) = (self.store.clone(), key.clone());
        self.request(key, async move { store.head(&k).await })
    }

    /// GET of the whole object at `key`.
    fn get_all(&self, key: &ObjectPath) -> Result<Vec<u8>> {
        let (store, k) = (self.store.clone(), key.clone());
        let bytes = self.request(key, async move { store.get(&k).await?.bytes().await })?;
        self.counters.get(key.as_ref(), bytes.len() as u64);
        Ok(bytes.to_vec())
    }
}

impl Vfs for ObjectVfs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(file::ObjectWriter::new(
            self.inner.clone(),
            key_of(path)?,
        )?))
    }

    fn open_read(&self, path: &Path, _direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(file::ObjectReader::open(
            self.inner.clone(),
            key_of(path)?,
        )?))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.inner.get_all(&key_of(path)?)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        Err(Error::ObjectStore(format!(
            "cannot rename {} to {} in {}: object stores have no rename; the object layout writes each object once under its final name",
            from.display(),
            to.display(),
            self.inner.name
        )))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let key = key_of(path)?;
        add(&self.inner.counters.delete_requests, 1);
        self.inner.known.lock().remove(key.as_ref());
        let (store, k) = (self.inner.store.clone(), key.clone());
        self.inner
            .request(&key, async move { store.delete(&k).await })
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        let (from, to) = (key_of(from)?, key_of(to)?);
        add(&self.inner.counters.copy_requests, 1);
        let (store, f, t) = (self.inner.store.clone(), from.clone(), to.clone());
        self.inner.request(&to, async move {
            match store.copy_if_not_exists(&f, &t).await {
                Err(object_store::Error::NotSupported { .. })
                | Err(object_store::Error::NotImplemented { .. }) => store.copy(&f, &t).await,
                other => other,
            }
        })
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let key = key_of(dir)?;
        add(&self.inner.counters.list_requests, 1);
        let (store, k) = (self.inner.store.clone(), key.clone());
        let prefix = (!k.as_ref().is_empty()).then_some(k);
        let listing = self.inner.request(&key, async move {
            store.list_with_delimiter(prefix.as_ref()).await
        })?;
        // SeaweedFS lists a directory's own marker object (`dir/`) under it: not a file.
        Ok(listing
            .objects
            .iter()
            .filter(|meta| meta.location != key)
            .filter_map(|meta| meta.location.filename().map(str::to_string))
            .collect())
    }

    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        key_of(path).is_ok_and(|key| self.inner.head(&key).is_ok())
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.inner.head(&key_of(path)?)?.size)
    }

    fn create_if_absent(&self, path: &Path, data: &[u8]) -> Result<CreateOutcome> {
        let key = key_of(path)?;
        self.inner.counters.put(key.as_ref(), data.len() as u64);
        self.inner.known.lock().remove(key.as_ref());
        let (store, k) = (self.inner.store.clone(), key.clone());
        let payload = PutPayload::from(data.to_vec());
        let put = async move {
            let opts = PutOptions::from(PutMode::Create);
            match store.put_opts(&k, payload, opts).await {
                Ok(_) => Ok(CreateOutcome::Created),
                Err(object_store::Error::AlreadyExists { .. })
                | Err(object_store::Error::Precondition { .. }) => Ok(CreateOutcome::AlreadyExists),
                Err(e) => Err(e),
            }
        };
        self.inner.request(&key, put)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let cache_bytes = self.inner.cache.as_ref().map_or(0, DiskCache::bytes);
        self.inner.counters.snapshot(cache_bytes)
    }

    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        Ok(Box::new(NoLock))
    }
}
