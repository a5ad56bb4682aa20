//! `cellar-bench mapfile` (MapFile vs HBase) and `cellar-bench peers`: the real binary end to end.
//! Tests that need a built Java peer say so and pass without it (CI builds no jars).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cellar-bench");
const VARIANTS: &[&str] = &[
    "insert buffered",
    "lookup single",
    "lookup bucket=1000",
    "lookup bucket=10",
    "insert durable",
];

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run cellar-bench")
}

fn java_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/java")
}

/// Whether `peer`'s jar is built and java is on PATH.
fn peer_built(peer: &str) -> bool {
    let jar = java_dir()
        .join(peer)
        .join("target")
        .join(format!("cellar-peer-{peer}.jar"));
    let java = Command::new("java").arg("-version").output();
    jar.is_file() && java.is_ok_and(|o| o.status.success())
}

fn quick(engines: &str, dir: &Path) -> (String, Vec<Value>) {
    let json = dir.join("out.jsonl");
    let out = run(&[
        "mapfile",
        "--quick",
        "--no-drop-caches",
        "--engines",
        engines,
        "--dir",
        dir.join("data").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = std::fs::read_to_string(&json)
        .expect("json output")
        .lines()
        .map(|l| common::record(l, "mapfile"))
        .collect();
    (stdout, lines)
}

fn check_measured(r: &Value, records: u64) {
    assert!(r["metrics"]["latency_unit"].is_string(), "{r}");
    for field in ["ops_per_sec", "p50_us", "p99_us", "seconds"] {
        assert!(
            r["metrics"][field].as_f64().is_some_and(|x| x > 0.0),
            "{field} in {r}"
        );
    }
    assert_eq!(r["workload"], "mapfile");
    assert_eq!(r["metrics"]["records"].as_u64(), Some(records), "{r}");
    if r["variant"].as_str().unwrap().starts_with("lookup") {
        // 1% of 100K per iteration, 3 iterations, every key found.
        assert_eq!(r["metrics"]["ops"].as_u64(), Some(3000), "{r}");
        assert_eq!(r["metrics"]["found"].as_u64(), Some(3000), "{r}");
        assert_eq!(
            r["metrics"]["iterations_ops_per_sec"]
                .as_array()
                .map(Vec::len),
            Some(3)
        );
        assert!(
            r["metrics"]["cache_mode"]
                .as_str()
                .unwrap()
                .contains("not dropped"),
            "{r}"
        );
    }
}

#[test]
fn mapfile_quick_cellar_reports_every_variant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (stdout, records) = quick("cellar", dir.path());
    let variants: Vec<&str> = records
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, VARIANTS);
    for r in &records {
        assert_eq!(r["engine"], "cellar");
        check_measured(r, 100_000);
        let cmd = r["command"].as_str().expect("command");
        assert!(cmd.starts_with("cellar-bench mapfile "), "{cmd}");
        assert!(!cmd.contains("--child"), "{cmd}");
    }
    let insert = &records[0];
    assert_eq!(insert["metrics"]["ops"].as_u64(), Some(100_000));
    assert!(insert["metrics"]["settle_seconds"].as_f64().is_some());
    assert_eq!(records[4]["metrics"]["ops"].as_u64(), Some(1000));
    assert!(
        stdout.contains("| variant | engine | ops/s | vs cellar | p50 µs | p99 µs |"),
        "{stdout}"
    );
    assert!(stdout.contains("| lookup bucket=10 | cellar |"), "{stdout}");
    // The data of each engine is removed after its run.
    assert!(!dir.path().join("data/cellar").exists());
}

#[test]
fn mapfile_rejects_an_unknown_engine_named_explicitly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().unwrap();
    let out = run(&[
        "mapfile",
        "--quick",
        "--engines",
        "cellar,nosuch",
        "--dir",
        d,
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch"));
}

#[test]
fn mapfile_quick_with_the_mapfile_peer_when_built() {
    if !peer_built("mapfile") {
        eprintln!("skipped: the mapfile peer is not built (cellar-bench peers setup)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (stdout, records) = quick("cellar,mapfile", dir.path());
    let mapfile: Vec<&Value> = records
        .iter()
        .filter(|r| r["engine"] == "mapfile")
        .collect();
    assert_eq!(mapfile.len(), VARIANTS.len(), "{records:?}");
    for r in &mapfile {
        if r["variant"] == "insert durable" {
            assert!(r["metrics"]["skipped"].is_string(), "{r}");
        } else {
            check_measured(r, 100_000);
        }
    }
    assert!(stdout.contains("| lookup single | mapfile |"), "{stdout}");
}

#[test]
fn peers_self_test_matches_the_shared_vector_or_skips() {
    let out = run(&["peers", "self-test"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for peer in ["mapfile", "hbase"] {
        let want = if peer_built(peer) {
            format!("{peer}: matches the shared vector")
        } else {
            format!("{peer}: skipped")
        };
        assert!(stdout.contains(&want), "{want:?} not in\n{stdout}");
    }
}

#[test]
fn peers_status_lists_every_peer() {
    let out = run(&["peers", "status"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for peer in [
        "cellar", "rocksdb", "lmdb", "java", "mvn", "mapfile", "hbase",
    ] {
        assert!(
            stdout.contains(&format!("| {peer} | ")),
            "{peer} missing in\n{stdout}"
        );
    }
    assert!(stdout.contains("| cellar | yes | built in |"), "{stdout}");
}
