//! The objstore suite's measurements: the parent runs two children per variant (main,
//! then cold), each child opens its databases and measures them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{ObjstoreConfig, ObjstoreRecord, Phase, Variant, SUITE};
use crate::engine::{self, auto_cache_bytes, Engine, ObjectStoreTarget, OpenConfig};
use crate::error::{BenchError, Result};
use crate::keygen::{KeyGen, KeyOrder, ValueGen};
use crate::measure::Latency;
use crate::suite::{self, SuiteRecord};
use crate::ycsb::{run_core_workloads, CoreRun};

const KEY_BYTES: usize = 16;
const SEED: u64 = 1;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);
/// The writer counts of the durable-write stream (the 1 and 16).
const DURABLE_WRITERS: [usize; 2] = [1, 16];
/// The counter of GETs for SST data that Cellar in a bucket keeps (`Stats::storage`).
const SST_GETS: &str = "object_get_requests_sst";

/// Parent: every variant's children, in order; their records and the first failure (a
/// failed variant does not stop the others).
pub fn run_variants(cfg: &ObjstoreConfig) -> (Vec<ObjstoreRecord>, Option<BenchError>) {
    let mut records = Vec::new();
    let mut failure = None;
    for &v in &cfg.variants {
        for phase in [Phase::Main, Phase::Cold] {
            let one = ObjstoreConfig {
                variants: vec![v],
                phase,
                ..cfg.clone()
            };
            let (mut got, r) = run_child(&one, v);
            records.append(&mut got);
            if let Err(e) = r {
                eprintln!("[objstore] {} {phase:?} failed: {e}", v.flag());
                failure.get_or_insert(e);
                break;
            }
        }
    }
    (records, failure)
}

/// `<this binary> objstore --child '<cfg>'`, its clients pointed at the bucket's endpoint
/// with the credentials of the SeaweedFS the suite started (or the caller's AWS_*).
fn run_child(cfg: &ObjstoreConfig, v: Variant) -> (Vec<ObjstoreRecord>, Result<()>) {
    let json = match serde_json::to_string(cfg) {
        Ok(j) => j,
        Err(e) => return (Vec::new(), Err(BenchError::Invalid(e.to_string()))),
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return (Vec::new(), Err(BenchError::io("current executable", e))),
    };
    let mut cmd = Command::new(exe);
    crate::command::pass_to_child(&mut cmd).args([SUITE, "--child", &json]);
    if !cfg.endpoint.is_empty() {
        cmd.env("AWS_ENDPOINT_URL", &cfg.endpoint);
    }
    for (var, default) in [
        ("AWS_ACCESS_KEY_ID", super::seaweed::ACCESS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", super::seaweed::SECRET_ACCESS_KEY),
        ("AWS_REGION", "us-east-1"),
    ] {
        if std::env::var_os(var).is_none() {
            cmd.env(var, default);
        }
    }
    crate::child::collect_records(&mut cmd, SUITE, v.engine())
}

/// Child: one variant, one phase.
pub fn child_main(cfg: &ObjstoreConfig) -> Result<()> {
    let [v] = cfg.variants.as_slice() else {
        return Err(BenchError::Invalid(
            "--child config must name exactly one variant".into(),
        ));
    };
    let child = Child { cfg, v: *v };
    match cfg.phase {
        Phase::Main => child.main(),
        Phase::Cold => child.cold(),
    }
}

struct Child<'a> {
    cfg: &'a ObjstoreConfig,
    v: Variant,
}

