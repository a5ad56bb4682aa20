//! fjall 3 (an LSM-tree in Rust): one database, one keyspace `kv`, configured like the
//! other LSMs here: LZ4 data blocks on every level, 4 KiB blocks, bloom filters at 10
//! bits/key on every level, the harness's block cache and memtable sizes. Everything else is
//! fjall's default (leveled compaction, worker threads = min(cores, 4)).
//!
//! * **`sync`**: an ordinary write (`Keyspace::insert`, or a batch with
//!   `PersistMode::Buffer`) hands its journal record to the OS before returning: it survives
//!   a process crash, not a power loss. A `sync` write is a batch committed with
//!   `PersistMode::SyncData`: the journal is `fdatasync`ed before the commit returns, while
//!   the journal lock is held, so concurrent durable writers each pay their own sync (no
//!   group commit).
//! * **Reads**: `Keyspace::get`; `multi_get` reads its keys from one snapshot; scans use
//!   `Keyspace::range`, a new iterator per seek (fjall's iterators cannot be repositioned).
//! * fjall has no direct-I/O option: `direct_reads` does not apply.

use std::path::Path;
use std::time::{Duration, Instant};

use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable};

use crate::engine::{copy_found, Direction, Engine, EngineStats, OpenConfig, Seek};
use crate::error::{BenchError, Result};

const NAME: &str = "fjall";
const KEYSPACE: &str = "kv";

/// How often `wait_for_background` looks, and how many idle looks in a row count as idle
/// (a compaction may be picked a moment after the flush that triggers it ends).
const POLL: Duration = Duration::from_millis(50);
const IDLE_POLLS: u32 = 4;

fn err(op: &'static str) -> impl FnOnce(fjall::Error) -> BenchError {
    move |e| BenchError::engine(NAME, op, e)
}

pub struct FjallEngine {
    db: Database,
    ks: Keyspace,
}

impl FjallEngine {
    pub fn open(path: &Path, cfg: &OpenConfig) -> Result<Self> {
        let db = Database::builder(path)
            .cache_size(cfg.block_cache_bytes)
            .open()
            .map_err(err("open"))?;
        let memtable_bytes = cfg.memtable_bytes;
        let ks = db
            .keyspace(KEYSPACE, || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(memtable_bytes)
                    .data_block_compression_policy(CompressionPolicy::all(CompressionType::Lz4))
                    .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                        BloomConstructionPolicy::BitsPerKey(10.0),
                    )))
            })
            .map_err(err("keyspace"))?;
        Ok(FjallEngine { db, ks })
    }

    fn idle(&self) -> bool {
        self.db.outstanding_flushes() == 0 && self.db.active_compactions() == 0
    }
}

impl Engine for FjallEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        if !sync {
            return self.ks.insert(key, value).map_err(err("insert"));
        }
        let mut b = self.db.batch().durability(Some(PersistMode::SyncData));
        b.insert(&self.ks, key, value);
        b.commit().map_err(err("commit"))
    }

    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        let mode = if sync {
            PersistMode::SyncData
        } else {
            PersistMode::Buffer
        };
        let mut b = self.db.batch().durability(Some(mode));
        for (k, v) in entries {
            b.insert(&self.ks, *k, *v);
        }
        b.commit().map_err(err("commit"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let v = self.ks.get(key).map_err(err("get"))?;
        Ok(v.map(|v| v.len()))
    }

    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let v = self.ks.get(key).map_err(err("get"))?;
        Ok(copy_found(v.as_deref(), out))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        let snapshot = self.db.snapshot();
        keys.iter()
            .map(|k| {
                let v = snapshot.get(&self.ks, k).map_err(err("get"))?;
                Ok(v.map(|v| v.len()))
            })
            .collect()
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
            let entries: Box<dyn Iterator<Item = fjall::Guard>> = match (target, dir) {
                (Seek::First, _) => Box::new(self.ks.iter()),
                (Seek::Last, _) => Box::new(self.ks.iter().rev()),
                (Seek::Key, Direction::Forward) => Box::new(self.ks.range(key.as_slice()..)),
                (Seek::Key, Direction::Reverse) => Box::new(self.ks.range(..=key.as_slice()).rev()),
            };
            for guard in entries.take(limit) {
                let (k, v) = guard.into_inner().map_err(err("iterate"))?;
                visit(&k, &v);
            }
        }
        Ok(())
    }

    /// Seals the active memtable and waits until it is written out (fjall exposes this
    /// as the hidden `rotate_memtable_and_wait`, which its own tests use).
    fn flush(&self) -> Result<()> {
        self.ks
            .rotate_memtable_and_wait()
            .map_err(err("rotate_memtable"))
    }

    fn compact(&self) -> Result<()> {
        self.ks.major_compact().map_err(err("major_compact"))
    }

    fn wait_for_background(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut idle_polls = 0;
        while Instant::now() < deadline {
            idle_polls = if self.idle() { idle_polls + 1 } else { 0 };
            if idle_polls == IDLE_POLLS {
                return Ok(());
            }
            std::thread::sleep(POLL);
        }
        Err(BenchError::engine(
            NAME,
            "wait_for_background",
            format!("background work still running after {timeout:?}"),
        ))
    }

    fn stats(&self) -> EngineStats {
        EngineStats::default()
    }

    /// Dropping the database persists the journal (`PersistMode::SyncAll`) and stops its
    /// workers.
    fn close(self: Box<Self>) -> Result<()> {
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(err("persist"))?;
        drop(self.ks);
        drop(self.db);
        Ok(())
    }
}
