//! `report --fio`: the disk's ceilings measured with short fio runs on the report's
//! filesystem, in the format of fio-ceilings.json (see machine.rs).
//!
//! Five runs of 5 s each on a 256 MiB scratch file (deleted afterwards): 4 KiB random reads
//! at queue depth 1 and 32, 1 MiB sequential reads and writes (all O_DIRECT, libaio), and
//! 4 KiB appending writes each followed by fdatasync (buffered, the way a WAL syncs). Short
//! runs on a shared machine: indicative ceilings, not a characterisation of the device.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::machine::{Ceiling, Ceilings};
use crate::error::{BenchError, Result};

const RUNTIME_SECONDS: u32 = 5;

struct Job {
    test: &'static str,
    args: &'static [&'static str],
    /// Which side of fio's job result to read: "read" or "write".
    side: &'static str,
    show: Show,
}

enum Show {
    Iops,
    Bandwidth,
}

const JOBS: [Job; 5] = [
    Job {
        test: "4 KiB random read, QD1",
        args: &[
            "--rw=randread",
            "--bs=4k",
            "--iodepth=1",
            "--direct=1",
            "--ioengine=libaio",
        ],
        side: "read",
        show: Show::Iops,
    },
    Job {
        test: "4 KiB random read, QD32",
        args: &[
            "--rw=randread",
            "--bs=4k",
            "--iodepth=32",
            "--direct=1",
            "--ioengine=libaio",
        ],
        side: "read",
        show: Show::Iops,
    },
    Job {
        test: "sequential read, 1 MiB, QD8",
        args: &[
            "--rw=read",
            "--bs=1m",
            "--iodepth=8",
            "--direct=1",
            "--ioengine=libaio",
        ],
        side: "read",
        show: Show::Bandwidth,
    },
    Job {
        test: "sequential write, 1 MiB, QD8",
        args: &[
            "--rw=write",
            "--bs=1m",
            "--iodepth=8",
            "--direct=1",
            "--ioengine=libaio",
        ],
        side: "write",
        show: Show::Bandwidth,
    },
    Job {
        test: "4 KiB write + fdatasync, appending",
        args: &[
            "--rw=write",
            "--bs=4k",
            "--fdatasync=1",
            "--ioengine=sync",
            "--fallocate=none",
        ],
        side: "write",
        show: Show::Iops,
    },
];

pub fn measure(dir: &Path) -> Result<Ceilings> {
    let version = Command::new("fio")
        .arg("--version")
        .output()
        .map_err(|e| BenchError::Invalid(format!("--fio: cannot run fio: {e}")))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let scratch = dir.join(".fio-ceilings.scratch");
    let mut ceilings = Vec::new();
    let mut result = Ok(());
    for job in &JOBS {
        // Appending means a new file each time; the readers reuse the one laid out before.
        if job.args.contains(&"--fdatasync=1") {
            let _ = std::fs::remove_file(&scratch);
        }
        eprintln!(
            "cellar-bench report: fio: {} ({RUNTIME_SECONDS} s)",
            job.test
        );
        match run_job(job, &scratch) {
            Ok(c) => ceilings.push(c),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let _ = std::fs::remove_file(&scratch);
    result?;
    Ok(Ceilings {
        source: format!(
            "Measured by `cellar-bench report --fio` with {version} on the filesystem of \
             `{}`: {RUNTIME_SECONDS} s per test on a 256 MiB file, O_DIRECT unless noted",
            dir.display()
        ),
        ceilings,
    })
}

fn run_job(job: &Job, scratch: &Path) -> Result<Ceiling> {
    let out = Command::new("fio")
        .arg(format!("--name={}", job.side))
        .arg(format!("--filename={}", scratch.display()))
        .arg("--size=256m")
        .arg(format!("--runtime={RUNTIME_SECONDS}"))
        .arg("--time_based")
        .arg("--output-format=json")
        .args(job.args)
        .output()
        .map_err(|e| BenchError::Invalid(format!("--fio: cannot run fio: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BenchError::Invalid(format!(
            "--fio: fio failed on \"{}\": {}",
            job.test,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    parse(job, &stdout).ok_or_else(|| {
        BenchError::Invalid(format!(
            "--fio: no result in fio's output for \"{}\"",
            job.test
        ))
    })
}

/// fio's JSON may follow warnings on stdout: parse from the first `{`.
fn parse(job: &Job, stdout: &str) -> Option<Ceiling> {
    let json: Value = serde_json::from_str(&stdout[stdout.find('{')?..]).ok()?;
    let side = json.get("jobs")?.get(0)?.get(job.side)?;
    let p50_us = side
        .get("clat_ns")
        .and_then(|c| c.get("percentile"))
        .and_then(|p| p.get("50.000000"))
        .and_then(Value::as_f64)
        .map(|ns| ns / 1000.0);
    let iops = side.get("iops")?.as_f64()?;
    let bw = side.get("bw_bytes")?.as_f64()?;
    let syncs = job.args.contains(&"--fdatasync=1");
    let result = match job.show {
        Show::Iops if syncs => format!("{:.1}K/s", iops / 1000.0),
        Show::Iops => format!("{:.1}K IOPS", iops / 1000.0),
        Show::Bandwidth => format!("{:.2} GB/s", bw / 1e9),
    };
    // A write's completion latency leaves out its fdatasync: only the pair rate means much.
    let notes = if syncs {
        "buffered writes (not O_DIRECT), each followed by fdatasync".to_string()
    } else {
        match (&job.show, p50_us) {
            (Show::Iops, Some(p50)) => format!("p50 {p50:.0} µs"),
            _ => String::new(),
        }
    };
    Some(Ceiling {
        test: job.test.to_string(),
        result,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_output_after_warnings_is_parsed() {
        let out = r#"note: a warning
{"jobs":[{"read":{"iops":19234.5,"bw_bytes":78784512,"clat_ns":{"percentile":{"50.000000":50176}}}}]}"#;
        let c = parse(&JOBS[0], out).unwrap();
        assert_eq!(c.result, "19.2K IOPS");
        assert_eq!(c.notes, "p50 50 µs");
        assert!(parse(&JOBS[0], "fio: error").is_none());
    }
}
