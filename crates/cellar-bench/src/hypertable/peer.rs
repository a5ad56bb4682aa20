//! A key-value peer's side of `cellar-bench hypertable` (lmdb, fjall, sqlite, rocksdb), run
//! as `cellar-bench hypertable --child '<PeerConfig as JSON>'`, one process per engine
//! (the protocol of [`crate::child`]: one record of an [`HtRecord`] per measurement).
//!
//! The same pieces are parsed into the same cells as Cellar's loader makes: one cell per
//! non-empty Query, ItemRank or ClickURL of a line, row key AnonID, every line its own
//! timestamp. A peer has one key space and no families, so a cell's key is Cellar's cell key
//! encoding (`cellar_table::cell_key::encode_cell_key`) with the family in the qualifier's
//! place: esc(row) esc(family) inverted timestamp, sorting by row, family, newest first, as
//! Hypertable's cells do; the value is the cell value. Loads go through `put_batch` of
//! [`BATCH_CELLS`] cells (not synced), four threads on pieces a–d at once, then e alone;
//! then an untimed flush and wait (reported as the settle), then one forward scan over
//! everything through `Engine::scan`, which must count every loaded cell.
//!
//! Not run for peers: the row lookups, `select *` through the shell and the buffered
//! `TableWriter` stream: they measure Cellar's table layer, shell and writer, which the
//! peers do not have.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cellar_table::cell_key::encode_cell_key;
use serde::{Deserialize, Serialize};

use super::{HtRecord, FAMILIES};
use crate::engine::{self, Direction, Engine, OpenConfig, Seek};
use crate::error::{BenchError, Result};
use crate::procfs;

/// Cells per `put_batch` call.
pub const BATCH_CELLS: usize = 1000;
const MIB: u64 = 1 << 20;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);

/// What the parent hands one peer's child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerConfig {
    pub engine: String,
    /// a.tsv … e.tsv.
    pub pieces: Vec<PathBuf>,
    /// The database directory (deleted before use).
    pub db_dir: PathBuf,
    pub lines: u64,
    pub keep_db: bool,
}

pub fn child_main(json: &str) -> Result<()> {
    let cfg: PeerConfig = serde_json::from_str(json)
        .map_err(|e| BenchError::Invalid(format!("--child config: {e}")))?;
    if cfg.pieces.len() != 5 {
        return Err(BenchError::Invalid(
            "--child config needs the 5 pieces".into(),
        ));
    }
    procfs::remove_dir(&cfg.db_dir)?;
    let engine = engine::open(
        &cfg.engine,
        &cfg.db_dir,
        &OpenConfig {
            block_cache_bytes: 256 * MIB,
            memtable_bytes: 64 * MIB,
            direct_reads: false,
            rocksdb_statistics: false,
            rocksdb_index_filter_in_cache: false,
            object_store: None,
        },
    )?;
    let r = measure(&cfg, engine.as_ref());
    let closed = engine.close();
    let records = r?;
    closed?;
    for r in &records {
        let progress = format!(
            "[{}] {}: {} cells in {:.3} s = {:.0}/s",
            r.engine, r.variant, r.cells, r.seconds, r.ops_per_sec
        );
        crate::child::emit_measurement("hypertable", &progress, r)?;
    }
    if !cfg.keep_db {
        procfs::remove_dir(&cfg.db_dir)?;
    }
    Ok(())
}

