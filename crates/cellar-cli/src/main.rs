//! `cellar`: the HQL shell, bulk loads, and read-only inspection and checking of a database.

mod backup;
mod check;
mod dbdir;
mod error;
mod inspect_log;
mod inspect_lsm;
mod inspect_sst;
mod load_cmd;
mod place;
mod serve_cmd;
mod shell_cmd;
mod show;

/// The allocator Cellar ships with (as in cellar-bench): glibc malloc costs several times
/// more in the engine's small cross-thread allocations. `no_thp` as in cellar-bench: huge
/// pages make a growing block cache's page faults costlier on this kind of VM.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use error::{CliError, Outcome, EXIT_CODES_HELP, EXIT_DAMAGED, EXIT_OK};

const DEFAULT_DB: &str = "./cellar-data";

#[derive(Debug, Parser)]
#[command(
    name = "cellar",
    version,
    about = "Cellar: the HQL shell, bulk loads, inspection and checking of databases",
    long_about = "Cellar: the HQL shell, bulk loads, inspection and checking of databases.\n\n\
                  `shell` and `load` open the database (creating it if missing). `inspect` \
                  and `check` are read-only: they never open the database for writing, take \
                  no lock and modify no file, so they are safe on a database in use or one \
                  that is damaged. `backup` and `restore` copy a database's newest state \
                  between directories and s3:// prefixes (docs/backup.md).",
    after_help = EXIT_CODES_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The HQL shell: interactive, --batch (statements from stdin) or -e "stmt; stmt"
    #[command(
        long_about = "The HQL shell (statements: docs/hql.md, or HELP;).\n\n\
                      Interactive on a terminal, with line editing and history \
                      (~/.cellar_history). With --batch (or when stdin is not a terminal) it \
                      runs the statements read from stdin, printing each result as soon as \
                      the statement completes; with -e it runs the given statements. In those \
                      modes an error prints a message naming the statement's line and stops \
                      with exit code 1, unless --continue.\n\n\
                      --durability chooses how writes (INSERT, DELETE) are made durable: \
                      buffered (in process), flush (to the OS: survives a process crash) or \
                      sync (fdatasync: survives power loss; a statement's result is printed \
                      only once its writes are durable).",
        after_help = shell_cmd::EXIT_CODES_HELP
    )]
    Shell(shell_cmd::ShellArgs),
    /// Bulk-load TSV files into a table (sorted files built directly, ingested atomically)
    #[command(
        long_about = "Bulk-load TSV files (plain or .gz) into a table.\n\n\
                      Each file starts with a header line naming its columns (or give \
                      --header-file). The --row-key-column gives the row; every other \
                      non-empty field becomes one cell in the family its column names. Lines \
                      are parsed in parallel, sorted in runs bounded by --memory-budget-mb, \
                      merged and written as sorted files that are added to the table in one \
                      step: the whole load becomes visible at once, or, if anything fails (a \
                      malformed line, unless --skip-bad-lines), nothing does. Progress goes to \
                      stderr; Hypertable-style statistics to stdout at the end.",
        after_help = shell_cmd::EXIT_CODES_HELP
    )]
    Load(load_cmd::LoadArgs),
    /// Serve the database over the network: HBase Thrift1 (happybase), gRPC, REST and metrics
    #[command(
        long_about = "Serve the database over the network until SIGTERM or SIGINT.\n\n\
                      One process, three listeners (each can be `none`): the HBase Thrift1 \
                      gateway (--thrift, happybase works unchanged: buffered or framed \
                      transport, binary or compact protocol, detected per connection), \
                      Cellar's gRPC API (--grpc, cellar-client and the Python client) and \
                      HTTP (--http: REST, /metrics for Prometheus, /health, and a status \
                      page at /). Loopback by default; listening beyond it requires \
                      --token-file (and --thrift-insecure for Thrift, which has no \
                      credentials). Prints `listening PROTOCOL ADDR` per listener on \
                      stdout once it accepts connections; logs go to stderr (RUST_LOG \
                      sets the level). On SIGTERM it stops accepting, finishes requests in \
                      flight (--shutdown-timeout), flushes and closes the database. \
                      Details: docs/server.md.",
        after_help = EXIT_CODES_HELP
    )]
    Serve(cellar_server::ServeArgs),
    /// Decode one file (SST, WAL, manifest) or the LSM tree and print it
    #[command(subcommand, after_help = EXIT_CODES_HELP)]
    Inspect(Inspect),
    /// Verify every checksum of a database: CURRENT, manifest, WALs and SSTs
    #[command(
        long_about = "Verify every checksum of a database, read-only.\n\n\
                      Checks CURRENT; the manifest it names (every record must check out and \
                      decode, and the edits must replay); every live WAL (strictly, except \
                      that the newest may end in a torn write, reported as a warning); and \
                      every SST the manifest lists (every block read and checked, size and \
                      key range compared with the manifest). Files nothing refers to are \
                      reported as warnings.\n\n\
                      With --db s3://bucket/prefix (a database in an object store), it \
                      reads and never writes the bucket: the newest manifest snapshot \
                      (decoded and replayed), every SST it lists, the older retained \
                      snapshots and every WAL object (fences are noted); SST objects no \
                      retained snapshot lists are reported as warnings (orphans, which the \
                      writer's garbage collection deletes after its grace period).\n\n\
                      Output: one line per file, `OK <path>`, `CORRUPT <path>: <error naming \
                      the file and offset>`, `MISSING <path>: <why>` or `WARN <path>: <why>`, \
                      then a summary line.\n\n\
                      On a database that is open and being written, files can change while \
                      they are checked; check a closed database for a definitive answer.",
        after_help = EXIT_CODES_HELP
    )]
    Check {
        /// Database directory, or s3://bucket/prefix
        #[arg(long, value_name = "PATH|URL", default_value = DEFAULT_DB)]
        db: PathBuf,
        #[command(flatten)]
        store: cellar_server::ObjectStoreArgs,
    },
    /// Copy the newest state of a database to a directory or s3:// prefix, incrementally
    #[command(
        long_about = "Copy the newest consistent state of a database (--db) to a backup \
                      (--to); either side is a directory or s3://bucket/prefix.\n\n\
                      A directory database is locked (refused while a writer holds its \
                      LOCK) and copied as it is, or, if its WAL holds writes its manifest \
                      does not, opened and checkpointed, and the checkpoint is copied. A database in an \
                      object store is read at its newest manifest snapshot without writing \
                      to it: its writer is not fenced and keeps running (writes still only \
                      in its WAL are not part of the backup).\n\n\
                      Incremental: SSTs never change and are named by number, so only those \
                      the backup lacks (by name and size) are copied; the manifest is \
                      written last (a new snapshot object in an object store, a manifest \
                      and CURRENT in a directory), so an interrupted backup leaves the \
                      previous one intact. Progress (each file copied or skipped) goes to \
                      stderr, a summary line to stdout. Details: docs/backup.md.",
        after_help = EXIT_CODES_HELP
    )]
    Backup(backup::BackupArgs),
    /// Restore a backup into a new directory or s3:// prefix
    #[command(
        long_about = "Restore a backup (--from, a directory or s3://bucket/prefix) into \
                      --db, a directory or s3://bucket/prefix that must not hold a \
                      database yet (refused otherwise). The same copy as `cellar backup`, \
                      in the other direction: the SSTs, then the manifest last. The \
                      restored database opens as a database of its own and holds exactly \
                      the backed-up state; `cellar check` verifies it. Details: \
                      docs/backup.md.",
        after_help = EXIT_CODES_HELP
    )]
    Restore(backup::RestoreArgs),
}

