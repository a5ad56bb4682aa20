//! `cellar-bench server`: the import write-up ("Performance of HBase importing": rows of six
//! integers, key "a:b:c") and point reads over loopback, Cellar's server beside HBase's own
//! Thrift gateway and native client, in one run.
//!
//! Phases, each over the input file of `cellar-bench import` (import.rs), into fresh tables
//! of one family `d` (created over Thrift with happybase for both systems, one code path):
//! * Cellar: the embedded baseline first (`cellar-bench import`'s buffered variant, in a
//!   child process, no server running), then `cellar serve` (the `cellar` binary beside this
//!   one, every listener on 127.0.0.1:0): happybase → its Thrift gateway (`thrift/wN`, N
//!   writer processes), the Rust client's BufferedMutator over gRPC (`native/wN`, N writer
//!   threads, 12 MiB buffers), the Python gRPC client (`grpc-python/wN`, skipped with a note
//!   while clients/python is not installed), point gets over gRPC with the Rust client
//!   (`get-grpc/rR`) and over Thrift with happybase (`get-thrift/rR`).
//! * HBase: the mini-cluster with HBase's Thrift1 server in one JVM (bench/java
//!   HBaseThriftGateway): happybase (`thrift/wN`), gets over Thrift (`get-thrift/rR`), then
//!   HBase's native BufferedMutator on the same cluster (HBaseImport, `native/wN`).
//!
//! Point gets are open loop (elliptics/openloop.rs; the Python driver does the same): request
//! j is due at start + j/R whatever happened before, and its latency counts from its due
//! time, so a server that falls behind shows it. Every server started here is stopped by a
//! guard (proc.rs), on errors too. Results: JSON lines (record.rs) and a Markdown table, with
//! the ratios the targets of §7 need.

#[cfg(feature = "grpc-client")]
mod client;
mod phases;
mod proc;
mod python;
mod record;
mod summary;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::{BenchError, Result};
use crate::import::{self, RowReader};
use crate::measure::Latency;
use crate::suite::{OpLatency, SuiteRecord};

use self::python::PyDriver;
use self::record::ServerRecord;

/// The column every client writes: `d:v`.
#[cfg_attr(not(feature = "grpc-client"), allow(dead_code))]
pub const FAMILY: &str = "d";
#[cfg_attr(not(feature = "grpc-client"), allow(dead_code))]
pub const QUALIFIER: &[u8] = b"v";

const QUICK_RECORDS: u64 = 20_000;
const MIB: u64 = 1 << 20;
const CELLAR_START: Duration = Duration::from_secs(60);
const HBASE_START: Duration = Duration::from_secs(300);
const HBASE_STOP: Duration = Duration::from_secs(120);
const HBASE_NATIVE_TIMEOUT: Duration = Duration::from_secs(3 * 3600);
const HBASE_THRIFT_SERVER: &str =
    "HBase 2.6.1 ThriftServer (threadpool, buffered, binary) + mini-cluster";
const HAPPYBASE: &str = "happybase 1.3 (Thrift1, buffered transport, binary protocol)";

#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Systems to run, comma-separated: cellar, hbase.
    #[arg(long, value_name = "LIST", default_value = "cellar,hbase")]
    pub engines: String,

    /// Rows in the input file, all written by each import variant
    /// [default: 1000000, 20000 with --quick].
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,

    /// Writer counts (processes for Python, threads for the Rust and Java clients).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,6"
    )]
    pub writers: Vec<usize>,

    /// Point-get rates (requests per second), one open-loop step each.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1000,5000,10000"
    )]
    pub rates: Vec<u64>,

    /// Length of each point-get step in seconds [default: 10, 1 with --quick].
    #[arg(long, value_name = "S")]
    pub get_seconds: Option<f64>,

    /// Threads (and connections) issuing the point gets.
    #[arg(long, value_name = "T", default_value_t = 8)]
    pub get_threads: usize,

    /// Rows per happybase batch (`table.batch(batch_size=...)`).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub batch_size: usize,

    /// Client write buffer of the Rust, Java and embedded writers, in MiB.
    #[arg(long, value_name = "M", default_value_t = 12)]
    pub buffer_mb: u64,

    /// Python with happybase [default: target/py-venv/bin/python, scripts/test.sh's
    /// virtualenv, if it exists].
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,

    /// The `cellar` binary [default: the one beside this binary].
    #[arg(long, value_name = "PATH")]
    pub cellar_bin: Option<PathBuf>,

    /// Small run that finishes in seconds.
    #[arg(long)]
    pub quick: bool,

    /// Write the results here, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Directory of the input file and the databases (<DIR>/server-cellar,
    /// <DIR>/server-hbase, <DIR>/import-cellar; deleted before use).
    #[arg(long, value_name = "DIR", default_value = "bench-data")]
    pub db_dir: PathBuf,

    /// Seed of the generated rows (import.rs: the same file as `cellar-bench import`).
    #[arg(long, default_value_t = 2009)]
    pub seed: u64,

    /// The bench/java folder [default: $CELLAR_BENCH_JAVA_DIR, else the source tree's].
    #[arg(long, value_name = "DIR")]
    pub java_dir: Option<PathBuf>,

    /// Maximum heap of the HBase JVM (MiB).
    #[arg(long, value_name = "MB", default_value_t = 4096)]
    pub java_heap_mb: u64,
}