fn measure(cfg: &PeerConfig, engine: &dyn Engine) -> Result<Vec<HtRecord>> {
    let record = |variant: &str, cells: u64, secs: f64, note: String| HtRecord {
        engine: cfg.engine.clone(),
        workload: "hypertable".into(),
        variant: variant.to_string(),
        lines: cfg.lines,
        cells,
        seconds: secs,
        ops_per_sec: if cells == 0 {
            0.0
        } else {
            cells as f64 / secs.max(1e-9)
        },
        note,
        db_bytes: 0,
    };
    let mut out = Vec::new();
    eprintln!(
        "[{}] hypertable: 4 concurrent loads (a.tsv .. d.tsv)",
        cfg.engine
    );
    let (span, jobs) = crate::suite::run_threads(4, |t| load_piece(engine, &cfg.pieces[t]))?;
    let four: u64 = jobs.iter().map(|j| j.0).sum();
    let per_job: f64 = jobs.iter().map(|j| j.0 as f64 / j.1.max(1e-9)).sum();
    out.push(record(
        "load 4 concurrent (a-d)",
        four,
        span.as_secs_f64(),
        format!(
            "put_batch of {BATCH_CELLS} cells, not synced; sum of per-job rates {per_job:.0}/s"
        ),
    ));
    eprintln!("[{}] hypertable: load e.tsv alone", cfg.engine);
    let (e_cells, e_secs) = load_piece(engine, &cfg.pieces[4])?;
    out.push(record(
        "load 1 job (e)",
        e_cells,
        e_secs,
        format!("put_batch of {BATCH_CELLS} cells, not synced"),
    ));
    let started = Instant::now();
    engine.flush()?;
    engine.wait_for_background(SETTLE_TIMEOUT)?;
    out.push(record(
        "compaction after the loads (settle)",
        0,
        started.elapsed().as_secs_f64(),
        "flush + wait for background work; not counted in the load rates".into(),
    ));
    eprintln!(
        "[{}] hypertable: full scan through Engine::scan",
        cfg.engine
    );
    let loaded = four + e_cells;
    let started = Instant::now();
    let mut scanned = 0u64;
    let mut first = true;
    engine.scan(
        Direction::Forward,
        usize::MAX,
        &mut |_| std::mem::take(&mut first).then_some(Seek::First),
        &mut |_, _| scanned += 1,
    )?;
    let secs = started.elapsed().as_secs_f64();
    if scanned != loaded {
        return Err(BenchError::Verify {
            engine: engine.name(),
            workload: "hypertable",
            what: format!("the scan returned {scanned} cells, {loaded} were loaded"),
        });
    }
    out.push(record(
        "scan (library)",
        scanned,
        secs,
        format!("Engine::scan forward over every key; {loaded} cells loaded"),
    ));
    let db_bytes = procfs::dir_size(&cfg.db_dir)?;
    for r in &mut out {
        r.db_bytes = db_bytes;
    }
    Ok(out)
}

/// Where a piece's columns are, from its header line.
struct Columns {
    row: usize,
    /// (family, column index) for each family the header has.
    families: Vec<(&'static str, usize)>,
}

impl Columns {
    fn from_header(path: &Path, header: &str) -> Result<Columns> {
        let names: Vec<&str> = header.trim_end_matches(['\n', '\r']).split('\t').collect();
        let at = |name: &str| names.iter().position(|n| *n == name);
        let row = at("AnonID").ok_or_else(|| {
            BenchError::Invalid(format!(
                "{}: no AnonID column in the header",
                path.display()
            ))
        })?;
        let families = FAMILIES
            .iter()
            .filter_map(|f| at(f).map(|i| (*f, i)))
            .collect();
        Ok(Columns { row, families })
    }
}

/// Loads one piece; returns (cells, seconds).
fn load_piece(engine: &dyn Engine, path: &Path) -> Result<(u64, f64)> {
    let started = Instant::now();
    let f = std::fs::File::open(path).map_err(|e| BenchError::io(path, e))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut line = String::new();
    r.read_line(&mut line)
        .map_err(|e| BenchError::io(path, e))?;
    let cols = Columns::from_header(path, &line)?;
    // Keys and values of the batch back to back, with each cell's end offsets.
    let mut buf: Vec<u8> = Vec::with_capacity(BATCH_CELLS * 64);
    let mut ends: Vec<(usize, usize)> = Vec::with_capacity(BATCH_CELLS + 3);
    let mut cells = 0u64;
    loop {
        line.clear();
        if r.read_line(&mut line)
            .map_err(|e| BenchError::io(path, e))?
            == 0
        {
            break;
        }
        let text = line.trim_end_matches(['\n', '\r']);
        let row = text.split('\t').nth(cols.row).unwrap_or_default();
        if row.is_empty() {
            continue;
        }
        let ts = cellar_table::next_timestamp();
        for (i, value) in text.split('\t').enumerate() {
            let Some((family, _)) = cols.families.iter().find(|(_, at)| *at == i) else {
                continue;
            };
            if value.is_empty() {
                continue;
            }
            encode_cell_key(row.as_bytes(), family.as_bytes(), ts, &mut buf);
            let key_end = buf.len();
            buf.extend_from_slice(value.as_bytes());
            ends.push((key_end, buf.len()));
            cells += 1;
        }
        if ends.len() >= BATCH_CELLS {
            send(engine, &mut buf, &mut ends)?;
        }
    }
    if !ends.is_empty() {
        send(engine, &mut buf, &mut ends)?;
    }
    Ok((cells, started.elapsed().as_secs_f64()))
}

fn send(engine: &dyn Engine, buf: &mut Vec<u8>, ends: &mut Vec<(usize, usize)>) -> Result<()> {
    let entries = crate::engine::buffered_entries(buf, ends);
    engine.put_batch(&entries, false)?;
    buf.clear();
    ends.clear();
    Ok(())
}
