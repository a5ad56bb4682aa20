//! The write path: a queue of writers whose head becomes the *leader*, commits everyone
//! queued behind it with one WAL write (and at most one fsync), applies the batches to the
//! memtable and wakes the followers. While the leader waits on the disk, new writers queue
//! up and form the next group: that is group commit.
//!
//! Only `Sync` writes queue. `Buffered` and `Flush` writes have no fsync to share, and in
//! the queue each follower would pay a sleep and a wake-up, which with more writer threads
//! than cores sets the pace. They commit directly: each logs its batch and inserts it into
//! the memtable under the WAL lock, then publishes it, so writes become visible in log order
//! without waiting for each other (inserting outside the lock would make each writer wait in
//! `publish` for the one logged just before it, often descheduled when writers outnumber
//! cores). Large batches (`PARALLEL_APPLY_MIN_OPS`) are still inserted outside the lock, on
//! several threads, and published in log order; a frozen memtable is flushed only after such
//! in-flight inserts drain (`Memtable::wait_for_writes`). Why, and the measurements:
//! docs/design/write-paths.md.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{background, flush, Db, DbInner, SuperVersion, WalState};
use crate::batch::{BatchOp, Keyspace, WriteBatch};
use crate::error::{Error, Result};
use crate::log::{LogKind, LogWriter};
use crate::memtable::{Memtable, SortedEntry};
use crate::options::{Durability, WriteOptions};
use crate::sst::bloom::key_hash;
use crate::stats::Counters;
use crate::types::{SeqNo, ValueKind};

/// Upper bound on the bytes one leader commits, so one group's latency stays bounded.
const MAX_GROUP_BYTES: usize = 4 << 20;

/// A batch with at least this many ops is put into the memtable by several threads at once
/// (the skiplist takes concurrent inserts; each op carries its own sequence number, and
/// nothing is visible before the group's last sequence is published). Large client-buffered
/// batches ("autoflush off") spent most of their commit in single-threaded inserts.
const PARALLEL_APPLY_MIN_OPS: usize = 4096;
const PARALLEL_APPLY_CHUNK_OPS: usize = 2048;

/// A smaller batch with at least this many ops is still sorted, on the writer's thread, and
/// inserted as a run whose places the skiplist searches for several at a time
/// (`memtable/skiplist/run.rs`). Below, the sort and the run's bookkeeping cost a batch of
/// consecutive keys more than the overlapped searches save a batch of random ones
/// (docs/design/write-paths.md, "Sorted runs").
const SORTED_APPLY_MIN_OPS: usize = 8;

/// How long a writer spins for the WAL lock before sleeping on it (see [`lock_wal`]).
const WAL_LOCK_SPIN: Duration = Duration::from_micros(20);

pub(crate) struct Writer {
    batch: Mutex<Option<WriteBatch>>,
    durability: Durability,
    size_bytes: usize,
    result: Mutex<Option<Result<()>>>,
}

#[derive(Default)]
pub(crate) struct WriteQueue {
    pending: VecDeque<Arc<Writer>>,
    leader_active: bool,
}

/// Applies decoded ops to a memtable, numbering them from `seq`. `live` filters out ops of
/// keyspaces dropped since they were logged (WAL replay).
pub(crate) fn apply_ops<'a>(
    mem: &Memtable,
    seq: SeqNo,
    ops: impl IntoIterator<Item = BatchOp<'a>>,
    live: &dyn Fn(u32) -> bool,
) {
    insert_ops(mem, (seq..).zip(ops), live);
}

/// Inserts numbered ops in order. The memtable's key filter is set before an entry is
/// linked (a reader that finds the entry must pass the filter), and its line is a random one
/// of the filter: an atomic `or` there misses the cache and stalls the writer. So each op's
/// line is prefetched while the op before it is inserted (docs/design/arena-memtable.md).
fn insert_ops<'a>(
    mem: &Memtable,
    ops: impl IntoIterator<Item = (SeqNo, BatchOp<'a>)>,
    live: &dyn Fn(u32) -> bool,
) {
    let mut ops = ops.into_iter().peekable();
    let mut hash = ops.peek().and_then(|(_, op)| op_key_hash(op));
    while let Some((seq, op)) = ops.next() {
        let next = ops.peek().and_then(|(_, op)| op_key_hash(op));
        if let Some(h) = next {
            mem.prefetch(h);
        }
        apply_op(mem, seq, op, hash, live);
        hash = next;
    }
}

