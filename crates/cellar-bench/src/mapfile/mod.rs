//! `cellar-bench mapfile`: Hadoop MapFile against HBase (elazarl's benchmark-hadoop-mapfile), with Cellar and the other
//! engines of the registry side by side.
//!
//! Every engine runs in a child process and does the same steps on the same data
//! (peer_keys.rs): insert N records in key order (buffered), look up 1% of them per
//! iteration, one at a time and in buckets, cold (the engine reopened or its cache cleared,
//! and the page cache dropped when this process may), then M durable inserts one at a time
//! into a fresh store. Rust engines run as `cellar-bench mapfile --child NAME ...`; the Java
//! peers (java.rs) as `java ... <Main> --records N --lookup-fraction F --iterations K
//! --buckets 1,B1,B2 --durable-inserts M --dir D --seed S --key-size K --value-size V
//! [--drop-caches] [--keep-data]`. A Rust engine's child sends each measurement as a record
//! ([`crate::child`]), a Java peer prints it as a bare JSON line; both are a [`PeerLine`] to
//! the parent, and anything else a child prints goes to stderr.
//!
//! Layout: this file (the command line, the resolved [`Spec`], the parent that runs every
//! engine's child), `report.rs` (the measurement [`PeerLine`] and the table),
//! `child.rs` (a Rust engine's side of the protocol).

mod child;
mod report;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use clap::Args;

use crate::child::{child_err, collect_peer_lines, collect_records};
use crate::engines;
use crate::error::{BenchError, Result};
use crate::java::{self, JavaPeer};
use crate::keygen::KeyGen;
use crate::peer_keys;
use crate::procfs;

pub use report::PeerLine;

pub const WORKLOAD: &str = "mapfile";
/// Every engine that may run, in table order; each is skipped (and said so) when it is not
/// built. Rust engines resolve by name through the registry (engines::check_available).
pub const DEFAULT_ENGINES: &str = "cellar,rocksdb,lmdb,mapfile,hbase";
pub const DEFAULT_RECORDS: u64 = 10_000_000;
pub const QUICK_RECORDS: u64 = 100_000;
pub const QUICK_DURABLE_INSERTS: u64 = 1_000;

#[derive(Debug, Clone, Args)]
pub struct MapfileArgs {
    /// Engines, comma-separated: Rust engines by registry name (cellar, rocksdb, ...) and the
    /// Java peers mapfile, hbase [default: cellar,rocksdb,lmdb,mapfile,hbase, each skipped
    /// when not built]
    #[arg(long, value_name = "LIST")]
    pub engines: Option<String>,
    /// Records inserted [default: 10000000, or 100000 with --quick]
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,
    /// A small run (100K records, 1000 durable inserts)
    #[arg(long)]
    pub quick: bool,
    /// Lookup iterations (each draws its own keys)
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub iterations: u32,
    /// Fraction of the records looked up per iteration
    #[arg(long, value_name = "F", default_value_t = 0.01)]
    pub lookup_fraction: f64,
    /// Bucket sizes of the batched lookups (single lookups always run)
    #[arg(
        long,
        alias = "buckets",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1000,10"
    )]
    pub bucket: Vec<usize>,
    /// Durable inserts (one write at a time, each synced) [default: 10000, or 1000 with --quick]
    #[arg(long, value_name = "M")]
    pub durable_inserts: Option<u64>,
    /// Working directory: one subdirectory per engine, deleted before use
    #[arg(long, value_name = "DIR", default_value = "bench-data/mapfile")]
    pub dir: PathBuf,
    /// Seed of the lookup sample (the same keys for every engine)
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    #[arg(long, value_name = "BYTES", default_value_t = 16)]
    pub key_size: usize,
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub value_size: usize,
    /// Write one JSON object per measurement here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the Markdown table here
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// The bench/java folder of the Java peers [default: $CELLAR_BENCH_JAVA_DIR, else the
    /// source tree's]
    #[arg(long, value_name = "DIR")]
    pub java_dir: Option<PathBuf>,
    /// Maximum heap of each Java peer (MiB)
    #[arg(long, value_name = "MB", default_value_t = 4096)]
    pub java_heap_mb: u64,
    /// Do not drop the page cache before lookup iterations, even where permitted
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Keep each engine's data after its run
    #[arg(long)]
    pub keep_data: bool,
    /// Internal: run Rust engine NAME and print its result lines
    #[arg(long, hide = true, value_name = "NAME")]
    pub child: Option<String>,
    /// Internal (children): drop the page cache before each lookup iteration
    #[arg(long, hide = true)]
    pub drop_caches: bool,
}

