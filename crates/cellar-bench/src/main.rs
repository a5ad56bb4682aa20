//! `cellar-bench`: db_bench-style workloads run against Cellar and (with the `rocksdb`
//! feature) RocksDB, each engine in its own child process. See docs/benchmarks.md. The
//! workloads and the report live in the library; this binary is the command line.

/// Cellar ships with mimalloc, built with its `no_thp` feature: the engine's many small,
/// cross-thread allocations (skiplist nodes freed by the flush thread) cost several times
/// more with glibc's allocator, and transparent huge pages make a growing block cache's
/// first-touch faults costlier (docs/design/allocator.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use cellar_bench::{
    db, dfsio, elliptics, gen_aol, growth, hypertable, import, mapfile, objstore, peers, report,
    server, ycsb,
};
use clap::{Parser, Subcommand};

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
    Db(db::DbArgs),

    /// Hadoop's TestDFSIO (as run against SeaweedFS): N files of SIZE written (--write) and read back
    /// (--read) at once, one thread per file, in buffer-sized calls through Cellar's Vfs,
    /// with incompressible data and an fdatasync at the end of each file. Prints TestDFSIO's
    /// report (files, MB processed, throughput, average IO rate, its std deviation, exec
    /// time) and fio's ceiling for the same pattern (--fio).
    Dfsio(dfsio::DfsioArgs),

    /// How each cost grows with the data: `db` workloads (fillrandom, readrandom cached and
    /// uncached, seekrandom, readwhilewriting) at several sizes, 1M to 200M keys by default,
    /// each engine in turn at each size. Records carry write amplification, bytes on disk,
    /// index and filter memory and device reads per get; the report plots them against size.
    Growth(growth::GrowthArgs),

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

    /// Databases in S3-compatible object storage, side by side on one SeaweedFS (started
    /// here with `weed mini`, or --s3-endpoint): Cellar on local disk, Cellar in the bucket
    /// with wal=local and with wal=object, and SlateDB in the bucket (`--features slatedb`).
    /// fillseq and fillrandom (puts/s), readrandom warm (same process) and cold (a fresh
    /// process, empty caches; GETs per read from Cellar's storage counters), YCSB A-F, and
    /// durable puts with 1 and 16 writers (p50/p99). Targets: docs/benchmarks.md, "objstore".
    Objstore(objstore::ObjstoreArgs),

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
    Report(report::ReportArgs),
}

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// A lookalike of the AOL 2006 query log (Hypertable's insert/scan test), as TSV pieces
    /// DIR/a.tsv, b.tsv, ... with the header AnonID, Query, QueryTime, ItemRank, ClickURL.
    Aol(gen_aol::AolArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Db(args) => db::main(&args),
        Command::Dfsio(args) => dfsio::run(&args),
        Command::Gen(GenCommand::Aol(args)) => gen_aol::run(&args),
        Command::Growth(args) => growth::main(&args),
        Command::Hypertable(args) => hypertable::run(&args),
        Command::Mapfile(args) => mapfile::run(&args),
        Command::Elliptics(args) => elliptics::run(&args),
        Command::Objstore(args) => objstore::run(&args),
        Command::Peers(cmd) => peers::run(&cmd),
        Command::Ycsb(args) => ycsb::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Server(args) => server::run(&args),
        Command::Report(args) => report::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cellar-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}
