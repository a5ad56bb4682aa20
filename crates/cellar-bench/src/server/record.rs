//! `cellar-bench server`'s JSON lines: one [`ServerRecord`] per measurement (a
//! [`SuiteRecord`] plus which client talked to which server) and one [`TargetRecord`] per
//! target (docs/benchmarks.md, `server`), each line stamped with the command, commit, date and machine
//! ([`RunStamp`]).
//!
//! Workload `server`, variants `GROUP/DETAIL`: `thrift/wN` (happybase → each Thrift
//! gateway, N writer processes), `native/wN` (each system's own client: Cellar's Rust
//! BufferedMutator over gRPC, HBase's Java BufferedMutator), `embedded/wN` (`cellar-bench
//! import`'s buffered variant in-process), `grpc-python/wN`, `get-grpc/rR` and
//! `get-thrift/rR` (point gets at R requests/s). Workload `server_targets`: the ratios.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};
use crate::suite::SuiteRecord;

/// What every line of one run shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStamp {
    pub command: String,
    /// `git rev-parse --short HEAD` of the source tree, `-dirty` with uncommitted changes.
    pub commit: String,
    /// UTC, RFC 3339, when the run started.
    pub date: String,
    pub machine: String,
}

impl RunStamp {
    pub fn now() -> RunStamp {
        let m = crate::results::machine::Machine::read();
        let mut machine = vec![m.cpu_model.unwrap_or_else(|| "unknown CPU".into())];
        if let Some(c) = m.cpus {
            machine.push(format!("{c} logical CPUs"));
        }
        if let Some(b) = m.mem_total_bytes {
            machine.push(format!("{:.1} GiB RAM", b as f64 / (1u64 << 30) as f64));
        }
        machine.extend(m.os);
        machine.extend(m.kernel.map(|k| format!("Linux {k}")));
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        RunStamp {
            command: crate::command_line(),
            commit: source_commit().unwrap_or_else(|| "unknown".into()),
            date: rfc3339_utc(secs),
            machine: machine.join(", "),
        }
    }
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
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_utc(secs: u64) -> String {
    let text = cellar_text::format_timestamp_short(secs.saturating_mul(1_000_000_000));
    format!("{}Z", text.replacen(' ', "T", 1))
}

/// One measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    #[serde(flatten)]
    pub suite: SuiteRecord,
    /// The client library and how it talks, e.g. "happybase 1.3 (Thrift1 buffered/binary)".
    pub client: String,
    /// What served the requests, e.g. "cellar serve" or "HBase 2.6.1 ThriftServer".
    pub server: String,
    /// Point gets: the asked-for rate, and requests not served in time.
    pub target_rps: Option<f64>,
    pub unserved: Option<u64>,
    pub commit: String,
    pub date: String,
    pub machine: String,
}

impl ServerRecord {
    pub fn new(mut suite: SuiteRecord, client: &str, server: &str, stamp: &RunStamp) -> Self {
        suite.command = stamp.command.clone();
        ServerRecord {
            suite,
            client: client.to_string(),
            server: server.to_string(),
            target_rps: None,
            unserved: None,
            commit: stamp.commit.clone(),
            date: stamp.date.clone(),
            machine: stamp.machine.clone(),
        }
    }
}

/// Variants that could not run: the report shows them as skipped, with why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkipRecord {
    pub engine: String,
    pub workload: String,
    /// The variants, e.g. "grpc-python/*".
    pub variant: String,
    pub skipped: String,
    pub command: String,
    pub commit: String,
    pub date: String,
    pub machine: String,
}

impl SkipRecord {
    pub fn new(engine: &str, variant: &str, why: String, stamp: &RunStamp) -> SkipRecord {
        SkipRecord {
            engine: engine.to_string(),
            workload: "server".into(),
            variant: variant.to_string(),
            skipped: why,
            command: stamp.command.clone(),
            commit: stamp.commit.clone(),
            date: stamp.date.clone(),
            machine: stamp.machine.clone(),
        }
    }
}

/// A target of `cellar-bench server` and what this run measured for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRecord {
    pub engine: String,
    pub workload: String,
    /// What is compared, e.g. "happybase→cellar ÷ happybase→hbase (w6)".
    pub variant: String,
    /// The measured ratio (or latency in µs for the latency target).
    pub value: Option<f64>,
    pub unit: String,
    /// The goal, e.g. ">= 3" or "<= 1000".
    pub target: String,
    /// Whether `value` meets `target`; `None` when a side was not measured.
    pub met: Option<bool>,
    /// The figures the value comes from, or why it is missing.
    pub inputs: String,
    pub command: String,
    pub commit: String,
    pub date: String,
    pub machine: String,
}

