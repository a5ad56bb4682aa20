//! `cellar-bench ycsb`: YCSB's core workloads A–F on every engine.
//!
//! Per engine (in a child process of its own) and per client-thread count: a fresh
//! database, the load phase (`records` inserts split over the threads, then an untimed
//! flush and wait), then each workload in turn on that database, `operations` operations
//! split over the threads. The default order is YCSB's recommended one, A, B, C, F, D, E:
//! the read-mostly workloads see exactly the loaded records, and the two that insert (D, E)
//! come last; records they insert stay for the workloads after them.
//!
//! HBase runs the same phases in the Java peer (hbase.rs): a mini-cluster in one JVM,
//! YCSB's HBase client calls, the same requests drawn from the same seeds.

#[cfg(test)]
mod client_tests;
mod gen;
mod hbase;
#[cfg(test)]
mod vector;
mod workload;

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use self::gen::InsertCounter;
use self::workload::{client, ClientOut, Distribution, KeyChooser, Mix, RecordShape, RunShared};
use crate::engine::auto_cache_bytes;
use crate::engine::{self, Engine, OpenConfig};
use crate::error::{BenchError, Result};
use crate::procfs;
use crate::suite::{self, OpLatencies, SuiteRecord};

const QUICK_RECORDS: u64 = 5_000;
const QUICK_OPERATIONS: u64 = 5_000;
const MIB: u64 = 1 << 20;
const SETTLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

#[derive(Debug, Clone, Args)]
pub struct YcsbArgs {
    /// Engines, comma-separated, or "all": cellar, rocksdb, lmdb, fjall, sqlite, hbase.
    /// Engines not compiled into this binary, or hbase when java or its jar is missing
    /// (`cellar-bench peers setup` builds it), are skipped, with a note. hbase is an HBase
    /// 2.6 mini-cluster in one JVM driven as YCSB's hbase2 binding drives a cluster: one
    /// Table per client thread, Table.get / Table.put (no client-side buffering; WAL
    /// durability SYNC_WAL, the table default: hflushed to the datanode, not fsynced) /
    /// Table.getScanner; table `usertable`, family `family`, one column per field, one
    /// region (not pre-split).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub engines: String,

    /// Core workloads to run after the load, in order (letters a-f).
    #[arg(long, value_name = "LIST", default_value = "a,b,c,f,d,e")]
    pub workloads: String,

    /// Records loaded (YCSB's recordcount) [default: 1000000, 5000 with --quick].
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,

    /// Operations of each workload (YCSB's operationcount) [default: 1000000, 5000 with
    /// --quick].
    #[arg(long, value_name = "N")]
    pub operations: Option<u64>,

    /// Client-thread counts; each gets its own load and run of every workload.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,4"
    )]
    pub threads: Vec<usize>,

    /// Fields per record (YCSB's fieldcount).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub field_count: usize,

    /// Bytes per field (YCSB's fieldlength).
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub field_length: usize,

    /// Use this request distribution for every workload instead of each one's own
    /// (YCSB's requestdistribution).
    #[arg(long, value_enum, value_name = "DIST")]
    pub distribution: Option<Distribution>,

    /// Small run that finishes in seconds (5000 records, 5000 operations).
    #[arg(long)]
    pub quick: bool,

    /// Write the results here, one JSON object per line (engine × workload × threads).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Parent directory of the databases (<DIR>/ycsb-<engine>-t<threads>), deleted before
    /// use.
    #[arg(long, value_name = "DIR", default_value = "bench-data")]
    pub db_dir: PathBuf,

    /// Block cache in MiB [default: 1.5 × records × record size + 8 MiB]; not hbase (its
    /// default: 40 % of the heap).
    #[arg(long, value_name = "M")]
    pub cache_mb: Option<u64>,

    /// Memtable (write buffer) size in MiB; not hbase (its default: 128 MiB per region).
    #[arg(long, value_name = "M", default_value_t = 64)]
    pub memtable_mb: u64,

    /// Seed of every random choice (the same requests for every engine, hbase included).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Keep the databases after the run.
    #[arg(long)]
    pub keep_db: bool,

    /// The bench/java folder of the HBase peer [default: $CELLAR_BENCH_JAVA_DIR, else the
    /// source tree's].
    #[arg(long, value_name = "DIR")]
    pub java_dir: Option<PathBuf>,

    /// Maximum heap of the HBase peer's JVM (client and mini-cluster), MiB.
    #[arg(long, value_name = "MB", default_value_t = 4096)]
    pub java_heap_mb: u64,

    /// Internal: run as the child process of one engine with this JSON config.
    #[arg(long, hide = true, value_name = "JSON")]
    pub child: Option<String>,
}

