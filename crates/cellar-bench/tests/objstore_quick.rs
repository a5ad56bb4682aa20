//! `cellar-bench objstore --quick` with tiny sizes: the real binary, its per-variant
//! children, a SeaweedFS it starts itself and stops, the JSON lines. Skipped (with a line
//! saying why) when no `weed` binary is found.
//!
//! The variants: Cellar on local disk, and SlateDB in the bucket when the binary has the
//! `slatedb` feature. Cellar's bucket variants need `Db::open` of `s3://` URLs (the
//! engine's `object-store` work); set OBJSTORE_SMOKE_ENGINES=all to include them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cellar-bench");

fn engines() -> String {
    std::env::var("OBJSTORE_SMOKE_ENGINES").unwrap_or_else(|_| {
        if cfg!(feature = "slatedb") {
            "cellar-local,slatedb".into()
        } else {
            "cellar-local".into()
        }
    })
}

#[test]
fn objstore_quick_runs_every_workload_on_seaweedfs() {
    let Some(weed) = cellar_bench::objstore::find_weed() else {
        eprintln!("skipped: no `weed` ($WEED_BIN, PATH, target/py-venv/bin/weed)");
        return;
    };
    eprintln!("weed: {}", weed.display());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.jsonl");
    let engines = engines();
    let out = Command::new(BIN)
        .args(["objstore", "--quick", "--engines", &engines])
        .args(["--records", "2000", "--reads", "200", "--value-size", "100"])
        .args(["--ycsb-records", "300", "--ycsb-threads", "2"])
        .args(["--durable-seconds", "0.5"])
        .arg("--db-dir")
        .arg(dir.path().join("db"))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run cellar-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstderr:\n{stderr}",
        out.status
    );
    let records: Vec<Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| common::record(l, "objstore"))
        .collect();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| readrandom_cold |"), "{stdout}");

    let variants: Vec<(&str, &str)> = if engines.contains("slatedb") {
        vec![("cellar", "local"), ("slatedb", "bucket")]
    } else {
        vec![("cellar", "local")]
    };
    let workloads = [
        "fillseq",
        "fillrandom",
        "readrandom_warm",
        "ycsb_load",
        "ycsb_a",
        "ycsb_e",
        "durable_puts_t1",
        "durable_puts_t16",
        "readrandom_cold",
    ];
    for (engine, variant) in &variants {
        for w in workloads {
            let r = records
                .iter()
                .find(|r| r["engine"] == *engine && r["variant"] == *variant && r["workload"] == w)
                .unwrap_or_else(|| panic!("no {engine}/{variant} {w} in {records:?}"));
            let m = &r["metrics"];
            assert!(m["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
            if w.starts_with("readrandom") {
                assert_eq!(m["found"], m["ops"], "every read finds its value: {r}");
            }
            if w == "durable_puts_t16" {
                assert_eq!(m["threads"], 16);
                assert_eq!(m["sync"], true);
            }
        }
    }
    // Cellar on local disk counts no GETs.
    let cold = records
        .iter()
        .find(|r| r["variant"] == "local" && r["workload"] == "readrandom_cold")
        .unwrap();
    assert!(cold["metrics"]["gets_per_read"].is_null(), "{cold}");
}
