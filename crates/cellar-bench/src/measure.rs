//! Latency histograms, thread fan-out with a common start, and the before/after probes
//! (engine counters, `/proc/self/io`, peak RSS) around a timed run.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine::{Engine, EngineStats};
use crate::error::Result;
use crate::procfs::{self, IoCounters};

/// Per-operation latencies in nanoseconds (1 ns to 1 h, 3 significant digits).
#[derive(Clone)]
pub struct Latency(Histogram<u64>);

impl Default for Latency {
    // The bounds are constants that hdrhistogram accepts (low >= 1, high >= 2 * low,
    // 3 significant digits), so this cannot fail.
    #[allow(clippy::expect_used)]
    fn default() -> Self {
        Latency(Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"))
    }
}

impl Latency {
    pub fn record(&mut self, d: Duration) {
        self.record_ns(d.as_nanos() as u64);
    }

    pub fn record_ns(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides: cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// Latency at quantile `q` in microseconds (0 when nothing was recorded).
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.value_at_quantile(q) as f64 / 1000.0
    }
}

/// What one thread of a timed run did.
#[derive(Default, Clone)]
pub struct ThreadOut {
    pub ops: u64,
    /// Reads that found their key (or scan entries, or seeks landing on their key).
    pub found: u64,
    pub latency: Latency,
}

impl ThreadOut {
    pub fn absorb(&mut self, o: &ThreadOut) {
        self.ops += o.ops;
        self.found += o.found;
        self.latency.merge(&o.latency);
    }
}

/// The result of a timed run.
pub struct Timed {
    pub ops: u64,
    pub seconds: f64,
    pub found: Option<u64>,
    pub latency: Latency,
    /// What one latency sample covers: "op", "batch", "entry (avg of 1000)".
    pub latency_unit: &'static str,
    /// readwhilewriting: the writer's rate.
    pub writer_ops_per_sec: Option<f64>,
}

impl Timed {
    pub fn new(out: ThreadOut, elapsed: Duration, unit: &'static str, found: bool) -> Timed {
        Timed {
            ops: out.ops,
            seconds: elapsed.as_secs_f64(),
            found: found.then_some(out.found),
            latency: out.latency,
            latency_unit: unit,
            writer_ops_per_sec: None,
        }
    }

    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Runs `threads` threads: each first builds its state with `prep` (untimed), then all
/// start `run` together. Elapsed time runs from the first thread's start to the last one's
/// end, as each thread sees them (a coordinating thread may not get a core in time to
/// read the clock while the workers run).
pub fn parallel<S, P, R>(threads: usize, prep: P, run: R) -> Result<(Duration, ThreadOut)>
where
    P: Fn(usize) -> S + Sync,
    R: Fn(S) -> Result<ThreadOut> + Sync,
{
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (prep, run, barrier) = (&prep, &run, &barrier);
                s.spawn(move || {
                    let state = prep(t);
                    barrier.wait();
                    let start = Instant::now();
                    let out = run(state);
                    (start, Instant::now(), out)
                })
            })
            .collect();
        barrier.wait();
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let mut total = ThreadOut::default();
        let mut span: Option<(Instant, Instant)> = None;
        for j in joined {
            match j {
                Ok((start, end, out)) => {
                    total.absorb(&out?);
                    span = Some(match span {
                        None => (start, end),
                        Some((s, e)) => (s.min(start), e.max(end)),
                    });
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        let elapsed = span.map_or(Duration::ZERO, |(s, e)| e - s);
        Ok((elapsed, total))
    })
}

/// Splits `total` operations over `threads` (the first ones take the remainder).
pub fn share(total: u64, threads: usize, t: usize) -> u64 {
    let threads = threads.max(1) as u64;
    total / threads + u64::from((t as u64) < total % threads)
}

/// Counters taken just before a timed run.
pub struct Probe {
    io: Option<IoCounters>,
    stats: EngineStats,
    rss_scoped: bool,
}

/// Per-operation deltas over a timed run.
#[derive(Debug, Clone, Default)]
pub struct Deltas {
    pub device_reads_per_op: Option<f64>,
    pub device_reads_method: String,
    pub io_syscr_per_op: Option<f64>,
    pub io_read_bytes_per_op: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    /// "workload": VmHWM was reset before the run; "process": it could not be.
    pub peak_rss_scope: &'static str,
    pub stall_micros: Option<u64>,
    pub wal_syncs: Option<u64>,
    pub resident_index_filter_bytes: Option<u64>,
    /// Files Cellar's cold-start warm-up warmed during the run, and the bytes it read (not
    /// those it found in the page cache).
    pub warm_ups: Option<u64>,
    pub warm_up_bytes: Option<u64>,
}

impl Deltas {
    /// A note for the record when the engine warmed files during the run: its reads then
    /// did not all go to the device.
    pub fn warm_up_note(&self) -> Option<String> {
        match (self.warm_ups, self.warm_up_bytes) {
            (Some(files), Some(bytes)) if bytes > 0 => Some(format!(
                "cold-start warm-up warmed {files} files during the run, reading {:.0} MB",
                bytes as f64 / 1e6
            )),
            _ => None,
        }
    }
}

impl Probe {
    pub fn start(engine: &dyn Engine) -> Probe {
        let rss_scoped = procfs::reset_peak_rss();
        Probe {
            stats: engine.stats(),
            io: procfs::io_counters(),
            rss_scoped,
        }
    }