/// The resolved run, as every child gets it.
#[derive(Debug, Clone)]
pub struct Spec {
    pub records: u64,
    pub iterations: u32,
    pub lookup_fraction: f64,
    /// 1 (single lookups) first, then the buckets.
    pub buckets: Vec<usize>,
    pub durable_inserts: u64,
    pub dir: PathBuf,
    pub seed: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub drop_caches: bool,
    pub keep_data: bool,
}

impl Spec {
    pub fn resolve(a: &MapfileArgs) -> Result<Spec> {
        let records = a.records.unwrap_or(if a.quick {
            QUICK_RECORDS
        } else {
            DEFAULT_RECORDS
        });
        if records == 0 {
            return Err(BenchError::Invalid("--records must be at least 1".into()));
        }
        if !KeyGen::fits(a.key_size, records) {
            return Err(BenchError::Invalid(format!(
                "--key-size {} is too small for {records} records (zero-padded decimal)",
                a.key_size
            )));
        }
        if !(a.lookup_fraction > 0.0 && a.lookup_fraction <= 1.0) {
            return Err(BenchError::Invalid(
                "--lookup-fraction must be in (0, 1]".into(),
            ));
        }
        if a.value_size == 0 || a.bucket.contains(&0) {
            return Err(BenchError::Invalid(
                "--value-size and --bucket sizes must be at least 1".into(),
            ));
        }
        let mut buckets = vec![1];
        for &b in &a.bucket {
            if !buckets.contains(&b) {
                buckets.push(b);
            }
        }
        Ok(Spec {
            records,
            iterations: a.iterations,
            lookup_fraction: a.lookup_fraction,
            buckets,
            durable_inserts: a.durable_inserts.unwrap_or(if a.quick {
                QUICK_DURABLE_INSERTS
            } else {
                10_000
            }),
            dir: a.dir.clone(),
            seed: a.seed,
            key_size: a.key_size,
            value_size: a.value_size,
            drop_caches: a.drop_caches,
            keep_data: a.keep_data,
        })
    }

    pub fn lookups_per_iteration(&self) -> u64 {
        peer_keys::lookups_per_iteration(self.records, self.lookup_fraction)
    }

    /// The arguments every child gets (the Java peers' command line).
    pub fn child_args(&self) -> Vec<String> {
        let buckets: Vec<String> = self.buckets.iter().map(|b| b.to_string()).collect();
        let mut v = vec![
            "--records".to_string(),
            self.records.to_string(),
            "--lookup-fraction".into(),
            self.lookup_fraction.to_string(),
            "--iterations".into(),
            self.iterations.to_string(),
            "--buckets".into(),
            buckets.join(","),
            "--durable-inserts".into(),
            self.durable_inserts.to_string(),
            "--dir".into(),
            self.dir.display().to_string(),
            "--seed".into(),
            self.seed.to_string(),
            "--key-size".into(),
            self.key_size.to_string(),
            "--value-size".into(),
            self.value_size.to_string(),
        ];
        if self.drop_caches {
            v.push("--drop-caches".into());
        }
        if self.keep_data {
            v.push("--keep-data".into());
        }
        v
    }
}

/// How an engine of the run is reached.
#[derive(Debug, Clone)]
enum Runner {
    Rust(String),
    Java(JavaPeer),
}

impl Runner {
    fn name(&self) -> &str {
        match self {
            Runner::Rust(n) => n,
            Runner::Java(p) => p.name(),
        }
    }
}

