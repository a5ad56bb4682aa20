//! `cellar-bench growth`: how each cost grows with the data. The `db` suite's workloads run
//! at several sizes, every engine at one size before the next size starts, and each
//! record names its size as its variant ("1M", "50M"). Beside ops/s and latency a record
//! carries what the report plots against size: write amplification, bytes on disk, index
//! and filter memory, peak RSS and device reads per get (docs/benchmarks.md, "growth").

use std::path::PathBuf;

use clap::{Args, Parser};

use crate::db::config::Config;
use crate::db::table::{self, Record};
use crate::db::{self, DbArgs};
use crate::engine::auto_cache_bytes;
use crate::error::{BenchError, Result};

const DEFAULT_SIZES: &str = "1M,10M,50M,200M";
const QUICK_SIZES: &str = "10K,30K";
const DEFAULT_BENCHMARKS: &str =
    "fillrandom,readrandom,readrandom_uncached,seekrandom,readwhilewriting";
/// Reads per read workload when --reads is not given: the size, up to this many.
const MAX_DEFAULT_READS: u64 = 1_000_000;
const MIB: u64 = 1 << 20;

#[derive(Debug, Clone, Args)]
pub struct GrowthArgs {
    /// Sizes in keys, comma-separated, smallest first; K, M and G mean thousand, million
    /// and billion [default: 1M,10M,50M,200M, or 10K,30K with --quick].
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<String>,

    /// Engines, comma-separated (as `cellar-bench db --engines`).
    #[arg(long, value_name = "LIST", default_value = "cellar,rocksdb")]
    pub engines: String,

    /// `db` workloads run at each size, in order.
    #[arg(long, value_name = "LIST", default_value = DEFAULT_BENCHMARKS)]
    pub benchmarks: String,

    /// Operations of each read workload [default: the size, at most 1000000].
    #[arg(long, value_name = "R")]
    pub reads: Option<u64>,

    /// Upper bound of the cached workloads' block cache in MiB [default: half the
    /// machine's RAM]. Below that the cache holds the whole dataset, as in `db`; a size
    /// whose dataset does not fit says so in its records' notes.
    #[arg(long, value_name = "M")]
    pub max_cache_mb: Option<u64>,

    /// Key size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 16)]
    pub key_size: usize,

    /// Value size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub value_size: usize,

    /// Small sizes that finish in seconds (10K,30K) unless --sizes is given.
    #[arg(long)]
    pub quick: bool,

    /// Parent directory of the databases; each is deleted when its size is done.
    #[arg(long, value_name = "DIR", default_value = "bench-data")]
    pub db_dir: PathBuf,

