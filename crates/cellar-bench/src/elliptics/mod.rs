//! `cellar-bench elliptics`: Elliptics against HBase (ioremap.net's write-up) on hundreds of millions of
//! ~200-byte records on one server: random reads at a fixed rate from cold caches (median
//! latency), the highest random-read rate that stays within a latency bound, random range
//! reads, and the size on disk.
//!
//! Every engine runs in a child process of its own and does the same phases on the same
//! data (data.rs): load N records in key order (timed), settle (untimed), then for each read
//! phase drop the page cache and reopen the engine (a cold start) and run it. Rust engines
//! run as `cellar-bench elliptics --child '<Spec as JSON>'` (child.rs, the protocol of
//! crate::child); HBase as `java ... dev.cellar.peers.HBaseElliptics <flags>` (hbase.rs).
//! Both print one [`Line`] per variant.
//!
//! Layout: this file (command line, the resolved [`Spec`], the parent), `data.rs` (records
//! and read streams shared with Java), `openloop.rs` (the open-loop reader and the rate
//! search), `child.rs` (a Rust engine's phases), `hbase.rs` (running the Java peer),
//! `ceiling.rs` (the device's ceiling by fio, `--fio`), `line.rs` (the result line and the
//! table).

mod ceiling;
mod child;
mod data;
mod hbase;
mod line;
pub(crate) mod openloop;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::engines;
use crate::error::{BenchError, Result};
use crate::java;
use crate::procfs;

pub use line::Line;

pub const WORKLOAD: &str = "elliptics";
/// Every engine that may run, in table order; each is skipped (and said so) when it is not
/// built.
pub const DEFAULT_ENGINES: &str = "cellar,rocksdb,lmdb,hbase";

#[derive(Debug, Clone, Args)]
pub struct EllipticsArgs {
    /// Engines, comma-separated: Rust engines by registry name (cellar, rocksdb, lmdb, ...)
    /// and the Java peer hbase [default: cellar,rocksdb,lmdb,hbase, each skipped when not
    /// built]
    #[arg(long, value_name = "LIST")]
    pub engines: Option<String>,
    /// Records loaded [default: 20000000, or 20000 with --quick]
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,
    /// A small run that finishes in seconds: 20000 records, 2-second fixed-rate phase,
    /// 1-second steps, rates up to 1600/s
    #[arg(long)]
    pub quick: bool,
    /// Bytes of text per value
    #[arg(long, value_name = "BYTES", default_value_t = 200)]
    pub value_size: usize,
    /// Requests per second of the fixed-rate phase, and the first rate of the max-rate search
    #[arg(long, value_name = "R", default_value_t = 200)]
    pub rps: u64,
    /// Length of the fixed-rate phase (the write-up ran 10 minutes) [default: 60, or 2 with --quick]
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// Length of each step of the max-rate search and of each range phase
    /// [default: 10, or 1 with --quick]
    #[arg(long, value_name = "S")]
    pub step_seconds: Option<f64>,
    /// The max-rate search's p50 bound (ms)
    #[arg(long, value_name = "MS", default_value_t = 100.0)]
    pub latency_ms: f64,
    /// The max-rate search's p99 bound (ms)
    #[arg(long, value_name = "MS", default_value_t = 10.0)]
    pub p99_latency_ms: f64,
    /// The highest rate the search tries [default: 200000, or 1600 with --quick]
    #[arg(long, value_name = "R")]
    pub max_rps: Option<u64>,
    /// Steps per search at most (each criterion has its own search; steps are shared)
    #[arg(long, value_name = "K", default_value_t = 20)]
    pub max_steps: usize,
    /// Reader threads of the open loop (requests in flight at most)
    #[arg(long, value_name = "T", default_value_t = 32)]
    pub threads: usize,
    /// Threads of the range phases (closed loop: each issues its next seek when the last
    /// one is done)
    #[arg(long, value_name = "T", default_value_t = 8)]
    pub scan_threads: usize,
    /// Block cache of the Rust engines (MiB), empty at each cold start
    #[arg(long, value_name = "MB", default_value_t = 256)]
    pub cache_mb: u64,
    /// Working directory: one subdirectory per engine, deleted before use
    #[arg(long, value_name = "DIR", default_value = "bench-data/elliptics")]
    pub dir: PathBuf,
    /// Seed of the read streams (the same keys for every engine)
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Write one JSON object per engine × variant here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the Markdown table here
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// The bench/java folder [default: $CELLAR_BENCH_JAVA_DIR, else the source tree's]
    #[arg(long, value_name = "DIR")]
    pub java_dir: Option<PathBuf>,
    /// Maximum heap of the Java peer (MiB)
    #[arg(long, value_name = "MB", default_value_t = 4096)]
    pub java_heap_mb: u64,
    /// Do not drop the page cache before the read phases, even where permitted
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Keep each engine's data after its run
    #[arg(long)]
    pub keep_data: bool,
    /// After the engines, measure the device's ceilings for the read phases with fio: 4 KiB
    /// random reads, O_DIRECT, --threads in flight and then --scan-threads in flight, one step
    /// long each (needs fio)
    #[arg(long)]
    pub fio: bool,
    /// Size of the file fio reads (MiB) [default: the size on disk of the largest database
    /// the run loaded, at least 64: a small file can be served from a cache below the
    /// device (a virtual disk's host page cache) that the engines' reads over a large
    /// database do not get]
    #[arg(long, value_name = "MB")]
    pub fio_file_mb: Option<u64>,
    /// Internal: run one Rust engine with this Spec (JSON)
    #[arg(long, hide = true, value_name = "JSON")]
    pub child: Option<String>,
}

