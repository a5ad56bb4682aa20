//! A Rust engine's side of `cellar-bench mapfile` (run as `cellar-bench mapfile --child
//! NAME ...`): the same steps as the Java peers, through the [`Engine`] trait, each result
//! printed as one [`PeerLine`] on stdout as soon as it is measured.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{PeerLine, Spec, WORKLOAD};
use crate::engine::auto_cache_bytes;
use crate::engine::{self, Engine, EngineStats, OpenConfig};
use crate::engines;
use crate::error::{BenchError, Result};
use crate::keygen::KeyGen;
use crate::measure::Latency;
use crate::peer_keys;
use crate::procfs;

/// Entries per put_batch call in the Rust engines' buffered insert.
const INSERT_BATCH: usize = 1000;
const MEMTABLE_BYTES: u64 = 64 << 20;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);

fn open(name: &str, dir: &Path, spec: &Spec) -> Result<Box<dyn Engine>> {
    engine::open(
        name,
        dir,
        &OpenConfig {
            block_cache_bytes: auto_cache_bytes(spec.records, spec.key_size, spec.value_size),
            memtable_bytes: MEMTABLE_BYTES,
            direct_reads: false,
            rocksdb_statistics: false,
            rocksdb_index_filter_in_cache: false,
            object_store: None,
        },
    )
}

fn emit(line: &PeerLine) -> Result<()> {
    let progress = format!(
        "[{}] {}: {} ops in {:.3} s = {:.0} ops/s, p50 {:.2} µs, p99 {:.2} µs per {}",
        line.engine,
        line.variant,
        line.ops,
        line.seconds,
        line.ops_per_sec,
        line.p50_us,
        line.p99_us,
        line.latency_unit
    );
    crate::child::emit_measurement(WORKLOAD, &progress, line)
}

/// Runs every step on engine `name`, printing each result line.
pub fn run(name: &str, spec: &Spec) -> Result<()> {
    engines::check_available(name)?;
    let dir = spec.dir.join(name);
    let durable_dir = spec.dir.join(format!("{name}-durable"));
    procfs::remove_dir(&dir)?;
    procfs::remove_dir(&durable_dir)?;
    std::fs::create_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;

    emit(&insert_buffered(name, &dir, spec)?)?;
    for &bucket in &spec.buckets {
        emit(&lookups(name, &dir, spec, bucket)?)?;
    }
    if spec.durable_inserts > 0 {
        emit(&insert_durable(name, &durable_dir, spec)?)?;
    }
    if !spec.keep_data {
        procfs::remove_dir(&dir)?;
        procfs::remove_dir(&durable_dir)?;
    }
    Ok(())
}

/// Closes `engine` after `f`, whatever `f` returned.
fn with_engine<T>(engine: Box<dyn Engine>, f: impl FnOnce(&dyn Engine) -> Result<T>) -> Result<T> {
    let r = f(engine.as_ref());
    let closed = engine.close();
    let v = r?;
    closed?;
    Ok(v)
}

fn verify(engine: &dyn Engine, spec: &Spec, index: u64, len: usize) -> Result<()> {
    if len == spec.value_size {
        return Ok(());
    }
    Err(BenchError::Verify {
        engine: engine.name(),
        workload: WORKLOAD,
        what: format!(
            "record {index} has a value of {len} bytes, expected {}",
            spec.value_size
        ),
    })
}