    /// Write the results here, one JSON object per line, appended as each engine finishes
    /// a size (a run stopped part way keeps the sizes it finished).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Also write the Markdown table here.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// `cellar-bench growth`.
pub fn main(args: &GrowthArgs) -> Result<()> {
    let sizes = parse_sizes(args.sizes.as_deref().unwrap_or(if args.quick {
        QUICK_SIZES
    } else {
        DEFAULT_SIZES
    }))?;
    for path in [&args.json, &args.markdown].into_iter().flatten() {
        std::fs::File::create(path).map_err(|e| BenchError::io(path, e))?;
    }
    let largest = sizes.last().copied().unwrap_or(1);
    let base = base_config(args, largest)?;
    let max_cache = match args.max_cache_mb {
        Some(mb) if mb > 0 => mb * MIB,
        Some(_) => {
            return Err(BenchError::Invalid(
                "--max-cache-mb must be positive".into(),
            ))
        }
        None => half_of_ram(),
    };
    let mut all: Vec<Record> = Vec::new();
    for (i, &num) in sizes.iter().enumerate() {
        let cfg = config_for_size(&base, num, args.reads, max_cache);
        let label = size_label(num);
        for engine in &cfg.engines {
            eprintln!(
                "[growth] {label} keys ({} of {}): {engine}",
                i + 1,
                sizes.len()
            );
            let (got, r) = db::run_engine(&cfg, engine);
            let got: Vec<Record> = got
                .into_iter()
                .map(|r| as_growth(r, &label, cfg.cache_bytes, max_cache))
                .collect();
            if let Some(path) = &args.json {
                crate::record::append_json_lines(path, "growth", &got)?;
            }
            all.extend(got);
            // A failed size (a full disk, say) would fail again at the next, larger one.
            r.map_err(|e| BenchError::Invalid(format!("{engine} at {label} keys: {e}")))?;
        }
    }
    let md = table::markdown(&all, &base.engines);
    print!("{md}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &md).map_err(|e| BenchError::io(path, e))?;
    }
    Ok(())
}

/// The `db` configuration the sizes share, resolved (and checked) as `cellar-bench db`
/// would resolve these flags, at the largest size so the key size is checked against it.
fn base_config(args: &GrowthArgs, largest: u64) -> Result<Config> {
    #[derive(Parser)]
    struct DbCli {
        #[command(flatten)]
        db: DbArgs,
    }
    let argv = [
        "db".to_string(),
        format!("--engines={}", args.engines),
        format!("--benchmarks={}", args.benchmarks),
        format!("--num={largest}"),
        format!("--key-size={}", args.key_size),
        format!("--value-size={}", args.value_size),
        format!("--db-dir={}", args.db_dir.display()),
    ];
    let cli = DbCli::try_parse_from(argv)
        .map_err(|e| BenchError::Invalid(format!("growth: {}", e.to_string().trim())))?;
    Config::resolve(&cli.db)
}

fn config_for_size(base: &Config, num: u64, reads: Option<u64>, max_cache: u64) -> Config {
    Config {
        num,
        reads: reads.unwrap_or(num.min(MAX_DEFAULT_READS)),
        cache_bytes: auto_cache_bytes(num, base.key_size, base.value_size).min(max_cache),
        ..base.clone()
    }
}

/// A `db` record as a growth record: its size is its variant (before a thread variant).
fn as_growth(mut r: Record, label: &str, cache_bytes: u64, max_cache: u64) -> Record {
    r.variant = if r.variant.is_empty() {
        label.to_string()
    } else {
        format!("{label} {}", r.variant)
    };
    if cache_bytes == max_cache && r.cache_mode == "warm" {
        r.notes.push(format!(
            "block cache capped at {} MiB (--max-cache-mb): the dataset does not fit",
            max_cache / MIB
        ));
    }
    r
}

fn half_of_ram() -> u64 {
    crate::procfs::mem_total_bytes().map_or(4 << 30, |b| b / 2)
}

/// "1M,10M,200M" → [1000000, 10000000, 200000000]; sizes must grow.
pub fn parse_sizes(list: &str) -> Result<Vec<u64>> {
    let mut out: Vec<u64> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let n = parse_size(item).ok_or_else(|| {
            BenchError::Invalid(format!(
                "--sizes: {item:?} is not a size (a positive count, e.g. 500K, 10M, 1G)"
            ))
        })?;
        if out.last().is_some_and(|&last| n <= last) {
            return Err(BenchError::Invalid(format!(
                "--sizes must grow: {item} comes after {}",
                size_label(out.last().copied().unwrap_or(0))
            )));
        }
        out.push(n);
    }
    if out.is_empty() {
        return Err(BenchError::Invalid("--sizes names no size".into()));
    }
    Ok(out)
}

/// "500K" → 500000; a bare number is a count. `None` for zero or anything else.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, scale) = match s.char_indices().last()? {
        (i, 'K' | 'k') => (&s[..i], 1_000),
        (i, 'M' | 'm') => (&s[..i], 1_000_000),
        (i, 'G' | 'g') => (&s[..i], 1_000_000_000),
        _ => (s, 1),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(scale).filter(|&n| n > 0)
}

