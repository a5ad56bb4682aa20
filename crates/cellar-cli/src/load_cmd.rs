//! `cellar load`: bulk load TSV files into a table.

use std::io::Write;
use std::path::PathBuf;

use cellar_load::{load_into_table, LoadSpec};

use crate::error::{CliError, Outcome};
use crate::shell_cmd::open_store;
use cellar_shell::progress::LoadProgress;

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// Database directory (created if missing), or s3://bucket/prefix
    #[arg(long, value_name = "PATH|URL", default_value = crate::DEFAULT_DB)]
    pub db: PathBuf,
    #[command(flatten)]
    pub store: cellar_server::ObjectStoreArgs,
    /// The table to load into (it must exist: CREATE TABLE in the shell)
    #[arg(long)]
    pub table: String,
    /// The column holding the row key (default: the first column)
    #[arg(long, value_name = "COLUMN")]
    pub row_key_column: Option<String>,
    /// A column of timestamps ('YYYY-MM-DD HH:MM:SS' UTC or nanoseconds); otherwise each
    /// line gets a fresh, increasing timestamp
    #[arg(long, value_name = "COLUMN")]
    pub timestamp_column: Option<String>,
    /// A file whose first line is the header (the input files then have none)
    #[arg(long, value_name = "FILE")]
    pub header_file: Option<PathBuf>,
    /// Skip columns that name no family of the table instead of failing
    #[arg(long)]
    pub ignore_unknown_columns: bool,
    /// Skip (and count) malformed lines instead of failing the load
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Parsed cells held in memory before sorted runs are spilled to disk
    #[arg(long, value_name = "MB", default_value_t = 1024)]
    pub memory_budget_mb: usize,
    /// Where spilled runs go (default: the system's temporary directory)
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// No progress display
    #[arg(long)]
    pub no_progress: bool,
    /// The TSV files (plain or .gz), loaded together as one atomic load
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

pub fn run(args: LoadArgs, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let store = open_store(&args.db, &args.store)?;
    let table = store
        .table(&args.table)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let spec = LoadSpec {
        files: args.files,
        row_key_column: args.row_key_column,
        timestamp_column: args.timestamp_column,
        header_file: args.header_file,
        ignore_unknown_columns: args.ignore_unknown_columns,
        skip_bad_lines: args.skip_bad_lines,
        memory_budget_bytes: args.memory_budget_mb.max(1) << 20,
        temp_dir: args.temp_dir,
        ..LoadSpec::default()
    };
    let progress = LoadProgress::new(args.no_progress);
    match load_into_table(&table, &spec, &progress) {
        Ok(stats) => {
            writeln!(out, "{stats}").map_err(CliError::Output)?;
            Ok(Outcome::Clean)
        }
        Err(e) => {
            eprintln!("cellar: load failed: {e}");
            Ok(Outcome::Damaged)
        }
    }
}