/// The engines to run, and a message for each one left out. Names given explicitly must
/// be known; in the default list unknown names (adapters of other branches) are skipped.
fn resolve_engines(list: Option<&str>, java_dir: &Path) -> Result<(Vec<Runner>, Vec<String>)> {
    let explicit = list.is_some();
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for name in list
        .unwrap_or(DEFAULT_ENGINES)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if let Some(peer) = JavaPeer::from_name(name) {
            match java::find_tool("java")
                .ok_or_else(|| "no `java` on PATH".to_string())
                .and_then(|_| peer.classpath(java_dir))
            {
                Ok(_) => run.push(Runner::Java(peer)),
                Err(why) => skipped.push(format!("{name}: skipped: {why}")),
            }
            continue;
        }
        match engines::check_available(name) {
            Ok(()) => run.push(Runner::Rust(name.to_string())),
            Err(e @ BenchError::UnknownEngine(_)) if explicit => return Err(e),
            Err(BenchError::UnknownEngine(_)) => {
                skipped.push(format!("{name}: skipped: no adapter in this build"));
            }
            Err(e) => skipped.push(format!("{name}: skipped: {e}")),
        }
    }
    if run.is_empty() {
        return Err(BenchError::Invalid(format!(
            "no engine to run ({})",
            skipped.join("; ")
        )));
    }
    Ok((run, skipped))
}

