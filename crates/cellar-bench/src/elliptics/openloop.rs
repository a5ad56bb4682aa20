//! The open-loop reader and the max-rate search of `cellar-bench elliptics`.
//!
//! Open loop: request `j` is due at `start + j / rps`, whatever happened to the requests
//! before it. A pool of reader threads takes the next request number, sleeps until it is
//! due and serves it; its latency runs from the time it was DUE, not from when a thread got
//! to it. A closed loop (each thread issuing its next request when the last one returns)
//! waits out a slow reply before asking again and so never sees the queue that the slow
//! reply would have built at a real server ("coordinated omission"); here a slow engine
//! shows as requests that wait for a free thread, and that wait is part of their latency.
//!
//! So that a step ends even when the engine cannot keep up, requests stop being issued
//! `grace` after the last one was due: those still waiting are counted as `unserved` and
//! recorded with the latency they had reached by then (a lower bound of what they would
//! have had), so an overloaded step fails its latency criterion instead of running on.
//!
//! [`RateSearch`] is the policy of the max-rate search, a pure function of the steps seen
//! so far (tested without an engine): double from the start rate while steps pass, then
//! bisect between the last pass and the first fail until they are within 10%.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::measure::Latency;

/// One open-loop run: `rps` requests per second for `duration`, served by `threads`.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub rps: f64,
    pub duration: Duration,
    pub threads: usize,
    /// How long after the last due time requests are still served.
    pub grace: Duration,
}

impl Plan {
    pub fn requests(&self) -> u64 {
        (self.rps * self.duration.as_secs_f64()).round().max(1.0) as u64
    }
}

/// What an open-loop run measured.
#[derive(Clone)]
pub struct Outcome {
    pub scheduled: u64,
    pub completed: u64,
    /// Requests whose op answered `true` (a read that found its key).
    pub found: u64,
    /// Requests not served before the grace period ended.
    pub unserved: u64,
    /// From the first due time to the last completion, at least `scheduled / rps`.
    pub seconds: f64,
    /// Due time to completion (queueing included), unserved requests at their lower bound.
    pub latency: Latency,
    /// Start of the op to its completion (the engine's own time).
    pub service: Latency,
    /// The `SLOWEST_KEPT` served requests with the longest latency, slowest first: when a
    /// tail comes from one stall, their due times say when it was.
    pub slowest: Vec<Slow>,
}

/// How many of the slowest requests an [`Outcome`] keeps.
pub const SLOWEST_KEPT: usize = 5;

/// One slow request: when it was due (seconds after the first was), its latency from then,
/// and the engine's own time for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slow {
    pub due_s: f64,
    pub latency: Duration,
    pub service: Duration,
}

/// Adds `s` to `kept` (slowest first) if it is among the `SLOWEST_KEPT` slowest.
fn keep_slowest(kept: &mut Vec<Slow>, s: Slow) {
    let at = kept.partition_point(|k| k.latency >= s.latency);
    if at < SLOWEST_KEPT {
        kept.insert(at, s);
        kept.truncate(SLOWEST_KEPT);
    }
}

impl Slow {
    /// `12.3 ms due at 4.56 s (service 11.9 ms)`.
    pub fn describe(&self) -> String {
        format!(
            "{:.1} ms due at {:.2} s (service {:.1} ms)",
            self.latency.as_secs_f64() * 1e3,
            self.due_s,
            self.service.as_secs_f64() * 1e3
        )
    }
}