/// The resolved run, as every child gets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// The one engine a child runs ("" in the parent).
    pub engine: String,
    pub records: u64,
    pub value_size: usize,
    pub rps: u64,
    pub seconds: f64,
    pub step_seconds: f64,
    pub latency_ms: f64,
    pub p99_latency_ms: f64,
    pub max_rps: u64,
    pub max_steps: usize,
    pub threads: usize,
    pub scan_threads: usize,
    pub cache_mb: u64,
    pub dir: PathBuf,
    pub seed: u64,
    pub drop_caches: bool,
    pub keep_data: bool,
}

impl Spec {
    pub fn resolve(a: &EllipticsArgs) -> Result<Spec> {
        let records = a
            .records
            .unwrap_or(if a.quick { 20_000 } else { 20_000_000 });
        let seconds = a.seconds.unwrap_or(if a.quick { 2.0 } else { 60.0 });
        let step_seconds = a.step_seconds.unwrap_or(if a.quick { 1.0 } else { 10.0 });
        let max_rps = a.max_rps.unwrap_or(if a.quick { 1600 } else { 200_000 });
        if records == 0 || records > 10u64.pow(data::KEY_BYTES as u32) {
            return Err(BenchError::Invalid(
                "--records must be between 1 and 10^16 (16-digit keys)".into(),
            ));
        }
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !(positive(seconds)
            && positive(step_seconds)
            && positive(a.latency_ms)
            && positive(a.p99_latency_ms))
        {
            return Err(BenchError::Invalid(
                "--seconds, --step-seconds and the latency bounds must be positive".into(),
            ));
        }
        if a.rps == 0 || a.threads == 0 || a.scan_threads == 0 || a.value_size == 0 {
            return Err(BenchError::Invalid(
                "--rps, --threads, --scan-threads and --value-size must be at least 1".into(),
            ));
        }
        Ok(Spec {
            engine: String::new(),
            records,
            value_size: a.value_size,
            rps: a.rps,
            seconds,
            step_seconds,
            latency_ms: a.latency_ms,
            p99_latency_ms: a.p99_latency_ms,
            max_rps: max_rps.max(a.rps),
            max_steps: a.max_steps,
            threads: a.threads,
            scan_threads: a.scan_threads,
            cache_mb: a.cache_mb,
            dir: a.dir.clone(),
            seed: a.seed,
            drop_caches: false,
            keep_data: a.keep_data,
        })
    }

    pub fn for_engine(&self, engine: &str) -> Spec {
        Spec {
            engine: engine.to_string(),
            ..self.clone()
        }
    }

