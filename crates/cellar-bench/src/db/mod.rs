//! The `db` suite: db_bench-style key-value workloads, one child process per engine.
//! [`config`] resolves the flags, [`workloads`] are the measured loops, [`runner`] runs
//! them on one engine in the child, and [`table`] is the suite's record and Markdown table.

pub mod config;
pub mod runner;
pub mod table;
pub mod workloads;
pub mod write_amp;

use std::path::PathBuf;

use clap::Args;

use self::runner::Runner;
use self::table::Record;
use crate::child::{self, emit_measurement};
use crate::db::config::{Config, IndexFilter, UncachedMode};
use crate::error::{BenchError, Result};

#[cfg(feature = "rocksdb")]
const DEFAULT_ENGINES: &str = "cellar,rocksdb";
#[cfg(not(feature = "rocksdb"))]
const DEFAULT_ENGINES: &str = "cellar";

const DEFAULT_BENCHMARKS: &str = "fillseq,fillrandom,overwrite,fillsync,readrandom,\
readrandom_uncached,multireadrandom,multireadrandom_uncached,seekrandom,readseq,readreverse,readwhilewriting";

#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Engines to run, comma-separated: cellar, rocksdb, lmdb, fjall, sqlite (each peer
    /// needs the cargo feature of its name; all but rocksdb are on by default).
    #[arg(long, value_name = "LIST", default_value = DEFAULT_ENGINES)]
    pub engines: String,

    /// Workloads to run in order, comma-separated, or "all": fillseq, fillrandom,
    /// overwrite, fillsync, readrandom, readrandom_uncached, multireadrandom, multireadrandom_uncached, seekrandom,
    /// readseq, readreverse, readwhilewriting. Reads use the database the last fill left;
    /// without one it is filled with fillrandom first (untimed).
    #[arg(long, value_name = "LIST", default_value = DEFAULT_BENCHMARKS)]
    pub benchmarks: String,

    /// Number of keys: fills write this many, reads draw keys from 0..NUM
    /// [default: 1000000, or 20000 with --quick].
    #[arg(long, value_name = "N")]
    pub num: Option<u64>,

    /// Operations of each read workload (keys for multireadrandom, seeks for seekrandom)
    /// [default: --num].
    #[arg(long, value_name = "R")]
    pub reads: Option<u64>,

    /// Small run that finishes in seconds: --num 20000 unless --num is given.
    #[arg(long)]
    pub quick: bool,

    /// Write the results here, one JSON object per line (workload × engine).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Also write the Markdown table here.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Parent directory of the databases (<DIR>/<engine>, <DIR>/<engine>-sync). Those
    /// subdirectories are deleted before use.
    #[arg(long, value_name = "DIR", default_value = "bench-data")]
    pub db_dir: PathBuf,

    /// Value size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub value_size: usize,

    /// Key size in bytes (keys are the zero-padded decimal key index).
    #[arg(long, value_name = "BYTES", default_value_t = 16)]
    pub key_size: usize,

    /// How far values compress: each 100-byte piece is this fraction random, the rest
    /// repeats it (db_bench's --compression_ratio).
    #[arg(long, value_name = "RATIO", default_value_t = 0.5)]
    pub compression_ratio: f64,

    /// Block cache size in MiB for all workloads but readrandom_uncached
    /// [default: big enough for the whole dataset, 1.5 × NUM × (key+value) + 8 MiB].
    #[arg(long, value_name = "M")]
    pub cache_mb: Option<u64>,

    /// Block cache in MiB for readrandom_uncached (fractions allowed)
    /// [default: a quarter of the database's size on disk].
    #[arg(long, value_name = "M")]
    pub uncached_cache_mb: Option<f64>,

    /// How readrandom_uncached keeps reads off the page cache.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = UncachedMode::Auto)]
    pub uncached_mode: UncachedMode,

    /// Memtable (write buffer) size in MiB, for every engine.
    #[arg(long, value_name = "M", default_value_t = 64)]
    pub memtable_mb: u64,

    /// Reader threads for the read workloads (reads are split between them).
    #[arg(long, value_name = "T", default_value_t = 1)]
    pub threads: usize,

    /// Keys per multi_get call in multireadrandom.
    #[arg(long, value_name = "K", default_value_t = 100)]
    pub batch: usize,

    /// Entries per write call in the fills (1: single puts, as db_bench).
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub write_batch: usize,

    /// Total fsynced writes of each fillsync variant [default: NUM/100, at least 10 per
    /// writer thread].
    #[arg(long, value_name = "N")]
    pub sync_ops: Option<u64>,

    /// Writer thread counts for fillsync, one variant each.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,16"
    )]
    pub sync_threads: Vec<usize>,

    /// Nexts after each seek in seekrandom.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub seek_nexts: usize,

    /// Seed of the key choice (the same keys for every engine).
    #[arg(long, default_value_t = 301)]
    pub seed: u64,

    /// After each fill, compact the whole database (untimed) before going on.
    #[arg(long)]
    pub compact: bool,

    /// Keep the databases after the run instead of deleting them.
    #[arg(long)]
    pub keep_db: bool,

    /// Reuse the database a previous run left in --db-dir (with --keep-db) instead of
    /// deleting it: read workloads then skip the untimed prefill (db_bench's
    /// --use_existing_db). Implies --keep-db. For profiling reads on one dataset.
    #[arg(long)]
    pub use_existing_db: bool,

    /// Do not enable RocksDB's statistics (they cost a little speed); its reads/op then
    /// come from /proc/self/io read syscalls.
    #[arg(long)]
    pub rocksdb_no_statistics: bool,

    /// Where RocksDB keeps index and filter blocks: table-reader holds them in memory
    /// outside the block cache, as Cellar does; partitioned charges 4 KiB partitions to the
    /// cache at high priority (docs/benchmarks.md, "How RocksDB is configured").
    #[arg(long, value_enum, value_name = "WHERE", default_value_t = IndexFilter::TableReader)]
    pub rocksdb_index_filter: IndexFilter,

    /// Internal: run as the child process of one engine with this JSON config.
    #[arg(long, hide = true, value_name = "JSON")]
    pub child: Option<String>,
}

