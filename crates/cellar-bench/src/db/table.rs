//! The `db` suite's measurement (one per workload × engine; the metrics of its records)
//! and the Markdown comparison table.

use serde::{Deserialize, Serialize};

/// One workload (variant) on one engine. Field meanings: docs/benchmarks.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub engine: String,
    /// Harness choices that differ between runs of one engine (RocksDB: where index and
    /// filter blocks live, whether statistics are on); "" for Cellar.
    pub engine_options: String,
    pub workload: String,
    /// "" or e.g. "16" (fillsync writer threads) or "t4" (reader threads).
    pub variant: String,
    pub threads: usize,
    pub num: u64,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// What one latency sample covers: "op", "batch" or "entry (avg of 1000)".
    pub latency_unit: String,
    pub device_reads_per_op: Option<f64>,
    pub device_reads_method: String,
    pub io_syscr_per_op: Option<f64>,
    pub io_read_bytes_per_op: Option<f64>,
    pub db_bytes: u64,
    pub peak_rss_bytes: Option<u64>,
    pub peak_rss_scope: String,
    /// "warm", "drop_caches" or "direct_reads".
    pub cache_mode: String,
    pub cache_bytes: u64,
    pub resident_index_filter_bytes: Option<u64>,
    pub found: Option<u64>,
    pub key_size: usize,
    pub value_size: usize,
    pub batch: Option<usize>,
    pub writer_ops_per_sec: Option<f64>,
    pub stall_micros: Option<u64>,
    pub wal_syncs: Option<u64>,
    pub settle_seconds: Option<f64>,
    /// Fills and overwrite: bytes written to the device, from the start of the timed run to
    /// the end of the settle, over the bytes of the keys and values written (`db::write_amp`).
    #[serde(default)]
    pub write_amp: Option<f64>,
    /// "device" (the device's counters) or "process" (`/proc/self/io`): where `write_amp`
    /// came from; "" when not measured.
    #[serde(default)]
    pub write_amp_source: String,
    /// The same ratio by `/proc/self/io` (bytes this process dirtied, minus those cancelled).
    #[serde(default)]
    pub process_write_amp: Option<f64>,
    pub notes: Vec<String>,
}

impl Record {
    /// "fillsync/16", "readrandom", ...
    pub fn label(&self) -> String {
        if self.variant.is_empty() {
            self.workload.clone()
        } else {
            format!("{}/{}", self.workload, self.variant)
        }
    }

    pub fn progress_line(&self) -> String {
        format!(
            "[{}] {}: {} ops in {:.3} s = {:.0} ops/s, p50 {:.2} µs, p99 {:.2} µs per {}{}",
            self.engine,
            self.label(),
            self.ops,
            self.seconds,
            self.ops_per_sec,
            self.p50_us,
            self.p99_us,
            self.latency_unit,
            match self.found {
                Some(f) if self.workload != "readseq" && self.workload != "readreverse" => {
                    format!(" ({f} of {} found)", self.ops)
                }
                _ => String::new(),
            }
        )
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "—".to_string(), |v| format!("{v:.digits$}"))
}

/// The comparison table: rows grouped by workload (in run order), engines in `engines`
/// order; "ratio vs rocksdb" is this engine's ops/s over RocksDB's for the same row.
pub fn markdown(records: &[Record], engines: &[String]) -> String {
    let mut labels: Vec<String> = Vec::new();
    for r in records {
        let l = r.label();
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let mut s = String::new();
    s.push_str("| workload | engine | ops/s | p50 µs | p99 µs | reads/op | ratio vs rocksdb |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---:|\n");
    for label in &labels {
        let rows: Vec<&Record> = records.iter().filter(|r| &r.label() == label).collect();
        let rocks = rows
            .iter()
            .find(|r| r.engine == "rocksdb")
            .map(|r| r.ops_per_sec);
        let mut ordered = rows.clone();
        ordered.sort_by_key(|r| engines.iter().position(|e| *e == r.engine));
        for r in ordered {
            let ratio = match rocks {
                Some(x) if r.engine != "rocksdb" && x > 0.0 => format!("{:.2}", r.ops_per_sec / x),
                _ => "—".to_string(),
            };
            let unit = match r.latency_unit.as_str() {
                "op" => String::new(),
                "batch" => " ¹".to_string(),
                _ => " ²".to_string(),
            };
            s.push_str(&format!(
                "| {} | {} | {:.0} | {:.2}{unit} | {:.2}{unit} | {} | {} |\n",
                label,
                r.engine,
                r.ops_per_sec,
                r.p50_us,
                r.p99_us,
                fmt_opt(r.device_reads_per_op, 2),
                ratio
            ));
        }
    }
    s.push_str(
        "\nLatency is per operation except: ¹ per call (a multi_get of --batch keys, or a \
         write of --write-batch entries; ops/s counts keys); ² per entry, averaged over chunks \
         of 1000. reads/op: table-file reads per operation \
         (cellar: Stats.device_reads + Stats.mapped_reads; rocksdb: block cache misses from \
         its statistics).\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn rec(engine: &str, workload: &str, variant: &str, ops_per_sec: f64) -> Record {
        Record {
            engine: engine.into(),
            engine_options: String::new(),
            workload: workload.into(),
            variant: variant.into(),
            threads: 1,
            num: 10,
            ops: 10,
            seconds: 10.0 / ops_per_sec,
            ops_per_sec,
            p50_us: 1.5,
            p99_us: 9.25,
            latency_unit: "op".into(),
            device_reads_per_op: Some(0.5),
            device_reads_method: "test".into(),
            io_syscr_per_op: None,
            io_read_bytes_per_op: None,
            db_bytes: 1,
            peak_rss_bytes: None,
            peak_rss_scope: "workload".into(),
            cache_mode: "warm".into(),
            cache_bytes: 1,
            resident_index_filter_bytes: None,
            found: None,
            key_size: 16,
            value_size: 100,
            batch: None,
            writer_ops_per_sec: None,
            stall_micros: None,
            wal_syncs: None,
            settle_seconds: None,
            write_amp: None,
            write_amp_source: String::new(),
            process_write_amp: None,
            notes: vec![],
        }
    }

    #[test]
    fn table_has_ratios_against_rocksdb() {
        let engines = vec!["cellar".to_string(), "rocksdb".to_string()];
        let records = vec![
            rec("cellar", "fillseq", "", 300.0),
            rec("cellar", "fillsync", "16", 50.0),
            rec("rocksdb", "fillseq", "", 200.0),
            rec("rocksdb", "fillsync", "16", 100.0),
        ];
        let md = markdown(&records, &engines);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[2],
            "| fillseq | cellar | 300 | 1.50 | 9.25 | 0.50 | 1.50 |"
        );
        assert_eq!(
            lines[3],
            "| fillseq | rocksdb | 200 | 1.50 | 9.25 | 0.50 | — |"
        );
        assert_eq!(
            lines[4],
            "| fillsync/16 | cellar | 50 | 1.50 | 9.25 | 0.50 | 0.50 |"
        );
        assert_eq!(
            lines[5],
            "| fillsync/16 | rocksdb | 100 | 1.50 | 9.25 | 0.50 | — |"
        );
    }
}