    pub fn raw_bytes(&self) -> u64 {
        self.records
            .saturating_mul((data::KEY_BYTES + self.value_size) as u64)
    }

    /// How long the device must have been idle before an engine loads and before fio reads:
    /// one step.
    pub fn quiet(&self) -> Duration {
        Duration::from_secs_f64(self.step_seconds)
    }

    pub fn variant_fixed(&self) -> String {
        format!("fixed rps={}", self.rps)
    }

    pub fn variant_max_p50(&self) -> String {
        format!("max rate p50<{}ms", self.latency_ms)
    }

    pub fn variant_max_p99(&self) -> String {
        format!("max rate p99<{}ms", self.p99_latency_ms)
    }

    pub fn cache_mode(&self) -> &'static str {
        if self.drop_caches {
            "cold: page cache dropped, engine reopened"
        } else {
            "engine reopened; page cache not dropped"
        }
    }
}

/// How an engine of the run is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Runner {
    Rust(String),
    HBase,
}

impl Runner {
    fn name(&self) -> &str {
        match self {
            Runner::Rust(n) => n,
            Runner::HBase => hbase::NAME,
        }
    }
}

/// The engines to run, and a message for each one left out. Names given explicitly must be
/// known; missing builds (a cargo feature, the Java jar) are skipped with a message.
fn resolve_engines(
    list: Option<&str>,
    java_dir: &std::path::Path,
) -> Result<(Vec<Runner>, Vec<String>)> {
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for name in list
        .unwrap_or(DEFAULT_ENGINES)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if name == hbase::NAME {
            match hbase::available(java_dir) {
                Ok(()) => run.push(Runner::HBase),
                Err(why) => skipped.push(format!("{name}: skipped: {why}")),
            }
            continue;
        }
        match engines::check_available(name) {
            Ok(()) => run.push(Runner::Rust(name.to_string())),
            Err(e @ BenchError::UnknownEngine(_)) => return Err(e),
            Err(e) => skipped.push(format!("{name}: skipped: {e}")),
        }
    }
    if run.is_empty() {
        return Err(BenchError::Invalid(format!(
            "no engine to run ({})",
            skipped.join("; ")
        )));
    }
    Ok((run, skipped))
}

