//! `cellar-bench objstore`: databases in S3-compatible object storage, side by side in one
//! run against one SeaweedFS (started here, or `--s3-endpoint`).
//!
//! Variants (the record's `variant`): Cellar on local disk (`local`), Cellar in the bucket
//! with its WAL on local disk (`wal-local`) or in the bucket (`wal-object`), and SlateDB in
//! the bucket (`bucket`). Per variant, one child process loads and measures everything but
//! the cold reads (fillseq, fillrandom, readrandom warm, YCSB A–F, durable puts with 1 and
//! 16 writers, each on a database of its own), then a fresh child process reopens the
//! fillrandom database with empty caches for readrandom cold. See docs/benchmarks.md,
//! "objstore", for the targets these numbers are held to.

mod phases;
mod seaweed;

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::engines;
use crate::error::{BenchError, Result};
use crate::suite::SuiteRecord;

pub use seaweed::find_weed;

const SUITE: &str = "objstore";
const MIB: u64 = 1 << 20;

#[derive(Debug, Clone, Args)]
pub struct ObjstoreArgs {
    /// Variants, comma-separated: cellar-local, cellar-wal-local, cellar-wal-object,
    /// slatedb; "cellar" for Cellar's three, "all" for every one. slatedb needs a binary
    /// built with `--features slatedb`; without it it is skipped, with a note.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub engines: String,

    /// Records loaded by fillseq and fillrandom [default: 1000000, 20000 with --quick].
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,

    /// Bytes per value (keys are 16 bytes).
    #[arg(long, value_name = "BYTES", default_value_t = 400)]
    pub value_size: usize,

    /// Random point reads, warm and cold [default: 100000, 2000 with --quick].
    #[arg(long, value_name = "N")]
    pub reads: Option<u64>,

    /// YCSB records and operations per workload [default: 100000, 2000 with --quick].
    #[arg(long, value_name = "N")]
    pub ycsb_records: Option<u64>,

    /// YCSB client threads.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub ycsb_threads: usize,

    /// Seconds of each durable-write stream (1 and 16 writers) [default: 10, 2 with
    /// --quick].
    #[arg(long, value_name = "S")]
    pub durable_seconds: Option<f64>,

    /// Small run that finishes in a couple of minutes.
    #[arg(long)]
    pub quick: bool,

    /// Write the results here, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// An S3 endpoint to use (its bucket --bucket must exist; credentials from AWS_*);
    /// without it the suite starts `weed mini` on loopback ($WEED_BIN, PATH or
    /// target/py-venv/bin/weed) and stops it at the end.
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,

    /// The bucket; each run writes under a prefix of its own.
    #[arg(long, value_name = "NAME", default_value = "cellar-bench")]
    pub bucket: String,

    /// Local directory of Cellar's local-disk databases and of every variant's caches
    /// (deleted before use).
    #[arg(long, value_name = "DIR", default_value = "bench-data/objstore")]
    pub db_dir: PathBuf,

    /// Memtable size in MiB [default: 64, 4 with --quick].
    #[arg(long, value_name = "M")]
    pub memtable_mb: Option<u64>,

    /// Internal: run as the child process of one variant with this JSON config.
    #[arg(long, hide = true, value_name = "JSON")]
    pub child: Option<String>,
}

/// One side of the comparison: which engine, and where its database lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    CellarLocal,
    CellarWalLocal,
    CellarWalObject,
    SlateDb,
}

impl Variant {
    pub const ALL: [Variant; 4] = [
        Variant::CellarLocal,
        Variant::CellarWalLocal,
        Variant::CellarWalObject,
        Variant::SlateDb,
    ];

    /// The name `--engines` takes.
    pub fn flag(self) -> &'static str {
        match self {
            Variant::CellarLocal => "cellar-local",
            Variant::CellarWalLocal => "cellar-wal-local",
            Variant::CellarWalObject => "cellar-wal-object",
            Variant::SlateDb => "slatedb",
        }
    }

    pub fn engine(self) -> &'static str {
        match self {
            Variant::SlateDb => "slatedb",
            _ => "cellar",
        }
    }

    /// The record's `variant`.
    pub fn label(self) -> &'static str {
        match self {
            Variant::CellarLocal => "local",
            Variant::CellarWalLocal => "wal-local",
            Variant::CellarWalObject => "wal-object",
            Variant::SlateDb => "bucket",
        }
    }

    pub fn in_bucket(self) -> bool {
        self != Variant::CellarLocal
    }
}

