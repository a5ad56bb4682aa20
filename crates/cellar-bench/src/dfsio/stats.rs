//! TestDFSIO's arithmetic: its size syntax, its per-task figures and the summary it prints.
//!
//! TestDFSIO's reducer sums, over the map tasks (one per file): `tasks`, `size` (bytes),
//! `time` (ms), `rate` (MB/s × 1000) and `sqrate` (rate² × 1000). The summary is then
//! * Throughput mb/sec = size / time: total MB over the **sum** of the task times, so with
//!   tasks running at once it is a per-task figure, not the aggregate bandwidth;
//! * Average IO rate mb/sec = mean of the per-task rates;
//! * IO rate std deviation = sqrt(|sqrate/tasks − mean²|);
//! * Test exec time sec = wall time of the job.
//!
//! MB is TestDFSIO's `MEGA`, 2^20 bytes.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{BenchError, Result};

pub const MEGA: u64 = 1 << 20;

/// A size as TestDFSIO's `-size` reads it: digits, then B, KB, MB, GB or TB (any case,
/// powers of 1024); no unit means MB.
pub fn parse_size(text: &str) -> Result<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let bad = || {
        BenchError::Invalid(format!(
            "size {text:?}: expected digits and B, KB, MB, GB or TB (no unit: MB), e.g. 1GB"
        ))
    };
    let n: u64 = text[..digits].parse().map_err(|_| bad())?;
    let unit = match text[digits..].trim().to_ascii_uppercase().as_str() {
        "B" => 1,
        "KB" => 1 << 10,
        "" | "MB" => MEGA,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return Err(bad()),
    };
    n.checked_mul(unit).ok_or_else(bad)
}

/// One task (one file): what it moved and how long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Task {
    pub bytes: u64,
    pub seconds: f64,
}

impl Task {
    /// MB/s of this task (TestDFSIO's per-map `ioRate`).
    pub fn rate_mb_per_sec(&self) -> f64 {
        self.bytes as f64 / MEGA as f64 / self.seconds.max(1e-9)
    }
}

/// TestDFSIO's report fields, plus the aggregate bandwidth it does not print.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub files: usize,
    pub total_mb: f64,
    pub throughput_mb_per_sec: f64,
    pub average_io_rate_mb_per_sec: f64,
    pub io_rate_std_dev: f64,
    pub exec_time_sec: f64,
    /// Total MB over the wall time: what fio's aggregate bandwidth compares with.
    pub aggregate_mb_per_sec: f64,
}

impl Summary {
    pub fn of(tasks: &[Task], exec_time_sec: f64) -> Summary {
        let n = tasks.len().max(1) as f64;
        let bytes: u64 = tasks.iter().map(|t| t.bytes).sum();
        let time: f64 = tasks.iter().map(|t| t.seconds).sum();
        let total_mb = bytes as f64 / MEGA as f64;
        let mean = tasks.iter().map(Task::rate_mb_per_sec).sum::<f64>() / n;
        let mean_sq = tasks
            .iter()
            .map(|t| t.rate_mb_per_sec().powi(2))
            .sum::<f64>()
            / n;
        Summary {
            files: tasks.len(),
            total_mb,
            throughput_mb_per_sec: total_mb / time.max(1e-9),
            average_io_rate_mb_per_sec: mean,
            io_rate_std_dev: (mean_sq - mean * mean).abs().sqrt(),
            exec_time_sec,
            aggregate_mb_per_sec: total_mb / exec_time_sec.max(1e-9),
        }
    }

    /// TestDFSIO's result lines (its log layout, without the log prefix).
    pub fn lines(&self, test_type: &str, now: SystemTime) -> Vec<String> {
        vec![
            format!("----- TestDFSIO ----- : {test_type}"),
            format!("            Date & time: {}", utc_date(now)),
            format!("        Number of files: {}", self.files),
            format!(" Total MBytes processed: {}", decimal(self.total_mb)),
            format!(
                "      Throughput mb/sec: {}",
                decimal(self.throughput_mb_per_sec)
            ),
            format!(
                " Average IO rate mb/sec: {}",
                decimal(self.average_io_rate_mb_per_sec)
            ),
            format!("  IO rate std deviation: {}", decimal(self.io_rate_std_dev)),
            format!("     Test exec time sec: {}", decimal(self.exec_time_sec)),
        ]
    }
}

/// Java's `DecimalFormat("#.##")`, which TestDFSIO prints with: at most two decimals,
/// trailing zeros dropped ("262144", "399.16", "8.5").
pub fn decimal(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// "Sat Jul 25 16:48:21 UTC 2020", as Java's `Date.toString` in UTC.
pub fn utc_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {d:02} {:02}:{:02}:{:02} UTC {y}",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil: (year, month 1-12, day 1-31) of a day since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dfsio_sizes_parse_as_testdfsio_does() {
        assert_eq!(parse_size("1GB").unwrap(), 1 << 30);
        assert_eq!(parse_size("512MB").unwrap(), 512 << 20);
        assert_eq!(parse_size("32gb").unwrap(), 32 << 30);
        assert_eq!(parse_size("64KB").unwrap(), 64 << 10);
        assert_eq!(parse_size("100").unwrap(), 100 << 20, "no unit is MB");
        assert_eq!(parse_size("8388608B").unwrap(), 8_388_608);
        assert_eq!(parse_size("1TB").unwrap(), 1 << 40);
        for bad in ["", "GB", "1.5GB", "1 XB", "-1MB", "99999999999999TB"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dfsio_summary_follows_testdfsio_formulas() {
        // Two tasks of 100 MB: 10 s (10 MB/s) and 5 s (20 MB/s), 6 s of wall time.
        let tasks = [
            Task {
                bytes: 100 * MEGA,
                seconds: 10.0,
            },
            Task {
                bytes: 100 * MEGA,
                seconds: 5.0,
            },
        ];
        let s = Summary::of(&tasks, 6.0);
        assert_eq!(s.files, 2);
        assert_eq!(s.total_mb, 200.0);
        // 200 MB over 15 task-seconds, not over the 6 s of wall time.
        assert!((s.throughput_mb_per_sec - 200.0 / 15.0).abs() < 1e-9);
        assert!((s.average_io_rate_mb_per_sec - 15.0).abs() < 1e-9);
        // sqrt(|(100 + 400)/2 - 15^2|) = sqrt(25) = 5.
        assert!((s.io_rate_std_dev - 5.0).abs() < 1e-9);
        assert!((s.aggregate_mb_per_sec - 200.0 / 6.0).abs() < 1e-9);
    }

    #[test]
    fn dfsio_report_layout_matches_testdfsio() {
        let s = Summary {
            files: 8,
            total_mb: 262_144.0,
            throughput_mb_per_sec: 399.16,
            average_io_rate_mb_per_sec: 399.34,
            io_rate_std_dev: 8.5,
            exec_time_sec: 659.45,
            aggregate_mb_per_sec: 0.0,
        };
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_595_695_701);
        let lines = s.lines("write", t);
        assert_eq!(
            lines,
            [
                "----- TestDFSIO ----- : write",
                "            Date & time: Sat Jul 25 16:48:21 UTC 2020",
                "        Number of files: 8",
                " Total MBytes processed: 262144",
                "      Throughput mb/sec: 399.16",
                " Average IO rate mb/sec: 399.34",
                "  IO rate std deviation: 8.5",
                "     Test exec time sec: 659.45",
            ]
        );
        assert_eq!(decimal(0.001), "0");
    }
}
