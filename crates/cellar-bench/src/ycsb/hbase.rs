//! HBase as an engine of `cellar-bench ycsb`: the Java peer's YCSB client
//! (bench/java/hbase HBaseYcsb.java) on an in-process mini-cluster, run as
//! `java ... dev.cellar.peers.HBaseYcsb --records N --operations N --workloads a,b,...
//! --distributions zipfian,... --threads 1,4 --field-count 10 --field-length 100 --seed S
//! --dir D [--keep-data]`. It draws the same requests as the Rust client (the generators
//! are ported step by step; bench/java/ycsb_vector.txt pins both) and prints one JSON
//! object per load and workload × thread count on stdout in the shape of [`SuiteRecord`]
//! (engine "hbase"), progress on stderr.
//!
//! Runs when named in `--engines`, or with "all" when java and its jar are there; skipped
//! with a note otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::workload::Distribution;
use super::YcsbConfig;
use crate::error::{BenchError, Result};
use crate::java::{self, JavaPeer};
use crate::suite::SuiteRecord;

pub const NAME: &str = "hbase";
const MAIN_CLASS: &str = "dev.cellar.peers.HBaseYcsb";

/// How an `--engines` list asks for HBase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    No,
    /// Named: a missing jar is worth a note.
    Named,
    /// Through "all": also a note, as for the Rust engines not compiled in.
    InAll,
}

/// `list` without "hbase" (still with "all", which also names the Rust engines), and how
/// HBase was asked for.
pub fn take_from_list(list: &str) -> (String, Wanted) {
    let mut wanted = Wanted::No;
    let mut rest = Vec::new();
    for n in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if n == NAME {
            wanted = Wanted::Named;
        } else {
            if n == "all" && wanted == Wanted::No {
                wanted = Wanted::InAll;
            }
            rest.push(n);
        }
    }
    (rest.join(","), wanted)
}

/// Whether the peer can run, or why not.
pub fn available(java_dir: &Path) -> std::result::Result<(), String> {
    java::find_tool("java")
        .ok_or_else(|| "no `java` on PATH (install openjdk-17-jdk)".to_string())
        .and_then(|_| JavaPeer::HBase.classpath(java_dir))
        .map(|_| ())
}

/// Where the mini-cluster keeps its data.
pub fn data_dir(cfg: &YcsbConfig) -> PathBuf {
    cfg.db_dir.join("ycsb-hbase")
}

fn distribution_name(d: Distribution) -> &'static str {
    match d {
        Distribution::Zipfian => "zipfian",
        Distribution::Latest => "latest",
        Distribution::Uniform => "uniform",
    }
}

/// The arguments after the main class.
pub fn args(cfg: &YcsbConfig) -> Vec<String> {
    let list = |v: Vec<String>| v.join(",");
    let mut v = vec![
        "--records".to_string(),
        cfg.records.to_string(),
        "--operations".into(),
        cfg.operations.to_string(),
        "--workloads".into(),
        list(cfg.workloads.iter().map(|m| m.name.to_string()).collect()),
        "--distributions".into(),
        list(
            cfg.workloads
                .iter()
                .map(|m| distribution_name(m.distribution).to_string())
                .collect(),
        ),
        "--threads".into(),
        list(cfg.threads.iter().map(|t| t.to_string()).collect()),
        "--field-count".into(),
        cfg.field_count.to_string(),
        "--field-length".into(),
        cfg.field_length.to_string(),
        "--seed".into(),
        cfg.seed.to_string(),
        "--dir".into(),
        data_dir(cfg).display().to_string(),
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

/// `java <flags> -Xmx -cp <hbase jar + deps> HBaseYcsb`, or why it cannot run.
fn command(java_dir: &Path, heap_mb: u64) -> std::result::Result<Command, String> {
    let java = java::find_tool("java").ok_or("no `java` on PATH (install openjdk-17-jdk)")?;
    let cp = JavaPeer::HBase.classpath(java_dir)?;
    let mut c = Command::new(java);
    c.args(java::JVM_FLAGS)
        .arg(format!("-Xmx{heap_mb}m"))
        .arg("-cp")
        .arg(cp)
        .arg(MAIN_CLASS);
    Ok(c)
}

/// Runs the peer; the records that arrived come back alongside any failure.
pub fn run(cfg: &YcsbConfig, java_dir: &Path, heap_mb: u64) -> (Vec<SuiteRecord>, Result<()>) {
    let mut records = Vec::new();
    let r = collect(cfg, java_dir, heap_mb, &mut records);
    (records, r)
}

fn collect(
    cfg: &YcsbConfig,
    java_dir: &Path,
    heap_mb: u64,
    records: &mut Vec<SuiteRecord>,
) -> Result<()> {
    let dir = data_dir(cfg);
    crate::procfs::remove_dir(&dir)?;
    let mut cmd = command(java_dir, heap_mb).map_err(child_err)?;
    cmd.args(args(cfg));
    let r = java::collect_peer_lines(&mut cmd, NAME, |w| w.starts_with("ycsb_"), records);
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
        assert_eq!(
            take_from_list("cellar, hbase"),
            ("cellar".into(), Wanted::Named)
        );
        assert_eq!(take_from_list("hbase"), (String::new(), Wanted::Named));
        assert_eq!(take_from_list("all"), ("all".into(), Wanted::InAll));
        assert_eq!(take_from_list("all,hbase"), ("all".into(), Wanted::Named));
        assert_eq!(take_from_list("cellar"), ("cellar".into(), Wanted::No));
    }

    #[test]
    fn peer_gets_the_run_as_flags() {
        let cfg = YcsbConfig {
            engines: vec![],
            workloads: vec![
                super::super::workload::core('a').unwrap(),
                super::super::workload::core('d').unwrap(),
            ],
            records: 100,
            operations: 50,
            threads: vec![1, 4],
            field_count: 10,
            field_length: 100,
            db_dir: PathBuf::from("/tmp/x"),
            cache_bytes: 1,
            memtable_bytes: 1,
            seed: 9,
            keep_db: true,
        };
        let a = args(&cfg).join(" ");
        assert_eq!(
            a,
            "--records 100 --operations 50 --workloads a,d --distributions zipfian,latest \
             --threads 1,4 --field-count 10 --field-length 100 --seed 9 --dir /tmp/x/ycsb-hbase \
             --keep-data"
        );
    }
}
