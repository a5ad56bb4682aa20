//! The workloads (db_bench's names) and their timed loops. Each loop runs against an
//! opened [`Engine`]; preparing the database (fresh or filled) is the caller's job.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::db::config::Config;
use crate::engine::{Direction, Engine, Seek};
use crate::error::{BenchError, Result};
use crate::keygen::{KeyGen, KeyOrder, ValueGen};
use crate::measure::{parallel, share, Latency, ThreadOut, Timed};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// `num` writes, keys in ascending order, into a fresh database.
    Fillseq,
    /// `num` writes, keys drawn uniformly from `0..num`, into a fresh database.
    Fillrandom,
    /// `num` writes of random keys over the existing database.
    Overwrite,
    /// `sync-ops` fsynced writes of random keys into a scratch database, with 1 and with
    /// 16 writer threads (`--sync-threads`).
    Fillsync,
    /// `reads` point lookups of random keys; the block cache holds the whole dataset.
    Readrandom,
    /// As readrandom, with a block cache of at most a quarter of the database and the page
    /// cache dropped first (or O_DIRECT reads when it cannot be dropped).
    ReadrandomUncached,
    /// `reads` random keys looked up `batch` at a time through multi_get.
    Multireadrandom,
    /// As multireadrandom, set up as readrandom_uncached (small block cache, cold page
    /// cache): the cold-cache batched lookups of `mapfile` and `elliptics`.
    MultireadrandomUncached,
    /// `reads` seeks to random keys, each followed by `seek-nexts` nexts, one iterator.
    Seekrandom,
    /// A full forward scan.
    Readseq,
    /// A full reverse scan.
    Readreverse,
    /// `reads` random lookups by the reader thread(s) while one writer writes random keys
    /// as fast as it can; the reader rate is reported.
    Readwhilewriting,
}

pub const ALL: &[Workload] = &[
    Workload::Fillseq,
    Workload::Fillrandom,
    Workload::Overwrite,
    Workload::Fillsync,
    Workload::Readrandom,
    Workload::ReadrandomUncached,
    Workload::Multireadrandom,
    Workload::MultireadrandomUncached,
    Workload::Seekrandom,
    Workload::Readseq,
    Workload::Readreverse,
    Workload::Readwhilewriting,
];

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Fillseq => "fillseq",
            Workload::Fillrandom => "fillrandom",
            Workload::Overwrite => "overwrite",
            Workload::Fillsync => "fillsync",
            Workload::Readrandom => "readrandom",
            Workload::ReadrandomUncached => "readrandom_uncached",
            Workload::Multireadrandom => "multireadrandom",
            Workload::MultireadrandomUncached => "multireadrandom_uncached",
            Workload::Seekrandom => "seekrandom",
            Workload::Readseq => "readseq",
            Workload::Readreverse => "readreverse",
            Workload::Readwhilewriting => "readwhilewriting",
        }
    }

    pub fn parse(s: &str) -> Option<Workload> {
        ALL.iter().copied().find(|w| w.name() == s)
    }

    /// Runs with the uncached setup (small block cache, page cache dropped).
    pub fn is_uncached(self) -> bool {
        matches!(
            self,
            Workload::ReadrandomUncached | Workload::MultireadrandomUncached
        )
    }

    /// Looks keys up through multi_get, `batch` at a time.
    pub fn is_batched(self) -> bool {
        matches!(
            self,
            Workload::Multireadrandom | Workload::MultireadrandomUncached
        )
    }

    /// Starts from an empty database (its own, for fillsync).
    pub fn is_fresh_fill(self) -> bool {
        matches!(
            self,
            Workload::Fillseq | Workload::Fillrandom | Workload::Fillsync
        )
    }

    /// Leaves new data behind that a settle (flush, wait for compactions) should absorb.
    pub fn writes_main_db(self) -> bool {
        matches!(
            self,
            Workload::Fillseq
                | Workload::Fillrandom
                | Workload::Overwrite
                | Workload::Readwhilewriting
        )
    }

    /// Position in [`ALL`], mixed into seeds so each workload draws its own keys.
    pub fn ordinal(self) -> u64 {
        ALL.iter().position(|w| *w == self).unwrap_or(0) as u64
    }
}

/// Seed for thread `t` of workload `w`; identical for every engine.
pub fn seed_for(cfg: &Config, w: Workload, t: usize) -> u64 {
    cfg.seed
        .wrapping_mul(1_000_003)
        .wrapping_add(w.ordinal() * 10_000 + t as u64)
}

fn check_len(engine: &dyn Engine, w: Workload, cfg: &Config, key: &[u8], len: usize) -> Result<()> {
    if len == cfg.value_size {
        return Ok(());
    }
    Err(BenchError::Verify {
        engine: engine.name(),
        workload: w.name(),
        what: format!(
            "value of key {:?} has {len} bytes, expected {}",
            String::from_utf8_lossy(key),
            cfg.value_size
        ),
    })
}