/// The checked configuration.
#[derive(Debug, Clone)]
struct Config {
    cellar: bool,
    hbase: bool,
    records: u64,
    writers: Vec<usize>,
    rates: Vec<u64>,
    get_seconds: f64,
    get_threads: usize,
    batch_size: usize,
    buffer_bytes: u64,
    input: PathBuf,
    db_dir: PathBuf,
    seed: u64,
}

fn invalid(what: impl Into<String>) -> BenchError {
    BenchError::Invalid(what.into())
}

impl Config {
    fn resolve(a: &ServerArgs) -> Result<Config> {
        let (mut cellar, mut hbase) = (false, false);
        for name in a
            .engines
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            match name {
                "cellar" => cellar = true,
                "hbase" => hbase = true,
                other => {
                    return Err(invalid(format!(
                        "--engines: unknown system {other:?} (known: cellar, hbase)"
                    )))
                }
            }
        }
        if !cellar && !hbase {
            return Err(invalid("--engines names no system (cellar, hbase)"));
        }
        let records = a
            .records
            .unwrap_or(if a.quick { QUICK_RECORDS } else { 1_000_000 });
        let get_seconds = a.get_seconds.unwrap_or(if a.quick { 1.0 } else { 10.0 });
        if records == 0 {
            return Err(invalid("--records must be at least 1"));
        }
        if a.writers.is_empty() || a.writers.contains(&0) {
            return Err(invalid("--writers needs writer counts of at least 1"));
        }
        if a.rates.contains(&0)
            || !get_seconds.is_finite()
            || get_seconds <= 0.0
            || a.get_threads == 0
        {
            return Err(invalid(
                "--rates, --get-seconds and --get-threads must be above 0",
            ));
        }
        if a.batch_size == 0 || a.buffer_mb == 0 {
            return Err(invalid("--batch-size and --buffer-mb must be at least 1"));
        }
        Ok(Config {
            cellar,
            hbase,
            records,
            writers: a.writers.clone(),
            rates: a.rates.clone(),
            get_seconds,
            get_threads: a.get_threads,
            batch_size: a.batch_size,
            buffer_bytes: a.buffer_mb * MIB,
            input: a.db_dir.join(format!("import-{records}-{}.bin", a.seed)),
            db_dir: a.db_dir.clone(),
            seed: a.seed,
        })
    }
}

/// What the run has gathered so far: records, skip notes, the first failure.
struct Run {
    cfg: Config,
    /// Mean key and value bytes of the input rows.
    sizes: (usize, usize),
    records: Vec<ServerRecord>,
    skipped: Vec<String>,
    skip_records: Vec<record::SkipRecord>,
    failure: Option<BenchError>,
}

impl Run {
    /// Variants of `engine` (e.g. "thrift/*") that could not run, and why.
    fn note_skip(&mut self, engine: &str, variants: &str, why: String) {
        let text = format!("{engine} {variants}: {why}");
        eprintln!("[server] skipped {text}");
        self.skipped.push(text);
        self.skip_records
            .push(record::SkipRecord::new(engine, variants, why));
    }

    /// Keeps the first failure and goes on with the next phase.
    fn keep(&mut self, what: &str, r: Result<()>) {
        if let Err(e) = r {
            eprintln!("[server] {what} failed: {e}");
            self.failure.get_or_insert(e);
        }
    }

    fn push(&mut self, r: ServerRecord) {
        eprintln!("{}", r.suite.progress_line());
        self.records.push(r);
    }

    /// A record of `rows` written in `seconds`, latency per `unit` from `lat`.
    fn import_record(&self, engine: &str, variant: String, m: ImportFigures) -> SuiteRecord {
        let mut op_latency = BTreeMap::new();
        op_latency.insert(
            m.op.to_string(),
            OpLatency {
                ops: m.lat.count(),
                p50_us: m.lat.quantile_us(0.50),
                p99_us: m.lat.quantile_us(0.99),
            },
        );
        let secs = m.seconds.max(1e-9);
        SuiteRecord {
            engine: engine.to_string(),
            workload: "server".into(),
            variant,
            threads: m.writers,
            records: m.rows,
            ops: m.rows,
            seconds: m.seconds,
            ops_per_sec: m.rows as f64 / secs,
            p50_us: m.lat.quantile_us(0.50),
            p99_us: m.lat.quantile_us(0.99),
            latency_unit: m.unit.to_string(),
            op_latency,
            rows_per_ms: Some(m.rows as f64 / (secs * 1000.0)),
            key_bytes: self.sizes.0,
            value_bytes: self.sizes.1,
            sync: false,
            found: None,
            reads: None,
            db_bytes: 0,
            peak_rss_bytes: None,
            settle_seconds: None,
            notes: m.notes,
        }
    }
}

