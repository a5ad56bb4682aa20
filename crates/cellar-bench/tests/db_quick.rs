//! End-to-end: the real binary, its per-engine child process, the JSON lines and the table.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cellar-bench");

/// Every field a result line must carry (docs/benchmarks.md lists their meaning).
/// The metrics every db record carries.
const REQUIRED: &[&str] = &[
    "engine_options",
    "threads",
    "num",
    "ops",
    "seconds",
    "ops_per_sec",
    "p50_us",
    "p99_us",
    "latency_unit",
    "device_reads_per_op",
    "device_reads_method",
    "io_syscr_per_op",
    "io_read_bytes_per_op",
    "db_bytes",
    "peak_rss_bytes",
    "cache_mode",
    "cache_bytes",
    "resident_index_filter_bytes",
    "found",
    "notes",
];

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run cellar-bench")
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("json output")
        .lines()
        .map(|l| common::record(l, "db"))
        .collect()
}

fn label(r: &Value) -> String {
    let (w, v) = (
        r["workload"].as_str().unwrap(),
        r["variant"].as_str().unwrap(),
    );
    if v.is_empty() {
        w.to_string()
    } else {
        format!("{w}/{v}")
    }
}

fn run_quick(engine: &str, dir: &Path, extra: &[&str]) -> (Output, Vec<Value>) {
    let json = dir.join("out.jsonl");
    let md = dir.join("out.md");
    let db = dir.join("db");
    let mut args = vec![
        "db",
        "--quick",
        "--engines",
        engine,
        "--db-dir",
        db.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(
        out.status.success(),
        "exit {:?}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(md_text.starts_with("| workload | engine | ops/s | p50 µs | p99 µs | reads/op |"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), md_text);
    (out, lines(&json))
}

fn check_all_workloads(records: &[Value], engine: &str) {
    let labels: Vec<String> = records.iter().map(label).collect();
    assert_eq!(
        labels,
        [
            "fillseq",
            "fillrandom",
            "overwrite",
            "fillsync/1",
            "fillsync/16",
            "readrandom",
            "readrandom_uncached",
            "multireadrandom",
            "multireadrandom_uncached",
            "seekrandom",
            "readseq",
            "readreverse",
            "readwhilewriting"
        ]
    );
    for r in records {
        for f in REQUIRED {
            assert!(
                r["metrics"].get(*f).is_some(),
                "{} lacks {f}: {r}",
                label(r)
            );
        }
        assert_eq!(r["engine"], engine);
        assert_eq!(r["metrics"]["num"], 20_000);
        assert!(r["metrics"]["ops"].as_u64().unwrap() > 0, "{r}");
        assert!(r["metrics"]["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            r["metrics"]["p99_us"].as_f64().unwrap() >= r["metrics"]["p50_us"].as_f64().unwrap()
        );
        assert!(r["metrics"]["peak_rss_bytes"].as_u64().unwrap() > 0);
    }
    let by = |l: &str| records.iter().find(|r| label(r) == l).unwrap();
    assert_eq!(by("fillseq")["metrics"]["ops"], 20_000);
    assert_eq!(by("fillsync/16")["metrics"]["threads"], 16);
    assert_eq!(by("fillsync/1")["metrics"]["ops"], 200);
    assert_eq!(by("multireadrandom")["metrics"]["batch"], 100);
    assert_eq!(by("multireadrandom")["metrics"]["ops"], 20_000);
    assert_eq!(by("readrandom")["metrics"]["cache_mode"], "warm");
    let mode = by("readrandom_uncached")["metrics"]["cache_mode"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(mode == "drop_caches" || mode == "direct_reads", "{mode}");
    // After fillrandom + overwrite most keys exist; a full scan sees each once.
    let found = by("readrandom")["metrics"]["found"].as_u64().unwrap();
    assert!(found > 10_000 && found < 20_000, "{found}");
    let entries = by("readseq")["metrics"]["ops"].as_u64().unwrap();
    assert_eq!(
        by("readreverse")["metrics"]["ops"].as_u64().unwrap(),
        entries
    );
    assert!(
        by("readwhilewriting")["metrics"]["writer_ops_per_sec"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn quick_cellar_runs_every_workload() {
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = run_quick("cellar", dir.path(), &[]);
    check_all_workloads(&records, "cellar");
    for r in &records {
        assert_eq!(
            r["metrics"]["device_reads_method"],
            "cellar Stats.device_reads + Stats.mapped_reads"
        );
        assert!(r["metrics"]["resident_index_filter_bytes"].is_u64());
        // The parent's command line, not the child's `--child '{...}'`.
        let cmd = r["command"].as_str().expect("command");
        assert!(cmd.starts_with("cellar-bench db "), "{cmd}");
        assert!(!cmd.contains("--child"), "{cmd}");
    }
    // Databases are removed unless --keep-db.
    assert!(!dir.path().join("db/cellar").exists());
}

#[test]
fn reads_without_a_fill_prefill_untimed() {
    let dir = tempfile::tempdir().unwrap();
    let (out, records) = run_quick(
        "cellar",
        dir.path(),
        &[
            "--num",
            "2000",
            "--benchmarks",
            "readrandom,readseq",
            "--keep-db",
        ],
    );
    assert_eq!(records.len(), 2);
    let notes = records[0]["metrics"]["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("prefilled")),
        "{notes:?}"
    );
    assert!(records[1]["metrics"]["notes"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("prefilled with fillrandom"));
    assert!(dir.path().join("db/cellar").exists());
}

#[test]
fn bad_flags_fail_with_a_message() {
    let out = run(&["db", "--quick", "--engines", "leveldb"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown engine \"leveldb\""), "{err}");

    let out = run(&[
        "db",
        "--quick",
        "--engines",
        "cellar",
        "--benchmarks",
        "fillseq,bogus",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown benchmark \"bogus\""));

    let out = run(&[
        "db",
        "--quick",
        "--engines",
        "cellar",
        "--json",
        "/nonexistent-dir/out.jsonl",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent-dir/out.jsonl"), "{err}");
    assert!(
        !err.contains("[cellar] fillseq"),
        "failed only after running: {err}"
    );

    let out = run(&["db", "--num", "not-a-number"]);
    assert!(!out.status.success());
}

#[cfg(not(feature = "rocksdb"))]
#[test]
fn rocksdb_without_the_feature_says_how_to_build_it() {
    let out = run(&["db", "--quick", "--engines", "cellar,rocksdb"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--features rocksdb"), "{err}");
}

#[cfg(feature = "rocksdb")]
#[test]
fn quick_rocksdb_runs_every_workload_with_the_comparable_options() {
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = run_quick("rocksdb", dir.path(), &["--keep-db"]);
    check_all_workloads(&records, "rocksdb");
    for r in &records {
        assert!(r["metrics"]["resident_index_filter_bytes"].is_null());
        assert_eq!(
            r["metrics"]["engine_options"],
            "index_filter=block_cache_pin_l0 statistics=on"
        );
    }
    let rr = records.iter().find(|r| label(r) == "readrandom").unwrap();
    assert!(rr["metrics"]["device_reads_method"]
        .as_str()
        .unwrap()
        .contains("block.cache.miss"));
    // RocksDB writes the options it really used: check the comparable configuration.
    let db = dir.path().join("db/rocksdb");
    let options = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("OPTIONS-")
        })
        .max()
        .expect("an OPTIONS file");
    let text = std::fs::read_to_string(options).unwrap();
    for want in [
        "compression=kLZ4Compression",
        "filter_policy=bloomfilter",
        "block_size=4096",
        "cache_index_and_filter_blocks=true",
        "pin_l0_filter_and_index_blocks_in_cache=true",
        "write_buffer_size=67108864",
    ] {
        assert!(text.contains(want), "OPTIONS lacks {want}");
    }
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_table_reader_placement_keeps_index_and_filter_out_of_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = run_quick(
        "rocksdb",
        dir.path(),
        &[
            "--num",
            "5000",
            "--benchmarks",
            "fillrandom,readrandom",
            "--rocksdb-index-filter",
            "table-reader",
            "--keep-db",
        ],
    );
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(
            r["metrics"]["engine_options"],
            "index_filter=table_reader statistics=on"
        );
        assert!(
            r["metrics"]["resident_index_filter_bytes"]
                .as_u64()
                .unwrap()
                > 0,
            "{r}"
        );
    }
    let db = dir.path().join("db/rocksdb");
    let options = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("OPTIONS-")
        })
        .max()
        .unwrap();
    let text = std::fs::read_to_string(options).unwrap();
    assert!(text.contains("cache_index_and_filter_blocks=false"));
}
