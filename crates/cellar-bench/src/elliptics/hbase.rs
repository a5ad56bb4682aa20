//! HBase as an engine of `cellar-bench elliptics`: the Java peer
//! `java ... dev.cellar.peers.HBaseElliptics --records N --value-size V --rps R --seconds S
//! --step-seconds T --latency-ms L --p99-latency-ms P --max-rps M --max-steps K --threads T
//! --scan-threads U --seed S --dir D [--drop-caches] [--keep-data]` (or `--self-test`), on
//! the HBase mini-cluster of the `mapfile` peer (bench/java/hbase). It prints one [`Line`]
//! per variant, as a plain JSON object per line on stdout; progress on stderr. Skipped, with
//! a note, when java or the hbase jar is missing.

use std::path::Path;

use super::{Line, Spec, WORKLOAD};
use crate::error::{BenchError, Result};
use crate::java::{self, JavaPeer};

pub const NAME: &str = "hbase";
pub const MAIN_CLASS: &str = "dev.cellar.peers.HBaseElliptics";

/// Whether the peer can run, or why not.
pub fn available(java_dir: &Path) -> std::result::Result<(), String> {
    java::find_tool("java")
        .ok_or_else(|| "no `java` on PATH".to_string())
        .and_then(|_| JavaPeer::HBase.classpath(java_dir))
        .map(|_| ())
}

/// The arguments after the main class.
pub fn args(spec: &Spec) -> Vec<String> {
    let mut v: Vec<String> = [
        ("--records", spec.records.to_string()),
        ("--value-size", spec.value_size.to_string()),
        ("--rps", spec.rps.to_string()),
        ("--seconds", spec.seconds.to_string()),
        ("--step-seconds", spec.step_seconds.to_string()),
        ("--latency-ms", spec.latency_ms.to_string()),
        ("--p99-latency-ms", spec.p99_latency_ms.to_string()),
        ("--max-rps", spec.max_rps.to_string()),
        ("--max-steps", spec.max_steps.to_string()),
        ("--threads", spec.threads.to_string()),
        ("--scan-threads", spec.scan_threads.to_string()),
        ("--seed", spec.seed.to_string()),
        ("--dir", spec.dir.join(NAME).display().to_string()),
    ]
    .into_iter()
    .flat_map(|(k, v)| [k.to_string(), v])
    .collect();
    if spec.drop_caches {
        v.push("--drop-caches".into());
    }
    if spec.keep_data {
        v.push("--keep-data".into());
    }
    v
}

fn child_err(what: impl Into<String>) -> BenchError {
    crate::child::child_err(NAME, what)
}

/// Runs the peer; the lines that arrived come back alongside any failure.
pub fn run(spec: &Spec, java_dir: &Path, heap_mb: u64) -> (Vec<Line>, Result<()>) {
    let mut lines = Vec::new();
    let r = collect(spec, java_dir, heap_mb, &mut lines);
    (lines, r)
}

fn collect(spec: &Spec, java_dir: &Path, heap_mb: u64, lines: &mut Vec<Line>) -> Result<()> {
    let dir = spec.dir.join(NAME);
    crate::procfs::remove_dir(&dir)?;
    let mut cmd = JavaPeer::HBase
        .command_with_main(java_dir, heap_mb, MAIN_CLASS)
        .map_err(child_err)?;
    cmd.args(args(spec));
    let r = java::collect_peer_lines(&mut cmd, NAME, |w| w == WORKLOAD, lines);
    if !spec.keep_data {
        crate::procfs::remove_dir(&dir)?;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elliptics_hbase_args_name_every_setting() {
        let mut spec = Spec {
            engine: String::new(),
            records: 1000,
            value_size: 200,
            rps: 200,
            seconds: 2.0,
            step_seconds: 1.0,
            latency_ms: 100.0,
            p99_latency_ms: 10.0,
            max_rps: 1600,
            max_steps: 16,
            threads: 32,
            scan_threads: 8,
            cache_mb: 256,
            dir: "/tmp/x".into(),
            seed: 301,
            drop_caches: true,
            keep_data: false,
        };
        assert_eq!(
            args(&spec).join(" "),
            "--records 1000 --value-size 200 --rps 200 --seconds 2 --step-seconds 1 \
             --latency-ms 100 --p99-latency-ms 10 --max-rps 1600 --max-steps 16 --threads 32 \
             --scan-threads 8 --seed 301 --dir /tmp/x/hbase --drop-caches"
        );
        spec.drop_caches = false;
        assert!(!args(&spec).join(" ").contains("drop"));
    }
}