pub fn run(a: &EllipticsArgs) -> Result<()> {
    if let Some(json) = &a.child {
        let spec: Spec = serde_json::from_str(json)
            .map_err(|e| BenchError::Invalid(format!("--child spec: {e}")))?;
        return child::run(&spec);
    }
    let mut spec = Spec::resolve(a)?;
    // Checked before the engines run, not after.
    if a.fio && a.fio_file_mb == Some(0) {
        return Err(BenchError::Invalid(
            "--fio-file-mb must be at least 1".into(),
        ));
    }
    let java_dir = a.java_dir.clone().unwrap_or_else(java::default_java_dir);
    let (runners, skipped) = resolve_engines(a.engines.as_deref(), &java_dir)?;
    for s in &skipped {
        eprintln!("[elliptics] {s}");
    }
    for path in [&a.json, &a.markdown].into_iter().flatten() {
        std::fs::File::create(path).map_err(|e| BenchError::io(path, e))?;
    }
    let cache_note = if a.no_drop_caches {
        "page cache not dropped (--no-drop-caches)".to_string()
    } else {
        match crate::procfs::can_drop_caches() {
            Ok(()) => {
                spec.drop_caches = true;
                "page cache dropped before each read phase".to_string()
            }
            Err(why) => format!("page cache not dropped ({why})"),
        }
    };
    eprintln!(
        "[elliptics] {} records of {} B; fixed {} req/s for {} s; search from {} to {} req/s, \
         steps of {} s; {cache_note}",
        spec.records,
        spec.value_size,
        spec.rps,
        spec.seconds,
        spec.rps,
        spec.max_rps,
        spec.step_seconds
    );
    std::fs::create_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;
    let mut lines = Vec::new();
    let mut failure = None;
    for r in &runners {
        settle_device(&spec.dir, spec.quiet());
        let started = Instant::now();
        eprintln!("[{}] starting", r.name());
        let (mut got, result) = match r {
            Runner::Rust(engine) => {
                crate::child::run_child::<Line>(WORKLOAD, engine, &spec.for_engine(engine))
            }
            Runner::HBase => hbase::run(&spec, &java_dir, a.java_heap_mb),
        };
        lines.append(&mut got);
        eprintln!(
            "[{}] done in {:.1} s",
            r.name(),
            started.elapsed().as_secs_f64()
        );
        if let Err(e) = result {
            eprintln!("[{}] failed: {e}", r.name());
            failure.get_or_insert(e);
        }
    }
    let mut order: Vec<String> = runners.iter().map(|r| r.name().to_string()).collect();
    if a.fio {
        let fio_bytes = a.fio_file_mb.map_or_else(
            || ceiling::default_file_bytes(&lines),
            |mb| mb.saturating_mul(1 << 20),
        );
        eprintln!(
            "[fio] 4 KiB random reads, {} and then {} in flight, {} MiB file",
            spec.threads,
            spec.scan_threads,
            fio_bytes >> 20
        );
        match ceiling::measure(&spec, fio_bytes) {
            Ok(mut c) => {
                ceiling::annotate(&mut lines, &c, &spec);
                lines.append(&mut c);
                order.push(ceiling::ENGINE.to_string());
            }
            Err(e) => {
                eprintln!("[fio] failed: {e}");
                failure.get_or_insert(e);
            }
        }
    }
    if let Some(path) = &a.json {
        crate::record::write_json_lines(path, "elliptics", &lines)?;
    }
    let mut table = line::markdown(&lines, &order, &spec, &cache_note);
    for s in &skipped {
        table.push_str(&format!("\n{s}\n"));
    }
    print!("{table}");
    if let Some(path) = &a.markdown {
        std::fs::write(path, &table).map_err(|e| BenchError::io(path, e))?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The longest wait for the device to go idle (`settle_device`, `ceiling::lay_out`).
pub(crate) const DEVICE_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Waits until the device under `dir` has been idle for `quiet`, so that an engine's load does
/// not share it with the trimming of the database deleted before it (a file system mounted
/// with `discard` trims after the delete returns) or with its dirty pages
/// (`procfs::wait_for_quiet_device`).
fn settle_device(dir: &Path, quiet: Duration) {
    if let Some(w) = procfs::wait_for_quiet_device(dir, quiet, DEVICE_IDLE_TIMEOUT) {
        eprintln!("[disk] {}", w.describe(quiet));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    pub(super) fn args(extra: &[&str]) -> EllipticsArgs {
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            elliptics: EllipticsArgs,
        }
        let mut argv = vec!["elliptics"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).elliptics
    }

    #[test]
    fn elliptics_defaults_and_quick() {
        let full = Spec::resolve(&args(&[])).unwrap();
        assert_eq!(
            (full.records, full.rps, full.seconds),
            (20_000_000, 200, 60.0)
        );
        assert_eq!(full.variant_max_p50(), "max rate p50<100ms");
        assert_eq!(full.variant_max_p99(), "max rate p99<10ms");
        let quick = Spec::resolve(&args(&["--quick"])).unwrap();
        assert_eq!(
            (quick.records, quick.seconds, quick.max_rps),
            (20_000, 2.0, 1600)
        );
        assert!(Spec::resolve(&args(&["--rps", "0"])).is_err());
        let json = serde_json::to_string(&quick.for_engine("cellar")).unwrap();
        let back: Spec = serde_json::from_str(&json).unwrap();
        assert_eq!(back.engine, "cellar");
    }

    #[test]
    fn elliptics_engines_skip_what_is_missing() {
        let empty = tempfile::tempdir().unwrap();
        let (run, skipped) = resolve_engines(None, empty.path()).unwrap();
        assert_eq!(run[0], Runner::Rust("cellar".into()));
        assert!(skipped.iter().any(|s| s.starts_with("hbase: skipped")));
        assert!(resolve_engines(Some("cellar,nosuch"), empty.path()).is_err());
    }
}
