//! Bulk load of flat files (TSV with a header line) into Cellar, without the WAL or the
//! memtable:
//!
//! ```text
//! input (plain or .gz) ─ 8 MiB chunks at line ends ─► parse in parallel (rayon)
//!    each line: row key column → row; every other non-empty field → one cell of the family
//!    its header names, encoded into the family's sort key by the caller's `encode_key`
//! ─► per family, an in-memory run (chunk arenas + 40-byte entries)
//!    memory budget reached → sort the runs (parallel) and spill them to temporary files
//! ─► end of input: sort the last runs; k-way merge of spilled + in-memory runs per family
//!    (families in parallel) → `IngestWriter` → SSTs
//! ─► one `Db::ingest` for every family: the whole load becomes visible at once, or nothing
//! ```
//! A malformed line aborts the load before anything is ingested (unless `skip_bad_lines`),
//! and temporary files are removed whatever happens.

mod error;
mod input;
mod merge;
mod parse;
mod run;
mod stats;
mod table;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cellar_engine::{Db, Keyspace};

pub use error::LoadError;
pub use stats::LoadStats;
pub use table::load_into_table;

/// Encodes one cell's sort key: (row, qualifier, timestamp) → bytes, appended to `out`.
pub type EncodeKey = fn(row: &[u8], qualifier: &[u8], timestamp: u64, out: &mut Vec<u8>);

/// Where the cells go: one keyspace per family, and how their keys are encoded.
pub struct LoadTarget {
    /// (family name as it appears in headers, its keyspace).
    pub families: Vec<(String, Keyspace)>,
    pub encode_key: EncodeKey,
    /// Reserves `n` consecutive timestamps and returns the first (for cells of lines with no
    /// timestamp column): one per line, increasing through the input.
    pub reserve_timestamps: Arc<dyn Fn(u64) -> u64 + Send + Sync>,
}

/// What to load and how.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub files: Vec<PathBuf>,
    /// The column that gives the row key (default: the first column).
    pub row_key_column: Option<String>,
    /// A column of timestamps (`YYYY-MM-DD HH:MM:SS[.frac]` UTC or integer nanoseconds);
    /// otherwise every line gets a fresh, increasing timestamp.
    pub timestamp_column: Option<String>,
    /// A file whose first line is the header; the input files then have none.
    pub header_file: Option<PathBuf>,
    /// Columns naming no family are skipped instead of failing the load.
    pub ignore_unknown_columns: bool,
    /// Malformed lines are counted and skipped instead of aborting the load.
    pub skip_bad_lines: bool,
    /// Parsed cells held in memory before sorted runs are spilled to disk.
    pub memory_budget_bytes: usize,
    /// Where spilled runs go (default: the system's temporary directory).
    pub temp_dir: Option<PathBuf>,
    /// Input is cut into chunks of about this many bytes, parsed in parallel.
    pub chunk_bytes: usize,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            files: Vec::new(),
            row_key_column: None,
            timestamp_column: None,
            header_file: None,
            ignore_unknown_columns: false,
            skip_bad_lines: false,
            memory_budget_bytes: 1 << 30,
            temp_dir: None,
            chunk_bytes: input::CHUNK_BYTES,
        }
    }
}

/// A snapshot of a running load, for progress displays.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub phase: Phase,
    /// Compressed bytes for `.gz` inputs.
    pub input_bytes_read: u64,
    pub input_bytes_total: u64,
    pub lines: u64,
    pub cells: u64,
    /// Cells written to SSTs so far (merge phase).
    pub cells_written: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Phase {
    #[default]
    Parsing,
    Writing,
    Ingesting,
    Done,
}

/// Receives progress (called from the loading thread, at most every chunk batch).
pub trait ProgressSink: Sync {
    fn update(&self, p: &Progress);
}

/// Ignores progress.
pub struct NoProgress;
impl ProgressSink for NoProgress {
    fn update(&self, _: &Progress) {}
}

/// Loads `spec.files` into `target` atomically; see the crate docs.
pub fn load(
    db: &Db,
    target: &LoadTarget,
    spec: &LoadSpec,
    progress: &dyn ProgressSink,
) -> Result<LoadStats, LoadError> {
    let started = Instant::now();
    if target.families.is_empty() {
        return Err(LoadError::InvalidArgument(
            "the table has no column families to load into".into(),
        ));
    }
    if spec.files.is_empty() {
        return Err(LoadError::InvalidArgument("no input files given".into()));
    }
    let spill_dir = match &spec.temp_dir {
        Some(d) => tempfile::Builder::new()
            .prefix("cellar-load-")
            .tempdir_in(d),
        None => tempfile::Builder::new().prefix("cellar-load-").tempdir(),
    }
    .map_err(|e| LoadError::io("creating the spill directory", e))?;

    let mut stats = LoadStats::default();
    let mut prog = Progress {
        input_bytes_total: input::total_size(&spec.files),
        ..Progress::default()
    };
    let header_override = match &spec.header_file {
        Some(h) => Some(input::read_header_file(h)?),
        None => None,
    };
    let mut runs = run::RunSet::new(target.families.len(), spill_dir.path().to_path_buf());
    for file in &spec.files {
        let mut reader =
            input::ChunkReader::open(file, header_override.is_none(), spec.chunk_bytes.max(1))?;
        let header = match &header_override {
            Some(h) => h.clone(),
            None => reader.header()?,
        };
        let layout = parse::Layout::new(&header, target, spec, file)?;
        parse::parse_file(
            &mut reader,
            &layout,
            target,
            spec,
            &mut runs,
            &mut stats,
            &mut prog,
            progress,
        )?;
    }
    prog.phase = Phase::Writing;
    progress.update(&prog);
    let sets = merge::write_families(db, target, runs, &mut stats, &mut prog, progress)?;
    prog.phase = Phase::Ingesting;
    progress.update(&prog);
    db.ingest(sets)?;
    stats.elapsed = started.elapsed();
    prog.phase = Phase::Done;
    progress.update(&prog);
    Ok(stats)
}