/// All records in key order, `INSERT_BATCH` per put_batch, not synced; then flushed and
/// settled (untimed).
fn insert_buffered(name: &str, dir: &Path, spec: &Spec) -> Result<PeerLine> {
    let mut line = PeerLine::new(name, "insert buffered", spec);
    line.latency_unit = "batch".into();
    let keygen = KeyGen::new(spec.key_size);
    let engine = open(name, dir, spec)?;
    with_engine(engine, |e| {
        let mut lat = Latency::default();
        let mut keys = vec![vec![0u8; spec.key_size]; INSERT_BATCH];
        let mut values = vec![vec![0u8; spec.value_size]; INSERT_BATCH];
        let start = Instant::now();
        let mut next = 0u64;
        while next < spec.records {
            let n = (spec.records - next).min(INSERT_BATCH as u64) as usize;
            for j in 0..n {
                keygen.fill(next + j as u64, &mut keys[j]);
                peer_keys::value(next + j as u64, &mut values[j]);
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
        line.notes.push(format!(
            "put_batch of {INSERT_BATCH} records in key order, not synced; settle = flush + \
             background work"
        ));
        line.finish(&lat);
        Ok(())
    })?;
    Ok(line)
}

/// `spec.iterations` iterations of the shared sample, `bucket` keys per call (1: get),
/// each on a freshly opened engine after the page cache was dropped (when permitted).
fn lookups(name: &str, dir: &Path, spec: &Spec, bucket: usize) -> Result<PeerLine> {
    let variant = if bucket == 1 {
        "lookup single".to_string()
    } else {
        format!("lookup bucket={bucket}")
    };
    let mut line = PeerLine::new(name, variant, spec);
    line.latency_unit = if bucket == 1 { "op" } else { "batch" }.into();
    line.cache_mode = Some(
        if spec.drop_caches {
            "cold: page cache dropped, caches emptied"
        } else {
            "caches emptied; page cache not dropped"
        }
        .into(),
    );
    let keygen = KeyGen::new(spec.key_size);
    let per = spec.lookups_per_iteration();
    let mut all = Latency::default();
    let mut per_iteration = Vec::new();
    let mut found = 0u64;
    let mut stats = Vec::new();
    for it in 0..spec.iterations {
        let sample = peer_keys::sample(spec.seed, spec.records, per, u64::from(it));
        let keys: Vec<Vec<u8>> = sample
            .iter()
            .map(|&i| {
                let mut k = Vec::with_capacity(spec.key_size);
                keygen.fill(i, &mut k);
                k
            })
            .collect();
        if spec.drop_caches {
            procfs::drop_page_cache().map_err(|e| BenchError::io("/proc/sys/vm/drop_caches", e))?;
        }
        let engine = open(name, dir, spec)?;
        let seconds = with_engine(engine, |e| {
            let start = Instant::now();
            for (chunk, idx) in keys.chunks(bucket).zip(sample.chunks(bucket)) {
                let t0 = Instant::now();
                if bucket == 1 {
                    if let Some(len) = e.get(&chunk[0])? {
                        verify(e, spec, idx[0], len)?;
                        found += 1;
                    }
                } else {
                    let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
                    let got = e.multi_get(&refs)?;
                    for (&i, len) in idx.iter().zip(got) {
                        if let Some(len) = len {
                            verify(e, spec, i, len)?;
                            found += 1;
                        }
                    }
                }
                all.record(t0.elapsed());
            }
            let seconds = start.elapsed().as_secs_f64();
            stats.push(e.stats());
            Ok(seconds)
        })?;
        line.seconds += seconds;
        line.ops += sample.len() as u64;
        per_iteration.push(if seconds > 0.0 {
            sample.len() as f64 / seconds
        } else {
            0.0
        });
    }
    line.found = Some(found);
    line.iterations_ops_per_sec = Some(per_iteration);
    if let Some(note) = read_note(&stats, per) {
        line.notes.push(note);
    }
    line.finish(&all);
    Ok(line)
}

/// What the engine read per iteration (each from a fresh open, so its counters start at 0):
/// reads of table files per lookup and, for Cellar, what its warm-up read whole.
fn read_note(stats: &[EngineStats], lookups: u64) -> Option<String> {
    let per_lookup: Vec<String> = stats
        .iter()
        .filter_map(|s| s.device_reads)
        .map(|r| format!("{:.2}", r as f64 / lookups.max(1) as f64))
        .collect();
    if per_lookup.is_empty() {
        return None;
    }
    let mut note = format!(
        "table-file reads per lookup, by iteration: {}",
        per_lookup.join(", ")
    );
    let warmed: Vec<String> = stats
        .iter()
        .filter_map(|s| Some((s.warm_ups?, s.warm_up_bytes?)))
        .map(|(files, bytes)| format!("{files} files / {:.0} MB", bytes as f64 / 1e6))
        .collect();
    if !warmed.is_empty() {
        note.push_str(&format!(
            "; warm-up read whole, by iteration: {}",
            warmed.join(", ")
        ));
    }
    Some(note)
}

/// `spec.durable_inserts` records in key order, one synced put each, into a fresh store.
fn insert_durable(name: &str, dir: &Path, spec: &Spec) -> Result<PeerLine> {
    let mut line = PeerLine::new(name, "insert durable", spec);
    let keygen = KeyGen::new(spec.key_size);
    let engine = open(name, dir, spec)?;
    with_engine(engine, |e| {
        let mut lat = Latency::default();
        let mut key = Vec::with_capacity(spec.key_size);
        let mut value = vec![0u8; spec.value_size];
        let start = Instant::now();
        for i in 0..spec.durable_inserts {
            keygen.fill(i, &mut key);
            peer_keys::value(i, &mut value);
            let t0 = Instant::now();
            e.put(&key, &value, true)?;
            lat.record(t0.elapsed());
        }
        line.seconds = start.elapsed().as_secs_f64();
        line.ops = spec.durable_inserts;
        line.notes
            .push("one put at a time, each synced (fsync) before it returns".into());
        line.finish(&lat);
        Ok(())
    })?;
    Ok(line)
}
