//! The resolved, validated run configuration. The parent builds it from the command line;
//! each per-engine child receives it as JSON (`--child`), so both sides agree exactly.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::db::workloads::{self, Workload};
use crate::db::DbArgs;
use crate::engine::auto_cache_bytes;
use crate::engines;
use crate::error::{BenchError, Result};
use crate::keygen::KeyGen;

pub const DEFAULT_NUM: u64 = 1_000_000;
pub const QUICK_NUM: u64 = 20_000;
const MIB: u64 = 1 << 20;

/// What readrandom_uncached does to keep reads off the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum UncachedMode {
    /// Drop the page cache; fall back to O_DIRECT reads when that is not permitted.
    Auto,
    /// Drop the page cache (sync + /proc/sys/vm/drop_caches); fail if not permitted.
    DropCaches,
    /// Open the database with O_DIRECT reads.
    Direct,
}

/// Where RocksDB keeps index and filter blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum IndexFilter {
    /// Held by the table readers outside the block cache, as Cellar keeps its own
    /// (cache_index_and_filter_blocks = false, RocksDB's default).
    TableReader,
    /// Partitioned (two-level index, partitioned filters), charged to the block cache at
    /// high priority with the top level and level 0's pinned: RocksDB's configuration for
    /// a bounded memory budget.
    Partitioned,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub engines: Vec<String>,
    pub workloads: Vec<Workload>,
    pub num: u64,
    pub reads: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub compression_ratio: f64,
    /// Block cache for every workload but readrandom_uncached.
    pub cache_bytes: u64,
    /// Block cache for readrandom_uncached; `None`: a quarter of the database size.
    pub uncached_cache_bytes: Option<u64>,
    pub uncached_mode: UncachedMode,
    pub memtable_bytes: u64,
    pub threads: usize,
    pub batch: usize,
    pub write_batch: usize,
    pub sync_ops: u64,
    pub sync_threads: Vec<usize>,
    pub seek_nexts: usize,
    pub seed: u64,
    pub compact: bool,
    pub db_dir: PathBuf,
    pub keep_db: bool,
    pub use_existing_db: bool,
    pub rocksdb_statistics: bool,
    pub rocksdb_index_filter: IndexFilter,
}

fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

pub fn parse_workloads(list: &str) -> Result<Vec<Workload>> {
    let mut out = Vec::new();
    for name in split_list(list) {
        if name == "all" {
            out.extend_from_slice(workloads::ALL);
            continue;
        }
        let w = Workload::parse(name).ok_or_else(|| {
            let known: Vec<&str> = workloads::ALL.iter().map(|w| w.name()).collect();
            BenchError::UnknownWorkload(name.to_string(), known.join(", "))
        })?;
        out.push(w);
    }
    if out.is_empty() {
        return Err(BenchError::Invalid(
            "--benchmarks names no benchmark".into(),
        ));
    }
    Ok(out)
}

fn positive(name: &str, v: u64) -> Result<()> {
    if v == 0 {
        return Err(BenchError::Invalid(format!("{name} must be at least 1")));
    }
    Ok(())
}