impl Outcome {
    pub fn achieved_rps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.completed as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Runs `plan`, calling `op(j)` for request `j` (`0..plan.requests()`) from the pool.
pub fn run<F>(plan: &Plan, op: F) -> Result<Outcome>
where
    F: Fn(u64) -> Result<bool> + Sync,
{
    let total = plan.requests();
    let threads = plan.threads.max(1);
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let first_error = Mutex::new(None);
    let merged = Mutex::new((Latency::default(), Latency::default(), 0u64, 0u64, 0u64));
    let slowest = Mutex::new(Vec::new());
    let last_end = Mutex::new(None::<Instant>);
    // A little ahead, so that every thread is up before the first request is due.
    let start = Instant::now() + Duration::from_millis(20);
    let due = |j: u64| start + Duration::from_secs_f64(j as f64 / plan.rps);
    let stop_serving = due(total.saturating_sub(1)) + plan.grace;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let (mut lat, mut service) = (Latency::default(), Latency::default());
                let (mut completed, mut found, mut unserved) = (0u64, 0u64, 0u64);
                let mut end = None;
                let mut slow = Vec::with_capacity(SLOWEST_KEPT + 1);
                while !failed.load(Ordering::Relaxed) {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    if j >= total {
                        break;
                    }
                    let at = due(j);
                    let now = Instant::now();
                    if now > stop_serving {
                        unserved += 1;
                        lat.record(now.saturating_duration_since(at));
                        continue;
                    }
                    if at > now {
                        std::thread::sleep(at - now);
                    }
                    let t0 = Instant::now();
                    match op(j) {
                        Ok(hit) => found += u64::from(hit),
                        Err(e) => {
                            failed.store(true, Ordering::Relaxed);
                            if let Ok(mut g) = first_error.lock() {
                                g.get_or_insert(e);
                            }
                            break;
                        }
                    }
                    let t1 = Instant::now();
                    let (latency, served) = (t1.saturating_duration_since(at), t1 - t0);
                    lat.record(latency);
                    service.record(served);
                    let due_s = at.saturating_duration_since(start).as_secs_f64();
                    let s = Slow {
                        due_s,
                        latency,
                        service: served,
                    };
                    keep_slowest(&mut slow, s);
                    completed += 1;
                    end = Some(t1);
                }
                if let Ok(mut m) = merged.lock() {
                    m.0.merge(&lat);
                    m.1.merge(&service);
                    m.2 += completed;
                    m.3 += found;
                    m.4 += unserved;
                }
                if let Ok(mut kept) = slowest.lock() {
                    slow.into_iter().for_each(|s| keep_slowest(&mut kept, s));
                }
                if let (Some(e), Ok(mut l)) = (end, last_end.lock()) {
                    *l = Some(l.map_or(e, |x: Instant| x.max(e)));
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    let (latency, service, completed, found, unserved) =
        merged.into_inner().unwrap_or_else(|p| p.into_inner());
    let last = last_end.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Outcome {
        scheduled: total,
        completed,
        found,
        unserved,
        // At least the span the requests were due over, so that a handful of fast requests
        // does not claim a rate above the one asked for.
        seconds: last
            .map_or(0.0, |e| e.saturating_duration_since(start).as_secs_f64())
            .max(total as f64 / plan.rps),
        latency,
        service,
        slowest: slowest.into_inner().unwrap_or_else(|p| p.into_inner()),
    })
}

/// One measured step of the max-rate search (also a line's `steps` entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub target_rps: u64,
    pub achieved_rps: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub completed: u64,
    pub unserved: u64,
    /// Bytes the engine's cold-start warm-up read during the step (Cellar), if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up_bytes: Option<u64>,
}

impl Step {
    pub fn from_outcome(target_rps: u64, o: &Outcome) -> Step {
        Step {
            target_rps,
            achieved_rps: o.achieved_rps(),
            p50_us: o.latency.quantile_us(0.50),
            p90_us: o.latency.quantile_us(0.90),
            p99_us: o.latency.quantile_us(0.99),
            max_us: o.latency.quantile_us(1.0),
            completed: o.completed,
            unserved: o.unserved,
            warm_up_bytes: None,
        }
    }
}

/// A latency criterion of the search: quantile `q` below `limit_us`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criterion {
    pub quantile: f64,
    pub limit_us: f64,
}

impl Criterion {
    pub fn passes(&self, s: &Step) -> bool {
        let got = if self.quantile >= 0.99 {
            s.p99_us
        } else {
            s.p50_us
        };
        // A step that left requests unserved did not sustain its rate, whatever the rest
        // of its latencies say.
        s.unserved == 0 && s.completed > 0 && got < self.limit_us
    }
}

/// Double from the start rate up to the cap (or until a step is overloaded: requests left
/// unserved, or under 90% of the asked rate achieved), then bisect between the highest rate
/// that passed and the lowest failing rate above it, to within 10%; if none passed, bisect
/// down from the start. Every doubling step is measured even after a failure, because a
/// latency bound measured from a cold start need not fail at every higher rate: the first
/// reads after a cold start are the slow ones, and at a higher rate they are a smaller share
/// of the step (a p99 bound passes at 12800/s and fails at 200/s on a small database).
#[derive(Debug, Clone)]
pub struct RateSearch {
    start_rps: u64,
    max_rps: u64,
    max_steps: usize,
    /// Every rate measured and whether it passed.
    tried: std::collections::BTreeMap<u64, bool>,
    doubling: bool,
    steps: usize,
}

