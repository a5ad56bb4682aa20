//! SQLite through `rusqlite` 0.41 (the bundled amalgamation): one database file
//! `<dir>/kv.sqlite` in WAL mode holding
//! `CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID` (a clustered B-tree on the
//! key, values stored in it), every statement prepared once per connection
//! (`prepare_cached`).
//!
//! * **Connections**: SQLite allows one writer at a time; concurrent writers on separate
//!   connections would spin in its busy handler. So all writes go through ONE writer
//!   connection behind a mutex (the usual way to use SQLite from many threads), and reads
//!   take a connection from a pool that grows to one per concurrent reader. WAL mode lets
//!   readers run while the writer commits.
//! * **`sync`**: ordinary writes commit with `PRAGMA synchronous = NORMAL`: in WAL mode the
//!   commit appends to the WAL without `fsync` (survives a process crash, not a power loss;
//!   the WAL is synced at checkpoints). A `sync` write commits with `synchronous = FULL`:
//!   the WAL is `fsync`ed at every commit, so it survives a power loss. No group commit.
//! * **Cache**: each connection's page cache is `block_cache_bytes` (`PRAGMA cache_size`),
//!   so N reader connections may hold N times that. Memory-mapped I/O stays off (SQLite's
//!   default); `direct_reads` does not apply.
//! * `flush` checkpoints the WAL into the database file (`wal_checkpoint(TRUNCATE)`), the
//!   counterpart of writing a memtable out; `compact` is `VACUUM`.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection};

use crate::engine::{Direction, Engine, EngineStats, OpenConfig, Seek};
use crate::error::{BenchError, Result};

const NAME: &str = "sqlite";
const FILE_NAME: &str = "kv.sqlite";

/// How long a connection waits for a lock held by another (the checkpoint, a reader's
/// WAL-index setup) before failing with SQLITE_BUSY.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

const PUT: &str = "INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)";
const GET: &str = "SELECT v FROM kv WHERE k = ?1";
const SCAN_FROM: &str = "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2";
const SCAN_ALL: &str = "SELECT k, v FROM kv ORDER BY k LIMIT ?1";
const SCAN_BACK_FROM: &str = "SELECT k, v FROM kv WHERE k <= ?1 ORDER BY k DESC LIMIT ?2";
const SCAN_BACK_ALL: &str = "SELECT k, v FROM kv ORDER BY k DESC LIMIT ?1";

fn err(op: &'static str) -> impl FnOnce(rusqlite::Error) -> BenchError {
    move |e| BenchError::engine(NAME, op, e)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves a connection in an unknown transaction state,
    // but every use begins and ends its own statement; carry on.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The writer connection and the `synchronous` level it is set to.
struct Writer {
    conn: Connection,
    synchronous_full: bool,
}

impl Writer {
    /// Sets `synchronous` for the next commit (only when it changes: a pragma is a
    /// statement of its own).
    fn set_sync(&mut self, sync: bool) -> Result<()> {
        if self.synchronous_full != sync {
            let level = if sync { "FULL" } else { "NORMAL" };
            self.conn
                .pragma_update(None, "synchronous", level)
                .map_err(err("pragma synchronous"))?;
            self.synchronous_full = sync;
        }
        Ok(())
    }
}

pub struct SqliteEngine {
    path: PathBuf,
    cache_kib: i64,
    writer: Mutex<Writer>,
    readers: Mutex<Vec<Connection>>,
}

impl SqliteEngine {
    pub fn open(dir: &Path, cfg: &OpenConfig) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
        let path = dir.join(FILE_NAME);
        let cache_kib = (cfg.block_cache_bytes / 1024).max(1) as i64;
        let conn = connect(&path, cache_kib)?;
        conn.execute(
            "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID",
            [],
        )
        .map_err(err("create table"))?;
        Ok(SqliteEngine {
            path,
            cache_kib,
            writer: Mutex::new(Writer {
                conn,
                synchronous_full: false,
            }),
            readers: Mutex::new(Vec::new()),
        })
    }

    /// Runs `f` on a reader connection, then returns the connection to the pool.
    fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(c) => c,
            None => connect(&self.path, self.cache_kib)?,
        };
        let out = f(&conn);
        lock(&self.readers).push(conn);
        out
    }
}

