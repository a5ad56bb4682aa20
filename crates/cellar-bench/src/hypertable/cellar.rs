//! Cellar's side of `cellar-bench hypertable` (in the parent process, as before the peers
//! came): the table `"query-log"` (Query, ItemRank, ClickURL), four `cellar_load::load_into_table` jobs
//! over pieces a–d at once, then e alone, the compaction they leave (settle), a full scan
//! through the library, random row lookups, `select *` through `cellar shell` to /dev/null,
//! and cells streamed through the WAL by a `TableWriter` with a 12 MiB client buffer.
//! Hypertable keeps every version by default, so the families here keep them too
//! (MAX_VERSIONS 0): the scan returns every inserted cell, as Hypertable's did.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use cellar_engine::{Durability, Options};
use cellar_load::{load_into_table, LoadSpec, LoadStats, NoProgress};
use cellar_table::{CellStore, FamilyOptions, ScanSpec, Table, TableSchema, WriterOptions};

use super::{HtRecord, HypertableArgs, FAMILIES};
use crate::error::{BenchError, Result};

const TABLE: &str = "query-log";
const STREAM_TABLE: &str = "query-log-stream";
const LOOKUPS: usize = 10_000;

struct Measure {
    variant: &'static str,
    /// 0 for a measurement of time only (no rate).
    cells: u64,
    secs: f64,
    note: String,
}

impl Measure {
    fn rate(&self) -> f64 {
        self.cells as f64 / self.secs.max(1e-9)
    }
}

fn tbl(e: impl std::fmt::Display) -> BenchError {
    BenchError::Invalid(format!("table layer: {e}"))
}

/// Streams `text` (TSV lines) into the stream table through one buffered `TableWriter`.
/// The table and the writer each hold a database handle; they end with this function.
fn stream_insert(store: &CellStore, text: &[u8]) -> Result<Measure> {
    let stream = store.table(STREAM_TABLE).map_err(tbl)?;
    let started = Instant::now();
    let mut w = stream.writer(WriterOptions {
        durability: Durability::Flush,
        ..WriterOptions::default()
    });
    let mut cells = 0u64;
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut f = line.split(|b| *b == b'\t');
        let row = f.next().unwrap_or_default();
        for (family, value) in FAMILIES.iter().zip(f) {
            if !value.is_empty() {
                w.put(row, family, b"", None, value).map_err(tbl)?;
                cells += 1;
            }
        }
    }
    w.flush().map_err(tbl)?;
    Ok(Measure {
        variant: "INSERT stream, 12 MiB buffer, Flush",
        cells,
        secs: started.elapsed().as_secs_f64(),
        note: "TableWriter through WAL + memtable".into(),
    })
}

/// Runs every Cellar measurement on the pieces a–e; returns them in the order measured.
pub fn run(
    args: &HypertableArgs,
    pieces: &[PathBuf],
    lines: u64,
    stream_lines: u64,
) -> Result<Vec<HtRecord>> {
    let db_dir = args.dir.join("db");
    if db_dir.exists() {
        std::fs::remove_dir_all(&db_dir).map_err(|e| BenchError::io(&db_dir, e))?;
    }
    let store = CellStore::open(&db_dir, Options::default()).map_err(tbl)?;
    let mut schema = TableSchema::new(TABLE);
    for f in FAMILIES {
        schema = schema.family(
            f,
            FamilyOptions {
                max_versions: 0,
                ..FamilyOptions::default()
            },
        );
    }
    store.create_table(schema).map_err(tbl)?;
    let table = store.table(TABLE).map_err(tbl)?;
    let mut results = Vec::new();
    let (four, all) = concurrent_loads(&table, pieces)?;
    results.push(four);
    eprintln!("hypertable: load e.tsv alone");
    let e = load_into_table(&table, &load_spec(&pieces[4]), &NoProgress).map_err(tbl)?;
    println!("--- e.tsv alone ---\n{e}");
    results.push(Measure {
        variant: "load 1 job (e)",
        cells: e.cells,
        secs: e.elapsed.as_secs_f64(),
        note: String::new(),
    });
    let loaded = all.cells + e.cells;
    let scanned = settle_and_scan(&store, &table, args, loaded, &mut results)?;
    results.push(row_lookups(&table, &pieces[0], lines, args.seed)?);
    let disk = dir_bytes(&db_dir);
    drop(table);
    store.db().clone().close().map_err(tbl)?;
    drop(store);

    results.extend(shell_scan(args, &db_dir, scanned)?);
    results.push(stream_phase(&db_dir, &pieces[4], stream_lines)?);

    if !args.keep_db {
        std::fs::remove_dir_all(&db_dir).map_err(|e| BenchError::io(&db_dir, e))?;
    }
    Ok(results
        .into_iter()
        .map(|m| HtRecord {
            engine: "cellar".into(),
            workload: "hypertable".into(),
            variant: m.variant.to_string(),
            lines,
            cells: m.cells,
            seconds: m.secs,
            ops_per_sec: m.rate(),
            note: m.note,
            db_bytes: disk,
        })
        .collect())
}