    pub fn finish(self, engine: &dyn Engine, ops: u64) -> Deltas {
        let io = procfs::io_counters();
        let peak = procfs::peak_rss_bytes();
        let after = engine.stats();
        let per_op = |d: u64| d as f64 / ops.max(1) as f64;
        let io_delta = self.io.zip(io).map(|(a, b)| {
            (
                b.syscr.saturating_sub(a.syscr),
                b.read_bytes.saturating_sub(a.read_bytes),
            )
        });
        let delta = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
        let (device_reads_per_op, method) = match delta(self.stats.device_reads, after.device_reads)
        {
            Some(d) => (Some(per_op(d)), after.device_reads_method.to_string()),
            None => (
                io_delta.map(|(syscr, _)| per_op(syscr)),
                "/proc/self/io syscr".to_string(),
            ),
        };
        Deltas {
            device_reads_per_op,
            device_reads_method: method,
            io_syscr_per_op: io_delta.map(|(s, _)| per_op(s)),
            io_read_bytes_per_op: io_delta.map(|(_, b)| per_op(b)),
            peak_rss_bytes: peak,
            peak_rss_scope: if self.rss_scoped {
                "workload"
            } else {
                "process"
            },
            stall_micros: delta(self.stats.stall_micros, after.stall_micros),
            wal_syncs: delta(self.stats.wal_syncs, after.wal_syncs),
            resident_index_filter_bytes: after.resident_index_filter_bytes,
            warm_ups: delta(self.stats.warm_ups, after.warm_ups),
            warm_up_bytes: delta(self.stats.warm_up_bytes, after.warm_up_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_up_note_only_when_the_engine_warmed_files() {
        let mut d = Deltas::default();
        assert_eq!(d.warm_up_note(), None, "an engine without the counters");
        d.warm_ups = Some(0);
        d.warm_up_bytes = Some(0);
        assert_eq!(d.warm_up_note(), None, "nothing warmed");
        d.warm_ups = Some(2);
        d.warm_up_bytes = Some(130_000_000);
        assert_eq!(
            d.warm_up_note().as_deref(),
            Some("cold-start warm-up warmed 2 files during the run, reading 130 MB")
        );
    }

    #[test]
    fn share_splits_exactly() {
        for (total, threads) in [(10u64, 3usize), (2, 16), (1000, 16), (0, 4)] {
            let sum: u64 = (0..threads).map(|t| share(total, threads, t)).sum();
            assert_eq!(sum, total);
        }
        assert_eq!(share(10, 3, 0), 4);
        assert_eq!(share(10, 3, 2), 3);
    }

    #[test]
    fn latency_quantiles_in_microseconds() {
        let mut l = Latency::default();
        for ns in 1..=1000u64 {
            l.record_ns(ns * 1000);
        }
        let p50 = l.quantile_us(0.5);
        let p99 = l.quantile_us(0.99);
        assert!((499.0..=501.0).contains(&p50), "{p50}");
        assert!((989.0..=991.0).contains(&p99), "{p99}");
        assert_eq!(Latency::default().quantile_us(0.5), 0.0);
    }

    #[test]
    fn parallel_runs_every_thread() {
        let (_, out) = parallel(
            4,
            |t| t as u64,
            |x| {
                Ok(ThreadOut {
                    ops: x + 1,
                    ..ThreadOut::default()
                })
            },
        )
        .unwrap();
        assert_eq!(out.ops, 1 + 2 + 3 + 4);
        let (elapsed, _) = parallel(
            2,
            |_| (),
            |()| {
                std::thread::sleep(Duration::from_millis(20));
                Ok(ThreadOut::default())
            },
        )
        .unwrap();
        assert!(elapsed >= Duration::from_millis(20), "{elapsed:?}");
    }
}
