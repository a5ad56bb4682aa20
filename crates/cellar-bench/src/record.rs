//! The one result record: every suite writes one [`Record`] per measurement, one JSON
//! object per line, to its `--json` file, and `cellar-bench report` reads nothing else.
//!
//! A suite keeps its own typed struct for a measurement and turns it into a record with
//! [`Record::of`]: the struct's `engine`, `workload` and `variant` name the measurement, its
//! other fields become [`Metrics`], and a [`Stamp`] says which command, build, day and
//! machine produced it. Field meanings: docs/benchmarks.md, "Result records".

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{BenchError, Result};

/// One measurement: one workload variant on one engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The subcommand that measured it: `db`, `ycsb`, `mapfile`, `elliptics`, `import`,
    /// `server`, `dfsio`, `hypertable`, `objstore` or `growth`.
    pub suite: String,
    pub workload: String,
    pub engine: String,
    /// "" when the workload has one variant.
    pub variant: String,
    pub metrics: Metrics,
    /// The parent invocation's command line.
    pub command: String,
    /// `git rev-parse --short HEAD` of the binary's source tree when the run starts (read at
    /// run time, so commit before building and do not commit during a run), `-dirty` with
    /// uncommitted changes to tracked files outside `docs/benchmarks`; "" when unknown.
    pub commit: String,
    /// The UTC day of the run, `YYYY-MM-DD`.
    pub date: String,
    /// CPU model, logical CPUs, RAM, OS and kernel, on one line.
    pub machine: String,
}

/// A measurement's numbers and notes: a JSON object whose fields each suite documents.
/// A variant that did not run carries `"skipped": "why"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Metrics(pub Map<String, Value>);

impl Metrics {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// A number; `None` when missing, null or not a number.
    pub fn f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    /// A string; `None` when missing or not a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// The fields of a typed measurement that name it rather than measure it.
const NAMING: [&str; 3] = ["engine", "workload", "variant"];
/// Fields a typed measurement may carry that the [`Stamp`] supplies instead.
const STAMPED: [&str; 4] = ["command", "commit", "date", "machine"];

impl Record {
    /// The record of `typed` (a struct with string fields `engine`, `workload` and
    /// `variant`; all its other fields become the metrics), measured by `suite`.
    pub fn of<T: Serialize>(suite: &str, typed: &T, stamp: &Stamp) -> Result<Record> {
        let value = serde_json::to_value(typed).map_err(|e| {
            BenchError::Invalid(format!("{suite}: a measurement does not serialize: {e}"))
        })?;
        let Value::Object(mut fields) = value else {
            return Err(BenchError::Invalid(format!(
                "{suite}: a measurement is not a JSON object"
            )));
        };
        let [engine, workload, variant] = NAMING.map(|k| match fields.remove(k) {
            Some(Value::String(s)) => s,
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        });
        for k in STAMPED {
            fields.remove(k);
        }
        Ok(Record {
            suite: suite.to_string(),
            workload,
            engine,
            variant,
            metrics: Metrics(fields),
            command: stamp.command.clone(),
            commit: stamp.commit.clone(),
            date: stamp.date.clone(),
            machine: stamp.machine.clone(),
        })
    }
}

impl Record {
    /// The suite's typed measurement back from the record: [`Record::of`]'s inverse.
    pub fn typed<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        let mut fields = self.metrics.0.clone();
        for (key, value) in NAMING
            .iter()
            .zip([&self.engine, &self.workload, &self.variant])
        {
            fields.insert((*key).to_string(), Value::String(value.clone()));
        }
        serde_json::from_value(Value::Object(fields))
    }
}

/// What every record of one run shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub command: String,
    pub commit: String,
    pub date: String,
    pub machine: String,
}

impl Stamp {
    /// This process's command line, build commit, today's date and this machine. The
    /// commit and machine are read once per process (git and /proc are not free).
    pub fn now() -> Stamp {
        static BUILD: OnceLock<(String, String)> = OnceLock::new();
        let (commit, machine) =
            BUILD.get_or_init(|| (source_commit().unwrap_or_default(), machine_line()));
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Stamp {
            command: crate::command_line(),
            commit: commit.clone(),
            date: utc_day(secs),
            machine: machine.clone(),
        }
    }
}

/// Seconds since the epoch as the UTC day `YYYY-MM-DD`.
pub fn utc_day(secs: u64) -> String {
    let text = cellar_text::format_timestamp_short(secs.saturating_mul(1_000_000_000));
    text.split(' ').next().unwrap_or_default().to_string()
}