/// The load spec of one piece: rows keyed by `AnonID`.
fn load_spec(file: &Path) -> LoadSpec {
    LoadSpec {
        files: vec![file.to_path_buf()],
        row_key_column: Some("AnonID".into()),
        ..LoadSpec::default()
    }
}

/// Four concurrent `LOAD DATA INFILE` jobs over pieces a–d; the measure and their summed stats.
fn concurrent_loads(table: &Table, pieces: &[PathBuf]) -> Result<(Measure, LoadStats)> {
    // Four concurrent LOAD DATA INFILE jobs, as on Hypertable's two client machines.
    eprintln!("hypertable: 4 concurrent loads (a.tsv .. d.tsv)");
    let started = Instant::now();
    let jobs: Vec<std::result::Result<LoadStats, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = pieces[..4]
            .iter()
            .map(|p| {
                let table = table.clone();
                let spec = load_spec(p);
                s.spawn(move || {
                    load_into_table(&table, &spec, &NoProgress).map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("load thread panicked".into()))
            })
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let mut all = LoadStats::default();
    for (i, j) in jobs.iter().enumerate() {
        let st = j.as_ref().map_err(|e| BenchError::Invalid(e.clone()))?;
        println!(
            "--- job {} ({}.tsv) ---\n{st}",
            i + 1,
            (b'a' + i as u8) as char
        );
        all.merge(st);
    }
    let per_job: f64 = jobs.iter().flatten().map(|s| s.inserts_per_sec()).sum();
    let four = Measure {
        variant: "load 4 concurrent (a-d)",
        cells: all.cells,
        secs: wall,
        note: format!(
            "sum of per-job rates {:.0}/s; avg key {:.2} B, avg value {:.2} B",
            per_job,
            all.avg_key_bytes(),
            all.avg_value_bytes()
        ),
    };
    Ok((four, all))
}

/// The settle after the loads, then the library scan (and, with `--compacted-scan`, a
/// full compaction and a second scan); returns the cells scanned.
fn settle_and_scan(
    store: &CellStore,
    table: &Table,
    args: &HypertableArgs,
    loaded: u64,
    results: &mut Vec<Measure>,
) -> Result<u64> {
    // The loads leave one sorted run per load; background compaction merges them. Wait for
    // it (and report how long it took) so that the scans below measure reading, not reading
    // against a compaction for the two cores.
    eprintln!("hypertable: waiting for background compaction");
    let started = Instant::now();
    store.db().wait_for_background_work().map_err(tbl)?;
    results.push(Measure {
        variant: "compaction after the loads (settle)",
        cells: 0,
        secs: started.elapsed().as_secs_f64(),
        note: "background merging of the stacked load runs; not counted in the load rates".into(),
    });

    eprintln!("hypertable: full scan through the library");
    let started = Instant::now();
    let mut scanned = 0u64;
    let mut scanner = table.scan(ScanSpec::default()).map_err(tbl)?;
    while let Some(cell) = scanner.next_ref() {
        cell.map_err(tbl)?;
        scanned += 1;
    }
    results.push(Measure {
        variant: "scan (library)",
        cells: scanned,
        secs: started.elapsed().as_secs_f64(),
        note: format!("{loaded} cells loaded"),
    });
    if args.compacted_scan {
        eprintln!("hypertable: compacting, then scanning again");
        let started = Instant::now();
        for f in FAMILIES {
            let ks = store
                .db()
                .keyspace(&cellar_table::schema::family_keyspace_name(TABLE, f))
                .map_err(tbl)?;
            store.db().compact_range(&ks, None, None).map_err(tbl)?;
        }
        let compact_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let mut n = 0u64;
        let mut scanner = table.scan(ScanSpec::default()).map_err(tbl)?;
        while let Some(cell) = scanner.next_ref() {
            cell.map_err(tbl)?;
            n += 1;
        }
        results.push(Measure {
            variant: "scan (library) after full compaction",
            cells: n,
            secs: started.elapsed().as_secs_f64(),
            note: format!("compaction took {compact_secs:.1} s"),
        });
    }
    Ok(scanned)
}

/// Random row lookups over rows of `piece`.
fn row_lookups(table: &Table, piece: &Path, lines: u64, seed: u64) -> Result<Measure> {
    // Random row lookups: rows of every 97th line of a.tsv, in random order.
    let sample = read_lines(piece, lines / 5)?;
    let mut rows: Vec<&[u8]> = sample
        .split(|b| *b == b'\n')
        .step_by(97)
        .filter_map(|l| l.split(|b| *b == b'\t').next())
        .filter(|r| !r.is_empty())
        .take(LOOKUPS)
        .collect();
    shuffle(&mut rows, seed);
    let started = Instant::now();
    let mut found = 0u64;
    for row in &rows {
        found += table.get_row(row).map_err(tbl)?.len() as u64;
    }
    let secs = started.elapsed().as_secs_f64();
    Ok(Measure {
        variant: "row lookups (SELECT WHERE ROW = k)",
        cells: rows.len() as u64,
        secs,
        note: format!(
            "rows/s; {:.1} cells per row; {:.1} µs per row",
            found as f64 / rows.len().max(1) as f64,
            secs * 1e6 / rows.len().max(1) as f64
        ),
    })
}

/// `select *` through `cellar shell --batch` to /dev/null, when the binary is there.
fn shell_scan(args: &HypertableArgs, db_dir: &Path, scanned: u64) -> Result<Option<Measure>> {
    let bin = match &args.cellar_bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()
            .map_err(|e| BenchError::io("current_exe", e))?
            .with_file_name("cellar"),
    };
    if bin.exists() {
        eprintln!("hypertable: select * through `cellar shell --batch` > /dev/null");
        let started = Instant::now();
        let mut child = Command::new(&bin)
            .args(["shell", "--batch", "--db"])
            .arg(db_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| BenchError::io(&bin, e))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(b"select * from \"query-log\";\nquit;\n")
                .map_err(|e| BenchError::io(&bin, e))?;
        }
        let status = child.wait().map_err(|e| BenchError::io(&bin, e))?;
        if !status.success() {
            return Err(BenchError::Invalid(format!(
                "cellar shell failed: {status}"
            )));
        }
        return Ok(Some(Measure {
            variant: "select * via cellar shell > /dev/null",
            cells: scanned,
            secs: started.elapsed().as_secs_f64(),
            note: "process start and database open included".into(),
        }));
    } else {
        eprintln!(
            "hypertable: skipping the shell scan: no `cellar` binary at {} (build it, or pass --cellar-bin)",
            bin.display()
        );
    }
    Ok(None)
}

