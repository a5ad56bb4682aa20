//! `cellar-bench mapfile`: seed 000, Hadoop MapFile against HBase, with Cellar and the other
//! engines of the registry side by side.
//!
//! Every engine runs in a child process and does the same steps on the same data
//! (peer_keys.rs): insert N records in key order (buffered), look up 1% of them per
//! iteration, one at a time and in buckets, cold (the engine reopened or its cache cleared,
//! and the page cache dropped when this process may), then M durable inserts one at a time
//! into a fresh store. Rust engines run as `cellar-bench mapfile --child NAME ...`; the Java
//! peers (java.rs) as `java ... <Main> --records N --lookup-fraction F --iterations K
//! --buckets 1,B1,B2 --durable-inserts M --dir D --seed S --key-size K --value-size V
//! [--drop-caches] [--keep-data]`. Both print one JSON object per measurement per line on stdout
//! ([`PeerLine`]); anything else a child prints goes to stderr.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::config::auto_cache_bytes;
use crate::engine::{self, Engine, OpenConfig};
use crate::engines;
use crate::error::{BenchError, Result};
use crate::java::{self, JavaPeer};
use crate::keygen::KeyGen;
use crate::measure::Latency;
use crate::peer_keys;
use crate::procfs;

pub const WORKLOAD: &str = "mapfile";
/// Every engine that may run, in table order; each is skipped (and said so) when it is not
/// built. Rust engines resolve by name through the registry (engines::check_available).
pub const DEFAULT_ENGINES: &str = "cellar,rocksdb,lmdb,mapfile,hbase";
pub const DEFAULT_RECORDS: u64 = 10_000_000;
pub const QUICK_RECORDS: u64 = 100_000;
pub const QUICK_DURABLE_INSERTS: u64 = 1_000;
/// Entries per put_batch call in the Rust engines' buffered insert.
const INSERT_BATCH: usize = 1000;
const MEMTABLE_BYTES: u64 = 64 << 20;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Args)]
pub struct MapfileArgs {
    /// Engines, comma-separated: Rust engines by registry name (cellar, rocksdb, ...) and the
    /// Java peers mapfile, hbase [default: cellar,rocksdb,lmdb,mapfile,hbase, each skipped
    /// when not built]
    #[arg(long, value_name = "LIST")]
    pub engines: Option<String>,
    /// Records inserted [default: 10000000, or 100000 with --quick]
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,
    /// A small run (100K records, 1000 durable inserts)
    #[arg(long)]
    pub quick: bool,
    /// Lookup iterations (each draws its own keys)
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub iterations: u32,
    /// Fraction of the records looked up per iteration
    #[arg(long, value_name = "F", default_value_t = 0.01)]
    pub lookup_fraction: f64,
    /// Bucket sizes of the batched lookups (single lookups always run)
    #[arg(
        long,
        alias = "buckets",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1000,10"
    )]
    pub bucket: Vec<usize>,
    /// Durable inserts (one write at a time, each synced) [default: 10000, or 1000 with --quick]
    #[arg(long, value_name = "M")]
    pub durable_inserts: Option<u64>,
    /// Working directory: one subdirectory per engine, deleted before use
    #[arg(long, value_name = "DIR", default_value = "bench-data/mapfile")]
    pub dir: PathBuf,
    /// Seed of the lookup sample (the same keys for every engine)
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    #[arg(long, value_name = "BYTES", default_value_t = 16)]
    pub key_size: usize,
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub value_size: usize,
    /// Write one JSON object per measurement here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the Markdown table here
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// The bench/java folder of the Java peers [default: $CELLAR_BENCH_JAVA_DIR, else the
    /// source tree's]
    #[arg(long, value_name = "DIR")]
    pub java_dir: Option<PathBuf>,
    /// Maximum heap of each Java peer (MiB)
    #[arg(long, value_name = "MB", default_value_t = 4096)]
    pub java_heap_mb: u64,
    /// Do not drop the page cache before lookup iterations, even where permitted
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Keep each engine's data after its run
    #[arg(long)]
    pub keep_data: bool,
    /// Internal: run Rust engine NAME and print its result lines
    #[arg(long, hide = true, value_name = "NAME")]
    pub child: Option<String>,
    /// Internal (children): drop the page cache before each lookup iteration
    #[arg(long, hide = true)]
    pub drop_caches: bool,
}