#[derive(Debug, Subcommand)]
enum Inspect {
    /// Print an SST's footer, properties, index, filter and data blocks (and its entries)
    #[command(
        long_about = "Print an SST's footer (magic, version, block handles), properties \
                      (counts, sequence and key range, sizes, settings), index (separators), \
                      filter (bits, probes, size) and data blocks (offset, size, codec).\n\n\
                      With --entries, every entry as `key @seq KIND => value`: printable \
                      ASCII as is, `\\` as `\\\\`, other bytes as \\xNN; values are cut to 64 \
                      bytes.",
        after_help = EXIT_CODES_HELP
    )]
    Sst {
        /// The .sst file (a bare name is also looked up in --db)
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Print every entry
        #[arg(long)]
        entries: bool,
        /// Print at most N entries (implies --entries)
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Database directory to resolve a bare FILE name in
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// Print a write-ahead log: its header and every record's write batch
    #[command(
        long_about = "Print a write-ahead log: its header (kind, version), then each record \
                      (offset, length, first sequence number, op count) and its ops (PUT, \
                      DEL, DELRANGE with keyspace id, key and value length), then the record \
                      count, the byte count and the size of a torn tail, if any, which \
                      recovery would drop.",
        after_help = EXIT_CODES_HELP
    )]
    Wal {
        /// The .wal file (a bare name is also looked up in --db)
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Database directory to resolve a bare FILE name in
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// Print every version edit of a manifest (by default the one CURRENT names)
    #[command(
        long_about = "Print every version edit of a manifest: log number, next file number, \
                      last sequence, keyspaces created and dropped, files added (keyspace, \
                      level, number, size, key and sequence range) and deleted, and range \
                      tombstones; then the bytes the edits wrote into each level (flushes, \
                      compaction outputs, ingests; a file moved down without a rewrite is \
                      counted apart) after the first edit, which lists the files that \
                      existed when the manifest began (at open or at its rollover). \
                      Without FILE, reads the manifest CURRENT names.",
        after_help = EXIT_CODES_HELP
    )]
    Manifest {
        /// Database directory
        #[arg(long, value_name = "PATH", default_value = DEFAULT_DB)]
        db: PathBuf,
        /// Manifest file to read instead of the one CURRENT names
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Print the LSM tree: files and bytes per level of each keyspace
    #[command(
        long_about = "Print the current LSM tree as a table per keyspace: level, file \
                      count, bytes and user-key range, with totals and range tombstones. \
                      Built by replaying the manifest, without opening the database.",
        after_help = EXIT_CODES_HELP
    )]
    Lsm {
        /// Database directory, or s3://bucket/prefix
        #[arg(long, value_name = "PATH|URL", default_value = DEFAULT_DB)]
        db: PathBuf,
        #[command(flatten)]
        store: cellar_server::ObjectStoreArgs,
    },
}

