//! A Rust engine's side of `cellar-bench elliptics` (`cellar-bench elliptics --child
//! '<Spec>'`): load, settle, then every read phase from a cold start, each result sent to
//! the parent as one [`Line`] (crate::child's protocol) as soon as it is measured.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::data::{self, Stream};
use super::line::{size_note, Line};
use super::openloop::{self, Criterion, Plan, RateSearch, Slow, Step};
use super::{Spec, WORKLOAD};
use crate::engine::{self, Direction, Engine, OpenConfig, Seek};
use crate::engines;
use crate::error::{BenchError, Result};
use crate::measure::Latency;
use crate::procfs;

/// Records per put_batch: the write-up's HBase batch upload packed 5000 objects per block.
const LOAD_BATCH: usize = 5000;
const MEMTABLE_BYTES: u64 = 64 << 20;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(4 * 3600);
const MIB: u64 = 1 << 20;

fn open(spec: &Spec, dir: &Path) -> Result<Box<dyn Engine>> {
    engine::open(
        &spec.engine,
        dir,
        &OpenConfig {
            block_cache_bytes: spec.cache_mb * MIB,
            memtable_bytes: MEMTABLE_BYTES,
            direct_reads: false,
            rocksdb_statistics: false,
            // Index and filters in table readers, as Cellar keeps them: both then report
            // them as resident memory.
            rocksdb_index_filter_in_cache: false,
            object_store: None,
        },
    )
}

fn emit(line: &Line) -> Result<()> {
    crate::child::emit_measurement(WORKLOAD, &line.progress(), line)
}

/// Closes `engine` after `f`, whatever `f` returned.
fn with_engine<T>(engine: Box<dyn Engine>, f: impl FnOnce(&dyn Engine) -> Result<T>) -> Result<T> {
    let r = f(engine.as_ref());
    let closed = engine.close();
    let v = r?;
    closed?;
    Ok(v)
}

/// A cold start: the page cache dropped (when permitted) and the engine opened anew, so its
/// block cache is empty.
fn cold<T>(spec: &Spec, dir: &Path, f: impl FnOnce(&dyn Engine) -> Result<T>) -> Result<T> {
    if spec.drop_caches {
        procfs::drop_page_cache().map_err(|e| BenchError::io("/proc/sys/vm/drop_caches", e))?;
    }
    procfs::reset_peak_rss();
    with_engine(open(spec, dir)?, f)
}

fn resident_note(engine: &str) -> Option<&'static str> {
    match engine {
        "lmdb" => Some("lmdb: no index apart from the B+tree pages in its mmap (resident: null)"),
        "rocksdb" => {
            Some("rocksdb: index and filter blocks in table readers (estimate-table-readers-mem)")
        }
        _ => None,
    }
}

pub fn run(spec: &Spec) -> Result<()> {
    engines::check_available(&spec.engine)?;
    let dir = spec.dir.join(&spec.engine);
    procfs::remove_dir(&dir)?;
    std::fs::create_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;

    let (load_line, db_bytes) = load(spec, &dir)?;
    emit(&load_line)?;
    let sizes = |l: &mut Line, resident: Option<u64>| {
        l.db_bytes = Some(db_bytes);
        l.raw_bytes = Some(spec.raw_bytes());
        l.resident_index_filter_bytes = resident;
        l.note = size_note(Some(db_bytes), Some(spec.raw_bytes()), resident);
        if let Some(n) = resident_note(&spec.engine) {
            l.notes.push(n.into());
        }
        l.peak_rss_bytes = procfs::peak_rss_bytes();
    };

    let (mut fixed, resident) = fixed_rate(spec, &dir)?;
    sizes(&mut fixed, resident);
    emit(&fixed)?;

    for mut l in max_rate(spec, &dir)? {
        sizes(&mut l, resident);
        emit(&l)?;
    }
    for (limit, stream) in [(10, Stream::Range10), (100, Stream::Range100)] {
        let mut l = range(spec, &dir, limit, stream)?;
        sizes(&mut l, resident);
        emit(&l)?;
    }
    if !spec.keep_data {
        procfs::remove_dir(&dir)?;
    }
    Ok(())
}