/// The resolved run, as every child gets it.
#[derive(Debug, Clone)]
pub struct Spec {
    pub records: u64,
    pub iterations: u32,
    pub lookup_fraction: f64,
    /// 1 (single lookups) first, then the buckets.
    pub buckets: Vec<usize>,
    pub durable_inserts: u64,
    pub dir: PathBuf,
    pub seed: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub drop_caches: bool,
    pub keep_data: bool,
}

impl Spec {
    pub fn resolve(a: &MapfileArgs) -> Result<Spec> {
        let records = a.records.unwrap_or(if a.quick {
            QUICK_RECORDS
        } else {
            DEFAULT_RECORDS
        });
        if records == 0 {
            return Err(BenchError::Invalid("--records must be at least 1".into()));
        }
        if !KeyGen::fits(a.key_size, records) {
            return Err(BenchError::Invalid(format!(
                "--key-size {} is too small for {records} records (zero-padded decimal)",
                a.key_size
            )));
        }
        if !(a.lookup_fraction > 0.0 && a.lookup_fraction <= 1.0) {
            return Err(BenchError::Invalid(
                "--lookup-fraction must be in (0, 1]".into(),
            ));
        }
        if a.value_size == 0 || a.bucket.contains(&0) {
            return Err(BenchError::Invalid(
                "--value-size and --bucket sizes must be at least 1".into(),
            ));
        }
        let mut buckets = vec![1];
        for &b in &a.bucket {
            if !buckets.contains(&b) {
                buckets.push(b);
            }
        }
        Ok(Spec {
            records,
            iterations: a.iterations,
            lookup_fraction: a.lookup_fraction,
            buckets,
            durable_inserts: a.durable_inserts.unwrap_or(if a.quick {
                QUICK_DURABLE_INSERTS
            } else {
                10_000
            }),
            dir: a.dir.clone(),
            seed: a.seed,
            key_size: a.key_size,
            value_size: a.value_size,
            drop_caches: a.drop_caches,
            keep_data: a.keep_data,
        })
    }

    pub fn lookups_per_iteration(&self) -> u64 {
        peer_keys::lookups_per_iteration(self.records, self.lookup_fraction)
    }

    /// The arguments every child gets (the Java peers' command line).
    pub fn child_args(&self) -> Vec<String> {
        let buckets: Vec<String> = self.buckets.iter().map(|b| b.to_string()).collect();
        let mut v = vec![
            "--records".to_string(),
            self.records.to_string(),
            "--lookup-fraction".into(),
            self.lookup_fraction.to_string(),
            "--iterations".into(),
            self.iterations.to_string(),
            "--buckets".into(),
            buckets.join(","),
            "--durable-inserts".into(),
            self.durable_inserts.to_string(),
            "--dir".into(),
            self.dir.display().to_string(),
            "--seed".into(),
            self.seed.to_string(),
            "--key-size".into(),
            self.key_size.to_string(),
            "--value-size".into(),
            self.value_size.to_string(),
        ];
        if self.drop_caches {
            v.push("--drop-caches".into());
        }
        if self.keep_data {
            v.push("--keep-data".into());
        }
        v
    }
}

