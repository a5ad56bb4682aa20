//! Runs the configured workloads, in order, on ONE engine (inside its child process):
//! prepares the database each workload needs, opens the engine with the right cache,
//! times the workload, settles writes, and turns the outcome into a [`Record`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::db::config::{Config, IndexFilter, UncachedMode};
use crate::db::table::Record;
use crate::db::workloads::{self as wl, Workload};
use crate::db::write_amp::WriteCounters;
use crate::engine::{self, Direction, Engine, OpenConfig};
use crate::error::{BenchError, Result};
use crate::measure::{Deltas, Probe, Timed};
use crate::procfs;

/// How long a settle may wait for flushes and compactions.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);
/// Smallest block cache readrandom_uncached uses when sizing it automatically.
const MIN_UNCACHED_CACHE: u64 = 64 << 10;

pub struct Runner<'a> {
    cfg: &'a Config,
    engine: String,
    /// The main database holds a filled dataset.
    filled: bool,
    /// Attached to the next record (e.g. an untimed prefill happened).
    notes: Vec<String>,
}

/// How a workload's engine was opened.
struct Setup {
    cache_bytes: u64,
    cache_mode: &'static str,
    direct_reads: bool,
}

impl<'a> Runner<'a> {
    pub fn new(cfg: &'a Config, engine: &str) -> Self {
        Runner {
            cfg,
            engine: engine.to_string(),
            filled: false,
            notes: Vec::new(),
        }
    }

    fn main_dir(&self) -> PathBuf {
        self.cfg.main_db_dir(&self.engine)
    }

    fn sync_dir(&self) -> PathBuf {
        self.cfg.sync_db_dir(&self.engine)
    }

    fn warm(&self) -> Setup {
        Setup {
            cache_bytes: self.cfg.cache_bytes,
            cache_mode: "warm",
            direct_reads: false,
        }
    }

