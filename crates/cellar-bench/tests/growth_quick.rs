//! End-to-end: `cellar-bench growth --quick`, the real binary and its per-engine children;
//! its JSON lines, and the report's growth section and plots made from them.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_cellar-bench");

/// Runs `cmd` and checks that it succeeded, showing its stderr if not.
fn succeed(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn growth_runs_each_size_and_reports_its_costs() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("growth.jsonl");
    let out = succeed(
        Command::new(BIN)
            .args(["growth", "--quick", "--engines", "cellar", "--benchmarks"])
            .arg("fillrandom,readrandom_uncached")
            .arg("--db-dir")
            .arg(dir.path().join("db"))
            .arg("--json")
            .arg(&json),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[growth] 30K keys (2 of 2): cellar"),
        "{stderr}"
    );
    let records: Vec<_> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| common::record(l, "growth"))
        .collect();
    let names: Vec<(String, String, u64)> = records
        .iter()
        .map(|r| {
            (
                r["workload"].as_str().unwrap().to_string(),
                r["variant"].as_str().unwrap().to_string(),
                r["metrics"]["num"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("fillrandom", "10K", 10_000),
        ("readrandom_uncached", "10K", 10_000),
        ("fillrandom", "30K", 30_000),
        ("readrandom_uncached", "30K", 30_000),
    ];
    let expected: Vec<(String, String, u64)> = expected
        .iter()
        .map(|(w, v, n)| (w.to_string(), v.to_string(), *n))
        .collect();
    assert_eq!(names, expected);
    for r in &records {
        let m = &r["metrics"];
        if r["workload"] == "fillrandom" {
            // The WAL alone is as many bytes as the keys and values; a flush adds the table.
            let wa = m["write_amp"].as_f64().unwrap();
            assert!(wa > 0.0 && wa < 20.0, "{r}");
        } else {
            assert!(m["write_amp"].is_null(), "{r}");
            assert!(m["device_reads_per_op"].as_f64().is_some(), "{r}");
        }
        assert!(m["db_bytes"].as_u64().unwrap() > 0, "{r}");
        assert!(
            m["resident_index_filter_bytes"].as_u64().unwrap() > 0,
            "{r}"
        );
    }
    assert!(
        !dir.path().join("db/cellar").exists(),
        "databases are deleted"
    );

    let report_dir = dir.path().join("report");
    succeed(
        Command::new(BIN)
            .args(["report", "--json"])
            .arg(&json)
            .arg("--out")
            .arg(report_dir.join("RESULTS.md")),
    );
    let md = std::fs::read_to_string(report_dir.join("RESULTS.md")).unwrap();
    assert!(md.contains("Cost growth with the data"), "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| 30K | cellar |"))
        .unwrap();
    assert!(row.contains("write amp ") && row.contains("B/key"), "{row}");
    for kind in ["ops", "p99", "costs"] {
        let svg = report_dir.join(format!("plots/growth-{kind}-growth.svg"));
        assert!(svg.exists(), "{}", svg.display());
    }
}

#[test]
fn growth_refuses_sizes_that_do_not_grow() {
    let out = Command::new(BIN)
        .args(["growth", "--sizes", "10M,1M", "--engines", "cellar"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--sizes must grow: 1M comes after 10M"),
        "{stderr}"
    );
}