/// The resolved run; a child gets it as JSON with one engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YcsbConfig {
    pub engines: Vec<String>,
    pub workloads: Vec<Mix>,
    pub records: u64,
    pub operations: u64,
    pub threads: Vec<usize>,
    pub field_count: usize,
    pub field_length: usize,
    pub db_dir: PathBuf,
    pub cache_bytes: u64,
    pub memtable_bytes: u64,
    pub seed: u64,
    pub keep_db: bool,
}

fn invalid(what: impl Into<String>) -> BenchError {
    BenchError::Invalid(what.into())
}

impl YcsbConfig {
    /// The config of the Rust engines, the engines skipped (not compiled in), and how HBase
    /// was asked for.
    pub fn resolve(a: &YcsbArgs) -> Result<(YcsbConfig, Vec<String>, hbase::Wanted)> {
        let (rust, wanted) = hbase::take_from_list(&a.engines);
        let (engines, skipped) = if wanted != hbase::Wanted::No && rust.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            suite::select_engines(&rust)?
        };
        let mut workloads = Vec::new();
        for name in a
            .workloads
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            let mut chars = name.chars();
            let m = match (chars.next(), chars.next()) {
                (Some(c), None) => workload::core(c.to_ascii_lowercase()),
                _ => None,
            };
            let mut m = m.ok_or_else(|| {
                BenchError::UnknownWorkload(name.to_string(), "a, b, c, d, e, f".into())
            })?;
            if let Some(d) = a.distribution {
                m.distribution = d;
            }
            workloads.push(m);
        }
        let records = a
            .records
            .unwrap_or(if a.quick { QUICK_RECORDS } else { 1_000_000 });
        let operations = a
            .operations
            .unwrap_or(if a.quick { QUICK_OPERATIONS } else { 1_000_000 });
        if records < 2 || operations == 0 {
            return Err(invalid(
                "--records must be at least 2 and --operations at least 1",
            ));
        }
        if a.threads.is_empty() || a.threads.contains(&0) {
            return Err(invalid("--threads needs thread counts of at least 1"));
        }
        if a.field_count == 0 || a.field_length == 0 || a.memtable_mb == 0 {
            return Err(invalid(
                "--field-count, --field-length and --memtable-mb must be at least 1",
            ));
        }
        let value_bytes = RecordShape::new(a.field_count, a.field_length).value_bytes();
        let cache_bytes = match a.cache_mb {
            Some(0) => return Err(invalid("--cache-mb must be at least 1")),
            Some(mb) => mb * MIB,
            None => auto_cache_bytes(records, RecordShape::key_bytes(), value_bytes),
        };
        let cfg = YcsbConfig {
            engines,
            workloads,
            records,
            operations,
            threads: a.threads.clone(),
            field_count: a.field_count,
            field_length: a.field_length,
            db_dir: a.db_dir.clone(),
            cache_bytes,
            memtable_bytes: a.memtable_mb * MIB,
            seed: a.seed,
            keep_db: a.keep_db,
        };
        Ok((cfg, skipped, wanted))
    }
}

pub fn run(a: &YcsbArgs) -> Result<()> {
    if let Some(json) = &a.child {
        let cfg: YcsbConfig =
            serde_json::from_str(json).map_err(|e| invalid(format!("--child config: {e}")))?;
        return child_main(&cfg);
    }
    let (cfg, mut skipped, wanted) = YcsbConfig::resolve(a)?;
    let java_dir = a
        .java_dir
        .clone()
        .unwrap_or_else(crate::java::default_java_dir);
    let run_hbase = wanted != hbase::Wanted::No
        && match hbase::available(&java_dir) {
            Ok(()) => true,
            Err(why) => {
                skipped.push(format!("hbase: {why}"));
                false
            }
        };
    if cfg.engines.is_empty() && !run_hbase {
        return Err(invalid("--engines names no engine that can run here"));
    }
    suite::check_writable(a.json.as_deref())?;
    for why in &skipped {
        eprintln!("[ycsb] skipped {why}");
    }
    let mut runs = suite::Runs::default();
    for engine in &cfg.engines {
        let one = YcsbConfig {
            engines: vec![engine.clone()],
            ..cfg.clone()
        };
        runs.add(engine, suite::run_child("ycsb", engine, &one));
    }
    let mut order = cfg.engines.clone();
    if run_hbase {
        runs.add(hbase::NAME, hbase::run(&cfg, &java_dir, a.java_heap_mb));
        order.push(hbase::NAME.to_string());
    }
    let suite::Runs { records, failure } = runs;
    if let Some(path) = &a.json {
        crate::record::write_json_lines(path, "ycsb", &records)?;
    }
    print!("{}", suite::markdown(&records, &order, &skipped));
    println!(
        "\nRecords: {} B keys, {} B values ({} fields × {} B). Latency per operation; \
         details: p50/p99 per operation type.",
        RecordShape::key_bytes(),
        RecordShape::new(cfg.field_count, cfg.field_length).value_bytes(),
        cfg.field_count,
        cfg.field_length
    );
    failure.map_or(Ok(()), Err)
}

