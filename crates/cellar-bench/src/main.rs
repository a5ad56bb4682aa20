//! `cellar-bench`: db_bench-style workloads run against Cellar and (with the `rocksdb`
//! feature) RocksDB, each engine in its own child process. See docs/benchmarks.md.

mod child;
mod command;
mod config;
mod dfsio;
mod elliptics;
mod engine;
mod engines;
mod error;
mod gen_aol;
mod hypertable;
mod import;
mod java;
mod keygen;
mod mapfile;
mod measure;
mod peer_keys;
mod peers;
mod procfs;
mod report;
mod results;
mod runner;
mod server;
mod suite;
mod workloads;
mod ycsb;

/// Cellar ships with mimalloc, built with its `no_thp` feature: the engine's many small,
/// cross-thread allocations (skiplist nodes freed by the flush thread) cost several times
/// more with glibc's allocator, and transparent huge pages make a growing block cache's
/// first-touch faults costlier (docs/design/allocator.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub use crate::command::command_line;
use crate::config::{Config, IndexFilter, UncachedMode};
use crate::error::{BenchError, Result};

#[cfg(feature = "rocksdb")]
const DEFAULT_ENGINES: &str = "cellar,rocksdb";
#[cfg(not(feature = "rocksdb"))]
const DEFAULT_ENGINES: &str = "cellar";

const DEFAULT_BENCHMARKS: &str = "fillseq,fillrandom,overwrite,fillsync,readrandom,\
readrandom_uncached,multireadrandom,multireadrandom_uncached,seekrandom,readseq,readreverse,readwhilewriting";

#[derive(Debug, Parser)]
#[command(
    name = "cellar-bench",
    version,
    about = "db_bench-style benchmarks of Cellar side by side with RocksDB"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Run key-value workloads (db_bench names) on each engine and compare them.
    ///
    /// Each engine runs in a child process of its own. Results: one JSON object per
    /// workload and engine (--json), and a Markdown table on stdout (--markdown). Progress
    /// goes to stderr.
    Db(DbArgs),

    /// Hadoop's TestDFSIO (as run against SeaweedFS): N files of SIZE written (--write) and read back
    /// (--read) at once, one thread per file, in buffer-sized calls through Cellar's Vfs,
    /// with incompressible data and an fdatasync at the end of each file. Prints TestDFSIO's
    /// report (files, MB processed, throughput, average IO rate, its std deviation, exec
    /// time) and fio's ceiling for the same pattern (--fio).
    Dfsio(dfsio::DfsioArgs),

    /// Generate input files for benchmarks.
    #[command(subcommand)]
    Gen(GenCommand),

    /// Hypertable's AOL query-log test: 4 concurrent bulk loads, a 5th alone,
    /// a full scan (library and `cellar shell` to /dev/null), and cells streamed through
    /// the WAL with a 12 MiB client buffer.
    Hypertable(hypertable::HypertableArgs),

    /// Hadoop MapFile vs HBase: insert N records in key order, look up 1% of them per
    /// iteration (one by one and in buckets), then durable inserts one at a time; Cellar,
    /// RocksDB and the Java peers side by side (see docs/benchmarks.md).
    Mapfile(mapfile::MapfileArgs),

    /// Elliptics vs HBase (ioremap.net): N records of ~200 bytes of text loaded in key order,
    /// then from cold starts (page cache dropped, engine reopened): random gets at a fixed
    /// rate by an open-loop reader (--rps for --seconds; p50/p90/p99 from each request's due
    /// time), the highest rate whose p50 stays under --latency-ms and whose p99 stays under
    /// --p99-latency-ms, random range reads (seek + 10 and + 100 rows), the size on disk and
    /// the resident index memory. Cellar, RocksDB, LMDB and HBase side by side (see
    /// docs/benchmarks.md, "elliptics").
    Elliptics(elliptics::EllipticsArgs),

    /// Install, check and self-test the peers (RocksDB, Hadoop MapFile, HBase).
    #[command(subcommand)]
    Peers(peers::PeersCommand),
    /// YCSB core workloads A-F (load, then each workload) on every engine, with 1 and 4
    /// client threads. JSON lines (--json) and a Markdown table on stdout.
    Ycsb(ycsb::YcsbArgs),

    /// "Performance of HBase importing": rows of 6 integers from a flat file written through the
    /// normal write path, one fsynced put per row ("autoflush on") or 12 MiB batches
    /// ("autoflush off"), with 1, 2, 4 and 6 parallel writers; rows per millisecond.
    Import(import::ImportArgs),

    /// The import write-up over the network: happybase → Cellar's Thrift gateway and →
    /// HBase's own Thrift server (1 and 6 writer processes), Cellar's Rust BufferedMutator
    /// over gRPC and HBase's native BufferedMutator, the embedded import as the baseline,
    /// and point gets at fixed rates (open loop, p50/p99); the ratios the targets need.
    Server(server::ServerArgs),

    /// Regenerate docs/benchmarks/RESULTS.md and its SVG plots from JSON-lines results of
    /// the subcommands above: tables per workload with the ratio to Cellar, the machine
    /// and the disk's fio ceilings.
    Report(results::ReportArgs),
}

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// A lookalike of the AOL 2006 query log (Hypertable's insert/scan test), as TSV pieces
    /// DIR/a.tsv, b.tsv, ... with the header AnonID, Query, QueryTime, ItemRank, ClickURL.
    Aol(gen_aol::AolArgs),
}

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

    /// Where RocksDB keeps index and filter blocks. block-cache charges them to the block
    /// cache (level 0's pinned); with a small cache, whole-file filters larger than a cache
    /// shard are then re-read on most lookups. table-reader keeps them in memory outside
    /// the cache, as Cellar does.
    #[arg(long, value_enum, value_name = "WHERE", default_value_t = IndexFilter::BlockCache)]
    pub rocksdb_index_filter: IndexFilter,

    /// Internal: run as the child process of one engine with this JSON config.
    #[arg(long, hide = true, value_name = "JSON")]
    pub child: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Db(args) => match &args.child {
            Some(json) => child::child_main(json),
            None => run(&args),
        },
        Command::Dfsio(args) => dfsio::run(&args),
        Command::Gen(GenCommand::Aol(args)) => gen_aol::run(&args),
        Command::Hypertable(args) => hypertable::run(&args),
        Command::Mapfile(args) => mapfile::run(&args),
        Command::Elliptics(args) => elliptics::run(&args),
        Command::Peers(cmd) => peers::run(&cmd),
        Command::Ycsb(args) => ycsb::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Server(args) => server::run(&args),
        Command::Report(args) => results::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cellar-bench: error: {e}");
            ExitCode::FAILURE
        }
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
        let (mut got, r) = child::run_engine(&cfg, engine);
        records.append(&mut got);
        if let Err(e) = r {
            eprintln!("[{engine}] failed: {e}");
            failure.get_or_insert(e);
        }
    }
    if let Some(path) = &args.json {
        report::write_json_lines(path, &records)?;
    }
    let table = report::markdown(&records, &cfg.engines);
    print!("{table}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &table).map_err(|e| BenchError::io(path, e))?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
