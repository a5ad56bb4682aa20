//! HBase as an engine of `cellar-bench import`: the Java peer (java.rs) in its import mode,
//! `java ... HBaseBench --mode import --input FILE --records N --sync-records M --writers
//! 1,2,4,6 --buffer-mb B --dir D [--keep-data]`, over the input file the parent wrote. It
//! prints one JSON object per variant on stdout in the shape of [`SuiteRecord`] (engine
//! "hbase", workload "import"), progress on stderr. Named only explicitly in `--engines`
//! ("all" is the Rust engines); skipped, with a note, when java or its jar is missing.

use std::path::Path;

use super::{ImportConfig, MIB};
use crate::error::{BenchError, Result};
use crate::java::{self, JavaPeer};
use crate::suite::SuiteRecord;

pub const NAME: &str = "hbase";

/// `list` without "hbase", and whether it was there.
pub fn take_from_list(list: &str) -> (String, bool) {
    let mut found = false;
    let rest: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|n| {
            let hit = *n == NAME;
            found |= hit;
            !hit && !n.is_empty()
        })
        .collect();
    (rest.join(","), found)
}

/// Whether the peer can run (the same check as `cellar-bench mapfile`), or why not.
pub fn available(java_dir: &Path) -> std::result::Result<(), String> {
    java::find_tool("java")
        .ok_or_else(|| "no `java` on PATH".to_string())
        .and_then(|_| JavaPeer::HBase.classpath(java_dir))
        .map(|_| ())
}

/// The arguments after the main class.
pub fn args(cfg: &ImportConfig) -> Vec<String> {
    let writers: Vec<String> = cfg.writers.iter().map(|w| w.to_string()).collect();
    let mut v = vec![
        "--mode".to_string(),
        "import".into(),
        "--input".into(),
        cfg.input.display().to_string(),
        "--records".into(),
        cfg.records.to_string(),
        "--sync-records".into(),
        cfg.sync_records.to_string(),
        "--writers".into(),
        writers.join(","),
        "--buffer-mb".into(),
        (cfg.buffer_bytes / MIB).to_string(),
        "--dir".into(),
        cfg.db_dir.join("import-hbase").display().to_string(),
    ];
    if cfg.keep_db {
        v.push("--keep-data".into());
    }
    v
}

fn child_err(what: impl Into<String>) -> BenchError {
    BenchError::Child {
        engine: NAME.to_string(),
        what: what.into(),
    }
}

/// Runs the peer; the records that arrived come back alongside any failure.
pub fn run(cfg: &ImportConfig, java_dir: &Path, heap_mb: u64) -> (Vec<SuiteRecord>, Result<()>) {
    let mut records = Vec::new();
    let r = collect(cfg, java_dir, heap_mb, &mut records);
    (records, r)
}

fn collect(
    cfg: &ImportConfig,
    java_dir: &Path,
    heap_mb: u64,
    records: &mut Vec<SuiteRecord>,
) -> Result<()> {
    let dir = cfg.db_dir.join("import-hbase");
    crate::procfs::remove_dir(&dir)?;
    let mut cmd = JavaPeer::HBase
        .command(java_dir, heap_mb)
        .map_err(child_err)?;
    cmd.args(args(cfg));
    let r = java::collect_peer_lines(&mut cmd, NAME, |w| w == "import", records);
    if !cfg.keep_db {
        crate::procfs::remove_dir(&dir)?;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hbase_is_taken_out_of_the_engine_list() {
        assert_eq!(take_from_list("cellar, hbase"), ("cellar".into(), true));
        assert_eq!(take_from_list("hbase"), (String::new(), true));
        assert_eq!(take_from_list("all"), ("all".into(), false));
    }

    #[test]
    fn hbase_line_parses_as_a_suite_record() {
        let j = r#"{"engine":"hbase","workload":"import","variant":"buffered/w2","threads":2,"records":10,"ops":10,"seconds":0.5,"ops_per_sec":20.0,"p50_us":1.0,"p99_us":9.0,"latency_unit":"mutate call","op_latency":{"mutate":{"ops":10,"p50_us":1.0,"p99_us":9.0}},"rows_per_ms":0.02,"key_bytes":16,"value_bytes":21,"sync":false,"found":null,"reads":null,"db_bytes":100,"peak_rss_bytes":null,"settle_seconds":0.1,"notes":["n"]}"#;
        let r: SuiteRecord = serde_json::from_str(j).unwrap();
        assert_eq!((r.threads, r.op_latency["mutate"].ops), (2, 10));
    }
}
