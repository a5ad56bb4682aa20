//! `cellar-bench server --quick --engines cellar` end to end: the embedded baseline, a real
//! `cellar serve`, happybase writer processes through its Thrift gateway, the Rust client's
//! BufferedMutator and open-loop gets over gRPC, the JSON lines and the targets.
//!
//! Needs the `cellar` binary ($CELLAR_BIN, else beside cellar-bench: `cargo build --release
//! -p cellar-cli`) and a Python with happybase (target/py-venv, which scripts/test.sh sets
//! up). Without them the test prints SKIP and passes, unless $CI is set.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cellar_bin() -> Option<PathBuf> {
    let bin = std::env::var_os("CELLAR_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            Path::new(env!("CARGO_BIN_EXE_cellar-bench"))
                .parent()
                .map(|d| d.join("cellar"))
        })?;
    bin.is_file().then_some(bin)
}

fn python() -> Option<PathBuf> {
    let p = workspace().join("target/py-venv/bin/python");
    let ok = Command::new(&p)
        .args(["-c", "import happybase"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

/// What is missing, or the binary and the python.
fn prerequisites() -> Result<(PathBuf, PathBuf), String> {
    let bin = cellar_bin().ok_or("no `cellar` binary (cargo build --release -p cellar-cli)")?;
    let py = python().ok_or("no target/py-venv with happybase (scripts/test.sh)")?;
    Ok((bin, py))
}

#[test]
fn server_quick_cellar_measures_every_variant_and_the_targets() {
    let (bin, py) = match prerequisites() {
        Ok(p) => p,
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIP server_quick: {why}");
            return;
        }
        Err(why) => panic!("CI is set but {why}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("server.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
        .args(["server", "--quick", "--engines", "cellar"])
        .args(["--rates", "1000,10000", "--get-seconds", "0.5"])
        .arg("--cellar-bin")
        .arg(&bin)
        .arg("--python")
        .arg(&py)
        .arg("--db-dir")
        .arg(dir.path().join("db"))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run cellar-bench");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| common::record(l, "server"))
        .collect();
    let of = |workload: &str| -> Vec<&Value> {
        lines.iter().filter(|l| l["workload"] == workload).collect()
    };
    // Variants that could not run (the Python gRPC client until clients/python is installed)
    // are lines of their own, with why.
    let (skipped, measured): (Vec<&Value>, Vec<&Value>) = of("server")
        .into_iter()
        .partition(|l| l["metrics"].get("skipped").is_some());
    for s in &skipped {
        assert!(!s["metrics"]["skipped"].as_str().unwrap().is_empty(), "{s}");
    }
    // grpc-python/wN appear once clients/python is installed in the venv.
    let variants: Vec<&str> = measured
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .filter(|v| !v.starts_with("grpc-python/"))
        .collect();
    assert_eq!(
        variants,
        [
            "embedded/w1",
            "embedded/w6",
            "thrift/w1",
            "thrift/w6",
            "native/w1",
            "native/w6",
            "get-grpc/r1000",
            "get-grpc/r10000",
            "get-thrift/r1000",
            "get-thrift/r10000",
        ],
        "{stdout}"
    );
    for r in &measured {
        assert_eq!(r["engine"], "cellar");
        for f in ["command", "commit", "date", "machine"] {
            let v = r[f].as_str().unwrap_or_default();
            assert!(!v.is_empty(), "{f} missing: {r}");
        }
        for f in ["client", "server"] {
            let v = r["metrics"][f].as_str().unwrap_or_default();
            assert!(!v.is_empty(), "{f} missing: {r}");
        }
        assert!(r["command"]
            .as_str()
            .unwrap()
            .starts_with("cellar-bench server --quick --engines cellar"));
        assert!(r["metrics"]["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        let variant = r["variant"].as_str().unwrap();
        if variant.starts_with("get-") {
            // Every requested row exists: the gets read what the imports wrote.
            assert_eq!(r["metrics"]["found"], r["metrics"]["ops"], "{r}");
            assert!(r["metrics"]["target_rps"].as_f64().unwrap() >= 1000.0);
        } else {
            assert_eq!(r["metrics"]["ops"], 20_000, "{r}");
        }
    }
    // The Rust-client ratio is computed (both sides ran); the HBase ones say what is missing.
    let targets = of("server_targets");
    assert_eq!(targets.len(), 7, "{targets:?}");
    let by = |name: &str| {
        *targets
            .iter()
            .find(|t| t["variant"] == name)
            .unwrap_or_else(|| panic!("no target {name}"))
    };
    let ratio = by("rust client ÷ embedded import, w1");
    assert!(ratio["metrics"]["value"].as_f64().unwrap() > 0.0, "{ratio}");
    assert!(ratio["metrics"]["met"].is_boolean());
    let thrift = by("happybase→cellar ÷ happybase→hbase thrift, w6");
    assert!(thrift["metrics"]["value"].is_null() && thrift["metrics"]["met"].is_null());
    assert!(thrift["metrics"]["inputs"]
        .as_str()
        .unwrap()
        .contains("hbase"));
    assert!(by("get-grpc p99 at 10000 gets per s")["metrics"]["value"]
        .as_f64()
        .is_some());
    assert!(stdout.contains("| target | measured | goal | met | from |"));
}
