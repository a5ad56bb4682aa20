//! Cellar through its public API only (`Db`, `Keyspace`, `WriteBatch`, `ReadOptions`, ...).

use std::path::Path;
use std::time::Duration;

use cellar_engine::{
    Compression, Db, Durability, Keyspace, ObjectStoreOptions, Options, ReadOptions, WalMode,
    WriteBatch, WriteOptions,
};

use crate::engine::{Direction, Engine, EngineStats, ObjectStoreTarget, OpenConfig, Seek};
use crate::error::{BenchError, Result};

const NAME: &str = "cellar";

fn err(op: &'static str) -> impl FnOnce(cellar_engine::Error) -> BenchError {
    move |e| BenchError::engine(NAME, op, e)
}

pub struct CellarEngine {
    db: Db,
    ks: Keyspace,
    write: WriteOptions,
    write_sync: WriteOptions,
}

impl CellarEngine {
    pub fn open(path: &Path, cfg: &OpenConfig) -> Result<Self> {
        let opts = Options {
            block_cache_size_bytes: cfg.block_cache_bytes as usize,
            memtable_size_bytes: cfg.memtable_bytes as usize,
            use_direct_reads: cfg.direct_reads,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            block_size_bytes: 4096,
            object_store: cfg
                .object_store
                .as_ref()
                .map_or_else(ObjectStoreOptions::default, object_store_options),
            ..Options::default()
        };
        let db = Db::open(path, opts).map_err(err("open"))?;
        let db = if is_url(path) {
            refuse_local_stand_in(db, path)?
        } else {
            db
        };
        let ks = db.default_keyspace();
        Ok(CellarEngine {
            db,
            ks,
            // Hands every write to the OS, like RocksDB's default (WAL on, sync off).
            write: WriteOptions::new(Durability::Flush),
            write_sync: WriteOptions::new(Durability::Sync),
        })
    }

    fn wo(&self, sync: bool) -> &WriteOptions {
        if sync {
            &self.write_sync
        } else {
            &self.write
        }
    }
}

/// The options of a database at an `s3://` path; credentials and region come from the
/// AWS_* environment, as for every AWS tool.
fn object_store_options(t: &ObjectStoreTarget) -> ObjectStoreOptions {
    ObjectStoreOptions {
        wal: if t.wal_in_bucket {
            WalMode::Object
        } else {
            WalMode::Local
        },
        cache_dir: Some(t.cache_dir.clone()),
        cache_bytes: t.cache_bytes,
        endpoint: t.endpoint.clone(),
        ..ObjectStoreOptions::default()
    }
}

fn is_url(path: &Path) -> bool {
    cellar_engine::object_store_url(path).is_some()
}

/// A `cellar-engine` without object-store support opens `s3://b/p` as the relative
/// directory `s3:/b/p`: a database in a bucket has a writer epoch and storage counters, so
/// one with neither is that stand-in, and measuring it would pass local-disk numbers off as
/// the bucket's. Fails then (and removes the stand-in directory it just created).
fn refuse_local_stand_in(db: Db, path: &Path) -> Result<Db> {
    let stats = db.stats();
    if stats.writer_epoch > 0 || !stats.storage.is_empty() {
        return Ok(db);
    }
    db.close().map_err(err("close"))?;
    let _ = std::fs::remove_dir_all(path);
    Err(BenchError::engine(
        NAME,
        "open",
        format!(
            "{} was opened as a local directory: this cellar-engine has no object-store \
             support (its `object-store` feature)",
            path.display()
        ),
    ))
}

impl Engine for CellarEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.db
            .put(&self.ks, key, value, self.wo(sync))
            .map_err(err("put"))
    }

    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        let mut b = WriteBatch::new();
        for (k, v) in entries {
            b.put(&self.ks, k, v);
        }
        self.db.write(b, self.wo(sync)).map_err(err("write"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let v = self
            .db
            .get(&self.ks, key, &ReadOptions::default())
            .map_err(err("get"))?;
        Ok(v.map(|v| v.len()))
    }

    /// `Db::get` hands out an owned copy of the value: it becomes the client's buffer.
    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let v = self
            .db
            .get(&self.ks, key, &ReadOptions::default())
            .map_err(err("get"))?;
        let found = v.is_some();
        *out = v.unwrap_or_default();
        Ok(found)
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        let vs = self
            .db
            .multi_get(&self.ks, keys, &ReadOptions::default())
            .map_err(err("multi_get"))?;
        Ok(vs.into_iter().map(|v| v.map(|v| v.len())).collect())
    }

    fn scan(
        &self,
        dir: Direction,
        limit: usize,
        next_seek: &mut dyn FnMut(&mut Vec<u8>) -> Option<Seek>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        let mut it = self
            .db
            .iter(&self.ks, ReadOptions::default())
            .map_err(err("iter"))?;
        let mut key = Vec::new();
        while let Some(target) = next_seek(&mut key) {
            match (target, dir) {
                (Seek::First, _) => it.seek_to_first(),
                (Seek::Last, _) => it.seek_to_last(),
                (Seek::Key, Direction::Forward) => it.seek(&key),
                (Seek::Key, Direction::Reverse) => it.seek_for_prev(&key),
            }
            let mut n = 0;
            while n < limit && it.valid() {
                visit(it.key(), it.value());
                n += 1;
                if n == limit {
                    break;
                }
                match dir {
                    Direction::Forward => it.next(),
                    Direction::Reverse => it.prev(),
                }
            }
            it.status().map_err(err("iterate"))?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.db.flush().map_err(err("flush"))
    }

    fn compact(&self) -> Result<()> {
        self.db
            .compact_range(&self.ks, None, None)
            .map_err(err("compact_range"))
    }

    /// Waits until no flush is pending and no level is over its compaction target.
    fn wait_for_background(&self, timeout: Duration) -> Result<()> {
        let db = self.db.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(db.wait_for_background_work());
        });
        match rx.recv_timeout(timeout) {
            Ok(r) => r.map_err(err("wait_for_background_work")),
            Err(_) => Err(BenchError::engine(
                NAME,
                "wait_for_background",
                format!("background work still running after {timeout:?}"),
            )),
        }
    }

    fn stats(&self) -> EngineStats {
        let s = self.db.stats();
        EngineStats {
            // Block reads below the block cache, as RocksDB's misses count them: `pread`s
            // and blocks read in place through a file's map.
            device_reads: Some(s.device_reads + s.mapped_reads),
            device_reads_method: "cellar Stats.device_reads + Stats.mapped_reads",
            resident_index_filter_bytes: Some(s.resident_index_filter_bytes),
            stall_micros: Some(s.stall_micros),
            wal_syncs: Some(s.wal_syncs),
            warm_up_bytes: Some(s.warm_up_bytes),
            warm_ups: Some(s.warm_ups),
            storage: s.storage,
        }
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close().map_err(err("close"))
    }
}
