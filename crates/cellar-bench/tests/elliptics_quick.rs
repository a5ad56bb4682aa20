//! `cellar-bench elliptics --quick` (Elliptics vs HBase) against Cellar alone: every variant, the JSON
//! lines' shape, every read finding its key; the device's ceiling measured by the real fio;
//! the report's table; the Java peer's generator against the shared vector when the peer is
//! built.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cellar-bench");
const VARIANTS: &[&str] = &[
    "load",
    "fixed rps=200",
    "max rate p50<100ms",
    "max rate p99<10ms",
    "range seek+10",
    "range seek+100",
];

fn java_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/java")
}

#[test]
fn elliptics_quick_cellar_reports_every_variant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("out.jsonl");
    let out = Command::new(BIN)
        .args([
            "elliptics",
            "--quick",
            "--no-drop-caches",
            "--engines",
            "cellar",
        ])
        .args(["--max-rps", "800", "--seconds", "1", "--threads", "4"])
        .args(["--fio", "--fio-file-mb", "16"])
        .arg("--dir")
        .arg(dir.path().join("data"))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run cellar-bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut records: Vec<Value> = std::fs::read_to_string(&json)
        .expect("json output")
        .lines()
        .map(|l| common::record(l, "elliptics"))
        .collect();
    // fio's two lines come last: the random reads' ceiling, then the range phases' (at
    // --scan-threads, 8 by default); each max-rate and range line says how it compares with
    // the ceiling at its own number of reads in flight.
    let fio_ranges = records.pop().expect("the range phases' fio line");
    let fio = records.pop().expect("the random reads' fio line");
    assert_eq!(
        (fio["engine"].as_str(), fio["variant"].as_str()),
        (Some("fio"), Some("device 4 KiB random reads, 4 in flight")),
        "{fio}"
    );
    assert_eq!(
        (
            fio_ranges["engine"].as_str(),
            fio_ranges["variant"].as_str()
        ),
        (
            Some("fio"),
            Some("range ceiling: device 4 KiB random reads, 8 in flight")
        ),
        "{fio_ranges}"
    );
    for f in [&fio, &fio_ranges] {
        assert!(
            f["metrics"]["ops_per_sec"].as_f64().unwrap() > 0.0
                && f["metrics"]["p99_us"].as_f64().unwrap() > 0.0,
            "{f}"
        );
        assert!(
            f["metrics"]["note"].as_str().unwrap().starts_with("fio-"),
            "{f}"
        );
    }
    for (r, ceiling, in_flight) in [
        (&records[2], &fio, 4),
        (&records[3], &fio, 4),
        (&records[4], &fio_ranges, 8),
        (&records[5], &fio_ranges, 8),
    ] {
        let iops = ceiling["metrics"]["ops_per_sec"].as_f64().unwrap();
        let share = r["metrics"]["ops_per_sec"].as_f64().unwrap() / iops;
        let note = r["metrics"]["note"].as_str().unwrap();
        assert!(
            note.ends_with(&format!(
                "{share:.2}x the device's 4 KiB random reads at the same {in_flight} in flight \
                 (fio, this run)"
            )),
            "{note}"
        );
    }
    assert!(!dir.path().join("data/fio-scratch").exists());
    let variants: Vec<&str> = records
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, VARIANTS);
    for r in &records {
        assert_eq!(r["engine"], "cellar", "{r}");
        assert_eq!(r["workload"], "elliptics", "{r}");
        // The parent's command, not the child's --child invocation.
        let command = r["command"].as_str().expect("command");
        assert!(
            command.starts_with("cellar-bench elliptics") && !command.contains("--child"),
            "{r}"
        );
        assert_eq!(r["metrics"]["records"].as_u64(), Some(20_000), "{r}");
        for f in ["ops_per_sec", "p50_us", "p99_us", "seconds"] {
            assert!(
                r["metrics"][f].as_f64().is_some_and(|x| x > 0.0),
                "{f} in {r}"
            );
        }
        assert!(
            r["metrics"]["db_bytes"].as_u64().is_some_and(|b| b > 0),
            "{r}"
        );
        assert!(r["metrics"]["latency_unit"].is_string());
        if r["variant"] != "load" {
            assert!(
                r["metrics"]["cache_mode"]
                    .as_str()
                    .unwrap()
                    .contains("not dropped"),
                "{r}"
            );
            assert!(
                r["metrics"]["resident_index_filter_bytes"]
                    .as_u64()
                    .is_some(),
                "{r}"
            );
        }
    }
    let (load, fixed) = (&records[0], &records[1]);
    assert_eq!(load["metrics"]["ops"].as_u64(), Some(20_000));
    assert!(load["metrics"]["settle_seconds"].as_f64().is_some());
    // 200 requests/s for 1 s: all served, every key found.
    assert_eq!(fixed["metrics"]["scheduled"].as_u64(), Some(200), "{fixed}");
    assert_eq!(
        fixed["metrics"]["found"], fixed["metrics"]["scheduled"],
        "{fixed}"
    );
    assert_eq!(fixed["metrics"]["unserved"].as_u64(), Some(0), "{fixed}");
    assert!(
        fixed["metrics"]["p90_us"].as_f64().is_some()
            && fixed["metrics"]["service_p50_us"].as_f64().is_some()
    );
    for r in &records[2..4] {
        let steps = r["metrics"]["steps"].as_array().expect("steps");
        assert!(!steps.is_empty(), "{r}");
        for s in steps {
            assert!(s["target_rps"].as_u64().is_some() && s["p99_us"].as_f64().is_some());
        }
        // The rate found is one of the rates tried.
        let best = r["metrics"]["ops_per_sec"].as_f64().unwrap();
        assert!(
            steps.iter().any(|s| s["target_rps"].as_f64() == Some(best)),
            "{r}"
        );
    }
    for (r, limit) in [(&records[4], 10), (&records[5], 100)] {
        // Every seek landed on its key and read its rows (checked in the child too).
        assert_eq!(r["metrics"]["found"], r["metrics"]["ops"], "{r}");
        assert!(
            r["metrics"]["rows"].as_u64().unwrap() <= r["metrics"]["ops"].as_u64().unwrap() * limit
        );
    }
    assert!(stdout.contains("| fixed rps=200 | cellar | "), "{stdout}");
    assert!(!dir.path().join("data/cellar").exists());

    // The report has a table for it.
    let md = dir.path().join("RESULTS.md");
    let rep = Command::new(BIN)
        .args(["report", "--json"])
        .arg(&json)
        .arg("--out")
        .arg(&md)
        .output()
        .expect("run report");
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("## Elliptics vs HBase, cold random reads"),
        "{text}"
    );
    assert!(text.contains("#### random reads"), "{text}");
    assert!(text.contains("| max rate p99<10ms | cellar |"), "{text}");
    assert!(
        text.contains("| device 4 KiB random reads, 4 in flight | fio |"),
        "{text}"
    );
}

#[test]
fn elliptics_java_peer_matches_the_shared_vector_when_built() {
    let hbase = java_dir().join("hbase/target");
    let jar = hbase.join("cellar-peer-hbase.jar");
    let Ok(deps) = std::fs::read_to_string(hbase.join("classpath.txt")) else {
        eprintln!("skipped: the hbase peer is not built (cellar-bench peers setup)");
        return;
    };
    let out = match Command::new("java")
        .arg("-cp")
        .arg(format!("{}:{}", jar.display(), deps.trim()))
        .args(["dev.cellar.peers.HBaseElliptics", "--self-test"])
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            eprintln!("skipped: no java");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<String> = std::fs::read_to_string(java_dir().join("elliptics-vector.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(got, want);
}
