//! `cellar-bench dfsio --quick`: TestDFSIO's report on stdout, one JSON line per test with
//! its fields, and reads that checked every byte the writes wrote.

mod common;

use std::process::Command;

use serde_json::Value;

#[test]
fn dfsio_quick_writes_reads_and_verifies_through_the_vfs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("out.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
        .args(["dfsio", "--quick", "--files", "3", "--size", "2MB"])
        .args([
            "--buffer-size",
            "300000",
            "--engines",
            "cellar,posix",
            "--dir",
        ])
        .arg(dir.path().join("work"))
        .arg("--json")
        .arg(&json)
        .arg("--ceilings")
        .arg(dir.path().join("no-ceilings.json"))
        .output()
        .expect("run cellar-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "----- TestDFSIO ----- : write",
        "----- TestDFSIO ----- : read",
        "        Number of files: 3",
        " Total MBytes processed: 6",
        "      Throughput mb/sec: ",
        " Average IO rate mb/sec: ",
        "  IO rate std deviation: ",
        "     Test exec time sec: ",
        "fio ceiling mb/sec (same pattern): not measured",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
    let text = std::fs::read_to_string(&json).expect("json");
    let records: Vec<Value> = text.lines().map(|l| common::record(l, "dfsio")).collect();
    let shape: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["engine"].as_str().unwrap(),
                r["variant"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("cellar", "write"),
            ("cellar", "read"),
            ("posix", "write"),
            ("posix", "read")
        ]
    );
    for r in &records {
        assert_eq!(r["workload"], "dfsio");
        assert_eq!(r["metrics"]["files"], 3);
        assert_eq!(r["metrics"]["total_mbytes"], 6.0);
        // 2 MiB in calls of 300000 B: 7 calls per file.
        assert_eq!(r["metrics"]["ops"], 21, "{r}");
        for f in [
            "throughput_mb_per_sec",
            "average_io_rate_mb_per_sec",
            "exec_time_sec",
            "mb_per_sec",
            "aggregate_mb_per_sec",
            "p50_us",
            "p99_us",
        ] {
            assert!(
                r["metrics"][f].as_f64().is_some_and(|v| v > 0.0),
                "{f} in {r}"
            );
        }
        assert_eq!(
            r["metrics"]["mb_per_sec"],
            r["metrics"]["throughput_mb_per_sec"]
        );
        assert_eq!(r["metrics"]["ops_per_sec"], r["metrics"]["mb_per_sec"]);
        assert!(r["metrics"]["io_rate_std_dev"]
            .as_f64()
            .is_some_and(|v| v >= 0.0));
        assert!(r["metrics"]["fio_mb_per_sec"].is_null());
        assert_eq!(r["metrics"]["tasks"].as_array().map(Vec::len), Some(3));
        let cmd = r["command"].as_str().expect("command");
        assert!(cmd.starts_with("cellar-bench dfsio --quick"), "{cmd}");
        if r["variant"] == "read" {
            assert_eq!(
                r["metrics"]["verified_bytes"],
                6 * 1024 * 1024,
                "every byte checked"
            );
        } else {
            assert!(r["metrics"]["sync_seconds"]
                .as_f64()
                .is_some_and(|s| s > 0.0));
        }
    }
    // The read removes the files.
    assert!(!dir.path().join("work/dfsio-cellar").exists());
}

#[test]
fn dfsio_rejects_engines_without_a_file_api_and_bad_sizes() {
    for args in [
        &["--engines", "rocksdb"][..],
        &["--size", "1.5GB"][..],
        &["--files", "0"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
            .arg("dfsio")
            .args(args)
            .output()
            .expect("run cellar-bench");
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("invalid argument"), "{args:?}: {err}");
    }
}

#[test]
fn dfsio_read_without_a_write_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
        .args(["dfsio", "--read", "--quick", "--dir"])
        .arg(dir.path())
        .output()
        .expect("run cellar-bench");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("run --write first"));
}