/// Cells of `piece` streamed through a `TableWriter` into a table of their own.
fn stream_phase(db_dir: &Path, piece: &Path, stream_lines: u64) -> Result<Measure> {
    eprintln!("hypertable: streaming {stream_lines} lines through the WAL (12 MiB client buffer)");
    let store = CellStore::open(db_dir, Options::default()).map_err(tbl)?;
    let mut schema = TableSchema::new(STREAM_TABLE);
    for f in FAMILIES {
        schema = schema.family(f, FamilyOptions::default());
    }
    store.create_table(schema).map_err(tbl)?;
    let text = read_lines(piece, stream_lines)?;
    let m = stream_insert(&store, &text)?;
    // `close` stops the background threads only when it closes the last handle, or a
    // compaction still running writes into the directory removed below ("Directory not
    // empty" on the README's 2M-line run, once because the store was still open, once
    // because the stream's writer was): the table and its writer lived in `stream_insert`,
    // so the store holds the last handle.
    let db = store.db().clone();
    drop(store);
    db.close().map_err(tbl)?;
    Ok(m)
}

/// The first `n` data lines of a piece (header skipped).
fn read_lines(path: &Path, n: u64) -> Result<Vec<u8>> {
    let f = std::fs::File::open(path).map_err(|e| BenchError::io(path, e))?;
    let mut r = std::io::BufReader::new(f);
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut taken = 0;
    let mut first = true;
    while taken < n {
        line.clear();
        if r.read_until(b'\n', &mut line)
            .map_err(|e| BenchError::io(path, e))?
            == 0
        {
            break;
        }
        if std::mem::take(&mut first) {
            continue;
        }
        out.extend_from_slice(&line);
        taken += 1;
    }
    Ok(out)
}

/// Fisher–Yates with a small xorshift: deterministic for a seed.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
