//! The measurement of `cellar-bench elliptics` ([`Line`]: one per engine × variant, what
//! every engine's child sends and the metrics of the records `--json` writes) and the
//! Markdown table on stdout.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::openloop::{Outcome, Step};
use super::{Spec, WORKLOAD};

use crate::measure::Latency;

/// One measurement of one engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub engine: String,
    pub workload: String,
    /// "load", "fixed rps=R", "max rate p50<Lms", "max rate p99<Lms", "range seek+10",
    /// "range seek+100".
    pub variant: String,
    pub records: u64,
    #[serde(default)]
    pub key_bytes: u64,
    #[serde(default)]
    pub value_bytes: u64,
    /// Load: records; fixed rate: requests completed; max rate: those of the passing step;
    /// range: seeks.
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub seconds: f64,
    /// Load: records/s; fixed rate: achieved requests/s; max rate: the highest target rate
    /// that met the criterion (0 if none did); range: seeks/s.
    #[serde(default)]
    pub ops_per_sec: f64,
    #[serde(default)]
    pub p50_us: f64,
    #[serde(default)]
    pub p90_us: f64,
    #[serde(default)]
    pub p99_us: f64,
    #[serde(default)]
    pub max_us: f64,
    /// "op" (a get, latency from its due time), "seek" (a seek and its rows), "batch"
    /// (a put_batch or mutate call of the load).
    #[serde(default)]
    pub latency_unit: String,
    /// Open loop: the requested rate.
    #[serde(default)]
    pub target_rps: Option<f64>,
    /// Reads that found their key; range: seeks that landed on their key.
    #[serde(default)]
    pub found: Option<u64>,
    /// Range: rows visited.
    #[serde(default)]
    pub rows: Option<u64>,
    /// Open loop: requests due in the run (rate × seconds).
    #[serde(default)]
    pub scheduled: Option<u64>,
    /// Open loop: requests not served before the step's grace period ended.
    #[serde(default)]
    pub unserved: Option<u64>,
    /// Open loop: the engine's own time per get (no queueing), p50 and p99.
    #[serde(default)]
    pub service_p50_us: Option<f64>,
    #[serde(default)]
    pub service_p99_us: Option<f64>,
    /// Max rate: every step measured, in order.
    #[serde(default)]
    pub steps: Option<Vec<Step>>,
    #[serde(default)]
    pub cache_mode: Option<String>,
    /// Load: the untimed flush and compaction wait after it.
    #[serde(default)]
    pub settle_seconds: Option<f64>,
    /// Bytes of the engine's files after the load settled (engine closed).
    #[serde(default)]
    pub db_bytes: Option<u64>,
    /// records × (key + value): what `db_bytes` compares with.
    #[serde(default)]
    pub raw_bytes: Option<u64>,
    /// Index and filter memory the engine holds outside its block cache, read after the
    /// phase (null: the engine has no such figure; see notes).
    #[serde(default)]
    pub resident_index_filter_bytes: Option<u64>,
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// Range phases: bytes the engine's process caused to be read from the device per seek
    /// (`/proc/self/io` `read_bytes`, the kernel's readahead included).
    #[serde(default)]
    pub io_read_bytes_per_op: Option<f64>,
    /// A one-line remark the report shows (sizes).
    #[serde(default)]
    pub note: String,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl Line {
    pub fn new(engine: &str, variant: impl Into<String>, spec: &Spec) -> Line {
        Line {
            engine: engine.to_string(),
            workload: WORKLOAD.to_string(),
            variant: variant.into(),
            records: spec.records,
            key_bytes: super::data::KEY_BYTES as u64,
            value_bytes: spec.value_size as u64,
            ops: 0,
            seconds: 0.0,
            ops_per_sec: 0.0,
            p50_us: 0.0,
            p90_us: 0.0,
            p99_us: 0.0,
            max_us: 0.0,
            latency_unit: "op".into(),
            target_rps: None,
            found: None,
            rows: None,
            scheduled: None,
            unserved: None,
            service_p50_us: None,
            service_p99_us: None,
            steps: None,
            cache_mode: None,
            settle_seconds: None,
            db_bytes: None,
            raw_bytes: None,
            resident_index_filter_bytes: None,
            peak_rss_bytes: None,
            io_read_bytes_per_op: None,
            note: String::new(),
            notes: Vec::new(),
            skipped: None,
        }
    }

    /// ops/s from `ops` and `seconds`, and the quantiles of `lat`.
    pub fn finish(&mut self, lat: &Latency) {
        self.ops_per_sec = if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        };
        self.p50_us = lat.quantile_us(0.50);
        self.p90_us = lat.quantile_us(0.90);
        self.p99_us = lat.quantile_us(0.99);
        self.max_us = lat.quantile_us(1.0);
    }

    /// An open-loop run: achieved rate, latency from the due time, the engine's own time.
    pub fn open_loop(&mut self, target: f64, o: &Outcome) {
        self.ops = o.completed;
        self.seconds = o.seconds;
        self.finish(&o.latency);
        self.ops_per_sec = o.achieved_rps();
        self.target_rps = Some(target);
        self.found = Some(o.found);
        self.unserved = Some(o.unserved);
        self.scheduled = Some(o.scheduled);
        self.service_p50_us = Some(o.service.quantile_us(0.50));
        self.service_p99_us = Some(o.service.quantile_us(0.99));
    }

    /// The progress line on stderr.
    pub fn progress(&self) -> String {
        if let Some(why) = &self.skipped {
            return format!("[{}] {}: skipped: {why}", self.engine, self.variant);
        }
        format!(
            "[{}] {}: {} ops in {:.2} s = {:.0}/s, p50 {:.0} µs, p90 {:.0} µs, p99 {:.0} µs per {}",
            self.engine,
            self.variant,
            self.ops,
            self.seconds,
            self.ops_per_sec,
            self.p50_us,
            self.p90_us,
            self.p99_us,
            self.latency_unit
        )
    }
}

