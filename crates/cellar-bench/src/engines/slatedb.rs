//! SlateDB 0.18 (an LSM-tree whose WAL, SSTs and manifest all live in object storage),
//! opened at an `s3://bucket/prefix` path on an `object_store` `AmazonS3`, or at a local
//! directory through `object_store`'s `LocalFileSystem` (the conformance test).
//!
//! SlateDB is async; the adapter owns a tokio runtime (2 worker threads, the size of the
//! benchmark machine) and the benchmark threads, plain std threads, `block_on` it.
//!
//! Knobs set to match Cellar's (everything else is SlateDB's default):
//! * the block cache: an in-memory foyer cache (`FoyerCache`) of `OpenConfig.block_cache_bytes`;
//!   no local disk cache of objects (`object_store_cache_options` unset), since SlateDB's
//!   cold reads are what the `objstore` suite compares;
//! * `l0_sst_size_bytes` = `OpenConfig.memtable_bytes`: the memtable is frozen and written
//!   as one L0 SST at that size, as Cellar flushes its memtable;
//! * LZ4 compression, 4 KiB blocks, bloom filters at 10 bits/key (`BloomFilterPolicy`);
//!   `min_filter_keys` stays at 1000 (tables with fewer keys have no filter).
//!
//! * **`sync`**: every write goes to SlateDB's WAL buffer, which is written to the store as
//!   one WAL object every `flush_interval` (100 ms) or when full. A plain write returns once
//!   it is in the WAL buffer and the memtable; a `sync` write also awaits
//!   `WriteHandle::await_durable`, i.e. until its WAL object is in the store (group commit:
//!   concurrent durable writers share one WAL object, and each waits for the next tick).
//! * **Reads**: `Db::get`; `multi_get` is a loop of gets; scans open a new `Db::scan`
//!   iterator per seek (ascending from the key, or descending up to it).
//! * **`compact`**: SlateDB's compactor runs on its own schedule and 0.18 has no call that
//!   forces a full compaction from the writer, so `compact` is a memtable flush.
//! * **`wait_for_background`**: SlateDB has no "idle" signal either; it flushes the WAL
//!   and returns.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use slatedb::config::{CompressionCodec, FlushOptions, FlushType, ScanOptions, Settings};
use slatedb::db_cache::foyer::{FoyerCache, FoyerCacheOptions};
use slatedb::{BloomFilterPolicy, Db, FilterPolicy, IterationOrder, SstBlockSize, WriteBatch};
use tokio::runtime::Runtime;

use crate::engine::{copy_found, Direction, Engine, EngineStats, OpenConfig, Seek};
use crate::error::{BenchError, Result};

const NAME: &str = "slatedb";
const BLOOM_BITS_PER_KEY: u32 = 10;

fn err<E: std::fmt::Display>(op: &'static str) -> impl FnOnce(E) -> BenchError {
    move |e| BenchError::engine(NAME, op, e)
}

pub struct SlateDbEngine {
    runtime: Runtime,
    db: Db,
}

/// Where the database lives: a bucket and a prefix inside it, or a local directory.
#[derive(Debug, PartialEq, Eq)]
enum Location {
    Bucket { bucket: String, prefix: String },
    Directory,
}

