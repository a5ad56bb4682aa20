//! What the peer-comparison subcommands (`ycsb`, `import`, `server`) share: choosing engines
//! (skipping the ones not compiled in, and saying so), their typed measurement
//! ([`SuiteRecord`], a [`crate::record::Record`]'s metrics), and threads that start
//! together. Their children speak the protocol of [`crate::child`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::engines;
use crate::error::{BenchError, Result};
use crate::measure::Latency;

/// The engines a `--engines` list names, in its order, split into the ones compiled in and
/// the ones skipped (with why). "all" stands for every known engine.
pub fn select_engines(list: &str) -> Result<(Vec<String>, Vec<String>)> {
    let mut names: Vec<&str> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name == "all" {
            names.extend_from_slice(engines::KNOWN);
        } else if engines::KNOWN.contains(&name) {
            names.push(name);
        } else {
            return Err(BenchError::UnknownEngine(name.to_string()));
        }
    }
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        if run.iter().any(|r: &String| r == name) {
            continue;
        }
        if engines::is_built(name) {
            run.push(name.to_string());
        } else {
            skipped.push(format!(
                "{name}: not compiled into this binary (rebuild with `--features {name}`)"
            ));
        }
    }
    if run.is_empty() {
        return Err(BenchError::Invalid(format!(
            "--engines {list:?} names no engine compiled into this binary"
        )));
    }
    Ok((run, skipped))
}

/// Latency percentiles of one kind of operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpLatency {
    pub ops: u64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// One measurement: engine × workload × variant. Field meanings: docs/benchmarks.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteRecord {
    pub engine: String,
    pub workload: String,
    pub variant: String,
    pub threads: usize,
    /// Records in the dataset (YCSB: loaded records; import: records written).
    pub records: u64,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// What one latency sample covers: "op" or "write call".
    pub latency_unit: String,
    /// Per operation type (YCSB: read, update, insert, scan, read_modify_write).
    pub op_latency: BTreeMap<String, OpLatency>,
    /// import: rows written per millisecond (the write-up's unit).
    pub rows_per_ms: Option<f64>,
    pub key_bytes: usize,
    pub value_bytes: usize,
    /// Writes were durable (fsync) before returning.
    pub sync: bool,
    /// Reads that found their record / reads issued (YCSB).
    pub found: Option<u64>,
    pub reads: Option<u64>,
    pub db_bytes: u64,
    pub peak_rss_bytes: Option<u64>,
    /// Untimed flush + wait for background work after the measurement.
    pub settle_seconds: Option<f64>,
    pub notes: Vec<String>,
}

impl SuiteRecord {
    pub fn progress_line(&self) -> String {
        let rows = self
            .rows_per_ms
            .map_or_else(String::new, |r| format!(", {r:.1} rows/ms"));
        format!(
            "[{}] {} {}: {} ops in {:.3} s = {:.0} ops/s{rows}, p50 {:.2} µs, p99 {:.2} µs per {}",
            self.engine,
            self.workload,
            self.variant,
            self.ops,
            self.seconds,
            self.ops_per_sec,
            self.p50_us,
            self.p99_us,
            self.latency_unit
        )
    }
}

/// Child side: prints `r`, a measurement of `suite`, for the parent (and its progress line
/// to stderr).
pub fn emit(suite: &str, r: &SuiteRecord) -> Result<()> {
    crate::child::emit_measurement(suite, &r.progress_line(), r)
}

pub use crate::child::run_child;

/// What the children of one run sent, and the first failure (each reported on stderr as
/// it comes).
#[derive(Default)]
pub struct Runs {
    pub records: Vec<SuiteRecord>,
    pub failure: Option<BenchError>,
}

impl Runs {
    /// Adds what `engine`'s child sent, whatever its outcome.
    pub fn add(&mut self, engine: &str, (mut got, result): (Vec<SuiteRecord>, Result<()>)) {
        self.records.append(&mut got);
        if let Err(e) = result {
            eprintln!("[{engine}] failed: {e}");
            self.failure.get_or_insert(e);
        }
    }
}

/// Fails now, not after a long run, when an output file cannot be written.
pub fn check_writable(path: Option<&Path>) -> Result<()> {
    if let Some(p) = path {
        std::fs::File::create(p).map_err(|e| BenchError::io(p, e))?;
    }
    Ok(())
}

