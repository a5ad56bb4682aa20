//! `cellar-bench ycsb --quick`: the real binary, its per-engine child, the JSON lines.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cellar-bench");

/// Fields every suite record carries (docs/benchmarks.md).
/// The metrics every ycsb record carries.
const REQUIRED: &[&str] = &[
    "threads",
    "records",
    "ops",
    "seconds",
    "ops_per_sec",
    "p50_us",
    "p99_us",
    "latency_unit",
    "op_latency",
    "db_bytes",
    "notes",
];

fn ycsb(dir: &Path, args: &[&str]) -> (Output, Vec<Value>) {
    let json = dir.join("out.jsonl");
    let out = Command::new(BIN)
        .arg("ycsb")
        .arg("--db-dir")
        .arg(dir.join("db"))
        .arg("--json")
        .arg(&json)
        .args(args)
        .output()
        .expect("run cellar-bench");
    assert!(
        out.status.success(),
        "exit {:?}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let records = std::fs::read_to_string(&json)
        .expect("json output")
        .lines()
        .map(|l| common::record(l, "ycsb"))
        .collect();
    (out, records)
}

fn check_shape(r: &Value) {
    for f in REQUIRED {
        assert!(r["metrics"].get(*f).is_some(), "lacks {f}: {r}");
    }
    assert!(r["metrics"]["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    assert!(
        r["metrics"]["p99_us"].as_f64().unwrap() >= r["metrics"]["p50_us"].as_f64().unwrap(),
        "{r}"
    );
    // Every read found its record.
    assert_eq!(r["metrics"]["found"], r["metrics"]["reads"], "{r}");
}

#[test]
fn ycsb_quick_cellar_runs_load_and_every_core_workload() {
    let dir = tempfile::tempdir().unwrap();
    let (out, records) = ycsb(dir.path(), &["--quick", "--engines", "cellar"]);
    let labels: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["workload"].as_str().unwrap(),
                r["variant"].as_str().unwrap()
            )
        })
        .collect();
    let mut want = Vec::new();
    for t in ["t1", "t4"] {
        for w in ["load", "a", "b", "c", "f", "d", "e"] {
            want.push(format!("ycsb_{w}/{t}"));
        }
    }
    assert_eq!(labels, want);
    for r in &records {
        check_shape(r);
        assert_eq!(r["engine"], "cellar");
        assert_eq!(r["metrics"]["ops"], 5000, "{r}");
        assert_eq!(r["metrics"]["value_bytes"], 1140);
        assert_eq!(r["metrics"]["key_bytes"], 23);
    }
    let by = |l: &str| &records[labels.iter().position(|x| x == l).unwrap()];
    // Operation types as the core workloads define them.
    let ops = |l: &str| -> Vec<String> {
        by(l)["metrics"]["op_latency"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(ops("ycsb_load/t1"), ["insert"]);
    assert_eq!(ops("ycsb_a/t1"), ["read", "update"]);
    assert_eq!(ops("ycsb_c/t4"), ["read"]);
    assert_eq!(ops("ycsb_d/t1"), ["insert", "read"]);
    assert_eq!(ops("ycsb_e/t1"), ["insert", "scan"]);
    assert_eq!(ops("ycsb_f/t1"), ["read", "read_modify_write"]);
    let a = &by("ycsb_a/t1")["metrics"]["op_latency"];
    let (reads, updates) = (
        a["read"]["ops"].as_u64().unwrap(),
        a["update"]["ops"].as_u64().unwrap(),
    );
    assert_eq!(reads + updates, 5000);
    assert!((2200..2800).contains(&reads), "{reads}");
    assert_eq!(by("ycsb_load/t4")["metrics"]["threads"], 4);
    assert!(by("ycsb_load/t1")["metrics"]["settle_seconds"].is_f64());
    // D and E insert: the records grow from one workload to the next.
    assert_eq!(by("ycsb_d/t1")["metrics"]["records"], 5000);
    let after_d = by("ycsb_e/t1")["metrics"]["records"].as_u64().unwrap();
    assert!(after_d > 5000 && after_d < 5600, "{after_d}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("| workload | variant | engine | ops/s | p50 µs | p99 µs |"));
    assert!(stdout.contains("| ycsb_f | t4 | cellar |"), "{stdout}");
    assert!(
        !dir.path().join("db/ycsb-cellar-t1").exists(),
        "databases are removed"
    );
}

#[test]
fn ycsb_quick_runs_every_built_peer_and_skips_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // No jar here: hbase, part of "all", is skipped with a note.
    let no_java = tempfile::tempdir().unwrap();
    let (out, records) = ycsb(
        dir.path(),
        &[
            "--quick",
            "--java-dir",
            no_java.path().to_str().unwrap(),
            "--engines",
            "all",
            "--records",
            "1000",
            "--operations",
            "1000",
            "--threads",
            "2",
            "--workloads",
            "a,e",
        ],
    );
    let engines: Vec<&str> = records
        .iter()
        .map(|r| r["engine"].as_str().unwrap())
        .collect();
    let mut want = vec!["cellar"];
    for (peer, built) in [
        ("rocksdb", cfg!(feature = "rocksdb")),
        ("lmdb", cfg!(feature = "lmdb")),
        ("fjall", cfg!(feature = "fjall")),
        ("sqlite", cfg!(feature = "sqlite")),
    ] {
        if built {
            want.push(peer);
        } else {
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.contains(&format!("skipped {peer}: not compiled")),
                "{stdout}"
            );
        }
    }
    let mut seen: Vec<&str> = engines.clone();
    seen.dedup();
    assert_eq!(seen, want);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("skipped hbase: hbase is not built"),
        "{stdout}"
    );
    assert_eq!(records.len(), want.len() * 3);
    for r in &records {
        check_shape(r);
        assert_eq!(r["variant"], "t2");
    }
}