/// A goal: at least or at most a bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

impl Goal {
    fn text(self) -> String {
        match self {
            Goal::AtLeast(b) => format!(">= {b}"),
            Goal::AtMost(b) => format!("<= {b}"),
        }
    }

    fn met(self, v: f64) -> bool {
        match self {
            Goal::AtLeast(b) => v >= b,
            Goal::AtMost(b) => v <= b,
        }
    }
}

impl TargetRecord {
    pub fn new(
        what: &str,
        value: std::result::Result<(f64, String), String>,
        unit: &str,
        goal: Goal,
        stamp: &RunStamp,
    ) -> TargetRecord {
        let (value, inputs) = match value {
            Ok((v, inputs)) => (Some(v), inputs),
            Err(why) => (None, why),
        };
        TargetRecord {
            engine: "cellar".into(),
            workload: "server_targets".into(),
            variant: what.to_string(),
            value,
            unit: unit.to_string(),
            target: goal.text(),
            met: value.map(|v| goal.met(v)),
            inputs,
            command: stamp.command.clone(),
            commit: stamp.commit.clone(),
            date: stamp.date.clone(),
            machine: stamp.machine.clone(),
        }
    }
}

/// Measured figures by (engine, variant): ops/s, p99 µs.
pub struct Figures(BTreeMap<(String, String), (f64, f64)>);

impl Figures {
    pub fn of(records: &[ServerRecord]) -> Figures {
        Figures(
            records
                .iter()
                .map(|r| {
                    let s = &r.suite;
                    (
                        (s.engine.clone(), s.variant.clone()),
                        (s.ops_per_sec, s.p99_us),
                    )
                })
                .collect(),
        )
    }

    pub fn ops(&self, engine: &str, variant: &str) -> Option<f64> {
        self.0
            .get(&(engine.to_string(), variant.to_string()))
            .map(|f| f.0)
            .filter(|v| *v > 0.0)
    }

    pub fn p99(&self, engine: &str, variant: &str) -> Option<f64> {
        self.0
            .get(&(engine.to_string(), variant.to_string()))
            .map(|f| f.1)
    }

    /// `a ÷ b` of two ops/s figures, with the figures as text, or which one is missing.
    pub fn ratio(
        &self,
        a: (&str, &str),
        b: (&str, &str),
    ) -> std::result::Result<(f64, String), String> {
        let fa = self
            .ops(a.0, a.1)
            .ok_or_else(|| format!("{} {} not measured", a.0, a.1))?;
        let fb = self
            .ops(b.0, b.1)
            .ok_or_else(|| format!("{} {} not measured", b.0, b.1))?;
        Ok((
            fa / fb,
            format!(
                "{} {}: {fa:.0} rows/s; {} {}: {fb:.0} rows/s",
                a.0, a.1, b.0, b.1
            ),
        ))
    }
}

/// Writes every line: measurements, skipped variants, then targets.
pub fn write_lines(
    path: &Path,
    records: &[ServerRecord],
    skipped: &[SkipRecord],
    targets: &[TargetRecord],
) -> Result<()> {
    let mut out = Vec::new();
    let enc = |e: serde_json::Error| BenchError::io(path, std::io::Error::other(e));
    for r in records {
        serde_json::to_writer(&mut out, r).map_err(enc)?;
        out.push(b'\n');
    }
    for s in skipped {
        serde_json::to_writer(&mut out, s).map_err(enc)?;
        out.push(b'\n');
    }
    for t in targets {
        serde_json::to_writer(&mut out, t).map_err(enc)?;
        out.push(b'\n');
    }
    std::fs::write(path, out).map_err(|e| BenchError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        // 2009-01-09 (the seed's date), 12:34:56.
        assert_eq!(rfc3339_utc(1_231_504_496), "2009-01-09T12:34:56Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn goals_and_missing_sides() {
        let stamp = RunStamp {
            command: "c".into(),
            commit: "abc".into(),
            date: "d".into(),
            machine: "m".into(),
        };
        let t = TargetRecord::new("x", Ok((3.5, "i".into())), "x", Goal::AtLeast(3.0), &stamp);
        assert_eq!((t.met, t.target.as_str()), (Some(true), ">= 3"));
        let t = TargetRecord::new(
            "p99",
            Ok((1200.0, "i".into())),
            "µs",
            Goal::AtMost(1000.0),
            &stamp,
        );
        assert_eq!(t.met, Some(false));
        let t = TargetRecord::new(
            "y",
            Err("hbase not run".into()),
            "x",
            Goal::AtLeast(10.0),
            &stamp,
        );
        assert_eq!(
            (t.value, t.met, t.inputs.as_str()),
            (None, None, "hbase not run")
        );
    }
}
