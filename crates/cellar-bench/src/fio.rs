//! Running fio, the device-ceiling tool the suites compare with: its version, one job run
//! with JSON output, and the parsed JSON. What a suite asks fio to do, and what it takes from
//! the answer, stays with the suite (`dfsio/fio.rs`, `elliptics/ceiling.rs`).

use std::process::Command;

use serde_json::Value;

use crate::error::{BenchError, Result};

/// `fio --version` ("fio-3.33"), or why fio cannot run (it is not installed: `cellar-bench
/// peers setup --apt`, or `apt-get install fio`).
pub fn version() -> Result<String> {
    let out = Command::new("fio")
        .arg("--version")
        .output()
        .map_err(|e| not_runnable(&e.to_string()))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs fio with `args` (`--output-format=json` is added) and returns its JSON. `what` names
/// the job in errors.
pub fn run(args: &[String], what: &str) -> Result<Value> {
    let out = Command::new("fio")
        .args(args)
        .arg("--output-format=json")
        .output()
        .map_err(|e| not_runnable(&e.to_string()))?;
    if !out.status.success() {
        return Err(BenchError::Invalid(format!(
            "--fio: fio {what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    parse(&String::from_utf8_lossy(&out.stdout))
        .ok_or_else(|| BenchError::Invalid(format!("--fio: fio {what} printed no JSON result")))
}

/// fio's JSON, which may follow warnings on stdout.
pub fn parse(stdout: &str) -> Option<Value> {
    serde_json::from_str(&stdout[stdout.find('{')?..]).ok()
}

fn not_runnable(why: &str) -> BenchError {
    BenchError::Invalid(format!(
        "--fio: cannot run fio ({why}); install it (apt-get install fio)"
    ))
}