/// One measurement of one engine: a line of the protocol, and of `--json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerLine {
    pub engine: String,
    pub workload: String,
    /// "insert buffered", "insert durable", "lookup single", "lookup bucket=N".
    pub variant: String,
    pub records: u64,
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub seconds: f64,
    #[serde(default)]
    pub ops_per_sec: f64,
    #[serde(default)]
    pub p50_us: f64,
    #[serde(default)]
    pub p99_us: f64,
    /// What one latency sample covers: "op", "batch" (a bucket, or a put_batch).
    #[serde(default)]
    pub latency_unit: String,
    #[serde(default)]
    pub found: Option<u64>,
    /// Lookups: the rate of each iteration.
    #[serde(default)]
    pub iterations_ops_per_sec: Option<Vec<f64>>,
    #[serde(default)]
    pub cache_mode: Option<String>,
    /// Inserts: the untimed flush (and compaction wait) after the timed run.
    #[serde(default)]
    pub settle_seconds: Option<f64>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Set when the engine cannot run this variant: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl PeerLine {
    fn new(engine: &str, variant: impl Into<String>, spec: &Spec) -> PeerLine {
        PeerLine {
            engine: engine.to_string(),
            workload: WORKLOAD.to_string(),
            variant: variant.into(),
            records: spec.records,
            ops: 0,
            seconds: 0.0,
            ops_per_sec: 0.0,
            p50_us: 0.0,
            p99_us: 0.0,
            latency_unit: "op".into(),
            found: None,
            iterations_ops_per_sec: None,
            cache_mode: None,
            settle_seconds: None,
            notes: Vec::new(),
            skipped: None,
        }
    }

    fn finish(&mut self, latency: &Latency) {
        self.ops_per_sec = if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        };
        self.p50_us = latency.quantile_us(0.50);
        self.p99_us = latency.quantile_us(0.99);
    }
}

/// How an engine of the run is reached.
#[derive(Debug, Clone)]
enum Runner {
    Rust(String),
    Java(JavaPeer),
}

impl Runner {
    fn name(&self) -> &str {
        match self {
            Runner::Rust(n) => n,
            Runner::Java(p) => p.name(),
        }
    }
}