impl Config {
    pub fn resolve(raw: &DbArgs) -> Result<Config> {
        let engines: Vec<String> = split_list(&raw.engines).map(String::from).collect();
        if engines.is_empty() {
            return Err(BenchError::Invalid("--engines names no engine".into()));
        }
        for e in &engines {
            engines::check_available(e)?;
        }
        let workloads = parse_workloads(&raw.benchmarks)?;
        let num = raw
            .num
            .unwrap_or(if raw.quick { QUICK_NUM } else { DEFAULT_NUM });
        positive("--num", num)?;
        let reads = raw.reads.unwrap_or(num);
        positive("--reads", reads)?;
        positive("--value-size", raw.value_size as u64)?;
        positive("--threads", raw.threads as u64)?;
        positive("--batch", raw.batch as u64)?;
        positive("--write-batch", raw.write_batch as u64)?;
        positive("--memtable-mb", raw.memtable_mb)?;
        if !KeyGen::fits(raw.key_size, num) {
            return Err(BenchError::Invalid(format!(
                "--key-size {} is too small for {num} keys (zero-padded decimal)",
                raw.key_size
            )));
        }
        if !(raw.compression_ratio > 0.0 && raw.compression_ratio <= 1.0) {
            return Err(BenchError::Invalid(format!(
                "--compression-ratio must be in (0, 1], got {}",
                raw.compression_ratio
            )));
        }
        if raw.sync_threads.is_empty() || raw.sync_threads.contains(&0) {
            return Err(BenchError::Invalid(
                "--sync-threads needs one or more thread counts, each at least 1".into(),
            ));
        }
        let max_sync_threads = raw.sync_threads.iter().copied().max().unwrap_or(1) as u64;
        let sync_ops = raw
            .sync_ops
            .unwrap_or_else(|| (num / 100).max(10 * max_sync_threads));
        positive("--sync-ops", sync_ops)?;
        let cache_bytes = match raw.cache_mb {
            Some(mb) => {
                positive("--cache-mb", mb)?;
                mb * MIB
            }
            None => auto_cache_bytes(num, raw.key_size, raw.value_size),
        };
        let uncached_cache_bytes = match raw.uncached_cache_mb {
            Some(mb) if mb > 0.0 => Some((mb * MIB as f64) as u64),
            Some(_) => {
                return Err(BenchError::Invalid(
                    "--uncached-cache-mb must be positive".into(),
                ))
            }
            None => None,
        };
        Ok(Config {
            engines,
            workloads,
            num,
            reads,
            key_size: raw.key_size,
            value_size: raw.value_size,
            compression_ratio: raw.compression_ratio,
            cache_bytes,
            uncached_cache_bytes,
            uncached_mode: raw.uncached_mode,
            memtable_bytes: raw.memtable_mb * MIB,
            threads: raw.threads,
            batch: raw.batch,
            write_batch: raw.write_batch,
            sync_ops,
            sync_threads: raw.sync_threads.clone(),
            seek_nexts: raw.seek_nexts,
            seed: raw.seed,
            compact: raw.compact,
            db_dir: raw.db_dir.clone(),
            keep_db: raw.keep_db || raw.use_existing_db,
            use_existing_db: raw.use_existing_db,
            rocksdb_statistics: !raw.rocksdb_no_statistics,
            rocksdb_index_filter: raw.rocksdb_index_filter,
        })
    }

    /// The same run restricted to one engine (what a child process gets).
    pub fn for_engine(&self, engine: &str) -> Config {
        Config {
            engines: vec![engine.to_string()],
            ..self.clone()
        }
    }

    pub fn main_db_dir(&self, engine: &str) -> PathBuf {
        self.db_dir.join(engine)
    }

    pub fn sync_db_dir(&self, engine: &str) -> PathBuf {
        self.db_dir.join(format!("{engine}-sync"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Config> {
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            db: DbArgs,
        }
        let cli = Cli::try_parse_from(["db"].iter().chain(args)).expect("clap accepts the flags");
        Config::resolve(&cli.db)
    }

    #[test]
    fn quick_defaults() {
        let c = parse(&["--quick", "--engines", "cellar"]).unwrap();
        assert_eq!(c.num, QUICK_NUM);
        assert_eq!(c.reads, QUICK_NUM);
        assert_eq!(c.sync_ops, 200);
        assert_eq!(c.workloads, workloads::ALL);
        assert!(c.cache_bytes >= QUICK_NUM * 116);
        let full = parse(&["--engines", "cellar"]).unwrap();
        assert_eq!(full.num, DEFAULT_NUM);
        assert_eq!(full.sync_ops, 10_000);
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            &["--engines", "leveldb"][..],
            &["--engines", "cellar", "--benchmarks", "fillseq,nope"],
            &["--engines", "cellar", "--num", "0"],
            &["--engines", "cellar", "--key-size", "4", "--num", "100000"],
            &["--engines", "cellar", "--compression-ratio", "0"],
            &["--engines", "cellar", "--threads", "0"],
            &["--engines", ""],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rocksdb_needs_the_feature() {
        let r = parse(&["--engines", "cellar,rocksdb"]);
        assert_eq!(r.is_ok(), cfg!(feature = "rocksdb"));
    }

    #[test]
    fn round_trips_through_json() {
        let c = parse(&["--engines", "cellar", "--cache-mb", "3"]).unwrap();
        assert_eq!(c.cache_bytes, 3 * MIB);
        let back: Config = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn auto_cache_holds_the_dataset() {
        assert_eq!(auto_cache_bytes(0, 16, 100), 8 * MIB);
        let b = auto_cache_bytes(1_000_000, 16, 100);
        assert!(b > 116_000_000 && b.is_multiple_of(MIB));
    }
}
