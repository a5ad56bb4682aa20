//! Requests of the last few minutes, per protocol and method: counts, errors and a coarse
//! latency histogram in time slots, so the status page can show current rates and
//! p50/p99 (the Prometheus histograms are cumulative since start, which hides the present).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::metrics::Protocol;

/// Width of one time slot.
const SLOT: Duration = Duration::from_secs(10);
/// Slots kept: 30 × 10 s = the last five minutes.
const SLOTS: usize = 30;
/// Latency buckets: bucket `i` holds latencies below `FIRST_BOUND_US × GROWTH^i` µs.
const LATENCY_BUCKETS: usize = 48;
const FIRST_BOUND_US: f64 = 10.0;
const GROWTH: f64 = 1.4;

#[derive(Clone)]
struct Slot {
    /// Which slot of time since the window was made this holds.
    index: u64,
    count: u64,
    errors: u64,
    latency: [u32; LATENCY_BUCKETS],
}

impl Slot {
    fn empty(index: u64) -> Slot {
        Slot {
            index,
            count: 0,
            errors: 0,
            latency: [0; LATENCY_BUCKETS],
        }
    }
}

/// One method's summary over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodSummary {
    pub protocol: Protocol,
    pub method: String,
    pub requests: u64,
    pub errors: u64,
    /// Requests per second over the window (or since start, if that is shorter).
    pub rate: f64,
    /// Upper bounds of the latency buckets holding the median and the 99th percentile.
    pub p50: Duration,
    pub p99: Duration,
}

/// Recent requests per (protocol, method). Cheap to feed: one short lock per request.
pub struct RecentWindow {
    start: Instant,
    methods: Mutex<HashMap<(Protocol, String), Vec<Slot>>>,
}

impl Default for RecentWindow {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket_of(took: Duration) -> usize {
    let us = took.as_secs_f64() * 1e6;
    if us < FIRST_BOUND_US {
        return 0;
    }
    let i = ((us / FIRST_BOUND_US).ln() / GROWTH.ln()).floor() as usize + 1;
    i.min(LATENCY_BUCKETS - 1)
}

fn bucket_bound(i: usize) -> Duration {
    Duration::from_secs_f64(FIRST_BOUND_US * GROWTH.powi(i as i32) * 1e-6)
}

impl RecentWindow {
    pub fn new() -> RecentWindow {
        RecentWindow {
            start: Instant::now(),
            methods: Mutex::new(HashMap::new()),
        }
    }

    fn slot_index(&self) -> u64 {
        (self.start.elapsed().as_millis() / SLOT.as_millis()) as u64
    }

    pub fn observe(&self, protocol: Protocol, method: &str, took: Duration, ok: bool) {
        let index = self.slot_index();
        let mut methods = self.methods.lock();
        let slots = match methods.get_mut(&(protocol, method.to_string())) {
            Some(s) => s,
            None => methods
                .entry((protocol, method.to_string()))
                .or_insert_with(|| vec![Slot::empty(u64::MAX); SLOTS]),
        };
        let slot = &mut slots[(index % SLOTS as u64) as usize];
        if slot.index != index {
            *slot = Slot::empty(index);
        }
        slot.count += 1;
        if !ok {
            slot.errors += 1;
        }
        slot.latency[bucket_of(took)] += 1;
    }

    /// Every method seen in the window, busiest first.
    pub fn summary(&self) -> Vec<MethodSummary> {
        let now = self.slot_index();
        let oldest = now.saturating_sub(SLOTS as u64 - 1);
        let window = self.start.elapsed().min(SLOT * SLOTS as u32).as_secs_f64();
        let methods = self.methods.lock();
        let mut out: Vec<MethodSummary> = methods
            .iter()
            .filter_map(|((protocol, method), slots)| {
                let live = slots
                    .iter()
                    .filter(|s| s.index != u64::MAX && s.index >= oldest && s.index <= now);
                let mut merged = Slot::empty(now);
                for s in live {
                    merged.count += s.count;
                    merged.errors += s.errors;
                    for (m, x) in merged.latency.iter_mut().zip(s.latency.iter()) {
                        *m += x;
                    }
                }
                (merged.count > 0).then(|| MethodSummary {
                    protocol: *protocol,
                    method: method.clone(),
                    requests: merged.count,
                    errors: merged.errors,
                    rate: merged.count as f64 / window.max(1.0),
                    p50: quantile(&merged, 0.50),
                    p99: quantile(&merged, 0.99),
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.method.cmp(&b.method))
        });
        out
    }
}

fn quantile(slot: &Slot, q: f64) -> Duration {
    let rank = ((slot.count as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0u64;
    for (i, n) in slot.latency.iter().enumerate() {
        seen += u64::from(*n);
        if seen >= rank {
            return bucket_bound(i);
        }
    }
    bucket_bound(LATENCY_BUCKETS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_bound_the_observed_latencies() {
        let w = RecentWindow::new();
        for _ in 0..98 {
            w.observe(Protocol::Http, "get", Duration::from_micros(100), true);
        }
        for _ in 0..2 {
            w.observe(Protocol::Http, "get", Duration::from_millis(50), false);
        }
        w.observe(Protocol::Grpc, "scan", Duration::from_millis(1), true);
        let s = w.summary();
        assert_eq!(s.len(), 2);
        let get = &s[0];
        assert_eq!(
            (get.method.as_str(), get.requests, get.errors),
            ("get", 100, 2)
        );
        assert!(get.p50 >= Duration::from_micros(100) && get.p50 < Duration::from_micros(150));
        assert!(get.p99 >= Duration::from_millis(50) && get.p99 < Duration::from_millis(75));
    }
}
