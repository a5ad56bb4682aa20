//! `cellar-bench dfsio`: Hadoop's TestDFSIO as SeaweedFS ran it (`-write`, `-read`, `-nrFiles`,
//! `-size`, `-bufferSize`), run through Cellar's `Vfs` on this machine, with fio's ceiling
//! for the same pattern beside it.
//!
//! As TestDFSIO: one task per file, all tasks at once (threads here, map tasks there). A
//! write task creates its file and appends `size` bytes in buffer-sized writes; a read task
//! reads its file back sequentially in buffer-sized reads. The figures are TestDFSIO's
//! (stats.rs). Differences, on purpose:
//! * the data is incompressible and not dedupable (io.rs), where TestDFSIO writes one
//!   repeated character;
//! * each write task ends with an fdatasync of its file, inside its time. TestDFSIO's
//!   `close()` on HDFS waits for the block's pipeline to acknowledge the data, which is in
//!   the DataNodes' memory, not on their disks (hsync is not called and `dfs.datanode.
//!   synconclose` is off by default): its write figures are not durable ones, ours are;
//! * read tasks check every byte they read (outside their time);
//! * the page cache is dropped before the read (as root), so reads come from the disk.
//!
//! Layout: this file (flags, the run, output), `io.rs` (content and tasks), `stats.rs`
//! (TestDFSIO's sizes and summary), `fio.rs` (the ceiling), `record.rs` (the JSON line).

mod fio;
mod io;
mod record;
mod stats;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use clap::Args;

use self::io::{Layer, Pattern, TaskOut};
use self::record::DfsioRecord;
use self::stats::{parse_size, Summary, Task};
use crate::error::{BenchError, Result};
use crate::measure::Latency;
use crate::procfs;

const QUICK_SIZE: u64 = 16 << 20;
const DEFAULT_SIZE: &str = "1GB";
/// TestDFSIO's DEFAULT_BUFFER_SIZE (bytes).
const DEFAULT_BUFFER: usize = 1_000_000;
const PATTERN_SEED: u64 = 3;

#[derive(Debug, Clone, Args)]
pub struct DfsioArgs {
    /// Run the write test (TestDFSIO -write). With neither --write nor --read: write, then
    /// read.
    #[arg(long)]
    pub write: bool,
    /// Run the read test (TestDFSIO -read) on the files a write test left in --dir.
    #[arg(long)]
    pub read: bool,
    /// Files, one task (thread) each, all at once (TestDFSIO -nrFiles).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub files: usize,
    /// Bytes per file, TestDFSIO's syntax: 1GB, 512MB, 64KB, 100B (no unit: MB)
    /// [default: 1GB, or 16MB with --quick].
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Bytes per write or read call (TestDFSIO -bufferSize; SeaweedFS's run used 8388608). Plain
    /// bytes, or a size with a unit (8MB).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_BUFFER.to_string())]
    pub buffer_size: String,
    /// Where the files go (DIR/dfsio-<engine>/file_<i>); removed after the read unless
    /// --keep-files.
    #[arg(long, value_name = "DIR", default_value = "bench-data/dfsio")]
    pub dir: PathBuf,
    /// File layers, comma-separated: cellar (the engine's Vfs, RealVfs) and posix (std::fs
    /// straight, the baseline the Vfs should cost nothing over).
    #[arg(long, value_name = "LIST", default_value = "cellar")]
    pub engines: String,
    /// A small run in seconds: 8 files × 16MB unless --files/--size say otherwise.
    #[arg(long)]
    pub quick: bool,
    /// Write one JSON object per test and engine here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Measure fio's ceiling for the same pattern (needs fio; writes files × size again).
    /// Without it the ceiling comes from --ceilings if that has this exact pattern.
    #[arg(long)]
    pub fio: bool,
    /// Recorded fio ceilings (see docs/benchmarks.md, "dfsio").
    #[arg(
        long,
        value_name = "FILE",
        default_value = "docs/benchmarks/fio-ceilings.json"
    )]
    pub ceilings: PathBuf,
    /// Do not drop the page cache before the read test, even as root.
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Keep the files after the run.
    #[arg(long)]
    pub keep_files: bool,
}

/// The resolved run.
#[derive(Debug, Clone)]
struct Spec {
    write: bool,
    read: bool,
    files: usize,
    size: u64,
    buffer: usize,
    layers: Vec<(String, Layer)>,
}

impl Spec {
    fn resolve(a: &DfsioArgs) -> Result<Spec> {
        let size = match &a.size {
            Some(s) => parse_size(s)?,
            None if a.quick => QUICK_SIZE,
            None => parse_size(DEFAULT_SIZE)?,
        };
        let buffer = match a.buffer_size.trim().parse::<u64>() {
            Ok(b) => b,
            Err(_) => parse_size(&a.buffer_size)?,
        };
        if a.files == 0 || size == 0 || buffer == 0 {
            return Err(BenchError::Invalid(
                "--files, --size and --buffer-size must be at least 1".into(),
            ));
        }
        let buffer = usize::try_from(buffer)
            .ok()
            .filter(|b| *b <= 1 << 30)
            .ok_or_else(|| BenchError::Invalid("--buffer-size is at most 1GB".into()))?;
        let mut layers = Vec::new();
        for name in a
            .engines
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            let layer = Layer::from_name(name).ok_or_else(|| {
                BenchError::Invalid(format!(
                    "dfsio --engines: {name:?} is not a file layer here: dfsio measures \
                     Cellar's Vfs (cellar) and std::fs (posix); the key-value engines have \
                     no file API to run TestDFSIO through"
                ))
            })?;
            if !layers.iter().any(|(n, _)| n == name) {
                layers.push((name.to_string(), layer));
            }
        }
        if layers.is_empty() {
            return Err(BenchError::Invalid("--engines names no file layer".into()));
        }
        let (write, read) = if a.write || a.read {
            (a.write, a.read)
        } else {
            (true, true)
        };
        Ok(Spec {
            write,
            read,
            files: a.files,
            size,
            buffer,
            layers,
        })
    }
}