    fn open(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn Engine>> {
        std::fs::create_dir_all(&self.cfg.db_dir)
            .map_err(|e| BenchError::io(&self.cfg.db_dir, e))?;
        engine::open(
            &self.engine,
            dir,
            &OpenConfig {
                block_cache_bytes: setup.cache_bytes,
                memtable_bytes: self.cfg.memtable_bytes,
                direct_reads: setup.direct_reads,
                rocksdb_statistics: self.cfg.rocksdb_statistics,
                rocksdb_index_filter_in_cache: self.cfg.rocksdb_index_filter
                    == IndexFilter::Partitioned,
                object_store: None,
            },
        )
    }

    /// Runs every workload, handing each record to `emit` as soon as it exists.
    pub fn run_all(&mut self, emit: &mut dyn FnMut(Record) -> Result<()>) -> Result<()> {
        if self.cfg.use_existing_db && self.main_dir().is_dir() {
            self.filled = true;
            self.notes.push(format!(
                "existing database reused: {}",
                self.main_dir().display()
            ));
        } else {
            procfs::remove_dir(&self.main_dir())?;
        }
        procfs::remove_dir(&self.sync_dir())?;
        for &w in &self.cfg.workloads {
            self.run_one(w, emit)?;
        }
        if !self.cfg.keep_db {
            procfs::remove_dir(&self.main_dir())?;
            procfs::remove_dir(&self.sync_dir())?;
        }
        Ok(())
    }

    fn run_one(&mut self, w: Workload, emit: &mut dyn FnMut(Record) -> Result<()>) -> Result<()> {
        if w == Workload::Fillsync {
            for &threads in &self.cfg.sync_threads {
                let r = self.fillsync(threads)?;
                emit(r)?;
            }
            return Ok(());
        }
        let dir = self.main_dir();
        if w.is_fresh_fill() {
            procfs::remove_dir(&dir)?;
            self.filled = false;
        } else {
            self.ensure_filled()?;
        }
        let setup = if w.is_uncached() {
            self.uncached_setup()?
        } else {
            self.warm()
        };
        let engine = self.open(&dir, &setup)?;
        let probe = Probe::start(engine.as_ref());
        // Fills and overwrite write `num` keys from one thread; the other writer
        // (readwhilewriting) writes as many as it can beside the readers.
        let single_writer_load = w.is_fresh_fill() || w == Workload::Overwrite;
        let write_counters = single_writer_load.then(|| WriteCounters::start(&dir));
        let timed = self.timed(engine.as_ref(), w);
        let timed = match timed {
            Ok(t) => t,
            Err(e) => {
                let _ = engine.close();
                return Err(e);
            }
        };
        let mut deltas = probe.finish(engine.as_ref(), timed.ops);
        let settle = if w.writes_main_db() {
            Some(self.settle(engine.as_ref())?)
        } else {
            None
        };
        // Device bytes over the user's bytes, flush and compactions included (the settle).
        let user_bytes = timed.ops * (self.cfg.key_size + self.cfg.value_size) as u64;
        let write_amp = write_counters.map(|c| c.finish(user_bytes));
        // Index and filter memory of the settled database (a fill's data is in tables now).
        deltas.resident_index_filter_bytes = engine.stats().resident_index_filter_bytes;
        engine.close()?;
        if matches!(w, Workload::Fillseq | Workload::Fillrandom) {
            self.filled = true;
        }
        let threads = if single_writer_load {
            1
        } else {
            self.cfg.threads
        };
        let variant = if threads > 1 {
            format!("t{threads}")
        } else {
            String::new()
        };
        let mut r = self.record(w, variant, threads, &timed, deltas, &setup, &dir)?;
        r.settle_seconds = settle;
        if let Some(amp) = write_amp {
            r.write_amp = amp.write_amp;
            r.write_amp_source = amp.source.to_string();
            r.process_write_amp = amp.process_write_amp;
        }
        emit(r)
    }

    fn timed(&self, engine: &dyn Engine, w: Workload) -> Result<Timed> {
        let cfg = self.cfg;
        match w {
            Workload::Fillseq => wl::write_keys(engine, cfg, w, cfg.num, 1, true, false),
            Workload::Fillrandom | Workload::Overwrite => {
                wl::write_keys(engine, cfg, w, cfg.num, 1, false, false)
            }
            Workload::Readrandom | Workload::ReadrandomUncached => wl::read_random(engine, cfg, w),
            Workload::Multireadrandom | Workload::MultireadrandomUncached => {
                wl::multi_read_random(engine, cfg, w)
            }
            Workload::Seekrandom => wl::seek_random(engine, cfg, w),
            Workload::Readseq => wl::scan_all(engine, cfg, w, Direction::Forward),
            Workload::Readreverse => wl::scan_all(engine, cfg, w, Direction::Reverse),
            Workload::Readwhilewriting => wl::read_while_writing(engine, cfg, w),
            Workload::Fillsync => unreachable!("fillsync runs per thread count"),
        }
    }

    /// fillsync with `threads` writers, in a scratch database so the main one is untouched.
    fn fillsync(&mut self, threads: usize) -> Result<Record> {
        let dir = self.sync_dir();
        procfs::remove_dir(&dir)?;
        let setup = self.warm();
        let engine = self.open(&dir, &setup)?;
        let probe = Probe::start(engine.as_ref());
        let w = Workload::Fillsync;
        let timed = wl::write_keys(
            engine.as_ref(),
            self.cfg,
            w,
            self.cfg.sync_ops,
            threads,
            false,
            true,
        );
        let timed = match timed {
            Ok(t) => t,
            Err(e) => {
                let _ = engine.close();
                return Err(e);
            }
        };
        let deltas = probe.finish(engine.as_ref(), timed.ops);
        engine.close()?;
        let r = self.record(
            w,
            threads.to_string(),
            threads,
            &timed,
            deltas,
            &setup,
            &dir,
        )?;
        procfs::remove_dir(&dir)?;
        Ok(r)
    }

    /// Flushes and waits for background work (and compacts everything with `--compact`).
    fn settle(&self, engine: &dyn Engine) -> Result<f64> {
        let t0 = Instant::now();
        engine.flush()?;
        engine.wait_for_background(SETTLE_TIMEOUT)?;
        if self.cfg.compact {
            engine.compact()?;
            engine.wait_for_background(SETTLE_TIMEOUT)?;
        }
        Ok(t0.elapsed().as_secs_f64())
    }

    /// A read needs data: when no fill ran yet, fill with fillrandom (untimed) and say so.
    fn ensure_filled(&mut self) -> Result<()> {
        if self.filled {
            return Ok(());
        }
        let note = "database prefilled with fillrandom (untimed): no fill ran before".to_string();
        eprintln!("[{}] {note}", self.engine);
        let dir = self.main_dir();
        procfs::remove_dir(&dir)?;
        let engine = self.open(&dir, &self.warm())?;
        let w = Workload::Fillrandom;
        let r = wl::write_keys(engine.as_ref(), self.cfg, w, self.cfg.num, 1, false, false)
            .and_then(|_| self.settle(engine.as_ref()));
        let closed = engine.close();
        r?;
        closed?;
        self.filled = true;
        self.notes.push(note);
        Ok(())
    }

    /// A block cache of at most a quarter of the database, and the page cache dropped (or
    /// O_DIRECT reads).
    fn uncached_setup(&mut self) -> Result<Setup> {
        let db_bytes = procfs::dir_size(&self.main_dir())?;
        let cache_bytes = self
            .cfg
            .uncached_cache_bytes
            .unwrap_or((db_bytes / 4).max(MIN_UNCACHED_CACHE));
        if db_bytes < cache_bytes.saturating_mul(4) {
            self.notes.push(format!(
                "dataset ({db_bytes} B) is less than 4x the block cache ({cache_bytes} B)"
            ));
        }
        let drop =
            || procfs::drop_page_cache().map_err(|e| BenchError::io("/proc/sys/vm/drop_caches", e));
        let direct = match self.cfg.uncached_mode {
            UncachedMode::Direct => true,
            UncachedMode::DropCaches => {
                drop()?;
                false
            }
            UncachedMode::Auto => match drop() {
                Ok(()) => false,
                Err(e) => {
                    let note = format!("could not drop the page cache ({e}); using O_DIRECT reads");
                    eprintln!("[{}] {note}", self.engine);
                    self.notes.push(note);
                    true
                }
            },
        };
        Ok(Setup {
            cache_bytes,
            cache_mode: if direct {
                "direct_reads"
            } else {
                "drop_caches"
            },
            direct_reads: direct,
        })
    }

    fn engine_options(&self) -> String {
        if self.engine != "rocksdb" {
            return String::new();
        }
        let where_ = match self.cfg.rocksdb_index_filter {
            IndexFilter::Partitioned => "partitioned",
            IndexFilter::TableReader => "table_reader",
        };
        let stats = if self.cfg.rocksdb_statistics {
            "on"
        } else {
            "off"
        };
        format!("index_filter={where_} statistics={stats}")
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        w: Workload,
        variant: String,
        threads: usize,
        timed: &Timed,
        d: Deltas,
        setup: &Setup,
        dir: &Path,
    ) -> Result<Record> {
        let cfg = self.cfg;
        if let Some(note) = d.warm_up_note() {
            self.notes.push(note);
        }
        let r = Record {
            engine: self.engine.clone(),
            engine_options: self.engine_options(),
            workload: w.name().to_string(),
            variant,
            threads,
            num: cfg.num,
            ops: timed.ops,
            seconds: timed.seconds,
            ops_per_sec: timed.ops_per_sec(),
            p50_us: timed.latency.quantile_us(0.50),
            p99_us: timed.latency.quantile_us(0.99),
            latency_unit: timed.latency_unit.to_string(),
            device_reads_per_op: d.device_reads_per_op,
            device_reads_method: d.device_reads_method,
            io_syscr_per_op: d.io_syscr_per_op,
            io_read_bytes_per_op: d.io_read_bytes_per_op,
            db_bytes: procfs::dir_size(dir)?,
            peak_rss_bytes: d.peak_rss_bytes,
            peak_rss_scope: d.peak_rss_scope.to_string(),
            cache_mode: setup.cache_mode.to_string(),
            cache_bytes: setup.cache_bytes,
            resident_index_filter_bytes: d.resident_index_filter_bytes,
            found: timed.found,
            key_size: cfg.key_size,
            value_size: cfg.value_size,
            batch: w.is_batched().then_some(cfg.batch),
            writer_ops_per_sec: timed.writer_ops_per_sec,
            stall_micros: d.stall_micros,
            wal_syncs: d.wal_syncs,
            settle_seconds: None,
            write_amp: None,
            write_amp_source: String::new(),
            process_write_amp: None,
            notes: std::mem::take(&mut self.notes),
        };
        Ok(r)
    }
}
