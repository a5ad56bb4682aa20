//! The measurement of `cellar-bench mapfile` ([`PeerLine`]: what every engine's child
//! sends, and the metrics of the records `--json` writes), and the Markdown table.

use serde::{Deserialize, Serialize};

use super::{Spec, WORKLOAD};

use crate::measure::Latency;

/// One measurement of one engine: a line of the protocol, and of `--json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerLine {
    pub engine: String,
    pub workload: String,
    /// "insert buffered", "insert durable", "lookup single", "lookup bucket=N".
    pub variant: String,
    pub records: u64,
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub seconds: f64,
    #[serde(default)]
    pub ops_per_sec: f64,
    #[serde(default)]
    pub p50_us: f64,
    #[serde(default)]
    pub p99_us: f64,
    /// What one latency sample covers: "op", "batch" (a bucket, or a put_batch).
    #[serde(default)]
    pub latency_unit: String,
    #[serde(default)]
    pub found: Option<u64>,
    /// Lookups: the rate of each iteration.
    #[serde(default)]
    pub iterations_ops_per_sec: Option<Vec<f64>>,
    #[serde(default)]
    pub cache_mode: Option<String>,
    /// Inserts: the untimed flush (and compaction wait) after the timed run.
    #[serde(default)]
    pub settle_seconds: Option<f64>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Set when the engine cannot run this variant: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl PeerLine {
    pub fn new(engine: &str, variant: impl Into<String>, spec: &Spec) -> PeerLine {
        PeerLine {
            engine: engine.to_string(),
            workload: WORKLOAD.to_string(),
            variant: variant.into(),
            records: spec.records,
            ops: 0,
            seconds: 0.0,
            ops_per_sec: 0.0,
            p50_us: 0.0,
            p99_us: 0.0,
            latency_unit: "op".into(),
            found: None,
            iterations_ops_per_sec: None,
            cache_mode: None,
            settle_seconds: None,
            notes: Vec::new(),
            skipped: None,
        }
    }

    /// Sets ops/s from `ops` and `seconds`, and the latency quantiles.
    pub fn finish(&mut self, latency: &Latency) {
        self.ops_per_sec = if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        };
        self.p50_us = latency.quantile_us(0.50);
        self.p99_us = latency.quantile_us(0.99);
    }
}

/// The comparison table: rows by variant (in run order), engines in run order, each
/// engine's ops/s over Cellar's for the same variant.
pub fn markdown(
    lines: &[PeerLine],
    engines: &[String],
    spec: &Spec,
    cache_note: &str,
    skipped: &[String],
) -> String {
    let mut variants: Vec<&str> = Vec::new();
    for l in lines {
        if !variants.contains(&l.variant.as_str()) {
            variants.push(&l.variant);
        }
    }
    let mut s = format!(
        "MapFile vs HBase (mapfile): {} records of {} B keys and {} B values; {} lookup iterations of {} \
         keys each; {} durable inserts; {cache_note}.\n\n",
        spec.records,
        spec.key_size,
        spec.value_size,
        spec.iterations,
        spec.lookups_per_iteration(),
        spec.durable_inserts
    );
    s.push_str(
        "| variant | engine | ops/s | vs cellar | p50 µs | p99 µs | ops/s per iteration |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---|\n");
    for v in variants {
        let mut rows: Vec<&PeerLine> = lines.iter().filter(|l| l.variant == v).collect();
        rows.sort_by_key(|l| engines.iter().position(|e| *e == l.engine));
        let cellar = rows
            .iter()
            .find(|l| l.engine == "cellar" && l.skipped.is_none())
            .map(|l| l.ops_per_sec);
        for l in rows {
            if let Some(why) = &l.skipped {
                s.push_str(&format!(
                    "| {v} | {} | skipped: {why} | | | | |\n",
                    l.engine
                ));
                continue;
            }
            let ratio = match cellar {
                Some(c) if c > 0.0 => format!("{:.3}", l.ops_per_sec / c),
                _ => "—".into(),
            };
            let mark = if l.latency_unit == "batch" { " ¹" } else { "" };
            let per_it = l
                .iterations_ops_per_sec
                .as_ref()
                .map_or(String::new(), |v| {
                    let x: Vec<String> = v.iter().map(|r| format!("{r:.0}")).collect();
                    x.join(", ")
                });
            s.push_str(&format!(
                "| {v} | {} | {:.0} | {ratio} | {:.2}{mark} | {:.2}{mark} | {per_it} |\n",
                l.engine, l.ops_per_sec, l.p50_us, l.p99_us
            ));
        }
    }
    s.push_str(
        "\n¹ per call: a bucket of lookups, or a put_batch of 1000 records (Rust engines' \
         buffered insert); otherwise per operation. MapFile has no batched lookup: its \
         buckets are sorted keys read one by one.\n",
    );
    for k in skipped {
        s.push_str(&format!("\n{k}"));
    }
    if !skipped.is_empty() {
        s.push('\n');
    }
    s
}