impl RateSearch {
    pub fn new(start_rps: u64, max_rps: u64, max_steps: usize) -> RateSearch {
        RateSearch {
            start_rps: start_rps.max(1),
            max_rps: max_rps.max(start_rps.max(1)),
            max_steps,
            tried: Default::default(),
            doubling: true,
            steps: 0,
        }
    }

    /// The next rate to measure, or `None` when the search is over.
    pub fn next(&self) -> Option<u64> {
        if self.steps >= self.max_steps {
            return None;
        }
        if self.doubling {
            return Some(match self.tried.keys().next_back() {
                None => self.start_rps,
                Some(&top) => top.saturating_mul(2).min(self.max_rps),
            });
        }
        let (lo, fail) = match self.result() {
            Some(best) => (best, self.tried.range(best..).find(|(_, &p)| !p)?.0),
            None => (0, self.tried.keys().next()?),
        };
        // Within 10% (or 1 request/s): close enough for a rate measured in seconds.
        if fail.saturating_sub(lo) <= (fail / 10).max(1) {
            return None;
        }
        Some(lo + (fail - lo) / 2)
    }

    /// `overloaded`: the step did not keep up with its rate; higher rates are not tried.
    pub fn record(&mut self, rps: u64, pass: bool, overloaded: bool) {
        self.steps += 1;
        self.tried.insert(rps, pass);
        if self.doubling && (overloaded || rps >= self.max_rps) {
            self.doubling = false;
        }
    }

    /// The highest rate that passed, if any.
    pub fn result(&self) -> Option<u64> {
        self.tried.iter().rev().find(|(_, &p)| p).map(|(&r, _)| r)
    }

    /// Whether the search stopped at its cap of rates while still passing.
    pub fn capped(&self) -> bool {
        self.result() == Some(self.max_rps)
    }
}

