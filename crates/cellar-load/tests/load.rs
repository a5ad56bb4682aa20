//! Bulk load: correctness against a model, atomicity, bad input, concurrency.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cellar_engine::{Db, Options, ReadOptions};
use cellar_load::{load, LoadError, LoadSpec, LoadTarget, NoProgress};
use proptest::prelude::*;

/// A simple stand-in for the table layer's encoding: row, 0x00, big-endian timestamp.
fn encode(row: &[u8], _qualifier: &[u8], ts: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(row);
    out.push(0);
    out.extend_from_slice(&ts.to_be_bytes());
}

fn decode(key: &[u8]) -> (Vec<u8>, u64) {
    let n = key.len() - 9;
    let ts = u64::from_be_bytes(key[n + 1..].try_into().expect("8 bytes"));
    (key[..n].to_vec(), ts)
}

struct Fixture {
    dir: tempfile::TempDir,
    db: Db,
    target: LoadTarget,
}

fn fixture(families: &[&str]) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        target_file_size_bytes: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path().join("db"), opts).expect("open");
    let fams = families
        .iter()
        .map(|f| (f.to_string(), db.create_keyspace(f).expect("keyspace")))
        .collect();
    let clock = Arc::new(AtomicU64::new(1_000));
    let target = LoadTarget {
        families: fams,
        encode_key: encode,
        reserve_timestamps: Arc::new(move |n| clock.fetch_add(n, Ordering::SeqCst)),
    };
    Fixture { dir, db, target }
}

fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write input");
    p
}

/// (family, row, ts) → value, for every cell in the database.
fn dump(f: &Fixture) -> BTreeMap<(String, Vec<u8>, u64), Vec<u8>> {
    let mut out = BTreeMap::new();
    for (name, ks) in &f.target.families {
        let mut it = f.db.iter(ks, ReadOptions::default()).expect("iter");
        it.seek_to_first();
        while it.valid() {
            let (row, ts) = decode(it.key());
            out.insert((name.clone(), row, ts), it.value().to_vec());
            it.next();
        }
        it.status().expect("scan");
    }
    out
}