fn run(cli: Cli, out: &mut dyn Write) -> Result<Outcome, CliError> {
    match cli.command {
        Command::Shell(args) => shell_cmd::run(args, out),
        Command::Load(args) => load_cmd::run(args, out),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Check { db, store } => check::run(&db, &store, out),
        Command::Backup(args) => backup::backup(&args, out),
        Command::Restore(args) => backup::restore(&args, out),
        Command::Inspect(Inspect::Sst {
            file,
            entries,
            limit,
            db,
        }) => {
            let path = dbdir::resolve(&file, db.as_deref());
            let args = inspect_sst::SstArgs {
                path: &path,
                entries,
                limit,
            };
            inspect_sst::run(&args, out)
        }
        Command::Inspect(Inspect::Wal { file, db }) => {
            inspect_log::wal(&dbdir::resolve(&file, db.as_deref()), out)
        }
        Command::Inspect(Inspect::Manifest { db, file }) => {
            inspect_log::manifest(&db, file.as_deref(), out)
        }
        Command::Inspect(Inspect::Lsm { db, store }) => inspect_lsm::run(&db, &store, out),
    }
}

fn main() -> ExitCode {
    // Usage errors exit with code 2, `--help` and `--version` with 0 (clap's convention).
    let cli = Cli::parse();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = run(cli, &mut out);
    let flushed = out.flush();
    match result {
        Ok(Outcome::Clean) => match flushed {
            Ok(()) => ExitCode::from(EXIT_OK),
            Err(e) => fail(&CliError::Output(e)),
        },
        Ok(Outcome::Damaged) => ExitCode::from(EXIT_DAMAGED),
        Err(e) => fail(&e),
    }
}

fn fail(e: &CliError) -> ExitCode {
    // A reader that stopped early (`cellar inspect ... | head`) is not an error.
    if let CliError::Output(io) = e {
        if io.kind() == io::ErrorKind::BrokenPipe {
            return ExitCode::from(EXIT_OK);
        }
    }
    eprintln!("cellar: {e}");
    ExitCode::from(e.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