/// 200000000 → "200M", 20000 → "20K", 1500 → "1500": the shortest exact form.
pub fn size_label(n: u64) -> String {
    for (scale, suffix) in [(1_000_000_000, "G"), (1_000_000, "M"), (1_000, "K")] {
        if n >= scale && n.is_multiple_of(scale) {
            return format!("{}{suffix}", n / scale);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print_back() {
        assert_eq!(
            parse_sizes("1M, 10M,50M,200M").unwrap(),
            vec![1_000_000, 10_000_000, 50_000_000, 200_000_000]
        );
        assert_eq!(parse_sizes("500k,2500K").unwrap(), vec![500_000, 2_500_000]);
        for n in [
            1_000_000,
            200_000_000,
            20_000,
            1_500,
            1_500_000,
            2_000_000_000,
        ] {
            assert_eq!(parse_size(&size_label(n)), Some(n), "{n}");
        }
        assert_eq!(size_label(1_500_000), "1500K");
    }

    #[test]
    fn bad_sizes_say_what_is_wrong() {
        for (list, says) in [
            ("10M,1M", "must grow"),
            ("1M,1M", "must grow"),
            ("0", "not a size"),
            ("ten", "not a size"),
            ("5T", "not a size"),
            ("", "no size"),
            ("99999999999999G", "not a size"),
        ] {
            let e = parse_sizes(list).unwrap_err().to_string();
            assert!(e.contains(says), "{list:?}: {e}");
        }
    }

    #[test]
    fn a_size_gets_its_own_reads_and_a_capped_cache() {
        let args = GrowthArgs::try_parse_from_for_test(&["--engines", "cellar"]);
        let base = base_config(&args, 200_000_000).unwrap();
        let small = config_for_size(&base, 1_000_000, None, 1 << 30);
        assert_eq!((small.num, small.reads), (1_000_000, 1_000_000));
        assert!(small.cache_bytes < 1 << 30);
        let big = config_for_size(&base, 200_000_000, None, 1 << 30);
        assert_eq!(
            (big.num, big.reads, big.cache_bytes),
            (200_000_000, 1_000_000, 1 << 30)
        );
        let r = as_growth(sample_record(""), "200M", big.cache_bytes, 1 << 30);
        assert_eq!(r.variant, "200M");
        assert!(
            r.notes.iter().any(|n| n.contains("capped")),
            "{:?}",
            r.notes
        );
        assert_eq!(as_growth(sample_record("t4"), "1M", 1, 2).variant, "1M t4");
    }

    #[test]
    fn a_key_size_too_small_for_the_largest_size_is_refused() {
        let args = GrowthArgs::try_parse_from_for_test(&["--engines", "cellar", "--key-size", "6"]);
        let e = base_config(&args, 10_000_000).unwrap_err().to_string();
        assert!(e.contains("--key-size 6 is too small"), "{e}");
    }

    impl GrowthArgs {
        fn try_parse_from_for_test(flags: &[&str]) -> GrowthArgs {
            #[derive(Parser)]
            struct Cli {
                #[command(flatten)]
                g: GrowthArgs,
            }
            let argv = std::iter::once("growth").chain(flags.iter().copied());
            Cli::try_parse_from(argv).expect("flags").g
        }
    }

    fn sample_record(variant: &str) -> Record {
        let json = serde_json::json!({
            "engine": "cellar", "engine_options": "", "workload": "readrandom",
            "variant": variant, "threads": 1, "num": 1, "ops": 1, "seconds": 1.0,
            "ops_per_sec": 1.0, "p50_us": 1.0, "p99_us": 1.0, "latency_unit": "op",
            "device_reads_per_op": null, "device_reads_method": "", "io_syscr_per_op": null,
            "io_read_bytes_per_op": null, "db_bytes": 1, "peak_rss_bytes": null,
            "peak_rss_scope": "", "cache_mode": "warm", "cache_bytes": 1,
            "resident_index_filter_bytes": null, "found": null, "key_size": 16,
            "value_size": 100, "batch": null, "writer_ops_per_sec": null,
            "stall_micros": null, "wal_syncs": null, "settle_seconds": null, "notes": []
        });
        serde_json::from_value(json).expect("a db record")
    }
}
