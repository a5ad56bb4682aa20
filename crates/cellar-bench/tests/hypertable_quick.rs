//! `cellar-bench hypertable --quick`: runs end to end and reports every measurement.

mod common;

use std::process::Command;

#[test]
fn hypertable_quick_reports_every_variant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("out.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
        .args(["hypertable", "--quick", "--dir"])
        .arg(dir.path().join("work"))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run cellar-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "Total inserts:",
        "| load 4 concurrent (a-d) |",
        "| scan (library) |",
        "| INSERT stream",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
    let text = std::fs::read_to_string(&json).expect("json");
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| common::record(l, "hypertable"))
        .collect();
    assert!(records.len() >= 5, "{text}");
    for r in &records {
        assert_eq!(r["workload"], "hypertable");
        let rate = r["metrics"]["ops_per_sec"].as_f64().expect("ops_per_sec");
        // Time-only measurements (the compaction settle) have no cells and no rate.
        assert!(rate > 0.0 || r["metrics"]["cells"] == 0, "{r}");
    }
    // Every inserted cell is scanned back (the families keep every version).
    let cells = |v: &str| {
        records
            .iter()
            .find(|r| r["variant"] == v)
            .and_then(|r| r["metrics"]["cells"].as_u64())
            .expect("variant present")
    };
    assert_eq!(
        cells("scan (library)"),
        cells("load 4 concurrent (a-d)") + cells("load 1 job (e)")
    );
}

/// Peers load the same cells through put_batch and scan them back; each line names its
/// engine and the parent's command.
#[test]
fn hypertable_quick_runs_the_peers_on_the_same_cells() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("out.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
        .args([
            "hypertable",
            "--quick",
            "--engines",
            "cellar,lmdb,fjall",
            "--dir",
        ])
        .arg(dir.path().join("work"))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run cellar-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("json");
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| common::record(l, "hypertable"))
        .collect();
    let cells = |engine: &str, variant: &str| {
        records
            .iter()
            .find(|r| r["engine"] == engine && r["variant"] == variant)
            .and_then(|r| r["metrics"]["cells"].as_u64())
            .unwrap_or_else(|| panic!("{engine} {variant} missing in\n{text}"))
    };
    let loaded = cells("cellar", "load 4 concurrent (a-d)") + cells("cellar", "load 1 job (e)");
    for engine in ["lmdb", "fjall"] {
        if !records.iter().any(|r| r["engine"] == engine) {
            assert!(stdout.contains(&format!("skipped {engine}")), "{stdout}");
            continue;
        }
        // The same input parsed into the same cells as Cellar's loader made.
        assert_eq!(
            cells(engine, "load 4 concurrent (a-d)"),
            cells("cellar", "load 4 concurrent (a-d)")
        );
        assert_eq!(cells(engine, "scan (library)"), loaded);
        let peer: Vec<&serde_json::Value> =
            records.iter().filter(|r| r["engine"] == engine).collect();
        assert_eq!(peer.len(), 4, "loads, settle, scan: {text}");
        for r in peer {
            assert_eq!(r["workload"], "hypertable");
            assert!(
                r["metrics"]["db_bytes"].as_u64().is_some_and(|b| b > 0),
                "{r}"
            );
            let cmd = r["command"].as_str().expect("command");
            assert!(
                cmd.starts_with("cellar-bench hypertable --quick --engines"),
                "{cmd}"
            );
            assert!(!cmd.contains("--child"), "{cmd}");
        }
    }
}