pub fn run(a: &MapfileArgs) -> Result<()> {
    if let Some(name) = &a.child {
        let spec = Spec::resolve(a)?;
        return child::run(name, &spec);
    }
    let mut spec = Spec::resolve(a)?;
    let java_dir = a.java_dir.clone().unwrap_or_else(java::default_java_dir);
    let (runners, skipped) = resolve_engines(a.engines.as_deref(), &java_dir)?;
    for s in &skipped {
        eprintln!("[mapfile] {s}");
    }
    for path in [&a.json, &a.markdown].into_iter().flatten() {
        std::fs::File::create(path).map_err(|e| BenchError::io(path, e))?;
    }
    let cache_note = if a.no_drop_caches {
        "page cache not dropped (--no-drop-caches)".to_string()
    } else {
        match procfs::can_drop_caches() {
            Ok(()) => {
                spec.drop_caches = true;
                "page cache dropped before each lookup iteration".to_string()
            }
            Err(why) => format!("page cache not dropped ({why})"),
        }
    };
    eprintln!(
        "[mapfile] {} records, {} iterations of {} lookups, buckets {:?}, {} durable inserts; {cache_note}",
        spec.records,
        spec.iterations,
        spec.lookups_per_iteration(),
        &spec.buckets[1..],
        spec.durable_inserts
    );
    std::fs::create_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;
    let mut lines = Vec::new();
    let mut failure = None;
    for r in &runners {
        let started = Instant::now();
        eprintln!("[{}] starting", r.name());
        let result = run_child(r, &spec, a, &java_dir, &mut lines);
        eprintln!(
            "[{}] done in {:.1} s",
            r.name(),
            started.elapsed().as_secs_f64()
        );
        if let Err(e) = result {
            eprintln!("[{}] failed: {e}", r.name());
            failure.get_or_insert(e);
        }
    }
    if let Some(path) = &a.json {
        crate::record::write_json_lines(path, "mapfile", &lines)?;
    }
    let order: Vec<String> = runners.iter().map(|r| r.name().to_string()).collect();
    let table = report::markdown(&lines, &order, &spec, &cache_note, &skipped);
    print!("{table}");
    if let Some(path) = &a.markdown {
        std::fs::write(path, &table).map_err(|e| BenchError::io(path, e))?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runs one engine's child (this binary for a Rust engine, a JVM for a Java peer) and
/// collects its result lines into `lines`.
fn run_child(
    r: &Runner,
    spec: &Spec,
    a: &MapfileArgs,
    java_dir: &Path,
    lines: &mut Vec<PeerLine>,
) -> Result<()> {
    let name = r.name();
    let (mut got, result) = match r {
        Runner::Rust(engine) => {
            let exe =
                std::env::current_exe().map_err(|e| BenchError::io("current executable", e))?;
            let mut cmd = Command::new(exe);
            cmd.args([WORKLOAD, "--child", engine]);
            crate::command::pass_to_child(&mut cmd).args(spec.child_args());
            collect_records(&mut cmd, WORKLOAD, name)
        }
        Runner::Java(peer) => {
            let mut cmd = peer
                .command(java_dir, a.java_heap_mb)
                .map_err(|why| child_err(name, why))?;
            crate::command::pass_to_child(&mut cmd).args(spec.child_args());
            collect_peer_lines(&mut cmd, name, |p: &PeerLine| {
                if p.engine == name {
                    Ok(())
                } else {
                    Err(format!("sent a line for engine {:?}", p.engine))
                }
            })
        }
    };
    lines.append(&mut got);
    result
}

#[cfg(test)]
mod tests {
    use super::report::markdown;
    use super::*;

    fn spec() -> Spec {
        Spec {
            records: 1000,
            iterations: 2,
            lookup_fraction: 0.01,
            buckets: vec![1, 10],
            durable_inserts: 5,
            dir: PathBuf::from("/tmp/x"),
            seed: 301,
            key_size: 16,
            value_size: 100,
            drop_caches: false,
            keep_data: false,
        }
    }

    fn line(engine: &str, variant: &str, ops_per_sec: f64) -> PeerLine {
        let mut l = PeerLine::new(engine, variant, &spec());
        l.ops_per_sec = ops_per_sec;
        l
    }

    #[test]
    fn mapfile_table_has_ratios_to_cellar() {
        let engines = vec!["cellar".to_string(), "hbase".to_string()];
        let mut skipped = line("hbase", "insert durable", 0.0);
        skipped.skipped = Some("no".into());
        let lines = vec![
            line("hbase", "lookup single", 50.0),
            line("cellar", "lookup single", 200.0),
            skipped,
        ];
        let md = markdown(&lines, &engines, &spec(), "x", &[]);
        assert!(
            md.contains("| lookup single | cellar | 200 | 1.000 |"),
            "{md}"
        );
        assert!(
            md.contains("| lookup single | hbase | 50 | 0.250 |"),
            "{md}"
        );
        assert!(
            md.contains("| insert durable | hbase | skipped: no |"),
            "{md}"
        );
        let cellar_row = md.find("| lookup single | cellar").unwrap();
        assert!(cellar_row < md.find("| lookup single | hbase").unwrap());
    }

    #[test]
    fn mapfile_child_args_name_every_setting() {
        let args = spec().child_args().join(" ");
        assert_eq!(
            args,
            "--records 1000 --lookup-fraction 0.01 --iterations 2 --buckets 1,10 \
             --durable-inserts 5 --dir /tmp/x --seed 301 --key-size 16 --value-size 100"
        );
    }

    #[test]
    fn mapfile_default_engines_skip_what_is_missing() {
        let empty = tempfile::tempdir().unwrap();
        let (run, skipped) = resolve_engines(None, empty.path()).unwrap();
        assert_eq!(run[0].name(), "cellar");
        assert!(skipped.iter().any(|s| s.starts_with("mapfile: skipped")));
        assert!(skipped.iter().any(|s| s.starts_with("hbase: skipped")));
        assert!(resolve_engines(Some("cellar,nosuch"), empty.path()).is_err());
    }

    #[test]
    fn mapfile_peer_line_parses_a_java_line() {
        let j = r#"{"engine":"mapfile","workload":"mapfile","variant":"insert durable","records":100,"skipped":"why"}"#;
        let l: PeerLine = serde_json::from_str(j).unwrap();
        assert_eq!(l.skipped.as_deref(), Some("why"));
        let j = r#"{"engine":"hbase","workload":"mapfile","variant":"lookup bucket=10","records":100,"ops":20,"seconds":0.5,"ops_per_sec":40.0,"p50_us":1.5,"p99_us":2.0,"latency_unit":"batch","found":20,"iterations_ops_per_sec":[40.0],"cache_mode":"cold","settle_seconds":null,"notes":["n"]}"#;
        let l: PeerLine = serde_json::from_str(j).unwrap();
        assert_eq!((l.ops, l.found, l.notes.len()), (20, Some(20), 1));
    }
}