/// All records in key order, LOAD_BATCH per put_batch, not synced (timed); then flush and
/// wait for background work (untimed, `settle_seconds`); closed; then the size on disk.
fn load(spec: &Spec, dir: &Path) -> Result<(Line, u64)> {
    let mut line = Line::new(&spec.engine, "load", spec);
    line.latency_unit = "batch".into();
    procfs::reset_peak_rss();
    with_engine(open(spec, dir)?, |e| {
        let mut lat = Latency::default();
        let mut keys = vec![Vec::new(); LOAD_BATCH];
        let mut values = vec![Vec::new(); LOAD_BATCH];
        let start = Instant::now();
        let mut next = 0u64;
        while next < spec.records {
            let n = (spec.records - next).min(LOAD_BATCH as u64) as usize;
            for j in 0..n {
                data::key(next + j as u64, &mut keys[j]);
                data::value(next + j as u64, spec.value_size, &mut values[j]);
            }
            let entries: Vec<(&[u8], &[u8])> = keys[..n]
                .iter()
                .zip(&values[..n])
                .map(|(k, v)| (k.as_slice(), v.as_slice()))
                .collect();
            let t0 = Instant::now();
            e.put_batch(&entries, false)?;
            lat.record(t0.elapsed());
            next += n as u64;
        }
        line.seconds = start.elapsed().as_secs_f64();
        line.ops = spec.records;
        let s0 = Instant::now();
        e.flush()?;
        e.wait_for_background(SETTLE_TIMEOUT)?;
        line.settle_seconds = Some(s0.elapsed().as_secs_f64());
        line.finish(&lat);
        Ok(())
    })?;
    let db_bytes = procfs::dir_size(dir)?;
    line.db_bytes = Some(db_bytes);
    line.raw_bytes = Some(spec.raw_bytes());
    line.note = size_note(Some(db_bytes), Some(spec.raw_bytes()), None);
    line.peak_rss_bytes = procfs::peak_rss_bytes();
    line.notes.push(format!(
        "put_batch of {LOAD_BATCH} records in key order, not synced; settle = flush + \
         background work (untimed); db_bytes after close"
    ));
    Ok((line, db_bytes))
}

/// One get of read `j` of `stream`; checks the value's length. `Ok(true)`: found.
fn read(e: &dyn Engine, spec: &Spec, stream: Stream, j: u64) -> Result<bool> {
    let index = data::read_index(spec.seed, stream, spec.records, j);
    let mut key = Vec::with_capacity(data::KEY_BYTES);
    data::key(index, &mut key);
    match e.get(&key)? {
        Some(len) if len == spec.value_size => Ok(true),
        Some(len) => Err(BenchError::Verify {
            engine: e.name(),
            workload: WORKLOAD,
            what: format!(
                "record {index} has a value of {len} bytes, expected {}",
                spec.value_size
            ),
        }),
        None => Ok(false),
    }
}

fn plan(spec: &Spec, rps: u64, seconds: f64) -> Plan {
    let duration = Duration::from_secs_f64(seconds);
    Plan {
        rps: rps as f64,
        duration,
        threads: spec.threads,
        // As long again as the run itself (at least a second) for the queue to drain.
        grace: duration.max(Duration::from_secs(1)),
    }
}

fn open_loop_note(spec: &Spec) -> String {
    format!(
        "open loop, {} reader threads; latency from each request's due time; requests not \
         served {} s after the last was due count as unserved",
        spec.threads,
        plan(spec, spec.rps, spec.step_seconds).grace.as_secs_f64()
    )
}

/// `spec.rps` gets per second for `spec.seconds`, cold; also the resident index memory.
fn fixed_rate(spec: &Spec, dir: &Path) -> Result<(Line, Option<u64>)> {
    let mut line = Line::new(&spec.engine, spec.variant_fixed(), spec);
    line.cache_mode = Some(spec.cache_mode().into());
    let p = plan(spec, spec.rps, spec.seconds);
    let (out, stats) = cold(spec, dir, |e| {
        let out = openloop::run(&p, |j| read(e, spec, Stream::Fixed, j))?;
        Ok((out, e.stats()))
    })?;
    line.open_loop(spec.rps as f64, &out);
    line.notes.push(open_loop_note(spec));
    let slowest: Vec<String> = out.slowest.iter().map(Slow::describe).collect();
    line.notes
        .push(format!("slowest requests: {}", slowest.join("; ")));
    if let (Some(files), Some(bytes)) = (stats.warm_ups, stats.warm_up_bytes) {
        line.notes.push(format!(
            "cold-start warm-up during the phase: {files} files warmed, {:.0} MB read",
            bytes as f64 / 1e6
        ));
    }
    let resident = stats.resident_index_filter_bytes;
    Ok((line, resident))
}

