//! `cellar-bench import`: "Performance of HBase importing" (2009): rows of 6 integers
//! read from a flat file and written through each engine's ordinary write path (no bulk
//! ingest), one writer per slice of the file, reported in rows per millisecond.
//!
//! Input file (`<db-dir>/import-<records>-<seed>.bin`, written first by the parent): records
//! of 6 little-endian i64, 48 bytes each, no header, so writer `w` of `W` seeks straight to
//! its slice. Fields: `a` (0..2^31), `b` (0..100 000), `c` (0..1000) form the row key
//! `"{a}:{b}:{c}"` (the write-up's `"%s:%s:%s"` of three business-key integers, unique with
//! overwhelming probability); `d`, `e`, `f` are payload. The stored value is all six as
//! zigzag LEB128 varints (a compact binary struct, like the write-up's Thrift binary one).
//!
//! Variants, each into a fresh database, with 1, 2, 4 and 6 writers (`--writers`):
//! * `durable/wN` ("autoflush on"): every row is one `put(sync = true)`, durable before the
//!   next. Runs over the first `--sync-records` rows only (fsync-bound: thousands per
//!   second, not millions).
//! * `buffered/wN` ("autoflush off", 12 MiB write buffer): rows collect in a client buffer
//!   until their keys and values reach `--buffer-mb`, then go as one
//!   `put_batch(sync = false)`; the rest when the writer ends.
//!
//! HBase, the write-up's own system, runs the same variants when named in `--engines` (the Java
//! peer of `mapfile` in its import mode: hbase.rs).

mod hbase;

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::engine::{self, Engine, OpenConfig};
use crate::error::{BenchError, Result};
use crate::measure::{share, Latency};
use crate::procfs;
use crate::suite::{self, OpLatencies, SuiteRecord};

pub(crate) const RECORD_BYTES: usize = 48;
const QUICK_RECORDS: u64 = 20_000;
const QUICK_SYNC_RECORDS: u64 = 300;
const MIB: u64 = 1 << 20;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);
/// Rows read back (untimed) after each variant to check what was written.
const VERIFY_ROWS: u64 = 1000;

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Engines, comma-separated, or "all": cellar, rocksdb, lmdb, fjall, sqlite; and hbase (the
    /// Java peer, only when named; not part of "all"). Engines not compiled into this binary,
    /// or hbase when java or its jar is missing, are skipped, with a note.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub engines: String,

    /// Rows in the input file, all written by each buffered variant
    /// [default: 2000000, 20000 with --quick].
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,

    /// Rows written by each durable (one fsynced put per row) variant: the first N of the
    /// file [default: 20000, 300 with --quick; at most --records].
    #[arg(long, value_name = "N")]
    pub sync_records: Option<u64>,

    /// Parallel-writer counts, one variant each; writers take disjoint slices of the file.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,2,4,6"
    )]
    pub writers: Vec<usize>,

    /// Client write buffer of the buffered variants, in MiB of keys and values.
    #[arg(long, value_name = "M", default_value_t = 12)]
    pub buffer_mb: u64,

    /// Small run that finishes in seconds.
    #[arg(long)]
    pub quick: bool,

    /// Write the results here, one JSON object per line (engine × variant).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Directory of the input file and the databases (<DIR>/import-<engine>, deleted before
    /// use).
    #[arg(long, value_name = "DIR", default_value = "bench-data")]
    pub db_dir: PathBuf,

    /// Memtable (write buffer) size in MiB.
    #[arg(long, value_name = "M", default_value_t = 64)]
    pub memtable_mb: u64,

    /// Block cache in MiB (only the untimed read-back uses it).
    #[arg(long, value_name = "M", default_value_t = 64)]
    pub cache_mb: u64,

    /// Seed of the generated rows.
    #[arg(long, default_value_t = 2009)]
    pub seed: u64,

    /// Keep the last database of each engine after the run.
    #[arg(long)]
    pub keep_db: bool,

    /// The bench/java folder of the HBase peer [default: $CELLAR_BENCH_JAVA_DIR, else the
    /// source tree's]
    #[arg(long, value_name = "DIR")]
    pub java_dir: Option<PathBuf>,

    /// Maximum heap of the HBase peer (MiB)
    #[arg(long, value_name = "MB", default_value_t = 4096)]
    pub java_heap_mb: u64,

    /// Internal: run as the child process of one engine with this JSON config.
    #[arg(long, hide = true, value_name = "JSON")]
    pub child: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportConfig {
    pub engines: Vec<String>,
    pub input: PathBuf,
    pub records: u64,
    pub sync_records: u64,
    pub writers: Vec<usize>,
    pub buffer_bytes: u64,
    pub db_dir: PathBuf,
    pub memtable_bytes: u64,
    pub cache_bytes: u64,
    pub keep_db: bool,
    /// Run only the buffered variants (`cellar-bench server`'s embedded baseline).
    #[serde(default)]
    pub buffered_only: bool,
}

