//! The sequence number new reads see, advanced in log order.
//!
//! A writer whose batch was logged after another's must not become visible first (a reader
//! would see the later write without the earlier one), so `publish` waits for the sequence
//! just before its own. Most writes insert and publish under the WAL lock and so never
//! wait; a wait happens behind a large batch (`write::PARALLEL_APPLY_MIN_OPS`), which
//! inserts outside the lock on several threads and takes milliseconds. The waiter spins
//! briefly and then sleeps until a publish wakes it: with more writer threads than cores,
//! waiters that spin or `yield_now` instead compete for the CPU with the writers they wait
//! for (docs/design/write-paths.md).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};

use parking_lot::{Condvar, Mutex};

use crate::types::SeqNo;

/// Spins before sleeping: enough for a predecessor finishing on another core, short
/// against a scheduler time slice and against a large batch's insert.
const SPINS_BEFORE_SLEEP: u32 = 64;

pub(crate) struct VisibleSeq {
    seq: AtomicU64,
    /// Publishers asleep in `publish`; a publish takes `lock` to wake them only when
    /// there are some, so the uncontended path makes no system call.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl VisibleSeq {
    pub fn new(seq: SeqNo) -> Self {
        VisibleSeq {
            seq: AtomicU64::new(seq),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Highest sequence number whose write is in the memtable.
    pub fn load(&self) -> SeqNo {
        self.seq.load(SeqCst)
    }

    /// Sets the visible sequence outright. REQUIRES: no write is in flight (the caller
    /// holds every writer off, as ingest does).
    pub fn store(&self, seq: SeqNo) {
        self.seq.store(seq, SeqCst);
        self.wake();
    }

    /// Makes sequences up to `last` visible once every sequence before `first` is.
    pub fn publish(&self, first: SeqNo, last: SeqNo) {
        let ready = || self.seq.load(SeqCst) == first - 1;
        let mut spins = 0;
        while !ready() && spins < SPINS_BEFORE_SLEEP {
            std::hint::spin_loop();
            spins += 1;
        }
        if !ready() {
            let mut g = self.lock.lock();
            // Registered before the re-check: a publisher that stores after this sees a
            // sleeper and takes the lock to wake it, which it cannot do before `wait`
            // releases the lock (no lost wake-up).
            self.sleepers.fetch_add(1, SeqCst);
            while !ready() {
                self.cv.wait(&mut g);
            }
            self.sleepers.fetch_sub(1, SeqCst);
        }
        self.seq.store(last, SeqCst);
        self.wake();
    }

    fn wake(&self) {
        if self.sleepers.load(SeqCst) > 0 {
            let _g = self.lock.lock();
            self.cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// More publishers than cores, started in reverse log order: each returns only once
    /// its sequence (and every earlier one) is visible, and none is lost to a missed
    /// wake-up (the test would hang).
    #[test]
    fn publishes_in_log_order_with_more_threads_than_cores() {
        for _round in 0..20 {
            let v = Arc::new(VisibleSeq::new(0));
            let threads: Vec<_> = (1..=16u64)
                .rev()
                .map(|s| {
                    let v = Arc::clone(&v);
                    std::thread::spawn(move || {
                        v.publish(s, s);
                        v.load()
                    })
                })
                .collect();
            for (t, s) in threads.into_iter().zip((1..=16u64).rev()) {
                let seen = t.join().expect("publisher thread");
                assert!(seen >= s, "publish({s}) returned with {seen} visible");
            }
            assert_eq!(v.load(), 16);
        }
    }

    #[test]
    fn a_batch_publishes_its_whole_range() {
        let v = VisibleSeq::new(10);
        v.publish(11, 15);
        assert_eq!(v.load(), 15);
        v.store(20);
        v.publish(21, 21);
        assert_eq!(v.load(), 21);
    }
}
