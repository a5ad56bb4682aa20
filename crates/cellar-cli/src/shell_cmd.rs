//! `cellar shell` arguments and how a run maps to an exit code.

use std::io::{self, Write};
use std::path::PathBuf;

use cellar_engine::Durability;
use cellar_table::CellStore;

use crate::error::{CliError, Outcome};
use cellar_shell::{self as shell, ShellOptions};

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  every statement succeeded
  1  a statement (or the load) failed; the error names its line (or file and line)
  2  usage error, or the database could not be opened";

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DurabilityArg {
    Buffered,
    Flush,
    Sync,
}

impl From<DurabilityArg> for Durability {
    fn from(d: DurabilityArg) -> Durability {
        match d {
            DurabilityArg::Buffered => Durability::Buffered,
            DurabilityArg::Flush => Durability::Flush,
            DurabilityArg::Sync => Durability::Sync,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ShellArgs {
    /// Database directory (created if missing), or s3://bucket/prefix
    #[arg(long, value_name = "PATH|URL", default_value = crate::DEFAULT_DB)]
    pub db: PathBuf,
    #[command(flatten)]
    pub store: cellar_server::ObjectStoreArgs,
    /// Run the statements read from stdin instead of prompting
    #[arg(long)]
    pub batch: bool,
    /// Run these statements (separated by ';') and exit
    #[arg(
        short = 'e',
        long = "execute",
        value_name = "STATEMENTS",
        conflicts_with = "batch"
    )]
    pub execute: Option<String>,
    /// How writes are made durable before a statement's result is printed
    #[arg(long, value_enum, default_value = "flush")]
    pub durability: DurabilityArg,
    /// Keep going after a failed statement (batch and -e)
    #[arg(long = "continue")]
    pub keep_going: bool,
    /// No progress display for LOAD DATA INFILE
    #[arg(long)]
    pub no_progress: bool,
}

/// Opens the tables of the database at `db` (a directory or an `s3://` URL).
pub fn open_store(
    db: &std::path::Path,
    store: &cellar_server::ObjectStoreArgs,
) -> Result<CellStore, CliError> {
    CellStore::open(db, store.options())
        .map_err(|e| CliError::Usage(format!("cannot open database {}: {e}", db.display())))
}

pub fn run(args: ShellArgs, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let store = open_store(&args.db, &args.store)?;
    let opts = ShellOptions {
        durability: args.durability.into(),
        keep_going: args.keep_going,
        quiet_progress: args.no_progress,
    };
    let outcome = if let Some(text) = &args.execute {
        let mut input = io::Cursor::new(text.as_bytes());
        shell::run_script(&store, &opts, &mut input, out)
    } else if args.batch {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        shell::run_script(&store, &opts, &mut input, out)
    } else {
        shell::run_interactive(&store, &opts)
    }
    .map_err(CliError::Output)?;
    if let Err(e) = store.db().clone().close() {
        return Err(CliError::Engine(e));
    }
    Ok(if outcome.failed_statements > 0 {
        Outcome::Damaged
    } else {
        Outcome::Clean
    })
}