/// The key hash a put or delete sets in the memtable's filter.
fn op_key_hash(op: &BatchOp<'_>) -> Option<u64> {
    match *op {
        BatchOp::Put { key, .. } | BatchOp::Delete { key, .. } => Some(key_hash(key)),
        _ => None,
    }
}

fn apply_op(
    mem: &Memtable,
    seq: SeqNo,
    op: BatchOp<'_>,
    h: Option<u64>,
    live: &dyn Fn(u32) -> bool,
) {
    // `h` is the key's hash whenever `insert_ops` computed one; hash here otherwise, never
    // fall back to a made-up value (the filter would then hide the entry).
    let hash = |key: &[u8]| h.unwrap_or_else(|| key_hash(key));
    match op {
        BatchOp::Put { ks, key, value } if live(ks) => {
            mem.insert_hashed(ks, key, hash(key), seq, ValueKind::Put, value)
        }
        BatchOp::Delete { ks, key } if live(ks) => {
            mem.insert_hashed(ks, key, hash(key), seq, ValueKind::Delete, b"")
        }
        BatchOp::DeleteRange { ks, start, end } if live(ks) => {
            mem.add_range_tombstone(ks, start, end, seq)
        }
        _ => {}
    }
}

/// The (keyspace, key) an op inserts at, for sorting a batch before it is applied.
fn op_position<'a>(op: &BatchOp<'a>) -> (u32, &'a [u8]) {
    match *op {
        BatchOp::Put { ks, key, .. } | BatchOp::Delete { ks, key } => (ks, key),
        BatchOp::DeleteRange { ks, start, .. } => (ks, start),
        BatchOp::Ingested => (0, &[]),
    }
}

/// Whether `batch` is inserted on several threads ([`apply_batch`]); a direct write of such
/// a batch also inserts it outside the WAL lock ([`DbInner::commit_direct`]).
fn is_large(batch: &WriteBatch) -> bool {
    batch.count() as usize >= PARALLEL_APPLY_MIN_OPS
}

/// Inserts a batch this process encoded and validated (every op decodes), numbered from
/// `first_seq`: large batches on several threads, mid-size ones as one sorted run, small
/// ones as they come.
fn apply_batch(mem: &Memtable, first_seq: SeqNo, batch: &WriteBatch) {
    if is_large(batch) {
        apply_ops_parallel(mem, first_seq, batch);
    } else if batch.count() as usize >= SORTED_APPLY_MIN_OPS {
        let mut ops = numbered_ops(first_seq, batch);
        ops.sort_unstable_by(key_order);
        insert_sorted_ops(mem, &ops);
    } else {
        apply_ops(
            mem,
            first_seq,
            batch.ops().filter_map(|op| op.ok()),
            &|_| true,
        );
    }
}

/// The batch's ops, each numbered by its place in the batch, to be sorted by [`key_order`]
/// and inserted as a run ([`insert_sorted_ops`]). The numbers keep the last write of a key
/// winning, whatever order the ops are inserted in.
fn numbered_ops(first_seq: SeqNo, batch: &WriteBatch) -> Vec<(SeqNo, BatchOp<'_>)> {
    batch
        .ops()
        .filter_map(|op| op.ok())
        .enumerate()
        .map(|(i, op)| (first_seq + i as u64, op))
        .collect()
}

fn key_order(a: &(SeqNo, BatchOp<'_>), b: &(SeqNo, BatchOp<'_>)) -> std::cmp::Ordering {
    op_position(&a.1).cmp(&op_position(&b.1))
}

/// Inserts a large batch in key order, its sorted run split among threads.
fn apply_ops_parallel(mem: &Memtable, first_seq: SeqNo, batch: &WriteBatch) {
    use rayon::prelude::*;
    let mut ops = numbered_ops(first_seq, batch);
    ops.par_sort_unstable_by(key_order);
    ops.par_chunks(PARALLEL_APPLY_CHUNK_OPS)
        .for_each(|chunk| insert_sorted_ops(mem, chunk));
}