/// A step that did not keep up with its rate: higher rates would only fail harder.
pub fn overloaded(s: &Step) -> bool {
    s.unserved > 0 || s.achieved_rps < 0.9 * s.target_rps as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passes at or below `limit`; overloaded above `overload`.
    fn drive(
        mut s: RateSearch,
        pass: impl Fn(u64) -> bool,
        overload: u64,
    ) -> (Option<u64>, Vec<u64>) {
        let mut tried = Vec::new();
        while let Some(r) = s.next() {
            tried.push(r);
            s.record(r, pass(r), r > overload);
        }
        (s.result(), tried)
    }

    #[test]
    fn rate_search_doubles_then_bisects() {
        let (best, tried) = drive(RateSearch::new(200, 100_000, 30), |r| r <= 1000, 3000);
        assert_eq!(&tried[..5], [200, 400, 800, 1600, 3200]);
        assert_eq!(tried[5], 1200);
        let best = best.unwrap();
        assert!((900..=1000).contains(&best), "{best} after {tried:?}");
    }

    #[test]
    fn rate_search_goes_down_when_the_start_fails_and_stops_at_the_cap() {
        let (best, tried) = drive(RateSearch::new(200, 100_000, 30), |r| r <= 30, 300);
        assert_eq!(&tried[..4], [200, 400, 100, 50]);
        assert!(best.unwrap() <= 30 && best.unwrap() >= 27, "{tried:?}");
        let mut s = RateSearch::new(200, 500, 30);
        let (best, tried) = {
            let mut tried = Vec::new();
            while let Some(r) = s.next() {
                tried.push(r);
                s.record(r, true, false);
            }
            (s.result(), tried)
        };
        assert_eq!(tried, [200, 400, 500]);
        assert_eq!(best, Some(500));
        assert!(s.capped());
        let (none, tried) = drive(RateSearch::new(200, 1000, 3), |_| false, 0);
        assert_eq!((none, tried.len()), (None, 3));
    }

    /// A cold-start p99 bound fails at low rates and passes at high ones: the search finds
    /// the high pass instead of bisecting down from the first failure.
    #[test]
    fn rate_search_finds_a_pass_above_a_failure() {
        let (best, tried) = drive(RateSearch::new(200, 6400, 30), |r| r >= 3200, 100_000);
        assert_eq!(tried, [200, 400, 800, 1600, 3200, 6400]);
        assert_eq!(best, Some(6400));
    }

    #[test]
    fn criterion_fails_a_step_with_unserved_requests() {
        let mut s = Step {
            target_rps: 100,
            achieved_rps: 100.0,
            p50_us: 50.0,
            p90_us: 60.0,
            p99_us: 70.0,
            max_us: 80.0,
            completed: 10,
            unserved: 0,
            warm_up_bytes: None,
        };
        let c = Criterion {
            quantile: 0.5,
            limit_us: 100.0,
        };
        assert!(c.passes(&s));
        s.unserved = 1;
        assert!(!c.passes(&s));
    }

    /// A fake engine whose every read takes 20 ms, served by one thread, asked for 100
    /// requests/s: it can serve 50/s, so requests queue and their latency from the due time
    /// grows far beyond the 20 ms each one takes. A closed-loop measurement would report 20 ms.
    #[test]
    fn open_loop_counts_queueing_delay() {
        let plan = Plan {
            rps: 100.0,
            duration: Duration::from_millis(400),
            threads: 1,
            grace: Duration::from_secs(5),
        };
        let out = run(&plan, |_| {
            std::thread::sleep(Duration::from_millis(20));
            Ok(true)
        })
        .unwrap();
        assert_eq!((out.scheduled, out.completed, out.found), (40, 40, 40));
        assert_eq!(out.unserved, 0);
        let service_p50 = out.service.quantile_us(0.5);
        assert!((20_000.0..40_000.0).contains(&service_p50), "{service_p50}");
        // The last request is due at 390 ms and served after 40 × 20 ms = 800 ms.
        let max = out.latency.quantile_us(1.0);
        assert!(max > 350_000.0, "max latency {max} µs shows no queueing");
        assert!(out.latency.quantile_us(0.5) > 150_000.0);
        assert!(out.achieved_rps() < 60.0, "{}", out.achieved_rps());
    }

    /// One request that stalls shows first among the slowest, with the time it was due.
    #[test]
    fn open_loop_names_its_slowest_requests() {
        let plan = Plan {
            rps: 200.0,
            duration: Duration::from_millis(200),
            threads: 4,
            grace: Duration::from_secs(5),
        };
        let out = run(&plan, |j| {
            if j == 20 {
                std::thread::sleep(Duration::from_millis(60));
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!(out.slowest.len(), SLOWEST_KEPT);
        let first = out.slowest[0];
        assert!((first.due_s - 0.1).abs() < 1e-6, "{first:?}");
        assert!(first.service >= Duration::from_millis(60), "{first:?}");
        assert!(out.slowest.windows(2).all(|w| w[0].latency >= w[1].latency));
    }

    #[test]
    fn open_loop_keeps_its_rate_when_the_engine_keeps_up() {
        let plan = Plan {
            rps: 200.0,
            duration: Duration::from_millis(300),
            threads: 4,
            grace: Duration::from_secs(5),
        };
        let started = Instant::now();
        let out = run(&plan, |j| Ok(j % 2 == 0)).unwrap();
        // Paced: 60 requests over ~300 ms, not all at once.
        assert!(started.elapsed() >= Duration::from_millis(250));
        assert_eq!((out.completed, out.found), (60, 30));
        assert!(out.latency.quantile_us(0.5) < 10_000.0);
    }

    #[test]
    fn open_loop_gives_up_after_the_grace_period() {
        let plan = Plan {
            rps: 1000.0,
            duration: Duration::from_millis(100),
            threads: 1,
            grace: Duration::from_millis(100),
        };
        let out = run(&plan, |_| {
            std::thread::sleep(Duration::from_millis(10));
            Ok(true)
        })
        .unwrap();
        assert_eq!(out.scheduled, 100);
        assert!(out.unserved > 50, "unserved {}", out.unserved);
        assert_eq!(out.completed + out.unserved, 100);
    }

    #[test]
    fn open_loop_stops_on_the_first_error() {
        let plan = Plan {
            rps: 1000.0,
            duration: Duration::from_millis(50),
            threads: 2,
            grace: Duration::from_secs(1),
        };
        let r = run(&plan, |j| {
            if j == 3 {
                Err(crate::error::BenchError::Invalid("boom".into()))
            } else {
                Ok(true)
            }
        });
        assert!(r.is_err());
    }
}