/// "AMD EPYC, 2 logical CPUs, 23.5 GiB RAM, Debian GNU/Linux 12 (bookworm), Linux 6.1".
fn machine_line() -> String {
    let m = crate::report::machine::Machine::read();
    let mut parts = vec![m.cpu_model.unwrap_or_else(|| "unknown CPU".into())];
    if let Some(c) = m.cpus {
        parts.push(format!("{c} logical CPUs"));
    }
    if let Some(b) = m.mem_total_bytes {
        parts.push(format!("{:.1} GiB RAM", b as f64 / (1u64 << 30) as f64));
    }
    parts.extend(m.os);
    parts.extend(m.kernel.map(|k| format!("Linux {k}")));
    parts.join(", ")
}

/// The commit of the source tree this binary was built from, if git can tell.
fn source_commit() -> Option<String> {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(tree)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "--short", "HEAD"]).filter(|h| !h.is_empty())?;
    // A rerun replaces its own result file under docs/benchmarks: only changes elsewhere
    // make the measured code differ from the commit.
    let dirty = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ":(top,exclude)docs/benchmarks",
    ])
    .is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}

/// Writes `measurements` of `suite` to `path` as records, one JSON object per line.
pub fn write_json_lines<T: Serialize>(path: &Path, suite: &str, measurements: &[T]) -> Result<()> {
    let stamp = Stamp::now();
    let records = measurements
        .iter()
        .map(|m| Record::of(suite, m, &stamp))
        .collect::<Result<Vec<_>>>()?;
    write_records(path, &records)
}

/// Writes `records` to `path`, one JSON object per line.
pub fn write_records(path: &Path, records: &[Record]) -> Result<()> {
    std::fs::write(path, encode(path, records)?).map_err(|e| BenchError::io(path, e))
}

/// Appends `measurements` of `suite` to `path` (created if missing) as records.
pub fn append_json_lines<T: Serialize>(path: &Path, suite: &str, measurements: &[T]) -> Result<()> {
    let stamp = Stamp::now();
    let records = measurements
        .iter()
        .map(|m| Record::of(suite, m, &stamp))
        .collect::<Result<Vec<_>>>()?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| BenchError::io(path, e))?;
    f.write_all(&encode(path, &records)?)
        .map_err(|e| BenchError::io(path, e))
}

fn encode(path: &Path, records: &[Record]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for r in records {
        serde_json::to_writer(&mut out, r)
            .map_err(|e| BenchError::io(path, std::io::Error::other(e)))?;
        out.push(b'\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Typed {
        engine: &'static str,
        workload: &'static str,
        variant: u32,
        ops_per_sec: f64,
        latency_unit: &'static str,
        command: &'static str,
    }

    #[test]
    fn record_of_a_typed_measurement() {
        let stamp = Stamp {
            command: "cellar-bench x".into(),
            commit: "abc1234".into(),
            date: "2026-11-26".into(),
            machine: "m".into(),
        };
        let t = Typed {
            engine: "cellar",
            workload: "w",
            variant: 16,
            ops_per_sec: 2.5,
            latency_unit: "op",
            command: "stale",
        };
        let r = Record::of("db", &t, &stamp).unwrap();
        assert_eq!(
            (r.suite.as_str(), r.engine.as_str(), r.workload.as_str()),
            ("db", "cellar", "w")
        );
        assert_eq!(r.variant, "16");
        assert_eq!(r.metrics.f64("ops_per_sec"), Some(2.5));
        assert_eq!(r.metrics.str("latency_unit"), Some("op"));
        assert_eq!(r.metrics.get("command"), None, "the stamp supplies it");
        assert_eq!(r.command, "cellar-bench x");
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
        let back: serde_json::Value = r.typed().unwrap();
        assert_eq!(back["variant"], "16");
        assert_eq!(back["ops_per_sec"], 2.5);
    }

    #[test]
    fn record_rejects_missing_and_unknown_fields() {
        let no_metrics = r#"{"suite":"db","workload":"w","engine":"e","variant":"","command":"","commit":"","date":"","machine":""}"#;
        assert!(serde_json::from_str::<Record>(no_metrics).is_err());
        let extra = r#"{"suite":"db","workload":"w","engine":"e","variant":"","metrics":{},"command":"","commit":"","date":"","machine":"","x":1}"#;
        assert!(serde_json::from_str::<Record>(extra).is_err());
    }

    #[test]
    fn utc_days() {
        assert_eq!(utc_day(0), "1970-01-01");
        assert_eq!(utc_day(951_782_400), "2000-02-29");
        assert_eq!(utc_day(4_107_542_399), "2100-02-28");
    }
}