/// `total` writes over `threads` threads, sequential (one thread) or random keys.
/// Writes go `cfg.write_batch` at a time; latency is per write call.
pub fn write_keys(
    engine: &dyn Engine,
    cfg: &Config,
    w: Workload,
    total: u64,
    threads: usize,
    sequential: bool,
    sync: bool,
) -> Result<Timed> {
    let keygen = KeyGen::new(cfg.key_size);
    let per_write = cfg.write_batch.max(1) as u64;
    let base_values = ValueGen::new(cfg.value_size, cfg.compression_ratio);
    let prep = |t: usize| {
        let order = if sequential {
            KeyOrder::sequential(cfg.num)
        } else {
            KeyOrder::random(cfg.num, seed_for(cfg, w, t))
        };
        (order, base_values.fork(t), share(total, threads, t))
    };
    let run = |(mut order, mut values, n): (KeyOrder, ValueGen, u64)| {
        let mut out = ThreadOut::default();
        let mut key = Vec::with_capacity(cfg.key_size);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut vals: Vec<Vec<u8>> = Vec::new();
        let mut done = 0;
        while done < n {
            let this = per_write.min(n - done);
            if this == 1 {
                keygen.fill(order.next_index(), &mut key);
                let v = values.next_value();
                let t0 = Instant::now();
                engine.put(&key, v, sync)?;
                out.latency.record(t0.elapsed());
            } else {
                keys.resize(this as usize, Vec::new());
                vals.resize(this as usize, Vec::new());
                for (k, v) in keys.iter_mut().zip(vals.iter_mut()) {
                    keygen.fill(order.next_index(), k);
                    v.clear();
                    v.extend_from_slice(values.next_value());
                }
                let entries: Vec<(&[u8], &[u8])> = keys
                    .iter()
                    .zip(&vals)
                    .map(|(k, v)| (k.as_slice(), v.as_slice()))
                    .collect();
                let t0 = Instant::now();
                engine.put_batch(&entries, sync)?;
                out.latency.record(t0.elapsed());
            }
            done += this;
        }
        out.ops = done;
        Ok(out)
    };
    let (elapsed, out) = parallel(threads, prep, run)?;
    let unit = if per_write > 1 { "batch" } else { "op" };
    Ok(Timed::new(out, elapsed, unit, false))
}

/// Point lookups of random keys (`cfg.reads` over `cfg.threads` threads).
pub fn read_random(engine: &dyn Engine, cfg: &Config, w: Workload) -> Result<Timed> {
    let keygen = KeyGen::new(cfg.key_size);
    let threads = cfg.threads;
    let (elapsed, out) = parallel(
        threads,
        |t| {
            (
                KeyOrder::random(cfg.num, seed_for(cfg, w, t)),
                share(cfg.reads, threads, t),
            )
        },
        |(mut order, n)| read_loop(engine, cfg, w, &keygen, &mut order, n),
    )?;
    Ok(Timed::new(out, elapsed, "op", true))
}

/// `n` random gets.
fn read_loop(
    engine: &dyn Engine,
    cfg: &Config,
    w: Workload,
    keygen: &KeyGen,
    order: &mut KeyOrder,
    n: u64,
) -> Result<ThreadOut> {
    let mut out = ThreadOut::default();
    let mut key = Vec::with_capacity(cfg.key_size);
    for _ in 0..n {
        keygen.fill(order.next_index(), &mut key);
        let t0 = Instant::now();
        let got = engine.get(&key)?;
        out.latency.record(t0.elapsed());
        out.ops += 1;
        if let Some(len) = got {
            check_len(engine, w, cfg, &key, len)?;
            out.found += 1;
        }
    }
    Ok(out)
}

/// Random keys `cfg.batch` at a time through multi_get; ops count keys, latency batches.
pub fn multi_read_random(engine: &dyn Engine, cfg: &Config, w: Workload) -> Result<Timed> {
    let keygen = KeyGen::new(cfg.key_size);
    let threads = cfg.threads;
    let batch = cfg.batch.max(1);
    let (elapsed, out) = parallel(
        threads,
        |t| {
            (
                KeyOrder::random(cfg.num, seed_for(cfg, w, t)),
                share(cfg.reads, threads, t),
            )
        },
        |(mut order, n)| {
            let mut out = ThreadOut::default();
            let mut keys: Vec<Vec<u8>> = vec![Vec::new(); batch];
            while out.ops < n {
                let this = (batch as u64).min(n - out.ops) as usize;
                for k in keys.iter_mut().take(this) {
                    keygen.fill(order.next_index(), k);
                }
                let refs: Vec<&[u8]> = keys[..this].iter().map(Vec::as_slice).collect();
                let t0 = Instant::now();
                let got = engine.multi_get(&refs)?;
                out.latency.record(t0.elapsed());
                if got.len() != this {
                    return Err(BenchError::Verify {
                        engine: engine.name(),
                        workload: w.name(),
                        what: format!("multi_get of {this} keys returned {}", got.len()),
                    });
                }
                for (k, len) in refs.iter().zip(got) {
                    if let Some(len) = len {
                        check_len(engine, w, cfg, k, len)?;
                        out.found += 1;
                    }
                }
                out.ops += this as u64;
            }
            Ok(out)
        },
    )?;
    Ok(Timed::new(out, elapsed, "batch", true))
}

