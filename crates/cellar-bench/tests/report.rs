//! `cellar-bench report`: RESULTS.md and plots from small fixture JSON lines of every
//! workload subcommand (and an unknown one, and malformed lines).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DB: &str = r#"{"suite":"db","workload":"fillrandom","engine":"cellar","variant":"","metrics":{"engine_options":"","ops_per_sec":100000.0,"p50_us":2.5,"p99_us":7.0,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"db","workload":"fillrandom","engine":"rocksdb","variant":"","metrics":{"engine_options":"index_filter=table_reader","ops_per_sec":150000.0,"p50_us":5.0,"p99_us":11.0,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"db","workload":"fillsync","engine":"cellar","variant":"1","metrics":{"engine_options":"","ops_per_sec":8000.0,"p50_us":120.0,"p99_us":180.0,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"db","workload":"fillsync","engine":"rocksdb","variant":"1","metrics":{"engine_options":"index_filter=table_reader","ops_per_sec":4000.0,"p50_us":130.0,"p99_us":190.0,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"db","workload":"fillsync","engine":"cellar","variant":"16","metrics":{"engine_options":"","ops_per_sec":45000.0,"p50_us":340.0,"p99_us":600.0,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"db","workload":"readrandom","engine":"rocksdb","variant":"","metrics":{"engine_options":"index_filter=table_reader","ops_per_sec":180000.0,"p50_us":4.0,"p99_us":13.0,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
"#;

const MAPFILE: &str = r#"{"suite":"mapfile","workload":"mapfile","engine":"cellar","variant":"lookup single","metrics":{"ops_per_sec":17000.0,"p50_us":27.0,"p99_us":418.0,"latency_unit":"op","run":1},"command":"","commit":"abc1234","date":"2026-01-02","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"cellar","variant":"lookup single","metrics":{"ops_per_sec":20000.0,"p50_us":25.0,"p99_us":400.0,"latency_unit":"op","run":2},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"cellar","variant":"lookup single","metrics":{"ops_per_sec":15000.0,"p50_us":30.0,"p99_us":450.0,"latency_unit":"op","run":3},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"mapfile","variant":"lookup single","metrics":{"ops_per_sec":15500.0,"p50_us":24.0,"p99_us":489.0,"latency_unit":"op"},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"cellar","variant":"lookup bucket=1000","metrics":{"ops_per_sec":59000.0,"p50_us":15000.0,"p99_us":42000.0,"latency_unit":"batch"},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"mapfile","variant":"lookup bucket=1000","metrics":{"ops_per_sec":33000.0,"p50_us":22000.0,"p99_us":106000.0,"latency_unit":"batch"},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"cellar","variant":"lookup bucket=10","metrics":{"ops_per_sec":16800.0,"p50_us":507.0,"p99_us":3010.0,"latency_unit":"batch"},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"mapfile","variant":"lookup bucket=10","metrics":{"ops_per_sec":19600.0,"p50_us":227.0,"p99_us":2706.0,"latency_unit":"batch"},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"cellar","variant":"insert durable","metrics":{"ops_per_sec":3666.0,"p50_us":230.0,"p99_us":2195.0,"latency_unit":"op"},"command":"","commit":"abc1234","date":"","machine":"test machine"}
{"suite":"mapfile","workload":"mapfile","engine":"mapfile","variant":"insert durable","metrics":{"ops":0,"ops_per_sec":0.0,"skipped":"MapFile has no per-write durability"},"command":"","commit":"abc1234","date":"","machine":"test machine"}
"#;

const YCSB: &str = r#"{"suite":"ycsb","workload":"ycsb_a","engine":"cellar","variant":"t1","metrics":{"threads":1,"ops_per_sec":185000.0,"p50_us":3.0,"p99_us":9.6,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"ycsb","workload":"ycsb_a","engine":"lmdb","variant":"t1","metrics":{"threads":1,"ops_per_sec":182000.0,"p50_us":2.7,"p99_us":11.1,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"ycsb","workload":"ycsb_c","engine":"cellar","variant":"t1","metrics":{"threads":1,"ops_per_sec":395000.0,"p50_us":2.1,"p99_us":8.9,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"ycsb","workload":"ycsb_c","engine":"lmdb","variant":"t1","metrics":{"threads":1,"ops_per_sec":798000.0,"p50_us":1.1,"p99_us":2.2,"latency_unit":"op"},"command":"","commit":"","date":"","machine":"test machine"}
"#;

