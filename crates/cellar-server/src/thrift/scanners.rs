//! Open scanners (`scannerOpen*` ... `scannerClose`): ids are i32 from a counter, each
//! scanner belongs to the connection that opened it (closed with it), is capped per
//! connection and in total, and expires after `--scanner-idle-timeout` without a read.
//! The `open_scanners` gauge follows every insert and removal.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::metrics::Metrics;
use crate::rows::{Row, RowScanner};

/// Expired ids remembered, so that their next read says "expired" rather than "invalid".
const EXPIRED_MEMORY: usize = 4096;

/// One open scan.
pub struct OpenScanner {
    pub rows: RowScanner,
    /// Write `sortedColumns` rather than `columns`.
    pub sort_columns: bool,
    /// Cells per result (HBase's `setBatching`): longer rows come back in parts.
    pub batch_cells: Option<usize>,
    /// Parts of a split row not returned yet.
    pub pending: VecDeque<Row>,
}

struct Slot {
    conn: u64,
    last_used: Instant,
    scanner: Arc<Mutex<OpenScanner>>,
}

#[derive(Default)]
struct Inner {
    slots: HashMap<i32, Slot>,
    per_conn: HashMap<u64, usize>,
    expired: HashMap<i32, Duration>,
    expired_order: VecDeque<i32>,
    next_id: i32,
}

/// Why a scanner could not be opened or found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScannerError {
    #[error(
        "this connection already has {0} open scanners (--max-scanners-per-connection); \
         close scanners when done (scannerClose)"
    )]
    PerConnection(usize),
    #[error("the server already has {0} open scanners (--max-scanners); close idle ones")]
    Total(usize),
    #[error("scanner ID is invalid: no open scanner has id {0}")]
    Unknown(i32),
    #[error(
        "scanner ID is invalid: scanner {id} expired after {secs} s of inactivity \
         (--scanner-idle-timeout); open a new scanner"
    )]
    Expired { id: i32, secs: u64 },
}

/// Every open scanner of one Thrift listener.
pub struct ScannerRegistry {
    inner: Mutex<Inner>,
    per_conn_limit: usize,
    total_limit: usize,
    idle: Duration,
}

impl ScannerRegistry {
    pub fn new(per_conn_limit: usize, total_limit: usize, idle: Duration) -> ScannerRegistry {
        ScannerRegistry {
            inner: Mutex::new(Inner {
                next_id: 1,
                ..Inner::default()
            }),
            per_conn_limit,
            total_limit,
            idle,
        }
    }

    pub fn idle_timeout(&self) -> Duration {
        self.idle
    }

    /// Registers a scanner of connection `conn` and returns its id.
    pub fn open(
        &self,
        conn: u64,
        scanner: OpenScanner,
        metrics: &Metrics,
    ) -> Result<i32, ScannerError> {
        let mut inner = self.inner.lock();
        let mine = inner.per_conn.get(&conn).copied().unwrap_or(0);
        if mine >= self.per_conn_limit {
            metrics.limit_hit("scanners_per_connection");
            return Err(ScannerError::PerConnection(self.per_conn_limit));
        }
        if inner.slots.len() >= self.total_limit {
            metrics.limit_hit("scanners");
            return Err(ScannerError::Total(self.total_limit));
        }
        let mut id = inner.next_id;
        while inner.slots.contains_key(&id) || id <= 0 {
            id = id.wrapping_add(1).max(1);
        }
        inner.next_id = id.wrapping_add(1).max(1);
        inner.expired.remove(&id);
        inner.slots.insert(
            id,
            Slot {
                conn,
                last_used: Instant::now(),
                scanner: Arc::new(Mutex::new(scanner)),
            },
        );
        *inner.per_conn.entry(conn).or_insert(0) += 1;
        metrics.open_scanners.inc();
        Ok(id)
    }

    /// The scanner `id`, marked as used now; an idle one is expired here.
    pub fn get(&self, id: i32, metrics: &Metrics) -> Result<Arc<Mutex<OpenScanner>>, ScannerError> {
        let mut inner = self.inner.lock();
        let now = Instant::now();
        let idle = match inner.slots.get(&id) {
            Some(slot) => now.duration_since(slot.last_used) >= self.idle,
            None => return Err(lookup_error(&inner, id)),
        };
        if idle {
            expire(&mut inner, id, self.idle, metrics);
            return Err(lookup_error(&inner, id));
        }
        match inner.slots.get_mut(&id) {
            Some(slot) => {
                slot.last_used = now;
                Ok(Arc::clone(&slot.scanner))
            }
            None => Err(ScannerError::Unknown(id)),
        }
    }

    /// Marks a scanner as used (after a long read, so that its length does not count
    /// as idleness).
    pub fn touch(&self, id: i32) {
        if let Some(slot) = self.inner.lock().slots.get_mut(&id) {
            slot.last_used = Instant::now();
        }
    }

    pub fn close(&self, id: i32, metrics: &Metrics) -> Result<(), ScannerError> {
        let mut inner = self.inner.lock();
        if remove(&mut inner, id, metrics) {
            Ok(())
        } else {
            Err(lookup_error(&inner, id))
        }
    }

    /// Closes every scanner of a connection that has closed.
    pub fn close_connection(&self, conn: u64, metrics: &Metrics) {
        let mut inner = self.inner.lock();
        let ids: Vec<i32> = inner
            .slots
            .iter()
            .filter(|(_, s)| s.conn == conn)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            remove(&mut inner, id, metrics);
        }
        inner.per_conn.remove(&conn);
    }

    /// Closes every scanner idle for longer than the timeout; returns how many.
    pub fn sweep(&self, metrics: &Metrics) -> usize {
        let mut inner = self.inner.lock();
        let now = Instant::now();
        let idle: Vec<i32> = inner
            .slots
            .iter()
            .filter(|(_, s)| now.duration_since(s.last_used) >= self.idle)
            .map(|(id, _)| *id)
            .collect();
        for &id in &idle {
            expire(&mut inner, id, self.idle, metrics);
        }
        idle.len()
    }

    pub fn open_count(&self) -> usize {
        self.inner.lock().slots.len()
    }
}

fn lookup_error(inner: &Inner, id: i32) -> ScannerError {
    match inner.expired.get(&id) {
        Some(after) => ScannerError::Expired {
            id,
            secs: after.as_secs(),
        },
        None => ScannerError::Unknown(id),
    }
}

fn remove(inner: &mut Inner, id: i32, metrics: &Metrics) -> bool {
    let Some(slot) = inner.slots.remove(&id) else {
        return false;
    };
    if let Some(n) = inner.per_conn.get_mut(&slot.conn) {
        *n = n.saturating_sub(1);
    }
    metrics.open_scanners.dec();
    true
}

fn expire(inner: &mut Inner, id: i32, after: Duration, metrics: &Metrics) {
    if remove(inner, id, metrics) {
        metrics.scanners_expired.inc();
        inner.expired.insert(id, after);
        inner.expired_order.push_back(id);
        while inner.expired_order.len() > EXPIRED_MEMORY {
            if let Some(old) = inner.expired_order.pop_front() {
                inner.expired.remove(&old);
            }
        }
    }
}
