//! `cellar-bench server`'s measurements: one [`ServerRecord`] per measurement (a
//! [`SuiteRecord`] plus which client talked to which server) and one [`TargetRecord`] per
//! target (docs/benchmarks.md, `server`); each becomes a [`crate::record::Record`].
//!
//! Workload `server`, variants `GROUP/DETAIL`: `thrift/wN` (happybase → each Thrift
//! gateway, N writer processes), `native/wN` (each system's own client: Cellar's Rust
//! BufferedMutator over gRPC, HBase's Java BufferedMutator), `embedded/wN` (`cellar-bench
//! import`'s buffered variant in-process), `grpc-python/wN`, `get-grpc/rR` and
//! `get-thrift/rR` (point gets at R requests/s). Workload `server_targets`: the ratios.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::record::{Record, Stamp};
use crate::suite::SuiteRecord;

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
}

impl ServerRecord {
    pub fn new(suite: SuiteRecord, client: &str, server: &str) -> Self {
        ServerRecord {
            suite,
            client: client.to_string(),
            server: server.to_string(),
            target_rps: None,
            unserved: None,
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
}

impl SkipRecord {
    pub fn new(engine: &str, variant: &str, why: String) -> SkipRecord {
        SkipRecord {
            engine: engine.to_string(),
            workload: "server".into(),
            variant: variant.to_string(),
            skipped: why,
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
    let stamp = Stamp::now();
    let mut lines = Vec::new();
    for r in records {
        lines.push(Record::of("server", r, &stamp)?);
    }
    for s in skipped {
        lines.push(Record::of("server", s, &stamp)?);
    }
    for t in targets {
        lines.push(Record::of("server", t, &stamp)?);
    }
    crate::record::write_records(path, &lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_and_missing_sides() {
        let t = TargetRecord::new("x", Ok((3.5, "i".into())), "x", Goal::AtLeast(3.0));
        assert_eq!((t.met, t.target.as_str()), (Some(true), ">= 3"));
        let t = TargetRecord::new("p99", Ok((1200.0, "i".into())), "µs", Goal::AtMost(1000.0));
        assert_eq!(t.met, Some(false));
        let t = TargetRecord::new("y", Err("hbase not run".into()), "x", Goal::AtLeast(10.0));
        assert_eq!(
            (t.value, t.met, t.inputs.as_str()),
            (None, None, "hbase not run")
        );
    }
}