impl Run {
    /// A record of an open-loop point-get step: ops/s is the achieved rate, latency from
    /// each request's due time.
    fn get_record(&self, engine: &str, variant: String, g: phases::GetFigures) -> SuiteRecord {
        let mut op_latency = BTreeMap::new();
        op_latency.insert(
            "get".to_string(),
            OpLatency {
                ops: g.completed,
                p50_us: g.p50_us,
                p99_us: g.p99_us,
            },
        );
        SuiteRecord {
            engine: engine.to_string(),
            workload: "server".into(),
            variant,
            threads: g.threads,
            records: self.cfg.records,
            ops: g.completed,
            seconds: g.seconds,
            ops_per_sec: g.completed as f64 / g.seconds.max(1e-9),
            p50_us: g.p50_us,
            p99_us: g.p99_us,
            latency_unit: "get, from its due time (open loop)".into(),
            op_latency,
            rows_per_ms: None,
            key_bytes: self.sizes.0,
            value_bytes: self.sizes.1,
            sync: false,
            found: Some(g.found),
            reads: Some(g.completed),
            db_bytes: 0,
            peak_rss_bytes: None,
            settle_seconds: None,
            notes: vec![format!(
                "open loop, {} threads; one row per request",
                g.threads
            )],
        }
    }
}

struct ImportFigures {
    rows: u64,
    seconds: f64,
    writers: usize,
    lat: Latency,
    op: &'static str,
    unit: &'static str,
    notes: Vec<String>,
}

pub fn run(a: &ServerArgs) -> Result<()> {
    let cfg = Config::resolve(a)?;
    std::fs::create_dir_all(&cfg.db_dir).map_err(|e| BenchError::io(&cfg.db_dir, e))?;
    crate::suite::check_writable(a.json.as_deref())?;
    let t0 = Instant::now();
    import::write_input(&cfg.input, cfg.records, cfg.seed)?;
    eprintln!(
        "[server] input {} ({} rows) ready in {:.1} s",
        cfg.input.display(),
        cfg.records,
        t0.elapsed().as_secs_f64()
    );
    let sizes = mean_sizes(&cfg.input, cfg.records)?;
    let mut run = Run {
        cfg: cfg.clone(),
        sizes,
        records: Vec::new(),
        skipped: Vec::new(),
        skip_records: Vec::new(),
        failure: None,
    };
    let py = match resolve_python(a) {
        Ok(p) => Some(p),
        Err(why) => {
            let systems = [("cellar", cfg.cellar), ("hbase", cfg.hbase)];
            for (engine, on) in systems {
                if on {
                    run.note_skip(engine, "thrift/*", why.clone());
                    run.note_skip(engine, "get-thrift/*", why.clone());
                }
            }
            if cfg.cellar {
                run.note_skip("cellar", "grpc-python/*", why);
            }
            None
        }
    };
    if cfg.cellar {
        let r = phases::cellar(&mut run, a, py.as_ref());
        run.keep("cellar", r);
    }
    if cfg.hbase {
        let r = phases::hbase(&mut run, a, py.as_ref());
        run.keep("hbase", r);
    }
    let targets = summary::targets(&run.records, &run.cfg);
    if let Some(path) = &a.json {
        record::write_lines(path, &run.records, &run.skip_records, &targets)?;
    }
    print!(
        "{}",
        summary::markdown(&run.records, &targets, &run.skipped)
    );
    run.failure.map_or(Ok(()), Err)
}

/// The Python driver, checked, or why the Python variants cannot run.
fn resolve_python(a: &ServerArgs) -> std::result::Result<PyDriver, String> {
    let python = a
        .python
        .clone()
        .or_else(python::default_python)
        .ok_or("no --python and no target/py-venv (scripts/test.sh creates it)")?;
    let driver = PyDriver {
        python,
        script: python::default_script(),
    };
    driver.check()?;
    Ok(driver)
}

/// Mean key and value sizes of up to 1000 rows spread over the input.
fn mean_sizes(input: &Path, records: u64) -> Result<(usize, usize)> {
    let step = (records / 1000).max(1);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let (mut n, mut k, mut v) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < records {
        let mut r = RowReader::open(input, i, 1)?;
        if let Some(row) = r.next_row().map_err(|e| BenchError::io(input, e))? {
            row.key(&mut key);
            row.value(&mut value);
            n += 1;
            k += key.len();
            v += value.len();
        }
        i += step;
    }
    let mean = |sum: usize| (sum + n / 2) / n.max(1);
    Ok((mean(k), mean(v)))
}

#[cfg_attr(not(feature = "grpc-client"), allow(dead_code))]
/// `count` row keys drawn at random from the first `records` rows of the input.
fn random_keys(input: &Path, records: u64, count: usize, seed: u64) -> Result<Vec<Vec<u8>>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys = Vec::with_capacity(count);
    for _ in 0..count {
        let i = rng.gen_range(0..records);
        let mut r = RowReader::open(input, i, 1)?;
        let row = r
            .next_row()
            .map_err(|e| BenchError::io(input, e))?
            .ok_or_else(|| invalid("input file shorter than --records"))?;
        let mut key = Vec::new();
        row.key(&mut key);
        keys.push(key);
    }
    Ok(keys)
}