/// The engines to run, and a message for each one left out. Names given explicitly must
/// be known; in the default list unknown names (adapters of other branches) are skipped.
fn resolve_engines(list: Option<&str>, java_dir: &Path) -> Result<(Vec<Runner>, Vec<String>)> {
    let explicit = list.is_some();
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for name in list
        .unwrap_or(DEFAULT_ENGINES)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if let Some(peer) = JavaPeer::from_name(name) {
            match java::find_tool("java")
                .ok_or_else(|| "no `java` on PATH".to_string())
                .and_then(|_| peer.classpath(java_dir))
            {
                Ok(_) => run.push(Runner::Java(peer)),
                Err(why) => skipped.push(format!("{name}: skipped: {why}")),
            }
            continue;
        }
        match engines::check_available(name) {
            Ok(()) => run.push(Runner::Rust(name.to_string())),
            Err(e @ BenchError::UnknownEngine(_)) if explicit => return Err(e),
            Err(BenchError::UnknownEngine(_)) => {
                skipped.push(format!("{name}: skipped: no adapter in this build"));
            }
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

/// Whether this process may drop the page cache: root, and a test drop works.
fn can_drop_caches() -> std::result::Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    procfs::drop_page_cache().map_err(|e| format!("/proc/sys/vm/drop_caches: {e}"))
}

pub fn run(a: &MapfileArgs) -> Result<()> {
    if let Some(name) = &a.child {
        let spec = Spec::resolve(a)?;
        return child_main(name, &spec);
    }
    let mut spec = Spec::resolve(a)?;
    let java_dir = a.java_dir.clone().unwrap_or_else(java::default_java_dir);
    let (runners, skipped) = resolve_engines(a.engines.as_deref(), &java_dir)?;
    for s in &skipped {
        eprintln!("[mapfile] {s}");
    }
    for path in [&a.json, &a.markdown].into_iter().flatten() {
        std::fs::File::create(path).map_err(|e| BenchError::io(path, e))?;
    }
    let cache_note = if a.no_drop_caches {
        "page cache not dropped (--no-drop-caches)".to_string()
    } else {
        match can_drop_caches() {
            Ok(()) => {
                spec.drop_caches = true;
                "page cache dropped before each lookup iteration".to_string()
            }
            Err(why) => format!("page cache not dropped ({why})"),
        }
    };
    eprintln!(
        "[mapfile] {} records, {} iterations of {} lookups, buckets {:?}, {} durable inserts; {cache_note}",
        spec.records,
        spec.iterations,
        spec.lookups_per_iteration(),
        &spec.buckets[1..],
        spec.durable_inserts
    );
    std::fs::create_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;
    let mut lines = Vec::new();
    let mut failure = None;
    for r in &runners {
        let started = Instant::now();
        eprintln!("[{}] starting", r.name());
        let result = run_child(r, &spec, a, &java_dir, &mut lines);
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
    if let Some(path) = &a.json {
        write_json_lines(path, &lines)?;
    }
    let order: Vec<String> = runners.iter().map(|r| r.name().to_string()).collect();
    let table = markdown(&lines, &order, &spec, &cache_note, &skipped);
    print!("{table}");
    if let Some(path) = &a.markdown {
        std::fs::write(path, &table).map_err(|e| BenchError::io(path, e))?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn child_err(engine: &str, what: impl Into<String>) -> BenchError {
    BenchError::Child {
        engine: engine.to_string(),
        what: what.into(),
    }
}

/// Runs one engine's child and collects its result lines into `lines`.
fn run_child(
    r: &Runner,
    spec: &Spec,
    a: &MapfileArgs,
    java_dir: &Path,
    lines: &mut Vec<PeerLine>,
) -> Result<()> {
    let name = r.name();
    let mut cmd = match r {
        Runner::Rust(engine) => {
            let exe =
                std::env::current_exe().map_err(|e| BenchError::io("current executable", e))?;
            let mut c = Command::new(exe);
            c.args(["mapfile", "--child", engine]);
            c
        }
        Runner::Java(peer) => peer
            .command(java_dir, a.java_heap_mb)
            .map_err(|why| child_err(name, why))?,
    };
    cmd.args(spec.child_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().map_err(|e| BenchError::io(name, e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| child_err(name, "has no stdout pipe"))?;
    let mut protocol_error = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| BenchError::io("child stdout", e))?;
        if !line.starts_with('{') {
            eprintln!("[{name} stdout] {line}");
            continue;
        }
        match serde_json::from_str::<PeerLine>(&line) {
            Ok(p) if p.engine == name => lines.push(p),
            Ok(p) => {
                protocol_error.get_or_insert(format!("sent a line for engine {:?}", p.engine));
            }
            Err(e) => {
                protocol_error.get_or_insert(format!("sent a malformed result ({e}): {line}"));
            }
        }
    }
    let status = child.wait().map_err(|e| BenchError::io(name, e))?;
    if !status.success() {
        return Err(child_err(name, format!("failed ({status})")));
    }
    match protocol_error {
        Some(what) => Err(child_err(name, what)),
        None => Ok(()),
    }
}

fn write_json_lines(path: &Path, lines: &[PeerLine]) -> Result<()> {
    let mut out = Vec::new();
    for l in lines {
        serde_json::to_writer(&mut out, l)
            .map_err(|e| BenchError::io(path, std::io::Error::other(e)))?;
        out.push(b'\n');
    }
    std::fs::write(path, out).map_err(|e| BenchError::io(path, e))
}

/// The comparison table: rows by variant (in run order), engines in run order, each
/// engine's ops/s over Cellar's for the same variant.
pub fn markdown(
    lines: &[PeerLine],
    engines: &[String],
    spec: &Spec,
    cache_note: &str,
    skipped: &[String],
) -> String {
    let mut variants: Vec<&str> = Vec::new();
    for l in lines {
        if !variants.contains(&l.variant.as_str()) {
            variants.push(&l.variant);
        }
    }
    let mut s = format!(
        "Seed 000 (mapfile): {} records of {} B keys and {} B values; {} lookup iterations of {} \
         keys each; {} durable inserts; {cache_note}.\n\n",
        spec.records,
        spec.key_size,
        spec.value_size,
        spec.iterations,
        spec.lookups_per_iteration(),
        spec.durable_inserts
    );
    s.push_str(
        "| variant | engine | ops/s | vs cellar | p50 µs | p99 µs | ops/s per iteration |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---|\n");
    for v in variants {
        let mut rows: Vec<&PeerLine> = lines.iter().filter(|l| l.variant == v).collect();
        rows.sort_by_key(|l| engines.iter().position(|e| *e == l.engine));
        let cellar = rows
            .iter()
            .find(|l| l.engine == "cellar" && l.skipped.is_none())
            .map(|l| l.ops_per_sec);
        for l in rows {
            if let Some(why) = &l.skipped {
                s.push_str(&format!(
                    "| {v} | {} | skipped: {why} | | | | |\n",
                    l.engine
                ));
                continue;
            }
            let ratio = match cellar {
                Some(c) if c > 0.0 => format!("{:.3}", l.ops_per_sec / c),
                _ => "—".into(),
            };
            let mark = if l.latency_unit == "batch" { " ¹" } else { "" };
            let per_it = l
                .iterations_ops_per_sec
                .as_ref()
                .map_or(String::new(), |v| {
                    let x: Vec<String> = v.iter().map(|r| format!("{r:.0}")).collect();
                    x.join(", ")
                });
            s.push_str(&format!(
                "| {v} | {} | {:.0} | {ratio} | {:.2}{mark} | {:.2}{mark} | {per_it} |\n",
                l.engine, l.ops_per_sec, l.p50_us, l.p99_us
            ));
        }
    }
    s.push_str(
        "\n¹ per call: a bucket of lookups, or a put_batch of 1000 records (Rust engines' \
         buffered insert); otherwise per operation. MapFile has no batched lookup: its \
         buckets are sorted keys read one by one.\n",
    );
    for k in skipped {
        s.push_str(&format!("\n{k}"));
    }
    if !skipped.is_empty() {
        s.push('\n');
    }
    s
}

// ---------------------------------------------------------------------------------------
// Child side: one Rust engine through the Engine trait.

fn open(name: &str, dir: &Path, spec: &Spec) -> Result<Box<dyn Engine>> {
    engine::open(
        name,
        dir,
        &OpenConfig {
            block_cache_bytes: auto_cache_bytes(spec.records, spec.key_size, spec.value_size),
            memtable_bytes: MEMTABLE_BYTES,
            direct_reads: false,
            rocksdb_statistics: false,
            rocksdb_index_filter_in_cache: false,
        },
    )
}

fn emit(line: &PeerLine) -> Result<()> {
    let text = serde_json::to_string(line)
        .map_err(|e| BenchError::io("stdout", std::io::Error::other(e)))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|_| out.flush())
        .map_err(|e| BenchError::io("stdout", e))?;
    eprintln!(
        "[{}] {}: {} ops in {:.3} s = {:.0} ops/s, p50 {:.2} µs, p99 {:.2} µs per {}",
        line.engine,
        line.variant,
        line.ops,
        line.seconds,
        line.ops_per_sec,
        line.p50_us,
        line.p99_us,
        line.latency_unit
    );
    Ok(())
}

fn child_main(name: &str, spec: &Spec) -> Result<()> {
    engines::check_available(name)?;
    let dir = spec.dir.join(name);
    let durable_dir = spec.dir.join(format!("{name}-durable"));
    procfs::remove_dir(&dir)?;
    procfs::remove_dir(&durable_dir)?;
    std::fs::create_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;

    emit(&insert_buffered(name, &dir, spec)?)?;
    for &bucket in &spec.buckets {
        emit(&lookups(name, &dir, spec, bucket)?)?;
    }
    if spec.durable_inserts > 0 {
        emit(&insert_durable(name, &durable_dir, spec)?)?;
    }
    if !spec.keep_data {
        procfs::remove_dir(&dir)?;
        procfs::remove_dir(&durable_dir)?;
    }
    Ok(())
}

/// Closes `engine` after `f`, whatever `f` returned.
fn with_engine<T>(engine: Box<dyn Engine>, f: impl FnOnce(&dyn Engine) -> Result<T>) -> Result<T> {
    let r = f(engine.as_ref());
    let closed = engine.close();
    let v = r?;
    closed?;
    Ok(v)
}

fn verify(engine: &dyn Engine, spec: &Spec, index: u64, len: usize) -> Result<()> {
    if len == spec.value_size {
        return Ok(());
    }
    Err(BenchError::Verify {
        engine: engine.name(),
        workload: WORKLOAD,
        what: format!(
            "record {index} has a value of {len} bytes, expected {}",
            spec.value_size
        ),
    })
}

/// All records in key order, `INSERT_BATCH` per put_batch, not synced; then flushed and
/// settled (untimed).
fn insert_buffered(name: &str, dir: &Path, spec: &Spec) -> Result<PeerLine> {
    let mut line = PeerLine::new(name, "insert buffered", spec);
    line.latency_unit = "batch".into();
    let keygen = KeyGen::new(spec.key_size);
    let engine = open(name, dir, spec)?;
    with_engine(engine, |e| {
        let mut lat = Latency::default();
        let mut keys = vec![vec![0u8; spec.key_size]; INSERT_BATCH];
        let mut values = vec![vec![0u8; spec.value_size]; INSERT_BATCH];
        let start = Instant::now();
        let mut next = 0u64;
        while next < spec.records {
            let n = (spec.records - next).min(INSERT_BATCH as u64) as usize;
            for j in 0..n {
                keygen.fill(next + j as u64, &mut keys[j]);
                peer_keys::value(next + j as u64, &mut values[j]);
            }
            let entries: Vec<(&[u8], &[u8])> = keys[..n]
                .iter()
                .zip(&values[..n])
                .map(|(k, v)| (k.as_slice(), v.as_slice()))
                .collect();
            let t0 = Instant::now();
            e.put_batch(&entries, false)?;
            lat.record(t0.elapsed());
            next += n as u64;
        }
        line.seconds = start.elapsed().as_secs_f64();
        line.ops = spec.records;
        let s0 = Instant::now();
        e.flush()?;
        e.wait_for_background(SETTLE_TIMEOUT)?;
        line.settle_seconds = Some(s0.elapsed().as_secs_f64());
        line.notes.push(format!(
            "put_batch of {INSERT_BATCH} records in key order, not synced; settle = flush + \
             background work"
        ));
        line.finish(&lat);
        Ok(())
    })?;
    Ok(line)
}

/// `spec.iterations` iterations of the shared sample, `bucket` keys per call (1: get),
/// each on a freshly opened engine after the page cache was dropped (when permitted).
fn lookups(name: &str, dir: &Path, spec: &Spec, bucket: usize) -> Result<PeerLine> {
    let variant = if bucket == 1 {
        "lookup single".to_string()
    } else {
        format!("lookup bucket={bucket}")
    };
    let mut line = PeerLine::new(name, variant, spec);
    line.latency_unit = if bucket == 1 { "op" } else { "batch" }.into();
    line.cache_mode = Some(
        if spec.drop_caches {
            "cold: page cache dropped, caches emptied"
        } else {
            "caches emptied; page cache not dropped"
        }
        .into(),
    );
    let keygen = KeyGen::new(spec.key_size);
    let per = spec.lookups_per_iteration();
    let mut all = Latency::default();
    let mut per_iteration = Vec::new();
    let mut found = 0u64;
    for it in 0..spec.iterations {
        let sample = peer_keys::sample(spec.seed, spec.records, per, u64::from(it));
        let keys: Vec<Vec<u8>> = sample
            .iter()
            .map(|&i| {
                let mut k = Vec::with_capacity(spec.key_size);
                keygen.fill(i, &mut k);
                k
            })
            .collect();
        if spec.drop_caches {
            procfs::drop_page_cache().map_err(|e| BenchError::io("/proc/sys/vm/drop_caches", e))?;
        }
        let engine = open(name, dir, spec)?;
        let seconds = with_engine(engine, |e| {
            let start = Instant::now();
            for (chunk, idx) in keys.chunks(bucket).zip(sample.chunks(bucket)) {
                let t0 = Instant::now();
                if bucket == 1 {
                    if let Some(len) = e.get(&chunk[0])? {
                        verify(e, spec, idx[0], len)?;
                        found += 1;
                    }
                } else {
                    let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
                    let got = e.multi_get(&refs)?;
                    for (&i, len) in idx.iter().zip(got) {
                        if let Some(len) = len {
                            verify(e, spec, i, len)?;
                            found += 1;
                        }
                    }
                }
                all.record(t0.elapsed());
            }
            Ok(start.elapsed().as_secs_f64())
        })?;
        line.seconds += seconds;
        line.ops += sample.len() as u64;
        per_iteration.push(if seconds > 0.0 {
            sample.len() as f64 / seconds
        } else {
            0.0
        });
    }
    line.found = Some(found);
    line.iterations_ops_per_sec = Some(per_iteration);
    line.finish(&all);
    Ok(line)
}

/// `spec.durable_inserts` records in key order, one synced put each, into a fresh store.
fn insert_durable(name: &str, dir: &Path, spec: &Spec) -> Result<PeerLine> {
    let mut line = PeerLine::new(name, "insert durable", spec);
    let keygen = KeyGen::new(spec.key_size);
    let engine = open(name, dir, spec)?;
    with_engine(engine, |e| {
        let mut lat = Latency::default();
        let mut key = Vec::with_capacity(spec.key_size);
        let mut value = vec![0u8; spec.value_size];
        let start = Instant::now();
        for i in 0..spec.durable_inserts {
            keygen.fill(i, &mut key);
            peer_keys::value(i, &mut value);
            let t0 = Instant::now();
            e.put(&key, &value, true)?;
            lat.record(t0.elapsed());
        }
        line.seconds = start.elapsed().as_secs_f64();
        line.ops = spec.durable_inserts;
        line.notes
            .push("one put at a time, each synced (fsync) before it returns".into());
        line.finish(&lat);
        Ok(())
    })?;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            records: 1000,
            iterations: 2,
            lookup_fraction: 0.01,
            buckets: vec![1, 10],
            durable_inserts: 5,
            dir: PathBuf::from("/tmp/x"),
            seed: 301,
            key_size: 16,
            value_size: 100,
            drop_caches: false,
            keep_data: false,
        }
    }

    fn line(engine: &str, variant: &str, ops_per_sec: f64) -> PeerLine {
        let mut l = PeerLine::new(engine, variant, &spec());
        l.ops_per_sec = ops_per_sec;
        l
    }

    #[test]
    fn mapfile_table_has_ratios_to_cellar() {
        let engines = vec!["cellar".to_string(), "hbase".to_string()];
        let mut skipped = line("hbase", "insert durable", 0.0);
        skipped.skipped = Some("no".into());
        let lines = vec![
            line("hbase", "lookup single", 50.0),
            line("cellar", "lookup single", 200.0),
            skipped,
        ];
        let md = markdown(&lines, &engines, &spec(), "x", &[]);
        assert!(
            md.contains("| lookup single | cellar | 200 | 1.000 |"),
            "{md}"
        );
        assert!(
            md.contains("| lookup single | hbase | 50 | 0.250 |"),
            "{md}"
        );
        assert!(
            md.contains("| insert durable | hbase | skipped: no |"),
            "{md}"
        );
        let cellar_row = md.find("| lookup single | cellar").unwrap();
        assert!(cellar_row < md.find("| lookup single | hbase").unwrap());
    }

    #[test]
    fn mapfile_child_args_name_every_setting() {
        let args = spec().child_args().join(" ");
        assert_eq!(
            args,
            "--records 1000 --lookup-fraction 0.01 --iterations 2 --buckets 1,10 \
             --durable-inserts 5 --dir /tmp/x --seed 301 --key-size 16 --value-size 100"
        );
    }

    #[test]
    fn mapfile_default_engines_skip_what_is_missing() {
        let empty = tempfile::tempdir().unwrap();
        let (run, skipped) = resolve_engines(None, empty.path()).unwrap();
        assert_eq!(run[0].name(), "cellar");
        assert!(skipped.iter().any(|s| s.starts_with("mapfile: skipped")));
        assert!(skipped.iter().any(|s| s.starts_with("hbase: skipped")));
        assert!(resolve_engines(Some("cellar,nosuch"), empty.path()).is_err());
    }

    #[test]
    fn mapfile_peer_line_parses_a_java_line() {
        let j = r#"{"engine":"mapfile","workload":"mapfile","variant":"insert durable","records":100,"skipped":"why"}"#;
        let l: PeerLine = serde_json::from_str(j).unwrap();
        assert_eq!(l.skipped.as_deref(), Some("why"));
        let j = r#"{"engine":"hbase","workload":"mapfile","variant":"lookup bucket=10","records":100,"ops":20,"seconds":0.5,"ops_per_sec":40.0,"p50_us":1.5,"p99_us":2.0,"latency_unit":"batch","found":20,"iterations_ops_per_sec":[40.0],"cache_mode":"cold","settle_seconds":null,"notes":["n"]}"#;
        let l: PeerLine = serde_json::from_str(j).unwrap();
        assert_eq!((l.ops, l.found, l.notes.len()), (20, Some(20), 1));
    }
}