/// The variants `--engines` names, in run order, and the ones skipped (not compiled in).
pub fn select_variants(list: &str) -> Result<(Vec<Variant>, Vec<String>)> {
    let mut wanted = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let group: Vec<Variant> = match name {
            "all" => Variant::ALL.to_vec(),
            "cellar" => Variant::ALL[..3].to_vec(),
            _ => match Variant::ALL.iter().find(|v| v.flag() == name) {
                Some(v) => vec![*v],
                None => {
                    return Err(BenchError::Invalid(format!(
                        "unknown objstore variant {name:?} (known: cellar-local, \
                         cellar-wal-local, cellar-wal-object, slatedb, cellar, all)"
                    )))
                }
            },
        };
        wanted.extend(group);
    }
    let mut run: Vec<Variant> = Vec::new();
    let mut skipped = Vec::new();
    for v in Variant::ALL.iter().copied().filter(|v| wanted.contains(v)) {
        if engines::is_built(v.engine()) {
            run.push(v);
        } else {
            skipped.push(format!(
                "{}: not compiled into this binary (rebuild with `--features {}`)",
                v.flag(),
                v.engine()
            ));
        }
    }
    if run.is_empty() {
        return Err(BenchError::Invalid(format!(
            "--engines {list:?} names no variant that can run here"
        )));
    }
    Ok((run, skipped))
}

/// The resolved run; a child gets it as JSON with one variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjstoreConfig {
    pub variants: Vec<Variant>,
    pub records: u64,
    pub value_size: usize,
    pub reads: u64,
    pub ycsb_records: u64,
    pub ycsb_threads: usize,
    pub durable_seconds: f64,
    pub memtable_bytes: u64,
    pub db_dir: PathBuf,
    /// The bucket and this run's prefix in it: `s3://<bucket>/<run prefix>`.
    pub bucket_url: String,
    pub endpoint: String,
    /// In a child: which phase it runs.
    pub phase: Phase,
}

/// What one child process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Everything but the cold reads.
    Main,
    /// readrandom on the fillrandom database, reopened with empty caches.
    Cold,
}

impl ObjstoreConfig {
    /// The config of `a` (the endpoint to be filled in once the server runs), and the
    /// variants skipped.
    pub fn resolve(a: &ObjstoreArgs) -> Result<(ObjstoreConfig, Vec<String>)> {
        let (variants, skipped) = select_variants(&a.engines)?;
        let pick = |flag: Option<u64>, full: u64, quick: u64| {
            flag.unwrap_or(if a.quick { quick } else { full })
        };
        let records = pick(a.records, 1_000_000, 20_000);
        let durable_seconds = a
            .durable_seconds
            .unwrap_or(if a.quick { 2.0 } else { 10.0 });
        if records < 2 || a.value_size == 0 || a.ycsb_threads == 0 || durable_seconds <= 0.0 {
            return Err(BenchError::Invalid(
                "--records must be at least 2; --value-size, --ycsb-threads and \
                 --durable-seconds above 0"
                    .into(),
            ));
        }
        let run_prefix = format!("objstore-{}-{}", std::process::id(), unix_seconds());
        let cfg = ObjstoreConfig {
            variants,
            records,
            value_size: a.value_size,
            reads: pick(a.reads, 100_000, 2_000).max(1),
            ycsb_records: pick(a.ycsb_records, 100_000, 2_000).max(2),
            ycsb_threads: a.ycsb_threads,
            durable_seconds,
            memtable_bytes: pick(a.memtable_mb, 64, 4).max(1) * MIB,
            db_dir: a.db_dir.clone(),
            bucket_url: format!("s3://{}/{run_prefix}", a.bucket),
            endpoint: a.s3_endpoint.clone().unwrap_or_default(),
            phase: Phase::Main,
        };
        Ok((cfg, skipped))
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One measurement: a [`SuiteRecord`] and, for reads from a bucket, the requests they made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjstoreRecord {
    #[serde(flatten)]
    pub base: SuiteRecord,
    /// Cellar in a bucket: GET requests for SST data per point read
    /// (`object_get_requests_sst`), `None` where the engine does not count them.
    pub gets_per_read: Option<f64>,
    /// Cellar: how its storage counters (`Stats::storage`) moved during the measurement.
    pub storage_counters: std::collections::BTreeMap<String, u64>,
}

pub fn run(a: &ObjstoreArgs) -> Result<()> {
    if let Some(json) = &a.child {
        let cfg: ObjstoreConfig = serde_json::from_str(json)
            .map_err(|e| BenchError::Invalid(format!("--child config: {e}")))?;
        return phases::child_main(&cfg);
    }
    let (mut cfg, skipped) = ObjstoreConfig::resolve(a)?;
    crate::suite::check_writable(a.json.as_deref())?;
    for why in &skipped {
        eprintln!("[objstore] skipped {why}");
    }
    // Held until the end of the run: dropping it stops the server, on errors too.
    let _server = if cfg.endpoint.is_empty() && cfg.variants.iter().any(|v| v.in_bucket()) {
        let weed = find_weed().ok_or_else(|| {
            BenchError::Invalid(
                "no `weed` found ($WEED_BIN, PATH, target/py-venv/bin/weed): install \
                 SeaweedFS or pass --s3-endpoint"
                    .into(),
            )
        })?;
        eprintln!("[objstore] starting {} mini", weed.display());
        let server = seaweed::Seaweed::start(&weed, &a.bucket)?;
        cfg.endpoint = server.endpoint.clone();
        Some(server)
    } else {
        None
    };
    let (records, failure) = phases::run_variants(&cfg);
    if let Some(path) = &a.json {
        crate::record::write_json_lines(path, SUITE, &records)?;
    }
    print!("{}", phases::markdown(&records, &skipped));
    failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests;
