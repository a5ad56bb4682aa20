//! fio's ceiling for the pattern a dfsio run just did: `numjobs` = files, `size` each,
//! `bs` = the buffer size, sequential, buffered I/O through the page cache with `psync`
//! (one `pwrite`/`pread` per block, as the tasks do), the write job ending with an fsync
//! (`end_fsync=1`) as each write task does. Reads start cold: fio drops each file's pages
//! before it reads (`invalidate=1`, its default), and the page cache is dropped as well
//! when this process may.
//!
//! Without `--fio`, a recorded figure may come from the ceilings file
//! (docs/benchmarks/fio-ceilings.json), but only an entry whose `test` is exactly
//! [`test_name`] of this pattern: a ceiling of another pattern (1 MiB O_DIRECT, one job) is
//! not this run's ceiling. Otherwise the ceiling is "not measured".

use std::path::Path;

use serde_json::Value;

use super::stats::MEGA;
use crate::error::{BenchError, Result};
use crate::report::machine;

/// fio's figures for one pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// All jobs' bytes over the longest job's time (MB = 2^20 bytes).
    pub aggregate_mb_per_sec: f64,
    /// The mean of the jobs' own rates (comparable with TestDFSIO's average IO rate);
    /// `None` when read from the ceilings file.
    pub per_job_mb_per_sec: Option<f64>,
    /// "fio 3.33, measured" or "fio-ceilings.json".
    pub source: String,
}

/// The ceilings file's name for this pattern.
pub fn test_name(mode: &str, files: usize, size: u64, buffer: usize) -> String {
    format!(
        "dfsio {mode}: {files} jobs × {} MB, bs {buffer} B, buffered, psync{}",
        size / MEGA,
        if mode == "write" { ", end fsync" } else { "" }
    )
}

/// Runs fio in `dir` (a scratch subdirectory, removed afterwards) for `mode` ("write" or
/// "read"). A read lays its files out first (fio does that itself, untimed).
pub fn measure(dir: &Path, mode: &str, files: usize, size: u64, buffer: usize) -> Result<Ceiling> {
    let scratch = dir.join("fio-scratch");
    std::fs::create_dir_all(&scratch).map_err(|e| BenchError::io(&scratch, e))?;
    let r = run(&scratch, mode, files, size, buffer);
    let _ = std::fs::remove_dir_all(&scratch);
    r
}

fn run(scratch: &Path, mode: &str, files: usize, size: u64, buffer: usize) -> Result<Ceiling> {
    let version = crate::fio::version()?;
    if mode == "read" {
        // Lay the files out (and let the page cache go) before the timed read.
        fio(scratch, "write", files, size, buffer)?;
        let _ = crate::procfs::drop_page_cache();
    }
    let out = fio(scratch, mode, files, size, buffer)?;
    let (aggregate, per_job) = rates(&out, mode)
        .ok_or_else(|| BenchError::Invalid(format!("--fio: no {mode} result in fio's output")))?;
    Ok(Ceiling {
        aggregate_mb_per_sec: aggregate,
        per_job_mb_per_sec: Some(per_job),
        source: format!("{version}, measured"),
    })
}

fn fio(scratch: &Path, mode: &str, files: usize, size: u64, buffer: usize) -> Result<Value> {
    let mut args = vec![
        format!("--name=dfsio-{mode}"),
        format!("--directory={}", scratch.display()),
        format!("--rw={mode}"),
        format!("--bs={buffer}"),
        format!("--numjobs={files}"),
        format!("--size={size}"),
        "--ioengine=psync".to_string(),
    ];
    if mode == "write" {
        args.push("--end_fsync=1".to_string());
    }
    crate::fio::run(&args, mode)
}

/// (aggregate, mean per job) MB/s from fio's JSON.
fn rates(json: &Value, side: &str) -> Option<(f64, f64)> {
    let jobs = json.get("jobs")?.as_array()?;
    let (mut bytes, mut longest_ms, mut rates) = (0.0, 0.0f64, Vec::new());
    for job in jobs {
        let io = job.get(side)?.get("io_bytes")?.as_f64()?;
        let ms = job.get("job_runtime")?.as_f64()?.max(1.0);
        bytes += io;
        longest_ms = longest_ms.max(ms);
        rates.push(io / MEGA as f64 / (ms / 1000.0));
    }
    if rates.is_empty() {
        return None;
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    Some((bytes / MEGA as f64 / (longest_ms / 1000.0), mean))
}

/// The recorded ceiling of this pattern in the ceilings file, if it has one.
pub fn recorded(path: &Path, test: &str) -> Result<Option<Ceiling>> {
    let Some(c) = machine::load_ceilings(path)? else {
        return Ok(None);
    };
    Ok(c.ceilings
        .iter()
        .find(|c| c.test == test)
        .and_then(|c| mb_per_sec(&c.result))
        .map(|mb| Ceiling {
            aggregate_mb_per_sec: mb,
            per_job_mb_per_sec: None,
            source: path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into(),
            ),
        }))
}

/// "~445 MB/s" → 445, "1.2 GB/s" → 1228.8 (MB and GB as 2^20 and 2^30 bytes).
fn mb_per_sec(text: &str) -> Option<f64> {
    let t = text.trim().trim_start_matches('~');
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let v: f64 = t[..end].parse().ok()?;
    match t[end..].trim() {
        "MB/s" => Some(v),
        "GB/s" => Some(v * 1024.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dfsio_fio_jobs_give_aggregate_and_mean_rates() {
        let out = r#"warning: something
{"jobs":[{"job_runtime":1000,"write":{"io_bytes":104857600}},
         {"job_runtime":2000,"write":{"io_bytes":104857600}}]}"#;
        // 200 MB over the longest 2 s; per job 100 and 50 MB/s.
        let json = crate::fio::parse(out).unwrap();
        assert_eq!(rates(&json, "write"), Some((100.0, 75.0)));
        assert_eq!(rates(&json, "read"), None);
        assert_eq!(mb_per_sec("~445 MB/s"), Some(445.0));
        assert_eq!(mb_per_sec("1.5 GB/s"), Some(1536.0));
        assert_eq!(mb_per_sec("1.2–1.8 GB/s"), None);
    }

    #[test]
    fn dfsio_recorded_ceiling_needs_the_exact_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fio-ceilings.json");
        let name = test_name("write", 8, 1 << 30, 1_000_000);
        assert_eq!(
            name,
            "dfsio write: 8 jobs × 1024 MB, bs 1000000 B, buffered, psync, end fsync"
        );
        std::fs::write(
            &path,
            format!(
                r#"{{"source":"s","ceilings":[{{"test":"sequential write","result":"~445 MB/s"}},
                {{"test":"{name}","result":"~900 MB/s"}}]}}"#
            ),
        )
        .unwrap();
        let c = recorded(&path, &name).unwrap().unwrap();
        assert_eq!(c.aggregate_mb_per_sec, 900.0);
        assert!(recorded(&path, &test_name("read", 8, 1 << 30, 1_000_000))
            .unwrap()
            .is_none());
        assert!(recorded(&dir.path().join("none.json"), &name)
            .unwrap()
            .is_none());
    }
}