/// The two searches (p50 and p99 bounds); a rate measured for one is reused by the other.
fn max_rate(spec: &Spec, dir: &Path) -> Result<Vec<Line>> {
    let criteria = [
        (
            spec.variant_max_p50(),
            Criterion {
                quantile: 0.5,
                limit_us: spec.latency_ms * 1000.0,
            },
        ),
        (
            spec.variant_max_p99(),
            Criterion {
                quantile: 0.99,
                limit_us: spec.p99_latency_ms * 1000.0,
            },
        ),
    ];
    let mut measured: BTreeMap<u64, Step> = BTreeMap::new();
    let mut lines = Vec::new();
    for (variant, criterion) in criteria {
        let mut search = RateSearch::new(spec.rps, spec.max_rps, spec.max_steps);
        let mut steps = Vec::new();
        while let Some(rps) = search.next() {
            let step = match measured.get(&rps) {
                Some(s) => s.clone(),
                None => {
                    let stream = Stream::RateStep(measured.len() as u64);
                    let p = plan(spec, rps, spec.step_seconds);
                    let (out, warmed) = cold(spec, dir, |e| {
                        let out = openloop::run(&p, |j| read(e, spec, stream, j))?;
                        Ok((out, e.stats().warm_up_bytes))
                    })?;
                    let mut s = Step::from_outcome(rps, &out);
                    s.warm_up_bytes = warmed;
                    let warm_note = warmed
                        .map(|b| format!(", warm-up {:.0} MB", b as f64 / 1e6))
                        .unwrap_or_default();
                    eprintln!(
                        "[{}] step {rps}/s: achieved {:.0}/s, p50 {:.0} µs, p99 {:.0} µs, {} unserved{warm_note}",
                        spec.engine, s.achieved_rps, s.p50_us, s.p99_us, s.unserved
                    );
                    measured.insert(rps, s.clone());
                    s
                }
            };
            search.record(rps, criterion.passes(&step), openloop::overloaded(&step));
            steps.push(step);
        }
        let mut line = Line::new(&spec.engine, variant, spec);
        line.cache_mode = Some(spec.cache_mode().into());
        if let Some(best) = search.result() {
            if let Some(s) = steps.iter().find(|s| s.target_rps == best) {
                line.ops = s.completed;
                line.seconds = spec.step_seconds;
                line.p50_us = s.p50_us;
                line.p90_us = s.p90_us;
                line.p99_us = s.p99_us;
                line.max_us = s.max_us;
                line.unserved = Some(s.unserved);
            }
            line.ops_per_sec = best as f64;
            line.target_rps = Some(best as f64);
        } else {
            line.notes
                .push(format!("no rate from {} up met the bound", spec.rps));
        }
        if search.capped() {
            line.notes.push(format!(
                "the search stopped at --max-rps {}: the engine may go faster",
                spec.max_rps
            ));
        }
        line.notes.push(format!(
            "each step {} s from a cold start; doubling from {}/s until overloaded or at the cap, \
             then bisection to within 10%",
            spec.step_seconds, spec.rps
        ));
        line.notes.push(open_loop_note(spec));
        line.steps = Some(steps);
        lines.push(line);
    }
    Ok(lines)
}

/// What one range thread saw.
#[derive(Default)]
struct RangeOut {
    seeks: u64,
    found: u64,
    rows: u64,
    latency: Latency,
}