impl Child<'_> {
    /// This variant's local directory: Cellar's local databases, every cache.
    fn local_dir(&self) -> PathBuf {
        self.cfg.db_dir.join(self.v.flag())
    }

    /// Database `db` of this variant: a local directory or `s3://bucket/run/variant/db`.
    fn db_path(&self, db: &str) -> PathBuf {
        if self.v.in_bucket() {
            PathBuf::from(format!("{}/{}/{db}", self.cfg.bucket_url, self.v.flag()))
        } else {
            self.local_dir().join(db)
        }
    }

    /// Opens database `db`; Cellar in a bucket with its disk cache (and `wal=local` WAL)
    /// in `<local dir>/<db>-<cache>`.
    fn open(&self, db: &str, cache: &str) -> Result<Box<dyn Engine>> {
        let cache_bytes = auto_cache_bytes(self.cfg.records, KEY_BYTES, self.cfg.value_size);
        let object_store =
            (self.v.in_bucket() && self.v.engine() == "cellar").then(|| ObjectStoreTarget {
                wal_in_bucket: self.v == Variant::CellarWalObject,
                cache_dir: self.local_dir().join(format!("{db}-{cache}")),
                cache_bytes: cache_bytes * 2,
                endpoint: Some(self.cfg.endpoint.clone()).filter(|e| !e.is_empty()),
            });
        let cfg = OpenConfig {
            block_cache_bytes: cache_bytes,
            memtable_bytes: self.cfg.memtable_bytes,
            direct_reads: false,
            rocksdb_statistics: false,
            rocksdb_index_filter_in_cache: false,
            object_store,
        };
        engine::open(self.v.engine(), &self.db_path(db), &cfg)
    }

    fn progress(&self, what: &str) {
        eprintln!("[objstore] {}: {what}", self.v.flag());
    }

    fn emit(&self, r: &ObjstoreRecord) -> Result<()> {
        let gets = r
            .gets_per_read
            .map_or_else(String::new, |g| format!(", {g:.2} GETs/read"));
        let line = format!("{}{gets}", r.base.progress_line());
        crate::child::emit_measurement(SUITE, &line, r)
    }

    fn main(&self) -> Result<()> {
        crate::procfs::remove_dir(&self.local_dir())?;
        std::fs::create_dir_all(self.local_dir())
            .map_err(|e| BenchError::io(self.local_dir(), e))?;
        self.progress("fillseq");
        let e = self.open("fillseq", "cache")?;
        let r = self.fill(
            e.as_ref(),
            "fillseq",
            KeyOrder::sequential(self.cfg.records),
        );
        let closed = e.close();
        self.emit(&r?)?;
        closed?;
        self.progress("fillrandom, then readrandom warm");
        let e = self.open("fillrandom", "cache")?;
        let r = self.fill_then_read_warm(e.as_ref());
        let closed = e.close();
        r?;
        closed?;
        self.progress("YCSB A-F");
        let e = self.open("ycsb", "cache")?;
        let r = self.ycsb(e.as_ref());
        let closed = e.close();
        r?;
        closed?;
        let e = self.open("durable", "cache")?;
        let r = self.durable(e.as_ref());
        let closed = e.close();
        r?;
        closed
    }

    fn fill_then_read_warm(&self, e: &dyn Engine) -> Result<()> {
        let mut r = self.fill(e, "fillrandom", KeyOrder::shuffled(self.cfg.records, SEED))?;
        let settle = Instant::now();
        e.flush()?;
        e.wait_for_background(SETTLE_TIMEOUT)?;
        r.base.settle_seconds = Some(settle.elapsed().as_secs_f64());
        self.emit(&r)?;
        let warm = self.read_random(e, "readrandom_warm")?;
        self.emit(&warm)
    }

    /// A fresh process, the fillrandom database reopened with an empty disk cache (Cellar
    /// in a bucket) and an empty block cache. Cellar on local disk reads through the page
    /// cache, which is not dropped (it is shared with the machine).
    fn cold(&self) -> Result<()> {
        let cache = self.local_dir().join("fillrandom-cache-cold");
        crate::procfs::remove_dir(&cache)?;
        self.progress("readrandom cold (fresh process, empty caches)");
        let e = self.open("fillrandom", "cache-cold")?;
        let r = self.read_random(e.as_ref(), "readrandom_cold");
        let closed = e.close();
        let mut r = r?;
        if !self.v.in_bucket() {
            r.base
                .notes
                .push("the OS page cache was not dropped".to_string());
        }
        self.emit(&r)?;
        closed
    }

    /// `records` puts from one thread in `order`, not durable (the engine's default).
    fn fill(
        &self,
        e: &dyn Engine,
        workload: &'static str,
        mut order: KeyOrder,
    ) -> Result<ObjstoreRecord> {
        let keys = KeyGen::new(KEY_BYTES);
        let mut values = ValueGen::new(self.cfg.value_size, 0.5);
        let mut latency = Latency::default();
        let mut key = Vec::with_capacity(KEY_BYTES);
        let start = Instant::now();
        for _ in 0..self.cfg.records {
            keys.fill(order.next_index(), &mut key);
            let t0 = Instant::now();
            e.put(&key, values.next_value(), false)?;
            latency.record(t0.elapsed());
        }
        let m = Measured::new(workload, 1, start.elapsed(), latency);
        Ok(self.record(e, workload, m, false, None))
    }

    /// `reads` gets of random loaded keys from one thread; every one must find its value.
    fn read_random(&self, e: &dyn Engine, workload: &str) -> Result<ObjstoreRecord> {
        let keys = KeyGen::new(KEY_BYTES);
        let mut order = KeyOrder::random(self.cfg.records, SEED + 1);
        let mut latency = Latency::default();
        let mut key = Vec::with_capacity(KEY_BYTES);
        let mut found = 0;
        let before = counters(e);
        let start = Instant::now();
        for _ in 0..self.cfg.reads {
            keys.fill(order.next_index(), &mut key);
            let t0 = Instant::now();
            let got = e.get(&key)?;
            latency.record(t0.elapsed());
            found += u64::from(got == Some(self.cfg.value_size));
        }
        let m = Measured::new("fillrandom", 1, start.elapsed(), latency);
        let mut r = self.record(e, workload, m, false, Some(found));
        r.storage_counters = counter_deltas(&before, &counters(e));
        r.gets_per_read = before.contains_key(SST_GETS).then(|| {
            let gets = r.storage_counters.get(SST_GETS).copied().unwrap_or(0);
            gets as f64 / self.cfg.reads as f64
        });
        Ok(r)
    }

    fn ycsb(&self, e: &dyn Engine) -> Result<()> {
        let run = CoreRun {
            records: self.cfg.ycsb_records,
            operations: self.cfg.ycsb_records,
            threads: self.cfg.ycsb_threads,
            value_bytes: self.cfg.value_size,
            seed: SEED,
        };
        let dir = self.local_dir().join("ycsb");
        run_core_workloads(e, &dir, run, &mut |mut base: SuiteRecord| {
            base.variant = self.v.label().to_string();
            self.emit(&ObjstoreRecord {
                base,
                gets_per_read: None,
                storage_counters: BTreeMap::new(),
            })
        })
    }

    /// Durable puts (`sync`) for `durable_seconds` by 1, then 16 writers, each on keys of
    /// its own.
    fn durable(&self, e: &dyn Engine) -> Result<()> {
        for writers in DURABLE_WRITERS {
            self.progress(&format!("durable puts, {writers} writers"));
            let span = Duration::from_secs_f64(self.cfg.durable_seconds);
            let (elapsed, outs) = suite::run_threads(writers, |t| {
                durable_writer(e, t as u64, span, self.cfg.value_size)
            })?;
            let mut latency = Latency::default();
            for l in &outs {
                latency.merge(l);
            }
            let m = Measured::new("durable", writers, elapsed, latency);
            let r = self.record(e, &format!("durable_puts_t{writers}"), m, true, None);
            self.emit(&r)?;
        }
        Ok(())
    }

    fn record(
        &self,
        e: &dyn Engine,
        workload: &str,
        m: Measured,
        sync: bool,
        found: Option<u64>,
    ) -> ObjstoreRecord {
        let ops = m.latency.count();
        let seconds = m.elapsed.as_secs_f64();
        let base = SuiteRecord {
            engine: e.name().to_string(),
            workload: workload.to_string(),
            variant: self.v.label().to_string(),
            threads: m.threads,
            records: self.cfg.records,
            ops,
            seconds,
            ops_per_sec: if seconds > 0.0 {
                ops as f64 / seconds
            } else {
                0.0
            },
            p50_us: m.latency.quantile_us(0.50),
            p99_us: m.latency.quantile_us(0.99),
            latency_unit: "op".into(),
            op_latency: BTreeMap::new(),
            rows_per_ms: None,
            key_bytes: KEY_BYTES,
            value_bytes: self.cfg.value_size,
            sync,
            found,
            reads: found.map(|_| ops),
            db_bytes: crate::procfs::dir_size(&self.db_path(m.db)).unwrap_or(0),
            peak_rss_bytes: crate::procfs::peak_rss_bytes(),
            settle_seconds: None,
            notes: Vec::new(),
        };
        ObjstoreRecord {
            base,
            gets_per_read: None,
            storage_counters: BTreeMap::new(),
        }
    }
}

