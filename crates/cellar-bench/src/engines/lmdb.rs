//! LMDB through `heed` 0.22 (which vendors LMDB's C source): one environment, the unnamed
//! database, raw byte keys and values.
//!
//! * **Writes**: each `put` and each `put_batch` is one write transaction (LMDB has a single
//!   writer; concurrent writers queue on its mutex).
//! * **`sync`**: the environment is opened with `MDB_NOSYNC`, so an ordinary commit writes
//!   its pages and meta page to the file with `pwrite` and returns: it survives a process
//!   crash, not a power loss (the same promise as Cellar's `Durability::Flush` and RocksDB's
//!   `sync = false`). A `sync` write clears `MDB_NOSYNC` inside its transaction, so its
//!   commit is LMDB's ordinary durable commit: data pages written and `fdatasync`ed, then
//!   the meta page written through the `O_DSYNC` descriptor. It survives a power loss, and
//!   so does every earlier commit (they are in the same file). No group commit: each durable
//!   write pays its own two syncs.
//! * **Reads**: one read transaction per `get`, per `multi_get` call and per `scan`; values
//!   are read in place from the memory map. LMDB has no block cache (the OS page cache is
//!   its cache), no compaction and no direct I/O: `block_cache_bytes`, `memtable_bytes` and
//!   `direct_reads` do not apply.

// Unsafe code here: heed marks opening an environment and changing its flags unsafe.
#![allow(unsafe_code)]

use std::ops::Bound;
use std::path::Path;
use std::time::Duration;

use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, FlagSetMode, RwTxn};

use crate::engine::{copy_found, Direction, Engine, EngineStats, OpenConfig, Seek};
use crate::error::{BenchError, Result};

const NAME: &str = "lmdb";

/// Address space reserved for the map. LMDB fails writes with `MDB_MAP_FULL` beyond it; the
/// file only grows as pages are used, so this costs virtual addresses, not disk or memory.
const MAP_SIZE_BYTES: usize = 1 << 40;

/// Reader slots: more than the most threads any workload runs (fillsync's 16, YCSB's 4).
const MAX_READERS: u32 = 256;

/// Entries of a cursor walk, either way.
type Entries<'t> = Box<dyn Iterator<Item = heed::Result<(&'t [u8], &'t [u8])>> + 't>;

fn err(op: &'static str) -> impl FnOnce(heed::Error) -> BenchError {
    move |e| BenchError::engine(NAME, op, e)
}

pub struct LmdbEngine {
    env: Env,
    db: Database<Bytes, Bytes>,
}

impl LmdbEngine {
    pub fn open(path: &Path, _cfg: &OpenConfig) -> Result<Self> {
        std::fs::create_dir_all(path).map_err(|e| BenchError::io(path, e))?;
        let mut opts = EnvOpenOptions::new();
        opts.map_size(MAP_SIZE_BYTES).max_readers(MAX_READERS);
        // SAFETY: MDB_NOSYNC trades durability, not integrity, of commits that are not
        // synced (the file is written with pwrite, not through a writable map); durable
        // writes turn it off for their own commit (see `write`). The environment is opened
        // once per directory by this process and no other process opens it.
        let env = unsafe {
            opts.flags(EnvFlags::NO_SYNC);
            opts.open(path)
        }
        .map_err(err("open"))?;
        let mut wtxn = env.write_txn().map_err(err("write_txn"))?;
        let db = env
            .create_database(&mut wtxn, None)
            .map_err(err("create_database"))?;
        wtxn.commit().map_err(err("commit"))?;
        Ok(LmdbEngine { env, db })
    }

    /// Runs `fill` in one write transaction and commits it, durably when `sync`.
    fn write(&self, sync: bool, fill: impl FnOnce(&mut RwTxn) -> heed::Result<()>) -> Result<()> {
        let mut wtxn = self.env.write_txn().map_err(err("write_txn"))?;
        let mode = if sync {
            FlagSetMode::Disable
        } else {
            FlagSetMode::Enable
        };
        // SAFETY: LMDB requires that one thread at a time changes the flags. Only the
        // holder of the write transaction (LMDB's writer mutex) does so, right here; the
        // commit below reads the flag on the same thread.
        unsafe { self.env.set_flags(EnvFlags::NO_SYNC, mode) }.map_err(err("set_flags"))?;
        fill(&mut wtxn).map_err(err("put"))?;
        wtxn.commit().map_err(err("commit"))
    }
}

impl Engine for LmdbEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.write(sync, |txn| self.db.put(txn, key, value))
    }

    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        self.write(sync, |txn| {
            entries.iter().try_for_each(|(k, v)| self.db.put(txn, k, v))
        })
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let rtxn = self.env.read_txn().map_err(err("read_txn"))?;
        let v = self.db.get(&rtxn, key).map_err(err("get"))?;
        Ok(v.map(<[u8]>::len))
    }

    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let rtxn = self.env.read_txn().map_err(err("read_txn"))?;
        let v = self.db.get(&rtxn, key).map_err(err("get"))?;
        Ok(copy_found(v, out))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        let rtxn = self.env.read_txn().map_err(err("read_txn"))?;
        keys.iter()
            .map(|k| {
                let v = self.db.get(&rtxn, k).map_err(err("get"))?;
                Ok(v.map(<[u8]>::len))
            })
            .collect()
    }

    /// One read transaction for the whole scan; each seek opens a cursor range in it.
    fn scan(
        &self,
        dir: Direction,
        limit: usize,
        next_seek: &mut dyn FnMut(&mut Vec<u8>) -> Option<Seek>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        let rtxn = self.env.read_txn().map_err(err("read_txn"))?;
        let mut key = Vec::new();
        while let Some(target) = next_seek(&mut key) {
            let k: &[u8] = &key;
            let entries: Entries<'_> = match (target, dir) {
                (Seek::First, _) => Box::new(self.db.iter(&rtxn).map_err(err("iter"))?),
                (Seek::Last, _) => Box::new(self.db.rev_iter(&rtxn).map_err(err("iter"))?),
                (Seek::Key, Direction::Forward) => Box::new(
                    self.db
                        .range(&rtxn, &(Bound::Included(k), Bound::Unbounded))
                        .map_err(err("range"))?,
                ),
                (Seek::Key, Direction::Reverse) => Box::new(
                    self.db
                        .rev_range(&rtxn, &(Bound::Unbounded, Bound::Included(k)))
                        .map_err(err("range"))?,
                ),
            };
            for entry in entries.take(limit) {
                let (k, v) = entry.map_err(err("iterate"))?;
                visit(k, v);
            }
        }
        Ok(())
    }

    /// LMDB has no memtable: the closest thing is getting unsynced commits onto the disk.
    fn flush(&self) -> Result<()> {
        self.env.force_sync().map_err(err("sync"))
    }

    /// A B+tree that is updated in place has nothing to compact.
    fn compact(&self) -> Result<()> {
        Ok(())
    }

    fn wait_for_background(&self, _timeout: Duration) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> EngineStats {
        EngineStats::default()
    }

    fn close(self: Box<Self>) -> Result<()> {
        // Waits until LMDB has closed the environment, so that reopening the directory
        // right away (the runner does) gets a fresh one.
        self.env.prepare_for_closing().wait();
        Ok(())
    }
}
