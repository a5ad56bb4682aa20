//! The targets of `cellar-bench server` from one run's records, and the Markdown printed at the end.
//!
//! Per writer count N: happybase → Cellar ÷ happybase → HBase Thrift (≥ 3), the Rust
//! client's batched import ÷ the embedded `cellar-bench import` buffered rate (≥ 0.5), the
//! Rust client ÷ HBase's native BufferedMutator (≥ 10); and the p99 of gRPC point gets at
//! 10,000 requests/s (≤ 1000 µs).

use std::fmt::Write as _;

use super::record::{Figures, Goal, ServerRecord, TargetRecord};
use super::Config;

/// The rate at which the latency target is set.
pub const GET_TARGET_RATE: u64 = 10_000;

pub fn targets(records: &[ServerRecord], cfg: &Config) -> Vec<TargetRecord> {
    let f = Figures::of(records);
    let mut out = Vec::new();
    for &w in &cfg.writers {
        let thrift = format!("thrift/w{w}");
        let native = format!("native/w{w}");
        let embedded = format!("embedded/w{w}");
        out.push(TargetRecord::new(
            &format!("happybase→cellar ÷ happybase→hbase thrift, w{w}"),
            f.ratio(("cellar", &thrift), ("hbase", &thrift)),
            "x",
            Goal::AtLeast(3.0),
        ));
        out.push(TargetRecord::new(
            &format!("rust client ÷ embedded import, w{w}"),
            f.ratio(("cellar", &native), ("cellar", &embedded)),
            "x",
            Goal::AtLeast(0.5),
        ));
        out.push(TargetRecord::new(
            &format!("rust client ÷ hbase native client, w{w}"),
            f.ratio(("cellar", &native), ("hbase", &native)),
            "x",
            Goal::AtLeast(10.0),
        ));
    }
    let get = format!("get-grpc/r{GET_TARGET_RATE}");
    let p99 = if !cfg.rates.contains(&GET_TARGET_RATE) {
        Err(format!("{GET_TARGET_RATE} is not in --rates"))
    } else {
        let achieved = f.ops("cellar", &get);
        match (f.p99("cellar", &get), achieved) {
            (Some(p), Some(rps)) if p.is_finite() => Ok((
                p,
                format!("cellar {get}: p99 {p:.0} µs at {rps:.0} gets/s achieved"),
            )),
            _ => Err(format!("cellar {get} not measured")),
        }
    };
    out.push(TargetRecord::new(
        &format!("get-grpc p99 at {GET_TARGET_RATE} gets per s"),
        p99,
        "µs",
        Goal::AtMost(1000.0),
    ));
    out
}

/// The measurements (suite.rs's table), the targets, the skip notes.
pub fn markdown(records: &[ServerRecord], targets: &[TargetRecord], skipped: &[String]) -> String {
    let suite: Vec<_> = records.iter().map(|r| r.suite.clone()).collect();
    let engines = ["cellar".to_string(), "hbase".to_string()];
    let mut s = crate::suite::markdown(&suite, &engines, skipped);
    s.push_str(
        "\nImports: ops/s are rows/s over the writers' joint span. Gets (get-*/rR): ops/s is \
         the rate achieved at R requested, p50/p99 from each request's due time (open loop).\n",
    );
    s.push_str("\n| target | measured | goal | met | from |\n|---|---:|---|---|---|\n");
    for t in targets {
        let value = t.value.map_or_else(
            || "—".to_string(),
            |v| {
                if t.unit == "x" {
                    format!("{v:.2}x")
                } else {
                    format!("{v:.0} {}", t.unit)
                }
            },
        );
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        let _ = writeln!(
            s,
            "| {} | {value} | {} {} | {met} | {} |",
            t.variant,
            t.target,
            if t.unit == "x" { "" } else { t.unit.as_str() },
            t.inputs.replace('|', "\\|")
        );
    }
    s
}