/// Inserts numbered ops sorted by [`key_order`]: puts and deletes with the memtable's run
/// insert, which searches for several of their places at once; range deletes as they come.
fn insert_sorted_ops(mem: &Memtable, ops: &[(SeqNo, BatchOp<'_>)]) {
    let mut run = Vec::with_capacity(ops.len());
    for &(seq, op) in ops {
        let (ks, user_key, kind, value) = match op {
            BatchOp::Put { ks, key, value } => (ks, key, ValueKind::Put, value),
            BatchOp::Delete { ks, key } => (ks, key, ValueKind::Delete, &b""[..]),
            BatchOp::DeleteRange { ks, start, end } => {
                mem.add_range_tombstone(ks, start, end, seq);
                continue;
            }
            BatchOp::Ingested => continue,
        };
        run.push(SortedEntry {
            ks,
            user_key,
            hash: key_hash(user_key),
            seq,
            kind,
            value,
        });
    }
    mem.insert_sorted(&run);
}

impl Db {
    /// Sets `key` to `value` in `ks` (a batch of one).
    pub fn put(&self, ks: &Keyspace, key: &[u8], value: &[u8], wo: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(ks, key, value);
        self.write(b, wo)
    }

    /// Deletes `key` from `ks` (a batch of one).
    pub fn delete(&self, ks: &Keyspace, key: &[u8], wo: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(ks, key);
        self.write(b, wo)
    }

    /// Deletes every key in `[start, end)` with one range tombstone.
    pub fn delete_range(
        &self,
        ks: &Keyspace,
        start: &[u8],
        end: &[u8],
        wo: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(ks, start, end);
        self.write(b, wo)
    }

    /// Applies `batch` atomically: after a crash either all of it is visible or none.
    pub fn write(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        batch.validate()?;
        if batch.is_empty() {
            return Ok(());
        }
        let inner = &self.inner;
        inner.check_poisoned()?;
        {
            let sv = inner.super_version();
            for id in batch.keyspace_ids() {
                if !sv.version.keyspaces.contains_key(id) {
                    return Err(Error::KeyspaceNotFound(format!("id {id}")));
                }
            }
        }
        if wo.durability != Durability::Sync {
            return inner.commit_direct(batch, wo.durability);
        }
        let w = Arc::new(Writer {
            size_bytes: batch.size_bytes(),
            batch: Mutex::new(Some(batch)),
            durability: wo.durability,
            result: Mutex::new(None),
        });
        let mut q = inner.writers.lock();
        q.pending.push_back(Arc::clone(&w));
        loop {
            if let Some(r) = w.result.lock().take() {
                return r;
            }
            let at_head = q.pending.front().is_some_and(|f| Arc::ptr_eq(f, &w));
            if at_head && !q.leader_active {
                break;
            }
            inner.writers_cv.wait(&mut q);
        }
        q.leader_active = true;
        drop(q);

        // Waiting for room happens before the group is formed, so writers arriving
        // meanwhile join this group instead of each paying for the stall.
        let room = inner.make_room();
        let mut q = inner.writers.lock();
        let mut group = Vec::new();
        let mut bytes = 0;
        while let Some(next) = q.pending.front() {
            if !group.is_empty() && bytes + next.size_bytes > MAX_GROUP_BYTES {
                break;
            }
            bytes += next.size_bytes;
            if let Some(n) = q.pending.pop_front() {
                group.push(n);
            }
        }
        drop(q);
        let result = room.and_then(|()| inner.commit_group(&group));
        let mut q = inner.writers.lock();
        for g in &group {
            *g.result.lock() = Some(result.clone());
        }
        q.leader_active = false;
        inner.writers_cv.notify_all();
        drop(q);
        let r = w.result.lock().take();
        r.unwrap_or(result)
    }
}

/// Holds every writer off while alive (see [`DbInner::exclusive_writes`]).
pub(crate) struct ExclusiveWrites<'a> {
    inner: &'a DbInner,
    _direct: parking_lot::RwLockWriteGuard<'a, ()>,
}

impl Drop for ExclusiveWrites<'_> {
    fn drop(&mut self) {
        let mut q = self.inner.writers.lock();
        q.leader_active = false;
        self.inner.writers_cv.notify_all();
    }
}