/// "1.23 GiB", "4.5 MiB", "800 B".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.2} {unit}")
}

/// The report's one-line remark: size on disk against raw, resident index and filters.
pub fn size_note(db: Option<u64>, raw: Option<u64>, resident: Option<u64>) -> String {
    let mut parts = Vec::new();
    if let Some(d) = db {
        let ratio = raw.filter(|&r| r > 0).map_or(String::new(), |r| {
            format!(" ({:.2} of raw)", d as f64 / r as f64)
        });
        parts.push(format!("on disk {}{ratio}", bytes(d)));
    }
    if let Some(r) = resident {
        parts.push(format!("index+filter resident {}", bytes(r)));
    }
    parts.join("; ")
}

/// Milliseconds with three decimals: range reads take microseconds, cold gets milliseconds.
fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

/// The comparison table: variants in run order, engines in run order.
pub fn markdown(lines: &[Line], engines: &[String], spec: &Spec, cache_note: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Elliptics vs HBase (elliptics): {} records of {} B keys and {} B text values; fixed rate {} \
         requests/s for {} s; max-rate steps of {} s; {cache_note}.\n",
        spec.records,
        super::data::KEY_BYTES,
        spec.value_size,
        spec.rps,
        spec.seconds,
        spec.step_seconds
    );
    s.push_str("| variant | engine | ops/s | p50 ms | p90 ms | p99 ms | found | on disk | index+filter resident |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    let mut variants: Vec<&str> = Vec::new();
    for l in lines {
        if !variants.contains(&l.variant.as_str()) {
            variants.push(&l.variant);
        }
    }
    for v in variants {
        let mut rows: Vec<&Line> = lines.iter().filter(|l| l.variant == v).collect();
        rows.sort_by_key(|l| engines.iter().position(|e| *e == l.engine));
        for l in rows {
            if let Some(why) = &l.skipped {
                let _ = writeln!(s, "| {v} | {} | skipped: {why} | | | | | | |", l.engine);
                continue;
            }
            let found = l.found.map_or(String::new(), |f| f.to_string());
            let disk = l.db_bytes.map_or(String::new(), bytes);
            let resident = l.resident_index_filter_bytes.map_or(String::new(), bytes);
            let _ = writeln!(
                s,
                "| {v} | {} | {:.0} | {} | {} | {} | {found} | {disk} | {resident} |",
                l.engine,
                l.ops_per_sec,
                ms(l.p50_us),
                ms(l.p90_us),
                ms(l.p99_us)
            );
        }
    }
    s.push_str(
        "\nops/s: load records/s; fixed rate the achieved rate; max rate the highest target \
         rate whose step met the criterion (its latencies shown); range seeks/s. Latency of a \
         get runs from its due time (queueing included); load latency is per batch call.\n",
    );
    s
}

impl crate::java::PeerLine for Line {
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
    fn elliptics_sizes_print_in_binary_units() {
        assert_eq!(bytes(800), "800 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(3 << 30), "3.00 GiB");
        assert_eq!(
            size_note(Some(512), Some(1024), Some(2048)),
            "on disk 512 B (0.50 of raw); index+filter resident 2.00 KiB"
        );
        assert_eq!(size_note(None, None, None), "");
    }

    #[test]
    fn elliptics_line_parses_a_java_line() {
        let j = r#"{"engine":"hbase","workload":"elliptics","variant":"max rate p50<100ms","records":10,"ops":5,"seconds":1.0,"ops_per_sec":400.0,"p50_us":1.0,"p99_us":2.0,"latency_unit":"op","steps":[{"target_rps":400,"achieved_rps":399.0,"p50_us":1.0,"p90_us":1.5,"p99_us":2.0,"max_us":3.0,"completed":400,"unserved":0}],"resident_index_filter_bytes":null,"notes":["n"]}"#;
        let l: Line = serde_json::from_str(j).unwrap();
        assert_eq!(l.steps.unwrap()[0].target_rps, 400);
        assert_eq!(l.resident_index_filter_bytes, None);
    }
}