fn sst_files(db_dir: &Path) -> usize {
    std::fs::read_dir(db_dir)
        .expect("read_dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        })
        .count()
}

const AOL: &str = "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n\
2272416\ttheunorthodoxjew.blogspot.com\t2006-03-01 07:17:12\t1\thttp://theunorthodoxjew.blogspot.com\n\
172627\twww.yahoolagins.com\t2006-03-01 07:17:13\t\t\n\
1636218\twww.airtime500.com\t2006-03-01 07:17:14\t2\thttp://www.airtime500.com\n\
172627\tzip codes\t2006-03-01 07:17:15\t1\thttp://www.usps.com\n";

fn spec(files: Vec<PathBuf>) -> LoadSpec {
    LoadSpec {
        files,
        row_key_column: Some("AnonID".into()),
        ignore_unknown_columns: true,
        ..LoadSpec::default()
    }
}

#[test]
fn aol_lines_become_one_cell_per_non_empty_field() {
    let f = fixture(&["Query", "ItemRank", "ClickURL"]);
    let input = write_file(f.dir.path(), "a.tsv", AOL);
    let stats = load(&f.db, &f.target, &spec(vec![input]), &NoProgress).expect("load");
    assert_eq!(stats.lines, 4);
    assert_eq!(stats.cells, 10);
    assert_eq!(stats.cells_written, 10);
    let cells = dump(&f);
    assert_eq!(cells.len(), 10);
    // Both queries of user 172627 are kept: each line has its own timestamp.
    let q: Vec<_> = cells
        .iter()
        .filter(|((fam, row, _), _)| fam == "Query" && row == b"172627")
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(
        q,
        vec![b"www.yahoolagins.com".to_vec(), b"zip codes".to_vec()]
    );
    let text = stats.to_string();
    assert!(text.contains("Total inserts:  10"), "{text}");
    assert!(text.contains("Avg key size:"), "{text}");
}

#[test]
fn a_bad_line_mid_file_loads_nothing_and_names_the_line() {
    let f = fixture(&["Query", "ItemRank", "ClickURL"]);
    let mut text = String::from(AOL);
    text.push_str("999\tq\t2006-03-01 07:17:15\t1\thttp://x\tone too many\n");
    text.push_str("1000\tq\t2006-03-01 07:17:15\t\t\n");
    let input = write_file(f.dir.path(), "bad.tsv", &text);
    let before = sst_files(&f.dir.path().join("db"));
    let err =
        load(&f.db, &f.target, &spec(vec![input.clone()]), &NoProgress).expect_err("must fail");
    match &err {
        LoadError::BadLine { file, line, reason } => {
            assert_eq!(file, &input);
            assert_eq!(*line, 6, "{reason}");
            assert!(
                reason.contains("6 tab-separated fields, the header has 5"),
                "{reason}"
            );
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(err.to_string().contains("bad.tsv:6"), "{err}");
    assert!(dump(&f).is_empty(), "nothing of a failed load is visible");
    assert_eq!(
        sst_files(&f.dir.path().join("db")),
        before,
        "no files left behind"
    );

    let mut s = spec(vec![input]);
    s.skip_bad_lines = true;
    let stats = load(&f.db, &f.target, &s, &NoProgress).expect("load");
    assert_eq!(stats.bad_lines_skipped, 1);
    assert_eq!(stats.lines, 6);
    assert_eq!(dump(&f).len(), 11);
}

#[test]
fn short_lines_have_empty_trailing_fields_and_headers_may_name_qualifiers() {
    let f = fixture(&["Query", "Click"]);
    let text = "AnonID\tQuery\tClick:url\n1\tq1\thttp://a\n2\tq2\n3\n";
    let input = write_file(f.dir.path(), "short.tsv", text);
    let mut s = spec(vec![input]);
    s.ignore_unknown_columns = false;
    let stats = load(&f.db, &f.target, &s, &NoProgress).expect("load");
    assert_eq!((stats.lines, stats.cells), (3, 3));
}

#[test]
fn dumped_cells_load_back_byte_for_byte() {
    // The cell shape DUMP TABLE writes, with escaped bytes in row, qualifier and value.
    let f = fixture(&["Query", "Click"]);
    let text = "#timestamp\trow\tcolumn\tvalue\n\
5\tr\\x00w\tQuery\ttab\\there\n\
7\tr2\tClick:u\\\\rl\tnew\\nline\n\
9\tr2\tNope:x\tignored\n";
    let input = write_file(f.dir.path(), "dump.tsv", text);
    let mut s = spec(vec![input.clone()]);
    s.row_key_column = None;
    s.ignore_unknown_columns = false;
    let err = load(&f.db, &f.target, &s, &NoProgress).expect_err("unknown family");
    assert!(err.to_string().contains("dump.tsv:4"), "{err}");
    s.ignore_unknown_columns = true;
    let stats = load(&f.db, &f.target, &s, &NoProgress).expect("load");
    assert_eq!(stats.cells, 2);
    let cells = dump(&f);
    assert_eq!(
        cells.get(&("Query".to_string(), b"r\x00w".to_vec(), 5)),
        Some(&b"tab\there".to_vec())
    );
    // Click's key is row, qualifier, ts in this test's encoding: the qualifier is dropped by
    // `encode` here, so check the value only.
    assert!(cells.values().any(|v| v == b"new\nline"));
}

#[test]
fn header_problems_are_reported_before_loading() {
    let f = fixture(&["Query"]);
    let input = write_file(f.dir.path(), "a.tsv", AOL);
    let mut s = spec(vec![input.clone()]);
    s.ignore_unknown_columns = false;
    let err = load(&f.db, &f.target, &s, &NoProgress).expect_err("unknown column");
    assert!(
        err.to_string()
            .contains("'QueryTime' names no column family"),
        "{err}"
    );
    let mut s = spec(vec![input]);
    s.row_key_column = Some("UserID".into());
    let err = load(&f.db, &f.target, &s, &NoProgress).expect_err("missing row column");
    assert!(
        err.to_string().contains("'UserID' is not in the header"),
        "{err}"
    );
    let empty = write_file(f.dir.path(), "empty.tsv", "");
    let err = load(&f.db, &f.target, &spec(vec![empty]), &NoProgress).expect_err("empty");
    assert!(err.to_string().contains("expected a header line"), "{err}");
}

#[test]
fn gzip_input_and_a_separate_header_file() {
    let f = fixture(&["Query", "ItemRank", "ClickURL"]);
    let header = write_file(f.dir.path(), "h.tsv", AOL.lines().next().expect("header"));
    let body: String = AOL.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let gz = f.dir.path().join("body.tsv.gz");
    let mut enc = flate2_writer(&gz);
    enc.write_all(body.as_bytes()).expect("gz write");
    drop(enc);
    let mut s = spec(vec![gz]);
    s.header_file = Some(header);
    let stats = load(&f.db, &f.target, &s, &NoProgress).expect("load");
    assert_eq!(stats.cells, 10);
}

fn flate2_writer(path: &Path) -> impl Write {
    struct Gz(Option<std::process::Child>);
    impl Write for Gz {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0
                .as_mut()
                .and_then(|c| c.stdin.as_mut())
                .expect("stdin")
                .write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Drop for Gz {
        fn drop(&mut self) {
            if let Some(mut c) = self.0.take() {
                drop(c.stdin.take());
                c.wait().expect("gzip");
            }
        }
    }
    let out = std::fs::File::create(path).expect("create");
    let child = std::process::Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(out)
        .spawn()
        .expect("gzip is installed");
    Gz(Some(child))
}

#[test]
fn duplicate_cells_from_a_timestamp_column_keep_the_last_line() {
    let f = fixture(&["Query"]);
    let text = "AnonID\tQuery\tQueryTime\n\
1\tfirst\t2006-03-01 07:17:12\n\
2\tother\t2006-03-01 07:17:12\n\
1\tsecond\t2006-03-01 07:17:12\n";
    let input = write_file(f.dir.path(), "dup.tsv", text);
    let mut s = spec(vec![input]);
    s.timestamp_column = Some("QueryTime".into());
    let stats = load(&f.db, &f.target, &s, &NoProgress).expect("load");
    assert_eq!(stats.cells, 3);
    assert_eq!(stats.cells_written, 2);
    let cells = dump(&f);
    let v: Vec<_> = cells.values().cloned().collect();
    assert_eq!(v, vec![b"second".to_vec(), b"other".to_vec()]);
}

#[test]
fn concurrent_loads_into_one_table_all_land() {
    let f = fixture(&["Query", "ItemRank", "ClickURL"]);
    let mut files = Vec::new();
    for p in 0..4 {
        let mut text = String::from("AnonID\tQuery\tItemRank\tClickURL\n");
        for i in 0..3000 {
            let id = (i * 7919 + p * 13) % 5000;
            text.push_str(&format!(
                "{id}\tquery {p} {i}\t{}\thttp://x{i}.com\n",
                i % 10
            ));
        }
        files.push(write_file(f.dir.path(), &format!("{p}.tsv"), &text));
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|file| {
                let f = &f;
                s.spawn(move || {
                    let mut sp = spec(vec![file.clone()]);
                    sp.chunk_bytes = 16 << 10;
                    sp.memory_budget_bytes = 32 << 10;
                    load(&f.db, &f.target, &sp, &NoProgress).expect("load")
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().expect("thread").cells, 9000);
        }
    });
    assert_eq!(dump(&f).len(), 36_000);
}

/// One generated input line: (row, query, optional timestamp second).
fn lines() -> impl Strategy<Value = Vec<(u8, Vec<u8>, u8)>> {
    proptest::collection::vec(
        (
            0u8..40,
            proptest::collection::vec(b'a'..=b'z', 0..6),
            0u8..4,
        ),
        1..200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the chunking and memory budget (spills or not), the loaded cells are the
    /// model's: every non-empty field, later lines winning on equal (row, timestamp).
    #[test]
    fn load_matches_model(input in lines(), chunk in 32usize..600, budget in 64usize..4096, ts_col in any::<bool>()) {
        let f = fixture(&["Query"]);
        let mut text = String::from("AnonID\tQuery\tQueryTime\n");
        let mut model = BTreeMap::new();
        for (i, (row, q, sec)) in input.iter().enumerate() {
            let q = String::from_utf8(q.clone()).expect("ascii");
            text.push_str(&format!("r{row}\t{q}\t1970-01-01 00:00:0{sec}\n"));
            if !q.is_empty() {
                let ts = if ts_col { u64::from(*sec) * 1_000_000_000 } else { 1_000 + i as u64 };
                model.insert(("Query".to_string(), format!("r{row}").into_bytes(), ts), q.into_bytes());
            }
        }
        let input = write_file(f.dir.path(), "in.tsv", &text);
        let mut s = spec(vec![input]);
        s.chunk_bytes = chunk;
        s.memory_budget_bytes = budget;
        if ts_col {
            s.timestamp_column = Some("QueryTime".into());
        }
        load(&f.db, &f.target, &s, &NoProgress).expect("load");
        prop_assert_eq!(dump(&f), model);
    }
}