/// The comparison table: rows in the order measured, grouped by workload and variant,
/// engines in `engines` order; then the skipped engines.
pub fn markdown(records: &[SuiteRecord], engines: &[String], skipped: &[String]) -> String {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for r in records {
        let g = (r.workload.as_str(), r.variant.as_str());
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut s = String::new();
    s.push_str("| workload | variant | engine | ops/s | p50 µs | p99 µs | details |\n");
    s.push_str("|---|---|---|---:|---:|---:|---|\n");
    for (w, v) in groups {
        let mut rows: Vec<&SuiteRecord> = records
            .iter()
            .filter(|r| r.workload == w && r.variant == v)
            .collect();
        rows.sort_by_key(|r| engines.iter().position(|e| *e == r.engine));
        for r in rows {
            s.push_str(&format!(
                "| {w} | {v} | {} | {:.0} | {:.2} | {:.2} | {} |\n",
                r.engine,
                r.ops_per_sec,
                r.p50_us,
                r.p99_us,
                details(r)
            ));
        }
    }
    for why in skipped {
        s.push_str(&format!("\nskipped {why}\n"));
    }
    s
}

/// rows/ms for imports; p50/p99 per operation type when there are several.
fn details(r: &SuiteRecord) -> String {
    if let Some(rows) = r.rows_per_ms {
        return format!("{rows:.1} rows/ms");
    }
    if r.op_latency.len() < 2 {
        return String::new();
    }
    let parts: Vec<String> = r
        .op_latency
        .iter()
        .map(|(op, l)| format!("{op} {:.1}/{:.1}", l.p50_us, l.p99_us))
        .collect();
    format!("p50/p99 µs: {}", parts.join(", "))
}

/// Latencies by operation type.
#[derive(Default, Clone)]
pub struct OpLatencies(pub BTreeMap<&'static str, Latency>);

impl OpLatencies {
    pub fn record(&mut self, op: &'static str, d: Duration) {
        self.0.entry(op).or_default().record(d);
    }

    pub fn merge(&mut self, other: &OpLatencies) {
        for (op, l) in &other.0 {
            self.0.entry(op).or_default().merge(l);
        }
    }

    /// All types together.
    pub fn total(&self) -> Latency {
        let mut all = Latency::default();
        for l in self.0.values() {
            all.merge(l);
        }
        all
    }

    pub fn summary(&self) -> BTreeMap<String, OpLatency> {
        self.0
            .iter()
            .map(|(op, l)| {
                let s = OpLatency {
                    ops: l.count(),
                    p50_us: l.quantile_us(0.50),
                    p99_us: l.quantile_us(0.99),
                };
                (op.to_string(), s)
            })
            .collect()
    }
}

/// Runs `run(t)` on `threads` threads that start together; returns the span from the
/// first start to the last end and each thread's output, in thread order.
pub fn run_threads<T, R>(threads: usize, run: R) -> Result<(Duration, Vec<T>)>
where
    T: Send,
    R: Fn(usize) -> Result<T> + Sync,
{
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (run, barrier) = (&run, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let out = run(t);
                    (start, Instant::now(), out)
                })
            })
            .collect();
        let mut outs = Vec::with_capacity(threads);
        let mut span: Option<(Instant, Instant)> = None;
        for h in handles {
            let (start, end, out) = match h.join() {
                Ok(x) => x,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            outs.push(out?);
            span = Some(match span {
                None => (start, end),
                Some((s, e)) => (s.min(start), e.max(end)),
            });
        }
        Ok((span.map_or(Duration::ZERO, |(s, e)| e - s), outs))
    })
}

impl crate::java::PeerLine for SuiteRecord {
    fn engine(&self) -> &str {
        &self.engine
    }
    fn workload(&self) -> &str {
        &self.workload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_expands_and_unbuilt_engines_are_skipped_with_a_reason() {
        let (run, skipped) = select_engines("all").unwrap();
        assert_eq!(run[0], "cellar");
        assert_eq!(run.len() + skipped.len(), engines::KNOWN.len());
        if !cfg!(feature = "rocksdb") {
            assert!(skipped[0].contains("--features rocksdb"), "{skipped:?}");
        }
        let (run, _) = select_engines("sqlite, cellar,cellar").unwrap();
        assert_eq!(run.len(), if cfg!(feature = "sqlite") { 2 } else { 1 });
        assert!(select_engines("leveldb").is_err());
        assert!(select_engines("").is_err());
    }

    #[test]
    fn threads_start_together_and_report_in_order() {
        let (span, outs) = run_threads(3, |t| {
            std::thread::sleep(Duration::from_millis(10));
            Ok(t * 2)
        })
        .unwrap();
        assert_eq!(outs, [0, 2, 4]);
        assert!(span >= Duration::from_millis(10));
    }
}