/// `cellar-bench db`: the parent, or the child of one engine with `--child`.
pub fn main(args: &DbArgs) -> Result<()> {
    match &args.child {
        Some(json) => child_main(json),
        None => run(args),
    }
}

/// Parent: one child per engine, then the JSON lines and the table.
fn run(args: &DbArgs) -> Result<()> {
    let cfg = Config::resolve(args)?;
    // Fail now, not after the run, if an output file cannot be written.
    for path in [&args.json, &args.markdown].into_iter().flatten() {
        std::fs::File::create(path).map_err(|e| BenchError::io(path, e))?;
    }
    let mut records = Vec::new();
    let mut failure: Option<BenchError> = None;
    for engine in &cfg.engines {
        eprintln!(
            "[{engine}] starting: {} workloads, num {}, reads {}",
            cfg.workloads.len(),
            cfg.num,
            cfg.reads
        );
        let (mut got, r) = run_engine(&cfg, engine);
        records.append(&mut got);
        if let Err(e) = r {
            eprintln!("[{engine}] failed: {e}");
            failure.get_or_insert(e);
        }
    }
    if let Some(path) = &args.json {
        crate::record::write_json_lines(path, "db", &records)?;
    }
    let table = table::markdown(&records, &cfg.engines);
    print!("{table}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &table).map_err(|e| BenchError::io(path, e))?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Child side: runs every workload of the config's one engine, streaming the records.
pub fn child_main(config_json: &str) -> Result<()> {
    let cfg: Config = serde_json::from_str(config_json)
        .map_err(|e| BenchError::Invalid(format!("--child config: {e}")))?;
    let [engine] = cfg.engines.as_slice() else {
        return Err(BenchError::Invalid(
            "--child config must name exactly one engine".into(),
        ));
    };
    let engine = engine.clone();
    Runner::new(&cfg, &engine)
        .run_all(&mut |r: Record| emit_measurement("db", &r.progress_line(), &r))
}

/// Parent side: runs `engine`'s child, returning its records in order. On failure the
/// records that did arrive come back alongside the error.
pub fn run_engine(cfg: &Config, engine: &str) -> (Vec<Record>, Result<()>) {
    child::run_child("db", engine, &cfg.for_engine(engine))
}