fn invalid(what: impl Into<String>) -> BenchError {
    BenchError::Invalid(what.into())
}

/// One input row: the key fields `a`, `b`, `c` and the payload `d`, `e`, `f`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row(pub [i64; 6]);

impl Row {
    fn random(rng: &mut StdRng, i: u64) -> Row {
        Row([
            rng.gen_range(0..1i64 << 31),
            rng.gen_range(0..100_000),
            rng.gen_range(0..1000),
            rng.gen_range(0..1_000_000),
            1_231_459_200 + i as i64, // seconds since the epoch, from the write-up's date
            rng.gen_range(-1_000_000_000..1_000_000_000),
        ])
    }

    fn to_le(self) -> [u8; RECORD_BYTES] {
        let mut out = [0; RECORD_BYTES];
        for (chunk, v) in out.chunks_exact_mut(8).zip(self.0) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    fn from_le(b: &[u8; RECORD_BYTES]) -> Row {
        let mut v = [0i64; 6];
        for (x, chunk) in v.iter_mut().zip(b.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(chunk);
            *x = i64::from_le_bytes(le);
        }
        Row(v)
    }

    /// `"{a}:{b}:{c}"`.
    pub fn key(&self, out: &mut Vec<u8>) {
        out.clear();
        let [a, b, c, ..] = self.0;
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{a}:{b}:{c}");
    }

    /// The six fields as zigzag LEB128 varints.
    pub fn value(&self, out: &mut Vec<u8>) {
        out.clear();
        for v in self.0 {
            let mut z = ((v << 1) ^ (v >> 63)) as u64;
            while z >= 0x80 {
                out.push((z as u8) | 0x80);
                z >>= 7;
            }
            out.push(z as u8);
        }
    }
}

/// Writes `records` rows to `path` (kept: reruns with the same size and seed reuse it).
pub(crate) fn write_input(path: &Path, records: u64, seed: u64) -> Result<()> {
    let want = records * RECORD_BYTES as u64;
    if std::fs::metadata(path).is_ok_and(|m| m.len() == want) {
        return Ok(());
    }
    let tmp = path.with_extension("tmp");
    let f = File::create(&tmp).map_err(|e| BenchError::io(&tmp, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let mut rng = StdRng::seed_from_u64(seed);
    for i in 0..records {
        w.write_all(&Row::random(&mut rng, i).to_le())
            .map_err(|e| BenchError::io(&tmp, e))?;
    }
    w.into_inner()
        .map_err(|e| BenchError::io(&tmp, e.into_error()))?
        .sync_all()
        .map_err(|e| BenchError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| BenchError::io(path, e))
}

/// Rows `first..first + n` of the input file, in order.
pub(crate) struct RowReader {
    r: BufReader<File>,
    left: u64,
}

impl RowReader {
    pub(crate) fn open(path: &Path, first: u64, n: u64) -> Result<RowReader> {
        let mut f = File::open(path).map_err(|e| BenchError::io(path, e))?;
        f.seek(SeekFrom::Start(first * RECORD_BYTES as u64))
            .map_err(|e| BenchError::io(path, e))?;
        Ok(RowReader {
            r: BufReader::with_capacity(1 << 20, f),
            left: n,
        })
    }

    pub(crate) fn next_row(&mut self) -> std::io::Result<Option<Row>> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut b = [0u8; RECORD_BYTES];
        self.r.read_exact(&mut b)?;
        self.left -= 1;
        Ok(Some(Row::from_le(&b)))
    }
}

impl ImportConfig {
    /// The config of the Rust engines, the skip notes, and whether hbase was asked for.
    fn resolve(a: &ImportArgs) -> Result<(ImportConfig, Vec<String>, bool)> {
        let (rust, want_hbase) = hbase::take_from_list(&a.engines);
        let (engines, skipped) = if want_hbase && rust.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            suite::select_engines(&rust)?
        };
        let records = a
            .records
            .unwrap_or(if a.quick { QUICK_RECORDS } else { 2_000_000 });
        let sync_records = a
            .sync_records
            .unwrap_or(if a.quick { QUICK_SYNC_RECORDS } else { 20_000 })
            .min(records);
        if records == 0 || sync_records == 0 {
            return Err(invalid("--records and --sync-records must be at least 1"));
        }
        if a.writers.is_empty() || a.writers.contains(&0) {
            return Err(invalid("--writers needs writer counts of at least 1"));
        }
        if a.buffer_mb == 0 || a.memtable_mb == 0 || a.cache_mb == 0 {
            return Err(invalid(
                "--buffer-mb, --memtable-mb and --cache-mb must be at least 1",
            ));
        }
        let cfg = ImportConfig {
            engines,
            input: a.db_dir.join(format!("import-{records}-{}.bin", a.seed)),
            records,
            sync_records,
            writers: a.writers.clone(),
            buffer_bytes: a.buffer_mb * MIB,
            db_dir: a.db_dir.clone(),
            memtable_bytes: a.memtable_mb * MIB,
            cache_bytes: a.cache_mb * MIB,
            keep_db: a.keep_db,
            buffered_only: false,
        };
        Ok((cfg, skipped, want_hbase))
    }
}

pub fn run(a: &ImportArgs) -> Result<()> {
    if let Some(json) = &a.child {
        let cfg: ImportConfig =
            serde_json::from_str(json).map_err(|e| invalid(format!("--child config: {e}")))?;
        return child_main(&cfg);
    }
    let (cfg, mut skipped, want_hbase) = ImportConfig::resolve(a)?;
    let java_dir = a
        .java_dir
        .clone()
        .unwrap_or_else(crate::java::default_java_dir);
    let run_hbase = want_hbase
        && match hbase::available(&java_dir) {
            Ok(()) => true,
            Err(why) => {
                skipped.push(format!("hbase: {why}"));
                false
            }
        };
    if cfg.engines.is_empty() && !run_hbase {
        return Err(invalid("--engines names no engine that can run here"));
    }
    suite::check_writable(a.json.as_deref())?;
    for why in &skipped {
        eprintln!("[import] skipped {why}");
    }
    std::fs::create_dir_all(&cfg.db_dir).map_err(|e| BenchError::io(&cfg.db_dir, e))?;
    let t0 = Instant::now();
    write_input(&cfg.input, cfg.records, a.seed)?;
    eprintln!(
        "[import] input {} ({} rows) ready in {:.1} s",
        cfg.input.display(),
        cfg.records,
        t0.elapsed().as_secs_f64()
    );
    let mut runs = suite::Runs::default();
    for engine in &cfg.engines {
        let one = ImportConfig {
            engines: vec![engine.clone()],
            ..cfg.clone()
        };
        runs.add(engine, suite::run_child("import", engine, &one));
    }
    let mut order = cfg.engines.clone();
    if run_hbase {
        runs.add(hbase::NAME, hbase::run(&cfg, &java_dir, a.java_heap_mb));
        order.push(hbase::NAME.to_string());
    }
    let suite::Runs { records, failure } = runs;
    if let Some(path) = &a.json {
        crate::record::write_json_lines(path, "import", &records)?;
    }
    print!("{}", suite::markdown(&records, &order, &skipped));
    println!(
        "\nLatency per write call: one row (durable) or one buffer of up to {} MiB \
         (buffered; hbase: one BufferedMutator.mutate call); ops/s and rows/ms count rows. durable: the first {} rows; buffered: all {}.",
        cfg.buffer_bytes / MIB,
        cfg.sync_records,
        cfg.records
    );
    failure.map_or(Ok(()), Err)
}

/// The buffered ("autoflush off") variants on Cellar only, in a child process as `run`
/// does, over an input file already written: `cellar-bench server`'s embedded baseline.
/// The records that arrived come back alongside any failure.
pub(crate) fn embedded_buffered(
    input: &Path,
    records: u64,
    writers: &[usize],
    db_dir: &Path,
    buffer_bytes: u64,
) -> (Vec<SuiteRecord>, Result<()>) {
    let cfg = ImportConfig {
        engines: vec!["cellar".to_string()],
        input: input.to_path_buf(),
        records,
        sync_records: 1,
        writers: writers.to_vec(),
        buffer_bytes,
        db_dir: db_dir.to_path_buf(),
        memtable_bytes: 64 * MIB,
        cache_bytes: 64 * MIB,
        keep_db: false,
        buffered_only: true,
    };
    suite::run_child("import", "cellar", &cfg)
}

fn child_main(cfg: &ImportConfig) -> Result<()> {
    let [engine_name] = cfg.engines.as_slice() else {
        return Err(invalid("--child config must name exactly one engine"));
    };
    let dir = cfg.db_dir.join(format!("import-{engine_name}"));
    let modes: &[bool] = if cfg.buffered_only {
        &[false]
    } else {
        &[true, false]
    };
    for &durable in modes {
        for &writers in &cfg.writers {
            procfs::remove_dir(&dir)?;
            let engine = engine::open(
                engine_name,
                &dir,
                &OpenConfig {
                    block_cache_bytes: cfg.cache_bytes,
                    memtable_bytes: cfg.memtable_bytes,
                    direct_reads: false,
                    rocksdb_statistics: false,
                    rocksdb_index_filter_in_cache: false,
                    object_store: None,
                },
            )?;
            let r = variant(cfg, engine.as_ref(), &dir, durable, writers);
            let closed = engine.close();
            suite::emit("import", &r?)?;
            closed?;
        }
    }
    if !cfg.keep_db {
        procfs::remove_dir(&dir)?;
    }
    Ok(())
}

/// One writer's work: rows `first..first + n`.
fn writer(
    cfg: &ImportConfig,
    engine: &dyn Engine,
    durable: bool,
    first: u64,
    n: u64,
) -> Result<Latency> {
    let mut rows = RowReader::open(&cfg.input, first, n)?;
    let mut lat = Latency::default();
    let io = |e| BenchError::io(&cfg.input, e);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    if durable {
        while let Some(row) = rows.next_row().map_err(io)? {
            row.key(&mut key);
            row.value(&mut value);
            let t0 = Instant::now();
            engine.put(&key, &value, true)?;
            lat.record(t0.elapsed());
        }
        return Ok(lat);
    }
    // The client buffer: keys and values back to back, with each row's end offsets.
    let mut buf: Vec<u8> = Vec::with_capacity(cfg.buffer_bytes as usize + 256);
    let mut ends: Vec<(usize, usize)> = Vec::new();
    let mut send = |buf: &mut Vec<u8>, ends: &mut Vec<(usize, usize)>| -> Result<()> {
        let entries = crate::engine::buffered_entries(buf, ends);
        let t0 = Instant::now();
        engine.put_batch(&entries, false)?;
        lat.record(t0.elapsed());
        buf.clear();
        ends.clear();
        Ok(())
    };
    while let Some(row) = rows.next_row().map_err(io)? {
        row.key(&mut key);
        row.value(&mut value);
        buf.extend_from_slice(&key);
        let key_end = buf.len();
        buf.extend_from_slice(&value);
        ends.push((key_end, buf.len()));
        if buf.len() as u64 >= cfg.buffer_bytes {
            send(&mut buf, &mut ends)?;
        }
    }
    if !ends.is_empty() {
        send(&mut buf, &mut ends)?;
    }
    Ok(lat)
}

fn variant(
    cfg: &ImportConfig,
    engine: &dyn Engine,
    dir: &Path,
    durable: bool,
    writers: usize,
) -> Result<SuiteRecord> {
    let rows = if durable {
        cfg.sync_records
    } else {
        cfg.records
    };
    procfs::reset_peak_rss();
    let (elapsed, lats) = suite::run_threads(writers, |w| {
        let first: u64 = (0..w).map(|u| share(rows, writers, u)).sum();
        writer(cfg, engine, durable, first, share(rows, writers, w))
    })?;
    let mut by_op = OpLatencies::default();
    let op = if durable { "put_sync" } else { "put_batch" };
    for l in &lats {
        by_op.0.entry(op).or_default().merge(l);
    }
    let total = by_op.total();
    let seconds = elapsed.as_secs_f64();
    let settle = Instant::now();
    engine.flush()?;
    engine.wait_for_background(SETTLE_TIMEOUT)?;
    let settle_seconds = settle.elapsed().as_secs_f64();
    let (key_bytes, value_bytes) = verify(cfg, engine, rows)?;
    let mode = if durable { "durable" } else { "buffered" };
    let mut notes = vec![format!("{} write calls", total.count())];
    if durable {
        notes.push("one put(sync=true) per row (autoflush on)".into());
    } else {
        notes.push(format!(
            "put_batch(sync=false) per {} MiB of keys+values (autoflush off)",
            cfg.buffer_bytes / MIB
        ));
    }
    Ok(SuiteRecord {
        engine: engine.name().to_string(),
        workload: "import".into(),
        variant: format!("{mode}/w{writers}"),
        threads: writers,
        records: rows,
        ops: rows,
        seconds,
        ops_per_sec: rows as f64 / seconds.max(1e-9),
        p50_us: total.quantile_us(0.50),
        p99_us: total.quantile_us(0.99),
        latency_unit: "write call".into(),
        op_latency: by_op.summary(),
        rows_per_ms: Some(rows as f64 / (seconds.max(1e-9) * 1000.0)),
        key_bytes,
        value_bytes,
        sync: durable,
        found: None,
        reads: None,
        db_bytes: procfs::dir_size(dir)?,
        peak_rss_bytes: procfs::peak_rss_bytes(),
        settle_seconds: Some(settle_seconds),
        notes,
    })
}

/// Reads back up to [`VERIFY_ROWS`] rows spread over the `rows` written (untimed);
/// returns their mean key and value sizes, rounded.
fn verify(cfg: &ImportConfig, engine: &dyn Engine, rows: u64) -> Result<(usize, usize)> {
    let step = (rows / VERIFY_ROWS).max(1);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let (mut checked, mut key_sum, mut value_sum) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < rows {
        let mut r = RowReader::open(&cfg.input, i, 1)?;
        let row = r
            .next_row()
            .map_err(|e| BenchError::io(&cfg.input, e))?
            .ok_or_else(|| invalid("input file shorter than --records"))?;
        row.key(&mut key);
        row.value(&mut value);
        if engine.get(&key)? != Some(value.len()) {
            return Err(BenchError::Verify {
                engine: engine.name(),
                workload: "import",
                what: format!(
                    "row {i} ({}) was not read back with its {} value bytes",
                    String::from_utf8_lossy(&key),
                    value.len()
                ),
            });
        }
        checked += 1;
        key_sum += key.len();
        value_sum += value.len();
        i += step;
    }
    let mean = |sum: usize| (sum + checked / 2) / checked.max(1);
    Ok((mean(key_sum), mean(value_sum)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_the_file_format() {
        let mut rng = StdRng::seed_from_u64(1);
        for i in 0..1000 {
            let r = Row::random(&mut rng, i);
            assert_eq!(Row::from_le(&r.to_le()), r);
        }
    }

    #[test]
    fn key_is_three_integers_and_value_six_varints() {
        let r = Row([123, 4, 56, 0, -1, 300]);
        let (mut k, mut v) = (Vec::new(), Vec::new());
        r.key(&mut k);
        assert_eq!(k, b"123:4:56");
        r.value(&mut v);
        // zigzag: 123→246 (2 bytes), 4→8, 56→112, 0→0, -1→1, 300→600 (2 bytes).
        assert_eq!(v, [0xf6, 0x01, 8, 112, 0, 1, 0xd8, 0x04]);
        Row([i64::MIN, i64::MAX, 0, 0, 0, 0]).value(&mut v);
        assert_eq!(v.len(), 10 + 10 + 4);
    }

    #[test]
    fn writers_read_disjoint_slices() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in.bin");
        write_input(&p, 100, 7).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 100 * 48);
        let all: Vec<Row> = {
            let mut r = RowReader::open(&p, 0, 100).unwrap();
            std::iter::from_fn(|| r.next_row().unwrap()).collect()
        };
        let mut joined = Vec::new();
        for w in 0..6 {
            let first: u64 = (0..w).map(|u| share(100, 6, u)).sum();
            let mut r = RowReader::open(&p, first, share(100, 6, w)).unwrap();
            joined.extend(std::iter::from_fn(|| r.next_row().unwrap()));
        }
        assert_eq!(joined, all);
        // The same size and seed reuse the file; the rows are those of the seed.
        write_input(&p, 100, 7).unwrap();
        let mut r = RowReader::open(&p, 0, 1).unwrap();
        assert_eq!(r.next_row().unwrap(), Some(all[0]));
    }
}
