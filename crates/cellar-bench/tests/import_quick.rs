//! `cellar-bench import --quick` (HBase importing): every variant, the JSON lines, rows/ms.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn import(dir: &Path, args: &[&str]) -> (String, Vec<Value>) {
    let json = dir.join("out.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
        .arg("import")
        .arg("--db-dir")
        .arg(dir.join("db"))
        .arg("--json")
        .arg(&json)
        .args(args)
        .output()
        .expect("run cellar-bench");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = std::fs::read_to_string(&json)
        .expect("json")
        .lines()
        .map(|l| common::record(l, "import"))
        .collect();
    (stdout, records)
}

#[test]
fn import_quick_cellar_reports_every_variant_in_rows_per_ms() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, records) = import(dir.path(), &["--quick", "--engines", "cellar"]);
    let variants: Vec<&str> = records
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(
        variants,
        [
            "durable/w1",
            "durable/w2",
            "durable/w4",
            "durable/w6",
            "buffered/w1",
            "buffered/w2",
            "buffered/w4",
            "buffered/w6"
        ]
    );
    for r in &records {
        // The parent's command line, not the child's `--child '{...}'`.
        let cmd = r["command"].as_str().expect("command");
        assert!(cmd.starts_with("cellar-bench import --db-dir "), "{cmd}");
        assert!(cmd.ends_with(" --quick --engines cellar"), "{cmd}");
        assert!(!cmd.contains("--child"), "{cmd}");
        for f in ["ops_per_sec", "p50_us", "p99_us", "rows_per_ms"] {
            assert!(r["metrics"].get(f).is_some(), "lacks {f}: {r}");
        }
        assert_eq!(r["engine"], "cellar");
        assert_eq!(r["workload"], "import");
        let durable = r["variant"].as_str().unwrap().starts_with("durable");
        assert_eq!(r["metrics"]["sync"], durable);
        assert_eq!(
            r["metrics"]["ops"],
            if durable { 300 } else { 20_000 },
            "{r}"
        );
        let ops_per_sec = r["metrics"]["ops_per_sec"].as_f64().unwrap();
        let rows_per_ms = r["metrics"]["rows_per_ms"].as_f64().unwrap();
        assert!(ops_per_sec > 0.0);
        assert!((rows_per_ms * 1000.0 / ops_per_sec - 1.0).abs() < 1e-9);
        assert!(
            r["metrics"]["p99_us"].as_f64().unwrap() >= r["metrics"]["p50_us"].as_f64().unwrap()
        );
        // Key "a:b:c" and six varints.
        let (k, v) = (
            r["metrics"]["key_bytes"].as_u64().unwrap(),
            r["metrics"]["value_bytes"].as_u64().unwrap(),
        );
        assert!((10..=20).contains(&k) && (6..=60).contains(&v), "{r}");
        assert_eq!(
            r["metrics"]["threads"].as_u64().unwrap(),
            variants_writers(r)
        );
    }
    // One row per write call when durable; a 12 MiB buffer holds all 20 000 rows here.
    let d = &records[0]["metrics"]["op_latency"]["put_sync"];
    assert_eq!(d["ops"], 300);
    let b = &records[7]["metrics"]["op_latency"]["put_batch"];
    assert_eq!(b["ops"], 6, "one buffer per writer");
    assert!(
        stdout.contains("| import | buffered/w6 | cellar |"),
        "{stdout}"
    );
    assert!(stdout.contains("rows/ms"));
}

fn variants_writers(r: &Value) -> u64 {
    let v = r["variant"].as_str().unwrap();
    v.rsplit_once("/w").unwrap().1.parse().unwrap()
}

#[test]
fn import_runs_every_built_peer_with_small_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = import(
        dir.path(),
        &[
            "--engines",
            "all",
            "--records",
            "3000",
            "--sync-records",
            "30",
            "--writers",
            "1,2",
            "--buffer-mb",
            "1",
        ],
    );
    let built = 1
        + usize::from(cfg!(feature = "rocksdb"))
        + usize::from(cfg!(feature = "lmdb"))
        + usize::from(cfg!(feature = "fjall"))
        + usize::from(cfg!(feature = "sqlite"));
    assert_eq!(records.len(), built * 4);
    for r in &records {
        assert!(r["metrics"]["rows_per_ms"].as_f64().unwrap() > 0.0, "{r}");
    }
}

/// Whether the HBase peer's jar is built and java is on PATH.
fn hbase_built() -> bool {
    let jar = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/java/hbase/target/cellar-peer-hbase.jar");
    let java = Command::new("java").arg("-version").output();
    jar.is_file() && java.is_ok_and(|o| o.status.success())
}

#[test]
fn import_skips_hbase_with_a_note_when_its_jar_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let java_dir = empty.path().to_str().unwrap();
    let (stdout, records) = import(
        dir.path(),
        &[
            "--engines",
            "cellar,hbase",
            "--java-dir",
            java_dir,
            "--records",
            "1000",
            "--sync-records",
            "10",
            "--writers",
            "1",
        ],
    );
    assert!(records.iter().all(|r| r["engine"] == "cellar"));
    assert_eq!(records.len(), 2);
    assert!(stdout.contains("skipped hbase:"), "{stdout}");
}

#[test]
fn import_quick_with_hbase_when_built() {
    if !hbase_built() {
        eprintln!("skipped: the hbase peer is not built (cellar-bench peers setup)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (stdout, records) = import(
        dir.path(),
        &["--quick", "--engines", "cellar,hbase", "--writers", "1,2"],
    );
    let (cellar, hbase): (Vec<&Value>, Vec<&Value>) =
        records.iter().partition(|r| r["engine"] == "cellar");
    let variants: Vec<&str> = hbase
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(
        variants,
        ["durable/w1", "durable/w2", "buffered/w1", "buffered/w2"]
    );
    for (h, c) in hbase.iter().zip(&cellar) {
        assert_eq!(h["workload"], "import");
        assert_eq!(h["variant"], c["variant"]);
        let durable = h["metrics"]["sync"].as_bool().unwrap();
        assert_eq!(
            h["metrics"]["ops"],
            if durable { 300 } else { 20_000 },
            "{h}"
        );
        assert_eq!(
            h["metrics"]["threads"].as_u64().unwrap(),
            variants_writers(h)
        );
        let ops_per_sec = h["metrics"]["ops_per_sec"].as_f64().unwrap();
        let rows_per_ms = h["metrics"]["rows_per_ms"].as_f64().unwrap();
        assert!(ops_per_sec > 0.0, "{h}");
        assert!((rows_per_ms * 1000.0 / ops_per_sec - 1.0).abs() < 1e-9);
        assert!(
            h["metrics"]["p99_us"].as_f64().unwrap() >= h["metrics"]["p50_us"].as_f64().unwrap()
        );
        // The same rows, read back from HBase: the same key and value sizes.
        assert_eq!(h["metrics"]["key_bytes"], c["metrics"]["key_bytes"], "{h}");
        assert_eq!(
            h["metrics"]["value_bytes"], c["metrics"]["value_bytes"],
            "{h}"
        );
        let (unit, op, calls) = if durable {
            ("write call", "put_sync", 300)
        } else {
            ("mutate call", "mutate", 20_000)
        };
        assert_eq!(h["metrics"]["latency_unit"], unit);
        assert_eq!(h["metrics"]["op_latency"][op]["ops"], calls, "{h}");
    }
    assert!(
        stdout.contains("| import | buffered/w2 | hbase |"),
        "{stdout}"
    );
}