const IMPORT: &str = r#"{"suite":"import","workload":"import","engine":"cellar","variant":"durable/w1","metrics":{"threads":1,"ops_per_sec":8000.0,"rows_per_ms":8.0,"p50_us":124.0,"p99_us":169.0,"latency_unit":"write call"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"import","workload":"import","engine":"fjall","variant":"durable/w1","metrics":{"threads":1,"ops_per_sec":12000.0,"rows_per_ms":12.0,"p50_us":84.0,"p99_us":163.0,"latency_unit":"write call"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"import","workload":"import","engine":"cellar","variant":"durable/w2","metrics":{"threads":2,"ops_per_sec":16000.0,"rows_per_ms":16.0,"p50_us":130.0,"p99_us":200.0,"latency_unit":"write call"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"import","workload":"import","engine":"fjall","variant":"durable/w2","metrics":{"threads":2,"ops_per_sec":10000.0,"rows_per_ms":10.0,"p50_us":160.0,"p99_us":300.0,"latency_unit":"write call"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"import","workload":"import","engine":"cellar","variant":"buffered/w1","metrics":{"threads":1,"ops_per_sec":718000.0,"rows_per_ms":718.0,"p50_us":318000.0,"p99_us":385000.0,"latency_unit":"write call"},"command":"","commit":"","date":"","machine":"test machine"}
{"suite":"import","workload":"import","engine":"fjall","variant":"buffered/w1","metrics":{"threads":1,"ops_per_sec":519000.0,"p50_us":417000.0,"p99_us":687000.0,"latency_unit":"write call"},"command":"","commit":"","date":"","machine":"test machine"}
"#;

const HYPERTABLE: &str = r#"{"suite":"hypertable","workload":"hypertable","engine":"cellar","variant":"load 4 concurrent (a-d)","metrics":{"cells":32963208,"ops_per_sec":2526335.4,"seconds":13.05,"note":"sum of per-job rates"},"command":"cellar-bench hypertable --dir d","commit":"","date":"","machine":"test machine"}
{"suite":"hypertable","workload":"hypertable","engine":"cellar","variant":"row lookups","metrics":{"cells":10000,"ops_per_sec":475.0,"seconds":21.05,"note":"rows/s"},"command":"cellar-bench hypertable --dir d","commit":"","date":"","machine":"test machine"}
"#;

const DFSIO: &str = r#"{"suite":"dfsio","workload":"dfsio","engine":"cellar","variant":"write","metrics":{"mb_per_sec":120.0,"ops_per_sec":120.0,"average_io_rate_mb_per_sec":121.5,"io_rate_std_dev":3.25,"exec_time_sec":8.5,"seconds":8.5,"aggregate_mb_per_sec":960.0,"fio_mb_per_sec":1200.0,"p50_us":900.0,"p99_us":4000.0,"latency_unit":"write call of 8388608 B"},"command":"cellar-bench dfsio --files 8 --size 1GB","commit":"","date":"","machine":"test machine"}
{"suite":"dfsio","workload":"dfsio","engine":"posix","variant":"write","metrics":{"mb_per_sec":126.0,"ops_per_sec":126.0,"average_io_rate_mb_per_sec":127.0,"io_rate_std_dev":2.0,"seconds":8.1,"aggregate_mb_per_sec":1000.0,"p50_us":880.0,"p99_us":3900.0,"latency_unit":"write call of 8388608 B"},"command":"cellar-bench dfsio --files 8 --size 1GB","commit":"","date":"","machine":"test machine"}
{"suite":"dfsio","workload":"dfsio","engine":"cellar","variant":"read","metrics":{"mb_per_sec":200.0,"ops_per_sec":200.0,"average_io_rate_mb_per_sec":201.0,"io_rate_std_dev":1.0,"seconds":5.0,"aggregate_mb_per_sec":1600.0,"p50_us":500.0,"p99_us":900.0,"latency_unit":"read call of 8388608 B"},"command":"cellar-bench dfsio --files 8 --size 1GB","commit":"","date":"","machine":"test machine"}
"#;