/// What one timed loop measured.
struct Measured {
    /// The database measured (its local size goes in the record).
    db: &'static str,
    threads: usize,
    elapsed: Duration,
    latency: Latency,
}

impl Measured {
    fn new(db: &'static str, threads: usize, elapsed: Duration, latency: Latency) -> Self {
        Measured {
            db,
            threads,
            elapsed,
            latency,
        }
    }
}

/// One writer of the durable stream: sync puts of keys `writer × 10⁹ + i` until `span`
/// has passed.
fn durable_writer(
    e: &dyn Engine,
    writer: u64,
    span: Duration,
    value_size: usize,
) -> Result<Latency> {
    let keys = KeyGen::new(KEY_BYTES);
    let mut values = ValueGen::new(value_size, 0.5).fork(writer as usize);
    let mut latency = Latency::default();
    let mut key = Vec::with_capacity(KEY_BYTES);
    let deadline = Instant::now() + span;
    let mut i = 0;
    while Instant::now() < deadline {
        keys.fill(writer * 1_000_000_000 + i, &mut key);
        let t0 = Instant::now();
        e.put(&key, values.next_value(), true)?;
        latency.record(t0.elapsed());
        i += 1;
    }
    Ok(latency)
}

fn counters(e: &dyn Engine) -> BTreeMap<String, u64> {
    e.stats()
        .storage
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// `after - before` per counter (every counter of `after`).
fn counter_deltas(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.saturating_sub(before.get(k).copied().unwrap_or(0)),
            )
        })
        .collect()
}

/// The comparison table: one row per workload and variant, in the order measured.
pub fn markdown(records: &[ObjstoreRecord], skipped: &[String]) -> String {
    let mut s = String::from(
        "| workload | engine | variant | threads | ops/s | p50 µs | p99 µs | GETs/read |\n\
         |---|---|---|---:|---:|---:|---:|---:|\n",
    );
    let mut workloads: Vec<&str> = Vec::new();
    for r in records {
        if !workloads.contains(&r.base.workload.as_str()) {
            workloads.push(&r.base.workload);
        }
    }
    for w in workloads {
        for r in records.iter().filter(|r| r.base.workload == w) {
            let b = &r.base;
            let gets = r
                .gets_per_read
                .map_or_else(|| "-".into(), |g| format!("{g:.2}"));
            s.push_str(&format!(
                "| {w} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {gets} |\n",
                b.engine, b.variant, b.threads, b.ops_per_sec, b.p50_us, b.p99_us
            ));
        }
    }
    for why in skipped {
        s.push_str(&format!("\nskipped {why}\n"));
    }
    s
}
