//! The process-wide timestamp oracle: cell timestamps the caller does not choose.
//!
//! Timestamps are nanoseconds since the Unix epoch, strictly increasing across every
//! thread of the process (`max(now, last + 1)`), so that two puts of one column always make
//! two versions even within one clock tick or after the clock steps back. They are not
//! unique across processes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Timestamps are below this; `u64::MAX` is reserved (a scan's time range is half-open, so
/// no scan could select it).
pub const MAX_TIMESTAMP: u64 = u64::MAX - 1;

static LAST_TIMESTAMP: AtomicU64 = AtomicU64::new(0);

/// Wall-clock time in nanoseconds since the Unix epoch (0 before it, saturating far after).
pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(MAX_TIMESTAMP))
        .unwrap_or(0)
}

/// A timestamp greater than every one this process handed out before.
pub fn next_timestamp() -> u64 {
    reserve_timestamps(1)
}

/// Reserves `n` consecutive timestamps (for a bulk load: one per line) and returns the
/// first; all of them are greater than every one handed out before.
pub fn reserve_timestamps(n: u64) -> u64 {
    let n = n.max(1);
    let now = now_nanos();
    let mut last = LAST_TIMESTAMP.load(Ordering::Relaxed);
    loop {
        let first = now.max(last.saturating_add(1)).min(MAX_TIMESTAMP);
        let end = first.saturating_add(n - 1).min(MAX_TIMESTAMP);
        match LAST_TIMESTAMP.compare_exchange_weak(last, end, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return first,
            Err(seen) => last = seen,
        }
    }
}