impl DbInner {
    /// Takes the write leader's place: no write group forms until the guard is dropped,
    /// and none is in flight when this returns.
    pub(crate) fn exclusive_writes(&self) -> ExclusiveWrites<'_> {
        let mut q = self.writers.lock();
        while q.leader_active {
            self.writers_cv.wait(&mut q);
        }
        q.leader_active = true;
        drop(q);
        ExclusiveWrites {
            inner: self,
            _direct: self.write_gate.write(),
        }
    }

    /// A `Buffered` or `Flush` write (see the module comment).
    fn commit_direct(&self, mut batch: WriteBatch, durability: Durability) -> Result<()> {
        let _gate = self.write_gate.read();
        self.make_room()?;
        let count = u64::from(batch.count());
        let mut wal = lock_wal(&self.wal);
        let first_seq = wal.last_seq + 1;
        let last_seq = first_seq + count - 1;
        let rec = batch.encode_with_seq(first_seq);
        let bytes = rec.len() as u64;
        let logged = wal.writer.add_record(rec).map(|_| ()).and_then(|()| {
            if durability == Durability::Flush
                || wal.writer.buffered_bytes() >= self.opts.wal_buffer_bytes
            {
                wal.writer.flush()
            } else {
                Ok(())
            }
        });
        if let Err(e) = logged {
            self.poison(&e);
            return Err(e);
        }
        wal.last_seq = last_seq;
        // The active memtable only changes under the WAL lock: this is the one the record's
        // WAL belongs to.
        let mem = Arc::clone(&self.sv.read().mem);
        if !is_large(&batch) {
            // Inserted and published in log order under the lock: nobody waits for anybody
            // else's insert. (Only a large batch still inserting outside the lock, logged
            // before this one, can make `publish` wait here.)
            apply_batch(&mem, first_seq, &batch);
            self.last_visible.publish(first_seq, last_seq);
            drop(wal);
        } else {
            // Held open until the insert ends: a flush of this memtable waits for it.
            mem.begin_write();
            drop(wal);
            apply_batch(&mem, first_seq, &batch);
            self.last_visible.publish(first_seq, last_seq);
            mem.end_write();
        }
        let c = &self.counters;
        Counters::add(&c.writes, 1);
        Counters::add(&c.write_bytes, bytes);
        Counters::add(&c.wal_bytes, bytes);
        Ok(())
    }

    fn commit_group(&self, group: &[Arc<Writer>]) -> Result<()> {
        let mut wal = lock_wal(&self.wal);
        let first_seq = wal.last_seq + 1;
        let mut seq = first_seq;
        let mut need_sync = false;
        let mut need_flush = false;
        let mut batches = Vec::with_capacity(group.len());
        let mut bytes = 0u64;
        for g in group {
            let Some(mut b) = g.batch.lock().take() else {
                continue;
            };
            let rec = b.encode_with_seq(seq);
            bytes += rec.len() as u64;
            if let Err(e) = wal.writer.add_record(rec).map(|_| ()) {
                self.poison(&e);
                return Err(e);
            }
            need_sync |= g.durability == Durability::Sync;
            need_flush |= g.durability == Durability::Flush;
            batches.push((seq, b));
            seq += u64::from(batches.last().map(|(_, b)| b.count()).unwrap_or(0));
        }
        let io = if need_sync {
            Counters::add(&self.counters.wal_syncs, 1);
            wal.sync(&self.opts, seq)
        } else if need_flush || wal.writer.buffered_bytes() >= self.opts.wal_buffer_bytes {
            wal.writer.flush()
        } else {
            Ok(())
        };
        if let Err(e) = io {
            self.poison(&e);
            return Err(e);
        }
        // The active memtable only changes under the WAL lock, which is held here.
        let mem = Arc::clone(&self.sv.read().mem);
        for (s, b) in &batches {
            apply_batch(&mem, *s, b);
        }
        wal.last_seq = seq - 1;
        // Direct writes logged before this group may still be inserting.
        self.last_visible.publish(first_seq, seq - 1);
        let c = &self.counters;
        Counters::add(&c.writes, group.len() as u64);
        Counters::add(&c.grouped_writes, group.len().saturating_sub(1) as u64);
        Counters::add(&c.write_bytes, bytes);
        Counters::add(&c.wal_bytes, bytes);
        Ok(())
    }

    /// Blocks or slows the leader until the memtable has room and level 0 is not too deep.
    pub(crate) fn make_room(&self) -> Result<()> {
        let o = &self.opts;
        let mut slowed = false;
        loop {
            self.check_poisoned()?;
            let epoch = self.bg.lock().epoch;
            let sv = self.super_version();
            let l0 = max_l0_files(&sv);
            let mem_full = sv.mem.approx_bytes() >= o.memtable_size_bytes;
            if o.background_work {
                let must_wait = l0 >= o.l0_stop_trigger
                    || (mem_full && sv.imms.len() >= o.max_immutable_memtables);
                if must_wait {
                    let t = Instant::now();
                    let mut bg = self.bg.lock();
                    if bg.epoch == epoch && !bg.shutting_down {
                        self.bg_cv.wait_for(&mut bg, Duration::from_millis(100));
                    }
                    Counters::add(&self.counters.stall_micros, t.elapsed().as_micros() as u64);
                    continue;
                }
                if l0 >= o.l0_slowdown_trigger && !slowed {
                    // The delay grows with how far level 0 is past the slowdown point, so
                    // writers slow down smoothly instead of hitting the stop wall.
                    let span = o
                        .l0_stop_trigger
                        .saturating_sub(o.l0_slowdown_trigger)
                        .max(1);
                    let over = (l0 + 1 - o.l0_slowdown_trigger) as u64;
                    let delay = Duration::from_micros(1000 * over / span as u64);
                    std::thread::sleep(delay);
                    Counters::add(&self.counters.slowdown_micros, delay.as_micros() as u64);
                    slowed = true;
                    continue;
                }
            }
            if mem_full {
                {
                    let mut wal = self.wal.lock();
                    // Direct writers get here concurrently: the first one freezes the full
                    // memtable, the others find a fresh one.
                    if self.sv.read().mem.approx_bytes() >= o.memtable_size_bytes {
                        self.rotate_memtable(&mut wal)?;
                    }
                }
                if o.background_work {
                    self.signal_bg();
                } else {
                    // No background threads: the writer that filled the memtable does the
                    // flush and any compaction it triggers (deterministic, for tests).
                    flush::flush_all_immutables(self)?;
                    while background::compact_once(self)? {}
                }
            }
            return Ok(());
        }
    }

    /// Freezes the active memtable and starts a new WAL for its successor.
    /// REQUIRES: the WAL lock (passed in).
    pub(crate) fn rotate_memtable(&self, wal: &mut WalState) -> Result<()> {
        if self.sv.read().mem.is_empty() {
            return Ok(());
        }
        let r = (|| {
            wal.end_current()?;
            let number = self.alloc_file_number();
            let path = self.wal_path(number);
            let file = super::open::create_wal_file(&*self.wal_vfs, &path, wal.maps_next())?;
            let mut writer = LogWriter::new(file, path, LogKind::Wal)?;
            writer.flush()?;
            self.wal_vfs.sync_dir(&self.wal_dir)?;
            Ok::<_, Error>((writer, number))
        })();
        let (writer, number) = match r {
            Ok(x) => x,
            Err(e) => {
                self.poison(&e);
                return Err(e);
            }
        };
        wal.switch_to(writer, number, &self.opts);
        let mut sv = self.sv.write();
        let mut imms = Vec::with_capacity(sv.imms.len() + 1);
        imms.push(Arc::clone(&sv.mem));
        imms.extend(sv.imms.iter().cloned());
        *sv = Arc::new(SuperVersion {
            mem: Arc::new(Memtable::new(number, self.opts.memtable_filter_bytes())),
            imms,
            version: Arc::clone(&sv.version),
        });
        Ok(())
    }
}

/// Takes the WAL lock, spinning up to [`WAL_LOCK_SPIN`] before sleeping on it. The lock is
/// held for a few microseconds (handing a record to the OS and a memtable insert), shorter than
/// a sleep and a wake-up; `parking_lot` gives up spinning after a few `sched_yield`s, and
/// with more writer threads than cores each yield hands the core to another writer that
/// then finds the lock taken too (docs/design/write-paths.md).
fn lock_wal(m: &Mutex<WalState>) -> parking_lot::MutexGuard<'_, WalState> {
    if let Some(g) = m.try_lock() {
        return g;
    }
    let start = Instant::now();
    loop {
        for _ in 0..32 {
            std::hint::spin_loop();
            if !m.is_locked() {
                if let Some(g) = m.try_lock() {
                    return g;
                }
            }
        }
        if start.elapsed() >= WAL_LOCK_SPIN {
            return m.lock();
        }
    }
}

pub(crate) fn max_l0_files(sv: &SuperVersion) -> usize {
    sv.version
        .keyspaces
        .values()
        .map(|k| k.levels.first().map_or(0, |l| l.len()))
        .max()
        .unwrap_or(0)
}