pub fn run(a: &DfsioArgs) -> Result<()> {
    let spec = Spec::resolve(a)?;
    if let Some(p) = &a.json {
        std::fs::File::create(p).map_err(|e| BenchError::io(p, e))?;
    }
    let pattern = Pattern::new(spec.buffer, PATTERN_SEED);
    let mut records = Vec::new();
    for (name, layer) in &spec.layers {
        let dir = a.dir.join(format!("dfsio-{name}"));
        let modes: Vec<&str> = [("write", spec.write), ("read", spec.read)]
            .iter()
            .filter(|(_, on)| *on)
            .map(|(m, _)| *m)
            .collect();
        for mode in modes {
            let cache_mode = if mode == "read" {
                drop_caches(a.no_drop_caches)
            } else {
                "warm".to_string()
            };
            eprintln!(
                "[dfsio] {name}: {mode}: {} files × {} B, {} B per call ({cache_mode})",
                spec.files, spec.size, spec.buffer
            );
            let (summary, tasks, calls) = run_tasks(&spec, *layer, &pattern, &dir, mode)?;
            let ceiling = ceiling(a, &spec, mode)?;
            for line in summary.lines(mode, SystemTime::now()) {
                println!("{line}");
            }
            print_ceiling(&summary, ceiling.as_ref());
            println!();
            let mut r = DfsioRecord::new(name, mode, &spec_view(&spec), &summary, &tasks, &calls);
            r.cache_mode = cache_mode;
            r.set_ceiling(ceiling.as_ref());
            records.push(r);
        }
        if spec.read && !a.keep_files {
            procfs::remove_dir(&dir)?;
        }
    }
    if let Some(p) = &a.json {
        crate::record::write_json_lines(p, "dfsio", &records)?;
    }
    Ok(())
}

fn spec_view(s: &Spec) -> record::Shape {
    record::Shape {
        files: s.files,
        file_bytes: s.size,
        buffer_bytes: s.buffer,
    }
}

fn file_path(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("file_{i}"))
}

/// All tasks of one test at once; the summary, the tasks, and every call's latency.
fn run_tasks(
    spec: &Spec,
    layer: Layer,
    pattern: &Pattern,
    dir: &Path,
    mode: &str,
) -> Result<(Summary, Vec<TaskOut>, Latency)> {
    if mode == "write" {
        procfs::remove_dir(dir)?;
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
    } else if !file_path(dir, 0).exists() {
        return Err(BenchError::Invalid(format!(
            "--read: no files in {} (run --write first, with the same --dir and --files)",
            dir.display()
        )));
    }
    let (span, outs) = crate::suite::run_threads(spec.files, |i| {
        let path = file_path(dir, i);
        if mode == "write" {
            io::write_task(layer, pattern, &path, i as u64, spec.size, spec.buffer)
        } else {
            io::read_task(layer, pattern, &path, i as u64, spec.buffer)
        }
    })?;
    let tasks: Vec<Task> = outs
        .iter()
        .map(|o| Task {
            bytes: o.bytes,
            seconds: o.seconds,
        })
        .collect();
    let mut calls = Latency::default();
    for o in &outs {
        calls.merge(&o.calls);
    }
    Ok((Summary::of(&tasks, span.as_secs_f64()), outs, calls))
}

/// Drops the page cache when permitted; says what the read will see.
fn drop_caches(refused: bool) -> String {
    if refused {
        return "warm (--no-drop-caches)".into();
    }
    match procfs::can_drop_caches() {
        Ok(()) => "drop_caches".into(),
        Err(why) => format!("warm (page cache not dropped: {why})"),
    }
}

fn ceiling(a: &DfsioArgs, spec: &Spec, mode: &str) -> Result<Option<fio::Ceiling>> {
    if a.fio {
        eprintln!("[dfsio] fio: {mode}, the same pattern");
        return fio::measure(&a.dir, mode, spec.files, spec.size, spec.buffer).map(Some);
    }
    fio::recorded(
        &a.ceilings,
        &fio::test_name(mode, spec.files, spec.size, spec.buffer),
    )
}

/// Below TestDFSIO's lines: the aggregate rate and fio's, like for like.
fn print_ceiling(s: &Summary, c: Option<&fio::Ceiling>) {
    println!(
        "   Aggregate mb/sec (total MB / exec time): {}",
        stats::decimal(s.aggregate_mb_per_sec)
    );
    match c {
        Some(c) => {
            let per_job = c
                .per_job_mb_per_sec
                .map_or_else(String::new, |p| format!(", {} per job", stats::decimal(p)));
            println!(
                "   fio ceiling mb/sec (same pattern): {} aggregate{per_job} ({})",
                stats::decimal(c.aggregate_mb_per_sec),
                c.source
            );
            println!(
                "   aggregate / fio ceiling: {:.2}",
                s.aggregate_mb_per_sec / c.aggregate_mb_per_sec.max(1e-9)
            );
        }
        None => println!("   fio ceiling mb/sec (same pattern): not measured (--fio measures it)"),
    }
}