/// Seeks to a random record and reads `limit` rows forward, closed loop with
/// `spec.scan_threads` threads for `spec.step_seconds`, cold. Checks that each seek lands on
/// its key and reads `min(limit, records - index)` rows.
fn range(spec: &Spec, dir: &Path, limit: usize, stream: Stream) -> Result<Line> {
    let mut line = Line::new(&spec.engine, format!("range seek+{limit}"), spec);
    line.latency_unit = "seek".into();
    line.cache_mode = Some(spec.cache_mode().into());
    let duration = Duration::from_secs_f64(spec.step_seconds);
    let ((out, read), seconds) = cold(spec, dir, |e| {
        let next = AtomicU64::new(0);
        let total = Mutex::new(RangeOut::default());
        let io_before = procfs::io_counters();
        let start = Instant::now();
        let deadline = start + duration;
        std::thread::scope(|s| -> Result<()> {
            let handles: Vec<_> = (0..spec.scan_threads)
                .map(|_| s.spawn(|| range_thread(e, spec, stream, limit, &next, deadline, &total)))
                .collect();
            for h in handles {
                h.join().map_err(|_| BenchError::Engine {
                    engine: e.name(),
                    op: "scan",
                    msg: "a range thread panicked".into(),
                })??;
            }
            Ok(())
        })?;
        let seconds = start.elapsed().as_secs_f64();
        let read = io_before
            .zip(procfs::io_counters())
            .map(|(a, b)| b.read_bytes.saturating_sub(a.read_bytes));
        let out = total.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok(((out, read), seconds))
    })?;
    line.io_read_bytes_per_op = read.map(|b| b as f64 / out.seeks.max(1) as f64);
    line.ops = out.seeks;
    line.seconds = seconds;
    line.found = Some(out.found);
    line.rows = Some(out.rows);
    line.finish(&out.latency);
    line.notes.push(format!(
        "closed loop, {} threads, each one iterator: seek to a random record, read {limit} rows \
         forward; latency per seek and its rows",
        spec.scan_threads
    ));
    if let Some(b) = line.io_read_bytes_per_op {
        line.notes.push(format!(
            "{:.1} KiB read from the device per seek (/proc/self/io)",
            b / 1024.0
        ));
    }
    Ok(line)
}

fn range_thread(
    e: &dyn Engine,
    spec: &Spec,
    stream: Stream,
    limit: usize,
    next: &AtomicU64,
    deadline: Instant,
    total: &Mutex<RangeOut>,
) -> Result<()> {
    let mut out = RangeOut::default();
    // Shared by the two callbacks of scan(): the seek in progress.
    let target = std::cell::RefCell::new(Vec::new());
    let index = Cell::new(0u64);
    let rows_now = Cell::new(0u64);
    let first = Cell::new(false);
    let landed = Cell::new(0u64);
    let mut bad = None;
    let mut t_seek: Option<Instant> = None;
    let finish_seek = |out: &mut RangeOut, bad: &mut Option<String>| {
        let want = (limit as u64).min(spec.records - index.get());
        if rows_now.get() != want && bad.is_none() {
            *bad = Some(format!(
                "seek to record {} read {} rows, expected {want}",
                index.get(),
                rows_now.get()
            ));
        }
        out.rows += rows_now.get();
        out.seeks += 1;
    };
    e.scan(
        Direction::Forward,
        limit,
        &mut |key| {
            let now = Instant::now();
            if let Some(t) = t_seek.take() {
                out.latency.record(now - t);
                finish_seek(&mut out, &mut bad);
            }
            if now >= deadline || bad.is_some() {
                return None;
            }
            let j = next.fetch_add(1, Ordering::Relaxed);
            let i = data::read_index(spec.seed, stream, spec.records, j);
            data::key(i, key);
            target.borrow_mut().clone_from(key);
            index.set(i);
            rows_now.set(0);
            first.set(true);
            t_seek = Some(Instant::now());
            Some(Seek::Key)
        },
        &mut |k, _v| {
            if first.replace(false) && k == target.borrow().as_slice() {
                landed.set(landed.get() + 1);
            }
            rows_now.set(rows_now.get() + 1);
        },
    )?;
    out.found = landed.get();
    if let Some(what) = bad {
        return Err(BenchError::Verify {
            engine: e.name(),
            workload: WORKLOAD,
            what,
        });
    }
    if let Ok(mut t) = total.lock() {
        t.seeks += out.seeks;
        t.found += out.found;
        t.rows += out.rows;
        t.latency.merge(&out.latency);
    }
    Ok(())
}