/// Two sizes, the larger first (the report orders sizes by keys, not as text).
const GROWTH: &str = r#"{"suite":"growth","workload":"fillrandom","engine":"cellar","variant":"10M","metrics":{"engine_options":"","ops_per_sec":300000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":10000000,"key_size":16,"value_size":100,"db_bytes":522000000,"resident_index_filter_bytes":19000000,"peak_rss_bytes":300000000,"write_amp":2.5},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
{"suite":"growth","workload":"readrandom_uncached","engine":"cellar","variant":"10M","metrics":{"engine_options":"","ops_per_sec":15000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":10000000,"key_size":16,"value_size":100,"db_bytes":522000000,"resident_index_filter_bytes":19000000,"peak_rss_bytes":300000000,"device_reads_per_op":1.02},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
{"suite":"growth","workload":"fillrandom","engine":"rocksdb","variant":"10M","metrics":{"engine_options":"","ops_per_sec":200000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":10000000,"key_size":16,"value_size":100,"db_bytes":522000000,"resident_index_filter_bytes":19000000,"peak_rss_bytes":300000000,"write_amp":4.0},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
{"suite":"growth","workload":"readrandom_uncached","engine":"rocksdb","variant":"10M","metrics":{"engine_options":"","ops_per_sec":10000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":10000000,"key_size":16,"value_size":100,"db_bytes":522000000,"resident_index_filter_bytes":19000000,"peak_rss_bytes":300000000,"device_reads_per_op":1.02},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
{"suite":"growth","workload":"fillrandom","engine":"cellar","variant":"500K","metrics":{"engine_options":"","ops_per_sec":300000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":500000,"key_size":16,"value_size":100,"db_bytes":26100000,"resident_index_filter_bytes":950000,"peak_rss_bytes":15000000,"write_amp":2.5},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
{"suite":"growth","workload":"readrandom_uncached","engine":"cellar","variant":"500K","metrics":{"engine_options":"","ops_per_sec":15000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":500000,"key_size":16,"value_size":100,"db_bytes":26100000,"resident_index_filter_bytes":950000,"peak_rss_bytes":15000000,"device_reads_per_op":1.02},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
{"suite":"growth","workload":"fillrandom","engine":"rocksdb","variant":"500K","metrics":{"engine_options":"","ops_per_sec":200000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":500000,"key_size":16,"value_size":100,"db_bytes":26100000,"resident_index_filter_bytes":950000,"peak_rss_bytes":15000000,"write_amp":4.0},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
{"suite":"growth","workload":"readrandom_uncached","engine":"rocksdb","variant":"500K","metrics":{"engine_options":"","ops_per_sec":10000.0,"p50_us":2.0,"p99_us":9.0,"latency_unit":"op","num":500000,"key_size":16,"value_size":100,"db_bytes":26100000,"resident_index_filter_bytes":950000,"peak_rss_bytes":15000000,"device_reads_per_op":1.02},"command":"cellar-bench growth","commit":"","date":"","machine":"test machine"}
"#;

/// An unknown suite with its metrics missing, a cut-off line (2), a non-object (3), a
/// line without an engine (5), a blank line (4) and metrics of the wrong type (6).
const ODD: &str = r#"{"suite":"mystery","workload":"mystery","engine":"cellar","variant":"v","metrics":{},"command":"","commit":"","date":"","machine":""}
{"suite":"mystery","workload":"myst
[1,2,3]

{"suite":"mystery","workload":"mystery","variant":"","metrics":{"ops_per_sec":5},"command":"","commit":"","date":"","machine":""}
{"suite":"mystery","workload":"mystery","engine":"other","variant":"v","metrics":{"ops_per_sec":"fast","p99_us":3},"command":"","commit":"","date":"","machine":""}
"#;

/// Writes the fixtures into DIR/in and returns their paths.
fn fixtures(dir: &Path) -> Vec<PathBuf> {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    [
        ("db.jsonl", DB),
        ("mapfile.jsonl", MAPFILE),
        ("ycsb.jsonl", YCSB),
        ("import.jsonl", IMPORT),
        ("hypertable.jsonl", HYPERTABLE),
        ("dfsio.jsonl", DFSIO),
        ("growth.jsonl", GROWTH),
        ("odd.jsonl", ODD),
    ]
    .iter()
    .map(|(name, text)| {
        let path = input.join(name);
        std::fs::write(&path, text).unwrap();
        path
    })
    .collect()
}

fn report(out_dir: &Path, inputs: &[PathBuf], extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cellar-bench"))
        .arg("report")
        .arg("--json")
        .args(inputs)
        .arg("--out")
        .arg(out_dir.join("RESULTS.md"))
        .args(extra)
        .output()
        .expect("run cellar-bench report")
}

/// Runs the report into DIR/NAME and returns RESULTS.md.
fn report_ok(dir: &Path, name: &str, inputs: &[PathBuf]) -> String {
    let out = report(&dir.join(name), inputs, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.join(name).join("RESULTS.md")).expect("RESULTS.md")
}

/// The table row whose cells start with `prefix` (e.g. "| rocksdb |").
fn row<'a>(md: &'a str, after: &str, prefix: &str) -> &'a str {
    let start = md
        .find(after)
        .unwrap_or_else(|| panic!("no {after:?} in\n{md}"));
    md[start..]
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no row {prefix:?} after {after:?} in\n{md}"))
}

#[test]
fn report_has_a_section_per_workload_and_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let md = report_ok(dir.path(), "out", &fixtures(dir.path()));
    for heading in [
        "## Machine",
        "| logical CPUs |",
        "### Disk ceilings",
        "Not recorded",
        "## Key-value workloads, db_bench names (`cellar-bench db`)",
        "### `fillrandom`",
        "### `fillsync`",
        "## Hadoop MapFile against HBase, cold lookups (`cellar-bench mapfile`)",
        "#### lookup · [../in/mapfile.jsonl](../in/mapfile.jsonl)",
        "## YCSB core workloads (`cellar-bench ycsb`)",
        "#### t1 · [../in/ycsb.jsonl](../in/ycsb.jsonl)",
        "## Importing into HBase, rows of 6 integers (`cellar-bench import`)",
        "#### durable · [../in/import.jsonl](../in/import.jsonl)",
        "| variant | engine | rows/ms |",
        "## Hypertable's AOL query-log test (`cellar-bench hypertable`)",
        "| variant | engine | cells/s | seconds | engine ÷ cellar | note |",
        "Command: `cellar-bench hypertable --dir d`",
        "## Other workloads",
        "### `mystery`",
        "## Where Cellar is behind",
        "commit abc1234; date 2026-01-02",
        "rocksdb options: `index_filter=table_reader`",
    ] {
        assert!(md.contains(heading), "missing {heading:?} in\n{md}");
    }
    // Families in the order of the subcommands, variants in their natural order.
    let at = |s: &str| md.find(s).unwrap();
    assert!(
        at("## Key-value") < at("## Hadoop MapFile") && at("## Hadoop MapFile") < at("## YCSB")
    );
    // Losses come first, before the machine and the tables.
    assert!(at("## Where Cellar is behind") < at("## Machine"));
    assert!(at("| single | cellar |") < at("| bucket=10 | cellar |"));
    assert!(at("| bucket=10 | cellar |") < at("| bucket=1000 | cellar |"));
    assert!(at("| w1 | cellar |") < at("| w2 | cellar |"));
    // Missing fields are dashes, not zeros or a failure.
    assert_eq!(
        row(&md, "### `mystery`", "| v | other |"),
        "| v | other | — | — | 3.00 | — |"
    );
}

#[test]
fn report_ratio_is_engine_over_cellar_with_losses_in_bold() {
    let dir = tempfile::tempdir().unwrap();
    let md = report_ok(dir.path(), "out", &fixtures(dir.path()));
    // fillrandom: rocksdb 150K against Cellar's 100K: a Cellar loss, in bold.
    assert_eq!(
        row(&md, "### `fillrandom`", "| rocksdb |"),
        "| rocksdb | 150,000 | 5.00 | 11.0 | **1.50** |"
    );
    assert!(row(&md, "### `fillrandom`", "| cellar |").ends_with("| 1.00 |"));
    // fillsync/1: rocksdb at half of Cellar, plain.
    assert!(row(&md, "### `fillsync`", "| 1 | rocksdb |").ends_with("| 0.50 |"));
    // readrandom: no Cellar record.
    assert!(row(&md, "### `readrandom`", "| rocksdb |").ends_with("| — |"));
    // Three runs of Cellar's single lookups: median 17,000, ratio of mapfile 15.5/17.
    assert_eq!(
        row(&md, "#### lookup", "| single | cellar |"),
        "| single | cellar | 17,000 | 3 (15,000–20,000) | 27.0 | 418.0 | op | 1.00 |"
    );
    assert!(row(&md, "#### lookup", "| single | mapfile |")
        .ends_with("| 1 | 24.0 | 489.0 | op | 0.91 |"));
    // Skipped engine: said so, no ratio.
    assert!(row(&md, "#### insert", "| durable | mapfile |")
        .starts_with("| durable | mapfile | skipped: MapFile has no per-write durability |"));
    // import: rows/ms, and ops/s ÷ 1000 where rows_per_ms is missing.
    assert!(row(&md, "#### durable", "| w1 | fjall |").ends_with("| **1.50** |"));
    assert!(row(&md, "#### buffered", "| w1 | fjall |").starts_with("| w1 | fjall | 519.0 |"));
    // Every loss is listed again.
    let behind = &md[md.find("## Where Cellar is behind").unwrap()..];
    for loss in [
        "| fillrandom |  | ../in/db.jsonl | rocksdb | **1.50** |",
        "| ycsb_c | t1 | ../in/ycsb.jsonl | lmdb | **2.02** |",
        "| mapfile | lookup bucket=10 | ../in/mapfile.jsonl | mapfile | **1.17** |",
    ] {
        assert!(behind.contains(loss), "missing {loss:?} in\n{behind}");
    }
    assert!(!behind.contains("| ycsb_a |"), "0.98 is not a loss");
}

#[test]
fn report_writes_svg_plots_linked_from_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let md = report_ok(dir.path(), "out", &fixtures(dir.path()));
    for (name, words) in [
        (
            "ycsb-latency-ycsb-t1.svg",
            &["cellar", "lmdb", "p99", "latency"][..],
        ),
        (
            "import-writers-import.svg",
            &["durable", "buffered", "fjall"][..],
        ),
        ("mapfile-buckets-mapfile.svg", &["lookups/s", "mapfile"][..]),
        (
            "growth-ops-growth.svg",
            &["fillrandom", "keys", "rocksdb"][..],
        ),
        ("growth-p99-growth.svg", &["readrandom_uncached", "p99"][..]),
        (
            "growth-costs-growth.svg",
            &["write amp", "space amp", "index+filter", "device reads/get"][..],
        ),
    ] {
        let path = dir.path().join("out/plots").join(name);
        let svg = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(svg.starts_with("<svg "), "{name}");
        assert!(
            svg.contains("xmlns=\"http://www.w3.org/2000/svg\""),
            "{name}"
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert_eq!(svg.matches("<svg").count(), 1, "{name}");
        for w in words {
            assert!(svg.contains(w), "{name} lacks {w:?}");
        }
        assert!(
            md.contains(&format!("](plots/{name})")),
            "RESULTS.md does not link {name}"
        );
    }
    let plots = std::fs::read_dir(dir.path().join("out/plots"))
        .unwrap()
        .count();
    assert_eq!(plots, 6);
}

#[test]
fn report_growth_orders_sizes_by_keys_and_notes_the_costs() {
    let dir = tempfile::tempdir().unwrap();
    let md = report_ok(dir.path(), "out", &fixtures(dir.path()));
    let section = &md[md
        .find("Cost growth with the data")
        .expect("growth section")..];
    let small = section.find("| 500K | cellar |").expect("500K row");
    let large = section.find("| 10M | cellar |").expect("10M row");
    assert!(small < large, "500K must come before 10M:\n{section}");
    let r = row(section, "### `fillrandom`", "| 10M | rocksdb |");
    // 200K ÷ 300K; write amp as measured; 0.45 of the user bytes on disk; 1.9 B/key.
    assert!(r.contains("0.67"), "{r}");
    assert!(r.contains("write amp 4.00"), "{r}");
    assert!(r.contains("space amp 0.45"), "{r}");
    assert!(r.contains("index+filter 1.90 B/key"), "{r}");
    let r = row(section, "### `readrandom_uncached`", "| 500K | cellar |");
    assert!(r.contains("1.020 device reads/op"), "{r}");
}

#[test]
fn report_is_byte_identical_when_regenerated() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = fixtures(dir.path());
    let first = report_ok(dir.path(), "a", &inputs);
    let mut reversed = inputs.clone();
    reversed.reverse();
    let second = report_ok(dir.path(), "b", &reversed);
    assert_eq!(
        first, second,
        "input order or a second run changed RESULTS.md"
    );
    let names = |d: &str| {
        let mut v: Vec<_> = std::fs::read_dir(dir.path().join(d).join("plots"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names("a"), names("b"));
    for name in names("a") {
        let a = std::fs::read(dir.path().join("a/plots").join(&name)).unwrap();
        let b = std::fs::read(dir.path().join("b/plots").join(&name)).unwrap();
        assert!(a == b, "{name:?} differs between runs");
    }
}

#[test]
fn report_skips_a_malformed_line_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = fixtures(dir.path());
    let out = report(&dir.path().join("out"), &inputs, &[]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("../in/odd.jsonl:2: skipped: not JSON"),
        "{stderr}"
    );
    assert!(
        stderr.contains("../in/odd.jsonl:3: skipped: not a JSON object"),
        "{stderr}"
    );
    assert!(
        stderr.contains("../in/odd.jsonl:5: skipped: not a result record: missing field `engine`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("odd.jsonl:4"),
        "a blank line is not malformed: {stderr}"
    );
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).unwrap();
    let skipped = &md[md.find("## Input lines skipped").expect("skipped section")..];
    assert!(
        skipped.contains("* `../in/odd.jsonl:2`: not JSON"),
        "{skipped}"
    );
    assert!(md.contains("* [../in/odd.jsonl](../in/odd.jsonl) (2 records)"));

    // --strict: the first malformed line fails the report, which writes nothing.
    let out = report(&dir.path().join("strict"), &inputs, &["--strict"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("../in/odd.jsonl:2: not JSON"), "{stderr}");
    assert!(!dir.path().join("strict/RESULTS.md").exists());
}

#[test]
fn report_shows_the_ceilings_file_and_rejects_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = fixtures(dir.path());
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let ceilings = out_dir.join("fio-ceilings.json");
    std::fs::write(
        &ceilings,
        r#"{"source":"From fio runs recorded in the notes","ceilings":[{"test":"4 KiB random read, QD1","result":"~19K IOPS","notes":"p50 ~50 µs"}]}"#,
    )
    .unwrap();
    let md = report_ok(dir.path(), "out", &inputs);
    assert!(md.contains("From fio runs recorded in the notes (`fio-ceilings.json`)."));
    assert!(md.contains("| 4 KiB random read, QD1 | ~19K IOPS | p50 ~50 µs |"));

    std::fs::write(&ceilings, "{\"source\":").unwrap();
    let out = report(&out_dir, &inputs, &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("fio-ceilings.json"));
}

#[test]
fn report_fails_clearly_on_a_missing_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.jsonl");
    let out = report(&dir.path().join("out"), &[missing], &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nope.jsonl"), "{stderr}");
}

#[test]
fn report_dfsio_shows_testdfsio_fields_beside_the_fio_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let md = report_ok(dir.path(), "out", &fixtures(dir.path()));
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s:?} in\n{md}"));
    assert!(
        at("## Importing") < at("## Hadoop TestDFSIO")
            && at("## Hadoop TestDFSIO") < at("## Hypertable")
    );
    assert!(md.contains(
        "| variant | engine | MB/s | seconds | avg IO rate MB/s | IO rate std dev | p50 µs | p99 µs | latency per | engine ÷ cellar | aggregate MB/s | fio ceiling MB/s | aggregate ÷ fio |"
    ));
    // Write before read (the order they ran in); the ratio to fio is aggregate over fio's.
    assert_eq!(
        row(&md, "### `dfsio`", "| write | cellar |"),
        "| write | cellar | 120.0 | 8.50 | 121.5 | 3.25 | 900.0 | 4,000 | write call of 8388608 B | 1.00 | 960.0 | 1,200 | 0.80 |"
    );
    assert!(row(&md, "### `dfsio`", "| write | posix |")
        .ends_with("| **1.05** | 1,000 | not measured | — |"));
    assert!(at("| write | cellar |") < at("| read | cellar |"));
    // The command under the table; tables from files without one say so.
    let dfsio = &md[at("### `dfsio`")..];
    assert!(dfsio.contains("Command: `cellar-bench dfsio --files 8 --size 1GB`"));
    let fillrandom = &md[at("### `fillrandom`")..at("### `fillsync`")];
    assert!(fillrandom.contains("Command not recorded."), "{fillrandom}");
}

#[test]
fn report_puts_each_loss_beside_its_known_cause() {
    let dir = tempfile::tempdir().unwrap();
    let causes = dir.path().join("causes.json");
    std::fs::write(
        &causes,
        r#"{"causes":[{"workload":"import","variant":"durable/w1","engine":"fjall",
            "cause":"one fdatasync per row, as fjall","note":"../design/write-paths.md"}]}"#,
    )
    .unwrap();
    let inputs = fixtures(dir.path());
    let causes_arg = causes.to_str().unwrap();
    let out = report(&dir.path().join("out"), &inputs, &["--causes", causes_arg]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("out").join("RESULTS.md")).unwrap();
    let behind = &md[md.find("## Where Cellar is behind").unwrap()..md.find("## Machine").unwrap()];
    let import = behind
        .lines()
        .find(|l| l.starts_with("| import | durable/w1 |"))
        .unwrap_or_else(|| panic!("no import loss in\n{behind}"));
    assert!(
        import.ends_with(
            "| one fdatasync per row, as fjall ([design note](../design/write-paths.md)) |"
        ),
        "{import}"
    );
    let mapfile = behind
        .lines()
        .find(|l| l.starts_with("| mapfile | lookup bucket=10 |"))
        .unwrap_or_else(|| panic!("no mapfile loss in\n{behind}"));
    assert!(mapfile.ends_with("| not explained yet |"), "{mapfile}");

    // A causes file that is there but wrong is an error, not ignored.
    std::fs::write(&causes, r#"{"causes":[{"workload":"import"}]}"#).unwrap();
    let out = report(&dir.path().join("bad"), &inputs, &["--causes", causes_arg]);
    assert!(!out.status.success());
}

/// The published results (docs/benchmarks): one file per workload, each table with the
/// command, commit and date that produced it, and every loss with a known cause.
#[test]
fn report_over_the_published_results_is_complete() {
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/benchmarks");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&published)
        .expect("docs/benchmarks")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    inputs.sort();
    let names: Vec<String> = inputs
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "db-10m.jsonl",
            "dfsio-8x1g.jsonl",
            "elliptics-215m.jsonl",
            "elliptics-5m.jsonl",
            "growth-1m-200m.jsonl",
            "hypertable-20m.jsonl",
            "import-1m.jsonl",
            "mapfile-100m.jsonl",
            "mapfile-10m.jsonl",
            "objstore-1m.jsonl",
            "server-1m.jsonl",
            "ycsb-1m.jsonl"
        ],
        "one current result file per workload"
    );
    let dir = tempfile::tempdir().unwrap();
    let causes = published.join("causes.json");
    let ceilings = published.join("fio-ceilings.json");
    let extra = [
        "--strict",
        "--causes",
        causes.to_str().unwrap(),
        "--ceilings",
        ceilings.to_str().unwrap(),
    ];
    let out = report(dir.path(), &inputs, &extra);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("RESULTS.md")).unwrap();
    let tables = md.lines().filter(|l| l.starts_with("#### ")).count();
    assert!(tables >= 7, "{md}");
    let dated = md
        .lines()
        .filter(|l| l.starts_with("commit ") && l.contains("; date 20"))
        .count();
    assert_eq!(dated, tables, "every table names its commit and date");
    let commands = md
        .lines()
        .filter(|l| l.starts_with("Command: `cellar-bench "))
        .count();
    assert_eq!(commands, tables, "every table names its command");
    let behind = &md[md.find("## Where Cellar is behind").unwrap()..md.find("## Machine").unwrap()];
    assert!(
        !behind.contains("not explained yet"),
        "a loss without its cause in docs/benchmarks/causes.json:\n{behind}"
    );
}
