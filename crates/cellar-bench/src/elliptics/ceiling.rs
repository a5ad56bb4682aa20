//! The device's ceilings for the read phases' patterns, measured by fio in the same run
//! (`--fio`): 4 KiB random reads with O_DIRECT, one `pread` at a time from each of N jobs
//! (`psync`), for one step's length each, over a file laid out first in the run's directory
//! (on the disk the engines' files were on). Twice: with N = `--threads`, as many reads in
//! flight as the open loop's reader threads can have, and with N = `--scan-threads`, as many
//! as the range phases' closed loop has. A cold get, or a cold seek whose rows fit in one
//! block, reads one block of about 4 KiB and cannot be served faster than this, so the
//! max-rate and range rows say how close each engine came to it.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::line::Line;
use super::Spec;
use crate::error::{BenchError, Result};
use crate::procfs;

/// The `engine` of the ceiling's line.
pub const ENGINE: &str = "fio";

/// The random reads' ceiling's variant, in their table.
pub fn variant(spec: &Spec) -> String {
    format!("device 4 KiB random reads, {} in flight", spec.threads)
}

/// The range phases' ceiling's variant: "range" first puts it in their table
/// (`report::model::elliptics_group`).
pub fn range_variant(spec: &Spec) -> String {
    format!(
        "range ceiling: device 4 KiB random reads, {} in flight",
        spec.scan_threads
    )
}

/// The smallest file fio reads by default.
const MIN_FILE_BYTES: u64 = 64 << 20;

/// The default size of fio's file: the largest database the run loaded (its size on disk),
/// at least `MIN_FILE_BYTES`. Reads spread over a few GB of a virtual disk can come from
/// the host's page cache: on the benchmark machine fio read a 4 GiB file at 61 K IOPS and
/// the 26 GB of a 215 M-record database at 13.7 K, both 4 KiB, O_DIRECT, 32 in flight.
pub fn default_file_bytes(lines: &[Line]) -> u64 {
    lines
        .iter()
        .filter_map(|l| l.db_bytes)
        .max()
        .unwrap_or(0)
        .max(MIN_FILE_BYTES)
}

/// Runs fio in a scratch directory under `spec.dir` (removed afterwards) and returns the
/// ceilings' lines, the random reads' then the range phases': IOPS as ops/s, fio's
/// completion latencies. The second run reads the file the first laid out.
pub fn measure(spec: &Spec, file_bytes: u64) -> Result<Vec<Line>> {
    let scratch = spec.dir.join("fio-scratch");
    std::fs::create_dir_all(&scratch).map_err(|e| BenchError::io(&scratch, e))?;
    let r = crate::fio::version().and_then(|version| {
        let settled = lay_out(&scratch, file_bytes, spec.quiet())?;
        depths(spec)
            .into_iter()
            .map(|(variant, jobs)| {
                let mut line = run(spec, &scratch, file_bytes, jobs, variant)?;
                line.note = format!(
                    "{version}: O_DIRECT, psync, {jobs} jobs, {} MiB file",
                    file_bytes >> 20
                );
                line.notes.push(settled.clone());
                Ok(line)
            })
            .collect()
    });
    let _ = std::fs::remove_dir_all(&scratch);
    r
}

/// The ceilings `measure` takes, in its order: each variant with its reads in flight.
fn depths(spec: &Spec) -> [(String, usize); 2] {
    [
        (variant(spec), spec.threads),
        (range_variant(spec), spec.scan_threads),
    ]
}

/// fio's file: its path in `scratch` and its size.
fn file_args(scratch: &Path, file_bytes: u64) -> [String; 2] {
    [
        format!("--filename={}", scratch.join("ceiling").display()),
        format!("--size={file_bytes}"),
    ]
}