/// The size of a YCSB run that another suite drives on an engine it opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CoreRun {
    pub records: u64,
    pub operations: u64,
    pub threads: usize,
    /// Bytes per record, split over YCSB's 10 fields.
    pub value_bytes: usize,
    pub seed: u64,
}

/// YCSB's core workloads in its recommended order (A, B, C, F, D, E) on `engine`, opened
/// and empty (the `objstore` suite's databases live in a bucket): the load, then each
/// workload, each measurement handed to `sink` as it exists. `dir` is where the
/// database's local files are, if any (for `db_bytes`).
pub(crate) fn run_core_workloads(
    engine: &dyn Engine,
    dir: &std::path::Path,
    run: CoreRun,
    sink: &mut dyn FnMut(SuiteRecord) -> Result<()>,
) -> Result<()> {
    const FIELDS: usize = 10;
    let cfg = YcsbConfig {
        engines: vec![engine.name().to_string()],
        workloads: "abcfde".chars().filter_map(workload::core).collect(),
        records: run.records,
        operations: run.operations,
        threads: vec![run.threads],
        field_count: FIELDS,
        field_length: (run.value_bytes / FIELDS).max(1),
        db_dir: dir.to_path_buf(),
        cache_bytes: 0,
        memtable_bytes: 0,
        seed: run.seed,
        keep_db: true,
    };
    Phases::new(&cfg, engine, run.threads, dir).run_all(sink)
}

/// One engine: every thread count, each with its own load and workloads.
fn child_main(cfg: &YcsbConfig) -> Result<()> {
    let [engine_name] = cfg.engines.as_slice() else {
        return Err(invalid("--child config must name exactly one engine"));
    };
    std::fs::create_dir_all(&cfg.db_dir).map_err(|e| BenchError::io(&cfg.db_dir, e))?;
    for &threads in &cfg.threads {
        let dir = cfg.db_dir.join(format!("ycsb-{engine_name}-t{threads}"));
        procfs::remove_dir(&dir)?;
        let engine = engine::open(
            engine_name,
            &dir,
            &OpenConfig {
                block_cache_bytes: cfg.cache_bytes,
                memtable_bytes: cfg.memtable_bytes,
                direct_reads: false,
                rocksdb_statistics: false,
                rocksdb_index_filter_in_cache: false,
                object_store: None,
            },
        )?;
        let r = Phases::new(cfg, engine.as_ref(), threads, &dir)
            .run_all(&mut |r| suite::emit("ycsb", &r));
        let closed = engine.close();
        r?;
        closed?;
        if !cfg.keep_db {
            procfs::remove_dir(&dir)?;
        }
    }
    Ok(())
}

/// The load and the workloads of one thread count on one open engine.
struct Phases<'a> {
    cfg: &'a YcsbConfig,
    engine: &'a dyn Engine,
    threads: usize,
    dir: &'a std::path::Path,
    shape: RecordShape,
    /// Records that exist (the load's, plus inserts of earlier workloads).
    records: u64,
}

impl<'a> Phases<'a> {
    fn new(
        cfg: &'a YcsbConfig,
        engine: &'a dyn Engine,
        threads: usize,
        dir: &'a std::path::Path,
    ) -> Self {
        Phases {
            cfg,
            engine,
            threads,
            dir,
            shape: RecordShape::new(cfg.field_count, cfg.field_length),
            records: 0,
        }
    }

    /// The load, then each workload, every measurement handed to `sink` as it exists.
    fn run_all(&mut self, sink: &mut dyn FnMut(SuiteRecord) -> Result<()>) -> Result<()> {
        sink(self.load()?)?;
        for (i, mix) in self.cfg.workloads.iter().enumerate() {
            sink(self.workload(*mix, i as u64)?)?;
        }
        Ok(())
    }