/// A connection in WAL mode with `synchronous = NORMAL` and the given page cache.
fn connect(path: &Path, cache_kib: i64) -> Result<Connection> {
    let conn = Connection::open(path).map_err(err("open"))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(err("busy_timeout"))?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(err("pragma journal_mode"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(BenchError::engine(
            NAME,
            "pragma journal_mode",
            format!("asked for WAL, got {mode}"),
        ));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err("pragma synchronous"))?;
    // Negative: in KiB rather than pages.
    conn.pragma_update(None, "cache_size", -cache_kib)
        .map_err(err("pragma cache_size"))?;
    Ok(conn)
}

/// `f` of the value under `key`, read through the connection's cached `GET` statement; a
/// NULL value reads as empty.
fn with_value<T>(conn: &Connection, key: &[u8], f: impl FnOnce(&[u8]) -> T) -> Result<Option<T>> {
    let mut stmt = conn.prepare_cached(GET).map_err(err("prepare"))?;
    let mut rows = stmt.query([key]).map_err(err("get"))?;
    match rows.next().map_err(err("get"))? {
        Some(row) => match row.get_ref(0).map_err(err("get"))? {
            ValueRef::Blob(v) => Ok(Some(f(v))),
            ValueRef::Null => Ok(Some(f(&[]))),
            other => Err(BenchError::engine(
                NAME,
                "get",
                format!("value is not a BLOB but {:?}", other.data_type()),
            )),
        },
        None => Ok(None),
    }
}

fn get_len(conn: &Connection, key: &[u8]) -> Result<Option<usize>> {
    with_value(conn, key, <[u8]>::len)
}

/// The value under `key` copied into `out`; `false` when there is none.
fn read_value(conn: &Connection, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
    out.clear();
    Ok(with_value(conn, key, |v| out.extend_from_slice(v))?.is_some())
}

impl Engine for SqliteEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let mut w = lock(&self.writer);
        w.set_sync(sync)?;
        let mut stmt = w.conn.prepare_cached(PUT).map_err(err("prepare"))?;
        stmt.execute(params![key, value]).map_err(err("insert"))?;
        Ok(())
    }

    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        let mut w = lock(&self.writer);
        w.set_sync(sync)?;
        let tx = w.conn.unchecked_transaction().map_err(err("begin"))?;
        {
            let mut stmt = tx.prepare_cached(PUT).map_err(err("prepare"))?;
            for (k, v) in entries {
                stmt.execute(params![k, v]).map_err(err("insert"))?;
            }
        }
        tx.commit().map_err(err("commit"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        self.with_reader(|conn| get_len(conn, key))
    }

    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.with_reader(|conn| read_value(conn, key, out))
    }

    /// All keys in one read transaction (one snapshot, one WAL-index lookup).
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        self.with_reader(|conn| {
            let tx = conn.unchecked_transaction().map_err(err("begin"))?;
            let out = keys
                .iter()
                .map(|k| get_len(&tx, k))
                .collect::<Result<Vec<_>>>()?;
            tx.finish().map_err(err("commit"))?;
            Ok(out)
        })
    }

    /// One query per seek, `ORDER BY k` (or `DESC`) with `LIMIT`: SQLite walks the
    /// primary-key B-tree from the seek position.
    fn scan(
        &self,
        dir: Direction,
        limit: usize,
        next_seek: &mut dyn FnMut(&mut Vec<u8>) -> Option<Seek>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        // SQLite's LIMIT is an i64; a negative one means no limit.
        let limit = i64::try_from(limit).unwrap_or(-1);
        self.with_reader(|conn| {
            let mut key = Vec::new();
            while let Some(target) = next_seek(&mut key) {
                let (sql, from_key) = match (target, dir) {
                    (Seek::First, _) => (SCAN_ALL, false),
                    (Seek::Last, _) => (SCAN_BACK_ALL, false),
                    (Seek::Key, Direction::Forward) => (SCAN_FROM, true),
                    (Seek::Key, Direction::Reverse) => (SCAN_BACK_FROM, true),
                };
                let mut stmt = conn.prepare_cached(sql).map_err(err("prepare"))?;
                let mut rows = if from_key {
                    stmt.query(params![key.as_slice(), limit])
                } else {
                    stmt.query(params![limit])
                }
                .map_err(err("scan"))?;
                while let Some(row) = rows.next().map_err(err("scan"))? {
                    let k = row.get_ref(0).map_err(err("scan"))?;
                    let v = row.get_ref(1).map_err(err("scan"))?;
                    let (Ok(k), Ok(v)) = (k.as_blob(), v.as_blob()) else {
                        return Err(BenchError::engine(
                            NAME,
                            "scan",
                            "a key or value is not a BLOB",
                        ));
                    };
                    visit(k, v);
                }
            }
            Ok(())
        })
    }

    fn flush(&self) -> Result<()> {
        let w = lock(&self.writer);
        w.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(err("wal_checkpoint"))
    }

    fn compact(&self) -> Result<()> {
        let w = lock(&self.writer);
        w.conn.execute("VACUUM", []).map_err(err("vacuum"))?;
        Ok(())
    }

    fn wait_for_background(&self, _timeout: Duration) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> EngineStats {
        EngineStats::default()
    }

    /// Readers first: the last connection to close checkpoints the WAL and deletes it.
    fn close(self: Box<Self>) -> Result<()> {
        let readers = std::mem::take(&mut *lock(&self.readers));
        for c in readers {
            c.close()
                .map_err(|(_, e)| BenchError::engine(NAME, "close", e))?;
        }
        let w = self
            .writer
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        w.conn
            .close()
            .map_err(|(_, e)| BenchError::engine(NAME, "close", e))
    }
}