/// Has fio lay out its file and waits until the device has been idle for `quiet`: the
/// layout's writes and the trimming of the databases deleted before would otherwise share the
/// device with the reads (`procfs::wait_for_quiet_device`). Returns a note saying how long
/// that took.
fn lay_out(scratch: &Path, file_bytes: u64, quiet: Duration) -> Result<String> {
    let mut args = vec!["--name=layout".to_string(), "--create_only=1".to_string()];
    args.extend(file_args(scratch, file_bytes));
    crate::fio::run(&args, "file layout")?;
    Ok(
        match procfs::wait_for_quiet_device(scratch, quiet, super::DEVICE_IDLE_TIMEOUT) {
            Some(w) => format!(
                "file laid out; before the reads the device was {}",
                w.describe(quiet)
            ),
            None => "file laid out; the device's counters could not be read".to_string(),
        },
    )
}

/// One read run of fio over the laid-out file with `jobs` reads in flight.
fn run(spec: &Spec, scratch: &Path, file_bytes: u64, jobs: usize, variant: String) -> Result<Line> {
    let mut args = vec![
        "--name=randread".to_string(),
        "--rw=randread".to_string(),
        "--bs=4k".to_string(),
        "--direct=1".to_string(),
        "--ioengine=psync".to_string(),
        format!("--numjobs={jobs}"),
        "--group_reporting".to_string(),
        "--time_based".to_string(),
        format!(
            "--runtime={}ms",
            (spec.step_seconds * 1000.0).round().max(1.0)
        ),
    ];
    args.extend(file_args(scratch, file_bytes));
    let json = crate::fio::run(&args, "4 KiB random reads")?;
    line_from(&json, spec, variant)
        .ok_or_else(|| BenchError::Invalid("--fio: no read result in fio's output".into()))
}

/// The line of fio's group-reported JSON: read IOPS, completion latency percentiles.
fn line_from(json: &Value, spec: &Spec, variant: String) -> Option<Line> {
    let job = json.get("jobs")?.as_array()?.first()?;
    let read = job.get("read")?;
    let iops = read.get("iops")?.as_f64()?;
    let pct = read.get("clat_ns")?.get("percentile")?;
    let us = |p: &str| pct.get(p).and_then(Value::as_f64).map(|ns| ns / 1000.0);
    let mut line = Line::new(ENGINE, variant, spec);
    line.ops = read.get("total_ios")?.as_u64()?;
    // With group reporting `job_runtime` adds up the jobs' times.
    line.seconds = line.ops as f64 / iops.max(f64::MIN_POSITIVE);
    line.ops_per_sec = iops;
    line.p50_us = us("50.000000")?;
    line.p90_us = us("90.000000")?;
    line.p99_us = us("99.000000")?;
    line.max_us = read.get("clat_ns")?.get("max")?.as_f64()? / 1000.0;
    line.latency_unit = "4 KiB read".into();
    Some(line)
}