#[test]
fn ycsb_rejects_an_unknown_workload() {
    let out = Command::new(BIN)
        .args([
            "ycsb",
            "--quick",
            "--engines",
            "cellar",
            "--workloads",
            "a,z",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown benchmark \"z\""));
}

#[test]
fn ycsb_with_only_hbase_and_no_jar_fails_with_its_reason() {
    let no_java = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["ycsb", "--quick", "--engines", "hbase", "--java-dir"])
        .arg(no_java.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("names no engine that can run here"),
        "{stderr}"
    );
}

fn hbase_built() -> bool {
    let jar = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/java/hbase/target/cellar-peer-hbase.jar");
    let java = Command::new("java").arg("-version").output();
    jar.is_file() && java.is_ok_and(|o| o.status.success())
}

/// The HBase peer runs every phase and, with one client thread, draws the very requests
/// the Rust client draws: the same operation counts, inserts and reads as Cellar's.
#[test]
fn ycsb_quick_with_hbase_when_built() {
    if !hbase_built() {
        eprintln!("skipped: the hbase peer is not built (cellar-bench peers setup)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, records) = ycsb(dir.path(), &["--quick", "--engines", "cellar,hbase"]);
    let (cellar, hbase): (Vec<&Value>, Vec<&Value>) =
        records.iter().partition(|r| r["engine"] == "cellar");
    assert_eq!(hbase.len(), 14, "{records:?}");
    for (h, c) in hbase.iter().zip(&cellar) {
        check_shape(h);
        assert_eq!(h["workload"], c["workload"]);
        assert_eq!(h["variant"], c["variant"]);
        assert_eq!(h["metrics"]["ops"], 5000, "{h}");
        assert_eq!(h["metrics"]["key_bytes"], 23);
        assert_eq!(h["metrics"]["value_bytes"], 1140);
        assert_eq!(h["metrics"]["sync"], false);
        if h["variant"] == "t1" {
            let counts = |r: &Value| -> Vec<(String, u64)> {
                r["metrics"]["op_latency"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(op, l)| (op.clone(), l["ops"].as_u64().unwrap()))
                    .collect()
            };
            assert_eq!(counts(h), counts(c), "{}", h["workload"]);
            assert_eq!(
                h["metrics"]["records"], c["metrics"]["records"],
                "{}",
                h["workload"]
            );
            assert_eq!(
                h["metrics"]["reads"], c["metrics"]["reads"],
                "{}",
                h["workload"]
            );
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| ycsb_e | t4 | hbase |"), "{stdout}");
    assert!(
        !dir.path().join("db/ycsb-hbase").exists(),
        "the mini-cluster's data is removed"
    );
}