    /// Inserts records `0..cfg.records`, thread `t` a contiguous slice of the numbers
    /// (their keys are hashed, so every thread writes all over the key space).
    fn load(&mut self) -> Result<SuiteRecord> {
        let total = self.cfg.records;
        let threads = self.threads;
        let value_bytes = self.shape.value_bytes();
        procfs::reset_peak_rss();
        let (elapsed, outs) = suite::run_threads(threads, |t| {
            let start: u64 = (0..t)
                .map(|u| crate::measure::share(total, threads, u))
                .sum();
            let n = crate::measure::share(total, threads, t);
            let mut shape = self.shape.fork(t);
            let mut out = ClientOut::default();
            let mut key = Vec::with_capacity(RecordShape::key_bytes());
            let mut value = Vec::with_capacity(value_bytes);
            for i in start..start + n {
                RecordShape::key(i, &mut key);
                shape.value(&mut value);
                let t0 = std::time::Instant::now();
                self.engine.put(&key, &value, false)?;
                out.latency.record("insert", t0.elapsed());
                out.ops += 1;
            }
            Ok(out)
        })?;
        let settle = std::time::Instant::now();
        self.engine.flush()?;
        self.engine.wait_for_background(SETTLE_TIMEOUT)?;
        self.records = total;
        let mut r = self.record("ycsb_load", elapsed, outs)?;
        r.settle_seconds = Some(settle.elapsed().as_secs_f64());
        Ok(r)
    }

    fn workload(&mut self, mix: Mix, ordinal: u64) -> Result<SuiteRecord> {
        let records = self.records;
        let threads = self.threads;
        let ops = self.cfg.operations;
        // For `latest`, ζ over every record costs O(records): computed once, cloned per
        // thread.
        let chooser = KeyChooser::new(
            mix.distribution,
            records,
            workload::expected_inserts(&mix, ops),
        );
        let inserts = InsertCounter::new(records);
        // The previous phase's flushes and compactions finish first, untimed: a workload
        // measures its own work, not whatever debt the one before it left (which moved
        // read-only C by up to 1.5x from run to run, depending on where a compaction was).
        let settle = std::time::Instant::now();
        self.engine.wait_for_background(SETTLE_TIMEOUT)?;
        let settle_seconds = settle.elapsed().as_secs_f64();
        let shared = RunShared {
            engine: self.engine,
            mix,
            inserts: &inserts,
            value_bytes: self.shape.value_bytes(),
        };
        procfs::reset_peak_rss();
        let (elapsed, outs) = suite::run_threads(threads, |t| {
            let seed = workload::client_seed(self.cfg.seed, ordinal, t as u64);
            let n = crate::measure::share(ops, threads, t);
            client(&shared, chooser.clone(), self.shape.fork(t + 1), seed, n)
        })?;
        let before = self.records;
        self.records = inserts.complete();
        let mut r = self.record(&format!("ycsb_{}", mix.name), elapsed, outs)?;
        r.records = before;
        r.settle_seconds = Some(settle_seconds);
        r.notes.push(format!(
            "started after {settle_seconds:.1} s of untimed wait for the previous phase's background work"
        ));
        if self.records > before {
            r.notes
                .push(format!("{} records inserted", self.records - before));
        }
        Ok(r)
    }

    fn record(
        &self,
        workload: &str,
        elapsed: std::time::Duration,
        outs: Vec<ClientOut>,
    ) -> Result<SuiteRecord> {
        let mut latency = OpLatencies::default();
        let (mut ops, mut reads, mut found) = (0, 0, 0);
        for o in &outs {
            latency.merge(&o.latency);
            ops += o.ops;
            reads += o.reads;
            found += o.found;
        }
        let total = latency.total();
        let seconds = elapsed.as_secs_f64();
        let mut notes = Vec::new();
        if found < reads {
            notes.push(format!("{} reads did not find their record", reads - found));
        }
        Ok(SuiteRecord {
            engine: self.engine.name().to_string(),
            workload: workload.to_string(),
            variant: format!("t{}", self.threads),
            threads: self.threads,
            records: self.records,
            ops,
            seconds,
            ops_per_sec: if seconds > 0.0 {
                ops as f64 / seconds
            } else {
                0.0
            },
            p50_us: total.quantile_us(0.50),
            p99_us: total.quantile_us(0.99),
            latency_unit: "op".into(),
            op_latency: latency.summary(),
            rows_per_ms: None,
            key_bytes: RecordShape::key_bytes(),
            value_bytes: self.shape.value_bytes(),
            sync: false,
            found: (reads > 0).then_some(found),
            reads: (reads > 0).then_some(reads),
            db_bytes: procfs::dir_size(self.dir)?,
            peak_rss_bytes: procfs::peak_rss_bytes(),
            settle_seconds: None,
            notes,
        })
    }
}