/// `s3://bucket/prefix` → the bucket and the prefix ("db" when the URL has none); any other
/// path is a local directory.
fn location(path: &Path) -> Result<Location> {
    let Some(rest) = path.to_str().and_then(|p| p.strip_prefix("s3://")) else {
        return Ok(Location::Directory);
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let prefix = prefix.trim_matches('/');
    if bucket.is_empty() {
        return Err(BenchError::Invalid(format!(
            "{rest:?}: an s3:// URL needs a bucket"
        )));
    }
    Ok(Location::Bucket {
        bucket: bucket.to_string(),
        prefix: if prefix.is_empty() { "db" } else { prefix }.to_string(),
    })
}

/// The store and the database's path in it. The bucket's credentials, region and endpoint
/// come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ENDPOINT_URL;
/// path-style requests and plain http, as a local SeaweedFS or MinIO needs.
fn object_store(path: &Path) -> Result<(Arc<dyn ObjectStore>, String)> {
    match location(path)? {
        Location::Bucket { bucket, prefix } => {
            let mut b = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_allow_http(true)
                .with_virtual_hosted_style_request(false);
            if std::env::var_os("AWS_REGION").is_none() {
                b = b.with_region("us-east-1");
            }
            Ok((Arc::new(b.build().map_err(err("s3 store"))?), prefix))
        }
        Location::Directory => {
            std::fs::create_dir_all(path).map_err(|e| BenchError::io(path, e))?;
            let fs = LocalFileSystem::new_with_prefix(path).map_err(err("local store"))?;
            Ok((Arc::new(fs), "db".to_string()))
        }
    }
}

fn settings(cfg: &OpenConfig) -> Settings {
    Settings {
        l0_sst_size_bytes: cfg.memtable_bytes as usize,
        compression_codec: Some(CompressionCodec::Lz4),
        ..Settings::default()
    }
}

impl SlateDbEngine {
    pub fn open(path: &Path, cfg: &OpenConfig) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("slatedb")
            .enable_all()
            .build()
            .map_err(|e| BenchError::io("tokio runtime", e))?;
        let (store, db_path) = object_store(path)?;
        let cache = FoyerCache::new_with_opts(FoyerCacheOptions {
            max_capacity: cfg.block_cache_bytes,
            ..FoyerCacheOptions::default()
        });
        let bloom: Arc<dyn FilterPolicy> = Arc::new(BloomFilterPolicy::new(BLOOM_BITS_PER_KEY));
        let db = runtime
            .block_on(
                Db::builder(db_path, store)
                    .with_settings(settings(cfg))
                    .with_db_cache(Arc::new(cache), 0)
                    .with_sst_block_size(SstBlockSize::Block4Kib)
                    .with_filter_policies(vec![bloom])
                    .build(),
            )
            .map_err(err("open"))?;
        Ok(SlateDbEngine { runtime, db })
    }

    fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        self.runtime.block_on(async {
            let handle = self.db.write(batch).await.map_err(err("write"))?;
            if sync {
                handle.await_durable().await.map_err(err("await_durable"))?;
            }
            Ok(())
        })
    }

    fn flush_type(&self, flush_type: FlushType) -> Result<()> {
        self.runtime
            .block_on(self.db.flush_with_options(FlushOptions { flush_type }))
            .map_err(err("flush"))
    }

    /// Visits up to `limit` entries from one seek, in `dir`.
    fn scan_from(
        &self,
        target: Seek,
        key: &[u8],
        dir: Direction,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        let order = match dir {
            Direction::Forward => IterationOrder::Ascending,
            Direction::Reverse => IterationOrder::Descending,
        };
        let opts = ScanOptions {
            order,
            cache_blocks: true,
            ..ScanOptions::default()
        };
        self.runtime.block_on(async {
            let mut it = match (target, dir) {
                (Seek::First | Seek::Last, _) => self.db.scan_with_options(.., &opts).await,
                (Seek::Key, Direction::Forward) => self.db.scan_with_options(key.., &opts).await,
                (Seek::Key, Direction::Reverse) => self.db.scan_with_options(..=key, &opts).await,
            }
            .map_err(err("scan"))?;
            let mut n = 0;
            while n < limit {
                let Some(kv) = it.next().await.map_err(err("iterate"))? else {
                    break;
                };
                visit(&kv.key, &kv.value);
                n += 1;
            }
            Ok(())
        })
    }
}

impl Engine for SlateDbEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        self.write(batch, sync)
    }

    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        for (k, v) in entries {
            batch.put(k, v);
        }
        self.write(batch, sync)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let v = self
            .runtime
            .block_on(self.db.get(key))
            .map_err(err("get"))?;
        Ok(v.map(|v| v.len()))
    }

    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let v = self
            .runtime
            .block_on(self.db.get(key))
            .map_err(err("get"))?;
        Ok(copy_found(v.as_deref(), out))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    fn scan(
        &self,
        dir: Direction,
        limit: usize,
        next_seek: &mut dyn FnMut(&mut Vec<u8>) -> Option<Seek>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        let mut key = Vec::new();
        while let Some(target) = next_seek(&mut key) {
            self.scan_from(target, &key, dir, limit, visit)?;
        }
        Ok(())
    }

    /// Freezes the memtable and writes it as an L0 SST (the WAL is written first).
    fn flush(&self) -> Result<()> {
        self.flush_type(FlushType::MemTable)
    }

    /// A memtable flush: SlateDB 0.18 cannot force a compaction (see the top of the file).
    fn compact(&self) -> Result<()> {
        self.flush()
    }

    /// Writes the WAL buffer out; SlateDB does not say when its compactor is idle.
    fn wait_for_background(&self, _timeout: Duration) -> Result<()> {
        self.flush_type(FlushType::Wal)
    }

    fn stats(&self) -> EngineStats {
        EngineStats::default()
    }

    fn close(self: Box<Self>) -> Result<()> {
        let SlateDbEngine { runtime, db } = *self;
        runtime.block_on(db.close()).map_err(err("close"))?;
        runtime.shutdown_timeout(Duration::from_secs(10));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_urls_name_a_bucket_and_prefix_and_other_paths_a_directory() {
        let bucket = |b: &str, p: &str| Location::Bucket {
            bucket: b.into(),
            prefix: p.into(),
        };
        assert_eq!(
            location(Path::new("s3://b/x/y")).unwrap(),
            bucket("b", "x/y")
        );
        assert_eq!(location(Path::new("s3://b")).unwrap(), bucket("b", "db"));
        assert_eq!(location(Path::new("s3://b/")).unwrap(), bucket("b", "db"));
        assert_eq!(location(Path::new("/tmp/s3")).unwrap(), Location::Directory);
        assert!(location(Path::new("s3:///x")).is_err());
    }
}