/// Seeks to random keys, each followed by `cfg.seek_nexts` nexts, on one iterator per
/// thread. `found` counts seeks that landed on their key.
pub fn seek_random(engine: &dyn Engine, cfg: &Config, w: Workload) -> Result<Timed> {
    let keygen = KeyGen::new(cfg.key_size);
    let threads = cfg.threads;
    let (elapsed, out) = parallel(
        threads,
        |t| {
            (
                KeyOrder::random(cfg.num, seed_for(cfg, w, t)),
                share(cfg.reads, threads, t),
            )
        },
        |(mut order, n)| {
            let mut lat = Latency::default();
            let mut issued = 0u64;
            let mut started: Option<Instant> = None;
            let target = RefCell::new(Vec::with_capacity(cfg.key_size));
            let first = Cell::new(false);
            let found = Cell::new(0u64);
            let mut next_seek = |buf: &mut Vec<u8>| {
                let now = Instant::now();
                if let Some(s) = started.take() {
                    lat.record(now - s);
                }
                if issued == n {
                    return None;
                }
                issued += 1;
                let mut t = target.borrow_mut();
                keygen.fill(order.next_index(), &mut t);
                buf.clear();
                buf.extend_from_slice(&t);
                first.set(true);
                started = Some(Instant::now());
                Some(Seek::Key)
            };
            let mut visit = |k: &[u8], _v: &[u8]| {
                if first.replace(false) && k == target.borrow().as_slice() {
                    found.set(found.get() + 1);
                }
            };
            engine.scan(
                Direction::Forward,
                cfg.seek_nexts + 1,
                &mut next_seek,
                &mut visit,
            )?;
            Ok(ThreadOut {
                ops: issued,
                found: found.get(),
                latency: lat,
            })
        },
    )?;
    Ok(Timed::new(out, elapsed, "op", true))
}

/// A full scan in `dir`. Ops are entries; latency is per entry, averaged over chunks of
/// 1000 entries (timing every `next` alone would mostly measure the clock).
pub fn scan_all(engine: &dyn Engine, cfg: &Config, w: Workload, dir: Direction) -> Result<Timed> {
    const CHUNK: u64 = 1000;
    let mut lat = Latency::default();
    let mut entries = 0u64;
    let mut bad_len: Option<(Vec<u8>, usize)> = None;
    let mut once = false;
    let start = Instant::now();
    let mut chunk_start = start;
    let mut next_seek = |_: &mut Vec<u8>| {
        if std::mem::replace(&mut once, true) {
            return None;
        }
        Some(match dir {
            Direction::Forward => Seek::First,
            Direction::Reverse => Seek::Last,
        })
    };
    let mut visit = |k: &[u8], v: &[u8]| {
        entries += 1;
        if v.len() != cfg.value_size && bad_len.is_none() {
            bad_len = Some((k.to_vec(), v.len()));
        }
        if entries.is_multiple_of(CHUNK) {
            let now = Instant::now();
            lat.record_ns((now - chunk_start).as_nanos() as u64 / CHUNK);
            chunk_start = now;
        }
    };
    engine.scan(dir, usize::MAX, &mut next_seek, &mut visit)?;
    let elapsed = start.elapsed();
    if let Some((k, len)) = bad_len {
        check_len(engine, w, cfg, &k, len)?;
    }
    let out = ThreadOut {
        ops: entries,
        found: entries,
        latency: lat,
    };
    Ok(Timed::new(out, elapsed, "entry (avg of 1000)", true))
}

/// `cfg.threads` readers doing `cfg.reads` random gets while one writer overwrites random
/// keys at full speed until the readers finish. Reports the readers.
pub fn read_while_writing(engine: &dyn Engine, cfg: &Config, w: Workload) -> Result<Timed> {
    let keygen = KeyGen::new(cfg.key_size);
    let threads = cfg.threads;
    let stop = AtomicBool::new(false);
    let (reader, writer) = std::thread::scope(|s| {
        let writer = s.spawn(|| -> Result<(u64, Duration)> {
            let mut order = KeyOrder::random(cfg.num, seed_for(cfg, w, 1000));
            let mut values = ValueGen::new(cfg.value_size, cfg.compression_ratio);
            let mut key = Vec::with_capacity(cfg.key_size);
            let start = Instant::now();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                keygen.fill(order.next_index(), &mut key);
                engine.put(&key, values.next_value(), false)?;
                n += 1;
            }
            Ok((n, start.elapsed()))
        });
        let reader = parallel(
            threads,
            |t| {
                (
                    KeyOrder::random(cfg.num, seed_for(cfg, w, t)),
                    share(cfg.reads, threads, t),
                )
            },
            |(mut order, n)| read_loop(engine, cfg, w, &keygen, &mut order, n),
        );
        stop.store(true, Ordering::Relaxed);
        let writer = match writer.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        };
        (reader, writer)
    });
    let (elapsed, out) = reader?;
    let (writes, write_time) = writer?;
    let mut timed = Timed::new(out, elapsed, "op", true);
    timed.writer_ops_per_sec = Some(writes as f64 / write_time.as_secs_f64().max(1e-9));
    Ok(timed)
}
