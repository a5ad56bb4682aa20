//! The JSON line of one dfsio test (write or read) on one file layer. Field meanings:
//! docs/benchmarks.md, "dfsio".

use serde::{Deserialize, Serialize};

use super::fio::Ceiling;
use super::io::TaskOut;
use super::stats::{Summary, Task};

use crate::measure::Latency;

/// The run's shape, as every record repeats it.
pub struct Shape {
    pub files: usize,
    pub file_bytes: u64,
    pub buffer_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub file: usize,
    pub bytes: u64,
    pub seconds: f64,
    pub mb_per_sec: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DfsioRecord {
    pub engine: String,
    pub workload: String,
    /// "write" or "read".
    pub variant: String,
    pub threads: usize,
    pub files: usize,
    pub file_bytes: u64,
    pub buffer_bytes: usize,
    /// TestDFSIO's fields.
    pub total_mbytes: f64,
    pub throughput_mb_per_sec: f64,
    pub average_io_rate_mb_per_sec: f64,
    pub io_rate_std_dev: f64,
    pub exec_time_sec: f64,
    /// The table's figure: TestDFSIO's throughput (= `throughput_mb_per_sec`); also in
    /// `ops_per_sec` for readers that only know that field.
    pub mb_per_sec: f64,
    pub ops_per_sec: f64,
    /// Total MB over the exec time: what `fio_mb_per_sec` (aggregate) compares with.
    pub aggregate_mb_per_sec: f64,
    /// fio's ceiling for this pattern (aggregate, and the mean of its jobs' rates).
    pub fio_mb_per_sec: Option<f64>,
    pub fio_job_mb_per_sec: Option<f64>,
    pub fio_source: Option<String>,
    /// `aggregate_mb_per_sec / fio_mb_per_sec`.
    pub fio_ratio: Option<f64>,
    /// Write or read calls, and their latency (one buffer each).
    pub ops: u64,
    pub seconds: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub latency_unit: String,
    /// Writes: the fdatasync at the end of each file (inside the task times), summed.
    pub sync_seconds: Option<f64>,
    /// Reads: bytes whose content was checked, and the time that took (outside the task
    /// times).
    pub verified_bytes: Option<u64>,
    pub verify_seconds: Option<f64>,
    /// Reads: "drop_caches" or why the page cache was warm.
    pub cache_mode: String,
    pub tasks: Vec<TaskRecord>,
    pub notes: Vec<String>,
}

impl DfsioRecord {
    pub fn new(
        engine: &str,
        mode: &str,
        shape: &Shape,
        s: &Summary,
        outs: &[TaskOut],
        calls: &Latency,
    ) -> DfsioRecord {
        let write = mode == "write";
        let tasks = outs
            .iter()
            .enumerate()
            .map(|(file, o)| TaskRecord {
                file,
                bytes: o.bytes,
                seconds: o.seconds,
                mb_per_sec: Task {
                    bytes: o.bytes,
                    seconds: o.seconds,
                }
                .rate_mb_per_sec(),
            })
            .collect();
        let mut notes = vec![format!(
            "layer: {}",
            if engine == "posix" {
                "std::fs (write_all, sync_data, read_exact_at)"
            } else {
                "cellar_engine::vfs::RealVfs (append, sync = fdatasync, read_exact_at)"
            }
        )];
        if write {
            notes.push("each file fdatasynced at its end, inside its task time".into());
        } else {
            notes.push("every byte checked, outside the task times".into());
        }
        DfsioRecord {
            engine: engine.to_string(),
            workload: "dfsio".into(),
            variant: mode.to_string(),
            threads: shape.files,
            files: shape.files,
            file_bytes: shape.file_bytes,
            buffer_bytes: shape.buffer_bytes,
            total_mbytes: s.total_mb,
            throughput_mb_per_sec: s.throughput_mb_per_sec,
            average_io_rate_mb_per_sec: s.average_io_rate_mb_per_sec,
            io_rate_std_dev: s.io_rate_std_dev,
            exec_time_sec: s.exec_time_sec,
            mb_per_sec: s.throughput_mb_per_sec,
            ops_per_sec: s.throughput_mb_per_sec,
            aggregate_mb_per_sec: s.aggregate_mb_per_sec,
            fio_mb_per_sec: None,
            fio_job_mb_per_sec: None,
            fio_source: None,
            fio_ratio: None,
            ops: calls.count(),
            seconds: s.exec_time_sec,
            p50_us: calls.quantile_us(0.50),
            p99_us: calls.quantile_us(0.99),
            latency_unit: format!("{} call of {} B", mode, shape.buffer_bytes),
            sync_seconds: write.then(|| outs.iter().map(|o| o.sync_seconds).sum()),
            verified_bytes: (!write).then(|| outs.iter().map(|o| o.verified_bytes).sum()),
            verify_seconds: (!write).then(|| outs.iter().map(|o| o.verify_seconds).sum()),
            cache_mode: String::new(),
            tasks,
            notes,
        }
    }

    pub fn set_ceiling(&mut self, c: Option<&Ceiling>) {
        let Some(c) = c else {
            self.notes
                .push("fio ceiling not measured (run with --fio)".into());
            return;
        };
        self.fio_mb_per_sec = Some(c.aggregate_mb_per_sec);
        self.fio_job_mb_per_sec = c.per_job_mb_per_sec;
        self.fio_source = Some(c.source.clone());
        self.fio_ratio =
            Some(self.aggregate_mb_per_sec / c.aggregate_mb_per_sec.max(f64::MIN_POSITIVE));
    }
}