/// Appends to each engine's max-rate and range lines how its rate compares with the
/// ceiling measured at the same number of reads in flight (`ceilings` as `measure` returns
/// them).
pub fn annotate(lines: &mut [Line], ceilings: &[Line], spec: &Spec) {
    let [gets, ranges] = depths(spec);
    let max_rates = [spec.variant_max_p50(), spec.variant_max_p99()];
    for l in lines.iter_mut().filter(|l| l.engine != ENGINE) {
        let (wanted, in_flight) = if l.variant.starts_with("range") {
            &ranges
        } else if max_rates.contains(&l.variant) {
            &gets
        } else {
            continue;
        };
        let found = ceilings.iter().find(|c| &c.variant == wanted);
        let Some(ceiling) = found.filter(|c| c.ops_per_sec > 0.0) else {
            continue;
        };
        let share = format!(
            "{:.2}x the device's 4 KiB random reads at the same {in_flight} in flight (fio, \
             this run)",
            l.ops_per_sec / ceiling.ops_per_sec
        );
        l.note = if l.note.is_empty() {
            share
        } else {
            format!("{}; {share}", l.note)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        let mut s = Spec::resolve(&super::super::tests::args(&["--quick"])).unwrap();
        s.threads = 32;
        s
    }

    #[test]
    fn elliptics_ceiling_reads_fios_group_report_and_annotates_max_rates() {
        // The shape fio 3.33 prints with --group_reporting (trimmed), after a warning.
        let out = r#"fio: note: something
{"jobs":[{"jobname":"randread","job_runtime":64000,"read":{"io_bytes":1048576000,
 "total_ios":256000,"iops":128000.0,"clat_ns":{"max":9000000.0,
 "percentile":{"50.000000":200000,"90.000000":400000,"99.000000":1000000}}}}]}"#;
        let json = crate::fio::parse(out).unwrap();
        let c = line_from(&json, &spec(), variant(&spec())).unwrap();
        assert_eq!(c.engine, "fio");
        assert_eq!(c.variant, "device 4 KiB random reads, 32 in flight");
        assert_eq!((c.ops, c.ops_per_sec, c.seconds), (256_000, 128_000.0, 2.0));
        assert_eq!(
            (c.p50_us, c.p90_us, c.p99_us, c.max_us),
            (200.0, 400.0, 1000.0, 9000.0)
        );
        let empty = crate::fio::parse(r#"{"jobs":[]}"#).unwrap();
        assert!(line_from(&empty, &spec(), variant(&spec())).is_none());
    }

    #[test]
    fn elliptics_ceilings_annotate_max_rates_and_ranges_at_their_own_depths() {
        let mut s = spec();
        s.scan_threads = 8;
        let mut gets = Line::new(ENGINE, variant(&s), &s);
        gets.ops_per_sec = 128_000.0;
        let mut ranges = Line::new(ENGINE, range_variant(&s), &s);
        ranges.ops_per_sec = 50_000.0;
        assert_eq!(
            ranges.variant,
            "range ceiling: device 4 KiB random reads, 8 in flight"
        );
        let mut lines = vec![
            Line::new("cellar", s.variant_max_p99(), &s),
            Line::new("cellar", "range seek+10", &s),
            Line::new("cellar", s.variant_fixed(), &s),
        ];
        lines[0].ops_per_sec = 96_000.0;
        lines[0].note = "on disk 1 GiB".into();
        lines[1].ops_per_sec = 40_000.0;
        let ceilings = [gets, ranges];
        annotate(&mut lines, &ceilings, &s);
        assert_eq!(
            lines[0].note,
            "on disk 1 GiB; 0.75x the device's 4 KiB random reads at the same 32 in flight (fio, this run)"
        );
        assert_eq!(
            lines[1].note,
            "0.80x the device's 4 KiB random reads at the same 8 in flight (fio, this run)"
        );
        assert!(lines[2].note.is_empty(), "the fixed rate is not compared");
        // Without the range phases' ceiling their lines stay as they are.
        let mut range = vec![Line::new("cellar", "range seek+100", &s)];
        annotate(&mut range, &ceilings[..1], &s);
        assert!(range[0].note.is_empty());
    }

    #[test]
    fn elliptics_ceiling_file_is_as_large_as_the_largest_database() {
        let s = spec();
        let mut lines = vec![
            Line::new("cellar", "load", &s),
            Line::new("rocksdb", "load", &s),
            Line::new("cellar", s.variant_max_p99(), &s),
        ];
        assert_eq!(
            default_file_bytes(&lines),
            64 << 20,
            "no database: the minimum"
        );
        lines[0].db_bytes = Some(10 << 30);
        lines[1].db_bytes = Some(12 << 30);
        assert_eq!(default_file_bytes(&lines), 12 << 30);
        lines[0].db_bytes = Some(1 << 20);
        lines[1].db_bytes = None;
        assert_eq!(
            default_file_bytes(&lines),
            64 << 20,
            "a small database: the minimum"
        );
    }
}
